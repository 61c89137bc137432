/* Tests of the backgammon module (games/backgammon.c) against
 * docs/rules-backgammon.md: hand-made positions for the rules B2-B17, the
 * Position ID both ways, one-line errors for bad input, and the move
 * generation against the real GNU Backgammon on 300 random positions and
 * rolls (skipped with a message when gnubg is not installed; the full
 * 10,000 are bench_backgammon's). */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/backgammon.h"
#include "games/game.h"
#include "search/gnubg.h"
#include "search/mcts.h"
#include "data/record.h"
#include "data/validate.h"
#include "nn/evaluator.h"
#include "play/match.h"
#include "search/player.h"
#include "tests/harness/harness.h"

static const game_def *G(void) { return &backgammon_game; }

/* Counts from "P:N P:N ..." (P a point 1..24 in that side's own numbering,
 * or "bar"). */
static void s_side(const char *spec, uint8_t out[25])
{
    memset(out, 0, 25);
    for (const char *p = spec; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        int pt;
        if (!strncmp(p, "bar", 3)) {
            pt = 25;
            p += 3;
        } else {
            pt = (int)strtol(p, (char **)&p, 10);
        }
        cr_assert_eq(*p, ':', "bad spec '%s'", spec);
        int n = (int)strtol(p + 1, (char **)&p, 10);
        out[pt - 1] += (uint8_t)n;
    }
}

/* The state: the mover's and the other side's checkers, then "ROLL SIDE"
 * or "SIDE" (B17). */
static game_state s_make(const char *mover, const char *other, const char *rest)
{
    uint8_t own[25], opp[25];
    s_side(mover, own);
    s_side(other, opp);
    char id[16], text[64], err[200];
    backgammon_position_id(own, opp, id);
    snprintf(text, sizeof text, "%s %s", id, rest);
    game_state s;
    cr_assert_eq(G()->parse_position(&s, text, err, sizeof err), 0, "'%s': %s", text, err);
    return s;
}

static void s_legal_text(const game_state *s, char *buf, size_t len)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = G()->legal_actions(s, legal);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[16];
        G()->format_action(legal[i], a, sizeof a);
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? " " : "", a);
    }
}

static int s_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

#define START_OTHER "6:5 8:3 13:5 24:2"

Test(backgammon, b2_b3_the_start_and_the_opening_roll)
{
    game_state s;
    G()->init(&s);
    char pos[64];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, "4HPwATDgc/ABMA opening");
    cr_assert(G()->is_chance(&s));
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 30, "B3: 30 ordered unequal pairs");
    float p[GAME_MAX_LEGAL];
    G()->chance_probs(&s, p);
    cr_assert_float_eq(p[0], 1.0f / 30, 1e-7);
    int a;
    cr_assert_eq(G()->parse_action("13", &a), 0);
    game_state t = s;
    G()->apply(&t, a); /* white 1, black 3: black starts with 31 */
    cr_assert_eq(G()->to_move(&t), 1);
    G()->format_position(&t, pos, sizeof pos);
    cr_assert_str_eq(pos, "4HPwATDgc/ABMA 31 b");
    cr_assert_eq(G()->parse_action("31", &a), 0);
    t = s;
    G()->apply(&t, a);
    cr_assert_eq(G()->to_move(&t), 0);
    bg_whole_move m[64];
    cr_assert_eq(backgammon_whole_moves(&t, m, 64), 16, "the opening 31 has 16 plays");
    bool point = false;
    for (int i = 0; i < 16; i++)
        point |= !strcmp(m[i].text, "8/5 6/5") || !strcmp(m[i].text, "6/5 8/5");
    cr_assert(point, "making the 5-point is one of them");
}

Test(backgammon, b5_the_21_rolls)
{
    game_state s = s_make(START_OTHER, START_OTHER, "w");
    uint16_t legal[GAME_MAX_LEGAL];
    float p[GAME_MAX_LEGAL];
    int n = G()->legal_actions(&s, legal);
    G()->chance_probs(&s, p);
    cr_assert_eq(n, 21);
    int doubles = 0;
    for (int i = 0; i < n; i++) {
        char r[8];
        G()->format_action(legal[i], r, sizeof r);
        bool dbl = r[0] == r[1];
        doubles += dbl;
        cr_assert_float_eq(p[i], dbl ? 1.0f / 36 : 2.0f / 36, 1e-7, "%s", r);
    }
    cr_assert_eq(doubles, 6);
}

