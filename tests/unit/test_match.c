/* Tests of play/match.h: the scorer (score, 95% interval, Elo), the SPRT's
 * log-likelihood ratio and decisions, the gate, match play (colours,
 * openings, reproducibility, SPRT stopping) and the `kz match` command.
 *
 * The worked examples were computed by hand (with a calculator; the LLR's
 * secular equation solved in closed form as a quadratic, see below), not by
 * the code under test, which solves it by bisection. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "play/match.h"
#include "search/player.h"
#include "common/util.h"

/* ---- the scorer ---- */

Test(match, stats_worked_example)
{
    /* W/D/L = 30/10/10, N = 50.
     * s = (30 + 5) / 50 = 0.7
     * v = (30 * 0.3^2 + 10 * 0.2^2 + 10 * 0.7^2) / 50 = (2.7 + 0.4 + 4.9) / 50 = 0.16
     * sd = sqrt(0.16 / 50) = sqrt(0.0032) = 0.0565685425
     * 95%: 0.7 -/+ 1.959964 * 0.0565685425 = 0.7 -/+ 0.1108723 -> [0.5891277, 0.8108723]
     * Elo(0.7) = -400 log10(1/0.7 - 1) = -400 log10(0.4285714) = +147.1907
     * Elo(0.5891277) = -400 log10(0.6974252) = +62.6010
     * Elo(0.8108723) = -400 log10(0.2332405) = +252.8789 */
    match_stats st;
    match_stats_compute(30, 10, 10, &st);
    cr_assert_eq(st.games, 50);
    cr_assert_float_eq(st.score, 0.7, 1e-12);
    cr_assert_float_eq(st.sd, 0.0565685425, 1e-9);
    cr_assert_float_eq(st.score_lo, 0.5891277, 1e-6);
    cr_assert_float_eq(st.score_hi, 0.8108723, 1e-6);
    cr_assert_float_eq(st.elo, 147.1907, 1e-3);
    cr_assert_float_eq(st.elo_lo, 62.6010, 1e-3);
    cr_assert_float_eq(st.elo_hi, 252.8789, 1e-3);
}

Test(match, stats_trinomial_variance_uses_draws)
{
    /* Same score 0.5, different spread: 10/0/10 has per-game variance 0.25,
     * 0/20/0 has 0, 5/10/5 has (5*0.25 + 0 + 5*0.25)/20 = 0.125. */
    match_stats a, b, c;
    match_stats_compute(10, 0, 10, &a);
    match_stats_compute(0, 20, 0, &b);
    match_stats_compute(5, 10, 5, &c);
    cr_assert_float_eq(a.sd, sqrt(0.25 / 20), 1e-12);
    cr_assert_float_eq(b.sd, 0.0, 1e-12);
    cr_assert_float_eq(c.sd, sqrt(0.125 / 20), 1e-12);
    cr_assert_float_eq(a.elo, 0.0, 1e-9);
    cr_assert(a.score_lo < c.score_lo && c.score_lo < b.score_lo);
}

Test(match, stats_edges)
{
    match_stats st;
    match_stats_compute(7, 2, 1, &st);
    /* s = 0.8, v = (7*0.04 + 2*0.09 + 0.64)/10 = 0.11, sd = sqrt(0.011) = 0.1048809,
     * s + 1.96 sd = 1.0056 is clamped to 1, whose Elo is +inf. */
    cr_assert_float_eq(st.sd, 0.1048809, 1e-6);
    cr_assert_float_eq(st.score_hi, 1.0, 1e-12);
    cr_assert(isinf(st.elo_hi) && st.elo_hi > 0);
    match_stats_compute(5, 0, 0, &st);
    cr_assert_float_eq(st.score, 1.0, 1e-12);
    cr_assert(isinf(st.elo) && st.elo > 0);
    match_stats_compute(0, 0, 4, &st);
    cr_assert(isinf(st.elo) && st.elo < 0);
    match_stats_compute(0, 0, 0, &st);
    cr_assert_eq(st.games, 0);
    cr_assert_float_eq(st.score, 0.5, 1e-12);
    /* Elo and score are inverse; 100 Elo is a score of 1/(1 + 10^-0.25) = 0.6400649. */
    cr_assert_float_eq(match_score_from_elo(100), 0.6400649, 1e-6);
    cr_assert_float_eq(match_elo_from_score(match_score_from_elo(-250)), -250, 1e-9);
}

/* ---- the SPRT ---- */

/* The normal approximation N (s1-s0)(2s-s0-s1) / (2v), computed here for comparison. */
static double s_llr_normal(int w, int d, int l, double elo0, double elo1)
{
    double n = w + d + l, s = (w + 0.5 * d) / n;
    double v = (w * (1 - s) * (1 - s) + d * (0.5 - s) * (0.5 - s) + l * s * s) / n;
    double s0 = 1 / (1 + pow(10, -elo0 / 400)), s1 = 1 / (1 + pow(10, -elo1 / 400));
    return n * (s1 - s0) * (2 * s - s0 - s1) / (2 * v);
}

Test(match, llr_worked_examples)
{
    /* How the examples were computed. With outcomes x = (1, 1/2, 0), frequencies p,
     * a_i = x_i - s, the secular equation sum p_i a_i / (1 + t a_i) = 0 multiplied out
     * is the quadratic c2 t^2 + c1 t + c0 = 0 with
     *   c0 = mean(p) - s,  c1 = (a_1 + a_2 + a_3) c0 - sum p_i a_i^2,  c2 = a_1 a_2 a_3,
     * the root with every 1 + t a_i > 0 gives q_i = p_i / (1 + t a_i), and
     * LLR = N sum p_i log(q1_i / q0_i).
     *
     * Example 1: W/D/L = 12/20/8, elo0 = 0, elo1 = 35. p = (0.3, 0.5, 0.2), mean 0.55.
     *   H0: s0 = 0.5, a = (0.5, 0, -0.5): c2 = 0, c0 = 0.05, c1 = 0*0.05 - 0.125 = -0.125,
     *       t0 = 0.4, q0 = (0.3/1.2, 0.5, 0.2/0.8) = (0.25, 0.5, 0.25).
     *   H1: s1 = 1/(1+10^(-35/400)) = 0.5501994, a = (0.4498006, -0.0501994, -0.5501994):
     *       c0 = -0.0001994, c1 = -0.1224700, c2 = 0.0124233, t1 = -0.0016275,
     *       q1 = (0.3002198, 0.4999592, 0.1998211).
     *   LLR = 40 (0.3 ln(0.3002198/0.25) + 0.5 ln(0.4999592/0.5) + 0.2 ln(0.1998211/0.25))
     *       = 0.4027038 (normal approximation: 0.4081568).
     * Example 2: 30/10/10, elo 0/35: H0 t0 = 0.2/0.2 = 1, q0 = (0.4, 0.2, 0.4);
     *   LLR = 2.2152247 (the normal approximation, 2.7437, is poor at this size).
     * Example 3: 1/0/0 (regularised to 1/0.001/0.001), elo 0/35: LLR = 0.0956622, close to
     *   ln(s1/s0) = 0.0956707, the ratio of the two win probabilities.
     * Example 4: 10/20/12, elo -10/10: LLR = -0.2196384.
     * Example 5: 300/200/250, elo 0/10: LLR = 1.5394822 (normal: 1.5478790). */
    cr_assert_float_eq(match_llr(12, 20, 8, 0, 35), 0.4027038, 1e-6);
    cr_assert_float_eq(match_llr(30, 10, 10, 0, 35), 2.2152247, 1e-6);
    cr_assert_float_eq(match_llr(1, 0, 0, 0, 35), 0.0956622, 1e-6);
    cr_assert_float_eq(match_llr(10, 20, 12, -10, 10), -0.2196384, 1e-6);
    cr_assert_float_eq(match_llr(300, 200, 250, 0, 10), 1.5394822, 1e-6);
    /* More, for the decisions below: 60/20/20 -> 4.4304493, 20/20/60 -> -5.6338234,
     * 25/10/15 -> 0.9451494, 15/10/25 -> -1.5703334, 9/0/0 at elo 0/200 -> 3.7650808. */
    cr_assert_float_eq(match_llr(60, 20, 20, 0, 35), 4.4304493, 1e-6);
    cr_assert_float_eq(match_llr(20, 20, 60, 0, 35), -5.6338234, 1e-6);
    cr_assert_float_eq(match_llr(25, 10, 15, 0, 35), 0.9451494, 1e-6);
    cr_assert_float_eq(match_llr(15, 10, 25, 0, 35), -1.5703334, 1e-6);
    cr_assert_float_eq(match_llr(9, 0, 0, 0, 200), 3.7650808, 1e-6);
}

