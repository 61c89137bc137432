/* arena: candidates, arena slots spread over workers, tallies committed with
 * their games, and promotion by the gate. See features.h.
 *
 * Persistence: meta "arena" holds the arena in progress (candidate, best,
 * slot results) and the queued candidate; it is rewritten in the same LMDB
 * transaction as the arena games it counts (store_put_games_meta), so a
 * crash never counts a game twice or loses one. Slot assignments are not
 * persisted: after a restart every unplayed slot is open again.
 *
 * Openings and pairs. This game's second player wins most games between
 * equal networks, so a game's colour says more than the networks do. Slot i
 * starts from opening i/2 of the coordinator's book (coord_opening) with
 * the candidate moving first in even slots: slots 2k and 2k+1 are a pair,
 * the same opening once with each colour. The gate's "sprt" mode scores the
 * finished pairs (pentanomial, match.h); "spec" scores games one by one; in
 * mode "none" a candidate becomes the best when it is registered and no
 * arena is played. */
#include <stdlib.h>
#include <string.h>

#include "server/features.h"
#include "server/services.h"
#include "play/match.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "common/util.h"

#define ARENA_MAGIC "KZA1"
#define ARENA_HEADER 20

/* The promotion gate shared with `kz match` (play/match.h): default 50
 * games, score > 0.55 with draws half, decided early when certain; SPRT as
 * an option. The arena's slot count is the gate's game count. */
static int s_decide(const coord *c, uint32_t w, uint32_t d, uint32_t l)
{
    gate_config g = c->gate;
    g.games = (int)c->ar.games;
    if (!gate_uses_pairs(&g))
        return gate_decide(&g, (int)w, (int)d, (int)l);
    int penta[MATCH_PENTA];
    arena_penta(&c->ar, penta);
    return gate_decide_pairs(&g, penta);
}

static int s_slot_result(uint8_t r)
{
    return r == SLOT_WIN ? 1 : r == SLOT_DRAW ? 0 : -1;
}

void arena_penta(const arena *a, int penta[MATCH_PENTA])
{
    memset(penta, 0, MATCH_PENTA * sizeof *penta);
    for (uint32_t i = 0; i + 1 < a->games; i += 2)
        if (a->result[i] != SLOT_OPEN && a->result[i + 1] != SLOT_OPEN)
            match_penta_add(penta, s_slot_result(a->result[i]), s_slot_result(a->result[i + 1]));
}

static void s_free_arena(arena *a)
{
    free_all(a->result, a->owner, a->assigned_at);
    memset(a, 0, sizeof *a);
}

static int s_alloc_arena(arena *a, uint32_t games)
{
    a->games = games;
    a->result = calloc(games, 1);
    a->owner = malloc(games * sizeof *a->owner);
    a->assigned_at = calloc(games, sizeof *a->assigned_at);
    if (!a->result || !a->owner || !a->assigned_at) {
        s_free_arena(a);
        return KZ_ENOMEM;
    }
    for (uint32_t i = 0; i < games; i++)
        a->owner[i] = -1;
    return 0;
}

size_t arena_serialize(const coord *c, const ingest_item *items, size_t n, uint8_t **out)
{
    size_t len = ARENA_HEADER + c->ar.games;
    uint8_t *b = xmalloc(len);
    memcpy(b, ARENA_MAGIC, 4);
    host_put32(b + 4, c->ar.candidate);
    host_put32(b + 8, c->ar.best);
    host_put32(b + 12, c->ar.games);
    host_put32(b + 16, c->queued);
    if (c->ar.games)
        memcpy(b + ARENA_HEADER, c->ar.result, c->ar.games);
    for (size_t i = 0; i < n; i++)
        if (items[i].arena_slot >= 0)
            b[ARENA_HEADER + items[i].arena_slot] = items[i].arena_result;
    *out = b;
    return len;
}

