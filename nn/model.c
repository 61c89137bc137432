/* model: the network's weights, tensors and metadata, and the naive
 * reference forward pass. The fast evaluator is in model_eval.c, training in
 * model_train.c. See model.h. */
#include "nn/model.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layer.h"
#include "nn/model_internal.h"
#include "common/util.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "model files assume little-endian");

/* Threads of an evaluator made now: model_set_threads' count, or (0) OpenBLAS's. */
static int s_threads;

int model_threads(void)
{
    return s_threads > 0 ? s_threads : openblas_get_num_threads();
}

float *model_alloc_floats(size_t n, bool zero)
{
    void *p = NULL;
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, bytes) != 0)
        return NULL;
    if (zero)
        memset(p, 0, bytes);
    return p;
}

/* --- Architecture ---------------------------------------------------------- */

void model_arch_default(model_arch *a, const game_def *g)
{
    memset(a, 0, sizeof *a);
    snprintf(a->game, sizeof a->game, "%s", g->name);
    a->in_planes = g->planes;
    a->height = g->height;
    a->width = g->width;
    a->actions = g->action_count;
    a->blocks = 6;
    a->filters = 64;
    a->policy_filters = 2;
    a->value_filters = 1;
    a->value_hidden = 64;
}

void model_input_derive(const model_arch *a, const game_def *g, const float *x, int B,
                        float *out)
{
    size_t HW = (size_t)a->height * a->width, own = (size_t)model_arch_game_planes(a) * HW;
    size_t all = (size_t)a->in_planes * HW;
    for (int b = 0; b < B; b++) {
        memcpy(out + b * all, x + b * own, own * sizeof *out);
        if (a->derived_planes)
            g->derive_planes(x + b * own, out + b * all + own);
    }
}

/* Floats of the trainable tensors and of the running statistics. */
static void s_arch_counts(const model_arch *a, uint64_t *params, uint64_t *stats)
{
    uint64_t C = (uint64_t)a->in_planes, HW = (uint64_t)a->height * (uint64_t)a->width;
    uint64_t F = (uint64_t)a->filters, Pf = (uint64_t)a->policy_filters;
    uint64_t Vf = (uint64_t)a->value_filters, Vh = (uint64_t)a->value_hidden;
    uint64_t A = (uint64_t)a->actions, nb = (uint64_t)a->blocks;
    uint64_t Of = (uint64_t)(a->opp_policy_filters > 0 ? a->opp_policy_filters : 0);
    uint64_t Mf = (uint64_t)(a->material_filters > 0 ? a->material_filters : 0);
    *params = 9 * C * F + 2 * F + nb * 2 * (9 * F * F + 2 * F) + F * Pf + 2 * Pf +
              Pf * HW * A + A + F * Vf + 2 * Vf + Vf * HW * Vh + Vh + Vh + 1;
    if (a->value_wdl)
        *params += 2 * Vh + 2; /* value.fc2: 3 outputs, not 1 */
    *stats = 2 * F + nb * 4 * F + 2 * Pf + 2 * Vf;
    if (Of) {
        *params += F * Of + 2 * Of + Of * HW * A + A;
        *stats += 2 * Of;
    }
    if (Mf) {
        *params += F * Mf + 2 * Mf + Mf * HW + 1;
        *stats += 2 * Mf;
    }
}

static int s_range(char *err, size_t errlen, const char *what, int v, int lo, int hi)
{
    if (v >= lo && v <= hi)
        return 0;
    return err_set(err, errlen, KZ_EINVAL, "architecture: %s is %d, must be %d..%d", what, v, lo,
                   hi);
}

