/* model: the policy-value network (seed 000 §3.2) on OpenBLAS: its weights
 * and metadata, fast batched inference, and training (backward pass,
 * optimizers, learning-rate schedules).
 *
 * Architecture, every shape read from model_arch (never from constants):
 *   input (B, C, H, W) planes as game_def.encode_planes writes them
 *   stem: conv 3x3 (F filters) -> BN -> ReLU
 *   tower: `blocks` x [conv 3x3 F -> BN -> ReLU -> conv 3x3 F -> BN -> + skip -> ReLU]
 *   policy: conv 1x1 (Pf) -> BN -> ReLU -> flatten (Pf*H*W) -> linear -> A logits
 *   value: conv 1x1 (Vf) -> BN -> ReLU -> flatten (Vf*H*W) -> linear Vh -> ReLU
 *          -> linear 1 -> tanh, or with value_wdl -> linear 3 -> softmax over
 *          (win, draw, loss) of the mover, whose value is P(win) - P(loss)
 * and, only when the arch asks for them (0 filters = absent, the default), two
 * auxiliary heads that training alone uses (KataGo's auxiliary targets,
 * docs/learning.md); inference (model_eval) never computes them:
 *   opponent policy: conv 1x1 (Of) -> BN -> ReLU -> flatten -> linear -> A logits,
 *          the policy target of the next state where the other side moves, in
 *          the canonical actions of the input's own view
 *   material: conv 1x1 (Mf) -> BN -> ReLU -> flatten -> linear -> 1, the
 *          game's final material balance from the mover's view (game_def.material)
 * Convolutions have no bias (the batch norm's beta is one); linear layers do.
 * Flattening follows PyTorch: index c*H*W + y*W + x.
 *
 * Tensors: a model is a list of named tensors with canonical (PyTorch) shapes,
 * e.g. "blocks.0.conv1.weight" (F, F, 3, 3), "policy.fc.weight" (A, Pf*H*W),
 * "stem.bn.running_var" (F). model_tensor_* give tools and the file format
 * access in that canonical layout; internally the weights live in GEMM
 * layouts (see layer.h), converted at the boundary.
 *
 * Inference (model_eval): batch norm folded into the convolutions when the
 * evaluator is made; the whole batch's 3x3 convolution is one sgemm of
 * (B*H*W, 9*F) by (9*F, F), processed in cache-sized chunks of positions,
 * and each layer's bias + ReLU (+ skip) pass writes straight into the next
 * layer's im2col buffer. No allocation in model_eval_run.
 *
 * Training (model_train): batch norm uses batch statistics and updates the
 * running averages; loss = mean_b (z - v)^2 (a WDL head: mean_b -t_b^T log
 * softmax(wdl logits), t_b = (max(z, 0), 1 - |z|, max(-z, 0)), whose mean
 * is z: an outcome is one-hot, a q + z mix spread) + mean_b (-pi^T log softmax) +
 * c * sum of squared conv/linear weights (not BN parameters, not biases),
 * plus, for a model with auxiliary heads, w_opp * mean_b (-pi_opp^T log
 * softmax(opp logits)) + w_mat * mean_b wm_b (y_b - m_b)^2 (train_config's
 * aux weights; train_aux holds the targets, per-sample weight 0 where a
 * sample has none).
 * A policy target row of zeros adds nothing to the policy loss or its
 * gradient (the gradient is softmax * sum(pi) - pi): that is how a sample
 * without a policy target (a fast search of playout cap randomization) is
 * given policy weight 0, while the mean still divides by the whole batch, as
 * KataGo's per-sample weights do.
 *
 * Threads: the thread count is process-wide (model_set_threads). A
 * model is not locked: read it from many threads (model_eval_new, save) or
 * write it from one (model_train_step, model_tensor_write), not both at once.
 * An evaluator or a trainer belongs to one thread at a time. */
#ifndef KZ_MODEL_H
#define KZ_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "nn/modelmeta.h"

#define MODEL_BN_EPS 1e-5f      /* batch-norm epsilon of new models */
#define MODEL_NAME_MAX 64       /* longest tensor name, with its NUL */
#define MODEL_MAX_PARAMS (1u << 28) /* most floats a model may hold (files are checked) */

