/* timeline: the run's history for the dashboard's plots, a bounded time
 * series kept in the store (meta "timeline") so that it covers the whole run
 * across restarts. See server.h (timeline_point, timeline) and features.h.
 *
 * Every timeline_s the open interval is closed into a point: the games,
 * positions and self-play results stored in it (differences of the
 * coordinator's counters since the interval opened, so nothing is counted
 * twice and a restart starts a fresh interval: the time the coordinator was
 * down is a gap between points), and the figures as they stand (store
 * totals, the trainer's last report, best version, live workers, their
 * search speed). Rates are counts over the interval's length, so merged
 * points keep exact rates.
 *
 * Bounded: at most timeline_points points. When full, the two neighbours
 * that cover the shortest span together are merged (sums of the counts, the
 * later point's figures), leaving the newest 60 points (an hour at 60 s) at
 * full resolution; over a long run the points thus stay spread evenly over
 * its whole length.
 *
 * Persistence: the points are written to meta with the next batch of games
 * (store_put_games_meta, as the tallies), or on their own when none comes
 * within a second, and at the stop. A crash loses at most the open interval
 * and one point. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/features.h"
#include "server/services.h"
#include "common/util.h"

#define TIMELINE_MAGIC "KZL1"
#define POINT_BYTES 132            /* serialized point */
#define KEEP_RECENT 60             /* the newest points never merged (an hour at 60 s) */

/* The counters an interval starts from (tl->at): stored games, positions,
 * self-play games, self-play turns, self-play results x3. */
static void s_counters(const coord *c, uint64_t at[7])
{
    at[0] = c->accepted;
    at[1] = c->positions;
    at[2] = c->by_kind[0];
    at[3] = c->plies[0];
    for (int r = 0; r < 3; r++)
        at[4 + r] = c->results[0][r];
}

void timeline_current(const coord *c, timeline_point *p)
{
    uint64_t now[7];
    s_counters(c, now);
    const uint64_t *at = c->tl.at;
    store_stats st;
    store_get_stats(c->st, &st);
    memset(p, 0, sizeof *p);
    p->t0_ms = c->tl.t0_ms;
    p->t1_ms = time_wall_ms();
    p->games = now[0] - at[0];
    p->positions = now[1] - at[1];
    p->sp_games = now[2] - at[2];
    p->sp_plies = now[3] - at[3];
    for (int r = 0; r < 3; r++)
        p->sp_results[r] = now[4 + r] - at[4 + r];
    p->games_total = st.games;
    p->positions_total = st.positions_total;
    if (c->trainer_seen > 0) {
        const wire_trainer_stats *t = &c->trainer;
        p->trainer = 1;
        p->step = t->step;
        p->loss = t->loss;
        p->policy_loss = t->policy_loss;
        p->value_loss = t->value_loss;
        p->l2_loss = t->l2_loss;
        p->learning_rate = t->learning_rate;
    }
    double sims = 0;
    for (size_t i = 0; i < c->n_workers; i++)
        if (c->workers[i].alive)
            sims += c->workers[i].sims_per_s;
    p->sims_per_s = (float)sims;
    p->best = c->best;
    p->workers = (uint32_t)coord_live_workers(c);
}

/* Merges point i + 1 into point i (i the older): counts add up, the figures
 * are the later point's (its trainer report if the later has none: the older). */
static void s_merge(timeline *tl, size_t i)
{
    timeline_point *a = &tl->pt[i];
    const timeline_point *b = &tl->pt[i + 1];
    timeline_point m = *b;
    m.t0_ms = a->t0_ms;
    m.games += a->games;
    m.positions += a->positions;
    m.sp_games += a->sp_games;
    m.sp_plies += a->sp_plies;
    for (int r = 0; r < 3; r++)
        m.sp_results[r] += a->sp_results[r];
    if (!b->trainer && a->trainer) {
        m.trainer = 1;
        m.step = a->step;
        m.loss = a->loss;
        m.policy_loss = a->policy_loss;
        m.value_loss = a->value_loss;
        m.l2_loss = a->l2_loss;
        m.learning_rate = a->learning_rate;
    }
    *a = m;
    memmove(&tl->pt[i + 1], &tl->pt[i + 2], (tl->n - i - 2) * sizeof *tl->pt);
    tl->n--;
}

/* Makes room for one point: merges the neighbours of the shortest joint
 * span, leaving the newest KEEP_RECENT points (a quarter of them when
 * fewer are kept) at full resolution. Oldest first among equals. */
static void s_thin(timeline *tl)
{
    size_t keep = tl->cap / 4 < KEEP_RECENT ? tl->cap / 4 : KEEP_RECENT;
    size_t best = 0;
    int64_t best_span = INT64_MAX;
    for (size_t i = 0; i + 1 + keep < tl->n; i++) {
        int64_t span = tl->pt[i + 1].t1_ms - tl->pt[i].t0_ms;
        if (span < best_span) {
            best_span = span;
            best = i;
        }
    }
    s_merge(tl, best);
}

