/* bench_learning: how strong the cluster's best model gets in a given time,
 * measured against fixed opponents (`make learn`).
 *
 * Step 1. Runs the cluster exactly as `make run` starts it (tools/run.sh:
 *         a coordinator, the workers and a trainer with make run's settings)
 *         from scratch in a fresh data directory, for --minutes of wall-clock
 *         time (or until the cluster's processes have used --cpu_minutes of
 *         CPU, which makes A/B runs on a shared machine comparable). Extra
 *         settings for an A/B run go to the programs as flags
 *         (--coordinator, --worker, --trainer: "key=value key=value").
 * Step 2. Every --snapshot_minutes it fetches the current best model from the
 *         coordinator (ModelRequest, as a worker does) and keeps it, with the
 *         games, training steps and best version at that time. Nothing is
 *         rated while the cluster runs, so measuring costs the run no CPU.
 * Step 3. After the stop, every snapshot plays the --curve_anchors and the
 *         final best plays the --anchors, each from the same book of
 *         openings (match_openings with a fixed seed), every opening once
 *         with each colour: this game's second player wins most games between
 *         equal players, so only pairs are scored (pentanomial, match.h).
 *         Prints a line per rating point and the final scores with 95%
 *         intervals. Backgammon: the anchors are gnubg's levels (unless
 *         given), every game starts from the start position and a pair's two
 *         games have the same dice (duplicate dice); each match is also
 *         scored in points per game (+-1/2/3) with a 95% interval over the
 *         pairs, and gnubg at --judge (default expert) rates every whole move
 *         with a choice: the model's (and the anchor's) equity lost per
 *         decision in millipoints, with its interval over the pairs
 *         (match_ratio), PR (half of it) and the races' share of the loss.
 * Step 4. Khreibaga, unless --perfect 0: the final best's perfect-play
 *         accuracy (kz solve accuracy, play/referee.h) on the coordinator's
 *         book's first --perfect openings: the share of its policy's and its
 *         search's whole turns that keep the proven value.
 * Step 4b. Khreibaga, with --referee_book: the final best (at --simulations)
 *         against --referee_anchor from that book, every whole turn judged
 *         against the proven values (`kz solve referee --match`, run as a
 *         program; docs/solve.md): value-losing turns a game by phase.
 * Step 5. With --tb_dir (endgame tables, kz tb build), the final best's
 *         endgame accuracy as `kz tb accuracy` measures it: the share of
 *         value-keeping moves of its raw policy and of its 200-simulation
 *         search on the tables' fixed test set (docs/tablebase.md).
 *
 * Everything is kept under --dir (default build/learn-<time>): the cluster's
 * data and logs (var/), the snapshots, results.txt, a copy of what was
 * printed, and the same figures as curve.csv and results.json
 * (tools/learn_compare.sh puts runs side by side).
 *
 *   build/bench_learning [--minutes=30] [--anchors=...] [--pairs=50] ...
 *   (--help lists the settings; exit status 1 if the cluster fails, 2 bad usage) */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "common/config.h"
#include "games/game.h"
#include "games/backgammon.h"
#include "play/match.h"
#include "play/referee.h"
#include "nn/model.h"
#include "search/player.h"
#include "play/rating.h"
#include "play/yardstick.h"
#include "play/scale.h"
#include "games/tablebase.h"
#include "search/gnubg.h"
#include "common/util.h"

#define MAX_SNAPSHOTS 256
#define MAX_ANCHORS 16

typedef struct learn_config {
    char game[CONFIG_STR_MAX];         /* the game (make run's KZ_GAME) */
    double minutes;                    /* wall-clock length of the run */
    double cpu_minutes;                /* stop at this much cluster CPU instead (0 = off) */
    double snapshot_minutes;           /* period of the best-model snapshots */
    char dir[CONFIG_STR_MAX];          /* where everything is kept */
    long workers;                      /* KZ_WORKERS */
    long blocks, filters, value_hidden;/* first network's shape */
    long opp_policy_filters;           /* first network's auxiliary opponent-policy head */
    long material_filters;             /* first network's auxiliary material head */
    bool value_wdl;                    /* first network's win/draw/loss value head */
    char derived_planes[CONFIG_STR_MAX]; /* KZ_DERIVED_PLANES, "" = make run's default */
    char coordinator[CONFIG_STR_MAX];  /* extra coordinator flags */
    char worker[CONFIG_STR_MAX];       /* extra worker flags */
    char trainer[CONFIG_STR_MAX];      /* extra trainer flags */
    char anchors[CONFIG_STR_MAX];      /* opponents of the final best */
    char curve_anchors[CONFIG_STR_MAX];/* opponents of every snapshot */
    long pairs;                        /* openings (pairs) per final match */
    long curve_pairs;                  /* openings (pairs) per snapshot match */
    long simulations;                  /* the model's simulations in the matches */
    long threads;                      /* match threads (0 = one per core) */
    long seed;                         /* opening book seed */
    char run_script[CONFIG_STR_MAX];   /* tools/run.sh ("" = beside the build dir) */
    long progress_s;                   /* seconds between progress lines */
    char rate_only[CONFIG_STR_MAX];    /* skip the run: rate this directory's snapshots */
    char tb_dir[CONFIG_STR_MAX];       /* endgame tables: the final best's accuracy, "" = skip */
    long tb_positions;                 /* their test positions */
    long perfect;                      /* Khreibaga: perfect-play accuracy positions, 0 = skip */
    char book[CONFIG_STR_MAX];         /* openings from this book file ("" = generated) */
    char positions[CONFIG_STR_MAX];    /* labelled positions: the value head, "" = skip */
    long compare;                      /* of them, where 200 and 1600 simulations are compared */
    char judge[CONFIG_STR_MAX];        /* backgammon: gnubg's level rating the model's moves */
    char referee_book[CONFIG_STR_MAX]; /* Khreibaga: the referee's openings ("" = skip) */
    char referee_anchor[CONFIG_STR_MAX]; /* its opponent */
    long referee_games;                /* its games (0: every opening with both colours) */
} learn_config;

/* The anchors' defaults (Khreibaga's ladder), and backgammon's instead of them. */
#define LEARN_ANCHORS \
    "alphabeta:4,uct:1000,alphabeta:6,uct:8000,alphabeta:8,alphabeta:10,alphabeta:12"
#define LEARN_CURVE_ANCHORS "alphabeta:4,uct:1000"
#define LEARN_BG_ANCHORS "gnubg:beginner,gnubg:intermediate"
#define LEARN_BG_CURVE_ANCHORS "gnubg:beginner,gnubg:intermediate"