int model_arch_check(const model_arch *a, char *err, size_t errlen)
{
    if (!memchr(a->game, 0, sizeof a->game) || !a->game[0]) {
        snprintf(err, errlen, "architecture: the game name is empty or too long");
        return KZ_EINVAL;
    }
    int rc;
    if ((rc = s_range(err, errlen, "in_planes", a->in_planes, 1, 256)) ||
        (rc = s_range(err, errlen, "height", a->height, 1, 32)) ||
        (rc = s_range(err, errlen, "width", a->width, 1, 32)) ||
        (rc = s_range(err, errlen, "actions", a->actions, 1, 65536)) ||
        (rc = s_range(err, errlen, "blocks", a->blocks, 0, 128)) ||
        (rc = s_range(err, errlen, "filters", a->filters, 1, 1024)) ||
        (rc = s_range(err, errlen, "policy_filters", a->policy_filters, 1, 64)) ||
        (rc = s_range(err, errlen, "value_filters", a->value_filters, 1, 64)) ||
        (rc = s_range(err, errlen, "value_hidden", a->value_hidden, 1, 4096)) ||
        (rc = s_range(err, errlen, "opp_policy_filters", a->opp_policy_filters, 0, 64)) ||
        (rc = s_range(err, errlen, "material_filters", a->material_filters, 0, 64)) ||
        (rc = s_range(err, errlen, "value_wdl", a->value_wdl, 0, 1)) ||
        (rc = s_range(err, errlen, "derived_planes", a->derived_planes, 0,
                      a->in_planes - 1 < 64 ? a->in_planes - 1 : 64)))
        return rc;
    uint64_t p, s;
    s_arch_counts(a, &p, &s);
    if (p + s > MODEL_MAX_PARAMS) {
        snprintf(err, errlen, "architecture: %llu floats, more than the limit %u",
                 (unsigned long long)(p + s), MODEL_MAX_PARAMS);
        return KZ_EINVAL;
    }
    return 0;
}

int model_arch_check_game(const model_arch *a, const game_def *g, char *err, size_t errlen)
{
    if (strcmp(a->game, g->name) != 0) {
        snprintf(err, errlen, "the model is for game '%s', not '%s'", a->game, g->name);
        return KZ_EMISMATCH;
    }
    if (a->derived_planes && a->derived_planes != g->derived_planes) {
        snprintf(err, errlen,
                 "architecture mismatch: the model derives %d input planes; game '%s' has %d",
                 a->derived_planes, g->name, g->derived_planes);
        return KZ_EMISMATCH;
    }
    if (model_arch_game_planes(a) != g->planes || a->height != g->height ||
        a->width != g->width || a->actions != g->action_count) {
        snprintf(err, errlen,
                 "architecture mismatch: the model takes %dx%dx%d planes and gives %d logits; "
                 "game '%s' has %dx%dx%d and %d actions",
                 a->in_planes, a->height, a->width, a->actions, g->name, g->planes, g->height,
                 g->width, g->action_count);
        return KZ_EMISMATCH;
    }
    return 0;
}

bool model_arch_equal(const model_arch *a, const model_arch *b)
{
    return !strncmp(a->game, b->game, sizeof a->game) && a->in_planes == b->in_planes &&
           a->height == b->height && a->width == b->width && a->actions == b->actions &&
           a->blocks == b->blocks && a->filters == b->filters &&
           a->policy_filters == b->policy_filters && a->value_filters == b->value_filters &&
           a->value_hidden == b->value_hidden &&
           a->opp_policy_filters == b->opp_policy_filters &&
           a->material_filters == b->material_filters && a->value_wdl == b->value_wdl &&
           a->derived_planes == b->derived_planes;
}

void model_arch_describe(const model_arch *a, char *buf, size_t len)
{
    int n = snprintf(buf, len,
                     "%s: %d blocks x %d filters, input %dx%dx%d, %d actions, heads %d/%d/%d",
                     a->game, a->blocks, a->filters, a->in_planes, a->height, a->width,
                     a->actions, a->policy_filters, a->value_filters, a->value_hidden);
    if (n >= 0 && (size_t)n < len && a->value_wdl) {
        int k = snprintf(buf + n, len - (size_t)n, ", value wdl");
        n = k < 0 ? k : n + k;
    }
    if (n >= 0 && (size_t)n < len && a->derived_planes) {
        int k = snprintf(buf + n, len - (size_t)n, ", %d derived planes", a->derived_planes);
        n = k < 0 ? k : n + k;
    }
    if (n < 0 || (size_t)n >= len || (!a->opp_policy_filters && !a->material_filters))
        return;
    if (a->opp_policy_filters && a->material_filters)
        snprintf(buf + n, len - (size_t)n, ", aux heads opponent policy %d, material %d",
                 a->opp_policy_filters, a->material_filters);
    else if (a->opp_policy_filters)
        snprintf(buf + n, len - (size_t)n, ", aux head opponent policy %d",
                 a->opp_policy_filters);
    else
        snprintf(buf + n, len - (size_t)n, ", aux head material %d", a->material_filters);
}

