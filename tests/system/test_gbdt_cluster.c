/* Both kinds of model through the real programs (build/toy/, the tests' toy
 * game): a trainer trains trees (model_kind gbdt, XGBoost) while the best
 * is a network, and a network while the best is trees; each candidate is
 * registered, served over HTTP (kz model fetch, kz model info names its
 * kind), loaded by a real worker through evaluator_net_from_bytes and played
 * in its arena against the best of the other kind. Bad tree files stop the
 * programs with one line. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "games/game.h"
#include "nn/gbdt.h"
#include "nn/gbdt_train.h"
#include "tests/harness/harness.h"

/* Waits up to timeout_s for a line of path containing needle. */
static bool s_wait_log(const char *path, const char *needle, double timeout_s)
{
    for (double t = 0; t < timeout_s; t += 0.1) {
        if (harness_count(path, needle) > 0)
            return true;
        harness_sleep(0.1);
    }
    return false;
}

/* A toy cluster whose version 1 is `initial` ("" : a random network) and
 * whose trainer trains `kind` from `init` ("" : none): candidate 2 is of
 * that kind, its arena against version 1 is played by the worker. */
static void s_cluster(const char *tag, bool trees_best, const char *kind)
{
    harness h;
    harness_init(&h, tag);
    proc_output o;
    char best[256] = "", net[256];
    snprintf(net, sizeof net, "%s/net.kzm", h.dir);
    const char *init_net[] = {"model", "init", "--game=toy", "--blocks=1", "--filters=8",
                              "--value_hidden=8", net, NULL};
    cr_assert_eq(harness_run_bin("toy/kz", init_net, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    if (trees_best) {
        snprintf(best, sizeof best, "%s/trees.kzg", h.dir);
        const char *init_trees[] = {"model", "init", "--game=toy", "--kind=gbdt", best, NULL};
        cr_assert_eq(harness_run_bin("toy/kz", init_trees, NULL, &o), 0, "%s", o.err);
        cr_assert(strstr(o.out, "gbdt value 0 trees"), "%s", o.out);
        proc_output_free(&o);
    }
    char a_dir[128], a_bind[96], a_pub[96], a_port[48], a_initial[300];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", h.dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", h.endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", h.pub);
    snprintf(a_port, sizeof a_port, "--http_port=%d", h.http_port);
    snprintf(a_initial, sizeof a_initial, "--initial_model=%s", trees_best ? best : net);
    const char *cargs[] = {a_dir, a_bind, a_pub, a_port, a_initial, "--game=toy", "--sync=false",
                           "--status_ms=20", "--heartbeat_ms=100", "--expiry_ms=2000",
                           "--eval_share=0", "--book_openings=4", "--gate=spec",
                           "--arena_games=2", NULL};
    h.coord = harness_coord_spawn_bin("toy/kz-coordinator", cargs, h.http_port, h.coord_log);
    char a_end[96], a_sub[96], a_cache[128], a_ck[128], a_kind[64], a_init[300], wlog[128],
        tlog[128], a_max[32];
    /* A candidate: the network's after 5 steps, the trees' after one training. */
    snprintf(a_max, sizeof a_max, "--max_steps=%d", strcmp(kind, "net") ? 1 : 5);
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h.endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h.pub);
    snprintf(a_cache, sizeof a_cache, "--model_cache_dir=%s/models", h.dir);
    snprintf(a_ck, sizeof a_ck, "--checkpoint_dir=%s/trainer", h.dir);
    snprintf(a_kind, sizeof a_kind, "--model_kind=%s", kind);
    snprintf(a_init, sizeof a_init, "--init_model=%s", strcmp(kind, "net") ? "" : net);
    snprintf(wlog, sizeof wlog, "%s/worker.log", h.dir);
    snprintf(tlog, sizeof tlog, "%s/trainer.log", h.dir);
    const char *wargs[] = {"--game=toy", a_end, a_sub, a_cache, "--simulations=8",
                           "--parallel=4", "--timeout_ms=300", "--retries=1",
                           "--heartbeat_ms=100", "--log_s=0.2", "--seed=7", NULL};
    pid_t w = harness_spawn("toy/kz-worker", wargs, wlog);
    cr_assert(s_wait_log(wlog, trees_best ? "model 1 loaded (gbdt value 0 trees"
                                          : "model 1 loaded (",
                         30),
              "the worker plays version 1 (see %s)", wlog);
    cr_assert_geq(harness_wait_status(&h, "\"replay\"", "positions", 64, 60), 64,
                  "games stored (see %s)", wlog);
    const char *targs[] = {"--game=toy", a_end, a_ck, a_kind, a_init, "--batch_size=16",
                           "--min_positions=64", "--steps_per_candidate=5", a_max,
                           "--max_reuse=0", "--gbdt_samples_per_candidate=64",
                           "--gbdt_window=256", "--gbdt_rounds=4", "--gbdt_depth=3",
                           "--timeout_ms=1000", "--wait_ms=50", "--stats_s=0.2", "--log_s=0.2",
                           "--seed=3", NULL};
    pid_t t = harness_spawn("toy/kz-trainer", targs, tlog);
    int st;
    cr_assert(harness_wait(t, 90, &st), "the trainer did not finish (see %s)", tlog);
    cr_expect_eq(harness_exit_code(st), 0, "see %s", tlog);
    cr_assert_geq(harness_count(tlog, "registered as version 2 (parent "), 1, "see %s", tlog);
    /* Served over HTTP, and of its kind. */
    char url[96], got[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", h.http_port);
    snprintf(got, sizeof got, "%s/fetched", h.dir);
    const char *fetch[] = {"model", "fetch", url, "--version=2", "--game=toy", got, NULL};
    cr_assert_eq(harness_run_bin("toy/kz", fetch, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    const char *info[] = {"model", "info", got, NULL};
    cr_assert_eq(harness_run_bin("toy/kz", info, NULL, &o), 0, "%s", o.err);
    char want[64];
    snprintf(want, sizeof want, "kind:          %s", kind);
    cr_assert(strstr(o.out, want), "%s", o.out);
    cr_assert(strstr(o.out, "version:       2 (parent "), "%s", o.out);
    if (!strcmp(kind, "gbdt"))
        cr_assert(strstr(o.out, "value trees:   4"), "%s", o.out);
    proc_output_free(&o);
    /* Loaded by the worker and played in its arena against the other kind. */
    cr_assert(s_wait_log(wlog, strcmp(kind, "gbdt") ? "model 2 loaded (" : "model 2 loaded (gbdt",
                         60),
              "the worker loads candidate 2 (see %s)", wlog);
    cr_assert(s_wait_log(h.coord_log, "arena: candidate 2 ", 10), "see %s", h.coord_log);
    cr_assert(s_wait_log(h.coord_log, " games (+", 90), "the arena is decided (see %s)",
              h.coord_log);
    cr_expect_eq(harness_count(wlog, "not a usable model"), 0, "see %s", wlog);
    cr_expect_eq(harness_stop(w, SIGTERM, 20), 0, "see %s", wlog);
    harness_fini(&h);
}

Test(gbdt_cluster, trees_trained_against_a_network_best, .timeout = 600)
{
    s_cluster("gbdt-trees", false, "gbdt");
}

Test(gbdt_cluster, a_network_trained_against_a_trees_best, .timeout = 600)
{
    s_cluster("gbdt-net", true, "net");
}

/* A truncated tree file, or one of another game, stops each program with
 * one line and exit status 2 (never a crash). */
Test(gbdt_cluster, bad_tree_files_get_one_line)
{
    harness h;
    harness_init(&h, "gbdt-bad");
    char trees[256], cut[256], kh[256];
    snprintf(trees, sizeof trees, "%s/t.kzg", h.dir);
    snprintf(cut, sizeof cut, "%s/cut.kzg", h.dir);
    snprintf(kh, sizeof kh, "%s/kh.kzg", h.dir);
    proc_output o;
    const char *init[] = {"model", "init", "--game=toy", "--kind=gbdt", trees, NULL};
    cr_assert_eq(harness_run_bin("toy/kz", init, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    const char *init_kh[] = {"model", "init", "--kind=gbdt", kh, NULL};
    cr_assert_eq(harness_run_bin("kz", init_kh, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "head -c 50 %s > %s", trees, cut);
    char out[64];
    cr_assert_eq(harness_sh(cmd, out, sizeof out), 0);
    const char *info[] = {"model", "info", cut, NULL};
    cr_assert_eq(harness_run_bin("toy/kz", info, NULL, &o), 2);
    cr_assert(strstr(o.err, "truncated") && strchr(o.err, '\n') == o.err + strlen(o.err) - 1,
              "%s", o.err);
    proc_output_free(&o);
    char a_init[300], a_ck[128];
    snprintf(a_ck, sizeof a_ck, "--checkpoint_dir=%s/trainer", h.dir);
    const char *bad[2] = {cut, kh};
    const char *why[2] = {"truncated", "the model is for game 'khreibaga', not 'toy'"};
    for (int k = 0; k < 2; k++) {
        snprintf(a_init, sizeof a_init, "--init_model=%s", bad[k]);
        const char *targs[] = {"--game=toy", "--endpoint=tcp://127.0.0.1:1", a_ck, a_init, NULL};
        cr_assert_eq(harness_run_bin("toy/kz-trainer", targs, NULL, &o), 2, "%s", o.err);
        cr_assert(strstr(o.err, why[k]), "%s", o.err);
        proc_output_free(&o);
        char a_dir[128], a_initial[300];
        snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store%d", h.dir, k);
        snprintf(a_initial, sizeof a_initial, "--initial_model=%s", bad[k]);
        const char *cargs[] = {"--game=toy", a_dir, a_initial, "--http_port=0", NULL};
        cr_assert_eq(harness_run_bin("toy/kz-coordinator", cargs, NULL, &o), 2, "%s", o.err);
        cr_assert(strstr(o.err, why[k]), "%s", o.err);
        proc_output_free(&o);
    }
    harness_fini(&h);
}

/* Yinsh's trees (issue 26): its features hook gives the 85 points of the
 * four piece planes and the seven filled planes once (347, not the grid's
 * 1,452); trees trained on random positions with it are saved, shown by kz
 * model info and played by kz match; trees of another game and a truncated
 * file get one line and exit status 2 from kz match and the trainer. */
Test(gbdt_cluster, yinsh_trees_are_played_and_bad_files_get_one_line, .timeout = 600)
{
    const game_def *g = game_find("yinsh");
    cr_assert_not_null(g);
    cr_assert_eq(gbdt_feature_count(g), 347);
    enum { N = 300 };
    size_t P = (size_t)g->planes * g->height * g->width, A = (size_t)g->action_count;
    float *x = calloc(N * P, sizeof *x), *pi = calloc(N * A, sizeof *pi),
          *z = calloc(N, sizeof *z), f[347];
    rng_t r;
    rng_seed(&r, 11);
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    for (int i = 0; i < N; i++) {
        int n;
        if (g->result(&s).over || (n = g->legal_actions(&s, legal)) == 0) {
            g->init(&s);
            n = g->legal_actions(&s, legal);
        }
        float *xi = x + (size_t)i * P;
        g->encode_planes(&s, xi);
        /* The features: the pieces on the board, and the filled planes' values. */
        gbdt_features(g, xi, f);
        float pieces = 0, grid = 0;
        for (int k = 0; k < 4 * 85; k++)
            pieces += f[k];
        for (size_t c = 0; c < 4 * P / 12; c++)
            grid += xi[c];
        cr_assert_float_eq(pieces, grid, 1e-6, "state %d: the points hold every piece", i);
        for (int k = 5; k < 12; k++)
            cr_assert_float_eq(f[4 * 85 + k - 5], xi[(size_t)k * P / 12 + 60], 1e-6,
                               "state %d plane %d (cell 60 is f6)", i, k);
        z[i] = (float)(int)rng_below(&r, 3) - 1.0f;
        pi[(size_t)i * A + (size_t)g->canonical_action(&s, legal[0])] = 1.0f;
        g->apply(&s, legal[rng_below(&r, (uint32_t)n)]);
    }
    gbdt *m = gbdt_new(g);
    gbdt_train_config tc;
    gbdt_train_config_default(&tc);
    tc.rounds = 6;
    tc.max_depth = 3;
    gbdt_train_stats st;
    char err[256] = "";
    cr_assert_eq(gbdt_train(m, g, x, pi, z, N, &tc, &st, err, sizeof err), 0, "%s", err);
    free(x);
    free(pi);
    free(z);
    harness h;
    harness_init(&h, "gbdt-yinsh");
    char trees[256], cut[256], kh[256], spec[300];
    snprintf(trees, sizeof trees, "%s/yinsh.kzg", h.dir);
    snprintf(cut, sizeof cut, "%s/cut.kzg", h.dir);
    snprintf(kh, sizeof kh, "%s/kh.kzg", h.dir);
    cr_assert_eq(gbdt_save(m, trees), 0);
    gbdt_destroy(&m);
    proc_output o;
    const char *info[] = {"model", "info", trees, NULL};
    cr_assert_eq(harness_run_bin("kz", info, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "game:          yinsh") && strstr(o.out, "value trees:   6") &&
                  strstr(o.out, "347 features"),
              "%s", o.out);
    proc_output_free(&o);
    snprintf(spec, sizeof spec, "mcts:%s:16", trees);
    const char *match[] = {"match", "--game=yinsh", spec, "random", "--games=2", NULL};
    cr_assert_eq(harness_run_bin("kz", match, NULL, &o), 0, "%s", o.err);
    cr_assert(strstr(o.out, "W/D/L: "), "%s", o.out);
    proc_output_free(&o);
    const char *init_kh[] = {"model", "init", "--kind=gbdt", kh, NULL};
    cr_assert_eq(harness_run_bin("kz", init_kh, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    char cmd[600], out[64];
    snprintf(cmd, sizeof cmd, "head -c 100 %s > %s", trees, cut);
    cr_assert_eq(harness_sh(cmd, out, sizeof out), 0);
    const char *bad[2] = {cut, kh};
    const char *why[2] = {"truncated", "the model is for game 'khreibaga', not 'yinsh'"};
    for (int k = 0; k < 2; k++) {
        snprintf(spec, sizeof spec, "mcts:%s:16", bad[k]);
        const char *bmatch[] = {"match", "--game=yinsh", spec, "random", "--games=2", NULL};
        cr_assert_eq(harness_run_bin("kz", bmatch, NULL, &o), 2, "%s", o.err);
        cr_assert(strstr(o.err, why[k]) && strchr(o.err, '\n') == o.err + strlen(o.err) - 1,
                  "%s", o.err);
        proc_output_free(&o);
        char a_init[300], a_ck[300];
        snprintf(a_init, sizeof a_init, "--init_model=%s", bad[k]);
        snprintf(a_ck, sizeof a_ck, "--checkpoint_dir=%s/trainer%d", h.dir, k);
        const char *targs[] = {"--game=yinsh", "--endpoint=tcp://127.0.0.1:1", a_ck, a_init,
                               NULL};
        cr_assert_eq(harness_run_bin("kz-trainer", targs, NULL, &o), 2, "%s", o.err);
        cr_assert(strstr(o.err, why[k]) && strchr(o.err, '\n') == o.err + strlen(o.err) - 1,
                  "%s", o.err);
        proc_output_free(&o);
    }
    harness_fini(&h);
}
