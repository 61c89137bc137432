/* auth: the coordinator's CurveZMQ authentication and authorisation (see
 * features.h and docs/security.md).
 *
 * Authentication happens in the handshake: both endpoints are CurveZMQ
 * servers with the coordinator's key, and libzmq asks the ZAP handler (RFC
 * 27, a REP socket on inproc://zeromq.zap.01 of the coordinator's context,
 * served by the main loop) about every client key. The handler admits the
 * keys of the allow-list and gives each connection the key's Z85 text as its
 * User-Id, which libzmq attaches to every message received on it.
 *
 * Authorisation happens per request (auth_check): the key is looked up in
 * the allow-list as it is now (so a key removed by a reload is refused at
 * its next request, even on a connection made before), and its role must
 * allow the request's kind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "server/features.h"
#include "common/util.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_FRAMES 8 /* frames of a ZAP request read at most (7 for CURVE) */

/* The request kinds each role may send; every other kind is open to every
 * admitted key (Hello, Heartbeat, ModelRequest: reading; reply kinds are
 * answered as unexpected by the handler). */
static bool s_restricted(int kind)
{
    return kind == WIRE_JOB_REQUEST || kind == WIRE_GAME_SUBMIT || kind == WIRE_BATCH_REQUEST ||
           kind == WIRE_CANDIDATE_SUBMIT || kind == WIRE_TRAINER_STATS;
}

static bool s_role_may(int role, int kind)
{
    if (!s_restricted(kind))
        return true;
    switch (role) {
    case CURVE_WORKER: return kind == WIRE_JOB_REQUEST || kind == WIRE_GAME_SUBMIT;
    case CURVE_TRAINER:
        return kind == WIRE_BATCH_REQUEST || kind == WIRE_CANDIDATE_SUBMIT ||
               kind == WIRE_TRAINER_STATS;
    case CURVE_OBSERVER: return kind == WIRE_BATCH_REQUEST;
    default: return false;
    }
}

/* What a request kind does, for messages ("may not submit games"). */
static const char *s_kind_action(int kind)
{
    switch (kind) {
    case WIRE_JOB_REQUEST: return "take jobs (self-play, arena or rating games)";
    case WIRE_GAME_SUBMIT: return "submit games";
    case WIRE_BATCH_REQUEST: return "read training batches";
    case WIRE_CANDIDATE_SUBMIT: return "publish candidate models";
    case WIRE_TRAINER_STATS: return "report trainer statistics";
    default: return "send this request";
    }
}

/* Loads the allow-list into c->auth (replacing the previous one). 0 or an
 * error with err. */
static int s_load_allow(coord *c, char *err, size_t errlen)
{
    curve_allow *a = NULL;
    int rc = curve_allow_load(c->cfg.allow_keys, &a, err, errlen);
    if (rc)
        return rc;
    curve_allow_destroy(&c->auth.allow);
    free(c->auth.told);
    c->auth.allow = a;
    c->auth.told = xcalloc(a->n ? a->n : 1, sizeof *c->auth.told);
    c->auth.n_told_keys = 0; /* an unknown key refused again after a reload is news */
    c->auth.loaded_ms = time_wall_ms();
    int n[CURVE_ROLES] = {0};
    for (size_t i = 0; i < a->n; i++)
        n[a->e[i].role]++;
    log_info("allow_keys %s: %zu keys (%d worker, %d trainer, %d observer)", c->cfg.allow_keys,
             a->n, n[CURVE_WORKER], n[CURVE_TRAINER], n[CURVE_OBSERVER]);
    return 0;
}

