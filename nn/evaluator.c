/* evaluator: the uniform evaluator and the network's. See evaluator.h. */
#include "nn/evaluator.h"

#include <stdlib.h>
#include <string.h>

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
    model_eval *eval;  /* the folded network */
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
    e->version = model_version(m);
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

const char *evaluator_net_path(const evaluator_net *e) { return model_eval_path(e->eval); }

int evaluator_net_load(const char *path, const game_def *g, int max_batch, evaluator_net **out,
                       char *err, size_t errlen)
{
    return evaluator_net_load_precision(path, g, max_batch, EVALUATOR_PRECISION_DEFAULT, out, err,
                                        errlen);
}

int evaluator_net_load_precision(const char *path, const game_def *g, int max_batch,
                                 int precision, evaluator_net **out, char *err, size_t errlen)
{
    *out = NULL;
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

int evaluator_net_from_bytes(const uint8_t *buf, size_t len, const game_def *g, int max_batch,
                             int precision, evaluator_net **out, char *err, size_t errlen)
{
    *out = NULL;
    model *m = NULL;
    int rc = modelfile_from_bytes(buf, len, g, &m, err, errlen);
    if (rc != 0)
        return rc;
    *out = s_net_new(m, max_batch, precision);
    model_destroy(&m);
    if (!*out)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for an evaluator of batch %d",
                       max_batch);
    return 0;
}

void evaluator_net_destroy(evaluator_net **pe)
{
    if (!pe || !*pe)
        return;
    model_eval_destroy(&(*pe)->eval);
    free(*pe);
    *pe = NULL;
}

static int s_net_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    evaluator_net *e = ctx;
    if (B < 0 || B > e->max_batch)
        return KZ_EINVAL;
    model_eval_run(e->eval, planes, B, logits, values);
    return 0;
}

evaluator evaluator_net_get(evaluator_net *e)
{
    return (evaluator){.run = s_net_run, .ctx = e, .max_batch = e->max_batch};
}

uint32_t evaluator_net_version(const evaluator_net *e) { return e->version; }
uint64_t evaluator_net_checksum(const evaluator_net *e) { return e->checksum; }
