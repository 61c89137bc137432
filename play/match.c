/* match: match play, the scorer (score, interval, Elo), the SPRT, and the
 * gate. See match.h for the formulas. */
#include "play/match.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/record.h"
#include "games/backgammon.h"
#include "search/gnubg.h"

/* ---- statistics -------------------------------------------------------------------------- */

double match_elo_from_score(double score)
{
    if (score <= 0)
        return -INFINITY;
    if (score >= 1)
        return INFINITY;
    return -400.0 * log10(1.0 / score - 1.0);
}

double match_score_from_elo(double elo) { return 1.0 / (1.0 + pow(10.0, -elo / 400.0)); }

void match_wilson(int k, int n, double *lo, double *hi)
{
    if (n <= 0) {
        *lo = 0, *hi = 1;
        return;
    }
    double z = 1.959964, p = (double)k / n, d = 1 + z * z / n;
    double c = (p + z * z / (2.0 * n)) / d;
    double h = z * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n)) / d;
    *lo = c - h < 0 ? 0 : c - h;
    *hi = c + h > 1 ? 1 : c + h;
}

/* The scorer for k outcomes x_i = i / (k - 1) (per-game score, ascending) with
 * counts c[0..k-1], each observation worth per_unit games: trinomial (k = 3,
 * games) or pentanomial (k = 5, pairs). See match.h for the formulas. */
static void s_stats(const int *c, int k, int per_unit, match_stats *out)
{
    memset(out, 0, sizeof *out);
    int n = 0;
    double sum = 0;
    for (int i = 0; i < k; i++) {
        assert(c[i] >= 0);
        n += c[i];
        sum += c[i] * ((double)i / (k - 1));
    }
    out->games = n * per_unit;
    if (n == 0) {
        out->score = 0.5;
        out->score_lo = 0;
        out->score_hi = 1;
        out->elo = 0;
        out->elo_lo = -INFINITY;
        out->elo_hi = INFINITY;
        return;
    }
    double s = sum / n, v = 0;
    for (int i = 0; i < k; i++) {
        double d = (double)i / (k - 1) - s;
        v += c[i] * d * d;
    }
    v /= n;
    out->score = s;
    out->sd = sqrt(v / n);
    out->score_lo = fmax(0.0, s - MATCH_Z95 * out->sd);
    out->score_hi = fmin(1.0, s + MATCH_Z95 * out->sd);
    out->elo = match_elo_from_score(s);
    out->elo_lo = match_elo_from_score(out->score_lo);
    out->elo_hi = match_elo_from_score(out->score_hi);
}

void match_stats_compute(int wins, int draws, int losses, match_stats *out)
{
    assert(wins >= 0 && draws >= 0 && losses >= 0);
    const int c[3] = {losses, draws, wins};
    s_stats(c, 3, 1, out);
}

/* The maximum-likelihood distribution over outcomes x[0..k-1] with mean s that
 * is closest to the empirical p (fishtest's MLE_expected): q_i = p_i / (1 + t
 * (x_i - s)) where t solves the secular equation f(t) = sum p_i a_i / (1 + t
 * a_i) = 0, a_i = x_i - s. f falls strictly from +inf to -inf on the interval
 * where every 1 + t a_i > 0, so bisection finds its root. The one solver of
 * both the trinomial and the pentanomial GSPRT. */
static void s_mle(const double *p, const double *x, int k, double s, double *q)
{
    double a[MATCH_PENTA], lo = -INFINITY, hi = INFINITY;
    assert(k <= MATCH_PENTA);
    for (int i = 0; i < k; i++) {
        a[i] = x[i] - s;
        if (a[i] > 0)
            lo = fmax(lo, -1.0 / a[i]);
        else if (a[i] < 0)
            hi = fmin(hi, -1.0 / a[i]);
    }
    KZ_CHECK(isfinite(lo) && isfinite(hi) && lo < hi);
    for (int it = 0; it < 200; it++) {
        double t = 0.5 * (lo + hi);
        if (t <= lo || t >= hi)
            break;
        double f = 0;
        for (int i = 0; i < k; i++)
            f += p[i] * a[i] / (1 + t * a[i]);
        if (f > 0)
            lo = t;
        else
            hi = t;
    }
    double t = 0.5 * (lo + hi);
    for (int i = 0; i < k; i++)
        q[i] = p[i] / (1 + t * a[i]);
}