int auth_init(coord *c)
{
    auth *a = &c->auth;
    a->on = c->cfg.curve;
    if (!a->on) {
        log_warn("curve = false: no CurveZMQ. Anyone who reaches %s may submit games, take "
                 "arena slots and publish candidates, unencrypted: keep it on a private network "
                 "(docs/security.md)", c->cfg.bind);
        return 0;
    }
    char err[600];
    if (!curve_available()) {
        log_error("curve: this libzmq was built without CurveZMQ (curve = false runs without)");
        return KZ_EINVAL;
    }
    int rc = curve_read_secret(c->cfg.curve_secret_key, &a->kp, err, sizeof err);
    if (rc) {
        log_error("curve_secret_key: %s", err);
        return rc;
    }
    if ((rc = s_load_allow(c, err, sizeof err))) {
        log_error("allow_keys: %s", err);
        return rc;
    }
    a->told_keys = xcalloc(AUTH_TOLD, sizeof *a->told_keys);
    a->zap = zmq_socket(c->zctx, ZMQ_REP);
    int zero = 0;
    if (a->zap)
        zmq_setsockopt(a->zap, ZMQ_LINGER, &zero, sizeof zero);
    if (!a->zap || zmq_bind(a->zap, ZAP_ENDPOINT)) {
        log_error("cannot bind the ZAP handler %s: %s", ZAP_ENDPOINT, zmq_strerror(zmq_errno()));
        return KZ_EIO;
    }
    log_info("curve: CurveZMQ on, the coordinator's public key %s", a->kp.public_key);
    return 0;
}

int auth_socket(coord *c, void *s)
{
    if (!c->auth.on)
        return 0;
    /* ZMQ_ZAP_DOMAIN: libzmq asks the handler only when set (or with CURVE). */
    if (zmq_setsockopt(s, ZMQ_ZAP_DOMAIN, "kz", 2))
        return zmq_errno();
    return curve_setup_server(s, &c->auth.kp);
}

void auth_watch(coord *c, void *s, int which)
{
    if (!c->auth.on || which < 0 || which > 1)
        return;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://kz-coordinator-monitor-%d", which);
    int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;
    c->auth.mon[which] = curve_monitor_open(c->zctx, s, ep, events); /* NULL: no count */
}

void auth_poll_items(coord *c, void *out[3])
{
    out[0] = c->auth.zap;
    out[1] = c->auth.mon[0];
    out[2] = c->auth.mon[1];
}

/* Whether an unknown key's refusal was logged already; notes it when not. */
static bool s_told_key(auth *a, const uint8_t key[CURVE_KEY_BYTES])
{
    for (size_t i = 0; i < a->n_told_keys; i++)
        if (!memcmp(a->told_keys[i], key, CURVE_KEY_BYTES))
            return true;
    if (a->n_told_keys < AUTH_TOLD) {
        memcpy(a->told_keys[a->n_told_keys++], key, CURVE_KEY_BYTES);
        return false;
    }
    return a->refused_keys % 1000 != 1; /* the table is full: every 1000th */
}

/* One ZAP request (RFC 27): version, request id, domain, address, routing
 * id, mechanism, credentials. false when none waits. */
static bool s_zap_one(coord *c)
{
    auth *a = &c->auth;
    zmq_msg_t f[ZAP_FRAMES];
    int n = 0;
    bool more = true;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, a->zap, n ? 0 : ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&part);
            if (n == 0)
                return false;
            break;
        }
        more = zmq_msg_more(&part);
        if (n < ZAP_FRAMES)
            f[n++] = part;
        else
            zmq_msg_close(&part);
    }
    const curve_entry *e = NULL;
    char address[64] = "?";
    bool curve = n >= 7 && zmq_msg_size(&f[5]) == 5 && !memcmp(zmq_msg_data(&f[5]), "CURVE", 5) &&
                 zmq_msg_size(&f[6]) == CURVE_KEY_BYTES;
    if (n >= 4)
        text_printable(address, sizeof address, zmq_msg_data(&f[3]), zmq_msg_size(&f[3]));
    char key[CURVE_KEY_TEXT] = "";
    if (curve) {
        curve_encode(zmq_msg_data(&f[6]), key);
        e = curve_allow_find(a->allow, zmq_msg_data(&f[6]));
        if (!e) {
            a->refused_keys++;
            if (!s_told_key(a, zmq_msg_data(&f[6])))
                log_warn("refused a connection from %s: key %s is not in allow_keys (%s)%s",
                         address, key, c->cfg.allow_keys,
                         a->n_told_keys == AUTH_TOLD ? " (further unknown keys: every 1000th)"
                                                     : "");
        }
    } else {
        a->refused_keys++;
        log_warn("refused a connection from %s: not a CurveZMQ handshake", address);
    }
    /* The reply: version, request id, status, text, user id, metadata. */
    const char *status = e ? "200" : "400";
    const char *text = e ? "OK" : "key not admitted";
    zmq_send(a->zap, "1.0", 3, ZMQ_SNDMORE);
    if (n >= 2)
        zmq_send(a->zap, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), ZMQ_SNDMORE);
    else
        zmq_send(a->zap, "", 0, ZMQ_SNDMORE);
    zmq_send(a->zap, status, 3, ZMQ_SNDMORE);
    zmq_send(a->zap, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(a->zap, e ? key : "", e ? strlen(key) : 0, ZMQ_SNDMORE);
    zmq_send(a->zap, "", 0, 0);
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
    return true;
}

