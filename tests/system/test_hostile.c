/* Hostile input against the real binaries (KZ_BIN_DIR): what a broken network,
 * a confused operator or an attacker can send.
 *
 *   - kz-coordinator receiving random frames, multi-frame and empty messages,
 *     mutated valid messages, reply kinds sent as requests, a frame beyond
 *     ZMQ_MAXMSGSIZE, a valid envelope of another protocol version, truncated
 *     and oversized records, a flood of duplicate submissions, hundreds of
 *     made-up client ids (with control characters; beyond max_clients), and
 *     HTTP requests to unknown paths, with other methods, huge URLs and raw
 *     garbage on the status port. After each barrage the coordinator must
 *     still answer /healthz and acknowledge a valid game, and every request
 *     must have had its answer; what `kz status` and `kz store --games`
 *     print of it has no control characters.
 *   - every binary (kz and its subcommands, kz-coordinator, kz-worker,
 *     kz-trainer) given an unknown flag, a missing value, an out-of-range value,
 *     or a nonexistent, unreadable (a directory), corrupted or truncated config
 *     or model file: exit status 2 and exactly one line on stderr.
 *   - a full disk: the coordinator's store on a tiny tmpfs (needs root to
 *     mount; skipped with a message otherwise). Games are refused or left
 *     unacknowledged while the disk is full, never acknowledged and lost, and
 *     are stored once space is freed.
 *   - kz status against a server whose answer never ends.
 *
 * Uses tests/harness/harness.h for processes, ports, HTTP, JSON and /status. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "tests/harness/harness.h"
#include "games/game.h"
#include "nn/modelfile.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

TestSuite(hostile, .fini = harness_cleanup); /* every wait has its own deadline */

/* Runs a program of KZ_BIN_DIR (argv[0] its name) with the output of fd (1
 * or 2) captured in buf, the other discarded; the waitpid status. Below. */
static int s_run_fd(const char *const *argv, int fd, char *buf, size_t cap);

/* --- raw ZeroMQ peer ------------------------------------------------------------- */

/* A DEALER socket of its own context, talking to h's coordinator. */
typedef struct peer {
    void *ctx;  /* ZeroMQ context */
    void *sock; /* DEALER connected to the coordinator */
} peer;

static void s_peer_open(peer *p, const harness *h)
{
    p->ctx = zmq_ctx_new();
    p->sock = zmq_socket(p->ctx, ZMQ_DEALER);
    cr_assert_not_null(p->sock);
    int zero = 0, ivl = 50;
    zmq_setsockopt(p->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(p->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    cr_assert_eq(zmq_connect(p->sock, h->endpoint), 0);
}

static void s_peer_close(peer *p)
{
    zmq_close(p->sock);
    zmq_ctx_term(p->ctx);
}

static void s_send_raw(peer *p, const void *data, size_t len, bool more)
{
    cr_assert_geq(zmq_send(p->sock, data, len, more ? ZMQ_SNDMORE : 0), 0, "send: %s",
                  zmq_strerror(errno));
}

/* Encodes m (the client id "hostile" unless set) and sends it. */
static void s_send_msg(peer *p, wire_msg *m)
{
    wire_buf b = {0};
    if (!m->client)
        m->client = "hostile";
    cr_assert_eq(wire_encode(m, &b), 0);
    s_send_raw(p, b.data, b.len, false);
    wire_buf_free(&b);
}

/* Receives one reply within timeout_s into *m (decoded, any version); false on
 * silence. Replies must always decode. */
static bool s_recv_msg(peer *p, double timeout_s, wire_msg *m)
{
    zmq_pollitem_t it = {p->sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, (long)(timeout_s * 1000)) <= 0)
        return false;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    cr_assert_geq(zmq_msg_recv(&msg, p->sock, 0), 0);
    int rc = wire_decode(m, zmq_msg_data(&msg), zmq_msg_size(&msg), 1u << 30);
    zmq_msg_close(&msg);
    cr_assert(rc == 0 || rc == KZ_EVERSION, "a reply does not decode: %s", err_str(rc));
    return true;
}

/* --- HTTP and JSON -------------------------------------------------------------------- */

/* An exchange with 127.0.0.1:port (harness.h's http_exchange, 10 s at most):
 * NULL when the connection fails, else the malloc'd answer (*got bytes). */
static char *s_http_raw(int port, const char *req, size_t len, size_t *got)
{
    return http_exchange(NULL, "127.0.0.1", port, req, len, 10, got);
}

/* s_http_raw with a NUL-terminated request. */
static char *s_http_req(int port, const char *req, size_t *got)
{
    return s_http_raw(port, req, strlen(req), got);
}

/* --- what every barrage ends with ------------------------------------------------- */

/* A valid self-play record (model 1) of a short random game; caller frees. */
static uint8_t *s_valid_record(uint64_t seed, size_t *len)
{
    validate_random_opts o = {.model_version = 1, .worker_id = "hostile", .max_moves = 400};
    uint8_t *buf = NULL;
    for (uint64_t s = seed;; s++)
        if (validate_random_record(game_default(), s, &o, &buf, len) == 0)
            return buf;
}

/* The coordinator is alive, /healthz says ok, and a fresh valid game is
 * acknowledged as new. */
static void s_assert_still_serving(harness *h, uint64_t seed)
{
    int st;
    cr_assert_not(harness_wait(h->coord, 0, &st), "the coordinator died (status %d, see %s)",
                  harness_exit_code(st), h->coord_log);
    char buf[256];
    cr_assert_eq(harness_http(h->http_port, "/healthz", buf, sizeof buf), 200);
    peer p;
    s_peer_open(&p, h);
    size_t len;
    uint8_t *rec = s_valid_record(seed, &len);
    wire_msg m = {.kind = WIRE_GAME_SUBMIT, .request_id = 424242,
                  .u.game_submit = {rec, len, 0}};
    s_send_msg(&p, &m);
    wire_msg r = {0};
    cr_assert(s_recv_msg(&p, 10, &r), "no answer to a valid game");
    cr_assert_eq(r.kind, WIRE_GAME_ACK, "a valid game got %s", wire_kind_name(r.kind));
    cr_assert_eq(r.request_id, 424242);
    cr_assert_not(r.u.game_ack.duplicate);
    wire_msg_clear(&r);
    free(rec);
    s_peer_close(&p);
}

/* The coordinator stops cleanly on SIGTERM and its log shows no sanitizer
 * report. */
static void s_assert_clean_stop(harness *h)
{
    pid_t pid = h->coord;
    kill(pid, SIGTERM);
    int st;
    cr_assert(harness_wait(pid, 20, &st), "no exit after SIGTERM");
    h->coord = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d (see %s)",
              harness_exit_code(st), h->coord_log);
    cr_assert_eq(harness_count(h->coord_log, "ERROR: AddressSanitizer"), 0);
    cr_assert_eq(harness_count(h->coord_log, "ERROR: LeakSanitizer"), 0);
    cr_assert_eq(harness_count(h->coord_log, "runtime error"), 0);
}

