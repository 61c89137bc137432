/* layer: network building blocks on OpenBLAS, with naive twins. See layer.h. */
#include "nn/layer.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

void layer_im2col3x3(float *col, const float *in, int N, int H, int W, int C)
{
    /* In NHWC the three taps of a kernel row are three neighbouring board
     * points, contiguous in the input as in the im2col row: one copy each. */
    size_t K = (size_t)9 * C, c = (size_t)C;
    for (int n = 0; n < N; n++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float *row = col + ((size_t)(n * H + y) * W + x) * K;
                int lo = x == 0, hi = x == W - 1 ? 2 : 3; /* taps kx in [lo, hi) */
                for (int ky = 0; ky < 3; ky++) {
                    float *dst = row + (size_t)ky * 3 * c;
                    int yy = y + ky - 1;
                    if (yy < 0 || yy >= H) {
                        memset(dst, 0, 3 * c * sizeof *dst);
                        continue;
                    }
                    const float *src = in + ((size_t)(n * H + yy) * W + x - 1) * c;
                    if (lo)
                        memset(dst, 0, c * sizeof *dst);
                    memcpy(dst + lo * c, src + lo * c, (size_t)(hi - lo) * c * sizeof *dst);
                    if (hi < 3)
                        memset(dst + 2 * c, 0, c * sizeof *dst);
                }
            }
}

/* Positions per chunk so that a chunk's im2col fits in col_floats. */
static int s_chunk(size_t col_floats, int HW, int C)
{
    size_t per = (size_t)HW * 9 * C;
    assert(col_floats >= per);
    size_t n = col_floats / per;
    return n > (size_t)1 << 20 ? 1 << 20 : (int)n;
}

void layer_conv3x3_forward(float *out, float *col, size_t col_floats, const float *in,
                           const float *w, int N, int H, int W, int C, int F)
{
    int HW = H * W, chunk = s_chunk(col_floats, HW, C);
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int nc = N - n0 < chunk ? N - n0 : chunk;
        layer_im2col3x3(col, in + (size_t)n0 * HW * C, nc, H, W, C);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nc * HW, F, 9 * C, 1.0f, col,
                    9 * C, w, F, 0.0f, out + (size_t)n0 * HW * F, F);
    }
}

void layer_conv3x3_forward_naive(float *out, const float *in, const float *w, int N, int H,
                                 int W, int C, int F)
{
    for (int n = 0; n < N; n++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int f = 0; f < F; f++) {
                    double acc = 0;
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int yy = y + ky - 1, xx = x + kx - 1;
                            if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                                continue;
                            const float *src = in + ((size_t)(n * H + yy) * W + xx) * C;
                            for (int c = 0; c < C; c++)
                                acc += (double)src[c] * w[((size_t)(ky * 3 + kx) * C + c) * F + f];
                        }
                    out[((size_t)(n * H + y) * W + x) * F + f] = (float)acc;
                }
}

void layer_conv3x3_backward(float *din, float *dw, float *col, size_t col_floats, float *wflip,
                            const float *dout, const float *in, const float *w, int N, int H,
                            int W, int C, int F)
{
    int HW = H * W, big = C > F ? C : F, chunk = s_chunk(col_floats, HW, big);
    /* Step 1. The flipped, transposed kernel: wflip[(8 - t)*F + f][c] = w[t*C + c][f]. */
    if (din)
        for (int t = 0; t < 9; t++)
            for (int c = 0; c < C; c++)
                for (int f = 0; f < F; f++)
                    wflip[((size_t)(8 - t) * F + f) * C + c] = w[((size_t)t * C + c) * F + f];
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int nc = N - n0 < chunk ? N - n0 : chunk, M = nc * HW;
        const float *dout_c = dout + (size_t)n0 * HW * F;
        /* Step 2. dw += im2col(in)^T dout. */
        layer_im2col3x3(col, in + (size_t)n0 * HW * C, nc, H, W, C);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 9 * C, F, M, 1.0f, col, 9 * C,
                    dout_c, F, 1.0f, dw, F);
        /* Step 3. din += im2col(dout) wflip. */
        if (din) {
            layer_im2col3x3(col, dout_c, nc, H, W, F);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, C, 9 * F, 1.0f, col, 9 * F,
                        wflip, C, 1.0f, din + (size_t)n0 * HW * C, C);
        }
    }
}

