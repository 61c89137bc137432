/* Tests of play/rating.h: the Bradley-Terry fit against anchors, read as
 * its usage example. Every expected value is argued by hand in a comment (the
 * arithmetic done with a calculator), not taken from the code under test.
 *
 * Shorthand: K = 400 / ln 10 = 173.7177928 (Elo per natural logit), and
 * E(s) = 400 log10(s / (1 - s)) the Elo difference that scores s. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "play/match.h"
#include "play/rating.h"
#include "play/scale.h"
#include "games/game.h"
#include "common/util.h"

#define K_ELO 173.7177928 /* 400 / ln 10 */

/* Fits or fails the test, printing the reason. */
static rating_fit *s_fit(int n, const rating_result *r, int nr, const rating_anchor *a, int na,
                         double prior)
{
    rating_config cfg;
    rating_config_default(&cfg);
    cfg.prior = prior;
    rating_fit *f = NULL;
    char err[200] = "";
    int rc = rating_fit_compute(n, r, nr, a, na, &cfg, &f, err, sizeof err);
    cr_assert_eq(rc, 0, "rating_fit_compute: %s", err);
    cr_assert_not_null(f);
    return f;
}

Test(rating, defaults)
{
    rating_config c;
    rating_config_default(&c);
    cr_assert_float_eq(c.prior, 2.0, 1e-12);
    cr_assert_eq(c.dense_max, 500);
    cr_assert_eq(c.max_iter, 100);
}

Test(rating, two_players_exact_without_prior)
{
    /* Player 0 is the anchor at 0. Player 1 scored +60 =10 -30 against it: s = 65/100.
     * The likelihood's maximum sets p_10 = s, so r_1 = E(0.65) = 400 log10(0.65/0.35)
     * = 400 log10(1.8571429) = +107.5381.
     * The information of the one free rating: H = N p (1-p) / K^2 (per Elo^2), so
     * sd = K / sqrt(N p (1-p)) = 173.7178 / sqrt(100 * 0.65 * 0.35) = 173.7178 / 4.7696960
     *    = 36.4211 (the 2-player Fisher information of the brief).
     * The games are given from the anchor's view and split over two entries, which
     * must add up: 0 vs 1: +20 =4 -40 and +10 =6 -20, i.e. +30 =10 -60. */
    const rating_result r[] = {
        {.i = 0, .j = 1, .wins = 20, .draws = 4, .losses = 40},
        {.i = 0, .j = 1, .wins = 10, .draws = 6, .losses = 20},
    };
    const rating_anchor a[] = {{.player = 0, .elo = 0}};
    rating_fit *f = s_fit(2, r, 2, a, 1, 0);
    cr_assert_eq(f->n, 2);
    cr_assert_eq(f->status[0], RATING_ANCHOR);
    cr_assert_eq(f->status[1], RATING_FITTED);
    cr_assert_eq(f->fitted, 1);
    cr_assert(f->exact_sd);
    cr_assert_eq(f->games[0], 100);
    cr_assert_eq(f->games[1], 100);
    cr_assert_float_eq(f->elo[0], 0.0, 1e-12);
    cr_assert_float_eq(f->sd[0], 0.0, 1e-12);
    cr_assert_float_eq(f->elo[1], 107.5381, 1e-3);
    cr_assert_float_eq(f->sd[1], 36.4211, 1e-3);
    cr_assert_float_eq(f->lo[1], 107.5381 - 1.959964 * 36.4211, 1e-2);
    cr_assert_float_eq(f->hi[1], 107.5381 + 1.959964 * 36.4211, 1e-2);
    /* The expected score under the fit reproduces the observed one. */
    cr_assert_float_eq(rating_expected(f, 1, 0), 0.65, 1e-9);
    cr_assert_float_eq(rating_expected(f, 0, 1), 0.35, 1e-9);
    rating_fit_destroy(&f);
    cr_assert_null(f);
    rating_fit_destroy(&f); /* NULL-safe */
}

