/* kz-coordinator: the cluster's coordinator (see coordinator.h and
 * docs/protocol.md). Reads its settings, opens the store, serves until
 * SIGTERM or SIGINT, then stops cleanly (pending games committed first). */
#include <arpa/inet.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "net/curve.h"
#include "server/coordinator.h"
#include "server/features.h"
#include "play/match.h"
#include "play/yardstick.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "common/util.h"
#include "net/wire.h"

#define O(f) offsetof(coord_config, f)
#define CONFIG_STRUCT coord_config
static const config_option s_options[] = {
    CONFIG_ROW_STRING(data_dir, "./var/coordinator",
                      "directory of the LMDB store (created if absent)"),
    CONFIG_ROW_STRING(bind, "tcp://127.0.0.1:5555",
                      "ROUTER endpoint for requests (tcp://0.0.0.0:5555 to accept other machines)"),
    CONFIG_ROW_STRING(pub_bind, "tcp://127.0.0.1:5556", "PUB endpoint for new-best announcements"),
    CONFIG_ROW_STRING(http_bind, "127.0.0.1", "IPv4 address of the status endpoint"),
    CONFIG_ROW_INT(http_port, "8080", 0, 65535, "status port (0 = no HTTP)"),
    CONFIG_ROW_STRING(game, GAME_DEFAULT_NAME,
                      "the game the cluster plays (its store holds that game's alone; workers and "
                      "trainer of another game are refused)"),
    CONFIG_ROW_STRING(initial_model, "",
                      "model file registered as version 1 of an empty store (\"\" = random init)"),
    CONFIG_ROW_INT(heartbeat_ms, "1000", 10, 600000, "heartbeat period asked of clients"),
    CONFIG_ROW_INT(expiry_ms, "10000", 50, 3600000,
                   "silence after which a client is gone and its arena games are reassigned"),
    CONFIG_ROW_INT(max_msg_bytes, "67108864", 65536, 2147483647,
                   "largest inbound message (ZMQ_MAXMSGSIZE); must hold a model blob"),
    CONFIG_ROW_INT(max_record_bytes, "1048576", 1024, 67108864, "largest GameRecord accepted"),
    CONFIG_ROW_INT(max_record_moves, "4096", 1, 1048576, "most moves in a GameRecord"),
    CONFIG_ROW_INT(window, "500000", 1, 1000000000000,
                   "training positions sampled from: the latest N"),
    CONFIG_ROW_INT(prune_per_txn, "20000", 1, 100000000,
                   "most old positions deleted per transaction"),
    CONFIG_ROW_INT(map_mb, "256", 1, 1048576,
                   "initial LMDB map size in MiB (doubled whenever full)"),
    CONFIG_ROW_BOOL(sync, "true",
                    "fsync every commit (false: faster, an OS crash may lose acknowledged games)"),
    CONFIG_ROW_INT(ingest_batch, "1024", 1, 65536,
                   "most games stored per transaction (group commit)"),
    CONFIG_ROW_INT(max_batch, "4096", 1, 1048576, "most samples in one training batch"),
    CONFIG_ROW_BOOL(aux_targets, "false",
                    "store each training position's auxiliary targets (the opponent's next "
                    "policy, the final material) for a network with auxiliary heads (kz model "
                    "init --opp_policy_filters/--material_filters); positions stored without them "
                    "train those heads with weight 0"),
    CONFIG_ROW_INT(selfplay_games, "64", 1, 100000,
                   "most games per self-play job before the worker asks again"),
    CONFIG_ROW_DOUBLE(selfplay_openings, "0", 0, 1,
                      "share of self-play games started from a random opening of the book "
                      "(book_openings; against the colour bias), the others from the initial "
                      "position; 0 = none"),
    CONFIG_ROW_INT(simulations, "0", 0, 1000000,
                   "MCTS simulations per move sent in jobs (0 = each worker's own setting)"),
    CONFIG_ROW_INT(sims_start, "0", 0, 1000000,
                   "simulation schedule (docs/learning.md): self-play jobs start at this many "
                   "simulations and move linearly to `simulations` over sims_ramp_games stored "
                   "games, then stay (0 = off: always `simulations`; needs simulations > 0)"),
    CONFIG_ROW_INT(sims_ramp_games, "100000", 1, 1000000000,
                   "simulation schedule: stored games over which sims_start becomes `simulations`"),
    CONFIG_ROW_STRING(gate, "none",
                      "promotion rule: spec (arena_games games, score > arena_threshold: the "
                      "specification's), sprt (pentanomial SPRT on pairs of book openings, "
                      "arena_elo0/1, alpha, beta, at most arena_games games), none (every "
                      "candidate becomes the best; the rating guard reverts a best rated below "
                      "the previous best's interval)"),
    CONFIG_ROW_INT(arena_games, "50", 1, 100000,
                   "gate: games per arena (spec), the most games of one (sprt)"),
    CONFIG_ROW_DOUBLE(arena_threshold, "0.55", 0, 1,
                      "gate: promote when the candidate scores more than this (draws half)"),
    CONFIG_ROW_BOOL(arena_sprt, "false",
                    "gate: sequential probability ratio test instead of a fixed number of games"),
    CONFIG_ROW_DOUBLE(arena_elo0, "0", -1000, 1000, "gate: SPRT H0 Elo"),
    CONFIG_ROW_DOUBLE(arena_elo1, "35", -1000, 1000, "gate: SPRT H1 Elo"),
    CONFIG_ROW_DOUBLE(arena_alpha, "0.05", 0.0001, 0.5, "gate: SPRT alpha"),
    CONFIG_ROW_DOUBLE(arena_beta, "0.05", 0.0001, 0.5, "gate: SPRT beta"),
    CONFIG_ROW_INT(arena_per_worker, "8", 1, 1024,
                   "most arena games handed to one worker at a time"),
    {"anchors", CONFIG_STRING,
     "auto", 0, 0, O(anchors),
     "ratings: the fixed baseline players, weakest first (player specs; random = 0 Elo); "
     "auto = the players of the game's fixed scale (play/scales.txt: Khreibaga's random,greedy,"
     "alphabeta:2,alphabeta:4,uct:1000,alphabeta:6,uct:8000), for backgammon with gnubg "
     "installed gnubg:beginner,gnubg:intermediate,gnubg:expert (gnubg:beginner = 0), else "
     "random,greedy,uct:100 for a game without a scale (anchors off the scale are calibrated "
     "by the workers' games)"},
    CONFIG_ROW_DOUBLE(eval_share, "0.1", 0, 1,
                      "ratings: most share of the workers' game time spent on rating games (0 = "
                      "no ratings)"),
    CONFIG_ROW_INT(eval_pairs, "10", 0, 10000,
                   "ratings: pairs (one book opening with both colours) a best plays against each "
                   "of the two anchors nearest its strength and against the previous rated best"),
    CONFIG_ROW_INT(calibration_pairs, "10", 0, 10000,
                   "ratings: pairs between neighbouring anchors"),
    CONFIG_ROW_INT(eval_simulations, "0", 0, 1000000,
                   "ratings: MCTS simulations per move of the networks in rating games (0 = the "
                   "game's: Khreibaga 200)"),
    CONFIG_ROW_DOUBLE(eval_timeout_s, "600", 1, 86400,
                      "ratings: a rating game not returned within this is handed to another "
                      "worker"),
    CONFIG_ROW_BOOL(rate_candidates, "false",
                    "ratings: every new model plays a gauntlet (the newest when several wait), "
                    "not only each new best"),
    CONFIG_ROW_INT(keep_models_last, "50", 0, 100000000,
                   "model retention: the newest N models are kept (0 = keep every model); older "
                   "ones only if they are the initial one, a best an arena promoted, rated, or "
                   "every keep_models_every-th"),
    CONFIG_ROW_INT(keep_models_every, "100", 0, 100000000,
                   "model retention: every Nth version is kept (0 = none)"),
    CONFIG_ROW_INT(disk_warn_mb, "2048", 0, 100000000,
                   "warn (log, /status, /metrics) when the data directory's disk has less free "
                   "space (MB)"),
    CONFIG_ROW_INT(book_openings, "500", 1, 100000,
                   "openings in the book of arena and rating games (each played with both "
                   "colours)"),
    CONFIG_ROW_INT(book_seed, "1", 1, 9007199254740991,
                   "seed of the opening book (make learn rates from its own book, seed 20261124, "
                   "held out)"),
    CONFIG_ROW_INT(initial_blocks, "6", 0, 128,
                   "residual blocks of the random-init model 1 of an empty store"),
    CONFIG_ROW_INT(initial_filters, "64", 1, 1024,
                   "filters of the random-init model 1 of an empty store"),
    CONFIG_ROW_INT(wait_ms, "1000", 10, 600000, "retry_ms of a wait job"),
    CONFIG_ROW_INT(status_ms, "250", 10, 60000, "refresh period of /status and /metrics"),
    CONFIG_ROW_INT(log_s, "30", 1, 86400, "progress log period in seconds"),
    CONFIG_ROW_INT(seed, "0", 0, 9007199254740991, "sampling seed (0 = from the clock)"),
    CONFIG_ROW_INT(max_clients, "4096", 16, 1000000,
                   "client ids tracked at most (then the longest-gone are forgotten)"),
    CONFIG_ROW_DOUBLE(timeline_s, "60", 0.1, 86400,
                      "the run's history (GET /timeline, the dashboard's plots): seconds per "
                      "point"),
    CONFIG_ROW_INT(timeline_points, "2000", 16, 7000,
                   "the run's history: points kept at most (then neighbours are merged, the "
                   "newest hour never, so they stay spread over the whole run)"),
    CONFIG_ROW_BOOL(curve, "true",
                    "CurveZMQ on both endpoints: only the keys of allow_keys may connect, each "
                    "with its role (false: anyone who reaches the ports may submit games and "
                    "publish candidates; a warning at start)"),
    CONFIG_ROW_STRING(curve_secret_key, "",
                      "with curve: the coordinator's secret key file (kz keygen coordinator; "
                      "clients name its .pub as curve_server_key)"),
    CONFIG_ROW_STRING(allow_keys, "",
                      "with curve: the client keys admitted, a line each: NAME ROLE PUBLICKEY "
                      "(ROLE worker, trainer or observer; the client's id is NAME); read again on "
                      "SIGHUP"),
    CONFIG_ROW_STRING(status_token_file, "",
                      "HTTP: a file holding a token that every request but /healthz must present "
                      "(Authorization: Bearer TOKEN, or basic auth with TOKEN as the password); "
                      "\"\" = none"),
    CONFIG_ROW_INT(http_connections, "512", 8, 65536,
                   "HTTP: connections at once at most (a thread each); an eighth is kept free for "
                   "new ones (a probe, the operator) by closing the idle connection that has "
                   "waited longest"),
    CONFIG_ROW_INT(http_per_ip, "32", 1, 65536,
                   "HTTP: connections at once from one address at most (so that idle connections "
                   "from one place cannot take every slot: /healthz stays reachable from others)"),
    CONFIG_ROW_INT(http_timeout_s, "10", 1, 3600,
                   "HTTP: a connection silent this long, or still sending its request header "
                   "after this long, is closed"),
    CONFIG_ROW_STRING(tb_dir, "",
                      "endgame tables (kz tb build): the best's endgame accuracy on their test "
                      "set, measured in the background once per new best (/status, the "
                      "dashboard), and the play page's engine answers the positions they cover "
                      "(/api/analyse \"tables\": true); \"\" = none"),
    CONFIG_ROW_INT(tb_positions, "300", 1, 100000,
                   "tb_dir: test positions of the endgame accuracy (kz tb accuracy --positions)"),
    CONFIG_ROW_INT(perfect_positions, "0", 0, YARD_MAX_BOOK,
                   "Khreibaga: the best's perfect-play accuracy (kz solve accuracy: the share of "
                   "its raw policy's and its 200-simulation search's turns that keep the proven "
                   "value) on this many positions (the book's first openings, or perfect_file's), "
                   "with the tables of tb_dir when set; measured in the background (/status, the "
                   "dashboard); 0 = off"),
    CONFIG_ROW_STRING(perfect_file, "",
                      "perfect_positions: a file of positions (a book: one R20 position a line, "
                      "kz yardstick book) instead of the book's openings; \"\" = the book"),
    CONFIG_ROW_INT(perfect_nodes, "200000", 1000, 1000000000,
                   "perfect_positions: the proof search's budget a position (kz solve accuracy "
                   "--nodes): what it leaves unsettled is not counted"),
    CONFIG_ROW_INT(perfect_tt_mb, "256", 1, 65536,
                   "perfect_positions: the proof search's transposition table (MB, as kz solve "
                   "--tt_mb; held only while a best is measured)"),
    CONFIG_ROW_STRING(value_positions, "",
                      "labelled positions (kz yardstick positions; tools/bench/books/"
                      "khreibaga-positions.txt): the best's value head's squared error by phase "
                      "(kz yardstick value), measured in the background; \"\" = off"),
    CONFIG_ROW_INT(value_compare, "200", 0, YARD_MAX_BOOK,
                   "value_positions: on how many of them 200 and 1600 simulations are compared "
                   "(the share choosing a different move; 0 = none)"),
    CONFIG_ROW_DOUBLE(yardstick_minutes, "10", 0, 1e6,
                      "perfect_positions, value_positions: a new best is measured at most once "
                      "in this many minutes (the newest best then; 0 = every new best)"),
    CONFIG_ROW_STRING(judge, "auto",
                      "the judge of each rated best's moves in its rating games, in the "
                      "background (/status, the dashboard): perfect (Khreibaga: the referee, "
                      "perfect_nodes a position with tb_dir's tables: value-losing turns a "
                      "game), a gnubg level (backgammon rated against gnubg: equity lost per "
                      "decision), auto (Khreibaga perfect, backgammon expert), \"\" = none"),
    CONFIG_ROW_INT(judge_games, "60", 0, 100000,
                   "judge: rating games of each best judged at most (0 = none)"),
    CONFIG_ROW_INT(play_saves_per_hour, "120", 1, 1000000,
                   "games saved from /play (POST /api/save) an hour at most, in bursts of up to "
                   "20; more are refused (429)"),
    CONFIG_ROW_DOUBLE(play_records_max_mb, "64", 0.0001, 1e6,
                      "no game is saved from /play once DATA_DIR/play.kzr has this size (507)"),
    CONFIG_ROW_BOOL(check_store, "true",
                    "check every page of the store before opening it: a damaged store is refused "
                    "with what is wrong (kz store check, kz store salvage) instead of crashing "
                    "LMDB (about 1 s per GB). false risks it: a damaged page can crash the "
                    "coordinator (in LMDB, at the start or later), a damaged entry is refused "
                    "only where it is read; a store whose tree was lost is refused at the start "
                    "all the same (it reads as empty with many pages in use)"),
    CONFIG_ROW_INT(forge_check_states, "200", 0, 1000000000,
                   "re-search 1 in this many searched states of self-play and arena games with "
                   "the named models, seed and settings, off the ingest path; a game that differs "
                   "is refused as forged (docs/security.md); 0 = off"),
    CONFIG_ROW_INT(forge_queue, "16", 1, 256,
                   "games held back for their check at most (more sampled games are stored "
                   "unchecked, counted as skipped)"),
    CONFIG_ROW_INT(forge_arena_threshold, "1", 0, 1000000000,
                   "forged games after which a client gets no more arena or rating slots (0 = "
                   "never)"),
    CONFIG_ROW_BOOL(forge_refuse_unchecked, "false",
                    "refuse (as forged) a sampled self-play or arena game that cannot be checked: "
                    "no evaluator in its settings, the OpenBLAS arithmetic, endgame tables "
                    "(docs/security.md); for clusters whose workers all run the coordinator's "
                    "build on AVX-512"),
    CONFIG_ROW_STRING(forge_readmit, "",
                      "clients (ids, or key names with curve; comma-separated) to take off the "
                      "list of proven forgers kept in the store: a client's first forged game "
                      "bars it and its key for good (docs/security.md)"),
};
#define N_OPTIONS (sizeof s_options / sizeof s_options[0])

