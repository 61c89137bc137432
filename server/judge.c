/* judge: the rated bests' moves judged in their rating games, in the
 * background, by one of two judges (setting judge, docs/ratings.md "The
 * judges of the bests"):
 *  - gnubg (backgammon rated against gnubg): at the level `judge` (expert:
 *    0-ply, no noise, as make learn's --judge): millipoints of cubeless
 *    equity lost per decision (a whole move at a roll with a choice), its
 *    95% interval over the games (match_ratio) and PR (half of it);
 *  - perfect play (Khreibaga): the referee (play/referee.h, with tb_dir's
 *    tables, perfect_nodes a position) judges each whole turn of the best:
 *    value-losing turns a game (win to draw or loss, draw to loss), with its
 *    95% interval over the games; what the budget leaves open is counted as
 *    unknown, never guessed (as `kz solve referee --store D --kind rating
 *    --model V` counts the same games).
 * Up to `judge_games` games a best.
 *
 * Off the request path: ratings_apply hands a copy of a counted gauntlet
 * game's record to this module (judge_post: a bounded queue, a game more than
 * the best's quota or beyond a full queue is not judged); the thread, at a
 * lower priority, replays each record through the rules and judges it
 * (gnubg: match_judge_record with its own gnubg; perfect play: a referee made
 * for each best, its transposition table (perfect_tt_mb) freed when the
 * queue empties), and publishes the figures under a lock (judge_get,
 * judge_history, for /status and the dashboard). The history is kept in the
 * store (meta "judge_history"), so the plot survives restarts. A stop cuts
 * the queue short between two games (and the referee's search at once); the
 * waiting games are not kept, and a best judged before a restart is not
 * judged further after it (its point keeps the games judged before). */
#include <math.h>
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
#include "games/tablebase.h"
#include "play/match.h"
#include "play/referee.h"
#include "search/gnubg.h"
#include "common/util.h"

#define JUDGE_NICE 10     /* the thread's priority below the coordinator's */
#define JUDGE_QUEUE 128   /* records waiting at most */
#define JUDGE_TIMEOUT_S 60 /* gnubg's answer */
#define HIST_MAGIC "KJH1"
#define HIST_BYTES 44 /* version, games, decisions u32; rate, lo, hi f64; ms i64 (big-endian) */

typedef struct judge_job {
    uint8_t *rec;         /* the record's bytes (owned) */
    size_t len;
    uint32_t version;     /* the best whose moves are judged */
    int side;             /* its player id in the game */
} judge_job;

struct judge {
    const game_def *g;
    bool perfect;            /* perfect play judges (Khreibaga), else gnubg */
    gnubg *gb;               /* gnubg: the judge's gnubg (the thread's once started) */
    char level[32];          /* gnubg: its level; "perfect" */
    tb_set *tb;              /* perfect: tb_dir's tables (owned), NULL none */
    referee_opts ro;         /* perfect: the referee's settings */
    referee *ref;            /* perfect: the referee of ref_v's games (the thread's) */
    uint32_t ref_v;
    volatile int halt;       /* the referee's stop (set by judge_stop) */
    part_thread th;          /* the judging thread; its lock guards everything below */
    judge_job q[JUDGE_QUEUE]; /* the waiting records, a ring */
    int q_head, q_n;
    uint32_t loaded_v;       /* the newest version of the history read from the store (main
                              * thread's): its games and older ones are not judged again,
                              * since its running sums were not kept (they would start from
                              * zero and replace its point) */
    uint32_t posted_v;       /* the version whose games are being posted (main thread's) */
    int posted_n;            /* of its games, posted */
    match_ratio cur;         /* the version being judged: its error and decisions a game */
    uint32_t cur_v;
    long cur_decisions;      /* its decisions (gnubg) or settled turns (perfect) */
    long cur_losing, cur_unknown; /* perfect: its value-losing and open turns */
    judge_figures fig;       /* what /status shows */
    judge_point hist[JUDGE_HISTORY]; /* the judged versions, oldest first */
    int n_hist;
    uint64_t results;        /* games judged (the thread's count) */
    history_sync sync;       /* the history in the store (main thread's) */
};

