/* model_train: the network's training step: forward with batch statistics,
 * backward through every layer, running averages, L2, gradient clipping,
 * SGD with momentum or Adam, learning-rate schedules. See model.h. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kernel.h"
#include "nn/layer.h"
#include "nn/model.h"
#include "nn/model_internal.h"
#include "common/util.h"

/* Rows of im2col per chunk in training convolutions (about 1.8 MB at 9*64). */
#define TRAIN_COL_ROWS 800

/* Saved batch statistics of one batch-norm layer. */
typedef struct s_bnstat {
    float *mean; /* (cout) batch mean */
    float *var;  /* (cout) biased batch variance */
    float *rstd; /* (cout) 1 / sqrt(var + eps) */
} s_bnstat;

struct model_train {
    model *m;            /* the model being trained (borrowed) */
    train_config cfg;    /* settings */
    int max_batch;       /* most samples per step */
    int B;               /* samples of the last forward pass */
    float *grad;         /* (n_params) gradient, internal layout */
    float *x;            /* (M, C) input rows */
    float *xd;           /* (B, C*HW) the input with the derived planes, or NULL */
    const game_def *g;   /* the model's game, when it derives input planes */
    float *z0, *h0;      /* (M, F) stem pre-BN and output */
    float *z1, *a1;      /* (blocks, M, F) first conv pre-BN and activation */
    float *z2, *hb;      /* (blocks, M, F) second conv pre-BN and block output */
    s_bnstat *bn;        /* (2 + 2*blocks + 1) stem, tower, policy, value */
    float *bnbuf;        /* storage of bn */
    float *zp, *ap;      /* (M, Pf) policy conv pre-BN and activation */
    float *pflat;        /* (B, Pf*HW) ap flattened (c, y, x) */
    float *logits;       /* (B, A) */
    float *zv, *av;      /* (M, Vf) value conv pre-BN and activation */
    float *vflat;        /* (B, Vf*HW) */
    float *vh;           /* (B, Vh) hidden layer after ReLU */
    float *v;            /* (B) value after tanh (a WDL head: P(win) - P(loss)) */
    float *wl, *wt, *dwl;/* (B, 3) a WDL head's logits, targets and their gradient */
    float *zo, *ao;      /* (M, Of) opponent-policy conv pre-BN and activation (the head's) */
    float *oflat;        /* (B, Of*HW) */
    float *ologits;      /* (B, A) opponent-policy logits */
    float *dologits;     /* (B, A) */
    float *zm, *am;      /* (M, Mf) material conv pre-BN and activation (the head's) */
    float *mflat;        /* (B, Mf*HW) */
    float *mout;         /* (B) material output */
    float *dmout;        /* (B) */
    int bn_opp, bn_mat;  /* index in bn of the auxiliary heads' batch norms, -1 none */
    float *dA, *dB;      /* (M, F) gradient of a block's output / input */
    float *dT, *dZ;      /* (M, F) scratch gradients */
    float *dlogits;      /* (B, A) */
    float *dflat;        /* (B, Hf*HW), Hf the most filters of any head */
    float *dhead, *dzh;  /* (M, Hf) */
    float *dv, *dvh;     /* (B), (B, Vh) */
    float *col;          /* (col_floats) im2col workspace */
    size_t col_floats;   /* its size */
    float *wflip;        /* (9*F*F) flipped kernel workspace */
    bool kern;           /* 3x3 convolutions (forward, both gradients) on kernel.h's fp32 kernels */
    kernel_board *kb;    /* kern: the 3x3 board */
    kernel_conv kstem;   /* kern: the stem's weights, packed each step */
    kernel_conv kfwd;    /* kern: a tower conv's weights, packed before each use */
    kernel_conv kbwd;    /* kern: a tower conv's flipped, transposed weights (input gradient) */
};

void train_config_default(train_config *c)
{
    memset(c, 0, sizeof *c);
    c->optimizer = MODEL_OPT_ADAM;
    c->lr = 1e-3f;
    c->schedule = MODEL_LR_CONSTANT;
    c->step_every = 100000;
    c->step_gamma = 0.1f;
    c->cosine_steps = 100000;
    c->lr_min = 0.0f;
    c->warmup_steps = 0;
    c->momentum = 0.9f;
    c->adam_beta1 = 0.9f;
    c->adam_beta2 = 0.999f;
    c->adam_eps = 1e-8f;
    c->l2 = 1e-4f;
    c->clip_norm = 0.0f;
    c->bn_momentum = 0.1f;
    c->aux_opp_policy_weight = 0.15f;
    c->aux_material_weight = 1.0f;
}

static int s_bad(char *err, size_t errlen, const char *what, double v, const char *range)
{
    return err_set(err, errlen, KZ_EINVAL, "training config: %s is %g, must be %s", what, v,
                   range);
}

