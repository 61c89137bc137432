/* backgammon: standard backgammon without the doubling cube as a game module
 * ("backgammon"), implementing docs/rules-backgammon.md B1-B20. Everything
 * outside this module reaches the rules through `backgammon_game` (game.h);
 * the functions below serve kz's tools and the tests that compare the move
 * generation with GNU Backgammon.
 *
 * Board. Each player counts its own points 1..24 towards its home (B1);
 * index i = point i + 1 (0 the ace point), 24 the bar, gnubg's layout.
 *
 * Actions (186, B14). A checker move of one die: (from * 6 + die - 1) for
 * from 0..24 (24 the bar) in the mover's numbering, 0..149; the same side
 * moves again until the roll is played (B9-B11). Chance outcomes (B3, B5):
 * 150 + (a - 1) * 6 + (b - 1): a roll a-b with a >= b (21 outcomes), or at
 * the opening the ordered pair (a = white's die, b = black's die, a != b: 30
 * outcomes; the higher die moves first with both).
 *
 * Players: 0 white, 1 black. Which of them moves first is the opening roll's
 * (B3); to_move at the opening chance state is 0 (no one moves before it). */
#ifndef KZ_BACKGAMMON_H
#define KZ_BACKGAMMON_H

#include "games/game.h"

#define BG_POINTS 24
#define BG_BAR 24
#define BG_CHECKERS 15
#define BG_MOVE_ACTIONS 150 /* 25 origins x 6 dice */
#define BG_CHANCE_BASE 150
#define BG_ACTIONS 186      /* 150 checker moves + 36 (a, b) outcomes */
#define BG_START_ID "4HPwATDgc/ABMA"
#define BG_MAX_PLIES 600 /* B19: turns before a game is a draw (records hold 4096 moves) */

extern const game_def backgammon_game;

/* One whole move (a turn's checker moves, B9-B11) and the position it reaches. */
typedef struct bg_whole_move {
    char text[64];    /* standard notation, e.g. "8/5 6/5", "bar/22* 6/off" ("" for none) */
    char after[16];   /* the Position ID after it, from the mover's view (the mover's
                         checkers second, gnubg's convention: the player on roll last) */
    uint16_t actions[4]; /* the atomic actions that play it, in order */
    int n_actions;
} bg_whole_move;

/* Every legal whole move of s (a state with dice to play: not chance, not
 * over), one per distinct resulting position, into out (up to max), in the
 * order of their first action sequences. Returns the number of distinct
 * moves (which may exceed max: then only max were written), 0 when the roll
 * cannot be played at all (B12). */
int backgammon_whole_moves(const game_state *s, bg_whole_move *out, int max);

/* The Position ID of a board (B17): own and opp are 25 counts each (index as
 * above), own the player on roll; buf holds 15 bytes. */
void backgammon_position_id(const uint8_t own[25], const uint8_t opp[25], char *buf);
/* Decodes a Position ID into own (on roll) and opp; 0, or KZ_EINVAL with a
 * one-line reason (not 14 base64 characters, more than 15 checkers a side,
 * both sides on one point) in err. */
int backgammon_parse_id(const char *id, uint8_t own[25], uint8_t opp[25], char *err,
                        size_t errlen);
/* The board of s: own = the player to move's counts, opp = the other's. */
void backgammon_board(const game_state *s, uint8_t own[25], uint8_t opp[25]);
/* The pip counts (B1) of the player to move (*own) and of the other (*opp). */
void backgammon_pips(const game_state *s, int *own, int *opp);
/* Whether the sides can still meet (contact): some checker of one side
 * (the bar included) still has to pass one of the other's. False in a race
 * (and when a side has borne every checker off). */
bool backgammon_contact(const game_state *s);

#endif
