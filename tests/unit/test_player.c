/* Tests of search/player.h: the spec syntax, the one-legal-action shortcut,
 * alpha-beta (and greedy) against a brute-force minimax written here from the
 * header's definition, UCT's perspective inside capture sequences, and the
 * ladder's first rungs (greedy, alpha-beta and UCT each beat random).
 *
 * The brute force is deliberately built differently from player.c: plain
 * minimax without pruning, values from Black's view (max for player 0, min
 * for player 1, whoever moves), material counted from the R20 position string
 * rather than from the planes, and captures recognised by the piece count. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "games/khreibaga.h"
#include "play/match.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "search/player.h"
#include "common/util.h"

/* ---- the brute force ---- */

/* Men and kings per player ([player][0 men, 1 kings]) from the position string. */
static void s_count(const game_def *g, const game_state *s, int cnt[2][2])
{
    char pos[128];
    g->format_position(s, pos, sizeof pos);
    memset(cnt, 0, sizeof(int[2][2]));
    for (int i = 0; i < g->height * g->width; i++) {
        switch (pos[i]) {
        case 'b': cnt[0][0]++; break;
        case 'B': cnt[0][1]++; break;
        case 'w': cnt[1][0]++; break;
        case 'W': cnt[1][1]++; break;
        default: break;
        }
    }
}

static int s_total(const game_def *g, const game_state *s)
{
    int c[2][2];
    s_count(g, s, c);
    return c[0][0] + c[0][1] + c[1][0] + c[1][1];
}

/* The evaluation of player.h (Khreibaga's game_def.evaluate plus mobility), from Black's view. */
static long s_eval_black(const game_def *g, const game_state *s, bool mobility)
{
    int c[2][2];
    s_count(g, s, c);
    int me = g->to_move(s);
    long v = (long)KH_EVAL_MAN * (c[me][0] - c[1 - me][0]) +
             (long)KH_EVAL_KING * (c[me][1] - c[1 - me][1]);
    if (mobility) {
        uint16_t legal[GAME_MAX_LEGAL];
        v += (long)PLAYER_EVAL_MOBILITY * g->legal_actions(s, legal);
    }
    return me == 0 ? v : -v;
}

/* Whether the mover (at a turn start) has no capture: every action keeps all pieces. */
static bool s_quiet(const game_def *g, const game_state *s)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    for (int i = 0; i < n; i++) {
        game_state c = *s;
        g->apply(&c, legal[i]);
        if (s_total(g, &c) != s_total(g, s))
            return false;
    }
    return true;
}

/* Minimax value from Black's view; depth in turns, q quiescence turns left. */
static long s_minimax(const game_def *g, const game_state *s, int depth, int q, int hops,
                      bool mobility)
{
    game_result r = g->result(s);
    if (r.over)
        return r.winner < 0 ? 0 : r.winner == 0 ? PLAYER_WIN - hops : -(PLAYER_WIN - hops);
    if (depth == 0) {
        if (q == 0 || s_quiet(g, s))
            return s_eval_black(g, s, mobility);
        depth = 1;
        q--;
    }
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    bool black = g->to_move(s) == 0;
    long best = black ? -4L * PLAYER_WIN : 4L * PLAYER_WIN;
    for (int i = 0; i < n; i++) {
        game_state c = *s;
        g->apply(&c, legal[i]);
        long v = s_minimax(g, &c, g->mid_turn(&c) ? depth : depth - 1, q, hops + 1, mobility);
        best = black ? (v > best ? v : best) : (v < best ? v : best);
    }
    return best;
}

/* The brute-force value of every legal action of s from the mover's view;
 * returns the best. */
static long s_action_values(const game_def *g, const game_state *s, int depth, bool mobility,
                            int n, const uint16_t *legal, long *values)
{
    int me = g->to_move(s);
    long best = -4L * PLAYER_WIN;
    for (int i = 0; i < n; i++) {
        game_state c = *s;
        g->apply(&c, legal[i]);
        long v = s_minimax(g, &c, g->mid_turn(&c) ? depth : depth - 1, PLAYER_QUIESCENCE_TURNS,
                           1, mobility);
        values[i] = me == 0 ? v : -v;
        if (values[i] > best)
            best = values[i];
    }
    return best;
}

/* Small hand-built positions (R20): endgames with kings, capture sequences,
 * mid-sequence states, both sides to move. */
static const char *const s_positions[] = {
    ".....w......w.......w...B b",   /* king takes 12 then must choose 0-10 (wins) or 0-15 */
    "B....w..............w.... b 0", /* the same, mid-sequence */
    ".....w......w.......w...B w",   /* the same men, white to move */
    ".....B....www.....b...w.. b",   /* king or man: only 5-20 keeps a win */
    "B...W...b.w.....w.....w.. b",
    "..........B.WW.W....B..w. b",
    "b....w.........w......... b",   /* a man's two-hop sequence takes the last pieces */
    "...WW...wB..w.B.......... b",
    "W.W.........w.....w.B.B.. b",
    "..W.......w.w...wb..B.... b",
    "bb.b..w.w..w...........W. w",
    "bbb..b..w.ww.....w....... b",
};
#define N_POSITIONS (sizeof s_positions / sizeof s_positions[0])