size_t model_arch_param_count(const model_arch *a)
{
    uint64_t p, s;
    s_arch_counts(a, &p, &s);
    return (size_t)p;
}

size_t model_arch_float_count(const model_arch *a)
{
    uint64_t p, s;
    s_arch_counts(a, &p, &s);
    return (size_t)(p + s);
}

double model_arch_forward_flops(const model_arch *a)
{
    double C = a->in_planes, HW = (double)a->height * a->width, F = a->filters;
    double Pf = a->policy_filters, Vf = a->value_filters, Vh = a->value_hidden;
    double convs = 9 * C * F + a->blocks * 2.0 * 9 * F * F + F * (Pf + Vf);
    return 2.0 * (HW * convs + Pf * HW * a->actions + Vf * HW * Vh + Vh * (a->value_wdl ? 3 : 1));
}

/* --- Tensors ---------------------------------------------------------------- */

/* Appends a tensor; returns its index. */
static int s_add(model *m, int kind, int layout, int la, int lb, int ndim, int d0, int d1, int d2,
                 int d3, const char *fmt, const char *prefix)
{
    model_tensor *t = &m->t[m->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, fmt, prefix);
    t->ndim = ndim;
    int d[4] = {d0, d1, d2, d3};
    t->size = 1;
    for (int k = 0; k < ndim; k++) {
        t->shape[k] = d[k];
        t->size *= (size_t)d[k];
    }
    t->kind = kind;
    t->layout = layout;
    t->la = la;
    t->lb = lb;
    if (kind == MODEL_TENSOR_STAT) {
        t->off = m->n_stats;
        m->n_stats += t->size;
    } else {
        t->off = m->n_params;
        m->n_params += t->size;
    }
    return m->n_tensors++;
}

static model_convbn s_add_convbn(model *m, const char *prefix, const char *conv, const char *bn,
                                 int cin, int cout, int k)
{
    model_convbn l = {.cin = cin, .cout = cout};
    char p[40], q[40];
    snprintf(p, sizeof p, "%s.%s", prefix, conv);
    snprintf(q, sizeof q, "%s.%s", prefix, bn);
    l.w = s_add(m, MODEL_TENSOR_WEIGHT, k == 3 ? MODEL_LAYOUT_CONV3 : MODEL_LAYOUT_TRANS, cin, cout,
                4, cout, cin, k, k, "%s.weight", p);
    l.gamma = s_add(m, MODEL_TENSOR_PARAM, MODEL_LAYOUT_PLAIN, 0, 0, 1, cout, 0, 0, 0,
                    "%s.weight", q);
    l.beta = s_add(m, MODEL_TENSOR_PARAM, MODEL_LAYOUT_PLAIN, 0, 0, 1, cout, 0, 0, 0, "%s.bias",
                   q);
    l.mean = s_add(m, MODEL_TENSOR_STAT, MODEL_LAYOUT_PLAIN, 0, 0, 1, cout, 0, 0, 0,
                   "%s.running_mean", q);
    l.var = s_add(m, MODEL_TENSOR_STAT, MODEL_LAYOUT_PLAIN, 0, 0, 1, cout, 0, 0, 0,
                  "%s.running_var", q);
    return l;
}

static model_fc s_add_fc(model *m, const char *name, int in, int out)
{
    model_fc l = {.in = in, .out = out};
    l.w = s_add(m, MODEL_TENSOR_WEIGHT, MODEL_LAYOUT_TRANS, in, out, 2, out, in, 0, 0,
                "%s.weight", name);
    l.b = s_add(m, MODEL_TENSOR_PARAM, MODEL_LAYOUT_PLAIN, 0, 0, 1, out, 0, 0, 0, "%s.bias", name);
    return l;
}

