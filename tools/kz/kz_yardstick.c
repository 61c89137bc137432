/* kz yardstick book | positions | value | ab: the sharper yardstick of
 * learning (play/yardstick.h, docs/learning.md "The sharper yardstick"). */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "games/game.h"
#include "nn/model.h"
#include "play/match.h"
#include "play/yardstick.h"
#include "search/player.h"
#include "tools/kz/kz.h"

typedef struct yard_opts {
    char game[CONFIG_STR_MAX];
    char out[CONFIG_STR_MAX];       /* book, positions: the file written */
    char book[CONFIG_STR_MAX];      /* positions, ab: openings from this file ("" = generated) */
    char positions[CONFIG_STR_MAX]; /* value: the labelled positions */
    char anchor[CONFIG_STR_MAX];    /* ab: the common opponent */
    char players[CONFIG_STR_MAX];   /* positions: the players of the sampled games */
    long openings;                  /* book: candidates; positions, ab: generated openings */
    long seed;                      /* the generated openings' seed (make learn's book) */
    long depth;                     /* book, positions: the deep alpha-beta's depth */
    long count;                     /* positions: how many */
    long every;                     /* positions: one in this many turns of a game */
    long compare;                   /* value: positions where the two budgets are compared */
    long low, high;                 /* value: the two budgets */
    long simulations;               /* ab: the models' simulations */
    long threads;                   /* ab, book: threads (0 = one per core) */
    long pairs;                     /* ab, diagnose: openings used (0 = all) */
    long judge;                     /* diagnose: the judge's alpha-beta depth */
    char recheck[CONFIG_STR_MAX];   /* diagnose: budgets that re-search the errors */
} yard_opts;

#define CONFIG_STRUCT yard_opts
static const config_option s_rows[] = {
    KZ_GAME_OPTION(yard_opts, game),
    CONFIG_ROW_STRING(out, "", "book, positions: the file to write"),
    CONFIG_ROW_STRING(book, "",
                      "positions, ab: the openings, a book file (\"\" = --openings generated from "
                      "--seed)"),
    CONFIG_ROW_STRING(positions, "", "value: the labelled positions file"),
    CONFIG_ROW_STRING(anchor, "alphabeta:8", "ab: the common opponent"),
    CONFIG_ROW_STRING(players, "alphabeta:2",
                      "positions: the player (both sides) of the games sampled"),
    CONFIG_ROW_INT(openings, "500", 1, YARD_MAX_BOOK,
                   "book: candidate openings; positions, ab: openings generated when no --book"),
    CONFIG_ROW_INT(seed, "20261124", 0, 9007199254740991,
                   "the generated openings' seed (make learn's book: 20261124)"),
    CONFIG_ROW_INT(depth, "10", 1, PLAYER_MAX_DEPTH,
                   "book, positions: depth of the deep alpha-beta that judges"),
    CONFIG_ROW_INT(count, "1000", 1, YARD_MAX_BOOK, "positions: how many"),
    CONFIG_ROW_INT(every, "3", 1, 100, "positions: one turn start in this many"),
    CONFIG_ROW_INT(compare, "300", 0, YARD_MAX_BOOK,
                   "value: positions where --low and --high simulations are compared (0 = none)"),
    CONFIG_ROW_INT(low, "200", 1, PLAYER_MAX_SIMS, "value: the smaller budget"),
    CONFIG_ROW_INT(high, "1600", 1, PLAYER_MAX_SIMS, "value: the larger budget"),
    CONFIG_ROW_INT(simulations, "0", 0, PLAYER_MAX_SIMS,
                   "ab: the models' simulations (0 = the game's: Khreibaga 200)"),
    CONFIG_ROW_INT(threads, "0", 0, 64, "ab, book: threads (0 = one per core)"),
    CONFIG_ROW_INT(pairs, "0", 0, YARD_MAX_BOOK, "ab, diagnose: openings used (0 = all)"),
    CONFIG_ROW_INT(judge, "12", 1, PLAYER_MAX_DEPTH,
                   "diagnose: depth of the alpha-beta that judges every move of the model"),
    CONFIG_ROW_STRING(recheck, "800,3200",
                      "diagnose: simulation budgets that re-search the model's errors (\"\" = "
                      "none)"),
};
#undef CONFIG_STRUCT
#define N_ROWS (sizeof s_rows / sizeof s_rows[0])

