/* player: the player interface and the baseline players (random, greedy,
 * UCT, alpha-beta), with hooks for the network players. See player.h for
 * the definitions each player follows; this file is organised as:
 *   1. the interface (a small table of operations per kind)
 *   2. the evaluation, from the game's hooks (game_def.evaluate, must_capture)
 *   3. alpha-beta (and greedy, its depth-1 material-only case)
 *   4. UCT with random playouts
 *   5. random
 *   6. the network players (raw policy; PUCT search of mcts.h)
 *   7. spec parsing */
#include "player.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "util.h"

/* ---- 1. the interface ------------------------------------------------------------------- */

typedef struct player_ops {
    /* Chooses an action in s (not over, at least two legal actions: the
     * single-action case never reaches a player's choose). */
    int (*choose)(player *p, const game_state *s, int n, const uint16_t *legal, int *action,
                  player_info *info);
    /* Frees the kind's own memory (p->impl); may be NULL. */
    void (*destroy_impl)(player *p);
    /* Sees an action played in s (player_observe); may be NULL. */
    void (*observe)(player *p, const game_state *s, int action);
    /* Starts a new game (after the reseed); may be NULL. */
    void (*new_game)(player *p);
} player_ops;

struct player {
    const game_def *g;        /* the game, borrowed */
    const player_ops *ops;    /* the kind's operations */
    char name[PLAYER_SPEC_MAX]; /* the spec that rebuilds this player */
    rng_t rng;                /* reseeded by player_new_game */
    void *impl;               /* the kind's own state, owned */
    int depth;                /* alpha-beta depth in turns */
    bool mobility;            /* alpha-beta evaluation includes mobility */
    const tb_set *tb;         /* endgame tables for the search (borrowed), or NULL */
};

static player *s_player_new(const game_def *g, const player_ops *ops, const char *name)
{
    player *p = xcalloc(1, sizeof *p);
    p->g = g;
    p->ops = ops;
    snprintf(p->name, sizeof p->name, "%s", name);
    rng_seed(&p->rng, 1);
    return p;
}

void player_set_tablebase(player *p, const tb_set *t)
{
    KZ_CHECK(!t || p->g == tb_game()); /* the tables read the state as their game's */
    p->tb = t;
}

void player_new_game(player *p, uint64_t seed)
{
    assert(p);
    rng_seed(&p->rng, seed);
    if (p->ops->new_game)
        p->ops->new_game(p);
}

static void s_info_init(player_info *info, int n, const uint16_t *legal)
{
    info->action = -1;
    info->value = NAN;
    info->score = 0;
    info->n = n;
    info->work = 0;
    for (int i = 0; i < n; i++) {
        info->actions[i] = legal[i];
        info->share[i] = 0;
        info->prior[i] = NAN;
        info->q[i] = NAN;
    }
}

int player_choose(player *p, const game_state *s, int *action, player_info *info)
{
    assert(p && s && action);
    const game_def *g = p->g;
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    assert(n > 0 && !g->result(s).over);
    if (info)
        s_info_init(info, n, legal);
    if (n == 1) {
        /* Nothing to think about. */
        *action = legal[0];
        if (info) {
            info->action = legal[0];
            info->share[0] = 1;
        }
        return 0;
    }
    int rc = p->ops->choose(p, s, n, legal, action, info);
    if (rc == 0 && info)
        info->action = *action;
    return rc;
}

int player_accuracy(player *p, const game_state *states, const uint16_t *want, int n, bool *hit,
                    int *right)
{
    *right = 0;
    for (int i = 0; i < n; i++) {
        int action = -1;
        player_new_game(p, (uint64_t)i);
        int rc = player_choose(p, &states[i], &action, NULL);
        if (rc)
            return rc;
        bool ok = action == want[i];
        *right += ok;
        if (hit)
            hit[i] = ok;
    }
    return 0;
}

void player_observe(player *p, const game_state *s, int action)
{
    if (p->ops->observe)
        p->ops->observe(p, s, action);
}

const char *player_name(const player *p) { return p->name; }

void player_destroy(player **pp)
{
    if (!pp || !*pp)
        return;
    player *p = *pp;
    if (p->ops->destroy_impl)
        p->ops->destroy_impl(p);
    free(p);
    *pp = NULL;
}

