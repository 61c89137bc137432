/* cluster_harness: processes, logs and status for tests of the cluster's
 * binaries. See cluster_harness.h. */
#include "cluster_harness.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "client.h"
#include "game.h"
#include "model.h"
#include "modelfile.h"
#include "util.h"
#include "validate.h"

#define MAX_PROCS 32

static pid_t s_procs[MAX_PROCS]; /* spawned, not yet reaped */

static void s_track(pid_t pid)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (!s_procs[i]) {
            s_procs[i] = pid;
            return;
        }
}

static void s_untrack(pid_t pid)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (s_procs[i] == pid)
            s_procs[i] = 0;
}

void harness_cleanup(void)
{
    for (int i = 0; i < MAX_PROCS; i++)
        if (s_procs[i] > 0) {
            kill(s_procs[i], SIGKILL);
            waitpid(s_procs[i], NULL, 0);
            s_procs[i] = 0;
        }
}

void harness_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

void harness_init(harness *h, const char *tag)
{
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "/tmp/kz-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(h->dir));
    int p1 = s_free_port(), p2, p3;
    do
        p2 = s_free_port();
    while (p2 == p1);
    do
        p3 = s_free_port();
    while (p3 == p1 || p3 == p2);
    snprintf(h->endpoint, sizeof h->endpoint, "tcp://127.0.0.1:%d", p1);
    snprintf(h->pub, sizeof h->pub, "tcp://127.0.0.1:%d", p2);
    h->http_port = p3;
    snprintf(h->coord_log, sizeof h->coord_log, "%s/coordinator.log", h->dir);
    /* The tiny network: enough to exercise everything, fast to play and train. */
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 8;
    model *m = model_new(&a, 1);
    cr_assert_not_null(m);
    snprintf(h->model, sizeof h->model, "%s/tiny.kzm", h->dir);
    cr_assert_eq(modelfile_save(m, h->model, false), 0);
    model_destroy(&m);
}

void harness_fini(harness *h)
{
    harness_cleanup();
    h->coord = 0;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", h->dir);
    int rc = system(cmd);
    (void)rc;
}

pid_t harness_spawn(const char *name, const char *const *args, const char *logpath)
{
    const char *dir = getenv("KZ_BIN_DIR");
    cr_assert_not_null(dir, "KZ_BIN_DIR must name the build directory");
    char bin[512];
    snprintf(bin, sizeof bin, "%s/%s", dir, name);
    cr_assert_eq(access(bin, X_OK), 0, "%s is not executable", bin);
    const char *argv[64] = {bin};
    int n = 1;
    for (int i = 0; args && args[i]; i++) {
        cr_assert_lt(n, 63);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    s_track(pid);
    return pid;
}

bool harness_wait(pid_t pid, double timeout_s, int *status)
{
    double end = time_now() + timeout_s;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            s_untrack(pid);
            if (status)
                *status = st;
            return true;
        }
        if (time_now() > end)
            return false;
        harness_sleep(0.01);
    }
}

int harness_exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void harness_signal(pid_t pid, int sig)
{
    if (pid > 0)
        kill(pid, sig);
}

char *harness_read(const char *path)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(path, &data, &len))
        return strdup("");
    char *s = realloc(data, len + 1);
    cr_assert_not_null(s);
    s[len] = 0;
    return s;
}

int harness_count(const char *path, const char *needle)
{
    char *s = harness_read(path);
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    free(s);
    return n;
}

bool harness_wait_log(const char *path, const char *needle, double timeout_s)
{
    double end = time_now() + timeout_s;
    for (;;) {
        if (harness_count(path, needle) > 0)
            return true;
        if (time_now() > end)
            return false;
        harness_sleep(0.02);
    }
}

double harness_log_num(const char *path, const char *prefix)
{
    char *s = harness_read(path);
    const char *last = NULL;
    for (const char *p = strstr(s, prefix); p; p = strstr(p + 1, prefix))
        last = p;
    double v = last ? strtod(last + strlen(prefix), NULL) : NAN;
    free(s);
    return v;
}

