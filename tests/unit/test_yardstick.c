/* Tests of play/yardstick.h (books and positions files, the balance of an
 * opening, the paired difference, the value head's measure) and of the
 * simulation schedule (play/selfplay.h, the coordinator's sims_start).
 * The worked example of the paired difference was computed by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/game.h"
#include "play/match.h"
#include "play/selfplay.h"
#include "play/yardstick.h"
#include "search/player.h"
#include "tests/harness/harness.h"

TestSuite(yardstick, .timeout = 600);

Test(yardstick, paired_worked_example)
{
    /* Pairs in half points: A 4 2 2 0, B 2 2 0 0. Per-pair differences
     * (a - b) / 4: 0.5 0 0.5 0, mean 0.25; sample variance
     * 4 * 0.25^2 / 3 = 0.0833333; sd of the mean sqrt(0.0833333 / 4) = 0.1443376;
     * half-width 1.959964 * 0.1443376 = 0.2828964.
     * Scores: A (1 + .5 + .5 + 0) / 4 = 0.5, B (.5 + .5 + 0 + 0) / 4 = 0.25;
     * Elo E(0.5) - E(0.25) = 0 + 400 log10(3) = 190.8485. */
    int a[4] = {4, 2, 2, 0}, b[4] = {2, 2, 0, 0};
    yard_paired p;
    yard_paired_compute(a, b, 4, &p);
    cr_assert_eq(p.pairs, 4);
    cr_assert_float_eq(p.score_a, 0.5, 1e-12);
    cr_assert_float_eq(p.score_b, 0.25, 1e-12);
    cr_assert_float_eq(p.diff, 0.25, 1e-12);
    cr_assert_float_eq(p.lo, 0.25 - 0.2828964, 1e-6);
    cr_assert_float_eq(p.hi, 0.25 + 0.2828964, 1e-6);
    cr_assert_float_eq(p.elo, 190.8485, 1e-3);
    cr_assert(p.elo_lo < p.elo && p.elo < p.elo_hi);
    /* The same pairs: no difference and no width, whatever the opening did. */
    yard_paired_compute(a, a, 4, &p);
    cr_assert_float_eq(p.diff, 0, 1e-12);
    cr_assert_float_eq(p.hi - p.lo, 0, 1e-12);
}

Test(yardstick, files_round_trip_and_errors)
{
    const game_def *g = game_default();
    game_state s[5], back[8];
    int8_t z[5] = {1, 0, -1, 1, 0}, zb[8];
    cr_assert_eq(match_openings(g, 5, 0, 7, s), 0);
    char *dir = harness_tmpdir("yardstick");
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/pos.txt", dir);
    cr_assert_eq(yard_write(g, path, "made by the test\nsecond line", s, z, 5), 0);
    int n = 0;
    char err[256];
    cr_assert_eq(yard_read(g, path, back, zb, 8, &n, err, sizeof err), 0, "%s", err);
    cr_assert_eq(n, 5);
    for (int i = 0; i < 5; i++) { /* the same position (a fresh history: R20) */
        char p1[256], p2[256];
        g->format_position(&s[i], p1, sizeof p1);
        g->format_position(&back[i], p2, sizeof p2);
        cr_assert_str_eq(p1, p2);
        cr_assert_eq(zb[i], z[i]);
    }
    /* Read as a book (labels ignored); too small a buffer is an error. */
    cr_assert_eq(yard_read(g, path, back, NULL, 8, &n, err, sizeof err), 0);
    cr_assert_eq(yard_read(g, path, back, NULL, 4, &n, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "more than 4"), "%s", err);
    /* A bad position names its line; a positions file needs labels. */
    snprintf(bad, sizeof bad, "%s/bad.txt", dir);
    cr_assert_eq(harness_write(bad, "# comment\nnot a position\n"), 0);
    cr_assert_eq(yard_read(g, bad, back, NULL, 8, &n, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "bad.txt:2"), "%s", err);
    cr_assert_eq(yard_write(g, bad, "", s, NULL, 2), 0);
    cr_assert_eq(yard_read(g, bad, back, zb, 8, &n, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "no label"), "%s", err);
    cr_assert_eq(yard_read(g, "/nonexistent/x", back, NULL, 8, &n, err, sizeof err), KZ_EIO);
    harness_rm_rf(dir);
    free(dir);
}

Test(yardstick, balance_is_consistent_and_reproducible)
{
    const game_def *g = game_default();
    game_state s[6];
    cr_assert_eq(match_openings(g, 6, 0, 11, s), 0);
    player *p = player_alphabeta_new(g, 2);
    for (int i = 0; i < 6; i++) {
        int r[2], r2[2];
        int v = yard_balance(g, p, &s[i], 100 + (uint64_t)i, r, NULL);
        cr_assert(v == 0 || v == 1);
        cr_assert_eq(v, r[0] == -r[1]);
        cr_assert_eq(yard_balance(g, p, &s[i], 100 + (uint64_t)i, r2, NULL), v);
        cr_assert(r2[0] == r[0] && r2[1] == r[1]);
    }
    player_destroy(&p);
}