Test(match, llr_properties)
{
    /* Mirror: swapping wins and losses maps the score s to 1 - s, i.e. Elo e to -e, so
     * H1: 35 vs H0: 0 on 17/9/4 is H0: -35 vs H1: 0 on 4/9/17, with the roles (and the
     * sign) swapped. */
    cr_assert(match_llr(17, 9, 4, 0, 35) > 1);
    cr_assert_float_eq(match_llr(17, 9, 4, 0, 35), -match_llr(4, 9, 17, -35, 0), 1e-9);
    /* Sign: positive when the score is above the midpoint (s0 + s1)/2, negative below. */
    cr_assert(match_llr(55, 0, 45, 0, 35) > 0);     /* 0.55 > 0.5251 */
    cr_assert(match_llr(50, 10, 50, 0, 35) < 0);    /* 0.5 < 0.5251 */
    /* It grows with the evidence: the same frequencies, ten times the games. */
    double small = match_llr(6, 2, 2, 0, 35), large = match_llr(60, 20, 20, 0, 35);
    cr_assert(large > 5 * small && small > 0);
    /* Large samples: the exact GSPRT and its normal approximation agree (within 2%). */
    double exact = match_llr(3000, 2000, 2500, 0, 10);
    double approx = s_llr_normal(3000, 2000, 2500, 0, 10);
    cr_assert(fabs(exact - approx) < 0.02 * fabs(approx), "exact %f approx %f", exact, approx);
}

Test(match, sprt_bounds_and_decisions)
{
    double lo, hi;
    match_sprt_bounds(0.05, 0.05, &lo, &hi);
    /* ln(0.05/0.95) = -2.9444390, ln(0.95/0.05) = +2.9444390 */
    cr_assert_float_eq(lo, -2.9444390, 1e-6);
    cr_assert_float_eq(hi, 2.9444390, 1e-6);
    match_sprt_bounds(0.01, 0.1, &lo, &hi);
    cr_assert_float_eq(lo, log(0.1 / 0.99), 1e-12);
    cr_assert_float_eq(hi, log(0.9 / 0.01), 1e-12);
    double llr;
    cr_assert_eq(match_sprt_decide(60, 20, 20, 0, 35, 0.05, 0.05, &llr), GATE_ACCEPT);
    cr_assert_float_eq(llr, 4.4304493, 1e-6);
    cr_assert_eq(match_sprt_decide(20, 20, 60, 0, 35, 0.05, 0.05, NULL), GATE_REJECT);
    cr_assert_eq(match_sprt_decide(30, 10, 10, 0, 35, 0.05, 0.05, NULL), GATE_CONTINUE);
    /* 2.215 passes the looser upper bound ln(0.8/0.2) = 1.386 for alpha = beta = 0.2. */
    cr_assert_eq(match_sprt_decide(30, 10, 10, 0, 35, 0.2, 0.2, NULL), GATE_ACCEPT);
    cr_assert_eq(match_sprt_decide(0, 0, 0, 0, 35, 0.05, 0.05, &llr), GATE_CONTINUE);
}

/* ---- pentanomial: pairs of games ---- */

Test(match, penta_counts_from_pairs)
{
    /* A pair's index is A's points in it, in half points: 2 + r1 + r2. Order does
     * not matter (WL and LW, DW and WD are the same pair score), and DD and WL
     * both score 1 point of 2. */
    int p[MATCH_PENTA] = {0};
    match_penta_add(p, -1, -1); /* LL: 0 points   -> [0] */
    match_penta_add(p, -1, 0);  /* LD: 1/2        -> [1] */
    match_penta_add(p, 0, -1);  /* DL: 1/2        -> [1] */
    match_penta_add(p, 0, 0);   /* DD: 1          -> [2] */
    match_penta_add(p, 1, -1);  /* WL: 1          -> [2] */
    match_penta_add(p, -1, 1);  /* LW: 1          -> [2] */
    match_penta_add(p, 1, 0);   /* WD: 3/2        -> [3] */
    match_penta_add(p, 1, 1);   /* WW: 2          -> [4] */
    match_penta_add(p, 1, 1);
    const int want[MATCH_PENTA] = {1, 2, 3, 1, 2};
    for (int k = 0; k < MATCH_PENTA; k++)
        cr_assert_eq(p[k], want[k], "penta[%d] = %d, want %d", k, p[k], want[k]);
}

