/* Tests of the auxiliary heads (model.h: the opponent's next policy and the
 * final material, training only): their shapes and tensors, model files with
 * and without them (a file written before they existed loads and saves byte
 * for byte), inference that skips them, and `kz model init|info` making and
 * showing them. Their gradients are checked in test_model_train.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game.h"
#include "harness.h"
#include "model.h"
#include "modelfile.h"
#include "util.h"

/* A model file written by the code before the auxiliary heads existed:
 * modelfile_to_bytes of model_new(arch, 7) for game "test", 1x2x2 planes,
 * 3 actions, 0 blocks of 2 filters, heads 1/1/2, created_ms 1700000000000,
 * version 3, parent 2, step 9. */
static const uint8_t s_old_file[] = {
    0x4b, 0x5a, 0x4d, 0x4f, 0x44, 0x45, 0x4c, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x60, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xf0, 0x68, 0x3f, 0x7a, 0x3b, 0x0a, 0x91, 0xc1, 0x0a, 0x1b, 0x0a, 0x04,
    0x74, 0x65, 0x73, 0x74, 0x10, 0x01, 0x18, 0x02, 0x20, 0x02, 0x28, 0x03,
    0x38, 0x02, 0x40, 0x01, 0x48, 0x01, 0x50, 0x02, 0x5d, 0xac, 0xc5, 0x27,
    0x37, 0x10, 0x03, 0x18, 0x02, 0x20, 0x09, 0x28, 0x80, 0xd0, 0x95, 0xff,
    0xbc, 0x31, 0x32, 0x62, 0x0a, 0x10, 0x73, 0x74, 0x65, 0x6d, 0x2e, 0x63,
    0x6f, 0x6e, 0x76, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x12, 0x04,
    0x02, 0x01, 0x03, 0x03, 0x1a, 0x48, 0x56, 0x89, 0x24, 0xbf, 0x98, 0xb4,
    0xe2, 0xbe, 0x54, 0x8a, 0x59, 0xbe, 0x95, 0xe8, 0x0a, 0x3e, 0x0b, 0x72,
    0xe2, 0xbe, 0x21, 0x15, 0x8c, 0xbe, 0x3e, 0xad, 0x0f, 0xbf, 0x18, 0x16,
    0x9b, 0xbf, 0xe1, 0x0d, 0xdb, 0x3e, 0x0c, 0xd0, 0x16, 0xbe, 0x91, 0x06,
    0x00, 0xbe, 0xfc, 0x68, 0xce, 0xbe, 0xf1, 0xa4, 0x4a, 0x3f, 0x55, 0x13,
    0x3b, 0xbf, 0x9a, 0xff, 0x31, 0x3d, 0xc3, 0xc3, 0x53, 0x3f, 0x3f, 0xa2,
    0x6e, 0x3e, 0x94, 0x66, 0x85, 0x3f, 0x32, 0x1d, 0x0a, 0x0e, 0x73, 0x74,
    0x65, 0x6d, 0x2e, 0x62, 0x6e, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74,
    0x12, 0x01, 0x02, 0x1a, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80,
    0x3f, 0x32, 0x1b, 0x0a, 0x0c, 0x73, 0x74, 0x65, 0x6d, 0x2e, 0x62, 0x6e,
    0x2e, 0x62, 0x69, 0x61, 0x73, 0x12, 0x01, 0x02, 0x1a, 0x08, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x23, 0x0a, 0x14, 0x73, 0x74,
    0x65, 0x6d, 0x2e, 0x62, 0x6e, 0x2e, 0x72, 0x75, 0x6e, 0x6e, 0x69, 0x6e,
    0x67, 0x5f, 0x6d, 0x65, 0x61, 0x6e, 0x12, 0x01, 0x02, 0x1a, 0x08, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x22, 0x0a, 0x13, 0x73,
    0x74, 0x65, 0x6d, 0x2e, 0x62, 0x6e, 0x2e, 0x72, 0x75, 0x6e, 0x6e, 0x69,
    0x6e, 0x67, 0x5f, 0x76, 0x61, 0x72, 0x12, 0x01, 0x02, 0x1a, 0x08, 0x00,
    0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x32, 0x24, 0x0a, 0x12, 0x70,
    0x6f, 0x6c, 0x69, 0x63, 0x79, 0x2e, 0x63, 0x6f, 0x6e, 0x76, 0x2e, 0x77,
    0x65, 0x69, 0x67, 0x68, 0x74, 0x12, 0x04, 0x01, 0x02, 0x01, 0x01, 0x1a,
    0x08, 0x69, 0x5d, 0xa3, 0x3c, 0xf2, 0x6d, 0x1d, 0xc0, 0x32, 0x1b, 0x0a,
    0x10, 0x70, 0x6f, 0x6c, 0x69, 0x63, 0x79, 0x2e, 0x62, 0x6e, 0x2e, 0x77,
    0x65, 0x69, 0x67, 0x68, 0x74, 0x12, 0x01, 0x01, 0x1a, 0x04, 0x00, 0x00,
    0x80, 0x3f, 0x32, 0x19, 0x0a, 0x0e, 0x70, 0x6f, 0x6c, 0x69, 0x63, 0x79,
    0x2e, 0x62, 0x6e, 0x2e, 0x62, 0x69, 0x61, 0x73, 0x12, 0x01, 0x01, 0x1a,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x32, 0x21, 0x0a, 0x16, 0x70, 0x6f, 0x6c,
    0x69, 0x63, 0x79, 0x2e, 0x62, 0x6e, 0x2e, 0x72, 0x75, 0x6e, 0x6e, 0x69,
    0x6e, 0x67, 0x5f, 0x6d, 0x65, 0x61, 0x6e, 0x12, 0x01, 0x01, 0x1a, 0x04,
    0x00, 0x00, 0x00, 0x00, 0x32, 0x20, 0x0a, 0x15, 0x70, 0x6f, 0x6c, 0x69,
    0x63, 0x79, 0x2e, 0x62, 0x6e, 0x2e, 0x72, 0x75, 0x6e, 0x6e, 0x69, 0x6e,
    0x67, 0x5f, 0x76, 0x61, 0x72, 0x12, 0x01, 0x01, 0x1a, 0x04, 0x00, 0x00,
    0x80, 0x3f, 0x32, 0x48, 0x0a, 0x10, 0x70, 0x6f, 0x6c, 0x69, 0x63, 0x79,
    0x2e, 0x66, 0x63, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x12, 0x02,
    0x03, 0x04, 0x1a, 0x30, 0xb7, 0x38, 0xdd, 0xbe, 0xae, 0x06, 0xf1, 0xbe,
    0xa3, 0x05, 0xd6, 0xbe, 0xfa, 0x79, 0x3c, 0x3d, 0x9f, 0x99, 0xa2, 0xbe,
    0xe2, 0xf5, 0x80, 0x3f, 0x77, 0xc7, 0x22, 0xbf, 0xde, 0x45, 0x21, 0x3f,
    0x7f, 0x6c, 0xb9, 0xbe, 0x63, 0x90, 0x08, 0x3f, 0x65, 0x0c, 0x91, 0xbe,
    0x02, 0x16, 0x6d, 0x3f, 0x32, 0x21, 0x0a, 0x0e, 0x70, 0x6f, 0x6c, 0x69,
    0x63, 0x79, 0x2e, 0x66, 0x63, 0x2e, 0x62, 0x69, 0x61, 0x73, 0x12, 0x01,
    0x03, 0x1a, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x32, 0x23, 0x0a, 0x11, 0x76, 0x61, 0x6c, 0x75, 0x65,
    0x2e, 0x63, 0x6f, 0x6e, 0x76, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74,
    0x12, 0x04, 0x01, 0x02, 0x01, 0x01, 0x1a, 0x08, 0x45, 0x1f, 0x7f, 0xbf,
    0xd1, 0x1d, 0x34, 0x3d, 0x32, 0x1a, 0x0a, 0x0f, 0x76, 0x61, 0x6c, 0x75,
    0x65, 0x2e, 0x62, 0x6e, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x12,
    0x01, 0x01, 0x1a, 0x04, 0x00, 0x00, 0x80, 0x3f, 0x32, 0x18, 0x0a, 0x0d,
    0x76, 0x61, 0x6c, 0x75, 0x65, 0x2e, 0x62, 0x6e, 0x2e, 0x62, 0x69, 0x61,
    0x73, 0x12, 0x01, 0x01, 0x1a, 0x04, 0x00, 0x00, 0x00, 0x00, 0x32, 0x20,
    0x0a, 0x15, 0x76, 0x61, 0x6c, 0x75, 0x65, 0x2e, 0x62, 0x6e, 0x2e, 0x72,
    0x75, 0x6e, 0x6e, 0x69, 0x6e, 0x67, 0x5f, 0x6d, 0x65, 0x61, 0x6e, 0x12,
    0x01, 0x01, 0x1a, 0x04, 0x00, 0x00, 0x00, 0x00, 0x32, 0x1f, 0x0a, 0x14,
    0x76, 0x61, 0x6c, 0x75, 0x65, 0x2e, 0x62, 0x6e, 0x2e, 0x72, 0x75, 0x6e,
    0x6e, 0x69, 0x6e, 0x67, 0x5f, 0x76, 0x61, 0x72, 0x12, 0x01, 0x01, 0x1a,
    0x04, 0x00, 0x00, 0x80, 0x3f, 0x32, 0x38, 0x0a, 0x10, 0x76, 0x61, 0x6c,
    0x75, 0x65, 0x2e, 0x66, 0x63, 0x31, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68,
    0x74, 0x12, 0x02, 0x02, 0x04, 0x1a, 0x20, 0xef, 0x61, 0x74, 0xbd, 0xbf,
    0xb6, 0xd6, 0x3e, 0x07, 0xd2, 0xe1, 0xbe, 0x1f, 0x25, 0xab, 0x3e, 0x3d,
    0x89, 0xd1, 0x3e, 0x86, 0x04, 0x0a, 0xbe, 0x34, 0xa0, 0x88, 0x3e, 0xa2,
    0xa2, 0xa4, 0x3d, 0x32, 0x1d, 0x0a, 0x0e, 0x76, 0x61, 0x6c, 0x75, 0x65,
    0x2e, 0x66, 0x63, 0x31, 0x2e, 0x62, 0x69, 0x61, 0x73, 0x12, 0x01, 0x02,
    0x1a, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x20,
    0x0a, 0x10, 0x76, 0x61, 0x6c, 0x75, 0x65, 0x2e, 0x66, 0x63, 0x32, 0x2e,
    0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x12, 0x02, 0x01, 0x02, 0x1a, 0x08,
    0x5d, 0x77, 0x9b, 0x3e, 0x87, 0x68, 0x9f, 0x3f, 0x32, 0x19, 0x0a, 0x0e,
    0x76, 0x61, 0x6c, 0x75, 0x65, 0x2e, 0x66, 0x63, 0x32, 0x2e, 0x62, 0x69,
    0x61, 0x73, 0x12, 0x01, 0x01, 0x1a, 0x04, 0x00, 0x00, 0x00, 0x00, 0x39,
    0xf8, 0x8e, 0xff, 0x2b, 0xbc, 0x48, 0x5d, 0xcc,
};

