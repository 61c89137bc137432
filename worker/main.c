/* kz-worker: a stateless self-play worker (see worker.h and docs/worker.md).
 * Asks the coordinator for jobs, fetches the models they name, plays many
 * games at once with the batched search, submits every finished game and
 * holds it until acknowledged. SIGTERM/SIGINT: finish the moves in hand,
 * submit what is complete, wait (bounded) for the acks, exit 0; a second
 * signal exits at once. */
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/util.h"
#include "net/wire.h"
#include "worker/worker.h"
#include "games/tablebase.h"

/* The worker's own rows; self-play's, the search's and the connection's are
 * their modules' (selfplay_options, mcts_options, client_options), joined in
 * s_table. */
#define CONFIG_STRUCT worker_config
static const config_option s_own_options[] = {
    CONFIG_ROW_STRING(game, GAME_DEFAULT_NAME,
                      "the game (the coordinator's must be the same); its search defaults apply "
                      "(dirichlet_alpha, and simulations when the job says 0)"),
    CONFIG_ROW_INT(simulations, "0", 0, 1000000,
                   "MCTS simulations per move: 0 = the job's (the game's if it says 0: Khreibaga "
                   "200), N = always N"),
    CONFIG_ROW_INT(arena_temperature_plies, "4", 0, 100000,
                   "arena: sample moves by visits while the turn count is below this "
                   "(temperature_plies: self-play)"),
    CONFIG_ROW_INT(threads, "1", 1, 256, "OpenBLAS threads (one worker per core: 1)"),
    CONFIG_ROW_STRING(precision, "bf16",
                      "the network's arithmetic: bf16 (AVX512_BF16 products, fp32 sums; fp32 "
                      "where the CPU lacks it; plays as fp32 does, docs/architecture.md), or fp32"),
    CONFIG_ROW_STRING(model_cache_dir, "./var/models",
                      "directory of cached model blobs (shared by workers is fine); \"\" = memory "
                      "only"),
    CONFIG_ROW_INT(model_cache_keep, "8", 1, 10000,
                   "model files kept in model_cache_dir (newest versions)"),
    CONFIG_ROW_DOUBLE(drain_s, "10", 0, 3600,
                      "at a stop, wait at most this long for acknowledgements"),
    CONFIG_ROW_INT(max_games, "0", 0, 1000000000,
                   "stop after this many finished games (0 = never)"),
    CONFIG_ROW_INT(seed, "0", 0, 9007199254740991,
                   "seed of the games' random choices (0 = from the clock)"),
    CONFIG_ROW_DOUBLE(log_s, "30", 0.1, 86400, "period of the progress line"),
    CONFIG_ROW_STRING(tb_dir, "",
                      "endgame tables (kz tb build, docs/tablebase.md) for tb_search and "
                      "tb_adjudicate; \"\" = none"),
    CONFIG_ROW_STRING(forge, "none",
                      "for testing the coordinator's check of forged games (docs/security.md) "
                      "only: none; model (play with a random network of the same shape under the "
                      "job's model version); visits (swap two visit shares of every searched "
                      "state)"),
    {"worker_id", CONFIG_ALIAS, "client_id", 0, 0, 0, "the worker's name of client_id"},
};
#undef CONFIG_STRUCT
#define N_OWN (sizeof s_own_options / sizeof s_own_options[0])
#define N_OPTIONS_MAX 64 /* rows of the joined table at most */

/* The whole table: the worker's rows, then self-play's, the search's and the
 * connection's. */
static size_t s_table(config_option *rows)
{
    config_group groups[] = {
        {s_own_options, N_OWN, 0},
        {selfplay_options, selfplay_options_n, offsetof(worker_config, play)},
        {mcts_options, mcts_options_n, offsetof(worker_config, play.search)},
        {client_options, client_options_n, offsetof(worker_config, client)},
        {client_worker_options, client_worker_options_n, offsetof(worker_config, client)},
    };
    size_t n = config_join(rows, N_OPTIONS_MAX, groups, sizeof groups / sizeof groups[0]);
    /* A worker listens for new-best announcements on the coordinator's
     * default pub_bind (a library client listens to none unless told). */
    config_set_default(rows, n, "sub_endpoint", "tcp://127.0.0.1:5556");
    return n;
}

#define ARENA_QUEUE_MAX 1024 /* arena games of one job */
#define BACKOFF_S 2.0        /* pause after a failed job or model request */
#define EVAL_BATCH_MAX 1024  /* largest network batch (bounds the evaluator's memory) */