int train_config_check(const train_config *c, char *err, size_t errlen)
{
    if (c->optimizer != MODEL_OPT_SGD && c->optimizer != MODEL_OPT_ADAM)
        return s_bad(err, errlen, "optimizer", c->optimizer, "1 (SGD) or 2 (Adam)");
    if (!(c->lr >= 0 && c->lr <= 10))
        return s_bad(err, errlen, "lr", c->lr, "in [0, 10]");
    if (c->schedule < MODEL_LR_CONSTANT || c->schedule > MODEL_LR_COSINE)
        return s_bad(err, errlen, "schedule", c->schedule, "0, 1 or 2");
    if (c->schedule == MODEL_LR_STEP && c->step_every < 1)
        return s_bad(err, errlen, "step_every", (double)c->step_every, ">= 1");
    if (!(c->step_gamma > 0 && c->step_gamma <= 1))
        return s_bad(err, errlen, "step_gamma", c->step_gamma, "in (0, 1]");
    if (c->schedule == MODEL_LR_COSINE && c->cosine_steps < 1)
        return s_bad(err, errlen, "cosine_steps", (double)c->cosine_steps, ">= 1");
    if (!(c->lr_min >= 0 && c->lr_min <= c->lr))
        return s_bad(err, errlen, "lr_min", c->lr_min, "in [0, lr]");
    if (!(c->momentum >= 0 && c->momentum < 1))
        return s_bad(err, errlen, "momentum", c->momentum, "in [0, 1)");
    if (!(c->adam_beta1 >= 0 && c->adam_beta1 < 1))
        return s_bad(err, errlen, "adam_beta1", c->adam_beta1, "in [0, 1)");
    if (!(c->adam_beta2 >= 0 && c->adam_beta2 < 1))
        return s_bad(err, errlen, "adam_beta2", c->adam_beta2, "in [0, 1)");
    if (!(c->adam_eps > 0 && c->adam_eps <= 1))
        return s_bad(err, errlen, "adam_eps", c->adam_eps, "in (0, 1]");
    if (!(c->l2 >= 0 && c->l2 <= 1))
        return s_bad(err, errlen, "l2", c->l2, "in [0, 1]");
    if (!(c->clip_norm >= 0 && c->clip_norm < 1e30f))
        return s_bad(err, errlen, "clip_norm", c->clip_norm, ">= 0 (0 = off)");
    if (!(c->bn_momentum >= 0 && c->bn_momentum <= 1))
        return s_bad(err, errlen, "bn_momentum", c->bn_momentum, "in [0, 1]");
    if (c->kernels != MODEL_KERNELS_AUTO && c->kernels != MODEL_KERNELS_BLAS)
        return s_bad(err, errlen, "kernels", c->kernels, "0 (auto) or 1 (OpenBLAS)");
    if (!(c->aux_opp_policy_weight >= 0 && c->aux_opp_policy_weight <= 100))
        return s_bad(err, errlen, "aux_opp_policy_weight", c->aux_opp_policy_weight,
                     "in [0, 100]");
    if (!(c->aux_material_weight >= 0 && c->aux_material_weight <= 100))
        return s_bad(err, errlen, "aux_material_weight", c->aux_material_weight, "in [0, 100]");
    return 0;
}

double train_config_lr(const train_config *c, uint64_t step)
{
    double lr = c->lr;
    switch (c->schedule) {
    case MODEL_LR_STEP:
        lr = c->lr * pow(c->step_gamma, (double)(step / c->step_every));
        break;
    case MODEL_LR_COSINE: {
        double f = step >= c->cosine_steps ? 1.0 : (double)step / (double)c->cosine_steps;
        lr = c->lr_min + (c->lr - c->lr_min) * 0.5 * (1.0 + cos(M_PI * f));
        break;
    }
    default:
        break;
    }
    if (step < c->warmup_steps)
        lr *= (double)(step + 1) / (double)c->warmup_steps;
    return lr;
}

