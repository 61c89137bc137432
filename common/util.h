/* util: logging, error codes, time, random numbers and small helpers shared
 * by every module. The bottom layer of common/: it depends on nothing else.
 *
 * Errors: functions that can fail return int, 0 for success, a positive errno,
 * a library's negative codes as they are (LMDB's), or the project's own codes
 * (KZ_E*, from -1000 down). err_str() names them all: a module wrapping a
 * library registers the library's range (err_register_range).
 *
 * Logging: log_debug/info/warn/error write one line to stderr (control
 * characters in the message, e.g. from a client id, are shown as '?'):
 *   2026-11-22T01:02:03.456Z INFO  kz-worker[1234] message
 * When stderr is the journal (systemd sets JOURNAL_STREAM to its device and
 * inode), each line starts with its syslog priority, "<7>" debug, "<6>"
 * info, "<4>" warn, "<3>" error, which journald takes as the entry's
 * priority (so `journalctl -p warning` finds the warnings) and strips.
 * The level threshold is set by log_set_level() or the KZ_LOG environment
 * variable (debug, info, warn, error). Thread-safe (one fprintf per line). */
#ifndef KZ_UTIL_H
#define KZ_UTIL_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Project error codes. */
enum {
    KZ_EINVAL   = -1000, /* bad input: malformed, out of range */
    KZ_EILLEGAL = -1001, /* an illegal game action */
    KZ_ECORRUPT = -1002, /* a file or message failed its checks */
    KZ_EVERSION = -1003, /* unknown format or protocol version */
    KZ_EMISMATCH= -1004, /* wrong game or architecture */
    KZ_ETIMEOUT = -1005, /* no answer in time */
    KZ_ENOMEM   = -1006, /* allocation failed */
    KZ_EIO      = -1007, /* read or write failed */
    KZ_EFULL    = -1008, /* a bounded queue or store is full */
    KZ_ENOTFOUND= -1009, /* no such item */
    KZ_EREJECTED= -1010, /* the peer refused the request */
    KZ_ENOTREG  = -1011, /* a FIFO or socket where a file was wanted */
    KZ_ECANCELED= -1012, /* given up on request (a stop) */
};

/* A static string for any error code (ours, errno, a registered range's). */
const char *err_str(int rc);

/* Names the codes lo..hi (a library's own, negative) with name(rc), for
 * err_str. The module that wraps the library calls it before its first call
 * into it (store: LMDB's, at program start). Up to 4 ranges; not thread-safe
 * (call it at start-up). */
void err_register_range(int lo, int hi, const char *(*name)(int rc));

/* The one-line message of a failing call: formats into err (at most errlen
 * bytes, NUL-terminated) when err is non-NULL and errlen > 0, and returns rc,
 * so that `return err_set(err, errlen, KZ_EINVAL, "x is %d", x);` reports and
 * fails in one step. err_vset takes a va_list. */
