/* client: a coordinator client for workers, the trainer and tools. One DEALER
 * socket to the coordinator's ROUTER (requests) and an optional SUB socket to
 * its PUB (announcements of a new best model).
 *
 * Reliability (zguide ch. 4):
 *   - Lazy Pirate: every request carries a request id; a request without an
 *     answer for timeout_ms is resent, and when the coordinator has been
 *     silent that long the socket is closed and reopened (a fresh connection,
 *     Hello again, everything unanswered resent). Synchronous calls give up
 *     after `retries` attempts with KZ_ETIMEOUT; the caller decides whether to
 *     try again later.
 *   - Game submissions are asynchronous: client_submit_game copies the record
 *     into a bounded queue and sends it; it stays queued (and is resent every
 *     timeout_ms, forever) until the coordinator acknowledges it (stored, or
 *     already stored) or rejects it (invalid; never resent). This is what
 *     lets a worker outlive a coordinator restart without losing games.
 *   - Heartbeats: every heartbeat_ms (the coordinator's Welcome may change it)
 *     the client reports what it is doing (client_set_status); the replies
 *     carry the best version, and keep telling the client the coordinator is
 *     alive.
 * Everything happens inside client calls: call client_poll(c, 0) often (for
 * example between search steps), or client_poll(c, ms) to wait.
 *
 * A coordinator that speaks another protocol version answers with an Error;
 * the client then refuses every call with KZ_EVERSION and client_last_error()
 * says which versions (and the Hello logs it once).
 *
 * CurveZMQ (curve.h, docs/security.md): with cfg.curve (the default) both
 * sockets are CurveZMQ clients of the coordinator's public key
 * (curve_server_key) with this client's own key pair (curve_secret_key):
 * the traffic is encrypted and the coordinator knows which key speaks (its
 * allow-list names the key and its role; the id the coordinator files this
 * client under is the key's name, docs/protocol.md). A handshake that fails
 * (a key the coordinator does not admit, a wrong server key, one side
 * without CurveZMQ) is logged once with what to change, until one succeeds;
 * client_last_error() says it too. curve = false: plain, unauthenticated
 * connections (a warning, once per process).
 *
 * Ownership: the client borrows the ZeroMQ context (one per process) and
 * copies everything else it keeps. Replies returned by pointer are borrowed
 * until the next client call. Threads: a client belongs to one thread. */
#ifndef KZ_CLIENT_H
#define KZ_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "net/wire.h"

typedef struct client client;

typedef struct client_config {
    char endpoint[CONFIG_STR_MAX];     /* coordinator ROUTER (required) */
    char sub_endpoint[CONFIG_STR_MAX]; /* coordinator PUB, "" none */
    char client_id[CONFIG_STR_MAX];    /* stable id; "" = "<host>-<pid>-<random>" */
    const char *role;          /* "worker", "trainer", "tool" */
    const char *game;          /* game module name sent in Hello */
    uint32_t slots;            /* games played at once, sent in Hello */
    int timeout_ms;            /* wait for an answer before resending (> 0) */
    int retries;               /* attempts of a synchronous call (>= 1); 2: every caller
                                  tries again later on KZ_ETIMEOUT (the worker after a
                                  pause, the trainer in its wait loop), so this only says
                                  how long one call blocks its thread (a worker's games
                                  stand still meanwhile): one resend on a fresh
                                  connection covers a lost message or a restart */
    int heartbeat_ms;          /* heartbeat period until the Welcome says otherwise */
    size_t max_msg_bytes;      /* ZMQ_MAXMSGSIZE on inbound messages */
    size_t max_pending;        /* unacknowledged games held at most */
    uint32_t protocol_version; /* 0 = WIRE_PROTOCOL_VERSION (others: tests only) */
    bool curve;                /* CurveZMQ: encrypted and authenticated (false: plain) */
    char curve_server_key[CONFIG_STR_MAX]; /* with curve: the coordinator's public key file */
    char curve_secret_key[CONFIG_STR_MAX]; /* with curve: this client's secret key file */
} client_config;

