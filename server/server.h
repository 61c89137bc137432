/* server: kz-coordinator's shared types (server/ only): the settings, the
 * clients, the tallies, ratings, arena, timeline and model cache, and `coord`,
 * the state every part works on. Types only: what each floor exports is
 * declared floor by floor, the lower ones never naming the upper ones
 * (docs/architecture.md, "Layers"):
 *
 *   services.h    below all the others: the worker table, the model cache,
 *                 announcements of the best, the opening book, meta u32s
 *   features.h    the parts: arena, ratings, timeline, models, auth,
 *                 status, games, dashboard, endgame, yardstick, forge
 *   coordinator.h the actor that runs them (main.c only)
 *
 * Threads: everything here runs on the main thread except the HTTP handler,
 * which only copies the snapshot strings under `snap_lock` (and asks the
 * main thread for model files through status_serve: the store is the main
 * thread's alone). */
#ifndef KZ_SERVER_SERVER_H
#define KZ_SERVER_SERVER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "net/curve.h"
#include "games/game.h"
#include "play/match.h"
#include "data/store.h"
#include "data/validate.h"
#include "net/wire.h"

/* Settings (see the table in main.c). */
typedef struct coord_config {
    char data_dir[CONFIG_STR_MAX];      /* LMDB environment directory */
    char bind[CONFIG_STR_MAX];          /* ROUTER endpoint */
    char pub_bind[CONFIG_STR_MAX];      /* PUB endpoint */
    char http_bind[CONFIG_STR_MAX];     /* status address */
    long http_port;                     /* status port, 0 = off */
    char game[CONFIG_STR_MAX];          /* game module */
    char initial_model[CONFIG_STR_MAX]; /* model file for version 1, "" = random init */
    long heartbeat_ms;                  /* heartbeat period asked of clients */
    long expiry_ms;                     /* silence after which a worker is gone */
    long max_msg_bytes;                 /* ZMQ_MAXMSGSIZE */
    long max_record_bytes;              /* largest GameRecord */
    long max_record_moves;              /* most moves in a record */
    long window;                        /* positions in the sampling window */
    long prune_per_txn;                 /* positions pruned per transaction */
    long map_mb;                        /* initial LMDB map */
    bool sync;                          /* fsync every commit */
    long ingest_batch;                  /* most games per transaction */
    long max_batch;                     /* most samples per BatchReply */
    bool aux_targets;                   /* store positions' auxiliary targets */
    long selfplay_games;                /* most games per self-play job */
    double selfplay_openings;           /* share of self-play games from a book opening */
    long simulations;                   /* per move, sent in jobs (0 = worker's) */
    long sims_start;                    /* self-play schedule: simulations at game 0 (0 = off) */
    long sims_ramp_games;               /* ... reaching `simulations` after this many games */
    long arena_games;                   /* gate: games per arena */
    double arena_threshold;             /* gate: score to promote */
    bool arena_sprt;                    /* gate: SPRT instead of fixed games */
    double arena_elo0;                  /* gate: SPRT H0 */
    double arena_elo1;                  /* gate: SPRT H1 */
    double arena_alpha;                 /* gate: SPRT alpha */
    double arena_beta;                  /* gate: SPRT beta */
    long arena_per_worker;              /* most arena games per job */
    long initial_blocks;                /* random-init model: residual blocks */
    long initial_filters;               /* random-init model: filters */
    long wait_ms;                       /* retry_ms of a wait job */
    long status_ms;                     /* snapshot refresh period */
    long log_s;                         /* progress log period */
    long seed;                          /* sampling seed (0 = from the clock) */
    long max_clients;                   /* client ids tracked at most */
    char gate[CONFIG_STR_MAX];          /* gate mode: spec, sprt or none */
    char anchors[CONFIG_STR_MAX];       /* rating anchors, weakest first, comma-separated */
    double eval_share;                  /* most share of slot time for rating games */
    long eval_pairs;                    /* gauntlet: pairs per opponent */
    long calibration_pairs;             /* pairs between neighbouring anchors */
    long eval_simulations;              /* simulations of the networks in rating games */
    double eval_timeout_s;              /* an unplayed rating slot is reassigned after this */
    long book_openings;                 /* openings in the book */
    long book_seed;                     /* the book's seed */
    bool rate_candidates;               /* gauntlets for every new model, not only bests */
    long keep_models_last;              /* retention: the newest K models kept (0: keep all) */
    long keep_models_every;             /* retention: every Nth version kept (0: none) */
    long disk_warn_mb;                  /* warn when the data disk has less free than this */
    double timeline_s;                  /* timeline: seconds per point */
    long timeline_points;               /* timeline: points kept at most */
    bool curve;                         /* CurveZMQ on both endpoints (false: no authentication) */
    char curve_secret_key[CONFIG_STR_MAX]; /* the coordinator's secret key file */
    char allow_keys[CONFIG_STR_MAX];    /* the client keys admitted, with their roles */
    char status_token_file[CONFIG_STR_MAX]; /* HTTP: bearer token file, "" = no token */
    long http_connections;              /* HTTP: connections at most */
    long http_per_ip;                   /* HTTP: connections from one address at most */
    long http_timeout_s;                /* HTTP: an idle connection is closed after this */
    char tb_dir[CONFIG_STR_MAX];        /* endgame tables for the best's accuracy, "" = none */
    long tb_positions;                  /* their test positions */
    long perfect_positions;             /* yardstick: perfect-play accuracy positions, 0 = off */
    char perfect_file[CONFIG_STR_MAX];  /* yardstick: their file, "" = the book's openings */
    long perfect_nodes;                 /* yardstick: the referee's budget a position */
    long perfect_tt_mb;                 /* yardstick: the referee's transposition table */
    char value_positions[CONFIG_STR_MAX]; /* yardstick: labelled positions, "" = off */
    long value_compare;                 /* yardstick: of them, 200 against 1600 simulations */
    double yardstick_minutes;           /* yardstick: a new best measured at most this often */
    char judge[CONFIG_STR_MAX];         /* gnubg level judging the bests' moves, "" = none */
    long judge_games;                   /* rating games judged per best at most */
    long play_saves_per_hour;           /* /api/save: games saved an hour at most */
    double play_records_max_mb;         /* /api/save: play.kzr's largest size */
    bool check_store;                   /* check the store's pages before opening it */
    long forge_check_states;            /* re-search 1 in this many searched states, 0 = off */
    long forge_queue;                   /* games held for their check at most */
    long forge_arena_threshold;         /* forged games after which a client gets no arena or
                                           rating slots, 0 = never */
    bool forge_refuse_unchecked;        /* a sampled game that cannot be checked is refused */
    char forge_readmit[CONFIG_STR_MAX]; /* proven forgers re-admitted by the operator */
} coord_config;

