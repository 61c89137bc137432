/* modelfile: model files and blobs, framing and validation. See modelfile.h
 * and proto/model.proto. */
#include "nn/modelfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.pb-c.h"
#include "common/util.h"
#include "nn/filehead.h"

static const char s_magic[8] = {'K', 'Z', 'M', 'O', 'D', 'E', 'L', '\0'};
static const filehead_kind s_file = {s_magic, "not a model file (no KZMODEL magic)", "model",
                                     MODELFILE_FORMAT_MIN, MODELFILE_FORMAT,
                                     MODELFILE_FLAG_CHECKPOINT};
static const char *const s_slot_names[2][2] = {
    {"sgd.momentum", NULL},
    {"adam.m", "adam.v"},
};

/* --- Encoding ---------------------------------------------------------------- */

/* Fills a Tensor message that borrows name, shape and data. */
static void s_tensor_msg(Kz__Tensor *msg, const char *name, const model_tensor_info *ti,
                         uint32_t *shape, float *data)
{
    kz__tensor__init(msg);
    msg->name = (char *)name;
    for (int k = 0; k < ti->ndim; k++)
        shape[k] = (uint32_t)ti->shape[k];
    msg->n_shape = (size_t)ti->ndim;
    msg->shape = shape;
    msg->n_data = ti->size;
    msg->data = data;
}

int modelfile_encode(const model *m, bool checkpoint, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    const model_arch *a = model_get_arch(m);
    int nt = model_tensor_count(m);
    int opt = checkpoint ? model_optim_kind(m) : MODEL_OPT_NONE;
    int slots = opt == MODEL_OPT_ADAM ? 2 : opt == MODEL_OPT_SGD ? 1 : 0;
    int rc = KZ_ENOMEM;
    /* Step 1. Canonical copies of every tensor (and optimizer slot). */
    size_t total = 0, trainable = 0;
    int ntrain = 0;
    for (int i = 0; i < nt; i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        total += ti.size;
        if (ti.kind != MODEL_TENSOR_STAT) {
            trainable += ti.size;
            ntrain++;
        }
    }
    size_t nmsg = (size_t)nt + (size_t)slots * ntrain;
    float *data = malloc((total + (size_t)slots * trainable + 1) * sizeof *data);
    Kz__Tensor *msgs = calloc(nmsg + 1, sizeof *msgs);
    Kz__Tensor **ptrs = calloc(nmsg + 1, sizeof *ptrs);
    uint32_t *shapes = calloc((nmsg + 1) * 4, sizeof *shapes);
    char(*names)[MODEL_NAME_MAX + 16] = calloc(nmsg + 1, sizeof *names);
    uint8_t *buf = NULL;
    if (!data || !msgs || !ptrs || !shapes || !names)
        goto out;
    size_t off = 0, k = 0;
    for (int i = 0; i < nt; i++, k++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        model_tensor_read(m, i, data + off);
        s_tensor_msg(&msgs[k], ti.name, &ti, shapes + 4 * k, data + off);
        ptrs[k] = &msgs[k];
        off += ti.size;
    }
    for (int s = 0; s < slots; s++)
        for (int i = 0; i < nt; i++) {
            model_tensor_info ti;
            model_tensor_info_get(m, i, &ti);
            if (ti.kind == MODEL_TENSOR_STAT)
                continue;
            model_optim_read(m, s, i, data + off);
            snprintf(names[k], sizeof names[k], "%s/%s", s_slot_names[opt - 1][s], ti.name);
            s_tensor_msg(&msgs[k], names[k], &ti, shapes + 4 * k, data + off);
            ptrs[k] = &msgs[k];
            off += ti.size;
            k++;
        }
    /* Step 2. The message. */
    Kz__ModelArch arch = KZ__MODEL_ARCH__INIT;
    arch.game = (char *)a->game;
    arch.in_planes = (uint32_t)a->in_planes;
    arch.height = (uint32_t)a->height;
    arch.width = (uint32_t)a->width;
    arch.actions = (uint32_t)a->actions;
    arch.blocks = (uint32_t)a->blocks;
    arch.filters = (uint32_t)a->filters;
    arch.policy_filters = (uint32_t)a->policy_filters;
    arch.value_filters = (uint32_t)a->value_filters;
    arch.value_hidden = (uint32_t)a->value_hidden;
    arch.opp_policy_filters = (uint32_t)a->opp_policy_filters; /* 0 (no head): not written */
    arch.material_filters = (uint32_t)a->material_filters;
    arch.value_wdl = (uint32_t)a->value_wdl; /* 0 (tanh): not written */
    arch.derived_planes = (uint32_t)a->derived_planes; /* 0 (none): not written */
    arch.bn_eps = model_bn_eps(m);
    Kz__OptimizerState os = KZ__OPTIMIZER_STATE__INIT;
    Kz__ModelFile mf = KZ__MODEL_FILE__INIT;
    mf.arch = &arch;
    const model_meta *meta = model_get_meta(m);
    mf.version = meta->version;
    mf.parent_version = meta->parent;
    mf.train_step = meta->step;
    mf.created_ms = meta->created_ms;
    mf.n_tensors = (size_t)nt;
    mf.tensors = ptrs;
    mf.weights_checksum = model_checksum(m);
    if (slots) {
        os.kind = opt == MODEL_OPT_ADAM ? KZ__OPTIMIZER_KIND__OPTIMIZER_ADAM
                                        : KZ__OPTIMIZER_KIND__OPTIMIZER_SGD;
        os.steps = model_optim_steps(m);
        os.n_slots = nmsg - (size_t)nt;
        os.slots = ptrs + nt;
        mf.optimizer = &os;
    }
    /* Step 3. Header and payload. */
    size_t plen = kz__model_file__get_packed_size(&mf);
    buf = malloc(MODELFILE_HEADER_BYTES + plen);
    if (!buf)
        goto out;
    if (kz__model_file__pack(&mf, buf + MODELFILE_HEADER_BYTES) != plen) {
        rc = KZ_EIO;
        goto out;
    }
    filehead_put(buf, &s_file, (uint32_t)modelfile_format_of(a),
                 slots ? MODELFILE_FLAG_CHECKPOINT : 0, plen);
    *out = buf;
    *outlen = MODELFILE_HEADER_BYTES + plen;
    buf = NULL;
    rc = 0;
out:
    free_all(buf, data, msgs, ptrs, shapes, names);
    return rc;
}