static const char *const s_small_caps[] = {"--max_msg_bytes=65536", "--max_record_bytes=32768",
                                           NULL};

/* --- the coordinator's socket ------------------------------------------------------ */

Test(hostile, coordinator_answers_garbage_frames_and_survives)
{
    harness h;
    harness_init(&h, "hostile-frames");
    harness_coord_start(&h, s_small_caps);
    peer p;
    s_peer_open(&p, &h);
    rng_t rng;
    rng_seed(&rng, 11);
    wire_msg r = {0};

    /* Step 1. Random frames, an empty one, multi-frame messages: each is
     * answered with one Error (extra frames are dropped). */
    uint8_t junk[4096];
    int sent = 0;
    for (int i = 0; i < 200; i++) {
        size_t len = i == 0 ? 0 : rng_below(&rng, sizeof junk);
        for (size_t k = 0; k < len; k++)
            junk[k] = (uint8_t)rng_next(&rng);
        if (i % 10 == 5) { /* body frame plus two extras */
            s_send_raw(&p, junk, len, true);
            s_send_raw(&p, junk, len / 2, true);
            s_send_raw(&p, "x", 1, false);
        } else {
            s_send_raw(&p, junk, len, false);
        }
        sent++;
    }
    for (int i = 0; i < sent; i++) {
        cr_assert(s_recv_msg(&p, 10, &r), "only %d of %d garbage frames answered", i, sent);
        cr_assert_eq(r.kind, WIRE_ERROR, "garbage answered with %s", wire_kind_name(r.kind));
        cr_assert(r.u.error.code == WIRE_ERR_MALFORMED || r.u.error.code == WIRE_ERR_VERSION);
        wire_msg_clear(&r);
    }
    cr_assert_not(s_recv_msg(&p, 0.2, &r), "more answers than messages");

    /* Step 2. Valid requests with random bytes flipped: whatever they became,
     * one answer each. */
    wire_msg hello = {.kind = WIRE_HELLO, .request_id = 7,
                      .u.hello = {"worker", "host", 1, "kz", "khreibaga", 2}};
    uint32_t slots[2] = {1, 2};
    wire_msg job = {.kind = WIRE_JOB_REQUEST, .request_id = 8,
                    .u.job_request = {2, 3, slots, 2}};
    wire_msg batch = {.kind = WIRE_BATCH_REQUEST, .request_id = 9,
                      .u.batch_request = {64, 0, false}};
    wire_msg *valid[3] = {&hello, &job, &batch};
    for (int i = 0; i < 150; i++) {
        wire_buf b = {0};
        valid[i % 3]->client = "mutant";
        cr_assert_eq(wire_encode(valid[i % 3], &b), 0);
        int flips = 1 + (int)rng_below(&rng, 3);
        for (int f = 0; f < flips; f++)
            b.data[rng_below(&rng, (uint32_t)b.len)] ^= (uint8_t)(1u << rng_below(&rng, 8));
        s_send_raw(&p, b.data, b.len, false);
        wire_buf_free(&b);
    }
    for (int i = 0; i < 150; i++) {
        cr_assert(s_recv_msg(&p, 10, &r), "only %d of 150 mutated messages answered", i);
        wire_msg_clear(&r);
    }

    /* Step 3. Reply kinds sent as requests: refused as malformed. */
    uint8_t id[16] = {1};
    wire_msg replies[4] = {
        {.kind = WIRE_GAME_ACK, .request_id = 31, .u.game_ack = {id, 16, false, 5}},
        {.kind = WIRE_WELCOME, .request_id = 32, .u.welcome = {"me", 1, "khreibaga"}},
        {.kind = WIRE_ANNOUNCEMENT, .request_id = 33, .u.announcement = {9, 9, 8, 1, 1, 1}},
        {.kind = WIRE_ERROR, .request_id = 34, .u.error = {WIRE_ERR_INTERNAL, "boo", 1}},
    };
    for (int i = 0; i < 4; i++) {
        s_send_msg(&p, &replies[i]);
        cr_assert(s_recv_msg(&p, 10, &r));
        cr_assert_eq(r.kind, WIRE_ERROR);
        cr_assert_eq(r.u.error.code, WIRE_ERR_MALFORMED);
        cr_assert_eq(r.request_id, replies[i].request_id);
        wire_msg_clear(&r);
    }

    /* Step 4. Another protocol version: refused, naming ours, request id echoed. */
    wire_msg future = {.kind = WIRE_HELLO, .version = WIRE_PROTOCOL_VERSION + 1,
                       .request_id = 77, .u.hello = {"worker", "h", 1, "kz 9", "khreibaga", 1}};
    s_send_msg(&p, &future);
    cr_assert(s_recv_msg(&p, 10, &r));
    cr_assert_eq(r.kind, WIRE_ERROR);
    cr_assert_eq(r.u.error.code, WIRE_ERR_VERSION);
    cr_assert_eq(r.u.error.supported_version, WIRE_PROTOCOL_VERSION);
    cr_assert_eq(r.request_id, 77);
    wire_msg_clear(&r);

    /* Step 5. A frame beyond ZMQ_MAXMSGSIZE: the connection is dropped, not
     * the coordinator; the peer reconnects and is served. */
    size_t huge = 65536 + 4096;
    uint8_t *big = calloc(1, huge);
    cr_assert_not_null(big);
    s_send_raw(&p, big, huge, false);
    free(big);
    cr_assert_not(s_recv_msg(&p, 0.5, &r), "an oversized frame was answered");
    bool welcomed = false;
    for (int i = 0; i < 50 && !welcomed; i++) {
        hello.client = "after-oversize";
        hello.request_id = 1000 + (uint64_t)i;
        s_send_msg(&p, &hello);
        while (!welcomed && s_recv_msg(&p, 0.2, &r)) {
            welcomed = r.kind == WIRE_WELCOME;
            wire_msg_clear(&r);
        }
    }
    cr_assert(welcomed, "no Welcome after the oversized frame");

    /* Step 6. The counters saw it all. */
    cr_assert_geq(harness_wait_status(&h, "\"ingest\"", "malformed", 200, 5), 200);
    cr_assert_geq(harness_status_num(&h, "\"ingest\"", "refused_version"), 1);
    s_peer_close(&p);
    s_assert_still_serving(&h, 5000);
    s_assert_clean_stop(&h);
    harness_fini(&h);
}

