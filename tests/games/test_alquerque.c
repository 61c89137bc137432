/* Tests of the Alquerque module (games/alquerque.c) against
 * docs/rules-alquerque.md: hand-built positions for the rules A1-A19, perft
 * by hand for the first depths (A20), and the engine against the plain
 * second implementation written from the rules alone (tests/games/ref_alquerque.c):
 * perft both ways, and the legal actions and ends of thousands of random
 * games; the interface's promises (strings, packing, the mover's view, the
 * mirror); kz with --game alquerque. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/alquerque.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "tests/games/ref_alquerque.h"
#include "tests/games/rules_check.h"
#include "common/util.h"

static const game_def *G(void) { return &alquerque_game; }

static game_state s_pos(const char *text) { return rules_position(G(), text); }
static game_state s_place(const char *pieces, char side)
{
    return rules_place(G(), 25, 0, pieces, side);
}
static void s_board(char *out, const char *pieces, char side)
{
    rules_board(out, 25, 0, pieces, side);
}
static void s_play(game_state *s, const char *actions) { rules_play(G(), s, actions); }
#define EXPECT_LEGAL(s, want) RULES_EXPECT_LEGAL(G(), s, want)

/* --- A1-A3: board and start ------------------------------------------------------------------- */

Test(alquerque, a2_start)
{
    game_state s;
    G()->init(&s);
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, ALQ_START);
    cr_assert_eq(G()->to_move(&s), 0);
    cr_assert_str_eq(G()->player_name(0), "light");
    cr_assert_eq(game_find("alquerque"), G());
    char err[200];
    cr_assert_eq(game_check(G(), err, sizeof err), 0, "%s", err);
}

/* --- A4-A6: simple moves ---------------------------------------------------------------------- */

/* A4: forward (straight, and diagonally from an even point) or sideways,
 * never back. Light on 12 (even): 11, 13 sideways, 16, 17, 18 forward; not 6,
 * 7, 8. On 7 (odd): no diagonals. Dark moves down. */
Test(alquerque, a4_forward_or_sideways)
{
    game_state s = s_place("l12 d24", 'l');
    EXPECT_LEGAL(s, "12-11 12-13 12-16 12-17 12-18");
    s = s_place("l7 d24", 'l');
    EXPECT_LEGAL(s, "7-6 7-8 7-12");
    s = s_place("d12 l0", 'd');
    EXPECT_LEGAL(s, "12-6 12-7 12-8 12-11 12-13");
}

/* A5: on the opponent's base row no simple move, captures still. */
Test(alquerque, a5_opponent_base_row)
{
    game_state s = s_place("l22 l7 d0", 'l');
    EXPECT_LEGAL(s, "7-6 7-8 7-12");
    s = s_place("l22 d17 d0", 'l');
    EXPECT_LEGAL(s, "22-12");
    s = s_place("l22 d0", 'l');
    EXPECT_LEGAL(s, "");
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_MOVES);
}

/* A6: after 12-13 the piece may not step back to 12, but on to 14 and
 * forward; another piece's moves leave its memory; a forward step ends it. */
Test(alquerque, a6_no_inverting_the_last_sideways_step)
{
    game_state s = s_place("l12 d24", 'l');
    s_play(&s, "12-13 24-23");
    EXPECT_LEGAL(s, "13-14 13-18");
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, ".............l.........d. l 12-13 24-23");
    s_play(&s, "13-14 23-22");
    EXPECT_LEGAL(s, "14-18 14-19"); /* still only onward: its last step came from 13 */
    s_play(&s, "14-19 22-21");
    EXPECT_LEGAL(s, "19-18 19-24"); /* a forward step: sideways both ways again */
    /* The memory is the piece's: another Light piece steps freely back and forth. */
    s = s_place("l12 l0 d24", 'l');
    s_play(&s, "12-13 24-23 0-1 23-22");
    EXPECT_LEGAL(s, "1-2 1-6 13-14 13-18"); /* 1 came from 0, 13 from 12 */
    /* A jump forgets it (the choice of A6): the piece on 12 came from 11,
     * jumps to 14, and may then step left to 13. */
    char text[64];
    s_board(text, "l12 d13 d20", 'l');
    strcat(text, " 11-12");
    s = s_pos(text);
    EXPECT_LEGAL(s, "12-14");
    s_play(&s, "12-14 20-15");
    EXPECT_LEGAL(s, "14-13 14-18 14-19");
}

/* --- A7-A11: captures ------------------------------------------------------------------------- */

