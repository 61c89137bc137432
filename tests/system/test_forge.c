/* Tests of the coordinator's check of forged games (recheck.h, server/forge.c,
 * docs/security.md): the network's output for a position does not depend on
 * the batch it is in (what makes a worker's search reproducible alone); the
 * real kz-worker's self-play and arena games all pass the check of every
 * state; a kz-worker that doctors its visit shares, or plays a network other
 * than the one it names (setting forge, for these tests), is caught within a
 * few games, its games refused as forged, and gets no more arena slots. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "net/client.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/kernel.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "play/recheck.h"
#include "data/record.h"
#include "play/selfplay.h"
#include "common/util.h"
#include "data/store.h"
#include "data/validate.h"

TestSuite(forge, .fini = harness_cleanup, .timeout = 600);

/* Every position's logits and value are the same bits alone, in threes and in
 * a batch of 200, on each path recheck accepts (the AVX-512 kernels); the
 * OpenBLAS path is refused by recheck_evaluator_usable. */
Test(forge, network_output_does_not_depend_on_the_batch)
{
    int precision;
    cr_expect_not(recheck_evaluator_usable("openblas-fp32", &precision));
    cr_expect_not(recheck_evaluator_usable("", &precision));
    if (!kernel_cpu_has(KERNEL_AVX512))
        cr_skip_test("no AVX-512 here: no evaluator path the check accepts");
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 2;
    a.filters = 16;
    model *m = model_new(&a, 7);
    int C = a.in_planes, HW = a.height * a.width, A = a.actions, N = 200;
    float *x = xcalloc((size_t)N * C * HW, sizeof *x);
    rng_t r;
    rng_seed(&r, 3);
    for (int i = 0; i < N * C * HW; i++)
        x[i] = rng_uniform(&r) < 0.3 ? 1.0f : 0.0f;
    const char *paths[2] = {"avx512-fp32", "avx512-bf16"};
    for (int k = 0; k < 2; k++) {
        if (!recheck_evaluator_usable(paths[k], &precision))
            continue;
        model_eval_config cfg;
        model_eval_config_default(&cfg);
        cfg.precision = precision;
        model_eval *big = model_eval_new_config(m, 1024, &cfg);
        model_eval *small = model_eval_new_config(m, 4, &cfg);
        cr_assert_str_eq(model_eval_path(big), paths[k]);
        float *lb = xmalloc((size_t)N * A * sizeof *lb), *ls = xmalloc(3 * (size_t)A * sizeof *ls);
        float vb[200], vs[3];
        model_eval_run(big, x, N, lb, vb);
        int differ = 0;
        for (int i = 0; i + 3 <= N; i += 3) {
            model_eval_run(small, x + (size_t)i * C * HW, 3, ls, vs);
            for (int j = 0; j < 3; j++)
                differ += memcmp(ls + (size_t)j * A, lb + (size_t)(i + j) * A,
                                 (size_t)A * sizeof *ls) != 0 || vs[j] != vb[i + j];
            model_eval_run(small, x + (size_t)i * C * HW, 1, ls, vs);
            differ += memcmp(ls, lb + (size_t)i * A, (size_t)A * sizeof *ls) != 0 ||
                      vs[0] != vb[i];
        }
        cr_expect_eq(differ, 0, "%s: %d positions differ with the batch", paths[k], differ);
        free(lb);
        free(ls);
        model_eval_destroy(&big);
        model_eval_destroy(&small);
    }
    free(x);
    model_destroy(&m);
}

/* The sample: 1 in 1 picks the last searched state, 0 none, and a larger
 * rate picks about the share asked for. */
Test(forge, sample_picks_searched_states)
{
    game_record *r = record_new();
    uint16_t a = 0;
    float one = 1;
    for (int k = 0; k < 1000; k++)
        cr_assert_eq(record_add_move(r, 0, k % 10 == 9, 0, 1, &a, &one), 0);
    rng_t rng;
    rng_seed(&rng, 5);
    cr_expect_eq(recheck_sample(r, 1, &rng), 998); /* 999 is forced */
    cr_expect_eq(recheck_sample(r, 0, &rng), -1);
    int picked = 0;
    for (int t = 0; t < 200; t++)
        picked += recheck_sample(r, 100, &rng) >= 0;
    /* P(a game of 900 searched states has no pick at 1/100) = 0.99^900 < 1e-3. */
    cr_expect_geq(picked, 195);
    record_destroy(&r);
}

/* A record without the evaluator field (loadgen's, or older) is not
 * checkable, and says why. */
