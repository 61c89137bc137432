/* view: a game as the web pages draw it. The pages (web/board.js) know no
 * game: they draw the board, the pieces and the moves of any game from its
 * description, a JSON object the game writes (game_def.describe) and the
 * server hands out in GET /api/info ("view"). docs/web.md ("A game's
 * description") is the format; in short:
 *
 *   {"players": [{"name", "colour"}, ...],       who moves first, first
 *    "board": {"points": [[x, y, "label"], ...],  one per point or square, in
 *                                                 the position string's order
 *              "lines": [[i, j], ...],             lines between points
 *              "shapes": [{"rect": [x, y, w, h] | "poly": [x, y, ...],
 *                          "fill"}, ...],          squares, triangles, ...
 *              "bottom": P, "background", "ink", "labels", "piece"},
 *    "pieces": {"b": {"player": 0, "kind": "man"}, ...},
 *    "position": {"board": "chars" | "counts", "empty": ".", "fields": [...]},
 *    "actions": {"separators": "-x", "capture": "x"}}
 *
 * An action string is point labels joined by separators (the page clicks
 * them in order); actions that are not (e.g. "roll") become buttons.
 * Backgammon's adds piles (a point's 4th member, [dx, dy]), shapes clicked
 * as points, "board": "gnubg-id" positions (the page decodes the Position
 * ID), the dice's places and "actions.labels", each side's numbering.
 *
 * This module is what the games share to write one: a board of points in a
 * grid with the Alquerque lines, and the description of a game that has no
 * describe (a grid of height x width points read from the position string).
 * Threads: pure functions over their arguments. */
#ifndef KZ_VIEW_H
#define KZ_VIEW_H

#include "common/util.h"
#include "games/game.h"

/* Writes g's description (g->describe, or the plain grid when it has none)
 * to out: one JSON object. */
void view_describe(const game_def *g, strbuf *out);

/* The "board" member of the 5x5 Alquerque board, after a comma: points
 * 0..24 numbered from the bottom-left corner row by row, labelled 0..24; the
 * orthogonal lines and the diagonals through the points with row + column
 * even; labels at the corner; the board's background and ink colours (CSS).
 * Written as `,\n"board": {...},\n`: the next member follows. */
void view_alquerque_board(strbuf *out, const char *background, const char *ink);

/* The end of a hop game's description (Khreibaga, Alquerque, draughts),
 * after its board: the "pieces" member, player p's men drawn as men[p] and,
 * when kings is not NULL, its kings as kings[p]; "position" as R20 writes
 * it, one char a point ('.' empty) then the fields named (fields: their
 * JSON strings, ", "-separated); "actions" from-to with "-" or "x" (a
 * capture); and the closing brace. */
void view_hop_end(strbuf *out, const char men[2], const char *kings, const char *fields);

/* A description's opening: `{"players": [{"name": ..., "colour": ...}, ...]`
 * for g's two players with the colours c0 and c1 (CSS colours). */
void view_open(strbuf *out, const game_def *g, const char *c0, const char *c1);

#endif
