/* player: the player interface and the simplest player (random). See
 * player.h for the definitions each player follows; the other kinds have a
 * file each: player_ab.c (alpha-beta and greedy, over the game's evaluation
 * hooks), player_uct.c (UCT with random playouts), player_net.c (the network
 * players: raw policy, PUCT search); player_internal.h is what they share;
 * player_spec.c, above them all, makes a player of any kind from its spec.
 * This file is organised as:
 *   1. the interface (a small table of operations per kind)
 *   2. random */
#include "search/player.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/player_internal.h"
#include "common/util.h"

/* ---- 1. the interface ------------------------------------------------------------------- */

void player_set_oracle(player *p, const game_oracle *o)
{
    KZ_CHECK(!o || !o->probe || o->game == p->g); /* it reads the state as its game's */
    p->oracle = o ? *o : (game_oracle){0};
}

void player_set_tick(player *p, player_tick_fn fn, void *ctx)
{
    p->tick = fn;
    p->tick_ctx = ctx;
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

const char *player_spec_name(const player *p) { return p->name; }

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

player *player_new_of(const game_def *g, const player_ops *ops, const char *name)
{
    player *p = xcalloc(1, sizeof *p);
    p->g = g;
    p->ops = ops;
    snprintf(p->name, sizeof p->name, "%s", name);
    rng_seed(&p->rng, 1);
    return p;
}

/* ---- 2. random -------------------------------------------------------------------------- */

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

player *player_random_new(const game_def *g) { return player_new_of(g, &s_random_ops, "random"); }
