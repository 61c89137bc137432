/* status: the coordinator's HTTP endpoint (libmicrohttpd, a thread per
 * connection): GET /status (JSON), GET /metrics (Prometheus text format),
 * GET /healthz, GET / (the dashboard, server/dashboard.html: a page that
 * polls /status, /models and /timeline), GET /models (JSON: every registered
 * model), GET /models/N.kzm and /models/best.kzm (the model file, its
 * registry version and parent stamped in), GET /timeline (JSON: the run's
 * history, timeline.c; /status has the open interval as
 * timeline.current), GET /viewer, /play, /board.js, /page.css and /page.js
 * (webpages.h: the game viewer, the play page, the board they draw, and the
 * look and script helpers every page shares, the dashboard too), GET /games
 * and /games/SEQ (games.c: stored games as JSON), /api/... (games.c: the play
 * page's engine over the best model).
 * The main thread rebuilds the documents every status_ms into snapshot
 * strings; the HTTP threads only copy a snapshot under snap_lock, so they
 * never touch the coordinator's state. A model file is asked for: the HTTP
 * thread posts the version (files->want) and waits; the main thread reads
 * and stamps it (status_serve) and keeps the last few files ready.
 *
 * Access: with status_token_file every request but /healthz must carry the
 * token (Authorization: Bearer TOKEN, or basic auth with TOKEN as the
 * password, which is what a browser asks for). Connections are limited in
 * number, per address and in idle time (http_connections, http_per_ip,
 * http_timeout_s), so that idle connections from one place cannot keep
 * /healthz from answering others; and many places cannot either: the guard
 * (net/httpguard.h) keeps an eighth of the slots free by closing the idle
 * connection that has waited longest when a new one comes, and closes any
 * connection that has not sent its request header within http_timeout_s. */
#include <microhttpd.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "server/features.h"
#include "server/services.h"
#include "play/engine.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "common/util.h"
#include "play/webpages.h"
#include "net/httpguard.h"

#define FILES_KEPT 4            /* stamped model files kept for the HTTP thread */
#define FILES_WAIT_S 10         /* longest an HTTP thread waits for the main thread */
#define MODELS_REBUILD_S 5.0    /* /models is rebuilt at least this often */
#define ARCH_KINDS 32           /* distinct architectures named in /models (more: "other") */
#define ARCH_BAD 255            /* arch_of: the blob could not be read */
#define ARCH_READS 16           /* blobs read per /models rebuild for their architecture */
#define MODELS_PAGE 25          /* /models?offset=: models per page unless limit says */
#define MODELS_PAGE_MAX 1000    /* the largest limit */

/* Model files and the /models document, shared with the HTTP threads under
 * c->snap_lock. */
typedef struct status_files {
    pthread_cond_t answered;       /* broadcast when the main thread took up `want` */
    uint32_t want;                 /* version an HTTP thread asks for, 0 none */
    uint32_t failed;               /* the last version that could not be served, 0 none */
    bool failed_gone;              /* it was deleted by the retention (models.c): a 404 */
    bool failed_beyond;            /* it was past the latest version when asked: a 404 that
                                    * the next request asks again (it may be registered now) */
    char why[200];                 /* why (one line) */
    bool closing;                  /* status_stop runs: waiting threads give up */
    uint32_t version[FILES_KEPT];  /* version of each kept file, 0 empty */
    uint8_t *bytes[FILES_KEPT];    /* the stamped files, owned */
    size_t len[FILES_KEPT];        /* their bytes */
    uint64_t used[FILES_KEPT];     /* last use (tick), the oldest is replaced */
    uint64_t tick;                 /* use counter */
    uint32_t best;                 /* best version, for best.kzm */
    uint32_t latest;               /* highest registered version */
    char *models;                  /* /models JSON, owned */
    char *timeline;                /* /timeline JSON, owned */
    /* Main thread only: when to rebuild /models. */
    double models_at;              /* time_now() of the last rebuild */
    uint64_t models_sig;           /* what it was built from (versions, best, fits, arenas) */
    uint64_t timeline_changes;     /* c->tl.changes /timeline was built from, 0 never */
    /* The pages of /models (?offset=&limit=): where each model's object lies in
     * `models` (object i from at[2i] to at[2i+1]), and the strongest rated. */
    size_t *at;                    /* (2 n_at) owned, swapped with models */
    size_t n_at;
    char strongest[200];           /* a JSON object, or "null" */
    /* Main thread only: each version's architecture (modelkind_info's
     * describe), read once from its blob; arch_of[v] indexes arch (0 not
     * read yet, ARCH_BAD unreadable). */
    uint8_t *arch_of;              /* (arch_cap) */
    uint32_t arch_cap;
    char arch[ARCH_KINDS][200];    /* arch[1..n_arch] */
    int n_arch;
} status_files;

/* A Prometheus label value: printable ASCII, quotes and backslashes escaped. */
static void sb_label(strbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            strbuf_printf(b, "\\%c", ch);
        else if (ch >= 0x20 && ch < 0x7f)
            strbuf_printf(b, "%c", ch);
        else
            strbuf_printf(b, "_");
    }
}

/* A finite number for JSON (NaN and infinity are not JSON). */
static double s_num(double x)
{
    return x == x && x < 1e300 && x > -1e300 ? x : 0;
}

/* A rating as JSON numbers (null when unrated). */
static void s_json_rating(strbuf *b, const rated_player *r)
{
    if (r && r->rated)
        strbuf_printf(b, "\"elo\": %.1f, \"elo_lo\": %.1f, \"elo_hi\": %.1f", s_num(r->elo),
                  s_num(r->lo), s_num(r->hi));
    else
        strbuf_printf(b, "\"elo\": null, \"elo_lo\": null, \"elo_hi\": null");
}

static const char *const s_kind_names[3] = {"selfplay", "arena", "eval"};

/* One timeline point as a JSON object (rates per hour over its interval). */
static void s_json_point(strbuf *b, const timeline_point *p)
{
    double hours = (double)(p->t1_ms - p->t0_ms) / 3600e3;
    if (hours <= 0)
        hours = 1e-9;
    strbuf_printf(b, "{\"t0_ms\": %lld, \"t1_ms\": %lld, \"games\": %llu, \"positions\": %llu, "
                 "\"games_per_hour\": %.1f, \"positions_per_hour\": %.1f, "
                 "\"selfplay\": {\"games\": %llu, \"plies\": %llu, \"mean_plies\": %.2f, "
                 "\"first_wins\": %llu, \"second_wins\": %llu, \"draws\": %llu}, "
                 "\"games_total\": %llu, \"positions_total\": %llu, ",
              (long long)p->t0_ms, (long long)p->t1_ms, (unsigned long long)p->games,
              (unsigned long long)p->positions, (double)p->games / hours,
              (double)p->positions / hours, (unsigned long long)p->sp_games,
              (unsigned long long)p->sp_plies,
              p->sp_games ? (double)p->sp_plies / (double)p->sp_games : 0.0,
              (unsigned long long)p->sp_results[0], (unsigned long long)p->sp_results[1],
              (unsigned long long)p->sp_results[2], (unsigned long long)p->games_total,
              (unsigned long long)p->positions_total);
    if (p->trainer)
        strbuf_printf(b, "\"trainer\": {\"step\": %llu, \"loss\": %.5f, \"policy_loss\": %.5f, "
                     "\"value_loss\": %.5f, \"l2_loss\": %.5f, \"learning_rate\": %.6g}, ",
                  (unsigned long long)p->step, s_num(p->loss), s_num(p->policy_loss),
                  s_num(p->value_loss), s_num(p->l2_loss), s_num(p->learning_rate));
    else
        strbuf_printf(b, "\"trainer\": null, ");
    strbuf_printf(b, "\"best\": %u, \"workers\": %u, \"sims_per_s\": %.0f}", p->best, p->workers,
              s_num(p->sims_per_s));
}

/* GET /timeline: every stored point, oldest first. */
static void s_build_timeline(coord *c, strbuf *b)
{
    strbuf_printf(b, "{\"period_s\": %g, \"max_points\": %zu, \"points\": [", c->cfg.timeline_s,
              c->tl.cap);
    for (size_t i = 0; i < c->tl.n; i++) {
        strbuf_printf(b, "%s\n  ", i ? "," : "");
        s_json_point(b, &c->tl.pt[i]);
    }
    strbuf_printf(b, "\n]}\n");
}

/* The newest rated best: the last point of the rating history with that
 * version's current fit (ratings move as games come in). False when no
 * gauntlet has ended yet. */
static bool s_newest_rating(const coord *c, rating_point *out)
{
    if (!c->n_history)
        return false;
    *out = c->history[c->n_history - 1];
    const rated_player *r = ratings_get(c, out->version);
    if (r && r->rated) {
        out->elo = r->elo;
        out->lo = r->lo;
        out->hi = r->hi;
        out->games = (uint32_t)r->games;
    }
    return true;
}

/* A share k / n as JSON (null when n is 0). */
static void s_share(strbuf *b, const char *key, int k, int n)
{
    if (n > 0)
        strbuf_printf(b, "\"%s\": %.4f", key, (double)k / n);
    else
        strbuf_printf(b, "\"%s\": null", key);
}

/* ", " and num / den as JSON (null when den is 0). */
static void s_ratio(strbuf *b, double num, double den)
{
    if (den > 0)
        strbuf_printf(b, ", %.4f", num / den);
    else
        strbuf_printf(b, ", null");
}

/* A player's value-keeping turns against perfect play (yardstick.c). */
static void s_json_keep(strbuf *b, const char *name, int judged, int keep, int jc, int kc)
{
    double lo = 0, hi = 0, clo = 0, chi = 0;
    match_wilson(keep, judged, &lo, &hi);
    match_wilson(kc, jc, &clo, &chi);
    strbuf_printf(b, "\"%s\": {\"judged\": %d, \"keep\": %d, ", name, judged, keep);
    s_share(b, "share", keep, judged);
    strbuf_printf(b, ", \"lo\": %.4f, \"hi\": %.4f, \"judged_choice\": %d, \"keep_choice\": %d, ",
                  lo, hi, jc, kc);
    s_share(b, "choice_share", kc, jc);
    strbuf_printf(b, ", \"choice_lo\": %.4f, \"choice_hi\": %.4f}", clo, chi);
}

/* "yardstick": the best's perfect-play accuracy and value calibration
 * (yardstick.c; null when both are off). The history's points are arrays:
 * [version, policy keep share, search keep share, policy keep share where a
 * turn loses value, search's, policy judged, search judged, policy judged
 * where a turn loses value, search's, squared error opening, middle,
 * ending, all, share of 200 against 1600 simulations differing, positions
 * compared, measured at (ms)]; a measure that was off is null there. */
