/* kz selfplay | records: self-play games to a record file, and a summary or a
 * move-by-move listing of such a file (play/selfplay.h, data/record.h). */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "tools/kz/kz.h"
#include "search/mcts.h"
#include "nn/model.h"
#include "data/record.h"
#include "play/selfplay.h"
#include "games/tablebase.h"
#include "common/util.h"

/* --- evaluators by name --------------------------------------------------------- */

/* Opens the evaluator named by --model: "uniform" (or none) for the uniform
 * evaluator, else a model file, whose evaluator goes to *net (caller frees).
 * 0, or 2 after printing a one-line error. */
static int s_open_model(const game_def *g, const char *path, int max_batch, evaluator *ev,
                        evaluator_net **net, uint32_t *version)
{
    *net = NULL;
    if (!path || !strcmp(path, "uniform")) {
        *ev = evaluator_uniform(g);
        *version = 0;
        return 0;
    }
    char err[300];
    if (evaluator_net_load(path, g, max_batch, net, err, sizeof err) != 0)
        return kz_usage_error("selfplay: %s", err);
    *ev = evaluator_net_get(*net);
    *version = evaluator_net_version(*net);
    return 0;
}

/* --- kz selfplay ------------------------------------------------------------------ */

static volatile sig_atomic_t s_interrupted;

static void s_on_signal(int sig)
{
    (void)sig;
    s_interrupted = 1;
    signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends at once */
    signal(SIGTERM, SIG_DFL);
}

typedef struct sp_sink {
    record_file *out; /* where the games go */
    char err[256];    /* the write error, if any */
} sp_sink;

static int s_write_game(void *ctx, const game_record *r)
{
    sp_sink *sink = ctx;
    return record_file_write(sink->out, r, sink->err, sizeof sink->err);
}

static void s_progress(FILE *to, const selfplay_stats *st, int games, double elapsed)
{
    const mcts_stats *m = &st->search;
    double batch = m->evaluator_calls ? (double)m->evaluated / (double)m->evaluator_calls : 0;
    double net = st->seconds > 0 ? m->eval_seconds / st->seconds : 0;
    fprintf(to,
            "selfplay: %d/%d games, %" PRIu64 " positions, %.1f games/h, %.0f sims/s, "
            "mean batch %.1f, %.0f%% of the time in the evaluator, %.0f s\n",
            st->games_done, games, st->states,
            elapsed > 0 ? st->games_done * 3600.0 / elapsed : 0.0,
            elapsed > 0 ? (double)m->simulations / elapsed : 0.0, batch, 100 * net, elapsed);
}

/* kz selfplay's settings: its own rows, self-play's (selfplay_options) and
 * the search's (mcts_options). */
typedef struct selfplay_opts {
    char game[CONFIG_STR_MAX];          /* the game */
    char model[CONFIG_STR_MAX];         /* a model file or "uniform" */
    long games;                         /* games to play, 0 = not given */
    char out[CONFIG_STR_MAX];           /* record file, "" = not given */
    char seed[CONFIG_STR_MAX];          /* base seed, "" = random */
    char position[CONFIG_STR_MAX];      /* start position, "" = the initial one */
    char model_version[CONFIG_STR_MAX]; /* recorded version, "" = the model's */
    char worker_id[CONFIG_STR_MAX];     /* recorded */
    long threads;                       /* OpenBLAS threads */
    char precision[CONFIG_STR_MAX];     /* fp32 | bf16 */
    bool quiet;                         /* no progress lines */
    char tb_dir[CONFIG_STR_MAX];        /* endgame tables, "" = none */
    selfplay_config play;               /* parallel, PCR, the tables' use and the search */
} selfplay_opts;