Test(forge, records_without_the_arithmetic_are_not_checkable)
{
    game_record *r = record_new();
    r->kind = RECORD_SELFPLAY;
    r->settings.simulations = 8;
    r->settings.leaves_per_tree = 4;
    char why[160];
    cr_expect_not(recheck_supported(r, why, sizeof why));
    cr_expect(strstr(why, "no evaluator") != NULL, "%s", why);
    snprintf(r->settings.evaluator, sizeof r->settings.evaluator, "openblas-fp32");
    cr_expect_not(recheck_supported(r, why, sizeof why));
    cr_expect(strstr(why, "OpenBLAS") != NULL, "%s", why);
    r->kind = RECORD_EVAL;
    cr_expect_not(recheck_supported(r, why, sizeof why));
    record_destroy(&r);
}

/* A game played as a worker plays it (recheck_play) passes its check; one
 * doctored share, root value or a search by another network does not. */
Test(forge, recheck_finds_what_was_changed)
{
    int precision;
    if (!recheck_evaluator_usable("avx512-fp32", &precision))
        cr_skip_test("no AVX-512 here: no evaluator path the check accepts");
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 8;
    model *m1 = model_new(&a, 1), *m2 = model_new(&a, 2);
    evaluator_net *n1 = evaluator_net_new_precision(m1, 16, MODEL_FP32);
    evaluator_net *n2 = evaluator_net_new_precision(m2, 16, MODEL_FP32);
    cr_assert_str_eq(evaluator_net_path(n1), "avx512-fp32");
    evaluator one[2] = {evaluator_net_get(n1), evaluator_net_get(n1)};
    evaluator other[2] = {evaluator_net_get(n2), evaluator_net_get(n2)};
    for (int variant = 0; variant < 3; variant++) {
        game_record *r = record_new();
        mcts_settings ms = mcts_settings_default();
        ms.simulations = 12;
        if (variant == 2)
            ms.root_mode = MCTS_ROOT_GUMBEL;
        r->kind = RECORD_SELFPLAY;
        r->model_version = 1;
        r->settings = selfplay_record_settings(&ms);
        if (variant == 1) { /* playout cap randomization */
            r->settings.fast_simulations = 4;
            r->settings.pcr_full_fraction = 0.5;
        }
        snprintf(r->settings.evaluator, sizeof r->settings.evaluator, "avx512-fp32");
        r->seed = 40 + (uint64_t)variant;
        cr_assert_eq(recheck_play(g, r, one), 0);
        cr_assert_gt(r->n_moves, 4);
        recheck_report rep;
        cr_assert_eq(recheck_record(g, r, one, -1, &rep), 0);
        cr_expect_eq(rep.verdict, RECHECK_MATCH, "variant %d: %s", variant, rep.detail);
        cr_expect_gt(rep.states, 0);
        /* Another network: caught at its first searched state. */
        cr_assert_eq(recheck_record(g, r, other, -1, &rep), 0);
        cr_expect_eq(rep.verdict, RECHECK_FORGED, "variant %d", variant);
        /* A doctored root value, then a doctored share, of the last searched state. */
        int k = r->n_moves - 1;
        while (k > 0 && (r->moves[k].forced || r->moves[k].policy_n < 2))
            k--;
        cr_assert_gt(k, 0);
        float v = r->moves[k].root_value;
        r->moves[k].root_value = v + 0.001f;
        cr_assert_eq(recheck_record(g, r, one, -1, &rep), 0);
        cr_expect_eq(rep.verdict, RECHECK_FORGED);
        cr_expect_eq(rep.state, k, "%s", rep.detail);
        /* Checking only the states before it does not see it. */
        cr_assert_eq(recheck_record(g, r, one, k - 1, &rep), 0);
        cr_expect_eq(rep.verdict, RECHECK_MATCH, "%s", rep.detail);
        r->moves[k].root_value = v;
        float *p = r->policy + r->moves[k].policy_off;
        p[0] += 0.01f;
        p[1] -= 0.01f;
        cr_assert_eq(recheck_record(g, r, one, -1, &rep), 0);
        cr_expect_eq(rep.verdict, RECHECK_FORGED);
        cr_expect_eq(rep.state, k, "%s", rep.detail);
        record_destroy(&r);
    }
    evaluator_net_destroy(&n1);
    evaluator_net_destroy(&n2);
    model_destroy(&m1);
    model_destroy(&m2);
}

/* --- the real programs --------------------------------------------------------------- */