static void s_build_yardstick(coord *c, strbuf *b)
{
    yardstick_figures f;
    if (!yardstick_get(c, &f)) {
        strbuf_printf(b, "  \"yardstick\": null,\n");
        return;
    }
    strbuf_printf(b, "  \"yardstick\": {\"interval_minutes\": %g, \"version\": %u, "
                  "\"computing\": %u, \"error\": ", f.interval_min, f.version, f.computing);
    strbuf_json_str(b, f.error, sizeof f.error);
    strbuf_printf(b, ", \"seconds\": %.1f, \"cpu_seconds\": %.1f, \"done_ms\": %lld, ",
                  f.seconds, f.cpu_seconds, (long long)f.done_ms);
    if (f.perfect) {
        strbuf_printf(b, "\"perfect\": {\"positions\": %d, \"pieces\": %d, \"nodes\": %ld, "
                      "\"simulations\": %d, \"settled\": %d, \"with_choice\": %d, ",
                      f.perfect, f.perfect_pieces, f.perfect_nodes, YARDSTICK_SIMS, f.settled,
                      f.with_choice);
        strbuf_printf(b, "\"file\": ");
        strbuf_json_str(b, c->cfg.perfect_file, sizeof c->cfg.perfect_file);
        strbuf_printf(b, ", ");
        s_json_keep(b, "policy", f.judged[0], f.keep[0], f.judged_choice[0], f.keep_choice[0]);
        strbuf_printf(b, ", ");
        s_json_keep(b, "search", f.judged[1], f.keep[1], f.judged_choice[1], f.keep_choice[1]);
        strbuf_printf(b, "}, ");
    } else {
        strbuf_printf(b, "\"perfect\": null, ");
    }
    if (f.value) {
        strbuf_printf(b, "\"value\": {\"positions\": %d, \"compare\": %d, \"simulations\": [%d, "
                      "%d], \"phases\": {", f.value, f.value_compare, YARDSTICK_SIMS,
                      YARDSTICK_SIMS_HIGH);
        double all = 0;
        int n = 0;
        for (int p = 0; p < YARD_PHASES; p++) {
            static const char *const key[YARD_PHASES] = {"opening", "middle", "ending"};
            strbuf_printf(b, "%s\"%s\": {\"n\": %d, ", p ? ", " : "", key[p], f.n[p]);
            if (f.n[p])
                strbuf_printf(b, "\"mse\": %.4f, \"v\": %.4f, \"z\": %.4f}", f.mse[p], f.v[p],
                              f.z[p]);
            else
                strbuf_printf(b, "\"mse\": null, \"v\": null, \"z\": null}");
            all += f.mse[p] * f.n[p];
            n += f.n[p];
        }
        strbuf_printf(b, "}, ");
        if (n)
            strbuf_printf(b, "\"mse\": %.4f, ", all / n);
        else
            strbuf_printf(b, "\"mse\": null, ");
        double lo = 0, hi = 0;
        match_wilson(f.differ, f.compared, &lo, &hi);
        strbuf_printf(b, "\"compared\": %d, \"differ\": %d, ", f.compared, f.differ);
        s_share(b, "differ_share", f.differ, f.compared);
        strbuf_printf(b, ", \"differ_lo\": %.4f, \"differ_hi\": %.4f}, ", lo, hi);
    } else {
        strbuf_printf(b, "\"value\": null, ");
    }
    static _Thread_local yardstick_point hist[YARDSTICK_HISTORY];
    int nh = yardstick_history(c, hist);
    strbuf_printf(b, "\"history\": [");
    for (int i = 0; i < nh; i++) {
        const yardstick_point *q = &hist[i];
        strbuf_printf(b, "%s[%u", i ? ", " : "", q->version);
        if (q->flags & YARDSTICK_PERFECT) {
            for (int k = 0; k < 2; k++)
                s_ratio(b, q->keep[k], q->judged[k]);
            for (int k = 0; k < 2; k++)
                s_ratio(b, q->keep_choice[k], q->judged_choice[k]);
            strbuf_printf(b, ", %u, %u, %u, %u", q->judged[0], q->judged[1], q->judged_choice[0],
                          q->judged_choice[1]);
        } else {
            strbuf_printf(b, ", null, null, null, null, null, null, null, null");
        }
        if (q->flags & YARDSTICK_VALUE) {
            double all = 0;
            uint32_t n = 0;
            for (int p = 0; p < YARD_PHASES; p++) {
                s_ratio(b, q->mse[p] * q->n[p], q->n[p]);
                all += q->mse[p] * q->n[p];
                n += q->n[p];
            }
            s_ratio(b, all, n);
            s_ratio(b, q->differ, q->compared);
            strbuf_printf(b, ", %u", q->compared);
        } else {
            strbuf_printf(b, ", null, null, null, null, null, 0");
        }
        strbuf_printf(b, ", %lld]", (long long)q->done_ms);
    }
    strbuf_printf(b, "]},\n");
}

/* /status's "judge": the judge's error rate of the newest judged best, then
 * the history, a point a best, oldest first. gnubg (backgammon): millipoints
 * lost per decision and PR, a point [version, games, decisions, mp, mp_lo,
 * mp_hi, judged at (ms)]; perfect play (Khreibaga): value-losing turns a
 * game, a point [version, games, settled turns, per_game, lo, hi, judged at
 * (ms)]. */
static void s_build_judge(coord *c, strbuf *b)
{
    judge_figures jf;
    if (!judge_get(c, &jf)) {
        strbuf_printf(b, "  \"judge\": null,\n");
        return;
    }
    bool has = jf.version && (jf.perfect ? jf.games > 0 : jf.decisions > 0);
    strbuf_printf(b, "  \"judge\": {\"level\": ");
    strbuf_json_str(b, jf.level, sizeof jf.level);
    strbuf_printf(b, ", \"kind\": \"%s\", ", jf.perfect ? "perfect" : "gnubg");
    if (jf.perfect)
        strbuf_printf(b, "\"tables\": %d, \"nodes\": %ld, ", jf.tables, jf.nodes);
    strbuf_printf(b, "\"games_per_best\": %d, \"version\": %u, \"games\": %d, "
                     "\"decisions\": %ld, ",
                  jf.games_per_best, jf.version, jf.games, jf.decisions);
    if (jf.perfect && has) {
        strbuf_printf(b, "\"losing\": %ld, \"unknown\": ", jf.losing);
        if (jf.unknown < 0) /* read back from the history: not kept */
            strbuf_printf(b, "null");
        else
            strbuf_printf(b, "%ld", jf.unknown);
        strbuf_printf(b, ", \"per_game\": %.3f, \"lo\": %.3f, \"hi\": %.3f, \"done_ms\": %lld, ",
                      jf.rate, jf.lo, jf.hi, (long long)jf.done_ms);
    } else if (jf.perfect)
        strbuf_printf(b, "\"losing\": null, \"unknown\": null, \"per_game\": null, "
                         "\"lo\": null, \"hi\": null, ");
    else if (has)
        strbuf_printf(b, "\"mp\": %.1f, \"mp_lo\": %.1f, \"mp_hi\": %.1f, \"pr\": %.1f, "
                         "\"done_ms\": %lld, ",
                      jf.rate, jf.lo, jf.hi, jf.rate / 2, (long long)jf.done_ms);
    else
        strbuf_printf(b, "\"mp\": null, \"mp_lo\": null, \"mp_hi\": null, \"pr\": null, ");
    strbuf_printf(b, "\"waiting\": %d, \"dropped\": %llu, \"error\": ", jf.waiting,
                  (unsigned long long)jf.dropped);
    strbuf_json_str(b, jf.error, sizeof jf.error);
    judge_point jh[JUDGE_HISTORY];
    int nj = judge_history(c, jh);
    const char *fmt = jf.perfect ? "%s[%u, %u, %u, %.3f, %.3f, %.3f, %lld]"
                                 : "%s[%u, %u, %u, %.1f, %.1f, %.1f, %lld]";
    strbuf_printf(b, ", \"history\": [");
    for (int i = 0; i < nj; i++)
        strbuf_printf(b, fmt, i ? ", " : "", jh[i].version, jh[i].games, jh[i].decisions,
                      jh[i].rate, jh[i].lo, jh[i].hi, (long long)jh[i].done_ms);
    strbuf_printf(b, "]},\n");
}

/* The sections that show whether the run learns: the gate and the stall
 * figures, games by kind with results by colour, the ratings. */
