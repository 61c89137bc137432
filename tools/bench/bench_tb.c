/* bench_tb: the endgame tables' speed (games/tablebase.h).
 *   build: the tables up to 4 pieces built (and verified) into a temporary
 *          directory by one thread: positions per second.
 *   probe: tb_probe_wdl on random positions of those tables (or of DIR's),
 *          Black or White to move, from one thread on cached tables.
 * Each figure per second of wall-clock time and per second of CPU time (on a
 * shared machine the wall-clock figure drops with the load; the CPU-time
 * figure is what one core delivers). Probes: the median of 5 repetitions.
 *
 * usage: bench_tb [DIR]   (DIR: tables already built, e.g. var/tb after make tb) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "games/game.h"
#include "games/khreibaga.h"
#include "games/tablebase.h"
#include "common/util.h"

enum { REPS = 5, N = 1 << 16 };

static double s_cpu(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int s_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void s_rm(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_tb: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "usage: bench_tb [DIR]\n");
        return 2;
    }
    char dir[512], err[512];
    bool temp = argc < 2;
    if (temp) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/bench_tb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("bench_tb: mkdtemp");
            return 1;
        }
        tb_build_opts o = {.pieces = 4, .threads = 1, .verify = true};
        double t0 = time_now(), c0 = s_cpu(CLOCK_PROCESS_CPUTIME_ID);
        int rc = tb_build(dir, &o, err, sizeof err);
        double wall = time_now() - t0, cpu = s_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (rc) {
            fprintf(stderr, "bench_tb: %s\n", err);
            s_rm(dir);
            return 1;
        }
        printf("tb build up to 4 pieces (1,144,235 positions, verified, 1 thread): "
               "%.2f s wall, %.2f s CPU: %.0fk positions per CPU second\n",
               wall, cpu, 1144235 / cpu / 1e3);
    } else {
        snprintf(dir, sizeof dir, "%s", argv[1]);
    }
    tb_set *t = tb_open(dir, 0, err, sizeof err);
    if (!t || tb_pieces(t) == 0) {
        fprintf(stderr, "bench_tb: %s\n", t ? "no complete tables" : err);
        tb_close(&t);
        if (temp)
            s_rm(dir);
        return 1;
    }
    /* Random stored positions, half of them turned to White to move (R16). */
    game_state *pos = xmalloc(N * sizeof *pos);
    rng_t rng;
    rng_seed(&rng, 1);
    for (int i = 0; i < N; i++) {
        int c = (int)rng_below(&rng, (uint32_t)tb_class_count(t));
        tb_class_info ci;
        tb_class_get(t, c, &ci);
        tb_class_position(t, c, rng_next(&rng) % ci.positions, &pos[i]);
        if (i & 1) {
            uint32_t b = khreibaga_pieces(&pos[i], 0), w = khreibaga_pieces(&pos[i], 1);
            uint32_t k = khreibaga_kings(&pos[i]), rb = 0, rw = 0, rk = 0;
            for (int sq = 0; sq < 25; sq++) {
                rb |= (b >> sq & 1u) << (24 - sq);
                rw |= (w >> sq & 1u) << (24 - sq);
                rk |= (k >> sq & 1u) << (24 - sq);
            }
            khreibaga_set(&pos[i], rw, rb, rk, 1);
        }
    }
    int sink = 0, wdl;
    for (int i = 0; i < N; i++) /* warm: every page touched once */
        if (tb_probe_wdl(t, &pos[i], &wdl) == 0)
            sink += wdl;
    double wall[REPS], cpu[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = time_now(), c0 = s_cpu(CLOCK_THREAD_CPUTIME_ID);
        for (int rep = 0; rep < 16; rep++)
            for (int i = 0; i < N; i++)
                if (tb_probe_wdl(t, &pos[i], &wdl) == 0)
                    sink += wdl;
        wall[r] = 16.0 * N / (time_now() - t0);
        cpu[r] = 16.0 * N / (s_cpu(CLOCK_THREAD_CPUTIME_ID) - c0);
    }
    qsort(wall, REPS, sizeof wall[0], s_cmp);
    qsort(cpu, REPS, sizeof cpu[0], s_cmp);
    printf("tb probe (up to %d pieces, %d random positions, 1 thread): %.2f M/s wall, "
           "%.2f M per CPU second (checksum %d)\n",
           tb_pieces(t), N, wall[REPS / 2] / 1e6, cpu[REPS / 2] / 1e6, sink);
    free(pos);
    tb_close(&t);
    if (temp)
        s_rm(dir);
    return 0;
}
