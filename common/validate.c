/* validate: GameRecord replay checks and training-position extraction. See
 * validate.h. */
#include "validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.pb-c.h"

struct validator {
    const game_def *g;      /* the rules */
    validate_limits lim;    /* limits */
    size_t max_entries;     /* capacity of actions/probs */
    uint8_t *packed;        /* (max_moves, GAME_PACKED_BYTES) */
    float *z;               /* (max_moves) */
    int8_t *mover;          /* (max_moves) player to move at each position */
    uint32_t *offsets;      /* (max_moves + 1) */
    uint32_t *actions;      /* (max_entries) */
    float *probs;           /* (max_entries) */
    uint8_t *legal_mask;    /* (action_count) 1 for the legal actions of the state in hand */
    uint32_t npos;          /* training positions of the record in hand */
    uint8_t *arena;         /* (arena_cap) bump allocator for unpacking one record */
    size_t arena_cap;       /* bytes */
    size_t arena_used;      /* bytes handed out for the record in hand */
    size_t overflow;        /* bytes malloc'd beyond the arena (freed by protobuf-c) */
};

/* protobuf-c allocator over the validator's arena: unpacking a record costs no
 * malloc unless it outgrows the arena (then plain malloc, released through
 * free_unpacked as usual). */
static void *s_arena_alloc(void *data, size_t size)
{
    validator *v = data;
    size_t aligned = (size + 15) & ~(size_t)15;
    if (aligned <= v->arena_cap - v->arena_used) {
        void *p = v->arena + v->arena_used;
        v->arena_used += aligned;
        return p;
    }
    v->overflow += size;
    return malloc(size);
}

static void s_arena_free(void *data, void *p)
{
    validator *v = data;
    if ((uint8_t *)p >= v->arena && (uint8_t *)p < v->arena + v->arena_cap)
        return; /* released all at once when the next record starts */
    free(p);
}

static const char *const s_reason_names[VALIDATE_REASON_COUNT] = {
    "ok", "malformed", "oversized", "wrong-game", "unknown-model", "illegal-action",
    "policy-illegal", "policy-sum", "nan", "wrong-result", "arena",
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
    v->mover = malloc(l.max_moves);
    v->offsets = malloc(((size_t)l.max_moves + 1) * sizeof *v->offsets);
    v->actions = malloc(v->max_entries * sizeof *v->actions);
    v->probs = malloc(v->max_entries * sizeof *v->probs);
    v->legal_mask = calloc((size_t)g->action_count, 1);
    /* Unpacked records take a few times their encoded size; 4 MiB covers
     * ordinary ones, bigger ones spill to malloc. */
    v->arena_cap = 4u << 20;
    v->arena = malloc(v->arena_cap);
    if (!v->packed || !v->z || !v->mover || !v->offsets || !v->actions || !v->probs ||
        !v->legal_mask || !v->arena)
        validator_destroy(&v);
    return v;
}

