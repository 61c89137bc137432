/* client: DEALER/SUB client of the coordinator with Lazy Pirate retries,
 * heartbeats and an acknowledged game queue. See client.h. */
#include "net/client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "net/curve.h"
#include "games/game.h"
#include "common/util.h"

/* A submitted game waiting for its acknowledgement. */
typedef struct pending_game {
    uint64_t request_id; /* id of its GameSubmit (kept across resends) */
    uint8_t *record;     /* (len) owned copy of the serialized record */
    size_t len;          /* bytes in record */
    uint32_t arena_slot; /* arena slot, 0 for self-play */
    double sent_at;      /* time_now() of the last send, 0 = never sent */
    double due;          /* time_now() when it is resent unless answered */
    int sends;           /* times sent */
} pending_game;

/* Resend backoff of a game: timeout, then doubling up to 8 timeouts, so that
 * an overloaded coordinator is not buried under copies of its backlog. */
static double s_resend_after(const client *c, int sends);

struct client {
    void *zctx;                  /* borrowed ZeroMQ context */
    volatile sig_atomic_t *interrupt; /* borrowed stop flag, NULL none (client_set_interrupt) */
    client_ack_fn on_ack;        /* called for each acknowledged game, NULL none */
    void *on_ack_ctx;            /* its context, borrowed */
    void *dealer;                /* requests, owned */
    void *sub;                   /* announcements, owned, NULL without sub_endpoint */
    void *mon;                   /* the DEALER's handshake events (PAIR), owned, or NULL */
    unsigned mon_n;              /* monitors made (their inproc endpoints differ) */
    curve_keypair kp;            /* with cfg.curve: this client's keys */
    char server_key[CURVE_KEY_TEXT]; /* with cfg.curve: the coordinator's public key */
    int handshake_said;          /* the handshake failure last logged (0 none since a success) */
    int handshake_lost;          /* handshakes failed without a reason since a success */
    char handshake_why[400];     /* why the handshakes fail ("" since a success) */
    client_config cfg;           /* configuration (role, game point into ours below) */
    char id[128];                /* client id */
    char role[32];               /* Hello role */
    char game[32];               /* Hello game */
    uint64_t next_request_id;    /* next id to hand out */
    uint64_t hello_id;           /* request id of the outstanding Hello, 0 none */
    double first_unanswered;     /* time of the first send since the last receive, 0 none */
    double last_recv;            /* time of the last message from the coordinator */
    double last_reconnect;       /* time of the last (re)connect */
    double last_heartbeat;       /* time the last heartbeat was sent */
    int heartbeat_ms;            /* current heartbeat period */
    bool refused;                /* the coordinator refused our protocol version */
    bool forbidden;              /* the last call's answer was Error FORBIDDEN (the key's role
                                    or a key dropped from allow_keys) */
    pending_game *pending;       /* (cfg.max_pending) slots, len == 0 when free */
    size_t n_pending;            /* occupied slots */
    wire_buf tx;                 /* encode buffer */
    wire_msg reply;              /* last synchronous reply (borrowed out) */
    wire_msg scratch;            /* asynchronous messages, cleared after handling */
    uint64_t waiting_id;         /* request id client_call waits for, 0 none */
    bool got_reply;              /* client_call's answer arrived (in reply) */
    wire_welcome welcome;        /* last Welcome; strings point to the buffers below */
    char welcome_coord[128];     /* welcome.coordinator */
    char welcome_game[32];       /* welcome.game */
    uint64_t instance;           /* coordinator instance last seen */
    uint32_t best_version;       /* best version last heard of */
    bool has_announcement;       /* an announcement waits for client_next_announcement */
    wire_announcement announcement; /* the latest one */
    uint32_t st_in_flight;       /* status for heartbeats */
    uint64_t st_done;            /* games finished */
    uint32_t st_arena;           /* arena candidate in hand */
    uint32_t *st_slots;          /* (cap_slots) arena slots in hand */
    size_t n_st_slots;           /* entries used */
    uint32_t st_model;           /* network in use, for heartbeats */
    float st_speed;              /* search speed, for heartbeats */
    size_t cap_slots;            /* entries allocated */
    char last_error[256];        /* last error message */
    client_stats stats;          /* counters */
};