/* A7, A8: jumps in every direction, compulsory, any of them (no majority). */
Test(alquerque, a7_a8_captures_are_compulsory_but_free)
{
    /* Light on 12 can take backward (over 7 to 2) as well; Light on 0 too. */
    game_state s = s_place("l12 d7 l0 d5 d24", 'l');
    EXPECT_LEGAL(s, "0-10 12-2");
    /* A piece able to take two in a row and one able to take one: both may. */
    s = s_place("l0 d1 d7 l20 d21 d24", 'l');
    EXPECT_LEGAL(s, "0-2 20-22");
    s_play(&s, "0-2");
    cr_assert(G()->mid_turn(&s), "A9: the piece on 2 jumps on over 7");
    EXPECT_LEGAL(s, "2-12");
    s = s_place("l0 d1 d7 l20 d21 d24", 'l');
    s_play(&s, "20-22");
    cr_assert_not(G()->mid_turn(&s), "one jump, then Dark moves");
}

/* A9, A10: the same piece jumps on, changing direction, choosing freely;
 * the jumped pieces leave at once; the start point is empty meanwhile. */
Test(alquerque, a9_multiple_captures)
{
    /* 10 jumps 11 to 12, then may take 17 (to 22) or 13 (to 14); after 12-22
     * nothing is left to take. */
    game_state s = s_place("l10 d11 d13 d17 d0", 'l');
    EXPECT_LEGAL(s, "10-12");
    s_play(&s, "10-12");
    EXPECT_LEGAL(s, "12-14 12-22");
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, "d...........ld...d....... l 12");
    s_play(&s, "12-14");
    cr_assert_not(G()->mid_turn(&s));
    /* A ring: 0 takes 1 (to 2), 7 (to 12), 11 (to 10), 5 (to 0): it may land
     * on its own start point. */
    s = s_place("l0 d1 d7 d11 d5 d24", 'l');
    s_play(&s, "0-2 2-12 12-10");
    EXPECT_LEGAL(s, "10-0");
    s_play(&s, "10-0");
    game_state t = s_place("l0 d24", 'd');
    cr_assert_eq(G()->hash(&s), G()->hash(&t));
    /* A sequence crosses the opponent's base row (A5 is about simple moves). */
    s = s_place("l12 d17 d21 d0", 'l');
    s_play(&s, "12-22");
    EXPECT_LEGAL(s, "22-20");
    /* A11: a jump and a step never share an action. */
    cr_assert(G()->is_capture(&s, 22 * 25 + 20));
    cr_assert_not(G()->is_capture(&s, 7 * 25 + 12));
}

/* --- A12-A14: the end ------------------------------------------------------------------------- */

Test(alquerque, a12_ends)
{
    game_state s = s_place("d10 d20", 'l');
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_PIECES);
    s = s_place("l7 d12 d17", 'l'); /* 7 cannot jump 12 (17 taken) nor step */
    EXPECT_LEGAL(s, "7-6 7-8");
    s = s_place("l20 l21 l22 l23 l24 d0", 'l'); /* all on Dark's base row */
    r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_MOVES);
    s = s_place("l12 d17", 'l');
    s_play(&s, "12-22");
    r = G()->result(&s);
    cr_assert(r.over && r.winner == 0 && r.reason == GAME_REASON_NO_PIECES);
}

/* --- A15-A17: the network's view -------------------------------------------------------------- */

/* A15, A16: Dark sees the board turned, left and right exchanged. */
Test(alquerque, a15_a16_planes)
{
    game_state s = s_pos("l.......................d d 23-24");
    float p[7 * 25];
    G()->encode_planes(&s, p);
    cr_assert_eq(p[0 * 25 + 0], 1.0f, "Dark's piece on 24 is the mover's, at 0");
    cr_assert_eq(p[1 * 25 + 24], 1.0f, "Light's piece on 0 turned to 24");
    /* It stepped right (23 to 24): it may not step left, which is its right
     * turned around. */
    cr_assert_eq(p[3 * 25 + 0], 1.0f);
    cr_assert_eq(p[2 * 25 + 0], 0.0f);
}

/* A17: the mirror of a position is the mirrored planes, and its legal set
 * the mirrored legal set (canonical actions). */
Test(alquerque, a17_mirror)
{
    const game_symmetry *m = &G()->symmetries[0];
    cr_assert_str_eq(m->name, "mirror");
    game_state s = s_pos("l.....l......l..........d l 5-6 14-13");
    game_state t = s_pos("....l...l..l........d.... l 9-8 10-11");
    float ps[7 * 25], pt[7 * 25];
    G()->encode_planes(&s, ps);
    G()->encode_planes(&t, pt);
    game_symmetry_planes(G(), 0, ps);
    cr_assert(!memcmp(ps, pt, sizeof ps));
    uint16_t ls[GAME_MAX_LEGAL], lt[GAME_MAX_LEGAL];
    int n = G()->legal_actions(&s, ls), k = G()->legal_actions(&t, lt);
    cr_assert_eq(n, k);
    bool seen[ALQ_ACTIONS] = {false};
    for (int i = 0; i < n; i++)
        seen[m->action(G()->canonical_action(&s, ls[i]))] = true;
    for (int i = 0; i < k; i++)
        cr_assert(seen[G()->canonical_action(&t, lt[i])]);
}