/* States to compare on: the hand-built ones, then states along random games
 * from the start (every third action, mid-sequence states included). */
static int s_test_states(const game_def *g, game_state *out, int max)
{
    int n = 0;
    char err[200];
    for (size_t i = 0; i < N_POSITIONS; i++) {
        cr_assert_eq(g->parse_position(&out[n], s_positions[i], err, sizeof err), 0, "%s: %s",
                     s_positions[i], err);
        if (!g->result(&out[n]).over)
            n++;
    }
    rng_t rng;
    rng_seed(&rng, 77);
    for (int game = 0; game < 6 && n < max; game++) {
        game_state s;
        g->init(&s);
        for (int k = 0; !g->result(&s).over && n < max; k++) {
            if (k % 3 == 0)
                out[n++] = s;
            uint16_t legal[GAME_MAX_LEGAL];
            int m = g->legal_actions(&s, legal);
            g->apply(&s, legal[rng_below(&rng, (uint32_t)m)]);
        }
    }
    return n;
}

Test(player, alphabeta_agrees_with_brute_force)
{
    const game_def *g = game_default();
    static game_state states[80];
    int n = s_test_states(g, states, 80);
    cr_assert_gt(n, 40);
    int mid_turn = 0;
    for (int depth = 1; depth <= 2; depth++) {
        for (int mob = 0; mob <= 1; mob++) {
            for (int i = 0; i < n; i++) {
                const game_state *s = &states[i];
                mid_turn += g->mid_turn(s);
                uint16_t legal[GAME_MAX_LEGAL];
                long values[GAME_MAX_LEGAL];
                int m = g->legal_actions(s, legal);
                long best = s_action_values(g, s, depth, mob, m, legal, values);
                int action;
                long score;
                long nodes = player_alphabeta_search(g, s, depth, mob, &action, &score);
                char pos[128];
                g->format_position(s, pos, sizeof pos);
                cr_assert_eq(score, best, "%s depth %d mobility %d: alpha-beta %ld, brute %ld",
                             pos, depth, mob, score, best);
                int lowest_best = -1;
                for (int k = 0; k < m && lowest_best < 0; k++)
                    if (values[k] == best)
                        lowest_best = legal[k];
                cr_assert_eq(action, lowest_best, "%s depth %d: action %d, expected %d", pos,
                             depth, action, lowest_best);
                cr_assert_gt(nodes, 0);
            }
        }
    }
    cr_assert_gt(mid_turn, 0, "the sample must hold mid-sequence states");
}

Test(player, evaluation_matches_position_string)
{
    const game_def *g = game_default();
    static game_state states[80];
    int n = s_test_states(g, states, 80);
    for (int i = 0; i < n; i++) {
        long black = s_eval_black(g, &states[i], true);
        long mover = g->to_move(&states[i]) == 0 ? black : -black;
        cr_assert_eq(player_evaluate(g, &states[i], true), mover);
        long black0 = s_eval_black(g, &states[i], false);
        cr_assert_eq(player_evaluate(g, &states[i], false),
                     g->to_move(&states[i]) == 0 ? black0 : -black0);
    }
}

Test(player, random_tie_breaks_stay_among_the_best)
{
    /* The alphabeta and greedy players shuffle the root: whatever they pick must
     * have the best brute-force value, and where several actions tie, different
     * seeds must pick different ones somewhere. */
    const game_def *g = game_default();
    static game_state states[80];
    int n = s_test_states(g, states, 60);
    player *ab = player_alphabeta_new(g, 2), *gr = player_greedy_new(g);
    int varied = 0;
    for (int i = 0; i < n; i++) {
        uint16_t legal[GAME_MAX_LEGAL];
        long v2[GAME_MAX_LEGAL], v1[GAME_MAX_LEGAL];
        int m = g->legal_actions(&states[i], legal);
        long best2 = s_action_values(g, &states[i], 2, true, m, legal, v2);
        long best1 = s_action_values(g, &states[i], 1, false, m, legal, v1);
        int first = -1;
        bool differs = false;
        for (uint64_t seed = 1; seed <= 6; seed++) {
            int a, b;
            player_new_game(ab, seed);
            player_new_game(gr, seed);
            cr_assert_eq(player_choose(ab, &states[i], &a, NULL), 0);
            cr_assert_eq(player_choose(gr, &states[i], &b, NULL), 0);
            for (int k = 0; k < m; k++) {
                if (legal[k] == a)
                    cr_assert_eq(v2[k], best2, "alphabeta chose a worse action");
                if (legal[k] == b)
                    cr_assert_eq(v1[k], best1, "greedy chose a worse action");
            }
            if (first >= 0 && a != first)
                differs = true;
            first = a;
        }
        varied += differs;
    }
    cr_assert_gt(varied, 0, "ties should be broken at random");
    player_destroy(&ab);
    player_destroy(&gr);
}

/* ---- tactics: the win lies past a capture sequence ---- */

typedef struct tactic {
    const char *position;  /* R20 */
    const char *before;    /* an action to play first, or NULL */
    const char *good;      /* the only action that keeps the win */
} tactic;

/* Each was found by a search over random positions with alpha-beta, and is checked below
 * again: the good action wins by force, the others lose. */
