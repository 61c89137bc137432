/* Tests of the English draughts module (games/draughts.c) against
 * docs/rules-draughts.md: hand-built positions for the rules D1-D20, the
 * whole-move perft from the start against the published table (OEIS
 * A133046) for the depths that take seconds (depth 11 is `make bench`'s),
 * and the engine against the plain second implementation written from the
 * rules alone (tests/games/ref_draughts.c): perft both ways, and the legal
 * actions and ends (losses, both draws) of random games; the interface's
 * promises (strings, packing, the mover's view); kz with --game draughts,
 * a network of its shape included. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/draughts.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "tests/games/ref_draughts.h"
#include "tests/games/rules_check.h"
#include "common/util.h"

static const game_def *G(void) { return &draughts_game; }

static game_state s_pos(const char *text) { return rules_position(G(), text); }
static game_state s_place(const char *pieces, char side)
{
    return rules_place(G(), 32, 1, pieces, side);
}
static void s_board(char *out, const char *pieces, char side)
{
    rules_board(out, 32, 1, pieces, side);
}
static void s_play(game_state *s, const char *actions) { rules_play(G(), s, actions); }
#define EXPECT_LEGAL(s, want) RULES_EXPECT_LEGAL(G(), s, want)

/* --- D1-D3: board and start ------------------------------------------------------------------- */

Test(draughts, d1_d2_start_and_registration)
{
    game_state s;
    G()->init(&s);
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, DR_START);
    cr_assert_eq(G()->to_move(&s), 0);
    cr_assert_str_eq(G()->player_name(0), "black");
    cr_assert_eq(game_find("draughts"), G());
    char err[200];
    cr_assert_eq(game_check(G(), err, sizeof err), 0, "%s", err);
    cr_assert_eq(G()->planes * G()->height * G()->width, 7 * 8 * 8);
    cr_assert_eq(G()->action_count, 32 * 32);
    cr_assert_eq(G()->n_symmetries, 0, "D18: no symmetry");
    EXPECT_LEGAL(s, "9-13 9-14 10-14 10-15 11-15 11-16 12-16");
    s_play(&s, "11-15");
    EXPECT_LEGAL(s, "21-17 22-17 22-18 23-18 23-19 24-19 24-20");
}

/* --- D4-D5: simple moves ---------------------------------------------------------------------- */

Test(draughts, d4_d5_men_forward_kings_both_ways)
{
    game_state s = s_place("b14 w32", 'b');
    EXPECT_LEGAL(s, "14-17 14-18");
    s = s_place("b14 w32", 'w');
    EXPECT_LEGAL(s, "32-27 32-28");
    s = s_place("B14 w32", 'b');
    EXPECT_LEGAL(s, "14-9 14-10 14-17 14-18");
    s = s_place("b5 b12 w32", 'b'); /* on the edges: one forward square each */
    EXPECT_LEGAL(s, "5-9 12-16");
}

/* --- D6-D10: captures ------------------------------------------------------------------------- */

/* D6, D7: captures compulsory, any of them; men only forward, kings both ways. */
Test(draughts, d6_d7_captures)
{
    game_state s = s_place("b9 b14 w18 w30", 'b');
    EXPECT_LEGAL(s, "14-23");
    cr_assert(G()->must_capture(&s));
    cr_assert(G()->is_capture(&s, 13 * 32 + 22));
    cr_assert_not(G()->is_capture(&s, 8 * 32 + 12));
    s = s_place("b18 w14 w30", 'b'); /* a man does not take backward */
    EXPECT_LEGAL(s, "18-22 18-23");
    cr_assert_not(G()->must_capture(&s));
    s = s_place("B18 w14 w30", 'b'); /* a king does */
    EXPECT_LEGAL(s, "18-9");
    /* Two pieces able to take: either; no rule of the majority. */
    s = s_place("b1 w6 b9 w14 w22 w23 w32", 'b');
    EXPECT_LEGAL(s, "1-10 9-18");
}

