/* wire: wire_msg <-> proto/wire.proto Envelope. See wire.h. The only file that
 * includes wire.pb-c.h. Encoding builds the protobuf-c structs on the stack
 * around the caller's (borrowed) data; decoding keeps the unpacked envelope
 * in wire_msg.decoded and points into it. */
#include "net/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "wire.pb-c.h"

static const char *const s_kind_names[WIRE_KIND_COUNT] = {
    [WIRE_NONE] = "none",
    [WIRE_HELLO] = "hello",
    [WIRE_WELCOME] = "welcome",
    [WIRE_HEARTBEAT] = "heartbeat",
    [WIRE_HEARTBEAT_REPLY] = "heartbeat_reply",
    [WIRE_JOB_REQUEST] = "job_request",
    [WIRE_JOB] = "job",
    [WIRE_MODEL_REQUEST] = "model_request",
    [WIRE_MODEL_REPLY] = "model_reply",
    [WIRE_GAME_SUBMIT] = "game_submit",
    [WIRE_GAME_ACK] = "game_ack",
    [WIRE_GAME_REJECT] = "game_reject",
    [WIRE_BATCH_REQUEST] = "batch_request",
    [WIRE_BATCH_REPLY] = "batch_reply",
    [WIRE_CANDIDATE_SUBMIT] = "candidate_submit",
    [WIRE_CANDIDATE_ACK] = "candidate_ack",
    [WIRE_TRAINER_STATS] = "trainer_stats",
    [WIRE_STATS_ACK] = "stats_ack",
    [WIRE_ANNOUNCEMENT] = "announcement",
    [WIRE_ERROR] = "error",
};

/* wire_kind <-> the envelope's oneof case. */
static const int s_case_of_kind[WIRE_KIND_COUNT] = {
    [WIRE_NONE] = KZ__ENVELOPE__BODY__NOT_SET,
    [WIRE_HELLO] = KZ__ENVELOPE__BODY_HELLO,
    [WIRE_WELCOME] = KZ__ENVELOPE__BODY_WELCOME,
    [WIRE_HEARTBEAT] = KZ__ENVELOPE__BODY_HEARTBEAT,
    [WIRE_HEARTBEAT_REPLY] = KZ__ENVELOPE__BODY_HEARTBEAT_REPLY,
    [WIRE_JOB_REQUEST] = KZ__ENVELOPE__BODY_JOB_REQUEST,
    [WIRE_JOB] = KZ__ENVELOPE__BODY_JOB,
    [WIRE_MODEL_REQUEST] = KZ__ENVELOPE__BODY_MODEL_REQUEST,
    [WIRE_MODEL_REPLY] = KZ__ENVELOPE__BODY_MODEL_REPLY,
    [WIRE_GAME_SUBMIT] = KZ__ENVELOPE__BODY_GAME_SUBMIT,
    [WIRE_GAME_ACK] = KZ__ENVELOPE__BODY_GAME_ACK,
    [WIRE_GAME_REJECT] = KZ__ENVELOPE__BODY_GAME_REJECT,
    [WIRE_BATCH_REQUEST] = KZ__ENVELOPE__BODY_BATCH_REQUEST,
    [WIRE_BATCH_REPLY] = KZ__ENVELOPE__BODY_BATCH_REPLY,
    [WIRE_CANDIDATE_SUBMIT] = KZ__ENVELOPE__BODY_CANDIDATE_SUBMIT,
    [WIRE_CANDIDATE_ACK] = KZ__ENVELOPE__BODY_CANDIDATE_ACK,
    [WIRE_TRAINER_STATS] = KZ__ENVELOPE__BODY_TRAINER_STATS,
    [WIRE_STATS_ACK] = KZ__ENVELOPE__BODY_STATS_ACK,
    [WIRE_ANNOUNCEMENT] = KZ__ENVELOPE__BODY_ANNOUNCEMENT,
    [WIRE_ERROR] = KZ__ENVELOPE__BODY_ERROR,
};

