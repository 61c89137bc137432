/* kernel: our own convolution kernels for the network's small boards, in
 * AVX-512 (fp32 FMA) and AVX512_BF16 (bf16 products, fp32 accumulation),
 * with plain C twins (`_naive`) that the tests compare them with.
 *
 * One operation covers the whole inference network: out = act(in * w + bias
 * [+ skip]) over N positions of an H x W board in NHWC rows (row b*HW + p
 * holds the channels of point p of position b), where * is
 *   - a 3x3 convolution with zero padding 1 (a board with taps = 9), whose
 *     weight row t*C + c holds tap t = ky*3 + kx of channel c (the layout of
 *     layer.h, the kernel element at (ky, kx) reads point (y + ky - 1,
 *     x + kx - 1)), or
 *   - a pointwise product (taps = 1): a 1x1 convolution, or a linear layer
 *     on a 1 x 1 board (N rows of C features).
 * There is no im2col: each output row reads its neighbours' input rows
 * through pointers, and a tap that falls off the board is skipped (rows are
 * grouped so that the rows of one register tile share their taps; on a 5x5
 * board a quarter of the 3x3 taps are off the board). The epilogue adds the
 * bias (folded batch norm) and the skip, applies the ReLU, and writes fp32
 * and/or bf16 rows.
 *
 * Precision: fp32 kernels round like any fp32 dot product (the tests hold
 * them to 1e-5 of S = sum |in w| + |bias| + |skip|). bf16 kernels round the
 * inputs and weights to bf16 (8 significant bits: relative error <= u = 2^-8
 * each) and multiply-add in fp32 (the product of two bf16 is exact in fp32),
 * so an output is within
 *   (2u + u^2) sum_k |in_k w_k| + (K + 3) 2^-24 (1 + 2^-6) S
 * of the exact value (K = taps * C terms): the first term is the rounding of
 * the two factors, the second the K + 2 fp32 additions (bias and skip
 * included) on terms at most (1 + u)^2 times their exact size. A bf16 output
 * row adds its own rounding (u relative).
 *
 * Dispatch: kernel_cpu_has() says what the CPU runs (cpuid, at run time);
 * the AVX-512 code is compiled for its targets function by function, so the
 * program runs on any x86-64-v2 machine, and callers fall back to OpenBLAS
 * where a feature is missing. kernel_conv_run must not be called for a
 * precision the CPU lacks.
 *
 * Threads: packed weights and boards are read-only after init; any number
 * of threads may run kernels on them at once. Nothing here allocates after
 * init. */
#ifndef KZ_KERNEL_H
#define KZ_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KERNEL_MAX_CHANNELS 1024 /* most input channels (C) of a 3x3 operation */

typedef enum kernel_feature {
    KERNEL_AVX512 = 1, /* AVX-512 F, BW, DQ, VL: the fp32 kernels */
    KERNEL_BF16 = 2,   /* the above and AVX512_BF16: the bf16 kernels */
} kernel_feature;

/* True when the CPU supports feature f (checked once, then cached). The
 * environment variable KZ_KERNELS=none hides every feature and =fp32 hides
 * BF16 (for testing the fallbacks). */
bool kernel_cpu_has(int f);

/* The board geometry of an operation, built once: which input point each
 * output point reads under each tap, and the order in which rows are tiled. */
typedef struct kernel_board kernel_board;
/* A board of H x W points (1..32 each) for taps 9 (3x3, padding 1) or 1
 * (pointwise). NULL when out of memory. Caller owns the result. */
kernel_board *kernel_board_new(int H, int W, int taps);
void kernel_board_destroy(kernel_board **b);

/* Packed weights and bias of one operation (read-only once made). */
typedef struct kernel_conv {
    int taps;      /* 9 or 1 */
    int C, F;      /* input and output channels */
    int Cp;        /* C rounded up to even: bf16 input rows have Cp channels */
    int Fp;        /* F rounded up to a multiple of 16 */
    bool bf16;     /* packed for the bf16 kernels */
    float *w;      /* fp32: (taps*C, Fp), zero beyond F */
    uint32_t *wb;  /* bf16: (taps*Cp/2, Fp) pairs of bf16 weights (channels 2j, 2j+1) */
    float *bias;   /* (Fp), zero beyond F */
} kernel_conv;

/* Packs w (taps*C, F) (row t*C + c) and bias (F, or NULL for zero) for the
 * fp32 or bf16 kernels (bf16: rounded to nearest even; channel C of an odd C
 * is a zero row); w NULL: zero weights, to be packed by kernel_conv_repack.
 * 0 or KZ_ENOMEM (k is then empty). Caller frees with kernel_conv_free. */
int kernel_conv_init(kernel_conv *k, const float *w, const float *bias, int taps, int C, int F,
                     bool bf16);
/* Packs new weights and bias of k's shape into k's storage (no allocation:
 * training repacks its weights every step). */
void kernel_conv_repack(kernel_conv *k, const float *w, const float *bias);
void kernel_conv_free(kernel_conv *k);

/* The operands of one run over N positions. Row strides: in C floats (fp32
 * kernels) or Cp bf16 (bf16 kernels); skip and out F floats; outb F bf16 (F
 * even). out may equal skip (each row's skip is read before its output is
 * written) but must not overlap in. */
typedef struct kernel_io {
    const float *in;      /* fp32 kernels: (N*HW, C) input rows */
    const uint16_t *inb;  /* bf16 kernels: (N*HW, Cp) input rows, bf16 */
    const float *skip;    /* (N*HW, F) added before the ReLU, or NULL */
    float *out;           /* (N*HW, F) fp32 output, or NULL */
    uint16_t *outb;       /* (N*HW, F) bf16 output, or NULL */
    int N;                /* positions */
    bool relu;            /* max(0, .) after the bias and skip */
} kernel_io;

/* Runs k on board b (taps alike) with the AVX-512 kernels of k's precision. */
void kernel_conv_run(const kernel_conv *k, const kernel_board *b, const kernel_io *io);

/* The same in plain C with double sums, from unpacked fp32 weights w
 * (taps*C, F) and the fp32 input (N*HW, C): the tests' reference. */
void kernel_conv_naive(float *out, const float *in, const float *skip, const float *w,
                       const float *bias, bool relu, int N, int H, int W, int taps, int C, int F);

/* Training: the weight gradient of the operation on board b (fp32, AVX-512),
 * dw (taps*C, F) += sum over the N*HW output rows r and the taps t under
 * which r's neighbour q is on the board of in[q] (C) outer dout[r] (F): the
 * rows are summed in chunks of 256, every register tile of dw over a chunk
 * while it is in cache. (The input gradient is kernel_conv_run with the
 * flipped, transposed weights; see layer.h.) */
void kernel_conv_wgrad(float *dw, const float *in, const float *dout, const kernel_board *b,
                       int N, int C, int F);
/* Its plain C twin (double sums). */
void kernel_conv_wgrad_naive(float *dw, const float *in, const float *dout, int N, int H, int W,
                             int taps, int C, int F);

/* bf16 conversions (round to nearest even) and back (exact). */
uint16_t kernel_bf16_from_f32(float x);
float kernel_f32_from_bf16(uint16_t x);
/* n floats to bf16 and back, in plain C. */
void kernel_bf16_pack(uint16_t *out, const float *in, size_t n);

#endif