/* D8: the same piece jumps on while it can, any continuation. */
Test(draughts, d8_multiple_jumps)
{
    game_state s = s_place("b9 w14 w22 w23 w32", 'b');
    EXPECT_LEGAL(s, "9-18");
    s_play(&s, "9-18");
    cr_assert(G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 0);
    EXPECT_LEGAL(s, "18-25 18-27");
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, ".................b...ww........w b 18");
    game_state t = s_pos(pos);
    cr_assert_eq(G()->hash(&t), G()->hash(&s));
    s_play(&s, "18-27");
    cr_assert_not(G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_eq(G()->ply(&s), 1);
}

/* D10: a man that reaches the far row is crowned and its turn ends, even
 * where the new king could jump on; a king's sequence goes on. */
Test(draughts, d10_crowning_ends_the_turn)
{
    game_state s = s_place("b22 w26 w27", 'b');
    EXPECT_LEGAL(s, "22-31");
    s_play(&s, "22-31");
    cr_assert_not(G()->mid_turn(&s));
    cr_assert_eq(draughts_piece_at(&s, 30), 'B');
    cr_assert_eq(G()->to_move(&s), 1);
    s = s_place("B22 w26 w27", 'b');
    s_play(&s, "22-31");
    cr_assert(G()->mid_turn(&s));
    EXPECT_LEGAL(s, "31-24");
    /* A simple move onto the far row crowns too; White crowns on 1-4. */
    s = s_place("b25 w8", 'b');
    s_play(&s, "25-29 8-4");
    cr_assert_eq(draughts_piece_at(&s, 28), 'B');
    cr_assert_eq(draughts_piece_at(&s, 3), 'W');
    EXPECT_LEGAL(s, "29-25");
}

/* --- D12-D15: the end ------------------------------------------------------------------------- */

Test(draughts, d12_losses)
{
    game_state s = s_place("w30", 'b');
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_PIECES);
    s = s_place("b5 w9 w14", 'b'); /* blocked: no step, no jump */
    r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_MOVES);
    EXPECT_LEGAL(s, "");
    s = s_place("b14 w18", 'b');
    s_play(&s, "14-23");
    r = G()->result(&s);
    cr_assert(r.over && r.winner == 0 && r.reason == GAME_REASON_NO_PIECES);
}

/* The position string (turn start) of s. */
static void s_text(const game_state *s, char *buf)
{
    G()->format_position(s, buf, GAME_POSITION_CHARS + 1);
}

/* Plays n quiet turns (kings' simple moves) from s, the choice the first
 * legal action that moves a king, leaves the other side no capture and
 * makes no position stand a third time (the test's own count over the turn
 * starts since the walk began, or since the last walk's when `again`). */
static void s_quiet_walk(game_state *s, int n, bool again)
{
    static char seen[200][GAME_POSITION_CHARS + 1];
    static int n_seen;
    if (!again) {
        n_seen = 0;
        s_text(s, seen[n_seen++]);
    }
    for (int k = 0; k < n; k++) {
        cr_assert_not(G()->result(s).over, "turn %d", k);
        uint16_t legal[GAME_MAX_LEGAL];
        int m = G()->legal_actions(s, legal), i;
        for (i = 0; i < m; i++) {
            int src = legal[i] / 32;
            char p = draughts_piece_at(s, src);
            if (p != 'B' && p != 'W')
                continue;
            game_state t = *s;
            G()->apply(&t, legal[i]);
            if (G()->must_capture(&t))
                continue;
            char pos[GAME_POSITION_CHARS + 1];
            s_text(&t, pos);
            int times = 0;
            for (int j = 0; j < n_seen; j++)
                times += !strcmp(seen[j], pos);
            if (times < 2)
                break;
        }
        cr_assert_lt(i, m, "turn %d: no quiet king move left", k);
        G()->apply(s, legal[i]);
        s_text(s, seen[n_seen++]);
    }
}

/* D13: 80 turns in a row of kings' simple moves draw; a man move (or a
 * capture) starts the count again. The count is an input plane. */
