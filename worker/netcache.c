/* netcache: the worker's models by version, in memory (with an evaluator
 * each) and on disk (blobs named <version>-<checksum>.kzm, written
 * atomically so that several workers can share the directory). See worker.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/evaluator.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "common/util.h"
#include "net/wire.h"
#include "worker/worker.h"

#define NETCACHE_MAX 8  /* models in memory at once */
#define NETCACHE_BAD 16 /* unusable blobs remembered */

struct netcache {
    const game_def *g;           /* the game */
    char dir[CONFIG_STR_MAX];    /* disk cache, "" none */
    int keep;                    /* files kept on disk */
    int max_batch;               /* evaluator batch size */
    wnet *nets[NETCACHE_MAX];    /* in memory, NULL = free entry */
    uint64_t bad[NETCACHE_BAD];  /* checksums of blobs that are not usable models */
    int n_bad;                   /* entries written (ring) */
    bool forge_model;            /* tests: random networks in place of the models */
};

netcache *netcache_new(const game_def *g, const char *dir, int keep, int max_batch)
{
    if (!g || keep < 1 || max_batch < 1 || (dir && strlen(dir) >= CONFIG_STR_MAX))
        return NULL;
    netcache *nc = xcalloc(1, sizeof *nc);
    nc->g = g;
    snprintf(nc->dir, sizeof nc->dir, "%s", dir ? dir : "");
    nc->keep = keep;
    nc->max_batch = max_batch;
    if (nc->dir[0] && mkdir(nc->dir, 0755) && errno != EEXIST) {
        log_warn("model cache %s: %s; keeping models in memory only", nc->dir, strerror(errno));
        nc->dir[0] = 0;
    }
    return nc;
}

static void s_free_net(wnet **pn)
{
    if (!*pn)
        return;
    evaluator_net_destroy(&(*pn)->net);
    free(*pn);
    *pn = NULL;
}

void netcache_forge_model(netcache *nc) { nc->forge_model = true; }

void netcache_destroy(netcache **pnc)
{
    if (!pnc || !*pnc)
        return;
    netcache *nc = *pnc;
    for (int i = 0; i < NETCACHE_MAX; i++) {
        KZ_CHECK(!nc->nets[i] || nc->nets[i]->dn.refs == 0);
        s_free_net(&nc->nets[i]);
    }
    free(nc);
    *pnc = NULL;
}

void netcache_collect(netcache *nc)
{
    for (int i = 0; i < NETCACHE_MAX; i++)
        if (nc->nets[i] && nc->nets[i]->dn.refs == 0 && !nc->nets[i]->dn.pinned) {
            log_debug("model %u dropped from memory", nc->nets[i]->version);
            s_free_net(&nc->nets[i]);
        }
}

int netcache_count(const netcache *nc)
{
    int n = 0;
    for (int i = 0; i < NETCACHE_MAX; i++)
        n += nc->nets[i] != NULL;
    return n;
}

static bool s_is_bad(const netcache *nc, uint64_t sum)
{
    int n = nc->n_bad < NETCACHE_BAD ? nc->n_bad : NETCACHE_BAD;
    for (int i = 0; i < n; i++)
        if (nc->bad[i] == sum)
            return true;
    return false;
}

static void s_path(const netcache *nc, uint32_t version, uint64_t sum, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%u-%016llx.kzm", nc->dir, (unsigned)version, (unsigned long long)sum);
}

/* Keeps the `keep` newest versions' files of the disk cache. */
static void s_prune(const netcache *nc)
{
    DIR *d = opendir(nc->dir);
    if (!d)
        return;
    enum { MAXF = 4096 };
    uint32_t *versions = xmalloc(MAXF * sizeof *versions);
    char(*names)[64] = xmalloc(MAXF * sizeof *names);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAXF) {
        unsigned v;
        unsigned long long s;
        char tail[8];
        if (strlen(e->d_name) >= 64 ||
            sscanf(e->d_name, "%u-%16llx.%3s", &v, &s, tail) != 3 || strcmp(tail, "kzm"))
            continue;
        versions[n] = v;
        memcpy(names[n], e->d_name, strlen(e->d_name) + 1); /* < 64, checked above */
        n++;
    }
    closedir(d);
    if (n > (size_t)nc->keep) {
        /* The keep-th largest version: files below it go. */
        uint32_t *sorted = xmalloc(n * sizeof *sorted);
        memcpy(sorted, versions, n * sizeof *sorted);
        for (size_t i = 1; i < n; i++) /* insertion sort, descending; n is small */
            for (size_t j = i; j > 0 && sorted[j] > sorted[j - 1]; j--) {
                uint32_t t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        uint32_t limit = sorted[nc->keep - 1];
        for (size_t i = 0; i < n; i++)
            if (versions[i] < limit) {
                char path[CONFIG_STR_MAX + 80];
                snprintf(path, sizeof path, "%s/%s", nc->dir, names[i]);
                if (unlink(path) == 0)
                    log_debug("model cache: removed %s", path);
            }
        free(sorted);
    }
    free(versions);
    free(names);
}

/* Tests (forge = model): the bytes of a random network of the model's shape
 * (seed 0xf04e + version) to load in its place; *out NULL (load the model
 * itself) when the blob does not decode or no network can be made. */
