/* test_khreibaga_kz: the `kz` rules commands as a user runs them (the real
 * binary from $KZ_BIN_DIR, run by harness_run_bin): the output format of
 * `kz moves` and its `result: WHO (REASON)` line, `kz perft`, help, and exit
 * status 2 with a one-line error for every kind of bad input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"
#include "tests/games/khreibaga_lines.h"

/* Runs kz with the NULL-terminated arguments (argv[0] is not given). */
static proc_output s_kz(const char *const *args)
{
    proc_output r;
    harness_run_bin("kz", args, NULL, &r);
    return r;
}

/* Asserts exit status 2, nothing on stdout, and exactly one line on stderr
 * that mentions `needle`. */
static void s_expect_usage_error(const char *const *args, const char *needle)
{
    proc_output r = s_kz(args);
    cr_assert_eq(r.status, 2, "kz %s ...: status %d, stderr '%s'", args[0], r.status, r.err);
    cr_assert_str_empty(r.out, "kz %s ...: stdout '%s'", args[0], r.out);
    size_t len = strlen(r.err);
    cr_assert(len > 1 && r.err[len - 1] == '\n' && !memchr(r.err, '\n', len - 1),
              "kz %s ...: one line on stderr, got '%s'", args[0], r.err);
    cr_assert(strstr(r.err, needle), "kz %s ...: '%s' does not mention '%s'", args[0], r.err,
              needle);
    proc_output_free(&r);
}

/* Splits a line of actions into args after `prefix` (NULL-terminated). */
static int s_split(char *line, const char **args, int at, int cap)
{
    char *save = NULL;
    for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        cr_assert_lt(at, cap - 1);
        args[at++] = t;
    }
    args[at] = NULL;
    return at;
}

/* --- kz moves -------------------------------------------------------------------------- */

