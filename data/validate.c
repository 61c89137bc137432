/* validate: GameRecord replay checks and training-position extraction. See
 * validate.h. */
#include "data/validate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/record.h"

struct validator {
    const game_def *g;      /* the rules */
    validate_limits lim;    /* limits */
    size_t max_entries;     /* capacity of actions/probs */
    record_decoder *dec;    /* decoding workspace */
    game_record *rec;       /* the record in hand, decoded */
    uint8_t *packed;        /* (max_moves, GAME_PACKED_BYTES) */
    float *z;               /* (max_moves) */
    float *q;               /* (max_moves) the search's value (root_value), or z */
    int8_t *mover;          /* (max_moves) player to move at each position */
    bool *searched;         /* (max_moves) the position's root_value is a search's */
    uint32_t *offsets;      /* (max_moves + 1) */
    uint32_t *actions;      /* (max_entries) */
    float *probs;           /* (max_entries) */
    uint32_t npos;          /* training positions of the record in hand */
    uint32_t entries;       /* policy entries of those positions */
    uint32_t *opp_offsets;  /* (max_moves + 1) opponent-policy targets, as offsets */
    uint32_t *opp_actions;  /* (max_entries) */
    float *opp_probs;       /* (max_entries) */
    uint32_t opp_entries;   /* entries of opp_actions in use */
    float *material;        /* (max_moves) final material, each position's mover's view */
    game_state *run;        /* (VALIDATE_RUN_MAX) states of the positions waiting for their
                               opponent target: the latest run of one side's positions */
    uint32_t run_first;     /* first position of the run (the rest follow densely) */
    uint32_t run_n;         /* positions in the run */
    int run_mover;          /* the run's player to move */
    game_state final;       /* the state after the last move */
};

static const char *const s_reason_names[VALIDATE_REASON_COUNT] = {
    "ok", "malformed", "oversized", "wrong-game", "unknown-model", "illegal-action",
    "policy-illegal", "policy-sum", "nan", "wrong-result", "arena", "eval",
    "forged",
};

const char *validate_reason_name(int reason)
{
    return reason >= 0 && reason < VALIDATE_REASON_COUNT ? s_reason_names[reason] : "?";
}

void validate_limits_default(validate_limits *lim)
{
    *lim = (validate_limits){.max_record_bytes = 1u << 20, .max_moves = 4096,
                             .policy_tolerance = 1e-3};
}

validator *validator_new(const game_def *g, const validate_limits *lim)
{
    validate_limits l;
    if (lim)
        l = *lim;
    else
        validate_limits_default(&l);
    if (!g || l.max_record_bytes < 16 || l.max_moves < 1 || l.max_moves > (1u << 20) ||
        !(l.policy_tolerance >= 0 && l.policy_tolerance < 0.5))
        return NULL;
    validator *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->g = g;
    v->lim = l;
    /* Each policy entry costs at least 5 bytes of record (a varint action and
     * a float), so the record size bounds the entries of all positions. */
    v->max_entries = l.max_record_bytes / 5 + GAME_MAX_LEGAL;
    v->packed = malloc((size_t)l.max_moves * GAME_PACKED_BYTES);
    v->z = malloc((size_t)l.max_moves * sizeof *v->z);
    v->q = malloc((size_t)l.max_moves * sizeof *v->q);
    v->mover = malloc(l.max_moves);
    v->searched = malloc((size_t)l.max_moves * sizeof *v->searched);
    v->offsets = malloc(((size_t)l.max_moves + 1) * sizeof *v->offsets);
    v->actions = malloc(v->max_entries * sizeof *v->actions);
    v->probs = malloc(v->max_entries * sizeof *v->probs);
    v->opp_offsets = malloc(((size_t)l.max_moves + 1) * sizeof *v->opp_offsets);
    v->opp_actions = malloc(v->max_entries * sizeof *v->opp_actions);
    v->opp_probs = malloc(v->max_entries * sizeof *v->opp_probs);
    v->material = malloc((size_t)l.max_moves * sizeof *v->material);
    v->run = malloc(VALIDATE_RUN_MAX * sizeof *v->run);
    v->dec = record_decoder_new();
    v->rec = record_new();
    if (!v->packed || !v->z || !v->q || !v->mover || !v->searched || !v->offsets || !v->actions ||
        !v->probs || !v->opp_offsets || !v->opp_actions || !v->opp_probs || !v->material ||
        !v->run || !v->dec || !v->rec)
        validator_destroy(&v);
    return v;
}

