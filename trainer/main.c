/* kz-trainer: the cluster's trainer (see trainer.h and docs/trainer.md).
 * Resumes from its checkpoint (or starts from a model file or the
 * coordinator's best), pulls batches, trains with augmentation by the game's
 * symmetries, paces
 * itself by the positions stored (max_reuse), submits a candidate every K
 * steps, checkpoints atomically, and reports losses and speed.
 * SIGTERM/SIGINT: finish the step, checkpoint, exit 0; a second signal
 * exits at once. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "common/config.h"
#include "nn/model.h"
#include "nn/gbdt.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "play/referee.h"
#include "play/yardstick.h"
#include "trainer/trainer.h"
#include "common/util.h"
#include "net/wire.h"

/* The trainer's own rows; the trees' training's are gbdt_train_options and
 * the connection's client_options, joined in s_table. */
#define O(f) offsetof(trainer_config, f)
#define CONFIG_STRUCT trainer_config
static const config_option s_own_options[] = {
    /* client_options' row with the trainer's meaning of "": one id per host. */
    {"client_id", CONFIG_STRING, "", 0, 0, O(client.client_id),
     "client id (\"\" = <host>-trainer: the same across restarts, one trainer per host)"},
    CONFIG_ROW_STRING(game, GAME_DEFAULT_NAME, "the game (the coordinator's must be the same)"),
    CONFIG_ROW_STRING(checkpoint_dir, "./var/trainer",
                      "directory of checkpoint.kzm (created if absent)"),
    CONFIG_ROW_STRING(init_model, "",
                      "model file to start from without a checkpoint (\"\" = the coordinator's "
                      "best)"),
    CONFIG_ROW_INT(batch_size, "256", 1, 65536, "samples per training step"),
    CONFIG_ROW_INT(min_positions, "4096", 1, 1099511627776.0,
                   "train only once the replay window holds this many positions"),
    CONFIG_ROW_DOUBLE(max_reuse, "4", 0, 1000000,
                      "at most this many samples trained per position stored (0 = no limit)"),
    CONFIG_ROW_INT(steps_per_candidate, "50", 1, 1000000000, "K: submit a candidate every K steps"),
    CONFIG_ROW_INT(checkpoint_every, "50", 1, 1000000000,
                   "steps between checkpoints (candidate steps and stops are always checkpointed)"),
    CONFIG_ROW_STRING(optimizer, "adam", "adam or sgd"),
    CONFIG_ROW_DOUBLE(lr, "0.001", 0, 10, "base learning rate"),
    CONFIG_ROW_STRING(schedule, "constant", "learning-rate schedule: constant, step or cosine"),
    CONFIG_ROW_INT(step_every, "100000", 1, 1e12, "step schedule: period"),
    CONFIG_ROW_DOUBLE(step_gamma, "0.1", 0, 1, "step schedule: decay factor"),
    CONFIG_ROW_INT(cosine_steps, "100000", 1, 1e12, "cosine schedule: steps to reach lr_min"),
    CONFIG_ROW_DOUBLE(lr_min, "0", 0, 10, "cosine schedule: final rate"),
    CONFIG_ROW_INT(warmup_steps, "0", 0, 1e12, "linear warm-up steps"),
    CONFIG_ROW_DOUBLE(momentum, "0.9", 0, 0.999999, "SGD momentum"),
    CONFIG_ROW_DOUBLE(adam_beta1, "0.9", 0, 0.999999, "Adam beta1"),
    CONFIG_ROW_DOUBLE(adam_beta2, "0.999", 0, 0.999999, "Adam beta2"),
    CONFIG_ROW_DOUBLE(l2, "0.0001", 0, 1, "c, the L2 coefficient"),
    CONFIG_ROW_DOUBLE(clip_norm, "0", 0, 1000000,
                      "clip the gradient's global norm to this (0 = off)"),
    CONFIG_ROW_BOOL(augment, "true",
                    "put each sample through one of the game's symmetries or the identity, drawn "
                    "uniformly (Khreibaga: the mirror with probability 1/2, R19; a game without "
                    "symmetries: none)"),
    {"mirror", CONFIG_ALIAS, "augment", 0, 0, 0, "the earlier name of augment"},
    CONFIG_ROW_DOUBLE(value_q_weight, "0", 0, 1,
                      "value target (1 - w) * z + w * q: the game result z mixed with the "
                      "search's root value q (0 = z alone)"),
    CONFIG_ROW_DOUBLE(reanalyse, "0", 0, 1,
                      "reanalyse: this share of each batch's positions is searched again by MCTS "
                      "with the newest network (the last candidate's weights) and its visit "
                      "shares replace their stored policy targets (MuZero Reanalyse; 0 = off)"),
    CONFIG_ROW_INT(reanalyse_simulations, "0", 0, 100000,
                   "reanalyse: simulations per position searched (0 = the game's, as self-play: "
                   "Khreibaga 200)"),
    CONFIG_ROW_DOUBLE(reanalyse_value_weight, "0", 0, 1,
                      "reanalyse: a searched position's value target becomes (1 - w) * target + w "
                      "* the search's root value (0 = the value target as without reanalyse)"),
    CONFIG_ROW_DOUBLE(ema_decay, "0", 0, 0.99999,
                      "candidates are an exponential moving average of the weights with this "
                      "decay per step (0 = the weights themselves)"),
    CONFIG_ROW_DOUBLE(aux_opp_policy_weight, "0.15", 0, 100,
                      "loss weight of the auxiliary opponent-policy head (a network that has it: "
                      "kz model init --opp_policy_filters; KataGo's 0.15)"),
    CONFIG_ROW_DOUBLE(aux_material_weight, "1", 0, 100,
                      "loss weight of the auxiliary material head (a network that has it: kz "
                      "model init --material_filters)"),
    CONFIG_ROW_STRING(tb_dir, "",
                      "endgame tables (kz tb build, docs/tablebase.md) for tb_value_targets; \"\" "
                      "= none"),
    CONFIG_ROW_BOOL(tb_value_targets, "false",
                    "a sample whose position the tables cover gets their exact value (under R13 "
                    "at its no-progress count, mover's view) as its value target instead of the "
                    "game's result"),
    CONFIG_ROW_BOOL(proven_value_targets, "false",
                    "Khreibaga: a sample whose position the proof search (play/referee.h, "
                    "docs/solve.md) settles within proven_nodes gets its proven value (fresh "
                    "history, mover's view) as its value target instead of the game's result"),
    CONFIG_ROW_INT(proven_nodes, "3000", 1, 100000000,
                   "proven_value_targets: the proof search's budget a position (expansions)"),
    CONFIG_ROW_DOUBLE(proven_share, "0.25", 0, 1,
                      "proven_value_targets: the share of each batch's samples tried"),
    CONFIG_ROW_INT(proven_pieces, "16", 1, 24,
                   "proven_value_targets: only positions with at most this many pieces (and "
                   "more than the tables of tb_dir cover)"),
    CONFIG_ROW_INT(threads, "1", 1, 256, "OpenBLAS threads"),
    CONFIG_ROW_INT(seed, "0", 0, 9007199254740991, "augmentation seed (0 = from the clock)"),
    CONFIG_ROW_INT(wait_ms, "1000", 10, 600000,
                   "poll period while waiting for positions or the coordinator"),
    CONFIG_ROW_DOUBLE(stats_s, "5", 0.1, 86400, "period of the TrainerStats report"),
    CONFIG_ROW_DOUBLE(log_s, "30", 0.1, 86400, "period of the progress line"),
    CONFIG_ROW_INT(max_steps, "0", 0, 1e12,
                   "stop cleanly once the step count reaches this (0 = never; trees: trainings)"),
    CONFIG_ROW_STRING(model_kind, "",
                      "net or gbdt: the kind of model trained (\"\" = the start model's: "
                      "checkpoint, init_model or the coordinator's best)"),
    CONFIG_ROW_INT(gbdt_window, "16384", 16, 10000000,
                   "trees: the latest samples kept and trained on"),
    CONFIG_ROW_INT(gbdt_samples_per_candidate, "4096", 1, 100000000,
                   "trees: fresh samples between trainings (each a candidate)"),
};
#undef O
#undef CONFIG_STRUCT
#define N_OWN (sizeof s_own_options / sizeof s_own_options[0])
#define N_OPTIONS_MAX 96 /* rows of the joined table at most */

