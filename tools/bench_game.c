/* bench_game: the rules engine's speed, single-threaded.
 *   perft: leaf nodes per second of perft(D) from the start position, full
 *          make-move at every node (copy + apply), no bulk counting at leaves.
 *   random games: complete games of uniformly random legal actions per second
 *          (legal_actions + apply + result at every action).
 * Each figure is the median of several repetitions, given twice: per second
 * of wall-clock time, and per second of this thread's CPU time. On a shared
 * machine the wall-clock figure drops with the load; the CPU-time figure is
 * what one core delivers while this thread runs on it.
 *
 * usage: bench_game [PERFT_DEPTH [GAMES]]   (defaults 17 and 2000) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "game.h"
#include "util.h"

enum { REPS = 5 };

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* CPU time of the calling thread, in seconds. */
static double s_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sorts the REPS rates and returns the median. */
static double s_median(double *rate)
{
    qsort(rate, REPS, sizeof rate[0], s_cmp);
    return rate[REPS / 2];
}

int main(int argc, char **argv)
{
    if (util_version_asked(argc, argv, "bench_game"))
        return 0;
    long depth = 17, games_per_rep = 2000;
    if ((argc > 1 && parse_long(argv[1], 1, 30, &depth)) ||
        (argc > 2 && parse_long(argv[2], 1, 10000000, &games_per_rep)) || argc > 3) {
        fprintf(stderr, "usage: bench_game [PERFT_DEPTH 1..30 [GAMES]]\n");
        return 2;
    }
    const game_def *g = game_default();
    double wall[REPS], cpu[REPS];
    game_state s;
    g->init(&s);
    uint64_t nodes = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = time_now(), c0 = s_cpu_now();
        nodes = game_perft(g, &s, (int)depth);
        cpu[r] = nodes / (s_cpu_now() - c0);
        wall[r] = nodes / (time_now() - t0);
    }
    double wmin = wall[0], wmax = wall[0];
    for (int r = 1; r < REPS; r++) {
        wmin = wall[r] < wmin ? wall[r] : wmin;
        wmax = wall[r] > wmax ? wall[r] : wmax;
    }
    printf("perft(%ld) from the start: %" PRIu64 " leaf nodes; median %.2f M nodes/s wall-clock "
           "(min %.2f, max %.2f), %.2f M nodes per CPU-second; %d runs\n",
           depth, nodes, s_median(wall) / 1e6, wmin / 1e6, wmax / 1e6, s_median(cpu) / 1e6,
           REPS);

    long actions = 0;
    for (int r = 0; r < REPS; r++) {
        rng_t rng;
        rng_seed(&rng, 42 + (uint64_t)r);
        actions = 0;
        double t0 = time_now(), c0 = s_cpu_now();
        for (long k = 0; k < games_per_rep; k++) {
            game_state st;
            g->init(&st);
            while (!g->result(&st).over) {
                uint16_t legal[GAME_MAX_LEGAL];
                int n = g->legal_actions(&st, legal);
                g->apply(&st, legal[rng_below(&rng, (uint32_t)n)]);
                actions++;
            }
        }
        cpu[r] = games_per_rep / (s_cpu_now() - c0);
        wall[r] = games_per_rep / (time_now() - t0);
    }
    printf("random games: median %.0f games/s wall-clock, %.0f games per CPU-second "
           "(%ld games a run, %.1f actions per game; %d runs)\n",
           s_median(wall), s_median(cpu), games_per_rep, (double)actions / games_per_rep, REPS);
    return 0;
}
