/* test_perfect: the `perfect` player (search/player_perfect.c): it never
 * lets a proven win go (a few of the match's openings that the proof search
 * proves won for the mover, played out against alphabeta:2), it wins the
 * start as White against random, and other games get a one-line refusal. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/game.h"
#include "games/khreibaga.h"
#include "play/match.h"
#include "search/player.h"
#include "solve/pns.h"
#include "tests/harness/harness.h"

TestSuite(perfect, .timeout = 600);

/* Plays s out, `side` moved by a, the other by b; the winner (-1 a draw). */
static int s_play(player *a, player *b, int side, game_state *s, uint64_t seed)
{
    const game_def *g = &khreibaga_game;
    player_new_game(a, seed);
    player_new_game(b, seed + 1);
    while (!g->result(s).over) {
        player *p = g->to_move(s) == side ? a : b;
        int action = -1;
        cr_assert_eq(player_choose(p, s, &action, NULL), 0);
        cr_assert(game_is_legal(g, s, action));
        player_observe(a, s, action);
        player_observe(b, s, action);
        g->apply(s, action);
    }
    return g->result(s).winner;
}

Test(perfect, keeps_proven_wins_against_alphabeta)
{
    const game_def *g = &khreibaga_game;
    enum { K = 12 };
    game_state open[K];
    cr_assert_eq(match_openings(g, K, 0, 7, open), 0);
    char err[200];
    player *pf = player_from_spec(g, "perfect:100000", err, sizeof err);
    cr_assert_not_null(pf, "%s", err);
    player *ab = player_from_spec(g, "alphabeta:2", err, sizeof err);
    cr_assert_not_null(ab, "%s", err);
    pns_tt *tt = pns_tt_open(NULL, 8u << 20, err, sizeof err);
    cr_assert_not_null(tt, "%s", err);
    int won = 0;
    for (int i = 0; i < K && won < 2; i++) {
        pns_pos root;
        cr_assert_eq(pns_pos_from_state(&open[i], &root), 0);
        int mover = (int)root.side, out = PNS_OPEN;
        /* "the opponent does not lose" disproven: the mover wins. */
        pns_opts o = {.claim = 1 - mover, .max_nodes = 2000000};
        cr_assert_eq(pns_solve(tt, &root, &o, &out), 0);
        if (out != PNS_DISPROVEN)
            continue;
        won++;
        int w = s_play(pf, ab, mover, &open[i], (uint64_t)i);
        cr_assert_eq(w, mover, "opening %d: perfect let a proven win go: winner %d, reason %d, "
                     "ply %d", i, w, g->result(&open[i]).reason, g->ply(&open[i]));
        cr_assert_geq(player_perfect_fallbacks(pf), 0);
    }
    cr_assert_geq(won, 2, "too few won openings among %d", K);
    cr_assert_eq(player_perfect_fallbacks(ab), -1);
    pns_tt_close(&tt);
    player_destroy(&pf);
    player_destroy(&ab);
}

Test(perfect, wins_the_start_as_white_and_refuses_other_games)
{
    const game_def *g = &khreibaga_game;
    char err[200];
    player *pf = player_from_spec(g, "perfect", err, sizeof err);
    cr_assert_not_null(pf, "%s", err);
    cr_assert_str_eq(player_spec_name(pf), "perfect:100000");
    player *rnd = player_from_spec(g, "random", err, sizeof err);
    for (uint64_t seed = 1; seed <= 2; seed++) {
        game_state s;
        g->init(&s);
        cr_assert_eq(s_play(pf, rnd, 1, &s, seed), 1, "seed %llu", (unsigned long long)seed);
    }
    player_destroy(&pf);
    player_destroy(&rnd);
    const game_def *alq = game_find("alquerque");
    cr_assert_not_null(alq);
    cr_assert_null(player_from_spec(alq, "perfect", err, sizeof err));
    cr_assert(strstr(err, "khreibaga only") && !strchr(err, '\n'), "%s", err);
    cr_assert_null(player_from_spec(g, "perfect:0", err, sizeof err));
    cr_assert_null(player_from_spec(g, "perfect:x", err, sizeof err));
    cr_assert(strstr(err, "perfect[:NODES]"), "%s", err);
}

/* kz solve accuracy: the counts are consistent, and bad models are refused. */
Test(perfect, kz_solve_accuracy)
{
    harness_cli c;
    harness_cli_init(&c, "perfect-accuracy");
    cr_assert_eq(harness_cli_kz(&c, "solve accuracy uniform --positions 4 --sims 8 "
                                    "--players alphabeta:2 --tables '' --tt_mb 64"),
                 0, "%s", c.err);
    int n, settled, all, choice;
    const char *p = strstr(c.out, "; ");
    cr_assert(p, "%s", c.out);
    cr_assert_eq(sscanf(c.out, "positions: %d", &n), 1, "%s", c.out);
    cr_assert_eq(sscanf(p, "; %d with a settled value", &settled), 1, "%s", c.out);
    p = strstr(p, "), ");
    cr_assert(p, "%s", c.out);
    cr_assert_eq(sscanf(p, "), %d with every turn judged, %d of them", &all, &choice), 2, "%s",
                 c.out);
    cr_assert(n == 4 && settled >= 1 && all <= settled && choice <= all, "%s", c.out);
    const char *names[] = {"policy:uniform: ", "mcts:uniform:8: ", "alphabeta:2: "};
    for (int w = 0; w < 3; w++) {
        const char *q = strstr(c.out, names[w]);
        cr_assert(q, "%s", c.out);
        int keep, judged, kc, jc;
        cr_assert_eq(sscanf(q + strlen(names[w]), "%d of %d turns keep", &keep, &judged), 2);
        q = strstr(q, "where a turn loses value ");
        cr_assert(q, "%s", c.out);
        cr_assert_eq(sscanf(q, "where a turn loses value %d of %d", &kc, &jc), 2);
        /* Judged turns are of settled positions, those with a choice among them. */
        cr_assert(judged <= settled && keep <= judged && jc <= choice && jc <= judged &&
                      kc <= jc && kc <= keep && judged - jc >= keep - kc, "%s", c.out);
    }
    cr_assert_neq(harness_cli_kz(&c, "solve accuracy /nonexistent.kzm --positions 1"), 0);
    cr_assert(strstr(c.err, "nonexistent.kzm"), "%s", c.err);
    cr_assert_neq(harness_cli_kz(&c, "solve accuracy"), 0);
    harness_cli_fini(&c);
}
