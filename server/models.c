/* models: the model store bounded, its size, the disk's free space (see
 * features.h, models_tick). */
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