/* A worker of h named id with its common flags plus extra (NULL-terminated). */
static pid_t s_worker(const harness *h, const char *id, const char *log, const char *const *extra)
{
    static char a_end[96], a_sub[96], a_cache[128], a_id[96];
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h->endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h->pub);
    snprintf(a_cache, sizeof a_cache, "--model_cache_dir=%s/models-%s", h->dir, id);
    snprintf(a_id, sizeof a_id, "--client_id=%s", id);
    const char *args[40] = {a_end, a_sub, a_cache, a_id, "--simulations=8", "--timeout_ms=300",
                            "--heartbeat_ms=100", "--log_s=0.1", "--seed=7", "--parallel=4"};
    int n = 10;
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    return harness_spawn("kz-worker", args, log);
}

/* The number after "key": in the /status entry of client id. */
static double s_client_num(const harness *h, const char *id, const char *key)
{
    char after[96];
    snprintf(after, sizeof after, "{\"id\": \"%s\"", id);
    return harness_status_num(h, after, key);
}

/* Whether /status says client id gets no arena slots. */
static bool s_client_barred(const harness *h, const char *id)
{
    static char body[1 << 16];
    cr_assert_eq(harness_http(h->http_port, "/status", body, sizeof body), 200);
    char after[96];
    snprintf(after, sizeof after, "{\"id\": \"%s\"", id);
    const char *w = strstr(body, after);
    const char *b = w ? strstr(w, "\"arena_barred\": ") : NULL;
    return b && !strncmp(b + 16, "true", 4);
}

/* Every state of every game checked: an honest worker's self-play (with
 * playout cap randomization) and arena games (two networks, lazy trees) all
 * match their re-search. */
Test(forge, honest_worker_games_all_pass)
{
    harness h;
    harness_init(&h, "fhonest");
    const char *cx[] = {"--forge_check_states=1", "--forge_queue=256", "--eval_share=0",
                        "--gate=spec", "--arena_games=8", "--arena_threshold=0",
                        "--arena_per_worker=4", "--selfplay_games=2", NULL};
    harness_coord_start(&h, cx);
    char log[128];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    const char *extra[] = {"--pcr_full_fraction=0.5", "--pcr_fast_simulations=3", NULL};
    pid_t w = s_worker(&h, "honest", log, extra);
    cr_assert_geq(harness_wait_status(&h, "\"forge\"", "checked", 4, 60), 4, "see %s", log);
    cr_assert_eq(harness_submit_candidate(&h), 2);
    /* The arena's games are checked too (each with both networks); the first
     * win promotes, the games after it are stored without counting. */
    cr_assert_geq(harness_wait_status(&h, "\"ingest\"", "arena_counted", 1, 60), 1,
                  "see %s and %s", log, h.coord_log);
    double t0 = harness_now();
    while (!(harness_log_num(log, ") arena ") >= 2) && harness_now() - t0 < 60)
        harness_sleep_ms(50);
    cr_assert_geq(harness_log_num(log, ") arena "), 2, "see %s", log);
    cr_assert_geq(harness_wait_status(&h, "\"forge\"", "checked", 12, 60), 12);
    harness_stop(w, SIGTERM, 30);
    /* A game is counted as checked before it is stored, and a sampled game
     * that finds forge_queue games held is stored unchecked (skipped, by
     * design: under load the check thread falls behind): compare once none
     * is held and the store has caught up. */
    double t1 = harness_now();
    while (harness_status_num(&h, "\"forge\"", "held") > 0 && harness_now() - t1 < 60)
        harness_sleep_ms(50);
    double checked = harness_status_num(&h, "\"forge\"", "checked");
    double skipped = harness_status_num(&h, "\"forge\"", "skipped");
    double stored = harness_wait_status(&h, "\"replay\"", "games", checked + skipped, 30);
    cr_expect_eq(harness_status_num(&h, "\"forge\"", "forged"), 0, "see %s", h.coord_log);
    cr_expect_eq(harness_status_num(&h, "\"forge\"", "unchecked"), 0, "see %s", h.coord_log);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "rejected"), 0, "see %s", h.coord_log);
    cr_expect_eq(checked + skipped, stored, "checked %g, skipped %g, stored %g", checked, skipped,
                 stored);
    cr_expect_gt(harness_status_num(&h, "\"forge\"", "states"), checked * 5);
    cr_expect_eq(s_client_num(&h, "honest", "forged"), 0);
    harness_fini(&h);
}

/* A forging worker (forge = visits or model) alone with the coordinator: its
 * games are refused as forged within its first games, and once caught it gets
 * no arena slot while a candidate waits for its arena. */
