/* ratings: the rating pool of the cluster (fixed baseline players, the
 * "anchors", and the best models), the tallies of every pair that met, the
 * evaluation matches handed to workers, and the fitted ratings. See
 * features.h.
 *
 * Players are named by text: an anchor by its player spec ("alphabeta:4"),
 * a model by "v" and its version ("v12"). A tally holds everything two
 * players did against each other (wins/draws/losses of the first by name,
 * and the finished pairs as pentanomial counts); the tallies of rating games
 * and arena games are persisted as meta "tallies" in the same transaction as
 * the games they count, so a restart neither loses nor double-counts one.
 *
 * Matches. One evaluation match runs at a time: side A against side B,
 * `pairs` openings of the book from book_off on, each played with both
 * colours (slot j: opening book_off + j/2, side A moves first in even
 * slots). What to play next is decided from the tallies alone, so nothing
 * about matches needs persisting: an unfinished match after a restart is
 * planned again from what was counted.
 *   1. The gauntlet of the current best: `eval_pairs` pairs against each of
 *      the two anchors nearest its rating (the pairing of most information,
 *      p(1-p) largest, as KataGo's rating games do) and against the best
 *      rated before it.
 *   2. Calibration: `calibration_pairs` pairs between neighbours in the
 *      anchor list (ordered weakest first), so that the anchors' own
 *      ratings come from games too.
 * The two kinds alternate while both have work. A busy cluster rates less
 * often: slots go to rating games only while they have had less than
 * `eval_share` of the slot time of all stored games (game durations).
 *
 * The fit (rating.h) runs over all tallies whenever a match ends, with the
 * anchors of the game's fixed scale (scale.h, play/scales.txt) held at their
 * ratings there (a game without one: "random", else the first anchor, at 0);
 * calibration skips the pairs of anchors both on the scale. When the gauntlet of a
 * best ends, its rating joins the history (meta "rating_history"); with the
 * gate "none", a best rated below the previous best's 95% interval is
 * reverted to that previous best (the guard). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/features.h"
#include "server/services.h"
#include "play/rating.h"
#include "play/scale.h"
#include "common/util.h"

#define TALLY_MAGIC "KZT2"    /* with the points (pa, pb) */
#define TALLY_MAGIC_V1 "KZT1" /* without: read as one point a win */
#define HISTORY_MAGIC "KZH1"
#define TALLY_BYTES_V1 (2 * COORD_NAME + 8 * 4)
#define TALLY_BYTES (TALLY_BYTES_V1 + 2 * 4)
#define HISTORY_BYTES 40
#define HISTORY_MAX 10000

enum { MATCH_GAUNTLET = 1, MATCH_CALIBRATION = 2 };

static void s_model_name(char *buf, uint32_t version)
{
    snprintf(buf, COORD_NAME, "v%u", version);
}

/* --- tallies ------------------------------------------------------------------------ */

/* The tally of a and b (made when absent and make is set), and whether a is
 * its first player. NULL when absent (or no memory). */
static tally *s_tally(coord *c, const char *a, const char *b, bool make, bool *a_first)
{
    bool first = strcmp(a, b) < 0;
    const char *x = first ? a : b, *y = first ? b : a;
    if (a_first)
        *a_first = first;
    for (size_t i = 0; i < c->n_tallies; i++)
        if (!strcmp(c->tallies[i].a, x) && !strcmp(c->tallies[i].b, y))
            return &c->tallies[i];
    if (!make)
        return NULL;
    if (c->n_tallies == c->cap_tallies) {
        size_t cap = c->cap_tallies ? 2 * c->cap_tallies : 64;
        tally *t = realloc(c->tallies, cap * sizeof *t);
        if (!t)
            return NULL;
        c->tallies = t;
        c->cap_tallies = cap;
    }
    tally *t = &c->tallies[c->n_tallies++];
    memset(t, 0, sizeof *t);
    snprintf(t->a, sizeof t->a, "%s", x);
    snprintf(t->b, sizeof t->b, "%s", y);
    return t;
}

