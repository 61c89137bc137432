/* harness: processes, HTTP, JSON and network namespaces for the
 * whole-program tests (see harness.h). */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- paths ------------------------------------------------------------------------- */

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

/* --- time -------------------------------------------------------------------------- */

double harness_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void harness_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
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

int proc_run(char *const argv[], char *out, size_t cap, double timeout_s)
{
    int pfd[2];
    if (cap)
        out[0] = 0;
    if (pipe2(pfd, O_CLOEXEC))
        return -1;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        s_child_setup(parent);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        execvp(argv[0], argv);
        dprintf(2, "harness: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(pfd[1]);
    size_t len = 0;
    double end = harness_now() + timeout_s;
    bool killed = false;
    for (;;) {
        double left = end - harness_now();
        if (left <= 0) {
            kill(-pid, SIGKILL);
            killed = true;
            break;
        }
        struct pollfd pf = {pfd[0], POLLIN, 0};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        char buf[4096];
        ssize_t got = read(pfd[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (cap > 1 && len < cap - 1) {
            size_t take = (size_t)got < cap - 1 - len ? (size_t)got : cap - 1 - len;
            memcpy(out + len, buf, take);
            len += take;
            out[len] = 0;
        }
    }
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    kill(-pid, SIGKILL); /* anything it left in its group */
    if (killed || WIFSIGNALED(st))
        return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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

int tcp_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int port = 0;
    if (!bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &al))
        port = ntohs(a.sin_port);
    close(fd);
    return port;
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
        if (p > 0 && p < 65535 && s_port_bindable(p + 1))
            return p;
    }
    return 0;
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

int http_get(const char *netns, const char *host, int port, const char *path, char **body)
{
    *body = NULL;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return EINVAL;
    int fd = s_socket_in(netns);
    if (fd < 0)
        return errno ? errno : EIO;
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        int e = errno;
        close(fd);
        return e;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return EIO;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return ENOMEM;
    }
    for (;;) {
        if (len + 4096 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    int code = 0;
    char *start = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/%*s %d", &code) != 1 || code != 200 || !start) {
        free(buf);
        return -1;
    }
    start += 4;
    memmove(buf, start, strlen(start) + 1);
    *body = buf;
    return 0;
}

/* --- JSON -------------------------------------------------------------------------- */

static const char *s_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

/* Past the string starting at p (on its quote); NULL if unterminated. */
static const char *s_skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p == '"' ? p + 1 : NULL;
}

/* Past the value starting at p; NULL when malformed. */
static const char *s_skip_value(const char *p, int depth)
{
    p = s_ws(p);
    if (depth > 64)
        return NULL;
    if (*p == '"')
        return s_skip_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = s_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (close == '}') {
                if (*p != '"' || !(p = s_skip_string(p)))
                    return NULL;
                p = s_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            if (!(p = s_skip_value(p, depth + 1)))
                return NULL;
            p = s_ws(p);
            if (*p == ',') {
                p = s_ws(p + 1);
                continue;
            }
            return *p == close ? p + 1 : NULL;
        }
    }
    if (!*p || *p == ',' || *p == '}' || *p == ']')
        return NULL;
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
        p++;
    return p;
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