/* Writes meta "arena" on its own (outside a game batch). */
static void s_persist(coord *c)
{
    uint8_t *b;
    size_t len = arena_serialize(c, NULL, 0, &b);
    int rc = store_put_meta(c->st, "arena", b, len);
    if (rc)
        log_error("arena: cannot save the arena state: %s", err_str(rc));
    free(b);
}

static void s_set_status(coord *c, uint32_t v, uint32_t status, const arena *a)
{
    store_model_info m;
    if (store_get_model_info(c->st, v, &m))
        return;
    m.status = status;
    if (a) {
        m.wins = a->wins;
        m.draws = a->draws;
        m.losses = a->losses;
        m.decided_ms = time_wall_ms();
    }
    int rc = store_update_model(c->st, &m);
    if (rc)
        log_error("arena: cannot update model %u: %s", v, err_str(rc));
}

/* Starts the arena of candidate v against the best. */
static void s_start(coord *c, uint32_t v)
{
    store_model_info m;
    if (store_get_model_info(c->st, v, &m)) {
        log_error("arena: candidate %u vanished from the registry", v);
        return;
    }
    s_free_arena(&c->ar);
    if (s_alloc_arena(&c->ar, (uint32_t)c->cfg.arena_games)) {
        log_error("arena: out of memory");
        return;
    }
    c->ar.candidate = v;
    c->ar.best = c->best;
    c->ar.cand_sum = m.checksum;
    c->ar.best_sum = c->best_sum;
    c->ar.started = time_now();
    s_set_status(c, v, STORE_MODEL_ARENA, NULL);
    s_persist(c);
    log_info("arena: candidate %u against best %u, %u games", v, c->best, c->ar.games);
}

void arena_revert(coord *c, uint32_t v)
{
    store_model_info m;
    int rc = store_get_model_info(c->st, v, &m);
    if (rc == 0)
        rc = store_set_best(c->st, v);
    if (rc) {
        log_error("arena: cannot make %u the best again: %s", v, err_str(rc));
        return;
    }
    uint32_t previous = c->best;
    c->best = v;
    c->best_sum = m.checksum;
    coord_best_changed(c);
    coord_announce(c, previous, 0, 0, 0);
}

/* Gate "none": candidate v becomes the best at once, without an arena. */
static void s_promote_now(coord *c, uint32_t v, uint64_t sum)
{
    int rc = store_set_best(c->st, v);
    if (rc) {
        log_error("arena: cannot record the new best: %s", err_str(rc));
        return;
    }
    arena none = {0};
    s_set_status(c, v, STORE_MODEL_PROMOTED, &none);
    uint32_t previous = c->best;
    c->best = v;
    c->best_sum = sum;
    c->promotions++;
    coord_best_changed(c);
    c->last = (arena_last){v, previous, true, 0, 0, 0, time_wall_ms()};
    log_info("arena: candidate %u is the best (gate none; was %u)", v, previous);
    coord_announce(c, previous, 0, 0, 0);
}

/* Decides the arena when the gate can; then promotes or rejects, announces,
 * and starts the queued candidate if any. */
static void s_maybe_decide(coord *c)
{
    arena *a = &c->ar;
    if (!a->candidate)
        return;
    int d = s_decide(c, a->wins, a->draws, a->losses);
    if (d == GATE_CONTINUE)
        return;
    bool promote = d == GATE_ACCEPT;
    uint32_t played = a->wins + a->draws + a->losses;
    log_info("arena: candidate %u %s after %u games (+%u =%u -%u, score %.3f)", a->candidate,
             promote ? "PROMOTED" : "rejected", played, a->wins, a->draws, a->losses,
             played ? (a->wins + 0.5 * a->draws) / played : 0.0);
    s_set_status(c, a->candidate, promote ? STORE_MODEL_PROMOTED : STORE_MODEL_REJECTED, a);
    c->last = (arena_last){a->candidate, a->best, promote, a->wins, a->draws, a->losses,
                           time_wall_ms()};
    for (size_t w = 0; w < c->n_workers; w++)
        c->workers[w].arena_slots = 0;
    uint32_t previous = c->best;
    if (promote) {
        int rc = store_set_best(c->st, a->candidate);
        if (rc) {
            log_error("arena: cannot record the new best: %s", err_str(rc));
        } else {
            c->best = a->candidate;
            c->best_sum = a->cand_sum;
            c->promotions++;
            coord_best_changed(c);
        }
    } else {
        c->rejected_in_row++;
    }
    uint32_t w = a->wins, dr = a->draws, l = a->losses;
    s_free_arena(a);
    if (promote && c->best != previous)
        coord_announce(c, previous, w, dr, l);
    if (c->queued) {
        uint32_t q = c->queued;
        c->queued = 0;
        s_start(c, q);
    } else {
        s_persist(c);
    }
}