/* Pairs a and b have finished. */
static uint32_t s_pairs(coord *c, const char *a, const char *b)
{
    tally *t = s_tally(c, a, b, false, NULL);
    uint32_t n = 0;
    for (int k = 0; t && k < MATCH_PENTA; k++)
        n += t->penta[k];
    return n;
}

/* Counts one game (r: +1 a won, 0 draw, -1 a lost; points: what the win
 * scored, 1..GAME_MAX_POINTS). */
static void s_tally_game(coord *c, const char *a, const char *b, int r, int points)
{
    bool first;
    tally *t = s_tally(c, a, b, true, &first);
    if (!t)
        return;
    int rr = first ? r : -r;
    uint32_t pts = points > 1 && points <= GAME_MAX_POINTS ? (uint32_t)points : 1;
    t->w += rr > 0;
    t->d += rr == 0;
    t->l += rr < 0;
    t->pa += rr > 0 ? pts : 0;
    t->pb += rr < 0 ? pts : 0;
}

/* Counts one finished pair (r1, r2 from a's view). */
static void s_tally_pair(coord *c, const char *a, const char *b, int r1, int r2)
{
    bool first;
    tally *t = s_tally(c, a, b, true, &first);
    if (!t)
        return;
    int penta[MATCH_PENTA] = {0};
    match_penta_add(penta, first ? r1 : -r1, first ? r2 : -r2);
    for (int k = 0; k < MATCH_PENTA; k++)
        t->penta[k] += (uint32_t)penta[k];
}

double ratings_points_score(const tally *t)
{
    double games = (double)t->w + t->d + t->l, points = (double)t->pa + t->pb + t->d;
    return points > 0 ? games * ((double)t->pa + 0.5 * t->d) / points : 0;
}

size_t ratings_serialize(const coord *c, uint8_t **out)
{
    size_t len;
    uint8_t *b = coord_meta_new(TALLY_MAGIC, c->n_tallies, 8, TALLY_BYTES, &len);
    for (size_t i = 0; i < c->n_tallies; i++) {
        const tally *t = &c->tallies[i];
        uint8_t *p = b + 8 + i * TALLY_BYTES;
        memcpy(p, t->a, COORD_NAME);
        memcpy(p + COORD_NAME, t->b, COORD_NAME);
        p += 2 * COORD_NAME;
        host_put32(p, t->w);
        host_put32(p + 4, t->d);
        host_put32(p + 8, t->l);
        for (int k = 0; k < MATCH_PENTA; k++)
            host_put32(p + 12 + 4 * k, t->penta[k]);
        host_put32(p + 12 + 4 * MATCH_PENTA, t->pa);
        host_put32(p + 16 + 4 * MATCH_PENTA, t->pb);
    }
    *out = b;
    return len;
}

/* Reads meta "tallies" (replacing what is in memory): "KZT2", or a store's
 * older "KZT1" without the points (each win read as one point, which is what
 * it counted). 0, or an error: then the tallies are empty. */
