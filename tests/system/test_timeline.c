/* The run's history (server/timeline.c) against the real kz-coordinator:
 * GET /timeline counts every stored game once, in contiguous intervals,
 * carries the trainer's report, stays within timeline_points while the
 * counts add up, and survives a restart of the coordinator. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "net/client.h"
#include "tests/harness/harness.h"
#include "common/util.h"
#include "net/wire.h"

TestSuite(timeline, .fini = harness_cleanup);

/* What the test reads of /timeline. */
typedef struct tl_sum {
    int n;                /* points */
    double games;         /* sum over the points */
    double positions;     /* sum */
    double sp_games;      /* sum of selfplay.games */
    double sp_results;    /* sum of first_wins + second_wins + draws */
    double sp_plies;      /* sum of selfplay.plies */
    double first_t0;      /* t0_ms of the oldest point */
    double last_t1;       /* t1_ms of the newest */
    int gaps;             /* points whose t0 is not the previous t1 */
    double max_step;      /* highest trainer step, -1 none */
    double loss;          /* the loss at that step */
} tl_sum;

static tl_sum s_read(const harness *h)
{
    char *doc = NULL;
    int rc = http_get(NULL, "127.0.0.1", h->http_port, "/timeline", &doc);
    cr_assert_eq(rc, 0, "GET /timeline: %d; %s", rc, harness_read(h->coord_log));
    cr_assert(json_valid(doc), "%.2000s", doc);
    tl_sum s = {.max_step = -1};
    double prev_t1 = NAN;
    for (;; s.n++) {
        char path[64];
        double t0, t1, v;
        snprintf(path, sizeof path, "points.%d.t0_ms", s.n);
        if (!json_number(doc, path, &t0))
            break;
        snprintf(path, sizeof path, "points.%d.t1_ms", s.n);
        cr_assert(json_number(doc, path, &t1) && t1 >= t0, "%s", path);
        if (s.n == 0)
            s.first_t0 = t0;
        else if (t0 != prev_t1)
            s.gaps++;
        cr_assert(s.n == 0 || t0 >= prev_t1, "points in time order");
        prev_t1 = s.last_t1 = t1;
        static const char *const keys[] = {"games", "positions", "selfplay.games",
                                           "selfplay.first_wins", "selfplay.second_wins",
                                           "selfplay.draws", "selfplay.plies"};
        double *to[] = {&s.games, &s.positions, &s.sp_games, &s.sp_results, &s.sp_results,
                        &s.sp_results, &s.sp_plies};
        for (int k = 0; k < 7; k++) {
            snprintf(path, sizeof path, "points.%d.%s", s.n, keys[k]);
            cr_assert(json_number(doc, path, &v), "%s", path);
            *to[k] += v;
        }
        snprintf(path, sizeof path, "points.%d.trainer.step", s.n);
        if (json_number(doc, path, &v) && v > s.max_step) {
            s.max_step = v;
            snprintf(path, sizeof path, "points.%d.trainer.loss", s.n);
            cr_assert(json_number(doc, path, &s.loss));
        }
    }
    free(doc);
    return s;
}

/* Waits until /timeline holds `games` games and at least min_n points. */
static tl_sum s_wait(const harness *h, double games, int min_n)
{
    tl_sum s;
    for (double end = harness_now() + 20;; harness_sleep(0.05)) {
        s = s_read(h);
        if ((s.games >= games && s.n >= min_n) || harness_now() > end)
            break;
    }
    cr_assert(s.games == games && s.n >= min_n,
              "the timeline shows %g games in %d points, expected %g in at least %d", s.games,
              s.n, games, min_n);
    return s;
}

static void s_report_trainer(const harness *h, uint64_t step, float loss)
{
    void *zctx = zmq_ctx_new();
    client *t = harness_client(zctx, h->endpoint, NULL, "trainer-t", "trainer", 3000);
    wire_trainer_stats st = {.step = step, .loss = loss, .policy_loss = loss - 1,
                             .value_loss = 0.5f, .learning_rate = 0.01f};
    cr_assert_eq(client_report_stats(t, &st), 0, "%s", client_last_error(t));
    client_destroy(&t);
    zmq_ctx_term(zctx);
}

