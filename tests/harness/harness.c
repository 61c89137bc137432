/* harness: processes, files, HTTP, JSON, network namespaces and one test's
 * cluster, for the tests that run real programs (see harness.h). */
#include "tests/harness/harness.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "net/curve.h"
#include "games/game.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"
#include "data/validate.h"

/* --- paths and files ---------------------------------------------------------------- */

const char *harness_bin_dir(void)
{
    const char *d = getenv("KZ_BIN_DIR");
    return d && *d ? d : "build";
}

const char *harness_src_dir(void)
{
    static char src[PATH_MAX];
    if (src[0])
        return src;
    char probe[PATH_MAX + 32];
    snprintf(src, sizeof src, "%s/..", harness_bin_dir());
    snprintf(probe, sizeof probe, "%s/deploy", src);
    struct stat st;
    if (stat(probe, &st) || !S_ISDIR(st.st_mode))
        snprintf(src, sizeof src, ".");
    return src;
}

const char *harness_bin(char *buf, size_t len, const char *prog)
{
    snprintf(buf, len, "%s/%s", harness_bin_dir(), prog);
    return buf;
}

char *harness_tmpdir(const char *tag)
{
    const char *t = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/kz-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    if (!mkdtemp(tmpl))
        return NULL;
    return strdup(tmpl);
}

void harness_rm_rf(const char *path)
{
    if (!path || !*path || !strcmp(path, "/"))
        return;
    char *argv[] = {"rm", "-rf", "--", (char *)path, NULL};
    char out[256];
    proc_run(argv, out, sizeof out, 30);
}

char *harness_read_file(const char *path)
{
    uint8_t *data;
    size_t len;
    if (file_read_all(path, &data, &len))
        return NULL;
    char *s = realloc(data, len + 1);
    if (!s) {
        free(data);
        return NULL;
    }
    s[len] = 0;
    return s;
}

char *harness_read(const char *path)
{
    char *s = harness_read_file(path);
    return s ? s : strdup("");
}

