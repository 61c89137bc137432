/* wire: encodes and decodes the cluster's messages (proto/wire.proto) as plain
 * C structs. The only module that touches the generated wire protobuf code;
 * everything else (client, coordinator, worker, trainer) speaks wire_msg.
 *
 * A wire_msg is an envelope (protocol version, request id, client id) plus one
 * body, selected by `kind`. Pointer fields (strings, bytes, arrays) are
 * BORROWED: when encoding, from the caller; after wire_decode, from the
 * decoded message, valid until wire_msg_clear() or the next wire_decode() on
 * the same wire_msg. NULL strings encode as "".
 *
 * Decoding never trusts its input: it refuses buffers over a size cap,
 * undecodable bytes, an unset body, and inconsistent arrays, and reports a
 * different protocol version as KZ_EVERSION (with version and request id
 * filled in so that the caller can refuse it: wire_make_refusal).
 *
 * Threads: functions are reentrant; a wire_msg belongs to one thread. */
#ifndef KZ_WIRE_H
#define KZ_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_PROTOCOL_VERSION 1
#define WIRE_GAME_ID_BYTES 16      /* GameRecord.game_id */
#define WIRE_TOPIC_BEST "best"     /* PUB/SUB topic of announcements */

/* Which body a message carries (matches nothing in the .proto numerically). */
enum wire_kind {
    WIRE_NONE = 0,
    WIRE_HELLO,
    WIRE_WELCOME,
    WIRE_HEARTBEAT,
    WIRE_HEARTBEAT_REPLY,
    WIRE_JOB_REQUEST,
    WIRE_JOB,
    WIRE_MODEL_REQUEST,
    WIRE_MODEL_REPLY,
    WIRE_GAME_SUBMIT,
    WIRE_GAME_ACK,
    WIRE_GAME_REJECT,
    WIRE_BATCH_REQUEST,
    WIRE_BATCH_REPLY,
    WIRE_CANDIDATE_SUBMIT,
    WIRE_CANDIDATE_ACK,
    WIRE_TRAINER_STATS,
    WIRE_STATS_ACK,
    WIRE_ANNOUNCEMENT,
    WIRE_ERROR,
    WIRE_KIND_COUNT
};

/* Job kinds (JobKind). */
enum wire_job_kind {
    WIRE_JOB_WAIT = 0,
    WIRE_JOB_SELFPLAY = 1,
    WIRE_JOB_ARENA = 2,
    WIRE_JOB_EVAL = 3
};

/* Error codes (ErrorCode). */
enum wire_error_code {
    WIRE_ERR_NONE = 0,
    WIRE_ERR_VERSION = 1,   /* protocol version mismatch */
    WIRE_ERR_MALFORMED = 2, /* undecodable or inconsistent request */
    WIRE_ERR_NOT_FOUND = 3, /* no such model */
    WIRE_ERR_REFUSED = 4,   /* refused: bad checksum, wrong game, too large */
    WIRE_ERR_INTERNAL = 5,  /* the coordinator failed */
    WIRE_ERR_FORBIDDEN = 6, /* the client's key may not make this request (its role) */
};

typedef struct wire_hello {
    const char *role;     /* "worker", "trainer", "tool" */
    const char *host;     /* hostname */
    uint32_t pid;         /* process id */
    const char *software; /* build identification */
    const char *game;     /* game module name */
    uint32_t slots;       /* games played at once */
} wire_hello;

typedef struct wire_welcome {
    const char *coordinator;   /* coordinator's name */
    uint64_t instance;         /* random per coordinator start */
    const char *game;          /* the cluster's game */
    uint32_t heartbeat_ms;     /* heartbeat period asked of clients */
    uint32_t expiry_ms;        /* silence after which a client counts as gone */
    uint64_t max_msg_bytes;    /* coordinator's inbound message cap */
    uint32_t best_version;     /* current best model */
    uint64_t max_record_bytes; /* largest GameRecord accepted */
} wire_welcome;

typedef struct wire_heartbeat {
    uint32_t games_in_flight;    /* games being played now */
    uint64_t games_done;         /* games finished since start */
    uint32_t arena_candidate;    /* arena in hand (candidate version), 0 none */
    const uint32_t *arena_slots; /* (n_arena_slots) slots being played */
    size_t n_arena_slots;        /* entries of arena_slots */
    uint32_t pending;            /* submitted, unacknowledged games */
    uint32_t model_version;      /* the network it plays with now, 0 none */
    float sims_per_s;            /* its search speed, recently */
} wire_heartbeat;

typedef struct wire_heartbeat_reply {
    uint32_t best_version;      /* current best */
    uint32_t candidate_version; /* candidate under arena, 0 none */
    uint64_t instance;          /* coordinator instance */
} wire_heartbeat_reply;

typedef struct wire_job_request {
    uint32_t free_slots;         /* games the worker can start now */
    uint32_t arena_candidate;    /* arena games in hand: candidate, 0 none */
    const uint32_t *arena_slots; /* (n_arena_slots) slots still in hand */
    size_t n_arena_slots;        /* entries of arena_slots */
} wire_job_request;