Test(backgammon, b6_b7_b8_bar_first_blocked_points_and_hits)
{
    /* On the bar: only entering moves; 65 enters on 20 (the 5), the 6-point
     * of the other side's (my 19) is made. The other side's blot on my 22 is
     * hit by the 3. */
    game_state s = s_make("bar:1 6:4 8:3 13:5 24:2", "3:1 6:5 8:3 13:5 24:1", "31 w");
    char buf[512];
    s_legal_text(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "bar/24 bar/22", "B7: %s", buf);
    int a;
    cr_assert_eq(G()->parse_action("bar/22", &a), 0);
    G()->apply(&s, a);
    uint8_t own[25], opp[25];
    backgammon_board(&s, own, opp);
    cr_assert_eq(opp[24], 1, "B8: the blot went to the bar");
    cr_assert_eq(own[21], 1);
    game_state b = s_make("bar:1 6:4 8:3 13:5 24:2", START_OTHER, "w");
    cr_assert_eq(G()->parse_action("66", &a), 0);
    G()->apply(&b, a);
    cr_assert(G()->is_chance(&b) && G()->to_move(&b) == 1, "B6: 19 is blocked: 66 passes");
}

Test(backgammon, b10_as_many_dice_as_possible)
{
    /* 65: 8/2 first would leave the 5 unplayable (19 blocked, no bearing
     * off); 24/18 and 8/3 first both let the other die play. */
    game_state s = s_make("24:1 8:1 1:13", "6:2 2:13", "65 w");
    char buf[512];
    s_legal_text(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "8/3 24/18", "%s", buf);
}

Test(backgammon, b11_the_larger_die)
{
    /* 65 from 24: 24/18 or 24/19 alone, never both (13 is blocked): the 6. */
    game_state s = s_make("24:1 1:14", "12:2 2:13", "65 w");
    char buf[512];
    s_legal_text(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "24/18", "%s", buf);
    bg_whole_move m[8];
    cr_assert_eq(backgammon_whole_moves(&s, m, 8), 1);
    cr_assert_str_eq(m[0].text, "24/18");
    game_state d = s_make(START_OTHER, START_OTHER, "31 w");
    bg_whole_move all[32];
    int n = backgammon_whole_moves(&d, all, 32);
    bool joined = false;
    for (int i = 0; i < n; i++)
        joined |= !strcmp(all[i].text, "24/20");
    cr_assert(joined, "one checker by both dice is written once");
}

Test(backgammon, b12_no_move_passes_the_turn)
{
    const char *closed = "1:2 2:2 3:2 4:2 5:2 6:2 13:3";
    game_state s = s_make("bar:1 6:14", closed, "w");
    int a;
    cr_assert_eq(G()->parse_action("65", &a), 0);
    G()->apply(&s, a);
    cr_assert(G()->is_chance(&s), "B12: the roll plays nothing: the other side rolls");
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert_eq(G()->ply(&s), 1);
    uint8_t own[25], opp[25];
    s_side("bar:1 6:14", own);
    s_side(closed, opp);
    char id[16], text[64], err[200];
    backgammon_position_id(own, opp, id);
    snprintf(text, sizeof text, "%s 65 w", id);
    game_state t;
    cr_assert_eq(G()->parse_position(&t, text, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "B12"), "%s", err);
}

Test(backgammon, b13_bearing_off)
{
    game_state s = s_make("4:1 2:14", START_OTHER, "65 w");
    char buf[512];
    s_legal_text(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "4/off:5 4/off:6", "B13: only from the highest point: %s", buf);
    game_state o = s_make("7:1 2:14", START_OTHER, "21 w");
    s_legal_text(&o, buf, sizeof buf);
    cr_assert_str_eq(buf, "7/6 7/5", "B13: not while one is outside (2/off), 1 blocked: %s", buf);
}

/* Bears off the mover's last checker (on its 2-point, roll 22: the game ends
 * with the first die) against
 * `other` and returns the result. */
static game_result s_last_off(const char *other)
{
    game_state s = s_make("2:1", other, "22 w");
    int a;
    cr_assert_eq(G()->parse_action("2/off", &a), 0);
    cr_assert(game_is_legal(G(), &s, a));
    G()->apply(&s, a);
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 0);
    cr_assert(!G()->is_chance(&s));
    return r;
}