static const char s_usage[] =
    "usage: kz yardstick book --out FILE [--openings 500] [--seed S] [--depth 10]\n"
    "       kz yardstick positions --out FILE [--book F] [--count 1000] [--depth 8]\n"
    "       kz yardstick value MODEL [MODEL_B] --positions FILE [--compare 300]\n"
    "       kz yardstick ab MODEL_A MODEL_B [--anchor alphabeta:8] [--book F] [--pairs N]\n"
    "       kz yardstick diagnose MODEL [--anchor alphabeta:8] [--judge 12] [--book F]\n\n"
    "Measures of learning with less noise than a match score (docs/learning.md).\n"
    "book: the balanced openings among --openings candidates (make learn's book of\n"
    "--seed): those where alphabeta:DEPTH, playing both sides twice, gets the same\n"
    "result with either colour; writes them to --out with how they were made.\n"
    "positions: --count turn starts sampled from games of --players from the book,\n"
    "each labelled with the result of alphabeta:DEPTH playing both sides from it.\n"
    "value: a model's value head against those labels by phase (mean prediction,\n"
    "mean label, squared error, calibration by predicted value), and the share of\n"
    "positions where --low and --high simulations choose different moves; with two\n"
    "models, the paired difference of their squared errors. ab: both models play\n"
    "--anchor from the same openings with the same seeds, every opening with both\n"
    "colours; prints each one's pentanomial score and the paired difference with its\n"
    "95% interval (a MODEL may also be a player spec: mcts:FILE:800). diagnose: the\n"
    "model plays --anchor from the book; alphabeta:JUDGE scores the position before and\n"
    "after each of its turns; a drop of a man or more is an error. Prints errors and\n"
    "the points of the games not won (charged to the game's largest drop) by kind of\n"
    "position, and how many errors --recheck budgets of the same network avoid.\n";

/* CPU seconds of the whole process (every thread). */
static double s_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int s_threads(long t)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long n = t ? t : (cores > 0 ? cores : 1);
    return (int)(n > 64 ? 64 : n);
}

/* A threaded measure's jobs (openings, games), handed out one at a time by
 * s_take; after a failure (s_fail) no more. */
typedef struct job_queue {
    pthread_mutex_t lock;
    int n, next;  /* jobs in all; the next one handed out */
    int failed;   /* a job or a thread's setup failed */
} job_queue;

/* The next job of q, or -1 when all are handed out or one failed. */
static int s_take(job_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int i = q->failed || q->next >= q->n ? -1 : q->next++;
    pthread_mutex_unlock(&q->lock);
    return i;
}

/* Stops q after a failure, said on stderr ("kz yardstick SUB: what") by the
 * first failure only. */
static void s_fail(job_queue *q, const char *sub, const char *what)
{
    pthread_mutex_lock(&q->lock);
    if (!q->failed)
        fprintf(stderr, "kz yardstick %s: %s\n", sub, what);
    q->failed = 1;
    pthread_mutex_unlock(&q->lock);
}

/* Runs run(arg) on --threads threads (s_threads) and waits for them all. */
static void s_run_threads(long threads, void *(*run)(void *), void *arg)
{
    int n = s_threads(threads);
    pthread_t t[64];
    for (int k = 0; k < n; k++)
        pthread_create(&t[k], NULL, run, arg);
    for (int k = 0; k < n; k++)
        pthread_join(t[k], NULL);
}

/* The command line's words joined by spaces, for a file's header. */
static void s_cmdline(int argc, char **argv, char *out, size_t len)
{
    out[0] = 0;
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", i ? " " : "", argv[i]);
    }
}

/* The openings: from --book, or make learn's generated book. */
static int s_openings(const game_def *g, const yard_opts *o, game_state **out, int *n)
{
    if (o->book[0])
        return kz_read_book("yardstick", g, o->book, out, n);
    *n = (int)o->openings;
    *out = xmalloc((size_t)*n * sizeof **out);
    if (match_openings(g, *n, 0, (uint64_t)o->seed, *out)) {
        fprintf(stderr, "kz yardstick: cannot make %d openings from seed %ld\n", *n, o->seed);
        free(*out);
        return 1;
    }
    return 0;
}

/* ---- book ------------------------------------------------------------------------------ */

typedef struct book_work {
    const game_def *g;
    const yard_opts *o;
    const game_state *cand;
    job_queue q;
    int *verdict;  /* 1 balanced, 0 not, <0 error */
    int (*r)[2];
    long plies;
} book_work;

static void *s_book_thread(void *arg)
{
    book_work *w = arg;
    player *deep = player_alphabeta_new(w->g, (int)w->o->depth);
    for (int i; (i = s_take(&w->q)) >= 0;) {
        int plies = 0;
        uint64_t seed = mix64((uint64_t)w->o->seed + 2 * (uint64_t)i);
        w->verdict[i] = yard_balance(w->g, deep, &w->cand[i], seed, w->r[i], &plies);
        pthread_mutex_lock(&w->q.lock);
        w->plies += plies;
        pthread_mutex_unlock(&w->q.lock);
    }
    player_destroy(&deep);
    return NULL;
}