static const tactic s_tactics[] = {
    /* Turn start, two first hops; 5-20 leads to a choice of second hops of
     * which one wins and one loses; 18-6 loses. */
    {".....B....www.....b...w.. b", NULL, "5-20"},
    {"B...W...b.w.....w.....w.. b", NULL, "0-20"},
    {"..........B.WW.W....B..w. b", NULL, "20-24"},
    /* Mid-sequence: after 24-0 the king must choose 0-10 (safe) over 0-15
     * (captured by the man on 20 at once). */
    {".....w......w.......w...B b", "24-0", "0-10"},
};

static void s_tactic_state(const game_def *g, const tactic *t, game_state *s, int *good)
{
    char err[200];
    cr_assert_eq(g->parse_position(s, t->position, err, sizeof err), 0, "%s", err);
    if (t->before) {
        int a;
        cr_assert_eq(g->parse_action(t->before, &a), 0);
        cr_assert(game_is_legal(g, s, a));
        g->apply(s, a);
    }
    cr_assert_eq(g->parse_action(t->good, good), 0);
    cr_assert(game_is_legal(g, s, *good));
}

Test(player, tactics_are_what_they_claim)
{
    /* Brute force at depth 4: the good action is a forced win, every other a forced loss. */
    const game_def *g = game_default();
    for (size_t i = 0; i < sizeof s_tactics / sizeof s_tactics[0]; i++) {
        game_state s;
        int good;
        s_tactic_state(g, &s_tactics[i], &s, &good);
        uint16_t legal[GAME_MAX_LEGAL];
        long v[GAME_MAX_LEGAL];
        int m = g->legal_actions(&s, legal);
        cr_assert_geq(m, 2);
        s_action_values(g, &s, 4, false, m, legal, v);
        for (int k = 0; k < m; k++) {
            if (legal[k] == good)
                cr_assert_gt(v[k], PLAYER_WIN / 2, "%s: %s should win", s_tactics[i].position,
                             s_tactics[i].good);
            else
                cr_assert_lt(v[k], -PLAYER_WIN / 2, "%s: action %d should lose",
                             s_tactics[i].position, legal[k]);
        }
    }
}

Test(player, uct_perspective_inside_capture_sequences)
{
    /* UCT finds the good action with a clear majority of visits and a winning value.
     * With the value negated on a hop that keeps the mover (the R18 mistake), the
     * visits split near evenly and the value turns negative in these positions. */
    const game_def *g = game_default();
    player *p = player_uct_new(g, &(player_uct_config){.playouts = 300, .c = 1.0});
    for (size_t i = 0; i < sizeof s_tactics / sizeof s_tactics[0]; i++) {
        game_state s;
        int good;
        s_tactic_state(g, &s_tactics[i], &s, &good);
        for (uint64_t seed = 1; seed <= 3; seed++) {
            player_info info;
            int a;
            player_new_game(p, seed);
            cr_assert_eq(player_choose(p, &s, &a, &info), 0);
            cr_assert_eq(a, good, "%s seed %d: chose %d", s_tactics[i].position, (int)seed, a);
            cr_assert_eq(info.action, a);
            cr_assert_gt(info.value, 0.5, "%s: value %f", s_tactics[i].position, info.value);
            for (int k = 0; k < info.n; k++)
                if (info.actions[k] == good)
                    cr_assert_geq(info.share[k], 0.8, "%s: share %f", s_tactics[i].position,
                                  info.share[k]);
        }
    }
    player_destroy(&p);
}

Test(player, alphabeta_and_greedy_find_the_tactics)
{
    const game_def *g = game_default();
    player *ab = player_alphabeta_new(g, 4);
    for (size_t i = 0; i < sizeof s_tactics / sizeof s_tactics[0]; i++) {
        game_state s;
        int good, a;
        s_tactic_state(g, &s_tactics[i], &s, &good);
        player_info info;
        player_new_game(ab, 11);
        cr_assert_eq(player_choose(ab, &s, &a, &info), 0);
        cr_assert_eq(a, good, "%s: chose %d", s_tactics[i].position, a);
        cr_assert_gt(info.score, PLAYER_WIN / 2);
        cr_assert_float_eq(info.value, 1.0, 1e-12);
    }
    /* In the mid-sequence one, greedy sees the forced recapture of 0-15 too. */
    player *gr = player_greedy_new(g);
    game_state s;
    int good, a;
    s_tactic_state(g, &s_tactics[3], &s, &good);
    player_new_game(gr, 1);
    cr_assert_eq(player_choose(gr, &s, &a, NULL), 0);
    cr_assert_eq(a, good);
    player_destroy(&ab);
    player_destroy(&gr);
}

/* ---- the interface ---- */