void validator_destroy(validator **vp)
{
    if (!vp || !*vp)
        return;
    validator *v = *vp;
    free(v->packed);
    free(v->z);
    free(v->mover);
    free(v->offsets);
    free(v->actions);
    free(v->probs);
    free(v->legal_mask);
    free(v->arena);
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

static int s_check_policy(validator *v, const Kz__MoveRecord *mv, uint32_t i, int ply,
                          validate_result *out);
static int s_record_position(validator *v, const Kz__MoveRecord *mv, uint32_t i,
                             const game_state *s, uint32_t *entries, validate_result *out);

/* Checks move i (in state s) and records its training position. */
static int s_check_move(validator *v, const Kz__MoveRecord *mv, uint32_t i, const game_state *s,
                        uint32_t *entries, validate_result *out)
{
    const game_def *g = v->g;
    int ply = g->ply(s);
    if (mv->n_policy_actions != mv->n_policy)
        return s_fail(out, VALIDATE_MALFORMED,
                      "move %u (ply %d): %zu policy actions but %zu shares", i, ply,
                      mv->n_policy_actions, mv->n_policy);
    size_t n = mv->n_policy; /* 0: a player that does not search (no training target) */
    /* Step 1. NaN and infinity first: they would confuse every later check. */
    if (!isfinite(mv->root_value))
        return s_fail(out, VALIDATE_NAN, "move %u (ply %d): root value is %f", i, ply,
                      (double)mv->root_value);
    if (mv->root_value < -1.0001f || mv->root_value > 1.0001f)
        return s_fail(out, VALIDATE_MALFORMED, "move %u (ply %d): root value %g outside [-1, 1]",
                      i, ply, (double)mv->root_value);
    for (size_t k = 0; k < n; k++)
        if (!isfinite(mv->policy[k]))
            return s_fail(out, VALIDATE_NAN, "move %u (ply %d): policy share %zu is %f", i, ply,
                          k, (double)mv->policy[k]);
    /* Step 2. Every policy action legal, ascending, no repeats. The legal
     * actions are generated once per state, into a mask. */
    uint16_t legal[GAME_MAX_LEGAL];
    int nl = g->legal_actions(s, legal);
    for (int k = 0; k < nl; k++)
        v->legal_mask[legal[k]] = 1;
    int rc = s_check_policy(v, mv, i, ply, out);
    if (rc == VALIDATE_OK && mv->forced && nl != 1)
        rc = s_fail(out, VALIDATE_MALFORMED, "move %u (ply %d): marked forced with %d legal "
                    "actions", i, ply, nl);
    if (rc == VALIDATE_OK && (mv->action >= (uint32_t)g->action_count ||
                              !v->legal_mask[mv->action])) {
        char name[32];
        if (mv->action < (uint32_t)g->action_count)
            g->format_action((int)mv->action, name, sizeof name);
        else
            snprintf(name, sizeof name, "#%u", mv->action);
        rc = s_fail(out, VALIDATE_ILLEGAL_ACTION, "move %u (ply %d): illegal action %s", i, ply,
                    name);
    }
    for (int k = 0; k < nl; k++)
        v->legal_mask[legal[k]] = 0;
    if (rc)
        return rc;
    return s_record_position(v, mv, i, s, entries, out);
}

/* Steps 2 and 3 of s_check_move: policy actions legal (per v->legal_mask),
 * ascending, shares in [0, 1] summing to 1. */
static int s_check_policy(validator *v, const Kz__MoveRecord *mv, uint32_t i, int ply,
                          validate_result *out)
{
    const game_def *g = v->g;
    size_t n = mv->n_policy;
    char name[32];
    for (size_t k = 0; k < n; k++) {
        uint32_t a = mv->policy_actions[k];
        if (a >= (uint32_t)g->action_count || !v->legal_mask[a]) {
            if (a < (uint32_t)g->action_count)
                g->format_action((int)a, name, sizeof name);
            else
                snprintf(name, sizeof name, "#%u", a);
            return s_fail(out, VALIDATE_POLICY_ILLEGAL,
                          "move %u (ply %d): policy on illegal action %s", i, ply, name);
        }
        if (k > 0 && a <= mv->policy_actions[k - 1])
            return s_fail(out, VALIDATE_MALFORMED,
                          "move %u (ply %d): policy actions not strictly ascending", i, ply);
    }
    /* Step 3. Shares in [0, 1] summing to 1. */
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        if (mv->policy[k] < 0 || mv->policy[k] > 1)
            return s_fail(out, VALIDATE_POLICY_SUM, "move %u (ply %d): policy share %g", i, ply,
                          (double)mv->policy[k]);
        sum += mv->policy[k];
    }
    if (n > 0 && fabs(sum - 1.0) > v->lim.policy_tolerance)
        return s_fail(out, VALIDATE_POLICY_SUM, "move %u (ply %d): policy sums to %.6f", i, ply,
                      sum);
    return VALIDATE_OK;
}

/* Step 4 of s_check_move: the training position (packed state, canonical
 * policy, ascending) of move i. */