Test(rating, interval_matches_fisher_information)
{
    /* sd = K / sqrt(N p (1-p)) for two players, at several N and scores (prior 0):
     * N = 400, +300 -100: p = 0.75, sd = 173.7178 / sqrt(75) = 20.0592;
     * N = 50, +10 =10 -30: p = 0.3, sd = 173.7178 / sqrt(10.5) = 53.6105. */
    struct { long w, d, l; double sd; } c[] = {{300, 0, 100, 20.0592}, {10, 10, 30, 53.6105}};
    for (int t = 0; t < 2; t++) {
        const rating_result r = {.i = 1, .j = 0, .wins = c[t].w, .draws = c[t].d,
                                 .losses = c[t].l};
        const rating_anchor a = {.player = 0, .elo = 0};
        rating_fit *f = s_fit(2, &r, 1, &a, 1, 0);
        cr_assert_float_eq(f->sd[1], c[t].sd, 1e-3, "case %d: %f", t, f->sd[1]);
        rating_fit_destroy(&f);
    }
}

Test(rating, three_players_in_a_chain)
{
    /* Anchor 0 = 0. Player 1 scored 0.75 against 0 (+25 =10 -5, 40 games); player 2
     * scored 0.6 against 1 (+25 =10 -15, 50 games). In a chain each edge's p must equal
     * its observed score (player 2's only game pair fixes p_21; then player 1's gradient
     * has only the 0-1 term left), so
     *   r_1 = E(0.75) = 400 log10 3 = +190.8485
     *   r_2 = r_1 + E(0.6) = 190.8485 + 400 log10 1.5 = 190.8485 + 70.4365 = +261.2850.
     * The variances add along the chain (H^-1 of the 2x2 chain information):
     *   sd_1 = K / sqrt(40 * 0.75 * 0.25) = 173.7178 / sqrt(7.5) = 63.4328
     *   sd_2 = K sqrt(1/7.5 + 1/(50 * 0.6 * 0.4)) = 173.7178 sqrt(1/7.5 + 1/12) = 80.8612. */
    const rating_result r[] = {
        {.i = 1, .j = 0, .wins = 25, .draws = 10, .losses = 5},
        {.i = 2, .j = 1, .wins = 25, .draws = 10, .losses = 15},
    };
    const rating_anchor a[] = {{.player = 0, .elo = 0}};
    rating_fit *f = s_fit(3, r, 2, a, 1, 0);
    cr_assert_float_eq(f->elo[1], 190.8485, 1e-3);
    cr_assert_float_eq(f->elo[2], 261.2850, 1e-3);
    cr_assert_float_eq(f->sd[1], 63.4328, 1e-3);
    cr_assert_float_eq(f->sd[2], 80.8612, 1e-3);
    cr_assert_gt(f->iterations, 0);
    rating_fit_destroy(&f);
}

Test(rating, triangle_against_an_independent_fit)
{
    /* A loop, where no edge can match its own score: anchor 0 = 0; 1 scored 30 of 40
     * against 0, 2 scored 20 of 40 against 0, and 1 scored 33 of 60 against 2 (prior 0).
     * Reference: a separate python3 script running Hunter's MM iteration (2004) on
     * gamma_i = 10^(r_i / 400),
     *   gamma_i <- (points of i) / sum_j N_ij / (gamma_i + gamma_j),
     * 20000 sweeps with the anchor held, not Newton: r_1 = +125.3668, r_2 = +53.9523. The
     * sds from the 2x2 information H (H_11 = w_10 + w_12, H_22 = w_20 + w_12, H_12 =
     * -w_12, w = N p (1-p) / K^2) inverted by hand: sqrt(H_22 / det) = 45.4349,
     * sqrt(H_11 / det) = 44.5231. */
    const rating_result r[] = {
        {.i = 1, .j = 0, .wins = 25, .draws = 10, .losses = 5},
        {.i = 2, .j = 0, .wins = 15, .draws = 10, .losses = 15},
        {.i = 1, .j = 2, .wins = 28, .draws = 10, .losses = 22},
    };
    const rating_anchor a = {.player = 0, .elo = 0};
    rating_fit *f = s_fit(3, r, 3, &a, 1, 0);
    cr_assert_float_eq(f->elo[1], 125.3668, 1e-3);
    cr_assert_float_eq(f->elo[2], 53.9523, 1e-3);
    cr_assert_float_eq(f->sd[1], 45.4349, 1e-3);
    cr_assert_float_eq(f->sd[2], 44.5231, 1e-3);
    rating_fit_destroy(&f);
}

