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

static void s_info_net(const model *m, modelkind_info *info)
{
    const model_arch *a = model_get_arch(m);
    *info = (modelkind_info){.kind = MODEL_KIND_NET,
                             .version = model_version(m),
                             .parent = model_parent_version(m),
                             .step = model_step(m),
                             .created_ms = model_created_ms(m),
                             .checksum = model_checksum(m)};
    snprintf(info->game, sizeof info->game, "%s", a->game);
    model_arch_describe(a, info->describe, sizeof info->describe);
}

static void s_info_gbdt(const gbdt *m, modelkind_info *info)
{
    *info = (modelkind_info){.kind = MODEL_KIND_GBDT,
                             .version = gbdt_version(m),
                             .parent = gbdt_parent_version(m),
                             .step = gbdt_step(m),
                             .created_ms = gbdt_created_ms(m),
                             .checksum = gbdt_checksum(m)};
    snprintf(info->game, sizeof info->game, "%s", gbdt_game(m));
    gbdt_describe(m, info->describe, sizeof info->describe);
}

int modelkind_check(const uint8_t *buf, size_t len, const game_def *g, modelkind_info *info,
                    char *err, size_t errlen)
{
    if (modelkind_of(buf, len) == MODEL_KIND_GBDT) {
        gbdt *m = NULL;
        int rc = gbdt_from_bytes(buf, len, g, &m, err, errlen);
        if (rc == 0 && info)
            s_info_gbdt(m, info);
        gbdt_destroy(&m);
        return rc;
    }
    model *m = NULL;
    int rc = modelfile_from_bytes(buf, len, g, &m, err, errlen);
    if (rc == 0 && info)
        s_info_net(m, info);
    model_destroy(&m);
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
    if (!orc && gbdt_is_file(head, n)) {
        gbdt *m = NULL;
        int rc = gbdt_load(path, g, &m, err, errlen);
        if (rc)
            return rc;
        if (info)
            s_info_gbdt(m, info);
        rc = gbdt_to_bytes(m, buf, len);
        gbdt_destroy(&m);
        return rc ? err_set(err, errlen, rc, "out of memory for model file '%s'", path) : 0;
    }
    model *m = NULL;
    int rc = modelfile_load(path, g, &m, err, errlen);
    if (rc)
        return rc;
    if (info)
        s_info_net(m, info);
    rc = modelfile_to_bytes(m, buf, len);
    model_destroy(&m);
    return rc ? err_set(err, errlen, rc, "out of memory for model file '%s'", path) : 0;
}

int modelkind_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    if (modelkind_of(buf, len) == MODEL_KIND_GBDT)
        return gbdt_stamp(buf, len, version, parent, out, outlen, err, errlen);
    return modelfile_stamp(buf, len, version, parent, out, outlen, err, errlen);
}