Test(draughts, d13_forty_moves_a_side)
{
    game_state s = s_place("B1 B2 b12 W31 W32", 'b');
    s_quiet_walk(&s, 78, false);
    float planes[7 * 64];
    G()->encode_planes(&s, planes);
    cr_assert_float_eq(planes[6 * 64 + 10], 78.0f / 80.0f, 1e-6);
    game_state t = s;
    s_quiet_walk(&t, 1, true);
    cr_assert_not(G()->result(&t).over);
    s_quiet_walk(&t, 1, true);
    game_result r = G()->result(&t);
    cr_assert(r.over && r.winner == -1 && r.reason == GAME_REASON_NO_PROGRESS, "%d", r.reason);
    EXPECT_LEGAL(t, "");
    /* Instead the man moves: the count starts again. */
    s_play(&s, "12-16");
    cr_assert_not(G()->result(&s).over);
    G()->encode_planes(&s, planes);
    cr_assert_eq(planes[6 * 64 + 10], 0.0f);
    s_quiet_walk(&s, 79, false);
    cr_assert_not(G()->result(&s).over);
}

/* D14: the third time a position stands at a turn start, the game is
 * drawn; the given position is the first time. */
Test(draughts, d14_repetition)
{
    game_state s = s_place("B1 W32", 'b');
    float planes[7 * 64];
    s_play(&s, "1-6 32-27 6-1 27-32");
    cr_assert_not(G()->result(&s).over);
    G()->encode_planes(&s, planes);
    cr_assert_eq(planes[5 * 64 + 0], 1.0f, "D17: the position stood before");
    game_state u = s_place("B1 W32", 'b');
    cr_assert_neq(G()->hash(&u), G()->hash(&s), "the plane differs, so does the hash");
    s_play(&s, "1-6 32-27 6-1");
    cr_assert_not(G()->result(&s).over);
    s_play(&s, "27-32");
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == -1 && r.reason == GAME_REASON_REPETITION);
    EXPECT_LEGAL(s, "");
    /* By any path: the position counts, not the moves. */
    s = s_place("B1 W32", 'b');
    s_play(&s, "1-6 32-27 6-1 27-32 1-5 32-28 5-1");
    cr_assert_not(G()->result(&s).over);
    s_play(&s, "28-32");
    r = G()->result(&s);
    cr_assert(r.over && r.reason == GAME_REASON_REPETITION);
    /* A man move in between: what stood before it cannot stand again. */
    s = s_place("B1 b12 W32", 'b');
    s_play(&s, "1-6 32-27 6-1 27-32 12-16 32-27 1-6 27-32 6-1");
    cr_assert_not(G()->result(&s).over);
    s_play(&s, "32-27 1-6 27-32 6-1");
    r = G()->result(&s);
    cr_assert(r.over && r.reason == GAME_REASON_REPETITION);
}

/* --- D16-D17: the network's view -------------------------------------------------------------- */

Test(draughts, d16_d17_planes)
{
    float p[7 * 64];
    game_state s = s_place("b1 w32", 'w');
    G()->encode_planes(&s, p);
    cr_assert_eq(p[0 * 64 + 1], 1.0f, "White's man on 32 is the mover's, at row 0 col 1");
    cr_assert_eq(p[2 * 64 + 62], 1.0f, "Black's man on 1 turned to row 7 col 6");
    s = s_place("b1 W32", 'b');
    G()->encode_planes(&s, p);
    cr_assert_eq(p[0 * 64 + 1], 1.0f);
    cr_assert_eq(p[3 * 64 + 62], 1.0f);
    float sum = 0;
    for (int i = 0; i < 7 * 64; i++)
        sum += p[i];
    cr_assert_eq(sum, 2.0f);
    /* Turned actions: White's 32-27 is the canonical 1-6. */
    s = s_place("b1 w32", 'w');
    cr_assert_eq(G()->canonical_action(&s, 31 * 32 + 26), 0 * 32 + 5);
    cr_assert_eq(G()->canonical_action(&s, 0 * 32 + 5), 31 * 32 + 26);
    /* The start turned is White's start. */
    game_state a, b;
    G()->init(&a);
    b = s_pos("bbbbbbbbbbbb........wwwwwwwwwwww w");
    float pa[7 * 64], pb[7 * 64];
    G()->encode_planes(&a, pa);
    G()->encode_planes(&b, pb);
    cr_assert(!memcmp(pa, pb, sizeof pa));
    /* The chain piece's plane. */
    s = s_pos(".................b...ww........w b 18");
    G()->encode_planes(&s, p);
    cr_assert_eq(p[4 * 64 + 4 * 8 + 3], 1.0f); /* 18: row 4, col 3 */
}

