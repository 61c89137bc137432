/* bench_solve: the proof search's and the verifier's speed (solve/pns.h,
 * solve/certificate.h), on the start position without tables:
 *   search: "White does not lose" (proven) and "Black does not lose"
 *           (disproven) from the start in a fresh in-memory table: nodes
 *           (expansions) per second;
 *   verify: both certificates re-checked with the naive rules: turns per second.
 * Each figure per second of wall-clock time and per CPU second of this
 * process (on a shared machine the wall-clock figure falls with the load).
 * The table build's positions per second are bench_tb's.
 *
 * usage: bench_solve */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "games/khreibaga.h"
#include "solve/certificate.h"
#include "solve/pns.h"

static double s_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: bench_solve\n");
        return 2;
    }
    char err[512];
    pns_pos root;
    if (pns_pos_parse(KH_START, &root, err, sizeof err))
        return 1;
    const char *tmp = getenv("TMPDIR");
    char path[2][600];
    int rc = 0;
    for (int claim = 1; claim >= 0 && !rc; claim--) {
        snprintf(path[claim], sizeof path[claim], "%s/bench_solve-%d-%ld.txt",
                 tmp && *tmp ? tmp : "/tmp", claim, (long)getpid());
        pns_tt *tt = pns_tt_open(NULL, 256 << 20, err, sizeof err);
        if (!tt) {
            fprintf(stderr, "bench_solve: %s\n", err);
            return 1;
        }
        pns_opts o = {.claim = claim};
        int outcome;
        double t0 = time_now(), c0 = s_cpu();
        pns_solve(tt, &root, &o, &outcome);
        double wall = time_now() - t0, cpu = s_cpu() - c0;
        pns_stats st;
        pns_tt_stats(tt, &st);
        FILE *f = fopen(path[claim], "w");
        pns_cert_stats cs = {0};
        rc = !f || (outcome == PNS_PROVEN ? pns_extract(tt, &root, &o, f, &cs)
                                          : pns_extract_win(tt, &root, &o, f, &cs));
        if (f)
            fclose(f);
        printf("solve search, start, %s does not lose: %s, %" PRIu64 " nodes in %.2f s wall, "
               "%.2f s CPU: %.0fk nodes/s wall, %.0fk per CPU second; certificate %" PRIu64
               " nodes\n", claim ? "White" : "Black",
               outcome == PNS_PROVEN ? "proven" : outcome == PNS_DISPROVEN ? "disproven" : "open",
               st.nodes, wall, cpu, st.nodes / wall / 1e3, st.nodes / cpu / 1e3, cs.nodes);
        pns_tt_close(&tt);
        if (outcome != (claim ? PNS_PROVEN : PNS_DISPROVEN)) {
            fprintf(stderr, "bench_solve: the start's answer changed\n");
            rc = 1;
        }
    }
    for (int claim = 1; claim >= 0 && !rc; claim--) {
        cert_report r;
        double t0 = time_now(), c0 = s_cpu();
        rc = cert_verify(path[claim], NULL, &r, err, sizeof err);
        double wall = time_now() - t0, cpu = s_cpu() - c0;
        if (rc) {
            fprintf(stderr, "bench_solve: %s\n", err);
            break;
        }
        printf("solve verify (naive rules), %s: %" PRIu64 " turns in %.2f s wall, %.2f s CPU: "
               "%.0fk turns/s wall, %.0fk per CPU second\n", r.win ? "White wins" :
               "White does not lose", r.turns, wall, cpu, r.turns / wall / 1e3,
               r.turns / cpu / 1e3);
    }
    unlink(path[0]);
    unlink(path[1]);
    return rc ? 1 : 0;
}
