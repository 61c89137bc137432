/* Tests of nn/layer: every BLAS-based op against its naive twin, and
 * every backward pass against central finite differences of its forward. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layer.h"
#include "common/util.h"

static float *s_rand(rng_t *r, size_t n, double scale)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(rng_normal(r) * scale);
    return p;
}

static float *s_zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static double s_dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static void s_assert_close(const float *got, const float *want, size_t n, double atol,
                           double rtol, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        cr_assert(d <= atol + rtol * fabs(want[i]), "%s[%zu]: %.7g vs %.7g", what, i,
                  (double)got[i], (double)want[i]);
    }
}

/* A scalar loss of the current inputs: sum(r * f(inputs)). */
typedef double (*loss_fn)(void *ctx);

/* Checks grad (n) of `param` against central differences of f on every
 * coordinate (or every `stride`-th). */
static void s_gradcheck(const char *what, float *param, const float *grad, size_t n,
                        loss_fn f, void *ctx, float eps, double atol, double rtol)
{
    for (size_t i = 0; i < n; i++) {
        float keep = param[i];
        param[i] = keep + eps;
        double lp = f(ctx);
        param[i] = keep - eps;
        double lm = f(ctx);
        param[i] = keep;
        double num = (lp - lm) / (2.0 * eps);
        cr_assert(fabs(num - grad[i]) <= atol + rtol * fabs(num),
                  "%s: d/d[%zu] analytic %.6g, numeric %.6g", what, i, (double)grad[i], num);
    }
}

/* --- Convolution ------------------------------------------------------------------ */

typedef struct conv_ctx {
    float *in, *w, *r, *out;
    int N, H, W, C, F;
} conv_ctx;

static double s_conv_loss(void *p)
{
    conv_ctx *c = p;
    layer_conv3x3_forward_naive(c->out, c->in, c->w, c->N, c->H, c->W, c->C, c->F);
    return s_dot(c->out, c->r, (size_t)c->N * c->H * c->W * c->F);
}

Test(model_layers, conv3x3_blas_equals_naive)
{
    rng_t r;
    rng_seed(&r, 1);
    /* Odd shapes, a non-square board and a chunk size that splits the batch. */
    int shapes[][5] = {{3, 5, 5, 7, 16}, {2, 3, 4, 3, 5}, {5, 8, 8, 4, 6}, {1, 1, 1, 2, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], H = shapes[s][1], W = shapes[s][2], C = shapes[s][3];
        int F = shapes[s][4], HW = H * W, big = C > F ? C : F;
        size_t M = (size_t)N * HW;
        float *in = s_rand(&r, M * C, 1.0), *w = s_rand(&r, (size_t)9 * C * F, 0.3);
        float *out = s_zeros(M * F), *ref = s_zeros(M * F);
        size_t colf = (size_t)HW * 9 * big * 2; /* two positions per chunk */
        float *col = s_zeros(colf), *wflip = s_zeros((size_t)9 * C * F);
        layer_conv3x3_forward(out, col, colf, in, w, N, H, W, C, F);
        layer_conv3x3_forward_naive(ref, in, w, N, H, W, C, F);
        s_assert_close(out, ref, M * F, 1e-4, 1e-4, "conv forward");
        /* Backward against the naive backward (both accumulate: start from 1s). */
        float *dout = s_rand(&r, M * F, 1.0);
        float *din = s_zeros(M * C), *dw = s_zeros((size_t)9 * C * F);
        float *din_ref = s_zeros(M * C), *dw_ref = s_zeros((size_t)9 * C * F);
        for (size_t i = 0; i < M * C; i++)
            din[i] = din_ref[i] = 1.0f;
        layer_conv3x3_backward(din, dw, col, colf, wflip, dout, in, w, N, H, W, C, F);
        layer_conv3x3_backward_naive(din_ref, dw_ref, dout, in, w, N, H, W, C, F);
        s_assert_close(din, din_ref, M * C, 1e-4, 1e-4, "conv din");
        s_assert_close(dw, dw_ref, (size_t)9 * C * F, 1e-3, 1e-4, "conv dw");
        free(in), free(w), free(out), free(ref), free(col), free(wflip), free(dout);
        free(din), free(dw), free(din_ref), free(dw_ref);
    }
}

Test(model_layers, conv3x3_is_cross_correlation_with_zero_padding)
{
    /* One input channel, one filter: a single 1 at kernel (ky, kx) = (0, 2)
     * makes out(y, x) = in(y - 1, x + 1), zero off the board. */
    int H = 3, W = 4;
    float in[12], w[9] = {0}, out[12];
    for (int i = 0; i < 12; i++)
        in[i] = (float)(i + 1);
    w[0 * 3 + 2] = 1.0f;
    layer_conv3x3_forward_naive(out, in, w, 1, H, W, 1, 1);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int yy = y - 1, xx = x + 1;
            float want = yy >= 0 && xx < W ? in[yy * W + xx] : 0.0f;
            cr_assert_eq(out[y * W + x], want, "(%d,%d)", y, x);
        }
}

