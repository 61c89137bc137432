/* store: LMDB replay store and model registry. See store.h. */
#include "data/store.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "games/game.h"
#include "net/wire.h"

#define MODEL_HEADER_BYTES 72
#define MODEL_MAGIC "KZM1"
#define META_VALUE_MAX (1u << 20)
/* Largest encoded position: P, packed, z, n, n * (u16 + f32), q, and the
 * auxiliary block: flags, material, m, m * (u16 + f32). */
#define POSITION_MAX_BYTES \
    (1 + 255 + 1 + 2 + GAME_MAX_LEGAL * 6 + 4 + 1 + 4 + 2 + GAME_MAX_LEGAL * 6)
#define AUX_MATERIAL 1u /* aux block flag: the material target follows */
#define AUX_OPP 2u      /* aux block flag: the opponent-policy target follows */

static const char *s_lmdb_error(int rc) { return mdb_strerror(rc); }

/* err_str names LMDB's own codes (-30799 .. -30780): registered when the
 * program starts, since any store call may return one. */
__attribute__((constructor)) static void s_register_errors(void)
{
    err_register_range(MDB_KEYEXIST, MDB_LAST_ERRCODE, s_lmdb_error);
}

struct store {
    MDB_env *env;          /* the environment */
    MDB_dbi models;        /* version -> header + blob */
    MDB_dbi games;         /* game sequence -> record */
    MDB_dbi positions;     /* position sequence -> sample */
    MDB_dbi dedup;         /* game id -> game sequence */
    MDB_dbi meta;          /* name -> value */
    store_options opt;     /* options given to store_open */
    size_t map_bytes;      /* current map size */
    uint64_t next_game;    /* next game sequence = games stored */
    uint64_t next_pos;     /* next position sequence */
    uint64_t first_pos;    /* lowest stored position sequence */
    uint32_t next_model;   /* next model version */
    uint32_t best;         /* best model version */
    uint64_t grows;        /* map growths since open */
    uint64_t txns;         /* write transactions committed since open */
    uint64_t damaged;      /* damaged positions sampling met and drew again, since open */
    uint8_t posbuf[POSITION_MAX_BYTES]; /* encode buffer for one position */
};

/* --- open / close ------------------------------------------------------------ */

void store_options_default(store_options *o)
{
    *o = (store_options){
        .map_bytes = 64u << 20,
        .window = 500000,
        .prune_per_txn = 20000,
        .no_sync = false,
    };
}

static int s_meta_get_u64(MDB_txn *txn, MDB_dbi dbi, const char *name, uint64_t *v)
{
    MDB_val k = {strlen(name), (void *)name}, d;
    int rc = mdb_get(txn, dbi, &k, &d);
    if (rc == MDB_NOTFOUND) {
        *v = 0;
        return 0;
    }
    if (rc)
        return rc;
    if (d.mv_size != 8)
        return KZ_ECORRUPT;
    *v = le_get64(d.mv_data);
    return 0;
}

static int s_meta_put_u64(MDB_txn *txn, MDB_dbi dbi, const char *name, uint64_t v)
{
    uint8_t b[8];
    le_put64(b, v);
    MDB_val k = {strlen(name), (void *)name}, d = {8, b};
    return mdb_put(txn, dbi, &k, &d, 0);
}

int store_open(store **out, const char *dir, const store_options *o)
{
    *out = NULL;
    bool ro = o && o->read_only;
    if (!ro && mkdir(dir, 0755) && errno != EEXIST)
        return errno;
    store *s = xcalloc(1, sizeof *s);
    if (o)
        s->opt = *o;
    else
        store_options_default(&s->opt);
    if (s->opt.map_bytes < (1u << 20))
        s->opt.map_bytes = 1u << 20;
    if (s->opt.prune_per_txn < 1)
        s->opt.prune_per_txn = 1;
    int rc = mdb_env_create(&s->env);
    if (rc)
        goto out_free;
    mdb_env_set_maxdbs(s->env, 8);
    mdb_env_set_mapsize(s->env, s->opt.map_bytes);
    rc = mdb_env_open(s->env, dir, (s->opt.no_sync ? MDB_NOSYNC : 0) | (ro ? MDB_RDONLY : 0),
                      0644);
    if (rc)
        goto out_env;
    /* The environment may remember a larger map from an earlier run. */
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    s->map_bytes = info.me_mapsize;
    /* A data file shorter than its last used page (cut short by a copy or a
     * full disk) would fault (SIGBUS) on the first read of a missing page. */
    MDB_stat est;
    mdb_filehandle_t fd;
    struct stat sb;
    if (mdb_env_stat(s->env, &est) == 0 && mdb_env_get_fd(s->env, &fd) == 0 &&
        fstat(fd, &sb) == 0 &&
        ((uint64_t)info.me_last_pgno + 1) * est.ms_psize > (uint64_t)sb.st_size) {
        rc = KZ_ECORRUPT;
        goto out_env;
    }

    MDB_txn *txn;
    rc = mdb_txn_begin(s->env, NULL, ro ? MDB_RDONLY : 0, &txn);
    if (rc)
        goto out_env;
    unsigned create = ro ? 0 : MDB_CREATE;
    if ((rc = mdb_dbi_open(txn, "models", create, &s->models)) ||
        (rc = mdb_dbi_open(txn, "games", create, &s->games)) ||
        (rc = mdb_dbi_open(txn, "positions", create, &s->positions)) ||
        (rc = mdb_dbi_open(txn, "dedup", create, &s->dedup)) ||
        (rc = mdb_dbi_open(txn, "meta", create, &s->meta))) {
        if (rc == MDB_NOTFOUND)
            rc = KZ_ENOTFOUND;
        goto out_txn;
    }
    uint64_t next_model, best;
    if ((rc = s_meta_get_u64(txn, s->meta, "next_game", &s->next_game)) ||
        (rc = s_meta_get_u64(txn, s->meta, "next_pos", &s->next_pos)) ||
        (rc = s_meta_get_u64(txn, s->meta, "first_pos", &s->first_pos)) ||
        (rc = s_meta_get_u64(txn, s->meta, "next_model", &next_model)) ||
        (rc = s_meta_get_u64(txn, s->meta, "best", &best)))
        goto out_txn;
    if (s->first_pos > s->next_pos || next_model > UINT32_MAX || best >= UINT32_MAX) {
        rc = KZ_ECORRUPT;
        goto out_txn;
    }
    s->next_model = next_model ? (uint32_t)next_model : 1;
    s->best = (uint32_t)best;
    rc = mdb_txn_commit(txn);
    if (rc)
        goto out_env;
    *out = s;
    return 0;
out_txn:
    mdb_txn_abort(txn);
out_env:
    mdb_env_close(s->env);
out_free:
    free(s);
    return rc;
}