static config_option s_options[N_OPTIONS_MAX]; /* the whole table (s_table) */
static size_t s_n_options;                    /* rows in s_options */

/* The whole table: the trainer's rows, the trees' training's, then the connection's. */
static size_t s_table(config_option *rows)
{
    config_group groups[] = {
        {s_own_options, N_OWN, 0},
        {gbdt_train_options, gbdt_train_options_n, offsetof(trainer_config, gbdt)},
        {client_options, client_options_n, offsetof(trainer_config, client)},
    };
    size_t n = config_join(rows, N_OPTIONS_MAX, groups, sizeof groups / sizeof groups[0]);
    /* A batch of a few thousand samples, or a candidate's upload and
     * registration, may take the coordinator longer to answer than a job. */
    config_set_default(rows, n, "timeout_ms", "5000");
    return n;
}

/* The trainer: everything the loop works with. */
/* The phases of the trainer's time, as the progress line shows them. */
enum tr_phase {
    TR_STEP,  /* model_train_step: the network's forward, backward, update */
    TR_BATCH, /* asking the coordinator for a batch (or for the counts) */
    TR_FILL,  /* unpacking and augmenting the batch (and reanalyse's searches) */
    TR_SAVE,  /* checkpoints and candidates */
    TR_WAIT,  /* waiting: reuse limit, too few positions, coordinator away */
    TR_PHASES
};

typedef struct tr {
    trainer_config cfg;        /* settings */
    const game_def *g;         /* the game */
    void *zctx;                /* ZeroMQ context */
    client *c;                 /* coordinator client */
    model *m;                  /* the weights being trained (owned) */
    model_train *t;            /* trainer of m (owned) */
    model *ema;                /* moving average of m's weights (ema_decay > 0), owned */
    char ema_path[CONFIG_STR_MAX + 32]; /* its file beside the checkpoint */
    train_config tc;           /* optimizer settings */
    char ckpt[CONFIG_STR_MAX + 32]; /* checkpoint path */
    uint64_t ckpt_step;        /* step of the last checkpoint written or read */
    uint32_t lineage;          /* version the weights were last registered as */
    float *x;                  /* (B, C, H, W) inputs */
    float *pi;                 /* (B, A) policy targets */
    float *z;                  /* (B) outcomes */
    bool aux;                  /* the network has auxiliary heads: ask for their targets */
    bool aux_warned;           /* "no auxiliary targets arrive" said */
    batch_aux ab;              /* (B, A), (B), (B) their dense targets (aux) */
    reanalyser *ra;            /* reanalyse > 0: the searches, else NULL */
    batch_reanalysed rb;       /* the last batch's fresh targets */
    double ra_time;            /* seconds spent in reanalyse's searches */
    tb_set *tb;                /* endgame tables for the value targets (tb_value_targets), or
                                  NULL */
    referee *prover;           /* proven_value_targets: the proof search, else NULL */
    int8_t *proven;            /* (B) the batch's proven values (BATCH_UNPROVEN: none) */
    double prove_time;         /* seconds spent proving */
    uint64_t prove_tried;      /* positions given to the proof search */
    rng_t rng;                 /* augmentation */
    batch_counts counts;       /* samples used, augmented, skipped */
    uint64_t window_hi;        /* positions ever stored (last reply) */
    double reuse_base;         /* samples the start model was trained on elsewhere, left out
                                * of the reuse count (set at the first reply) */
    bool reuse_based;          /* reuse_base is set */
    bool steps_here;           /* the start model's steps may be this store's: its own
                                * checkpoint, or a best this cluster trained (version > 1) */
    uint64_t window_lo;        /* window start (last reply) */
    uint64_t games_total;      /* games stored (last reply) */
    uint32_t best;             /* best version (last reply) */
    uint8_t *cand;             /* a candidate blob awaiting its ack, NULL none */
    size_t cand_len;           /* bytes in cand */
    uint64_t cand_step;        /* its step */
    double cand_retry;         /* no resubmission before this time_now() */
    uint32_t last_candidate;   /* version of the last candidate registered */
    double acc[6];             /* losses since the last report: total, value, policy, l2,
                                  opponent policy, material */
    int acc_n;                 /* steps in acc */
    uint64_t acc_samples;      /* samples in acc */
    double acc_time;           /* training seconds in acc */
    double lr;                 /* learning rate of the last step */
    wire_trainer_stats reported; /* the last report delivered */
    double last_stats;         /* time_now() of the last report */
    double last_log;           /* time_now() of the last progress line */
    double last_wait_log;      /* time_now() of the last waiting line */
    double log_acc[6];         /* losses since the last progress line */
    int log_n;                 /* steps in log_acc */
    uint64_t log_samples;      /* samples since the last progress line */
    double log_time;           /* training seconds since the last progress line */
    /* Where the time went since the last progress line (issue 24): wall
     * seconds in each phase of s_iterate, the process's CPU seconds, and the
     * CPU seconds of the training steps themselves. */
    double ph[TR_PHASES];      /* wall seconds per phase (tr_phase) */
    double log_cpu0;           /* s_cpu() at the last progress line */
    double log_step_cpu;       /* CPU seconds in model_train_step since then */
    bool offline_logged;       /* "not answering" said once */
    int kind;                  /* MODEL_KIND_NET or _GBDT, -1 while unknown (the best's) */
    uint8_t *start_blob;       /* trees: the coordinator's best when it is trees, else NULL */
    size_t start_len;          /* bytes in start_blob */
    uint32_t start_version;    /* the best's version (trees' parent) */
} tr;

static volatile sig_atomic_t s_stop; /* signal_catch_stop: the first stop signal */

/* mkdir -p. 0 or errno. */
static int s_mkdirs(const char *dir)
{
    char buf[CONFIG_STR_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST)
                return errno;
            *p = '/';
        }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return errno;
    return 0;
}