/* CurveZMQ authentication (auth.c). */
#define AUTH_TOLD 256 /* unknown keys whose refusal was logged, at most (then every 1000th) */
typedef struct auth {
    bool on;                    /* cfg.curve */
    curve_keypair kp;           /* the coordinator's own keys */
    curve_allow *allow;         /* admitted client keys and roles (reloaded on SIGHUP) */
    uint32_t *told;             /* (allow->n) per entry: request kinds whose refusal was logged */
    void *zap;                  /* the ZAP handler: REP on inproc://zeromq.zap.01 */
    void *mon[2];               /* handshake events of the ROUTER and the PUB (PAIRs), or NULL */
    uint8_t (*told_keys)[CURVE_KEY_BYTES]; /* (AUTH_TOLD) unknown keys already logged */
    size_t n_told_keys;         /* used */
    uint64_t refused_keys;      /* handshakes refused: a key not in the allow-list */
    uint64_t refused_requests;  /* requests outside their key's role (or of a removed key) */
    uint64_t refused_by_role[CURVE_ROLES]; /* the same by the key's role */
    uint64_t handshake_failures;/* handshakes that failed before the allow-list (no CurveZMQ,
                                   a wrong server key) */
    uint64_t reloads;           /* allow-list reloads (SIGHUP) that took effect */
    uint64_t reload_errors;     /* reloads refused (the previous list stays) */
    int64_t loaded_ms;          /* wall clock of the last load */
} auth;

