/* yardstick: the sharper yardstick of issue 24 on the current best, in the
 * background (docs/learning.md "The sharper yardstick", features.h):
 *  - perfect-play accuracy (perfect_positions, Khreibaga): the share of the
 *    raw policy's and the 200-simulation search's whole turns that keep the
 *    proven value on fixed positions (the book's first openings or
 *    perfect_file's), judged by the referee (play/referee.h) with the
 *    tables of tb_dir when set, as `kz solve accuracy` measures it;
 *  - value calibration (value_positions): the raw value head's squared
 *    error against the labels by phase, and how often 200 and 1600
 *    simulations choose different moves on the first value_compare of them
 *    (play/yardstick.h, as `kz yardstick value`);
 * a history of the measured versions for the dashboard's plots, kept in the
 * store.
 *
 * Off the request path, as endgame.c: the main loop hands a copy of a new
 * best's blob to this module's thread, at most once in yardstick_minutes
 * (a newer best replaces one still waiting); the thread, at a lower
 * priority, builds the network, measures, and publishes the figures under a
 * lock. A referee (and its transposition table, perfect_tt_mb) is made for
 * each measurement and freed after it, so that every best is judged from
 * the same start (the figures of `kz solve accuracy` with the same table
 * size) and the memory is held only while measuring. A stop cuts a
 * measurement short between two positions (and the proof search at once). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data/store.h"
#include "games/tablebase.h"
#include "nn/evaluator.h"
#include "play/match.h"
#include "play/referee.h"
#include "play/yardstick.h"
#include "search/player.h"
#include "server/features.h"
#include "server/services.h"
#include "common/util.h"

#define YARDSTICK_NICE 10  /* the thread's priority below the coordinator's */
#define PERFECT_SEED 1     /* the players' seed (kz solve accuracy --seed 1) */
#define PERFECT_CHUNK 4    /* positions a referee_accuracy_run call (a stop between) */

struct yardstick {
    const game_def *g;       /* the game */
    tb_set *tb;              /* perfect: the tables of tb_dir (owned), NULL none */
    referee_opts ro;         /* perfect: the referee's settings (one made per measurement) */
    game_state *pos;         /* (n_pos) perfect-play positions */
    int n_pos;
    game_state *val;         /* (n_val) labelled positions */
    int8_t *z;               /* (n_val) their labels */
    int n_val;
    int n_cmp;               /* of them, compared at two budgets (at most) */
    double interval_s;       /* a best handed over at most this often */
    volatile int halt;       /* the referee's stop (set by yardstick_stop) */
    part_thread th;          /* the measuring thread; its lock guards everything below */
    part_job job;            /* the blob to measure next, the last version handed over */
    yardstick_figures fig;   /* what /status shows */
    yardstick_point hist[YARDSTICK_HISTORY]; /* the measured versions, oldest first */
    int n_hist;              /* used */
    uint64_t results;        /* measurements published (the thread's count) */
    history_sync sync;       /* the history in the store (main thread's) */
};

#define HIST_MAGIC "YSH1"
#define HIST_BYTES 92  /* version, flags, 8 perfect u32, 3 n u32, 3 mse f64, 2 u32, done i64 */

static double s_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Adds the counts of players 0 and 1 of part to fig. */
static void s_acc_add(yardstick_figures *fig, const referee_accuracy *part)
{
    fig->settled += part->settled;
    fig->with_choice += part->with_choice;
    for (int k = 0; k < 2; k++) {
        fig->judged[k] += part->p[k].judged;
        fig->keep[k] += part->p[k].keep;
        fig->judged_choice[k] += part->p[k].judged_choice;
        fig->keep_choice[k] += part->p[k].keep_choice;
    }
}

