/* End-to-end tests of the cluster: the real kz-coordinator, kz-worker and
 * kz-trainer (KZ_BIN_DIR) with a tiny network and few simulations.
 *
 * The scenario (s_scenario), first on loopback, then with the coordinator and
 * each worker on its own host (network namespaces joined by veth links, made
 * by the test when it runs as root):
 *   1. games arrive from both workers, the trainer takes steps and submits a
 *      candidate, its arena completes and the gate decides (promoted: it is
 *      the best now; rejected: the best is unchanged);
 *   2. mid-run, a worker and the coordinator are SIGKILLed; the coordinator is
 *      restarted on the same store; the surviving worker and the trainer carry
 *      on (new games arrive from that worker, the trainer keeps stepping);
 *   3. everything is stopped with SIGTERM (clean exits), and the store is
 *      read back: every game a client was told was stored is there exactly
 *      once, no game id is stored twice, nothing acknowledged before the
 *      crash is lost.
 * The whole cluster runs authenticated (CurveZMQ, docs/security.md): the
 * coordinator, each worker, the trainer and the witness have their own key
 * pairs, each client's key in the coordinator's allow-list under the id the
 * client uses, so that every reconnect of the scenario (the restart, the
 * lost worker) goes through the handshake and the allow-list again.
 * The test itself is one more client (a "witness", using the client library
 * the workers use) submitting valid random games throughout, crash included,
 * and remembering which ids were acknowledged: the exact set whose presence
 * the store must prove. It also resubmits acknowledged games, which must be
 * acknowledged as duplicates and never stored twice.
 *
 * Every wait polls /status with a generous deadline; the fixture kills every
 * process (and deletes the namespaces) even when an assertion fails, and the
 * children die with the test process if it crashes (PR_SET_PDEATHSIG).
 * Namespaces left by a crashed run are recognised by the dead pid in their
 * name and deleted by the next run. (No Criterion .timeout: every wait has
 * its own deadline, and Criterion 2.4's timeouts leak 48 bytes under ASan.) Addresses
 * are 10.211.x.y inside the test's own namespaces only; the host's network is never touched. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "data/record.h"
#include "data/store.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

#define N_WORKERS 2
#define ARENA_GAMES 6       /* small gate: 6 games, > 55% */
#define STEPS_PER_CANDIDATE 5
#define DEADLINE_S 60.0     /* each phase; normally a few seconds */
#define NS_PREFIX "kze"     /* namespace names: kze<pid>c, kze<pid>w<i> */
#define S_STR_(x) #x
#define S_STR(x) S_STR_(x)

/* --- the witness: a client submitting games and remembering the acks -------------- */

typedef struct witness {
    void *zctx;               /* its own ZeroMQ context */
    client *cl;               /* the client library, as the workers use it */
    const game_def *g;        /* the game */
    uint64_t seed;            /* seed of the next new game (a game is its seed) */
    uint8_t *rec;             /* the record in flight (unacknowledged), NULL none */
    size_t rec_len;           /* its bytes */
    uint64_t rec_seed;        /* its seed */
    uint8_t (*acked)[16];     /* (cap) ids acknowledged as stored */
    uint64_t *acked_seed;     /* (cap) their seeds */
    size_t n_acked, cap;      /* count, capacity */
    size_t duplicates;        /* resubmissions acknowledged as duplicates */
    size_t submits;           /* submissions (including resends) */
    int rejected;             /* GameRejects: must stay 0 */
    char error[256];          /* last unexpected answer */
} witness;

/* Connects a witness to endpoint; inside netns when non-NULL (the ZeroMQ I/O
 * threads, which make the TCP connections, are created by the first socket
 * and inherit the creating thread's network namespace). */
