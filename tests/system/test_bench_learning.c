/* make learn's backgammon figures (tools/bench/bench_learning.c): the
 * snapshots of a run rated against gnubg (--rate_only on two small random
 * networks, a few games), each match scored in points per game with an
 * interval and judged by gnubg (millipoints lost per decision, PR), in the
 * text, curve.csv and results.json; and bad judge settings refused before
 * a run. Skipped with a message when gnubg is not installed. And
 * Khreibaga's referee (--referee_book): the final best against an anchor
 * from a book, every turn judged by perfect play, in the results. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/gnubg.h"
#include "tests/harness/harness.h"

/* The number after `key` in text (NAN when absent). */
static double s_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

Test(bench_learning, backgammon_is_scored_in_points_and_judged_by_gnubg, .timeout = 600)
{
    if (!gnubg_path())
        cr_skip_test("gnubg is not installed (apt-get install gnubg): no backgammon figures");
    char *dir = harness_tmpdir("learn-bg");
    cr_assert_not_null(dir);
    char cmd[4096], out[65536], path[1200];
    /* Two snapshots: random 1x8 networks, versions 1 and 2. */
    for (int v = 1; v <= 2; v++) {
        snprintf(cmd, sizeof cmd, "model init --game backgammon --blocks 1 --filters 8 "
                 "--value_hidden 8 --seed %d --version %d %s/m%d.kzm", v, v, dir, v);
        cr_assert_eq(harness_kz_out(cmd, NULL, true, out, sizeof out), 0, "%s", out);
    }
    snprintf(path, sizeof path, "%s/snapshots.txt", dir);
    char text[3000];
    snprintf(text, sizeof text, "1.00 1.00 10 5 1 %s/m1.kzm\n2.00 2.00 20 10 2 %s/m2.kzm\n", dir,
             dir);
    cr_assert_eq(harness_write(path, text), 0);
    snprintf(cmd, sizeof cmd, "%s/bench_learning --game=backgammon --rate_only=%s --pairs=2 "
             "--curve_pairs=1 --anchors=gnubg:beginner --curve_anchors=gnubg:beginner "
             "--simulations=4 --threads=1 2>&1", harness_bin_dir(), dir);
    int rc = harness_sh(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    /* The text: the games start from the start with a pair's dice shared;
     * points per game within the scale's bounds, with an interval; the judge's
     * error rate of a random network well above gnubg's beginner's. */
    cr_assert(strstr(out, "a pair's games with the same dice"), "%s", out);
    const char *fin = strstr(out, "final: best v2");
    cr_assert_not_null(fin, "%s", out);
    double pts = s_after(fin, "    points ");
    cr_assert(pts >= -3 && pts <= 3, "%s", fin);
    cr_assert(strstr(fin, "per game over 2 pairs"), "%s", fin);
    double mp = s_after(fin, "judge: the model ");
    double anchor_mp = s_after(fin, "gnubg:beginner ");
    cr_assert(mp > 50 && mp < 1000, "a random network's error rate %g:\n%s", mp, fin);
    double all = s_after(fin, "the model over all these games: ");
    cr_assert_float_eq(all, mp, 0.051, "one anchor: the same games\n%s", fin);
    cr_assert(!isnan(anchor_mp), "%s", fin);
    cr_assert(strstr(fin, "races "), "%s", fin);
    /* curve.csv: the error rate per snapshot; results.json: the final's points. */
    snprintf(path, sizeof path, "%s/curve.csv", dir);
    char *csv = harness_read(path);
    cr_assert_not_null(csv);
    cr_assert(!strncmp(csv, "minutes,cpu_minutes,games,steps,version,elo,elo_lo,elo_hi,mp,mp_lo,"
                            "mp_hi,pr\n", 67), "%s", csv);
    const char *row2 = strstr(csv, "\n2.00,2.00,20,10,2,,,,");
    cr_assert_not_null(row2, "%s", csv);
    double row_mp = strtod(row2 + strlen("\n2.00,2.00,20,10,2,,,,"), NULL);
    cr_assert_float_eq(row_mp, mp, 0.051, "%s", csv);
    cr_assert_not_null(strstr(csv, "\n1.00,1.00,10,5,1,,,,"), "%s", csv);
    free(csv);
    snprintf(path, sizeof path, "%s/results.json", dir);
    char *json = harness_read(path);
    cr_assert_not_null(json);
    const char *m = strstr(json, "\"final\"");
    cr_assert_not_null(m, "%s", json);
    cr_assert(strstr(m, "\"anchor\": \"gnubg:beginner\""), "%s", json);
    cr_assert_float_eq(s_after(m, "\"points_per_game\": "), pts, 0.0051, "%s", json);
    cr_assert_float_eq(s_after(m, "\"mp\": "), mp, 0.051, "%s", json);
    cr_assert(s_after(m, "\"decisions\": ") > 0, "%s", json);
    cr_assert(strstr(json, "\"points\": [{\"anchor\": \"gnubg:beginner\""), "%s", json);
    free(json);
    /* Bad judge settings are said in one line before any run. */
    const char *bad[] = {"--judge=nonsense", "--book=/nonexistent"};
    const char *says[] = {"judge", "book"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s/bench_learning --game=backgammon --dir=%s/bad %s 2>&1",
                 harness_bin_dir(), dir, bad[i]);
        rc = harness_sh(cmd, out, sizeof out);
        cr_assert_eq(rc, 2, "%s: %s", bad[i], out);
        cr_assert(strstr(out, says[i]) && strchr(out, '\n') == out + strlen(out) - 1,
                  "%s: one line naming %s: %s", bad[i], says[i], out);
    }
    harness_rm_rf(dir);
    free(dir);
}

