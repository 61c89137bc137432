/* Tests of the cluster's ratings on the real binaries (issue "Learning that
 * shows"): the coordinator hands out rating jobs (each side a model or a
 * baseline anchor, every book opening played with both colours), checks the
 * records against the match (sides, slot, colour, opening) and counts them in
 * tallies persisted with the games; a real kz-worker plays a whole gauntlet
 * and the anchors' calibration; the fit anchors random at 0 and survives a
 * restart; kz ratings prints the pool. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "net/client.h"
#include "tests/harness/harness.h"
#include "games/game.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "data/store.h"
#include "search/gnubg.h"

/* Every Criterion .timeout in the runner has one value (tools/check_timeouts.sh
 * says why: other values leak 48 bytes in Criterion's runner under make asan). */
TestSuite(ratings, .fini = harness_cleanup, .timeout = 600);

/* The end of a log for a failure message, in a static buffer: the message's
 * arguments are evaluated whether or not the assertion fails, so nothing may
 * be allocated there. */
static const char *s_tail(const char *path)
{
    static char buf[8192];
    char *text = harness_read(path);
    size_t n = text ? strlen(text) : 0;
    snprintf(buf, sizeof buf, "%s",
             text ? text + (n > sizeof buf - 1 ? n - (sizeof buf - 1) : 0) : "");
    free(text);
    return buf;
}

static client *s_client(void *zctx, const harness *h, const char *id)
{
    return harness_client(zctx, h->endpoint, NULL, id, "worker", 2000);
}

/* Waits until /status contains needle (the snapshot lags status_ms behind);
 * the last body is in buf. */
static bool s_wait_body(const harness *h, const char *needle, char *buf, size_t cap)
{
    for (double end = time_now() + 10; time_now() < end; harness_sleep(0.02))
        if (harness_http(h->http_port, "/status", buf, cap) == 200 && strstr(buf, needle))
            return true;
    return false;
}

/* A valid random-play rating record of the job's slot k: from its opening,
 * side A playing the job's colour, with the result wanted for side A (+1, 0,
 * -1; any when 2). */
static uint8_t *s_eval_record(const wire_job *job, size_t k, const char *opening, int want,
                              uint64_t *seed, size_t *len)
{
    int cp = job->candidate_players[k];
    for (;; (*seed)++) {
        validate_random_opts o = {.model_version = job->model_version,
                                  .kind = 2,
                                  .opponent_version = job->opponent_version,
                                  .candidate_player = cp,
                                  .start_position = opening,
                                  .model_player = job->model_player,
                                  .opponent_player = job->opponent_player};
        uint8_t *buf;
        cr_assert_eq(validate_random_record(game_default(), *seed, &o, &buf, len), 0);
        validator *v = validator_new(game_default(), NULL);
        validate_result r;
        cr_assert_eq(validate_record(v, buf, *len, 1, &r), VALIDATE_OK, "%s", r.detail);
        validator_destroy(&v);
        int got = r.winner < 0 ? 0 : r.winner == cp ? 1 : -1;
        if (want == 2 || got == want) {
            (*seed)++;
            return buf;
        }
        free(buf);
    }
}