Test(yardstick, phases_and_value_measure)
{
    const game_def *g = game_default();
    game_state start;
    g->init(&start);
    cr_assert_eq(yard_pieces(g, &start), 24);
    cr_assert_eq(yard_phase(g, &start), 0);
    /* The uniform evaluator predicts 0: the error is the label squared, and
     * two identical searches never differ. */
    game_state s[4];
    int8_t z[4] = {1, -1, 0, 1};
    cr_assert_eq(match_openings(g, 4, 0, 3, s), 0);
    char err[256];
    player *net = player_from_spec(g, "policy:uniform", err, sizeof err);
    player *lo = player_from_spec(g, "mcts:uniform:16", err, sizeof err);
    player *hi = player_from_spec(g, "mcts:uniform:16", err, sizeof err);
    cr_assert(net && lo && hi, "%s", err);
    yard_value v;
    double e[4];
    cr_assert_eq(yard_value_measure(g, net, lo, hi, s, z, 4, 4, e, &v), 0);
    int n = 0;
    for (int p = 0; p < YARD_PHASES; p++)
        n += v.n[p];
    cr_assert_eq(n, 4);
    cr_assert_float_eq(e[0], 1, 1e-6);
    cr_assert_float_eq(e[2], 0, 1e-6);
    cr_assert_eq(v.bin_n[2], 4);
    cr_assert_float_eq(v.bin_z[2], 0.25, 1e-9);
    cr_assert_eq(v.differ[YARD_PHASES], 0);
    char text[4096];
    yard_value_format(&v, 16, 16, text, sizeof text);
    cr_assert(strstr(text, "calibration"), "%s", text);
    player_destroy(&net), player_destroy(&lo), player_destroy(&hi);
}

Test(yardstick, simulation_schedule)
{
    cr_assert_eq(selfplay_sims_schedule(0, 200, 1000, 0), 200);
    cr_assert_eq(selfplay_sims_schedule(0, 200, 1000, 5000), 200);
    cr_assert_eq(selfplay_sims_schedule(64, 400, 60000, 0), 64);
    cr_assert_eq(selfplay_sims_schedule(64, 400, 60000, 30000), 232);
    cr_assert_eq(selfplay_sims_schedule(64, 400, 60000, 60000), 400);
    cr_assert_eq(selfplay_sims_schedule(64, 400, 60000, 1000000), 400);
    cr_assert_eq(selfplay_sims_schedule(400, 100, 100, 50), 250); /* a falling schedule too */
    cr_assert_eq(selfplay_sims_schedule(64, 0, 100, 50), 0);      /* no simulations: the worker's */
}

Test(yardstick, kz_yardstick_commands)
{
    /* The same player on both sides of ab: every pair scores alike and the
     * paired difference is exactly 0 with no width. */
    char out[8192];
    int st = harness_kz_out("yardstick ab mcts:uniform:4 mcts:uniform:4 --anchor random "
                            "--openings 3 --threads 1", NULL, true, out, sizeof out);
    cr_assert_eq(st, 0, "%s", out);
    cr_assert(strstr(out, "paired: A - B = +0.000 (95% +0.000 .. +0.000)"), "%s", out);
    cr_assert(strstr(out, "3 of 3 pairs scored alike"), "%s", out);
    /* A book of balanced openings, read back by ab. */
    char *dir = harness_tmpdir("yardstick-kz");
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/book.txt", dir);
    snprintf(cmd, sizeof cmd, "yardstick book --out %s --openings 12 --depth 2 --threads 1", path);
    st = harness_kz_out(cmd, NULL, true, out, sizeof out);
    cr_assert_eq(st, 0, "%s", out);
    cr_assert(strstr(out, "of 12 candidates"), "%s", out);
    char *text = harness_read_file(path);
    cr_assert(text && strstr(text, "# Balanced openings"), "%s", text ? text : "(none)");
    free(text);
    /* Bad input: a one-line error and status 2. */
    st = harness_kz_out("yardstick ab mcts:uniform:4 /nonexistent.kzm", NULL, true, out,
                        sizeof out);
    cr_assert_eq(st, 2, "%s", out);
    cr_assert(strstr(out, "cannot read model file"), "%s", out);
    st = harness_kz_out("yardstick value policy:uniform", NULL, true, out, sizeof out);
    cr_assert_eq(st, 2, "%s", out);
    harness_rm_rf(dir);
    free(dir);
}
