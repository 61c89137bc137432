/* harness: the one helper module of the tests that run real programs (the
 * binaries of KZ_BIN_DIR as separate processes, on loopback or inside
 * network namespaces made by the test) and read what they say.
 *
 *   harness_* paths, temp directories, files and logs; time.
 *   proc_*    start a program in the background (own process group, output
 *             appended to a log file, SIGKILLed by the kernel if the test
 *             process dies: PR_SET_PDEATHSIG), signal it, stop it (signal,
 *             bounded wait, then SIGKILL), or run one to completion with its
 *             output captured (proc_run, proc_capture; harness_kz for `kz`).
 *             Every started process is remembered so that proc_kill_all()
 *             (a test's .fini; harness_cleanup is the same) leaves no orphan.
 *   tcp_*, http_*  free ports; HTTP exchanges, raw or GET.
 *   json_*    well-formedness (strict RFC 8259), numbers and strings at a
 *             dotted path ("arena.last.promoted", "workers.list.0.id"), or the
 *             number of the first "key": after a landmark.
 *   netns_*   whether network namespaces can be made here, and `ip` commands.
 *   harness   one test's cluster: a directory, free ports, a tiny model file,
 *             a coordinator on its store, its /status, random valid games.
 *   CurveZMQ  the cluster programs authenticate by default (docs/security.md);
 *             harness_spawn and harness_run_bin run kz-coordinator,
 *             kz-worker and kz-trainer with --curve=false unless the test
 *             gives a --curve* flag, and
 *             harness_client makes plain clients: most tests are about
 *             something else. harness_keygen, harness_allow_key and
 *             harness_client_keyed make authenticated clusters (test_auth.c,
 *             test_e2e.c, test_deploy.c; make run's test runs with keys).
 *   harness_counter, harness_arch  fixtures of the in-process tests: an
 *             evaluator that counts what it is asked, a made-up architecture.
 *
 * Every wait has a condition and a deadline (never a bare sleep to "let
 * things happen"). Threads: the test's main thread only. Errors: the
 * functions of the first sections return 0 or an errno-style code (or false)
 * and never abort; the cluster functions and harness_kz fail the current
 * Criterion test on broken setup. */
#ifndef KZ_TESTS_HARNESS_H
#define KZ_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/client.h"
#include "nn/evaluator.h"

#define HARNESS_MAX_ARGS 64   /* arguments of one started program */
#define HARNESS_MAX_PROCS 32  /* processes remembered for proc_kill_all */

/* --- paths, files, time --------------------------------------------------------- */

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

/* The whole file as a NUL-terminated string, NULL when it cannot be read;
 * caller frees. */
char *harness_read_file(const char *path);
/* The same, "" when it cannot be read (a log not written yet); caller frees. */
char *harness_read(const char *path);
/* Writes text to path (created or truncated); 0 or errno. */
int harness_write(const char *path, const char *text);
/* Occurrences of needle in the file. */
int harness_count(const char *path, const char *needle);
/* Waits until the file contains needle; false after timeout_s. */
bool harness_wait_log(const char *path, const char *needle, double timeout_s);
/* The number right after the LAST occurrence of `prefix` in the file (NAN when
 * absent), e.g. harness_log_num(log, "acked ") in "acked 12,". */
double harness_log_num(const char *path, const char *prefix);

/* Monotonic seconds. */
double harness_now(void);
/* Sleeps s seconds, or ms milliseconds (the poll interval of wait loops). */
void harness_sleep(double s);
void harness_sleep_ms(int ms);

/* --- processes ---------------------------------------------------------------- */

/* A program started in the background. */
typedef struct proc {
    pid_t pid;          /* its pid (also its process group), 0 = not running */
    char name[64];      /* for messages */
    char log[512];      /* file its stdout and stderr are appended to */
    bool exited;        /* reaped */
    int status;         /* waitpid status once exited */
} proc;

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
/* The last `max` bytes of a log file (for failure messages), in a static buffer. */
const char *proc_log_tail(const proc *p, size_t max);