Test(hostile, coordinator_refuses_truncated_records_and_stores_duplicates_once)
{
    harness h;
    harness_init(&h, "hostile-records");
    harness_coord_start(&h, s_small_caps);
    peer p;
    s_peer_open(&p, &h);
    wire_msg r = {0};
    size_t len;
    uint8_t *rec = s_valid_record(100, &len);
    cr_assert_gt(len, 64);

    /* Step 1. Every prefix of a valid record (and an empty one) is rejected
     * with a reason; none is acknowledged. */
    int sent = 0;
    for (size_t cut = 0; cut < len; cut += 1 + cut / 16, sent++) {
        wire_msg m = {.kind = WIRE_GAME_SUBMIT, .request_id = 10000 + (uint64_t)cut,
                      .u.game_submit = {rec, cut, 0}};
        s_send_msg(&p, &m);
    }
    for (int i = 0; i < sent; i++) {
        cr_assert(s_recv_msg(&p, 10, &r), "only %d of %d truncated records answered", i, sent);
        cr_assert_eq(r.kind, WIRE_GAME_REJECT, "a truncated record got %s",
                     wire_kind_name(r.kind));
        cr_assert_neq(r.u.game_reject.reason, 0);
        cr_assert(r.u.game_reject.detail[0] && !strchr(r.u.game_reject.detail, '\n'));
        wire_msg_clear(&r);
    }

    /* Step 2. Larger than max_record_bytes (the message itself fits). */
    size_t over = 40000;
    uint8_t *fat = malloc(over);
    cr_assert_not_null(fat);
    memset(fat, 0x0a, over);
    wire_msg m = {.kind = WIRE_GAME_SUBMIT, .request_id = 5, .u.game_submit = {fat, over, 0}};
    s_send_msg(&p, &m);
    cr_assert(s_recv_msg(&p, 10, &r));
    cr_assert_eq(r.kind, WIRE_GAME_REJECT);
    cr_assert_eq(r.u.game_reject.reason, VALIDATE_OVERSIZED);
    wire_msg_clear(&r);
    free(fat);

    /* Step 3. A flood of the same valid record, pipelined: every copy is
     * acknowledged, exactly one as new, and the store holds one game. */
    const int flood = 300;
    for (int i = 0; i < flood; i++) {
        wire_msg s = {.kind = WIRE_GAME_SUBMIT, .request_id = 20000 + (uint64_t)i,
                      .u.game_submit = {rec, len, 0}};
        s_send_msg(&p, &s);
    }
    int acks = 0, fresh = 0;
    uint64_t seq = UINT64_MAX;
    for (int i = 0; i < flood; i++) {
        cr_assert(s_recv_msg(&p, 10, &r), "only %d of %d duplicates answered", i, flood);
        cr_assert_eq(r.kind, WIRE_GAME_ACK, "a resent valid game got %s", wire_kind_name(r.kind));
        acks++;
        fresh += !r.u.game_ack.duplicate;
        if (seq == UINT64_MAX)
            seq = r.u.game_ack.sequence;
        cr_assert_eq(r.u.game_ack.sequence, seq, "copies acknowledged under other sequences");
        wire_msg_clear(&r);
    }
    cr_assert_eq(acks, flood);
    cr_assert_eq(fresh, 1, "%d copies stored as new", fresh);
    cr_assert_eq(harness_wait_status(&h, "\"replay\"", "games", 1, 5), 1);
    cr_assert_geq(harness_wait_status(&h, "\"ingest\"", "duplicates", flood - 1, 5), flood - 1);
    cr_assert_geq(harness_status_num(&h, "\"ingest\"", "rejected"), sent + 1);
    free(rec);

    /* Step 4. A valid game whose worker_id carries a line break, spaces and
     * a terminal escape: stored, and listed by `kz store --games` as one
     * line of eight words without control characters. */
    validate_random_opts o = {.model_version = 1, .worker_id = "a b\n9 x\x1b[2J", .max_moves = 400};
    for (uint64_t seed = 300;; seed++)
        if (validate_random_record(game_default(), seed, &o, &rec, &len) == 0)
            break;
    wire_msg odd = {.kind = WIRE_GAME_SUBMIT, .request_id = 6, .u.game_submit = {rec, len, 0}};
    s_send_msg(&p, &odd);
    cr_assert(s_recv_msg(&p, 10, &r));
    cr_assert_eq(r.kind, WIRE_GAME_ACK);
    wire_msg_clear(&r);
    free(rec);
    s_peer_close(&p);
    s_assert_still_serving(&h, 6000);
    cr_assert_eq(harness_wait_status(&h, "\"replay\"", "games", 3, 5), 3);
    s_assert_clean_stop(&h);
    char dir[160], out[8192];
    snprintf(dir, sizeof dir, "--data_dir=%s/store", h.dir);
    const char *argv[] = {"kz", "store", dir, "--games", NULL};
    int st = s_run_fd(argv, 1, out, sizeof out);
    cr_assert_eq(st, 0, "kz store: %d", st);
    int games = 0;
    char *save = NULL;
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "store ", 6) || !strchr("0123456789", l[0]))
            continue; /* the summary and headings */
        games++;
        int words = 0;
        for (char *c = l; *c; c++) {
            cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "control byte in '%s'", l);
            words += *c != ' ' && (c == l || c[-1] == ' ');
        }
        cr_assert_eq(words, 8, "game line '%s'", l);
    }
    cr_assert_eq(games, 3);
    harness_fini(&h);
}

