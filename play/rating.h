/* rating: Elo ratings of many players from all their games, against fixed anchors.
 *
 * Why. A gate compares a candidate with the previous network only; progress
 * measured that way chains small biased steps. Ratings from one fit over all
 * games against a frozen pool of anchors (random = 0, greedy, rollout search,
 * old networks, ...) show whether learning shows (BayesElo, Ordo and KataGo
 * do the same).
 *
 * Model (Bradley-Terry in logistic Elo). Player i with rating r_i is expected
 * to score
 *   p_ij = 1 / (1 + 10^(-(r_i - r_j) / 400))          (match_score_from_elo)
 * against j. A win counts 1, a draw 1/2, a loss 0 (or a result's own score,
 * rating_result.scored: points): a DRAW IS HALF A WIN AND HALF A LOSS (no
 * separate draw model such as BayesElo's drawelo, and no first-move
 * advantage: play pairs of games with both colours). From the results per
 * pair of players, N_ij games and S_ij points of i, the fit
 * maximises the log-likelihood
 *   LL(r) = sum over pairs of  S_ij log p_ij + (N_ij - S_ij) log(1 - p_ij)
 * over the free players' ratings, the anchors held at their given ratings, by
 * Newton's method with step halving (LL is concave).
 *
 * Prior (BayesElo's virtual draws). A player that won, or lost, every game
 * has no finite maximum. Each player spreads `prior` virtual draws over its
 * opponents in proportion to the games it played against each, so the pair
 * (i, j) gets
 *   v_ij = prior/2 * (N_ij / N_i + N_ij / N_j)      (N_i: all games of i)
 * virtual draws, added to N_ij (and v_ij / 2 to S_ij); this is exactly what
 * BayesElo's `prior` does. The default 2 gives a two-player match one virtual
 * win and one virtual loss, i.e. the score (S + 1) / (N + 2), Laplace's rule
 * of succession: 10 straight wins rate +417 (400 log10 11) instead of +inf,
 * while a 0.7 score over 1000 games moves by 0.3 Elo. A player's prior weighs
 * as two games however many opponents it has, so many players with few games
 * each are not swamped. prior = 0 is plain maximum likelihood (then a player
 * with all wins or all losses makes the fit fail: KZ_EINVAL, "no finite
 * maximum").
 *
 * Who is rated. A free player is rated (RATING_FITTED) iff games connect it,
 * through other players, to an anchor; others (no games, or only games among
 * a group that never met an anchor) are RATING_UNRATED: elo, sd NAN. Games
 * between two anchors, or involving an unrated player, do not enter the fit.
 *
 * Intervals. The standard error of each fitted rating comes from the observed
 * information H (the Hessian of -LL over the fitted players, in Elo units):
 *   sd_i = sqrt((H^-1)_ii),  interval r_i -/+ 1.959964 sd_i        (95%)
 * It is the uncertainty relative to the anchors (which have sd 0). For two
 * players, N games at score p: sd = (400 / ln 10) / sqrt(N p (1-p)).
 *
 * Size. n up to RATING_MAX_PLAYERS. With up to cfg.dense_max (default 500)
 * fitted players, Newton steps are solved by a dense Cholesky factorisation
 * (O(m^3), m fitted players) and sd is exact. With more, each Newton step is
 * solved by preconditioned conjugate gradients on the sparse H (O(pairs) per
 * iteration), and sd_i = 1/sqrt(H_ii) (exact_sd false): the error as if every
 * opponent's rating were exact (BayesElo's "exactdist"), a lower bound of the
 * full one, close to it when a player's opponents are much better known than
 * the player (e.g. anchors with many games).
 *
 * Memory: the fit owns its arrays (rating_fit_destroy); the inputs are only
 * read. Thread rules: pure functions of their arguments; a fit may be read
 * from any thread. Not a hot path: it allocates freely. */
#ifndef KZ_RATING_H
#define KZ_RATING_H

#include <stdbool.h>
#include <stddef.h>