/* R2, R3: the start allows 6-12, 7-12, 8-12, one per line in action order. */
Test(khreibaga_kz, moves_from_start)
{
    proc_output r = s_kz((const char *[]){"moves", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "6-12\n7-12\n8-12\n");
    proc_output_free(&r);
}

/* R8: after 6-12 White must capture: 16x6 and 18x6, sorted by src*25+dst. */
Test(khreibaga_kz, moves_after_actions)
{
    proc_output r = s_kz((const char *[]){"moves", "6-12", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "16-6\n18-6\n");
    proc_output_free(&r);
    /* 'x' and '-' are interchangeable (R21); mid-sequence the chain piece goes on. */
    r = s_kz((const char *[]){"moves", "6-12", "16x6", "1x11", "18x6", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "6-16\n");
    proc_output_free(&r);
}

/* R12: stalemate and elimination, in the `result: WHO (REASON)` line. */
Test(khreibaga_kz, moves_result_losses)
{
    proc_output r =
        s_kz((const char *[]){"moves", "--position", ".B...w................... b", "1-0", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "result: black (no-moves)\n");
    proc_output_free(&r);
    r = s_kz((const char *[]){"moves", "--position", "B...........w............ b", "0x18",
                              NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "result: black (no-pieces)\n");
    proc_output_free(&r);
    r = s_kz((const char *[]){"moves", "--position", "......................... w", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "result: black (no-pieces)\n");
    proc_output_free(&r);
}

/* R14 through the command line: history accumulates over the given actions
 * (see r14_threefold_repetition in test_khreibaga.c). */
Test(khreibaga_kz, moves_result_repetition)
{
    proc_output r = s_kz((const char *[]){"moves", "--position", "B.......................W b",
                                    "0-1", "24-23", "1-0", "23-24", "0-1", "24-23", "1-0",
                                    "23-24", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "result: draw (repetition)\n");
    proc_output_free(&r);
    /* One ply short of it the game goes on. */
    r = s_kz((const char *[]){"moves", "--position", "B.......................W b", "0-1",
                              "24-23", "1-0", "23-24", "0-1", "24-23", "1-0", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "23-24\n") && !strstr(r.out, "result"), "%s", r.out);
    proc_output_free(&r);
}

/* R13: the 50-ply king tour of r13_fifty_king_moves_draw. */
Test(khreibaga_kz, moves_result_no_progress)
{
    static const int bk[5] = {0, 1, 2, 3, 4}, wk[4] = {24, 23, 22, 21};
    static char acts[50][8];
    const char *args[64] = {"moves", "--position", "B.......................W b"};
    int n = 3;
    for (int k = 0; k < 25; k++) {
        snprintf(acts[2 * k], 8, "%d-%d", bk[k % 5], bk[(k + 1) % 5]);
        snprintf(acts[2 * k + 1], 8, "%d-%d", wk[k % 4], wk[(k + 1) % 4]);
        args[n++] = acts[2 * k];
        args[n++] = acts[2 * k + 1];
    }
    args[n] = NULL;
    proc_output r = s_kz(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "result: draw (no-progress)\n");
    proc_output_free(&r);
}

/* R15 and R12 over R15 through the command line: the 300-ply lines. */
Test(khreibaga_kz, moves_result_length)
{
    static const char *tails[2] = {KL_LONG_TAIL_LENGTH, KL_LONG_TAIL_LOSS};
    static const char *want[2] = {"result: draw (length)\n", "result: white (no-pieces)\n"};
    for (int k = 0; k < 2; k++) {
        char *line = malloc(8192);
        snprintf(line, 8192, "%s%s", KL_LONG_PREFIX, tails[k]);
        const char *args[1000] = {"moves", "--position", KL_FORTRESS};
        s_split(line, args, 3, 1000);
        proc_output r = s_kz(args);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert_str_eq(r.out, want[k]);
        proc_output_free(&r);
        free(line);
    }
}

/* R12 over R13 through the command line (KL_CAGE, see khreibaga_lines.h). */
Test(khreibaga_kz, moves_result_loss_over_no_progress)
{
    char *line = strdup(KL_CAGE_LINE);
    const char *args[80] = {"moves", "--position", KL_CAGE};
    s_split(line, args, 3, 80);
    proc_output r = s_kz(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "result: black (no-moves)\n");
    proc_output_free(&r);
    free(line);
}

/* --- bad input --------------------------------------------------------------------- */

Test(khreibaga_kz, bad_input_exits_2_with_one_line)
{
    s_expect_usage_error((const char *[]){"moves", "--position", "xyz", NULL}, "position");
    s_expect_usage_error((const char *[]){"moves", "--position", "bbbbbbbbbbbbbwwwwwwwwwwww b",
                                          NULL},
                         "12");
    s_expect_usage_error((const char *[]){"moves", "--position", "W...................b.... b",
                                          NULL},
                         "promotion row");
    s_expect_usage_error((const char *[]){"moves", "--position",
                                          "............b...........W b 12", NULL},
                         "capture");
    s_expect_usage_error((const char *[]){"moves", "0-5", NULL}, "illegal");
    s_expect_usage_error((const char *[]){"moves", "7-12", "7-12", NULL}, "illegal");
    s_expect_usage_error((const char *[]){"moves", "7_12", NULL}, "7_12");
    s_expect_usage_error((const char *[]){"moves", "7-25", NULL}, "7-25");
    s_expect_usage_error((const char *[]){"moves", "--frobnicate", NULL}, "frobnicate");
    s_expect_usage_error((const char *[]){"moves", "--position", NULL}, "position");
    s_expect_usage_error((const char *[]){"moves", "--position", "......................... w",
                                          "1-2", NULL},
                         "over");
    s_expect_usage_error((const char *[]){"show", "--position", "bbb", NULL}, "position");
    s_expect_usage_error((const char *[]){"show", "9-9", NULL}, "illegal");
    s_expect_usage_error((const char *[]){"perft", NULL}, "DEPTH");
    s_expect_usage_error((const char *[]){"perft", "0", NULL}, "DEPTH");
    s_expect_usage_error((const char *[]){"perft", "three", NULL}, "three");
    s_expect_usage_error((const char *[]){"perft", "--depth", "3", NULL}, "depth");
    s_expect_usage_error((const char *[]){"perft", "--position", "b", "3", NULL}, "position");
    s_expect_usage_error((const char *[]){"random-game", "--seed", "-1", NULL}, "seed");
    s_expect_usage_error((const char *[]){"random-game", "--colour", NULL}, "colour");
    s_expect_usage_error((const char *[]){"no-such-command", NULL}, "no-such-command");
}

/* --- kz perft --------------------------------------------------------------------------- */

/* R22: perft 1..4 = 3, 4, 5, 7 (argued in r22_perft_start_by_hand), one
 * line per depth, then the speed line. */
Test(khreibaga_kz, perft_prints_every_depth)
{
    proc_output r = s_kz((const char *[]){"perft", "4", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(!strncmp(r.out, "perft 1: 3\nperft 2: 4\nperft 3: 5\nperft 4: 7\n", 44),
              "got '%s'", r.out);
    cr_assert(strstr(r.out + 44, "nodes per second"), "got '%s'", r.out);
    proc_output_free(&r);
    /* From a position: B0 w12 has 0x18 and 0x24 (R6), then White has no piece. */
    r = s_kz((const char *[]){"perft", "--position", "B...........w............ b", "2",
                              NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(!strncmp(r.out, "perft 1: 2\nperft 2: 0\n", 22), "got '%s'", r.out);
    proc_output_free(&r);
}

/* --- help -------------------------------------------------------------------------------- */

Test(khreibaga_kz, help_exits_0)
{
    static const char *cmds[] = {"moves", "perft", "show", "random-game"};
    proc_output r = s_kz((const char *[]){"--help", NULL});
    cr_assert_eq(r.status, 0);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        cr_assert(strstr(r.out, cmds[i]), "kz --help does not list %s", cmds[i]);
    proc_output_free(&r);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        r = s_kz((const char *[]){cmds[i], "--help", NULL});
        cr_assert_eq(r.status, 0, "kz %s --help: %d", cmds[i], r.status);
        cr_assert(strstr(r.out, "usage: kz"), "kz %s --help: '%s'", cmds[i], r.out);
        proc_output_free(&r);
    }
}

/* --- show and random-game ------------------------------------------------------------- */

/* kz show draws the pieces and, mid-sequence, names the chain piece. */
Test(khreibaga_kz, show_draws_the_board)
{
    proc_output r = s_kz((const char *[]){"show", "6-12", "16x6", "1x11", "18x6", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* 6-12 16x6 1x11 18x6: Black lost 12 and 1 moved to 11; White's men left
     * 16 and 18, and the one now on 6 must capture on (6x16). */
    cr_assert(strstr(r.out, "b.bbbbwbbbbb.www.w.wwwwww w 6"), "%s", r.out);
    cr_assert(strstr(r.out, "[w]"), "the chain piece is marked: %s", r.out);
    cr_assert(strstr(r.out, "white to move"), "%s", r.out);
    proc_output_free(&r);
}

/* A random game replays through `kz moves` to the same result: the printed
 * actions are legal in order and the printed result is the rules' verdict. */
Test(khreibaga_kz, random_game_replays_through_moves)
{
    for (int seed = 1; seed <= 3; seed++) {
        char seedstr[16];
        snprintf(seedstr, sizeof seedstr, "%d", seed);
        proc_output g = s_kz((const char *[]){"random-game", "--seed", seedstr, NULL});
        cr_assert_eq(g.status, 0, "%s", g.err);
        proc_output again = s_kz((const char *[]){"random-game", "--seed", seedstr, NULL});
        cr_assert_str_eq(g.out, again.out, "the same seed gives the same game");
        proc_output_free(&again);
        static char acts[2000][16];
        const char *args[2100] = {"moves"};
        int n = 1;
        char want[128] = "";
        char *save = NULL;
        for (char *l = strtok_r(g.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char who[16], act[16];
            if (sscanf(l, "ply %*d: %15s %15s", who, act) == 2) {
                cr_assert_lt(n, 2000);
                snprintf(acts[n], sizeof acts[n], "%s", act);
                args[n] = acts[n];
                n++;
            } else if (!strncmp(l, "result: ", 8)) {
                /* "result: W (R) after N plies, M actions" -> "result: W (R)" */
                const char *close = strchr(l, ')');
                cr_assert(close, "%s", l);
                snprintf(want, sizeof want, "%.*s\n", (int)(close - l + 1), l);
            }
        }
        args[n] = NULL;
        cr_assert(want[0], "random-game printed no result");
        proc_output m = s_kz(args);
        cr_assert_eq(m.status, 0, "%s", m.err);
        cr_assert_str_eq(m.out, want);
        proc_output_free(&m);
        proc_output_free(&g);
    }
}
