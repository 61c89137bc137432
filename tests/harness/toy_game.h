/* toy_game: a tiny capture game that exists only for the tests (and the test
 * copies of the programs, build/toy/), so that a second game runs through the
 * whole stack in make check: rules, perft, search, records, validation, a
 * real cluster. Registered as "toy" by a constructor when linked in.
 *
 * Rules (T1-T6):
 * T1 Board: 3 x 3 cells, sq = row*3 + col, row 0 at the bottom; cells are
 *    joined to their orthogonal neighbours only (no diagonals).
 * T2 Start: South (player 0, 's') has men on the corners 0 and 2, North
 *    (player 1, 'n') on 6 and 8; South moves first.
 * T3 Capture: a man jumps over an orthogonally adjacent enemy man onto the
 *    empty cell just beyond it on the same line, removing it. Captures are
 *    compulsory; after a capture the same man must capture again while it
 *    can (one action per hop, the same player moving on), any of its
 *    captures at each hop.
 * T4 Step: without a capture, a man steps to an orthogonally adjacent empty
 *    cell, in any direction.
 * T5 End, at the start of a turn: a player with no men, or no legal action,
 *    loses; at TOY_MAX_PLIES completed turns the game is drawn.
 * T6 Notation: actions src*9 + dst (81), written "src-dst"; positions as 9
 *    characters (. s n), a space, the side to move (s or n), and in the middle
 *    of a capture sequence a space and the cell of the man that jumps on. The
 *    network sees the board from the mover's side (turned 180 degrees for
 *    North, sq -> 8 - sq), 4 planes: own men, the other's, the man that must
 *    jump on, and turns / TOY_MAX_PLIES everywhere. The game has no
 *    symmetries (augmentation off), and its search defaults are 32
 *    simulations with a Dirichlet alpha of 3 (about 3 legal actions).
 *    Two men a side on 3 x 3 leave a few even positions to start games from
 *    (the coordinator's book) and most games to the length cap. */
#ifndef KZ_TESTS_TOY_GAME_H
#define KZ_TESTS_TOY_GAME_H

#include "games/game.h"

#define TOY_CELLS 9
#define TOY_ACTIONS 81
#define TOY_MAX_PLIES 16

extern const game_def toy_game;

#endif
