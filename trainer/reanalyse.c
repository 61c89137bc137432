/* reanalyse: fresh policy (and value) targets for stored positions, searched
 * again with the trainer's newest network. See trainer.h. */
#include <stdlib.h>
#include <string.h>

#include "nn/evaluator.h"
#include "nn/model.h"
#include "search/mcts.h"
#include "trainer/trainer.h"

struct reanalyser {
    const game_def *g;    /* the game (unpack_state set) */
    mcts_settings s;      /* the search's settings: no root noise */
    int max;              /* positions per call at most: the batch's trees */
    mcts_batch *mb;       /* max trees, allocated once */
    evaluator_net *net;   /* the network the search calls (set_model), or NULL */
    int32_t *row;         /* (batch_size) per sample of the reply: its row, -1 none */
    float *pi;            /* (max, A) dense canonical policy targets */
    float *v;             /* (max) root values, mover's view */
    int *sample;          /* (max) the reply's sample index of each tree */
    int batch_size;       /* entries of row */
    uint64_t searched;    /* positions searched, ever */
    uint64_t changed;     /* of which the most likely action of the target changed */
};

reanalyser *reanalyser_new(const game_def *g, int batch_size, int max_positions, int simulations)
{
    if (!g || !g->unpack_state || batch_size < 1 || max_positions < 1 ||
        max_positions > batch_size || simulations < 1)
        return NULL;
    reanalyser *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->g = g;
    r->max = max_positions;
    r->batch_size = batch_size;
    r->s = mcts_settings_default();
    r->s.simulations = simulations;
    r->s.dirichlet_alpha = g->dirichlet_alpha;
    r->s.dirichlet_epsilon = 0; /* a target, not a move to explore */
    r->s.reuse_tree = false;
    r->row = malloc((size_t)batch_size * sizeof *r->row);
    r->pi = malloc((size_t)max_positions * (size_t)g->action_count * sizeof *r->pi);
    r->v = malloc((size_t)max_positions * sizeof *r->v);
    r->sample = malloc((size_t)max_positions * sizeof *r->sample);
    r->mb = mcts_batch_new(g, &r->s, max_positions, evaluator_uniform(g));
    if (!r->row || !r->pi || !r->v || !r->sample || !r->mb)
        reanalyser_destroy(&r);
    return r;
}

void reanalyser_destroy(reanalyser **r)
{
    if (!r || !*r)
        return;
    mcts_batch_destroy(&(*r)->mb);
    evaluator_net_destroy(&(*r)->net);
    free_all((*r)->row, (*r)->pi, (*r)->v, (*r)->sample, *r);
    *r = NULL;
}

int reanalyser_set_model(reanalyser *r, const model *m)
{
    int leaves = r->max * r->s.leaves_per_tree;
    evaluator_net *net = evaluator_net_new(m, leaves);
    if (!net)
        return KZ_ENOMEM;
    mcts_batch_set_evaluator(r->mb, evaluator_net_get(net));
    evaluator_net_destroy(&r->net);
    r->net = net;
    return 0;
}

int reanalyser_run(reanalyser *r, const wire_batch_reply *b, int k, batch_reanalysed *out)
{
    const game_def *g = r->g;
    size_t A = (size_t)g->action_count;
    int n = b->n < (uint32_t)r->batch_size ? (int)b->n : r->batch_size;
    for (int i = 0; i < r->batch_size; i++)
        r->row[i] = -1;
    *out = (batch_reanalysed){r->row, r->pi, r->v, n, 0, out->value_weight, out->proven,
                              out->n_proven};
    if (k > r->max)
        k = r->max;
    if (k > n)
        k = n;
    if (k < 1 || !r->net || b->packed_bytes != (uint32_t)g->packed_bytes)
        return 0;
    /* The first k samples (the coordinator draws a batch's positions at
     * random, so they are a random share of it), each in a tree of its own. */
    int t = 0;
    for (int i = 0; i < k; i++) {
        game_state st;
        if (g->unpack_state(b->packed + (size_t)i * b->packed_bytes, &st))
            continue; /* batch_fill counts it as skipped */
        mcts_batch_reset(r->mb, t, &st, (uint64_t)i);
        if (mcts_batch_status(r->mb, t) == MCTS_OVER) {
            mcts_batch_clear(r->mb, t);
            continue;
        }
        r->sample[t++] = i;
    }
    for (int j = t; j < r->max; j++)
        mcts_batch_clear(r->mb, j);
    int rc = mcts_batch_run(r->mb);
    if (rc)
        return rc;
    for (int j = 0; j < t; j++) {
        mcts_result res;
        mcts_batch_result(r->mb, j, &res);
        const game_state *st = mcts_batch_state(r->mb, j);
        float *row = r->pi + (size_t)j * A;
        memset(row, 0, A * sizeof *row);
        if (res.forced) {
            row[g->canonical_action(st, res.actions[0])] = 1.0f;
        } else {
            if (res.total == 0)
                continue;
            for (int a = 0; a < res.n; a++)
                row[g->canonical_action(st, res.actions[a])] = res.target[a];
        }
        int i = r->sample[j];
        r->v[j] = res.value;
        r->row[i] = j;
        out->n_searched++;
        /* Whether the stored target's most likely action is still the best. */
        uint32_t lo = b->offsets[i], hi = b->offsets[i + 1];
        int old = -1;
        float top = -1;
        for (uint32_t e = lo; e < hi; e++)
            if (b->probs[e] > top && b->actions[e] < A) {
                top = b->probs[e];
                old = (int)b->actions[e];
            }
        int now = 0;
        for (size_t a = 1; a < A; a++)
            if (row[a] > row[now])
                now = (int)a;
        r->changed += old != now;
    }
    r->searched += (uint64_t)out->n_searched;
    return 0;
}

void reanalyser_counts(const reanalyser *r, uint64_t *searched, uint64_t *changed)
{
    *searched = r->searched;
    *changed = r->changed;
}
