/* validate: checks a submitted GameRecord (proto/record.proto) by replaying
 * it through the game's rules, and extracts its training positions.
 *
 * The checks are record.h's, written once there: record_decode (the
 * structure: what record_unpack refuses, so that the tools can read every
 * stored game) and record_check (the rules: what record_validate refuses),
 * here with this validator's limits (bytes, moves, policy tolerance) and the
 * known model versions. A record is refused with one reason, the wire's
 * RejectReason (docs/protocol.md), for the first fault found: larger than
 * the limits, undecodable, another game, an unknown model version, an
 * illegal action (or play after the end), a policy entry on an illegal
 * action, policy shares outside [0,1] or not summing to 1, a NaN or
 * infinity, a winner/reason/plies that the replay does not reproduce,
 * inconsistent arena fields, or any other malformed field.
 *
 * For a valid record the result also holds one training position per move
 * with a policy (every state a move was searched in, mid-capture-sequence
 * states included, forced states with their one action) and per fast-search
 * move (playout cap randomization: record_move.fast_search): the position
 * packed by game_def->pack, the outcome z from the mover's view (+1, 0, -1),
 * the policy mapped to canonical actions, ascending (EMPTY for a fast
 * search's state: it has no policy target, only value targets), and q, the
 * search's value from the mover's view (root_value, clamped to [-1, 1]) for
 * the value target's q + z mix (docs/learning.md): for a forced state, which
 * was not searched, q = z (its root_value belongs to the reused subtree, a
 * search of another state, or is 0).
 *
 * And each position's auxiliary targets (the network's auxiliary heads,
 * model.h), built from the whole game: the opponent's next policy, the
 * policy target of the next state where the OTHER side moves (not the same
 * player's next hop of a capture sequence), mapped into this position's
 * canonical actions, ascending; empty when the game ends before such a
 * state, when that state has no policy target (a fast search, a player that
 * does not search), or (a limit never reached by real games) when more than
 * VALIDATE_RUN_MAX positions of one side come in a row. And the final
 * material balance from the mover's view (game_def.material of the state
 * after the last move), when the game defines one.
 *
 * Memory: a validator owns workspaces sized once from its limits (and a
 * decoded record that grows to the largest seen); the positions in a result
 * are borrowed until the next validate_record call.
 * Threads: a validator belongs to one thread; game_defs are shared. */
#ifndef KZ_VALIDATE_H
#define KZ_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "common/util.h"

/* Most positions of one side in a row (a capture sequence's hops) whose
 * opponent-policy target is kept; later ones in the run get none. */
#define VALIDATE_RUN_MAX 64

/* Why a record was refused (wire RejectReason: same numbers). */
enum validate_reason {
    VALIDATE_OK = 0,
    VALIDATE_MALFORMED = 1,       /* undecodable or inconsistent fields */
    VALIDATE_OVERSIZED = 2,       /* too many bytes or moves */
    VALIDATE_WRONG_GAME = 3,      /* another game module */
    VALIDATE_UNKNOWN_MODEL = 4,   /* model/opponent version not registered */
    VALIDATE_ILLEGAL_ACTION = 5,  /* an illegal action, or play after the end */
    VALIDATE_POLICY_ILLEGAL = 6,  /* policy on an illegal action */
    VALIDATE_POLICY_SUM = 7,      /* shares outside [0,1] or not summing to 1 */
    VALIDATE_NAN = 8,             /* NaN or infinity */
    VALIDATE_WRONG_RESULT = 9,    /* winner, reason or plies differ from the replay */
    VALIDATE_ARENA = 10,          /* arena fields inconsistent (coordinator checks too) */
    VALIDATE_EVAL = 11,           /* rating-game fields inconsistent: sides, slot, opening */
    VALIDATE_FORGED = 12,         /* a re-searched state differs from the record (recheck.h):
                                     the coordinator's sampled check, never validate_record */
    VALIDATE_REASON_COUNT
};

/* "ok", "malformed", "oversized", "wrong-game", "unknown-model",
 * "illegal-action", "policy-illegal", "policy-sum", "nan", "wrong-result",
 * "arena", "eval", "forged"; "?" out of range. */
const char *validate_reason_name(int reason);

typedef struct validate_limits {
    size_t max_record_bytes; /* larger records are oversized */
    uint32_t max_moves;      /* more moves are oversized */
    double policy_tolerance; /* allowed |sum of shares - 1| */
} validate_limits;