void model_train_destroy(model_train **pt)
{
    model_train *t = *pt;
    if (!t)
        return;
    float *bufs[] = {t->grad, t->x,     t->z0,   t->h0,      t->z1,    t->a1,   t->z2,
                     t->hb,   t->bnbuf, t->zp,   t->ap,      t->pflat, t->logits, t->zv,
                     t->av,   t->vflat, t->vh,   t->v,       t->dA,    t->dB,   t->dT,
                     t->dZ,   t->dlogits, t->dflat, t->dhead, t->dzh,  t->dv,   t->dvh,
                     t->col,  t->wflip, t->zo,   t->ao,      t->oflat, t->ologits, t->dologits,
                     t->zm,   t->am,    t->mflat, t->mout,   t->dmout, t->wl,   t->wt,
                     t->dwl,  t->xd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(t->bn);
    kernel_board_destroy(&t->kb);
    kernel_conv_free(&t->kstem);
    kernel_conv_free(&t->kfwd);
    kernel_conv_free(&t->kbwd);
    free(t);
    *pt = NULL;
}

model_train *model_train_new(model *m, const train_config *c, int max_batch)
{
    char err[200];
    if (train_config_check(c, err, sizeof err) != 0) {
        log_error("model_train_new: %s", err);
        return NULL;
    }
    if (max_batch < 1) {
        log_error("model_train_new: max_batch is %d, must be >= 1", max_batch);
        return NULL;
    }
    model_train *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    const model_arch *a = &m->arch;
    t->m = m;
    t->cfg = *c;
    t->max_batch = max_batch;
    int C = a->in_planes, HW = a->height * a->width, F = a->filters, nb = a->blocks;
    int Pf = a->policy_filters, Vf = a->value_filters, Vh = a->value_hidden, A = a->actions;
    int Of = a->opp_policy_filters, Mf = a->material_filters;
    int Hf = Pf > Vf ? Pf : Vf, big = C > F ? C : F;
    Hf = Of > Hf ? Of : Hf;
    Hf = Mf > Hf ? Mf : Hf;
    size_t B = (size_t)max_batch, M = B * HW, MF = M * F;
    int nbn = 2 * nb + 3;
    t->bn_opp = Of ? nbn++ : -1;
    t->bn_mat = Mf ? nbn++ : -1;
    t->grad = model_alloc_floats(m->n_params, true);
    t->x = model_alloc_floats(M * C, false);
    if (a->derived_planes) {
        t->g = game_find(a->game);
        t->xd = model_alloc_floats(M * C, false);
        if (!t->g || !t->g->derive_planes || !t->xd) {
            model_train_destroy(&t);
            return NULL;
        }
    }
    t->z0 = model_alloc_floats(MF, false);
    t->h0 = model_alloc_floats(MF, false);
    t->z1 = model_alloc_floats(MF * nb, false);
    t->a1 = model_alloc_floats(MF * nb, false);
    t->z2 = model_alloc_floats(MF * nb, false);
    t->hb = model_alloc_floats(MF * nb, false);
    t->bn = calloc((size_t)nbn, sizeof *t->bn);
    t->bnbuf = model_alloc_floats((size_t)nbn * 3 * (F > Hf ? F : Hf), false);
    t->zp = model_alloc_floats(M * Pf, false);
    t->ap = model_alloc_floats(M * Pf, false);
    t->pflat = model_alloc_floats(M * Pf, false);
    t->logits = model_alloc_floats(B * A, false);
    t->zv = model_alloc_floats(M * Vf, false);
    t->av = model_alloc_floats(M * Vf, false);
    t->vflat = model_alloc_floats(M * Vf, false);
    t->vh = model_alloc_floats(B * Vh, false);
    t->v = model_alloc_floats(B, false);
    t->dA = model_alloc_floats(MF, false);
    t->dB = model_alloc_floats(MF, false);
    t->dT = model_alloc_floats(MF, false);
    t->dZ = model_alloc_floats(MF, false);
    t->dlogits = model_alloc_floats(B * A, false);
    t->dflat = model_alloc_floats(M * Hf, false);
    t->dhead = model_alloc_floats(M * Hf, false);
    t->dzh = model_alloc_floats(M * Hf, false);
    t->dv = model_alloc_floats(B, false);
    t->dvh = model_alloc_floats(B * Vh, false);
    size_t per = (size_t)HW * 9 * big, rows = TRAIN_COL_ROWS > HW ? TRAIN_COL_ROWS : HW;
    t->col_floats = (rows / HW) * per;
    t->col = model_alloc_floats(t->col_floats, false);
    t->wflip = model_alloc_floats((size_t)9 * F * big, false);
    bool aux_ok = true;
    if (Of) {
        t->zo = model_alloc_floats(M * Of, false);
        t->ao = model_alloc_floats(M * Of, false);
        t->oflat = model_alloc_floats(M * Of, false);
        t->ologits = model_alloc_floats(B * A, false);
        t->dologits = model_alloc_floats(B * A, false);
        aux_ok = t->zo && t->ao && t->oflat && t->ologits && t->dologits;
    }
    if (Mf) {
        t->zm = model_alloc_floats(M * Mf, false);
        t->am = model_alloc_floats(M * Mf, false);
        t->mflat = model_alloc_floats(M * Mf, false);
        t->mout = model_alloc_floats(B, false);
        t->dmout = model_alloc_floats(B, false);
        aux_ok = aux_ok && t->zm && t->am && t->mflat && t->mout && t->dmout;
    }
    if (a->value_wdl) {
        t->wl = model_alloc_floats(B * 3, false);
        t->wt = model_alloc_floats(B * 3, false);
        t->dwl = model_alloc_floats(B * 3, false);
        aux_ok = aux_ok && t->wl && t->wt && t->dwl;
    }
    if (!t->grad || !t->x || !t->z0 || !t->h0 || !t->z1 || !t->a1 || !t->z2 || !t->hb ||
        !t->bn || !t->bnbuf || !t->zp || !t->ap || !t->pflat || !t->logits || !t->zv ||
        !t->av || !t->vflat || !t->vh || !t->v || !t->dA || !t->dB || !t->dT || !t->dZ ||
        !t->dlogits || !t->dflat || !t->dhead || !t->dzh || !t->dv || !t->dvh || !t->col ||
        !t->wflip || !aux_ok) {
        log_error("model_train_new: out of memory for a batch of %d", max_batch);
        model_train_destroy(&t);
        return NULL;
    }
    t->kern = c->kernels == MODEL_KERNELS_AUTO && kernel_cpu_has(KERNEL_AVX512);
    if (t->kern && (!(t->kb = kernel_board_new(a->height, a->width, 9)) ||
                    kernel_conv_init(&t->kstem, NULL, NULL, 9, C, F, false) != 0 ||
                    kernel_conv_init(&t->kfwd, NULL, NULL, 9, F, F, false) != 0 ||
                    kernel_conv_init(&t->kbwd, NULL, NULL, 9, F, F, false) != 0)) {
        log_error("model_train_new: out of memory for the kernels");
        model_train_destroy(&t);
        return NULL;
    }
    for (int i = 0; i < nbn; i++) {
        size_t o = (size_t)i * 3 * (F > Hf ? F : Hf);
        t->bn[i].mean = t->bnbuf + o;
        t->bn[i].var = t->bnbuf + o + (F > Hf ? F : Hf);
        t->bn[i].rstd = t->bnbuf + o + 2 * (F > Hf ? F : Hf);
    }
    if (m->opt_kind != c->optimizer) {
        if (m->opt_kind != MODEL_OPT_NONE)
            log_warn("model_train_new: optimizer changed (%d -> %d): state reset", m->opt_kind,
                     c->optimizer);
        if (model_optim_reset(m, c->optimizer, 0) != 0) {
            log_error("model_train_new: out of memory for the optimizer state");
            model_train_destroy(&t);
            return NULL;
        }
    }
    return t;
}

int model_train_set_config(model_train *t, const train_config *c)
{
    char err[200];
    if (train_config_check(c, err, sizeof err) != 0 || c->optimizer != t->cfg.optimizer)
        return KZ_EINVAL;
    t->cfg = *c;
    return 0;
}

float *model_train_params(model_train *t, size_t *n)
{
    *n = t->m->n_params;
    return t->m->params;
}

const float *model_train_grads(const model_train *t, size_t *n)
{
    *n = t->m->n_params;
    return t->grad;
}

/* --- Forward ------------------------------------------------------------------ */

#define P(i) model_tdata(m, (i))

/* out = BN_train(conv(in)) with the pre-BN output kept in z. */
static void s_convbn_fwd(model_train *t, const model_convbn *l, s_bnstat *st, float *z,
                         float *out, const float *in, bool k3)
{
    model *m = t->m;
    const model_arch *a = &m->arch;
    int N = t->B, H = a->height, W = a->width, M = N * H * W;
    if (k3 && t->kern) {
        kernel_conv *k = l == &m->stem ? &t->kstem : &t->kfwd;
        kernel_conv_repack(k, P(l->w), NULL);
        kernel_io io = {.in = in, .out = z, .N = N};
        kernel_conv_run(k, t->kb, &io);
    } else if (k3)
        layer_conv3x3_forward(z, t->col, t->col_floats, in, P(l->w), N, H, W, l->cin, l->cout);
    else
        layer_linear_forward(z, in, P(l->w), NULL, M, l->cin, l->cout);
    layer_bn_forward_train(out, st->mean, st->var, st->rstd, z, P(l->gamma), P(l->beta),
                           m->bn_eps, M, l->cout);
}

/* Mean over the batch of wm_b (y_b - m_b)^2 (wm NULL: all 1); with dm,
 * dm += scale * d/dm of the sum. */
static double s_material_loss(float *dm, const float *m, const float *y, const float *wm,
                              float scale, int B)
{
    double sum = 0;
    for (int b = 0; b < B; b++) {
        double w = wm ? wm[b] : 1.0, d = (double)m[b] - y[b];
        sum += w * d * d;
        if (dm)
            dm[b] += (float)(scale * 2.0 * w * d);
    }
    return sum;
}

/* The forward pass in training mode; returns the losses (not the L2 part). */
static void s_forward(model_train *t, const float *x, const float *pi, const float *z,
                      const train_aux *aux, int B, train_losses *out)
{
    model *m = t->m;
    const model_arch *a = &m->arch;
    assert(B >= 1 && B <= t->max_batch);
    t->B = B;
    int HW = a->height * a->width, F = a->filters, nb = a->blocks;
    int Pf = a->policy_filters, Vf = a->value_filters, Vh = a->value_hidden, A = a->actions;
    size_t M = (size_t)B * HW, MF = M * F, MFmax = (size_t)t->max_batch * HW * F;
    /* Step 1. Stem and tower. */
    if (t->xd) { /* the derived planes after each position's own */
        model_input_derive(a, t->g, x, B, t->xd);
        x = t->xd;
    }
    layer_nchw_to_nhwc(t->x, x, B, a->in_planes, HW);
    s_convbn_fwd(t, &m->stem, &t->bn[0], t->z0, t->h0, t->x, true);
    layer_relu_forward(t->h0, t->h0, MF);
    const float *h = t->h0;
    for (int i = 0; i < nb; i++) {
        float *z1 = t->z1 + i * MFmax, *a1 = t->a1 + i * MFmax;
        float *z2 = t->z2 + i * MFmax, *ho = t->hb + i * MFmax;
        s_convbn_fwd(t, &m->convs[2 * i], &t->bn[1 + 2 * i], z1, a1, h, true);
        layer_relu_forward(a1, a1, MF);
        s_convbn_fwd(t, &m->convs[2 * i + 1], &t->bn[2 + 2 * i], z2, ho, a1, true);
        layer_add_relu(ho, h, MF);
        h = ho;
    }
    /* Step 2. Policy head. */
    s_convbn_fwd(t, &m->pconv, &t->bn[1 + 2 * nb], t->zp, t->ap, h, false);
    layer_relu_forward(t->ap, t->ap, M * Pf);
    layer_nhwc_to_nchw(t->pflat, t->ap, B, Pf, HW);
    layer_linear_forward(t->logits, t->pflat, P(m->pfc.w), P(m->pfc.b), B, Pf * HW, A);
    /* Step 3. Value head. */
    s_convbn_fwd(t, &m->vconv, &t->bn[2 + 2 * nb], t->zv, t->av, h, false);
    layer_relu_forward(t->av, t->av, M * Vf);
    layer_nhwc_to_nchw(t->vflat, t->av, B, Vf, HW);
    layer_linear_forward(t->vh, t->vflat, P(m->vfc1.w), P(m->vfc1.b), B, Vf * HW, Vh);
    layer_relu_forward(t->vh, t->vh, (size_t)B * Vh);
    if (a->value_wdl) {
        layer_linear_forward(t->wl, t->vh, P(m->vfc2.w), P(m->vfc2.b), B, Vh, 3);
        layer_wdl_value(t->v, t->wl, B);
        layer_wdl_target(t->wt, z, B);
    } else {
        layer_linear_forward(t->v, t->vh, P(m->vfc2.w), P(m->vfc2.b), B, Vh, 1);
        layer_tanh_forward(t->v, t->v, (size_t)B);
    }
    /* Step 4. The auxiliary heads (whatever the targets: their batch norms
     * keep running averages like the others). */
    int Of = a->opp_policy_filters, Mf = a->material_filters;
    if (Of) {
        s_convbn_fwd(t, &m->oconv, &t->bn[t->bn_opp], t->zo, t->ao, h, false);
        layer_relu_forward(t->ao, t->ao, M * Of);
        layer_nhwc_to_nchw(t->oflat, t->ao, B, Of, HW);
        layer_linear_forward(t->ologits, t->oflat, P(m->ofc.w), P(m->ofc.b), B, Of * HW, A);
    }
    if (Mf) {
        s_convbn_fwd(t, &m->mconv, &t->bn[t->bn_mat], t->zm, t->am, h, false);
        layer_relu_forward(t->am, t->am, M * Mf);
        layer_nhwc_to_nchw(t->mflat, t->am, B, Mf, HW);
        layer_linear_forward(t->mout, t->mflat, P(m->mfc.w), P(m->mfc.b), B, Mf * HW, 1);
    }
    /* Step 5. Losses. */
    if (out) {
        memset(out, 0, sizeof *out);
        out->policy = layer_policy_loss(NULL, t->logits, pi, 0.0f, B, A) / B;
        out->value = a->value_wdl ? layer_policy_loss(NULL, t->wl, t->wt, 0.0f, B, 3) / B
                                  : layer_value_loss(NULL, t->v, z, 0.0f, B) / B;
        if (Of && aux && aux->opp_pi)
            out->opp_policy = layer_policy_loss(NULL, t->ologits, aux->opp_pi, 0.0f, B, A) / B;
        if (Mf && aux && aux->material)
            out->material =
                s_material_loss(NULL, t->mout, aux->material, aux->material_w, 0.0f, B) / B;
    }
}

/* The total of the parts: the auxiliary losses weighted. */
static double s_total(const model_train *t, const train_losses *l)
{
    return l->value + l->policy + l->l2 + t->cfg.aux_opp_policy_weight * l->opp_policy +
           t->cfg.aux_material_weight * l->material;
}

/* c * sum of squared weights; adds 2c w to the gradient when grad is set. */
static double s_l2(model_train *t, float *grad)
{
    model *m = t->m;
    double c = t->cfg.l2, sum = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *tt = &m->t[i];
        if (tt->kind != MODEL_TENSOR_WEIGHT)
            continue;
        const float *w = m->params + tt->off;
        for (size_t k = 0; k < tt->size; k++)
            sum += (double)w[k] * w[k];
        if (grad && c > 0)
            for (size_t k = 0; k < tt->size; k++)
                grad[tt->off + k] += (float)(2.0 * c) * w[k];
    }
    return c * sum;
}