/* The network's shape. Fill it with model_arch_default, then change what
 * you like; model_arch_check says whether a shape is usable. */
typedef struct model_arch {
    char game[32];      /* game module name, e.g. "khreibaga" (NUL-terminated) */
    int in_planes;      /* C: input planes, from the game_def */
    int height, width;  /* H, W: board shape, from the game_def */
    int actions;        /* A: policy logits, from the game_def */
    int blocks;         /* residual blocks in the tower (0 allowed) */
    int filters;        /* F: channels of the stem and the tower */
    int policy_filters; /* Pf: 1x1 filters of the policy head (2) */
    int value_filters;  /* Vf: 1x1 filters of the value head (1) */
    int value_hidden;   /* Vh: width of the value head's hidden layer (64) */
    int opp_policy_filters; /* Of: 1x1 filters of the opponent-policy head; 0 = no head (0) */
    int material_filters;   /* Mf: 1x1 filters of the material head; 0 = no head (0) */
    int value_wdl;      /* 1: the value head ends in 3 logits, win/draw/loss (Lc0's WDL
                         * head); 0: one output and tanh (0) */
    int derived_planes; /* D: the game's derived input planes (game_def.derive_planes)
                         * the network appends to the game's planes; in_planes counts
                         * them. 0: none (0) */
} model_arch;

/* The planes a caller hands the network for each position: the game's own
 * (in_planes less the derived ones, which the network computes itself). */
static inline int model_arch_game_planes(const model_arch *a)
{
    return a->in_planes - a->derived_planes;
}

/* The network's whole input from the game's planes: x (B positions of
 * model_arch_game_planes(a) x H x W floats) copied to out (B x in_planes x
 * H x W) with the derived planes after each position's own. g is the
 * model's game (with derive_planes when a->derived_planes > 0). */
void model_input_derive(const model_arch *a, const game_def *g, const float *x, int B,
                        float *out);

/* The specification's shape for game g: 6 blocks x 64 filters, policy head
 * 2 filters, value head 1 filter and 64 hidden units, no auxiliary heads. */
void model_arch_default(model_arch *a, const game_def *g);
/* 0, or KZ_EINVAL with a one-line reason in err: a field out of range
 * (C 1..256, H and W 1..32, A 1..65536, blocks 0..128, F 1..1024, Pf and Vf
 * 1..64, Vh 1..4096, Of and Mf 0..64, value_wdl 0..1, D 0..64 and below C) or more than
 * MODEL_MAX_PARAMS floats. */
int model_arch_check(const model_arch *a, char *err, size_t errlen);
/* 0, or KZ_EMISMATCH with a reason when the arch does not fit g (name,
 * planes, board or action count differ; derived planes the game does not
 * have). */
int model_arch_check_game(const model_arch *a, const game_def *g, char *err, size_t errlen);
bool model_arch_equal(const model_arch *a, const model_arch *b);
/* "khreibaga: 6 blocks x 64 filters, input 7x5x5, 625 actions, heads 2/1/64"
 * (", value wdl" with the win/draw/loss head, and ", aux heads opponent
 * policy 2, material 1" when it has them): a short
 * description. */
void model_arch_describe(const model_arch *a, char *buf, size_t len);
/* Trainable parameters of the shape (weights, biases, BN gamma and beta). */
size_t model_arch_param_count(const model_arch *a);
/* Every float of a model of the shape: parameters and running statistics. */
size_t model_arch_float_count(const model_arch *a);
/* Floating-point operations of one position's forward pass, counting a
 * multiply-add as 2 and only the convolutions and linear layers (about
 * 22.4 million at 6x64 on 7x5x5); the auxiliary heads, which inference does
 * not run, are not counted. */
double model_arch_forward_flops(const model_arch *a);

typedef struct model model; /* weights, BN parameters and running stats, metadata */

/* A new model with random weights (He-normal convolutions and hidden
 * layers, 1/sqrt(fan-in) output layers, zero biases, BN gamma 1 beta 0,
 * running mean 0 var 1), reproducible from seed. Version 0, parent 0, step 0,
 * created now. NULL when model_arch_check fails. Caller owns the result. */
