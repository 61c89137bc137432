/* store: the replay store and model registry, one LMDB environment (the only
 * module that touches LMDB). Written by the coordinator alone.
 *
 * Databases (keys big-endian so that LMDB's byte order is numeric order):
 *   models     version u32          -> model header (store_model_info) + blob
 *   games      game sequence u64    -> the serialized GameRecord as received
 *   positions  position sequence u64 -> one training sample (packed position,
 *                                       z, sparse canonical policy, q)
 *   dedup      game id (16 bytes)   -> game sequence u64
 *   meta       name                 -> counters (next sequences, first kept
 *                                       position, best version) and small blobs
 *
 * Window: sampling draws sequence numbers uniformly from [lo, hi) where hi is
 * the next position sequence and lo = max(first kept, hi - window). Every
 * sequence in that range exists (positions are appended densely and pruned
 * from the bottom), so one random get per sample is exact and uniform.
 * Positions below the window are pruned, at most prune_per_txn per write
 * transaction (store_put_games and store_prune), so no transaction grows
 * without bound.
 *
 * Growth: when a write fails with MDB_MAP_FULL the transaction is aborted,
 * the map is doubled (mdb_env_set_mapsize) and the transaction retried; the
 * caller never sees MAP_FULL.
 *
 * Durability: a write function returns 0 only after its transaction has
 * committed (and synced, unless options.no_sync): the coordinator acknowledges
 * games only then.
 *
 * Samples. A sample's policy may be empty: the state had a fast search
 * (playout cap randomization) and carries no policy target, only its value
 * targets. q is the search's value of the state from the mover's view (= z
 * where it was not searched), for the value target's q + z mix; positions
 * stored before q existed read back with q = z. A sample may carry the
 * auxiliary heads' targets (model.h; validate.h builds them): the final
 * material balance from the mover's view and the opponent's next policy
 * target (sparse, canonical in the sample's own view). A position stored
 * without them (before they existed, or by a coordinator that does not
 * store them) reads back with material weight 0 and an empty opponent
 * policy: no auxiliary target. The stored layouts differ only by what
 * follows the policy, so every earlier position keeps reading back.
 *
 * Errors: 0, LMDB's codes, errno values, KZ_ENOTFOUND, KZ_EINVAL, KZ_ECORRUPT
 * (a value that does not parse). A program linked with store has err_str
 * name LMDB's codes ("MDB_MAP_FULL: ..."). Threads: a store belongs to one thread. */
#ifndef KZ_STORE_H
#define KZ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define STORE_GAME_ID_BYTES 16

typedef struct store store;

typedef struct store_options {
    size_t map_bytes;       /* initial map size; doubled whenever full */
    uint64_t window;        /* positions sampled from: the latest `window` */
    uint64_t prune_per_txn; /* positions deleted per write transaction at most */
    bool no_sync;           /* MDB_NOSYNC: faster, not durable (tests, benchmarks) */
    bool read_only;         /* MDB_RDONLY: readers only, beside a running coordinator */
} store_options;

/* Defaults: 64 MiB map, window 500000, prune 20000 per transaction, synced. */
void store_options_default(store_options *o);

/* Opens (creating the directory and databases when absent) the store in dir.
 * 0 and *out (caller owns: store_close), or an error: MDB_INVALID for a
 * file that is not an LMDB environment, KZ_ECORRUPT for one shorter than its
 * last used page (cut short) or with inconsistent counters. With
 * o->read_only nothing is created or written (no write transaction is ever
 * begun: tools reading a live coordinator's store never wait for its
 * writer, nor change a byte); a store without our databases is
 * KZ_ENOTFOUND, and the write functions fail with EACCES. */
int store_open(store **out, const char *dir, const store_options *o);
/* Closes and frees; NULL-safe, sets *s to NULL. */
void store_close(store **s);

/* Model states. */
enum store_model_status {
    STORE_MODEL_INITIAL = 0,   /* the bootstrap model (random init) */
    STORE_MODEL_QUEUED = 1,    /* a candidate waiting for its arena */
    STORE_MODEL_ARENA = 2,     /* a candidate in its arena */
    STORE_MODEL_PROMOTED = 3,  /* won its arena: became the best */
    STORE_MODEL_REJECTED = 4,  /* lost its arena */
    STORE_MODEL_SUPERSEDED = 5,/* replaced by a newer candidate before its arena */
};
/* "initial", "queued", ... */
const char *store_model_status_name(uint32_t status);