Test(ratings, jobs_checked_and_counted_in_pairs)
{
    harness h;
    harness_init(&h, "rjobs");
    const char *const extra[] = {"--anchors=random,greedy", "--eval_share=1",
                                 "--calibration_pairs=2", "--eval_pairs=2",
                                 "--book_openings=10", "--arena_per_worker=16", NULL};
    harness_coord_start(&h, extra);
    void *zctx = zmq_ctx_new();
    client *w = s_client(zctx, &h, "rater");

    /* The first job is the gauntlet of the best (v1) against an anchor:
     * 2 pairs = 4 slots, one opening per pair, colours alternating. */
    wire_job_request jr = {.free_slots = 16};
    const wire_job *job;
    cr_assert_eq(client_get_job(w, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_EVAL);
    cr_assert_eq(job->n_arena, 4);
    cr_assert_eq(job->n_start, 4);
    cr_assert_eq(job->model_version, 1, "side A is the best");
    cr_assert_str_eq(job->model_player, "");
    cr_assert_eq(job->opponent_version, 0, "side B is an anchor");
    cr_assert(!strcmp(job->opponent_player, "random") || !strcmp(job->opponent_player, "greedy"),
              "%s", job->opponent_player);
    char opening[4][64], anchor[32];
    uint32_t slot[4];
    snprintf(anchor, sizeof anchor, "%s", job->opponent_player);
    for (size_t k = 0; k < 4; k++) {
        slot[k] = job->arena_slots[k];
        snprintf(opening[k], 64, "%s", job->start_positions[k]);
        cr_assert_eq(job->candidate_players[k], (int32_t)(slot[k] % 2));
        cr_assert(opening[k][0], "rating games start from book openings");
    }
    cr_assert_str_eq(opening[0], opening[1], "a pair: one opening, both colours");
    cr_assert_str_neq(opening[0], opening[2]);
    wire_job keep = *job;
    int32_t colours[4];
    for (size_t k = 0; k < 4; k++)
        colours[k] = job->candidate_players[k];
    keep.candidate_players = colours;
    keep.model_player = "";
    char anchor_b[32];
    snprintf(anchor_b, sizeof anchor_b, "%s", anchor);
    keep.opponent_player = anchor_b;

    /* Forged records are refused: another opening than the slot's, and an
     * anchor the cluster does not rate. */
    uint64_t seed = 100;
    size_t len;
    uint8_t *bad = s_eval_record(&keep, 0, opening[2], 2, &seed, &len);
    cr_assert_eq(client_submit_game(w, bad, len, slot[0]), 0);
    free(bad);
    keep.opponent_player = "uct:5";
    bad = s_eval_record(&keep, 0, opening[0], 2, &seed, &len);
    keep.opponent_player = anchor_b;
    cr_assert_eq(client_submit_game(w, bad, len, slot[0]), 0);
    free(bad);
    harness_client_drain(w);
    client_stats st;
    client_get_stats(w, &st);
    cr_assert_eq(st.rejected_by_reason[VALIDATE_EVAL], 2);

    /* The four games: side A wins the first pair twice (WW) and loses one
     * game of the second (WL, one opening each colour). */
    int want[4] = {1, 1, 1, -1};
    for (size_t k = 0; k < 4; k++) {
        uint8_t *rec = s_eval_record(&keep, k, opening[k], want[k], &seed, &len);
        cr_assert_eq(client_submit_game(w, rec, len, slot[k]), 0);
        free(rec);
    }
    harness_client_drain(w);
    client_get_stats(w, &st);
    cr_assert_eq(st.acked, 4);
    /* Counted: 3 wins, 1 loss; pairs WW and WL. */
    char body[1 << 16];
    char needle[160];
    bool v1_first = strcmp("v1", anchor) < 0;
    if (v1_first)
        snprintf(needle, sizeof needle,
                 "{\"a\": \"v1\", \"b\": \"%s\", \"wins\": 3, \"draws\": 0, \"losses\": 1, "
                 "\"pairs\": [0, 0, 1, 0, 1]}",
                 anchor);
    else
        snprintf(needle, sizeof needle,
                 "{\"a\": \"%s\", \"b\": \"v1\", \"wins\": 1, \"draws\": 0, \"losses\": 3, "
                 "\"pairs\": [1, 0, 1, 0, 0]}",
                 anchor);
    cr_assert(s_wait_body(&h, needle, body, sizeof body), "want %s in %s", needle, body);

    /* The tallies are kept with the games: the same after a restart. */
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, extra);
    cr_assert(s_wait_body(&h, needle, body, sizeof body), "after a restart: %s", body);
    cr_assert_not_null(strstr(body, "{\"name\": \"random\", \"anchor\": true"), "%s", body);
    client_destroy(&w);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(ratings, a_worker_plays_the_gauntlet_and_the_calibration)
{
    harness h;
    harness_init(&h, "rwork");
    const char *const extra[] = {"--anchors=random,greedy,alphabeta:1", "--eval_share=1",
                                 "--calibration_pairs=2", "--eval_pairs=3",
                                 "--eval_simulations=8", "--book_openings=20", "--gate=none",
                                 NULL};
    harness_coord_start(&h, extra);
    char log[128], a_end[96], a_sub[96];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    const char *const wargs[] = {a_end,          a_sub,           "--model_cache_dir=",
                                 "--parallel=8", "--timeout_ms=500", "--heartbeat_ms=100",
                                 "--seed=3",     NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, log);
    /* The gauntlet of v1 ends with its rating in the history. */
    double v = harness_wait_status(&h, "\"history\"", "version", 1, 90);
    cr_assert_eq(v, 1, "v1's gauntlet did not end; worker log:\n%s", s_tail(log));
    char body[1 << 16];
    cr_assert_eq(harness_http(h.http_port, "/status", body, sizeof body), 200);
    /* Three opponents at most (two anchors, no earlier best), 3 pairs each. */
    int gauntlet = 0;
    for (const char *p = body; (p = strstr(p, "\"b\": \"v1\"")) != NULL; p++)
        gauntlet++;
    for (const char *p = body; (p = strstr(p, "{\"a\": \"v1\"")) != NULL; p++)
        gauntlet++;
    cr_assert_eq(gauntlet, 2, "v1 met two anchors: %s", body);
    const char *ev = strstr(body, "\"eval\": {\"games\": ");
    cr_assert_not_null(ev, "%s", body);
    cr_assert_geq(atof(ev + strlen("\"eval\": {\"games\": ")), 12, "%s", ev);
    /* random is the zero of the scale. */
    cr_assert_not_null(strstr(body, "{\"name\": \"random\", \"anchor\": true, \"games\": "),
                       "%s", body);
    const char *r = strstr(body, "{\"name\": \"random\"");
    cr_assert_not_null(strstr(r, "\"elo\": 0.0, \"elo_lo\": 0.0, \"elo_hi\": 0.0"), "%s", r);
    /* kz ratings shows the pool. */
    char line[600], out[8192];
    snprintf(line, sizeof line, "%s/kz ratings http://127.0.0.1:%d --pairs", getenv("KZ_BIN_DIR"),
             h.http_port);
    FILE *p = popen(line, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    cr_assert_eq(pclose(p), 0, "%s", out);
    cr_assert_not_null(strstr(out, "PLAYER"), "%s", out);
    cr_assert_not_null(strstr(out, "v1 "), "%s", out);
    cr_assert_not_null(strstr(out, "random "), "%s", out);
    cr_assert_not_null(strstr(out, "the best when its gauntlet ended"), "%s", out);
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 30, &wst), "the worker did not stop");
    cr_assert_eq(harness_exit_code(wst), 0, "worker log:\n%s", s_tail(log));
    cr_assert_eq(harness_count(log, "ERROR"), 0, "%s", s_tail(log));
    harness_fini(&h);
}

/* The learning smoke test: a whole tiny cluster (coordinator, a worker, a
 * trainer: the real programs, a 1 x 8 network) learns for a minute or two,
 * and a best trained there is rated above random (0) AND above the untrained
 * v1, the lower end of its 95% interval past the upper end of v1's (or, when
 * the 360 s end first, its rating past that upper end). The
 * networks search with 4 simulations in the rating games, so that the
 * network, not the search, decides them. Strength figures come from make
 * learn, not from here. */
