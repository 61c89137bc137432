/* test_khreibaga: every rule of docs/rules.md (R1-R22) on
 * hand-built positions, through the game interface (game_default()) as the
 * rest of the project uses it. Each expected answer is argued in a comment
 * from the rule it cites; none is copied from the engine's output.
 *
 * Board reminder (sq = row*5 + col, row 0 at the bottom, R1); points with
 * (row + col) even, marked *, are the only ones with diagonals:
 *
 *   row 4:  20* 21  22* 23  24*
 *   row 3:  15  16* 17  18* 19
 *   row 2:  10* 11  12* 13  14*
 *   row 1:   5   6*  7   8*  9
 *   row 0:   0*  1   2*  3   4*
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "games/khreibaga.h"
#include "tests/games/khreibaga_lines.h"
#include "solve/ref_khreibaga.h"
#include "common/util.h"

/* --- helpers -------------------------------------------------------------------- */

/* Builds an R20 string from "b12 W7 ..." (piece letter + point), the side to
 * move and the chain point (-1 for a turn start). */
static void s_make(char *out, size_t len, const char *pieces, char side, int chain)
{
    char board[26];
    memset(board, '.', 25);
    board[25] = '\0';
    const char *p = pieces;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char piece = *p++;
        int sq = (int)strtol(p, (char **)&p, 10);
        cr_assert(sq >= 0 && sq < 25 && strchr("bBwW", piece), "bad test piece list '%s'", pieces);
        board[sq] = piece;
    }
    if (chain >= 0)
        snprintf(out, len, "%s %c %d", board, side, chain);
    else
        snprintf(out, len, "%s %c", board, side);
}

/* Parses a position (asserting success). */
static game_state s_pos(const char *pieces, char side, int chain)
{
    char str[40], err[200];
    s_make(str, sizeof str, pieces, side, chain);
    game_state s;
    int rc = game_default()->parse_position(&s, str, err, sizeof err);
    cr_assert_eq(rc, 0, "'%s' rejected: %s", str, err);
    return s;
}

/* Plays space-separated actions, each of which must be legal. */
static void s_play(game_state *s, const char *actions)
{
    const game_def *g = game_default();
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", actions);
    char *save = NULL;
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        int a;
        cr_assert_eq(g->parse_action(t, &a), 0, "cannot parse '%s'", t);
        cr_assert(!g->result(s).over, "'%s' played after the end of the game", t);
        cr_assert(game_is_legal(g, s, a), "'%s' is illegal here", t);
        g->apply(s, a);
    }
}

/* The legal actions as "a-b c-d ..." in action order. */
static void s_legal_str(const game_state *s, char *out, size_t len)
{
    const game_def *g = game_default();
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[16];
        g->format_action(legal[i], a, sizeof a);
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "", a);
    }
}

#define EXPECT_LEGAL(s, expected)                                                     \
    do {                                                                              \
        char got_[2048];                                                              \
        s_legal_str(&(s), got_, sizeof got_);                                         \
        cr_assert_str_eq(got_, expected, "legal actions: got '%s', want '%s'", got_,  \
                         expected);                                                   \
    } while (0)

static int s_count(const game_state *s, char man, char king)
{
    int n = 0;
    for (int sq = 0; sq < 25; sq++)
        n += khreibaga_piece_at(s, sq) == man || khreibaga_piece_at(s, sq) == king;
    return n;
}

static const game_def *G(void) { return game_default(); }

/* --- R1: points and lines ----------------------------------------------------------- */

/* R1: an even point has 8 lines; a king on 12 flies along all of them
 * (R5): row 2 (10 11 13 14), column 2 (2 7 17 22), the diagonals 0-6-12-18-24
 * and 4-8-12-16-20. The White man on 21 lies on none of them. */
Test(khreibaga, r1_king_on_even_point_has_eight_lines)
{
    game_state s = s_pos("B12 w21", 'b', -1);
    EXPECT_LEGAL(s, "12-0 12-2 12-4 12-6 12-7 12-8 12-10 12-11 12-13 12-14 12-16 12-17 "
                    "12-18 12-20 12-22 12-24");
}

/* R1: 7 is odd, so a king there has only its row (5 6 8 9) and column
 * (2 12 17 22); 7-11, 7-13, 7-1, 7-3 are not lines. */
Test(khreibaga, r1_no_diagonals_from_odd_point)
{
    game_state s = s_pos("B7 w21", 'b', -1);
    EXPECT_LEGAL(s, "7-2 7-5 7-6 7-8 7-9 7-12 7-17 7-22");
    cr_assert(!game_is_legal(G(), &s, 7 * 25 + 13) && !game_is_legal(G(), &s, 7 * 25 + 11));
}

/* R1 + R3: "1->7 is not a line": a man on 1 steps only straight forward to 6. */
Test(khreibaga, r1_man_on_odd_point_moves_straight_only)
{
    game_state s = s_pos("b1 w24", 'b', -1);
    EXPECT_LEGAL(s, "1-6");
    cr_assert(!game_is_legal(G(), &s, 1 * 25 + 7) && !game_is_legal(G(), &s, 1 * 25 + 5));
}

/* R1 + R4: no capture along a non-line: the man on 7 touches White on 11 and
 * 13 only diagonally, and 7 has no diagonals, so Black has no capture and
 * its only move is 7-12. */
Test(khreibaga, r1_no_diagonal_capture_from_odd_point)
{
    game_state s = s_pos("b7 w11 w13", 'b', -1);
    EXPECT_LEGAL(s, "7-12");
}

/* --- R2: start ---------------------------------------------------------------------- */

/* R2: Black men on 0..11, White on 13..24, 12 empty, Black to move. The only
 * empty point is 12, reachable forward from 6 and 8 (diagonal, even points)
 * and 7 (straight); 11 and 13 would be sideways (R3). */
Test(khreibaga, r2_start_position)
{
    game_state s;
    G()->init(&s);
    char buf[64];
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "bbbbbbbbbbbb.wwwwwwwwwwww b");
    cr_assert_str_eq(buf, KH_START);
    for (int sq = 0; sq < 25; sq++)
        cr_assert_eq(khreibaga_piece_at(&s, sq), sq < 12 ? 'b' : sq == 12 ? '.' : 'w');
    cr_assert_eq(G()->to_move(&s), 0);
    cr_assert_eq(G()->ply(&s), 0);
    cr_assert(!G()->mid_turn(&s) && !G()->result(&s).over);
    cr_assert_str_eq(G()->player_name(0), "black");
    cr_assert_str_eq(G()->player_name(1), "white");
    EXPECT_LEGAL(s, "6-12 7-12 8-12");
}

/* --- R3: man simple moves ---------------------------------------------------------- */

/* R3: a Black man on 12 (even) moves forward to 17, or diagonally forward to
 * 16 and 18; never sideways (11, 13) or backward (6, 7, 8). */