static void s_set_error(client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_set_error(client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(c->last_error, sizeof c->last_error, 0, fmt, ap);
    va_end(ap);
}

#define CONFIG_STRUCT client_config
const config_option client_options[] = {
    CONFIG_ROW_STRING(endpoint, "tcp://127.0.0.1:5555",
                      "coordinator request endpoint (its ROUTER)"),
    CONFIG_ROW_STRING(client_id, "", "stable client id (\"\" = <host>-<pid>-<random>)"),
    CONFIG_ROW_INT32(timeout_ms, "3000", 10, 600000,
                     "wait for an answer before resending (Lazy Pirate)"),
    CONFIG_ROW_INT32(retries, "2", 1, 100,
                     "attempts of a request before giving up for now (the program tries again "
                     "later)"),
    CONFIG_ROW_INT32(heartbeat_ms, "1000", 10, 600000,
                     "heartbeat period (until the coordinator says otherwise)"),
    CONFIG_ROW_SIZE(max_msg_bytes, "67108864", 65536, 2147483647,
                    "largest inbound message (must hold a model blob)"),
    CONFIG_ROW_BOOL(curve, "true",
                    "CurveZMQ: encrypted, and authenticated by this client's key (false: plain "
                    "and unauthenticated, for a coordinator with curve = false)"),
    CONFIG_ROW_STRING(curve_server_key, "",
                      "with curve: the coordinator's public key file (its NAME.pub from kz "
                      "keygen)"),
    CONFIG_ROW_STRING(curve_secret_key, "",
                      "with curve: this client's secret key file (NAME.key from kz keygen, mode "
                      "0600; its public key must be in the coordinator's allow_keys)"),
};
const size_t client_options_n = sizeof client_options / sizeof client_options[0];

const config_option client_worker_options[] = {
    CONFIG_ROW_STRING(sub_endpoint, "", "coordinator announcement endpoint (its PUB); \"\" = none"),
    CONFIG_ROW_SIZE(max_pending, "1024", 1, 1000000, "games held until acknowledged"),
};
#undef CONFIG_STRUCT
const size_t client_worker_options_n =
    sizeof client_worker_options / sizeof client_worker_options[0];

void client_config_default(client_config *cfg)
{
    /* The fields without a row; a program says which game it plays. */
    *cfg = (client_config){.role = "worker", .game = "", .slots = 1, .protocol_version = 0};
    config_defaults(client_options, client_options_n, cfg);
    config_defaults(client_worker_options, client_worker_options_n, cfg);
}

/* Reads the key files of cfg into kp and server (either may be NULL). */
static int s_read_keys(const client_config *cfg, curve_keypair *kp, char *server, char *err,
                       size_t errlen)
{
    if (!cfg->curve)
        return 0;
    if (!curve_available())
        return err_set(err, errlen, KZ_EINVAL, "curve: this libzmq was built without CurveZMQ "
                       "(set curve = false on every program, or install a libzmq with it)");
    if (!cfg->curve_server_key[0])
        return err_set(err, errlen, KZ_EINVAL, "curve_server_key: not set: name the "
                       "coordinator's public key file (its .pub from kz keygen), or set curve = "
                       "false for a coordinator without CurveZMQ");
    if (!cfg->curve_secret_key[0])
        return err_set(err, errlen, KZ_EINVAL, "curve_secret_key: not set: make this client a "
                       "key pair with kz keygen NAME and name NAME.key here (and add NAME.pub to "
                       "the coordinator's allow_keys), or set curve = false");
    char why[400], pub[CURVE_KEY_TEXT];
    curve_keypair own;
    int rc = curve_read_public(cfg->curve_server_key, pub, why, sizeof why);
    if (rc)
        return err_set(err, errlen, rc, "curve_server_key: %s", why);
    rc = curve_read_secret(cfg->curve_secret_key, &own, why, sizeof why);
    if (rc)
        return err_set(err, errlen, rc, "curve_secret_key: %s", why);
    if (kp)
        *kp = own;
    if (server)
        memcpy(server, pub, CURVE_KEY_TEXT);
    memset(&own, 0, sizeof own);
    return 0;
}

int client_check_keys(const client_config *cfg, char *err, size_t errlen)
{
    return s_read_keys(cfg, NULL, NULL, err, errlen);
}

/* The DEALER's handshake monitor: its events, from the dealer's socket
 * monitor, say why a connection was refused (see s_recv_monitor). */
static void s_open_monitor(client *c)
{
    char ep[96];
    snprintf(ep, sizeof ep, "inproc://kz-client-%p-%u", (void *)c, c->mon_n++);
    int events = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    c->mon = curve_monitor_open(c->zctx, c->dealer, ep, events); /* NULL: no diagnostics */
}

static void s_close_dealer(client *c)
{
    if (c->dealer) {
        if (c->mon)
            zmq_socket_monitor(c->dealer, NULL, 0);
        zmq_close(c->dealer);
    }
    if (c->mon)
        zmq_close(c->mon);
    c->dealer = c->mon = NULL;
}

/* Says once (until a handshake succeeds) why the coordinator's handshakes
 * fail: the event and its value from the dealer's monitor. */
static void s_handshake_event(client *c, unsigned event, uint32_t value)
{
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        if (c->handshake_said)
            log_info("client %s: handshake with %s succeeded", c->id, c->cfg.endpoint);
        c->handshake_said = 0;
        c->handshake_lost = 0;
        c->handshake_why[0] = 0;
        return;
    }
    char text[400];
    int said;
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        said = 1;
        snprintf(text, sizeof text, "the coordinator at %s refused this client's key (ZAP %u): "
                 "add its public key %s (the .pub of %s) to the coordinator's allow_keys and "
                 "reload it (SIGHUP)", c->cfg.endpoint, (unsigned)value, c->kp.public_key,
                 c->cfg.curve_secret_key);
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
               value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
        said = 2;
        snprintf(text, sizeof text, "%s", c->cfg.curve
                 ? "the coordinator does not use CurveZMQ (curve = false there): turn it on "
                   "there, or set curve = false here"
                 : "the coordinator requires CurveZMQ: set curve_server_key and "
                   "curve_secret_key here (kz keygen; docs/security.md)");
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
        said = 3;
        snprintf(text, sizeof text, "the handshake with %s failed (protocol error 0x%x)",
                 c->cfg.endpoint, (unsigned)value);
    } else {
        /* One may be a coordinator that stopped mid-handshake: said from the
         * second in a row. */
        if (++c->handshake_lost < 2)
            return;
        said = 4;
        snprintf(text, sizeof text, "the handshake with %s failed without a reason (%s)%s",
                 c->cfg.endpoint, zmq_strerror((int)value),
                 c->cfg.curve ? ": does curve_server_key hold the coordinator's public key?"
                              : ": does the coordinator require CurveZMQ (then set "
                                "curve_server_key and curve_secret_key here)?");
    }
    s_set_error(c, "%s", text);
    snprintf(c->handshake_why, sizeof c->handshake_why, "%s", text);
    if (c->handshake_said != said)
        log_error("client %s: %s", c->id, text);
    c->handshake_said = said;
}