int modelfile_format_of(const model_arch *a)
{
    return a->value_wdl || a->derived_planes ? 2 : 1;
}

int modelfile_to_bytes(const model *m, uint8_t **buf, size_t *len)
{
    return modelfile_encode(m, false, buf, len);
}

int modelfile_save(const model *m, const char *path, bool checkpoint)
{
    uint8_t *buf;
    size_t len;
    int rc = modelfile_encode(m, checkpoint, &buf, &len);
    if (rc)
        return rc;
    rc = file_write_atomic(path, buf, len);
    free(buf);
    return rc;
}

/* --- Decoding ------------------------------------------------------------------ */

static void s_shape_str(char *buf, size_t len, const uint32_t *shape, size_t n)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (size_t k = 0; k < n && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, k ? ", %u" : "%u", shape[k]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

/* Checks one tensor message against tensor i's name-independent shape and
 * fills dst (canonical) after checking every value is finite (and >= 0 when
 * nonneg). */
static int s_check_tensor(const Kz__Tensor *t, const model_tensor_info *ti, const char *what,
                          bool nonneg, char *err, size_t errlen)
{
    uint32_t want[4];
    for (int k = 0; k < ti->ndim; k++)
        want[k] = (uint32_t)ti->shape[k];
    bool same = t->n_shape == (size_t)ti->ndim;
    for (int k = 0; same && k < ti->ndim; k++)
        same = t->shape[k] == want[k];
    if (!same) {
        char got[96], need[96];
        s_shape_str(got, sizeof got, t->shape, t->n_shape > 8 ? 8 : t->n_shape);
        s_shape_str(need, sizeof need, want, (size_t)ti->ndim);
        return err_set(err, errlen, KZ_ECORRUPT,
                       "tensor '%s' has shape %s, the architecture needs %s", what, got, need);
    }
    if (t->n_data != ti->size)
        return err_set(err, errlen, KZ_ECORRUPT, "tensor '%s' has %zu values, its shape needs %zu",
                       what, t->n_data, ti->size);
    for (size_t i = 0; i < t->n_data; i++)
        if (!isfinite(t->data[i]) || (nonneg && t->data[i] < 0))
            return err_set(err, errlen, KZ_ECORRUPT, "tensor '%s' holds %s value %g at index %zu",
                           what, isfinite(t->data[i]) ? "a negative" : "a non-finite",
                           (double)t->data[i], i);
    return 0;
}

static bool s_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static int s_arch_from_msg(const Kz__ModelArch *ma, model_arch *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    bool printable = ma->game != NULL;
    for (const char *c = ma->game; printable && *c; c++)
        printable = (unsigned char)*c >= 0x20 && *c != 0x7f;
    if (!printable || strlen(ma->game) >= sizeof a->game)
        return err_set(err, errlen, KZ_ECORRUPT, "invalid architecture: bad game name");
    snprintf(a->game, sizeof a->game, "%s", ma->game);
    if (ma->value_wdl > 1)
        return err_set(err, errlen, KZ_ECORRUPT, "invalid architecture: value_wdl %u (0 or 1)",
                       ma->value_wdl);
    a->value_wdl = (int)ma->value_wdl;
    if (ma->derived_planes > 64)
        return err_set(err, errlen, KZ_ECORRUPT,
                       "invalid architecture: derived_planes %u (0..64)", ma->derived_planes);
    a->derived_planes = (int)ma->derived_planes;
    uint32_t f[11] = {ma->in_planes,      ma->height,           ma->width,
                      ma->actions,        ma->blocks,           ma->filters,
                      ma->policy_filters, ma->value_filters,    ma->value_hidden,
                      ma->opp_policy_filters, ma->material_filters};
    int *dst[11] = {&a->in_planes,      &a->height,         &a->width,
                    &a->actions,        &a->blocks,         &a->filters,
                    &a->policy_filters, &a->value_filters,  &a->value_hidden,
                    &a->opp_policy_filters, &a->material_filters};
    for (int i = 0; i < 11; i++)
        *dst[i] = f[i] > INT_MAX ? INT_MAX : (int)f[i];
    char why[160];
    if (model_arch_check(a, why, sizeof why) != 0)
        return err_set(err, errlen, KZ_ECORRUPT, "invalid %s", why);
    if (!(isfinite(ma->bn_eps) && ma->bn_eps > 0 && ma->bn_eps <= 1))
        return err_set(err, errlen, KZ_ECORRUPT, "invalid batch-norm epsilon %g",
                       (double)ma->bn_eps);
    return 0;
}

/* Fills m's tensors from the message; every tensor exactly once. */
static int s_load_tensors(model *m, const Kz__ModelFile *mf, char *err, size_t errlen)
{
    int nt = model_tensor_count(m);
    bool seen[nt > 0 ? nt : 1];
    memset(seen, 0, sizeof seen);
    for (size_t k = 0; k < mf->n_tensors; k++) {
        const Kz__Tensor *t = mf->tensors[k];
        const char *name = t->name ? t->name : "";
        char shown[84]; /* the name from the file, fit for a one-line message */
        text_printable(shown, sizeof shown, name, SIZE_MAX);
        int i = model_tensor_find(m, name);
        if (i < 0)
            return err_set(err, errlen, KZ_ECORRUPT, "unexpected tensor '%s'", shown);
        if (seen[i])
            return err_set(err, errlen, KZ_ECORRUPT, "tensor '%s' appears twice", shown);
        seen[i] = true;
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        int rc = s_check_tensor(t, &ti, ti.name,
                                ti.kind == MODEL_TENSOR_STAT && s_ends_with(name, "running_var"),
                                err, errlen);
        if (rc)
            return rc;
        model_tensor_write(m, i, t->data);
    }
    for (int i = 0; i < nt; i++)
        if (!seen[i]) {
            model_tensor_info ti;
            model_tensor_info_get(m, i, &ti);
            return err_set(err, errlen, KZ_ECORRUPT, "tensor '%s' is missing", ti.name);
        }
    return 0;
}

static int s_load_optimizer(model *m, const Kz__OptimizerState *os, char *err, size_t errlen)
{
    int kind = os->kind == KZ__OPTIMIZER_KIND__OPTIMIZER_SGD    ? MODEL_OPT_SGD
               : os->kind == KZ__OPTIMIZER_KIND__OPTIMIZER_ADAM ? MODEL_OPT_ADAM
                                                                : -1;
    if (kind < 0)
        return err_set(err, errlen, KZ_ECORRUPT, "unknown optimizer kind %d", (int)os->kind);
    if (model_optim_reset(m, kind, os->steps) != 0)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for the optimizer state");
    int nt = model_tensor_count(m), slots = model_optim_slots(m);
    bool seen[2][nt > 0 ? nt : 1];
    memset(seen, 0, sizeof seen);
    for (size_t k = 0; k < os->n_slots; k++) {
        const Kz__Tensor *t = os->slots[k];
        const char *name = t->name ? t->name : "", *slash = strchr(name, '/');
        char shown[84]; /* the name from the file, fit for a one-line message */
        text_printable(shown, sizeof shown, name, SIZE_MAX);
        int s = -1, i = -1;
        for (int j = 0; slash && j < slots; j++)
            if ((size_t)(slash - name) == strlen(s_slot_names[kind - 1][j]) &&
                !strncmp(name, s_slot_names[kind - 1][j], (size_t)(slash - name)))
                s = j;
        if (s >= 0)
            i = model_tensor_find(m, slash + 1);
        model_tensor_info ti;
        if (i >= 0)
            model_tensor_info_get(m, i, &ti);
        if (s < 0 || i < 0 || ti.kind == MODEL_TENSOR_STAT)
            return err_set(err, errlen, KZ_ECORRUPT, "unexpected optimizer tensor '%s'", shown);
        if (seen[s][i])
            return err_set(err, errlen, KZ_ECORRUPT, "optimizer tensor '%s' appears twice", shown);
        seen[s][i] = true;
        int rc = s_check_tensor(t, &ti, shown, kind == MODEL_OPT_ADAM && s == 1, err, errlen);
        if (rc)
            return rc;
        model_optim_write(m, s, i, t->data);
    }
    for (int s = 0; s < slots; s++)
        for (int i = 0; i < nt; i++) {
            model_tensor_info ti;
            model_tensor_info_get(m, i, &ti);
            if (ti.kind != MODEL_TENSOR_STAT && !seen[s][i])
                return err_set(err, errlen, KZ_ECORRUPT, "optimizer tensor '%s/%s' is missing",
                               s_slot_names[kind - 1][s], ti.name);
        }
    return 0;
}

int modelfile_from_bytes(const uint8_t *buf, size_t len, const game_def *expect_game,
                         model **out, char *err, size_t errlen)
{
    *out = NULL;
    /* Step 1. The header. */
    filehead h;
    int hrc = filehead_check(buf, len, &s_file, &h, err, errlen);
    if (hrc)
        return hrc;
    /* Step 2. The payload. */
    Kz__ModelFile *mf = kz__model_file__unpack(NULL, h.plen, h.payload);
    if (!mf)
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: the payload does not decode");
    model *m = NULL;
    model_arch a;
    int rc;
    if (!mf->arch) {
        rc = err_set(err, errlen, KZ_ECORRUPT, "corrupt: no architecture");
        goto out;
    }
    if ((rc = s_arch_from_msg(mf->arch, &a, err, errlen)) != 0)
        goto out;
    if ((a.value_wdl || a.derived_planes) && h.format < 2) {
        rc = err_set(err, errlen, KZ_ECORRUPT,
                     "corrupt: a %s in a format version %u file",
                     a.value_wdl ? "win/draw/loss value head" : "network with derived planes",
                     h.format);
        goto out;
    }
    if (expect_game) {
        char why[240];
        if ((rc = model_arch_check_game(&a, expect_game, why, sizeof why)) != 0) {
            err_set(err, errlen, rc, "%s", why);
            goto out;
        }
    }
    /* Every float is in the payload: a small file cannot make a huge model. */
    uint64_t floats = model_arch_float_count(&a);
    if (floats * sizeof(float) > h.plen) {
        rc = err_set(err, errlen, KZ_ECORRUPT,
                     "corrupt: the architecture needs %llu floats, the payload has %llu bytes",
                     (unsigned long long)floats, (unsigned long long)h.plen);
        goto out;
    }
    bool ckpt = h.flags & MODELFILE_FLAG_CHECKPOINT;
    if (ckpt != (mf->optimizer != NULL)) {
        rc = err_set(err, errlen, KZ_ECORRUPT, "corrupt: the checkpoint flag says %s",
                     ckpt ? "optimizer state, there is none" : "none, there is optimizer state");
        goto out;
    }
    /* Step 3. Tensors, checksum, optimizer state, metadata. */
    if (!(m = model_new_blank(&a))) {
        rc = err_set(err, errlen, KZ_ENOMEM, "out of memory for the model");
        goto out;
    }
    model_set_bn_eps(m, mf->arch->bn_eps);
    if ((rc = s_load_tensors(m, mf, err, errlen)) != 0)
        goto out;
    uint64_t wsum = model_checksum(m);
    if (wsum != mf->weights_checksum) {
        rc = err_set(err, errlen, KZ_ECORRUPT,
                     "corrupt: weights checksum mismatch (stored %016llx, computed %016llx)",
                     (unsigned long long)mf->weights_checksum, (unsigned long long)wsum);
        goto out;
    }
    if (mf->optimizer && (rc = s_load_optimizer(m, mf->optimizer, err, errlen)) != 0)
        goto out;
    *model_edit_meta(m) = (model_meta){.version = mf->version, .parent = mf->parent_version,
                                       .step = mf->train_step, .created_ms = mf->created_ms};
    rc = 0;
out:
    kz__model_file__free_unpacked(mf, NULL);
    if (rc)
        model_destroy(&m);
    *out = m;
    return rc;
}

int modelfile_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent,
                    uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    model *m;
    int rc = modelfile_from_bytes(buf, len, NULL, &m, err, errlen);
    if (rc)
        return rc;
    model_meta *meta = model_edit_meta(m);
    meta->version = version;
    meta->parent = parent;
    /* A checkpoint stays one: the encoding keeps what the bytes carried. */
    bool ckpt = le_get32(buf + 12) & MODELFILE_FLAG_CHECKPOINT;
    rc = modelfile_encode(m, ckpt, out, outlen);
    model_destroy(&m);
    if (rc)
        return err_set(err, errlen, rc, "out of memory for the stamped model");
    return 0;
}

