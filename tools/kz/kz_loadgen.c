/* kz loadgen: imitates many workers submitting valid games to a coordinator,
 * for the ingest benchmark (tools/bench/bench_ingest.c) and for trying a cluster.
 * Each simulated worker is a real client (net/client.h: its own DEALER,
 * heartbeats, acknowledged queue). Games come from a pool made by random
 * legal play (validate_random_record); every submission gets a fresh game id,
 * so each is a new game to the coordinator (unless --repeat asks for some
 * resubmissions, which must come back as duplicates). With --ledger=FILE it
 * appends a line per acknowledged game (its id in hex, "new" or "dup", its
 * store sequence): what the coordinator promised to keep, for the fault suite
 * (tools/faults/faults.c) to hold against the store afterwards. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "common/config.h"
#include "nn/evaluator.h"
#include "games/game.h"
#include "tools/kz/kz.h"
#include "search/mcts.h"
#include "play/recheck.h"
#include "data/record.h"
#include "play/selfplay.h"
#include "common/util.h"
#include "data/validate.h"

typedef struct loadgen_config {
    char endpoint[CONFIG_STR_MAX]; /* coordinator ROUTER */
    long workers;                  /* simulated workers */
    long games;                    /* submissions in all */
    long pool;                     /* distinct games generated */
    long inflight;                 /* unacknowledged games per worker */
    long model;                    /* model_version of the records */
    double repeat;                 /* fraction of submissions reusing an earlier id */
    long seed;                     /* pool seed */
    long timeout_s;                /* give up after this long */
    long timeout_ms;               /* each client's resend timeout (client.h) */
    double rate;                   /* submissions per second at most, 0 no limit */
    char ledger[CONFIG_STR_MAX];   /* file of acknowledged game ids, "" none */
    char game[CONFIG_STR_MAX];     /* game module */
    bool curve;                    /* CurveZMQ (client.h) */
    char curve_server_key[CONFIG_STR_MAX]; /* the coordinator's public key file */
    char curve_secret_key[CONFIG_STR_MAX]; /* the simulated workers' secret key file (one key,
                                              a worker's: ids NAME/loadgen-...) */
    char search_model[CONFIG_STR_MAX]; /* pool games searched with this model file, "" random */
    long search_simulations;           /* their simulations per move */
} loadgen_config;

#define CONFIG_STRUCT loadgen_config
static const config_option s_options[] = {
    CONFIG_ROW_STRING(endpoint, "tcp://127.0.0.1:5555", "coordinator request endpoint"),
    CONFIG_ROW_INT(workers, "32", 1, 4096, "simulated workers (one client each)"),
    CONFIG_ROW_INT(games, "20000", 1, 1000000000, "games to submit in all"),
    CONFIG_ROW_INT(pool, "256", 1, 1000000, "distinct random games to draw from"),
    CONFIG_ROW_INT(inflight, "32", 1, 100000, "unacknowledged games per worker at most"),
    CONFIG_ROW_INT(model, "1", 1, 4294967295, "model_version written in the records"),
    CONFIG_ROW_DOUBLE(repeat, "0", 0, 1,
                      "fraction of submissions that resend an earlier game (expect duplicates)"),
    CONFIG_ROW_INT(seed, "1", 0, 9007199254740991, "seed of the game pool"),
    CONFIG_ROW_INT(timeout_s, "120", 1, 86400, "give up after this many seconds"),
    CONFIG_ROW_INT(timeout_ms, "3000", 10, 600000,
                   "each simulated worker's resend timeout (a silent coordinator: reconnect after "
                   "it)"),
    CONFIG_ROW_DOUBLE(rate, "0", 0, 1000000,
                      "new submissions per second at most (0 = as fast as acknowledged): a steady "
                      "load"),
    CONFIG_ROW_STRING(ledger, "",
                      "append a line 'ID new|dup SEQ' per acknowledged game to this file (\"\" "
                      "none)"),
    CONFIG_ROW_STRING(game, GAME_DEFAULT_NAME, "the game of the records sent"),
    CONFIG_ROW_BOOL(curve, "true", "CurveZMQ (false: for a coordinator with curve = false)"),
    CONFIG_ROW_STRING(curve_server_key, "", "with curve: the coordinator's public key file"),
    CONFIG_ROW_STRING(curve_secret_key, "",
                      "with curve: a worker key's secret file (every simulated worker uses it)"),
    CONFIG_ROW_STRING(search_model, "",
                      "play the pool's games as a worker does, with this model file (it must be "
                      "the coordinator's version `model`), so that the coordinator's check of "
                      "forged games (docs/security.md) can search them again; \"\" = random "
                      "games, which it cannot check"),
    CONFIG_ROW_INT(search_simulations, "16", 1, 100000,
                   "with search_model: simulations per move of the pool's games"),
};
#define N_OPTIONS (sizeof s_options / sizeof s_options[0])

/* The evaluator of search_model in an arithmetic the coordinator can check
 * (recheck.h): bf16 where the CPU has it, else fp32 on AVX-512. 0, or 1 with
 * the message printed. */