Test(backgammon, b15_b16_single_gammon_backgammon)
{
    game_result r = s_last_off("6:5 8:3 13:4 24:2");
    cr_assert_eq(r.points, 1, "one borne off: a single game");
    cr_assert_str_eq(game_reason_name(G(), r.reason), "single");
    r = s_last_off("6:5 8:3 13:7");
    cr_assert_eq(r.points, 2);
    cr_assert_str_eq(game_reason_name(G(), r.reason), "gammon");
    r = s_last_off("6:5 8:3 13:5 20:2");
    cr_assert_eq(r.points, 3, "in the winner's home board");
    cr_assert_str_eq(game_reason_name(G(), r.reason), "backgammon");
    cr_assert_float_eq(game_result_value(G(), r, 0), 1.0f, 1e-6);
    cr_assert_float_eq(game_result_value(G(), r, 1), -1.0f, 1e-6);
}

Test(backgammon, b17_position_ids_and_bad_input)
{
    uint8_t own[25], opp[25];
    char err[200], id[16];
    cr_assert_eq(backgammon_parse_id("4HPwATDgc/ABMA", own, opp, err, sizeof err), 0);
    cr_assert_eq(own[5], 5);
    cr_assert_eq(own[23], 2);
    backgammon_position_id(own, opp, id);
    cr_assert_str_eq(id, "4HPwATDgc/ABMA");
    /* gnubg's own example after 31 (8/5 6/5) seen from the other side. */
    s_side("5:2 6:4 8:2 13:5 24:2", own);
    s_side(START_OTHER, opp);
    backgammon_position_id(own, opp, id);
    cr_assert_eq(backgammon_parse_id(id, opp, own, err, sizeof err), 0);
    cr_assert_eq(opp[4], 2);
    static const char *const bad[] = {
        "4HPwATDgc/ABM",      "4HPwATDgc/AB!A 31", "4HPwATDgc/ABMA 71", "4HPwATDgc/ABMA 3",
        "4HPwATDgc/ABMA 31:2", "4HPwATDgc/ABMA 31:31", "4HPwATDgc/ABMA 31 x", "//////////////",
    };
    game_state s;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        cr_assert_eq(G()->parse_position(&s, bad[i], err, sizeof err), KZ_EINVAL, "%s", bad[i]);
        cr_assert(err[0] && !strchr(err, '\n'), "'%s': one line: %s", bad[i], err);
    }
    cr_assert_eq(G()->parse_position(&s, "4HPwATDgc/ABMA 55:55 b", err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(G()->to_move(&s), 1);
    cr_assert(G()->mid_turn(&s));
    int a;
    cr_assert_neq(G()->parse_action("8/1", &a), 0, "a 7 is no die");
    cr_assert_neq(G()->parse_action("7/off", &a), 0, "bearing off from outside home");
}

Test(backgammon, kz_moves_lists_whole_moves_and_refuses_bad_input)
{
    char out[8192];
    int rc = harness_kz_out("moves --game backgammon --position 4HPwATDgc/ABMA --dice 31",
                            NULL, true, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "8/5 6/5\n"), "%s", out);
    cr_assert_eq(s_count(out, "\n"), 16, "%s", out);
    rc = harness_kz_out("moves --game backgammon --position 4HPwATDgc/ABMA --dice 71", NULL,
                        true, out, sizeof out);
    cr_assert_neq(rc, 0);
    cr_assert_eq(s_count(out, "\n"), 1, "one line: %s", out);
    rc = harness_kz_out("moves --game backgammon --position 4HPwATDgc/ABMx --dice 31", NULL,
                        true, out, sizeof out);
    cr_assert_neq(rc, 0);
    cr_assert_eq(s_count(out, "\n"), 1, "one line: %s", out);
    rc = harness_kz_out("moves --game backgammon --position 4HPwATDgc/ABMA --dice 31 8/4", NULL,
                        true, out, sizeof out);
    cr_assert_neq(rc, 0, "8/4 does not use a die of 31");
    cr_assert_eq(s_count(out, "\n"), 1, "one line: %s", out);
}

