/* recheck: a game record's searches replayed and compared. See recheck.h.
 *
 * The replay drives batches of one tree exactly as play/driver.c drives
 * one slot's trees with tree_per_side (kz-worker's settings; the same calls
 * in the same order, so the same generator draws): a self-play game has one
 * tree, reset the first time each player is to move and advanced after every
 * move, with a playout cap draw before each reset and each advance; an arena
 * game has one tree per colour, each reset the first time its player is to
 * move and then brought along lazily through the actions played since (a
 * fresh root after LAG_MAX of them). recheck_play plays through the driver
 * itself, so a change in driver.c's order of calls must be made here too:
 * the tests of honest games (tests/system/test_forge.c: recheck_play's games and a
 * real worker's) fail otherwise. */
#include "play/recheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "play/driver.h"
#include "nn/kernel.h"
#include "nn/model.h"

#define LAG_MAX 64 /* driver.c's: actions a dormant tree may lag behind */

bool recheck_evaluator_usable(const char *path, int *precision)
{
    if (!strcmp(path, "avx512-fp32") && kernel_cpu_has(KERNEL_AVX512)) {
        *precision = MODEL_FP32;
        return true;
    }
    if (!strcmp(path, "avx512-bf16") && kernel_cpu_has(KERNEL_AVX512) &&
        kernel_cpu_has(KERNEL_BF16)) {
        *precision = MODEL_BF16;
        return true;
    }
    return false;
}

bool recheck_supported(const game_record *r, char *why, size_t whylen)
{
    const record_settings *s = &r->settings;
    int precision;
    const char *no = NULL;
    if (r->kind != RECORD_SELFPLAY && r->kind != RECORD_ARENA)
        no = "a rating game";
    else if (!s->evaluator[0])
        no = "no evaluator in the record's settings";
    else if (!recheck_evaluator_usable(s->evaluator, &precision))
        no = s->evaluator[0] == 'o' ? "the OpenBLAS arithmetic (it depends on batch and CPU)"
                                    : "an arithmetic this coordinator cannot compute the same";
    else if (s->tb_search || s->tb_adjudicate)
        no = "played with endgame tables";
    else if (s->simulations < 1 || s->leaves_per_tree < 1)
        no = "no search settings";
    if (no) {
        snprintf(why, whylen, "%s", no);
        return false;
    }
    mcts_settings ms = recheck_settings(s, r->kind);
    char err[160];
    if (mcts_settings_check(&ms, err, sizeof err)) {
        snprintf(why, whylen, "search settings: %s", err);
        return false;
    }
    return true;
}

mcts_settings recheck_settings(const record_settings *rs, int kind)
{
    mcts_settings s = mcts_settings_default();
    s.simulations = rs->simulations;
    s.c_puct = rs->c_puct;
    s.dirichlet_alpha = rs->dirichlet_alpha;
    s.dirichlet_epsilon = rs->dirichlet_epsilon;
    s.temperature_plies = rs->temperature_plies;
    s.fpu = rs->fpu;
    s.leaves_per_tree = rs->leaves_per_tree;
    s.reuse_tree = rs->reuse_tree;
    s.forced_playouts_k = rs->forced_playouts_k;
    s.policy_pruning = rs->policy_pruning;
    s.root_mode = rs->root_mode;
    if (rs->root_mode == MCTS_ROOT_GUMBEL) {
        s.gumbel_m = rs->gumbel_m;
        s.gumbel_c_visit = rs->gumbel_c_visit;
        s.gumbel_c_scale = rs->gumbel_c_scale;
    }
    /* driver.c: Gumbel noise in self-play only. */
    s.gumbel_noise = kind == RECORD_SELFPLAY;
    /* One tree touches few entries; the cache never changes a result (mcts.h). */
    s.cache_entries = 4096;
    s.tree_nodes = 0;
    return s;
}