Test(rating, anchored_versus_free)
{
    /* Player 1 scored exactly 0.5 against player 0 and against player 2 (60 games each).
     * (a) Only 0 anchored (at 0): 1 and 2 are free, the scores put both at 0.
     * (b) 0 at 0 and 2 at 400 anchored: 1 must satisfy p(r) + p(r - 400) = 1, whose
     *     solution is r = 200 by symmetry (p(200) + p(-200) = 1). Its information is
     *     2 N p (1-p) / K^2 with p = p(200) = 1 / (1 + 10^-0.5) = 0.7597469, p (1-p) =
     *     0.1825315: sd = 173.7178 / sqrt(120 * 0.1825315) = 173.7178 / 4.6801318 = 37.1180.
     * (c) The anchors shifted by +100 shift every fitted rating by +100 and change no sd. */
    const rating_result r[] = {
        {.i = 1, .j = 0, .wins = 20, .draws = 20, .losses = 20},
        {.i = 1, .j = 2, .wins = 25, .draws = 10, .losses = 25},
    };
    const rating_anchor one[] = {{.player = 0, .elo = 0}};
    rating_fit *f = s_fit(3, r, 2, one, 1, 0);
    cr_assert_eq(f->fitted, 2);
    cr_assert_float_eq(f->elo[1], 0.0, 1e-6);
    cr_assert_float_eq(f->elo[2], 0.0, 1e-6);
    rating_fit_destroy(&f);

    const rating_anchor two[] = {{.player = 0, .elo = 0}, {.player = 2, .elo = 400}};
    f = s_fit(3, r, 2, two, 2, 0);
    cr_assert_eq(f->fitted, 1);
    cr_assert_eq(f->status[2], RATING_ANCHOR);
    cr_assert_float_eq(f->elo[2], 400.0, 1e-12); /* anchors keep their values exactly */
    cr_assert_float_eq(f->sd[2], 0.0, 1e-12);
    cr_assert_float_eq(f->elo[1], 200.0, 1e-6);
    cr_assert_float_eq(f->sd[1], 37.1180, 1e-3);
    rating_fit_destroy(&f);

    const rating_anchor shifted[] = {{.player = 0, .elo = 100}, {.player = 2, .elo = 500}};
    f = s_fit(3, r, 2, shifted, 2, 2.0);
    rating_fit *g = s_fit(3, r, 2, two, 2, 2.0);
    cr_assert_float_eq(f->elo[1], g->elo[1] + 100, 1e-6);
    cr_assert_float_eq(f->sd[1], g->sd[1], 1e-9);
    rating_fit_destroy(&f);
    rating_fit_destroy(&g);
}

Test(rating, all_wins_finite_with_the_prior)
{
    /* Player 1 won all 10 games against the anchor 0: no finite maximum likelihood.
     * prior 2: each player spreads 2 virtual draws over its opponents by games; the
     * pair gets v = 2/2 (10/10 + 10/10) = 2 draws: 11 points of 12, r = E(11/12) =
     * 400 log10 11 = +416.5571 (Laplace's rule of succession, (S+1)/(N+2)).
     * prior 1: v = 1, 10.5 of 11, r = 400 log10 21 = +528.8877. prior 0: fails. */
    const rating_result r = {.i = 1, .j = 0, .wins = 10};
    const rating_anchor a = {.player = 0, .elo = 0};
    rating_fit *f = s_fit(2, &r, 1, &a, 1, 2.0);
    cr_assert_float_eq(f->elo[1], 416.5571, 1e-3);
    cr_assert(isfinite(f->sd[1]) && f->sd[1] > 0);
    rating_fit_destroy(&f);
    f = s_fit(2, &r, 1, &a, 1, 1.0);
    cr_assert_float_eq(f->elo[1], 528.8877, 1e-3);
    rating_fit_destroy(&f);
    /* All losses mirror it. */
    const rating_result lost = {.i = 1, .j = 0, .losses = 10};
    f = s_fit(2, &lost, 1, &a, 1, 2.0);
    cr_assert_float_eq(f->elo[1], -416.5571, 1e-3);
    rating_fit_destroy(&f);
    rating_config cfg;
    rating_config_default(&cfg);
    cfg.prior = 0;
    char err[200] = "";
    rating_fit dummy;
    f = &dummy; /* must be reset to NULL */
    cr_assert_eq(rating_fit_compute(2, &r, 1, &a, 1, &cfg, &f, err, sizeof err), KZ_EINVAL);
    cr_assert_null(f);
    cr_assert_not_null(strstr(err, "no finite maximum"), "%s", err);
}