Test(khreibaga, r3_black_man_forward_only)
{
    game_state s = s_pos("b12 w24", 'b', -1);
    EXPECT_LEGAL(s, "12-16 12-17 12-18");
}

/* R3: White moves down the board: from 12 to 6, 7, 8. */
Test(khreibaga, r3_white_man_forward_is_down)
{
    game_state s = s_pos("w12 b0", 'w', -1);
    EXPECT_LEGAL(s, "12-6 12-7 12-8");
}

/* R3: no sideways move even when the forward points are blocked: the man on
 * 11 (odd) has only 16, which its own man fills; 10 and 12 are sideways. The
 * man on 16 (even) goes to 20, 21 or 22. */
Test(khreibaga, r3_no_sideways_man_moves)
{
    game_state s = s_pos("b11 b16 W4", 'b', -1);
    EXPECT_LEGAL(s, "16-20 16-21 16-22");
    cr_assert(!game_is_legal(G(), &s, 11 * 25 + 10) && !game_is_legal(G(), &s, 11 * 25 + 12));
}

/* --- R4: man captures ------------------------------------------------------------- */

/* R4 + R8: a man captures backward: 12 over 7 onto 2 is the only action
 * (captures are compulsory, so 12-16/17/18 are gone). */
Test(khreibaga, r4_backward_capture_by_man)
{
    game_state s = s_pos("b12 w7 w24", 'b', -1);
    EXPECT_LEGAL(s, "12-2");
    s_play(&s, "12x2");
    cr_assert_eq(khreibaga_piece_at(&s, 7), '.');
    cr_assert_eq(khreibaga_piece_at(&s, 2), 'b');
    cr_assert_eq(khreibaga_piece_at(&s, 12), '.');
    cr_assert_eq(G()->to_move(&s), 1);
}

/* R4: sideways along the row too (11 over 12 onto 13). */
Test(khreibaga, r4_sideways_capture_by_man)
{
    game_state s = s_pos("b11 w12 w24", 'b', -1);
    EXPECT_LEGAL(s, "11-13");
}

/* R4: a man jumps only an adjacent piece: from 2, White's 12 is two points
 * up, so there is no capture and the man just moves (2 is even: 6 7 8). */
Test(khreibaga, r4_man_does_not_fly)
{
    game_state s = s_pos("b2 w12 w24", 'b', -1);
    EXPECT_LEGAL(s, "2-6 2-7 2-8");
}

/* R4: the point behind must be empty: 7 cannot take 12 because 17 is
 * occupied; 7 cannot step either; the man on 0 moves to 5 or 6. */
Test(khreibaga, r4_no_capture_without_empty_landing)
{
    game_state s = s_pos("b7 w12 w17 b0", 'b', -1);
    EXPECT_LEGAL(s, "0-5 0-6");
}

/* --- R5, R6: kings ------------------------------------------------------------------- */

/* R5: a king is stopped by its own man: from 0 the diagonal ends at 6 since
 * 12 is Black (24 beyond it is unreachable). The man on 12 moves as in R3. */
Test(khreibaga, r5_king_blocked_by_friendly_piece)
{
    game_state s = s_pos("B0 b12 w24", 'b', -1);
    EXPECT_LEGAL(s, "0-1 0-2 0-3 0-4 0-5 0-6 0-10 0-15 0-20 12-16 12-17 12-18");
}

/* R6: the king on 0 passes the empty 6, takes 12 and may land on any empty
 * point behind it on the diagonal: 18 or 24. Captures are compulsory (R8). */
Test(khreibaga, r6_king_lands_anywhere_behind)
{
    game_state s = s_pos("B0 w12", 'b', -1);
    EXPECT_LEGAL(s, "0-18 0-24");
    s_play(&s, "0x24");
    cr_assert_eq(khreibaga_piece_at(&s, 12), '.');
    cr_assert_eq(khreibaga_piece_at(&s, 24), 'B');
}

/* R6: the landing points end at the next piece: White on 6, Black king on 24
 * leaves 12 and 18. */
Test(khreibaga, r6_king_landing_stops_at_next_piece)
{
    game_state s = s_pos("B0 w6 B24", 'b', -1);
    EXPECT_LEGAL(s, "0-12 0-18");
}

/* R6: along an orthogonal line at a distance: 20 down column 0 over 5 to 0. */
Test(khreibaga, r6_king_captures_at_distance)
{
    game_state s = s_pos("B20 w5", 'b', -1);
    EXPECT_LEGAL(s, "20-0");
}

/* R6: two enemy pieces in a row cannot be taken (12 and 18 on the king's
 * diagonal): no capture exists, so the king moves (diagonal up to 6 only). */
Test(khreibaga, r6_two_enemy_pieces_in_a_row)
{
    game_state s = s_pos("B0 w12 w18", 'b', -1);
    EXPECT_LEGAL(s, "0-1 0-2 0-3 0-4 0-5 0-6 0-10 0-15 0-20");
}

/* R6: a king never passes its own piece to capture: 6 stands between the
 * king on 0 and White's 18, so no capture; the man on 6 moves 10, 11, 12. */
Test(khreibaga, r6_king_cannot_capture_past_friendly_piece)
{
    game_state s = s_pos("B0 b6 w18", 'b', -1);
    EXPECT_LEGAL(s, "0-1 0-2 0-3 0-4 0-5 0-10 0-15 0-20 6-10 6-11 6-12");
}

/* --- R7: immediate removal ------------------------------------------------------ */

/* R7: the king on 10 has three first captures:
 *   10x13 over 12, then nothing (row 2 and column 3 are empty)   -> 1
 *   10x2 over 6, then 2x17 or 2x22 over 12, then nothing          -> 2
 *   10x14 over 12, then 14x24 over 19, then 24x0 over 6           -> 3
 * The last hop runs 24-18-12-6-0 through 12, where the first captured piece
 * stood: only its immediate removal lets the king cross 12 a second time.
 * R8 keeps only the 3-capture sequence. After it White has no piece (R12). */
Test(khreibaga, r7_removal_lets_a_king_cross_a_point_twice)
{
    game_state s = s_pos("B10 w12 w19 w6", 'b', -1);
    EXPECT_LEGAL(s, "10-14");
    s_play(&s, "10x14");
    cr_assert_eq(khreibaga_piece_at(&s, 12), '.', "R7: removed at once");
    cr_assert(G()->mid_turn(&s) && G()->to_move(&s) == 0 && khreibaga_chain_point(&s) == 14);
    EXPECT_LEGAL(s, "14-24");
    s_play(&s, "14x24");
    EXPECT_LEGAL(s, "24-0");
    s_play(&s, "24x0");
    cr_assert(!G()->mid_turn(&s) && G()->to_move(&s) == 1);
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 0 && r.reason == GAME_REASON_NO_PIECES);
}