model *model_new(const model_arch *a, uint64_t seed);
/* A model of shape a with every tensor zero, for filling with
 * model_tensor_write (file loaders). NULL when model_arch_check fails. */
model *model_new_blank(const model_arch *a);
/* A deep copy (optimizer state included). NULL only when out of memory. */
model *model_clone(const model *m);
/* dst = (1 - w) * dst + w * src over every float of the weights, the
 * batch-norm parameters and the running statistics (optimizer state and
 * metadata untouched): one step of an exponential moving average of the
 * weights (the trainer's ema_decay, w = 1 - decay). KZ_EMISMATCH when the
 * shapes differ, KZ_EINVAL for w outside [0, 1], else 0. Allocates nothing. */
int model_blend(model *dst, const model *src, float w);
/* Frees *m (NULL-safe) and sets it to NULL. */
void model_destroy(model **m);
/* Borrowed; valid while m lives. */
const model_arch *model_get_arch(const model *m);

/* The metadata (modelmeta.h: version, parent, training steps taken,
 * creation time), read through model_get_meta and written through
 * model_edit_meta. Borrowed; valid while m lives. */
const model_meta *model_get_meta(const model *m);
model_meta *model_edit_meta(model *m);
/* The batch-norm epsilon. */
float model_bn_eps(const model *m);
void model_set_bn_eps(model *m, float eps);

/* The checksum of the weights as stored in a model file: a chain of
 * hash_bytes over every tensor's name, shape (u32 LE) and data (f32 LE) in
 * canonical layout and order, optimizer state excluded. Equal weights give
 * equal checksums on every platform. */
uint64_t model_checksum(const model *m);

/* Sets the thread count for this process (n >= 1): OpenBLAS's (training
 * uses its threaded GEMMs) and that of evaluators made afterwards (see
 * model_eval_new). Returns the count in effect, or KZ_EINVAL for n < 1.
 * Without a call, OpenBLAS's default (OPENBLAS_NUM_THREADS or the cores)
 * applies. Call it at start-up, not while evaluators run. Workers use 1 and
 * one process per core; several single-threaded evaluators may run in
 * parallel threads. */
int model_set_threads(int n);

/* --- Named tensors (canonical layout), for files and tools ----------------- */

typedef enum model_tensor_kind {
    MODEL_TENSOR_WEIGHT = 0, /* trainable, under the L2 penalty (conv and linear weights) */
    MODEL_TENSOR_PARAM = 1,  /* trainable, no L2 (biases, BN gamma and beta) */
    MODEL_TENSOR_STAT = 2,   /* not trainable: BN running mean and variance */
} model_tensor_kind;

typedef struct model_tensor_info {
    const char *name; /* e.g. "blocks.3.bn2.running_mean"; borrowed from the model */
    int ndim;         /* 1, 2 or 4 */
    int shape[4];     /* canonical shape, first ndim entries */
    size_t size;      /* product of the shape */
    int kind;         /* enum model_tensor_kind */
} model_tensor_info;

/* Tensors in canonical order: stem, blocks, policy head, value head, then
 * the auxiliary heads the arch has ("opp_policy.*", "material.*"); within a
 * layer weight, bias, then BN weight (gamma), bias (beta), running_mean,
 * running_var. A model without auxiliary heads has exactly the tensors (and
 * the checksum and file bytes) it had before they existed. */
int model_tensor_count(const model *m);
/* Fills *out for tensor i in [0, count). */
void model_tensor_info_get(const model *m, int i, model_tensor_info *out);
/* Index of the tensor with this name, or -1. */
int model_tensor_find(const model *m, const char *name);
/* Copies tensor i out of / into the model (size floats, canonical layout). */
void model_tensor_read(const model *m, int i, float *out);
void model_tensor_write(model *m, int i, const float *in);

/* --- Optimizer state (kept in the model so checkpoints carry it) ----------- */

typedef enum model_optimizer {
    MODEL_OPT_NONE = 0, /* no state (new or published models) */
    MODEL_OPT_SGD = 1,  /* SGD with momentum: one slot (the momentum buffer) */
    MODEL_OPT_ADAM = 2, /* Adam: two slots (first and second moments) */
} model_optimizer;

