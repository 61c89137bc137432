/* driver: the one game driver. G games in play at once over batched searches
 * (mcts.h), self-play, arena and rating games, one game_record (record.h) per
 * finished game handed to a callback. kz-worker drives it with the games its
 * jobs name; selfplay.h's runs (kz selfplay, the benchmarks, the tests) drive
 * it with N self-play games of one model.
 *
 * Why a module of its own and not selfplay.c grown: self-play of one model
 * is the driver's simplest use, and selfplay.h keeps what every program shares
 * about it (selfplay_config and its settings rows) and the runs of N games,
 * as a thin source of games over this (selfplay.c). The driver is what they
 * had in two copies: slots, searches per network, the moves, the records.
 *
 * Searches. A search is one mcts_batch of G trees for one (network, kind,
 * simulations): self-play searches carry root noise, arena and rating ones
 * none. Game slot i uses tree i of each search it plays with: one search for
 * a self-play game, one per colour for an arena game (each colour its own
 * network). At most DRIVER_MAX_SEARCHES exist at once; an idle one is freed
 * at the end of a step unless its network is pinned (driver_net.pinned),
 * and to make room. driver_step steps every search with searching trees
 * (one network batch each), then settles every slot: plays the moves whose
 * search is complete, records them, finishes games.
 *
 * Arena games and tree reuse. Each colour's tree follows the game lazily: it
 * is advanced only when its player is to move, through the actions played
 * since its root (its own last action, then the opponent's), so that the
 * subtree it searched is reused and a dormant tree costs no search. Inside a
 * capture sequence the mover's tree is advanced at once. An arena game plays
 * without root noise, forced playouts or pruning; its first
 * arena_temperature_plies turns sample moves by visits (and draw Gumbel
 * noise in gumbel mode) for varied games.
 *
 * Rating games (RECORD_EVAL) may have a side played by a baseline player
 * (player.h: random, greedy, alphabeta:D, uct:N), made for the game and
 * freed with it: it answers at once, on this thread, when it is to move,
 * and its move is recorded with the chosen action as the whole distribution
 * and a root value of 0. The network side searches as in an arena.
 *
 * Moves (as selfplay.h describes): while the turn count is below the
 * search's temperature_plies the move is drawn by visits, else the most
 * visited is played (mcts_result_choose); a state with one legal action is
 * played at once (forced); every state is recorded, mid-sequence ones too,
 * with the search's policy target.
 *
 * Playout cap randomization (self-play, play.pcr_full_fraction < 1). Before
 * each move's search begins (the tree's reset or advance) a draw from the
 * game's generator decides: a full search (the game's simulations, root
 * noise, sampled opening moves) with probability pcr_full_fraction, else a
 * fast one (pcr_fast_simulations, no noise, the most visited played),
 * recorded with fast_search (no policy target). At 1 nothing is drawn.
 *
 * Endgame tables (play.oracle, self-play games only): with tb_search the
 * self-play searches value the leaves the tables cover exactly; with
 * tb_adjudicate a self-play game that reaches them is played to its end by
 * their perfect play, each such move recorded with the exact value and no
 * policy target (selfplay.h); the trees are not followed any more.
 *
 * Seeds. A game's seed (driver_game.seed, recorded) seeds its move sampling
 * and PCR draws; a baseline side p's generator gets mix64(seed ^ (p + 11)).
 * Trees: an arena or rating side p's tree is seeded mix64(seed ^ (p + 1))
 * and set up at that side's first turn. A self-play game's one tree: with
 * tree_per_side false (selfplay.h's runs), seeded with the game's seed and
 * set up at the first turn; with tree_per_side true (kz-worker) it is set up
 * afresh at each side's first turn, seeded like an arena side's tree: that is
 * how the worker's games always were, kept so that a seed gives the worker
 * the games it gave before (it costs the tree's reuse once per game, at the
 * second side's first turn). The search is deterministic, so the same
 * settings, seeds, starts and evaluator outputs give the same games.
 *
 * Re-searches (recheck.h). A record carries what a re-search of the game
 * needs: every search setting, the PCR share, the tables' use and, from
 * driver_net.arith, the networks' arithmetic (settings.evaluator). recheck.c
 * replays one slot's calls to the search (the order of resets, advances,
 * lags, PCR draws and move choices below) and recheck_play plays its games
 * through the driver: a change in that order must be made in recheck.c too
 * (tests/system/test_forge.c fails otherwise). The arithmetic is recorded only for
 * games recheck can replay: arena games, and self-play games with
 * tree_per_side (a selfplay.h run's one tree is seeded otherwise).
 *
 * Stopping. driver_stop: no game starts any more, and each game in play
 * finishes its move in hand and then ends (handed over if the move ended
 * it, else abandoned). A source that stops giving games (selfplay.h's
 * stop_new) lets the games in play finish instead.
 *
 * Threads: one thread at a time per driver. */
#ifndef KZ_DRIVER_H
#define KZ_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "search/mcts.h"
#include "search/player.h"
#include "data/record.h"
#include "common/config.h"

