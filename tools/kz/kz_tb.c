/* kz tb build | probe | stats | verify | bench: the endgame tablebases
 * (games/tablebase.h, docs/tablebase.md) from the command line. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "games/game.h"
#include "games/khreibaga.h"
#include "tools/kz/kz.h"
#include "play/match.h"
#include "search/player.h"
#include "games/tablebase.h"
#include "common/util.h"

#define TB_DEFAULT_DIR "./var/tb"

/* The options of every tb subcommand (each uses some). */
typedef struct tb_opts {
    char dir[CONFIG_STR_MAX];      /* the tables' directory */
    long pieces;                   /* build: most pieces; stats/bench: most loaded */
    long threads;                  /* build/verify: threads, 0 = one per CPU */
    bool verify;                   /* build: verify each class built */
    char position[CONFIG_STR_MAX]; /* probe: R20 position */
    bool line;                     /* stats: print the longest win's line */
    double seconds;                /* bench: how long */
    long seed;                     /* bench, accuracy: positions drawn */
    long positions;                /* accuracy: the test set's size */
    long simulations;              /* accuracy: the search's simulations */
} tb_opts;

#define CONFIG_STRUCT tb_opts
static const config_option s_rows[] = {
    CONFIG_ROW_STRING(dir, TB_DEFAULT_DIR, "the tables' directory"),
    CONFIG_ROW_INT(pieces, "0", 0, TB_MAX_PIECES,
                   "build: every class with at most this many pieces (0: 5); others: load at most "
                   "this many (0: all)"),
    CONFIG_ROW_INT(threads, "0", 0, 64, "build, verify: threads (0: one per CPU)"),
    CONFIG_ROW_BOOL(verify, "true",
                    "build: check each new table against the rules before going on"),
    CONFIG_ROW_STRING(position, "", "probe: the position (R20)"),
    CONFIG_ROW_BOOL(line, "true", "stats: play out the longest win"),
    CONFIG_ROW_DOUBLE(seconds, "3", 0.1, 600, "bench: how long to probe"),
    CONFIG_ROW_INT(seed, "1", 0, 1e15,
                   "bench, accuracy: the random positions' seed (accuracy: keep it to compare "
                   "models)"),
    CONFIG_ROW_INT(positions, "1000", 1, 1000000, "accuracy: test positions"),
    CONFIG_ROW_INT(simulations, "200", 1, PLAYER_MAX_SIMS, "accuracy: the search's simulations"),
};
#undef CONFIG_STRUCT
#define N_ROWS (sizeof s_rows / sizeof s_rows[0])

static const char s_usage[] =
    "usage: kz tb build [--pieces N] [--dir D] [--threads T] [--verify=false]\n"
    "       kz tb probe [--dir D] [--position P] [ACTION ...]\n"
    "       kz tb stats [--dir D] [--pieces N] [--line=false]\n"
    "       kz tb verify [--dir D] [--pieces N] [--threads T]\n"
    "       kz tb bench [--dir D] [--pieces N] [--seconds S]\n"
    "       kz tb accuracy MODEL [--dir D] [--pieces N] [--positions N] [--simulations S]\n\n"
    "Endgame tablebases: the exact value of every position with at most N pieces\n"
    "(docs/tablebase.md). build solves the classes not built yet (resumable: a\n"
    "class whose file is there and sound is kept), smallest first, printing its\n"
    "progress on stderr, and checks each new class against the rules. probe\n"
    "prints the value of the position after the ACTIONs (R21) and of every legal\n"
    "action; stats the classes' counts and the longest win, played out; verify\n"
    "checks every loaded class again; bench measures probes per second from one\n"
    "thread on the loaded tables. accuracy measures a model (a file, or `uniform`)\n"
    "on a fixed test set of table positions where one action keeps the value (a\n"
    "win or a draw) and every other loses it: the share of value-keeping actions\n"
    "chosen by its raw policy and by its search (mcts:MODEL:S), with 95% intervals.\n";

