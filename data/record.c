/* record: game records in memory, as proto GameRecord bytes, and in record
 * files. See record.h. */
#include "data/record.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.pb-c.h"
#include "common/util.h"

static const uint8_t s_magic[6] = {'K', 'Z', 'R', 'E', 'C', 0};
/* A record file's header: the magic, then the version (u16 little-endian). */
#define RECORD_FILE_HEADER 8

/* --- in memory -------------------------------------------------------------- */

game_record *record_new(void)
{
    game_record *r = calloc(1, sizeof *r);
    if (r)
        record_clear(r);
    return r;
}

void record_destroy(game_record **pr)
{
    if (!pr || !*pr)
        return;
    game_record *r = *pr;
    free_all(r->moves, r->policy_actions, r->policy, r);
    *pr = NULL;
}

void record_clear(game_record *r)
{
    record_move *moves = r->moves;
    uint16_t *pa = r->policy_actions;
    float *pv = r->policy;
    int cap_moves = r->cap_moves;
    uint32_t cap_policy = r->cap_policy;
    memset(r, 0, sizeof *r);
    r->moves = moves;
    r->policy_actions = pa;
    r->policy = pv;
    r->cap_moves = cap_moves;
    r->cap_policy = cap_policy;
    r->winner = -1;
    r->reason = GAME_REASON_NONE;
    r->kind = RECORD_SELFPLAY;
}

