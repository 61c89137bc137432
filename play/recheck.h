/* recheck: searches the states of a submitted game record again, with the
 * networks the record names and its seed and settings, and says whether the
 * recorded moves, visit shares and values are what that search gives. The
 * coordinator runs it on a sample of the games it receives (docs/security.md,
 * "Forged games"): a worker that plays another network than the one it
 * names, or doctors its visit counts, is caught.
 *
 * What is reproducible. A worker's search of one game is a deterministic
 * function of: the networks (their weights and the evaluator's arithmetic,
 * model_eval_path, recorded in settings.evaluator), the start position, the
 * record's seed, its search settings (every field of record_settings) and the
 * moves played before. It does not depend on the other games searched in the
 * same batch: a tree's leaves go through the network with the other trees'
 * leaves, but the network's output for a position does not depend on the
 * batch it is in (the AVX-512 kernels compute each position's row alone, in
 * a fixed order; tests/system/test_forge.c holds it), the evaluation cache holds
 * exactly what the network gave, and a cached leaf waits for the end of the
 * step like any other (mcts.h). So a batch of one tree replays any one game of
 * a worker's batch of G.
 *
 * Tree reuse and the generators carry state from move to move: the search of
 * state k depends on the subtrees kept from the searches before it and on the
 * draws made before it (root noise, sampled moves, playout cap draws). So the
 * re-search of state k replays the game's searches from its first state
 * through k, exactly as play/driver.c drives a slot of kz-worker's
 * (tree_per_side; the lazy trees of an arena game included), comparing every
 * searched state on the way: checking state k costs the searches of states
 * 0..k.
 *
 * Not checkable (RECHECK_UNCHECKABLE, counted by the caller, never a
 * rejection): records without settings.evaluator (from before it, or from a
 * tool such as kz loadgen), an arithmetic this process cannot run the same
 * (recheck_evaluator_usable), the OpenBLAS path (its results depend on the
 * batch and on the CPU's kernels), rating games, and games that used endgame
 * tables (tb_search, tb_adjudicate). Exactness also assumes the worker and
 * the coordinator are builds of the same source with the same compiler flags.
 *
 * Threads: a recheck call uses only its arguments; the evaluators belong to
 * the calling thread for the call. */
#ifndef KZ_RECHECK_H
#define KZ_RECHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "search/mcts.h"
#include "data/record.h"
#include "common/util.h"

/* The outcome of a check. */
enum recheck_verdict {
    RECHECK_MATCH = 0,       /* every state checked matched */
    RECHECK_FORGED = 1,      /* a state's move, visit shares or value differ */
    RECHECK_UNCHECKABLE = 2, /* the record cannot be searched again exactly (see above) */
};

/* Whether r can be checked at all (kind, settings, arithmetic), before any
 * network is made: true, or false with the reason in why. */
bool recheck_supported(const game_record *r, char *why, size_t whylen);

/* Whether an evaluator of this process can compute as the record's
 * arithmetic `path` does: true for "avx512-fp32" on a CPU with AVX-512, for
 * "avx512-bf16" where AVX512_BF16 is there too; false for "openblas-fp32"
 * and anything else. *precision is the model.h precision to make it with. */
bool recheck_evaluator_usable(const char *path, int *precision);

/* The search settings the worker used for r (mcts.h), as play/driver.c
 * derives them for its kind: what recheck_record searches with. */
mcts_settings recheck_settings(const record_settings *rs, int kind);

/* Picks the states to check: each searched state (not forced) of r with
 * probability 1 / one_in, from rng. Returns the index of the last one picked
 * (the check replays states 0 up to it), or -1 when none was. one_in 1
 * picks the last searched state (the whole game is checked); 0 picks none. */
int recheck_sample(const game_record *r, uint32_t one_in, rng_t *rng);

/* What a check did. */
typedef struct recheck_report {
    int verdict;           /* enum recheck_verdict */
    int states;            /* searched states compared */
    int searches;          /* searches run (forced states cost none) */
    int state;             /* the first state that differs, -1 none */
    char detail[200];      /* forged or uncheckable: one line saying why */
} recheck_report;

/* Searches r's states 0..upto again (upto < r->n_moves; a negative or too
 * large upto means every state) and compares them with the record: the
 * action played, the forced flag, the fast-search flag (playout cap draws),
 * every policy entry (actions and shares, exact floats) and the root value
 * (exact). ev[p] is the network of player p (0 first): self-play both the
 * model's, arena the candidate's at candidate_player and the best's at the
 * other; the two must be the same evaluator (ctx) exactly when one network
 * plays both sides. r must have passed validate (its moves are legal). 0
 * with out filled, or an error: KZ_ENOMEM, the evaluator's. */
int recheck_record(const game_def *g, const game_record *r, const evaluator ev[2], int upto,
                   recheck_report *out);

/* Plays a game as a worker does: through the game driver (driver.h) with
 * one slot, set as kz-worker sets it, so that recheck_record's finding it
 * honest checks the replay against the driver. r holds the game's kind,
 * versions, candidate_player, start_position, settings (settings.evaluator
 * naming ev's arithmetic) and seed; its moves, winner, reason, plies and
 * game name are written, and its settings become the driver's record of
 * them (an arena game's without root noise, forced playouts or pruning).
 * For tests and kz loadgen. 0, KZ_EINVAL when r is not checkable
 * (recheck_supported) or the driver refuses its settings or start,
 * KZ_ENOMEM or the evaluator's error. */
int recheck_play(const game_def *g, game_record *r, const evaluator ev[2]);

#endif