#define O(f) offsetof(learn_config, f)
#define CONFIG_STRUCT learn_config
static const config_option s_options[] = {
    CONFIG_ROW_STRING(game, GAME_DEFAULT_NAME, "the game the cluster learns (make run's KZ_GAME)"),
    CONFIG_ROW_DOUBLE(minutes, "30", 0.1, 10000, "wall-clock minutes of training"),
    CONFIG_ROW_DOUBLE(cpu_minutes, "0", 0, 1000000,
                      "stop when the cluster has used this many CPU-minutes instead (0 = use "
                      "minutes)"),
    CONFIG_ROW_DOUBLE(snapshot_minutes, "5", 0.1, 10000,
                      "keep the best model this often, for the curve"),
    CONFIG_ROW_STRING(dir, "",
                      "directory for the run's data, snapshots and results (\"\" = "
                      "build/learn-<time>)"),
    CONFIG_ROW_INT(workers, "2", 1, 64, "worker processes (make run's KZ_WORKERS)"),
    CONFIG_ROW_INT(blocks, "0", 0, 64, "first network: blocks (0 = make run's)"),
    CONFIG_ROW_INT(filters, "0", 0, 1024, "first network: filters (0 = make run's)"),
    CONFIG_ROW_INT(value_hidden, "0", 0, 4096, "first network: value head width (0 = make run's)"),
    CONFIG_ROW_INT(opp_policy_filters, "0", 0, 64,
                   "first network: auxiliary opponent-policy head's filters (0 = none; make run's "
                   "KZ_OPP_POLICY_FILTERS)"),
    CONFIG_ROW_INT(material_filters, "0", 0, 64,
                   "first network: auxiliary material head's filters (0 = none; "
                   "KZ_MATERIAL_FILTERS)"),
    CONFIG_ROW_BOOL(value_wdl, "false",
                    "first network: a win/draw/loss value head instead of tanh (KZ_VALUE_WDL)"),
    CONFIG_ROW_STRING(derived_planes, "",
                      "first network: the game's derived input planes, 0, 1 or auto "
                      "(KZ_DERIVED_PLANES; \"\" = make run's default)"),
    CONFIG_ROW_STRING(coordinator, "",
                      "extra kz-coordinator settings, \"key=value key=value\" (A/B runs)"),
    CONFIG_ROW_STRING(worker, "", "extra kz-worker settings, likewise"),
    CONFIG_ROW_STRING(trainer, "", "extra kz-trainer settings, likewise"),
    {"anchors", CONFIG_STRING, LEARN_ANCHORS, 0, 0, O(anchors),
     "opponents of the final best (player specs, comma-separated; backgammon: "
     LEARN_BG_ANCHORS " unless given)"},
    {"curve_anchors", CONFIG_STRING, LEARN_CURVE_ANCHORS, 0, 0, O(curve_anchors),
     "opponents of every snapshot (\"\" = no curve; backgammon: " LEARN_BG_CURVE_ANCHORS
     " unless given)"},
    CONFIG_ROW_INT(pairs, "50", 1, 10000,
                   "openings per final match, each played with both colours"),
    CONFIG_ROW_INT(curve_pairs, "20", 1, 10000,
                   "openings per snapshot match, each played with both colours"),
    CONFIG_ROW_INT(simulations, "0", 0, 100000,
                   "the model's MCTS simulations per move in the matches (0 = the game's: "
                   "Khreibaga 200)"),
    CONFIG_ROW_INT(threads, "0", 0, 64, "match threads (0 = one per core)"),
    CONFIG_ROW_INT(seed, "20261124", 1, 9007199254740991, "seed of the opening book"),
    CONFIG_ROW_STRING(run_script, "",
                      "make run's script (\"\" = tools/run.sh beside the build directory)"),
    CONFIG_ROW_INT(progress_s, "60", 1, 86400, "seconds between progress lines"),
    CONFIG_ROW_STRING(rate_only, "",
                      "no run: rate the snapshots kept in this earlier run's directory"),
    CONFIG_ROW_STRING(tb_dir, "",
                      "endgame tables (kz tb build): also the final best's accuracy on their test "
                      "set, as kz tb accuracy measures it (\"\" = skip)"),
    CONFIG_ROW_INT(tb_positions, "1000", 1, 1000000,
                   "tb_dir: test positions (kz tb accuracy --positions)"),
    CONFIG_ROW_INT(perfect, "100", 0, 500,
                   "Khreibaga: the final best's perfect-play accuracy (kz solve accuracy) on this "
                   "many of the coordinator's book's openings, with the tables of tb_dir if given "
                   "(0.1-0.3 s of CPU a position; 0 = skip)"),
    CONFIG_ROW_STRING(book, "",
                      "the openings, a book file (kz yardstick book: the balanced ones); \"\" = "
                      "--pairs openings generated from --seed"),
    CONFIG_ROW_STRING(positions, "",
                      "labelled positions (kz yardstick positions): the final best's value head "
                      "by phase and how often 200 and 1600 simulations choose differently (\"\" = "
                      "skip)"),
    CONFIG_ROW_INT(compare, "300", 0, 100000,
                   "positions: how many of them compare 200 with 1600 simulations"),
    CONFIG_ROW_STRING(judge, "expert",
                      "backgammon: the gnubg level (search/gnubg.h) that rates every whole move "
                      "of every match (equity lost per decision in millipoints, and PR, with 95% "
                      "intervals over the pairs of games); \"\" = none"),
    CONFIG_ROW_STRING(referee_book, "",
                      "Khreibaga: the final best against --referee_anchor from this book's "
                      "openings, each with both colours, every whole turn judged by perfect play "
                      "(kz solve referee, with tb_dir's tables): its value-losing turns a game "
                      "by phase (make learn: tools/bench/books/khreibaga-drawn.txt; \"\" = skip)"),
    CONFIG_ROW_STRING(referee_anchor, "alphabeta:8", "referee_book: the final best's opponent"),
    CONFIG_ROW_INT(referee_games, "0", 0, 100000,
                   "referee_book: games (0 = every opening with both colours)"),
};
#undef CONFIG_STRUCT
#define N_OPTIONS (sizeof s_options / sizeof s_options[0])

/* One kept best model. */
typedef struct snapshot {
    double minutes;      /* wall-clock minutes into the run */
    double cpu_minutes;  /* cluster CPU-minutes by then */
    uint64_t games;      /* games stored by then */
    uint64_t steps;      /* trainer steps by then */
    uint32_t version;    /* best version */
    char path[PATH_MAX]; /* model file */
} snapshot;

/* One game of a job in a game scored in points or judged (backgammon), side 0
 * the model, 1 the anchor. */
typedef struct game_rec {
    int points;          /* the model's points: +-1/2/3, 0 a draw */
    double loss[2];      /* the judge: equity lost at each side's decisions */
    int dec[2];          /* and those decisions (rolls with a choice) */
    double race_loss[2]; /* of them, in races (no contact at the roll) */
    int race_dec[2];
} game_rec;

/* One match of a model against an anchor, played pair by pair. */
typedef struct job {
    const char *model;   /* model file */
    const char *anchor;  /* player spec */
    int pairs;           /* openings used */
    int next;            /* next game to hand out (2 per opening) */
    int done;            /* games finished */
    int *result;         /* (2 * pairs) +1/0/-1 from the model's view, 2 = unplayed */
    game_rec *rec;       /* (2 * pairs) points and the judge's figures */
    int plies;           /* total turns over finished games */
    int failed;          /* a game failed: its error */
} job;

static const game_def *s_g;
static learn_config s_cfg;
static FILE *s_results;               /* results.txt */
static volatile sig_atomic_t s_stop;
static pid_t s_run_pid;
static game_state *s_book;            /* (max pairs) the opening book */
static job *s_jobs;                   /* (s_n_jobs) */
static int s_n_jobs, s_job_at;        /* jobs, the first with games to hand out */
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
/* The anchors' ratings as the cluster calibrated them (random = 0), read from
 * its /status at the end of the run (anchors.txt): the scale of the curve. */
static char s_scale_name[MAX_ANCHORS][64];
static double s_scale_elo[MAX_ANCHORS];
static int s_n_scale;

static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

/* Prints to stdout and results.txt. */
static void s_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void s_out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (s_results) {
        va_start(ap, fmt);
        vfprintf(s_results, fmt, ap);
        va_end(ap);
        fflush(s_results);
    }
}

static int s_free_port_pair(void)
{
    for (int tries = 0; tries < 50; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        int port = 0;
        if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &al) == 0)
            port = ntohs(a.sin_port);
        if (fd >= 0)
            close(fd);
        if (port <= 0 || port >= 65534)
            continue;
        int fd2 = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in b = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1)),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        bool ok = fd2 >= 0 && bind(fd2, (struct sockaddr *)&b, sizeof b) == 0;
        if (fd2 >= 0)
            close(fd2);
        if (ok)
            return port;
    }
    return -1;
}

/* "key=value key=value" -> " --key=value --key=value" appended to out. */
static int s_flags(const char *what, const char *in, char *out, size_t cap)
{
    out[0] = 0;
    char buf[CONFIG_STR_MAX];
    snprintf(buf, sizeof buf, "%s", in);
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (!strchr(w, '=') || w[0] == '=' || w[0] == '-') {
            fprintf(stderr, "bench_learning: %s: '%s' is not key=value\n", what, w);
            return KZ_EINVAL;
        }
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s--%s", len ? " " : "", w);
    }
    return 0;
}

/* CPU seconds (user + system) of the pids listed in run.pids, remembered per pid
 * so that a program's time still counts after it exits. */
#define MAX_PIDS 128
static struct {
    int pid;
    double cpu;
} s_cpu[MAX_PIDS];
static int s_n_cpu;

static double s_cluster_cpu(const char *var)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/run.pids", var);
    FILE *f = fopen(path, "r");
    int pid;
    while (f && fscanf(f, "%d", &pid) == 1) {
        char sp[64];
        snprintf(sp, sizeof sp, "/proc/%d/stat", pid);
        FILE *s = fopen(sp, "r");
        if (!s)
            continue;
        char line[1024];
        size_t n = fread(line, 1, sizeof line - 1, s);
        fclose(s);
        line[n] = 0;
        char *p = strrchr(line, ')');
        unsigned long ut = 0, st = 0;
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
                         &st) != 2)
            continue;
        double cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
        int k = 0;
        while (k < s_n_cpu && s_cpu[k].pid != pid)
            k++;
        if (k == s_n_cpu && s_n_cpu < MAX_PIDS)
            s_cpu[s_n_cpu++].pid = pid;
        if (k < MAX_PIDS)
            s_cpu[k].cpu = cpu;
    }
    if (f)
        fclose(f);
    double sum = 0;
    for (int k = 0; k < s_n_cpu; k++)
        sum += s_cpu[k].cpu;
    return sum;
}

/* The status line of the coordinator, and the trainer step read from it. */
static void s_status(const char *kz, int http_port, char *line, size_t cap, uint64_t *step)
{
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "%s status http://127.0.0.1:%d/status --line 2>/dev/null", kz,
             http_port);
    line[0] = 0;
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(line, (int)cap, p))
            line[0] = 0;
        pclose(p);
    }
    line[strcspn(line, "\n")] = 0;
    const char *s = strstr(line, "| step ");
    if (s && s[7] >= '0' && s[7] <= '9')
        *step = strtoull(s + 7, NULL, 10);
}

