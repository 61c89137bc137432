/* model_eval: fast batched inference (model_eval_*, declared in model.h):
 * batch norm folded into the convolutions when the evaluator is made, and
 * the chunks of a batch shared among helper threads (lanes). Two paths:
 *   - kernels (kernel.h, AVX-512 fp32 or bf16): every layer one kernel run
 *     over a cache-sized chunk of positions in NHWC rows, with bias, skip and
 *     ReLU in its epilogue;
 *   - OpenBLAS (the fallback): each 3x3 convolution one sgemm over a chunk's
 *     im2col, the epilogues writing straight into the next layer's im2col.
 * Allocates nothing in model_eval_run. */
#include "nn/model.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kernel.h"
#include "nn/layer.h"
#include "nn/model_internal.h"
#include "common/util.h"

/* Bytes of im2col a chunk of positions may use in the evaluator: chunks of
 * this size keep the GEMM's input and the epilogue's writes in L2 (measured
 * on a 2 MB-L2 Xeon: 256 KB, 4 positions of 5x5x64, is as fast as 448 KB
 * and clearly faster than 900 KB or 128 KB). */
#ifndef EVAL_CHUNK_BYTES
#define EVAL_CHUNK_BYTES (256u * 1024u)
#endif
/* The same for the kernels: bytes of a chunk's activations (the rows each
 * layer reads and writes), which with one layer's weights stay in L2. */
#ifndef EVAL_KERNEL_CHUNK_BYTES
#define EVAL_KERNEL_CHUNK_BYTES (512u * 1024u)
#endif

/* What runs the convolutions (model_eval_path). */
enum { s_PATH_BLAS = 0, s_PATH_F32 = 1, s_PATH_BF16 = 2 };
static const char *const s_path_names[] = {"openblas-fp32", "avx512-fp32", "avx512-bf16"};

/* The process-wide default precision (model_set_precision). */
static int s_precision = MODEL_FP32;

/* --- The evaluator ------------------------------------------------------------- */

/* One lane: a thread's share of a batch and its own chunk buffers. */
typedef struct s_lane {
    model_eval *e;   /* the evaluator */
    float *col0;     /* (chunk*HW, 9C) stem im2col; padding slots stay zero */
    float *colp;     /* (chunk*HW, 9F) im2col of a block's input; its centre taps are the input */
    float *colq;     /* (chunk*HW, 9F) im2col of a block's middle activation */
    float *out;      /* (chunk*HW, max(F, Pf+Vf)) GEMM output */
    void *xin;       /* kernels: (chunk*HW, C) fp32 or (chunk*HW, Cp) bf16 input rows */
    float *X, *T;    /* kernels: (chunk*HW, F) a block's input (the residual stream) and
                      * its middle activation (fp32 only) */
    uint16_t *Xb, *Tb; /* kernels, bf16: (chunk*HW, F) bf16 copies the convolutions read */
    float *hout;     /* kernels: (chunk*HW, Pf+Vf) the heads' 1x1 convolutions */
    int b0, b1;      /* this run's positions [b0, b1) */
    int chunk;       /* this run's positions per chunk */
    pthread_t thread;/* helper lanes only */
    bool started;    /* thread created */
} s_lane;