typedef struct store_model_info {
    uint32_t version;      /* registry version, from 1 */
    uint32_t parent;       /* version it was trained from, 0 none */
    int64_t created_ms;    /* registration time, wall clock */
    uint64_t checksum;     /* wire_blob_checksum of the blob */
    uint64_t trainer_step; /* trainer step that produced it */
    uint32_t status;       /* enum store_model_status */
    uint32_t wins;         /* arena tally, candidate's view */
    uint32_t draws;        /* draws */
    uint32_t losses;       /* losses */
    int64_t decided_ms;    /* when the arena decided, 0 before */
    uint64_t blob_len;     /* bytes of the blob */
} store_model_info;

/* Registers a model: info's parent, created_ms, checksum, trainer_step,
 * status are stored; version (the next one) and blob_len are filled in. */
int store_add_model(store *s, const void *blob, size_t len, store_model_info *info);
/* Metadata of version v; KZ_ENOTFOUND if none. */
int store_get_model_info(store *s, uint32_t v, store_model_info *out);
/* Blob (a copy the caller frees) and optionally metadata of version v;
 * KZ_ECORRUPT when the blob does not match its checksum (a damaged store). */
int store_get_model(store *s, uint32_t v, uint8_t **blob, size_t *len, store_model_info *info);
/* Rewrites the metadata of info->version (status, tally, decided_ms). */
int store_update_model(store *s, const store_model_info *info);
/* Reads every model's blob and compares it with its checksum: *n_bad is the
 * number that fail (or whose header does not parse), each also passed to
 * bad(ctx, version, why) when bad is not NULL. 0, or an LMDB error. */
int store_check_models(store *s, void (*bad)(void *ctx, uint32_t version, const char *why),
                       void *ctx, uint32_t *n_bad);
/* The version whose blob has this checksum and length, or KZ_ENOTFOUND. */
int store_find_model(store *s, uint64_t checksum, uint64_t len, uint32_t *version);
/* Highest registered version (0 when none). */
uint32_t store_latest_model(const store *s);
/* Deletes version v, header and blob (the retention of the coordinator's
 * models.c); its number is never given again. 0, or KZ_ENOTFOUND. */
int store_delete_model(store *s, uint32_t v);
/* The models stored: how many, their blobs' bytes, and up to max of their
 * versions, ascending, into versions (may be NULL). 0 or an LMDB error. */
int store_model_census(store *s, uint32_t *count, uint64_t *bytes, uint32_t *versions,
                       size_t max);

/* The best model version (0 before one is set), and setting it. */
uint32_t store_best(const store *s);
int store_set_best(store *s, uint32_t version);

/* Small named blobs in meta (names up to 63 bytes; values up to 1 MiB).
 * store_get_meta copies into buf (cap bytes) and sets *len; KZ_ENOTFOUND,
 * KZ_EFULL when cap is too small. */
int store_put_meta(store *s, const char *name, const void *data, size_t len);
int store_get_meta(store *s, const char *name, void *buf, size_t cap, size_t *len);
/* Deletes meta entry name (its own transaction). 0, or KZ_ENOTFOUND when there
 * is none; never one of the counters (KZ_EINVAL). */
int store_delete_meta(store *s, const char *name);

/* One game to store, with its training positions (flat arrays, as a batch).
 * Inputs are borrowed for the call; `duplicate` and `sequence` are outputs. */
