/* Tests of the auxiliary heads (model.h: the opponent's next policy and the
 * final material, training only): their shapes and tensors, model files with
 * and without them (a file written before they existed loads and saves byte
 * for byte), inference that skips them, `kz model init|info` making and
 * showing them; their targets built from a hand-made game with a capture
 * sequence (validate.h), kept in the store beside positions stored without
 * them, carried by the wire's BatchReply into the trainer's dense arrays
 * (trainer/batch.c). Their gradients are checked in test_model_train.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <zmq.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "net/client.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "data/record.h"
#include "data/store.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

TestSuite(aux, .fini = harness_cleanup);

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
    cr_assert_eq(model_get_meta(m)->version, 3);
    cr_assert_eq(model_get_meta(m)->step, 9);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    cr_assert_eq(len, sizeof s_old_file);
    cr_assert(memcmp(buf, s_old_file, len) == 0, "the bytes changed");
    free(buf);
    /* And a new model of that shape, made the same way, is those bytes. */
    model *n = model_new(a, 7);
    *model_edit_meta(n) =
        (model_meta){.version = 3, .parent = 2, .step = 9, .created_ms = 1700000000000LL};
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

/* --- Targets ------------------------------------------------------------------- */

/* The hand-made game: Black's man on 0 takes White's men on 5 and 15 in one
 * sequence (0x10, 10x20: two states of Black, B1 and B2, the man crowned on
 * 20 as the turn ends); White's man on 22 steps to 16 (state C, three legal
 * steps); Black's king takes it (20x12 of 20x12, 20x8, 20x4: state D) and
 * White, with no pieces left, loses. */
#define GAME_START "b....w.........w......w.. b"
#define ACT(a, b) ((a) * 25 + (b))
/* The canonical action of a White state (R16: the board turned). */
#define ROT(a, b) ((24 - (a)) * 25 + (24 - (b)))

/* The game's record; fast_c: state C had a fast search (no policy target). */
static game_record *s_chain_game(bool fast_c)
{
    const game_def *g = game_default();
    game_record *r = record_new();
    cr_assert_not_null(r);
    cr_assert_eq(record_new_id(r), 0);
    snprintf(r->game, sizeof r->game, "%s", g->name);
    r->kind = RECORD_SELFPLAY;
    r->model_version = 1;
    snprintf(r->start_position, sizeof r->start_position, "%s", GAME_START);
    uint16_t b1[1] = {ACT(0, 10)}, b2[1] = {ACT(10, 20)};
    uint16_t c[3] = {ACT(22, 16), ACT(22, 17), ACT(22, 18)};
    uint16_t d[3] = {ACT(20, 4), ACT(20, 8), ACT(20, 12)};
    float one[1] = {1}, pc[3] = {0.5f, 0.3f, 0.2f}, pd[3] = {0.2f, 0.3f, 0.5f};
    cr_assert_eq(record_add_move(r, b1[0], true, 0.0f, 1, b1, one), 0);
    cr_assert_eq(record_add_move(r, b2[0], false, 0.5f, 1, b2, one), 0);
    cr_assert_eq(record_add_move(r, c[0], false, -0.25f, 3, c, pc), 0);
    r->moves[2].fast_search = fast_c;
    cr_assert_eq(record_add_move(r, d[2], false, 0.75f, 3, d, pd), 0);
    r->winner = 0;
    r->reason = GAME_REASON_NO_PIECES;
    r->plies = 3;
    char err[256];
    cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "%s", err);
    return r;
}

/* Validates the game; returns its serialized bytes (caller frees). */
static uint8_t *s_validate_chain(validator *val, bool fast_c, validate_result *v, size_t *len)
{
    game_record *r = s_chain_game(fast_c);
    uint8_t *buf;
    cr_assert_eq(record_pack(r, &buf, len), 0);
    record_destroy(&r);
    cr_assert_eq(validate_record(val, buf, *len, 1, v), VALIDATE_OK, "%s", v->detail);
    return buf;
}