/* The optimizer settings from the config; KZ_EINVAL with err on a bad name. */
static int s_train_config(const trainer_config *cfg, train_config *tc, char *err, size_t errlen)
{
    train_config_default(tc);
    static const char *const optimizers[] = {"adam", "sgd"};
    static const int optimizer_kinds[] = {MODEL_OPT_ADAM, MODEL_OPT_SGD};
    static const char *const schedules[] = {"constant", "step", "cosine"};
    static const int schedule_kinds[] = {MODEL_LR_CONSTANT, MODEL_LR_STEP, MODEL_LR_COSINE};
    int k;
    if (name_parse(cfg->optimizer, optimizers, 2, &k))
        return err_set(err, errlen, KZ_EINVAL, "optimizer: '%s' is not adam or sgd",
                       cfg->optimizer);
    tc->optimizer = optimizer_kinds[k];
    if (name_parse(cfg->schedule, schedules, 3, &k))
        return err_set(err, errlen, KZ_EINVAL, "schedule: '%s' is not constant, step or cosine",
                       cfg->schedule);
    tc->schedule = schedule_kinds[k];
    tc->lr = (float)cfg->lr;
    tc->step_every = (uint64_t)cfg->step_every;
    tc->step_gamma = (float)cfg->step_gamma;
    tc->cosine_steps = (uint64_t)cfg->cosine_steps;
    tc->lr_min = (float)cfg->lr_min;
    tc->warmup_steps = (uint64_t)cfg->warmup_steps;
    tc->momentum = (float)cfg->momentum;
    tc->adam_beta1 = (float)cfg->adam_beta1;
    tc->adam_beta2 = (float)cfg->adam_beta2;
    tc->l2 = (float)cfg->l2;
    tc->clip_norm = (float)cfg->clip_norm;
    tc->aux_opp_policy_weight = (float)cfg->aux_opp_policy_weight;
    tc->aux_material_weight = (float)cfg->aux_material_weight;
    char sub[200];
    if (train_config_check(tc, sub, sizeof sub)) {
        snprintf(err, errlen, "%s", sub);
        return KZ_EINVAL;
    }
    return 0;
}

/* Waits while nothing can be done, servicing the client (heartbeats). */
static void s_wait(tr *t)
{
    double t0 = time_now();
    client_poll(t->c, (int)t->cfg.wait_ms);
    t->ph[TR_WAIT] += time_now() - t0;
}

/* The process's CPU seconds (all its threads). */
static double s_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A line at most every log_s while waiting. */
static bool s_wait_log_due(tr *t)
{
    double now = time_now();
    if (t->last_wait_log && now - t->last_wait_log < t->cfg.log_s)
        return false;
    t->last_wait_log = now;
    return true;
}

/* Writes the checkpoint. 0 or an error (logged). */
static int s_checkpoint(tr *t)
{
    int rc = modelfile_save(t->m, t->ckpt, true);
    if (rc) {
        log_error("checkpoint: cannot write %s: %s", t->ckpt, err_str(rc));
        return rc;
    }
    if (t->ema) {
        model_edit_meta(t->ema)->step = model_get_meta(t->m)->step;
        rc = modelfile_save(t->ema, t->ema_path, false);
        if (rc) {
            log_error("checkpoint: cannot write %s: %s", t->ema_path, err_str(rc));
            return rc;
        }
    }
    t->ckpt_step = model_get_meta(t->m)->step;
    log_info("checkpoint: step %llu -> %s", (unsigned long long)t->ckpt_step, t->ckpt);
    return 0;
}

/* Sends the pending candidate. KZ_EVERSION when refused, else 0. */
static int s_submit_candidate(tr *t)
{
    wire_candidate_ack ack;
    int rc = client_submit_candidate(t->c, t->cand, t->cand_len, t->lineage, t->cand_step, &ack);
    if (rc == KZ_EVERSION)
        return rc;
    if (rc == KZ_EREJECTED) {
        log_error("candidate of step %llu refused: %s", (unsigned long long)t->cand_step,
                  client_last_error(t->c));
    } else if (rc) {
        log_warn("candidate of step %llu not acknowledged yet: %s; retrying",
                 (unsigned long long)t->cand_step, client_last_error(t->c));
        t->cand_retry = time_now() + t->cfg.wait_ms / 1000.0;
        return 0;
    } else {
        log_info("candidate: step %llu registered as version %u (parent %u%s%s)",
                 (unsigned long long)t->cand_step, (unsigned)ack.version, (unsigned)t->lineage,
                 ack.duplicate ? ", duplicate" : "", ack.queued ? ", queued" : "");
        t->lineage = ack.version;
        t->last_candidate = ack.version;
        model_meta_unversioned(model_edit_meta(t->m), t->lineage);
    }
    free(t->cand);
    t->cand = NULL;
    return 0;
}

/* Reanalyse's network: the weights the workers get (the candidate's). 0 or
 * KZ_ENOMEM (logged). */
static int s_reanalyse_model(tr *t)
{
    if (!t->ra)
        return 0;
    int rc = reanalyser_set_model(t->ra, t->ema ? t->ema : t->m);
    if (rc)
        log_error("reanalyse: no memory for the network's evaluator");
    return rc;
}

/* A candidate of the current weights (or of their moving average):
 * checkpoint first, then submit. */
static int s_candidate(tr *t)
{
    model_meta *meta = model_edit_meta(t->m);
    meta->created_ms = time_wall_ms();
    model_meta_unversioned(meta, t->lineage);
    if (t->ema) /* the step too: s_checkpoint gives the average the same */
        *model_edit_meta(t->ema) = *meta;
    int rc = s_checkpoint(t);
    if (rc)
        return rc;
    free(t->cand);
    t->cand = NULL;
    rc = modelfile_to_bytes(t->ema ? t->ema : t->m, &t->cand, &t->cand_len);
    if (rc) {
        log_error("candidate: cannot serialise the model: %s", err_str(rc));
        return rc;
    }
    t->cand_step = model_get_meta(t->m)->step;
    if ((rc = s_reanalyse_model(t)) != 0)
        return rc;
    return s_submit_candidate(t);
}

/* Sends TrainerStats: the averages since the last report, or (no step
 * since, e.g. while waiting) the last ones again. */
static void s_report(tr *t)
{
    wire_trainer_stats st = t->reported;
    st.step = model_get_meta(t->m)->step;
    if (t->acc_n) {
        st.loss = (float)(t->acc[0] / t->acc_n);
        st.value_loss = (float)(t->acc[1] / t->acc_n);
        st.policy_loss = (float)(t->acc[2] / t->acc_n);
        st.l2_loss = (float)(t->acc[3] / t->acc_n);
        st.opp_policy_loss = (float)(t->acc[4] / t->acc_n);
        st.material_loss = (float)(t->acc[5] / t->acc_n);
    }
    if (t->acc_time > 0) {
        st.steps_per_s = (float)(t->acc_n / t->acc_time);
        st.samples_per_s = (float)(t->acc_samples / t->acc_time);
    }
    st.learning_rate = (float)(t->lr ? t->lr : train_config_lr(&t->tc, st.step));
    st.samples_seen = st.step * (uint64_t)t->cfg.batch_size;
    st.last_candidate = t->last_candidate;
    int rc = client_report_stats(t->c, &st);
    t->last_stats = time_now();
    if (rc) {
        log_debug("stats not delivered: %s", client_last_error(t->c));
        return;
    }
    t->reported = st;
    memset(t->acc, 0, sizeof t->acc);
    t->acc_n = 0;
    t->acc_samples = 0;
    t->acc_time = 0;
}

