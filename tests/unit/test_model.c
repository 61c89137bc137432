/* Tests of nn/model: architectures, tensors, the folded BLAS evaluator
 * against the naive unfolded reference on several shapes (the spec's, 10
 * blocks, 4x64 with a 32-wide value head, an 8x8 board with 4096 actions),
 * and the helpers (masked softmax, mirror augmentation). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/kernel.h"
#include "nn/model.h"
#include "common/util.h"

/* Gives every batch norm non-trivial parameters and running statistics. */
static void s_randomize_bn(model *m, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        const char *dot = strrchr(ti.name, '.');
        bool bn = strstr(ti.name, ".bn") != NULL;
        if (!bn)
            continue;
        float *v = malloc(ti.size * sizeof *v);
        for (size_t k = 0; k < ti.size; k++) {
            if (!strcmp(dot, ".weight"))
                v[k] = (float)(0.5 + rng_uniform(&r));
            else if (!strcmp(dot, ".bias"))
                v[k] = (float)(0.2 * rng_normal(&r));
            else if (!strcmp(dot, ".running_mean"))
                v[k] = (float)(0.3 * rng_normal(&r));
            else
                v[k] = (float)(0.5 + 1.5 * rng_uniform(&r));
        }
        model_tensor_write(m, i, v);
        free(v);
    }
}

/* Random 0/1 planes, like a game's encoding. */
static float *s_planes(const model_arch *a, int B, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    size_t n = (size_t)B * a->in_planes * a->height * a->width;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_below(&r, 3) == 0 ? 1.0f : 0.0f;
    return x;
}

/* s_check_eval on one config. */
static void s_check_eval_config(const model *m, const float *x, int B, int mb,
                                const model_eval_config *c)
{
    const model_arch *a = model_get_arch(m);
    int A = a->actions;
    float *l1 = malloc((size_t)B * A * sizeof *l1), *l2 = malloc((size_t)B * A * sizeof *l2);
    float *v1 = malloc((size_t)B * sizeof *v1), *v2 = malloc((size_t)B * sizeof *v2);
    model_eval *e = model_eval_new_config(m, mb, c);
    cr_assert_not_null(e);
    cr_assert_eq(model_eval_max_batch(e), mb);
    model_eval_run(e, x, B, l1, v1);
    model_forward_reference(m, x, B, l2, v2);
    double spread = 0;
    for (int i = 0; i < B * A; i++) {
        cr_assert(isfinite(l1[i]));
        cr_assert(fabs(l1[i] - l2[i]) <= 2e-4 + 2e-4 * fabs(l2[i]), "logit %d: %.7g vs %.7g", i,
                  (double)l1[i], (double)l2[i]);
        spread += fabs(l2[i] - l2[0]);
    }
    cr_assert(spread > 1e-3, "the logits should not all be equal");
    for (int b = 0; b < B; b++) {
        cr_assert(v1[b] >= -1 && v1[b] <= 1);
        cr_assert(fabs(v1[b] - v2[b]) <= 2e-4, "value %d: %.7g vs %.7g", b, (double)v1[b],
                  (double)v2[b]);
    }
    model_eval_destroy(&e);
    cr_assert_null(e);
    free(l1), free(l2), free(v1), free(v2);
}

/* Evaluates B positions with a fresh evaluator (max_batch mb) on the
 * OpenBLAS path and on the kernels (when the CPU has them: otherwise the
 * same path again), and with the reference; asserts they agree. */
static void s_check_eval(const model *m, const float *x, int B, int mb)
{
    for (int k = 0; k < 2; k++) {
        model_eval_config c = {.precision = MODEL_FP32,
                               .kernels = k ? MODEL_KERNELS_AUTO : MODEL_KERNELS_BLAS};
        s_check_eval_config(m, x, B, mb, &c);
    }
}