static int s_book(const game_def *g, const yard_opts *o, int argc, char **argv)
{
    if (!o->out[0])
        return kz_usage_error("yardstick book: give --out FILE");
    game_state *cand;
    int n;
    yard_opts gen = *o;
    gen.book[0] = 0;
    int rc = s_openings(g, &gen, &cand, &n);
    if (rc)
        return rc;
    book_work w = {g, o, cand, {PTHREAD_MUTEX_INITIALIZER, n, 0, 0},
                   xcalloc((size_t)n, sizeof(int)), xcalloc((size_t)n, sizeof(int[2])), 0};
    double t0 = time_now(), c0 = s_cpu();
    s_run_threads(o->threads, s_book_thread, &w);
    double cpu = s_cpu() - c0;
    game_state *keep = xmalloc((size_t)n * sizeof *keep);
    int kept = 0, dd = 0, split = 0, colour = 0, half = 0;
    for (int i = 0; i < n; i++) {
        if (w.verdict[i] < 0) {
            fprintf(stderr, "kz yardstick book: opening %d: %s\n", i, err_str(w.verdict[i]));
            return 1;
        }
        int a = w.r[i][0], b = w.r[i][1];
        if (w.verdict[i]) {
            keep[kept++] = cand[i];
            dd += a == 0;
            split += a != 0;
        } else if (a == b) {
            colour++;
        } else {
            half++;
        }
    }
    char header[2048], cmdline[1024];
    s_cmdline(argc, argv, cmdline, sizeof cmdline);
    snprintf(header, sizeof header,
             "Balanced openings of %s (play/yardstick.h): of %d candidates (match_openings, seed "
             "%ld: make learn's book), those where alphabeta:%ld playing both sides twice gets\n"
             "the same result with either colour. Made by: kz yardstick %s\n"
             "Kept %d: %d drawn twice, %d won once by each colour. Dropped %d: %d won twice by "
             "one colour, %d won once and drawn once.\n"
             "%.1f turns per game, %.3f CPU-seconds per game of alphabeta:%ld.",
             g->name, n, o->seed, o->depth, cmdline, kept, dd, split, n - kept, colour, half,
             (double)w.plies / (2.0 * n), cpu / (2.0 * n), o->depth);
    rc = yard_write(g, o->out, header, keep, NULL, kept);
    printf("%s\n", header);
    printf("(%.0f s wall, %.0f CPU-s) -> %s\n", time_now() - t0, cpu, o->out);
    free_all(keep, w.verdict, w.r, cand);
    if (rc) {
        fprintf(stderr, "kz yardstick book: cannot write %s\n", o->out);
        return 1;
    }
    return 0;
}

/* ---- positions --------------------------------------------------------------------------- */

static int s_positions(const game_def *g, const yard_opts *o, int argc, char **argv)
{
    if (!o->out[0])
        return kz_usage_error("yardstick positions: give --out FILE");
    game_state *book;
    int nb;
    int rc = s_openings(g, o, &book, &nb);
    if (rc)
        return rc;
    char err[512];
    player *p = player_from_spec(g, o->players, err, sizeof err);
    if (!p) {
        free(book);
        return kz_usage_error("yardstick positions: players: %s", err);
    }
    player *deep = player_alphabeta_new(g, (int)o->depth);
    int want = (int)o->count, got = 0, counts[3] = {0, 0, 0}, by_phase[YARD_PHASES] = {0};
    game_state *out = xmalloc((size_t)want * sizeof *out);
    int8_t *z = xmalloc((size_t)want);
    double t0 = time_now(), c0 = s_cpu();
    uint64_t game = 0;
    while (got < want && rc == 0) {
        game_state s = book[game % (uint64_t)nb];
        uint64_t seed = mix64((uint64_t)o->seed ^ (0x706f73ull + game));
        player_new_game(p, seed);
        int offset = (int)(mix64(seed) % (uint64_t)o->every), turn = 0;
        while (!g->result(&s).over && got < want) {
            uint16_t legal[GAME_MAX_LEGAL];
            if (!g->mid_turn(&s) && turn++ % o->every == offset &&
                g->legal_actions(&s, legal) > 1) {
                player *both[2] = {deep, deep};
                game_result res;
                if ((rc = match_play_game(g, both, &s, mix64(seed + (uint64_t)turn), &res, NULL,
                                          NULL)))
                    break;
                out[got] = s;
                z[got] = (int8_t)game_result_for(res, g->to_move(&s));
                counts[z[got] + 1]++;
                by_phase[yard_phase(g, &s)]++;
                got++;
            }
            int a;
            if ((rc = player_choose(p, &s, &a, NULL)))
                break;
            g->apply(&s, a);
        }
        game++;
    }
    double cpu = s_cpu() - c0;
    player_destroy(&p);
    player_destroy(&deep);
    if (rc) {
        fprintf(stderr, "kz yardstick positions: %s\n", err_str(rc));
        free(book), free(out), free(z);
        return 1;
    }
    char header[2048], cmdline[1024];
    s_cmdline(argc, argv, cmdline, sizeof cmdline);
    snprintf(header, sizeof header,
             "Labelled positions of %s (play/yardstick.h): POSITION<TAB>z, z the result from the "
             "mover's view\nof alphabeta:%ld playing both sides from it. Sampled one turn start "
             "in %ld (more than one legal action)\nfrom %" PRIu64 " games of %s against itself "
             "from %s.\nMade by: kz yardstick %s\n"
             "Labels: %d wins, %d draws, %d losses; phases: %d opening, %d middle, %d ending. "
             "%.1f CPU-s.",
             g->name, o->depth, o->every, game, o->players,
             o->book[0] ? o->book : "make learn's generated book", cmdline, counts[2], counts[1],
             counts[0], by_phase[0], by_phase[1], by_phase[2], cpu);
    rc = yard_write(g, o->out, header, out, z, got);
    printf("%s\n(%.0f s wall) -> %s\n", header, time_now() - t0, o->out);
    free(book), free(out), free(z);
    return rc ? 1 : 0;
}