const char *wire_kind_name(int kind)
{
    return kind >= 0 && kind < WIRE_KIND_COUNT ? s_kind_names[kind] : "?";
}

const char *wire_error_name(uint32_t code)
{
    switch (code) {
    case WIRE_ERR_NONE: return "none";
    case WIRE_ERR_VERSION: return "version";
    case WIRE_ERR_MALFORMED: return "malformed";
    case WIRE_ERR_NOT_FOUND: return "not-found";
    case WIRE_ERR_REFUSED: return "refused";
    case WIRE_ERR_INTERNAL: return "internal";
    case WIRE_ERR_FORBIDDEN: return "forbidden";
    default: return "unknown";
    }
}

uint64_t wire_blob_checksum(const void *blob, size_t len)
{
    return hash_bytes(blob, len, 0);
}

void wire_buf_free(wire_buf *b)
{
    if (!b)
        return;
    free(b->data);
    *b = (wire_buf){0};
}

/* protobuf-c wants non-const pointers for what it only reads when packing. */
static char *s_str(const char *s)
{
    return (char *)(s ? s : "");
}

static ProtobufCBinaryData s_bin(const uint8_t *p, size_t n)
{
    return (ProtobufCBinaryData){.len = p ? n : 0, .data = (uint8_t *)p};
}

/* All body messages, so that encoding needs no allocation. */
typedef union body_storage {
    Kz__Hello hello;
    Kz__Welcome welcome;
    Kz__Heartbeat heartbeat;
    Kz__HeartbeatReply heartbeat_reply;
    Kz__JobRequest job_request;
    Kz__Job job;
    Kz__ModelRequest model_request;
    Kz__ModelReply model_reply;
    Kz__GameSubmit game_submit;
    Kz__GameAck game_ack;
    Kz__GameReject game_reject;
    Kz__BatchRequest batch_request;
    Kz__BatchReply batch_reply;
    Kz__CandidateSubmit candidate_submit;
    Kz__CandidateAck candidate_ack;
    Kz__TrainerStats trainer_stats;
    Kz__StatsAck stats_ack;
    Kz__Announcement announcement;
    Kz__Error error;
} body_storage;