/* --- A18-A19: strings ------------------------------------------------------------------------- */

Test(alquerque, a18_a19_strings)
{
    int a;
    cr_assert_eq(G()->parse_action("c2-c3", &a), 0);
    cr_assert_eq(a, 7 * 25 + 12);
    cr_assert_eq(G()->parse_action("c2xc4", &a), 0);
    cr_assert_eq(a, 7 * 25 + 17);
    cr_assert_eq(G()->parse_action("24x14", &a), 0);
    cr_assert_eq(a, 24 * 25 + 14);
    const char *bad_actions[] = {"", "7", "7-", "-7", "25-1", "f1-a1", "a6-a1", "07-12", "7-12x"};
    for (size_t i = 0; i < sizeof bad_actions / sizeof *bad_actions; i++)
        cr_assert_eq(G()->parse_action(bad_actions[i], &a), KZ_EINVAL, "'%s'", bad_actions[i]);
    const char *bad[] = {
        "",
        "lllllllllldd.lldddddddddd",           /* no side */
        "lllllllllldd.lldddddddddd x",         /* bad side */
        "lllllllllldd.llddddddddd? l",         /* bad point */
        "llllllllllll.lldddddddddd l",         /* 14 Light pieces */
        "lllllllllldd.lldddddddddd l 12",      /* chain on an empty point */
        "lllllllllldd.lldddddddddd l 7",       /* chain on a piece that cannot jump */
        "lllllllllldd.lldddddddddd l 6-7 6-7", /* twice for one piece */
        "lllllllllldd.lldddddddddd l 2-7",     /* not sideways */
        "lllllllllldd.lldddddddddd l 11-12",   /* onto no piece */
        "....................l.... l 21-20",   /* on its opponent's base row */
        "lllllllllldd.lldddddddddd l  6-7",    /* two spaces */
        "lllllllllldd.lldddddddddd l 6-7 3",   /* chain after a step */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        game_state s;
        char err[200] = "";
        cr_assert_eq(G()->parse_position(&s, bad[i], err, sizeof err), KZ_EINVAL, "'%s'",
                     bad[i]);
        cr_assert(err[0], "'%s': a reason", bad[i]);
    }
    /* The longest string fits position_chars. */
    game_state s = s_pos("......llll.llllddddd..... l 5-6 6-7 7-8 8-9 10-11 11-12 12-13 13-14 "
                         "16-15 17-16 18-17 19-18 18-19");
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_leq((int)strlen(pos), G()->position_chars);
}

/* --- A20: perft ------------------------------------------------------------------------------- */

/* By hand (docs/rules-alquerque.md, A20): 4, 5, 6, and the actions of the
 * first two depths. */
Test(alquerque, a20_perft_by_hand)
{
    game_state s;
    G()->init(&s);
    const uint64_t want[] = {4, 5, 6};
    for (int d = 1; d <= 3; d++) {
        cr_assert_eq(game_perft(G(), &s, d), want[d - 1], "depth %d", d);
        cr_assert_eq(game_perft_turns(G(), &s, d), want[d - 1], "turns, depth %d", d);
    }
    EXPECT_LEGAL(s, "6-12 7-12 8-12 13-12");
    const char *after[] = {"6-12", "7-12", "8-12", "13-12"};
    const char *replies[] = {"18-6", "17-7", "16-8 18-8", "11-13"};
    for (int i = 0; i < 4; i++) {
        game_state t = s;
        s_play(&t, after[i]);
        EXPECT_LEGAL(t, replies[i]);
    }
}

/* The engine and the plain implementation count the same trees. */
Test(alquerque, perft_equals_the_plain_implementation)
{
    game_state s;
    G()->init(&s);
    ref_alq r;
    ref_alq_init(&r);
    for (int d = 1; d <= 11; d++)
        cr_assert_eq(game_perft(G(), &s, d), ref_alq_perft(&r, d), "depth %d", d);
    /* The module's own perft counts what the generic loop counts. */
    for (int d = 1; d <= 9; d++)
        cr_assert_eq(game_perft(G(), &s, d), game_perft_generic(G(), &s, d), "depth %d", d);
    for (int d = 1; d <= 9; d++)
        cr_assert_eq(game_perft_turns(G(), &s, d), ref_alq_perft_turns(&r, d), "turns %d", d);
    /* And from a position with long sequences and remembered steps. */
    const char *mid = ".l.l.ldld.d.l.d.dl.d..... l 2-3 6-5";
    s = s_pos(mid);
    cr_assert(ref_alq_parse(&r, mid));
    for (int d = 1; d <= 7; d++) {
        cr_assert_eq(game_perft(G(), &s, d), ref_alq_perft(&r, d), "depth %d", d);
        cr_assert_eq(game_perft_turns(G(), &s, d), ref_alq_perft_turns(&r, d), "turns %d", d);
    }
}

