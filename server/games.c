/* games: GET /games (recent stored games, filtered, bounded) and GET
 * /games/SEQ (one game's moves) for the viewer page, and the play page's
 * API (/api/..., engine.h) over the current best model. The store is the
 * main thread's alone: the HTTP thread parses the request, posts it in a
 * one-slot mailbox and waits (bounded); the main loop reads the store and
 * answers on its next turn (games_serve). One request at a time; the others
 * wait their turn for at most GAMES_WAIT_S. The play engine is built on an
 * HTTP thread from the best model's bytes (asked of the main loop the same
 * way, when the best changed) and searches there: the main loop never
 * waits for a search. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/features.h"
#include "play/engine.h"
#include "data/record.h"
#include "common/util.h"

#define GAMES_WAIT_S 10 /* longest an HTTP thread waits for the mailbox and its answer */

/* The mailbox between the HTTP threads and the main loop. */
typedef struct games_box {
    pthread_mutex_t lock;      /* guards everything below */
    pthread_cond_t changed;    /* broadcast on every change */
    bool posted;               /* a request waits for the main loop */
    bool answered;             /* its answer is ready */
    bool closing;              /* games_stop runs: waiting threads give up */
    bool abandoned;            /* the poster gave up waiting: drop the answer */
    int kind;                  /* the request: BOX_LIST, BOX_GAME or BOX_MODEL */
    uint64_t seq;              /* one game's sequence */
    engine_games_filter filter;/* a list's filter */
    engine_reply reply;        /* the answer (body owned until taken); BOX_MODEL: the
                                  blob in body, its version in code */
    uint32_t best;             /* the best version, as the main loop last saw it */
    pthread_rwlock_t play_lock;/* searches read-lock the play engine, a new one write-locks */
    pthread_mutex_t play_build;/* one thread builds a new play engine at a time */
    engine *play;              /* the play engine (the best model), NULL before the first */
    uint32_t play_version;     /* its model version */
} games_box;

enum { BOX_LIST = 0, BOX_GAME = 1, BOX_MODEL = 2 };
#define PLAY_SIMS 200      /* default simulations of the coordinator's play engine */
#define PLAY_MAX_SIMS 2000 /* most a page may ask for (the workers need the cores) */

void games_start(coord *c)
{
    games_box *b = xcalloc(1, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->changed, NULL);
    pthread_rwlock_init(&b->play_lock, NULL);
    pthread_mutex_init(&b->play_build, NULL);
    b->best = c->best;
    c->games_box = b;
}

void games_stop(coord *c)
{
    games_box *b = c->games_box;
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->closing = true;
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
}

void games_free(coord *c)
{
    games_box *b = c->games_box;
    if (!b)
        return;
    engine_reply_free(&b->reply);
    engine_destroy(&b->play);
    pthread_rwlock_destroy(&b->play_lock);
    pthread_mutex_destroy(&b->play_build);
    pthread_cond_destroy(&b->changed);
    pthread_mutex_destroy(&b->lock);
    free(b);
    c->games_box = NULL;
}

/* --- the main loop's side --------------------------------------------------------- */

typedef struct list_ctx {
    engine_games_list *list; /* being built */
    game_record *rec;        /* decode buffer */
} list_ctx;

static int s_offer(void *ctx, uint64_t seq, const uint8_t *bytes, size_t len)
{
    list_ctx *lc = ctx;
    char err[200];
    bool ok = record_unpack(bytes, len, lc->rec, err, sizeof err) == 0;
    return engine_games_offer(lc->list, ok ? lc->rec : NULL, seq) ? 0 : 1;
}