static int s_load_tallies(coord *c)
{
    c->n_tallies = 0;
    size_t cap = 8 + (size_t)(1u << 20), len = 0;
    uint8_t *buf = xmalloc(cap);
    int rc = store_get_meta(c->st, "tallies", buf, cap, &len);
    if (rc == KZ_ENOTFOUND) {
        free(buf);
        return 0;
    }
    uint32_t n = len >= 8 ? host_get32(buf + 4) : 0;
    bool v1 = len >= 8 && !memcmp(buf, TALLY_MAGIC_V1, 4);
    size_t bytes = v1 ? TALLY_BYTES_V1 : TALLY_BYTES;
    if (rc || len < 8 || (!v1 && memcmp(buf, TALLY_MAGIC, 4)) ||
        len != 8 + (size_t)n * bytes) {
        log_error("ratings: saved tallies unreadable (%s); starting without them",
                  rc ? err_str(rc) : "bad format");
        free(buf);
        return rc ? rc : KZ_ECORRUPT;
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = buf + 8 + (size_t)i * bytes;
        char a[COORD_NAME], b[COORD_NAME];
        memcpy(a, p, COORD_NAME);
        memcpy(b, p + COORD_NAME, COORD_NAME);
        a[COORD_NAME - 1] = b[COORD_NAME - 1] = 0;
        tally *t = s_tally(c, a, b, true, NULL);
        if (!t)
            break;
        p += 2 * COORD_NAME;
        t->w = host_get32(p);
        t->d = host_get32(p + 4);
        t->l = host_get32(p + 8);
        for (int k = 0; k < MATCH_PENTA; k++)
            t->penta[k] = host_get32(p + 12 + 4 * k);
        t->pa = v1 ? t->w : host_get32(p + 12 + 4 * MATCH_PENTA);
        t->pb = v1 ? t->l : host_get32(p + 16 + 4 * MATCH_PENTA);
    }
    free(buf);
    return 0;
}

/* --- the fit ------------------------------------------------------------------------ */

/* Index of player name in c->rated, -1 none. */
static int s_rated(const coord *c, const char *name)
{
    for (size_t i = 0; i < c->n_rated; i++)
        if (!strcmp(c->rated[i].name, name))
            return (int)i;
    return -1;
}

void ratings_fit(coord *c)
{
    /* Step 1. The players: the anchors, then every model in a tally. */
    size_t n = 0, cap = (size_t)c->n_anchors + 2 * c->n_tallies;
    rated_player *pl = xcalloc(cap ? cap : 1, sizeof *pl);
    for (int k = 0; k < c->n_anchors; k++)
        snprintf(pl[n++].name, COORD_NAME, "%s", c->anchors[k]);
    for (size_t i = 0; i < c->n_tallies; i++)
        for (int s = 0; s < 2; s++) {
            const char *name = s ? c->tallies[i].b : c->tallies[i].a;
            size_t j = 0;
            while (j < n && strcmp(pl[j].name, name))
                j++;
            if (j == n)
                snprintf(pl[n++].name, COORD_NAME, "%s", name);
        }
    /* Step 2. The results, per pair of indices. */
    rating_result *res = xcalloc(c->n_tallies ? c->n_tallies : 1, sizeof *res);
    int nr = 0;
    for (size_t i = 0; i < c->n_tallies; i++) {
        const tally *t = &c->tallies[i];
        int ia = -1, ib = -1;
        for (size_t j = 0; j < n; j++) {
            if (!strcmp(pl[j].name, t->a))
                ia = (int)j;
            if (!strcmp(pl[j].name, t->b))
                ib = (int)j;
        }
        if (ia < 0 || ib < 0 || ia == ib || t->w + t->d + t->l == 0)
            continue;
        res[nr] = (rating_result){.i = ia, .j = ib, .wins = t->w, .draws = t->d,
                                  .losses = t->l};
        if (c->g->max_points > 1) { /* scored in points: a's share of them */
            res[nr].scored = true;
            res[nr].score = ratings_points_score(t);
        }
        nr++;
    }
    /* Step 3. The anchors on the game's fixed scale (scale.h) held at their
     * ratings there; without a scale for the game, random = 0 (else the
     * first anchor) and the other baseline players fitted like the models,
     * from their games. */
    rating_anchor fixed[COORD_MAX_ANCHORS];
    scale_entry se[COORD_MAX_ANCHORS];
    bool on_scale[COORD_MAX_ANCHORS] = {false};
    int n_fixed = 0;
    for (int k = 0; k < c->n_anchors; k++)
        if (scale_find(c->g->name, c->anchors[k], &se[k])) {
            on_scale[k] = true;
            fixed[n_fixed++] = (rating_anchor){k, se[k].elo};
        }
    if (!n_fixed) {
        int zero = 0;
        for (int k = 0; k < c->n_anchors; k++)
            if (!strcmp(c->anchors[k], "random"))
                zero = k;
        fixed[n_fixed++] = (rating_anchor){zero, 0.0};
    }
    rating_config rc_cfg;
    rating_config_default(&rc_cfg);
    rating_fit *fit = NULL;
    char err[200];
    int rc = n ? rating_fit_compute((int)n, res, nr, fixed, n_fixed, &rc_cfg, &fit, err,
                                    sizeof err)
               : 0;
    if (rc)
        log_warn("ratings: the fit failed: %s", err);
    for (size_t j = 0; j < n; j++) {
        pl[j].anchor = (int)j < c->n_anchors;
        pl[j].rated = fit && fit->status[j] != RATING_UNRATED;
        pl[j].elo = fit ? fit->elo[j] : NAN;
        pl[j].lo = fit ? fit->lo[j] : NAN;
        pl[j].hi = fit ? fit->hi[j] : NAN;
        pl[j].games = fit ? (uint64_t)fit->games[j] : 0;
        /* A fixed anchor: rated, with its measurement's interval. */
        if ((int)j < c->n_anchors && on_scale[j]) {
            pl[j].fixed = true;
            pl[j].rated = true;
            pl[j].elo = se[j].elo;
            pl[j].lo = se[j].lo;
            pl[j].hi = se[j].hi;
        }
    }
    rating_fit_destroy(&fit);
    free(res);
    free(c->rated);
    c->rated = pl;
    c->n_rated = n;
    c->fits++;
}

