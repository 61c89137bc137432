/* A second game through the whole stack: the tests' toy game (toy_game.h,
 * rules T1-T6) with the library (rules and perft against counts made by
 * hand, the properties every game module must have, the searches and the
 * baseline players, self-play records and their validation, the trainer's
 * batches without symmetries) and with the real programs built with it
 * (build/toy/: kz, and a coordinator, a worker and a trainer that play and
 * train it, refusing the programs of another game). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "nn/evaluator.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "play/match.h"
#include "search/mcts.h"
#include "search/player.h"
#include "data/record.h"
#include "play/selfplay.h"
#include "data/store.h"
#include "tests/harness/toy_game.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

TestSuite(toy, .fini = harness_cleanup, .timeout = 600);

static const game_def *G(void) { return game_find("toy"); }

static game_state s_pos(const char *text)
{
    game_state s;
    char err[200];
    cr_assert_eq(G()->parse_position(&s, text, err, sizeof err), 0, "'%s': %s", text, err);
    return s;
}

Test(toy, is_registered_and_passes_the_registry_s_checks)
{
    cr_assert_eq(G(), &toy_game);
    char err[200] = "";
    cr_assert_eq(game_check(G(), err, sizeof err), 0, "%s", err);
    char names[256];
    game_names(names, sizeof names);
    cr_assert(strstr(names, "toy"), "%s", names);
}

/* Perft by hand from T2's start, South on 0 and 2, North on 6 and 8.
 * Depth 1: each South man steps to its two free neighbours (0-1, 0-3, 2-1,
 * 2-5): 4. Depth 2: after 0-1 (or 2-1) no North man touches a South man, so
 * North has its four steps (6-3, 6-7, 8-5, 8-7); after 0-3 North must take
 * with 6x0 (0 is empty now), after 2-5 with 8x2: 4 + 1 + 4 + 1 = 10.
 * Depth 3: after 0-1 6-3, 0-1 6-7 and 0-1 8-7 South has no capture and three
 * steps (1-0, 1-4, 2-5); after 0-1 8-5 it must take with 2x8: 3 + 3 + 1 + 3;
 * after 0-3 6x0 its last man on 2 has two steps; the mirror images add the
 * same: 2 * (10 + 2) = 24. No turn has two hops yet, so the whole-turn perft
 * is the same. */
Test(toy, perft_from_the_start_matches_the_hand_count)
{
    game_state s;
    G()->init(&s);
    const uint64_t want[] = {4, 10, 24};
    for (int d = 1; d <= 3; d++) {
        cr_assert_eq(game_perft(G(), &s, d), want[d - 1], "depth %d", d);
        cr_assert_eq(game_perft_turns(G(), &s, d), want[d - 1], "turns, depth %d", d);
    }
}

/* T3: a capture sequence is one action per hop; the same man goes on; the
 * whole-turn perft counts it once. South's man on 0 takes 1 (0x2) and then 5
 * (2x8): North has no man left. */
Test(toy, a_capture_sequence_goes_hop_by_hop)
{
    game_state s = s_pos("sn...n... s");
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(G()->legal_actions(&s, legal), 1);
    cr_assert_eq(legal[0], 0 * 9 + 2);
    G()->apply(&s, legal[0]);
    cr_assert(G()->mid_turn(&s));
    cr_assert_eq(G()->to_move(&s), 0, "the same player moves on");
    char pos[32];
    G()->format_position(&s, pos, sizeof pos);
    cr_assert_str_eq(pos, "..s..n... s 2");
    cr_assert_eq(G()->legal_actions(&s, legal), 1);
    cr_assert_eq(legal[0], 2 * 9 + 8);
    G()->apply(&s, legal[0]);
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 0 && r.reason == GAME_REASON_NO_PIECES);
    s = s_pos("sn...n... s");
    cr_assert_eq(game_perft(G(), &s, 2), 1);
    cr_assert_eq(game_perft_turns(G(), &s, 1), 1);
    cr_assert_eq(game_perft_turns(G(), &s, 2), 0);
    /* Two first hops (0x2, 0x6) from one man: both legal, ascending. */
    s = s_pos("sn.n..... s");
    cr_assert_eq(G()->legal_actions(&s, legal), 2);
    cr_assert(legal[0] == 2 && legal[1] == 6);
    /* Compulsory: a capture hides every step. */
    s = s_pos("sn......s s");
    cr_assert_eq(G()->legal_actions(&s, legal), 1, "0x2 only, no step of 8");
}