Test(ratings, learning_smoke_a_trained_best_rates_above_random_and_v1)
{
    harness h;
    harness_init(&h, "rlearn");
    const char *const extra[] = {"--anchors=random,greedy", "--eval_share=0.3",
                                 "--calibration_pairs=4", "--eval_pairs=8",
                                 "--eval_simulations=4", "--book_openings=64", "--gate=none",
                                 "--simulations=16", "--selfplay_games=16", NULL};
    harness_coord_start(&h, extra);
    char wlog[128], tlog[128], a_end[96], a_sub[96], a_dir[128];
    snprintf(wlog, sizeof wlog, "%s/worker.log", h.dir);
    snprintf(tlog, sizeof tlog, "%s/trainer.log", h.dir);
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    snprintf(a_dir, sizeof a_dir, "--checkpoint_dir=%s/trainer", h.dir);
    const char *const wargs[] = {a_end, a_sub, "--model_cache_dir=", "--parallel=16",
                                 "--seed=5", NULL};
    const char *const targs[] = {a_end,           a_dir,           "--batch_size=64",
                                 "--min_positions=256", "--steps_per_candidate=25",
                                 "--seed=5",      "--lr=0.003", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, wlog);
    pid_t tp = harness_spawn("kz-trainer", targs, tlog);
    static char body[1 << 18];
    double lo = NAN, elo = NAN, v1_elo = NAN, v1_hi = NAN;
    unsigned version = 0;
    bool done = false;
    double t0 = time_now();
    for (double end = t0 + 360; time_now() < end && !done; harness_sleep(1)) {
        if (harness_http(h.http_port, "/status", body, sizeof body) != 200)
            continue;
        const char *v1 = strstr(body, "{\"name\": \"v1\", ");
        double e1, l1, h1;
        if (v1 && sscanf(v1, "{\"name\": \"v1\", \"anchor\": false, \"games\": %*u, "
                             "\"elo\": %lf, \"elo_lo\": %lf, \"elo_hi\": %lf",
                         &e1, &l1, &h1) == 3) {
            v1_elo = e1;
            v1_hi = h1;
        }
        /* The newest best in the history. */
        const char *hist = strstr(body, "\"history\": [");
        for (const char *p = hist; p && (p = strstr(p, "{\"time_ms\": ")) != NULL; p++) {
            unsigned v;
            double e, l;
            const char *q = strstr(p, "\"version\": ");
            if (q && sscanf(q, "\"version\": %u, \"elo\": %lf, \"elo_lo\": %lf", &v, &e, &l) == 3 &&
                v > 1) {
                version = v;
                elo = e;
                lo = l;
            }
        }
        done = version > 1 && lo > 0 && isfinite(v1_hi) && lo > v1_hi;
    }
    cr_log_info("learning smoke after %.0f s: best v%u rated %+.0f (95%% from %+.0f); v1 %+.0f "
                "(to %+.0f); random 0", time_now() - t0, version, elo, lo, v1_elo, v1_hi);
    cr_assert_gt(version, 1, "no trained best was rated; coordinator log:\n%s",
                 s_tail(h.coord_log));
    /* At the deadline (a slow machine: a sanitizer build under load played
     * too few rating games to separate the intervals), the best's own rating
     * past the upper end of v1's interval is enough. */
    bool above = version > 1 && lo > 0 && isfinite(v1_hi) && elo > v1_hi;
    cr_assert(done || above, "v%u rated %+.0f, interval from %+.0f: not above random (0) and v1 "
              "(%+.0f, up to %+.0f)", version, elo, lo, v1_elo, v1_hi);
    harness_signal(wp, SIGTERM);
    harness_signal(tp, SIGTERM);
    int st;
    cr_assert(harness_wait(wp, 30, &st), "the worker did not stop");
    cr_assert_eq(harness_exit_code(st), 0, "worker log:\n%s", s_tail(wlog));
    cr_assert(harness_wait(tp, 30, &st), "the trainer did not stop");
    cr_assert_eq(harness_exit_code(st), 0, "trainer log:\n%s", s_tail(tlog));
    harness_fini(&h);
}


/* With gate none a new best every second, faster than a gauntlet ends: the
 * best's rating is in every /metrics scrape (NaN before the first gauntlet
 * ends, then the newest rated best's, with the version it belongs to and
 * its time), and /status names the rated version and its age. */