int arena_load(coord *c)
{
    c->best = store_best(c->st);
    store_model_info m;
    int rc = store_get_model_info(c->st, c->best, &m);
    if (rc == KZ_ENOTFOUND || rc == KZ_ECORRUPT) {
        /* A best the store lacks (or whose header does not read) falls back
         * as a damaged one does; the store is refused only with no good best. */
        uint32_t v = c->best;
        if (coord_best_fall_back(c, v, rc == KZ_ENOTFOUND ? "IS MISSING from the store"
                                                          : "HAS A HEADER THAT DOES NOT READ")) {
            char what[120];
            snprintf(what, sizeof what, "its best model %u %s, and no earlier best is intact",
                     v, rc == KZ_ENOTFOUND ? "is not in it" : "has a header that does not read");
            return coord_store_damaged(c, what);
        }
        rc = store_get_model_info(c->st, c->best, &m);
    }
    if (rc) {
        log_error("arena: best model %u missing: %s", c->best, err_str(rc));
        return rc;
    }
    c->best_sum = m.checksum;
    /* The last decision, for /status. */
    for (uint32_t v = store_latest_model(c->st); v >= 1; v--) {
        if (store_get_model_info(c->st, v, &m) == 0 &&
            (m.status == STORE_MODEL_PROMOTED || m.status == STORE_MODEL_REJECTED)) {
            c->last = (arena_last){v, 0, m.status == STORE_MODEL_PROMOTED, m.wins, m.draws,
                                   m.losses, m.decided_ms};
            break;
        }
    }
    uint8_t *buf = xmalloc(ARENA_HEADER + (1u << 20));
    size_t len = 0;
    rc = store_get_meta(c->st, "arena", buf, ARENA_HEADER + (1u << 20), &len);
    if (rc == KZ_ENOTFOUND) {
        free(buf);
        return 0;
    }
    if (rc || len < ARENA_HEADER || memcmp(buf, ARENA_MAGIC, 4) ||
        len != ARENA_HEADER + host_get32(buf + 12)) {
        log_error("arena: saved arena state unreadable (%s); starting without one",
                  rc ? err_str(rc) : "bad format");
        free(buf);
        return 0;
    }
    uint32_t cand = host_get32(buf + 4), best = host_get32(buf + 8), games = host_get32(buf + 12);
    c->queued = host_get32(buf + 16);
    if (c->queued > store_latest_model(c->st))
        c->queued = 0;
    if (cand && store_get_model_info(c->st, cand, &m) == 0 && best == c->best && games > 0 &&
        s_alloc_arena(&c->ar, games) == 0) {
        c->ar.candidate = cand;
        c->ar.best = best;
        c->ar.cand_sum = m.checksum;
        c->ar.best_sum = c->best_sum;
        c->ar.started = time_now();
        for (uint32_t i = 0; i < games; i++) {
            uint8_t r = buf[ARENA_HEADER + i];
            c->ar.result[i] = r <= SLOT_LOSS ? r : SLOT_OPEN;
            c->ar.wins += r == SLOT_WIN;
            c->ar.draws += r == SLOT_DRAW;
            c->ar.losses += r == SLOT_LOSS;
        }
        log_info("arena: resuming candidate %u against %u: +%u =%u -%u of %u", cand, best,
                 c->ar.wins, c->ar.draws, c->ar.losses, games);
        s_maybe_decide(c);
    } else if (cand) {
        log_warn("arena: dropping saved arena of candidate %u (best changed or unknown)", cand);
    }
    free(buf);
    if (!c->ar.candidate && c->queued) {
        uint32_t q = c->queued;
        c->queued = 0;
        s_start(c, q);
    }
    return 0;
}