/* T5 and T6: the ends of a game, and positions that do not parse. */
Test(toy, ends_and_bad_positions)
{
    game_state s = s_pos("s........ n");
    game_result r = G()->result(&s);
    cr_assert(r.over && r.winner == 0 && r.reason == GAME_REASON_NO_PIECES);
    s = s_pos("snnn..n.. s"); /* South's man on 0: both jumps land on men, no step */
    r = G()->result(&s);
    cr_assert(r.over && r.winner == 1 && r.reason == GAME_REASON_NO_MOVES);
    /* Two men stepping to and fro, never side by side, to the length cap. */
    s = s_pos("s.......n s");
    const int loop[4] = {0 * 9 + 3, 8 * 9 + 5, 3 * 9 + 0, 5 * 9 + 8};
    for (int i = 0; i < TOY_MAX_PLIES; i++) {
        cr_assert_not(G()->result(&s).over, "turn %d", i);
        G()->apply(&s, loop[i % 4]);
    }
    r = G()->result(&s);
    cr_assert(r.over && r.winner == -1 && r.reason == GAME_REASON_LENGTH, "%d", r.reason);
    const char *bad[] = {"", "sss...nnn", "sss...nnnx s", "sss...nnn x", "sss...nnn s 9",
                         "sss...nnn s 0", "sss...nnn s 11", "sss...nnn s  "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[200] = "";
        cr_assert_eq(G()->parse_position(&s, bad[i], err, sizeof err), KZ_EINVAL, "'%s'", bad[i]);
        cr_assert(err[0], "'%s': a reason", bad[i]);
    }
}

/* What every game module owes the layers above (game.h), at every state of
 * random games: ascending legal actions within max_legal that agree with
 * legal_mask and is_legal; the position string round-trips; pack and
 * unpack_planes give encode_planes; canonical_action is an involution;
 * equal states hash equally. */
Test(toy, random_games_keep_the_interface_s_promises)
{
    const game_def *g = G();
    rng_t rng;
    rng_seed(&rng, 5);
    int C = g->planes * g->height * g->width;
    for (int game = 0; game < 300; game++) {
        game_state s;
        g->init(&s);
        while (!g->result(&s).over) {
            uint16_t legal[GAME_MAX_LEGAL];
            uint8_t mask[TOY_ACTIONS];
            int n = g->legal_actions(&s, legal);
            cr_assert(n >= 1 && n <= g->max_legal);
            game_legal_mask(g, &s, mask);
            int marked = 0;
            for (int a = 0; a < TOY_ACTIONS; a++) {
                marked += mask[a];
                cr_assert_eq(mask[a] != 0, game_is_legal(g, &s, a));
                cr_assert_eq(g->canonical_action(&s, g->canonical_action(&s, a)), a);
            }
            cr_assert_eq(marked, n);
            for (int i = 1; i < n; i++)
                cr_assert_lt(legal[i - 1], legal[i]);
            char pos[GAME_POSITION_CHARS + 1];
            g->format_position(&s, pos, sizeof pos);
            cr_assert_leq((int)strlen(pos), g->position_chars);
            game_state t = s_pos(pos), u;
            char again[GAME_POSITION_CHARS + 1];
            g->format_position(&t, again, sizeof again);
            cr_assert_str_eq(again, pos);
            g->copy(&u, &s);
            cr_assert_eq(g->hash(&u), g->hash(&s));
            float x[36], y[36];
            uint8_t packed[GAME_PACKED_BYTES];
            g->encode_planes(&s, x);
            g->pack(&s, packed);
            cr_assert_eq(g->unpack_planes(packed, y), 0);
            cr_assert(!memcmp(x, y, (size_t)C * sizeof *x), "'%s'", pos);
            g->apply(&s, legal[rng_below(&rng, (uint32_t)n)]);
        }
    }
    uint8_t junk[4] = {0xff, 0xff, 0xff, 0xff};
    float x[36];
    cr_assert_eq(g->unpack_planes(junk, x), KZ_ECORRUPT);
}