struct model_eval {
    int path;        /* s_PATH_*: what runs the convolutions */
    int max_batch;   /* most positions per run */
    int chunk;       /* most positions per chunk of the tower */
    int C, HW, F;    /* input planes, board points, filters */
    int blocks;      /* residual blocks */
    int Pf, Vf, Vh;  /* head sizes */
    int A;           /* actions */
    float *w0, *b0;  /* stem (9C, F), (F), BN folded */
    float *wt, *bt;  /* tower (2*blocks) x (9F, F), (2*blocks) x (F), BN folded */
    float *wh, *bh;  /* both heads' 1x1 convs (F, Pf + Vf), (Pf + Vf), BN folded */
    float *wp, *bp;  /* policy linear (Pf*HW, A), (A) */
    float *wv1, *bv1;/* value linear 1 (Vf*HW, Vh), (Vh) */
    float *wv2;      /* value linear 2 (Vh, nv): internal layout, row k output j at k*nv+j */
    float bv2[3];    /* value linear 2 bias (nv) */
    int nv;          /* value outputs: 1 (tanh) or 3 (win, draw, loss: softmax) */
    float *pfeat;    /* (max_batch, Pf*HW) policy head features, flattened (c, y, x) */
    float *vfeat;    /* (max_batch, Vf*HW) value head features, flattened */
    float *vhid;     /* (max_batch, Vh) value hidden layer */
    int *nscat;      /* (HW) im2col slots each board point feeds */
    int *scat;       /* (HW, 9) those slots: row q*9 + tap, the centre tap first */
    kernel_board *b3, *b1, *bl; /* kernels: the 3x3 board, the pointwise one, a 1x1 one */
    kernel_conv kstem;   /* kernels: the stem (bf16 on the bf16 path) */
    kernel_conv *ktower; /* kernels: (2*blocks) the tower's convolutions (likewise) */
    kernel_conv khead;   /* kernels: both heads' 1x1 convs (fp32) */
    kernel_conv kpol;    /* kernels: the policy linear (fp32) */
    kernel_conv kval;    /* kernels: the value head's first linear (fp32) */
    int lanes;       /* threads working on a batch (lane 0 is the caller) */
    s_lane *lane;    /* (lanes) */
    const float *x;  /* this run's input */
    model_arch arch; /* the model's shape (a copy: the model may go first) */
    const game_def *g;      /* its game, when the network derives input planes */
    float *xd;       /* (max_batch, C*HW) the input with the derived planes, or NULL */
    pthread_mutex_t mu;   /* guards the fields below */
    pthread_cond_t go;    /* helpers: a new run (gen changed) or quit */
    pthread_cond_t done;  /* caller: pending reached 0 */
    uint64_t gen;         /* run counter */
    int pending;          /* helper lanes still working on this run */
    bool quit;            /* helpers exit */
    bool sync;            /* mu and the conds are initialised */
};


/* Folds BN into a conv: w' = w * s, b' = beta - mean * s, s = gamma / sqrt(var + eps). */
static void s_fold(const model *m, const model_convbn *l, float *w, int ldw, float *b)
{
    const float *src = model_tdata(m, l->w);
    const float *g = model_tdata(m, l->gamma), *be = model_tdata(m, l->beta);
    const float *mu = model_tdata(m, l->mean), *var = model_tdata(m, l->var);
    size_t rows = m->t[l->w].size / (size_t)l->cout;
    for (int f = 0; f < l->cout; f++) {
        double s = g[f] / sqrt((double)var[f] + m->bn_eps);
        for (size_t r = 0; r < rows; r++)
            w[r * (size_t)ldw + f] = (float)(src[r * (size_t)l->cout + f] * s);
        b[f] = (float)(be[f] - mu[f] * s);
    }
}

static void s_lane_run(s_lane *l);

static void *s_helper(void *arg)
{
    s_lane *l = arg;
    model_eval *e = l->e;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (e->gen == seen && !e->quit)
            pthread_cond_wait(&e->go, &e->mu);
        if (e->quit) {
            pthread_mutex_unlock(&e->mu);
            return NULL;
        }
        seen = e->gen;
        pthread_mutex_unlock(&e->mu);
        s_lane_run(l);
        pthread_mutex_lock(&e->mu);
        if (--e->pending == 0)
            pthread_cond_signal(&e->done);
        pthread_mutex_unlock(&e->mu);
    }
}

