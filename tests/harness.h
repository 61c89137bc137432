/* harness: helpers of the whole-program tests (test_e2e.c, test_deploy.c),
 * which run the real binaries (found through KZ_BIN_DIR) as separate
 * processes, on loopback or inside network namespaces made by the test.
 *
 *   proc_*    start a program in the background (own process group, output
 *             appended to a log file, SIGKILLed by the kernel if the test
 *             process dies: PR_SET_PDEATHSIG), signal it, stop it (signal,
 *             bounded wait, then SIGKILL), or run one to completion with its
 *             output captured. Every started process is remembered so that
 *             proc_kill_all() (a test's .fini) leaves no orphan behind.
 *   http_get  GET a URL's body, optionally from inside a network namespace.
 *   json_*    numbers and strings at a dotted path ("arena.last.promoted",
 *             "workers.list.0.id") of a JSON document.
 *   netns_*   whether network namespaces can be made here, and `ip` commands.
 *   wait_*    polling with a deadline (never a bare sleep to "let things
 *             happen": every wait has a condition and a generous limit).
 *
 * Threads: the test's main thread only. Errors: functions return 0 or an
 * errno-style code (or false) and never abort; the tests assert. */
#ifndef KZ_TESTS_HARNESS_H
#define KZ_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HARNESS_MAX_ARGS 64   /* arguments of one started program */
#define HARNESS_MAX_PROCS 32  /* processes remembered for proc_kill_all */

/* A program started in the background. */
typedef struct proc {
    pid_t pid;          /* its pid (also its process group), 0 = not running */
    char name[64];      /* for messages */
    char log[512];      /* file its stdout and stderr are appended to */
    bool exited;        /* reaped */
    int status;         /* waitpid status once exited */
} proc;

/* The directory of the built programs (KZ_BIN_DIR, else "build"). Borrowed. */
const char *harness_bin_dir(void);
/* The source tree (the parent of KZ_BIN_DIR when it holds deploy/, else the
 * current directory). Borrowed. */
const char *harness_src_dir(void);
/* Joins a program name to harness_bin_dir() into buf. */
const char *harness_bin(char *buf, size_t len, const char *prog);
/* A fresh directory under $TMPDIR (or /tmp) named after tag; caller frees
 * the string and removes the tree with harness_rm_rf. NULL on failure. */
char *harness_tmpdir(const char *tag);
/* rm -rf path (NULL-safe). */
void harness_rm_rf(const char *path);

/* Starts argv (argv[0] a path, NULL-terminated) with stdout/stderr appended
 * to `log`, in its own process group, dying with the test process. With
 * netns non-NULL it runs inside that namespace (`ip netns exec`). 0 or errno. */
int proc_start(proc *p, const char *name, const char *netns, const char *log,
               char *const argv[]);
/* True while it runs (reaps it when it has exited). */
bool proc_alive(proc *p);
/* Sends sig to its process group. 0, or ESRCH when not running. */
int proc_signal(proc *p, int sig);
/* Sends sig, waits up to timeout_s for the exit, then SIGKILLs the group.
 * Returns the waitpid status (0 when it was not running). */
int proc_stop(proc *p, int sig, double timeout_s);
/* Waits up to timeout_s for it to exit by itself; true when it did. */
bool proc_wait_exit(proc *p, double timeout_s);
/* SIGKILLs every process started and not yet reaped, and reaps it. */
void proc_kill_all(void);
/* Runs argv to completion (killed after timeout_s) with stdout+stderr in out
 * (NUL-terminated, truncated to cap). Returns the exit status, 128+signal when
 * killed, or -1 when it could not run. */
int proc_run(char *const argv[], char *out, size_t cap, double timeout_s);
/* The last `max` bytes of a log file (for failure messages), in a static buffer. */
const char *proc_log_tail(const proc *p, size_t max);

/* A TCP port that was free on 127.0.0.1 a moment ago (0 on failure). */
int tcp_free_port(void);
/* A port P such that P and P + 1 were both free a moment ago (0 on failure). */
int tcp_free_port_pair(void);

/* True when pid no longer runs (gone, or a zombie nobody has reaped yet). */
bool harness_pid_gone(int pid);

/* GET http://host:port/path; on 200, *body is malloc'd (caller frees). With
 * netns non-NULL the connection is made inside that namespace. 0, errno, or
 * -1 for a non-200 answer. */
int http_get(const char *netns, const char *host, int port, const char *path, char **body);

/* The value at a dotted path; array elements by index. */
bool json_number(const char *json, const char *path, double *out);
bool json_string(const char *json, const char *path, char *buf, size_t len);

/* True when this process may make network namespaces and veth links (root,
 * `ip` present, a probe namespace made and removed); else false with the
 * reason in why. */
bool netns_available(char *why, size_t len);
/* Runs `ip` with the words of the formatted command line (split on spaces).
 * Returns its exit status; its output goes to out when non-NULL. */
int netns_ip(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Monotonic seconds. */
double harness_now(void);
/* Sleeps ms milliseconds (poll interval of the wait loops). */
void harness_sleep_ms(int ms);

#endif