static model_arch s_small_arch(int Of, int Mf)
{
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 6;
    a.opp_policy_filters = Of;
    a.material_filters = Mf;
    return a;
}

Test(aux, arch_shapes_and_tensors)
{
    const game_def *g = game_default();
    model_arch a0 = s_small_arch(0, 0), a = s_small_arch(2, 3);
    char err[200], desc[200];
    cr_assert_eq(model_arch_check(&a, err, sizeof err), 0, "%s", err);
    model_arch bad = a;
    bad.opp_policy_filters = 65;
    cr_assert_eq(model_arch_check(&bad, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "opp_policy_filters"), "%s", err);
    bad = a;
    bad.material_filters = -1;
    cr_assert_eq(model_arch_check(&bad, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "material_filters"), "%s", err);
    cr_assert(!model_arch_equal(&a, &a0));
    /* The default has none; the heads' parameters and statistics. */
    model_arch d;
    model_arch_default(&d, g);
    cr_assert(d.opp_policy_filters == 0 && d.material_filters == 0);
    size_t HW = 25, F = 8, A = 625;
    cr_assert_eq(model_arch_param_count(&a) - model_arch_param_count(&a0),
                 F * 2 + 2 * 2 + 2 * HW * A + A + F * 3 + 2 * 3 + 3 * HW + 1);
    cr_assert_eq(model_arch_float_count(&a) - model_arch_float_count(&a0),
                 model_arch_param_count(&a) - model_arch_param_count(&a0) + 2 * 2 + 2 * 3);
    cr_assert_eq(model_arch_forward_flops(&a), model_arch_forward_flops(&a0),
                 "inference does not run the heads");
    model_arch_describe(&a0, desc, sizeof desc);
    cr_assert(!strstr(desc, "aux"), "%s", desc);
    model_arch_describe(&a, desc, sizeof desc);
    cr_assert(strstr(desc, ", aux heads opponent policy 2, material 3"), "%s", desc);
    /* The tensors: those of the model without heads, in the same order,
     * then the heads'. */
    model *m0 = model_new(&a0, 1), *m = model_new(&a, 1);
    int n0 = model_tensor_count(m0);
    cr_assert_eq(model_tensor_count(m), n0 + 14);
    for (int i = 0; i < n0; i++) {
        model_tensor_info t0, t;
        model_tensor_info_get(m0, i, &t0);
        model_tensor_info_get(m, i, &t);
        cr_assert_str_eq(t0.name, t.name);
    }
    static const struct {
        const char *name;
        int ndim, shape[4];
    } want[] = {
        {"opp_policy.conv.weight", 4, {2, 8, 1, 1}}, {"opp_policy.bn.running_var", 1, {2}},
        {"opp_policy.fc.weight", 2, {625, 50}},      {"opp_policy.fc.bias", 1, {625}},
        {"material.conv.weight", 4, {3, 8, 1, 1}},   {"material.bn.weight", 1, {3}},
        {"material.fc.weight", 2, {1, 75}},          {"material.fc.bias", 1, {1}},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int i = model_tensor_find(m, want[k].name);
        cr_assert(i >= n0, "%s", want[k].name);
        model_tensor_info t;
        model_tensor_info_get(m, i, &t);
        cr_assert_eq(t.ndim, want[k].ndim, "%s", want[k].name);
        for (int j = 0; j < t.ndim; j++)
            cr_assert_eq(t.shape[j], want[k].shape[j], "%s", want[k].name);
    }
    cr_assert_eq(model_tensor_find(m0, "opp_policy.fc.bias"), -1);
    model_destroy(&m0);
    model_destroy(&m);
}

