/* yardstick: measures of a network's strength with less noise per CPU-second
 * than a match score against a fixed anchor (issue 24; `kz yardstick`,
 * `make learn`, docs/learning.md "The sharper yardstick").
 *
 * Books of openings. A book file holds one position a line in the game's
 * own notation (game_def.format_position, R20), '#' starting a comment line;
 * match and A/B runs play every opening once with each colour. A BALANCED
 * opening is one where a deep alpha-beta gets the same result with either
 * colour: the same player (alphabeta:D) plays both sides twice from it, its
 * two games seeded apart (its ties at the root are broken at random), and
 * the opening is kept when the two results from the view of the side that
 * played White in the first game are equal: both drawn, or each colour won
 * once (then the colour did not decide it). An opening that the same colour
 * won twice, or won once and drew once, is not balanced: from it a pair of
 * games between any two players mostly measures the colour.
 *
 * Labelled positions. A positions file holds lines `POSITION<TAB>z`, z the
 * result (+1, 0, -1 from the view of the mover in POSITION) of a deep
 * alpha-beta playing both sides from it: a proxy of the position's value,
 * the target the network's value head is measured against (calibration) and
 * the fixed set on which searches of two budgets are compared.
 *
 * The paired difference. Two models A and B play the same anchor from the
 * same openings with the same seeds, each opening once with each colour. Pair
 * k scores a_k and b_k in 0..2 (LL .. WW). The difference of the per-game
 * scores is d = mean over k of (a_k - b_k) / 2, with the 95% interval
 * d +/- 1.96 sd(d_k) / sqrt(n) (sample sd of the per-pair differences):
 * the opening's share of the outcome, which both models meet, cancels. The
 * Elo difference is E(s_A) - E(s_B) (match.h's logistic Elo), its interval
 * the score interval times E'(mean of s_A, s_B).
 *
 * Thread rules: the functions are pure or use only their arguments; the
 * players passed belong to the calling thread. */
#ifndef KZ_YARDSTICK_H
#define KZ_YARDSTICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "search/player.h"

#define YARD_MAX_BOOK 100000    /* most positions a book or positions file holds */
#define YARD_PHASES 3           /* opening, middle game, ending (yard_phase) */

/* ---- books and positions files ---- */

/* Reads up to max positions (and, when z is non-NULL, the `<TAB>z` label of
 * each, a positions file) from path into out. *n gets the count. 0, or
 * KZ_EIO / KZ_EINVAL with a one-line reason naming the file and line in err
 * (an unreadable file, a bad position or label, more than max lines, none). */
int yard_read(const game_def *g, const char *path, game_state *out, int8_t *z, int max, int *n,
              char *err, size_t errlen);
/* Writes n positions (with their labels when z is non-NULL) to path, after
 * the comment lines of `header` (each line of it prefixed by "# "); written
 * whole or not at all. 0 or KZ_EIO. */
int yard_write(const game_def *g, const char *path, const char *header, const game_state *s,
               const int8_t *z, int n);

/* The pieces on the board of s: the letters before the first space of its
 * position string (R20 marks empty points with '.'). */
int yard_pieces(const game_def *g, const game_state *s);
/* The phase of s by its pieces: 0 opening (more than 16), 1 middle game (9
 * to 16), 2 ending (8 or fewer); their names (yard_phase_name). */
int yard_phase(const game_def *g, const game_state *s);
const char *yard_phase_name(int phase);

/* ---- balanced openings ---- */

/* The verdict on one opening: deep plays both sides of two games from
 * `open`, seeded by seed and seed + 1. r[0], r[1] get their results from the
 * view of the side to move in `open` (+1, 0, -1). Give the deep player the
 * name A, moving first in game 1 and second in game 2: its results are r[0]
 * and -r[1], so the opening is balanced (returns 1) when r[0] == -r[1], and
 * not (returns 0) otherwise. *plies (may be NULL) gets the turns of both
 * games. A player's error: its negative KZ_E* code. */
int yard_balance(const game_def *g, player *deep, const game_state *open, uint64_t seed, int r[2],
                 int *plies);

/* ---- the paired difference ---- */

typedef struct yard_paired {
    int pairs;               /* n */
    double score_a, score_b; /* per-game scores of A and B */
    double diff, lo, hi;     /* score_a - score_b and its 95% interval */
    double elo, elo_lo, elo_hi; /* E(score_a) - E(score_b) and its interval */
} yard_paired;
/* From pair scores in half points (0..4: LL, LD, DD or WL, WD, WW) of A and
 * B on the same n openings (n >= 1). */
void yard_paired_compute(const int *half_a, const int *half_b, int n, yard_paired *out);

/* ---- the value head and the search's budget ---- */

/* Calibration and agreement of one network on labelled positions. */
typedef struct yard_value {
    int n[YARD_PHASES];          /* positions by phase */
    double v[YARD_PHASES];       /* mean predicted value (mover's view) */
    double z[YARD_PHASES];       /* mean label */
    double mse[YARD_PHASES];     /* mean (v - z)^2 */
    int bin_n[5];                /* by prediction: [-1,-.6) [-.6,-.2) [-.2,.2) [.2,.6) [.6,1] */
    double bin_v[5], bin_z[5];   /* mean prediction and mean label per bin */
    int compared;                /* positions where the two searches were compared */
    int differ[YARD_PHASES + 1]; /* of them, where the choices differed (by phase; [3]: all) */
    int cmp_n[YARD_PHASES];      /* compared, by phase */
} yard_value;
/* Measures the raw network (`net`, a policy player: player_info.value is
 * its value) on the n positions with labels z, and, on the first n_cmp of
 * them with more than one legal action, whether search players `lo` and `hi`
 * (e.g. mcts:MODEL:200 and mcts:MODEL:1600; NULL: not compared) choose
 * different actions (each a new game seeded by the index). err_out[i] (may
 * be NULL) gets (v - z)^2 of position i, for paired comparisons. 0, or a
 * player's error. */
int yard_value_measure(const game_def *g, player *net, player *lo, player *hi,
                       const game_state *s, const int8_t *z, int n, int n_cmp,
                       double *err_out, yard_value *out);
/* The same a position at a time, for a caller that stops between positions
 * (the coordinator's thread, server/yardstick.c): yard_value_add measures
 * position s with label z into the sums of out (the caller zeroes *out
 * first), its games seeded by i (yard_value_measure's index), comparing lo
 * and hi there when `compare` (and s has more than one legal action); *err_out
 * (may be NULL) gets (v - z)^2. yard_value_finish turns the sums into the
 * means. yard_value_measure is these two over i = 0 .. n - 1. 0, or a
 * player's error. */
int yard_value_add(const game_def *g, player *net, player *lo, player *hi, const game_state *s,
                   int8_t z, uint64_t i, bool compare, double *err_out, yard_value *out);
void yard_value_finish(yard_value *out);
/* The report of yard_value_measure (low and high: the budgets compared),
 * lines indented by two spaces, into buf (always NUL-terminated). */
void yard_value_format(const yard_value *v, int low, int high, char *buf, size_t cap);

#endif