/* R7: the start point is empty during the sequence. The man on 0 can go
 *   0x2 (over 1), 2x12 (over 7), 12x0 (over 6)   -> 3, ending on its start
 *   0x2, 2x10 (over 6)                            -> 2
 *   0x12 (over 6), 12x2 (over 7), 2x0 (over 1)   -> 3, ending on its start
 * so R8 allows 0-2 and 0-12, and after 0-2 only 2-12 (2-10 is a capture that
 * completes no longest sequence, R9). White's piece on 1 is a king because a
 * White man may not stand on row 0 (R20). */
Test(khreibaga, r7_sequence_returns_to_its_start_point)
{
    game_state s = s_pos("b0 W1 w6 w7", 'b', -1);
    EXPECT_LEGAL(s, "0-2 0-12");
    s_play(&s, "0x2");
    EXPECT_LEGAL(s, "2-12");
    cr_assert(!game_is_legal(G(), &s, 2 * 25 + 10), "R9: 2x10 completes no longest sequence");
    s_play(&s, "2x12");
    EXPECT_LEGAL(s, "12-0");
    s_play(&s, "12x0");
    cr_assert_eq(khreibaga_piece_at(&s, 0), 'b');
    cr_assert_eq(s_count(&s, 'w', 'W'), 0);
    cr_assert_eq(G()->to_move(&s), 1);
}

/* R7: a king crosses its own start point. From 12:
 *   12x2 (over 7), 2x4 (over 3), 4x14 (over 9), 14x10 (over 11)  -> 4
 *     the last hop runs 14-13-12-11-10 across 12, empty since the king left
 *   12x2, 2x4, 4x19 or 4x24 (over 9): nothing further             -> 3
 *   12x10 (over 11): nothing further                              -> 1
 * so R8 leaves one line of play. White's piece on 3 is a king (no White man
 * may stand on row 0, R20). */
Test(khreibaga, r7_king_crosses_its_start_point)
{
    game_state s = s_pos("B12 w7 W3 w9 w11", 'b', -1);
    EXPECT_LEGAL(s, "12-2");
    s_play(&s, "12x2");
    EXPECT_LEGAL(s, "2-4");
    s_play(&s, "2x4");
    EXPECT_LEGAL(s, "4-14");
    s_play(&s, "4x14");
    EXPECT_LEGAL(s, "14-10");
    s_play(&s, "14x10");
    cr_assert_eq(khreibaga_piece_at(&s, 10), 'B');
    cr_assert_eq(s_count(&s, 'w', 'W'), 0);
}

/* --- R8: compulsory capture, majority rule ----------------------------------- */

/* R8: the man on 0 can take 1 piece (0x10 over 5); the man on 4 can take 2
 * (4x14 over 9, 14x24 over 19): only 4-14 is legal, across pieces. The
 * sequence ends on row 4, so the man is crowned (R10). */
Test(khreibaga, r8_majority_across_pieces)
{
    game_state s = s_pos("b0 b4 w5 w9 w19", 'b', -1);
    EXPECT_LEGAL(s, "4-14");
    s_play(&s, "4x14");
    EXPECT_LEGAL(s, "14-24");
    s_play(&s, "14x24");
    cr_assert_eq(khreibaga_piece_at(&s, 24), 'B');
    cr_assert_eq(G()->to_move(&s), 1);
}

/* R8 ties: one capture each for 0 (0x10) and 4 (4x14): both are legal. */
Test(khreibaga, r8_ties_are_all_legal)
{
    game_state s = s_pos("b0 b4 w5 w9", 'b', -1);
    EXPECT_LEGAL(s, "0-10 4-14");
}

/* R8: kings gain no priority: the king on 0 takes 1 (over 5, landing 10, 15
 * or 20, nothing further), the man on 4 takes 2: only the man may move. */
Test(khreibaga, r8_kings_gain_no_priority)
{
    game_state s = s_pos("B0 b4 w5 w9 w19", 'b', -1);
    EXPECT_LEGAL(s, "4-14");
}

/* R8: the longest sequence wins whichever piece makes it. King on 0:
 *   0x10 (over 5), 10x12 (over 11; 13 is White, so 12 is the only landing),
 *   12x14 (over 13), 14x24 (over 19; 9 below 14 has Black's 4 behind it)  -> 4
 *   0x15 or 0x20 (over 5): nothing further (19 on row 3 has no point behind) -> 1
 * Man on 4: 4x14 (over 9), then 14x24 (over 19) -> 2, or 14x12 (over 13),
 *   12x10 (over 11; 5 cannot be taken, the king stands on 0 behind it) -> 3.
 * So only 0-10, and then one hop at a time; White keeps just 9. */
Test(khreibaga, r8_longest_sequence_wins_whoever_makes_it)
{
    game_state s = s_pos("B0 b4 w5 w9 w19 w11 w13", 'b', -1);
    EXPECT_LEGAL(s, "0-10");
    s_play(&s, "0x10");
    EXPECT_LEGAL(s, "10-12");
    s_play(&s, "10x12");
    EXPECT_LEGAL(s, "12-14");
    s_play(&s, "12x14");
    EXPECT_LEGAL(s, "14-24");
    s_play(&s, "14x24");
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_eq(s_count(&s, 'w', 'W'), 1);
    cr_assert_eq(khreibaga_piece_at(&s, 9), 'w');
}

/* --- R9: atomic actions ------------------------------------------------------------- */

/* R9: action = src*25 + dst; mid-sequence only the chain piece hops on. */
Test(khreibaga, r9_actions_are_single_hops)
{
    game_state s = s_pos("b0 b4 w5 w9 w19", 'b', -1);
    cr_assert(game_is_legal(G(), &s, 4 * 25 + 14));
    cr_assert(!game_is_legal(G(), &s, 4 * 25 + 24), "R9: a whole sequence is not one action");
    G()->apply(&s, 4 * 25 + 14);
    cr_assert(G()->mid_turn(&s));
    cr_assert_eq(khreibaga_chain_point(&s), 14);
    cr_assert(!game_is_legal(G(), &s, 0 * 25 + 10), "R9: only the chain piece moves on");
    cr_assert(!G()->result(&s).over, "R12: never decided mid-sequence");
}

/* --- R10: promotion ------------------------------------------------------------------ */

/* R10: the man on 12 has 12x22 over 17 then 22x10 over 16 (2 captures),
 * beating 12x2 over 7 and 12x20 over 16 (1 each). On 22 mid-sequence it is
 * still a man: it may not fly down column 2 over 7 (a king could, 22x2),
 * and it ends on 10 uncrowned. */