const rated_player *ratings_get(const coord *c, uint32_t version)
{
    char name[COORD_NAME];
    s_model_name(name, version);
    int i = s_rated(c, name);
    return i >= 0 ? &c->rated[i] : NULL;
}

/* --- history ------------------------------------------------------------------------ */

static void s_save_history(coord *c)
{
    size_t len;
    uint8_t *b = coord_meta_new(HISTORY_MAGIC, c->n_history, 8, HISTORY_BYTES, &len);
    for (size_t i = 0; i < c->n_history; i++) {
        const rating_point *h = &c->history[i];
        uint8_t *p = b + 8 + i * HISTORY_BYTES;
        memcpy(p, &h->time_ms, 8);
        host_put32(p + 8, h->version);
        memcpy(p + 12, &h->elo, 8);
        memcpy(p + 20, &h->lo, 8);
        memcpy(p + 28, &h->hi, 8);
        host_put32(p + 36, h->games);
    }
    int rc = store_put_meta(c->st, "rating_history", b, len);
    if (rc)
        log_error("ratings: cannot save the history: %s", err_str(rc));
    free(b);
}

static void s_load_history(coord *c)
{
    size_t cap = 8 + (size_t)HISTORY_MAX * HISTORY_BYTES, len = 0;
    uint8_t *b = xmalloc(cap);
    int rc = store_get_meta(c->st, "rating_history", b, cap, &len);
    uint32_t n = rc == 0 && len >= 8 ? host_get32(b + 4) : 0;
    if (rc == 0 && (len < 8 || memcmp(b, HISTORY_MAGIC, 4) || n > HISTORY_MAX ||
                    len != 8 + (size_t)n * HISTORY_BYTES)) {
        log_error("ratings: saved history unreadable; starting without it");
        n = 0;
    }
    c->history = xcalloc(HISTORY_MAX, sizeof *c->history);
    c->n_history = n;
    for (uint32_t i = 0; i < n; i++) {
        rating_point *h = &c->history[i];
        const uint8_t *p = b + 8 + (size_t)i * HISTORY_BYTES;
        memcpy(&h->time_ms, p, 8);
        h->version = host_get32(p + 8);
        memcpy(&h->elo, p + 12, 8);
        memcpy(&h->lo, p + 20, 8);
        memcpy(&h->hi, p + 28, 8);
        h->games = host_get32(p + 36);
    }
    free(b);
}