/* Step 1 of encoding: fills the protobuf-c body from m; 0 or KZ_EINVAL. */
static int s_fill_body(const wire_msg *m, Kz__Envelope *env, body_storage *b)
{
    switch (m->kind) {
    case WIRE_HELLO: {
        const wire_hello *h = &m->u.hello;
        kz__hello__init(&b->hello);
        b->hello.role = s_str(h->role);
        b->hello.host = s_str(h->host);
        b->hello.pid = h->pid;
        b->hello.software = s_str(h->software);
        b->hello.game = s_str(h->game);
        b->hello.slots = h->slots;
        env->hello = &b->hello;
        break;
    }
    case WIRE_WELCOME: {
        const wire_welcome *w = &m->u.welcome;
        kz__welcome__init(&b->welcome);
        b->welcome.coordinator = s_str(w->coordinator);
        b->welcome.instance = w->instance;
        b->welcome.game = s_str(w->game);
        b->welcome.heartbeat_ms = w->heartbeat_ms;
        b->welcome.expiry_ms = w->expiry_ms;
        b->welcome.max_msg_bytes = w->max_msg_bytes;
        b->welcome.best_version = w->best_version;
        b->welcome.max_record_bytes = w->max_record_bytes;
        env->welcome = &b->welcome;
        break;
    }
    case WIRE_HEARTBEAT: {
        const wire_heartbeat *h = &m->u.heartbeat;
        if (h->n_arena_slots && !h->arena_slots)
            return KZ_EINVAL;
        kz__heartbeat__init(&b->heartbeat);
        b->heartbeat.games_in_flight = h->games_in_flight;
        b->heartbeat.games_done = h->games_done;
        b->heartbeat.arena_candidate = h->arena_candidate;
        b->heartbeat.n_arena_slots = h->n_arena_slots;
        b->heartbeat.arena_slots = (uint32_t *)h->arena_slots;
        b->heartbeat.pending = h->pending;
        b->heartbeat.model_version = h->model_version;
        b->heartbeat.sims_per_s = h->sims_per_s;
        env->heartbeat = &b->heartbeat;
        break;
    }
    case WIRE_HEARTBEAT_REPLY: {
        const wire_heartbeat_reply *h = &m->u.heartbeat_reply;
        kz__heartbeat_reply__init(&b->heartbeat_reply);
        b->heartbeat_reply.best_version = h->best_version;
        b->heartbeat_reply.candidate_version = h->candidate_version;
        b->heartbeat_reply.instance = h->instance;
        env->heartbeat_reply = &b->heartbeat_reply;
        break;
    }
    case WIRE_JOB_REQUEST: {
        const wire_job_request *j = &m->u.job_request;
        if (j->n_arena_slots && !j->arena_slots)
            return KZ_EINVAL;
        kz__job_request__init(&b->job_request);
        b->job_request.free_slots = j->free_slots;
        b->job_request.arena_candidate = j->arena_candidate;
        b->job_request.n_arena_slots = j->n_arena_slots;
        b->job_request.arena_slots = (uint32_t *)j->arena_slots;
        env->job_request = &b->job_request;
        break;
    }
    case WIRE_JOB: {
        const wire_job *j = &m->u.job;
        if (j->n_arena && (!j->arena_slots || !j->candidate_players))
            return KZ_EINVAL;
        if (j->kind < WIRE_JOB_WAIT || j->kind > WIRE_JOB_EVAL)
            return KZ_EINVAL;
        if (j->n_start && (!j->start_positions ||
                           (j->kind == WIRE_JOB_SELFPLAY ? j->n_start > j->games
                                                         : j->n_start != j->n_arena)))
            return KZ_EINVAL;
        kz__job__init(&b->job);
        b->job.kind = (Kz__JobKind)j->kind;
        b->job.model_version = j->model_version;
        b->job.model_checksum = j->model_checksum;
        b->job.opponent_version = j->opponent_version;
        b->job.opponent_checksum = j->opponent_checksum;
        b->job.n_arena_slots = j->n_arena;
        b->job.arena_slots = (uint32_t *)j->arena_slots;
        b->job.n_candidate_players = j->n_arena;
        b->job.candidate_players = (int32_t *)j->candidate_players;
        b->job.games = j->games;
        b->job.retry_ms = j->retry_ms;
        b->job.simulations = j->simulations;
        b->job.n_start_positions = j->n_start;
        b->job.start_positions = (char **)j->start_positions;
        b->job.model_player = (char *)(j->model_player ? j->model_player : "");
        b->job.opponent_player = (char *)(j->opponent_player ? j->opponent_player : "");
        b->job.game = s_str(j->game);
        env->job = &b->job;
        break;
    }
    case WIRE_MODEL_REQUEST:
        kz__model_request__init(&b->model_request);
        b->model_request.version = m->u.model_request.version;
        env->model_request = &b->model_request;
        break;
    case WIRE_MODEL_REPLY: {
        const wire_model_reply *r = &m->u.model_reply;
        kz__model_reply__init(&b->model_reply);
        b->model_reply.version = r->version;
        b->model_reply.checksum = r->checksum;
        b->model_reply.blob = s_bin(r->blob, r->blob_len);
        b->model_reply.parent = r->parent;
        b->model_reply.created_ms = r->created_ms;
        b->model_reply.game = s_str(r->game);
        env->model_reply = &b->model_reply;
        break;
    }
    case WIRE_GAME_SUBMIT:
        kz__game_submit__init(&b->game_submit);
        b->game_submit.record = s_bin(m->u.game_submit.record, m->u.game_submit.record_len);
        b->game_submit.arena_slot = m->u.game_submit.arena_slot;
        env->game_submit = &b->game_submit;
        break;
    case WIRE_GAME_ACK:
        kz__game_ack__init(&b->game_ack);
        b->game_ack.game_id = s_bin(m->u.game_ack.game_id, m->u.game_ack.game_id_len);
        b->game_ack.duplicate = m->u.game_ack.duplicate;
        b->game_ack.sequence = m->u.game_ack.sequence;
        env->game_ack = &b->game_ack;
        break;
    case WIRE_GAME_REJECT:
        kz__game_reject__init(&b->game_reject);
        b->game_reject.game_id = s_bin(m->u.game_reject.game_id, m->u.game_reject.game_id_len);
        b->game_reject.reason = (Kz__RejectReason)m->u.game_reject.reason;
        b->game_reject.detail = s_str(m->u.game_reject.detail);
        env->game_reject = &b->game_reject;
        break;
    case WIRE_BATCH_REQUEST:
        kz__batch_request__init(&b->batch_request);
        b->batch_request.size = m->u.batch_request.size;
        b->batch_request.min_positions = m->u.batch_request.min_positions;
        b->batch_request.aux = m->u.batch_request.aux;
        env->batch_request = &b->batch_request;
        break;
    case WIRE_BATCH_REPLY: {
        const wire_batch_reply *r = &m->u.batch_reply;
        size_t na = r->n && r->offsets ? r->offsets[r->n] : 0;
        if (r->n && (!r->packed || !r->z || !r->offsets || (na && (!r->actions || !r->probs))))
            return KZ_EINVAL;
        const wire_batch_aux *ax = &r->aux;
        size_t no = r->n && ax->opp_offsets ? ax->opp_offsets[r->n] : 0;
        if (r->n && ((ax->material && !ax->material_w) ||
                     (no && (!ax->opp_actions || !ax->opp_probs))))
            return KZ_EINVAL;
        kz__batch_reply__init(&b->batch_reply);
        b->batch_reply.n = r->n;
        b->batch_reply.packed_bytes = r->packed_bytes;
        b->batch_reply.packed = s_bin(r->packed, (size_t)r->n * r->packed_bytes);
        b->batch_reply.n_z = r->n;
        b->batch_reply.z = (float *)r->z;
        b->batch_reply.n_offsets = r->n ? r->n + 1 : 0;
        b->batch_reply.offsets = (uint32_t *)r->offsets;
        b->batch_reply.n_actions = na;
        b->batch_reply.actions = (uint32_t *)r->actions;
        b->batch_reply.n_probs = na;
        b->batch_reply.probs = (float *)r->probs;
        b->batch_reply.window_lo = r->window_lo;
        b->batch_reply.window_hi = r->window_hi;
        b->batch_reply.best_version = r->best_version;
        b->batch_reply.games_total = r->games_total;
        b->batch_reply.n_q = r->q ? r->n : 0;
        b->batch_reply.q = (float *)r->q;
        b->batch_reply.n_material = b->batch_reply.n_material_weight = ax->material ? r->n : 0;
        b->batch_reply.material = (float *)ax->material;
        b->batch_reply.material_weight = (float *)ax->material_w;
        b->batch_reply.n_opp_offsets = r->n && ax->opp_offsets ? r->n + 1 : 0;
        b->batch_reply.opp_offsets = (uint32_t *)ax->opp_offsets;
        b->batch_reply.n_opp_actions = b->batch_reply.n_opp_probs = no;
        b->batch_reply.opp_actions = (uint32_t *)ax->opp_actions;
        b->batch_reply.opp_probs = (float *)ax->opp_probs;
        b->batch_reply.game = s_str(r->game);
        env->batch_reply = &b->batch_reply;
        break;
    }
    case WIRE_CANDIDATE_SUBMIT: {
        const wire_candidate_submit *c = &m->u.candidate_submit;
        kz__candidate_submit__init(&b->candidate_submit);
        b->candidate_submit.blob = s_bin(c->blob, c->blob_len);
        b->candidate_submit.checksum = c->checksum;
        b->candidate_submit.parent_version = c->parent_version;
        b->candidate_submit.trainer_step = c->trainer_step;
        env->candidate_submit = &b->candidate_submit;
        break;
    }
    case WIRE_CANDIDATE_ACK:
        kz__candidate_ack__init(&b->candidate_ack);
        b->candidate_ack.version = m->u.candidate_ack.version;
        b->candidate_ack.duplicate = m->u.candidate_ack.duplicate;
        b->candidate_ack.queued = m->u.candidate_ack.queued;
        env->candidate_ack = &b->candidate_ack;
        break;
    case WIRE_TRAINER_STATS: {
        const wire_trainer_stats *t = &m->u.trainer_stats;
        kz__trainer_stats__init(&b->trainer_stats);
        b->trainer_stats.step = t->step;
        b->trainer_stats.loss = t->loss;
        b->trainer_stats.policy_loss = t->policy_loss;
        b->trainer_stats.value_loss = t->value_loss;
        b->trainer_stats.l2_loss = t->l2_loss;
        b->trainer_stats.steps_per_s = t->steps_per_s;
        b->trainer_stats.samples_per_s = t->samples_per_s;
        b->trainer_stats.learning_rate = t->learning_rate;
        b->trainer_stats.samples_seen = t->samples_seen;
        b->trainer_stats.last_candidate = t->last_candidate;
        b->trainer_stats.opp_policy_loss = t->opp_policy_loss;
        b->trainer_stats.material_loss = t->material_loss;
        env->trainer_stats = &b->trainer_stats;
        break;
    }
    case WIRE_STATS_ACK:
        kz__stats_ack__init(&b->stats_ack);
        b->stats_ack.best_version = m->u.stats_ack.best_version;
        env->stats_ack = &b->stats_ack;
        break;
    case WIRE_ANNOUNCEMENT: {
        const wire_announcement *a = &m->u.announcement;
        kz__announcement__init(&b->announcement);
        b->announcement.best_version = a->best_version;
        b->announcement.checksum = a->checksum;
        b->announcement.previous_version = a->previous_version;
        b->announcement.wins = a->wins;
        b->announcement.draws = a->draws;
        b->announcement.losses = a->losses;
        env->announcement = &b->announcement;
        break;
    }
    case WIRE_ERROR:
        kz__error__init(&b->error);
        b->error.code = (Kz__ErrorCode)m->u.error.code;
        b->error.message = s_str(m->u.error.message);
        b->error.supported_version = m->u.error.supported_version;
        env->error = &b->error;
        break;
    default:
        return KZ_EINVAL;
    }
    env->body_case = (Kz__Envelope__BodyCase)s_case_of_kind[m->kind];
    return 0;
}

