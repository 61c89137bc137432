/* engine: one engine for the person who plays or looks at games: `kz
 * analyse`, `kz play`, the play page (/play) and the game viewer (/viewer)
 * all go through it. It has two faces.
 *
 * In C: an engine is a player (a network with PUCT search, or any player
 * spec) that analyses a state on request: the value from the mover's view,
 * the action it would play, and every legal action with its visit share,
 * prior and mean value q, most visited first (engine_analyse).
 *
 * In JSON, for the web pages: engine_request answers the API below, and
 * engine_json_game / engine_json_summary write stored games. The game's
 * state travels in every request, never on the server: `position` (R20-style
 * position string of the game module; absent or empty: the initial position)
 * and `moves` (the actions played from it, comma-separated, as the game
 * module writes them, e.g. "7-12,17x7"). A request is replayed through the
 * rules and answered; nothing is kept between requests, so any number of
 * pages (and undo) cost nothing on the server.
 *
 * Dice (a game with chance, game_def.is_chance: backgammon). A request also
 * carries `seed` (1-16 hex digits; absent: the server draws a new one): the
 * dice are rolled from it by the game's generator (game_dice_seed,
 * game_chance_draw), never by the page. The replay checks every roll in
 * `moves` against it (another roll is a 400), and whenever the state reached
 * is a chance state the server rolls and appends the roll, so that a state
 * answered is never one: the page sees the dice in the moves (each roll a
 * move with "chance": true, its mover the player who plays it) and the
 * position, and sends them back with the seed. The state carries "seed"; a
 * saved game records it, so the record's dice follow from its seed as
 * record_validate asks.
 *
 *   GET  /api/info      the game (name, board height and width, players,
 *                       initial position), the engine (name, model version,
 *                       default and largest simulations, "tables": the
 *                       pieces its endgame tables cover, 0 none) and where
 *                       games are saved.
 *   GET  /api/legal     the state of position + moves: see "state" below.
 *   GET  /api/apply     the state after one more action (`action`); an
 *                       illegal action is a 400 naming the legal ones.
 *   GET  /api/analyse   the state and "analysis": {value (mover's view, in
 *                       [-1, 1]), best, forced, tables, sims, work, seconds,
 *                       player, top: [{action, share, prior, q}] over every
 *                       legal action, most visited first}; `sims`
 *                       (1..max_sims) overrides the default. A state with
 *                       one legal action is answered without a search of it
 *                       (forced: its value is the one after the forced
 *                       actions that follow). "tables": true when the
 *                       engine's endgame tables cover the state: then there
 *                       is no search either (work 0), best is the tables'
 *                       best action, value the exact result (1, 0 or -1),
 *                       each q the exact result after that action and each
 *                       prior null.
 *   POST /api/save      saves the finished game position + moves as a
 *                       record (`engine`: the engine's colour, "black" or
 *                       "white"; `id`: 32 hex digits chosen by the page, so
 *                       that a repeated save stores the game once;
 *                       `started_ms` optional): {saved, file, index}.
 *
 * A state (legal, apply, analyse) is a JSON object:
 *   {"start": P0, "position": P, "to_move": "black", "mid_turn": false,
 *    "ply": N, ["seed": "16 hex digits" (a game with dice),]
 *    "moves": [{"action": "7x17", "capture": true, ["chance": true,]
 *    "mover": "black", "ply": 3}, ...], "positions": [P0, P1, ..., P],
 *    "legal": [{"action": "7-12", "capture": false}, ...],
 *    "result": null | {"winner": "black" | "white" | "draw", "reason": R}}
 * where positions[k] is the position before moves[k] (and the last one the
 * current), an action string of a capture is written with 'x' (R21), and
 * "ply" counts completed turns.
 *
 * Bad input never crashes and never asserts: a malformed or illegal request
 * is a 400 with one line of text naming the problem; an unknown endpoint a
 * 404; a wrong method a 405; an engine busy for longer than ENGINE_WAIT_S a
 * 503.
 *
 * Ownership: engine_new* return a new engine (NULL with a one-line reason in
 * err), freed with engine_destroy. Replies and JSON strings are the
 * caller's (engine_reply_free, free).
 * Threads: engine_request and engine_analyse may be called from several
 * threads at once: the searches take turns (one mutex); the other answers
 * need no lock. */
#ifndef KZ_ENGINE_H
#define KZ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "games/tablebase.h"
#include "search/player.h"
#include "data/record.h"

#define ENGINE_MAX_ARGS 16        /* query arguments of one request */
#define ENGINE_MAX_MOVES 4096     /* actions in one request's `moves` */
#define ENGINE_WAIT_S 30          /* longest a request waits for the search of another */
#define ENGINE_SAVED_IDS 64       /* ids of saved games remembered (repeated saves) */

typedef struct engine engine;

