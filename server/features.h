/* features: the parts of kz-coordinator and what each exports to the others
 * and to the actor (server/ only). They call down, to services.h, and
 * never up into the actor (coordinator.c); among themselves ratings uses the
 * arena, forge both, and status reads them all.
 *
 *   arena.c       candidates, arena slots, tallies, promotion
 *   ratings.c     the rating pool: anchors and models, tallies of every pair,
 *                 evaluation matches for workers, the fit, the history
 *   timeline.c    the run's history: a bounded time series of the figures
 *                 (games, positions, results, game length, trainer losses)
 *   models.c      the model store bounded (retention), its size, the disk
 *   auth.c        CurveZMQ: the coordinator's keys, the allow-list of client
 *                 keys and roles (reloaded on SIGHUP), the ZAP handler, what
 *                 each role may ask, handshake failures (docs/security.md)
 *   status.c      HTTP endpoint (/status, /metrics, /healthz, /models and
 *                 the model files, /timeline, the pages of webpages.h) and
 *                 the snapshots it serves
 *   games.c       /games and /games/SEQ: stored games for the viewer; /api/:
 *                 the play page's engine over the best model
 *   endgame.c     the best's endgame accuracy on the tables' test set
 *                 (tb_dir), measured on a thread of its own
 *   judge.c       the rated bests' moves in their rating games judged on a
 *                 thread of its own: by gnubg (backgammon: equity lost per
 *                 decision) or by perfect play (Khreibaga: value-losing
 *                 turns a game)
 *   yardstick.c   the best's perfect-play accuracy (perfect_positions) and its
 *                 value head's calibration by phase (value_positions), measured
 *                 on a thread of its own at most every yardstick_minutes
 *   forge.c       the sampled re-search of submitted games (recheck.h) on a
 *                 thread of its own: forged games refused, counted per client */
#ifndef KZ_SERVER_FEATURES_H
#define KZ_SERVER_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "play/yardstick.h"
#include "server/server.h"

/* arena.c */
/* Loads best/arena state from the store at start-up; decides a finished arena. */
int arena_load(coord *c);
/* Registers a candidate blob; fills ack. 0 or an error (message in err). */
int arena_add_candidate(coord *c, const wire_candidate_submit *cs, wire_candidate_ack *ack,
                        char *err, size_t errlen);
/* Releases slots assigned to worker w that it no longer holds (job request). */
void arena_reconcile(coord *c, int w, uint32_t candidate, const uint32_t *slots, size_t n);
/* Releases every slot of worker w (expired). Returns how many. */
uint32_t arena_release_worker(coord *c, int w);
/* Assigns up to max open slots to worker w: writes slots, colours and openings
 * (borrowed from the book), returns count. */
size_t arena_assign(coord *c, int w, size_t max, uint32_t *slots, int32_t *colours,
                    char **openings);
/* The finished pairs of the arena, candidate's view. */
void arena_penta(const arena *a, int penta[MATCH_PENTA]);
/* Makes v the best again (the guard of gate none). */
void arena_revert(coord *c, uint32_t v);
/* Checks an arena record against the arena: VALIDATE_OK with *count_slot
 * (-1 when the game is stored but not counted: another arena, or a slot
 * already played, also earlier in the pending batch) and *result, or
 * VALIDATE_ARENA with a message in err. */
int arena_check(coord *c, const validate_result *v, uint32_t slot, int *count_slot,
                uint8_t *result, char *err, size_t errlen);
/* Serializes the arena with the pending batch's results applied. */
size_t arena_serialize(const coord *c, const ingest_item *items, size_t n, uint8_t **out);
/* Applies the committed results of a batch and decides the arena if it can. */
void arena_commit(coord *c, const ingest_item *items, size_t n);
/* Open slots (unassigned, unplayed). */
uint32_t arena_open_slots(const coord *c);

/* models.c: the model store bounded. models_tick (main loop, with the status
 * refresh) deletes the models the retention does not keep: it keeps the
 * initial model, every best an arena promoted, every rated model, every
 * keep_models_every-th version, the keep_models_last newest, and whatever a
 * match, an arena, a gauntlet or the workers' jobs name now (the best, the
 * candidate, the rated best, the gauntlet's subject and opponents, the
 * rating match's sides). Models are read for workers and downloads in the
 * main loop, the same thread that deletes, so none is deleted while it is
 * being fetched. It also counts the models and their bytes and measures
 * the data disk's free space (a warning in the log, /status and /metrics
 * when it is below disk_warn_mb). */