/* The history entry of the version being judged, made or replaced (under
 * e->th.lock): coord_history_append. */
static void s_hist_put(judge *e)
{
    const judge_figures *f = &e->fig;
    judge_point q = {f->version, (uint32_t)f->games, (uint32_t)f->decisions, f->rate, f->lo,
                     f->hi, f->done_ms};
    coord_history_append(e->hist, sizeof q, &e->n_hist, JUDGE_HISTORY, &q);
}

/* perfect: the record's start and actions, gathered by record_replay. */
typedef struct judge_line {
    game_state start;
    uint16_t *actions;       /* (n_moves of the record) */
    int n;
} judge_line;

static int s_line_state(void *ctx, const game_state *s, int k, const record_move *m, int z)
{
    judge_line *l = ctx;
    (void)z;
    if (k == 0)
        l->start = *s;
    l->actions[l->n++] = m->action;
    return 0;
}

/* perfect: judges the turns of player `side` in record r with the referee of
 * version v (made when v is new): *x its value-losing turns, *y its settled
 * turns, *unknown its open ones. 0, or an error with a one-line reason. */
static int s_referee_record(judge *e, const game_record *r, uint32_t v, int side, double *x,
                            double *y, long *unknown, char *err, size_t errlen)
{
    if (e->ref_v != v || !e->ref) {
        referee_destroy(&e->ref);
        e->ref = referee_new(&e->ro, err, errlen);
        if (!e->ref)
            return KZ_ENOMEM;
        e->ref_v = v;
    }
    judge_line l = {.actions = xmalloc((size_t)(r->n_moves > 0 ? r->n_moves : 1) *
                                       sizeof *l.actions)};
    int rc = record_replay(e->g, r, s_line_state, &l, err, errlen);
    referee_game rg;
    if (rc == 0 && l.n == 0)
        rc = err_set(err, errlen, KZ_EINVAL, "a record without moves");
    if (rc == 0) {
        rc = referee_game_judge(e->ref, &l.start, l.actions, l.n, &rg);
        if (rc)
            snprintf(err, errlen, "the referee: %s",
                     rc == KZ_EFULL ? "more turns than it judges" : err_str(rc));
    }
    free(l.actions);
    if (rc)
        return rc;
    long lose = 0, keep = 0, open = 0;
    for (int ph = 0; ph < YARD_PHASES; ph++) {
        keep += rg.by[ph][side][REFEREE_KEEP];
        lose += rg.by[ph][side][REFEREE_LOSE];
        open += rg.by[ph][side][REFEREE_UNKNOWN];
    }
    *x = (double)lose;
    *y = (double)(keep + lose);
    *unknown = open;
    return 0;
}

/* Judges one record (on the thread, without the lock). */
static void s_judge_one(judge *e, const judge_job *j)
{
    char err[300] = "";
    game_record *r = record_new();
    match_game mg = {0};
    double x = 0, y = 0;
    long unknown = 0;
    int rc = r ? record_unpack(j->rec, j->len, r, err, sizeof err) : KZ_ENOMEM;
    if (rc == 0 && e->perfect) {
        rc = s_referee_record(e, r, j->version, j->side, &x, &y, &unknown, err, sizeof err);
    } else if (rc == 0) {
        if (!e->gb)
            rc = gnubg_open(&e->gb, e->level, JUDGE_TIMEOUT_S, err, sizeof err);
        if (rc == 0)
            rc = match_judge_record(e->g, r, j->side, e->gb, &mg, err, sizeof err);
        if (rc == KZ_EIO) { /* gnubg failed: a new one for the next game */
            gnubg_close(e->gb);
            e->gb = NULL;
        }
        if (rc == 0) {
            x = 1000.0 * mg.loss[j->side];
            y = mg.decisions[j->side];
        }
    }
    record_destroy(&r);
    if (e->halt) /* stopped in mid-game: its open values are not the budget's */
        return;
    pthread_mutex_lock(&e->th.lock);
    if (rc) {
        snprintf(e->fig.error, sizeof e->fig.error, "v%u: %s", j->version,
                 err[0] ? err : rc == KZ_ENOMEM ? "out of memory" : err_str(rc));
        pthread_mutex_unlock(&e->th.lock);
        log_warn("judge: a game of v%u not judged: %s", j->version, e->fig.error);
        return;
    }
    if (j->version != e->cur_v) {
        e->cur_v = j->version;
        e->cur = (match_ratio){0};
        e->cur_decisions = e->cur_losing = e->cur_unknown = 0;
    }
    /* gnubg: a game without a decision adds nothing; perfect play: every
     * game counts, the rate is a game's. */
    if (e->perfect)
        match_ratio_add(&e->cur, x, 1);
    else if (y > 0)
        match_ratio_add(&e->cur, x, y);
    e->cur_decisions += (long)y;
    e->cur_losing += e->perfect ? (long)x : 0;
    e->cur_unknown += unknown;
    judge_figures *f = &e->fig;
    double rate = 0, half = 0;
    match_ratio_stats(&e->cur, &rate, &half);
    f->version = j->version;
    f->games = e->cur.n;
    f->decisions = e->cur_decisions;
    f->rate = rate;
    f->lo = e->perfect && rate - half < 0 ? 0 : rate - half; /* a count is not negative */
    f->hi = rate + half;
    f->losing = e->cur_losing;
    f->unknown = e->cur_unknown;
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
    if (e->q_n == 0) /* perfect: the table is held while a best's games come */
        referee_destroy(&e->ref);
}

