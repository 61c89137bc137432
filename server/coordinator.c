/* coordinator: kz-coordinator's actor. One thread owns the ROUTER (requests)
 * and PUB (announcements) sockets and the store; a zmq_poll loop whose
 * timeout is the next timer. See coordinator.h and docs/protocol.md.
 *
 * Ingest (group commit): every loop turn drains what the ROUTER holds (up to
 * ingest_batch messages), validates each submitted game on arrival (rejects
 * are answered at once), and stores all valid ones of the turn in ONE LMDB
 * transaction; only after it commits are their acks sent. */
#include "server/coordinator.h"
#include "server/features.h"
#include "server/services.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "nn/model.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "search/gnubg.h"
#include "search/player.h"
#include "play/recheck.h"
#include "play/scale.h"
#include "play/selfplay.h"
#include "data/record.h"
#include "data/storecheck.h"
#include "common/util.h"

#define LOG_REJECTS_PER_WORKER 20 /* then only every 1000th */
#define FORGE_POLL_MS 20          /* longest poll while games are held for their check */

static void s_expire_workers(coord *c)
{
    double now = time_now();
    for (size_t i = 0; i < c->n_workers; i++) {
        worker *w = &c->workers[i];
        if (w->alive && now - w->last_seen > c->cfg.expiry_ms / 1000.0) {
            w->alive = false;
            uint32_t n = arena_release_worker(c, (int)i);
            ratings_release_worker(c, (int)i);
            log_info("client %s gone (silent %.1f s)%s", w->id, now - w->last_seen,
                     n ? "; its arena games go to others" : "");
            if (n)
                log_info("arena: %u slots of %s reassigned", n, w->id);
        }
    }
}

/* The blob of version 1 when the store has none: the model file given by
 * initial_model (checked), else a freshly initialized network of the
 * specification's shape (initial_blocks x initial_filters). */
static int s_initial_blob(coord *c, uint8_t **blob, size_t *len)
{
    char err[256];
    if (c->cfg.initial_model[0]) {
        int rc = modelkind_read_file(c->cfg.initial_model, c->g, blob, len, NULL, err,
                                     sizeof err);
        if (rc)
            log_error("initial_model: %s", err);
        return rc;
    }
    model_arch a;
    model_arch_default(&a, c->g);
    a.blocks = (int)c->cfg.initial_blocks;
    a.filters = (int)c->cfg.initial_filters;
    if (model_arch_check(&a, err, sizeof err)) {
        log_error("initial model shape: %s", err);
        return KZ_EINVAL;
    }
    model *m = model_new(&a, c->cfg.seed ? (uint64_t)c->cfg.seed : c->instance);
    if (!m)
        return KZ_ENOMEM;
    model_edit_meta(m)->version = 1;
    int rc = modelfile_to_bytes(m, blob, len);
    model_arch_describe(&a, err, sizeof err);
    log_info("bootstrap: random-init network %s", err);
    model_destroy(&m);
    return rc;
}

static int s_bootstrap(coord *c)
{
    uint32_t latest = store_latest_model(c->st);
    if (latest > 0) {
        /* A setting that does nothing must not look as if it did: an
         * initial_model other than the store's version 1 is ignored, and
         * said so (make run passes the same file at every start). */
        if (c->cfg.initial_model[0]) {
            uint8_t *blob = NULL;
            size_t len = 0;
            store_model_info v1;
            bool same = s_initial_blob(c, &blob, &len) == 0 &&
                        store_get_model_info(c->st, 1, &v1) == 0 &&
                        v1.checksum == wire_blob_checksum(blob, len) && v1.blob_len == len;
            free(blob);
            if (!same)
                log_warn("initial_model %s is ignored: the store in %s already has %u model%s "
                         "and its version 1 is another network (initial_model registers "
                         "version 1 of an empty store only)",
                         c->cfg.initial_model, c->cfg.data_dir, latest, latest == 1 ? "" : "s");
        }
        return 0;
    }
    /* A store that reads as empty though LMDB has many pages in use lost its
     * tree (a torn copy, a damaged meta page): bootstrapping would write over
     * what salvage could still recover. A new store has a handful of pages. */
    store_stats ss;
    store_get_stats(c->st, &ss);
    if (ss.games == 0 && ss.used_bytes > COORD_EMPTY_STORE_BYTES) {
        log_error("the store in %s reads as empty (no model, no game) but LMDB has %.1f MB of "
                  "pages in use: it is damaged (its tree was lost) and was not opened: `kz "
                  "store check %s` says what is wrong; `kz store salvage %s NEWDIR` copies "
                  "what is readable into a new store (then start with data_dir = NEWDIR)",
                  c->cfg.data_dir, (double)ss.used_bytes / (1 << 20), c->cfg.data_dir,
                  c->cfg.data_dir);
        return KZ_ECORRUPT;
    }
    uint8_t *blob;
    size_t len;
    int rc = s_initial_blob(c, &blob, &len);
    if (rc)
        return rc;
    store_model_info m = {.created_ms = time_wall_ms(), .checksum = wire_blob_checksum(blob, len),
                          .status = STORE_MODEL_INITIAL};
    rc = store_add_model(c->st, blob, len, &m);
    free(blob);
    if (!rc)
        rc = store_set_best(c->st, m.version);
    if (rc)
        log_error("bootstrap: cannot register model 1: %s", err_str(rc));
    else
        log_info("bootstrap: model %u registered as the first best (%zu bytes)", m.version, len);
    return rc;
}

/* --- replies --------------------------------------------------------------------- */