typedef struct wire_job {
    int kind;                         /* enum wire_job_kind */
    uint32_t model_version;           /* self-play: best; arena: candidate */
    uint64_t model_checksum;          /* wire_blob_checksum of its blob */
    uint32_t opponent_version;        /* arena: the best */
    uint64_t opponent_checksum;       /* its checksum */
    const uint32_t *arena_slots;      /* (n_arena) arena slots assigned */
    const int32_t *candidate_players; /* (n_arena) 0: candidate plays first */
    size_t n_arena;                   /* arena games in this job */
    uint32_t games;                   /* self-play: games to start, then ask again */
    uint32_t retry_ms;                /* wait: ask again after this long */
    uint32_t simulations;             /* per move; 0 = worker's own setting */
    char *const *start_positions;     /* (n_start) per slot, the opening ("" = the start);
                                         self-play: the opening of the job's k-th game */
    size_t n_start;                   /* 0, or n_arena; self-play: 0 .. games */
    const char *model_player;         /* eval: side A's baseline spec, "" = model_version */
    const char *opponent_player;      /* eval: side B's baseline spec, "" = opponent_version */
    const char *game;                 /* the cluster's game ("" from an older coordinator) */
} wire_job;

typedef struct wire_model_request {
    uint32_t version; /* 0 = current best */
} wire_model_request;

typedef struct wire_model_reply {
    uint32_t version;    /* the model's version */
    uint64_t checksum;   /* wire_blob_checksum(blob) */
    const uint8_t *blob; /* (blob_len) model file bytes */
    size_t blob_len;     /* bytes in blob */
    uint32_t parent;     /* trained from, 0 none */
    int64_t created_ms;  /* registration time */
    const char *game;    /* game module */
} wire_model_reply;

typedef struct wire_game_submit {
    const uint8_t *record; /* (record_len) serialized GameRecord */
    size_t record_len;     /* bytes in record */
    uint32_t arena_slot;   /* arena games: slot from the Job */
} wire_game_submit;

typedef struct wire_game_ack {
    const uint8_t *game_id; /* (game_id_len) the record's id */
    size_t game_id_len;     /* normally WIRE_GAME_ID_BYTES */
    bool duplicate;         /* already stored before this submission */
    uint64_t sequence;      /* game sequence in the store */
} wire_game_ack;

typedef struct wire_game_reject {
    const uint8_t *game_id; /* (game_id_len), may be empty */
    size_t game_id_len;     /* bytes in game_id */
    uint32_t reason;        /* enum validate_reason (RejectReason) */
    const char *detail;     /* one line */
} wire_game_reject;

typedef struct wire_batch_request {
    uint32_t size;          /* samples wanted */
    uint64_t min_positions; /* empty reply unless the window holds this many */
    bool aux;               /* send the auxiliary targets too */
} wire_batch_request;

/* The auxiliary targets of a BatchReply's samples (NULL arrays: none sent). */
typedef struct wire_batch_aux {
    const float *material;       /* (n) final material balance, mover's view, in [-1, 1] */
    const float *material_w;     /* (n) 1: material[i] is a target, 0: none (with material) */
    const uint32_t *opp_offsets; /* (n + 1) into opp_actions/opp_probs; empty range: none */
    const uint32_t *opp_actions; /* (opp_offsets[n]) the opponent's next policy target,
                                    canonical actions of the sample's own view */
    const float *opp_probs;      /* (opp_offsets[n]) its shares */
} wire_batch_aux;

/* Sample i: packed + i*packed_bytes (packed_bytes bytes), z[i], policy
 * actions[offsets[i] .. offsets[i+1]) with probs alongside. */
typedef struct wire_batch_reply {
    uint32_t n;               /* samples */
    uint32_t packed_bytes;    /* P: bytes per packed position */
    const uint8_t *packed;    /* (n, P) game_def->pack output */
    const float *z;           /* (n) outcome, mover's view */
    const uint32_t *offsets;  /* (n + 1) into actions/probs; an empty range: no policy
                                 target (a fast search's state) */
    const uint32_t *actions;  /* (offsets[n]) canonical actions */
    const float *probs;       /* (offsets[n]) visit shares */
    uint64_t window_lo;       /* window = position sequences [lo, hi) */
    uint64_t window_hi;       /* = positions ever stored */
    uint32_t best_version;    /* current best */
    uint64_t games_total;     /* games ever stored */
    const float *q;           /* (n) the search's value, mover's view; NULL (an older
                                 coordinator): use z */
    wire_batch_aux aux;       /* auxiliary targets (when the request asked for them) */
    const char *game;         /* the positions' game ("" from an older coordinator) */
} wire_batch_reply;

typedef struct wire_candidate_submit {
    const uint8_t *blob;     /* (blob_len) model file */
    size_t blob_len;         /* bytes in blob */
    uint64_t checksum;       /* wire_blob_checksum(blob) */
    uint32_t parent_version; /* the best it was trained from */
    uint64_t trainer_step;   /* training step */
} wire_candidate_submit;

typedef struct wire_candidate_ack {
    uint32_t version; /* registry version */
    bool duplicate;   /* already registered */
    bool queued;      /* waits for the running arena */
} wire_candidate_ack;