void store_close(store **sp)
{
    if (!sp || !*sp)
        return;
    mdb_env_close((*sp)->env);
    free(*sp);
    *sp = NULL;
}

/* Doubles the map after MDB_MAP_FULL (no transaction may be open). */
static int s_grow(store *s)
{
    size_t want = s->map_bytes * 2;
    int rc = mdb_env_set_mapsize(s->env, want);
    if (rc)
        return rc;
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    s->map_bytes = info.me_mapsize;
    s->grows++;
    log_info("store: map grown to %zu MiB", s->map_bytes >> 20);
    return 0;
}

/* Begins a transaction (flags 0: a write one, or MDB_RDONLY), adopting a map
 * grown by another process. */
static int s_begin(store *s, unsigned flags, MDB_txn **txn)
{
    int rc = mdb_txn_begin(s->env, NULL, flags, txn);
    if (rc == MDB_MAP_RESIZED) {
        mdb_env_set_mapsize(s->env, 0);
        rc = mdb_txn_begin(s->env, NULL, flags, txn);
    }
    return rc;
}

static int s_begin_write(store *s, MDB_txn **txn) { return s_begin(s, 0, txn); }
static int s_begin_read(store *s, MDB_txn **txn) { return s_begin(s, MDB_RDONLY, txn); }

/* One write transaction: begins it, runs body (which returns 0 or the error
 * that aborts it), commits, and on MDB_MAP_FULL grows the map and runs the
 * whole transaction again (body must be safe to repeat: it only writes
 * inside txn). Counts the committed transaction. 0 or the first error. */
static int s_write(store *s, int (*body)(store *s, MDB_txn *txn, void *ctx), void *ctx)
{
    for (;;) {
        MDB_txn *txn;
        int rc = s_begin_write(s, &txn);
        if (rc)
            return rc;
        rc = body(s, txn, ctx);
        if (rc)
            mdb_txn_abort(txn);
        else if (!(rc = mdb_txn_commit(txn)))
            s->txns++;
        if (rc != MDB_MAP_FULL)
            return rc;
        if ((rc = s_grow(s)))
            return rc;
    }
}

/* --- models -------------------------------------------------------------------- */

const char *store_model_status_name(uint32_t status)
{
    switch (status) {
    case STORE_MODEL_INITIAL: return "initial";
    case STORE_MODEL_QUEUED: return "queued";
    case STORE_MODEL_ARENA: return "arena";
    case STORE_MODEL_PROMOTED: return "promoted";
    case STORE_MODEL_REJECTED: return "rejected";
    case STORE_MODEL_SUPERSEDED: return "superseded";
    default: return "unknown";
    }
}

static void s_model_header(uint8_t *h, const store_model_info *m)
{
    memset(h, 0, MODEL_HEADER_BYTES);
    memcpy(h, MODEL_MAGIC, 4);
    le_put32(h + 4, m->version);
    le_put32(h + 8, m->parent);
    le_put32(h + 12, m->status);
    le_put32(h + 16, m->wins);
    le_put32(h + 20, m->draws);
    le_put32(h + 24, m->losses);
    le_put64(h + 32, (uint64_t)m->created_ms);
    le_put64(h + 40, m->checksum);
    le_put64(h + 48, m->trainer_step);
    le_put64(h + 56, (uint64_t)m->decided_ms);
    le_put64(h + 64, m->blob_len);
}

static int s_parse_model(const MDB_val *d, store_model_info *m)
{
    const uint8_t *h = d->mv_data;
    if (d->mv_size < MODEL_HEADER_BYTES || memcmp(h, MODEL_MAGIC, 4))
        return KZ_ECORRUPT;
    m->version = le_get32(h + 4);
    m->parent = le_get32(h + 8);
    m->status = le_get32(h + 12);
    m->wins = le_get32(h + 16);
    m->draws = le_get32(h + 20);
    m->losses = le_get32(h + 24);
    m->created_ms = (int64_t)le_get64(h + 32);
    m->checksum = le_get64(h + 40);
    m->trainer_step = le_get64(h + 48);
    m->decided_ms = (int64_t)le_get64(h + 56);
    m->blob_len = le_get64(h + 64);
    if (m->blob_len != d->mv_size - MODEL_HEADER_BYTES)
        return KZ_ECORRUPT;
    return 0;
}

/* Writes header + blob for info->version in a transaction, growing the map
 * as needed. blob NULL: keep the stored blob (metadata update). */
typedef struct model_write {
    const void *blob;
    size_t len;
    const store_model_info *info;
    bool is_new;
} model_write;

static int s_write_model_txn(store *s, MDB_txn *txn, void *ctx)
{
    const model_write *w = ctx;
    const store_model_info *info = w->info;
    size_t len = w->len;
    int rc;
    uint8_t kb[4];
    be_put32(kb, info->version);
    MDB_val k = {4, kb};
    const void *src = w->blob;
    if (!src) { /* metadata update: the blob stays */
        MDB_val old;
        rc = mdb_get(txn, s->models, &k, &old);
        if (rc)
            return rc == MDB_NOTFOUND ? KZ_ENOTFOUND : rc;
        store_model_info cur;
        if ((rc = s_parse_model(&old, &cur)))
            return rc;
        len = cur.blob_len;
        /* Copy out: the reserved write below may move the page. */
        uint8_t *copy = malloc(len ? len : 1);
        if (!copy)
            return KZ_ENOMEM;
        memcpy(copy, (const uint8_t *)old.mv_data + MODEL_HEADER_BYTES, len);
        src = copy;
    }
    store_model_info m = *info;
    m.blob_len = len;
    MDB_val d = {MODEL_HEADER_BYTES + len, NULL};
    rc = mdb_put(txn, s->models, &k, &d, MDB_RESERVE);
    if (!rc) {
        s_model_header(d.mv_data, &m);
        if (len)
            memcpy((uint8_t *)d.mv_data + MODEL_HEADER_BYTES, src, len);
    }
    if (!rc && w->is_new)
        rc = s_meta_put_u64(txn, s->meta, "next_model", (uint64_t)info->version + 1);
    if (src != w->blob)
        free((void *)src);
    return rc;
}

