/* ref_yinsh: a deliberately plain second implementation of Yinsh, written
 * from docs/rules-yinsh.md alone (no tables shared with games/yinsh.c, no
 * code shared), the oracle of tests/games/test_yinsh.c. The board is an
 * 11 x 12 array of characters indexed [letter][number] as Y1 writes the
 * points ('.', 'W', 'B', 'w', 'b'; ' ' off the board), the points found from
 * Y1's list of columns; the action numbers of Y21 are found by counting
 * (every pair of points is tried on every line). Everything (rows, moves,
 * who acts) is recomputed by scanning the board each time. Slow on purpose:
 * clarity over speed. */
#ifndef KZ_TESTS_REF_YINSH_H
#define KZ_TESTS_REF_YINSH_H

#include <stdbool.h>
#include <stdint.h>

#define REF_YS_MAX_LEGAL 512 /* more than any position has */

typedef struct ref_ys {
    char board[11][12]; /* [letter 0..10][number 1..11] */
    int side;           /* who acts: 0 White, 1 Black */
    int removed[2];     /* rings removed (Y10) */
    int target;         /* Y16, Y19 */
    char todo;          /* 'p' place, 'm' move, 'r' a row due, 'x' a ring due */
    bool after;         /* the removals due follow the side's own move (Y14) */
    bool acted;         /* the side has acted in this turn */
    bool over;
    int winner;         /* -1 a draw */
    int reason;         /* 1 rings, 2 markers, 3 blocked */
} ref_ys;

/* The start of a game whose target is `target` (3, or 1 for blitz). */
void ref_ys_init(ref_ys *p, int target);
/* Y23's string of p (buf of at least 128 bytes). */
void ref_ys_format(const ref_ys *p, char *buf);
/* The legal actions (Y21's numbers), ascending; their count (0 when over). */
int ref_ys_legal(const ref_ys *p, int *out);
/* Plays a legal action. */
void ref_ys_apply(ref_ys *p, int action);
/* The action written `text` (Y22), or -1. */
int ref_ys_parse_action(const char *text);
/* Perft over atomic actions (Y24). */
uint64_t ref_ys_perft(const ref_ys *p, int depth);

#endif