Test(model, default_arch_is_the_specification)
{
    model_arch a;
    const game_def *g = game_default();
    model_arch_default(&a, g);
    cr_assert_str_eq(a.game, g->name);
    cr_assert_eq(a.in_planes, g->planes);
    cr_assert_eq(a.height * a.width, 25);
    cr_assert_eq(a.actions, g->action_count);
    cr_assert_eq(a.blocks, 6);
    cr_assert_eq(a.filters, 64);
    cr_assert_eq(a.policy_filters, 2);
    cr_assert_eq(a.value_filters, 1);
    cr_assert_eq(a.value_hidden, 64);
    char err[200];
    cr_assert_eq(model_arch_check(&a, err, sizeof err), 0);
    cr_assert_eq(model_arch_check_game(&a, g, err, sizeof err), 0);
    /* FLOPs: 2 x multiply-adds of the convs and linears, counted by hand. */
    double convs = 25.0 * (9 * 7 * 64 + 12 * 9 * 64 * 64 + 64 * 3);
    double fcs = 50.0 * 625 + 25 * 64 + 64;
    cr_assert_float_eq(model_arch_forward_flops(&a), 2 * (convs + fcs), 1e-3);
    cr_assert(fabs(model_arch_forward_flops(&a) / 1e6 - 22.4) < 0.05);
    /* Parameters counted from the layer shapes. */
    size_t p = 9 * 7 * 64 + 128 + 12 * (9 * 64 * 64 + 128) + 64 * 2 + 4 + 50 * 625 + 625 +
               64 + 2 + 25 * 64 + 64 + 64 + 1;
    cr_assert_eq(model_arch_param_count(&a), p);
    model *m = model_new(&a, 1);
    size_t total = 0;
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        if (ti.kind != MODEL_TENSOR_STAT)
            total += ti.size;
    }
    cr_assert_eq(total, p);
    model_destroy(&m);
    cr_assert_null(m);
    model_destroy(&m); /* NULL-safe */
}

Test(model, arch_check_rejects_bad_shapes)
{
    char err[200];
    model_arch a = harness_arch("g", 7, 5, 5, 625, 6, 64, 0);
    model_arch b = a;
    b.filters = 0;
    cr_assert_eq(model_arch_check(&b, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "filters"), "%s", err);
    b = a;
    b.blocks = -1;
    cr_assert_eq(model_arch_check(&b, err, sizeof err), KZ_EINVAL);
    b = a;
    b.game[0] = 0;
    cr_assert_eq(model_arch_check(&b, err, sizeof err), KZ_EINVAL);
    b = a;
    b.blocks = 128;
    b.filters = 1024; /* 2.4 G floats */
    cr_assert_eq(model_arch_check(&b, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "limit"), "%s", err);
    cr_assert_null(model_new(&b, 1));
    /* Another game's shape does not fit Khreibaga. */
    b = a;
    snprintf(b.game, sizeof b.game, "%s", game_default()->name);
    b.actions = 4096;
    cr_assert_eq(model_arch_check_game(&b, game_default(), err, sizeof err), KZ_EMISMATCH);
    cr_assert(strstr(err, "architecture mismatch"), "%s", err);
    cr_assert_eq(model_arch_check_game(&a, game_default(), err, sizeof err), KZ_EMISMATCH);
    cr_assert(strstr(err, "for game 'g'"), "%s", err);
}

Test(model, tensor_names_shapes_and_canonical_layout)
{
    model_arch a = harness_arch("g", 3, 4, 5, 11, 2, 6, 0);
    a.value_hidden = 7;
    model *m = model_new(&a, 5);
    cr_assert_eq(model_tensor_count(m), 5 + 2 * 10 + 5 + 2 + 5 + 4);
    model_tensor_info ti;
    int i = model_tensor_find(m, "blocks.1.conv2.weight");
    cr_assert(i >= 0);
    model_tensor_info_get(m, i, &ti);
    cr_assert_eq(ti.ndim, 4);
    cr_assert(ti.shape[0] == 6 && ti.shape[1] == 6 && ti.shape[2] == 3 && ti.shape[3] == 3);
    cr_assert_eq(ti.kind, MODEL_TENSOR_WEIGHT);
    i = model_tensor_find(m, "policy.fc.weight");
    model_tensor_info_get(m, i, &ti);
    cr_assert(ti.ndim == 2 && ti.shape[0] == 11 && ti.shape[1] == 2 * 20);
    i = model_tensor_find(m, "value.fc1.bias");
    model_tensor_info_get(m, i, &ti);
    cr_assert(ti.ndim == 1 && ti.shape[0] == 7 && ti.kind == MODEL_TENSOR_PARAM);
    i = model_tensor_find(m, "stem.bn.running_var");
    model_tensor_info_get(m, i, &ti);
    cr_assert_eq(ti.kind, MODEL_TENSOR_STAT);
    cr_assert_eq(model_tensor_find(m, "no.such"), -1);
    /* Write/read round trip through the internal layout, every tensor. */
    rng_t r;
    rng_seed(&r, 9);
    for (i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info_get(m, i, &ti);
        float *v = malloc(ti.size * sizeof *v), *w = malloc(ti.size * sizeof *w);
        for (size_t k = 0; k < ti.size; k++)
            v[k] = (float)rng_normal(&r);
        model_tensor_write(m, i, v);
        model_tensor_read(m, i, w);
        cr_assert(memcmp(v, w, ti.size * sizeof *v) == 0, "%s", ti.name);
        free(v), free(w);
    }
    model_destroy(&m);
}