/* --- D19-D20: strings ------------------------------------------------------------------------- */

Test(draughts, d19_d20_strings)
{
    int a;
    cr_assert_eq(G()->parse_action("11-15", &a), 0);
    cr_assert_eq(a, 10 * 32 + 14);
    cr_assert_eq(G()->parse_action("22x15", &a), 0);
    cr_assert_eq(a, 21 * 32 + 14);
    cr_assert_eq(G()->parse_action("c3-d4", &a), 0);
    cr_assert_eq(a, 21 * 32 + 17, "c3 is 22, d4 is 18");
    cr_assert_eq(G()->parse_action("f6xd4", &a), 0);
    cr_assert_eq(a, 10 * 32 + 17);
    cr_assert_eq(G()->parse_action("b8-a7", &a), 0);
    cr_assert_eq(a, 0 * 32 + 4);
    const char *bad_actions[] = {"", "1", "1-", "-1", "33-1", "0-4", "01-5", "a8-b7", "i1-a1",
                                 "11-15x", "11 15"};
    for (size_t i = 0; i < sizeof bad_actions / sizeof *bad_actions; i++)
        cr_assert_eq(G()->parse_action(bad_actions[i], &a), KZ_EINVAL, "'%s'", bad_actions[i]);
    const char *bad[] = {
        "",
        "bbbbbbbbbbbb........wwwwwwwwwwww",      /* no side */
        "bbbbbbbbbbbb........wwwwwwwwwwww x",    /* bad side */
        "bbbbbbbbbbbb........wwwwwwwwwwwx b",    /* bad square */
        "bbbbbbbbbbbbb.......wwwwwwwwwwww b",    /* 13 Black pieces */
        "w............................... b",    /* a White man on White's crowning row */
        "............................b... w",    /* a Black man on Black's crowning row */
        "bbbbbbbbbbbb........wwwwwwwwwwww b 9",  /* chain on a piece that cannot jump */
        "bbbbbbbbbbbb........wwwwwwwwwwww b 13", /* chain on an empty square */
        "bbbbbbbbbbbb........wwwwwwwwwwww b 33", /* no such square */
        "bbbbbbbbbbbb........wwwwwwwwwwww b  9", /* two spaces */
        "bbbbbbbbbbbb........wwwwwwwwwwww bb",   /* junk after the side */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        game_state s;
        char err[200] = "";
        cr_assert_eq(G()->parse_position(&s, bad[i], err, sizeof err), KZ_EINVAL, "'%s'",
                     bad[i]);
        cr_assert(err[0], "'%s': a reason", bad[i]);
    }
    /* Kings may stand anywhere; the longest string fits position_chars. */
    game_state s = s_pos("W..............................B w");
    cr_assert_eq(draughts_piece_at(&s, 0), 'W');
    s = s_pos(".................b...ww........w b 18");
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_leq((int)strlen(pos), G()->position_chars);
}

/* --- D21: perft ------------------------------------------------------------------------------- */

/* The published whole-move perft (OEIS A133046) to the depths that take
 * seconds; kz perft --game draughts --turns 11 and make bench go to 11. */