static void s_progress(tr *t, bool force)
{
    double now = time_now();
    if ((!force && now - t->last_log < t->cfg.log_s) || t->log_n == 0)
        return;
    int n = t->log_n;
    char aux[96] = "";
    if (t->aux)
        snprintf(aux, sizeof aux, ", opp policy %.4f, material %.4f", t->log_acc[4] / n,
                 t->log_acc[5] / n);
    char tbv[128] = "";
    if (t->tb && t->cfg.tb_value_targets)
        snprintf(tbv, sizeof tbv, ", table values %llu", (unsigned long long)t->counts.tb_values);
    if (t->prover)
        snprintf(tbv + strlen(tbv), sizeof tbv - strlen(tbv), ", proven %llu of %llu (%.0f s)",
                 (unsigned long long)t->counts.proven_values,
                 (unsigned long long)t->prove_tried, t->prove_time);
    if (t->ra)
        snprintf(tbv + strlen(tbv), sizeof tbv - strlen(tbv), ", reanalysed %llu (%.0f s)",
                 (unsigned long long)t->counts.reanalysed, t->ra_time);
    /* Where the time went: the process's CPU over the wall time, the
     * step's wall and CPU milliseconds, and each phase's share of the wall. */
    double wall = now - t->last_log, cpu = s_cpu();
    double *ph = t->ph, w = wall > 0 ? 100.0 / wall : 0.0;
    log_info("progress: step %llu, loss %.4f (value %.4f, policy %.4f, l2 %.4f%s), lr %.3g, "
             "samples/s %.0f, positions %llu, games %llu, best %u, candidate %u, skipped %llu%s; "
             "cpu %.2f of a core, step %.1f ms (cpu %.1f ms), time: step %.0f%%, batch %.0f%%, "
             "fill %.0f%%, save %.0f%%, wait %.0f%%",
             (unsigned long long)model_get_meta(t->m)->step, t->log_acc[0] / n, t->log_acc[1] / n,
             t->log_acc[2] / n, t->log_acc[3] / n, aux, t->lr,
             t->log_time > 0 ? t->log_samples / t->log_time : 0.0,
             (unsigned long long)t->window_hi, (unsigned long long)t->games_total,
             (unsigned)t->best, (unsigned)t->last_candidate,
             (unsigned long long)t->counts.skipped, tbv,
             wall > 0 ? (cpu - t->log_cpu0) / wall : 0.0, 1e3 * t->log_time / n,
             1e3 * t->log_step_cpu / n, ph[TR_STEP] * w, ph[TR_BATCH] * w, ph[TR_FILL] * w,
             ph[TR_SAVE] * w, ph[TR_WAIT] * w);
    memset(t->log_acc, 0, sizeof t->log_acc);
    memset(t->ph, 0, sizeof t->ph);
    t->log_n = 0;
    t->log_samples = 0;
    t->log_time = 0;
    t->log_step_cpu = 0;
    t->log_cpu0 = cpu;
    t->last_log = now;
}

/* The coordinator's game (its welcome, a batch's positions) against ours:
 * 0, or KZ_EMISMATCH after a clear error ("" says nothing: an older one). */
static int s_check_game(const tr *t, const char *what, const char *game)
{
    if (!game || !game[0] || !strcmp(game, t->g->name))
        return 0;
    log_error("refused %s of game '%.40s': this trainer trains '%s' (its setting game)", what,
              game, t->g->name);
    return KZ_EMISMATCH;
}

/* Notes the counts of a batch reply. At the first, the samples of the
 * start model's steps that this store's positions did not give are left
 * out of the reuse count, so that steps from another run (a model carried
 * to a new cluster, as init_model or the coordinator's initial model, its
 * version 1) do not make the trainer wait for positions it never trained
 * on: all of them for such a start model, those beyond max_reuse on the
 * positions stored so far for a checkpoint (a checkpoint of such a run) or
 * a best this cluster trained (a trainer that lost its checkpoint must not
 * train on the old positions max_reuse times again). */
static void s_note_reply(tr *t, const wire_batch_reply *b)
{
    if (!t->reuse_based && t->cfg.max_reuse > 0 && t->m) {
        double done = (double)model_get_meta(t->m)->step * (double)t->cfg.batch_size;
        double allowed = t->steps_here ? t->cfg.max_reuse * (double)b->window_hi : 0;
        t->reuse_base = done > allowed ? done - allowed : 0;
        t->reuse_based = true;
        if (t->reuse_base > 0)
            log_info("the start model's step %llu (%.0f samples; %llu positions stored): %.0f "
                     "of its samples were trained elsewhere and are left out of the reuse count",
                     (unsigned long long)model_get_meta(t->m)->step, done,
                     (unsigned long long)b->window_hi, t->reuse_base);
    }
    t->window_hi = b->window_hi;
    t->window_lo = b->window_lo;
    t->games_total = b->games_total;
    if (b->best_version)
        t->best = b->best_version;
}

/* Logs a failed request once until the coordinator answers again. */
static void s_offline(tr *t)
{
    if (!t->offline_logged)
        log_warn("coordinator not answering: %s; waiting", client_last_error(t->c));
    t->offline_logged = true;
}

static void s_online(tr *t)
{
    if (t->offline_logged)
        log_info("coordinator answering again");
    t->offline_logged = false;
}

/* What a batch request's answer (rc, b) asks for: KZ_EVERSION or the wrong
 * game is fatal (returned); a failed request leaves the trainer offline
 * (waits, *waited); otherwise it is online and the reply's figures noted.
 * 0 or fatal. */
static int s_batch_answer(tr *t, int rc, const wire_batch_reply *b, bool *waited)
{
    *waited = false;
    if (rc == KZ_EVERSION)
        return rc;
    if (rc) {
        s_offline(t);
        s_wait(t);
        *waited = true;
        return 0;
    }
    s_online(t);
    if ((rc = s_check_game(t, "the coordinator's positions", b->game)) ||
        (rc = s_check_game(t, "the coordinator", client_welcome(t->c)->game)))
        return rc;
    s_note_reply(t, b);
    return 0;
}

/* One pass: pacing, a batch, a step, candidate/checkpoint. 0 or fatal. */
/* proven_value_targets: the first proven_share of batch b's samples (a
 * batch is a random draw) valued by the proof search where it settles them
 * within proven_nodes (a fresh history: the value the referee gives, cached
 * across batches); t->proven[i] for the batch_fill. Turn starts only, with
 * more pieces than the tables cover and at most proven_pieces. */
static void s_prove(tr *t, const wire_batch_reply *b)
{
    double t0 = time_now();
    int k = (int)(t->cfg.proven_share * (double)b->n + 0.5), few = t->tb ? tb_pieces(t->tb) : 0;
    uint32_t n = b->n < (uint32_t)t->cfg.batch_size ? b->n : (uint32_t)t->cfg.batch_size;
    t->rb.proven = t->proven;
    t->rb.n_proven = (int)n;
    for (uint32_t i = 0; i < n; i++) {
        t->proven[i] = BATCH_UNPROVEN;
        game_state s;
        if ((int)i >= k || b->packed_bytes != (uint32_t)t->g->packed_bytes ||
            t->g->unpack_state(b->packed + (size_t)i * b->packed_bytes, &s) != 0 ||
            t->g->mid_turn(&s) || t->g->result(&s).over)
            continue;
        int pieces = yard_pieces(t->g, &s);
        if (pieces <= few || pieces > t->cfg.proven_pieces)
            continue;
        referee_value v;
        t->prove_tried++;
        if (referee_value_of(t->prover, &s, &v) == 0 && v.lo == v.hi)
            t->proven[i] = v.lo;
    }
    t->prove_time += time_now() - t0;
}