int model_optim_kind(const model *m);
/* Updates applied with the current state (Adam's bias correction uses it). */
uint64_t model_optim_steps(const model *m);
/* Slots per trainable tensor of the current kind (0, 1 or 2). */
int model_optim_slots(const model *m);
/* Replaces the state with zeroed state of `kind` (MODEL_OPT_NONE frees it) and
 * sets the step count. 0 or KZ_ENOMEM. */
int model_optim_reset(model *m, int kind, uint64_t steps);
/* Slot s of trainable tensor i (canonical layout, the tensor's size); tensor
 * i must not be MODEL_TENSOR_STAT and s < model_optim_slots. */
void model_optim_read(const model *m, int s, int i, float *out);
void model_optim_write(model *m, int s, int i, const float *in);

/* --- Inference ------------------------------------------------------------ */

typedef struct model_eval model_eval;

/* Arithmetic of an evaluator. */
typedef enum model_precision {
    MODEL_FP32 = 0, /* fp32 products and sums */
    MODEL_BF16 = 1, /* the stem's and tower's products in bf16 (inputs and weights rounded to
                     * 8 significant bits), sums and the heads in fp32: AVX512_BF16 */
} model_precision;

/* Which code runs the convolutions. */
typedef enum model_kernels {
    MODEL_KERNELS_AUTO = 0, /* our AVX-512 kernels (kernel.h) where the CPU has them, else BLAS */
    MODEL_KERNELS_BLAS = 1, /* OpenBLAS sgemm on im2col (fp32 only) */
} model_kernels;

/* How an evaluator computes (model_eval_config_default gives the defaults). */
typedef struct model_eval_config {
    int precision; /* enum model_precision [model_set_precision's, else FP32] */
    int kernels;   /* enum model_kernels [AUTO] */
} model_eval_config;

/* The process-wide default config of model_eval_new. */
void model_eval_config_default(model_eval_config *c);
/* Sets the default precision of evaluators made afterwards (like
 * model_set_threads: call it at start-up). 0, or KZ_EINVAL for an unknown one. */
int model_set_precision(int p);
/* "fp32" or "bf16" -> *p: 0, or KZ_EINVAL (*p unchanged). */
int model_precision_parse(const char *s, int *p);
const char *model_precision_name(int p);

/* An evaluator for batches of up to max_batch positions, with batch norm
 * folded. It copies the weights it needs: the model may change or be
 * destroyed afterwards. NULL when max_batch < 1 or out of memory. Caller owns
 * the result; one evaluator per thread.
 * Kernels: with MODEL_KERNELS_AUTO on a CPU with AVX-512 the convolutions
 * run on kernel.h's kernels (no im2col; off-board taps skipped; bias, skip
 * and ReLU fused), in bf16 when asked for and the CPU has AVX512_BF16 (else
 * in fp32); otherwise on OpenBLAS in fp32, whatever the precision asked for.
 * model_eval_path says which.
 * Threads: with a thread count n > 1 in effect (model_set_threads), the
 * evaluator starts n - 1 helper threads and splits each batch's tower among
 * them and the caller. On the OpenBLAS path each runs sgemm single-threaded:
 * while any such run is under way OpenBLAS's own count is 1, restored after
 * the last one (other threads' OpenBLAS calls run single-threaded meanwhile). */
model_eval *model_eval_new_config(const model *m, int max_batch, const model_eval_config *c);
/* model_eval_new_config with the process-wide default config. */
model_eval *model_eval_new(const model *m, int max_batch);
/* What runs the convolutions: "avx512-fp32", "avx512-bf16" or "openblas-fp32". */
const char *model_eval_path(const model_eval *e);
/* Stops the helper threads and frees *e (NULL-safe); sets *e to NULL. */
void model_eval_destroy(model_eval **e);
int model_eval_max_batch(const model_eval *e);
/* Threads working on one batch (1 + helpers). */
int model_eval_lanes(const model_eval *e);
/* Positions per internal chunk of the tower for a batch of B (the batch is
 * split into equal chunks of at most a cache-sized maximum; for benchmarks). */