double model_train_loss_aux(model_train *t, const float *x, const float *pi, const float *z,
                            const train_aux *aux, int B, train_losses *out)
{
    train_losses l;
    s_forward(t, x, pi, z, aux, B, &l);
    l.l2 = s_l2(t, NULL);
    l.total = s_total(t, &l);
    if (out)
        *out = l;
    return l.total;
}

double model_train_loss(model_train *t, const float *x, const float *pi, const float *z, int B,
                        train_losses *out)
{
    return model_train_loss_aux(t, x, pi, z, NULL, B, out);
}

/* --- Backward ------------------------------------------------------------------ */

#define G(i) (t->grad + m->t[(i)].off)

/* Backward of out = BN(conv(in)) given dout (the gradient of the BN output):
 * din += ..., parameter gradients += .... dz is scratch of the conv output's
 * size. */
static void s_convbn_bwd(model_train *t, const model_convbn *l, const s_bnstat *st,
                         float *din, float *dz, const float *dout, const float *z,
                         const float *in, bool k3)
{
    model *m = t->m;
    const model_arch *a = &m->arch;
    int N = t->B, H = a->height, W = a->width, M = N * H * W;
    memset(dz, 0, (size_t)M * l->cout * sizeof *dz);
    layer_bn_backward(dz, G(l->gamma), G(l->beta), dout, z, st->mean, st->rstd, P(l->gamma), M,
                      l->cout);
    if (k3 && t->kern) {
        /* The weight gradient (no im2col); the input gradient, a 3x3
         * convolution of dz with the flipped, transposed kernel, accumulated
         * into din through the skip. */
        kernel_conv_wgrad(G(l->w), in, dz, t->kb, N, l->cin, l->cout);
        if (din) {
            assert(l->cin == t->kbwd.F && l->cout == t->kbwd.C);
            const float *w = P(l->w);
            int C = l->cin, F = l->cout;
            for (int tap = 0; tap < 9; tap++)
                for (int c = 0; c < C; c++)
                    for (int f = 0; f < F; f++)
                        t->wflip[((size_t)(8 - tap) * F + f) * C + c] =
                            w[((size_t)tap * C + c) * F + f];
            kernel_conv_repack(&t->kbwd, t->wflip, NULL);
            kernel_io io = {.in = dz, .skip = din, .out = din, .N = N};
            kernel_conv_run(&t->kbwd, t->kb, &io);
        }
    } else if (k3)
        layer_conv3x3_backward(din, G(l->w), t->col, t->col_floats, t->wflip, dz, in, P(l->w), N,
                               H, W, l->cin, l->cout);
    else
        layer_linear_backward(din, G(l->w), NULL, dz, in, P(l->w), M, l->cin, l->cout);
}

