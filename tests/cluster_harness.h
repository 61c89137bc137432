/* cluster_harness: running the real cluster binaries (KZ_BIN_DIR) in tests:
 * a temp directory, free loopback ports, a tiny model file, processes with
 * their output in log files (killed with the test, whatever happens), a
 * coordinator on a given store, and readers of logs and of /status.
 *
 * Used by tests/test_worker.c and tests/test_trainer.c; usable by any test of
 * the cluster. Functions fail the current Criterion test on broken setup.
 * Every process spawned here gets PR_SET_PDEATHSIG (SIGKILL) and is listed so
 * that harness_cleanup (the suites' .fini) kills what is left. */
#ifndef KZ_TESTS_CLUSTER_HARNESS_H
#define KZ_TESTS_CLUSTER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
/* Criterion .fini hook: SIGKILL to every process spawned and not reaped. */
void harness_cleanup(void);

/* Starts kz-coordinator on h's store and ports (the tiny model as version 1,
 * --sync=false, fast status) plus extra flags (NULL-terminated, may be
 * NULL); returns when /healthz answers. */
void harness_coord_start(harness *h, const char *const *extra);
/* SIGKILL (or SIGTERM and wait) the coordinator. */
void harness_coord_kill(harness *h, int sig);

/* Spawns KZ_BIN_DIR/name with argv (NULL-terminated, without argv[0]),
 * stdout and stderr appended to logpath. Returns the pid. */
pid_t harness_spawn(const char *name, const char *const *args, const char *logpath);
/* Waits up to timeout_s for pid; true with *status (waitpid's) if it ended. */
bool harness_wait(pid_t pid, double timeout_s, int *status);
/* Exit code of a waitpid status, or 128 + signal. */
int harness_exit_code(int status);
/* Sends sig to pid (no-op for pid <= 0). */
void harness_signal(pid_t pid, int sig);

/* The whole file as a NUL-terminated string ("" when missing); caller frees. */
char *harness_read(const char *path);
/* Occurrences of needle in the file. */
int harness_count(const char *path, const char *needle);
/* Waits until the file contains needle; false after timeout_s. */
bool harness_wait_log(const char *path, const char *needle, double timeout_s);
/* The number right after the LAST occurrence of `prefix` in the file (NAN when
 * absent), e.g. harness_log_num(log, "acked ") in "acked 12,". */
double harness_log_num(const char *path, const char *prefix);

/* GET path on 127.0.0.1:port: the HTTP code and the body in buf (-1 if down). */
int harness_http(int port, const char *path, char *buf, size_t cap);
/* The number after "key": in /status, after the first `section` (NULL: from
 * the start); NAN when the status or the key is missing. */
double harness_status_num(const harness *h, const char *section, const char *key);
/* Waits until that number is >= min; returns the last value seen. */
double harness_wait_status(const harness *h, const char *section, const char *key, double min,
                           double timeout_s);

/* Submits n valid random-play self-play records (model 1) through the
 * client library and waits for their acks. Seeds seed .. seed+n-1. */
void harness_submit_random_games(const harness *h, int n, uint64_t seed);

/* Seconds to sleep. */
void harness_sleep(double s);

#endif
