/* kernel: AVX-512 and bf16 convolution kernels for small boards. See kernel.h. */
#include "nn/kernel.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KERNEL_X86 1
#include <immintrin.h>
#else
#define KERNEL_X86 0
#endif

/* --- CPU features ---------------------------------------------------------- */

bool kernel_cpu_has(int f)
{
    static int s_have = -1; /* bit set of kernel_feature; -1 before the first call */
    int have = __atomic_load_n(&s_have, __ATOMIC_RELAXED);
    if (have < 0) {
        have = 0;
#if KERNEL_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
            have |= KERNEL_AVX512;
            if (__builtin_cpu_supports("avx512bf16"))
                have |= KERNEL_BF16;
        }
#endif
        const char *env = getenv("KZ_KERNELS");
        if (env && !strcmp(env, "none"))
            have = 0;
        else if (env && !strcmp(env, "fp32"))
            have &= ~KERNEL_BF16;
        __atomic_store_n(&s_have, have, __ATOMIC_RELAXED);
    }
    return (have & f) == f;
}

/* --- bf16 ------------------------------------------------------------------ */

uint16_t kernel_bf16_from_f32(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float kernel_f32_from_bf16(uint16_t x)
{
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void kernel_bf16_pack(uint16_t *out, const float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = kernel_bf16_from_f32(in[i]);
}

/* --- Boards ---------------------------------------------------------------- */

struct kernel_board {
    int H, W, HW;    /* shape */
    int taps;        /* 9 or 1 */
    int16_t *nbr;    /* (HW, taps): input point of output point p under tap t, or -1 */
    uint16_t *mask;  /* (HW): bit t set when tap t of p is on the board */
    int16_t *order;  /* (HW): points sorted by mask, so that neighbours in it share taps */
};

kernel_board *kernel_board_new(int H, int W, int taps)
{
    assert(H >= 1 && H <= 32 && W >= 1 && W <= 32 && (taps == 9 || taps == 1));
    kernel_board *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    int HW = H * W;
    b->H = H, b->W = W, b->HW = HW, b->taps = taps;
    b->nbr = calloc((size_t)HW * taps, sizeof *b->nbr);
    b->mask = calloc((size_t)HW, sizeof *b->mask);
    b->order = calloc((size_t)HW, sizeof *b->order);
    if (!b->nbr || !b->mask || !b->order) {
        kernel_board_destroy(&b);
        return NULL;
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int p = y * W + x;
            for (int t = 0; t < taps; t++) {
                int yy = taps == 9 ? y + t / 3 - 1 : y, xx = taps == 9 ? x + t % 3 - 1 : x;
                bool on = yy >= 0 && yy < H && xx >= 0 && xx < W;
                b->nbr[p * taps + t] = (int16_t)(on ? yy * W + xx : -1);
                b->mask[p] |= (uint16_t)(on ? 1u << t : 0);
            }
        }
    /* Points by mask, the full ones (the most) first; stable within a mask. */
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (unsigned mk = 0; mk < 512u; mk++) {
            bool full = mk == (1u << taps) - 1;
            if (full != (pass == 0))
                continue;
            for (int p = 0; p < HW; p++)
                if (b->mask[p] == mk)
                    b->order[n++] = (int16_t)p;
        }
    assert(n == HW);
    return b;
}

void kernel_board_destroy(kernel_board **pb)
{
    kernel_board *b = *pb;
    if (!b)
        return;
    free_all(b->nbr, b->mask, b->order, b);
    *pb = NULL;
}

/* --- Packing --------------------------------------------------------------- */

static void *s_alloc(size_t bytes)
{
    void *p = NULL;
    bytes = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    memset(p, 0, bytes ? bytes : 64);
    return p;
}

int kernel_conv_init(kernel_conv *k, const float *w, const float *bias, int taps, int C, int F,
                     bool bf16)
{
    assert((taps == 9 || taps == 1) && C >= 1 && F >= 1);
    assert(taps == 1 || C <= KERNEL_MAX_CHANNELS);
    memset(k, 0, sizeof *k);
    k->taps = taps, k->C = C, k->F = F, k->bf16 = bf16;
    k->Cp = (C + 1) & ~1;
    k->Fp = (F + 15) & ~15;
    size_t Fp = (size_t)k->Fp;
    k->bias = s_alloc(Fp * sizeof *k->bias);
    if (bf16)
        k->wb = s_alloc((size_t)taps * k->Cp / 2 * Fp * sizeof *k->wb);
    else
        k->w = s_alloc((size_t)taps * C * Fp * sizeof *k->w);
    if (!k->bias || (bf16 ? !k->wb : !k->w)) {
        kernel_conv_free(k);
        return KZ_ENOMEM;
    }
    if (w)
        kernel_conv_repack(k, w, bias);
    return 0;
}

void kernel_conv_repack(kernel_conv *k, const float *w, const float *bias)
{
    int taps = k->taps, C = k->C, F = k->F;
    bool bf16 = k->bf16;
    size_t Fp = (size_t)k->Fp;
    for (int f = 0; f < F; f++)
        k->bias[f] = bias ? bias[f] : 0.0f;
    if (bf16)
        memset(k->wb, 0, (size_t)taps * k->Cp / 2 * Fp * sizeof *k->wb);
    for (int t = 0; t < taps; t++)
        for (int c = 0; c < C; c++)
            for (int f = 0; f < F; f++) {
                float v = w[((size_t)t * C + c) * F + f];
                if (!bf16) {
                    k->w[((size_t)t * C + c) * Fp + f] = v;
                    continue;
                }
                /* Pair j = c/2 of tap t: channel 2j in the low half, 2j+1 in the high. */
                uint32_t *dst = &k->wb[((size_t)t * k->Cp / 2 + c / 2) * Fp + f];
                *dst |= (uint32_t)kernel_bf16_from_f32(v) << (c % 2 ? 16 : 0);
            }
}

void kernel_conv_free(kernel_conv *k)
{
    free_all(k->w, k->wb, k->bias);
    k->w = NULL, k->wb = NULL, k->bias = NULL;
}

/* --- The naive twin -------------------------------------------------------- */

void kernel_conv_naive(float *out, const float *in, const float *skip, const float *w,
                       const float *bias, bool relu, int N, int H, int W, int taps, int C, int F)
{
    int HW = H * W;
    for (int n = 0; n < N; n++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                size_t r = (size_t)n * HW + (size_t)y * W + x;
                for (int f = 0; f < F; f++) {
                    double acc = bias ? bias[f] : 0.0;
                    for (int t = 0; t < taps; t++) {
                        int yy = taps == 9 ? y + t / 3 - 1 : y, xx = taps == 9 ? x + t % 3 - 1 : x;
                        if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                            continue;
                        const float *src = in + ((size_t)n * HW + (size_t)yy * W + xx) * C;
                        for (int c = 0; c < C; c++)
                            acc += (double)src[c] * w[((size_t)t * C + c) * F + f];
                    }
                    if (skip)
                        acc += skip[r * F + f];
                    if (relu && acc < 0)
                        acc = 0;
                    out[r * F + f] = (float)acc;
                }
            }
}

void kernel_conv_wgrad_naive(float *dw, const float *in, const float *dout, int N, int H, int W,
                             int taps, int C, int F)
{
    int HW = H * W;
    for (int t = 0; t < taps; t++)
        for (int c = 0; c < C; c++)
            for (int f = 0; f < F; f++) {
                double acc = 0;
                for (int n = 0; n < N; n++)
                    for (int y = 0; y < H; y++)
                        for (int x = 0; x < W; x++) {
                            int yy = taps == 9 ? y + t / 3 - 1 : y;
                            int xx = taps == 9 ? x + t % 3 - 1 : x;
                            if (yy < 0 || yy >= H || xx < 0 || xx >= W)
                                continue;
                            size_t r = (size_t)n * HW + (size_t)y * W + x;
                            size_t q = (size_t)n * HW + (size_t)yy * W + xx;
                            acc += (double)in[q * C + c] * dout[r * F + f];
                        }
                dw[((size_t)t * C + c) * F + f] += (float)acc;
            }
}

/* --- The AVX-512 kernels ----------------------------------------------------- */

#if KERNEL_X86

#define MR_MAX 12  /* most rows of a register tile */
#define NV_MAX 8   /* most 16-float vectors of output channels in a tile */

/* Zero input channels for the taps of a tile's rows that fall off the board
 * (only where a tile mixes rows of different masks). */
static const float s_zero[KERNEL_MAX_CHANNELS] __attribute__((aligned(64)));

/* One register tile: M rows x NV vectors of output channels, its taps, and
 * where its rows read and write. */
typedef struct s_tile {
    int ntaps;                   /* taps to sum */
    int cn;                      /* per tap: channels (fp32) or channel pairs (bf16) */
    int ldw;                     /* floats (fp32) or pairs (bf16) between weight rows */
    const void *a[9][MR_MAX];    /* per tap and row: the input row (or s_zero) */
    const void *w[9];            /* per tap: its first weight row, at this tile's columns */
    const float *bias;           /* (NV*16) at this tile's columns */
    float *out[MR_MAX];          /* per row: fp32 output at this tile's columns, or NULL */
    uint16_t *outb[MR_MAX];      /* per row: bf16 output, or NULL */
    const float *skip[MR_MAX];   /* per row: skip input, or NULL */
    uint16_t last;               /* mask of the valid channels of the last vector */
    bool relu;                   /* ReLU in the epilogue */
} s_tile;

#define TGT_F32 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define TGT_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#define INLINE static inline __attribute__((always_inline))

/* acc + bias (+ skip), ReLU, fp32 store: row m, vector v. */
INLINE TGT_F32 __m512 s_finish(const s_tile *t, int m, int v, __mmask16 k, __m512 x)
{
    x = _mm512_add_ps(x, _mm512_load_ps(t->bias + 16 * v));
    if (t->skip[m])
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, t->skip[m] + 16 * v));
    if (t->relu)
        x = _mm512_max_ps(x, _mm512_setzero_ps());
    if (t->out[m])
        _mm512_mask_storeu_ps(t->out[m] + 16 * v, k, x);
    return x;
}

