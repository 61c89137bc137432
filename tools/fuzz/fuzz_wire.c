/* fuzz_wire: wire_decode (net/wire.h) on arbitrary bytes, as the
 * coordinator and every client do with what arrives on a socket.
 *
 * Properties: decoding never crashes or leaks; a failure leaves no body; a
 * message that decodes re-encodes, and the re-encoded bytes decode to the
 * same kind, request id and client (the decoder accepts only what the
 * encoder can say again); the refusal and error builders work on anything
 * that decoded far enough to have a version. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "net/wire.h"

int fuzz_input(const uint8_t *data, size_t size)
{
    wire_msg m = {0};
    /* A cap below the input's size must refuse it untouched. */
    if (size > 0)
        FUZZ_ASSERT(wire_decode(&m, data, size, size - 1) == KZ_EFULL && m.kind == WIRE_NONE);
    int rc = wire_decode(&m, data, size, 1u << 26);
    if (rc == KZ_EVERSION) {
        FUZZ_ASSERT(m.version != WIRE_PROTOCOL_VERSION && m.kind == WIRE_NONE);
        wire_msg reply;
        char text[200];
        wire_make_refusal(&m, &reply, text, sizeof text);
        wire_buf out = {0};
        FUZZ_ASSERT(wire_encode(&reply, &out) == 0);
        wire_buf_free(&out);
    } else if (rc != 0) {
        FUZZ_ASSERT(rc == KZ_ECORRUPT && m.kind == WIRE_NONE && m.decoded == NULL);
    } else {
        FUZZ_ASSERT(m.kind > WIRE_NONE && m.kind < WIRE_KIND_COUNT);
        FUZZ_ASSERT(strcmp(wire_kind_name(m.kind), "?") != 0);
        wire_buf out = {0};
        FUZZ_ASSERT(wire_encode(&m, &out) == 0);
        wire_msg again = {0};
        FUZZ_ASSERT(wire_decode(&again, out.data, out.len, out.len) == 0);
        FUZZ_ASSERT(again.kind == m.kind && again.request_id == m.request_id);
        FUZZ_ASSERT(strcmp(again.client, m.client ? m.client : "") == 0);
        if (m.kind == WIRE_GAME_SUBMIT)
            FUZZ_ASSERT(again.u.game_submit.record_len == m.u.game_submit.record_len);
        if (m.kind == WIRE_BATCH_REPLY)
            FUZZ_ASSERT(again.u.batch_reply.n == m.u.batch_reply.n);
        wire_msg err;
        wire_make_error(&m, &err, WIRE_ERR_MALFORMED, "fuzz");
        FUZZ_ASSERT(wire_encode(&err, &out) == 0);
        wire_msg_clear(&again);
        wire_buf_free(&out);
    }
    wire_msg_clear(&m);
    return 0;
}