Test(model_layers, conv3x3_gradients_match_finite_differences)
{
    rng_t r;
    rng_seed(&r, 2);
    conv_ctx c = {.N = 2, .H = 3, .W = 4, .C = 3, .F = 4};
    size_t M = (size_t)c.N * c.H * c.W, nin = M * c.C, nw = (size_t)9 * c.C * c.F;
    c.in = s_rand(&r, nin, 1.0);
    c.w = s_rand(&r, nw, 0.5);
    c.r = s_rand(&r, M * c.F, 1.0);
    c.out = s_zeros(M * c.F);
    size_t colf = (size_t)c.H * c.W * 9 * 4 * c.N;
    float *col = s_zeros(colf), *wflip = s_zeros(nw), *din = s_zeros(nin), *dw = s_zeros(nw);
    layer_conv3x3_backward(din, dw, col, colf, wflip, c.r, c.in, c.w, c.N, c.H, c.W, c.C, c.F);
    s_gradcheck("conv din", c.in, din, nin, s_conv_loss, &c, 1e-2f, 1e-3, 1e-3);
    s_gradcheck("conv dw", c.w, dw, nw, s_conv_loss, &c, 1e-2f, 1e-3, 1e-3);
    free(c.in), free(c.w), free(c.r), free(c.out), free(col), free(wflip), free(din), free(dw);
}

/* --- Linear ------------------------------------------------------------------------ */

typedef struct lin_ctx {
    float *in, *w, *b, *r, *out;
    int M, K, N;
} lin_ctx;

static double s_lin_loss(void *p)
{
    lin_ctx *c = p;
    layer_linear_forward_naive(c->out, c->in, c->w, c->b, c->M, c->K, c->N);
    return s_dot(c->out, c->r, (size_t)c->M * c->N);
}

Test(model_layers, linear_blas_equals_naive_and_gradients)
{
    rng_t r;
    rng_seed(&r, 3);
    lin_ctx c = {.M = 5, .K = 7, .N = 6};
    size_t nin = (size_t)c.M * c.K, nw = (size_t)c.K * c.N, nout = (size_t)c.M * c.N;
    c.in = s_rand(&r, nin, 1.0);
    c.w = s_rand(&r, nw, 0.5);
    c.b = s_rand(&r, (size_t)c.N, 0.5);
    c.r = s_rand(&r, nout, 1.0);
    c.out = s_zeros(nout);
    float *out = s_zeros(nout);
    layer_linear_forward(out, c.in, c.w, c.b, c.M, c.K, c.N);
    s_lin_loss(&c);
    s_assert_close(out, c.out, nout, 1e-5, 1e-5, "linear forward");
    layer_linear_forward(out, c.in, c.w, NULL, c.M, c.K, c.N);
    for (int m = 0; m < c.M; m++)
        for (int n = 0; n < c.N; n++)
            cr_assert_float_eq(out[m * c.N + n] + c.b[n], c.out[m * c.N + n], 1e-5);
    float *din = s_zeros(nin), *dw = s_zeros(nw), *db = s_zeros((size_t)c.N);
    float *din2 = s_zeros(nin), *dw2 = s_zeros(nw), *db2 = s_zeros((size_t)c.N);
    layer_linear_backward(din, dw, db, c.r, c.in, c.w, c.M, c.K, c.N);
    layer_linear_backward_naive(din2, dw2, db2, c.r, c.in, c.w, c.M, c.K, c.N);
    s_assert_close(din, din2, nin, 1e-5, 1e-5, "linear din");
    s_assert_close(dw, dw2, nw, 1e-5, 1e-5, "linear dw");
    s_assert_close(db, db2, (size_t)c.N, 1e-5, 1e-5, "linear db");
    s_gradcheck("linear din", c.in, din, nin, s_lin_loss, &c, 1e-2f, 1e-3, 1e-3);
    s_gradcheck("linear dw", c.w, dw, nw, s_lin_loss, &c, 1e-2f, 1e-3, 1e-3);
    s_gradcheck("linear db", c.b, db, (size_t)c.N, s_lin_loss, &c, 1e-2f, 1e-3, 1e-3);
    free(c.in), free(c.w), free(c.b), free(c.r), free(c.out), free(out);
    free(din), free(dw), free(db), free(din2), free(dw2), free(db2);
}

/* --- Batch norm ---------------------------------------------------------------------- */

typedef struct bn_ctx {
    float *in, *gamma, *beta, *r, *out, *mean, *var, *rstd;
    int M, F;
} bn_ctx;

