/* Tests of play/selfplay: G games at once on one evaluator, their records,
 * reproducibility from a seed, and the cost of forced states. Also a usage
 * example of selfplay.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "data/record.h"
#include "play/selfplay.h"
#include "common/util.h"

#define MAX_GAMES 32

/* Collects the finished games, indexed by their seed offset. */
typedef struct collect {
    uint64_t seed0;                /* the run's seed */
    game_record *by_game[MAX_GAMES]; /* game k (seed seed0 + k), NULL until finished */
    int finished;                  /* callbacks so far */
    int stop_after;                /* return an error at this callback (0 = never) */
} collect;

static int s_collect(void *ctx, const game_record *r)
{
    collect *c = ctx;
    c->finished++;
    if (c->stop_after && c->finished == c->stop_after)
        return KZ_EIO;
    uint64_t k = r->seed - c->seed0;
    cr_assert_lt(k, (uint64_t)MAX_GAMES);
    cr_assert_null(c->by_game[k], "game %d finished twice", (int)k);
    c->by_game[k] = record_new();
    cr_assert_eq(record_copy(c->by_game[k], r), 0);
    return 0;
}

static void s_collect_free(collect *c)
{
    for (int k = 0; k < MAX_GAMES; k++)
        record_destroy(&c->by_game[k]);
}

static selfplay_config s_config(int games, int parallel, uint64_t seed)
{
    selfplay_config cfg = selfplay_config_default();
    cfg.games = games;
    cfg.parallel = parallel;
    cfg.seed = seed;
    cfg.model_version = 1;
    cfg.search.simulations = 32;
    return cfg;
}

static void s_run(const selfplay_config *cfg, evaluator ev, collect *c, selfplay_stats *st)
{
    const game_def *g = game_default();
    char err[200];
    memset(c, 0, sizeof *c);
    c->seed0 = cfg->seed;
    selfplay *sp = selfplay_new(g, cfg, ev, err, sizeof err);
    cr_assert_not_null(sp, "%s", err);
    cr_assert_eq(selfplay_run(sp, s_collect, c), 0);
    if (st)
        selfplay_get_stats(sp, st);
    selfplay_destroy(&sp);
    cr_assert_null(sp);
}

/* Same play: everything but the id and the wall-clock times. */
static bool s_same_play(const game_record *a, const game_record *b)
{
    if (a->n_moves != b->n_moves || a->winner != b->winner || a->reason != b->reason ||
        a->plies != b->plies || a->seed != b->seed || a->n_policy != b->n_policy)
        return false;
    for (int k = 0; k < a->n_moves; k++)
        if (a->moves[k].action != b->moves[k].action ||
            a->moves[k].root_value != b->moves[k].root_value ||
            a->moves[k].forced != b->moves[k].forced ||
            a->moves[k].policy_n != b->moves[k].policy_n)
            return false;
    return !memcmp(a->policy, b->policy, sizeof(float) * a->n_policy) &&
           !memcmp(a->policy_actions, b->policy_actions, sizeof(uint16_t) * a->n_policy);
}

Test(selfplay, plays_every_game_and_each_record_is_valid)
{
    const game_def *g = game_default();
    collect c;
    selfplay_stats st;
    selfplay_config cfg = s_config(10, 4, 100);
    cfg.worker_id = "w-1";
    s_run(&cfg, evaluator_uniform(g), &c, &st);
    cr_assert_eq(c.finished, 10);
    cr_assert_eq(st.games_done, 10);
    cr_assert_eq(st.games_started, 10);
    cr_assert_eq(st.wins[0] + st.wins[1] + st.draws, 10);
    uint64_t states = 0, forced = 0;
    for (int k = 0; k < 10; k++) {
        game_record *r = c.by_game[k];
        cr_assert_not_null(r, "game %d missing", k);
        char err[200];
        cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "game %d: %s", k, err);
        cr_assert_eq(r->model_version, 1u);
        cr_assert_str_eq(r->worker_id, "w-1");
        cr_assert_str_eq(r->game, "khreibaga");
        cr_assert_eq(r->settings.simulations, 32);
        cr_assert_leq(r->started_ms, r->finished_ms);
        /* Forced exactly where one action is legal; searched states carry
         * 32 simulations' worth of shares (multiples of 1/32). */
        game_state s;
        g->init(&s);
        for (int m = 0; m < r->n_moves; m++) {
            uint16_t acts[GAME_MAX_LEGAL];
            int n = g->legal_actions(&s, acts);
            const record_move *mv = &r->moves[m];
            cr_assert_eq(mv->forced, n == 1, "game %d move %d", k, m);
            forced += mv->forced;
            if (!mv->forced)
                for (int j = 0; j < mv->policy_n; j++) {
                    float v = r->policy[mv->policy_off + j] * 32;
                    cr_assert_float_eq(v, (float)(int)(v + 0.5f), 1e-3);
                }
            g->apply(&s, mv->action);
        }
        states += (uint64_t)r->n_moves;
    }
    cr_assert_eq(st.states, states);
    cr_assert_eq(st.forced, forced);
    /* Ids are unique. */
    for (int a = 0; a < 10; a++)
        for (int b = a + 1; b < 10; b++)
            cr_assert_neq(memcmp(c.by_game[a]->id, c.by_game[b]->id, RECORD_ID_BYTES), 0);
    s_collect_free(&c);
}