Test(match, penta_stats_worked_example)
{
    /* penta = 1/3/10/4/2: N = 20 pairs, 40 games. Per-game pair scores y = 0, 1/4, 1/2, 3/4, 1.
     * s = (0 + 3*0.25 + 10*0.5 + 4*0.75 + 2*1) / 20 = 10.75 / 20 = 0.5375
     * y - s = -0.5375, -0.2875, -0.0375, 0.2125, 0.4625; squared 0.28890625, 0.08265625,
     *   0.00140625, 0.04515625, 0.21390625
     * v = (0.28890625 + 3*0.08265625 + 10*0.00140625 + 4*0.04515625 + 2*0.21390625) / 20
     *   = (0.28890625 + 0.24796875 + 0.0140625 + 0.180625 + 0.4278125) / 20
     *   = 1.159375 / 20 = 0.05796875  (fishtest's stat_util.stats reports the variance per
     *   game as 2v = 0.1159375 over 40 games, the same standard error:
     *   sqrt(0.1159375 / 40) = sqrt(0.05796875 / 20))
     * sd = sqrt(0.05796875 / 20) = sqrt(0.0028984375) = 0.0538371386
     * 95%: 0.5375 -/+ 1.959964 * 0.0538371386 = 0.5375 -/+ 0.1055188 -> [0.4319812, 0.6430188]
     * Elo(0.5375) = -400 log10(0.4625/0.5375) = -400 log10(0.8604651) = +26.1067
     * Elo(0.4319812) = -400 log10(1/0.4319812 - 1) = -400 log10(1.3149158) = -47.5592
     * Elo(0.6430188) = -400 log10(0.5551644) = +102.2314 */
    const int p[MATCH_PENTA] = {1, 3, 10, 4, 2};
    match_stats st;
    match_penta_stats(p, &st);
    cr_assert_eq(st.games, 40);
    cr_assert_float_eq(st.score, 0.5375, 1e-12);
    cr_assert_float_eq(st.sd, 0.0538371386, 1e-9);
    cr_assert_float_eq(st.score_lo, 0.4319812, 1e-6);
    cr_assert_float_eq(st.score_hi, 0.6430188, 1e-6);
    cr_assert_float_eq(st.elo, 26.1067, 1e-3);
    cr_assert_float_eq(st.elo_lo, -47.5592, 1e-3);
    cr_assert_float_eq(st.elo_hi, 102.2314, 1e-3);
}

Test(match, penta_variance_sees_colour_bias)
{
    /* The colour decides every game: A wins with White and loses with Black, 10 pairs WL.
     * Trinomial (10/0/10 as independent games): v = 1/4 per game, sd = sqrt(0.25/20) = 0.1118.
     * Pentanomial: every pair scores exactly 1/2 per game, v = 0, sd = 0: the pairs show that
     * the two players are equal, which the games taken one by one cannot. */
    const int p[MATCH_PENTA] = {0, 0, 10, 0, 0};
    match_stats pen, tri;
    match_penta_stats(p, &pen);
    match_stats_compute(10, 0, 10, &tri);
    cr_assert_eq(pen.games, tri.games);
    cr_assert_float_eq(pen.score, tri.score, 1e-12);
    cr_assert_float_eq(pen.sd, 0.0, 1e-12);
    cr_assert_float_eq(tri.sd, sqrt(0.25 / 20), 1e-12);
    /* Edges: no pairs is like no games; all WW is a score of 1 and +inf Elo. */
    const int none[MATCH_PENTA] = {0}, ww[MATCH_PENTA] = {0, 0, 0, 0, 6};
    match_penta_stats(none, &pen);
    cr_assert_eq(pen.games, 0);
    cr_assert_float_eq(pen.score, 0.5, 1e-12);
    match_penta_stats(ww, &pen);
    cr_assert_eq(pen.games, 12);
    cr_assert(isinf(pen.elo) && pen.elo > 0);
}

/* The normal approximation N (s1-s0)(2s-s0-s1) / (2v) for pairs (v per pair, N pairs). */
static double s_penta_llr_normal(const int p[MATCH_PENTA], double elo0, double elo1)
{
    double n = 0, sum = 0, v = 0;
    for (int k = 0; k < MATCH_PENTA; k++) {
        n += p[k];
        sum += p[k] * k / 4.0;
    }
    double s = sum / n;
    for (int k = 0; k < MATCH_PENTA; k++)
        v += p[k] * (k / 4.0 - s) * (k / 4.0 - s);
    v /= n;
    double s0 = 1 / (1 + pow(10, -elo0 / 400)), s1 = 1 / (1 + pow(10, -elo1 / 400));
    return n * (s1 - s0) * (2 * s - s0 - s1) / (2 * v);
}

Test(match, penta_llr_against_fishtest)
{
    /* Reference values from fishtest's own code: server/fishtest/stats/LLRcalc.py,
     * LLR_logistic(elo0, elo1, [LL, LD, DD+WL, WD, WW]) at official-stockfish/fishtest
     * commit b8eecff220b562a0dc2c4e68d1fa02521e06d72c, run with python3 where scipy's brentq
     * (not installed here) was replaced by bisection to machine precision. The same
     * harness reproduces the trinomial values of llr_worked_examples above to 7 digits
     * (LLR_logistic(0, 35, [8, 20, 12]) = 0.4027038, [10, 10, 30] -> 2.2152247). */
    struct { int p[MATCH_PENTA]; double elo0, elo1, llr; } ref[] = {
        {{1, 3, 10, 4, 2}, 0, 35, 0.2124988},
        {{0, 0, 0, 0, 1}, 0, 35, 0.0958528},     /* one WW pair ~ log(s1/s0) = 0.0957 */
        {{2, 5, 20, 8, 5}, 0, 35, 1.0000846},
        {{0, 0, 3, 0, 0}, 0, 35, -0.3114253},    /* three even pairs: toward H0 */
        {{5, 10, 40, 20, 25}, 0, 35, 5.5846923},
        {{25, 20, 40, 10, 5}, 0, 35, -7.6719366},
        {{10, 30, 100, 40, 20}, -10, 10, 3.6322293},
        {{0, 0, 0, 0, 9}, 0, 200, 3.7659168},
        {{20, 30, 50, 30, 20}, 0, 35, -2.0572850},
        {{100, 300, 1000, 400, 200}, 0, 10, 14.8356269},
        {{3, 0, 0, 0, 7}, 0, 35, 0.3523736},
    };
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        double l = match_penta_llr(ref[i].p, ref[i].elo0, ref[i].elo1);
        cr_assert_float_eq(l, ref[i].llr, 1e-6, "case %zu: %.7f, fishtest %.7f", i, l, ref[i].llr);
    }
}

Test(match, penta_llr_properties)
{
    /* Mirror: reversing the pair counts maps s to 1 - s and Elo e to -e, so H0: 0 / H1: 35
     * on p is H1: 0 / H0: -35 on the reversed p, with the sign swapped. */
    const int p[MATCH_PENTA] = {2, 5, 20, 8, 5}, r[MATCH_PENTA] = {5, 8, 20, 5, 2};
    cr_assert_float_eq(match_penta_llr(p, 0, 35), -match_penta_llr(r, -35, 0), 1e-9);
    /* Large samples: the GSPRT tends to the normal approximation (within 2%). At
     * 1/3/10/4/2 x 100 (2000 pairs), s = 0.5375, v = 0.05796875, elo 0/10. */
    const int big[MATCH_PENTA] = {100, 300, 1000, 400, 200};
    double exact = match_penta_llr(big, 0, 10), approx = s_penta_llr_normal(big, 0, 10);
    cr_assert(fabs(exact - approx) < 0.02 * fabs(approx), "exact %f approx %f", exact, approx);
    /* Pairs carry more evidence than the same games taken one by one when the colour
     * decides many games: 40 WL pairs and 10 WW pairs (score 0.6) against the trinomial
     * 50 + 20 wins, 40 losses, no draws of the same 100 games. */
    const int biased[MATCH_PENTA] = {0, 0, 40, 0, 10};
    cr_assert(match_penta_llr(biased, 0, 35) > match_llr(60, 0, 40, 0, 35));
}