/* Reads the monitor's events (two frames each: event and value, then the
 * endpoint). */
static void s_recv_monitor(client *c)
{
    uint16_t event;
    uint32_t value;
    while (c->mon && curve_monitor_event(c->mon, &event, &value)) {
        if (event)
            s_handshake_event(c, event, value);
    }
}

/* Opens and connects the DEALER socket. 0 or zmq errno. */
static int s_open_dealer(client *c)
{
    c->dealer = zmq_socket(c->zctx, ZMQ_DEALER);
    if (!c->dealer)
        return zmq_errno();
    int zero = 0;
    int64_t maxmsg = (int64_t)c->cfg.max_msg_bytes;
    int ivl = 100, ivl_max = 2000;
    zmq_setsockopt(c->dealer, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(c->dealer, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(c->dealer, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(c->dealer, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    int rc = c->cfg.curve ? curve_setup_client(c->dealer, c->server_key, &c->kp) : 0;
    if (!rc) {
        s_open_monitor(c);
        if (zmq_connect(c->dealer, c->cfg.endpoint))
            rc = zmq_errno();
    }
    if (rc) {
        s_close_dealer(c);
        return rc;
    }
    return 0;
}

/* Encodes m (as one of ours) and sends it without blocking. A message that
 * cannot be sent now counts as lost: timeouts resend it. 0 or KZ_EINVAL. */
static int s_send(client *c, wire_msg *m)
{
    m->version = c->cfg.protocol_version ? c->cfg.protocol_version : WIRE_PROTOCOL_VERSION;
    m->client = c->id;
    int rc = wire_encode(m, &c->tx);
    if (rc)
        return rc;
    if (zmq_send(c->dealer, c->tx.data, c->tx.len, ZMQ_DONTWAIT) < 0)
        log_debug("client: send %s failed: %s", wire_kind_name(m->kind), zmq_strerror(errno));
    if (c->first_unanswered == 0)
        c->first_unanswered = time_now();
    return 0;
}

static void s_send_hello(client *c)
{
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    wire_msg m = {0};
    m.kind = WIRE_HELLO;
    m.request_id = c->hello_id = c->next_request_id++;
    m.u.hello = (wire_hello){c->role, host, (uint32_t)getpid(), util_version(), c->game,
                             c->cfg.slots};
    s_send(c, &m);
}

static void s_send_heartbeat(client *c)
{
    wire_msg m = {0};
    m.kind = WIRE_HEARTBEAT;
    m.request_id = c->next_request_id++;
    m.u.heartbeat = (wire_heartbeat){c->st_in_flight, c->st_done, c->st_arena, c->st_slots,
                                     c->n_st_slots, (uint32_t)c->n_pending, c->st_model,
                                     c->st_speed};
    s_send(c, &m);
    c->last_heartbeat = time_now();
}

static void s_send_game(client *c, pending_game *p)
{
    wire_msg m = {0};
    m.kind = WIRE_GAME_SUBMIT;
    m.request_id = p->request_id;
    m.u.game_submit = (wire_game_submit){p->record, p->len, p->arena_slot};
    s_send(c, &m);
    p->sent_at = time_now();
    p->due = p->sent_at + s_resend_after(c, p->sends);
    p->sends++;
}

static double s_resend_after(const client *c, int sends)
{
    double t = c->cfg.timeout_ms / 1000.0;
    for (int i = 0; i < sends && i < 3; i++)
        t *= 2;
    return t;
}

/* Lazy Pirate: drop the socket (and whatever it queued), open a new one,
 * say Hello, resend every unacknowledged game. */
static void s_reconnect(client *c)
{
    s_close_dealer(c);
    int rc = s_open_dealer(c);
    if (rc) {
        log_error("client: cannot reconnect to %s: %s", c->cfg.endpoint, zmq_strerror(rc));
        return;
    }
    c->stats.reconnects++;
    c->last_reconnect = time_now();
    c->first_unanswered = 0;
    log_debug("client %s: reconnected to %s", c->id, c->cfg.endpoint);
    s_send_hello(c);
    for (size_t i = 0; i < c->cfg.max_pending; i++)
        if (c->pending[i].len) {
            s_send_game(c, &c->pending[i]);
            c->stats.resent++;
        }
}

client *client_new(void *zctx, const client_config *cfg)
{
    if (!zctx || !cfg || !cfg->endpoint[0]) {
        log_error("client: no coordinator endpoint");
        return NULL;
    }
    if (cfg->timeout_ms <= 0 || cfg->retries < 1 || cfg->heartbeat_ms <= 0 ||
        cfg->max_pending < 1 || cfg->max_msg_bytes < 1024) {
        log_error("client: bad configuration (timeout %d ms, retries %d, heartbeat %d ms, "
                  "max_pending %zu, max_msg_bytes %zu)", cfg->timeout_ms, cfg->retries,
                  cfg->heartbeat_ms, cfg->max_pending, cfg->max_msg_bytes);
        return NULL;
    }
    client *c = xcalloc(1, sizeof *c);
    c->zctx = zctx;
    c->cfg = *cfg;
    char err[600];
    if (s_read_keys(cfg, &c->kp, c->server_key, err, sizeof err)) {
        log_error("client: %s", err);
        free(c);
        return NULL;
    }
    static bool s_warned;
    if (!cfg->curve && !s_warned) {
        s_warned = true;
        log_warn("client: curve = false: talking to the coordinator without CurveZMQ, "
                 "unencrypted and unauthenticated (docs/security.md)");
    }
    snprintf(c->role, sizeof c->role, "%s", cfg->role ? cfg->role : "worker");
    snprintf(c->game, sizeof c->game, "%s", cfg->game ? cfg->game : "");
    if (cfg->client_id[0]) {
        snprintf(c->id, sizeof c->id, "%s", cfg->client_id);
    } else {
        char host[64] = "";
        gethostname(host, sizeof host - 1);
        uint64_t r = mix64((uint64_t)time_wall_ms() ^ ((uint64_t)getpid() << 32) ^
                           (uint64_t)(uintptr_t)c);
        snprintf(c->id, sizeof c->id, "%s-%d-%04x", host, (int)getpid(), (unsigned)(r & 0xffff));
    }
    snprintf(c->cfg.client_id, sizeof c->cfg.client_id, "%s", c->id);
    c->cfg.role = c->role;
    c->cfg.game = c->game;
    c->heartbeat_ms = cfg->heartbeat_ms;
    c->next_request_id = 1;
    c->pending = xcalloc(cfg->max_pending, sizeof *c->pending);
    int rc = s_open_dealer(c);
    if (rc) {
        log_error("client: cannot connect to %s: %s", c->cfg.endpoint, zmq_strerror(rc));
        client_destroy(&c);
        return NULL;
    }
    if (c->cfg.sub_endpoint[0]) {
        c->sub = zmq_socket(zctx, ZMQ_SUB);
        int zero = 0;
        int64_t maxmsg = (int64_t)cfg->max_msg_bytes;
        if (c->sub) {
            zmq_setsockopt(c->sub, ZMQ_LINGER, &zero, sizeof zero);
            zmq_setsockopt(c->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
            zmq_setsockopt(c->sub, ZMQ_SUBSCRIBE, WIRE_TOPIC_BEST, strlen(WIRE_TOPIC_BEST));
        }
        if (!c->sub || (c->cfg.curve && curve_setup_client(c->sub, c->server_key, &c->kp)) ||
            zmq_connect(c->sub, c->cfg.sub_endpoint)) {
            log_error("client: cannot connect to %s: %s", c->cfg.sub_endpoint,
                      zmq_strerror(zmq_errno()));
            client_destroy(&c);
            return NULL;
        }
    }
    c->last_reconnect = time_now();
    s_send_hello(c);
    c->last_heartbeat = time_now();
    return c;
}

void client_destroy(client **cp)
{
    if (!cp || !*cp)
        return;
    client *c = *cp;
    s_close_dealer(c);
    if (c->sub)
        zmq_close(c->sub);
    if (c->pending)
        for (size_t i = 0; i < c->cfg.max_pending; i++)
            free(c->pending[i].record);
    free(c->pending);
    free(c->st_slots);
    wire_buf_free(&c->tx);
    wire_msg_clear(&c->reply);
    wire_msg_clear(&c->scratch);
    memset(&c->kp, 0, sizeof c->kp);
    free(c);
    *cp = NULL;
}

const char *client_id(const client *c)
{
    return c->id;
}

static pending_game *s_find_pending(client *c, uint64_t request_id)
{
    if (!c->n_pending)
        return NULL;
    for (size_t i = 0; i < c->cfg.max_pending; i++)
        if (c->pending[i].len && c->pending[i].request_id == request_id)
            return &c->pending[i];
    return NULL;
}

static void s_drop_pending(client *c, pending_game *p)
{
    free(p->record);
    *p = (pending_game){0};
    c->n_pending--;
}

static void s_note_best(client *c, uint32_t best, uint64_t instance)
{
    if (best)
        c->best_version = best;
    if (instance && c->instance && instance != c->instance)
        log_info("client %s: coordinator restarted (instance %016llx)", c->id,
                 (unsigned long long)instance);
    if (instance)
        c->instance = instance;
}

/* Handles an asynchronous message (not the answer client_call waits for). */
static void s_handle_async(client *c, const wire_msg *m)
{
    switch (m->kind) {
    case WIRE_WELCOME: {
        const wire_welcome *w = &m->u.welcome;
        c->welcome = *w;
        snprintf(c->welcome_coord, sizeof c->welcome_coord, "%s", w->coordinator);
        snprintf(c->welcome_game, sizeof c->welcome_game, "%s", w->game);
        c->welcome.coordinator = c->welcome_coord;
        c->welcome.game = c->welcome_game;
        if (w->heartbeat_ms >= 10 && w->heartbeat_ms <= 600000)
            c->heartbeat_ms = (int)w->heartbeat_ms;
        if (c->game[0] && w->game[0] && strcmp(c->game, w->game))
            log_warn("client %s: the coordinator plays '%s', this client '%s'", c->id, w->game,
                     c->game);
        s_note_best(c, w->best_version, w->instance);
        if (m->request_id == c->hello_id)
            c->hello_id = 0;
        break;
    }
    case WIRE_HEARTBEAT_REPLY:
        s_note_best(c, m->u.heartbeat_reply.best_version, m->u.heartbeat_reply.instance);
        break;
    case WIRE_GAME_ACK: {
        pending_game *p = s_find_pending(c, m->request_id);
        if (p) {
            c->stats.acked++;
            c->stats.duplicates += m->u.game_ack.duplicate;
            if (c->on_ack)
                c->on_ack(c->on_ack_ctx, p->record, p->len, m->u.game_ack.duplicate,
                          m->u.game_ack.sequence);
            s_drop_pending(c, p);
        }
        break;
    }
    case WIRE_GAME_REJECT: {
        pending_game *p = s_find_pending(c, m->request_id);
        if (p) {
            uint32_t r = m->u.game_reject.reason;
            c->stats.rejected++;
            c->stats.rejected_by_reason[r < 15 ? r : 15]++;
            log_warn("client %s: game rejected (reason %u): %s", c->id, (unsigned)r,
                     m->u.game_reject.detail);
            s_drop_pending(c, p);
        }
        break;
    }
    case WIRE_ERROR:
        if (m->u.error.code == WIRE_ERR_VERSION) {
            if (!c->refused)
                log_error("client %s: coordinator refused us: %s", c->id, m->u.error.message);
            c->refused = true;
        } else {
            log_warn("client %s: coordinator error on request %llu: %s (%s)", c->id,
                     (unsigned long long)m->request_id, m->u.error.message,
                     wire_error_name(m->u.error.code));
            /* An error about a queued game is final (e.g. too large), except
             * a coordinator failure: that one is resent when due. */
            pending_game *p = m->u.error.code == WIRE_ERR_INTERNAL
                                  ? NULL
                                  : s_find_pending(c, m->request_id);
            if (p) {
                c->stats.rejected++;
                c->stats.rejected_by_reason[15]++;
                s_drop_pending(c, p);
            }
        }
        s_set_error(c, "%s", m->u.error.message);
        break;
    default:
        /* Late answers to calls that were given up: nothing to do. */
        break;
    }
}

/* Receives everything ready on the DEALER socket. */
static void s_recv_dealer(client *c)
{
    for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, c->dealer, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            return;
        }
        bool more = zmq_msg_more(&msg);
        c->last_recv = time_now();
        c->first_unanswered = 0;
        wire_msg *m = &c->scratch;
        int rc = wire_decode(m, zmq_msg_data(&msg), zmq_msg_size(&msg), c->cfg.max_msg_bytes);
        zmq_msg_close(&msg);
        while (more) { /* we never send multi-frame replies: drop the rest */
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, c->dealer, ZMQ_DONTWAIT) < 0)
                more = false;
            else
                more = zmq_msg_more(&msg);
            zmq_msg_close(&msg);
        }
        if (rc == KZ_EVERSION) {
            s_set_error(c, "coordinator speaks protocol version %u, this client %u",
                        (unsigned)m->version, (unsigned)WIRE_PROTOCOL_VERSION);
            log_error("client %s: %s", c->id, c->last_error);
            c->refused = true;
            wire_msg_clear(m);
            continue;
        }
        if (rc) {
            log_warn("client %s: undecodable message from the coordinator: %s", c->id,
                     err_str(rc));
            continue;
        }
        if (c->waiting_id && m->request_id == c->waiting_id) {
            /* The answer client_call waits for: keep it. */
            wire_msg_clear(&c->reply);
            c->reply = *m;
            memset(m, 0, sizeof *m);
            c->got_reply = true;
            c->waiting_id = 0;
            if (c->reply.kind == WIRE_ERROR && c->reply.u.error.code == WIRE_ERR_VERSION)
                c->refused = true;
            continue;
        }
        s_handle_async(c, m);
        wire_msg_clear(m);
    }
}

static void s_recv_sub(client *c)
{
    for (;;) {
        zmq_msg_t topic, body;
        zmq_msg_init(&topic);
        if (zmq_msg_recv(&topic, c->sub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&topic);
            return;
        }
        bool more = zmq_msg_more(&topic);
        zmq_msg_close(&topic);
        if (!more)
            continue;
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, c->sub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&body);
            continue;
        }
        more = zmq_msg_more(&body);
        wire_msg *m = &c->scratch;
        int rc = wire_decode(m, zmq_msg_data(&body), zmq_msg_size(&body), c->cfg.max_msg_bytes);
        zmq_msg_close(&body);
        while (more) {
            zmq_msg_t extra;
            zmq_msg_init(&extra);
            more = zmq_msg_recv(&extra, c->sub, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&extra);
            zmq_msg_close(&extra);
        }
        if (rc == 0 && m->kind == WIRE_ANNOUNCEMENT) {
            c->stats.announcements++;
            if (m->u.announcement.best_version > c->best_version ||
                !c->has_announcement) {
                c->announcement = m->u.announcement;
                c->has_announcement = true;
                c->best_version = m->u.announcement.best_version;
            }
        }
        wire_msg_clear(m);
    }
}