static void s_send(coord *c, const uint8_t *route, size_t route_len, wire_msg *m)
{
    int rc = wire_encode(m, &c->tx);
    if (rc) {
        log_error("cannot encode %s: %s", wire_kind_name(m->kind), err_str(rc));
        return;
    }
    if (zmq_send(c->router, route, route_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(c->router, c->tx.data, c->tx.len, ZMQ_DONTWAIT) < 0)
        log_debug("reply %s dropped: %s", wire_kind_name(m->kind), zmq_strerror(errno));
}

static void s_error(coord *c, const uint8_t *route, size_t route_len, uint64_t request_id,
                    uint32_t code, const char *message)
{
    wire_msg req = {.request_id = request_id}, m;
    wire_make_error(&req, &m, code, message);
    s_send(c, route, route_len, &m);
}

/* --- ingest ---------------------------------------------------------------------- */

/* Stores every pending game in one transaction, then acknowledges them. */
static void s_flush(coord *c)
{
    if (!c->n_items)
        return;
    bool arena_items = false;
    for (size_t i = 0; i < c->n_items; i++) {
        c->games[i] = c->items[i].game;
        arena_items |= c->items[i].arena_slot >= 0;
    }
    /* Meta that changes with these games goes in their transaction (the
     * timeline's new points ride along). */
    store_meta meta[3 + COORD_SP_DIRTY];
    size_t n_meta = 0;
    uint8_t *ablob = NULL, *tblob = NULL, *lblob = NULL;
    if (arena_items) {
        size_t len = arena_serialize(c, c->items, c->n_items, &ablob);
        meta[n_meta++] = (store_meta){"arena", ablob, len};
    }
    bool tallied = ratings_apply(c, c->items, c->n_items);
    if (tallied) {
        size_t len = ratings_serialize(c, &tblob);
        meta[n_meta++] = (store_meta){"tallies", tblob, len};
    }
    if (c->tl.dirty) {
        size_t len = timeline_serialize(c, &lblob);
        meta[n_meta++] = (store_meta){"timeline", lblob, len};
    }
    size_t n_sp = models_selfplay_meta(c, meta + n_meta); /* the counts of earlier batches */
    n_meta += n_sp;
    store_stats before;
    store_get_stats(c->st, &before);
    int rc = store_put_games_meta(c->st, c->games, c->n_items, meta, n_meta);
    if (!rc && n_sp)
        models_selfplay_written(c);
    /* Where each new game's positions went (appended in order), and whose. */
    uint64_t at = before.positions_total;
    for (size_t i = 0; !rc && i < c->n_items; i++) {
        const ingest_item *it = &c->items[i];
        if (c->games[i].duplicate)
            continue;
        forge_note_game(c, it->worker >= 0 ? c->workers[it->worker].id : NULL, at,
                        c->games[i].n_positions);
        at += c->games[i].n_positions;
    }
    free_all(ablob, tblob, lblob);
    if (rc) {
        c->store_errors++;
        log_error("store: %zu games not stored: %s", c->n_items, err_str(rc));
        if (tallied)
            ratings_rollback(c, c->items, c->n_items);
        if (lblob)
            c->tl.dirty = true; /* written later on its own */
    }
    for (size_t i = 0; i < c->n_items; i++) {
        ingest_item *it = &c->items[i];
        const store_game *g = &c->games[i];
        worker *w = it->worker >= 0 ? &c->workers[it->worker] : NULL;
        if (rc) {
            s_error(c, it->route, it->route_len, it->request_id, WIRE_ERR_INTERNAL,
                    "storage failed; resend later");
        } else {
            if (g->duplicate) {
                c->duplicates++;
                if (w)
                    w->duplicates++;
            } else {
                c->accepted++;
                c->positions += g->n_positions;
                if (w)
                    w->games++;
                if (it->kind >= 0 && it->kind < 3) {
                    c->by_kind[it->kind]++;
                    c->slot_ms[it->kind] += (uint64_t)it->duration_ms;
                    c->results[it->kind][it->winner < 0 ? 2 : it->winner]++;
                    c->plies[it->kind] += it->plies;
                }
                if (it->kind == 0)
                    models_selfplay_count(c, it->version);
            }
            wire_msg m = {0};
            m.request_id = it->request_id;
            m.kind = WIRE_GAME_ACK;
            m.u.game_ack = (wire_game_ack){it->game_id, 16, g->duplicate, g->sequence};
            s_send(c, it->route, it->route_len, &m);
        }
    }
    if (!rc) {
        arena_commit(c, c->items, c->n_items);
        ratings_after_commit(c);
    }
    for (size_t i = 0; i < c->n_items; i++)
        wire_msg_clear(&c->items[i].msg);
    c->n_items = 0;
    c->pos_used = c->ent_used = c->off_used = c->opp_used = 0;
}

static void s_reject(coord *c, ingest_item *it, worker *w, const validate_result *v, int reason,
                     const char *detail)
{
    c->rejected++;
    c->rejected_by[reason]++;
    if (w) {
        w->rejected++;
        w->rejected_by[reason]++;
    }
    if (!w || w->rejected <= LOG_REJECTS_PER_WORKER || w->rejected % 1000 == 0)
        log_warn("rejected a game from %s (%s): %s%s", w ? w->id : "?",
                 validate_reason_name(reason), detail,
                 w && w->rejected == LOG_REJECTS_PER_WORKER ? " (further rejections of this "
                                                              "client logged every 1000th)"
                                                            : "");
    wire_msg m = {0};
    m.request_id = it->request_id;
    m.kind = WIRE_GAME_REJECT;
    m.u.game_reject = (wire_game_reject){v->has_id ? v->game_id : NULL, v->has_id ? 16 : 0,
                                         (uint32_t)reason, detail};
    s_send(c, it->route, it->route_len, &m);
}

/* The arena's and the rating match's slot a game takes, and its result. */
typedef struct slot_take {
    int count_slot, eval_slot; /* -1: none */
    uint8_t result, eval_result;
} slot_take;

/* An arena record's check by the arena (its slot and result into
 * count_slot, result), an eval record's by the rating match (eval_slot,
 * eval_result); VALIDATE_OK for the other kinds. */
static int s_slot_check(coord *c, const validate_result *v, uint32_t slot, slot_take *t,
                        char *detail, size_t len)
{
    if (v->kind == RECORD_ARENA)
        return arena_check(c, v, slot, &t->count_slot, &t->result, detail, len);
    if (v->kind == RECORD_EVAL)
        return ratings_check(c, v, slot, &t->eval_slot, &t->eval_result, detail, len);
    return VALIDATE_OK;
}

/* Validates the game in c->items[c->n_items] and queues it for the commit;
 * a game whose sampled states were checked already (forge.c) is not sampled
 * again. */
static void s_ingest(coord *c, worker *w, bool checked)
{
    ingest_item *it = &c->items[c->n_items];
    const wire_game_submit *gs = &it->msg.u.game_submit;
    validate_result v;
    c->received++;
    /* Fast path: a resent game already stored byte for byte (its id leads the
     * encoding) is acknowledged again without replaying it. */
    uint64_t seq;
    if (gs->record_len > 18 && gs->record[0] == 0x0a && gs->record[1] == 16 &&
        store_find_record(c->st, gs->record + 2, gs->record, gs->record_len, &seq) == 0) {
        c->duplicates++;
        if (w)
            w->duplicates++;
        wire_msg m = {0};
        m.request_id = it->request_id;
        m.kind = WIRE_GAME_ACK;
        m.u.game_ack = (wire_game_ack){gs->record + 2, 16, true, seq};
        s_send(c, it->route, it->route_len, &m);
        wire_msg_clear(&it->msg);
        return;
    }
    /* A resend of a game held for its check is answered when the check ends. */
    if (!checked && gs->record_len > 18 && gs->record[0] == 0x0a && gs->record[1] == 16 &&
        forge_resend(c, gs->record + 2, it->route, it->route_len, it->request_id)) {
        wire_msg_clear(&it->msg);
        return;
    }
    int reason = validate_record(c->val, gs->record, gs->record_len, store_latest_model(c->st),
                                 &v);
    char detail[192];
    snprintf(detail, sizeof detail, "%s", v.detail);
    slot_take take = {-1, -1, SLOT_OPEN, SLOT_OPEN};
    if (reason == VALIDATE_OK)
        reason = s_slot_check(c, &v, gs->arena_slot, &take, detail, sizeof detail);
    if (reason != VALIDATE_OK) {
        s_reject(c, it, w, &v, reason, detail);
        wire_msg_clear(&it->msg);
        return;
    }
    /* A sample of the games is held for the re-search of some of its states. */
    if (!checked && c->forge) {
        forge_held h = {.route_len = it->route_len, .request_id = it->request_id};
        memcpy(h.route, it->route, it->route_len);
        snprintf(h.client, sizeof h.client, "%s", w ? w->id : "");
        memcpy(h.game_id, v.game_id, 16);
        h.msg = it->msg;
        int taken = forge_take(c, &h, &v, w);
        if (taken == 1) {
            memset(&it->msg, 0, sizeof it->msg);
            return;
        }
        if (taken == 2) {
            s_reject(c, it, w, &v, VALIDATE_FORGED, h.why);
            wire_msg_clear(&it->msg);
            return;
        }
    }
    /* Training positions (self-play only) into the batch's arrays. */
    uint32_t n = v.kind == 0 ? v.n_positions : 0;
    uint32_t ent = n ? v.offsets[n] : 0;
    uint32_t oent = n && c->cfg.aux_targets ? v.opp_offsets[n] : 0;
    if (c->pos_used + n > c->pos_cap || c->ent_used + ent > c->ent_cap ||
        c->opp_used + oent > c->ent_cap ||
        c->off_used + n + 1 > c->pos_cap + c->cfg.ingest_batch) {
        ingest_item keep = *it;
        memset(it, 0, sizeof *it);
        s_flush(c);
        c->items[0] = keep;
        it = &c->items[0];
        gs = &it->msg.u.game_submit;
        /* A commit can change the arena or the rating match: check again. */
        reason = s_slot_check(c, &v, gs->arena_slot, &take, detail, sizeof detail);
        if (reason != VALIDATE_OK) {
            s_reject(c, it, w, &v, reason, detail);
            wire_msg_clear(&it->msg);
            return;
        }
    }
    memcpy(it->game_id, v.game_id, 16);
    it->arena_slot = take.count_slot;
    it->arena_result = take.result;
    it->eval_slot = take.eval_slot;
    it->eval_result = take.eval_result;
    it->kind = v.kind;
    it->winner = v.winner;
    it->points = (uint8_t)(v.points > 0 ? v.points : 1);
    it->plies = v.plies;
    it->duration_ms = v.duration_ms;
    it->version = v.model_version;
    store_game *g = &it->game;
    *g = (store_game){it->game_id, gs->record, gs->record_len, n, v.packed_bytes, NULL, NULL,
                      NULL, NULL, NULL, NULL, false, 0, NULL, NULL, NULL, NULL};
    if (n) {
        memcpy(c->pk + c->pos_used * v.packed_bytes, v.packed, (size_t)n * v.packed_bytes);
        memcpy(c->pz + c->pos_used, v.z, n * sizeof *v.z);
        memcpy(c->pq + c->pos_used, v.q, n * sizeof *v.q);
        memcpy(c->pact + c->ent_used, v.actions, ent * sizeof *v.actions);
        memcpy(c->pprob + c->ent_used, v.probs, ent * sizeof *v.probs);
        uint32_t *off = c->poff + c->off_used;
        for (uint32_t j = 0; j <= n; j++)
            off[j] = v.offsets[j];
        g->packed = c->pk + c->pos_used * v.packed_bytes;
        g->z = c->pz + c->pos_used;
        g->q = c->pq + c->pos_used;
        g->offsets = off;
        g->actions = c->pact + c->ent_used;
        g->probs = c->pprob + c->ent_used;
        if (c->cfg.aux_targets) {
            /* The auxiliary targets (validate.h), beside the same positions. */
            uint32_t *ooff = c->popoff + c->off_used;
            for (uint32_t j = 0; j <= n; j++)
                ooff[j] = v.opp_offsets[j];
            memcpy(c->popact + c->opp_used, v.opp_actions, oent * sizeof *v.opp_actions);
            memcpy(c->popprob + c->opp_used, v.opp_probs, oent * sizeof *v.opp_probs);
            g->opp_offsets = ooff;
            g->opp_actions = c->popact + c->opp_used;
            g->opp_probs = c->popprob + c->opp_used;
            c->opp_used += oent;
            if (v.material) {
                memcpy(c->pmat + c->pos_used, v.material, n * sizeof *v.material);
                g->material = c->pmat + c->pos_used;
            }
        }
        c->pos_used += n;
        c->ent_used += ent;
        c->off_used += n + 1;
    }
    c->n_items++;
    if (c->n_items == (size_t)c->cfg.ingest_batch)
        s_flush(c);
}

/* --- requests --------------------------------------------------------------------- */

uint32_t coord_selfplay_sims(coord *c)
{
    uint64_t games = 0;
    if (c->cfg.sims_start > 0) {
        store_stats st;
        store_get_stats(c->st, &st);
        games = st.games;
    }
    return selfplay_sims_schedule(c->cfg.sims_start, c->cfg.simulations, c->cfg.sims_ramp_games,
                                  games);
}

static void s_handle_job(coord *c, const uint8_t *route, size_t rl, const wire_msg *req, int wi)
{
    const wire_job_request *jr = &req->u.job_request;
    arena_reconcile(c, wi, jr->arena_candidate, jr->arena_slots, jr->n_arena_slots);
    uint32_t free_slots = jr->free_slots ? jr->free_slots : 1;
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_JOB;
    uint32_t slots[1024];
    int32_t colours[1024];
    char *openings[1024];
    size_t max =
        free_slots < c->cfg.arena_per_worker ? free_slots : (size_t)c->cfg.arena_per_worker;
    if (max > 1024)
        max = 1024;
    /* The arena first (promotion waits for it), then rating games within
     * their share, then self-play. */
    /* A client caught forging plays self-play only (its games are still checked). */
    if (wi >= 0 && forge_barred(c, &c->workers[wi]))
        max = 0;
    size_t n = max ? arena_assign(c, wi, max, slots, colours, openings) : 0;
    if (n) {
        m.u.job = (wire_job){WIRE_JOB_ARENA, c->ar.candidate, c->ar.cand_sum, c->ar.best,
                             c->ar.best_sum, slots, colours, n, 0, 0,
                             (uint32_t)c->cfg.simulations, openings, n, "", "", c->g->name};
    } else if (max && (n = ratings_assign(c, wi, max, slots, colours, openings)) > 0) {
        const evalmatch *e = &c->ev;
        const model_cache_entry *ma = e->va ? coord_model(c, e->va) : NULL;
        uint64_t sum_a = ma ? ma->info.checksum : 0;
        const model_cache_entry *mb = e->vb ? coord_model(c, e->vb) : NULL;
        uint64_t sum_b = mb ? mb->info.checksum : 0;
        m.u.job = (wire_job){WIRE_JOB_EVAL, e->va, sum_a, e->vb, sum_b, slots, colours, n, 0, 0,
                             (uint32_t)(c->cfg.eval_simulations ? c->cfg.eval_simulations
                                                                : c->g->simulations),
                             openings, n,
                             e->va ? "" : e->a, e->vb ? "" : e->b, c->g->name};
    } else {
        uint32_t games = free_slots < c->cfg.selfplay_games ? free_slots
                                                             : (uint32_t)c->cfg.selfplay_games;
        /* Openings from the book for a share of the games (the colour bias:
         * both sides learn from positions the start would not lead to). */
        size_t n_open = 0;
        if (c->cfg.selfplay_openings > 0) {
            if (games > 1024)
                games = 1024;
            for (uint32_t k = 0; k < games; k++) {
                bool book = rng_uniform(&c->rng) < c->cfg.selfplay_openings;
                openings[k] = (char *)(book ? coord_opening(c, rng_below(&c->rng,
                                                                         (uint32_t)c->book_n))
                                            : "");
            }
            n_open = games;
        }
        m.u.job = (wire_job){WIRE_JOB_SELFPLAY, c->best, c->best_sum, 0, 0, NULL, NULL, 0, games,
                             0, coord_selfplay_sims(c), n_open ? openings : NULL, n_open,
                             NULL, NULL, c->g->name};
    }
    s_send(c, route, rl, &m);
}

static void s_handle_batch(coord *c, const uint8_t *route, size_t rl, const wire_msg *req)
{
    const wire_batch_request *br = &req->u.batch_request;
    store_stats st;
    store_get_stats(c->st, &st);
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_BATCH_REPLY;
    wire_batch_reply *r = &m.u.batch_reply;
    r->window_lo = st.window_lo;
    r->window_hi = st.window_hi;
    r->best_version = c->best;
    r->games_total = st.games;
    r->game = c->g->name;
    size_t size = br->size < (uint32_t)c->cfg.max_batch ? br->size : (size_t)c->cfg.max_batch;
    if (size && st.window_hi - st.window_lo >= br->min_positions &&
        st.window_hi > st.window_lo) {
        int rc = store_sample(c->st, &c->rng, size, c->batch);
        if (rc) {
            log_error("store: sampling failed: %s", err_str(rc));
            s_error(c, route, rl, req->request_id, WIRE_ERR_INTERNAL, "sampling failed");
            return;
        }
        store_get_stats(c->st, &st);
        if (st.damaged_positions >= 2 * c->damaged_warned + 1) { /* 1, 3, 7, ... */
            c->damaged_warned = st.damaged_positions;
            log_warn("store: %llu damaged positions met in the window so far (each drawn "
                     "again): the store is damaged; `kz store check %s` names them",
                     (unsigned long long)st.damaged_positions, c->cfg.data_dir);
        }
        store_batch *b = c->batch;
        r->n = (uint32_t)b->n;
        r->packed_bytes = b->packed_bytes;
        r->packed = b->packed;
        r->z = b->z;
        r->q = b->q;
        r->offsets = b->offsets;
        r->actions = b->actions;
        r->probs = b->probs;
        if (br->aux)
            r->aux = (wire_batch_aux){b->material, b->material_w, b->opp_offsets, b->opp_actions,
                                      b->opp_probs};
        c->batches_served++;
        c->samples_served += b->n;
    }
    s_send(c, route, rl, &m);
}

static void s_handle_hello(coord *c, const uint8_t *route, size_t rl, const wire_msg *req,
                           worker *w)
{
    if (w) {
        snprintf(w->role, sizeof w->role, "%s", req->u.hello.role);
        snprintf(w->host, sizeof w->host, "%s", req->u.hello.host);
        snprintf(w->software, sizeof w->software, "%s", req->u.hello.software);
        w->pid = req->u.hello.pid;
        w->slots = req->u.hello.slots;
    }
    if (strcmp(req->u.hello.game, c->g->name) && req->u.hello.game[0])
        log_warn("client %s plays '%.30s', this cluster '%s'", req->client, req->u.hello.game,
                 c->g->name);
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_WELCOME;
    m.u.welcome = (wire_welcome){c->name, c->instance, c->g->name,
                                 (uint32_t)c->cfg.heartbeat_ms, (uint32_t)c->cfg.expiry_ms,
                                 (uint64_t)c->cfg.max_msg_bytes, c->best,
                                 (uint64_t)c->cfg.max_record_bytes};
    s_send(c, route, rl, &m);
}

static void s_handle_heartbeat(coord *c, const uint8_t *route, size_t rl, const wire_msg *req,
                               worker *w)
{
    if (w) {
        w->in_flight = req->u.heartbeat.games_in_flight;
        w->done = req->u.heartbeat.games_done;
        w->pending = req->u.heartbeat.pending;
        w->model_version = req->u.heartbeat.model_version;
        float sp = req->u.heartbeat.sims_per_s;
        w->sims_per_s = sp == sp && sp >= 0 && sp < 1e12f ? sp : 0; /* from the network */
    }
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_HEARTBEAT_REPLY;
    m.u.heartbeat_reply = (wire_heartbeat_reply){c->best, c->ar.candidate, c->instance};
    s_send(c, route, rl, &m);
}

static void s_handle_model(coord *c, const uint8_t *route, size_t rl, const wire_msg *req)
{
    uint32_t v = req->u.model_request.version ? req->u.model_request.version : c->best;
    const model_cache_entry *e = coord_model(c, v);
    if (!e) {
        char text[160];
        bool damaged = false;
        for (uint32_t i = 0; i < c->n_damaged && i < COORD_DAMAGED; i++)
            damaged |= c->damaged[i] == v;
        if (damaged)
            snprintf(text, sizeof text, "model %u is damaged in the coordinator's store (it "
                     "fails its checksum); the best is model %u", v, c->best);
        else
            snprintf(text, sizeof text, "no model version %u", v);
        s_error(c, route, rl, req->request_id, WIRE_ERR_NOT_FOUND, text);
        return;
    }
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_MODEL_REPLY;
    m.u.model_reply = (wire_model_reply){v, e->info.checksum, e->blob, e->len, e->info.parent,
                                         e->info.created_ms, c->g->name};
    s_send(c, route, rl, &m);
}

/* A game: the message stays in its ingest slot (c->items[c->n_items]), which
 * s_ingest keeps for the commit or clears. */
static void s_handle_game(coord *c, const uint8_t *route, size_t rl, worker *w, int wi)
{
    ingest_item *it = &c->items[c->n_items];
    memcpy(it->route, route, rl);
    it->route_len = rl;
    it->request_id = it->msg.request_id;
    it->worker = wi;
    s_ingest(c, w, false);
}

/* The games whose check ended: on to their commit, or refused as forged. */
static void s_forge_results(coord *c)
{
    forge_held h;
    int verdict;
    char detail[200];
    bool any = false;
    while (forge_next(c, &h, &verdict, detail, sizeof detail)) {
        worker *w = h.client[0] ? coord_worker(c, h.client) : NULL;
        ingest_item *it = &c->items[c->n_items];
        memset(it, 0, sizeof *it);
        memcpy(it->route, h.route, h.route_len);
        it->route_len = h.route_len;
        it->request_id = h.request_id;
        it->worker = w ? (int)(w - c->workers) : -1;
        it->msg = h.msg;
        if (verdict == RECHECK_FORGED) {
            validate_result v = {.has_id = true};
            memcpy(v.game_id, h.game_id, 16);
            s_reject(c, it, w, &v, VALIDATE_FORGED, detail);
            /* The games this pass queued (checks passed) are committed
             * first: forge_bar withdraws only committed games, and nothing
             * of a barred client may be committed after it. (s_flush leaves
             * this item, past the queue's end, alone.) */
            s_flush(c);
            forge_bar(c, w, detail);
            if (forge_barred(c, w) && w->rejected_by[VALIDATE_FORGED] ==
                                          (uint64_t)c->cfg.forge_arena_threshold) {
                log_warn("forged games: %s has %llu: no more arena or rating slots for it",
                         w->id, (unsigned long long)w->rejected_by[VALIDATE_FORGED]);
                arena_release_worker(c, (int)(w - c->workers));
                ratings_release_worker(c, (int)(w - c->workers));
            }
            wire_msg_clear(&it->msg);
            continue;
        }
        if (w && forge_barred_client(c, w->id)) {
            /* Held for its check when its client was proven a forger. */
            validate_result v = {.has_id = true};
            memcpy(v.game_id, h.game_id, 16);
            s_reject(c, it, w, &v, VALIDATE_FORGED, "its client is barred as a proven forger");
            wire_msg_clear(&it->msg);
            continue;
        }
        s_ingest(c, w, true);
        any = true;
    }
    if (any)
        s_flush(c);
}

static void s_handle_candidate(coord *c, const uint8_t *route, size_t rl, const wire_msg *req)
{
    char err[160];
    wire_candidate_ack ack;
    int rc = arena_add_candidate(c, &req->u.candidate_submit, &ack, err, sizeof err);
    if (rc) {
        log_warn("candidate from %s refused: %s", req->client, err);
        s_error(c, route, rl, req->request_id,
                rc == KZ_EINVAL || rc == KZ_ECORRUPT ? WIRE_ERR_REFUSED : WIRE_ERR_INTERNAL, err);
        return;
    }
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_CANDIDATE_ACK;
    m.u.candidate_ack = ack;
    s_send(c, route, rl, &m);
}

static void s_handle_trainer_stats(coord *c, const uint8_t *route, size_t rl,
                                   const wire_msg *req)
{
    c->trainer = req->u.trainer_stats;
    c->trainer_seen = time_now();
    c->trainer_seen_ms = time_wall_ms();
    wire_msg m = {0};
    m.request_id = req->request_id;
    m.kind = WIRE_STATS_ACK;
    m.u.stats_ack.best_version = c->best;
    s_send(c, route, rl, &m);
}

/* Answers a message that cannot be handled: a version we do not speak (a
 * refusal that names both versions), or bytes that do not decode. */
static void s_handle_undecodable(coord *c, const uint8_t *route, size_t rl, const wire_msg *req,
                                 int rc, size_t len)
{
    if (rc == KZ_EVERSION) {
        char text[200];
        wire_msg m;
        c->refused_version++;
        wire_make_refusal(req, &m, text, sizeof text);
        log_warn("refused client '%.60s': protocol version %u (ours %d)", req->client,
                 req->version, WIRE_PROTOCOL_VERSION);
        s_send(c, route, rl, &m);
        return;
    }
    c->malformed++;
    char text[96];
    snprintf(text, sizeof text, "undecodable message of %zu bytes (%s)", len, err_str(rc));
    s_error(c, route, rl, 0, WIRE_ERR_MALFORMED, text);
}

/* Notes that a known client was heard from. */
static void s_seen(worker *w)
{
    if (!w)
        return;
    w->last_seen = time_now();
    w->last_seen_ms = time_wall_ms();
    if (!w->alive) {
        w->alive = true;
        log_info("client %s is here", w->id);
    }
}

/* Handles one message (route = ROUTER identity): decodes it into the next free
 * ingest slot, so that a game needs no copy, and hands it to its kind's
 * handler. */
static void s_handle(coord *c, const uint8_t *route, size_t rl, const void *data, size_t len,
                     const char *user_id)
{
    c->requests++;
    wire_msg *req = &c->items[c->n_items].msg;
    int rc = wire_decode(req, data, len, (size_t)c->cfg.max_msg_bytes);
    if (rc) {
        s_handle_undecodable(c, route, rl, req, rc, len);
        wire_msg_clear(req);
        return;
    }
    /* CurveZMQ: the key behind the connection may send this kind, and its
     * name is the client's id (auth.c). */
    static char idbuf[64];
    char why[160];
    const char *id;
    if (!auth_check(c, user_id, req->kind, req->client, &id, idbuf, sizeof idbuf, why,
                    sizeof why)) {
        s_error(c, route, rl, req->request_id, WIRE_ERR_FORBIDDEN, why);
        wire_msg_clear(req);
        return;
    }
    req->client = id;
    const barred_client *bc = forge_barred_client(c, req->client);
    if (bc) {
        /* A proven forger: nothing of it is taken, its key included. */
        if (c->barred_refused++ % 1000 == 0)
            log_warn("forged games: refused %s from %s, a proven forger (%llu refused)",
                     wire_kind_name(req->kind), bc->id, (unsigned long long)c->barred_refused);
        s_error(c, route, rl, req->request_id, WIRE_ERR_FORBIDDEN,
                "this client is barred as a proven forger (forged games, docs/security.md)");
        wire_msg_clear(req);
        return;
    }
    worker *w = coord_worker(c, req->client);
    int wi = w ? (int)(w - c->workers) : -1;
    s_seen(w);
    switch (req->kind) {
    case WIRE_HELLO:
        s_handle_hello(c, route, rl, req, w);
        break;
    case WIRE_HEARTBEAT:
        s_handle_heartbeat(c, route, rl, req, w);
        break;
    case WIRE_JOB_REQUEST:
        if (wi < 0) {
            s_error(c, route, rl, req->request_id, WIRE_ERR_INTERNAL,
                    "too many clients (max_clients); ask again later");
            break;
        }
        s_handle_job(c, route, rl, req, wi);
        break;
    case WIRE_MODEL_REQUEST:
        s_handle_model(c, route, rl, req);
        break;
    case WIRE_GAME_SUBMIT:
        s_handle_game(c, route, rl, w, wi); /* keeps or clears the message */
        return;
    case WIRE_BATCH_REQUEST:
        s_handle_batch(c, route, rl, req);
        break;
    case WIRE_CANDIDATE_SUBMIT:
        s_handle_candidate(c, route, rl, req);
        break;
    case WIRE_TRAINER_STATS:
        s_handle_trainer_stats(c, route, rl, req);
        break;
    default: {
        char text[96];
        snprintf(text, sizeof text, "unexpected message '%s' (a reply kind)",
                 wire_kind_name(req->kind));
        s_error(c, route, rl, req->request_id, WIRE_ERR_MALFORMED, text);
        break;
    }
    }
    wire_msg_clear(req);
}

/* Receives up to ingest_batch messages without blocking. Returns how many. */
static size_t s_drain(coord *c)
{
    size_t n = 0;
    while (n < (size_t)c->cfg.ingest_batch && !*c->stop) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        if (zmq_msg_recv(&id, c->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&id);
            break;
        }
        n++;
        if (!zmq_msg_more(&id) || zmq_msg_size(&id) > sizeof c->items[0].route) {
            zmq_msg_close(&id);
            continue;
        }
        zmq_msg_init(&body);
        if (zmq_msg_recv(&body, c->router, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&body);
            zmq_msg_close(&id);
            continue;
        }
        bool more = zmq_msg_more(&body);
        s_handle(c, zmq_msg_data(&id), zmq_msg_size(&id), zmq_msg_data(&body),
                 zmq_msg_size(&body), c->auth.on ? zmq_msg_gets(&body, "User-Id") : NULL);
        zmq_msg_close(&body);
        zmq_msg_close(&id);
        while (more) { /* our protocol has one frame; drop extras */
            zmq_msg_t extra;
            zmq_msg_init(&extra);
            more = zmq_msg_recv(&extra, c->router, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&extra);
            zmq_msg_close(&extra);
        }
    }
    return n;
}