void validator_destroy(validator **vp)
{
    if (!vp || !*vp)
        return;
    validator *v = *vp;
    free_all(v->packed, v->z, v->q, v->mover, v->searched, v->offsets, v->actions, v->probs,
             v->opp_offsets, v->opp_actions, v->opp_probs, v->material, v->run);
    record_decoder_destroy(&v->dec);
    record_destroy(&v->rec);
    free(v);
    *vp = NULL;
}

static int s_fail(validate_result *out, int reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int s_fail(validate_result *out, int reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(out->detail, sizeof out->detail, reason, fmt, ap);
    va_end(ap);
    out->reason = reason;
    out->n_positions = 0;
    return reason;
}

/* Sorts entries [0, n) of actions/probs by action (insertion sort: n is a
 * handful and at most GAME_MAX_LEGAL). */
static void s_sort_policy(uint32_t *a, float *p, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        uint32_t ka = a[i];
        float kp = p[i];
        uint32_t j = i;
        for (; j > 0 && a[j - 1] > ka; j--) {
            a[j] = a[j - 1];
            p[j] = p[j - 1];
        }
        a[j] = ka;
        p[j] = kp;
    }
}

/* The opponent-policy targets of the waiting run of positions: the policy
 * target of state s, move m (the other side's; NULL: none, the game ended),
 * in each position's canonical actions. They are the next positions in
 * order: every position joins a run, and a run is closed before the next
 * begins. */
static void s_close_run(validator *v, const game_state *s, const record_move *m)
{
    const game_def *g = v->g;
    const game_record *r = v->rec;
    uint32_t n = m && !m->fast_search ? m->policy_n : 0;
    for (uint32_t i = 0; i < v->run_n; i++) {
        uint32_t p = v->run_first + i, lo = v->opp_entries;
        v->opp_offsets[p] = lo;
        if (n && i < VALIDATE_RUN_MAX && lo + n <= v->max_entries) {
            for (uint32_t j = 0; j < n; j++) {
                int real = r->policy_actions[m->policy_off + j];
                v->opp_actions[lo + j] = (uint32_t)g->canonical_action(&v->run[i], real);
                v->opp_probs[lo + j] = r->policy[m->policy_off + j];
            }
            s_sort_policy(v->opp_actions + lo, v->opp_probs + lo, n);
            v->opp_entries += n;
        }
        v->opp_offsets[p + 1] = v->opp_entries;
    }
    (void)s;
    v->run_n = 0;
}

/* record_check's visitor: the training position (packed state, canonical
 * policy, ascending) of a move that has a policy; a fast search's position
 * has none (a value target only). Every state (a position or not) closes
 * the waiting run when the other side moves in it, and the last move gives
 * the final state. */
static int s_record_position(void *ctx, const game_state *s, int k, const record_move *m)
{
    validator *v = ctx;
    const game_def *g = v->g;
    uint32_t n = m->policy_n;
    int mover = g->to_move(s);
    if (g->is_chance && g->is_chance(s)) { /* nature's move: no position, no run's end */
        if (k == v->rec->n_moves - 1) {
            g->copy(&v->final, s);
            g->apply(&v->final, m->action);
        }
        return 0;
    }
    if (v->run_n && mover != v->run_mover)
        s_close_run(v, s, m);
    if (k == v->rec->n_moves - 1) { /* checked legal: record_check calls after the checks */
        g->copy(&v->final, s);
        g->apply(&v->final, m->action);
    }
    if (n == 0 && !m->fast_search)
        return 0; /* no search, no policy target: not a training position */
    if (m->fast_search)
        n = 0; /* playout cap randomization: its distribution is no target */
    if (v->entries + n > v->max_entries)
        return VALIDATE_OVERSIZED;
    uint32_t p = v->npos++;
    g->pack(s, v->packed + (size_t)p * (size_t)g->packed_bytes);
    v->mover[p] = (int8_t)g->to_move(s);
    /* A forced state was not searched: its root value is the reused
     * subtree's (a search of another state) or 0, so its q is z (below). */
    v->searched[p] = !m->forced;
    float rv = m->root_value;
    v->q[p] = rv > 1 ? 1 : rv < -1 ? -1 : rv; /* record_check allows 1e-4 beyond */
    uint32_t *ca = v->actions + v->entries;
    float *cp = v->probs + v->entries;
    const game_record *r = v->rec;
    for (uint32_t j = 0; j < n; j++) {
        ca[j] = (uint32_t)g->canonical_action(s, r->policy_actions[m->policy_off + j]);
        cp[j] = r->policy[m->policy_off + j];
    }
    s_sort_policy(ca, cp, n);
    v->offsets[p] = v->entries;
    v->entries += n;
    v->offsets[p + 1] = v->entries;
    /* It waits for the other side's next policy target. */
    if (v->run_n == 0) {
        v->run_first = p;
        v->run_mover = mover;
    }
    if (v->run_n < VALIDATE_RUN_MAX)
        g->copy(&v->run[v->run_n], s);
    v->run_n++;
    return 0;
}

