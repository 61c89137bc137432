/* kz status: fetches a coordinator's GET /status (plain HTTP/1.0 over a TCP
 * socket) and prints it for a person, or raw with --json. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "tools/kz/kz.h"
#include "common/util.h"

/* --- a small JSON reader ----------------------------------------------------------- */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct jnode jnode;
struct jnode {
    int type;       /* J_* */
    double num;     /* J_NUM, J_BOOL (0/1) */
    char *str;      /* J_STR value; the key when inside an object */
    char *key;      /* member name inside an object, else NULL */
    jnode *child;   /* first element or member */
    jnode *next;    /* next sibling */
};

typedef struct jparser {
    const char *p;   /* cursor */
    const char *end; /* end of input */
    int depth;       /* nesting */
} jparser;

static void j_free(jnode *n)
{
    while (n) {
        jnode *next = n->next;
        j_free(n->child);
        free_all(n->str, n->key, n);
        n = next;
    }
}

static void j_ws(jparser *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static char *j_string(jparser *j)
{
    if (j->p >= j->end || *j->p != '"')
        return NULL;
    j->p++;
    size_t cap = 32, n = 0;
    char *s = xmalloc(cap);
    while (j->p < j->end && *j->p != '"') {
        char ch = *j->p++;
        if (ch == '\\' && j->p < j->end) {
            char e = *j->p++;
            if (e == 'u' && j->end - j->p >= 4) {
                unsigned v = (unsigned)strtoul((char[5]){j->p[0], j->p[1], j->p[2], j->p[3], 0},
                                               NULL, 16);
                j->p += 4;
                ch = v < 0x80 ? (char)v : '?';
            } else {
                ch = e == 'n' ? '\n' : e == 't' ? '\t' : e;
            }
        }
        if (n + 2 > cap) {
            cap *= 2;
            s = realloc(s, cap);
            KZ_CHECK(s != NULL);
        }
        /* Strings are printed to a terminal and come from any client (ids,
         * hosts): no escape sequences, no line breaks. */
        s[n++] = (unsigned char)ch < 0x20 || ch == 0x7f ? '?' : ch;
    }
    s[n] = 0;
    if (j->p >= j->end) {
        free(s);
        return NULL;
    }
    j->p++;
    return s;
}

static jnode *j_value(jparser *j)
{
    j_ws(j);
    if (j->p >= j->end || ++j->depth > 64)
        return NULL;
    jnode *n = xcalloc(1, sizeof *n);
    char ch = *j->p;
    if (ch == '{' || ch == '[') {
        n->type = ch == '{' ? J_OBJ : J_ARR;
        char close = ch == '{' ? '}' : ']';
        j->p++;
        jnode **tail = &n->child;
        j_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            j->depth--;
            return n;
        }
        for (;;) {
            char *key = NULL;
            if (n->type == J_OBJ) {
                j_ws(j);
                key = j_string(j);
                j_ws(j);
                if (!key || j->p >= j->end || *j->p != ':') {
                    free(key);
                    j_free(n);
                    return NULL;
                }
                j->p++;
            }
            jnode *v = j_value(j);
            if (!v) {
                free(key);
                j_free(n);
                return NULL;
            }
            v->key = key;
            *tail = v;
            tail = &v->next;
            j_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                break;
            }
            j_free(n);
            return NULL;
        }
    } else if (ch == '"') {
        n->type = J_STR;
        n->str = j_string(j);
        if (!n->str) {
            j_free(n);
            return NULL;
        }
    } else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
        n->type = J_BOOL;
        n->num = *j->p == 't';
        j->p += *j->p == 't' ? 4 : 5;
    } else if (!strncmp(j->p, "null", 4)) {
        n->type = J_NULL;
        j->p += 4;
    } else {
        char *e;
        n->type = J_NUM;
        n->num = strtod(j->p, &e);
        if (e == j->p) {
            j_free(n);
            return NULL;
        }
        j->p = e;
    }
    j->depth--;
    return n;
}

/* Member `path` ("a.b.c") of an object; NULL if absent. */
static const jnode *j_get(const jnode *n, const char *path)
{
    char part[64];
    while (n && *path) {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        snprintf(part, sizeof part, "%.*s", (int)len, path);
        const jnode *c = n->type == J_OBJ ? n->child : NULL;
        while (c && strcmp(c->key, part))
            c = c->next;
        n = c;
        path += len + (dot ? 1 : 0);
    }
    return n;
}