/* The judge the setting `judge` names for this game: "perfect", a gnubg
 * level, or "" (none); auto: perfect play for the game whose tables and
 * proof search exist (Khreibaga), gnubg expert for backgammon rated
 * against gnubg, else none. */
static const char *s_judge_kind(const coord *c)
{
    const char *j = c->cfg.judge;
    bool gnubg_anchor = false;
    for (int k = 0; k < c->n_anchors; k++)
        gnubg_anchor |= !strncmp(c->anchors[k], "gnubg:", 6);
    if (!strcmp(j, "auto"))
        return c->g == tb_game() ? "perfect" : c->g == &backgammon_game && gnubg_anchor
                                                   ? "expert" : "";
    if (!strcmp(j, "perfect") || c->g != &backgammon_game || gnubg_anchor)
        return j;
    return ""; /* a gnubg level, but no gnubg anchor: nothing rated against gnubg */
}

int judge_check(const char *setting, const game_def *g, char *err, size_t errlen)
{
    if (!setting[0] || !strcmp(setting, "auto"))
        return 0;
    bool perfect = !strcmp(setting, "perfect");
    char why[400]; /* gnubg_level_check's line with a level of up to 255 bytes */
    if (!perfect && gnubg_level_check(setting, why, sizeof why))
        return err_set(err, errlen, KZ_EINVAL, "judge: %s (or perfect, auto, \"\")", why);
    if (g && perfect && g != tb_game())
        return err_set(err, errlen, KZ_EINVAL, "judge: perfect play is known for %s only, not %s",
                       tb_game()->name, g->name);
    if (g && !perfect && g != &backgammon_game)
        return err_set(err, errlen, KZ_EINVAL,
                       "judge: gnubg judges backgammon only, not %s (perfect or auto for "
                       "khreibaga, \"\" for none)", g->name);
    return 0;
}