int recheck_sample(const game_record *r, uint32_t one_in, rng_t *rng)
{
    int last = -1;
    if (one_in == 0)
        return -1;
    /* Each searched state with probability p = 1 / one_in: the gaps between
     * picks are geometric, so one draw per pick (and one per game) instead
     * of one per state keeps the ingest path's cost low. */
    double lq = one_in > 1 ? log1p(-1.0 / one_in) : 0;
    double skip = one_in > 1 ? floor(log(1.0 - rng_uniform(rng)) / lq) : 0;
    for (int k = 0; k < r->n_moves; k++) {
        if (r->moves[k].forced || (r->moves[k].policy_n == 0 && !r->moves[k].fast_search))
            continue; /* not searched: forced, or nature's (dice) */
        if (skip >= 1) {
            skip -= 1;
            continue;
        }
        last = k;
        skip = one_in > 1 ? floor(log(1.0 - rng_uniform(rng)) / lq) : 0;
    }
    return last;
}

/* The replay of one game (the worker's slot, one tree per network). */
typedef struct replay {
    const game_def *g;          /* the game */
    const game_record *r;       /* the record */
    mcts_batch *b[2];           /* each player's batch (equal when one network plays both) */
    bool shared;                /* b[0] == b[1] (self-play) */
    bool tree_on[2];            /* the player's tree has a position */
    uint16_t lag[2][LAG_MAX];   /* actions played since the tree's root */
    int n_lag[2];               /* entries of lag */
    rng_t rng;                  /* the slot's generator: move sampling, playout cap draws */
    bool pcr;                   /* playout cap randomization */
    bool fast;                  /* the current move's search is a fast one */
    int full_sims;              /* the full searches' simulations */
    int fast_sims;              /* the fast searches' simulations */
    int temperature_plies;      /* sample while the turn count is below this */
} replay;

/* driver.c s_pcr_draw. */
static void s_pcr_draw(replay *rp)
{
    rp->fast = rng_uniform(&rp->rng) >= rp->r->settings.pcr_full_fraction;
    mcts_batch_set_budget(rp->b[0], 0, rp->fast ? rp->fast_sims : rp->full_sims, !rp->fast);
}

/* driver.c s_catch_up (tree_per_side). */
static void s_catch_up(replay *rp, const game_state *st, int p)
{
    mcts_batch *b = rp->b[p];
    if (!rp->tree_on[p]) {
        if (rp->pcr)
            s_pcr_draw(rp);
        mcts_batch_reset(b, 0, st, mix64(rp->r->seed ^ (uint64_t)(p + 1)));
        rp->tree_on[p] = true;
        rp->n_lag[p] = 0;
        return;
    }
    for (int k = 0; k < rp->n_lag[p]; k++)
        mcts_batch_advance(b, 0, rp->lag[p][k]);
    rp->n_lag[p] = 0;
}

/* driver.c s_lag. */
static void s_lag(replay *rp, int p, int action)
{
    if (!rp->tree_on[p])
        return;
    if (rp->n_lag[p] == LAG_MAX) {
        rp->tree_on[p] = false;
        return;
    }
    rp->lag[p][rp->n_lag[p]++] = (uint16_t)action;
}

/* Compares state k's search (the move chosen from it) with the record: 0 when
 * they agree, else 1 with the difference in out->detail. */
static int s_compare(const replay *rp, int k, const mcts_result *res, int action, bool fast,
                     recheck_report *out)
{
    const record_move *m = &rp->r->moves[k];
    const uint16_t *pa = rp->r->policy_actions + m->policy_off;
    const float *pp = rp->r->policy + m->policy_off;
    char *d = out->detail;
    size_t dl = sizeof out->detail;
    if (m->forced != res->forced) {
        snprintf(d, dl, "state %d: forced %d, the search says %d", k, m->forced, res->forced);
        return 1;
    }
    if (m->action != action) {
        snprintf(d, dl, "state %d: action %u played, the search plays %d", k, m->action, action);
        return 1;
    }
    if (res->forced) {
        if (m->root_value != res->value) {
            snprintf(d, dl, "state %d (forced): root value %.9g, the search gives %.9g", k,
                     (double)m->root_value, (double)res->value);
            return 1;
        }
        return 0;
    }
    if (m->fast_search != fast) {
        snprintf(d, dl, "state %d: fast search %d, the playout cap draw says %d", k,
                 m->fast_search, fast);
        return 1;
    }
    int n = 0;
    for (int j = 0; j < res->n; j++) {
        if (!(res->target[j] > 0))
            continue;
        if (n >= m->policy_n || pa[n] != res->actions[j] || pp[n] != res->target[j]) {
            snprintf(d, dl, "state %d: policy entry %d is %u:%.6g, the search gives %u:%.6g", k,
                     n, n < m->policy_n ? pa[n] : 0, n < m->policy_n ? (double)pp[n] : 0.0,
                     res->actions[j], (double)res->target[j]);
            return 1;
        }
        n++;
    }
    if (n != m->policy_n) {
        snprintf(d, dl, "state %d: %u policy entries, the search gives %d", k, m->policy_n, n);
        return 1;
    }
    if (m->root_value != res->value) {
        snprintf(d, dl, "state %d: root value %.9g, the search gives %.9g", k,
                 (double)m->root_value, (double)res->value);
        return 1;
    }
    return 0;
}

