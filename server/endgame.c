/* endgame: the endgame accuracy of the current best (setting tb_dir,
 * docs/tablebase.md): the share of value-keeping moves of its raw policy
 * and of its 200-simulation search on a fixed test set of table positions
 * (tb_test_positions, as `kz tb accuracy` measures it), once per new best.
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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
    int n;                   /* test positions */
    double chance;           /* mean of 1 / legal actions over them */
    pthread_t thread;        /* the measuring thread */
    bool started;            /* thread runs */
    pthread_mutex_t lock;    /* guards everything below */
    pthread_cond_t changed;  /* a job or the stop */
    bool stop;               /* endgame_stop was called */
    uint8_t *job;            /* the blob to measure next (owned), NULL none */
    size_t job_len;          /* its bytes */
    uint32_t job_version;    /* its version */
    uint32_t posted;         /* the last version handed over (main thread's) */
    endgame_figures fig;     /* what /status shows */
};

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
    player *p[2] = {pol, srch};
    for (int i = 0; i < e->n; i++) {
        pthread_mutex_lock(&e->lock);
        bool stop = e->stop;
        pthread_mutex_unlock(&e->lock);
        if (stop) {
            snprintf(fig->error, sizeof fig->error, "v%u: stopped", version);
            goto out;
        }
        /* As player_accuracy plays them: a new game per position, seeded by its index. */
        for (int k = 0; k < 2; k++) {
            int action = -1;
            player_new_game(p[k], (uint64_t)i);
            int rc = player_choose(p[k], &e->st[i], &action, NULL);
            if (rc) {
                snprintf(fig->error, sizeof fig->error, "v%u: the player failed: %s", version,
                         err_str(rc));
                goto out;
            }
            right[k] += action == e->keep[i];
        }
    }
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

static void *s_thread(void *arg)
{
    endgame *e = arg;
    /* Below the coordinator's own work (Linux: a thread's own nice value). */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int prio = getpriority(PRIO_PROCESS, (id_t)tid);
    setpriority(PRIO_PROCESS, (id_t)tid, prio + ENDGAME_NICE > 19 ? 19 : prio + ENDGAME_NICE);
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (!e->stop && !e->job)
            pthread_cond_wait(&e->changed, &e->lock);
        if (e->stop)
            break;
        uint8_t *blob = e->job;
        size_t len = e->job_len;
        uint32_t version = e->job_version;
        e->job = NULL;
        e->fig.computing = version;
        endgame_figures fig = e->fig;
        pthread_mutex_unlock(&e->lock);
        s_measure(e, blob, len, version, &fig);
        free(blob);
        pthread_mutex_lock(&e->lock);
        fig.computing = 0;
        e->fig = fig;
        if (fig.error[0])
            log_warn("endgame accuracy: %s", fig.error);
        else
            log_info("endgame accuracy of v%u on %d table positions (up to %d pieces): policy "
                     "%.1f%%, search (%d simulations) %.1f%% (chance %.1f%%) in %.1f s",
                     fig.version, fig.positions, fig.pieces, 100.0 * fig.policy / fig.positions,
                     TB_TEST_SIMULATIONS, 100.0 * fig.search / fig.positions,
                     100 * fig.chance, fig.seconds);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
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
        free(e->st);
        free(e->keep);
        free(e);
        tb_close(&tb);
        return KZ_EINVAL;
    }
    for (int i = 0; i < e->n; i++) {
        uint16_t legal[GAME_MAX_LEGAL];
        e->chance += 1.0 / c->g->legal_actions(&e->st[i], legal);
    }
    e->chance = e->n ? e->chance / e->n : 0;
    e->fig.pieces = tb_pieces(tb);
    e->fig.positions = e->n;
    e->fig.simulations = TB_TEST_SIMULATIONS;
    e->fig.chance = e->chance;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->changed, NULL);
    c->endgame = e;
    if (pthread_create(&e->thread, NULL, s_thread, e)) {
        log_error("endgame accuracy: cannot start its thread");
        return KZ_ENOMEM;
    }
    e->started = true;
    log_info("endgame accuracy: tables up to %d pieces (%s), %d test positions, each new best "
             "measured in the background",
             e->fig.pieces, c->cfg.tb_dir, e->n);
    return 0;
}

void endgame_tick(coord *c)
{
    endgame *e = c->endgame;
    if (!e || !c->best || c->best == e->posted)
        return;
    e->posted = c->best;
    const model_cache_entry *me = coord_model(c, c->best);
    pthread_mutex_lock(&e->lock);
    if (!me) {
        snprintf(e->fig.error, sizeof e->fig.error, "v%u: the model cannot be read", c->best);
    } else {
        free(e->job); /* a best still waiting is measured no more: this one is newer */
        e->job = xmalloc(me->len);
        memcpy(e->job, me->blob, me->len);
        e->job_len = me->len;
        e->job_version = c->best;
        pthread_cond_signal(&e->changed);
    }
    pthread_mutex_unlock(&e->lock);
}

bool endgame_get(coord *c, endgame_figures *out)
{
    endgame *e = c->endgame;
    if (!e)
        return false;
    pthread_mutex_lock(&e->lock);
    *out = e->fig;
    pthread_mutex_unlock(&e->lock);
    return true;
}

void endgame_stop(coord *c)
{
    endgame *e = c->endgame;
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        pthread_cond_signal(&e->changed);
        pthread_mutex_unlock(&e->lock);
        pthread_join(e->thread, NULL);
    }
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->changed);
    free(e->job);
    free(e->st);
    free(e->keep);
    tb_close(&e->tb);
    free(e);
    c->endgame = NULL;
}