void model_eval_destroy(model_eval **pe)
{
    model_eval *e = *pe;
    if (!e)
        return;
    if (e->sync) {
        pthread_mutex_lock(&e->mu);
        e->quit = true;
        pthread_cond_broadcast(&e->go);
        pthread_mutex_unlock(&e->mu);
    }
    for (int i = 0; e->lane && i < e->lanes; i++) {
        s_lane *l = &e->lane[i];
        if (l->started)
            pthread_join(l->thread, NULL);
        free_all(l->col0, l->colp, l->colq, l->out, l->xin, l->X, l->T, l->Xb, l->Tb, l->hout);
    }
    kernel_board_destroy(&e->b3);
    kernel_board_destroy(&e->b1);
    kernel_board_destroy(&e->bl);
    kernel_conv_free(&e->kstem);
    for (int i = 0; e->ktower && i < 2 * e->blocks; i++)
        kernel_conv_free(&e->ktower[i]);
    free(e->ktower);
    kernel_conv_free(&e->khead);
    kernel_conv_free(&e->kpol);
    kernel_conv_free(&e->kval);
    if (e->sync) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->go);
        pthread_cond_destroy(&e->done);
    }
    float *bufs[] = {e->w0,  e->b0, e->wt,    e->bt,    e->wh,   e->bh, e->wp,
                     e->bp,  e->wv1, e->bv1,  e->wv2,   e->pfeat, e->vfeat, e->vhid, e->xd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free_all(e->lane, e->nscat, e->scat, e);
    *pe = NULL;
}

void model_eval_config_default(model_eval_config *c)
{
    c->precision = s_precision;
    c->kernels = MODEL_KERNELS_AUTO;
}

int model_set_precision(int p)
{
    if (p != MODEL_FP32 && p != MODEL_BF16)
        return KZ_EINVAL;
    s_precision = p;
    return 0;
}

int model_precision_parse(const char *s, int *p)
{
    static const char *const names[] = {[MODEL_FP32] = "fp32", [MODEL_BF16] = "bf16"};
    return name_parse(s, names, 2, p);
}

const char *model_precision_name(int p) { return p == MODEL_BF16 ? "bf16" : "fp32"; }

const char *model_eval_path(const model_eval *e) { return s_path_names[e->path]; }

model_eval *model_eval_new(const model *m, int max_batch)
{
    model_eval_config c;
    model_eval_config_default(&c);
    return model_eval_new_config(m, max_batch, &c);
}

/* The path for config c on this CPU: bf16 needs an even F (pairs of channels). */
static int s_path(const model_eval_config *c, int F)
{
    if (c->kernels == MODEL_KERNELS_BLAS || !kernel_cpu_has(KERNEL_AVX512))
        return s_PATH_BLAS;
    if (c->precision == MODEL_BF16 && kernel_cpu_has(KERNEL_BF16) && F % 2 == 0)
        return s_PATH_BF16;
    return s_PATH_F32;
}

/* The kernel path's packed weights, from the folded fp32 ones; frees the
 * folded tower and stem, which only the BLAS path reads. 0 or KZ_ENOMEM. */
static int s_pack(model_eval *e, int H, int W)
{
    bool bf = e->path == s_PATH_BF16;
    int C = e->C, HW = e->HW, F = e->F, P = e->Pf + e->Vf;
    size_t K = (size_t)9 * F;
    e->b3 = kernel_board_new(H, W, 9);
    e->b1 = kernel_board_new(H, W, 1);
    e->bl = kernel_board_new(1, 1, 1);
    e->ktower = calloc((size_t)2 * e->blocks + 1, sizeof *e->ktower);
    if (!e->b3 || !e->b1 || !e->bl || !e->ktower)
        return KZ_ENOMEM;
    int rc = kernel_conv_init(&e->kstem, e->w0, e->b0, 9, C, F, bf);
    for (int i = 0; i < 2 * e->blocks && !rc; i++)
        rc = kernel_conv_init(&e->ktower[i], e->wt + i * K * F, e->bt + (size_t)i * F, 9, F, F, bf);
    if (!rc)
        rc = kernel_conv_init(&e->khead, e->wh, e->bh, 1, F, P, false);
    if (!rc)
        rc = kernel_conv_init(&e->kpol, e->wp, e->bp, 1, e->Pf * HW, e->A, false);
    if (!rc)
        rc = kernel_conv_init(&e->kval, e->wv1, e->bv1, 1, e->Vf * HW, e->Vh, false);
    free(e->w0), free(e->wt);
    e->w0 = e->wt = NULL;
    return rc;
}