Test(aux, old_model_file_loads_and_saves_byte_identical)
{
    /* A file from before the heads existed loads as a model without them
     * and encodes to exactly the same bytes. */
    model *m = NULL;
    char err[300];
    cr_assert_eq(modelfile_from_bytes(s_old_file, sizeof s_old_file, NULL, &m, err, sizeof err),
                 0, "%s", err);
    const model_arch *a = model_get_arch(m);
    cr_assert(a->opp_policy_filters == 0 && a->material_filters == 0);
    cr_assert_eq(model_version(m), 3);
    cr_assert_eq(model_step(m), 9);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    cr_assert_eq(len, sizeof s_old_file);
    cr_assert(memcmp(buf, s_old_file, len) == 0, "the bytes changed");
    free(buf);
    /* And a new model of that shape, made the same way, is those bytes. */
    model *n = model_new(a, 7);
    model_set_created_ms(n, 1700000000000LL);
    model_set_version(n, 3, 2);
    model_set_step(n, 9);
    cr_assert_eq(modelfile_to_bytes(n, &buf, &len), 0);
    cr_assert(len == sizeof s_old_file && memcmp(buf, s_old_file, len) == 0);
    free(buf);
    model_destroy(&n);
    model_destroy(&m);
}

Test(aux, file_round_trip_with_heads)
{
    /* Published and checkpoint files of a model with the heads (after a
     * training step, so that the optimizer state and running statistics of
     * the heads are not their initial values) load with the same arch,
     * weights and optimizer state, and encode to the same bytes again. */
    model_set_threads(1);
    const game_def *g = game_default();
    model_arch a = s_small_arch(2, 1);
    model *m = model_new(&a, 11);
    train_config c;
    train_config_default(&c);
    model_train *t = model_train_new(m, &c, 2);
    size_t P = (size_t)g->planes * 25, A = 625;
    float *x = calloc(2 * P, sizeof *x), *pi = calloc(2 * A, sizeof *pi);
    float *opp = calloc(2 * A, sizeof *opp), z[2] = {1, -1}, mat[2] = {0.5f, -0.25f};
    game_state s;
    g->init(&s);
    g->encode_planes(&s, x);
    g->encode_planes(&s, x + P);
    pi[3] = pi[A + 7] = opp[11] = opp[A + 13] = 1;
    train_aux aux = {opp, mat, NULL};
    model_train_step_aux(t, x, pi, z, &aux, 2, NULL);
    model_train_destroy(&t);
    for (int ckpt = 0; ckpt < 2; ckpt++) {
        uint8_t *buf, *buf2;
        size_t len, len2;
        cr_assert_eq(modelfile_encode(m, ckpt, &buf, &len), 0);
        model *r = NULL;
        char err[300];
        cr_assert_eq(modelfile_from_bytes(buf, len, g, &r, err, sizeof err), 0, "%s", err);
        cr_assert(model_arch_equal(model_get_arch(r), &a));
        cr_assert_eq(model_checksum(r), model_checksum(m));
        cr_assert_eq(model_optim_kind(r), ckpt ? MODEL_OPT_ADAM : MODEL_OPT_NONE);
        int i = model_tensor_find(r, "material.fc.weight");
        float w1[25], w2[25];
        model_tensor_read(m, i, w1);
        model_tensor_read(r, i, w2);
        cr_assert(memcmp(w1, w2, sizeof w1) == 0);
        if (ckpt) {
            model_optim_read(m, 1, i, w1);
            model_optim_read(r, 1, i, w2);
            cr_assert(memcmp(w1, w2, sizeof w1) == 0);
            cr_assert(w1[0] > 0, "Adam's second moment of a head trained");
        }
        cr_assert_eq(modelfile_encode(r, ckpt, &buf2, &len2), 0);
        cr_assert(len == len2 && memcmp(buf, buf2, len) == 0);
        free(buf), free(buf2);
        model_destroy(&r);
    }
    free(x), free(pi), free(opp);
    model_destroy(&m);
}

