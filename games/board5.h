/* board5: the 5x5 Alquerque board that Khreibaga (R1) and Alquerque (A1)
 * share: 25 points, point = 5 * row + column (row 0 the first player's
 * base), joined by lines along the rows, the columns and, through the points
 * where row + column is even, the diagonals. Both games write an action as
 * a from-to pair (from * 25 + to, 625 actions) and turn the board for the
 * second player by 180 degrees; both keep the left-right mirror. What the
 * games do on these lines (men's directions, jumps, flying kings) is theirs.
 *
 * Pure functions and constant tables: thread-safe. */
#ifndef KZ_BOARD5_H
#define KZ_BOARD5_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define BOARD5_POINTS 25
#define BOARD5_ACTIONS (BOARD5_POINTS * BOARD5_POINTS)

/* The eight directions, in this order: N S E W NE NW SE SW (row and column
 * steps in board5_dr, board5_dc); N is towards higher rows. */
enum { BOARD5_N, BOARD5_S, BOARD5_E, BOARD5_W, BOARD5_NE, BOARD5_NW, BOARD5_SE, BOARD5_SW };
extern const int board5_dr[8], board5_dc[8];

/* The point k steps from sq in direction d along a line, or -1 (off the
 * board, or a diagonal from a point without one). */
int board5_along(int sq, int d, int k);
/* The points along direction d from sq to the edge, nearest first, into pts
 * (room for 4); their count (0 where d is no line of sq). */
int board5_ray(int sq, int d, int *pts);
/* A from-to action turned by 180 degrees (the second player's view), and
 * mirrored left to right. */
int board5_rot_action(int action);
int board5_mirror_action(int action);
/* The numbers of row r's points as a terminal board shows them beside the
 * row (left to right; turned: from the second player's side), so that every
 * point's number can be read off: "     20 21 22 23 24". */
void board5_print_numbers(FILE *out, int r, bool turned);
/* A terminal board's row i from the top (turned: the board seen from the
 * second player's side), both games' way. board5_print_row_start writes the
 * number of its first point shown and returns the row r; the caller then
 * writes the five points, joined by "-"; board5_print_row_end writes the
 * number of its last point, board5_print_numbers, the newline and, below all
 * but the bottom row, the diagonals to the next row ("| \ | / ..."). */
int board5_print_row_start(FILE *out, int i, bool turned);
void board5_print_row_end(FILE *out, int i, bool turned);
/* The mirror of each point, (r, c) -> (r, 4 - c). */
extern const int16_t board5_mirror_cells[BOARD5_POINTS];

#endif
