/* bench_model: the network's speed against OpenBLAS's own.
 *
 * For 1 and 2 OpenBLAS threads and batches of 1, 8, 32, 64 and 256 positions
 * it measures the evaluator's positions per second and, interleaved with it
 * (so that both see the same machine), the GFLOP/s of sgemm alone on the
 * network's GEMM calls (see `ref` below for the two references). The
 * network's efficiency is its FLOP rate over the sgemm rate. Then training samples per
 * second at batch 256, counted as 3x the forward FLOPs, against the same
 * reference. Every figure is the median of several repetitions and is
 * printed with its formula. Run by `make bench`; about 30 s. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game.h"
#include "model.h"
#include "util.h"

#define REPS 5             /* repetitions per figure (median) */
#define REP_SECONDS 0.04   /* target length of one repetition */

/* One GEMM shape: (M, K) x (K, N). */
typedef struct shape {
    int M, K, N; /* rows, depth, columns */
} shape;

/* sgemm alone on the network's GEMMs: per chunk of rows the stem, the
 * 2*blocks tower convolutions and the heads' 1x1 convolution, then the heads'
 * linears over the batch. `distinct` gives every layer its own weights and
 * ping-pongs the activations between two buffers, as the network does (its
 * 1.8 MB of weights do not stay in cache); otherwise every call reuses the
 * same, hot, operands: the best sgemm can do on the shapes. */
typedef struct ref {
    shape s[64];     /* the calls of one chunk, then the linears */
    int n_chunk;     /* calls per chunk */
    int n;           /* calls in all */
    int chunks;      /* chunks per batch */
    float *A[2];     /* activations (ping-pong when distinct) */
    float **W;       /* (n) weights, all the same buffer unless distinct */
    float *C;        /* output */
    double flops;    /* per run */
} ref;

static float *s_filled(size_t n, int salt)
{
    float *p = xmalloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((i + (size_t)salt) % 7) * 0.01f;
    return p;
}

static void s_ref_init(ref *r, const model_arch *a, int chunk_pos, int B, bool distinct)
{
    int HW = a->height * a->width, F = a->filters, M = chunk_pos * HW, n = 0;
    r->s[n++] = (shape){M, 9 * a->in_planes, F};
    for (int i = 0; i < 2 * a->blocks && n < 60; i++)
        r->s[n++] = (shape){M, 9 * F, F};
    r->s[n++] = (shape){M, F, a->policy_filters + a->value_filters};
    r->n_chunk = n;
    r->s[n++] = (shape){B, a->policy_filters * HW, a->actions};
    r->s[n++] = (shape){B, a->value_filters * HW, a->value_hidden};
    r->n = n;
    r->chunks = (B + chunk_pos - 1) / chunk_pos;
    size_t amax = 1, wmax = 1, cmax = 1;
    r->flops = 0;
    for (int i = 0; i < n; i++) {
        shape *s = &r->s[i];
        amax = (size_t)s->M * s->K > amax ? (size_t)s->M * s->K : amax;
        wmax = (size_t)s->K * s->N > wmax ? (size_t)s->K * s->N : wmax;
        cmax = (size_t)s->M * s->N > cmax ? (size_t)s->M * s->N : cmax;
        r->flops += 2.0 * s->M * s->K * s->N * (i < r->n_chunk ? r->chunks : 1);
    }
    r->A[0] = s_filled(amax, 0);
    r->A[1] = distinct ? s_filled(amax, 1) : r->A[0];
    r->W = xcalloc((size_t)n, sizeof *r->W);
    for (int i = 0; i < n; i++)
        r->W[i] = distinct || i == 0 ? s_filled(distinct ? (size_t)r->s[i].K * r->s[i].N : wmax, i)
                                     : r->W[0];
    r->C = s_filled(cmax, 2);
}

static void s_ref_free(ref *r, bool distinct)
{
    for (int i = 0; i < r->n; i++)
        if (distinct || i == 0)
            free(r->W[i]);
    free(r->W);
    if (r->A[1] != r->A[0])
        free(r->A[1]);
    free(r->A[0]);
    free(r->C);
}

