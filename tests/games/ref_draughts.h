/* ref_draughts: a deliberately plain second implementation of English
 * draughts, written from docs/rules-draughts.md alone (no bitboards, no
 * tables, no code shared with games/draughts.c), the oracle of
 * tests/games/test_draughts.c. The board is an 8x8 array of characters as the
 * standard diagram draws it (row 0 at the top, Black's side); the squares'
 * numbers are found by counting the dark squares in reading order (D1).
 * Repetitions are counted over every turn start since the game began (not
 * only since the last capture or man move, as the engine does), and the
 * quiet turns by looking at each turn as it is played. Slow on purpose:
 * clarity over speed. */
#ifndef KZ_TESTS_REF_DRAUGHTS_H
#define KZ_TESTS_REF_DRAUGHTS_H

#include <stdbool.h>
#include <stdint.h>

#define REF_DR_MAX_LEGAL 64   /* more than any position has */
#define REF_DR_MAX_TURNS 16384 /* more turn starts than any game has (D15) */

typedef struct ref_dr_seen {
    char board[8][8]; /* a turn start's board */
    int side;         /* and who was to move */
} ref_dr_seen;

typedef struct ref_dr {
    char board[8][8];  /* [row][col]: '.', 'b', 'B', 'w', 'W'; ' ' on light squares */
    int side;          /* 0 Black, 1 White to move */
    int chain;         /* the number (1..32) of the piece that must jump on, 0 at a turn start */
    int quiet;         /* turns in a row with only a king's simple move (D13) */
    int n_seen;        /* turn starts so far, this one included */
    ref_dr_seen *seen; /* every turn start of the game (REF_DR_MAX_TURNS, allocated) */
} ref_dr;

/* D2's start; allocates the history (free it with ref_dr_free). */
void ref_dr_init(ref_dr *p);
void ref_dr_free(ref_dr *p);
/* Reads a D19 string (trusting it is valid) into an initialised p, as a
 * new game; false when it cannot. */
bool ref_dr_parse(ref_dr *p, const char *text);
/* Writes the D19 string of p (buf of at least 40 bytes). */
void ref_dr_format(const ref_dr *p, char *buf);
/* The legal actions ((src-1)*32 + dst-1 in square numbers), ascending; their
 * count (0 when the game is over). */
int ref_dr_legal(const ref_dr *p, int *out);
/* Plays a legal action. */
void ref_dr_apply(ref_dr *p, int action);
/* Whether the game is over at this turn start (D12-D15): the winner (-1 a
 * draw) and the reason (game.h's enum game_reason). */
bool ref_dr_over(const ref_dr *p, int *winner, int *reason);
/* D21's perft: hops, or whole turns. */
uint64_t ref_dr_perft(const ref_dr *p, int depth);
uint64_t ref_dr_perft_turns(const ref_dr *p, int depth);

#endif
