/* gbdt_train: trains a tree model (gbdt.h) from samples with XGBoost's C
 * API (Debian's libxgboost-dev). The only module that calls XGBoost.
 *
 * Both forests are trained afresh on the samples given (a replay window, as
 * alpha-zero-boosted retrains each generation), with tree_method "hist":
 *  - value: reg:squarederror on the value target z (mover's view), base 0;
 *  - policy, pointwise: for each sample with a policy target, up to
 *    `visited` of its visited actions drawn without replacement in
 *    proportion to their shares, and as many actions it did not visit drawn
 *    uniformly from the rest of the action space (the batch does not say
 *    which were legal), each a row (action id, features) labelled with its
 *    visit share; binary:logistic on those soft labels, base margin 0, so a
 *    row's margin is the action's logit.
 * The trees are read back through XGBoost's text dump, and a few rows are
 * predicted both by XGBoost and by the model's own walk: a disagreement
 * fails the training (a dump this code misreads never becomes a model).
 *
 * Threads: one call at a time per process is the tested use; XGBoost uses
 * `threads` threads inside it. */
#ifndef KZ_GBDT_TRAIN_H
#define KZ_GBDT_TRAIN_H

#include <stdint.h>

#include "common/config.h"
#include "games/game.h"
#include "nn/gbdt.h"

/* Settings of one training. */
typedef struct gbdt_train_config {
    int rounds;              /* boosting rounds (trees) per forest */
    int max_depth;           /* deepest tree */
    double eta;              /* learning rate (shrinkage) */
    double min_child_weight; /* least hessian in a leaf */
    double subsample;        /* rows drawn per tree (0, 1] */
    double colsample;        /* features drawn per tree (0, 1] */
    int visited;             /* policy rows per sample from visited actions, at most */
    int unvisited;           /* policy rows per sample from actions not visited */
    int threads;             /* XGBoost's threads */
    uint64_t seed;           /* row sampling and XGBoost's seed */
} gbdt_train_config;

/* What a training did. */
typedef struct gbdt_train_stats {
    int value_rows;      /* rows of the value forest */
    int policy_rows;     /* rows of the policy forest */
    double value_mse;    /* its mean squared error on them after training */
    double policy_xent;  /* the policy's mean cross-entropy on its rows after training */
    double seconds;      /* wall time of the whole training */
} gbdt_train_stats;

/* Defaults: gbdt_train_options' text defaults (40 rounds, depth 6, eta
 * 0.3), min_child_weight 1, subsample 1, colsample 1, 4 visited and 4
 * unvisited actions, 1 thread, seed 1. */
void gbdt_train_config_default(gbdt_train_config *tc);

/* The training's settings rows (config.h) over a gbdt_train_config, keyed
 * as kz-trainer shows them: gbdt_rounds (rounds), gbdt_depth (max_depth),
 * gbdt_eta (eta). Their text defaults are the one place those defaults are
 * written (gbdt_train_config_default() reads them). */
extern const config_option gbdt_train_options[];
extern const size_t gbdt_train_options_n; /* rows in gbdt_train_options */

/* Trains both forests of m (its game g) on N samples: planes (N, C, H, W),
 * pi (N, A) the visit shares (a row of zeros: no policy target), z (N) the
 * value targets in [-1, 1]. On success m's forests are replaced, its step
 * grows by N, and st (may be NULL) says what happened. 0, or KZ_EINVAL
 * (bad settings, no samples, XGBoost's error) / KZ_ENOMEM with a one-line
 * message; m is unchanged then. */
int gbdt_train(gbdt *m, const game_def *g, const float *planes, const float *pi, const float *z,
               int N, const gbdt_train_config *tc, gbdt_train_stats *st, char *err,
               size_t errlen);

/* gbdt_train that also hands back XGBoost's two boosters (value, policy;
 * the policy's NULL when no sample had a policy target) for measuring
 * XGBoost's own predictor against the walker (tools/bench/bench_gbdt.c).
 * Caller frees them with gbdt_booster_free. */
int gbdt_train_boosters(gbdt *m, const game_def *g, const float *planes, const float *pi,
                        const float *z, int N, const gbdt_train_config *tc,
                        gbdt_train_stats *st, void *boosters[2], char *err, size_t errlen);
/* XGBoost's margins of `rows` dense rows x (rows, cols) into out
 * (XGBoosterPredictFromDense, in place). 0 or KZ_EINVAL. */
int gbdt_booster_predict(void *booster, const float *x, int rows, int cols, float *out);
void gbdt_booster_free(void **booster);

/* XGBoost's version, "1.7.4". */
const char *gbdt_train_library(void);

#endif