/* Timers: heartbeat, game resends, reconnect of a silent coordinator. */
static void s_timers(client *c)
{
    double now = time_now();
    double timeout = c->cfg.timeout_ms / 1000.0;
    if (c->first_unanswered && now - c->first_unanswered > timeout &&
        now - c->last_reconnect > timeout) {
        s_reconnect(c);
        now = time_now();
    }
    if (now - c->last_heartbeat >= c->heartbeat_ms / 1000.0)
        s_send_heartbeat(c);
    if (c->n_pending)
        for (size_t i = 0; i < c->cfg.max_pending; i++) {
            pending_game *p = &c->pending[i];
            if (p->len && now >= p->due) {
                s_send_game(c, p);
                c->stats.resent++;
            }
        }
}

/* Milliseconds until the next timer is due (>= 0). */
static int s_next_timer_ms(const client *c)
{
    double now = time_now();
    double next = c->last_heartbeat + c->heartbeat_ms / 1000.0;
    double timeout = c->cfg.timeout_ms / 1000.0;
    if (c->first_unanswered) {
        double t = c->first_unanswered + timeout;
        double r = c->last_reconnect + timeout;
        t = t > r ? t : r;
        if (t < next)
            next = t;
    }
    if (c->n_pending)
        for (size_t i = 0; i < c->cfg.max_pending; i++)
            if (c->pending[i].len && c->pending[i].due < next)
                next = c->pending[i].due;
    double ms = (next - now) * 1000.0 + 1.0;
    return ms < 0 ? 0 : ms > 1e6 ? 1000000 : (int)ms;
}