/* How proc_capture runs a program. */
typedef struct proc_opts {
    const char *dir;   /* working directory (NULL: ours) */
    const char *input; /* its stdin (NULL: /dev/null) */
    bool merge;        /* stderr into out (err stays "") */
    bool quiet_log;    /* KZ_LOG unset: the programs' default log threshold */
    double timeout_s;  /* killed after this (0: 120 s) */
} proc_opts;

/* What a captured run printed. */
typedef struct proc_output {
    int status; /* exit status, 128 + signal when killed, -1 when it could not run */
    char *out;  /* stdout (and stderr with merge), NUL-terminated; owned */
    char *err;  /* stderr, NUL-terminated; owned */
} proc_output;

/* Runs argv (argv[0] looked up in PATH, or a path) to completion, in its own
 * process group, dying with the test, with its output captured in *o (free
 * with proc_output_free). o NULL: the defaults. Returns o->status. */
int proc_capture(char *const argv[], const proc_opts *opts, proc_output *o);
void proc_output_free(proc_output *o);
/* proc_capture with stdout and stderr together in out (NUL-terminated,
 * truncated to cap), stdin /dev/null. Returns the exit status, 128+signal
 * when killed after timeout_s, or -1 when it could not run. */
int proc_run(char *const argv[], char *out, size_t cap, double timeout_s);
/* Runs `kz ARGS` (KZ_BIN_DIR's kz; ARGS split and unquoted by /bin/sh) with
 * opts (NULL: the defaults), output in *o. Fails the test when kz cannot run
 * or is killed. Returns its exit status. */
int harness_kz(const char *args, const proc_opts *opts, proc_output *o);
/* Runs a shell command line (/bin/sh -c cmd, 120 s at most) with its stdout
 * copied into out (NUL-terminated, truncated to cap); the exit status. */
int harness_sh(const char *cmd, char *out, size_t cap);
/* harness_kz with input on stdin (NULL: none) and its stdout (with merge,
 * stderr too) copied into out (NUL-terminated, truncated to cap). */
int harness_kz_out(const char *args, const char *input, bool merge, char *out, size_t cap);
/* Runs KZ_BIN_DIR/prog with the NULL-terminated arguments args (no shell;
 * may be NULL), like harness_kz. */
int harness_run_bin(const char *prog, const char *const *args, const proc_opts *opts,
                    proc_output *o);

/* A temp directory to run kz commands in, and the last command's output. */
typedef struct harness_cli {
    char *dir; /* the commands' working directory (removed by harness_cli_fini) */
    char *out; /* the last command's stdout, NUL-terminated (owned) */
    char *err; /* its stderr (owned) */
} harness_cli;

/* Makes the directory (named after tag); fails the test when it cannot. */
void harness_cli_init(harness_cli *c, const char *tag);
/* Runs `kz ARGS` in c->dir (harness_kz), keeps its output in c; its exit status. */
int harness_cli_kz(harness_cli *c, const char *args);
/* Frees the output and removes the directory. */
void harness_cli_fini(harness_cli *c);

/* True when pid no longer runs (gone, or a zombie nobody has reaped yet). */
bool harness_pid_gone(int pid);

/* --- TCP and HTTP --------------------------------------------------------------- */

/* A TCP port free on 127.0.0.1 and reserved for this process until it exits
 * (0 on failure). It is drawn from 20000..31999, below the kernel's ephemeral
 * range (32768..60999), so that no outgoing connection is given it meanwhile,
 * and reserved by an flock on /tmp/kz-ports-UID/PORT, so that no other test
 * process (Criterion runs tests in parallel) draws it: a port handed out by
 * the kernel and closed again could be taken by anyone before the program
 * under test bound it, and a test then talked to another test's coordinator. */
int tcp_free_port(void);
/* A port P such that P and P + 1 are both free and reserved (0 on failure). */
int tcp_free_port_pair(void);

/* Sends len bytes of req to host:port (from inside network namespace netns
 * when non-NULL), closes our sending side, and reads the answer until the
 * server closes the connection or timeout_s has passed. NULL when the
 * connection fails; else a malloc'd NUL-terminated buffer of *got bytes
 * (caller frees). */
