/* Tests of the Yinsh module (games/yinsh.c) against docs/rules-yinsh.md:
 * hand-built positions for the rules Y1-Y24 (each decided gap with its
 * own test), the notation of every action, and the engine against the
 * plain second implementation written from the rules alone
 * (tests/games/ref_yinsh.c): the action numbering counted both ways, perft
 * both ways, and random games state by state (legal actions, position
 * strings, ends); the interface's promises (strings, packing, the 11
 * symmetries); kz with --game yinsh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/game.h"
#include "games/yinsh.h"
#include "tests/games/ref_yinsh.h"
#include "tests/harness/harness.h"

static const game_def *G(void) { return &yinsh_game; }

static game_state s_pos_of(const game_def *g, const char *text)
{
    game_state s;
    char err[200];
    cr_assert_eq(g->parse_position(&s, text, err, sizeof err), 0, "'%s': %s", text, err);
    return s;
}

static game_state s_pos(const char *text) { return s_pos_of(G(), text); }

/* A position from "Wf6 wf7 Bh6 ..." (a piece letter, then its point) and
 * the tail "w 22 move -". */
static game_state s_place_in(const game_def *g, const char *pieces, const char *tail)
{
    char text[160];
    memset(text, '.', YS_POINTS);
    for (const char *p = pieces; *p;) {
        char c = *p++;
        int pt = yinsh_parse_point(&p);
        cr_assert_geq(pt, 0, "'%s'", pieces);
        text[pt] = c;
        while (*p == ' ')
            p++;
    }
    snprintf(text + YS_POINTS, sizeof text - YS_POINTS, " %s", tail);
    return s_pos_of(g, text);
}

static game_state s_place(const char *pieces, const char *tail)
{
    return s_place_in(G(), pieces, tail);
}

/* The legal actions as "a b c" (ascending); with a prefix, only those starting with it. */
static void s_legal_text(const game_state *s, const char *prefix, char *buf, size_t len)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = G()->legal_actions(s, legal);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[16];
        G()->format_action(legal[i], a, sizeof a);
        if (prefix && strncmp(a, prefix, strlen(prefix)))
            continue;
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "", a);
    }
}

#define EXPECT_LEGAL_FROM(s, prefix, want)                                                  \
    do {                                                                                    \
        char got_[4096];                                                                    \
        s_legal_text(&(s), prefix, got_, sizeof got_);                                      \
        cr_assert_str_eq(got_, want);                                                       \
    } while (0)
#define EXPECT_LEGAL(s, want) EXPECT_LEGAL_FROM(s, NULL, want)

static void s_play(game_state *s, const char *actions)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", actions);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        int a;
        cr_assert_eq(G()->parse_action(t, &a), 0, "'%s'", t);
        cr_assert(game_is_legal(G(), s, a), "'%s' is illegal", t);
        G()->apply(s, a);
    }
}

static int s_pt(const char *name)
{
    const char *p = name;
    int pt = yinsh_parse_point(&p);
    cr_assert(pt >= 0 && !*p, "'%s'", name);
    return pt;
}

/* --- Y1-Y4: board, material, placement ------------------------------------------------------- */

Test(yinsh, y1_y4_board_start_and_registration)
{
    char err[200];
    cr_assert_eq(game_find("yinsh"), G());
    cr_assert_eq(game_find("yinsh-blitz"), &yinsh_blitz_game);
    cr_assert_eq(game_check(G(), err, sizeof err), 0, "%s", err);
    cr_assert_eq(game_check(&yinsh_blitz_game, err, sizeof err), 0, "%s", err);
    cr_assert_eq(G()->action_count, 2142, "Y21");
    cr_assert_eq(G()->planes * G()->height * G()->width, 12 * 11 * 11, "Y20");
    cr_assert_eq(G()->n_symmetries, 11, "Y20: the hexagon's 12 less the identity");
    cr_assert_str_eq(G()->player_name(0), "white");
    /* Y1: the 85 points in order, and what is not a point. */
    const char *cols[11] = {"a2 a5", "b1 b7", "c1 c8", "d1 d9", "e1 e10", "f2 f10",
                            "g2 g11", "h3 h11", "i4 i11", "j5 j11", "k7 k10"};
    int next = 0;
    for (int c = 0; c < 11; c++) {
        int lo, hi;
        cr_assert_eq(sscanf(cols[c] + 1, "%d %*c%d", &lo, &hi), 2);
        for (int n = 1; n <= 11; n++) {
            char name[8];
            snprintf(name, sizeof name, "%c%d", 'a' + c, n);
            const char *p = name;
            int pt = yinsh_parse_point(&p);
            if (n < lo || n > hi) {
                cr_assert_eq(pt, -1, "%s is off the board", name);
                continue;
            }
            cr_assert_eq(pt, next++, "%s", name);
            char back[4];
            yinsh_point_name(pt, back);
            cr_assert_str_eq(back, name);
        }
    }
    cr_assert_eq(next, 85);
    /* Y4: White places first, on any point; then Black, on the others. */
    game_state s;
    G()->init(&s);
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " w 00 place -");
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 85);
    cr_assert_eq(G()->to_move(&s), 0);
    s_play(&s, "f6");
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_eq(G()->legal_actions(&s, legal), 84);
    cr_assert_not(game_is_legal(G(), &s, s_pt("f6")));
    /* Ten placements, then White's first move. */
    s_play(&s, "a2 k10 e1 b1 g11 j11 a5 k7 d9");
    cr_assert_eq(G()->to_move(&s), 0);
    cr_assert_eq(G()->ply(&s), 10);
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " w 00 move -");
    EXPECT_LEGAL_FROM(s, "f6", "f6-b2 f6-b6 f6-c3 f6-c6 f6-d4 f6-d6 f6-e5 f6-e6 f6-f2 f6-f3 "
                                "f6-f4 f6-f5 f6-f7 f6-f8 f6-f9 f6-f10 f6-g6 f6-g7 f6-h6 f6-h8 "
                                "f6-i6 f6-i9 f6-j6 f6-j10");
}