/* ---- value ------------------------------------------------------------------------------- */

static int s_value_one(const game_def *g, const yard_opts *o, const char *model_path,
                       const game_state *s, const int8_t *z, int n, double *errs)
{
    char spec[PLAYER_SPEC_MAX + PATH_MAX], err[512];
    snprintf(spec, sizeof spec, "policy:%s", model_path);
    player *net = player_from_spec(g, spec, err, sizeof err), *lo = NULL, *hi = NULL;
    if (net && o->compare > 0) {
        snprintf(spec, sizeof spec, "mcts:%s:%ld", model_path, o->low);
        lo = player_from_spec(g, spec, err, sizeof err);
        snprintf(spec, sizeof spec, "mcts:%s:%ld", model_path, o->high);
        hi = lo ? player_from_spec(g, spec, err, sizeof err) : NULL;
    }
    if (!net || (o->compare > 0 && !hi)) {
        player_destroy(&net), player_destroy(&lo);
        return kz_usage_error("yardstick value: %s", err);
    }
    yard_value v;
    double t0 = time_now();
    int rc = yard_value_measure(g, net, lo, hi, s, z, n, (int)o->compare, errs, &v);
    player_destroy(&net), player_destroy(&lo), player_destroy(&hi);
    if (rc) {
        fprintf(stderr, "kz yardstick value: %s: %s\n", model_path, err_str(rc));
        return 1;
    }
    printf("%s: the value head on %d labelled positions (%.0f s)\n", model_path, n,
           time_now() - t0);
    char text[4096];
    yard_value_format(&v, (int)o->low, (int)o->high, text, sizeof text);
    fputs(text, stdout);
    return 0;
}

static int s_value(const game_def *g, const yard_opts *o, int nw, const char **words)
{
    if (nw < 1 || nw > 2)
        return kz_usage_error("yardstick value: give MODEL or MODEL_A MODEL_B");
    if (!o->positions[0])
        return kz_usage_error("yardstick value: give --positions FILE (kz yardstick positions)");
    game_state *s = xmalloc(YARD_MAX_BOOK * sizeof *s);
    int8_t *z = xmalloc(YARD_MAX_BOOK);
    int n;
    char err[512];
    if (yard_read(g, o->positions, s, z, YARD_MAX_BOOK, &n, err, sizeof err)) {
        free(s), free(z);
        fprintf(stderr, "kz yardstick value: %s\n", err);
        return 2;
    }
    double *e[2] = {xmalloc((size_t)n * sizeof(double)), xmalloc((size_t)n * sizeof(double))};
    int rc = 0;
    for (int k = 0; k < nw && !rc; k++)
        rc = s_value_one(g, o, words[k], s, z, n, e[k]);
    if (!rc && nw == 2) {
        double sd = 0, sdd = 0;
        for (int i = 0; i < n; i++) {
            double d = e[0][i] - e[1][i];
            sd += d, sdd += d * d;
        }
        double m = sd / n, var = n > 1 ? (sdd - sd * sd / n) / (n - 1) : 0;
        double h = MATCH_Z95 * sqrt(var / n);
        printf("paired: mse(A) - mse(B) = %+.4f (95%% %+.4f .. %+.4f) over the same %d "
               "positions\n", m, m - h, m + h, n);
    }
    free(e[0]), free(e[1]), free(s), free(z);
    return rc;
}

/* ---- ab ---------------------------------------------------------------------------------- */

/* Whether a MODEL word is a player spec already (mcts:..., gumbel:..., policy:...). */
static bool s_is_spec(const char *w)
{
    return !strncmp(w, "mcts:", 5) || !strncmp(w, "gumbel:", 7) || !strncmp(w, "policy:", 7);
}