/* The searches and the baseline players over the game's hooks: with a win
 * in one action (South's 0x2 takes North's last man), every searching
 * player finds it; alpha-beta's score is the win's. */
Test(toy, searches_and_baseline_players_find_the_win)
{
    const game_def *g = G();
    game_state s = s_pos("sn......s s");
    const char *specs[] = {"greedy", "alphabeta:3", "uct:200", "mcts:uniform:32",
                           "gumbel:uniform:16"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        char err[200];
        player *p = player_from_spec(g, specs[i], err, sizeof err);
        cr_assert_not_null(p, "%s: %s", specs[i], err);
        player_new_game(p, 1);
        int a;
        cr_assert_eq(player_choose(p, &s, &a, NULL), 0);
        cr_assert_eq(a, 0 * 9 + 2, "%s", specs[i]);
        player_destroy(&p);
    }
    /* A quiet position: level material after any step and the captures it
     * allows; the evaluation is the material. */
    s = s_pos("s..s...nn s");
    int a;
    long score;
    player_alphabeta_search(g, &s, 1, false, &a, &score);
    cr_assert_eq(score, 0, "level material after any step and the forced replies");
    cr_assert_eq(player_evaluate(g, &s, false), 0);
    game_state c = s_pos("sn......s s");
    cr_assert(player_must_capture(g, &c));
    cr_assert_not(player_must_capture(g, &s));
    /* The default simulations of mcts:MODEL are the game's. */
    char err[200];
    player *p = player_from_spec(g, "mcts:uniform", err, sizeof err);
    cr_assert_str_eq(player_spec_name(p), "mcts:uniform:32");
    player_destroy(&p);
    /* A match of baselines plays out (both colours, openings of the game). */
    player *x = player_from_spec(g, "random", err, sizeof err);
    player *y = player_from_spec(g, "alphabeta:2", err, sizeof err);
    match_config cfg;
    match_config_default(&cfg);
    cfg.games = 10;
    int w, d, l;
    cr_assert_eq(match_run(g, y, x, &cfg, &w, &d, &l, NULL), 0);
    cr_assert_eq(w + d + l, 10);
    cr_assert_geq(w, l, "alpha-beta at least as good as random");
    player_destroy(&x);
    player_destroy(&y);
}

typedef struct sink {
    validator *val;     /* the coordinator's validator for the game */
    int games, valid;   /* records seen, valid ones */
    uint32_t positions; /* training positions of the valid ones */
    char why[256];      /* the first refusal */
} sink;

static int s_sink(void *ctx, const game_record *r)
{
    sink *k = ctx;
    k->games++;
    char err[200];
    cr_assert_eq(record_validate(G(), r, err, sizeof err), 0, "%s", err);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(record_pack(r, &buf, &len), 0);
    validate_result v;
    if (validate_record(k->val, buf, len, 1, &v) == VALIDATE_OK) {
        k->valid++;
        k->positions += v.n_positions;
        cr_assert_eq(v.packed_bytes, 4);
    } else if (!k->why[0]) {
        snprintf(k->why, sizeof k->why, "%s", v.detail);
    }
    free(buf);
    return 0;
}

/* Self-play with the uniform evaluator at the game's search defaults: every
 * record replays, and the coordinator's validator accepts it with its
 * training positions; a record of another game is refused. */