/* --- Y6-Y8: moves, flips, pass ------------------------------------------------------------- */

static const char *MOVE_BOARD = "Wf6 Wa2 Wa3 Bh6 Bk9 Bk10 wf7 bf8 wd6 bg7";

/* Y6: empty points, one group of markers then the first empty point, never
 * over a ring or off the board. */
Test(yinsh, y6_the_rings_path)
{
    game_state s = s_place(MOVE_BOARD, "w 22 move -");
    EXPECT_LEGAL_FROM(s, "f6", "f6-b2 f6-c3 f6-c6 f6-d4 f6-e5 f6-e6 f6-f2 f6-f3 f6-f4 f6-f5 "
                                "f6-f9 f6-g6 f6-h8");
    /* Markers up to the edge or up to a ring: no move that way. */
    s = s_place("Wa2 Wb1 Wk7 Ba3 Ba4 Ba5 wb2 bc2 wd2 we2 bf2 bg2 wb3 wc4 bd5 be6 wf7 bg8 wh9 "
                "bi10 wj11",
                "w 22 move -");
    EXPECT_LEGAL_FROM(s, "a2", "");
    uint16_t legal[GAME_MAX_LEGAL];
    int n = G()->legal_actions(&s, legal);
    cr_assert_gt(n, 0);
    cr_assert_neq(legal[n - 1], YS_PASS, "other rings move: no pass");
}

/* Y5, Y7: the marker stays in the ring's start, the jumped markers turn over. */
Test(yinsh, y5_y7_marker_and_flips)
{
    game_state s = s_place(MOVE_BOARD, "w 22 move -");
    s_play(&s, "f6-f9");
    cr_assert_eq(yinsh_at(&s, s_pt("f6")), 'w');
    cr_assert_eq(yinsh_at(&s, s_pt("f7")), 'b');
    cr_assert_eq(yinsh_at(&s, s_pt("f8")), 'w');
    cr_assert_eq(yinsh_at(&s, s_pt("f9")), 'W');
    cr_assert_eq(yinsh_at(&s, s_pt("d6")), 'w', "not on the path");
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_not(G()->mid_turn(&s));
    s = s_place(MOVE_BOARD, "w 22 move -");
    s_play(&s, "f6-c6"); /* over e6 (empty), then d6 */
    cr_assert_eq(yinsh_at(&s, s_pt("e6")), '.');
    cr_assert_eq(yinsh_at(&s, s_pt("d6")), 'b');
    cr_assert_eq(yinsh_at(&s, s_pt("c6")), 'W');
    cr_assert_eq(yinsh_at(&s, s_pt("f6")), 'w');
}

/* A corner where White's rings a2 b2 c3 and Black's b1 b3 c2 are walled in
 * by each other and by markers up to the edge (no row among them). */
static const char *BLOCKED = "WwbbBWBbwbbwBWwbbwbbbwbb....bwbbwb....bb.bbw...bw..wbb...b...bwb"
                             "......bbw.....wbb...b";

/* Y8: no legal ring move: pass, and only then. */
Test(yinsh, y8_no_ring_move_passes)
{
    char text[160];
    snprintf(text, sizeof text, "%s w 22 move -", BLOCKED);
    text[s_pt("e1")] = '.'; /* Black's b1 can jump c1 d1 to e1 */
    game_state s = s_pos(text);
    EXPECT_LEGAL(s, "pass");
    cr_assert_not(G()->result(&s).over);
    int markers_before = 0;
    for (int p = 0; p < YS_POINTS; p++)
        markers_before += yinsh_at(&s, p) == 'w' || yinsh_at(&s, p) == 'b';
    s_play(&s, "pass");
    cr_assert_not(G()->result(&s).over);
    cr_assert_eq(G()->to_move(&s), 1);
    EXPECT_LEGAL(s, "b1-e1");
    int markers = 0;
    for (int p = 0; p < YS_POINTS; p++)
        markers += yinsh_at(&s, p) == 'w' || yinsh_at(&s, p) == 'b';
    cr_assert_eq(markers, markers_before, "Y8: a pass takes no marker");
    /* pass is never legal while a ring can move. */
    s = s_place(MOVE_BOARD, "w 22 move -");
    cr_assert_not(game_is_legal(G(), &s, YS_PASS));
}