model_eval *model_eval_new_config(const model *m, int max_batch, const model_eval_config *cfg)
{
    if (max_batch < 1)
        return NULL;
    const model_arch *a = &m->arch;
    model_eval *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    int C = a->in_planes, H = a->height, W = a->width, HW = H * W, F = a->filters;
    int nb = a->blocks, Pf = a->policy_filters, Vf = a->value_filters, Vh = a->value_hidden;
    e->path = s_path(cfg, F);
    e->max_batch = max_batch;
    e->C = C;
    e->HW = HW;
    e->F = F;
    e->blocks = nb;
    e->Pf = Pf;
    e->Vf = Vf;
    e->Vh = Vh;
    e->nv = a->value_wdl ? 3 : 1;
    e->A = a->actions;
    size_t per = (size_t)HW * 9 * F * sizeof(float), budget = EVAL_CHUNK_BYTES;
    if (e->path != s_PATH_BLAS) {
        per = (size_t)HW * F * (e->path == s_PATH_BF16 ? 4 + 2 + 2 : 4 + 4);
        budget = EVAL_KERNEL_CHUNK_BYTES;
    }
    size_t chunk = budget / per;
    chunk = chunk < 1 ? 1 : chunk;
    e->chunk = chunk > (size_t)max_batch ? max_batch : (int)chunk;
    int threads = model_threads();
    e->lanes = threads < 1 ? 1 : threads > max_batch ? max_batch : threads;
    size_t rows = (size_t)e->chunk * HW, P = (size_t)(Pf + Vf);
    size_t K = (size_t)9 * F;
    e->w0 = model_alloc_floats((size_t)9 * C * F, false);
    e->b0 = model_alloc_floats(F, false);
    e->wt = model_alloc_floats(K * F * 2 * nb, false);
    e->bt = model_alloc_floats((size_t)F * 2 * nb, false);
    e->wh = model_alloc_floats(F * P, false);
    e->bh = model_alloc_floats(P, false);
    e->wp = model_alloc_floats((size_t)Pf * HW * e->A, false);
    e->bp = model_alloc_floats(e->A, false);
    e->wv1 = model_alloc_floats((size_t)Vf * HW * Vh, false);
    e->bv1 = model_alloc_floats(Vh, false);
    e->wv2 = model_alloc_floats((size_t)Vh * e->nv, false);
    e->pfeat = model_alloc_floats((size_t)max_batch * Pf * HW, false);
    e->vfeat = model_alloc_floats((size_t)max_batch * Vf * HW, false);
    e->vhid = model_alloc_floats((size_t)max_batch * Vh, false);
    e->arch = *a;
    if (a->derived_planes) {
        e->g = game_find(a->game);
        e->xd = model_alloc_floats((size_t)max_batch * C * HW, false);
        if (!e->g || !e->g->derive_planes || !e->xd)
            goto fail;
    }
    e->nscat = calloc((size_t)HW, sizeof *e->nscat);
    e->scat = calloc((size_t)HW * 9, sizeof *e->scat);
    e->lane = calloc((size_t)e->lanes, sizeof *e->lane);
    if (!e->w0 || !e->b0 || !e->wt || !e->bt || !e->wh || !e->bh || !e->wp || !e->bp ||
        !e->wv1 || !e->bv1 || !e->wv2 || !e->pfeat || !e->vfeat || !e->vhid || !e->nscat ||
        !e->scat || !e->lane)
        goto fail;
    for (int i = 0; i < e->lanes; i++) {
        s_lane *l = &e->lane[i];
        l->e = e;
        if (e->path == s_PATH_BLAS) {
            l->col0 = model_alloc_floats(rows * 9 * C, true);
            l->colp = model_alloc_floats(rows * K, true);
            l->colq = model_alloc_floats(rows * K, true);
            l->out = model_alloc_floats(rows * ((size_t)F > P ? (size_t)F : P), false);
            if (!l->col0 || !l->colp || !l->colq || !l->out)
                goto fail;
            continue;
        }
        /* Kernels: the bf16 input rows have an even channel count, the odd
         * one zero (allocated zeroed, never written). */
        size_t Cp = (size_t)(C + 1) / 2 * 2;
        l->xin = model_alloc_floats(rows * Cp, true);
        l->X = model_alloc_floats(rows * F, false);
        l->hout = model_alloc_floats(rows * P, false);
        if (!l->xin || !l->X || !l->hout)
            goto fail;
        if (e->path == s_PATH_F32 && !(l->T = model_alloc_floats(rows * F, false)))
            goto fail;
        if (e->path == s_PATH_BF16 &&
            (!(l->Xb = (uint16_t *)model_alloc_floats(rows * F / 2, false)) ||
             !(l->Tb = (uint16_t *)model_alloc_floats(rows * F / 2, false))))
            goto fail;
    }
    /* Step 1. Fold batch norm into every convolution. */
    s_fold(m, &m->stem, e->w0, F, e->b0);
    for (int i = 0; i < 2 * nb; i++)
        s_fold(m, &m->convs[i], e->wt + (size_t)i * K * F, F, e->bt + (size_t)i * F);
    s_fold(m, &m->pconv, e->wh, (int)P, e->bh);
    s_fold(m, &m->vconv, e->wh + Pf, (int)P, e->bh + Pf);
    memcpy(e->wp, model_tdata(m, m->pfc.w), (size_t)Pf * HW * e->A * sizeof(float));
    memcpy(e->bp, model_tdata(m, m->pfc.b), (size_t)e->A * sizeof(float));
    memcpy(e->wv1, model_tdata(m, m->vfc1.w), (size_t)Vf * HW * Vh * sizeof(float));
    memcpy(e->bv1, model_tdata(m, m->vfc1.b), (size_t)Vh * sizeof(float));
    memcpy(e->wv2, model_tdata(m, m->vfc2.w), (size_t)Vh * e->nv * sizeof(float));
    memcpy(e->bv2, model_tdata(m, m->vfc2.b), (size_t)e->nv * sizeof(float));
    if (e->path != s_PATH_BLAS && s_pack(e, H, W) != 0)
        goto fail;
    /* Step 2. The scatter table: board point p is tap t of output point
     * q = p - offset(t) whenever q is on the board. */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int p = y * W + x, n = 0;
            e->scat[p * 9 + n++] = p * 9 + 4;
            for (int t = 0; t < 9; t++) {
                int qy = y - (t / 3 - 1), qx = x - (t % 3 - 1);
                if (t == 4 || qy < 0 || qy >= H || qx < 0 || qx >= W)
                    continue;
                e->scat[p * 9 + n++] = (qy * W + qx) * 9 + t;
            }
            e->nscat[p] = n;
        }
    /* Step 3. Helper threads for lanes 1.. */
    if (e->lanes > 1) {
        if (pthread_mutex_init(&e->mu, NULL) != 0)
            goto fail;
        pthread_cond_init(&e->go, NULL);
        pthread_cond_init(&e->done, NULL);
        e->sync = true;
        for (int i = 1; i < e->lanes; i++) {
            if (pthread_create(&e->lane[i].thread, NULL, s_helper, &e->lane[i]) != 0)
                goto fail;
            e->lane[i].started = true;
        }
    }
    return e;