int harness_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return errno;
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, f) == n ? 0 : EIO;
    if (fclose(f) && !rc)
        rc = errno;
    return rc;
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
    double end = harness_now() + timeout_s;
    for (;;) {
        if (harness_count(path, needle) > 0)
            return true;
        if (harness_now() > end)
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

/* --- time -------------------------------------------------------------------------- */

double harness_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void harness_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

void harness_sleep_ms(int ms)
{
    harness_sleep(ms / 1000.0);
}

/* --- processes --------------------------------------------------------------------- */

static pid_t s_started[HARNESS_MAX_PROCS]; /* pids started and not yet reaped, 0 = free */

static void s_remember(pid_t pid)
{
    for (int i = 0; i < HARNESS_MAX_PROCS; i++)
        if (!s_started[i]) {
            s_started[i] = pid;
            return;
        }
}

static void s_forget(pid_t pid)
{
    for (int i = 0; i < HARNESS_MAX_PROCS; i++)
        if (s_started[i] == pid)
            s_started[i] = 0;
}

/* In a freshly forked child: own process group, die with the parent. */
static void s_child_setup(pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before the prctl */
        _exit(127);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL); /* a shell script may trap it (Ctrl-C tests) */
    signal(SIGQUIT, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

int proc_start(proc *p, const char *name, const char *netns, const char *log,
               char *const argv[])
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->log, sizeof p->log, "%s", log);
    char *args[HARNESS_MAX_ARGS + 8];
    size_t n = 0;
    if (netns) {
        args[n++] = "ip";
        args[n++] = "netns";
        args[n++] = "exec";
        args[n++] = (char *)netns;
    }
    for (size_t i = 0; argv[i]; i++) {
        if (n >= HARNESS_MAX_ARGS + 6)
            return E2BIG;
        args[n++] = argv[i];
    }
    args[n] = NULL;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fd);
        return e;
    }
    if (pid == 0) {
        s_child_setup(parent);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(args[0], args);
        dprintf(2, "harness: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: no race with a signal sent right away */
    close(fd);
    p->pid = pid;
    s_remember(pid);
    return 0;
}

static bool s_reap(proc *p, int flags)
{
    if (!p->pid || p->exited)
        return true;
    int st;
    pid_t r;
    do {
        r = waitpid(p->pid, &st, flags);
    } while (r < 0 && errno == EINTR);
    if (r == p->pid || (r < 0 && errno == ECHILD)) {
        p->exited = true;
        p->status = r == p->pid ? st : 0;
        s_forget(p->pid);
        /* Whatever it left in its group (it should be alone) goes too. */
        kill(-p->pid, SIGKILL);
        return true;
    }
    return false;
}

bool proc_alive(proc *p)
{
    return p->pid && !s_reap(p, WNOHANG);
}

int proc_signal(proc *p, int sig)
{
    if (!proc_alive(p))
        return ESRCH;
    return kill(-p->pid, sig) ? errno : 0;
}

bool proc_wait_exit(proc *p, double timeout_s)
{
    double end = harness_now() + timeout_s;
    while (proc_alive(p)) {
        if (harness_now() > end)
            return false;
        harness_sleep_ms(20);
    }
    return true;
}

int proc_stop(proc *p, int sig, double timeout_s)
{
    if (!p->pid)
        return 0;
    if (proc_alive(p)) {
        kill(-p->pid, sig);
        if (!proc_wait_exit(p, timeout_s)) {
            kill(-p->pid, SIGKILL);
            s_reap(p, 0);
        }
    }
    return p->status;
}

void proc_kill_all(void)
{
    for (int i = 0; i < HARNESS_MAX_PROCS; i++) {
        pid_t pid = s_started[i];
        if (!pid)
            continue;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        s_started[i] = 0;
    }
}

/* A temp file, already unlinked, for a child's stdin or output; -1 on failure. */
static int s_temp_fd(void)
{
    const char *t = getenv("TMPDIR");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/kz-run-XXXXXX", t && *t ? t : "/tmp");
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* The whole content of fd (from its start), NUL-terminated; never NULL. */
static char *s_slurp_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        abort();
    if (fd >= 0) {
        lseek(fd, 0, SEEK_SET);
        ssize_t n;
        while ((n = read(fd, buf + len, cap - len - 1)) > 0 || (n < 0 && errno == EINTR)) {
            if (n < 0)
                continue;
            len += (size_t)n;
            if (cap - len < 2) {
                char *nb = realloc(buf, cap *= 2);
                if (!nb)
                    abort();
                buf = nb;
            }
        }
    }
    buf[len] = '\0';
    return buf;
}

int proc_capture(char *const argv[], const proc_opts *opts, proc_output *o)
{
    proc_opts def = {0};
    if (!opts)
        opts = &def;
    *o = (proc_output){-1, NULL, NULL};
    int in = -1, out = s_temp_fd(), err = opts->merge ? out : s_temp_fd();
    if (opts->input && (in = s_temp_fd()) >= 0) {
        size_t n = strlen(opts->input);
        if (write(in, opts->input, n) != (ssize_t)n) {
            close(in);
            in = -1;
        }
    }
    pid_t parent = getpid(), pid = -1;
    if (out >= 0 && err >= 0 && (!opts->input || in >= 0)) {
        fflush(NULL);
        pid = fork();
    }
    if (pid == 0) {
        s_child_setup(parent);
        if (opts->dir && chdir(opts->dir)) {
            dprintf(err, "harness: cannot enter %s: %s\n", opts->dir, strerror(errno));
            _exit(127);
        }
        if (in >= 0)
            lseek(in, 0, SEEK_SET);
        int stdin_fd = in >= 0 ? in : open("/dev/null", O_RDONLY);
        if (stdin_fd >= 0)
            dup2(stdin_fd, 0);
        dup2(out, 1);
        dup2(err, 2);
        if (opts->quiet_log)
            unsetenv("KZ_LOG");
        execvp(argv[0], argv);
        dprintf(2, "harness: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st = 0;
    if (pid > 0) {
        setpgid(pid, pid);
        double end = harness_now() + (opts->timeout_s > 0 ? opts->timeout_s : 120);
        bool killed = false;
        for (int ms = 1;; ms = ms < 20 ? ms * 2 : 20) {
            pid_t r = waitpid(pid, &st, WNOHANG);
            if (r == pid || (r < 0 && errno != EINTR))
                break;
            if (!killed && harness_now() > end) {
                kill(-pid, SIGKILL);
                killed = true;
            }
            harness_sleep_ms(ms);
        }
        kill(-pid, SIGKILL); /* anything it left in its group */
        o->status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    o->out = s_slurp_fd(out);
    o->err = opts->merge ? s_slurp_fd(-1) : s_slurp_fd(err);
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (err >= 0 && err != out)
        close(err);
    return o->status;
}

void proc_output_free(proc_output *o)
{
    free(o->out);
    free(o->err);
    o->out = o->err = NULL;
}

int proc_run(char *const argv[], char *out, size_t cap, double timeout_s)
{
    proc_opts opts = {.merge = true, .timeout_s = timeout_s};
    proc_output o;
    int st = proc_capture(argv, &opts, &o);
    if (cap)
        snprintf(out, cap, "%s", o.out);
    proc_output_free(&o);
    return st;
}

/* Runs argv, failing the test when it cannot run or is killed. */
static int s_run_checked(char *const argv[], const char *what, const proc_opts *opts,
                         proc_output *o)
{
    int st = proc_capture(argv, opts, o);
    cr_assert(st >= 0 && st < 128, "`%s` did not exit normally (status %d): %s", what, st,
              opts && opts->merge ? o->out : o->err);
    return st;
}

int harness_kz(const char *args, const proc_opts *opts, proc_output *o)
{
    char kz[PATH_MAX], cmd[8192];
    harness_bin(kz, sizeof kz, "kz");
    snprintf(cmd, sizeof cmd, "exec \"$0\" %s", args);
    char *argv[] = {"sh", "-c", cmd, kz, NULL};
    return s_run_checked(argv, args, opts, o);
}

int harness_sh(const char *cmd, char *out, size_t cap)
{
    char *argv[] = {"sh", "-c", (char *)cmd, NULL};
    proc_output o;
    int st = proc_capture(argv, NULL, &o);
    snprintf(out, cap, "%s", o.out);
    proc_output_free(&o);
    return st;
}

int harness_kz_out(const char *args, const char *input, bool merge, char *out, size_t cap)
{
    proc_opts opts = {.input = input, .merge = merge};
    proc_output o;
    int st = harness_kz(args, &opts, &o);
    snprintf(out, cap, "%s", o.out);
    proc_output_free(&o);
    return st;
}

/* True when prog is a cluster program run without CurveZMQ by default here:
 * kz-coordinator, kz-worker or kz-trainer (or their copies with the toy
 * game, toy/...), and no argument starts --curve. */
static bool s_plain_by_default(const char *prog, const char *const *args)
{
    if (!strncmp(prog, "toy/", 4))
        prog += 4;
    if (strcmp(prog, "kz-coordinator") && strcmp(prog, "kz-worker") && strcmp(prog, "kz-trainer"))
        return false;
    for (int i = 0; args && args[i]; i++)
        if (!strncmp(args[i], "--curve", 7))
            return false;
    return true;
}

int harness_run_bin(const char *prog, const char *const *args, const proc_opts *opts,
                    proc_output *o)
{
    char bin[PATH_MAX];
    harness_bin(bin, sizeof bin, prog);
    char *argv[HARNESS_MAX_ARGS * 16 + 2];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args && args[i]; i++) {
        cr_assert_lt(n, (int)(sizeof argv / sizeof argv[0]) - 1, "too many arguments");
        argv[n++] = (char *)args[i];
    }
    if (s_plain_by_default(prog, args))
        argv[n++] = "--curve=false"; /* as harness_spawn */
    argv[n] = NULL;
    return s_run_checked(argv, prog, opts, o);
}

const char *proc_log_tail(const proc *p, size_t max)
{
    static char buf[8192];
    buf[0] = 0;
    if (max >= sizeof buf)
        max = sizeof buf - 1;
    FILE *f = fopen(p->log, "r");
    if (!f)
        return "(no log)";
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)max ? size - (long)max : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(buf, 1, max, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* --- TCP and HTTP ------------------------------------------------------------------ */

static bool s_port_bindable(int port);

/* Reserves port for this process (an flock held until it exits); false when
 * another process holds it. */
static bool s_port_reserve(int port)
{
    char path[96];
    snprintf(path, sizeof path, "/tmp/kz-ports-%u", (unsigned)getuid());
    if (mkdir(path, 0700) && errno != EEXIST)
        return false;
    snprintf(path + strlen(path), sizeof path - strlen(path), "/%d", port);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        close(fd);
        return false;
    }
    return true; /* fd stays open: the lock lasts as long as the process */
}

int tcp_free_port(void)
{
    static uint64_t x;
    if (!x) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 20;
    }
    for (int i = 0; i < 4000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int port = 20000 + (int)((x >> 33) % 12000);
        if (s_port_bindable(port) && s_port_reserve(port) && s_port_bindable(port))
            return port;
    }
    return 0;
}

static bool s_port_bindable(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = !bind(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    return ok;
}

int tcp_free_port_pair(void)
{
    for (int i = 0; i < 100; i++) {
        int p = tcp_free_port();
        if (p > 0 && p < 65535 && s_port_bindable(p + 1) && s_port_reserve(p + 1))
            return p;
    }
    return 0;
}

void harness_cli_init(harness_cli *c, const char *tag)
{
    *c = (harness_cli){harness_tmpdir(tag), NULL, NULL};
    cr_assert_not_null(c->dir, "cannot make a temp directory");
}

int harness_cli_kz(harness_cli *c, const char *args)
{
    proc_opts opts = {.dir = c->dir};
    proc_output o;
    free(c->out);
    free(c->err);
    int st = harness_kz(args, &opts, &o);
    c->out = o.out;
    c->err = o.err;
    return st;
}

void harness_cli_fini(harness_cli *c)
{
    free(c->out);
    free(c->err);
    harness_rm_rf(c->dir);
    free(c->dir);
    *c = (harness_cli){NULL, NULL, NULL};
}

bool harness_pid_gone(int pid)
{
    if (kill(pid, 0) && errno == ESRCH)
        return true;
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    bool zombie = false;
    if (fgets(line, sizeof line, f)) {
        const char *rp = strrchr(line, ')');
        zombie = rp && rp[1] == ' ' && rp[2] == 'Z';
    }
    fclose(f);
    return zombie;
}

/* A TCP socket made inside namespace netns (NULL: ours): network namespaces
 * are per thread, so switch, make the socket, switch back. */
static int s_socket_in(const char *netns)
{
    if (!netns)
        return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "/run/netns/%s", netns);
    int target = open(path, O_RDONLY | O_CLOEXEC);
    int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int fd = -1;
    if (target >= 0 && self >= 0 && !setns(target, CLONE_NEWNET)) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (setns(self, CLONE_NEWNET)) {
            /* Cannot come back: this thread would talk from the wrong place. */
            fprintf(stderr, "harness: cannot leave namespace %s: %s\n", netns, strerror(errno));
            abort();
        }
    }
    if (target >= 0)
        close(target);
    if (self >= 0)
        close(self);
    return fd;
}

char *http_exchange(const char *netns, const char *host, int port, const void *req, size_t len,
                    double timeout_s, size_t *got)
{
    *got = 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return NULL;
    int fd = s_socket_in(netns);
    if (fd < 0)
        return NULL;
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return NULL;
    }
    const char *r8 = req;
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, r8 + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* the server may close early on garbage: read what it said */
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return NULL;
    }
    double end = harness_now() + timeout_s;
    for (;;) {
        double left = end - harness_now();
        if (left <= 0)
            break;
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
        if (pr <= 0)
            continue;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                break;
            buf = nb;
        }
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *got = n;
    return buf;
}