Test(toy, self_play_records_are_valid)
{
    const game_def *g = G();
    selfplay_config cfg = selfplay_config_default();
    cfg.search = mcts_settings_default();
    cfg.search.simulations = g->simulations;
    cfg.search.dirichlet_alpha = g->dirichlet_alpha;
    cfg.games = 12;
    cfg.parallel = 4;
    cfg.seed = 9;
    cfg.model_version = 1;
    char err[200];
    selfplay *sp = selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err);
    cr_assert_not_null(sp, "%s", err);
    sink k = {.val = validator_new(g, NULL)};
    cr_assert_eq(selfplay_run(sp, s_sink, &k), 0);
    cr_assert_eq(k.games, 12);
    cr_assert_eq(k.valid, 12, "%s", k.why);
    cr_assert_gt(k.positions, 12);
    selfplay_destroy(&sp);
    /* Khreibaga's record is not the toy's. */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(validate_random_record(game_default(), 3, NULL, &buf, &len), 0);
    validate_result v;
    cr_assert_neq(validate_record(k.val, buf, len, 1, &v), VALIDATE_OK);
    cr_assert(strstr(v.detail, "khreibaga") || strstr(v.detail, "toy"), "%s", v.detail);
    free(buf);
    validator_destroy(&k.val);
}

/* The trainer's batches of a game without symmetries: augmentation draws
 * nothing and changes nothing. */
Test(toy, batches_without_symmetries_are_not_augmented)
{
    const game_def *g = G();
    cr_assert_eq(g->n_symmetries, 0);
    uint8_t packed[2 * 4];
    game_state s;
    g->init(&s);
    g->pack(&s, packed);
    g->apply(&s, 0 * 9 + 1);
    g->pack(&s, packed + 4);
    float z[2] = {1, -1};
    uint32_t offsets[3] = {0, 1, 2}, actions[2] = {4, 7 * 9 + 1};
    float probs[2] = {1, 1};
    wire_batch_reply b = {2, 4, packed, z, offsets, actions, probs, 0, 2, 1, 1, NULL, {0},
                          "toy"};
    float x[2 * 36], pi[2 * 81], zz[2];
    rng_t r1, r2;
    rng_seed(&r1, 4);
    rng_seed(&r2, 4);
    batch_counts cnt = {0};
    cr_assert_eq(batch_fill(g, &b, true, 0, &r1, x, pi, zz, 2, &cnt), 2);
    cr_assert_eq(cnt.augmented, 0);
    cr_assert_eq(rng_next(&r1), rng_next(&r2), "no draw made");
    float want[36];
    g->init(&s);
    g->encode_planes(&s, want);
    cr_assert(!memcmp(x, want, sizeof want));
    cr_assert_eq(pi[4], 1.0f);
    cr_assert_eq(pi[81 + 7 * 9 + 1], 1.0f);
}

/* --- the programs built with the game (build/toy/) ----------------------------------- */

Test(toy, kz_knows_the_game_only_where_it_is_linked)
{
    proc_output o;
    const char *perft[] = {"perft", "--game=toy", "3", NULL};
    cr_assert_eq(harness_run_bin("toy/kz", perft, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "perft 1: 4\nperft 2: 10\nperft 3: 24\n"), "%s", o.out);
    proc_output_free(&o);
    const char *moves[] = {"moves", "--game=toy", "--position=sn...n... s", NULL};
    cr_assert_eq(harness_run_bin("toy/kz", moves, NULL, &o), 0, "%s", o.err);
    cr_assert_str_eq(o.out, "0-2\n");
    proc_output_free(&o);
    const char *play[] = {"play", "--game=toy", "--player=greedy", "--color=north", NULL};
    proc_opts po = {.input = "quit\n"};
    cr_assert_eq(harness_run_bin("toy/kz", play, &po, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "You play north"), "%s", o.out);
    proc_output_free(&o);
    /* The programs without it say which games there are. */
    cr_assert_eq(harness_run_bin("kz", perft, NULL, &o), 2);
    cr_assert(strstr(o.err, "unknown game 'toy' (the games: "), "%s", o.err);
    proc_output_free(&o);
}

/* A whole cluster of the toy game: a coordinator, a worker and a trainer
 * (build/toy/), games stored and a candidate trained on them without
 * augmentation; a worker and a trainer of another game are refused with a
 * line naming both games. */