/* The accumulators of a tile, zeroed. */
INLINE TGT_F32 void s_acc_zero(__m512 acc[MR_MAX][NV_MAX], const int M, const int NV)
{
#pragma GCC unroll 12
    for (int m = 0; m < M; m++)
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            acc[m][v] = _mm512_setzero_ps();
}

/* The tile of one arithmetic: acc[m][v] = sum over taps and channels of
 * a[m][c] w[c][v], then FINISH(t, m, v, mask, acc[m][v]) for each. ELEM is an
 * element of a and w, VEC a vector of w's row, LOAD(p) one from p, SPLAT(e)
 * e in every lane, MADD(acc, x, b) acc + x b. */
#define S_TILE(NAME, TGT, ELEM, VEC, LOAD, SPLAT, MADD, FINISH)                                   \
    INLINE TGT void NAME(const s_tile *t, const int M, const int NV)                              \
    {                                                                                             \
        __m512 acc[MR_MAX][NV_MAX];                                                               \
        s_acc_zero(acc, M, NV);                                                                   \
        for (int tt = 0; tt < t->ntaps; tt++) {                                                   \
            const ELEM *w = t->w[tt];                                                             \
            const ELEM *a[MR_MAX];                                                                \
            _Pragma("GCC unroll 12")                                                              \
            for (int m = 0; m < M; m++)                                                           \
                a[m] = t->a[tt][m];                                                               \
            for (int c = 0; c < t->cn; c++) {                                                     \
                VEC b[NV_MAX];                                                                    \
                _Pragma("GCC unroll 8")                                                           \
                for (int v = 0; v < NV; v++)                                                      \
                    b[v] = LOAD(w + 16 * v);                                                      \
                _Pragma("GCC unroll 12")                                                          \
                for (int m = 0; m < M; m++) {                                                     \
                    VEC x = SPLAT(a[m][c]);                                                       \
                    _Pragma("GCC unroll 8")                                                       \
                    for (int v = 0; v < NV; v++)                                                  \
                        acc[m][v] = MADD(acc[m][v], x, b[v]);                                     \
                }                                                                                 \
                w += t->ldw;                                                                      \
            }                                                                                     \
        }                                                                                         \
        _Pragma("GCC unroll 12")                                                                  \
        for (int m = 0; m < M; m++)                                                               \
            _Pragma("GCC unroll 8")                                                               \
            for (int v = 0; v < NV; v++)                                                          \
                FINISH(t, m, v, v == NV - 1 ? t->last : 0xFFFF, acc[m][v]);                       \
    }