/* One model's figures, or an error in fig->error. Runs on the thread. */
static void s_measure(yardstick *y, const uint8_t *blob, size_t len, uint32_t version,
                      yardstick_figures *fig)
{
    char err[256];
    mcts_settings lo_set = player_mcts_settings(YARDSTICK_SIMS);
    mcts_settings hi_set = player_mcts_settings(YARDSTICK_SIMS_HIGH);
    int batch = lo_set.leaves_per_tree > hi_set.leaves_per_tree ? lo_set.leaves_per_tree
                                                                 : hi_set.leaves_per_tree;
    evaluator_net *net = NULL;
    player *pol = NULL, *lo = NULL, *hi = NULL;
    referee *ref = NULL;
    referee_accuracy part;
    if (evaluator_net_from_bytes(blob, len, y->g, batch, EVALUATOR_PRECISION_DEFAULT, &net, err,
                                 sizeof err)) {
        snprintf(fig->error, sizeof fig->error, "v%u: %s", version, err);
        return;
    }
    char name[32];
    snprintf(name, sizeof name, "v%u", version);
    pol = player_policy_new_evaluator(y->g, evaluator_net_get(net), name);
    lo = pol ? player_mcts_new_evaluator(y->g, evaluator_net_get(net), &lo_set, name, err,
                                         sizeof err)
             : NULL;
    hi = lo && y->n_val && y->n_cmp
             ? player_mcts_new_evaluator(y->g, evaluator_net_get(net), &hi_set, name, err,
                                         sizeof err)
             : NULL;
    if (!lo || (y->n_val && y->n_cmp && !hi)) {
        snprintf(fig->error, sizeof fig->error, "v%u: %s", version,
                 pol ? err : "out of memory for the network");
        goto out;
    }
    double t0 = time_now(), c0 = s_thread_cpu();
    yardstick_figures f = *fig;
    f.settled = f.with_choice = 0;
    memset(f.judged, 0, sizeof f.judged), memset(f.keep, 0, sizeof f.keep);
    memset(f.judged_choice, 0, sizeof f.judged_choice);
    memset(f.keep_choice, 0, sizeof f.keep_choice);
    /* Perfect play: referee_accuracy_run a few positions at a time (each
     * player reseeded with the seed + the position's index, as in one run). */
    player *pl[2] = {pol, lo};
    if (y->n_pos && !(ref = referee_new(&y->ro, err, sizeof err))) {
        snprintf(fig->error, sizeof fig->error, "v%u: perfect-play accuracy: %s", version, err);
        goto out;
    }
    for (int i = 0; i < y->n_pos; i += PERFECT_CHUNK) {
        if (part_thread_stopping(&y->th))
            goto stopped;
        int n = y->n_pos - i < PERFECT_CHUNK ? y->n_pos - i : PERFECT_CHUNK;
        int rc = referee_accuracy_run(ref, pl, 2, &y->pos[i], n, PERFECT_SEED + (uint64_t)i,
                                      NULL, NULL, &part);
        if (rc) {
            snprintf(fig->error, sizeof fig->error, "v%u: perfect-play accuracy: %s", version,
                     err_str(rc));
            goto out;
        }
        s_acc_add(&f, &part);
    }
    /* Value calibration, a position at a time (yard_value_measure's seeds). */
    yard_value v;
    memset(&v, 0, sizeof v);
    for (int i = 0; i < y->n_val; i++) {
        if (part_thread_stopping(&y->th))
            goto stopped;
        int rc = yard_value_add(y->g, pol, lo, hi, &y->val[i], y->z[i], (uint64_t)i,
                                i < y->n_cmp, NULL, &v);
        if (rc) {
            snprintf(fig->error, sizeof fig->error, "v%u: value calibration: %s", version,
                     err_str(rc));
            goto out;
        }
    }
    yard_value_finish(&v);
    for (int p = 0; p < YARD_PHASES; p++) {
        f.n[p] = v.n[p];
        f.mse[p] = v.mse[p];
        f.v[p] = v.v[p];
        f.z[p] = v.z[p];
    }
    f.compared = v.compared;
    f.differ = v.differ[YARD_PHASES];
    f.version = version;
    f.seconds = time_now() - t0;
    f.cpu_seconds = s_thread_cpu() - c0;
    f.done_ms = time_wall_ms();
    f.error[0] = 0;
    *fig = f;
    goto out;
stopped:
    snprintf(fig->error, sizeof fig->error, "v%u: stopped", version);
out:
    referee_destroy(&ref);
    player_destroy(&pol);
    player_destroy(&lo);
    player_destroy(&hi);
    evaluator_net_destroy(&net);
}