/* Asserts position p's opponent target is the n (action, share) pairs. */
static void s_check_opp(const validate_result *v, uint32_t p, int n, const uint32_t *actions,
                        const float *shares)
{
    uint32_t lo = v->opp_offsets[p];
    cr_assert_eq(v->opp_offsets[p + 1] - lo, (uint32_t)n, "position %u: %u entries", p,
                 v->opp_offsets[p + 1] - lo);
    for (int k = 0; k < n; k++) {
        cr_assert_eq(v->opp_actions[lo + k], actions[k], "position %u entry %d", p, k);
        cr_assert_float_eq(v->opp_probs[lo + k], shares[k], 1e-7);
    }
}

Test(aux, targets_of_a_hand_made_game_with_a_capture_sequence)
{
    const game_def *g = game_default();
    validator *val = validator_new(g, NULL);
    validate_result v;
    size_t len;
    uint8_t *buf = s_validate_chain(val, false, &v, &len);
    cr_assert_eq(v.n_positions, 4);
    /* B1 and B2 (Black, the sequence's two hops) both get C's policy, the
     * next state where White moves, not B2's: in Black's view (real
     * actions), ascending. */
    uint32_t c_actions[3] = {ACT(22, 16), ACT(22, 17), ACT(22, 18)};
    float c_shares[3] = {0.5f, 0.3f, 0.2f};
    s_check_opp(&v, 0, 3, c_actions, c_shares);
    s_check_opp(&v, 1, 3, c_actions, c_shares);
    /* C (White) gets D's, in White's view: the board turned. */
    uint32_t d_actions[3] = {ROT(20, 12), ROT(20, 8), ROT(20, 4)};
    float d_shares[3] = {0.5f, 0.3f, 0.2f};
    s_check_opp(&v, 2, 3, d_actions, d_shares);
    /* D: White never moves again. */
    s_check_opp(&v, 3, 0, NULL, NULL);
    /* C's own policy target is in White's view too (the same mapping). */
    cr_assert_eq(v.actions[v.offsets[2]], ROT(22, 18));
    /* The material: Black's king alone at the end, 2.5 / 12 for Black. */
    cr_assert_not_null(v.material);
    float k = 2.5f / 12.0f;
    cr_assert_float_eq(v.material[0], k, 1e-7);
    cr_assert_float_eq(v.material[1], k, 1e-7);
    cr_assert_float_eq(v.material[2], -k, 1e-7);
    cr_assert_float_eq(v.material[3], k, 1e-7);
    free(buf);
    /* With a fast search at C (no policy target there), B1 and B2 have no
     * opponent target; C still has D's. */
    buf = s_validate_chain(val, true, &v, &len);
    s_check_opp(&v, 0, 0, NULL, NULL);
    s_check_opp(&v, 1, 0, NULL, NULL);
    s_check_opp(&v, 2, 3, d_actions, d_shares);
    cr_assert_eq(v.offsets[3] - v.offsets[2], 0, "C's own policy target is gone too");
    free(buf);
    validator_destroy(&val);
}

Test(aux, material_of_khreibaga_positions)
{
    const game_def *g = game_default();
    cr_assert_not_null(g->material);
    game_state s;
    g->init(&s);
    cr_assert_float_eq(g->material(&s, 0), 0.0f, 0);
    cr_assert_eq(g->parse_position(&s, "BBbb.w................... w", NULL, 0), 0);
    /* Black: 2 kings + 2 men = 7, White 1 man: +6 / 12 for Black. */
    cr_assert_float_eq(g->material(&s, 0), 0.5f, 1e-7);
    cr_assert_float_eq(g->material(&s, 1), -0.5f, 1e-7);
    cr_assert_eq(g->parse_position(&s, "BBBBBBb.................. w", NULL, 0), 0);
    cr_assert_float_eq(g->material(&s, 0), 1.0f, 0, "clamped");
    cr_assert_float_eq(g->material(&s, 1), -1.0f, 0, "clamped");
}