#define CONFIG_STRUCT selfplay_opts
static const config_option s_selfplay_rows[] = {
    CONFIG_ROW_STRING(game, GAME_DEFAULT_NAME,
                      "the game (its search defaults apply: simulations, dirichlet_alpha)"),
    CONFIG_ROW_STRING(model, "uniform",
                      "model file (kz model init), or uniform: every prior equal, every value 0, "
                      "so that self-play needs no model"),
    CONFIG_ROW_INT(games, NULL, 1, 100000000, "games to play (required)"),
    CONFIG_ROW_STRING(out, "", "record file to create (required; overwritten)"),
    CONFIG_ROW_STRING(seed, "", "game k plays with seed N+k (\"\" = random, printed)"),
    CONFIG_ROW_STRING(position, "",
                      "start every game from this R20 position (\"\" = the initial one)"),
    CONFIG_ROW_STRING(model_version, "",
                      "version number to record (\"\" = the model's, 0 for uniform)"),
    CONFIG_ROW_STRING(worker_id, "kz-selfplay", "recorded in every game"),
    CONFIG_ROW_INT(threads, "1", 1, 256, "OpenBLAS threads for the network"),
    CONFIG_ROW_STRING(precision, "bf16",
                      "the network's arithmetic: bf16 (AVX512_BF16; fp32 where the CPU lacks it) "
                      "or fp32"),
    CONFIG_ROW_BOOL(quiet, "false", "no progress lines"),
    CONFIG_ROW_STRING(tb_dir, "",
                      "endgame tables (kz tb build) for tb_search and tb_adjudicate; \"\" = none"),
    /* The spellings kz selfplay had before it shared the search's rows. */
    {"sims", CONFIG_ALIAS, "simulations", 0, 0, 0, ""},
    {"leaves", CONFIG_ALIAS, "leaves_per_tree", 0, 0, 0, ""},
    {"alpha", CONFIG_ALIAS, "dirichlet_alpha", 0, 0, 0, ""},
    {"epsilon", CONFIG_ALIAS, "dirichlet_epsilon", 0, 0, 0, ""},
    {"temp_plies", CONFIG_ALIAS, "temperature_plies", 0, 0, 0, ""},
    {"no_reuse", CONFIG_ALIAS, "reuse_tree=false", 0, 0, 0, ""},
    {"cache", CONFIG_ALIAS, "cache_entries", 0, 0, 0, ""},
    {"pcr_full", CONFIG_ALIAS, "pcr_full_fraction", 0, 0, 0, ""},
    {"pcr_fast", CONFIG_ALIAS, "pcr_fast_simulations", 0, 0, 0, ""},
};
#undef CONFIG_STRUCT
#define N_SELFPLAY_ROWS (sizeof s_selfplay_rows / sizeof s_selfplay_rows[0])

