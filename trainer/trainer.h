/* trainer: kz-trainer's settings and the pieces its files share (trainer/
 * only). See docs/trainer.md for the program's behaviour.
 *
 *   main.c   settings table, signals, start (checkpoint, file or the
 *            coordinator's best), the training loop: pacing, steps,
 *            candidates, checkpoints, stats
 *   gbdt.c   the loop for tree models (model_kind gbdt): a ring of samples,
 *            a training by XGBoost every gbdt_samples_per_candidate fresh
 *            ones, checkpoint.kzg, candidates
 *   reanalyse.c  reanalyse: the first share of a batch's positions searched
 *            again (search/mcts.h) with the newest network, their visit
 *            shares and root values handed to batch.c as fresh targets
 *   batch.c  a BatchReply (packed positions, sparse canonical policies, z,
 *            q, auxiliary targets) into the dense arrays model_train_step
 *            takes: the value target's q + z mix (or the endgame tables'
 *            value), zero policy rows for states without a policy target,
 *            mirror augmentation
 *
 * Threads: everything runs on the main thread. */
#ifndef KZ_TRAINER_TRAINER_H
#define KZ_TRAINER_TRAINER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/client.h"
#include "common/config.h"
#include "games/game.h"
#include "games/tablebase.h"
#include "nn/gbdt_train.h"
#include "common/util.h"
#include "net/wire.h"

/* Settings (the table in main.c; docs/trainer.md): the trainer's own and the
 * connection's (client_options). */
typedef struct trainer_config {
    char game[CONFIG_STR_MAX];           /* game module */
    char checkpoint_dir[CONFIG_STR_MAX]; /* holds checkpoint.kzm */
    char init_model[CONFIG_STR_MAX];     /* start model file, "" = the coordinator's best */
    long batch_size;                     /* samples per step */
    long min_positions;                  /* window size before training starts */
    double max_reuse;                    /* samples per stored position, 0 = no limit */
    long steps_per_candidate;            /* K */
    long checkpoint_every;               /* steps between checkpoints */
    char optimizer[CONFIG_STR_MAX];      /* "adam" or "sgd" */
    double lr;                           /* base learning rate */
    char schedule[CONFIG_STR_MAX];       /* "constant", "step", "cosine" */
    long step_every;                     /* step schedule: period */
    double step_gamma;                   /* step schedule: factor */
    long cosine_steps;                   /* cosine schedule: T */
    double lr_min;                       /* cosine schedule: final rate */
    long warmup_steps;                   /* linear warm-up */
    double momentum;                     /* SGD momentum */
    double adam_beta1;                   /* Adam beta1 */
    double adam_beta2;                   /* Adam beta2 */
    double l2;                           /* L2 coefficient c */
    double clip_norm;                    /* gradient norm clip, 0 off */
    bool augment;                        /* augmentation by the game's symmetries */
    double value_q_weight;               /* value target (1 - w) z + w q: w */
    double reanalyse;                    /* share of each batch searched again, 0 off */
    long reanalyse_simulations;          /* its simulations, 0 = the game's */
    double reanalyse_value_weight;       /* value target blended with the new root value */
    double ema_decay;                    /* candidates: moving average of the weights, 0 off */
    double aux_opp_policy_weight;        /* loss weight of the opponent-policy head */
    double aux_material_weight;          /* loss weight of the material head */
    char tb_dir[CONFIG_STR_MAX];         /* endgame tables, "" = none */
    bool tb_value_targets;               /* table positions' value target: the tables' */
    bool proven_value_targets;           /* value targets proven by the proof search */
    long proven_nodes;                   /* its budget a position (expansions) */
    double proven_share;                 /* share of each batch it tries */
    long proven_pieces;                  /* positions with at most this many pieces */
    long threads;                        /* OpenBLAS threads */
    long seed;                           /* augmentation seed, 0 = clock */
    long wait_ms;                        /* poll period while waiting */
    double stats_s;                      /* TrainerStats period */
    double log_s;                        /* progress line period */
    long max_steps;                      /* stop at this step (trees: training), 0 never */
    char model_kind[CONFIG_STR_MAX];     /* "net", "gbdt", "" = the start model's kind */
    long gbdt_window;                    /* trees: samples kept for training */
    long gbdt_samples_per_candidate;     /* trees: fresh samples between trainings */
    gbdt_train_config gbdt;              /* trees: a training's settings (the rows of
                                            gbdt_train_options; threads and seed set
                                            by each training) */
    client_config client;                /* coordinator connection (role, game set in
                                            main.c) */
} trainer_config;