Test(ratings, the_best_is_rated_in_every_scrape_while_gate_none_replaces_it)
{
    harness h;
    harness_init(&h, "rbest");
    const char *const extra[] = {"--anchors=random,greedy", "--eval_share=1",
                                 "--calibration_pairs=0", "--eval_pairs=2",
                                 "--eval_simulations=4", "--book_openings=20", "--gate=none",
                                 NULL};
    harness_coord_start(&h, extra);
    char log[128], a_end[96], a_sub[96];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    const char *const wargs[] = {a_end, a_sub, "--model_cache_dir=", "--parallel=8",
                                 "--timeout_ms=500", "--heartbeat_ms=100", "--seed=4", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, log);
    /* A trainer that submits a new network every second. */
    char err[256];
    model *m;
    cr_assert_eq(modelfile_load(h.model, game_default(), &m, err, sizeof err), 0, "%s", err);
    void *zctx = zmq_ctx_new();
    client *tr = harness_client(zctx, h.endpoint, NULL, "trainer", "trainer", 2000);
    static char body[1 << 16];
    int scrapes = 0, with_elo = 0, rated = 0, lagging = 0;
    double first_rated = NAN, t0 = time_now(), next_submit = t0, best_at_first = 0,
           best_now = 0;
    uint32_t submitted = 0;
    for (double end = t0 + 240; time_now() < end && (rated < 20 || time_now() < t0 + 30);
         harness_sleep_ms(200)) {
        if (time_now() >= next_submit) {
            model_edit_meta(m)->created_ms += 1000;
            uint8_t *blob;
            size_t len;
            cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
            wire_candidate_ack ack;
            cr_assert_eq(client_submit_candidate(tr, blob, len, 1, 10 * (submitted + 1), &ack),
                         0, "%s", client_last_error(tr));
            free(blob);
            submitted++;
            next_submit += 1.0;
        }
        cr_assert_eq(harness_http(h.http_port, "/metrics", body, sizeof body), 200);
        scrapes++;
        double elo, ver, ts, best;
        with_elo += metrics_value(body, "kz_best_elo", &elo) &&
                    metrics_value(body, "kz_best_elo_version", &ver) &&
                    metrics_value(body, "kz_best_elo_timestamp_seconds", &ts);
        cr_assert(metrics_value(body, "kz_best_version", &best));
        if (ver > 0) {
            cr_assert(isfinite(elo), "a rated version with a finite rating: %s", body);
            cr_assert(ts > 1.7e9 && ts < time_wall_ms() / 1000.0 + 5,
                      "the time of the rating as Unix time: %.0f", ts);
            cr_assert_leq(ver, best, "the rated version is a best up to now");
            if (!isfinite(first_rated)) {
                first_rated = time_now() - t0;
                best_at_first = best;
            }
            best_now = best;
            rated++;
            lagging += ver < best;
        } else {
            cr_assert(isnan(elo), "no version, no rating: %s", body);
        }
    }
    cr_log_info("best's rating: %d scrapes, %d with kz_best_elo, %d rated (first after %.0f s), "
                "%d naming an older version than the best; %u candidates submitted",
                scrapes, with_elo, rated, first_rated, lagging, submitted);
    cr_assert_eq(with_elo, scrapes, "kz_best_elo missing from %d of %d scrapes",
                 scrapes - with_elo, scrapes);
    cr_assert_geq(rated, 20, "no rating within 240 s; worker log:\n%s", s_tail(log));
    /* The best was replaced while every scrape carried a rating (whether a
     * scrape caught the rating behind the best depends on the machine's
     * speed: it is logged, not asserted). */
    cr_assert_gt(best_now, best_at_first, "the best never moved on after the first rating "
                 "(v%.0f then v%.0f)", best_at_first, best_now);
    cr_assert(s_wait_body(&h, "\"rated\": {\"version\": ", body, sizeof body));
    const char *r = strstr(body, "\"rated\": {\"version\": ");
    cr_assert(atoi(r + strlen("\"rated\": {\"version\": ")) >= 1, "%s", r);
    cr_assert_not_null(strstr(r, "\"age_s\": "), "%s", r);
    /* kz status with the worker gone and one more candidate (so an unrated
     * best whose gauntlet cannot end): the newest rated version beside it. */
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 30, &wst), "the worker did not stop");
    model_edit_meta(m)->created_ms += 1000;
    uint8_t *blob;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
    wire_candidate_ack ack;
    cr_assert_eq(client_submit_candidate(tr, blob, len, 1, 10 * (submitted + 1), &ack), 0, "%s",
                 client_last_error(tr));
    free(blob);
    char args[128], out[8192] = "";
    snprintf(args, sizeof args, "status http://127.0.0.1:%d", h.http_port);
    for (double end = time_now() + 30; time_now() < end; harness_sleep_ms(200)) {
        cr_assert_eq(harness_kz_out(args, NULL, false, out, sizeof out), 0, "%s", out);
        if (strstr(out, " unrated (newest rated v"))
            break;
    }
    const char *line = strstr(out, "rating      best v");
    cr_assert_not_null(line, "%s", out);
    cr_assert_not_null(strstr(line, " unrated (newest rated v"),
                       "kz status names the newest rated version beside the unrated best:\n%s",
                       out);
    cr_assert_not_null(strstr(line, " ago)"), "and its age:\n%s", out);
    client_destroy(&tr);
    zmq_ctx_term(zctx);
    model_destroy(&m);
    harness_fini(&h);
}

/* anchors = auto (the default): the players of the game's fixed scale
 * (play/scales.txt) for Khreibaga, so that no worker time goes to
 * calibration; random, greedy and uct:100 for a game without a scale
 * (backgammon: alphabeta:6 over its dice never finished a calibration game,
 * and both workers of a make run stalled on it; a move of uct:1000 there
 * held a worker past its heartbeat). */
Test(ratings, auto_anchors_are_the_game_s_scale_or_three_cheap_players)
{
    static char body[1 << 16];
    harness h;
    harness_init(&h, "ranchors");
    harness_coord_start(&h, NULL);
    cr_assert(s_wait_body(&h, "\"name\": \"uct:8000\", \"anchor\": true", body, sizeof body),
              "%s", body);
    static const char *const kh[] = {"random", "greedy", "alphabeta:2", "alphabeta:4",
                                     "uct:1000", "alphabeta:6", "uct:8000"};
    for (size_t i = 0; i < sizeof kh / sizeof kh[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"name\": \"%s\", \"anchor\": true", kh[i]);
        cr_expect(strstr(body, want), "%s not an anchor: %s", kh[i], body);
    }
    cr_expect_null(strstr(body, "alphabeta:8"), "%s", body);
    harness_fini(&h);

    harness_init(&h, "ranchors-bg");
    char args[400], out[4096];
    snprintf(args, sizeof args, "model init --game=backgammon --blocks=1 --filters=8 --force %s",
             h.model);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    const char *bg[] = {"--game=backgammon", NULL};
    harness_coord_start(&h, bg);
    if (gnubg_path()) { /* gnubg's levels (random, greedy, uct:100 are passed in minutes) */
        cr_assert(s_wait_body(&h, "\"name\": \"gnubg:expert\", \"anchor\": true", body,
                              sizeof body),
                  "%s", body);
        cr_expect(strstr(body, "\"name\": \"gnubg:beginner\", \"anchor\": true"), "%s", body);
        cr_expect(strstr(body, "\"name\": \"gnubg:intermediate\", \"anchor\": true"), "%s",
                  body);
        cr_expect_null(strstr(body, "\"name\": \"random\""), "%s", body);
    } else {
        cr_assert(s_wait_body(&h, "\"name\": \"uct:100\", \"anchor\": true", body,
                              sizeof body),
                  "%s", body);
        cr_expect(strstr(body, "\"name\": \"random\", \"anchor\": true"), "%s", body);
        cr_expect(strstr(body, "\"name\": \"greedy\", \"anchor\": true"), "%s", body);
    }
    cr_expect_null(strstr(body, "alphabeta"), "%s", body);
    harness_fini(&h);
}