/* Waits up to timeout_ms for input (returning early when client_call's
 * answer arrives), handling everything on the way. */
static void s_service(client *c, int timeout_ms)
{
    double deadline = time_now() + timeout_ms / 1000.0;
    for (;;) {
        s_recv_dealer(c);
        if (c->sub)
            s_recv_sub(c);
        s_recv_monitor(c);
        s_timers(c);
        if (c->got_reply)
            return;
        double left = (deadline - time_now()) * 1000.0;
        if (left <= 0)
            return;
        int wait = s_next_timer_ms(c);
        if (wait > left)
            wait = (int)left + 1;
        zmq_pollitem_t items[3] = {{c->dealer, 0, ZMQ_POLLIN, 0}, {c->sub, 0, ZMQ_POLLIN, 0},
                                   {c->mon, 0, ZMQ_POLLIN, 0}};
        int n = c->sub ? 2 : 1;
        if (c->mon) {
            items[n] = items[2];
            n++;
        }
        if (!c->dealer) { /* reconnect failed: wait and retry via timers */
            usleep((useconds_t)(wait > 100 ? 100 : wait) * 1000);
            continue;
        }
        if (zmq_poll(items, n, wait) < 0)
            return; /* a signal (EINTR): let the caller look at its flags */
    }
}

void client_set_interrupt(client *c, volatile sig_atomic_t *flag) { c->interrupt = flag; }