Test(khreibaga, r10_man_on_far_row_mid_sequence_captures_on_as_man)
{
    game_state s = s_pos("b12 w17 w16 w7", 'b', -1);
    EXPECT_LEGAL(s, "12-22");
    s_play(&s, "12x22");
    cr_assert_eq(khreibaga_piece_at(&s, 22), 'b', "R10: no crowning mid-sequence");
    cr_assert(G()->mid_turn(&s));
    EXPECT_LEGAL(s, "22-10");
    /* The mid-sequence position string round-trips with the man on row 4 (R20). */
    char buf[64];
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, ".......w........w.....b.. b 22");
    game_state t;
    char err[200];
    cr_assert_eq(G()->parse_position(&t, buf, err, sizeof err), 0, "%s", err);
    EXPECT_LEGAL(t, "22-10");
    s_play(&s, "22x10");
    cr_assert_eq(khreibaga_piece_at(&s, 10), 'b');
    cr_assert_eq(G()->to_move(&s), 1);
}

/* R10: crowning happens as the turn ends, and the new king does nothing more
 * that turn. 12x22 (over 17) and 12x2 (over 7) both take one piece (a tie,
 * R8). After 12x22 the man has no man's capture, so the turn ends and it is
 * crowned; as a king it could now take 7 (22 down column 2 to 2), but the
 * turn has passed to White (R11). */
Test(khreibaga, r10_promotion_at_end_of_turn_only)
{
    game_state s = s_pos("b12 w17 w7", 'b', -1);
    EXPECT_LEGAL(s, "12-2 12-22");
    s_play(&s, "12x22");
    cr_assert_eq(khreibaga_piece_at(&s, 22), 'B');
    cr_assert(!G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 1);
    EXPECT_LEGAL(s, "7-2"); /* White's man on 7 (odd) steps down to 2 */
}

/* R10: a simple move onto the far row crowns too, for both colours. */
Test(khreibaga, r10_promotion_by_simple_move)
{
    game_state s = s_pos("b17 W0", 'b', -1);
    EXPECT_LEGAL(s, "17-22");
    s_play(&s, "17-22");
    cr_assert_eq(khreibaga_piece_at(&s, 22), 'B');
    game_state t = s_pos("w7 B24", 'w', -1);
    EXPECT_LEGAL(t, "7-2");
    s_play(&t, "7-2");
    cr_assert_eq(khreibaga_piece_at(&t, 2), 'W');
}

/* --- R11: turn ----------------------------------------------------------------------- */

/* R11: a simple move passes the turn; so does the last hop, never an earlier
 * one (the ply counter counts completed turns). */
Test(khreibaga, r11_turn_passes_only_at_sequence_end)
{
    game_state s = s_pos("B10 w12 w19 w6 b3", 'b', -1);
    cr_assert_eq(G()->ply(&s), 0);
    s_play(&s, "10x14");
    cr_assert(G()->to_move(&s) == 0 && G()->ply(&s) == 0 && G()->mid_turn(&s));
    s_play(&s, "14x24");
    cr_assert(G()->to_move(&s) == 0 && G()->ply(&s) == 0 && G()->mid_turn(&s));
    s_play(&s, "24x0");
    cr_assert(G()->to_move(&s) == 1 && G()->ply(&s) == 1 && !G()->mid_turn(&s));
    game_state t;
    G()->init(&t);
    s_play(&t, "7-12");
    cr_assert(G()->to_move(&t) == 1 && G()->ply(&t) == 1 && !G()->mid_turn(&t));
}

/* --- R12: loss ------------------------------------------------------------------------- */

/* R12: elimination: after Black takes White's last piece, White (to move)
 * has no pieces and loses. */
Test(khreibaga, r12_elimination)
{
    game_state s = s_pos("B0 w12", 'b', -1);
    s_play(&s, "0x18");
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 0);
    cr_assert_eq(r.reason, GAME_REASON_NO_PIECES);
    cr_assert_str_eq(game_reason_name(game_default(), r.reason), "no-pieces");
}

/* R12: stalemate: the king on 1 (odd: row 0 and column 1 only) steps to 0;
 * White's only man, on 5 (odd), can go only to 0, now taken, and cannot jump
 * 0 (nothing lies behind a corner). White has pieces but no action: it
 * loses. */
Test(khreibaga, r12_stalemate_loses)
{
    game_state s = s_pos("B1 w5", 'b', -1);
    EXPECT_LEGAL(s, "1-0 1-2 1-3 1-4 1-6 1-11 1-16 1-21");
    s_play(&s, "1-0");
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 0);
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 0);
    cr_assert_eq(r.reason, GAME_REASON_NO_MOVES);
    cr_assert_str_eq(game_reason_name(game_default(), r.reason), "no-moves");
}

/* --- R13: no progress ---------------------------------------------------------------- */

/* R13: kings on opposite edges can never take each other (a king on row 0
 * sees row 4 only at the end of a line, with nothing behind, and the corners
 * cannot be jumped). Black tours 0-1-2-3-4-0 (5 moves), White 24-23-22-21-24
 * (4 moves): a turn-start position recurs only every 20 full moves, so by
 * ply 50 none has occurred three times (R14 stays silent) while the count
 * grows by one each ply. The draw comes exactly at ply 50. */
Test(khreibaga, r13_fifty_king_moves_draw)
{
    static const int bk[5] = {0, 1, 2, 3, 4}, wk[4] = {24, 23, 22, 21};
    game_state s = s_pos("B0 W24", 'b', -1);
    for (int k = 0; k < 25; k++) {
        for (int side = 0; side < 2; side++) {
            int ply = 2 * k + side;
            cr_assert(!G()->result(&s).over, "over early at ply %d", ply);
            cr_assert_eq(khreibaga_no_progress(&s), ply);
            cr_assert_leq(khreibaga_repetitions(&s), 2);
            int a = side == 0 ? bk[k % 5] * 25 + bk[(k + 1) % 5]
                              : wk[k % 4] * 25 + wk[(k + 1) % 4];
            cr_assert(game_is_legal(G(), &s, a), "ply %d: %d-%d", ply, a / 25, a % 25);
            G()->apply(&s, a);
        }
    }
    cr_assert_eq(G()->ply(&s), 50);
    cr_assert_eq(khreibaga_no_progress(&s), 50);
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, -1);
    cr_assert_eq(r.reason, GAME_REASON_NO_PROGRESS);
}

/* R13: any man move (a crowning one too) and any capture reset the count.
 * B0 W20 b9: no piece can take another (the man on 9 lies on none of the
 * kings' lines as they move below). */
Test(khreibaga, r13_man_moves_and_captures_reset_the_count)
{
    game_state s = s_pos("B0 W20 b9", 'b', -1);
    s_play(&s, "0-1");
    cr_assert_eq(khreibaga_no_progress(&s), 1);
    s_play(&s, "20-21");
    cr_assert_eq(khreibaga_no_progress(&s), 2);
    s_play(&s, "9-14"); /* man move */
    cr_assert_eq(khreibaga_no_progress(&s), 0);
    s_play(&s, "21-22");
    cr_assert_eq(khreibaga_no_progress(&s), 1);
    s_play(&s, "14-19");
    cr_assert_eq(khreibaga_no_progress(&s), 0);
    s_play(&s, "22-23");
    cr_assert_eq(khreibaga_no_progress(&s), 1);
    s_play(&s, "19-24"); /* crowning man move */
    cr_assert_eq(khreibaga_piece_at(&s, 24), 'B');
    cr_assert_eq(khreibaga_no_progress(&s), 0);

    /* A capture: the king on 1 takes White's king on 16 once it stands on
     * column 1 with 21 empty behind it. */
    game_state t = s_pos("B0 W20 b9", 'b', -1);
    s_play(&t, "0-1 20-16");
    cr_assert_eq(khreibaga_no_progress(&t), 2);
    EXPECT_LEGAL(t, "1-21");
    s_play(&t, "1x21");
    cr_assert_eq(khreibaga_no_progress(&t), 0);
}

