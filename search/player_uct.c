/* player_uct: pure Monte-Carlo tree search (UCT, UCB1) with random
 * playouts, as player.h defines it. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "search/player.h"
#include "search/player_internal.h"
#include "common/util.h"

/* ---- UCT --------------------------------------------------------------------------- */

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
        if (g->is_chance && g->is_chance(s)) { /* the dice, by their probabilities */
            g->apply(s, game_chance_draw(g, s, rng));
            continue;
        }
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
        if (p->tick && (it & (PLAYER_TICK_PLAYOUTS - 1)) == PLAYER_TICK_PLAYOUTS - 1 &&
            p->tick(p->tick_ctx))
            return KZ_ECANCELED;
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
            if (g->is_chance && g->is_chance(&s)) {
                /* Nature's node: the outcome drawn by its probability. */
                int a = game_chance_draw(g, &s, &p->rng);
                cur = node->first;
                while (u->nodes[cur].action != a)
                    cur++;
            } else {
                cur = s_uct_select(u, node, &p->rng);
            }
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
    free_all(u->nodes, u->path, u->chooser, u);
}

static const player_ops s_uct_ops = {.choose = s_uct_choose, .destroy_impl = s_uct_destroy};

player *player_uct_new(const game_def *g, const player_uct_config *cfg)
{
    assert(cfg->playouts >= 1 && cfg->playouts <= PLAYER_MAX_PLAYOUTS && cfg->c >= 0);
    char name[64];
    snprintf(name, sizeof name, "uct:%d:%g", cfg->playouts, cfg->c);
    player *p = player_new_of(g, &s_uct_ops, name);
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