static void s_build_learning(coord *c, strbuf *b, double now)
{
    (void)now;
    int penta[MATCH_PENTA];
    arena_penta(&c->ar, penta);
    strbuf_printf(b, "  \"gate\": {\"mode\": \"%s\", \"pairs\": [%d, %d, %d, %d, %d], "
                 "\"best_since_ms\": %lld, \"best_since_step\": %llu, "
                 "\"rejected_in_row\": %u, \"reverts\": %llu},\n",
              gate_mode_name(c->gate.mode), penta[0], penta[1], penta[2], penta[3], penta[4],
              (long long)c->best_since_ms, (unsigned long long)c->best_since_step,
              c->rejected_in_row, (unsigned long long)c->reverts);
    strbuf_printf(b, "  \"games_by_kind\": {");
    for (int k = 0; k < 3; k++) {
        uint64_t n = c->by_kind[k];
        strbuf_printf(b, "%s\"%s\": {\"games\": %llu, \"first_wins\": %llu, \"second_wins\": %llu, "
                     "\"draws\": %llu, \"mean_plies\": %.1f, \"slot_seconds\": %.1f}",
                  k ? ", " : "", s_kind_names[k], (unsigned long long)n,
                  (unsigned long long)c->results[k][0], (unsigned long long)c->results[k][1],
                  (unsigned long long)c->results[k][2], n ? (double)c->plies[k] / (double)n : 0.0,
                  (double)c->slot_ms[k] / 1000.0);
    }
    uint64_t all_ms = c->slot_ms[0] + c->slot_ms[1] + c->slot_ms[2];
    const rated_player *rb = ratings_get(c, c->best);
    strbuf_printf(b, "},\n  \"ratings\": {\"best\": {\"version\": %u, ", c->best);
    s_json_rating(b, rb);
    /* The newest rated best (the best itself once its gauntlet ends). */
    rating_point rp;
    if (s_newest_rating(c, &rp))
        strbuf_printf(b, "}, \"rated\": {\"version\": %u, \"elo\": %.1f, \"elo_lo\": %.1f, "
                         "\"elo_hi\": %.1f, \"games\": %u, \"time_ms\": %lld, \"age_s\": %.0f",
                      rp.version, s_num(rp.elo), s_num(rp.lo), s_num(rp.hi), rp.games,
                      (long long)rp.time_ms, (double)(time_wall_ms() - rp.time_ms) / 1000.0);
    else
        strbuf_printf(b, "}, \"rated\": {\"version\": 0, \"elo\": null, \"elo_lo\": null, "
                         "\"elo_hi\": null, \"games\": 0, \"time_ms\": null, \"age_s\": null");
    strbuf_printf(b, "}, \"eval_share\": %.4f, \"eval_share_max\": %.4f, \"fits\": %llu, "
                 "\"match\": ",
              all_ms ? (double)c->slot_ms[2] / (double)all_ms : 0.0, c->cfg.eval_share,
              (unsigned long long)c->fits);
    if (c->ev.games) {
        strbuf_printf(b, "{\"a\": ");
        strbuf_json_str(b, c->ev.a, SIZE_MAX);
        strbuf_printf(b, ", \"b\": ");
        strbuf_json_str(b, c->ev.b, SIZE_MAX);
        strbuf_printf(b, ", \"games\": %u, \"played\": %u}", c->ev.games, c->ev.done);
    } else {
        strbuf_printf(b, "null");
    }
    strbuf_printf(b, ",\n    \"players\": [");
    for (size_t i = 0; i < c->n_rated; i++) {
        const rated_player *r = &c->rated[i];
        strbuf_printf(b, "%s\n      {\"name\": ", i ? "," : "");
        strbuf_json_str(b, r->name, SIZE_MAX);
        strbuf_printf(b, ", \"anchor\": %s, \"games\": %llu, ", r->anchor ? "true" : "false",
                  (unsigned long long)r->games);
        s_json_rating(b, r);
        strbuf_printf(b, ", \"fixed\": %s", r->fixed ? "true" : "false");
        strbuf_printf(b, "}");
    }
    strbuf_printf(b, "],\n    \"history\": [");
    for (size_t i = 0; i < c->n_history; i++) {
        const rating_point *h = &c->history[i];
        strbuf_printf(b, "%s\n      {\"time_ms\": %lld, \"version\": %u, \"elo\": %.1f, "
                     "\"elo_lo\": %.1f, \"elo_hi\": %.1f, \"games\": %u}",
                  i ? "," : "", (long long)h->time_ms, h->version, s_num(h->elo), s_num(h->lo),
                  s_num(h->hi), h->games);
    }
    strbuf_printf(b, "],\n    \"tallies\": [");
    for (size_t i = 0; i < c->n_tallies; i++) {
        const tally *t = &c->tallies[i];
        strbuf_printf(b, "%s\n      {\"a\": ", i ? "," : "");
        strbuf_json_str(b, t->a, SIZE_MAX);
        strbuf_printf(b, ", \"b\": ");
        strbuf_json_str(b, t->b, SIZE_MAX);
        strbuf_printf(b, ", \"wins\": %u, \"draws\": %u, \"losses\": %u, "
                     "\"pairs\": [%u, %u, %u, %u, %u]",
                  t->w, t->d, t->l, t->penta[0], t->penta[1], t->penta[2], t->penta[3],
                  t->penta[4]);
        if (c->g->max_points > 1) /* scored in points: what the fit counts */
            strbuf_printf(b, ", \"points\": [%u, %u], \"score\": %.3f", t->pa, t->pb,
                          ratings_points_score(t));
        strbuf_printf(b, "}");
    }
    strbuf_printf(b, "]},\n");
}

static void s_build_status(coord *c, strbuf *b)
{
    double now = time_now();
    store_stats st;
    store_get_stats(c->st, &st);
    size_t live = 0;
    for (size_t i = 0; i < c->n_workers; i++)
        live += c->workers[i].alive;
    strbuf_printf(b, "{\n  \"coordinator\": {\"name\": ");
    strbuf_json_str(b, c->name, SIZE_MAX);
    strbuf_printf(b, ", \"version\": ");
    strbuf_json_str(b, util_version(), SIZE_MAX);
    strbuf_printf(b, ", \"instance\": \"%016llx\", \"game\": ", (unsigned long long)c->instance);
    strbuf_json_str(b, c->g->name, SIZE_MAX);
    strbuf_printf(b, ", \"protocol\": %d, \"uptime_s\": %.1f, \"time_ms\": %lld},\n",
              WIRE_PROTOCOL_VERSION, now - c->started, (long long)time_wall_ms());
    strbuf_printf(b, "  \"models\": {\"best\": %u, \"latest\": %u, \"candidate\": %u, "
                 "\"queued\": %u, \"promotions\": %llu, \"damaged\": [",
              c->best, st.models, c->ar.candidate, c->queued,
              (unsigned long long)c->promotions);
    for (uint32_t i = 0; i < c->n_damaged && i < COORD_DAMAGED; i++)
        strbuf_printf(b, "%s%u", i ? ", " : "", c->damaged[i]);
    strbuf_printf(b, "], \"damaged_count\": %u, \"fallback\": {\"from\": %u, \"to\": %u}},\n",
              c->n_damaged, c->fallback_from, c->fallback_to);
    uint32_t assigned = 0;
    for (uint32_t i = 0; c->ar.candidate && i < c->ar.games; i++)
        assigned += c->ar.result[i] == SLOT_OPEN && c->ar.owner[i] >= 0;
    strbuf_printf(b, "  \"arena\": {\"candidate\": %u, \"best\": %u, \"games\": %u, "
                 "\"played\": %u, "
                 "\"wins\": %u, \"draws\": %u, \"losses\": %u, \"assigned\": %u, \"open\": %u, "
                 "\"last\": {\"candidate\": %u, \"promoted\": %s, \"wins\": %u, \"draws\": %u, "
                 "\"losses\": %u, \"decided_ms\": %lld}},\n",
              c->ar.candidate, c->ar.best, c->ar.games,
              c->ar.wins + c->ar.draws + c->ar.losses, c->ar.wins, c->ar.draws, c->ar.losses,
              assigned, arena_open_slots(c), c->last.candidate,
              c->last.promoted ? "true" : "false", c->last.wins, c->last.draws, c->last.losses,
              (long long)c->last.decided_ms);
    s_build_learning(c, b, now);
    endgame_figures eg;
    if (endgame_get(c, &eg)) {
        strbuf_printf(b, "  \"endgame\": {\"pieces\": %d, \"positions\": %d, \"simulations\": %d, "
                     "\"chance\": %.4f, \"version\": %u, ",
                  eg.pieces, eg.positions, eg.simulations, eg.chance, eg.version);
        if (eg.version) {
            double lo[2], hi[2];
            match_wilson(eg.policy, eg.positions, &lo[0], &hi[0]);
            match_wilson(eg.search, eg.positions, &lo[1], &hi[1]);
            strbuf_printf(b, "\"policy\": %.4f, \"policy_lo\": %.4f, \"policy_hi\": %.4f, "
                         "\"search\": %.4f, \"search_lo\": %.4f, \"search_hi\": %.4f, "
                         "\"seconds\": %.1f, \"done_ms\": %lld, \"value_mse\": %.4f, ",
                      (double)eg.policy / eg.positions, lo[0], hi[0],
                      (double)eg.search / eg.positions, lo[1], hi[1], eg.seconds,
                      (long long)eg.done_ms, eg.value_mse);
        } else {
            strbuf_printf(b, "\"policy\": null, \"search\": null, \"value_mse\": null, ");
        }
        strbuf_printf(b, "\"computing\": %u, \"error\": ", eg.computing);
        strbuf_json_str(b, eg.error, sizeof eg.error);
        /* The measured versions, oldest first: [version, policy, search, value
         * error, measured at (ms)], the shares of value-keeping choices. */
        endgame_point hist[ENDGAME_HISTORY];
        int nh = endgame_history(c, hist);
        strbuf_printf(b, ", \"history\": [");
        for (int i = 0; i < nh; i++) {
            double np = hist[i].positions ? hist[i].positions : 1;
            strbuf_printf(b, "%s[%u, %.4f, %.4f, %.4f, %lld]", i ? ", " : "", hist[i].version,
                          hist[i].policy / np, hist[i].search / np, hist[i].value_mse,
                          (long long)hist[i].done_ms);
        }
        strbuf_printf(b, "]},\n");
    } else {
        strbuf_printf(b, "  \"endgame\": null,\n");
    }
    s_build_yardstick(c, b);
    s_build_judge(c, b);
    timeline_point cur;
    timeline_current(c, &cur);
    strbuf_printf(b, "  \"timeline\": {\"points\": %zu, \"changes\": %llu, \"period_s\": %g, "
                 "\"current\": ",
              c->tl.n, (unsigned long long)c->tl.changes, c->cfg.timeline_s);
    s_json_point(b, &cur);
    strbuf_printf(b, "},\n");
    strbuf_printf(b, "  \"replay\": {\"games\": %llu, \"positions\": %llu, \"window\": %ld, "
                 "\"window_lo\": %llu, \"window_hi\": %llu, \"window_positions\": %llu, "
                 "\"first_position\": %llu, \"map_bytes\": %llu, \"used_bytes\": %llu, "
                 "\"damaged_positions\": %llu},\n",
              (unsigned long long)st.games, (unsigned long long)st.positions_total,
              c->cfg.window, (unsigned long long)st.window_lo, (unsigned long long)st.window_hi,
              (unsigned long long)(st.window_hi - st.window_lo),
              (unsigned long long)st.first_position, (unsigned long long)st.map_bytes,
              (unsigned long long)st.used_bytes, (unsigned long long)st.damaged_positions);
    strbuf_printf(b, "  \"models_store\": {\"models\": %u, \"bytes\": %llu, \"deleted\": %llu, "
                     "\"keep_last\": %ld, \"keep_every\": %ld, \"disk_free_bytes\": %llu, "
                     "\"disk_total_bytes\": %llu, \"disk_low\": %s},\n",
                  c->models_count, (unsigned long long)c->models_bytes,
                  (unsigned long long)c->models_deleted, c->cfg.keep_models_last,
                  c->cfg.keep_models_every, (unsigned long long)c->disk_free_bytes,
                  (unsigned long long)c->disk_total_bytes, c->disk_low ? "true" : "false");
    strbuf_printf(b, "  \"ingest\": {\"received\": %llu, \"accepted\": %llu, \"duplicates\": %llu, "
                 "\"rejected\": %llu, \"games_per_s\": %.2f, \"positions_per_s\": %.1f, "
                 "\"arena_counted\": %llu, \"store_errors\": %llu, \"malformed\": %llu, "
                 "\"refused_version\": %llu, \"samples_served\": %llu, \"rejected_by_reason\": {",
              (unsigned long long)c->received, (unsigned long long)c->accepted,
              (unsigned long long)c->duplicates, (unsigned long long)c->rejected,
              s_num(c->rate_games), s_num(c->rate_pos), (unsigned long long)c->arena_counted,
              (unsigned long long)c->store_errors, (unsigned long long)c->malformed,
              (unsigned long long)c->refused_version, (unsigned long long)c->samples_served);
    for (int r = 1; r < VALIDATE_REASON_COUNT; r++)
        strbuf_printf(b, "%s\"%s\": %llu", r > 1 ? ", " : "", validate_reason_name(r),
                  (unsigned long long)c->rejected_by[r]);
    forge_figures ff = {0};
    bool fon = forge_get(c, &ff);
    strbuf_printf(b, "}},\n  \"forge\": {\"on\": %s, \"one_in_states\": %ld, "
                 "\"arena_threshold\": %ld, \"sampled\": %llu, \"checked\": %llu, "
                 "\"forged\": %llu, \"unchecked\": %llu, \"skipped\": %llu, \"held\": %llu, "
                 "\"resends\": %llu, \"states\": %llu, \"searches\": %llu, \"seconds\": %.2f",
              fon ? "true" : "false", fon ? c->cfg.forge_check_states : 0L,
              c->cfg.forge_arena_threshold, (unsigned long long)ff.sampled,
              (unsigned long long)ff.checked, (unsigned long long)ff.forged,
              (unsigned long long)ff.unchecked, (unsigned long long)ff.skipped,
              (unsigned long long)ff.held, (unsigned long long)ff.resends,
              (unsigned long long)ff.states, (unsigned long long)ff.searches, ff.seconds);
    /* Proven forgers (forge.c): barred, with the evidence and what left the window. */
    strbuf_printf(b, ", \"barred_refused\": %llu, \"barred\": [",
                  (unsigned long long)c->barred_refused);
    for (size_t i = 0; i < c->n_barred; i++) {
        const barred_client *x = &c->barred[i];
        strbuf_printf(b, "%s{\"client\": ", i ? ", " : "");
        strbuf_json_str(b, x->id, SIZE_MAX);
        strbuf_printf(b, ", \"since_ms\": %lld, \"removed_games\": %llu, "
                      "\"removed_positions\": %llu, \"evidence\": ", (long long)x->since_ms,
                      (unsigned long long)x->removed_games,
                      (unsigned long long)x->removed_positions);
        strbuf_json_str(b, x->evidence, SIZE_MAX);
        strbuf_printf(b, "}");
    }
    strbuf_printf(b, "]");
    const auth *au = &c->auth;
    http_guard_stats hg = {0};
    if (c->http_guard)
        http_guard_get_stats(c->http_guard, &hg);
    strbuf_printf(b, "},\n  \"auth\": {\"curve\": %s, \"keys\": %zu, \"refused_keys\": %llu, "
                 "\"refused_requests\": %llu, \"refused_by_role\": {\"worker\": %llu, "
                 "\"trainer\": %llu, \"observer\": %llu}, \"handshake_failures\": %llu, "
                 "\"reloads\": %llu, \"reload_errors\": %llu, \"loaded_ms\": %lld, "
                 "\"http_token\": %s, \"http_unauthorized\": %llu, "
                 "\"http_open\": %u, \"http_open_max\": %u, \"http_evicted\": %llu, "
                 "\"http_refused\": %llu, \"http_swept\": %llu",
              au->on ? "true" : "false", au->allow ? au->allow->n : (size_t)0,
              (unsigned long long)au->refused_keys, (unsigned long long)au->refused_requests,
              (unsigned long long)au->refused_by_role[CURVE_WORKER],
              (unsigned long long)au->refused_by_role[CURVE_TRAINER],
              (unsigned long long)au->refused_by_role[CURVE_OBSERVER],
              (unsigned long long)au->handshake_failures, (unsigned long long)au->reloads,
              (unsigned long long)au->reload_errors, (long long)au->loaded_ms,
              c->status_token[0] ? "true" : "false",
              (unsigned long long)__atomic_load_n(&c->http_unauthorized, __ATOMIC_RELAXED),
              hg.open, hg.open_max, (unsigned long long)hg.evicted,
              (unsigned long long)hg.refused, (unsigned long long)hg.swept);
    strbuf_printf(b, "},\n  \"workers\": {\"live\": %zu, \"live_workers\": %zu, \"known\": %zu, "
                 "\"forgotten\": %llu, "
                 "\"refused\": %llu, \"list\": [",
              live, coord_live_workers(c), c->n_workers, (unsigned long long)c->clients_forgotten,
              (unsigned long long)c->clients_refused);
    for (size_t i = 0; i < c->n_workers; i++) {
        const worker *w = &c->workers[i];
        strbuf_printf(b, "%s\n    {\"id\": ", i ? "," : "");
        strbuf_json_str(b, w->id, SIZE_MAX);
        strbuf_printf(b, ", \"role\": ");
        strbuf_json_str(b, w->role, SIZE_MAX);
        strbuf_printf(b, ", \"host\": ");
        strbuf_json_str(b, w->host, SIZE_MAX);
        strbuf_printf(b, ", \"version\": ");
        strbuf_json_str(b, w->software, SIZE_MAX);
        strbuf_printf(b, ", \"alive\": %s, \"last_contact_s\": %.1f, \"last_contact_ms\": %lld, "
                     "\"games\": %llu, \"games_per_min\": %.2f, \"duplicates\": %llu, "
                     "\"rejected\": %llu, \"in_flight\": %u, \"games_done\": %llu, "
                     "\"pending\": %u, \"arena_slots\": %u, \"model_version\": %u, "
                     "\"sims_per_s\": %.0f, \"checked\": %llu, \"forged\": %llu, "
                     "\"unchecked\": %llu, \"arena_barred\": %s, \"rejected_by_reason\": {",
                  w->alive ? "true" : "false", now - w->last_seen, (long long)w->last_seen_ms,
                  (unsigned long long)w->games, s_num(w->rate * 60.0),
                  (unsigned long long)w->duplicates, (unsigned long long)w->rejected,
                  w->in_flight, (unsigned long long)w->done, w->pending, w->arena_slots,
                  w->model_version, s_num(w->sims_per_s), (unsigned long long)w->checked,
                  (unsigned long long)w->rejected_by[VALIDATE_FORGED],
                  (unsigned long long)w->unchecked, forge_barred(c, w) ? "true" : "false");
        bool first = true;
        for (int r = 1; r < VALIDATE_REASON_COUNT; r++)
            if (w->rejected_by[r]) {
                strbuf_printf(b, "%s\"%s\": %llu", first ? "" : ", ", validate_reason_name(r),
                          (unsigned long long)w->rejected_by[r]);
                first = false;
            }
        strbuf_printf(b, "}}");
    }
    const wire_trainer_stats *t = &c->trainer;
    strbuf_printf(b, "\n  ]},\n  \"trainer\": {\"seen\": %s, \"last_contact_s\": %.1f, "
                 "\"step\": %llu, \"loss\": %.5f, \"policy_loss\": %.5f, \"value_loss\": %.5f, "
                 "\"l2_loss\": %.5f, \"opp_policy_loss\": %.5f, \"material_loss\": %.5f, "
                 "\"steps_per_s\": %.3f, \"samples_per_s\": %.1f, "
                 "\"learning_rate\": %.6g, \"samples_seen\": %llu, \"last_candidate\": %u}\n}\n",
              c->trainer_seen > 0 ? "true" : "false",
              c->trainer_seen > 0 ? now - c->trainer_seen : -1.0, (unsigned long long)t->step,
              s_num(t->loss), s_num(t->policy_loss), s_num(t->value_loss), s_num(t->l2_loss),
              s_num(t->opp_policy_loss), s_num(t->material_loss), s_num(t->steps_per_s),
              s_num(t->samples_per_s), s_num(t->learning_rate),
              (unsigned long long)t->samples_seen, t->last_candidate);
}

