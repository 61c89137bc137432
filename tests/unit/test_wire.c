/* Tests of net/wire: every message kind survives encode/decode, garbage
 * and oversized input are refused without crashing, and another protocol
 * version is reported so that it can be refused with a clear message. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "net/wire.h"

#define MAX_MSG (1u << 20)

/* Encodes m and decodes it into out; asserts both succeed. */
static void s_roundtrip(const wire_msg *m, wire_msg *out, wire_buf *buf)
{
    cr_assert_eq(wire_encode(m, buf), 0, "encode %s", wire_kind_name(m->kind));
    cr_assert_gt(buf->len, 0);
    int rc = wire_decode(out, buf->data, buf->len, MAX_MSG);
    cr_assert_eq(rc, 0, "decode %s: %s", wire_kind_name(m->kind), err_str(rc));
    cr_assert_eq(out->kind, m->kind);
    cr_assert_eq(out->request_id, m->request_id);
    cr_assert_eq(out->version, WIRE_PROTOCOL_VERSION);
}

Test(wire, envelope_and_small_bodies_roundtrip)
{
    wire_buf buf = {0};
    wire_msg m = {0}, d = {0};
    m.request_id = 0x123456789abcULL;
    m.client = "host-1-abcd";

    m.kind = WIRE_HELLO;
    m.u.hello = (wire_hello){"worker", "box", 4242, "kz test", "khreibaga", 16};
    s_roundtrip(&m, &d, &buf);
    cr_assert_str_eq(d.client, "host-1-abcd");
    cr_assert_str_eq(d.u.hello.role, "worker");
    cr_assert_str_eq(d.u.hello.host, "box");
    cr_assert_eq(d.u.hello.pid, 4242);
    cr_assert_str_eq(d.u.hello.game, "khreibaga");
    cr_assert_eq(d.u.hello.slots, 16);

    m.kind = WIRE_WELCOME;
    m.u.welcome = (wire_welcome){"coord:1", 77, "khreibaga", 1000, 10000, 1u << 26, 3, 1u << 20};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.welcome.instance, 77);
    cr_assert_eq(d.u.welcome.expiry_ms, 10000);
    cr_assert_eq(d.u.welcome.max_msg_bytes, 1u << 26);
    cr_assert_eq(d.u.welcome.best_version, 3);
    cr_assert_eq(d.u.welcome.max_record_bytes, 1u << 20);

    uint32_t slots[3] = {4, 9, 11};
    m.kind = WIRE_HEARTBEAT;
    m.u.heartbeat = (wire_heartbeat){5, 1234567, 7, slots, 3, 2, 12, 4567.5f};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.heartbeat.games_done, 1234567);
    cr_assert_eq(d.u.heartbeat.n_arena_slots, 3);
    cr_assert_eq(d.u.heartbeat.arena_slots[2], 11);
    cr_assert_eq(d.u.heartbeat.pending, 2);
    cr_assert_eq(d.u.heartbeat.model_version, 12);
    cr_assert_float_eq(d.u.heartbeat.sims_per_s, 4567.5f, 1e-3);

    m.kind = WIRE_HEARTBEAT_REPLY;
    m.u.heartbeat_reply = (wire_heartbeat_reply){4, 5, 99};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.heartbeat_reply.candidate_version, 5);
    cr_assert_eq(d.u.heartbeat_reply.instance, 99);

    m.kind = WIRE_JOB_REQUEST;
    m.u.job_request = (wire_job_request){8, 7, slots, 2};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.job_request.free_slots, 8);
    cr_assert_eq(d.u.job_request.n_arena_slots, 2);
    cr_assert_eq(d.u.job_request.arena_slots[1], 9);

    int32_t colours[3] = {0, 1, 1};
    m.kind = WIRE_JOB;
    char *openings[3] = {"bbbbbbbbbbbb.wwwwwwwwwwww b", "", "b...........w............ w"};
    m.u.job = (wire_job){WIRE_JOB_ARENA, 7, 0xdeadbeefcafeULL, 6, 0x1234ULL, slots, colours, 3,
                         0, 0, 64, openings, 3, "", "", "khreibaga"};
    s_roundtrip(&m, &d, &buf);
    cr_assert_str_eq(d.u.job.game, "khreibaga");
    cr_assert_eq(d.u.job.kind, WIRE_JOB_ARENA);
    cr_assert_eq(d.u.job.model_checksum, 0xdeadbeefcafeULL);
    cr_assert_eq(d.u.job.opponent_version, 6);
    cr_assert_eq(d.u.job.n_arena, 3);
    cr_assert_eq(d.u.job.candidate_players[1], 1);
    cr_assert_eq(d.u.job.arena_slots[0], 4);
    cr_assert_eq(d.u.job.simulations, 64);
    cr_assert_eq(d.u.job.n_start, 3);
    cr_assert_str_eq(d.u.job.start_positions[2], "b...........w............ w");
    cr_assert_str_eq(d.u.job.start_positions[1], "");

    /* A rating job: side A a model, side B a baseline player. */
    m.u.job = (wire_job){WIRE_JOB_EVAL, 7, 0xdeadbeefcafeULL, 0, 0, slots, colours, 3,
                         0, 0, 200, openings, 3, "", "alphabeta:4", "khreibaga"};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.job.kind, WIRE_JOB_EVAL);
    cr_assert_str_eq(d.u.job.model_player, "");
    cr_assert_str_eq(d.u.job.opponent_player, "alphabeta:4");
    cr_assert_eq(d.u.job.opponent_version, 0);
    /* Openings must come one per slot. */
    m.u.job.n_start = 2;
    cr_assert_eq(wire_encode(&m, &buf), KZ_EINVAL);
    /* A self-play job may name the openings of its first games (at most
     * `games` of them; the rest start from the initial position). */
    m.u.job = (wire_job){WIRE_JOB_SELFPLAY, 7, 0xdeadbeefcafeULL, 0, 0, NULL, NULL, 0,
                         4, 0, 200, openings, 3, NULL, NULL, NULL};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.job.kind, WIRE_JOB_SELFPLAY);
    cr_assert_eq(d.u.job.games, 4);
    cr_assert_eq(d.u.job.n_start, 3);
    cr_assert_str_eq(d.u.job.start_positions[0], "bbbbbbbbbbbb.wwwwwwwwwwww b");
    m.u.job.games = 2;
    cr_assert_eq(wire_encode(&m, &buf), KZ_EINVAL, "more openings than games");

    m.kind = WIRE_MODEL_REQUEST;
    m.u.model_request.version = 12;
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.model_request.version, 12);

    m.kind = WIRE_GAME_ACK;
    uint8_t id[16];
    for (int i = 0; i < 16; i++)
        id[i] = (uint8_t)(i * 7 + 1);
    m.u.game_ack = (wire_game_ack){id, 16, true, 987654321};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.game_ack.game_id_len, 16);
    cr_assert_eq(memcmp(d.u.game_ack.game_id, id, 16), 0);
    cr_assert(d.u.game_ack.duplicate);
    cr_assert_eq(d.u.game_ack.sequence, 987654321);

    m.kind = WIRE_GAME_REJECT;
    m.u.game_reject = (wire_game_reject){id, 16, 6, "policy on illegal action 7-12 at ply 3"};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.game_reject.reason, 6);
    cr_assert_str_eq(d.u.game_reject.detail, "policy on illegal action 7-12 at ply 3");

    m.kind = WIRE_BATCH_REQUEST;
    m.u.batch_request = (wire_batch_request){256, 10000, true};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.batch_request.size, 256);
    cr_assert_eq(d.u.batch_request.min_positions, 10000);
    cr_assert(d.u.batch_request.aux);

    m.kind = WIRE_CANDIDATE_ACK;
    m.u.candidate_ack = (wire_candidate_ack){9, false, true};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.candidate_ack.version, 9);
    cr_assert(d.u.candidate_ack.queued && !d.u.candidate_ack.duplicate);

    m.kind = WIRE_TRAINER_STATS;
    m.u.trainer_stats = (wire_trainer_stats){1500, 2.5f, 1.75f, 0.5f, 0.25f, 12.5f, 3200.f,
                                             0.01f, 480000, 8, 3.5f, 0.125f};
    s_roundtrip(&m, &d, &buf);
    cr_assert_float_eq(d.u.trainer_stats.opp_policy_loss, 3.5f, 1e-9);
    cr_assert_float_eq(d.u.trainer_stats.material_loss, 0.125f, 1e-9);
    cr_assert_eq(d.u.trainer_stats.step, 1500);
    cr_assert_float_eq(d.u.trainer_stats.policy_loss, 1.75f, 1e-9);
    cr_assert_float_eq(d.u.trainer_stats.samples_per_s, 3200.f, 1e-9);
    cr_assert_eq(d.u.trainer_stats.last_candidate, 8);

    m.kind = WIRE_STATS_ACK;
    m.u.stats_ack.best_version = 4;
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.stats_ack.best_version, 4);

    m.kind = WIRE_ANNOUNCEMENT;
    m.u.announcement = (wire_announcement){8, 0xfeedULL, 5, 30, 4, 16};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.announcement.best_version, 8);
    cr_assert_eq(d.u.announcement.previous_version, 5);
    cr_assert_eq(d.u.announcement.losses, 16);

    m.kind = WIRE_ERROR;
    m.u.error = (wire_error){WIRE_ERR_NOT_FOUND, "no model 12", 1};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.error.code, WIRE_ERR_NOT_FOUND);
    cr_assert_str_eq(d.u.error.message, "no model 12");

    wire_msg_clear(&d);
    wire_buf_free(&buf);
}