/* Handshake events of one monitor. */
static void s_monitor(coord *c, void *m)
{
    uint16_t event;
    uint32_t value;
    while (curve_monitor_event(m, &event, &value)) {
        if (!(event & (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)))
            continue;
        uint64_t k = ++c->auth.handshake_failures;
        if (k <= 10 || k % 1000 == 0) {
            const char *why =
                event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
                        value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                    ? "a client without CurveZMQ (curve = false there?)"
                : event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                    ? "a protocol error (a client with another server key?)"
                    : "no detail (a client with another server key?)";
            log_warn("a client's handshake failed: %s [%llu so far%s]", why,
                     (unsigned long long)k, k == 10 ? "; further ones logged every 1000th" : "");
        }
    }
}

void auth_serve(coord *c)
{
    auth *a = &c->auth;
    if (!a->on)
        return;
    while (a->zap && s_zap_one(c))
        ;
    for (int i = 0; i < 2; i++)
        if (a->mon[i])
            s_monitor(c, a->mon[i]);
}

void auth_reload(coord *c)
{
    if (!c->auth.on) {
        log_info("SIGHUP: nothing to reload (curve = false)");
        return;
    }
    char err[600];
    if (s_load_allow(c, err, sizeof err)) {
        c->auth.reload_errors++;
        log_error("SIGHUP: allow_keys not reloaded, the previous %zu keys stay: %s",
                  c->auth.allow ? c->auth.allow->n : (size_t)0, err);
        return;
    }
    c->auth.reloads++;
}

bool auth_check(coord *c, const char *user_id, int kind, const char *claimed, const char **id,
                char *idbuf, size_t idlen, char *why, size_t whylen)
{
    auth *a = &c->auth;
    *id = claimed;
    if (!a->on)
        return true;
    uint8_t raw[CURVE_KEY_BYTES] = {0};
    const curve_entry *e = user_id && curve_decode(user_id, raw) ? curve_allow_find(a->allow, raw)
                                                                 : NULL;
    if (!e) {
        /* A connection admitted before a reload that removed its key. */
        a->refused_requests++;
        if (!user_id || !s_told_key(a, raw))
            log_warn("refused a request: key %s is no longer in allow_keys",
                     user_id ? user_id : "(none)");
        snprintf(why, whylen, "this client's key is no longer in the coordinator's allow_keys");
        return false;
    }
    if (!s_role_may(e->role, kind)) {
        a->refused_requests++;
        a->refused_by_role[e->role]++;
        snprintf(why, whylen, "key '%s' (%s) may not %s", e->name, curve_role_name(e->role),
                 s_kind_action(kind));
        uint32_t *told = &a->told[e - a->allow->e];
        if (!(*told & (1u << kind))) {
            *told |= 1u << kind;
            log_warn("refused a request: %s (logged once per key and request)", why);
        }
        return false;
    }
    /* The id: the key's name, or NAME/ID (several processes, one key). */
    size_t n = strlen(e->name);
    if (!claimed || !claimed[0] || !strcmp(claimed, e->name))
        *id = e->name;
    else if (!strncmp(claimed, e->name, n) && claimed[n] == '/')
        *id = claimed;
    else {
        snprintf(idbuf, idlen, "%s/%s", e->name, claimed);
        *id = idbuf;
    }
    return true;
}

void auth_fini(coord *c)
{
    auth *a = &c->auth;
    if (a->zap)
        zmq_close(a->zap);
    for (int i = 0; i < 2; i++)
        if (a->mon[i])
            zmq_close(a->mon[i]);
    curve_allow_destroy(&a->allow);
    free(a->told);
    free(a->told_keys);
    memset(a, 0, sizeof *a);
}