/* --- life cycle -------------------------------------------------------------------- */

static void *s_socket(coord *c, int type, const char *endpoint, int which)
{
    void *s = zmq_socket(c->zctx, type);
    if (!s)
        return NULL;
    int arc = auth_socket(c, s);
    if (arc) {
        log_error("cannot make %s a CurveZMQ server: %s", endpoint, zmq_strerror(arc));
        zmq_close(s);
        return NULL;
    }
    int zero = 0, hwm = 100000;
    int64_t maxmsg = c->cfg.max_msg_bytes;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_bind(s, endpoint)) {
        log_error("cannot bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return NULL;
    }
    auth_watch(c, s, which);
    return s;
}

int coord_gate_config(const coord_config *cfg, gate_config *g, char *err, size_t errlen)
{
    gate_config_default(g);
    if (gate_mode_parse(cfg->gate, &g->mode)) {
        snprintf(err, errlen, "gate: '%s' is not spec, sprt or none", cfg->gate);
        return KZ_EINVAL;
    }
    g->games = (int)cfg->arena_games;
    g->threshold = cfg->arena_threshold;
    g->sprt = cfg->arena_sprt;
    g->elo0 = cfg->arena_elo0;
    g->elo1 = cfg->arena_elo1;
    g->alpha = cfg->arena_alpha;
    g->beta = cfg->arena_beta;
    return gate_config_check(g, err, errlen);
}