Test(model, canonical_weights_mean_what_pytorch_means)
{
    /* A 0-block net with one stem filter that copies input plane 1 shifted:
     * stem.conv.weight[0][1][0][2] = 1 reads in(y-1, x+1). Identity batch
     * norm (eps 0 is not allowed, so undo it in the check), a policy conv
     * weight of 1, and a policy linear that picks flattened index
     * c*H*W + y*W + x: the logits expose the stem's output. */
    model_arch a = harness_arch("g", 2, 3, 4, 12, 0, 1, 0);
    a.policy_filters = 1;
    model *m = model_new_blank(&a);
    cr_assert_not_null(m);
    float w[2 * 9] = {0};
    w[1 * 9 + 0 * 3 + 2] = 1.0f;
    model_tensor_write(m, model_tensor_find(m, "stem.conv.weight"), w);
    float one = 1.0f;
    const char *ones[] = {"stem.bn.weight",  "stem.bn.running_var",   "policy.conv.weight",
                          "policy.bn.weight", "policy.bn.running_var", "value.bn.running_var"};
    for (size_t k = 0; k < 6; k++)
        model_tensor_write(m, model_tensor_find(m, ones[k]), &one);
    float fc[12 * 12] = {0}; /* (A, Pf*H*W): logit j = feature j */
    for (int j = 0; j < 12; j++)
        fc[j * 12 + j] = 1.0f;
    model_tensor_write(m, model_tensor_find(m, "policy.fc.weight"), fc);
    float x[2 * 12] = {0}, logits[12], v;
    for (int p = 0; p < 12; p++)
        x[12 + p] = (float)(p + 1); /* plane 1 */
    model_eval *e = model_eval_new(m, 1);
    model_eval_run(e, x, 1, logits, &v);
    double s = 1.0 / sqrt(1.0 + model_bn_eps(m)); /* each BN scales by this */
    for (int y = 0; y < 3; y++)
        for (int xx = 0; xx < 4; xx++) {
            int sy = y - 1, sx = xx + 1;
            double want = sy >= 0 && sx < 4 ? x[12 + sy * 4 + sx] * s * s : 0.0;
            cr_assert_float_eq(logits[y * 4 + xx], want, 1e-4, "(%d,%d)", y, xx);
        }
    model_eval_destroy(&e);
    model_destroy(&m);
}

Test(model, eval_equals_naive_reference_identity_bn)
{
    /* Fresh model (identity batch norm): tests the BLAS + fused path. */
    model_arch a;
    model_arch_default(&a, game_default());
    model *m = model_new(&a, 11);
    float *x = s_planes(&a, 9, 1);
    s_check_eval(m, x, 1, 1);
    s_check_eval(m, x, 9, 9);  /* more than one chunk */
    s_check_eval(m, x, 3, 64); /* smaller batch than the evaluator's */
    free(x);
    model_destroy(&m);
}

Test(model, eval_folded_equals_unfolded_reference)
{
    model_arch a;
    model_arch_default(&a, game_default());
    model *m = model_new(&a, 12);
    s_randomize_bn(m, 3);
    float *x = s_planes(&a, 5, 2);
    s_check_eval(m, x, 5, 5);
    free(x);
    model_destroy(&m);
}