/* A gnubg process that is a child of pid (the worker's baseline player), 0 none. */
static pid_t s_gnubg_child(pid_t parent)
{
    char name[64];
    pid_t found = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        int pid = atoi(e->d_name), ppid = 0;
        if (pid <= 0)
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%*d (%63[^)]) %*c %d", name, &ppid) == 2 && ppid == parent &&
            !strcmp(name, "gnubg"))
            found = pid;
        fclose(f);
    }
    closedir(d);
    return found;
}

/* gnubg as an anchor of the pool (issue 25): a backgammon coordinator rates
 * its model against gnubg:beginner and gnubg:intermediate, played by a real
 * kz-worker with a gnubg process per baseline player; a gnubg killed in the
 * middle of a game gives that game up (logged, the worker lives on, its
 * heartbeats kept: the coordinator never counts it gone; the slot is played
 * again once eval_timeout_s passes); the tallies count points (a gammon 2,
 * a backgammon 3) and v1's rating against gnubg reaches the history and
 * /status. A few games at 2,000 simulations of a 1 x 8 network (long enough
 * for a kill to land in mid-game on a quiet machine). */
Test(ratings, a_backgammon_model_is_rated_against_gnubg_by_a_real_worker)
{
    if (!gnubg_path()) {
        cr_skip_test("gnubg is not installed (tools/deps.sh)");
        return;
    }
    static char body[1 << 16];
    harness h;
    harness_init(&h, "rgnubg");
    char args[400], out[4096];
    snprintf(args, sizeof args, "model init --game=backgammon --blocks=1 --filters=8 --force %s",
             h.model);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    const char *const extra[] = {"--game=backgammon", "--anchors=gnubg:beginner,gnubg:intermediate",
                                 "--eval_share=1", "--calibration_pairs=1", "--eval_pairs=2",
                                 "--eval_simulations=2000", "--book_openings=4",
                                 "--eval_timeout_s=3", "--gate=none", "--expiry_ms=5000",
                                 "--judge=auto", NULL};
    harness_coord_start(&h, extra);
    char log[128], a_end[96], a_sub[96];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    const char *const wargs[] = {"--game=backgammon", a_end, a_sub, "--model_cache_dir=",
                                 "--parallel=2", "--timeout_ms=500", "--heartbeat_ms=100",
                                 "--seed=5", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, log);
    /* Step 1. Kill a gnubg of the worker's in mid-game: one that has lived
     * a while (past its start-up, in a game at 2,000 simulations). A game
     * ending just then closes its gnubg without a failure, and a kill during
     * the start-up drops the job's games (their slots return after
     * eval_timeout_s): try the next one. */
    /* How long a game lasts depends on the machine (on a quiet one every game
     * of the gauntlet may end within 0.6 s): each gnubg seen is killed after
     * the next age of the list, so that some kill lands in mid-game. */
    static const double ages[] = {0.6, 0.3, 0.15, 0.45, 0.08, 0.2};
    int tries = 0;
    bool failed = false;
    pid_t seen = 0;
    double seen_at = 0, age = ages[0];
    for (double end = time_now() + 240; time_now() < end && !failed; harness_sleep(0.01)) {
        pid_t g = s_gnubg_child(wp);
        if (g != seen) {
            seen = g;
            seen_at = time_now();
            age = ages[tries++ % (int)(sizeof ages / sizeof ages[0])];
        }
        if (!g || time_now() - seen_at < age)
            continue;
        kill(g, SIGKILL);
        failed = harness_wait_log(log, "failed (", 3);
        seen = 0;
    }
    cr_assert(failed, "no gnubg of the worker died mid-game; worker log:\n%s", s_tail(log));
    cr_assert_geq(harness_count(log, "baseline player gnubg:"), 1, "%s", s_tail(log));
    /* Step 2. v1's gauntlet ends: rated against gnubg in /status. */
    double v = harness_wait_status(&h, "\"history\": [\n      {", "version", 1, 300);
    cr_assert_eq(v, 1, "v1's gauntlet did not end; worker log:\n%s", s_tail(log));
    cr_assert_eq(harness_http(h.http_port, "/status", body, sizeof body), 200);
    const char *t = strstr(body, "\"tallies\"");
    cr_assert_not_null(t, "%s", body);
    const char *vb = strstr(t, "{\"a\": \"gnubg:beginner\", \"b\": \"v1\"");
    cr_assert_not_null(vb, "v1 did not meet gnubg:beginner: %s", t);
    /* The tally in points: at least a point per decided game, at most 3. */
    double w = json_number_after(vb, "{", "wins"), l = json_number_after(vb, "{", "losses");
    double pa = 0, pb = 0;
    const char *pts = strstr(vb, "\"points\": [");
    cr_assert_not_null(pts, "%s", vb);
    cr_assert_eq(sscanf(pts, "\"points\": [%lf, %lf]", &pa, &pb), 2, "%s", pts);
    cr_assert(w + l >= 4 && pa >= w && pa <= 3 * w && pb >= l && pb <= 3 * l, "%.200s", vb);
    cr_assert_not_null(strstr(t, "{\"a\": \"gnubg:intermediate\", \"b\": \"v1\""), "%s", t);
    const char *r = strstr(body, "{\"name\": \"v1\", \"anchor\": false");
    cr_assert_not_null(r, "%s", body);
    cr_assert_geq(json_number_after(r, "{", "games"), 8, "%s", r);
    cr_assert(isfinite(json_number_after(r, "{", "elo")), "v1 is not rated: %s", r);
    /* gnubg:beginner is the zero of a pool without random. */
    const char *z = strstr(body, "{\"name\": \"gnubg:beginner\"");
    cr_assert_not_null(z, "%s", body);
    cr_assert_not_null(strstr(z, "\"elo\": 0.0"), "%s", z);
    /* gnubg (expert) judged v1's moves in its rating games, in the background:
     * all 8 of them (judge_games 60), a few dozen decisions, each losing
     * something (a 1 x 8 network at 4 simulations: well above 0). */
    double jg = harness_wait_status(&h, "\"judge\": {", "games", 8, 120);
    cr_assert_eq(jg, 8, "judged games: %s", strstr(body, "\"judge\""));
    cr_assert_eq(harness_http(h.http_port, "/status", body, sizeof body), 200);
    const char *j = strstr(body, "\"judge\": {\"level\": \"expert\"");
    cr_assert_not_null(j, "%s", body);
    cr_assert_eq(json_number_after(j, "{", "version"), 1, "%s", j);
    double dec = json_number_after(j, "{", "decisions"), mp = json_number_after(j, "{", "mp");
    double lo = json_number_after(j, "{", "mp_lo"), hi = json_number_after(j, "{", "mp_hi");
    cr_assert(dec >= 8 && mp > 0 && lo <= mp && mp <= hi, "%s", j);
    cr_assert_float_eq(json_number_after(j, "{", "pr"), mp / 2, 0.06, "%s", j);
    cr_assert_not_null(strstr(j, "\"history\": [[1, 8, "), "%s", j);
    cr_assert_eq(harness_http(h.http_port, "/metrics", body, sizeof body), 200);
    double mv = NAN, mm = NAN;
    cr_assert(metrics_value(body, "kz_judge_version", &mv) && mv == 1, "%s", body);
    cr_assert(metrics_value(body, "kz_judge_millipoints", &mm) && fabs(mm - mp) < 0.06, "%s",
              body);
    /* Step 3. The worker stops cleanly; the coordinator never lost it. */
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 30, &wst), "the worker did not stop");
    cr_assert_eq(harness_exit_code(wst), 0, "worker log:\n%s", s_tail(log));
    cr_assert_eq(harness_count(h.coord_log, " gone (silent"), 0, "%s", s_tail(h.coord_log));
    cr_assert_eq(harness_count(log, "fatal"), 0, "%s", s_tail(log));
    harness_fini(&h);
}