/* ---- 2. evaluation (the game's hooks) ----------------------------------------------------- */

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

/* ---- 3. alpha-beta -------------------------------------------------------------------- */

#define AB_INF (2L * PLAYER_WIN)

typedef struct ab_search {
    const game_def *g;  /* the game */
    bool mobility;      /* evaluation with the mobility term */
    long nodes;         /* states visited */
    const tb_set *tb;   /* endgame tables for the nodes below the root, or NULL */
} ab_search;

/* Negamax with alpha-beta over atomic actions. `depth` counts turns still to
 * search, `qleft` the quiescence turns left, `hops` the distance from the
 * root. Returns the value of s from the view of its mover (fail-soft). */
static long s_ab(ab_search *ab, const game_state *s, int depth, int qleft, int hops, long alpha,
                 long beta)
{
    const game_def *g = ab->g;
    ab->nodes++;
    game_result r = g->result(s);
    if (r.over) {
        int v = game_result_for(r, g->to_move(s));
        return v == 0 ? 0 : v * (PLAYER_WIN - hops);
    }
    int tbs;
    if (ab->tb && tb_probe_search(ab->tb, s, &tbs) == 0) {
        /* The exact result under R13: a won (lost) table position scores
         * below a win (loss) on the board, by tb_probe_search's distance. */
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
        game_state c = *s;
        g->apply(&c, legal[i]);
        int child_depth = g->mid_turn(&c) ? depth : depth - 1;
        long v;
        if (g->to_move(&c) == me) /* R18: the same player moves again: same view */
            v = s_ab(ab, &c, child_depth, qleft, hops + 1, alpha, beta);
        else
            v = -s_ab(ab, &c, child_depth, qleft, hops + 1, -beta, -alpha);
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
        game_state c = *s;
        g->apply(&c, order[i]);
        int child_depth = g->mid_turn(&c) ? depth : depth - 1;
        long v;
        if (g->to_move(&c) == me)
            v = s_ab(ab, &c, child_depth, PLAYER_QUIESCENCE_TURNS, 1, best, AB_INF);
        else
            v = -s_ab(ab, &c, child_depth, PLAYER_QUIESCENCE_TURNS, 1, -AB_INF, -best);
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
    ab_search ab = {.g = p->g, .mobility = p->mobility, .nodes = 1, .tb = p->tb};
    long score = s_ab_root(&ab, s, p->depth, order, n, action);
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
    player *p = s_player_new(g, &s_ab_ops, name);
    p->depth = depth;
    p->mobility = true;
    return p;
}

player *player_greedy_new(const game_def *g)
{
    player *p = s_player_new(g, &s_ab_ops, "greedy");
    p->depth = 1;
    p->mobility = false;
    return p;
}

/* ---- 4. UCT --------------------------------------------------------------------------- */

#define UCT_NODES_PER_PLAYOUT 32
#define UCT_MAX_NODES (1L << 22) /* 64 MiB of nodes at most */

typedef struct uct_node {
    int32_t first;     /* index of the first child, -1 until expanded */
    uint16_t action;   /* the action leading here from the parent */
    uint16_t nchild;   /* children once expanded (0: terminal) */
    uint32_t visits;   /* playouts through this node */
    float reward;      /* sum of rewards in [0,1] for the player who chose this node */
} uct_node;

typedef struct uct {
    player_uct_config cfg; /* settings */
    uct_node *nodes;       /* (cap) the tree, reset for every decision */
    int cap;               /* nodes available */
    int32_t *path;         /* (cap + 1) nodes from the root down */
    int8_t *chooser;       /* (cap + 1) player who chose path[i] (mover at its parent) */
} uct;

/* One random playout from s to the end of the game; returns the result. */
static game_result s_playout(const game_def *g, game_state *s, rng_t *rng)
{
    game_result r;
    uint16_t legal[GAME_MAX_LEGAL];
    while (!(r = g->result(s)).over) {
        int n = g->legal_actions(s, legal);
        g->apply(s, legal[rng_below(rng, (uint32_t)n)]);
    }
    return r;
}

/* Picks a child of an expanded node: a random unvisited one first, then UCB1. */
static int32_t s_uct_select(uct *u, const uct_node *node, rng_t *rng)
{
    int unvisited = 0;
    for (int i = 0; i < node->nchild; i++)
        unvisited += u->nodes[node->first + i].visits == 0;
    if (unvisited > 0) {
        int k = (int)rng_below(rng, (uint32_t)unvisited);
        for (int i = 0; i < node->nchild; i++)
            if (u->nodes[node->first + i].visits == 0 && k-- == 0)
                return node->first + i;
    }
    double log_n = log((double)node->visits);
    int32_t best = node->first;
    double best_ucb = -1;
    for (int i = 0; i < node->nchild; i++) {
        const uct_node *c = &u->nodes[node->first + i];
        double ucb = c->reward / c->visits + u->cfg.c * sqrt(log_n / c->visits);
        if (ucb > best_ucb) {
            best_ucb = ucb;
            best = node->first + i;
        }
    }
    return best;
}

static int s_uct_choose(player *p, const game_state *root, int n, const uint16_t *legal,
                        int *action, player_info *info)
{
    const game_def *g = p->g;
    uct *u = p->impl;
    (void)n, (void)legal;
    u->nodes[0] = (uct_node){.first = -1};
    int used = 1;
    for (int it = 0; it < u->cfg.playouts; it++) {
        /* Step 1. Selection: descend through expanded nodes. */
        game_state s = *root;
        int depth = 0;
        int32_t cur = 0;
        u->path[0] = 0;
        u->chooser[0] = -1;
        for (;;) {
            uct_node *node = &u->nodes[cur];
            if (node->first < 0) {
                /* Step 2. Expansion: all children at once (when there is room). */
                if (g->result(&s).over)
                    break;
                uint16_t acts[GAME_MAX_LEGAL];
                int k = g->legal_actions(&s, acts);
                if (used + k > u->cap)
                    break; /* the arena is full: play out from here */
                node->first = used;
                node->nchild = (uint16_t)k;
                for (int i = 0; i < k; i++)
                    u->nodes[used + i] = (uct_node){.first = -1, .action = acts[i]};
                used += k;
            }
            if (node->nchild == 0)
                break;
            int mover = g->to_move(&s);
            cur = s_uct_select(u, node, &p->rng);
            g->apply(&s, u->nodes[cur].action);
            depth++;
            u->path[depth] = cur;
            u->chooser[depth] = (int8_t)mover;
            if (u->nodes[cur].visits == 0)
                break; /* a new node: play out from it */
        }
        /* Step 3. Simulation. */
        game_result r = s_playout(g, &s, &p->rng);
        /* Step 4. Backpropagation: each node is credited to the player who chose
         * it, from the absolute result (R18: no negation by depth parity, so a
         * capture sequence's repeated mover is handled without special cases). */
        u->nodes[0].visits++;
        for (int d = 1; d <= depth; d++) {
            uct_node *node = &u->nodes[u->path[d]];
            node->visits++;
            node->reward += 0.5f * (float)(1 + game_result_for(r, u->chooser[d]));
        }
    }
    /* The most visited child; ties to the higher reward. */
    const uct_node *rootn = &u->nodes[0];
    KZ_CHECK(rootn->first > 0 && rootn->nchild == n);
    int32_t best = rootn->first;
    double reward_sum = 0;
    long visit_sum = 0;
    for (int i = 0; i < rootn->nchild; i++) {
        const uct_node *c = &u->nodes[rootn->first + i];
        const uct_node *b = &u->nodes[best];
        if (c->visits > b->visits || (c->visits == b->visits && c->reward > b->reward))
            best = rootn->first + i;
        reward_sum += c->reward;
        visit_sum += c->visits;
    }
    *action = u->nodes[best].action;
    if (info) {
        info->work = u->cfg.playouts;
        info->value = visit_sum ? 2 * reward_sum / (double)visit_sum - 1 : 0;
        for (int i = 0; i < rootn->nchild; i++) {
            const uct_node *c = &u->nodes[rootn->first + i];
            info->share[i] = visit_sum ? (float)c->visits / visit_sum : 0;
            info->q[i] = c->visits ? 2 * c->reward / c->visits - 1 : NAN;
        }
    }
    return 0;
}

static void s_uct_destroy(player *p)
{
    uct *u = p->impl;
    free(u->nodes);
    free(u->path);
    free(u->chooser);
    free(u);
}

static const player_ops s_uct_ops = {.choose = s_uct_choose, .destroy_impl = s_uct_destroy};

player *player_uct_new(const game_def *g, const player_uct_config *cfg)
{
    assert(cfg->playouts >= 1 && cfg->playouts <= PLAYER_MAX_PLAYOUTS && cfg->c >= 0);
    char name[64];
    snprintf(name, sizeof name, "uct:%d:%g", cfg->playouts, cfg->c);
    player *p = s_player_new(g, &s_uct_ops, name);
    uct *u = xcalloc(1, sizeof *u);
    u->cfg = *cfg;
    long cap = 1 + GAME_MAX_LEGAL + (long)UCT_NODES_PER_PLAYOUT * cfg->playouts;
    u->cap = (int)(cap < UCT_MAX_NODES ? cap : UCT_MAX_NODES);
    u->nodes = xmalloc((size_t)u->cap * sizeof *u->nodes);
    /* A path holds at most one node per level, and every level holds a node. */
    u->path = xmalloc(((size_t)u->cap + 1) * sizeof *u->path);
    u->chooser = xmalloc((size_t)u->cap + 1);
    p->impl = u;
    return p;
}

/* ---- 5. random -------------------------------------------------------------------------- */

static int s_random_choose(player *p, const game_state *s, int n, const uint16_t *legal,
                           int *action, player_info *info)
{
    (void)s;
    int i = (int)rng_below(&p->rng, (uint32_t)n);
    *action = legal[i];
    if (info)
        for (int k = 0; k < n; k++)
            info->share[k] = 1.0f / n;
    return 0;
}

static const player_ops s_random_ops = {.choose = s_random_choose};

player *player_random_new(const game_def *g) { return s_player_new(g, &s_random_ops, "random"); }

/* ---- 6. network players ------------------------------------------------------------------ */

/* What the policy and mcts players share: the evaluator and what owns it. */
typedef struct net {
    evaluator ev;         /* the evaluator used */
    evaluator_net *owned; /* the network when loaded from a file (owned), else NULL */
} net;

/* Opens MODEL ("uniform" or a model file for g) as an evaluator of batches up
 * to max_batch in `precision` (evaluator.h). 0, or the loader's error with
 * the reason in err. */
static int s_net_open(const game_def *g, const char *path, int max_batch, int precision, net *n,
                      char *err, size_t errlen)
{
    memset(n, 0, sizeof *n);
    if (!strcmp(path, "uniform")) {
        n->ev = evaluator_uniform(g);
        return 0;
    }
    int rc = evaluator_net_load_precision(path, g, max_batch, precision, &n->owned, err, errlen);
    if (rc == 0)
        n->ev = evaluator_net_get(n->owned);
    return rc;
}

typedef struct policy {
    net net;        /* the network */
    float *planes;  /* (C, H, W) */
    float *logits;  /* (A) */
} policy;

static int s_policy_choose(player *p, const game_state *s, int n, const uint16_t *legal,
                           int *action, player_info *info)
{
    const game_def *g = p->g;
    policy *pol = p->impl;
    float value;
    g->encode_planes(s, pol->planes);
    int rc = pol->net.ev.run(pol->net.ev.ctx, pol->planes, 1, pol->logits, &value);
    if (rc != 0)
        return rc;
    /* The network speaks canonical actions (R16). Ties go to the lower action. */
    int best = 0;
    float top = -INFINITY;
    for (int i = 0; i < n; i++) {
        float l = pol->logits[g->canonical_action(s, legal[i])];
        if (!isfinite(l))
            return KZ_EINVAL;
        if (l > top) {
            top = l;
            best = i;
        }
    }
    *action = legal[best];
    if (info) {
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += exp((double)pol->logits[g->canonical_action(s, legal[i])] - top);
        for (int i = 0; i < n; i++) {
            double e = exp((double)pol->logits[g->canonical_action(s, legal[i])] - top);
            info->share[i] = info->prior[i] = (float)(e / sum);
        }
        info->value = value;
        info->work = 1;
    }
    return 0;
}

static void s_policy_destroy(player *p)
{
    policy *pol = p->impl;
    evaluator_net_destroy(&pol->net.owned);
    free(pol->planes);
    free(pol->logits);
    free(pol);
}

static const player_ops s_policy_ops = {.choose = s_policy_choose,
                                        .destroy_impl = s_policy_destroy};

static player *s_policy_make(const game_def *g, const net *n, const char *name)
{
    player *p = s_player_new(g, &s_policy_ops, name);
    policy *pol = xcalloc(1, sizeof *pol);
    pol->net = *n;
    pol->planes = xmalloc((size_t)g->planes * g->height * g->width * sizeof *pol->planes);
    pol->logits = xmalloc((size_t)g->action_count * sizeof *pol->logits);
    p->impl = pol;
    return p;
}

player *player_policy_new_evaluator(const game_def *g, evaluator ev, const char *name)
{
    return s_policy_make(g, &(net){.ev = ev}, name);
}

/* ":bf16" or ":fp32" for a precision given in a spec, "" for the default. */
static const char *s_precision_suffix(int precision)
{
    return precision == MODEL_BF16   ? ":bf16"
           : precision == MODEL_FP32 ? ":fp32"
                                     : "";
}

static player *s_policy_new(const game_def *g, const char *model_path, int precision, char *err,
                            size_t errlen)
{
    net n;
    if (s_net_open(g, model_path, 1, precision, &n, err, errlen) != 0)
        return NULL;
    char name[PLAYER_SPEC_MAX];
    snprintf(name, sizeof name, "policy:%s%s", model_path, s_precision_suffix(precision));
    return s_policy_make(g, &n, name);
}

player *player_policy_new(const game_def *g, const char *model_path, char *err, size_t errlen)
{
    return s_policy_new(g, model_path, EVALUATOR_PRECISION_DEFAULT, err, errlen);
}

typedef struct mcts_player {
    net net;             /* the network */
    mcts_batch *batch;   /* one tree, kept between moves */
    mcts_result result;  /* the last search's result */
} mcts_player;

mcts_settings player_mcts_settings(int sims)
{
    mcts_settings s = mcts_settings_default();
    s.simulations = sims;
    s.dirichlet_epsilon = 0;
    return s;
}

mcts_settings player_gumbel_settings(int sims)
{
    mcts_settings s = player_mcts_settings(sims);
    s.root_mode = MCTS_ROOT_GUMBEL;
    s.gumbel_noise = false;
    s.temperature_plies = 0;
    return s;
}

static int s_mcts_choose(player *p, const game_state *s, int n, const uint16_t *legal,
                         int *action, player_info *info)
{
    const game_def *g = p->g;
    mcts_player *mp = p->impl;
    (void)n, (void)legal;
    mcts_batch_set_tablebase(mp->batch, p->tb);
    /* Step 1. Continue from the kept tree when it stands at s, else start afresh. */
    enum mcts_status st = mcts_batch_status(mp->batch, 0);
    if (st == MCTS_IDLE || st == MCTS_OVER ||
        g->hash(mcts_batch_state(mp->batch, 0)) != g->hash(s))
        mcts_batch_reset(mp->batch, 0, s, rng_next(&p->rng));
    /* Step 2. Search to the simulation count. */
    int rc = mcts_batch_run(mp->batch);
    if (rc != 0) {
        mcts_batch_clear(mp->batch, 0);
        return rc;
    }
    mcts_result *r = &mp->result;
    mcts_batch_result(mp->batch, 0, r);
    KZ_CHECK(r->n == n);
    *action = r->best;
    if (info) {
        info->value = r->value;
        info->work = r->total;
        for (int i = 0; i < r->n; i++) {
            KZ_CHECK(r->actions[i] == info->actions[i]);
            info->share[i] = r->total ? (float)r->visits[i] / (float)r->total : 0;
            info->prior[i] = r->priors[i];
            info->q[i] = r->visits[i] ? r->q[i] : NAN;
        }
    }
    return 0;
}

static void s_mcts_observe(player *p, const game_state *s, int action)
{
    mcts_player *mp = p->impl;
    enum mcts_status st = mcts_batch_status(mp->batch, 0);
    if (st == MCTS_IDLE || st == MCTS_OVER)
        return;
    if (p->g->hash(mcts_batch_state(mp->batch, 0)) == p->g->hash(s))
        mcts_batch_advance(mp->batch, 0, action); /* keeps the chosen subtree */
    else
        mcts_batch_clear(mp->batch, 0);
}

static void s_mcts_new_game(player *p)
{
    mcts_player *mp = p->impl;
    mcts_batch_clear(mp->batch, 0);
}

static void s_mcts_destroy(player *p)
{
    mcts_player *mp = p->impl;
    mcts_batch_destroy(&mp->batch);
    evaluator_net_destroy(&mp->net.owned);
    free(mp);
}

static const player_ops s_mcts_ops = {.choose = s_mcts_choose,
                                      .destroy_impl = s_mcts_destroy,
                                      .observe = s_mcts_observe,
                                      .new_game = s_mcts_new_game};

/* Takes ownership of n->owned (freed on failure too). */
static player *s_mcts_make(const game_def *g, net *n, const mcts_settings *s, const char *name,
                           char *err, size_t errlen)
{
    if (mcts_settings_check(s, err, errlen) != 0) {
        evaluator_net_destroy(&n->owned);
        return NULL;
    }
    mcts_batch *b = mcts_batch_new(g, s, 1, n->ev);
    if (!b) {
        err_set(err, errlen, KZ_ENOMEM, "%s: out of memory for the search tree", name);
        evaluator_net_destroy(&n->owned);
        return NULL;
    }
    player *p = s_player_new(g, &s_mcts_ops, name);
    mcts_player *mp = xcalloc(1, sizeof *mp);
    mp->net = *n;
    mp->batch = b;
    p->impl = mp;
    return p;
}

player *player_mcts_new_evaluator(const game_def *g, evaluator ev, const mcts_settings *s,
                                  const char *name, char *err, size_t errlen)
{
    net n = {.ev = ev};
    return s_mcts_make(g, &n, s, name, err, errlen);
}

static player *s_mcts_new(const game_def *g, const char *model_path, const mcts_settings *s,
                          int precision, char *err, size_t errlen)
{
    if (mcts_settings_check(s, err, errlen) != 0)
        return NULL;
    net n;
    /* A tree sends at most leaves_per_tree leaves to one batch. */
    if (s_net_open(g, model_path, s->leaves_per_tree, precision, &n, err, errlen) != 0)
        return NULL;
    char name[PLAYER_SPEC_MAX];
    snprintf(name, sizeof name, "%s:%s:%d%s", s->root_mode == MCTS_ROOT_GUMBEL ? "gumbel" : "mcts",
             model_path, s->simulations, s_precision_suffix(precision));
    return s_mcts_make(g, &n, s, name, err, errlen);
}

player *player_mcts_new(const game_def *g, const char *model_path, const mcts_settings *s,
                        char *err, size_t errlen)
{
    return s_mcts_new(g, model_path, s, EVALUATOR_PRECISION_DEFAULT, err, errlen);
}

/* ---- 7. specs ----------------------------------------------------------------------------- */

const char *player_spec_help(void)
{
    return "Player specs:\n"
           "  random            uniformly random legal actions\n"
           "  greedy            most material after its turn and the forced recaptures\n"
           "                    (alpha-beta depth 1, material only), ties at random\n"
           "  uct:N[:C]         UCT with N random playouts per action (1..10000000),\n"
           "                    exploration constant C (default 1.0)\n"
           "  alphabeta:D       alpha-beta, D turns deep (1..32), material + mobility,\n"
           "                    quiescence over forced captures\n"
           "  policy:MODEL      the network's most probable legal action\n"
           "  mcts:MODEL[:SIMS] the network with PUCT search, SIMS simulations per action\n"
           "                    (1..1000000, default: the game's), the most visited action played\n"
           "  gumbel:MODEL[:SIMS] the same with the Gumbel root search (no noise): the\n"
           "                    Sequential Halving winner played\n"
           "MODEL is a model file, or `uniform` (equal priors, value 0: no network).\n"
           "A network spec may end in :fp32 or :bf16, the network's arithmetic (bf16:\n"
           "AVX512_BF16 products, fp32 where the CPU lacks it); without it, the program's.\n";
}

player *player_from_spec(const game_def *g, const char *spec, char *err, size_t errlen)
{
    char buf[PLAYER_SPEC_MAX];
    if (!spec || strlen(spec) >= sizeof buf) {
        err_set(err, errlen, KZ_EINVAL, "player spec too long or missing");
        return NULL;
    }
    strcpy(buf, spec);
    /* A network's precision, the last field. */
    int precision = EVALUATOR_PRECISION_DEFAULT;
    char *last = strrchr(buf, ':');
    if (last &&
        (!strncmp(buf, "policy:", 7) || !strncmp(buf, "mcts:", 5) || !strncmp(buf, "gumbel:", 7)) &&
        last > strchr(buf, ':') && model_precision_parse(last + 1, &precision) == 0)
        *last = '\0';
    char *arg = strchr(buf, ':');
    if (arg)
        *arg++ = '\0';
    if (!strcmp(buf, "random") || !strcmp(buf, "greedy")) {
        if (arg) {
            err_set(err, errlen, KZ_EINVAL, "player '%s' takes no parameters", spec);
            return NULL;
        }
        return buf[0] == 'r' ? player_random_new(g) : player_greedy_new(g);
    }
    if (!strcmp(buf, "uct")) {
        player_uct_config cfg = {.playouts = 1000, .c = 1.0};
        char *cs = arg ? strchr(arg, ':') : NULL;
        if (cs)
            *cs++ = '\0';
        long n;
        if (!arg || parse_long(arg, 1, PLAYER_MAX_PLAYOUTS, &n) != 0 ||
            (cs && parse_double(cs, 0, 100, &cfg.c) != 0)) {
            err_set(err, errlen, KZ_EINVAL,
                    "bad player '%s': write uct:N[:C], N playouts 1..10000000, C in [0,100]",
                    spec);
            return NULL;
        }
        cfg.playouts = (int)n;
        return player_uct_new(g, &cfg);
    }
    if (!strcmp(buf, "alphabeta")) {
        long d;
        if (!arg || parse_long(arg, 1, PLAYER_MAX_DEPTH, &d) != 0) {
            err_set(err, errlen, KZ_EINVAL, "bad player '%s': write alphabeta:D with D in 1..32",
                    spec);
            return NULL;
        }
        return player_alphabeta_new(g, (int)d);
    }
    if (!strcmp(buf, "policy")) {
        if (!arg || !*arg) {
            err_set(err, errlen, KZ_EINVAL, "bad player '%s': write policy:MODEL", spec);
            return NULL;
        }
        return s_policy_new(g, arg, precision, err, errlen);
    }
    if (!strcmp(buf, "mcts") || !strcmp(buf, "gumbel")) {
        long sims = g->simulations;
        char *cs = arg ? strrchr(arg, ':') : NULL;
        if (cs) {
            *cs++ = '\0';
            if (parse_long(cs, 1, PLAYER_MAX_SIMS, &sims) != 0) {
                err_set(err, errlen, KZ_EINVAL,
                        "bad player '%s': write %s:MODEL[:SIMS], SIMS 1..1000000", spec, buf);
                return NULL;
            }
        }
        if (!arg || !*arg) {
            err_set(err, errlen, KZ_EINVAL, "bad player '%s': write %s:MODEL[:SIMS]", spec, buf);
            return NULL;
        }
        mcts_settings ms = buf[0] == 'm' ? player_mcts_settings((int)sims)
                                         : player_gumbel_settings((int)sims);
        return s_mcts_new(g, arg, &ms, precision, err, errlen);
    }
    err_set(err, errlen, KZ_EINVAL,
            "unknown player '%s' (random, greedy, uct:N, alphabeta:D, policy:M, mcts:M:N, "
            "gumbel:M:N)",
            spec);
    return NULL;
}