int coord_anchors(const coord_config *cfg, const game_def *g,
                  char anchors[COORD_MAX_ANCHORS][COORD_NAME], int *n, char *err, size_t errlen)
{
    char buf[CONFIG_STR_MAX];
    snprintf(buf, sizeof buf, "%s", cfg->anchors);
    if (!strcmp(buf, "auto") && scale_players(g->name, buf, sizeof buf) == 0)
        snprintf(buf, sizeof buf, "%s",
                 !strcmp(g->name, "backgammon") && gnubg_path()
                     ? "gnubg:beginner,gnubg:intermediate,gnubg:expert"
                     : "random,greedy,uct:100");
    *n = 0;
    for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
        char perr[200];
        player *p = strlen(w) < COORD_NAME && (w[0] != 'v' || w[1] < '0' || w[1] > '9') &&
                            strncmp(w, "mcts:", 5) && strncmp(w, "policy:", 7)
                        ? player_from_spec(g, w, perr, sizeof perr)
                        : NULL;
        if (!p && !strncmp(w, "gnubg:", 6) && strlen(w) < COORD_NAME) {
            snprintf(err, errlen, "'%s': %s", w, perr);
            return KZ_EINVAL;
        }
        if (!p) {
            snprintf(err, errlen, "'%s' is not a baseline player (random, greedy, uct:N, "
                     "alphabeta:D, gnubg:LEVEL; at most %d characters)", w, COORD_NAME - 1);
            return KZ_EINVAL;
        }
        player_destroy(&p);
        if (*n == COORD_MAX_ANCHORS) {
            snprintf(err, errlen, "more than %d anchors", COORD_MAX_ANCHORS);
            return KZ_EINVAL;
        }
        for (int k = 0; k < *n; k++)
            if (!strcmp(anchors[k], w)) {
                snprintf(err, errlen, "'%s' is listed twice", w);
                return KZ_EINVAL;
            }
        snprintf(anchors[(*n)++], COORD_NAME, "%s", w);
    }
    return 0;
}