Test(timeline, counts_every_game_once_stays_bounded_and_survives_a_restart)
{
    harness h;
    harness_init(&h, "timeline");
    const char *const extra[] = {"--timeline_s=0.1", "--timeline_points=16", NULL};
    harness_coord_start(&h, extra);
    harness_submit_random_games(&h, 6, 300);
    s_report_trainer(&h, 7, 4.25f);

    /* Step 1. Every game in exactly one interval, with its positions and
     * its result; the trainer's report in a later point. */
    tl_sum s = s_wait(&h, 6, 2);
    for (double end = harness_now() + 20; s.max_step < 7 && harness_now() < end;
         harness_sleep(0.05))
        s = s_read(&h);
    cr_assert_eq(s.max_step, 7, "the trainer's step is in the timeline");
    cr_assert_float_eq(s.loss, 4.25, 1e-4);
    cr_assert_eq(s.sp_games, 6, "random games are self-play games");
    cr_assert_eq(s.sp_results, 6, "each has one result");
    cr_assert_gt(s.sp_plies, 6);
    double positions = harness_status_num(&h, "\"replay\"", "positions");
    cr_assert_eq(s.positions, positions, "positions %g, the store has %g", s.positions, positions);
    cr_assert_eq(s.gaps, 0, "the intervals follow each other");

    /* Step 2. Bounded: at 0.1 s a point, 16 are reached within seconds;
     * merging keeps the counts and the start of the run. */
    tl_sum full = s_wait(&h, 6, 16);
    double start = full.first_t0;
    cr_assert_eq(full.first_t0, s.first_t0, "thinning keeps the start of the run");
    for (double end = harness_now() + 20;
         harness_now() < end && full.last_t1 < s.last_t1 + 1500; harness_sleep(0.1))
        full = s_read(&h);
    cr_assert_eq(full.n, 16, "at most timeline_points points (%d)", full.n);
    cr_assert_eq(full.games, 6);
    cr_assert_eq(full.positions, positions);
    cr_assert_eq(full.first_t0, start);
    cr_assert_eq(full.gaps, 0);

    /* Step 3. A restart: the points come back from the store; the time the
     * coordinator was down is a gap; new games add up. */
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, extra);
    tl_sum back = s_read(&h);
    cr_assert_geq(back.n, 15, "the points were kept (%d)", back.n);
    cr_assert_eq(back.games, 6);
    cr_assert_eq(back.first_t0, start);
    harness_submit_random_games(&h, 3, 400);
    tl_sum after = s_wait(&h, 9, 16);
    cr_assert_eq(after.first_t0, start);
    cr_assert_leq(after.n, 16);
    cr_assert_eq(after.gaps, 1, "one gap: the restart");
    cr_assert_eq(after.sp_games, 9);
    cr_assert_eq(after.max_step, 7, "the trainer's last report survives in the points");
    harness_fini(&h);
}

/* v1's self-play games in /models (the network list's "games"), once it reads
 * `want` (the snapshot is rebuilt every status_ms). */
static double s_v1_selfplay(const harness *h, double want)
{
    double got = -1;
    for (double end = harness_now() + 20;; harness_sleep(0.05)) {
        char *doc = NULL;
        int rc = http_get(NULL, "127.0.0.1", h->http_port, "/models?offset=0&limit=1", &doc);
        cr_assert_eq(rc, 0, "GET /models: %d; %s", rc, harness_read(h->coord_log));
        double v = 0;
        cr_assert(json_number(doc, "models.0.version", &v) && v == 1, "%.500s", doc);
        cr_assert(json_number(doc, "models.0.selfplay_games", &got), "%.500s", doc);
        free(doc);
        if (got == want || harness_now() > end)
            return got;
    }
}

Test(timeline, the_self_play_games_per_network_survive_a_restart)
{
    harness h;
    harness_init(&h, "selfplay-count");
    harness_coord_start(&h, NULL);
    harness_submit_random_games(&h, 5, 500);
    cr_assert_eq(s_v1_selfplay(&h, 5), 5, "v1 played the 5 games");

    /* A stop writes the counts; the next start reads them back. */
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, NULL);
    cr_assert_eq(s_v1_selfplay(&h, 5), 5, "the count was kept across the restart (was: 0)");
    harness_submit_random_games(&h, 3, 600);
    cr_assert_eq(s_v1_selfplay(&h, 8), 8, "new games add to it");

    /* Without a stop: a count goes with the next batch, or alone after a
     * second; a SIGKILL once it is written loses nothing. */
    harness_sleep(1.5);
    harness_coord_kill(&h, SIGKILL);
    harness_coord_start(&h, NULL);
    cr_assert_eq(s_v1_selfplay(&h, 8), 8, "the count was written before the SIGKILL");
    harness_fini(&h);
}