Test(model, eval_runs_other_shapes)
{
    struct {
        model_arch a;
        int B;
    } cases[8];
    cases[0].a = harness_arch("khreibaga10", 7, 5, 5, 625, 10, 64, 0); /* seed 001 */
    cases[0].B = 2;
    cases[1].a = harness_arch("draughts4", 7, 5, 5, 625, 4, 64, 0); /* seed 003: 4x64, Vh 32 */
    cases[1].a.value_hidden = 32;
    cases[1].B = 3;
    cases[2].a = harness_arch("draughts", 5, 8, 8, 4096, 4, 64, 0); /* 8x8, 64*64 actions */
    cases[2].a.value_hidden = 32;
    cases[2].B = 2;
    cases[3].a = harness_arch("odd", 3, 3, 4, 17, 1, 8, 0); /* odd shapes everywhere */
    cases[3].a.policy_filters = 3;
    cases[3].a.value_filters = 2;
    cases[3].a.value_hidden = 5;
    cases[3].B = 4;
    cases[4].a = harness_arch("noblocks", 2, 2, 2, 3, 0, 4, 0); /* no tower */
    cases[4].B = 3;
    cases[5].a = harness_arch("chunks", 7, 5, 5, 625, 2, 16, 0); /* many chunks, a partial one */
    cases[5].B = 70;
    cases[6].a = harness_arch("wide", 7, 5, 5, 625, 1, 128, 0); /* the kernels' chunks: 3 of them */
    cases[6].B = 45;
    /* An odd F: bf16 falls back to fp32. */
    cases[7].a = harness_arch("oddf", 7, 5, 5, 625, 1, 33, 0);
    cases[7].B = 2;
    for (int k = 0; k < 8; k++) {
        model *m = model_new(&cases[k].a, 20 + k);
        cr_assert_not_null(m, "case %d", k);
        s_randomize_bn(m, 4 + k);
        float *x = s_planes(&cases[k].a, cases[k].B, 30 + k);
        s_check_eval(m, x, cases[k].B, cases[k].B);
        free(x);
        model_destroy(&m);
    }
}

Test(model, evaluator_keeps_its_weights_and_is_deterministic)
{
    model_arch a = harness_arch("g", 7, 5, 5, 625, 2, 16, 0);
    model *m = model_new(&a, 13);
    float *x = s_planes(&a, 4, 5);
    float l1[4 * 625], l2[4 * 625], l3[4 * 625], v1[4], v2[4], v3[4];
    model_eval *e = model_eval_new(m, 4);
    model_eval_run(e, x, 4, l1, v1);
    model_destroy(&m); /* the evaluator owns copies */
    model_eval_run(e, x, 4, l2, v2);
    cr_assert(memcmp(l1, l2, sizeof l1) == 0 && memcmp(v1, v2, sizeof v1) == 0);
    /* Batch composition does not change a position's result much (chunking
     * and GEMM blocking may differ): position 2 alone. */
    model_eval_run(e, x + 2 * 7 * 25, 1, l3, v3);
    for (int i = 0; i < 625; i++)
        cr_assert_float_eq(l3[i], l1[2 * 625 + i], 1e-4);
    cr_assert_float_eq(v3[0], v1[2], 1e-5);
    model_eval_run(e, x, 0, l3, v3); /* B == 0 is a no-op */
    cr_assert_null(model_eval_new(m = model_new(&a, 1), 0));
    model_eval_destroy(&e);
    model_destroy(&m);
    free(x);
}

Test(model, clone_and_checksum)
{
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = model_new(&a, 21), *n = model_new(&a, 21), *o = model_new(&a, 22);
    cr_assert_eq(model_checksum(m), model_checksum(n), "same seed, same weights");
    cr_assert_neq(model_checksum(m), model_checksum(o));
    *model_edit_meta(m) = (model_meta){.version = 7, .parent = 6, .step = 1234, .created_ms = 5};
    model *c = model_clone(m);
    cr_assert_eq(model_get_meta(c)->version, 7);
    cr_assert_eq(model_get_meta(c)->parent, 6);
    cr_assert_eq(model_get_meta(c)->step, 1234);
    cr_assert_eq(model_get_meta(c)->created_ms, 5);
    cr_assert_eq(model_checksum(c), model_checksum(m));
    cr_assert(model_arch_equal(model_get_arch(c), &a));
    /* Changing one value changes the checksum. */
    int i = model_tensor_find(c, "value.fc2.bias");
    float b = 0.5f;
    model_tensor_write(c, i, &b);
    cr_assert_neq(model_checksum(c), model_checksum(m));
    model_destroy(&m), model_destroy(&n), model_destroy(&o), model_destroy(&c);
}