/* Arena or rating games assigned by the last such job and not started yet.
 * Arena: side A is the candidate, side B the best. Rating (eval) games: each
 * side is a model or a baseline player. */
typedef struct arena_queue {
    int kind;                            /* RECORD_ARENA or RECORD_EVAL */
    uint32_t candidate, best;            /* versions of side A and B (0: a baseline) */
    wnet *net_cand, *net_best;           /* their nets (a reference each while queued) */
    char base[2][RECORD_PLAYER_MAX];     /* eval: baseline specs of side A and B, "" = net */
    uint32_t slots[ARENA_QUEUE_MAX];     /* coordinator slots */
    int32_t colours[ARENA_QUEUE_MAX];    /* 0: side A moves first */
    char open[ARENA_QUEUE_MAX][64];      /* the slot's opening ("" = the initial position) */
    size_t n, next;                      /* queued, next to start */
    int simulations;                     /* per move */
} arena_queue;

/* The worker: everything main's loop works with. */
typedef struct wk {
    worker_config cfg;        /* settings */
    const game_def *g;        /* the game */
    void *zctx;               /* ZeroMQ context */
    client *c;                /* coordinator client */
    netcache *nc;             /* models */
    driver *gm;               /* games in play */
    tb_set *tb;               /* endgame tables (tb_dir), or NULL */
    game_oracle tb_oracle;    /* the tables as the driver's oracle (tb_oracle) */
    wnet *sp_net;             /* the self-play model (pinned), NULL before one */
    uint32_t sp_budget;       /* self-play games the last job still allows */
    int sp_sims;              /* simulations of self-play games */
    char sp_open[ARENA_QUEUE_MAX][64]; /* the last self-play job's openings ("" = the start) */
    size_t sp_n_open, sp_next_open;    /* openings of that job, and the next game's */
    arena_queue aq;           /* arena games to start */
    uint32_t arena_logged;    /* candidate of the last "arena:" line */
    bool search_wait;         /* new games wait for a search (driver_start's KZ_EFULL) */
    uint64_t search_waits;    /* times they had to */
    double next_job;          /* no job request before this time_now() */
    double next_best;         /* no attempt to switch models before this */
    bool connected_once;      /* the coordinator has answered once */
    bool wait_logged;         /* "not answering yet" said */
    double started;           /* time_now() at start */
    bool online;              /* it answers now */
    bool stopping;            /* stop mode: moves in hand, then drain */
    uint64_t seed;            /* game n of the run has seed mix64(seed + n) */
    uint64_t dropped;         /* finished games that could not be queued */
    double last_log;          /* time_now() of the last progress line */
    driver_stats log_st;      /* counters at the last progress line */
    client_stats log_cs;      /* client counters at the last progress line */
    double speed_at;          /* time_now() of the last search-speed sample */
    uint64_t speed_sims;      /* simulations then */
    double speed;             /* simulations per second (smoothed), for heartbeats */
} wk;

static volatile sig_atomic_t s_stop; /* signal_catch_stop: the first stop signal */

/* The driver's settings from the worker's (worker_id and the tables set at
 * start-up). Self-play trees are set up per side, as the worker's games
 * always were (driver.h, Seeds). */
static driver_config s_driver_config(const worker_config *cfg)
{
    driver_config dc = driver_config_default();
    dc.play = cfg->play;
    dc.arena_temperature_plies = (int)cfg->arena_temperature_plies;
    dc.tree_per_side = true;
    dc.forge_shares = !strcmp(cfg->forge, "visits");
    return dc;
}

static int s_sims(const wk *w, uint32_t job_sims)
{
    if (w->cfg.simulations > 0)
        return (int)w->cfg.simulations;
    return job_sims > 0 && job_sims <= 100000 ? (int)job_sims : w->g->simulations;
}

/* Games that may start now: free slots, the queue bound, max_games. */
static int s_room(const wk *w)
{
    long room = (long)w->cfg.client.max_pending - (long)client_pending(w->c) -
                driver_in_play(w->gm);
    long free_slots = driver_free(w->gm);
    if (free_slots < room)
        room = free_slots;
    if (w->cfg.max_games) {
        driver_stats st;
        driver_get_stats(w->gm, &st);
        long left = w->cfg.max_games - (long)st.started;
        if (left < room)
            room = left;
    }
    return room > 0 ? (int)room : 0;
}