typedef struct wire_trainer_stats {
    uint64_t step;           /* training step */
    float loss;              /* total loss */
    float policy_loss;       /* cross-entropy part */
    float value_loss;        /* squared-error part */
    float l2_loss;           /* weight-decay part */
    float steps_per_s;       /* speed */
    float samples_per_s;     /* speed */
    float learning_rate;     /* current rate */
    uint64_t samples_seen;   /* samples trained on */
    uint32_t last_candidate; /* last candidate version submitted */
    float opp_policy_loss;   /* auxiliary opponent-policy part, unweighted (0: no such head) */
    float material_loss;     /* auxiliary material part, unweighted (0: no such head) */
} wire_trainer_stats;

typedef struct wire_stats_ack {
    uint32_t best_version; /* current best */
} wire_stats_ack;

typedef struct wire_announcement {
    uint32_t best_version;     /* the new best */
    uint64_t checksum;         /* its blob checksum */
    uint32_t previous_version; /* the best it replaced */
    uint32_t wins;             /* arena tally, candidate's view */
    uint32_t draws;            /* draws */
    uint32_t losses;           /* losses */
} wire_announcement;

typedef struct wire_error {
    uint32_t code;              /* enum wire_error_code */
    const char *message;        /* one line */
    uint32_t supported_version; /* the sender's protocol version */
} wire_error;

/* One message: envelope plus body. Zero-initialize before use. */
typedef struct wire_msg {
    uint32_t version;    /* protocol version (0 encodes WIRE_PROTOCOL_VERSION) */
    uint64_t request_id; /* echoed in replies */
    const char *client;  /* sender's stable client id (requests), may be NULL */
    int kind;            /* enum wire_kind: which member of u */
    union {
        wire_hello hello;
        wire_welcome welcome;
        wire_heartbeat heartbeat;
        wire_heartbeat_reply heartbeat_reply;
        wire_job_request job_request;
        wire_job job;
        wire_model_request model_request;
        wire_model_reply model_reply;
        wire_game_submit game_submit;
        wire_game_ack game_ack;
        wire_game_reject game_reject;
        wire_batch_request batch_request;
        wire_batch_reply batch_reply;
        wire_candidate_submit candidate_submit;
        wire_candidate_ack candidate_ack;
        wire_trainer_stats trainer_stats;
        wire_stats_ack stats_ack;
        wire_announcement announcement;
        wire_error error;
    } u;                 /* the body */
    void *decoded;       /* private: the unpacked envelope the pointers borrow from */
} wire_msg;

/* A growable output buffer. Zero-initialize; wire_buf_free releases. */
typedef struct wire_buf {
    uint8_t *data; /* (cap) bytes, the first len used */
    size_t len;    /* bytes written */
    size_t cap;    /* bytes allocated */
} wire_buf;

void wire_buf_free(wire_buf *b);

/* Name of a kind ("game_submit"), for logs; "?" when out of range. */
const char *wire_kind_name(int kind);
/* Name of an error code ("version"). */
const char *wire_error_name(uint32_t code);

/* The checksum used on the wire for model blobs (hash_bytes, seed 0). */
uint64_t wire_blob_checksum(const void *blob, size_t len);

/* Serializes m into out (replacing its contents). 0, KZ_EINVAL for an unset
 * or unknown kind or inconsistent arrays, KZ_ENOMEM. */
int wire_encode(const wire_msg *m, wire_buf *out);

/* Parses len bytes into m (clearing what m held). Returns
 *   0             m is a valid message of the current protocol version;
 *   KZ_EFULL      len > max_len (nothing decoded);
 *   KZ_ECORRUPT   undecodable, version 0 (absent), no body, or inconsistent fields;
 *   KZ_EVERSION   decodable, but version != WIRE_PROTOCOL_VERSION: m->version
 *                 and m->request_id are set, m->kind may be WIRE_NONE.
 * On any failure m holds no body (kind WIRE_NONE except for KZ_EVERSION). */
int wire_decode(wire_msg *m, const void *buf, size_t len, size_t max_len);

/* Frees what a decode left in m and zeroes it. NULL-safe. */
void wire_msg_clear(wire_msg *m);

/* Fills `reply` (with text in the caller's buffer msgbuf) as the Error that
 * refuses `req` for its protocol version: echoes the request id and names both
 * versions. */
void wire_make_refusal(const wire_msg *req, wire_msg *reply, char *msgbuf, size_t msglen);

/* Checks the syntax of a ZeroMQ endpoint from a setting before anything
 * uses it: tcp://HOST:PORT (PORT 1..65535, or '*' when `bind`), ipc://PATH or
 * inproc://NAME. 0, or KZ_EINVAL with a one-line reason in err. Does not
 * resolve names or try the address (a bind can still fail at start). */
int wire_endpoint_check(const char *endpoint, bool bind, char *err, size_t errlen);

/* Fills `reply` as an Error with code and message (borrowed) for req. */
void wire_make_error(const wire_msg *req, wire_msg *reply, uint32_t code, const char *message);

#endif