/* A store in a fresh temp directory. */
static store *s_store(char **dir)
{
    *dir = harness_tmpdir("aux-store");
    cr_assert_not_null(*dir);
    store_options o;
    store_options_default(&o);
    o.no_sync = true;
    store *st = NULL;
    cr_assert_eq(store_open(&st, *dir, &o), 0);
    return st;
}

/* The store_game of a validated game: with its aux targets, or as the
 * coordinator stored positions before they existed (q_too: with q). */
static store_game s_store_game(const validate_result *v, const uint8_t *rec, size_t len,
                               uint8_t *id, bool aux, bool q_too)
{
    memcpy(id, v->game_id, 16);
    return (store_game){id, rec, len, v->n_positions, v->packed_bytes, v->packed, v->z,
                        v->offsets, v->actions, v->probs, q_too ? v->q : NULL, false, 0,
                        aux ? v->material : NULL, aux ? v->opp_offsets : NULL,
                        aux ? v->opp_actions : NULL, aux ? v->opp_probs : NULL};
}

Test(aux, store_keeps_the_targets_and_reads_positions_stored_without_them)
{
    /* Three copies of the game (new ids): the first two as before the
     * targets existed (without q, then with q: both older layouts), the
     * third with them; after reopening, every position reads back with its
     * z, q and policy, the old ones with material weight 0 and no opponent
     * target, the new ones with theirs. */
    const game_def *g = game_default();
    validator *val = validator_new(g, NULL);
    validate_result v;
    size_t len;
    uint8_t *rec = s_validate_chain(val, false, &v, &len);
    char *dir;
    store *st = s_store(&dir);
    uint8_t ids[3][16];
    for (int k = 0; k < 3; k++) {
        store_game sg = s_store_game(&v, rec, len, ids[k], k == 2, k >= 1);
        ids[k][0] ^= (uint8_t)(k + 1); /* a distinct game id */
        cr_assert_eq(store_put_games(st, &sg, 1), 0);
        cr_assert(!sg.duplicate);
    }
    store_close(&st);
    store_options o;
    store_options_default(&o);
    cr_assert_eq(store_open(&st, dir, &o), 0);
    store_batch *b = store_batch_new(4);
    for (uint64_t seq = 0; seq < 12; seq++) {
        int k = (int)(seq / 4), p = (int)(seq % 4);
        cr_assert_eq(store_get_position(st, seq, b), 0);
        cr_assert_eq(b->n, 1);
        cr_assert_eq(memcmp(b->packed, v.packed + p * 17, 17), 0);
        cr_assert_float_eq(b->z[0], v.z[p], 0);
        cr_assert_float_eq(b->q[0], k == 0 ? v.z[p] : v.q[p], 0, "%llu", (unsigned long long)seq);
        cr_assert_eq(b->offsets[1] - b->offsets[0], v.offsets[p + 1] - v.offsets[p]);
        uint32_t m = b->opp_offsets[1] - b->opp_offsets[0];
        if (k < 2) {
            cr_assert_eq(b->material_w[0], 0.0f, "an old position has no material target");
            cr_assert_eq(m, 0, "an old position has no opponent target");
        } else {
            cr_assert_eq(b->material_w[0], 1.0f);
            cr_assert_float_eq(b->material[0], v.material[p], 0);
            cr_assert_eq(m, v.opp_offsets[p + 1] - v.opp_offsets[p]);
            for (uint32_t j = 0; j < m; j++) {
                cr_assert_eq(b->opp_actions[j], v.opp_actions[v.opp_offsets[p] + j]);
                cr_assert_float_eq(b->opp_probs[j], v.opp_probs[v.opp_offsets[p] + j], 0);
            }
        }
    }
    /* A sample mixing them: the offsets partition each array. */
    rng_t r;
    rng_seed(&r, 5);
    cr_assert_eq(store_sample(st, &r, 4, b), 0);
    cr_assert_eq(b->n, 4);
    for (int j = 0; j < 4; j++)
        cr_assert(b->opp_offsets[j + 1] >= b->opp_offsets[j]);
    /* Out-of-range targets are refused before anything is written. */
    float bad[4] = {0, 0, 1.5f, 0};
    store_game sg = s_store_game(&v, rec, len, ids[0], true, true);
    sg.game_id = (const uint8_t *)"a-new-game-id-xx";
    sg.material = bad;
    cr_assert_eq(store_put_games(st, &sg, 1), KZ_EINVAL);
    store_batch_destroy(&b);
    store_close(&st);
    harness_rm_rf(dir);
    free(dir);
    free(rec);
    validator_destroy(&val);
}

