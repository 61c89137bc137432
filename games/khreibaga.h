/* khreibaga: the rules of Khreibaga (Mauritanian Alquerque) as a game module,
 * implementing docs/rules.md R1-R22. Everything outside this
 * module reaches the rules through `khreibaga_game` (see game.h).
 *
 * Board: points 0..24, sq = row*5 + col, row 0 at the bottom (R1). Actions:
 * src*25 + dst, one hop or one simple move each (R9). Player 0 is Black, who
 * moves first (R2); player 1 is White. */
#ifndef KZ_KHREIBAGA_H
#define KZ_KHREIBAGA_H

#include "games/game.h"

#define KH_POINTS 25
#define KH_ACTIONS 625
#define KH_MAX_PLIES 300   /* R15 */
#define KH_NO_PROGRESS 50  /* R13 */
#define KH_START "bbbbbbbbbbbb.wwwwwwwwwwww b"
#define KH_EVAL_MAN 100    /* the baseline players' value of a man (game_def.evaluate) */
#define KH_EVAL_KING 250   /* and of a (flying) king */

extern const game_def khreibaga_game;

/* The piece on a point: '.', 'b', 'B', 'w' or 'W'. */
char khreibaga_piece_at(const game_state *s, int sq);
/* The point of the piece that must hop on mid-sequence, or -1. */
int khreibaga_chain_point(const game_state *s);
/* The no-progress counter (R13) and how often the current turn-start
 * position has occurred, this time included (R14; 0 mid-sequence). */
int khreibaga_no_progress(const game_state *s);
int khreibaga_repetitions(const game_state *s);

/* Bitboards (bit sq = point sq, R1) for code that works on whole boards (the
 * tablebases, tablebase.h): the pieces of a colour (0 Black, 1 White), and
 * the kings of both colours. */
uint32_t khreibaga_pieces(const game_state *s, int colour);
uint32_t khreibaga_kings(const game_state *s);
/* Sets s to the turn-start position with these pieces (kings among them) and
 * `side` (0 Black, 1 White) to move, a fresh history as after parse_position
 * (ply 0, no-progress 0). Returns 0, or KZ_EINVAL for what parse_position
 * refuses at a turn start: overlapping colours, kings on no piece, points
 * past 24, more than 12 pieces a side, a man on its promotion row (R10).
 * Cheap: meant for loops over millions of positions. */
int khreibaga_set(game_state *s, uint32_t black, uint32_t white, uint32_t kings, int side);
/* The state that bytes of khreibaga_game.pack describe (packed_bytes of
 * them): the pieces, the side to move, the chain point, the ply and the
 * no-progress count (R13; 0 in bytes packed before the count was kept),
 * with a fresh repetition history otherwise (the repeated flag is not
 * restored). For the endgame tables' value targets (tablebase.h), where a
 * training sample is all that is left of a state, and the trainer's
 * reanalyse (game_def.unpack_state). 0, or KZ_ECORRUPT for
 * bytes no pack() wrote or a position parse_position would refuse. */
int khreibaga_unpack_state(const uint8_t *packed, game_state *s);

#endif