int record_new_id(game_record *r)
{
    size_t got = 0;
    while (got < RECORD_ID_BYTES) {
        ssize_t n = getrandom(r->id + got, RECORD_ID_BYTES - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        got += (size_t)n;
    }
    return 0;
}

/* A record's arrays grow by doubling: the capacity for need items, from
 * cap (from first when cap is 0). */
static uint32_t s_capacity(uint32_t cap, uint32_t first, uint32_t need)
{
    cap = cap ? cap : first;
    while (cap < need)
        cap *= 2;
    return cap;
}

static int s_reserve_moves(game_record *r, int need)
{
    if (need <= r->cap_moves)
        return 0;
    int cap = (int)s_capacity((uint32_t)r->cap_moves, 64, (uint32_t)need);
    record_move *m = realloc(r->moves, sizeof *m * (size_t)cap);
    if (!m)
        return KZ_ENOMEM;
    r->moves = m;
    r->cap_moves = cap;
    return 0;
}

static int s_reserve_policy(game_record *r, uint32_t need)
{
    if (need <= r->cap_policy)
        return 0;
    uint32_t cap = s_capacity(r->cap_policy, 512, need);
    uint16_t *a = realloc(r->policy_actions, sizeof *a * cap);
    if (!a)
        return KZ_ENOMEM;
    r->policy_actions = a;
    float *p = realloc(r->policy, sizeof *p * cap);
    if (!p)
        return KZ_ENOMEM;
    r->policy = p;
    r->cap_policy = cap;
    return 0;
}

int record_add_move(game_record *r, int action, bool forced, float root_value, int n,
                    const uint16_t *actions, const float *shares)
{
    if (s_reserve_moves(r, r->n_moves + 1) || s_reserve_policy(r, r->n_policy + (uint32_t)n))
        return KZ_ENOMEM;
    record_move *m = &r->moves[r->n_moves++];
    m->action = (uint16_t)action;
    m->forced = forced;
    m->fast_search = false;
    m->root_value = root_value;
    m->policy_off = r->n_policy;
    m->policy_n = (uint16_t)n;
    if (n > 0) {
        memcpy(r->policy_actions + r->n_policy, actions, sizeof(uint16_t) * (size_t)n);
        memcpy(r->policy + r->n_policy, shares, sizeof(float) * (size_t)n);
    }
    r->n_policy += (uint32_t)n;
    return 0;
}

int record_copy(game_record *dst, const game_record *src)
{
    if (s_reserve_moves(dst, src->n_moves) || s_reserve_policy(dst, src->n_policy))
        return KZ_ENOMEM;
    record_move *moves = dst->moves;
    uint16_t *pa = dst->policy_actions;
    float *pv = dst->policy;
    int cap_moves = dst->cap_moves;
    uint32_t cap_policy = dst->cap_policy;
    *dst = *src;
    dst->moves = moves;
    dst->policy_actions = pa;
    dst->policy = pv;
    dst->cap_moves = cap_moves;
    dst->cap_policy = cap_policy;
    if (src->n_moves)
        memcpy(dst->moves, src->moves, sizeof *moves * (size_t)src->n_moves);
    if (src->n_policy) {
        memcpy(dst->policy_actions, src->policy_actions, sizeof *pa * src->n_policy);
        memcpy(dst->policy, src->policy, sizeof *pv * src->n_policy);
    }
    return 0;
}

/* The game whose end reasons r's names are: its own, or (a game this program
 * does not know) the Alquerque family's, so that such a record still decodes. */
static const game_def *s_game_of(const game_record *r)
{
    const game_def *g = game_find(r->game);
    return g ? g : game_default();
}

/* --- proto conversion --------------------------------------------------------------- */

int record_pack(const game_record *r, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (r->n_moves < 0 || r->n_moves > RECORD_MAX_MOVES ||
        memchr(r->game, 0, sizeof r->game) == NULL ||
        memchr(r->start_position, 0, sizeof r->start_position) == NULL ||
        memchr(r->worker_id, 0, sizeof r->worker_id) == NULL ||
        memchr(r->model_player, 0, sizeof r->model_player) == NULL ||
        memchr(r->opponent_player, 0, sizeof r->opponent_player) == NULL)
        return KZ_EINVAL;
    int rc = KZ_ENOMEM;
    size_t n = (size_t)r->n_moves;
    Kz__MoveRecord *mv = calloc(n ? n : 1, sizeof *mv);
    Kz__MoveRecord **mvp = calloc(n ? n : 1, sizeof *mvp);
    uint32_t *pa = calloc(r->n_policy ? r->n_policy : 1, sizeof *pa);
    uint8_t *buf = NULL;
    if (!mv || !mvp || !pa)
        goto out;
    for (uint32_t k = 0; k < r->n_policy; k++)
        pa[k] = r->policy_actions[k];
    for (size_t k = 0; k < n; k++) {
        const record_move *m = &r->moves[k];
        kz__move_record__init(&mv[k]);
        mv[k].action = m->action;
        mv[k].n_policy_actions = m->policy_n;
        mv[k].policy_actions = pa + m->policy_off;
        mv[k].n_policy = m->policy_n;
        mv[k].policy = r->policy + m->policy_off;
        mv[k].root_value = m->root_value;
        mv[k].forced = m->forced;
        mv[k].fast_search = m->fast_search;
        mvp[k] = &mv[k];
    }
    Kz__SearchSettings ss = KZ__SEARCH_SETTINGS__INIT;
    ss.simulations = (uint32_t)r->settings.simulations;
    ss.c_puct = r->settings.c_puct;
    ss.dirichlet_alpha = r->settings.dirichlet_alpha;
    ss.dirichlet_epsilon = r->settings.dirichlet_epsilon;
    ss.temperature_plies = (uint32_t)r->settings.temperature_plies;
    ss.fpu = r->settings.fpu;
    ss.virtual_loss_leaves = (uint32_t)r->settings.leaves_per_tree;
    ss.no_tree_reuse = !r->settings.reuse_tree;
    ss.fast_simulations = (uint32_t)r->settings.fast_simulations;
    ss.forced_playouts_k = r->settings.forced_playouts_k;
    ss.policy_pruning = r->settings.policy_pruning;
    ss.root_mode = (uint32_t)r->settings.root_mode;
    if (r->settings.root_mode != 0) { /* the Gumbel fields mean nothing in PUCT mode */
        ss.gumbel_m = (uint32_t)r->settings.gumbel_m;
        ss.gumbel_c_visit = r->settings.gumbel_c_visit;
        ss.gumbel_c_scale = r->settings.gumbel_c_scale;
        ss.gumbel_noise = r->settings.gumbel_noise;
    }
    if (r->settings.fast_simulations > 0)
        ss.pcr_full_fraction = r->settings.pcr_full_fraction;
    ss.tb_search = r->settings.tb_search;
    ss.tb_adjudicate = r->settings.tb_adjudicate;
    ss.evaluator = (char *)r->settings.evaluator;
    Kz__GameRecord gr = KZ__GAME_RECORD__INIT;
    gr.game_id.data = (uint8_t *)r->id;
    gr.game_id.len = RECORD_ID_BYTES;
    gr.game = (char *)r->game;
    gr.kind = r->kind == RECORD_ARENA  ? KZ__GAME_KIND__GAME_KIND_ARENA
              : r->kind == RECORD_EVAL ? KZ__GAME_KIND__GAME_KIND_EVAL
                                       : KZ__GAME_KIND__GAME_KIND_SELFPLAY;
    gr.model_player = (char *)r->model_player;
    gr.opponent_player = (char *)r->opponent_player;
    gr.model_version = r->model_version;
    gr.opponent_version = r->opponent_version;
    gr.candidate_player = r->candidate_player;
    gr.start_position = (char *)r->start_position;
    gr.n_moves = n;
    gr.moves = mvp;
    gr.winner = r->winner;
    gr.reason =
        (char *)(r->reason == GAME_REASON_NONE ? "" : game_reason_name(s_game_of(r), r->reason));
    gr.seed = r->seed;
    gr.settings = &ss;
    gr.started_ms = r->started_ms;
    gr.finished_ms = r->finished_ms;
    gr.worker_id = (char *)r->worker_id;
    gr.plies = r->plies;
    size_t size = kz__game_record__get_packed_size(&gr);
    if (size > RECORD_MAX_BYTES) {
        rc = KZ_EINVAL;
        goto out;
    }
    buf = malloc(size ? size : 1);
    if (!buf)
        goto out;
    kz__game_record__pack(&gr, buf);
    *out = buf;
    *len = size;
    rc = 0;
out:
    free_all(mv, mvp, pa);
    return rc;
}

static int s_reason_from_name(const game_def *g, const char *name)
{
    if (!name || !*name)
        return GAME_REASON_NONE;
    int k = game_reason_parse(g, name);
    return k > 0 ? k : -1;
}

static int s_copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        return -1;
    memcpy(dst, src ? src : "", n + 1);
    return 0;
}