void timeline_tick(coord *c, bool force)
{
    timeline *tl = &c->tl;
    double now = time_now();
    if (!force && now < tl->next)
        return;
    tl->next = now + c->cfg.timeline_s;
    timeline_point p;
    timeline_current(c, &p);
    /* At the stop, an interval shorter than a second with nothing in it is
     * not worth a point. */
    if (force && p.t1_ms - p.t0_ms < 1000 && !p.games)
        return;
    if (tl->n == tl->cap)
        s_thin(tl);
    tl->pt[tl->n++] = p;
    s_counters(c, tl->at);
    tl->t0_ms = p.t1_ms;
    if (!tl->dirty)
        tl->dirty_at = now;
    tl->dirty = true;
    tl->changes++;
}

/* A serialized point: these fields of timeline_point, in this order, each
 * its bytes in host byte order (the coordinator's own meta, never read
 * elsewhere); POINT_BYTES in all. */
#define S_FIELD(f) {offsetof(timeline_point, f), sizeof ((timeline_point *)0)->f}
static const struct {
    size_t off, n; /* the field's offset and bytes */
} s_fields[] = {
    S_FIELD(t0_ms), S_FIELD(t1_ms), S_FIELD(games), S_FIELD(positions), S_FIELD(sp_games),
    S_FIELD(sp_plies), S_FIELD(sp_results), S_FIELD(games_total), S_FIELD(positions_total),
    S_FIELD(step), S_FIELD(loss), S_FIELD(policy_loss), S_FIELD(value_loss), S_FIELD(l2_loss),
    S_FIELD(learning_rate), S_FIELD(sims_per_s), S_FIELD(trainer), S_FIELD(best), S_FIELD(workers),
};
#undef S_FIELD

/* Point t into p (POINT_BYTES bytes), or, with !to_bytes, p into t. */
static void s_point_bytes(timeline_point *t, uint8_t *p, bool to_bytes)
{
    uint8_t *at = p;
    for (size_t k = 0; k < sizeof s_fields / sizeof s_fields[0]; k++) {
        uint8_t *f = (uint8_t *)t + s_fields[k].off;
        memcpy(to_bytes ? at : f, to_bytes ? f : at, s_fields[k].n);
        at += s_fields[k].n;
    }
    KZ_CHECK(at == p + POINT_BYTES);
}

size_t timeline_serialize(coord *c, uint8_t **out)
{
    const timeline *tl = &c->tl;
    size_t len;
    uint8_t *b = coord_meta_new(TIMELINE_MAGIC, tl->n, 12, POINT_BYTES, &len);
    host_put32(b + 8, POINT_BYTES);
    for (size_t i = 0; i < tl->n; i++) {
        timeline_point t = tl->pt[i];
        s_point_bytes(&t, b + 12 + i * POINT_BYTES, true);
    }
    c->tl.dirty = false;
    *out = b;
    return len;
}

int timeline_save(coord *c)
{
    uint8_t *b;
    size_t len = timeline_serialize(c, &b);
    int rc = store_put_meta(c->st, "timeline", b, len);
    free(b);
    if (rc)
        log_error("timeline: cannot save: %s", err_str(rc));
    return rc;
}

int timeline_load(coord *c)
{
    timeline *tl = &c->tl;
    tl->cap = (size_t)c->cfg.timeline_points;
    tl->pt = xcalloc(tl->cap, sizeof *tl->pt);
    tl->n = 0;
    size_t cap = 12 + ((size_t)1 << 20), len = 0;
    uint8_t *b = xmalloc(cap);
    int rc = store_get_meta(c->st, "timeline", b, cap, &len);
    uint32_t n = rc == 0 && len >= 12 ? host_get32(b + 4) : 0;
    if (rc && rc != KZ_ENOTFOUND)
        log_error("timeline: saved points unreadable (%s); starting without them", err_str(rc));
    else if (rc == 0 && (len < 12 || memcmp(b, TIMELINE_MAGIC, 4) ||
                         host_get32(b + 8) != POINT_BYTES ||
                         len != 12 + (size_t)n * POINT_BYTES)) {
        log_error("timeline: saved points in an unknown format; starting without them");
        n = 0;
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        timeline_point t;
        s_point_bytes(&t, b + 12 + (size_t)i * POINT_BYTES, false);
        /* A smaller timeline_points than the run had: thin as it loads. */
        if (tl->n == tl->cap)
            s_thin(tl);
        tl->pt[tl->n++] = t;
    }
    free(b);
    s_counters(c, tl->at);
    tl->t0_ms = time_wall_ms();
    tl->next = time_now() + c->cfg.timeline_s;
    tl->changes++;
    if (n)
        log_info("timeline: %u points from %lld to %lld (ms)", n, (long long)tl->pt[0].t0_ms,
                 (long long)tl->pt[tl->n - 1].t1_ms);
    return 0;
}

void timeline_fini(coord *c)
{
    free(c->tl.pt);
    c->tl.pt = NULL;
    c->tl.n = c->tl.cap = 0;
}