static int s_open_model(const game_def *g, const char *path, evaluator_net **out)
{
    int precision;
    if (!recheck_evaluator_usable("avx512-bf16", &precision) &&
        !recheck_evaluator_usable("avx512-fp32", &precision)) {
        fprintf(stderr, "kz: loadgen: search_model needs AVX-512 (the arithmetic the "
                        "coordinator's check can repeat)\n");
        return 1;
    }
    char err[300];
    int rc = evaluator_net_load_precision(path, g, 64, precision, out, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kz: loadgen: search_model: %s\n", err);
        return 1;
    }
    return 0;
}

/* A self-play game of the pool played by net as a worker plays it, packed. */
static int s_searched_record(const game_def *g, evaluator_net *net, const loadgen_config *cfg,
                             uint64_t seed, uint8_t **buf, size_t *len)
{
    game_record *r = record_new();
    if (!r)
        return KZ_ENOMEM;
    mcts_settings ms = mcts_settings_default();
    ms.simulations = (int)cfg->search_simulations;
    r->kind = RECORD_SELFPLAY;
    r->model_version = (uint32_t)cfg->model;
    r->settings = selfplay_record_settings(&ms);
    snprintf(r->settings.evaluator, sizeof r->settings.evaluator, "%s", evaluator_net_path(net));
    r->seed = seed;
    uint64_t id[2] = {mix64(seed), mix64(seed ^ 0x5eed)};
    memcpy(r->id, id, sizeof r->id);
    snprintf(r->worker_id, sizeof r->worker_id, "loadgen");
    evaluator ev[2] = {evaluator_net_get(net), evaluator_net_get(net)};
    r->started_ms = time_wall_ms();
    int rc = recheck_play(g, r, ev);
    r->finished_ms = time_wall_ms();
    if (rc == 0)
        rc = record_pack(r, buf, len);
    record_destroy(&r);
    return rc;
}

/* The ledger's line of one acknowledged game (client_ack_fn). */
static void s_ledger_ack(void *ctx, const uint8_t *record, size_t len, bool duplicate,
                         uint64_t sequence)
{
    FILE *f = ctx;
    char hex[2 * 16 + 1];
    if (len < 18)
        return; /* not ours: every record sent has its id first */
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", record[2 + i]);
    fprintf(f, "%s %s %llu\n", hex, duplicate ? "dup" : "new", (unsigned long long)sequence);
}

static const char s_usage[] =
    "usage: kz loadgen [--key=value ...]\n\n"
    "Imitates many workers submitting valid self-play games to a coordinator and\n"
    "reports how many it stored per second. The last line reads\n"
    "  loadgen: N acked (S stored, D duplicates, R rejected) in T s: X games/s\n"
    "Exit status 1 if any game is rejected or the run times out.\n\n";