/* Fills *rep with a fault and its message; returns rc. */
static int s_report(record_report *rep, int rc, int fault, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int s_report(record_report *rep, int rc, int fault, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(rep->msg, sizeof rep->msg, rc, fmt, ap);
    va_end(ap);
    rep->fault = fault;
    return rc;
}

struct record_decoder {
    uint8_t *arena;  /* protobuf-c's structures of the record in hand */
    size_t cap;      /* bytes of arena */
    size_t used;     /* bytes handed out for the record in hand */
};

/* protobuf-c allocator over the decoder's arena: unpacking a record costs no
 * malloc unless it outgrows the arena (then plain malloc, released through
 * free_unpacked as usual). */
static void *s_arena_alloc(void *data, size_t size)
{
    record_decoder *d = data;
    size_t aligned = (size + 15) & ~(size_t)15;
    if (aligned <= d->cap - d->used) {
        void *p = d->arena + d->used;
        d->used += aligned;
        return p;
    }
    return malloc(size);
}

static void s_arena_free(void *data, void *p)
{
    record_decoder *d = data;
    if ((uint8_t *)p >= d->arena && (uint8_t *)p < d->arena + d->cap)
        return; /* released all at once when the next record starts */
    free(p);
}

record_decoder *record_decoder_new(void)
{
    record_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    /* Unpacked records take a few times their encoded size; 4 MiB covers
     * ordinary ones, bigger ones spill to malloc. */
    d->cap = 4u << 20;
    d->arena = malloc(d->cap);
    if (!d->arena)
        record_decoder_destroy(&d);
    return d;
}

void record_decoder_destroy(record_decoder **pd)
{
    if (!pd || !*pd)
        return;
    free((*pd)->arena);
    free(*pd);
    *pd = NULL;
}

/* The fields of a decoded GameRecord, checked, into r. */
static int s_decode_fields(const Kz__GameRecord *gr, game_record *r, record_report *rep)
{
    const int rc = KZ_ECORRUPT;
    if (gr->game_id.len != RECORD_ID_BYTES)
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "game id has %zu bytes, not %d",
                        gr->game_id.len, RECORD_ID_BYTES);
    memcpy(r->id, gr->game_id.data, RECORD_ID_BYTES);
    rep->has_id = true;
    if (s_copy_str(r->game, sizeof r->game, gr->game))
        return s_report(rep, rc, RECORD_FAULT_WRONG_GAME, "game name longer than %zu bytes",
                        sizeof r->game - 1);
    if (s_copy_str(r->start_position, sizeof r->start_position, gr->start_position))
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "start position longer than %zu bytes",
                        sizeof r->start_position - 1);
    if (s_copy_str(r->worker_id, sizeof r->worker_id, gr->worker_id))
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "worker_id longer than %zu bytes",
                        sizeof r->worker_id - 1);
    if (s_copy_str(r->model_player, sizeof r->model_player, gr->model_player) ||
        s_copy_str(r->opponent_player, sizeof r->opponent_player, gr->opponent_player))
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "a player spec longer than %zu bytes",
                        sizeof r->model_player - 1);
    if (gr->kind != KZ__GAME_KIND__GAME_KIND_SELFPLAY &&
        gr->kind != KZ__GAME_KIND__GAME_KIND_ARENA && gr->kind != KZ__GAME_KIND__GAME_KIND_EVAL)
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "unknown game kind %d", (int)gr->kind);
    r->kind = gr->kind == KZ__GAME_KIND__GAME_KIND_ARENA  ? RECORD_ARENA
              : gr->kind == KZ__GAME_KIND__GAME_KIND_EVAL ? RECORD_EVAL
                                                          : RECORD_SELFPLAY;
    if (r->kind != RECORD_EVAL && (r->model_player[0] || r->opponent_player[0]))
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "baseline players outside a rating game");
    r->model_version = gr->model_version;
    r->opponent_version = gr->opponent_version;
    r->seed = gr->seed;
    r->started_ms = gr->started_ms;
    r->finished_ms = gr->finished_ms;
    r->plies = gr->plies;
    if (gr->candidate_player < 0 || gr->candidate_player > 1)
        return s_report(rep, rc, r->kind == RECORD_ARENA ? RECORD_FAULT_ARENA
                                                         : RECORD_FAULT_MALFORMED,
                        "candidate_player %d is not 0 or 1", (int)gr->candidate_player);
    r->candidate_player = gr->candidate_player;
    if (gr->winner < -1 || gr->winner > 1)
        return s_report(rep, rc, RECORD_FAULT_MALFORMED, "winner %d is not -1, 0 or 1",
                        (int)gr->winner);
    r->winner = gr->winner;
    r->reason = s_reason_from_name(s_game_of(r), gr->reason);
    if (r->reason < 0) {
        char shown[44];
        r->reason = GAME_REASON_NONE;
        return s_report(rep, rc, RECORD_FAULT_WRONG_RESULT, "unknown end reason '%s'",
                        text_printable(shown, sizeof shown, gr->reason, SIZE_MAX));
    }
    if (gr->settings) {
        const Kz__SearchSettings *ss = gr->settings;
        if (ss->simulations > 100000000 || ss->fast_simulations > 100000000 ||
            ss->temperature_plies > 100000000 ||
            ss->virtual_loss_leaves > 65536 || !isfinite(ss->c_puct) ||
            !isfinite(ss->dirichlet_alpha) || !isfinite(ss->dirichlet_epsilon) ||
            !isfinite(ss->fpu) || !isfinite(ss->forced_playouts_k) || ss->root_mode > 1 ||
            ss->gumbel_m > 65536 || !isfinite(ss->gumbel_c_visit) ||
            !isfinite(ss->gumbel_c_scale) || !isfinite(ss->pcr_full_fraction) ||
            (ss->evaluator && strlen(ss->evaluator) >= sizeof r->settings.evaluator))
            return s_report(rep, rc, RECORD_FAULT_MALFORMED, "search settings out of range");
        r->settings.simulations = (int)ss->simulations;
        r->settings.c_puct = ss->c_puct;
        r->settings.dirichlet_alpha = ss->dirichlet_alpha;
        r->settings.dirichlet_epsilon = ss->dirichlet_epsilon;
        r->settings.temperature_plies = (int)ss->temperature_plies;
        r->settings.fpu = ss->fpu;
        r->settings.leaves_per_tree = (int)ss->virtual_loss_leaves;
        r->settings.reuse_tree = !ss->no_tree_reuse;
        r->settings.fast_simulations = (int)ss->fast_simulations;
        r->settings.forced_playouts_k = ss->forced_playouts_k;
        r->settings.policy_pruning = ss->policy_pruning;
        r->settings.root_mode = (int)ss->root_mode;
        r->settings.gumbel_m = (int)ss->gumbel_m;
        r->settings.gumbel_c_visit = ss->gumbel_c_visit;
        r->settings.gumbel_c_scale = ss->gumbel_c_scale;
        r->settings.gumbel_noise = ss->gumbel_noise;
        r->settings.pcr_full_fraction = ss->pcr_full_fraction;
        r->settings.tb_search = ss->tb_search;
        r->settings.tb_adjudicate = ss->tb_adjudicate;
        snprintf(r->settings.evaluator, sizeof r->settings.evaluator, "%s",
                 ss->evaluator ? ss->evaluator : "");
    }
    return 0;
}

