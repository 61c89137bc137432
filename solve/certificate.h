/* certificate: the independent verifier of the solver's proofs (docs/solve.md).
 * A certificate is a text file proving "X does not lose" from its first
 * position: a closed set of turn-start positions. It is checked with the
 * naive reference rules (solve/ref_khreibaga.h), never the fast engine the
 * search used, and with probes of the endgame tables (games/tablebase.h;
 * the engine serves only to index them).
 *
 * Format (version 1), one item a line, '\n'-terminated, ASCII:
 *
 *   kz-solve-certificate 1
 *   claim black-not-lose            (or white-not-lose: X)
 *   tables N                        (table positions with at most N pieces are leaves)
 *   POSITION CLAIM [TURN]           (one node a line; the first is the root)
 *   ...
 *
 * POSITION is an R20 turn-start string (25 points, a space, b or w), CLAIM
 * the claim again, and TURN, on a line whose side to move is X (an OR node)
 * and only there, the proving turn: its points joined by '-' or 'x' (R21),
 * "8-13" for a simple move, "7x17x5" for a sequence of two hops (7-17, then
 * 17-5). Lines starting with '#' are comments. A line stands for its
 * position and that position's left-right mirror image (R19); no position
 * may have two lines.
 *
 * The checks: at an OR node the turn is legal hop by hop and complete; at an
 * AND node (the opponent to move) every complete legal turn is taken; each
 * position so reached must be a line of the file (or its mirror image), or
 * an R12 loss of the side then to move that is not X, or a position with at
 * most N pieces whose table value for X at no-progress count 0 is a draw or
 * a win. A position with X to move and no legal action is never accepted.
 *
 * Thread rules: pure over its arguments; the tables are only read. */
#ifndef KZ_SOLVE_CERTIFICATE_H
#define KZ_SOLVE_CERTIFICATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/tablebase.h"

#define CERT_VERSION 1
#define CERT_MAGIC "kz-solve-certificate"
#define CERT_MAX_LINE 200 /* longer lines are malformed */

/* What a verified certificate holds. */
typedef struct cert_report {
    int claim;                /* X: 0 Black, 1 White */
    int tables;               /* N of its "tables" line */
    char root[32];            /* the root position (R20) */
    uint64_t nodes;           /* node lines */
    uint64_t or_nodes;        /* of them with X to move */
    uint64_t and_nodes;       /* of them with the opponent to move */
    uint64_t turns;           /* turns checked (one per OR node, all at AND nodes) */
    uint64_t table_leaves;    /* turns ending in a table position (a probe each) */
    uint64_t end_leaves;      /* turns ending in an R12 loss of the opponent */
    uint64_t bytes;           /* the file's size */
    bool win;                 /* a win certificate (claim X-wins) */
    uint64_t longest;         /* win: the longest game in plies, the tables' lines included */
    uint32_t max_count;       /* win: the highest no-progress count at a node line */
} cert_report;

/* Verifies the certificate at path against the naive rules and `tables`
 * (borrowed; may be NULL when the certificate's N is 0). Returns 0 with
 * *out filled; KZ_ECORRUPT when a line is wrong or malformed, with
 * "PATH:LINE: what is wrong" in err (the first such line); KZ_EINVAL when
 * the tables do not cover the certificate's N; KZ_EIO when the file cannot
 * be read. */
int cert_verify(const char *path, const tb_set *tables, cert_report *out, char *err,
                size_t errlen);

#endif