static int s_iterate(tr *t)
{
    uint64_t step = model_get_meta(t->m)->step;
    uint64_t B = (uint64_t)t->cfg.batch_size;
    const wire_batch_reply *b = NULL;
    /* Step 1. Pacing: wait for fresh positions rather than reuse old ones. */
    if (t->cfg.max_reuse > 0 &&
        (double)(step + 1) * B - t->reuse_base > t->cfg.max_reuse * t->window_hi) {
        bool waited;
        double f0 = time_now();
        int rc = client_get_batch(t->c, 0, 0, &b); /* counts only */
        t->ph[TR_BATCH] += time_now() - f0;
        if ((rc = s_batch_answer(t, rc, b, &waited)) || waited)
            return rc;
        if ((double)(step + 1) * B - t->reuse_base > t->cfg.max_reuse * t->window_hi) {
            if (s_wait_log_due(t))
                log_info("waiting: reuse limit (%.0f samples trained on %llu positions, "
                         "max_reuse %g)",
                         (double)step * B - t->reuse_base, (unsigned long long)t->window_hi,
                         t->cfg.max_reuse);
            s_wait(t);
            return 0;
        }
    }
    /* Step 2. A batch. */
    bool waited;
    double f0 = time_now();
    int rc = client_get_batch_aux(t->c, (uint32_t)B, (uint64_t)t->cfg.min_positions, t->aux, &b);
    t->ph[TR_BATCH] += time_now() - f0;
    if ((rc = s_batch_answer(t, rc, b, &waited)) || waited)
        return rc;
    if (b->n == 0) {
        if (s_wait_log_due(t))
            log_info("waiting: window holds %llu positions, need %ld",
                     (unsigned long long)(t->window_hi - t->window_lo), t->cfg.min_positions);
        s_wait(t);
        return 0;
    }
    t->last_wait_log = 0;
    uint64_t skipped = t->counts.skipped;
    double fill0 = time_now();
    if (t->ra) {
        /* Reanalyse: the batch's first share searched with the newest network. */
        int k = (int)(t->cfg.reanalyse * (double)b->n + 0.5);
        double r0 = time_now();
        rc = reanalyser_run(t->ra, b, k, &t->rb);
        t->ra_time += time_now() - r0;
        if (rc) {
            log_error("reanalyse: the search failed: %s", err_str(rc));
            return rc;
        }
    }
    if (t->prover)
        s_prove(t, b);
    int n = batch_fill_re(t->g, b, t->cfg.augment, (float)t->cfg.value_q_weight,
                          t->cfg.tb_value_targets ? t->tb : NULL,
                          t->ra || t->prover ? &t->rb : NULL, &t->rng, t->x, t->pi, t->z,
                          t->aux ? &t->ab : NULL, (int)B, &t->counts);
    t->ph[TR_FILL] += time_now() - fill0;
    if (t->counts.skipped > skipped)
        log_warn("batch: %llu of %u samples unusable, skipped",
                 (unsigned long long)(t->counts.skipped - skipped), (unsigned)b->n);
    if (t->aux && !t->aux_warned && t->counts.used >= 4 * B &&
        t->counts.aux_opp + t->counts.aux_material == 0) {
        log_warn("the network has auxiliary heads but no batch carries their targets: set "
                 "aux_targets = true in the coordinator's settings (the heads train with weight "
                 "0 meanwhile)");
        t->aux_warned = true;
    }
    if (n == 0)
        return 0;
    /* Step 3. The step. */
    train_losses l;
    double t0 = time_now(), c0 = s_cpu();
    train_aux ta = {t->ab.opp_pi, t->ab.material, t->ab.material_w};
    model_train_step_aux(t->t, t->x, t->pi, t->z, t->aux ? &ta : NULL, n, &l);
    double dt = time_now() - t0;
    t->log_step_cpu += s_cpu() - c0;
    t->ph[TR_STEP] += dt;
    if (!isfinite(l.total)) {
        log_error("step %llu: the loss is not finite (%g); stopping without a checkpoint",
                  (unsigned long long)step, l.total);
        return KZ_EINVAL;
    }
    double parts[6] = {l.total, l.value, l.policy, l.l2, l.opp_policy, l.material};
    for (int k = 0; k < 6; k++) {
        t->acc[k] += parts[k];
        t->log_acc[k] += parts[k];
    }
    t->acc_n++;
    t->log_n++;
    t->acc_samples += (uint64_t)n;
    t->log_samples += (uint64_t)n;
    t->acc_time += dt;
    t->log_time += dt;
    t->lr = l.lr;
    step = model_get_meta(t->m)->step;
    if (t->ema) {
        /* TensorFlow's ExponentialMovingAverage with num_updates: a short
         * average while there are few steps, so the start weights fade. */
        double d = fmin(t->cfg.ema_decay, (1.0 + (double)step) / (10.0 + (double)step));
        model_blend(t->ema, t->m, (float)(1.0 - d));
    }
    /* Step 4. Candidate or checkpoint. */
    double s0 = time_now();
    rc = 0;
    if (step % (uint64_t)t->cfg.steps_per_candidate == 0)
        rc = s_candidate(t);
    else if (step % (uint64_t)t->cfg.checkpoint_every == 0)
        rc = s_checkpoint(t);
    t->ph[TR_SAVE] += time_now() - s0;
    return rc;
}

/* The model file s_start_model will read (the checkpoint when there is one,
 * else init_model), read and validated up front so that a bad one stops the
 * trainer with one line. 0, or its error with the message in err. */
static int s_check_start_file(const tr *t, char *err, size_t errlen)
{
    struct stat sb;
    bool ckpt = stat(t->ckpt, &sb) == 0;
    if (!ckpt && !t->cfg.init_model[0])
        return 0;
    char why[400];
    model *m = NULL;
    int rc = modelfile_load(ckpt ? t->ckpt : t->cfg.init_model, t->g, &m, why, sizeof why);
    model_destroy(&m);
    if (rc)
        snprintf(err, errlen, "%s: %s", ckpt ? "checkpoint" : "init_model", why);
    return rc;
}