static double s_bn_loss(void *p)
{
    bn_ctx *c = p;
    layer_bn_forward_train(c->out, c->mean, c->var, c->rstd, c->in, c->gamma, c->beta, 1e-5f,
                           c->M, c->F);
    return s_dot(c->out, c->r, (size_t)c->M * c->F);
}

/* Batch norm on M rows of F channels (F = 3, 16 and 21 cover the scalar, the
 * vector and the mixed code paths). */
static void s_bn_case(int M, int F, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    bn_ctx c = {.M = M, .F = F};
    size_t n = (size_t)c.M * c.F;
    c.in = s_rand(&r, n, 2.0);
    for (size_t i = 0; i < n; i++)
        c.in[i] += 3.0f * (float)(i % F % 3); /* per-channel offsets */
    c.gamma = s_rand(&r, (size_t)F, 1.0);
    c.beta = s_rand(&r, (size_t)F, 1.0);
    c.r = s_rand(&r, n, 1.0);
    c.out = s_zeros(n);
    c.mean = s_zeros((size_t)F), c.var = s_zeros((size_t)F), c.rstd = s_zeros((size_t)F);
    s_bn_loss(&c);
    /* Statistics computed independently. */
    for (int f = 0; f < c.F; f++) {
        double s = 0, q = 0;
        for (int m = 0; m < c.M; m++)
            s += c.in[m * c.F + f];
        s /= c.M;
        for (int m = 0; m < c.M; m++)
            q += (c.in[m * c.F + f] - s) * (c.in[m * c.F + f] - s);
        q /= c.M;
        cr_assert_float_eq(c.mean[f], s, 1e-5);
        cr_assert_float_eq(c.var[f], q, 1e-4);
        for (int m = 0; m < c.M; m++) {
            double want = c.gamma[f] * (c.in[m * c.F + f] - s) / sqrt(q + 1e-5) + c.beta[f];
            cr_assert_float_eq(c.out[m * c.F + f], want, 1e-4);
        }
    }
    float *din = s_zeros(n), *dg = s_zeros((size_t)F), *db = s_zeros((size_t)F);
    layer_bn_backward(din, dg, db, c.r, c.in, c.mean, c.rstd, c.gamma, c.M, c.F);
    s_gradcheck("bn din", c.in, din, n, s_bn_loss, &c, 1e-2f, 2e-3, 5e-3);
    s_gradcheck("bn dgamma", c.gamma, dg, (size_t)F, s_bn_loss, &c, 1e-2f, 2e-3, 5e-3);
    s_gradcheck("bn dbeta", c.beta, db, (size_t)F, s_bn_loss, &c, 1e-2f, 2e-3, 5e-3);
    /* Running averages: (1 - m) old + m batch, variance unbiased. */
    float *rm = s_zeros((size_t)F), *rv = s_zeros((size_t)F);
    for (int f = 0; f < F; f++)
        rm[f] = (float)(f + 1), rv[f] = (float)(f + 4);
    s_bn_loss(&c);
    layer_bn_update_running(rm, rv, c.mean, c.var, 0.25f, c.M, c.F);
    for (int f = 0; f < F; f++) {
        cr_assert_float_eq(rm[f], 0.75 * (f + 1) + 0.25 * c.mean[f], 1e-5);
        cr_assert_float_eq(rv[f], 0.75 * (f + 4) + 0.25 * c.var[f] * M / (M - 1.0), 1e-4);
    }
    /* Eval mode equals train mode when the running stats are the batch's. */
    float *ev = s_zeros(n);
    layer_bn_forward_eval(ev, c.in, c.gamma, c.beta, c.mean, c.var, 1e-5f, c.M, c.F);
    s_assert_close(ev, c.out, n, 1e-4, 1e-4, "bn eval");
    free(c.in), free(c.gamma), free(c.beta), free(c.r), free(c.out), free(c.mean), free(c.var);
    free(c.rstd), free(din), free(dg), free(db), free(ev), free(rm), free(rv);
}

Test(model_layers, batchnorm_train_statistics_and_gradients)
{
    s_bn_case(13, 3, 4);
    s_bn_case(70, 16, 5); /* more rows than one float block of the sums */
    s_bn_case(9, 21, 6);
}

/* --- Activations and losses ---------------------------------------------------------- */

typedef struct act_ctx {
    float *in, *r, *out;
    size_t n;
    bool tanh_;
} act_ctx;

static double s_act_loss(void *p)
{
    act_ctx *c = p;
    if (c->tanh_)
        layer_tanh_forward(c->out, c->in, c->n);
    else
        layer_relu_forward(c->out, c->in, c->n);
    return s_dot(c->out, c->r, c->n);
}

