/* player: one interface for everything that chooses actions in a game, and the
 * baseline players on which learning is measured (the "ladder"):
 *
 *   random        a uniformly random legal action.
 *   greedy        the most material after its own turn, with the forced
 *                 capture replies that follow (quiescence), ties at random.
 *                 In Khreibaga, whose R8 already forces the maximum number
 *                 of captures, "most captures" alone would be random play;
 *                 this greedy instead prefers taking kings, promoting, and
 *                 not leaving pieces to a forced recapture. It is alpha-beta
 *                 at depth 1 with the material-only evaluation.
 *   uct:N[:C]     pure Monte-Carlo tree search (UCT, UCB1 with constant C,
 *                 default 1.0 on rewards in [0,1]) with N random playouts.
 *   alphabeta:D   alpha-beta at depth D turns with the material-and-mobility
 *                 evaluation and quiescence (below).
 *   policy:MODEL  argmax of the network's policy over the legal actions.
 *   mcts:MODEL[:SIMS]  the network with the batched PUCT search of mcts.h
 *                 (default: the game's simulations, game_def), always playing the most visited
 *                 action, with no root noise, and keeping the chosen subtree
 *                 between moves (player_observe advances it).
 *   perfect[:NODES]  Khreibaga only: each whole turn's result proven by the proof
 *                 search (solve/pns.h, NODES expansions a search, default
 *                 PLAYER_PERFECT_NODES), a turn of the best proven value played
 *                 (win > draw > loss); alpha-beta where the budget runs out
 *                 (player_perfect.c says how; player_perfect_fallbacks counts it).
 *   gumbel:MODEL[:SIMS]  the same search with the Gumbel root (mcts.h,
 *                 root_mode gumbel) and no Gumbel noise: it plays the
 *                 Sequential Halving winner, deterministically.
 * MODEL is a model file (modelfile.h) for the game, or `uniform`: the uniform
 * evaluator (equal priors, value 0), search without a network. A network
 * spec may end in `:fp32` or `:bf16`, the network's precision (model.h);
 * without it the process default (model_set_precision) applies.
 *
 * A player is asked for EVERY action, each hop of a capture sequence too
 * (R9); a state with one legal action needs no thinking, and every player
 * here answers it at once without searching.
 *
 * Perspective (R18). Inside a capture sequence the same player moves again.
 * All searches here take the side of a node from game_def->to_move: UCT
 * credits each node's reward to the player who chose it (absolute winner, no
 * negation); alpha-beta negates a child's value only where the mover changes.
 *
 * Alpha-beta, precisely (also what tests/unit/test_player.c checks by brute force):
 * - Depth counts TURNS, not hops: the rest of the current turn is turn 1, and
 *   the hops inside a capture sequence cost nothing. A leaf is always a turn
 *   start (or a terminal state), never mid-sequence, where material is in flux.
 * - Terminal: +/-(PLAYER_WIN - hops from the root) for a win/loss of the mover
 *   (quicker wins, slower losses preferred), 0 for a draw.
 * - Quiescence: at depth 0, a turn start where the mover must capture
 *   (game_def.must_capture) is searched on (captures are compulsory, so every
 *   legal action is one), up to PLAYER_QUIESCENCE_TURNS extra turns; then it
 *   is evaluated.
 * - Evaluation, from the mover's view: the game's static evaluation
 *   (game_def.evaluate: its material, a man = 100; Khreibaga counts a king
 *   250), plus PLAYER_EVAL_MOBILITY per legal action of the mover (alphabeta;
 *   greedy has no mobility term). A game without the hooks is searched on
 *   mobility alone (greedy: at random) and without quiescence.
 * - Ties between root actions are broken uniformly at random (the root order
 *   is shuffled and only a strictly better value replaces the best).
 *
 * Ownership: constructors return a new player (NULL on failure, with a
 * one-line reason in err when err is given); the caller owns it and frees it
 * with player_destroy(&p). Workspaces are sized in the constructor: choosing
 * an action allocates nothing.
 * Threads: a player belongs to one thread at a time; different players may be
 * used in different threads at once. */
#ifndef KZ_PLAYER_H
#define KZ_PLAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "search/mcts.h"

