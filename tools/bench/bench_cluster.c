/* bench_cluster: whole-cluster self-play games per hour on this machine.
 *
 * Starts the real programs (kz-coordinator and kz-worker found beside this
 * binary; kz-trainer too with --trainer) on loopback with a fresh store and a
 * freshly initialised network of the specification's shape (6 residual
 * blocks of 64 filters, value head 64) at a stated simulation count (the
 * specification's 200), one worker per core, and reads the coordinator's
 * /metrics (kz_games_stored_total, kz_positions_stored_total).
 *
 * The figure: the workers start together, so the first games end only after
 * a warm-up (model fetch, the first game's length). The measurement window
 * opens when the first game is stored and lasts --seconds (default 60):
 *     games/hour = 3600 * (games stored in the window) / (window seconds)
 * The whole run's rate, warm-up included, is printed beside it as a lower
 * bound. On a shared machine the workers may not get every core: the CPU
 * time the cluster's processes used in the window (/proc) is printed too,
 * with the rate at full use, 3600 * cores * games / CPU-seconds. A fresh network plays shorter
 * games than a trained one, so this is the cluster's speed at the start of training.
 *
 *   build/bench_cluster [--seconds=60] [--simulations=200] [--workers=N] ...
 *   (--help lists the settings; exit status 1 if the cluster fails, 2 bad usage) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "net/curve.h"
#include "common/util.h"

typedef struct bench_config {
    long seconds;      /* measurement window */
    long warmup_s;     /* longest wait for the first game */
    long workers;      /* worker processes, 0 = one per core */
    long parallel;     /* games at once per worker */
    long simulations;  /* per move */
    long blocks;       /* network shape */
    long filters;      /* network shape */
    long value_hidden; /* network shape */
    bool trainer;      /* also run a trainer (it competes for the cores) */
    bool keep;         /* keep the scratch directory */
} bench_config;

#define CONFIG_STRUCT bench_config
static const config_option s_options[] = {
    CONFIG_ROW_INT(seconds, "60", 5, 86400, "measurement window after the first game"),
    CONFIG_ROW_INT(warmup_s, "300", 10, 86400, "give up when no game is stored within this"),
    CONFIG_ROW_INT(workers, "0", 0, 1024, "worker processes (0 = one per core)"),
    CONFIG_ROW_INT(parallel, "32", 1, 4096, "games at once in each worker"),
    CONFIG_ROW_INT(simulations, "200", 1, 100000,
                   "MCTS simulations per move (the specification's 200)"),
    CONFIG_ROW_INT(blocks, "6", 1, 64, "residual blocks (the specification's 6)"),
    CONFIG_ROW_INT(filters, "64", 1, 1024, "filters (the specification's 64)"),
    CONFIG_ROW_INT(value_hidden, "64", 1, 4096, "value head width (the specification's 64)"),
    CONFIG_ROW_BOOL(trainer, "false",
                    "also run kz-trainer (as make run does); it takes CPU from the workers"),
    CONFIG_ROW_BOOL(keep, "false", "keep the scratch directory and logs"),
};
#define N_OPTIONS (sizeof s_options / sizeof s_options[0])

#define MAX_CHILDREN 1100

static pid_t s_child[MAX_CHILDREN]; /* started, not reaped */
static int s_n_child;
static char s_bin[PATH_MAX];        /* directory of the programs */
static char s_dir[PATH_MAX];        /* scratch directory */

/* Starts argv with output appended to log; the child dies with us. */
static pid_t s_spawn(char *const argv[], const char *log)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (fd < 0 || nul < 0)
            _exit(127);
        dup2(nul, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], argv);
        dprintf(2, "bench_cluster: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    if (s_n_child < MAX_CHILDREN)
        s_child[s_n_child++] = pid;
    return pid;
}

/* SIGTERM to the children (newest first: workers before the coordinator),
 * a bounded wait, then SIGKILL. */
static void s_stop_all(void)
{
    for (int i = s_n_child - 1; i >= 0; i--) {
        kill(s_child[i], SIGTERM);
        double end = time_now() + 30;
        while (waitpid(s_child[i], NULL, WNOHANG) == 0 && time_now() < end)
            usleep(20000);
        kill(-s_child[i], SIGKILL);
        waitpid(s_child[i], NULL, 0);
    }
    s_n_child = 0;
}

