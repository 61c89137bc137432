/* seeds: writes the generated seed corpora of the fuzz harnesses (`make fuzz`
 * runs it): valid inputs of every target, made with the real encoders, so
 * that the fuzzers start from deep inside the formats. Small hand-written
 * seeds are checked in under tools/fuzz/corpus/<target>/.
 *
 * usage: fuzz_seeds DIR   (writes DIR/<target>/gen_<n>) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "games/game.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "data/record.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

static const char *s_dir;

/* Writes DIR/target/gen_<n> with a leading mode byte when mode >= 0. */
static void s_write(const char *target, int mode, const void *data, size_t len)
{
    static int counter;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s_dir, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_seeds: cannot make %s: %s\n", path, strerror(errno));
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/gen_%03d", s_dir, target, counter++);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    if (mode >= 0)
        fputc(mode, f);
    if (len)
        fwrite(data, 1, len, f);
    fclose(f);
}

static void s_wire(const uint8_t *record, size_t record_len)
{
    wire_buf out = {0};
    uint32_t slots[3] = {4, 5, 9};
    int32_t colours[3] = {0, 1, 0};
    uint32_t offsets[3] = {0, 2, 3}, actions[3] = {7, 9, 12};
    float z[2] = {1, -1}, probs[3] = {0.5f, 0.5f, 1}, q[2] = {0.25f, -1};
    uint8_t packed[2 * 17] = {1, 2, 3};
    wire_msg all[] = {
        {.kind = WIRE_HELLO, .client = "w1", .request_id = 1,
         .u.hello = {"worker", "host", 42, "kz 1", "khreibaga", 8}},
        {.kind = WIRE_HEARTBEAT, .client = "w1", .request_id = 2,
         .u.heartbeat = {3, 10, 2, slots, 3, 1}},
        {.kind = WIRE_JOB_REQUEST, .client = "w1", .request_id = 3,
         .u.job_request = {4, 2, slots, 2}},
        {.kind = WIRE_JOB, .request_id = 3,
         .u.job = {WIRE_JOB_ARENA, 2, 77, 1, 88, slots, colours, 3, 0, 0, 100}},
        {.kind = WIRE_MODEL_REQUEST, .request_id = 4, .u.model_request = {1}},
        {.kind = WIRE_GAME_SUBMIT, .client = "w1", .request_id = 5,
         .u.game_submit = {record, record_len, 0}},
        {.kind = WIRE_BATCH_REQUEST, .client = "t", .request_id = 6,
         .u.batch_request = {256, 1000, false}},
        {.kind = WIRE_BATCH_REPLY, .request_id = 6,
         .u.batch_reply = {2, 17, packed, z, offsets, actions, probs, 0, 2, 1, 1, q, {0}}},
        {.kind = WIRE_CANDIDATE_SUBMIT, .client = "t", .request_id = 7,
         .u.candidate_submit = {(const uint8_t *)"KZMODEL", 8, 5, 1, 1000}},
        {.kind = WIRE_TRAINER_STATS, .client = "t", .request_id = 8,
         .u.trainer_stats = {10, 2.5f, 2, 0.5f, 0.01f, 3, 100, 0.01f, 1000, 2, 0, 0}},
        {.kind = WIRE_ANNOUNCEMENT, .u.announcement = {2, 99, 1, 30, 10, 10}},
        {.kind = WIRE_ERROR, .request_id = 9, .u.error = {WIRE_ERR_REFUSED, "no", 1}},
        {.kind = WIRE_HELLO, .version = 2, .client = "future", .request_id = 10,
         .u.hello = {"worker", "host", 1, "kz 2", "khreibaga", 1}},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (wire_encode(&all[i], &out) != 0) {
            fprintf(stderr, "fuzz_seeds: cannot encode message %zu\n", i);
            exit(1);
        }
        s_write("wire", -1, out.data, out.len);
    }
    wire_buf_free(&out);
}

