/* player_spec: a player of any kind from its spec ("alphabeta:4",
 * "mcts:MODEL:200", ...), the factory above the kinds (player.h:
 * player_from_spec). The interface (player.c) names no kind; this file
 * names them all. */
#include "search/player.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "search/player_internal.h"
#include "common/util.h"

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
           "  gnubg:LEVEL       GNU Backgammon (backgammon only) at beginner, casual,\n"
           "                    intermediate, advanced, expert, worldclass, supremo or\n"
           "                    grandmaster: a gnubg process of its own\n"
           "  perfect[:NODES]   Khreibaga: whole turns valued by the proof search, NODES per\n"
           "                    search (default 100000); alpha-beta where the budget runs out\n"
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
    if (!strcmp(buf, "gnubg")) {
        if (!arg || !*arg) {
            err_set(err, errlen, KZ_EINVAL, "bad player '%s': write gnubg:LEVEL", spec);
            return NULL;
        }
        return player_gnubg_new(g, arg, err, errlen);
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
    if (!strcmp(buf, "perfect")) {
        long nodes = PLAYER_PERFECT_NODES;
        if (arg && parse_long(arg, 1, 1000000000000L, &nodes) != 0) {
            err_set(err, errlen, KZ_EINVAL,
                    "bad player '%s': write perfect[:NODES], NODES 1..10^12", spec);
            return NULL;
        }
        return player_perfect_new(g, nodes, err, errlen);
    }
    err_set(err, errlen, KZ_EINVAL,
            "unknown player '%s' (random, greedy, uct:N, alphabeta:D, policy:M, mcts:M:N, "
            "gumbel:M:N, gnubg:LEVEL, perfect)",
            spec);
    return NULL;
}