void layer_conv3x3_backward_naive(float *din, float *dw, const float *dout, const float *in,
                                  const float *w, int N, int H, int W, int C, int F)
{
    for (int n = 0; n < N; n++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const float *g = dout + ((size_t)(n * H + y) * W + x) * F;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int yy = y + ky - 1, xx = x + kx - 1;
                        if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                            continue;
                        size_t src = ((size_t)(n * H + yy) * W + xx) * C;
                        for (int c = 0; c < C; c++) {
                            const float *wr = w + ((size_t)(ky * 3 + kx) * C + c) * F;
                            float *dwr = dw + ((size_t)(ky * 3 + kx) * C + c) * F;
                            double acc = 0;
                            for (int f = 0; f < F; f++) {
                                acc += (double)g[f] * wr[f];
                                dwr[f] += g[f] * in[src + c];
                            }
                            if (din)
                                din[src + c] += (float)acc;
                        }
                    }
            }
}

void layer_linear_forward(float *out, const float *in, const float *w, const float *bias, int M,
                          int K, int N)
{
    float beta = 0.0f;
    if (bias) {
        for (int m = 0; m < M; m++)
            memcpy(out + (size_t)m * N, bias, (size_t)N * sizeof *out);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, in, K, w, N, beta, out,
                N);
}

void layer_linear_forward_naive(float *out, const float *in, const float *w, const float *bias,
                                int M, int K, int N)
{
    for (int m = 0; m < M; m++)
        for (int o = 0; o < N; o++) {
            double acc = bias ? bias[o] : 0.0;
            for (int i = 0; i < K; i++)
                acc += (double)in[(size_t)m * K + i] * w[(size_t)i * N + o];
            out[(size_t)m * N + o] = (float)acc;
        }
}

void layer_linear_backward(float *din, float *dw, float *dbias, const float *dout,
                           const float *in, const float *w, int M, int K, int N)
{
    if (din)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dout, N, w, N, 1.0f,
                    din, K);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, in, K, dout, N, 1.0f, dw,
                N);
    if (dbias)
        for (int m = 0; m < M; m++)
            for (int o = 0; o < N; o++)
                dbias[o] += dout[(size_t)m * N + o];
}

void layer_linear_backward_naive(float *din, float *dw, float *dbias, const float *dout,
                                 const float *in, const float *w, int M, int K, int N)
{
    for (int m = 0; m < M; m++)
        for (int o = 0; o < N; o++) {
            float g = dout[(size_t)m * N + o];
            for (int i = 0; i < K; i++) {
                if (din)
                    din[(size_t)m * K + i] += g * w[(size_t)i * N + o];
                dw[(size_t)i * N + o] += g * in[(size_t)m * K + i];
            }
            if (dbias)
                dbias[o] += g;
        }
}

/* Rows per float partial sum before it joins the double total. */
#define COL_BLOCK 64

/* s[f] += sum over rows of in[m][f] (- mean[f] when mean, squared when sq,
 * times g[m][f] when g): per-channel sums over M rows, in float blocks of
 * COL_BLOCK rows added into double. */
LAYER_CLONES static void s_colsum(double *s, const float *in, const float *mean, const float *g,
                                  bool sq, int M, int F)
{
    float part[F > 0 ? F : 1];
    int F16 = F & ~15;
    for (int m0 = 0; m0 < M; m0 += COL_BLOCK) {
        int m1 = m0 + COL_BLOCK < M ? m0 + COL_BLOCK : M;
        memset(part, 0, sizeof part);
        for (int m = m0; m < m1; m++) {
            const float *r = in + (size_t)m * F, *gr = g ? g + (size_t)m * F : NULL;
            for (int f = 0; f < F16; f += 16) {
                layer_v16 v = *(const layer_v16 *)(r + f);
                if (mean)
                    v -= *(const layer_v16 *)(mean + f);
                if (sq)
                    v *= v;
                if (gr)
                    v *= *(const layer_v16 *)(gr + f);
                *(layer_v16 *)(part + f) += v;
            }
            for (int f = F16; f < F; f++) {
                float v = r[f] - (mean ? mean[f] : 0.0f);
                v = sq ? v * v : v;
                part[f] += gr ? v * gr[f] : v;
            }
        }
        for (int f = 0; f < F; f++)
            s[f] += part[f];
    }
}

/* out[m][f] = in[m][f] * a[f] + b[f] (+= into out when acc; out may be in). */
LAYER_CLONES static void s_affine(float *out, const float *in, const float *a, const float *b,
                                  bool acc, int M, int F)
{
    int F16 = F & ~15;
    for (int m = 0; m < M; m++) {
        const float *r = in + (size_t)m * F;
        float *o = out + (size_t)m * F;
        for (int f = 0; f < F16; f += 16) {
            layer_v16 v = *(const layer_v16 *)(r + f) * *(const layer_v16 *)(a + f) +
                          *(const layer_v16 *)(b + f);
            if (acc)
                v += *(const layer_v16 *)(o + f);
            *(layer_v16 *)(o + f) = v;
        }
        for (int f = F16; f < F; f++)
            o[f] = (acc ? o[f] : 0.0f) + r[f] * a[f] + b[f];
    }
}