/* The moves of a decoded GameRecord, checked, appended to r. */
static int s_decode_moves(const Kz__GameRecord *gr, game_record *r, record_report *rep)
{
    const int rc = KZ_ECORRUPT;
    if (gr->n_moves > RECORD_MAX_MOVES)
        return s_report(rep, rc, RECORD_FAULT_OVERSIZED, "%zu moves exceed the limit of %d",
                        gr->n_moves, RECORD_MAX_MOVES);
    /* Room for all moves at once (no growth per move). */
    size_t entries = 0;
    for (size_t k = 0; k < gr->n_moves; k++)
        entries += gr->moves[k]->n_policy;
    if (s_reserve_moves(r, (int)gr->n_moves) ||
        (entries <= UINT32_MAX && s_reserve_policy(r, (uint32_t)entries)))
        return s_report(rep, KZ_ENOMEM, RECORD_FAULT_MALFORMED, "out of memory");
    for (size_t k = 0; k < gr->n_moves; k++) {
        const Kz__MoveRecord *m = gr->moves[k];
        if (m->action > UINT16_MAX)
            return s_report(rep, rc, RECORD_FAULT_ILLEGAL_ACTION,
                            "move %zu: action %u out of range", k + 1, m->action);
        if (m->n_policy_actions != m->n_policy || m->n_policy > GAME_MAX_LEGAL)
            return s_report(rep, rc, RECORD_FAULT_MALFORMED,
                            "move %zu: %zu policy actions but %zu shares (at most %d)", k + 1,
                            m->n_policy_actions, m->n_policy, GAME_MAX_LEGAL);
        if (!isfinite(m->root_value))
            return s_report(rep, rc, RECORD_FAULT_NAN,
                            "move %zu: root value is not a finite number", k + 1);
        uint16_t *acts = m->n_policy ? r->policy_actions + r->n_policy : NULL;
        for (size_t j = 0; j < m->n_policy; j++) {
            if (!isfinite(m->policy[j]))
                return s_report(rep, rc, RECORD_FAULT_NAN,
                                "move %zu: policy share %zu is not a finite number", k + 1, j + 1);
            if (m->policy_actions[j] > UINT16_MAX)
                return s_report(rep, rc, RECORD_FAULT_POLICY_ILLEGAL,
                                "move %zu: policy entry %zu out of range", k + 1, j + 1);
            acts[j] = (uint16_t)m->policy_actions[j];
        }
        if (m->n_policy) /* a fast search's state has none (and m->policy may be NULL) */
            memcpy(r->policy + r->n_policy, m->policy, m->n_policy * sizeof *r->policy);
        r->moves[r->n_moves++] = (record_move){(uint16_t)m->action, m->forced, m->root_value,
                                               r->n_policy, (uint16_t)m->n_policy,
                                               m->fast_search};
        r->n_policy += (uint32_t)m->n_policy;
    }
    return 0;
}

int record_decode(record_decoder *d, const uint8_t *data, size_t len, game_record *r,
                  record_report *rep)
{
    *rep = (record_report){RECORD_FAULT_NONE, false, ""};
    record_clear(r);
    if (len > RECORD_MAX_BYTES)
        return s_report(rep, KZ_ECORRUPT, RECORD_FAULT_OVERSIZED,
                        "record of %zu bytes exceeds the limit of %u", len, RECORD_MAX_BYTES);
    ProtobufCAllocator alloc = {s_arena_alloc, s_arena_free, d};
    if (d)
        d->used = 0;
    Kz__GameRecord *gr = kz__game_record__unpack(d ? &alloc : NULL, len, data);
    if (!gr)
        return s_report(rep, KZ_ECORRUPT, RECORD_FAULT_MALFORMED,
                        "bytes do not decode as a GameRecord (%zu bytes)", len);
    int rc = s_decode_fields(gr, r, rep);
    if (rc == 0)
        rc = s_decode_moves(gr, r, rep);
    kz__game_record__free_unpacked(gr, d ? &alloc : NULL);
    return rc;
}