int http_code(const char *answer)
{
    int code = 0;
    if (answer)
        sscanf(answer, "HTTP/%*s %d", &code);
    return code;
}

/* GET path: the answer's code and its body (moved to the start of the
 * malloc'd *answer), or -1 (*answer NULL) when the connection fails. */
static int s_get(const char *netns, const char *host, int port, const char *path,
                 double timeout_s, char **answer)
{
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host);
    size_t got;
    *answer = http_exchange(netns, host, port, req, (size_t)n, timeout_s, &got);
    if (!*answer)
        return -1;
    int code = http_code(*answer);
    char *body = strstr(*answer, "\r\n\r\n");
    if (body)
        memmove(*answer, body + 4, strlen(body + 4) + 1);
    else
        (*answer)[0] = 0;
    return code;
}

int http_get(const char *netns, const char *host, int port, const char *path, char **body)
{
    char *answer;
    int code = s_get(netns, host, port, path, 3, &answer);
    if (code == 200) {
        *body = answer;
        return 0;
    }
    free(answer);
    *body = NULL;
    return code < 0 ? (errno ? errno : EIO) : -1;
}

int harness_http(int port, const char *path, char *buf, size_t cap)
{
    char *answer;
    int code = s_get(NULL, "127.0.0.1", port, path, 10, &answer);
    if (cap)
        snprintf(buf, cap, "%s", answer ? answer : "");
    free(answer);
    return code < 0 ? -1 : code;
}