/* An evaluation job's slots, kept past the client's next call (the client
 * owns the arrays of the job it returns until then). */
typedef struct s_kept_job {
    wire_job job;        /* its candidate_players, opponent_player point below */
    size_t n;            /* slots */
    int32_t colours[16];
    uint32_t slot[16];
    char opening[16][64];
    char anchor[32];
} s_kept_job;

static void s_keep_job(const wire_job *job, s_kept_job *k)
{
    cr_assert(job->n_arena >= 1 && job->n_arena <= 16, "%u slots", (unsigned)job->n_arena);
    k->job = *job;
    k->n = job->n_arena;
    for (size_t i = 0; i < k->n; i++) {
        k->colours[i] = job->candidate_players[i];
        k->slot[i] = job->arena_slots[i];
        snprintf(k->opening[i], sizeof k->opening[i], "%s", job->start_positions[i]);
    }
    snprintf(k->anchor, sizeof k->anchor, "%s", job->opponent_player);
    k->job.candidate_players = k->colours;
    k->job.model_player = "";
    k->job.opponent_player = k->anchor;
}

/* Submits a random record of any result for each of k's first n slots. */
static void s_play_slots(client *w, const s_kept_job *k, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint8_t *rec = s_eval_record(&k->job, i, k->opening[i], 2, seed, &len);
        cr_assert_eq(client_submit_game(w, rec, len, k->slot[i]), 0);
        free(rec);
    }
}

/* A rater plays three of v1's gauntlet games, the judge judges them, the
 * coordinator restarts in the middle of the gauntlet, and the rater plays the
 * rest: v1's point keeps its three games (the running sums are not kept over
 * a restart: judging on would start v1's figures from zero and replace its
 * point with the games after the restart). */
