/* util: logging, error codes, time, random numbers, files. See util.h. */
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <libgen.h>
#include <signal.h>
#include <limits.h>

static const char *s_progname = "kz";
static int s_level = LOG_INFO;
static bool s_journal; /* stderr is the journal: lines carry "<N>" priorities */

/* Set by the Makefile for util.o alone (make tracks it with a stamp file). */
#ifndef KZ_VERSION
#define KZ_VERSION "0.1.0"
#endif

const char *util_version(void)
{
    return KZ_VERSION;
}

bool util_version_asked(int argc, char **argv, const char *prog)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) {
            printf("%s %s\n", prog, util_version());
            return true;
        }
    return false;
}

/* Ranges of a library's error codes and who names them (err_register_range). */
static struct {
    int lo, hi;                 /* the codes */
    const char *(*name)(int);   /* their names */
} s_ranges[4];
static int s_n_ranges;          /* entries of s_ranges in use */

void err_register_range(int lo, int hi, const char *(*name)(int rc))
{
    for (int i = 0; i < s_n_ranges; i++)
        if (s_ranges[i].lo == lo && s_ranges[i].hi == hi)
            return;
    KZ_CHECK(s_n_ranges < 4 && lo <= hi && name);
    s_ranges[s_n_ranges].lo = lo;
    s_ranges[s_n_ranges].hi = hi;
    s_ranges[s_n_ranges].name = name;
    s_n_ranges++;
}

const char *err_str(int rc)
{
    switch (rc) {
    case 0: return "success";
    case KZ_EINVAL: return "invalid input";
    case KZ_EILLEGAL: return "illegal action";
    case KZ_ECORRUPT: return "corrupted data";
    case KZ_EVERSION: return "unsupported version";
    case KZ_EMISMATCH: return "wrong game or architecture";
    case KZ_ETIMEOUT: return "timed out";
    case KZ_ENOMEM: return "out of memory";
    case KZ_EIO: return "input/output error";
    case KZ_EFULL: return "full";
    case KZ_ENOTFOUND: return "not found";
    case KZ_EREJECTED: return "rejected by peer";
    case KZ_ENOTREG: return "not a regular file (a FIFO or socket)";
    case KZ_ECANCELED: return "cancelled";
    default: break;
    }
    for (int i = 0; i < s_n_ranges; i++)
        if (rc >= s_ranges[i].lo && rc <= s_ranges[i].hi)
            return s_ranges[i].name(rc);
    if (rc > 0)
        return strerror(rc);
    return "unknown error";
}

int err_vset(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
{
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    return rc;
}

int err_set(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, errlen, rc, fmt, ap);
    va_end(ap);
    return rc;
}

static volatile sig_atomic_t *s_stop_flag; /* signal_catch_stop's */

/* First signal: ask the program to stop. Second: die by the signal at once. */
static void s_on_stop_signal(int sig)
{
    if (*s_stop_flag) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    *s_stop_flag = 1;
}

void signal_catch_stop(volatile sig_atomic_t *flag)
{
    s_stop_flag = flag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_stop_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void log_init(const char *progname)
{
    if (progname)
        s_progname = progname;
    const char *e = getenv("KZ_LOG");
    if (e) {
        if (!strcasecmp(e, "debug")) s_level = LOG_DEBUG;
        else if (!strcasecmp(e, "info")) s_level = LOG_INFO;
        else if (!strcasecmp(e, "warn")) s_level = LOG_WARN;
        else if (!strcasecmp(e, "error")) s_level = LOG_ERROR;
    }
    /* JOURNAL_STREAM is "DEVICE:INODE" of the journal's stream; a program
     * whose stderr was redirected elsewhere inherits it but no longer
     * matches (systemd.exec(5)). */
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat sb;
    s_journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &sb) == 0 &&
                (unsigned long long)sb.st_dev == dev && (unsigned long long)sb.st_ino == ino;
}

void log_set_level(int level) { s_level = level; }
int log_get_level(void) { return s_level; }

void log_write(int level, const char *fmt, ...)
{
    if (level < s_level)
        return;
    static const char *names[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One entry, one line: text from the network cannot forge entries. */
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int lv = level < 0 ? 0 : level > 3 ? 3 : level;
    static const char *const prio[] = {"<7>", "<6>", "<4>", "<3>"}; /* sd-daemon(3) */
    fprintf(stderr, "%s%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s[%d] %s\n",
            s_journal ? prio[lv] : "", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
            tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[lv], s_progname, (int)getpid(), msg);
}

void kz_check_failed(const char *cond, const char *file, int line)
{
    fprintf(stderr, "%s: internal check failed at %s:%d: %s\n", s_progname, file, line, cond);
    abort();
}

double time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int64_t time_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void rng_seed(rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        seed += 0x9e3779b97f4a7c15ULL;
        r->s[i] = mix64(seed);
    }
}

static inline uint64_t s_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = s_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s_rotl(s[3], 45);
    return result;
}

uint32_t rng_below(rng_t *r, uint32_t n)
{
    /* Lemire's multiply-shift; the tiny bias for n << 2^32 is irrelevant here. */
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

double rng_uniform(rng_t *r) { return (rng_next(r) >> 11) * 0x1.0p-53; }

double rng_normal(rng_t *r)
{
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rng_gamma(rng_t *r, double shape)
{
    if (shape < 1.0) {
        double u = rng_uniform(r);
        return rng_gamma(r, shape + 1.0) * pow(u < 1e-300 ? 1e-300 : u, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = rng_normal(r), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = rng_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x)
            return d * v;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v;
    }
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", s_progname, n);
        abort();
    }
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu x %zu bytes)\n", s_progname, n, size);
        abort();
    }
    return p;
}