Test(model, blend_is_a_moving_average_of_every_tensor)
{
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = model_new(&a, 21), *n = model_new(&a, 22);
    s_randomize_bn(n, 5); /* running statistics differ too */
    model *avg = model_clone(m);
    cr_assert_eq(model_blend(avg, n, 0.25f), 0);
    /* Every tensor, statistics included: 0.75 m + 0.25 n. */
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        float *x = malloc(ti.size * sizeof *x), *y = malloc(ti.size * sizeof *y),
              *r = malloc(ti.size * sizeof *r);
        model_tensor_read(m, i, x);
        model_tensor_read(n, i, y);
        model_tensor_read(avg, i, r);
        for (size_t j = 0; j < ti.size; j++)
            cr_assert_float_eq(r[j], 0.75f * x[j] + 0.25f * y[j], 1e-6, "%s[%zu]", ti.name, j);
        free(x), free(y), free(r);
    }
    cr_assert_eq(model_blend(avg, n, 1.0f), 0);
    cr_assert_eq(model_checksum(avg), model_checksum(n), "w = 1 copies the weights");
    cr_assert_eq(model_blend(avg, m, 0.0f), 0);
    cr_assert_eq(model_checksum(avg), model_checksum(n), "w = 0 keeps them");
    cr_assert_eq(model_blend(avg, m, 1.5f), KZ_EINVAL);
    model_arch b = harness_arch("g", 3, 3, 3, 9, 2, 4, 0);
    model *o = model_new(&b, 1);
    cr_assert_eq(model_blend(avg, o, 0.5f), KZ_EMISMATCH);
    model_destroy(&m), model_destroy(&n), model_destroy(&avg), model_destroy(&o);
}

Test(model, softmax_masked)
{
    float logits[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    uint16_t legal[3] = {2, 5, 9};
    float p[3];
    model_softmax_masked(logits, legal, 3, p);
    double z = exp(2.0) + exp(5.0) + exp(9.0);
    cr_assert_float_eq(p[0], exp(2.0) / z, 1e-6);
    cr_assert_float_eq(p[1], exp(5.0) / z, 1e-6);
    cr_assert_float_eq(p[2], exp(9.0) / z, 1e-6);
    float big[3] = {1e30f, -1e30f, 1e30f};
    uint16_t all[3] = {0, 1, 2};
    model_softmax_masked(big, all, 3, p);
    cr_assert_float_eq(p[0], 0.5, 1e-6);
    cr_assert_float_eq(p[1], 0.0, 1e-6);
    uint16_t one = 1;
    model_softmax_masked(logits, &one, 1, p);
    cr_assert_float_eq(p[0], 1.0, 1e-7);
    /* The mask form agrees with the list form and zeroes the rest. */
    uint8_t mask[10] = {0};
    float pm[10];
    mask[2] = mask[5] = mask[9] = 1;
    model_softmax_mask(logits, mask, 10, pm);
    model_softmax_masked(logits, legal, 3, p);
    for (int a = 0; a < 10; a++)
        cr_assert_float_eq(pm[a], a == 2 ? p[0] : a == 5 ? p[1] : a == 9 ? p[2] : 0.0, 1e-7);
    memset(mask, 0, sizeof mask);
    model_softmax_mask(logits, mask, 10, pm);
    for (int a = 0; a < 10; a++)
        cr_assert_eq(pm[a], 0.0f);
}

Test(model, mirror_sample_mirrors_planes_and_policy)
{
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(&s, legal);
    cr_assert(n > 0);
    int C = g->planes, HW = g->height * g->width, A = g->action_count;
    float *x = malloc((size_t)C * HW * sizeof *x), *x0 = malloc((size_t)C * HW * sizeof *x0);
    float *pi = calloc((size_t)A, sizeof *pi), *pi0 = calloc((size_t)A, sizeof *pi0);
    g->encode_planes(&s, x);
    for (int i = 0; i < n; i++)
        pi[g->canonical_action(&s, legal[i])] = (float)(i + 1) / (n * (n + 1) / 2);
    memcpy(x0, x, (size_t)C * HW * sizeof *x);
    memcpy(pi0, pi, (size_t)A * sizeof *pi);
    game_symmetry_planes(g, 0, x);
    game_symmetry_policy(g, 0, pi);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < g->height; y++)
            for (int xx = 0; xx < g->width; xx++)
                cr_assert_eq(x[c * HW + y * g->width + xx],
                             x0[c * HW + y * g->width + (g->width - 1 - xx)]);
    for (int a = 0; a < A; a++)
        cr_assert_eq(pi[g->symmetries[0].action(a)], pi0[a]);
    game_symmetry_planes(g, 0, x); /* an involution */
    game_symmetry_policy(g, 0, pi);
    cr_assert(memcmp(x, x0, (size_t)C * HW * sizeof *x) == 0);
    cr_assert(memcmp(pi, pi0, (size_t)A * sizeof *pi) == 0);
    free(x), free(x0), free(pi), free(pi0);
}