static int s_witness_init(witness *w, const char *netns, const char *endpoint, const char *keys)
{
    memset(w, 0, sizeof *w);
    w->g = game_default();
    w->seed = mix64((uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time_wall_ms());
    int self = -1, target = -1;
    if (netns) {
        char path[256];
        snprintf(path, sizeof path, "/run/netns/%s", netns);
        self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        target = open(path, O_RDONLY | O_CLOEXEC);
        if (self < 0 || target < 0 || setns(target, CLONE_NEWNET))
            return errno ? errno : EIO;
    }
    w->zctx = zmq_ctx_new();
    client_config cc;
    client_config_default(&cc);
    snprintf(cc.curve_server_key, sizeof cc.curve_server_key, "%s/coordinator.pub", keys);
    snprintf(cc.curve_secret_key, sizeof cc.curve_secret_key, "%s/e2e-witness.key", keys);
    snprintf(cc.endpoint, sizeof cc.endpoint, "%s", endpoint);
    snprintf(cc.client_id, sizeof cc.client_id, "%s", "e2e-witness");
    cc.role = "tool";
    cc.timeout_ms = 300;
    cc.retries = 2;
    cc.heartbeat_ms = 200;
    w->cl = client_new(w->zctx, &cc);
    if (netns) {
        if (setns(self, CLONE_NEWNET))
            abort(); /* this thread would stay in the wrong namespace */
        close(self);
        close(target);
    }
    return w->cl ? 0 : EIO;
}

static void s_witness_fini(witness *w)
{
    client_destroy(&w->cl);
    if (w->zctx)
        zmq_ctx_term(w->zctx);
    free(w->rec);
    free(w->acked);
    free(w->acked_seed);
    memset(w, 0, sizeof *w);
}

/* Submits the record of game `seed` once. 1 acknowledged (*dup says whether
 * as a duplicate), 0 no answer (the coordinator is down), -1 anything else
 * (w->error says what). Blocks at most ~0.6 s (two 300 ms attempts). */
static int s_witness_submit(witness *w, const uint8_t *rec, size_t len, bool *dup)
{
    wire_msg m = {0};
    m.kind = WIRE_GAME_SUBMIT;
    m.u.game_submit.record = rec;
    m.u.game_submit.record_len = len;
    const wire_msg *r;
    w->submits++;
    int rc = client_call(w->cl, &m, &r);
    if (rc == KZ_ETIMEOUT)
        return 0;
    if (rc || (r->kind != WIRE_GAME_ACK && r->kind != WIRE_GAME_REJECT)) {
        snprintf(w->error, sizeof w->error, "submit: %s %s", err_str(rc),
                 client_last_error(w->cl));
        return -1;
    }
    if (r->kind == WIRE_GAME_REJECT) {
        w->rejected++;
        snprintf(w->error, sizeof w->error, "rejected: %s", r->u.game_reject.detail);
        return -1;
    }
    if (r->u.game_ack.game_id_len != 16 || memcmp(r->u.game_ack.game_id, rec + 2, 16)) {
        snprintf(w->error, sizeof w->error, "acknowledgement for another game id");
        return -1;
    }
    *dup = r->u.game_ack.duplicate;
    return 1;
}

/* One step: submits the game in flight (a new one when none) and remembers
 * it once acknowledged. */
static void s_witness_pump(witness *w)
{
    if (!w->rec) {
        validate_random_opts vo = {.model_version = 1, .worker_id = "e2e-witness"};
        w->rec_seed = w->seed++;
        if (validate_random_record(w->g, w->rec_seed, &vo, &w->rec, &w->rec_len))
            return;
    }
    bool dup = false;
    if (s_witness_submit(w, w->rec, w->rec_len, &dup) != 1)
        return; /* down: the same game again next time */
    /* dup is possible for a new game: an earlier attempt was stored and its
     * answer lost in the crash. Either way it is stored now. */
    if (w->n_acked == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->acked = realloc(w->acked, w->cap * sizeof *w->acked);
        w->acked_seed = realloc(w->acked_seed, w->cap * sizeof *w->acked_seed);
        KZ_CHECK(w->acked != NULL && w->acked_seed != NULL);
    }
    memcpy(w->acked[w->n_acked], w->rec + 2, 16);
    w->acked_seed[w->n_acked++] = w->rec_seed;
    free(w->rec);
    w->rec = NULL;
}

/* Resubmits the first n acknowledged games: each must be acknowledged again
 * AS A DUPLICATE (it is stored, and not stored twice). Returns how many were;
 * retries through coordinator silences until `deadline`. */
static size_t s_witness_resubmit(witness *w, size_t n, double deadline)
{
    size_t ok = 0;
    validate_random_opts vo = {.model_version = 1, .worker_id = "e2e-witness"};
    for (size_t i = 0; i < n && i < w->n_acked; i++) {
        uint8_t *rec;
        size_t len;
        if (validate_random_record(w->g, w->acked_seed[i], &vo, &rec, &len))
            continue;
        int rc = 0;
        bool dup = false;
        while (rc == 0 && harness_now() < deadline)
            rc = s_witness_submit(w, rec, len, &dup);
        if (rc == 1 && dup) {
            ok++;
            w->duplicates++;
        } else if (rc == 1) {
            snprintf(w->error, sizeof w->error,
                     "acknowledged game %zu came back as new: it was lost", i);
        }
        free(rec);
    }
    return ok;
}

/* --- the cluster ----------------------------------------------------------------------- */

typedef struct cluster {
    char *dir;                             /* scratch directory */
    bool netns;                            /* hosts are namespaces */
    char ns_coord[32];                     /* coordinator (and trainer) host */
    char ns_worker[N_WORKERS][32];         /* worker hosts */
    char coord_addr[N_WORKERS][32];        /* the coordinator's address seen by worker i */
    int port, pub_port, http_port;         /* coordinator ports */
    char model[512];                       /* tiny initial model */
    char worker_id[N_WORKERS][64];         /* client ids (and their keys' names) */
    char keys[1024];                       /* the key pairs and the allow-list */
    proc coord, worker[N_WORKERS], trainer;/* the processes */
    witness wit;                           /* the test's own client */
    char *status;                          /* last /status body (owned) */
} cluster;

static cluster s_cl;

static void s_netns_cleanup_stale(void)
{
    /* Namespaces of earlier runs whose test process is gone. */
    DIR *d = opendir("/run/netns");
    if (!d)
        return;
    struct dirent *e;
    char names[64][64];
    int n = 0;
    while ((e = readdir(d)) && n < 64) {
        int pid;
        char kind;
        if (sscanf(e->d_name, NS_PREFIX "%d%c", &pid, &kind) == 2 && (kind == 'c' || kind == 'w') &&
            pid != getpid() && harness_pid_gone(pid))
            snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        netns_ip(NULL, 0, "netns del %s", names[i]);
}

static void s_fini(void)
{
    proc_kill_all();
    s_witness_fini(&s_cl.wit);
    if (s_cl.netns) {
        netns_ip(NULL, 0, "netns del %s", s_cl.ns_coord);
        for (int i = 0; i < N_WORKERS; i++)
            netns_ip(NULL, 0, "netns del %s", s_cl.ns_worker[i]);
    }
    free(s_cl.status);
    harness_rm_rf(s_cl.dir);
    free(s_cl.dir);
    memset(&s_cl, 0, sizeof s_cl);
}

/* Fetches /status into c->status; false when the coordinator does not answer. */
static bool s_status(cluster *c)
{
    char *body;
    if (http_get(c->netns ? c->ns_coord : NULL, "127.0.0.1", c->http_port, "/status", &body))
        return false;
    free(c->status);
    c->status = body;
    return true;
}

static double s_num(cluster *c, const char *path)
{
    double v = -1;
    if (!json_number(c->status, path, &v))
        cr_assert_fail("/status has no %s:\n%s", path, c->status ? c->status : "(none)");
    return v;
}

/* The worker entry of client id `id` in /status: its index, or -1. */
static int s_worker_index(cluster *c, const char *id)
{
    char path[64], got[128];
    for (int i = 0; i < 256; i++) {
        snprintf(path, sizeof path, "workers.list.%d.id", i);
        if (!json_string(c->status, path, got, sizeof got))
            return -1;
        if (!strcmp(got, id))
            return i;
    }
    return -1;
}

static void s_fail_with_logs(cluster *c, const char *what)
{
    fprintf(stderr, "e2e: %s\n--- coordinator log tail:\n%s\n", what,
            proc_log_tail(&c->coord, 3000));
    for (int i = 0; i < N_WORKERS; i++)
        fprintf(stderr, "--- worker %d log tail:\n%s\n", i + 1, proc_log_tail(&c->worker[i], 1500));
    fprintf(stderr, "--- trainer log tail:\n%s\n", proc_log_tail(&c->trainer, 1500));
    fprintf(stderr, "--- last status:\n%s\n", c->status ? c->status : "(none)");
    cr_assert_fail("%s", what);
}

static void s_start_coordinator(cluster *c)
{
    char exe[1024], data[1024], bind[64], pub[64], http[32], model_arg[600], log[1024];
    char key[1100], allow[1100];
    harness_bin(exe, sizeof exe, "kz-coordinator");
    snprintf(key, sizeof key, "--curve_secret_key=%s/coordinator.key", c->keys);
    snprintf(allow, sizeof allow, "--allow_keys=%s/allow", c->keys);
    snprintf(data, sizeof data, "--data_dir=%s/store", c->dir);
    snprintf(bind, sizeof bind, "--bind=tcp://%s:%d", c->netns ? "0.0.0.0" : "127.0.0.1",
             c->port);
    snprintf(pub, sizeof pub, "--pub_bind=tcp://%s:%d", c->netns ? "0.0.0.0" : "127.0.0.1",
             c->pub_port);
    snprintf(http, sizeof http, "--http_port=%d", c->http_port);
    snprintf(model_arg, sizeof model_arg, "--initial_model=%s", c->model);
    snprintf(log, sizeof log, "%s/coordinator.log", c->dir);
    char *argv[] = {exe, data, bind, pub, "--http_bind=127.0.0.1", http, model_arg,
                    "--simulations=8", "--selfplay_games=4",
                    "--gate=spec", "--arena_games=" S_STR(ARENA_GAMES), "--arena_threshold=0.55",
                    "--arena_per_worker=3", "--heartbeat_ms=200", "--expiry_ms=2000",
                    "--wait_ms=100", "--status_ms=100", "--log_s=5", "--map_mb=16",
                    "--sync=true", key, allow, NULL};
    int rc = proc_start(&c->coord, "coordinator", c->netns ? c->ns_coord : NULL, log, argv);
    cr_assert_eq(rc, 0, "cannot start kz-coordinator: %s", strerror(rc));
    double end = harness_now() + DEADLINE_S;
    while (!s_status(c)) {
        if (!proc_alive(&c->coord) || harness_now() > end)
            s_fail_with_logs(c, "the coordinator did not come up");
        harness_sleep_ms(50);
    }
}

static void s_start_worker(cluster *c, int i)
{
    char exe[1024], ep[96], sub[96], id[96], cache[1024], log[1024], server[1100], key[1200];
    harness_bin(exe, sizeof exe, "kz-worker");
    snprintf(server, sizeof server, "--curve_server_key=%s/coordinator.pub", c->keys);
    snprintf(key, sizeof key, "--curve_secret_key=%s/%s.key", c->keys, c->worker_id[i]);
    snprintf(ep, sizeof ep, "--endpoint=tcp://%s:%d", c->coord_addr[i], c->port);
    snprintf(sub, sizeof sub, "--sub_endpoint=tcp://%s:%d", c->coord_addr[i], c->pub_port);
    snprintf(id, sizeof id, "--worker_id=%s", c->worker_id[i]);
    snprintf(cache, sizeof cache, "--model_cache_dir=%s/models-%d", c->dir, i + 1);
    snprintf(log, sizeof log, "%s/worker-%d.log", c->dir, i + 1);
    char *argv[] = {exe, ep, sub, id, cache, "--parallel=4", "--timeout_ms=500",
                    "--heartbeat_ms=200", "--log_s=5", "--drain_s=10", server, key, NULL};
    int rc = proc_start(&c->worker[i], c->worker_id[i], c->netns ? c->ns_worker[i] : NULL, log,
                        argv);
    cr_assert_eq(rc, 0, "cannot start kz-worker: %s", strerror(rc));
}

static void s_start_trainer(cluster *c)
{
    char exe[1024], ep[96], ckpt[1024], log[1024], server[1100], key[1100];
    harness_bin(exe, sizeof exe, "kz-trainer");
    snprintf(server, sizeof server, "--curve_server_key=%s/coordinator.pub", c->keys);
    snprintf(key, sizeof key, "--curve_secret_key=%s/e2e-trainer.key", c->keys);
    snprintf(ep, sizeof ep, "--endpoint=tcp://127.0.0.1:%d", c->port);
    snprintf(ckpt, sizeof ckpt, "--checkpoint_dir=%s/trainer", c->dir);
    snprintf(log, sizeof log, "%s/trainer.log", c->dir);
    char *argv[] = {exe, ep, ckpt, "--batch_size=32", "--min_positions=64", "--max_reuse=1000",
                    "--steps_per_candidate=" S_STR(STEPS_PER_CANDIDATE),
                    "--checkpoint_every=5", "--stats_s=0.2", "--timeout_ms=500",
                    "--wait_ms=100", "--log_s=5", server, key, "--client_id=e2e-trainer", NULL};
    int rc = proc_start(&c->trainer, "trainer", c->netns ? c->ns_coord : NULL, log, argv);
    cr_assert_eq(rc, 0, "cannot start kz-trainer: %s", strerror(rc));
}

/* Polls (pumping the witness) until cond(c) holds; fails with the logs after
 * DEADLINE_S or when one of the processes that must live has died. */
typedef bool (*cond_fn)(cluster *c);
static void s_wait(cluster *c, cond_fn cond, const char *what, bool worker0_alive)
{
    double end = harness_now() + DEADLINE_S;
    for (;;) {
        s_witness_pump(&c->wit);
        cr_assert_eq(c->wit.rejected, 0, "the witness's valid game was rejected: %s",
                     c->wit.error);
        cr_assert_str_empty(c->wit.error, "witness: %s", c->wit.error);
        if (s_status(c) && cond(c))
            return;
        if (!proc_alive(&c->coord))
            s_fail_with_logs(c, "the coordinator died");
        if (!proc_alive(&c->trainer))
            s_fail_with_logs(c, "the trainer died");
        for (int i = worker0_alive ? 0 : 1; i < N_WORKERS; i++)
            if (!proc_alive(&c->worker[i]))
                s_fail_with_logs(c, "a worker died");
        if (harness_now() > end) {
            char msg[256];
            snprintf(msg, sizeof msg, "timed out after %.0f s waiting for: %s", DEADLINE_S, what);
            s_fail_with_logs(c, msg);
        }
        harness_sleep_ms(100);
    }
}

/* Phase 1: games from both workers, training steps, an arena decided. */
static bool s_cond_learning(cluster *c)
{
    int w0 = s_worker_index(c, c->worker_id[0]), w1 = s_worker_index(c, c->worker_id[1]);
    char p0[64], p1[64];
    snprintf(p0, sizeof p0, "workers.list.%d.games", w0);
    snprintf(p1, sizeof p1, "workers.list.%d.games", w1);
    return w0 >= 0 && w1 >= 0 && s_num(c, p0) > 0 && s_num(c, p1) > 0 &&
           s_num(c, "trainer.step") >= STEPS_PER_CANDIDATE &&
           s_num(c, "arena.last.candidate") >= 2 && c->wit.n_acked >= 3;
}

static double s_w1_games_at_restart;/* the surviving worker's count first seen after it, -1 */
static double s_trainer_step_before;/* trainer.step seen before the crash */

/* Phase 2: after the restart, the surviving worker's games arrive again and
 * the trainer steps on. */
static bool s_cond_carried_on(cluster *c)
{
    /* Its queue of games finished while the coordinator was away may arrive
     * at once: wait for games beyond the count first seen. */
    int w1 = s_worker_index(c, c->worker_id[1]);
    char path[64];
    snprintf(path, sizeof path, "workers.list.%d.games", w1);
    double games = w1 >= 0 ? s_num(c, path) : 0;
    if (s_w1_games_at_restart < 0)
        s_w1_games_at_restart = games;
    return games >= s_w1_games_at_restart + 3 && s_num(c, "trainer.step") > s_trainer_step_before &&
           c->wit.rec == NULL && c->wit.n_acked >= 6;
}

static int s_cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

typedef struct store_scan {
    uint8_t (*ids)[16];      /* (n) every stored game id */
    size_t n, cap;           /* count, capacity */
    uint64_t worker1_after;  /* games of the surviving worker stored after the restart */
    uint64_t restart_seq;    /* first sequence stored after the restart (at most) */
    const char *worker1_id;  /* its client id */
    int bad;                 /* records that did not unpack */
} store_scan;

static int s_scan_game(void *ctx, uint64_t seq, const uint8_t *rec, size_t len)
{
    store_scan *s = ctx;
    game_record *r = record_new();
    char err[256];
    if (record_unpack(rec, len, r, err, sizeof err)) {
        s->bad++;
        record_destroy(&r);
        return 0;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->ids = realloc(s->ids, s->cap * sizeof *s->ids);
        KZ_CHECK(s->ids != NULL);
    }
    memcpy(s->ids[s->n++], r->id, 16);
    if (seq >= s->restart_seq && !strcmp(r->worker_id, s->worker1_id))
        s->worker1_after++;
    record_destroy(&r);
    return 0;
}

/* Games in the store (the coordinator must not be running). */
static uint64_t s_store_games(cluster *c)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/store", c->dir);
    store_options so;
    store_options_default(&so);
    so.map_bytes = 16u << 20;
    store *s = NULL;
    int rc = store_open(&s, dir, &so);
    cr_assert_eq(rc, 0, "cannot open the store: %s", err_str(rc));
    store_stats st;
    store_get_stats(s, &st);
    store_close(&s);
    return st.games;
}

/* The whole scenario on a prepared cluster (addresses and namespaces set). */
static void s_scenario(cluster *c)
{
    char buf[1024];
    for (int i = 0; i < N_WORKERS; i++)
        snprintf(c->worker_id[i], sizeof c->worker_id[i], "e2e-%d-worker-%d", (int)getpid(),
                 i + 1);

    /* A tiny network: one block of 8 filters. */
    snprintf(c->model, sizeof c->model, "%s/tiny.model", c->dir);
    char kz[1024], out[2048];
    harness_bin(kz, sizeof kz, "kz");
    char *init[] = {kz, "model", "init", "--blocks", "1", "--filters", "8", "--value-hidden",
                    "8", c->model, NULL};
    cr_assert_eq(proc_run(init, out, sizeof out, 60), 0, "kz model init: %s", out);

    /* The keys: one pair per program, each client's in the allow-list. */
    snprintf(c->keys, sizeof c->keys, "%s/keys", c->dir);
    snprintf(buf, sizeof buf, "%s/allow", c->keys);
    harness_keygen(c->keys, "coordinator");
    for (int i = 0; i < N_WORKERS; i++) {
        harness_keygen(c->keys, c->worker_id[i]);
        harness_allow_key(buf, c->keys, c->worker_id[i], "worker");
    }
    harness_keygen(c->keys, "e2e-trainer");
    harness_allow_key(buf, c->keys, "e2e-trainer", "trainer");
    harness_keygen(c->keys, "e2e-witness");
    harness_allow_key(buf, c->keys, "e2e-witness", "worker");

    /* Step 1. Start: the coordinator first (so that its ports are known to
     * work), then the witness, the workers and the trainer. */
    s_start_coordinator(c);
    snprintf(buf, sizeof buf, "tcp://127.0.0.1:%d", c->port);
    cr_assert_eq(s_witness_init(&c->wit, c->netns ? c->ns_coord : NULL, buf, c->keys), 0);
    for (int i = 0; i < N_WORKERS; i++)
        s_start_worker(c, i);
    s_start_trainer(c);

    /* Step 2. Learning: games, steps, an arena decided by the gate. */
    s_wait(c, s_cond_learning, "games from both workers, training steps and a decided arena",
           true);
    double cand = s_num(c, "arena.last.candidate");
    double best = s_num(c, "models.best");
    double w = s_num(c, "arena.last.wins"), d = s_num(c, "arena.last.draws"),
           l = s_num(c, "arena.last.losses");
    cr_expect(w + d + l >= 1 && w + d + l <= ARENA_GAMES, "arena tally +%g =%g -%g", w, d, l);
    if (s_num(c, "arena.last.promoted")) {
        cr_expect_geq(best, cand, "promoted candidate %g but best is %g", cand, best);
        cr_expect_gt(s_num(c, "models.promotions"), 0);
    } else {
        cr_expect_neq(best, cand, "rejected candidate %g is the best", cand);
    }

    double promoted = s_num(c, "arena.last.promoted");
    double step_seen = s_num(c, "trainer.step");

    /* Step 3. Crash: SIGKILL a worker and the coordinator mid-run. */
    double games_before = s_num(c, "replay.games");
    s_trainer_step_before = s_num(c, "trainer.step");
    size_t acked_before = c->wit.n_acked;
    cr_assert_gt(games_before, 0);
    proc_signal(&c->worker[0], SIGKILL);
    proc_signal(&c->coord, SIGKILL);
    cr_assert(proc_wait_exit(&c->worker[0], 10), "worker survived SIGKILL");
    cr_assert(proc_wait_exit(&c->coord, 10), "coordinator survived SIGKILL");
    cr_expect(WIFSIGNALED(c->coord.status) && WTERMSIG(c->coord.status) == SIGKILL);
    /* What the store holds at the crash: every game acknowledged so far. */
    uint64_t games_at_crash = s_store_games(c);
    cr_expect_geq((double)games_at_crash, games_before,
                  "games counted in /status before the crash are not in the store");
    /* The witness keeps submitting into the void for a moment. */
    for (int i = 0; i < 3; i++)
        s_witness_pump(&c->wit);

    /* Step 4. Restart the coordinator on the same store; the others go on. */
    s_w1_games_at_restart = -1;
    s_start_coordinator(c);
    cr_expect_eq(s_num(c, "replay.games"), (double)games_at_crash,
                 "the restarted coordinator does not see the store as it was");
    s_wait(c, s_cond_carried_on, "the surviving worker's and the witness's games, "
                                 "and trainer steps, after the restart", false);
    /* Every game acknowledged before the crash, submitted again, is
     * acknowledged as a duplicate: stored before, not stored again. */
    size_t dups = s_witness_resubmit(&c->wit, acked_before, harness_now() + DEADLINE_S);
    cr_expect_eq(dups, acked_before, "%zu of %zu games acknowledged before the crash came back "
                                     "as duplicates (%s)", dups, acked_before, c->wit.error);

    /* Step 5. Stop cleanly: clients first (they drain), then the coordinator. */
    int st = proc_stop(&c->worker[1], SIGTERM, 30);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker exit status %#x:\n%s", st,
              proc_log_tail(&c->worker[1], 1500));
    st = proc_stop(&c->trainer, SIGTERM, 30);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trainer exit status %#x:\n%s", st,
              proc_log_tail(&c->trainer, 1500));
    st = proc_stop(&c->coord, SIGTERM, 30);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "coordinator exit status %#x:\n%s", st,
              proc_log_tail(&c->coord, 1500));
    cr_expect_gt(c->wit.n_acked, acked_before, "no witness game acknowledged after the restart");

    /* Step 6. The store: every acknowledged game exactly once. */
    snprintf(buf, sizeof buf, "%s/store", c->dir);
    store_options so;
    store_options_default(&so);
    so.map_bytes = 16u << 20;
    store *s = NULL;
    cr_assert_eq(store_open(&s, buf, &so), 0, "cannot open the coordinator's store");
    store_stats stats;
    store_get_stats(s, &stats);
    store_scan scan = {.restart_seq = games_at_crash,
                       .worker1_id = c->worker_id[1]};
    cr_assert_eq(store_foreach_game(s, s_scan_game, &scan), 0);
    cr_expect_eq(scan.bad, 0, "%d stored records do not unpack", scan.bad);
    cr_expect_eq(scan.n, stats.games, "games listed %zu, counted %llu", scan.n,
                 (unsigned long long)stats.games);
    cr_expect_geq((double)scan.n, (double)games_at_crash,
                  "games lost: %zu stored, %llu at the crash", scan.n,
                  (unsigned long long)games_at_crash);
    qsort(scan.ids, scan.n, 16, s_cmp_id);
    for (size_t i = 1; i < scan.n; i++)
        cr_expect_neq(memcmp(scan.ids[i - 1], scan.ids[i], 16), 0, "a game is stored twice");
    size_t missing = 0;
    for (size_t i = 0; i < c->wit.n_acked; i++) {
        uint64_t seq;
        if (!bsearch(c->wit.acked[i], scan.ids, scan.n, 16, s_cmp_id) ||
            store_find_game(s, c->wit.acked[i], &seq))
            missing++;
    }
    cr_expect_eq(missing, 0, "%zu of %zu acknowledged games are not in the store", missing,
                 c->wit.n_acked);
    cr_expect_gt(scan.worker1_after, 0, "no game of the surviving worker after the restart");
    fprintf(stderr, "e2e%s: %zu games stored (%llu at the crash, %llu of the surviving worker "
                    "after it); witness %zu acknowledged, %zu duplicates; trainer step %g; "
                    "arena: candidate %g %s (+%g =%g -%g), best %g\n",
            c->netns ? " (namespaces)" : "", scan.n, (unsigned long long)games_at_crash,
            (unsigned long long)scan.worker1_after, c->wit.n_acked, c->wit.duplicates,
            step_seen, cand, promoted ? "promoted" : "rejected", w, d, l, best);
    free(scan.ids);
    store_close(&s);
}

