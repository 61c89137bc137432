/* mcts: batched PUCT Monte Carlo tree search over any game_def, driven by an
 * evaluator (evaluator.h). One `mcts_batch` holds G independent trees (one per
 * game in progress); each step every tree that is still searching selects one
 * or more leaves (several with virtual loss), all those leaves go through the
 * evaluator as ONE batch, and the results are backed up. Self-play (selfplay.h)
 * drives G games with it; a player drives a batch of one tree.
 *
 * Selection (PUCT). At a node whose mover is m, the child a maximises
 *     Q(a) + c_puct * P(a) * sqrt(N) / (1 + n(a))
 * where n(a) counts a's visits (virtual ones included), N is the node's own
 * visit count (at least 1, so the priors order the very first selection), Q(a)
 * is a's mean value from m's view with each in-flight virtual visit counted as
 * a loss, and P(a) the prior. Ties go to the lower action index.
 *
 * First-play urgency (`fpu`). An unvisited child has Q = V - fpu, clamped to
 * [-1, 1], where V is the node's own current mean value from m's view: the
 * "FPU reduction" of Leela Zero and KataGo. fpu = 0 makes an unvisited child
 * look as good as its parent; a positive fpu spends simulations on the
 * children the priors favour before trying the others.
 *
 * Priors. The evaluator's logits are read at game_def->canonical_action of
 * each legal action (the network speaks canonical actions) and the softmax is
 * taken over the legal actions only. At the root, with dirichlet_epsilon > 0,
 * P = (1 - eps) * P + eps * Dirichlet(alpha), drawn once per move.
 *
 * Chance nodes (game_def.is_chance: dice). A chance state is expanded at
 * once, without the evaluator: its children are the outcomes, their priors
 * the outcomes' probabilities, and a selection walks on to the outcome
 * furthest behind its probability's share of the node's visits
 * (argmax p (N + 1) - n, the first of equals): stratified sampling, so the
 * node's mean is the probability-weighted expectation over its outcomes
 * (within one visit per outcome), and the search stays deterministic. Only
 * decision states are evaluated. A root at a chance state does not search
 * (MCTS_DONE at once): the caller draws the outcome (game.h's dice) and
 * advances the tree through it, keeping the outcome's subtree. Terminal
 * values are game_result_value (a backgammon gammon is worth 2/3).
 *
 * Value signs (R18). Every backed-up value is kept from the view of the player
 * who chose the edge (the mover at the parent). Passing a value from a node
 * to its parent negates it only where the player to move differs between the
 * two states (game_def->to_move before and after the action): inside a
 * capture sequence the same player moves again and the value passes
 * unchanged. A terminal state is valued by its true result (game_result_for),
 * never by the evaluator.
 *
 * Forced states. A state with exactly one legal action costs no evaluator call
 * and no search: at the root the move is returned at once (mcts_result.forced);
 * inside the tree the node is expanded with prior 1 and the simulation walks
 * on through it in the same step.
 *
 * Simulations. `simulations` is the visit count the root's children must
 * reach: visits kept from the reused subtree count, so "the visits at the root
 * sum to simulations" holds whether or not the tree was reused. The root's own
 * expansion is not a simulation. A tree's moves may get a smaller budget,
 * without root noise and forced playouts (mcts_batch_set_budget): the fast
 * searches of playout cap randomization (KataGo, arXiv:1902.10565 section
 * 3.1; docs/learning.md).
 *
 * Memory. Each tree owns two node arenas of `tree_nodes` nodes sized at
 * creation; after a move the chosen child's subtree is copied into the other
 * arena (subtree reuse) and the rest is dropped. Evaluations are cached by
 * game_def->hash in one fixed-size table per batch (direct-mapped, exact
 * floats, so a cache hit gives what the evaluator gave); a leaf answered by
 * the cache still waits for the end of the step like any other, so that a
 * tree's search does not depend on what other trees put in the cache. Leaves
 * of one step with the same position share one row of the batch. Nothing is
 * allocated after mcts_batch_new. Should a tree's arena fill up, its search stops early
 * for that move (counted in mcts_stats.arena_full).
 *
 * Forced playouts and policy target pruning (KataGo, arXiv:1902.10565 section
 * 3.2; settings forced_playouts_k, policy_pruning; root_mode puct only). With
 * forced_playouts_k = k > 0, a root child c that has been visited (real or
 * in-flight visits n(c) > 0) and has n(c) < sqrt(k * P(c) * sum_b n(b)) is
 * selected before PUCT is consulted (the first such child in action order),
 * so that the root noise's picks get enough visits to be judged. Those extra
 * visits would teach the network the noise, so with policy_pruning the policy
 * target (mcts_result.target) is computed from pruned visits: every child but
 * the most visited one c* loses up to floor(sqrt(k * P(c) * sum N)) visits, one
 * at a time while its PUCT value with the reduced count (its own mean value,
 * the root's N) stays below PUCT(c*); a child left with one visit or none is
 * removed. Moves sampled by visits (mcts_result_choose) then follow the
 * pruned target too; the most visited action is unchanged.
 *
 * Gumbel root search (Danihelka et al., "Policy improvement by planning with
 * Gumbel", ICLR 2022; DeepMind's mctx gumbel_muzero_policy; root_mode
 * gumbel). Notation: logits(a) = log P(a); N(a) real visits; q(a) = mean value
 * from the mover's view, in [-1, 1]; sigma(q) = (gumbel_c_visit + max_b N(b))
 * * gumbel_c_scale * q. The completed value cq(a) is q(a) where N(a) > 0, else
 * the node's mixed value (raw + sum N * sum_visited P q / sum_visited P) /
 * (1 + sum N), raw being the evaluator's value of the node (mctx
 * qtransform_completed_by_mix_value, without its min-max rescaling). The
 * improved policy is pi' = softmax(logits + sigma(cq)).
 *   - At the root, once per move: a Gumbel draw g(a) per action, and the
 *     m = min(legal, gumbel_m) actions with the largest g + logits are
 *     "considered" (Gumbel-Top-k: m draws without replacement from P).
 *   - Sequential Halving spends this move's budget n = simulations - (visits
 *     kept from the reused subtree) over ceil(log2 m) phases, exactly as
 *     mctx's table: in a phase with k actions left (m, then halving, never
 *     below 2) each gets max(1, floor(n / (ceil(log2 m) * k))) more visits;
 *     phases repeat with 2 actions until n is spent. Simulation s of the move
 *     goes to the considered action with the largest g + logits + sigma(cq)
 *     among those with exactly mcts_gumbel_considered_visit(m, n, s) visits
 *     this move. No list of survivors is kept: the actions that lead the
 *     ranking reach the next phase's count first, and only they are
 *     candidates there (mctx's score_considered).
 *   - Batched steps: an action's visits this move count in-flight
 *     (virtual) visits, so a step's leaves_per_tree selections take the next
 *     leaves_per_tree entries of the schedule in order and every step keeps
 *     the schedule's counts exactly; only the ranking inside a phase uses
 *     the values known at the start of the step instead of one simulation
 *     earlier. Visits kept from the reused subtree stay (they sharpen q and
 *     sigma) but do not count in the schedule.
 *   - The action played (mcts_result.best) is, among the considered actions
 *     with the most visits this move, the one with the largest g + logits +
 *     sigma(cq); it is never sampled by visits (mcts_result_choose returns
 *     it). The policy target (mcts_result.target) is pi' at the root over
 *     every legal action.
 *   - Below the root the choice is deterministic (paper eq. 14): the child
 *     maximising pi'(a) - n(a) / (1 + sum_b n(b)), n counting in-flight
 *     visits so that a step's leaves spread; pi' uses real visits only.
 *   - The Gumbel noise replaces the root's Dirichlet noise (dirichlet_*
 *     unused) and the sampling of moves: it is drawn when gumbel_noise is set
 *     (self-play), and otherwise only while the turn count (game_def->ply) is
 *     below temperature_plies (an arena's varied openings), never in a fast
 *     search (mcts_batch_set_budget, explore false); without noise the
 *     search is deterministic (g = 0: the top m by prior, then the best by
 *     logits + sigma(cq)). c_puct, fpu unused. The per-tree root state is
 *     allocated by mcts_batch_new; node size and the hot path's allocations
 *     are unchanged (a node's raw value is derived, see mcts.c).
 *
 * Determinism. Given the same settings, seeds, evaluator outputs and call
 * sequence, everything is reproducible: no wall clock or global state enters
 * the search. A tree's search does not depend on the other trees of its
 * batch when the evaluator's output for a position does not depend on the
 * batch it comes in (model_eval's AVX-512 paths, model.h): a batch of one
 * tree then replays any tree of a batch of G (recheck.h relies on it).
 *
 * Threads: a batch is used by one thread at a time. Different batches are
 * independent. */