/* Y17: a pass, and the other side cannot move either: the end, scored by
 * the rings removed. */
Test(yinsh, y17_both_blocked)
{
    char text[160];
    snprintf(text, sizeof text, "%s w 22 move -", BLOCKED);
    game_state s = s_pos(text);
    EXPECT_LEGAL(s, "pass");
    s_play(&s, "pass");
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, -1, "2 rings each: a draw");
    cr_assert_eq(r.reason, YS_REASON_BLOCKED);
    cr_assert_str_eq(yinsh_reason_name(r.reason), "blocked");
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 0);
}

/* --- Y9-Y16: rows -------------------------------------------------------------------------- */

static const char *ROW_RINGS = "We6 Wa2 Wa3 Wa4 Wa5 Bk7 Bk8 Bk9 Bk10 Bj11";

/* Y9-Y11: a row, removed by its owner, then a ring of the owner's choice. */
Test(yinsh, y9_y11_a_row_and_a_ring)
{
    char pieces[200];
    snprintf(pieces, sizeof pieces, "%s we2 we3 we4 we5", ROW_RINGS);
    game_state s = s_place(pieces, "w 00 move -");
    s_play(&s, "e6-e7");
    cr_assert(G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 0);
    EXPECT_LEGAL(s, "e2:e6");
    s_play(&s, "e6:e2"); /* either end first */
    for (int k = 2; k <= 6; k++) {
        char name[4];
        snprintf(name, sizeof name, "e%d", k);
        cr_assert_eq(yinsh_at(&s, s_pt(name)), '.', "%s", name);
    }
    EXPECT_LEGAL(s, "xa2 xa3 xa4 xa5 xe7");
    s_play(&s, "xa4");
    cr_assert_not(G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 1);
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " b 10 move -");
    cr_assert_not(G()->result(&s).over);
}

/* Y12 (decided): a longer run, any five of it. In play a run is at most
 * nine (a move changes one point of each line it crosses, and its own line
 * holds the ring): one removal always breaks it. A run of ten, given as a
 * string: the middle five leave no row, an end five leave a second one. */
Test(yinsh, y12_longer_runs)
{
    const char *nine = "Wd5 Wa2 Wa3 Wa4 Wa5 Bk7 Bk8 Bk9 Bk10 Bj11 we1 we2 we3 we4 be5 we6 we7 "
                       "we8 we9";
    game_state s = s_place(nine, "w 00 move -");
    s_play(&s, "d5-f5"); /* e5 turns white: nine in the column */
    EXPECT_LEGAL(s, "e1:e5 e2:e6 e3:e7 e4:e8 e5:e9");
    game_state t = s;
    s_play(&t, "e1:e5 xa2");
    cr_assert_eq(G()->to_move(&t), 1, "four left: the turn ends");
    s_play(&s, "e3:e7 xa2");
    cr_assert_eq(G()->to_move(&s), 1);
    const char *ten = "Wd5 Wa2 Wa3 Wa4 Wa5 Bk7 Bk8 Bk9 Bk10 Bj11 we1 we2 we3 we4 we5 we6 we7 "
                      "we8 we9 we10";
    s = s_place(ten, "w 00 row -");
    EXPECT_LEGAL(s, "e1:e5 e2:e6 e3:e7 e4:e8 e5:e9 e6:e10");
    game_state mid = s;
    s_play(&mid, "e3:e7 xa2");
    cr_assert_eq(G()->to_move(&mid), 0, "no second row: on to the move");
    cr_assert(G()->mid_turn(&mid));
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&mid, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " w 10 move t");
    game_state end = s;
    s_play(&end, "e1:e5 xa2");
    EXPECT_LEGAL(end, "e6:e10");
    s_play(&end, "e6:e10 xa3");
    G()->format_position(&end, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " w 20 move t");
}

/* Y13: crossing rows, one of them (the other broken); separate rows, both. */
Test(yinsh, y13_crossing_and_separate_rows)
{
    const char *cross = "We6 Wa2 Wa3 Wa4 Wa5 Bk7 Bk8 Bk9 Bk10 Bj11 we2 we3 we4 we5 wf6 wg6 "
                        "wh6 wi6";
    game_state s = s_place(cross, "w 00 move -");
    s_play(&s, "e6-f7");
    EXPECT_LEGAL(s, "e2:e6 e6:i6");
    game_state t = s;
    s_play(&t, "e2:e6 xa2");
    cr_assert_eq(G()->to_move(&t), 1, "the crossing row is broken");
    s_play(&s, "e6:i6 xa2");
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_eq(yinsh_at(&s, s_pt("e5")), 'w');
    const char *apart = "We6 Wa2 Wa3 Wa4 Wa5 Bk7 Bk8 Bk9 Bk10 Bj11 we2 we3 we4 we5 wf2 wf3 "
                        "wf4 wf5 bf6";
    s = s_place(apart, "w 00 move -");
    s_play(&s, "e6-g6"); /* e6 makes e2:e6, f6 turns white and makes f2:f6 */
    EXPECT_LEGAL(s, "e2:e6 f2:f6");
    s_play(&s, "f2:f6 xa2");
    cr_assert_eq(G()->to_move(&s), 0, "the separate row must go too");
    EXPECT_LEGAL(s, "e2:e6");
    s_play(&s, "e2:e6 xa3");
    cr_assert_eq(G()->to_move(&s), 1);
}