int cmd_loadgen(int argc, char **argv)
{
    loadgen_config cfg;
    char err[512];
    int rc = config_start("kz: loadgen", s_usage, s_options, N_OPTIONS, &cfg, argc, argv,
                          NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    const game_def *g = game_find(cfg.game);
    if (!g)
        return kz_usage_error("loadgen: unknown game '%s'", cfg.game);
    if (wire_endpoint_check(cfg.endpoint, false, err, sizeof err))
        return kz_usage_error("loadgen: endpoint: %s", err);
    client_config keys;
    client_config_default(&keys);
    keys.curve = cfg.curve;
    snprintf(keys.curve_server_key, sizeof keys.curve_server_key, "%s", cfg.curve_server_key);
    snprintf(keys.curve_secret_key, sizeof keys.curve_secret_key, "%s", cfg.curve_secret_key);
    if (client_check_keys(&keys, err, sizeof err))
        return kz_usage_error("loadgen: %s", err);

    /* Step 1. The pool of valid records. */
    uint8_t **pool = xcalloc((size_t)cfg.pool, sizeof *pool);
    size_t *pool_len = xcalloc((size_t)cfg.pool, sizeof *pool_len);
    size_t max_len = 0, total_len = 0;
    validate_random_opts vo = {.model_version = (uint32_t)cfg.model, .worker_id = "loadgen"};
    evaluator_net *net = NULL;
    if (cfg.search_model[0] && (rc = s_open_model(g, cfg.search_model, &net)))
        return rc;
    for (long i = 0; i < cfg.pool; i++) {
        uint64_t seed = (uint64_t)cfg.seed * 1000003u + (uint64_t)i;
        rc = net ? s_searched_record(g, net, &cfg, seed, &pool[i], &pool_len[i])
                 : validate_random_record(g, seed, &vo, &pool[i], &pool_len[i]);
        if (rc || pool_len[i] < 18 || pool[i][0] != 0x0a || pool[i][1] != 16) {
            fprintf(stderr, "kz: loadgen: cannot make record %ld: %s\n", i, err_str(rc));
            return 1;
        }
        max_len = pool_len[i] > max_len ? pool_len[i] : max_len;
        total_len += pool_len[i];
    }
    evaluator_net_destroy(&net);
    log_info("loadgen: %ld pool games%s, %.0f bytes on average", cfg.pool,
             cfg.search_model[0] ? " (searched: checkable)" : "",
             (double)total_len / (double)cfg.pool);

    /* Step 2. The ledger and the workers. */
    FILE *ledger = NULL;
    if (cfg.ledger[0]) {
        ledger = fopen(cfg.ledger, "a");
        if (!ledger)
            return kz_usage_error("loadgen: ledger %s: %s", cfg.ledger, strerror(errno));
        setvbuf(ledger, NULL, _IOLBF, 0); /* each line whole, even if killed */
    }
    void *zctx = zmq_ctx_new();
    client **cl = xcalloc((size_t)cfg.workers, sizeof *cl);
    char id[64];
    uint64_t run = mix64((uint64_t)time_wall_ms() ^ (uint64_t)getpid());
    for (long i = 0; i < cfg.workers; i++) {
        client_config cc = keys;
        snprintf(id, sizeof id, "loadgen-%04llx-%ld", (unsigned long long)(run & 0xffff), i);
        snprintf(cc.endpoint, sizeof cc.endpoint, "%s", cfg.endpoint);
        snprintf(cc.client_id, sizeof cc.client_id, "%s", id);
        cc.role = "loadgen";
        cc.game = g->name;
        cc.max_pending = (size_t)cfg.inflight;
        cc.slots = (uint32_t)cfg.inflight;
        cc.timeout_ms = (int)cfg.timeout_ms;
        cl[i] = client_new(zctx, &cc);
        if (!cl[i])
            return kz_usage_error("loadgen: cannot create client for %s", cfg.endpoint);
        if (ledger)
            client_set_ack_hook(cl[i], s_ledger_ack, ledger);
    }

    /* Step 3. Submit, keeping every worker's queue full, until all are answered. */
    uint8_t *buf = xmalloc(max_len);
    rng_t r;
    rng_seed(&r, run);
    long submitted = 0, repeats = 0;
    uint64_t counter = 0;
    double t0 = time_now(), deadline = t0 + (double)cfg.timeout_s;
    uint64_t answered = 0;
    int status = 0;
    while (answered < (uint64_t)cfg.games) {
        uint64_t before = answered;
        answered = 0;
        for (long i = 0; i < cfg.workers; i++) {
            long allowed = cfg.rate > 0 ? (long)(cfg.rate * (time_now() - t0)) + 1 : cfg.games;
            while (submitted < cfg.games && submitted < allowed &&
                   client_pending(cl[i]) < (size_t)cfg.inflight) {
                uint32_t k = rng_below(&r, (uint32_t)cfg.pool);
                memcpy(buf, pool[k], pool_len[k]);
                uint64_t idv[2];
                bool again = counter > 0 && rng_uniform(&r) < cfg.repeat;
                idv[0] = run;
                idv[1] = again ? rng_below(&r, (uint32_t)(counter < UINT32_MAX ? counter
                                                                             : UINT32_MAX))
                               : counter++;
                repeats += again;
                memcpy(buf + 2, idv, 16); /* GameRecord.game_id: field 1, first */
                rc = client_submit_game(cl[i], buf, pool_len[k], 0);
                if (rc) {
                    fprintf(stderr, "kz: loadgen: submit: %s\n", err_str(rc));
                    return 1;
                }
                submitted++;
            }
            client_poll(cl[i], 0);
            client_stats st;
            client_get_stats(cl[i], &st);
            answered += st.acked + st.rejected;
        }
        if (answered == before)
            client_poll(cl[0], 1); /* nothing came back in a whole pass: wait a little */
        if (time_now() > deadline) {
            fprintf(stderr, "kz: loadgen: timed out with %llu of %ld games answered\n",
                    (unsigned long long)answered, cfg.games);
            status = 1;
            break;
        }
    }
    double dt = time_now() - t0;
    client_stats sum = {0};
    for (long i = 0; i < cfg.workers; i++) {
        client_stats st;
        client_get_stats(cl[i], &st);
        sum.acked += st.acked;
        sum.duplicates += st.duplicates;
        sum.rejected += st.rejected;
        sum.resent += st.resent;
        sum.reconnects += st.reconnects;
        client_destroy(&cl[i]);
    }
    if (sum.rejected)
        status = 1;
    printf("loadgen: %llu acked (%llu stored, %llu duplicates, %llu rejected; %ld repeats sent, "
           "%llu resent) in %.2f s: %.0f games/s\n",
           (unsigned long long)sum.acked, (unsigned long long)(sum.acked - sum.duplicates),
           (unsigned long long)sum.duplicates, (unsigned long long)sum.rejected, repeats,
           (unsigned long long)sum.resent, dt, dt > 0 ? (double)(sum.acked - sum.duplicates) / dt
                                                      : 0.0);
    if (ledger && fclose(ledger)) {
        fprintf(stderr, "kz: loadgen: ledger %s: %s\n", cfg.ledger, strerror(errno));
        status = 1;
    }
    free(buf);
    free(cl);
    for (long i = 0; i < cfg.pool; i++)
        free(pool[i]);
    free(pool);
    free(pool_len);
    zmq_ctx_term(zctx);
    return status;
}

#undef CONFIG_STRUCT