/* Backward of a 1x1 conv + BN + ReLU head given dflat, the gradient of its
 * flattened output (B, cout*HW): into dh, the gradient of the tower's
 * output hfin, and the head's parameter gradients. */
static void s_head_bwd(model_train *t, const model_convbn *l, const s_bnstat *st, float *dh,
                       const float *act, const float *zpre, const float *hfin)
{
    const model_arch *a = &t->m->arch;
    int B = t->B, HW = a->height * a->width;
    size_t M = (size_t)B * HW;
    layer_nchw_to_nhwc(t->dzh, t->dflat, B, l->cout, HW);
    memset(t->dhead, 0, M * l->cout * sizeof *t->dhead);
    layer_relu_backward(t->dhead, t->dzh, act, M * l->cout);
    s_convbn_bwd(t, l, st, dh, t->dzh, t->dhead, zpre, hfin, false);
}

/* Step 2b of s_backward: the auxiliary heads that have targets and a
 * weight, into dh. */
static void s_backward_aux(model_train *t, const train_aux *aux, float *dh, const float *hfin)
{
    model *m = t->m;
    const model_arch *a = &m->arch;
    int B = t->B, HW = a->height * a->width, A = a->actions;
    int Of = a->opp_policy_filters, Mf = a->material_filters;
    size_t M = (size_t)B * HW;
    float wo = t->cfg.aux_opp_policy_weight, wm = t->cfg.aux_material_weight;
    if (Of && aux && aux->opp_pi && wo > 0) {
        memset(t->dologits, 0, (size_t)B * A * sizeof *t->dologits);
        layer_policy_loss(t->dologits, t->ologits, aux->opp_pi, wo / B, B, A);
        memset(t->dflat, 0, M * Of * sizeof *t->dflat);
        layer_linear_backward(t->dflat, G(m->ofc.w), G(m->ofc.b), t->dologits, t->oflat,
                              P(m->ofc.w), B, Of * HW, A);
        s_head_bwd(t, &m->oconv, &t->bn[t->bn_opp], dh, t->ao, t->zo, hfin);
    }
    if (Mf && aux && aux->material && wm > 0) {
        memset(t->dmout, 0, (size_t)B * sizeof *t->dmout);
        s_material_loss(t->dmout, t->mout, aux->material, aux->material_w, wm / B, B);
        memset(t->dflat, 0, M * Mf * sizeof *t->dflat);
        layer_linear_backward(t->dflat, G(m->mfc.w), G(m->mfc.b), t->dmout, t->mflat,
                              P(m->mfc.w), B, Mf * HW, 1);
        s_head_bwd(t, &m->mconv, &t->bn[t->bn_mat], dh, t->am, t->zm, hfin);
    }
}