typedef struct store_game {
    const uint8_t *game_id;   /* (STORE_GAME_ID_BYTES) */
    const uint8_t *record;    /* (record_len) serialized GameRecord */
    size_t record_len;        /* bytes in record */
    uint32_t n_positions;     /* N: training positions (0 for arena games) */
    uint32_t packed_bytes;    /* P: bytes per packed position (<= 255) */
    const uint8_t *packed;    /* (N, P) */
    const float *z;           /* (N) outcome from the mover's view */
    const uint32_t *offsets;  /* (N + 1) into actions/probs; an empty range: no policy target */
    const uint32_t *actions;  /* canonical actions, ascending per position */
    const float *probs;       /* visit shares */
    const float *q;           /* (N) the search's value in [-1, 1], mover's view; NULL: not
                                 stored (reads back as z) */
    bool duplicate;           /* out: already stored (nothing written) */
    uint64_t sequence;        /* out: its game sequence (the earlier one if duplicate) */
    /* Auxiliary targets (NULL: none stored, as before they existed). */
    const float *material;       /* (N) final material balance, mover's view, in [-1, 1] */
    const uint32_t *opp_offsets; /* (N + 1) into opp_actions/opp_probs; empty range: none */
    const uint32_t *opp_actions; /* the opponent's next policy target, canonical, ascending */
    const float *opp_probs;      /* its shares */
} store_game;

/* Stores the games (and their positions) in ONE transaction, skipping those
 * whose id is already stored (also earlier in the same call), prunes up to
 * prune_per_txn old positions, commits. 0 only after the commit; on error
 * nothing of this call is stored. */
int store_put_games(store *s, store_game *games, size_t n);
/* A meta entry to write with a batch of games. */
typedef struct store_meta {
    const char *name;   /* key, 1..63 bytes */
    const void *data;   /* (len) value, borrowed for the call */
    size_t len;         /* bytes, at most 1 MiB */
} store_meta;
/* The same, also writing the n_meta meta entries in the same transaction (so
 * that, say, an arena tally changes exactly when its games are stored). */
int store_put_games_meta(store *s, store_game *games, size_t n, const store_meta *meta,
                         size_t n_meta);
/* Prunes up to prune_per_txn positions below the window (own transaction).
 * *pruned (optional) gets the count. */
int store_prune(store *s, uint64_t *pruned);

/* The game sequence of a stored game id; KZ_ENOTFOUND if not stored. */
int store_find_game(store *s, const uint8_t *game_id, uint64_t *sequence);
/* Whether the game stored under game_id has exactly these record bytes (a
 * resubmission): 0 and *sequence, else KZ_ENOTFOUND. One read transaction,
 * no copy: the coordinator's fast path for resent games. */
int store_find_record(store *s, const uint8_t *game_id, const uint8_t *record, size_t len,
                      uint64_t *sequence);
/* A copy (caller frees) of stored game `sequence`. */
int store_get_game(store *s, uint64_t sequence, uint8_t **record, size_t *len);
/* Calls fn for every stored game in sequence order (stops when fn returns
 * non-zero, which is returned). Record bytes are borrowed for the call. */
int store_foreach_game(store *s, int (*fn)(void *ctx, uint64_t seq, const uint8_t *rec,
                                           size_t len), void *ctx);
/* The same from sequence `from` (the newest stored one when from is beyond
 * it) down to the oldest: newest first, for lists of recent games. */
int store_foreach_game_desc(store *s, uint64_t from,
                            int (*fn)(void *ctx, uint64_t seq, const uint8_t *rec, size_t len),
                            void *ctx);

/* Withdraws positions from sampling: those of the k ranges [first[i],
 * first[i] + n[i]) still in the window become one zero byte each (a
 * forger's, docs/security.md); store_sample draws again where it meets one,
 * store_get_position finds none (KZ_ENOTFOUND). The sequences stay dense.
 * *withdrawn: how many were (not counting ones withdrawn before). */
int store_withdraw_positions(store *s, const uint64_t *first, const uint32_t *n, size_t k,
                             uint64_t *withdrawn);

/* A batch of samples as flat arrays (the layout of the wire's BatchReply). */
typedef struct store_batch {
    size_t cap;          /* samples it can hold */
    size_t n;            /* samples it holds */
    uint32_t packed_bytes; /* P */
    uint8_t *packed;     /* (cap, GAME_PACKED_BYTES) P bytes used per sample */
    float *z;            /* (cap) */
    float *q;            /* (cap) the search's value, mover's view (z if not stored) */
    uint32_t *offsets;   /* (cap + 1); offsets[i] == offsets[i + 1]: no policy target */
    uint32_t *actions;   /* (cap * GAME_MAX_LEGAL) */
    float *probs;        /* (cap * GAME_MAX_LEGAL) */
    uint64_t *sequences; /* (cap) position sequence of each sample */
    float *material;     /* (cap) final material balance, mover's view (0 when none) */
    float *material_w;   /* (cap) 1: material is a target, 0: none stored */
    uint32_t *opp_offsets; /* (cap + 1) into opp_actions/opp_probs; an empty range: no
                              opponent-policy target */
    uint32_t *opp_actions; /* (cap * GAME_MAX_LEGAL) */
    float *opp_probs;    /* (cap * GAME_MAX_LEGAL) */
} store_batch;