Test(hostile, coordinator_survives_made_up_client_ids)
{
    harness h;
    harness_init(&h, "hostile-ids");
    harness_coord_start(&h, s_small_caps);
    peer p;
    s_peer_open(&p, &h);
    wire_msg r = {0};
    /* A Hello whose role and host carry a terminal escape sequence. */
    wire_msg hello = {.kind = WIRE_HELLO, .client = "esc\x1b[2J", .request_id = 100000,
                      .u.hello = {"wor\x1b]0;pwned\x07ker", "ho\x1b[31mst", 1, "kz", "khreibaga",
                                  1}};
    s_send_msg(&p, &hello);
    cr_assert(s_recv_msg(&p, 10, &r));
    cr_assert_eq(r.kind, WIRE_WELCOME);
    wire_msg_clear(&r);
    /* Ids with quotes, backslashes, control bytes, and beyond the 64 bytes
     * the coordinator keeps: the status documents must stay well-formed. */
    char id[300];
    const int n = 300;
    for (int i = 0; i < n; i++) {
        int l = snprintf(id, sizeof id, "evil\"\\\x01\x7f\n%d-", i);
        memset(id + l, 'z', (size_t)(i % 250));
        id[l + i % 250] = 0;
        wire_msg m = {.kind = WIRE_HEARTBEAT, .client = id, .request_id = (uint64_t)i + 1};
        s_send_msg(&p, &m);
    }
    for (int i = 0; i < n; i++) {
        cr_assert(s_recv_msg(&p, 10, &r), "only %d of %d heartbeats answered", i, n);
        cr_assert_eq(r.kind, WIRE_HEARTBEAT_REPLY);
        wire_msg_clear(&r);
    }
    cr_assert_geq(harness_wait_status(&h, "\"workers\"", "known", n, 5), n);
    /* Both documents are rebuilt after the heartbeats; fetch fresh ones. */
    harness_sleep(0.1);
    size_t got;
    char *doc = s_http_req(h.http_port, "GET /status HTTP/1.0\r\n\r\n", &got);
    cr_assert_not_null(doc, "no /status");
    const char *body = strstr(doc, "\r\n\r\n");
    cr_assert(http_code(doc) == 200 && body, "%.80s", doc);
    cr_assert(json_valid(body + 4), "/status is not well-formed JSON with hostile ids");
    cr_assert(strstr(body, "evil\\\"\\\\\\u0001"), "ids are escaped in /status");
    free(doc);
    doc = s_http_req(h.http_port, "GET /metrics HTTP/1.0\r\n\r\n", &got);
    cr_assert_not_null(doc);
    body = strstr(doc, "\r\n\r\n");
    cr_assert_not_null(body);
    /* Prometheus text: every line a comment or `name{labels} value`, none
     * broken by an id's control characters. */
    int lines = 0;
    char *save = NULL;
    for (char *l = strtok_r((char *)body + 4, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        lines++;
        cr_assert(l[0] == '#' || (l[0] >= 'a' && l[0] <= 'z'), "bad metrics line '%.60s'", l);
        for (const char *c = l; *c; c++)
            cr_assert((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f,
                      "control byte in metrics line '%.60s'", l);
    }
    cr_assert_gt(lines, 2 * n);
    free(doc);
    /* `kz status` prints the ids, roles and hosts for a person: no control
     * characters reach the terminal. */
    char url[64], out[1 << 17];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/status", h.http_port);
    const char *argv[] = {"kz", "status", url, NULL};
    int st = s_run_fd(argv, 1, out, sizeof out);
    cr_assert_eq(st, 0, "kz status: %d", st);
    cr_assert(strstr(out, "esc?[2J") && strstr(out, "evil"), "%.300s", out);
    for (const char *c = out; *c; c++)
        cr_assert(*c == '\n' || ((unsigned char)*c >= 0x20 && *c != 0x7f),
                  "control byte 0x%02x in kz status output", (unsigned char)*c);
    s_peer_close(&p);
    s_assert_still_serving(&h, 7000);
    s_assert_clean_stop(&h);
    harness_fini(&h);
}

/* A stream of fresh client ids (each message another id) used to grow the
 * worker table and /status without bound (16 MB of JSON rebuilt every 250 ms
 * after 50000 ids). Now at most max_clients are tracked. */
Test(hostile, coordinator_tracks_at_most_max_clients)
{
    harness h;
    harness_init(&h, "hostile-cap");
    const char *extra[] = {"--max_clients=64", "--max_msg_bytes=65536",
                           "--max_record_bytes=32768", NULL};
    harness_coord_start(&h, extra);
    peer p;
    s_peer_open(&p, &h);
    wire_msg r = {0};
    char id[32];
    /* Step 1. 200 ids at once: all answered, 64 tracked, the rest refused a
     * job (every tracked one is live). */
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof id, "flood-%d", i);
        wire_msg m = {.kind = WIRE_JOB_REQUEST, .client = id, .request_id = (uint64_t)i + 1,
                      .u.job_request = {1, 0, NULL, 0}};
        s_send_msg(&p, &m);
    }
    int jobs = 0, refused = 0;
    for (int i = 0; i < 200; i++) {
        cr_assert(s_recv_msg(&p, 10, &r), "only %d of 200 job requests answered", i);
        if (r.kind == WIRE_JOB)
            jobs++;
        else if (r.kind == WIRE_ERROR && r.u.error.code == WIRE_ERR_INTERNAL &&
                 strstr(r.u.error.message, "too many clients"))
            refused++;
        wire_msg_clear(&r);
    }
    cr_assert_eq(jobs, 64);
    cr_assert_eq(refused, 200 - 64);
    cr_assert_eq(harness_wait_status(&h, "\"workers\"", "refused", 136, 5), 136);
    cr_assert_eq(harness_status_num(&h, "\"workers\"", "known"), 64);
    /* Step 2. Once they are gone (expiry_ms 2000), new ids take their place. */
    double end = time_now() + 10;
    while (harness_status_num(&h, "\"workers\"", "live") > 0 && time_now() < end)
        harness_sleep(0.05);
    cr_assert_eq(harness_status_num(&h, "\"workers\"", "live"), 0,
                 "the flood's clients never expired");
    wire_msg m = {.kind = WIRE_JOB_REQUEST, .client = "latecomer", .request_id = 999,
                  .u.job_request = {1, 0, NULL, 0}};
    s_send_msg(&p, &m);
    cr_assert(s_recv_msg(&p, 10, &r));
    cr_assert_eq(r.kind, WIRE_JOB, "a new client after the flood expired got %s",
                 wire_kind_name(r.kind));
    wire_msg_clear(&r);
    cr_assert_eq(harness_wait_status(&h, "\"workers\"", "forgotten", 1, 5), 1);
    cr_assert_eq(harness_status_num(&h, "\"workers\"", "known"), 64);
    s_peer_close(&p);
    s_assert_still_serving(&h, 9000);
    s_assert_clean_stop(&h);
    harness_fini(&h);
}

/* --- the status port ---------------------------------------------------------------- */