static void s_backward(model_train *t, const float *pi, const float *z, const train_aux *aux)
{
    model *m = t->m;
    const model_arch *a = &m->arch;
    int B = t->B, HW = a->height * a->width, F = a->filters, nb = a->blocks;
    int Pf = a->policy_filters, Vf = a->value_filters, Vh = a->value_hidden, A = a->actions;
    size_t M = (size_t)B * HW, MF = M * F, MFmax = (size_t)t->max_batch * HW * F;
    const float *hfin = nb ? t->hb + (nb - 1) * MFmax : t->h0;
    float *dh = t->dA; /* gradient of the current block output */
    memset(dh, 0, MF * sizeof *dh);
    /* Step 1. Policy head. */
    memset(t->dlogits, 0, (size_t)B * A * sizeof *t->dlogits);
    layer_policy_loss(t->dlogits, t->logits, pi, 1.0f / B, B, A);
    memset(t->dflat, 0, M * Pf * sizeof *t->dflat);
    layer_linear_backward(t->dflat, G(m->pfc.w), G(m->pfc.b), t->dlogits, t->pflat, P(m->pfc.w),
                          B, Pf * HW, A);
    layer_nchw_to_nhwc(t->dzh, t->dflat, B, Pf, HW);
    memset(t->dhead, 0, M * Pf * sizeof *t->dhead);
    layer_relu_backward(t->dhead, t->dzh, t->ap, M * Pf);
    s_convbn_bwd(t, &m->pconv, &t->bn[1 + 2 * nb], dh, t->dzh, t->dhead, t->zp, hfin, false);
    /* Step 2. Value head. */
    memset(t->dvh, 0, (size_t)B * Vh * sizeof *t->dvh);
    if (a->value_wdl) { /* the targets t->wt were made from z in the forward pass */
        memset(t->dwl, 0, (size_t)B * 3 * sizeof *t->dwl);
        layer_policy_loss(t->dwl, t->wl, t->wt, 1.0f / B, B, 3);
        layer_linear_backward(t->dvh, G(m->vfc2.w), G(m->vfc2.b), t->dwl, t->vh, P(m->vfc2.w),
                              B, Vh, 3);
    } else {
        memset(t->dv, 0, (size_t)B * sizeof *t->dv);
        layer_value_loss(t->dv, t->v, z, 1.0f / B, B);
        for (int b = 0; b < B; b++)
            t->dv[b] *= 1.0f - t->v[b] * t->v[b];
        layer_linear_backward(t->dvh, G(m->vfc2.w), G(m->vfc2.b), t->dv, t->vh, P(m->vfc2.w), B,
                              Vh, 1);
    }
    for (size_t k = 0; k < (size_t)B * Vh; k++)
        t->dvh[k] = t->vh[k] > 0.0f ? t->dvh[k] : 0.0f;
    memset(t->dflat, 0, M * Vf * sizeof *t->dflat);
    layer_linear_backward(t->dflat, G(m->vfc1.w), G(m->vfc1.b), t->dvh, t->vflat, P(m->vfc1.w), B,
                          Vf * HW, Vh);
    layer_nchw_to_nhwc(t->dzh, t->dflat, B, Vf, HW);
    memset(t->dhead, 0, M * Vf * sizeof *t->dhead);
    layer_relu_backward(t->dhead, t->dzh, t->av, M * Vf);
    s_convbn_bwd(t, &m->vconv, &t->bn[2 + 2 * nb], dh, t->dzh, t->dhead, t->zv, hfin, false);
    s_backward_aux(t, aux, dh, hfin);
    /* Step 3. The tower, last block first. dh holds d/d(block output). */
    for (int i = nb - 1; i >= 0; i--) {
        const float *hin = i ? t->hb + (i - 1) * MFmax : t->h0, *ho = t->hb + i * MFmax;
        const float *z1 = t->z1 + i * MFmax, *a1 = t->a1 + i * MFmax, *z2 = t->z2 + i * MFmax;
        float *dpre = t->dT, *din = dh == t->dA ? t->dB : t->dA;
        memset(dpre, 0, MF * sizeof *dpre);
        layer_relu_backward(dpre, dh, ho, MF);
        memcpy(din, dpre, MF * sizeof *din); /* the skip connection */
        float *da = dh; /* dh is spent: reuse it for d/d a1 */
        memset(da, 0, MF * sizeof *da);
        s_convbn_bwd(t, &m->convs[2 * i + 1], &t->bn[2 + 2 * i], da, t->dZ, dpre, z2, a1, true);
        memset(dpre, 0, MF * sizeof *dpre);
        layer_relu_backward(dpre, da, a1, MF);
        s_convbn_bwd(t, &m->convs[2 * i], &t->bn[1 + 2 * i], din, t->dZ, dpre, z1, hin, true);
        dh = din;
    }
    /* Step 4. Stem (no input gradient). */
    memset(t->dT, 0, MF * sizeof *t->dT);
    layer_relu_backward(t->dT, dh, t->h0, MF);
    s_convbn_bwd(t, &m->stem, &t->bn[0], NULL, t->dZ, t->dT, t->z0, t->x, true);
}