/* Builds the tensor table and allocates the (uninitialised) data. */
static model *s_alloc(const model_arch *a)
{
    model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->arch = *a;
    m->bn_eps = MODEL_BN_EPS;
    m->meta.created_ms = time_wall_ms();
    int nb = a->blocks, F = a->filters, HW = a->height * a->width;
    m->t = calloc((size_t)(5 * (4 + 2 * nb) + 32), sizeof *m->t);
    m->convs = calloc((size_t)(2 * nb + 1), sizeof *m->convs);
    if (!m->t || !m->convs)
        goto fail;
    m->stem = s_add_convbn(m, "stem", "conv", "bn", a->in_planes, F, 3);
    for (int i = 0; i < nb; i++) {
        char p[32];
        snprintf(p, sizeof p, "blocks.%d", i);
        m->convs[2 * i] = s_add_convbn(m, p, "conv1", "bn1", F, F, 3);
        m->convs[2 * i + 1] = s_add_convbn(m, p, "conv2", "bn2", F, F, 3);
    }
    m->pconv = s_add_convbn(m, "policy", "conv", "bn", F, a->policy_filters, 1);
    m->pfc = s_add_fc(m, "policy.fc", a->policy_filters * HW, a->actions);
    m->vconv = s_add_convbn(m, "value", "conv", "bn", F, a->value_filters, 1);
    m->vfc1 = s_add_fc(m, "value.fc1", a->value_filters * HW, a->value_hidden);
    m->vfc2 = s_add_fc(m, "value.fc2", a->value_hidden, a->value_wdl ? 3 : 1);
    /* The auxiliary heads come last: a model without them keeps the tensor
     * table (and so the files and checksums) it had before they existed. */
    if (a->opp_policy_filters) {
        m->oconv = s_add_convbn(m, "opp_policy", "conv", "bn", F, a->opp_policy_filters, 1);
        m->ofc = s_add_fc(m, "opp_policy.fc", a->opp_policy_filters * HW, a->actions);
    }
    if (a->material_filters) {
        m->mconv = s_add_convbn(m, "material", "conv", "bn", F, a->material_filters, 1);
        m->mfc = s_add_fc(m, "material.fc", a->material_filters * HW, 1);
    }
    m->params = model_alloc_floats(m->n_params, false);
    m->stats = model_alloc_floats(m->n_stats, false);
    if (!m->params || !m->stats)
        goto fail;
    return m;
fail:
    model_destroy(&m);
    return NULL;
}

/* Fills a conv+BN layer with He-normal weights and identity batch norm. */
static void s_init_convbn(model *m, const model_convbn *l, rng_t *r)
{
    const model_tensor *t = &m->t[l->w];
    double sd = sqrt(2.0 / (double)(t->size / (size_t)l->cout));
    float *w = model_tdata(m, l->w);
    for (size_t i = 0; i < t->size; i++)
        w[i] = (float)(rng_normal(r) * sd);
    for (int f = 0; f < l->cout; f++) {
        model_tdata(m, l->gamma)[f] = 1.0f;
        model_tdata(m, l->beta)[f] = 0.0f;
        model_tdata(m, l->mean)[f] = 0.0f;
        model_tdata(m, l->var)[f] = 1.0f;
    }
}

static void s_init_fc(model *m, const model_fc *l, double gain, rng_t *r)
{
    double sd = sqrt(gain / l->in);
    float *w = model_tdata(m, l->w);
    for (size_t i = 0; i < (size_t)l->in * l->out; i++)
        w[i] = (float)(rng_normal(r) * sd);
    memset(model_tdata(m, l->b), 0, (size_t)l->out * sizeof(float));
}

