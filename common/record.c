/* record: game records in memory, as proto GameRecord bytes, and in record
 * files. See record.h. */
#include "record.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "record.pb-c.h"
#include "util.h"

static const uint8_t s_magic[6] = {'K', 'Z', 'R', 'E', 'C', 0};

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
    free(r->moves);
    free(r->policy_actions);
    free(r->policy);
    free(r);
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
    r->settings = mcts_settings_default();
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

static int s_reserve_moves(game_record *r, int need)
{
    if (need <= r->cap_moves)
        return 0;
    int cap = r->cap_moves ? r->cap_moves : 64;
    while (cap < need)
        cap *= 2;
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
    uint32_t cap = r->cap_policy ? r->cap_policy : 512;
    while (cap < need)
        cap *= 2;
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

/* --- proto conversion --------------------------------------------------------------- */

int record_pack(const game_record *r, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (r->n_moves < 0 || r->n_moves > RECORD_MAX_MOVES ||
        memchr(r->game, 0, sizeof r->game) == NULL ||
        memchr(r->start_position, 0, sizeof r->start_position) == NULL ||
        memchr(r->worker_id, 0, sizeof r->worker_id) == NULL)
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
    Kz__GameRecord gr = KZ__GAME_RECORD__INIT;
    gr.game_id.data = (uint8_t *)r->id;
    gr.game_id.len = RECORD_ID_BYTES;
    gr.game = (char *)r->game;
    gr.kind = r->kind == RECORD_ARENA ? KZ__GAME_KIND__GAME_KIND_ARENA
                                      : KZ__GAME_KIND__GAME_KIND_SELFPLAY;
    gr.model_version = r->model_version;
    gr.opponent_version = r->opponent_version;
    gr.candidate_player = r->candidate_player;
    gr.start_position = (char *)r->start_position;
    gr.n_moves = n;
    gr.moves = mvp;
    gr.winner = r->winner;
    gr.reason = (char *)(r->reason == GAME_REASON_NONE ? "" : game_reason_name(r->reason));
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
    free(mv);
    free(mvp);
    free(pa);
    return rc;
}

static int s_reason_from_name(const char *name)
{
    if (!name || !*name)
        return GAME_REASON_NONE;
    for (int k = 1; k < GAME_REASON_COUNT; k++)
        if (!strcmp(name, game_reason_name(k)))
            return k;
    return -1;
}

static int s_copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        return -1;
    memcpy(dst, src ? src : "", n + 1);
    return 0;
}