/* Y14: a row made for the opponent is removed by it at the start of its
 * turn, before its move; rows for both: the mover's first. */
Test(yinsh, y14_rows_for_the_opponent_and_for_both)
{
    const char *rings = "Wg6 Wa2 Wa3 Wa4 Wa5 Bk7 Bk8 Bk9 Bk10 Bj11";
    char pieces[200];
    snprintf(pieces, sizeof pieces, "%s bf2 bf3 bf4 bf5 wf6", rings);
    game_state s = s_place(pieces, "w 00 move -");
    s_play(&s, "g6-e6"); /* f6 turns black: Black's row f2:f6 */
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_not(G()->mid_turn(&s), "Black's turn starts with its removal");
    EXPECT_LEGAL(s, "f2:f6");
    char pos[GAME_POSITION_CHARS + 1];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " b 00 row -");
    s_play(&s, "f2:f6 xk7");
    cr_assert(G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 1, "then Black moves");
    cr_assert(game_is_legal(G(), &s, YS_MOVE + 0) == false);
    int a;
    cr_assert_eq(G()->parse_action("k8-k7", &a), 0);
    cr_assert(game_is_legal(G(), &s, a), "k7 is free now");
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos + 85, " b 01 move t");
    s_play(&s, "k8-h8");
    cr_assert_eq(G()->to_move(&s), 0);
    /* Both: g6's marker makes White's g2:g6, f6 turns and makes Black's f2:f6. */
    snprintf(pieces, sizeof pieces, "%s bf2 bf3 bf4 bf5 wf6 wg2 wg3 wg4 wg5", rings);
    s = s_place(pieces, "w 00 move -");
    s_play(&s, "g6-e6");
    cr_assert_eq(G()->to_move(&s), 0, "the mover's rows first");
    EXPECT_LEGAL(s, "g2:g6");
    s_play(&s, "g2:g6 xa2");
    cr_assert_eq(G()->to_move(&s), 1);
    EXPECT_LEGAL(s, "f2:f6");
    /* Both sides' third rows: the mover's comes first and wins (Y16). */
    const char *rings3 = "Wg6 Wa2 Wa3 Bk7 Bk8 Bk9";
    snprintf(pieces, sizeof pieces, "%s bf2 bf3 bf4 bf5 wf6 wg2 wg3 wg4 wg5", rings3);
    s = s_place(pieces, "w 22 move -");
    s_play(&s, "g6-e6 g2:g6");
    cr_assert_not(G()->result(&s).over, "a ring is still to go");
    s_play(&s, "xa3");
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 0);
    cr_assert_eq(r.reason, YS_REASON_RINGS);
}

/* Y16, Y19: three rings win at once; in the blitz variant one ring. */
Test(yinsh, y16_y19_three_rings_and_blitz)
{
    char pieces[200], text[160];
    /* One ring on the board: the rings do not add up, the string does not parse. */
    memset(text, '.', 85);
    snprintf(text + 85, sizeof text - 85, " w 22 move -");
    text[0] = 'W';
    game_state s;
    char err[200];
    cr_assert_neq(G()->parse_position(&s, text, err, sizeof err), 0, "rings do not add up");
    snprintf(pieces, sizeof pieces, "%s we2 we3 we4 we5", "We6 Wa2 Wa3 Bk7 Bk8 Bk9");
    s = s_place(pieces, "w 22 move -");
    s_play(&s, "e6-e7 e2:e6 xa2");
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 0);
    cr_assert_eq(r.reason, YS_REASON_RINGS);
    cr_assert_not(G()->mid_turn(&s));
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 0);
    /* Blitz: the first ring wins; a count of one removed does not parse. */
    snprintf(pieces, sizeof pieces, "%s we2 we3 we4 we5", ROW_RINGS);
    s = s_place_in(&yinsh_blitz_game, pieces, "w 00 move -");
    s_play(&s, "e6-e7 e2:e6");
    yinsh_blitz_game.apply(&s, YS_RING + s_pt("a5"));
    r = yinsh_blitz_game.result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 0);
    cr_assert_eq(r.reason, YS_REASON_RINGS);
    cr_assert_neq(yinsh_blitz_game.parse_position(&s, "x", err, sizeof err), 0);
    snprintf(pieces, sizeof pieces, "We6 Wa2 Wa3 Wa4 Bk7 Bk8 Bk9 Bk10 Bj11");
    snprintf(text, sizeof text, "%s", "");
    game_state u = s_place(pieces, "w 10 move -");
    G()->format_position(&u, text, sizeof text);
    cr_assert_neq(yinsh_blitz_game.parse_position(&s, text, err, sizeof err), 0,
                  "a ring removed ends a blitz game");
}

