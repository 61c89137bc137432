/* model_internal: the model struct, shared by model.c (weights, files'
 * tensor access), model_eval.c (inference) and model_train.c (training). Not for use outside
 * the model module. */
#ifndef KZ_MODEL_INTERNAL_H
#define KZ_MODEL_INTERNAL_H

#include "nn/model.h"

/* How a tensor's internal layout relates to its canonical one. */
enum {
    MODEL_LAYOUT_PLAIN = 0, /* identical */
    MODEL_LAYOUT_CONV3 = 1, /* canonical (F, C, 3, 3) <-> internal (9*C, F), row t*C + c */
    MODEL_LAYOUT_TRANS = 2, /* canonical (O, I) or (O, I, 1, 1) <-> internal (I, O) */
};

/* One named tensor of a model. */
typedef struct model_tensor {
    char name[MODEL_NAME_MAX]; /* canonical name */
    int ndim;                  /* canonical rank */
    int shape[4];              /* canonical shape */
    size_t size;               /* floats */
    int kind;                  /* enum model_tensor_kind */
    int layout;                /* MODEL_LAYOUT_* */
    int la, lb;                /* CONV3: C, F; TRANS: I, O */
    size_t off;                /* offset into params (trainable) or stats (STAT) */
} model_tensor;

/* A conv layer followed by batch norm: tensor indices and shape. */
typedef struct model_convbn {
    int cin, cout;                 /* channels in and out */
    int w, gamma, beta, mean, var; /* tensor indices */
} model_convbn;

/* A linear layer: tensor indices and shape. */
typedef struct model_fc {
    int in, out; /* features in and out */
    int w, b;    /* tensor indices */
} model_fc;

struct model {
    model_arch arch;       /* shape */
    float bn_eps;          /* batch-norm epsilon */
    model_meta meta;       /* version, parent, training steps, creation time */
    int n_tensors;         /* entries of t */
    model_tensor *t;       /* the tensors, canonical order */
    size_t n_params;       /* trainable floats */
    size_t n_stats;        /* running-statistics floats */
    float *params;         /* (n_params) trainable tensors, internal layout */
    float *stats;          /* (n_stats) running means and variances */
    model_convbn stem;     /* stem conv 3x3 + BN */
    model_convbn *convs;   /* (2*blocks) tower convs, block i at 2i and 2i+1 */
    model_convbn pconv;    /* policy 1x1 conv + BN */
    model_convbn vconv;    /* value 1x1 conv + BN */
    model_fc pfc;          /* policy linear */
    model_fc vfc1, vfc2;   /* value linears */
    model_convbn oconv;    /* opponent-policy 1x1 conv + BN (arch.opp_policy_filters > 0) */
    model_fc ofc;          /* opponent-policy linear (idem) */
    model_convbn mconv;    /* material 1x1 conv + BN (arch.material_filters > 0) */
    model_fc mfc;          /* material linear (idem) */
    int opt_kind;          /* enum model_optimizer */
    uint64_t opt_steps;    /* updates applied with the optimizer state */
    float *opt[2];         /* (n_params) each: optimizer slots, internal layout */
};

/* Internal-layout data of tensor i. */
static inline float *model_tdata(const model *m, int i)
{
    const model_tensor *t = &m->t[i];
    return (t->kind == MODEL_TENSOR_STAT ? m->stats : m->params) + t->off;
}

/* A 64-byte aligned float array, uninitialised (zeroed when zero is true);
 * NULL when out of memory. Free with free(). */
float *model_alloc_floats(size_t n, bool zero);

/* Threads of an evaluator made now: model_set_threads' count, else OpenBLAS's. */
int model_threads(void);

#endif