int arena_add_candidate(coord *c, const wire_candidate_submit *cs, wire_candidate_ack *ack,
                        char *err, size_t errlen)
{
    memset(ack, 0, sizeof *ack);
    if (cs->blob_len == 0) {
        snprintf(err, errlen, "empty candidate blob");
        return KZ_EINVAL;
    }
    uint64_t sum = wire_blob_checksum(cs->blob, cs->blob_len);
    if (sum != cs->checksum) {
        snprintf(err, errlen, "candidate checksum %016llx does not match its blob (%016llx)",
                 (unsigned long long)cs->checksum, (unsigned long long)sum);
        return KZ_ECORRUPT;
    }
    /* Only models workers can load: a valid model file for this game. */
    char merr[200];
    int mrc = modelkind_check(cs->blob, cs->blob_len, c->g, NULL, merr, sizeof merr);
    if (mrc) {
        snprintf(err, errlen, "candidate is not a usable model: %s", merr);
        return KZ_EINVAL;
    }
    if (cs->parent_version > store_latest_model(c->st)) {
        snprintf(err, errlen, "parent version %u unknown", cs->parent_version);
        return KZ_EINVAL;
    }
    uint32_t v;
    if (store_find_model(c->st, sum, cs->blob_len, &v) == 0) {
        ack->version = v;
        ack->duplicate = true;
        ack->queued = v == c->queued;
        return 0;
    }
    store_model_info m = {.parent = cs->parent_version, .created_ms = time_wall_ms(),
                          .checksum = sum, .trainer_step = cs->trainer_step,
                          .status = STORE_MODEL_QUEUED};
    int rc = store_add_model(c->st, cs->blob, cs->blob_len, &m);
    if (rc) {
        snprintf(err, errlen, "cannot store the candidate: %s", err_str(rc));
        return rc;
    }
    ack->version = m.version;
    log_info("candidate %u registered (parent %u, step %llu, %zu bytes)", m.version,
             cs->parent_version, (unsigned long long)cs->trainer_step, cs->blob_len);
    if (c->gate.mode == GATE_MODE_NONE) {
        s_promote_now(c, m.version, sum);
        return 0;
    }
    if (!c->ar.candidate) {
        s_start(c, m.version);
    } else {
        if (c->queued) {
            s_set_status(c, c->queued, STORE_MODEL_SUPERSEDED, NULL);
            log_info("candidate %u superseded by %u before its arena", c->queued, m.version);
        }
        c->queued = m.version;
        ack->queued = true;
        s_persist(c);
    }
    return 0;
}

void arena_reconcile(coord *c, int w, uint32_t candidate, const uint32_t *slots, size_t n)
{
    arena *a = &c->ar;
    if (!a->candidate)
        return;
    /* Two passes, O(n + games) whatever the list holds (a request may carry
     * millions of entries): mark w's open slots that the list names, then
     * release w's unmarked ones and unmark the rest. */
    int held = -2 - w; /* owner value of a marked slot, during the passes */
    if (candidate == a->candidate)
        for (size_t k = 0; k < n; k++)
            if (slots[k] < a->games && a->owner[slots[k]] == w &&
                a->result[slots[k]] == SLOT_OPEN)
                a->owner[slots[k]] = held;
    for (uint32_t i = 0; i < a->games; i++) {
        if (a->owner[i] == held) {
            a->owner[i] = w;
        } else if (a->owner[i] == w && a->result[i] == SLOT_OPEN) {
            a->owner[i] = -1;
            if (c->workers[w].arena_slots)
                c->workers[w].arena_slots--;
        }
    }
}