static void s_ref_run(ref *r)
{
    for (int c = 0; c < r->chunks; c++)
        for (int i = 0; i < r->n_chunk; i++) {
            shape *s = &r->s[i];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->M, s->N, s->K, 1.0f,
                        r->A[i & 1], s->K, r->W[i], s->N, 0.0f, r->C, s->N);
        }
    for (int i = r->n_chunk; i < r->n; i++) {
        shape *s = &r->s[i];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->M, s->N, s->K, 1.0f, r->A[0],
                    s->K, r->W[i], s->N, 0.0f, r->C, s->N);
    }
}

/* Something to time. */
typedef struct job {
    int kind;           /* 0 evaluator, 1 sgemm reference, 2 training step */
    model_eval *e;      /* kind 0 */
    model_train *t;     /* kind 2 */
    ref *r;             /* kind 1 */
    const float *x, *pi, *z; /* inputs */
    float *logits, *values;  /* outputs */
    int B;              /* batch */
    int iters;          /* runs per repetition */
} job;

static void s_run(job *j)
{
    for (int i = 0; i < j->iters; i++) {
        if (j->kind == 0)
            model_eval_run(j->e, j->x, j->B, j->logits, j->values);
        else if (j->kind == 1)
            s_ref_run(j->r);
        else
            model_train_step(j->t, j->x, j->pi, j->z, j->B, NULL);
    }
}

/* Picks iters so that one repetition lasts about REP_SECONDS. */
static void s_calibrate(job *j)
{
    j->iters = 1;
    double t0 = time_now();
    s_run(j);
    double dt = time_now() - t0;
    j->iters = dt >= REP_SECONDS ? 1 : (int)(REP_SECONDS / (dt > 1e-7 ? dt : 1e-7)) + 1;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double s_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, s_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Times the jobs interleaved, REPS times; writes each one's median seconds
 * per run. */
static void s_measure(job **jobs, int n, double *med)
{
    double t[8][REPS];
    KZ_CHECK(n <= 8);
    for (int k = 0; k < n; k++)
        s_calibrate(jobs[k]);
    for (int rep = 0; rep < REPS; rep++)
        for (int k = 0; k < n; k++) {
            double t0 = time_now();
            s_run(jobs[k]);
            t[k][rep] = (time_now() - t0) / jobs[k]->iters;
        }
    for (int k = 0; k < n; k++)
        med[k] = s_median(t[k], REPS);
}

/* Random 0/1 planes with about a third set, like real positions. */
static float *s_inputs(const model_arch *a, int B, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed);
    size_t n = (size_t)B * a->in_planes * a->height * a->width;
    float *x = xmalloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_below(&r, 3) == 0 ? 1.0f : 0.0f;
    return x;
}