static int s_write_model(store *s, const void *blob, size_t len, const store_model_info *info,
                         bool is_new)
{
    model_write w = {blob, len, info, is_new};
    return s_write(s, s_write_model_txn, &w);
}

int store_add_model(store *s, const void *blob, size_t len, store_model_info *info)
{
    info->version = s->next_model;
    info->blob_len = len;
    int rc = s_write_model(s, blob ? blob : "", len, info, true);
    if (!rc)
        s->next_model++;
    return rc;
}

int store_update_model(store *s, const store_model_info *info)
{
    if (info->version == 0 || info->version >= s->next_model)
        return KZ_ENOTFOUND;
    return s_write_model(s, NULL, 0, info, false);
}

/* Begins a read transaction and gets db's value of the numbered key id
 * (big-endian in klen bytes: 4, a model's version; 8, a game's sequence)
 * into *d: 0 with *txn open (the caller aborts it), or the error
 * (KZ_ENOTFOUND: no such key) with no transaction left open. */
static int s_get_one(store *s, MDB_dbi db, uint64_t id, size_t klen, MDB_txn **txn, MDB_val *d)
{
    int rc = s_begin_read(s, txn);
    if (rc)
        return rc;
    uint8_t kb[8];
    if (klen == 4)
        be_put32(kb, (uint32_t)id);
    else
        be_put64(kb, id);
    MDB_val k = {klen, kb};
    rc = mdb_get(*txn, db, &k, d);
    if (rc) {
        mdb_txn_abort(*txn);
        return rc == MDB_NOTFOUND ? KZ_ENOTFOUND : rc;
    }
    return 0;
}

int store_get_model(store *s, uint32_t v, uint8_t **blob, size_t *len, store_model_info *info)
{
    MDB_txn *txn;
    MDB_val d;
    int rc = s_get_one(s, s->models, v, 4, &txn, &d);
    if (rc)
        return rc;
    store_model_info m;
    rc = s_parse_model(&d, &m);
    /* A blob that fails its checksum (a flipped bit on the disk) is never
     * handed out: served, it would stall every worker that loads it. */
    if (!rc && blob &&
        wire_blob_checksum((const uint8_t *)d.mv_data + MODEL_HEADER_BYTES, m.blob_len) !=
            m.checksum)
        rc = KZ_ECORRUPT;
    if (!rc && blob) {
        *blob = malloc(m.blob_len ? m.blob_len : 1);
        if (!*blob) {
            rc = KZ_ENOMEM;
        } else {
            memcpy(*blob, (const uint8_t *)d.mv_data + MODEL_HEADER_BYTES, m.blob_len);
            *len = m.blob_len;
        }
    }
    if (!rc && info)
        *info = m;
    mdb_txn_abort(txn);
    return rc;
}

int store_get_model_info(store *s, uint32_t v, store_model_info *out)
{
    return store_get_model(s, v, NULL, NULL, out);
}

/* A read transaction and a cursor on db: 0, or the error (then nothing is
 * left open). s_cursor_close ends both. */
static int s_cursor_open(store *s, MDB_dbi db, MDB_txn **txn, MDB_cursor **cur)
{
    int rc = s_begin_read(s, txn);
    if (rc)
        return rc;
    rc = mdb_cursor_open(*txn, db, cur);
    if (rc)
        mdb_txn_abort(*txn);
    return rc;
}

static void s_cursor_close(MDB_txn *txn, MDB_cursor *cur)
{
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
}

/* Calls fn on every entry of the models database in a read transaction, in
 * version order, until fn returns true: with its key's version (0: not 4
 * bytes), its value and the header read from it (NULL: unreadable). The
 * transaction's error (begin, or opening the cursor), else 0; *end the
 * walk's own end: 0 (done or stopped) or the cursor's error. */
static int s_walk_models(store *s,
                         bool (*fn)(void *ctx, uint32_t v, const MDB_val *d,
                                    const store_model_info *m),
                         void *ctx, int *end)
{
    *end = 0;
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = s_cursor_open(s, s->models, &txn, &cur);
    if (rc)
        return rc;
    MDB_val k, d;
    store_model_info m;
    for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
         rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT))
        if (fn(ctx, k.mv_size == 4 ? be_get32(k.mv_data) : 0, &d,
               s_parse_model(&d, &m) ? NULL : &m))
            break;
    *end = rc == MDB_NOTFOUND ? 0 : rc;
    s_cursor_close(txn, cur);
    return 0;
}

typedef struct model_check {
    void (*bad)(void *ctx, uint32_t version, const char *why);
    void *ctx;
    uint32_t *n_bad;
} model_check;

static bool s_check_model(void *ctx, uint32_t v, const MDB_val *d, const store_model_info *m)
{
    const model_check *mc = ctx;
    const char *why = NULL;
    if (!m)
        why = "an unreadable header";
    else if (wire_blob_checksum((const uint8_t *)d->mv_data + MODEL_HEADER_BYTES, m->blob_len) !=
             m->checksum)
        why = "a blob that does not match its checksum";
    if (why) {
        ++*mc->n_bad;
        if (mc->bad)
            mc->bad(mc->ctx, v, why);
    }
    return false;
}

int store_check_models(store *s, void (*bad)(void *ctx, uint32_t version, const char *why),
                       void *ctx, uint32_t *n_bad)
{
    *n_bad = 0;
    model_check mc = {bad, ctx, n_bad};
    int end, rc = s_walk_models(s, s_check_model, &mc, &end);
    return rc ? rc : end;
}

typedef struct model_find {
    uint64_t checksum, len;
    uint32_t version;
    bool found;
} model_find;

static bool s_find_model(void *ctx, uint32_t v, const MDB_val *d, const store_model_info *m)
{
    (void)v, (void)d;
    model_find *mf = ctx;
    if (m && m->checksum == mf->checksum && m->blob_len == mf->len) {
        mf->version = m->version;
        mf->found = true;
    }
    return mf->found;
}

int store_find_model(store *s, uint64_t checksum, uint64_t len, uint32_t *version)
{
    model_find mf = {checksum, len, 0, false};
    int end, rc = s_walk_models(s, s_find_model, &mf, &end);
    if (rc)
        return rc;
    if (!mf.found)
        return KZ_ENOTFOUND;
    *version = mf.version;
    return 0;
}

uint32_t store_latest_model(const store *s)
{
    return s->next_model - 1;
}