/* The start model: the checkpoint, init_model, or the coordinator's best. */
static int s_start_model(tr *t)
{
    char err[512];
    struct stat sb;
    if (t->kind == MODEL_KIND_GBDT)
        goto best; /* trees without a checkpoint or init_model: the best's version */
    if (stat(t->ckpt, &sb) == 0) {
        int rc = modelfile_load(t->ckpt, t->g, &t->m, err, sizeof err);
        if (rc) {
            log_error("cannot resume: %s", err);
            return rc;
        }
        t->ckpt_step = model_get_meta(t->m)->step;
        t->steps_here = true;
        t->lineage = model_get_meta(t->m)->parent;
        log_info("resuming from %s at step %llu (optimizer %s, %llu updates, lineage %u)",
                 t->ckpt, (unsigned long long)t->ckpt_step,
                 model_optim_kind(t->m) == MODEL_OPT_ADAM  ? "adam"
                 : model_optim_kind(t->m) == MODEL_OPT_SGD ? "sgd"
                                                           : "none",
                 (unsigned long long)model_optim_steps(t->m), (unsigned)t->lineage);
        return 0;
    }
    if (t->cfg.init_model[0]) {
        int rc = modelfile_load(t->cfg.init_model, t->g, &t->m, err, sizeof err);
        if (rc) {
            log_error("cannot start: %s", err);
            return rc;
        }
        t->lineage = model_get_meta(t->m)->version;
        log_info("starting from %s (version %u), step %llu", t->cfg.init_model,
                 (unsigned)t->lineage, (unsigned long long)model_get_meta(t->m)->step);
        model_meta_unversioned(model_edit_meta(t->m), t->lineage);
        return 0;
    }
best:
    /* The coordinator's best, as long as it takes. */
    log_info("no checkpoint in %s and no init_model: asking the coordinator for its best model",
             t->cfg.checkpoint_dir);
    for (;;) {
        if (s_stop)
            return KZ_ETIMEOUT;
        uint8_t *blob;
        size_t len;
        wire_model_reply info;
        int rc = client_get_model(t->c, 0, 0, &blob, &len, &info);
        if (rc == KZ_EVERSION)
            return rc;
        if (rc) {
            s_offline(t);
            s_wait(t);
            continue;
        }
        s_online(t);
        uint32_t v = info.version;
        if (t->kind == MODEL_KIND_GBDT || gbdt_is_file(blob, len)) {
            /* Trees are trained by trainer_gbdt_run: from the best if it is
             * trees, else from none with the best as parent. */
            t->kind = MODEL_KIND_GBDT;
            t->start_version = v;
            if (gbdt_is_file(blob, len)) {
                t->start_blob = blob;
                t->start_len = len;
            } else {
                free(blob);
            }
            return 0;
        }
        rc = modelfile_from_bytes(blob, len, t->g, &t->m, err, sizeof err);
        free(blob);
        if (rc) {
            log_error("the coordinator's best model %u is not usable: %s", (unsigned)v, err);
            return rc;
        }
        char arch[128];
        model_arch_describe(model_get_arch(t->m), arch, sizeof arch);
        t->lineage = v;
        t->steps_here = v > 1; /* version 1: the initial model, trained elsewhere or not */
        model_meta_unversioned(model_edit_meta(t->m), v);
        log_info("starting from model %u of the coordinator (%s), step %llu", (unsigned)v, arch,
                 (unsigned long long)model_get_meta(t->m)->step);
        return 0;
    }
}

/* The kind of model to train: the setting model_kind, else the checkpoint's
 * (checkpoint.kzg: trees, checkpoint.kzm: a network), else init_model's,
 * else -1 (the coordinator's best decides, in s_start_model). A trees start
 * file is read and checked here. 0 or KZ_EINVAL with err. */
static int s_resolve_kind(tr *t, char *err, size_t errlen)
{
    char kzg[CONFIG_STR_MAX + 32];
    snprintf(kzg, sizeof kzg, "%s/checkpoint.kzg", t->cfg.checkpoint_dir);
    struct stat sb;
    model_kind k;
    t->kind = -1;
    if (t->cfg.model_kind[0]) {
        if (modelkind_parse(t->cfg.model_kind, &k))
            return err_set(err, errlen, KZ_EINVAL, "model_kind: '%.40s' is not net or gbdt",
                           t->cfg.model_kind);
        t->kind = (int)k;
    } else if (stat(kzg, &sb) == 0) {
        t->kind = MODEL_KIND_GBDT;
    } else if (stat(t->ckpt, &sb) == 0) {
        t->kind = MODEL_KIND_NET;
    } else if (t->cfg.init_model[0]) {
        uint8_t head[8];
        FILE *f = fopen(t->cfg.init_model, "rb");
        size_t n = f ? fread(head, 1, sizeof head, f) : 0;
        if (f)
            fclose(f);
        t->kind = gbdt_is_file(head, n) ? MODEL_KIND_GBDT : MODEL_KIND_NET;
    }
    if (t->kind != MODEL_KIND_GBDT)
        return 0;
    const char *start = stat(kzg, &sb) == 0 ? kzg : t->cfg.init_model;
    if (!start[0])
        return 0;
    gbdt *m = NULL;
    char why[400];
    int rc = gbdt_load(start, t->g, &m, why, sizeof why);
    gbdt_destroy(&m);
    if (rc)
        return err_set(err, errlen, rc, "%s: %s", start == kzg ? "checkpoint" : "init_model",
                       why);
    return 0;
}

static const char s_usage[] =
    "usage: kz-trainer [--config=FILE] [--key=value ...]\n\n"
    "The Khreibaga Zero trainer: pulls batches from the coordinator's replay\n"
    "window, trains the network (samples augmented by the game's symmetries),\n"
    "waits for fresh games rather than reuse positions more than max_reuse\n"
    "times, submits a candidate every steps_per_candidate steps, checkpoints\n"
    "atomically and resumes from the checkpoint. SIGTERM/SIGINT: finish the\n"
    "step, checkpoint, exit 0.\n"
    "Exit status: 0 clean stop, 1 fatal error, 2 bad settings.\n"
    "See docs/trainer.md.\n\n";

/* Step 1 of the start-up: the settings, checked before anything is logged
 * (a bad one is one line and exit status 2): the table, the game, the
 * optimizer, the endpoint, the checkpoint directory and the start model.
 * Returns -1 to go on, or the exit status (0 after --help, 2). */