/* One client (worker, trainer or tool), by its stable id. */
typedef struct worker {
    char id[64];                /* client id */
    char role[16];              /* from Hello */
    char host[64];              /* from Hello */
    char software[48];          /* from Hello: its version */
    uint32_t pid;               /* from Hello */
    uint32_t slots;             /* from Hello */
    bool alive;                 /* heard from within expiry_ms */
    double first_seen;          /* time_now() */
    double last_seen;           /* time_now() of the last message */
    int64_t last_seen_ms;       /* wall clock of the last message */
    uint64_t games;             /* games stored from it */
    uint64_t duplicates;        /* resubmissions */
    uint64_t rejected;          /* refused */
    uint64_t rejected_by[VALIDATE_REASON_COUNT]; /* refused, by reason */
    uint64_t games_at_tick;     /* games at the last rate update */
    double rate;                /* games per second (smoothed) */
    uint32_t in_flight;         /* from heartbeats */
    uint64_t done;              /* from heartbeats */
    uint32_t pending;           /* from heartbeats */
    uint32_t arena_slots;       /* arena slots assigned to it now */
    uint32_t model_version;     /* from heartbeats: the network it plays with now, 0 unknown */
    float sims_per_s;           /* from heartbeats: its search speed */
    uint64_t checked;           /* games whose sampled states were searched again and matched
                                   (forged ones: rejected_by[VALIDATE_FORGED]) */
    uint64_t unchecked;         /* sampled games that could not be checked (forge.c) */
} worker;

/* Arena slot states. */
enum { SLOT_OPEN = 0, SLOT_WIN = 1, SLOT_DRAW = 2, SLOT_LOSS = 3 };

#define COORD_NAME 32         /* a rated player's name: "v12" or an anchor's spec */
#define COORD_MAX_ANCHORS 16  /* anchors at most */
#define COORD_POSITION 64     /* longest opening string, with its NUL */
#define COORD_BARRED 64       /* proven forgers kept (meta "barred") at most */
#define COORD_RECENT 65536    /* stored games remembered with their positions and client */
#define COORD_DAMAGED 8       /* damaged models listed in /status at most */
#define COORD_EMPTY_STORE_BYTES (256u << 10) /* pages in use of an empty store at most (a new
                                                one has a few); more: its tree was lost */

/* Everything two rated players did against each other (first by name). */
typedef struct tally {
    char a[COORD_NAME];       /* first player (strcmp order) */
    char b[COORD_NAME];       /* second player */
    uint32_t w, d, l;         /* games, from a's view */
    uint32_t penta[5];        /* finished pairs, from a's view (match.h) */
    uint32_t pa, pb;          /* points won by a and by b: a win scores its points (1, or
                                 backgammon's 2 and 3), so pa == w, pb == l in a game
                                 without points; the fit of such a game is one of points */
} tally;

/* A fitted rating. */
typedef struct rated_player {
    char name[COORD_NAME];    /* "v12" or an anchor spec */
    bool anchor;              /* a baseline player */
    bool fixed;               /* an anchor held at its rating on the game's scale (scale.h) */
    bool rated;               /* connected to the zero by games: elo is meaningful */
    double elo, lo, hi;       /* rating and its 95% interval (random = 0) */
    uint64_t games;           /* games counted */
} rated_player;

/* The rating of a best when its gauntlet ended (meta "rating_history"). */
typedef struct rating_point {
    int64_t time_ms;          /* wall clock */
    uint32_t version;         /* the best */
    double elo, lo, hi;       /* its rating then */
    uint32_t games;           /* its games then */
} rating_point;

/* The evaluation match in progress. */
typedef struct evalmatch {
    char a[COORD_NAME], b[COORD_NAME]; /* side A and side B */
    uint32_t va, vb;          /* their model versions, 0 for an anchor */
    uint32_t games;           /* slots (2 per pair), 0 = no match */
    uint32_t book_off;        /* opening of pair 0 */
    uint32_t done;            /* slots played */
    uint8_t *result;          /* (games) SLOT_*, side A's view */
    int32_t *owner;           /* (games) worker index, -1 none */
    double *assigned_at;      /* (games) time_now() of the assignment */
    int kind;                 /* gauntlet or calibration (ratings.c) */
    uint32_t subject;         /* gauntlet: the best it rates */
    double started;           /* time_now() */
} evalmatch;

/* The arena in progress (persisted as meta "arena"). */
typedef struct arena {
    uint32_t candidate;   /* candidate version, 0 = no arena */
    uint32_t best;        /* the best it plays */
    uint64_t cand_sum;    /* candidate blob checksum */
    uint64_t best_sum;    /* best blob checksum */
    uint32_t games;       /* slots */
    uint8_t *result;      /* (games) SLOT_* */
    int32_t *owner;       /* (games) worker index assigned, -1 none */
    double *assigned_at;  /* (games) time_now() of assignment */
    uint32_t wins, draws, losses; /* tally, candidate's view */
    double started;       /* time_now() it started */
} arena;

