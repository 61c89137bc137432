/* evaluator: the batch-evaluation interface the search calls. A position goes
 * in as canonical input planes (game_def->encode_planes, R16/R17); out come
 * policy logits over the canonical action space and a value from the view of
 * the player to move. The search never names the network: anything that fills
 * these arrays is an evaluator, so that search is testable without training.
 *
 * Implementations here: evaluator_uniform (all logits 0, every value 0: the
 * priors become uniform over the legal actions) and, over the network,
 * evaluator_model (see evaluator_model.h once the network is built).
 *
 * Threads: an evaluator is used by one thread at a time (its ctx holds the
 * workspace). The struct is a small value: copy it freely; ctx is borrowed. */
#ifndef KZ_EVALUATOR_H
#define KZ_EVALUATOR_H

#include "game.h"

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

#endif
