/* gbdt: kz-trainer's loop for tree models (model kind gbdt, nn/gbdt.h).
 * See trainer.h.
 *
 * Trees are not trained by steps: the loop keeps the last gbdt_window
 * samples pulled from the coordinator (a ring, filled by the same
 * batch_fill as the network's batches, augmentation included), and each
 * time gbdt_samples_per_candidate fresh samples have come it trains both
 * forests afresh on the ring (gbdt_train.h, XGBoost), checkpoints the model
 * (checkpoint.kzg) and submits it as a candidate, published like a
 * network. Pacing is the network's: no more than max_reuse samples pulled
 * per position stored. The ring is not checkpointed: a restarted trainer
 * fills it again from the replay window. max_steps counts trainings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nn/gbdt.h"
#include "nn/gbdt_train.h"
#include "trainer/trainer.h"

/* The loop's state. */
typedef struct gt {
    const trainer_config *cfg; /* settings */
    const game_def *g;         /* the game */
    client *c;                 /* coordinator client (borrowed) */
    volatile sig_atomic_t *stop; /* the stop signal's flag */
    gbdt *m;                   /* the model (owned) */
    char ckpt[CONFIG_STR_MAX + 32]; /* checkpoint path */
    uint32_t lineage;          /* version the model was last registered as (its parent) */
    uint32_t last_candidate;   /* last candidate registered */
    float *x, *pi, *z;         /* (W, C, H, W), (W, A), (W): the ring of samples */
    float *bx, *bpi, *bz;      /* one pulled batch */
    long window;               /* W, ring capacity */
    long filled;               /* samples in the ring */
    long head;                 /* next slot to write */
    long fresh;                /* samples since the last training */
    uint64_t pulled;           /* samples pulled in all */
    uint64_t window_hi;        /* positions ever stored (last reply) */
    long trainings;            /* trainings done */
    rng_t rng;                 /* augmentation */
    batch_counts counts;       /* batch_fill's counters */
    gbdt_train_stats last;     /* the last training's figures */
} gt;

/* The start model: checkpoint.kzg, init_model, the coordinator's best
 * (start_blob, when it is trees), or no trees. 0 or an error (logged). */
static int s_start(gt *t, const uint8_t *start_blob, size_t start_len, uint32_t start_version)
{
    char err[512];
    struct stat sb;
    if (stat(t->ckpt, &sb) == 0) {
        int rc = gbdt_load(t->ckpt, t->g, &t->m, err, sizeof err);
        if (rc) {
            log_error("cannot resume: %s", err);
            return rc;
        }
        t->lineage = gbdt_get_meta(t->m)->parent;
        log_info("resuming trees from %s (%llu samples trained, lineage %u)", t->ckpt,
                 (unsigned long long)gbdt_get_meta(t->m)->step, (unsigned)t->lineage);
        return 0;
    }
    if (t->cfg->init_model[0] || start_blob) {
        int rc = t->cfg->init_model[0]
                     ? gbdt_load(t->cfg->init_model, t->g, &t->m, err, sizeof err)
                     : gbdt_from_bytes(start_blob, start_len, t->g, &t->m, err, sizeof err);
        if (rc) {
            log_error("cannot start: %s", err);
            return rc;
        }
        t->lineage = start_blob ? start_version : gbdt_get_meta(t->m)->version;
        model_meta_unversioned(gbdt_edit_meta(t->m), t->lineage);
        log_info("starting trees from %s (version %u)",
                 t->cfg->init_model[0] ? t->cfg->init_model : "the coordinator's best",
                 (unsigned)t->lineage);
        return 0;
    }
    t->m = gbdt_new(t->g);
    if (!t->m)
        return KZ_ENOMEM;
    t->lineage = start_version;
    model_meta_unversioned(gbdt_edit_meta(t->m), t->lineage);
    log_info("starting trees from none (parent version %u)", (unsigned)t->lineage);
    return 0;
}

/* Submits the model as a candidate. 0, KZ_EVERSION (refused: fatal), or
 * another code when not acknowledged (retried at the next training). */
