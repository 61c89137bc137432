/* layer: the policy-value network's building blocks, forward and backward,
 * on OpenBLAS sgemm, each with a plain `_naive` twin that the tests compare
 * it with (and check by finite differences). model_train.c assembles the
 * network from these for training; the inference path (model_eval.c) fuses
 * some of them further and is tested against model_forward_reference
 * (model.c), which is built from the naive twins.
 *
 * Layout: activations are "rows": (N, H, W, C) row-major, i.e. a matrix of
 * M = N*H*W rows of C channels (NHWC). A 3x3 convolution (stride 1, zero
 * padding 1, no bias) is one GEMM over all M rows: im2col (M, 9*C) times the
 * weights (9*C, F), whose row t*C + c holds tap t = ky*3 + kx of input
 * channel c (the kernel element at (ky, kx) reads the input at
 * (y + ky - 1, x + kx - 1), as PyTorch's cross-correlation does). Linear
 * layers keep their weights as (K, N) (in, out) so that out (B, N) = in (B, K) w.
 *
 * Conventions (llm.c style): arguments are outputs, inputs, parameters, then
 * dimensions; forward overwrites its outputs; backward ACCUMULATES (+=) into
 * the input and parameter gradients (zero them first). Workspaces are the
 * caller's: nothing here allocates. Every function is thread-compatible
 * (no shared state besides OpenBLAS's own thread setting). */
#ifndef KZ_LAYER_H
#define KZ_LAYER_H

#include <stddef.h>
#include <stdint.h>

/* SIMD for the element-wise loops of the model module: vectors of 16 floats
 * at any alignment that may alias floats (GCC lowers them to the widest
 * registers available), and LAYER_CLONES, which compiles a function for
 * AVX-512, AVX2 and the baseline, picked when the program loads (GCC
 * function multi-versioning). */
typedef float layer_v16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t layer_v16i __attribute__((vector_size(64), aligned(4), may_alias));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LAYER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LAYER_CLONES
#endif

/* im2col for a 3x3 convolution with padding 1: col (N*H*W, 9*C) from
 * in (N, H, W, C); out-of-board taps are written as zeros. */
void layer_im2col3x3(float *col, const float *in, int N, int H, int W, int C);

/* out (N, H, W, F) = conv3x3(in (N, H, W, C), w (9*C, F)). col is a
 * workspace of rows_per_chunk * 9*C floats: the batch is processed in chunks
 * of rows_per_chunk / (H*W) positions (at least one) so that the im2col
 * buffer stays in cache. */
void layer_conv3x3_forward(float *out, float *col, size_t col_floats, const float *in,
                           const float *w, int N, int H, int W, int C, int F);
void layer_conv3x3_forward_naive(float *out, const float *in, const float *w, int N, int H,
                                 int W, int C, int F);
/* din (N, H, W, C) += d/d in; dw (9*C, F) += d/d w, from dout (N, H, W, F).
 * din may be NULL (the stem needs no input gradient). col is a workspace of
 * col_floats >= H*W*9*max(C, F) floats; wflip a workspace of 9*F*C floats.
 * The input gradient is a 3x3 convolution of dout with the flipped,
 * transposed kernel (no col2im). */
void layer_conv3x3_backward(float *din, float *dw, float *col, size_t col_floats, float *wflip,
                            const float *dout, const float *in, const float *w, int N, int H,
                            int W, int C, int F);
void layer_conv3x3_backward_naive(float *din, float *dw, const float *dout, const float *in,
                                  const float *w, int N, int H, int W, int C, int F);

/* out (M, N) = in (M, K) w (K, N) (+ bias (N) when not NULL): a 1x1
 * convolution (no bias) or a linear layer. */
void layer_linear_forward(float *out, const float *in, const float *w, const float *bias, int M,
                          int K, int N);
void layer_linear_forward_naive(float *out, const float *in, const float *w, const float *bias,
                                int M, int K, int N);
/* din (M, K) += dout w^T (din may be NULL), dw (K, N) += in^T dout, dbias (N)
 * += column sums of dout (when not NULL). */
void layer_linear_backward(float *din, float *dw, float *dbias, const float *dout,
                           const float *in, const float *w, int M, int K, int N);
void layer_linear_backward_naive(float *din, float *dw, float *dbias, const float *dout,
                                 const float *in, const float *w, int M, int K, int N);

/* Batch norm in training mode over M rows of F channels: out = gamma *
 * (in - mean) * rstd + beta with the batch mean and biased variance; writes
 * mean (F), var (F, biased) and rstd (F) = 1/sqrt(var + eps) for backward and
 * for the running averages. out may equal in. */
void layer_bn_forward_train(float *out, float *mean, float *var, float *rstd, const float *in,
                            const float *gamma, const float *beta, float eps, int M, int F);
/* din (M, F) += d/d in, dgamma (F) += .., dbeta (F) += .. for the forward
 * above; `in` is the forward's input. */
void layer_bn_backward(float *din, float *dgamma, float *dbeta, const float *dout,
                       const float *in, const float *mean, const float *rstd, const float *gamma,
                       int M, int F);
/* Batch norm in inference mode with running statistics (out may equal in). */
void layer_bn_forward_eval(float *out, const float *in, const float *gamma, const float *beta,
                           const float *run_mean, const float *run_var, float eps, int M, int F);
/* run = (1 - momentum) * run + momentum * batch, with the batch variance made
 * unbiased (times M/(M-1)) for run_var, as PyTorch does. */
void layer_bn_update_running(float *run_mean, float *run_var, const float *mean,
                             const float *var, float momentum, int M, int F);

/* out = max(in, 0) (out may equal in); din += dout where out > 0. */
void layer_relu_forward(float *out, const float *in, size_t n);
void layer_relu_backward(float *din, const float *dout, const float *out, size_t n);

/* out = max(out + in, 0): a residual connection's sum and ReLU. */
void layer_add_relu(float *out, const float *in, size_t n);

/* out = tanh(in); din += dout * (1 - out^2). */
void layer_tanh_forward(float *out, const float *in, size_t n);
void layer_tanh_backward(float *din, const float *dout, const float *out, size_t n);

/* Policy loss: sum over the batch of -pi^T log softmax(logits), logits and
 * pi (B, A). When dlogits is not NULL, dlogits += scale * d/d logits
 * (= scale * (softmax * sum(pi) - pi)). Computed in double. */
double layer_policy_loss(float *dlogits, const float *logits, const float *pi, float scale, int B,
                         int A);
/* Value loss: sum over the batch of (z - v)^2; dv += scale * 2 (v - z). */
double layer_value_loss(float *dv, const float *v, const float *z, float scale, int B);

/* Win/draw/loss value heads (3 logits per sample: the mover's win, draw,
 * loss). layer_wdl_value: v[b] = P(win) - P(loss) of softmax(logits row b),
 * in [-1, 1] (stable for any finite logits). layer_wdl_target: t (B, 3) =
 * (max(z, 0), 1 - |z|, max(-z, 0)) for z clamped to [-1, 1]: a distribution
 * whose mean win minus loss is z (an outcome one-hot, a q + z mix spread); the
 * loss is then layer_policy_loss(dlogits, logits, t, scale, B, 3). */
void layer_wdl_value(float *v, const float *logits, int B);
void layer_wdl_target(float *t, const float *z, int B);

/* Row layout conversions: (N, C, HW) <-> (N, HW, C). */
void layer_nchw_to_nhwc(float *out, const float *in, int N, int C, int HW);
void layer_nhwc_to_nchw(float *out, const float *in, int N, int C, int HW);

#endif