/* The reason of each record_fault. */
static int s_reason(int fault)
{
    switch (fault) {
    case RECORD_FAULT_NONE: return VALIDATE_OK;
    case RECORD_FAULT_OVERSIZED: return VALIDATE_OVERSIZED;
    case RECORD_FAULT_WRONG_GAME: return VALIDATE_WRONG_GAME;
    case RECORD_FAULT_UNKNOWN_MODEL: return VALIDATE_UNKNOWN_MODEL;
    case RECORD_FAULT_ILLEGAL_ACTION: return VALIDATE_ILLEGAL_ACTION;
    case RECORD_FAULT_POLICY_ILLEGAL: return VALIDATE_POLICY_ILLEGAL;
    case RECORD_FAULT_POLICY_SUM: return VALIDATE_POLICY_SUM;
    case RECORD_FAULT_NAN: return VALIDATE_NAN;
    case RECORD_FAULT_WRONG_RESULT: return VALIDATE_WRONG_RESULT;
    case RECORD_FAULT_ARENA: return VALIDATE_ARENA;
    case RECORD_FAULT_EVAL: return VALIDATE_EVAL;
    default: return VALIDATE_MALFORMED;
    }
}

/* The record's fields that a result reports, valid or not. */
static void s_describe(const validator *v, bool has_id, validate_result *out)
{
    const game_record *r = v->rec;
    out->has_id = has_id;
    if (has_id)
        memcpy(out->game_id, r->id, sizeof out->game_id);
    snprintf(out->worker_id, sizeof out->worker_id, "%s", r->worker_id);
    out->kind = r->kind;
    out->model_version = r->model_version;
    out->opponent_version = r->opponent_version;
    out->candidate_player = r->candidate_player;
    out->winner = r->winner;
    out->plies = r->plies;
    snprintf(out->model_player, sizeof out->model_player, "%s", r->model_player);
    snprintf(out->opponent_player, sizeof out->opponent_player, "%s", r->opponent_player);
    snprintf(out->start_position, sizeof out->start_position, "%s", r->start_position);
    int64_t dur = r->finished_ms - r->started_ms;
    out->duration_ms = dur < 0 ? 0 : dur > 86400000 ? 86400000 : dur;
}

int validate_record(validator *v, const uint8_t *buf, size_t len, uint32_t max_model_version,
                    validate_result *out)
{
    memset(out, 0, sizeof *out);
    out->winner = -1;
    if (len > v->lim.max_record_bytes)
        return s_fail(out, VALIDATE_OVERSIZED, "record of %zu bytes, at most %zu", len,
                      v->lim.max_record_bytes);
    if (!buf || len == 0)
        return s_fail(out, VALIDATE_MALFORMED, "empty record");
    /* Step 1. The structure (record.h's record_decode). */
    record_report rep;
    int rc = record_decode(v->dec, buf, len, v->rec, &rep);
    s_describe(v, rep.has_id, out);
    if (rc != 0)
        return s_fail(out, s_reason(rep.fault), "%s", rep.msg);
    /* Step 2. The rules (record_check), collecting the training positions. */
    record_check_opts o = {v->lim.policy_tolerance, v->lim.max_moves, true, max_model_version};
    v->npos = v->entries = v->opp_entries = v->run_n = 0;
    v->offsets[0] = v->opp_offsets[0] = 0;
    rc = record_check(v->g, v->rec, &o, s_record_position, v, &rep);
    if (rc == VALIDATE_OVERSIZED && rep.fault == RECORD_FAULT_NONE)
        return s_fail(out, VALIDATE_OVERSIZED, "too many policy entries");
    if (rc != 0)
        return s_fail(out, s_reason(rep.fault), "%s", rep.msg);
    /* Step 3. Outcomes from each mover's view, and q = z where there was no
     * search; the final material from each mover's view; the last run of
     * positions has no opponent target (the game ended). */
    s_close_run(v, NULL, NULL);
    int winner = v->rec->winner;
    /* A game scored in points (backgammon): z = +-points / max_points. */
    game_result fr = v->g->max_points > 1 ? v->g->result(&v->final) : (game_result){0};
    for (uint32_t i = 0; i < v->npos; i++) {
        v->z[i] = winner < 0 ? 0.0f : winner == v->mover[i] ? 1.0f : -1.0f;
        if (fr.over)
            v->z[i] = game_result_value(v->g, fr, v->mover[i]);
        if (!v->searched[i])
            v->q[i] = v->z[i];
        if (v->g->material)
            v->material[i] = v->g->material(&v->final, v->mover[i]);
    }
    out->points = winner < 0 ? 0 : fr.over && fr.points > 1 ? fr.points : 1;
    out->n_positions = v->npos;
    out->packed_bytes = (uint32_t)v->g->packed_bytes;
    out->packed = v->packed;
    out->z = v->z;
    out->q = v->q;
    out->offsets = v->offsets;
    out->actions = v->actions;
    out->probs = v->probs;
    out->opp_offsets = v->opp_offsets;
    out->opp_actions = v->opp_actions;
    out->opp_probs = v->opp_probs;
    out->material = v->g->material ? v->material : NULL;
    out->record = v->rec;
    return VALIDATE_OK;
}