char *http_exchange(const char *netns, const char *host, int port, const void *req, size_t len,
                    double timeout_s, size_t *got);
/* The status code of an HTTP answer, 0 when there is none. */
int http_code(const char *answer);
/* GET http://host:port/path; on 200, *body is malloc'd (caller frees). With
 * netns non-NULL the connection is made inside that namespace. 0, errno, or
 * -1 for a non-200 answer. */
int http_get(const char *netns, const char *host, int port, const char *path, char **body);
/* GET path on 127.0.0.1:port: the HTTP code and the body in buf (-1 if down). */
int harness_http(int port, const char *path, char *buf, size_t cap);

/* --- JSON ------------------------------------------------------------------------ */

/* True when doc is one well-formed JSON value (RFC 8259, no extensions). */
bool json_valid(const char *doc);
/* The value at a dotted path; array elements by index; true/false read as 1/0. */
bool json_number(const char *json, const char *path, double *out);
bool json_string(const char *json, const char *path, char *buf, size_t len);
/* The number after the first "key": that follows the first occurrence of
 * `after` (NULL: from the start), e.g. (status, "\"ingest\"", "malformed");
 * NAN when either is missing. */
double json_number_after(const char *json, const char *after, const char *key);

/* --- Prometheus text ---------------------------------------------------------------- */

/* The value of the sample NAME (a line "NAME VALUE", no labels) in a /metrics
 * text into *v (NaN for "NaN"); false when there is no such line. */
bool metrics_value(const char *text, const char *name, double *v);

/* --- network namespaces ----------------------------------------------------------- */

/* True when this process may make network namespaces and veth links (root,
 * `ip` present, a probe namespace made and removed); else false with the
 * reason in why. */
bool netns_available(char *why, size_t len);
/* Runs `ip` with the words of the formatted command line (split on spaces).
 * Returns its exit status; its output goes to out when non-NULL. */