/* Switches self-play to model `version` (checksum 0: unknown). */
static void s_use_model(wk *w, uint32_t version, uint64_t checksum)
{
    if (w->sp_net && w->sp_net->version == version)
        return;
    wnet *n;
    char err[300];
    int rc = netcache_get(w->nc, w->c, version, checksum, &n, err, sizeof err);
    if (rc) {
        log_warn("cannot use model %u for self-play: %s", (unsigned)version, err);
        w->next_best = time_now() + BACKOFF_S;
        return;
    }
    log_info("self-play now with model %u (was %u)", (unsigned)version,
             w->sp_net ? (unsigned)w->sp_net->version : 0u);
    if (w->sp_net && version < w->sp_net->version)
        log_warn("the coordinator's best went back from model %u to %u (a reverted or "
                 "damaged best: the coordinator's log and /status say why)",
                 (unsigned)w->sp_net->version, (unsigned)version);
    if (w->sp_net)
        w->sp_net->dn.pinned = false;
    n->dn.pinned = true;
    w->sp_net = n;
    netcache_collect(w->nc);
}

static void s_arena_clear(wk *w)
{
    arena_queue *q = &w->aq;
    if (q->net_cand)
        q->net_cand->dn.refs--;
    if (q->net_best)
        q->net_best->dn.refs--;
    q->net_cand = q->net_best = NULL;
    q->n = q->next = 0;
    netcache_collect(w->nc);
}

/* The arena slots in hand: in play and queued. */
static size_t s_arena_in_hand(const wk *w, uint32_t *cand, uint32_t *slots, size_t max)
{
    const arena_queue *q = &w->aq;
    bool queued = q->next < q->n && q->kind == RECORD_ARENA;
    *cand = queued ? q->candidate : driver_arena_candidate(w->gm);
    size_t n = *cand ? driver_arena_slots(w->gm, *cand, slots, max) : 0;
    if (queued && q->candidate == *cand)
        for (size_t k = q->next; k < q->n && n < max; k++)
            slots[n++] = q->slots[k];
    return n;
}

/* Asks for a job and takes it on. Returns KZ_EVERSION when refused,
 * KZ_EREJECTED when this worker's key may not ask (client_key_refused: its
 * role, or a key dropped from allow_keys), KZ_EMISMATCH for another game's
 * job (a coordinator of another game): nothing this worker can change. */
