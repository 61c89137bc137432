/* evaluator: the uniform evaluator and the network's. See evaluator.h. */
#include "nn/evaluator.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/gbdt.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"

static int s_uniform_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    const game_def *g = ctx;
    (void)planes;
    memset(logits, 0, sizeof(float) * (size_t)B * (size_t)g->action_count);
    memset(values, 0, sizeof(float) * (size_t)B);
    return 0;
}

evaluator evaluator_uniform(const game_def *g)
{
    return (evaluator){.run = s_uniform_run, .ctx = (void *)g, .max_batch = EVALUATOR_UNLIMITED};
}

struct evaluator_net {
    model_eval *eval;  /* the folded network, or NULL for trees */
    gbdt_eval *trees;  /* the tree walker (a GBDT model file), or NULL */
    int max_batch;     /* largest batch */
    uint32_t version;  /* the model's version */
    uint64_t checksum; /* the model's weights checksum */
};

/* evaluator_net_new with precision p (or EVALUATOR_PRECISION_DEFAULT). */
static evaluator_net *s_net_new(const model *m, int max_batch, int p)
{
    if (!m || max_batch < 1)
        return NULL;
    evaluator_net *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    model_eval_config c;
    model_eval_config_default(&c);
    if (p != EVALUATOR_PRECISION_DEFAULT)
        c.precision = p;
    e->eval = model_eval_new_config(m, max_batch, &c);
    if (!e->eval) {
        free(e);
        return NULL;
    }
    e->max_batch = max_batch;
    e->version = model_get_meta(m)->version;
    e->checksum = model_checksum(m);
    return e;
}

evaluator_net *evaluator_net_new(const model *m, int max_batch)
{
    return s_net_new(m, max_batch, EVALUATOR_PRECISION_DEFAULT);
}

evaluator_net *evaluator_net_new_precision(const model *m, int max_batch, int precision)
{
    return s_net_new(m, max_batch, precision);
}

const char *evaluator_net_path(const evaluator_net *e)
{
    return e->trees ? "gbdt-walker" : model_eval_path(e->eval);
}

const char *evaluator_net_kind(const evaluator_net *e) { return e->trees ? "gbdt" : "net"; }

/* The evaluator of a GBDT model's bytes. */
static int s_gbdt_from_bytes(const uint8_t *buf, size_t len, const game_def *g, int max_batch,
                             evaluator_net **out, char *err, size_t errlen)
{
    gbdt *m = NULL;
    int rc = gbdt_from_bytes(buf, len, g, &m, err, errlen);
    if (rc)
        return rc;
    evaluator_net *e = max_batch >= 1 ? calloc(1, sizeof *e) : NULL;
    if (e) {
        e->trees = gbdt_eval_new(m, g, max_batch);
        e->max_batch = max_batch;
        e->version = gbdt_get_meta(m)->version;
        e->checksum = gbdt_checksum(m);
    }
    gbdt_destroy(&m);
    if (!e || !e->trees) {
        free(e);
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for an evaluator of batch %d",
                       max_batch);
    }
    *out = e;
    return 0;
}

int evaluator_net_from_bytes(const uint8_t *buf, size_t len, const game_def *g, int max_batch,
                             int precision, evaluator_net **out, char *err, size_t errlen)
{
    *out = NULL;
    if (gbdt_is_file(buf, len))
        return s_gbdt_from_bytes(buf, len, g, max_batch, out, err, errlen);
    model *m = NULL;
    int rc = modelfile_from_bytes(buf, len, g, &m, err, errlen);
    if (rc)
        return rc;
    *out = s_net_new(m, max_batch, precision);
    model_destroy(&m);
    if (!*out)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for an evaluator of batch %d",
                       max_batch);
    return 0;
}

int evaluator_net_load(const char *path, const game_def *g, int max_batch, evaluator_net **out,
                       char *err, size_t errlen)
{
    return evaluator_net_load_precision(path, g, max_batch, EVALUATOR_PRECISION_DEFAULT, out, err,
                                        errlen);
}

/* Whether the file at path starts with a GBDT model file's magic (read:
 * its first bytes only). */
static bool s_file_is_gbdt(const char *path)
{
    uint8_t head[8];
    int fd;
    if (file_open_read(path, &fd)) /* a FIFO would block in open() */
        return false;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n > 0 && gbdt_is_file(head, (size_t)n);
}

int evaluator_net_load_precision(const char *path, const game_def *g, int max_batch,
                                 int precision, evaluator_net **out, char *err, size_t errlen)
{
    *out = NULL;
    /* A GBDT file by its magic; anything else is read as a network's (whose
     * loader names what is wrong with it). */
    if (s_file_is_gbdt(path)) {
        uint8_t *buf = NULL;
        size_t len = 0;
        char why[400];
        int rc = file_read_max(path, GBDT_MAX_BYTES, &buf, &len);
        if (rc)
            err_set(why, sizeof why, rc, "%s", rc == KZ_EFULL ? "larger than any model file"
                                                              : err_str(rc));
        else
            rc = s_gbdt_from_bytes(buf, len, g, max_batch, out, why, sizeof why);
        free(buf);
        if (rc)
            err_set(err, errlen, rc, "model file '%s': %s", path, why);
        return rc;
    }
    model *m = NULL;
    int rc = modelfile_load(path, g, &m, err, errlen);
    if (rc != 0)
        return rc;
    *out = s_net_new(m, max_batch, precision);
    model_destroy(&m);
    if (!*out)
        return err_set(err, errlen, KZ_ENOMEM, "%s: out of memory for an evaluator of batch %d",
                       path, max_batch);
    return 0;
}

void evaluator_net_destroy(evaluator_net **pe)
{
    if (!pe || !*pe)
        return;
    model_eval_destroy(&(*pe)->eval);
    gbdt_eval_destroy(&(*pe)->trees);
    free(*pe);
    *pe = NULL;
}

static int s_net_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    evaluator_net *e = ctx;
    if (B < 0 || B > e->max_batch)
        return KZ_EINVAL;
    if (e->trees)
        gbdt_eval_run(e->trees, planes, B, logits, values);
    else
        model_eval_run(e->eval, planes, B, logits, values);
    return 0;
}

evaluator evaluator_net_get(evaluator_net *e)
{
    return (evaluator){.run = s_net_run, .ctx = e, .max_batch = e->max_batch};
}

uint32_t evaluator_net_version(const evaluator_net *e) { return e->version; }
uint64_t evaluator_net_checksum(const evaluator_net *e) { return e->checksum; }