/* Fetches the coordinator's best; saves it as a snapshot when it is new. */
static int s_snapshot(client *c, const char *dir, double minutes, double cpu, uint64_t steps,
                      snapshot *snaps, int *n_snaps)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    wire_model_reply info;
    int rc = client_get_model(c, 0, 0, &blob, &len, &info);
    if (rc)
        return rc;
    const wire_batch_reply *b;
    uint64_t games = 0;
    if (client_get_batch(c, 0, 0, &b) == 0)
        games = b->games_total;
    if (*n_snaps < MAX_SNAPSHOTS) {
        snapshot *s = &snaps[*n_snaps];
        *s = (snapshot){minutes, cpu, games, steps, info.version, ""};
        snprintf(s->path, sizeof s->path, "%s/snapshot-%03d-v%u.kzm", dir, *n_snaps,
                 (unsigned)info.version);
        rc = file_write_atomic(s->path, blob, len);
        if (rc == 0)
            (*n_snaps)++;
    }
    free(blob);
    return rc;
}

/* --- matches ----------------------------------------------------------------- */

/* Hands out the next game: its job and index. False when none is left. */
static bool s_next_game(int *j, int *i)
{
    pthread_mutex_lock(&s_lock);
    while (s_job_at < s_n_jobs && s_jobs[s_job_at].next >= 2 * s_jobs[s_job_at].pairs)
        s_job_at++;
    bool ok = s_job_at < s_n_jobs && !s_stop;
    if (ok) {
        *j = s_job_at;
        *i = s_jobs[s_job_at].next++;
    }
    pthread_mutex_unlock(&s_lock);
    return ok;
}

/* Whether the matches are judged by gnubg (backgammon with --judge). */
static bool s_judged(void)
{
    return s_g == &backgammon_game && s_cfg.judge[0];
}

static void *s_match_thread(void *arg)
{
    (void)arg;
    int cur = -1;
    player *pl[2] = {NULL, NULL}; /* model, anchor */
    gnubg *judge = NULL;          /* this thread's judge (one gnubg per thread) */
    int j, i;
    while (s_next_game(&j, &i)) {
        job *jb = &s_jobs[j];
        char err[256] = "";
        if (s_judged() && !judge && gnubg_open(&judge, s_cfg.judge, 120, err, sizeof err)) {
            pthread_mutex_lock(&s_lock);
            fprintf(stderr, "bench_learning: the gnubg judge: %s\n", err);
            jb->failed = KZ_EIO;
            jb->done++;
            pthread_mutex_unlock(&s_lock);
            continue;
        }
        if (j != cur) {
            player_destroy(&pl[0]);
            player_destroy(&pl[1]);
            char spec[PATH_MAX + 32];
            snprintf(spec, sizeof spec, "mcts:%s:%ld", jb->model, s_cfg.simulations);
            pl[0] = player_from_spec(s_g, spec, err, sizeof err);
            if (pl[0])
                pl[1] = player_from_spec(s_g, jb->anchor, err, sizeof err);
            cur = j;
        }
        int r = 2, plies = 0, rc = KZ_EINVAL;
        game_rec rec = {0};
        if (pl[0] && pl[1]) {
            /* Game 2k: the model moves first from opening k; 2k+1: the anchor.
             * In a game with chance both games of a pair start from the start
             * position with the same dice (duplicate dice: each side gets the
             * other's rolls once, which takes much of the luck out of a pair). */
            int colour = i % 2;
            player *order[2] = {pl[colour], pl[1 - colour]};
            uint64_t seed = mix64((uint64_t)s_cfg.seed + (uint64_t)(s_g->is_chance ? i / 2 : i));
            match_game gm;
            rc = match_play_judged(s_g, order, &s_book[i / 2], seed, judge, &gm);
            plies = gm.plies;
            if (rc == 0) {
                r = game_result_for(gm.result, colour);
                int pts = gm.result.winner < 0 ? 0 : gm.result.points > 0 ? gm.result.points : 1;
                rec.points = r * pts;
                for (int side = 0; side < 2; side++) { /* the model is player id `colour` */
                    int p = side == 0 ? colour : 1 - colour;
                    rec.loss[side] = gm.loss[p];
                    rec.dec[side] = gm.decisions[p];
                    rec.race_loss[side] = gm.race_loss[p];
                    rec.race_dec[side] = gm.race_decisions[p];
                }
            } else if (judge) {
                gnubg_close(judge); /* the judge may have died: a new one for the next game */
                judge = NULL;
            }
        }
        pthread_mutex_lock(&s_lock);
        if (rc) {
            if (!jb->failed)
                fprintf(stderr, "bench_learning: %s vs %s: %s\n", jb->model, jb->anchor,
                        err[0] ? err : err_str(rc));
            jb->failed = rc;
        }
        jb->result[i] = r;
        jb->rec[i] = rec;
        jb->plies += plies;
        jb->done++;
        pthread_mutex_unlock(&s_lock);
    }
    player_destroy(&pl[0]);
    player_destroy(&pl[1]);
    gnubg_close(judge);
    return NULL;
}

/* Plays every job on `threads` threads. */
static void s_play_jobs(int threads)
{
    pthread_t t[64];
    int n = 0;
    for (; n < threads; n++)
        if (pthread_create(&t[n], NULL, s_match_thread, NULL))
            break;
    if (n == 0)
        s_match_thread(NULL);
    for (int k = 0; k < n; k++)
        pthread_join(t[k], NULL);
}

/* A job's result from the model's view: games, and the finished pairs
 * scored with the pentanomial model (match.h), whose variance sees the
 * colour bias that single games hide. */
static void s_job_stats(const job *jb, int *w, int *d, int *l, match_stats *st)
{
    *w = *d = *l = 0;
    int penta[MATCH_PENTA] = {0};
    for (int i = 0; i < 2 * jb->pairs; i++) {
        *w += jb->result[i] == 1;
        *d += jb->result[i] == 0;
        *l += jb->result[i] == -1;
        if (i % 2 && jb->result[i - 1] != 2 && jb->result[i] != 2)
            match_penta_add(penta, jb->result[i - 1], jb->result[i]);
    }
    match_penta_stats(penta, st);
}

/* Whether pair k of a job has both games played. */
static bool s_pair_done(const job *jb, int k)
{
    return jb->result[2 * k] != 2 && jb->result[2 * k + 1] != 2;
}

/* A job's points per game from the model's view (a game scored in points),
 * with its 95% interval over the finished pairs (the unit: the pair's two
 * games share the dice). */
static void s_job_points(const job *jb, double *ppg, double *half, int *pairs)
{
    match_ratio r = {0};
    for (int k = 0; k < jb->pairs; k++)
        if (s_pair_done(jb, k))
            match_ratio_add(&r, jb->rec[2 * k].points + jb->rec[2 * k + 1].points, 2);
    match_ratio_stats(&r, ppg, half);
    *pairs = r.n;
}

/* The judge's figures for one side (0 the model, 1 the anchor) over some
 * jobs' finished pairs: equity lost per decision with its 95% interval
 * (match_ratio over the pairs), and the races' share. */
typedef struct judged {
    double mean, half;    /* equity lost per decision (points per game) */
    int decisions;
    double race_share;    /* of the loss, the races' */
    double race_mean;     /* loss per decision in races */
    int race_decisions;
} judged;

static void s_judged_stats(const job *jobs, int n, int side, judged *out)
{
    match_ratio r = {0};
    double loss = 0, race = 0;
    int rdec = 0;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < jobs[j].pairs; k++) {
            if (!s_pair_done(&jobs[j], k))
                continue;
            const game_rec *a = &jobs[j].rec[2 * k], *b = &jobs[j].rec[2 * k + 1];
            double l = a->loss[side] + b->loss[side];
            match_ratio_add(&r, l, a->dec[side] + b->dec[side]);
            loss += l;
            race += a->race_loss[side] + b->race_loss[side];
            rdec += a->race_dec[side] + b->race_dec[side];
        }
    match_ratio_stats(&r, &out->mean, &out->half);
    out->decisions = (int)r.y;
    out->race_share = loss > 0 ? race / loss : 0;
    out->race_mean = rdec ? race / rdec : 0;
    out->race_decisions = rdec;
}

/* The model's error rate over jobs[0..n) as gnubg judged it (one line). */
static void s_print_judged(const job *jobs, int n, const char *indent, const char *what)
{
    if (!s_judged())
        return;
    judged m;
    s_judged_stats(jobs, n, 0, &m);
    s_out("%sgnubg %s judge, the model %s: %.1f +/- %.1f millipoints per decision (PR %.1f "
          "+/- %.1f) over %d decisions; races %d decisions, %.1f mp each, %.0f%% of the loss\n",
          indent, s_cfg.judge, what, 1000 * m.mean, 1000 * m.half, 500 * m.mean, 500 * m.half,
          m.decisions, m.race_decisions, 1000 * m.race_mean, 100 * m.race_share);
}