static int s_request_job(wk *w)
{
    static uint32_t slots[ARENA_QUEUE_MAX];
    uint32_t cand;
    size_t n = s_arena_in_hand(w, &cand, slots, ARENA_QUEUE_MAX);
    wire_job_request jr = {(uint32_t)s_room(w), cand, slots, n};
    const wire_job *job;
    int rc = client_get_job(w->c, &jr, &job);
    if (rc == KZ_EVERSION || (rc == KZ_EREJECTED && client_key_refused(w->c)))
        return rc;
    if (rc) {
        log_warn("no job: %s", client_last_error(w->c));
        w->next_job = time_now() + BACKOFF_S;
        return 0;
    }
    if (job->game && job->game[0] && strcmp(job->game, w->g->name)) {
        log_error("refused a job of game '%.40s': this worker plays '%s' (its setting game)",
                  job->game, w->g->name);
        return KZ_EMISMATCH;
    }
    if (job->kind == WIRE_JOB_WAIT) {
        w->next_job = time_now() + (job->retry_ms ? job->retry_ms : 1000) / 1000.0;
        return 0;
    }
    if (job->kind == WIRE_JOB_SELFPLAY) {
        uint32_t v = job->model_version;
        uint64_t sum = job->model_checksum;
        w->sp_budget = job->games ? job->games : 1;
        w->sp_sims = s_sims(w, job->simulations);
        /* The openings of the job's games (coordinator setting selfplay_openings);
         * games past the list start from the initial position. */
        w->sp_n_open = w->sp_next_open = 0;
        for (size_t k = 0; k < job->n_start && k < ARENA_QUEUE_MAX; k++) {
            const char *o = job->start_positions[k] ? job->start_positions[k] : "";
            if (strlen(o) >= sizeof w->sp_open[k]) {
                log_warn("self-play opening of %zu characters ignored", strlen(o));
                o = "";
            }
            snprintf(w->sp_open[k], sizeof w->sp_open[k], "%s", o);
            w->sp_n_open = k + 1;
        }
        s_use_model(w, v, sum); /* the job's pointers are dead after this */
        if (!w->sp_net || w->sp_net->version != v) {
            w->sp_budget = 0;
            w->next_job = time_now() + BACKOFF_S;
        }
        return 0;
    }
    bool eval = job->kind == WIRE_JOB_EVAL;
    const char *pa = eval && job->model_player ? job->model_player : "";
    const char *pb = eval && job->opponent_player ? job->opponent_player : "";
    if ((job->kind != WIRE_JOB_ARENA && !eval) || job->n_arena == 0 ||
        strlen(pa) >= RECORD_PLAYER_MAX || strlen(pb) >= RECORD_PLAYER_MAX ||
        (eval && (!pa[0]) == !job->model_version) || (eval && (!pb[0]) == !job->opponent_version)) {
        log_warn("job of kind %d ignored (unknown kind or inconsistent sides)", job->kind);
        w->next_job = time_now() + BACKOFF_S;
        return 0;
    }
    /* Arena or rating games: copy the job before the next client call. */
    arena_queue *q = &w->aq;
    q->kind = eval ? RECORD_EVAL : RECORD_ARENA;
    q->candidate = job->model_version;
    q->best = job->opponent_version;
    snprintf(q->base[0], sizeof q->base[0], "%s", pa);
    snprintf(q->base[1], sizeof q->base[1], "%s", pb);
    uint64_t cand_sum = job->model_checksum, best_sum = job->opponent_checksum;
    q->n = job->n_arena < ARENA_QUEUE_MAX ? job->n_arena : ARENA_QUEUE_MAX;
    q->next = 0;
    memcpy(q->slots, job->arena_slots, q->n * sizeof *q->slots);
    memcpy(q->colours, job->candidate_players, q->n * sizeof *q->colours);
    for (size_t k = 0; k < q->n; k++) {
        const char *o = k < job->n_start && job->start_positions[k] ? job->start_positions[k] : "";
        if (strlen(o) >= sizeof q->open[k]) {
            log_warn("job with an opening of %zu characters ignored", strlen(o));
            q->n = 0;
            w->next_job = time_now() + BACKOFF_S;
            return 0;
        }
        snprintf(q->open[k], sizeof q->open[k], "%s", o);
    }
    q->simulations = s_sims(w, job->simulations);
    char err[300] = "";
    wnet *nc, *nb;
    rc = 0;
    if (q->candidate) {
        rc = netcache_get(w->nc, w->c, q->candidate, cand_sum, &nc, err, sizeof err);
        if (rc == 0) {
            nc->dn.refs++;
            q->net_cand = nc;
        }
    }
    if (rc == 0 && q->best) {
        rc = netcache_get(w->nc, w->c, q->best, best_sum, &nb, err, sizeof err);
        if (rc == 0) {
            nb->dn.refs++;
            q->net_best = nb;
        }
    }
    if (rc) {
        log_warn("%s of %u dropped: %s", eval ? "rating games" : "arena", (unsigned)q->candidate,
                 err);
        s_arena_clear(w);
        w->next_job = time_now() + BACKOFF_S;
        return rc == KZ_EVERSION ? rc : 0;
    }
    /* pa, pb point into the job message, which the model fetches above
     * replaced: log the queue's copies. */
    if (eval)
        log_info("ratings: playing %s against %s (%zu games in this job)",
                 q->base[0][0] ? q->base[0] : "the network",
                 q->base[1][0] ? q->base[1] : "a network", q->n);
    else if (q->candidate != w->arena_logged)
        log_info("arena: playing candidate %u against best %u (%zu games in this job)",
                 (unsigned)q->candidate, (unsigned)q->best, q->n);
    if (!eval)
        w->arena_logged = q->candidate;
    return 0;
}