/* The GSPRT's LLR for counts c[0..k-1] of outcomes x_i = i / (k - 1)
 * (fishtest's LLR_logistic: results_to_pdf, then N' sum p_i log(q1_i / q0_i)). */
static double s_llr(const int *counts, int k, double elo0, double elo1)
{
    assert(elo0 < elo1 && k >= 2 && k <= MATCH_PENTA);
    /* Zeroed only for gcc -O1, which cannot see that k >= 2 fills them. */
    double c[MATCH_PENTA] = {0}, x[MATCH_PENTA] = {0}, p[MATCH_PENTA] = {0};
    double q0[MATCH_PENTA], q1[MATCH_PENTA];
    double n = 0;
    for (int i = 0; i < k; i++) {
        assert(counts[i] >= 0);
        c[i] = counts[i] == 0 ? MATCH_REGULARISE : counts[i];
        x[i] = (double)i / (k - 1);
        n += c[i];
    }
    for (int i = 0; i < k; i++)
        p[i] = c[i] / n;
    s_mle(p, x, k, match_score_from_elo(elo0), q0);
    s_mle(p, x, k, match_score_from_elo(elo1), q1);
    double llr = 0;
    for (int i = 0; i < k; i++)
        llr += p[i] * (log(q1[i]) - log(q0[i]));
    return n * llr;
}

double match_llr(int wins, int draws, int losses, double elo0, double elo1)
{
    assert(wins >= 0 && draws >= 0 && losses >= 0 && elo0 < elo1);
    const int c[3] = {losses, draws, wins};
    return s_llr(c, 3, elo0, elo1);
}

void match_sprt_bounds(double alpha, double beta, double *lower, double *upper)
{
    assert(alpha > 0 && alpha < 1 && beta > 0 && beta < 1);
    *lower = log(beta / (1 - alpha));
    *upper = log((1 - beta) / alpha);
}

/* The SPRT's decision for an LLR. */
static int s_sprt_decide(double l, double alpha, double beta)
{
    double lower, upper;
    match_sprt_bounds(alpha, beta, &lower, &upper);
    if (l >= upper)
        return GATE_ACCEPT;
    if (l <= lower)
        return GATE_REJECT;
    return GATE_CONTINUE;
}

int match_sprt_decide(int wins, int draws, int losses, double elo0, double elo1, double alpha,
                      double beta, double *llr)
{
    double l = match_llr(wins, draws, losses, elo0, elo1);
    if (llr)
        *llr = l;
    return s_sprt_decide(l, alpha, beta);
}

/* ---- pentanomial ------------------------------------------------------------------------- */

void match_penta_add(int penta[MATCH_PENTA], int r1, int r2)
{
    assert(r1 >= -1 && r1 <= 1 && r2 >= -1 && r2 <= 1);
    penta[2 + r1 + r2]++;
}

void match_penta_stats(const int penta[MATCH_PENTA], match_stats *out)
{
    s_stats(penta, MATCH_PENTA, 2, out);
}

double match_penta_llr(const int penta[MATCH_PENTA], double elo0, double elo1)
{
    return s_llr(penta, MATCH_PENTA, elo0, elo1);
}

int match_penta_sprt_decide(const int penta[MATCH_PENTA], double elo0, double elo1, double alpha,
                            double beta, double *llr)
{
    double l = match_penta_llr(penta, elo0, elo1);
    if (llr)
        *llr = l;
    return s_sprt_decide(l, alpha, beta);
}

/* ---- the gate ---------------------------------------------------------------------------- */

void gate_config_default(gate_config *c)
{
    *c = (gate_config){.mode = GATE_MODE_SPEC, .games = 50, .threshold = 0.55, .sprt = false,
                       .elo0 = 0, .elo1 = 35, .alpha = 0.05, .beta = 0.05};
}

static const char *const s_gate_mode_names[GATE_MODES] = {"spec", "sprt", "none"};