Test(hostile, status_port_refuses_what_it_does_not_serve)
{
    harness h;
    harness_init(&h, "hostile-http");
    harness_coord_start(&h, s_small_caps);
    size_t got;
    char *a;
    /* Step 1. Unknown paths, other methods, a body, malformed request lines. */
    struct {
        const char *req; /* the request */
        int lo, hi;      /* acceptable status codes; 0 = the server may just close */
    } cases[] = {
        {"GET /nope HTTP/1.0\r\n\r\n", 404, 404},
        {"GET /status/../../etc/passwd HTTP/1.0\r\n\r\n", 400, 404},
        {"GET /healthz?x=1 HTTP/1.0\r\n\r\n", 200, 200},
        {"POST /status HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello", 405, 405},
        {"DELETE /status HTTP/1.0\r\n\r\n", 405, 405},
        {"PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 405, 405},
        {"BREW /coffee HTCPCP/1.0\r\n\r\n", 0, 505},
        {"GET\r\n\r\n", 0, 499},
        {"\r\n\r\n", 0, 499},
        {"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, 499},
        {"GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 0, 499},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        a = s_http_req(h.http_port, cases[i].req, &got);
        cr_assert_not_null(a, "connection refused on case %zu", i);
        int code = http_code(a);
        cr_assert((code == 0 && cases[i].lo == 0) || (code >= cases[i].lo && code <= cases[i].hi),
                  "case %zu (%.30s): status %d", i, cases[i].req, code);
        free(a);
    }
    /* Step 2. A huge URL and a huge header: refused (or the connection
     * closed), never a crash. */
    size_t big = 256 * 1024;
    char *req = malloc(big + 64);
    cr_assert_not_null(req);
    int n = snprintf(req, 64, "GET /");
    memset(req + n, 'a', big);
    n += (int)big;
    n += snprintf(req + n, 64, " HTTP/1.0\r\n\r\n");
    a = s_http_raw(h.http_port, req, (size_t)n, &got);
    cr_assert(a == NULL || http_code(a) == 0 || http_code(a) >= 400,
              "a 256 KiB URL got %d", http_code(a));
    free(a);
    n = snprintf(req, 64, "GET /status HTTP/1.0\r\nX-Junk: ");
    memset(req + n, 'b', big);
    n += (int)big;
    n += snprintf(req + n, 64, "\r\n\r\n");
    a = s_http_raw(h.http_port, req, (size_t)n, &got);
    cr_assert(a == NULL || http_code(a) == 0 || http_code(a) >= 400,
              "a 256 KiB header got %d", http_code(a));
    free(a);
    /* Step 3. Binary garbage, and connections opened and abandoned. */
    rng_t rng;
    rng_seed(&rng, 5);
    for (int i = 0; i < 20; i++) {
        size_t len = 1 + rng_below(&rng, 4000);
        for (size_t k = 0; k < len; k++)
            req[k] = (char)rng_next(&rng);
        a = s_http_raw(h.http_port, req, len, &got);
        free(a);
    }
    free(req);
    int idle[16];
    for (int i = 0; i < 16; i++) {
        idle[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {0};
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)h.http_port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        cr_assert_eq(connect(idle[i], (struct sockaddr *)&sa, sizeof sa), 0);
        if (i % 2)
            cr_assert_eq(send(idle[i], "GET /sta", 8, MSG_NOSIGNAL), 8); /* half a request */
    }
    char body[256];
    cr_assert_eq(harness_http(h.http_port, "/healthz", body, sizeof body), 200,
                 "/healthz with 16 idle connections open");
    for (int i = 0; i < 16; i++)
        close(idle[i]);
    /* Step 4. Still serving, documents intact. */
    a = s_http_req(h.http_port, "GET /status HTTP/1.0\r\n\r\n", &got);
    cr_assert_eq(http_code(a), 200);
    cr_assert(json_valid(strstr(a, "\r\n\r\n") + 4));
    free(a);
    s_assert_still_serving(&h, 8000);
    s_assert_clean_stop(&h);
    harness_fini(&h);
}

/* --- bad flags and files ---------------------------------------------------------- */

/* Runs KZ_BIN_DIR/argv[0] with argv (stdin /dev/null, KZ_LOG unset: a test
 * run's KZ_LOG must not change what is printed) for at most 60 s; returns its
 * exit status (128 + signal when killed) with stderr in err (NUL-terminated)
 * and stdout discarded. */
static int s_run(const char *const *argv, char *err, size_t cap)
{
    return s_run_fd(argv, 2, err, cap);
}

static int s_run_fd(const char *const *argv, int fd, char *buf, size_t cap)
{
    char bin[512];
    harness_bin(bin, sizeof bin, argv[0]);
    char *args[64] = {bin};
    for (int i = 1; argv[i]; i++) {
        cr_assert_lt(i, 63);
        args[i] = (char *)argv[i];
        args[i + 1] = NULL;
    }
    proc_opts opts = {.quiet_log = true, .timeout_s = 60};
    proc_output o;
    int st = proc_capture(args, &opts, &o);
    snprintf(buf, cap, "%s", fd == 1 ? o.out : o.err);
    proc_output_free(&o);
    return st;
}

/* Lines in s (a last line without '\n' counts). */
static int s_lines(const char *s)
{
    int n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '\n';
    return n + (*s && s[strlen(s) - 1] != '\n');
}

/* argv (NULL-terminated, argv[0] a binary name) must fail with status 2 and
 * exactly one line on stderr that mentions `needle` (NULL: anything). */
static void s_expect_one_line(const char *const *argv, const char *needle)
{
    char err[8192], cmd[600] = "";
    for (int i = 0; argv[i]; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
    int st = s_run(argv, err, sizeof err);
    cr_expect(st == 2, "`%s`: exit status %d (128 + N: killed by signal N), stderr:\n%s", cmd,
              st, err);
    cr_expect_eq(s_lines(err), 1, "`%s`: %d lines on stderr:\n%s", cmd, s_lines(err), err);
    if (needle)
        cr_expect(strstr(err, needle), "`%s`: stderr does not mention '%s': %s", cmd, needle,
                  err);
}

#define EXPECT_ONE_LINE(needle, ...)                                 \
    do {                                                             \
        const char *const argv_[] = {__VA_ARGS__, NULL};             \
        s_expect_one_line(argv_, needle);                            \
    } while (0)

/* Bad files of every kind, in dir: garbage, a truncated, a bit-flipped and a
 * future-format model, a config with an unknown key, binary bytes, an
 * out-of-range value, a record file cut short. */
typedef struct bad_files {
    char dir[64];         /* the temp directory (also a path that is a directory) */
    char missing[96];     /* does not exist */
    char garbage[96];     /* random bytes */
    char trunc_model[96]; /* a model file cut in half */
    char flip_model[96];  /* a model file with one payload byte changed */
    char ver_model[96];   /* a model file of format version 3 (unknown) */
    char good_model[96];  /* a valid tiny model */
    char unk_conf[96];    /* config with an unknown key */
    char bin_conf[96];    /* config of binary bytes */
    char range_conf[96];  /* config with heartbeat_ms = 1 */
    char trunc_rec[96];   /* a record file cut inside a record */
} bad_files;

static void s_write(const char *path, const void *data, size_t len)
{
    cr_assert_eq(file_write_atomic(path, data, len), 0, "cannot write %s", path);
}

static void s_bad_files(bad_files *b)
{
    snprintf(b->dir, sizeof b->dir, "/tmp/kz-hostile-files-XXXXXX");
    cr_assert_not_null(mkdtemp(b->dir));
#define P(field, name) snprintf(b->field, sizeof b->field, "%s/" name, b->dir)
    P(missing, "missing.conf");
    P(garbage, "garbage.bin");
    P(trunc_model, "trunc.kzm");
    P(flip_model, "flip.kzm");
    P(ver_model, "ver.kzm");
    P(good_model, "good.kzm");
    P(unk_conf, "unknown.conf");
    P(bin_conf, "binary.conf");
    P(range_conf, "range.conf");
    P(trunc_rec, "trunc.rec");
#undef P
    rng_t rng;
    rng_seed(&rng, 3);
    uint8_t junk[3000];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rng_next(&rng);
    s_write(b->garbage, junk, sizeof junk);
    s_write(b->bin_conf, junk, sizeof junk);
    s_write(b->unk_conf, "# ok\nno_such_key = 5\n", 21);
    s_write(b->range_conf, "heartbeat_ms = 1\n", 17);
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 4;
    model *m = model_new(&a, 1);
    cr_assert_not_null(m);
    uint8_t *blob;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
    model_destroy(&m);
    s_write(b->good_model, blob, len);
    s_write(b->trunc_model, blob, len / 2);
    blob[len / 2] ^= 0x40;
    s_write(b->flip_model, blob, len);
    blob[len / 2] ^= 0x40;
    blob[8] = 3; /* 1 and 2 are read (2: the WDL head, derived planes) */
    s_write(b->ver_model, blob, len);
    free(blob);
    size_t rlen;
    uint8_t *rec = s_valid_record(9, &rlen);
    uint8_t file[4096] = {'K', 'Z', 'R', 'E', 'C', 0, 1, 0, (uint8_t)rlen, (uint8_t)(rlen >> 8)};
    cr_assert_lt(rlen / 2, sizeof file - 12);
    memcpy(file + 12, rec, rlen / 2);
    s_write(b->trunc_rec, file, 12 + rlen / 2);
    free(rec);
}

static void s_bad_files_remove(const bad_files *b)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", b->dir);
    cr_assert_eq(system(cmd), 0);
}

Test(hostile, kz_commands_refuse_bad_flags_with_one_line)
{
    EXPECT_ONE_LINE("unknown command", "kz", "no-such-command");
    const char *cmds[] = {"perft", "moves", "show", "random-game", "selfplay", "records",
                          "eval", "match", "analyse", "play", "status", "loadgen", "store",
                          "serve"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        EXPECT_ONE_LINE("--no-such-flag", "kz", cmds[i], "--no-such-flag");
        EXPECT_ONE_LINE("--no-such-flag", "kz", cmds[i], "--no-such-flag=3");
    }
    const char *model_cmds[] = {"init", "info", "dump"};
    for (size_t i = 0; i < 3; i++)
        EXPECT_ONE_LINE("--no-such-flag", "kz", "model", model_cmds[i], "--no-such-flag");
    EXPECT_ONE_LINE("unknown subcommand", "kz", "model", "bogus");
    /* Missing values. */
    EXPECT_ONE_LINE("--seed", "kz", "random-game", "--seed");
    EXPECT_ONE_LINE("--games", "kz", "selfplay", "--games");
    EXPECT_ONE_LINE("--games", "kz", "match", "random", "random", "--games");
    EXPECT_ONE_LINE("--games", "kz", "loadgen", "--games");
    EXPECT_ONE_LINE("--data_dir", "kz", "store", "--data_dir");
    EXPECT_ONE_LINE("--position", "kz", "moves", "--position");
    EXPECT_ONE_LINE("--sims", "kz", "analyse", "--sims");
    EXPECT_ONE_LINE("--position", "kz", "perft", "--position");
    EXPECT_ONE_LINE("--position", "kz", "show", "--position");
    EXPECT_ONE_LINE("--game", "kz", "records", "--game");
    EXPECT_ONE_LINE("--blocks", "kz", "model", "init", "--blocks");
    EXPECT_ONE_LINE("--position", "kz", "eval", "--position");
    EXPECT_ONE_LINE("--color", "kz", "play", "--color");
    EXPECT_ONE_LINE("--player", "kz", "analyse", "--player");
    EXPECT_ONE_LINE("--seed", "kz", "match", "random", "random", "--seed");
    /* Out of range or malformed values. */
    EXPECT_ONE_LINE("DEPTH", "kz", "perft", "0");
    EXPECT_ONE_LINE("DEPTH", "kz", "perft", "99999999999999999999");
    EXPECT_ONE_LINE("--seed", "kz", "random-game", "--seed=-1");
    EXPECT_ONE_LINE("--games", "kz", "selfplay", "--games=0");
    EXPECT_ONE_LINE("--sims", "kz", "selfplay", "--sims=1e9");
    EXPECT_ONE_LINE("--epsilon", "kz", "selfplay", "--epsilon=nan");
    EXPECT_ONE_LINE("--games", "kz", "match", "random", "random", "--games=0");
    EXPECT_ONE_LINE("--sprt", "kz", "match", "random", "random", "--sprt=35,0");
    EXPECT_ONE_LINE("--blocks", "kz", "model", "init", "--blocks=999", "/tmp/never.kzm");
    EXPECT_ONE_LINE("--filters", "kz", "model", "init", "--filters=0", "/tmp/never.kzm");
    EXPECT_ONE_LINE("--game", "kz", "records", "--game=0", "x.rec");
    EXPECT_ONE_LINE("--color", "kz", "play", "--color=x");
    EXPECT_ONE_LINE("--sims", "kz", "play", "--sims=0");
    EXPECT_ONE_LINE("unknown player", "kz", "analyse", "--player=nope");
    EXPECT_ONE_LINE("--openings", "kz", "match", "random", "random", "--openings=-1");
    EXPECT_ONE_LINE("--parallel", "kz", "selfplay", "--parallel=0");
    /* An unknown game, wherever a game is chosen: one line naming the games. */
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "perft", "--game=nogame", "1");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "moves", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "show", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "random-game", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "selfplay", "--game=nogame", "--games=1",
                    "--out=/tmp/never.rec");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "model", "init", "--game=nogame",
                    "/tmp/never.kzm");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "match", "random", "random", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "analyse", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "play", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz", "serve", "--game=nogame", "--model=uniform");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz-coordinator", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz-worker", "--game=nogame");
    EXPECT_ONE_LINE("unknown game 'nogame'", "kz-trainer", "--game=nogame");
    EXPECT_ONE_LINE("--fpu", "kz", "selfplay", "--fpu=3");
    EXPECT_ONE_LINE("--threads", "kz", "eval", "--threads=0", "x.kzm");
    EXPECT_ONE_LINE("workers", "kz", "loadgen", "--workers=0");
    EXPECT_ONE_LINE("repeat", "kz", "loadgen", "--repeat=2");
    EXPECT_ONE_LINE("endpoint", "kz", "loadgen", "--endpoint=garbage");
    EXPECT_ONE_LINE("endpoint", "kz", "loadgen", "--endpoint=tcp://127.0.0.1:99999");
    EXPECT_ONE_LINE("line", "kz", "status", "--line=maybe");
    EXPECT_ONE_LINE("position", "kz", "moves", "--position=bbbbbbbbbbbb.wwwwwwwwwwww x");
    EXPECT_ONE_LINE("7-99", "kz", "moves", "7-99");
    EXPECT_ONE_LINE("illegal", "kz", "moves", "0-1");
}

