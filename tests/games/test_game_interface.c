/* Tests of the game interface itself (games/game.h): the registry (lookup
 * by name, the list, registration and its checks of each game's sizes and
 * declarations), the symmetries applied to planes and policies, and the
 * generic helpers. The rules of each game have their own tests. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "games/khreibaga.h"
#include "common/util.h"

Test(game, the_registry_finds_games_by_name)
{
    const game_def *g = game_find(GAME_DEFAULT_NAME);
    cr_assert_not_null(g);
    cr_assert_eq(game_default(), g);
    cr_assert_eq(game_at(0), g, "the default game is the first built-in one");
    cr_assert_null(game_find("no-such-game"));
    cr_assert_null(game_find(NULL));
    cr_assert_null(game_at(-1));
    int n = 0;
    while (game_at(n))
        n++;
    cr_assert(n >= 1 && n <= GAME_MAX_GAMES);
    char names[256];
    game_names(names, sizeof names);
    cr_assert_eq(strncmp(names, GAME_DEFAULT_NAME, strlen(GAME_DEFAULT_NAME)), 0, "%s", names);
    char tiny[4];
    game_names(tiny, sizeof tiny); /* cut, still a string */
    cr_assert_lt(strlen(tiny), sizeof tiny);
    /* Every registered game passes its own checks. */
    for (int i = 0; i < n; i++) {
        char err[200] = "";
        cr_assert_eq(game_check(game_at(i), err, sizeof err), 0, "%s: %s", game_at(i)->name, err);
    }
}

Test(game, a_setting_s_unknown_game_is_said_with_the_games)
{
    char err[400] = "", names[256], want[400];
    cr_assert_eq(game_find_said(GAME_DEFAULT_NAME, INT_MAX, err, sizeof err), game_default());
    cr_assert_str_eq(err, "", "a known game says nothing");
    game_names(names, sizeof names);
    cr_assert_null(game_find_said("chess", INT_MAX, err, sizeof err));
    snprintf(want, sizeof want, "unknown game 'chess' (the games: %s)", names);
    cr_assert_str_eq(err, want);
    cr_assert_null(game_find_said("chess", 3, err, sizeof err));
    snprintf(want, sizeof want, "unknown game 'che' (the games: %s)", names);
    cr_assert_str_eq(err, want, "the name cut at `shown` characters");
}

/* A copy of Khreibaga's definition under another name, to break in one place. */
static game_def s_copy(const char *name)
{
    game_def d = khreibaga_game;
    d.name = name;
    return d;
}

static const int16_t s_bad_cells[25] = {0}; /* every cell to 0: no permutation */
static int s_first_action(int a)
{
    (void)a;
    return 0;
}

Test(game, registration_checks_each_game_s_limits)
{
    char err[300];
    struct {
        game_def d;       /* the broken definition */
        const char *why;  /* a word of the reason */
    } bad[16];
    int n = 0;
    bad[n].d = s_copy(""), bad[n++].why = "name";
    bad[n].d = s_copy("Upper"), bad[n++].why = "name";
    bad[n].d = s_copy("a-name-longer-than-thirty-one-chars"), bad[n++].why = "name";
    bad[n].d = s_copy("big-actions"), bad[n].d.action_count = GAME_MAX_ACTIONS + 1,
    bad[n++].why = "action_count";
    bad[n].d = s_copy("big-legal"), bad[n].d.max_legal = GAME_MAX_LEGAL + 1,
    bad[n++].why = "max_legal";
    bad[n].d = s_copy("big-planes"), bad[n].d.planes = 200, bad[n++].why = "planes";
    bad[n].d = s_copy("big-packed"), bad[n].d.packed_bytes = GAME_PACKED_BYTES + 1,
    bad[n++].why = "packed_bytes";
    bad[n].d = s_copy("big-state"), bad[n].d.state_bytes = GAME_STATE_BYTES + 1,
    bad[n++].why = "state_bytes";
    bad[n].d = s_copy("big-position"), bad[n].d.position_chars = GAME_POSITION_CHARS + 1,
    bad[n++].why = "position_chars";
    bad[n].d = s_copy("short-position"), bad[n].d.position_chars = 10,
    bad[n++].why = "position_chars";
    bad[n].d = s_copy("no-sims"), bad[n].d.simulations = 0, bad[n++].why = "simulations";
    bad[n].d = s_copy("no-alpha"), bad[n].d.dirichlet_alpha = 0, bad[n++].why = "dirichlet_alpha";
    bad[n].d = s_copy("no-apply"), bad[n].d.apply = NULL, bad[n++].why = "missing";
    static const game_symmetry cells[] = {{"bad", s_bad_cells, NULL, NULL}};
    bad[n].d = s_copy("bad-cells"), bad[n].d.symmetries = cells, bad[n++].why = "symmetry";
    static const int16_t mirror[25] = {4,  3,  2,  1,  0,  9,  8,  7,  6,  5,  14, 13, 12,
                                       11, 10, 19, 18, 17, 16, 15, 24, 23, 22, 21, 20};
    static const game_symmetry actions[] = {{"bad", mirror, NULL, s_first_action}};
    bad[n].d = s_copy("bad-actions"), bad[n].d.symmetries = actions, bad[n++].why = "symmetry";
    bad[n].d = s_copy("many-symmetries"), bad[n].d.n_symmetries = GAME_MAX_SYMMETRIES + 1,
    bad[n++].why = "symmetries";
    for (int i = 0; i < n; i++) {
        err[0] = 0;
        cr_assert_eq(game_check(&bad[i].d, err, sizeof err), KZ_EINVAL, "case %d", i);
        cr_assert(strstr(err, bad[i].why), "case %d: '%s' lacks '%s'", i, err, bad[i].why);
        cr_assert_eq(game_register(&bad[i].d, err, sizeof err), KZ_EINVAL, "case %d", i);
        cr_assert_null(game_find(bad[i].d.name), "case %d: refused, not registered", i);
    }
    /* A good definition under a taken name is refused too. */
    game_def twin = s_copy(GAME_DEFAULT_NAME);
    cr_assert_eq(game_register(&twin, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "registered already"), "%s", err);
}