int store_delete_model(store *s, uint32_t v)
{
    MDB_txn *txn;
    int rc = s_begin_write(s, &txn);
    if (rc)
        return rc;
    uint8_t kb[4];
    be_put32(kb, v);
    MDB_val k = {4, kb};
    rc = mdb_del(txn, s->models, &k, NULL);
    if (rc) {
        mdb_txn_abort(txn);
        return rc == MDB_NOTFOUND ? KZ_ENOTFOUND : rc;
    }
    rc = mdb_txn_commit(txn);
    if (!rc)
        s->txns++;
    return rc;
}

typedef struct model_census {
    uint32_t *count, *versions;
    uint64_t *bytes;
    size_t max;
} model_census;

static bool s_count_model(void *ctx, uint32_t v, const MDB_val *d, const store_model_info *m)
{
    (void)v, (void)d;
    model_census *mc = ctx;
    if (!m)
        return false;
    if (mc->versions && *mc->count < mc->max)
        mc->versions[*mc->count] = m->version;
    (*mc->count)++;
    *mc->bytes += m->blob_len;
    return false;
}

int store_model_census(store *s, uint32_t *count, uint64_t *bytes, uint32_t *versions,
                       size_t max)
{
    *count = 0;
    *bytes = 0;
    model_census mc = {count, versions, bytes, max};
    int end, rc = s_walk_models(s, s_count_model, &mc, &end);
    return rc ? rc : end;
}

uint32_t store_best(const store *s)
{
    return s->best;
}

int store_put_meta(store *s, const char *name, const void *data, size_t len)
{
    if (!name || strlen(name) == 0 || strlen(name) > 63 || len > META_VALUE_MAX)
        return KZ_EINVAL;
    store_raw e = {.key = name, .klen = strlen(name), .val = data, .vlen = len};
    return store_put_raw(s, "meta", &e, 1);
}

int store_get_meta(store *s, const char *name, void *buf, size_t cap, size_t *len)
{
    MDB_txn *txn;
    int rc = s_begin_read(s, &txn);
    if (rc)
        return rc;
    MDB_val k = {strlen(name), (void *)name}, d;
    rc = mdb_get(txn, s->meta, &k, &d);
    if (rc == MDB_NOTFOUND) {
        rc = KZ_ENOTFOUND;
    } else if (!rc) {
        *len = d.mv_size;
        if (d.mv_size > cap)
            rc = KZ_EFULL;
        else
            memcpy(buf, d.mv_data, d.mv_size);
    }
    mdb_txn_abort(txn);
    return rc;
}

static int s_delete_meta_txn(store *s, MDB_txn *txn, void *ctx)
{
    const char *name = ctx;
    MDB_val k = {strlen(name), (void *)name};
    int rc = mdb_del(txn, s->meta, &k, NULL);
    return rc == MDB_NOTFOUND ? KZ_ENOTFOUND : rc;
}

int store_delete_meta(store *s, const char *name)
{
    static const char *const counters[5] = {"next_game", "next_pos", "first_pos", "next_model",
                                            "best"};
    if (!name || strlen(name) == 0 || strlen(name) > 63)
        return KZ_EINVAL;
    for (int i = 0; i < 5; i++)
        if (!strcmp(name, counters[i]))
            return KZ_EINVAL;
    return s_write(s, s_delete_meta_txn, (void *)name);
}

static int s_put_best_txn(store *s, MDB_txn *txn, void *ctx)
{
    return s_meta_put_u64(txn, s->meta, "best", *(const uint64_t *)ctx);
}

int store_set_best(store *s, uint32_t version)
{
    if (version == 0 || version >= s->next_model)
        return KZ_ENOTFOUND;
    uint64_t v = version;
    int rc = s_write(s, s_put_best_txn, &v);
    if (!rc)
        s->best = version;
    return rc;
}

/* --- games and positions ------------------------------------------------------ */

/* A policy list as a position stores it: [n u16 LE][n actions u16 LE][n
 * shares f32 LE] at p; returns the byte after it. */
static uint8_t *s_put_policy(uint8_t *p, const uint32_t *actions, const float *probs, uint32_t n)
{
    le_put16(p, (uint16_t)n);
    p += 2;
    for (uint32_t k = 0; k < n; k++, p += 2)
        le_put16(p, (uint16_t)actions[k]);
    for (uint32_t k = 0; k < n; k++, p += 4)
        le_put_f32(p, probs[k]);
    return p;
}

/* The n actions and shares of a stored policy list (after its count, which
 * the caller read and checked) from p; returns the byte after them. */
static const uint8_t *s_get_policy(const uint8_t *p, uint32_t *actions, float *probs, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++, p += 2)
        actions[k] = le_get16(p);
    for (uint32_t k = 0; k < n; k++, p += 4)
        probs[k] = le_get_f32(p);
    return p;
}

/* Encodes position i of g into s->posbuf; returns its length. The layout:
 * [P u8][packed, P bytes][z i8][n u16 LE][n actions u16 LE][n shares f32 LE]
 * [q f32 LE][aux]; q is absent in positions stored before it existed (and
 * when g->q is NULL and there is no aux block), and reads back as z. The
 * aux block (only with auxiliary targets): [flags u8: AUX_MATERIAL,
 * AUX_OPP][material f32 LE if AUX_MATERIAL][m u16 LE, m actions u16 LE, m
 * shares f32 LE if AUX_OPP]. The length after the policy tells the layouts
 * apart: 0, 4, or at least 5. */
static size_t s_encode_position(store *s, const store_game *g, uint32_t i)
{
    uint8_t *p = s->posbuf;
    uint32_t P = g->packed_bytes;
    uint32_t lo = g->offsets[i], n = g->offsets[i + 1] - lo;
    *p++ = (uint8_t)P;
    memcpy(p, g->packed + (size_t)i * P, P);
    p += P;
    float z = g->z[i];
    *p++ = (uint8_t)(int8_t)(z > 0.5f ? 1 : z < -0.5f ? -1 : 0);
    p = s_put_policy(p, g->actions + lo, g->probs + lo, n);
    bool aux = g->material || g->opp_offsets;
    if (g->q || aux) {
        le_put_f32(p, g->q ? g->q[i] : z);
        p += 4;
    }
    if (aux) {
        *p++ = (uint8_t)((g->material ? AUX_MATERIAL : 0) | (g->opp_offsets ? AUX_OPP : 0));
        if (g->material) {
            le_put_f32(p, g->material[i]);
            p += 4;
        }
        if (g->opp_offsets) {
            uint32_t olo = g->opp_offsets[i], m = g->opp_offsets[i + 1] - olo;
            p = s_put_policy(p, g->opp_actions + olo, g->opp_probs + olo, m);
        }
    }
    return (size_t)(p - s->posbuf);
}