model *model_new(const model_arch *a, uint64_t seed)
{
    char err[160];
    if (model_arch_check(a, err, sizeof err) != 0) {
        log_error("model_new: %s", err);
        return NULL;
    }
    model *m = s_alloc(a);
    if (!m)
        return NULL;
    rng_t r;
    rng_seed(&r, seed);
    s_init_convbn(m, &m->stem, &r);
    for (int i = 0; i < 2 * a->blocks; i++)
        s_init_convbn(m, &m->convs[i], &r);
    s_init_convbn(m, &m->pconv, &r);
    s_init_fc(m, &m->pfc, 1.0, &r);
    s_init_convbn(m, &m->vconv, &r);
    s_init_fc(m, &m->vfc1, 2.0, &r);
    s_init_fc(m, &m->vfc2, 1.0, &r);
    /* Drawn after the rest: the same seed gives the same trunk and main
     * heads with or without the auxiliary ones. */
    if (a->opp_policy_filters) {
        s_init_convbn(m, &m->oconv, &r);
        s_init_fc(m, &m->ofc, 1.0, &r);
    }
    if (a->material_filters) {
        s_init_convbn(m, &m->mconv, &r);
        s_init_fc(m, &m->mfc, 1.0, &r);
    }
    return m;
}

model *model_new_blank(const model_arch *a)
{
    char err[160];
    if (model_arch_check(a, err, sizeof err) != 0) {
        log_error("model_new_blank: %s", err);
        return NULL;
    }
    model *m = s_alloc(a);
    if (m) {
        memset(m->params, 0, m->n_params * sizeof(float));
        memset(m->stats, 0, m->n_stats * sizeof(float));
    }
    return m;
}

model *model_clone(const model *src)
{
    model *m = s_alloc(&src->arch);
    if (!m)
        return NULL;
    m->bn_eps = src->bn_eps;
    m->meta = src->meta;
    memcpy(m->params, src->params, m->n_params * sizeof(float));
    memcpy(m->stats, src->stats, m->n_stats * sizeof(float));
    if (src->opt_kind != MODEL_OPT_NONE) {
        if (model_optim_reset(m, src->opt_kind, src->opt_steps) != 0) {
            model_destroy(&m);
            return NULL;
        }
        for (int s = 0; s < model_optim_slots(m); s++)
            memcpy(m->opt[s], src->opt[s], m->n_params * sizeof(float));
    }
    return m;
}

int model_blend(model *dst, const model *src, float w)
{
    if (!model_arch_equal(&dst->arch, &src->arch))
        return KZ_EMISMATCH;
    if (!(w >= 0.0f && w <= 1.0f))
        return KZ_EINVAL;
    float k = 1.0f - w;
    for (size_t i = 0; i < dst->n_params; i++)
        dst->params[i] = k * dst->params[i] + w * src->params[i];
    for (size_t i = 0; i < dst->n_stats; i++)
        dst->stats[i] = k * dst->stats[i] + w * src->stats[i];
    return 0;
}

void model_destroy(model **pm)
{
    model *m = *pm;
    if (!m)
        return;
    free_all(m->t, m->convs, m->params, m->stats, m->opt[0], m->opt[1], m);
    *pm = NULL;
}

const model_arch *model_get_arch(const model *m) { return &m->arch; }
const model_meta *model_get_meta(const model *m) { return &m->meta; }
model_meta *model_edit_meta(model *m) { return &m->meta; }
float model_bn_eps(const model *m) { return m->bn_eps; }
void model_set_bn_eps(model *m, float eps) { m->bn_eps = eps; }

int model_tensor_count(const model *m) { return m->n_tensors; }

void model_tensor_info_get(const model *m, int i, model_tensor_info *out)
{
    assert(i >= 0 && i < m->n_tensors);
    const model_tensor *t = &m->t[i];
    out->name = t->name;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof out->shape);
    out->size = t->size;
    out->kind = t->kind;
}

int model_tensor_find(const model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->t[i].name, name))
            return i;
    return -1;
}

/* The internal layout of tensor t's data against the canonical one (the
 * files'): the canonical index of each internal one, in[internal] ->
 * out[canon] (to_canon) or in[canon] -> out[internal]. */
