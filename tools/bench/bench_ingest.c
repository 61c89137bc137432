/* bench_ingest: coordinator ingest speed. Starts a real kz-coordinator (synced
 * LMDB commits, as deployed) on loopback with a fresh store, drives it with
 * `kz loadgen` (many simulated workers submitting valid random games, each
 * replayed through the rules by the coordinator), and reports validated games
 * stored per second. Goal: >= 5000 games/s on the project machine. The
 * coordinator and the simulated workers talk CurveZMQ, as deployed (one
 * worker key for all of them); `plain` runs both with curve = false, to see
 * what the encryption costs.
 *
 * The coordinator re-searches a sample of the games (docs/security.md,
 * "Forged games"); loadgen's random games cannot be checked (counted, not
 * searched). `checked` makes them checkable: loadgen plays a pool of 16
 * self-play games with make run's network (4 blocks x 32 filters, 200
 * simulations), which is also the coordinator's model 1, so that its checking
 * thread searches as it would under real workers while ingest is measured.
 *
 * usage: bench_ingest [GAMES [WORKERS [plain] [checked]]]   (binaries from
 * KZ_BIN_DIR, else the directory of this program) */
#include <arpa/inet.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/curve.h"
#include "common/util.h"

#define GOAL 5000.0

static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* CPU seconds (user + system) process pid has used, -1 when unknown: what
 * the coordinator's work costs, whatever else shares the machine. */
static double s_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* fields after the command name */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int main(int argc, char **argv)
{
    log_init("bench_ingest");
    if (util_version_asked(argc, argv, "bench_ingest"))
        return 0;
    long games = 60000, workers = 64;
    bool plain = false, checked = false, bad = false;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "plain"))
            plain = true;
        else if (!strcmp(argv[i], "checked"))
            checked = true;
        else
            bad = true;
    }
    if ((argc > 1 && parse_long(argv[1], 1, 100000000, &games)) ||
        (argc > 2 && parse_long(argv[2], 1, 4096, &workers)) || bad || argc > 5) {
        fprintf(stderr, "usage: bench_ingest [GAMES [WORKERS [plain] [checked]]]\n");
        return 2;
    }
    char bindir[512];
    const char *env = getenv("KZ_BIN_DIR");
    if (env) {
        snprintf(bindir, sizeof bindir, "%s", env);
    } else {
        char self[512];
        snprintf(self, sizeof self, "%s", argv[0]);
        snprintf(bindir, sizeof bindir, "%s", dirname(self));
    }
    char dir[] = "/tmp/kz-bench-ingest-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_ingest: mkdtemp");
        return 1;
    }
    /* The keys: the coordinator's, and one for every simulated worker. */
    char allow[128], kerr[600], wpub[CURVE_KEY_TEXT], a_key[160], a_allow[160], l_keys[400];
    snprintf(allow, sizeof allow, "%s/allow", dir);
    FILE *af = NULL;
    if (curve_keygen(dir, "coordinator", NULL, kerr, sizeof kerr) ||
        curve_keygen(dir, "loadgen", wpub, kerr, sizeof kerr) || !(af = fopen(allow, "w"))) {
        fprintf(stderr, "bench_ingest: cannot make the keys in %s: %s\n", dir, kerr);
        return 1;
    }
    fprintf(af, "loadgen worker %s\n", wpub);
    fclose(af);
    snprintf(a_key, sizeof a_key, "--curve_secret_key=%s/coordinator.key", dir);
    snprintf(a_allow, sizeof a_allow, "--allow_keys=%s", allow);
    if (plain)
        snprintf(l_keys, sizeof l_keys, "--curve=false");
    else
        snprintf(l_keys, sizeof l_keys, "--curve_server_key=%s/coordinator.pub "
                 "--curve_secret_key=%s/loadgen.key", dir, dir);
    /* checked: the network of the coordinator's model 1 and of loadgen's games. */
    char a_model[160] = "--log_s=3600", l_pool[400] = "--pool=512";
    if (checked) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s/kz model init --blocks 4 --filters 32 %s/m.kzm >/dev/null",
                 bindir, dir);
        if (system(cmd)) {
            fprintf(stderr, "bench_ingest: cannot write a model: %s\n", cmd);
            return 1;
        }
        snprintf(a_model, sizeof a_model, "--initial_model=%s/m.kzm", dir);
        snprintf(l_pool, sizeof l_pool, "--pool=16 --search_model=%s/m.kzm "
                 "--search_simulations=200", dir);
    }
    int port = s_free_port(), pub = s_free_port();
    char coord[600], a_dir[128], a_bind[64], a_pub[64];
    snprintf(coord, sizeof coord, "%s/kz-coordinator", bindir);
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", dir);
    snprintf(a_bind, sizeof a_bind, "--bind=tcp://127.0.0.1:%d", port);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=tcp://127.0.0.1:%d", pub);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char logp[128];
        snprintf(logp, sizeof logp, "%s/coordinator.log", dir);
        if (!freopen(logp, "w", stderr))
            _exit(127);
        if (plain)
            execl(coord, coord, a_dir, a_bind, a_pub, "--http_port=0", "--log_s=3600",
                  a_model, "--curve=false", (char *)NULL);
        else
            execl(coord, coord, a_dir, a_bind, a_pub, "--http_port=0", "--log_s=3600", a_model,
                  a_key, a_allow, (char *)NULL);
        _exit(127);
    }
    usleep(300000);
    int st;
    if (waitpid(pid, &st, WNOHANG) != 0) {
        fprintf(stderr, "bench_ingest: %s did not start (see %s/coordinator.log)\n", coord, dir);
        return 1;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s/kz loadgen --endpoint=tcp://127.0.0.1:%d --games=%ld --workers=%ld "
             "--inflight=32 %s %s 2>/dev/null",
             bindir, port, games, workers, l_pool, l_keys);
    FILE *p = popen(cmd, "r");
    char line[512], last[512] = "";
    while (p && fgets(line, sizeof line, p))
        snprintf(last, sizeof last, "%s", line);
    int lrc = p ? pclose(p) : -1;
    double cpu = s_cpu_seconds(pid);
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
        /* leftovers in /tmp are harmless */
    }
    const char *rate = strstr(last, "s: ");
    double gps = rate ? strtod(rate + 3, NULL) : 0;
    if (lrc != 0 || !rate) {
        fprintf(stderr, "bench_ingest: loadgen failed: %s", last[0] ? last : "(no output)\n");
        return 1;
    }
    printf("%s", last);
    printf("ingest: %.0f validated games stored per second (%ld games, %ld workers, synced "
           "LMDB, loopback, %s%s); goal >= %.0f: %s\n",
           gps, games, workers, plain ? "no CurveZMQ" : "CurveZMQ",
           checked ? ", searched games under the check" : "", GOAL,
           gps >= GOAL ? "met" : "NOT met");
    if (cpu >= 0)
        printf("ingest: the coordinator used %.2f CPU-seconds, %.0f us per game (%s)\n", cpu,
               1e6 * cpu / (double)games, plain ? "no CurveZMQ" : "CurveZMQ");
    return 0;
}