/* Start-up step 1: the settings the start relies on (the gate's, the game).
 * 0 or KZ_EINVAL, logged. */
static int s_init_settings(coord *c, const coord_config *cfg, volatile sig_atomic_t *stop)
{
    memset(c, 0, sizeof *c);
    c->http_fd = -1;
    c->cfg = *cfg;
    c->stop = stop;
    c->started = time_now();
    pthread_mutex_init(&c->snap_lock, NULL);
    char gerr[200];
    if (coord_gate_config(cfg, &c->gate, gerr, sizeof gerr)) {
        log_error("arena settings: %s", gerr);
        return KZ_EINVAL;
    }
    c->g = game_find(cfg->game);
    if (!c->g) {
        log_error("unknown game '%s'", cfg->game);
        return KZ_EINVAL;
    }
    return 0;
}

/* Step 2: the ports first: a port in use stops the start at once, before
 * the store is created or bootstrapped. */
static int s_init_ports(coord *c)
{
    c->zctx = zmq_ctx_new();
    int rc = auth_init(c); /* the ZAP handler before the sockets that use it */
    if (rc)
        return rc;
    c->router = s_socket(c, ZMQ_ROUTER, c->cfg.bind, 0);
    c->pub = c->router ? s_socket(c, ZMQ_PUB, c->cfg.pub_bind, 1) : NULL;
    if (!c->router || !c->pub)
        return KZ_EIO;
    return status_bind(c);
}