/* The policy recorded for game k's first move is the search's target
 * (mcts_result.target) from the start with seed seed + k: pruned visits, or
 * Gumbel's pi', which differ from the plain visit shares in some game (the
 * start has a win to find, so the children's values differ and pruning has
 * work). In gumbel mode the move played is the search's choice. */
Test(selfplay, records_the_search_s_policy_target)
{
    const game_def *g = game_default();
    for (int mode = 0; mode < 2; mode++) {
        collect c;
        selfplay_config cfg = s_config(6, 3, 500);
        cfg.search.simulations = 64;
        if (mode == 0) {
            cfg.search.forced_playouts_k = 2;
            cfg.search.policy_pruning = true;
        } else {
            cfg.search.root_mode = MCTS_ROOT_GUMBEL;
            cfg.search.gumbel_c_scale = 0.1f;
        }
        cfg.start_position = ".W....b............w.BB.. b"; /* a win to find: values differ */
        s_run(&cfg, evaluator_uniform(g), &c, NULL);
        game_state start;
        char perr[100];
        cr_assert_eq(g->parse_position(&start, cfg.start_position, perr, sizeof perr), 0);
        int differ = 0;
        for (int k = 0; k < 6; k++) {
            const game_record *r = c.by_game[k];
            cr_assert_not_null(r);
            mcts_result res;
            cr_assert_eq(mcts_search(g, &cfg.search, evaluator_uniform(g), &start,
                                     cfg.seed + (uint64_t)k, &res), 0);
            cr_assert(mode == 0 ? res.pruned : res.gumbel);
            const record_move *mv = &r->moves[0];
            if (mode == 1)
                cr_assert_eq(mv->action, res.best, "gumbel: the search's choice is played");
            int j = 0;
            for (int a = 0; a < res.n; a++) {
                differ += res.target[a] != (float)res.visits[a] / (float)res.total;
                if (res.target[a] <= 0)
                    continue;
                cr_assert_lt(j, (int)mv->policy_n);
                cr_assert_eq(r->policy_actions[mv->policy_off + j], res.actions[a]);
                cr_assert_eq(r->policy[mv->policy_off + j], res.target[a], "mode %d game %d "
                             "action %d", mode, k, a);
                j++;
            }
            cr_assert_eq(j, (int)mv->policy_n);
            char err[200];
            cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "game %d: %s", k, err);
        }
        cr_assert_gt(differ, 0, "mode %d should change some target", mode);
        s_collect_free(&c);
    }
}