#define PLAYER_EVAL_MOBILITY 2      /* per legal action of the mover (alphabeta) */
#define PLAYER_WIN 1000000          /* terminal score before subtracting the distance */
#define PLAYER_QUIESCENCE_TURNS 8   /* most forced-capture turns searched past depth 0 */
#define PLAYER_MAX_DEPTH 32         /* largest alpha-beta depth in turns */
#define PLAYER_MAX_PLAYOUTS 10000000 /* largest UCT playout count */
#define PLAYER_MAX_SIMS 1000000     /* largest MCTS simulation count (mcts.h's limit) */
#define PLAYER_PERFECT_NODES 100000 /* the perfect player's default budget per search */
#define PLAYER_SPEC_MAX 256         /* longest player spec string */

typedef struct player player;

/* What a player thought about one decision (for `kz analyse`). */
typedef struct player_info {
    int action;                          /* the chosen action */
    double value;                        /* expected result in [-1,1] from the mover's view;
                                            alpha-beta: its score mapped by score/(|score|+300)
                                            and +/-1 for a forced win/loss */
    long score;                          /* alpha-beta score (mover's view), else 0 */
    int n;                               /* legal actions listed below */
    uint16_t actions[GAME_MAX_LEGAL];    /* the legal actions, ascending */
    float share[GAME_MAX_LEGAL];         /* UCT/MCTS: visit share; policy: probability;
                                            alpha-beta/greedy: 1 for the chosen, else 0 */
    float prior[GAME_MAX_LEGAL];         /* MCTS/policy: the network's prior; else NAN */
    float q[GAME_MAX_LEGAL];             /* UCT/MCTS: mean value of the action from the
                                            mover's view (NAN if unvisited); else NAN */
    long work;                           /* playouts, simulations or nodes spent */
} player_info;

/* UCT settings. */
typedef struct player_uct_config {
    int playouts;      /* random playouts per decision, >= 1 */
    double c;          /* UCB1 exploration constant (rewards in [0,1]) */
} player_uct_config;

/* A random player. */
player *player_random_new(const game_def *g);
/* The greedy player (see above). */
player *player_greedy_new(const game_def *g);
/* UCT with random playouts. Node memory: 1 + GAME_MAX_LEGAL + 32 * playouts
 * nodes of 16 bytes (at most 2^22 nodes), allocated here; when a search fills
 * it, leaves are played out without being expanded. */
player *player_uct_new(const game_def *g, const player_uct_config *cfg);
/* GNU Backgammon at a level (gnubg.h: beginner .. grandmaster), backgammon
 * only: a gnubg process started here (NULL and the reason in err when it
 * cannot be) and stopped by player_destroy. At a fresh roll it asks gnubg
 * for its move and plays it checker by checker (the same whole move, found
 * by its resulting position); a gnubg that dies or stops answering makes
 * player_choose fail with KZ_EIO (the reason logged), never hang. */
player *player_gnubg_new(const game_def *g, const char *level, char *err, size_t errlen);
/* Alpha-beta at `depth` turns (1..PLAYER_MAX_DEPTH). */
player *player_alphabeta_new(const game_def *g, int depth);
/* The search settings of an mcts player with `sims` simulations: the
 * defaults of mcts.h with no root noise (dirichlet_epsilon 0). */
mcts_settings player_mcts_settings(int sims);
/* Those of a gumbel player: root_mode gumbel without Gumbel noise
 * (gumbel_noise false, temperature_plies 0). */
mcts_settings player_gumbel_settings(int sims);
/* The raw network policy, and the network with PUCT search (settings s,
 * copied; the player always plays the search's best action, mcts_result.best:
 * the most visited, or the halving's winner in gumbel mode, whatever
 * s->temperature_plies says; named mcts:... or gumbel:... by s->root_mode).
 * The model file (or "uniform") is read here; NULL with a one-line reason
 * in err when it cannot be used or s is invalid. */
player *player_policy_new(const game_def *g, const char *model_path, char *err, size_t errlen);
player *player_mcts_new(const game_def *g, const char *model_path, const mcts_settings *s,
                        char *err, size_t errlen);
/* The same over an evaluator the caller already has (e.g. a worker's
 * network): ev is copied, its ctx borrowed and must outlive the player.
 * `name` is what player_spec_name reports. NULL (with err) for invalid settings. */
player *player_policy_new_evaluator(const game_def *g, evaluator ev, const char *name);
player *player_mcts_new_evaluator(const game_def *g, evaluator ev, const mcts_settings *s,
                                  const char *name, char *err, size_t errlen);

/* The perfect player with `nodes` expansions per proof search (Khreibaga
 * only: NULL with a one-line reason in err for another game). */