typedef struct ab_work {
    const game_def *g;
    const yard_opts *o;
    const char *model[2];
    const game_state *book;
    int pairs;
    job_queue q;  /* the games: 2 models x 2 colours x pairs */
    int *res;     /* [model][game] +1/0/-1 from the model's view, 2 unplayed */
    long plies[2];
} ab_work;

static void *s_ab_thread(void *arg)
{
    ab_work *w = arg;
    player *pl[2] = {NULL, NULL}, *anchor = NULL;
    char err[512], spec[PLAYER_SPEC_MAX + PATH_MAX];
    int sims = (int)(w->o->simulations ? w->o->simulations : w->g->simulations);
    for (int m = 0; m < 2; m++) {
        if (s_is_spec(w->model[m]))
            snprintf(spec, sizeof spec, "%s", w->model[m]);
        else
            snprintf(spec, sizeof spec, "mcts:%s:%d", w->model[m], sims);
        pl[m] = player_from_spec(w->g, spec, err, sizeof err);
    }
    anchor = player_from_spec(w->g, w->o->anchor, err, sizeof err);
    if (!pl[0] || !pl[1] || !anchor)
        s_fail(&w->q, "ab", err);
    for (int i; (i = s_take(&w->q)) >= 0;) {
        /* Interleaved: game 4k + 2m + c is model m, opening k, colour c. */
        int k = i / 4, m = (i / 2) % 2, c = i % 2, game = 2 * k + c, plies = 0;
        player *order[2] = {c ? anchor : pl[m], c ? pl[m] : anchor};
        game_result res;
        int rc = match_play_game(w->g, order, &w->book[k],
                                 mix64((uint64_t)w->o->seed + (uint64_t)game), &res, &plies, NULL);
        if (rc) {
            snprintf(err, sizeof err, "%s: %s", w->model[m], err_str(rc));
            s_fail(&w->q, "ab", err);
            continue;
        }
        pthread_mutex_lock(&w->q.lock);
        w->res[m * 2 * w->pairs + game] = game_result_for(res, c);
        w->plies[m] += plies;
        pthread_mutex_unlock(&w->q.lock);
    }
    player_destroy(&pl[0]), player_destroy(&pl[1]), player_destroy(&anchor);
    return NULL;
}

/* The start of ab and diagnose (cmd): every player spec made once (bad input
 * is said before any game), the openings in *book (the caller frees them) and
 * the pairs to play, --pairs but at most the openings. 0, or the exit status. */
static int s_pairs_start(const game_def *g, const yard_opts *o, const char *cmd,
                         const char *const *specs, int n, game_state **book, int *pairs)
{
    char err[512];
    for (int k = 0; k < n; k++) {
        player *p = player_from_spec(g, specs[k], err, sizeof err);
        if (!p)
            return kz_usage_error("%s: %s", cmd, err);
        player_destroy(&p);
    }
    int nb;
    int rc = s_openings(g, o, book, &nb);
    if (rc)
        return rc;
    *pairs = o->pairs && o->pairs < nb ? (int)o->pairs : nb;
    return 0;
}

static int s_ab(const game_def *g, const yard_opts *o, int nw, const char **words)
{
    if (nw != 2)
        return kz_usage_error("yardstick ab: give MODEL_A MODEL_B");
    char sa[PLAYER_SPEC_MAX + PATH_MAX], sb[PLAYER_SPEC_MAX + PATH_MAX];
    snprintf(sa, sizeof sa, s_is_spec(words[0]) ? "%s" : "policy:%s", words[0]);
    snprintf(sb, sizeof sb, s_is_spec(words[1]) ? "%s" : "policy:%s", words[1]);
    const char *specs[3] = {sa, sb, o->anchor};
    game_state *book;
    int pairs;
    int rc = s_pairs_start(g, o, "yardstick ab", specs, 3, &book, &pairs);
    if (rc)
        return rc;
    ab_work w = {g, o, {words[0], words[1]}, book, pairs,
                 {PTHREAD_MUTEX_INITIALIZER, 4 * pairs, 0, 0},
                 xmalloc((size_t)4 * pairs * sizeof(int)), {0, 0}};
    for (int i = 0; i < 4 * pairs; i++)
        w.res[i] = 2;
    double t0 = time_now();
    s_run_threads(o->threads, s_ab_thread, &w);
    if (w.q.failed) {
        free(w.res), free(book);
        return 1;
    }
    int *half[2] = {xmalloc((size_t)pairs * sizeof(int)), xmalloc((size_t)pairs * sizeof(int))};
    printf("ab: A = %s, B = %s against %s, %d openings (%s) x 2 colours, the same seeds, "
           "%.1f minutes\n", words[0], words[1], o->anchor, pairs,
           o->book[0] ? o->book : "generated", (time_now() - t0) / 60);
    for (int m = 0; m < 2; m++) {
        int penta[MATCH_PENTA] = {0}, wdl[3] = {0, 0, 0};
        for (int k = 0; k < pairs; k++) {
            int r1 = w.res[m * 2 * pairs + 2 * k], r2 = w.res[m * 2 * pairs + 2 * k + 1];
            match_penta_add(penta, r1, r2);
            half[m][k] = 2 + r1 + r2;
            wdl[1 - r1]++, wdl[1 - r2]++;
        }
        match_stats st;
        match_penta_stats(penta, &st);
        printf("  %s %s: %.3f +/- %.3f (+%d =%d -%d; pairs LL/LD/DD+WL/WD/WW %d/%d/%d/%d/%d; "
               "%.1f turns/game)\n", m ? "B" : "A", words[m], st.score, st.score_hi - st.score,
               wdl[0], wdl[1], wdl[2], penta[0], penta[1], penta[2], penta[3], penta[4],
               (double)w.plies[m] / (2.0 * pairs));
    }
    yard_paired pd;
    yard_paired_compute(half[0], half[1], pairs, &pd);
    int same = 0;
    for (int k = 0; k < pairs; k++)
        same += half[0][k] == half[1][k];
    printf("  paired: A - B = %+.3f (95%% %+.3f .. %+.3f), Elo %+.0f (%+.0f .. %+.0f); "
           "%d of %d pairs scored alike\n", pd.diff, pd.lo, pd.hi, pd.elo, pd.elo_lo, pd.elo_hi,
           same, pairs);
    free(half[0]), free(half[1]), free(w.res), free(book);
    return 0;
}