int main(int argc, char **argv)
{
    log_init("bench_model");
    if (argc > 1) {
        fprintf(stderr, "bench_model: unexpected argument '%s' (it takes none)\n", argv[1]);
        return 2;
    }
    double t_start = time_now();
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    model *m = model_new(&a, 1);
    double fpp = model_arch_forward_flops(&a);
    printf("model: %d blocks x %d filters on %dx%dx%d -> %d; F = %.2f MFLOP per position "
           "(2 x multiply-adds of the convolutions and linears)\n",
           a.blocks, a.filters, a.in_planes, a.height, a.width, a.actions, fpp / 1e6);
    printf("OpenBLAS: %s; each figure is the median of %d repetitions of >= %.0f ms\n\n",
           openblas_get_config(), REPS, REP_SECONDS * 1e3);
    static const int batches[] = {1, 8, 32, 64, 256};
    double seq256[3] = {0}, hot256[3] = {0};
    for (int threads = 1; threads <= 2; threads++) {
        model_set_threads(threads);
        printf("forward, %d thread%s:\n", threads, threads > 1 ? "s" : "");
        printf("  %4s %9s %8s %9s %8s %9s %8s\n", "B", "pos/s", "net", "seq", "eff", "hot",
               "eff");
        for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
            int B = batches[bi];
            model_eval *e = model_eval_new(m, B);
            float *x = s_inputs(&a, B, (uint64_t)B);
            float *logits = xmalloc((size_t)B * a.actions * sizeof *logits);
            float *values = xmalloc((size_t)B * sizeof *values);
            ref refs[4]; /* seq by chunk, seq whole batch, hot by chunk, hot whole batch */
            job jobs_[5] = {{.kind = 0, .e = e, .x = x, .logits = logits, .values = values,
                             .B = B}};
            job *jobs[5] = {&jobs_[0]};
            for (int k = 0; k < 4; k++) {
                s_ref_init(&refs[k], &a, k % 2 ? B : model_eval_chunk(e, B), B, k < 2);
                jobs_[1 + k] = (job){.kind = 1, .r = &refs[k]};
                jobs[1 + k] = &jobs_[1 + k];
            }
            double med[5], rate[4];
            s_measure(jobs, 5, med);
            for (int k = 0; k < 4; k++)
                rate[k] = refs[k].flops / med[1 + k] / 1e9;
            double pos = B / med[0], net = fpp * pos / 1e9;
            double seq = rate[0] > rate[1] ? rate[0] : rate[1];
            double hot = rate[2] > rate[3] ? rate[2] : rate[3];
            printf("  %4d %9.0f %8.1f %9.1f %7.0f%% %9.1f %7.0f%%\n", B, pos, net, seq,
                   100 * net / seq, hot, 100 * net / hot);
            if (B == 256) {
                seq256[threads] = seq;
                hot256[threads] = hot;
            }
            for (int k = 0; k < 4; k++)
                s_ref_free(&refs[k], k < 2);
            free(x), free(logits), free(values);
            model_eval_destroy(&e);
        }
        printf("  pos/s = B / median time of model_eval_run(B); net = F x pos/s (GFLOP/s).\n"
               "  seq = GFLOP/s of sgemm alone running the network's GEMM calls (same shapes,\n"
               "  each layer its own weights, as the evaluator does: in its chunks of rows or\n"
               "  over the whole batch, whichever is faster); hot = the same calls with one\n"
               "  reused weight and input buffer (cache-hot: the best sgemm does on the shapes).\n"
               "  eff = net / seq and net / hot.\n\n");
    }
    /* Training at batch 256. */
    const int TB = 256;
    float *x = s_inputs(&a, TB, 7);
    float *pi = xcalloc((size_t)TB * a.actions, sizeof *pi), *z = xmalloc(TB * sizeof *z);
    for (int b = 0; b < TB; b++) {
        pi[(size_t)b * a.actions + (b * 37) % a.actions] = 1.0f;
        z[b] = b % 3 - 1.0f;
    }
    train_config c;
    train_config_default(&c);
    printf("training, batch %d (Adam, L2 1e-4):\n", TB);
    for (int threads = 1; threads <= 2; threads++) {
        model_set_threads(threads);
        model *mt = model_clone(m);
        model_train *t = model_train_new(mt, &c, TB);
        job jt = {.kind = 2, .t = t, .x = x, .pi = pi, .z = z, .B = TB};
        job *jobs[1] = {&jt};
        double med;
        s_measure(jobs, 1, &med);
        double sps = TB / med, net = 3 * fpp * sps / 1e9;
        printf("  %d thread%s: %5.0f samples/s, %.1f GFLOP/s = 3 x F x samples/s; eff %.0f%% "
               "of seq %.1f, %.0f%% of hot %.1f (forward, B=256)\n",
               threads, threads > 1 ? "s" : " ", sps, net, 100 * net / seq256[threads],
               seq256[threads], 100 * net / hot256[threads], hot256[threads]);
        model_train_destroy(&t);
        model_destroy(&mt);
    }
    printf("\ngoals: forward eff >= 85%% at B >= 64, >= 60%% at B = 8; training >= 40%%\n");
    printf("total time %.1f s\n", time_now() - t_start);
    free(x), free(pi), free(z);
    model_destroy(&m);
    return 0;
}