/* --- random valid records ------------------------------------------------------ */

int validate_random_record(const game_def *g, uint64_t seed, const validate_random_opts *o,
                           uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    game_record *r = record_new();
    if (!r)
        return KZ_ENOMEM;
    rng_t rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < RECORD_ID_BYTES; i += 8) {
        uint64_t x = mix64(seed * 2 + (uint64_t)i + 0x9e37);
        memcpy(r->id + i, &x, 8);
    }
    snprintf(r->game, sizeof r->game, "%s", g->name);
    r->kind = o && o->kind == 1 ? RECORD_ARENA : o && o->kind == 2 ? RECORD_EVAL : RECORD_SELFPLAY;
    r->model_version = o && o->model_version ? o->model_version : 1;
    if (o && o->kind == 2 && o->model_player && o->model_player[0])
        r->model_version = 0;
    r->opponent_version = o ? o->opponent_version : 0;
    r->candidate_player = o ? o->candidate_player : 0;
    snprintf(r->model_player, sizeof r->model_player, "%s",
             o && o->model_player ? o->model_player : "");
    snprintf(r->opponent_player, sizeof r->opponent_player, "%s",
             o && o->opponent_player ? o->opponent_player : "");
    const char *start = o && o->start_position ? o->start_position : "";
    snprintf(r->start_position, sizeof r->start_position, "%s", start);
    snprintf(r->worker_id, sizeof r->worker_id, "%s", o && o->worker_id ? o->worker_id : "");
    r->seed = seed;
    int rc = 0;
    game_state s;
    if (!start[0]) {
        g->init(&s);
    } else if (g->parse_position(&s, start, NULL, 0)) {
        rc = KZ_EINVAL;
        goto out;
    }
    uint16_t legal[GAME_MAX_LEGAL];
    float share[GAME_MAX_LEGAL];
    rng_t dice;
    game_dice_seed(&dice, seed);
    /* Step 1. Play, keeping each move's legal actions as its policy (the
     * dice from the seed, game.h, with no policy). */
    while (!g->result(&s).over) {
        if (o && o->max_moves && (uint32_t)r->n_moves >= o->max_moves) {
            rc = KZ_EFULL;
            goto out;
        }
        if (g->is_chance && g->is_chance(&s)) {
            int a = game_chance_draw(g, &s, &dice);
            if ((rc = record_add_move(r, a, false, 0.0f, 0, NULL, NULL)) != 0)
                goto out;
            g->apply(&s, a);
            continue;
        }
        int nl = g->legal_actions(&s, legal);
        KZ_CHECK(nl > 0);
        for (int k = 0; k < nl; k++)
            share[k] = 1.0f / (float)nl;
        int a = legal[rng_below(&rng, (uint32_t)nl)];
        if ((rc = record_add_move(r, a, nl == 1, 0.0f, nl, legal, share)) != 0)
            goto out;
        g->apply(&s, a);
    }
    /* Step 2. The result, and the record's bytes. */
    game_result res = g->result(&s);
    r->winner = res.winner;
    r->reason = res.reason;
    r->plies = (uint32_t)g->ply(&s);
    r->started_ms = r->finished_ms = time_wall_ms();
    rc = record_pack(r, buf, len);
out:
    record_destroy(&r);
    return rc;
}