/* How to make an engine. */
typedef struct engine_config {
    const char *model;   /* a model file, or "uniform"; NULL or "": use spec */
    const char *spec;    /* a player spec (player.h) when there is no model; NULL or "":
                            uct:1000. Its own simulations are fixed. */
    int sims;            /* default simulations of a network engine per analysis [200] */
    int max_sims;        /* most simulations a request may ask for [5000] */
    const char *records; /* record file the saved games are appended to; NULL or "": none */
    const char *label;   /* the engine's name on the pages; NULL: the model file's name
                            without its directories (e.g. "best.kzm"), or the spec */
    int saves_per_hour;  /* saves accepted an hour at most, in bursts of up to
                            ENGINE_SAVE_BURST (fewer if this is smaller); more: a 429
                            [0: ENGINE_SAVES_PER_HOUR] */
    double records_max_mb; /* the record file's size past which saves are refused (507)
                              [0: ENGINE_RECORDS_MAX_MB] */
    bool show_paths;     /* answers name the record file and the model with their
                            directories (for an operator: a server behind a token);
                            false: without them (file names only) [false] */
    const char *tb_dir;  /* endgame tables (kz tb build) the engine opens and uses; NULL or
                            "": none. Khreibaga's only (tb_game): an engine of another game
                            with them is refused */
    const tb_set *tb;    /* tables already open, instead of tb_dir (borrowed: they must
                            outlive the engine); NULL: tb_dir's */
} engine_config;

#define ENGINE_SAVES_PER_HOUR 120 /* default saves_per_hour */
#define ENGINE_SAVE_BURST 20      /* most saves at once (the bucket's size) */
#define ENGINE_RECORDS_MAX_MB 64  /* default records_max_mb */

/* The defaults above. */
void engine_config_default(engine_config *c);

/* An engine as cfg says: with a model, the network (loaded once) searched by
 * PUCT with the simulations of each request (player mcts:MODEL:SIMS); else
 * the player spec. With tables (tb or tb_dir), the player's search values
 * the states below the root that they cover exactly (player_set_oracle),
 * and a root they cover is answered by them without a search (tables in
 * engine_analysis). NULL with a one-line reason in err (tables that cannot
 * be opened, or none in tb_dir: "tb_dir: ..." naming the directory). */
engine *engine_new(const game_def *g, const engine_config *cfg, char *err, size_t errlen);
/* The same over a model file's bytes (the coordinator's best; copied):
 * `version` is the registry's. NULL with err. */
engine *engine_new_bytes(const game_def *g, const uint8_t *blob, size_t len, uint32_t version,
                         const engine_config *cfg, char *err, size_t errlen);
/* Frees *e and sets it to NULL; NULL-safe. No request may run on it. */
void engine_destroy(engine **e);
/* e takes over from's save limit (the saves it has left and when it last
 * counted), so that a new engine for a new best does not refill the bucket;
 * from may be NULL (nothing changes). No request may run on either. */
void engine_take_saves(engine *e, const engine *from);
/* The model version the engine plays (0: none, or unknown). */
uint32_t engine_model_version(const engine *e);
/* N such that the engine's tables cover every position of at most N pieces
 * (tb_pieces; 0: no tables). */
int engine_tb_pieces(const engine *e);

/* What the engine thinks of one state. */
typedef struct engine_analysis {
    player_info info;          /* the chosen action, value, legal actions with share,
                                  prior and q (player.h) */
    int order[GAME_MAX_LEGAL]; /* indices into info's arrays, highest share first (ties:
                                  by tables, the better exact result first; then the
                                  lower action first) */
    bool forced;               /* one legal action: not searched; info.value is the value
                                  after the forced actions (NAN when unknown: the dice
                                  come next) */
    bool tables;               /* the engine's endgame tables cover the state: not
                                  searched (work 0); info.action is their best action
                                  (tb_best_action), info.value the exact result under
                                  R13 (+1, 0 or -1), info.share 1 for that action, each
                                  info.q the exact result after the action (mover's
                                  view), info.prior NAN */
    int sims;                  /* simulations asked for (0: the player's own) */
    double seconds;            /* wall time of the search */
    char player[PLAYER_SPEC_MAX + 16]; /* the player that searched */
} engine_analysis;

/* Analyses s (not over) with sims simulations (0: the default; a player spec
 * keeps its own), the player's random generator seeded with seed (the page's
 * requests use 1: the same question, the same answer). 0, KZ_ETIMEOUT when
 * another search held the engine for ENGINE_WAIT_S, or the player's error. */
int engine_analyse(engine *e, const game_state *s, int sims, uint64_t seed,
                   engine_analysis *out);

/* Whether action (legal in s) removes a piece: the material of input planes
 * 0..3 (player.h's layout) drops. */
bool engine_is_capture(const game_def *g, const game_state *s, int action);
/* The action string with 'x' in place of '-' for a capture (R21). */
void engine_format_action(const game_def *g, const game_state *s, int action, char *buf,
                          size_t len);