Test(rating, prior_is_small_with_many_games_and_spread_by_games)
{
    /* Many games: +700 -300 against the anchor. Without prior E(0.7) = +147.1907; with
     * prior 2, (700 + 1) / 1002 scores E(701/1002) = 400 log10(701/301) = +146.8606,
     * a third of an Elo lower. */
    const rating_result r = {.i = 1, .j = 0, .wins = 700, .losses = 300};
    const rating_anchor a = {.player = 0, .elo = 0};
    rating_fit *f0 = s_fit(2, &r, 1, &a, 1, 0), *f2 = s_fit(2, &r, 1, &a, 1, 2.0);
    cr_assert_float_eq(f0->elo[1], 147.1907, 1e-3);
    cr_assert_float_eq(f2->elo[1], 146.8606, 1e-3);
    rating_fit_destroy(&f0);
    rating_fit_destroy(&f2);
    /* The spread (BayesElo's AddPrior): 1 won all 10 games against the anchor 0, then
     * drew 30 games with 2. Games: N_0 = 10, N_1 = 40, N_2 = 30. Virtual draws:
     *   v_01 = 2/2 (10/10 + 10/40) = 1.25,  v_12 = 2/2 (30/40 + 30/30) = 1.75.
     * A chain again: r_1 = E((10 + 0.625) / 11.25) = 400 log10(10.625 / 0.625)
     * = 400 log10 17 = +492.1796, and r_2 = r_1 (2 scored exactly half, 15.875 of 31.75). */
    const rating_result c[] = {
        {.i = 1, .j = 0, .wins = 10},
        {.i = 2, .j = 1, .draws = 30},
    };
    rating_fit *f = s_fit(3, c, 2, &a, 1, 2.0);
    cr_assert_float_eq(f->elo[1], 492.1796, 1e-3);
    cr_assert_float_eq(f->elo[2], 492.1796, 1e-3);
    rating_fit_destroy(&f);
}

Test(rating, disconnected_players_unrated)
{
    /* 0 anchor; 1 played 0 (rated); 2 and 3 played each other and 5 played 2, but
     * none of them ever met 0 or 1 (unrated); 4 played nobody (unrated); 6 played 1
     * only (rated through 1). Unrated ratings are NAN, nothing crashes. */
    const rating_result r[] = {
        {.i = 1, .j = 0, .wins = 6, .losses = 4},
        {.i = 2, .j = 3, .wins = 5, .losses = 5},
        {.i = 5, .j = 2, .wins = 1, .losses = 9},
        {.i = 6, .j = 1, .wins = 3, .draws = 1, .losses = 6},
        {.i = 4, .j = 0, .wins = 0}, /* an empty entry is no game */
    };
    const rating_anchor a = {.player = 0, .elo = 0};
    rating_fit *f = s_fit(7, r, 5, &a, 1, 2.0);
    const int want[7] = {RATING_ANCHOR, RATING_FITTED, RATING_UNRATED, RATING_UNRATED,
                         RATING_UNRATED, RATING_UNRATED, RATING_FITTED};
    for (int i = 0; i < 7; i++)
        cr_assert_eq(f->status[i], want[i], "player %d: status %d", i, f->status[i]);
    cr_assert_eq(f->fitted, 2);
    for (int i = 2; i <= 5; i++) {
        cr_assert(isnan(f->elo[i]) && isnan(f->sd[i]) && isnan(f->lo[i]) && isnan(f->hi[i]));
    }
    cr_assert_eq(f->games[4], 0);
    cr_assert_eq(f->games[2], 20);
    cr_assert(isnan(rating_expected(f, 1, 2)));
    cr_assert(isfinite(rating_expected(f, 1, 6)));
    /* 1 is above 0 (6 of 10) and 6 below 1 (3.5 of 10). */
    cr_assert_gt(f->elo[1], 0);
    cr_assert_lt(f->elo[6], f->elo[1]);
    rating_fit_destroy(&f);
    /* No anchors: nobody is rated. No games at all: the same. */
    f = s_fit(7, r, 5, NULL, 0, 2.0);
    cr_assert_eq(f->fitted, 0);
    for (int i = 0; i < 7; i++)
        cr_assert_eq(f->status[i], RATING_UNRATED);
    rating_fit_destroy(&f);
    f = s_fit(3, NULL, 0, &a, 1, 2.0);
    cr_assert_eq(f->fitted, 0);
    cr_assert_eq(f->status[0], RATING_ANCHOR);
    rating_fit_destroy(&f);
}