#ifndef KZ_MCTS_H
#define KZ_MCTS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "nn/evaluator.h"
#include "games/game.h"
#include "common/util.h"

/* Where the root's simulations go (see above). */
enum mcts_root_mode {
    MCTS_ROOT_PUCT = 0,   /* PUCT, Dirichlet noise, moves sampled by visits (AlphaZero) */
    MCTS_ROOT_GUMBEL = 1, /* Gumbel-Top-k and Sequential Halving, deterministic below */
};

/* Search settings; map to proto SearchSettings (proto/record.proto).
 *
 * Why these defaults. 200 simulations and 10 sampled plies are the
 * specification's (seed 000, section 3.3). c_puct 1.5 is the usual value for
 * values in [-1, 1] (AlphaZero's formula gives about 1.25 at these visit
 * counts). Dirichlet alpha: AlphaZero scales alpha inversely with the number
 * of legal moves (0.3 for chess, 0.03 for Go); where Khreibaga offers a choice
 * it offers about 5 actions (4.9 on average over 2000 random games), which
 * puts alpha near 1; epsilon 0.25 is AlphaZero's. fpu 0.25 lies between
 * KataGo's 0.2 and Leela Zero's larger reductions. Four leaves per tree keep
 * the virtual-loss distortion small at 200 simulations while G trees fill the
 * network's batch (G * 4 positions at most per call).
 *
 * cache_entries 65536: the table is one per batch, shared by its G trees (32
 * in workers and kz selfplay), and a move of the batch adds up to G *
 * simulations positions (6400 at the defaults), so an entry survives one
 * move of the batch with probability exp(-6400 / entries): 0.82 with 32768
 * entries, 0.91 with 65536. What it is there to find again are positions
 * that other games of the batch reach a few moves later (the openings, the
 * games start at different times) and transpositions, so the larger table
 * keeps about twice the window. An entry is 272 bytes: 17.8 MB per batch
 * (0.56 MB per tree at G = 32), mapped lazily, the same order as the tree
 * arenas (2 * 16896 nodes of 28 bytes per tree at 200 simulations, 0.95 MB).
 * A batch of one tree (a player) touches only the entries it fills. The
 * cache never changes a search's result (exact floats), only its speed.
 *
 * The root methods (forced playouts, pruning, gumbel) are off by default so
 * that the search stays as measured until the lead measures them; when
 * turned on, the sources' values are the starting points: KataGo's k = 2, the
 * Gumbel paper's m = 16, c_visit = 50, c_scale = 1.0 (Go). With about 5 legal
 * actions, m = 16 considers every action: the Gumbel noise then acts only
 * through the ranking g + logits + sigma(cq). c_scale 1.0 was set for values
 * in [-1, 1] without rescaling, as here; mctx's default instead rescales the
 * completed values to [0, 1] and uses 0.1. The new settings are not in the
 * game record (its format is unchanged). */