/* Step 3: the rating anchors, the opening book, and this run's name, instance
 * number and random generator. */
static int s_init_run(coord *c)
{
    char gerr[200];
    if (coord_anchors(&c->cfg, c->g, c->anchors, &c->n_anchors, gerr, sizeof gerr)) {
        log_error("anchors: %s", gerr);
        return KZ_EINVAL;
    }
    int rc = coord_book_make(c);
    if (rc)
        return rc;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    snprintf(c->name, sizeof c->name, "%s:%d", host, (int)getpid());
    c->instance = mix64((uint64_t)time_wall_ms() ^ ((uint64_t)getpid() << 40));
    rng_seed(&c->rng, c->cfg.seed ? (uint64_t)c->cfg.seed : c->instance);
    return 0;
}

/* The store's game (meta "game"): written when the store is new, checked at
 * every later start. A store from before the entry holds the game of its
 * model 1 (checked) and gets the entry. 0, or KZ_EMISMATCH (logged). */
static int s_check_store_game(coord *c)
{
    char held[GAME_NAME_CHARS + 2] = "";
    size_t len = 0;
    int rc = store_get_meta(c->st, "game", held, sizeof held - 1, &len);
    if (rc == KZ_EFULL || (rc == 0 && store_check_game_name(held, len))) {
        char what[120];
        snprintf(what, sizeof what, "its game entry (meta \"game\") is %zu bytes that are not "
                 "a game's name", len);
        return coord_store_damaged(c, what);
    }
    if (rc == 0) {
        held[len < sizeof held ? len : sizeof held - 1] = '\0';
        if (strcmp(held, c->g->name)) {
            log_error("the store in %s holds %.40s games, not %s (the setting game): give "
                      "game = %.40s, or another data_dir for %s",
                      c->cfg.data_dir, held, c->g->name, held, c->g->name);
            return KZ_EMISMATCH;
        }
        return 0;
    }
    if (rc != KZ_ENOTFOUND) {
        log_error("store: cannot read its game: %s", err_str(rc));
        return rc;
    }
    if (store_latest_model(c->st) > 0) {
        uint8_t *blob = NULL;
        size_t n = 0;
        char why[300] = "";
        rc = store_get_model(c->st, 1, &blob, &n, NULL);
        if (rc == 0)
            rc = modelkind_check(blob, n, c->g, NULL, why, sizeof why);
        free(blob);
        if (rc) {
            log_error("the store in %s is not one of %s games: its model 1: %s",
                      c->cfg.data_dir, c->g->name, why[0] ? why : err_str(rc));
            return KZ_EMISMATCH;
        }
    }
    rc = store_put_meta(c->st, "game", c->g->name, strlen(c->g->name));
    if (rc)
        log_error("store: cannot record its game: %s", err_str(rc));
    return rc;
}