/* The answer to one request (main thread: reads the store). */
static void s_answer(coord *c, int kind, uint64_t seq, const engine_games_filter *f,
                     engine_reply *out)
{
    if (kind == BOX_MODEL) {
        uint8_t *blob;
        size_t len;
        int rc = store_get_model(c->st, c->best, &blob, &len, NULL);
        if (rc) {
            engine_reply_line(out, 500, "the best model (v%u) cannot be read: %s", c->best,
                              err_str(rc));
            return;
        }
        *out = (engine_reply){(int)c->best, "application/octet-stream", (char *)blob, len};
        return;
    }
    bool one = kind == BOX_GAME;
    store_stats st;
    store_get_stats(c->st, &st);
    game_record *rec = record_new();
    if (!rec) {
        engine_reply_line(out, 500, "out of memory");
        return;
    }
    if (!one) {
        list_ctx lc = {engine_games_begin(f), rec};
        int rc = store_foreach_game_desc(c->st, f->before, s_offer, &lc);
        char *json = engine_games_end(&lc.list, st.games);
        if (rc < 0 || rc > 1) {
            free(json);
            engine_reply_line(out, 500, "cannot read the games: %s", err_str(rc));
        } else {
            *out = (engine_reply){200, "application/json", json, strlen(json)};
        }
        record_destroy(&rec);
        return;
    }
    uint8_t *bytes;
    size_t len;
    char err[300];
    int rc = seq < st.games ? store_get_game(c->st, seq, &bytes, &len) : KZ_ENOTFOUND;
    if (rc == KZ_ENOTFOUND) {
        engine_reply_line(out, 404, "no game %llu (the games are 0..%lld)",
                          (unsigned long long)seq, (long long)st.games - 1);
    } else if (rc) {
        engine_reply_line(out, 500, "cannot read game %llu: %s", (unsigned long long)seq,
                          err_str(rc));
    } else {
        const game_def *g;
        char *json = NULL;
        if (record_unpack(bytes, len, rec, err, sizeof err))
            engine_reply_line(out, 500, "game %llu does not decode: %s",
                              (unsigned long long)seq, err);
        else if (!(g = game_find(rec->game)))
            engine_reply_line(out, 500, "game %llu is of an unknown game",
                              (unsigned long long)seq);
        else if (!(json = engine_json_game(g, rec, seq, err, sizeof err)))
            engine_reply_line(out, 500, "game %llu does not replay: %s",
                              (unsigned long long)seq, err);
        else
            *out = (engine_reply){200, "application/json", json, strlen(json)};
        free(bytes);
    }
    record_destroy(&rec);
}

void games_serve(coord *c)
{
    games_box *b = c->games_box;
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->best = c->best;
    bool todo = b->posted && !b->answered;
    int kind = b->kind;
    uint64_t seq = b->seq;
    engine_games_filter f = b->filter;
    pthread_mutex_unlock(&b->lock);
    if (!todo)
        return;
    engine_reply r = {0};
    s_answer(c, kind, seq, &f, &r);
    pthread_mutex_lock(&b->lock);
    if (b->abandoned) {
        engine_reply_free(&r);
        b->abandoned = false;
        b->posted = false;
    } else {
        b->reply = r;
        b->answered = true;
    }
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
}

/* --- the HTTP thread's side ------------------------------------------------------- */

static void s_post(games_box *b, int kind, uint64_t seq, const engine_games_filter *f,
                   engine_reply *out);

void games_http(coord *c, const char *url, const engine_args *args, engine_reply *out)
{
    /* /saved, /saved/K: the games people saved from /play (DATA_DIR/play.kzr). */
    if (!strncmp(url, "/saved", 6)) {
        char records[CONFIG_STR_MAX + 16];
        snprintf(records, sizeof records, "%s/play.kzr", c->cfg.data_dir);
        engine_saved_games(c->g, records, "/saved", url + 6, args, c->status_token[0] != 0,
                           out);
        return;
    }
    memset(out, 0, sizeof *out);
    games_box *b = c->games_box;
    bool one = url[6] == '/';
    uint64_t seq = 0;
    engine_games_filter f;
    char err[300];
    if (one) {
        long v;
        const char *num = url + 7;
        if (args->n) {
            engine_reply_line(out, 400, "/games/SEQ takes no arguments");
            return;
        }
        if (!num[0] || (num[0] == '0' && num[1]) || parse_long(num, 0, 9007199254740991L, &v)) {
            char shown[40];
            engine_reply_line(out, 404, "no game '%s': games are /games/SEQ, SEQ a sequence "
                              "number from /games",
                              text_printable(shown, sizeof shown, num, strlen(num)));
            return;
        }
        seq = (uint64_t)v;
    } else if (engine_games_filter_parse(c->g, args, &f, err, sizeof err)) {
        engine_reply_line(out, 400, "%s", err);
        return;
    }
    s_post(b, one ? BOX_GAME : BOX_LIST, seq, &f, out);
}

