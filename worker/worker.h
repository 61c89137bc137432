/* worker: kz-worker's settings and the pieces its files export to each other
 * (worker/ only). See docs/worker.md for the program's behaviour.
 *
 *   main.c     settings table, signals, the loop: jobs, models, the games
 *              they name started on the game driver (play/driver.h: G slots
 *              over batched searches, self-play, arena and rating games), the
 *              client (acks, heartbeats, announcements), draining at exit
 *   netcache.c models by version: fetched (checksum-checked), cached on disk
 *              and in memory, each with its evaluator (model_eval) as a
 *              driver_net
 *
 * Threads: everything runs on the main thread. */
#ifndef KZ_WORKER_WORKER_H
#define KZ_WORKER_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/client.h"
#include "common/config.h"
#include "play/driver.h"
#include "games/game.h"
#include "nn/model.h"
#include "play/selfplay.h"

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
                                             search (arena: the driver adjusts; search.simulations
                                             unused: the row above); games, seed, ids unused */
    client_config client;                 /* coordinator connection (role, game, slots
                                             set in main.c) */
} worker_config;

/* ---- netcache.c ------------------------------------------------------------ */

/* A model in memory: its evaluator and who uses it. */
typedef struct wnet {
    uint32_t version;    /* registry version */
    uint64_t checksum;   /* wire_blob_checksum of its blob */
    struct evaluator_net *net; /* the model's evaluator, network or trees (owned) */
    driver_net dn;       /* evaluator over net for the driver; dn.refs: its searches and the
                            arena queue's holds; dn.pinned: the self-play model, kept while
                            unused */
    char arch[200];      /* modelkind_info's describe: the architecture or the forests */
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
 * and frees it once it is neither referenced (dn.refs) nor pinned; callers
 * that keep it bump dn.refs or set dn.pinned. Errors: KZ_ETIMEOUT/KZ_EVERSION/
 * KZ_ENOTFOUND from the client, KZ_ECORRUPT (checksum, or a blob that is not
 * a usable model of this game: remembered, not fetched again), KZ_EFULL (too
 * many models in use), with a one-line reason in err. */
int netcache_get(netcache *nc, client *c, uint32_t version, uint64_t checksum, wnet **out,
                 char *err, size_t errlen);
/* Frees the nets that are neither referenced nor pinned. */
void netcache_collect(netcache *nc);
/* Nets in memory. */
int netcache_count(const netcache *nc);

#endif
