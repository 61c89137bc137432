/* player_net: the network players of player.h: the raw policy (policy:)
 * and the network with the batched search of mcts.h (mcts:, gumbel:). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "search/player.h"
#include "search/player_internal.h"
#include "common/util.h"

/* ---- network players ------------------------------------------------------------------ */

/* What the policy and mcts players share: the evaluator and what owns it. */
typedef struct net {
    evaluator ev;         /* the evaluator used */
    evaluator_net *owned; /* the network when loaded from a file (owned), else NULL */
} net;

/* Opens MODEL ("uniform" or a model file for g) as an evaluator of batches up
 * to max_batch in `precision` (evaluator.h). 0, or the loader's error with
 * the reason in err. */
static int s_net_open(const game_def *g, const char *path, int max_batch, int precision, net *n,
                      char *err, size_t errlen)
{
    memset(n, 0, sizeof *n);
    if (!strcmp(path, "uniform")) {
        n->ev = evaluator_uniform(g);
        return 0;
    }
    int rc = evaluator_net_load_precision(path, g, max_batch, precision, &n->owned, err, errlen);
    if (rc == 0)
        n->ev = evaluator_net_get(n->owned);
    return rc;
}

typedef struct policy {
    net net;        /* the network */
    float *planes;  /* (C, H, W) */
    float *logits;  /* (A) */
} policy;

static int s_policy_choose(player *p, const game_state *s, int n, const uint16_t *legal,
                           int *action, player_info *info)
{
    const game_def *g = p->g;
    policy *pol = p->impl;
    float value;
    g->encode_planes(s, pol->planes);
    int rc = pol->net.ev.run(pol->net.ev.ctx, pol->planes, 1, pol->logits, &value);
    if (rc != 0)
        return rc;
    /* The network speaks canonical actions (R16). Ties go to the lower action. */
    int best = 0;
    float top = -INFINITY;
    for (int i = 0; i < n; i++) {
        float l = pol->logits[g->canonical_action(s, legal[i])];
        if (!isfinite(l))
            return KZ_EINVAL;
        if (l > top) {
            top = l;
            best = i;
        }
    }
    *action = legal[best];
    if (info) {
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += exp((double)pol->logits[g->canonical_action(s, legal[i])] - top);
        for (int i = 0; i < n; i++) {
            double e = exp((double)pol->logits[g->canonical_action(s, legal[i])] - top);
            info->share[i] = info->prior[i] = (float)(e / sum);
        }
        info->value = value;
        info->work = 1;
    }
    return 0;
}

static void s_policy_destroy(player *p)
{
    policy *pol = p->impl;
    evaluator_net_destroy(&pol->net.owned);
    free_all(pol->planes, pol->logits, pol);
}

static const player_ops s_policy_ops = {.choose = s_policy_choose,
                                        .destroy_impl = s_policy_destroy};

static player *s_policy_make(const game_def *g, const net *n, const char *name)
{
    player *p = player_new_of(g, &s_policy_ops, name);
    policy *pol = xcalloc(1, sizeof *pol);
    pol->net = *n;
    pol->planes = xmalloc((size_t)g->planes * g->height * g->width * sizeof *pol->planes);
    pol->logits = xmalloc((size_t)g->action_count * sizeof *pol->logits);
    p->impl = pol;
    return p;
}

player *player_policy_new_evaluator(const game_def *g, evaluator ev, const char *name)
{
    return s_policy_make(g, &(net){.ev = ev}, name);
}

/* ":bf16" or ":fp32" for a precision given in a spec, "" for the default. */
static const char *s_precision_suffix(int precision)
{
    return precision == MODEL_BF16   ? ":bf16"
           : precision == MODEL_FP32 ? ":fp32"
                                     : "";
}

player *player_policy_new_precision(const game_def *g, const char *model_path, int precision,
                                    char *err, size_t errlen)
{
    net n;
    if (s_net_open(g, model_path, 1, precision, &n, err, errlen) != 0)
        return NULL;
    char name[PLAYER_SPEC_MAX];
    snprintf(name, sizeof name, "policy:%s%s", model_path, s_precision_suffix(precision));
    return s_policy_make(g, &n, name);
}

player *player_policy_new(const game_def *g, const char *model_path, char *err, size_t errlen)
{
    return player_policy_new_precision(g, model_path, EVALUATOR_PRECISION_DEFAULT, err, errlen);
}

typedef struct mcts_player {
    net net;             /* the network */
    mcts_batch *batch;   /* one tree, kept between moves */
    mcts_result result;  /* the last search's result */
} mcts_player;

mcts_settings player_mcts_settings(int sims)
{
    mcts_settings s = mcts_settings_default();
    s.simulations = sims;
    s.dirichlet_epsilon = 0;
    return s;
}

mcts_settings player_gumbel_settings(int sims)
{
    mcts_settings s = player_mcts_settings(sims);
    s.root_mode = MCTS_ROOT_GUMBEL;
    s.gumbel_noise = false;
    s.temperature_plies = 0;
    return s;
}