Test(aux, batch_reply_carries_the_targets_into_dense_arrays)
{
    /* The stored game sampled position by position, sent through the wire's
     * BatchReply and spread by batch_fill_aux: the opponent rows and the
     * materials as validated, mirrored with their samples; a reply without
     * aux targets gives weight 0; bad aux values are skipped. */
    const game_def *g = game_default();
    validator *val = validator_new(g, NULL);
    validate_result v;
    size_t len;
    uint8_t *rec = s_validate_chain(val, false, &v, &len);
    char *dir;
    store *st = s_store(&dir);
    uint8_t id[16];
    store_game sg = s_store_game(&v, rec, len, id, true, true);
    cr_assert_eq(store_put_games(st, &sg, 1), 0);
    store_batch *b = store_batch_new(4);
    rng_t r;
    rng_seed(&r, 9);
    cr_assert_eq(store_sample(st, &r, 4, b), 0);
    wire_msg m = {0}, d = {0};
    m.kind = WIRE_BATCH_REPLY;
    m.u.batch_reply = (wire_batch_reply){
        (uint32_t)b->n, b->packed_bytes, b->packed, b->z, b->offsets, b->actions, b->probs, 0, 4,
        1, 1, b->q,
        {b->material, b->material_w, b->opp_offsets, b->opp_actions, b->opp_probs},
        g->name};
    wire_buf wb = {0};
    cr_assert_eq(wire_encode(&m, &wb), 0);
    cr_assert_eq(wire_decode(&d, wb.data, wb.len, 64u << 20), 0);
    const wire_batch_reply *br = &d.u.batch_reply;
    cr_assert_not_null(br->aux.material);
    cr_assert_not_null(br->aux.opp_offsets);
    int A = g->action_count;
    size_t P = (size_t)g->planes * 25;
    float *x = malloc(4 * P * sizeof *x), *pi = malloc(4 * (size_t)A * sizeof *pi), z[4];
    float *opp = malloc(4 * (size_t)A * sizeof *opp), mat[4], mw[4];
    batch_aux ba = {opp, mat, mw};
    for (int mirror = 0; mirror < 2; mirror++) {
        batch_counts cnt = {0};
        rng_t mr;
        rng_seed(&mr, 3);
        cr_assert_eq(batch_fill_aux(g, br, mirror, 0, NULL, &mr, x, pi, z, &ba, 4, &cnt), 4);
        cr_assert_eq(cnt.skipped, 0);
        for (int j = 0; j < 4; j++) {
            int p = (int)(b->sequences[j] % 4);
            float want[625] = {0};
            for (uint32_t e = v.opp_offsets[p]; e < v.opp_offsets[p + 1]; e++)
                want[v.opp_actions[e]] = v.opp_probs[e];
            /* A mirrored sample: its planes, policy and opponent row alike. */
            float planes[7 * 25];
            cr_assert_eq(g->unpack_planes(v.packed + p * 17, planes), 0);
            bool mirrored = memcmp(planes, x + j * P, sizeof planes) != 0;
            cr_assert(mirror || !mirrored);
            if (mirrored)
                game_symmetry_policy(g, 0, want);
            for (int a = 0; a < A; a++)
                cr_assert_float_eq(opp[j * A + a], want[a], 1e-6, "sample %d action %d", j, a);
            cr_assert_float_eq(mat[j], v.material[p], 0);
            cr_assert_eq(mw[j], 1.0f);
        }
        cr_assert_eq(cnt.aux_material, 4);
        cr_assert_eq(cnt.aux_opp, 4 - (uint64_t)(b->sequences[0] % 4 == 3) -
                                      (b->sequences[1] % 4 == 3) - (b->sequences[2] % 4 == 3) -
                                      (b->sequences[3] % 4 == 3));
    }
    /* Without aux targets in the reply: weight 0, zero rows. */
    wire_batch_reply plain = *br;
    plain.aux = (wire_batch_aux){0};
    batch_counts cnt = {0};
    cr_assert_eq(batch_fill_aux(g, &plain, false, 0, NULL, &r, x, pi, z, &ba, 4, &cnt), 4);
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(mw[j], 0.0f);
        for (int a = 0; a < A; a++)
            cr_assert_eq(opp[j * A + a], 0.0f);
    }
    /* A material out of range or an opponent action out of range: skipped. */
    float badm[4];
    memcpy(badm, br->aux.material, sizeof badm);
    badm[1] = 2.0f;
    plain.aux = br->aux;
    plain.aux.material = badm;
    memset(&cnt, 0, sizeof cnt);
    cr_assert_eq(batch_fill_aux(g, &plain, false, 0, NULL, &r, x, pi, z, &ba, 4, &cnt), 3);
    cr_assert_eq(cnt.skipped, 1);
    free(x), free(pi), free(opp);
    wire_msg_clear(&d);
    wire_buf_free(&wb);
    store_batch_destroy(&b);
    store_close(&st);
    harness_rm_rf(dir);
    free(dir);
    free(rec);
    validator_destroy(&val);
}