/* Appends a measurement to the history (under y->th.lock): coord_history_append. */
static void s_hist_put(yardstick *y, const yardstick_point *q)
{
    coord_history_append(y->hist, sizeof *q, &y->n_hist, YARDSTICK_HISTORY, q);
}

static void s_hist_add(yardstick *y, const yardstick_figures *f)
{
    yardstick_point q = {.version = f->version, .done_ms = f->done_ms};
    q.flags = (f->perfect ? YARDSTICK_PERFECT : 0) | (f->value ? YARDSTICK_VALUE : 0);
    for (int k = 0; k < 2; k++) {
        q.judged[k] = (uint32_t)f->judged[k];
        q.keep[k] = (uint32_t)f->keep[k];
        q.judged_choice[k] = (uint32_t)f->judged_choice[k];
        q.keep_choice[k] = (uint32_t)f->keep_choice[k];
    }
    for (int p = 0; p < YARD_PHASES; p++) {
        q.n[p] = (uint32_t)f->n[p];
        q.mse[p] = f->mse[p];
    }
    q.compared = (uint32_t)f->compared;
    q.differ = (uint32_t)f->differ;
    s_hist_put(y, &q);
    y->results++;
}

/* A point from its stored bytes (the first HIST_BYTES of a stored point). */
static void s_point_read(const uint8_t *p, void *point)
{
    yardstick_point *q = point;
    memset(q, 0, sizeof *q);
    q->version = be_get32(p);
    q->flags = be_get32(p + 4);
    for (int k = 0; k < 2; k++) {
        q->judged[k] = be_get32(p + 8 + 4 * k);
        q->keep[k] = be_get32(p + 16 + 4 * k);
        q->judged_choice[k] = be_get32(p + 24 + 4 * k);
        q->keep_choice[k] = be_get32(p + 32 + 4 * k);
    }
    for (int ph = 0; ph < YARD_PHASES; ph++) {
        q->n[ph] = be_get32(p + 40 + 4 * ph);
        uint64_t bits = be_get64(p + 52 + 8 * ph);
        memcpy(&q->mse[ph], &bits, sizeof bits);
    }
    q->compared = be_get32(p + 76);
    q->differ = be_get32(p + 80);
    q->done_ms = (int64_t)be_get64(p + 84);
}

static void s_point_write(const void *point, uint8_t *p)
{
    const yardstick_point *q = point;
    be_put32(p, q->version);
    be_put32(p + 4, q->flags);
    for (int k = 0; k < 2; k++) {
        be_put32(p + 8 + 4 * k, q->judged[k]);
        be_put32(p + 16 + 4 * k, q->keep[k]);
        be_put32(p + 24 + 4 * k, q->judged_choice[k]);
        be_put32(p + 32 + 4 * k, q->keep_choice[k]);
    }
    for (int ph = 0; ph < YARD_PHASES; ph++) {
        be_put32(p + 40 + 4 * ph, q->n[ph]);
        uint64_t bits;
        memcpy(&bits, &q->mse[ph], sizeof bits);
        be_put64(p + 52 + 8 * ph, bits);
    }
    be_put32(p + 76, q->compared);
    be_put32(p + 80, q->differ);
    be_put64(p + 84, (uint64_t)q->done_ms);
}

static const meta_history s_hist = {.key = "yardstick_history", .magic = HIST_MAGIC,
                                    .what = "yardstick", .bytes = HIST_BYTES,
                                    .max = YARDSTICK_HISTORY, .sized = true,
                                    .size = sizeof(yardstick_point),
                                    .decode = s_point_read, .encode = s_point_write};