int record_unpack(const uint8_t *data, size_t len, game_record *r, char *err, size_t errlen)
{
    record_report rep;
    int rc = record_decode(NULL, data, len, r, &rep);
    if (rc != 0) {
        record_clear(r);
        err_set(err, errlen, rc, "%s", rep.msg);
    }
    return rc;
}

/* --- rules ------------------------------------------------------------------------ */

void record_check_opts_default(record_check_opts *o)
{
    *o = (record_check_opts){.policy_tolerance = 1e-3, .max_moves = RECORD_MAX_MOVES};
}

/* The error code of a rules fault. */
static int s_fault_rc(int fault)
{
    switch (fault) {
    case RECORD_FAULT_ILLEGAL_ACTION:
    case RECORD_FAULT_POLICY_ILLEGAL: return KZ_EILLEGAL;
    case RECORD_FAULT_WRONG_GAME: return KZ_EMISMATCH;
    default: return KZ_EINVAL;
    }
}

/* A rules fault into *rep; returns its error code. */
#define S_FAULT(rep, fault, ...) s_report((rep), s_fault_rc(fault), (fault), __VA_ARGS__)

/* The record-wide checks that come before the replay. */
static int s_check_header(const game_def *g, const game_record *r, const record_check_opts *o,
                          record_report *rep)
{
    if (strcmp(r->game, g->name) != 0) {
        char shown[sizeof r->game];
        return S_FAULT(rep, RECORD_FAULT_WRONG_GAME, "record is for game '%s', not '%s'",
                       text_printable(shown, sizeof shown, r->game, sizeof r->game), g->name);
    }
    if (r->n_moves < 0 || (uint32_t)r->n_moves > o->max_moves)
        return S_FAULT(rep, RECORD_FAULT_OVERSIZED, "%d moves, at most %u", r->n_moves,
                       o->max_moves);
    uint32_t known = o->known_models;
    if (o->check_models && r->kind == RECORD_EVAL) {
        /* Each side is a known model or a baseline player (which ones the
         * cluster rates is the coordinator's check); the sides differ. */
        bool a_model = !r->model_player[0], b_model = !r->opponent_player[0];
        if ((a_model && (r->model_version == 0 || r->model_version > known)) ||
            (b_model && (r->opponent_version == 0 || r->opponent_version > known)))
            return S_FAULT(rep, RECORD_FAULT_UNKNOWN_MODEL,
                           "rating game of versions %u and %u (latest %u)", r->model_version,
                           r->opponent_version, known);
        if ((!a_model && r->model_version) || (!b_model && r->opponent_version))
            return S_FAULT(rep, RECORD_FAULT_EVAL, "a side is both a model and a baseline player");
        if (a_model == b_model && (a_model ? r->model_version == r->opponent_version
                                           : !strcmp(r->model_player, r->opponent_player)))
            return S_FAULT(rep, RECORD_FAULT_EVAL, "a rating game of a player against itself");
    } else if (o->check_models) {
        if (r->model_version == 0 || r->model_version > known)
            return S_FAULT(rep, RECORD_FAULT_UNKNOWN_MODEL, "model version %u unknown (latest %u)",
                           r->model_version, known);
        if (r->kind == RECORD_ARENA && (r->opponent_version == 0 || r->opponent_version > known))
            return S_FAULT(rep, RECORD_FAULT_UNKNOWN_MODEL,
                           "opponent version %u unknown (latest %u)", r->opponent_version, known);
        if (r->kind == RECORD_ARENA && r->opponent_version == r->model_version)
            return S_FAULT(rep, RECORD_FAULT_ARENA, "arena of version %u against itself",
                           r->model_version);
    }
    return 0;
}