Test(hostile, kz_commands_refuse_bad_files_with_one_line)
{
    bad_files b;
    s_bad_files(&b);
    const char *models[] = {b.missing, b.dir, b.garbage, b.trunc_model, b.flip_model,
                            b.ver_model};
    const char *why[] = {"No such file", "directory", "not a model file", "truncated",
                         "checksum", "format version"};
    char flag[160], player[160];
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const char *f = models[i];
        snprintf(flag, sizeof flag, "--model=%s", f);
        snprintf(player, sizeof player, "policy:%s", f);
        EXPECT_ONE_LINE(why[i], "kz", "model", "info", f);
        EXPECT_ONE_LINE(why[i], "kz", "model", "dump", f);
        EXPECT_ONE_LINE(why[i], "kz", "eval", f);
        EXPECT_ONE_LINE(why[i], "kz", "selfplay", flag, "--games=1", "--out=/dev/null");
        EXPECT_ONE_LINE(why[i], "kz", "match", player, "random", "--games=1");
        EXPECT_ONE_LINE(why[i], "kz", "analyse", flag);
        EXPECT_ONE_LINE(why[i], "kz", "play", flag);
    }
    EXPECT_ONE_LINE("not a record file", "kz", "records", b.garbage);
    EXPECT_ONE_LINE("No such file", "kz", "records", b.missing);
    EXPECT_ONE_LINE("truncated", "kz", "records", b.trunc_rec);
    EXPECT_ONE_LINE("not a record file", "kz", "records", b.good_model);
    snprintf(flag, sizeof flag, "--data_dir=%s", b.garbage);
    EXPECT_ONE_LINE(NULL, "kz", "store", flag);
    s_bad_files_remove(&b);
}