static void s_canon_copy(const model_tensor *t, const float *in, float *out, bool to_canon)
{
    int la = t->la, lb = t->lb;
    switch (t->layout) {
    case MODEL_LAYOUT_CONV3: /* internal (9*C, F) [t*C + c][f], canonical (F, C, 9) */
        for (int f = 0; f < lb; f++)
            for (int c = 0; c < la; c++)
                for (int k = 0; k < 9; k++) {
                    size_t ci = ((size_t)f * la + c) * 9 + k, ii = ((size_t)k * la + c) * lb + f;
                    out[to_canon ? ci : ii] = in[to_canon ? ii : ci];
                }
        break;
    case MODEL_LAYOUT_TRANS: /* internal (I, O), canonical (O, I) */
        for (int o = 0; o < lb; o++)
            for (int i = 0; i < la; i++) {
                size_t ci = (size_t)o * la + i, ii = (size_t)i * lb + o;
                out[to_canon ? ci : ii] = in[to_canon ? ii : ci];
            }
        break;
    default:
        memcpy(out, in, t->size * sizeof *out);
    }
}

void model_tensor_read(const model *m, int i, float *out)
{
    assert(i >= 0 && i < m->n_tensors);
    s_canon_copy(&m->t[i], model_tdata(m, i), out, true);
}

void model_tensor_write(model *m, int i, const float *in)
{
    assert(i >= 0 && i < m->n_tensors);
    s_canon_copy(&m->t[i], in, model_tdata(m, i), false);
}

uint64_t model_checksum(const model *m)
{
    size_t biggest = 1;
    for (int i = 0; i < m->n_tensors; i++)
        biggest = m->t[i].size > biggest ? m->t[i].size : biggest;
    float *buf = model_alloc_floats(biggest, false);
    KZ_CHECK(buf != NULL);
    uint64_t h = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *t = &m->t[i];
        uint32_t shape[4];
        for (int k = 0; k < t->ndim; k++)
            shape[k] = (uint32_t)t->shape[k];
        model_tensor_read(m, i, buf);
        h = hash_bytes(t->name, strlen(t->name), h);
        h = hash_bytes(shape, (size_t)t->ndim * sizeof shape[0], h);
        h = hash_bytes(buf, t->size * sizeof *buf, h);
    }
    free(buf);
    return h;
}

int model_set_threads(int n)
{
    if (n < 1)
        return KZ_EINVAL;
    openblas_set_num_threads(n);
    s_threads = openblas_get_num_threads();
    return s_threads;
}

/* --- Optimizer state ------------------------------------------------------- */

int model_optim_kind(const model *m) { return m->opt_kind; }
uint64_t model_optim_steps(const model *m) { return m->opt_steps; }

int model_optim_slots(const model *m)
{
    return m->opt_kind == MODEL_OPT_ADAM ? 2 : m->opt_kind == MODEL_OPT_SGD ? 1 : 0;
}

int model_optim_reset(model *m, int kind, uint64_t steps)
{
    assert(kind == MODEL_OPT_NONE || kind == MODEL_OPT_SGD || kind == MODEL_OPT_ADAM);
    free(m->opt[0]);
    free(m->opt[1]);
    m->opt[0] = m->opt[1] = NULL;
    m->opt_kind = MODEL_OPT_NONE;
    m->opt_steps = 0;
    int slots = kind == MODEL_OPT_ADAM ? 2 : kind == MODEL_OPT_SGD ? 1 : 0;
    for (int s = 0; s < slots; s++)
        if (!(m->opt[s] = model_alloc_floats(m->n_params, true))) {
            free(m->opt[0]);
            m->opt[0] = NULL;
            return KZ_ENOMEM;
        }
    m->opt_kind = kind;
    m->opt_steps = steps;
    return 0;
}

void model_optim_read(const model *m, int s, int i, float *out)
{
    assert(s >= 0 && s < model_optim_slots(m) && m->t[i].kind != MODEL_TENSOR_STAT);
    s_canon_copy(&m->t[i], m->opt[s] + m->t[i].off, out, true);
}