static double j_num(const jnode *n, const char *path)
{
    const jnode *v = j_get(n, path);
    return v && (v->type == J_NUM || v->type == J_BOOL) ? v->num : 0;
}

static const char *j_str(const jnode *n, const char *path)
{
    const jnode *v = j_get(n, path);
    return v && v->type == J_STR ? v->str : "";
}

/* --- HTTP ---------------------------------------------------------------------------- */

#define STATUS_MAX_BYTES (64u << 20) /* largest answer read */

/* GETs url (kz_http_get; a URL without a path gets /status): on a 200 answer
 * *body is malloc'd (caller frees). KZ_EINVAL for a bad URL, KZ_EREJECTED for
 * another answer, KZ_EIO; one line in err. */
static int s_http_get(const char *url, char **body, char *err, size_t errlen)
{
    char host[256], path[1024], full[1400];
    int port;
    int rc = kz_url_split(url, host, sizeof host, &port, path, sizeof path, err, errlen);
    if (rc)
        return rc;
    snprintf(full, sizeof full, "http://%s:%d%s", host, port, strcmp(path, "/") ? path : "/status");
    uint8_t *answer;
    size_t len;
    int code;
    rc = kz_http_get(full, STATUS_MAX_BYTES, &answer, &len, &code, err, errlen);
    if (rc)
        return rc;
    if (code != 200) {
        free(answer);
        return err_set(err, errlen, KZ_EREJECTED, "%s answered %d", full, code);
    }
    *body = (char *)answer;
    return 0;
}

/* s_http_get for kz CMD: 0, or the exit status after a one-line error (2 for
 * a bad URL, 1 when the coordinator cannot be reached or answers otherwise). */
static int s_fetch(const char *cmd, const char *url, char **body)
{
    char err[512];
    int rc = s_http_get(url, body, err, sizeof err);
    if (rc == KZ_EINVAL)
        return kz_usage_error("%s: %s", cmd, err);
    if (rc) {
        fprintf(stderr, "kz: %s: %s\n", cmd, err);
        return 1;
    }
    return 0;
}

/* --- printing ---------------------------------------------------------------------- */