/* --- A real coordinator and trainer ----------------------------------------------- */

/* Replaces h's initial model by a tiny one with both auxiliary heads. */
static void s_aux_initial_model(harness *h)
{
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 8;
    a.opp_policy_filters = 2;
    a.material_filters = 1;
    model *m = model_new(&a, 1);
    cr_assert_eq(modelfile_save(m, h->model, false), 0);
    model_destroy(&m);
}

/* Runs a trainer of h to max_steps; returns its exit code. */
static int s_run_trainer(const harness *h, const char *log, const char *max_steps)
{
    char a_end[96], a_dir[128];
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h->endpoint);
    snprintf(a_dir, sizeof a_dir, "--checkpoint_dir=%s/trainer", h->dir);
    const char *args[] = {a_end, a_dir, "--batch_size=32", "--min_positions=64",
                          "--timeout_ms=500", "--retries=2", "--wait_ms=50", "--stats_s=0.1",
                          "--log_s=0.2", "--seed=3", "--steps_per_candidate=5",
                          "--max_reuse=0", max_steps, NULL};
    pid_t pid = harness_spawn("kz-trainer", args, log);
    int st;
    cr_assert(harness_wait(pid, 90, &st), "kz-trainer did not finish (see %s)", log);
    return harness_exit_code(st);
}

/* The tensor `name` of m (caller frees). */
static float *s_tensor(const model *m, const char *name, size_t *n)
{
    int i = model_tensor_find(m, name);
    cr_assert(i >= 0, "%s", name);
    model_tensor_info t;
    model_tensor_info_get(m, i, &t);
    float *v = malloc(t.size * sizeof *v);
    model_tensor_read(m, i, v);
    *n = t.size;
    return v;
}