void model_optim_write(model *m, int s, int i, const float *in)
{
    assert(s >= 0 && s < model_optim_slots(m) && m->t[i].kind != MODEL_TENSOR_STAT);
    s_canon_copy(&m->t[i], in, m->opt[s] + m->t[i].off, false);
}

/* --- Helpers ----------------------------------------------------------------- */

void model_softmax_masked(const float *logits, const uint16_t *legal, int n, float *probs)
{
    if (n <= 0)
        return;
    float mx = logits[legal[0]];
    for (int i = 1; i < n; i++)
        mx = logits[legal[i]] > mx ? logits[legal[i]] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        probs[i] = expf(logits[legal[i]] - mx);
        sum += probs[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++)
        probs[i] *= inv;
}

void model_softmax_mask(const float *logits, const uint8_t *mask, int A, float *probs)
{
    float mx = -INFINITY;
    for (int a = 0; a < A; a++)
        if (mask[a] && logits[a] > mx)
            mx = logits[a];
    double sum = 0;
    for (int a = 0; a < A; a++) {
        probs[a] = mask[a] ? expf(logits[a] - mx) : 0.0f;
        sum += probs[a];
    }
    float inv = sum > 0 ? (float)(1.0 / sum) : 0.0f;
    for (int a = 0; a < A; a++)
        probs[a] *= inv;
}

/* --- Reference forward pass ---------------------------------------------------- */

static void s_ref_convbn(const model *m, const model_convbn *l, float *out, const float *in,
                         int N, int H, int W, bool k3)
{
    int M = N * H * W;
    if (k3)
        layer_conv3x3_forward_naive(out, in, model_tdata(m, l->w), N, H, W, l->cin, l->cout);
    else
        layer_linear_forward_naive(out, in, model_tdata(m, l->w), NULL, M, l->cin, l->cout);
    layer_bn_forward_eval(out, out, model_tdata(m, l->gamma), model_tdata(m, l->beta),
                          model_tdata(m, l->mean), model_tdata(m, l->var), m->bn_eps, M, l->cout);
}

/* A 1x1 conv + BN + ReLU head's flattened features (B, cout*HW) of the
 * tower's output h (M, F) into flat, hd as scratch. */
static void s_ref_head(const model *m, const model_convbn *l, float *flat, float *hd,
                       const float *h, int B)
{
    const model_arch *a = &m->arch;
    int H = a->height, W = a->width;
    s_ref_convbn(m, l, hd, h, B, H, W, false);
    layer_relu_forward(hd, hd, (size_t)B * H * W * l->cout);
    layer_nhwc_to_nchw(flat, hd, B, l->cout, H * W);
}

void model_forward_reference(const model *m, const float *x, int B, float *logits,
                             float *values)
{
    model_forward_reference_aux(m, x, B, logits, values, NULL, NULL);
}

static void s_forward_reference(const model *m, const float *x, int B, float *logits,
                                float *values, float *opp_logits, float *material,
                                float *wdl_out);

void model_forward_reference_aux(const model *m, const float *x, int B, float *logits,
                                 float *values, float *opp_logits, float *material)
{
    s_forward_reference(m, x, B, logits, values, opp_logits, material, NULL);
}

int model_forward_reference_wdl(const model *m, const float *x, int B, float *wdl)
{
    if (!m->arch.value_wdl)
        return KZ_EINVAL;
    s_forward_reference(m, x, B, NULL, NULL, NULL, NULL, wdl);
    return 0;
}