Test(match, penta_sprt_decisions)
{
    /* Bounds +/-2.9444390 (alpha = beta = 0.05); LLRs from the fishtest table above. */
    double llr;
    const int acc[MATCH_PENTA] = {5, 10, 40, 20, 25}, rej[MATCH_PENTA] = {25, 20, 40, 10, 5};
    const int mid[MATCH_PENTA] = {2, 5, 20, 8, 5}, ww9[MATCH_PENTA] = {0, 0, 0, 0, 9};
    const int none[MATCH_PENTA] = {0};
    cr_assert_eq(match_penta_sprt_decide(acc, 0, 35, 0.05, 0.05, &llr), GATE_ACCEPT);
    cr_assert_float_eq(llr, 5.5846923, 1e-6);
    cr_assert_eq(match_penta_sprt_decide(rej, 0, 35, 0.05, 0.05, NULL), GATE_REJECT);
    cr_assert_eq(match_penta_sprt_decide(mid, 0, 35, 0.05, 0.05, NULL), GATE_CONTINUE);
    /* 1.0000846 passes ln(0.7/0.3) = 0.8473 (alpha = beta = 0.3) but not ln(0.75/0.25) = 1.0986. */
    cr_assert_eq(match_penta_sprt_decide(mid, 0, 35, 0.3, 0.3, NULL), GATE_ACCEPT);
    cr_assert_eq(match_penta_sprt_decide(mid, 0, 35, 0.25, 0.25, NULL), GATE_CONTINUE);
    /* 9 WW pairs at 0/200: 3.7659 >= 2.944. */
    cr_assert_eq(match_penta_sprt_decide(ww9, 0, 200, 0.05, 0.05, NULL), GATE_ACCEPT);
    cr_assert_eq(match_penta_sprt_decide(none, 0, 35, 0.05, 0.05, &llr), GATE_CONTINUE);
    /* At the bounds: with alpha = beta = a the bounds are -/+ln((1-a)/a), so a =
     * 1 / (1 + e^L) puts the upper bound exactly at L. A hair (1e-6) below L, L = 1.0000846
     * accepts; a hair above, it continues; and the mirrored counts (LLR -1.0000846 for
     * -35/0, see penta_llr_properties) reject against a lower bound a hair above. */
    double l = 1.0000846, below = 1 / (1 + exp(l - 1e-6)), above = 1 / (1 + exp(l + 1e-6));
    const int mirror[MATCH_PENTA] = {5, 8, 20, 5, 2};
    cr_assert_eq(match_penta_sprt_decide(mid, 0, 35, below, below, NULL), GATE_ACCEPT);
    cr_assert_eq(match_penta_sprt_decide(mid, 0, 35, above, above, NULL), GATE_CONTINUE);
    cr_assert_eq(match_penta_sprt_decide(mirror, -35, 0, below, below, NULL), GATE_REJECT);
    cr_assert_eq(match_penta_sprt_decide(mirror, -35, 0, above, above, NULL), GATE_CONTINUE);
}

/* ---- the gate ---- */

Test(gate, defaults)
{
    gate_config c;
    gate_config_default(&c);
    cr_assert_eq(c.games, 50);
    cr_assert_float_eq(c.threshold, 0.55, 1e-12);
    cr_assert(!c.sprt);
    cr_assert_float_eq(c.elo0, 0, 1e-12);
    cr_assert_float_eq(c.elo1, 35, 1e-12);
    cr_assert_float_eq(c.alpha, 0.05, 1e-12);
    cr_assert_float_eq(c.beta, 0.05, 1e-12);
}

Test(gate, config_check)
{
    gate_config c;
    char err[200];
    gate_config_default(&c);
    cr_assert_eq(gate_config_check(&c, err, sizeof err), 0);
    c.games = 0;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "games"));
    gate_config_default(&c);
    c.threshold = 1.0;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    c.threshold = NAN;
    cr_assert_eq(gate_config_check(&c, NULL, 0), KZ_EINVAL);
    gate_config_default(&c);
    c.elo0 = 40; /* ignored without sprt */
    cr_assert_eq(gate_config_check(&c, err, sizeof err), 0);
    c.sprt = true;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "elo0"));
    gate_config_default(&c);
    c.sprt = true;
    c.beta = 0;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
}

Test(gate, fixed_mode_at_fifty)
{
    gate_config c;
    gate_config_default(&c);
    /* 27.5/50 = 0.55 is not > 0.55. */
    cr_assert_eq(gate_decide(&c, 27, 1, 22), GATE_REJECT);
    cr_assert_eq(gate_decide(&c, 25, 5, 20), GATE_REJECT);   /* 27.5 again */
    cr_assert_eq(gate_decide(&c, 28, 0, 22), GATE_ACCEPT);   /* 0.56 */
    cr_assert_eq(gate_decide(&c, 27, 2, 21), GATE_ACCEPT);   /* 28/50 */
    cr_assert_eq(gate_decide(&c, 0, 50, 0), GATE_REJECT);    /* all draws: 0.5 */
    /* A threshold that does not round well: 57/100 = 0.57 is not > 0.57. */
    c.games = 100;
    c.threshold = 0.57;
    cr_assert_eq(gate_decide(&c, 57, 0, 43), GATE_REJECT);
    cr_assert_eq(gate_decide(&c, 56, 3, 41), GATE_ACCEPT);   /* 57.5 */
}

Test(gate, fixed_mode_early_and_late)
{
    gate_config c;
    gate_config_default(&c);
    cr_assert_eq(gate_decide(&c, 0, 0, 0), GATE_CONTINUE);
    cr_assert_eq(gate_decide(&c, 27, 1, 0), GATE_CONTINUE); /* 27.5 so far: not yet > 27.5 */
    cr_assert_eq(gate_decide(&c, 28, 0, 0), GATE_ACCEPT);   /* 28 points can no longer fall */
    cr_assert_eq(gate_decide(&c, 0, 0, 22), GATE_CONTINUE); /* 28 wins still reach 0.56 */
    cr_assert_eq(gate_decide(&c, 0, 0, 23), GATE_REJECT);   /* at best 27/50 */
    cr_assert_eq(gate_decide(&c, 0, 45, 0), GATE_REJECT);   /* at best 22.5 + 5 = 27.5 */
    cr_assert_eq(gate_decide(&c, 0, 44, 0), GATE_CONTINUE); /* 22 + 6 = 28 still possible */
    cr_assert_eq(gate_decide(&c, 20, 5, 20), GATE_REJECT);   /* 22.5 + 5 left: at best 27.5 */
    cr_assert_eq(gate_decide(&c, 21, 5, 19), GATE_CONTINUE); /* 23.5 + 5 left: up to 28.5 */
    /* More games than planned: the score over all of them decides. */
    cr_assert_eq(gate_decide(&c, 34, 0, 26), GATE_ACCEPT);   /* 34/60 = 0.567 */
    cr_assert_eq(gate_decide(&c, 33, 0, 27), GATE_REJECT);   /* 33/60 = 0.55 */
}