/* Counters since client_new. */
typedef struct client_stats {
    uint64_t submitted;      /* games queued by client_submit_game */
    uint64_t acked;          /* acknowledged (stored now or before) */
    uint64_t duplicates;     /* of which the coordinator already had */
    uint64_t rejected;       /* refused as invalid (see by_reason) */
    uint64_t rejected_by_reason[16]; /* indexed by RejectReason, last bucket = other */
    uint64_t resent;         /* submissions sent again */
    uint64_t reconnects;     /* sockets reopened */
    uint64_t timeouts;       /* synchronous calls that gave up */
    uint64_t announcements;  /* new-best announcements received */
} client_stats;

/* Defaults: role "worker", no game ("": a program sets the game it plays,
 * which its hello names), 1 slot, and the text defaults of client_options
 * and client_worker_options: endpoint tcp://127.0.0.1:5555 (the
 * coordinator's default bind), no announcements, an automatic id, timeout
 * 3000 ms, 2 attempts, heartbeat 1000 ms, 64 MiB messages, 1024 pending
 * games, curve on (its two key files still to name). */
void client_config_default(client_config *cfg);

/* Checks the CurveZMQ settings without connecting: with cfg->curve, libzmq
 * has CurveZMQ and both key files are named, readable and hold keys (the
 * secret one private). 0, or an error with one line in err naming the
 * setting. client_new does the same; programs call it first to exit with
 * that line. */
int client_check_keys(const client_config *cfg, char *err, size_t errlen);

/* The connection's settings rows (config.h), over a client_config: endpoint,
 * client_id, timeout_ms, retries, heartbeat_ms, max_msg_bytes, curve,
 * curve_server_key, curve_secret_key. Programs that
 * talk to the coordinator list this group (kz-worker, kz-trainer); a program
 * that plays games lists client_worker_options too: sub_endpoint (new-best
 * announcements) and max_pending (games held until acknowledged). role,
 * game, slots and protocol_version are the program's to set. Their text
 * defaults are the one place the connection's defaults are written
 * (client_config_default() reads them). */
extern const config_option client_options[];
extern const size_t client_options_n; /* rows in client_options */
extern const config_option client_worker_options[];
extern const size_t client_worker_options_n; /* rows in client_worker_options */

/* Connects (asynchronously: it does not wait for the coordinator). NULL with
 * a logged reason on bad configuration or socket failure. zctx is borrowed and
 * must outlive the client. */
client *client_new(void *zctx, const client_config *cfg);
/* Closes the sockets and frees everything, including unacknowledged games
 * (see client_pending first). NULL-safe; sets *c to NULL. */
void client_destroy(client **c);

/* The client's id (as sent in every envelope). Borrowed. */
const char *client_id(const client *c);

/* Generic synchronous request (Lazy Pirate). Sets req's version, request id
 * and client, sends it, and waits for the answer. Returns
 *   0             *reply is the answer (any kind but WIRE_ERROR);
 *   KZ_EREJECTED  the coordinator answered with an Error (*reply holds it,
 *                 client_last_error() its message; KZ_ENOTFOUND for not-found);
 *   KZ_EVERSION   the coordinator refused our protocol version;
 *   KZ_ETIMEOUT   no answer after `retries` attempts of timeout_ms;
 *   KZ_EINVAL     req could not be encoded.
 * *reply is borrowed until the next client call. */
int client_call(client *c, wire_msg *req, const wire_msg **reply);

/* Worker: asks for a job. `req` says how many games could start and which
 * arena slots are still in hand (the coordinator releases the others).
 * *job is borrowed until the next client call. Errors as client_call. */
int client_get_job(client *c, const wire_job_request *req, const wire_job **job);

/* Fetches model `version` (0 = the best), checks the blob against its
 * checksum, and returns a copy the caller owns (free()). *info (optional)
 * receives the metadata (its blob/game pointers borrowed until the next call).
 * KZ_ENOTFOUND for an unknown version, KZ_ECORRUPT for a checksum mismatch
 * (or, with expect_checksum != 0, a different one), else as client_call. */
int client_get_model(client *c, uint32_t version, uint64_t expect_checksum, uint8_t **blob,
                     size_t *len, wire_model_reply *info);

