/* endgame: the endgame accuracy of the current best (setting tb_dir,
 * docs/tablebase.md): the share of value-keeping moves of its raw policy
 * and of its 200-simulation search on a fixed test set of table positions
 * (tb_test_positions, as `kz tb accuracy` measures it), and its raw value
 * head's mean squared error against the positions' exact values, once per
 * new best; a history of the measured versions for the dashboard's plot,
 * kept in the store.
 *
 * Off the request path: the main loop only notices a new best and hands a
 * copy of its blob to this module's thread (endgame_tick: a newer best
 * replaces one still waiting); the thread, at a lower priority, builds the
 * network and plays the test set, then publishes the figures under a lock
 * (endgame_get, for /status). A stop cuts a measurement short between two
 * positions. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"
#include "server/features.h"
#include "server/services.h"
#include "nn/evaluator.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "search/player.h"
#include "games/tablebase.h"
#include "common/util.h"

#define ENDGAME_NICE 10 /* the thread's priority below the coordinator's */

struct endgame {
    const game_def *g;       /* the game */
    tb_set *tb;              /* the tables (owned) */
    game_state *st;          /* (n) the test set */
    uint16_t *keep;          /* (n) each position's value-keeping action */
    int8_t *z;               /* (n) each position's exact value, mover's view */
    int n;                   /* test positions */
    double chance;           /* mean of 1 / legal actions over them */
    part_thread th;          /* the measuring thread; its lock guards everything below */
    part_job job;            /* the blob to measure next, the last version handed over */
    endgame_figures fig;     /* what /status shows */
    endgame_point hist[ENDGAME_HISTORY]; /* the measured versions, oldest first */
    int n_hist;              /* used */
    uint64_t results;        /* measurements published (the thread's count) */
    history_sync sync;       /* the history in the store (main thread's) */
};

#define HIST_MAGIC "EGH1"
#define HIST_BYTES 32 /* a point: version, positions, policy, search u32, mse f64, ms i64 */

/* One model's figures, or an error in fig->error. Runs on the thread. */
static void s_measure(endgame *e, const uint8_t *blob, size_t len, uint32_t version,
                      endgame_figures *fig)
{
    char err[256];
    mcts_settings ms = player_mcts_settings(TB_TEST_SIMULATIONS);
    evaluator_net *net = NULL;
    if (evaluator_net_from_bytes(blob, len, e->g, ms.leaves_per_tree, EVALUATOR_PRECISION_DEFAULT,
                                 &net, err, sizeof err)) {
        snprintf(fig->error, sizeof fig->error, "v%u: %s", version, err);
        return;
    }
    char name[32];
    snprintf(name, sizeof name, "v%u", version);
    player *pol = net ? player_policy_new_evaluator(e->g, evaluator_net_get(net), name) : NULL;
    player *srch = pol ? player_mcts_new_evaluator(e->g, evaluator_net_get(net), &ms, name, err,
                                                   sizeof err)
                       : NULL;
    if (!srch) {
        snprintf(fig->error, sizeof fig->error, "v%u: %s", version,
                 pol ? err : "out of memory for the network");
        goto out;
    }
    double t0 = time_now();
    int right[2] = {0, 0};
    double sq = 0;
    player *p[2] = {pol, srch};
    for (int i = 0; i < e->n; i++) {
        if (part_thread_stopping(&e->th)) {
            snprintf(fig->error, sizeof fig->error, "v%u: stopped", version);
            goto out;
        }
        /* As player_accuracy plays them: a new game per position, seeded by its index. */
        for (int k = 0; k < 2; k++) {
            int action = -1;
            player_info info = {0};
            player_new_game(p[k], (uint64_t)i);
            int rc = player_choose(p[k], &e->st[i], &action, k == 0 ? &info : NULL);
            if (rc) {
                snprintf(fig->error, sizeof fig->error, "v%u: the player failed: %s", version,
                         err_str(rc));
                goto out;
            }
            right[k] += action == e->keep[i];
            if (k == 0) /* the raw network's value (a policy player's info.value) */
                sq += ((double)info.value - e->z[i]) * ((double)info.value - e->z[i]);
        }
    }
    fig->value_mse = sq / e->n;
    fig->version = version;
    fig->policy = right[0];
    fig->search = right[1];
    fig->seconds = time_now() - t0;
    fig->done_ms = time_wall_ms();
    fig->error[0] = 0;
out:
    player_destroy(&pol);
    player_destroy(&srch);
    evaluator_net_destroy(&net);
}

/* Appends a measurement to the history (under e->lock): coord_history_append. */
static void s_hist_add(endgame *e, const endgame_figures *f)
{
    endgame_point q = {f->version, (uint32_t)f->positions, (uint32_t)f->policy,
                       (uint32_t)f->search, f->value_mse, f->done_ms};
    coord_history_append(e->hist, sizeof q, &e->n_hist, ENDGAME_HISTORY, &q);
    e->results++;
}

/* A stored point: version, positions, policy, search u32, mse f64, ms i64. */
static void s_point_read(const uint8_t *p, void *point)
{
    endgame_point *q = point;
    uint64_t bits = be_get64(p + 16);
    *q = (endgame_point){be_get32(p), be_get32(p + 4), be_get32(p + 8), be_get32(p + 12), 0,
                         (int64_t)be_get64(p + 24)};
    memcpy(&q->value_mse, &bits, sizeof bits);
}

