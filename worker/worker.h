/* worker: kz-worker's settings and the pieces its files export to each other
 * (worker/ only). See docs/worker.md for the program's behaviour.
 *
 *   main.c     settings table, signals, the loop: jobs, models, games, the
 *              client (acks, heartbeats, announcements), draining at exit
 *   netcache.c models by version: fetched (checksum-checked), cached on disk
 *              and in memory, each with its evaluator (model_eval)
 *   games.c    the games in play: G slots over batched searches (mcts.h),
 *              self-play and arena (a different network per colour), one
 *              game_record per finished game
 *
 * Why games.c and not common/selfplay.h: self-play plays one model against
 * itself; an arena game needs each colour searched with its own network, and
 * a worker mixes both kinds and several model versions in one process. The
 * engine here drives mcts.h directly: one mcts_batch per (model, kind,
 * simulations), a slot's trees at the same index in each batch it uses.
 *
 * Rating games (RECORD_EVAL) may have a side played by a baseline player
 * (player.h: random, greedy, alphabeta:D, uct:N): it answers at once, on
 * this thread, when it is to move; the network side searches as in an arena.
 *
 * Threads: everything runs on the main thread. */
#ifndef KZ_WORKER_WORKER_H
#define KZ_WORKER_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "config.h"
#include "evaluator.h"
#include "game.h"
#include "mcts.h"
#include "model.h"
#include "player.h"
#include "record.h"
#include "selfplay.h"
#include "tablebase.h"

/* Settings (the table in main.c; docs/worker.md): the worker's own,
 * self-play's and the search's (selfplay_options, mcts_options) and the
 * connection's (client_options). */
typedef struct worker_config {
    char game[CONFIG_STR_MAX];            /* game module */
    long simulations;                     /* 0 = the job's, else an override */
    long arena_temperature_plies;         /* arena: sampled turns */
    long threads;                         /* OpenBLAS threads */
    char precision[CONFIG_STR_MAX];       /* the network's arithmetic: fp32 | bf16 */
    char model_cache_dir[CONFIG_STR_MAX]; /* disk cache, "" none */
    long model_cache_keep;                /* model files kept */
    double drain_s;                       /* wait for acks at exit */
    long max_games;                       /* stop after this many games, 0 never */
    long seed;                            /* 0 = from the clock */
    double log_s;                         /* progress line period */
    char tb_dir[CONFIG_STR_MAX];          /* endgame tables, "" none (play.tb_search,
                                             play.tb_adjudicate use them) */
    char forge[CONFIG_STR_MAX];           /* tests of the coordinator's forgery check only:
                                             none | model | visits (main.c's table) */
    selfplay_config play;                 /* parallel, PCR, the tables' use, and the self-play
                                             search (arena: games.c adjusts; search.simulations
                                             unused: the row above); games, seed, ids unused */
    client_config client;                 /* coordinator connection (role, game, slots
                                             set in main.c) */
} worker_config;

/* ---- netcache.c ------------------------------------------------------------ */

/* A model in memory: its evaluator and who uses it. */
typedef struct wnet {
    uint32_t version;    /* registry version */
    uint64_t checksum;   /* wire_blob_checksum of its blob */
    model_eval *eval;    /* inference workspace (owned) */
    evaluator ev;        /* evaluator over eval, for mcts.h */
    char arch[96];       /* model_arch_describe */
    int refs;            /* engines (games.c) using it */
    bool pinned;         /* the self-play model: kept while unused */
} wnet;

typedef struct netcache netcache;

/* A cache for game g: models kept on disk in dir ("" or NULL: none; created
 * if absent), at most `keep` files there; evaluators for batches of up to
 * max_batch positions. NULL on bad arguments or no memory. */
netcache *netcache_new(const game_def *g, const char *dir, int keep, int max_batch);
/* Tests of the coordinator's forgery check (setting forge = model): every
 * net loaded from now on computes with a random network of its model's shape
 * instead of its weights. */
void netcache_forge_model(netcache *nc);
/* Frees every net (none may be in use) and sets *nc to NULL. NULL-safe. */
void netcache_destroy(netcache **nc);
/* The net of `version` whose blob has `checksum` (0: any, e.g. a version
 * heard of in a heartbeat): from memory, else from the disk cache (checksum
 * known), else fetched from the coordinator through c (blocking, Lazy
 * Pirate), written to the disk cache. *out is borrowed: the cache owns it,
 * and frees it once it is neither referenced (refs) nor pinned; callers
 * that keep it bump refs or set pinned. Errors: KZ_ETIMEOUT/KZ_EVERSION/
 * KZ_ENOTFOUND from the client, KZ_ECORRUPT (checksum, or a blob that is not
 * a usable model of this game: remembered, not fetched again), KZ_EFULL (too
 * many models in use), with a one-line reason in err. */