/* Queues a serialized GameRecord (copied) for submission and sends it.
 * arena_slot: the Job's slot for arena games, else 0. Returns 0, KZ_EFULL
 * when max_pending games await acknowledgement (poll, then try again),
 * KZ_EINVAL for an empty or too large record, KZ_EVERSION when refused. */
int client_submit_game(client *c, const uint8_t *record, size_t len, uint32_t arena_slot);
/* Games submitted and not yet acknowledged or rejected. */
size_t client_pending(const client *c);

/* Trainer: `size` samples drawn uniformly from the replay window (n = 0 in
 * the reply when the window holds fewer than min_positions). *batch is
 * borrowed until the next client call. Errors as client_call. */
int client_get_batch(client *c, uint32_t size, uint64_t min_positions,
                     const wire_batch_reply **batch);
/* The same, asking with `aux` for the samples' auxiliary targets too
 * (batch->aux; a coordinator that stores none sends none). */
int client_get_batch_aux(client *c, uint32_t size, uint64_t min_positions, bool aux,
                         const wire_batch_reply **batch);
/* Trainer: registers a candidate model (the checksum is computed here).
 * Idempotent: the same blob again gets the same version. *ack optional. */
int client_submit_candidate(client *c, const uint8_t *blob, size_t len, uint32_t parent_version,
                            uint64_t trainer_step, wire_candidate_ack *ack);
/* Trainer: reports losses and speed (synchronous). */
int client_report_stats(client *c, const wire_trainer_stats *stats);

/* What the next heartbeats report (copied; slots may be NULL when n is 0). */
void client_set_status(client *c, uint32_t games_in_flight, uint64_t games_done,
                       uint32_t arena_candidate, const uint32_t *arena_slots, size_t n);
/* The network the client plays with now (0 none) and its search speed
 * (simulations per second, recently), for the next heartbeats (the
 * coordinator's worker table). */
void client_set_engine(client *c, uint32_t model_version, float sims_per_s);

/* Services the sockets for up to timeout_ms (0: only what is ready now):
 * receives acknowledgements and announcements, resends what timed out,
 * reconnects a silent coordinator, sends heartbeats. Returns 0, or
 * KZ_EVERSION once the coordinator has refused our protocol version. */
int client_poll(client *c, int timeout_ms);

/* The best model version last heard of (Welcome, heartbeat reply, job or
 * announcement); 0 before any. */
uint32_t client_best_version(const client *c);
/* True once per new best announced over PUB since the last call; fills *out. */
bool client_next_announcement(client *c, wire_announcement *out);
/* True when the coordinator answered anything within the last timeout_ms *
 * retries (or since the last reconnect). */
bool client_connected(const client *c);
/* The coordinator's last Welcome (zeroed before one); strings borrowed. */
const wire_welcome *client_welcome(const client *c);
/* The last error message received or produced ("" if none). Borrowed. */
const char *client_last_error(const client *c);
/* Whether the coordinator refuses this client's key: the last handshake
 * was refused (its key is not in allow_keys: ZAP, logged with what to do),
 * or the last call's answer was the Error FORBIDDEN (the key's role may not
 * make that request, or the key was dropped from allow_keys); a later
 * success clears it. client_last_error() says why. Nothing the client can
 * do changes it: a program that needs the refused request stops. */
bool client_key_refused(const client *c);
/* Makes synchronous calls give up with EINTR as soon as *flag is non-zero
 * (a program's stop flag, set by its signal handler), instead of waiting out
 * their retries. NULL (the default) turns it off. The flag is borrowed. */
void client_set_interrupt(client *c, volatile sig_atomic_t *flag);
/* Called once for every game acknowledged by the coordinator (stored now,
 * or already stored: duplicate), with the record as submitted (borrowed for
 * the call) and its sequence in the store; not for rejected games. For a
 * ledger of what the coordinator promised to keep (kz loadgen --ledger, the
 * fault suite). Runs inside client calls, on the client's thread. */
typedef void (*client_ack_fn)(void *ctx, const uint8_t *record, size_t len, bool duplicate,
                              uint64_t sequence);
/* Sets (fn NULL: removes) the acknowledgement hook; ctx is borrowed. */
void client_set_ack_hook(client *c, client_ack_fn fn, void *ctx);
/* Counters. */
void client_get_stats(const client *c, client_stats *out);

#endif