static void s_log(const yardstick_figures *f)
{
    char perfect[256] = "", value[256] = "";
    if (f->perfect)
        snprintf(perfect, sizeof perfect,
                 "; perfect play on %d positions (%d settled, %d with a value-losing turn): "
                 "policy %d of %d keep the value (%d of %d where a turn loses it), search (%d "
                 "simulations) %d of %d (%d of %d)",
                 f->perfect, f->settled, f->with_choice, f->keep[0], f->judged[0],
                 f->keep_choice[0], f->judged_choice[0], YARDSTICK_SIMS, f->keep[1],
                 f->judged[1], f->keep_choice[1], f->judged_choice[1]);
    if (f->value) {
        double all = 0;
        int n = 0;
        for (int p = 0; p < YARD_PHASES; p++)
            all += f->mse[p] * f->n[p], n += f->n[p];
        snprintf(value, sizeof value,
                 "; value error on %d labelled positions %.3f (opening %.3f, middle %.3f, "
                 "ending %.3f), %d and %d simulations differ in %d of %d",
                 f->value, n ? all / n : 0.0, f->mse[0], f->mse[1], f->mse[2], YARDSTICK_SIMS,
                 YARDSTICK_SIMS_HIGH, f->differ, f->compared);
    }
    log_info("yardstick of v%u in %.1f s (%.1f s CPU)%s%s", f->version, f->seconds,
             f->cpu_seconds, perfect, value);
}

/* The thread's part_thread hooks: whether a blob waits; measuring it. */
static bool s_ready(void *arg) { return ((yardstick *)arg)->job.blob != NULL; }

static void s_step(void *arg)
{
    yardstick *y = arg;
    size_t len;
    uint32_t version;
    uint8_t *blob = part_job_take(&y->job, &len, &version);
    y->fig.computing = version;
    yardstick_figures fig = y->fig;
    pthread_mutex_unlock(&y->th.lock);
    s_measure(y, blob, len, version, &fig);
    free(blob);
    pthread_mutex_lock(&y->th.lock);
    fig.computing = 0;
    y->fig = fig;
    if (fig.error[0]) {
        log_warn("yardstick: %s", fig.error);
    } else {
        s_hist_add(y, &fig);
        s_log(&fig);
    }
}

/* Frees what yardstick_start made (the thread not started). */
static void s_free(yardstick *y)
{
    tb_close(&y->tb);
    free(y->pos);
    free(y->val);
    free(y->z);
    free(y->job.blob);
    free(y);
}

/* The perfect-play positions: perfect_file's first perfect_positions, or
 * the book's (match_openings from book_seed, as coord_book_make). */
static int s_perfect_positions(coord *c, yardstick *y)
{
    char err[512];
    int want = (int)c->cfg.perfect_positions;
    if (c->cfg.perfect_file[0]) {
        game_state *all = xmalloc(YARD_MAX_BOOK * sizeof *all);
        int n = 0;
        if (yard_read(c->g, c->cfg.perfect_file, all, NULL, YARD_MAX_BOOK, &n, err, sizeof err)) {
            log_error("perfect_file: %s", err);
            free(all);
            return KZ_EINVAL;
        }
        y->n_pos = n < want ? n : want;
        y->pos = xmalloc((size_t)y->n_pos * sizeof *y->pos);
        memcpy(y->pos, all, (size_t)y->n_pos * sizeof *y->pos);
        free(all);
        return 0;
    }
    int book = (int)c->cfg.book_openings;
    y->pos = xcalloc((size_t)book, sizeof *y->pos);
    int rc = match_openings(c->g, book, 0, (uint64_t)c->cfg.book_seed, y->pos);
    if (rc) {
        log_error("perfect_positions: cannot make the book: %s", err_str(rc));
        return rc;
    }
    y->n_pos = want < book ? want : book;
    return 0;
}