void layer_bn_forward_train(float *out, float *mean, float *var, float *rstd, const float *in,
                            const float *gamma, const float *beta, float eps, int M, int F)
{
    /* Two passes: the mean, then the centred second moment, which stays
     * accurate when the mean is large compared with the spread. */
    double s[F > 0 ? F : 1];
    float a[F > 0 ? F : 1], b[F > 0 ? F : 1];
    memset(s, 0, sizeof s);
    s_colsum(s, in, NULL, NULL, false, M, F);
    for (int f = 0; f < F; f++)
        mean[f] = (float)(s[f] / M);
    memset(s, 0, sizeof s);
    s_colsum(s, in, mean, NULL, true, M, F);
    for (int f = 0; f < F; f++) {
        var[f] = (float)(s[f] / M);
        rstd[f] = (float)(1.0 / sqrt(s[f] / M + eps));
        a[f] = gamma[f] * rstd[f];
        b[f] = beta[f] - mean[f] * a[f];
    }
    s_affine(out, in, a, b, false, M, F);
}

/* din[m][f] += c1[f] dout[m][f] + c2[f] in[m][f] + c3[f]. */
LAYER_CLONES static void s_bn_din(float *din, const float *dout, const float *in, const float *c1,
                                  const float *c2, const float *c3, int M, int F)
{
    int F16 = F & ~15;
    for (int m = 0; m < M; m++) {
        size_t o = (size_t)m * F;
        for (int f = 0; f < F16; f += 16)
            *(layer_v16 *)(din + o + f) +=
                *(const layer_v16 *)(c1 + f) * *(const layer_v16 *)(dout + o + f) +
                *(const layer_v16 *)(c2 + f) * *(const layer_v16 *)(in + o + f) +
                *(const layer_v16 *)(c3 + f);
        for (int f = F16; f < F; f++)
            din[o + f] += c1[f] * dout[o + f] + c2[f] * in[o + f] + c3[f];
    }
}

void layer_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout,
                       const float *in, const float *mean, const float *rstd, const float *gamma,
                       int M, int F)
{
    /* With xhat = (in - mean) rstd and g = dout: dbeta = sum g, dgamma =
     * sum g xhat, din = gamma rstd / M (M g - sum g - xhat sum g xhat). */
    double sg[F > 0 ? F : 1], sgc[F > 0 ? F : 1];
    memset(sg, 0, sizeof sg);
    memset(sgc, 0, sizeof sgc);
    s_colsum(sg, dout, NULL, NULL, false, M, F);
    s_colsum(sgc, in, mean, dout, false, M, F); /* sum g (in - mean) */
    for (int f = 0; f < F; f++) {
        dbeta[f] += (float)sg[f];
        dgamma[f] += (float)(sgc[f] * rstd[f]);
    }
    if (!din)
        return;
    /* din = a (g - mg - (in - mean) rstd mgx), a = gamma rstd, mg = sum g / M,
     * mgx = sum g xhat / M: linear in g and in per channel. */
    float c1[F > 0 ? F : 1], c2[F > 0 ? F : 1], c3[F > 0 ? F : 1];
    for (int f = 0; f < F; f++) {
        double a = (double)gamma[f] * rstd[f], mg = sg[f] / M, mgx = sgc[f] * rstd[f] / M;
        c1[f] = (float)a;
        c2[f] = (float)(-a * rstd[f] * mgx);
        c3[f] = (float)(-a * mg + a * rstd[f] * mgx * mean[f]);
    }
    s_bn_din(din, dout, in, c1, c2, c3, M, F);
}

void layer_bn_forward_eval(float *out, const float *in, const float *gamma, const float *beta,
                           const float *run_mean, const float *run_var, float eps, int M, int F)
{
    for (int m = 0; m < M; m++)
        for (int f = 0; f < F; f++) {
            size_t i = (size_t)m * F + f;
            out[i] = (float)(gamma[f] * ((double)in[i] - run_mean[f]) /
                                 sqrt((double)run_var[f] + eps) +
                             beta[f]);
        }
}

void layer_bn_update_running(float *run_mean, float *run_var, const float *mean,
                             const float *var, float momentum, int M, int F)
{
    double unbias = M > 1 ? (double)M / (M - 1) : 1.0;
    for (int f = 0; f < F; f++) {
        run_mean[f] = (1.0f - momentum) * run_mean[f] + momentum * mean[f];
        run_var[f] = (1.0f - momentum) * run_var[f] + momentum * (float)(var[f] * unbias);
    }
}