const char *gate_mode_name(gate_mode m)
{
    return (unsigned)m < GATE_MODES ? s_gate_mode_names[m] : "?";
}

int gate_mode_parse(const char *name, gate_mode *out)
{
    for (int m = 0; m < GATE_MODES; m++)
        if (name && strcmp(name, s_gate_mode_names[m]) == 0) {
            *out = (gate_mode)m;
            return 0;
        }
    return KZ_EINVAL;
}

bool gate_uses_pairs(const gate_config *c) { return c->mode == GATE_MODE_SPRT; }

#define S_STR2(x) #x
#define S_STR(x) S_STR2(x)

/* The SPRT parameters' check: a reason, or NULL. */
static const char *s_gate_check_sprt(const gate_config *c)
{
    if (!(c->elo0 < c->elo1))
        return "gate: SPRT elo0 must be below elo1";
    if (!(fabs(c->elo0) <= GATE_MAX_ELO && fabs(c->elo1) <= GATE_MAX_ELO))
        return "gate: SPRT elo0 and elo1 must be within +/-" S_STR(GATE_MAX_ELO);
    if (!(c->alpha > 0 && c->alpha < 1 && c->beta > 0 && c->beta < 1))
        return "gate: SPRT alpha and beta must be in (0, 1)";
    return NULL;
}

int gate_config_check(const gate_config *c, char *err, size_t errlen)
{
    const char *why = NULL;
    switch (c->mode) {
    case GATE_MODE_SPEC:
        if (c->games < 1)
            why = "gate: games must be at least 1";
        else if (!(c->threshold >= 0 && c->threshold < 1))
            why = "gate: threshold must be in [0, 1)";
        else if (c->sprt)
            why = s_gate_check_sprt(c);
        break;
    case GATE_MODE_SPRT:
        if (c->games < 2 || c->games % 2)
            why = "gate: in sprt mode games (the cap) must be even and at least 2: pairs of games";
        else if (c->sprt)
            why = "gate: the sprt flag belongs to spec mode (sprt mode is always an SPRT)";
        else
            why = s_gate_check_sprt(c);
        break;
    case GATE_MODE_NONE:
        break;
    default:
        why = "gate: unknown mode (spec, sprt or none)";
    }
    return why ? err_set(err, errlen, KZ_EINVAL, "%s", why) : 0;
}

#define GATE_EPS 1e-9

/* The fixed rule over `total` games once `n` <= total are played. */
static int s_gate_fixed(const gate_config *c, int wins, int draws, int n)
{
    int total = n > c->games ? n : c->games;
    double half_points = 2.0 * wins + draws;        /* already won, in half points */
    double need = 2.0 * c->threshold * total;       /* must be exceeded */
    double best = half_points + 2.0 * (total - n);  /* if every remaining game is won */
    if (half_points > need + GATE_EPS)
        return GATE_ACCEPT;
    if (best <= need + GATE_EPS)
        return GATE_REJECT;
    return GATE_CONTINUE;
}

int gate_decide(const gate_config *c, int wins, int draws, int losses)
{
    assert(c && gate_config_check(c, NULL, 0) == 0 && wins >= 0 && draws >= 0 && losses >= 0);
    assert(c->mode != GATE_MODE_SPRT); /* pairs: gate_decide_pairs */
    if (c->mode == GATE_MODE_NONE)
        return GATE_ACCEPT;
    int n = wins + draws + losses;
    if (c->sprt) {
        int d = match_sprt_decide(wins, draws, losses, c->elo0, c->elo1, c->alpha, c->beta, NULL);
        if (d != GATE_CONTINUE || n < c->games)
            return d;
    }
    return s_gate_fixed(c, wins, draws, n);
}