static int s_submit(gt *t)
{
    uint8_t *blob;
    size_t len;
    int rc = gbdt_to_bytes(t->m, &blob, &len);
    if (rc)
        return rc;
    wire_candidate_ack ack;
    rc = client_submit_candidate(t->c, blob, len, t->lineage, gbdt_get_meta(t->m)->step, &ack);
    free(blob);
    if (rc == KZ_EVERSION)
        return rc;
    if (rc) {
        log_warn("trees candidate not registered: %s", client_last_error(t->c));
        return rc;
    }
    log_info("candidate: trees of %llu samples registered as version %u (parent %u%s)",
             (unsigned long long)gbdt_get_meta(t->m)->step, (unsigned)ack.version,
             (unsigned)t->lineage,
             ack.duplicate ? ", duplicate" : "");
    t->lineage = ack.version;
    t->last_candidate = ack.version;
    model_meta_unversioned(gbdt_edit_meta(t->m), t->lineage);
    return 0;
}

static void s_report(gt *t)
{
    wire_trainer_stats st = {0};
    st.step = (uint64_t)t->trainings;
    st.value_loss = (float)t->last.value_mse;
    st.policy_loss = (float)t->last.policy_xent;
    st.loss = st.value_loss + st.policy_loss;
    st.samples_per_s = t->last.seconds > 0 ? (float)(t->last.value_rows / t->last.seconds) : 0;
    st.samples_seen = gbdt_get_meta(t->m)->step;
    st.last_candidate = t->last_candidate;
    client_report_stats(t->c, &st);
}

/* Trains on the ring, checkpoints, submits. 0 or a fatal code. */
static int s_training(gt *t)
{
    gbdt_train_config tc = t->cfg->gbdt;
    tc.threads = (int)t->cfg->threads;
    tc.seed = rng_next(&t->rng);
    char err[400];
    int rc = gbdt_train(t->m, t->g, t->x, t->pi, t->z, (int)t->filled, &tc, &t->last, err,
                        sizeof err);
    if (rc) {
        log_error("trees: %s", err);
        return rc;
    }
    t->trainings++;
    t->fresh = 0;
    char what[200];
    gbdt_describe(t->m, what, sizeof what);
    log_info("progress: training %ld on %ld samples in %.2f s (%.1f us per sample): value mse "
             "%.4f, policy cross-entropy %.4f on %d rows; %s",
             t->trainings, t->filled, t->last.seconds, 1e6 * t->last.seconds / (double)t->filled,
             t->last.value_mse, t->last.policy_xent, t->last.policy_rows, what);
    gbdt_edit_meta(t->m)->created_ms = time_wall_ms();
    model_meta_unversioned(gbdt_edit_meta(t->m), t->lineage);
    if ((rc = gbdt_save(t->m, t->ckpt))) {
        log_error("checkpoint: cannot write %s: %s", t->ckpt, err_str(rc));
        return rc;
    }
    rc = s_submit(t);
    s_report(t);
    return rc == KZ_EVERSION ? rc : 0;
}

