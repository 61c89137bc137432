/* alquerque: the rules of Alquerque under R. C. Bell's rules as a game
 * module ("alquerque"), implementing docs/rules-alquerque.md A1-A20.
 * Everything outside this module reaches the rules through
 * `alquerque_game` (see game.h).
 *
 * Board: points 0..24, sq = row*5 + col, row 0 at the bottom (A1, the same
 * lines as Khreibaga's). Actions: src*25 + dst, one simple move or one jump
 * each (A11). Player 0 is Light, who moves first (A2); player 1 is Dark. */
#ifndef KZ_ALQUERQUE_H
#define KZ_ALQUERQUE_H

#include "games/game.h"

#define ALQ_POINTS 25
#define ALQ_ACTIONS 625
#define ALQ_MAX_PLIES 1200 /* A14: never reached (A13: at most 1151 turns) */
#define ALQ_START "lllllllllldd.lldddddddddd l"

extern const game_def alquerque_game;

/* The piece on a point: '.', 'l' or 'd'. */
char alquerque_piece_at(const game_state *s, int sq);

#endif