static void s_metric(strbuf *b, const char *name, const char *type, const char *help, double v)
{
    if (v != v)
        strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s NaN\n", name, help, name, type, name);
    else
        strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name,
                      v);
}

/* One metric family of n series told apart by one label: its HELP and
 * TYPE lines, then `name{label="names[i]"} values[i]` for each. */
static void s_family(strbuf *b, const char *name, const char *type, const char *help,
                     const char *label, const char *const *names, const uint64_t *values, int n)
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (int i = 0; i < n; i++)
        strbuf_printf(b, "%s{%s=\"%s\"} %llu\n", name, label, names[i],
                      (unsigned long long)values[i]);
}

/* A metric family labelled by client id: its HELP and TYPE lines, then
 * `name{worker="id"} value` (a whole number) for each client that value()
 * gives a value (not NaN) of. */
static void s_worker_family(strbuf *b, const coord *c, const char *name, const char *type,
                            const char *help, double (*value)(const worker *w))
{
    strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (size_t i = 0; i < c->n_workers; i++) {
        double v = value(&c->workers[i]);
        if (v != v)
            continue;
        strbuf_printf(b, "%s{worker=\"", name);
        sb_label(b, c->workers[i].id);
        strbuf_printf(b, "\"} %.0f\n", v);
    }
}

/* s_worker_family's values: games stored, records refused, and the search
 * speed of live workers (clients of role worker; NaN for the others). */
static double s_worker_games(const worker *w) { return (double)w->games; }
static double s_worker_rejected(const worker *w) { return (double)w->rejected; }
static double s_worker_speed(const worker *w)
{
    return w->alive && !strcmp(w->role, "worker") ? s_num(w->sims_per_s) : NAN;
}

/* The process_* series every Prometheus client library exports (their
 * names and units), read from /proc: CPU seconds, memory, descriptors, and
 * the start as a Unix time. */
static void s_process_metrics(strbuf *b, double started)
{
    double now = time_now();
    s_metric(b, "process_start_time_seconds", "gauge",
             "Start time of the process since the Unix epoch in seconds.",
             (double)time_wall_ms() / 1000.0 - (now - started));
    FILE *f = fopen("/proc/self/stat", "r");
    unsigned long ut = 0, st = 0, vsize = 0;
    long rss = 0;
    if (f) {
        char line[1024];
        const char *p = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
        /* After "pid (comm)": state(3) ... utime(14) stime(15) ... vsize(23) rss(24). */
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d "
                                "%*d %*d %*d %*d %*u %lu %ld", &ut, &st, &vsize, &rss) != 4)
            ut = st = vsize = 0, rss = 0;
        fclose(f);
    }
    double tick = (double)sysconf(_SC_CLK_TCK);
    s_metric(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent "
             "in seconds.", tick > 0 ? (double)(ut + st) / tick : 0.0);
    s_metric(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
             (double)vsize);
    s_metric(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
             (double)rss * (double)sysconf(_SC_PAGESIZE));
    size_t fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        for (struct dirent *e; (e = readdir(d)) != NULL;)
            fds += e->d_name[0] != '.';
        closedir(d);
        fds -= fds > 0; /* the directory's own descriptor */
    }
    s_metric(b, "process_open_fds", "gauge", "Number of open file descriptors.", (double)fds);
    struct rlimit rl;
    s_metric(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
             getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                 ? (double)rl.rlim_cur : -1.0);
}