/* Y18 (decided when): the 51st marker; its rows are resolved first (their
 * markers go back), only then is the pool judged; more rings removed wins. */
Test(yinsh, y18_markers_run_out_after_the_rows)
{
    const char *fifty = "WWWbbwbbwbbwbbwbbwbbbwb..bbw.wwwwW.wbbbbw...bbwbwbbwbbwbbbbwb......"
                        ".............BBBBB w 10 move -";
    game_state s = s_pos(fifty), t = s;
    s_play(&t, "a3-d6"); /* the 51st marker, no row */
    game_result r = G()->result(&t);
    cr_assert(r.over);
    cr_assert_eq(r.reason, YS_REASON_MARKERS);
    cr_assert_eq(r.winner, 0, "White removed 1, Black 0");
    t = s;
    s_play(&t, "e6-e7"); /* the 51st marker makes White's row e2:e6 */
    cr_assert_not(G()->result(&t).over);
    s_play(&t, "e2:e6 xa2");
    cr_assert_not(G()->result(&t).over, "46 markers now: Black moves");
    cr_assert_eq(G()->to_move(&t), 1);
    t = s;
    s_play(&t, "a2-d5"); /* the 51st marker turns markers into Black's row c2:c6 */
    cr_assert_not(G()->result(&t).over, "Black's row first");
    EXPECT_LEGAL(t, "c2:c6");
    s_play(&t, "c2:c6 xk7");
    cr_assert_not(G()->result(&t).over);
    /* Equal counts: a draw. */
    char text[160];
    snprintf(text, sizeof text, "%s", fifty);
    text[s_pt("k7")] = '.';
    memcpy(strstr(text, " 10 "), " 11 ", 4);
    s = s_pos(text);
    s_play(&s, "a3-d6");
    r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, -1);
}

/* --- Y20-Y23: notation, strings, planes, symmetries ---------------------------------------- */

/* Y21, Y22: every action written and read back, numbered as the plain
 * implementation counts them; what is not an action. */
Test(yinsh, y21_y22_every_action_and_bad_text)
{
    for (int a = 0; a < YS_ACTIONS; a++) {
        char text[16];
        int back = -1;
        G()->format_action(a, text, sizeof text);
        cr_assert_eq(G()->parse_action(text, &back), 0, "%d '%s'", a, text);
        cr_assert_eq(back, a, "'%s'", text);
        cr_assert_eq(ref_ys_parse_action(text), a, "'%s': the plain numbering", text);
    }
    int a;
    cr_assert_eq(G()->parse_action("e9:e5", &a), 0);
    cr_assert_eq(ref_ys_parse_action("e5:e9"), a);
    const char *bad[] = {"a1",    "f11",   "l5",    "e0",     "e05",  "k11",   "e5-e5",
                         "e5-f7", "e5:e8", "e5:f7", "xe5-e6", "e5e6", "",      "pass2",
                         "E5",    "xx",    "e5:",   "x",      "e5-",  "e5 ",   "-e5",
                         "xa1",   "e5:i9x", "e12",  "e100"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_neq(G()->parse_action(bad[i], &a), 0, "'%s'", bad[i]);
        cr_assert_eq(ref_ys_parse_action(bad[i]), -1, "'%s'", bad[i]);
    }
    cr_assert_eq(G()->parse_action("e5:i9", &a), 0, "a diagonal row");
    cr_assert_eq(G()->parse_action("e5:i5", &a), 0, "a row along a number");
}

/* Y23: strings read back; bad ones get a reason. */
Test(yinsh, y23_position_strings)
{
    game_state s = s_place(MOVE_BOARD, "w 22 move -");
    char pos[GAME_POSITION_CHARS + 1], err[200];
    G()->format_position(&s, pos, sizeof pos);
    game_state t = s_pos(pos);
    char again[GAME_POSITION_CHARS + 1];
    G()->format_position(&t, again, sizeof again);
    cr_assert_str_eq(pos, again);
    char text[200];
    const char *tails[] = {"w 22 move",  "w 22 walk -", "x 22 move -", "w 23 move -",
                           "w 22 move q", "w 22 ring -", "w 2 move -",  "w 22 move - x",
                           "w 22 place -", "w 33 move -", "w  22 move -", "w 2 2 move -",
                           "w 22 move  -", "w 22 move -\n"};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        snprintf(text, sizeof text, "%.85s %s", pos, tails[i]);
        cr_assert_neq(G()->parse_position(&t, text, err, sizeof err), 0, "'%s'", tails[i]);
        cr_assert_gt(strlen(err), 10);
        cr_assert_null(strchr(err, '\n'));
    }
    snprintf(text, sizeof text, "%.84sQ w 22 move -", pos);
    cr_assert_neq(G()->parse_position(&t, text, err, sizeof err), 0);
    cr_assert(strstr(err, "k10"), "%s", err);
    cr_assert_neq(G()->parse_position(&t, "", err, sizeof err), 0);
}