void free_each(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
}

int parse_long(const char *s, long lo, long hi, long *out)
{
    if (!s || !*s)
        return KZ_EINVAL;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return KZ_EINVAL;
    *out = v;
    return 0;
}

int parse_double(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s)
        return KZ_EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= lo && v <= hi))
        return KZ_EINVAL;
    *out = v;
    return 0;
}

int file_read_all(const char *path, uint8_t **data, size_t *len)
{
    return file_read_max(path, SIZE_MAX, data, len);
}

int name_parse(const char *name, const char *const *names, int n, int *out)
{
    for (int i = 0; name && i < n; i++)
        if (names[i] && !strcmp(name, names[i])) {
            *out = i;
            return 0;
        }
    return KZ_EINVAL;
}

int file_open_read(const char *path, int *fd)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0)
        return errno;
    struct stat sb;
    if (fstat(*fd, &sb) || S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode)) {
        int e = S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) ? KZ_ENOTREG : errno;
        close(*fd);
        *fd = -1;
        return e;
    }
    int fl = fcntl(*fd, F_GETFL);
    if (fl >= 0)
        fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK);
    return 0;
}

int file_read_max(const char *path, size_t max, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd;
    int orc = file_open_read(path, &fd);
    if (orc)
        return orc;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return e;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > max) {
        fclose(f);
        return KZ_EFULL; /* said before a byte is read: a huge (sparse) file */
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return ENOMEM;
    }
    for (;;) {
        if (n > max) { /* a stream longer than allowed (/dev/zero) */
            free(buf);
            fclose(f);
            return KZ_EFULL;
        }
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno ? errno : KZ_EIO; /* EISDIR names a directory exactly */
                free(buf);
                fclose(f);
                return e;
            }
            break;
        }
    }
    fclose(f);
    *data = buf;
    *len = n;
    return 0;
}

int file_read_secret(const char *path, unsigned forbidden, const char *what, char *out,
                     size_t cap, size_t *len, char *err, size_t errlen)
{
    memset(out, 0, cap);
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return err_set(err, errlen, errno, "%.200s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return err_set(err, errlen, KZ_EINVAL, "%.200s: not a regular file", path);
    }
    if (sb.st_mode & forbidden) {
        close(fd);
        bool group = forbidden & 070;
        return err_set(err, errlen, EACCES, "%.200s: %s readable by %s (mode %04o): %s it", path,
                       what, group ? "others" : "every user", (unsigned)(sb.st_mode & 07777),
                       group ? "chmod 600" : "chmod o-rwx");
    }
    ssize_t n = read(fd, out, cap - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        memset(out, 0, cap);
        return err_set(err, errlen, e, "%.200s: %s", path, strerror(e));
    }
    size_t k = (size_t)n;
    out[k] = 0;
    while (k && (out[k - 1] == '\n' || out[k - 1] == '\r' || out[k - 1] == ' ' ||
                 out[k - 1] == '\t'))
        out[--k] = 0;
    *len = k;
    return 0;
}

int file_remove_stale_tmp(const char *path)
{
    char dcopy[PATH_MAX], bcopy[PATH_MAX];
    if (snprintf(dcopy, sizeof dcopy, "%s", path) >= (int)sizeof dcopy)
        return 0;
    snprintf(bcopy, sizeof bcopy, "%s", path);
    const char *dir = dirname(dcopy), *base = basename(bcopy);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t bl = strlen(base);
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        if (strncmp(n, base, bl) || strncmp(n + bl, ".tmp.", 5))
            continue;
        char *end;
        long pid = strtol(n + bl + 5, &end, 10);
        if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue; /* not ours, or its writer still runs */
        char full[PATH_MAX];
        if (snprintf(full, sizeof full, "%s/%s", dir, n) < (int)sizeof full && !unlink(full))
            removed++;
    }
    closedir(d);
    return removed;
}

int file_write_atomic(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    const uint8_t *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return e;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return e;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return e;
    }
    char dcopy[PATH_MAX];
    snprintf(dcopy, sizeof dcopy, "%s", path);
    int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

size_t text_line_vformat(char *buf, size_t size, bool printable, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, size - 1, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > size - 2)
        n = (int)size - 2;
    for (int i = 0; printable && i < n; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
            buf[i] = '?';
    buf[n++] = '\n';
    buf[n] = 0;
    return (size_t)n;
}

char *text_printable(char *buf, size_t len, const char *s, size_t n)
{
    if (!len)
        return buf;
    size_t o = 0, i = 0;
    for (; s && i < n && s[i] && o + 1 < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[o++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    if (s && i < n && s[i] && len >= 4) { /* cut short: say so */
        memcpy(buf + len - 4, "...", 3);
        o = len - 1;
    }
    buf[o] = 0;
    return buf;
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
    /* FNV-1a over bytes, finished with a strong mixer; fast enough for
     * checksumming a few MB of weights, and stable across platforms. */
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return mix64(h ^ len);
}

void strbuf_printf(strbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        KZ_CHECK(s != NULL);
        b->s = s;
        b->cap = cap;
    }
}

void strbuf_json_str(strbuf *b, const char *s, size_t n)
{
    strbuf_printf(b, "\"");
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            strbuf_printf(b, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            strbuf_printf(b, "\\u%04x", ch);
        else
            strbuf_printf(b, "%c", ch);
    }
    strbuf_printf(b, "\"");
}