static void s_point_write(const void *point, uint8_t *p)
{
    const endgame_point *q = point;
    uint64_t bits;
    memcpy(&bits, &q->value_mse, sizeof bits);
    be_put32(p, q->version);
    be_put32(p + 4, q->positions);
    be_put32(p + 8, q->policy);
    be_put32(p + 12, q->search);
    be_put64(p + 16, bits);
    be_put64(p + 24, (uint64_t)q->done_ms);
}

static const meta_history s_hist = {.key = "endgame_history", .magic = HIST_MAGIC,
                                    .what = "endgame accuracy", .bytes = HIST_BYTES,
                                    .max = ENDGAME_HISTORY, .size = sizeof(endgame_point),
                                    .decode = s_point_read, .encode = s_point_write};

/* The thread's part_thread hooks: whether a blob waits; measuring it. */
static bool s_ready(void *arg) { return ((endgame *)arg)->job.blob != NULL; }

static void s_step(void *arg)
{
    endgame *e = arg;
    size_t len;
    uint32_t version;
    uint8_t *blob = part_job_take(&e->job, &len, &version);
    e->fig.computing = version;
    endgame_figures fig = e->fig;
    pthread_mutex_unlock(&e->th.lock);
    s_measure(e, blob, len, version, &fig);
    free(blob);
    pthread_mutex_lock(&e->th.lock);
    fig.computing = 0;
    e->fig = fig;
    if (fig.error[0])
        log_warn("endgame accuracy: %s", fig.error);
    else {
        s_hist_add(e, &fig);
        log_info("endgame accuracy of v%u on %d table positions (up to %d pieces): policy "
                 "%.1f%%, search (%d simulations) %.1f%% (chance %.1f%%), value error %.3f "
                 "in %.1f s",
                 fig.version, fig.positions, fig.pieces, 100.0 * fig.policy / fig.positions,
                 TB_TEST_SIMULATIONS, 100.0 * fig.search / fig.positions, 100 * fig.chance,
                 fig.value_mse, fig.seconds);
    }
}

int endgame_start(coord *c)
{
    if (!c->cfg.tb_dir[0])
        return 0;
    if (c->g != tb_game()) {
        log_error("tb_dir: the endgame tables are %s's, not %s's", tb_game()->name, c->g->name);
        return KZ_EINVAL;
    }
    char err[512];
    tb_set *tb = tb_open(c->cfg.tb_dir, 0, err, sizeof err);
    if (!tb || tb_pieces(tb) < 3) {
        log_error("tb_dir: %s", tb ? "the tables stop below 3 pieces (kz tb build --pieces 5)"
                                   : err);
        tb_close(&tb);
        return KZ_EINVAL;
    }
    endgame *e = xcalloc(1, sizeof *e);
    e->g = c->g;
    e->tb = tb;
    e->st = xmalloc((size_t)c->cfg.tb_positions * sizeof *e->st);
    e->keep = xmalloc((size_t)c->cfg.tb_positions * sizeof *e->keep);
    e->n = tb_test_positions(tb, (int)c->cfg.tb_positions, TB_TEST_SEED, e->st, e->keep);
    if (e->n == 0) {
        log_error("tb_dir: no test positions in the tables of %s", c->cfg.tb_dir);
        free_all(e->st, e->keep, e);
        tb_close(&tb);
        return KZ_EINVAL;
    }
    e->z = xmalloc((size_t)e->n * sizeof *e->z);
    for (int i = 0; i < e->n; i++) {
        uint16_t legal[GAME_MAX_LEGAL];
        e->chance += 1.0 / c->g->legal_actions(&e->st[i], legal);
        int wdl = 0;
        e->z[i] = tb_probe_wdl(tb, &e->st[i], &wdl) == 0 ? (int8_t)wdl : 0;
    }
    e->chance = e->n ? e->chance / e->n : 0;
    e->fig.pieces = tb_pieces(tb);
    e->fig.positions = e->n;
    e->fig.simulations = TB_TEST_SIMULATIONS;
    e->fig.chance = e->chance;
    c->endgame = e;
    if (part_thread_start(&e->th, ENDGAME_NICE, s_ready, s_step, e, "endgame accuracy"))
        return KZ_ENOMEM;
    log_info("endgame accuracy: tables up to %d pieces (%s), %d test positions, each new best "
             "measured in the background",
             e->fig.pieces, c->cfg.tb_dir, e->n);
    return 0;
}

void endgame_tick(coord *c)
{
    endgame *e = c->endgame;
    if (!e)
        return;
    coord_history_sync(c, &s_hist, &e->sync, e->hist, &e->n_hist, &e->th.lock, &e->results);
    part_job_post(c, &e->th, &e->job, 0, e->fig.error, sizeof e->fig.error);
}

int endgame_history(coord *c, endgame_point *out)
{
    endgame *e = c->endgame;
    return e ? part_history_copy(&e->th, out, e->hist, &e->n_hist, sizeof *out) : 0;
}

bool endgame_get(coord *c, endgame_figures *out)
{
    endgame *e = c->endgame;
    return e && part_figures_copy(&e->th, out, &e->fig, sizeof *out);
}

const struct tb_set *endgame_tables(const coord *c)
{
    return c->endgame ? c->endgame->tb : NULL;
}

void endgame_stop(coord *c)
{
    endgame *e = c->endgame;
    if (!e)
        return;
    part_thread_stop(&e->th);
    free_all(e->job.blob, e->st, e->keep, e->z);
    tb_close(&e->tb);
    free(e);
    c->endgame = NULL;
}