/* Decodes the aux block [p, end) into sample slot j of b. 0 or KZ_ECORRUPT. */
static int s_decode_aux(const uint8_t *p, const uint8_t *end, store_batch *b, size_t j)
{
    uint32_t flags = *p++, off = b->opp_offsets[j];
    if (flags & ~(AUX_MATERIAL | AUX_OPP))
        return KZ_ECORRUPT;
    if (flags & AUX_MATERIAL) {
        if (end - p < 4)
            return KZ_ECORRUPT;
        b->material[j] = le_get_f32(p);
        p += 4;
        if (!(b->material[j] >= -1.0f && b->material[j] <= 1.0f))
            return KZ_ECORRUPT;
        b->material_w[j] = 1.0f;
    }
    if (flags & AUX_OPP) {
        if (end - p < 2)
            return KZ_ECORRUPT;
        uint32_t m = le_get16(p);
        p += 2;
        if (m > GAME_MAX_LEGAL || (size_t)(end - p) != (size_t)m * 6)
            return KZ_ECORRUPT;
        p = s_get_policy(p, b->opp_actions + off, b->opp_probs + off, m);
        b->opp_offsets[j + 1] = off + m;
    }
    return p == end ? 0 : KZ_ECORRUPT;
}

/* Decodes a stored position into sample slot j of b. 0 or KZ_ECORRUPT. */
static int s_decode_position(const MDB_val *d, store_batch *b, size_t j)
{
    const uint8_t *p = d->mv_data, *end = p + d->mv_size;
    if (d->mv_size < 4)
        return KZ_ECORRUPT;
    uint32_t P = *p++;
    if (P == 0 || P > GAME_PACKED_BYTES || (size_t)(end - p) < P + 3)
        return KZ_ECORRUPT;
    if (j > 0 && P != b->packed_bytes)
        return KZ_ECORRUPT;
    b->packed_bytes = P;
    memcpy(b->packed + j * P, p, P);
    p += P;
    b->z[j] = (float)(int8_t)*p++;
    uint32_t n = le_get16(p);
    p += 2;
    size_t rest = (size_t)(end - p);
    if (n > GAME_MAX_LEGAL || (rest != (size_t)n * 6 && rest < (size_t)n * 6 + 4))
        return KZ_ECORRUPT;
    uint32_t off = b->offsets[j];
    p = s_get_policy(p, b->actions + off, b->probs + off, n);
    b->q[j] = b->z[j];
    b->offsets[j + 1] = off + n;
    b->material[j] = 0.0f;
    b->material_w[j] = 0.0f;
    b->opp_offsets[j + 1] = b->opp_offsets[j];
    if (p < end) {
        b->q[j] = le_get_f32(p);
        p += 4;
        if (!(b->q[j] >= -1.0f && b->q[j] <= 1.0f))
            return KZ_ECORRUPT;
        if (p < end)
            return s_decode_aux(p, end, b, j);
    }
    return 0;
}

/* The window's lower end for a given state. */
static uint64_t s_window_lo(const store *s, uint64_t first, uint64_t next)
{
    uint64_t lo = next > s->opt.window ? next - s->opt.window : 0;
    return lo > first ? lo : first;
}

/* Deletes up to prune_per_txn positions below the window inside txn. */
static int s_prune_txn(store *s, MDB_txn *txn, uint64_t *first, uint64_t next, uint64_t *count)
{
    uint64_t target = s_window_lo(s, *first, next);
    uint64_t n = 0;
    while (*first < target && n < s->opt.prune_per_txn) {
        uint8_t kb[8];
        be_put64(kb, *first);
        MDB_val k = {8, kb};
        int rc = mdb_del(txn, s->positions, &k, NULL);
        if (rc && rc != MDB_NOTFOUND)
            return rc;
        (*first)++;
        n++;
    }
    if (count)
        *count = n;
    return 0;
}

static int s_put_counters(store *s, MDB_txn *txn, uint64_t next_game, uint64_t next_pos,
                          uint64_t first_pos)
{
    int rc;
    if ((rc = s_meta_put_u64(txn, s->meta, "next_game", next_game)) ||
        (rc = s_meta_put_u64(txn, s->meta, "next_pos", next_pos)) ||
        (rc = s_meta_put_u64(txn, s->meta, "first_pos", first_pos)))
        return rc;
    return 0;
}

/* One attempt at storing the games; the caller retries after MAP_FULL. */
/* One batch of games (store_put_games_meta), and the counters its
 * transaction leaves, applied once it has committed. */
typedef struct put_games {
    store_game *games;
    size_t n;
    const store_meta *meta;
    size_t n_meta;
    uint64_t next_game, next_pos, first_pos;
} put_games;

static int s_put_games_txn(store *s, MDB_txn *txn, void *ctx)
{
    put_games *p = ctx;
    store_game *games = p->games;
    size_t n = p->n, n_meta = p->n_meta;
    const store_meta *meta = p->meta;
    uint64_t next_game = s->next_game, next_pos = s->next_pos, first_pos = s->first_pos;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        store_game *g = &games[i];
        MDB_val idk = {STORE_GAME_ID_BYTES, (void *)g->game_id}, d;
        rc = mdb_get(txn, s->dedup, &idk, &d);
        if (rc == 0) {
            g->duplicate = true;
            g->sequence = d.mv_size == 8 ? be_get64(d.mv_data) : 0;
            continue;
        }
        if (rc != MDB_NOTFOUND)
            break;
        g->duplicate = false;
        g->sequence = next_game;
        uint8_t kb[8];
        be_put64(kb, next_game);
        MDB_val k = {8, kb}, rec = {g->record_len, (void *)g->record};
        rc = mdb_put(txn, s->games, &k, &rec, MDB_APPEND);
        if (rc)
            break;
        MDB_val seqv = {8, kb};
        rc = mdb_put(txn, s->dedup, &idk, &seqv, MDB_NOOVERWRITE);
        if (rc)
            break;
        next_game++;
        for (uint32_t j = 0; j < g->n_positions; j++) {
            uint8_t pk[8];
            be_put64(pk, next_pos);
            MDB_val key = {8, pk}, val = {s_encode_position(s, g, j), s->posbuf};
            rc = mdb_put(txn, s->positions, &key, &val, MDB_APPEND);
            if (rc)
                break;
            next_pos++;
        }
    }
    if (!rc)
        rc = s_prune_txn(s, txn, &first_pos, next_pos, NULL);
    if (!rc)
        rc = s_put_counters(s, txn, next_game, next_pos, first_pos);
    for (size_t m = 0; m < n_meta && !rc; m++) {
        MDB_val k = {strlen(meta[m].name), (void *)meta[m].name},
                d = {meta[m].len, (void *)meta[m].data};
        rc = mdb_put(txn, s->meta, &k, &d, 0);
    }
    p->next_game = next_game;
    p->next_pos = next_pos;
    p->first_pos = first_pos;
    return rc;
}