/* One pull into the ring (or a wait). 0 or a fatal code. */
static int s_pull(gt *t)
{
    const trainer_config *cfg = t->cfg;
    uint32_t B = (uint32_t)cfg->batch_size;
    const wire_batch_reply *b;
    if (cfg->max_reuse > 0 && (double)(t->pulled + B) > cfg->max_reuse * (double)t->window_hi) {
        int rc = client_get_batch(t->c, 0, 0, &b); /* counts only */
        if (rc == KZ_EVERSION)
            return rc;
        if (rc == 0)
            t->window_hi = b->window_hi;
        if (rc || (double)(t->pulled + B) > cfg->max_reuse * (double)t->window_hi) {
            client_poll(t->c, (int)cfg->wait_ms);
            return 0;
        }
    }
    int rc = client_get_batch_aux(t->c, B, (uint64_t)cfg->min_positions, false, &b);
    if (rc == KZ_EVERSION)
        return rc;
    if (rc || b->n == 0) {
        if (rc == 0)
            t->window_hi = b->window_hi;
        client_poll(t->c, (int)cfg->wait_ms);
        return 0;
    }
    if (b->game && b->game[0] && strcmp(b->game, t->g->name)) {
        log_error("refused the coordinator's positions of game '%.40s': this trainer trains '%s'",
                  b->game, t->g->name);
        return KZ_EMISMATCH;
    }
    t->window_hi = b->window_hi;
    int n = batch_fill(t->g, b, cfg->augment, (float)cfg->value_q_weight, &t->rng, t->bx, t->bpi,
                       t->bz, (int)B, &t->counts);
    size_t P = (size_t)t->g->planes * t->g->height * t->g->width, A = (size_t)t->g->action_count;
    for (int i = 0; i < n; i++) {
        memcpy(t->x + (size_t)t->head * P, t->bx + (size_t)i * P, P * sizeof(float));
        memcpy(t->pi + (size_t)t->head * A, t->bpi + (size_t)i * A, A * sizeof(float));
        t->z[t->head] = t->bz[i];
        t->head = (t->head + 1) % t->window;
        if (t->filled < t->window)
            t->filled++;
    }
    t->pulled += b->n;
    t->fresh += n;
    return 0;
}

int trainer_gbdt_run(const trainer_config *cfg, const game_def *g, client *c,
                     volatile sig_atomic_t *stop, const uint8_t *start_blob, size_t start_len,
                     uint32_t start_version)
{
    static gt t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg;
    t.g = g;
    t.c = c;
    t.stop = stop;
    t.window = cfg->gbdt_window;
    snprintf(t.ckpt, sizeof t.ckpt, "%s/checkpoint.kzg", cfg->checkpoint_dir);
    rng_seed(&t.rng, cfg->seed ? (uint64_t)cfg->seed : (uint64_t)time_wall_ms());
    int rc = s_start(&t, start_blob, start_len, start_version);
    size_t P = (size_t)g->planes * g->height * g->width, A = (size_t)g->action_count;
    size_t W = (size_t)t.window, B = (size_t)cfg->batch_size;
    if (rc == 0) {
        t.x = malloc(W * P * sizeof *t.x);
        t.pi = malloc(W * A * sizeof *t.pi);
        t.z = malloc(W * sizeof *t.z);
        t.bx = malloc(B * P * sizeof *t.bx);
        t.bpi = malloc(B * A * sizeof *t.bpi);
        t.bz = malloc(B * sizeof *t.bz);
        if (!t.x || !t.pi || !t.z || !t.bx || !t.bpi || !t.bz) {
            log_error("cannot start: out of memory for a window of %zu samples", W);
            rc = KZ_ENOMEM;
        }
    }
    if (rc == 0)
        log_info("trees (XGBoost %s): window %ld samples, a training every %ld fresh ones, %d "
                 "rounds of depth %d, eta %g, checkpoint %s",
                 gbdt_train_library(), t.window, cfg->gbdt_samples_per_candidate,
                 cfg->gbdt.rounds, cfg->gbdt.max_depth, cfg->gbdt.eta, t.ckpt);
    while (rc == 0 && !*stop && !(cfg->max_steps && t.trainings >= cfg->max_steps)) {
        rc = s_pull(&t);
        if (rc == 0 && t.fresh >= cfg->gbdt_samples_per_candidate && t.filled > 0)
            rc = s_training(&t);
    }
    if (rc == KZ_EVERSION)
        log_error("the coordinator refused this trainer: %s", client_last_error(c));
    log_info("exit: %ld trainings, %llu samples trained on, %llu pulled (augmented %llu, "
             "skipped %llu)",
             t.trainings, t.m ? (unsigned long long)gbdt_get_meta(t.m)->step : 0ULL,
             (unsigned long long)t.counts.used, (unsigned long long)t.counts.augmented,
             (unsigned long long)t.counts.skipped);
    free_all(t.x, t.pi, t.z, t.bx, t.bpi, t.bz);
    gbdt_destroy(&t.m);
    return rc ? 1 : 0;
}
