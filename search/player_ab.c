/* player_ab: the alpha-beta player and greedy (its depth-1, material-only
 * case), over the game's evaluation hooks (game_def.evaluate,
 * must_capture). The definitions are player.h's. Organised as:
 *   1. the evaluation
 *   2. the search and the players */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/player.h"
#include "search/player_internal.h"
#include "common/util.h"

/* ---- 1. evaluation (the game's hooks) ----------------------------------------------------- */

bool player_must_capture(const game_def *g, const game_state *s)
{
    return g->must_capture && g->must_capture(s);
}

long player_evaluate(const game_def *g, const game_state *s, bool mobility)
{
    long v = g->evaluate ? g->evaluate(s) : 0;
    if (mobility) {
        uint16_t legal[GAME_MAX_LEGAL];
        v += (long)PLAYER_EVAL_MOBILITY * g->legal_actions(s, legal);
    }
    return v;
}

/* ---- 2. alpha-beta -------------------------------------------------------------------- */

#define AB_INF (2L * PLAYER_WIN)

typedef struct ab_search {
    const game_def *g;  /* the game */
    bool mobility;      /* evaluation with the mobility term */
    long nodes;         /* states visited */
    game_oracle oracle; /* exact values for the nodes below the root (probe NULL: none) */
    player_tick_fn tick; /* the player's tick (player_set_tick), or NULL */
    void *tick_ctx;
    bool cancelled;     /* the tick said stop: every node returns 0 from now on */
} ab_search;

static long s_ab(ab_search *ab, const game_state *s, int depth, int qleft, int hops, long alpha,
                 long beta);

/* The value of playing action in s for s's mover `me`: the child searched
 * (s_ab's arguments for it) at the same depth while the turn goes on, one
 * less when it ends, seen from me: the same view when me moves again
 * (R18), else the child's negated, its window turned. */
static long s_child(ab_search *ab, const game_state *s, int me, int action, int depth, int qleft,
                    int hops, long alpha, long beta)
{
    const game_def *g = ab->g;
    game_state c = *s;
    g->apply(&c, action);
    int child_depth = g->mid_turn(&c) ? depth : depth - 1;
    if (g->to_move(&c) == me)
        return s_ab(ab, &c, child_depth, qleft, hops, alpha, beta);
    return -s_ab(ab, &c, child_depth, qleft, hops, -beta, -alpha);
}

/* Negamax with alpha-beta over atomic actions. `depth` counts turns still to
 * search, `qleft` the quiescence turns left, `hops` the distance from the
 * root. Returns the value of s from the view of its mover (fail-soft). */
static long s_ab(ab_search *ab, const game_state *s, int depth, int qleft, int hops, long alpha,
                 long beta)
{
    const game_def *g = ab->g;
    ab->nodes++;
    if (ab->tick && (ab->nodes & (PLAYER_TICK_WORK - 1)) == 0 && !ab->cancelled)
        ab->cancelled = ab->tick(ab->tick_ctx);
    if (ab->cancelled)
        return 0;
    game_result r = g->result(s);
    if (r.over) {
        int v = game_result_for(r, g->to_move(s));
        return v == 0 ? 0 : v * (PLAYER_WIN - hops);
    }
    int tbs;
    if (ab->oracle.probe && ab->oracle.probe(ab->oracle.ctx, s, &tbs) == 0) {
        /* The exact result: a won (lost) known position scores below a win
         * (loss) on the board, by the oracle's distance. */
        return tbs == 0 ? 0 : tbs > 0 ? PLAYER_WIN / 2 + 10 * tbs - hops
                                      : -(PLAYER_WIN / 2 - 10 * tbs - hops);
    }
    if (depth == 0) {
        assert(!g->mid_turn(s)); /* depth drops only when a turn ends */
        if (qleft == 0 || !player_must_capture(g, s))
            return player_evaluate(g, s, ab->mobility);
        depth = 1; /* quiescence: the forced captures are searched as one more turn */
        qleft--;
    }
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    int me = g->to_move(s);
    long best = -AB_INF;
    for (int i = 0; i < n; i++) {
        long v = s_child(ab, s, me, legal[i], depth, qleft, hops + 1, alpha, beta);
        if (v > best)
            best = v;
        if (v > alpha)
            alpha = v;
        if (alpha >= beta)
            break;
    }
    return best;
}

/* The root: actions in the given order, the first strictly best one wins. */
static long s_ab_root(ab_search *ab, const game_state *s, int depth, const uint16_t *order, int n,
                      int *action)
{
    const game_def *g = ab->g;
    int me = g->to_move(s);
    long best = -AB_INF;
    *action = order[0];
    for (int i = 0; i < n; i++) {
        long v = s_child(ab, s, me, order[i], depth, PLAYER_QUIESCENCE_TURNS, 1, best, AB_INF);
        if (v > best) {
            best = v;
            *action = order[i];
        }
    }
    return best;
}

long player_alphabeta_search(const game_def *g, const game_state *s, int depth, bool mobility,
                             int *action, long *score)
{
    assert(depth >= 1 && depth <= PLAYER_MAX_DEPTH);
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    assert(n > 0 && !g->result(s).over);
    ab_search ab = {.g = g, .mobility = mobility, .nodes = 1};
    *score = s_ab_root(&ab, s, depth, legal, n, action);
    return ab.nodes;
}

static double s_score_value(long score)
{
    if (score >= PLAYER_WIN / 2)
        return 1;
    if (score <= -PLAYER_WIN / 2)
        return -1;
    return (double)score / (double)(labs(score) + 300);
}

static int s_ab_choose(player *p, const game_state *s, int n, const uint16_t *legal, int *action,
                       player_info *info)
{
    uint16_t order[GAME_MAX_LEGAL];
    memcpy(order, legal, (size_t)n * sizeof *order);
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates: ties are broken at random */
        int j = (int)rng_below(&p->rng, (uint32_t)i + 1);
        uint16_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    ab_search ab = {.g = p->g, .mobility = p->mobility, .nodes = 1, .oracle = p->oracle,
                    .tick = p->tick, .tick_ctx = p->tick_ctx};
    long score = s_ab_root(&ab, s, p->depth, order, n, action);
    if (ab.cancelled)
        return KZ_ECANCELED;
    if (info) {
        info->score = score;
        info->value = s_score_value(score);
        info->work = ab.nodes;
        for (int i = 0; i < n; i++)
            info->share[i] = legal[i] == *action;
    }
    return 0;
}

static const player_ops s_ab_ops = {.choose = s_ab_choose};

player *player_alphabeta_new(const game_def *g, int depth)
{
    assert(depth >= 1 && depth <= PLAYER_MAX_DEPTH);
    char name[32];
    snprintf(name, sizeof name, "alphabeta:%d", depth);
    player *p = player_new_of(g, &s_ab_ops, name);
    p->depth = depth;
    p->mobility = true;
    return p;
}

player *player_greedy_new(const game_def *g)
{
    player *p = player_new_of(g, &s_ab_ops, "greedy");
    p->depth = 1;
    p->mobility = false;
    return p;
}