fail:
    model_eval_destroy(&e);
    return NULL;
}

int model_eval_max_batch(const model_eval *e) { return e->max_batch; }

int model_eval_chunk(const model_eval *e, int B)
{
    if (B <= 0)
        return 0;
    int n = (B + e->chunk - 1) / e->chunk;
    if (n < e->lanes)
        n = B < e->lanes ? B : e->lanes; /* one chunk per lane at least */
    return (B + n - 1) / n;
}

int model_eval_lanes(const model_eval *e) { return e->lanes; }

/* The stem's im2col straight from (nc, C, H, W) planes. */
static void s_stem_im2col(const model_eval *e, float *col0, const float *x, int nc)
{
    int C = e->C, HW = e->HW;
    for (int b = 0; b < nc; b++) {
        float *base = col0 + (size_t)b * HW * 9 * C;
        for (int c = 0; c < C; c++) {
            const float *plane = x + ((size_t)b * C + c) * HW;
            for (int p = 0; p < HW; p++) {
                const int *s = e->scat + p * 9;
                for (int k = 0; k < e->nscat[p]; k++)
                    base[(size_t)s[k] * C + c] = plane[p];
            }
        }
    }
}

/* The epilogue of a 3x3 conv: y = relu(out + bias [+ skip]) written to every
 * im2col slot of `col` that board point feeds. The skip is the centre tap of
 * col itself (the block's input), read before it is overwritten. */