#define RATING_MAX_PLAYERS 1000000 /* most players rating_fit_compute accepts */
#define RATING_DENSE_LIMIT 4000    /* most dense_max (the dense matrix is m^2 doubles) */

/* The games of player i against player j (in either order; entries for the
 * same pair add up). i's score S_ij is wins + draws / 2, or with `scored`
 * the given `score` (0 <= score <= wins + draws + losses): a game scored in
 * points (backgammon) gives i its share of the points, so that the fit is
 * one of points (server/ratings.c, docs/ratings.md). */
typedef struct rating_result {
    int i, j;                 /* the players, 0 <= i, j < n, i != j */
    long wins, draws, losses; /* games of i against j, from i's view, each >= 0 */
    bool scored;              /* score given (false: wins + draws / 2) */
    double score;             /* with scored: i's score over the games */
} rating_result;

/* A player whose rating is fixed. */
typedef struct rating_anchor {
    int player; /* 0 <= player < n, each player at most once */
    double elo; /* its rating (finite, |elo| <= 1e6) */
} rating_anchor;

/* Settings of the fit. */
typedef struct rating_config {
    double prior;  /* 2: virtual draws per player (>= 0; 0 = plain maximum likelihood) */
    int dense_max; /* 500: most fitted players for the dense, exact solve (0..RATING_DENSE_LIMIT) */
    int max_iter;  /* 100: most Newton iterations (>= 1) */
} rating_config;

enum rating_status {
    RATING_UNRATED = 0, /* not connected to an anchor by games */
    RATING_ANCHOR = 1,  /* rating given */
    RATING_FITTED = 2,  /* rating estimated */
};

/* A fit: everything per player is an array of n. */
typedef struct rating_fit {
    int n;          /* players */
    double *elo;    /* (n) rating; the given one for anchors; NAN when unrated */
    double *sd;     /* (n) standard error in Elo; 0 for anchors; NAN when unrated */
    double *lo;     /* (n) elo - 1.959964 sd: the 95% interval's lower end */
    double *hi;     /* (n) elo + 1.959964 sd */
    int *status;    /* (n) enum rating_status */
    long *games;    /* (n) real games played, against anyone */
    int fitted;     /* players with RATING_FITTED */
    int iterations; /* Newton iterations taken */
    bool exact_sd;  /* sd = sqrt(diag H^-1); false above dense_max: 1/sqrt(H_ii) */
    double log_likelihood; /* LL at the fit, virtual draws included */
} rating_fit;

/* prior 2, dense_max 500, max_iter 100. */
void rating_config_default(rating_config *c);

/* Fits the ratings of players 0..n-1 from n_results results and n_anchors
 * anchors (n_results, n_anchors may be 0; then nobody is fitted). On success
 * 0 and *out a new fit (caller owns it: rating_fit_destroy). On failure *out
 * is NULL and the return is KZ_EINVAL with a one-line reason in err (if
 * non-NULL): bad settings, a player id out of range, i == j, a negative
 * count, a bad or repeated anchor, or no finite maximum (prior 0, or the
 * Newton iterations did not converge). */
int rating_fit_compute(int n, const rating_result *results, int n_results,
                       const rating_anchor *anchors, int n_anchors, const rating_config *cfg,
                       rating_fit **out, char *err, size_t errlen);

/* Frees a fit and sets *f to NULL; NULL-safe. */
void rating_fit_destroy(rating_fit **f);

/* i's expected score against j under the fit; NAN if either is unrated. */
double rating_expected(const rating_fit *f, int i, int j);

/* The anchors nearest in strength to a player of rating `elo` (finite): the
 * anchors sorted by p (1 - p), p the expected score against each, highest
 * first (ties: lower id first). p (1 - p) is the variance of a game's result,
 * the information a game carries about the difference: KataGo samples
 * opponents in proportion to it. Writes up to k anchor ids to out and, if
 * weight is non-NULL, their p (1 - p) to weight; returns how many (at most k
 * and the number of anchors). */
int rating_nearest_anchors(const rating_fit *f, double elo, int k, int *out, double *weight);

#endif