static int s_settings(tr *t, int argc, char **argv)
{
    char err[512];
    s_n_options = s_table(s_options);
    gbdt_train_config_default(&t->cfg.gbdt);
    client_config_default(&t->cfg.client);
    int rc = config_start("kz-trainer", s_usage, s_options, s_n_options, &t->cfg, argc, argv,
                          NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    t->g = game_find_said(t->cfg.game, INT_MAX, err, sizeof err);
    if (!t->g) {
        fprintf(stderr, "kz-trainer: game: %s\n", err);
        return 2;
    }
    if (t->cfg.tb_dir[0] && t->g != tb_game()) {
        fprintf(stderr, "kz-trainer: tb_dir: the endgame tables are %s's, not %s's\n",
                tb_game()->name, t->g->name);
        return 2;
    }
    if (t->cfg.reanalyse > 0 && !t->g->unpack_state) {
        fprintf(stderr, "kz-trainer: reanalyse: %s's stored positions cannot be searched again "
                "(its game module has no unpack_state)\n", t->g->name);
        return 2;
    }
    if (t->cfg.tb_value_targets && !t->cfg.tb_dir[0]) {
        fprintf(stderr, "kz-trainer: tb_value_targets needs tb_dir (endgame tables)\n");
        return 2;
    }
    if (t->cfg.proven_value_targets && t->g != tb_game()) {
        fprintf(stderr, "kz-trainer: proven_value_targets: the proof search is %s's, not %s's\n",
                tb_game()->name, t->g->name);
        return 2;
    }
    if (s_train_config(&t->cfg, &t->tc, err, sizeof err)) {
        fprintf(stderr, "kz-trainer: %s\n", err);
        return 2;
    }
    if (!t->cfg.client.endpoint[0] || !t->cfg.checkpoint_dir[0]) {
        fprintf(stderr, "kz-trainer: %s: must not be empty\n",
                !t->cfg.client.endpoint[0] ? "endpoint" : "checkpoint_dir");
        return 2;
    }
    if (wire_endpoint_check(t->cfg.client.endpoint, false, err, sizeof err)) {
        fprintf(stderr, "kz-trainer: endpoint: %s\n", err);
        return 2;
    }
    rc = s_mkdirs(t->cfg.checkpoint_dir);
    if (rc) {
        fprintf(stderr, "kz-trainer: checkpoint_dir %s: %s\n", t->cfg.checkpoint_dir,
                strerror(rc));
        return 2;
    }
    snprintf(t->ckpt, sizeof t->ckpt, "%s/checkpoint.kzm", t->cfg.checkpoint_dir);
    snprintf(t->ema_path, sizeof t->ema_path, "%s/ema.kzm", t->cfg.checkpoint_dir);
    /* A trainer killed mid-checkpoint left its temp files: gone now. */
    int stale = file_remove_stale_tmp(t->ckpt) + file_remove_stale_tmp(t->ema_path);
    if (stale)
        log_info("checkpoint: removed %d temp file%s of a trainer killed mid-write", stale,
                 stale == 1 ? "" : "s");
    if ((rc = s_resolve_kind(t, err, sizeof err)) != 0 ||
        (t->kind != MODEL_KIND_GBDT && s_check_start_file(t, err, sizeof err))) {
        fprintf(stderr, "kz-trainer: %s\n", err);
        return 2;
    }
    if (client_check_keys(&t->cfg.client, err, sizeof err)) {
        fprintf(stderr, "kz-trainer: %s\n", err);
        return 2;
    }
    return -1;
}

/* Step 3: the threads, the seed and the coordinator client. 0 or 1. */
static int s_connect(tr *t)
{
    model_set_threads((int)t->cfg.threads);
    rng_seed(&t->rng, t->cfg.seed ? (uint64_t)t->cfg.seed
                                  : mix64((uint64_t)time_wall_ms() ^ ((uint64_t)getpid() << 40)));
    t->zctx = zmq_ctx_new();
    client_config *cc = &t->cfg.client;
    /* The same id across restarts: the coordinator's worker table keeps one
     * row for the trainer. */
    if (!cc->client_id[0]) {
        char host[64] = "";
        gethostname(host, sizeof host - 1);
        snprintf(cc->client_id, sizeof cc->client_id, "%s-trainer", host[0] ? host : "localhost");
    }
    cc->role = "trainer";
    cc->game = t->cfg.game;
    cc->slots = 0;
    cc->max_pending = 1; /* it submits no games */
    t->c = t->zctx ? client_new(t->zctx, cc) : NULL;
    if (!t->c)
        return 1;
    client_set_interrupt(t->c, &s_stop); /* a stop signal cuts a waiting request short */
    /* Said before the first request: with no coordinator there, that
     * request takes timeout_ms * retries to give up. */
    log_info("trainer %s: coordinator at %s", client_id(t->c), t->cfg.client.endpoint);
    return 0;
}

/* The moving average: the one saved beside the checkpoint when it has the
 * checkpoint's step and shape, else a copy of the weights. 0 or 1. */
static int s_ema_start(tr *t)
{
    char err[512];
    struct stat sb;
    if (t->ckpt_step && stat(t->ema_path, &sb) == 0) {
        int rc = modelfile_load(t->ema_path, t->g, &t->ema, err, sizeof err);
        if (rc == 0 && (model_get_meta(t->ema)->step != t->ckpt_step ||
                        !model_arch_equal(model_get_arch(t->ema), model_get_arch(t->m)))) {
            log_warn("%s is not of the checkpoint's step or shape; restarting the average",
                     t->ema_path);
            model_destroy(&t->ema);
        } else if (rc) {
            log_warn("%s: %s; restarting the average", t->ema_path, err);
        }
    }
    if (!t->ema) {
        t->ema = model_clone(t->m);
        if (!t->ema || model_optim_reset(t->ema, MODEL_OPT_NONE, 0)) {
            log_error("cannot start: out of memory for the moving average");
            return 1;
        }
    }
    log_info("candidates: moving average of the weights, decay %g", t->cfg.ema_decay);
    return 0;
}

/* Step 5: the trainer of the start model and the batch buffers. 0 or 1. */
static int s_alloc(tr *t)
{
    t->t = model_train_new(t->m, &t->tc, (int)t->cfg.batch_size);
    size_t B = (size_t)t->cfg.batch_size;
    size_t P = (size_t)t->g->planes * t->g->height * t->g->width;
    t->x = malloc(B * P * sizeof *t->x);
    t->pi = malloc(B * (size_t)t->g->action_count * sizeof *t->pi);
    t->z = malloc(B * sizeof *t->z);
    if (!t->t || !t->x || !t->pi || !t->z) {
        log_error("cannot start: out of memory for batches of %zu", B);
        return 1;
    }
    /* Auxiliary heads: their targets come with the batches (the coordinator
     * stores them with aux_targets). */
    const model_arch *a = model_get_arch(t->m);
    t->aux = a->opp_policy_filters > 0 || a->material_filters > 0;
    if (t->aux) {
        t->ab.opp_pi = malloc(B * (size_t)t->g->action_count * sizeof *t->ab.opp_pi);
        t->ab.material = malloc(B * sizeof *t->ab.material);
        t->ab.material_w = malloc(B * sizeof *t->ab.material_w);
        if (!t->ab.opp_pi || !t->ab.material || !t->ab.material_w) {
            log_error("cannot start: out of memory for batches of %zu", B);
            return 1;
        }
        log_info("auxiliary heads: opponent policy %d filters (weight %g), material %d filters "
                 "(weight %g); their targets from the coordinator's aux_targets",
                 a->opp_policy_filters, t->cfg.aux_opp_policy_weight, a->material_filters,
                 t->cfg.aux_material_weight);
    }
    if (t->cfg.tb_value_targets || (t->cfg.proven_value_targets && t->cfg.tb_dir[0])) {
        char err[512];
        t->tb = tb_open(t->cfg.tb_dir, 0, err, sizeof err);
        if (!t->tb) {
            log_error("cannot start: tb_dir: %s", err);
            return 1;
        }
        log_info("endgame tables: every position with up to %d pieces (%s)%s", tb_pieces(t->tb),
                 t->cfg.tb_dir, t->cfg.tb_value_targets ? ": their exact values as the value "
                 "targets of the positions they cover" : ", for the proof search");
    }
    if (t->cfg.proven_value_targets) {
        char err[512];
        referee_opts ro = {.tables = t->tb, .nodes = (uint64_t)t->cfg.proven_nodes,
                           .tt_bytes = 64ull << 20};
        t->prover = referee_new(&ro, err, sizeof err);
        if (!t->prover) {
            log_error("cannot start: proven_value_targets: %s", err);
            return 1;
        }
        t->proven = xcalloc(B, sizeof *t->proven);
        t->rb.proven = t->proven;
        log_info("proven value targets: %.0f%% of each batch, positions of %d to %ld pieces, "
                 "%ld expansions a position", 100 * t->cfg.proven_share,
                 t->tb ? tb_pieces(t->tb) + 1 : 1, t->cfg.proven_pieces, t->cfg.proven_nodes);
    }
    if (t->cfg.ema_decay > 0 && s_ema_start(t))
        return 1;
    if (t->cfg.reanalyse > 0) {
        int sims = t->cfg.reanalyse_simulations ? (int)t->cfg.reanalyse_simulations
                                                : t->g->simulations;
        int k = (int)(t->cfg.reanalyse * (double)B + 0.5);
        t->ra = reanalyser_new(t->g, (int)B, k > 0 ? k : 1, sims);
        if (!t->ra || s_reanalyse_model(t)) {
            log_error("cannot start: out of memory for reanalyse's %d searches", k);
            return 1;
        }
        t->rb.value_weight = (float)t->cfg.reanalyse_value_weight;
        log_info("reanalyse: %d of each batch's %zu positions searched again with %d "
                 "simulations by the newest network (value weight %g)",
                 k, B, sims, t->cfg.reanalyse_value_weight);
    }
    return 0;
}

/* Step 6: resumed at a candidate step, the same bytes are submitted again (a
 * duplicate if the coordinator registered them before the restart). 0 or 1. */
static int s_resubmit(tr *t)
{
    uint64_t K = (uint64_t)t->cfg.steps_per_candidate;
    uint64_t step0 = model_get_meta(t->m)->step;
    log_info("trainer %s: step %llu, batch %ld, K %llu, max_reuse %g, checkpoint %s",
             client_id(t->c), (unsigned long long)step0, t->cfg.batch_size,
             (unsigned long long)K, t->cfg.max_reuse, t->ckpt);
    if (!(step0 > 0 && step0 % K == 0 && t->ckpt_step == step0))
        return 0;
    int rc = modelfile_to_bytes(t->ema ? t->ema : t->m, &t->cand, &t->cand_len);
    t->cand_step = step0;
    if (rc == 0)
        rc = s_submit_candidate(t);
    return rc ? 1 : 0;
}

/* Step 7: trains until a stop signal, max_steps or a fatal error (its code). */
static int s_train(tr *t)
{
    int rc = 0;
    t->last_log = t->last_stats = time_now();
    t->log_cpu0 = s_cpu();
    while (!s_stop &&
           !(t->cfg.max_steps && model_get_meta(t->m)->step >= (uint64_t)t->cfg.max_steps)) {
        if (t->cand && time_now() >= t->cand_retry) {
            rc = s_submit_candidate(t);
            if (rc)
                break;
        }
        if (time_now() - t->last_stats >= t->cfg.stats_s)
            s_report(t);
        rc = s_iterate(t);
        if (rc)
            break;
        s_progress(t, false);
    }
    return rc;
}

/* Step 8: after training ended with rc, the checkpoint, the pending
 * candidate and the last report. Returns the exit status. */
static int s_finish(tr *t, int rc)
{
    if (rc == KZ_EVERSION)
        log_error("the coordinator refused this trainer: %s", client_last_error(t->c));
    if (rc == KZ_EMISMATCH)
        log_error("stopping: the coordinator plays another game (see above)");
    if (rc == 0 || rc == KZ_EVERSION) {
        /* A clean stop keeps every step taken. */
        if (model_get_meta(t->m)->step != t->ckpt_step && s_checkpoint(t))
            rc = rc ? rc : KZ_EIO;
        /* Last words only to a coordinator that is there: after a stop
         * signal, waiting out the retries to an absent one would hold the
         * exit for tens of seconds (the checkpoint above is what matters). */
        client_set_interrupt(t->c, NULL); /* the last words may wait their normal time */
        if (!s_stop || client_connected(t->c)) {
            if (t->cand)
                s_submit_candidate(t);
            s_report(t);
        } else {
            log_warn("exit: coordinator unreachable; %s",
                     t->cand ? "pending candidate not resubmitted" : "no final stats sent");
        }
    }
    s_progress(t, true);
    log_info("exit: step %llu, samples %llu (augmented %llu, without policy target %llu, "
             "skipped %llu)",
             (unsigned long long)model_get_meta(t->m)->step, (unsigned long long)t->counts.used,
             (unsigned long long)t->counts.augmented, (unsigned long long)t->counts.no_policy,
             (unsigned long long)t->counts.skipped);
    if (t->aux)
        log_info("exit: auxiliary targets: opponent policy on %llu samples, material on %llu",
                 (unsigned long long)t->counts.aux_opp,
                 (unsigned long long)t->counts.aux_material);
    if (t->ra) {
        uint64_t searched, changed;
        reanalyser_counts(t->ra, &searched, &changed);
        log_info("exit: reanalyse: %llu positions searched again in %.0f s, %llu samples' "
                 "policy targets from them; %llu with another most likely action",
                 (unsigned long long)searched, t->ra_time,
                 (unsigned long long)t->counts.reanalysed, (unsigned long long)changed);
    }
    if (t->prover)
        log_info("exit: value targets proven by the proof search on %llu samples of %llu tried "
                 "(%llu of them not the game's result) in %.0f s",
                 (unsigned long long)t->counts.proven_values,
                 (unsigned long long)t->prove_tried,
                 (unsigned long long)t->counts.proven_changed, t->prove_time);
    if (t->tb && t->cfg.tb_value_targets)
        log_info("exit: value targets from the endgame tables on %llu samples (%llu of them not "
                 "the game's result)",
                 (unsigned long long)t->counts.tb_values, (unsigned long long)t->counts.tb_changed);
    return rc ? 1 : 0;
}

static void s_free(tr *t)
{
    free_all(t->x, t->pi, t->z, t->ab.opp_pi, t->ab.material, t->ab.material_w, t->cand,
             t->start_blob);
    model_train_destroy(&t->t);
    model_destroy(&t->m);
    model_destroy(&t->ema);
    referee_destroy(&t->prover);
    free(t->proven);
    tb_close(&t->tb);
    reanalyser_destroy(&t->ra);
    client_destroy(&t->c);
    if (t->zctx)
        zmq_ctx_term(t->zctx);
}

int main(int argc, char **argv)
{
    log_init("kz-trainer");
    if (util_version_asked(argc, argv, "kz-trainer"))
        return 0;
    static tr t;
    int rc = s_settings(&t, argc, argv);
    if (rc >= 0)
        return rc;
    log_info("kz-trainer %s", util_version());
    config_log(s_options, s_n_options, &t.cfg);
    signal_catch_stop(&s_stop); /* step 2: stop after the step under way */
    rc = s_connect(&t);
    /* Step 4: the start model (the checkpoint, init_model or the best); trees
     * go their own way (trainer_gbdt_run) from there. */
    struct stat sb;
    char kzg[CONFIG_STR_MAX + 32];
    snprintf(kzg, sizeof kzg, "%s/checkpoint.kzg", t.cfg.checkpoint_dir);
    bool tree_file = t.kind == MODEL_KIND_GBDT && (t.cfg.init_model[0] || stat(kzg, &sb) == 0);
    if (rc == 0 && !tree_file && s_start_model(&t))
        rc = s_stop ? 0 : 1;
    else if (rc == 0 && t.kind == MODEL_KIND_GBDT) {
        if (t.cfg.reanalyse > 0)
            log_warn("reanalyse: not for trees (model_kind gbdt); ignored");
        rc = trainer_gbdt_run(&t.cfg, t.g, t.c, &s_stop, t.start_blob, t.start_len,
                              t.start_version);
    }
    else if (rc == 0 && (rc = s_alloc(&t)) == 0 && (rc = s_resubmit(&t)) == 0)
        rc = s_finish(&t, s_train(&t));
    s_free(&t);
    return rc;
}