static void s_build_metrics(coord *c, strbuf *b)
{
    store_stats st;
    store_get_stats(c->st, &st);
    size_t live = 0;
    for (size_t i = 0; i < c->n_workers; i++)
        live += c->workers[i].alive;
    strbuf_printf(b, "# HELP kz_build_info The coordinator's version, protocol and game "
                 "(value 1).\n"
                 "# TYPE kz_build_info gauge\nkz_build_info{version=\"");
    sb_label(b, util_version());
    strbuf_printf(b, "\",protocol=\"%d\",game=\"", WIRE_PROTOCOL_VERSION);
    sb_label(b, c->g->name);
    strbuf_printf(b, "\"} 1\n");
    s_process_metrics(b, c->started);
    s_metric(b, "kz_games_stored_total", "counter", "Games stored (all time).", (double)st.games);
    s_metric(b, "kz_positions_stored_total", "counter", "Training positions stored (all time).",
             (double)st.positions_total);
    s_metric(b, "kz_window_positions", "gauge", "Positions in the sampling window.",
             (double)(st.window_hi - st.window_lo));
    s_metric(b, "kz_games_received_total", "counter", "Game submissions since start.",
             (double)c->received);
    s_metric(b, "kz_games_accepted_total", "counter", "Games stored since start.",
             (double)c->accepted);
    s_metric(b, "kz_games_duplicate_total", "counter", "Resubmitted games acknowledged again.",
             (double)c->duplicates);
    strbuf_printf(b, "# HELP kz_games_rejected_total Refused game records by reason.\n"
                 "# TYPE kz_games_rejected_total counter\n");
    /* Label values in one spelling, snake_case as every other label here
     * (the protocol's reason names have hyphens: wrong-game -> wrong_game). */
    for (int r = 1; r < VALIDATE_REASON_COUNT; r++) {
        char reason[64];
        snprintf(reason, sizeof reason, "%s", validate_reason_name(r));
        for (char *q = reason; *q; q++)
            if (*q == '-')
                *q = '_';
        strbuf_printf(b, "kz_games_rejected_total{reason=\"%s\"} %llu\n", reason,
                      (unsigned long long)c->rejected_by[r]);
    }
    forge_figures mf = {0};
    forge_get(c, &mf);
    static const char *const outcomes[] = {"checked", "forged", "unchecked", "skipped"};
    s_family(b, "kz_forge_games_total", "counter",
             "Sampled games by the outcome of their re-search (docs/security.md).", "outcome",
             outcomes, (uint64_t[]){mf.checked, mf.forged, mf.unchecked, mf.skipped}, 4);
    s_metric(b, "kz_forge_held_games", "gauge", "Games held back for their check now.",
             (double)mf.held);
    s_metric(b, "kz_forge_states_total", "counter", "Searched states compared by the check.",
             (double)mf.states);
    s_metric(b, "kz_forge_seconds_total", "counter", "Wall time of the checks.", mf.seconds);
    s_metric(b, "kz_ingest_games_per_second", "gauge", "Stored games per second (smoothed).",
             s_num(c->rate_games));
    s_metric(b, "kz_store_errors_total", "counter", "Failed store commits.",
             (double)c->store_errors);
    s_metric(b, "kz_messages_total", "counter", "Messages handled.", (double)c->requests);
    s_metric(b, "kz_messages_malformed_total", "counter", "Undecodable messages.",
             (double)c->malformed);
    s_metric(b, "kz_messages_wrong_version_total", "counter",
             "Messages refused for their protocol version.", (double)c->refused_version);
    s_metric(b, "kz_samples_served_total", "counter", "Training samples served.",
             (double)c->samples_served);
    const auth *au = &c->auth;
    s_metric(b, "kz_auth_curve", "gauge", "Whether CurveZMQ authentication is on (1) or off (0).",
             au->on ? 1 : 0);
    s_metric(b, "kz_auth_keys", "gauge", "Client keys in the allow-list.",
             au->allow ? (double)au->allow->n : 0);
    static const char *const refusals[] = {"unknown_key", "role"};
    s_family(b, "kz_auth_refused_total", "counter",
             "Connections and requests refused, by reason.", "reason", refusals,
             (uint64_t[]){au->refused_keys, au->refused_requests}, 2);
    s_metric(b, "kz_auth_handshake_failures_total", "counter",
             "Handshakes that failed before the allow-list (no CurveZMQ, another server key).",
             (double)au->handshake_failures);
    s_metric(b, "kz_auth_reloads_total", "counter", "Allow-list reloads (SIGHUP) that took effect.",
             (double)au->reloads);
    s_metric(b, "kz_auth_reload_errors_total", "counter",
             "Allow-list reloads refused (the previous list stayed).", (double)au->reload_errors);
    s_metric(b, "kz_http_unauthorized_total", "counter", "HTTP requests without the token.",
             (double)__atomic_load_n(&c->http_unauthorized, __ATOMIC_RELAXED));
    s_metric(b, "kz_best_version", "gauge", "Best model version.", c->best);
    s_metric(b, "kz_latest_version", "gauge", "Latest registered model version.", st.models);
    s_metric(b, "kz_candidate_version", "gauge", "Candidate in the arena (0 none).",
             c->ar.candidate);
    s_metric(b, "kz_promotions_total", "counter", "Promotions since start.",
             (double)c->promotions);
    const arena_last *la = &c->last;
    s_metric(b, "kz_last_arena_candidate", "gauge", "Candidate of the last arena decided (0 none).",
             la->candidate);
    s_metric(b, "kz_last_arena_promoted", "gauge", "Whether it was promoted (1) or not (0).",
             la->candidate && la->promoted ? 1 : 0);
    s_metric(b, "kz_last_arena_decided_timestamp_seconds", "gauge",
             "When it was decided (Unix time, 0 none).", (double)la->decided_ms / 1000.0);
    static const char *const results[] = {"win", "draw", "loss"};
    s_family(b, "kz_last_arena_games", "gauge",
             "Tally of the last arena decided, candidate's view.", "result", results,
             (uint64_t[]){la->wins, la->draws, la->losses}, 3);
    s_family(b, "kz_arena_games", "gauge", "Arena tally of the running candidate.", "result",
             results, (uint64_t[]){c->ar.wins, c->ar.draws, c->ar.losses}, 3);
    s_metric(b, "kz_workers_live", "gauge",
             "Workers (clients of role worker) heard from within expiry_ms.",
             (double)coord_live_workers(c));
    s_metric(b, "kz_clients_live", "gauge",
             "Clients of every role (workers, trainer, tools) heard from within expiry_ms.",
             (double)live);
    /* The best's rating, in every scrape: the newest rated best's (gate none
     * replaces the best faster than a gauntlet ends), with the version it
     * belongs to and when it was rated; NaN and 0 before the first rating. */
    rating_point rp;
    bool rated = s_newest_rating(c, &rp);
    strbuf_printf(b, "# HELP kz_best_elo Rating of the newest rated best model (random = 0; "
                     "its version: kz_best_elo_version).\n# TYPE kz_best_elo gauge\n");
    strbuf_printf(b, rated ? "kz_best_elo %.1f\n" : "kz_best_elo NaN\n", s_num(rp.elo));
    strbuf_printf(b, "# HELP kz_best_elo_lo Lower end of its 95%% interval.\n"
                     "# TYPE kz_best_elo_lo gauge\n");
    strbuf_printf(b, rated ? "kz_best_elo_lo %.1f\n" : "kz_best_elo_lo NaN\n", s_num(rp.lo));
    strbuf_printf(b, "# HELP kz_best_elo_hi Upper end of its 95%% interval.\n"
                     "# TYPE kz_best_elo_hi gauge\n");
    strbuf_printf(b, rated ? "kz_best_elo_hi %.1f\n" : "kz_best_elo_hi NaN\n", s_num(rp.hi));
    s_metric(b, "kz_best_elo_version", "gauge",
             "The model version kz_best_elo belongs to (0: none rated yet).",
             rated ? (double)rp.version : 0);
    s_metric(b, "kz_best_elo_timestamp_seconds", "gauge",
             "When kz_best_elo's gauntlet ended (Unix time; 0: none yet).",
             rated ? (double)rp.time_ms / 1000.0 : 0);
    judge_figures jm;
    if (judge_get(c, &jm) && jm.version && (jm.perfect ? jm.games > 0 : jm.decisions > 0)) {
        s_metric(b, "kz_judge_version", "gauge",
                 jm.perfect ? "Best whose rating games perfect play judged last (Khreibaga, "
                              "setting judge)."
                            : "Best whose rating games gnubg judged last (backgammon, setting "
                              "judge).",
                 (double)jm.version);
        s_metric(b, jm.perfect ? "kz_judge_value_losing_per_game" : "kz_judge_millipoints",
                 "gauge",
                 jm.perfect ? "Perfect play's judgement of that best: its value-losing turns a "
                              "rating game."
                            : "gnubg's error rate of that best: millipoints of equity lost per "
                              "decision.",
                 jm.rate);
    }
    endgame_figures eg;
    if (endgame_get(c, &eg) && eg.version) {
        s_metric(b, "kz_endgame_version", "gauge",
                 "Model whose endgame accuracy was measured last (tb_dir).", (double)eg.version);
        s_metric(b, "kz_endgame_policy_accuracy", "gauge",
                 "Its raw policy's share of value-keeping moves on the tables' test set.",
                 (double)eg.policy / eg.positions);
        s_metric(b, "kz_endgame_search_accuracy", "gauge",
                 "Its search's share of value-keeping moves on the tables' test set.",
                 (double)eg.search / eg.positions);
        s_metric(b, "kz_endgame_value_squared_error", "gauge",
                 "Its raw value head's mean squared error against the test set's exact values.",
                 eg.value_mse);
    }
    yardstick_figures yf;
    if (yardstick_get(c, &yf) && yf.version) {
        s_metric(b, "kz_yardstick_version", "gauge",
                 "Model whose yardstick (perfect play, value calibration) was measured last.",
                 (double)yf.version);
        if (yf.perfect && yf.judged[1])
            s_metric(b, "kz_perfect_search_accuracy", "gauge",
                     "Its 200-simulation search's share of turns keeping the proven value "
                     "(perfect_positions).", (double)yf.keep[1] / yf.judged[1]);
        if (yf.perfect && yf.judged[0])
            s_metric(b, "kz_perfect_policy_accuracy", "gauge",
                     "Its raw policy's share of turns keeping the proven value.",
                     (double)yf.keep[0] / yf.judged[0]);
        double all = 0;
        int n = 0;
        for (int p = 0; p < YARD_PHASES; p++)
            all += yf.mse[p] * yf.n[p], n += yf.n[p];
        if (yf.value && n)
            s_metric(b, "kz_value_squared_error", "gauge",
                     "Its raw value head's mean squared error on the labelled positions "
                     "(value_positions).", all / n);
        if (yf.value && yf.compared)
            s_metric(b, "kz_search_budget_disagreement", "gauge",
                     "Share of compared positions where 200 and 1600 simulations choose "
                     "differently.", (double)yf.differ / yf.compared);
    }
    /* Anchors by name (a fixed set); models by role, their versions in
     * gauges of their own, so that no label changes with every model. */
    strbuf_printf(b, "# HELP kz_anchor_elo Ratings of the anchor players (random = 0).\n"
                 "# TYPE kz_anchor_elo gauge\n");
    const rated_player *newest = NULL;
    double newest_v = 0;
    for (size_t i = 0; i < c->n_rated; i++) {
        if (!c->rated[i].rated)
            continue;
        if (!c->rated[i].anchor) {
            double v = strtod(c->rated[i].name + 1, NULL);
            if (c->rated[i].name[0] == 'v' && v > newest_v) {
                newest = &c->rated[i];
                newest_v = v;
            }
            continue;
        }
        strbuf_printf(b, "kz_anchor_elo{player=\"");
        sb_label(b, c->rated[i].name);
        strbuf_printf(b, "\"} %.1f\n", s_num(c->rated[i].elo));
    }
    s_metric(b, "kz_newest_rated_elo", "gauge", "Rating of the newest rated model (NaN: none yet).",
             newest ? s_num(newest->elo) : NAN);
    s_metric(b, "kz_newest_rated_version", "gauge", "Version of the newest rated model (0: none).",
             newest_v);
    strbuf_printf(b, "# HELP kz_best_anchor_score Score of the best model against each anchor it "
                 "played (its tally).\n# TYPE kz_best_anchor_score gauge\n");
    char me[COORD_NAME];
    snprintf(me, sizeof me, "v%u", c->best);
    for (size_t i = 0; i < c->n_tallies; i++) {
        const tally *t = &c->tallies[i];
        bool first = !strcmp(t->a, me);
        if (!first && strcmp(t->b, me))
            continue;
        uint32_t n = t->w + t->d + t->l;
        double s = n ? ((first ? t->w : t->l) + 0.5 * t->d) / n : 0.5;
        strbuf_printf(b, "kz_best_anchor_score{opponent=\"");
        sb_label(b, first ? t->b : t->a);
        strbuf_printf(b, "\"} %.4f\n", s);
    }
    s_metric(b, "kz_best_changed_timestamp_seconds", "gauge",
             "Unix time the best last changed (0: not since the store began).",
             (double)c->best_since_ms / 1000.0);
    s_metric(b, "kz_candidates_rejected_in_row", "gauge",
             "Candidates rejected since the last promotion.", (double)c->rejected_in_row);
    s_metric(b, "kz_best_reverts_total", "counter", "Bests reverted by the rating guard.",
             (double)c->reverts);
    strbuf_printf(b, "# HELP kz_games_by_result_total Games stored since start, by kind and "
                 "result.\n"
                 "# TYPE kz_games_by_result_total counter\n");
    static const char *const res[3] = {"first_wins", "second_wins", "draw"};
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < 3; r++)
            strbuf_printf(b, "kz_games_by_result_total{kind=\"%s\",result=\"%s\"} %llu\n",
                      s_kind_names[k], res[r], (unsigned long long)c->results[k][r]);
    strbuf_printf(b, "# HELP kz_game_seconds_total Slot time of the stored games, by kind.\n"
                 "# TYPE kz_game_seconds_total counter\n");
    for (int k = 0; k < 3; k++)
        strbuf_printf(b, "kz_game_seconds_total{kind=\"%s\"} %.3f\n", s_kind_names[k],
                  (double)c->slot_ms[k] / 1000.0);
    s_metric(b, "kz_store_map_bytes", "gauge", "LMDB map size.", (double)st.map_bytes);
    s_metric(b, "kz_store_used_bytes", "gauge", "LMDB pages in use.", (double)st.used_bytes);
    s_metric(b, "kz_store_models", "gauge", "Models stored (the retention keeps them bounded).",
             (double)c->models_count);
    s_metric(b, "kz_store_model_bytes", "gauge", "Bytes of the stored models' blobs.",
             (double)c->models_bytes);
    s_metric(b, "kz_store_models_deleted_total", "counter",
             "Models deleted by the retention since the start.", (double)c->models_deleted);
    s_metric(b, "kz_disk_free_bytes", "gauge", "Free bytes of the data directory's disk.",
             (double)c->disk_free_bytes);
    s_metric(b, "kz_disk_low", "gauge", "1 when the data disk has less free than disk_warn_mb.",
             c->disk_low ? 1 : 0);
    s_metric(b, "kz_trainer_step", "gauge", "Trainer step last reported.",
             (double)c->trainer.step);
    s_metric(b, "kz_trainer_loss", "gauge", "Trainer total loss last reported.",
             s_num(c->trainer.loss));
    s_metric(b, "kz_trainer_policy_loss", "gauge", "Trainer policy loss last reported.",
             s_num(c->trainer.policy_loss));
    s_metric(b, "kz_trainer_value_loss", "gauge", "Trainer value loss last reported.",
             s_num(c->trainer.value_loss));
    s_metric(b, "kz_trainer_l2_loss", "gauge", "Trainer l2 term last reported.",
             s_num(c->trainer.l2_loss));
    s_metric(b, "kz_trainer_learning_rate", "gauge", "Trainer learning rate last reported.",
             s_num(c->trainer.learning_rate));
    s_metric(b, "kz_trainer_steps_per_second", "gauge", "Trainer steps per second last reported.",
             s_num(c->trainer.steps_per_s));
    s_metric(b, "kz_trainer_last_report_timestamp_seconds", "gauge",
             "Unix time of the trainer's last report (0: none since start).",
             c->trainer_seen > 0
                 ? (double)time_wall_ms() / 1000.0 - (time_now() - c->trainer_seen) : 0.0);
    s_worker_family(b, c, "kz_worker_games_total", "counter", "Games stored per client.",
                    s_worker_games);
    s_worker_family(b, c, "kz_worker_sims_per_second", "gauge",
                    "Search speed per live worker (heartbeats).", s_worker_speed);
    s_worker_family(b, c, "kz_worker_rejected_total", "counter", "Refused records per client.",
                    s_worker_rejected);
}

