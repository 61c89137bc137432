/* Tests of nn/kernel: the AVX-512 fp32 and bf16 kernels against their
 * naive twin on many shapes (3x3 and pointwise, boards from 1x1 to 8x8,
 * channel counts that fill whole and partial vectors, one row to many
 * tiles), with and without skip and ReLU, in place; the bf16 rounding; and
 * the board's tiling order. Paths the CPU lacks are skipped, and the test
 * says so on stderr. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kernel.h"
#include "common/util.h"

static float *s_rand(rng_t *r, size_t n, double scale)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(rng_normal(r) * scale);
    return p;
}

static float *s_abs(const float *x, size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = fabsf(x[i]);
    return p;
}

/* True when precision bf16 (or fp32) runs here; otherwise says it is skipped. */
static bool s_can(bool bf16, const char *test)
{
    if (kernel_cpu_has(bf16 ? KERNEL_BF16 : KERNEL_AVX512))
        return true;
    fprintf(stderr, "test_kernels %s: %s kernels skipped (the CPU lacks %s)\n", test,
            bf16 ? "bf16" : "fp32", bf16 ? "AVX512_BF16" : "AVX-512 F/BW/DQ/VL");
    return false;
}

/* One case: a kernel run against the naive twin, within the bound of
 * kernel.h: fp32 1e-5 S; bf16 (2^-7 + 2^-16) P + (K + 3) 2^-24 (1 + 2^-6) S,
 * where P = sum |in w| (the products) and S = P + |bias| + |skip|, both
 * computed by the naive twin on absolute values; bf16 output rows add 2^-8
 * of the value. Returns the largest error over its bound. */
static double s_case(rng_t *r, bool bf16, int N, int H, int W, int taps, int C, int F, bool skip,
                     bool relu, bool in_place)
{
    int HW = H * W, Cp = (C + 1) & ~1;
    size_t rows = (size_t)N * HW, K = (size_t)taps * C;
    float *in = s_rand(r, rows * C, 1.0), *w = s_rand(r, K * F, 1.0 / sqrt((double)K));
    float *bias = s_rand(r, F, 0.5), *sk = skip ? s_rand(r, rows * F, 1.0) : NULL;
    float *want = malloc(rows * F * sizeof *want), *P = malloc(rows * F * sizeof *P);
    float *S = malloc(rows * F * sizeof *S);
    float *ain = s_abs(in, rows * C), *aw = s_abs(w, K * F), *ab = s_abs(bias, F);
    float *ask = skip ? s_abs(sk, rows * F) : NULL;
    kernel_conv_naive(want, in, sk, w, bias, relu, N, H, W, taps, C, F);
    kernel_conv_naive(P, ain, NULL, aw, NULL, false, N, H, W, taps, C, F);
    kernel_conv_naive(S, ain, ask, aw, ab, false, N, H, W, taps, C, F);
    /* Step 1. The kernel. In place: out is the skip buffer itself. */
    kernel_board *b = kernel_board_new(H, W, taps);
    kernel_conv k;
    cr_assert_eq(kernel_conv_init(&k, w, bias, taps, C, F, bf16), 0);
    float *out = in_place ? sk : malloc(rows * F * sizeof *out);
    uint16_t *inb = NULL, *outb = NULL;
    if (bf16) {
        inb = calloc(rows * Cp, sizeof *inb);
        for (size_t i = 0; i < rows; i++)
            kernel_bf16_pack(inb + i * Cp, in + i * C, (size_t)C);
        if (F % 2 == 0)
            outb = malloc(rows * F * sizeof *outb);
    }
    kernel_io io = {.in = in, .inb = inb, .skip = sk, .out = out, .outb = outb, .N = N,
                    .relu = relu};
    kernel_conv_run(&k, b, &io);
    /* Step 2. Every output within its bound. */
    double worst = 0;
    for (size_t i = 0; i < rows * F; i++) {
        double bound = bf16 ? (0x1p-7 + 0x1p-16) * P[i] + (K + 3) * 0x1p-24 * (1 + 0x1p-6) * S[i]
                            : 1e-5 * S[i];
        bound += 1e-30; /* an all-zero row */
        double err = fabs((double)out[i] - want[i]);
        cr_assert(err <= bound, "%s N%d %dx%d taps %d C%d F%d: out[%zu] %.8g vs %.8g (bound %.3g)",
                  bf16 ? "bf16" : "fp32", N, H, W, taps, C, F, i, (double)out[i],
                  (double)want[i], bound);
        worst = err / bound > worst ? err / bound : worst;
        if (outb) {
            double eb = fabs((double)kernel_f32_from_bf16(outb[i]) - want[i]);
            cr_assert(eb <= bound + 0x1p-8 * (fabs(want[i]) + bound) + 1e-30,
                      "bf16 row out[%zu] %.8g vs %.8g", i, (double)kernel_f32_from_bf16(outb[i]),
                      (double)want[i]);
        }
    }
    kernel_conv_free(&k);
    kernel_board_destroy(&b);
    if (!in_place)
        free(out);
    free(in), free(w), free(bias), free(sk), free(want), free(P), free(S);
    free(ain), free(aw), free(ab), free(ask), free(inb), free(outb);
    return worst;
}