Test(draughts, d21_perft_equals_the_published_table, .timeout = 600)
{
    game_state s;
    G()->init(&s);
    const uint64_t want[] = {1, 7, 49, 302, 1469, 7361, 36768, 179740, 845931, 3963680};
    for (int d = 0; d <= 9; d++)
        cr_assert_eq(game_perft_turns(G(), &s, d), want[d], "depth %d", d);
    /* The module's own hop perft counts what the generic loop counts. */
    for (int d = 1; d <= 8; d++)
        cr_assert_eq(game_perft(G(), &s, d), game_perft_generic(G(), &s, d), "depth %d", d);
}

/* The engine and the plain implementation count the same trees, from the
 * start and from a middle game with kings. */
Test(draughts, perft_equals_the_plain_implementation, .timeout = 600)
{
    game_state s;
    G()->init(&s);
    ref_dr r;
    ref_dr_init(&r);
    for (int d = 1; d <= 6; d++) {
        cr_assert_eq(game_perft(G(), &s, d), ref_dr_perft(&r, d), "depth %d", d);
        cr_assert_eq(game_perft_turns(G(), &s, d), ref_dr_perft_turns(&r, d), "turns %d", d);
    }
    char mid[40];
    s_board(mid, "B5 b7 b9 b12 w14 W17 b19 w22 w24 b26 W27 w30", 'w');
    s = s_pos(mid);
    cr_assert(ref_dr_parse(&r, mid));
    for (int d = 1; d <= 5; d++) {
        cr_assert_eq(game_perft(G(), &s, d), ref_dr_perft(&r, d), "depth %d", d);
        cr_assert_eq(game_perft_turns(G(), &s, d), ref_dr_perft_turns(&r, d), "turns %d", d);
    }
    ref_dr_free(&r);
}

/* Random games, state by state: the engine's legal actions and ends (the
 * draws included) are the plain implementation's; the position string is
 * the plain one's and reads back; pack and unpack_planes give
 * encode_planes; canonical_action is an involution; legal_mask and
 * is_legal agree with legal_actions. */
Test(draughts, random_games_agree_with_the_plain_implementation, .timeout = 600)
{
    rng_t rng;
    rng_seed(&rng, 13);
    long states = 0;
    int reasons[GAME_REASON_COUNT] = {0};
    ref_dr r;
    ref_dr_init(&r);
    for (int game = 0; game < 300; game++) {
        game_state s;
        G()->init(&s);
        ref_dr_free(&r);
        ref_dr_init(&r);
        for (;;) {
            game_result res = G()->result(&s);
            int winner, reason;
            bool over = ref_dr_over(&r, &winner, &reason);
            char pos[GAME_POSITION_CHARS + 1], ref_pos[48];
            G()->format_position(&s, pos, sizeof pos);
            ref_dr_format(&r, ref_pos);
            cr_assert_str_eq(pos, ref_pos, "game %d", game);
            cr_assert_eq(res.over, over, "game %d '%s'", game, pos);
            if (over) {
                cr_assert_eq(res.winner, winner, "'%s'", pos);
                cr_assert_eq(res.reason, reason, "'%s'", pos);
                reasons[reason]++;
                break;
            }
            uint16_t legal[GAME_MAX_LEGAL];
            int ref_legal[REF_DR_MAX_LEGAL];
            int n = G()->legal_actions(&s, legal), m = ref_dr_legal(&r, ref_legal);
            cr_assert_eq(n, m, "'%s': %d legal actions, the plain one %d", pos, n, m);
            cr_assert_leq(n, G()->max_legal);
            for (int i = 0; i < n; i++)
                cr_assert_eq(legal[i], ref_legal[i], "'%s': action %d", pos, i);
            if (states % 5 == 0) {
                game_state t = s_pos(pos);
                float x[7 * 64], y[7 * 64];
                uint8_t packed[GAME_PACKED_BYTES];
                G()->encode_planes(&s, x);
                G()->pack(&s, packed);
                cr_assert_eq(G()->unpack_planes(packed, y), 0);
                cr_assert(!memcmp(x, y, sizeof x), "'%s'", pos);
                G()->encode_planes(&t, y);
                cr_assert(!memcmp(x, y, 5 * 64 * sizeof *x), "'%s': the pieces read back", pos);
                uint8_t mask[DR_ACTIONS];
                game_legal_mask(G(), &s, mask);
                int k = 0;
                for (int a = 0; a < DR_ACTIONS; a++) {
                    k += mask[a];
                    cr_assert_eq(game_is_legal(G(), &s, a), mask[a] == 1);
                }
                cr_assert_eq(k, n);
                for (int i = 0; i < n; i++)
                    cr_assert_eq(G()->canonical_action(&s, G()->canonical_action(&s, legal[i])),
                                 legal[i]);
            }
            int a = legal[rng_below(&rng, (uint32_t)n)];
            G()->apply(&s, a);
            ref_dr_apply(&r, a);
            states++;
        }
    }
    ref_dr_free(&r);
    cr_assert_gt(states, 20000);
    /* Random play reaches the losses and repetitions (D13's draw is rarer:
     * 5 in 3000 random games; d13_forty_moves_a_side plays one). */
    cr_assert_gt(reasons[GAME_REASON_NO_PIECES], 0);
    cr_assert_gt(reasons[GAME_REASON_NO_MOVES], 0);
    cr_assert_gt(reasons[GAME_REASON_REPETITION], 0);
}