int model_eval_chunk(const model_eval *e, int B);
/* Evaluates B positions (0 <= B <= max_batch): x (B, C, H, W) -> logits
 * (B, A), values (B) in [-1, 1] from the view of the player to move (a WDL
 * head's P(win) - P(loss)). Allocates
 * nothing. On the AVX-512 paths a position's outputs are the same bits
 * whatever the batch, its size and the position's place in it (each row is
 * computed alone, in a fixed order; tests/system/test_forge.c); on the OpenBLAS path
 * they may differ in the last bits (sgemm's kernels depend on the sizes). */
void model_eval_run(model_eval *e, const float *x, int B, float *logits, float *values);

/* probs[i] = softmax over the legal actions of logits[legal[i]] (n >= 1; for
 * n == 0 nothing is written). Stable for any finite logits. */
void model_softmax_masked(const float *logits, const uint16_t *legal, int n, float *probs);

/* probs[a] = softmax over {a : mask[a]} of logits[a] for a in [0, A), 0 for
 * the others (mask as game_def.legal_mask writes it; all zero when none). */
void model_softmax_mask(const float *logits, const uint8_t *mask, int A, float *probs);

/* The same forward pass the slow, obvious way: direct convolutions, batch
 * norm from the running statistics (unfolded), double accumulators. For
 * tests and for checking an evaluator. Allocates; not for hot paths. */
void model_forward_reference(const model *m, const float *x, int B, float *logits,
                             float *values);
/* The same with the auxiliary heads' outputs: opp_logits (B, A) and material
 * (B), each written only when not NULL and the model has that head. logits
 * and values may be NULL too. */
void model_forward_reference_aux(const model *m, const float *x, int B, float *logits,
                                 float *values, float *opp_logits, float *material);
/* A WDL model's probabilities: wdl (B, 3) win, draw, loss of the mover
 * (reference arithmetic). A model without the head: KZ_EINVAL, else 0. */
int model_forward_reference_wdl(const model *m, const float *x, int B, float *wdl);

/* --- Training -------------------------------------------------------------- */

typedef enum model_lr_schedule {
    MODEL_LR_CONSTANT = 0, /* lr */
    MODEL_LR_STEP = 1,     /* lr * step_gamma^floor(step / step_every) */
    MODEL_LR_COSINE = 2,   /* lr_min + (lr - lr_min)(1 + cos(pi min(step, T) / T)) / 2 */
} model_lr_schedule;

/* Training settings (train_config_default gives the defaults in brackets). */
typedef struct train_config {
    int optimizer;        /* MODEL_OPT_SGD or MODEL_OPT_ADAM [ADAM] */
    float lr;             /* base learning rate [1e-3] */
    int schedule;         /* enum model_lr_schedule [CONSTANT] */
    uint64_t step_every;  /* STEP: steps between decays [100000] */
    float step_gamma;     /* STEP: decay factor [0.1] */
    uint64_t cosine_steps;/* COSINE: T, steps to reach lr_min [100000] */
    float lr_min;         /* COSINE: final rate [0] */
    uint64_t warmup_steps;/* linear warm-up from 0 over the first steps, any schedule [0] */
    float momentum;       /* SGD momentum [0.9] */
    float adam_beta1;     /* Adam beta1 [0.9] */
    float adam_beta2;     /* Adam beta2 [0.999] */
    float adam_eps;       /* Adam epsilon [1e-8] */
    float l2;             /* c, the L2 coefficient [1e-4] */
    float clip_norm;      /* clip the gradient's global norm to this; 0 = off [0] */
    float bn_momentum;    /* running-average momentum of batch norm [0.1] */
    int kernels;          /* enum model_kernels: the 3x3 convolutions (forward and both
                           * gradients) on kernel.h's fp32 kernels where the CPU has them
                           * (AUTO), or on OpenBLAS (BLAS) [AUTO] */
    float aux_opp_policy_weight; /* w_opp: weight of the opponent-policy head's loss
                                  * (KataGo's 0.15) [0.15] */
    float aux_material_weight;   /* w_mat: weight of the material head's loss [1] */
} train_config;