player *player_perfect_new(const game_def *g, long nodes, char *err, size_t errlen);
/* Decisions a perfect player left to its alpha-beta fallback so far (no
 * child proven to keep a draw, some unknown); -1 for another kind. */
long player_perfect_fallbacks(const player *p);

/* Builds a player from a spec ("random", "greedy", "uct:1000", "uct:1000:1.4",
 * "alphabeta:4", "policy:MODEL", "mcts:MODEL:200", "gumbel:MODEL:200",
 * "mcts:MODEL:200:bf16"). NULL with a one-line reason in err for a malformed
 * spec or a failing constructor. */
player *player_from_spec(const game_def *g, const char *spec, char *err, size_t errlen);
/* A one-paragraph description of the spec syntax, for --help texts. */
const char *player_spec_help(void);

/* An oracle for the player's search (game.h: a game's endgame tables, e.g.
 * tablebase.h's tb_oracle; NULL, the default: none): an mcts or gumbel
 * player values the leaves it knows by their exact result
 * (mcts_batch_set_oracle), an alphabeta or greedy player the nodes below
 * the root (a known win scores above any material but below a win on the
 * board, by the oracle's score, so that the search makes progress); the
 * other players ignore it. o is copied, its ctx borrowed: it must outlive
 * its use. */
void player_set_oracle(player *p, const game_oracle *o);
/* Called every PLAYER_TICK_WORK nodes of alphabeta's and greedy's searches
 * and every PLAYER_TICK_PLAYOUTS playouts of uct's (a backgammon playout can
 * take 10 ms): the caller's chance to do its own work
 * during a long move on the same thread (a worker's heartbeats); gnubg's
 * player calls it about every 100 ms while it waits for gnubg's answer. Returning
 * true gives the search up: player_choose then returns KZ_ECANCELED and no
 * action. */
typedef bool (*player_tick_fn)(void *ctx);
#define PLAYER_TICK_WORK 1024
#define PLAYER_TICK_PLAYOUTS 16
/* Sets p's tick (NULL: none, the default); ctx is borrowed. The network
 * players ignore it (their searches run in the caller's steps). */
void player_set_tick(player *p, player_tick_fn fn, void *ctx);
/* Starts a new game: resets per-game state and seeds the player's random
 * generator (the same seed and the same positions give the same choices). */
void player_new_game(player *p, uint64_t seed);
/* Chooses an action in s (a state whose game is not over and that has a legal
 * action). info may be NULL. 0, or an error code (a player that cannot
 * answer, e.g. a network that fails; KZ_ECANCELED when its tick said stop). */
int player_choose(player *p, const game_state *s, int *action, player_info *info);
/* Move accuracy: p's choice at each of n states (each a new game, seeded by
 * its index: player_new_game(p, i)) against want[i], e.g. the one
 * value-keeping action of the endgame tables' test set (tb_test_positions;
 * `kz tb accuracy`, the coordinator's and bench_learning's endgame
 * accuracy). *right gets the count of matches, hit[i] (NULL: not kept)
 * each one. 0, or player_choose's error (then *right counts those before). */
int player_accuracy(player *p, const game_state *states, const uint16_t *want, int n, bool *hit,
                    int *right);
/* Tells the player that `action` was played in `s` (by either side): players
 * that keep a tree between moves reuse it. Optional to call. */
void player_observe(player *p, const game_state *s, int action);
/* The player's spec (e.g. "uct:1000"). Borrowed, valid while p lives. */
const char *player_spec_name(const player *p);
/* Frees *p and sets it to NULL; NULL-safe. */
void player_destroy(player **p);

/* Evaluation of s from the mover's view, as described above; `mobility`
 * selects the alphabeta (true) or greedy (false) evaluation. */
long player_evaluate(const game_def *g, const game_state *s, bool mobility);
/* Whether the mover in s (a turn start) must capture (game_def.must_capture;
 * false for a game without it). */
bool player_must_capture(const game_def *g, const game_state *s);
/* Runs the alpha-beta search of the alphabeta player (mobility true) or the
 * greedy player (mobility false, depth 1) on s without randomness: ties go to
 * the lowest action. Writes the best action and its score (mover's view);
 * returns the number of nodes visited. s must not be over. Thread-safe. */
long player_alphabeta_search(const game_def *g, const game_state *s, int depth, bool mobility,
                             int *action, long *score);

#endif