int record_unpack(const uint8_t *data, size_t len, game_record *r, char *err, size_t errlen)
{
    record_clear(r);
    if (len > RECORD_MAX_BYTES)
        return err_set(err, errlen, KZ_ECORRUPT, "record of %zu bytes exceeds the limit of %u", len,
                     RECORD_MAX_BYTES);
    Kz__GameRecord *gr = kz__game_record__unpack(NULL, len, data);
    if (!gr)
        return err_set(err, errlen, KZ_ECORRUPT, "bytes do not decode as a GameRecord");
    int rc = KZ_ECORRUPT;
    if (gr->game_id.len != RECORD_ID_BYTES) {
        err_set(err, errlen, rc, "game id has %zu bytes, not %d", gr->game_id.len, RECORD_ID_BYTES);
        goto out;
    }
    memcpy(r->id, gr->game_id.data, RECORD_ID_BYTES);
    if (s_copy_str(r->game, sizeof r->game, gr->game) ||
        s_copy_str(r->start_position, sizeof r->start_position, gr->start_position) ||
        s_copy_str(r->worker_id, sizeof r->worker_id, gr->worker_id)) {
        err_set(err, errlen, rc, "a string field (game, start position, worker id) is too long");
        goto out;
    }
    if (gr->kind != KZ__GAME_KIND__GAME_KIND_SELFPLAY && gr->kind != KZ__GAME_KIND__GAME_KIND_ARENA) {
        err_set(err, errlen, rc, "unknown game kind %d", (int)gr->kind);
        goto out;
    }
    r->kind = gr->kind == KZ__GAME_KIND__GAME_KIND_ARENA ? RECORD_ARENA : RECORD_SELFPLAY;
    r->model_version = gr->model_version;
    r->opponent_version = gr->opponent_version;
    if (gr->candidate_player < 0 || gr->candidate_player > 1) {
        err_set(err, errlen, rc, "candidate player %d is not 0 or 1", (int)gr->candidate_player);
        goto out;
    }
    r->candidate_player = gr->candidate_player;
    if (gr->winner < -1 || gr->winner > 1) {
        err_set(err, errlen, rc, "winner %d is not -1, 0 or 1", (int)gr->winner);
        goto out;
    }
    r->winner = gr->winner;
    r->reason = s_reason_from_name(gr->reason);
    if (r->reason < 0) {
        char shown[44];
        err_set(err, errlen, rc, "unknown end reason '%s'",
              text_printable(shown, sizeof shown, gr->reason, SIZE_MAX));
        goto out;
    }
    r->seed = gr->seed;
    r->started_ms = gr->started_ms;
    r->finished_ms = gr->finished_ms;
    r->plies = gr->plies;
    if (gr->settings) {
        const Kz__SearchSettings *ss = gr->settings;
        if (ss->simulations > 100000000 || ss->temperature_plies > 100000000 ||
            ss->virtual_loss_leaves > 65536 || !isfinite(ss->c_puct) ||
            !isfinite(ss->dirichlet_alpha) || !isfinite(ss->dirichlet_epsilon) ||
            !isfinite(ss->fpu)) {
            err_set(err, errlen, rc, "search settings out of range");
            goto out;
        }
        r->settings.simulations = (int)ss->simulations;
        r->settings.c_puct = ss->c_puct;
        r->settings.dirichlet_alpha = ss->dirichlet_alpha;
        r->settings.dirichlet_epsilon = ss->dirichlet_epsilon;
        r->settings.temperature_plies = (int)ss->temperature_plies;
        r->settings.fpu = ss->fpu;
        r->settings.leaves_per_tree = (int)ss->virtual_loss_leaves;
        r->settings.reuse_tree = !ss->no_tree_reuse;
    }
    if (gr->n_moves > RECORD_MAX_MOVES) {
        err_set(err, errlen, rc, "%zu moves exceed the limit of %d", gr->n_moves, RECORD_MAX_MOVES);
        goto out;
    }
    for (size_t k = 0; k < gr->n_moves; k++) {
        const Kz__MoveRecord *m = gr->moves[k];
        if (m->action > UINT16_MAX) {
            err_set(err, errlen, rc, "move %zu: action %u out of range", k + 1, m->action);
            goto out;
        }
        if (m->n_policy_actions != m->n_policy || m->n_policy > GAME_MAX_LEGAL) {
            err_set(err, errlen, rc, "move %zu: %zu policy actions but %zu shares (at most %d)",
                  k + 1, m->n_policy_actions, m->n_policy, GAME_MAX_LEGAL);
            goto out;
        }
        if (!isfinite(m->root_value)) {
            err_set(err, errlen, rc, "move %zu: root value is not a finite number", k + 1);
            goto out;
        }
        uint16_t acts[GAME_MAX_LEGAL];
        for (size_t j = 0; j < m->n_policy; j++) {
            if (m->policy_actions[j] > UINT16_MAX || !isfinite(m->policy[j])) {
                err_set(err, errlen, rc, "move %zu: policy entry %zu out of range", k + 1, j + 1);
                goto out;
            }
            acts[j] = (uint16_t)m->policy_actions[j];
        }
        if (record_add_move(r, (int)m->action, m->forced, m->root_value, (int)m->n_policy, acts,
                            m->policy) != 0) {
            rc = err_set(err, errlen, KZ_ENOMEM, "out of memory");
            goto out;
        }
    }
    rc = 0;
out:
    kz__game_record__free_unpacked(gr, NULL);
    if (rc != 0)
        record_clear(r);
    return rc;
}

/* --- rules ------------------------------------------------------------------------ */

/* Replays r; on success *final holds the state after the last move. */
static int s_check(const game_def *g, const game_record *r, game_state *final, char *err,
                   size_t errlen)
{
    if (strcmp(r->game, g->name) != 0) {
        char shown[sizeof r->game];
        return err_set(err, errlen, KZ_EMISMATCH, "record is for game '%s', not '%s'",
                     text_printable(shown, sizeof shown, r->game, sizeof r->game), g->name);
    }
    game_state s;
    if (r->start_position[0]) {
        char perr[160];
        if (g->parse_position(&s, r->start_position, perr, sizeof perr) != 0)
            return err_set(err, errlen, KZ_EINVAL, "start position: %s", perr);
    } else {
        g->init(&s);
    }
    for (int k = 0; k < r->n_moves; k++) {
        const record_move *m = &r->moves[k];
        char ab[16];
        g->format_action(m->action < g->action_count ? m->action : 0, ab, sizeof ab);
        game_result res = g->result(&s);
        if (res.over)
            return err_set(err, errlen, KZ_EILLEGAL, "move %d: the game was already over (%s)",
                         k + 1, game_reason_name(res.reason));
        uint16_t legal[GAME_MAX_LEGAL];
        int n_legal = g->legal_actions(&s, legal);
        bool found = false;
        for (int j = 0; j < n_legal && !found; j++)
            found = legal[j] == m->action;
        if (!found)
            return err_set(err, errlen, KZ_EILLEGAL, "move %d: action %u (%s) is illegal", k + 1,
                         m->action, m->action < g->action_count ? ab : "out of range");
        if (m->forced && n_legal != 1)
            return err_set(err, errlen, KZ_EINVAL, "move %d: marked forced with %d legal actions",
                         k + 1, n_legal);
        if (!(m->root_value >= -1.0001f && m->root_value <= 1.0001f))
            return err_set(err, errlen, KZ_EINVAL, "move %d: root value %g outside [-1, 1]", k + 1,
                         m->root_value);
        double sum = 0;
        int li = 0; /* merge pointer: both lists ascend */
        for (int j = 0; j < m->policy_n; j++) {
            uint16_t a = r->policy_actions[m->policy_off + j];
            float p = r->policy[m->policy_off + j];
            if (j > 0 && a <= r->policy_actions[m->policy_off + j - 1])
                return err_set(err, errlen, KZ_EINVAL,
                             "move %d: policy actions not ascending and unique", k + 1);
            while (li < n_legal && legal[li] < a)
                li++;
            if (li == n_legal || legal[li] != a)
                return err_set(err, errlen, KZ_EILLEGAL, "move %d: policy on illegal action %u",
                             k + 1, a);
            if (!(p >= 0 && p <= 1.0001f))
                return err_set(err, errlen, KZ_EINVAL, "move %d: policy share %g outside [0, 1]",
                             k + 1, p);
            sum += p;
        }
        if (m->policy_n > 0 && fabs(sum - 1.0) > 1e-3)
            return err_set(err, errlen, KZ_EINVAL, "move %d: policy sums to %.6f, not 1", k + 1,
                         sum);
        g->apply(&s, m->action);
    }
    game_result res = g->result(&s);
    if (!res.over)
        return err_set(err, errlen, KZ_EINVAL, "the game is not over after its %d moves",
                     r->n_moves);
    if (res.winner != r->winner || res.reason != r->reason)
        return err_set(err, errlen, KZ_EINVAL,
                     "recorded result (winner %d, %s) differs from the rules' (winner %d, %s)",
                     r->winner, game_reason_name(r->reason), res.winner,
                     game_reason_name(res.reason));
    if ((uint32_t)g->ply(&s) != r->plies)
        return err_set(err, errlen, KZ_EINVAL, "recorded %u plies, the replay has %d", r->plies,
                     g->ply(&s));
    *final = s;
    return 0;
}