Test(wire, blobs_and_batches_roundtrip)
{
    wire_buf buf = {0};
    wire_msg m = {0}, d = {0};
    size_t blob_len = 300000;
    uint8_t *blob = malloc(blob_len);
    rng_t r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < blob_len; i++)
        blob[i] = (uint8_t)rng_next(&r);

    m.kind = WIRE_MODEL_REPLY;
    m.request_id = 3;
    m.u.model_reply = (wire_model_reply){4, wire_blob_checksum(blob, blob_len), blob, blob_len,
                                         3, 1700000000123LL, "khreibaga"};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.model_reply.blob_len, blob_len);
    cr_assert_eq(memcmp(d.u.model_reply.blob, blob, blob_len), 0);
    cr_assert_eq(wire_blob_checksum(d.u.model_reply.blob, d.u.model_reply.blob_len),
                 d.u.model_reply.checksum);
    cr_assert_eq(d.u.model_reply.created_ms, 1700000000123LL);

    m.kind = WIRE_CANDIDATE_SUBMIT;
    m.u.candidate_submit = (wire_candidate_submit){blob, 1000, 42, 3, 150};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.candidate_submit.blob_len, 1000);
    cr_assert_eq(memcmp(d.u.candidate_submit.blob, blob, 1000), 0);
    cr_assert_eq(d.u.candidate_submit.trainer_step, 150);

    m.kind = WIRE_GAME_SUBMIT;
    m.u.game_submit = (wire_game_submit){blob, 5000, 17};
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.game_submit.record_len, 5000);
    cr_assert_eq(memcmp(d.u.game_submit.record, blob, 5000), 0);
    cr_assert_eq(d.u.game_submit.arena_slot, 17);

    /* A batch of 3 samples with 2, 0 (no policy target) and 3 policy entries. */
    uint8_t packed[3 * 17];
    for (int i = 0; i < 51; i++)
        packed[i] = (uint8_t)(i * 3);
    float z[3] = {1, 0, -1};
    float q[3] = {0.5f, -0.25f, -1};
    uint32_t offsets[4] = {0, 2, 2, 5};
    uint32_t actions[5] = {31, 600, 7, 8, 9};
    float probs[5] = {0.25f, 0.75f, 0.5f, 0.25f, 0.25f};
    m.kind = WIRE_BATCH_REPLY;
    m.u.batch_reply = (wire_batch_reply){3, 17, packed, z, offsets, actions, probs, 100, 900, 2,
                                         40, q, {0}, "khreibaga"};
    s_roundtrip(&m, &d, &buf);
    const wire_batch_reply *b = &d.u.batch_reply;
    cr_assert_str_eq(b->game, "khreibaga");
    cr_assert_eq(b->n, 3);
    cr_assert_eq(b->packed_bytes, 17);
    cr_assert_eq(memcmp(b->packed, packed, sizeof packed), 0);
    cr_assert_float_eq(b->z[2], -1.f, 0);
    cr_assert_eq(b->offsets[3], 5);
    cr_assert_eq(b->actions[1], 600);
    cr_assert_float_eq(b->probs[1], 0.75f, 0);
    cr_assert_eq(b->window_lo, 100);
    cr_assert_eq(b->window_hi, 900);
    cr_assert_eq(b->games_total, 40);
    cr_assert_not_null(b->q);
    cr_assert_float_eq(b->q[0], 0.5f, 0);
    cr_assert_float_eq(b->q[1], -0.25f, 0);
    cr_assert_eq(b->offsets[1], b->offsets[2], "the empty policy stays empty");
    /* From a coordinator that sends no q: NULL, so the trainer uses z. */
    m.u.batch_reply.q = NULL;
    s_roundtrip(&m, &d, &buf);
    cr_assert_null(d.u.batch_reply.q);
    cr_assert_eq(d.u.batch_reply.n, 3);

    /* An empty batch is a valid answer too. */
    m.u.batch_reply = (wire_batch_reply){0};
    m.u.batch_reply.window_hi = 12;
    s_roundtrip(&m, &d, &buf);
    cr_assert_eq(d.u.batch_reply.n, 0);
    cr_assert_eq(d.u.batch_reply.window_hi, 12);

    wire_msg_clear(&d);
    wire_buf_free(&buf);
    free(blob);
}