static void s_duration(double s, char *buf, size_t len)
{
    if (s < 0)
        snprintf(buf, len, "never");
    else if (s < 120)
        snprintf(buf, len, "%.1fs", s);
    else if (s < 7200)
        snprintf(buf, len, "%.0fm", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.1fh", s / 3600);
    else
        snprintf(buf, len, "%.1fd", s / 86400);
}

/* Whether a rating field is a number (null when the player is unrated). */
static bool s_rated(const jnode *j, const char *path)
{
    const jnode *n = j_get(j, path);
    return n && n->type == J_NUM;
}

/* The stall warning: the best has not changed for `minutes` while the
 * trainer went on. Printed by kz status; "" when there is none. */
static void s_stall(const jnode *j, double minutes, char *buf, size_t len)
{
    buf[0] = 0;
    double since = j_num(j, "gate.best_since_ms");
    double now_ms = j_num(j, "coordinator.time_ms");
    double steps = j_num(j, "trainer.step") - j_num(j, "gate.best_since_step");
    if (since > 0 && now_ms - since > minutes * 60000 && steps > 0)
        snprintf(buf, len, "WARNING: the best has not changed for %.0f minutes while the trainer "
                 "took %.0f steps (%.0f candidates rejected in a row)",
                 (now_ms - since) / 60000, steps, j_num(j, "gate.rejected_in_row"));
}

/* "+812 (95%: +770 .. +855)" or "unrated"; prefix: the object's path (NULL: j itself). */
static void s_elo(const jnode *j, const char *prefix, char *buf, size_t len)
{
    char p[96], lo[96], hi[96];
    const char *dot = prefix ? "." : "";
    prefix = prefix ? prefix : "";
    snprintf(p, sizeof p, "%s%selo", prefix, dot);
    if (!s_rated(j, p)) {
        snprintf(buf, len, "unrated");
        return;
    }
    snprintf(lo, sizeof lo, "%s%selo_lo", prefix, dot);
    snprintf(hi, sizeof hi, "%s%selo_hi", prefix, dot);
    snprintf(buf, len, "%+.0f (95%%: %+.0f .. %+.0f)", j_num(j, p), j_num(j, lo), j_num(j, hi));
}

/* The end of a measured part's line (endgame, yardstick): the version being
 * measured and the last failure, when there are. */
static void s_part_end(FILE *o, const jnode *part)
{
    if (j_num(part, "computing") > 0)
        fprintf(o, "; measuring v%.0f", j_num(part, "computing"));
    if (j_str(part, "error")[0])
        fprintf(o, "; last failure: %s", j_str(part, "error"));
    fprintf(o, "\n");
}

static void s_print_learning(const jnode *j, FILE *o, double stall_minutes)
{
    char since[32], elo[96], stall[256];
    double since_ms = j_num(j, "gate.best_since_ms");
    s_duration(since_ms > 0 ? (j_num(j, "coordinator.time_ms") - since_ms) / 1000 : -1, since,
               sizeof since);
    fprintf(o, "gate        %s; best unchanged for %s (since step %.0f), %.0f candidates "
               "rejected in a row, %.0f reverted by the rating guard\n",
            j_str(j, "gate.mode"), since, j_num(j, "gate.best_since_step"),
            j_num(j, "gate.rejected_in_row"), j_num(j, "gate.reverts"));
    s_elo(j, "ratings.best", elo, sizeof elo);
    fprintf(o, "rating      best v%.0f %s", j_num(j, "ratings.best.version"), elo);
    /* An unrated best (under gate none a new one comes faster than a gauntlet
     * ends): the newest rated version's rating, which and how old. */
    if (!s_rated(j, "ratings.best.elo") && s_rated(j, "ratings.rated.elo") &&
        j_num(j, "ratings.rated.version") > 0) {
        char age[32];
        s_elo(j, "ratings.rated", elo, sizeof elo);
        s_duration(j_num(j, "ratings.rated.age_s"), age, sizeof age);
        fprintf(o, " (newest rated v%.0f %s, %s ago)", j_num(j, "ratings.rated.version"), elo,
                age);
    }
    fprintf(o, "; rating games %.1f%% of game time (at most %.0f%%)",
            100 * j_num(j, "ratings.eval_share"), 100 * j_num(j, "ratings.eval_share_max"));
    if (j_get(j, "ratings.match.a"))
        fprintf(o, "; playing %s vs %s %.0f/%.0f", j_str(j, "ratings.match.a"),
                j_str(j, "ratings.match.b"), j_num(j, "ratings.match.played"),
                j_num(j, "ratings.match.games"));
    fprintf(o, "\n");
    const jnode *eg = j_get(j, "endgame");
    if (eg && eg->type == J_OBJ) {
        fprintf(o, "endgame     ");
        if (j_num(eg, "version") > 0)
            fprintf(o, "v%.0f: policy %.1f%%, search %.1f%% (%.0f simulations) of value-keeping "
                       "moves on %.0f table positions (chance %.1f%%), value error %.3f",
                    j_num(eg, "version"), 100 * j_num(eg, "policy"), 100 * j_num(eg, "search"),
                    j_num(eg, "simulations"), j_num(eg, "positions"), 100 * j_num(eg, "chance"),
                    j_num(eg, "value_mse"));
        else
            fprintf(o, "not measured yet");
        s_part_end(o, eg);
    }
    const jnode *ys = j_get(j, "yardstick");
    if (ys && ys->type == J_OBJ) {
        fprintf(o, "yardstick   ");
        const jnode *yp = j_get(ys, "perfect"), *yv = j_get(ys, "value");
        if (j_num(ys, "version") > 0) {
            fprintf(o, "v%.0f:", j_num(ys, "version"));
            if (yp && yp->type == J_OBJ && j_num(yp, "search.judged") > 0)
                fprintf(o, " search %.1f%%, policy %.1f%% of turns keep the proven value on %.0f "
                           "positions (%.0f and %.0f of %.0f where a turn loses it);",
                        100 * j_num(yp, "search.share"), 100 * j_num(yp, "policy.share"),
                        j_num(yp, "positions"), j_num(yp, "search.keep_choice"),
                        j_num(yp, "policy.keep_choice"), j_num(yp, "search.judged_choice"));
            if (yv && yv->type == J_OBJ) {
                fprintf(o, " value error %.3f (middle %.3f, ending %.3f)", j_num(yv, "mse"),
                        j_num(yv, "phases.middle.mse"), j_num(yv, "phases.ending.mse"));
                if (j_num(yv, "compared") > 0)
                    fprintf(o, ", 200 and 1600 simulations differ in %.1f%% of %.0f",
                            100 * j_num(yv, "differ_share"), j_num(yv, "compared"));
            }
        } else {
            fprintf(o, "not measured yet");
        }
        s_part_end(o, ys);
    }
    /* The judge of the rated bests' moves (docs/ratings.md "The judges of
     * the bests"): perfect play (Khreibaga) or gnubg (backgammon). */
    const jnode *jd = j_get(j, "judge");
    if (jd && jd->type == J_OBJ) {
        bool perfect = !strcmp(j_str(jd, "kind"), "perfect");
        fprintf(o, "judge       %s%s: ", perfect ? "perfect play" : "gnubg ",
                perfect ? "" : j_str(jd, "level"));
        if (j_num(jd, "version") > 0 && perfect && j_num(jd, "games") > 0) {
            fprintf(o, "v%.0f %.2f value-losing turns a game [%.2f, %.2f] (%.0f in %.0f rating "
                       "games, %.0f turns settled",
                    j_num(jd, "version"), j_num(jd, "per_game"), j_num(jd, "lo"), j_num(jd, "hi"),
                    j_num(jd, "losing"), j_num(jd, "games"), j_num(jd, "decisions"));
            const jnode *open = j_get(jd, "unknown"); /* null after a restart: not kept */
            if (open && open->type == J_NUM)
                fprintf(o, ", %.0f open", open->num);
            fprintf(o, ")");
        } else if (j_num(jd, "version") > 0 && !perfect && j_num(jd, "decisions") > 0)
            fprintf(o, "v%.0f %.1f mp per decision [%.1f, %.1f], PR %.1f (%.0f decisions in %.0f "
                       "rating games)",
                    j_num(jd, "version"), j_num(jd, "mp"), j_num(jd, "mp_lo"), j_num(jd, "mp_hi"),
                    j_num(jd, "pr"), j_num(jd, "decisions"), j_num(jd, "games"));
        else
            fprintf(o, "no rating game judged yet");
        if (j_num(jd, "waiting") > 0)
            fprintf(o, "; %.0f waiting", j_num(jd, "waiting"));
        if (j_str(jd, "error")[0])
            fprintf(o, "; last failure: %s", j_str(jd, "error"));
        fprintf(o, "\n");
    }
    static const char *const kinds[3] = {"selfplay", "arena", "eval"};
    static const char *const shown[3] = {"self-play", "arena", "rating"};
    bool first = true;
    for (int k = 0; k < 3; k++) {
        char p[64];
        snprintf(p, sizeof p, "games_by_kind.%s", kinds[k]);
        const jnode *g = j_get(j, p);
        double n = g ? j_num(g, "games") : 0;
        if (n <= 0)
            continue;
        fprintf(o, "%-11s %-9s %.0f since start: first player won %.0f%%, second %.0f%%, drawn "
                   "%.0f%%; %.1f turns a game\n",
                first ? "games" : "", shown[k], n, 100 * j_num(g, "first_wins") / n,
                100 * j_num(g, "second_wins") / n, 100 * j_num(g, "draws") / n,
                j_num(g, "mean_plies"));
        first = false;
    }
    s_stall(j, stall_minutes, stall, sizeof stall);
    if (stall[0])
        fprintf(o, "%s\n", stall);
}

static void s_print(const jnode *j, FILE *o, double stall_minutes)
{
    char up[32];
    s_duration(j_num(j, "coordinator.uptime_s"), up, sizeof up);
    fprintf(o, "coordinator %s (%s, protocol %.0f), up %s\n", j_str(j, "coordinator.name"),
            j_str(j, "coordinator.game"), j_num(j, "coordinator.protocol"), up);
    fprintf(o, "models      best %.0f, latest %.0f, candidate %.0f, queued %.0f, promotions %.0f\n",
            j_num(j, "models.best"), j_num(j, "models.latest"), j_num(j, "models.candidate"),
            j_num(j, "models.queued"), j_num(j, "models.promotions"));
    if (j_get(j, "gate"))
        s_print_learning(j, o, stall_minutes);
    double w = j_num(j, "arena.wins"), d = j_num(j, "arena.draws"), l = j_num(j, "arena.losses");
    if (j_num(j, "arena.candidate") > 0) {
        double n = w + d + l;
        char score[16] = "-"; /* no score before a game */
        if (n > 0)
            snprintf(score, sizeof score, "%.3f", (w + d / 2) / n);
        fprintf(o, "arena       candidate %.0f vs best %.0f: %.0f/%.0f played, +%.0f =%.0f -%.0f "
                   "(score %s), %.0f assigned, %.0f open\n",
                j_num(j, "arena.candidate"), j_num(j, "arena.best"), n, j_num(j, "arena.games"),
                w, d, l, score, j_num(j, "arena.assigned"), j_num(j, "arena.open"));
    } else {
        fprintf(o, "arena       none running\n");
    }
    if (j_num(j, "arena.last.candidate") > 0)
        fprintf(o, "            last: candidate %.0f %s (+%.0f =%.0f -%.0f)\n",
                j_num(j, "arena.last.candidate"),
                j_num(j, "arena.last.promoted") ? "promoted" : "rejected",
                j_num(j, "arena.last.wins"), j_num(j, "arena.last.draws"),
                j_num(j, "arena.last.losses"));
    fprintf(o, "replay      %.0f games, %.0f positions; window [%.0f, %.0f) = %.0f of %.0f\n",
            j_num(j, "replay.games"), j_num(j, "replay.positions"), j_num(j, "replay.window_lo"),
            j_num(j, "replay.window_hi"), j_num(j, "replay.window_positions"),
            j_num(j, "replay.window"));
    /* Per minute, as the workers' column, the progress line and the dashboard. */
    fprintf(o, "ingest      %.0f stored (%.1f games/min, %.0f positions/min), %.0f duplicates, "
               "%.0f rejected",
            j_num(j, "ingest.accepted"), 60 * j_num(j, "ingest.games_per_s"),
            60 * j_num(j, "ingest.positions_per_s"), j_num(j, "ingest.duplicates"),
            j_num(j, "ingest.rejected"));
    const jnode *rb = j_get(j, "ingest.rejected_by_reason");
    bool first = true;
    for (const jnode *c = rb ? rb->child : NULL; c; c = c->next)
        if (c->num > 0) {
            fprintf(o, "%s%s %.0f", first ? " (" : ", ", c->key, c->num);
            first = false;
        }
    fprintf(o, "%s\n", first ? "" : ")");
    if (j_get(j, "forge.on")) {
        if (j_num(j, "forge.on"))
            fprintf(o,
                    "forged      1 in %.0f states re-searched: %.0f games checked "
                    "(%.0f states), %.0f forged, %.0f not checkable, %.0f skipped, %.0f held now\n",
                    j_num(j, "forge.one_in_states"), j_num(j, "forge.checked"),
                    j_num(j, "forge.states"), j_num(j, "forge.forged"), j_num(j, "forge.unchecked"),
                    j_num(j, "forge.skipped"), j_num(j, "forge.held"));
        else
            fprintf(o, "forged      not checked (forge_check_states = 0)\n");
    }
    const jnode *bar = j_get(j, "forge.barred");
    for (const jnode *x = bar && bar->type == J_ARR ? bar->child : NULL; x; x = x->next)
        fprintf(o, "barred      %s, a proven forger: %.0f games (%.0f positions) taken out "
                   "of the window; evidence: %s\n", j_str(x, "client"),
                j_num(x, "removed_games"), j_num(x, "removed_positions"), j_str(x, "evidence"));
    if (j_get(j, "auth.curve")) {
        if (j_num(j, "auth.curve"))
            fprintf(o, "auth        CurveZMQ, %.0f client keys; refused: %.0f connections of "
                       "unknown keys, %.0f requests outside their role, %.0f failed handshakes\n",
                    j_num(j, "auth.keys"), j_num(j, "auth.refused_keys"),
                    j_num(j, "auth.refused_requests"), j_num(j, "auth.handshake_failures"));
        else
            fprintf(o, "auth        none (curve = false): anyone who reaches the ports may submit "
                       "games and candidates\n");
    }
    if (j_num(j, "trainer.seen")) {
        char ago[32];
        s_duration(j_num(j, "trainer.last_contact_s"), ago, sizeof ago);
        char aux[96] = ""; /* the auxiliary heads' parts, when the network has them */
        double ol = j_num(j, "trainer.opp_policy_loss"), ml = j_num(j, "trainer.material_loss");
        if (ol > 0 || ml > 0)
            snprintf(aux, sizeof aux, ", aux: opp policy %.4f, material %.4f", ol, ml);
        fprintf(o, "trainer     step %.0f, loss %.4f (policy %.4f, value %.4f%s), %.2f steps/s, "
                   "last contact %s ago\n",
                j_num(j, "trainer.step"), j_num(j, "trainer.loss"),
                j_num(j, "trainer.policy_loss"), j_num(j, "trainer.value_loss"), aux,
                j_num(j, "trainer.steps_per_s"), ago);
    } else {
        fprintf(o, "trainer     not seen\n");
    }
    fprintf(o, "clients     %.0f live of %.0f known\n", j_num(j, "workers.live"),
            j_num(j, "workers.known"));
    const jnode *list = j_get(j, "workers.list");
    if (list && list->child)
        fprintf(o, "  %-28s %-8s %-16s %6s %8s %7s %6s %5s %6s %8s\n", "ID", "ROLE", "HOST",
                "LAST", "GAMES", "G/MIN", "REJ", "ARENA", "MODEL", "SIMS/S");
    for (const jnode *c = list ? list->child : NULL; c; c = c->next) {
        char last[32], model[16] = "-", speed[16] = "-";
        s_duration(j_num(c, "last_contact_s"), last, sizeof last);
        if (j_num(c, "model_version") > 0)
            snprintf(model, sizeof model, "v%.0f", j_num(c, "model_version"));
        if (j_num(c, "sims_per_s") > 0)
            snprintf(speed, sizeof speed, "%.0f", j_num(c, "sims_per_s"));
        char forged[64] = "";
        if (j_num(c, "forged") > 0)
            snprintf(forged, sizeof forged, "  (%.0f forged%s)", j_num(c, "forged"),
                     j_num(c, "arena_barred") ? ", no arena slots" : "");
        fprintf(o, "  %-28.28s %-8.8s %-16.16s %6s %8.0f %7.1f %6.0f %5.0f %6s %8s%s%s\n",
                j_str(c, "id"), j_str(c, "role"), j_str(c, "host"), last, j_num(c, "games"),
                j_num(c, "games_per_min"), j_num(c, "rejected"), j_num(c, "arena_slots"), model,
                speed, forged, j_num(c, "alive") ? "" : "  (gone)");
    }
}

/* One line: what `make run` prints every few seconds. */
static void s_print_line(const jnode *j, FILE *o)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    fprintf(o, "%02d:%02d:%02d games %.0f (%.1f/min) positions %.0f", tm.tm_hour, tm.tm_min,
            tm.tm_sec, j_num(j, "replay.games"), 60 * j_num(j, "ingest.games_per_s"),
            j_num(j, "replay.positions"));
    if (j_num(j, "trainer.seen") && j_num(j, "trainer.step") > 0)
        fprintf(o, " | step %.0f loss %.3f", j_num(j, "trainer.step"), j_num(j, "trainer.loss"));
    else if (j_num(j, "trainer.seen"))
        fprintf(o, " | step 0 (waiting for positions)");
    else
        fprintf(o, " | step -");
    fprintf(o, " | best v%.0f", j_num(j, "models.best"));
    if (s_rated(j, "ratings.best.elo")) {
        fprintf(o, " elo %+.0f +/- %.0f", j_num(j, "ratings.best.elo"),
                (j_num(j, "ratings.best.elo_hi") - j_num(j, "ratings.best.elo_lo")) / 2);
    } else if (j_num(j, "ratings.rated.version") > 0) {
        /* A best too new to be rated: the newest rated one, named, with its
         * age (gate none replaces the best faster than its gauntlets end). */
        double age = j_num(j, "ratings.rated.age_s");
        fprintf(o, " | rated v%.0f elo %+.0f +/- %.0f, %.0f %s ago",
                j_num(j, "ratings.rated.version"), j_num(j, "ratings.rated.elo"),
                (j_num(j, "ratings.rated.elo_hi") - j_num(j, "ratings.rated.elo_lo")) / 2,
                age >= 120 ? age / 60 : age, age >= 120 ? "min" : "s");
    }
    if (j_num(j, "arena.candidate") > 0)
        fprintf(o, " | arena v%.0f %.0f/%.0f +%.0f =%.0f -%.0f", j_num(j, "arena.candidate"),
                j_num(j, "arena.wins") + j_num(j, "arena.draws") + j_num(j, "arena.losses"),
                j_num(j, "arena.games"), j_num(j, "arena.wins"), j_num(j, "arena.draws"),
                j_num(j, "arena.losses"));
    const char *mode = j_str(j, "gate.mode");
    if (mode && !strcmp(mode, "none"))
        fprintf(o, " | gate none, %.0f promotions", j_num(j, "models.promotions"));
    else if (j_num(j, "arena.last.candidate") > 0)
        fprintf(o, " | last arena v%.0f %s +%.0f =%.0f -%.0f", j_num(j, "arena.last.candidate"),
                j_num(j, "arena.last.promoted") ? "promoted" : "rejected",
                j_num(j, "arena.last.wins"), j_num(j, "arena.last.draws"),
                j_num(j, "arena.last.losses"));
    else
        fprintf(o, " | last arena -");
    int workers = 0;
    const jnode *list = j_get(j, "workers.list");
    for (const jnode *c = list ? list->child : NULL; c; c = c->next)
        workers += j_num(c, "alive") && !strcmp(j_str(c, "role"), "worker");
    fprintf(o, " | workers %d", workers);
    if (j_num(j, "ingest.rejected") > 0)
        fprintf(o, " | rejected %.0f", j_num(j, "ingest.rejected"));
    fprintf(o, "\n");
}

