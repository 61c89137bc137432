/* Tests of model training: whole-network gradients against finite
 * differences (batch norm in training mode), the auxiliary heads' losses and
 * gradients, the optimizers, schedules, clipping, L2, running averages,
 * overfitting a small data set, and exact resumption from a checkpoint. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/kernel.h"
#include "nn/layer.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"

/* A training batch. */
typedef struct batch {
    int B;     /* samples */
    float *x;  /* (B, C, H, W) */
    float *pi; /* (B, A) */
    float *z;  /* (B) */
    const train_aux *aux; /* auxiliary targets, NULL: none */
} batch;

/* Random planes, a random target distribution on a few actions, z in [-1, 1]. */
static batch s_random_batch(const model_arch *a, int B, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    batch b = {.B = B};
    size_t nx = (size_t)B * a->in_planes * a->height * a->width;
    b.x = malloc(nx * sizeof *b.x);
    b.pi = calloc((size_t)B * a->actions, sizeof *b.pi);
    b.z = malloc((size_t)B * sizeof *b.z);
    for (size_t i = 0; i < nx; i++)
        b.x[i] = (float)rng_below(&r, 2);
    for (int i = 0; i < B; i++) {
        double s = 0;
        for (int k = 0; k < 3; k++)
            s += b.pi[(size_t)i * a->actions + rng_below(&r, (uint32_t)a->actions)] +=
                (float)(0.1 + rng_uniform(&r));
        for (int k = 0; k < a->actions; k++)
            b.pi[(size_t)i * a->actions + k] /= (float)s;
        b.z[i] = (float)(2 * rng_uniform(&r) - 1);
    }
    return b;
}

/* n distinct positions, each from its own random Khreibaga game at a random
 * depth; a one-hot target on a random legal action and an outcome of +-1. */
static batch s_game_batch(const game_def *g, int n, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    int C = g->planes, HW = g->height * g->width, A = g->action_count;
    batch b = {.B = n};
    b.x = malloc((size_t)n * C * HW * sizeof *b.x);
    b.pi = calloc((size_t)n * A, sizeof *b.pi);
    b.z = malloc((size_t)n * sizeof *b.z);
    uint64_t *seen = calloc((size_t)n, sizeof *seen);
    int k = 0;
    while (k < n) {
        game_state s;
        g->init(&s);
        for (int ply = 0; ply < 200 && k < n && !g->result(&s).over; ply++) {
            uint16_t legal[GAME_MAX_LEGAL];
            int nl = g->legal_actions(&s, legal);
            uint64_t h = g->hash(&s);
            bool dup = false;
            for (int j = 0; j < k; j++)
                dup |= seen[j] == h;
            if (!dup && rng_below(&r, 12) == 0) {
                seen[k] = h;
                g->encode_planes(&s, b.x + (size_t)k * C * HW);
                int a = g->canonical_action(&s, legal[rng_below(&r, (uint32_t)nl)]);
                b.pi[(size_t)k * A + a] = 1.0f;
                b.z[k] = rng_below(&r, 2) ? 1.0f : -1.0f;
                k++;
                break;
            }
            g->apply(&s, legal[rng_below(&r, (uint32_t)nl)]);
        }
    }
    free(seen);
    return b;
}

static void s_free_batch(batch *b)
{
    free(b->x);
    free(b->pi);
    free(b->z);
}

/* --- Gradients ------------------------------------------------------------------ */

/* The loss is only piecewise smooth (ReLU) and computed in float: a large
 * step may cross a kink, a tiny one drowns in rounding. So the derivative is
 * estimated at several step sizes, centrally and from each side (a kink on
 * one side leaves the other side's difference clean), and the best agreement
 * with the analytic derivative counts; a wrong gradient agrees with none.
 * Perturbs p along d (n floats; d NULL: coordinate idx only). */
static double s_fd_error(model_train *t, const batch *b, float *p, size_t n, const float *d,
                         size_t idx, double analytic, double tol)
{
    static const double steps[] = {3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5};
    float *keep = malloc(n * sizeof *keep);
    memcpy(keep, p, n * sizeof *p);
    double l0 = model_train_loss_aux(t, b->x, b->pi, b->z, b->aux, b->B, NULL), best = INFINITY;
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        double l[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float h = (float)(sgn ? -steps[k] : steps[k]);
            if (d)
                for (size_t i = 0; i < n; i++)
                    p[i] = keep[i] + h * d[i];
            else
                p[idx] = keep[idx] + h;
            l[sgn] = model_train_loss_aux(t, b->x, b->pi, b->z, b->aux, b->B, NULL);
            memcpy(p, keep, n * sizeof *p);
        }
        double est[3] = {(l[0] - l[1]) / (2 * steps[k]), (l[0] - l0) / steps[k],
                         (l0 - l[1]) / steps[k]};
        for (int e = 0; e < 3; e++)
            best = fabs(est[e] - analytic) < best ? fabs(est[e] - analytic) : best;
        if (best <= tol)
            break;
    }
    free(keep);
    return best;
}

/* Checks the gradient at every coordinate (or `per_tensor` random ones of
 * each trainable tensor) and along three random unit directions. */
