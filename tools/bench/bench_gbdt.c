/* bench_gbdt: the two kinds of model side by side on one game (issue 26):
 * training time per sample and inference positions per second of
 * gradient-boosted trees (nn/gbdt.h, trained by XGBoost) and of the
 * network (nn/model.h), and the trees' two predictors against each other:
 * our interval walker (all A logits of a position in one walk per tree)
 * and XGBoost's own (XGBoosterPredictFromDense on the B value rows and the
 * B x A policy rows the pointwise model needs).
 *
 * Samples: positions of random games of the game, each with a policy
 * target spread over its legal actions (the first drawn gets half) and the
 * game's result from the mover's view: the shapes and the sizes of real
 * samples; what the trees learn from them does not matter here.
 *
 * Times are CPU time of the process (the machine may be shared: other
 * processes' slices do not count), the median of 5 repetitions for
 * inference; one thread everywhere (XGBoost nthread 1, OpenBLAS 1).
 *
 * usage: bench_gbdt [--game G] [--samples N] [--rounds R] [--depth D]
 *                   [--net BLOCKSxFILTERS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "games/game.h"
#include "nn/evaluator.h"
#include "nn/gbdt.h"
#include "nn/gbdt_train.h"
#include "nn/model.h"

static double s_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* N samples of random games of g. */
static void s_samples(const game_def *g, int N, float *x, float *pi, float *z)
{
    size_t P = (size_t)g->planes * g->height * g->width, A = (size_t)g->action_count;
    rng_t r;
    rng_seed(&r, 11);
    memset(pi, 0, sizeof(float) * (size_t)N * A);
    uint16_t legal[GAME_MAX_LEGAL];
    int i = 0;
    while (i < N) {
        game_state s;
        g->init(&s);
        int first = i, mover[4096];
        game_result res;
        while (!(res = g->result(&s)).over && i < N && i - first < 4096) {
            int n = g->legal_actions(&s, legal);
            if (n == 0)
                break;
            g->encode_planes(&s, x + (size_t)i * P);
            mover[i - first] = g->to_move(&s);
            int pick = (int)rng_below(&r, (uint32_t)n);
            for (int k = 0; k < n; k++)
                pi[(size_t)i * A + (size_t)g->canonical_action(&s, legal[k])] =
                    k == pick ? 0.5f + 0.5f / (float)n : 0.5f / (float)n;
            g->apply(&s, legal[pick]);
            i++;
        }
        for (int j = first; j < i; j++)
            z[j] = res.over ? (float)game_result_for(res, mover[j - first]) : 0.0f;
    }
}