static void s_print_job(const job *jb, const char *indent)
{
    int w, d, l;
    match_stats st;
    s_job_stats(jb, &w, &d, &l, &st);
    char elo[64];
    if (isfinite(st.elo))
        snprintf(elo, sizeof elo, "%+.0f", st.elo);
    else
        snprintf(elo, sizeof elo, "%s", st.elo > 0 ? "+inf" : "-inf");
    s_out("%s%-14s %.3f +/- %.3f  (+%d =%d -%d, Elo %s [%+.0f, %+.0f], %.0f turns/game)%s\n",
          indent, jb->anchor, st.score, st.score_hi - st.score, w, d, l, elo, st.elo_lo,
          st.elo_hi,
          jb->done ? (double)jb->plies / jb->done : 0.0, jb->failed ? "  (games failed)" : "");
    if (s_g->max_points > 1) {
        double ppg, half;
        int pairs;
        s_job_points(jb, &ppg, &half, &pairs);
        s_out("%s  points %+.3f +/- %.3f per game over %d pairs (each pair's games with the same "
              "dice)\n", indent, ppg, half, pairs);
    }
    if (s_judged()) {
        judged m, a;
        s_judged_stats(jb, 1, 0, &m);
        s_judged_stats(jb, 1, 1, &a);
        s_out("%s  gnubg %s judge: the model %.1f +/- %.1f mp/decision (PR %.1f), %s %.1f +/- "
              "%.1f (PR %.1f)\n", indent, s_cfg.judge, 1000 * m.mean, 1000 * m.half,
              500 * m.mean, jb->anchor, 1000 * a.mean, 1000 * a.half, 500 * a.mean);
    }
}

/* Reads the rated anchors from `kz status --json` output (or anchors.txt's
 * "name elo" lines when text is NULL and path names it). */
static void s_scale_parse(const char *json)
{
    s_n_scale = 0;
    for (const char *p = json; p && s_n_scale < MAX_ANCHORS &&
                               (p = strstr(p, "{\"name\": \"")) != NULL;
         p++) {
        char name[64];
        unsigned long games;
        double elo;
        if (sscanf(p, "{\"name\": \"%63[^\"]\", \"anchor\": true, \"games\": %lu, \"elo\": %lf",
                   name, &games, &elo) == 3) {
            snprintf(s_scale_name[s_n_scale], 64, "%s", name);
            s_scale_elo[s_n_scale++] = elo;
        }
    }
}

/* The anchors the cluster did not rate (a rate_only directory without
 * status.json, an older run) from the game's built-in scale (play/scale.h),
 * the one every cluster now holds them at. */
static void s_scale_builtin(void)
{
    char buf[2 * CONFIG_STR_MAX + 2];
    snprintf(buf, sizeof buf, "%s,%s", s_cfg.anchors, s_cfg.curve_anchors);
    for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w && s_n_scale < MAX_ANCHORS;
         w = strtok_r(NULL, ", ", &save)) {
        bool have = false;
        for (int a = 0; a < s_n_scale; a++)
            have |= !strcmp(s_scale_name[a], w);
        scale_entry e;
        if (!have && scale_find(s_g->name, w, &e)) {
            snprintf(s_scale_name[s_n_scale], 64, "%s", w);
            s_scale_elo[s_n_scale++] = e.elo;
        }
    }
}

/* The rating of a snapshot on the cluster's anchor scale from its matches
 * (jobs[0..n)): a fit with the anchors held at their calibrated ratings.
 * False when no anchor it played has a rating. */
static bool s_scale_rating(const job *jobs, int n, double *elo, double *lo, double *hi)
{
    rating_result res[MAX_ANCHORS];
    rating_anchor anc[MAX_ANCHORS];
    int nr = 0;
    for (int k = 0; k < n && nr < MAX_ANCHORS; k++)
        for (int a = 0; a < s_n_scale; a++)
            if (!strcmp(jobs[k].anchor, s_scale_name[a])) {
                int w, d, l;
                match_stats st;
                s_job_stats(&jobs[k], &w, &d, &l, &st);
                res[nr] = (rating_result){.i = 0, .j = nr + 1, .wins = w, .draws = d,
                                          .losses = l};
                anc[nr] = (rating_anchor){nr + 1, s_scale_elo[a]};
                nr++;
            }
    if (!nr)
        return false;
    rating_config cfg;
    rating_config_default(&cfg);
    rating_fit *f = NULL;
    if (rating_fit_compute(nr + 1, res, nr, anc, nr, &cfg, &f, NULL, 0))
        return false;
    *elo = f->elo[0];
    *lo = f->lo[0];
    *hi = f->hi[0];
    rating_fit_destroy(&f);
    return true;
}

static void s_print_scale(const job *jobs, int n, const char *indent)
{
    double e, lo, hi;
    if (s_scale_rating(jobs, n, &e, &lo, &hi))
        s_out("%srating %+.0f (95%%: %+.0f .. %+.0f) on the cluster's anchor scale (random = 0)\n",
              indent, e, lo, hi);
}

/* Splits "a,b,c" into at most MAX_ANCHORS specs (pointers into buf). */
static int s_split(char *buf, const char **out)
{
    int n = 0;
    for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w && n < MAX_ANCHORS;
         w = strtok_r(NULL, ", ", &save))
        out[n++] = w;
    return n;
}

/* Reads back the snapshots of an earlier run (rate_only). */
static int s_load_snapshots(const char *dir, snapshot *snaps)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/snapshots.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0;
    snapshot s;
    char file[PATH_MAX];
    unsigned long long games, steps;
    while (n < MAX_SNAPSHOTS && fscanf(f, "%lf %lf %llu %llu %u %4095s", &s.minutes,
                                       &s.cpu_minutes, &games, &steps, &s.version, file) == 6) {
        s.games = games;
        s.steps = steps;
        snprintf(s.path, sizeof s.path, "%s", file);
        snaps[n++] = s;
    }
    fclose(f);
    return n;
}

/* The curve and the final table as CSV and JSON beside results.txt
 * (curve.csv, results.json), for tools/learn_compare.sh and other readers:
 * per snapshot its time, games, steps, version and its rating on the
 * anchor scale (empty / null when it has none); the final best's matches. */
static void s_write_tables(const snapshot *snaps, int n_snaps, const int *first_job, int n_curve,
                           int first_final)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/curve.csv", s_cfg.dir);
    FILE *c = fopen(path, "w");
    snprintf(path, sizeof path, "%s/results.json", s_cfg.dir);
    FILE *j = fopen(path, "w");
    if (!c || !j) {
        fprintf(stderr, "bench_learning: cannot write %s/curve.csv or results.json\n", s_cfg.dir);
        if (c)
            fclose(c);
        if (j)
            fclose(j);
        return;
    }
    fprintf(c, "minutes,cpu_minutes,games,steps,version,elo,elo_lo,elo_hi,mp,mp_lo,mp_hi,pr\n");
    fprintf(j, "{\"dir\": \"%s\", \"curve\": [", s_cfg.dir);
    for (int s = 0; s < n_snaps; s++) {
        double e = NAN, lo = NAN, hi = NAN;
        bool rated = false;
        if (s + 1 == n_snaps)
            rated = s_scale_rating(&s_jobs[first_final], s_n_jobs - first_final, &e, &lo, &hi);
        else if (n_curve && first_job[s] >= 0)
            rated = s_scale_rating(&s_jobs[first_job[s]], n_curve, &e, &lo, &hi);
        fprintf(c, "%.2f,%.2f,%llu,%llu,%u", snaps[s].minutes, snaps[s].cpu_minutes,
                (unsigned long long)snaps[s].games, (unsigned long long)snaps[s].steps,
                (unsigned)snaps[s].version);
        fprintf(j, "%s\n  {\"minutes\": %.2f, \"cpu_minutes\": %.2f, \"games\": %llu, "
                   "\"steps\": %llu, \"version\": %u, ",
                s ? "," : "", snaps[s].minutes, snaps[s].cpu_minutes,
                (unsigned long long)snaps[s].games, (unsigned long long)snaps[s].steps,
                (unsigned)snaps[s].version);
        if (rated) {
            fprintf(c, ",%.1f,%.1f,%.1f", e, lo, hi);
            fprintf(j, "\"elo\": %.1f, \"elo_lo\": %.1f, \"elo_hi\": %.1f", e, lo, hi);
        } else {
            fprintf(c, ",,,");
            fprintf(j, "\"elo\": null, \"elo_lo\": null, \"elo_hi\": null");
        }
        /* The judge's error rate of the snapshot over its games (backgammon). */
        const job *js = NULL;
        int nj = 0;
        if (s + 1 == n_snaps)
            js = &s_jobs[first_final], nj = s_n_jobs - first_final;
        else if (n_curve && first_job[s] >= 0)
            js = &s_jobs[first_job[s]], nj = n_curve;
        judged m;
        if (js && s_judged())
            s_judged_stats(js, nj, 0, &m);
        if (js && s_judged() && m.decisions) {
            double mp = 1000 * m.mean, h = 1000 * m.half;
            fprintf(c, ",%.1f,%.1f,%.1f,%.1f\n", mp, mp - h, mp + h, mp / 2);
            fprintf(j, ", \"mp\": %.1f, \"mp_lo\": %.1f, \"mp_hi\": %.1f, \"pr\": %.1f, "
                       "\"decisions\": %d, \"race_share\": %.3f",
                    mp, mp - h, mp + h, mp / 2, m.decisions, m.race_share);
        } else {
            fprintf(c, ",,,,\n");
            fprintf(j, ", \"mp\": null, \"mp_lo\": null, \"mp_hi\": null, \"pr\": null");
        }
        if (js && s_g->max_points > 1) { /* points per game against each of its anchors */
            fprintf(j, ", \"points\": [");
            for (int k = 0; k < nj; k++) {
                double ppg, half;
                int pairs;
                s_job_points(&js[k], &ppg, &half, &pairs);
                fprintf(j, "%s{\"anchor\": \"%s\", \"points_per_game\": %.4f, \"ppg_lo\": "
                           "%.4f, \"ppg_hi\": %.4f, \"pairs\": %d}", k ? ", " : "",
                        js[k].anchor, ppg, ppg - half, ppg + half, pairs);
            }
            fprintf(j, "]");
        }
        fprintf(j, "}");
    }
    const snapshot *last = &snaps[n_snaps - 1];
    fprintf(j, "],\n \"final\": {\"version\": %u, \"minutes\": %.2f, \"games\": %llu, "
               "\"steps\": %llu, \"matches\": [",
            (unsigned)last->version, last->minutes, (unsigned long long)last->games,
            (unsigned long long)last->steps);
    for (int k = first_final; k < s_n_jobs; k++) {
        int w, d, l;
        match_stats st;
        s_job_stats(&s_jobs[k], &w, &d, &l, &st);
        fprintf(j, "%s\n  {\"anchor\": \"%s\", \"wins\": %d, \"draws\": %d, \"losses\": %d, "
                   "\"score\": %.4f, \"score_lo\": %.4f, \"score_hi\": %.4f",
                k > first_final ? "," : "", s_jobs[k].anchor, w, d, l, st.score, st.score_lo,
                st.score_hi);
        if (s_g->max_points > 1) {
            double ppg, half;
            int pairs;
            s_job_points(&s_jobs[k], &ppg, &half, &pairs);
            fprintf(j, ", \"points_per_game\": %.4f, \"ppg_lo\": %.4f, \"ppg_hi\": %.4f, "
                       "\"pairs\": %d", ppg, ppg - half, ppg + half, pairs);
        }
        if (s_judged()) {
            judged m, a;
            s_judged_stats(&s_jobs[k], 1, 0, &m);
            s_judged_stats(&s_jobs[k], 1, 1, &a);
            fprintf(j, ", \"mp\": %.1f, \"mp_lo\": %.1f, \"mp_hi\": %.1f, \"pr\": %.1f, "
                       "\"decisions\": %d, \"race_share\": %.3f, \"anchor_mp\": %.1f",
                    1000 * m.mean, 1000 * (m.mean - m.half), 1000 * (m.mean + m.half),
                    500 * m.mean, m.decisions, m.race_share, 1000 * a.mean);
        }
        fprintf(j, "}");
    }
    double e, lo, hi;
    if (s_scale_rating(&s_jobs[first_final], s_n_jobs - first_final, &e, &lo, &hi))
        fprintf(j, "],\n  \"elo\": %.1f, \"elo_lo\": %.1f, \"elo_hi\": %.1f}}\n", e, lo, hi);
    else
        fprintf(j, "],\n  \"elo\": null, \"elo_lo\": null, \"elo_hi\": null}}\n");
    fclose(c);
    fclose(j);
}