/* The gauntlet of version v has ended: its point in the history, and the
 * guard of gate none. */
static void s_gauntlet_done(coord *c, uint32_t v)
{
    const rated_player *r = ratings_get(c, v);
    if (!r || !r->rated)
        return;
    if (c->n_history == HISTORY_MAX) { /* keep the first and the newest */
        memmove(c->history + 1, c->history + 2, (HISTORY_MAX - 2) * sizeof *c->history);
        c->n_history--;
    }
    c->history[c->n_history++] =
        (rating_point){time_wall_ms(), v, r->elo, r->lo, r->hi, (uint32_t)r->games};
    s_save_history(c);
    log_info("ratings: v%u rated %+.0f (95%%: %+.0f .. %+.0f) after %u games", v, r->elo, r->lo,
             r->hi, (unsigned)r->games);
    uint32_t prev = c->rated_best;
    c->rated_best = v;
    if (c->gate.mode != GATE_MODE_NONE || !prev || prev == v || c->best != v)
        return;
    const rated_player *p = ratings_get(c, prev);
    if (p && p->rated && r->elo < p->lo) {
        log_warn("ratings: v%u (%+.0f) is below the interval of v%u (%+.0f .. %+.0f): "
                 "v%u is the best again",
                 v, r->elo, prev, p->lo, p->hi, prev);
        c->reverts++;
        c->rated_best = prev;
        arena_revert(c, prev);
    }
}

/* --- matches ------------------------------------------------------------------------ */

static void s_match_free(evalmatch *m)
{
    free_all(m->result, m->owner, m->assigned_at);
    memset(m, 0, sizeof *m);
}

/* Starts a match of `pairs` pairs between a and b. */
static void s_match_start(coord *c, const char *a, const char *b, uint32_t pairs, int kind,
                          uint32_t subject)
{
    evalmatch *m = &c->ev;
    s_match_free(m);
    uint32_t games = 2 * pairs;
    m->result = xcalloc(games, 1);
    m->owner = xmalloc(games * sizeof *m->owner);
    m->assigned_at = xcalloc(games, sizeof *m->assigned_at);
    for (uint32_t i = 0; i < games; i++)
        m->owner[i] = -1;
    snprintf(m->a, sizeof m->a, "%s", a);
    snprintf(m->b, sizeof m->b, "%s", b);
    m->va = a[0] == 'v' ? (uint32_t)strtoul(a + 1, NULL, 10) : 0;
    m->vb = b[0] == 'v' ? (uint32_t)strtoul(b + 1, NULL, 10) : 0;
    m->games = games;
    m->book_off = s_pairs(c, a, b);
    m->kind = kind;
    m->subject = subject;
    m->started = time_now();
    log_info("ratings: %s against %s, %u pairs (%s)", a, b, pairs,
             kind == MATCH_GAUNTLET ? "gauntlet" : "calibration");
}

static bool s_is_anchor_name(const char *s)
{
    return s[0] != 'v' || s[1] < '0' || s[1] > '9';
}

/* Chooses the opponents of v's gauntlet: the two anchors whose expected
 * score against v's rating (else the previous rated best's, else 0) is
 * nearest 1/2, and the previous rated best. They stay fixed until the
 * gauntlet ends (ratings move while it is played). */