static bool s_child_died(void)
{
    for (int i = 0; i < s_n_child; i++) {
        int st;
        if (waitpid(s_child[i], &st, WNOHANG) == s_child[i]) {
            fprintf(stderr, "bench_cluster: a program (pid %d) exited with status %d; logs in %s\n",
                    (int)s_child[i], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), s_dir);
            s_child[i] = s_child[--s_n_child];
            return true;
        }
    }
    return false;
}

/* CPU seconds (user + system) used so far by the children still running. */
static double s_children_cpu(void)
{
    double total = 0;
    long tick = sysconf(_SC_CLK_TCK);
    for (int i = 0; i < s_n_child; i++) {
        char path[64], line[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)s_child[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(line, sizeof line, f)) {
            /* Fields after the ")" closing the command name: state is 3rd,
             * utime the 14th and stime the 15th of the whole line. */
            const char *p = strrchr(line, ')');
            unsigned long long ut = 0, st = 0;
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                            &st) == 2)
                total += (double)(ut + st) / (double)tick;
        }
        fclose(f);
    }
    return total;
}

static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int port = 0;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
        !getsockname(fd, (struct sockaddr *)&a, &al))
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Reads metric `name` from GET /metrics; false when unreachable or absent. */
static bool s_metric(int port, const char *name, double *out)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    static char buf[1 << 20];
    size_t len = 0;
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&a, sizeof a) ||
        write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return false;
    }
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = 0;
    size_t nl = strlen(name);
    for (char *p = strstr(buf, "\r\n\r\n"); p && *p; p = strchr(p, '\n')) {
        p += *p == '\n' ? 1 : 0;
        while (*p == '\r' || *p == '\n')
            p++;
        if (!strncmp(p, name, nl) && p[nl] == ' ') {
            *out = strtod(p + nl + 1, NULL);
            return true;
        }
    }
    return false;
}