/* Step 3: rates the snapshots (curve) and the last one (final). */
static int s_rate(const snapshot *snaps, int n_snaps)
{
    char cbuf[CONFIG_STR_MAX], fbuf[CONFIG_STR_MAX];
    snprintf(cbuf, sizeof cbuf, "%s", s_cfg.curve_anchors);
    snprintf(fbuf, sizeof fbuf, "%s", s_cfg.anchors);
    const char *curve[MAX_ANCHORS], *final[MAX_ANCHORS];
    int n_curve = s_split(cbuf, curve), n_final = s_split(fbuf, final);
    char err[256];
    for (int k = 0; k < n_curve + n_final; k++) {
        const char *spec = k < n_curve ? curve[k] : final[k - n_curve];
        player *p = player_from_spec(s_g, spec, err, sizeof err);
        if (!p) {
            fprintf(stderr, "bench_learning: anchor '%s': %s\n", spec, err);
            return 2;
        }
        player_destroy(&p);
    }
    int book = (int)(s_cfg.pairs > s_cfg.curve_pairs ? s_cfg.pairs : s_cfg.curve_pairs);
    int rc = 0;
    if (s_cfg.book[0]) {
        int n_book = 0;
        s_book = xcalloc(YARD_MAX_BOOK, sizeof *s_book);
        rc = yard_read(s_g, s_cfg.book, s_book, NULL, YARD_MAX_BOOK, &n_book, err, sizeof err);
        if (rc || n_book < book) {
            fprintf(stderr, "bench_learning: book: %s\n",
                    rc ? err : "fewer openings than --pairs and --curve_pairs ask");
            return 2;
        }
    } else if (s_g->is_chance) { /* the dice vary the games: all from the start */
        s_book = xcalloc((size_t)book, sizeof *s_book);
        for (int k = 0; k < book; k++)
            s_g->init(&s_book[k]);
    } else {
        s_book = xcalloc((size_t)book, sizeof *s_book);
        rc = match_openings(s_g, book, 0, (uint64_t)s_cfg.seed, s_book);
    }
    if (rc) {
        fprintf(stderr, "bench_learning: cannot make %d openings: %s\n", book, err_str(rc));
        return 1;
    }
    /* Curve: every snapshot but the last against the curve anchors; the
     * last (the final best) against the union, with the final pair count. */
    s_n_jobs = 0;
    s_jobs = xcalloc((size_t)(n_snaps * n_curve + n_final + n_curve), sizeof *s_jobs);
    int *first_job = xcalloc((size_t)n_snaps, sizeof *first_job); /* -1: as the one before */
    for (int s = 0; s + 1 < n_snaps; s++) {
        first_job[s] = s > 0 && snaps[s].version == snaps[s - 1].version ? -1 : s_n_jobs;
        for (int a = 0; a < n_curve && first_job[s] >= 0; a++)
            s_jobs[s_n_jobs++] = (job){.model = snaps[s].path, .anchor = curve[a],
                                       .pairs = (int)s_cfg.curve_pairs};
    }
    int first_final = s_n_jobs;
    for (int a = 0; a < n_final; a++)
        s_jobs[s_n_jobs++] = (job){.model = snaps[n_snaps - 1].path, .anchor = final[a],
                                   .pairs = (int)s_cfg.pairs};
    for (int a = 0; a < n_curve; a++) { /* curve anchors missing from the final list */
        bool there = false;
        for (int b = 0; b < n_final; b++)
            there |= !strcmp(curve[a], final[b]);
        if (!there)
            s_jobs[s_n_jobs++] = (job){.model = snaps[n_snaps - 1].path, .anchor = curve[a],
                                       .pairs = (int)s_cfg.pairs};
    }
    int games = 0;
    for (int k = 0; k < s_n_jobs; k++) {
        s_jobs[k].result = xmalloc((size_t)(2 * s_jobs[k].pairs) * sizeof(int));
        s_jobs[k].rec = xcalloc((size_t)(2 * s_jobs[k].pairs), sizeof(game_rec));
        for (int i = 0; i < 2 * s_jobs[k].pairs; i++)
            s_jobs[k].result[i] = 2;
        games += 2 * s_jobs[k].pairs;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(s_cfg.threads ? s_cfg.threads : (cores > 0 ? cores : 1));
    if (threads > 64)
        threads = 64;
    char from[CONFIG_STR_MAX + 32];
    if (s_cfg.book[0])
        snprintf(from, sizeof from, "%s", s_cfg.book);
    else if (s_g->is_chance)
        snprintf(from, sizeof from, "the start, a pair's games with the same dice, seed %ld",
                 s_cfg.seed);
    else
        snprintf(from, sizeof from, "seed %ld", s_cfg.seed);
    s_out("\nrating: %d games (%d matches) on %d threads; the model at %ld simulations, "
          "openings from one book (%s), each with both colours\n",
          games, s_n_jobs, threads, s_cfg.simulations, from);
    model_set_threads(1);
    double t0 = time_now();
    s_play_jobs(threads);
    if (s_stop)
        return 1;
    s_out("(%.1f minutes)\n\n", (time_now() - t0) / 60);
    if (n_curve && n_snaps > 1) {
        s_out("curve: the best model over time, %ld openings x 2 colours per anchor\n",
              s_cfg.curve_pairs);
        for (int s = 0; s < n_snaps; s++) {
            s_out("  %5.1f min (%5.1f CPU-min)  games %7llu  steps %6llu  best v%-4u\n",
                  snaps[s].minutes, snaps[s].cpu_minutes, (unsigned long long)snaps[s].games,
                  (unsigned long long)snaps[s].steps, (unsigned)snaps[s].version);
            if (s + 1 < n_snaps && first_job[s] < 0)
                s_out("      (the same model as above)\n");
            else if (s + 1 < n_snaps) {
                for (int a = 0; a < n_curve; a++)
                    s_print_job(&s_jobs[first_job[s] + a], "      ");
                s_print_scale(&s_jobs[first_job[s]], n_curve, "      ");
                s_print_judged(&s_jobs[first_job[s]], n_curve, "      ", "over these games");
            } else {
                for (int k = first_final; k < s_n_jobs; k++)
                    for (int a = 0; a < n_curve; a++)
                        if (!strcmp(s_jobs[k].anchor, curve[a]))
                            s_print_job(&s_jobs[k], "      ");
                s_print_scale(&s_jobs[first_final], s_n_jobs - first_final, "      ");
                s_print_judged(&s_jobs[first_final], s_n_jobs - first_final, "      ",
                               "over the final's games");
            }
        }
        s_out("\n");
    }
    const snapshot *last = &snaps[n_snaps - 1];
    s_out("final: best v%u after %.1f minutes (%.1f CPU-min), %llu games, %llu steps; "
          "%ld openings x 2 colours per anchor\n",
          (unsigned)last->version, last->minutes, last->cpu_minutes,
          (unsigned long long)last->games, (unsigned long long)last->steps, s_cfg.pairs);
    for (int k = first_final; k < s_n_jobs; k++)
        s_print_job(&s_jobs[k], "  ");
    s_print_scale(&s_jobs[first_final], s_n_jobs - first_final, "  ");
    s_print_judged(&s_jobs[first_final], s_n_jobs - first_final, "  ", "over all these games");
    if (s_n_scale) {
        s_out("  (the scale: ");
        for (int a = 0; a < s_n_scale; a++)
            s_out("%s%s %+.0f", a ? ", " : "", s_scale_name[a], s_scale_elo[a]);
        s_out(", as the cluster's rating games calibrated them)\n");
    }
    s_write_tables(snaps, n_snaps, first_job, n_curve, first_final);
    for (int k = 0; k < s_n_jobs; k++) {
        free(s_jobs[k].result);
        free(s_jobs[k].rec);
    }
    free_all(s_jobs, first_job, s_book);
    return 0;
}

/* --- the run ----------------------------------------------------------------- */

/* Sets the environment variable name to the number v (make run's settings). */
static void s_setenv_long(const char *name, long v)
{
    char num[32];
    snprintf(num, sizeof num, "%ld", v);
    setenv(name, num, 1);
}

static int s_run(const char *bin, snapshot *snaps, int *n_snaps)
{
    char var[PATH_MAX + 16];
    snprintf(var, sizeof var, "%s/var", s_cfg.dir);
    char script[PATH_MAX + 32];
    if (s_cfg.run_script[0])
        snprintf(script, sizeof script, "%s", s_cfg.run_script);
    else
        snprintf(script, sizeof script, "%s/../tools/run.sh", bin);
    if (access(script, X_OK)) {
        fprintf(stderr, "bench_learning: %s: %s (set --run_script)\n", script, strerror(errno));
        return 2;
    }
    char fc[CONFIG_STR_MAX * 2], fw[CONFIG_STR_MAX * 2], ft[CONFIG_STR_MAX * 2];
    if (s_flags("coordinator", s_cfg.coordinator, fc, sizeof fc) ||
        s_flags("worker", s_cfg.worker, fw, sizeof fw) ||
        s_flags("trainer", s_cfg.trainer, ft, sizeof ft))
        return 2;
    int port = s_free_port_pair(), http = s_free_port_pair();
    if (port < 0 || http < 0) {
        fprintf(stderr, "bench_learning: no free ports\n");
        return 1;
    }
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/run.log", s_cfg.dir);
    s_run_pid = fork();
    if (s_run_pid < 0)
        return 1;
    if (s_run_pid == 0) {
        setenv("KZ_VAR", var, 1);
        s_setenv_long("KZ_PORT", port);
        s_setenv_long("KZ_HTTP_PORT", http);
        s_setenv_long("KZ_WORKERS", s_cfg.workers);
        setenv("KZ_PROGRESS_S", "10", 1);
        setenv("KZ_GAME", s_cfg.game, 1);
        /* The first network's shape, make run's own where 0. */
        const struct {
            const char *name;
            long v;
        } net[] = {{"KZ_BLOCKS", s_cfg.blocks},
                   {"KZ_FILTERS", s_cfg.filters},
                   {"KZ_VALUE_HIDDEN", s_cfg.value_hidden},
                   {"KZ_OPP_POLICY_FILTERS", s_cfg.opp_policy_filters},
                   {"KZ_MATERIAL_FILTERS", s_cfg.material_filters}};
        for (size_t i = 0; i < sizeof net / sizeof net[0]; i++)
            if (net[i].v)
                s_setenv_long(net[i].name, net[i].v);
        if (s_cfg.value_wdl)
            setenv("KZ_VALUE_WDL", "1", 1);
        if (s_cfg.derived_planes[0])
            setenv("KZ_DERIVED_PLANES", s_cfg.derived_planes, 1);
        setenv("KZ_COORDINATOR_OPTS", fc, 1);
        setenv("KZ_WORKER_OPTS", fw, 1);
        setenv("KZ_TRAINER_OPTS", ft, 1);
        FILE *lf = freopen(log, "a", stdout);
        (void)lf;
        dup2(1, 2);
        char build[PATH_MAX];
        snprintf(build, sizeof build, "%s", bin);
        execl("/bin/bash", "bash", script, build, (char *)NULL);
        _exit(127);
    }
    char kz[PATH_MAX + 8];
    snprintf(kz, sizeof kz, "%s/kz", bin);
    void *zctx = zmq_ctx_new();
    client_config cc;
    client_config_default(&cc);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    snprintf(cc.endpoint, sizeof cc.endpoint, "%s", endpoint);
    cc.role = "tool";
    snprintf(cc.client_id, sizeof cc.client_id, "%s", "bench-learning");
    /* make run's cluster is authenticated: its observer key (only reads),
     * made by run.sh on its first start. */
    snprintf(cc.curve_server_key, sizeof cc.curve_server_key, "%s/keys/coordinator.pub", var);
    snprintf(cc.curve_secret_key, sizeof cc.curve_secret_key, "%s/keys/observer.key", var);
    for (double until = time_now() + 60; access(cc.curve_secret_key, R_OK) ||
                                         access(cc.curve_server_key, R_OK);) {
        if (time_now() > until || waitpid(s_run_pid, NULL, WNOHANG) == s_run_pid) {
            fprintf(stderr, "bench_learning: run.sh made no keys in %s/keys (see %s)\n", var,
                    log);
            return 1;
        }
        usleep(100000);
    }
    cc.game = s_g->name;
    cc.timeout_ms = 5000;
    cc.retries = 3;
    client *c = client_new(zctx, &cc);
    if (!c) {
        fprintf(stderr, "bench_learning: no client\n");
        return 1;
    }
    client_set_interrupt(c, &s_stop);
    s_out("bench_learning: the cluster as make run starts it (%ld worker%s and a trainer), "
          "%s %.1f %sminutes; data in %s\n",
          s_cfg.workers, s_cfg.workers == 1 ? "" : "s", s_cfg.cpu_minutes > 0 ? "until" : "for",
          s_cfg.cpu_minutes > 0 ? s_cfg.cpu_minutes : s_cfg.minutes,
          s_cfg.cpu_minutes > 0 ? "CPU-" : "", var);
    if (fc[0] || fw[0] || ft[0])
        s_out("  extra settings: coordinator '%s' worker '%s' trainer '%s'\n", fc, fw, ft);
    double t0 = time_now(), next_snap = s_cfg.snapshot_minutes * 60, next_line = 0;
    uint64_t step = 0;
    double cpu = 0;
    int rc = 0;
    for (;;) {
        sleep(1);
        double t = time_now() - t0;
        int st;
        if (waitpid(s_run_pid, &st, WNOHANG) == s_run_pid) {
            fprintf(stderr, "bench_learning: the cluster stopped by itself (see %s)\n", log);
            s_run_pid = 0;
            rc = 1;
            break;
        }
        cpu = s_cluster_cpu(var);
        bool end = s_cfg.cpu_minutes > 0 ? cpu >= s_cfg.cpu_minutes * 60
                                         : t >= s_cfg.minutes * 60;
        if (t >= next_line || end || s_stop) {
            char line[512];
            s_status(kz, http, line, sizeof line, &step);
            s_out("  %5.1f min %6.1f CPU-min  %s\n", t / 60, cpu / 60, line);
            next_line = t + (double)s_cfg.progress_s;
        }
        if (s_stop)
            client_set_interrupt(c, NULL); /* the last snapshot may take its normal time */
        if (t >= next_snap || end || s_stop) { /* a stop (Ctrl-C) also keeps the best */
            int src = s_snapshot(c, s_cfg.dir, t / 60, cpu / 60, step, snaps, n_snaps);
            if (src)
                s_out("  (no snapshot at %.1f min: %s)\n", t / 60, err_str(src));
            next_snap += s_cfg.snapshot_minutes * 60;
        }
        if (end || s_stop)
            break;
    }
    /* The anchors' calibration (the curve's scale), kept in anchors.json. */
    char cmd[PATH_MAX + 96], scale[PATH_MAX + 32];
    snprintf(scale, sizeof scale, "%s/status.json", s_cfg.dir);
    snprintf(cmd, sizeof cmd, "%s status http://127.0.0.1:%d --json > %s 2>/dev/null", kz, http,
             scale);
    if (s_run_pid > 0 && system(cmd) != 0)
        fprintf(stderr, "bench_learning: no final status\n");
    /* The cluster's own ratings (rating games during the run), before the stop. */
    snprintf(cmd, sizeof cmd, "%s ratings http://127.0.0.1:%d 2>&1", kz, http);
    FILE *p = s_run_pid > 0 ? popen(cmd, "r") : NULL;
    if (p) {
        char line[512];
        s_out("\nthe cluster's ratings at the end of the run (kz ratings):\n");
        while (fgets(line, sizeof line, p))
            s_out("  %s", line);
        pclose(p);
    }
    client_destroy(&c);
    zmq_ctx_term(zctx);
    if (s_run_pid > 0) {
        kill(s_run_pid, SIGTERM);
        int st;
        waitpid(s_run_pid, &st, 0);
        s_run_pid = 0;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/snapshots.txt", s_cfg.dir);
    FILE *f = fopen(path, "w");
    for (int k = 0; f && k < *n_snaps; k++)
        fprintf(f, "%.2f %.2f %llu %llu %u %s\n", snaps[k].minutes, snaps[k].cpu_minutes,
                (unsigned long long)snaps[k].games, (unsigned long long)snaps[k].steps,
                (unsigned)snaps[k].version, snaps[k].path);
    if (f)
        fclose(f);
    return rc;
}

/* The endgame accuracy of model file `path` (version v) on the tables' test
 * set, as kz tb accuracy reports it: its raw policy and its search at
 * TB_TEST_SIMULATIONS, the share of value-keeping actions. 0, or 1 when a
 * player fails (said). */
static int s_endgame(const tb_set *t, const char *path, uint32_t v)
{
    int n = (int)s_cfg.tb_positions;
    game_state *st = xmalloc((size_t)n * sizeof *st);
    uint16_t *keep = xmalloc((size_t)n * sizeof *keep);
    n = tb_test_positions(t, n, TB_TEST_SEED, st, keep);
    char spec[PATH_MAX + 32], err[512];
    snprintf(spec, sizeof spec, "policy:%s", path);
    player *pol = player_from_spec(s_g, spec, err, sizeof err);
    snprintf(spec, sizeof spec, "mcts:%s:%d", path, TB_TEST_SIMULATIONS);
    player *srch = pol ? player_from_spec(s_g, spec, err, sizeof err) : NULL;
    int right[2] = {0, 0}, rc = !pol || !srch ? KZ_EINVAL : 0;
    double t0 = time_now(), chance = 0;
    if (!rc)
        rc = player_accuracy(pol, st, keep, n, NULL, &right[0]);
    if (!rc)
        rc = player_accuracy(srch, st, keep, n, NULL, &right[1]);
    for (int i = 0; i < n; i++) {
        uint16_t legal[GAME_MAX_LEGAL];
        chance += 1.0 / s_g->legal_actions(&st[i], legal);
    }
    if (rc) {
        fprintf(stderr, "bench_learning: endgame accuracy of %s: %s\n", path,
                pol && srch ? err_str(rc) : err);
    } else {
        s_out("endgame accuracy of the final best v%u on %d table positions (up to %d pieces, "
              "%s; kz tb accuracy, seed %d) in %.0f s; chance %.1f%%\n",
              (unsigned)v, n, tb_pieces(t), s_cfg.tb_dir, TB_TEST_SEED, time_now() - t0,
              n ? 100 * chance / n : 0.0);
        for (int k = 0; k < 2; k++) {
            double lo, hi;
            match_wilson(right[k], n, &lo, &hi);
            char what[48];
            snprintf(what, sizeof what, k ? "search (%d simulations)" : "policy (raw network)",
                     TB_TEST_SIMULATIONS);
            s_out("  %-24s %5.1f%%  (%d of %d; 95%% %.1f..%.1f)\n", what,
                  n ? 100.0 * right[k] / n : 0.0, right[k], n, 100 * lo, 100 * hi);
        }
    }
    player_destroy(&pol);
    player_destroy(&srch);
    free(st);
    free(keep);
    return rc ? 1 : 0;
}

/* The perfect-play accuracy of model file `path` (version v), as kz solve
 * accuracy reports it on the coordinator's book's first --perfect openings:
 * the share of its raw policy's and its search's whole turns that keep the
 * proven value (play/referee.h). 0, or 1 when it fails (said). */
static int s_perfect(const tb_set *t, const char *path, uint32_t v)
{
    int n = (int)s_cfg.perfect;
    game_state *st = xmalloc(500 * sizeof *st);
    char spec[PATH_MAX + 32], err[512];
    player *pl[2] = {NULL, NULL};
    snprintf(spec, sizeof spec, "policy:%s", path);
    pl[0] = player_from_spec(s_g, spec, err, sizeof err);
    snprintf(spec, sizeof spec, "mcts:%s:%d", path, TB_TEST_SIMULATIONS);
    pl[1] = pl[0] ? player_from_spec(s_g, spec, err, sizeof err) : NULL;
    referee_opts ro = {.tables = t, .stop = &s_stop};
    referee *r = pl[1] ? referee_new(&ro, err, sizeof err) : NULL;
    int rc = r ? match_openings(s_g, 500, 0, 1, st) : KZ_EINVAL;
    double t0 = time_now();
    referee_accuracy a;
    if (!rc)
        rc = referee_accuracy_run(r, pl, 2, st, n, 1, NULL, NULL, &a);
    if (rc) {
        fprintf(stderr, "bench_learning: perfect-play accuracy of %s: %s\n", path,
                r ? err_str(rc) : err);
    } else {
        s_out("perfect-play accuracy of the final best v%u on %d book openings (kz solve "
              "accuracy; %d settled, %d of them with a value-losing turn; %s) in %.0f s\n",
              (unsigned)v, n, a.settled, a.with_choice, t ? "with the tables" : "no tables",
              time_now() - t0);
        for (int k = 0; k < 2; k++) {
            double lo, hi;
            match_wilson(a.p[k].keep, a.p[k].judged, &lo, &hi);
            s_out("  %-24s %5.1f%%  (%d of %d; 95%% %.1f..%.1f); where a turn loses value %d "
                  "of %d\n", k ? "search (200 simulations)" : "policy (raw network)",
                  a.p[k].judged ? 100.0 * a.p[k].keep / a.p[k].judged : 0.0, a.p[k].keep,
                  a.p[k].judged, 100 * lo, 100 * hi, a.p[k].keep_choice, a.p[k].judged_choice);
        }
    }
    referee_destroy(&r);
    player_destroy(&pl[0]);
    player_destroy(&pl[1]);
    free(st);
    return rc ? 1 : 0;
}

/* The openings of --referee_book (read when the settings are checked). */
static int s_referee_openings;

/* Appends text to buf (cap) as one single-quoted shell word. */
static void s_shell_word(char *buf, size_t cap, const char *text)
{
    size_t n = strlen(buf);
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, " '");
    for (const char *p = text; *p && n + 5 < cap; p++)
        n += (size_t)snprintf(buf + n, cap - n, *p == '\'' ? "'\\''" : "%c", *p);
    snprintf(buf + n, n < cap ? cap - n : 0, "'");
}

/* The final best against the referee's anchor from --referee_book, judged
 * turn by turn by `kz solve referee` (bin/kz): its summary goes to the
 * results. 0, or 1 when it fails (said). */
static int s_referee(const char *bin, const char *path, uint32_t v)
{
    int nb = s_referee_openings;
    long games = s_cfg.referee_games ? s_cfg.referee_games : 2L * nb;
    char cmd[4 * PATH_MAX + 512] = "", spec[PATH_MAX + 64], kz[PATH_MAX + 8];
    snprintf(kz, sizeof kz, "%s/kz", bin);
    snprintf(spec, sizeof spec, "mcts:%s:%ld,%s", path, s_cfg.simulations,
             s_cfg.referee_anchor);
    s_shell_word(cmd, sizeof cmd, kz);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " solve referee --quiet --seed 20261124 --games %ld "
             "--openings %ld --match", games, (games + 1) / 2 < nb ? (games + 1) / 2 : nb);
    s_shell_word(cmd, sizeof cmd, spec);
    n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " --match_book");
    s_shell_word(cmd, sizeof cmd, s_cfg.referee_book);
    n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " --tables");
    s_shell_word(cmd, sizeof cmd, s_cfg.tb_dir);
    n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " 2>/dev/null");
    double t0 = time_now();
    FILE *f = popen(cmd, "r");
    if (!f) {
        fprintf(stderr, "bench_learning: cannot run %s: %s\n", kz, strerror(errno));
        return 1;
    }
    s_out("perfect play's referee: the final best v%u at %ld simulations against %s from %ld "
          "games of %s (kz solve referee; %s)\n", (unsigned)v, s_cfg.simulations,
          s_cfg.referee_anchor, games, s_cfg.referee_book,
          s_cfg.tb_dir[0] ? "with the tables" : "no tables");
    char line[1024];
    while (fgets(line, sizeof line, f))
        s_out("  %s", line);
    int st_rc = pclose(f);
    if (st_rc != 0) {
        fprintf(stderr, "bench_learning: the referee failed (exit %d): %s\n",
                WIFEXITED(st_rc) ? WEXITSTATUS(st_rc) : -1, cmd);
        return 1;
    }
    s_out("  (%.0f s)\n", time_now() - t0);
    return 0;
}