int yardstick_start(coord *c)
{
    const coord_config *cfg = &c->cfg;
    if (cfg->perfect_positions == 0 && !cfg->value_positions[0]) {
        if (cfg->perfect_file[0]) {
            log_error("perfect_file: needs perfect_positions above 0 (how many of its "
                      "positions)");
            return KZ_EINVAL;
        }
        return 0;
    }
    if (cfg->perfect_positions > 0 && c->g != tb_game()) {
        log_error("perfect_positions: perfect play is known for %s only, not %s",
                  tb_game()->name, c->g->name);
        return KZ_EINVAL;
    }
    if (cfg->perfect_file[0] && cfg->perfect_positions == 0) {
        log_error("perfect_file: needs perfect_positions above 0 (how many of its positions)");
        return KZ_EINVAL;
    }
    char err[512];
    yardstick *y = xcalloc(1, sizeof *y);
    y->g = c->g;
    y->interval_s = cfg->yardstick_minutes * 60;
    if (cfg->perfect_positions > 0) {
        if (s_perfect_positions(c, y)) {
            s_free(y);
            return KZ_EINVAL;
        }
        if (cfg->tb_dir[0]) {
            y->tb = tb_open(cfg->tb_dir, 0, err, sizeof err);
            if (!y->tb) {
                log_error("tb_dir: %s", err);
                s_free(y);
                return KZ_EINVAL;
            }
        }
        y->ro = (referee_opts){.tables = y->tb, .nodes = (uint64_t)cfg->perfect_nodes,
                               .tt_bytes = (uint64_t)cfg->perfect_tt_mb << 20, .stop = &y->halt};
        referee *r = referee_new(&y->ro, err, sizeof err); /* can it be made? */
        if (!r) {
            log_error("perfect_tt_mb: %s", err);
            s_free(y);
            return KZ_EINVAL;
        }
        referee_destroy(&r);
    }
    if (cfg->value_positions[0]) {
        y->val = xmalloc(YARD_MAX_BOOK * sizeof *y->val);
        y->z = xmalloc(YARD_MAX_BOOK);
        if (yard_read(c->g, cfg->value_positions, y->val, y->z, YARD_MAX_BOOK, &y->n_val, err,
                      sizeof err)) {
            log_error("value_positions: %s", err);
            s_free(y);
            return KZ_EINVAL;
        }
        y->n_cmp = (int)cfg->value_compare < y->n_val ? (int)cfg->value_compare : y->n_val;
    }
    y->fig.perfect = y->n_pos;
    y->fig.perfect_pieces = y->tb ? tb_pieces(y->tb) : 0;
    y->fig.perfect_nodes = cfg->perfect_nodes;
    y->fig.value = y->n_val;
    y->fig.value_compare = y->n_cmp;
    y->fig.interval_min = cfg->yardstick_minutes;
    c->yardstick = y;
    if (part_thread_start(&y->th, YARDSTICK_NICE, s_ready, s_step, y, "yardstick"))
        return KZ_ENOMEM;
    log_info("yardstick: perfect-play accuracy on %d positions (%s, tables %s), value "
             "calibration on %d labelled positions (%d compared at %d and %d simulations); "
             "the best measured in the background at most every %g minutes",
             y->n_pos, cfg->perfect_file[0] ? cfg->perfect_file : "the book's openings",
             y->tb ? cfg->tb_dir : "none", y->n_val, y->n_cmp, YARDSTICK_SIMS,
             YARDSTICK_SIMS_HIGH, cfg->yardstick_minutes);
    return 0;
}

void yardstick_tick(coord *c)
{
    yardstick *y = c->yardstick;
    if (!y)
        return;
    coord_history_sync(c, &s_hist, &y->sync, y->hist, &y->n_hist, &y->th.lock, &y->results);
    part_job_post(c, &y->th, &y->job, y->interval_s, y->fig.error, sizeof y->fig.error);
}

int yardstick_history(coord *c, yardstick_point *out)
{
    yardstick *y = c->yardstick;
    return y ? part_history_copy(&y->th, out, y->hist, &y->n_hist, sizeof *out) : 0;
}

bool yardstick_get(coord *c, yardstick_figures *out)
{
    yardstick *y = c->yardstick;
    return y && part_figures_copy(&y->th, out, &y->fig, sizeof *out);
}

void yardstick_stop(coord *c)
{
    yardstick *y = c->yardstick;
    if (!y)
        return;
    y->halt = 1; /* a measurement under way ends at the referee's next check */
    part_thread_stop(&y->th);
    s_free(y);
    c->yardstick = NULL;
}