/* Starts every game that may start now. 0 or a fatal error. */
static int s_start_games(wk *w)
{
    char err[300];
    bool offline = w->connected_once && !w->online;
    for (;;) {
        if (s_room(w) <= 0)
            return 0;
        arena_queue *q = &w->aq;
        driver_game spec = {0};
        if (q->next < q->n) {
            int cp = q->colours[q->next] ? 1 : 0;
            spec.kind = q->kind;
            spec.net[cp] = q->net_cand ? &q->net_cand->dn : NULL;
            spec.net[1 - cp] = q->net_best ? &q->net_best->dn : NULL;
            spec.baseline[cp] = q->base[0];
            spec.baseline[1 - cp] = q->base[1];
            spec.model_version = q->candidate;
            spec.opponent_version = q->best;
            spec.candidate_player = cp;
            spec.arena_slot = q->slots[q->next];
            spec.simulations = q->simulations;
            spec.start_position = q->open[q->next];
        } else if (w->sp_net && (w->sp_budget > 0 || offline)) {
            spec.kind = RECORD_SELFPLAY;
            spec.net[0] = spec.net[1] = &w->sp_net->dn;
            spec.model_version = w->sp_net->version;
            spec.simulations = w->sp_sims ? w->sp_sims : s_sims(w, 0);
            if (w->sp_budget > 0 && w->sp_next_open < w->sp_n_open)
                spec.start_position = w->sp_open[w->sp_next_open];
        } else {
            return 0;
        }
        driver_stats st;
        driver_get_stats(w->gm, &st);
        spec.seed = mix64(w->seed + st.started); /* game n of the worker's run */
        int rc = driver_start(w->gm, &spec, err, sizeof err);
        if (rc == KZ_EINVAL && spec.kind == RECORD_SELFPLAY && spec.start_position &&
            spec.start_position[0]) {
            /* An opening this worker cannot use: the job's games start from
             * the initial position instead. */
            log_warn("self-play openings dropped: %s", err);
            w->sp_n_open = 0;
            continue;
        }
        if (rc == KZ_EINVAL && spec.kind != RECORD_SELFPLAY) {
            /* A job this worker cannot play (e.g. a baseline it does not know):
             * its slots go to others when they time out. */
            log_warn("%s games dropped: %s", spec.kind == RECORD_EVAL ? "rating" : "arena", err);
            s_arena_clear(w);
            continue;
        }
        if (rc == KZ_EFULL) {
            /* Every search is held by games in play (the best or the
             * candidate changed faster than games finish): not fatal; the
             * game starts once one of those has finished. */
            if (!w->search_wait) {
                w->search_waits++;
                log_warn("new games wait: %s (%d games in play)", err,
                         driver_in_play(w->gm));
            }
            w->search_wait = true;
            return 0;
        }
        if (rc) {
            log_error("cannot start a game: %s", err);
            return rc;
        }
        if (w->search_wait) {
            log_info("new games start again: a search came free");
            w->search_wait = false;
        }
        if (spec.kind != RECORD_SELFPLAY) {
            if (++q->next == q->n)
                s_arena_clear(w);
        } else if (w->sp_budget > 0) {
            w->sp_budget--;
            w->sp_next_open++;
        }
    }
}

/* A finished game: queue it for submission (the client resends it until
 * acknowledged). */
static int s_on_game(void *ctx, const game_record *r, uint32_t arena_slot)
{
    wk *w = ctx;
    uint8_t *buf;
    size_t len;
    int rc = record_pack(r, &buf, &len);
    if (rc) {
        log_error("a finished game cannot be packed: %s", err_str(rc));
        w->dropped++;
        return 0;
    }
    rc = client_submit_game(w->c, buf, len, arena_slot);
    free(buf);
    if (rc == KZ_EVERSION)
        return rc;
    if (rc) {
        log_error("a finished game (%zu bytes) cannot be submitted: %s", len, err_str(rc));
        w->dropped++;
    }
    return 0;
}

/* The network and search speed the heartbeats report (the coordinator's
 * worker table): simulations per second over samples of 2 s at least,
 * smoothed over about 10 s. */
static void s_engine_status(wk *w, const driver_stats *st, double now)
{
    double dt = now - w->speed_at;
    if (w->speed_at == 0 || st->search.simulations < w->speed_sims) {
        w->speed_at = now;
        w->speed_sims = st->search.simulations;
    } else if (dt >= 2.0) {
        double rate = (double)(st->search.simulations - w->speed_sims) / dt;
        w->speed = w->speed > 0 ? w->speed + (rate - w->speed) * (dt >= 10 ? 1.0 : dt / 10.0)
                                : rate;
        w->speed_at = now;
        w->speed_sims = st->search.simulations;
    }
    client_set_engine(w->c, w->sp_net ? w->sp_net->version : 0, (float)w->speed);
}

static void s_progress(wk *w, bool force)
{
    double now = time_now();
    if (!force && now - w->last_log < w->cfg.log_s)
        return;
    driver_stats st;
    client_stats cs;
    driver_get_stats(w->gm, &st);
    client_get_stats(w->c, &cs);
    double dt = now - w->last_log;
    uint64_t dg = st.finished - w->log_st.finished;
    double evals = (double)(st.search.evaluated - w->log_st.search.evaluated);
    double calls = (double)(st.search.evaluator_calls - w->log_st.search.evaluator_calls);
    log_info("progress: games %llu (+%llu, %.1f/min) arena %llu, positions %llu, in play %d, "
             "pending %zu, acked %llu, rejected %llu, model %u, sims/s %.0f, evals/s %.0f, "
             "batch %.1f",
             (unsigned long long)st.finished, (unsigned long long)dg,
             dt > 0 ? dg * 60.0 / dt : 0.0, (unsigned long long)st.finished_arena,
             (unsigned long long)st.positions, driver_in_play(w->gm), client_pending(w->c),
             (unsigned long long)cs.acked, (unsigned long long)cs.rejected,
             w->sp_net ? (unsigned)w->sp_net->version : 0u,
             dt > 0 ? (double)(st.search.simulations - w->log_st.search.simulations) / dt : 0.0,
             dt > 0 ? evals / dt : 0.0, calls > 0 ? evals / calls : 0.0);
    w->last_log = now;
    w->log_st = st;
    w->log_cs = cs;
}

