/* evaluator: the batch-evaluation interface the search calls. A position goes
 * in as canonical input planes (game_def->encode_planes, R16/R17); out come
 * policy logits over the canonical action space and a value from the view of
 * the player to move. The search never names the network: anything that fills
 * these arrays is an evaluator, so that search is testable without training.
 *
 * Implementations here: evaluator_uniform (all logits 0, every value 0: the
 * priors become uniform over the legal actions) and evaluator_net, over
 * either kind of model: the network (model.h, a folded-batch-norm
 * model_eval) or gradient-boosted trees (gbdt.h, the tree walker), chosen
 * by the model file's magic.
 *
 * Threads: an evaluator is used by one thread at a time (its ctx holds the
 * workspace). The struct is a small value: copy it freely; ctx is borrowed. */
#ifndef KZ_EVALUATOR_H
#define KZ_EVALUATOR_H

#include <stdint.h>

#include "games/game.h"

struct model; /* model.h; not included, so that its names stay out of this header's users */

typedef struct evaluator {
    /* Evaluates B positions given as canonical planes (B, C, H, W); writes policy
     * logits (B, A) over the canonical action space and values (B) in [-1, 1]
     * from the mover's view. Returns 0 or an error code (util.h). */
    int (*run)(void *ctx, const float *planes, int B, float *logits, float *values);
    void *ctx;     /* borrowed: the implementation's state */
    int max_batch; /* largest B that run accepts */
} evaluator;

/* The uniform evaluator for game g: every logit 0 and every value 0, for any
 * batch size (max_batch EVALUATOR_UNLIMITED). Never fails. g is borrowed and
 * must outlive the evaluator (game_defs are static). */
#define EVALUATOR_UNLIMITED (1 << 20)
evaluator evaluator_uniform(const game_def *g);

/* The network as an evaluator: a model_eval for batches of up to max_batch
 * positions (it copies the weights; the model may go afterwards). */
typedef struct evaluator_net evaluator_net;
/* NULL when max_batch < 1 or out of memory. Caller owns the result. */
evaluator_net *evaluator_net_new(const struct model *m, int max_batch);
/* Loads a model file for game g (modelfile_load, or gbdt_load for a GBDT
 * model file) and makes its evaluator.
 * 0, or the loader's error (errno, KZ_EVERSION, KZ_EMISMATCH, KZ_ECORRUPT)
 * or KZ_ENOMEM, with a one-line message in err. Caller owns *out. */
int evaluator_net_load(const char *path, const game_def *g, int max_batch, evaluator_net **out,
                       char *err, size_t errlen);
/* evaluator_net_load with the network's arithmetic: precision is
 * MODEL_FP32 or MODEL_BF16 (model.h; bf16 runs in fp32 where the CPU lacks
 * AVX512_BF16), or EVALUATOR_PRECISION_DEFAULT for model_set_precision's. */
#define EVALUATOR_PRECISION_DEFAULT (-1)
int evaluator_net_load_precision(const char *path, const game_def *g, int max_batch,
                                 int precision, evaluator_net **out, char *err, size_t errlen);
/* Model file bytes (modelfile.h's form, or a GBDT model's, gbdt.h: told
 * apart by the magic; checked against game g) to an evaluator of up to
 * max_batch positions with the given precision (as
 * evaluator_net_load_precision's; trees ignore it): the one way from a
 * model's bytes to something the search can call, used by the worker, the
 * coordinator, kz and the benchmarks; where the second kind of model plugs
 * in. 0, or the loader's error (KZ_EVERSION, KZ_EMISMATCH, KZ_ECORRUPT) or
 * KZ_ENOMEM, with a one-line message in err. Caller owns *out. */
int evaluator_net_from_bytes(const uint8_t *buf, size_t len, const game_def *g, int max_batch,
                             int precision, evaluator_net **out, char *err, size_t errlen);
/* The kind of model behind e: "net" or "gbdt". */
const char *evaluator_net_kind(const evaluator_net *e);
/* evaluator_net_new with a precision (as evaluator_net_load_precision's). */
evaluator_net *evaluator_net_new_precision(const struct model *m, int max_batch, int precision);
/* What computes it: model_eval_path's "avx512-fp32", "avx512-bf16", "openblas-fp32",
 * or "gbdt-walker" for trees. */
const char *evaluator_net_path(const evaluator_net *e);
/* Frees the evaluator and sets *e to NULL; NULL-safe. */
void evaluator_net_destroy(evaluator_net **e);
/* The evaluator interface over e (ctx = e, borrowed: e must outlive it).
 * run fails with KZ_EINVAL for B > max_batch; otherwise it cannot fail. */
evaluator evaluator_net_get(evaluator_net *e);
/* The model's version and the weights' checksum (model.h). */
uint32_t evaluator_net_version(const evaluator_net *e);
uint64_t evaluator_net_checksum(const evaluator_net *e);

#endif