int harness_http(int port, const char *path, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fd, buf + len, cap - len - 1)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fd);
    int code = -1;
    sscanf(buf, "HTTP/%*s %d", &code);
    char *body = strstr(buf, "\r\n\r\n");
    if (body)
        memmove(buf, body + 4, strlen(body + 4) + 1);
    return code;
}

double harness_status_num(const harness *h, const char *section, const char *key)
{
    static char buf[1 << 16];
    if (harness_http(h->http_port, "/status", buf, sizeof buf) != 200)
        return NAN;
    const char *p = section ? strstr(buf, section) : buf;
    if (!p)
        return NAN;
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(p, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

double harness_wait_status(const harness *h, const char *section, const char *key, double min,
                           double timeout_s)
{
    double end = time_now() + timeout_s, v;
    for (;;) {
        v = harness_status_num(h, section, key);
        if (v >= min || time_now() > end)
            return v;
        harness_sleep(0.02);
    }
}

void harness_coord_start(harness *h, const char *const *extra)
{
    char a_dir[128], a_bind[96], a_pub[96], a_port[48], a_model[160];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", h->dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", h->endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", h->pub);
    snprintf(a_port, sizeof a_port, "--http_port=%d", h->http_port);
    snprintf(a_model, sizeof a_model, "--initial_model=%s", h->model);
    const char *args[40] = {a_dir, a_bind, a_pub, a_port, a_model, "--sync=false",
                            "--status_ms=20", "--heartbeat_ms=100", "--expiry_ms=2000"};
    int n = 9;
    for (int i = 0; extra && extra[i]; i++) {
        cr_assert_lt(n, 39);
        args[n++] = extra[i];
    }
    args[n] = NULL;
    h->coord = harness_spawn("kz-coordinator", args, h->coord_log);
    char buf[4096];
    for (int i = 0; i < 500; i++) {
        if (harness_http(h->http_port, "/healthz", buf, sizeof buf) == 200)
            return;
        int st;
        cr_assert_not(harness_wait(h->coord, 0, &st), "kz-coordinator exited early (see %s)",
                      h->coord_log);
        harness_sleep(0.02);
    }
    cr_assert_fail("kz-coordinator did not come up (see %s)", h->coord_log);
}

void harness_coord_kill(harness *h, int sig)
{
    if (h->coord <= 0)
        return;
    kill(h->coord, sig);
    int st;
    cr_assert(harness_wait(h->coord, 20, &st), "the coordinator did not stop");
    h->coord = 0;
}

void harness_submit_random_games(const harness *h, int n, uint64_t seed)
{
    void *zctx = zmq_ctx_new();
    client_config cfg;
    client_config_default(&cfg);
    cfg.endpoint = h->endpoint;
    cfg.client_id = "harness-games";
    cfg.role = "tool";
    cfg.timeout_ms = 1000;
    client *c = client_new(zctx, &cfg);
    cr_assert_not_null(c);
    validate_random_opts o = {.model_version = 1, .worker_id = "harness"};
    for (int i = 0; i < n; i++) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(validate_random_record(game_default(), seed + (uint64_t)i, &o, &buf, &len),
                     0);
        int rc;
        while ((rc = client_submit_game(c, buf, len, 0)) == KZ_EFULL)
            client_poll(c, 10);
        cr_assert_eq(rc, 0);
        free(buf);
    }
    for (int i = 0; i < 1000 && client_pending(c); i++)
        client_poll(c, 10);
    client_stats st;
    client_get_stats(c, &st);
    cr_assert_eq(client_pending(c), 0, "games not acknowledged");
    cr_assert_eq(st.rejected, 0, "random games rejected");
    client_destroy(&c);
    zmq_ctx_term(zctx);
}