static void s_forge_bytes(const game_def *g, uint32_t version, const uint8_t *blob, size_t len,
                          uint8_t **out, size_t *out_len)
{
    *out = NULL;
    char merr[256];
    model *m = NULL;
    if (modelfile_from_bytes(blob, len, g, &m, merr, sizeof merr) == 0) {
        model *fake = model_new(model_get_arch(m), 0xf04e + version);
        if (fake && modelfile_to_bytes(fake, out, out_len))
            *out = NULL;
        model_destroy(&fake);
    }
    model_destroy(&m);
}

/* Decodes a blob into a new net in a free entry. */
static int s_load(netcache *nc, uint32_t version, uint64_t sum, const uint8_t *blob, size_t len,
                  const char *from, wnet **out, char *err, size_t errlen)
{
    int slot = -1;
    for (int i = 0; i < NETCACHE_MAX && slot < 0; i++)
        if (!nc->nets[i])
            slot = i;
    if (slot < 0) {
        netcache_collect(nc);
        for (int i = 0; i < NETCACHE_MAX && slot < 0; i++)
            if (!nc->nets[i])
                slot = i;
    }
    if (slot < 0) {
        snprintf(err, errlen, "model %u: %d models already in use", (unsigned)version,
                 NETCACHE_MAX);
        return KZ_EFULL;
    }
    char merr[256];
    modelkind_info info;
    int rc = modelkind_check(blob, len, nc->g, &info, merr, sizeof merr);
    if (rc) {
        snprintf(err, errlen, "model %u (%zu bytes) is not a usable model: %s", (unsigned)version,
                 len, merr);
        nc->bad[nc->n_bad++ % NETCACHE_BAD] = sum;
        return KZ_ECORRUPT;
    }
    wnet *n = xcalloc(1, sizeof *n);
    n->version = version;
    n->checksum = sum;
    snprintf(n->arch, sizeof n->arch, "%s", info.describe);
    /* The one way from a model's bytes to an evaluator, of either kind (with
     * forge = model, of the forged bytes). */
    uint8_t *forged = NULL;
    size_t forged_len = 0;
    if (nc->forge_model && info.kind == MODEL_KIND_NET)
        s_forge_bytes(nc->g, version, blob, len, &forged, &forged_len);
    rc = evaluator_net_from_bytes(forged ? forged : blob, forged ? forged_len : len, nc->g,
                                  nc->max_batch, EVALUATOR_PRECISION_DEFAULT, &n->net, merr,
                                  sizeof merr);
    free(forged);
    if (rc) {
        free(n);
        snprintf(err, errlen, "model %u: no evaluator: %s", (unsigned)version,
                 rc == KZ_ENOMEM ? "out of memory" : merr);
        return rc == KZ_ENOMEM ? KZ_ENOMEM : KZ_ECORRUPT;
    }
    n->dn.ev = evaluator_net_get(n->net);
    n->dn.arith = evaluator_net_path(n->net);
    nc->nets[slot] = n;
    log_info("model %u loaded (%s, %s, from %s)", (unsigned)version, n->arch,
             evaluator_net_path(n->net), from);
    *out = n;
    return 0;
}

int netcache_get(netcache *nc, client *c, uint32_t version, uint64_t checksum, wnet **out,
                 char *err, size_t errlen)
{
    *out = NULL;
    /* Step 1. Memory. */
    for (int i = 0; i < NETCACHE_MAX; i++) {
        wnet *n = nc->nets[i];
        if (n && n->version == version && (!checksum || n->checksum == checksum)) {
            *out = n;
            return 0;
        }
    }
    if (checksum && s_is_bad(nc, checksum)) {
        snprintf(err, errlen, "model %u is not a usable model (checked before)",
                 (unsigned)version);
        return KZ_ECORRUPT;
    }
    /* Step 2. Disk, when the checksum says which file. */
    char path[CONFIG_STR_MAX + 40];
    if (nc->dir[0] && checksum) {
        s_path(nc, version, checksum, path, sizeof path);
        uint8_t *blob;
        size_t len;
        if (file_read_max(path, MODELFILE_MAX_BYTES, &blob, &len) == 0) {
            if (wire_blob_checksum(blob, len) == checksum) {
                int rc = s_load(nc, version, checksum, blob, len, "the disk cache", out, err,
                                errlen);
                free(blob);
                return rc;
            }
            log_warn("model cache: %s fails its checksum; fetching again", path);
            free(blob);
        }
    }
    /* Step 3. The coordinator. */
    uint8_t *blob;
    size_t len;
    wire_model_reply info;
    int rc = client_get_model(c, version, checksum, &blob, &len, &info);
    if (rc) {
        snprintf(err, errlen, "model %u: %s", (unsigned)version,
                 rc == KZ_ETIMEOUT || rc == KZ_ECORRUPT || rc == KZ_ENOTFOUND
                     ? client_last_error(c)
                     : err_str(rc));
        return rc;
    }
    uint64_t sum = wire_blob_checksum(blob, len);
    rc = s_load(nc, info.version, sum, blob, len, "the coordinator", out, err, errlen);
    if (rc == 0 && nc->dir[0]) {
        s_path(nc, info.version, sum, path, sizeof path);
        int wrc = file_write_atomic(path, blob, len);
        if (wrc)
            log_warn("model cache: cannot write %s: %s", path, err_str(wrc));
        else
            s_prune(nc);
    }
    free(blob);
    return rc;
}