/* The final best's value head on the labelled positions (kz yardstick
 * value): calibration by phase, and how often 200 and 1600 simulations
 * choose differently on the first --compare of them. 0, or 1 (said). */
static int s_value(const char *path, uint32_t v)
{
    game_state *st = xmalloc(YARD_MAX_BOOK * sizeof *st);
    int8_t *z = xmalloc(YARD_MAX_BOOK);
    int n = 0, rc;
    char err[512], spec[PATH_MAX + 32];
    player *net = NULL, *lo = NULL, *hi = NULL;
    rc = yard_read(s_g, s_cfg.positions, st, z, YARD_MAX_BOOK, &n, err, sizeof err);
    if (!rc) {
        snprintf(spec, sizeof spec, "policy:%s", path);
        net = player_from_spec(s_g, spec, err, sizeof err);
        snprintf(spec, sizeof spec, "mcts:%s:%d", path, 200);
        lo = net ? player_from_spec(s_g, spec, err, sizeof err) : NULL;
        snprintf(spec, sizeof spec, "mcts:%s:%d", path, 1600);
        hi = lo ? player_from_spec(s_g, spec, err, sizeof err) : NULL;
        rc = hi ? 0 : KZ_EINVAL;
    }
    double t0 = time_now();
    yard_value res;
    if (!rc) {
        rc = yard_value_measure(s_g, net, lo, hi, st, z, n, (int)s_cfg.compare, NULL, &res);
        snprintf(err, sizeof err, "%s", err_str(rc));
    }
    if (rc) {
        fprintf(stderr, "bench_learning: value head of %s: %s\n", path, err);
    } else {
        char text[4096];
        yard_value_format(&res, 200, 1600, text, sizeof text);
        s_out("value head of the final best v%u on %d labelled positions (%s; kz yardstick "
              "value) in %.0f s\n%s", (unsigned)v, n, s_cfg.positions, time_now() - t0, text);
    }
    player_destroy(&net), player_destroy(&lo), player_destroy(&hi);
    free(st), free(z);
    return rc ? 1 : 0;
}

