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
#include "nn/model.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "common/util.h"
#include "net/wire.h"

#define O(f) offsetof(coord_config, f)
static const config_option s_options[] = {
    {"data_dir", CONFIG_STRING, "./var/coordinator", 0, 0, O(data_dir),
     "directory of the LMDB store (created if absent)"},
    {"bind", CONFIG_STRING, "tcp://127.0.0.1:5555", 0, 0, O(bind),
     "ROUTER endpoint for requests (tcp://0.0.0.0:5555 to accept other machines)"},
    {"pub_bind", CONFIG_STRING, "tcp://127.0.0.1:5556", 0, 0, O(pub_bind),
     "PUB endpoint for new-best announcements"},
    {"http_bind", CONFIG_STRING, "127.0.0.1", 0, 0, O(http_bind),
     "IPv4 address of the status endpoint"},
    {"http_port", CONFIG_INT, "8080", 0, 65535, O(http_port), "status port (0 = no HTTP)"},
    {"game", CONFIG_STRING, GAME_DEFAULT_NAME, 0, 0, O(game),
     "the game the cluster plays (its store holds that game's alone; workers and trainer of "
     "another game are refused)"},
    {"initial_model", CONFIG_STRING, "", 0, 0, O(initial_model),
     "model file registered as version 1 of an empty store (\"\" = random init)"},
    {"heartbeat_ms", CONFIG_INT, "1000", 10, 600000, O(heartbeat_ms),
     "heartbeat period asked of clients"},
    {"expiry_ms", CONFIG_INT, "10000", 50, 3600000, O(expiry_ms),
     "silence after which a client is gone and its arena games are reassigned"},
    {"max_msg_bytes", CONFIG_INT, "67108864", 65536, 2147483647, O(max_msg_bytes),
     "largest inbound message (ZMQ_MAXMSGSIZE); must hold a model blob"},
    {"max_record_bytes", CONFIG_INT, "1048576", 1024, 67108864, O(max_record_bytes),
     "largest GameRecord accepted"},
    {"max_record_moves", CONFIG_INT, "4096", 1, 1048576, O(max_record_moves),
     "most moves in a GameRecord"},
    {"window", CONFIG_INT, "500000", 1, 1000000000000, O(window),
     "training positions sampled from: the latest N"},
    {"prune_per_txn", CONFIG_INT, "20000", 1, 100000000, O(prune_per_txn),
     "most old positions deleted per transaction"},
    {"map_mb", CONFIG_INT, "256", 1, 1048576, O(map_mb),
     "initial LMDB map size in MiB (doubled whenever full)"},
    {"sync", CONFIG_BOOL, "true", 0, 0, O(sync),
     "fsync every commit (false: faster, an OS crash may lose acknowledged games)"},
    {"ingest_batch", CONFIG_INT, "1024", 1, 65536, O(ingest_batch),
     "most games stored per transaction (group commit)"},
    {"max_batch", CONFIG_INT, "4096", 1, 1048576, O(max_batch),
     "most samples in one training batch"},
    {"aux_targets", CONFIG_BOOL, "false", 0, 0, O(aux_targets),
     "store each training position's auxiliary targets (the opponent's next policy, the "
     "final material) for a network with auxiliary heads (kz model init "
     "--opp_policy_filters/--material_filters); positions stored without them train those "
     "heads with weight 0"},
    {"selfplay_games", CONFIG_INT, "64", 1, 100000, O(selfplay_games),
     "most games per self-play job before the worker asks again"},
    {"selfplay_openings", CONFIG_DOUBLE, "0", 0, 1, O(selfplay_openings),
     "share of self-play games started from a random opening of the book (book_openings; "
     "against the colour bias), the others from the initial position; 0 = none"},
    {"simulations", CONFIG_INT, "0", 0, 1000000, O(simulations),
     "MCTS simulations per move sent in jobs (0 = each worker's own setting)"},
    {"sims_start", CONFIG_INT, "0", 0, 1000000, O(sims_start),
     "simulation schedule (docs/learning.md): self-play jobs start at this many simulations "
     "and move linearly to `simulations` over sims_ramp_games stored games, then stay (0 = "
     "off: always `simulations`; needs simulations > 0)"},
    {"sims_ramp_games", CONFIG_INT, "100000", 1, 1000000000, O(sims_ramp_games),
     "simulation schedule: stored games over which sims_start becomes `simulations`"},
    {"gate", CONFIG_STRING, "none", 0, 0, O(gate),
     "promotion rule: spec (arena_games games, score > arena_threshold: the specification's),"
     " sprt (pentanomial SPRT on pairs of book openings, arena_elo0/1, alpha, beta, at most"
     " arena_games games), none (every candidate becomes the best; the rating guard reverts"
     " a best rated below the previous best's interval)"},
    {"arena_games", CONFIG_INT, "50", 1, 100000, O(arena_games),
     "gate: games per arena (spec), the most games of one (sprt)"},
    {"arena_threshold", CONFIG_DOUBLE, "0.55", 0, 1, O(arena_threshold),
     "gate: promote when the candidate scores more than this (draws half)"},
    {"arena_sprt", CONFIG_BOOL, "false", 0, 0, O(arena_sprt),
     "gate: sequential probability ratio test instead of a fixed number of games"},
    {"arena_elo0", CONFIG_DOUBLE, "0", -1000, 1000, O(arena_elo0), "gate: SPRT H0 Elo"},
    {"arena_elo1", CONFIG_DOUBLE, "35", -1000, 1000, O(arena_elo1), "gate: SPRT H1 Elo"},
    {"arena_alpha", CONFIG_DOUBLE, "0.05", 0.0001, 0.5, O(arena_alpha), "gate: SPRT alpha"},
    {"arena_beta", CONFIG_DOUBLE, "0.05", 0.0001, 0.5, O(arena_beta), "gate: SPRT beta"},
    {"arena_per_worker", CONFIG_INT, "8", 1, 1024, O(arena_per_worker),
     "most arena games handed to one worker at a time"},
    {"anchors", CONFIG_STRING,
     "auto", 0, 0, O(anchors),
     "ratings: the fixed baseline players, weakest first (player specs; random = 0 Elo); "
     "auto = the players of the game's fixed scale (play/scales.txt: Khreibaga's random,greedy,"
     "alphabeta:2,alphabeta:4,uct:1000,alphabeta:6,uct:8000), or random,greedy,uct:100 for a "
     "game without one (anchors off the scale are calibrated by the workers' games)"},
    {"eval_share", CONFIG_DOUBLE, "0.1", 0, 1, O(eval_share),
     "ratings: most share of the workers' game time spent on rating games (0 = no ratings)"},
    {"eval_pairs", CONFIG_INT, "10", 0, 10000, O(eval_pairs),
     "ratings: pairs (one book opening with both colours) a best plays against each of the two"
     " anchors nearest its strength and against the previous rated best"},
    {"calibration_pairs", CONFIG_INT, "10", 0, 10000, O(calibration_pairs),
     "ratings: pairs between neighbouring anchors"},
    {"eval_simulations", CONFIG_INT, "0", 0, 1000000, O(eval_simulations),
     "ratings: MCTS simulations per move of the networks in rating games (0 = the game's: "
     "Khreibaga 200)"},
    {"eval_timeout_s", CONFIG_DOUBLE, "600", 1, 86400, O(eval_timeout_s),
     "ratings: a rating game not returned within this is handed to another worker"},
    {"rate_candidates", CONFIG_BOOL, "false", 0, 0, O(rate_candidates),
     "ratings: every new model plays a gauntlet (the newest when several wait), not only "
     "each new best"},
    {"keep_models_last", CONFIG_INT, "50", 0, 100000000, O(keep_models_last),
     "model retention: the newest N models are kept (0 = keep every model); older ones only "
     "if they are the initial one, a best an arena promoted, rated, or every "
     "keep_models_every-th"},
    {"keep_models_every", CONFIG_INT, "100", 0, 100000000, O(keep_models_every),
     "model retention: every Nth version is kept (0 = none)"},
    {"disk_warn_mb", CONFIG_INT, "2048", 0, 100000000, O(disk_warn_mb),
     "warn (log, /status, /metrics) when the data directory's disk has less free space (MB)"},
    {"book_openings", CONFIG_INT, "500", 1, 100000, O(book_openings),
     "openings in the book of arena and rating games (each played with both colours)"},
    {"book_seed", CONFIG_INT, "1", 1, 9007199254740991, O(book_seed),
     "seed of the opening book (make learn rates from its own book, seed 20261124, held out)"},
    {"initial_blocks", CONFIG_INT, "6", 0, 128, O(initial_blocks),
     "residual blocks of the random-init model 1 of an empty store"},
    {"initial_filters", CONFIG_INT, "64", 1, 1024, O(initial_filters),
     "filters of the random-init model 1 of an empty store"},
    {"wait_ms", CONFIG_INT, "1000", 10, 600000, O(wait_ms), "retry_ms of a wait job"},
    {"status_ms", CONFIG_INT, "250", 10, 60000, O(status_ms),
     "refresh period of /status and /metrics"},
    {"log_s", CONFIG_INT, "30", 1, 86400, O(log_s), "progress log period in seconds"},
    {"seed", CONFIG_INT, "0", 0, 9007199254740991, O(seed),
     "sampling seed (0 = from the clock)"},
    {"max_clients", CONFIG_INT, "4096", 16, 1000000, O(max_clients),
     "client ids tracked at most (then the longest-gone are forgotten)"},
    {"timeline_s", CONFIG_DOUBLE, "60", 0.1, 86400, O(timeline_s),
     "the run's history (GET /timeline, the dashboard's plots): seconds per point"},
    {"timeline_points", CONFIG_INT, "2000", 16, 7000, O(timeline_points),
     "the run's history: points kept at most (then neighbours are merged, the newest hour "
     "never, so they stay spread over the whole run)"},
    {"curve", CONFIG_BOOL, "true", 0, 0, O(curve),
     "CurveZMQ on both endpoints: only the keys of allow_keys may connect, each with its role "
     "(false: anyone who reaches the ports may submit games and publish candidates; a warning "
     "at start)"},
    {"curve_secret_key", CONFIG_STRING, "", 0, 0, O(curve_secret_key),
     "with curve: the coordinator's secret key file (kz keygen coordinator; clients name its "
     ".pub as curve_server_key)"},
    {"allow_keys", CONFIG_STRING, "", 0, 0, O(allow_keys),
     "with curve: the client keys admitted, a line each: NAME ROLE PUBLICKEY (ROLE worker, "
     "trainer or observer; the client's id is NAME); read again on SIGHUP"},
    {"status_token_file", CONFIG_STRING, "", 0, 0, O(status_token_file),
     "HTTP: a file holding a token that every request but /healthz must present "
     "(Authorization: Bearer TOKEN, or basic auth with TOKEN as the password); \"\" = none"},
    {"http_connections", CONFIG_INT, "512", 8, 65536, O(http_connections),
     "HTTP: connections at once at most (a thread each); an eighth is kept free for new ones "
     "(a probe, the operator) by closing the idle connection that has waited longest"},
    {"http_per_ip", CONFIG_INT, "32", 1, 65536, O(http_per_ip),
     "HTTP: connections at once from one address at most (so that idle connections from one "
     "place cannot take every slot: /healthz stays reachable from others)"},
    {"http_timeout_s", CONFIG_INT, "10", 1, 3600, O(http_timeout_s),
     "HTTP: a connection silent this long, or still sending its request header after this "
     "long, is closed"},
    {"tb_dir", CONFIG_STRING, "", 0, 0, O(tb_dir),
     "endgame tables (kz tb build): the best's endgame accuracy on their test set, measured "
     "in the background once per new best (/status, the dashboard); \"\" = none"},
    {"tb_positions", CONFIG_INT, "300", 1, 100000, O(tb_positions),
     "tb_dir: test positions of the endgame accuracy (kz tb accuracy --positions)"},
    {"play_saves_per_hour", CONFIG_INT, "120", 1, 1000000, O(play_saves_per_hour),
     "games saved from /play (POST /api/save) an hour at most, in bursts of up to 20; more "
     "are refused (429)"},
    {"play_records_max_mb", CONFIG_DOUBLE, "64", 0.0001, 1e6, O(play_records_max_mb),
     "no game is saved from /play once DATA_DIR/play.kzr has this size (507)"},
    {"check_store", CONFIG_BOOL, "true", 0, 0, O(check_store),
     "check every page of the store before opening it: a damaged store is refused with what "
     "is wrong (kz store check, kz store salvage) instead of crashing LMDB (about 1 s per "
     "GB). false risks it: a damaged page can crash the coordinator (in LMDB, at the start or "
     "later), a damaged entry is refused only where it is read; a store whose tree was lost "
     "is refused at the start all the same (it reads as empty with many pages in use)"},
    {"forge_check_states", CONFIG_INT, "200", 0, 1000000000, O(forge_check_states),
     "re-search 1 in this many searched states of self-play and arena games with the named "
     "models, seed and settings, off the ingest path; a game that differs is refused as "
     "forged (docs/security.md); 0 = off"},
    {"forge_queue", CONFIG_INT, "16", 1, 256, O(forge_queue),
     "games held back for their check at most (more sampled games are stored unchecked, "
     "counted as skipped)"},
    {"forge_arena_threshold", CONFIG_INT, "1", 0, 1000000000, O(forge_arena_threshold),
     "forged games after which a client gets no more arena or rating slots (0 = never)"},
    {"forge_refuse_unchecked", CONFIG_BOOL, "false", 0, 0, O(forge_refuse_unchecked),
     "refuse (as forged) a sampled self-play or arena game that cannot be checked: no "
     "evaluator in its settings, the OpenBLAS arithmetic, endgame tables (docs/security.md); "
     "for clusters whose workers all run the coordinator's build on AVX-512"},
    {"forge_readmit", CONFIG_STRING, "", 0, 0, O(forge_readmit),
     "clients (ids, or key names with curve; comma-separated) to take off the list of proven "
     "forgers kept in the store: a client's first forged game bars it and its key for good "
     "(docs/security.md)"},
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
    const game_def *g = game_find(cfg->game);
    if (!g) {
        char names[256];
        game_names(names, sizeof names);
        snprintf(err, errlen, "game: unknown game '%.60s' (the games: %s)", cfg->game, names);
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

int main(int argc, char **argv)
{
    log_init("kz-coordinator");
    if (util_version_asked(argc, argv, "kz-coordinator"))
        return 0;
    coord_config cfg;
    char err[512];
    int rc = config_parse(s_options, N_OPTIONS, &cfg, argc, argv, NULL, 0, NULL, err, sizeof err);
    if (rc == CONFIG_HELP) {
        printf("usage: kz-coordinator [--config=FILE] [--key=value ...]\n\n"
               "The Khreibaga Zero coordinator: hands out self-play and arena jobs, validates\n"
               "and stores game records in LMDB, serves training batches, promotes candidates\n"
               "that pass the arena gate, and reports on http://HOST:PORT/status, /metrics,\n"
               "/healthz. SIGTERM or SIGINT stop it cleanly; SIGHUP reads allow_keys again.\n"
               "See docs/protocol.md and docs/security.md.\n\n");
        config_help(s_options, N_OPTIONS, stdout);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "kz-coordinator: %s\n", err);
        return 2;
    }
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