LAYER_CLONES static void s_epilogue(const model_eval *e, float *col, const float *out,
                                const float *bias, int nc, bool skip)
{
    int F = e->F, HW = e->HW, F16 = F & ~15;
    const layer_v16 zero = {0};
    for (int b = 0; b < nc; b++) {
        float *base = col + (size_t)b * HW * 9 * F;
        for (int p = 0; p < HW; p++) {
            const float *o = out + ((size_t)b * HW + p) * F;
            const int *s = e->scat + p * 9;
            int n = e->nscat[p];
            float *dst[9];
            for (int k = 0; k < n; k++)
                dst[k] = base + (size_t)s[k] * F;
            for (int f = 0; f < F16; f += 16) {
                layer_v16 v = *(const layer_v16 *)(o + f) + *(const layer_v16 *)(bias + f);
                if (skip)
                    v += *(const layer_v16 *)(dst[0] + f);
                v = (layer_v16)((layer_v16i)v & (layer_v16i)(v > zero));
                for (int k = 0; k < n; k++)
                    *(layer_v16 *)(dst[k] + f) = v;
            }
            for (int f = F16; f < F; f++) {
                float v = o[f] + bias[f] + (skip ? dst[0][f] : 0.0f);
                v = v > 0.0f ? v : 0.0f;
                for (int k = 0; k < n; k++)
                    dst[k][f] = v;
            }
        }
    }
}

/* OpenBLAS single-threaded while any multi-lane run is on (a count, so that
 * concurrent runs of several evaluators restore the setting once, at the end). */
static pthread_mutex_t s_blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int s_blas_users;  /* multi-lane runs under way */
static int s_blas_saved;  /* OpenBLAS's thread count before the first of them */

static void s_blas_single(bool on)
{
    pthread_mutex_lock(&s_blas_mu);
    if (on && s_blas_users++ == 0) {
        s_blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    } else if (!on && --s_blas_users == 0) {
        openblas_set_num_threads(s_blas_saved);
    }
    pthread_mutex_unlock(&s_blas_mu);
}

/* The heads' 1x1 convs' output rows (nc*HW, Pf+Vf), bias and ReLU applied
 * (added when add_bias), flattened into pfeat and vfeat as (c, y, x) from
 * position b0 on. */
static void s_heads_flatten(const model_eval *e, const float *out, bool add_bias, int b0, int nc)
{
    int HW = e->HW, Pf = e->Pf, Vf = e->Vf, P = Pf + Vf;
    for (int b = 0; b < nc; b++) {
        float *pf = e->pfeat + (size_t)(b0 + b) * Pf * HW;
        float *vf = e->vfeat + (size_t)(b0 + b) * Vf * HW;
        for (int p = 0; p < HW; p++) {
            const float *o = out + ((size_t)b * HW + p) * P;
            for (int c = 0; c < Pf; c++) {
                float v = o[c] + (add_bias ? e->bh[c] : 0.0f);
                pf[c * HW + p] = v > 0.0f ? v : 0.0f;
            }
            for (int c = 0; c < Vf; c++) {
                float v = o[Pf + c] + (add_bias ? e->bh[Pf + c] : 0.0f);
                vf[c * HW + p] = v > 0.0f ? v : 0.0f;
            }
        }
    }
}

/* The kernel path of a lane: per chunk the input planes to rows, the stem,
 * the tower (X -> T -> X, the skip read from X as the second conv overwrites
 * it) and the heads' 1x1 convs, each one kernel run. bf16: the convolutions
 * read bf16 rows (Xb, Tb) and the residual stream X stays fp32. */