int store_put_games(store *s, store_game *games, size_t n)
{
    return store_put_games_meta(s, games, n, NULL, 0);
}

int store_put_games_meta(store *s, store_game *games, size_t n, const store_meta *meta,
                         size_t n_meta)
{
    for (size_t m = 0; m < n_meta; m++)
        if (!meta[m].name || strlen(meta[m].name) == 0 || strlen(meta[m].name) > 63 ||
            meta[m].len > META_VALUE_MAX)
            return KZ_EINVAL;
    for (size_t i = 0; i < n; i++) {
        const store_game *g = &games[i];
        if (!g->game_id || (!g->record && g->record_len) ||
            (g->n_positions && (g->packed_bytes == 0 || g->packed_bytes > GAME_PACKED_BYTES ||
                                !g->packed || !g->z || !g->offsets)))
            return KZ_EINVAL;
        if (g->n_positions && g->opp_offsets && (!g->opp_actions || !g->opp_probs))
            return KZ_EINVAL;
        for (uint32_t j = 0; j < g->n_positions; j++)
            if (g->offsets[j + 1] < g->offsets[j] ||
                g->offsets[j + 1] - g->offsets[j] > GAME_MAX_LEGAL ||
                (g->q && !(g->q[j] >= -1.0f && g->q[j] <= 1.0f)) ||
                (g->material && !(g->material[j] >= -1.0f && g->material[j] <= 1.0f)) ||
                (g->opp_offsets && (g->opp_offsets[j + 1] < g->opp_offsets[j] ||
                                    g->opp_offsets[j + 1] - g->opp_offsets[j] > GAME_MAX_LEGAL)))
                return KZ_EINVAL;
    }
    put_games p = {.games = games, .n = n, .meta = meta, .n_meta = n_meta};
    int rc = s_write(s, s_put_games_txn, &p);
    if (rc)
        return rc;
    s->next_game = p.next_game;
    s->next_pos = p.next_pos;
    s->first_pos = p.first_pos;
    return 0;
}

typedef struct prune_step {
    uint64_t first, count; /* the window's new first position; positions pruned */
} prune_step;

static int s_prune_step_txn(store *s, MDB_txn *txn, void *ctx)
{
    prune_step *p = ctx;
    p->first = s->first_pos;
    p->count = 0;
    int rc = s_prune_txn(s, txn, &p->first, s->next_pos, &p->count);
    return rc ? rc : s_meta_put_u64(txn, s->meta, "first_pos", p->first);
}

int store_prune(store *s, uint64_t *pruned)
{
    if (pruned)
        *pruned = 0;
    if (s->first_pos >= s_window_lo(s, s->first_pos, s->next_pos))
        return 0;
    prune_step p;
    int rc = s_write(s, s_prune_step_txn, &p);
    if (!rc) {
        s->first_pos = p.first;
        if (pruned)
            *pruned = p.count;
    }
    return rc;
}

/* The sequence the dedup table gives game_id, in txn: 0, KZ_ENOTFOUND,
 * KZ_ECORRUPT (not 8 bytes) or LMDB's error. */
static int s_dedup_get(const store *s, MDB_txn *txn, const uint8_t *game_id, uint64_t *sequence)
{
    MDB_val k = {STORE_GAME_ID_BYTES, (void *)game_id}, d;
    int rc = mdb_get(txn, s->dedup, &k, &d);
    if (rc == MDB_NOTFOUND)
        rc = KZ_ENOTFOUND;
    else if (!rc && d.mv_size != 8)
        rc = KZ_ECORRUPT;
    else if (!rc)
        *sequence = be_get64(d.mv_data);
    return rc;
}

int store_find_game(store *s, const uint8_t *game_id, uint64_t *sequence)
{
    MDB_txn *txn;
    int rc = s_begin_read(s, &txn);
    if (rc)
        return rc;
    rc = s_dedup_get(s, txn, game_id, sequence);
    mdb_txn_abort(txn);
    return rc;
}

int store_find_record(store *s, const uint8_t *game_id, const uint8_t *record, size_t len,
                      uint64_t *sequence)
{
    MDB_txn *txn;
    int rc = s_begin_read(s, &txn);
    if (rc)
        return rc;
    uint64_t seq;
    if (s_dedup_get(s, txn, game_id, &seq) == 0) {
        uint8_t kb[8];
        be_put64(kb, seq);
        MDB_val gk = {8, kb}, gd;
        rc = mdb_get(txn, s->games, &gk, &gd);
        if (!rc && gd.mv_size == len && !memcmp(gd.mv_data, record, len))
            *sequence = seq;
        else
            rc = KZ_ENOTFOUND;
    } else {
        rc = KZ_ENOTFOUND;
    }
    mdb_txn_abort(txn);
    return rc;
}

int store_get_game(store *s, uint64_t sequence, uint8_t **record, size_t *len)
{
    MDB_txn *txn;
    MDB_val d;
    int rc = s_get_one(s, s->games, sequence, 8, &txn, &d);
    if (rc)
        return rc;
    *record = malloc(d.mv_size ? d.mv_size : 1);
    if (!*record) {
        rc = KZ_ENOMEM;
    } else {
        memcpy(*record, d.mv_data, d.mv_size);
        *len = d.mv_size;
    }
    mdb_txn_abort(txn);
    return rc;
}

/* The games in key order (desc: from the last key <= from down), fn on each
 * until it returns non-zero. */