int gate_decide_pairs(const gate_config *c, const int penta[MATCH_PENTA])
{
    assert(c && gate_config_check(c, NULL, 0) == 0);
    assert(c->mode != GATE_MODE_SPEC); /* games: gate_decide */
    if (c->mode == GATE_MODE_NONE)
        return GATE_ACCEPT;
    long pairs = 0, half_points = 0; /* a pair in penta[k] is worth k half points */
    for (int k = 0; k < MATCH_PENTA; k++) {
        assert(penta[k] >= 0);
        pairs += penta[k];
        half_points += (long)k * penta[k];
    }
    int d = match_penta_sprt_decide(penta, c->elo0, c->elo1, c->alpha, c->beta, NULL);
    if (d != GATE_CONTINUE || 2 * pairs < c->games)
        return d;
    return half_points > 2 * pairs ? GATE_ACCEPT : GATE_REJECT; /* score > 1/2 of 4 per pair */
}

/* ---- playing ----------------------------------------------------------------------------- */

void match_config_default(match_config *c)
{
    *c = (match_config){.games = 100, .openings = 0, .opening_turns = 0, .seed = 1,
                        .sprt = false, .elo0 = 0, .elo1 = 35, .alpha = 0.05, .beta = 0.05};
}

/* Whether h is among the n hashes in seen; adds it if not (seen has room). */
static bool s_seen(uint64_t *seen, int *n, uint64_t h)
{
    for (int i = 0; i < *n; i++)
        if (seen[i] == h)
            return true;
    seen[(*n)++] = h;
    return false;
}

static int s_openings(const game_def *g, int k, int turns, uint64_t seed, game_state *out)
{
    rng_t rng;
    rng_seed(&rng, seed);
    /* Every distinct position met is judged once; the search gives up when
     * OPENING_PATIENCE draws in a row bring no position not met before. */
    enum { OPENING_PATIENCE = 500 };
    int max_seen = 50 * k + 2000, n_seen = 0, found = 0, stale = 0;
    uint64_t *seen = xmalloc((size_t)max_seen * sizeof *seen);
    uint16_t legal[GAME_MAX_LEGAL];
    while (found < k && stale < OPENING_PATIENCE && n_seen < max_seen) {
        game_state s;
        g->init(&s);
        bool ok = true;
        for (int t = 0; t < turns && ok; t++) {
            do {
                if (g->result(&s).over) {
                    ok = false;
                    break;
                }
                int n = g->legal_actions(&s, legal);
                g->apply(&s, legal[rng_below(&rng, (uint32_t)n)]);
            } while (g->mid_turn(&s));
        }
        if (!ok || g->result(&s).over || s_seen(seen, &n_seen, g->hash(&s))) {
            stale++;
            continue;
        }
        stale = 0;
        /* Level: the greedy value (material after one turn and the forced
         * captures that follow) is even. */
        int a;
        long score;
        player_alphabeta_search(g, &s, 1, false, &a, &score);
        if (score == 0)
            out[found++] = s;
    }
    free(seen);
    return found == k ? 0 : KZ_EINVAL;
}

int match_openings(const game_def *g, int k, int turns, uint64_t seed, game_state *out)
{
    assert(k >= 1 && turns >= 0 && turns <= MATCH_MAX_OPENING_TURNS);
    if (turns > 0)
        return s_openings(g, k, turns, seed, out);
    for (int t = 1; t <= MATCH_MAX_OPENING_TURNS; t++)
        if (s_openings(g, k, t, seed, out) == 0)
            return 0;
    return KZ_EINVAL;
}

/* The judge's verdict on the whole move from turn start t to s (mover p). */
static int s_judge(gnubg *judge, const game_def *g, const game_state *t, const game_state *s,
                   int p, match_game *gm)
{
    uint8_t own[25], opp[25], tmp[25];
    backgammon_board(s, own, opp);
    if (g->to_move(s) != p) { /* the turn passed: the board from p's view */
        memcpy(tmp, own, 25);
        memcpy(own, opp, 25);
        memcpy(opp, tmp, 25);
    }
    char after[16], err[300];
    backgammon_position_id(own, opp, after);
    float loss;
    int n;
    int rc = gnubg_move_loss(judge, t, after, &loss, &n, err, sizeof err);
    if (rc) {
        log_error("match: the gnubg judge: %s", err);
        return rc;
    }
    if (n > 1) {
        gm->loss[p] += loss;
        gm->decisions[p]++;
        if (!backgammon_contact(t)) {
            gm->race_loss[p] += loss;
            gm->race_decisions[p]++;
        }
    }
    return 0;
}