static void s_forward_reference(const model *m, const float *x, int B, float *logits,
                                float *values, float *opp_logits, float *material,
                                float *wdl_out)
{
    const model_arch *a = &m->arch;
    int H = a->height, W = a->width, HW = H * W, F = a->filters, C = a->in_planes;
    size_t M = (size_t)B * HW;
    int Pf = a->policy_filters, Vf = a->value_filters, Vh = a->value_hidden;
    int Hf = Pf > Vf ? Pf : Vf;
    Hf = a->opp_policy_filters > Hf ? a->opp_policy_filters : Hf;
    Hf = a->material_filters > Hf ? a->material_filters : Hf;
    float *in = xmalloc(M * (size_t)C * sizeof *in), *h = xmalloc(M * F * sizeof *h);
    float *t = xmalloc(M * F * sizeof *t), *u = xmalloc(M * F * sizeof *u);
    float *hd = xmalloc(M * (size_t)Hf * sizeof *hd);
    float *flat = xmalloc(M * (size_t)Hf * sizeof *flat);
    float *hid = xmalloc((size_t)B * Vh * sizeof *hid);
    float *wdl = a->value_wdl ? xmalloc((size_t)B * 3 * sizeof *wdl) : NULL;
    if (a->derived_planes) {
        float *xd = xmalloc(M * (size_t)C * sizeof *xd);
        model_input_derive(a, game_find(a->game), x, B, xd);
        layer_nchw_to_nhwc(in, xd, B, C, HW);
        free(xd);
    } else {
        layer_nchw_to_nhwc(in, x, B, C, HW);
    }
    s_ref_convbn(m, &m->stem, h, in, B, H, W, true);
    layer_relu_forward(h, h, M * F);
    for (int i = 0; i < a->blocks; i++) {
        s_ref_convbn(m, &m->convs[2 * i], t, h, B, H, W, true);
        layer_relu_forward(t, t, M * F);
        s_ref_convbn(m, &m->convs[2 * i + 1], u, t, B, H, W, true);
        for (size_t k = 0; k < M * F; k++)
            h[k] = u[k] + h[k] > 0 ? u[k] + h[k] : 0.0f;
    }
    /* Policy head. */
    if (logits) {
        s_ref_head(m, &m->pconv, flat, hd, h, B);
        layer_linear_forward_naive(logits, flat, model_tdata(m, m->pfc.w),
                                   model_tdata(m, m->pfc.b), B, Pf * HW, a->actions);
    }
    /* Value head. */
    if (values || wdl_out) {
        s_ref_head(m, &m->vconv, flat, hd, h, B);
        layer_linear_forward_naive(hid, flat, model_tdata(m, m->vfc1.w),
                                   model_tdata(m, m->vfc1.b), B, Vf * HW, Vh);
        layer_relu_forward(hid, hid, (size_t)B * Vh);
        if (wdl) {
            layer_linear_forward_naive(wdl, hid, model_tdata(m, m->vfc2.w),
                                       model_tdata(m, m->vfc2.b), B, Vh, 3);
            if (values)
                layer_wdl_value(values, wdl, B);
            if (wdl_out) /* softmax of each row */
                for (int b = 0; b < B; b++) {
                    float *l = wdl + 3 * (size_t)b, *o = wdl_out + 3 * (size_t)b;
                    double mx = fmax(fmax(l[0], l[1]), l[2]);
                    double e0 = exp(l[0] - mx), e1 = exp(l[1] - mx), e2 = exp(l[2] - mx);
                    double sum = e0 + e1 + e2;
                    o[0] = (float)(e0 / sum), o[1] = (float)(e1 / sum), o[2] = (float)(e2 / sum);
                }
        } else {
            layer_linear_forward_naive(values, hid, model_tdata(m, m->vfc2.w),
                                       model_tdata(m, m->vfc2.b), B, Vh, 1);
            layer_tanh_forward(values, values, (size_t)B);
        }
    }
    /* The auxiliary heads. */
    if (opp_logits && a->opp_policy_filters) {
        s_ref_head(m, &m->oconv, flat, hd, h, B);
        layer_linear_forward_naive(opp_logits, flat, model_tdata(m, m->ofc.w),
                                   model_tdata(m, m->ofc.b), B, a->opp_policy_filters * HW,
                                   a->actions);
    }
    if (material && a->material_filters) {
        s_ref_head(m, &m->mconv, flat, hd, h, B);
        layer_linear_forward_naive(material, flat, model_tdata(m, m->mfc.w),
                                   model_tdata(m, m->mfc.b), B, a->material_filters * HW, 1);
    }
    free_all(in, h, t, u, hd, flat, hid, wdl);
}