typedef struct status_config {
    bool json;            /* print the raw JSON */
    bool line;            /* print one summary line */
    double stall_minutes; /* warn when the best is older than this while the trainer goes on */
} status_config;

#define CONFIG_STRUCT status_config
static const config_option s_status_options[] = {
    CONFIG_ROW_BOOL(json, "false", "print the JSON document as received"),
    CONFIG_ROW_BOOL(line, "false",
                    "print one line: time, games (per minute), positions, trainer step and loss, "
                    "best version (and its rating), running and last arena, live workers"),
    CONFIG_ROW_DOUBLE(stall_minutes, "15", 0.1, 1e6,
                      "warn when the best has not changed for this long while the trainer took "
                      "steps"),
};
#undef CONFIG_STRUCT
#define N_STATUS_OPTIONS (sizeof s_status_options / sizeof s_status_options[0])

static const char s_status_usage[] =
    "usage: kz status [URL] [--json | --line]\n\n"
    "Prints a coordinator's status (GET URL, default http://127.0.0.1:8080/status;\n"
    "a URL without a path gets /status): the gate and how long the best has\n"
    "stood, the best's rating, games by kind with results by colour, models,\n"
    "arena, replay store, ingest and rejections, trainer, and every client with\n"
    "its last contact and speed; a warning when the best has stalled.\n"
    "Exit status 1 when the coordinator cannot be reached.\n\n";