/* Query arguments of a request (strings borrowed for the request). */
typedef struct engine_args {
    int n;                               /* pairs used */
    const char *key[ENGINE_MAX_ARGS];    /* names */
    const char *value[ENGINE_MAX_ARGS];  /* values ("" for a bare name) */
    bool too_many;                       /* more than ENGINE_MAX_ARGS were given */
} engine_args;
/* Adds a pair (value NULL: ""); beyond ENGINE_MAX_ARGS sets too_many. */
void engine_args_add(engine_args *a, const char *key, const char *value);
/* The value of key, NULL when absent. */
const char *engine_arg(const engine_args *a, const char *key);

/* An answer to an HTTP request. */
typedef struct engine_reply {
    int code;         /* HTTP status */
    const char *type; /* content type (static) */
    char *body;       /* (len + 1) NUL-terminated, owned: engine_reply_free */
    size_t len;       /* bytes */
} engine_reply;
/* Frees the body; NULL-safe. */
void engine_reply_free(engine_reply *r);
/* A one-line text reply with code (its body ends with one newline). */
void engine_reply_line(engine_reply *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Answers METHOD /api/NAME with args (the API above). e may be NULL: then
 * only info (no engine) and legal/apply answer; analyse and save are 503. */
void engine_request(engine *e, const game_def *g, const char *method, const char *name,
                    const engine_args *args, engine_reply *out);

/* GET /games and /games/SEQ as JSON (records from a store or a file).
 * engine_json_summary: one object {seq, id, game, kind, model, opponent,
 * a, b, candidate_player, winner, reason, plies, states, started_ms,
 * seconds, worker} (a and b: the sides' names, "vN" or a baseline player;
 * winner: a player's name or "draw").
 * engine_json_game: the same with "start", "moves" (as in a state, plus per
 * move value, forced, fast and top: the five largest visit shares [[action,
 * share], ...]), "positions" and "result"; a record that fails its replay
 * gives NULL with the reason in err. Caller frees the strings. */
char *engine_json_summary(const game_record *r, uint64_t seq);
char *engine_json_game(const game_def *g, const game_record *r, uint64_t seq, char *err,
                       size_t errlen);

/* A filter of /games: kind ("selfplay", "arena", "eval" or "" all), model
 * (the record's model, or an arena's or rating game's opponent version, 0
 * all), result (the winner's player name, "draw", or "" all), at most limit
 * games, from sequence `before` down (UINT64_MAX: the newest). */
typedef struct engine_games_filter {
    char kind[16];    /* "" all */
    uint32_t model;   /* 0 all */
    int winner;       /* -2 all, else 0, 1 or -1 (draw) */
    int limit;        /* 1..ENGINE_GAMES_MAX */
    uint64_t before;  /* newest sequence to look at */
} engine_games_filter;
#define ENGINE_GAMES_DEFAULT 50   /* games listed when limit is not given */
#define ENGINE_GAMES_MAX 500      /* most games one request lists */
#define ENGINE_GAMES_SCAN 2000    /* most records one request looks at */
/* Reads kind, model, result, limit and before from args (result names g's
 * players). 0, or the 400's text in err (an unknown argument or value). */
int engine_games_filter_parse(const game_def *g, const engine_args *args,
                              engine_games_filter *f, char *err, size_t errlen);
/* Whether r passes f (all but limit and before). */
bool engine_games_match(const engine_games_filter *f, const game_record *r);

/* Building GET /games's answer: begin, offer the records newest first (r
 * NULL for one that does not decode: counted as unreadable) while offer
 * returns true (false: the limit or ENGINE_GAMES_SCAN records reached), then
 * end, which frees l and returns the JSON (caller frees):
 *   {"games": [summaries], "listed": n, "scanned": n, "unreadable": n,
 *    "total": games stored, "next_before": the `before` that goes on (null:
 *    every record looked at)} */
typedef struct engine_games_list engine_games_list;
engine_games_list *engine_games_begin(const engine_games_filter *f);
bool engine_games_offer(engine_games_list *l, const game_record *r, uint64_t seq);
char *engine_games_end(engine_games_list **l, uint64_t total);

/* GET BASE and BASE/K over the games saved to the record file at path (the
 * games of people, read whole: a small file): rest is what follows BASE in
 * the URL ("" the list, with the filter above, newest first; "/K" the K-th
 * record, K from 1 as `kz records FILE --game K`). path NULL or "": no games
 * (the list empty, K a 404). A torn tail (record_file_torn) ends the list.
 * show_paths false: an error names the file without its directories. Reads
 * take turns with the saves of every engine of the process. */
void engine_saved_games(const game_def *g, const char *path, const char *base,
                        const char *rest, const engine_args *a, bool show_paths,
                        engine_reply *out);

#endif