/* The fp32 tile: fused multiply-adds of channels. */
#define S_MADD_F32(acc, x, b) _mm512_fmadd_ps(x, b, acc)
S_TILE(s_tile_f32, TGT_F32, float, __m512, _mm512_load_ps, _mm512_set1_ps, S_MADD_F32, s_finish)

/* The bf16 tile: pairs of channels, vdpbf16ps into fp32 accumulators; the
 * output also in bf16 where asked. */
#define S_LOAD_BF16(p) ((__m512bh)_mm512_load_si512(p))
#define S_SPLAT_BF16(e) ((__m512bh)_mm512_set1_epi32((int)(e)))
INLINE TGT_BF16 void s_finish_bf16(const s_tile *t, int m, int v, __mmask16 k, __m512 acc)
{
    __m512 x = s_finish(t, m, v, k, acc);
    if (t->outb[m])
        _mm256_mask_storeu_epi16(t->outb[m] + 16 * v, k, (__m256i)_mm512_cvtneps_pbh(x));
}
S_TILE(s_tile_bf16, TGT_BF16, uint32_t, __m512bh, S_LOAD_BF16, S_SPLAT_BF16, _mm512_dpbf16_ps,
       s_finish_bf16)

/* Rows per tile for NV vectors: about 24 accumulators, within MR_MAX. */
static const int s_rows[NV_MAX + 1] = {0, 12, 12, 8, 6, 4, 4, 3, 3};