static void s_gauntlet_choose(coord *c, uint32_t v)
{
    const rated_player *rv = ratings_get(c, v);
    const rated_player *rp = c->rated_best && c->rated_best != v ? ratings_get(c, c->rated_best)
                                                                 : NULL;
    double guess = rv && rv->rated && rv->games >= 20 ? rv->elo
                   : rp && rp->rated                  ? rp->elo
                                                      : 0;
    int best_k[2] = {-1, -1};
    double best_i[2] = {-1, -1};
    for (int k = 0; k < c->n_anchors; k++) {
        int i = s_rated(c, c->anchors[k]);
        double e = i >= 0 && c->rated[i].rated ? c->rated[i].elo : 100.0 * k;
        double p = match_score_from_elo(guess - e), info = p * (1 - p);
        if (info > best_i[0]) {
            best_i[1] = best_i[0];
            best_k[1] = best_k[0];
            best_i[0] = info;
            best_k[0] = k;
        } else if (info > best_i[1]) {
            best_i[1] = info;
            best_k[1] = k;
        }
    }
    c->gauntlet_v = v;
    c->gauntlet_n = 0;
    for (int j = 0; j < 2; j++)
        if (best_k[j] >= 0)
            memcpy(c->gauntlet_opp[c->gauntlet_n++], c->anchors[best_k[j]], COORD_NAME);
    if (c->rated_best && c->rated_best != v)
        s_model_name(c->gauntlet_opp[c->gauntlet_n++], c->rated_best);
}

/* What the gauntlet of c->gauntlet_v still needs: an opponent and pairs;
 * false when it is complete. */
static bool s_gauntlet_need(coord *c, char *opponent, uint32_t *pairs)
{
    char me[COORD_NAME];
    s_model_name(me, c->gauntlet_v);
    uint32_t want = (uint32_t)c->cfg.eval_pairs;
    for (int j = 0; j < c->gauntlet_n; j++) {
        uint32_t have = s_pairs(c, me, c->gauntlet_opp[j]);
        if (have < want) {
            snprintf(opponent, COORD_NAME, "%s", c->gauntlet_opp[j]);
            *pairs = want - have;
            return true;
        }
    }
    return false;
}

/* The next match of a gauntlet: the one in progress, else the current
 * best's (when it has no rating yet). False when there is none. A gauntlet
 * that is complete gets its rating recorded (once). */
static bool s_next_gauntlet(coord *c)
{
    if (c->cfg.eval_pairs <= 0 || c->n_anchors == 0)
        return false;
    uint32_t pairs;
    char opp[COORD_NAME];
    for (int round = 0; round < 2; round++) {
        if (c->gauntlet_v && c->gauntlet_v != c->rated_best) {
            if (s_gauntlet_need(c, opp, &pairs)) {
                char me[COORD_NAME];
                s_model_name(me, c->gauntlet_v);
                s_match_start(c, me, opp, pairs, MATCH_GAUNTLET, c->gauntlet_v);
                return true;
            }
            s_gauntlet_done(c, c->gauntlet_v);
        }
        /* The subject: the best, or with rate_candidates the newest model. */
        uint32_t next = c->cfg.rate_candidates ? store_latest_model(c->st) : c->best;
        if (next == c->rated_best || next == c->gauntlet_v)
            return false;
        s_gauntlet_choose(c, next);
    }
    return false;
}

/* The next calibration match, false when the anchors are calibrated. */
static bool s_next_calibration(coord *c)
{
    uint32_t want = (uint32_t)c->cfg.calibration_pairs;
    scale_entry e;
    for (int k = 0; want && k + 1 < c->n_anchors; k++) {
        /* Two anchors on the game's fixed scale need no games of this run. */
        if (scale_find(c->g->name, c->anchors[k], &e) &&
            scale_find(c->g->name, c->anchors[k + 1], &e))
            continue;
        uint32_t have = s_pairs(c, c->anchors[k], c->anchors[k + 1]);
        if (have < want) {
            s_match_start(c, c->anchors[k], c->anchors[k + 1], want - have, MATCH_CALIBRATION,
                          0);
            return true;
        }
    }
    return false;
}

/* Plans the next match when none runs. */
static void s_plan(coord *c)
{
    if (c->ev.games || c->cfg.eval_share <= 0)
        return;
    bool calib_first = c->last_kind == MATCH_GAUNTLET;
    if (calib_first ? !s_next_calibration(c) && !s_next_gauntlet(c)
                    : !s_next_gauntlet(c) && !s_next_calibration(c))
        return;
    c->last_kind = c->ev.kind;
}