int netns_ip(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- one test's cluster ------------------------------------------------------------ */

/* One test's cluster: directory, endpoints, coordinator. */
typedef struct harness {
    char dir[64];          /* temp directory (removed by harness_fini) */
    char endpoint[64];     /* coordinator ROUTER, tcp://127.0.0.1:PORT */
    char pub[64];          /* coordinator PUB */
    int http_port;         /* coordinator status port */
    char model[128];       /* tiny model file (1 block x 8 filters) */
    pid_t coord;           /* coordinator pid, 0 when not running */
    char coord_log[128];   /* its log (appended across restarts) */
} harness;

/* Makes the directory, picks ports, writes the tiny model (seed 1). */
void harness_init(harness *h, const char *tag);
/* Kills every process still running and removes the directory. */
void harness_fini(harness *h);
/* Criterion .fini hook: proc_kill_all. */
void harness_cleanup(void);

/* Starts kz-coordinator on h's store and ports (the tiny model as version 1,
 * --sync=false, fast status) plus extra flags (NULL-terminated, may be
 * NULL); returns when /healthz answers. */
void harness_coord_start(harness *h, const char *const *extra);
/* SIGKILL (or SIGTERM and wait) the coordinator. */
void harness_coord_kill(harness *h, int sig);
/* Starts kz-coordinator with exactly these flags (NULL-terminated), output
 * appended to logpath, and returns its pid once /healthz answers on
 * http_port; fails the test if it exits or does not come up (10 s). */
pid_t harness_coord_spawn(const char *const *args, int http_port, const char *logpath);
/* The same with another build of the coordinator (a path under KZ_BIN_DIR:
 * "toy/kz-coordinator", the copy with the tests' toy game). */
pid_t harness_coord_spawn_bin(const char *prog, const char *const *args, int http_port,
                              const char *logpath);

/* This machine's first IPv4 address that is not loopback, as text into buf
 * (a client from "another machine" when a server listens on 0.0.0.0);
 * false when it has none. */
bool harness_outside_ipv4(char *buf, size_t cap);

/* Spawns KZ_BIN_DIR/name with argv (NULL-terminated, without argv[0]),
 * stdout and stderr appended to logpath (proc_start). kz-coordinator,
 * kz-worker and kz-trainer get --curve=false appended unless an argument
 * starts with --curve (see the top). Returns the pid. */
pid_t harness_spawn(const char *name, const char *const *args, const char *logpath);
/* Waits up to timeout_s for pid; true with *status (waitpid's) if it ended. */
bool harness_wait(pid_t pid, double timeout_s, int *status);
/* Exit code of a waitpid status, or 128 + signal. */
int harness_exit_code(int status);
/* Sends sig to pid (no-op for pid <= 0). */
void harness_signal(pid_t pid, int sig);
/* Sends sig to pid and waits up to timeout_s for its exit: the exit code
 * (harness_exit_code). Fails the test (after a SIGKILL) when it does not end. */
int harness_stop(pid_t pid, int sig, double timeout_s);

/* The number after "key": in /status, after the first `section` (NULL: from
 * the start): json_number_after; NAN when the status or the key is missing. */
double harness_status_num(const harness *h, const char *section, const char *key);
/* Waits until that number is >= min; returns the last value seen. */
double harness_wait_status(const harness *h, const char *section, const char *key, double min,
                           double timeout_s);

/* A client of the coordinator at endpoint (sub_endpoint NULL: no
 * announcements) named id, role "worker" when NULL, timeout_ms per call;
 * fails the test when it cannot be made. */
client *harness_client(void *zctx, const char *endpoint, const char *sub_endpoint, const char *id,
                       const char *role, int timeout_ms);
/* Polls c until no submitted game is pending (10 s at most); fails the test
 * otherwise. */
void harness_client_drain(client *c);

/* Makes the key pair dir/NAME.key, dir/NAME.pub (curve_keygen); fails the
 * test when it cannot. */
void harness_keygen(const char *dir, const char *name);
/* Appends the line "NAME ROLE KEY" of dir/NAME.pub to the allow-list file
 * `allow` (created when absent). */
void harness_allow_key(const char *allow, const char *dir, const char *name, const char *role);
/* harness_client over CurveZMQ: the coordinator's public key
 * keydir/coordinator.pub, this client's secret key keydir/NAME.key. */
client *harness_client_keyed(void *zctx, const char *endpoint, const char *sub_endpoint,
                             const char *id, const char *role, int timeout_ms,
                             const char *keydir, const char *name);

/* Submits n valid random-play self-play records (model 1) through the
 * client library and waits for their acks. Seeds seed .. seed+n-1. */
void harness_submit_random_games(const harness *h, int n, uint64_t seed);
/* Submits, as a trainer would, a candidate with h's tiny model's weights and
 * a later creation time (a new version as strong as the best); asserts it
 * is taken and returns its version. */
uint32_t harness_submit_candidate(const harness *h);
/* The same with the model's step (and the step reported with it) `step`: a
 * network as far trained as a trainer of this cluster would have made it. */
uint32_t harness_submit_candidate_at(const harness *h, uint64_t step);

/* --- fixtures of in-process tests ------------------------------------------------ */

/* Counts the calls and positions an evaluator is asked about. */
typedef struct harness_counter {
    evaluator inner; /* the real evaluator */
    long calls;      /* calls of run */
    long positions;  /* positions evaluated */
} harness_counter;

/* An evaluator that passes every batch to inner and counts it in *c (reset
 * here); same max_batch as inner. c must outlive the evaluator. */
evaluator harness_counting(harness_counter *c, evaluator inner);

/* An architecture for a made-up game of the given shape (no game_def
 * needed): model_arch_default's, with game name, C input planes, H x W
 * board, A actions, the tower's blocks and filters, and value_hidden Vh
 * (0: the default's). */
struct model_arch; /* model.h (not included here: its `model` type would shadow the tests'
                   * variables of that name) */
struct model_arch harness_arch(const char *game, int C, int H, int W, int A, int blocks, int F,
                               int Vh);

#endif