void models_tick(coord *c);
/* Self-play games per model version (the network list's "games"), kept across
 * restarts: meta "selfplay/V" holds version V's count (u64, big-endian). A
 * count that changed is dirty until written: with the next batch of games
 * (models_selfplay_meta, in the batch's transaction), or alone after a second
 * without one (models_selfplay_save), and at the stop; a crash loses at most
 * the counts of the last batch before it. A version the retention deletes
 * loses its entry. models_selfplay_count is called after a batch's commit. */
int models_selfplay_load(coord *c);
void models_selfplay_count(coord *c, uint32_t v);
/* The dirty counts as meta entries into meta (at most COORD_SP_DIRTY; names and
 * values in c's own buffers, valid until the next call); models_selfplay_written
 * once they are committed. */
size_t models_selfplay_meta(coord *c, store_meta *meta);
void models_selfplay_written(coord *c);
int models_selfplay_save(coord *c);

/* ratings.c */
/* Loads the tallies and the history, fits. 0 (unreadable state is logged and dropped). */
int ratings_load(coord *c);
void ratings_fini(coord *c);
/* Fits every rating again from the tallies (c->rated). */
void ratings_fit(coord *c);
/* The fitted rating of model v, NULL if it has none. Borrowed until the next fit. */
const rated_player *ratings_get(const coord *c, uint32_t version);
/* Whether rating games may take slots now (their share of slot time is below eval_share). */
bool ratings_share_ok(const coord *c);
/* Plans a match if none runs and assigns up to max of its open slots to worker w. */
size_t ratings_assign(coord *c, int w, size_t max, uint32_t *slots, int32_t *colours,
                      char **openings);
/* Releases worker w's unplayed rating slots. */
void ratings_release_worker(coord *c, int w);
/* Checks an eval record against the match (as arena_check): *count_slot, *result. */
int ratings_check(coord *c, const validate_result *v, uint32_t slot, int *count_slot,
                  uint8_t *result, char *err, size_t errlen);
/* Counts a batch's rating and arena games into the tallies before its commit;
 * true when anything changed (then meta "tallies" goes with the batch). */
bool ratings_apply(coord *c, const ingest_item *items, size_t n);
/* The batch did not commit: the tallies are read back, its rating slots reopened. */
void ratings_rollback(coord *c, const ingest_item *items, size_t n);
/* After a commit: ends a finished match (fit, history, guard). */
void ratings_after_commit(coord *c);
/* Meta "tallies" ("KZT2": the tallies with their points; "KZT1", a store's
 * older form without them, is still read). Caller frees *out. */
size_t ratings_serialize(const coord *c, uint8_t **out);
/* a's score over t's games in the fit of a game scored in points
 * (game_def.max_points > 1, backgammon): its share of the points won,
 * a draw half a point each, times the games: (w + d + l) (pa + d/2) /
 * (pa + pb + d). With every win one point it is w + d/2, the score of the
 * other games' fit (docs/ratings.md, "Points"). */
double ratings_points_score(const tally *t);

/* timeline.c */
/* Loads meta "timeline" and opens the first interval. 0 (unreadable
 * points are logged and dropped). */
int timeline_load(coord *c);
void timeline_fini(coord *c);
/* The open interval as a point ending now (not stored). */
void timeline_current(const coord *c, timeline_point *out);
/* Closes the open interval into a point when timeline_s has passed (or
 * force: at the stop); the points are then dirty until written. */
void timeline_tick(coord *c, bool force);
/* Meta "timeline" (the points); caller frees *out. Clears dirty: the caller
 * writes it (with a batch of games, or timeline_save). */
size_t timeline_serialize(coord *c, uint8_t **out);
/* Writes meta "timeline" in its own transaction. 0 or the store's error (logged). */
int timeline_save(coord *c);

/* auth.c */
/* With cfg.curve: reads the coordinator's key pair and the allow-list and
 * binds the ZAP handler, which must exist before the ROUTER and the PUB bind
 * (libzmq admits every key when no handler answers). Without: logs the
 * warning. 0 or an error (logged). */
int auth_init(coord *c);
/* Makes s a CurveZMQ server with the coordinator's key (before its bind)
 * when curve is on. 0 or zmq errno. */
int auth_socket(coord *c, void *s);
/* Watches s's handshakes (after its bind): failures are counted (which = 0
 * ROUTER, 1 PUB). */
void auth_watch(coord *c, void *s, int which);
/* The sockets the main loop polls for auth_serve (NULL where none): the ZAP
 * handler and the two monitors. */