/* Outputs of model_eval_run for both paths (OpenBLAS and the kernels,
 * which may be the same path on a CPU without AVX-512) into l (2, B, A) and
 * v (2, B). */
static void s_eval_both(const model *m, const float *x, int B, float *l, float *v)
{
    int A = model_get_arch(m)->actions;
    for (int k = 0; k < 2; k++) {
        model_eval_config c = {.precision = MODEL_FP32,
                               .kernels = k ? MODEL_KERNELS_AUTO : MODEL_KERNELS_BLAS};
        model_eval *e = model_eval_new_config(m, B, &c);
        cr_assert_not_null(e);
        model_eval_run(e, x, B, l + (size_t)k * B * A, v + (size_t)k * B);
        model_eval_destroy(&e);
    }
}

Test(aux, inference_is_the_same_with_and_without_heads)
{
    /* The same seed gives the same trunk and main heads; an evaluator and
     * the reference forward pass give bit-identical outputs for the two
     * models: the heads change nothing at inference. The reference's aux
     * form computes them (finite, and the logits depend on the position). */
    model_set_threads(1);
    const game_def *g = game_default();
    model_arch a0 = s_small_arch(0, 0), a = s_small_arch(2, 1);
    a0.blocks = a.blocks = 2;
    model *m0 = model_new(&a0, 21), *m = model_new(&a, 21);
    for (int i = 0; i < model_tensor_count(m0); i++) {
        model_tensor_info t;
        model_tensor_info_get(m0, i, &t);
        float *u = malloc(t.size * sizeof *u), *w = malloc(t.size * sizeof *w);
        model_tensor_read(m0, i, u);
        model_tensor_read(m, i, w);
        cr_assert(memcmp(u, w, t.size * sizeof *u) == 0, "%s differs", t.name);
        free(u), free(w);
    }
    enum { B = 5 };
    size_t P = (size_t)g->planes * 25, A = 625;
    float *x = malloc(B * P * sizeof *x);
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    for (int b = 0; b < B; b++) {
        g->encode_planes(&s, x + b * P);
        g->legal_actions(&s, legal);
        g->apply(&s, legal[0]);
    }
    float *l0 = malloc(2 * B * A * sizeof *l0), *l1 = malloc(2 * B * A * sizeof *l1);
    float v0[2 * B], v1[2 * B];
    s_eval_both(m0, x, B, l0, v0);
    s_eval_both(m, x, B, l1, v1);
    cr_assert(memcmp(l0, l1, 2 * B * A * sizeof *l0) == 0, "logits differ");
    cr_assert(memcmp(v0, v1, sizeof v0) == 0, "values differ");
    float *r0 = malloc(B * A * sizeof *r0), *r1 = malloc(B * A * sizeof *r1);
    float *opp = malloc(B * A * sizeof *opp), rv0[B], rv1[B], mat[B];
    float sentinel[B];
    for (int b = 0; b < B; b++)
        sentinel[b] = mat[b] = 42.0f;
    model_forward_reference(m0, x, B, r0, rv0);
    model_forward_reference_aux(m, x, B, r1, rv1, opp, mat);
    cr_assert(memcmp(r0, r1, B * A * sizeof *r0) == 0);
    cr_assert(memcmp(rv0, rv1, sizeof rv0) == 0);
    double spread = 0;
    for (size_t k = 0; k < B * A; k++) {
        cr_assert(isfinite(opp[k]));
        spread += fabs(opp[k] - opp[k % A]);
    }
    cr_assert(spread > 1e-3, "the opponent logits depend on the position");
    for (int b = 0; b < B; b++)
        cr_assert(isfinite(mat[b]) && mat[b] != 42.0f);
    /* Without the heads, the aux outputs are left alone. */
    model_forward_reference_aux(m0, x, B, NULL, NULL, opp, sentinel);
    for (int b = 0; b < B; b++)
        cr_assert_eq(sentinel[b], 42.0f);
    free(x), free(l0), free(l1), free(r0), free(r1), free(opp);
    model_destroy(&m0);
    model_destroy(&m);
}