/* The shapes: the network's (5x5, 32 and 64 channels, 7 input planes, the
 * heads' 3 outputs, the policy linear's 50 -> 625), partial vectors (F = 8,
 * 40, 80, 144), column blocks of 8 (128, 256), other boards. */
static void s_shapes(bool bf16)
{
    static const struct {
        int N, H, W, taps, C, F;
    } cases[] = {
        {3, 5, 5, 9, 64, 64},  {1, 5, 5, 9, 64, 64},   {13, 5, 5, 9, 32, 32}, {2, 5, 5, 9, 7, 64},
        {5, 5, 5, 9, 32, 32},  {2, 5, 5, 1, 64, 3},    {7, 1, 1, 1, 50, 625}, {9, 1, 1, 1, 25, 64},
        {2, 3, 4, 9, 5, 8},    {1, 8, 8, 9, 16, 40},   {2, 2, 1, 9, 3, 80},   {1, 1, 1, 9, 6, 144},
        {2, 5, 5, 9, 128, 128}, {1, 5, 5, 9, 64, 256}, {4, 1, 7, 9, 9, 17},   {2, 5, 5, 9, 256, 16},
    };
    rng_t r;
    rng_seed(&r, 16);
    double worst = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int v = 0; v < 4; v++) {
            bool skip = v & 1, relu = v & 2, in_place = skip && (i % 2 == 0);
            double e = s_case(&r, bf16, cases[i].N, cases[i].H, cases[i].W, cases[i].taps,
                              cases[i].C, cases[i].F, skip, relu, in_place);
            worst = e > worst ? e : worst;
        }
    cr_log_info("%s kernels: largest error %.3f of its bound", bf16 ? "bf16" : "fp32", worst);
}

Test(kernels, fp32_equals_naive)
{
    if (s_can(false, "fp32_equals_naive"))
        s_shapes(false);
}

Test(kernels, bf16_within_the_derived_bound)
{
    if (s_can(true, "bf16_within_the_derived_bound"))
        s_shapes(true);
}

Test(kernels, fp32_is_exact_on_exact_sums)
{
    /* Small integers: every product and sum is exact in fp32, so the kernel
     * must give the exact value whatever its summation order. */
    if (!s_can(false, "fp32_is_exact_on_exact_sums"))
        return;
    int N = 3, H = 5, W = 5, C = 64, F = 64, rows = N * H * W;
    float *in = malloc((size_t)rows * C * sizeof *in), *w = malloc((size_t)9 * C * F * sizeof *w);
    float *out = malloc((size_t)rows * F * sizeof *out), *want = malloc((size_t)rows * F * 4);
    for (int i = 0; i < rows * C; i++)
        in[i] = (float)(i * 7 % 5 - 2);
    for (int i = 0; i < 9 * C * F; i++)
        w[i] = (float)(i * 13 % 7 - 3);
    kernel_board *b = kernel_board_new(H, W, 9);
    kernel_conv k;
    cr_assert_eq(kernel_conv_init(&k, w, NULL, 9, C, F, false), 0);
    kernel_io io = {.in = in, .out = out, .N = N};
    kernel_conv_run(&k, b, &io);
    kernel_conv_naive(want, in, NULL, w, NULL, false, N, H, W, 9, C, F);
    cr_assert(memcmp(out, want, (size_t)rows * F * sizeof *out) == 0);
    kernel_conv_free(&k);
    kernel_board_destroy(&b);
    free(in), free(w), free(out), free(want);
}