static void s_gradcheck(model_train *t, const model *m, const batch *b, int per_tensor,
                        double atol, double rtol, uint64_t seed)
{
    train_losses l;
    model_train_compute_aux(t, b->x, b->pi, b->z, b->aux, b->B, &l);
    size_t n, n2;
    float *p = model_train_params(t, &n);
    float *g = malloc(n * sizeof *g);
    memcpy(g, model_train_grads(t, &n2), n * sizeof *g);
    cr_assert_eq(n, n2);
    double gn = 0;
    for (size_t i = 0; i < n; i++)
        gn += (double)g[i] * g[i];
    gn = sqrt(gn);
    cr_assert_float_eq(gn, l.grad_norm, 1e-4 * gn);
    cr_assert(gn > 1e-3, "a gradient worth checking");
    rng_t r;
    rng_seed(&r, seed);
    size_t off = 0; /* trainable tensors lie in model_tensor order */
    for (int ti = 0; ti < model_tensor_count(m); ti++) {
        model_tensor_info info;
        model_tensor_info_get(m, ti, &info);
        if (info.kind == MODEL_TENSOR_STAT)
            continue;
        size_t count = per_tensor && (size_t)per_tensor < info.size ? (size_t)per_tensor
                                                                     : info.size;
        for (size_t k = 0; k < count; k++) {
            size_t i = off + (count == info.size ? k : rng_below(&r, (uint32_t)info.size));
            double tol = atol + rtol * fabs(g[i]);
            double e = s_fd_error(t, b, p, n, NULL, i, g[i], tol);
            cr_assert(e <= tol, "%s[%zu]: analytic %.6g, off by %.3g", info.name, i - off,
                      (double)g[i], e);
        }
        off += info.size;
    }
    cr_assert_eq(off, n);
    float *d = malloc(n * sizeof *d);
    for (int trial = 0; trial < 3; trial++) {
        double dn = 0, gd = 0;
        for (size_t i = 0; i < n; i++) {
            d[i] = (float)rng_normal(&r);
            dn += (double)d[i] * d[i];
        }
        for (size_t i = 0; i < n; i++) {
            d[i] = (float)(d[i] / sqrt(dn));
            gd += (double)g[i] * d[i];
        }
        double e = s_fd_error(t, b, p, n, d, 0, gd, rtol * gn);
        cr_assert(e <= rtol * gn, "direction %d: analytic %.6g, off by %.3g (|g| %.3g)", trial,
                  gd, e, gn);
    }
    /* compute and loss change nothing in the model; compute is deterministic. */
    float *keep = malloc(n * sizeof *keep);
    memcpy(keep, p, n * sizeof *p);
    model_train_compute_aux(t, b->x, b->pi, b->z, b->aux, b->B, NULL);
    cr_assert(memcmp(p, keep, n * sizeof *p) == 0);
    cr_assert(memcmp(model_train_grads(t, &n2), g, n * sizeof *g) == 0, "deterministic");
    free(g), free(d), free(keep);
}

Test(model_train, whole_network_gradient_matches_finite_differences)
{
    model_set_threads(1);
    /* Small odd shapes, two blocks, both heads with several filters, L2 on,
     * batch norm in training mode; every parameter. */
    model_arch a = harness_arch("test", 3, 3, 4, 10, 2, 4, 5);
    a.policy_filters = 2;
    a.value_filters = 2;
    model *m = model_new(&a, 31);
    train_config c;
    train_config_default(&c);
    c.l2 = 0.01f;
    model_train *t = model_train_new(m, &c, 3);
    cr_assert_not_null(t);
    batch b = s_random_batch(&a, 3, 32);
    train_losses l;
    model_train_compute(t, b.x, b.pi, b.z, b.B, &l);
    cr_assert(l.value > 0 && l.policy > 0 && l.l2 > 0);
    cr_assert_float_eq(l.total, l.value + l.policy + l.l2, 1e-9);
    size_t n;
    model_train_params(t, &n);
    cr_assert_eq(n, model_arch_param_count(&a));
    s_gradcheck(t, m, &b, 0, 1e-4, 1e-2, 33);
    s_free_batch(&b);
    model_train_destroy(&t);
    cr_assert_null(t);
    model_destroy(&m);
}

/* Auxiliary targets for a batch of B: opponent-policy rows like
 * s_random_batch's (row `none` all zeros: no target) and materials in
 * [-1, 1] (sample `none` weighted 0). */
typedef struct aux_targets {
    float *opp_pi;   /* (B, A) */
    float *mat;      /* (B) */
    float *mat_w;    /* (B) */
    train_aux aux;   /* pointing at the arrays */
} aux_targets;

static aux_targets s_random_aux(const model_arch *a, int B, int none, uint64_t seed)
{
    batch r = s_random_batch(a, B, seed);
    aux_targets t = {.opp_pi = r.pi, .mat = r.z, .mat_w = malloc((size_t)B * sizeof(float))};
    free(r.x);
    for (int b = 0; b < B; b++)
        t.mat_w[b] = b == none ? 0.0f : 1.0f;
    memset(t.opp_pi + (size_t)none * a->actions, 0, (size_t)a->actions * sizeof(float));
    t.aux = (train_aux){t.opp_pi, t.mat, t.mat_w};
    return t;
}

static void s_free_aux(aux_targets *t)
{
    free(t->opp_pi);
    free(t->mat);
    free(t->mat_w);
}