Test(gate, sprt_mode)
{
    gate_config c;
    gate_config_default(&c);
    c.sprt = true;
    c.games = 200;
    /* The SPRT decides (LLR 4.43 >= 2.944; -5.63 <= -2.944) before the cap. */
    cr_assert_eq(gate_decide(&c, 60, 20, 20), GATE_ACCEPT);
    cr_assert_eq(gate_decide(&c, 20, 20, 60), GATE_REJECT);
    /* Undecided below the cap: continue, even where the fixed rule would already accept. */
    cr_assert_eq(gate_decide(&c, 30, 10, 10), GATE_CONTINUE);
    cr_assert_eq(gate_decide(&c, 28, 0, 0), GATE_CONTINUE); /* LLR 2.6788 < 2.944 */
    cr_assert_eq(gate_decide(&c, 30, 0, 0), GATE_CONTINUE); /* LLR 2.8702 */
    cr_assert_eq(gate_decide(&c, 31, 0, 0), GATE_ACCEPT);   /* LLR 2.9658 */
    /* At the cap (50 games) an undecided SPRT falls back to score > threshold. */
    c.games = 50;
    cr_assert_eq(gate_decide(&c, 25, 10, 15), GATE_ACCEPT); /* LLR 0.95, score 0.6 */
    cr_assert_eq(gate_decide(&c, 15, 10, 25), GATE_REJECT); /* LLR -1.57, score 0.4 */
    /* Wider hypotheses decide early: 9 straight wins give LLR 3.77 for elo1 = 200. */
    c.elo1 = 200;
    cr_assert_eq(gate_decide(&c, 9, 0, 0), GATE_ACCEPT);
    cr_assert_eq(gate_decide(&c, 2, 0, 0), GATE_CONTINUE);
}

Test(gate, modes_names_and_checks)
{
    gate_config c;
    char err[200];
    gate_config_default(&c);
    cr_assert_eq(c.mode, GATE_MODE_SPEC);
    cr_assert(!gate_uses_pairs(&c));
    /* Names round-trip; unknown names are refused and leave the mode alone. */
    for (int m = 0; m < GATE_MODES; m++) {
        gate_mode back = GATE_MODE_NONE + GATE_MODE_SPRT; /* neither */
        cr_assert_eq(gate_mode_parse(gate_mode_name((gate_mode)m), &back), 0);
        cr_assert_eq(back, m);
    }
    cr_assert_str_eq(gate_mode_name(GATE_MODE_SPEC), "spec");
    cr_assert_str_eq(gate_mode_name(GATE_MODE_SPRT), "sprt");
    cr_assert_str_eq(gate_mode_name(GATE_MODE_NONE), "none");
    cr_assert_str_eq(gate_mode_name((gate_mode)7), "?");
    gate_mode m = GATE_MODE_NONE;
    cr_assert_eq(gate_mode_parse("SPRT", &m), KZ_EINVAL);
    cr_assert_eq(gate_mode_parse("", &m), KZ_EINVAL);
    cr_assert_eq(gate_mode_parse(NULL, &m), KZ_EINVAL);
    cr_assert_eq(m, GATE_MODE_NONE);
    /* sprt mode: the cap counts games, two per pair, so it is even. */
    c.mode = GATE_MODE_SPRT;
    cr_assert(gate_uses_pairs(&c));
    cr_assert_eq(gate_config_check(&c, err, sizeof err), 0);
    c.games = 51;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "even"), "%s", err);
    c.games = 0;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    c.games = 2;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), 0);
    c.threshold = 5; /* unused in sprt mode */
    cr_assert_eq(gate_config_check(&c, err, sizeof err), 0);
    c.sprt = true;   /* the flag belongs to spec mode */
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "spec"), "%s", err);
    c.sprt = false;
    c.elo0 = 35;
    c.elo1 = 0;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "elo0"), "%s", err);
    c.elo0 = -2500;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "2000"), "%s", err);
    c.elo0 = 0;
    c.elo1 = 35;
    c.alpha = 1;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    /* none: nothing else matters. */
    c.mode = GATE_MODE_NONE;
    c.games = 0;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), 0);
    c.mode = (gate_mode)3;
    cr_assert_eq(gate_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "mode"), "%s", err);
}

Test(gate, spec_mode_unchanged_by_the_modes)
{
    /* The default is the specification's gate, and setting the mode to spec
     * explicitly is the same configuration: the fixed-mode cases above again. */
    gate_config c;
    gate_config_default(&c);
    c.mode = GATE_MODE_SPEC;
    cr_assert_eq(gate_decide(&c, 27, 1, 22), GATE_REJECT);
    cr_assert_eq(gate_decide(&c, 28, 0, 22), GATE_ACCEPT);
    cr_assert_eq(gate_decide(&c, 28, 0, 0), GATE_ACCEPT);
    cr_assert_eq(gate_decide(&c, 0, 0, 23), GATE_REJECT);
    cr_assert_eq(gate_decide(&c, 0, 0, 22), GATE_CONTINUE);
}

Test(gate, sprt_mode_on_pairs)
{
    /* elo 0/35, alpha = beta = 0.05: bounds +/-2.944. LLRs from fishtest's LLR_logistic
     * (see penta_llr_against_fishtest; the ones not listed there, same provenance:
     * 5/8/20/5/2 -> -2.3963930, 0/0/2/1/0 -> 0.2855838). */
    gate_config c;
    gate_config_default(&c);
    c.mode = GATE_MODE_SPRT;
    c.games = 400; /* a cap of 200 pairs */
    const int acc[MATCH_PENTA] = {5, 10, 40, 20, 25};   /* LLR 5.585, score 0.6125 */
    const int rej[MATCH_PENTA] = {25, 20, 40, 10, 5};   /* LLR -7.672 */
    const int up[MATCH_PENTA] = {2, 5, 20, 8, 5};       /* LLR 1.000, score 0.55625 */
    const int down[MATCH_PENTA] = {5, 8, 20, 5, 2};     /* LLR -2.396, score 0.44375 */
    const int even[MATCH_PENTA] = {20, 30, 50, 30, 20}; /* LLR -2.057, score exactly 0.5 */
    const int none[MATCH_PENTA] = {0};
    cr_assert_eq(gate_decide_pairs(&c, acc), GATE_ACCEPT);
    cr_assert_eq(gate_decide_pairs(&c, rej), GATE_REJECT);
    cr_assert_eq(gate_decide_pairs(&c, up), GATE_CONTINUE);   /* 40 pairs < 200 */
    cr_assert_eq(gate_decide_pairs(&c, down), GATE_CONTINUE);
    cr_assert_eq(gate_decide_pairs(&c, none), GATE_CONTINUE);
    /* At the cap (40 pairs = 80 games) an undecided SPRT gives way to score > 1/2. */
    c.games = 80;
    cr_assert_eq(gate_decide_pairs(&c, up), GATE_ACCEPT);
    cr_assert_eq(gate_decide_pairs(&c, down), GATE_REJECT);
    /* Beyond the cap, the same over all pairs; exactly 1/2 keeps the incumbent. */
    cr_assert_eq(gate_decide_pairs(&c, even), GATE_REJECT);   /* 150 pairs > 40 */
    /* Compared exactly in half points: 2 DD-or-WL pairs and 1 WD are 7 half points
     * of 12 (score 7/12 > 1/2, LLR 0.286): accepted at a cap of 6 games; 3 even pairs
     * (6 of 12) are not. */
    c.games = 6;
    const int seven[MATCH_PENTA] = {0, 0, 2, 1, 0}, six[MATCH_PENTA] = {0, 0, 3, 0, 0};
    cr_assert_eq(gate_decide_pairs(&c, seven), GATE_ACCEPT);
    cr_assert_eq(gate_decide_pairs(&c, six), GATE_REJECT);
    /* The SPRT still decides before the cap with wider hypotheses: 9 WW pairs give
     * LLR 3.766 at 0/200. */
    c.games = 400;
    c.elo1 = 200;
    const int ww9[MATCH_PENTA] = {0, 0, 0, 0, 9}, ww2[MATCH_PENTA] = {0, 0, 0, 0, 2};
    cr_assert_eq(gate_decide_pairs(&c, ww9), GATE_ACCEPT);
    cr_assert_eq(gate_decide_pairs(&c, ww2), GATE_CONTINUE);
}