Test(rating, nearest_anchors)
{
    /* Anchors 1 = 0, 2 = 300, 3 = 600, 4 = 1000 (player 0 free, unplayed). For a player
     * at 550 the distances are 550, 250, 50, 450: nearest first 3, 2, 4, 1, with weight
     * p (1-p) for p = 1 / (1 + 10^(-d/400)): d = 50: p = 0.5714631, p (1-p) = 0.2448930. */
    const rating_anchor a[] = {
        {.player = 1, .elo = 0}, {.player = 2, .elo = 300}, {.player = 3, .elo = 600},
        {.player = 4, .elo = 1000}};
    rating_fit *f = s_fit(5, NULL, 0, a, 4, 2.0);
    int out[8];
    double w[8];
    cr_assert_eq(rating_nearest_anchors(f, 550, 8, out, w), 4);
    const int want[4] = {3, 2, 4, 1};
    for (int t = 0; t < 4; t++)
        cr_assert_eq(out[t], want[t], "rank %d: %d", t, out[t]);
    cr_assert_float_eq(w[0], 0.2448930, 1e-6);
    for (int t = 1; t < 4; t++)
        cr_assert_lt(w[t], w[t - 1]);
    /* k limits the answer; weight may be NULL. Equal distances: lower id first
     * (150 is 150 from both 0 and 300). */
    cr_assert_eq(rating_nearest_anchors(f, 150, 2, out, NULL), 2);
    cr_assert_eq(out[0], 1);
    cr_assert_eq(out[1], 2);
    cr_assert_eq(rating_nearest_anchors(f, 150, 0, NULL, NULL), 0);
    rating_fit_destroy(&f);
}