Test(player, uct_info_is_consistent)
{
    const game_def *g = game_default();
    player *p = player_uct_new(g, &(player_uct_config){.playouts = 200, .c = 1.4});
    cr_assert_str_eq(player_spec_name(p), "uct:200:1.4");
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    int m = g->legal_actions(&s, legal);
    player_info info;
    int a;
    player_new_game(p, 5);
    cr_assert_eq(player_choose(p, &s, &a, &info), 0);
    cr_assert_eq(info.n, m);
    cr_assert_eq(info.work, 200);
    double sum = 0;
    bool chosen_listed = false;
    for (int k = 0; k < m; k++) {
        cr_assert_eq(info.actions[k], legal[k]);
        cr_assert_geq(info.share[k], 0);
        sum += info.share[k];
        chosen_listed |= info.actions[k] == a;
    }
    cr_assert_float_eq(sum, 1.0, 1e-5);
    cr_assert(chosen_listed);
    cr_assert(info.value >= -1 && info.value <= 1);
    /* The same seed and state give the same choice and the same distribution. */
    player_info again;
    int b;
    player_new_game(p, 5);
    cr_assert_eq(player_choose(p, &s, &b, &again), 0);
    cr_assert_eq(a, b);
    for (int k = 0; k < m; k++)
        cr_assert_float_eq(info.share[k], again.share[k], 0);
    player_destroy(&p);
    cr_assert_null(p);
    player_destroy(&p); /* NULL-safe */
}

Test(player, one_legal_action_needs_no_thinking)
{
    /* ".....w......w.......w...B b": the king's only action is 24-0. */
    const game_def *g = game_default();
    game_state s;
    char err[200];
    cr_assert_eq(g->parse_position(&s, s_tactics[3].position, err, sizeof err), 0);
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(g->legal_actions(&s, legal), 1);
    const char *specs[] = {"random", "greedy", "uct:100000", "alphabeta:12"};
    for (size_t i = 0; i < 4; i++) {
        player *p = player_from_spec(g, specs[i], err, sizeof err);
        cr_assert_not_null(p, "%s", err);
        player_info info;
        int a;
        cr_assert_eq(player_choose(p, &s, &a, &info), 0);
        cr_assert_eq(a, legal[0]);
        cr_assert_eq(info.work, 0, "%s searched", specs[i]);
        cr_assert_float_eq(info.share[0], 1.0, 0);
        player_destroy(&p);
    }
}

Test(player, specs)
{
    const game_def *g = game_default();
    char err[300];
    struct {
        const char *spec, *name;
    } good[] = {
        {"random", "random"},         {"greedy", "greedy"},
        {"uct:50", "uct:50:1"},       {"uct:7:0.5", "uct:7:0.5"},
        {"alphabeta:1", "alphabeta:1"}, {"alphabeta:32", "alphabeta:32"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        player *p = player_from_spec(g, good[i].spec, err, sizeof err);
        cr_assert_not_null(p, "%s: %s", good[i].spec, err);
        cr_assert_str_eq(player_spec_name(p), good[i].name);
        player_destroy(&p);
    }
    const char *bad[] = {"", "randoms", "random:1", "greedy:2", "uct", "uct:", "uct:0",
                         "uct:10000001", "uct:5:x", "uct:5:-1", "alphabeta", "alphabeta:0",
                         "alphabeta:33", "alphabeta:2x", "policy", "policy:", "mcts:",
                         "mcts:m:0", "mcts:m:abc", "gumbel:", "gumbel:m:0", "gumbel"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        player *p = player_from_spec(g, bad[i], err, sizeof err);
        cr_assert_null(p, "'%s' should be refused", bad[i]);
        cr_assert_gt(strlen(err), 10, "'%s': no reason given", bad[i]);
        cr_assert_null(strchr(err, '\n'));
    }
    cr_assert_not_null(strstr(player_spec_help(), "uct:N"));
    cr_assert_not_null(strstr(player_spec_help(), "gumbel:MODEL"));
}

/* ---- the ladder's first rungs ---- */

/* A's score over `games` games against random, alternating colours. */
static void s_beats_random(const char *spec, int games, double min_score)
{
    const game_def *g = game_default();
    char err[300];
    player *a = player_from_spec(g, spec, err, sizeof err), *b = player_random_new(g);
    cr_assert_not_null(a, "%s", err);
    match_config cfg;
    match_config_default(&cfg);
    cfg.games = games;
    cfg.seed = 2024;
    int w, d, l;
    cr_assert_eq(match_run(g, a, b, &cfg, &w, &d, &l, NULL), 0);
    match_stats st;
    match_stats_compute(w, d, l, &st);
    /* Against random these players win nearly every game (100/100 when measured);
     * the bar leaves a wide margin, and the fixed seed makes the run repeatable. */
    cr_assert_geq(st.score, min_score, "%s vs random: +%d =%d -%d", spec, w, d, l);
    cr_assert_gt(st.score_lo, 0.5, "%s vs random: the interval must exclude 0.5", spec);
    player_destroy(&a);
    player_destroy(&b);
}

Test(ladder, greedy_beats_random) { s_beats_random("greedy", 30, 0.8); }
Test(ladder, alphabeta2_beats_random) { s_beats_random("alphabeta:2", 20, 0.8); }
Test(ladder, uct_beats_random) { s_beats_random("uct:100", 20, 0.8); }

/* ---- kz analyse and kz play ---- */

/* Runs `kz ARGS` with `input` on stdin; returns the exit status, output in out. */
static int s_kz(const char *args, const char *input, char *out, size_t len)
{
    return harness_kz_out(args, input, true, out, len);
}

Test(kz_play, capture_sequence_hop_by_hop)
{
    /* A man on 0 takes 5 and then 15 (0-10, 10-20): the last white pieces. Bad input
     * first: unreadable, then illegal, then a request for the legal actions. */
    static char out[65536];
    int rc = s_kz("play --player random --position 'b....w.........w......... b'",
                  "hello\n3-4\nmoves\n0x10\n10-20\n", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "cannot read 'hello'"), "%s", out);
    cr_assert_not_null(strstr(out, "legal: 0x10\n"), "captures written with x: %s", out);
    cr_assert_not_null(strstr(out, "illegal: 3-4; legal: 0x10"), "%s", out);
    cr_assert_not_null(strstr(out, "go on with the same piece (10x20)"), "%s", out);
    cr_assert_not_null(strstr(out, "(continue the capture)"), "%s", out);
    cr_assert_not_null(strstr(out, "position: ..........b....w......... b 10"), "%s", out);
    cr_assert_not_null(strstr(out, "result: black (no-pieces): you win"), "%s", out);
    /* The board is drawn at the start and after each of the two hops. */
    int boards = 0;
    for (const char *p = out; (p = strstr(p, "position: ")); p++)
        boards++;
    cr_assert_eq(boards, 3, "%s", out);
}