/* Y20: the point each symmetry sends p to, read off its cell map. */
static int s_sym_point(int k, int p)
{
    static int cell_point[121];
    static bool filled;
    if (!filled) {
        for (int c = 0; c < 121; c++)
            cell_point[c] = -1;
        for (int q = 0; q < YS_POINTS; q++) {
            char name[4];
            yinsh_point_name(q, name);
            cell_point[(atoi(name + 1) - 1) * 11 + (name[0] - 'a')] = q;
        }
        filled = true;
    }
    char name[4];
    yinsh_point_name(p, name);
    int cell = (atoi(name + 1) - 1) * 11 + (name[0] - 'a');
    return cell_point[G()->symmetries[k].cells[cell]];
}

/* The position s with its board moved by symmetry k. */
static game_state s_sym_state(int k, const game_state *s)
{
    char pos[GAME_POSITION_CHARS + 1], text[GAME_POSITION_CHARS + 1];
    G()->format_position(s, pos, sizeof pos);
    snprintf(text, sizeof text, "%s", pos);
    for (int p = 0; p < YS_POINTS; p++)
        text[s_sym_point(k, p)] = pos[p];
    return s_pos(text);
}

/* --- random games against the plain implementation ----------------------------------------- */

/* Plays random games of g (half of them preferring actions after which the
 * same side acts again, which makes rows), comparing each state with the
 * plain implementation; every `check`-th state also the interface's
 * promises and the symmetries. Counts the ends by reason into reasons. */
static long s_random_games(const game_def *g, int target, int games, uint64_t seed,
                           int *reasons)
{
    rng_t rng;
    rng_seed(&rng, seed);
    long states = 0;
    ref_ys r;
    for (int game = 0; game < games; game++) {
        game_state s;
        g->init(&s);
        ref_ys_init(&r, target);
        bool rowish = game % 2;
        for (;;) {
            game_result res = g->result(&s);
            char pos[GAME_POSITION_CHARS + 1], ref_pos[160];
            g->format_position(&s, pos, sizeof pos);
            ref_ys_format(&r, ref_pos);
            cr_assert_str_eq(pos, ref_pos, "game %d", game);
            cr_assert_eq(res.over, r.over, "game %d '%s'", game, pos);
            if (res.over) {
                cr_assert_eq(res.winner, r.winner, "'%s'", pos);
                cr_assert_eq(res.reason, r.reason, "'%s'", pos);
                reasons[res.reason]++;
                break;
            }
            uint16_t legal[GAME_MAX_LEGAL];
            int ref_legal[REF_YS_MAX_LEGAL];
            int n = g->legal_actions(&s, legal), m = ref_ys_legal(&r, ref_legal);
            cr_assert_eq(n, m, "'%s': %d legal actions, the plain one %d", pos, n, m);
            cr_assert_leq(n, g->max_legal);
            for (int i = 0; i < n; i++)
                cr_assert_eq(legal[i], ref_legal[i], "'%s': action %d", pos, i);
            if (states % 7 == 0) {
                game_state t = s_pos_of(g, pos);
                float x[12 * 121], y[12 * 121];
                uint8_t packed[GAME_PACKED_BYTES];
                g->encode_planes(&s, x);
                g->pack(&s, packed);
                cr_assert_eq(g->unpack_planes(packed, y), 0);
                cr_assert(!memcmp(x, y, sizeof x), "'%s'", pos);
                g->encode_planes(&t, y);
                cr_assert(!memcmp(x, y, sizeof x), "'%s': the string reads back", pos);
                cr_assert_eq(g->hash(&t), g->hash(&s), "'%s'", pos);
                uint8_t mask[YS_ACTIONS];
                game_legal_mask(g, &s, mask);
                int k = 0;
                for (int a = 0; a < YS_ACTIONS; a++)
                    k += mask[a];
                cr_assert_eq(k, n);
                for (int i = 0; i < n; i++)
                    cr_assert(mask[legal[i]] && game_is_legal(g, &s, legal[i]));
                for (int j = 0; j < 20; j++) {
                    int a = (int)rng_below(&rng, YS_ACTIONS);
                    cr_assert_eq(game_is_legal(g, &s, a), mask[a] == 1, "'%s': %d", pos, a);
                }
                cr_assert_not(game_is_legal(g, &s, -1));
                cr_assert_not(game_is_legal(g, &s, YS_ACTIONS));
            }
            if (g == G() && states % 23 == 0) {
                /* Y20: each symmetry moves the planes and the legal actions together. */
                int k = (int)(states / 23 % 11);
                game_state t = s_sym_state(k, &s);
                float x[12 * 121], y[12 * 121];
                G()->encode_planes(&s, x);
                game_symmetry_planes(G(), k, x);
                G()->encode_planes(&t, y);
                cr_assert(!memcmp(x, y, sizeof x), "symmetry %d of '%s'", k, pos);
                uint8_t mask[YS_ACTIONS];
                game_legal_mask(G(), &t, mask);
                for (int i = 0; i < n; i++)
                    cr_assert(mask[G()->symmetries[k].action(legal[i])], "symmetry %d", k);
                cr_assert_eq(G()->legal_actions(&t, legal), n);
                G()->legal_actions(&s, legal);
            }
            int a = legal[rng_below(&rng, (uint32_t)n)];
            if (rowish && n > 1) {
                for (int i = 0; i < n; i++) {
                    game_state c = s;
                    g->apply(&c, legal[i]);
                    if (g->mid_turn(&c) && legal[i] >= YS_MOVE && legal[i] < YS_ROW) {
                        a = legal[i];
                        break;
                    }
                }
            }
            g->apply(&s, a);
            ref_ys_apply(&r, a);
            states++;
        }
    }
    return states;
}

