/* record: game records (self-play and arena) in memory, on the wire, and in
 * files. A `game_record` is the plain C form of proto GameRecord
 * (proto/record.proto); this module is the only one that converts between
 * the two, so the generated protobuf-c types never leave record.c.
 *
 * Every state of a game has one record_move, mid-sequence states too: the
 * action played there (real orientation), the search's visit distribution
 * over the legal actions (real orientation, ascending, summing to 1; empty for
 * a player that does not search), the root value from the mover's view,
 * whether the state was forced (one legal action, no search), and whether it
 * had a fast search (playout cap randomization: its distribution is no
 * policy target, its value still is; docs/learning.md). The position
 * and the training target z of each state are not stored: they follow from
 * replaying the actions from start_position (record_replay), which is also
 * how a record is checked (record_validate). The checks are written once,
 * here (record_decode for the structure, record_check for the rules): the
 * coordinator's validator uses them too.
 *
 * Record files: an 8-byte header ("KZREC", 0, then the format version as a
 * little-endian u16, now 1), then a stream of [u32 little-endian length]
 * [GameRecord bytes]. Readers reject an unknown header or version, a length
 * above RECORD_MAX_BYTES, a record cut short by the end of the file, and
 * bytes that do not decode to a well-formed record, each with a one-line
 * message naming the record's index and byte offset.
 *
 * Threads: a game_record or record_file is used by one thread at a time. */
#ifndef KZ_RECORD_H
#define KZ_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

#define RECORD_ID_BYTES 16
#define RECORD_MAX_BYTES (16u << 20) /* largest packed record accepted */
#define RECORD_MAX_MOVES 65536       /* most states in one record */
#define RECORD_FILE_VERSION 1

enum record_kind {
    RECORD_SELFPLAY = 0, /* proto GAME_KIND_SELFPLAY */
    RECORD_ARENA = 1,    /* proto GAME_KIND_ARENA */
    RECORD_EVAL = 2,     /* proto GAME_KIND_EVAL: a rating game, side A vs side B */
};
#define RECORD_PLAYER_MAX 32 /* longest baseline player spec in a record, with its NUL */

/* The search settings a game was played with (proto SearchSettings): the
 * part of the search's settings (mcts.h) that a record keeps; all zero for a
 * record without them. */
typedef struct record_settings {
    int simulations;         /* root child visits per move */
    float c_puct;            /* exploration constant of PUCT */
    float dirichlet_alpha;   /* root noise concentration */
    float dirichlet_epsilon; /* weight of the root noise */
    int temperature_plies;   /* plies played by sampling visits */
    float fpu;               /* first-play reduction */
    int leaves_per_tree;     /* leaves a tree sends to one evaluator batch */
    bool reuse_tree;         /* the chosen child's subtree kept after a move */
    int fast_simulations;    /* playout cap randomization: simulations of the fast
                                searches (fast_search moves); 0 = all searches full */
    /* What re-searching a state exactly needs besides (recheck.h); all zero in
     * records from before these fields. */
    float forced_playouts_k; /* forced playouts at the root, 0 = off */
    bool policy_pruning;     /* policy target pruning */
    int root_mode;           /* enum mcts_root_mode */
    int gumbel_m;            /* gumbel: actions considered (kept in gumbel mode only) */
    float gumbel_c_visit;    /* gumbel: sigma's visit offset (gumbel mode only) */
    float gumbel_c_scale;    /* gumbel: sigma's scale (gumbel mode only) */
    bool gumbel_noise;       /* gumbel: noise at every move (gumbel mode only) */
    double pcr_full_fraction; /* playout cap randomization: share of full searches (kept with
                                fast_simulations > 0 only) */
    bool tb_search;          /* the endgame tables valued the search's leaves */
    bool tb_adjudicate;      /* the endgame tables could play the game out */
    char evaluator[24];      /* the network's arithmetic (model_eval_path), "" unknown */
} record_settings;