/* A batch able to hold cap samples (NULL on allocation failure). */
store_batch *store_batch_new(size_t cap);
void store_batch_destroy(store_batch **b);

/* Draws n (<= b->cap) position sequences uniformly, with replacement, from
 * the window and reads them into b. b->n = n, or 0 when the window is empty.
 * A withdrawn position, or a damaged one (its value does not decode: counted
 * in store_stats.damaged_positions), is drawn again, 64 times at most; then
 * KZ_ENOTFOUND or KZ_ECORRUPT. */
int store_sample(store *s, rng_t *rng, size_t n, store_batch *b);
/* Reads one position by sequence into b as its only sample. */
int store_get_position(store *s, uint64_t sequence, store_batch *b);

typedef struct store_stats {
    uint64_t games;          /* games stored (= next game sequence) */
    uint64_t positions_total;/* positions ever stored (= next position sequence) */
    uint64_t first_position; /* lowest position sequence still stored */
    uint64_t window_lo;      /* window = [window_lo, window_hi) */
    uint64_t window_hi;      /* = positions_total */
    uint32_t models;         /* highest model version */
    uint32_t best;           /* best model version */
    uint64_t map_bytes;      /* current map size */
    uint64_t used_bytes;     /* pages in use * page size */
    uint64_t map_grows;      /* times the map was grown since open */
    uint64_t txns;           /* write transactions committed since open */
    uint64_t damaged_positions; /* damaged positions store_sample met (and drew again) */
} store_stats;
void store_get_stats(store *s, store_stats *out);

/* --- for storecheck.h: damaged stores ------------------------------------------------ */

/* A read snapshot of the store in dir that reads nothing but LMDB's two meta
 * pages (no tree: a damaged one could crash LMDB): while it is held, no
 * writer reuses a page of that snapshot, so a checker may read the data file
 * itself. *txnid: the snapshot's transaction id. 0, or LMDB's error
 * (MDB_INVALID: not an LMDB file, or a meta page that says otherwise;
 * ENOENT: no store there). Caller owns *out: store_pin_close. */
typedef struct store_pin store_pin;
int store_pin_open(const char *dir, store_pin **out, uint64_t *txnid);
void store_pin_close(store_pin **p);

/* What the store keeps in a value, checked as its readers would read it:
 * a position (scratch: a batch of capacity >= 1), a model (header and blob
 * length; *blob, optional, points into value), a counter of meta, the
 * store's game of meta ("game": a game's name, 1 to GAME_NAME_CHARS of
 * [a-z0-9_-]). 0 or KZ_ECORRUPT. */
int store_check_position(const void *value, size_t len, store_batch *scratch);
int store_check_model(const void *value, size_t len, store_model_info *info,
                      const uint8_t **blob);
int store_check_counter(const void *value, size_t len, uint64_t *v);
int store_check_game_name(const void *value, size_t len);

/* One entry of a database, as read from a damaged store. */
typedef struct store_raw {
    const void *key;   /* (klen) borrowed for the call */
    size_t klen;       /* bytes, 1..511 */
    const void *val;   /* (vlen) borrowed */
    size_t vlen;       /* bytes */
} store_raw;
/* Writes n entries into database db ("models", "games", "positions",
 * "dedup" or "meta") in one transaction, as they are (a salvage into a
 * fresh store; the map grows as needed). 0 or an error (nothing written). */
int store_put_raw(store *s, const char *db, const store_raw *e, size_t n);
/* Sets the counters (meta: next game and position sequences, the first
 * position kept, the next model version, the best) in one transaction. 0
 * or an error. */
int store_set_counters(store *s, uint64_t next_game, uint64_t next_pos, uint64_t first_pos,
                       uint32_t next_model, uint32_t best);

#endif