Test(kz_play, engine_moves_first_and_eof_ends)
{
    static char out[65536];
    int rc = s_kz("play --color w --sims 30 --seed 4", "", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "engine (black) plays "), "%s", out);
    cr_assert_not_null(strstr(out, "white to move"), "%s", out);
    cr_assert_not_null(strstr(out, "end of input"), "%s", out);
    /* The search over the uniform evaluator as the engine. */
    rc = s_kz("play --color w --model uniform --sims 20", "", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "the engine (mcts:uniform:20) plays black"), "%s", out);
    cr_assert_not_null(strstr(out, "engine (black) plays "), "%s", out);
    /* A few actions, then EOF in the middle of the game. */
    rc = s_kz("play --player greedy", "7-12\n", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "engine (white) plays "), "%s", out);
    cr_assert_not_null(strstr(out, "end of input"), "%s", out);
    rc = s_kz("play --player greedy", "quit\n", out, sizeof out);
    cr_assert_eq(rc, 0);
    cr_assert_not_null(strstr(out, "game abandoned"), "%s", out);
}

Test(kz_play, help_hint_undo_the_last_move_marked_and_the_board_turned_for_white)
{
    static char out[131072];
    /* As black: help, a move (marked), the engine's reply, a hint, undo. */
    int rc = s_kz("play --model uniform --sims 20", "help\n7-12\nhint\nundo\nundo\nquit\n", out,
                  sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "  hint       the engine's top moves"), "a real help: %s", out);
    cr_assert_not_null(strstr(out, "  undo "), "%s", out);
    cr_assert_not_null(strstr(out, "\n  10   b - b -<b>- w - w   14     10 11 12 13 14\n"),
                       "7-12 lands on 12: %s", out);
    cr_assert_not_null(strstr(out, "\n   5   b - b - * - b - b    9      5  6  7  8  9\n"),
                       "and left 7: %s", out);
    cr_assert_not_null(strstr(out, "last: black 7-12"), "%s", out);
    /* White must take the man on 12 (a capture: x), marked where it was. */
    const char *reply = strstr(out, "engine (white) plays ");
    cr_assert_not_null(reply, "%s", out);
    cr_assert(strchr(reply, 'x') < strchr(reply, '\n'), "a capture with x: %.60s", reply);
    cr_assert_not_null(strstr(reply, " x "), "the taken man marked: %s", reply);
    cr_assert_not_null(strstr(out, "hint (mcts:uniform:20): your value "), "%s", out);
    cr_assert_not_null(strstr(out, "took back 2 actions"), "%s", out);
    cr_assert_not_null(strstr(out, "nothing to undo"), "%s", out);
    /* As white: the board turned (24 at the bottom left), the engine first. */
    rc = s_kz("play --color w --model uniform --sims 20", "board\nflip\nquit\n", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "You play white; the engine (mcts:uniform:20) plays black"),
                       "%s", out);
    cr_assert_not_null(strstr(out, "\n   4   b - b - b - b - b    0      4  3  2  1  0\n"),
                       "turned: %s", out);
    cr_assert_not_null(strstr(out, "\n  24   w - w - w - w - w   20     24 23 22 21 20\n"), "%s",
                       out);
    cr_assert_not_null(strstr(out, "(turned: White's side at the bottom)"), "%s", out);
    const char *flipped = strstr(out, "white> flip");
    cr_assert_not_null(flipped, "%s", out);
    cr_assert_not_null(strstr(flipped, "\n  20   w - w - w - w - w   24     20 21 22 23 24\n"),
                       "flip: %s", flipped);
}

Test(kz_play, bad_options)
{
    static char out[8192];
    const char *bad[] = {
        "play --color x", "play --sims 0", "play --player foo", "play extra",
        "play --position 'bbb b'", "play --bogus", "play --player random --sims 5",
        "play --model /nonexistent/model",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = s_kz(bad[i], "", out, sizeof out);
        cr_assert_eq(rc, 2, "kz %s: status %d: %s", bad[i], rc, out);
        cr_assert(!strncmp(out, "kz: ", 4), "kz %s: %s", bad[i], out);
        cr_assert_null(strchr(strchr(out, '\n') + 1, '\n'), "kz %s: one line: %s", bad[i], out);
    }
}