Test(wire, encode_refuses_unset_and_inconsistent_messages)
{
    wire_buf buf = {0};
    wire_msg m = {0};
    cr_assert_eq(wire_encode(&m, &buf), KZ_EINVAL, "no body");
    m.kind = WIRE_KIND_COUNT;
    cr_assert_eq(wire_encode(&m, &buf), KZ_EINVAL, "unknown kind");
    m.kind = WIRE_JOB;
    m.u.job.kind = WIRE_JOB_ARENA;
    m.u.job.n_arena = 2; /* arrays missing */
    cr_assert_eq(wire_encode(&m, &buf), KZ_EINVAL);
    wire_buf_free(&buf);
}

Test(wire, oversized_input_is_refused_before_decoding)
{
    wire_buf buf = {0};
    wire_msg m = {0}, d = {0};
    uint8_t big[4000] = {0};
    m.kind = WIRE_GAME_SUBMIT;
    m.u.game_submit = (wire_game_submit){big, sizeof big, 0};
    cr_assert_eq(wire_encode(&m, &buf), 0);
    cr_assert_eq(wire_decode(&d, buf.data, buf.len, 1000), KZ_EFULL);
    cr_assert_eq(d.kind, WIRE_NONE);
    cr_assert_eq(wire_decode(&d, buf.data, buf.len, buf.len), 0, "exactly at the cap is fine");
    wire_msg_clear(&d);
    wire_buf_free(&buf);
}

