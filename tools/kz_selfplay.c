/* kz selfplay | records: self-play games to a record file, and a summary or a
 * move-by-move listing of such a file (common/selfplay.h, common/record.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "evaluator.h"
#include "game.h"
#include "kz.h"
#include "mcts.h"
#include "model.h"
#include "record.h"
#include "selfplay.h"
#include "util.h"

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

int cmd_selfplay(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz selfplay [--model M] --games N --out FILE [options]\n\n"
        "Plays N games of the model against itself with the batched MCTS, G at once\n"
        "on one evaluator, and writes every finished game to FILE as a record file\n"
        "(read it with `kz records FILE`). Every state is recorded, mid-sequence\n"
        "states too: the action, the visit distribution, the root value.\n\n"
        "  --model M          model file (kz model init), or `uniform` (default): every\n"
        "                     prior equal, every value 0, so that self-play needs no model\n"
        "  --games N          games to play (required)\n"
        "  --out FILE         record file to create (required; overwritten)\n"
        "  --parallel G       games in progress at once, one batch (default 32)\n"
        "  --sims S           simulations per move (default 200)\n"
        "  --seed N           game k plays with seed N+k (default: random, printed)\n"
        "  --leaves L         leaves per tree per batch, virtual loss (default 4)\n"
        "  --c-puct X         PUCT exploration constant (default 1.5)\n"
        "  --alpha X          root Dirichlet alpha (default 1.0)\n"
        "  --epsilon X        root noise weight, 0 = no noise (default 0.25)\n"
        "  --temp-plies N     plies sampled by visit count (tau = 1) (default 10)\n"
        "  --fpu X            first-play reduction (default 0.25)\n"
        "  --no-reuse         do not keep the subtree of the played action\n"
        "  --cache N          evaluation cache entries, 0 = off (default 65536)\n"
        "  --forced-playouts-k K  KataGo forced playouts at the root, sqrt(K P N)\n"
        "                     visits per visited child, 0 = off (default 0; KataGo 2)\n"
        "  --policy-pruning   record the policy target with the forced playouts pruned\n"
        "                     (needs --forced-playouts-k)\n"
        "  --pcr-full F       playout cap randomization: a full search (--sims) on a\n"
        "                     share F of the moves, a fast one on the others (no noise,\n"
        "                     the most visited played, no policy target); 1 = off\n"
        "                     (default 1; KataGo 0.25)\n"
        "  --pcr-fast S       simulations of a fast search (default 40)\n"
        "  --root-mode M      root search: puct (default) or gumbel (Gumbel-Top-k and\n"
        "                     Sequential Halving; plays its own choice, records pi')\n"
        "  --gumbel-m M       gumbel: actions considered at the root (default 16)\n"
        "  --gumbel-c-visit X gumbel: sigma's visit offset (default 50)\n"
        "  --gumbel-c-scale X gumbel: sigma's scale (default 1.0)\n"
        "  --position P       start every game from the R20 position P\n"
        "  --model-version V  version number to record (default: the model's, 0 for uniform)\n"
        "  --worker-id ID     recorded in every game (default kz-selfplay)\n"
        "  --threads N        OpenBLAS threads for the network (default 1)\n"
        "  --precision P      the network's arithmetic: bf16 (AVX512_BF16; fp32 where\n"
        "                     the CPU lacks it) or fp32 (default bf16, as workers)\n"
        "  --quiet            no progress lines\n\n"
        "Progress goes to stderr every 2 s; Ctrl-C stops starting games and finishes\n"
        "the ones in progress (a second Ctrl-C quits at once).\n";
    enum { O_MODEL = 256, O_GAMES, O_OUT, O_PARALLEL, O_SIMS, O_SEED, O_LEAVES, O_CPUCT,
           O_ALPHA, O_EPS, O_TEMP, O_FPU, O_NOREUSE, O_CACHE, O_POSITION, O_MVER, O_WORKER,
           O_QUIET, O_THREADS, O_FORCED, O_PRUNING, O_PCR_FULL, O_PCR_FAST, O_ROOT, O_GM, O_GCV,
           O_GCS, O_PRECISION, O_HELP };
    static const struct option opts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"games", required_argument, NULL, O_GAMES},
        {"out", required_argument, NULL, O_OUT},
        {"parallel", required_argument, NULL, O_PARALLEL},
        {"sims", required_argument, NULL, O_SIMS},
        {"seed", required_argument, NULL, O_SEED},
        {"leaves", required_argument, NULL, O_LEAVES},
        {"c-puct", required_argument, NULL, O_CPUCT},
        {"alpha", required_argument, NULL, O_ALPHA},
        {"epsilon", required_argument, NULL, O_EPS},
        {"temp-plies", required_argument, NULL, O_TEMP},
        {"fpu", required_argument, NULL, O_FPU},
        {"no-reuse", no_argument, NULL, O_NOREUSE},
        {"cache", required_argument, NULL, O_CACHE},
        {"position", required_argument, NULL, O_POSITION},
        {"model-version", required_argument, NULL, O_MVER},
        {"worker-id", required_argument, NULL, O_WORKER},
        {"quiet", no_argument, NULL, O_QUIET},
        {"threads", required_argument, NULL, O_THREADS},
        {"forced-playouts-k", required_argument, NULL, O_FORCED},
        {"policy-pruning", no_argument, NULL, O_PRUNING},
        {"pcr-full", required_argument, NULL, O_PCR_FULL},
        {"pcr-fast", required_argument, NULL, O_PCR_FAST},
        {"root-mode", required_argument, NULL, O_ROOT},
        {"gumbel-m", required_argument, NULL, O_GM},
        {"gumbel-c-visit", required_argument, NULL, O_GCV},
        {"gumbel-c-scale", required_argument, NULL, O_GCS},
        {"precision", required_argument, NULL, O_PRECISION},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    const game_def *g = game_default();
    selfplay_config cfg = {.search = mcts_settings_default(), .parallel = 32,
                           .pcr_full_fraction = 1, .pcr_fast_simulations = 40};
    const char *model_path = NULL, *out_path = NULL;
    bool have_seed = false, have_mver = false, quiet = false;
    long games = 0, mver = 0, threads = 1;
    int precision = MODEL_BF16;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        long v = 0;
        double d = 0;
        const char *arg = optarg;
        switch (c) {
        case O_MODEL: model_path = arg; break;
        case O_GAMES:
            if (parse_long(arg, 1, 100000000, &games))
                return kz_usage_error("selfplay: --games must be from 1 to 100000000, not '%s'", arg);
            break;
        case O_OUT: out_path = arg; break;
        case O_PARALLEL:
            if (parse_long(arg, 1, 4096, &v))
                return kz_usage_error("selfplay: --parallel must be from 1 to 4096, not '%s'", arg);
            cfg.parallel = (int)v;
            break;
        case O_SIMS:
            if (parse_long(arg, 1, 1000000, &v))
                return kz_usage_error("selfplay: --sims must be from 1 to 1000000, not '%s'", arg);
            cfg.search.simulations = (int)v;
            break;
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(arg, &end, 10);
            if (!*arg || *end || errno || arg[0] == '-')
                return kz_usage_error("selfplay: --seed must be a whole number >= 0, not '%s'", arg);
            cfg.seed = s;
            have_seed = true;
            break;
        }
        case O_LEAVES:
            if (parse_long(arg, 1, 256, &v))
                return kz_usage_error("selfplay: --leaves must be from 1 to 256, not '%s'", arg);
            cfg.search.leaves_per_tree = (int)v;
            break;
        case O_CPUCT:
            if (parse_double(arg, 1e-6, 100, &d))
                return kz_usage_error("selfplay: --c-puct must be in (0, 100], not '%s'", arg);
            cfg.search.c_puct = (float)d;
            break;
        case O_ALPHA:
            if (parse_double(arg, 1e-6, 100, &d))
                return kz_usage_error("selfplay: --alpha must be in (0, 100], not '%s'", arg);
            cfg.search.dirichlet_alpha = (float)d;
            break;
        case O_EPS:
            if (parse_double(arg, 0, 1, &d))
                return kz_usage_error("selfplay: --epsilon must be in [0, 1], not '%s'", arg);
            cfg.search.dirichlet_epsilon = (float)d;
            break;
        case O_TEMP:
            if (parse_long(arg, 0, 100000, &v))
                return kz_usage_error("selfplay: --temp-plies must be from 0 to 100000, not '%s'", arg);
            cfg.search.temperature_plies = (int)v;
            break;
        case O_FPU:
            if (parse_double(arg, 0, 2, &d))
                return kz_usage_error("selfplay: --fpu must be in [0, 2], not '%s'", arg);
            cfg.search.fpu = (float)d;
            break;
        case O_NOREUSE: cfg.search.reuse_tree = false; break;
        case O_CACHE:
            if (parse_long(arg, 0, 1 << 24, &v))
                return kz_usage_error("selfplay: --cache must be from 0 to 16777216, not '%s'", arg);
            cfg.search.cache_entries = (int)v;
            break;
        case O_FORCED:
            if (parse_double(arg, 0, 100, &d))
                return kz_usage_error("selfplay: --forced-playouts-k must be in [0, 100], not "
                                      "'%s'", arg);
            cfg.search.forced_playouts_k = (float)d;
            break;
        case O_PRUNING: cfg.search.policy_pruning = true; break;
        case O_PCR_FULL:
            if (parse_double(arg, 0.000001, 1, &d))
                return kz_usage_error("selfplay: --pcr-full must be in (0, 1], not '%s'", arg);
            cfg.pcr_full_fraction = d;
            break;
        case O_PCR_FAST:
            if (parse_long(arg, 1, 1000000, &v))
                return kz_usage_error("selfplay: --pcr-fast must be from 1 to 1000000, not '%s'",
                                      arg);
            cfg.pcr_fast_simulations = (int)v;
            break;
        case O_ROOT:
            if (mcts_root_mode_parse(arg, &cfg.search.root_mode))
                return kz_usage_error("selfplay: --root-mode must be puct or gumbel, not '%s'", arg);
            break;
        case O_GM:
            if (parse_long(arg, 1, GAME_MAX_LEGAL, &v))
                return kz_usage_error("selfplay: --gumbel-m must be from 1 to 256, not '%s'", arg);
            cfg.search.gumbel_m = (int)v;
            break;
        case O_GCV:
            if (parse_double(arg, 0, 100000, &d))
                return kz_usage_error("selfplay: --gumbel-c-visit must be in [0, 100000], not "
                                      "'%s'", arg);
            cfg.search.gumbel_c_visit = (float)d;
            break;
        case O_GCS:
            if (parse_double(arg, 1e-6, 1000, &d))
                return kz_usage_error("selfplay: --gumbel-c-scale must be in (0, 1000], not '%s'",
                                      arg);
            cfg.search.gumbel_c_scale = (float)d;
            break;
        case O_POSITION: cfg.start_position = arg; break;
        case O_MVER:
            if (parse_long(arg, 0, UINT32_MAX, &mver))
                return kz_usage_error("selfplay: --model-version must be from 0 to 4294967295, "
                                      "not '%s'", arg);
            have_mver = true;
            break;
        case O_WORKER: cfg.worker_id = arg; break;
        case O_QUIET: quiet = true; break;
        case O_THREADS:
            if (parse_long(arg, 1, 256, &threads))
                return kz_usage_error("selfplay: --threads must be from 1 to 256, not '%s'", arg);
            break;
        case O_PRECISION:
            if (model_precision_parse(arg, &precision))
                return kz_usage_error("selfplay: --precision must be fp32 or bf16, not '%s'", arg);
            break;
        case O_HELP:
        case 'h': fputs(usage, stdout); return 0;
        default:
            return kz_usage_error("selfplay: unknown or incomplete option '%s' (see kz selfplay "
                                  "--help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return kz_usage_error("selfplay: unexpected argument '%s' (see kz selfplay --help)",
                              argv[optind]);
    if (!games)
        return kz_usage_error("selfplay: --games N is required (see kz selfplay --help)");
    if (!out_path)
        return kz_usage_error("selfplay: --out FILE is required (see kz selfplay --help)");
    cfg.games = (int)games;
    if (!cfg.worker_id)
        cfg.worker_id = "kz-selfplay";
    if (!have_seed) {
        if (getrandom(&cfg.seed, sizeof cfg.seed, 0) != sizeof cfg.seed)
            cfg.seed = (uint64_t)time_wall_ms();
        cfg.seed >>= 1; /* printable as a plain positive number */
    }
    if (model_set_threads((int)threads) < 0)
        return kz_usage_error("selfplay: cannot set %ld threads", threads);
    model_set_precision(precision);
    evaluator ev;
    evaluator_net *net;
    uint32_t version = 0;
    int rc = s_open_model(g, model_path, cfg.parallel * cfg.search.leaves_per_tree, &ev, &net,
                          &version);
    if (rc)
        return rc;
    cfg.model_version = have_mver ? (uint32_t)mver : version;

    char err[256];
    selfplay *sp = selfplay_new(g, &cfg, ev, err, sizeof err);
    if (!sp) {
        evaluator_net_destroy(&net);
        return kz_usage_error("selfplay: %s", err);
    }
    sp_sink sink = {0};
    rc = record_file_create(out_path, &sink.out, err, sizeof err);
    if (rc) {
        selfplay_destroy(&sp);
        evaluator_net_destroy(&net);
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
    selfplay_destroy(&sp);
    evaluator_net_destroy(&net);
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
        printf("rating game: %s (%s) against %s\n", a, g->player_name(r->candidate_player ? 1 : 0), b);
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
           game_reason_name(r->reason), r->plies, r->n_moves,
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
    static const struct option opts[] = {
        {"game", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long want = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "g:h", opts, NULL)) != -1) {
        switch (c) {
        case 'g':
            if (parse_long(optarg, 1, 1L << 40, &want))
                return kz_usage_error("records: --game must be a whole number >= 1, not '%s'",
                                      optarg);
            break;
        case 'h': fputs(usage, stdout); return 0;
        default:
            return kz_usage_error("records: unknown or incomplete option '%s' (see kz records "
                                  "--help)", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return kz_usage_error("records: give exactly one FILE (see kz records --help)");
    const char *path = argv[optind];
    char err[256];
    record_file *f;
    int rc = record_file_open(path, &f, err, sizeof err);
    if (rc)
        return kz_usage_error("records: %s", err);
    game_record *r = record_new();
    if (!r) {
        record_file_close(&f);
        return kz_usage_error("records: out of memory");
    }
    long games = 0, invalid = 0, states = 0, forced = 0, fast = 0, plies = 0;
    long wins[2] = {0, 0}, draws = 0, reasons[GAME_REASON_COUNT] = {0};
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
        if (r->reason >= 0 && r->reason < GAME_REASON_COUNT)
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
        for (int k = 1; k < GAME_REASON_COUNT; k++)
            printf(" %s %ld%s", game_reason_name(k), reasons[k],
                   k + 1 < GAME_REASON_COUNT ? "," : "\n");
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