/* --- R14: repetition ------------------------------------------------------------------ */

/* R14: the kings shuffle 0-1, 24-23, 1-0, 23-24 twice: the start position
 * (which counts once by itself) recurs at ply 4 and for the third time at
 * ply 8: a draw. At ply 4 plane 4 is all ones (R17). */
Test(khreibaga, r14_threefold_repetition)
{
    game_state s = s_pos("B0 W24", 'b', -1);
    cr_assert_eq(khreibaga_repetitions(&s), 1);
    s_play(&s, "0-1 24-23 1-0 23-24");
    cr_assert_eq(khreibaga_repetitions(&s), 2);
    cr_assert(!G()->result(&s).over);
    float planes[7 * 25];
    G()->encode_planes(&s, planes);
    for (int i = 0; i < 25; i++)
        cr_assert_eq(planes[4 * 25 + i], 1.0f);
    s_play(&s, "0-1 24-23 1-0");
    cr_assert(!G()->result(&s).over);
    s_play(&s, "23-24");
    cr_assert_eq(G()->ply(&s), 8);
    cr_assert_eq(khreibaga_repetitions(&s), 3);
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, -1);
    cr_assert_eq(r.reason, GAME_REASON_REPETITION);
}

/* R14 and R22: "repetition already ends some lines from the start within 17
 * hops". 7-12 17x7 2x12 14x2 (White's man lands on row 0: a king) 12x14
 * 18-12 11x13 23-18 13x23 (Black's man crowned on row 4). Now the kings
 * shuttle, 2-17 23-8 17-2 8-23, twice: the position after ply 9 (White to
 * move, kings on 23 and 2) recurs after plies 13 and 17, the third time a
 * draw, with no capture or man move in between. */
Test(khreibaga, r14_repetition_within_17_hops_of_the_start)
{
    game_state s;
    G()->init(&s);
    s_play(&s, "7-12 17x7 2x12 14x2 12x14 18-12 11x13 23-18 13x23");
    cr_assert_eq(khreibaga_piece_at(&s, 2), 'W');
    cr_assert_eq(khreibaga_piece_at(&s, 23), 'B');
    char first[64], buf[64];
    G()->format_position(&s, first, sizeof first);
    s_play(&s, "2-17 23-8 17-2 8-23");
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, first);
    cr_assert_eq(khreibaga_repetitions(&s), 2);
    s_play(&s, "2-17 23-8 17-2");
    cr_assert(!G()->result(&s).over);
    s_play(&s, "8-23");
    cr_assert_eq(G()->ply(&s), 17);
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == -1 && r.reason == GAME_REASON_REPETITION);
}

/* R12 in a real game, 12 plies from the start: 6-12 18x6 8x18 6x8 3x13
 * 24x12 4-8 12x4 (crowned on 4) 0-6 14x12x0 (over 13 then 6, crowned on 0)
 * 2-8 0x2x14 (the new king over 1, then over 8). Black keeps men on 5, 9, 10
 * and 11 and none can move: 5 -> 10 is Black's own, 9 -> 14 is White's king,
 * 10 -> 15/16 and 11 -> 16 are White's men; every jump lands on an occupied
 * point (9x14 on 19, 10x15 on 20, 10x16 on 22, 11x16 on 21) or off the board
 * (9 over the king on 4). Black, to move with four men, has lost. */
Test(khreibaga, r12_stalemate_in_a_real_game)
{
    game_state s;
    G()->init(&s);
    s_play(&s, "6-12 18x6 8x18 6x8 3x13 24x12 4-8 12x4 0-6 14x12 12x0 2-8 0x2 2x14");
    cr_assert_eq(G()->ply(&s), 12);
    char buf[64];
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "....Wb...bbb..Wwww.wwwww. b");
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_MOVES);
    cr_assert_eq(s_count(&s, 'b', 'B'), 4);
}

/* R14: the side to move is part of the position. Black tours 0-1-2-0 (3),
 * White 24-23-24 (2): the board "B0 W24" comes back at ply 5 with White to
 * move and at ply 12 with Black to move. Counting boards alone would make
 * ply 12 a third occurrence; R14 makes it the second. */
Test(khreibaga, r14_side_to_move_counts)
{
    game_state s = s_pos("B0 W24", 'b', -1);
    s_play(&s, "0-1 24-23 1-2 23-24 2-0");
    char buf[64];
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "B.......................W w");
    cr_assert_eq(khreibaga_repetitions(&s), 1);
    s_play(&s, "24-23 0-1 23-24 1-2 24-23 2-0 23-24");
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "B.......................W b");
    cr_assert_eq(G()->ply(&s), 12);
    cr_assert_eq(khreibaga_repetitions(&s), 2);
    cr_assert(!G()->result(&s).over);
}

/* --- R15: length cap ----------------------------------------------------------------- */

/* Plays a long line and checks that the game goes on until ply 300. */
static void s_play_long(game_state *s, const char *tail)
{
    char *line = malloc(8192);
    snprintf(line, 8192, "%s%s", KL_LONG_PREFIX, tail);
    const game_def *g = G();
    char *save = NULL;
    int maxnp = 0;
    for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        int a;
        cr_assert_eq(g->parse_action(t, &a), 0);
        cr_assert(!g->result(s).over, "over at ply %d before the cap", g->ply(s));
        cr_assert(game_is_legal(g, s, a), "ply %d: '%s' illegal", g->ply(s), t);
        g->apply(s, a);
        if (khreibaga_no_progress(s) > maxnp)
            maxnp = khreibaga_no_progress(s);
        cr_assert_lt(khreibaga_repetitions(s), 3);
    }
    free(line);
    cr_assert_lt(maxnp, 50, "R13 would have ended the game first");
}

/* R15: a real game reaching 300 plies ends drawn by length there, with pieces
 * and moves on both sides, no-progress count below 50 and no position seen
 * three times: only R15 can end it. */
Test(khreibaga, r15_length_cap_at_300_plies)
{
    game_state s;
    char err[200];
    cr_assert_eq(G()->parse_position(&s, KL_FORTRESS, err, sizeof err), 0, "%s", err);
    s_play_long(&s, KL_LONG_TAIL_LENGTH);
    cr_assert_eq(G()->ply(&s), 300);
    cr_assert_gt(s_count(&s, 'b', 'B'), 0);
    cr_assert_gt(s_count(&s, 'w', 'W'), 0);
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_gt(G()->legal_actions(&s, legal), 0, "the mover still has moves");
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, -1);
    cr_assert_eq(r.reason, GAME_REASON_LENGTH);
}