/* --- JSON -------------------------------------------------------------------------- */

static const char *s_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

/* Past the string starting at p (on its quote), strictly (no raw control
 * characters, known escapes only); NULL if malformed. */
static const char *s_skip_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL; /* raw control characters (and the end) are not allowed */
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (!p[k] || !strchr("0123456789abcdefABCDEF", p[k]))
                        return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return p + 1;
}

/* Past the value starting at p (RFC 8259 syntax, no extensions); NULL when
 * malformed. */
static const char *s_skip_value(const char *p, int depth)
{
    if (depth > 64)
        return NULL;
    p = s_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool obj = *p == '{';
        p = s_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                if (!(p = s_skip_string(s_ws(p))))
                    return NULL;
                p = s_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            if (!(p = s_skip_value(p, depth + 1)))
                return NULL;
            p = s_ws(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    if (*p == '"')
        return s_skip_string(p);
    if (!strncmp(p, "true", 4))
        return p + 4;
    if (!strncmp(p, "false", 5))
        return p + 5;
    if (!strncmp(p, "null", 4))
        return p + 4;
    char *end;
    strtod(p, &end);
    return end == p || *p == '+' || *p == '.' ? NULL : end;
}

bool json_valid(const char *doc)
{
    const char *end = doc ? s_skip_value(doc, 0) : NULL;
    return end && *s_ws(end) == 0;
}

bool metrics_value(const char *text, const char *name, double *v)
{
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') {
            *v = strncmp(p + n + 1, "NaN", 3) ? strtod(p + n + 1, NULL) : NAN;
            return true;
        }
    return false;
}