static const char s_usage[] =
    "usage: bench_learning [--key=value ...]\n\n"
    "How strong the cluster gets in a given time (make learn): runs the cluster\n"
    "as make run starts it, from scratch, for --minutes; keeps the best model\n"
    "every --snapshot_minutes; then plays every snapshot against the curve\n"
    "anchors and the final best against the anchors, from one book of openings,\n"
    "each opening with both colours, and prints the scores with 95% intervals.\n\n";

int main(int argc, char **argv)
{
    log_init("bench_learning");
    if (util_version_asked(argc, argv, "bench_learning"))
        return 0;
    char err[512];
    int start = config_start("bench_learning", s_usage, s_options, N_OPTIONS, &s_cfg, argc,
                             argv, NULL, 0, NULL);
    if (start >= 0)
        return start;
    s_g = game_find_said(s_cfg.game, INT_MAX, err, sizeof err);
    if (!s_g) {
        fprintf(stderr, "bench_learning: game: %s\n", err);
        return 2;
    }
    if (!s_cfg.simulations)
        s_cfg.simulations = s_g->simulations;
    if (s_g == &backgammon_game) { /* gnubg's levels, unless given */
        if (!strcmp(s_cfg.anchors, LEARN_ANCHORS))
            snprintf(s_cfg.anchors, sizeof s_cfg.anchors, "%s", LEARN_BG_ANCHORS);
        if (!strcmp(s_cfg.curve_anchors, LEARN_CURVE_ANCHORS))
            snprintf(s_cfg.curve_anchors, sizeof s_cfg.curve_anchors, "%s",
                     LEARN_BG_CURVE_ANCHORS);
        if (s_cfg.book[0]) {
            fprintf(stderr, "bench_learning: book: backgammon plays from the start (the dice "
                            "vary the games)\n");
            return 2;
        }
    }
    if (s_judged()) { /* the judge is tried now, not after the run */
        gnubg *j = NULL;
        if (gnubg_open(&j, s_cfg.judge, 120, err, sizeof err)) {
            fprintf(stderr, "bench_learning: judge: %s\n", err);
            return 2;
        }
        gnubg_close(j);
    }
    /* The tables are opened before the run: a wrong directory is said now,
     * not after it. */
    tb_set *tb = NULL;
    if (s_cfg.tb_dir[0] && s_g != tb_game()) {
        fprintf(stderr, "bench_learning: tb_dir: the endgame tables are %s's, not %s's\n",
                tb_game()->name, s_g->name);
        return 2;
    }
    if (s_cfg.tb_dir[0]) {
        tb = tb_open(s_cfg.tb_dir, 0, err, sizeof err);
        if (!tb || tb_pieces(tb) < 3) {
            fprintf(stderr, "bench_learning: tb_dir: %s\n",
                    tb ? "the tables stop below 3 pieces" : err);
            tb_close(&tb);
            return 2;
        }
    }
    /* The book and the positions are read before the run too: a wrong file
     * is said now, not after it. */
    for (int k = 0; k < 3; k++) {
        const char *file = k == 2 ? s_cfg.referee_book : k ? s_cfg.positions : s_cfg.book;
        if (!file[0])
            continue;
        game_state *st = xmalloc(YARD_MAX_BOOK * sizeof *st);
        int8_t *z = xmalloc(YARD_MAX_BOOK);
        int n;
        int yrc = yard_read(s_g, file, st, k == 1 ? z : NULL, YARD_MAX_BOOK, &n, err, sizeof err);
        free(st), free(z);
        if (k == 2)
            s_referee_openings = n;
        if (yrc) {
            fprintf(stderr, "bench_learning: %s: %s\n",
                    k == 2 ? "referee_book" : k ? "positions" : "book", err);
            tb_close(&tb);
            return 2;
        }
    }
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) {
        fprintf(stderr, "bench_learning: cannot find its own path\n");
        return 1;
    }
    self[sl] = 0;
    char bin[PATH_MAX];
    snprintf(bin, sizeof bin, "%s", dirname(self));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    static snapshot snaps[MAX_SNAPSHOTS];
    int n_snaps = 0;
    if (s_cfg.rate_only[0]) {
        snprintf(s_cfg.dir, sizeof s_cfg.dir, "%s", s_cfg.rate_only);
        n_snaps = s_load_snapshots(s_cfg.dir, snaps);
        if (n_snaps <= 0) {
            fprintf(stderr, "bench_learning: %s/snapshots.txt: no snapshots\n", s_cfg.dir);
            return 2;
        }
    } else {
        if (!s_cfg.dir[0]) {
            char stamp[32];
            time_t now = time(NULL);
            strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
            snprintf(s_cfg.dir, sizeof s_cfg.dir, "%s/learn-%s", bin, stamp);
        }
        if (mkdir(s_cfg.dir, 0755) && errno != EEXIST) {
            fprintf(stderr, "bench_learning: %s: %s\n", s_cfg.dir, strerror(errno));
            return 2;
        }
        char var[PATH_MAX + 16];
        snprintf(var, sizeof var, "%s/var", s_cfg.dir);
        struct stat sb;
        if (stat(var, &sb) == 0) {
            fprintf(stderr, "bench_learning: %s exists: a run starts from scratch (new --dir)\n",
                    var);
            return 2;
        }
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/results.txt", s_cfg.dir);
    s_results = fopen(path, "a");
    int rc = 0;
    if (!s_cfg.rate_only[0]) {
        rc = s_run(bin, snaps, &n_snaps);
        if (rc == 2)
            return 2;
        if (n_snaps == 0) {
            fprintf(stderr, "bench_learning: no model was kept; see %s/run.log\n", s_cfg.dir);
            return 1;
        }
    }
    s_stop = 0;
    snprintf(path, sizeof path, "%s/status.json", s_cfg.dir);
    uint8_t *js = NULL;
    size_t jl = 0;
    if (file_read_all(path, &js, &jl) == 0) {
        char *text = xmalloc(jl + 1);
        memcpy(text, js, jl);
        text[jl] = 0;
        const char *pl = strstr(text, "\"players\": [");
        s_scale_parse(pl);
        free(text);
        free(js);
    }
    s_scale_builtin();
    int rrc = s_rate(snaps, n_snaps);
    if (tb && !s_stop) {
        s_out("\n");
        int erc = s_endgame(tb, snaps[n_snaps - 1].path, snaps[n_snaps - 1].version);
        rrc = rrc ? rrc : erc;
    }
    if (s_cfg.perfect > 0 && s_g == tb_game() && !s_stop) {
        s_out("\n");
        int prc = s_perfect(tb, snaps[n_snaps - 1].path, snaps[n_snaps - 1].version);
        rrc = rrc ? rrc : prc;
    }
    if (s_cfg.referee_book[0] && s_g == tb_game() && !s_stop) {
        s_out("\n");
        int frc = s_referee(bin, snaps[n_snaps - 1].path, snaps[n_snaps - 1].version);
        rrc = rrc ? rrc : frc;
    }
    if (s_cfg.positions[0] && !s_stop) {
        s_out("\n");
        int vrc = s_value(snaps[n_snaps - 1].path, snaps[n_snaps - 1].version);
        rrc = rrc ? rrc : vrc;
    }
    tb_close(&tb);
    if (s_results)
        fclose(s_results);
    return rc ? rc : rrc;
}