Test(model, set_threads)
{
    cr_assert_eq(model_set_threads(0), KZ_EINVAL);
    cr_assert_eq(model_set_threads(1), 1);
}

Test(model, eval_with_helper_threads_equals_reference)
{
    /* Two threads: the batch's chunks are shared between the caller and a
     * helper thread; results equal the reference and a one-thread evaluator's. */
    model_arch a = harness_arch("g", 7, 5, 5, 625, 2, 16, 0);
    model *m = model_new(&a, 17);
    s_randomize_bn(m, 18);
    cr_assert_eq(model_set_threads(2), 2);
    float *x = s_planes(&a, 70, 19);
    model_eval *e2 = model_eval_new(m, 70);
    cr_assert_eq(model_eval_lanes(e2), 2);
    int sizes[] = {1, 2, 3, 9, 70};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        s_check_eval(m, x, sizes[k], 70);
    /* Three lanes on small batches leave a helper idle now and then. */
    cr_assert_eq(model_set_threads(3), 3);
    model_eval *e3 = model_eval_new(m, 70);
    cr_assert_eq(model_eval_lanes(e3), 3);
    float lt[2 * 625], vt[2], lr[2 * 625], vr[2];
    for (int k = 0; k < 20; k++) {
        int B = 1 + k % 2;
        model_eval_run(e3, x, B, lt, vt);
        model_forward_reference(m, x, B, lr, vr);
        for (int i = 0; i < B * 625; i++)
            cr_assert(fabs(lt[i] - lr[i]) <= 2e-4 + 2e-4 * fabs(lr[i]));
    }
    model_eval_destroy(&e3);
    cr_assert_eq(model_set_threads(1), 1);
    model_eval *e1 = model_eval_new(m, 70);
    cr_assert_eq(model_eval_lanes(e1), 1);
    float *l1 = malloc(70 * 625 * sizeof *l1), *l2 = malloc(70 * 625 * sizeof *l2);
    float v1[70], v2[70];
    model_eval_run(e1, x, 70, l1, v1);
    model_eval_run(e2, x, 70, l2, v2);
    for (int i = 0; i < 70 * 625; i++)
        cr_assert_float_eq(l1[i], l2[i], 1e-5);
    model_eval_destroy(&e1);
    model_eval_destroy(&e2);
    free(l1), free(l2), free(x);
    model_destroy(&m);
}

/* Logits and values of B positions from an evaluator of config c. */
static void s_run_config(const model *m, const float *x, int B, int precision, int kernels,
                         float *logits, float *values, const char *path)
{
    model_eval_config c = {.precision = precision, .kernels = kernels};
    model_eval *e = model_eval_new_config(m, B, &c);
    cr_assert_not_null(e);
    cr_assert_str_eq(model_eval_path(e), path);
    model_eval_run(e, x, B, logits, values);
    model_eval_destroy(&e);
}