/* The architecture of version v as an index into f->arch (0 when it is not
 * read yet: at most *reads more blobs are read per rebuild, so that a
 * restart over a long store does not stall the main loop). */
static uint8_t s_arch(coord *c, status_files *f, uint32_t v, int *reads)
{
    if (v >= f->arch_cap) {
        uint32_t cap = f->arch_cap ? f->arch_cap : 1024;
        while (cap <= v && cap < UINT32_MAX / 2)
            cap *= 2;
        uint8_t *t = cap > v ? realloc(f->arch_of, cap) : NULL;
        if (!t)
            return 0;
        memset(t + f->arch_cap, 0, cap - f->arch_cap);
        f->arch_of = t;
        f->arch_cap = cap;
    }
    if (f->arch_of[v] || *reads <= 0)
        return f->arch_of[v];
    (*reads)--;
    uint8_t *blob = NULL;
    size_t len = 0;
    modelkind_info info;
    char why[200];
    uint8_t ix = ARCH_BAD;
    if (store_get_model(c->st, v, &blob, &len, NULL) == 0 &&
        modelkind_check(blob, len, c->g, &info, why, sizeof why) == 0) {
        for (int i = 1; i <= f->n_arch && ix == ARCH_BAD; i++)
            if (!strcmp(f->arch[i], info.describe))
                ix = (uint8_t)i;
        if (ix == ARCH_BAD && f->n_arch + 1 < ARCH_KINDS) {
            ix = (uint8_t)++f->n_arch;
            snprintf(f->arch[ix], sizeof f->arch[ix], "%s", info.describe);
        } else if (ix == ARCH_BAD) {
            ix = ARCH_KINDS - 1; /* "other" */
            snprintf(f->arch[ix], sizeof f->arch[ix], "other");
        }
    }
    free(blob);
    f->arch_of[v] = ix;
    return ix;
}

/* GET /models: one object per stored model (the retention's deletions left
 * out), oldest first. bytes and
 * checksum are the registry blob's (what workers get); the served file
 * differs from it by the stamped version and parent only. Each object's
 * place goes to *at (2 per model: start, end; caller frees), their number to
 * *n_at, and the strongest rated model (highest Elo) to strongest as a JSON
 * object ("null" when none is rated). */
static void s_build_models(coord *c, strbuf *b, uint32_t latest, size_t **at, size_t *n_at,
                           char *strongest, size_t cap)
{
    status_files *f = c->files;
    size_t n = 0, room = 64;
    size_t *pos = xmalloc(2 * room * sizeof *pos);
    int reads = ARCH_READS;
    uint32_t top = 0;
    double top_elo = 0, top_lo = 0, top_hi = 0;
    strbuf_printf(b, "[");
    for (uint32_t v = 1; v <= latest; v++) {
        store_model_info m;
        int rc = store_get_model_info(c->st, v, &m);
        if (rc == KZ_ENOTFOUND)
            continue; /* deleted by the retention (models.c) */
        if (n == room) {
            room *= 2;
            size_t *t = realloc(pos, 2 * room * sizeof *t);
            KZ_CHECK(t != NULL);
            pos = t;
        }
        strbuf_printf(b, "%s\n  ", n ? "," : "");
        pos[2 * n] = b->len;
        strbuf_printf(b, "{\"version\": %u, ", v);
        if (rc) {
            strbuf_printf(b, "\"status\": \"unreadable\"}");
            pos[2 * n + 1] = b->len;
            n++;
            continue;
        }
        const rated_player *r = ratings_get(c, v);
        strbuf_printf(b, "\"parent\": %u, \"created_ms\": %lld, \"status\": \"%s\", "
                     "\"best\": %s, \"trainer_step\": %llu, \"arena\": {\"wins\": %u, "
                     "\"draws\": %u, \"losses\": %u, \"decided_ms\": %lld}, "
                     "\"rating_games\": %llu, \"selfplay_games\": %u, \"architecture\": ",
                  m.parent, (long long)m.created_ms, store_model_status_name(m.status),
                  v == c->best ? "true" : "false", (unsigned long long)m.trainer_step, m.wins,
                  m.draws, m.losses, (long long)m.decided_ms,
                  (unsigned long long)(r ? r->games : 0),
                  v < c->sp_cap ? c->sp_games[v] : 0);
        uint8_t ax = s_arch(c, f, v, &reads);
        if (ax == 0)
            strbuf_printf(b, "null");
        else
            strbuf_json_str(b, ax == ARCH_BAD ? "unreadable" : f->arch[ax], SIZE_MAX);
        strbuf_printf(b, ", ");
        s_json_rating(b, r);
        strbuf_printf(b,
                      ", \"bytes\": %llu, \"checksum\": \"%016llx\", \"url\": \"/models/%u.kzm\"}",
                  (unsigned long long)m.blob_len, (unsigned long long)m.checksum, v);
        pos[2 * n + 1] = b->len;
        n++;
        if (r && r->rated && (!top || r->elo > top_elo)) {
            top = v;
            top_elo = r->elo;
            top_lo = r->lo;
            top_hi = r->hi;
        }
    }
    strbuf_printf(b, "\n]\n");
    *at = pos;
    *n_at = n;
    if (top)
        snprintf(strongest, cap, "{\"version\": %u, \"elo\": %.1f, \"elo_lo\": %.1f, "
                                 "\"elo_hi\": %.1f, \"url\": \"/models/%u.kzm\"}",
                 top, s_num(top_elo), s_num(top_lo), s_num(top_hi), top);
    else
        snprintf(strongest, cap, "null");
}