static int s_walk_games(store *s, bool desc, uint64_t from,
                        int (*fn)(void *ctx, uint64_t seq, const uint8_t *rec, size_t len),
                        void *ctx)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = s_cursor_open(s, s->games, &txn, &cur);
    if (rc)
        return rc;
    uint8_t key[8];
    be_put64(key, from);
    MDB_val k = {.mv_size = 8, .mv_data = key}, d;
    if (!desc) {
        rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST);
    } else {
        /* The first key >= from; the one before it when it is above from (or
         * none: then the last key). */
        rc = mdb_cursor_get(cur, &k, &d, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND)
            rc = mdb_cursor_get(cur, &k, &d, MDB_LAST);
        else if (!rc && (k.mv_size != 8 || be_get64(k.mv_data) > from))
            rc = mdb_cursor_get(cur, &k, &d, MDB_PREV);
    }
    int out = 0;
    for (; !rc && !out; rc = mdb_cursor_get(cur, &k, &d, desc ? MDB_PREV : MDB_NEXT)) {
        if (k.mv_size != 8) {
            out = KZ_ECORRUPT;
            break;
        }
        out = fn(ctx, be_get64(k.mv_data), d.mv_data, d.mv_size);
    }
    if (!out && rc != MDB_NOTFOUND)
        out = rc;
    s_cursor_close(txn, cur);
    return out;
}

int store_foreach_game(store *s, int (*fn)(void *ctx, uint64_t seq, const uint8_t *rec,
                                           size_t len), void *ctx)
{
    return s_walk_games(s, false, 0, fn, ctx);
}

int store_foreach_game_desc(store *s, uint64_t from,
                            int (*fn)(void *ctx, uint64_t seq, const uint8_t *rec, size_t len),
                            void *ctx)
{
    return s_walk_games(s, true, from, fn, ctx);
}

/* --- sampling ------------------------------------------------------------------- */

store_batch *store_batch_new(size_t cap)
{
    if (cap == 0)
        return NULL;
    store_batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->cap = cap;
    b->packed = malloc(cap * GAME_PACKED_BYTES);
    b->z = malloc(cap * sizeof *b->z);
    b->q = malloc(cap * sizeof *b->q);
    b->offsets = malloc((cap + 1) * sizeof *b->offsets);
    b->actions = malloc(cap * GAME_MAX_LEGAL * sizeof *b->actions);
    b->probs = malloc(cap * GAME_MAX_LEGAL * sizeof *b->probs);
    b->sequences = malloc(cap * sizeof *b->sequences);
    b->material = malloc(cap * sizeof *b->material);
    b->material_w = malloc(cap * sizeof *b->material_w);
    b->opp_offsets = malloc((cap + 1) * sizeof *b->opp_offsets);
    b->opp_actions = malloc(cap * GAME_MAX_LEGAL * sizeof *b->opp_actions);
    b->opp_probs = malloc(cap * GAME_MAX_LEGAL * sizeof *b->opp_probs);
    if (!b->packed || !b->z || !b->q || !b->offsets || !b->actions || !b->probs ||
        !b->sequences || !b->material || !b->material_w || !b->opp_offsets || !b->opp_actions ||
        !b->opp_probs) {
        store_batch_destroy(&b);
        return NULL;
    }
    b->offsets[0] = b->opp_offsets[0] = 0;
    return b;
}

void store_batch_destroy(store_batch **bp)
{
    if (!bp || !*bp)
        return;
    store_batch *b = *bp;
    free_all(b->packed, b->z, b->q, b->offsets, b->actions, b->probs, b->sequences, b->material,
             b->material_w, b->opp_offsets, b->opp_actions, b->opp_probs, b);
    *bp = NULL;
}

/* Uniform in [0, range) without modulo bias; range > 0. */
static uint64_t s_uniform(rng_t *r, uint64_t range)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t x;
    do
        x = rng_next(r);
    while (x >= limit);
    return x % range;
}

/* A withdrawn position (store_withdraw_positions): one zero byte. */
static bool s_withdrawn(const MDB_val *d)
{
    return d->mv_size == 1 && ((const uint8_t *)d->mv_data)[0] == 0;
}

/* Reads b->sequences[0..n); with rng, a withdrawn or damaged one is drawn
 * again from [lo, hi) (64 times at most), without it is KZ_ENOTFOUND or
 * KZ_ECORRUPT. */
static int s_read_positions(store *s, store_batch *b, size_t n, rng_t *rng, uint64_t lo,
                            uint64_t hi)
{
    MDB_txn *txn;
    int rc = s_begin_read(s, &txn);
    if (rc)
        return rc;
    b->offsets[0] = b->opp_offsets[0] = 0;
    b->packed_bytes = 0;
    for (size_t j = 0; j < n && !rc; j++) {
        for (int tries = 0;; tries++) {
            uint8_t kb[8];
            be_put64(kb, b->sequences[j]);
            MDB_val k = {8, kb}, d;
            rc = mdb_get(txn, s->positions, &k, &d);
            if (rc == MDB_NOTFOUND)
                rc = KZ_ENOTFOUND;
            if (!rc && s_withdrawn(&d)) {
                rc = KZ_ENOTFOUND;
                if (rng && tries < 64) {
                    b->sequences[j] = lo + s_uniform(rng, hi - lo);
                    continue;
                }
            }
            if (!rc)
                rc = s_decode_position(&d, b, j);
            /* A damaged position (its page sound, its value not) is drawn
             * again too: one bad value must not fail every batch it falls in. */
            if (rc == KZ_ECORRUPT && rng && tries < 64) {
                s->damaged++;
                if (j == 0)
                    b->packed_bytes = 0; /* it may have set it */
                b->sequences[j] = lo + s_uniform(rng, hi - lo);
                rc = 0;
                continue;
            }
            break;
        }
    }
    mdb_txn_abort(txn);
    b->n = rc ? 0 : n;
    return rc;
}

int store_sample(store *s, rng_t *rng, size_t n, store_batch *b)
{
    if (n > b->cap)
        return KZ_EINVAL;
    uint64_t hi = s->next_pos, lo = s_window_lo(s, s->first_pos, hi);
    b->n = 0;
    b->offsets[0] = b->opp_offsets[0] = 0;
    if (hi <= lo || n == 0)
        return 0;
    for (size_t j = 0; j < n; j++)
        b->sequences[j] = lo + s_uniform(rng, hi - lo);
    return s_read_positions(s, b, n, rng, lo, hi);
}

int store_get_position(store *s, uint64_t sequence, store_batch *b)
{
    b->sequences[0] = sequence;
    return s_read_positions(s, b, 1, NULL, 0, 0);
}

/* The positions store_withdraw_positions is asked for, and how many its
 * transaction withdrew. */
typedef struct withdraw {
    const uint64_t *first;
    const uint32_t *n;
    size_t k;
    uint64_t count;
} withdraw;