void auth_poll_items(coord *c, void *out[3]);
/* Answers the waiting ZAP requests and reads the handshake events. Main
 * loop, every turn; cheap when idle. */
void auth_serve(coord *c);
/* Reads the allow-list again (SIGHUP); a bad file is logged and the
 * previous list stays. */
void auth_reload(coord *c);
/* The check of one request: with curve, the key behind user_id (the
 * message's ZAP "User-Id", the key's Z85 text) must still be in the
 * allow-list and its role may send `kind`. True when allowed, and then *id
 * is the client id the request is filed under: the key's name, or NAME/ID
 * for a client naming itself ID (several processes sharing one key), in
 * idbuf when made. False with the reason in why (counted, logged once per
 * key and kind). Without curve: true, *id = claimed. */
bool auth_check(coord *c, const char *user_id, int kind, const char *claimed, const char **id,
                char *idbuf, size_t idlen, char *why, size_t whylen);
void auth_fini(coord *c);

/* status.c */
/* Reads the HTTP token file (status_token_file): one line of 16 to
 * STATUS_TOKEN_MAX - 2 printable characters, in a file other users may not
 * read. 0 or an error with err. */
int status_read_token(const char *path, char *out, size_t cap, char *err, size_t errlen);
/* Binds the status port (http_bind:http_port; nothing when it is 0) before
 * the store is touched, so that a port in use stops the start before any
 * bootstrap. 0, or KZ_EIO (logged). */
int status_bind(coord *c);
/* Serves HTTP on the bound socket. 0, or KZ_EIO (logged). */
int status_start(coord *c);
void status_stop(coord *c);
/* Rebuilds the /status, /metrics and /models snapshots. */
void status_refresh(coord *c);
/* Answers the HTTP thread's request for a model file, if one waits: reads
 * the blob, stamps its version and parent (modelfile_stamp), keeps it for
 * the HTTP thread. Called by the main loop on every turn; cheap when idle. */
void status_serve(coord *c);

/* games.c: GET /games and /games/SEQ (engine.h's JSON), and /api/ for the
 * play page. games_start makes
 * the mailbox (status_start), games_stop wakes the waiting HTTP threads,
 * games_free frees it once the HTTP server has stopped (status_stop). */
struct engine_args;
struct engine_reply;
void games_start(coord *c);
void games_stop(coord *c);
void games_free(coord *c);
/* Answers GET url (/games or /games/SEQ) with its query arguments: parses
 * it, posts it to the main loop and waits for the answer (at most 10 s:
 * then a 503). /saved and /saved/K are the games saved from /play
 * (DATA_DIR/play.kzr, engine_saved_games), answered on the calling thread.
 * HTTP threads only. */
void games_http(coord *c, const char *url, const struct engine_args *args,
                struct engine_reply *out);
/* Answers METHOD /api/NAME (engine.h's API) with the engine of the current
 * best model (built on first use and when the best changes; searches run on
 * the calling HTTP thread, at most 2000 simulations; games saved to
 * DATA_DIR/play.kzr). HTTP threads only. */
void games_api(coord *c, const char *method, const char *name, const struct engine_args *args,
               struct engine_reply *out);
/* Answers the posted request, if any, from the store, and notes the best
 * version for games_api. Main loop, every turn (status_serve calls it);
 * cheap when idle. */
void games_serve(coord *c);

/* dashboard.c: the page of GET / (server/dashboard.html), NUL-terminated. */
extern const char status_dashboard_html[];
extern const size_t status_dashboard_len;

/* endgame.c */
/* The endgame accuracy of a model, as /status shows it. */
typedef struct endgame_figures {
    int pieces;           /* the tables cover every position with up to this many pieces */
    int positions;        /* test positions (tb_test_positions, seed TB_TEST_SEED) */
    int simulations;      /* the search's simulations */
    double chance;        /* mean of 1 / legal actions over the test set */
    uint32_t version;     /* the model measured last, 0 none yet */
    int policy, search;   /* its value-keeping choices: raw policy, search */
    double seconds;       /* the measurement's wall time */
    int64_t done_ms;      /* wall clock when it ended */
    uint32_t computing;   /* the version being measured now, 0 none */
    char error[160];      /* why the last measurement failed, "" none */
    double value_mse;     /* its raw value head against the exact values: mean (v - z)^2 */
} endgame_figures;
/* One measured version in the history (the dashboard's plot along versions). */
typedef struct endgame_point {
    uint32_t version;
    uint32_t positions, policy, search; /* the test set, its value-keeping choices */
    double value_mse;                   /* the raw value head's mean squared error */
    int64_t done_ms;                    /* when it was measured (wall clock) */
} endgame_point;
#define ENDGAME_HISTORY 256 /* points kept; every other older one dropped when full */
typedef struct endgame endgame;
/* With cfg.tb_dir: opens the tables, draws the test set and starts the
 * measuring thread (else nothing). 0, or an error (logged): tables that
 * cannot be used stop the start. */