Test(toy, a_cluster_plays_and_trains_the_game)
{
    harness h;
    harness_init(&h, "toy");
    char a_dir[128], a_bind[96], a_pub[96], a_port[48];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", h.dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", h.endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", h.pub);
    snprintf(a_port, sizeof a_port, "--http_port=%d", h.http_port);
    const char *cargs[] = {a_dir, a_bind, a_pub, a_port, "--game=toy", "--sync=false",
                           "--status_ms=20", "--heartbeat_ms=100", "--expiry_ms=2000",
                           "--initial_blocks=1", "--initial_filters=8", "--eval_share=0",
                           "--book_openings=4", NULL};
    h.coord = harness_coord_spawn_bin("toy/kz-coordinator", cargs, h.http_port, h.coord_log);
    char a_end[96], a_sub[96], a_cache[128], a_ck[128], wlog[128], tlog[128], xlog[128];
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    snprintf(a_cache, sizeof a_cache, "--model_cache_dir=%s/models", h.dir);
    snprintf(a_ck, sizeof a_ck, "--checkpoint_dir=%s/trainer", h.dir);
    snprintf(wlog, sizeof wlog, "%s/worker.log", h.dir);
    snprintf(tlog, sizeof tlog, "%s/trainer.log", h.dir);
    snprintf(xlog, sizeof xlog, "%s/other.log", h.dir);
    const char *wargs[] = {"--game=toy", a_end, a_sub, a_cache, "--simulations=8",
                           "--parallel=4", "--timeout_ms=300", "--retries=1",
                           "--heartbeat_ms=100", "--log_s=0.2", "--seed=7", NULL};
    pid_t w = harness_spawn("toy/kz-worker", wargs, wlog);
    cr_assert_geq(harness_wait_status(&h, "\"replay\"", "positions", 64, 60), 64,
                  "games stored (see %s)", wlog);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "rejected"), 0);
    const char *targs[] = {"--game=toy", a_end, a_ck, "--batch_size=16", "--min_positions=64",
                           "--steps_per_candidate=5", "--max_steps=10", "--max_reuse=0",
                           "--timeout_ms=1000", "--wait_ms=50", "--stats_s=0.2", "--log_s=0.2",
                           "--seed=3", NULL};
    pid_t t = harness_spawn("toy/kz-trainer", targs, tlog);
    int st;
    cr_assert(harness_wait(t, 90, &st), "the trainer did not finish (see %s)", tlog);
    cr_expect_eq(harness_exit_code(st), 0, "see %s", tlog);
    cr_expect_eq(harness_count(tlog, "candidate: step 5 registered as version 2 (parent 1)"),
                 1, "see %s", tlog);
    cr_expect_eq(harness_count(tlog, "(augmented 0,"), 1, "no symmetry: see %s", tlog);
    cr_expect_geq(harness_wait_status(&h, "\"models\"", "latest", 3, 10), 3);
    /* A Khreibaga worker is refused: the coordinator plays toy. */
    const char *xargs[] = {a_end, a_cache, "--simulations=8", "--timeout_ms=300",
                           "--retries=1", NULL};
    pid_t x = harness_spawn("kz-worker", xargs, xlog);
    cr_assert(harness_wait(x, 30, &st), "the other game's worker did not stop (see %s)", xlog);
    cr_expect_eq(harness_exit_code(st), 1);
    cr_expect_eq(harness_count(xlog, "the coordinator plays 'toy', this worker 'khreibaga'"), 1,
                 "see %s", xlog);
    /* So is a trainer of another game, at the coordinator's first batch. */
    char a_ck2[128], a_init[160];
    snprintf(a_ck2, sizeof a_ck2, "--checkpoint_dir=%s/trainer2", h.dir);
    snprintf(a_init, sizeof a_init, "--init_model=%s", h.model);
    const char *kargs[] = {a_end, a_ck2, a_init, "--timeout_ms=1000", "--wait_ms=50", NULL};
    pid_t k = harness_spawn("kz-trainer", kargs, xlog);
    cr_assert(harness_wait(k, 30, &st), "the other game's trainer did not stop (see %s)", xlog);
    cr_expect_eq(harness_exit_code(st), 1);
    cr_expect_eq(harness_count(xlog, "of game 'toy': this trainer trains 'khreibaga'"), 1,
                 "see %s", xlog);
    cr_expect_eq(harness_stop(w, SIGTERM, 20), 0, "see %s", wlog);
    harness_fini(&h);
}