/* One state of a game and what was played there. */
typedef struct record_move {
    uint16_t action;     /* played action, real orientation */
    bool forced;         /* one legal action: played without search */
    float root_value;    /* search value from the mover's view (0 when not searched) */
    uint32_t policy_off; /* first entry in game_record.policy_actions / .policy */
    uint16_t policy_n;   /* entries of this move's distribution */
    bool fast_search;    /* a fast search (playout cap randomization): the distribution
                            is no policy target; false for a full search (the default) */
} record_move;

/* A whole game. Arrays are owned by the record and grow as moves are added. */
typedef struct game_record {
    uint8_t id[RECORD_ID_BYTES]; /* unique per game (random) */
    char game[32];               /* game module name, e.g. "khreibaga" */
    int kind;                    /* enum record_kind */
    uint32_t model_version;      /* self-play: the model; arena: the candidate; eval: side A's
                                    model, 0 when side A is a baseline player */
    uint32_t opponent_version;   /* arena: the best model the candidate played; eval: side B's */
    int candidate_player;        /* arena: 0 if the candidate moved first, 1 if second;
                                    eval: the same for side A */
    char model_player[RECORD_PLAYER_MAX];    /* eval: side A's baseline spec, "" = a model */
    char opponent_player[RECORD_PLAYER_MAX]; /* eval: side B's baseline spec, "" = a model */
    char start_position[GAME_POSITION_CHARS + 1]; /* position string; "" = the game's initial */
    record_settings settings;    /* the search settings */
    uint64_t seed;               /* the game's seed */
    int64_t started_ms;          /* wall clock at the first move, ms since the epoch */
    int64_t finished_ms;         /* wall clock at the end */
    char worker_id[64];          /* who played it ("" if unknown) */
    int winner;                  /* 0 first player, 1 second, -1 draw */
    int reason;                  /* enum game_reason (GAME_REASON_NONE while unfinished) */
    uint32_t plies;              /* completed turns */
    int n_moves;                 /* states recorded */
    int cap_moves;               /* capacity of moves */
    record_move *moves;          /* (cap_moves) */
    uint32_t n_policy;           /* distribution entries over all moves */
    uint32_t cap_policy;         /* capacity of the two arrays below */
    uint16_t *policy_actions;    /* (cap_policy) actions, real orientation */
    float *policy;               /* (cap_policy) visit shares */
} game_record;

/* An empty record (no moves, winner -1, reason NONE). NULL when out of memory.
 * Caller owns the result: record_destroy. */
game_record *record_new(void);
void record_destroy(game_record **r);
/* Empties r, keeping its arrays' capacity (no allocation when reused). */
void record_clear(game_record *r);
/* Fills r->id with random bytes from the operating system (getrandom). 0 or errno. */
int record_new_id(game_record *r);
/* Appends a state: the played action, whether forced, the root value, and the
 * distribution (n entries of actions/shares; n may be 0). The move's
 * fast_search starts false (a full search): a player of fast searches sets
 * r->moves[r->n_moves - 1].fast_search after the call. 0 or KZ_ENOMEM. */
int record_add_move(game_record *r, int action, bool forced, float root_value, int n,
                    const uint16_t *actions, const float *shares);
/* Copies src into dst (dst's arrays grow as needed). 0 or KZ_ENOMEM. */
int record_copy(game_record *dst, const game_record *src);

/* --- checking: one set of rules for the tools and the coordinator --------- */

/* What is wrong with a record, by kind: the coordinator's validator
 * (validate.h) answers each with its RejectReason. */
