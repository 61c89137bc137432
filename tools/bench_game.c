/* bench_game: the rules engine's speed, single-threaded.
 *   perft: leaf nodes per second of perft(D) from the start position, full
 *          make-move at every node (copy + apply), no bulk counting at leaves.
 *   random games: complete games of uniformly random legal actions per second
 *          (legal_actions + apply + result at every action).
 * Each figure is the median of several repetitions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "game.h"
#include "util.h"

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const game_def *g = game_default();
    int depth = argc > 1 ? atoi(argv[1]) : 17;
    enum { REPS = 5 };
    double rate[REPS];
    game_state s;
    g->init(&s);
    uint64_t nodes = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = time_now();
        nodes = game_perft(g, &s, depth);
        rate[r] = nodes / (time_now() - t0);
    }
    qsort(rate, REPS, sizeof rate[0], s_cmp);
    printf("perft(%d) from the start: %" PRIu64 " leaf nodes; median %.2f M nodes/s "
           "(= leaf nodes / seconds, min %.2f, max %.2f, %d runs)\n",
           depth, nodes, rate[REPS / 2] / 1e6, rate[0] / 1e6, rate[REPS - 1] / 1e6, REPS);

    double grate[REPS];
    long actions = 0, games_per_rep = 2000;
    for (int r = 0; r < REPS; r++) {
        rng_t rng;
        rng_seed(&rng, 42 + r);
        actions = 0;
        double t0 = time_now();
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
        grate[r] = games_per_rep / (time_now() - t0);
    }
    qsort(grate, REPS, sizeof grate[0], s_cmp);
    printf("random games: median %.0f games/s (= %ld games / seconds; %.1f actions per game; "
           "min %.0f, max %.0f, %d runs)\n",
           grate[REPS / 2], games_per_rep, (double)actions / games_per_rep, grate[0],
           grate[REPS - 1], REPS);
    return 0;
}
