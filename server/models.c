/* models: the model store bounded, its size, the disk's free space (see
 * features.h, models_tick). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/util.h"
#include "data/store.h"
#include "server/features.h"

/* Whether the name is "vN" for version v. */
static bool s_names(const char *name, uint32_t v)
{
    return name[0] == 'v' && strtoul(name + 1, NULL, 10) == v && name[1] >= '0' &&
           name[1] <= '9';
}

/* Whether the retention keeps version v (latest: the newest version). */
static bool s_keep(coord *c, uint32_t v, uint32_t latest)
{
    if (v <= 1 || v == c->best || v == c->rated_best || v == c->gauntlet_v ||
        v == c->ev.va || v == c->ev.vb || v == c->ar.candidate || v == c->ar.best ||
        v == c->queued)
        return true;
    if ((uint64_t)v + (uint64_t)c->cfg.keep_models_last > latest)
        return true;
    if (c->cfg.keep_models_every > 0 && v % (uint32_t)c->cfg.keep_models_every == 0)
        return true;
    for (int j = 0; j < c->gauntlet_n; j++)
        if (s_names(c->gauntlet_opp[j], v))
            return true;
    for (size_t i = 0; i < c->n_history; i++)
        if (c->history[i].version == v)
            return true;
    store_model_info m;
    if (store_get_model_info(c->st, v, &m) == 0 &&
        (m.status == STORE_MODEL_INITIAL ||
         (m.status == STORE_MODEL_PROMOTED && m.wins + m.draws + m.losses > 0)))
        return true; /* a best an arena promoted (gate none promotes without games) */
    return false;
}

/* --- self-play games per version ------------------------------------------------- */

static void s_selfplay_name(char *buf, size_t len, uint32_t v)
{
    snprintf(buf, len, "selfplay/%u", v);
}

/* Room for version v in the table (grown by doubling, so rarely); false
 * without memory (the game goes uncounted). */
static bool s_selfplay_room(coord *c, uint32_t v)
{
    if (v < c->sp_cap)
        return true;
    uint32_t cap = c->sp_cap ? c->sp_cap : 1024;
    while (cap <= v && cap < UINT32_MAX / 2)
        cap *= 2;
    if (cap <= v)
        return false;
    uint32_t *t = realloc(c->sp_games, (size_t)cap * sizeof *t);
    if (!t)
        return false;
    memset(t + c->sp_cap, 0, (size_t)(cap - c->sp_cap) * sizeof *t);
    c->sp_games = t;
    c->sp_cap = cap;
    return true;
}

/* A deleted version's count goes, in memory and in the store. */
static void s_selfplay_forget(coord *c, uint32_t v)
{
    for (size_t i = 0; i < c->n_sp_dirty; i++)
        if (c->sp_dirty[i] == v) {
            c->sp_dirty[i] = c->sp_dirty[--c->n_sp_dirty];
            break;
        }
    if (v < c->sp_cap)
        c->sp_games[v] = 0;
    char name[24];
    s_selfplay_name(name, sizeof name, v);
    int rc = store_delete_meta(c->st, name);
    if (rc && rc != KZ_ENOTFOUND)
        log_warn("models: cannot delete v%u's self-play count: %s", v, err_str(rc));
}

int models_selfplay_load(coord *c)
{
    uint32_t n = 0, got = 0, loaded = 0;
    uint64_t bytes;
    if (store_model_census(c->st, &n, &bytes, NULL, 0) || n == 0)
        return 0;
    uint32_t *vs = xmalloc((size_t)n * sizeof *vs);
    if (store_model_census(c->st, &got, &bytes, vs, n) == 0)
        for (uint32_t i = 0; i < got && i < n; i++) {
            char name[24];
            uint8_t b[8];
            size_t len = 0;
            s_selfplay_name(name, sizeof name, vs[i]);
            int rc = store_get_meta(c->st, name, b, sizeof b, &len);
            if (rc == KZ_ENOTFOUND)
                continue;
            if (rc || len != 8) {
                log_warn("models: v%u's self-play count does not read (%s); counting it from 0",
                         vs[i], rc ? err_str(rc) : "not 8 bytes");
                continue;
            }
            uint64_t games = be_get64(b);
            if (s_selfplay_room(c, vs[i])) {
                c->sp_games[vs[i]] = games > UINT32_MAX ? UINT32_MAX : (uint32_t)games;
                loaded++;
            }
        }
    free(vs);
    if (loaded)
        log_info("models: self-play game counts of %u versions read back", loaded);
    return 0;
}