int cmd_selfplay(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz selfplay [--game G] [--model M] --games N --out FILE [options]\n\n"
        "Plays N games of the model against itself with the batched MCTS, G at once\n"
        "on one evaluator, and writes every finished game to FILE as a record file\n"
        "(read it with `kz records FILE`). Every state is recorded, mid-sequence\n"
        "states too: the action, the visit distribution, the root value. The search's\n"
        "settings are kz-worker's (docs/worker.md, docs/learning.md).\n\n"
        "Progress goes to stderr every 2 s; Ctrl-C stops starting games and finishes\n"
        "the ones in progress (a second Ctrl-C quits at once).\n";
    config_option rows[N_SELFPLAY_ROWS + 32];
    config_group groups[] = {
        {s_selfplay_rows, N_SELFPLAY_ROWS, 0},
        {selfplay_options, selfplay_options_n, offsetof(selfplay_opts, play)},
        {mcts_options, mcts_options_n, offsetof(selfplay_opts, play.search)},
    };
    size_t n_rows = config_join(rows, sizeof rows / sizeof rows[0], groups, 3);
    selfplay_opts o = {.play = selfplay_config_default()};
    int rc = kz_parse_args("selfplay", usage, rows, n_rows, &o, argc, argv, NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    const game_def *g = kz_game("selfplay", o.game);
    if (!g)
        return 2;
    /* The game's search defaults where not set: the settings read again. */
    char sims[32], alpha[32];
    snprintf(sims, sizeof sims, "%d", g->simulations);
    snprintf(alpha, sizeof alpha, "%g", (double)g->dirichlet_alpha);
    config_set_default(rows, n_rows, "simulations", sims);
    config_set_default(rows, n_rows, "dirichlet_alpha", alpha);
    rc = kz_parse_args("selfplay", usage, rows, n_rows, &o, argc, argv, NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    if (!o.games)
        return kz_usage_error("selfplay: --games N is required (see kz selfplay --help)");
    if (!o.out[0])
        return kz_usage_error("selfplay: --out FILE is required (see kz selfplay --help)");
    selfplay_config cfg = o.play;
    cfg.games = (int)o.games;
    cfg.worker_id = o.worker_id;
    cfg.start_position = o.position[0] ? o.position : NULL;
    if (o.seed[0]) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(o.seed, &end, 10);
        if (*end || errno || o.seed[0] == '-')
            return kz_usage_error("selfplay: --seed must be a whole number >= 0, not '%s'",
                                  o.seed);
        cfg.seed = s;
    } else {
        if (getrandom(&cfg.seed, sizeof cfg.seed, 0) != sizeof cfg.seed)
            cfg.seed = (uint64_t)time_wall_ms();
        cfg.seed >>= 1; /* printable as a plain positive number */
    }
    long mver = 0;
    if (o.model_version[0] && parse_long(o.model_version, 0, UINT32_MAX, &mver))
        return kz_usage_error("selfplay: --model_version must be from 0 to 4294967295, not '%s'",
                              o.model_version);
    int precision;
    if (model_precision_parse(o.precision, &precision))
        return kz_usage_error("selfplay: --precision must be fp32 or bf16, not '%s'",
                              o.precision);
    const char *model_path = strcmp(o.model, "uniform") ? o.model : NULL;
    const char *out_path = o.out;
    bool quiet = o.quiet;
    long threads = o.threads;
    if (model_set_threads((int)threads) < 0)
        return kz_usage_error("selfplay: cannot set %ld threads", threads);
    model_set_precision(precision);
    evaluator ev;
    evaluator_net *net;
    uint32_t version = 0;
    rc = s_open_model(g, model_path, cfg.parallel * cfg.search.leaves_per_tree, &ev, &net,
                          &version);
    if (rc)
        return rc;
    cfg.model_version = o.model_version[0] ? (uint32_t)mver : version;

    char err[512];
    tb_set *tb = NULL;
    game_oracle tb_or = {0};
    if (o.tb_dir[0] && g != tb_game()) {
        evaluator_net_destroy(&net);
        return kz_usage_error("selfplay: --tb_dir: the endgame tables are %s's, not %s's",
                              tb_game()->name, g->name);
    }
    if (o.tb_dir[0]) {
        if (!(tb = tb_open(o.tb_dir, 0, err, sizeof err))) {
            evaluator_net_destroy(&net);
            return kz_usage_error("selfplay: %s", err);
        }
        tb_or = tb_oracle(tb);
        cfg.oracle = &tb_or;
    } else if (cfg.tb_search || cfg.tb_adjudicate) {
        evaluator_net_destroy(&net);
        return kz_usage_error("selfplay: --tb_search and --tb_adjudicate need --tb_dir");
    }
    selfplay *sp = selfplay_new(g, &cfg, ev, err, sizeof err);
    if (!sp) {
        evaluator_net_destroy(&net);
        tb_close(&tb);
        return kz_usage_error("selfplay: %s", err);
    }
    sp_sink sink = {0};
    rc = record_file_create(out_path, &sink.out, err, sizeof err);
    if (rc) {
        selfplay_destroy(&sp);
        evaluator_net_destroy(&net);
        tb_close(&tb);
        fprintf(stderr, "kz: selfplay: %s\n", err);
        return 1;
    }
    if (!quiet)
        fprintf(stderr,
                "selfplay: %d games, %d at once, %d simulations, %d leaves per tree, seed %" PRIu64
                ", model %s, to %s\n",
                cfg.games, cfg.parallel, cfg.search.simulations, cfg.search.leaves_per_tree,
                cfg.seed, model_path ? model_path : "uniform", out_path);
    s_interrupted = 0;
    struct sigaction sa = {.sa_handler = s_on_signal};
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    double t0 = time_now(), last = t0;
    bool stopping = false;
    int status = 0;
    for (;;) {
        int remaining;
        rc = selfplay_step(sp, s_write_game, &sink, &remaining);
        if (rc) {
            fprintf(stderr, "kz: selfplay: %s\n", sink.err[0] ? sink.err : err_str(rc));
            status = 1;
            break;
        }
        if (remaining == 0)
            break;
        if (s_interrupted && !stopping) {
            stopping = true;
            selfplay_stop_new(sp);
            fprintf(stderr, "selfplay: interrupted: finishing the games in progress\n");
        }
        double now = time_now();
        if (!quiet && now - last >= 2.0) {
            selfplay_stats st;
            selfplay_get_stats(sp, &st);
            s_progress(stderr, &st, cfg.games, now - t0);
            last = now;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    int crc = record_file_close(&sink.out);
    if (crc && !status) {
        fprintf(stderr, "kz: selfplay: closing %s: %s\n", out_path, err_str(crc));
        status = 1;
    }
    selfplay_stats st;
    selfplay_get_stats(sp, &st);
    double elapsed = time_now() - t0;
    const mcts_stats *m = &st.search;
    printf("games: %d written to %s (seed %" PRIu64 ")\n", st.games_done, out_path, cfg.seed);
    printf("positions: %" PRIu64 " (%" PRIu64 " forced), plies: %" PRIu64 "\n", st.states,
           st.forced, st.plies);
    printf("results: %s %d, %s %d, draws %d\n", g->player_name(0), st.wins[0],
           g->player_name(1), st.wins[1], st.draws);
    printf("time: %.2f s, %.1f games/hour, %.0f simulations/s\n", elapsed,
           elapsed > 0 ? st.games_done * 3600.0 / elapsed : 0.0,
           elapsed > 0 ? (double)m->simulations / elapsed : 0.0);
    printf("evaluator: %" PRIu64 " positions in %" PRIu64 " calls (mean batch %.1f, largest %d), "
           "%.1f%% of the time; cache hits %" PRIu64 ", shared in a batch %" PRIu64 "\n",
           m->evaluated, m->evaluator_calls,
           m->evaluator_calls ? (double)m->evaluated / (double)m->evaluator_calls : 0.0,
           m->max_batch_seen, st.seconds > 0 ? 100 * m->eval_seconds / st.seconds : 0.0,
           m->cache_hits, m->duplicates);
    if (m->arena_full)
        printf("warning: %" PRIu64 " searches stopped early on a full tree arena\n",
               m->arena_full);
    if (tb)
        printf("tables: %d games ended by them (%" PRIu64 " moves), %" PRIu64
               " search leaves valued by them\n",
               st.tb_games, st.tb_moves, m->tb_leaves);
    selfplay_destroy(&sp);
    evaluator_net_destroy(&net);
    tb_close(&tb);
    return status;
}

/* --- kz records ------------------------------------------------------------------ */

typedef struct print_ctx {
    const game_def *g;      /* the game */
    const game_record *r;   /* the record being printed */
} print_ctx;

static int s_print_state(void *ctx, const game_state *s, int k, const record_move *m, int z)
{
    const print_ctx *pc = ctx;
    const game_def *g = pc->g;
    const game_record *r = pc->r;
    char ab[16];
    g->format_action(m->action, ab, sizeof ab);
    printf("%4d %4d  %-6s %s%-6s %+2d  ", k + 1, g->ply(s), g->player_name(g->to_move(s)),
           g->mid_turn(s) ? "~" : " ", ab, z);
    if (m->forced) {
        printf("forced\n");
        return 0;
    }
    printf("%+.3f %s", m->root_value, m->fast_search ? "fast " : "");
    /* The five largest shares, largest first. */
    int order[GAME_MAX_LEGAL], n = m->policy_n;
    for (int j = 0; j < n; j++)
        order[j] = j;
    for (int a = 0; a < n && a < 5; a++) {
        int best = a;
        for (int b = a + 1; b < n; b++)
            if (r->policy[m->policy_off + order[b]] > r->policy[m->policy_off + order[best]])
                best = b;
        int t = order[a];
        order[a] = order[best];
        order[best] = t;
        g->format_action(r->policy_actions[m->policy_off + order[a]], ab, sizeof ab);
        printf(" %s %.2f", ab, r->policy[m->policy_off + order[a]]);
    }
    if (n > 5)
        printf(" (+%d)", n - 5);
    printf("\n");
    return 0;
}

void kz_print_record(const game_def *g, const game_record *r, const char *title)
{
    char id[2 * RECORD_ID_BYTES + 1];
    for (int i = 0; i < RECORD_ID_BYTES; i++)
        snprintf(id + 2 * i, 3, "%02x", r->id[i]);
    char worker[sizeof r->worker_id]; /* from outside: no control characters */
    text_printable(worker, sizeof worker, r->worker_id[0] ? r->worker_id : "-",
                   sizeof r->worker_id);
    printf("%s: id %s, model %u, seed %" PRIu64 ", worker %s\n", title, id, r->model_version,
           r->seed, worker);
    if (r->kind == RECORD_ARENA) {
        printf("arena: candidate v%u (%s) against the best v%u\n", r->model_version,
               g->player_name(r->candidate_player ? 1 : 0), r->opponent_version);
    } else if (r->kind == RECORD_EVAL) {
        char a[RECORD_PLAYER_MAX + 16], b[RECORD_PLAYER_MAX + 16];
        if (r->model_player[0])
            text_printable(a, sizeof a, r->model_player, sizeof r->model_player);
        else
            snprintf(a, sizeof a, "v%u", r->model_version);
        if (r->opponent_player[0])
            text_printable(b, sizeof b, r->opponent_player, sizeof r->opponent_player);
        else
            snprintf(b, sizeof b, "v%u", r->opponent_version);
        printf("rating game: %s (%s) against %s\n", a, g->player_name(r->candidate_player ? 1 : 0),
               b);
    }
    printf("search: %d simulations, c_puct %.2f, alpha %.2f, epsilon %.2f, %d sampled plies, "
           "fpu %.2f, %d leaves per tree%s",
           r->settings.simulations, r->settings.c_puct, r->settings.dirichlet_alpha,
           r->settings.dirichlet_epsilon, r->settings.temperature_plies, r->settings.fpu,
           r->settings.leaves_per_tree, r->settings.reuse_tree ? "" : ", no tree reuse");
    if (r->settings.fast_simulations)
        printf(", fast searches %d simulations", r->settings.fast_simulations);
    printf("\n");
    printf("start: %s\n", r->start_position[0] ? r->start_position : "(initial position)");
    printf("   #  ply  mover  action   z  value   visit shares (largest first)\n");
    print_ctx pc = {g, r};
    char err[200];
    int rc = record_replay(g, r, s_print_state, &pc, err, sizeof err);
    if (rc)
        printf("invalid record: %s\n", err);
    printf("result: %s (%s) after %u plies, %d states, %.1f s\n",
           r->winner < 0 ? "draw" : r->winner == 0 ? "black wins" : "white wins",
           game_reason_name(g, r->reason), r->plies, r->n_moves,
           (double)(r->finished_ms - r->started_ms) / 1000.0);
}

int cmd_records(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz records FILE [--game K]\n\n"
        "Summarises a record file written by `kz selfplay`: games, positions (states,\n"
        "mid-sequence ones included), results split by winner and by reason, mean length,\n"
        "and checks every game by replaying it through the rules. With --game K (1 = the\n"
        "first), prints game K move by move instead: for each state the ply, the mover,\n"
        "the action (~ marks a hop inside a capture sequence), z (the final result from\n"
        "the mover's view), the root value and the largest visit shares.\n"
        "Exit status 2 when the file is malformed or a game fails its check.\n";
    typedef struct records_opts {
        long game; /* the game to list, 0 = a summary */
    } records_opts;
#define CONFIG_STRUCT records_opts
    static const config_option rows[] = {
        CONFIG_ROW_INT(game, NULL, 1, 1L << 40,
                       "list game K (1 = the first) move by move instead of the summary"),
    };
#undef CONFIG_STRUCT
    records_opts o = {0};
    const char *files[argc];
    size_t n_files;
    int rc = kz_parse_args("records", usage, rows, 1, &o, argc, argv, files, (size_t)argc,
                           &n_files);
    if (rc >= 0)
        return rc;
    if (n_files != 1)
        return kz_usage_error("records: give exactly one FILE (see kz records --help)");
    long want = o.game;
    const char *path = files[0];
    char err[256];
    record_file *f;
    rc = record_file_open(path, &f, err, sizeof err);
    if (rc)
        return kz_usage_error("records: %s", err);
    game_record *r = record_new();
    if (!r) {
        record_file_close(&f);
        return kz_usage_error("records: out of memory");
    }
    long games = 0, invalid = 0, states = 0, forced = 0, fast = 0, plies = 0;
    long wins[2] = {0, 0}, draws = 0, reasons[GAME_MAX_REASONS] = {0};
    uint32_t vmin = UINT32_MAX, vmax = 0;
    char first_invalid[300] = "";
    bool printed = false;
    int status = 0;
    const game_def *g = game_default();
    for (;;) {
        rc = record_file_read(f, r, err, sizeof err);
        if (rc == KZ_ENOTFOUND)
            break;
        if (rc) {
            fprintf(stderr, "kz: records: %s: %s\n", path, err);
            status = 2;
            break;
        }
        games++;
        const game_def *rg = game_find(r->game);
        char verr[200];
        if (!rg || record_validate(rg, r, verr, sizeof verr) != 0) {
            if (!invalid)
                snprintf(first_invalid, sizeof first_invalid, "game %ld: %s", games,
                         rg ? verr : "unknown game");
            invalid++;
        }
        if (rg)
            g = rg;
        if (want == games) {
            char title[32];
            snprintf(title, sizeof title, "game %ld", games);
            kz_print_record(g, r, title);
            printed = true;
            break;
        }
        states += r->n_moves;
        plies += r->plies;
        for (int k = 0; k < r->n_moves; k++) {
            forced += r->moves[k].forced;
            fast += r->moves[k].fast_search;
        }
        if (r->winner >= 0)
            wins[r->winner]++;
        else
            draws++;
        if (r->reason >= 0 && r->reason < game_reason_count(g))
            reasons[r->reason]++;
        if (r->model_version < vmin)
            vmin = r->model_version;
        if (r->model_version > vmax)
            vmax = r->model_version;
    }
    record_file_close(&f);
    record_destroy(&r);
    if (want) {
        if (!printed && status == 0)
            return kz_usage_error("records: %s has %ld games, no game %ld", path, games, want);
        return status ? status : (invalid ? 2 : 0);
    }
    printf("file: %s\n", path);
    printf("games: %ld", games);
    if (games)
        printf(" (model versions %u..%u)", vmin, vmax);
    printf("\npositions: %ld (%ld forced, %ld searched", states, forced, states - forced);
    if (fast) /* playout cap randomization */
        printf(": %ld in full, %ld fast", states - forced - fast, fast);
    printf(")\n");
    if (games) {
        printf("results: %s %ld (%.1f%%), %s %ld (%.1f%%), draws %ld (%.1f%%)\n",
               g->player_name(0), wins[0], 100.0 * wins[0] / games, g->player_name(1), wins[1],
               100.0 * wins[1] / games, draws, 100.0 * draws / games);
        printf("by reason:");
        for (int k = 1; k < game_reason_count(g); k++)
            printf(" %s %ld%s", game_reason_name(g, k), reasons[k],
                   k + 1 < game_reason_count(g) ? "," : "\n");
        printf("mean length: %.1f plies, %.1f positions\n", (double)plies / games,
               (double)states / games);
    }
    printf("checked by replay: %ld valid, %ld invalid\n", games - invalid, invalid);
    if (invalid) {
        fprintf(stderr, "kz: records: %s: %ld invalid games; first: %s\n", path, invalid,
                first_invalid);
        if (!status)
            status = 2;
    }
    return status;
}