enum record_fault {
    RECORD_FAULT_NONE = 0,       /* nothing */
    RECORD_FAULT_MALFORMED,      /* undecodable, inconsistent or out-of-range fields */
    RECORD_FAULT_OVERSIZED,      /* more moves than allowed */
    RECORD_FAULT_WRONG_GAME,     /* another game module */
    RECORD_FAULT_UNKNOWN_MODEL,  /* a model version outside 1 .. known_models */
    RECORD_FAULT_ILLEGAL_ACTION, /* an illegal action, or play after the end */
    RECORD_FAULT_POLICY_ILLEGAL, /* a distribution entry on an illegal action */
    RECORD_FAULT_POLICY_SUM,     /* shares outside [0, 1] or not summing to 1 */
    RECORD_FAULT_NAN,            /* NaN or infinity */
    RECORD_FAULT_WRONG_RESULT,   /* a winner, reason or ply count the replay does not give */
    RECORD_FAULT_ARENA,          /* arena fields inconsistent */
    RECORD_FAULT_EVAL,           /* rating-game fields inconsistent (sides) */
};

/* What a check found. */
typedef struct record_report {
    int fault;     /* enum record_fault; RECORD_FAULT_NONE when the check passed */
    bool has_id;   /* record_decode: the id was read (also when a later field failed) */
    char msg[192]; /* one line saying what is wrong ("" when the check passed) */
} record_report;

/* A decoding workspace: record_decode through it allocates nothing once the
 * record it fills has grown to the largest record seen (protobuf-c's
 * temporary structures go to an arena of a few MiB). One thread at a time.
 * NULL when out of memory. Caller owns the result: record_decoder_destroy. */
typedef struct record_decoder record_decoder;
record_decoder *record_decoder_new(void);
void record_decoder_destroy(record_decoder **d);

/* record_unpack's work with its findings in *rep: d is a workspace (NULL:
 * plain malloc). r is cleared first; on failure it keeps the fields read
 * before the fault (r->id when rep->has_id). The faults: a size over
 * RECORD_MAX_BYTES (oversized), bytes that do not decode, an id not of
 * RECORD_ID_BYTES, a string over its field (a game name: wrong game), an
 * unknown kind, a candidate_player not 0 or 1 (arena: an arena fault), a
 * winner not -1, 0 or 1, an unknown end reason (wrong result), non-finite or
 * huge search settings, more than RECORD_MAX_MOVES moves (oversized), and per
 * move an action or policy action over 65535 (illegal), policy arrays of
 * different lengths or over GAME_MAX_LEGAL, a NaN or infinite root value or
 * share. 0, or KZ_ECORRUPT / KZ_ENOMEM. */
int record_decode(record_decoder *d, const uint8_t *data, size_t len, game_record *r,
                  record_report *rep);

/* Options of record_check. */
typedef struct record_check_opts {
    double policy_tolerance; /* allowed |sum of shares - 1| [1e-3] */
    uint32_t max_moves;      /* more moves are oversized [RECORD_MAX_MOVES] */
    bool check_models;       /* model versions must lie in 1 .. known_models and an arena's
                              * opponent differ from its candidate; a rating game's sides
                              * each a known model or a baseline player, not the same
                              * [false] */
    uint32_t known_models;   /* with check_models: the latest model version [0] */
} record_check_opts;

/* The defaults above. */
void record_check_opts_default(record_check_opts *o);

/* Called by record_check for each state whose move passed, before the move
 * is played: the state, the move's index k and the move. A nonzero return
 * stops the check and is returned (rep->fault stays RECORD_FAULT_NONE). */
typedef int (*record_visit_fn)(void *ctx, const game_state *s, int k, const record_move *m);

/* The rules, by replaying r through g, in this order: the game name, the
 * move count, the model versions (with check_models), the start position;
 * per move that the game is not over yet, a finite root value in [-1, 1],
 * finite shares, policy actions ascending, unique and legal, shares in
 * [0, 1] summing to 1, a forced flag only with one legal action and never
 * with fast_search (a forced state is not searched at all), a legal
 * action; at the end that the game is over with the recorded winner, reason
 * and ply count. o NULL: the defaults; fn may be NULL. 0, or KZ_EILLEGAL
 * (illegal action or policy entry), KZ_EMISMATCH (wrong game) or KZ_EINVAL
 * (the others), with the fault in *rep. */
int record_check(const game_def *g, const game_record *r, const record_check_opts *o,
                 record_visit_fn fn, void *ctx, record_report *rep);