static int s_play_game(const game_def *g, player *players[2], const game_state *start,
                       uint64_t seed, gnubg *judge, const match_config *cfg,
                       game_result *result, int *plies, int *actions, match_game *gm)
{
    game_state s = *start, turn = *start;
    int turn_mover = -1;
    player_new_game(players[0], seed);
    player_new_game(players[1], mix64(seed ^ 0x9e3779b97f4a7c15ull));
    int hops = 0;
    game_result r;
    rng_t dice; /* a game with chance: its dice from the game's seed (game.h) */
    game_dice_seed(&dice, seed);
    while (!(r = g->result(&s)).over) {
        int a;
        if (g->is_chance && g->is_chance(&s)) {
            a = game_chance_draw(g, &s, &dice);
            if (cfg && cfg->on_action)
                cfg->on_action(cfg->ctx, gm->index, &s, a);
            player_observe(players[0], &s, a);
            player_observe(players[1], &s, a);
            g->apply(&s, a);
            continue;
        }
        if (judge && !g->mid_turn(&s)) {
            turn = s; /* a fresh roll: its whole move is judged when it is played */
            turn_mover = g->to_move(&s);
        }
        int rc = player_choose(players[g->to_move(&s)], &s, &a, NULL);
        if (rc != 0)
            return rc;
        if (!game_is_legal(g, &s, a)) {
            log_error("match: %s chose the illegal action %d", player_spec_name(players[g->to_move(&s)]),
                      a);
            return KZ_EILLEGAL;
        }
        if (cfg && cfg->on_action)
            cfg->on_action(cfg->ctx, gm->index, &s, a);
        player_observe(players[0], &s, a);
        player_observe(players[1], &s, a);
        g->apply(&s, a);
        hops++;
        if (judge && turn_mover >= 0 &&
            (g->result(&s).over || g->is_chance(&s) || !g->mid_turn(&s))) {
            rc = s_judge(judge, g, &turn, &s, turn_mover, gm);
            if (rc)
                return rc;
            turn_mover = -1;
        }
    }
    *result = r;
    if (plies)
        *plies = g->ply(&s) - g->ply(start);
    if (actions)
        *actions = hops;
    return 0;
}

int match_play_game(const game_def *g, player *players[2], const game_state *start,
                    uint64_t seed, game_result *result, int *plies, int *actions)
{
    match_game gm = {.index = 0};
    return s_play_game(g, players, start, seed, NULL, NULL, result, plies, actions, &gm);
}

int match_play_judged(const game_def *g, player *players[2], const game_state *start,
                      uint64_t seed, gnubg *judge, match_game *out)
{
    *out = (match_game){.index = 0};
    return s_play_game(g, players, start, seed, g == &backgammon_game ? judge : NULL, NULL,
                       &out->result, &out->plies, &out->actions, out);
}

/* match_judge_record's replay: the turn in hand and the judged side. */
typedef struct judge_replay {
    const game_def *g;
    gnubg *judge;
    int side;               /* the player id judged */
    game_state turn;        /* the fresh roll of the turn in hand */
    int turn_mover;         /* its mover, -1 none */
    match_game *out;
} judge_replay;

static int s_judge_state(void *ctx, const game_state *s, int k, const record_move *m, int z)
{
    judge_replay *j = ctx;
    const game_def *g = j->g;
    (void)k;
    (void)z;
    if (g->is_chance && g->is_chance(s))
        return 0;
    if (!g->mid_turn(s)) {
        j->turn = *s;
        j->turn_mover = g->to_move(s);
    }
    game_state t = *s;
    g->apply(&t, m->action);
    if (j->turn_mover >= 0 && (g->result(&t).over || g->is_chance(&t) || !g->mid_turn(&t))) {
        int rc = j->turn_mover == j->side
                     ? s_judge(j->judge, g, &j->turn, &t, j->turn_mover, j->out)
                     : 0;
        j->turn_mover = -1;
        return rc;
    }
    return 0;
}