Test(aux, coordinator_and_trainer_train_the_heads)
{
    /* A coordinator with aux_targets stores the targets of valid random
     * games; a trainer starting from its best (a network with both heads)
     * asks for them, trains every head, reports the aux losses (log and
     * /status), and its candidates carry the heads, trained. */
    harness h;
    harness_init(&h, "aux-run");
    s_aux_initial_model(&h);
    const char *coord[] = {"--aux_targets=true", NULL};
    harness_coord_start(&h, coord);
    harness_submit_random_games(&h, 20, 100);
    char log[160];
    snprintf(log, sizeof log, "%s/trainer.log", h.dir);
    cr_assert_eq(s_run_trainer(&h, log, "--max_steps=10"), 0, "see %s", log);
    cr_expect_eq(harness_count(log, "auxiliary heads: opponent policy 2 filters (weight 0.15), "
                                    "material 1 filters (weight 1)"),
                 1, "see %s", log);
    cr_expect_gt(harness_count(log, ", opp policy "), 0, "progress lines: see %s", log);
    cr_expect_eq(harness_count(log, "no batch carries their targets"), 0, "see %s", log);
    /* Every sample had a material target; most an opponent target (not the
     * positions of a game's last run of one side). */
    cr_expect_eq(harness_log_num(log, "material on "), 10 * 32, "see %s", log);
    double opp = harness_log_num(log, "opponent policy on ");
    cr_expect(opp > 10 * 32 * 0.5 && opp < 10 * 32, "opponent targets on %g samples", opp);
    cr_expect_gt(harness_wait_status(&h, "\"trainer\"", "opp_policy_loss", 1e-9, 5), 1.0,
                 "about log(legal moves)");
    cr_expect_gt(harness_status_num(&h, "\"trainer\"", "material_loss"), 0);
    /* The candidate of step 10 (version 3, from the coordinator) has the
     * heads, trained. */
    char err[300];
    model *m1 = NULL, *m3 = NULL;
    cr_assert_eq(modelfile_load(h.model, game_default(), &m1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(harness_wait_status(&h, "\"models\"", "latest", 3, 5), 3);
    void *zctx = zmq_ctx_new();
    client *cl = harness_client(zctx, h.endpoint, NULL, "aux-fetch", "tool", 2000);
    uint8_t *blob;
    size_t blen;
    cr_assert_eq(client_get_model(cl, 3, 0, &blob, &blen, NULL), 0, "%s", client_last_error(cl));
    cr_assert_eq(modelfile_from_bytes(blob, blen, game_default(), &m3, err, sizeof err), 0, "%s",
                 err);
    cr_expect_eq(model_get_meta(m3)->step, 10);
    char path[200];
    snprintf(path, sizeof path, "%s/cand3.kzm", h.dir);
    cr_assert_eq(file_write_atomic(path, blob, blen), 0);
    free(blob);
    client_destroy(&cl);
    zmq_ctx_term(zctx);
    cr_expect_eq(model_get_arch(m3)->opp_policy_filters, 2);
    cr_expect_eq(model_get_arch(m3)->material_filters, 1);
    static const char *const heads[] = {"opp_policy.fc.weight", "material.fc.weight",
                                        "opp_policy.conv.weight", "material.conv.weight"};
    for (int k = 0; k < 4; k++) {
        size_t n1, n3;
        float *w1 = s_tensor(m1, heads[k], &n1), *w3 = s_tensor(m3, heads[k], &n3);
        cr_expect(n1 == n3 && memcmp(w1, w3, n1 * sizeof *w1) != 0, "%s did not train",
                  heads[k]);
        free(w1), free(w3);
    }
    /* The candidate plays: kz selfplay on it runs the evaluator (which
     * skips the heads). */
    char args[400];
    snprintf(args, sizeof args, "selfplay --model %s --games 2 --sims 8 --parallel 2 --seed 1 "
                                "--out %s/sp.rec",
             path, h.dir);
    char out[4096];
    cr_expect_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    model_destroy(&m1);
    model_destroy(&m3);
    harness_fini(&h);
}

Test(aux, trainer_warns_when_no_targets_arrive)
{
    /* The same network against a coordinator without aux_targets: the
     * trainer trains (the heads with weight 0) and says why. */
    harness h;
    harness_init(&h, "aux-none");
    s_aux_initial_model(&h);
    harness_coord_start(&h, NULL);
    harness_submit_random_games(&h, 10, 200);
    char log[160];
    snprintf(log, sizeof log, "%s/trainer.log", h.dir);
    cr_assert_eq(s_run_trainer(&h, log, "--max_steps=6"), 0, "see %s", log);
    cr_expect_eq(harness_count(log, "no batch carries their targets: set aux_targets = true"), 1,
                 "see %s", log);
    cr_expect_eq(harness_log_num(log, "material on "), 0, "see %s", log);
    harness_fini(&h);
}