static int s_record_position(validator *v, const Kz__MoveRecord *mv, uint32_t i,
                             const game_state *s, uint32_t *entries, validate_result *out)
{
    const game_def *g = v->g;
    size_t n = mv->n_policy;
    (void)i;
    if (n == 0)
        return VALIDATE_OK; /* no search, no policy target: not a training position */
    if (*entries + n > v->max_entries)
        return s_fail(out, VALIDATE_OVERSIZED, "too many policy entries");
    uint32_t p = v->npos++;
    g->pack(s, v->packed + (size_t)p * (size_t)g->packed_bytes);
    v->mover[p] = (int8_t)g->to_move(s);
    uint32_t *ca = v->actions + *entries;
    float *cp = v->probs + *entries;
    for (size_t k = 0; k < n; k++) {
        ca[k] = (uint32_t)g->canonical_action(s, (int)mv->policy_actions[k]);
        cp[k] = mv->policy[k];
    }
    s_sort_policy(ca, cp, (uint32_t)n);
    v->offsets[p] = *entries;
    *entries += (uint32_t)n;
    v->offsets[p + 1] = *entries;
    return VALIDATE_OK;
}

/* The replay proper, on a decoded record. */
static int s_validate(validator *v, const Kz__GameRecord *rec, uint32_t max_model,
                      validate_result *out)
{
    const game_def *g = v->g;
    if (rec->game_id.len != 16)
        return s_fail(out, VALIDATE_MALFORMED, "game_id has %zu bytes, not 16",
                      rec->game_id.len);
    memcpy(out->game_id, rec->game_id.data, 16);
    out->has_id = true;
    snprintf(out->worker_id, sizeof out->worker_id, "%s", rec->worker_id);
    out->kind = (int)rec->kind;
    out->model_version = rec->model_version;
    out->opponent_version = rec->opponent_version;
    out->candidate_player = rec->candidate_player;
    out->winner = rec->winner;
    out->plies = rec->plies;
    char shown[44]; /* a string of the record, fit for a one-line detail */
    if (strcmp(rec->game, g->name))
        return s_fail(out, VALIDATE_WRONG_GAME, "game '%s', this cluster plays '%s'",
                      text_printable(shown, sizeof shown, rec->game, SIZE_MAX), g->name);
    if (rec->kind != KZ__GAME_KIND__GAME_KIND_SELFPLAY &&
        rec->kind != KZ__GAME_KIND__GAME_KIND_ARENA)
        return s_fail(out, VALIDATE_MALFORMED, "unknown game kind %d", (int)rec->kind);
    if (rec->n_moves > v->lim.max_moves)
        return s_fail(out, VALIDATE_OVERSIZED, "%zu moves, at most %u", rec->n_moves,
                      v->lim.max_moves);
    if (rec->model_version == 0 || rec->model_version > max_model)
        return s_fail(out, VALIDATE_UNKNOWN_MODEL, "model version %u unknown (latest %u)",
                      rec->model_version, max_model);
    if (rec->kind == KZ__GAME_KIND__GAME_KIND_ARENA) {
        if (rec->opponent_version == 0 || rec->opponent_version > max_model)
            return s_fail(out, VALIDATE_UNKNOWN_MODEL,
                          "opponent version %u unknown (latest %u)", rec->opponent_version,
                          max_model);
        if (rec->candidate_player != 0 && rec->candidate_player != 1)
            return s_fail(out, VALIDATE_ARENA, "candidate_player %d", rec->candidate_player);
        if (rec->opponent_version == rec->model_version)
            return s_fail(out, VALIDATE_ARENA, "arena of version %u against itself",
                          rec->model_version);
    }
    if (rec->winner < -1 || rec->winner > 1)
        return s_fail(out, VALIDATE_MALFORMED, "winner %d", rec->winner);
    /* What record_unpack (record.h) refuses must not be stored: the tools
     * read stored games with it. Its bounds, field by field. */
    if (rec->candidate_player != 0 && rec->candidate_player != 1)
        return s_fail(out, VALIDATE_MALFORMED, "candidate_player %d is not 0 or 1",
                      rec->candidate_player);
    if (strlen(rec->worker_id) >= sizeof out->worker_id)
        return s_fail(out, VALIDATE_MALFORMED, "worker_id longer than %zu bytes",
                      sizeof out->worker_id - 1);
    const Kz__SearchSettings *ss = rec->settings;
    if (ss && (ss->simulations > 100000000 || ss->temperature_plies > 100000000 ||
               ss->virtual_loss_leaves > 65536 || !isfinite(ss->c_puct) ||
               !isfinite(ss->dirichlet_alpha) || !isfinite(ss->dirichlet_epsilon) ||
               !isfinite(ss->fpu)))
        return s_fail(out, VALIDATE_MALFORMED, "search settings out of range");

    game_state s;
    if (rec->start_position[0]) {
        char err[128];
        if (g->parse_position(&s, rec->start_position, err, sizeof err))
            return s_fail(out, VALIDATE_MALFORMED, "start position: %s", err);
    } else {
        g->init(&s);
    }
    uint32_t entries = 0;
    v->offsets[0] = 0;
    v->npos = 0;
    for (size_t i = 0; i < rec->n_moves; i++) {
        game_result r = g->result(&s);
        if (r.over)
            return s_fail(out, VALIDATE_ILLEGAL_ACTION,
                          "move %zu played after the game ended (%s at ply %d)", i,
                          game_reason_name(r.reason), g->ply(&s));
        const Kz__MoveRecord *mv = rec->moves[i];
        int rc = s_check_move(v, mv, (uint32_t)i, &s, &entries, out);
        if (rc)
            return rc;
        g->apply(&s, (int)mv->action);
    }
    game_result r = g->result(&s);
    if (!r.over)
        return s_fail(out, VALIDATE_WRONG_RESULT, "game not over after %zu moves (ply %d)",
                      rec->n_moves, g->ply(&s));
    if (r.winner != rec->winner)
        return s_fail(out, VALIDATE_WRONG_RESULT, "winner %d recorded, the replay gives %d (%s)",
                      rec->winner, r.winner, game_reason_name(r.reason));
    if (strcmp(rec->reason, game_reason_name(r.reason)))
        return s_fail(out, VALIDATE_WRONG_RESULT, "reason '%s' recorded, the replay gives '%s'",
                      text_printable(shown, sizeof shown, rec->reason, SIZE_MAX),
                      game_reason_name(r.reason));
    if (rec->plies != (uint32_t)g->ply(&s))
        return s_fail(out, VALIDATE_WRONG_RESULT, "plies %u recorded, the replay gives %d",
                      rec->plies, g->ply(&s));
    /* Outcomes from each mover's view. */
    for (uint32_t i = 0; i < v->npos; i++)
        v->z[i] = r.winner < 0 ? 0.0f : r.winner == v->mover[i] ? 1.0f : -1.0f;
    out->n_positions = v->npos;
    out->packed_bytes = (uint32_t)g->packed_bytes;
    out->packed = v->packed;
    out->z = v->z;
    out->offsets = v->offsets;
    out->actions = v->actions;
    out->probs = v->probs;
    return VALIDATE_OK;
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
    ProtobufCAllocator alloc = {s_arena_alloc, s_arena_free, v};
    v->arena_used = 0;
    Kz__GameRecord *rec = kz__game_record__unpack(&alloc, len, buf);
    if (!rec)
        return s_fail(out, VALIDATE_MALFORMED, "undecodable GameRecord (%zu bytes)", len);
    int rc = s_validate(v, rec, max_model_version, out);
    kz__game_record__free_unpacked(rec, &alloc);
    return rc;
}