Test(rating, bad_input)
{
    const rating_result ok = {.i = 1, .j = 0, .wins = 1, .losses = 1};
    const rating_anchor a = {.player = 0, .elo = 0};
    struct {
        int n;
        rating_result r;
        rating_anchor a[2];
        int na;
        double prior;
        const char *why;
    } bad[] = {
        {0, ok, {a}, 1, 2, "players"},
        {2, {.i = 2, .j = 0, .wins = 1}, {a}, 1, 2, "out of range"},
        {2, {.i = -1, .j = 0, .wins = 1}, {a}, 1, 2, "out of range"},
        {2, {.i = 1, .j = 1, .wins = 1}, {a}, 1, 2, "itself"},
        {2, {.i = 1, .j = 0, .draws = -1}, {a}, 1, 2, "negative"},
        {2, ok, {{.player = 2}}, 1, 2, "anchor"},
        {2, ok, {{.player = 0, .elo = NAN}}, 1, 2, "finite"},
        {2, ok, {{.player = 0, .elo = INFINITY}}, 1, 2, "finite"},
        {2, ok, {a, a}, 2, 2, "twice"},
        {2, ok, {a}, 1, -1, "prior"},
        {2, ok, {a}, 1, NAN, "prior"},
        {2, {.i = 1, .j = 0, .wins = 1, .losses = 1, .scored = true, .score = 2.5}, {a}, 1, 2,
         "score"},
        {2, {.i = 1, .j = 0, .wins = 1, .losses = 1, .scored = true, .score = -0.5}, {a}, 1, 2,
         "score"},
        {2, {.i = 1, .j = 0, .wins = 1, .losses = 1, .scored = true, .score = NAN}, {a}, 1, 2,
         "score"},
    };
    for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
        rating_config cfg;
        rating_config_default(&cfg);
        cfg.prior = bad[t].prior;
        rating_fit *f = NULL;
        char err[200] = "";
        int rc = rating_fit_compute(bad[t].n, &bad[t].r, 1, bad[t].a, bad[t].na, &cfg, &f, err,
                                    sizeof err);
        cr_assert_eq(rc, KZ_EINVAL, "case %zu", t);
        cr_assert_null(f, "case %zu", t);
        cr_assert_not_null(strstr(err, bad[t].why), "case %zu: %s", t, err);
        cr_assert_null(strchr(err, '\n'));
    }
    rating_config cfg;
    rating_config_default(&cfg);
    rating_fit *f = NULL;
    cfg.dense_max = RATING_DENSE_LIMIT + 1;
    cr_assert_eq(rating_fit_compute(2, &ok, 1, &a, 1, &cfg, &f, NULL, 0), KZ_EINVAL);
    rating_config_default(&cfg);
    cfg.max_iter = 0;
    cr_assert_eq(rating_fit_compute(2, &ok, 1, &a, 1, &cfg, &f, NULL, 0), KZ_EINVAL);
    cr_assert_null(f);
}

/* A result with its own score (a game scored in points, server/ratings.c):
 * given as wins + draws / 2 it fits bit for bit as the plain result; given
 * as a share of points it fits that share. Player 1 won 6 and lost 4 games
 * against the anchor 0, the wins singles (6 points) and the losses 2
 * gammons (4 points) and 2 singles (2 points): 6 points each, a share of
 * 1/2, so the score is 10 * 6 / 12 = 5 and (prior 0) r_1 = E(0.5) = 0. With
 * 3 of the wins gammons instead (9 points to 6): share 0.6, score 6 out of
 * 10, r_1 = E(0.6) = 400 log10(1.5) = +70.4365. */
Test(rating, a_scored_result_fits_its_score)
{
    const rating_anchor a[] = {{.player = 0, .elo = 0}};
    const rating_result plain = {.i = 1, .j = 0, .wins = 6, .draws = 1, .losses = 4};
    rating_result same = plain;
    same.scored = true;
    same.score = 6.5;
    rating_fit *f = s_fit(2, &plain, 1, a, 1, 2), *g = s_fit(2, &same, 1, a, 1, 2);
    cr_assert(f->elo[1] == g->elo[1] && f->sd[1] == g->sd[1], "%.17g %.17g", f->elo[1],
              g->elo[1]);
    rating_fit_destroy(&f);
    rating_fit_destroy(&g);
    rating_result pts = {.i = 1, .j = 0, .wins = 6, .losses = 4, .scored = true, .score = 5};
    f = s_fit(2, &pts, 1, a, 1, 0);
    cr_assert_float_eq(f->elo[1], 0.0, 1e-6);
    cr_assert_eq(f->games[1], 10);
    rating_fit_destroy(&f);
    pts.score = 6;
    f = s_fit(2, &pts, 1, a, 1, 0);
    cr_assert_float_eq(f->elo[1], 70.4365, 1e-3);
    rating_fit_destroy(&f);
}

/* ---- many players ---- */

/* A pool of n players with true ratings, anchors at their true values, and
 * `pairs` random pairings of `games` games each (no draws), simulated with a
 * fixed seed. The caller frees *results. */