Test(aux, kz_model_init_and_info_show_the_heads)
{
    harness_cli c;
    harness_cli_init(&c, "aux-cli");
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 --seed 3 plain.kzm"), 0,
                 "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 --seed 3 "
                                    "--opp-policy-filters 2 --material-filters 1 aux.kzm"),
                 0, "%s", c.err);
    cr_assert(strstr(c.out, "aux heads opponent policy 2, material 1"), "%s", c.out);
    char p[160], err[300];
    model *m0 = NULL, *m = NULL;
    snprintf(p, sizeof p, "%s/plain.kzm", c.dir);
    cr_assert_eq(modelfile_load(p, NULL, &m0, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/aux.kzm", c.dir);
    cr_assert_eq(modelfile_load(p, NULL, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_get_arch(m)->opp_policy_filters, 2);
    cr_assert_eq(model_get_arch(m)->material_filters, 1);
    cr_assert_eq(model_get_arch(m0)->opp_policy_filters, 0);
    cr_assert_eq(model_tensor_count(m), model_tensor_count(m0) + 14);
    cr_assert_eq(harness_cli_kz(&c, "model info aux.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "aux heads:     opponent policy 2 filters, material 1 filters"), "%s",
              c.out);
    cr_assert_eq(harness_cli_kz(&c, "model info plain.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "aux heads:     none"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model dump --no-data aux.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "\"opp_policy_filters\": 2, \"material_filters\": 1"), "%s", c.out);
    cr_assert(strstr(c.out, "\"name\": \"material.fc.weight\", \"shape\": [1, 25]"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model init --material-filters 65 x.kzm"), 2);
    cr_assert(strstr(c.err, "material"), "%s", c.err);
    model_destroy(&m0);
    model_destroy(&m);
    harness_cli_fini(&c);
}