void client_set_ack_hook(client *c, client_ack_fn fn, void *ctx)
{
    c->on_ack = fn;
    c->on_ack_ctx = ctx;
}

int client_poll(client *c, int timeout_ms)
{
    if (c->refused)
        return KZ_EVERSION;
    s_service(c, timeout_ms < 0 ? 0 : timeout_ms);
    return c->refused ? KZ_EVERSION : 0;
}

int client_call(client *c, wire_msg *req, const wire_msg **reply)
{
    if (c->refused)
        return KZ_EVERSION;
    req->request_id = c->next_request_id++;
    for (int attempt = 0; attempt < c->cfg.retries; attempt++) {
        if (attempt > 0 && time_now() - c->last_recv > c->cfg.timeout_ms / 1000.0 &&
            time_now() - c->last_reconnect > c->cfg.timeout_ms / 1000.0)
            s_reconnect(c);
        c->waiting_id = req->request_id;
        c->got_reply = false;
        int rc = s_send(c, req);
        if (rc) {
            c->waiting_id = 0;
            return rc;
        }
        double deadline = time_now() + c->cfg.timeout_ms / 1000.0;
        while (!c->got_reply && !c->refused) {
            if (c->interrupt && *c->interrupt) {
                c->waiting_id = 0;
                s_set_error(c, "interrupted");
                return EINTR;
            }
            double left = (deadline - time_now()) * 1000.0;
            if (left <= 0)
                break;
            s_service(c, (int)left + 1);
        }
        if (c->got_reply) {
            *reply = &c->reply;
            c->forbidden = c->reply.kind == WIRE_ERROR &&
                           c->reply.u.error.code == WIRE_ERR_FORBIDDEN;
            if (c->reply.kind == WIRE_ERROR) {
                s_set_error(c, "%s", c->reply.u.error.message);
                if (c->reply.u.error.code == WIRE_ERR_VERSION)
                    return KZ_EVERSION;
                return c->reply.u.error.code == WIRE_ERR_NOT_FOUND ? KZ_ENOTFOUND
                                                                  : KZ_EREJECTED;
            }
            return 0;
        }
        if (c->refused) {
            c->waiting_id = 0;
            return KZ_EVERSION;
        }
    }
    c->waiting_id = 0;
    c->stats.timeouts++;
    s_set_error(c, "no answer from %s after %d attempts of %d ms%s%s", c->cfg.endpoint,
                c->cfg.retries, c->cfg.timeout_ms, c->handshake_why[0] ? ": " : "",
                c->handshake_why);
    return KZ_ETIMEOUT;
}