/* Move k (0-based) in state s, whose n_legal legal actions ascend. */
static int s_check_move(const game_def *g, const game_record *r, const record_check_opts *o,
                        int k, const game_state *s, const uint16_t *legal, int n_legal,
                        record_report *rep)
{
    const record_move *m = &r->moves[k];
    int ply = g->ply(s);
    /* Step 1. NaN and infinity first: they would confuse every later check. */
    if (!isfinite(m->root_value))
        return S_FAULT(rep, RECORD_FAULT_NAN, "move %d (ply %d): root value is %f", k + 1, ply,
                       (double)m->root_value);
    if (!(m->root_value >= -1.0001f && m->root_value <= 1.0001f))
        return S_FAULT(rep, RECORD_FAULT_MALFORMED, "move %d (ply %d): root value %g outside "
                       "[-1, 1]", k + 1, ply, (double)m->root_value);
    const uint16_t *pa = r->policy_actions + m->policy_off;
    const float *pv = r->policy + m->policy_off;
    for (int j = 0; j < m->policy_n; j++)
        if (!isfinite(pv[j]))
            return S_FAULT(rep, RECORD_FAULT_NAN, "move %d (ply %d): policy share %d is %f",
                           k + 1, ply, j + 1, (double)pv[j]);
    /* Step 2. Policy actions ascending, unique and legal. */
    int li = 0; /* merge pointer: both lists ascend */
    char name[32];
    for (int j = 0; j < m->policy_n; j++) {
        if (j > 0 && pa[j] <= pa[j - 1])
            return S_FAULT(rep, RECORD_FAULT_MALFORMED,
                           "move %d (ply %d): policy actions not ascending and unique", k + 1,
                           ply);
        while (li < n_legal && legal[li] < pa[j])
            li++;
        if (li == n_legal || legal[li] != pa[j]) {
            g->format_action(pa[j] < g->action_count ? pa[j] : 0, name, sizeof name);
            return S_FAULT(rep, RECORD_FAULT_POLICY_ILLEGAL,
                           "move %d (ply %d): policy on illegal action %u (%s)", k + 1, ply,
                           pa[j], pa[j] < g->action_count ? name : "out of range");
        }
    }
    /* Step 3. Shares in [0, 1] summing to 1. */
    double sum = 0;
    for (int j = 0; j < m->policy_n; j++) {
        if (!(pv[j] >= 0 && pv[j] <= 1))
            return S_FAULT(rep, RECORD_FAULT_POLICY_SUM,
                           "move %d (ply %d): policy share %g outside [0, 1]", k + 1, ply,
                           (double)pv[j]);
        sum += pv[j];
    }
    if (m->policy_n > 0 && fabs(sum - 1.0) > o->policy_tolerance)
        return S_FAULT(rep, RECORD_FAULT_POLICY_SUM, "move %d (ply %d): policy sums to %.6f, not 1",
                       k + 1, ply, sum);
    /* Step 4. The forced and fast flags and the action. */
    if (m->forced && n_legal != 1)
        return S_FAULT(rep, RECORD_FAULT_MALFORMED,
                       "move %d (ply %d): marked forced with %d legal actions", k + 1, ply,
                       n_legal);
    if (m->forced && m->fast_search)
        return S_FAULT(rep, RECORD_FAULT_MALFORMED,
                       "move %d (ply %d): marked both forced (not searched) and fast search",
                       k + 1, ply);
    bool found = false;
    for (int j = 0; j < n_legal && !found; j++)
        found = legal[j] == m->action;
    if (!found) {
        g->format_action(m->action < g->action_count ? m->action : 0, name, sizeof name);
        return S_FAULT(rep, RECORD_FAULT_ILLEGAL_ACTION, "move %d (ply %d): action %u (%s) is "
                       "illegal", k + 1, ply, m->action,
                       m->action < g->action_count ? name : "out of range");
    }
    return 0;
}

/* Replays r; on success *final holds the state after the last move. */
static int s_check(const game_def *g, const game_record *r, const record_check_opts *o,
                   record_visit_fn fn, void *ctx, game_state *final, record_report *rep)
{
    record_check_opts def;
    if (!o) {
        record_check_opts_default(&def);
        o = &def;
    }
    *rep = (record_report){RECORD_FAULT_NONE, false, ""};
    int rc = s_check_header(g, r, o, rep);
    if (rc != 0)
        return rc;
    game_state s;
    if (r->start_position[0]) {
        char perr[160];
        if (g->parse_position(&s, r->start_position, perr, sizeof perr) != 0)
            return S_FAULT(rep, RECORD_FAULT_MALFORMED, "start position: %s", perr);
    } else {
        g->init(&s);
    }
    rng_t dice;
    game_dice_seed(&dice, r->seed);
    for (int k = 0; k < r->n_moves; k++) {
        game_result res = g->result(&s);
        if (res.over)
            return S_FAULT(rep, RECORD_FAULT_ILLEGAL_ACTION,
                           "move %d (ply %d): the game was already over (%s)", k + 1, g->ply(&s),
                           game_reason_name(g, res.reason));
        uint16_t legal[GAME_MAX_LEGAL];
        int n_legal = g->legal_actions(&s, legal);
        if ((rc = s_check_move(g, r, o, k, &s, legal, n_legal, rep)) != 0)
            return rc;
        if (g->is_chance && g->is_chance(&s)) {
            /* Dice that can be trusted: nature's move is the seed's (game.h). */
            int want = game_chance_draw(g, &s, &dice);
            const record_move *m = &r->moves[k];
            if (m->action != want || m->policy_n || m->forced || m->fast_search) {
                char a[32], b[32];
                g->format_action(m->action, a, sizeof a);
                g->format_action(want, b, sizeof b);
                return S_FAULT(rep, RECORD_FAULT_ILLEGAL_ACTION,
                               "move %d (ply %d): the dice %s do not follow from the seed "
                               "(it gives %s), or carry a search's marks", k + 1, g->ply(&s),
                               a, b);
            }
        }
        if (fn && (rc = fn(ctx, &s, k, &r->moves[k])) != 0)
            return rc;
        g->apply(&s, r->moves[k].action);
    }
    game_result res = g->result(&s);
    if (!res.over)
        return S_FAULT(rep, RECORD_FAULT_WRONG_RESULT,
                       "the game is not over after its %d moves (ply %d)", r->n_moves, g->ply(&s));
    if (res.winner != r->winner || res.reason != r->reason)
        return S_FAULT(rep, RECORD_FAULT_WRONG_RESULT,
                       "recorded result (winner %d, %s) differs from the rules' (winner %d, %s)",
                       r->winner, game_reason_name(g, r->reason), res.winner,
                       game_reason_name(g, res.reason));
    if ((uint32_t)g->ply(&s) != r->plies)
        return S_FAULT(rep, RECORD_FAULT_WRONG_RESULT, "recorded %u plies, the replay has %d",
                       r->plies, g->ply(&s));
    *final = s;
    return 0;
}

