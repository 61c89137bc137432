/* modelkind: model files of either kind, the network's (modelfile.h) or
 * gradient-boosted trees (gbdt.h), told apart by their magic, for the code
 * that handles a model's bytes without evaluating them: the coordinator
 * (initial model, candidates, stamps), kz model info, the trainer's start.
 * Evaluating them goes through evaluator_net_from_bytes (evaluator.h).
 *
 * Threads: every function is thread-safe given distinct arguments. */
#ifndef KZ_MODELKIND_H
#define KZ_MODELKIND_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "nn/modelmeta.h"

typedef enum model_kind {
    MODEL_KIND_NET = 0,  /* a network, modelfile.h */
    MODEL_KIND_GBDT = 1, /* gradient-boosted trees, gbdt.h */
} model_kind;

/* What a checked model file says about itself. */
typedef struct modelkind_info {
    model_kind kind;     /* which kind */
    char game[32];       /* its game */
    model_meta meta;     /* version, parent, training steps or samples, creation time */
    uint64_t checksum;   /* the weights' or the trees' checksum */
    char describe[200];  /* one line: the architecture or the forests */
} modelkind_info;

/* The kind the bytes announce (by magic): MODEL_KIND_GBDT for a GBDT file,
 * else MODEL_KIND_NET (whose loader says what is wrong with anything
 * else). */
model_kind modelkind_of(const uint8_t *buf, size_t len);
/* "net" or "gbdt"; NULL for anything else. */
const char *modelkind_name(model_kind k);
/* Parses "net" or "gbdt"; 0 or KZ_EINVAL. */
int modelkind_parse(const char *s, model_kind *k);

/* Decodes and checks bytes of either kind for game g (NULL: any) and fills
 * info (may be NULL). 0, or the loader's error with a one-line message. */
int modelkind_check(const uint8_t *buf, size_t len, const game_def *g, modelkind_info *info,
                    char *err, size_t errlen);
/* Reads and checks a model file of either kind; *buf (caller frees) holds
 * its published form: a GBDT file as it is, a network file re-encoded
 * without optimizer state (modelfile_to_bytes), as the coordinator serves
 * them. Messages name the file. */
int modelkind_read_file(const char *path, const game_def *g, uint8_t **buf, size_t *len,
                        modelkind_info *info, char *err, size_t errlen);
/* modelfile_stamp or gbdt_stamp by kind. */
int modelkind_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen);

#endif