int ratings_load(coord *c)
{
    s_load_tallies(c);
    s_load_history(c);
    ratings_fit(c);
    log_info("ratings: %zu pairs of players met, %zu ratings in the history, %d anchors",
             c->n_tallies, c->n_history, c->n_anchors);
    c->rated_best = c->n_history ? c->history[c->n_history - 1].version : 0;
    return 0;
}

void ratings_fini(coord *c)
{
    s_match_free(&c->ev);
    free_all(c->tallies, c->rated, c->history);
    c->tallies = NULL;
    c->rated = NULL;
    c->history = NULL;
}

bool ratings_share_ok(const coord *c)
{
    uint64_t all = c->slot_ms[0] + c->slot_ms[1] + c->slot_ms[2];
    return c->cfg.eval_share > 0 &&
           (all == 0 || (double)c->slot_ms[2] < c->cfg.eval_share * (double)all);
}

size_t ratings_assign(coord *c, int w, size_t max, uint32_t *slots, int32_t *colours,
                      char **openings)
{
    if (!ratings_share_ok(c))
        return 0;
    s_plan(c);
    evalmatch *m = &c->ev;
    size_t n = 0;
    double now = time_now();
    for (uint32_t i = 0; i < m->games && n < max; i++) {
        bool stale = m->owner[i] >= 0 && now - m->assigned_at[i] > c->cfg.eval_timeout_s;
        if (m->result[i] == SLOT_OPEN && (m->owner[i] < 0 || stale)) {
            m->owner[i] = w;
            m->assigned_at[i] = now;
            slots[n] = i;
            colours[n] = (int32_t)(i % 2); /* even slots: side A moves first */
            openings[n] = (char *)coord_opening(c, m->book_off + i / 2);
            n++;
        }
    }
    return n;
}

void ratings_release_worker(coord *c, int w)
{
    evalmatch *m = &c->ev;
    for (uint32_t i = 0; i < m->games; i++)
        if (m->owner[i] == w && m->result[i] == SLOT_OPEN)
            m->owner[i] = -1;
}

/* The record's side (model version or baseline spec) as a player name. */
static void s_side_name(char *buf, uint32_t version, const char *spec)
{
    if (spec[0])
        snprintf(buf, COORD_NAME, "%s", spec);
    else
        s_model_name(buf, version);
}

int ratings_check(coord *c, const validate_result *v, uint32_t slot, int *count_slot,
                  uint8_t *result, char *err, size_t errlen)
{
    *count_slot = -1;
    *result = SLOT_OPEN;
    char a[COORD_NAME], b[COORD_NAME];
    s_side_name(a, v->model_version, v->model_player);
    s_side_name(b, v->opponent_version, v->opponent_player);
    for (int s = 0; s < 2; s++) {
        const char *name = s ? b : a;
        if (!s_is_anchor_name(name))
            continue;
        bool known = false;
        for (int k = 0; k < c->n_anchors; k++)
            known |= !strcmp(c->anchors[k], name);
        if (!known) {
            snprintf(err, errlen, "'%s' is not an anchor of this cluster", name);
            return VALIDATE_EVAL;
        }
    }
    evalmatch *m = &c->ev;
    if (!m->games || strcmp(a, m->a) || strcmp(b, m->b))
        return VALIDATE_OK; /* a match already over: stored, not counted */
    if (slot >= m->games) {
        snprintf(err, errlen, "eval slot %u out of range (%u games)", slot, m->games);
        return VALIDATE_EVAL;
    }
    if (v->candidate_player != (int)(slot % 2)) {
        snprintf(err, errlen, "eval slot %u has side A as player %u, not %d", slot, slot % 2,
                 v->candidate_player);
        return VALIDATE_EVAL;
    }
    if (strcmp(v->start_position, coord_opening(c, m->book_off + slot / 2))) {
        snprintf(err, errlen, "eval slot %u starts from another position than its opening",
                 slot);
        return VALIDATE_EVAL;
    }
    if (m->result[slot] != SLOT_OPEN)
        return VALIDATE_OK;
    for (size_t i = 0; i < c->n_items; i++)
        if (c->items[i].eval_slot == (int)slot)
            return VALIDATE_OK;
    *count_slot = (int)slot;
    *result = v->winner < 0 ? SLOT_DRAW : v->winner == v->candidate_player ? SLOT_WIN : SLOT_LOSS;
    return VALIDATE_OK;
}