Test(ratings, a_best_judged_before_a_restart_keeps_its_point, .timeout = 600)
{
    harness h;
    harness_init(&h, "rjrestart");
    const char *const extra[] = {"--anchors=random,greedy", "--eval_share=1",
                                 "--calibration_pairs=0", "--eval_pairs=2",
                                 "--book_openings=10", "--arena_per_worker=16",
                                 "--judge=auto", "--perfect_nodes=1000", NULL};
    harness_coord_start(&h, extra);
    void *zctx = zmq_ctx_new();
    client *w = s_client(zctx, &h, "rater");
    wire_job_request jr = {.free_slots = 16};
    const wire_job *job;
    cr_assert_eq(client_get_job(w, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_EVAL);
    cr_assert_eq(job->model_version, 1);
    cr_assert_eq(job->n_arena, 4);
    s_kept_job kj;
    s_keep_job(job, &kj);
    uint64_t seed = 700;
    s_play_slots(w, &kj, 3, &seed);
    harness_client_drain(w);
    cr_assert_eq(harness_wait_status(&h, "\"judge\": {", "games", 3, 60), 3);
    client_destroy(&w);

    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, extra);
    cr_assert_eq(harness_wait_status(&h, "\"judge\": {", "games", 3, 30), 3);
    /* The rest of v1's gauntlet, planned again from what was counted. */
    w = s_client(zctx, &h, "rater");
    cr_assert_eq(client_get_job(w, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_EVAL, "kind %d", (int)job->kind);
    cr_assert_eq(job->model_version, 1);
    s_keep_job(job, &kj);
    s_play_slots(w, &kj, kj.n, &seed);
    harness_client_drain(w);
    client_stats st;
    client_get_stats(w, &st);
    cr_assert_eq(st.acked, kj.n, "the games after the restart were counted");
    /* A judged game takes a fraction of a second: give the judge time. */
    double t0 = harness_now();
    while (harness_now() - t0 < 5) {
        double g = harness_status_num(&h, "\"judge\": {", "games");
        cr_assert_eq(g, 3, "v1's point after the restart holds %g games, not the 3 judged "
                           "before", g);
        harness_sleep(0.25);
    }
    char body[1 << 16];
    cr_assert_eq(harness_http(h.http_port, "/status", body, sizeof body), 200);
    cr_assert_not_null(strstr(body, "\"history\": [[1, 3, "), "%s", strstr(body, "\"judge\""));
    client_destroy(&w);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

/* Perfect play judges a Khreibaga best (issue 24, judge auto): a real
 * worker plays v1's gauntlet (2 anchors x 2 pairs: 8 games), the coordinator's
 * referee judges v1's turns in them in the background, and its figures are
 * what `kz solve referee` counts on the same stored games with the same
 * budget: the same turns of v1 (settled + open), and value-losing turns that
 * differ at most where one of them left a turn open (the two searches meet
 * positions in another order; settled values are exact). A 1 x 8 network at
 * 4 simulations loses value in some of 8 games. /metrics has the rate. */
Test(ratings, a_khreibaga_best_is_judged_by_perfect_play)
{
    harness h;
    harness_init(&h, "rjudge");
    const char *const extra[] = {"--anchors=random,greedy", "--eval_share=1",
                                 "--calibration_pairs=1", "--eval_pairs=2",
                                 "--eval_simulations=4", "--book_openings=4", "--gate=none",
                                 "--judge=auto", "--perfect_nodes=20000", "--perfect_tt_mb=16",
                                 NULL};
    harness_coord_start(&h, extra);
    char log[128], a_end[96], a_sub[96];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    const char *const wargs[] = {a_end, a_sub, "--model_cache_dir=", "--parallel=2",
                                 "--timeout_ms=500", "--heartbeat_ms=100", "--seed=3", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, log);
    double jg = harness_wait_status(&h, "\"judge\": {", "games", 8, 240);
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 30, &wst), "the worker did not stop");
    static char body[1 << 17];
    cr_assert_eq(harness_http(h.http_port, "/status", body, sizeof body), 200);
    const char *j = strstr(body, "\"judge\": {\"level\": \"perfect\", \"kind\": \"perfect\"");
    cr_assert_eq(jg, 8, "judged games: %s\nworker log:\n%s", j ? j : body, s_tail(log));
    cr_assert_not_null(j, "%s", body);
    cr_assert_eq(json_number_after(j, "{", "version"), 1, "%s", j);
    double settled = json_number_after(j, "{", "decisions");
    double losing = json_number_after(j, "{", "losing");
    double unknown = json_number_after(j, "{", "unknown");
    double per_game = json_number_after(j, "{", "per_game");
    double lo = json_number_after(j, "{", "lo"), hi = json_number_after(j, "{", "hi");
    cr_assert(losing >= 1 && settled > losing, "%s", j);
    cr_assert_float_eq(per_game, losing / 8, 0.001, "%s", j);
    cr_assert(lo <= per_game && per_game <= hi && hi > lo, "%s", j);
    cr_assert_not_null(strstr(j, "\"history\": [[1, 8, "), "%s", j);
    cr_assert_eq(harness_http(h.http_port, "/metrics", body, sizeof body), 200);
    double mv = NAN, mr = NAN;
    cr_assert(metrics_value(body, "kz_judge_version", &mv) && mv == 1, "%s", body);
    cr_assert(metrics_value(body, "kz_judge_value_losing_per_game", &mr) &&
                  fabs(mr - per_game) < 0.001, "%s", body);
    /* The same games judged by kz solve referee (the store read while the
     * coordinator runs): v1's row. */
    char args[400], out[16384];
    snprintf(args, sizeof args, "solve referee --store %s/store --kind rating --model 1 "
             "--tables '' --nodes 20000 --tt_mb 16 --quiet", h.dir);
    cr_assert_eq(harness_kz_out(args, NULL, false, out, sizeof out), 0, "%s", out);
    const char *row = strstr(out, "\n  v1 ");
    cr_assert_not_null(row, "%s", out);
    long turns = 0, judged = 0, open = 0, lose = 0;
    cr_assert_eq(sscanf(row, " v1 %ld %ld %ld %ld", &turns, &judged, &open, &lose), 4, "%s", out);
    cr_assert_eq(turns, (long)(settled + unknown), "kz: %s\njudge: %s", row, j);
    cr_assert_leq(labs(lose - (long)losing), open + (long)unknown, "kz: %s\njudge: %s", row, j);
    /* kz status says it in a line. */
    char want[160];
    snprintf(args, sizeof args, "status http://127.0.0.1:%d", h.http_port);
    cr_assert_eq(harness_kz_out(args, NULL, false, out, sizeof out), 0, "%s", out);
    snprintf(want, sizeof want, "judge       perfect play: v1 %.2f value-losing turns a game [",
             per_game);
    cr_assert_not_null(strstr(out, want), "%s\nwant: %s", out, want);
    snprintf(want, sizeof want, "(%.0f in 8 rating games, %.0f turns settled, %.0f open)",
             losing, settled, unknown);
    cr_assert_not_null(strstr(out, want), "%s\nwant: %s", out, want);
    /* A restart reads the figures back from the history: the same version,
     * games, settled turns, value-losing turns and rate; the open turns are
     * not kept (null, and kz status leaves them out). */
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, extra);
    cr_assert_eq(harness_wait_status(&h, "\"judge\": {", "games", 8, 30), 8, "see %s",
                 h.coord_log);
    cr_assert_eq(harness_http(h.http_port, "/status", body, sizeof body), 200);
    j = strstr(body, "\"judge\": {");
    cr_assert_not_null(j, "%s", body);
    cr_assert_eq(json_number_after(j, "{", "version"), 1, "%s", j);
    cr_assert_eq(json_number_after(j, "{", "decisions"), settled, "%s", j);
    cr_assert_eq(json_number_after(j, "{", "losing"), losing, "%s", j);
    cr_assert_float_eq(json_number_after(j, "{", "per_game"), per_game, 0.001, "%s", j);
    cr_assert_not_null(strstr(j, "\"unknown\": null"), "%s", j);
    cr_assert_eq(harness_kz_out(args, NULL, false, out, sizeof out), 0, "%s", out);
    snprintf(want, sizeof want, "(%.0f in 8 rating games, %.0f turns settled)", losing,
             settled);
    cr_assert_not_null(strstr(out, want), "%s\nwant: %s", out, want);
    harness_fini(&h);
}