int err_set(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int err_vset(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Stop signals for a program's main loop: SIGTERM and SIGINT set *flag the
 * first time (without SA_RESTART, so that a blocking poll returns EINTR) and
 * end the process by that signal the second time; SIGPIPE is ignored. One
 * flag per process (a later call replaces it). */
void signal_catch_stop(volatile sig_atomic_t *flag);

enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };
/* Sets the name printed in every line (default "kz"), reads KZ_LOG, and
 * checks whether stderr is the journal (JOURNAL_STREAM). */
void log_init(const char *progname);
void log_set_level(int level);
int log_get_level(void);
void log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_write(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_write(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

/* An always-on invariant check: prints file, line and the condition, aborts. */
#define KZ_CHECK(cond) \
    ((cond) ? (void)0 : kz_check_failed(#cond, __FILE__, __LINE__))
_Noreturn void kz_check_failed(const char *cond, const char *file, int line);

/* The software's version, "0.1.0+g<commit>" (".dirty" appended for a build
 * of uncommitted changes; the commit is left out where the build had no
 * git). The same in every program of one build: --version, Hello, /status. */
const char *util_version(void);
/* When argv holds "--version": prints "PROG VERSION" on stdout and returns
 * true (the program then exits 0). */
bool util_version_asked(int argc, char **argv, const char *prog);

/* Monotonic time in seconds, and wall-clock time in milliseconds since the epoch. */
double time_now(void);
int64_t time_wall_ms(void);

/* A small fast PRNG (xoshiro256**), seeded by splitmix64. Not thread-safe:
 * one per thread or per game. */
typedef struct rng {
    uint64_t s[4]; /* generator state */
} rng_t;
void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
/* Uniform in [0, n); n > 0. */
uint32_t rng_below(rng_t *r, uint32_t n);
/* Uniform in [0, 1). */
double rng_uniform(rng_t *r);
/* Standard normal (Box-Muller). */
double rng_normal(rng_t *r);
/* Gamma(shape, 1) (Marsaglia-Tsang; shape > 0). */
double rng_gamma(rng_t *r, double shape);
/* splitmix64 step: a good 64-bit mixer for hashing and seeding. */
uint64_t mix64(uint64_t x);

/* Allocation that aborts with a message on failure, for start-up sizing
 * (never on hot paths). Caller owns the result. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
/* Frees each pointer named, in the order named (NULL ones are passed over,
 * as free() does): a destructor's buffers in one statement,
 * `free_all(b->x, b->y, b);`. Every argument is read before the first is
 * freed. free_each is the function under it: n pointers of p. */
#define free_all(...)                                                                       \
    free_each((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))
void free_each(void *const *p, size_t n);

/* Parses a whole decimal integer in [lo, hi]; 0 or KZ_EINVAL. */
int parse_long(const char *s, long lo, long hi, long *out);
/* Parses a whole floating-point number in [lo, hi]; 0 or KZ_EINVAL. */
int parse_double(const char *s, double lo, double hi, double *out);
/* Parses the name of one of a small set of values: the index of name among
 * names[0..n) (exact, case-sensitive) into *out. 0, or KZ_EINVAL (name NULL
 * or not among them). */
int name_parse(const char *name, const char *const *names, int n, int *out);

/* Opens path for reading without blocking on it: a FIFO or a socket (whose
 * open() would wait for a writer forever) is refused with KZ_ENOTREG; a
 * regular file, a directory or a device is opened (blocking reads).
 * 0 and *fd (caller closes), or errno / KZ_ENOTREG. */
int file_open_read(const char *path, int *fd);
/* Reads a whole file into a new buffer (caller frees). 0 or errno/KZ_EIO;
 * KZ_ENOTREG for a FIFO or socket (file_open_read). */
int file_read_all(const char *path, uint8_t **data, size_t *len);
/* The same, refusing with KZ_EFULL a file of more than max bytes: a regular
 * file by its size before reading it, a stream (a pipe, /dev/zero) once
 * more than max bytes have come. */
int file_read_max(const char *path, size_t max, uint8_t **data, size_t *len);
/* Reads a small secret file (a key, a token) as one line of text: a regular
 * file (a FIFO, a directory or a device is refused, without blocking on it),
 * none of whose permission bits in `forbidden` is set (077: group and
 * others; 007: others), at most cap - 1 bytes, trailing newlines and blanks
 * cut. 0 with the text in out (NUL-terminated; *len its length); otherwise
 * errno, EACCES (the message names the mode and the chmod that mends it) or
 * KZ_EINVAL (not a regular file), with a one-line message naming path and
 * `what` ("a secret key", "a token"); out is then zeroed. */
int file_read_secret(const char *path, unsigned forbidden, const char *what, char *out,
                     size_t cap, size_t *len, char *err, size_t errlen);
/* Writes a file atomically: temp file in the same directory, fsync, rename,
 * fsync of the directory. 0 or errno. */
int file_write_atomic(const char *path, const void *data, size_t len);
/* Removes the temp files file_write_atomic left beside path when its writer
 * died mid-write ("PATH.tmp.PID" whose PID no longer runs). Returns how many
 * were removed (errors are skipped: a leftover is only disk space). */
int file_remove_stale_tmp(const char *path);

/* Text from outside (a record's string, a client id, a flag's value) made
 * fit for a one-line message: copies at most n bytes of s (up to its NUL)
 * into buf, control characters shown as '?', "..." when cut to fit len.
 * Always NUL-terminated; returns buf. */
char *text_printable(char *buf, size_t len, const char *s, size_t n);
/* One line of text from fmt and ap into buf (size >= 3 bytes): cut to fit,
 * then '\n' and the NUL; with printable, control characters shown as '?'
 * (for text that may hold a request's bytes). Returns its length, the '\n'
 * counted: the body of a one-line answer. */
size_t text_line_vformat(char *buf, size_t size, bool printable, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* A 64-bit checksum of bytes (FNV-1a, then mixed); stable across platforms. */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);

/* Fixed-width integers in file formats and keys: little-endian (model files,
 * tables, record files) and big-endian (LMDB keys that must sort as numbers). */
static inline void le_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline uint16_t le_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline void le_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void le_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t le_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t le_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}
/* A float as its IEEE-754 bits, little-endian. */
static inline void le_put_f32(uint8_t *p, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    le_put32(p, u);
}
static inline float le_get_f32(const uint8_t *p)
{
    uint32_t u = le_get32(p);
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static inline void be_put32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}
static inline void be_put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}
static inline uint32_t be_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t be_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}
/* And in this machine's own order, unaligned: values that never leave its
 * disk (LMDB's page headers, the coordinator's meta values). */
static inline void host_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline uint16_t host_get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t host_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t host_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A growable string, for text built off the hot paths (HTTP answers, JSON).
 * Start from {0}; the owner frees s. Out of memory aborts (KZ_CHECK). */
typedef struct strbuf {
    char *s;    /* (cap) NUL-terminated; NULL before the first write */
    size_t len; /* chars used */
    size_t cap; /* allocated */
} strbuf;

/* Appends printf-formatted text. */
void strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends a JSON string literal of at most n bytes of s (stopping at a NUL):
 * quotes and backslashes escaped, everything but printable ASCII as \u00XX, so
 * text from the network or from records cannot break the document. */
void strbuf_json_str(strbuf *b, const char *s, size_t n);

#endif
