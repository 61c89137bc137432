/* modelfile: model files and blobs (proto/model.proto): save, load, to and
 * from bytes, with validation. The only module that touches the generated
 * model.pb-c code.
 *
 * Layout: a 32-byte header (filehead.h: magic "KZMODEL\0", format version,
 * flags, payload length, payload checksum; see proto/model.proto) and a serialized
 * ModelFile: the game and architecture, metadata (version, parent version,
 * training step, creation time), every tensor by name with its shape
 * (canonical layout), the weights checksum (model_checksum) and, in trainer
 * checkpoints only, the optimizer state. A published blob (modelfile_to_bytes)
 * is exactly the file a non-checkpoint save writes.
 *
 * Loading checks, in this order, and fails with a one-line message naming
 * what is wrong: the magic ("not a model file"), the length ("truncated"),
 * the format version (KZ_EVERSION: "unknown model format version"), the
 * payload checksum and decoding ("corrupt"), the architecture, the game
 * (KZ_EMISMATCH: "the model is for game ..." / "architecture mismatch"),
 * every tensor's presence, shape and finiteness, and the weights checksum.
 * Otherwise KZ_ECORRUPT. A file that fails any check yields no model.
 *
 * Format versions: 1, and 2 since the win/draw/loss value head (model_arch's
 * value_wdl) and derived input planes (derived_planes): a model with either
 * is written as version 2 (a build that
 * reads only 1 refuses it with "unknown model format version 2"), every other
 * model as version 1, byte for byte as before; both are read.
 *
 * Threads: every function is thread-safe given distinct arguments. */
#ifndef KZ_MODELFILE_H
#define KZ_MODELFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "nn/model.h"

#define MODELFILE_FORMAT 2        /* the newest format version this build writes and reads */
#define MODELFILE_FORMAT_MIN 1    /* the oldest it reads */
#define MODELFILE_HEADER_BYTES 32 /* bytes before the payload */
#define MODELFILE_FLAG_CHECKPOINT 1u /* header flag: optimizer state present */
#define MODELFILE_MAX_BYTES (1u << 30) /* no model file is larger (checkpoints of the largest
                                          networks we train are a few hundred MiB) */

/* Writes m to path atomically (temp file, fsync, rename; util's
 * file_write_atomic). checkpoint adds the optimizer state (a model without
 * one is saved with none). 0, or an errno / KZ_ENOMEM. */
/* The format version a model of shape a is written in (1 or 2, above). */
int modelfile_format_of(const model_arch *a);

int modelfile_save(const model *m, const char *path, bool checkpoint);

/* Reads a model file. expect_game: the game the model must fit (NULL: any).
 * On success *out is a new model (caller owns it; with the optimizer state
 * when the file is a checkpoint) and 0 is returned. On failure *out is NULL,
 * err holds a one-line message naming the file and the problem, and the
 * return value is an errno (unreadable), KZ_EVERSION, KZ_EMISMATCH or
 * KZ_ECORRUPT. The file is read header first, never more than its header
 * announces and never more than MODELFILE_MAX_BYTES: a file larger than that
 * (a 100 GB sparse file), one whose header is not a model file's
 * (/dev/zero), or whose size disagrees with its header fails at once,
 * before its bytes are read. */
int modelfile_load(const char *path, const game_def *expect_game, model **out, char *err,
                   size_t errlen);

/* The published form of m (no optimizer state) in a new buffer (caller
 * frees with free()). 0 or KZ_ENOMEM. */
int modelfile_to_bytes(const model *m, uint8_t **buf, size_t *len);
/* The same with the optimizer state when checkpoint is true. */
int modelfile_encode(const model *m, bool checkpoint, uint8_t **buf, size_t *len);

/* Decodes and validates bytes as modelfile_load does (messages without a
 * file name). */
int modelfile_from_bytes(const uint8_t *buf, size_t len, const game_def *expect_game,
                         model **out, char *err, size_t errlen);

/* The same bytes with the version and parent version in the metadata set to
 * version and parent (the registry's numbers stamped into a published blob,
 * so that the file tells which model it is); everything else is kept as it
 * was. buf is decoded and checked as modelfile_from_bytes does (any game);
 * *out is new (caller frees with free()). 0, or its codes with err. */
int modelfile_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen);

#endif