double json_number_after(const char *json, const char *after, const char *key)
{
    const char *p = !json ? NULL : after ? strstr(json, after) : json;
    if (!p)
        return NAN;
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(p, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* The start of the value at `path` in the document, or NULL. */
static const char *s_lookup(const char *json, const char *path)
{
    const char *p = s_ws(json);
    while (*path) {
        const char *dot = strchr(path, '.');
        size_t plen = dot ? (size_t)(dot - path) : strlen(path);
        if (*p == '{') {
            p = s_ws(p + 1);
            bool found = false;
            while (*p == '"') {
                const char *k = p + 1;
                const char *ke = s_skip_string(p);
                if (!ke)
                    return NULL;
                bool match = (size_t)(ke - 1 - k) == plen && !strncmp(k, path, plen);
                p = s_ws(ke);
                if (*p++ != ':')
                    return NULL;
                p = s_ws(p);
                if (match) {
                    found = true;
                    break;
                }
                if (!(p = s_skip_value(p, 0)))
                    return NULL;
                p = s_ws(p);
                if (*p == ',')
                    p = s_ws(p + 1);
            }
            if (!found)
                return NULL;
        } else if (*p == '[') {
            char *end;
            long idx = strtol(path, &end, 10);
            if (end != path + plen || idx < 0)
                return NULL;
            p = s_ws(p + 1);
            for (long i = 0; i < idx; i++) {
                if (*p == ']' || !(p = s_skip_value(p, 0)))
                    return NULL;
                p = s_ws(p);
                if (*p != ',')
                    return NULL;
                p = s_ws(p + 1);
            }
            if (*p == ']')
                return NULL;
        } else {
            return NULL;
        }
        path += plen + (dot ? 1 : 0);
    }
    return p;
}

bool json_number(const char *json, const char *path, double *out)
{
    const char *p = json ? s_lookup(json, path) : NULL;
    if (!p)
        return false;
    if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        *out = *p == 't';
        return true;
    }
    char *end;
    double v = strtod(p, &end);
    if (end == p)
        return false;
    *out = v;
    return true;
}

bool json_string(const char *json, const char *path, char *buf, size_t len)
{
    const char *p = json ? s_lookup(json, path) : NULL;
    if (!p || *p != '"' || !len)
        return false;
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < len)
            buf[n++] = *p;
    }
    buf[n] = 0;
    return *p == '"';
}