Test(game, a_game_registered_at_run_time_is_found)
{
    static game_def copy;
    copy = s_copy("khreibaga-twin");
    char err[200] = "";
    int before = 0;
    while (game_at(before))
        before++;
    cr_assert_eq(game_register(&copy, err, sizeof err), 0, "%s", err);
    cr_assert_eq(game_find("khreibaga-twin"), &copy);
    cr_assert_eq(game_at(before), &copy, "after the others");
    char names[512];
    game_names(names, sizeof names);
    cr_assert(strstr(names, ", khreibaga-twin"), "%s", names);
}

/* Khreibaga's one symmetry is R19's mirror: the planes' rows reversed, every
 * plane kept, the actions through the mirror; applied twice, nothing moves. */
Test(game, symmetries_map_planes_and_policies)
{
    const game_def *g = &khreibaga_game;
    cr_assert_eq(g->n_symmetries, 1);
    cr_assert_str_eq(g->symmetries[0].name, "mirror");
    game_state s;
    g->init(&s);
    int C = g->planes, H = g->height, W = g->width, A = g->action_count;
    float x[7 * 25], x0[7 * 25], pi[625], pi0[625];
    g->encode_planes(&s, x);
    memcpy(x0, x, sizeof x);
    for (int a = 0; a < A; a++)
        pi[a] = pi0[a] = (float)a;
    game_symmetry_planes(g, 0, x);
    game_symmetry_policy(g, 0, pi);
    for (int p = 0; p < C; p++)
        for (int r = 0; r < H; r++)
            for (int c = 0; c < W; c++)
                cr_assert_eq(x[(p * H + r) * W + c], x0[(p * H + r) * W + (W - 1 - c)]);
    for (int a = 0; a < A; a++)
        cr_assert_eq(pi[g->symmetries[0].action(a)], pi0[a]);
    game_symmetry_planes(g, 0, x);
    game_symmetry_policy(g, 0, pi);
    cr_assert(!memcmp(x, x0, sizeof x) && !memcmp(pi, pi0, sizeof pi));
}

/* Whole-turn perft: a turn is one node however many hops it takes. In R2's
 * start no capture is possible for the first four hops (perft 3, 4, 5, 7
 * both ways); a position with one capture sequence of two hops and nothing
 * else counts 2 hops but 1 turn. */
Test(game, whole_turn_perft_counts_a_capture_sequence_once)
{
    const game_def *g = &khreibaga_game;
    game_state s;
    g->init(&s);
    for (int d = 1; d <= 4; d++)
        cr_assert_eq(game_perft_turns(g, &s, d), game_perft(g, &s, d), "depth %d", d);
    char err[200];
    /* Black's man on 0 takes 5 (0x10), then 15 (10x20): one sequence; White
     * then has no pieces. */
    cr_assert_eq(g->parse_position(&s, "b....w.........w......... b", err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(game_perft(g, &s, 1), 1);
    cr_assert_eq(game_perft(g, &s, 2), 1);
    cr_assert_eq(game_perft_turns(g, &s, 1), 1);
    cr_assert_eq(game_perft_turns(g, &s, 2), 0, "White has lost: nothing below");
    cr_assert_eq(game_perft(g, &s, 3), 0);
}