static int s_mcts_choose(player *p, const game_state *s, int n, const uint16_t *legal,
                         int *action, player_info *info)
{
    const game_def *g = p->g;
    mcts_player *mp = p->impl;
    mcts_batch_set_oracle(mp->batch, &p->oracle);
    /* Step 0. A root the oracle knows (the endgame tables): its best action,
     * as a chess engine probes Syzygy at the root. The search would value
     * only the children it visits, and one of small prior can stay
     * unvisited behind a losing sibling that the prior favours: H2's final
     * gave away 16 such endings in 362 games (docs/tablebase.md). */
    int best, score;
    if (p->oracle.best_action && p->oracle.probe &&
        p->oracle.best_action(p->oracle.ctx, s, &best) == 0 &&
        p->oracle.probe(p->oracle.ctx, s, &score) == 0) {
        *action = best;
        if (info) {
            info->value = score / 100.0;
            info->work = 0;
            for (int i = 0; i < n; i++) {
                info->share[i] = legal[i] == best ? 1.0f : 0.0f;
                info->prior[i] = NAN;
                info->q[i] = NAN;
            }
        }
        return 0;
    }
    /* Step 1. Continue from the kept tree when it stands at s, else start afresh. */
    enum mcts_status st = mcts_batch_status(mp->batch, 0);
    if (st == MCTS_IDLE || st == MCTS_OVER ||
        g->hash(mcts_batch_state(mp->batch, 0)) != g->hash(s))
        mcts_batch_reset(mp->batch, 0, s, rng_next(&p->rng));
    /* Step 2. Search to the simulation count. */
    int rc = mcts_batch_run(mp->batch);
    if (rc != 0) {
        mcts_batch_clear(mp->batch, 0);
        return rc;
    }
    mcts_result *r = &mp->result;
    mcts_batch_result(mp->batch, 0, r);
    KZ_CHECK(r->n == n);
    *action = r->best;
    if (info) {
        info->value = r->value;
        info->work = r->total;
        for (int i = 0; i < r->n; i++) {
            KZ_CHECK(r->actions[i] == info->actions[i]);
            info->share[i] = r->total ? (float)r->visits[i] / (float)r->total : 0;
            info->prior[i] = r->priors[i];
            info->q[i] = r->visits[i] ? r->q[i] : NAN;
        }
    }
    return 0;
}

static void s_mcts_observe(player *p, const game_state *s, int action)
{
    mcts_player *mp = p->impl;
    enum mcts_status st = mcts_batch_status(mp->batch, 0);
    if (st == MCTS_IDLE || st == MCTS_OVER)
        return;
    if (p->g->hash(mcts_batch_state(mp->batch, 0)) == p->g->hash(s))
        mcts_batch_advance(mp->batch, 0, action); /* keeps the chosen subtree */
    else
        mcts_batch_clear(mp->batch, 0);
}

static void s_mcts_new_game(player *p)
{
    mcts_player *mp = p->impl;
    mcts_batch_clear(mp->batch, 0);
}

static void s_mcts_destroy(player *p)
{
    mcts_player *mp = p->impl;
    mcts_batch_destroy(&mp->batch);
    evaluator_net_destroy(&mp->net.owned);
    free(mp);
}

static const player_ops s_mcts_ops = {.choose = s_mcts_choose,
                                      .destroy_impl = s_mcts_destroy,
                                      .observe = s_mcts_observe,
                                      .new_game = s_mcts_new_game};

/* Takes ownership of n->owned (freed on failure too). */
static player *s_mcts_make(const game_def *g, net *n, const mcts_settings *s, const char *name,
                           char *err, size_t errlen)
{
    if (mcts_settings_check(s, err, errlen) != 0) {
        evaluator_net_destroy(&n->owned);
        return NULL;
    }
    mcts_batch *b = mcts_batch_new(g, s, 1, n->ev);
    if (!b) {
        err_set(err, errlen, KZ_ENOMEM, "%s: out of memory for the search tree", name);
        evaluator_net_destroy(&n->owned);
        return NULL;
    }
    player *p = player_new_of(g, &s_mcts_ops, name);
    mcts_player *mp = xcalloc(1, sizeof *mp);
    mp->net = *n;
    mp->batch = b;
    p->impl = mp;
    return p;
}

player *player_mcts_new_evaluator(const game_def *g, evaluator ev, const mcts_settings *s,
                                  const char *name, char *err, size_t errlen)
{
    net n = {.ev = ev};
    return s_mcts_make(g, &n, s, name, err, errlen);
}

player *player_mcts_new_precision(const game_def *g, const char *model_path, const mcts_settings *s,
                          int precision, char *err, size_t errlen)
{
    if (mcts_settings_check(s, err, errlen) != 0)
        return NULL;
    net n;
    /* A tree sends at most leaves_per_tree leaves to one batch. */
    if (s_net_open(g, model_path, s->leaves_per_tree, precision, &n, err, errlen) != 0)
        return NULL;
    char name[PLAYER_SPEC_MAX];
    snprintf(name, sizeof name, "%s:%s:%d%s", s->root_mode == MCTS_ROOT_GUMBEL ? "gumbel" : "mcts",
             model_path, s->simulations, s_precision_suffix(precision));
    return s_mcts_make(g, &n, s, name, err, errlen);
}

player *player_mcts_new(const game_def *g, const char *model_path, const mcts_settings *s,
                        char *err, size_t errlen)
{
    return player_mcts_new_precision(g, model_path, s, EVALUATOR_PRECISION_DEFAULT, err, errlen);
}