Test(bench_learning, the_referee_judges_the_final_best_from_a_book, .timeout = 600)
{
    char *dir = harness_tmpdir("learn-ref");
    cr_assert_not_null(dir);
    char cmd[4096], out[65536], path[1200];
    snprintf(cmd, sizeof cmd, "model init --blocks 1 --filters 8 --value_hidden 8 --seed 3 "
             "--version 1 %s/m1.kzm", dir);
    cr_assert_eq(harness_kz_out(cmd, NULL, true, out, sizeof out), 0, "%s", out);
    char text[3000];
    snprintf(path, sizeof path, "%s/snapshots.txt", dir);
    snprintf(text, sizeof text, "1.00 1.00 10 5 1 %s/m1.kzm\n", dir);
    cr_assert_eq(harness_write(path, text), 0);
    /* Two king-and-man endings: the referee settles them without tables. */
    snprintf(path, sizeof path, "%s/book.txt", dir);
    cr_assert_eq(harness_write(path, "# two endings\nB...........b.......w...W b\n"
                                     "B.....b...........w.....W w\n"),
                 0);
    snprintf(cmd, sizeof cmd, "%s/bench_learning --rate_only=%s --book=%s --pairs=1 "
             "--curve_pairs=1 --anchors=alphabeta:1 --curve_anchors= --simulations=8 "
             "--threads=1 --perfect=0 --referee_book=%s --referee_anchor=random 2>&1",
             harness_bin_dir(), dir, path, path);
    int rc = harness_sh(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    const char *r = strstr(out, "perfect play's referee: the final best v1 at 8 simulations "
                                "against random from 4 games");
    cr_assert_not_null(r, "%s", out);
    cr_assert_not_null(strstr(r, "referee: 4 games (0 skipped)"), "%s", r);
    cr_assert_not_null(strstr(r, "value-losing turns: "), "%s", r);
    cr_assert_not_null(strstr(r, "      of it <=6 pieces"), "%s", r);
    char *res = NULL;
    snprintf(path, sizeof path, "%s/results.txt", dir);
    res = harness_read_file(path);
    cr_assert(res && strstr(res, "perfect play's referee: the final best v1"), "%s",
              res ? res : "no results.txt");
    free(res);
    /* A referee book that does not read is said before any run. */
    snprintf(cmd, sizeof cmd, "%s/bench_learning --dir=%s/bad --referee_book=/nonexistent 2>&1",
             harness_bin_dir(), dir);
    rc = harness_sh(cmd, out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "referee_book") && strchr(out, '\n') == out + strlen(out) - 1, "%s",
              out);
    harness_rm_rf(dir);
    free(dir);
}