/* Seeded random games; at each fresh roll compare with gnubg. */
static int s_compare(int n, uint64_t seed, long *moves)
{
    char err[300];
    gnubg *gb;
    int rc = gnubg_open(&gb, NULL, 60, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    rng_t r;
    rng_seed(&r, seed);
    int done = 0;
    *moves = 0;
    while (done < n) {
        game_state s;
        G()->init(&s);
        while (!G()->result(&s).over && done < n) {
            uint16_t legal[GAME_MAX_LEGAL];
            int k = G()->legal_actions(&s, legal);
            bool chance = G()->is_chance(&s);
            G()->apply(&s, legal[rng_below(&r, (uint32_t)k)]);
            if (chance && !G()->is_chance(&s) && !G()->result(&s).over) {
                int ours = 0;
                rc = gnubg_compare_moves(gb, &s, &ours, NULL, err, sizeof err);
                cr_assert_eq(rc, 0, "position %d: %s", done, err);
                *moves += ours;
                done++;
            }
        }
    }
    gnubg_close(gb);
    return done;
}

Test(backgammon, move_generation_equals_gnubg_s, .timeout = 600)
{
    if (!gnubg_path())
        cr_skip_test("gnubg is not installed (apt-get install gnubg): not compared with it");
    long moves;
    int n = s_compare(300, 0x25, &moves);
    cr_assert_eq(n, 300);
    cr_assert_gt(moves, 300 * 5, "the positions have moves to compare");
}

Test(backgammon, a_gnubg_that_dies_is_reported, .timeout = 600)
{
    if (!gnubg_path())
        cr_skip_test("gnubg is not installed (apt-get install gnubg)");
    char err[300];
    gnubg *gb;
    cr_assert_eq(gnubg_open(&gb, "intermediate", 30, err, sizeof err), 0, "%s", err);
    kill(gnubg_pid(gb), SIGKILL);
    char moves[4][64];
    int n;
    int rc = gnubg_hint(gb, "4HPwATDgc/ABMA", 3, 1, 4, moves, &n, err, sizeof err);
    cr_assert_eq(rc, KZ_EIO);
    cr_assert(strstr(err, "gnubg"), "%s", err);
    gnubg_close(gb);
    cr_assert_eq(gnubg_open(&gb, "nosuchlevel", 30, err, sizeof err), KZ_EINVAL);
}

/* The search at chance nodes (search/mcts.c: stratified outcomes, the
 * expectation backed up). White to move with 21 and three checkers on its
 * 1-point bears off two whatever it plays; black then rolls with one checker
 * on its 6-point: it bears off at once with 27 of the 36 rolls (every
 * non-double of sum >= 6: 22, and 22 33 44 55 66), else white bears off its
 * last checker next turn. Single games both ways: white's value is
 * (9 - 27) / 36 points = -1/2, -1/6 on the value scale (B20). The evaluator
 * knows nothing (value 0, uniform priors): the value comes from the
 * terminal states through the chance nodes. */
Test(backgammon, chance_search_finds_the_race_s_exact_value, .timeout = 600)
{
    const game_def *g = G();
    game_state s = s_make("1:3", "6:1", "21 w");
    mcts_settings set = mcts_settings_default();
    set.simulations = 4000;
    set.dirichlet_epsilon = 0;
    set.leaves_per_tree = 1;
    mcts_result r;
    cr_assert_eq(mcts_search(g, &set, evaluator_uniform(g), &s, 1, &r), 0);
    float exact = -1.0f / 6;
    cr_assert(r.value > exact - 0.03f && r.value < exact + 0.03f,
              "root value %g, exact %g", r.value, exact);
}

/* B10 with B15: the move that plays the most dice, even when the last
 * checker could come off with one (GNU Backgammon's rule; the gnubg judge
 * caught the old "the last checker off plays the whole roll" in a match:
 * with a blot on the 1-point and 21 the hit 2/1* 1/off is forced). */
Test(backgammon, the_last_checker_off_still_plays_the_most_dice)
{
    char out[4096];
    int rc = harness_kz_out("moves --game backgammon --position '3V5FACACAAAAAA 21 b'", NULL,
                            true, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_str_eq(out, "2/1* 1/off\n");
    const game_def *g = G();
    game_state b = s_make("6:1", "1:1", "65 b");
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(&b, legal);
    cr_assert_eq(n, 1, "6/1 (then 1/off) only, not 6/off: %d moves", n);
    cr_assert_eq(legal[0], 5 * 6 + 5 - 1, "6/1 with the 5 (from index 5): action %d", legal[0]);
}

/* A search whose root is a chance state does not search: the caller draws
 * the dice. */
Test(backgammon, a_chance_root_is_not_searched)
{
    const game_def *g = G();
    game_state s;
    g->init(&s);
    mcts_settings set = mcts_settings_default();
    set.simulations = 50;
    mcts_batch *b = mcts_batch_new(g, &set, 1, evaluator_uniform(g));
    cr_assert_not_null(b);
    mcts_batch_reset(b, 0, &s, 7);
    cr_assert_eq(mcts_batch_status(b, 0), MCTS_DONE);
    rng_t dice;
    game_dice_seed(&dice, 7);
    int a = game_chance_draw(g, &s, &dice);
    mcts_batch_advance(b, 0, a);
    cr_assert_eq(mcts_batch_status(b, 0), MCTS_SEARCHING);
    cr_assert_geq(mcts_batch_run(b), 0);
    cr_assert_gt(mcts_batch_stats(b)->chance_nodes, 0, "the tree met the other side's roll");
    mcts_batch_destroy(&b);
}

/* Dice that can be trusted: a record's dice follow from its seed (game.h's
 * generator) or the record is refused; the validator's value targets are
 * the points (B20). */
Test(backgammon, records_with_dice_not_from_the_seed_are_refused)
{
    const game_def *g = G();
    uint8_t *buf;
    size_t len;
    cr_assert_eq(validate_random_record(g, 77, NULL, &buf, &len), 0);
    game_record *r = record_new();
    record_report rep;
    cr_assert_eq(record_decode(NULL, buf, len, r, &rep), 0, "%s", rep.msg);
    char err[300];
    cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "%s", err);
    validator *v = validator_new(g, NULL);
    validate_result out;
    cr_assert_eq(validate_record(v, buf, len, 10, &out), VALIDATE_OK, "%s", out.detail);
    game_state fin;
    g->init(&fin);
    for (int k = 0; k < r->n_moves; k++)
        g->apply(&fin, r->moves[k].action);
    game_result res = g->result(&fin);
    cr_assert(res.over);
    float want = (float)res.points / 3;
    for (uint32_t i = 0; i < out.n_positions; i++)
        cr_assert_float_eq(fabsf(out.z[i]), want, 1e-6, "z = +-points/3");
    /* The second roll changed to another outcome. */
    int seen = 0;
    game_state s;
    g->init(&s);
    for (int k = 0; k < r->n_moves; k++) {
        if (g->is_chance(&s) && ++seen == 2) {
            r->moves[k].action = r->moves[k].action == BG_CHANCE_BASE ? BG_CHANCE_BASE + 7
                                                                       : BG_CHANCE_BASE;
            break;
        }
        g->apply(&s, r->moves[k].action);
    }
    cr_assert_eq(seen, 2);
    cr_assert_neq(record_validate(g, r, err, sizeof err), 0);
    cr_assert(strstr(err, "do not follow from the seed"), "%s", err);
    validator_destroy(&v);
    record_destroy(&r);
    free(buf);
}

/* backgammon_contact: whether some checker still has to pass one of the
 * other side's (the judge's race/contact split). */
Test(backgammon, contact_and_race)
{
    game_state s;
    G()->init(&s);
    cr_assert(backgammon_contact(&s), "the start is all contact");
    /* The mover's rearmost on its 1-point, the other's on its 6-point (the
     * mover's 19): a race. */
    s = s_make("1:3", "6:1", "21 w");
    cr_assert(!backgammon_contact(&s));
    /* The mover's on its 18-point, the other's on the mover's 19: still a race;
     * on the mover's 20-point it has to pass the other's checker: contact. */
    s = s_make("18:1 1:2", "6:1", "21 w");
    cr_assert(!backgammon_contact(&s));
    s = s_make("20:1 1:2", "6:1", "21 w");
    cr_assert(backgammon_contact(&s));
    /* Either side on the bar, against a checker in the home it enters: contact. */
    s = s_make("1:1", "bar:1 1:1", "21 w");
    cr_assert(backgammon_contact(&s));
    s = s_make("bar:1", "1:2", "21 w");
    cr_assert(backgammon_contact(&s));
    /* The other side is all borne off (a finished game's last position): no contact. */
    s = s_make("3:2", "", "w");
    cr_assert(!backgammon_contact(&s));
}

/* match_play_judged: gnubg rates every whole move of a game with a choice;
 * from a race every decision is a race decision, from the start some are not. */
Test(backgammon, a_judged_game_splits_races_from_contact, .timeout = 600)
{
    if (!gnubg_path())
        cr_skip_test("gnubg is not installed (apt-get install gnubg): no judge");
    char err[300];
    gnubg *judge = NULL;
    cr_assert_eq(gnubg_open(&judge, "expert", 60, err, sizeof err), 0, "%s", err);
    player *pl[2] = {player_from_spec(G(), "random", err, sizeof err),
                     player_from_spec(G(), "uct:20", err, sizeof err)};
    cr_assert(pl[0] && pl[1], "%s", err);
    game_state race = s_make("1:2 2:2 3:2 4:2 5:2 6:2", "1:2 2:2 3:2 4:2 6:3", "w");
    cr_assert(!backgammon_contact(&race));
    match_game gm;
    cr_assert_eq(match_play_judged(G(), pl, &race, 7, judge, &gm), 0);
    cr_assert(gm.result.over);
    int dec = gm.decisions[0] + gm.decisions[1];
    cr_assert_gt(dec, 0, "a race of 12 and 11 checkers has choices");
    for (int p = 0; p < 2; p++) {
        cr_assert_eq(gm.race_decisions[p], gm.decisions[p]);
        cr_assert_float_eq(gm.race_loss[p], gm.loss[p], 1e-9);
        cr_assert_geq(gm.loss[p], 0);
    }
    game_state start;
    G()->init(&start);
    cr_assert_eq(match_play_judged(G(), pl, &start, 7, judge, &gm), 0);
    cr_assert_gt(gm.decisions[0], 0);
    cr_assert_lt(gm.race_decisions[0] + gm.race_decisions[1],
                 gm.decisions[0] + gm.decisions[1], "the start has contact");
    /* Random play loses equity that gnubg sees. */
    cr_assert_gt(gm.loss[0], 0);
    /* Without a judge nothing is counted. */
    cr_assert_eq(match_play_judged(G(), pl, &start, 7, NULL, &gm), 0);
    cr_assert_eq(gm.decisions[0] + gm.decisions[1], 0);
    player_destroy(&pl[0]);
    player_destroy(&pl[1]);
    gnubg_close(judge);
}

/* gnubg as a player and as the judge of a match (error rates), and a gnubg that dies in
 * the middle of one (a wrapper that kills it after a second) is reported as
 * a one-line error, not waited on. */
Test(backgammon, kz_match_against_gnubg_and_a_gnubg_that_dies, .timeout = 600)
{
    if (!gnubg_path())
        cr_skip_test("gnubg is not installed (apt-get install gnubg): no match against it");
    char out[16384];
    int rc = harness_kz_out("match gnubg:expert uct:20 --game backgammon --games 2 --seed 3 "
                            "--judge expert", NULL, true, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "W/D/L:") && strstr(out, "points: A "), "%s", out);
    /* The judge at gnubg's own level finds few errors in gnubg's moves (0.0
     * mostly; 27.6 once: expert plays with gnubg's own noise) and many in 20
     * random playouts'. */
    const char *gq = strstr(out, "gnubg:expert lost "), *u = strstr(out, "uct:20:1 lost ");
    cr_assert(gq && u, "%s", out);
    double ge = strtod(gq + 18, NULL), ue = strtod(u + 14, NULL);
    cr_assert(ue > 10 && ge < ue, "gnubg %.1f, uct %.1f millipoints:\n%s", ge, ue, out);
    char *dir = harness_tmpdir("bg-gnubg");
    cr_assert_not_null(dir);
    char script[512], text[1024], cmd[1024];
    snprintf(script, sizeof script, "%s/gnubg-dies", dir);
    snprintf(text, sizeof text, "#!/bin/sh\nexec timeout -s KILL 1 %s \"$@\"\n", gnubg_path());
    cr_assert_eq(harness_write(script, text), 0);
    snprintf(cmd, sizeof cmd, "chmod +x %s && KZ_GNUBG=%s %s/kz match uct:20 gnubg:expert "
             "--game backgammon --games 50 2>&1", script, script, harness_bin_dir());
    double t0 = harness_now();
    rc = harness_sh(cmd, out, sizeof out);
    cr_assert_neq(rc, 0, "the match cannot go on without gnubg: %s", out);
    cr_assert(strstr(out, "gnubg"), "the error names gnubg: %s", out);
    cr_assert_lt(harness_now() - t0, 60, "reported, not hung on");
    harness_rm_rf(dir);
    free(dir);
}