/* R12 over R15: the other ending of the same line takes Black's last piece
 * on ply 300. Both a loss (R12) and the cap (R15) hold: the loss stands. */
Test(khreibaga, r12_loss_stands_over_length_draw)
{
    game_state s;
    char err[200];
    cr_assert_eq(G()->parse_position(&s, KL_FORTRESS, err, sizeof err), 0, "%s", err);
    s_play_long(&s, KL_LONG_TAIL_LOSS);
    cr_assert_eq(G()->ply(&s), 300);
    cr_assert_eq(s_count(&s, 'b', 'B'), 0);
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 1);
    cr_assert_eq(r.reason, GAME_REASON_NO_PIECES);
}

/* R12 over R13: the 50-king-move line of khreibaga_lines.h (KL_CAGE). At ply
 * 50 the count is 50 and White, to move, is stalemated: White's king on 5
 * (odd: row 1 and column 0) meets Black's king on 6 with its own man on 7
 * behind it, Black's 0 with the edge behind, and Black's 10 with 15 behind;
 * White's man on 7 may only step to 2 (Black's) and jump nothing (2: edge
 * behind, 6: own king behind, 12: 17 behind). Both R12 and R13 hold: the
 * loss stands. */
Test(khreibaga, r12_loss_stands_over_no_progress_draw)
{
    game_state s;
    char err[200];
    cr_assert_eq(G()->parse_position(&s, KL_CAGE, err, sizeof err), 0, "%s", err);
    char *line = strdup(KL_CAGE_LINE), *save = NULL;
    for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        cr_assert(!G()->result(&s).over, "over at ply %d", G()->ply(&s));
        int a;
        cr_assert_eq(G()->parse_action(t, &a), 0);
        cr_assert(game_is_legal(G(), &s, a), "ply %d: %s", G()->ply(&s), t);
        G()->apply(&s, a);
        cr_assert_lt(khreibaga_repetitions(&s), 3);
    }
    free(line);
    cr_assert_eq(G()->ply(&s), 50);
    cr_assert_eq(khreibaga_no_progress(&s), 50);
    char buf[64];
    G()->format_position(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "b.b.bWBw..b.b..b.bb...... w");
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 0);
    game_result r = G()->result(&s);
    cr_assert(r.over);
    cr_assert_eq(r.winner, 0);
    cr_assert_eq(r.reason, GAME_REASON_NO_MOVES);
}

/* --- R16, R17: canonical planes -------------------------------------------------- */

/* R16, R17: after 7-12 White is to move. Canonically White's men on 13..24
 * become own men on 24-sq = 11..0, and Black's men on 0..6, 8..12 become
 * opponent men on 24..18, 16..12 (17 stays empty: 7 is empty). No kings,
 * no repetition, White to move (plane 5 zeros), ply 1 (plane 6 = 1/300).
 * White's forced capture 17x7 is canonical 7x17. */
Test(khreibaga, r16_canonical_planes_for_white)
{
    game_state s;
    G()->init(&s);
    s_play(&s, "7-12");
    float p[7 * 25];
    G()->encode_planes(&s, p);
    for (int i = 0; i < 25; i++) {
        cr_assert_eq(p[0 * 25 + i], i <= 11 ? 1.0f : 0.0f, "own men at %d", i);
        cr_assert_eq(p[1 * 25 + i], 0.0f);
        cr_assert_eq(p[2 * 25 + i], i >= 12 && i != 17 ? 1.0f : 0.0f, "opp men at %d", i);
        cr_assert_eq(p[3 * 25 + i], 0.0f);
        cr_assert_eq(p[4 * 25 + i], 0.0f);
        cr_assert_eq(p[5 * 25 + i], 0.0f);
        cr_assert_float_eq(p[6 * 25 + i], 1.0f / 300.0f, 1e-7);
    }
    EXPECT_LEGAL(s, "17-7");
    cr_assert_eq(G()->canonical_action(&s, 17 * 25 + 7), 7 * 25 + 17);
    for (int a = 0; a < KH_ACTIONS; a++)
        cr_assert_eq(G()->canonical_action(&s, G()->canonical_action(&s, a)), a);
    game_state b;
    G()->init(&b);
    for (int a = 0; a < KH_ACTIONS; a++)
        cr_assert_eq(G()->canonical_action(&b, a), a, "Black to move: identity");
}

/* R16: the rotation maps Black's start onto White's: the start board with
 * White to move looks, canonically, exactly like the start with Black to
 * move (planes 0-3), and 18-12 maps to 6-12. */
Test(khreibaga, r16_rotation_maps_start_onto_itself)
{
    game_state b, w;
    char err[200];
    G()->init(&b);
    cr_assert_eq(G()->parse_position(&w, "bbbbbbbbbbbb.wwwwwwwwwwww w", err, sizeof err), 0);
    float pb[7 * 25], pw[7 * 25];
    G()->encode_planes(&b, pb);
    G()->encode_planes(&w, pw);
    for (int i = 0; i < 4 * 25; i++)
        cr_assert_eq(pb[i], pw[i], "plane %d point %d", i / 25, i % 25);
    for (int i = 0; i < 25; i++)
        cr_assert(pb[5 * 25 + i] == 1.0f && pw[5 * 25 + i] == 0.0f, "R17 plane 5");
    cr_assert_eq(G()->canonical_action(&w, 18 * 25 + 12), 6 * 25 + 12);
}

/* R17: the layout is [plane][row][col]: Black king on 3 (row 0, col 3) and
 * White man on 21 (row 4, col 1). Black to move: own king plane 1 at index
 * 3, opponent man plane 2 at 21. White to move: rotated, own man at 24-21=3
 * (plane 0), opponent king at 24-3=21 (plane 3). */
Test(khreibaga, r17_plane_layout)
{
    float p[7 * 25];
    game_state b = s_pos("B3 w21", 'b', -1);
    G()->encode_planes(&b, p);
    cr_assert_eq(G()->planes * G()->height * G()->width, 7 * 25);
    for (int i = 0; i < 4 * 25; i++)
        cr_assert_eq(p[i], (i == 1 * 25 + 3 || i == 2 * 25 + 21) ? 1.0f : 0.0f, "index %d", i);
    game_state w = s_pos("B3 w21", 'w', -1);
    G()->encode_planes(&w, p);
    for (int i = 0; i < 4 * 25; i++)
        cr_assert_eq(p[i], (i == 0 * 25 + 3 || i == 3 * 25 + 21) ? 1.0f : 0.0f, "index %d", i);
}