/* Connection bookkeeping: the Welcome's game, a refused key, going offline
 * and back. 0, or KZ_EMISMATCH / KZ_EREJECTED: fatal. */
static int s_check_connection(wk *w)
{
    if (client_key_refused(w->c))
        return KZ_EREJECTED;
    const wire_welcome *wel = client_welcome(w->c);
    if (wel->game && wel->game[0] && strcmp(wel->game, w->cfg.game)) {
        log_error("the coordinator plays '%s', this worker '%s'", wel->game, w->cfg.game);
        return KZ_EMISMATCH;
    }
    bool on = client_connected(w->c);
    if (!on && !w->connected_once && !w->wait_logged &&
        time_now() - w->started > w->cfg.client.timeout_ms / 1000.0 * w->cfg.client.retries) {
        log_warn("coordinator at %s not answering yet; waiting", w->cfg.client.endpoint);
        w->wait_logged = true;
    }
    if (on && !w->connected_once) {
        log_info("connected to coordinator %s (game %s, best %u)",
                 wel->coordinator ? wel->coordinator : "?", wel->game ? wel->game : "?",
                 (unsigned)client_best_version(w->c));
        w->connected_once = true;
    } else if (on && !w->online) {
        log_info("coordinator answering again; %zu games to deliver", client_pending(w->c));
        w->next_job = w->next_best = 0; /* no back-off left over from the outage */
    } else if (!on && w->online) {
        log_warn("coordinator not answering: playing on with model %u, holding %zu games",
                 w->sp_net ? (unsigned)w->sp_net->version : 0u, client_pending(w->c));
    }
    w->online = on;
    return 0;
}

/* A baseline player's tick during a long move (an anchor's deep search in a
 * rating game): the connection serviced, so the heartbeats go on and the
 * coordinator does not count this worker gone; a stop gives the move up (its
 * game is abandoned) instead of waiting for it. */
static bool s_tick(void *ctx)
{
    wk *w = ctx;
    client_poll(w->c, 0);
    return s_stop != 0;
}

/* The main loop until a stop has completed. 0 or a fatal error. */
static int s_loop(wk *w)
{
    static uint32_t slots[ARENA_QUEUE_MAX];
    int rc = 0;
    w->last_log = w->started = time_now();
    for (;;) {
        if (s_stop && !w->stopping) {
            log_info("stopping: finishing the moves in hand (%d games in play)",
                     driver_in_play(w->gm));
            w->stopping = true;
            driver_stop(w->gm);
            s_arena_clear(w);
        }
        if (w->stopping && driver_in_play(w->gm) == 0)
            return 0;
        rc = client_poll(w->c, 0);
        if (rc)
            break;
        rc = s_check_connection(w);
        if (rc)
            break;
        double now = time_now();
        if (!w->stopping) {
            wire_announcement an = {0};
            uint64_t an_sum = 0;
            if (client_next_announcement(w->c, &an)) {
                log_info("announcement: model %u is the new best (+%u =%u -%u against %u)",
                         (unsigned)an.best_version, (unsigned)an.wins, (unsigned)an.draws,
                         (unsigned)an.losses, (unsigned)an.previous_version);
                an_sum = an.checksum;
                w->next_best = 0;
            }
            uint32_t best = client_best_version(w->c);
            if (best && w->sp_net && best > w->sp_net->version && now >= w->next_best)
                s_use_model(w, best, best == an.best_version ? an_sum : 0);
            if (w->online && w->aq.next == w->aq.n && w->sp_budget == 0 && s_room(w) > 0 &&
                now >= w->next_job) {
                rc = s_request_job(w);
                if (rc)
                    break;
            }
            rc = s_start_games(w);
            if (rc)
                break;
        }
        uint32_t cand;
        size_t n = s_arena_in_hand(w, &cand, slots, ARENA_QUEUE_MAX);
        driver_stats st;
        driver_get_stats(w->gm, &st);
        client_set_status(w->c, (uint32_t)driver_in_play(w->gm), st.finished, cand, slots, n);
        s_engine_status(w, &st, now);
        if (driver_in_play(w->gm) > 0) {
            rc = driver_step(w->gm, s_on_game, w);
            if (rc)
                break;
        } else {
            client_poll(w->c, 50);
        }
        if (w->cfg.max_games && st.finished >= (uint64_t)w->cfg.max_games && !w->stopping)
            s_stop = 1;
        s_progress(w, false);
    }
    if (rc == KZ_EVERSION)
        log_error("the coordinator refused this worker: %s", client_last_error(w->c));
    else if (rc == KZ_EREJECTED && client_key_refused(w->c))
        log_error("stopping: the coordinator refuses this worker's key: %s",
                  client_last_error(w->c));
    else if (rc != KZ_EMISMATCH)
        log_error("fatal: %s", err_str(rc));
    return rc;
}