void status_refresh(coord *c)
{
    strbuf js = {0}, mt = {0}, md = {0}, tl = {0};
    size_t *at = NULL, n_at = 0;
    char strongest[sizeof c->files->strongest] = "null";
    if (c->http_guard) /* a request header that takes longer than this is a slow-loris */
        http_guard_sweep(c->http_guard, (double)c->cfg.http_timeout_s);
    s_build_status(c, &js);
    s_build_metrics(c, &mt);
    status_files *f = c->files;
    uint32_t latest = store_latest_model(c->st);
    if (f) {
        uint64_t sig = mix64(latest ^ ((uint64_t)c->best << 32)) ^ mix64(c->fits + 1) ^
                       mix64((uint64_t)c->last.decided_ms) ^ mix64(c->ar.candidate + 7u);
        double now = time_now();
        if (!f->models || sig != f->models_sig || now - f->models_at >= MODELS_REBUILD_S) {
            s_build_models(c, &md, latest, &at, &n_at, strongest, sizeof strongest);
            f->models_sig = sig;
            f->models_at = now;
        }
        if (f->timeline_changes != c->tl.changes) {
            s_build_timeline(c, &tl);
            f->timeline_changes = c->tl.changes;
        }
    }
    pthread_mutex_lock(&c->snap_lock);
    free(c->snap_status);
    free(c->snap_metrics);
    c->snap_status = js.s;
    c->snap_metrics = mt.s;
    if (f) {
        f->best = c->best;
        f->latest = latest;
        if (md.s) {
            free(f->models);
            f->models = md.s;
            free(f->at);
            f->at = at;
            f->n_at = n_at;
            snprintf(f->strongest, sizeof f->strongest, "%s", strongest);
        }
        if (tl.s) {
            free(f->timeline);
            f->timeline = tl.s;
        }
    }
    pthread_mutex_unlock(&c->snap_lock);
}

void status_serve(coord *c)
{
    games_serve(c);
    status_files *f = c->files;
    if (!f)
        return;
    pthread_mutex_lock(&c->snap_lock);
    uint32_t v = f->want;
    pthread_mutex_unlock(&c->snap_lock);
    if (!v)
        return;
    /* The reading and stamping happen outside the lock (a few ms for a big
     * model): the other HTTP threads keep answering meanwhile. */
    uint8_t *blob = NULL, *out = NULL;
    size_t len = 0, outlen = 0;
    store_model_info info;
    char why[200] = "";
    int rc = store_get_model(c->st, v, &blob, &len, &info);
    bool gone = rc == KZ_ENOTFOUND;
    uint32_t latest = store_latest_model(c->st);
    bool beyond = gone && v > latest;
    if (beyond)
        snprintf(why, sizeof why, "no model version %u (versions are 1..%u)", v, latest);
    else if (gone)
        snprintf(why, sizeof why, "model version %u was deleted by the retention "
                                  "(keep_models_last, keep_models_every)", v);
    else if (rc)
        snprintf(why, sizeof why, "model version %u cannot be read: %s", v, err_str(rc));
    else if ((rc = modelkind_stamp(blob, len, v, info.parent, &out, &outlen, why, sizeof why)))
        log_warn("model version %u cannot be served: %s", v, why);
    free(blob);
    pthread_mutex_lock(&c->snap_lock);
    if (rc) {
        f->failed = v;
        f->failed_gone = gone;
        f->failed_beyond = beyond;
        snprintf(f->why, sizeof f->why, "%s", why);
    } else {
        int slot = 0;
        for (int i = 1; i < FILES_KEPT; i++)
            if (f->used[i] < f->used[slot])
                slot = i;
        free(f->bytes[slot]);
        f->version[slot] = v;
        f->bytes[slot] = out;
        f->len[slot] = outlen;
        f->used[slot] = ++f->tick;
        if (f->failed == v)
            f->failed = 0;
    }
    f->want = 0;
    pthread_cond_broadcast(&f->answered);
    pthread_mutex_unlock(&c->snap_lock);
}

static enum MHD_Result s_respond(struct MHD_Connection *conn, unsigned code, const char *type,
                                 const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

/* A one-line text answer (errors). */
static enum MHD_Result s_respond_line(struct MHD_Connection *conn, unsigned code,
                                      const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static enum MHD_Result s_respond_line(struct MHD_Connection *conn, unsigned code,
                                      const char *fmt, ...)
{
    char text[300];
    va_list ap;
    va_start(ap, fmt);
    size_t n = text_line_vformat(text, sizeof text, false, fmt, ap);
    va_end(ap);
    return s_respond(conn, code, "text/plain; charset=utf-8", text, n);
}

/* GET /models/NAME: NAME is N.kzm or best.kzm. Called with snap_lock held;
 * returns with it held. */
static enum MHD_Result s_model_file(coord *c, struct MHD_Connection *conn, const char *name)
{
    status_files *f = c->files;
    char shown[40];
    text_printable(shown, sizeof shown, name, strlen(name));
    size_t nl = strlen(name);
    bool best = !strcmp(name, "best.kzm");
    long v = 0;
    if (!best) {
        char num[16];
        if (nl < 5 || nl - 4 >= sizeof num || strcmp(name + nl - 4, ".kzm"))
            return s_respond_line(conn, 404, "not found: model files are /models/N.kzm and "
                                             "/models/best.kzm");
        memcpy(num, name, nl - 4);
        num[nl - 4] = 0;
        if (num[0] < '1' || num[0] > '9' || parse_long(num, 1, UINT32_MAX, &v))
            return s_respond_line(conn, 404, "no model file '%s' (versions are 1..%u)", shown,
                                  f->latest);
    } else {
        v = f->best;
    }
    if (v < 1)
        return s_respond_line(conn, 404, "no model version %ld (versions are 1..%u)", v,
                              f->latest);
    /* A version past the snapshot's latest is asked of the main loop all the
     * same: it may have been registered since the snapshot (a trainer that
     * was just told "registered as version N" fetches it at once). */
    if (f->failed == (uint32_t)v && f->failed_beyond)
        f->failed = 0;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += FILES_WAIT_S;
    for (;;) {
        for (int i = 0; i < FILES_KEPT; i++)
            if (f->version[i] == (uint32_t)v) {
                f->used[i] = ++f->tick;
                struct MHD_Response *r = MHD_create_response_from_buffer(
                    f->len[i], f->bytes[i], MHD_RESPMEM_MUST_COPY);
                if (!r)
                    return MHD_NO;
                char disp[64], ver[16];
                snprintf(disp, sizeof disp, "attachment; filename=\"kz-v%ld.kzm\"", v);
                snprintf(ver, sizeof ver, "%ld", v);
                MHD_add_response_header(r, "Content-Type", "application/octet-stream");
                MHD_add_response_header(r, "Content-Disposition", disp);
                MHD_add_response_header(r, "X-Kz-Model-Version", ver);
                /* A version's file never changes; which one is best does. */
                MHD_add_response_header(r, "Cache-Control",
                                        best ? "no-store" : "public, max-age=31536000, immutable");
                enum MHD_Result ret = MHD_queue_response(conn, 200, r);
                MHD_destroy_response(r);
                return ret;
            }
        if (f->failed == (uint32_t)v)
            return s_respond_line(conn, f->failed_gone ? 404 : 500, "%s", f->why);
        if (f->closing)
            return s_respond_line(conn, 503, "the coordinator is stopping");
        if (!f->want)
            f->want = (uint32_t)v;
        if (pthread_cond_timedwait(&f->answered, &c->snap_lock, &deadline) == ETIMEDOUT)
            return s_respond_line(conn, 503, "the coordinator's main loop did not answer "
                                             "within %d s; try again", FILES_WAIT_S);
    }
}

/* GET /models?offset=O&limit=L: a page of the list, newest first (offset 0
 * is the latest version), as {"total", "offset", "limit", "strongest" (the
 * highest rated model, or null), "models": [...]}; the objects are those of
 * the whole list. Called with snap_lock held. */
static enum MHD_Result s_models_page(coord *c, struct MHD_Connection *conn, const char *off,
                                     const char *lim)
{
    status_files *f = c->files;
    long o = 0, l = MODELS_PAGE;
    if (off && parse_long(off, 0, LONG_MAX, &o))
        return s_respond_line(conn, 400, "offset must be a whole number from 0, not '%.40s'",
                              off);
    if (lim && parse_long(lim, 1, MODELS_PAGE_MAX, &l))
        return s_respond_line(conn, 400, "limit must be a whole number from 1 to %d, not '%.40s'",
                              MODELS_PAGE_MAX, lim);
    strbuf b = {0};
    strbuf_printf(&b, "{\"total\": %zu, \"offset\": %ld, \"limit\": %ld, \"strongest\": %s, "
                      "\"models\": [",
                  f->n_at, o, l, f->strongest[0] ? f->strongest : "null");
    for (long k = 0; k < l && (size_t)o < f->n_at && (size_t)(o + k) < f->n_at; k++) {
        size_t i = f->n_at - 1 - (size_t)(o + k);
        strbuf_printf(&b, "%s\n  %.*s", k ? "," : "", (int)(f->at[2 * i + 1] - f->at[2 * i]),
                      f->models + f->at[2 * i]);
    }
    strbuf_printf(&b, "\n]}\n");
    enum MHD_Result ret = s_respond(conn, 200, "application/json", b.s, b.len);
    free(b.s);
    return ret;
}

/* Collects the query arguments of a request (MHD's, valid during it). */
static enum MHD_Result s_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    engine_args_add(cls, key, value);
    return MHD_YES;
}

/* A built-in page: the dashboard or one of webpages.h. */
static enum MHD_Result s_respond_page(struct MHD_Connection *conn, const webpage *p)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(p->len, (void *)p->body, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", p->type);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result s_games(coord *c, struct MHD_Connection *conn, const char *url)
{
    engine_args a = {0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_collect_arg, &a);
    engine_reply r;
    games_http(c, url, &a, &r);
    enum MHD_Result ret = s_respond(conn, (unsigned)r.code, r.type, r.body, r.len);
    engine_reply_free(&r);
    return ret;
}

/* Request body bytes of /api/ read (and dropped) at most before the
 * connection is closed; a smaller body gets its 400. */
#define API_BODY_MAX (64 * 1024)

/* /api/NAME: the play page's engine (games.c). POST /api/save is the one
 * POST: its first call only announces the request. The API takes no body:
 * one is read and dropped (up to API_BODY_MAX; past that the connection is
 * closed) and the request answered 400. The count is per thread: the
 * server runs a thread per connection, and a connection's requests come one
 * after another. */
static enum MHD_Result s_api(coord *c, struct MHD_Connection *conn, const char *method,
                             const char *url, size_t *upload_len, void **state)
{
    static int announced;
    static _Thread_local size_t body;
    if (!*state) {
        *state = &announced;
        body = 0;
        return MHD_YES;
    }
    if (*upload_len) {
        body += *upload_len;
        *upload_len = 0;
        return body > API_BODY_MAX ? MHD_NO : MHD_YES;
    }
    if (body) {
        char shown[80];
        text_printable(shown, sizeof shown, url, strlen(url));
        return s_respond_line(conn, 400, "a request body (%zu bytes) on %s: the API takes "
                              "none (its arguments go in the query string)", body, shown);
    }
    /* Without a token anyone who reaches the port could fill the disk with
     * saved games: then only this machine's pages save (issue 28, #5). */
    if (!c->status_token[0] && !strcmp(url, "/api/save") && !http_client_is_local(conn))
        return s_respond_line(conn, 403, "saving games from another machine needs the status "
                              "token (status_token_file, docs/security.md); without one only "
                              "pages opened on the coordinator's machine save");
    engine_args a = {0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_collect_arg, &a);
    engine_reply r;
    games_api(c, method, url + 5, &a, &r);
    enum MHD_Result ret = s_respond(conn, (unsigned)r.code, r.type, r.body, r.len);
    engine_reply_free(&r);
    return ret;
}

int status_read_token(const char *path, char *out, size_t cap, char *err, size_t errlen)
{
    size_t len;
    int rc = file_read_secret(path, 007, "a token", out, cap, &len, err, errlen);
    if (rc)
        return rc;
    bool ok = len >= 16 && len < cap - 1;
    for (size_t i = 0; ok && i < len; i++)
        ok = out[i] > ' ' && out[i] < 127;
    if (!ok) {
        memset(out, 0, cap);
        return err_set(err, errlen, KZ_EINVAL, "%.200s: not a token (one line of 16 to %zu "
                       "printable characters without spaces; e.g. head -c 24 /dev/urandom | "
                       "base64)", path, cap - 2);
    }
    return 0;
}

/* Equal strings, in a time that does not depend on where they differ. */
static bool s_same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* Whether the request carries the token: "Bearer TOKEN", or basic auth with
 * TOKEN as the password (any user name). */
static bool s_authorized(const coord *c, struct MHD_Connection *conn)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7)) {
        h += 7;
        while (*h == ' ')
            h++;
        return s_same_secret(h, c->status_token);
    }
    char *pass = NULL;
    char *user = MHD_basic_auth_get_username_password(conn, &pass);
    bool ok = pass && s_same_secret(pass, c->status_token);
    if (user)
        MHD_free(user);
    if (pass)
        MHD_free(pass);
    return ok;
}