/* Logs a problem of the store check (at most 20, then a count). */
static void s_store_problem(void *ctx, const char *line)
{
    uint64_t *n = ctx;
    if (++*n <= 20)
        log_error("store: %s", line);
}

/* Checks the pages of an existing store before LMDB reads it (a damaged page
 * can crash LMDB). 0, or KZ_ECORRUPT (logged with what to do). */
static int s_check_store(coord *c)
{
    const coord_config *cfg = &c->cfg;
    uint64_t shown = 0;
    storecheck_opts o = {.pages_only = true, .g = c->g, .problem = s_store_problem,
                         .ctx = &shown};
    storecheck_result r;
    int rc = storecheck_run(cfg->data_dir, &o, &r);
    if (rc == ENOENT)
        return 0; /* a new store */
    if (rc) {
        log_error("cannot check the store in %s: %s", cfg->data_dir, err_str(rc));
        return rc;
    }
    if (r.problems) {
        if (r.problems > 20)
            log_error("store: ... %llu more problems", (unsigned long long)r.problems - 20);
        log_error("the store in %s is damaged (%llu problem%s, above) and was not opened: "
                  "`kz store check %s` lists them all; `kz store salvage %s NEWDIR` copies "
                  "what is readable into a new store (then start with data_dir = NEWDIR)",
                  cfg->data_dir, (unsigned long long)r.problems, r.problems == 1 ? "" : "s",
                  cfg->data_dir, cfg->data_dir);
        return KZ_ECORRUPT;
    }
    log_info("store: %llu pages checked in %.2f s", (unsigned long long)r.visited, r.seconds);
    return 0;
}

/* The damaged versions found by store_check_models (its read transaction is
 * open while it calls: the store is read again only once it returns). */
typedef struct bad_models {
    uint32_t v[COORD_DAMAGED]; /* the first ones */
    uint32_t n;                /* in v */
} bad_models;

static void s_model_bad(void *ctx, uint32_t version, const char *why)
{
    bad_models *b = ctx;
    (void)why;
    if (b->n < COORD_DAMAGED)
        b->v[b->n++] = version;
}

/* Every model's blob against its checksum (a flipped bit on the disk passes
 * the page check): a damaged best falls back to the last good one before the
 * arena and the workers see it. 0, or an LMDB error (logged). */
static int s_check_models(coord *c)
{
    double t0 = time_now();
    uint32_t bad = 0;
    bad_models found = {{0}, 0};
    int rc = store_check_models(c->st, s_model_bad, &found, &bad);
    for (uint32_t i = 0; i < found.n; i++)
        coord_model_damaged(c, found.v[i]);
    c->n_damaged = bad > c->n_damaged ? bad : c->n_damaged;
    if (rc)
        log_error("store: cannot read its models: %s", err_str(rc));
    else
        log_info("store: %u model%s checked in %.2f s, %u damaged", store_latest_model(c->st),
                 store_latest_model(c->st) == 1 ? "" : "s", time_now() - t0, bad);
    return rc;
}

/* Step 4: the store (its pages checked first), bootstrapped when empty, and
 * what the coordinator keeps in it (arenas, ratings, the timeline). */
static int s_init_store(coord *c)
{
    const coord_config *cfg = &c->cfg;
    int crc = cfg->check_store ? s_check_store(c) : 0;
    if (crc)
        return crc;
    store_options so;
    store_options_default(&so);
    so.map_bytes = (size_t)cfg->map_mb << 20;
    so.window = (uint64_t)cfg->window;
    so.prune_per_txn = (uint64_t)cfg->prune_per_txn;
    so.no_sync = !cfg->sync;
    int rc = store_open(&c->st, cfg->data_dir, &so);
    if (rc == KZ_ECORRUPT) /* its counters do not read (check_store does not look at values) */
        return coord_store_damaged(c, "its counters (meta next_game, next_pos, first_pos, "
                                      "next_model, best) do not read");
    if (rc) {
        log_error("cannot open the store in %s: %s", cfg->data_dir, err_str(rc));
        return rc;
    }
    if ((rc = s_check_store_game(c)) || (rc = s_bootstrap(c)) || (rc = s_check_models(c)) ||
        (rc = forge_load_barred(c)) || (rc = arena_load(c)) ||
        (rc = ratings_load(c)) || (rc = timeline_load(c)) ||
        (rc = models_selfplay_load(c)))
        return rc;
    return 0;
}

/* Step 5: the validator and the buffers of ingestion (one pending batch of
 * games and their positions) and of training batches. */
static int s_init_buffers(coord *c)
{
    const coord_config *cfg = &c->cfg;
    validate_limits lim = {(size_t)cfg->max_record_bytes, (uint32_t)cfg->max_record_moves, 1e-3};
    c->val = validator_new(c->g, &lim);
    size_t nb = (size_t)cfg->ingest_batch;
    c->items = xcalloc(nb, sizeof *c->items);
    c->games = xcalloc(nb, sizeof *c->games);
    /* Positions of one pending batch: room for at least the largest record. */
    c->pos_cap = (size_t)cfg->max_record_moves * 4 > 65536 ? (size_t)cfg->max_record_moves * 4
                                                           : 65536;
    c->ent_cap = (size_t)cfg->max_record_bytes / 5 + GAME_MAX_LEGAL;
    if (c->ent_cap < 1u << 20)
        c->ent_cap = 1u << 20;
    c->pk = xmalloc(c->pos_cap * GAME_PACKED_BYTES);
    c->pz = xmalloc(c->pos_cap * sizeof *c->pz);
    c->pq = xmalloc(c->pos_cap * sizeof *c->pq);
    c->poff = xmalloc((c->pos_cap + nb) * sizeof *c->poff);
    c->pact = xmalloc(c->ent_cap * sizeof *c->pact);
    c->pprob = xmalloc(c->ent_cap * sizeof *c->pprob);
    if (cfg->aux_targets) {
        c->pmat = xmalloc(c->pos_cap * sizeof *c->pmat);
        c->popoff = xmalloc((c->pos_cap + nb) * sizeof *c->popoff);
        c->popact = xmalloc(c->ent_cap * sizeof *c->popact);
        c->popprob = xmalloc(c->ent_cap * sizeof *c->popprob);
    }
    c->batch = store_batch_new((size_t)cfg->max_batch);
    coord_workers_init(c);
    if (!c->val || !c->batch) {
        log_error("out of memory");
        return KZ_ENOMEM;
    }
    return 0;
}