int wire_encode(const wire_msg *m, wire_buf *out)
{
    Kz__Envelope env = KZ__ENVELOPE__INIT;
    body_storage body;
    if (!m || !out)
        return KZ_EINVAL;
    int rc = s_fill_body(m, &env, &body);
    if (rc)
        return rc;
    env.version = m->version ? m->version : WIRE_PROTOCOL_VERSION;
    env.request_id = m->request_id;
    env.client = s_str(m->client);
    size_t need = kz__envelope__get_packed_size(&env);
    if (need > out->cap) {
        size_t cap = out->cap ? out->cap : 256;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(out->data, cap);
        if (!p)
            return KZ_ENOMEM;
        out->data = p;
        out->cap = cap;
    }
    out->len = kz__envelope__pack(&env, out->data);
    KZ_CHECK(out->len == need);
    return 0;
}

void wire_msg_clear(wire_msg *m)
{
    if (!m)
        return;
    if (m->decoded)
        kz__envelope__free_unpacked(m->decoded, NULL);
    memset(m, 0, sizeof *m);
}

static int s_kind_of_case(int c)
{
    for (int k = 1; k < WIRE_KIND_COUNT; k++)
        if (s_case_of_kind[k] == c)
            return k;
    return WIRE_NONE;
}

/* Step 2 of decoding: copies the unpacked body into m, checking the arrays
 * that must agree. 0 or KZ_ECORRUPT. */