Test(kz_analyse, reports_the_choice)
{
    static char out[65536];
    /* Mid-sequence (after 24-0): 0-10 wins, 0-15 is recaptured. */
    int rc = s_kz("analyse --position '.....w......w.......w...B b' 24-0 --sims 300", "", out,
                  sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "chosen: 0x10\n"), "%s", out);
    cr_assert_not_null(strstr(out, "value: +0."), "%s", out);
    cr_assert_not_null(strstr(out, "distribution (2 legal actions):"), "%s", out);
    double share_good = -1, share_bad = -1;
    const char *p = strstr(out, "  0x10 ");
    cr_assert_not_null(p);
    cr_assert_eq(sscanf(p, " 0x10 %lf", &share_good), 1);
    p = strstr(out, "  0x15 ");
    cr_assert_not_null(p);
    cr_assert_eq(sscanf(p, " 0x15 %lf", &share_bad), 1);
    cr_assert_float_eq(share_good + share_bad, 1.0, 0.002);
    cr_assert_gt(share_good, share_bad);
    rc = s_kz("analyse --player alphabeta:4 --position '.....B....www.....b...w.. b'", "", out,
              sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "chosen: 5x20\n"), "%s", out);
    cr_assert_not_null(strstr(out, "value: +1.000"), "%s", out);
    /* The search over the uniform evaluator, with its priors and values. */
    rc = s_kz("analyse --model uniform --sims 200 --position '.....w......w.......w...B b' 24-0",
              "", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "engine: mcts:uniform:200"), "%s", out);
    cr_assert_not_null(strstr(out, "chosen: 0x10\n"), "%s", out);
    cr_assert_not_null(strstr(out, "share prior q"), "%s", out);
    cr_assert_not_null(strstr(out, "work: 200 "), "%s", out);
    rc = s_kz("analyse --position 'b........................ w'", "", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "result: black (no-pieces)"), "%s", out);
}

Test(kz_analyse, bad_input)
{
    static char out[8192];
    const char *bad[] = {
        "analyse 7-13", "analyse 7-12 99", "analyse --position 'xyz b'", "analyse --sims -3",
        "analyse --player uct:10 --model m", "analyse --color b", "analyse --player nope",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = s_kz(bad[i], "", out, sizeof out);
        cr_assert_eq(rc, 2, "kz %s: status %d: %s", bad[i], rc, out);
        cr_assert(!strncmp(out, "kz: ", 4), "kz %s: %s", bad[i], out);
        cr_assert_null(strchr(strchr(out, '\n') + 1, '\n'), "kz %s: one line: %s", bad[i], out);
    }
    int rc = s_kz("analyse 7-13", "", out, sizeof out);
    cr_assert_eq(rc, 2);
    cr_assert_not_null(strstr(out, "legal: "), "%s", out);
}

/* ---- the network players ---- */

Test(player, mcts_player_searches_and_reports)
{
    const game_def *g = game_default();
    char err[300];
    /* Mid-sequence: 0-15 is recaptured at once (a terminal loss the search sees
     * through the rules even with a uniform evaluator), 0-10 is safe. */
    game_state s;
    int good;
    s_tactic_state(g, &s_tactics[3], &s, &good);
    player *p = player_from_spec(g, "mcts:uniform:200", err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    cr_assert_str_eq(player_spec_name(p), "mcts:uniform:200");
    player_new_game(p, 1);
    player_info info;
    int a;
    cr_assert_eq(player_choose(p, &s, &a, &info), 0);
    cr_assert_eq(a, good);
    cr_assert_eq(info.work, 200);
    double share = 0, prior = 0;
    for (int k = 0; k < info.n; k++) {
        share += info.share[k];
        prior += info.prior[k];
        if (info.actions[k] != good)
            cr_assert_float_eq(info.q[k], -1.0, 1e-6, "the recapture is a certain loss");
    }
    cr_assert_float_eq(share, 1.0, 1e-5);
    cr_assert_float_eq(prior, 1.0, 1e-5);
    player_destroy(&p);
}

Test(player, gumbel_player_plays_the_halving_s_winner)
{
    /* The same mid-sequence tactic (0-15 loses to a recapture, 0-10 is safe)
     * with the Gumbel root and no noise: the safe hop, the same choice for any
     * seed. */
    const game_def *g = game_default();
    char err[300];
    game_state s;
    int good;
    s_tactic_state(g, &s_tactics[3], &s, &good);
    player *p = player_from_spec(g, "gumbel:uniform:64", err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    cr_assert_str_eq(player_spec_name(p), "gumbel:uniform:64");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        player_new_game(p, seed);
        player_info info;
        int a;
        cr_assert_eq(player_choose(p, &s, &a, &info), 0);
        cr_assert_eq(a, good);
        cr_assert_eq(info.work, 64);
    }
    player_destroy(&p);
}

Test(player, mcts_player_reuses_its_tree)
{
    /* After its own move and the reply (player_observe), the next search starts
     * from the kept subtree and needs fewer evaluations than a fresh one. */
    const game_def *g = game_default();
    harness_counter ca, cb;
    char err[300];
    mcts_settings ms = player_mcts_settings(300);
    ms.cache_entries = 0; /* every leaf goes to the evaluator */
    evaluator eva = harness_counting(&ca, evaluator_uniform(g));
    evaluator evb = harness_counting(&cb, evaluator_uniform(g));
    player *a = player_mcts_new_evaluator(g, eva, &ms, "a", err, sizeof err);
    player *b = player_mcts_new_evaluator(g, evb, &ms, "b", err, sizeof err);
    cr_assert(a && b, "%s", err);
    player_new_game(a, 1);
    player_new_game(b, 1);
    /* Play until a state at a turn start with several legal actions, observed by a. */
    game_state s;
    g->init(&s);
    int moves = 0;
    for (int k = 0; k < 6; k++) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = g->legal_actions(&s, legal), act;
        if (n > 1) {
            cr_assert_eq(player_choose(a, &s, &act, NULL), 0);
            moves++;
        } else {
            act = legal[0];
        }
        player_observe(a, &s, act);
        g->apply(&s, act);
    }
    cr_assert_gt(moves, 0);
    uint16_t legal[GAME_MAX_LEGAL];
    while (g->legal_actions(&s, legal) < 2) { /* make sure the next search has a choice */
        player_observe(a, &s, legal[0]);
        g->apply(&s, legal[0]);
    }
    long before = ca.positions;
    player_info ia, ib;
    int x, y;
    cr_assert_eq(player_choose(a, &s, &x, &ia), 0);
    cr_assert_eq(player_choose(b, &s, &y, &ib), 0); /* b never saw the game: fresh tree */
    long reused = ca.positions - before, fresh = cb.positions;
    cr_assert_eq(ia.work, 300);
    cr_assert_eq(ib.work, 300);
    cr_assert_lt(reused, fresh, "reused %ld evaluations, fresh %ld", reused, fresh);
    /* Choosing again at an unrelated state (no observe) starts afresh, no crash. */
    game_state t;
    g->init(&t);
    cr_assert_eq(player_choose(a, &t, &x, &ia), 0);
    cr_assert_eq(ia.work, 300);
    cr_assert(game_is_legal(g, &t, x));
    player_destroy(&a);
    player_destroy(&b);
}

