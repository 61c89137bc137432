/* yinsh: Yinsh as a game module ("yinsh"), and its blitz variant
 * ("yinsh-blitz": one ring wins), implementing docs/rules-yinsh.md Y1-Y24.
 * Everything outside this module reaches the rules through `yinsh_game` and
 * `yinsh_blitz_game` (see game.h).
 *
 * Points: the 85 points in Y1's order, a2 = 0 ... k10 = 84. Actions (Y21):
 *   [0, 85)        place a ring              `e5`
 *   [85, 1933)     move a ring from-to       `e5-e8` (pairs on a line, by from then to)
 *   [1933, 2056)   remove a row of five      `e5:e9` (windows, by first point, direction)
 *   [2056, 2141)   remove an own ring        `xe5`
 *   2141           pass                      `pass`
 * Player 0 is White, who places the first ring (Y3); player 1 Black. A turn
 * is a sequence of atomic actions by one side (Y15): its pending row and
 * ring removals, its move, the removals its move made for it. */
#ifndef KZ_YINSH_H
#define KZ_YINSH_H

#include "games/game.h"

#define YS_POINTS 85
#define YS_MOVES 1848  /* ordered pairs of distinct points on a common line */
#define YS_WINDOWS 123 /* five-point windows on the lines */
#define YS_PLACE 0
#define YS_MOVE (YS_PLACE + YS_POINTS)
#define YS_ROW (YS_MOVE + YS_MOVES)
#define YS_RING (YS_ROW + YS_WINDOWS)
#define YS_PASS (YS_RING + YS_POINTS)
#define YS_ACTIONS (YS_PASS + 1) /* 2142 */
#define YS_MARKERS 51            /* Y3: the pool */
#define YS_RINGS 5               /* Y3: rings per side */

/* End reasons (game_def.reasons): 0 "none", then these. */
enum ys_reason {
    YS_REASON_RINGS = 1, /* Y16: a side removed its target of rings */
    YS_REASON_MARKERS,   /* Y18: the pool is empty when a ring move is due */
    YS_REASON_BLOCKED,   /* Y17: a pass, and the other side cannot move either */
    YS_REASON_COUNT
};

extern const game_def yinsh_game;
extern const game_def yinsh_blitz_game;

/* The name of reason r (enum ys_reason, 0 "none"); "unknown" out of range. */
const char *yinsh_reason_name(int r);
/* The point index (0..84) of the point written at *p ("e5", "k10"), moving
 * *p past it; -1 (and *p unchanged) when it is not a point of the board. */
int yinsh_parse_point(const char **p);
/* Writes a point's name ("e5") into buf (at least 4 bytes). */
void yinsh_point_name(int point, char *buf);
/* What stands on a point: '.', 'W' 'B' (rings), 'w' 'b' (markers). */
char yinsh_at(const game_state *s, int point);

#endif