static void s_simulate(int n, int pairs, int games, uint64_t seed, double *truth,
                       rating_result **results, rating_anchor *anchors, int n_anchors)
{
    rng_t rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++)
        truth[i] = -300 + 900 * rng_uniform(&rng);
    for (int k = 0; k < n_anchors; k++)
        anchors[k] = (rating_anchor){.player = k, .elo = truth[k]};
    rating_result *r = xcalloc((size_t)pairs, sizeof *r);
    for (int t = 0; t < pairs; t++) {
        int i = (int)rng_below(&rng, (uint32_t)n), j;
        do
            j = (int)rng_below(&rng, (uint32_t)n);
        while (j == i);
        double p = match_score_from_elo(truth[i] - truth[j]);
        r[t] = (rating_result){.i = i, .j = j};
        for (int g = 0; g < games; g++) {
            if (rng_uniform(&rng) < p)
                r[t].wins++;
            else
                r[t].losses++;
        }
    }
    *results = r;
}

Test(rating, intervals_cover_the_truth)
{
    /* 8 seeded pools of 150 players with true ratings in [-300, 600], 15 anchored at their
     * true values, 1500 random pairings of 8 games each. If the fit and its intervals are
     * right, about 95% of the fitted players' 95% intervals contain the true rating, and
     * the errors in units of sd, z = (fit - truth) / sd, have a root mean square near 1;
     * a variance off by a factor of 2 would give ~83% or ~99.5% and an rms z of 0.71 or
     * 1.41. Errors within one pool share a common part (the offset to the anchors), so
     * the test pools 8 independent ones (1080 intervals): sampling leaves the coverage
     * within about +/-1.5% of 95%. */
    enum { N = 150, PAIRS = 1500, GAMES = 8, ANCHORS = 15, POOLS = 8 };
    int covered = 0, total = 0;
    double zz = 0;
    for (int pool = 1; pool <= POOLS; pool++) {
        double truth[N];
        rating_result *r;
        rating_anchor a[ANCHORS];
        s_simulate(N, PAIRS, GAMES, (uint64_t)pool, truth, &r, a, ANCHORS);
        rating_fit *f = s_fit(N, r, PAIRS, a, ANCHORS, 2.0);
        cr_assert_eq(f->fitted, N - ANCHORS);
        cr_assert(f->exact_sd);
        for (int i = ANCHORS; i < N; i++) {
            covered += f->lo[i] <= truth[i] && truth[i] <= f->hi[i];
            double z = (f->elo[i] - truth[i]) / f->sd[i];
            zz += z * z;
            total++;
        }
        rating_fit_destroy(&f);
        free(r);
    }
    double coverage = (double)covered / total, rms = sqrt(zz / total);
    cr_assert(coverage > 0.92 && coverage < 0.98, "coverage %.3f", coverage);
    cr_assert(rms > 0.88 && rms < 1.12, "rms z %.3f", rms);
}

Test(rating, sparse_solve_agrees_with_dense)
{
    /* The same data solved densely (exact sd) and by conjugate gradients (dense_max 0):
     * the same maximum, so the same ratings; the sparse sd 1/sqrt(H_ii) is a lower bound
     * of sqrt((H^-1)_ii) (for a positive definite H, (H^-1)_ii >= 1/H_ii), equal for a
     * player whose only opponents are anchors. */
    enum { N = 120, PAIRS = 600, GAMES = 6, ANCHORS = 4 };
    double truth[N];
    rating_result *r;
    rating_anchor a[ANCHORS];
    /* Players 0..N-2 from the simulation; player N-1 plays only the anchors 0 and 1. */
    s_simulate(N - 1, PAIRS - 2, GAMES, 7, truth, &r, a, ANCHORS);
    r = realloc(r, PAIRS * sizeof *r);
    cr_assert_not_null(r);
    r[PAIRS - 2] = (rating_result){.i = N - 1, .j = 0, .wins = 5, .losses = 3};
    r[PAIRS - 1] = (rating_result){.i = N - 1, .j = 1, .wins = 2, .draws = 2, .losses = 4};
    rating_config cfg;
    rating_config_default(&cfg);
    rating_fit *dense = NULL, *sparse = NULL;
    char err[200] = "";
    cr_assert_eq(rating_fit_compute(N, r, PAIRS, a, ANCHORS, &cfg, &dense, err, sizeof err), 0,
                 "%s", err);
    cfg.dense_max = 0;
    cr_assert_eq(rating_fit_compute(N, r, PAIRS, a, ANCHORS, &cfg, &sparse, err, sizeof err), 0,
                 "%s", err);
    cr_assert(dense->exact_sd && !sparse->exact_sd);
    cr_assert_eq(dense->fitted, sparse->fitted);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(dense->status[i], sparse->status[i]);
        if (dense->status[i] != RATING_FITTED)
            continue;
        cr_assert_float_eq(dense->elo[i], sparse->elo[i], 1e-5, "player %d", i);
        cr_assert_leq(sparse->sd[i], dense->sd[i] + 1e-9, "player %d", i);
    }
    cr_assert_float_eq(sparse->sd[N - 1], dense->sd[N - 1], 1e-9);
    cr_assert_float_eq(sparse->log_likelihood, dense->log_likelihood, 1e-6);
    rating_fit_destroy(&dense);
    rating_fit_destroy(&sparse);
    free(r);
}