/* ---- diagnose ---------------------------------------------------------------------------- */

enum { D_OPEN, D_MIDDLE, D_END, D_KINGS, D_CAPTURE, D_MAJORITY, D_LONG, D_QUIET, D_ALL, D_N };
static const char *const s_dname[D_N] = {
    "opening (>16 pieces)", "middle (9-16)", "ending (<=8)", "king ending (<=8, a king)",
    "capture turn", "majority choice", "long chain (>=2 taken)", "quiet move", "all"};
#define D_CAP 1000   /* judge scores are capped at 10 men (a forced result counts so) */
#define D_ERROR 100  /* a drop of a man or more is an error */
#define D_MAX_RECHECK 4

typedef struct diag_work {
    const game_def *g;
    const yard_opts *o;
    const char *model;
    const game_state *book;
    int pairs, sims, n_re, re[D_MAX_RECHECK];
    job_queue q; /* the games: 2 colours x pairs */
    long turns[D_N], errors[D_N], fixed[D_MAX_RECHECK][D_N];
    double drop[D_N], points[D_N], lost, unexplained;
    int games, wdl[3];
} diag_work;

static long s_judge(const game_def *g, const game_state *s, int depth)
{
    int a;
    long score;
    player_alphabeta_search(g, s, depth, true, &a, &score);
    return score > D_CAP ? D_CAP : score < -D_CAP ? -D_CAP : score;
}

/* The judge's score, from the view of `mover`, of the turn start t reached
 * after mover's turn (over or the other side to move). */
static long s_after(const game_def *g, const game_state *t, int mover, int depth)
{
    game_result r = g->result(t);
    if (r.over)
        return r.winner < 0 ? 0 : r.winner == mover ? D_CAP : -D_CAP;
    long v = s_judge(g, t, depth);
    return g->to_move(t) == mover ? v : -v;
}

/* Plays p's whole turn from s into *t; the hops taken in *hops. */
static int s_turn(const game_def *g, player *p, const game_state *s, game_state *t, int *hops)
{
    *t = *s;
    int mover = g->to_move(s), rc = 0;
    *hops = 0;
    do {
        int a;
        if ((rc = player_choose(p, t, &a, NULL)))
            return rc;
        if (!game_is_legal(g, t, a))
            return KZ_EILLEGAL;
        player_observe(p, t, a);
        g->apply(t, a);
        (*hops)++;
    } while (!g->result(t).over && g->mid_turn(t) && g->to_move(t) == mover);
    return 0;
}

/* The pieces a side must take at turn start t (0 when it need not capture):
 * every legal sequence takes the most (R8), so any one of them is counted. */
static int s_forced_chain(const game_def *g, const game_state *t)
{
    if (g->result(t).over || !player_must_capture(g, t))
        return 0;
    game_state u = *t;
    int mover = g->to_move(t), n = 0;
    do {
        uint16_t legal[GAME_MAX_LEGAL];
        if (g->legal_actions(&u, legal) < 1)
            break;
        g->apply(&u, legal[0]);
        n++;
    } while (!g->result(&u).over && g->mid_turn(&u) && g->to_move(&u) == mover);
    return n;
}

static bool s_has_king(const game_def *g, const game_state *s)
{
    char pos[512];
    g->format_position(s, pos, sizeof pos);
    for (const char *p = pos; *p && *p != ' '; p++)
        if (*p >= 'A' && *p <= 'Z')
            return true;
    return false;
}

