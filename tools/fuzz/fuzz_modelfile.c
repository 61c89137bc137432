/* fuzz_modelfile: model file bytes (nn/modelfile.h: modelfile_from_bytes),
 * as a worker receives a blob from the network and every program reads a
 * --model file.
 *
 * The first input byte picks the framing: even, the rest is taken as the
 * whole file; odd, the rest is a payload that the harness wraps in a valid
 * header (magic, format, the flag in bit 1, length, checksum) so that the
 * fuzzer gets past the payload checksum into the protobuf and the tensors.
 * Bit 2 picks whether the game is checked (game_default) or not.
 *
 * Properties: no crash or leak; a failure is one line and yields no model; a
 * model that loads encodes again to bytes that load to the same weights
 * checksum; a model for the game evaluates one position to finite outputs. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "games/game.h"
#include "nn/model.h"
#include "nn/modelfile.h"

void fuzz_setup(void)
{
    model_set_threads(1);
}

int fuzz_input(const uint8_t *data, size_t size)
{
    uint8_t mode;
    if (!fuzz_mode(&data, &size, &mode))
        return 0;
    uint8_t *framed = NULL;
    const uint8_t *buf = data;
    size_t len = size;
    if (mode & 1) {
        len = MODELFILE_HEADER_BYTES + size;
        framed = malloc(len);
        FUZZ_ASSERT(framed);
        memcpy(framed, "KZMODEL", 8);
        le_put32(framed + 8, MODELFILE_FORMAT);
        le_put32(framed + 12, mode & 2 ? MODELFILE_FLAG_CHECKPOINT : 0);
        le_put64(framed + 16, size);
        le_put64(framed + 24, hash_bytes(data, size, 0));
        if (size)
            memcpy(framed + MODELFILE_HEADER_BYTES, data, size);
        buf = framed;
    }
    const game_def *g = mode & 4 ? game_default() : NULL;
    model *m = (model *)1;
    char err[512] = "";
    int rc = modelfile_from_bytes(buf, len, g, &m, err, sizeof err);
    if (rc) {
        FUZZ_ASSERT(m == NULL && fuzz_one_line(err) && err[0]);
    } else {
        FUZZ_ASSERT(m != NULL);
        uint8_t *again = NULL;
        size_t alen = 0;
        bool ckpt = model_optim_kind(m) != MODEL_OPT_NONE;
        FUZZ_ASSERT(modelfile_encode(m, ckpt, &again, &alen) == 0);
        model *m2 = NULL;
        FUZZ_ASSERT(modelfile_from_bytes(again, alen, g, &m2, err, sizeof err) == 0);
        FUZZ_ASSERT(model_checksum(m2) == model_checksum(m));
        model_destroy(&m2);
        free(again);
        const game_def *kh = game_default();
        if (model_arch_check_game(model_get_arch(m), kh, err, sizeof err) == 0) {
            model_eval *e = model_eval_new(m, 1);
            FUZZ_ASSERT(e);
            game_state s;
            kh->init(&s);
            float x[7 * 5 * 5], logits[625], value;
            kh->encode_planes(&s, x);
            model_eval_run(e, x, 1, logits, &value);
            /* Weights are finite but may be huge: the value is tanh'd. */
            FUZZ_ASSERT(!(value > 1.0f) && !(value < -1.0f));
            model_eval_destroy(&e);
        }
        model_destroy(&m);
    }
    free(framed);
    return 0;
}