#define DRIVER_MAX_SEARCHES 8 /* searches (mcts_batch of G trees) alive at once */

/* A network as the driver sees it. The owner makes it and frees it once no
 * holder is left; the driver holds it while a search of it exists. */
typedef struct driver_net {
    evaluator ev; /* its evaluator (ctx borrowed: valid while refs > 0) */
    int refs;     /* holders: the driver adds one per search it keeps of this network and
                     removes it when it frees that search; the owner may add its own */
    bool pinned;  /* the owner keeps it in use (e.g. the self-play model): an idle search
                     of it is kept too (its trees' memory and evaluation cache) */
    const char *arith; /* its arithmetic (model_eval_path: "avx512-fp32", ...), recorded as
                          settings.evaluator for a re-search of the game (recheck.h); NULL:
                          not recorded (the game cannot be checked) */
} driver_net;

/* Self-play's settings, the driver's play settings: every game the driver
 * plays is configured by them (self-play games by all of them; arena and
 * rating games by the search's and the slots', G). selfplay.h, the source of
 * N self-play games, and kz-worker set them the same way. */
typedef struct selfplay_config {
    mcts_settings search;       /* search settings, recorded in every game */
    int games;                  /* games to play, >= 1 */
    int parallel;               /* games in progress at once (trees in one batch), >= 1 */
    uint64_t seed;              /* game k plays with seed + k */
    uint32_t model_version;     /* recorded in every game */
    const char *worker_id;      /* recorded (copied at creation); NULL for "" */
    const char *start_position; /* R20 start of every game (copied); NULL for the initial one */
    double pcr_full_fraction;   /* playout cap randomization: share of full searches in
                                   [0, 1]; 1 = off (every move a full search) */
    int pcr_fast_simulations;   /* simulations of the other moves' fast searches (>= 1 with
                                   PCR on; capped at search.simulations) */
    const game_oracle *oracle;  /* the game's endgame tables (game.h; tablebase.h's
                                   tb_oracle), borrowed with its ctx, outliving the run;
                                   NULL: none; used as the two settings below say */
    bool tb_search;             /* the search values the leaves the tables cover exactly
                                   (mcts_batch_set_oracle) */
    bool tb_adjudicate;         /* a game that reaches a state the tables cover is played
                                   to its end by them (see above) */
} selfplay_config;

/* mcts_settings_default(), 1 game, seed 0, model 0, no worker id, the
 * initial position, no oracle, and selfplay_options' text defaults: 32 at
 * once, playout cap randomization off (1) with 40 simulations for its fast
 * searches, no endgame tables. */
selfplay_config selfplay_config_default(void);

/* Self-play's settings rows (config.h) over a selfplay_config: parallel,
 * pcr_full_fraction, pcr_fast_simulations, tb_search, tb_adjudicate (the
 * tables themselves come from each program's tb_dir); with mcts_options over its
 * search, what kz-worker and kz selfplay share (both play through the
 * driver, driver.h). Their text defaults are the one place self-play's
 * defaults are written (selfplay_config_default() reads them). */
extern const config_option selfplay_options[];
extern const size_t selfplay_options_n; /* rows in selfplay_options */

/* The part of search settings s that a game record keeps. */
record_settings selfplay_record_settings(const mcts_settings *s);

/* The driver's settings. */
typedef struct driver_config {
    selfplay_config play;        /* parallel (G slots), PCR, tablebase with tb_search and
                                    tb_adjudicate, worker_id, and the search (its simulations
                                    replaced by each game's); games, seed, model_version and
                                    start_position are selfplay.h's, unused here */
    int arena_temperature_plies; /* arena and rating games: moves sampled by visits while
                                    the turn count is below this */
    bool tree_per_side;          /* self-play: the tree set up at each side's first turn
                                    (kz-worker's games; see Seeds above) */
    bool forge_shares;           /* tests of the coordinator's forgery check only (kz-worker
                                    forge = visits): the first two recorded visit shares of
                                    every searched state swapped */
} driver_config;

/* selfplay_config_default(), arena_temperature_plies 4, tree_per_side and
 * forge_shares false. */
driver_config driver_config_default(void);

/* What one new game is. Strings are copied by driver_start. */
typedef struct driver_game {
    int kind;                  /* RECORD_SELFPLAY, RECORD_ARENA or RECORD_EVAL */
    driver_net *net[2];        /* network of player 0 (Black) and 1; self-play: equal;
                                  NULL for a side played by a baseline player */
    const char *baseline[2];   /* eval: player p's baseline spec (player.h) when net[p] is
                                  NULL */
    uint32_t model_version;    /* self-play: the model; arena: the candidate; eval: side A's */
    uint32_t opponent_version; /* arena: the best; eval: side B's */
    int candidate_player;      /* arena: 0 if the candidate moves first; eval: side A */
    uint32_t arena_slot;       /* arena, eval: the coordinator's slot (handed back) */
    int simulations;           /* per move */
    const char *start_position; /* the opening (R20), NULL or "" = the initial position */
    uint64_t seed;             /* the game's seed (see Seeds above), recorded */
} driver_game;