static void *s_diag_thread(void *arg)
{
    diag_work *w = arg;
    const game_def *g = w->g;
    char err[512], spec[PLAYER_SPEC_MAX + PATH_MAX];
    snprintf(spec, sizeof spec, "mcts:%s:%d", w->model, w->sims);
    player *me = player_from_spec(g, spec, err, sizeof err);
    player *anchor = me ? player_from_spec(g, w->o->anchor, err, sizeof err) : NULL;
    player *re[D_MAX_RECHECK] = {NULL};
    for (int k = 0; k < w->n_re && anchor; k++) {
        snprintf(spec, sizeof spec, "mcts:%s:%d", w->model, w->re[k]);
        re[k] = player_from_spec(g, spec, err, sizeof err);
    }
    if (!me || !anchor || (w->n_re && !re[w->n_re - 1]))
        s_fail(&w->q, "diagnose", err);
    int depth = (int)w->o->judge;
    for (int i; (i = s_take(&w->q)) >= 0;) {
        long turns[D_N] = {0}, errors[D_N] = {0}, fixed[D_MAX_RECHECK][D_N] = {{0}};
        double drop[D_N] = {0};
        int worst_cats[D_N], n_worst = 0;
        long worst = 0;
        game_state s = w->book[i / 2];
        int mine = i % 2; /* game 2k: the model is player 0 (as in ab and make learn) */
        uint64_t seed = mix64((uint64_t)w->o->seed + (uint64_t)i);
        player_new_game(me, seed);
        player_new_game(anchor, mix64(seed ^ 0x9e3779b97f4a7c15ull));
        int rc = 0;
        game_result res;
        while (!(res = g->result(&s)).over && !rc) {
            if (g->to_move(&s) != mine) {
                game_state t;
                int hops;
                if ((rc = s_turn(g, anchor, &s, &t, &hops)))
                    break;
                s = t; /* the model searches each turn afresh (player_new_game below) */
                player_new_game(me, mix64(seed + (uint64_t)g->ply(&s)));
                continue;
            }
            int cats[D_N], nc = 0;
            int pieces = yard_pieces(g, &s);
            cats[nc++] = pieces > 16 ? D_OPEN : pieces > 8 ? D_MIDDLE : D_END;
            if (pieces <= 8 && s_has_king(g, &s))
                cats[nc++] = D_KINGS;
            uint16_t legal[GAME_MAX_LEGAL];
            int n_legal = g->legal_actions(&s, legal);
            bool capture = player_must_capture(g, &s);
            cats[nc++] = capture ? D_CAPTURE : D_QUIET;
            if (capture && n_legal > 1)
                cats[nc++] = D_MAJORITY;
            long before = s_judge(g, &s, depth);
            game_state t;
            int hops;
            if ((rc = s_turn(g, me, &s, &t, &hops)))
                break;
            if ((capture && hops >= 2) || s_forced_chain(g, &t) >= 2)
                cats[nc++] = D_LONG;
            cats[nc++] = D_ALL;
            long d = before - s_after(g, &t, mine, depth);
            bool error = n_legal > 1 && d >= D_ERROR;
            for (int c = 0; c < nc; c++) {
                turns[cats[c]]++;
                drop[cats[c]] += d > 0 ? (double)d : 0.0;
                errors[cats[c]] += error;
            }
            if (error && d > worst) {
                worst = d;
                memcpy(worst_cats, cats, sizeof cats);
                n_worst = nc;
            }
            for (int k = 0; error && k < w->n_re; k++) {
                game_state r2;
                int h2;
                player_new_game(re[k], seed + (uint64_t)g->ply(&s));
                if ((rc = s_turn(g, re[k], &s, &r2, &h2)))
                    break;
                bool ok = before - s_after(g, &r2, mine, depth) < D_ERROR;
                for (int c = 0; c < nc; c++)
                    fixed[k][cats[c]] += ok;
            }
            s = t;
            player_new_game(me, mix64(seed + (uint64_t)g->ply(&s)));
        }
        if (rc) {
            s_fail(&w->q, "diagnose", err_str(rc));
            continue;
        }
        pthread_mutex_lock(&w->q.lock);
        int r = game_result_for(res, mine);
        double lost = r > 0 ? 0 : r == 0 ? 0.5 : 1;
        w->games++;
        w->wdl[1 - r]++;
        w->lost += lost;
        if (lost > 0 && n_worst == 0)
            w->unexplained += lost;
        for (int c = 0; c < n_worst; c++)
            w->points[worst_cats[c]] += lost;
        for (int c = 0; c < D_N; c++) {
            w->turns[c] += turns[c];
            w->errors[c] += errors[c];
            w->drop[c] += drop[c];
            for (int k = 0; k < w->n_re; k++)
                w->fixed[k][c] += fixed[k][c];
        }
        pthread_mutex_unlock(&w->q.lock);
    }
    player_destroy(&me), player_destroy(&anchor);
    for (int k = 0; k < w->n_re; k++)
        player_destroy(&re[k]);
    return NULL;
}