static double s_norm(const float *g, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)g[i] * g[i];
    return sqrt(s);
}

void model_train_compute_aux(model_train *t, const float *x, const float *pi, const float *z,
                             const train_aux *aux, int B, train_losses *out)
{
    model *m = t->m;
    train_losses l;
    s_forward(t, x, pi, z, aux, B, &l);
    memset(t->grad, 0, m->n_params * sizeof *t->grad);
    s_backward(t, pi, z, aux);
    l.l2 = s_l2(t, t->grad);
    l.total = s_total(t, &l);
    l.grad_norm = s_norm(t->grad, m->n_params);
    if (out)
        *out = l;
}

void model_train_compute(model_train *t, const float *x, const float *pi, const float *z, int B,
                         train_losses *out)
{
    model_train_compute_aux(t, x, pi, z, NULL, B, out);
}

void model_train_step(model_train *t, const float *x, const float *pi, const float *z, int B,
                      train_losses *out)
{
    model_train_step_aux(t, x, pi, z, NULL, B, out);
}

void model_train_step_aux(model_train *t, const float *x, const float *pi, const float *z,
                          const train_aux *aux, int B, train_losses *out)
{
    model *m = t->m;
    const train_config *c = &t->cfg;
    const model_arch *a = &m->arch;
    train_losses l;
    model_train_compute_aux(t, x, pi, z, aux, B, &l);
    /* Step 1. Running averages of every batch norm (in t->bn's order). */
    int M = B * a->height * a->width, nb = a->blocks, nbn = 2 * nb + 3;
    const model_convbn *layers[2 * nb + 5];
    layers[0] = &m->stem;
    for (int i = 0; i < 2 * nb; i++)
        layers[1 + i] = &m->convs[i];
    layers[1 + 2 * nb] = &m->pconv;
    layers[2 + 2 * nb] = &m->vconv;
    if (t->bn_opp >= 0)
        layers[nbn++] = &m->oconv;
    if (t->bn_mat >= 0)
        layers[nbn++] = &m->mconv;
    for (int i = 0; i < nbn; i++)
        layer_bn_update_running(P(layers[i]->mean), P(layers[i]->var), t->bn[i].mean,
                                t->bn[i].var, c->bn_momentum, M, layers[i]->cout);
    /* Step 2. Clipping by global norm. */
    size_t n = m->n_params;
    float *g = t->grad, *w = m->params;
    if (c->clip_norm > 0 && l.grad_norm > c->clip_norm) {
        float s = (float)(c->clip_norm / l.grad_norm);
        for (size_t i = 0; i < n; i++)
            g[i] *= s;
    }
    /* Step 3. The update. */
    double lr = train_config_lr(c, m->meta.step);
    KZ_CHECK(m->opt_kind == c->optimizer);
    m->opt_steps++;
    if (c->optimizer == MODEL_OPT_SGD) {
        float mu = c->momentum, flr = (float)lr, *buf = m->opt[0];
        for (size_t i = 0; i < n; i++) {
            buf[i] = mu * buf[i] + g[i];
            w[i] -= flr * buf[i];
        }
    } else {
        float b1 = c->adam_beta1, b2 = c->adam_beta2, eps = c->adam_eps;
        double tt = (double)m->opt_steps;
        float c1 = (float)(1.0 / (1.0 - pow(b1, tt))), c2 = (float)(1.0 / (1.0 - pow(b2, tt)));
        float flr = (float)lr, *mm = m->opt[0], *vv = m->opt[1];
        for (size_t i = 0; i < n; i++) {
            mm[i] = b1 * mm[i] + (1.0f - b1) * g[i];
            vv[i] = b2 * vv[i] + (1.0f - b2) * g[i] * g[i];
            w[i] -= flr * (mm[i] * c1) / (sqrtf(vv[i] * c2) + eps);
        }
    }
    m->meta.step++;
    l.lr = lr;
    if (out)
        *out = l;
}