Test(yinsh, random_games_agree_with_the_plain_implementation, .timeout = 600)
{
    int reasons[YS_REASON_COUNT] = {0};
    /* KZ_YINSH_GAMES=N plays N games (the figure in the closing note: 5000). */
    const char *env = getenv("KZ_YINSH_GAMES");
    int games = env ? atoi(env) : 400;
    long states = s_random_games(G(), 3, games, 26, reasons);
    cr_assert_gt(states, 60L * games);
    cr_assert_gt(reasons[YS_REASON_RINGS], 0);
    cr_assert_gt(reasons[YS_REASON_MARKERS], 0);
    int blitz[YS_REASON_COUNT] = {0};
    long blitz_states = s_random_games(&yinsh_blitz_game, 1, games / 4, 27, blitz);
    cr_assert_gt(blitz[YS_REASON_RINGS], 0);
    if (env)
        fprintf(stderr,
                "yinsh: %d games, %ld states (ends: rings %d, markers %d, blocked %d); "
                "yinsh-blitz: %d games, %ld states (rings %d, markers %d, blocked %d)\n",
                games, states, reasons[1], reasons[2], reasons[3], games / 4, blitz_states,
                blitz[1], blitz[2], blitz[3]);
}

/* Y24: the engine and the plain implementation count the same trees: from
 * the start, and from states of a random game (moves and removals). */
Test(yinsh, perft_equals_the_plain_implementation, .timeout = 600)
{
    game_state s;
    G()->init(&s);
    ref_ys r;
    ref_ys_init(&r, 3);
    const uint64_t start[] = {1, 85, 85 * 84, 85 * 84 * 83};
    for (int d = 0; d <= 3; d++) {
        cr_assert_eq(game_perft(G(), &s, d), start[d], "depth %d", d);
        if (d <= 2)
            cr_assert_eq(ref_ys_perft(&r, d), start[d], "depth %d", d);
    }
    /* A random game, preferring row-making moves; perft at some of its states. */
    rng_t rng;
    rng_seed(&rng, 5);
    int checked = 0, in_removal = 0;
    for (int ply = 0; !G()->result(&s).over && checked < 8; ply++) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = G()->legal_actions(&s, legal);
        if (ply >= 10 && (ply % 9 == 0 || G()->mid_turn(&s))) {
            int depth = G()->mid_turn(&s) || checked == 0 ? 3 : 2;
            for (int d = 1; d <= depth; d++)
                cr_assert_eq(game_perft(G(), &s, d), ref_ys_perft(&r, d), "ply %d depth %d",
                             ply, d);
            checked++;
            in_removal += G()->mid_turn(&s);
        }
        int a = legal[rng_below(&rng, (uint32_t)n)];
        for (int i = 0; i < n; i++) {
            game_state c = s;
            G()->apply(&c, legal[i]);
            if (G()->mid_turn(&c) && legal[i] < YS_ROW) {
                a = legal[i];
                break;
            }
        }
        G()->apply(&s, a);
        ref_ys_apply(&r, a);
    }
    cr_assert_eq(checked, 8);
    cr_assert_gt(in_removal, 0, "a removal stage among them");
}

/* --- the hooks ----------------------------------------------------------------------------- */

Test(yinsh, evaluation_and_material)
{
    char pieces[200];
    snprintf(pieces, sizeof pieces, "%s we2 we3 we4 we5", ROW_RINGS);
    game_state s = s_place(pieces, "w 00 move -");
    cr_assert_gt(G()->evaluate(&s), 0, "four markers and a row in reach for White");
    game_state t = s_place(pieces, "b 00 move -");
    cr_assert_lt(G()->evaluate(&t), 0, "the same from Black's side");
    s = s_place(ROW_RINGS, "w 00 move -");
    snprintf(pieces, sizeof pieces, "We6 Wa2 Wa3 Wa4 Bk7 Bk8 Bk9 Bk10 Bj11");
    t = s_place(pieces, "w 10 move -");
    cr_assert_gt(G()->evaluate(&t), G()->evaluate(&s) + 500, "a ring removed");
    cr_assert_float_eq(G()->material(&t, 0), 1.0f / 3, 1e-6);
    cr_assert_float_eq(G()->material(&t, 1), -1.0f / 3, 1e-6);
}

/* --- kz with --game yinsh ------------------------------------------------------------------ */