int record_check(const game_def *g, const game_record *r, const record_check_opts *o,
                 record_visit_fn fn, void *ctx, record_report *rep)
{
    game_state final;
    return s_check(g, r, o, fn, ctx, &final, rep);
}

int record_validate(const game_def *g, const game_record *r, char *err, size_t errlen)
{
    record_report rep;
    int rc = record_check(g, r, NULL, NULL, NULL, &rep);
    return rc ? err_set(err, errlen, rc, "%s", rep.msg) : 0;
}

int record_replay(const game_def *g, const game_record *r, record_state_fn fn, void *ctx,
                  char *err, size_t errlen)
{
    game_state s;
    record_report rep;
    int rc = s_check(g, r, NULL, NULL, NULL, &s, &rep);
    if (rc != 0)
        return err_set(err, errlen, rc, "%s", rep.msg);
    game_result res = g->result(&s);
    if (r->start_position[0])
        g->parse_position(&s, r->start_position, NULL, 0);
    else
        g->init(&s);
    for (int k = 0; k < r->n_moves; k++) {
        rc = fn(ctx, &s, k, &r->moves[k], game_result_for(res, g->to_move(&s)));
        if (rc != 0)
            return rc;
        g->apply(&s, r->moves[k].action);
    }
    return 0;
}

/* --- files ------------------------------------------------------------------------ */

struct record_file {
    FILE *fp;          /* the stream */
    bool writing;      /* opened by record_file_create */
    long count;        /* records read or written */
    long offset;       /* byte offset of the next record */
    int failed;        /* sticky error of a reader (0 while fine) */
    bool torn;         /* that error is the end of the file inside a record */
    char failed_msg[200]; /* its message */
    uint8_t *buf;      /* reader: the current record's bytes */
    size_t cap;        /* capacity of buf */
};

/* A new record_file on path, opened with fopen's mode: 0, or the error
 * ("cannot <verb> path: why"; nothing is left open). */
static int s_file_new(const char *path, const char *mode, const char *verb, record_file **pf,
                      char *err, size_t errlen)
{
    record_file *f = *pf = calloc(1, sizeof *f);
    if (!f)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory");
    f->fp = fopen(path, mode);
    if (!f->fp) {
        int e = errno;
        free(f);
        *pf = NULL;
        return err_set(err, errlen, e, "cannot %s %s: %s", verb, path, strerror(e));
    }
    return 0;
}

/* After f's header was written or read (rc: how that went): 0 and f in
 * *out, placed after the header, or rc with f closed and freed. */
static int s_file_ready(record_file *f, int rc, record_file **out)
{
    if (rc != 0) {
        fclose(f->fp);
        free(f);
        return rc;
    }
    f->offset = RECORD_FILE_HEADER;
    *out = f;
    return 0;
}

int record_file_create(const char *path, record_file **out, char *err, size_t errlen)
{
    *out = NULL;
    record_file *f;
    int rc = s_file_new(path, "wb", "create", &f, err, errlen);
    if (rc != 0)
        return rc;
    f->writing = true;
    uint8_t hdr[RECORD_FILE_HEADER];
    memcpy(hdr, s_magic, 6);
    hdr[6] = RECORD_FILE_VERSION & 0xff;
    hdr[7] = RECORD_FILE_VERSION >> 8;
    if (fwrite(hdr, 1, sizeof hdr, f->fp) != sizeof hdr || fflush(f->fp) != 0) {
        int e = errno ? errno : KZ_EIO;
        rc = err_set(err, errlen, e, "cannot write %s: %s", path, err_str(e));
    }
    return s_file_ready(f, rc, out);
}

int record_file_open(const char *path, record_file **out, char *err, size_t errlen)
{
    *out = NULL;
    record_file *f;
    int rc = s_file_new(path, "rb", "open", &f, err, errlen);
    if (rc != 0)
        return rc;
    uint8_t hdr[RECORD_FILE_HEADER];
    size_t got = fread(hdr, 1, sizeof hdr, f->fp);
    if (got != sizeof hdr || memcmp(hdr, s_magic, 6) != 0) {
        rc = err_set(err, errlen, KZ_ECORRUPT, "%s is not a record file (bad header)", path);
    } else if ((hdr[6] | hdr[7] << 8) != RECORD_FILE_VERSION) {
        rc = err_set(err, errlen, KZ_EVERSION, "%s: record file version %d, this build reads %d",
                     path, hdr[6] | hdr[7] << 8, RECORD_FILE_VERSION);
    }
    return s_file_ready(f, rc, out);
}

int record_file_write(record_file *f, const game_record *r, char *err, size_t errlen)
{
    if (!f->writing)
        return err_set(err, errlen, KZ_EINVAL, "record file is open for reading");
    uint8_t *data;
    size_t len;
    int rc = record_pack(r, &data, &len);
    if (rc != 0)
        return err_set(err, errlen, rc, "cannot pack record: %s", err_str(rc));
    uint8_t pre[4];
    le_put32(pre, (uint32_t)len);
    if (fwrite(pre, 1, 4, f->fp) != 4 || fwrite(data, 1, len, f->fp) != len ||
        fflush(f->fp) != 0) {
        rc = errno ? errno : KZ_EIO;
        free(data);
        return err_set(err, errlen, rc, "cannot write record %ld: %s", f->count + 1, err_str(rc));
    }
    free(data);
    f->count++;
    f->offset += 4 + (long)len;
    return 0;
}