/* Reads up to n bytes from fd (fewer at its end). The count, or -1 (errno). */
static ssize_t s_read_upto(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int modelfile_load(const char *path, const game_def *expect_game, model **out, char *err,
                   size_t errlen)
{
    *out = NULL;
    int fd;
    int orc = file_open_read(path, &fd); /* a FIFO would block in open() */
    struct stat sb;
    if (orc || fstat(fd, &sb) || S_ISDIR(sb.st_mode)) {
        int e = orc ? orc : S_ISDIR(sb.st_mode) ? EISDIR : errno;
        if (!orc)
            close(fd);
        return err_set(err, errlen, e, "cannot read model file '%s': %s", path, err_str(e));
    }
    /* Step 1. The size and the header, before any bulk read: a file that
     * never ends, or is sparse and huge, fails here. */
    bool regular = S_ISREG(sb.st_mode);
    if (regular && (uint64_t)sb.st_size > MODELFILE_MAX_BYTES) {
        close(fd);
        return err_set(err, errlen, KZ_ECORRUPT, "model file '%s': %lld bytes, larger than any "
                       "model file (at most %u MiB)", path, (long long)sb.st_size,
                       MODELFILE_MAX_BYTES >> 20);
    }
    uint8_t head[MODELFILE_HEADER_BYTES];
    char why[400];
    ssize_t n = s_read_upto(fd, head, sizeof head);
    int rc = 0;
    uint64_t plen = 0;
    if (n < 0)
        rc = err_set(why, sizeof why, errno, "%s", strerror(errno));
    else if (n < (ssize_t)sizeof head || memcmp(head, s_magic, sizeof s_magic))
        rc = modelfile_from_bytes(head, (size_t)n, expect_game, out, why, sizeof why);
    else if ((plen = le_get64(head + 16)) > MODELFILE_MAX_BYTES - MODELFILE_HEADER_BYTES)
        rc = err_set(why, sizeof why, KZ_ECORRUPT, "corrupt: the header announces %llu payload "
                     "bytes, more than any model file", (unsigned long long)plen);
    else if (regular && (uint64_t)sb.st_size < MODELFILE_HEADER_BYTES + plen)
        rc = err_set(why, sizeof why, KZ_ECORRUPT, "truncated: the header announces %llu payload "
                     "bytes, %lld are present", (unsigned long long)plen,
                     (long long)sb.st_size - MODELFILE_HEADER_BYTES);
    else if (regular && (uint64_t)sb.st_size > MODELFILE_HEADER_BYTES + plen)
        rc = err_set(why, sizeof why, KZ_ECORRUPT, "corrupt: %llu unexpected bytes after the "
                     "payload", (unsigned long long)sb.st_size - MODELFILE_HEADER_BYTES - plen);
    if (rc) {
        close(fd);
        return err_set(err, errlen, rc, "model file '%s': %s", path, why);
    }
    /* Step 2. Exactly the announced payload (and, from a stream, one byte
     * more to tell a longer one). */
    size_t want = MODELFILE_HEADER_BYTES + (size_t)plen + (regular ? 0 : 1);
    uint8_t *buf = malloc(want);
    if (!buf) {
        close(fd);
        return err_set(err, errlen, KZ_ENOMEM, "model file '%s': out of memory for %zu bytes",
                       path, want);
    }
    memcpy(buf, head, MODELFILE_HEADER_BYTES);
    n = s_read_upto(fd, buf + MODELFILE_HEADER_BYTES, want - MODELFILE_HEADER_BYTES);
    int e = errno;
    close(fd);
    if (n < 0) {
        free(buf);
        return err_set(err, errlen, e, "cannot read model file '%s': %s", path, strerror(e));
    }
    if (!regular && (size_t)n == want - MODELFILE_HEADER_BYTES)
        rc = err_set(why, sizeof why, KZ_ECORRUPT, "corrupt: more bytes after the payload "
                     "than its header announces");
    else
        rc = modelfile_from_bytes(buf, MODELFILE_HEADER_BYTES + (size_t)n, expect_game, out,
                                  why, sizeof why);
    free(buf);
    if (rc)
        err_set(err, errlen, rc, "model file '%s': %s", path, why);
    return rc;
}