Test(wire, empty_and_bodiless_envelopes_are_corrupt)
{
    wire_msg d = {0};
    cr_assert_eq(wire_decode(&d, "", 0, MAX_MSG), KZ_ECORRUPT, "no body at all");
    /* version 1, request id 5, no body */
    const uint8_t nobody[] = {0x08, 0x01, 0x10, 0x05};
    cr_assert_eq(wire_decode(&d, nobody, sizeof nobody, MAX_MSG), KZ_ECORRUPT);
    cr_assert_eq(d.kind, WIRE_NONE);
}

Test(wire, inconsistent_batch_arrays_are_corrupt)
{
    /* Envelope{version 1, batch_reply (field 22) {n 2, packed_bytes 17,
     * packed: 3 bytes}}: packed should hold 34 bytes. Written by hand, the
     * way a broken or hostile peer would. */
    const uint8_t bad[] = {0x08, 0x01, 0xb2, 0x01, 0x09, 0x08, 0x02, 0x10, 0x11,
                           0x1a, 0x03, 0xaa, 0xbb, 0xcc};
    wire_msg d = {0};
    cr_assert_eq(wire_decode(&d, bad, sizeof bad, MAX_MSG), KZ_ECORRUPT);
    cr_assert_eq(d.kind, WIRE_NONE);
    /* Job (field 15) with 1 arena slot and no colours. */
    const uint8_t badjob[] = {0x08, 0x01, 0x7a, 0x05, 0x08, 0x02, 0x32, 0x01, 0x03};
    cr_assert_eq(wire_decode(&d, badjob, sizeof badjob, MAX_MSG), KZ_ECORRUPT);
    /* The same job with its colour decodes. */
    const uint8_t goodjob[] = {0x08, 0x01, 0x7a, 0x08, 0x08, 0x02, 0x32, 0x01, 0x03,
                               0x3a, 0x01, 0x01};
    cr_assert_eq(wire_decode(&d, goodjob, sizeof goodjob, MAX_MSG), 0);
    cr_assert_eq(d.kind, WIRE_JOB);
    cr_assert_eq(d.u.job.n_arena, 1);
    cr_assert_eq(d.u.job.arena_slots[0], 3);
    cr_assert_eq(d.u.job.candidate_players[0], 1);
    wire_msg_clear(&d);
}