/* Step 2 of a check: every state up to upto: search, choose, compare with
 * r's move, play. 0 or the evaluator's error; a difference sets rep's
 * verdict and state. */
static int s_run(replay *rp, game_state *st, int upto, recheck_report *rep)
{
    const game_def *g = rp->g;
    for (int k = 0; k <= upto; k++) {
        int p = g->to_move(st);
        mcts_batch *b = rp->b[p];
        if (g->is_chance && g->is_chance(st)) {
            /* driver.c: nature's move (the validator checked it against the
             * seed), the trees following. */
            int action = rp->r->moves[k].action;
            g->apply(st, action);
            if (rp->shared) {
                if (rp->tree_on[0] || rp->tree_on[1])
                    mcts_batch_advance(b, 0, action);
            } else {
                s_lag(rp, 0, action);
                s_lag(rp, 1, action);
            }
            continue;
        }
        s_catch_up(rp, st, p);
        if (mcts_batch_status(b, 0) == MCTS_SEARCHING) {
            int rc = mcts_batch_run(b);
            if (rc)
                return rc;
            rep->searches++;
        }
        if (mcts_batch_status(b, 0) != MCTS_DONE) {
            snprintf(rep->detail, sizeof rep->detail, "state %d: the game is over", k);
            rep->verdict = RECHECK_FORGED;
            rep->state = k;
            return 0;
        }
        mcts_result res;
        mcts_batch_result(b, 0, &res);
        bool tau_one = g->ply(st) < rp->temperature_plies && !rp->fast;
        int action = mcts_result_choose(&res, tau_one, &rp->rng);
        rep->states += !res.forced;
        if (s_compare(rp, k, &res, action, rp->fast && !res.forced, rep)) {
            rep->verdict = RECHECK_FORGED;
            rep->state = k;
            return 0;
        }
        /* Play it and move the trees along, as the worker does. */
        g->apply(st, action);
        if (g->result(st).over)
            break;
        if (rp->shared) {
            if (rp->pcr)
                s_pcr_draw(rp);
            mcts_batch_advance(b, 0, action);
        } else {
            int q = g->to_move(st);
            if (q == p)
                mcts_batch_advance(b, 0, action);
            else
                s_lag(rp, p, action);
            s_lag(rp, 1 - p, action);
        }
    }
    rep->verdict = RECHECK_MATCH;
    return 0;
}

/* Step 1: the batches (one per network, as the worker's engines) and the
 * start position. 0, KZ_ENOMEM, or 1 with rep saying why it cannot be done. */
static int s_setup(replay *rp, const evaluator ev[2], game_state *st, recheck_report *rep)
{
    const game_record *r = rp->r;
    mcts_settings s = recheck_settings(&r->settings, r->kind);
    rp->shared = ev[0].ctx == ev[1].ctx && ev[0].run == ev[1].run;
    rp->b[0] = mcts_batch_new(rp->g, &s, 1, ev[0]);
    rp->b[1] = rp->shared ? rp->b[0] : mcts_batch_new(rp->g, &s, 1, ev[1]);
    if (!rp->b[0] || !rp->b[1])
        return KZ_ENOMEM;
    rng_seed(&rp->rng, r->seed);
    rp->pcr = r->kind == RECORD_SELFPLAY && r->settings.fast_simulations > 0;
    rp->full_sims = s.simulations;
    rp->fast_sims = r->settings.fast_simulations < s.simulations ? r->settings.fast_simulations
                                                                 : s.simulations;
    rp->temperature_plies = s.temperature_plies;
    rep->verdict = RECHECK_UNCHECKABLE;
    if (rp->pcr && !rp->shared) {
        snprintf(rep->detail, sizeof rep->detail, "playout cap randomization in a game of "
                                                  "two networks");
        return 1;
    }
    if (r->start_position[0]) {
        char perr[128];
        if (rp->g->parse_position(st, r->start_position, perr, sizeof perr)) {
            snprintf(rep->detail, sizeof rep->detail, "start position: %s", perr);
            return 1;
        }
    } else {
        rp->g->init(st);
    }
    return 0;
}