/* The last arena decided. */
typedef struct arena_last {
    uint32_t candidate;   /* its candidate, 0 none */
    uint32_t best;        /* the best it played */
    bool promoted;        /* decision */
    uint32_t wins, draws, losses; /* tally */
    int64_t decided_ms;   /* wall clock */
} arena_last;

/* One point of the timeline: what happened in (t0_ms, t1_ms], and the
 * figures as they stood at t1_ms (meta "timeline"). */
typedef struct timeline_point {
    int64_t t0_ms, t1_ms;     /* the interval, wall clock */
    uint64_t games;           /* games stored in it (every kind) */
    uint64_t positions;       /* training positions stored in it */
    uint64_t sp_games;        /* self-play games stored in it */
    uint64_t sp_plies;        /* their turns */
    uint64_t sp_results[3];   /* of these: first player won, second won, drawn */
    uint64_t games_total;     /* games in the store at t1 */
    uint64_t positions_total; /* positions ever stored at t1 */
    uint64_t step;            /* the trainer's step last reported by t1 */
    float loss;               /* its last report: total loss */
    float policy_loss;        /* policy loss */
    float value_loss;         /* value loss */
    float l2_loss;            /* l2 term */
    float learning_rate;      /* learning rate */
    float sims_per_s;         /* the live workers' search speed (sum) at t1 */
    uint32_t trainer;         /* 1 when a trainer had reported by t1 */
    uint32_t best;            /* best version at t1 */
    uint32_t workers;         /* live workers at t1 */
} timeline_point;

/* The timeline: points oldest first, at most timeline_points; when full,
 * the two neighbours that cover the shortest span together are merged (the
 * newest 60 never), so the points stay spread over the whole run. */
typedef struct timeline {
    timeline_point *pt;       /* (cap) */
    size_t n, cap;            /* used, allocated (= cfg.timeline_points) */
    int64_t t0_ms;            /* start of the open interval */
    double next;              /* time_now() when it closes */
    uint64_t at[7];           /* counters when it opened (timeline.c) */
    bool dirty;               /* points not yet in meta "timeline" */
    double dirty_at;          /* time_now() it became dirty */
    uint64_t changes;         /* bumped whenever the points change */
} timeline;

/* A cached model blob. */
typedef struct model_cache_entry {
    uint32_t version;     /* 0 = empty */
    uint8_t *blob;        /* (len) owned */
    size_t len;           /* bytes */
    store_model_info info;/* metadata */
    double used;          /* time_now() of last use (LRU) */
} model_cache_entry;

#define MODEL_CACHE 4
#define COORD_SP_DIRTY 16 /* self-play counts written together (models.c) */

/* A game waiting for its group commit. */
typedef struct ingest_item {
    uint8_t route[256];   /* ROUTER identity of the sender */
    size_t route_len;     /* bytes in route */
    uint64_t request_id;  /* to echo */
    int worker;           /* index into workers, -1 unknown */
    wire_msg msg;         /* the decoded submit (owns the record bytes) */
    uint8_t game_id[16];  /* the record's id */
    store_game game;      /* what goes to the store */
    int arena_slot;       /* slot counted by this game, -1 none */
    uint8_t arena_result; /* SLOT_* when counted */
    int eval_slot;        /* rating-match slot counted by this game, -1 none */
    uint8_t eval_result;  /* SLOT_* (side A's view) when counted */
    uint8_t points;       /* what the win scored (validate_result.points; 1 a draw) */
    int kind;             /* enum record_kind of the game */
    int winner;           /* 0, 1, -1 draw */
    uint32_t plies;       /* turns */
    int64_t duration_ms;  /* its play time */
    uint32_t version;     /* the model version that played it (side A's), 0 none */
} ingest_item;

#define STATUS_TOKEN_MAX 256 /* longest HTTP token, the NUL included */