Test(wire, garbage_never_crashes_and_never_yields_a_bodiless_message)
{
    /* Random bytes, truncations and bit flips of a valid message: each
     * decode either fails cleanly or gives a message with a body. Run under
     * `make asan` this is also a memory-safety check. */
    wire_buf buf = {0};
    wire_msg m = {0}, d = {0};
    uint32_t slots[2] = {1, 2};
    int32_t colours[2] = {0, 1};
    m.kind = WIRE_JOB;
    m.request_id = 9;
    m.client = "w";
    m.u.job = (wire_job){WIRE_JOB_ARENA, 3, 4, 2, 5, slots, colours, 2, 0, 0, 0, NULL, 0, NULL,
                         NULL, NULL};
    cr_assert_eq(wire_encode(&m, &buf), 0);
    rng_t r;
    rng_seed(&r, 77);
    uint8_t tmp[512];
    int ok = 0, failed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        if (iter % 3 == 0) {
            len = rng_below(&r, sizeof tmp);
            for (size_t i = 0; i < len; i++)
                tmp[i] = (uint8_t)rng_next(&r);
        } else if (iter % 3 == 1) {
            len = rng_below(&r, (uint32_t)buf.len + 1);
            memcpy(tmp, buf.data, len);
        } else {
            len = buf.len;
            memcpy(tmp, buf.data, len);
            for (int k = 0; k < 3; k++)
                tmp[rng_below(&r, (uint32_t)len)] ^= (uint8_t)(1u << rng_below(&r, 8));
        }
        int rc = wire_decode(&d, tmp, len, MAX_MSG);
        if (rc == 0) {
            ok++;
            cr_assert(d.kind > WIRE_NONE && d.kind < WIRE_KIND_COUNT);
        } else {
            failed++;
            cr_assert(rc == KZ_ECORRUPT || rc == KZ_EVERSION, "rc %d", rc);
        }
    }
    cr_assert_gt(failed, 1000);
    cr_assert_gt(ok, 0, "some bit flips leave a valid message");
    wire_msg_clear(&d);
    wire_buf_free(&buf);
}