typedef struct mcts_settings {
    int simulations;         /* root child visits per move (reused visits count); 200 */
    float c_puct;            /* exploration constant of PUCT; 1.5 */
    float dirichlet_alpha;   /* root noise concentration; 1.0 (about 10 / mean legal count) */
    float dirichlet_epsilon; /* weight of the root noise, 0 disables it; 0.25 */
    int temperature_plies;   /* sample by visits (tau 1) while ply < this, then most visited; 10 */
    float fpu;               /* first-play reduction (see above); 0.25 */
    int leaves_per_tree;     /* leaves a tree sends to one evaluator batch (virtual loss); 4 */
    bool reuse_tree;         /* keep the chosen child's subtree after a move; true */
    int cache_entries;       /* evaluation cache size (up to a power of two), 0 = off; 65536 */
    int tree_nodes;          /* nodes per tree arena, 0 = automatic (64 * simulations + 4096) */
    float forced_playouts_k; /* forced playouts at the root, 0 = off (KataGo: 2); 0 */
    bool policy_pruning;     /* prune forced playouts from the policy target (needs k > 0); false */
    int root_mode;           /* enum mcts_root_mode; MCTS_ROOT_PUCT */
    int gumbel_m;            /* gumbel: actions considered at the root (paper: 16); 16 */
    float gumbel_c_visit;    /* gumbel: sigma's visit offset (paper: 50); 50 */
    float gumbel_c_scale;    /* gumbel: sigma's scale (paper, Go: 1.0); 1.0 */
    bool gumbel_noise;       /* gumbel: Gumbel noise at every move (self-play), else only
                                while ply < temperature_plies; true */
} mcts_settings;