/* One weight-gradient tile (kernel_conv_wgrad): dw rows c0..c0+M-1 of one
 * tap, NV vectors of columns from n0, summed over (row, neighbour) pairs. */
typedef struct s_wtile {
    int n;                 /* pairs */
    const float *const *a; /* (n) each pair's input row (the neighbour under the tap) */
    const float *const *b; /* (n) each pair's output-gradient row */
    int c0, n0;            /* the tile's first input channel and output column */
    float *dw;             /* dw at row tap*C + c0, column n0 (+=) */
    int ldw;               /* floats between dw rows (F) */
    uint16_t last;         /* mask of the valid columns of the last vector */
} s_wtile;

/* acc[m][v] = sum over pairs k of a[k][c0 + m] b[k][n0 + 16v ..]; dw += acc. */
INLINE TGT_F32 void s_tile_wf32(const s_wtile *t, const int M, const int NV)
{
    __m512 acc[MR_MAX][NV_MAX];
    s_acc_zero(acc, M, NV);
    for (int k = 0; k < t->n; k++) {
        const float *pa = t->a[k] + t->c0, *pb = t->b[k] + t->n0;
        __m512 b[NV_MAX];
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            b[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(t->last, pb + 16 * v)
                               : _mm512_loadu_ps(pb + 16 * v);
#pragma GCC unroll 12
        for (int m = 0; m < M; m++) {
            __m512 x = _mm512_set1_ps(pa[m]);
#pragma GCC unroll 8
            for (int v = 0; v < NV; v++)
                acc[m][v] = _mm512_fmadd_ps(x, b[v], acc[m][v]);
        }
    }
#pragma GCC unroll 12
    for (int m = 0; m < M; m++)
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) {
            __mmask16 k = v == NV - 1 ? t->last : 0xFFFF;
            float *d = t->dw + (size_t)m * t->ldw + 16 * v;
            _mm512_mask_storeu_ps(d, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, d), acc[m][v]));
        }
}

typedef void (*s_tile_fn)(const s_tile *t);
typedef void (*s_wtile_fn)(const s_wtile *t);

/* One function per (kind, NV, M) for NV in {1, 2, 3, 4, 8}. */
#define S_FN(P, TGT, NV, M)                                                                       \
    static TGT void s_##P##_##NV##_##M(const S_T_##P *t) { s_tile_##P(t, M, NV); }
#define S_T_f32 s_tile
#define S_T_bf16 s_tile
#define S_T_wf32 s_wtile
#define S_FNS3(P, TGT, NV) S_FN(P, TGT, NV, 1) S_FN(P, TGT, NV, 2) S_FN(P, TGT, NV, 3)
#define S_FNS4(P, TGT, NV) S_FNS3(P, TGT, NV) S_FN(P, TGT, NV, 4)
#define S_FNS6(P, TGT, NV) S_FNS4(P, TGT, NV) S_FN(P, TGT, NV, 5) S_FN(P, TGT, NV, 6)
#define S_FNS8(P, TGT, NV) S_FNS6(P, TGT, NV) S_FN(P, TGT, NV, 7) S_FN(P, TGT, NV, 8)
#define S_FNS12(P, TGT, NV)                                                                       \
    S_FNS8(P, TGT, NV) S_FN(P, TGT, NV, 9) S_FN(P, TGT, NV, 10) S_FN(P, TGT, NV, 11)               \
        S_FN(P, TGT, NV, 12)
