/* modelkind: either kind of model file by its magic. See modelkind.h. */
#include "nn/modelkind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "nn/gbdt.h"
#include "nn/model.h"
#include "nn/modelfile.h"

model_kind modelkind_of(const uint8_t *buf, size_t len)
{
    return gbdt_is_file(buf, len) ? MODEL_KIND_GBDT : MODEL_KIND_NET;
}

const char *modelkind_name(model_kind k)
{
    return k == MODEL_KIND_NET ? "net" : k == MODEL_KIND_GBDT ? "gbdt" : NULL;
}

int modelkind_parse(const char *s, model_kind *k)
{
    static const char *const names[] = {[MODEL_KIND_NET] = "net", [MODEL_KIND_GBDT] = "gbdt"};
    int i;
    if (name_parse(s, names, 2, &i))
        return KZ_EINVAL;
    *k = (model_kind)i;
    return 0;
}

/* A model of either kind as loaded: one of the two is set. */
typedef struct s_loaded {
    model *net;  /* a network (owned) */
    gbdt *trees; /* gradient-boosted trees (owned) */
} s_loaded;

static void s_info(const s_loaded *l, modelkind_info *info)
{
    const model *n = l->net;
    const gbdt *t = l->trees;
    *info = (modelkind_info){.kind = t ? MODEL_KIND_GBDT : MODEL_KIND_NET,
                             .meta = *(t ? gbdt_get_meta(t) : model_get_meta(n)),
                             .checksum = t ? gbdt_checksum(t) : model_checksum(n)};
    snprintf(info->game, sizeof info->game, "%s", t ? gbdt_game(t) : model_get_arch(n)->game);
    if (t)
        gbdt_describe(t, info->describe, sizeof info->describe);
    else
        model_arch_describe(model_get_arch(n), info->describe, sizeof info->describe);
}

static void s_loaded_free(s_loaded *l)
{
    model_destroy(&l->net);
    gbdt_destroy(&l->trees);
}

int modelkind_check(const uint8_t *buf, size_t len, const game_def *g, modelkind_info *info,
                    char *err, size_t errlen)
{
    s_loaded l = {0};
    int rc = modelkind_of(buf, len) == MODEL_KIND_GBDT
                 ? gbdt_from_bytes(buf, len, g, &l.trees, err, errlen)
                 : modelfile_from_bytes(buf, len, g, &l.net, err, errlen);
    if (rc == 0 && info)
        s_info(&l, info);
    s_loaded_free(&l);
    return rc;
}

int modelkind_read_file(const char *path, const game_def *g, uint8_t **buf, size_t *len,
                        modelkind_info *info, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    uint8_t head[8];
    int fd;
    int orc = file_open_read(path, &fd); /* a FIFO would block in open() */
    ssize_t got = orc ? 0 : read(fd, head, sizeof head);
    if (!orc)
        close(fd);
    if (orc == KZ_ENOTREG)
        return err_set(err, errlen, orc, "cannot read model file '%s': %s", path, err_str(orc));
    size_t n = got > 0 ? (size_t)got : 0;
    s_loaded l = {0};
    int rc = !orc && gbdt_is_file(head, n) ? gbdt_load(path, g, &l.trees, err, errlen)
                                           : modelfile_load(path, g, &l.net, err, errlen);
    if (rc)
        return rc;
    if (info)
        s_info(&l, info);
    rc = l.trees ? gbdt_to_bytes(l.trees, buf, len) : modelfile_to_bytes(l.net, buf, len);
    s_loaded_free(&l);
    return rc ? err_set(err, errlen, rc, "out of memory for model file '%s'", path) : 0;
}

int modelkind_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    if (modelkind_of(buf, len) == MODEL_KIND_GBDT)
        return gbdt_stamp(buf, len, version, parent, out, outlen, err, errlen);
    return modelfile_stamp(buf, len, version, parent, out, outlen, err, errlen);
}
