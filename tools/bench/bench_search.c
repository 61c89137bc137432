/* bench_search: the speed of the batched search and of self-play.
 *
 *   1. Search alone: self-play with the uniform evaluator (no network), so
 *      the time is all search: tree walks, rules, planes, backup.
 *   2. Self-play with the specification's network (6 blocks x 64 filters,
 *      random weights, batch norm folded, one thread) at 200 simulations per
 *      move, on each path of the network the CPU has (OpenBLAS, our AVX-512
 *      kernels in fp32 and in bf16, model.h): simulations/s, games/hour/core
 *      and their ratios to the OpenBLAS path's; then for the workers' default
 *      (bf16 where the CPU has it) the share of the time spent outside the
 *      network (goal < 15%) and the batch sizes the network actually received.
 *   3. A sweep of games-in-parallel (G) x leaves-per-tree (L): batch reached
 *      and simulations/s over a short time budget each.
 *
 * Times are CPU times of this process (the machine may be shared, so wall
 * time would count other people's work); the network's share is the CPU time
 * inside evaluator.run, measured around each call. Every figure is printed
 * with its formula.
 *
 * usage: bench_search [GAMES [PARALLEL [LEAVES]]]   (defaults 48 32 4) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "search/mcts.h"
#include "nn/model.h"
#include "play/selfplay.h"
#include "common/util.h"

static double s_cpu(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wraps an evaluator and adds up the CPU time spent inside it. */
typedef struct timed {
    evaluator inner;  /* the real evaluator */
    double cpu;       /* seconds of CPU inside run */
    long calls;       /* run calls */
    long positions;   /* positions evaluated */
    long hist[8];     /* calls by batch size: 1, 2-3, 4-7, ..., 64-127, >=128 */
} timed;

static int s_timed_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    timed *t = ctx;
    double t0 = s_cpu(CLOCK_THREAD_CPUTIME_ID);
    int rc = t->inner.run(t->inner.ctx, planes, B, logits, values);
    t->cpu += s_cpu(CLOCK_THREAD_CPUTIME_ID) - t0;
    t->calls++;
    t->positions += B;
    int bin = 0;
    while (bin < 7 && (2 << bin) <= B)
        bin++;
    t->hist[bin]++;
    return rc;
}

typedef struct run_out {
    selfplay_stats st; /* counters */
    double cpu;        /* process CPU seconds */
    double wall;       /* wall seconds */
    timed tm;          /* evaluator timing */
} run_out;

/* Self-play of `games` games, G at once, L leaves per tree; stops early after
 * `budget` CPU seconds (0 = none) without starting new games. */
static void s_run(const game_def *g, evaluator inner, int games, int G, int L, int sims,
                  double budget, run_out *out)
{
    memset(out, 0, sizeof *out);
    out->tm.inner = inner;
    evaluator ev = {s_timed_run, &out->tm, inner.max_batch};
    selfplay_config cfg = selfplay_config_default();
    cfg.games = games;
    cfg.parallel = G;
    cfg.seed = 12345;
    cfg.search.simulations = sims;
    cfg.search.leaves_per_tree = L;
    char err[200];
    selfplay *sp = selfplay_new(g, &cfg, ev, err, sizeof err);
    if (!sp) {
        fprintf(stderr, "bench_search: %s\n", err);
        exit(1);
    }
    double c0 = s_cpu(CLOCK_PROCESS_CPUTIME_ID), w0 = time_now();
    int remaining = 1;
    bool stopped = false;
    while (remaining > 0) {
        if (selfplay_step(sp, NULL, NULL, &remaining) != 0) {
            fprintf(stderr, "bench_search: self-play failed\n");
            exit(1);
        }
        if (budget > 0 && !stopped && s_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0 > budget) {
            selfplay_stop_new(sp);
            stopped = true;
            break;
        }
    }
    out->cpu = s_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    out->wall = time_now() - w0;
    selfplay_get_stats(sp, &out->st);
    selfplay_destroy(&sp);
}

/* The network as an evaluator on one path: 0 OpenBLAS, 1 avx512-fp32, 2 avx512-bf16. */
static int s_model_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    model_eval_run(ctx, planes, B, logits, values);
    return 0;
}

static const char *const s_paths[3] = {"openblas-fp32", "avx512-fp32", "avx512-bf16"};

/* NULL when the CPU does not run path p. */
static model_eval *s_model_new(const model_arch *a, int max_batch, int p)
{
    model *m = model_new(a, 7);
    model_eval_config c = {.precision = p == 2 ? MODEL_BF16 : MODEL_FP32,
                           .kernels = p == 0 ? MODEL_KERNELS_BLAS : MODEL_KERNELS_AUTO};
    model_eval *e = model_eval_new_config(m, max_batch, &c);
    model_destroy(&m);
    if (e && strcmp(model_eval_path(e), s_paths[p]) != 0)
        model_eval_destroy(&e);
    return e;
}