#define S_ALL(P, TGT)                                                                             \
    S_FNS12(P, TGT, 1) S_FNS12(P, TGT, 2) S_FNS8(P, TGT, 3) S_FNS6(P, TGT, 4) S_FNS3(P, TGT, 8)
S_ALL(f32, TGT_F32)
S_ALL(bf16, TGT_BF16)
S_ALL(wf32, TGT_F32)

#define S_ROW3(P, NV) s_##P##_##NV##_1, s_##P##_##NV##_2, s_##P##_##NV##_3
#define S_ROW6(P, NV) S_ROW3(P, NV), s_##P##_##NV##_4, s_##P##_##NV##_5, s_##P##_##NV##_6
#define S_ROW8(P, NV) S_ROW6(P, NV), s_##P##_##NV##_7, s_##P##_##NV##_8
#define S_ROW12(P, NV) S_ROW8(P, NV), s_##P##_##NV##_9, s_##P##_##NV##_10, s_##P##_##NV##_11, \
                       s_##P##_##NV##_12
#define S_TABLE(P)                                                                                \
    {                                                                                             \
        {0}, {0, S_ROW12(P, 1)}, {0, S_ROW12(P, 2)}, {0, S_ROW8(P, 3)}, {0, S_ROW6(P, 4)}, {0}, \
            {0}, {0}, {0, S_ROW3(P, 8)},                                                          \
    }
/* [precision][NV][M] */
static const s_tile_fn s_fns[2][NV_MAX + 1][MR_MAX + 1] = {S_TABLE(f32), S_TABLE(bf16)};
static const s_wtile_fn s_wfns[NV_MAX + 1][MR_MAX + 1] = S_TABLE(wf32);

/* Vectors of the next column block out of `left`: 8 while there are 8, all
 * when at most 4 remain, else 4 (so NV is one of 1, 2, 3, 4, 8). */
static int s_block(int left)
{
    return left >= 8 ? 8 : left <= 4 ? left : 4;
}

void kernel_conv_run(const kernel_conv *k, const kernel_board *bd, const kernel_io *io)
{
    assert(k->taps == bd->taps && (k->taps == 1 || k->C <= KERNEL_MAX_CHANNELS));
    assert(kernel_cpu_has(k->bf16 ? KERNEL_BF16 : KERNEL_AVX512));
    assert(!k->bf16 ? io->in && !io->outb : io->inb != NULL);
    assert(!io->outb || k->F % 2 == 0);
    int HW = bd->HW, taps = bd->taps, N = io->N, F = k->F;
    size_t rows = (size_t)N * HW;
    size_t lda = k->bf16 ? (size_t)k->Cp * 2 : (size_t)k->C * 4; /* bytes per input row */
    const char *in = k->bf16 ? (const char *)io->inb : (const char *)io->in;
    s_tile t;
    t.cn = k->bf16 ? k->Cp / 2 : k->C;
    t.ldw = k->Fp;
    t.relu = io->relu;
    int nvec = k->Fp / 16;
    for (int v0 = 0; v0 < nvec;) {
        int NV = s_block(nvec - v0), MR = s_rows[NV], n0 = v0 * 16;
        int valid = F - n0 < NV * 16 ? F - n0 : NV * 16; /* columns of this block */
        t.last = (uint16_t)(valid % 16 ? (1u << (valid % 16)) - 1 : 0xFFFF);
        t.bias = k->bias + n0;
        int pi = 0, pb = 0; /* row r0 is point order[pi] of position pb */
        for (size_t r0 = 0; r0 < rows; r0 += (size_t)MR) {
            int M = rows - r0 < (size_t)MR ? (int)(rows - r0) : MR;
            /* Step 1. The rows: point order[i] of position b for row i*N + b. */
            int pt[MR_MAX];
            size_t pos[MR_MAX];
            unsigned mask = 0;
            for (int m = 0; m < M; m++) {
                pt[m] = bd->order[pi];
                pos[m] = (size_t)pb;
                if (++pb == N)
                    pb = 0, pi++;
                mask |= bd->mask[pt[m]];
                size_t orow = pos[m] * HW + (size_t)pt[m];
                t.out[m] = io->out ? io->out + orow * F + n0 : NULL;
                t.outb[m] = io->outb ? io->outb + orow * F + n0 : NULL;
                t.skip[m] = io->skip ? io->skip + orow * F + n0 : NULL;
            }
            /* Step 2. The taps any row of the tile has, and each row's input under them. */
            t.ntaps = 0;
            for (int tap = 0; tap < taps; tap++) {
                if (!(mask & 1u << tap))
                    continue;
                for (int m = 0; m < M; m++) {
                    int q = bd->nbr[pt[m] * taps + tap];
                    t.a[t.ntaps][m] = q < 0 ? (const void *)s_zero
                                            : in + (pos[m] * HW + (size_t)q) * lda;
                }
                size_t wrow = (size_t)tap * (k->bf16 ? (size_t)k->Cp / 2 : (size_t)k->C);
                t.w[t.ntaps] = k->bf16 ? (const void *)(k->wb + wrow * k->Fp + n0)
                                       : (const void *)(k->w + wrow * k->Fp + n0);
                t.ntaps++;
            }
            s_fns[k->bf16][NV][M](&t);
        }
        v0 += NV;
    }
}