/* The defaults above (the specification's 200 simulations and 10 sampled
 * plies): mcts_options' text defaults, tree_nodes 0 (automatic) and
 * gumbel_noise true (the fields without a row). Parsed once; thread-safe. */
mcts_settings mcts_settings_default(void);

/* The search's settings rows (config.h), over an mcts_settings: every
 * program that configures a search lists this group (kz-worker, kz
 * selfplay), so a setting has one name, range, help and default everywhere.
 * Their text defaults are the one place the search's defaults are written
 * (mcts_settings_default() reads them); the ranges are mcts_settings_check's
 * (a lower bound of 0 excluded is written 0.000001). tree_nodes and gumbel_noise have no row: the programs
 * leave the first automatic and set the second by the kind of game. */
extern const config_option mcts_options[];
extern const size_t mcts_options_n; /* rows in mcts_options */
/* Checks ranges (and that forced playouts and pruning go with root_mode puct,
 * pruning with k > 0); 0, or KZ_EINVAL with a one-line reason in err. */
int mcts_settings_check(const mcts_settings *s, char *err, size_t errlen);
/* "puct" / "gumbel" to enum mcts_root_mode: 0, or KZ_EINVAL for another name. */
int mcts_root_mode_parse(const char *name, int *mode);
/* The name of a root mode ("puct", "gumbel"; "?" for another value). */
const char *mcts_root_mode_name(int mode);

/* A search's outcome at one root. */
typedef struct mcts_result {
    int n;                            /* legal actions at the root */
    uint16_t actions[GAME_MAX_LEGAL]; /* the legal actions, real orientation, ascending */
    uint32_t visits[GAME_MAX_LEGAL];  /* visits of each */
    float priors[GAME_MAX_LEGAL];     /* the priors the search used (root noise included) */
    float q[GAME_MAX_LEGAL];          /* mean value of each, the mover's view (0 if unvisited) */
    uint32_t total;                   /* sum of visits */
    float value;                      /* the root's mean value from the mover's view */
    int best;                         /* the action to play: the most visited (ties: higher
                                         prior, then lower index); gumbel: the halving's winner */
    bool forced;                      /* exactly one legal action: played without search */
    float target[GAME_MAX_LEGAL];     /* the policy target of each: visits / total (exactly
                                         that float division), the pruned visits' shares
                                         (policy_pruning) or pi' (gumbel); the shares are
                                         all 0 when total is 0 */
    bool pruned;                      /* target holds pruned visits (policy_pruning) */
    bool gumbel;                      /* root_mode gumbel: best is played as is */
} mcts_result;