static int s_open(const tb_opts *o, int pieces, tb_set **t)
{
    char err[512];
    *t = tb_open(o->dir, pieces, err, sizeof err);
    if (!*t) {
        fprintf(stderr, "kz tb: %s\n", err);
        return 1;
    }
    if (tb_pieces(*t) == 0) {
        fprintf(stderr, "kz tb: %s holds no complete set of tables (kz tb build --dir %s)\n",
                o->dir, o->dir);
        tb_close(t);
        return 1;
    }
    return 0;
}

static void s_hms(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void s_count(uint64_t n, char *buf, size_t len)
{
    if (n >= 10000000)
        snprintf(buf, len, "%.1fM", n / 1e6);
    else if (n >= 10000)
        snprintf(buf, len, "%.1fk", n / 1e3);
    else
        snprintf(buf, len, "%" PRIu64, n);
}

/* The progress line: a rewritten line on a terminal, else a line every 10 s. */
static void s_progress(const tb_progress *p, void *arg)
{
    double *last = arg;
    bool tty = isatty(2);
    if (!tty && !p->finished_pair && p->seconds - *last < 10)
        return;
    if (!tty && p->finished_pair && p->pair < p->pairs && p->seconds - *last < 10)
        return;
    *last = p->seconds;
    double rate = p->seconds > 0 ? p->done / p->seconds : 0;
    char done[16], total[16], el[16], eta[16];
    s_count(p->done, done, sizeof done);
    s_count(p->total, total, sizeof total);
    s_hms(p->seconds, el, sizeof el);
    s_hms(rate > 0 ? (p->total - p->done) / rate : 0, eta, sizeof eta);
    fprintf(stderr,
            "%stb %s %s (class pair %d/%d): %s/%s positions, %.0fk/s, %s elapsed, %s left%s",
            tty ? "\r" : "", p->phase, p->cls, p->pair, p->pairs, done, total, rate / 1e3, el, eta,
            tty ? "\033[K" : "\n");
}

static int s_build(const tb_opts *o)
{
    double last = -1e9;
    int pieces = o->pieces ? (int)o->pieces : 5;
    if (pieces < 2)
        return kz_usage_error("tb build: --pieces must be 2..%d", TB_MAX_PIECES);
    tb_build_opts b = {pieces, (int)o->threads, o->verify, s_progress, &last};
    char err[512];
    double t0 = time_now();
    int rc = tb_build(o->dir, &b, err, sizeof err);
    if (isatty(2))
        fputc('\n', stderr);
    if (rc) {
        fprintf(stderr, "kz tb build: %s\n", err);
        return 1;
    }
    tb_set *t;
    if (s_open(o, pieces, &t))
        return 1;
    uint64_t n = 0;
    for (int i = 0; i < tb_class_count(t); i++) {
        tb_class_info ci;
        tb_class_get(t, i, &ci);
        n += ci.positions;
    }
    printf("tables for up to %d pieces in %s: %d classes, %" PRIu64
           " positions%s; this run %.1f s\n",
           tb_pieces(t), o->dir, tb_class_count(t), n, o->verify ? ", verified" : "",
           time_now() - t0);
    tb_close(&t);
    return 0;
}

static void s_value_text(int wdl, int dist, char *buf, size_t len)
{
    if (wdl == 0)
        snprintf(buf, len, "draw");
    else
        snprintf(buf, len, "%s in %d", wdl > 0 ? "win" : "loss", dist);
}

static int s_probe(const tb_opts *o, int argc, const char **words)
{
    const game_def *g = game_default();
    game_state s;
    int rc = kz_setup(g, "tb probe", o->position[0] ? o->position : NULL, argc, (char **)words,
                      0, &s);
    if (rc)
        return rc;
    tb_set *t;
    if (s_open(o, TB_MAX_PIECES, &t))
        return 1;
    char pos[64], buf[64];
    g->format_position(&s, pos, sizeof pos);
    int count = khreibaga_no_progress(&s);
    printf("position  %s (%s to move, no-progress %d)\n", pos, g->player_name(g->to_move(&s)),
           count);
    game_result r = g->result(&s);
    if (r.over) {
        printf("result    %s (%s)\n", r.winner < 0 ? "draw" : g->player_name(r.winner),
               game_reason_name(g, r.reason));
        tb_close(&t);
        return 0;
    }
    tb_value v;
    rc = tb_probe(t, &s, &v);
    if (rc == KZ_ENOTFOUND) {
        fprintf(stderr, "kz tb probe: the position has more pieces than the tables in %s (%d)\n",
                o->dir, tb_pieces(t));
        tb_close(&t);
        return 1;
    }
    s_value_text(v.wdl, v.dist, buf, sizeof buf);
    int now = g->mid_turn(&s) ? v.wdl : tb_value_at(v, count);
    printf("value     %s for %s (with no-progress 0; plies to the zeroing move), at %d: %s\n",
           buf, g->player_name(g->to_move(&s)), count,
           now > 0 ? "win" : now < 0 ? "loss" : "draw");
    tb_action_value av[GAME_MAX_LEGAL];
    int n = tb_action_values(t, &s, av);
    for (int i = 0; i < n; i++) {
        char act[16];
        g->format_action(av[i].action, act, sizeof act);
        s_value_text(av[i].wdl, av[i].dist, buf, sizeof buf);
        printf("  %-6s  %s\n", act, buf);
    }
    tb_close(&t);
    return 0;
}

/* Plays perfect play from s to the end and prints it on one line. */
static void s_print_line(const tb_set *t, game_state s)
{
    const game_def *g = game_default();
    game_result r;
    int hops = 0;
    printf("  line:");
    while (!(r = g->result(&s)).over) {
        int a;
        if (tb_best_action(t, &s, &a) != 0)
            break;
        char buf[16];
        g->format_action(a, buf, sizeof buf);
        printf(" %s", buf);
        g->apply(&s, a);
        hops++;
    }
    printf("\n  result: %s (%s) after %d plies, %d actions\n",
           r.over ? (r.winner < 0 ? "draw" : g->player_name(r.winner)) : "?",
           r.over ? game_reason_name(g, r.reason) : "not over", g->ply(&s), hops);
}

static int s_stats(const tb_opts *o)
{
    tb_set *t;
    if (s_open(o, (int)o->pieces, &t))
        return 1;
    const game_def *g = game_default();
    printf("%-10s %12s %12s %12s %12s %7s\n", "class", "positions", "wins", "draws", "losses",
           "longest");
    uint64_t tot[4] = {0};
    int best_class = -1, best = 0;
    for (int i = 0; i < tb_class_count(t); i++) {
        tb_class_info c;
        tb_class_get(t, i, &c);
        printf("%-10s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %7d\n", c.name,
               c.positions, c.wins, c.draws, c.losses, c.longest);
        tot[0] += c.positions;
        tot[1] += c.wins;
        tot[2] += c.draws;
        tot[3] += c.losses;
        if (c.longest > best) {
            best = c.longest;
            best_class = i;
        }
    }
    printf("%-10s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", "all", tot[0],
           tot[1], tot[2], tot[3]);
    if (best_class >= 0) {
        tb_class_info c;
        tb_class_get(t, best_class, &c);
        game_state s;
        tb_class_position(t, best_class, c.longest_index, &s);
        char pos[64];
        g->format_position(&s, pos, sizeof pos);
        printf("longest win: %s, %d plies to its zeroing move, in %s\n", pos, c.longest, c.name);
        if (o->line)
            s_print_line(t, s);
    }
    tb_close(&t);
    return 0;
}

static int s_verify(const tb_opts *o)
{
    tb_set *t;
    if (s_open(o, (int)o->pieces, &t))
        return 1;
    double t0 = time_now();
    for (int i = 0; i < tb_class_count(t); i++) {
        tb_class_info c;
        tb_class_get(t, i, &c);
        char err[512];
        if (tb_verify_class(t, i, (int)o->threads, err, sizeof err) != 0) {
            fprintf(stderr, "kz tb verify: %s\n", err);
            tb_close(&t);
            return 1;
        }
    }
    printf("verified %d classes (up to %d pieces) in %.1f s\n", tb_class_count(t), tb_pieces(t),
           time_now() - t0);
    tb_close(&t);
    return 0;
}

/* This thread's CPU time in seconds (the machine may be shared). */
static double s_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int s_bench(const tb_opts *o)
{
    tb_set *t;
    if (s_open(o, (int)o->pieces, &t))
        return 1;
    /* Positions drawn from the tables themselves, Black or White to move. */
    enum { N = 1 << 16 };
    game_state *pos = xmalloc(N * sizeof *pos);
    rng_t rng;
    rng_seed(&rng, (uint64_t)o->seed);
    int classes = tb_class_count(t);
    for (int i = 0; i < N; i++) {
        int c = (int)rng_below(&rng, (uint32_t)classes);
        tb_class_info ci;
        tb_class_get(t, c, &ci);
        tb_class_position(t, c, rng_next(&rng) % ci.positions, &pos[i]);
    }
    /* Touch every page once: the rate is that of cached tables. */
    int sink = 0, wdl;
    for (int i = 0; i < N; i++)
        if (tb_probe_wdl(t, &pos[i], &wdl) == 0)
            sink += wdl;
    uint64_t probes = 0;
    double t0 = time_now(), c0 = s_cpu_now(), dt;
    do {
        for (int i = 0; i < N; i++)
            if (tb_probe_wdl(t, &pos[i], &wdl) == 0)
                sink += wdl;
        probes += N;
    } while ((dt = time_now() - t0) < o->seconds);
    double cpu = s_cpu_now() - c0;
    printf("tb bench: %.2f M probes/s per CPU second (%.2f M/s wall; one thread, %" PRIu64
           " probes of %d random positions with up to %d pieces in %.2f s; checksum %d)\n",
           probes / cpu / 1e6, probes / dt / 1e6, probes, N, tb_pieces(t), dt, sink);
    /* The trainer's probe: a sample's packed bytes (tb_probe_packed). */
    const game_def *g = tb_game();
    size_t P = (size_t)g->packed_bytes;
    uint8_t *pk = xmalloc(N * P);
    for (int i = 0; i < N; i++)
        g->pack(&pos[i], pk + i * P);
    probes = 0;
    t0 = time_now(), c0 = s_cpu_now();
    do {
        for (int i = 0; i < N; i++)
            if (tb_probe_packed(t, pk + i * P, P, &wdl) == 0)
                sink += wdl;
        probes += N;
    } while ((dt = time_now() - t0) < o->seconds);
    cpu = s_cpu_now() - c0;
    printf("tb bench: %.2f M packed probes/s per CPU second (%.2f M/s wall; tb_probe_packed, a "
           "training sample's value target; checksum %d)\n",
           probes / cpu / 1e6, probes / dt / 1e6, sink);
    free(pk);
    free(pos);
    tb_close(&t);
    return 0;
}

static void s_share(const char *what, int k, int n)
{
    double lo, hi;
    match_wilson(k, n, &lo, &hi);
    printf("  %-24s %5.1f%%  (%d of %d; 95%% %.1f..%.1f)\n", what, n ? 100.0 * k / n : 0.0, k,
           n, 100 * lo, 100 * hi);
}

static int s_accuracy(const tb_opts *o, int nw, const char **words)
{
    if (nw != 1)
        return kz_usage_error("tb accuracy: give one MODEL (a model file, or uniform)");
    tb_set *t;
    if (s_open(o, (int)o->pieces, &t))
        return 1;
    if (tb_pieces(t) < 3) {
        fprintf(stderr, "kz tb accuracy: the tables in %s stop below 3 pieces\n", o->dir);
        tb_close(&t);
        return 1;
    }
    const game_def *g = game_default();
    char spec[PLAYER_SPEC_MAX + 32], err[512];
    snprintf(spec, sizeof spec, "policy:%s", words[0]);
    player *pol = player_from_spec(g, spec, err, sizeof err);
    snprintf(spec, sizeof spec, "mcts:%s:%ld", words[0], o->simulations);
    player *srch = pol ? player_from_spec(g, spec, err, sizeof err) : NULL;
    if (!pol || !srch) {
        player_destroy(&pol);
        tb_close(&t);
        return kz_usage_error("tb accuracy: %s", err);
    }
    int n = (int)o->positions;
    game_state *st = xmalloc((size_t)n * sizeof *st);
    uint16_t *keep = xmalloc((size_t)n * sizeof *keep);
    n = tb_test_positions(t, n, (uint64_t)o->seed, st, keep);
    /* Counts by value (0 draw, 1 win) and by pieces: positions, policy, search. */
    int cnt[2][3] = {{0}}, by_pieces[TB_MAX_PIECES + 1][3] = {{0}};
    double t0 = time_now(), chance = 0;
    bool *hit_p = xmalloc((size_t)n * sizeof *hit_p), *hit_s = xmalloc((size_t)n * sizeof *hit_s);
    int right;
    int rc = player_accuracy(pol, st, keep, n, hit_p, &right);
    if (!rc)
        rc = player_accuracy(srch, st, keep, n, hit_s, &right);
    for (int i = 0; i < n && !rc; i++) {
        uint16_t legal[GAME_MAX_LEGAL];
        chance += 1.0 / g->legal_actions(&st[i], legal);
        tb_value v;
        KZ_CHECK(tb_probe(t, &st[i], &v) == 0);
        int pieces = __builtin_popcount(khreibaga_pieces(&st[i], 0) | khreibaga_pieces(&st[i], 1));
        int w = v.wdl > 0;
        cnt[w][0]++;
        cnt[w][1] += hit_p[i];
        cnt[w][2] += hit_s[i];
        by_pieces[pieces][0]++;
        by_pieces[pieces][1] += hit_p[i];
        by_pieces[pieces][2] += hit_s[i];
    }
    free(hit_p);
    free(hit_s);
    if (rc) {
        fprintf(stderr, "kz tb accuracy: the player failed: %s\n", err_str(rc));
    } else {
        printf("tb accuracy of %s on %d table positions (up to %d pieces, seed %ld: "
               "%d wins, %d draws, one value-keeping action each) in %.1f s\n",
               words[0], n, tb_pieces(t), o->seed, cnt[1][0], cnt[0][0], time_now() - t0);
        printf("  %-24s %5.1f%%  (the mean of 1 / legal actions)\n", "chance", 100 * chance / n);
        s_share("policy (raw network)", cnt[0][1] + cnt[1][1], n);
        snprintf(spec, sizeof spec, "search (%ld simulations)", o->simulations);
        s_share(spec, cnt[0][2] + cnt[1][2], n);
        s_share("policy, wins", cnt[1][1], cnt[1][0]);
        s_share("search, wins", cnt[1][2], cnt[1][0]);
        s_share("policy, draws", cnt[0][1], cnt[0][0]);
        s_share("search, draws", cnt[0][2], cnt[0][0]);
        for (int k = 3; k <= TB_MAX_PIECES; k++)
            if (by_pieces[k][0]) {
                char what[48];
                snprintf(what, sizeof what, "policy, %d pieces", k);
                s_share(what, by_pieces[k][1], by_pieces[k][0]);
                snprintf(what, sizeof what, "search, %d pieces", k);
                s_share(what, by_pieces[k][2], by_pieces[k][0]);
            }
    }
    free(st);
    free(keep);
    player_destroy(&pol);
    player_destroy(&srch);
    tb_close(&t);
    return rc ? 1 : 0;
}

int cmd_tb(int argc, char **argv)
{
    static const char *const subs[] = {"build", "probe", "stats", "verify", "bench", "accuracy"};
    static const kz_subcommands c = {"tb", subs, sizeof subs / sizeof subs[0], s_usage, s_rows,
                                     N_ROWS};
    tb_opts o;
    const char *words[argc];
    size_t nw;
    char cmd[32];
    int rc = kz_subcommand_parse(&c, &o, argc, argv, words, &nw, cmd, sizeof cmd);
    if (rc >= 0)
        return rc;
    const char *sub = argv[1];
    if (strcmp(sub, "probe") && strcmp(sub, "accuracy") && nw > 0)
        return kz_usage_error("%s: unexpected argument '%s' (see kz tb --help)", cmd, words[0]);
    if (!strcmp(sub, "build"))
        return s_build(&o);
    if (!strcmp(sub, "probe"))
        return s_probe(&o, (int)nw, words);
    if (!strcmp(sub, "stats"))
        return s_stats(&o);
    if (!strcmp(sub, "verify"))
        return s_verify(&o);
    if (!strcmp(sub, "accuracy"))
        return s_accuracy(&o, (int)nw, words);
    return s_bench(&o);
}