int judge_start(coord *c)
{
    const char *kind = s_judge_kind(c);
    if (!kind[0] || c->cfg.judge_games <= 0 || c->cfg.eval_share <= 0)
        return 0;
    bool perfect = !strcmp(kind, "perfect");
    char err[300];
    if (judge_check(kind, c->g, err, sizeof err)) {
        log_error("%s", err);
        return KZ_EINVAL;
    }
    gnubg *gb = NULL;
    tb_set *tb = NULL;
    if (!perfect && gnubg_open(&gb, kind, JUDGE_TIMEOUT_S, err, sizeof err)) {
        log_error("judge: %s", err);
        return KZ_EINVAL;
    }
    if (perfect && c->cfg.tb_dir[0] && !(tb = tb_open(c->cfg.tb_dir, 0, err, sizeof err))) {
        log_error("tb_dir: %s", err);
        return KZ_EINVAL;
    }
    judge *e = xcalloc(1, sizeof *e);
    e->g = c->g;
    e->perfect = perfect;
    e->gb = gb;
    e->tb = tb;
    e->ro = (referee_opts){.tables = tb, .nodes = (uint64_t)c->cfg.perfect_nodes,
                           .tt_bytes = (uint64_t)c->cfg.perfect_tt_mb << 20, .stop = &e->halt};
    snprintf(e->level, sizeof e->level, "%s", kind);
    snprintf(e->fig.level, sizeof e->fig.level, "%s", kind);
    e->fig.perfect = perfect;
    e->fig.tables = tb ? tb_pieces(tb) : 0;
    e->fig.nodes = perfect ? c->cfg.perfect_nodes : 0;
    e->fig.games_per_best = (int)c->cfg.judge_games;
    c->judge = e;
    if (part_thread_start(&e->th, JUDGE_NICE, s_ready, s_step, e, "judge"))
        return KZ_ENOMEM;
    if (perfect)
        log_info("judge: perfect play (the referee, %ld nodes a position, tables %s) judges the "
                 "turns of each rated best in up to %ld of its rating games, in the background",
                 c->cfg.perfect_nodes, tb ? c->cfg.tb_dir : "none", c->cfg.judge_games);
    else
        log_info("judge: gnubg %s rates the moves of each rated best in up to %ld of its "
                 "rating games, in the background",
                 e->level, c->cfg.judge_games);
    return 0;
}

void judge_post(coord *c, uint32_t version, int side, const uint8_t *rec, size_t len)
{
    judge *e = c->judge;
    if (!e || !version || !rec || !len || side < 0 || side > 1 || version <= e->loaded_v)
        return;
    if (version != e->posted_v) {
        e->posted_v = version;
        e->posted_n = 0;
    }
    if (e->posted_n >= c->cfg.judge_games)
        return;
    pthread_mutex_lock(&e->th.lock);
    if (e->q_n == JUDGE_QUEUE) {
        e->fig.dropped++;
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

/* A stored point: version, games, decisions u32; rate, lo, hi f64; ms i64. */
static void s_point_read(const uint8_t *p, void *point)
{
    judge_point *q = point;
    *q = (judge_point){be_get32(p), be_get32(p + 4), be_get32(p + 8), 0, 0, 0, 0};
    uint64_t bits[3];
    for (int k = 0; k < 3; k++)
        bits[k] = be_get64(p + 12 + 8 * k);
    memcpy(&q->rate, &bits[0], 8);
    memcpy(&q->lo, &bits[1], 8);
    memcpy(&q->hi, &bits[2], 8);
    q->done_ms = (int64_t)be_get64(p + 36);
}

static void s_point_write(const void *point, uint8_t *p)
{
    const judge_point *q = point;
    uint64_t bits[3];
    memcpy(&bits[0], &q->rate, 8);
    memcpy(&bits[1], &q->lo, 8);
    memcpy(&bits[2], &q->hi, 8);
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
    e->loaded_v = e->n_hist > 0 ? e->hist[e->n_hist - 1].version : 0;
    if (!e->fig.version && e->n_hist > 0) {
        const judge_point *q = &e->hist[e->n_hist - 1];
        e->fig.version = q->version;
        e->fig.games = (int)q->games;
        e->fig.decisions = (long)q->decisions;
        e->fig.rate = q->rate;
        e->fig.lo = q->lo;
        e->fig.hi = q->hi;
        e->fig.done_ms = q->done_ms;
        /* perfect: the rate is losing / games; the open turns are not kept */
        e->fig.losing = e->perfect ? lround(q->rate * q->games) : 0;
        e->fig.unknown = e->perfect ? -1 : 0;
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
    return e && part_figures_copy(&e->th, out, &e->fig, sizeof *out);
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
    e->halt = 1;
    part_thread_stop(&e->th);
    for (int i = 0; i < e->q_n; i++)
        free(e->q[(e->q_head + i) % JUDGE_QUEUE].rec);
    gnubg_close(e->gb);
    referee_destroy(&e->ref);
    tb_close(&e->tb);
    free(e);
    c->judge = NULL;
}