/* Posts a request and waits for the main loop's answer (or a 503). */
static void s_post(games_box *b, int kind, uint64_t seq, const engine_games_filter *f,
                   engine_reply *out)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += GAMES_WAIT_S;
    pthread_mutex_lock(&b->lock);
    /* Step 1. Wait for the mailbox. */
    while (b->posted && !b->closing)
        if (pthread_cond_timedwait(&b->changed, &b->lock, &deadline) == ETIMEDOUT)
            break;
    if (b->posted || b->closing) {
        pthread_mutex_unlock(&b->lock);
        engine_reply_line(out, 503, b->closing ? "the coordinator is stopping"
                                               : "busy with other requests for games; try again");
        return;
    }
    /* Step 2. Post, and wait for the main loop's answer. */
    b->posted = true;
    b->answered = false;
    b->kind = kind;
    b->seq = seq;
    if (f)
        b->filter = *f;
    while (!b->answered && !b->closing)
        if (pthread_cond_timedwait(&b->changed, &b->lock, &deadline) == ETIMEDOUT)
            break;
    if (b->answered) {
        *out = b->reply;
        b->reply = (engine_reply){0};
        b->posted = false;
    } else {
        /* Given up: the main loop drops its answer when it comes (games_serve). */
        b->abandoned = true;
        engine_reply_line(out, 503, b->closing ? "the coordinator is stopping"
                                               : "the coordinator's main loop did not answer "
                                                 "within %d s; try again", GAMES_WAIT_S);
    }
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
}

/* Makes the play engine the current best's, if it is not yet. 0, or a
 * reply (503, 500) in out. */
static int s_play_engine(coord *c, engine_reply *out)
{
    games_box *b = c->games_box;
    pthread_mutex_lock(&b->lock);
    uint32_t best = b->best;
    pthread_mutex_unlock(&b->lock);
    pthread_rwlock_rdlock(&b->play_lock);
    bool current = b->play && b->play_version == best;
    pthread_rwlock_unlock(&b->play_lock);
    if (current)
        return 0;
    pthread_mutex_lock(&b->play_build);
    pthread_rwlock_rdlock(&b->play_lock);
    current = b->play && b->play_version == best; /* built meanwhile by another thread */
    pthread_rwlock_unlock(&b->play_lock);
    if (current) {
        pthread_mutex_unlock(&b->play_build);
        return 0;
    }
    engine_reply blob;
    s_post(b, BOX_MODEL, 0, NULL, &blob);
    if (strcmp(blob.type, "application/octet-stream")) {
        pthread_mutex_unlock(&b->play_build);
        *out = blob;
        return KZ_EIO;
    }
    /* Step 2. The engine, built outside the locks (the searches go on). */
    engine_config ec;
    engine_config_default(&ec);
    char records[CONFIG_STR_MAX + 16], err[300];
    snprintf(records, sizeof records, "%s/play.kzr", c->cfg.data_dir);
    ec.sims = PLAY_SIMS;
    ec.max_sims = PLAY_MAX_SIMS;
    ec.records = records;
    ec.label = "the best";
    ec.saves_per_hour = (int)c->cfg.play_saves_per_hour;
    ec.records_max_mb = c->cfg.play_records_max_mb;
    ec.show_paths = c->status_token[0] != 0; /* behind a token: for the operator */
    ec.tb = endgame_tables(c); /* tb_dir's tables: the exact endgame */
    uint32_t version = (uint32_t)blob.code;
    engine *e = engine_new_bytes(c->g, (const uint8_t *)blob.body, blob.len, version, &ec, err,
                                 sizeof err);
    engine_reply_free(&blob);
    if (!e) {
        pthread_mutex_unlock(&b->play_build);
        log_warn("play: the best model v%u: %s", version, err);
        engine_reply_line(out, 500, "the best model (v%u) cannot be played: %s", version, err);
        return KZ_EINVAL;
    }
    pthread_rwlock_wrlock(&b->play_lock);
    engine *old = b->play;
    engine_take_saves(e, old); /* a new best does not refill the save limit */
    b->play = e;
    b->play_version = version;
    pthread_rwlock_unlock(&b->play_lock);
    pthread_mutex_unlock(&b->play_build);
    engine_destroy(&old);
    log_info("play: the engine of /play is the best, v%u%s", version,
             ec.tb ? ", with the endgame tables of tb_dir" : "");
    return 0;
}

void games_api(coord *c, const char *method, const char *name, const engine_args *args,
               engine_reply *out)
{
    games_box *b = c->games_box;
    memset(out, 0, sizeof *out);
    /* The rules alone need no engine; info, analyse and save the best's. */
    if (!strcmp(name, "legal") || !strcmp(name, "apply")) {
        engine_request(NULL, c->g, method, name, args, out);
        return;
    }
    bool known = !strcmp(name, "info") || !strcmp(name, "analyse") || !strcmp(name, "save");
    if (known && s_play_engine(c, out)) {
        if (strcmp(name, "info"))
            return;
        /* The game's description answers before there is a best to play. */
        engine_reply_free(out);
        engine_request(NULL, c->g, method, name, args, out);
        return;
    }
    pthread_rwlock_rdlock(&b->play_lock);
    engine_request(known ? b->play : NULL, c->g, method, name, args, out);
    pthread_rwlock_unlock(&b->play_lock);
}