int cmd_status(int argc, char **argv)
{
    status_config cfg;
    const char *pos[1];
    size_t npos = 0;
    int rc = config_start("kz: status", s_status_usage, s_status_options, N_STATUS_OPTIONS, &cfg,
                          argc, argv, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (cfg.json && cfg.line)
        return kz_usage_error("status: --json and --line exclude each other");
    const char *url = npos ? pos[0] : "http://127.0.0.1:8080/status";
    char *body;
    rc = s_fetch("status", url, &body);
    if (rc)
        return rc;
    if (cfg.json) {
        fputs(body, stdout);
        free(body);
        return 0;
    }
    jparser jp = {body, body + strlen(body), 0};
    jnode *j = j_value(&jp);
    if (!j || j->type != J_OBJ) {
        fprintf(stderr, "kz: status: %s did not return a JSON object\n", url);
        j_free(j);
        free(body);
        return 1;
    }
    if (cfg.line)
        s_print_line(j, stdout);
    else
        s_print(j, stdout, cfg.stall_minutes);
    j_free(j);
    free(body);
    return 0;
}

/* --- kz ratings ------------------------------------------------------------------ */

typedef struct ratings_config {
    bool pairs; /* also list every pair that met */
} ratings_config;

#define CONFIG_STRUCT ratings_config
static const config_option s_ratings_options[] = {
    CONFIG_ROW_BOOL(pairs, "false",
                    "also list every pair of players that met: games, pairs by outcome, score"),
};
#undef CONFIG_STRUCT
#define N_RATINGS_OPTIONS (sizeof s_ratings_options / sizeof s_ratings_options[0])

/* A player's games and points over all its tallies. */
static void s_player_score(const jnode *tallies, const char *name, double *games, double *points)
{
    *games = *points = 0;
    for (const jnode *t = tallies ? tallies->child : NULL; t; t = t->next) {
        bool a = !strcmp(j_str(t, "a"), name), b = !strcmp(j_str(t, "b"), name);
        if (!a && !b)
            continue;
        double w = j_num(t, "wins"), d = j_num(t, "draws"), l = j_num(t, "losses");
        *games += w + d + l;
        *points += (a ? w : l) + d / 2;
    }
}

static const char s_ratings_usage[] =
    "usage: kz ratings [URL] [--pairs]\n\n"
    "The rating pool of a coordinator (GET URL, default\n"
    "http://127.0.0.1:8080/status): every anchor (fixed baseline player) and rated\n"
    "model, strongest first, with its games, its score over them, and its Elo\n"
    "with the 95% interval, from one maximum-likelihood fit over all rating and\n"
    "arena games (random = 0). Then the ratings of each best when its gauntlet\n"
    "ended. Exit status 1 when the coordinator cannot be reached.\n\n";

int cmd_ratings(int argc, char **argv)
{
    ratings_config cfg;
    const char *pos[1];
    size_t npos = 0;
    int rc = config_start("kz: ratings", s_ratings_usage, s_ratings_options, N_RATINGS_OPTIONS,
                          &cfg, argc, argv, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    const char *url = npos ? pos[0] : "http://127.0.0.1:8080/status";
    char *body;
    rc = s_fetch("ratings", url, &body);
    if (rc)
        return rc;
    jparser jp = {body, body + strlen(body), 0};
    jnode *j = j_value(&jp);
    const jnode *players = j && j->type == J_OBJ ? j_get(j, "ratings.players") : NULL;
    if (!players) {
        fprintf(stderr, "kz: ratings: %s has no ratings (an older coordinator?)\n", url);
        j_free(j);
        free(body);
        return 1;
    }
    const jnode *tallies = j_get(j, "ratings.tallies");
    /* Strongest first: a selection over the list (tens of players). */
    int n = 0;
    for (const jnode *p = players->child; p; p = p->next)
        n++;
    const jnode **order = calloc((size_t)(n ? n : 1), sizeof *order);
    int k = 0;
    for (const jnode *p = players->child; p; p = p->next)
        order[k++] = p;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            double ea = s_rated(order[a], "elo") ? j_num(order[a], "elo") : -1e9;
            double eb = s_rated(order[b], "elo") ? j_num(order[b], "elo") : -1e9;
            if (eb > ea) {
                const jnode *t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
        }
    printf("%-16s %-7s %7s %7s  %s\n", "PLAYER", "KIND", "GAMES", "SCORE", "ELO (95% interval)");
    for (int a = 0; a < n; a++) {
        const jnode *p = order[a];
        double games, points;
        s_player_score(tallies, j_str(p, "name"), &games, &points);
        char elo[96], score[16] = "-";
        s_elo(p, NULL, elo, sizeof elo);
        if (games > 0)
            snprintf(score, sizeof score, "%.3f", points / games);
        printf("%-16.16s %-7s %7.0f %7s  %s\n", j_str(p, "name"),
               j_num(p, "fixed") ? "scale" : j_num(p, "anchor") ? "anchor" : "model", games,
               score, elo);
    }
    free(order);
    const jnode *hist = j_get(j, "ratings.history");
    if (hist && hist->child) {
        printf("\nthe best when its gauntlet ended:\n");
        for (const jnode *h = hist->child; h; h = h->next) {
            time_t t = (time_t)(j_num(h, "time_ms") / 1000);
            struct tm tm;
            localtime_r(&t, &tm);
            printf(
                "  %04d-%02d-%02d %02d:%02d  v%-5.0f %+6.0f (95%%: %+.0f .. %+.0f), %.0f games\n",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                j_num(h, "version"), j_num(h, "elo"), j_num(h, "elo_lo"), j_num(h, "elo_hi"),
                j_num(h, "games"));
        }
    }
    if (cfg.pairs && tallies) {
        printf("\n%-16s %-16s %6s  %-22s %s\n", "A", "B", "GAMES", "PAIRS (LL LD D/WL WD WW)",
               "A's SCORE");
        for (const jnode *t = tallies->child; t; t = t->next) {
            double w = j_num(t, "wins"), d = j_num(t, "draws"), l = j_num(t, "losses");
            const jnode *pp = j_get(t, "pairs");
            double c[5] = {0};
            int i = 0;
            for (const jnode *x = pp ? pp->child : NULL; x && i < 5; x = x->next)
                c[i++] = x->num;
            char pb[64];
            snprintf(pb, sizeof pb, "%.0f %.0f %.0f %.0f %.0f", c[0], c[1], c[2], c[3], c[4]);
            char score[16] = "-";
            if (w + d + l > 0)
                snprintf(score, sizeof score, "%.3f", (w + d / 2) / (w + d + l));
            printf("%-16.16s %-16.16s %6.0f  %-22s %s\n", j_str(t, "a"), j_str(t, "b"),
                   w + d + l, pb, score);
        }
    }
    j_free(j);
    free(body);
    return 0;
}
