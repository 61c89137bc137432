/* gbdt: gradient-boosted decision trees as the second kind of model (issue
 * 26), beside the network (model.h), with the same place in the system: a
 * model file that is served, cached and stamped like the network's, and an
 * evaluator (evaluator.h) that the search calls in batches.
 *
 * Two forests, as alpha-zero-boosted has them:
 *  - the value forest: regression on the game's outcome from the mover's
 *    view; its sum (plus a base) clamped to [-1, 1] is the value;
 *  - the policy forest, pointwise: one row per (position, action) with the
 *    canonical action id as feature 0 and the position's features after it;
 *    its sum (the margin of a logistic model trained on visit shares) is the
 *    action's logit, and the search's softmax over the legal actions
 *    renormalises them.
 * Features are the game's hook (game_def.features, n_features) over the
 * canonical planes, by default the planes flattened (C * H * W of them).
 *
 * Evaluation is our own walker over flat trees (a node: feature, threshold
 * or leaf value, two children). For the policy it does not walk the tree
 * once per action: with a position's features fixed, a tree is a piecewise
 * constant function of the action id, so one walk that follows both sides
 * of the splits on feature 0 (narrowing an interval of ids) adds each
 * reachable leaf to its interval of a difference array; a prefix sum gives
 * all A logits. Against XGBoost's own predictor see tools/bench/bench_gbdt.c
 * and docs/learning.md.
 *
 * File layout (little-endian; filehead.h's 32-byte header, as modelfile.h's, with
 * its own magic): "KZGBDT\0\0", format version (GBDT_FORMAT), flags (0),
 * payload length, payload checksum (hash_bytes); then the payload: game name
 * (32 bytes, NUL-padded), planes, height, width, actions, features (u32
 * each), the metadata (modelmeta.h): version, parent version (u32), step
 * (u64, samples trained on), created_ms (u64, the int64's bits); the trees'
 * checksum (u64), then the value forest and the policy forest, each: base
 * (f32), trees T (u32), nodes N (u32), roots (T x u32), nodes (N x {feature
 * i32 (-1: a leaf), threshold or leaf f32, yes u32, no u32}). A split
 * sends x[feature] < threshold to yes. Children come after their parent
 * (yes, no > the node's index), so every walk ends.
 *
 * Loading checks, in this order, each failure a one-line message: the magic
 * ("not a GBDT model file"), the length ("truncated"), the format version
 * (KZ_EVERSION), the payload checksum (KZ_ECORRUPT), the game and its shapes
 * (KZ_EMISMATCH: "the model is for game ..."), every forest's counts, node
 * features, children and finiteness, and the trees' checksum (KZ_ECORRUPT).
 *
 * Threads: a gbdt is immutable once built and may be shared; a gbdt_eval is
 * used by one thread at a time. */
#ifndef KZ_GBDT_H
#define KZ_GBDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "nn/modelmeta.h"

#define GBDT_FORMAT 1            /* the format version this build writes and reads */
#define GBDT_HEADER_BYTES 32     /* bytes before the payload */
#define GBDT_MAX_BYTES (1u << 30) /* no GBDT file is larger */
#define GBDT_MAX_DEPTH 64        /* deepest tree accepted (XGBoost's max_depth is far less) */

enum gbdt_head {
    GBDT_VALUE = 0,  /* the value forest */
    GBDT_POLICY = 1, /* the policy forest (feature 0: the action id) */
};

typedef struct gbdt gbdt;

/* Whether buf starts as a GBDT model file does (its magic): the test that
 * tells a model file's kind. */
bool gbdt_is_file(const uint8_t *buf, size_t len);
/* The number of features game g's trees see: g->n_features, or C * H * W
 * when the game has no hook. */
int gbdt_feature_count(const game_def *g);
/* The features of one position from its canonical planes (C, H, W) into out
 * (gbdt_feature_count(g) floats): the game's hook or the planes copied. */
void gbdt_features(const game_def *g, const float *planes, float *out);