int match_judge_record(const game_def *g, const game_record *r, int side, gnubg *judge,
                       match_game *out, char *err, size_t errlen)
{
    *out = (match_game){.index = 0};
    if (g != &backgammon_game || side < 0 || side > 1)
        return err_set(err, errlen, KZ_EINVAL, "only a backgammon record's player 0 or 1 is "
                       "judged");
    judge_replay j = {.g = g, .judge = judge, .side = side, .turn_mover = -1, .out = out};
    int rc = record_replay(g, r, s_judge_state, &j, err, errlen);
    if (rc == KZ_EIO)
        snprintf(err, errlen, "the gnubg judge failed (see the log)");
    if (rc == 0) {
        out->result = (game_result){.over = true, .winner = r->winner, .reason = r->reason};
        out->plies = (int)r->plies;
    }
    return rc;
}

void match_ratio_add(match_ratio *r, double x, double y)
{
    r->n++;
    r->x += x;
    r->y += y;
    r->xx += x * x;
    r->yy += y * y;
    r->xy += x * y;
}

void match_ratio_stats(const match_ratio *r, double *ratio, double *half)
{
    double R = r->y != 0 ? r->x / r->y : 0;
    *ratio = R;
    *half = 0;
    if (r->n < 2 || r->y == 0)
        return;
    double ybar = r->y / r->n;
    double ss = r->xx - 2 * R * r->xy + R * R * r->yy; /* sum (x - R y)^2 */
    double var = (ss > 0 ? ss : 0) / ((double)r->n * (r->n - 1) * ybar * ybar);
    *half = MATCH_Z95 * sqrt(var);
}

int match_run(const game_def *g, player *a, player *b, const match_config *cfg, int *wins,
              int *draws, int *losses, int *decision)
{
    *wins = *draws = *losses = 0;
    if (decision)
        *decision = GATE_CONTINUE;
    if (cfg->games < 1 || cfg->openings < 0 || cfg->openings > MATCH_MAX_OPENINGS ||
        cfg->opening_turns < 0 || cfg->opening_turns > MATCH_MAX_OPENING_TURNS)
        return KZ_EINVAL;
    if (cfg->sprt && !(cfg->elo0 < cfg->elo1 && cfg->alpha > 0 && cfg->alpha < 1 &&
                       cfg->beta > 0 && cfg->beta < 1))
        return KZ_EINVAL;
    int k = cfg->openings;
    game_state *openings = xmalloc((size_t)(k > 0 ? k : 1) * sizeof *openings);
    int rc = 0;
    if (k > 0 && cfg->book) {
        memcpy(openings, cfg->book, (size_t)k * sizeof *openings);
    } else if (k > 0) {
        rc = match_openings(g, k, cfg->opening_turns, mix64(cfg->seed ^ 0x6f70656eull), openings);
        if (rc != 0)
            goto out;
    } else {
        g->init(&openings[0]);
    }
    for (int i = 0; i < cfg->games; i++) {
        match_game gm = {.index = i, .opening = k > 0 ? (i / 2) % k : -1, .a_player = i % 2};
        player *players[2];
        players[gm.a_player] = a;
        players[1 - gm.a_player] = b;
        const game_state *start = &openings[k > 0 ? gm.opening : 0];
        int unit = g->is_chance ? i / 2 : i; /* with chance: a pair's games, one seed (dice) */
        rc = s_play_game(g, players, start, mix64(cfg->seed + 0x1000003ull * (uint64_t)(unit + 1)),
                         g == &backgammon_game ? cfg->judge : NULL, cfg, &gm.result, &gm.plies,
                         &gm.actions, &gm);
        if (rc != 0)
            goto out;
        gm.a_result = game_result_for(gm.result, gm.a_player);
        *wins += gm.a_result > 0;
        *draws += gm.a_result == 0;
        *losses += gm.a_result < 0;
        if (cfg->on_game)
            cfg->on_game(cfg->ctx, &gm, *wins, *draws, *losses);
        if (cfg->sprt) {
            int d = match_sprt_decide(*wins, *draws, *losses, cfg->elo0, cfg->elo1, cfg->alpha,
                                      cfg->beta, NULL);
            if (decision)
                *decision = d;
            if (d != GATE_CONTINUE)
                break;
        }
    }
out:
    free(openings);
    return rc;
}