/* One request whose answer must be of kind `want` (`what` names it in the
 * error: "expected a job, got ..."): client_call, then that check. 0 with
 * *reply, client_call's error, or KZ_ECORRUPT. */
static int s_ask(client *c, wire_msg *m, int want, const char *what, const wire_msg **reply)
{
    int rc = client_call(c, m, reply);
    if (rc)
        return rc;
    if ((*reply)->kind != want) {
        s_set_error(c, "expected %s, got %s", what, wire_kind_name((*reply)->kind));
        return KZ_ECORRUPT;
    }
    return 0;
}

int client_get_job(client *c, const wire_job_request *req, const wire_job **job)
{
    wire_msg m = {.kind = WIRE_JOB_REQUEST, .u.job_request = *req};
    const wire_msg *r;
    int rc = s_ask(c, &m, WIRE_JOB, "a job", &r);
    if (rc)
        return rc;
    if (r->u.job.kind == WIRE_JOB_SELFPLAY && r->u.job.model_version)
        c->best_version = r->u.job.model_version;
    *job = &r->u.job;
    return 0;
}

int client_get_model(client *c, uint32_t version, uint64_t expect_checksum, uint8_t **blob,
                     size_t *len, wire_model_reply *info)
{
    wire_msg m = {.kind = WIRE_MODEL_REQUEST, .u.model_request.version = version};
    const wire_msg *r;
    int rc = s_ask(c, &m, WIRE_MODEL_REPLY, "a model", &r);
    if (rc)
        return rc;
    const wire_model_reply *mr = &r->u.model_reply;
    uint64_t sum = wire_blob_checksum(mr->blob, mr->blob_len);
    if (sum != mr->checksum || (expect_checksum && sum != expect_checksum) ||
        (version && mr->version != version)) {
        s_set_error(c, "model %u failed its checksum (%016llx, expected %016llx)",
                    (unsigned)mr->version, (unsigned long long)sum,
                    (unsigned long long)(expect_checksum ? expect_checksum : mr->checksum));
        return KZ_ECORRUPT;
    }
    uint8_t *copy = malloc(mr->blob_len ? mr->blob_len : 1);
    if (!copy)
        return KZ_ENOMEM;
    if (mr->blob_len)
        memcpy(copy, mr->blob, mr->blob_len);
    *blob = copy;
    *len = mr->blob_len;
    if (info)
        *info = *mr;
    return 0;
}