/* After a stop: wait up to drain_s for the acknowledgements. */
static void s_drain(wk *w)
{
    double deadline = time_now() + w->cfg.drain_s;
    if (client_pending(w->c))
        log_info("waiting up to %.0f s for %zu acknowledgements", w->cfg.drain_s,
                 client_pending(w->c));
    while (client_pending(w->c) && time_now() < deadline)
        if (client_poll(w->c, 100))
            break;
}

static const char s_usage[] =
    "usage: kz-worker [--config=FILE] [--key=value ...]\n\n"
    "A Khreibaga Zero self-play worker: asks the coordinator for jobs, plays\n"
    "self-play and arena games with the batched search, submits every finished\n"
    "game and holds it until acknowledged. SIGTERM/SIGINT: finish the moves in\n"
    "hand, submit what is complete, exit 0 (a second signal exits at once).\n"
    "Exit status: 0 clean stop, 1 fatal error, 2 bad settings. See docs/worker.md.\n\n";

int main(int argc, char **argv)
{
    log_init("kz-worker");
    if (util_version_asked(argc, argv, "kz-worker"))
        return 0;
    static wk w;
    char err[512];
    static config_option options[N_OPTIONS_MAX];
    size_t n_options = s_table(options);
    w.cfg.play = selfplay_config_default();
    client_config_default(&w.cfg.client);
    int rc = config_start("kz-worker", s_usage, options, n_options, &w.cfg, argc, argv, NULL, 0,
                          NULL);
    if (rc >= 0)
        return rc;
    w.g = game_find_said(w.cfg.game, INT_MAX, err, sizeof err);
    if (!w.g) {
        fprintf(stderr, "kz-worker: game: %s\n", err);
        return 2;
    }
    /* The game's own search defaults, unless set: the settings read again
     * over them (they are read alike, so no error can appear only now). */
    static char alpha[32];
    snprintf(alpha, sizeof alpha, "%g", (double)w.g->dirichlet_alpha);
    config_set_default(options, n_options, "dirichlet_alpha", alpha);
    rc = config_parse(options, n_options, &w.cfg, argc, argv, NULL, 0, NULL, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kz-worker: %s\n", err);
        return 2;
    }
    client_config *cc = &w.cfg.client;
    if (!cc->endpoint[0]) {
        fprintf(stderr, "kz-worker: endpoint: must not be empty\n");
        return 2;
    }
    if (wire_endpoint_check(cc->endpoint, false, err, sizeof err)) {
        fprintf(stderr, "kz-worker: endpoint: %s\n", err);
        return 2;
    }
    if (cc->sub_endpoint[0] && wire_endpoint_check(cc->sub_endpoint, false, err, sizeof err)) {
        fprintf(stderr, "kz-worker: sub_endpoint: %s\n", err);
        return 2;
    }
    driver_config dc = s_driver_config(&w.cfg);
    if (driver_check_settings(&dc, err, sizeof err)) {
        fprintf(stderr, "kz-worker: %s\n", err);
        return 2;
    }
    if (strcmp(w.cfg.forge, "none") && strcmp(w.cfg.forge, "model") &&
        strcmp(w.cfg.forge, "visits")) {
        fprintf(stderr, "kz-worker: forge: '%s' is not none, model or visits\n", w.cfg.forge);
        return 2;
    }
    if (w.cfg.tb_dir[0] && w.g != tb_game()) {
        fprintf(stderr, "kz-worker: tb_dir: the endgame tables are %s's, not %s's\n",
                tb_game()->name, w.g->name);
        return 2;
    }
    if (!w.cfg.tb_dir[0] && (w.cfg.play.tb_search || w.cfg.play.tb_adjudicate)) {
        fprintf(stderr, "kz-worker: tb_search and tb_adjudicate need tb_dir (endgame tables)\n");
        return 2;
    }
    int precision;
    if (model_precision_parse(w.cfg.precision, &precision)) {
        fprintf(stderr, "kz-worker: precision: must be fp32 or bf16, not '%s'\n",
                w.cfg.precision);
        return 2;
    }
    if (client_check_keys(cc, err, sizeof err)) {
        fprintf(stderr, "kz-worker: %s\n", err);
        return 2;
    }
    log_info("kz-worker %s", util_version());
    config_log(options, n_options, &w.cfg);

    signal_catch_stop(&s_stop);

    model_set_threads((int)w.cfg.threads);
    model_set_precision(precision);
    uint64_t seed = w.cfg.seed ? (uint64_t)w.cfg.seed
                               : mix64((uint64_t)time_wall_ms() ^ ((uint64_t)getpid() << 40));
    w.seed = seed;
    w.zctx = zmq_ctx_new();
    cc->role = "worker";
    cc->game = w.cfg.game;
    cc->slots = (uint32_t)w.cfg.play.parallel;
    w.c = w.zctx ? client_new(w.zctx, cc) : NULL;
    /* The search hands the network its leaves in chunks of at most this. */
    long eval_batch = (long)w.cfg.play.parallel * w.cfg.play.search.leaves_per_tree;
    if (eval_batch > EVAL_BATCH_MAX)
        eval_batch = EVAL_BATCH_MAX;
    w.nc = netcache_new(w.g, w.cfg.model_cache_dir, (int)w.cfg.model_cache_keep,
                        (int)eval_batch);
    if (w.nc && !strcmp(w.cfg.forge, "model")) {
        log_warn("forge = model: playing with random networks under the models' versions "
                 "(a test of the coordinator's check)");
        netcache_forge_model(w.nc);
    }
    if (w.c && w.cfg.tb_dir[0]) {
        char terr[512];
        w.tb = tb_open(w.cfg.tb_dir, 0, terr, sizeof terr);
        if (!w.tb) {
            log_error("cannot start: tb_dir: %s", terr);
            rc = 1;
            goto out;
        }
        log_info("endgame tables: every position with up to %d pieces (%s); tb_search %s, "
                 "tb_adjudicate %s",
                 tb_pieces(w.tb), w.cfg.tb_dir, w.cfg.play.tb_search ? "on" : "off",
                 w.cfg.play.tb_adjudicate ? "on" : "off");
    }
    if (w.c) {
        dc.play.worker_id = client_id(w.c);
        if (w.tb) {
            w.tb_oracle = tb_oracle(w.tb);
            dc.play.oracle = &w.tb_oracle;
        }
        w.gm = driver_new(w.g, &dc, err, sizeof err);
    }
    if (!w.c || !w.nc || !w.gm) {
        log_error("cannot start: %s", !w.c ? "no client (see above)" : !w.nc ? "model cache"
                                                                              : err);
        rc = 1;
        goto out;
    }
    driver_set_tick(w.gm, s_tick, &w);
    log_info("worker %s starting: parallel %ld, endpoint %s, seed %llu", client_id(w.c),
             (long)w.cfg.play.parallel, cc->endpoint, (unsigned long long)seed);
    rc = s_loop(&w) ? 1 : 0;
    s_drain(&w);
    driver_stats st;
    client_stats cs;
    driver_get_stats(w.gm, &st);
    client_get_stats(w.c, &cs);
    if (w.tb)
        log_info("endgame tables: %llu games played out by them (%llu moves)",
                 (unsigned long long)st.tb_games, (unsigned long long)st.tb_moves);
    log_info("exit: games %llu, submitted %llu, acked %llu, rejected %llu, unacknowledged %zu, "
             "abandoned %llu (a baseline player failed in %llu), dropped %llu",
             (unsigned long long)st.finished, (unsigned long long)cs.submitted,
             (unsigned long long)cs.acked, (unsigned long long)cs.rejected, client_pending(w.c),
             (unsigned long long)st.abandoned, (unsigned long long)st.failed,
             (unsigned long long)w.dropped);
    if (w.search_waits)
        log_info("new games waited %llu times for a search held by games in play",
                 (unsigned long long)w.search_waits);
out:
    if (w.sp_net)
        w.sp_net->dn.pinned = false;
    if (w.nc)
        s_arena_clear(&w);
    driver_destroy(&w.gm);
    tb_close(&w.tb);
    netcache_destroy(&w.nc);
    client_destroy(&w.c);
    if (w.zctx)
        zmq_ctx_term(w.zctx);
    return rc;
}