LAYER_CLONES void layer_relu_forward(float *out, const float *in, size_t n)
{
    const layer_v16 zero = {0};
    size_t n16 = n & ~(size_t)15;
    for (size_t i = 0; i < n16; i += 16) {
        layer_v16 v = *(const layer_v16 *)(in + i);
        *(layer_v16 *)(out + i) = (layer_v16)((layer_v16i)v & (layer_v16i)(v > zero));
    }
    for (size_t i = n16; i < n; i++)
        out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

LAYER_CLONES void layer_relu_backward(float *din, const float *dout, const float *out, size_t n)
{
    const layer_v16 zero = {0};
    size_t n16 = n & ~(size_t)15;
    for (size_t i = 0; i < n16; i += 16) {
        layer_v16i keep = *(const layer_v16 *)(out + i) > zero;
        *(layer_v16 *)(din + i) +=
            (layer_v16)((layer_v16i) * (const layer_v16 *)(dout + i) & keep);
    }
    for (size_t i = n16; i < n; i++)
        if (out[i] > 0.0f)
            din[i] += dout[i];
}

LAYER_CLONES void layer_add_relu(float *out, const float *in, size_t n)
{
    const layer_v16 zero = {0};
    size_t n16 = n & ~(size_t)15;
    for (size_t i = 0; i < n16; i += 16) {
        layer_v16 v = *(const layer_v16 *)(out + i) + *(const layer_v16 *)(in + i);
        *(layer_v16 *)(out + i) = (layer_v16)((layer_v16i)v & (layer_v16i)(v > zero));
    }
    for (size_t i = n16; i < n; i++) {
        float v = out[i] + in[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

void layer_tanh_forward(float *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = tanhf(in[i]);
}

void layer_tanh_backward(float *din, const float *dout, const float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        din[i] += dout[i] * (1.0f - out[i] * out[i]);
}

double layer_policy_loss(float *dlogits, const float *logits, const float *pi, float scale, int B,
                         int A)
{
    double total = 0;
    for (int b = 0; b < B; b++) {
        const float *l = logits + (size_t)b * A, *p = pi + (size_t)b * A;
        float mx = l[0];
        for (int a = 1; a < A; a++)
            mx = l[a] > mx ? l[a] : mx;
        double sum = 0, psum = 0, dot = 0;
        for (int a = 0; a < A; a++) {
            sum += exp((double)l[a] - mx);
            psum += p[a];
            dot += (double)p[a] * ((double)l[a] - mx);
        }
        double lse = log(sum);
        /* -sum_a pi_a (l_a - mx - lse) */
        total += psum * lse - dot;
        if (dlogits) {
            float *d = dlogits + (size_t)b * A;
            for (int a = 0; a < A; a++) {
                double sm = exp((double)l[a] - mx - lse);
                d[a] += (float)(scale * (sm * psum - p[a]));
            }
        }
    }
    return total;
}

double layer_value_loss(float *dv, const float *v, const float *z, float scale, int B)
{
    double total = 0;
    for (int b = 0; b < B; b++) {
        double d = (double)z[b] - v[b];
        total += d * d;
        if (dv)
            dv[b] += (float)(scale * 2.0 * ((double)v[b] - z[b]));
    }
    return total;
}

void layer_wdl_value(float *v, const float *logits, int B)
{
    for (int b = 0; b < B; b++) {
        const float *l = logits + 3 * (size_t)b;
        float mx = l[0] > l[1] ? l[0] : l[1];
        mx = l[2] > mx ? l[2] : mx;
        float e0 = expf(l[0] - mx), e1 = expf(l[1] - mx), e2 = expf(l[2] - mx);
        v[b] = (e0 - e2) / (e0 + e1 + e2);
    }
}

void layer_wdl_target(float *t, const float *z, int B)
{
    for (int b = 0; b < B; b++) {
        float v = z[b] > 1.0f ? 1.0f : z[b] < -1.0f ? -1.0f : z[b];
        t[3 * b] = v > 0.0f ? v : 0.0f;
        t[3 * b + 1] = 1.0f - fabsf(v);
        t[3 * b + 2] = v < 0.0f ? -v : 0.0f;
    }
}

void layer_nchw_to_nhwc(float *out, const float *in, int N, int C, int HW)
{
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int p = 0; p < HW; p++)
                out[((size_t)n * HW + p) * C + c] = in[((size_t)n * C + c) * HW + p];
}

void layer_nhwc_to_nchw(float *out, const float *in, int N, int C, int HW)
{
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int p = 0; p < HW; p++)
                out[((size_t)n * C + c) * HW + p] = in[((size_t)n * HW + p) * C + c];
}