/* Step 6: the status endpoint answers, the start is logged, and the best
 * model is announced. */
static int s_init_serve(coord *c)
{
    status_refresh(c); /* before the endpoint answers */
    int rc = status_start(c);
    if (rc)
        return rc;
    store_stats st;
    store_get_stats(c->st, &st);
    log_info("coordinator %s: best model %u, %llu games, %llu positions (window [%llu, %llu)), "
             "requests on %s, announcements on %s",
             c->name, c->best, (unsigned long long)st.games,
             (unsigned long long)st.positions_total, (unsigned long long)st.window_lo,
             (unsigned long long)st.window_hi, c->cfg.bind, c->cfg.pub_bind);
    coord_announce(c, 0, 0, 0, 0);
    status_refresh(c);
    return 0;
}

int coord_init(coord *c, const coord_config *cfg, volatile sig_atomic_t *stop)
{
    int rc;
    if ((rc = s_init_settings(c, cfg, stop)) || (rc = endgame_start(c)) ||
        (rc = yardstick_start(c)) ||
        (rc = s_init_ports(c)) || (rc = s_init_run(c)) ||
        (rc = judge_start(c)) || (rc = s_init_store(c)) ||
        (rc = s_init_buffers(c)) || (rc = s_init_serve(c)) || (rc = forge_start(c)))
        return rc;
    return 0;
}

/* Smoothed rates, once a second. */
static void s_rates(coord *c, double now)
{
    double dt = now - c->last_tick;
    if (dt < 1.0)
        return;
    double a = dt >= 5 ? 1.0 : dt / 5.0; /* ~5 s time constant */
    c->rate_games += a * ((double)(c->accepted - c->accepted_at_tick) / dt - c->rate_games);
    c->rate_pos += a * ((double)(c->positions - c->positions_at_tick) / dt - c->rate_pos);
    c->accepted_at_tick = c->accepted;
    c->positions_at_tick = c->positions;
    for (size_t i = 0; i < c->n_workers; i++) {
        worker *w = &c->workers[i];
        w->rate += a * ((double)(w->games - w->games_at_tick) / dt - w->rate);
        w->games_at_tick = w->games;
    }
    c->last_tick = now;
}

static void s_log_progress(coord *c)
{
    store_stats st;
    store_get_stats(c->st, &st);
    size_t live = 0;
    for (size_t i = 0; i < c->n_workers; i++)
        live += c->workers[i].alive;
    log_info("progress: games %llu (%.1f/s) positions %llu window [%llu, %llu) rejected %llu "
             "clients %zu best %u arena %u (+%u =%u -%u) trainer step %llu",
             (unsigned long long)st.games, c->rate_games, (unsigned long long)st.positions_total,
             (unsigned long long)st.window_lo, (unsigned long long)st.window_hi,
             (unsigned long long)c->rejected, live, c->best, c->ar.candidate, c->ar.wins,
             c->ar.draws, c->ar.losses, (unsigned long long)c->trainer.step);
}

int coord_run(coord *c)
{
    double now = time_now();
    double next_expire = now + 0.5, next_status = now, next_log = now + c->cfg.log_s;
    c->last_tick = now;
    while (!*c->stop) {
        now = time_now();
        c->heartbeat = now;
        double next = next_expire < next_status ? next_expire : next_status;
        if (next_log < next)
            next = next_log;
        if (c->tl.next < next)
            next = c->tl.next;
        int timeout = (int)((next - now) * 1000.0) + 1;
        if (timeout < 0)
            timeout = 0;
        forge_figures ff;
        if (forge_get(c, &ff) && ff.held && timeout > FORGE_POLL_MS)
            timeout = FORGE_POLL_MS; /* checks end on another thread: look often */
        zmq_pollitem_t items[4] = {{c->router, 0, ZMQ_POLLIN, 0}};
        int n_items = 1;
        void *extra[3];
        auth_poll_items(c, extra);
        for (int k = 0; k < 3; k++)
            if (extra[k])
                items[n_items++] = (zmq_pollitem_t){extra[k], 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(items, n_items, timeout);
        if (c->reload && *c->reload) {
            *c->reload = 0;
            auth_reload(c);
        }
        if (rc < 0) {
            if (zmq_errno() == EINTR)
                continue;
            log_error("zmq_poll: %s", zmq_strerror(zmq_errno()));
            return KZ_EIO;
        }
        auth_serve(c);
        size_t got = 0;
        if (items[0].revents & ZMQ_POLLIN) {
            got = s_drain(c);
            s_flush(c);
        }
        s_forge_results(c);
        now = time_now();
        if (got == 0) {
            uint64_t pruned = 0;
            store_prune(c->st, &pruned); /* idle: catch up on pruning */
        }
        status_serve(c);
        if (now >= next_expire) {
            s_expire_workers(c);
            next_expire = now + 0.5;
        }
        if (now >= next_status) {
            s_rates(c, now);
            endgame_tick(c);
            yardstick_tick(c);
            judge_tick(c);
            models_tick(c);
            status_refresh(c);
            next_status = now + c->cfg.status_ms / 1000.0;
        }
        if (now >= next_log) {
            s_log_progress(c);
            next_log = now + c->cfg.log_s;
        }
        timeline_tick(c, false);
        /* New points go with the next batch of games, or alone if none comes. */
        if (c->tl.dirty && now - c->tl.dirty_at >= 1.0)
            timeline_save(c);
        if (c->n_sp_dirty && now - c->sp_dirty_at >= 1.0)
            models_selfplay_save(c);
    }
    s_flush(c);
    timeline_tick(c, true);
    if (c->tl.dirty)
        timeline_save(c);
    models_selfplay_save(c);
    log_info("stopping");
    s_log_progress(c);
    return 0;
}

void coord_fini(coord *c)
{
    status_stop(c);
    endgame_stop(c);
    yardstick_stop(c);
    judge_stop(c);
    forge_stop(c);
    free(c->barred);
    free(c->recent);
    c->barred = NULL;
    c->recent = NULL;
    for (size_t i = 0; c->items && i < c->n_items; i++)
        wire_msg_clear(&c->items[i].msg);
    if (c->router)
        zmq_close(c->router);
    if (c->pub)
        zmq_close(c->pub);
    auth_fini(c);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    coord_services_fini(c);
    free_all(c->ar.result, c->ar.owner, c->ar.assigned_at);
    ratings_fini(c);
    free(c->sp_games);
    c->sp_games = NULL;
    timeline_fini(c);
    free_all(c->items, c->games, c->pk, c->pz, c->pq, c->poff, c->pact, c->pprob, c->pmat,
             c->popoff, c->popact, c->popprob);
    store_batch_destroy(&c->batch);
    validator_destroy(&c->val);
    wire_buf_free(&c->tx);
    store_close(&c->st);
    free(c->snap_status);
    free(c->snap_metrics);
    pthread_mutex_destroy(&c->snap_lock);
}
