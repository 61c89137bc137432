/* bench_game: the rules engine's speed, single-threaded.
 *   perft: leaf nodes per second of perft(D) from the start position, full
 *          make-move at every node (copy + apply), no bulk counting at leaves.
 *   random games: complete games of uniformly random legal actions per second
 *          (legal_actions + apply + result at every action).
 * For every registered game: the default one (Khreibaga) at PERFT_DEPTH, the
 * others at the depth whose perft first reaches a million leaves.
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

#include "games/game.h"
#include "common/util.h"

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

/* Perft and random games of one game: perft(depth) from the start, REPS
 * times, and games_per_rep random games, REPS times. */
static void s_bench(const game_def *g, long depth, long games_per_rep)
{
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
    printf("%s: perft(%ld) from the start: %" PRIu64 " leaf nodes; median %.2f M nodes/s "
           "wall-clock (min %.2f, max %.2f), %.2f M nodes per CPU-second; %d runs\n",
           g->name, depth, nodes, s_median(wall) / 1e6, wmin / 1e6, wmax / 1e6,
           s_median(cpu) / 1e6, REPS);

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
    printf("%s: random games: median %.0f games/s wall-clock, %.0f games per CPU-second "
           "(%ld games a run, %.1f actions per game; %d runs)\n",
           g->name, s_median(wall), s_median(cpu), games_per_rep,
           (double)actions / games_per_rep, REPS);
}

/* The smallest depth whose perft from the start has at least `leaves` leaf
 * nodes (at most 30): a game's own size of the benchmark. */
static long s_depth_for(const game_def *g, uint64_t leaves)
{
    game_state s;
    g->init(&s);
    long d = 1;
    while (d < 30 && game_perft(g, &s, (int)d) < leaves)
        d++;
    return d;
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
    /* The default game at PERFT_DEPTH (17: the figures of earlier runs);
     * every other game at the depth that reaches a million leaves. */
    const game_def *g;
    for (int i = 0; (g = game_at(i)); i++)
        s_bench(g, g == game_default() ? depth : s_depth_for(g, 1000000), games_per_rep);
    return 0;
}