Test(model, kernels_equal_the_blas_path)
{
    /* fp32: the kernels sum in another order than sgemm on im2col (and skip
     * the off-board taps, whose products are zero), so the outputs differ
     * by rounding only: logits within 1e-5 of their scale (the largest
     * |logit|, at least 1), values within 1e-5, on the spec network, the
     * cluster's 4x32 and an odd one. */
    if (!kernel_cpu_has(KERNEL_AVX512)) {
        fprintf(stderr, "test_model kernels_equal_the_blas_path: skipped (no AVX-512)\n");
        return;
    }
    model_arch cases[3];
    model_arch_default(&cases[0], game_default());
    cases[1] = cases[0];
    cases[1].blocks = 4;
    cases[1].filters = 32;
    cases[2] = harness_arch("odd", 3, 3, 4, 17, 2, 24, 0);
    cases[2].policy_filters = 3;
    for (int k = 0; k < 3; k++) {
        model *m = model_new(&cases[k], 40 + k);
        s_randomize_bn(m, 50 + k);
        int B = 37, A = cases[k].actions;
        float *x = s_planes(&cases[k], B, 60 + k);
        float *l1 = malloc((size_t)B * A * sizeof *l1), *l2 = malloc((size_t)B * A * sizeof *l2);
        float v1[37], v2[37];
        s_run_config(m, x, B, MODEL_FP32, MODEL_KERNELS_BLAS, l1, v1, "openblas-fp32");
        s_run_config(m, x, B, MODEL_FP32, MODEL_KERNELS_AUTO, l2, v2, "avx512-fp32");
        double scale = 1, worst = 0;
        for (int i = 0; i < B * A; i++)
            scale = fabs(l1[i]) > scale ? fabs(l1[i]) : scale;
        for (int i = 0; i < B * A; i++) {
            double d = fabs(l1[i] - l2[i]);
            worst = d > worst ? d : worst;
            cr_assert(d <= 1e-5 * scale, "case %d logit %d: %.8g vs %.8g (scale %.3g)", k, i,
                      (double)l1[i], (double)l2[i], scale);
        }
        cr_log_info("case %d: logits differ by up to %.2g of their scale %.3g", k, worst / scale,
                    scale);
        for (int b = 0; b < B; b++)
            cr_assert(fabs(v1[b] - v2[b]) <= 1e-5, "case %d value %d", k, b);
        free(x), free(l1), free(l2);
        model_destroy(&m);
    }
}

Test(model, bf16_evaluator_is_close_to_the_reference)
{
    /* bf16 rounds every convolution's inputs and weights to 8 significant
     * bits (kernel.h bounds each layer); over 13 layers the errors compound,
     * so this holds the network to a loose check: logits within 2^-4 of
     * their scale, values within 0.1, and the same most likely action on
     * most positions. Whether bf16 plays as well is the paired match's
     * question (docs/players.md). */
    if (!kernel_cpu_has(KERNEL_BF16)) {
        fprintf(stderr, "test_model bf16_evaluator_is_close_to_the_reference: skipped (no "
                        "AVX512_BF16)\n");
        return;
    }
    model_arch a;
    model_arch_default(&a, game_default());
    model *m = model_new(&a, 44);
    s_randomize_bn(m, 45);
    int B = 16, A = a.actions, same = 0;
    float *x = s_planes(&a, B, 46);
    float *l1 = malloc((size_t)B * A * sizeof *l1), *l2 = malloc((size_t)B * A * sizeof *l2);
    float v1[16], v2[16];
    model_forward_reference(m, x, B, l1, v1);
    s_run_config(m, x, B, MODEL_BF16, MODEL_KERNELS_AUTO, l2, v2, "avx512-bf16");
    double scale = 1;
    for (int i = 0; i < B * A; i++)
        scale = fabs(l1[i]) > scale ? fabs(l1[i]) : scale;
    for (int i = 0; i < B * A; i++)
        cr_assert(fabs(l1[i] - l2[i]) <= scale / 16, "logit %d: %.6g vs %.6g", i, (double)l1[i],
                  (double)l2[i]);
    for (int b = 0; b < B; b++) {
        cr_assert(fabs(v1[b] - v2[b]) <= 0.1, "value %d: %.6g vs %.6g", b, (double)v1[b],
                  (double)v2[b]);
        int i1 = 0, i2 = 0;
        for (int i = 1; i < A; i++) {
            i1 = l1[b * A + i] > l1[b * A + i1] ? i : i1;
            i2 = l2[b * A + i] > l2[b * A + i2] ? i : i2;
        }
        same += i1 == i2;
    }
    cr_assert(same >= B * 3 / 4, "the same best action on %d of %d positions", same, B);
    cr_log_info("bf16: the same best action as fp32 on %d of %d positions", same, B);
    free(x), free(l1), free(l2);
    model_destroy(&m);
}
