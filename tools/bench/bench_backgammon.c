/* bench_backgammon: backgammon's move generation, measured and checked.
 *   speed: whole moves per second (backgammon_whole_moves: every legal whole
 *          move of a roll, each distinct resulting position once) over the
 *          positions and rolls met in seeded random games, single-threaded,
 *          per second of this thread's CPU time;
 *   gnubg: the same random positions and rolls compared with GNU Backgammon
 *          (gnubg_compare_moves: the sets of distinct resulting positions);
 *          skipped with a message when gnubg is not installed. Exits 1 on the
 *          first difference, printing it.
 *
 * usage: bench_backgammon [N_GNUBG [SEED]]   (defaults 1000 and 25; the
 *        figure in docs/rules-backgammon.md is N_GNUBG = 10000) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/util.h"
#include "games/backgammon.h"
#include "games/game.h"
#include "search/gnubg.h"

static double s_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Plays seeded random games; calls fn at each fresh roll until it has been
 * called n times (fn returns nonzero to stop). */
static int s_walk(uint64_t seed, int n, int (*fn)(const game_state *, void *), void *ctx)
{
    const game_def *g = &backgammon_game;
    rng_t r;
    rng_seed(&r, seed);
    int done = 0;
    while (done < n) {
        game_state s;
        g->init(&s);
        while (!g->result(&s).over && done < n) {
            uint16_t legal[GAME_MAX_LEGAL];
            int k = g->legal_actions(&s, legal);
            bool chance = g->is_chance(&s);
            g->apply(&s, legal[rng_below(&r, (uint32_t)k)]);
            if (chance && !g->is_chance(&s) && !g->result(&s).over) {
                int rc = fn(&s, ctx);
                if (rc)
                    return rc;
                done++;
            }
        }
    }
    return 0;
}

typedef struct {
    bg_whole_move *buf;
    long moves;
    gnubg *gb;
    long gnubg_moves;
    int compared;
} bench_ctx;

static int s_speed(const game_state *s, void *p)
{
    bench_ctx *c = p;
    c->moves += backgammon_whole_moves(s, c->buf, 4096);
    return 0;
}

static int s_gnubg(const game_state *s, void *p)
{
    bench_ctx *c = p;
    char err[400];
    int ours = 0, theirs = 0;
    int rc = gnubg_compare_moves(c->gb, s, &ours, &theirs, err, sizeof err);
    if (rc) {
        fprintf(stderr, "bench_backgammon: after %d positions: %s\n", c->compared, err);
        return 1;
    }
    c->moves += ours;
    c->gnubg_moves += theirs;
    c->compared++;
    return 0;
}

int main(int argc, char **argv)
{
    long n_gnubg = 1000, seed = 25;
    if ((argc > 1 && parse_long(argv[1], 0, 10000000, &n_gnubg)) ||
        (argc > 2 && parse_long(argv[2], 0, 1L << 52, &seed)) || argc > 3) {
        fprintf(stderr, "usage: bench_backgammon [N_GNUBG [SEED]]\n");
        return 2;
    }
    bench_ctx c = {.buf = xmalloc(sizeof(bg_whole_move) * 4096)};
    enum { SPEED_POSITIONS = 20000 };
    double t0 = s_cpu_now();
    s_walk((uint64_t)seed, SPEED_POSITIONS, s_speed, &c);
    double dt = s_cpu_now() - t0;
    printf("backgammon whole moves: %.0f per CPU second (%ld over %d random positions and "
           "rolls, %.2f s; %.1f per roll)\n",
           c.moves / dt, c.moves, SPEED_POSITIONS, dt, (double)c.moves / SPEED_POSITIONS);
    if (!n_gnubg)
        return 0;
    if (!gnubg_path()) {
        printf("gnubg: not installed (apt-get install gnubg): move generation not compared\n");
        return 0;
    }
    char err[300];
    if (gnubg_open(&c.gb, NULL, 60, err, sizeof err)) {
        fprintf(stderr, "bench_backgammon: %s\n", err);
        return 1;
    }
    c.moves = 0;
    double w0 = time_now();
    int rc = s_walk((uint64_t)seed, (int)n_gnubg, s_gnubg, &c);
    gnubg_close(c.gb);
    free(c.buf);
    if (rc)
        return 1;
    printf("gnubg: %d random positions and rolls (seed %ld), the same distinct resulting "
           "positions in every one: %ld moves ours, %ld gnubg's (%.0f s)\n",
           c.compared, seed, c.moves, c.gnubg_moves, time_now() - w0);
    return 0;
}