static void s_need_programs(void)
{
    char b[1024];
    const char *progs[] = {"kz", "kz-coordinator", "kz-worker", "kz-trainer"};
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
        cr_assert(!access(harness_bin(b, sizeof b, progs[i]), X_OK),
                  "%s is not built (KZ_BIN_DIR)", b);
}

static void s_ports(cluster *c)
{
    c->port = tcp_free_port();
    c->pub_port = tcp_free_port();
    c->http_port = tcp_free_port();
    cr_assert(c->port && c->pub_port && c->http_port && c->port != c->pub_port);
}

Test(e2e, loopback, .fini = s_fini)
{
    s_need_programs();
    cluster *c = &s_cl;
    c->dir = harness_tmpdir("e2e");
    cr_assert_not_null(c->dir);
    s_ports(c);
    for (int i = 0; i < N_WORKERS; i++)
        snprintf(c->coord_addr[i], sizeof c->coord_addr[i], "127.0.0.1");
    s_scenario(c);
}

/* The same cluster across hosts: the coordinator and trainer in one network
 * namespace, each worker in its own, joined by a veth link per worker
 * (10.211.<i>.1 on the coordinator's side, 10.211.<i>.2 on the worker's). */
Test(e2e, namespaces, .fini = s_fini)
{
    s_need_programs();
    char why[512];
    if (!netns_available(why, sizeof why)) {
        fprintf(stderr, "e2e::namespaces: SKIPPED: %s\n", why);
        cr_skip_test("network namespaces cannot be made here: %s", why);
    }
    s_netns_cleanup_stale();
    cluster *c = &s_cl;
    c->dir = harness_tmpdir("e2e-ns");
    cr_assert_not_null(c->dir);
    c->netns = true;
    int pid = (int)getpid();
    snprintf(c->ns_coord, sizeof c->ns_coord, NS_PREFIX "%dc", pid);
    char out[1024];
    cr_assert_eq(netns_ip(out, sizeof out, "netns add %s", c->ns_coord), 0, "%s", out);
    cr_assert_eq(netns_ip(out, sizeof out, "-n %s link set lo up", c->ns_coord), 0, "%s", out);
    for (int i = 0; i < N_WORKERS; i++) {
        const char *ns = c->ns_worker[i];
        snprintf(c->ns_worker[i], sizeof c->ns_worker[i], NS_PREFIX "%dw%d", pid, i + 1);
        cr_assert_eq(netns_ip(out, sizeof out, "netns add %s", ns), 0, "%s", out);
        cr_assert_eq(netns_ip(out, sizeof out, "-n %s link set lo up", ns), 0, "%s", out);
        /* Both ends are made directly inside the namespaces. */
        cr_assert_eq(netns_ip(out, sizeof out,
                              "link add kzc%d netns %s type veth peer name kzw%d netns %s", i + 1,
                              c->ns_coord, i + 1, ns),
                     0, "%s", out);
        cr_assert_eq(netns_ip(out, sizeof out, "-n %s addr add 10.211.%d.1/24 dev kzc%d",
                              c->ns_coord, i + 1, i + 1),
                     0, "%s", out);
        cr_assert_eq(netns_ip(out, sizeof out, "-n %s addr add 10.211.%d.2/24 dev kzw%d", ns,
                              i + 1, i + 1),
                     0, "%s", out);
        cr_assert_eq(netns_ip(out, sizeof out, "-n %s link set kzc%d up", c->ns_coord, i + 1), 0,
                     "%s", out);
        cr_assert_eq(netns_ip(out, sizeof out, "-n %s link set kzw%d up", ns, i + 1), 0, "%s",
                     out);
        snprintf(c->coord_addr[i], sizeof c->coord_addr[i], "10.211.%d.1", i + 1);
    }
    /* Ports inside fresh namespaces are all free; take them from ours anyway. */
    s_ports(c);
    s_scenario(c);
}