Test(gate, none_mode_accepts_at_once)
{
    gate_config c;
    gate_config_default(&c);
    c.mode = GATE_MODE_NONE;
    const int none[MATCH_PENTA] = {0}, lost[MATCH_PENTA] = {9, 0, 0, 0, 0};
    cr_assert_eq(gate_decide(&c, 0, 0, 0), GATE_ACCEPT);
    cr_assert_eq(gate_decide(&c, 0, 0, 50), GATE_ACCEPT);
    cr_assert_eq(gate_decide_pairs(&c, none), GATE_ACCEPT);
    cr_assert_eq(gate_decide_pairs(&c, lost), GATE_ACCEPT);
}

/* The ratio of sums over units with its delta-method interval (match.h),
 * worked by hand. */
Test(match, ratio_interval_worked_example)
{
    /* (x, y) = (2, 2), (0, 2), (6, 4): R = 8 / 8 = 1;
     * sum (x - R y)^2 = 0 + 4 + 4 = 8; ybar = 8/3;
     * var = 8 / (3 * 2 * 64/9) = 0.1875; half = 1.959964 * 0.4330127 = 0.8486896. */
    match_ratio r = {0};
    match_ratio_add(&r, 2, 2);
    match_ratio_add(&r, 0, 2);
    match_ratio_add(&r, 6, 4);
    double R, h;
    match_ratio_stats(&r, &R, &h);
    cr_assert_float_eq(R, 1.0, 1e-12);
    cr_assert_float_eq(h, 0.8486896, 1e-6);
    /* y = 1 each: the mean with its usual interval. x = 1, 3: mean 2, sample
     * variance 2, var of the mean 1, half 1.959964. */
    match_ratio m = {0};
    match_ratio_add(&m, 1, 1);
    match_ratio_add(&m, 3, 1);
    match_ratio_stats(&m, &R, &h);
    cr_assert_float_eq(R, 2.0, 1e-12);
    cr_assert_float_eq(h, 1.959964, 1e-6);
    /* One unit: no interval; nothing: 0. */
    match_ratio one = {0};
    match_ratio_add(&one, 5, 2);
    match_ratio_stats(&one, &R, &h);
    cr_assert_float_eq(R, 2.5, 1e-12);
    cr_assert_eq(h, 0);
    match_ratio none = {0};
    match_ratio_stats(&none, &R, &h);
    cr_assert(R == 0 && h == 0);
}

/* ---- match play ---- */

Test(match, openings_distinct_and_level)
{
    const game_def *g = game_default();
    game_state o[30];
    cr_assert_eq(match_openings(g, 30, 10, 5, o), 0);
    for (int i = 0; i < 30; i++) {
        cr_assert(!g->result(&o[i]).over);
        cr_assert(!g->mid_turn(&o[i]));
        cr_assert_eq(g->ply(&o[i]), 10);
        int a;
        long score;
        player_alphabeta_search(g, &o[i], 1, false, &a, &score);
        cr_assert_eq(score, 0, "opening %d is not level", i);
        for (int j = 0; j < i; j++)
            cr_assert_neq(g->hash(&o[i]), g->hash(&o[j]), "openings %d and %d equal", i, j);
    }
    /* Black has 3 first moves: no 5 distinct positions after one turn. */
    cr_assert_eq(match_openings(g, 5, 1, 5, o), KZ_EINVAL);
    /* Automatic: the fewest turns that give 30. */
    cr_assert_eq(match_openings(g, 30, 0, 5, o), 0);
    int turns = g->ply(&o[0]);
    for (int i = 1; i < 30; i++)
        cr_assert_eq(g->ply(&o[i]), turns);
    game_state tmp[30];
    cr_assert_eq(match_openings(g, 30, turns - 1, 5, tmp), KZ_EINVAL);
}

/* Records what match_run reports. */
typedef struct log_games {
    int n;              /* games seen */
    match_game g[64];   /* their reports */
    int w, d, l;        /* the last tally */
} log_games;

static void s_log(void *ctx, const match_game *gm, int w, int d, int l)
{
    log_games *lg = ctx;
    cr_assert_lt(lg->n, 64);
    lg->g[lg->n++] = *gm;
    lg->w = w;
    lg->d = d;
    lg->l = l;
}

Test(match, colours_openings_and_tally)
{
    const game_def *g = game_default();
    player *a = player_greedy_new(g), *b = player_random_new(g);
    match_config cfg;
    match_config_default(&cfg);
    cfg.games = 12;
    cfg.openings = 4;
    cfg.seed = 9;
    log_games lg = {0};
    cfg.on_game = s_log;
    cfg.ctx = &lg;
    int w, d, l, dec;
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, &dec), 0);
    cr_assert_eq(w + d + l, 12);
    cr_assert_eq(lg.n, 12);
    cr_assert(lg.w == w && lg.d == d && lg.l == l);
    cr_assert_eq(dec, GATE_CONTINUE);
    int sum = 0;
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(lg.g[i].index, i);
        cr_assert_eq(lg.g[i].a_player, i % 2);
        cr_assert_eq(lg.g[i].opening, (i / 2) % 4);
        cr_assert(lg.g[i].result.over);
        cr_assert_eq(lg.g[i].a_result, game_result_for(lg.g[i].result, lg.g[i].a_player));
        sum += lg.g[i].a_result;
    }
    cr_assert_eq(sum, w - l);
    player_destroy(&a);
    player_destroy(&b);
    cr_assert_null(a);
}