static int s_run(char *const argv[])
{
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/setup.log", s_dir);
    pid_t pid = s_spawn(argv, log);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    s_n_child--;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char s_usage[] =
    "usage: bench_cluster [--key=value ...]\n\n"
    "Whole-cluster self-play games per hour on this machine: a coordinator and one\n"
    "worker per core on loopback, the specification's network at 200 simulations by\n"
    "default; games/hour = 3600 * games stored in the window / window seconds, the\n"
    "window opening at the first stored game.\n\n";

int main(int argc, char **argv)
{
    log_init("bench_cluster");
    if (util_version_asked(argc, argv, "bench_cluster"))
        return 0;
    bench_config cfg;
    int rc = config_start("bench_cluster", s_usage, s_options, N_OPTIONS, &cfg, argc, argv,
                          NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long n_workers = cfg.workers ? cfg.workers : (cores > 0 ? cores : 1);

    /* The programs live beside this binary. */
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "bench_cluster: cannot find its own path\n");
        return 1;
    }
    self[sl] = 0;
    snprintf(s_bin, sizeof s_bin, "%s", dirname(self));
    char kz[PATH_MAX + 32], coord[PATH_MAX + 32], worker[PATH_MAX + 32], trainer[PATH_MAX + 32];
    snprintf(kz, sizeof kz, "%s/kz", s_bin);
    snprintf(coord, sizeof coord, "%s/kz-coordinator", s_bin);
    snprintf(worker, sizeof worker, "%s/kz-worker", s_bin);
    snprintf(trainer, sizeof trainer, "%s/kz-trainer", s_bin);
    const char *need[] = {kz, coord, worker, cfg.trainer ? trainer : kz};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (access(need[i], X_OK)) {
            printf("bench_cluster: skipped: %s is not built\n", need[i]);
            return 0;
        }
    const char *tmp = getenv("TMPDIR");
    snprintf(s_dir, sizeof s_dir, "%s/kz-bench-cluster-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s_dir)) {
        fprintf(stderr, "bench_cluster: cannot make a scratch directory: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    /* Step 1. A fresh network of the chosen shape. */
    char model[PATH_MAX + 16], a_blocks[32], a_filters[32], a_vh[32];
    snprintf(model, sizeof model, "%s/start.model", s_dir);
    snprintf(a_blocks, sizeof a_blocks, "%ld", cfg.blocks);
    snprintf(a_filters, sizeof a_filters, "%ld", cfg.filters);
    snprintf(a_vh, sizeof a_vh, "%ld", cfg.value_hidden);
    char *init[] = {kz, "model", "init", "--blocks", a_blocks, "--filters", a_filters,
                    "--value-hidden", a_vh, model, NULL};
    int status = 1;
    if (s_run(init)) {
        fprintf(stderr, "bench_cluster: kz model init failed (see %s/setup.log)\n", s_dir);
        goto out;
    }

    /* Step 2. The keys (the cluster runs authenticated, as make run's): one for
     * the coordinator, one shared by the workers, one for the trainer. */
    char keys[PATH_MAX + 16], allow[PATH_MAX + 32], kerr[600], wpub[CURVE_KEY_TEXT],
        tpub[CURVE_KEY_TEXT];
    snprintf(keys, sizeof keys, "%s/keys", s_dir);
    snprintf(allow, sizeof allow, "%s/allow", keys);
    FILE *af = NULL;
    if (mkdir(keys, 0700) || curve_keygen(keys, "coordinator", NULL, kerr, sizeof kerr) ||
        curve_keygen(keys, "bench", wpub, kerr, sizeof kerr) ||
        curve_keygen(keys, "bench-trainer", tpub, kerr, sizeof kerr) ||
        !(af = fopen(allow, "w"))) {
        fprintf(stderr, "bench_cluster: cannot make the keys in %s: %s\n", keys, kerr);
        goto out;
    }
    fprintf(af, "bench worker %s\nbench-trainer trainer %s\n", wpub, tpub);
    fclose(af);
    char a_ckey[PATH_MAX + 48], a_allow[PATH_MAX + 48], a_skey[PATH_MAX + 48],
        a_wkey[PATH_MAX + 48], a_tkey[PATH_MAX + 48];
    snprintf(a_ckey, sizeof a_ckey, "--curve_secret_key=%s/coordinator.key", keys);
    snprintf(a_allow, sizeof a_allow, "--allow_keys=%s", allow);
    snprintf(a_skey, sizeof a_skey, "--curve_server_key=%s/coordinator.pub", keys);
    snprintf(a_wkey, sizeof a_wkey, "--curve_secret_key=%s/bench.key", keys);
    snprintf(a_tkey, sizeof a_tkey, "--curve_secret_key=%s/bench-trainer.key", keys);

    /* Step 3. The coordinator, then the workers (and the trainer). */
    int port = s_free_port(), pub = s_free_port(), http = s_free_port();
    char a_data[PATH_MAX + 16], a_bind[64], a_pub[64], a_http[32], a_model[PATH_MAX + 32],
        a_sims[32], log[PATH_MAX + 32];
    snprintf(a_data, sizeof a_data, "--data_dir=%s/store", s_dir);
    snprintf(a_bind, sizeof a_bind, "--bind=tcp://127.0.0.1:%d", port);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=tcp://127.0.0.1:%d", pub);
    snprintf(a_http, sizeof a_http, "--http_port=%d", http);
    snprintf(a_model, sizeof a_model, "--initial_model=%s", model);
    snprintf(a_sims, sizeof a_sims, "--simulations=%ld", cfg.simulations);
    snprintf(log, sizeof log, "%s/coordinator.log", s_dir);
    char *cargv[] = {coord, a_data, a_bind, a_pub, a_http, a_model, a_sims, "--status_ms=100",
                     a_ckey, a_allow, NULL};
    if (s_spawn(cargv, log) < 0)
        goto out;
    double up_end = time_now() + 30, v;
    while (!s_metric(http, "kz_games_stored_total", &v)) {
        if (s_child_died() || time_now() > up_end) {
            fprintf(stderr, "bench_cluster: the coordinator did not start (see %s)\n", log);
            goto out;
        }
        usleep(50000);
    }
    char a_ep[64], a_sub[64], a_par[32], a_id[64], a_tep[64], a_ckpt[PATH_MAX + 32];
    snprintf(a_ep, sizeof a_ep, "--endpoint=tcp://127.0.0.1:%d", port);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=tcp://127.0.0.1:%d", pub);
    snprintf(a_par, sizeof a_par, "--parallel=%ld", cfg.parallel);
    double t_start = time_now();
    for (long i = 0; i < n_workers; i++) {
        snprintf(a_id, sizeof a_id, "--worker_id=bench-%ld", i + 1);
        snprintf(log, sizeof log, "%s/worker-%ld.log", s_dir, i + 1);
        char *wargv[] = {worker, a_ep,   a_sub,  a_id, a_par, "--model_cache_dir=", "--threads=1",
                         a_skey, a_wkey, NULL};
        if (s_spawn(wargv, log) < 0)
            goto out;
    }
    if (cfg.trainer) {
        snprintf(a_tep, sizeof a_tep, "--endpoint=tcp://127.0.0.1:%d", port);
        snprintf(a_ckpt, sizeof a_ckpt, "--checkpoint_dir=%s/trainer", s_dir);
        snprintf(log, sizeof log, "%s/trainer.log", s_dir);
        char *targv[] = {trainer, a_tep, a_ckpt, a_skey, a_tkey, NULL};
        if (s_spawn(targv, log) < 0)
            goto out;
    }
    printf("bench_cluster: coordinator + %ld worker%s (%ld games at once each, 1 OpenBLAS thread)"
           "%s on %ld cores; network %ld blocks x %ld filters (value head %ld)%s, %ld simulations "
           "per move\n",
           n_workers, n_workers == 1 ? "" : "s", cfg.parallel,
           cfg.trainer ? " + trainer" : ", no trainer", cores, cfg.blocks, cfg.filters,
           cfg.value_hidden,
           cfg.blocks == 6 && cfg.filters == 64 && cfg.value_hidden == 64 ? " = the specification's"
                                                                           : "",
           cfg.simulations);
    fflush(stdout);

    /* Step 4. Warm-up: until the first game is stored. */
    double games = 0, t0 = 0, g0 = 0, p0 = 0, c0 = 0;
    double warm_end = t_start + (double)cfg.warmup_s;
    for (;;) {
        if (s_child_died())
            goto out;
        if (s_metric(http, "kz_games_stored_total", &games) && games > 0) {
            t0 = time_now();
            c0 = s_children_cpu();
            g0 = games;
            s_metric(http, "kz_positions_stored_total", &p0);
            break;
        }
        if (time_now() > warm_end) {
            fprintf(stderr, "bench_cluster: no game within %ld s (logs in %s)\n", cfg.warmup_s,
                    s_dir);
            goto out;
        }
        usleep(100000);
    }
    printf("  warm-up: first game stored %.1f s after the workers started\n", t0 - t_start);
    fflush(stdout);

    /* Step 5. The window. */
    double t1 = t0 + (double)cfg.seconds, g1 = g0, p1 = p0;
    while (time_now() < t1) {
        if (s_child_died())
            goto out;
        usleep(200000);
    }
    double t_end = time_now();
    double cpu = s_children_cpu() - c0;
    if (!s_metric(http, "kz_games_stored_total", &g1) ||
        !s_metric(http, "kz_positions_stored_total", &p1)) {
        fprintf(stderr, "bench_cluster: the coordinator stopped answering\n");
        goto out;
    }
    double window = t_end - t0, dg = g1 - g0, dp = p1 - p0;
    printf("  window: %.0f games (%.0f positions, %.1f per game) in %.1f s after the first\n", dg,
           dp, dg > 0 ? dp / dg : 0.0, window);
    printf("  games/hour = 3600 * games / seconds = 3600 * %.0f / %.1f = %.0f games/hour "
           "(%.0f per worker)\n",
           dg, window, 3600 * dg / window, 3600 * dg / window / (double)n_workers);
    printf(
        "  CPU: the cluster used %.1f of the %.1f CPU-seconds of %ld cores in the window (%.0f%%);"
        " at full use, 3600 * %ld * games / CPU-seconds = %.0f games/hour\n",
        cpu, window * (double)cores, cores, 100 * cpu / (window * (double)cores), cores,
        cpu > 0 ? 3600 * (double)cores * dg / cpu : 0.0);
    printf("  whole run, warm-up included: 3600 * %.0f / %.1f = %.0f games/hour; "
           "positions/hour %.0f\n",
           g1, t_end - t_start, 3600 * g1 / (t_end - t_start), 3600 * dp / window);
    status = 0;
out:
    s_stop_all();
    if (cfg.keep || status) {
        printf("  scratch directory kept: %s\n", s_dir);
    } else {
        char *rm[] = {"/bin/rm", "-rf", "--", s_dir, NULL};
        s_run(rm);
    }
    return status;
}

#undef CONFIG_STRUCT