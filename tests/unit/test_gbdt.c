/* Tests of nn/gbdt and nn/gbdt_train, read as their usage example: train
 * both forests with XGBoost on the toy game's positions, get the same
 * answers from the interval walker as from row-by-row walks, save and load
 * the file, evaluate it through the evaluator interface, and refuse bad
 * files (truncated, flipped, another game's) with one line each. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/game.h"
#include "nn/evaluator.h"
#include "nn/gbdt.h"
#include "nn/gbdt_train.h"
#include "tests/harness/harness.h"
#include "tests/harness/toy_game.h"

/* N positions of random toy games: planes, a policy target spread over the
 * legal actions (more on the first), z from a made-up rule the value trees
 * can learn (the mover's men count). */
static void s_samples(const game_def *g, int N, float **x, float **pi, float **z)
{
    size_t P = (size_t)g->planes * g->height * g->width, A = (size_t)g->action_count;
    *x = calloc((size_t)N * P, sizeof **x);
    *pi = calloc((size_t)N * A, sizeof **pi);
    *z = calloc((size_t)N, sizeof **z);
    rng_t r;
    rng_seed(&r, 5);
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    for (int i = 0; i < N; i++) {
        int n;
        if (g->result(&s).over || (n = g->legal_actions(&s, legal)) == 0) {
            g->init(&s);
            n = g->legal_actions(&s, legal);
        }
        float *xi = *x + (size_t)i * P;
        g->encode_planes(&s, xi);
        float own = 0, other = 0;
        for (int c = 0; c < TOY_CELLS; c++) {
            own += xi[c];
            other += xi[TOY_CELLS + c];
        }
        (*z)[i] = (own - other) / 2.0f;
        for (int k = 0; k < n; k++) {
            int ca = g->canonical_action(&s, legal[k]);
            (*pi)[(size_t)i * A + (size_t)ca] = k == 0 ? 0.7f : 0.3f / (float)(n > 1 ? n - 1 : 1);
        }
        g->apply(&s, legal[rng_below(&r, (uint32_t)n)]);
    }
}