static int s_diagnose(const game_def *g, const yard_opts *o, int nw, const char **words)
{
    if (nw != 1)
        return kz_usage_error("yardstick diagnose: give one MODEL");
    char sm[PLAYER_SPEC_MAX + PATH_MAX];
    snprintf(sm, sizeof sm, "policy:%s", words[0]);
    const char *specs[2] = {sm, o->anchor};
    game_state *book;
    int pairs;
    int rc = s_pairs_start(g, o, "yardstick diagnose", specs, 2, &book, &pairs);
    if (rc)
        return rc;
    diag_work *w = xcalloc(1, sizeof *w);
    *w = (diag_work){.g = g, .o = o, .model = words[0], .book = book, .pairs = pairs,
                     .q.n = 2 * pairs,
                     .sims = (int)(o->simulations ? o->simulations : g->simulations)};
    pthread_mutex_init(&w->q.lock, NULL);
    char buf[CONFIG_STR_MAX];
    snprintf(buf, sizeof buf, "%s", o->recheck);
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t && w->n_re < D_MAX_RECHECK;
         t = strtok_r(NULL, ", ", &save)) {
        long v;
        if (parse_long(t, 1, PLAYER_MAX_SIMS, &v)) {
            free(book), free(w);
            return kz_usage_error("yardstick diagnose: recheck: '%s' is not a budget", t);
        }
        w->re[w->n_re++] = (int)v;
    }
    double t0 = time_now();
    s_run_threads(o->threads, s_diag_thread, w);
    if (w->q.failed) {
        free(book), free(w);
        return 1;
    }
    printf("diagnose: %s at %d simulations against %s, %d games (%d openings of %s x 2 "
           "colours): +%d =%d -%d; judge alphabeta:%ld; %.1f minutes\n",
           words[0], w->sims, o->anchor, w->games, w->pairs, o->book[0] ? o->book : "generated",
           w->wdl[0], w->wdl[1], w->wdl[2], o->judge, (time_now() - t0) / 60);
    printf("  an error: the judge's score drops by %d or more (a man = 100, a forced result "
           "%d) over the model's turn, where it had a choice\n", D_ERROR, D_CAP);
    printf("  %-26s %6s %6s %7s %9s %7s", "kind of turn", "turns", "errors", "rate", "drop/turn",
           "points");
    for (int k = 0; k < w->n_re; k++)
        printf("  fixed@%-5d", w->re[k]);
    printf("\n");
    for (int c = 0; c < D_N; c++) {
        long n = w->turns[c];
        printf("  %-26s %6ld %6ld %6.1f%% %9.1f %7.1f", s_dname[c], n, w->errors[c],
               n ? 100.0 * w->errors[c] / n : 0.0, n ? w->drop[c] / n : 0.0,
               c == D_ALL ? w->lost : w->points[c]);
        for (int k = 0; k < w->n_re; k++)
            printf("  %4ld (%3.0f%%)", w->fixed[k][c],
                   w->errors[c] ? 100.0 * w->fixed[k][c] / w->errors[c] : 0.0);
        printf("\n");
    }
    printf("  points: lost in the games not won (a loss 1, a draw 0.5), each charged to every "
           "kind of its largest error; %.1f with no error found\n", w->unexplained);
    free(book), free(w);
    return 0;
}

int cmd_yardstick(int argc, char **argv)
{
    static const char *const subs[] = {"book", "positions", "value", "ab", "diagnose"};
    static const kz_subcommands c = {"yardstick", subs, sizeof subs / sizeof subs[0], s_usage,
                                     s_rows, N_ROWS};
    yard_opts o;
    const char *words[argc];
    size_t nw;
    char cmd[32];
    int rc = kz_subcommand_parse(&c, &o, argc, argv, words, &nw, cmd, sizeof cmd);
    if (rc >= 0)
        return rc;
    const char *sub = argv[1];
    const game_def *g = kz_game(cmd, o.game);
    if (!g)
        return 2;
    if ((!strcmp(sub, "book") || !strcmp(sub, "positions")) && nw > 0)
        return kz_usage_error("%s: unexpected argument '%s'", cmd, words[0]);
    model_set_threads(1);
    if (!strcmp(sub, "book"))
        return s_book(g, &o, argc - 1, argv + 1);
    if (!strcmp(sub, "positions"))
        return s_positions(g, &o, argc - 1, argv + 1);
    if (!strcmp(sub, "value"))
        return s_value(g, &o, (int)nw, words);
    if (!strcmp(sub, "diagnose"))
        return s_diagnose(g, &o, (int)nw, words);
    return s_ab(g, &o, (int)nw, words);
}
