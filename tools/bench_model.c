/* bench_model: the network's speed against OpenBLAS's own.
 *
 * For 1 and 2 OpenBLAS threads and batches of 1, 8, 32, 64 and 256 positions
 * it measures the evaluator's positions per second and, interleaved with it
 * (so that both see the same machine), the GFLOP/s of sgemm alone on the
 * shapes of the network's GEMMs: once with the whole batch's rows and once
 * with the evaluator's chunk of rows. The network's efficiency is its FLOP
 * rate over the better of those two sgemm rates. Then training samples per
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
#define REP_SECONDS 0.06   /* target length of one repetition */

/* One GEMM shape: (M, K) x (K, N). */
typedef struct shape {
    int M, K, N; /* rows, depth, columns */
    int count;   /* how many of them one forward pass runs */
} shape;

/* The GEMMs of one forward pass over `rows` positions' worth of board
 * points (chunk) plus the heads' linears over B positions. */
static int s_shapes(const model_arch *a, int chunk_pos, int B, shape *out)
{
    int HW = a->height * a->width, F = a->filters, M = chunk_pos * HW;
    int chunks = (B + chunk_pos - 1) / chunk_pos, n = 0;
    out[n++] = (shape){M, 9 * a->in_planes, F, chunks};
    if (a->blocks)
        out[n++] = (shape){M, 9 * F, F, 2 * a->blocks * chunks};
    out[n++] = (shape){M, F, a->policy_filters + a->value_filters, chunks};
    out[n++] = (shape){B, a->policy_filters * HW, a->actions, 1};
    out[n++] = (shape){B, a->value_filters * HW, a->value_hidden, 1};
    return n;
}

/* Buffers for running the shapes through sgemm alone. */
typedef struct ref {
    shape s[8];  /* the shapes */
    int n;       /* how many */
    float *A, *W, *C; /* inputs and output, big enough for every shape */
    double flops;/* per run */
} ref;

static void s_ref_init(ref *r, const model_arch *a, int chunk_pos, int B)
{
    r->n = s_shapes(a, chunk_pos, B, r->s);
    size_t amax = 1, wmax = 1, cmax = 1;
    r->flops = 0;
    for (int i = 0; i < r->n; i++) {
        shape *s = &r->s[i];
        amax = (size_t)s->M * s->K > amax ? (size_t)s->M * s->K : amax;
        wmax = (size_t)s->K * s->N > wmax ? (size_t)s->K * s->N : wmax;
        cmax = (size_t)s->M * s->N > cmax ? (size_t)s->M * s->N : cmax;
        r->flops += 2.0 * s->M * s->K * s->N * s->count;
    }
    r->A = xmalloc(amax * sizeof(float));
    r->W = xmalloc(wmax * sizeof(float));
    r->C = xmalloc(cmax * sizeof(float));
    for (size_t i = 0; i < amax; i++)
        r->A[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < wmax; i++)
        r->W[i] = (float)(i % 5) * 0.01f;
}

static void s_ref_free(ref *r)
{
    free(r->A);
    free(r->W);
    free(r->C);
}

static void s_ref_run(ref *r)
{
    for (int i = 0; i < r->n; i++) {
        shape *s = &r->s[i];
        for (int k = 0; k < s->count; k++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->M, s->N, s->K, 1.0f, r->A,
                        s->K, r->W, s->N, 0.0f, r->C, s->N);
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
    double ref256[3] = {0};
    for (int threads = 1; threads <= 2; threads++) {
        model_set_threads(threads);
        printf("forward, %d thread%s:\n", threads, threads > 1 ? "s" : "");
        printf("  %4s %10s %9s %10s %10s %7s\n", "B", "pos/s", "net", "sgemm(B)", "sgemm(ch)",
               "eff");
        for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
            int B = batches[bi];
            model_eval *e = model_eval_new(m, B);
            float *x = s_inputs(&a, B, (uint64_t)B);
            float *logits = xmalloc((size_t)B * a.actions * sizeof *logits);
            float *values = xmalloc((size_t)B * sizeof *values);
            ref rb, rc;
            s_ref_init(&rb, &a, B, B);
            s_ref_init(&rc, &a, model_eval_chunk(e, B), B);
            job jn = {.kind = 0, .e = e, .x = x, .logits = logits, .values = values, .B = B};
            job jb = {.kind = 1, .r = &rb}, jc = {.kind = 1, .r = &rc};
            job *jobs[3] = {&jn, &jb, &jc};
            double med[3];
            s_measure(jobs, 3, med);
            double pos = B / med[0], net = fpp * pos / 1e9;
            double gb = rb.flops / med[1] / 1e9, gc = rc.flops / med[2] / 1e9;
            double best = gb > gc ? gb : gc;
            printf("  %4d %10.0f %9.1f %10.1f %10.1f %6.0f%%\n", B, pos, net, gb, gc,
                   100 * net / best);
            if (B == 256)
                ref256[threads] = best;
            s_ref_free(&rb);
            s_ref_free(&rc);
            free(x), free(logits), free(values);
            model_eval_destroy(&e);
        }
        printf("  pos/s = B / median time of model_eval_run(B); net = F x pos/s (GFLOP/s);\n"
               "  sgemm(B) = FLOPs / time of sgemm alone on the network's GEMM shapes with all\n"
               "  B*H*W rows at once, sgemm(ch) = the same in the evaluator's chunks of rows\n"
               "  (GFLOP/s); eff = net / max(sgemm(B), sgemm(ch)).\n\n");
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
        printf("  %d thread%s: %7.0f samples/s, %.1f GFLOP/s = 3 x F x samples/s; efficiency "
               "%.0f%% = that / sgemm %.1f GFLOP/s (forward shapes, B=256, %d thread%s)\n",
               threads, threads > 1 ? "s" : " ", sps, net, 100 * net / ref256[threads],
               ref256[threads], threads, threads > 1 ? "s" : "");
        model_train_destroy(&t);
        model_destroy(&mt);
    }
    printf("\ngoals: forward eff >= 85%% at B >= 64, >= 60%% at B = 8; training >= 40%%\n");
    printf("total time %.1f s\n", time_now() - t_start);
    free(x), free(pi), free(z);
    model_destroy(&m);
    return 0;
}