Test(selfplay, a_fixed_seed_reproduces_every_game)
{
    const game_def *g = game_default();
    collect a, b, d, e;
    selfplay_config cfg = s_config(6, 3, 777);
    s_run(&cfg, evaluator_uniform(g), &a, NULL);
    s_run(&cfg, evaluator_uniform(g), &b, NULL);
    for (int k = 0; k < 6; k++)
        cr_assert(s_same_play(a.by_game[k], b.by_game[k]), "game %d differs between runs", k);
    /* With the uniform evaluator, a game does not depend on its neighbours. */
    selfplay_config one = s_config(6, 1, 777);
    s_run(&one, evaluator_uniform(g), &d, NULL);
    for (int k = 0; k < 6; k++)
        cr_assert(s_same_play(a.by_game[k], d.by_game[k]), "game %d differs with parallel 1", k);
    /* Another seed plays other games. */
    selfplay_config other = s_config(6, 3, 778);
    s_run(&other, evaluator_uniform(g), &e, NULL);
    int same = 0;
    for (int k = 0; k < 5; k++)
        same += s_same_play(a.by_game[k + 1], e.by_game[k]); /* same seeds 778..782 */
    cr_assert_eq(same, 5, "game k of seed 777 is game k-1 of seed 778");
    int differ = 0;
    for (int k = 0; k < 6; k++) {
        e.by_game[k]->seed = a.by_game[k]->seed; /* compare the play only */
        differ += !s_same_play(a.by_game[k], e.by_game[k]);
    }
    cr_assert_gt(differ, 3);
    s_collect_free(&a);
    s_collect_free(&b);
    s_collect_free(&d);
    s_collect_free(&e);
}

Test(selfplay, games_share_evaluator_batches_and_forced_moves_are_free)
{
    const game_def *g = game_default();
    harness_counter cnt;
    evaluator ev = harness_counting(&cnt, evaluator_uniform(g));
    collect c;
    selfplay_stats st;
    selfplay_config cfg = s_config(8, 8, 5);
    cfg.search.leaves_per_tree = 4;
    s_run(&cfg, ev, &c, &st);
    cr_assert_eq(st.search.evaluator_calls, (uint64_t)cnt.calls);
    cr_assert_eq(st.search.evaluated, (uint64_t)cnt.positions);
    cr_assert_gt(st.search.max_batch_seen, 8, "leaves of several games in one batch");
    cr_assert_leq(st.search.max_batch_seen, 32);
    /* Forced states were played: at least one game has some; they cost no
     * search: the simulations equal 32 per searched state, minus the visits
     * that the reused subtree already held. */
    cr_assert_gt(st.forced, 0u);
    uint64_t searched = st.states - st.forced;
    cr_assert_leq(st.search.simulations, searched * 32);
    cr_assert_geq(st.search.simulations, searched * 32 / 4, "reuse cannot cover that much");
    s_collect_free(&c);
}

Test(selfplay, stop_new_finishes_the_games_in_progress)
{
    const game_def *g = game_default();
    selfplay_config cfg = s_config(20, 4, 9);
    char err[200];
    selfplay *sp = selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err);
    collect c = {.seed0 = 9};
    int remaining;
    cr_assert_eq(selfplay_step(sp, s_collect, &c, &remaining), 0);
    cr_assert_eq(remaining, 20);
    selfplay_stop_new(sp);
    cr_assert_eq(selfplay_run(sp, s_collect, &c), 0);
    selfplay_stats st;
    selfplay_get_stats(sp, &st);
    cr_assert_eq(st.games_started, 4);
    cr_assert_eq(st.games_done, 4);
    cr_assert_eq(c.finished, 4);
    selfplay_destroy(&sp);
    s_collect_free(&c);
}

Test(selfplay, callback_errors_stop_the_run)
{
    const game_def *g = game_default();
    selfplay_config cfg = s_config(6, 2, 3);
    char err[200];
    selfplay *sp = selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err);
    collect c = {.seed0 = 3, .stop_after = 2};
    cr_assert_eq(selfplay_run(sp, s_collect, &c), KZ_EIO);
    cr_assert_eq(c.finished, 2);
    selfplay_destroy(&sp);
    s_collect_free(&c);
}

Test(selfplay, bad_configurations_are_refused_with_a_reason)
{
    const game_def *g = game_default();
    char err[200];
    selfplay_config cfg = s_config(0, 2, 1);
    cr_assert_null(selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err));
    cr_assert(strstr(err, "games"), "%s", err);
    cfg = s_config(2, 2, 1);
    cfg.search.simulations = -3;
    cr_assert_null(selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err));
    cr_assert(strstr(err, "simulations"), "%s", err);
    cfg = s_config(2, 2, 1);
    cfg.start_position = "bbbb";
    cr_assert_null(selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err));
    cr_assert(strstr(err, "start position"), "%s", err);
    cfg.start_position = "....b.................... w"; /* White has lost */
    cr_assert_null(selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err));
    cr_assert(strstr(err, "over"), "%s", err);
}