void models_selfplay_count(coord *c, uint32_t v)
{
    if (v == 0 || !s_selfplay_room(c, v))
        return;
    if (c->sp_games[v] < UINT32_MAX)
        c->sp_games[v]++;
    for (size_t i = 0; i < c->n_sp_dirty; i++)
        if (c->sp_dirty[i] == v)
            return;
    if (c->n_sp_dirty == COORD_SP_DIRTY)
        models_selfplay_save(c); /* many versions at once: rare */
    if (c->n_sp_dirty == 0)
        c->sp_dirty_at = time_now();
    if (c->n_sp_dirty < COORD_SP_DIRTY)
        c->sp_dirty[c->n_sp_dirty++] = v;
}

size_t models_selfplay_meta(coord *c, store_meta *meta)
{
    for (size_t i = 0; i < c->n_sp_dirty; i++) {
        uint32_t v = c->sp_dirty[i];
        s_selfplay_name(c->sp_name[i], sizeof c->sp_name[i], v);
        be_put64(c->sp_value[i], v < c->sp_cap ? c->sp_games[v] : 0);
        meta[i] = (store_meta){c->sp_name[i], c->sp_value[i], 8};
    }
    return c->n_sp_dirty;
}

void models_selfplay_written(coord *c)
{
    c->n_sp_dirty = 0;
}

int models_selfplay_save(coord *c)
{
    if (!c->n_sp_dirty)
        return 0;
    store_meta meta[COORD_SP_DIRTY];
    size_t n = models_selfplay_meta(c, meta);
    int rc = store_put_games_meta(c->st, NULL, 0, meta, n);
    if (rc)
        log_error("models: cannot save the self-play game counts: %s", err_str(rc));
    else
        models_selfplay_written(c);
    return rc;
}

void models_tick(coord *c)
{
    /* Step 1. The retention. */
    uint32_t n = 0;
    uint64_t bytes = 0;
    if (store_model_census(c->st, &n, &bytes, NULL, 0) == 0 && c->cfg.keep_models_last > 0 &&
        n > (uint32_t)c->cfg.keep_models_last) {
        uint32_t *vs = xmalloc((size_t)n * sizeof *vs);
        uint32_t got = 0;
        if (store_model_census(c->st, &got, &bytes, vs, n) == 0) {
            uint32_t latest = store_latest_model(c->st);
            for (uint32_t i = 0; i < got && i < n; i++)
                if (!s_keep(c, vs[i], latest)) {
                    int rc = store_delete_model(c->st, vs[i]);
                    if (rc)
                        log_warn("models: cannot delete v%u: %s", vs[i], err_str(rc));
                    else
                        c->models_deleted++;
                    if (!rc)
                        s_selfplay_forget(c, vs[i]);
                }
        }
        free(vs);
        store_model_census(c->st, &n, &bytes, NULL, 0);
    }
    c->models_count = n;
    c->models_bytes = bytes;
    /* Step 2. The data disk. */
    struct statvfs fs;
    if (statvfs(c->cfg.data_dir, &fs) == 0) {
        c->disk_free_bytes = (uint64_t)fs.f_bavail * fs.f_frsize;
        c->disk_total_bytes = (uint64_t)fs.f_blocks * fs.f_frsize;
        c->disk_low = c->cfg.disk_warn_mb > 0 &&
                      c->disk_free_bytes < (uint64_t)c->cfg.disk_warn_mb << 20;
        double now = time_now();
        if (c->disk_low && (c->disk_warned_at == 0 || now - c->disk_warned_at >= 600)) {
            log_warn("disk: %s has %.0f MB free, below disk_warn_mb = %ld: the store (%u "
                     "models, %.0f MB of them) will stop when it is full",
                     c->cfg.data_dir, (double)c->disk_free_bytes / 1048576.0,
                     c->cfg.disk_warn_mb, c->models_count, (double)c->models_bytes / 1048576.0);
            c->disk_warned_at = now;
        }
    }
}