static int s_read_body(const Kz__Envelope *env, wire_msg *m)
{
    switch (m->kind) {
    case WIRE_HELLO: {
        const Kz__Hello *h = env->hello;
        m->u.hello = (wire_hello){h->role, h->host, h->pid, h->software, h->game, h->slots};
        break;
    }
    case WIRE_WELCOME: {
        const Kz__Welcome *w = env->welcome;
        m->u.welcome = (wire_welcome){w->coordinator, w->instance, w->game, w->heartbeat_ms,
                                      w->expiry_ms, w->max_msg_bytes, w->best_version,
                                      w->max_record_bytes};
        break;
    }
    case WIRE_HEARTBEAT: {
        const Kz__Heartbeat *h = env->heartbeat;
        m->u.heartbeat = (wire_heartbeat){h->games_in_flight, h->games_done, h->arena_candidate,
                                          h->arena_slots, h->n_arena_slots, h->pending,
                                          h->model_version, h->sims_per_s};
        break;
    }
    case WIRE_HEARTBEAT_REPLY: {
        const Kz__HeartbeatReply *h = env->heartbeat_reply;
        m->u.heartbeat_reply = (wire_heartbeat_reply){h->best_version, h->candidate_version,
                                                      h->instance};
        break;
    }
    case WIRE_JOB_REQUEST: {
        const Kz__JobRequest *j = env->job_request;
        m->u.job_request = (wire_job_request){j->free_slots, j->arena_candidate, j->arena_slots,
                                              j->n_arena_slots};
        break;
    }
    case WIRE_JOB: {
        const Kz__Job *j = env->job;
        if (j->n_arena_slots != j->n_candidate_players)
            return KZ_ECORRUPT;
        if (j->n_start_positions &&
            (j->kind == KZ__JOB_KIND__JOB_KIND_SELFPLAY ? j->n_start_positions > j->games
                                                        : j->n_start_positions != j->n_arena_slots))
            return KZ_ECORRUPT;
        if ((int)j->kind < WIRE_JOB_WAIT || (int)j->kind > WIRE_JOB_EVAL)
            return KZ_ECORRUPT;
        m->u.job = (wire_job){(int)j->kind, j->model_version, j->model_checksum,
                              j->opponent_version, j->opponent_checksum, j->arena_slots,
                              j->candidate_players, j->n_arena_slots, j->games, j->retry_ms,
                              j->simulations, j->start_positions, j->n_start_positions,
                              j->model_player, j->opponent_player, j->game};
        break;
    }
    case WIRE_MODEL_REQUEST:
        m->u.model_request.version = env->model_request->version;
        break;
    case WIRE_MODEL_REPLY: {
        const Kz__ModelReply *r = env->model_reply;
        m->u.model_reply = (wire_model_reply){r->version, r->checksum, r->blob.data, r->blob.len,
                                              r->parent, r->created_ms, r->game};
        break;
    }
    case WIRE_GAME_SUBMIT: {
        const Kz__GameSubmit *g = env->game_submit;
        m->u.game_submit = (wire_game_submit){g->record.data, g->record.len, g->arena_slot};
        break;
    }
    case WIRE_GAME_ACK: {
        const Kz__GameAck *a = env->game_ack;
        m->u.game_ack = (wire_game_ack){a->game_id.data, a->game_id.len, a->duplicate,
                                        a->sequence};
        break;
    }
    case WIRE_GAME_REJECT: {
        const Kz__GameReject *r = env->game_reject;
        m->u.game_reject = (wire_game_reject){r->game_id.data, r->game_id.len,
                                              (uint32_t)r->reason, r->detail};
        break;
    }
    case WIRE_BATCH_REQUEST:
        m->u.batch_request = (wire_batch_request){env->batch_request->size,
                                                  env->batch_request->min_positions,
                                                  env->batch_request->aux};
        break;
    case WIRE_BATCH_REPLY: {
        const Kz__BatchReply *r = env->batch_reply;
        /* Every array must agree with n, and the offsets must be a partition. */
        if (r->n == 0) {
            if (r->n_z || r->n_q || r->n_offsets > 1 || r->n_actions || r->n_probs ||
                r->packed.len)
                return KZ_ECORRUPT;
        } else {
            if (r->packed_bytes == 0 || r->packed_bytes > 4096 || r->n_z != r->n ||
                (r->n_q && r->n_q != r->n) || r->n_offsets != (size_t)r->n + 1 ||
                r->n_actions != r->n_probs ||
                r->packed.len != (size_t)r->n * r->packed_bytes)
                return KZ_ECORRUPT;
            if (r->offsets[0] != 0 || r->offsets[r->n] != r->n_actions)
                return KZ_ECORRUPT;
            for (uint32_t i = 0; i < r->n; i++)
                if (r->offsets[i + 1] < r->offsets[i])
                    return KZ_ECORRUPT;
        }
        /* The auxiliary targets likewise: all or nothing, a partition. */
        if ((r->n_material && r->n_material != r->n) ||
            r->n_material_weight != r->n_material || r->n_opp_actions != r->n_opp_probs ||
            (r->n_opp_offsets && r->n_opp_offsets != (size_t)r->n + 1) ||
            (!r->n_opp_offsets && r->n_opp_actions))
            return KZ_ECORRUPT;
        if (r->n_opp_offsets) {
            if (r->opp_offsets[0] != 0 || r->opp_offsets[r->n] != r->n_opp_actions)
                return KZ_ECORRUPT;
            for (uint32_t i = 0; i < r->n; i++)
                if (r->opp_offsets[i + 1] < r->opp_offsets[i])
                    return KZ_ECORRUPT;
        }
        m->u.batch_reply = (wire_batch_reply){
            r->n, r->packed_bytes, r->packed.data, r->z, r->offsets, r->actions, r->probs,
            r->window_lo, r->window_hi, r->best_version, r->games_total,
            r->n_q ? r->q : NULL,
            {r->n_material ? r->material : NULL, r->n_material ? r->material_weight : NULL,
             r->n_opp_offsets ? r->opp_offsets : NULL, r->n_opp_offsets ? r->opp_actions : NULL,
             r->n_opp_offsets ? r->opp_probs : NULL},
            r->game};
        break;
    }
    case WIRE_CANDIDATE_SUBMIT: {
        const Kz__CandidateSubmit *c = env->candidate_submit;
        m->u.candidate_submit = (wire_candidate_submit){c->blob.data, c->blob.len, c->checksum,
                                                        c->parent_version, c->trainer_step};
        break;
    }
    case WIRE_CANDIDATE_ACK: {
        const Kz__CandidateAck *a = env->candidate_ack;
        m->u.candidate_ack = (wire_candidate_ack){a->version, a->duplicate, a->queued};
        break;
    }
    case WIRE_TRAINER_STATS: {
        const Kz__TrainerStats *t = env->trainer_stats;
        m->u.trainer_stats = (wire_trainer_stats){
            t->step, t->loss, t->policy_loss, t->value_loss, t->l2_loss, t->steps_per_s,
            t->samples_per_s, t->learning_rate, t->samples_seen, t->last_candidate,
            t->opp_policy_loss, t->material_loss};
        break;
    }
    case WIRE_STATS_ACK:
        m->u.stats_ack.best_version = env->stats_ack->best_version;
        break;
    case WIRE_ANNOUNCEMENT: {
        const Kz__Announcement *a = env->announcement;
        m->u.announcement = (wire_announcement){a->best_version, a->checksum,
                                                a->previous_version, a->wins, a->draws,
                                                a->losses};
        break;
    }
    case WIRE_ERROR: {
        const Kz__Error *e = env->error;
        m->u.error = (wire_error){(uint32_t)e->code, e->message, e->supported_version};
        break;
    }
    default:
        return KZ_ECORRUPT;
    }
    return 0;
}