int endgame_start(coord *c);
/* Main loop: hands a new best to the thread (a copy of its blob). */
void endgame_tick(coord *c);
/* The figures (false without tb_dir). Any thread. */
bool endgame_get(coord *c, endgame_figures *out);
/* The measured versions, oldest first, into out (ENDGAME_HISTORY): how many
 * (0 without tb_dir). Kept in the store (meta "endgame_history", written by
 * endgame_tick after each measurement), so the plot survives restarts. Any
 * thread. */
int endgame_history(coord *c, endgame_point *out);
/* The tables of tb_dir (NULL without): the play page's engine uses them too
 * (games.c). They live until endgame_stop, which comes after status_stop. */
struct tb_set;
const struct tb_set *endgame_tables(const coord *c);
/* Stops the thread (a measurement is cut short) and frees it all. */
void endgame_stop(coord *c);

/* yardstick.c */
/* The yardstick's figures of a model, as /status shows them (issue 24;
 * docs/learning.md "The sharper yardstick"). Perfect-play accuracy
 * (perfect_positions > 0, Khreibaga): on the positions, the turns of the raw
 * policy ([0]) and of its YARDSTICK_SIMS-simulation search ([1]) judged
 * against the proven values (play/referee.h, referee_accuracy_run, as `kz
 * solve accuracy MODEL --sims 200 --seed 1` measures them). Value calibration
 * (value_positions): the raw value head's mean squared error against the
 * labels by phase (yard_phase), and on the first value_compare positions how
 * often YARDSTICK_SIMS and YARDSTICK_SIMS_HIGH simulations choose different
 * actions (yard_value_measure, as `kz yardstick value MODEL --compare N`). */
#define YARDSTICK_SIMS 200
#define YARDSTICK_SIMS_HIGH 1600
typedef struct yardstick_figures {
    int perfect;              /* perfect-play positions, 0: that measure is off */
    int perfect_pieces;       /* the tables used go up to this many pieces, 0: none */
    long perfect_nodes;       /* the referee's budget a position */
    int value;                /* labelled positions, 0: that measure is off */
    int value_compare;        /* of them, compared at two budgets (at most) */
    double interval_min;      /* yardstick_minutes */
    uint32_t version;         /* the model measured last, 0 none yet */
    uint32_t computing;       /* the version being measured now, 0 none */
    char error[160];          /* why the last measurement failed, "" none */
    double seconds;           /* the last measurement's wall time */
    double cpu_seconds;       /* and its thread's CPU time */
    int64_t done_ms;          /* wall clock when it ended */
    /* perfect play (version's) */
    int settled;              /* positions whose value the budget settled */
    int with_choice;          /* of them (every turn judged), where some turn loses value */
    int judged[2], keep[2];   /* turns judged (keep or lose), and kept: policy, search */
    int judged_choice[2], keep_choice[2]; /* the same where some turn loses value */
    /* value calibration (version's) */
    int n[YARD_PHASES];       /* labelled positions by phase */
    double mse[YARD_PHASES];  /* the value head's mean (v - z)^2 by phase */
    double v[YARD_PHASES], z[YARD_PHASES]; /* mean prediction and mean label by phase */
    int compared, differ;     /* positions compared at two budgets; choosing differently */
} yardstick_figures;
/* One measured version in the history (the dashboard's plots along versions). */
typedef struct yardstick_point {
    uint32_t version;
    uint32_t flags;                       /* YARDSTICK_PERFECT, YARDSTICK_VALUE: measured */
    uint32_t judged[2], keep[2], judged_choice[2], keep_choice[2]; /* perfect play */
    uint32_t n[YARD_PHASES];              /* value: positions by phase */
    double mse[YARD_PHASES];              /* value: squared error by phase */
    uint32_t compared, differ;            /* two budgets compared; differing */
    int64_t done_ms;                      /* when it was measured (wall clock) */
} yardstick_point;
#define YARDSTICK_PERFECT 1u
#define YARDSTICK_VALUE 2u
#define YARDSTICK_HISTORY 256 /* points kept; every other older one dropped when full */
typedef struct yardstick yardstick;
/* With perfect_positions > 0 or value_positions set: reads the positions
 * (perfect_file, else the book's first openings; the labelled file), opens
 * the tables of tb_dir for the referee, and starts the measuring thread at a
 * lower priority (else nothing). 0, or KZ_EINVAL with one line logged (a file
 * that does not read, perfect play asked of another game than Khreibaga,
 * tables that cannot be used). */