Test(yinsh, kz_moves_perft_and_bad_input, .timeout = 600)
{
    proc_output o;
    const char *moves[] = {"moves", "--game=yinsh", "f6", "a2", "k10", "e1", "b1", "g11",
                           "j11", "a5", "k7", "d9", NULL};
    cr_assert_eq(harness_run_bin("kz", moves, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "\nf6-b2\nf6-b6\n"), "%s", o.out);
    cr_assert(!strncmp(o.out, "b1-b2\n", 6), "%s", o.out);
    proc_output_free(&o);
    const char *perft[] = {"perft", "--game=yinsh", "--moves=f6 a2 k10 e1 b1 g11 j11 a5 k7 d9",
                           "2", NULL};
    cr_assert_eq(harness_run_bin("kz", perft, NULL, &o), 0, "%s", o.err);
    game_state s;
    G()->init(&s);
    s_play(&s, "f6 a2 k10 e1 b1 g11 j11 a5 k7 d9");
    char want[200];
    snprintf(want, sizeof want, "perft 1: %llu\nperft 2: %llu\n",
             (unsigned long long)game_perft(G(), &s, 1),
             (unsigned long long)game_perft(G(), &s, 2));
    cr_assert(strstr(o.out, want), "%s wanted %s", o.out, want);
    proc_output_free(&o);
    /* Bad input: one line on stderr, a non-zero exit, never a crash. */
    const char *bad[][5] = {
        {"moves", "--game=yinsh", "e5-", NULL},       /* malformed */
        {"moves", "--game=yinsh", "a1", NULL},        /* off the board */
        {"moves", "--game=yinsh", "e5", "e5", NULL},  /* illegal */
        {"moves", "--game=yinsh", "e5-e8", NULL},     /* illegal in placement */
        {"perft", "--game=yinsh", "--moves=f11", "2", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = harness_run_bin("kz", bad[i], NULL, &o);
        cr_assert(rc != 0 && rc < 128, "%s %s: rc %d", bad[i][2], bad[i][3] ? bad[i][3] : "",
                  rc);
        char *nl = strchr(o.err, '\n');
        cr_assert(nl && !nl[1], "one line: '%s'", o.err);
        proc_output_free(&o);
    }
}

/* kz moves names Yinsh's ends; kz play (the legend, a placement, the
 * engine's reply), kz match with the baselines, and a network of the game's
 * shape (12 x 11 x 11 in, 2142 out) playing a game. */
Test(yinsh, kz_play_match_and_a_network, .timeout = 600)
{
    proc_output o;
    char pos[200];
    snprintf(pos, sizeof pos, "--position=%s w 22 move -", BLOCKED);
    const char *ended[] = {"moves", "--game=yinsh", pos, "pass", NULL};
    cr_assert_eq(harness_run_bin("kz", ended, NULL, &o), 0, "%s", o.err);
    cr_assert_str_eq(o.out, "result: draw (blocked)\n");
    proc_output_free(&o);
    const char *play[] = {"play", "--game=yinsh", "--player=greedy", "--color=white",
                          "--seed=1", NULL};
    proc_opts po = {.input = "help\nf6\ne5-e8\nquit\n"};
    cr_assert_eq(harness_run_bin("kz", play, &po, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "You play white; the engine (greedy) plays black"), "%s", o.out);
    cr_assert(strstr(o.out, "Three rings removed win (Y16)"), "%s", o.out);
    cr_assert(strstr(o.out, "last: white f6"), "%s", o.out);
    cr_assert(strstr(o.out, "engine (black) plays "), "%s", o.out);
    cr_assert(strstr(o.out, "illegal: e5-e8"), "%s", o.out);
    proc_output_free(&o);
    const char *match[] = {"match", "--game=yinsh", "alphabeta:2", "random", "--games=2",
                           "--quiet", NULL};
    cr_assert_eq(harness_run_bin("kz", match, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "after 2 games"), "%s", o.out);
    cr_assert(strstr(o.out, "W/D/L: 2/0/0"), "alpha-beta beats random: %s", o.out);
    proc_output_free(&o);
    const char *blitz[] = {"match", "--game=yinsh-blitz", "uct:50", "greedy", "--games=2",
                           "--quiet", NULL};
    cr_assert_eq(harness_run_bin("kz", blitz, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "after 2 games"), "%s", o.out);
    proc_output_free(&o);
    char *dir = harness_tmpdir("yinsh-net");
    cr_assert_not_null(dir);
    char model[1024], out[1024], model_opt[1100];
    snprintf(model, sizeof model, "%s/net.kzm", dir);
    snprintf(out, sizeof out, "--out=%s/games.kzr", dir);
    snprintf(model_opt, sizeof model_opt, "--model=%s", model);
    const char *init[] = {"model", "init", "--game=yinsh", "--blocks=1", "--filters=8",
                          model, NULL};
    cr_assert_eq(harness_run_bin("kz", init, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "input 12x11x11, 2142 actions"), "%s", o.out);
    proc_output_free(&o);
    const char *sp[] = {"selfplay", "--game=yinsh", model_opt, "--games=1", out,
                        "--simulations=4", "--seed=3", NULL};
    cr_assert_eq(harness_run_bin("kz", sp, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "games: 1 written"), "%s", o.out);
    proc_output_free(&o);
    harness_rm_rf(dir);
    free(dir);
}