/* Counters of batch_fill. */
typedef struct batch_counts {
    uint64_t used;     /* samples written */
    uint64_t augmented; /* of which transformed by a symmetry (augmentation) */
    uint64_t no_policy; /* of which without a policy target (zero policy row) */
    uint64_t skipped;  /* samples refused (undecodable position, bad policy or z) */
    uint64_t aux_opp;  /* batch_fill_aux: samples with an opponent-policy target */
    uint64_t aux_material; /* batch_fill_aux: samples with a material target */
    uint64_t tb_values; /* batch_fill_aux with tables: value targets from them */
    uint64_t tb_changed; /* of which differ from the game's result z */
    uint64_t proven_values;  /* value targets proven by the proof search (proven_value_targets) */
    uint64_t proven_changed; /* of which differ from the game's result z */
    uint64_t reanalysed; /* samples whose policy target came from reanalyse */
} batch_counts;

/* Fresh targets of some of a batch reply's samples (reanalyser_run). */
typedef struct batch_reanalysed {
    const int32_t *row;  /* per sample i < n of the reply: its row in pi and v, -1 none */
    const float *pi;     /* (rows, A) dense canonical policy targets, each summing to 1 */
    const float *v;      /* (rows) the searches' root values, mover's view, in [-1, 1] */
    int n;               /* entries of row */
    int n_searched;      /* rows */
    float value_weight;  /* w: the value target becomes (1 - w) * target + w * v */
    const int8_t *proven; /* per sample i < n_proven: its value proven by the proof search
                           * (mover's view, -1/0/+1), or BATCH_UNPROVEN; NULL: none */
    int n_proven;         /* entries of proven */
} batch_reanalysed;

#define BATCH_UNPROVEN ((int8_t)-128) /* batch_reanalysed.proven: no proven value */

/* Dense auxiliary targets (model.h's train_aux), written by batch_fill_aux. */
typedef struct batch_aux {
    float *opp_pi;     /* (max, A) the opponent's next policy target, zeros: none */
    float *material;   /* (max) final material balance, mover's view */
    float *material_w; /* (max) its weight: 1, or 0 (none) */
} batch_aux;

/* Writes the usable samples of b (at most max) as dense arrays for model g's
 * shape: x (n, C, H, W) from game_def->unpack_planes, pi (n, A) with each
 * sample's sparse policy spread out (renormalised to sum 1), z (n) the value
 * target. A sample with an empty policy (a fast search's state: no policy
 * target) gets a row of zeros, which model_train weighs 0 in the policy
 * loss (model.h). The value target is (1 - q_weight) * z + q_weight * q,
 * the game's result mixed with the search's value (b->q; z when b->q is
 * NULL), exactly z when q_weight is 0. With `augment`, each sample goes
 * through one of the game's symmetries or the identity, drawn uniformly from
 * rng (planes and policy; Khreibaga: mirrored with probability 1/2, R19; a
 * game without symmetries draws nothing). A
 * sample whose position does not unpack, whose policy names an action
 * outside [0, A) or has a negative, non-finite or all-zero share, or whose
 * z or q is not in [-1, 1], is skipped and counted. Returns n, the samples
 * written. Allocates nothing. */
int batch_fill(const game_def *g, const wire_batch_reply *b, bool augment, float q_weight,
               rng_t *rng, float *x, float *pi, float *z, int max, batch_counts *counts);
