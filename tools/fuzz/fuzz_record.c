/* fuzz_record: a serialized GameRecord from the network or a file, through
 * both readers: the coordinator's validator (data/validate.h) and the
 * record module's unpack + rules check (data/record.h).
 *
 * Properties: nothing crashes, leaks, or reads out of bounds; every failure
 * has a one-line reason; what record_unpack accepts packs again and unpacks
 * to the same record; a record the coordinator's validator accepts is also
 * accepted by record_unpack + record_validate (the tools read stored games
 * with it), replays move for move, and yields one
 * training position per move with a policy, each with a valid packed state. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "games/game.h"
#include "data/record.h"
#include "data/validate.h"

static validator *s_val;
static game_record *s_rec, *s_again;
static const game_def *s_g;

void fuzz_setup(void)
{
    s_g = game_default();
    validate_limits lim;
    validate_limits_default(&lim);
    s_val = validator_new(s_g, &lim);
    s_rec = record_new();
    s_again = record_new();
    FUZZ_ASSERT(s_val && s_rec && s_again);
}

/* Counts the states record_replay visits. */
static int s_count_state(void *ctx, const game_state *s, int k, const record_move *m, int z)
{
    (void)s;
    (void)m;
    int *n = ctx;
    FUZZ_ASSERT(k == *n && z >= -1 && z <= 1);
    (*n)++;
    return 0;
}

int fuzz_input(const uint8_t *data, size_t size)
{
    /* Step 1. The coordinator's validator. */
    validate_result v;
    int reason = validate_record(s_val, data, size, 1000, &v);
    FUZZ_ASSERT(reason >= VALIDATE_OK && reason < VALIDATE_REASON_COUNT && reason == v.reason);
    FUZZ_ASSERT(fuzz_one_line(v.detail));
    if (reason == VALIDATE_OK) {
        FUZZ_ASSERT(v.has_id && v.n_positions <= 4096);
        float planes[7 * 5 * 5 * 4];
        FUZZ_ASSERT((size_t)s_g->planes * s_g->height * s_g->width <= sizeof planes / 4);
        for (uint32_t i = 0; i < v.n_positions; i++) {
            FUZZ_ASSERT(s_g->unpack_planes(v.packed + (size_t)i * v.packed_bytes, planes) == 0);
            FUZZ_ASSERT(v.z[i] == 0.0f || v.z[i] == 1.0f || v.z[i] == -1.0f);
            FUZZ_ASSERT(v.offsets[i + 1] >= v.offsets[i]); /* equal: a fast search's state */
            FUZZ_ASSERT(v.q[i] >= -1.0f && v.q[i] <= 1.0f);
            for (uint32_t k = v.offsets[i]; k < v.offsets[i + 1]; k++) {
                FUZZ_ASSERT(v.actions[k] < (uint32_t)s_g->action_count);
                FUZZ_ASSERT(k == v.offsets[i] || v.actions[k] > v.actions[k - 1]);
            }
        }
    }
    /* Step 2. record_unpack and the rules check. */
    char err[256] = "";
    int rc = record_unpack(data, size, s_rec, err, sizeof err);
    if (rc != 0) {
        FUZZ_ASSERT(rc == KZ_ECORRUPT && fuzz_one_line(err) && s_rec->n_moves == 0);
        FUZZ_ASSERT(reason != VALIDATE_OK);
        return 0;
    }
    err[0] = 0;
    int vrc = record_validate(s_g, s_rec, err, sizeof err);
    FUZZ_ASSERT(vrc == 0 || fuzz_one_line(err));
    if (reason == VALIDATE_OK)
        FUZZ_ASSERT(vrc == 0);
    if (vrc == 0) {
        int n = 0;
        FUZZ_ASSERT(record_replay(s_g, s_rec, s_count_state, &n, err, sizeof err) == 0);
        FUZZ_ASSERT(n == s_rec->n_moves);
        if (reason == VALIDATE_OK) {
            uint32_t searched = 0;
            for (int k = 0; k < s_rec->n_moves; k++)
                searched += s_rec->moves[k].policy_n > 0 || s_rec->moves[k].fast_search;
            FUZZ_ASSERT(searched == v.n_positions);
        }
    }
    /* Step 3. Pack and unpack again: the same record. */
    uint8_t *buf = NULL;
    size_t len = 0;
    FUZZ_ASSERT(record_pack(s_rec, &buf, &len) == 0);
    FUZZ_ASSERT(record_unpack(buf, len, s_again, err, sizeof err) == 0);
    FUZZ_ASSERT(s_again->n_moves == s_rec->n_moves && s_again->n_policy == s_rec->n_policy);
    FUZZ_ASSERT(!memcmp(s_again->id, s_rec->id, RECORD_ID_BYTES));
    FUZZ_ASSERT(s_again->winner == s_rec->winner && s_again->reason == s_rec->reason);
    FUZZ_ASSERT(!strcmp(s_again->start_position, s_rec->start_position));
    for (int k = 0; k < s_rec->n_moves; k++)
        FUZZ_ASSERT(s_again->moves[k].action == s_rec->moves[k].action &&
                    s_again->moves[k].policy_n == s_rec->moves[k].policy_n &&
                    s_again->moves[k].fast_search == s_rec->moves[k].fast_search);
    free(buf);
    return 0;
}