Test(wire, other_protocol_version_is_reported_and_refused_clearly)
{
    wire_buf buf = {0};
    wire_msg m = {0}, d = {0}, reply = {0};
    m.kind = WIRE_HELLO;
    m.version = WIRE_PROTOCOL_VERSION + 1;
    m.request_id = 31;
    m.client = "future-worker";
    m.u.hello = (wire_hello){"worker", "h", 1, "kz 2", "khreibaga", 1};
    cr_assert_eq(wire_encode(&m, &buf), 0);
    cr_assert_eq(wire_decode(&d, buf.data, buf.len, MAX_MSG), KZ_EVERSION);
    cr_assert_eq(d.version, WIRE_PROTOCOL_VERSION + 1);
    cr_assert_eq(d.request_id, 31, "the refusal can be addressed to the request");
    cr_assert_str_eq(d.client, "future-worker");

    char text[200];
    wire_make_refusal(&d, &reply, text, sizeof text);
    cr_assert_eq(reply.kind, WIRE_ERROR);
    cr_assert_eq(reply.request_id, 31);
    cr_assert_eq(reply.u.error.code, WIRE_ERR_VERSION);
    cr_assert_eq(reply.u.error.supported_version, WIRE_PROTOCOL_VERSION);
    char want_theirs[32], want_ours[48];
    snprintf(want_theirs, sizeof want_theirs, "version %d", WIRE_PROTOCOL_VERSION + 1);
    snprintf(want_ours, sizeof want_ours, "speaks version %d", WIRE_PROTOCOL_VERSION);
    cr_assert(strstr(reply.u.error.message, want_theirs), "%s", reply.u.error.message);
    cr_assert(strstr(reply.u.error.message, want_ours), "%s", reply.u.error.message);

    /* The refusal itself travels fine to an old client. */
    wire_msg back = {0};
    cr_assert_eq(wire_encode(&reply, &buf), 0);
    cr_assert_eq(wire_decode(&back, buf.data, buf.len, MAX_MSG), 0);
    cr_assert_eq(back.kind, WIRE_ERROR);
    cr_assert_eq(back.u.error.code, WIRE_ERR_VERSION);
    cr_assert_str_eq(back.u.error.message, text);
    wire_msg_clear(&back);
    wire_msg_clear(&d);
    wire_buf_free(&buf);
}

Test(wire, names)
{
    cr_assert_str_eq(wire_kind_name(WIRE_GAME_SUBMIT), "game_submit");
    cr_assert_str_eq(wire_kind_name(-1), "?");
    cr_assert_str_eq(wire_error_name(WIRE_ERR_VERSION), "version");
}

/* Endpoints from settings are checked before use (kz-coordinator, kz-worker,
 * kz-trainer, kz loadgen refuse a bad one with one line). */
Test(wire, endpoint_syntax)
{
    char err[200];
    const char *good[] = {"tcp://127.0.0.1:5555", "tcp://coord.example:1", "tcp://[::1]:65535",
                          "ipc:///run/kz.sock", "inproc://x"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_eq(wire_endpoint_check(good[i], false, err, sizeof err), 0, "%s: %s", good[i],
                     err);
    cr_assert_eq(wire_endpoint_check("tcp://0.0.0.0:*", true, err, sizeof err), 0);
    const char *bad[] = {"", "garbage", "tcp://", "tcp://host", "tcp://:5555", "tcp://h:0",
                         "tcp://h:65536", "tcp://h:-1", "tcp://h:5x", "tcp://h:*", "udp://h:1",
                         "ipc://", "tcp://a b:1", "tcp://h\n:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        cr_assert_eq(wire_endpoint_check(bad[i], false, err, sizeof err), KZ_EINVAL, "'%s'",
                     bad[i]);
        cr_assert(err[0] && !strchr(err, '\n'), "'%s': [%s]", bad[i], err);
    }
    cr_assert_eq(wire_endpoint_check(NULL, false, err, sizeof err), KZ_EINVAL);
}