static int s_withdraw_txn(store *s, MDB_txn *txn, void *ctx)
{
    withdraw *w = ctx;
    uint64_t lo = s_window_lo(s, s->first_pos, s->next_pos);
    int rc = 0;
    w->count = 0;
    for (size_t i = 0; i < w->k && !rc; i++)
        for (uint64_t q = w->first[i] > lo ? w->first[i] : lo;
             q < w->first[i] + w->n[i] && q < s->next_pos && !rc; q++) {
            uint8_t kb[8];
            be_put64(kb, q);
            MDB_val key = {8, kb}, d, zero = {1, "\0"};
            rc = mdb_get(txn, s->positions, &key, &d);
            if (rc == MDB_NOTFOUND) {
                rc = 0;
                continue;
            }
            if (!rc && !s_withdrawn(&d)) {
                rc = mdb_put(txn, s->positions, &key, &zero, 0);
                w->count++;
            }
        }
    return rc;
}

int store_withdraw_positions(store *s, const uint64_t *first, const uint32_t *n, size_t k,
                             uint64_t *withdrawn)
{
    withdraw w = {.first = first, .n = n, .k = k};
    int rc = s_write(s, s_withdraw_txn, &w);
    *withdrawn = rc ? 0 : w.count;
    return rc;
}

void store_get_stats(store *s, store_stats *out)
{
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(s->env, &info);
    mdb_env_stat(s->env, &st);
    *out = (store_stats){
        .games = s->next_game,
        .positions_total = s->next_pos,
        .first_position = s->first_pos,
        .window_lo = s_window_lo(s, s->first_pos, s->next_pos),
        .window_hi = s->next_pos,
        .models = s->next_model - 1,
        .best = s->best,
        .map_bytes = info.me_mapsize,
        .used_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize,
        .map_grows = s->grows,
        .txns = s->txns,
        .damaged_positions = s->damaged,
    };
}

/* --- for storecheck.h ------------------------------------------------------------- */

struct store_pin {
    MDB_env *env; /* read-only environment */
    MDB_txn *txn; /* the snapshot held */
};

int store_pin_open(const char *dir, store_pin **out, uint64_t *txnid)
{
    *out = NULL;
    *txnid = 0;
    store_pin *p = xcalloc(1, sizeof *p);
    int rc = mdb_env_create(&p->env);
    if (rc) {
        free(p);
        return rc;
    }
    /* mdb_env_open reads the meta pages only (and maps the file); a read
     * transaction reads them again; neither touches a tree. */
    mdb_env_set_maxdbs(p->env, 8);
    rc = mdb_env_open(p->env, dir, MDB_RDONLY, 0644);
    if (!rc)
        rc = mdb_txn_begin(p->env, NULL, MDB_RDONLY, &p->txn);
    if (rc) {
        mdb_env_close(p->env);
        free(p);
        return rc;
    }
    *txnid = (uint64_t)mdb_txn_id(p->txn);
    *out = p;
    return 0;
}

void store_pin_close(store_pin **pp)
{
    if (!pp || !*pp)
        return;
    mdb_txn_abort((*pp)->txn);
    mdb_env_close((*pp)->env);
    free(*pp);
    *pp = NULL;
}

int store_check_position(const void *value, size_t len, store_batch *scratch)
{
    MDB_val d = {len, (void *)value};
    scratch->offsets[0] = 0;
    scratch->opp_offsets[0] = 0;
    if (s_withdrawn(&d))
        return 0;
    return s_decode_position(&d, scratch, 0);
}

int store_check_model(const void *value, size_t len, store_model_info *info,
                      const uint8_t **blob)
{
    MDB_val d = {len, (void *)value};
    int rc = s_parse_model(&d, info);
    if (!rc && blob)
        *blob = (const uint8_t *)value + MODEL_HEADER_BYTES;
    return rc;
}

int store_check_counter(const void *value, size_t len, uint64_t *v)
{
    if (len != 8)
        return KZ_ECORRUPT;
    *v = le_get64(value);
    return 0;
}

int store_check_game_name(const void *value, size_t len)
{
    const uint8_t *p = value;
    if (len == 0 || len > GAME_NAME_CHARS)
        return KZ_ECORRUPT;
    for (size_t i = 0; i < len; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '_' ||
              p[i] == '-'))
            return KZ_ECORRUPT;
    return 0;
}

static int s_dbi_named(store *s, const char *db, MDB_dbi *out)
{
    if (!strcmp(db, "models"))
        *out = s->models;
    else if (!strcmp(db, "games"))
        *out = s->games;
    else if (!strcmp(db, "positions"))
        *out = s->positions;
    else if (!strcmp(db, "dedup"))
        *out = s->dedup;
    else if (!strcmp(db, "meta"))
        *out = s->meta;
    else
        return KZ_EINVAL;
    return 0;
}

typedef struct raw_write {
    MDB_dbi dbi;
    const store_raw *e;
    size_t n;
} raw_write;

static int s_put_raw_txn(store *s, MDB_txn *txn, void *ctx)
{
    (void)s;
    const raw_write *w = ctx;
    int rc = 0;
    for (size_t i = 0; i < w->n && !rc; i++) {
        MDB_val k = {w->e[i].klen, (void *)w->e[i].key}, d = {w->e[i].vlen, (void *)w->e[i].val};
        rc = mdb_put(txn, w->dbi, &k, &d, 0);
    }
    return rc;
}

int store_put_raw(store *s, const char *db, const store_raw *e, size_t n)
{
    MDB_dbi dbi;
    if (s_dbi_named(s, db, &dbi))
        return KZ_EINVAL;
    raw_write w = {dbi, e, n};
    return s_write(s, s_put_raw_txn, &w);
}

static int s_put_counters_txn(store *s, MDB_txn *txn, void *ctx)
{
    const uint64_t *v = ctx;
    static const char *const names[5] = {"next_game", "next_pos", "first_pos", "next_model",
                                         "best"};
    int rc = 0;
    for (int i = 0; i < 5 && !rc; i++)
        rc = s_meta_put_u64(txn, s->meta, names[i], v[i]);
    return rc;
}

int store_set_counters(store *s, uint64_t next_game, uint64_t next_pos, uint64_t first_pos,
                       uint32_t next_model, uint32_t best)
{
    if (first_pos > next_pos)
        return KZ_EINVAL;
    uint64_t v[5] = {next_game, next_pos, first_pos, next_model, best};
    int rc = s_write(s, s_put_counters_txn, v);
    if (rc)
        return rc;
    s->next_game = next_game;
    s->next_pos = next_pos;
    s->first_pos = first_pos;
    s->next_model = next_model ? next_model : 1;
    s->best = best;
    return 0;
}