/* Marks a reader failed with a sticky error. */
static int s_fail_reader(record_file *f, char *err, size_t errlen, int rc, const char *msg)
{
    f->failed = rc;
    snprintf(f->failed_msg, sizeof f->failed_msg, "record %ld at byte %ld: %s", f->count + 1,
             f->offset, msg);
    return err_set(err, errlen, rc, "%s", f->failed_msg);
}

int record_file_read(record_file *f, game_record *r, char *err, size_t errlen)
{
    if (f->writing)
        return err_set(err, errlen, KZ_EINVAL, "record file is open for writing");
    if (f->failed)
        return err_set(err, errlen, f->failed, "%s", f->failed_msg);
    uint8_t pre[4];
    size_t got = fread(pre, 1, 4, f->fp);
    if (got == 0 && feof(f->fp))
        return KZ_ENOTFOUND;
    if (got != 4) {
        f->torn = !ferror(f->fp);
        return s_fail_reader(f, err, errlen, ferror(f->fp) ? KZ_EIO : KZ_ECORRUPT,
                             ferror(f->fp) ? "read error"
                                           : "truncated: the file ends inside a length prefix");
    }
    uint32_t len = le_get32(pre);
    if (len > RECORD_MAX_BYTES) {
        char msg[120];
        snprintf(msg, sizeof msg, "length %u exceeds the limit of %u bytes (corrupted)", len,
                 RECORD_MAX_BYTES);
        return s_fail_reader(f, err, errlen, KZ_ECORRUPT, msg);
    }
    if (len > f->cap) {
        uint8_t *b = realloc(f->buf, len);
        if (!b)
            return err_set(err, errlen, KZ_ENOMEM, "out of memory");
        f->buf = b;
        f->cap = len;
    }
    got = fread(f->buf, 1, len, f->fp);
    if (got != len) {
        f->torn = !ferror(f->fp);
        char msg[120];
        snprintf(msg, sizeof msg, "truncated: %zu of %u bytes present", got, len);
        return s_fail_reader(f, err, errlen, ferror(f->fp) ? KZ_EIO : KZ_ECORRUPT, msg);
    }
    char uerr[160];
    int rc = record_unpack(f->buf, len, r, uerr, sizeof uerr);
    if (rc != 0)
        return s_fail_reader(f, err, errlen, rc, uerr);
    f->count++;
    f->offset += 4 + (long)len;
    return 0;
}

int record_file_append(const char *path, record_file **out, char *warn, size_t warnlen,
                       char *err, size_t errlen)
{
    *out = NULL;
    if (warnlen)
        warn[0] = 0;
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        if (errno == ENOENT)
            return record_file_create(path, out, err, errlen);
        int e = errno;
        return err_set(err, errlen, e, "cannot open %s: %s", path, strerror(e));
    }
    int c = fgetc(probe);
    fclose(probe);
    if (c == EOF) /* empty: as new */
        return record_file_create(path, out, err, errlen);
    /* Step 1. Every record must read: nothing is appended after damage. */
    record_file *f;
    int rc = record_file_open(path, &f, err, errlen);
    if (rc)
        return rc;
    game_record *r = record_new();
    if (!r) {
        record_file_close(&f);
        return err_set(err, errlen, KZ_ENOMEM, "out of memory");
    }
    while ((rc = record_file_read(f, r, err, errlen)) == 0)
        ;
    long count = f->count, offset = f->offset;
    bool torn = f->torn;
    record_destroy(&r);
    record_file_close(&f);
    if (rc == KZ_ECORRUPT && torn) {
        /* A torn tail (a write cut short: the file ends inside its last
         * record): cut it off, keeping every whole record before it. */
        struct stat sb;
        long size = stat(path, &sb) ? -1 : (long)sb.st_size;
        if (size < offset || truncate(path, offset) != 0) {
            int e = size < offset ? KZ_EIO : errno;
            char why[200];
            snprintf(why, sizeof why, "%s", errlen ? err : "");
            return err_set(err, errlen, e, "%s: %s; cutting the torn tail off failed: %s",
                           path, why, size < offset ? "the file changed" : strerror(e));
        }
        if (warnlen)
            snprintf(warn, warnlen, "%s: a torn last record (%ld bytes from byte %ld: the file "
                     "ends inside it) was cut off; whole records kept: %ld",
                     path, size - offset, offset, count);
        rc = KZ_ENOTFOUND;
    }
    if (rc != KZ_ENOTFOUND)
        return rc;
    /* Step 2. Open for appending after the last record. */
    f = calloc(1, sizeof *f);
    if (!f)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory");
    f->fp = fopen(path, "ab");
    if (!f->fp) {
        int e = errno;
        free(f);
        return err_set(err, errlen, e, "cannot append to %s: %s", path, strerror(e));
    }
    f->writing = true;
    f->count = count;
    f->offset = offset;
    *out = f;
    return 0;
}

long record_file_count(const record_file *f) { return f->count; }

bool record_file_torn(const record_file *f) { return f->failed && f->torn; }

int record_file_close(record_file **pf)
{
    if (!pf || !*pf)
        return 0;
    record_file *f = *pf;
    int rc = 0;
    if (f->writing) {
        if (fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0)
            rc = errno ? errno : KZ_EIO;
    }
    if (fclose(f->fp) != 0 && rc == 0)
        rc = errno ? errno : KZ_EIO;
    free(f->buf);
    free(f);
    *pf = NULL;
    return rc;
}