/* Defaults: 1 MiB, 4096 moves, 1e-3. */
void validate_limits_default(validate_limits *lim);

typedef struct validate_result {
    int reason;                /* enum validate_reason, VALIDATE_OK if valid */
    char detail[192];          /* one line saying what is wrong ("" if valid) */
    bool has_id;               /* game_id decoded with the right length */
    uint8_t game_id[16];       /* the record's id (when has_id) */
    int kind;                  /* 0 self-play, 1 arena, 2 eval (enum record_kind) */
    uint32_t model_version;    /* self-play model / arena candidate / eval side A (0: a
                                  baseline player) */
    uint32_t opponent_version; /* arena: the best; eval: side B (0: a baseline player) */
    int candidate_player;      /* arena: the candidate's player id; eval: side A's */
    char model_player[32];     /* eval: side A's baseline spec ("" = model_version) */
    char opponent_player[32];  /* eval: side B's baseline spec ("" = opponent_version) */
    char start_position[GAME_POSITION_CHARS + 1]; /* the record's start ("" = the initial one) */
    int64_t duration_ms;       /* finished_ms - started_ms, clamped to [0, 1 day] */
    int winner;                /* 0, 1, -1 draw */
    int points;                /* what the win scored: 1, or 2/3 in a game scored in points
                                  (game_def.max_points > 1: backgammon's gammon, backgammon);
                                  0 for a draw */
    uint32_t plies;            /* completed turns */
    char worker_id[64];        /* the record's worker_id (truncated) */
    /* Training positions of a valid record, borrowed until the next call. */
    uint32_t n_positions;      /* N, one per move with a policy or a fast search */
    uint32_t packed_bytes;     /* P */
    const uint8_t *packed;     /* (N, P) */
    const float *z;            /* (N) */
    const float *q;            /* (N) the search's root value, mover's view (z if forced) */
    const uint32_t *offsets;   /* (N + 1); equal neighbours: no policy target */
    const uint32_t *actions;   /* canonical, ascending per position */
    const float *probs;        /* shares */
    /* Auxiliary targets of the same positions, borrowed likewise. */
    const uint32_t *opp_offsets; /* (N + 1) into opp_actions/opp_probs; an empty range: no
                                    opponent-policy target */
    const uint32_t *opp_actions; /* the opponent's next policy target in this position's
                                    canonical actions, ascending per position */
    const float *opp_probs;      /* its shares */
    const float *material;       /* (N) final material balance, mover's view, in [-1, 1];
                                    NULL when the game defines none */
    const struct game_record *record; /* a valid record, decoded (record.h); borrowed likewise */
} validate_result;

typedef struct validator validator;

/* A validator for game g (borrowed; must outlive it). NULL on bad limits. */
validator *validator_new(const game_def *g, const validate_limits *lim);
void validator_destroy(validator **v);

/* Validates len bytes of a serialized GameRecord. Model versions 1 ..
 * max_model_version are known. Fills *out and returns out->reason. */
int validate_record(validator *v, const uint8_t *buf, size_t len, uint32_t max_model_version,
                    validate_result *out);

/* Options of validate_random_record. */
typedef struct validate_random_opts {
    uint32_t model_version;    /* model_version field (1 if 0) */
    int kind;                  /* 0 self-play, 1 arena, 2 eval */
    uint32_t opponent_version; /* arena, eval: opponent */
    int candidate_player;      /* arena, eval: 0 or 1 */
    const char *worker_id;     /* worker_id field (may be NULL; cut to 63 bytes) */
    const char *start_position;/* R20 opening (NULL or "": the initial position; must parse) */
    const char *model_player;  /* eval: side A's baseline spec (NULL: "") */
    const char *opponent_player; /* eval: side B's baseline spec (NULL: "") */
    uint32_t max_moves;        /* stop (and fail) beyond this; 0 = no limit */
} validate_random_opts;

/* Plays a game of uniformly random legal actions from the initial position
 * (or o->start_position)
 * and writes a VALID serialized GameRecord of it (uniform policies over the
 * legal actions, root values 0, game id from the seed): test and load-
 * generator material. *buf is malloc'd (caller frees). 0, KZ_EFULL when the
 * game exceeds max_moves, KZ_ENOMEM. */
int validate_random_record(const game_def *g, uint64_t seed, const validate_random_opts *o,
                           uint8_t **buf, size_t *len);

#endif