static void s_lane_run_kern(s_lane *l)
{
    model_eval *e = l->e;
    bool bf = e->path == s_PATH_BF16;
    int C = e->C, HW = e->HW, Cx = bf ? e->kstem.Cp : C;
    for (int b0 = l->b0; b0 < l->b1; b0 += l->chunk) {
        int nc = l->b1 - b0 < l->chunk ? l->b1 - b0 : l->chunk;
        /* Step 1. Planes (nc, C, HW) to rows (nc*HW, Cx). */
        const float *x = e->x + (size_t)b0 * C * HW;
        for (int b = 0; b < nc; b++)
            for (int c = 0; c < C; c++)
                for (int p = 0; p < HW; p++) {
                    size_t i = ((size_t)b * HW + p) * Cx + c;
                    float v = x[((size_t)b * C + c) * HW + p];
                    if (bf)
                        ((uint16_t *)l->xin)[i] = kernel_bf16_from_f32(v);
                    else
                        ((float *)l->xin)[i] = v;
                }
        /* Step 2. Stem and tower. */
        kernel_io io = {.in = l->xin, .inb = l->xin, .out = l->X, .outb = l->Xb, .N = nc,
                        .relu = true};
        kernel_conv_run(&e->kstem, e->b3, &io);
        for (int i = 0; i < e->blocks; i++) {
            io = (kernel_io){.in = l->X, .inb = l->Xb, .out = bf ? NULL : l->T, .outb = l->Tb,
                             .N = nc, .relu = true};
            kernel_conv_run(&e->ktower[2 * i], e->b3, &io);
            io = (kernel_io){.in = l->T, .inb = l->Tb, .skip = l->X, .out = l->X,
                             .outb = i + 1 < e->blocks ? l->Xb : NULL, .N = nc, .relu = true};
            kernel_conv_run(&e->ktower[2 * i + 1], e->b3, &io);
        }
        /* Step 3. The heads' 1x1 convs (fp32), bias and ReLU in the kernel. */
        io = (kernel_io){.in = l->X, .out = l->hout, .N = nc, .relu = true};
        kernel_conv_run(&e->khead, e->b1, &io);
        s_heads_flatten(e, l->hout, false, b0, nc);
    }
}

/* One lane's positions [b0, b1): the tower and the heads' 1x1 convs, chunk
 * by chunk, into pfeat and vfeat. */