Test(model_train, aux_heads_gradient_matches_finite_differences)
{
    /* Both auxiliary heads with several filters, weights other than 1, one
     * sample without aux targets: every parameter, the heads' and the
     * tower's (which their losses now reach too). */
    model_set_threads(1);
    model_arch a = harness_arch("test", 3, 3, 4, 10, 2, 4, 5);
    a.opp_policy_filters = 2;
    a.material_filters = 3;
    model *m = model_new(&a, 35);
    train_config c;
    train_config_default(&c);
    c.l2 = 0.01f;
    c.aux_opp_policy_weight = 0.7f;
    c.aux_material_weight = 1.5f;
    model_train *t = model_train_new(m, &c, 3);
    cr_assert_not_null(t);
    batch b = s_random_batch(&a, 3, 36);
    aux_targets at = s_random_aux(&a, 3, 1, 37);
    b.aux = &at.aux;
    train_losses l;
    model_train_compute_aux(t, b.x, b.pi, b.z, b.aux, b.B, &l);
    cr_assert(l.opp_policy > 0 && l.material > 0);
    cr_assert_float_eq(l.total, l.value + l.policy + l.l2 + 0.7 * l.opp_policy + 1.5 * l.material,
                       1e-6);
    size_t n;
    model_train_params(t, &n);
    cr_assert_eq(n, model_arch_param_count(&a));
    s_gradcheck(t, m, &b, 0, 1e-4, 1e-2, 38);
    s_free_aux(&at);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

Test(model_train, aux_losses_are_weighted_and_skip_missing_targets)
{
    model_set_threads(1);
    model_arch a0 = harness_arch("test", 2, 3, 3, 6, 1, 4, 3), a = a0;
    a.opp_policy_filters = 1;
    a.material_filters = 2;
    model *m = model_new(&a, 45), *m0 = model_new(&a0, 45);
    train_config c;
    train_config_default(&c);
    c.l2 = 0; /* L2 reaches the heads' weights whatever their targets */
    model_train *t = model_train_new(m, &c, 4), *t0 = model_train_new(m0, &c, 4);
    batch b = s_random_batch(&a, 4, 46);
    aux_targets at = s_random_aux(&a, 4, 3, 47); /* sample 3: no opponent target */
    size_t A = (size_t)a.actions, n, n0;
    /* (1) Each sample adds its own term to the batch means, and one without
     * targets (weight 0, a row of zeros) adds nothing: targets on samples
     * {0, 1} plus targets on {2, 3} give the losses, and beyond the main
     * heads' part the gradient, of targets on all four; the value of a
     * weight-0 material target does not matter. */
    float *lo = calloc(4 * A, sizeof *lo), *hi = calloc(4 * A, sizeof *hi);
    memcpy(lo, at.opp_pi, 2 * A * sizeof *lo);
    memcpy(hi + 2 * A, at.opp_pi + 2 * A, 2 * A * sizeof *hi);
    float w_lo[4] = {1, 1, 0, 0}, w_hi[4] = {0, 0, 1, 1}, w_all[4] = {1, 1, 1, 1}, mat2[4];
    memcpy(mat2, at.mat, sizeof mat2);
    mat2[2] = 0.25f - mat2[2];
    train_aux all = {at.opp_pi, at.mat, w_all}, part_lo = {lo, at.mat, w_lo},
              part_hi = {hi, at.mat, w_hi}, part_lo2 = {lo, mat2, w_lo};
    size_t np = model_arch_param_count(&a);
    float *g_all = malloc(np * sizeof(float)), *g_lo = malloc(np * sizeof(float));
    float *g_hi = malloc(np * sizeof(float)), *g_m = malloc(np * sizeof(float));
    train_losses l_all, l_lo, l_hi, l_lo2;
    model_train_compute_aux(t, b.x, b.pi, b.z, &all, 4, &l_all);
    memcpy(g_all, model_train_grads(t, &n), np * sizeof(float));
    model_train_compute_aux(t, b.x, b.pi, b.z, &part_lo, 4, &l_lo);
    memcpy(g_lo, model_train_grads(t, &n), np * sizeof(float));
    model_train_compute_aux(t, b.x, b.pi, b.z, &part_hi, 4, &l_hi);
    memcpy(g_hi, model_train_grads(t, &n), np * sizeof(float));
    model_train_compute(t, b.x, b.pi, b.z, 4, NULL);
    memcpy(g_m, model_train_grads(t, &n), np * sizeof(float));
    cr_assert(l_lo.opp_policy > 0 && l_hi.opp_policy > 0 && l_lo.material > 0);
    cr_assert_float_eq(l_lo.opp_policy + l_hi.opp_policy, l_all.opp_policy, 1e-6);
    cr_assert_float_eq(l_lo.material + l_hi.material, l_all.material, 1e-6);
    for (size_t i = 0; i < np; i++) {
        double want = (double)g_all[i] - g_m[i];
        double got = ((double)g_lo[i] - g_m[i]) + ((double)g_hi[i] - g_m[i]);
        cr_assert(fabs(want - got) <= 1e-5 + 1e-4 * fabs(want), "gradient %zu: %g vs %g", i,
                  want, got);
    }
    model_train_compute_aux(t, b.x, b.pi, b.z, &part_lo2, 4, &l_lo2);
    cr_assert_eq(l_lo2.material, l_lo.material, "a weight-0 target's value changed the loss");
    cr_assert(memcmp(model_train_grads(t, &n), g_lo, np * sizeof(float)) == 0);
    free(lo), free(hi), free(g_all), free(g_lo), free(g_hi), free(g_m);
    /* (2) Without aux targets (k = 0), with the aux weights 0 (k = 1) and
     * with both (k = 2: no targets, weights set), the shared tensors'
     * gradient is exactly that of the same network without the heads (same
     * seed: same trunk), and the heads get none. */
    model_train_compute(t0, b.x, b.pi, b.z, 4, NULL);
    const float *g0 = model_train_grads(t0, &n0);
    cr_assert_eq(n0, model_arch_param_count(&a0));
    for (int k = 0; k < 3; k++) {
        train_config ck = c;
        ck.aux_opp_policy_weight = k == 1 ? 0.0f : 0.15f;
        ck.aux_material_weight = k == 1 ? 0.0f : 1.0f;
        cr_assert_eq(model_train_set_config(t, &ck), 0);
        train_aux none = {NULL, NULL, NULL};
        train_losses lk;
        model_train_compute_aux(t, b.x, b.pi, b.z, k == 1 ? &at.aux : k == 2 ? &none : NULL, 4,
                                &lk);
        const float *g = model_train_grads(t, &n);
        cr_assert_eq(n, np);
        cr_assert(memcmp(g, g0, n0 * sizeof *g) == 0, "case %d: the shared gradient differs", k);
        for (size_t i = n0; i < n; i++)
            cr_assert_eq(g[i], 0.0f, "case %d: a head's gradient %zu", k, i - n0);
        cr_assert_float_eq(lk.total,
                           lk.value + lk.policy + lk.l2 + ck.aux_opp_policy_weight * lk.opp_policy +
                               ck.aux_material_weight * lk.material,
                           1e-9);
    }
    /* With targets and weights the tower's gradient changes. */
    cr_assert_eq(model_train_set_config(t, &c), 0);
    model_train_compute_aux(t, b.x, b.pi, b.z, &at.aux, 4, NULL);
    cr_assert(memcmp(model_train_grads(t, &n), g0, n0 * sizeof *g0) != 0);
    s_free_aux(&at);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_train_destroy(&t0);
    model_destroy(&m);
    model_destroy(&m0);
}

Test(model_train, aux_heads_learn_their_targets)
{
    /* 40 Adam steps on one batch: both auxiliary losses fall by more than
     * half, and the heads' batch norms keep running averages. */
    model_set_threads(1);
    model_arch a = harness_arch("test", 3, 4, 4, 8, 1, 8, 4);
    a.opp_policy_filters = 2;
    a.material_filters = 1;
    model *m = model_new(&a, 55);
    train_config c;
    train_config_default(&c);
    c.lr = 1e-2f;
    c.l2 = 0;
    model_train *t = model_train_new(m, &c, 8);
    batch b = s_random_batch(&a, 8, 56);
    aux_targets at = s_random_aux(&a, 8, 0, 57);
    train_losses first, l;
    model_train_loss_aux(t, b.x, b.pi, b.z, &at.aux, 8, &first);
    for (int i = 0; i < 40; i++)
        model_train_step_aux(t, b.x, b.pi, b.z, &at.aux, 8, &l);
    cr_log_info("aux: opp %.3f -> %.3f, material %.3f -> %.3f", first.opp_policy, l.opp_policy,
                first.material, l.material);
    cr_assert(l.opp_policy < 0.5 * first.opp_policy && l.material < 0.5 * first.material);
    float mean[2];
    model_tensor_read(m, model_tensor_find(m, "opp_policy.bn.running_mean"), mean);
    cr_assert(mean[0] != 0.0f || mean[1] != 0.0f, "running mean of the opponent head");
    model_tensor_read(m, model_tensor_find(m, "material.bn.running_mean"), mean);
    cr_assert(mean[0] != 0.0f, "running mean of the material head");
    s_free_aux(&at);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

Test(model_train, kernels_give_the_blas_gradients)
{
    /* The 3x3 convolutions on kernel.h's kernels (forward, input and weight
     * gradients) and on OpenBLAS sum the same products in another order:
     * the losses agree to 1e-5 and every gradient to 1e-4 of its tensor's
     * scale (the largest |g| in it), on the real shapes and a batch that
     * spans several chunks of the weight gradient. */
    if (!kernel_cpu_has(KERNEL_AVX512)) {
        fprintf(stderr, "test_model_train kernels_give_the_blas_gradients: skipped (no "
                        "AVX-512)\n");
        return;
    }
    model_set_threads(1);
    model_arch a = harness_arch("test", 7, 5, 5, 625, 2, 32, 16);
    model *m = model_new(&a, 41);
    batch b = s_random_batch(&a, 23, 42);
    float *g[2];
    train_losses l[2];
    size_t n = 0;
    for (int k = 0; k < 2; k++) {
        train_config c;
        train_config_default(&c);
        c.kernels = k ? MODEL_KERNELS_AUTO : MODEL_KERNELS_BLAS;
        model_train *t = model_train_new(m, &c, b.B);
        model_train_compute(t, b.x, b.pi, b.z, b.B, &l[k]);
        const float *gk = model_train_grads(t, &n);
        g[k] = malloc(n * sizeof *g[k]);
        memcpy(g[k], gk, n * sizeof *gk);
        model_train_destroy(&t);
    }
    cr_assert_float_eq(l[0].total, l[1].total, 1e-5 * l[0].total);
    /* The flat gradient holds the trainable tensors in order (model.h). */
    for (int i = 0, off = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        if (ti.kind == MODEL_TENSOR_STAT)
            continue;
        double scale = 1e-30;
        for (size_t k = 0; k < ti.size; k++)
            scale = fmax(scale, fabs(g[0][off + k]));
        for (size_t k = 0; k < ti.size; k++)
            cr_assert(fabs(g[0][off + k] - g[1][off + k]) <= 1e-4 * scale,
                      "%s[%zu]: %.8g vs %.8g (scale %.3g)", ti.name, k, (double)g[0][off + k],
                      (double)g[1][off + k], scale);
        off += (int)ti.size;
    }
    cr_assert_eq((size_t)n, model_arch_param_count(&a));
    free(g[0]), free(g[1]);
    s_free_batch(&b);
    model_destroy(&m);
}

Test(model_train, gradient_on_khreibaga_shapes)
{
    /* The real input and action shapes (7x5x5 -> 625) and real positions on
     * a narrow tower: 24 coordinates of every tensor and random directions.
     * A stem weight moves 100 units at once here, some of which sit within
     * 1e-4 of their ReLU kink, so the finite differences are noisier than on
     * the small net above and the tolerance is wider (1e-3 + 2%). */
    model_set_threads(1);
    const game_def *gd = game_default();
    model_arch a;
    model_arch_default(&a, gd);
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 6;
    model *m = model_new(&a, 41);
    train_config c;
    train_config_default(&c);
    model_train *t = model_train_new(m, &c, 4);
    batch b = s_game_batch(gd, 4, 42);
    for (int i = 0; i < 4; i++)
        b.z[i] *= 0.5f;
    s_gradcheck(t, m, &b, 24, 1e-3, 2e-2, 43);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

/* --- Optimizers, schedules, clipping, L2 ----------------------------------------------- */

Test(model_train, sgd_momentum_update)
{
    model_set_threads(1);
    model_arch a = harness_arch("test", 2, 3, 3, 5, 1, 4, 3);
    model *m = model_new(&a, 51);
    train_config c;
    train_config_default(&c);
    c.optimizer = MODEL_OPT_SGD;
    c.lr = 0.1f;
    c.momentum = 0.5f;
    c.l2 = 0;
    model_train *t = model_train_new(m, &c, 2);
    cr_assert_eq(model_optim_kind(m), MODEL_OPT_SGD);
    batch b = s_random_batch(&a, 2, 52);
    size_t n;
    float *p = model_train_params(t, &n);
    float *w0 = malloc(n * sizeof *w0), *g1 = malloc(n * sizeof *g1), *w1 = malloc(n * sizeof *w1);
    memcpy(w0, p, n * sizeof *p);
    model_train_compute(t, b.x, b.pi, b.z, b.B, NULL);
    memcpy(g1, model_train_grads(t, &n), n * sizeof *g1);
    train_losses l;
    model_train_step(t, b.x, b.pi, b.z, b.B, &l);
    cr_assert_float_eq(l.lr, 0.1, 1e-7);
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(p[i], w0[i] - 0.1f * g1[i], 1e-6, "%zu", i);
    cr_assert_eq(model_get_meta(m)->step, 1);
    cr_assert_eq(model_optim_steps(m), 1);
    /* Second step: buf = 0.5 g1 + g2. */
    memcpy(w1, p, n * sizeof *p);
    model_train_compute(t, b.x, b.pi, b.z, b.B, NULL);
    const float *g2 = model_train_grads(t, &n);
    float *g2c = malloc(n * sizeof *g2c);
    memcpy(g2c, g2, n * sizeof *g2c);
    model_train_step(t, b.x, b.pi, b.z, b.B, NULL);
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(p[i], w1[i] - 0.1f * (0.5f * g1[i] + g2c[i]), 1e-6, "%zu", i);
    free(w0), free(g1), free(w1), free(g2c);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

Test(model_train, adam_update_and_l2)
{
    model_set_threads(1);
    model_arch a = harness_arch("test", 2, 3, 3, 5, 1, 4, 3);
    model *m = model_new(&a, 61);
    train_config c;
    train_config_default(&c);
    c.lr = 0.01f;
    c.l2 = 0.05f;
    model_train *t = model_train_new(m, &c, 2);
    batch b = s_random_batch(&a, 2, 62);
    size_t n;
    float *p = model_train_params(t, &n);
    float *w0 = malloc(n * sizeof *w0), *g = malloc(n * sizeof *g);
    memcpy(w0, p, n * sizeof *p);
    train_losses l;
    model_train_compute(t, b.x, b.pi, b.z, b.B, &l);
    memcpy(g, model_train_grads(t, &n), n * sizeof *g);
    /* The L2 part from the canonical tensors: weights only. */
    double sq = 0;
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        if (ti.kind != MODEL_TENSOR_WEIGHT)
            continue;
        float *v = malloc(ti.size * sizeof *v);
        model_tensor_read(m, i, v);
        for (size_t k = 0; k < ti.size; k++)
            sq += (double)v[k] * v[k];
        free(v);
    }
    cr_assert_float_eq(l.l2, 0.05 * sq, 1e-6 * sq);
    /* First Adam step: m_hat = g, v_hat = g^2, w -= lr g / (|g| + eps). */
    model_train_step(t, b.x, b.pi, b.z, b.B, NULL);
    for (size_t i = 0; i < n; i++) {
        double want = w0[i] - 0.01 * g[i] / (fabs(g[i]) + 1e-8);
        cr_assert_float_eq(p[i], want, 2e-6, "%zu: %g vs %g", i, (double)p[i], want);
    }
    cr_assert_eq(model_optim_kind(m), MODEL_OPT_ADAM);
    cr_assert_eq(model_optim_slots(m), 2);
    free(w0), free(g);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

Test(model_train, gradient_clipping_by_global_norm)
{
    model_set_threads(1);
    model_arch a = harness_arch("test", 2, 3, 3, 5, 1, 4, 3);
    model *m = model_new(&a, 71);
    train_config c;
    train_config_default(&c);
    c.optimizer = MODEL_OPT_SGD;
    c.momentum = 0;
    c.lr = 1.0f;
    c.clip_norm = 1e-3f;
    model_train *t = model_train_new(m, &c, 2);
    batch b = s_random_batch(&a, 2, 72);
    size_t n;
    float *p = model_train_params(t, &n);
    float *w0 = malloc(n * sizeof *w0);
    memcpy(w0, p, n * sizeof *p);
    train_losses l;
    model_train_step(t, b.x, b.pi, b.z, b.B, &l);
    cr_assert(l.grad_norm > 1e-2, "the test needs a gradient larger than the clip");
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d += ((double)p[i] - w0[i]) * ((double)p[i] - w0[i]);
    cr_assert_float_eq(sqrt(d), 1e-3, 1e-6, "update norm %g", sqrt(d));
    free(w0);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

Test(model_train, learning_rate_schedules)
{
    train_config c;
    train_config_default(&c);
    c.lr = 0.2f;
    cr_assert_float_eq(train_config_lr(&c, 0), 0.2, 1e-7);
    cr_assert_float_eq(train_config_lr(&c, 999999), 0.2, 1e-7);
    c.schedule = MODEL_LR_STEP;
    c.step_every = 10;
    c.step_gamma = 0.5f;
    cr_assert_float_eq(train_config_lr(&c, 9), 0.2, 1e-7);
    cr_assert_float_eq(train_config_lr(&c, 10), 0.1, 1e-7);
    cr_assert_float_eq(train_config_lr(&c, 35), 0.025, 1e-7);
    c.schedule = MODEL_LR_COSINE;
    c.cosine_steps = 100;
    c.lr_min = 0.02f;
    cr_assert_float_eq(train_config_lr(&c, 0), 0.2, 1e-7);
    cr_assert_float_eq(train_config_lr(&c, 50), 0.11, 1e-6);
    cr_assert_float_eq(train_config_lr(&c, 25), 0.02 + 0.18 * (1 + cos(M_PI / 4)) / 2, 1e-6);
    cr_assert_float_eq(train_config_lr(&c, 100), 0.02, 1e-7);
    cr_assert_float_eq(train_config_lr(&c, 5000), 0.02, 1e-7);
    c.warmup_steps = 4;
    cr_assert_float_eq(train_config_lr(&c, 0), 0.2 * 0.25, 1e-7); /* warm-up 1/4 */
    cr_assert_float_eq(train_config_lr(&c, 3), 0.02 + 0.18 * (1 + cos(M_PI * 0.03)) / 2, 1e-6);
    char err[200];
    train_config_default(&c);
    cr_assert_eq(train_config_check(&c, err, sizeof err), 0);
    c.lr = -1;
    cr_assert_eq(train_config_check(&c, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "lr"), "%s", err);
    train_config_default(&c);
    c.optimizer = 7;
    cr_assert_eq(train_config_check(&c, err, sizeof err), KZ_EINVAL);
    model_arch a = harness_arch("test", 2, 3, 3, 5, 1, 4, 3);
    model *m = model_new(&a, 1);
    cr_assert_null(model_train_new(m, &c, 4));
    train_config_default(&c);
    cr_assert_null(model_train_new(m, &c, 0));
    model_destroy(&m);
}

Test(model_train, running_averages_follow_the_batch)
{
    model_set_threads(1);
    model_arch a = harness_arch("test", 3, 4, 4, 7, 1, 5, 4);
    model *m = model_new(&a, 81);
    train_config c;
    train_config_default(&c);
    c.lr = 0; /* weights stay; only the running statistics move */
    c.bn_momentum = 0.25f;
    model_train *t = model_train_new(m, &c, 6);
    batch b = s_random_batch(&a, 6, 82);
    /* The stem's batch statistics, computed independently. */
    int M = 6 * 16, F = 5;
    float w[5 * 3 * 9], wi[27 * 5], *xr = malloc((size_t)M * 3 * sizeof *xr);
    float *z = malloc((size_t)M * F * sizeof *z);
    model_tensor_read(m, model_tensor_find(m, "stem.conv.weight"), w);
    for (int f = 0; f < F; f++)
        for (int ch = 0; ch < 3; ch++)
            for (int k = 0; k < 9; k++)
                wi[(k * 3 + ch) * F + f] = w[(f * 3 + ch) * 9 + k];
    layer_nchw_to_nhwc(xr, b.x, 6, 3, 16);
    layer_conv3x3_forward_naive(z, xr, wi, 6, 4, 4, 3, F);
    model_train_step(t, b.x, b.pi, b.z, b.B, NULL);
    float rm[5], rv[5];
    model_tensor_read(m, model_tensor_find(m, "stem.bn.running_mean"), rm);
    model_tensor_read(m, model_tensor_find(m, "stem.bn.running_var"), rv);
    for (int f = 0; f < F; f++) {
        double s = 0, q = 0;
        for (int i = 0; i < M; i++)
            s += z[i * F + f];
        s /= M;
        for (int i = 0; i < M; i++)
            q += (z[i * F + f] - s) * (z[i * F + f] - s);
        q /= M - 1;
        cr_assert_float_eq(rm[f], 0.25 * s, 1e-5, "mean %d", f);
        cr_assert_float_eq(rv[f], 0.75 + 0.25 * q, 1e-4, "var %d", f);
    }
    free(xr), free(z);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

/* With running statistics equal to one batch's (momentum 1, lr 0), the
 * evaluator on that batch (32 positions of g from seed) reproduces m's
 * training losses (up to the unbiased/biased variance ratio M/(M-1)), and
 * the reference forward its values, which go to v (32). */
static void s_training_agrees(model *m, const game_def *g, uint64_t seed, float *v)
{
    const model_arch *a = model_get_arch(m);
    train_config c;
    train_config_default(&c);
    c.lr = 0;
    c.bn_momentum = 1;
    c.l2 = 0;
    batch b = s_game_batch(g, 32, seed);
    model_train *t = model_train_new(m, &c, 32);
    cr_assert_not_null(t);
    model_train_step(t, b.x, b.pi, b.z, b.B, NULL);
    train_losses l;
    model_train_loss(t, b.x, b.pi, b.z, b.B, &l);
    model_eval *e = model_eval_new(m, 32);
    cr_assert_not_null(e);
    float *logits = malloc((size_t)32 * a->actions * sizeof *logits), vr[32];
    model_eval_run(e, b.x, 32, logits, v);
    model_forward_reference(m, b.x, 32, NULL, vr);
    double pl = layer_policy_loss(NULL, logits, b.pi, 0, 32, a->actions) / 32;
    double vl = layer_value_loss(NULL, v, b.z, 0, 32) / 32;
    cr_assert(fabs(pl - l.policy) < 2e-3 * l.policy, "policy %g vs %g", pl, l.policy);
    cr_assert(fabs(vl - l.value) < 2e-3 * l.value + 1e-4, "value %g vs %g", vl, l.value);
    for (int i = 0; i < 32; i++)
        cr_assert_float_eq(vr[i], v[i], 1e-4, "%d", i);
    free(logits);
    model_eval_destroy(&e);
    model_train_destroy(&t);
    s_free_batch(&b);
}

Test(model_train, training_forward_agrees_with_inference)
{
    model_set_threads(1);
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 2;
    a.filters = 16;
    model *m = model_new(&a, 91);
    float v[32];
    s_training_agrees(m, g, 92, v);
    model_destroy(&m);
}

/* --- The win/draw/loss value head ------------------------------------------------------ */

Test(model_train, wdl_targets_and_values)
{
    float z[5] = {1.0f, 0.0f, -0.5f, 0.25f, 2.0f}, t[15];
    layer_wdl_target(t, z, 5);
    const float want[15] = {1, 0, 0, 0, 1, 0, 0, 0.5f, 0.5f, 0.25f, 0.75f, 0, 1, 0, 0};
    for (int i = 0; i < 15; i++)
        cr_assert_float_eq(t[i], want[i], 1e-7, "t[%d] %g", i, (double)t[i]);
    float l[9] = {0, 0, 0, 80, 0, -80, 1e30f, 1e30f, -1e30f}, v[3];
    layer_wdl_value(v, l, 3);
    cr_assert_float_eq(v[0], 0.0f, 1e-7);
    cr_assert_float_eq(v[1], 1.0f, 1e-6);
    cr_assert_float_eq(v[2], 0.5f, 1e-6, "stable for huge logits: %g", (double)v[2]);
}

Test(model_train, wdl_head_gradient_matches_finite_differences)
{
    /* The value head ends in 3 logits and a cross-entropy against the
     * targets made from z (an outcome each of win, draw, loss, and a mixed
     * value): every parameter, the head's and the tower's. */
    model_set_threads(1);
    model_arch a = harness_arch("test", 3, 3, 4, 10, 2, 4, 5);
    a.value_filters = 2;
    a.value_wdl = 1;
    model *m = model_new(&a, 61);
    train_config c;
    train_config_default(&c);
    c.l2 = 0.01f;
    model_train *t = model_train_new(m, &c, 4);
    cr_assert_not_null(t);
    batch b = s_random_batch(&a, 4, 62);
    b.z[0] = 1, b.z[1] = 0, b.z[2] = -1, b.z[3] = 0.3f;
    train_losses l;
    model_train_compute(t, b.x, b.pi, b.z, b.B, &l);
    cr_assert(l.value > 0 && l.policy > 0 && l.l2 > 0);
    cr_assert_float_eq(l.total, l.value + l.policy + l.l2, 1e-9);
    size_t n;
    model_train_params(t, &n);
    cr_assert_eq(n, model_arch_param_count(&a));
    s_gradcheck(t, m, &b, 0, 1e-4, 1e-2, 63);
    s_free_batch(&b);
    model_train_destroy(&t);
    model_destroy(&m);
}

Test(model_train, wdl_training_forward_agrees_with_inference)
{
    /* As training_forward_agrees_with_inference, with the WDL head: the
     * evaluator's values are P(win) - P(loss) of the reference's
     * probabilities, and their cross-entropy is the training value loss. */
    model_set_threads(1);
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 16;
    a.value_wdl = 1;
    model *m = model_new(&a, 71);
    train_config c;
    train_config_default(&c);
    c.lr = 0;
    c.bn_momentum = 1;
    c.l2 = 0;
    batch b = s_game_batch(g, 32, 72);
    for (int i = 0; i < 32; i += 3)
        b.z[i] = 0; /* some draws */
    model_train *t = model_train_new(m, &c, 32);
    model_train_step(t, b.x, b.pi, b.z, b.B, NULL);
    train_losses l;
    model_train_loss(t, b.x, b.pi, b.z, b.B, &l);
    model_eval *e = model_eval_new(m, 32);
    float *logits = malloc((size_t)32 * a.actions * sizeof *logits), v[32], wdl[96], tg[96];
    float vr[32];
    model_eval_run(e, b.x, 32, logits, v);
    cr_assert_eq(model_forward_reference_wdl(m, b.x, 32, wdl), 0);
    model_forward_reference(m, b.x, 32, NULL, vr);
    layer_wdl_target(tg, b.z, 32);
    double ce = 0;
    for (int i = 0; i < 32; i++) {
        cr_assert_float_eq(v[i], wdl[3 * i] - wdl[3 * i + 2], 1e-4, "%d: %g", i, (double)v[i]);
        cr_assert_float_eq(vr[i], v[i], 1e-4);
        cr_assert(v[i] >= -1 && v[i] <= 1);
        for (int k = 0; k < 3; k++)
            ce -= tg[3 * i + k] * log(wdl[3 * i + k]);
    }
    ce /= 32;
    cr_assert(fabs(ce - l.value) < 2e-3 * l.value + 1e-4, "value %g vs %g", ce, l.value);
    free(logits);
    model_eval_destroy(&e);
    model_train_destroy(&t);
    s_free_batch(&b);
    model_destroy(&m);
}

Test(model_train, wdl_head_learns_draws)
{
    /* 24 positions, a third drawn: after training, the head gives each its
     * own outcome the largest probability (draws included, which a tanh
     * head can only express as 0). */
    model_set_threads(1);
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 16;
    a.value_wdl = 1;
    model *m = model_new(&a, 81);
    train_config c;
    train_config_default(&c);
    c.lr = 3e-3f;
    c.l2 = 0;
    batch b = s_game_batch(g, 24, 82);
    for (int i = 0; i < 24; i += 3)
        b.z[i] = 0;
    model_train *t = model_train_new(m, &c, 24);
    train_losses first, last;
    model_train_loss(t, b.x, b.pi, b.z, b.B, &first);
    for (int s = 0; s < 300; s++)
        model_train_step(t, b.x, b.pi, b.z, b.B, &last);
    /* Batch norm in inference needs running statistics of this batch. */
    train_config c1 = c;
    c1.lr = 0;
    c1.bn_momentum = 1;
    model_train_set_config(t, &c1);
    model_train_step(t, b.x, b.pi, b.z, b.B, &last);
    cr_assert(last.value < 0.25 * first.value, "value loss %g -> %g", first.value, last.value);
    float wdl[72];
    cr_assert_eq(model_forward_reference_wdl(m, b.x, 24, wdl), 0);
    for (int i = 0; i < 24; i++) {
        int want = b.z[i] > 0 ? 0 : b.z[i] < 0 ? 2 : 1;
        for (int k = 0; k < 3; k++)
            cr_assert(k == want || wdl[3 * i + want] > wdl[3 * i + k],
                      "position %d (z %g): %.3f %.3f %.3f", i, (double)b.z[i],
                      (double)wdl[3 * i], (double)wdl[3 * i + 1], (double)wdl[3 * i + 2]);
    }
    model_train_destroy(&t);
    s_free_batch(&b);
    model_destroy(&m);
}

/* --- Overfitting and resuming ---------------------------------------------------------- */

#define OVERFIT_STEPS 150

Test(model_train, overfits_64_positions, .timeout = 600)
{
    /* 64 distinct Khreibaga positions with one-hot policy targets and +-1
     * outcomes; a 2x32 tower, Adam at 3e-3, no L2, full batch: the loss
     * (value + policy) falls below 0.05 within OVERFIT_STEPS steps. */
    model_set_threads(1);
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 2;
    a.filters = 32;
    model *m = model_new(&a, 101);
    train_config c;
    train_config_default(&c);
    c.lr = 3e-3f;
    c.l2 = 0;
    batch b = s_game_batch(g, 64, 102);
    model_train *t = model_train_new(m, &c, 64);
    train_losses first, l;
    model_train_loss(t, b.x, b.pi, b.z, b.B, &first);
    int step;
    for (step = 0; step < OVERFIT_STEPS; step++) {
        model_train_step(t, b.x, b.pi, b.z, b.B, &l);
        if (l.value + l.policy < 0.05)
            break;
    }
    cr_log_info("overfit: loss %.3f -> %.4f in %d steps", first.total, l.value + l.policy,
                step + 1);
    cr_assert(first.policy > 5.0, "starts near log(625): %g", first.policy);
    cr_assert(l.value + l.policy < 0.05, "loss %g after %d steps", l.value + l.policy, step);
    /* The evaluator (running statistics) agrees: the target action is the
     * most probable one for (almost) every position. */
    model_eval *e = model_eval_new(m, 64);
    float *logits = malloc((size_t)64 * a.actions * sizeof *logits), v[64];
    model_eval_run(e, b.x, 64, logits, v);
    int hits = 0, signs = 0;
    for (int i = 0; i < 64; i++) {
        int best = 0;
        for (int k = 1; k < a.actions; k++)
            best = logits[i * a.actions + k] > logits[i * a.actions + best] ? k : best;
        hits += b.pi[i * a.actions + best] == 1.0f;
        signs += (v[i] > 0) == (b.z[i] > 0);
    }
    cr_assert(hits >= 60 && signs >= 60, "inference: %d/64 policies, %d/64 values", hits, signs);
    free(logits);
    model_eval_destroy(&e);
    model_train_destroy(&t);
    s_free_batch(&b);
    model_destroy(&m);
}

static void s_resume_case(int optimizer)
{
    model_set_threads(1);
    model_arch a = harness_arch("test", 4, 4, 5, 12, 2, 8, 6);
    model *m = model_new(&a, 111);
    train_config c;
    train_config_default(&c);
    c.optimizer = optimizer;
    c.lr = 0.01f;
    c.schedule = MODEL_LR_COSINE;
    c.cosine_steps = 20;
    c.clip_norm = 5;
    batch b1 = s_random_batch(&a, 8, 112), b2 = s_random_batch(&a, 8, 113);
    model_train *t = model_train_new(m, &c, 8);
    for (int i = 0; i < 5; i++)
        model_train_step(t, (i & 1 ? b1 : b2).x, (i & 1 ? b1 : b2).pi, (i & 1 ? b1 : b2).z, 8,
                         NULL);
    /* Checkpoint, then both the original and the reloaded copy go on. */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_encode(m, true, &buf, &len), 0);
    model *r = NULL;
    char err[300];
    cr_assert_eq(modelfile_from_bytes(buf, len, NULL, &r, err, sizeof err), 0, "%s", err);
    free(buf);
    cr_assert_eq(model_get_meta(r)->step, 5);
    cr_assert_eq(model_optim_kind(r), optimizer);
    cr_assert_eq(model_optim_steps(r), 5);
    model_train *tr = model_train_new(r, &c, 8);
    for (int i = 5; i < 12; i++) {
        batch *bb = i & 1 ? &b1 : &b2;
        model_train_step(t, bb->x, bb->pi, bb->z, 8, NULL);
        model_train_step(tr, bb->x, bb->pi, bb->z, 8, NULL);
    }
    size_t n1, n2;
    float *p1 = model_train_params(t, &n1), *p2 = model_train_params(tr, &n2);
    cr_assert_eq(n1, n2);
    cr_assert(memcmp(p1, p2, n1 * sizeof *p1) == 0, "weights differ after resuming");
    cr_assert_eq(model_checksum(m), model_checksum(r));
    cr_assert_eq(model_get_meta(r)->step, 12);
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        if (ti.kind == MODEL_TENSOR_STAT)
            continue;
        float *x = malloc(ti.size * sizeof *x), *y = malloc(ti.size * sizeof *y);
        for (int s = 0; s < model_optim_slots(m); s++) {
            model_optim_read(m, s, i, x);
            model_optim_read(r, s, i, y);
            cr_assert(memcmp(x, y, ti.size * sizeof *x) == 0, "slot %d of %s", s, ti.name);
        }
        free(x), free(y);
    }
    /* A published copy has no optimizer state: resuming from it would not
     * be exact, and it says so by having none. */
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    model *pub = NULL;
    cr_assert_eq(modelfile_from_bytes(buf, len, NULL, &pub, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_optim_kind(pub), MODEL_OPT_NONE);
    cr_assert_eq(model_checksum(pub), model_checksum(m));
    free(buf);
    model_destroy(&pub);
    model_train_destroy(&t);
    model_train_destroy(&tr);
    s_free_batch(&b1);
    s_free_batch(&b2);
    model_destroy(&m);
    model_destroy(&r);
}

Test(model_train, checkpoint_resume_is_exact_adam) { s_resume_case(MODEL_OPT_ADAM); }
Test(model_train, checkpoint_resume_is_exact_sgd) { s_resume_case(MODEL_OPT_SGD); }

Test(model_train, optimizer_change_resets_state)
{
    model_arch a = harness_arch("test", 2, 3, 3, 5, 1, 4, 3);
    model *m = model_new(&a, 121);
    train_config c;
    train_config_default(&c);
    c.optimizer = MODEL_OPT_SGD;
    model_train *t = model_train_new(m, &c, 2);
    batch b = s_random_batch(&a, 2, 122);
    model_train_step(t, b.x, b.pi, b.z, 2, NULL);
    cr_assert_eq(model_optim_steps(m), 1);
    model_train_destroy(&t);
    c.optimizer = MODEL_OPT_ADAM;
    t = model_train_new(m, &c, 2);
    cr_assert_eq(model_optim_kind(m), MODEL_OPT_ADAM);
    cr_assert_eq(model_optim_steps(m), 0);
    c.lr = 0.5f;
    cr_assert_eq(model_train_set_config(t, &c), 0);
    train_losses l;
    model_train_step(t, b.x, b.pi, b.z, 2, &l);
    cr_assert_float_eq(l.lr, 0.5, 1e-7);
    c.optimizer = MODEL_OPT_SGD;
    cr_assert_eq(model_train_set_config(t, &c), KZ_EINVAL);
    model_train_destroy(&t);
    s_free_batch(&b);
    model_destroy(&m);
}

/* --- Derived input planes (game_def.derive_planes) ---------------------------------- */

Test(model_train, derived_planes_training_forward_agrees_with_inference)
{
    /* A network that derives Khreibaga's capture planes: callers still hand
     * it the game's 7 planes; training, the evaluator and the reference
     * forward all see the 11 and agree (as training_forward_agrees_with_
     * inference); the derived planes change what it computes. */
    model_set_threads(1);
    const game_def *g = game_default();
    cr_assert_gt(g->derived_planes, 0);
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 16;
    a.derived_planes = g->derived_planes;
    a.in_planes = g->planes + g->derived_planes;
    char err[200];
    cr_assert_eq(model_arch_check_game(&a, g, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_arch_game_planes(&a), g->planes);
    model *m = model_new(&a, 81);
    cr_assert_not_null(m);
    float vr[32];
    s_training_agrees(m, g, 82, vr);
    batch b = s_game_batch(g, 32, 82);
    /* The stem's weights on the derived planes zeroed: the values move (the
     * planes reach the network) for the positions with a capture. */
    int stem = model_tensor_find(m, "stem.conv.weight");
    cr_assert_geq(stem, 0);
    model_tensor_info ti;
    model_tensor_info_get(m, stem, &ti);
    cr_assert_eq(ti.shape[1], a.in_planes);
    float *w = malloc(ti.size * sizeof *w);
    model_tensor_read(m, stem, w);
    for (int f = 0; f < ti.shape[0]; f++)
        for (int ch = g->planes; ch < a.in_planes; ch++)
            for (int k = 0; k < 9; k++)
                w[((size_t)f * a.in_planes + ch) * 9 + k] = 0;
    model_tensor_write(m, stem, w);
    float v2[32];
    model_forward_reference(m, b.x, 32, NULL, v2);
    int moved = 0;
    for (int i = 0; i < 32; i++)
        moved += fabsf(v2[i] - vr[i]) > 1e-5f;
    cr_assert_gt(moved, 0, "the derived planes change no value");
    free(w);
    s_free_batch(&b);
    model_destroy(&m);
}
