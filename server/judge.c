/* judge: gnubg's error rate of the rated bests (backgammon rated against
 * gnubg, docs/ratings.md "gnubg's judgement of the bests"): the moves each
 * best played in its gauntlet's rating games, up to `judge_games` games a
 * best, judged by gnubg at the level `judge` (expert: 0-ply, no noise, as
 * make learn's --judge) in the background: millipoints of cubeless equity
 * lost per decision (a whole move at a roll with a choice), its 95% interval
 * over the games (match_ratio) and PR (half of it).
 *
 * Off the request path: ratings_apply hands a copy of a counted gauntlet
 * game's record to this module (judge_post: a bounded queue, a game more than
 * the best's quota or beyond a full queue is not judged); the thread, at a
 * lower priority, replays each record through the rules with its own gnubg
 * (match_judge_record) and publishes the figures under a lock (judge_get,
 * judge_history, for /status and the dashboard). The history is kept in the
 * store (meta "judge_history"), so the plot survives restarts. A stop cuts
 * the queue short between two games. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/record.h"
#include "data/store.h"
#include "server/features.h"
#include "server/services.h"
#include "games/backgammon.h"
#include "play/match.h"
#include "search/gnubg.h"
#include "common/util.h"

#define JUDGE_NICE 10     /* the thread's priority below the coordinator's */
#define JUDGE_QUEUE 64    /* records waiting at most */
#define JUDGE_TIMEOUT_S 60 /* gnubg's answer */
#define HIST_MAGIC "KJH1"
#define HIST_BYTES 44 /* version, games, decisions u32; mp, lo, hi f64; ms i64 (big-endian) */

typedef struct judge_job {
    uint8_t *rec;         /* the record's bytes (owned) */
    size_t len;
    uint32_t version;     /* the best whose moves are judged */
    int side;             /* its player id in the game */
} judge_job;

struct judge {
    const game_def *g;
    gnubg *gb;               /* the judge's gnubg (the thread's once started) */
    char level[32];          /* its level */
    part_thread th;          /* the judging thread; its lock guards everything below */
    judge_job q[JUDGE_QUEUE]; /* the waiting records, a ring */
    int q_head, q_n;
    uint32_t posted_v;       /* the version whose games are being posted (main thread's) */
    int posted_n;            /* of its games, posted */
    match_ratio cur;         /* the version being judged: mp and decisions per game */
    uint32_t cur_v;
    judge_figures fig;       /* what /status shows */
    judge_point hist[JUDGE_HISTORY]; /* the judged versions, oldest first */
    int n_hist;
    uint64_t results;        /* games judged (the thread's count) */
    history_sync sync;       /* the history in the store (main thread's) */
    uint64_t dropped;        /* games not judged: the queue was full */
};

/* The history entry of the version being judged, made or replaced (under
 * e->th.lock): coord_history_append. */
static void s_hist_put(judge *e)
{
    const judge_figures *f = &e->fig;
    judge_point q = {f->version, (uint32_t)f->games, (uint32_t)f->decisions, f->mp, f->mp_lo,
                     f->mp_hi, f->done_ms};
    coord_history_append(e->hist, sizeof q, &e->n_hist, JUDGE_HISTORY, &q);
}

/* Judges one record (on the thread, without the lock). */
static void s_judge_one(judge *e, const judge_job *j)
{
    char err[300];
    game_record *r = record_new();
    match_game mg;
    int rc = r ? record_unpack(j->rec, j->len, r, err, sizeof err) : KZ_ENOMEM;
    if (rc == 0 && !e->gb)
        rc = gnubg_open(&e->gb, e->level, JUDGE_TIMEOUT_S, err, sizeof err);
    if (rc == 0)
        rc = match_judge_record(e->g, r, j->side, e->gb, &mg, err, sizeof err);
    record_destroy(&r);
    if (rc == KZ_EIO) { /* gnubg failed: a new one for the next game */
        gnubg_close(e->gb);
        e->gb = NULL;
    }
    pthread_mutex_lock(&e->th.lock);
    if (rc) {
        snprintf(e->fig.error, sizeof e->fig.error, "v%u: %s", j->version,
                 rc == KZ_ENOMEM ? "out of memory" : err);
        pthread_mutex_unlock(&e->th.lock);
        log_warn("judge: a game of v%u not judged: %s", j->version, e->fig.error);
        return;
    }
    if (j->version != e->cur_v) {
        e->cur_v = j->version;
        e->cur = (match_ratio){0};
    }
    if (mg.decisions[j->side] > 0)
        match_ratio_add(&e->cur, 1000.0 * mg.loss[j->side], mg.decisions[j->side]);
    judge_figures *f = &e->fig;
    double mp = 0, half = 0;
    match_ratio_stats(&e->cur, &mp, &half);
    f->version = j->version;
    f->games = e->cur.n;
    f->decisions = (long)e->cur.y;
    f->mp = mp;
    f->mp_lo = mp - half;
    f->mp_hi = mp + half;
    f->done_ms = time_wall_ms();
    f->error[0] = 0;
    if (f->games > 0) {
        s_hist_put(e);
        e->results++;
    }
    pthread_mutex_unlock(&e->th.lock);
}

/* The thread's part_thread hooks: whether a game waits; judging it. */
static bool s_ready(void *arg) { return ((judge *)arg)->q_n > 0; }

static void s_step(void *arg)
{
    judge *e = arg;
    judge_job j = e->q[e->q_head];
    e->q_head = (e->q_head + 1) % JUDGE_QUEUE;
    e->q_n--;
    e->fig.waiting = e->q_n;
    pthread_mutex_unlock(&e->th.lock);
    s_judge_one(e, &j);
    free(j.rec);
    pthread_mutex_lock(&e->th.lock);
}