/* A store from before the points (meta "tallies" as "KZT1": names, wins,
 * draws, losses, pairs) is read by a backgammon coordinator with each win as
 * one point (what it counted) and fitted over that share (it is written
 * back as "KZT2" with its points when a game is next counted; new games'
 * points are tested above). */
Test(ratings, a_store_s_tallies_without_points_are_read_as_single_wins)
{
    static char body[1 << 16];
    harness h;
    harness_init(&h, "rkzt1");
    char args[400], out[4096];
    snprintf(args, sizeof args, "model init --game=backgammon --blocks=1 --filters=8 --force %s",
             h.model);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    const char *const extra[] = {"--game=backgammon", "--anchors=random,greedy", "--eval_share=0",
                                 NULL};
    harness_coord_start(&h, extra);
    harness_coord_kill(&h, SIGTERM);
    /* One old tally: random against v1, +1 =0 -3 from random's view, two pairs
     * (LL and WL: the pentanomial counts of pair scores 0, 1/2, 1, 3/2, 2). */
    uint8_t b[8 + 2 * 32 + 8 * 4] = {0};
    memcpy(b, "KZT1", 4);
    host_put32(b + 4, 1);
    memcpy(b + 8, "random", 6);
    memcpy(b + 8 + 32, "v1", 2);
    const uint32_t vals[8] = {1, 0, 3, 1, 0, 1, 0, 0};
    for (int k = 0; k < 8; k++)
        host_put32(b + 8 + 64 + 4 * k, vals[k]);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/store", h.dir);
    store_options so;
    store_options_default(&so);
    store *st;
    cr_assert_eq(store_open(&st, dir, &so), 0);
    cr_assert_eq(store_put_meta(st, "tallies", b, sizeof b), 0);
    store_close(&st);
    harness_coord_start(&h, extra);
    const char *want =
        "{\"a\": \"random\", \"b\": \"v1\", \"wins\": 1, \"draws\": 0, \"losses\": 3, "
        "\"pairs\": [1, 0, 1, 0, 0], \"points\": [1, 3], \"score\": 1.000}";
    cr_assert(s_wait_body(&h, want, body, sizeof body), "want %s in %s", want, body);
    const char *r = strstr(body, "{\"name\": \"v1\", \"anchor\": false");
    cr_assert_not_null(r, "%s", body);
    cr_assert_gt(json_number_after(r, "{", "elo"), 0, "%s", r);
    cr_assert_eq(harness_count(h.coord_log, "tallies unreadable"), 0);
    harness_fini(&h);
}

/* Bad gnubg settings stop the coordinator at once with one line (exit 2):
 * an unknown level as an anchor, an unknown judge level, a judge of another
 * game (perfect play for backgammon, gnubg for Khreibaga). */
Test(ratings, bad_gnubg_settings_get_one_line)
{
    static const char *const bad[][2] = {
        {"--anchors=gnubg:beginner,gnubg:foo", "kz-coordinator: anchors: 'gnubg:foo': unknown "
                                               "gnubg level 'foo' (beginner, casual"},
        {"--judge=bar", "kz-coordinator: judge: unknown gnubg level 'bar'"},
        {"--judge=perfect", "kz-coordinator: judge: perfect play is known for khreibaga only, "
                            "not backgammon"},
        {"--game=khreibaga --judge=expert", "kz-coordinator: judge: gnubg judges backgammon "
                                            "only, not khreibaga"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char game[32] = "--game=backgammon", flag[64]; /* "--game=G FLAG", or FLAG */
        const char *sp = strchr(bad[i][0], ' ');
        snprintf(flag, sizeof flag, "%s", sp ? sp + 1 : bad[i][0]);
        if (sp)
            snprintf(game, sizeof game, "%.*s", (int)(sp - bad[i][0]), bad[i][0]);
        const char *const args[] = {game, flag, NULL};
        proc_output o;
        cr_assert_eq(harness_run_bin("kz-coordinator", args, NULL, &o), 2, "%s", o.err);
        cr_assert(strstr(o.err, bad[i][1]), "%s", o.err);
        const char *nl = strchr(o.err, '\n');
        cr_assert(nl && !nl[1], "one line: %s", o.err);
        proc_output_free(&o);
    }
}

/* An unknown judge level of any length a setting holds (up to 255 bytes)
 * gets the whole line, as before judge_check: the levels, then the other
 * choices. */
Test(ratings, a_long_unknown_judge_level_gets_the_whole_line)
{
    char flag[300] = "--judge=";
    memset(flag + strlen(flag), 'x', 200);
    const char *const args[] = {"--game=backgammon", flag, NULL};
    proc_output o;
    cr_assert_eq(harness_run_bin("kz-coordinator", args, NULL, &o), 2, "%s", o.err);
    cr_assert(strstr(o.err, "kz-coordinator: judge: unknown gnubg level 'xxx"), "%s", o.err);
    cr_assert(strstr(o.err, "supremo, grandmaster) (or perfect, auto, \"\")\n"), "%s", o.err);
    proc_output_free(&o);
}