Test(selfplay, games_from_a_given_position)
{
    const game_def *g = game_default();
    collect c;
    selfplay_config cfg = s_config(3, 3, 50);
    cfg.start_position = ".......b....b....bb..wW.. b";
    s_run(&cfg, evaluator_uniform(g), &c, NULL);
    for (int k = 0; k < 3; k++) {
        game_record *r = c.by_game[k];
        cr_assert_str_eq(r->start_position, ".......b....b....bb..wW.. b");
        char err[200];
        cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "%s", err);
    }
    s_collect_free(&c);
}

/* --- kz selfplay and kz records, the real binary (KZ_BIN_DIR) ------------------------ */

/* The lines of a `kz records --game K` listing that describe moves. */
static void s_move_lines(const char *listing, char *out, size_t cap)
{
    out[0] = 0;
    const char *p = listing;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        int k;
        if (sscanf(p, " %d ", &k) == 1 && strlen(out) + n + 2 < cap) {
            strncat(out, p, n);
            strcat(out, "\n");
        }
        p += n + (eol ? 1 : 0);
    }
}

Test(selfplay_cli, writes_records_that_kz_records_summarises_and_replays)
{
    harness_cli c;
    harness_cli_init(&c, "selfplay-cli");
    cr_assert_eq(harness_cli_kz(&c,
                                "selfplay --games 4 --parallel 2 --sims 16 --seed 5 --out a.rec "
                                "--quiet"),
                 0, "%s", c.err);
    cr_assert(strstr(c.out, "games: 4 written to a.rec"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "records a.rec"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "games: 4"), "%s", c.out);
    cr_assert(strstr(c.out, "checked by replay: 4 valid, 0 invalid"), "%s", c.out);
    cr_assert(strstr(c.out, "by reason:"), "%s", c.out);
    cr_assert(strstr(c.out, "mean length:"), "%s", c.out);
    /* The same seed gives the same games, move for move. */
    cr_assert_eq(harness_cli_kz(&c,
                                "selfplay --games 4 --parallel 4 --sims 16 --seed 5 --out b.rec "
                                "--quiet"),
                 0, "%s", c.err);
    static char la[1 << 16], lb[1 << 16];
    for (int k = 1; k <= 4; k++) {
        char args[64];
        snprintf(args, sizeof args, "records a.rec --game %d", k);
        cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
        cr_assert(strstr(c.out, "result:"), "%s", c.out);
        s_move_lines(c.out, la, sizeof la);
        snprintf(args, sizeof args, "records b.rec --game %d", k);
        cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
        s_move_lines(c.out, lb, sizeof lb);
        cr_assert_gt(strlen(la), 20u);
        /* Games finish in another order with another --parallel: find game k
         * of a.rec among b.rec's by its seed line instead when they differ. */
        if (strcmp(la, lb) != 0) {
            bool found = false;
            for (int j = 1; j <= 4 && !found; j++) {
                snprintf(args, sizeof args, "records b.rec --game %d", j);
                cr_assert_eq(harness_cli_kz(&c, args), 0);
                s_move_lines(c.out, lb, sizeof lb);
                found = !strcmp(la, lb);
            }
            cr_assert(found, "game %d of a.rec is not in b.rec", k);
        }
    }
    harness_cli_fini(&c);
}