Test(kernels, bf16_rounding)
{
    /* Round to nearest, ties to even, on the 16 dropped bits. */
    cr_assert_eq(kernel_bf16_from_f32(1.0f), 0x3f80);
    cr_assert_eq(kernel_bf16_from_f32(-2.0f), 0xc000);
    cr_assert_eq(kernel_bf16_from_f32(1.0f + 0x1p-8f), 0x3f80);          /* tie -> even (down) */
    cr_assert_eq(kernel_bf16_from_f32(1.0f + 3 * 0x1p-8f), 0x3f82);      /* tie -> even (up) */
    cr_assert_eq(kernel_bf16_from_f32(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above the tie */
    cr_assert_eq(kernel_bf16_from_f32(INFINITY), 0x7f80);
    cr_assert(isnan(kernel_f32_from_bf16(kernel_bf16_from_f32(NAN))));
    rng_t r;
    rng_seed(&r, 5);
    for (int i = 0; i < 10000; i++) {
        float x = (float)(rng_normal(&r) * 100);
        float y = kernel_f32_from_bf16(kernel_bf16_from_f32(x));
        cr_assert(fabsf(y - x) <= 0x1p-8f * fabsf(x), "%g -> %g", (double)x, (double)y);
    }
}

Test(kernels, boards_of_every_size_and_each_row_once)
{
    /* Boards at the edges of the allowed range build (which neighbour each
     * tap reads is checked against the naive twin above). */
    int shapes[][2] = {{1, 1}, {1, 32}, {32, 1}, {32, 32}, {5, 5}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        kernel_board *b = kernel_board_new(shapes[i][0], shapes[i][1], 9);
        cr_assert_not_null(b);
        kernel_board_destroy(&b);
        cr_assert_null(b);
    }
    if (!s_can(false, "boards_of_every_size_and_each_row_once"))
        return;
    /* Every output row written once: a 1x1 identity over a 7x3 board. */
    int H = 7, W = 3, N = 5, rows = N * H * W;
    float one = 1.0f, *in = malloc((size_t)rows * sizeof *in), *out = malloc(rows * sizeof *out);
    for (int i = 0; i < rows; i++)
        in[i] = (float)i, out[i] = -1.0f;
    kernel_board *b = kernel_board_new(H, W, 1);
    kernel_conv k;
    cr_assert_eq(kernel_conv_init(&k, &one, NULL, 1, 1, 1, false), 0);
    kernel_io io = {.in = in, .out = out, .N = N};
    kernel_conv_run(&k, b, &io);
    for (int i = 0; i < rows; i++)
        cr_assert_eq(out[i], (float)i);
    kernel_conv_free(&k);
    kernel_board_destroy(&b);
    free(in), free(out);
}

Test(kernels, weight_gradient_equals_naive)
{
    /* dw += in^T dout over the on-board neighbours, accumulated into what
     * dw held: within 1e-5 of S = sum |in| |dout| (+ |dw before|), on the
     * training shapes (the stem's 7 channels, 32 and 64, a batch of 256
     * spanning several chunks) and odd ones. */
    if (!s_can(false, "weight_gradient_equals_naive"))
        return;
    static const struct {
        int N, H, W, taps, C, F;
    } cases[] = {
        {11, 5, 5, 9, 64, 64}, {256, 5, 5, 9, 7, 32}, {3, 5, 5, 9, 32, 32}, {2, 3, 4, 9, 5, 20},
        {1, 1, 1, 9, 3, 130},  {4, 5, 5, 1, 64, 3},   {2, 8, 8, 9, 13, 16},
    };
    rng_t r;
    rng_seed(&r, 17);
    double worst = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int N = cases[i].N, H = cases[i].H, W = cases[i].W, taps = cases[i].taps;
        int C = cases[i].C, F = cases[i].F;
        size_t rows = (size_t)N * H * W, K = (size_t)taps * C;
        float *in = s_rand(&r, rows * C, 1.0), *dout = s_rand(&r, rows * F, 1.0);
        float *dw = s_rand(&r, K * F, 1.0), *want = malloc(K * F * sizeof *want);
        float *S = s_abs(dw, K * F), *ain = s_abs(in, rows * C), *ad = s_abs(dout, rows * F);
        memcpy(want, dw, K * F * sizeof *want);
        kernel_conv_wgrad_naive(want, in, dout, N, H, W, taps, C, F);
        kernel_conv_wgrad_naive(S, ain, ad, N, H, W, taps, C, F);
        kernel_board *b = kernel_board_new(H, W, taps);
        kernel_conv_wgrad(dw, in, dout, b, N, C, F);
        for (size_t k = 0; k < K * F; k++) {
            double err = fabs((double)dw[k] - want[k]), bound = 1e-5 * S[k];
            cr_assert(err <= bound, "case %zu dw[%zu]: %.8g vs %.8g", i, k, (double)dw[k],
                      (double)want[k]);
            worst = err / bound > worst ? err / bound : worst;
        }
        kernel_board_destroy(&b);
        free(in), free(dout), free(dw), free(want), free(S), free(ain), free(ad);
    }
    cr_log_info("weight gradient: largest error %.3f of its bound", worst);
}