/* kz-coordinator, kz-worker and kz-trainer: bad flags, bad config files, bad
 * model files. */
Test(hostile, daemons_refuse_bad_flags_and_files_with_one_line)
{
    bad_files b;
    s_bad_files(&b);
    const char *daemons[] = {"kz-coordinator", "kz-worker", "kz-trainer"};
    char c_missing[160], c_dir[160], c_unk[160], c_bin[160], c_range[160];
    snprintf(c_missing, sizeof c_missing, "--config=%s", b.missing);
    snprintf(c_dir, sizeof c_dir, "--config=%s", b.dir);
    snprintf(c_unk, sizeof c_unk, "--config=%s", b.unk_conf);
    snprintf(c_bin, sizeof c_bin, "--config=%s", b.bin_conf);
    snprintf(c_range, sizeof c_range, "--config=%s", b.range_conf);
    for (int i = 0; i < 3; i++) {
        const char *d = daemons[i];
        EXPECT_ONE_LINE("--no-such-flag", d, "--no-such-flag");
        EXPECT_ONE_LINE("--no-such-flag", d, "--no-such-flag=1");
        EXPECT_ONE_LINE("stray", d, "stray");
        EXPECT_ONE_LINE("--config", d, "--config");
        EXPECT_ONE_LINE(i ? "--endpoint" : "--bind", d, i ? "--endpoint" : "--bind");
        EXPECT_ONE_LINE("max_msg_bytes", d, "--max_msg_bytes=5");
        EXPECT_ONE_LINE("max_msg_bytes", d, "--max_msg_bytes=99999999999999999999");
        EXPECT_ONE_LINE("seed", d, "--seed=-1");
        EXPECT_ONE_LINE("game", d, "--game=chess");
        EXPECT_ONE_LINE("No such file", d, c_missing);
        EXPECT_ONE_LINE("directory", d, c_dir);
        EXPECT_ONE_LINE("no_such_key", d, c_unk);
        EXPECT_ONE_LINE(b.bin_conf, d, c_bin);
        if (i < 2)
            EXPECT_ONE_LINE("heartbeat_ms", d, c_range);
        EXPECT_ONE_LINE("endpoint", d, i ? "--endpoint=garbage" : "--bind=garbage");
        EXPECT_ONE_LINE("endpoint", d, i ? "--endpoint=tcp://h:0" : "--pub_bind=tcp://:5");
    }
    /* What only the coordinator reads. */
    EXPECT_ONE_LINE("http_bind", "kz-coordinator", "--http_bind=localhost");
    EXPECT_ONE_LINE("data_dir", "kz-coordinator", "--data_dir=/dev/null");
    EXPECT_ONE_LINE("sub_endpoint", "kz-worker", "--sub_endpoint=udp://x:1");
    {
    }
    /* Model files given to the daemons. */
    char data[160], ckdir[160], flag[160];
    snprintf(data, sizeof data, "--data_dir=%s/store", b.dir);
    snprintf(ckdir, sizeof ckdir, "--checkpoint_dir=%s/ckpt", b.dir);
    const char *models[] = {b.missing, b.dir, b.garbage, b.trunc_model, b.flip_model,
                            b.ver_model};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        snprintf(flag, sizeof flag, "--initial_model=%s", models[i]);
        EXPECT_ONE_LINE("initial_model", "kz-coordinator", data, flag, "--http_port=0",
                        "--bind=tcp://127.0.0.1:*", "--pub_bind=tcp://127.0.0.1:*");
        snprintf(flag, sizeof flag, "--init_model=%s", models[i]);
        EXPECT_ONE_LINE("init_model", "kz-trainer", ckdir, flag, "--endpoint=tcp://127.0.0.1:9");
    }
    /* A corrupted checkpoint in the trainer's directory. */
    char ck[160];
    snprintf(ck, sizeof ck, "%s/ckpt", b.dir);
    mkdir(ck, 0755);
    snprintf(ck, sizeof ck, "%s/ckpt/checkpoint.kzm", b.dir);
    s_write(ck, "KZMODEL\0garbage", 15);
    EXPECT_ONE_LINE("checkpoint", "kz-trainer", ckdir, "--endpoint=tcp://127.0.0.1:9");
    s_bad_files_remove(&b);
}