Test(selfplay_cli, bad_input_gives_one_line_and_status_2)
{
    harness_cli c;
    harness_cli_init(&c, "selfplay-cli");
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 0 --out x.rec"), 2);
    cr_assert(strstr(c.err, "--games"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2"), 2);
    cr_assert(strstr(c.err, "--out"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --bogus"), 2);
    cr_assert(strstr(c.err, "--bogus"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --sims abc"), 2);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --epsilon 2"), 2);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --policy-pruning"), 2);
    cr_assert(strstr(c.err, "forced_playouts_k"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --forced-playouts-k -1"), 2);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --root-mode muzero"), 2);
    cr_assert(strstr(c.err, "--root-mode"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --root-mode gumbel "
                                    "--forced-playouts-k 2"), 2);
    cr_assert(strstr(c.err, "root_mode"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --model nonexistent.kzm"), 2);
    cr_assert(strstr(c.err, "nonexistent.kzm"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --out x.rec --position bbb"), 2);
    cr_assert(strstr(c.err, "position"), "%s", c.err);
    cr_assert_eq(strchr(c.err, '\n'), c.err + strlen(c.err) - 1, "one line: %s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "records"), 2);
    cr_assert_eq(harness_cli_kz(&c, "records missing.rec"), 2);
    cr_assert(strstr(c.err, "missing.rec"), "%s", c.err);
    /* Gumbel self-play from the command line gives valid records. */
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 2 --parallel 2 --sims 16 --seed 1 "
                                    "--root-mode gumbel --gumbel-m 4 --gumbel-c-scale 0.1 "
                                    "--out g.rec --quiet"), 0, "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "records g.rec"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "games: 2"), "%s", c.out);
    /* A truncated file: the games before the damage are counted, then status 2. */
    cr_assert_eq(harness_cli_kz(&c, "selfplay --games 3 --parallel 3 --sims 8 --seed 1 --out t.rec "
                          "--quiet"), 0, "%s", c.err);
    char path[128];
    snprintf(path, sizeof path, "%s/t.rec", c.dir);
    uint8_t *data;
    size_t len;
    cr_assert_eq(file_read_all(path, &data, &len), 0);
    cr_assert_eq(truncate(path, (off_t)(len - 5)), 0);
    free(data);
    cr_assert_eq(harness_cli_kz(&c, "records t.rec"), 2);
    cr_assert(strstr(c.err, "truncated"), "%s", c.err);
    cr_assert(strstr(c.out, "games: 2"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "records t.rec --game 9"), 2);
    cr_assert_eq(harness_cli_kz(&c, "records t.rec --game x"), 2);
    cr_assert(strstr(c.err, "--game"), "%s", c.err);
    harness_cli_fini(&c);
}

Test(selfplay_cli, help_describes_every_option)
{
    harness_cli c;
    harness_cli_init(&c, "selfplay-cli");
    cr_assert_eq(harness_cli_kz(&c, "selfplay --help"), 0);
    const char *flags[] = {"--model", "--games", "--out", "--parallel", "--sims", "--seed",
                           "--leaves", "--c-puct", "--alpha", "--epsilon", "--temp-plies",
                           "--fpu", "--no-reuse", "--cache", "--position", "--model-version",
                           "--worker-id", "--threads", "--quiet", "--forced-playouts-k",
                           "--policy-pruning", "--root-mode", "--gumbel-m", "--gumbel-c-visit",
                           "--gumbel-c-scale"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        cr_assert(strstr(c.out, flags[i]), "help lacks %s", flags[i]);
    cr_assert_eq(harness_cli_kz(&c, "records --help"), 0);
    cr_assert(strstr(c.out, "--game"), "%s", c.out);
    harness_cli_fini(&c);
}

Test(selfplay_cli, plays_with_a_model_file)
{
    harness_cli c;
    harness_cli_init(&c, "selfplay-cli");
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 --value-hidden 8 --seed 3 "
                          "--version 12 m.kzm"), 0, "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c,
                                "selfplay --model m.kzm --games 2 --parallel 2 --sims 8 --seed 2 "
                                "--out m.rec --quiet"),
                 0, "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "records m.rec"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "model versions 12..12"), "%s", c.out);
    cr_assert(strstr(c.out, "2 valid"), "%s", c.out);
    harness_cli_fini(&c);
}

/* --- the driver's searches ---------------------------------------------------------- */

static int s_count_done(void *ctx, const game_record *r, uint32_t arena_slot)
{
    (void)r;
    (void)arena_slot;
    (*(int *)ctx)++;
    return 0;
}

/* When every one of the DRIVER_MAX_SEARCHES searches is held by a game in
 * play and a game needs another (a worker whose best and candidates change
 * faster than its games finish), driver_start says so with KZ_EFULL, not
 * "out of memory" (issue 28, #4: the worker exited "fatal: out of memory");
 * a game of a network already searched still starts, and the waiting game
 * starts once a game has finished. */
Test(selfplay, a_game_waits_while_every_search_is_held)
{
    const game_def *g = game_default();
    driver_config cfg = driver_config_default();
    cfg.play = s_config(1, DRIVER_MAX_SEARCHES + 3, 5);
    cfg.play.search.simulations = 8;
    char err[300];
    driver *d = driver_new(g, &cfg, err, sizeof err);
    cr_assert_not_null(d, "%s", err);
    driver_net nets[DRIVER_MAX_SEARCHES + 1];
    for (int k = 0; k <= DRIVER_MAX_SEARCHES; k++)
        nets[k] = (driver_net){.ev = evaluator_uniform(g)};
    driver_game spec = {.kind = RECORD_SELFPLAY, .model_version = 1, .simulations = 8};
    for (int k = 0; k < DRIVER_MAX_SEARCHES; k++) {
        spec.net[0] = spec.net[1] = &nets[k];
        spec.seed = (uint64_t)k;
        cr_assert_eq(driver_start(d, &spec, err, sizeof err), 0, "game %d: %s", k, err);
    }
    spec.net[0] = spec.net[1] = &nets[DRIVER_MAX_SEARCHES];
    cr_assert_eq(driver_start(d, &spec, err, sizeof err), KZ_EFULL, "%s", err);
    cr_assert(strstr(err, "held by games in play") && strstr(err, "waits"), "%s", err);
    cr_assert_eq(driver_in_play(d), DRIVER_MAX_SEARCHES);
    spec.net[0] = spec.net[1] = &nets[0]; /* a search that exists: starts */
    cr_assert_eq(driver_start(d, &spec, err, sizeof err), 0, "%s", err);
    /* It starts once a search is free (the first game to finish may have
     * shared nets[0]'s with the one started last). */
    spec.net[0] = spec.net[1] = &nets[DRIVER_MAX_SEARCHES];
    int done = 0, rc = KZ_EFULL;
    for (long steps = 0; rc == KZ_EFULL; steps++) {
        cr_assert_lt(steps, 1000000, "never started (%d games finished)", done);
        cr_assert_eq(driver_step(d, s_count_done, &done), 0);
        if (done == 0)
            continue;
        rc = driver_start(d, &spec, err, sizeof err);
        cr_assert(rc == 0 || (rc == KZ_EFULL && done == 1), "%d games finished: %s", done, err);
    }
    driver_destroy(&d);
    for (int k = 0; k <= DRIVER_MAX_SEARCHES; k++)
        cr_assert_eq(nets[k].refs, 0, "network %d released", k);
}

static bool s_stop_tick(void *ctx)
{
    (*(int *)ctx)++;
    return true;
}

/* A baseline side whose tick says stop (a worker told to stop during an
 * anchor's deep move) abandons its game: driver_step goes on (0), the game
 * is counted abandoned, not handed over, and the slot is free again. */
Test(selfplay, a_baseline_move_given_up_by_its_tick_abandons_the_game)
{
    const game_def *g = game_default();
    driver_config cfg = driver_config_default();
    cfg.play = s_config(1, 2, 5);
    cfg.play.search.simulations = 8;
    char err[300];
    driver *d = driver_new(g, &cfg, err, sizeof err);
    cr_assert_not_null(d, "%s", err);
    int ticks = 0, done = 0;
    driver_set_tick(d, s_stop_tick, &ticks);
    driver_net net = {.ev = evaluator_uniform(g)};
    driver_game spec = {.kind = RECORD_EVAL, .model_version = 1, .simulations = 8, .seed = 3};
    spec.net[0] = &net;
    spec.baseline[1] = "alphabeta:6";
    cr_assert_eq(driver_start(d, &spec, err, sizeof err), 0, "%s", err);
    for (long steps = 0; driver_in_play(d) > 0; steps++) {
        cr_assert_lt(steps, 100000);
        cr_assert_eq(driver_step(d, s_count_done, &done), 0);
    }
    driver_stats st;
    driver_get_stats(d, &st);
    cr_assert_gt(ticks, 0, "the baseline never ticked");
    cr_assert_eq(st.abandoned, 1);
    cr_assert_eq(done, 0, "an abandoned game is not handed over");
    cr_assert_eq(driver_free(d), 2);
    driver_destroy(&d);
    cr_assert_eq(net.refs, 0);
}