Test(match, reproducible_from_seed)
{
    const game_def *g = game_default();
    player *a = player_uct_new(g, &(player_uct_config){.playouts = 30, .c = 1.0});
    player *b = player_alphabeta_new(g, 1);
    log_games run[3] = {{0}};
    uint64_t seeds[3] = {4, 4, 5};
    for (int r = 0; r < 3; r++) {
        match_config cfg;
        match_config_default(&cfg);
        cfg.games = 6;
        cfg.seed = seeds[r];
        cfg.on_game = s_log;
        cfg.ctx = &run[r];
        int w, d, l;
        cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, NULL), 0);
    }
    bool differ = false;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(run[0].g[i].actions, run[1].g[i].actions, "game %d", i);
        cr_assert_eq(run[0].g[i].result.winner, run[1].g[i].result.winner);
        cr_assert_eq(run[0].g[i].result.reason, run[1].g[i].result.reason);
        differ |= run[0].g[i].actions != run[2].g[i].actions;
    }
    cr_assert(differ, "another seed should give other games");
    player_destroy(&a);
    player_destroy(&b);
}

Test(match, sprt_stops_early)
{
    /* greedy beats random in almost every game: with hypotheses 0 vs 200 Elo the
     * SPRT accepts H1 after about 9 straight wins, far below the cap of 60. */
    const game_def *g = game_default();
    player *a = player_greedy_new(g), *b = player_random_new(g);
    match_config cfg;
    match_config_default(&cfg);
    cfg.games = 60;
    cfg.sprt = true;
    cfg.elo0 = 0;
    cfg.elo1 = 200;
    cfg.seed = 3;
    log_games lg = {0};
    cfg.on_game = s_log;
    cfg.ctx = &lg;
    int w, d, l, dec;
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, &dec), 0);
    cr_assert_eq(dec, GATE_ACCEPT);
    cr_assert_lt(w + d + l, 30);
    cr_assert_eq(lg.n, w + d + l);
    cr_assert_eq(match_sprt_decide(w, d, l, 0, 200, 0.05, 0.05, NULL), GATE_ACCEPT);
    /* It stopped at the first decision: every earlier tally was undecided. */
    int pw = 0, pd = 0, pl = 0;
    for (int i = 0; i + 1 < lg.n; i++) {
        pw += lg.g[i].a_result > 0;
        pd += lg.g[i].a_result == 0;
        pl += lg.g[i].a_result < 0;
        cr_assert_eq(match_sprt_decide(pw, pd, pl, 0, 200, 0.05, 0.05, NULL), GATE_CONTINUE);
    }
    player_destroy(&a);
    player_destroy(&b);
}

Test(match, bad_settings)
{
    const game_def *g = game_default();
    player *a = player_random_new(g), *b = player_random_new(g);
    match_config cfg;
    match_config_default(&cfg);
    int w, d, l;
    cfg.games = 0;
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, NULL), KZ_EINVAL);
    match_config_default(&cfg);
    cfg.sprt = true;
    cfg.elo0 = 10;
    cfg.elo1 = 5;
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, NULL), KZ_EINVAL);
    match_config_default(&cfg);
    cfg.openings = 10;
    cfg.opening_turns = 1; /* only 3 positions exist */
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, NULL), KZ_EINVAL);
    cr_assert_eq(w + d + l, 0);
    player_destroy(&a);
    player_destroy(&b);
}

/* ---- kz match ---- */

/* Runs `kz ARGS`; returns the exit status, stdout and stderr in out. */
static int s_kz(const char *args, char *out, size_t len)
{
    return harness_kz_out(args, NULL, true, out, len);
}

Test(kz_match, runs_and_reports)
{
    static char out[65536];
    int rc = s_kz("match greedy random --games 6 --openings 3 --seed 2 --sprt 0,200", out,
                  sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "game 1/6: opening 1,"), "%s", out);
    cr_assert_not_null(strstr(out, "W/D/L: "), "%s", out);
    cr_assert_not_null(strstr(out, "score: "), "%s", out);
    cr_assert_not_null(strstr(out, "elo: "), "%s", out);
    cr_assert_not_null(strstr(out, "sprt: elo0 0, elo1 200"), "%s", out);
    int w, d, l;
    const char *p = strstr(out, "W/D/L: ");
    cr_assert_eq(sscanf(p, "W/D/L: %d/%d/%d", &w, &d, &l), 3);
    cr_assert_eq(w + d + l, 6);
    rc = s_kz("match --help", out, sizeof out);
    cr_assert_eq(rc, 0);
    cr_assert_not_null(strstr(out, "alphabeta:D"));
    cr_assert_not_null(strstr(out, "mcts:MODEL"));
}

Test(kz_match, pairs_lines)
{
    /* With --openings, games 2j-1 and 2j (one opening, both colours) form a pair. The
     * test rebuilds the pentanomial counts from the per-game lines (A's result in each)
     * with match_penta_add and checks the printed counts, the pair score
     * sum_k k/4 penta[k] / pairs, and that the odd last game is named as left out. */
    static char out[65536];
    int rc = s_kz("match random random --games 9 --openings 4 --seed 3 --sprt 0,35", out,
                  sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    int want[MATCH_PENTA] = {0}, prev = 0, games = 0;
    for (const char *l = strstr(out, "\ngame "); l; l = strstr(l + 1, "\ngame ")) {
        int i, n, o;
        char verb[16];
        cr_assert_eq(sscanf(l, "\ngame %d/%d: opening %d, A %15s", &i, &n, &o, verb), 4, "%s", l);
        cr_assert_eq(i, ++games);
        cr_assert_eq(o, (i - 1) / 2 % 4 + 1, "game %d: opening %d", i, o);
        int r = !strcmp(verb, "wins") ? 1 : !strcmp(verb, "loses") ? -1 : 0;
        if (i % 2)
            prev = r;
        else
            match_penta_add(want, prev, r);
    }
    cr_assert_eq(games, 9);
    const char *p = strstr(out, "  pairs: ");
    cr_assert_not_null(p, "%s", out);
    int pairs, got[MATCH_PENTA];
    cr_assert_eq(sscanf(p, "  pairs: %d (LL/LD/DD+WL/WD/WW: %d/%d/%d/%d/%d)", &pairs, &got[0],
                        &got[1], &got[2], &got[3], &got[4]), 6, "%s", p);
    cr_assert_eq(pairs, 4);
    double points = 0;
    for (int k = 0; k < MATCH_PENTA; k++) {
        cr_assert_eq(got[k], want[k], "penta[%d]: %s", k, out);
        points += k / 4.0 * got[k];
    }
    cr_assert_not_null(strstr(p, "game 9 has no partner"), "%s", p);
    double score, pm;
    const char *sc = strstr(out, "  pair score: ");
    cr_assert_not_null(sc, "%s", out);
    cr_assert_eq(sscanf(sc, "  pair score: %lf +/- %lf", &score, &pm), 2);
    cr_assert_float_eq(score, points / pairs, 0.0005, "%s", sc);
    match_stats st;
    match_penta_stats(got, &st);
    cr_assert_float_eq(pm, MATCH_Z95 * st.sd, 0.0005, "%s", sc);
    cr_assert_not_null(strstr(out, "  pair elo: "), "%s", out);
    cr_assert_not_null(strstr(out, "  pair sprt: LLR "), "%s", out);
    /* The trinomial lines are still there, and without --openings there are no pairs. */
    cr_assert_not_null(strstr(out, "  W/D/L: "), "%s", out);
    cr_assert_not_null(strstr(out, "  sprt: elo0 0, elo1 35"), "%s", out);
    rc = s_kz("match greedy random --games 4 --openings 0 --quiet", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "pair"), "%s", out);
    /* Openings by default (games / 2): pairs. */
    rc = s_kz("match greedy random --games 4 --quiet", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "  pairs: 2 "), "%s", out);
}

