/* draughts: English draughts (checkers) as a game module ("draughts"),
 * implementing docs/rules-draughts.md D1-D22. Everything outside this
 * module reaches the rules through `draughts_game` (see game.h).
 *
 * Board: the 32 playable squares in the standard numbering 1..32, kept as
 * sq = number - 1 (0..31); row sq / 4 counts from Black's back row (squares
 * 1-4) towards White's (29-32) (D1). Actions: src*32 + dst, one step or one
 * jump each (D11). Player 0 is Black, who moves first (D2); player 1 White. */
#ifndef KZ_DRAUGHTS_H
#define KZ_DRAUGHTS_H

#include "games/game.h"

#define DR_SQUARES 32
#define DR_ACTIONS 1024   /* D11: 32 x 32 from-to pairs */
#define DR_QUIET_DRAW 80  /* D13: 40 moves a side without a capture or a man move */
#define DR_START "bbbbbbbbbbbb........wwwwwwwwwwww b"

extern const game_def draughts_game;

/* The piece on square sq (0..31): '.', 'b', 'B' (a Black king), 'w' or 'W'. */
char draughts_piece_at(const game_state *s, int sq);

#endif