/* --- network namespaces ------------------------------------------------------------ */

int netns_ip(char *out, size_t cap, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *argv[HARNESS_MAX_ARGS + 2];
    size_t n = 0;
    argv[n++] = "ip";
    for (char *save, *w = strtok_r(line, " ", &save); w && n < HARNESS_MAX_ARGS;
         w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    argv[n] = NULL;
    char tmp[1024];
    return proc_run(argv, out ? out : tmp, out ? cap : sizeof tmp, 20);
}

bool netns_available(char *why, size_t len)
{
    if (geteuid() != 0) {
        snprintf(why, len, "not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)");
        return false;
    }
    char out[1024];
    char *argv[] = {"ip", "-V", NULL};
    if (proc_run(argv, out, sizeof out, 10) != 0) {
        snprintf(why, len, "no `ip` command (Debian package iproute2)");
        return false;
    }
    char ns[64];
    snprintf(ns, sizeof ns, "kzprobe%d", (int)getpid());
    if (netns_ip(out, sizeof out, "netns add %s", ns) != 0) {
        out[strcspn(out, "\n")] = 0;
        snprintf(why, len, "`ip netns add` fails here: %s", out);
        return false;
    }
    int rc = netns_ip(out, sizeof out, "link add kzp%da type veth peer name kzp%db netns %s",
                      (int)getpid() % 100000, (int)getpid() % 100000, ns);
    out[strcspn(out, "\n")] = 0;
    netns_ip(NULL, 0, "netns del %s", ns);
    if (rc != 0) {
        snprintf(why, len, "veth links cannot be made here: %s", out);
        return false;
    }
    return true;
}

/* --- one test's cluster -------------------------------------------------------------- */

/* A free loopback port (the test fails when there is none). */
static int s_free_port(void)
{
    int port = tcp_free_port();
    cr_assert_gt(port, 0, "no free TCP port on 127.0.0.1");
    return port;
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
    proc_kill_all();
    h->coord = 0;
    harness_rm_rf(h->dir);
}

void harness_cleanup(void)
{
    proc_kill_all();
}

pid_t harness_spawn(const char *name, const char *const *args, const char *logpath)
{
    char bin[512];
    harness_bin(bin, sizeof bin, name);
    cr_assert_eq(access(bin, X_OK), 0, "%s is not executable", bin);
    char *argv[HARNESS_MAX_ARGS + 1] = {bin};
    int n = 1;
    for (int i = 0; args && args[i]; i++) {
        cr_assert_lt(n, HARNESS_MAX_ARGS);
        argv[n++] = (char *)args[i];
    }
    /* The cluster programs authenticate by default; a test about something
     * else runs them without (harness.h). */
    if (s_plain_by_default(name, args)) {
        cr_assert_lt(n, HARNESS_MAX_ARGS);
        argv[n++] = "--curve=false";
    }
    argv[n] = NULL;
    proc p;
    int rc = proc_start(&p, name, NULL, logpath, argv);
    cr_assert_eq(rc, 0, "cannot start %s: %s", bin, strerror(rc));
    return p.pid;
}

bool harness_wait(pid_t pid, double timeout_s, int *status)
{
    double end = harness_now() + timeout_s;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            s_forget(pid);
            if (status)
                *status = st;
            return true;
        }
        if (harness_now() > end)
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

double harness_status_num(const harness *h, const char *section, const char *key)
{
    static char buf[1 << 16];
    if (harness_http(h->http_port, "/status", buf, sizeof buf) != 200)
        return NAN;
    return json_number_after(buf, section, key);
}

double harness_wait_status(const harness *h, const char *section, const char *key, double min,
                           double timeout_s)
{
    double end = harness_now() + timeout_s, v;
    for (;;) {
        v = harness_status_num(h, section, key);
        if (v >= min || harness_now() > end)
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
    /* No judge unless a test asks (--judge=auto or perfect): perfect play's
     * referee would search every rating game of every best in the background. */
    const char *args[40] = {a_dir, a_bind, a_pub, a_port, a_model, "--sync=false",
                            "--status_ms=20", "--heartbeat_ms=100", "--expiry_ms=2000",
                            "--judge="};
    int n = 10;
    for (int i = 0; extra && extra[i]; i++) {
        cr_assert_lt(n, 39);
        args[n++] = extra[i];
    }
    args[n] = NULL;
    h->coord = harness_coord_spawn(args, h->http_port, h->coord_log);
}

pid_t harness_coord_spawn(const char *const *args, int http_port, const char *logpath)
{
    return harness_coord_spawn_bin("kz-coordinator", args, http_port, logpath);
}

pid_t harness_coord_spawn_bin(const char *prog, const char *const *args, int http_port,
                              const char *logpath)
{
    pid_t pid = harness_spawn(prog, args, logpath);
    char buf[4096];
    for (int i = 0; i < 500; i++) {
        if (harness_http(http_port, "/healthz", buf, sizeof buf) == 200)
            return pid;
        int st;
        cr_assert_not(harness_wait(pid, 0, &st), "kz-coordinator exited early (see %s)",
                      logpath);
        harness_sleep(0.02);
    }
    cr_assert_fail("kz-coordinator did not come up (see %s)", logpath);
    return pid;
}

int harness_stop(pid_t pid, int sig, double timeout_s)
{
    int st;
    harness_signal(pid, sig);
    if (harness_wait(pid, timeout_s, &st))
        return harness_exit_code(st);
    harness_signal(pid, SIGKILL);
    harness_wait(pid, 10, &st);
    cr_assert_fail("pid %d did not stop within %.0f s of signal %d", (int)pid, timeout_s, sig);
    return -1;
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

client *harness_client(void *zctx, const char *endpoint, const char *sub_endpoint, const char *id,
                       const char *role, int timeout_ms)
{
    client_config cfg;
    client_config_default(&cfg);
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", endpoint);
    snprintf(cfg.sub_endpoint, sizeof cfg.sub_endpoint, "%s", sub_endpoint ? sub_endpoint : "");
    snprintf(cfg.client_id, sizeof cfg.client_id, "%s", id ? id : "");
    if (role)
        cfg.role = role;
    cfg.timeout_ms = timeout_ms;
    cfg.curve = false; /* as harness_spawn's coordinators */
    client *c = client_new(zctx, &cfg);
    cr_assert_not_null(c, "cannot make client %s", id);
    return c;
}

client *harness_client_keyed(void *zctx, const char *endpoint, const char *sub_endpoint,
                             const char *id, const char *role, int timeout_ms,
                             const char *keydir, const char *name)
{
    client_config cfg;
    client_config_default(&cfg);
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", endpoint);
    snprintf(cfg.sub_endpoint, sizeof cfg.sub_endpoint, "%s", sub_endpoint ? sub_endpoint : "");
    snprintf(cfg.client_id, sizeof cfg.client_id, "%s", id ? id : "");
    if (role)
        cfg.role = role;
    cfg.timeout_ms = timeout_ms;
    snprintf(cfg.curve_server_key, sizeof cfg.curve_server_key, "%s/coordinator.pub", keydir);
    snprintf(cfg.curve_secret_key, sizeof cfg.curve_secret_key, "%s/%s.key", keydir, name);
    client *c = client_new(zctx, &cfg);
    cr_assert_not_null(c, "cannot make client %s with key %s/%s", id, keydir, name);
    return c;
}

void harness_keygen(const char *dir, const char *name)
{
    char err[600];
    mkdir(dir, 0700);
    int rc = curve_keygen(dir, name, NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "keygen %s: %s", name, err);
}

void harness_allow_key(const char *allow, const char *dir, const char *name, const char *role)
{
    char path[1024], key[CURVE_KEY_TEXT], err[600];
    snprintf(path, sizeof path, "%s/%s.pub", dir, name);
    cr_assert_eq(curve_read_public(path, key, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(allow, "a");
    cr_assert_not_null(f, "%s: %s", allow, strerror(errno));
    fprintf(f, "%s %s %s\n", name, role, key);
    fclose(f);
}

void harness_client_drain(client *c)
{
    double end = harness_now() + 10;
    while (client_pending(c) && harness_now() < end)
        client_poll(c, 10);
    cr_assert_eq(client_pending(c), 0, "games still unacknowledged");
}

void harness_submit_random_games(const harness *h, int n, uint64_t seed)
{
    void *zctx = zmq_ctx_new();
    client *c = harness_client(zctx, h->endpoint, NULL, "harness-games", "tool", 1000);
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
    harness_client_drain(c);
    client_stats st;
    client_get_stats(c, &st);
    cr_assert_eq(st.rejected, 0, "random games rejected");
    client_destroy(&c);
    zmq_ctx_term(zctx);
}

/* --- fixtures of in-process tests ------------------------------------------------ */

static int s_counting_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    harness_counter *c = ctx;
    c->calls++;
    c->positions += B;
    return c->inner.run(c->inner.ctx, planes, B, logits, values);
}

evaluator harness_counting(harness_counter *c, evaluator inner)
{
    *c = (harness_counter){.inner = inner};
    return (evaluator){.run = s_counting_run, .ctx = c, .max_batch = inner.max_batch};
}

struct model_arch harness_arch(const char *game, int C, int H, int W, int A, int blocks, int F,
                               int Vh)
{
    model_arch a;
    model_arch_default(&a, game_default());
    snprintf(a.game, sizeof a.game, "%s", game);
    a.in_planes = C;
    a.height = H;
    a.width = W;
    a.actions = A;
    a.blocks = blocks;
    a.filters = F;
    if (Vh)
        a.value_hidden = Vh;
    return a;
}

bool harness_outside_ipv4(char *buf, size_t cap)
{
    struct ifaddrs *all;
    if (getifaddrs(&all) != 0)
        return false;
    bool found = false;
    for (struct ifaddrs *i = all; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct in_addr *a = &((const struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if ((ntohl(a->s_addr) >> 24) == 127)
            continue;
        found = inet_ntop(AF_INET, a, buf, (socklen_t)cap) != NULL;
    }
    freeifaddrs(all);
    return found;
}

/* The candidate of harness_submit_candidate(_at): the model's own step set
 * to `step` when set_step, and `step` the step the trainer reports. */
static uint32_t s_submit_candidate(const harness *h, bool set_step, uint64_t step)
{
    char err[256];
    model *m;
    cr_assert_eq(modelfile_load(h->model, game_default(), &m, err, sizeof err), 0, "%s", err);
    if (set_step)
        model_edit_meta(m)->step = step;
    model_edit_meta(m)->created_ms += 1000;
    uint8_t *blob;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
    model_destroy(&m);
    void *zctx = zmq_ctx_new();
    client_config cfg;
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", h->endpoint);
    cfg.role = "trainer";
    cfg.timeout_ms = 1000;
    client *c = client_new(zctx, &cfg);
    wire_candidate_ack ack;
    cr_assert_eq(client_submit_candidate(c, blob, len, 1, step, &ack), 0, "%s",
                 client_last_error(c));
    free(blob);
    client_destroy(&c);
    zmq_ctx_term(zctx);
    return ack.version;
}

uint32_t harness_submit_candidate(const harness *h) { return s_submit_candidate(h, false, 50); }

uint32_t harness_submit_candidate_at(const harness *h, uint64_t step)
{
    return s_submit_candidate(h, true, step);
}
