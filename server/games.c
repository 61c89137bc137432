/* games: GET /games (recent stored games, filtered, bounded) and GET
 * /games/SEQ (one game's moves) for the viewer page. The store is the main
 * thread's alone: the HTTP thread parses the request, posts it in a one-slot
 * mailbox and waits (bounded); the main loop reads the store and answers on
 * its next turn (games_serve). One request at a time; the others wait their
 * turn for at most GAMES_WAIT_S. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coordinator.h"
#include "engine.h"
#include "record.h"
#include "util.h"

#define GAMES_WAIT_S 10 /* longest an HTTP thread waits for the mailbox and its answer */

/* The mailbox between the HTTP threads and the main loop. */
typedef struct games_box {
    pthread_mutex_t lock;      /* guards everything below */
    pthread_cond_t changed;    /* broadcast on every change */
    bool posted;               /* a request waits for the main loop */
    bool answered;             /* its answer is ready */
    bool closing;              /* games_stop runs: waiting threads give up */
    bool abandoned;            /* the poster gave up waiting: drop the answer */
    bool one;                  /* the request: one game (seq), else a list (filter) */
    uint64_t seq;              /* one game's sequence */
    engine_games_filter filter;/* a list's filter */
    engine_reply reply;        /* the answer (body owned until taken) */
} games_box;

void games_start(coord *c)
{
    games_box *b = xcalloc(1, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->changed, NULL);
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
static void s_answer(coord *c, bool one, uint64_t seq, const engine_games_filter *f,
                     engine_reply *out)
{
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
    bool todo = b->posted && !b->answered;
    bool one = b->one;
    uint64_t seq = b->seq;
    engine_games_filter f = b->filter;
    pthread_mutex_unlock(&b->lock);
    if (!todo)
        return;
    engine_reply r = {0};
    s_answer(c, one, seq, &f, &r);
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

void games_http(coord *c, const char *url, const engine_args *args, engine_reply *out)
{
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
    b->one = one;
    b->seq = seq;
    if (!one)
        b->filter = f;
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