/* Counters since driver_new. */
typedef struct driver_stats {
    uint64_t started;         /* games begun */
    uint64_t finished;        /* games finished and handed over */
    uint64_t finished_arena;  /* of which arena games */
    uint64_t abandoned;       /* unfinished games dropped (a stop, a failed baseline player) */
    uint64_t failed;          /* of which: a baseline player's move failed (its gnubg died) */
    uint64_t positions;       /* states recorded in finished games */
    uint64_t plies;           /* turns of finished games */
    uint64_t forced;          /* forced states of finished games */
    uint64_t wins[2];         /* finished games won by player 0 / 1 */
    uint64_t draws;           /* finished games drawn */
    uint64_t reasons[GAME_MAX_REASONS]; /* finished games by end reason */
    uint64_t tb_games;        /* self-play games the tables played to their end */
    uint64_t tb_moves;        /* moves they played */
    double seconds;           /* wall time inside driver_step */
    mcts_stats search;        /* every search's counters added (max_batch_seen: the largest) */
} driver_stats;

typedef struct driver driver;

/* A finished game: r is borrowed for the call; arena_slot is its game's.
 * Nonzero stops driver_step, which returns it. */
typedef int (*driver_done_fn)(void *ctx, const game_record *r, uint32_t arena_slot);
/* A source of games (driver_set_source): fills *spec and returns 1, or
 * returns 0 when it has none now, or a negative error that stops
 * driver_step. Strings in *spec need to live only until it returns. */
typedef int (*driver_next_fn)(void *ctx, driver_game *spec);

/* Checks the search settings of cfg as self-play and arena games would use
 * them (mcts_settings_check, at 200 simulations; each game's own count is
 * checked when it starts) and parallel >= 1: 0, or KZ_EINVAL with a
 * one-line reason in err. */
int driver_check_settings(const driver_config *cfg, char *err, size_t errlen);
/* G = cfg->play.parallel slots for game g. cfg is copied (worker_id too;
 * tablebase is borrowed and must outlive the driver). NULL with a reason in
 * err on bad settings (driver_check_settings) or no memory. Caller owns the
 * result: driver_destroy. */
driver *driver_new(const game_def *g, const driver_config *cfg, char *err, size_t errlen);
/* Frees everything (unfinished games are dropped, networks released: each
 * driver_net's refs back to what the owner holds) and sets *d to NULL.
 * NULL-safe. */
void driver_destroy(driver **d);
/* Games to start as slots come free: at each settle of a free slot
 * driver_step asks fn for a game and starts it there at once (in slot
 * order), so a finished game's slot searches again in the same step. NULL:
 * games start only by driver_start. */
void driver_set_source(driver *d, driver_next_fn fn, void *ctx);
/* Starts a game in the first free slot (driver_free > 0). Takes a hold on
 * its networks (a search each) for the game's life. 0, or KZ_EINVAL (bad
 * settings, an unknown baseline, an unusable start position), KZ_EFULL
 * (every one of the DRIVER_MAX_SEARCHES searches is held by games in play
 * and this game needs another: not an error of the run; start it again once
 * a game has finished), KZ_ENOMEM (no memory) or an errno from getrandom
 * (the game id), with a one-line reason in err. */
int driver_start(driver *d, const driver_game *spec, char *err, size_t errlen);
/* Settles every slot (new games may wait for their first move), one batched
 * search step over every search with searching trees, settles again: plays
 * every move whose search is complete, hands finished games to fn (NULL:
 * dropped), starts the source's games. A baseline player whose move fails
 * (KZ_EIO: e.g. its gnubg died mid-game) has its game given up, logged and
 * counted (driver_stats.failed, .abandoned), and the other games go on.
 * 0, or an evaluator error, KZ_ENOMEM, a start's error (source games), the source's
 * or fn's nonzero return. */
int driver_step(driver *d, driver_done_fn fn, void *ctx);
/* Stop mode (see above). */
void driver_stop(driver *d);
/* The tick every baseline player of the games started from now on gets
 * (player_set_tick): a worker services its connection (heartbeats) during a
 * long baseline move, and may stop it; a move given up that way abandons its
 * game (driver_stats.abandoned), as a stop does. NULL: none (the default). */
void driver_set_tick(driver *d, player_tick_fn fn, void *ctx);
int driver_free(const driver *d);    /* slots free for driver_start (0 in stop mode) */
int driver_in_play(const driver *d); /* slots with a game */
/* Arena games in play of `candidate` (0: any): their slots into out (up to
 * max), returns the count. */
size_t driver_arena_slots(const driver *d, uint32_t candidate, uint32_t *out, size_t max);
/* The candidate of the arena games in play (the newest), 0 none. */
uint32_t driver_arena_candidate(const driver *d);
void driver_get_stats(const driver *d, driver_stats *out);

#endif