Test(model_layers, relu_and_tanh_gradients)
{
    rng_t r;
    rng_seed(&r, 5);
    for (int k = 0; k < 2; k++) {
        act_ctx c = {.n = 40, .tanh_ = k == 1};
        c.in = s_rand(&r, c.n, 1.0);
        for (size_t i = 0; i < c.n; i++) /* keep away from ReLU's kink */
            c.in[i] += c.in[i] > 0 ? 0.05f : -0.05f;
        c.r = s_rand(&r, c.n, 1.0);
        c.out = s_zeros(c.n);
        s_act_loss(&c);
        for (size_t i = 0; i < c.n; i++)
            cr_assert_float_eq(c.out[i], k ? tanh(c.in[i]) : (c.in[i] > 0 ? c.in[i] : 0), 1e-6);
        float *din = s_zeros(c.n);
        if (k)
            layer_tanh_backward(din, c.r, c.out, c.n);
        else
            layer_relu_backward(din, c.r, c.out, c.n);
        s_gradcheck(k ? "tanh" : "relu", c.in, din, c.n, s_act_loss, &c, 1e-3f, 1e-3, 1e-3);
        free(c.in), free(c.r), free(c.out), free(din);
    }
}

typedef struct loss_ctx {
    float *logits, *pi, *v, *z;
    int B, A;
} loss_ctx;

static double s_policy_loss(void *p)
{
    loss_ctx *c = p;
    return layer_policy_loss(NULL, c->logits, c->pi, 0, c->B, c->A);
}

static double s_value_loss(void *p)
{
    loss_ctx *c = p;
    return layer_value_loss(NULL, c->v, c->z, 0, c->B);
}

Test(model_layers, policy_and_value_losses)
{
    rng_t r;
    rng_seed(&r, 6);
    loss_ctx c = {.B = 3, .A = 9};
    size_t n = (size_t)c.B * c.A;
    c.logits = s_rand(&r, n, 2.0);
    c.pi = s_zeros(n);
    for (int b = 0; b < c.B; b++) { /* a distribution over a few actions */
        double s = 0;
        for (int a = 0; a < c.A; a += 2)
            s += c.pi[b * c.A + a] = (float)rng_uniform(&r);
        for (int a = 0; a < c.A; a++)
            c.pi[b * c.A + a] /= (float)s;
    }
    /* The loss from its definition. */
    double want = 0;
    for (int b = 0; b < c.B; b++) {
        double z = 0;
        for (int a = 0; a < c.A; a++)
            z += exp(c.logits[b * c.A + a]);
        for (int a = 0; a < c.A; a++)
            want -= c.pi[b * c.A + a] * (c.logits[b * c.A + a] - log(z));
    }
    cr_assert_float_eq(s_policy_loss(&c), want, 1e-5);
    float *dl = s_zeros(n);
    layer_policy_loss(dl, c.logits, c.pi, 1.0f, c.B, c.A);
    s_gradcheck("policy loss", c.logits, dl, n, s_policy_loss, &c, 1e-3f, 1e-3, 1e-3);
    /* Huge logits stay finite. */
    float big[3] = {1000.0f, -1000.0f, 999.0f}, p3[3] = {0, 0, 1};
    double l = layer_policy_loss(NULL, big, p3, 0, 1, 3);
    cr_assert(isfinite(l) && fabs(l - (1.0 + log1p(exp(-1.0)))) < 1e-4, "loss %g", l);

    c.v = s_rand(&r, (size_t)c.B, 0.5);
    c.z = s_rand(&r, (size_t)c.B, 0.5);
    double vw = 0;
    for (int b = 0; b < c.B; b++)
        vw += (c.z[b] - c.v[b]) * (c.z[b] - c.v[b]);
    cr_assert_float_eq(s_value_loss(&c), vw, 1e-6);
    float *dv = s_zeros((size_t)c.B);
    layer_value_loss(dv, c.v, c.z, 1.0f, c.B);
    s_gradcheck("value loss", c.v, dv, (size_t)c.B, s_value_loss, &c, 1e-3f, 1e-3, 1e-3);
    free(c.logits), free(c.pi), free(c.v), free(c.z), free(dl), free(dv);
}

Test(model_layers, layout_conversions_are_inverse)
{
    rng_t r;
    rng_seed(&r, 7);
    int N = 2, C = 3, HW = 5;
    float *a = s_rand(&r, 30, 1.0), *b = s_zeros(30), *c = s_zeros(30);
    layer_nchw_to_nhwc(b, a, N, C, HW);
    cr_assert_eq(b[(1 * HW + 4) * C + 2], a[(1 * C + 2) * HW + 4]);
    layer_nhwc_to_nchw(c, b, N, C, HW);
    cr_assert(memcmp(a, c, 30 * sizeof *a) == 0);
    free(a), free(b), free(c);
}