/* R17 planes 4-6 mid-sequence. From the start, 6-12 16x6 1x11 18x6 leaves
 * White's man on 6 in the middle of a capture (6x16 over 11 follows, 16
 * having been vacated): three turns are complete, so plane 6 = 3/300;
 * White moves, so plane 5 is zeros; plane 4 is zeros mid-sequence by R17
 * (and a repeated position could not hold a capture anyway: its first
 * occurrence would have had to capture). */
Test(khreibaga, r17_planes_mid_sequence)
{
    game_state s;
    G()->init(&s);
    s_play(&s, "6-12 16x6 1x11 18x6");
    cr_assert(G()->mid_turn(&s) && G()->to_move(&s) == 1 && khreibaga_chain_point(&s) == 6);
    cr_assert_eq(G()->ply(&s), 3);
    EXPECT_LEGAL(s, "6-16");
    float p[7 * 25];
    G()->encode_planes(&s, p);
    for (int i = 0; i < 25; i++) {
        cr_assert_eq(p[4 * 25 + i], 0.0f);
        cr_assert_eq(p[5 * 25 + i], 0.0f);
        cr_assert_float_eq(p[6 * 25 + i], 3.0f / 300.0f, 1e-7);
    }
    /* The chain man (White, on 6) is an own man at canonical 24-6 = 18. */
    cr_assert_eq(p[0 * 25 + 18], 1.0f);
}

/* --- R18: targets ---------------------------------------------------------------------- */

/* R18: results seen from each player: the stalemated White loses (-1),
 * Black wins (+1); a draw is 0 for both. Within a capture sequence the mover
 * does not change (so a value passes up unchanged there). */
Test(khreibaga, r18_result_from_each_side)
{
    game_state s = s_pos("B1 w5", 'b', -1);
    s_play(&s, "1-0");
    game_result r = G()->result(&s);
    cr_assert_eq(game_result_for(r, 0), 1);
    cr_assert_eq(game_result_for(r, 1), -1);
    game_state d = s_pos("B0 W24", 'b', -1);
    s_play(&d, "0-1 24-23 1-0 23-24 0-1 24-23 1-0 23-24");
    r = G()->result(&d);
    cr_assert(r.over && game_result_for(r, 0) == 0 && game_result_for(r, 1) == 0);
    game_state m = s_pos("B10 w12 w19 w6", 'b', -1);
    s_play(&m, "10x14");
    cr_assert_eq(G()->to_move(&m), 0, "R18: same player mid-sequence");
}

/* --- R19: mirror -------------------------------------------------------------------------- */

/* R19: (r, c) -> (r, 4-c). 6 = (1,1) <-> 8 = (1,3), 12 and 7 stay, 0 <-> 4,
 * 24 <-> 20, 18 = (3,3) <-> 16. B0 w12 has 0x18 and 0x24; its mirror B4 w12
 * has 4x16 and 4x20, exactly the mirrored actions. */
Test(khreibaga, r19_mirror)
{
    cr_assert_eq(G()->symmetries[0].action(6 * 25 + 12), 8 * 25 + 12);
    cr_assert_eq(G()->symmetries[0].action(7 * 25 + 12), 7 * 25 + 12);
    cr_assert_eq(G()->symmetries[0].action(0 * 25 + 24), 4 * 25 + 20);
    for (int a = 0; a < KH_ACTIONS; a++)
        cr_assert_eq(G()->symmetries[0].action(G()->symmetries[0].action(a)), a);
    game_state s = s_pos("B0 w12", 'b', -1), m = s_pos("B4 w12", 'b', -1);
    EXPECT_LEGAL(s, "0-18 0-24");
    EXPECT_LEGAL(m, "4-16 4-20");
    cr_assert_eq(G()->symmetries[0].action(0 * 25 + 18), 4 * 25 + 16);
    /* The planes of the mirror position are the mirrored planes. */
    float ps[7 * 25], pm[7 * 25];
    G()->encode_planes(&s, ps);
    G()->encode_planes(&m, pm);
    game_symmetry_planes(G(), 0, ps);
    for (int i = 0; i < 7 * 25; i++)
        cr_assert_eq(ps[i], pm[i], "index %d", i);
}

/* R19: the start is not mirror-symmetric: row 2 holds b b . w w, which the
 * mirror turns into w w . b b. */
Test(khreibaga, r19_start_not_mirror_symmetric)
{
    game_state s;
    G()->init(&s);
    float p[7 * 25], q[7 * 25];
    G()->encode_planes(&s, p);
    memcpy(q, p, sizeof q);
    game_symmetry_planes(G(), 0, q);
    cr_assert_eq(p[0 * 25 + 10], 1.0f);
    cr_assert_eq(q[0 * 25 + 10], 0.0f, "own man on 10 mirrors to 14");
    cr_assert_eq(q[2 * 25 + 10], 1.0f, "opponent man on 14 mirrors to 10");
}

/* --- R20: position strings ------------------------------------------------------------ */

static void s_expect_parse_error(const char *str, const char *why)
{
    game_state s;
    char err[200] = "";
    int rc = G()->parse_position(&s, str, err, sizeof err);
    cr_assert_eq(rc, KZ_EINVAL, "'%s' (%s) must be rejected", str, why);
    cr_assert(err[0] != '\0' && !strchr(err, '\n'), "'%s': one-line reason, got '%s'", str, err);
}

Test(khreibaga, r20_parse_errors)
{
    s_expect_parse_error("bbbbbbbbbbbb.wwwwwwwwwwwx b", "bad piece letter");
    s_expect_parse_error("bbbbbbbbbbbb.wwwwwwwwwwww", "no side to move");
    s_expect_parse_error("bbbbbbbbbbbb.wwwwwwwwwwww x", "bad side to move");
    s_expect_parse_error("bbbbbbbbbbbb.wwwwwwwwwww b", "24 points");
    s_expect_parse_error("bbbbbbbbbbbb.wwwwwwwwwwww. b", "26 points");
    s_expect_parse_error("bbbbbbbbbbbb.wwwwwwwwwwww  b", "two spaces");
    s_expect_parse_error("", "empty");
    s_expect_parse_error("bbbbbbbbbbbbbwwwwwwwwwwww b", "13 Black pieces");
    s_expect_parse_error("BBBBBBBBBBBBB...........W b", "13 Black kings");
    s_expect_parse_error("W..........wwwwwwwwwwwwww w", "13 White pieces");
    s_expect_parse_error("W...................b.... b", "Black man on row 4");
    s_expect_parse_error("..w........B............. w", "White man on row 0");
    s_expect_parse_error("............b...........W b 12", "chain piece without capture");
    s_expect_parse_error("............b....w......W b 13", "chain point empty");
    s_expect_parse_error("............b....w......W b 17", "chain piece is White's");
    s_expect_parse_error("............b....w......W w 12", "chain piece is not the mover's");
    s_expect_parse_error("............b....w......W b 25", "chain point off the board");
    s_expect_parse_error("............b....w......W b x", "chain point not a number");
    s_expect_parse_error("............b....w......W b 12 ", "trailing space");
    /* Regression: the chain point used to go through strtol, which took
     * these (found by the cross-check against the reference). */
    s_expect_parse_error("............b....w......W b  12", "two spaces before the chain");
    s_expect_parse_error("............b....w......W b +12", "signed chain point");
    s_expect_parse_error("............b....w......W b 012", "three digits");
    s_expect_parse_error("............b....w......W b -0", "negative zero");
}