/* Serialises r as a proto GameRecord into a new buffer. Caller frees *out.
 * 0, KZ_ENOMEM, or KZ_EINVAL when r cannot be represented (moves beyond
 * RECORD_MAX_MOVES, strings too long). */
int record_pack(const game_record *r, uint8_t **out, size_t *len);
/* Parses a proto GameRecord into r (cleared first, and again on failure).
 * Checks the structure (record_decode's list: id length, matching array
 * lengths, finite numbers, known reason and kind) but not the rules
 * (record_validate). 0, or KZ_ECORRUPT / KZ_ENOMEM with a one-line reason in
 * err. */
int record_unpack(const uint8_t *data, size_t len, game_record *r, char *err, size_t errlen);

/* Replays r through g's rules and checks everything (record_check with the
 * default options): the game name, the start position, each action's
 * legality, each distribution (legal, ascending, unique, in [0, 1], summing
 * to 1 within 1e-3), forced flags, values in [-1, 1], that the game ends
 * exactly at the last move with the recorded winner and reason, and the ply
 * count. 0, or KZ_EINVAL / KZ_EILLEGAL / KZ_EMISMATCH with a one-line reason
 * naming the move in err. */
int record_validate(const game_def *g, const game_record *r, char *err, size_t errlen);

/* Called by record_replay for each state: the state before move k, the move,
 * and z, the final result from the view of the player to move in s (R18).
 * A nonzero return stops the replay and is returned. */
typedef int (*record_state_fn)(void *ctx, const game_state *s, int k, const record_move *m,
                               int z);
/* Validates r (as record_validate), then calls fn for every state in order.
 * 0, a validation error, or fn's nonzero return. */
int record_replay(const game_def *g, const game_record *r, record_state_fn fn, void *ctx,
                  char *err, size_t errlen);

/* A record file open for writing or for reading. */
typedef struct record_file record_file;
/* Creates (or truncates) path and writes the header. 0 or errno with a
 * message in err. Caller owns *out: record_file_close. */
int record_file_create(const char *path, record_file **out, char *err, size_t errlen);
/* Opens path for reading and checks the header. 0, errno, KZ_ECORRUPT (not a
 * record file) or KZ_EVERSION, with a message in err. */
int record_file_open(const char *path, record_file **out, char *err, size_t errlen);
/* Opens path for appending: a missing or empty file is created (as
 * record_file_create), an existing one must read cleanly to its end (every
 * record decodes; nothing is appended after damage) and is written on after
 * its last record; record_file_count starts at the records already there.
 * A torn tail (the file ends inside its last record: a write cut short) is
 * cut off (the file truncated after the last whole record) and said in
 * warn, one line ("" when there was none; warnlen 0: not said); damage
 * before the end is refused. 0, or record_file_open's and
 * record_file_read's errors with a message in err. Caller owns *out:
 * record_file_close. */
int record_file_append(const char *path, record_file **out, char *warn, size_t warnlen,
                       char *err, size_t errlen);
/* Appends one record (and flushes it to the kernel). 0 or an error
 * (KZ_EINVAL from record_pack, errno) with a message in err. */
int record_file_write(record_file *f, const game_record *r, char *err, size_t errlen);
/* Reads the next record into r. 0; KZ_ENOTFOUND at the clean end of the file;
 * KZ_ECORRUPT (truncated, oversized, undecodable) or errno with a message in
 * err. After an error the file is not read further (every later call returns
 * the same error). */
int record_file_read(record_file *f, game_record *r, char *err, size_t errlen);
/* Whether a reader's error is a torn tail: the file ends inside a record (a
 * write cut short), every record before it whole. */
bool record_file_torn(const record_file *f);
/* Records read or written so far (for an appender: with those it found). */
long record_file_count(const record_file *f);
/* Closes f (a writer is flushed and fsynced) and sets *f to NULL; NULL-safe.
 * 0 or the errno of a failed flush/fsync/close. */
int record_file_close(record_file **f);

#endif