static volatile sig_atomic_t s_stop;
static volatile sig_atomic_t s_reload;

static void s_on_signal(int sig)
{
    if (sig == SIGHUP)
        s_reload = 1;
    else
        s_stop = 1;
}

/* The settings a start would trip over, checked up front: the game module,
 * the endpoints' syntax, the status address, a data_dir that is not a
 * directory, and initial_model (read and validated for the game; the store
 * reads it again only when it is empty). 0 or KZ_EINVAL / the load's error
 * with one line in err. */
static int s_check_settings(const coord_config *cfg, char *err, size_t errlen)
{
    char why[400];
    const game_def *g = game_find_said(cfg->game, 60, why, sizeof why);
    if (!g) {
        snprintf(err, errlen, "game: %s", why);
        return KZ_EINVAL;
    }
    const char *which = NULL;
    if (wire_endpoint_check(cfg->bind, true, why, sizeof why))
        which = "bind";
    else if (wire_endpoint_check(cfg->pub_bind, true, why, sizeof why))
        which = "pub_bind";
    if (which) {
        snprintf(err, errlen, "%s: %s", which, why);
        return KZ_EINVAL;
    }
    struct in_addr addr;
    if (cfg->http_port && inet_pton(AF_INET, cfg->http_bind, &addr) != 1) {
        snprintf(err, errlen, "http_bind: '%.60s' is not an IPv4 address", cfg->http_bind);
        return KZ_EINVAL;
    }
    struct stat sb;
    if (stat(cfg->data_dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "data_dir: '%.200s' is not a directory", cfg->data_dir);
        return KZ_EINVAL;
    }
    if (cfg->initial_model[0]) {
        uint8_t *blob = NULL;
        size_t blen = 0;
        int rc = modelkind_read_file(cfg->initial_model, g, &blob, &blen, NULL, why, sizeof why);
        free(blob);
        if (rc) {
            snprintf(err, errlen, "initial_model: %s", why);
            return rc;
        }
    }
    if (cfg->curve) {
        if (!curve_available()) {
            snprintf(err, errlen, "curve: this libzmq was built without CurveZMQ (curve = false "
                     "runs without authentication)");
            return KZ_EINVAL;
        }
        if (!cfg->curve_secret_key[0] || !cfg->allow_keys[0]) {
            snprintf(err, errlen, "%s: not set: with curve (the default) the coordinator needs "
                     "its key pair (kz keygen coordinator) and the list of client keys "
                     "(allow_keys: NAME ROLE PUBLICKEY a line); curve = false runs without "
                     "authentication (docs/security.md)",
                     cfg->curve_secret_key[0] ? "allow_keys" : "curve_secret_key");
            return KZ_EINVAL;
        }
        curve_keypair kp;
        int rc = curve_read_secret(cfg->curve_secret_key, &kp, why, sizeof why);
        memset(&kp, 0, sizeof kp);
        if (rc) {
            snprintf(err, errlen, "curve_secret_key: %s", why);
            return rc;
        }
        curve_allow *a = NULL;
        rc = curve_allow_load(cfg->allow_keys, &a, why, sizeof why);
        curve_allow_destroy(&a);
        if (rc) {
            snprintf(err, errlen, "allow_keys: %s", why);
            return rc;
        }
    }
    if (cfg->status_token_file[0]) {
        char token[STATUS_TOKEN_MAX];
        int rc = status_read_token(cfg->status_token_file, token, sizeof token, why, sizeof why);
        memset(token, 0, sizeof token);
        if (rc) {
            snprintf(err, errlen, "status_token_file: %s", why);
            return rc;
        }
    }
    return 0;
}