uint32_t arena_release_worker(coord *c, int w)
{
    arena *a = &c->ar;
    uint32_t n = 0;
    for (uint32_t i = 0; a->candidate && i < a->games; i++)
        if (a->owner[i] == w && a->result[i] == SLOT_OPEN) {
            a->owner[i] = -1;
            n++;
        }
    c->workers[w].arena_slots = 0;
    return n;
}

size_t arena_assign(coord *c, int w, size_t max, uint32_t *slots, int32_t *colours,
                    char **openings)
{
    arena *a = &c->ar;
    size_t n = 0;
    double now = time_now();
    for (uint32_t i = 0; a->candidate && i < a->games && n < max; i++)
        if (a->result[i] == SLOT_OPEN && a->owner[i] < 0) {
            a->owner[i] = w;
            a->assigned_at[i] = now;
            slots[n] = i;
            colours[n] = (int32_t)(i % 2); /* even slots: the candidate plays first */
            openings[n] = (char *)coord_opening(c, i / 2);
            n++;
        }
    c->workers[w].arena_slots += (uint32_t)n;
    return n;
}

uint32_t arena_open_slots(const coord *c)
{
    uint32_t n = 0;
    for (uint32_t i = 0; c->ar.candidate && i < c->ar.games; i++)
        n += c->ar.result[i] == SLOT_OPEN && c->ar.owner[i] < 0;
    return n;
}

int arena_check(coord *c, const validate_result *v, uint32_t slot, int *count_slot,
                uint8_t *result, char *err, size_t errlen)
{
    arena *a = &c->ar;
    *count_slot = -1;
    *result = SLOT_OPEN;
    if (!a->candidate || v->model_version != a->candidate)
        return VALIDATE_OK; /* an arena already decided: stored, not counted */
    if (v->opponent_version != a->best) {
        snprintf(err, errlen, "arena of candidate %u is against %u, not %u", a->candidate,
                 a->best, v->opponent_version);
        return VALIDATE_ARENA;
    }
    if (slot >= a->games) {
        snprintf(err, errlen, "arena slot %u out of range (%u games)", slot, a->games);
        return VALIDATE_ARENA;
    }
    if (v->candidate_player != (int)(slot % 2)) {
        snprintf(err, errlen, "arena slot %u has the candidate as player %u, not %d", slot,
                 slot % 2, v->candidate_player);
        return VALIDATE_ARENA;
    }
    if (strcmp(v->start_position, coord_opening(c, slot / 2))) {
        snprintf(err, errlen, "arena slot %u starts from another position than opening %u",
                 slot, slot / 2);
        return VALIDATE_ARENA;
    }
    if (a->result[slot] != SLOT_OPEN)
        return VALIDATE_OK; /* played already (reassigned and played twice) */
    for (size_t i = 0; i < c->n_items; i++)
        if (c->items[i].arena_slot == (int)slot)
            return VALIDATE_OK;
    *count_slot = (int)slot;
    *result = v->winner < 0 ? SLOT_DRAW : v->winner == v->candidate_player ? SLOT_WIN : SLOT_LOSS;
    return VALIDATE_OK;
}

void arena_commit(coord *c, const ingest_item *items, size_t n)
{
    arena *a = &c->ar;
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        int s = items[i].arena_slot;
        if (s < 0 || !a->candidate || a->result[s] != SLOT_OPEN)
            continue;
        a->result[s] = items[i].arena_result;
        a->wins += a->result[s] == SLOT_WIN;
        a->draws += a->result[s] == SLOT_DRAW;
        a->losses += a->result[s] == SLOT_LOSS;
        if (a->owner[s] >= 0 && c->workers[a->owner[s]].arena_slots)
            c->workers[a->owner[s]].arena_slots--;
        a->owner[s] = -1;
        c->arena_counted++;
        changed = true;
    }
    if (changed)
        s_maybe_decide(c);
}