/* --- random valid records ------------------------------------------------------ */

/* Grows *p (of *cap elements of size sz) to hold at least need; 0 or KZ_ENOMEM. */
static int s_reserve(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * sz);
    if (!q)
        return KZ_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

int validate_random_record(const game_def *g, uint64_t seed, const validate_random_opts *o,
                           uint8_t **buf, size_t *len)
{
    rng_t r;
    rng_seed(&r, seed);
    uint8_t id[16];
    for (int i = 0; i < 16; i += 8) {
        uint64_t x = mix64(seed * 2 + (uint64_t)i + 0x9e37);
        memcpy(id + i, &x, 8);
    }
    Kz__MoveRecord *moves = NULL;  /* (n) */
    Kz__MoveRecord **mptr = NULL;  /* (n) */
    size_t *eoff = NULL;           /* (n) first entry of each move */
    uint32_t *acts = NULL;         /* (ne) policy actions of all moves */
    float *pol = NULL;             /* (ne) their shares */
    size_t n = 0, cap_m = 0, cap_o = 0, ne = 0, cap_a = 0, cap_p = 0;
    int rc = 0;
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    /* Step 1. Play, keeping each move's legal actions as its policy. */
    while (!g->result(&s).over) {
        if (o && o->max_moves && n >= o->max_moves) {
            rc = KZ_EFULL;
            goto out;
        }
        int nl = g->legal_actions(&s, legal);
        KZ_CHECK(nl > 0);
        if ((rc = s_reserve((void **)&moves, &cap_m, n + 1, sizeof *moves)) ||
            (rc = s_reserve((void **)&eoff, &cap_o, n + 1, sizeof *eoff)) ||
            (rc = s_reserve((void **)&acts, &cap_a, ne + (size_t)nl, sizeof *acts)) ||
            (rc = s_reserve((void **)&pol, &cap_p, ne + (size_t)nl, sizeof *pol)))
            goto out;
        Kz__MoveRecord *mv = &moves[n];
        kz__move_record__init(mv);
        eoff[n] = ne;
        for (int k = 0; k < nl; k++) {
            acts[ne + (size_t)k] = legal[k];
            pol[ne + (size_t)k] = 1.0f / (float)nl;
        }
        mv->n_policy_actions = mv->n_policy = (size_t)nl;
        mv->forced = nl == 1;
        ne += (size_t)nl;
        mv->action = legal[rng_below(&r, (uint32_t)nl)];
        g->apply(&s, (int)mv->action);
        n++;
    }
    /* Step 2. Point the moves at their entries (the arrays have stopped moving). */
    mptr = malloc((n ? n : 1) * sizeof *mptr);
    if (!mptr) {
        rc = KZ_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        moves[i].policy_actions = acts + eoff[i];
        moves[i].policy = pol + eoff[i];
        mptr[i] = &moves[i];
    }
    /* Step 3. The record. */
    game_result res = g->result(&s);
    Kz__GameRecord rec = KZ__GAME_RECORD__INIT;
    rec.game_id = (ProtobufCBinaryData){16, id};
    rec.game = (char *)g->name;
    rec.kind = o && o->kind ? KZ__GAME_KIND__GAME_KIND_ARENA : KZ__GAME_KIND__GAME_KIND_SELFPLAY;
    rec.model_version = o && o->model_version ? o->model_version : 1;
    rec.opponent_version = o ? o->opponent_version : 0;
    rec.candidate_player = o ? o->candidate_player : 0;
    rec.start_position = (char *)"";
    rec.n_moves = n;
    rec.moves = mptr;
    rec.winner = res.winner;
    rec.reason = (char *)game_reason_name(res.reason);
    rec.seed = seed;
    rec.started_ms = time_wall_ms();
    rec.finished_ms = rec.started_ms;
    rec.worker_id = (char *)(o && o->worker_id ? o->worker_id : "");
    rec.plies = (uint32_t)g->ply(&s);
    *len = kz__game_record__get_packed_size(&rec);
    *buf = malloc(*len ? *len : 1);
    if (!*buf) {
        rc = KZ_ENOMEM;
        goto out;
    }
    kz__game_record__pack(&rec, *buf);
out:
    free(mptr);
    free(moves);
    free(eoff);
    free(acts);
    free(pol);
    return rc;
}