/* --- a full disk ------------------------------------------------------------------- */

static char s_mnt[128]; /* the tmpfs of the full-disk test ("" when none) */

/* The full-disk test's .fini: no process may keep the tmpfs busy, then it goes. */
static void s_unmount(void)
{
    harness_cleanup();
    if (s_mnt[0]) {
        umount2(s_mnt, MNT_DETACH);
        s_mnt[0] = 0;
    }
}

/* Fills the filesystem of dir with one file until it refuses more. */
static void s_fill(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    static uint8_t chunk[1 << 16];
    memset(chunk, 0x5a, sizeof chunk);
    size_t step = sizeof chunk;
    while (step) {
        ssize_t w = write(fd, chunk, step);
        if (w < 0) {
            cr_assert_eq(errno, ENOSPC, "filling: %s", strerror(errno));
            step /= 2; /* the last pages, to the byte */
        }
    }
    close(fd);
}

Test(hostile, full_disk_never_acknowledges_a_game_it_did_not_store, .fini = s_unmount)
{
    if (geteuid() != 0)
        cr_skip_test("not root: cannot mount the small tmpfs the full-disk test needs");
    harness h;
    harness_init(&h, "hostile-disk");
    snprintf(s_mnt, sizeof s_mnt, "%s/mnt", h.dir);
    cr_assert_eq(mkdir(s_mnt, 0755), 0);
    if (mount("kz-hostile", s_mnt, "tmpfs", 0, "size=3m") != 0) {
        int e = errno;
        s_mnt[0] = 0;
        harness_fini(&h);
        cr_skip_test("cannot mount a tmpfs here: %s", strerror(e));
    }
    char data[160], filler[160];
    snprintf(data, sizeof data, "--data_dir=%s/store", s_mnt);
    snprintf(filler, sizeof filler, "%s/filler", s_mnt);
    const char *extra[] = {data, "--map_mb=1", NULL};
    harness_coord_start(&h, extra);

    /* Step 1. Fill the disk, then submit games until the store has failed
     * several times. */
    s_fill(filler);
    void *zctx = zmq_ctx_new();
    client_config cfg;
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", h.endpoint);
    snprintf(cfg.client_id, sizeof cfg.client_id, "%s", "disk-full");
    cfg.role = "tool";
    cfg.timeout_ms = 300;
    client *c = client_new(zctx, &cfg);
    cr_assert_not_null(c);
    int submitted = 0;
    double end = time_now() + 20;
    while (harness_status_num(&h, "\"ingest\"", "store_errors") < 3 && time_now() < end) {
        size_t len;
        uint8_t *rec = s_valid_record(50000 + (uint64_t)submitted * 1000, &len);
        cr_assert_eq(client_submit_game(c, rec, len, 0), 0);
        free(rec);
        submitted++;
        for (int i = 0; i < 10; i++)
            client_poll(c, 10);
    }
    cr_assert_geq(harness_status_num(&h, "\"ingest\"", "store_errors"), 3,
                  "%d games stored on a full disk without one failure", submitted);
    client_stats st;
    client_get_stats(c, &st);
    /* Every acknowledgement stands for a stored game (an ack may still be on
     * its way: stored >= acked); the rest are held. */
    double stored = harness_status_num(&h, "\"replay\"", "games");
    cr_assert_eq(st.rejected, 0, "games rejected on a full disk");
    cr_assert_leq((double)st.acked, stored, "acked %llu, stored %.0f",
                  (unsigned long long)st.acked, stored);
    cr_assert_eq(st.acked + client_pending(c), (uint64_t)submitted);
    cr_assert_gt(client_pending(c), 0);
    char buf[256];
    cr_assert_eq(harness_http(h.http_port, "/healthz", buf, sizeof buf), 200);

    /* Step 2. Space again: the held games are resent and stored. */
    cr_assert_eq(unlink(filler), 0);
    end = time_now() + 30;
    while (client_pending(c) && time_now() < end)
        client_poll(c, 50);
    client_get_stats(c, &st);
    cr_assert_eq(client_pending(c), 0, "%zu games still unacknowledged after space came back",
                 client_pending(c));
    cr_assert_eq(st.acked, (uint64_t)submitted);
    cr_assert_eq(st.rejected, 0);
    cr_assert_eq(harness_wait_status(&h, "\"replay\"", "games", submitted, 5), submitted);
    client_destroy(&c);
    zmq_ctx_term(zctx);

    /* Step 3. Killed and restarted: every acknowledged game is there. */
    harness_coord_kill(&h, SIGKILL);
    harness_coord_start(&h, extra);
    cr_assert_eq(harness_wait_status(&h, "\"replay\"", "games", submitted, 5), submitted);
    s_assert_still_serving(&h, 90000);
    s_assert_clean_stop(&h);
    cr_assert_eq(umount(s_mnt), 0, "umount %s: %s", s_mnt, strerror(errno));
    s_mnt[0] = 0;
    harness_fini(&h);
}

/* --- kz status against a hostile server ---------------------------------------- */

/* A "status server" that answers 200 and then streams without end. */
static void *s_endless_server(void *arg)
{
    int lfd = *(int *)arg;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char req[1024];
    (void)recv(fd, req, sizeof req, 0);
    static char chunk[1 << 16];
    memset(chunk, ' ', sizeof chunk);
    const char *head = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\": ";
    if (send(fd, head, strlen(head), MSG_NOSIGNAL) > 0)
        while (send(fd, chunk, sizeof chunk, MSG_NOSIGNAL) > 0)
            ;
    close(fd);
    return NULL;
}

/* A server that answers without end used to grow kz status's buffer until
 * memory ran out; now the answer is capped (64 MiB) and the command fails
 * with one line. */
Test(hostile, kz_status_refuses_an_endless_answer)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t alen = sizeof a;
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    cr_assert_eq(listen(lfd, 1), 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, s_endless_server, &lfd), 0);
    char url[64], err[4096];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/status", ntohs(a.sin_port));
    const char *argv[] = {"kz", "status", url, NULL};
    int st = s_run(argv, err, sizeof err);
    cr_assert(st > 0 && st < 128, "kz status: %d, stderr: %s", st, err);
    cr_assert_eq(s_lines(err), 1, "stderr: %s", err);
    cr_assert(strstr(err, "64 MiB"), "stderr: %s", err);
    pthread_join(th, NULL);
    close(lfd);
}