/* A tiny model: a toy game's (a few hundred bytes) or Khreibaga's. */
static void s_models(void)
{
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 2;
    a.policy_filters = 1;
    a.value_hidden = 4;
    model_arch toy = a;
    snprintf(toy.game, sizeof toy.game, "toy");
    toy.in_planes = 2;
    toy.height = 2;
    toy.width = 1;
    toy.actions = 3;
    const model_arch *archs[2] = {&toy, &a};
    for (int k = 0; k < 2; k++) {
        model *m = model_new(archs[k], 7 + (uint64_t)k);
        if (!m)
            exit(1);
        model_edit_meta(m)->version = 3;
        model_edit_meta(m)->parent = 2;
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            if (ckpt && model_optim_reset(m, MODEL_OPT_ADAM, 12) != 0)
                exit(1);
            uint8_t *buf;
            size_t len;
            if (modelfile_encode(m, ckpt, &buf, &len) != 0)
                exit(1);
            int game = k ? 4 : 0;
            s_write("modelfile", game, buf, len);
            s_write("modelfile", 1 | (ckpt ? 2 : 0) | game, buf + MODELFILE_HEADER_BYTES,
                    len - MODELFILE_HEADER_BYTES);
            free(buf);
        }
        model_destroy(&m);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    log_init("fuzz_seeds");
    s_dir = argv[1];
    mkdir(s_dir, 0755);
    const game_def *g = game_default();
    /* Records: self-play and arena, short random games. */
    uint8_t *first = NULL;
    size_t first_len = 0;
    game_record *r = record_new();
    char err[256];
    char rec_path[600];
    snprintf(rec_path, sizeof rec_path, "%s/records.tmp", s_dir);
    record_file *rf = NULL;
    if (!r || record_file_create(rec_path, &rf, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    int made = 0;
    for (uint64_t seed = 1; made < 6 && seed < 500; seed++) {
        validate_random_opts o = {.model_version = 1, .max_moves = 120, .worker_id = "w1"};
        if (made % 2) {
            o.kind = 1;
            o.model_version = 2;
            o.opponent_version = 1;
            o.candidate_player = (int)(seed & 1);
        }
        uint8_t *buf;
        size_t len;
        if (validate_random_record(g, seed, &o, &buf, &len) != 0)
            continue; /* longer than max_moves: try another seed */
        s_write("record", -1, buf, len);
        if (record_unpack(buf, len, r, err, sizeof err) != 0 ||
            record_file_write(rf, r, err, sizeof err) != 0) {
            fprintf(stderr, "fuzz_seeds: %s\n", err);
            return 1;
        }
        if (!first) {
            first = buf;
            first_len = len;
        } else {
            free(buf);
        }
        made++;
    }
    record_file_close(&rf);
    uint8_t *file;
    size_t file_len;
    if (!first || file_read_all(rec_path, &file, &file_len) != 0) {
        fprintf(stderr, "fuzz_seeds: no short random game found\n");
        return 1;
    }
    remove(rec_path);
    s_write("record_file", 0, file, file_len);
    s_write("record_file", 1, file + 8, file_len - 8);
    free(file);
    s_wire(first, first_len);
    /* Positions along a random game: the state strings, and packed planes. */
    game_state s;
    g->init(&s);
    rng_t rng;
    rng_seed(&rng, 3);
    char text[4096];
    size_t tl = (size_t)snprintf(text, sizeof text, "-\n");
    for (int step = 0; step < 80 && !g->result(&s).over; step++) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)n)];
        char pos[128], act[32];
        g->format_position(&s, pos, sizeof pos);
        g->format_action(a, act, sizeof act);
        if (step % 10 == 0 || g->mid_turn(&s)) {
            char one[200];
            int ol = snprintf(one, sizeof one, "%s\n%s\n", pos, act);
            s_write("position", -1, one, (size_t)ol);
        }
        if (tl + strlen(act) + 2 < sizeof text)
            tl += (size_t)snprintf(text + tl, sizeof text - tl, "%s\n", act);
        s_write("action", -1, act, strlen(act));
        uint8_t packed[GAME_PACKED_BYTES];
        g->pack(&s, packed);
        if (step % 8 == 0)
            s_write("unpack_planes", -1, packed, (size_t)g->packed_bytes);
        g->apply(&s, a);
    }
    s_write("position", -1, text, tl);
    s_models();
    free(first);
    record_destroy(&r);
    printf("fuzz_seeds: seeds written to %s\n", s_dir);
    return 0;
}