int record_validate(const game_def *g, const game_record *r, char *err, size_t errlen)
{
    game_state final;
    return s_check(g, r, &final, err, errlen);
}

int record_replay(const game_def *g, const game_record *r, record_state_fn fn, void *ctx,
                  char *err, size_t errlen)
{
    game_state s;
    int rc = s_check(g, r, &s, err, errlen);
    if (rc != 0)
        return rc;
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
    char failed_msg[200]; /* its message */
    uint8_t *buf;      /* reader: the current record's bytes */
    size_t cap;        /* capacity of buf */
};

int record_file_create(const char *path, record_file **out, char *err, size_t errlen)
{
    *out = NULL;
    record_file *f = calloc(1, sizeof *f);
    if (!f)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory");
    f->fp = fopen(path, "wb");
    if (!f->fp) {
        int e = errno;
        free(f);
        return err_set(err, errlen, e, "cannot create %s: %s", path, strerror(e));
    }
    f->writing = true;
    uint8_t hdr[8];
    memcpy(hdr, s_magic, 6);
    hdr[6] = RECORD_FILE_VERSION & 0xff;
    hdr[7] = RECORD_FILE_VERSION >> 8;
    if (fwrite(hdr, 1, sizeof hdr, f->fp) != sizeof hdr || fflush(f->fp) != 0) {
        int e = errno ? errno : KZ_EIO;
        fclose(f->fp);
        free(f);
        return err_set(err, errlen, e, "cannot write %s: %s", path, err_str(e));
    }
    f->offset = sizeof hdr;
    *out = f;
    return 0;
}

int record_file_open(const char *path, record_file **out, char *err, size_t errlen)
{
    *out = NULL;
    record_file *f = calloc(1, sizeof *f);
    if (!f)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory");
    f->fp = fopen(path, "rb");
    if (!f->fp) {
        int e = errno;
        free(f);
        return err_set(err, errlen, e, "cannot open %s: %s", path, strerror(e));
    }
    uint8_t hdr[8];
    size_t got = fread(hdr, 1, sizeof hdr, f->fp);
    int rc = 0;
    if (got != sizeof hdr || memcmp(hdr, s_magic, 6) != 0) {
        rc = err_set(err, errlen, KZ_ECORRUPT, "%s is not a record file (bad header)", path);
    } else if ((hdr[6] | hdr[7] << 8) != RECORD_FILE_VERSION) {
        rc = err_set(err, errlen, KZ_EVERSION, "%s: record file version %d, this build reads %d",
                   path, hdr[6] | hdr[7] << 8, RECORD_FILE_VERSION);
    }
    if (rc != 0) {
        fclose(f->fp);
        free(f);
        return rc;
    }
    f->offset = sizeof hdr;
    *out = f;
    return 0;
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
    uint8_t pre[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                      (uint8_t)(len >> 24)};
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
    if (got != 4)
        return s_fail_reader(f, err, errlen, ferror(f->fp) ? KZ_EIO : KZ_ECORRUPT,
                             ferror(f->fp) ? "read error"
                                           : "truncated: the file ends inside a length prefix");
    uint32_t len = (uint32_t)pre[0] | (uint32_t)pre[1] << 8 | (uint32_t)pre[2] << 16 |
                   (uint32_t)pre[3] << 24;
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

long record_file_count(const record_file *f) { return f->count; }

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