/* Random games, state by state: the engine's legal actions and ends are the
 * plain implementation's; the position string reads back (and the plain
 * implementation reads it as the same position); pack and unpack_planes give
 * encode_planes; canonical_action is an involution. */
Test(alquerque, random_games_agree_with_the_plain_implementation)
{
    rng_t rng;
    rng_seed(&rng, 11);
    long states = 0;
    for (int game = 0; game < 1500; game++) {
        game_state s;
        G()->init(&s);
        ref_alq r;
        ref_alq_init(&r);
        for (;;) {
            game_result res = G()->result(&s);
            int winner;
            bool over = ref_alq_over(&r, &winner);
            cr_assert_eq(res.over, over, "game %d", game);
            if (over) {
                cr_assert_eq(res.winner, winner);
                break;
            }
            uint16_t legal[GAME_MAX_LEGAL];
            int ref_legal[REF_ALQ_MAX_LEGAL];
            int n = G()->legal_actions(&s, legal), m = ref_alq_legal(&r, ref_legal);
            char pos[GAME_POSITION_CHARS + 1];
            G()->format_position(&s, pos, sizeof pos);
            cr_assert_eq(n, m, "'%s': %d legal actions, the plain one %d", pos, n, m);
            for (int i = 0; i < n; i++)
                cr_assert_eq(legal[i], ref_legal[i], "'%s': action %d", pos, i);
            if (states % 7 == 0) {
                game_state t = s_pos(pos);
                cr_assert_eq(G()->hash(&t), G()->hash(&s), "'%s'", pos);
                ref_alq q;
                cr_assert(ref_alq_parse(&q, pos));
                cr_assert_eq(ref_alq_legal(&q, ref_legal), n, "'%s'", pos);
                float x[7 * 25], y[7 * 25];
                uint8_t packed[GAME_PACKED_BYTES];
                G()->encode_planes(&s, x);
                G()->pack(&s, packed);
                cr_assert_eq(G()->unpack_planes(packed, y), 0);
                cr_assert(!memcmp(x, y, sizeof x), "'%s'", pos);
                for (int i = 0; i < n; i++)
                    cr_assert_eq(G()->canonical_action(&s, G()->canonical_action(&s, legal[i])),
                                 legal[i]);
            }
            int a = legal[rng_below(&rng, (uint32_t)n)];
            G()->apply(&s, a);
            ref_alq_apply(&r, a);
            states++;
        }
    }
    cr_assert_gt(states, 30000);
}

/* --- kz with --game alquerque ----------------------------------------------------------------- */

Test(alquerque, kz_perft_play_and_match)
{
    proc_output o;
    const char *perft[] = {"perft", "--game=alquerque", "3", NULL};
    cr_assert_eq(harness_run_bin("kz", perft, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "perft 1: 4\nperft 2: 5\nperft 3: 6\n"), "%s", o.out);
    proc_output_free(&o);
    /* kz play: the person plays Dark (the board turned) against greedy; the
     * engine opens, the person's jump is entered with algebraic points. */
    const char *play[] = {"play", "--game=alquerque", "--player=greedy", "--color=dark",
                          "--seed=1", NULL};
    proc_opts po = {.input = "help\nmoves\nquit\n"};
    cr_assert_eq(harness_run_bin("kz", play, &po, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "You play dark; the engine (greedy) plays light"), "%s", o.out);
    cr_assert(strstr(o.out, "turned: Dark's side at the bottom"), "%s", o.out);
    cr_assert(strstr(o.out, "not back to where their last sideways step came from"), "%s",
              o.out);
    cr_assert(strstr(o.out, "last: light "), "the engine's opening marked: %s", o.out);
    proc_output_free(&o);
    const char *play2[] = {"play", "--game=alquerque", "--player=random", "--color=l",
                           "--position=...........ld.......d.... l", NULL};
    po.input = "11-10\nb3xd3\nquit\n";
    cr_assert_eq(harness_run_bin("kz", play2, &po, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "illegal: 11-10; legal: 11x13"), "%s", o.out);
    cr_assert(strstr(o.out, "last: light 11x13"), "%s", o.out);
    proc_output_free(&o);
    const char *match[] = {"match", "--game=alquerque", "alphabeta:2", "random", "--games=6",
                           "--openings=3", "--quiet", NULL};
    cr_assert_eq(harness_run_bin("kz", match, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "after 6 games"), "%s", o.out);
    proc_output_free(&o);
}