typedef struct coord {
    coord_config cfg;           /* settings */
    gate_config gate;           /* promotion gate (from cfg.arena_*) */
    const game_def *g;          /* the game */
    void *zctx;                 /* ZeroMQ context */
    void *router;               /* requests */
    void *pub;                  /* announcements */
    store *st;                  /* replay store */
    validator *val;             /* record checks */
    rng_t rng;                  /* sampling */
    uint64_t instance;          /* random per start */
    char name[96];              /* host:pid */
    double started;             /* time_now() at start */
    volatile sig_atomic_t *stop;/* set by signals */
    volatile sig_atomic_t *reload; /* set by SIGHUP: reload the allow-list (NULL: never) */
    auth auth;                  /* CurveZMQ (auth.c) */

    worker *workers;            /* (n_workers) */
    size_t n_workers;           /* used */
    size_t cap_workers;         /* allocated */
    int32_t *windex;            /* (windex_cap) open addressing: worker index + 1 */
    size_t windex_cap;          /* power of two */

    uint32_t best;              /* best version */
    uint64_t best_sum;          /* its checksum */
    uint32_t damaged[COORD_DAMAGED]; /* models whose blob fails its checksum (the first ones) */
    uint32_t n_damaged;         /* how many (may exceed COORD_DAMAGED) */
    uint32_t fallback_from;     /* a damaged best replaced by fallback_to, 0 none */
    uint32_t fallback_to;       /* the last good best it fell back to (0: none was good) */
    char model_alarm[256];      /* one line on damaged models for /healthz, "" none (snap_lock) */
    uint32_t queued;            /* candidate waiting for the arena, 0 none */
    arena ar;                   /* arena in progress */
    arena_last last;            /* last decision */
    uint64_t promotions;        /* since start */
    int64_t best_since_ms;      /* wall clock when the best last changed (0 unknown) */
    uint64_t best_since_step;   /* trainer step then */
    uint32_t rejected_in_row;   /* candidates rejected since the last promotion */
    char (*book)[COORD_POSITION]; /* (book_n) openings, R20 strings */
    int book_n;                 /* openings */
    char anchors[COORD_MAX_ANCHORS][COORD_NAME]; /* from cfg.anchors */
    int n_anchors;              /* used */
    tally *tallies;             /* (n_tallies) */
    size_t n_tallies, cap_tallies;
    rated_player *rated;        /* (n_rated) the last fit */
    size_t n_rated;
    uint64_t fits;              /* fits since start */
    rating_point *history;      /* (n_history) */
    size_t n_history;
    evalmatch ev;               /* the rating match in progress */
    int last_kind;              /* kind of the last match planned */
    uint32_t rated_best;        /* the newest best whose gauntlet ended */
    uint32_t gauntlet_v;        /* the model whose gauntlet is in progress (or ended last) */
    char gauntlet_opp[3][COORD_NAME]; /* its opponents, chosen when it began */
    int gauntlet_n;             /* used */
    uint64_t reverts;           /* bests reverted by the guard (gate none) */
    uint64_t slot_ms[3];        /* game time stored, by kind (self-play, arena, eval) */
    uint64_t by_kind[3];        /* games stored, by kind */
    uint64_t results[3][3];     /* by kind: first player won, second won, drawn */
    uint64_t plies[3];          /* by kind: turns */
    uint32_t *sp_games;         /* (sp_cap) self-play games stored per model version since
                                 * the start (the network list's "games"), grown by doubling */
    uint32_t sp_cap;
    uint32_t sp_dirty[COORD_SP_DIRTY]; /* versions whose count is not written yet */
    size_t n_sp_dirty;
    double sp_dirty_at;         /* when the first of them became dirty */
    char sp_name[COORD_SP_DIRTY][24]; /* models_selfplay_meta's names and values */
    uint8_t sp_value[COORD_SP_DIRTY][8];
    model_cache_entry cache[MODEL_CACHE]; /* model blobs */
    timeline tl;                /* the run's history */

    ingest_item *items;         /* (cfg.ingest_batch) pending group commit */
    size_t n_items;             /* used */
    store_game *games;          /* (cfg.ingest_batch) scratch for store_put_games */
    uint8_t *pk;                /* (pos_cap, GAME_PACKED_BYTES) positions of pending games */
    float *pz;                  /* (pos_cap) */
    float *pq;                  /* (pos_cap) */
    uint32_t *poff;             /* (pos_cap + ingest_batch) per-game offsets */
    uint32_t *pact;             /* (ent_cap) */
    float *pprob;               /* (ent_cap) */
    float *pmat;                /* (pos_cap) aux_targets: final material */
    uint32_t *popoff;           /* (pos_cap + ingest_batch) aux_targets: per-game offsets of
                                   the opponent-policy targets */
    uint32_t *popact;           /* (ent_cap) aux_targets: their actions */
    float *popprob;             /* (ent_cap) aux_targets: their shares */
    size_t pos_cap, ent_cap;    /* capacities */
    size_t pos_used, ent_used, off_used; /* used */
    size_t opp_used;            /* entries of popact/popprob used */
    store_batch *batch;         /* sampling buffer (max_batch) */
    wire_buf tx;                /* encode buffer */

    /* Counters since start. */
    uint64_t received;          /* game submissions */
    uint64_t accepted;          /* stored new */
    uint64_t duplicates;        /* acknowledged again */
    uint64_t rejected;          /* refused */
    uint64_t rejected_by[VALIDATE_REASON_COUNT]; /* by reason */
    uint64_t positions;         /* positions stored */
    uint64_t arena_counted;     /* arena games counted in a tally */
    uint64_t store_errors;      /* failed commits */
    uint64_t requests;          /* messages handled */
    uint64_t malformed;         /* undecodable messages */
    uint64_t refused_version;   /* other protocol versions */
    uint64_t clients_forgotten; /* silent clients dropped to make room for new ids */
    uint64_t clients_refused;   /* new ids turned away: max_clients all live */
    uint64_t batches_served;    /* BatchReplies with n > 0 */
    uint64_t damaged_warned;    /* damaged positions met by sampling, as last logged */
    uint64_t samples_served;    /* samples in them */
    double rate_games;          /* stored games per second (smoothed) */
    double rate_pos;            /* positions per second (smoothed) */
    uint64_t accepted_at_tick;  /* for the rates */
    uint64_t positions_at_tick; /* for the rates */
    double last_tick;           /* time of the last rate update */

    wire_trainer_stats trainer; /* last trainer report */
    double trainer_seen;        /* time_now() of it, 0 never */
    int64_t trainer_seen_ms;    /* wall clock */

    /* Snapshots for the HTTP thread. */
    pthread_mutex_t snap_lock;  /* guards the three below */
    char *snap_status;          /* /status JSON, owned */
    char *snap_metrics;         /* /metrics text, owned */
    volatile double heartbeat;  /* time_now() of the last loop turn */
    void *http;                 /* struct MHD_Daemon * */
    int http_fd;                /* status_bind's listening socket until status_start, -1 none */
    struct status_files *files; /* /models and its files for the HTTP thread (status.c) */
    struct games_box *games_box; /* /games requests for the main loop (games.c) */
    char status_token[STATUS_TOKEN_MAX]; /* HTTP token, "" none (read-only once serving) */
    uint64_t http_unauthorized; /* HTTP requests without the token (atomic: HTTP threads) */
    struct http_guard *http_guard; /* keeps a share of the HTTP slots free (httpguard.h) */
    struct endgame *endgame;    /* the best's endgame accuracy (endgame.c), NULL: no tb_dir */
    struct yardstick *yardstick; /* the best's perfect-play accuracy and value calibration
                                  * (yardstick.c), NULL: both off */
    struct judge *judge;        /* gnubg's error rate of the bests (judge.c), NULL: none */
    struct forge *forge;        /* the check of forged games (forge.c), NULL: off */
    struct barred_client *barred; /* (COORD_BARRED) proven forgers, in the store (forge.c) */
    size_t n_barred;            /* used */
    uint64_t barred_refused;    /* requests from them refused since start */
    struct recent_game *recent; /* (COORD_RECENT) ring: the latest stored games (forge.c) */
    size_t recent_next;         /* next slot written */

    /* The model store's size and retention (models.c), main loop. */
    uint32_t models_count;      /* models stored */
    uint64_t models_bytes;      /* their blobs' bytes */
    uint64_t models_deleted;    /* models deleted by the retention since start */
    uint64_t disk_free_bytes;   /* free bytes of the data directory's file system */
    uint64_t disk_total_bytes;  /* its size */
    bool disk_low;              /* free below disk_warn_mb */
    double disk_warned_at;      /* time_now() of the last warning, 0 none */
} coord;

#endif