static int s_result(uint8_t r)
{
    return r == SLOT_WIN ? 1 : r == SLOT_DRAW ? 0 : -1;
}

bool ratings_apply(coord *c, const ingest_item *items, size_t n)
{
    bool changed = false;
    evalmatch *m = &c->ev;
    for (size_t i = 0; i < n; i++) {
        const ingest_item *it = &items[i];
        if (it->eval_slot >= 0 && m->games && m->result[it->eval_slot] == SLOT_OPEN) {
            int s = it->eval_slot;
            m->result[s] = it->eval_result;
            m->done++;
            s_tally_game(c, m->a, m->b, s_result(m->result[s]), it->points);
            if (m->kind == MATCH_GAUNTLET && m->va && m->va == m->subject) /* the judge */
                judge_post(c, m->va, s % 2, it->msg.u.game_submit.record,
                           it->msg.u.game_submit.record_len);
            int t = s ^ 1; /* the other game of the pair */
            if (m->result[t] != SLOT_OPEN)
                s_tally_pair(c, m->a, m->b, s_result(m->result[s & ~1]),
                             s_result(m->result[s | 1]));
            changed = true;
        }
        if (it->arena_slot >= 0 && c->ar.candidate) {
            char a[COORD_NAME], b[COORD_NAME];
            s_model_name(a, c->ar.candidate);
            s_model_name(b, c->ar.best);
            s_tally_game(c, a, b, s_result(it->arena_result), it->points);
            int s = it->arena_slot, t = s ^ 1;
            uint8_t other = (uint32_t)t < c->ar.games ? c->ar.result[t] : SLOT_OPEN;
            for (size_t j = 0; j < n && other == SLOT_OPEN; j++)
                if (j != i && items[j].arena_slot == t)
                    other = items[j].arena_result;
            if (other != SLOT_OPEN && s < t) /* the pair once, at its first slot's game */
                s_tally_pair(c, a, b, s_result(it->arena_result), s_result(other));
            else if (other != SLOT_OPEN && s > t) {
                bool t_in_batch = false;
                for (size_t j = 0; j < n; j++)
                    t_in_batch |= j != i && items[j].arena_slot == t;
                if (!t_in_batch)
                    s_tally_pair(c, a, b, s_result(other), s_result(it->arena_result));
            }
            changed = true;
        }
    }
    return changed;
}

void ratings_rollback(coord *c, const ingest_item *items, size_t n)
{
    s_load_tallies(c);
    evalmatch *m = &c->ev; /* the failed batch's games are open again */
    for (size_t i = 0; i < n; i++)
        if (items[i].eval_slot >= 0 && m->games && m->result[items[i].eval_slot] != SLOT_OPEN) {
            m->result[items[i].eval_slot] = SLOT_OPEN;
            m->done--;
        }
}

void ratings_after_commit(coord *c)
{
    evalmatch *m = &c->ev;
    if (!m->games || m->done < m->games)
        return;
    uint32_t subject = m->subject;
    int kind = m->kind;
    log_info("ratings: %s against %s done", m->a, m->b);
    s_match_free(m);
    ratings_fit(c);
    uint32_t pairs;
    char opp[COORD_NAME];
    if (kind == MATCH_GAUNTLET && subject == c->gauntlet_v && c->rated_best != subject &&
        !s_gauntlet_need(c, opp, &pairs))
        s_gauntlet_done(c, subject);
}