/* R20: valid strings round-trip and start a fresh history (ply 0, count 0,
 * the position's first occurrence). A mid-sequence string with a chain piece
 * that can capture (12 over 17 onto 22) is valid. */
Test(khreibaga, r20_round_trip_and_fresh_history)
{
    static const char *ok[] = {
        "bbbbbbbbbbbb.wwwwwwwwwwww b",
        "bbbbbbbbbbbb.wwwwwwwwwwww w",
        "............b....w......W b 12",
        "B.......................W w",
        "......................... b", /* no pieces at all: over at once (R12) */
        KL_FORTRESS,
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        game_state s;
        char err[200], buf[64];
        cr_assert_eq(G()->parse_position(&s, ok[i], err, sizeof err), 0, "'%s': %s", ok[i], err);
        G()->format_position(&s, buf, sizeof buf);
        cr_assert_str_eq(buf, ok[i]);
        cr_assert_eq(G()->ply(&s), 0);
        cr_assert_eq(khreibaga_no_progress(&s), 0);
        cr_assert_eq(khreibaga_repetitions(&s), G()->mid_turn(&s) ? 0 : 1);
    }
    game_state s = s_pos("b12 w17 W24", 'b', 12);
    cr_assert(G()->mid_turn(&s));
    EXPECT_LEGAL(s, "12-22");
    game_state e;
    char err[200];
    G()->parse_position(&e, "......................... b", err, sizeof err);
    game_result r = G()->result(&e);
    cr_assert(r.over && r.reason == GAME_REASON_NO_PIECES && r.winner == 1);
}

/* --- R21: action strings -------------------------------------------------------------- */

Test(khreibaga, r21_action_strings)
{
    int a = -1;
    cr_assert_eq(G()->parse_action("7-12", &a), 0);
    cr_assert_eq(a, 7 * 25 + 12);
    cr_assert_eq(G()->parse_action("7x17", &a), 0);
    cr_assert_eq(a, 7 * 25 + 17);
    cr_assert_eq(G()->parse_action("0-24", &a), 0);
    cr_assert_eq(a, 24);
    cr_assert_eq(G()->parse_action("24x0", &a), 0);
    cr_assert_eq(a, 24 * 25);
    static const char *bad[] = {
        "", "7", "7-", "-12", "7-25", "25-7", "-1-3", "7_12", "a-b", "7-12x", "7-12 ",
        " 7-12", "7--12", "7-1 2", "99999999999999999999-1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(G()->parse_action(bad[i], &a), KZ_EINVAL, "'%s' must be rejected", bad[i]);
    char buf[16];
    G()->format_action(7 * 25 + 17, buf, sizeof buf);
    cr_assert_str_eq(buf, "7-17");
    for (int b = 0; b < KH_ACTIONS; b++) {
        G()->format_action(b, buf, sizeof buf);
        cr_assert_eq(G()->parse_action(buf, &a), 0);
        cr_assert_eq(a, b);
    }
}

/* --- R22: perft ------------------------------------------------------------------------ */

static uint64_t s_perft(const game_state *s, int depth)
{
    if (depth == 0)
        return 1;
    if (G()->result(s).over)
        return 0;
    uint16_t legal[GAME_MAX_LEGAL];
    int n = G()->legal_actions(s, legal);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        game_state c = *s;
        G()->apply(&c, legal[i]);
        total += s_perft(&c, depth - 1);
    }
    return total;
}

/* R22 from the start, by hand (every other jump lands on an occupied point):
 * d1 = 3: 6-12, 7-12, 8-12 (r2_start_position).
 * d2 = 4: White must capture (R8). After 6-12: 18x6 (over 12) and 16x6 (over
 *   11, down column 1); after 7-12: 17x7; after 8-12: 16x8 (diagonal).
 * d3 = 5: Black must take the intruder. 6-12 16x6: 1x11 (column 1, 11 now
 *   empty). 6-12 18x6: 0x12 (diagonal, 12 emptied) and 8x18 (column 3 over
 *   13 into the vacated 18). 7-12 17x7: 2x12. 8-12 16x8: 4x12.
 * d4 = 7: after 1x11: 18x6 (over Black's 12). After 0x12: 16x6 (over 11).
 *   After 8x18: 6x8 (row 1 over 7, 8 vacated), 23x13 (over 18), 24x12 (over
 *   18, diagonal). After 2x12: 14x2 (diagonal over 8). After 4x12: 14x4
 *   (column 4 over 9). 1 + 1 + 3 + 1 + 1 = 7.
 * d5 = 9: 18x6 is not over: 6x16 (over 11, 16 vacated at ply 2); 16x6 goes
 *   on 6x18 (over 12, 18 vacated at ply 2). After 6x8 Black has 3x13, 4x12
 *   (diagonal) and 9x7 (7 emptied); after 23x13: 0x12; after 24x12: 11x13;
 *   after 14x2: 12x14 (over 13, 14 vacated); after 14x4: 12x14.
 *   1 + 1 + 3 + 1 + 1 + 1 + 1 = 9. */
Test(khreibaga, r22_perft_start_by_hand)
{
    game_state s;
    G()->init(&s);
    static const uint64_t want[] = {0, 3, 4, 5, 7, 9};
    for (int d = 1; d <= 5; d++) {
        cr_assert_eq(s_perft(&s, d), want[d], "perft %d", d);
        cr_assert_eq(game_perft(G(), &s, d), want[d], "game_perft %d", d);
        cr_assert_eq(game_perft_generic(G(), &s, d), want[d], "game_perft_generic %d", d);
    }
}

/* R22 deeper from the start: the engine and the independent reference
 * (solve/ref_khreibaga.c) must agree at every depth to 12. */
Test(khreibaga, r22_perft_deep_engine_equals_reference)
{
    game_state s;
    G()->init(&s);
    ref_game *r = malloc(sizeof *r);
    ref_init(r);
    for (int d = 1; d <= 12; d++) {
        uint64_t e = s_perft(&s, d), f = ref_perft(r, d), m = game_perft(G(), &s, d);
        cr_assert_eq(e, f, "perft %d: engine %llu, reference %llu", d, (unsigned long long)e,
                     (unsigned long long)f);
        cr_assert_eq(m, f, "perft %d: game_perft %llu, reference %llu", d, (unsigned long long)m,
                     (unsigned long long)f);
        cr_log_info("perft %d: %llu", d, (unsigned long long)e);
    }
    free(r);
}