/* Picks the action to play: with tau_one, an action drawn with probability
 * proportional to its visits (from rng), or to target when r->pruned;
 * otherwise, and always for a gumbel result, r->best. */
int mcts_result_choose(const mcts_result *r, bool tau_one, rng_t *rng);

/* The mechanics of the root methods, exported so that the tests can check
 * them on hand-built numbers (the search calls these very functions).
 *
 * mcts_forced_playouts: KataGo's forced playout count sqrt(k * prior * total),
 * total being the sum of the root children's visits. */
float mcts_forced_playouts(float k, float prior, uint32_t total);
/* Policy target pruning over n root children (visits, priors, mean values q
 * from the mover's view, best = index of the most visited child, parent_n =
 * the root's own visit count in PUCT's sqrt): writes the pruned visits to out
 * (see above). */
void mcts_prune_visits(int n, const uint32_t *visits, const float *priors, const float *q,
                       int best, float c_puct, uint32_t parent_n, float k, uint32_t *out);
/* Gumbel-Top-k: writes the indices of the min(n, m) largest logits[i] +
 * gumbel[i] to out, largest first (ties: lower index), each index once;
 * returns their number. */
int mcts_gumbel_top_k(int n, const float *logits, const float *gumbel, int m, int *out);
/* One standard Gumbel draw -log(-log(u)), u uniform in (0, 1) from rng. */
float mcts_gumbel_draw(rng_t *rng);
/* Sequential Halving's schedule: the visit count (this move) that the
 * action chosen for simulation s (0-based) of a budget of n simulations over m
 * considered actions has before that simulation (mctx
 * get_sequence_of_considered_visits); for m <= 1, s. */
int mcts_gumbel_considered_visit(int m, int n, int s);
/* The completed values and the improved policy at one node of n actions:
 * priors (softmax of the logits), real visits, mean values q (mover's view,
 * read where visits > 0), raw = the evaluator's value of the node. Writes cq
 * (q, or the mixed value where unvisited) and pi = softmax(log prior +
 * sigma(cq)); returns sigma's factor (c_visit + max visits) * c_scale. */
float mcts_gumbel_policy(int n, const float *priors, const uint32_t *visits, const float *q,
                         float raw, float c_visit, float c_scale, float *cq, float *pi);

/* Counters over a batch's life (reset by mcts_batch_reset_stats). */
typedef struct mcts_stats {
    uint64_t simulations;     /* simulations completed (root-child visits added) */
    uint64_t evaluator_calls; /* calls of evaluator.run */
    uint64_t evaluated;       /* positions sent to the evaluator */
    uint64_t cache_hits;      /* leaves answered by the cache (backed up with the batch) */
    uint64_t duplicates;      /* leaves that shared another leaf's evaluation in the same batch */
    uint64_t terminal_leaves; /* leaves valued by the rules */
    uint64_t tb_leaves;       /* leaves valued by the endgame tables (their first visit) */
    uint64_t forced_nodes;    /* single-action nodes walked through without evaluation */
    uint64_t chance_nodes;    /* chance nodes expanded (their outcomes, never evaluated) */
    uint64_t collisions;      /* selections abandoned on a leaf already waiting */
    uint64_t arena_full;      /* searches stopped early because a tree arena was full */
    uint64_t steps;           /* mcts_batch_step calls that did work */
    int max_batch_seen;       /* largest batch sent to the evaluator */
    double eval_seconds;      /* wall time inside evaluator.run */
    double step_seconds;      /* wall time inside mcts_batch_step (eval_seconds included) */
} mcts_stats;

typedef struct mcts_batch mcts_batch;

/* A batch of `trees` trees for game g with settings s (copied) and evaluator ev
 * (copied; its ctx is borrowed and must outlive the batch). All trees start
 * idle. NULL when the settings are invalid (see mcts_settings_check) or memory
 * runs out. Caller owns the result: mcts_batch_destroy. */
mcts_batch *mcts_batch_new(const game_def *g, const mcts_settings *s, int trees, evaluator ev);
/* Frees the batch and sets *b to NULL; NULL-safe. */
void mcts_batch_destroy(mcts_batch **b);