Test(player, policy_player_follows_the_network)
{
    const game_def *g = game_default();
    char err[300];
    /* Uniform logits: every legal action equally likely, ties to the lowest. */
    player *p = player_from_spec(g, "policy:uniform", err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(&s, legal), a;
    player_info info;
    cr_assert_eq(player_choose(p, &s, &a, &info), 0);
    cr_assert_eq(a, legal[0]);
    cr_assert_float_eq(info.value, 0.0, 1e-9);
    for (int k = 0; k < n; k++)
        cr_assert_float_eq(info.prior[k], 1.0 / n, 1e-6);
    player_destroy(&p);
    /* A real network from a model file: its choice is the argmax of its own
     * logits over the legal actions, read at the canonical actions (R16). */
    model_arch arch;
    model_arch_default(&arch, g);
    arch.blocks = 1;
    arch.filters = 8;
    model *m = model_new(&arch, 42);
    cr_assert_not_null(m);
    char dir[] = "/tmp/kz_test_policy_XXXXXX", path[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.kzm", dir);
    cr_assert_eq(modelfile_save(m, path, false), 0);
    char spec[300];
    snprintf(spec, sizeof spec, "policy:%s", path);
    p = player_from_spec(g, spec, err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    model_eval *e = model_eval_new(m, 1);
    float planes[7 * 25], logits[625], value;
    rng_t rng;
    rng_seed(&rng, 3);
    for (int k = 0; k < 30 && !g->result(&s).over; k++) {
        n = g->legal_actions(&s, legal);
        if (n > 1) {
            g->encode_planes(&s, planes);
            model_eval_run(e, planes, 1, logits, &value);
            int best = legal[0];
            for (int i = 1; i < n; i++)
                if (logits[g->canonical_action(&s, legal[i])] >
                    logits[g->canonical_action(&s, best)])
                    best = legal[i];
            cr_assert_eq(player_choose(p, &s, &a, &info), 0);
            cr_assert_eq(a, best, "ply %d", k);
            cr_assert_float_eq(info.value, value, 1e-6);
        }
        g->apply(&s, legal[rng_below(&rng, (uint32_t)n)]);
    }
    model_eval_destroy(&e);
    player_destroy(&p);
    /* And an mcts player over the same file plays a legal game. */
    snprintf(spec, sizeof spec, "mcts:%s:20", path);
    p = player_from_spec(g, spec, err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    player *r = player_random_new(g);
    player *pl[2] = {p, r};
    game_state start;
    g->init(&start);
    game_result res;
    int plies;
    cr_assert_eq(match_play_game(g, pl, &start, 5, &res, &plies, NULL), 0);
    cr_assert(res.over && plies > 0);
    player_destroy(&p);
    player_destroy(&r);
    model_destroy(&m);
    unlink(path);
    rmdir(dir);
}

Test(player, network_specs_take_a_precision)
{
    /* A trailing :fp32 or :bf16 picks the network's arithmetic and stays in
     * the player's name; a bf16 policy player reads exactly what a bf16
     * evaluator computes (fp32 on a CPU without AVX512_BF16). */
    const game_def *g = game_default();
    model_arch arch;
    model_arch_default(&arch, g);
    arch.blocks = 1;
    arch.filters = 16;
    model *m = model_new(&arch, 43);
    char dir[] = "/tmp/kz_test_prec_XXXXXX", path[256], spec[300], want[300], err[300];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.kzm", dir);
    cr_assert_eq(modelfile_save(m, path, false), 0);
    static const char *const forms[][2] = {
        {"policy:%s:bf16", "policy:%s:bf16"}, {"policy:%s", "policy:%s"},
        {"mcts:%s:20:fp32", "mcts:%s:20:fp32"}, {"mcts:%s:bf16", "mcts:%s:200:bf16"},
        {"gumbel:%s:16:bf16", "gumbel:%s:16:bf16"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(spec, sizeof spec, forms[i][0], path);
        snprintf(want, sizeof want, forms[i][1], path);
        player *p = player_from_spec(g, spec, err, sizeof err);
        cr_assert_not_null(p, "%s: %s", spec, err);
        cr_assert_str_eq(player_spec_name(p), want);
        player_destroy(&p);
    }
    snprintf(spec, sizeof spec, "mcts:%s:20:fp16", path);
    cr_assert_null(player_from_spec(g, spec, err, sizeof err), "fp16 is no precision");
    /* The bf16 policy player's value is the bf16 evaluator's. */
    snprintf(spec, sizeof spec, "policy:%s:bf16", path);
    player *p = player_from_spec(g, spec, err, sizeof err);
    model_eval_config c = {.precision = MODEL_BF16, .kernels = MODEL_KERNELS_AUTO};
    model_eval *e = model_eval_new_config(m, 1, &c);
    game_state s;
    g->init(&s);
    float planes[7 * 25], logits[625], value;
    g->encode_planes(&s, planes);
    model_eval_run(e, planes, 1, logits, &value);
    int a;
    player_info info;
    cr_assert_eq(player_choose(p, &s, &a, &info), 0);
    cr_assert_eq(info.value, value, "%.9g vs %.9g (%s)", info.value, (double)value,
                 model_eval_path(e));
    model_eval_destroy(&e);
    player_destroy(&p);
    model_destroy(&m);
    unlink(path);
    rmdir(dir);
}

Test(player, network_player_errors)
{
    const game_def *g = game_default();
    char err[300];
    const char *bad[] = {"policy:/nonexistent/m.kzm", "mcts:/nonexistent/m.kzm:10",
                         "mcts:/etc/hostname:10", "mcts:uniform:1000001"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        player *p = player_from_spec(g, bad[i], err, sizeof err);
        cr_assert_null(p, "%s", bad[i]);
        cr_assert_gt(strlen(err), 10, "%s: no reason", bad[i]);
    }
    mcts_settings ms = player_mcts_settings(0);
    harness_counter c;
    evaluator ev = harness_counting(&c, evaluator_uniform(g));
    cr_assert_null(player_mcts_new_evaluator(g, ev, &ms, "x", err, sizeof err));
    cr_assert_not_null(strstr(err, "simulations"), "%s", err);
}

/* A baseline player's tick (player_set_tick): called during a long search,
 * it changes nothing while it returns false (the same seed gives the same
 * move), and returning true gives the move up at once with KZ_ECANCELED
 * (a worker's heartbeats and stops during a deep anchor's move). */
typedef struct tick_count {
    long calls;
    long stop_after; /* return true from this call on (0: never) */
} tick_count;

static bool s_count_tick(void *ctx)
{
    tick_count *t = ctx;
    t->calls++;
    return t->stop_after && t->calls >= t->stop_after;
}

Test(player, a_tick_is_called_in_long_searches_and_can_stop_them)
{
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    rng_t rng;
    rng_seed(&rng, 11);
    /* Into the middle game, at a choice: a search of many nodes. */
    uint16_t legal[GAME_MAX_LEGAL];
    for (int i = 0; i < 6 || g->legal_actions(&s, legal) < 4; i++) {
        int n = g->legal_actions(&s, legal);
        g->apply(&s, legal[rng_below(&rng, (uint32_t)n)]);
    }
    cr_assert(!g->result(&s).over);
    const char *specs[] = {"alphabeta:10", "uct:2000"};
    for (int k = 0; k < 2; k++) {
        char err[200];
        player *a = player_from_spec(g, specs[k], err, sizeof err);
        player *b = player_from_spec(g, specs[k], err, sizeof err);
        cr_assert(a && b, "%s", err);
        tick_count t = {0};
        player_set_tick(b, s_count_tick, &t);
        player_new_game(a, 7);
        player_new_game(b, 7);
        int x = -1, y = -1;
        cr_assert_eq(player_choose(a, &s, &x, NULL), 0);
        cr_assert_eq(player_choose(b, &s, &y, NULL), 0);
        cr_assert_eq(x, y, "%s: the tick changed the move", specs[k]);
        cr_assert_gt(t.calls, 0, "%s: never ticked", specs[k]);
        long full = t.calls;
        t = (tick_count){.stop_after = 1};
        y = -1;
        player_new_game(b, 7);
        cr_assert_eq(player_choose(b, &s, &y, NULL), KZ_ECANCELED, "%s", specs[k]);
        cr_assert_eq(t.calls, 1, "%s: searched on after the stop", specs[k]);
        cr_assert(full > 1, "%s: %ld ticks", specs[k], full);
        player_destroy(&a);
        player_destroy(&b);
    }
}
