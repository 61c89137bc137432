/* kz scale: measures a game's anchor scale (play/scale.h): the baseline
 * players, weakest first, play their neighbours in the list (pairs of games
 * from shared random openings, each opening with both colours), and one fit
 * over all the results (rating.h, the coordinator's: BayesElo's virtual
 * draws, random held at 0) gives every player its rating and 95% interval.
 * Prints the lines of play/scales.txt for the game. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/util.h"
#include "play/match.h"
#include "play/rating.h"
#include "tools/kz/kz.h"

#define SCALE_MAX_PLAYERS 16

int cmd_scale(int argc, char **argv)
{
    static const char usage_head[] =
        "usage: kz scale [--game G] [--players P1,P2,...] [--pairs N] [--seed S]\n\n"
        "Measures the game's anchor scale: each player of the list (weakest first; it\n"
        "must start with random) plays the next one N pairs of games (2N games, each\n"
        "random opening once with each colour), then one rating fit over all results\n"
        "(the coordinator's: BayesElo's virtual draws, random = 0) rates them all with\n"
        "95% intervals. Prints the lines of play/scales.txt (docs/ratings.md, \"The\n"
        "anchor scale\"): game, player, Elo, interval, games. Progress goes to stderr.\n\n";
    typedef struct scale_opts {
        char game[CONFIG_STR_MAX];
        char players[CONFIG_STR_MAX];
        long pairs, seed;
    } scale_opts;
#define CONFIG_STRUCT scale_opts
    static const config_option rows[] = {
        KZ_GAME_OPTION(scale_opts, game),
        CONFIG_ROW_STRING(players, "random,greedy,alphabeta:2,alphabeta:4,uct:1000",
                          "the players, weakest first, random first"),
        CONFIG_ROW_INT(pairs, "50", 1, 100000, "pairs of games between neighbours"),
        CONFIG_ROW_INT(seed, "1", 0, 9007199254740991, "the matches' seed (openings and players)"),
    };
#undef CONFIG_STRUCT
    scale_opts o = {0};
    const char *words[argc];
    size_t nw;
    int rc = kz_parse_args("scale", usage_head, rows, sizeof rows / sizeof rows[0], &o, argc,
                           argv, words, (size_t)argc, &nw);
    if (rc >= 0)
        return rc;
    if (nw)
        return kz_usage_error("scale: no words expected, got '%s'", words[0]);
    const game_def *g = kz_game("scale", o.game);
    if (!g)
        return 2;
    /* The players. */
    char names[SCALE_MAX_PLAYERS][CONFIG_STR_MAX];
    int n = 0;
    char list[CONFIG_STR_MAX];
    snprintf(list, sizeof list, "%s", o.players);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == SCALE_MAX_PLAYERS)
            return kz_usage_error("scale: at most %d players", SCALE_MAX_PLAYERS);
        snprintf(names[n++], CONFIG_STR_MAX, "%s", t);
    }
    if (n < 2 || strcmp(names[0], "random"))
        return kz_usage_error("scale: --players lists two players or more, random first");
    char err[300];
    for (int i = 0; i < n; i++) {
        player *p = player_from_spec(g, names[i], err, sizeof err);
        if (!p)
            return kz_usage_error("scale: %s", err);
        player_destroy(&p);
    }
    /* The neighbours' matches. */
    rating_result res[SCALE_MAX_PLAYERS];
    long games[SCALE_MAX_PLAYERS] = {0};
    for (int i = 0; i + 1 < n; i++) {
        player *a = player_from_spec(g, names[i + 1], err, sizeof err);
        player *b = player_from_spec(g, names[i], err, sizeof err);
        KZ_CHECK(a && b);
        match_config cfg;
        match_config_default(&cfg);
        cfg.games = (int)(2 * o.pairs);
        cfg.openings = (int)o.pairs;
        cfg.seed = (uint64_t)o.seed + (uint64_t)i;
        int w = 0, d = 0, l = 0;
        double t0 = time_now();
        rc = match_run(g, a, b, &cfg, &w, &d, &l, NULL);
        player_destroy(&a);
        player_destroy(&b);
        if (rc) {
            fprintf(stderr, "kz: scale: %s vs %s: %s\n", names[i + 1], names[i], err_str(rc));
            return 1;
        }
        fprintf(stderr, "scale: %s %s vs %s: +%d =%d -%d (%.0f s)\n", g->name, names[i + 1],
                names[i], w, d, l, time_now() - t0);
        res[i] = (rating_result){.i = i + 1, .j = i, .wins = w, .draws = d,
                                 .losses = l};
        games[i] += w + d + l;
        games[i + 1] += w + d + l;
    }
    /* One fit, random at 0. */
    rating_anchor zero = {0, 0.0};
    rating_config rcfg;
    rating_config_default(&rcfg);
    rating_fit *fit = NULL;
    if (rating_fit_compute(n, res, n - 1, &zero, 1, &rcfg, &fit, err, sizeof err)) {
        fprintf(stderr, "kz: scale: %s\n", err);
        return 1;
    }
    printf("# %s: kz scale --game %s --players %s --pairs %ld --seed %ld\n", g->name, g->name,
           o.players, o.pairs, o.seed);
    for (int i = 0; i < n; i++)
        printf("%-12s %-14s %7.1f %7.1f %7.1f %6ld\n", g->name, names[i], fit->elo[i], fit->lo[i],
               fit->hi[i], games[i]);
    rating_fit_destroy(&fit);
    return 0;
}