static void s_lane_run(s_lane *l)
{
    if (l->e->path != s_PATH_BLAS) {
        s_lane_run_kern(l);
        return;
    }
    model_eval *e = l->e;
    int C = e->C, HW = e->HW, F = e->F, K = 9 * F, Pf = e->Pf, Vf = e->Vf, P = Pf + Vf;
    for (int b0 = l->b0; b0 < l->b1; b0 += l->chunk) {
        int nc = l->b1 - b0 < l->chunk ? l->b1 - b0 : l->chunk, M = nc * HW;
        /* Step 1. Stem: im2col from the planes, GEMM, bias + ReLU into colp. */
        s_stem_im2col(e, l->col0, e->x + (size_t)b0 * C * HW, nc);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, F, 9 * C, 1.0f, l->col0, 9 * C,
                    e->w0, F, 0.0f, l->out, F);
        s_epilogue(e, l->colp, l->out, e->b0, nc, false);
        /* Step 2. The tower: colp -> colq -> colp (+ skip from colp's centre taps). */
        for (int i = 0; i < e->blocks; i++) {
            const float *w1 = e->wt + (size_t)2 * i * K * F, *w2 = w1 + (size_t)K * F;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, F, K, 1.0f, l->colp, K, w1,
                        F, 0.0f, l->out, F);
            s_epilogue(e, l->colq, l->out, e->bt + (size_t)2 * i * F, nc, false);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, F, K, 1.0f, l->colq, K, w2,
                        F, 0.0f, l->out, F);
            s_epilogue(e, l->colp, l->out, e->bt + (size_t)(2 * i + 1) * F, nc, true);
        }
        /* Step 3. Both heads' 1x1 convs in one GEMM over the centre taps. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, P, F, 1.0f, l->colp + 4 * F, K,
                    e->wh, P, 0.0f, l->out, P);
        s_heads_flatten(e, l->out, true, b0, nc);
    }
}

void model_eval_run(model_eval *e, const float *x, int B, float *logits, float *values)
{
    assert(B >= 0 && B <= e->max_batch);
    if (B == 0)
        return;
    int HW = e->HW, Pf = e->Pf, Vf = e->Vf;
    if (e->xd) { /* the derived planes after each position's own */
        model_input_derive(&e->arch, e->g, x, B, e->xd);
        x = e->xd;
    }
    /* Step 1. The tower, its chunks shared among the lanes. */
    int chunk = model_eval_chunk(e, B), chunks = (B + chunk - 1) / chunk;
    int used = chunks < e->lanes ? chunks : e->lanes;
    e->x = x;
    for (int i = 0; i < used; i++) {
        s_lane *l = &e->lane[i];
        l->chunk = chunk;
        l->b0 = (int)((long)chunks * i / used) * chunk;
        l->b1 = (int)((long)chunks * (i + 1) / used) * chunk;
        l->b1 = l->b1 < B ? l->b1 : B;
    }
    bool blas = e->path == s_PATH_BLAS;
    if (used > 1) {
        /* Each lane's sgemm calls run in its own thread, single-threaded. */
        if (blas)
            s_blas_single(true);
        pthread_mutex_lock(&e->mu);
        e->pending = e->lanes - 1; /* every helper wakes; the unused ones idle */
        e->gen++;
        for (int i = used; i < e->lanes; i++)
            e->lane[i].b0 = e->lane[i].b1 = 0;
        pthread_cond_broadcast(&e->go);
        pthread_mutex_unlock(&e->mu);
        s_lane_run(&e->lane[0]);
        pthread_mutex_lock(&e->mu);
        while (e->pending > 0)
            pthread_cond_wait(&e->done, &e->mu);
        pthread_mutex_unlock(&e->mu);
        if (blas)
            s_blas_single(false);
    } else {
        s_lane_run(&e->lane[0]);
    }
    /* Step 2. The heads' linear layers over the whole batch. */
    int A = e->A, Vh = e->Vh;
    if (!blas) {
        kernel_io io = {.in = e->pfeat, .out = logits, .N = B};
        kernel_conv_run(&e->kpol, e->bl, &io);
        io = (kernel_io){.in = e->vfeat, .out = e->vhid, .N = B, .relu = true};
        kernel_conv_run(&e->kval, e->bl, &io);
    } else {
        for (int b = 0; b < B; b++)
            memcpy(logits + (size_t)b * A, e->bp, (size_t)A * sizeof *logits);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, A, Pf * HW, 1.0f, e->pfeat,
                    Pf * HW, e->wp, A, 1.0f, logits, A);
        for (int b = 0; b < B; b++)
            memcpy(e->vhid + (size_t)b * Vh, e->bv1, (size_t)Vh * sizeof *e->vhid);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, Vh, Vf * HW, 1.0f, e->vfeat,
                    Vf * HW, e->wv1, Vh, 1.0f, e->vhid, Vh);
    }
    if (e->nv == 3) {
        for (int b = 0; b < B; b++) {
            const float *h = e->vhid + (size_t)b * Vh;
            float l[3] = {e->bv2[0], e->bv2[1], e->bv2[2]};
            for (int k = 0; k < Vh; k++) {
                float hk = h[k] > 0.0f ? h[k] : 0.0f;
                l[0] += hk * e->wv2[3 * k];
                l[1] += hk * e->wv2[3 * k + 1];
                l[2] += hk * e->wv2[3 * k + 2];
            }
            layer_wdl_value(values + b, l, 1);
        }
        return;
    }
    for (int b = 0; b < B; b++) {
        const float *h = e->vhid + (size_t)b * Vh;
        float acc = e->bv2[0];
        for (int k = 0; k < Vh; k++)
            acc += (h[k] > 0.0f ? h[k] : 0.0f) * e->wv2[k];
        values[b] = tanhf(acc);
    }
}