static enum MHD_Result s_unauthorized(struct MHD_Connection *conn)
{
    static const char text[] = "unauthorized: this endpoint wants its token (Authorization: "
                               "Bearer TOKEN, or basic auth with TOKEN as the password; kz: "
                               "KZ_STATUS_TOKEN_FILE=FILE)\n";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof text - 1, (void *)text,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"khreibaga\"");
    MHD_add_response_header(r, "WWW-Authenticate", "Basic realm=\"khreibaga\", charset=\"UTF-8\"");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_UNAUTHORIZED, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result s_http(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)version;
    (void)upload;
    coord *c = cls;
    http_guard_busy(conn);
    if (c->status_token[0] && strcmp(url, "/healthz") && !s_authorized(c, conn)) {
        __atomic_add_fetch(&c->http_unauthorized, 1, __ATOMIC_RELAXED);
        return s_unauthorized(conn);
    }
    if (c->games_box && !strncmp(url, "/api/", 5))
        return s_api(c, conn, method, url, upload_len, state);
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return s_respond(conn, 405, "text/plain", "only GET\n", 9);
    if (*upload_len)
        return MHD_NO;
    (void)state;
    if (!strcmp(url, "/healthz")) {
        double age = time_now() - c->heartbeat;
        char text[320];
        if (age < 5.0) {
            /* Serving, but with damaged models: said, still 200 (a restart
             * would not mend the store). */
            pthread_mutex_lock(&c->snap_lock);
            int n = c->model_alarm[0] ? snprintf(text, sizeof text, "degraded: %s\n",
                                                 c->model_alarm)
                                      : snprintf(text, sizeof text, "ok\n");
            pthread_mutex_unlock(&c->snap_lock);
            return s_respond(conn, 200, "text/plain", text, (size_t)n);
        }
        int n = snprintf(text, sizeof text, "stalled: main loop silent for %.1f s\n", age);
        return s_respond(conn, 503, "text/plain", text, (size_t)n);
    }
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
        webpage dashboard = {"/", "text/html; charset=utf-8", status_dashboard_html,
                             status_dashboard_len};
        return s_respond_page(conn, &dashboard);
    }
    if (c->files && (!strcmp(url, "/models") || !strncmp(url, "/models/", 8))) {
        pthread_mutex_lock(&c->snap_lock);
        enum MHD_Result ret;
        const char *off = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "offset");
        const char *lim = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limit");
        if (url[7] == '/')
            ret = s_model_file(c, conn, url + 8);
        else if (off || lim)
            ret = s_models_page(c, conn, off, lim);
        else
            ret = s_respond(conn, 200, "application/json",
                            c->files->models ? c->files->models : "[]\n",
                            c->files->models ? strlen(c->files->models) : 3);
        pthread_mutex_unlock(&c->snap_lock);
        return ret;
    }
    if (c->files && !strcmp(url, "/timeline")) {
        pthread_mutex_lock(&c->snap_lock);
        const char *doc = c->files->timeline ? c->files->timeline : "{\"points\": []}\n";
        enum MHD_Result ret = s_respond(conn, 200, "application/json", doc, strlen(doc));
        pthread_mutex_unlock(&c->snap_lock);
        return ret;
    }
    webpage page;
    if (webpages_find(url, &page))
        return s_respond_page(conn, &page);
    if (c->games_box && (!strcmp(url, "/games") || !strncmp(url, "/games/", 7) ||
                         !strcmp(url, "/saved") || !strncmp(url, "/saved/", 7)))
        return s_games(c, conn, url);
    bool status = !strcmp(url, "/status"), metrics = !strcmp(url, "/metrics");
    if (!status && !metrics)
        return s_respond_line(conn, 404, "not found: try /, /status, /metrics, /healthz, /models, "
                                         "/timeline, /games, /saved, /viewer, /play");
    pthread_mutex_lock(&c->snap_lock);
    const char *doc = status ? c->snap_status : c->snap_metrics;
    enum MHD_Result ret = s_respond(conn, 200,
                                    status ? "application/json"
                                           : "text/plain; version=0.0.4; charset=utf-8",
                                    doc ? doc : "", doc ? strlen(doc) : 0);
    pthread_mutex_unlock(&c->snap_lock);
    return ret;
}

int status_bind(coord *c)
{
    if (c->cfg.http_port == 0)
        return 0;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)c->cfg.http_port);
    if (inet_pton(AF_INET, c->cfg.http_bind, &addr.sin_addr) != 1) {
        log_error("http_bind '%s' is not an IPv4 address", c->cfg.http_bind);
        return KZ_EINVAL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) || listen(fd, 64)) {
        log_error("cannot serve HTTP on %s:%ld: %s", c->cfg.http_bind, c->cfg.http_port,
                  strerror(errno));
        if (fd >= 0)
            close(fd);
        return KZ_EIO;
    }
    c->http_fd = fd;
    return 0;
}

/* A request is complete: its connection is idle (the guard may close it). */
static void s_completed(void *cls, struct MHD_Connection *conn, void **state,
                        enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)state;
    (void)toe;
    http_guard_idle(conn);
}

int status_start(coord *c)
{
    if (c->cfg.http_port == 0 || c->http_fd < 0)
        return 0;
    c->heartbeat = time_now();
    if (c->cfg.status_token_file[0]) {
        char err[400];
        if (status_read_token(c->cfg.status_token_file, c->status_token, sizeof c->status_token,
                              err, sizeof err)) {
            log_error("status_token_file: %s", err);
            return KZ_EINVAL;
        }
    }
    c->http_guard = http_guard_new((unsigned)c->cfg.http_connections, 0);
    if (!c->http_guard) {
        log_error("cannot serve HTTP: no memory");
        return KZ_ENOMEM;
    }
    status_files *f = xcalloc(1, sizeof *f);
    pthread_cond_init(&f->answered, NULL);
    c->files = f;
    games_start(c);
    status_refresh(c); /* /models before the first request */
    /* A thread per connection: a model file's request waits for the main
     * loop without holding up /healthz and the others. Idle threads cost
     * only their (small) stacks, so the limit is high; one address may hold
     * a share of it only, so that connections left idle from one place
     * (an attack, a leak) cannot keep /healthz from answering another. */
    c->http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                   MHD_USE_ERROR_LOG,
                               (uint16_t)c->cfg.http_port, http_guard_accept,
                               c->http_guard, s_http, c,
                               MHD_OPTION_LISTEN_SOCKET, c->http_fd,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)c->cfg.http_connections,
                               MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)c->cfg.http_per_ip,
                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->cfg.http_timeout_s,
                               MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512u << 10),
                               MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, c->http_guard,
                               MHD_OPTION_NOTIFY_COMPLETED, s_completed, NULL,
                               MHD_OPTION_END);
    if (!c->http) {
        log_error("cannot serve HTTP on %s:%ld", c->cfg.http_bind, c->cfg.http_port);
        status_stop(c);
        return KZ_EIO;
    }
    c->http_fd = -1; /* the daemon's now: MHD_stop_daemon closes it */
    log_info("status on http://%s:%ld/status%s", c->cfg.http_bind, c->cfg.http_port,
             c->status_token[0] ? " (a token for all but /healthz)" : "");
    return 0;
}

void status_stop(coord *c)
{
    status_files *f = c->files;
    if (f) {
        pthread_mutex_lock(&c->snap_lock);
        f->closing = true;
        pthread_cond_broadcast(&f->answered);
        pthread_mutex_unlock(&c->snap_lock);
    }
    games_stop(c);
    if (c->http)
        MHD_stop_daemon(c->http);
    c->http = NULL;
    http_guard_free(&c->http_guard);
    if (c->http_fd >= 0)
        close(c->http_fd);
    c->http_fd = -1;
    games_free(c);
    if (f) {
        for (int i = 0; i < FILES_KEPT; i++)
            free(f->bytes[i]);
        free_all(f->models, f->at, f->arch_of, f->timeline);
        pthread_cond_destroy(&f->answered);
        free(f);
        c->files = NULL;
    }
}