static void s_report(const char *title, const run_out *r, int sims)
{
    const mcts_stats *m = &r->st.search;
    double sims_s = (double)m->simulations / r->cpu;
    double outside = r->cpu - r->tm.cpu;
    printf("%s\n", title);
    printf("  simulations/s        %10.0f  = %" PRIu64 " simulations / %.2f s CPU "
           "(wall %.2f s)\n", sims_s, m->simulations, r->cpu, r->wall);
    if (r->st.games_done > 0)
        printf("  games/hour/core      %10.0f  = 3600 * %d games / %.2f s CPU "
               "(%.1f states, %.1f plies per game)\n",
               3600.0 * r->st.games_done / r->cpu, r->st.games_done, r->cpu,
               (double)r->st.states / r->st.games_done, (double)r->st.plies / r->st.games_done);
    printf("  outside the network  %9.1f%%  = (%.2f s CPU - %.2f s CPU in evaluator.run) / "
           "%.2f s CPU\n", 100 * outside / r->cpu, r->cpu, r->tm.cpu, r->cpu);
    printf("  search cost          %8.2f us = %.2f s CPU outside the network / %" PRIu64
           " simulations\n", 1e6 * outside / (double)m->simulations, outside, m->simulations);
    printf("  network positions/s  %10.0f  = %ld positions / %.2f s CPU in evaluator.run\n",
           r->tm.cpu > 0 ? r->tm.positions / r->tm.cpu : 0.0, r->tm.positions, r->tm.cpu);
    printf("  evaluations/sim      %10.3f  = %ld positions / %" PRIu64 " simulations "
           "(cache hits %" PRIu64 ", shared %" PRIu64 ", terminal %" PRIu64 ", forced nodes %"
           PRIu64 ")\n", (double)r->tm.positions / (double)m->simulations, r->tm.positions,
           m->simulations, m->cache_hits, m->duplicates, m->terminal_leaves, m->forced_nodes);
    printf("  batch                mean %.1f = %ld positions / %ld calls, largest %d\n",
           r->tm.calls ? (double)r->tm.positions / r->tm.calls : 0.0, r->tm.positions,
           r->tm.calls, m->max_batch_seen);
    printf("  calls by batch size  ");
    static const char *bins[8] = {"1", "2-3", "4-7", "8-15", "16-31", "32-63", "64-127", ">=128"};
    for (int b = 0; b < 8; b++)
        if (r->tm.hist[b])
            printf(" %s:%ld", bins[b], r->tm.hist[b]);
    printf("\n  (%d simulations per move)\n", sims);
}

int main(int argc, char **argv)
{
    log_init("bench_search");
    if (util_version_asked(argc, argv, "bench_search"))
        return 0;
    const game_def *g = game_default();
    int games = argc > 1 ? atoi(argv[1]) : 48;
    int G = argc > 2 ? atoi(argv[2]) : 32;
    int L = argc > 3 ? atoi(argv[3]) : 4;
    if (games < 1 || G < 1 || L < 1 || L > 256) {
        fprintf(stderr, "usage: bench_search [GAMES [PARALLEL [LEAVES]]]\n");
        return 2;
    }
    model_set_threads(1);
    run_out r;

    /* 1. */
    s_run(g, evaluator_uniform(g), 256, 64, L, 200, 0, &r);
    s_report("search alone (uniform evaluator, 256 games, 64 at once):", &r, 200);

    /* 2. */
    model_arch a;
    model_arch_default(&a, g);
    printf("self-play, spec network 6x64 (random weights), %d games, %d at once, %d leaves per "
           "tree, on each path:\n", games, G, L);
    printf("  %-14s %10s %6s %12s %6s %9s\n", "path", "sims/s", "ratio", "games/h/core",
           "ratio", "outside%");
    double sims0 = 0, games0 = 0;
    int best = 0;
    run_out rp[3];
    for (int p = 0; p < 3; p++) {
        model_eval *e = s_model_new(&a, G * L, p);
        if (!e)
            continue;
        best = p;
        s_run(g, (evaluator){s_model_run, e, G * L}, games, G, L, 200, 0, &rp[p]);
        model_eval_destroy(&e);
        double sims_s = (double)rp[p].st.search.simulations / rp[p].cpu;
        double gph = 3600.0 * rp[p].st.games_done / rp[p].cpu;
        if (p == 0)
            sims0 = sims_s, games0 = gph;
        printf("  %-14s %10.0f %5.2fx %12.0f %5.2fx %8.1f%%\n", s_paths[p], sims_s, sims_s / sims0,
               gph, gph / games0, 100 * (rp[p].cpu - rp[p].tm.cpu) / rp[p].cpu);
    }
    printf("  (CPU time; games differ a little between paths, their rounding differs)\n\n");
    char title[200];
    snprintf(title, sizeof title, "self-play on %s (the workers' default):", s_paths[best]);
    s_report(title, &rp[best], 200);
    evaluator_net *net;
    model *m;

    /* 3. */
    printf("sweep (spec network on %s, 200 simulations, about 8 s CPU each):\n", s_paths[best]);
    printf("  %4s %3s %10s %10s %9s %8s\n", "G", "L", "sims/s", "outside%", "meanbatch",
           "largest");
    static const int sweep[][2] = {{8, 1}, {8, 4}, {32, 1}, {32, 2}, {32, 4}, {64, 2}, {64, 4}};
    for (size_t k = 0; k < sizeof sweep / sizeof *sweep; k++) {
        int sg = sweep[k][0], sl = sweep[k][1];
        m = model_new(&a, 7);
        model_set_precision(best == 2 ? MODEL_BF16 : MODEL_FP32);
        net = evaluator_net_new(m, sg * sl);
        model_destroy(&m);
        s_run(g, evaluator_net_get(net), 100000, sg, sl, 200, 8.0, &r);
        printf("  %4d %3d %10.0f %9.1f%% %9.1f %8d\n", sg, sl,
               (double)r.st.search.simulations / r.cpu, 100 * (r.cpu - r.tm.cpu) / r.cpu,
               r.tm.calls ? (double)r.tm.positions / r.tm.calls : 0.0, r.st.search.max_batch_seen);
        evaluator_net_destroy(&net);
    }
    printf("  (sims/s = simulations / CPU s; outside%% = CPU outside evaluator.run / CPU;\n"
           "   meanbatch = positions / evaluator calls)\n");
    return 0;
}