static const char s_usage[] =
    "usage: kz-coordinator [--config=FILE] [--key=value ...]\n\n"
    "The Khreibaga Zero coordinator: hands out self-play and arena jobs, validates\n"
    "and stores game records in LMDB, serves training batches, promotes candidates\n"
    "that pass the arena gate, and reports on http://HOST:PORT/status, /metrics,\n"
    "/healthz. SIGTERM or SIGINT stop it cleanly; SIGHUP reads allow_keys again.\n"
    "See docs/protocol.md and docs/security.md.\n\n";

int main(int argc, char **argv)
{
    log_init("kz-coordinator");
    if (util_version_asked(argc, argv, "kz-coordinator"))
        return 0;
    coord_config cfg;
    int rc = config_start("kz-coordinator", s_usage, s_options, N_OPTIONS, &cfg, argc, argv,
                          NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    char err[512];
    if (cfg.expiry_ms <= cfg.heartbeat_ms) {
        fprintf(stderr, "kz-coordinator: expiry_ms (%ld) must exceed heartbeat_ms (%ld)\n",
                cfg.expiry_ms, cfg.heartbeat_ms);
        return 2;
    }
    if (cfg.max_record_bytes + 1024 > cfg.max_msg_bytes) {
        fprintf(stderr, "kz-coordinator: max_msg_bytes (%ld) must exceed max_record_bytes "
                        "(%ld) by 1 KiB\n", cfg.max_msg_bytes, cfg.max_record_bytes);
        return 2;
    }
    /* Everything that can be checked without starting is checked before the
     * configuration is logged: a bad setting is one line and exit status 2. */
    if (s_check_settings(&cfg, err, sizeof err)) {
        fprintf(stderr, "kz-coordinator: %s\n", err);
        return 2;
    }
    gate_config gate;
    if (coord_gate_config(&cfg, &gate, err, sizeof err)) {
        fprintf(stderr, "kz-coordinator: arena settings: %s\n", err);
        return 2;
    }
    char anchors[COORD_MAX_ANCHORS][COORD_NAME];
    int n_anchors;
    const game_def *gd = game_find(cfg.game);
    if (gd && coord_anchors(&cfg, gd, anchors, &n_anchors, err, sizeof err)) {
        fprintf(stderr, "kz-coordinator: anchors: %s\n", err);
        return 2;
    }
    if (judge_check(cfg.judge, gd, err, sizeof err)) {
        fprintf(stderr, "kz-coordinator: %s\n", err);
        return 2;
    }
    log_info("kz-coordinator %s", util_version());
    config_log(s_options, N_OPTIONS, &cfg);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal; /* no SA_RESTART: zmq_poll returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* reload allow_keys */
    signal(SIGPIPE, SIG_IGN);

    static coord c;
    rc = coord_init(&c, &cfg, &s_stop);
    c.reload = &s_reload;
    if (!rc)
        rc = coord_run(&c);
    coord_fini(&c);
    if (rc)
        log_error("exiting: %s", err_str(rc));
    return rc ? 1 : 0;
}

#undef CONFIG_STRUCT