int yardstick_start(coord *c);
/* Main loop: hands the best to the thread (a copy of its blob) when it is
 * new and the last hand-over is yardstick_minutes old; loads and saves the
 * history. */
void yardstick_tick(coord *c);
/* The figures (false when both measures are off). Any thread. */
bool yardstick_get(coord *c, yardstick_figures *out);
/* The measured versions, oldest first, into out (YARDSTICK_HISTORY): how
 * many. Kept in the store (meta "yardstick_history": magic "YSH1", the
 * count and a point's bytes, then the points; a longer point of a later
 * form is read by its known prefix), so the plots survive restarts. Any
 * thread. */
int yardstick_history(coord *c, yardstick_point *out);
/* Stops the thread (a measurement is cut short between positions) and frees it all. */
void yardstick_stop(coord *c);

/* judge.c */
/* The judge's error rate of the newest judged best, as /status shows it.
 * Two kinds (setting judge): gnubg at a level (backgammon): millipoints of
 * cubeless equity lost per decision; perfect play (Khreibaga: the referee,
 * play/referee.h, with tb_dir's tables): value-losing turns a game. */
typedef struct judge_figures {
    char level[32];       /* the judge: a gnubg level, or "perfect" */
    bool perfect;         /* perfect play judges (Khreibaga), else gnubg */
    int tables;           /* perfect: the pieces tb_dir's tables reach, 0 none */
    long nodes;           /* perfect: the referee's budget a position (perfect_nodes) */
    int games_per_best;   /* rating games judged per best at most (judge_games) */
    uint32_t version;     /* the best judged last, 0 none yet */
    int games;            /* of its games, judged */
    long decisions;       /* gnubg: its whole moves at a roll with a choice in them;
                           * perfect: its whole turns the referee settled (kept or lost) */
    double rate;          /* gnubg: millipoints of equity lost per decision;
                           * perfect: value-losing turns a game */
    double lo, hi;        /* its 95% interval over the games (match_ratio) */
    long losing;          /* perfect: its value-losing turns */
    long unknown;         /* perfect: its turns the budget left open (never guessed); -1
                           * not known (read back from the history after a restart) */
    int64_t done_ms;      /* wall clock of its last judged game */
    int waiting;          /* games queued */
    uint64_t dropped;     /* games not judged: the queue was full */
    char error[160];      /* why the last game was not judged, "" none */
} judge_figures;
/* One judged best in the history (the dashboard's plot along versions). */
typedef struct judge_point {
    uint32_t version, games, decisions;
    double rate, lo, hi;
    int64_t done_ms;
} judge_point;
#define JUDGE_HISTORY 256 /* points kept; every other older one dropped when full */
typedef struct judge judge;
/* Whether `setting` (of judge: "", auto, perfect, or a gnubg level) can judge
 * game g (NULL: the level alone is checked): perfect play is known for
 * Khreibaga only, gnubg judges backgammon only. 0, or KZ_EINVAL with one
 * line in err ("judge: ..."). The coordinator's start refuses bad settings
 * with it (exit 2), and judge_start checks what auto chose the same way. */
int judge_check(const char *setting, const game_def *g, char *err, size_t errlen);
/* With eval_share > 0, judge_games > 0 and a judge for the game (judge
 * perfect or auto for Khreibaga: the referee, with tb_dir's tables; a gnubg
 * level, or auto, for backgammon with a gnubg anchor): starts the judging
 * thread (and gnubg), else nothing. 0, or KZ_EINVAL (logged: a judge of
 * another game, an unknown level, no gnubg, tables that cannot be read). */
int judge_start(coord *c);
/* Main thread (ratings_apply): a counted rating game in which `version`
 * played player id `side`; a copy of the record is queued for judging when
 * the version has fewer than judge_games games posted and the queue has room.
 * After a restart, the games of the versions in the history read back (the
 * newest and older) are not judged: their points keep the games judged
 * before the stop (the queue and the running sums live in memory). */