int client_submit_game(client *c, const uint8_t *record, size_t len, uint32_t arena_slot)
{
    if (c->refused)
        return KZ_EVERSION;
    if (!record || !len || len + 64 > c->cfg.max_msg_bytes ||
        (c->welcome.max_record_bytes && len > c->welcome.max_record_bytes))
        return KZ_EINVAL;
    if (c->n_pending >= c->cfg.max_pending)
        return KZ_EFULL;
    pending_game *p = NULL;
    for (size_t i = 0; i < c->cfg.max_pending && !p; i++)
        if (!c->pending[i].len)
            p = &c->pending[i];
    KZ_CHECK(p != NULL);
    p->record = malloc(len);
    if (!p->record)
        return KZ_ENOMEM;
    memcpy(p->record, record, len);
    p->len = len;
    p->arena_slot = arena_slot;
    p->request_id = c->next_request_id++;
    c->n_pending++;
    c->stats.submitted++;
    s_send_game(c, p);
    return 0;
}

size_t client_pending(const client *c)
{
    return c->n_pending;
}

int client_get_batch(client *c, uint32_t size, uint64_t min_positions,
                     const wire_batch_reply **batch)
{
    return client_get_batch_aux(c, size, min_positions, false, batch);
}

int client_get_batch_aux(client *c, uint32_t size, uint64_t min_positions, bool aux,
                         const wire_batch_reply **batch)
{
    wire_msg m = {.kind = WIRE_BATCH_REQUEST,
                  .u.batch_request = (wire_batch_request){size, min_positions, aux}};
    const wire_msg *r;
    int rc = s_ask(c, &m, WIRE_BATCH_REPLY, "a batch", &r);
    if (rc)
        return rc;
    if (r->u.batch_reply.best_version)
        c->best_version = r->u.batch_reply.best_version;
    *batch = &r->u.batch_reply;
    return 0;
}

int client_submit_candidate(client *c, const uint8_t *blob, size_t len, uint32_t parent_version,
                            uint64_t trainer_step, wire_candidate_ack *ack)
{
    wire_msg m = {.kind = WIRE_CANDIDATE_SUBMIT,
                  .u.candidate_submit = (wire_candidate_submit){
                      blob, len, wire_blob_checksum(blob, len), parent_version, trainer_step}};
    const wire_msg *r;
    int rc = s_ask(c, &m, WIRE_CANDIDATE_ACK, "a candidate ack", &r);
    if (rc)
        return rc;
    if (ack)
        *ack = r->u.candidate_ack;
    return 0;
}

int client_report_stats(client *c, const wire_trainer_stats *stats)
{
    wire_msg m = {.kind = WIRE_TRAINER_STATS, .u.trainer_stats = *stats};
    const wire_msg *r;
    int rc = client_call(c, &m, &r);
    if (rc)
        return rc;
    if (r->kind == WIRE_STATS_ACK && r->u.stats_ack.best_version)
        c->best_version = r->u.stats_ack.best_version;
    return 0;
}

void client_set_status(client *c, uint32_t games_in_flight, uint64_t games_done,
                       uint32_t arena_candidate, const uint32_t *arena_slots, size_t n)
{
    c->st_in_flight = games_in_flight;
    c->st_done = games_done;
    c->st_arena = arena_candidate;
    if (n > c->cap_slots) {
        free(c->st_slots);
        c->st_slots = xmalloc(n * sizeof *c->st_slots);
        c->cap_slots = n;
    }
    if (n)
        memcpy(c->st_slots, arena_slots, n * sizeof *arena_slots);
    c->n_st_slots = n;
}

void client_set_engine(client *c, uint32_t model_version, float sims_per_s)
{
    c->st_model = model_version;
    c->st_speed = sims_per_s;
}

uint32_t client_best_version(const client *c)
{
    return c->best_version;
}

bool client_next_announcement(client *c, wire_announcement *out)
{
    if (!c->has_announcement)
        return false;
    *out = c->announcement;
    c->has_announcement = false;
    return true;
}

bool client_connected(const client *c)
{
    return c->last_recv > 0 &&
           time_now() - c->last_recv < c->cfg.timeout_ms / 1000.0 * c->cfg.retries;
}

const wire_welcome *client_welcome(const client *c)
{
    return &c->welcome;
}

const char *client_last_error(const client *c)
{
    return c->last_error;
}

bool client_key_refused(const client *c)
{
    return c->forbidden || c->handshake_said == 1;
}

void client_get_stats(const client *c, client_stats *out)
{
    *out = c->stats;
}