/* A model for game g without trees: every value 0 and every logit 0 (the
 * uniform evaluator's answers). NULL when out of memory. Caller owns it. */
gbdt *gbdt_new(const game_def *g);
/* Frees m and sets *m to NULL; NULL-safe. */
void gbdt_destroy(gbdt **m);

/* Replaces forest `head` with the trees of XGBoost's text dump
 * (XGBoosterDumpModelEx with format "text", with or without statistics):
 * n_trees strings, and base, the margin added to every sum. 0, or
 * KZ_EINVAL with a one-line message (a line that does not parse, a feature
 * out of range, a child that is not there, a tree deeper than
 * GBDT_MAX_DEPTH) or KZ_ENOMEM. On failure m is unchanged. */
int gbdt_set_forest_from_dump(gbdt *m, int head, const char *const *dump, int n_trees,
                              float base, char *err, size_t errlen);

/* Moves both forests of from into m (from is left without trees); the
 * two are models of the same game. */
void gbdt_adopt_forests(gbdt *m, gbdt *from);

/* The metadata (modelmeta.h: version, parent, samples trained on as its
 * step, creation time), as model_get_meta and model_edit_meta give the
 * network's. Borrowed; valid while m lives. */
const model_meta *gbdt_get_meta(const gbdt *m);
model_meta *gbdt_edit_meta(gbdt *m);
/* The game name the model was made for (borrowed, valid while m lives). */
const char *gbdt_game(const gbdt *m);
/* A checksum of the trees (not the metadata): the model's identity, as
 * model_checksum is the network's. */
uint64_t gbdt_checksum(const gbdt *m);
/* Trees and nodes in forest head. */
int gbdt_tree_count(const gbdt *m, int head);
int gbdt_node_count(const gbdt *m, int head);
/* One line: "gbdt value 40 trees (1234 nodes), policy 40 trees (2345
 * nodes), 175 features". */
void gbdt_describe(const gbdt *m, char *buf, size_t len);

/* The plain walk of one row x through forest head (x: the features, with
 * the action id first for the policy), base included: the reference the
 * walker is tested against, and the training's check. */
float gbdt_predict_row(const gbdt *m, int head, const float *x);

/* The file form (caller frees with free()). 0 or KZ_ENOMEM. */
int gbdt_to_bytes(const gbdt *m, uint8_t **buf, size_t *len);
/* Decodes and checks bytes (see above); expect_game NULL: any game. *out is
 * new on success (caller owns it), NULL on failure with err set. */
int gbdt_from_bytes(const uint8_t *buf, size_t len, const game_def *expect_game, gbdt **out,
                    char *err, size_t errlen);
/* Writes the file form atomically (file_write_atomic). 0 or an errno. */
int gbdt_save(const gbdt *m, const char *path);
/* Reads a file (at most GBDT_MAX_BYTES) and decodes it; messages name the
 * file. */
int gbdt_load(const char *path, const game_def *expect_game, gbdt **out, char *err,
              size_t errlen);
/* The same bytes with version and parent set (the registry's stamp), as
 * modelfile_stamp. */
int gbdt_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent, uint8_t **out,
               size_t *outlen, char *err, size_t errlen);

/* The walker: evaluates batches of up to max_batch positions. It copies
 * the trees (m may go afterwards). NULL when max_batch < 1 or out of
 * memory. Caller owns it. */
typedef struct gbdt_eval gbdt_eval;
gbdt_eval *gbdt_eval_new(const gbdt *m, const game_def *g, int max_batch);
void gbdt_eval_destroy(gbdt_eval **e);
/* Evaluates B <= max_batch positions given as canonical planes (B, C, H, W):
 * logits (B, A), values (B) in [-1, 1]. Allocates nothing. */
void gbdt_eval_run(gbdt_eval *e, const float *planes, int B, float *logits, float *values);
/* The same for one position's policy by walking each action's row (A walks
 * per tree): the reference for gbdt_eval_run's interval walk. */
void gbdt_eval_policy_naive(gbdt_eval *e, const float *planes, float *logits);

#endif