int netcache_get(netcache *nc, client *c, uint32_t version, uint64_t checksum, wnet **out,
                 char *err, size_t errlen);
/* Frees the nets that are neither referenced nor pinned. */
void netcache_collect(netcache *nc);
/* Nets in memory. */
int netcache_count(const netcache *nc);

/* ---- games.c --------------------------------------------------------------- */

/* What one new game is. */
typedef struct game_spec {
    int kind;                 /* RECORD_SELFPLAY, RECORD_ARENA or RECORD_EVAL */
    wnet *net[2];             /* network of player 0 (Black) and 1; self-play: equal;
                                 NULL for a side played by a baseline player */
    const char *baseline[2];  /* eval: player id p's baseline spec (player.h) when net[p]
                                 is NULL */
    uint32_t model_version;   /* self-play: the model; arena: the candidate; eval: side A's */
    uint32_t opponent_version;/* arena: the best; eval: side B's */
    int candidate_player;     /* arena: 0 if the candidate moves first; eval: side A */
    uint32_t arena_slot;      /* arena, eval: the coordinator's slot */
    int simulations;          /* per move */
    const char *start_position; /* the opening (R20), NULL or "" = the initial position */
} game_spec;

/* Counters since games_new. */
typedef struct games_stats {
    uint64_t started;         /* games begun */
    uint64_t finished;        /* games finished and handed over */
    uint64_t finished_arena;  /* of which arena games */
    uint64_t abandoned;       /* unfinished games dropped at a stop */
    uint64_t positions;       /* states recorded in finished games */
    uint64_t simulations;     /* search simulations */
    uint64_t evaluated;       /* positions sent to the networks */
    uint64_t eval_calls;      /* network batches */
    double eval_seconds;      /* time inside the networks */
    uint64_t tb_games;        /* self-play games the tables played to their end */
    uint64_t tb_moves;        /* moves they played */
} games_stats;

typedef struct games games;

/* A finished game: r is borrowed for the call. Nonzero stops games_step. */
typedef int (*games_done_fn)(void *ctx, const game_record *r, uint32_t arena_slot);

/* Checks the search settings of cfg as self-play and arena games would use
 * them (mcts_settings_check): 0, or KZ_EINVAL with a one-line reason in err. */
int games_check_settings(const worker_config *cfg, char *err, size_t errlen);
/* G = cfg->parallel slots for game g. worker_id is recorded in every game.
 * NULL with a reason in err on bad search settings or no memory. */
games *games_new(const game_def *g, const worker_config *cfg, const char *worker_id,
                 uint64_t seed, char *err, size_t errlen);
/* Frees everything (unfinished games are dropped; nets released). NULL-safe. */
void games_destroy(games **gm);
/* Endgame tables (tablebase.h; borrowed, outliving gm) for the self-play
 * games, as cfg's play.tb_search and play.tb_adjudicate say (selfplay.h describes
 * both: leaves valued exactly; a game that reaches the tables played to its
 * end by their perfect play, its moves recorded without a policy target).
 * Arena and rating games never use them. Call before the first game. */
void games_set_tablebase(games *gm, const tb_set *t);
/* Starts a game in a free slot (games_free > 0). Takes a reference on the
 * nets for the game's life. 0, or KZ_ENOMEM / KZ_EINVAL (bad settings) with
 * a reason in err. */
int games_start(games *gm, const game_spec *spec, char *err, size_t errlen);
/* One batched search step over every network with searching trees, then
 * plays every move whose search is complete, hands finished games to fn.
 * 0, or an evaluator error / fn's nonzero return. */
int games_step(games *gm, games_done_fn fn, void *ctx);
/* Stop mode: no game is started any more; each game in play finishes its
 * move in hand and then ends (submitted if the move ended it, else
 * abandoned). */
void games_stop(games *gm);
int games_free(const games *gm);     /* slots without a game */
int games_in_play(const games *gm);  /* slots with a game */
/* Arena games in play of `candidate` (0: any): their slots into out (up to
 * max), returns the count. */
size_t games_arena_slots(const games *gm, uint32_t candidate, uint32_t *out, size_t max);
/* The candidate of the arena games in play (the newest), 0 none. */
uint32_t games_arena_candidate(const games *gm);
void games_get_stats(const games *gm, games_stats *out);

#endif
