/* selfplay: plays games of a model against itself with the batched search,
 * G games at once on one evaluator, and hands each finished game to a
 * callback as a game_record (record.h): a source of N self-play games for
 * the game driver (driver.h), which plays them. kz selfplay, the benchmarks
 * and the tests use it; kz-worker drives the driver itself. Self-play's
 * settings (selfplay_config, selfplay_options) are the driver's: it plays
 * every game by them (driver.h).
 *
 * Per game k (0, 1, 2, ... in the order games start) the seed is
 * config.seed + k; it drives the root noise and the sampling of moves, and is
 * stored in the record. The search is deterministic (mcts.h), so a fixed seed
 * and configuration reproduce every game exactly (with an evaluator whose
 * outputs do not depend on how positions are grouped into batches, such as
 * the uniform one, game k is the same whatever `parallel` is). The game id
 * is random (getrandom) and the timings are wall clock: they differ.
 *
 * Moves: while the turn count (game_def->ply) is below
 * search.temperature_plies, the move is drawn with probability proportional
 * to the visits (tau = 1), afterwards the most visited action is played
 * (mcts_result_choose; in gumbel root mode the search's own choice is always
 * played). A state with one legal action is played at once
 * (record_move.forced). Every state is recorded, mid-sequence states too,
 * with the search's policy target (mcts_result.target: the visit shares
 * unless pruning or gumbel mode say otherwise).
 *
 * Playout cap randomization (pcr_full_fraction below 1; KataGo,
 * docs/learning.md): before each move's search a draw from the game's
 * generator gives a full search (search.simulations) with probability
 * pcr_full_fraction, else a fast one (pcr_fast_simulations, at most the full
 * count, no root noise or forced playouts, the most visited action played),
 * recorded with record_move.fast_search (no policy target); 0 makes every
 * search fast (value targets only). At 1 (off) nothing is drawn and the
 * games are those of before.
 *
 * Endgame tables (tablebase.h; cfg.oracle, its tb_oracle). With tb_adjudicate, once a
 * game reaches a state the tables cover (turn start or mid-sequence) both
 * sides play the tables' perfect play (tb_best_action) to the end, without
 * search: such a move is recorded with the exact value under R13 as its
 * root value and no policy target (fast_search; a forced move as always),
 * so the game ends as the tables say by the rules themselves and its record
 * replays and validates like any other, its z exact. With tb_search, the
 * search values the leaves the tables cover exactly.
 *
 * Threads: one thread at a time per selfplay object. */
#ifndef KZ_SELFPLAY_H
#define KZ_SELFPLAY_H

#include <stdint.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "search/mcts.h"
#include "data/record.h"
#include "play/driver.h"


/* Called for each finished game. r is borrowed for the call only. A nonzero
 * return stops the run and is returned by selfplay_step. */
typedef int (*selfplay_game_fn)(void *ctx, const game_record *r);

typedef struct selfplay_stats {
    int games_started;   /* games begun */
    int games_done;      /* games finished and handed to the callback */
    uint64_t states;     /* states recorded (moves in all finished games) */
    uint64_t plies;      /* completed turns in all finished games */
    uint64_t forced;     /* forced states among them */
    int wins[2];         /* finished games won by player 0 / 1 */
    int draws;           /* finished games drawn */
    int reasons[GAME_MAX_REASONS]; /* finished games by end reason */
    int tb_games;        /* games finished by the tables (tb_adjudicate) */
    uint64_t tb_moves;   /* moves the tables played */
    double seconds;      /* wall time inside selfplay_step */
    mcts_stats search;   /* the search's counters (mcts.h) */
} selfplay_stats;

typedef struct selfplay selfplay;

/* A self-play run. ev's ctx is borrowed and must outlive the run. NULL with a
 * one-line reason in err for bad settings (mcts_settings_check, games,
 * parallel, an unparsable or finished start position) or when memory runs
 * out. Caller owns the result: selfplay_destroy. */
selfplay *selfplay_new(const game_def *g, const selfplay_config *cfg, evaluator ev, char *err,
                       size_t errlen);
/* Frees the run and sets *sp to NULL; NULL-safe. Unfinished games are dropped. */
void selfplay_destroy(selfplay **sp);

/* Plays until every tree has searched its move or the game ended: moves,
 * finished games (fn), new games, and one batched search step. Sets
 * *remaining (if not NULL) to the games still in progress or yet to start
 * (0 when the run is complete). Returns 0, or an error: the evaluator's,
 * KZ_ENOMEM, an errno from getrandom, or fn's nonzero return. */
int selfplay_step(selfplay *sp, selfplay_game_fn fn, void *ctx, int *remaining);
/* Steps until the run is complete; 0 or the first error of selfplay_step. */
int selfplay_run(selfplay *sp, selfplay_game_fn fn, void *ctx);
/* Starts no more games: the run completes when the games in progress end. */
void selfplay_stop_new(selfplay *sp);
/* The counters so far. */
void selfplay_get_stats(const selfplay *sp, selfplay_stats *out);

/* The simulation schedule (the coordinator's sims_start, docs/learning.md):
 * the simulations of a self-play job after `games` stored games, start +
 * (end - start) * min(1, games / ramp_games), rounded to the nearest; `end`
 * itself when start <= 0 or end <= 0 (no schedule). ramp_games >= 1. */
uint32_t selfplay_sims_schedule(long start, long end, long ramp_games, uint64_t games);

#endif