/* Replaces the evaluator (a new model) and clears the evaluation cache. */
void mcts_batch_set_evaluator(mcts_batch *b, evaluator ev);
/* An oracle for the leaves (game.h: a game's endgame tables, e.g.
 * tablebase.h's tb_oracle; NULL, the default: none). A state below the root
 * that the oracle knows is valued by its score / 100, as a terminal state:
 * never expanded nor sent to the evaluator (mcts_stats.tb_leaves). The
 * tables score a win reached by a king's simple move less by its distance
 * to the zeroing move, so that the search makes progress. The root is
 * searched as always. o is copied (its ctx borrowed, outliving its use); it
 * applies from the next selection on. */
void mcts_batch_set_oracle(mcts_batch *b, const game_oracle *o);
int mcts_batch_trees(const mcts_batch *b);
const mcts_settings *mcts_batch_settings(const mcts_batch *b);
const mcts_stats *mcts_batch_stats(const mcts_batch *b);
void mcts_batch_reset_stats(mcts_batch *b);

/* Tree status. */
enum mcts_status {
    MCTS_IDLE = 0,  /* no position */
    MCTS_SEARCHING, /* mcts_batch_step works on it */
    MCTS_DONE,      /* the search for this move is complete: mcts_batch_result */
    MCTS_OVER,      /* the root state is terminal: nothing to search */
};

/* Sets tree i to state s with an empty tree; `seed` seeds its root-noise
 * generator. The tree then searches (or is DONE at once if s has one legal
 * action, OVER if s is terminal). */
void mcts_batch_reset(mcts_batch *b, int i, const game_state *s, uint64_t seed);
/* Makes tree i idle (no position). */
void mcts_batch_clear(mcts_batch *b, int i);
/* The budget of tree i's moves that begin at its next mcts_batch_reset or
 * mcts_batch_advance, and after (until set again): `simulations` in
 * 1 .. settings' simulations (checked by assert), and with `explore` false,
 * neither root noise nor forced playouts (a fast search of playout cap
 * randomization; its target is the plain visit shares, never pruned). A
 * new batch's trees have the settings' simulations and exploration.
 * Allocates nothing. */
void mcts_batch_set_budget(mcts_batch *b, int i, int simulations, bool explore);
/* Plays `action` (legal in tree i's root state; checked by assert) and moves
 * the root to that child, keeping its subtree when reuse_tree is set. Any
 * search in progress on tree i is abandoned (no leaf of it may be pending:
 * call between steps). */
void mcts_batch_advance(mcts_batch *b, int i, int action);
enum mcts_status mcts_batch_status(const mcts_batch *b, int i);
/* Tree i's root state. Borrowed, valid until the next reset/advance of i. */
const game_state *mcts_batch_state(const mcts_batch *b, int i);

/* One batched step over every searching tree: select leaves, one evaluator
 * batch (in chunks of evaluator.max_batch), back up. Returns the number of
 * trees still searching afterwards (0: all done, over or idle), or a negative
 * error code from the evaluator (also KZ_EINVAL when it returned a non-finite
 * or out-of-range number); after an error the trees are as before the step. */
int mcts_batch_step(mcts_batch *b);
/* Steps until no tree is searching; 0 or an error from mcts_batch_step. */
int mcts_batch_run(mcts_batch *b);
/* The search result of tree i (status DONE). Also valid mid-search (the
 * visits so far). For a forced root, n = 1 and value is the reused subtree's
 * value if any, else 0. */
void mcts_batch_result(const mcts_batch *b, int i, mcts_result *out);

/* One-shot search of state s (not terminal) with a batch of one tree made and
 * freed inside: the result, or an error (KZ_EINVAL for bad settings or a
 * terminal state, KZ_ENOMEM, or the evaluator's error). For a game, keep a
 * batch of one tree instead and advance it, so that the subtree is reused. */
int mcts_search(const game_def *g, const mcts_settings *s, evaluator ev, const game_state *st,
                uint64_t seed, mcts_result *out);

#endif