static void s_forger(const char *how)
{
    harness h;
    harness_init(&h, "fforge");
    const char *cx[] = {"--forge_check_states=1", "--forge_queue=256", "--eval_share=0",
                        "--gate=spec", "--arena_games=8", "--arena_per_worker=4",
                        "--selfplay_games=2", NULL};
    harness_coord_start(&h, cx);
    char log[128], flag[64];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    snprintf(flag, sizeof flag, "--forge=%s", how);
    const char *extra[] = {flag, NULL};
    pid_t w = s_worker(&h, "forger", log, extra);
    /* Caught within its first games (N = 4: the first ones already). */
    cr_assert_geq(harness_wait_status(&h, "\"forge\"", "forged", 1, 60), 1, "see %s",
                  h.coord_log);
    cr_expect_leq(harness_status_num(&h, "\"forge\"", "checked"), 3);
    cr_expect_geq(s_client_num(&h, "forger", "forged"), 1);
    cr_expect(s_client_barred(&h, "forger"));
    cr_expect_geq(harness_status_num(&h, "\"rejected_by_reason\"", "forged"), 1);
    cr_expect_geq(harness_count(h.coord_log, "(forged)"), 1);
    /* Barred from then on (issue 28): a candidate arrives, the forger gets no
     * arena slot, nothing of it is taken. */
    cr_expect(harness_wait_log(h.coord_log, "forger is a proven forger", 10), "see %s",
              h.coord_log);
    cr_assert_eq(harness_submit_candidate(&h), 2);
    cr_expect_geq(harness_wait_status(&h, "\"forge\"", "barred_refused", 1, 30), 1);
    cr_expect_eq(s_client_num(&h, "forger", "arena_slots"), 0);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "arena_counted"), 0);
    cr_expect_eq(harness_count(log, "arena: playing"), 0, "see %s", log);
    harness_stop(w, SIGTERM, 30);
    harness_fini(&h);
}

Test(forge, worker_with_doctored_visits_is_caught_and_loses_arena_slots)
{
    s_forger("visits");
}

Test(forge, worker_playing_another_network_is_caught)
{
    s_forger("model");
}

/* The positions of every stored game, in order: game g's are [first[g],
 * first[g] + n[g]) (the store appends them game by game); is_forger[g]: its
 * record's worker_id is "forger". */
typedef struct game_spans {
    validator *val;      /* counts each record's positions */
    uint64_t next;       /* the next game's first position */
    uint64_t n_games;    /* games read */
    uint64_t *first;     /* (cap) */
    uint32_t *n;         /* (cap) */
    bool *is_forger;     /* (cap) */
    size_t cap;
} game_spans;

static int s_span(void *ctx, uint64_t seq, const uint8_t *rec, size_t len)
{
    game_spans *g = ctx;
    (void)seq;
    validate_result v;
    cr_assert_eq(validate_record(g->val, rec, len, UINT32_MAX - 1, &v), VALIDATE_OK, "%s",
                 v.detail);
    if (g->n_games == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 1024;
        g->first = realloc(g->first, g->cap * sizeof *g->first);
        g->n = realloc(g->n, g->cap * sizeof *g->n);
        g->is_forger = realloc(g->is_forger, g->cap * sizeof *g->is_forger);
    }
    g->first[g->n_games] = g->next;
    g->n[g->n_games] = v.n_positions;
    g->is_forger[g->n_games] = !strcmp(v.worker_id, "forger");
    g->n_games++;
    g->next += v.n_positions;
    return 0;
}

/* Of the positions in the store of h (read beside its coordinator): how
 * many of the forger's and of the others' are still sampled (readable) in
 * the window, and how many of the forger's are in the window at all
 * (sampled or withdrawn: the window only moves on, so each of these was in
 * it when the forger was barred). */
static void s_window_owners(const harness *h, uint64_t *forger, uint64_t *others,
                            uint64_t *forger_in_window)
{
    char dir[160];
    snprintf(dir, sizeof dir, "%s/store", h->dir);
    store_options so;
    store_options_default(&so);
    so.read_only = true;
    store *st;
    cr_assert_eq(store_open(&st, dir, &so), 0);
    validate_limits lim = {1u << 20, 4096, 1e-3};
    game_spans g = {.val = validator_new(game_default(), &lim)};
    cr_assert_eq(store_foreach_game(st, s_span, &g), 0);
    store_stats ss;
    store_get_stats(st, &ss);
    /* The counters are read when the store opens; the walk is a later
     * snapshot that may hold more games (the coordinator still writes):
     * the first ss.games games are those the counters count. */
    cr_assert_geq(g.n_games, ss.games);
    uint64_t end = ss.games ? g.first[ss.games - 1] + g.n[ss.games - 1] : 0;
    cr_assert_eq(end, ss.positions_total, "the positions are not the games' in order");
    store_batch *b = store_batch_new(1);
    *forger = *others = *forger_in_window = 0;
    for (uint64_t i = 0; i < ss.games; i++)
        for (uint64_t q = g.first[i]; q < g.first[i] + g.n[i]; q++) {
            if (q < ss.window_lo)
                continue;
            *forger_in_window += g.is_forger[i];
            if (store_get_position(st, q, b) == 0)
                ++*(g.is_forger[i] ? forger : others);
        }
    store_batch_destroy(&b);
    validator_destroy(&g.val);
    free(g.first);
    free(g.n);
    free(g.is_forger);
    store_close(&st);
}