/* batch_fill with the auxiliary targets into aux (NULL: as batch_fill): per
 * sample the opponent's next policy spread out and renormalised like pi
 * (a row of zeros when b->aux has none for it, or none at all) and
 * transformed with the sample, and the material with weight 1 (weight 0 and value 0
 * when none). A sample whose aux policy names an action outside [0, A) or
 * has a negative or non-finite share, or whose material is not in [-1, 1]
 * or its weight not in [0, 1], is skipped too. With endgame tables tb
 * (NULL: none), a sample whose position they cover gets their value as its
 * value target instead: the result under R13 at the position's no-progress
 * count, from the mover's view (tb_probe_packed), exactly (no q mix: the
 * value is known), counted in tb_values (and tb_changed where it is not z).
 * Allocates nothing. */
int batch_fill_aux(const game_def *g, const wire_batch_reply *b, bool augment, float q_weight,
                   const tb_set *tb, rng_t *rng, float *x, float *pi, float *z,
                   const batch_aux *aux, int max, batch_counts *counts);

/* batch_fill_aux with fresh targets re (NULL: exactly batch_fill_aux): a
 * sample i with re->row[i] >= 0 gets that row of re->pi as its policy target
 * instead of the stored one (augmented with the sample; the stored one is
 * still checked), and with re->value_weight w > 0 its value target (the q +
 * z mix; not the tables' exact value, which stays) becomes (1 - w) * target
 * + w * re->v[row]; counted in reanalysed. A sample with a proven value
 * (re->proven[i] != BATCH_UNPROVEN) the tables do not cover gets it as its
 * value target, exactly (no q mix, no reanalysed mix), counted in
 * proven_values (proven_changed where it is not z). Allocates nothing. */
int batch_fill_re(const game_def *g, const wire_batch_reply *b, bool augment, float q_weight,
                  const tb_set *tb, const batch_reanalysed *re, rng_t *rng, float *x, float *pi,
                  float *z, const batch_aux *aux, int max, batch_counts *counts);

/* Reanalyse (MuZero Reanalyse, EfficientZero; docs/trainer.md): stored
 * positions searched again by MCTS with the trainer's newest network, whose
 * visit shares replace the stored policy targets. One batch of trees and
 * its buffers, allocated once. */
struct model;
typedef struct reanalyser reanalyser;
/* For game g (g->unpack_state needed: NULL without it), replies of up to
 * batch_size samples, of which at most max_positions (1 .. batch_size) are
 * searched per call, each with `simulations` (>= 1) simulations: the
 * search's defaults (mcts.h) without root noise and without tree reuse.
 * NULL on bad arguments or out of memory. No network until
 * reanalyser_set_model. Caller owns the result. */
reanalyser *reanalyser_new(const game_def *g, int batch_size, int max_positions, int simulations);
void reanalyser_destroy(reanalyser **r);
/* The network the searches call from now on: m's weights copied into a new
 * evaluator (this allocates: call it when the weights are sent out, at each
 * candidate, not every step). 0 or KZ_ENOMEM (the old one stays). */
int reanalyser_set_model(reanalyser *r, const struct model *m);
/* Searches the first k samples of b (at most max_positions and b->n; none
 * before a network is set) and describes the results in *out (its
 * value_weight kept; the arrays borrowed from r until the next call): a
 * sample whose position does not unpack (g->unpack_state), is over, or
 * whose search has no visits keeps its stored target (row -1). A forced
 * position (one legal action) gets that action with share 1. 0, or the
 * evaluator's error (then no sample is reanalysed). Allocates nothing. */
int reanalyser_run(reanalyser *r, const wire_batch_reply *b, int k, batch_reanalysed *out);
/* Positions searched since creation, and of which the most likely action of
 * the fresh policy target is not the stored target's. */
void reanalyser_counts(const reanalyser *r, uint64_t *searched, uint64_t *changed);

/* The loop for tree models (gbdt.c): starts from checkpoint.kzg in
 * checkpoint_dir, init_model, start_blob (the coordinator's best when it is
 * trees: its bytes and version; NULL: none) or no trees, and trains until
 * *stop or max_steps trainings. c is connected; everything is borrowed.
 * Returns the exit status (0 clean, 1 fatal). */
int trainer_gbdt_run(const trainer_config *cfg, const game_def *g, client *c,
                     volatile sig_atomic_t *stop, const uint8_t *start_blob, size_t start_len,
                     uint32_t start_version);

#endif