int judge_start(coord *c)
{
    bool gnubg_anchor = false;
    for (int k = 0; k < c->n_anchors; k++)
        gnubg_anchor |= !strncmp(c->anchors[k], "gnubg:", 6);
    if (c->g != &backgammon_game || !gnubg_anchor || !c->cfg.judge[0] ||
        c->cfg.judge_games <= 0 || c->cfg.eval_share <= 0)
        return 0;
    char err[300];
    gnubg *gb;
    if (gnubg_open(&gb, c->cfg.judge, JUDGE_TIMEOUT_S, err, sizeof err)) {
        log_error("judge: %s", err);
        return KZ_EINVAL;
    }
    judge *e = xcalloc(1, sizeof *e);
    e->g = c->g;
    e->gb = gb;
    snprintf(e->level, sizeof e->level, "%s", c->cfg.judge);
    snprintf(e->fig.level, sizeof e->fig.level, "%s", c->cfg.judge);
    e->fig.games_per_best = (int)c->cfg.judge_games;
    c->judge = e;
    if (part_thread_start(&e->th, JUDGE_NICE, s_ready, s_step, e, "judge"))
        return KZ_ENOMEM;
    log_info("judge: gnubg %s rates the moves of each rated best in up to %ld of its rating "
             "games, in the background",
             e->level, c->cfg.judge_games);
    return 0;
}

void judge_post(coord *c, uint32_t version, int side, const uint8_t *rec, size_t len)
{
    judge *e = c->judge;
    if (!e || !version || !rec || !len || side < 0 || side > 1)
        return;
    if (version != e->posted_v) {
        e->posted_v = version;
        e->posted_n = 0;
    }
    if (e->posted_n >= c->cfg.judge_games)
        return;
    pthread_mutex_lock(&e->th.lock);
    if (e->q_n == JUDGE_QUEUE) {
        e->dropped++;
    } else {
        judge_job *j = &e->q[(e->q_head + e->q_n) % JUDGE_QUEUE];
        j->rec = xmalloc(len);
        memcpy(j->rec, rec, len);
        j->len = len;
        j->version = version;
        j->side = side;
        e->q_n++;
        e->posted_n++;
        e->fig.waiting = e->q_n;
        pthread_cond_signal(&e->th.changed);
    }
    pthread_mutex_unlock(&e->th.lock);
}

/* A stored point: version, games, decisions u32; mp, lo, hi f64; ms i64. */
static void s_point_read(const uint8_t *p, void *point)
{
    judge_point *q = point;
    *q = (judge_point){be_get32(p), be_get32(p + 4), be_get32(p + 8), 0, 0, 0, 0};
    uint64_t bits[3];
    for (int k = 0; k < 3; k++)
        bits[k] = be_get64(p + 12 + 8 * k);
    memcpy(&q->mp, &bits[0], 8);
    memcpy(&q->mp_lo, &bits[1], 8);
    memcpy(&q->mp_hi, &bits[2], 8);
    q->done_ms = (int64_t)be_get64(p + 36);
}

static void s_point_write(const void *point, uint8_t *p)
{
    const judge_point *q = point;
    uint64_t bits[3];
    memcpy(&bits[0], &q->mp, 8);
    memcpy(&bits[1], &q->mp_lo, 8);
    memcpy(&bits[2], &q->mp_hi, 8);
    be_put32(p, q->version);
    be_put32(p + 4, q->games);
    be_put32(p + 8, q->decisions);
    for (int k = 0; k < 3; k++)
        be_put64(p + 12 + 8 * k, bits[k]);
    be_put64(p + 36, (uint64_t)q->done_ms);
}

static const meta_history s_hist = {.key = "judge_history", .magic = HIST_MAGIC,
                                    .what = "judge", .bytes = HIST_BYTES,
                                    .max = JUDGE_HISTORY, .size = sizeof(judge_point),
                                    .decode = s_point_read, .encode = s_point_write};

/* After the history was read (a restart): the newest judged best is
 * /status's until a newer one is judged. */
static void s_hist_loaded(judge *e)
{
    pthread_mutex_lock(&e->th.lock);
    if (!e->fig.version && e->n_hist > 0) {
        const judge_point *q = &e->hist[e->n_hist - 1];
        e->fig.version = q->version;
        e->fig.games = (int)q->games;
        e->fig.decisions = (long)q->decisions;
        e->fig.mp = q->mp;
        e->fig.mp_lo = q->mp_lo;
        e->fig.mp_hi = q->mp_hi;
        e->fig.done_ms = q->done_ms;
    }
    pthread_mutex_unlock(&e->th.lock);
}

void judge_tick(coord *c)
{
    judge *e = c->judge;
    if (!e || !c->st)
        return;
    if (coord_history_sync(c, &s_hist, &e->sync, e->hist, &e->n_hist, &e->th.lock, &e->results))
        s_hist_loaded(e);
}

bool judge_get(coord *c, judge_figures *out)
{
    judge *e = c->judge;
    if (!e)
        return false;
    pthread_mutex_lock(&e->th.lock);
    *out = e->fig;
    out->dropped = e->dropped;
    pthread_mutex_unlock(&e->th.lock);
    return true;
}

int judge_history(coord *c, judge_point *out)
{
    judge *e = c->judge;
    return e ? part_history_copy(&e->th, out, e->hist, &e->n_hist, sizeof *out) : 0;
}

void judge_stop(coord *c)
{
    judge *e = c->judge;
    if (!e)
        return;
    part_thread_stop(&e->th);
    for (int i = 0; i < e->q_n; i++)
        free(e->q[(e->q_head + i) % JUDGE_QUEUE].rec);
    gnubg_close(e->gb);
    free(e);
    c->judge = NULL;
}