/* Players without randomness replay the same games from one start: kz match
 * --openings 0 says so (a one-line warning) and gives the score and Elo over
 * the distinct games, each counted once; random players' games all differ,
 * and with openings there is no warning. */
Test(kz_match, repeated_games_are_counted_once)
{
    static char out[65536];
    int rc = harness_kz_out("match policy:uniform mcts:uniform:8 --games 6 --openings 0 --quiet",
                            NULL, true, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    const char *w = strstr(out, "kz: match: warning: only 2 of the 6 games differ");
    cr_assert_not_null(w, "%s", out);
    cr_assert_not_null(strstr(out, "  W/D/L: 3/0/3"), "%s", out);
    cr_assert_not_null(strstr(out, "  distinct games: 2 of 6 (W/D/L 1/0/1)"), "%s", out);
    double score, pm;
    const char *d = strstr(out, "  distinct score: ");
    cr_assert(d && sscanf(d, "  distinct score: %lf +/- %lf", &score, &pm) == 2, "%s", out);
    match_stats st;
    match_stats_compute(1, 0, 1, &st);
    cr_assert_float_eq(score, 0.5, 1e-9);
    cr_assert_float_eq(pm, MATCH_Z95 * st.sd, 0.0005, "two games' interval: %s", d);
    cr_assert_not_null(strstr(out, "  distinct elo: "), "%s", out);
    rc = harness_kz_out("match random random --games 6 --openings 0 --quiet", NULL, true, out,
                        sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "distinct"), "random games differ: %s", out);
    rc = harness_kz_out("match policy:uniform mcts:uniform:8 --games 6 --quiet", NULL, true, out,
                        sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "warning"), "3 openings, both colours: 6 games: %s", out);
}

/* --book: the openings are the book file's (here one position, Black to take
 * White's last man: every game ends in one ply, won by Black), each played
 * with both colours; a book that cannot be read or holds fewer openings than
 * asked for is one line and exit status 2. */
Test(kz_match, openings_from_a_book_file)
{
    static char out[65536];
    char dir[] = "/tmp/kz-book-XXXXXX", path[64], args[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/book.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("# one opening\nb...........bw........... b\n", f);
    fclose(f);
    snprintf(args, sizeof args, "match greedy random --games 4 --book %s", path);
    int rc = s_kz(args, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "game 1/4: opening 1, A wins as black: black (no-pieces, "
                              "1 plies)"), "%s", out);
    cr_assert_not_null(strstr(out, "game 2/4: opening 1, A loses as white"), "%s", out);
    cr_assert_not_null(strstr(out, "game 4/4: opening 1, A loses as white"), "%s", out);
    cr_assert_not_null(strstr(out, "  W/D/L: 2/0/2"), "%s", out);
    snprintf(args, sizeof args, "match greedy random --games 4 --openings 2 --book %s", path);
    rc = s_kz(args, out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "the book"), "%s", out);
    snprintf(args, sizeof args, "match greedy random --book %s/none.txt", dir);
    rc = s_kz(args, out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_null(strchr(strchr(out, '\n') + 1, '\n'), "one line: %s", out);
    unlink(path);
    rmdir(dir);
}

Test(kz_match, bad_input)
{
    static char out[8192];
    const char *bad[] = {
        "match random",                          /* one player */
        "match random random --games 0",
        "match random random --games x",
        "match random random --sprt 35,0",
        "match random random --sprt 0,35,0.05",
        "match random random --sprt 0,35,0.7,0.05",
        "match random random --bogus",
        "match random randomx",
        "match uct:0 random",
        "match alphabeta:99 random",
        "match random random --openings 9 --opening-turns 1",
        "match random random --openings -1",
        "match policy:/nonexistent/model random",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = s_kz(bad[i], out, sizeof out);
        cr_assert_eq(rc, 2, "kz %s: status %d, output %s", bad[i], rc, out);
        cr_assert_not_null(strstr(out, "kz: "), "kz %s: %s", bad[i], out);
        cr_assert_null(strchr(strchr(out, '\n') + 1, '\n'), "kz %s: one line: %s", bad[i], out);
    }
}

/* Backgammon's pairs have duplicate dice: the two games of a pair (A with
 * each colour, from the start) see the same rolls in the same order, while
 * the next pair's differ; the checker moves differ (random players, seeded
 * per colour). A game without chance keeps a seed per game (its other tests). */
typedef struct dice_log {
    const game_def *g;
    int rolls[4][64];
    int n[4];
} dice_log;

static void s_log_dice(void *ctx, int game, const game_state *s, int action)
{
    dice_log *d = ctx;
    if (game < 4 && d->g->is_chance(s) && d->n[game] < 64)
        d->rolls[game][d->n[game]++] = action;
}

Test(match, backgammon_pairs_play_the_same_dice)
{
    const game_def *g = game_find("backgammon");
    cr_assert_not_null(g);
    player *a = player_random_new(g), *b = player_random_new(g);
    match_config cfg;
    match_config_default(&cfg);
    cfg.games = 4;
    cfg.openings = 0;
    cfg.seed = 7;
    dice_log d = {.g = g};
    cfg.on_action = s_log_dice;
    cfg.ctx = &d;
    int w, dr, l;
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &dr, &l, NULL), 0);
    cr_assert_eq(w + dr + l, 4);
    for (int p = 0; p < 2; p++) {
        int k = d.n[2 * p] < d.n[2 * p + 1] ? d.n[2 * p] : d.n[2 * p + 1];
        cr_assert_geq(k, 8, "pair %d: %d and %d rolls", p, d.n[2 * p], d.n[2 * p + 1]);
        for (int i = 0; i < k; i++)
            cr_assert_eq(d.rolls[2 * p][i], d.rolls[2 * p + 1][i], "pair %d, roll %d", p, i);
    }
    int same = 0;
    for (int i = 0; i < 8; i++)
        same += d.rolls[0][i] == d.rolls[2][i];
    cr_assert_lt(same, 8, "the second pair has the first's dice");
    player_destroy(&a);
    player_destroy(&b);
}