int wire_decode(wire_msg *m, const void *buf, size_t len, size_t max_len)
{
    wire_msg_clear(m);
    if (len > max_len)
        return KZ_EFULL;
    if (!buf && len)
        return KZ_ECORRUPT;
    Kz__Envelope *env = kz__envelope__unpack(NULL, len, buf);
    if (!env)
        return KZ_ECORRUPT;
    m->decoded = env;
    m->version = env->version;
    m->request_id = env->request_id;
    m->client = env->client;
    if (env->version == 0) { /* no version at all: not one of anybody's messages */
        wire_msg_clear(m);
        return KZ_ECORRUPT;
    }
    if (env->version != WIRE_PROTOCOL_VERSION) {
        /* Read the kind only as a hint: the body may mean something else. */
        m->kind = WIRE_NONE;
        return KZ_EVERSION;
    }
    m->kind = s_kind_of_case(env->body_case);
    /* An unset oneof or a body whose submessage is missing is not a message. */
    if (m->kind == WIRE_NONE || !env->hello) {
        wire_msg_clear(m);
        return KZ_ECORRUPT;
    }
    if (s_read_body(env, m)) {
        wire_msg_clear(m);
        return KZ_ECORRUPT;
    }
    return 0;
}

void wire_make_refusal(const wire_msg *req, wire_msg *reply, char *msgbuf, size_t msglen)
{
    snprintf(msgbuf, msglen,
             "protocol version %u is not supported: this coordinator speaks version %u; "
             "upgrade the client",
             (unsigned)req->version, (unsigned)WIRE_PROTOCOL_VERSION);
    wire_make_error(req, reply, WIRE_ERR_VERSION, msgbuf);
}