/* A forging worker beside an honest one, 1 in 100 states re-searched (issue
 * 28): after its first proven forgery the forger is barred with its key
 * (nothing of it taken), its games still in the window leave it (none of
 * its positions is sampled), the honest worker's stay; /status, kz status
 * and the log name it with the evidence; a restarted coordinator keeps it
 * barred (the store holds the list) until forge_readmit names it. */
Test(forge, a_proven_forger_is_barred_and_its_games_leave_the_window)
{
    harness h;
    harness_init(&h, "fbar");
    const char *cx[] = {"--forge_check_states=100", "--forge_queue=256", "--eval_share=0",
                        NULL};
    harness_coord_start(&h, cx);
    char hlog[128], flog[128];
    snprintf(hlog, sizeof hlog, "%s/honest.log", h.dir);
    snprintf(flog, sizeof flog, "%s/forger.log", h.dir);
    pid_t wh = s_worker(&h, "honest", hlog, NULL);
    const char *fx[] = {"--forge=visits", NULL};
    pid_t wf = s_worker(&h, "forger", flog, fx);
    cr_assert_geq(harness_wait_status(&h, "\"forge\"", "forged", 1, 90), 1, "see %s",
                  h.coord_log);
    cr_assert(harness_wait_log(h.coord_log, "forger is a proven forger", 10), "see %s",
              h.coord_log);
    /* The forger is refused from then on: its worker stops. */
    int st;
    cr_expect(harness_wait(wf, 30, &st), "the forger still runs: see %s", flog);
    double g0 = harness_status_num(&h, "\"replay\"", "games");
    cr_expect_geq(harness_wait_status(&h, "\"replay\"", "games", g0 + 4, 60), g0 + 4,
                  "the honest worker stalled");
    uint64_t forger, others, in_window;
    s_window_owners(&h, &forger, &others, &in_window);
    cr_expect_eq(forger, 0, "%llu positions of the forger still sampled",
                 (unsigned long long)forger);
    cr_expect_gt(others, 0);
    /* What of the forger was stored left the window with the bar. Its
     * forgery can be proven before any batch of it is committed (a sampled
     * game is checked beside the commit of the others): then the store holds
     * nothing of it and there is nothing to withdraw. The store, not the
     * timing, says which case this is. */
    double removed = harness_status_num(&h, "{\"client\": \"forger\"", "removed_positions");
    cr_expect(removed >= (double)in_window,
              "%llu positions of the forger in the window, the bar removed %g",
              (unsigned long long)in_window, removed);
    char out[16384], args[200];
    snprintf(args, sizeof args, "status http://127.0.0.1:%d", h.http_port);
    cr_expect_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "barred      forger, a proven forger"), "%s", out);
    /* A restart keeps it barred: the forger, started again, is refused. */
    harness_stop(wh, SIGTERM, 30);
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, cx);
    cr_expect_eq(harness_count(h.coord_log, "forger stays barred"), 1, "see %s", h.coord_log);
    double r0 = harness_status_num(&h, "\"forge\"", "barred_refused");
    wf = s_worker(&h, "forger", flog, fx);
    cr_expect_gt(harness_wait_status(&h, "\"forge\"", "barred_refused", r0 + 1, 30), r0);
    cr_expect(harness_wait(wf, 30, &st), "the forger still runs after the restart: see %s",
              flog);
    double fg = harness_status_num(&h, "{\"id\": \"forger\"", "games");
    cr_expect(isnan(fg) || fg == 0, "%g games of the forger taken after the restart", fg);
    s_window_owners(&h, &forger, &others, &in_window);
    cr_expect_eq(forger, 0);
    /* The operator re-admits it. */
    harness_coord_kill(&h, SIGTERM);
    const char *rx[] = {"--forge_check_states=100", "--forge_readmit=forger", NULL};
    harness_coord_start(&h, rx);
    cr_expect_eq(harness_count(h.coord_log, "forger re-admitted by the operator"), 1);
    harness_fini(&h);
}