void train_config_default(train_config *c);
/* 0, or KZ_EINVAL with a one-line reason (a value out of range). */
int train_config_check(const train_config *c, char *err, size_t errlen);
/* The learning rate at training step `step` (0-based, before the update). */
double train_config_lr(const train_config *c, uint64_t step);

/* Losses of one batch, each averaged over the batch. */
typedef struct train_losses {
    double value;      /* mean (z - v)^2; a WDL head: its cross-entropy (see above) */
    double policy;     /* mean -pi^T log softmax(logits) */
    double l2;         /* c * sum of squared weights */
    double opp_policy; /* mean -pi_opp^T log softmax(opp logits), unweighted (0 without
                        * the head or its targets) */
    double material;   /* mean wm (y - m)^2, unweighted (0 without the head or targets) */
    double total;      /* value + policy + l2 + w_opp * opp_policy + w_mat * material */
    double grad_norm;  /* global gradient norm before clipping */
    double lr;         /* learning rate used (model_train_step only) */
} train_losses;

/* The auxiliary heads' targets of a batch (B samples), borrowed for a call.
 * A NULL pointer: no such targets (that head's loss and gradient are 0). */
typedef struct train_aux {
    const float *opp_pi;     /* (B, A) the opponent's next policy target, canonical actions
                              * of the sample's own view; a row of zeros: none */
    const float *material;   /* (B) the final material balance, mover's view, in [-1, 1] */
    const float *material_w; /* (B) each material target's weight (1, or 0: none); NULL
                              * with material: all 1 */
} train_aux;

typedef struct model_train model_train;

/* A trainer of m (borrowed: m must outlive it and is updated in place) for
 * batches of up to max_batch samples. The model's optimizer state is kept
 * when it is of c->optimizer's kind (a resumed checkpoint), otherwise
 * replaced by zeroed state (logged). NULL (logged) for a bad config, a
 * max_batch < 1, or no memory. Caller owns the result. */
model_train *model_train_new(model *m, const train_config *c, int max_batch);
void model_train_destroy(model_train **t);
/* Changes the settings (e.g. the learning rate) between steps; the optimizer
 * kind must stay the same. 0 or KZ_EINVAL. */
int model_train_set_config(model_train *t, const train_config *c);
/* One step on B samples (1 <= B <= max_batch): x (B, C, H, W), pi (B, A)
 * targets (each a distribution over canonical actions, or zeros: no policy
 * target), z (B) value targets (outcomes) from the mover's view. Forward
 * with batch statistics, backward, running averages, clipping, the
 * optimizer update; step count + 1. Losses are of the weights before the
 * update. Allocates nothing. */
void model_train_step(model_train *t, const float *x, const float *pi, const float *z, int B,
                      train_losses *out);
/* Loss and gradient (into model_train_grads) at the current weights, with
 * batch statistics, changing nothing in the model. out may be NULL. */
void model_train_compute(model_train *t, const float *x, const float *pi, const float *z, int B,
                         train_losses *out);
/* Loss only (same definition as compute, batch statistics, no gradient). */
double model_train_loss(model_train *t, const float *x, const float *pi, const float *z, int B,
                        train_losses *out);
/* The three above with the auxiliary heads' targets (aux NULL: none; the
 * plain forms pass NULL). Targets of a head the model lacks are ignored. A
 * model's auxiliary heads run forward in every call (their batch norms keep
 * running averages); their backward pass only with targets and a weight
 * above 0. */
void model_train_step_aux(model_train *t, const float *x, const float *pi, const float *z,
                          const train_aux *aux, int B, train_losses *out);
void model_train_compute_aux(model_train *t, const float *x, const float *pi, const float *z,
                             const train_aux *aux, int B, train_losses *out);
double model_train_loss_aux(model_train *t, const float *x, const float *pi, const float *z,
                            const train_aux *aux, int B, train_losses *out);
/* The flat trainable parameters (internal layout; tensors of kind WEIGHT and
 * PARAM in model_tensor order) and the gradient buffer of the same layout,
 * n floats each. Borrowed; for tests and diagnostics. */
float *model_train_params(model_train *t, size_t *n);
const float *model_train_grads(const model_train *t, size_t *n);


#endif