/* Output rows per chunk of kernel_conv_wgrad: a chunk's gradient and input
 * rows (2 x 64 KB at 64 channels) stay in L2 with dw while every tile of
 * dw sums over them. */
#define WG_ROWS 256

void kernel_conv_wgrad(float *dw, const float *in, const float *dout, const kernel_board *bd,
                       int N, int C, int F)
{
    assert(kernel_cpu_has(KERNEL_AVX512));
    int HW = bd->HW, taps = bd->taps, nvec = (F + 15) / 16;
    size_t rows = (size_t)N * HW;
    const float *pa[WG_ROWS], *pb[WG_ROWS];
    s_wtile t = {.a = pa, .b = pb, .ldw = F};
    for (size_t r0 = 0; r0 < rows; r0 += WG_ROWS) {
        size_t r1 = r0 + WG_ROWS < rows ? r0 + WG_ROWS : rows;
        for (int tap = 0; tap < taps; tap++) {
            /* Step 1. The chunk's rows whose neighbour under the tap is on the board. */
            int n = 0;
            size_t pos = r0 / (size_t)HW;
            int p = (int)(r0 % (size_t)HW);
            for (size_t r = r0; r < r1; r++) {
                int q = bd->nbr[p * taps + tap];
                if (q >= 0) {
                    pa[n] = in + (pos * HW + (size_t)q) * C;
                    pb[n++] = dout + r * F;
                }
                if (++p == HW)
                    p = 0, pos++;
            }
            t.n = n;
            if (!n)
                continue;
            /* Step 2. Every tile of this tap's rows of dw over those pairs. */
            for (int v0 = 0; v0 < nvec;) {
                int NV = s_block(nvec - v0), MR = s_rows[NV], n0 = v0 * 16;
                int valid = F - n0 < NV * 16 ? F - n0 : NV * 16;
                t.last = (uint16_t)(valid % 16 ? (1u << (valid % 16)) - 1 : 0xFFFF);
                t.n0 = n0;
                for (int c0 = 0; c0 < C; c0 += MR) {
                    int M = C - c0 < MR ? C - c0 : MR;
                    t.c0 = c0;
                    t.dw = dw + ((size_t)tap * C + c0) * F + n0;
                    s_wfns[NV][M](&t);
                }
                v0 += NV;
            }
        }
    }
}

#else /* not x86-64 GCC: no kernels; kernel_cpu_has says so */

void kernel_conv_run(const kernel_conv *k, const kernel_board *bd, const kernel_io *io)
{
    (void)k, (void)bd, (void)io;
    KZ_CHECK(!"kernel_conv_run without AVX-512");
}

void kernel_conv_wgrad(float *dw, const float *in, const float *dout, const kernel_board *bd,
                       int N, int C, int F)
{
    (void)dw, (void)in, (void)dout, (void)bd, (void)N, (void)C, (void)F;
    KZ_CHECK(!"kernel_conv_wgrad without AVX-512");
}

#endif