static void s_teardown(replay *rp)
{
    if (rp->b[1] != rp->b[0])
        mcts_batch_destroy(&rp->b[1]);
    mcts_batch_destroy(&rp->b[0]);
}

int recheck_record(const game_def *g, const game_record *r, const evaluator ev[2], int upto,
                   recheck_report *out)
{
    memset(out, 0, sizeof *out);
    out->state = -1;
    if (upto < 0 || upto >= r->n_moves)
        upto = r->n_moves - 1;
    if (!recheck_supported(r, out->detail, sizeof out->detail)) {
        out->verdict = RECHECK_UNCHECKABLE;
        return 0;
    }
    replay rp = {.g = g, .r = r};
    game_state st;
    int rc = s_setup(&rp, ev, &st, out);
    if (rc == 0)
        rc = s_run(&rp, &st, upto, out);
    s_teardown(&rp);
    return rc == 1 ? 0 : rc;
}

/* recheck_play's callback: the driver's record of the game, copied. */
static int s_played(void *ctx, const game_record *r, uint32_t arena_slot)
{
    (void)arena_slot;
    return record_copy(ctx, r);
}

int recheck_play(const game_def *g, game_record *r, const evaluator ev[2])
{
    char why[200];
    if (!recheck_supported(r, why, sizeof why))
        return KZ_EINVAL;
    /* The driver with one slot, set as kz-worker sets it, for r's game. */
    const record_settings *rs = &r->settings;
    driver_config dc = driver_config_default();
    dc.play.parallel = 1;
    dc.play.search = recheck_settings(rs, r->kind);
    dc.play.pcr_full_fraction = rs->fast_simulations > 0 ? rs->pcr_full_fraction : 1;
    dc.play.pcr_fast_simulations = rs->fast_simulations > 0 ? rs->fast_simulations : 1;
    dc.arena_temperature_plies = rs->temperature_plies;
    dc.tree_per_side = true;
    char err[200];
    driver *d = driver_new(g, &dc, err, sizeof err);
    game_record *played = record_new();
    if (!d || !played) {
        driver_destroy(&d);
        record_destroy(&played);
        return d ? KZ_ENOMEM : KZ_EINVAL;
    }
    bool shared = ev[0].ctx == ev[1].ctx && ev[0].run == ev[1].run;
    driver_net net[2] = {{.ev = ev[0], .arith = rs->evaluator},
                         {.ev = ev[1], .arith = rs->evaluator}};
    driver_game spec = {.kind = r->kind,
                        .net = {&net[0], shared ? &net[0] : &net[1]},
                        .model_version = r->model_version,
                        .opponent_version = r->opponent_version,
                        .candidate_player = r->candidate_player,
                        .simulations = rs->simulations,
                        .start_position = r->start_position,
                        .seed = r->seed};
    int rc = driver_start(d, &spec, err, sizeof err);
    while (rc == 0 && driver_in_play(d) > 0)
        rc = driver_step(d, s_played, played);
    driver_destroy(&d);
    if (rc == 0 && played->n_moves == 0)
        rc = KZ_EINVAL; /* it did not finish (cannot happen: a game always ends, R21) */
    /* r keeps its id, worker, times and versions; the game is the driver's. */
    for (int k = 0; rc == 0 && k < played->n_moves; k++) {
        const record_move *m = &played->moves[k];
        if (k == 0) {
            r->n_moves = 0;
            r->n_policy = 0;
        }
        rc = record_add_move(r, m->action, m->forced, m->root_value, m->policy_n,
                             played->policy_actions + m->policy_off,
                             played->policy + m->policy_off);
        if (rc == 0)
            r->moves[k].fast_search = m->fast_search;
    }
    if (rc == 0) {
        r->settings = played->settings;
        r->winner = played->winner;
        r->reason = played->reason;
        r->plies = played->plies;
        snprintf(r->game, sizeof r->game, "%s", g->name);
    }
    record_destroy(&played);
    return rc;
}