Test(rating, thousands_of_players)
{
    /* 3000 players, 5 anchors, 30000 pairings: the conjugate-gradient path. Every
     * player with games is connected (a random graph this dense is), the fit is
     * finite everywhere, and the ratings track the truth (correlation > 0.9). */
    enum { N = 3000, PAIRS = 30000, GAMES = 4, ANCHORS = 5 };
    static double truth[N];
    rating_result *r;
    rating_anchor a[ANCHORS];
    s_simulate(N, PAIRS, GAMES, 11, truth, &r, a, ANCHORS);
    rating_fit *f = s_fit(N, r, PAIRS, a, ANCHORS, 2.0);
    cr_assert(!f->exact_sd);
    cr_assert_eq(f->fitted + ANCHORS, N);
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (int i = ANCHORS; i < N; i++) {
        cr_assert(isfinite(f->elo[i]) && isfinite(f->sd[i]) && f->sd[i] > 0, "player %d", i);
        double x = truth[i], y = f->elo[i];
        sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
    }
    double m = N - ANCHORS;
    double corr = (sxy - sx * sy / m) / sqrt((sxx - sx * sx / m) * (syy - sy * sy / m));
    cr_assert_gt(corr, 0.9, "correlation %.3f", corr);
    rating_fit_destroy(&f);
    free(r);
}

/* The built-in anchor scales (play/scales.txt): every line is found back by
 * game and player, its rating inside its interval; random is the zero of each
 * game that has a scale; what is not there is not found. */
Test(rating, the_built_in_anchor_scales_read_back)
{
    const char *t = scale_text();
    cr_assert_not_null(t);
    int lines = 0, zeros = 0, games = 0;
    char seen[8][64] = {{0}};
    for (const char *p = t; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[256], g[64], pl[64];
        double elo, lo, hi;
        long n;
        cr_assert_lt(len, sizeof line);
        memcpy(line, p, len);
        line[len] = 0;
        if (line[0] != '#' && sscanf(line, "%63s %63s %lf %lf %lf %ld", g, pl, &elo, &lo, &hi,
                                     &n) == 6) {
            lines++;
            scale_entry e;
            cr_assert(scale_find(g, pl, &e), "%s", line);
            cr_assert_float_eq(e.elo, elo, 1e-9, "%s", line);
            cr_assert(e.lo <= e.elo && e.elo <= e.hi, "%s", line);
            cr_assert_gt(e.games, 0, "%s", line);
            cr_assert_not_null(game_find(g), "a registered game: %s", line);
            if (!strcmp(pl, "random")) {
                cr_assert_float_eq(elo, 0, 1e-9, "random is the zero: %s", line);
                zeros++;
            }
            int k = 0;
            while (k < games && strcmp(seen[k], g))
                k++;
            if (k == games && games < 8)
                snprintf(seen[games++], sizeof seen[0], "%s", g);
        }
        p += len + (end != NULL);
    }
    cr_assert_geq(lines, 1, "the scales are not empty");
    cr_assert_eq(zeros, games, "random on every game's scale");
    scale_entry e;
    cr_assert_not(scale_find(game_default()->name, "alphabeta:99", &e));
    cr_assert_not(scale_find("nogame", "random", &e));
    cr_assert_not(scale_find(NULL, "random", &e));
}