/* --- kz with --game draughts ------------------------------------------------------------------ */

Test(draughts, kz_perft_play_match_and_a_network, .timeout = 600)
{
    proc_output o;
    const char *perft[] = {"perft", "--game=draughts", "--turns", "4", NULL};
    cr_assert_eq(harness_run_bin("kz", perft, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "perft 1: 7\nperft 2: 49\nperft 3: 302\nperft 4: 1469\n"), "%s",
              o.out);
    proc_output_free(&o);
    /* kz play: the person plays White (the board turned) against greedy. */
    const char *play[] = {"play", "--game=draughts", "--player=greedy", "--color=white",
                          "--seed=1", NULL};
    proc_opts po = {.input = "help\nmoves\nquit\n"};
    cr_assert_eq(harness_run_bin("kz", play, &po, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "You play white; the engine (greedy) plays black"), "%s", o.out);
    cr_assert(strstr(o.out, "turned: White's side at the bottom"), "%s", o.out);
    cr_assert(strstr(o.out, "a man reaching the far row is crowned"), "%s", o.out);
    cr_assert(strstr(o.out, "last: black "), "the engine's opening marked: %s", o.out);
    proc_output_free(&o);
    const char *play2[] = {"play", "--game=draughts", "--player=random", "--color=b",
                           "--position=.........b...w...w.............. b", NULL};
    po.input = "10-15\nd6xb4\nquit\n";
    cr_assert_eq(harness_run_bin("kz", play2, &po, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "illegal: 10-15; legal: 10x17"), "%s", o.out);
    cr_assert(strstr(o.out, "last: black 10x17"), "%s", o.out);
    proc_output_free(&o);
    const char *match[] = {"match", "--game=draughts", "alphabeta:2", "random", "--games=4",
                           "--quiet", NULL};
    cr_assert_eq(harness_run_bin("kz", match, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "after 4 games"), "%s", o.out);
    proc_output_free(&o);
    /* A network of the game's shape (7 x 8 x 8 in, 1024 out) plays a game. */
    char *dir = harness_tmpdir("draughts-net");
    cr_assert_not_null(dir);
    char model[1024], out[1024];
    snprintf(model, sizeof model, "%s/net.kzm", dir);
    snprintf(out, sizeof out, "--out=%s/games.kzr", dir);
    const char *init[] = {"model", "init", "--game=draughts", "--blocks=1", "--filters=8",
                          model, NULL};
    cr_assert_eq(harness_run_bin("kz", init, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    char model_opt[1100];
    snprintf(model_opt, sizeof model_opt, "--model=%s", model);
    const char *sp[] = {"selfplay", "--game=draughts", model_opt, "--games=1", out,
                        "--simulations=4", "--seed=3", NULL};
    cr_assert_eq(harness_run_bin("kz", sp, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    harness_rm_rf(dir);
    free(dir);
}
