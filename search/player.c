/* player: the player interface and the simplest player (random), and the
 * parsing of player specs. See player.h for the definitions each player
 * follows; the other kinds have a file each: player_ab.c (alpha-beta and
 * greedy, over the game's evaluation hooks), player_uct.c (UCT with random
 * playouts), player_net.c (the network players: raw policy, PUCT search);
 * player_internal.h is what they share. This file is organised as:
 *   1. the interface (a small table of operations per kind)
 *   2. random
 *   3. spec parsing */
#include "search/player.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "search/player_internal.h"
#include "common/util.h"

/* ---- 1. the interface ------------------------------------------------------------------- */

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

/* ---- 3. specs ----------------------------------------------------------------------------- */

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
        return player_policy_new_precision(g, arg, precision, err, errlen);
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
        return player_mcts_new_precision(g, arg, &ms, precision, err, errlen);
    }
    err_set(err, errlen, KZ_EINVAL,
            "unknown player '%s' (random, greedy, uct:N, alphabeta:D, policy:M, mcts:M:N, "
            "gumbel:M:N)",
            spec);
    return NULL;
}