void judge_post(coord *c, uint32_t version, int side, const uint8_t *rec, size_t len);
/* Main loop: reads the history from the store once, writes it after new results. */
void judge_tick(coord *c);
/* The figures (false when no judge runs). Any thread. */
bool judge_get(coord *c, judge_figures *out);
/* The judged versions, oldest first, into out (JUDGE_HISTORY): how many.
 * Kept in the store (meta "judge_history"). Any thread. */
int judge_history(coord *c, judge_point *out);
/* Stops the thread (the queue is dropped) and frees it all. */
void judge_stop(coord *c);

/* forge.c */
/* A game held back for its check: the message and where its answer goes. */
typedef struct forge_held {
    uint8_t route[256];       /* ROUTER identity of the sender (the latest resend's) */
    size_t route_len;         /* bytes in route */
    uint64_t request_id;      /* to echo */
    char client[64];          /* the client id it was filed under */
    uint8_t game_id[16];      /* the record's id */
    wire_msg msg;             /* the decoded submit (owns the record bytes) */
    char why[200];            /* forge_take's 2: why the game is refused */
} forge_held;
/* The check's counters since start (/status, /metrics). */
typedef struct forge_figures {
    uint64_t sampled;         /* games with a state picked */
    uint64_t checked;         /* of these, searched again and matching */
    uint64_t forged;          /* searched again and differing: refused */
    uint64_t unchecked;       /* could not be checked (recheck.h): stored, counted */
    uint64_t skipped;         /* stored unchecked: forge_queue games were held already */
    uint64_t held;            /* games held now */
    uint64_t resends;         /* resends of held games (answered once the check ends) */
    uint64_t states;          /* searched states compared */
    uint64_t searches;        /* searches run */
    double seconds;           /* the checks' wall time */
} forge_figures;
typedef struct forge forge;
/* With forge_check_states > 0: starts the checking thread. 0 or KZ_ENOMEM. */
int forge_start(coord *c);
/* Stops the thread and frees everything; held games are dropped unanswered
 * (their workers resend them). */
void forge_stop(coord *c);
/* A valid self-play or arena game (v from validate_record, its record
 * decoded): 1 when it was sampled and is now held (h->msg is taken and
 * zeroed), 2 when it was sampled, cannot be checked and forge_refuse_unchecked
 * says to refuse it (the reason in h->why), else 0 (go on and store it).
 * Counts the unchecked and the skipped on w. Main thread. */
int forge_take(coord *c, forge_held *h, const validate_result *v, worker *w);
/* A resend of a held game: notes its route and request id and returns true
 * (drop the message), else false. */
bool forge_resend(coord *c, const uint8_t *game_id, const uint8_t *route, size_t route_len,
                  uint64_t request_id);
/* A checked game, if one is ready: true with *out (owning its message),
 * *verdict (enum recheck_verdict) and a detail line. Main loop, every turn. */
bool forge_next(coord *c, forge_held *out, int *verdict, char *detail, size_t detail_len);
/* The counters (false when the check is off). */
bool forge_get(const coord *c, forge_figures *out);
/* A proven forger: barred from its first forged game on (meta "barred"). */
typedef struct barred_client {
    char id[64];                 /* its client id (the key's name with curve) */
    int64_t since_ms;            /* wall clock of the proof */
    uint64_t removed_games;      /* its games whose positions left the window then */
    uint64_t removed_positions;  /* those positions */
    char evidence[160];          /* the check's finding on the forged game */
} barred_client;
/* A stored game, for taking a forger's games out of the window. */
typedef struct recent_game {
    uint64_t client;             /* hash of its client's id (0: none) */
    uint64_t first_pos;          /* its first position's sequence */
    uint32_t n_pos;              /* positions */
} recent_game;
/* Loads the proven forgers from the store, minus forge_readmit's (logged). */
int forge_load_barred(coord *c);
/* The proven forger with this id, or NULL. */
const barred_client *forge_barred_client(const coord *c, const char *id);
/* Bars client w after its first proven forgery (evidence: the check's
 * detail): stored, logged, and its games still in the window withdrawn. */
void forge_bar(coord *c, worker *w, const char *evidence);
/* Remembers a stored game of client id (NULL: none) and its positions. */
void forge_note_game(coord *c, const char *id, uint64_t first_pos, uint32_t n_pos);
/* Whether client w has reached forge_arena_threshold forged games. */
bool forge_barred(const coord *c, const worker *w);

#endif