static gbdt *s_trained(const game_def *g, int N)
{
    float *x, *pi, *z;
    s_samples(g, N, &x, &pi, &z);
    gbdt *m = gbdt_new(g);
    gbdt_train_config tc;
    gbdt_train_config_default(&tc);
    tc.rounds = 12;
    tc.max_depth = 4;
    gbdt_train_stats st;
    char err[256] = "";
    cr_assert_eq(gbdt_train(m, g, x, pi, z, N, &tc, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.value_rows, N);
    cr_assert_gt(st.policy_rows, N, "several rows per position");
    cr_assert_lt(st.value_mse, 0.05, "the value rule is learnt (mse %g)", st.value_mse);
    cr_assert_eq(gbdt_tree_count(m, GBDT_VALUE), 12);
    cr_assert_eq(gbdt_tree_count(m, GBDT_POLICY), 12);
    cr_assert_eq(gbdt_get_meta(m)->step, (uint64_t)N);
    free(x);
    free(pi);
    free(z);
    return m;
}

Test(gbdt, trains_and_the_interval_walk_equals_the_row_walks)
{
    const game_def *g = &toy_game;
    gbdt *m = s_trained(g, 400);
    float *x, *pi, *z;
    enum { B = 20 };
    s_samples(g, B, &x, &pi, &z);
    gbdt_eval *e = gbdt_eval_new(m, g, B);
    cr_assert_not_null(e);
    float logits[B * TOY_ACTIONS], values[B], naive[TOY_ACTIONS];
    gbdt_eval_run(e, x, B, logits, values);
    size_t P = (size_t)g->planes * g->height * g->width;
    for (int b = 0; b < B; b++) {
        gbdt_eval_policy_naive(e, x + b * P, naive);
        for (int a = 0; a < TOY_ACTIONS; a++)
            cr_assert_float_eq(logits[b * TOY_ACTIONS + a], naive[a], 1e-4, "pos %d action %d",
                               b, a);
        cr_assert(values[b] >= -1 && values[b] <= 1);
        cr_assert_float_eq(values[b], z[b], 0.3, "pos %d: value %g, target %g", b, values[b],
                           z[b]);
    }
    /* The policy prefers the action with the large share: ranks it first
     * among the legal ones in most positions. */
    int first = 0;
    for (int b = 0; b < B; b++) {
        int best = -1;
        for (int a = 0; a < TOY_ACTIONS; a++)
            if (pi[b * TOY_ACTIONS + a] > 0 &&
                (best < 0 || logits[b * TOY_ACTIONS + a] > logits[b * TOY_ACTIONS + best]))
                best = a;
        first += best >= 0 && pi[b * TOY_ACTIONS + best] > 0.5f;
    }
    cr_assert_geq(first, B * 3 / 4, "the visited-most action leads in %d of %d", first, B);
    gbdt_eval_destroy(&e);
    gbdt_eval_destroy(&e); /* NULL-safe */
    gbdt_destroy(&m);
    free(x);
    free(pi);
    free(z);
}

Test(gbdt, file_round_trip_and_the_evaluator_seam)
{
    const game_def *g = &toy_game;
    gbdt *m = s_trained(g, 200);
    model_meta *meta = gbdt_edit_meta(m);
    meta->version = 3;
    meta->parent = 2;
    meta->created_ms = -1700000000123LL; /* any int64, before the epoch too */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(gbdt_to_bytes(m, &buf, &len), 0);
    cr_assert(gbdt_is_file(buf, len));
    char err[300] = "";
    gbdt *back = NULL;
    cr_assert_eq(gbdt_from_bytes(buf, len, g, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gbdt_checksum(back), gbdt_checksum(m));
    const model_meta *got = gbdt_get_meta(back);
    cr_assert_eq(got->version, 3);
    cr_assert_eq(got->parent, 2);
    cr_assert_eq(got->step, 200, "the samples it was trained on");
    cr_assert_eq(got->created_ms, -1700000000123LL);
    /* Stamped: another version, the same trees. */
    uint8_t *st;
    size_t stlen;
    cr_assert_eq(gbdt_stamp(buf, len, 9, 3, &st, &stlen, err, sizeof err), 0, "%s", err);
    gbdt *s9 = NULL;
    cr_assert_eq(gbdt_from_bytes(st, stlen, g, &s9, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gbdt_get_meta(s9)->version, 9);
    cr_assert_eq(gbdt_get_meta(s9)->parent, 3);
    cr_assert_eq(gbdt_checksum(s9), gbdt_checksum(m));
    /* Through the one function from bytes to an evaluator. */
    evaluator_net *en = NULL;
    cr_assert_eq(evaluator_net_from_bytes(buf, len, g, 4, EVALUATOR_PRECISION_DEFAULT, &en, err,
                                          sizeof err),
                 0, "%s", err);
    cr_assert_str_eq(evaluator_net_kind(en), "gbdt");
    cr_assert_str_eq(evaluator_net_path(en), "gbdt-walker");
    cr_assert_eq(evaluator_net_version(en), 3);
    cr_assert_eq(evaluator_net_checksum(en), gbdt_checksum(m));
    evaluator ev = evaluator_net_get(en);
    float *x, *pi, *z;
    s_samples(g, 4, &x, &pi, &z);
    float logits[4 * TOY_ACTIONS], values[4], want_l[4 * TOY_ACTIONS], want_v[4];
    cr_assert_eq(ev.run(ev.ctx, x, 4, logits, values), 0);
    cr_assert_eq(ev.run(ev.ctx, x, 5, logits, values), KZ_EINVAL, "over max_batch");
    gbdt_eval *e = gbdt_eval_new(m, g, 4);
    gbdt_eval_run(e, x, 4, want_l, want_v);
    cr_assert_arr_eq(logits, want_l, sizeof logits);
    cr_assert_arr_eq(values, want_v, sizeof values);
    /* From a file too. */
    char *dir = harness_tmpdir("gbdt"), path[512];
    snprintf(path, sizeof path, "%s/m.kzg", dir);
    cr_assert_eq(gbdt_save(m, path), 0);
    evaluator_net *ef = NULL;
    cr_assert_eq(evaluator_net_load(path, g, 2, &ef, err, sizeof err), 0, "%s", err);
    cr_assert_eq(evaluator_net_checksum(ef), gbdt_checksum(m));
    evaluator_net_destroy(&ef);
    evaluator_net_destroy(&en);
    harness_rm_rf(dir);
    free(dir);
    gbdt_eval_destroy(&e);
    gbdt_destroy(&s9);
    gbdt_destroy(&back);
    gbdt_destroy(&m);
    free(st);
    free(buf);
    free(x);
    free(pi);
    free(z);
}

/* A GBDT file written by the code before the metadata had one owner
 * (modelmeta.h): gbdt_to_bytes of gbdt_new(&toy_game) with a value forest
 * "0:[f3<0.5] yes=1,no=2 / 1:leaf=0.25 / 2:leaf=-0.5" (base 0.125), a policy
 * forest "0:[f0<4.5] yes=1,no=2 / 1:leaf=1.5 / 2:leaf=-1" (base -0.25),
 * version 3, parent 2, step 77, created_ms 1700000000123. */
static const uint8_t s_old_file[] = {
    0x4b, 0x5a, 0x47, 0x42, 0x44, 0x54, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xd4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x6f, 0x9e, 0x85, 0x53, 0x10, 0x01, 0xe3, 0x8b, 0x74, 0x6f, 0x79, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x51, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x4d, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x7b, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00,
    0xfa, 0xdc, 0x99, 0xdc, 0x7f, 0xd6, 0x06, 0xad, 0x00, 0x00, 0x00, 0x3e,
    0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x01, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x80, 0x3e,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0x00, 0x00, 0x00, 0xbf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x80, 0xbe, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x90, 0x40,
    0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x80, 0xbf, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00
};

Test(gbdt, a_file_written_before_loads_the_same_and_is_written_the_same)
{
    const game_def *g = &toy_game;
    char err[300] = "";
    gbdt *old = NULL;
    cr_assert_eq(gbdt_from_bytes(s_old_file, sizeof s_old_file, g, &old, err, sizeof err), 0,
                 "%s", err);
    const model_meta *meta = gbdt_get_meta(old);
    cr_assert_eq(meta->version, 3);
    cr_assert_eq(meta->parent, 2);
    cr_assert_eq(meta->step, 77);
    cr_assert_eq(meta->created_ms, 1700000000123LL);
    cr_assert_str_eq(gbdt_game(old), "toy");
    uint8_t *buf;
    size_t len;
    cr_assert_eq(gbdt_to_bytes(old, &buf, &len), 0);
    cr_assert(len == sizeof s_old_file && memcmp(buf, s_old_file, len) == 0, "the bytes changed");
    free(buf);
    /* And the same model made now is those bytes. */
    gbdt *m = gbdt_new(g);
    const char *v[] = {"0:[f3<0.5] yes=1,no=2\n\t1:leaf=0.25\n\t2:leaf=-0.5\n"};
    const char *p[] = {"0:[f0<4.5] yes=1,no=2\n\t1:leaf=1.5\n\t2:leaf=-1\n"};
    cr_assert_eq(gbdt_set_forest_from_dump(m, GBDT_VALUE, v, 1, 0.125f, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(gbdt_set_forest_from_dump(m, GBDT_POLICY, p, 1, -0.25f, err, sizeof err), 0,
                 "%s", err);
    *gbdt_edit_meta(m) =
        (model_meta){.version = 3, .parent = 2, .step = 77, .created_ms = 1700000000123LL};
    cr_assert_eq(gbdt_to_bytes(m, &buf, &len), 0);
    cr_assert(len == sizeof s_old_file && memcmp(buf, s_old_file, len) == 0, "the bytes changed");
    cr_assert_eq(gbdt_checksum(m), gbdt_checksum(old));
    free(buf);
    gbdt_destroy(&m);
    gbdt_destroy(&old);
}

Test(gbdt, bad_files_get_one_line_errors)
{
    const game_def *g = &toy_game;
    gbdt *m = s_trained(g, 100);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(gbdt_to_bytes(m, &buf, &len), 0);
    char err[300];
    gbdt *out = NULL;
    evaluator_net *en = NULL;
    /* Truncated anywhere: an error, never a model. */
    for (size_t n = 0; n < len; n += (n < 64 ? 1 : 97)) {
        err[0] = 0;
        cr_assert_neq(gbdt_from_bytes(buf, n, g, &out, err, sizeof err), 0, "length %zu", n);
        cr_assert_null(out);
        cr_assert(err[0] && !strchr(err, '\n'), "one line: '%s'", err);
        cr_assert_neq(evaluator_net_from_bytes(buf, n, g, 2, EVALUATOR_PRECISION_DEFAULT, &en,
                                               err, sizeof err),
                      0);
        cr_assert_null(en);
    }
    cr_assert_eq(gbdt_from_bytes(buf, len - 1, g, &out, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "truncated"), "%s", err);
    /* Another game's. */
    cr_assert_eq(evaluator_net_from_bytes(buf, len, game_default(), 2,
                                          EVALUATOR_PRECISION_DEFAULT, &en, err, sizeof err),
                 KZ_EMISMATCH);
    cr_assert(strstr(err, "the model is for game 'toy'"), "%s", err);
    /* A flipped byte: the payload checksum. */
    buf[len / 2] ^= 0x40;
    cr_assert_eq(gbdt_from_bytes(buf, len, g, &out, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "checksum"), "%s", err);
    buf[len / 2] ^= 0x40;
    /* A child before its parent, with the checksums made right: refused. */
    gbdt *ok = NULL;
    cr_assert_eq(gbdt_from_bytes(buf, len, g, &ok, err, sizeof err), 0, "%s", err);
    gbdt_destroy(&ok);
    free(buf);
    gbdt_destroy(&m);
}

Test(gbdt, bad_dumps_are_refused)
{
    gbdt *m = gbdt_new(&toy_game);
    char err[200];
    const char *cycle[] = {"0:[f1<0.5] yes=0,no=1,missing=1\n\t1:leaf=0.1\n"};
    cr_assert_eq(gbdt_set_forest_from_dump(m, GBDT_VALUE, cycle, 1, 0, err, sizeof err),
                 KZ_EINVAL);
    const char *missing[] = {"0:[f1<0.5] yes=1,no=2,missing=1\n\t1:leaf=0.1\n"};
    cr_assert_eq(gbdt_set_forest_from_dump(m, GBDT_VALUE, missing, 1, 0, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(strstr(err, "not there"), "%s", err);
    const char *feature[] = {"0:[f999<0.5] yes=1,no=2,missing=1\n1:leaf=1\n2:leaf=2\n"};
    cr_assert_eq(gbdt_set_forest_from_dump(m, GBDT_VALUE, feature, 1, 0, err, sizeof err),
                 KZ_EINVAL);
    const char *good[] = {"0:[f0<3.5] yes=1,no=2,missing=1\n\t1:leaf=1\n\t2:leaf=-1\n"};
    cr_assert_eq(gbdt_set_forest_from_dump(m, GBDT_POLICY, good, 1, 0.5f, err, sizeof err), 0,
                 "%s", err);
    float row[40] = {3};
    cr_assert_float_eq(gbdt_predict_row(m, GBDT_POLICY, row), 1.5f, 1e-6);
    row[0] = 4;
    cr_assert_float_eq(gbdt_predict_row(m, GBDT_POLICY, row), -0.5f, 1e-6);
    gbdt_destroy(&m);
}

/* A game's feature hook: here the toy's planes summed per plane (4
 * features) in place of its 36 plane values. */
static void s_plane_sums(const float *planes, float *out)
{
    for (int p = 0; p < 4; p++) {
        out[p] = 0;
        for (int c = 0; c < TOY_CELLS; c++)
            out[p] += planes[p * TOY_CELLS + c];
    }
}

Test(gbdt, a_game_s_feature_hook_is_what_the_trees_see)
{
    game_def g = toy_game; /* a copy with the hook; not registered */
    g.n_features = 4;
    g.features = s_plane_sums;
    cr_assert_eq(gbdt_feature_count(&g), 4);
    cr_assert_eq(gbdt_feature_count(&toy_game), 36, "no hook: the planes");
    cr_assert_eq(game_check(&g, NULL, 0), 0);
    g.features = NULL;
    cr_assert_neq(game_check(&g, NULL, 0), 0, "n_features without a hook");
    g.features = s_plane_sums;
    gbdt *m = s_trained(&g, 200);
    char err[200];
    uint8_t *buf;
    size_t len;
    cr_assert_eq(gbdt_to_bytes(m, &buf, &len), 0);
    gbdt *back = NULL;
    cr_assert_eq(gbdt_from_bytes(buf, len, &toy_game, &back, err, sizeof err), KZ_EMISMATCH,
                 "4 features are not the hookless toy's 36");
    cr_assert(strstr(err, "4 features"), "%s", err);
    free(buf);
    gbdt_destroy(&m);
}