void wire_make_error(const wire_msg *req, wire_msg *reply, uint32_t code, const char *message)
{
    memset(reply, 0, sizeof *reply);
    reply->request_id = req ? req->request_id : 0;
    reply->kind = WIRE_ERROR;
    reply->u.error = (wire_error){code, message, WIRE_PROTOCOL_VERSION};
}

int wire_endpoint_check(const char *ep, bool bind, char *err, size_t errlen)
{
    static const char *const want = "tcp://HOST:PORT, ipc://PATH or inproc://NAME";
    const char *sep = ep ? strstr(ep, "://") : NULL;
    const char *rest = sep ? sep + 3 : NULL;
    bool ok = false;
    if (sep && (size_t)(sep - ep) == 3 && !strncmp(ep, "tcp", 3)) {
        const char *colon = strrchr(rest, ':');
        if (colon && colon > rest) {
            const char *port = colon + 1;
            long v;
            ok = (bind && !strcmp(port, "*")) ||
                 (strspn(port, "0123456789") == strlen(port) &&
                  parse_long(port, 1, 65535, &v) == 0);
            for (const char *c = rest; ok && c < colon; c++)
                ok = (unsigned char)*c > 0x20 && (unsigned char)*c < 0x7f;
        }
    } else if (sep && (((size_t)(sep - ep) == 3 && !strncmp(ep, "ipc", 3)) ||
                       ((size_t)(sep - ep) == 6 && !strncmp(ep, "inproc", 6)))) {
        ok = rest[0] != 0;
    }
    if (ok)
        return 0;
    char shown[64];
    text_printable(shown, sizeof shown, ep, SIZE_MAX);
    snprintf(err, errlen, "'%s' is not an endpoint (%s%s)", shown, want,
             bind ? "; PORT may be *" : "");
    return KZ_EINVAL;
}