int main(int argc, char **argv)
{
    const char *game = GAME_DEFAULT_NAME, *net = "6x64";
    int N = 4096, rounds = 40, depth = 6;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--game"))
            game = argv[i + 1];
        else if (!strcmp(argv[i], "--samples"))
            N = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--depth"))
            depth = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--net"))
            net = argv[i + 1];
        else {
            fprintf(stderr, "usage: bench_gbdt [--game G] [--samples N] [--rounds R] "
                            "[--depth D] [--net BxF]\n");
            return 2;
        }
    }
    const game_def *g = game_find(game);
    int blocks, filters;
    if (!g || N < 64 || sscanf(net, "%dx%d", &blocks, &filters) != 2) {
        fprintf(stderr, "bench_gbdt: bad game, samples or --net\n");
        return 2;
    }
    model_set_threads(1);
    size_t P = (size_t)g->planes * g->height * g->width, A = (size_t)g->action_count;
    float *x = malloc(sizeof(float) * (size_t)N * P), *pi = malloc(sizeof(float) * N * A),
          *z = malloc(sizeof(float) * (size_t)N);
    s_samples(g, N, x, pi, z);
    printf("bench_gbdt: game %s (%d features, %zu actions), %d samples, XGBoost %s, 1 thread\n",
           g->name, gbdt_feature_count(g), A, N, gbdt_train_library());

    /* Step 1. Training: trees (both forests, from scratch) and the network. */
    gbdt *m = gbdt_new(g);
    gbdt_train_config tc;
    gbdt_train_config_default(&tc);
    tc.rounds = rounds;
    tc.max_depth = depth;
    gbdt_train_stats st;
    void *bst[2];
    char err[300];
    double t0 = s_cpu();
    if (gbdt_train_boosters(m, g, x, pi, z, N, &tc, &st, bst, err, sizeof err)) {
        fprintf(stderr, "bench_gbdt: %s\n", err);
        return 1;
    }
    double tt = s_cpu() - t0;
    char desc[200];
    gbdt_describe(m, desc, sizeof desc);
    printf("train gbdt: %d rounds depth %d: %.2f s CPU for %d samples (%d policy rows): "
           "%.1f us per sample; %s\n",
           rounds, depth, tt, N, st.policy_rows, 1e6 * tt / N, desc);
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = blocks;
    a.filters = filters;
    model *nm = model_new(&a, 1);
    train_config ntc;
    train_config_default(&ntc);
    enum { TB = 256 };
    model_train *mt = model_train_new(nm, &ntc, TB);
    train_losses l;
    model_train_step(mt, x, pi, z, TB, &l); /* warm-up */
    int steps = 0;
    t0 = s_cpu();
    while (s_cpu() - t0 < 5.0 && (steps + 2) * TB <= N) {
        model_train_step(mt, x + (size_t)(steps + 1) * TB * P, pi + (size_t)(steps + 1) * TB * A,
                         z + (steps + 1) * TB, TB, &l);
        steps++;
    }
    double nt = s_cpu() - t0;
    printf("train net %dx%d: batch %d, %d steps: %.1f us per sample-step (one pass; an epoch "
           "of the trees' %d samples would be %.2f s)\n",
           blocks, filters, TB, steps, 1e6 * nt / (steps * TB), N, nt / (steps * TB) * N);

    /* Step 2. Inference at batch sizes 1, 8, 64: walker, XGBoost, network. */
    int F = gbdt_feature_count(g);
    enum { BMAX = 64 };
    gbdt_eval *ge = gbdt_eval_new(m, g, BMAX);
    evaluator_net *en = evaluator_net_new_precision(nm, BMAX, MODEL_FP32);
    evaluator ev = evaluator_net_get(en);
    float *logits = malloc(sizeof(float) * BMAX * A), values[BMAX];
    float *rows = malloc(sizeof(float) * BMAX * A * (F + 1)),
          *out = malloc(sizeof(float) * BMAX * A);
    float *feat = malloc(sizeof(float) * BMAX * F);
    /* The two predictors agree (XGBoost's margins against the walker's). */
    double worst = 0;
    for (int b = 0; b < 4; b++) {
        gbdt_eval_run(ge, x + (size_t)b * P, 1, logits, values);
        gbdt_features(g, x + (size_t)b * P, feat);
        for (size_t k = 0; k < A; k++) {
            rows[k * (F + 1)] = (float)k;
            memcpy(rows + k * (F + 1) + 1, feat, sizeof(float) * F);
        }
        gbdt_booster_predict(bst[1], rows, (int)A, F + 1, out);
        for (size_t k = 0; k < A; k++)
            worst = fmax(worst, fabs(out[k] - logits[k]));
    }
    printf("check: the walker's logits and XGBoost's margins differ by %.2g at most\n", worst);
    printf("%-6s %16s %16s %10s %16s %10s\n", "batch", "walker pos/s", "xgboost pos/s",
           "walker/xgb", "net pos/s", "walker/net");
    const int batches[] = {1, 8, 64};
    for (int bi = 0; bi < 3; bi++) {
        int B = batches[bi];
        double tw[5], tx[5], tn[5];
        for (int rep = 0; rep < 5; rep++) {
            int iters = 0;
            double s0 = s_cpu();
            while (s_cpu() - s0 < 0.3 || iters < 3) {
                gbdt_eval_run(ge, x + (size_t)(iters % 16) * P, B, logits, values);
                iters++;
            }
            tw[rep] = (s_cpu() - s0) / (iters * B);
            iters = 0;
            s0 = s_cpu();
            while (s_cpu() - s0 < 0.3 || iters < 3) {
                /* What XGBoost needs for a batch: B value rows, B x A policy rows. */
                const float *xb = x + (size_t)(iters % 16) * P;
                for (int b = 0; b < B; b++)
                    gbdt_features(g, xb + (size_t)b * P, feat + (size_t)b * F);
                gbdt_booster_predict(bst[0], feat, B, F, out);
                for (int b = 0; b < B; b++)
                    for (size_t k = 0; k < A; k++) {
                        float *row = rows + ((size_t)b * A + k) * (F + 1);
                        row[0] = (float)k;
                        memcpy(row + 1, feat + (size_t)b * F, sizeof(float) * F);
                    }
                gbdt_booster_predict(bst[1], rows, B * (int)A, F + 1, out);
                iters++;
            }
            tx[rep] = (s_cpu() - s0) / (iters * B);
            iters = 0;
            s0 = s_cpu();
            while (s_cpu() - s0 < 0.3 || iters < 3) {
                ev.run(ev.ctx, x + (size_t)(iters % 16) * P, B, logits, values);
                iters++;
            }
            tn[rep] = (s_cpu() - s0) / (iters * B);
        }
        qsort(tw, 5, sizeof tw[0], s_cmp);
        qsort(tx, 5, sizeof tx[0], s_cmp);
        qsort(tn, 5, sizeof tn[0], s_cmp);
        printf("%-6d %16.0f %16.0f %9.1fx %16.0f %9.2fx\n", B, 1 / tw[2], 1 / tx[2],
               tx[2] / tw[2], 1 / tn[2], tn[2] / tw[2]);
    }
    gbdt_booster_free(&bst[0]);
    gbdt_booster_free(&bst[1]);
    gbdt_eval_destroy(&ge);
    evaluator_net_destroy(&en);
    model_train_destroy(&mt);
    model_destroy(&nm);
    gbdt_destroy(&m);
    free_all(x, pi, z, logits, rows, out, feat);
    return 0;
}
