/* mcts: batched PUCT search. See mcts.h for the algorithm and its contracts.
 *
 * Trees. Nodes live in a per-tree arena; a node's children are contiguous
 * (first_child .. first_child + n_children - 1), allocated when the node is
 * expanded, in ascending action order. Nodes hold no game state: a selection
 * copies the root state and replays the actions down the tree (a few bitboard
 * operations per edge), which keeps a node at 28 bytes.
 *
 * Values. `w` sums values from the view of the chooser (the mover at the
 * parent; at the root, the root's own mover). F_FLIP marks a node whose mover
 * differs from its parent's (set each time the edge is walked, from
 * game_def->to_move before and after the action). Backup walks parent links
 * and negates only at flipped edges (R18).
 *
 * Virtual loss. A selection adds one in-flight visit (`vl`) to every node on
 * its path; PUCT counts each as a visit with value -1 for the chooser, so the
 * next selections of the same step spread out. Backup turns it into a real
 * visit; an abandoned selection removes it.
 *
 * One step (mcts_batch_step):
 *   Step 1. Each searching tree selects leaves until it has leaves_per_tree
 *           waiting for the evaluator, its simulations are all under way, or
 *           a selection runs into a leaf that already waits (a collision).
 *           Terminal leaves, cached positions and forced nodes finish at once.
 *   Step 2. The waiting leaves' planes go to the evaluator in one batch
 *           (chunks of max_batch); a leaf whose position is already waiting
 *           in this batch shares that evaluation.
 *   Step 3. The outputs are checked, turned into priors (softmax over the
 *           legal actions at their canonical indices), cached, and backed up.
 *
 * Gumbel mode keeps its per-move root state (draws, considered actions, the
 * visits kept from the reused subtree) in a `groot` per tree, allocated only
 * in that mode. A node's raw evaluator value, which the mixed value needs, is
 * not stored: every visit of an evaluated node after its first went on to a
 * child, so raw = (the node's sum from its mover's view) - (its children's
 * sums), exactly up to float rounding.
 */
#include "search/mcts.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define CACHE_PRIORS 62     /* positions with more legal actions are not cached */
#define CACHE_WAITING 0xffff /* cache_entry.n of a position waiting in this step's batch */

enum {
    F_EXPANDED = 1, /* children allocated and their priors set */
    F_PENDING = 2,  /* children allocated, waiting for the evaluator */
    F_FLIP = 4,     /* the mover here differs from the mover at the parent */
    F_TERMINAL = 8, /* the state is over (or in the endgame tables); `term` holds its value */
    F_CHANCE = 16,  /* a chance state (game_def.is_chance): children the outcomes, priors
                       their probabilities, never evaluated itself */
};

typedef struct node {
    uint32_t parent;      /* index of the parent; NONE at the root */
    uint32_t first_child; /* index of the first child (valid when n_children > 0) */
    int32_t n;            /* completed visits */
    float w;              /* sum of backed-up values, chooser's view */
    float prior;          /* P of the edge from the parent */
    uint16_t action;      /* real action of the edge from the parent */
    uint16_t n_children;  /* 0 until expanded (or pending) */
    uint16_t vl;          /* in-flight (virtual) visits */
    uint8_t flags;        /* F_* */
    int8_t term;          /* F_TERMINAL: the value from this node's mover's view, in
                             hundredths: the true result (-100, 0, 100), or the tables' */
} node;

/* Gumbel mode: the root's state for the current move. */
typedef struct groot {
    bool ready;                     /* drawn for this move (the root is expanded) */
    int m;                          /* considered actions */
    int budget;                     /* simulations of this move (simulations - kept visits) */
    float g[GAME_MAX_LEGAL];        /* Gumbel draw of each root child (0 without noise) */
    uint32_t base[GAME_MAX_LEGAL];  /* each child's visits at the start of the move */
    bool considered[GAME_MAX_LEGAL]; /* among the m actions of the Gumbel-Top-k */
} groot;

typedef struct tree {
    node *nodes;           /* the live arena; the root is nodes[0] */
    node *spare;           /* the other arena, target of the next compaction */
    uint32_t used;         /* nodes in use in `nodes` */
    game_state root_state; /* the position at the root */
    rng_t rng;             /* root noise */
    enum mcts_status status; /* see mcts.h */
    bool noise_done;       /* root noise applied for this move */
    int sims;              /* this move's simulations (mcts_batch_set_budget) */
    bool explore;          /* this move: root noise and forced playouts allowed */
    int next_sims;         /* the budget of the moves that begin next */
    bool next_explore;     /* their exploration */
    bool full;             /* the arena filled up during this move's search */
    int n_legal;           /* legal actions at the root */
    int forced_action;     /* the only legal action when n_legal == 1 */
    uint32_t root_visits;  /* sum of the root children's completed visits */
    uint32_t inflight;     /* simulations waiting for the evaluator (root expansion excluded) */
    groot *gr;             /* gumbel mode: the root's state; NULL otherwise */
} tree;

typedef struct pending {
    int tree;          /* tree index */
    bool known;        /* answered by the cache: priors already set, value below */
    float value;       /* known: the cached value */
    uint32_t node;     /* the leaf waiting for its evaluation */
    uint32_t slot;     /* its row in the evaluator's input and output */
    uint32_t canon;    /* offset of its canonical actions in mcts_batch.canon */
    uint64_t hash;     /* game_def->hash of its state */
    uint32_t cache_ix; /* its cache slot, NONE when not cached */
} pending;

typedef struct cache_entry {
    uint64_t key;                /* game_def->hash of the position */
    float value;                 /* evaluator value, mover's view */
    uint16_t n;                  /* legal actions; 0 = empty, CACHE_WAITING = waiting */
    uint16_t pad;                /* unused */
    uint32_t slot;               /* CACHE_WAITING: the evaluator row it waits in */
    float priors[CACHE_PRIORS];  /* priors of the legal actions, ascending action order */
} cache_entry;

struct mcts_batch {
    const game_def *g;     /* the game (static) */
    mcts_settings s;       /* settings (copied) */
    evaluator ev;          /* the evaluator (ctx borrowed) */
    int n_trees;           /* G */
    tree *trees;           /* (G) */
    groot *groots;         /* (G) gumbel mode only, else NULL */
    bool plain;            /* PUCT everywhere: no forced playouts, no gumbel */
    node *arena;           /* (G, 2, cap): every tree's two arenas */
    uint32_t cap;          /* nodes per arena */
    int max_pending;       /* G * leaves_per_tree */
    pending *pend;         /* (max_pending) this step's waiting leaves */
    int n_pend;            /* entries in pend */
    int n_slots;           /* distinct positions in this step's batch */
    size_t plane_size;     /* C * H * W */
    float *planes;         /* (max_pending, C, H, W) evaluator input */
    float *logits;         /* (max_pending, A) evaluator output */
    float *values;         /* (max_pending) evaluator output */
    uint16_t *canon;       /* (max_pending, max_legal) canonical actions of each leaf */
    cache_entry *cache;    /* (cache_mask + 1) or NULL */
    uint32_t cache_mask;   /* entries - 1 */
    game_oracle oracle;    /* exact values for the leaves (probe NULL: none) */
    mcts_stats stats;      /* counters */
};

enum { SEL_DONE, SEL_PENDING, SEL_COLLISION, SEL_FULL, SEL_WALK /* s_expand: walk on */ };

#define CONFIG_STRUCT mcts_settings
const config_option mcts_options[] = {
    CONFIG_ROW_INT32(simulations, "200", 1, 1000000,
                     "MCTS simulations per move (root child visits; reused visits count)"),
    CONFIG_ROW_FLOAT(c_puct, "1.5", 0.000001, 100, "PUCT exploration constant"),
    CONFIG_ROW_FLOAT(dirichlet_alpha, "1.0", 0.000001, 100, "root noise concentration"),
    CONFIG_ROW_FLOAT(dirichlet_epsilon, "0.25", 0, 1, "root noise weight, 0 = no noise"),
    CONFIG_ROW_INT32(temperature_plies, "10", 0, 100000,
                     "sample moves by visits while the turn count is below this, then the most "
                     "visited"),
    CONFIG_ROW_FLOAT(fpu, "0.25", 0, 2, "first-play urgency reduction"),
    CONFIG_ROW_INT32(leaves_per_tree, "4", 1, 256,
                     "leaves each tree adds to a network batch (virtual loss)"),
    CONFIG_ROW_BOOL(reuse_tree, "true", "keep the played action's subtree for the next move"),
    CONFIG_ROW_INT32(cache_entries, "65536", 0, 16777216,
                     "evaluation cache entries per search batch (0 = off)"),
    CONFIG_ROW_FLOAT(forced_playouts_k, "0", 0, 100,
                     "KataGo forced playouts sqrt(k P N) at the root, 0 = off (KataGo: 2)"),
    CONFIG_ROW_BOOL(policy_pruning, "false",
                    "prune the forced playouts from the recorded policy (needs k > 0)"),
    CONFIG_ROW_CHOICE(root_mode, "puct|gumbel",
                      "root search: puct (AlphaZero) or gumbel (Gumbel-Top-k + Sequential "
                      "Halving)"),
    CONFIG_ROW_INT32(gumbel_m, "16", 1, 256, "gumbel: actions considered at the root"),
    CONFIG_ROW_FLOAT(gumbel_c_visit, "50", 0, 100000,
                     "gumbel: sigma(q) = (c_visit + max visits) * c_scale * q"),
    CONFIG_ROW_FLOAT(gumbel_c_scale, "1.0", 0.000001, 1000, "gumbel: sigma's scale"),
};
#undef CONFIG_STRUCT
const size_t mcts_options_n = sizeof mcts_options / sizeof mcts_options[0];

static mcts_settings s_default;              /* mcts_settings_default(), once computed */
static pthread_once_t s_default_once = PTHREAD_ONCE_INIT;

/* The rows' defaults, and those of the two fields without a row. */
static void s_default_init(void)
{
    s_default = (mcts_settings){.tree_nodes = 0, .gumbel_noise = true};
    config_defaults(mcts_options, mcts_options_n, &s_default);
}

mcts_settings mcts_settings_default(void)
{
    /* Parsed once: the coordinator's recheck asks for them every game. */
    pthread_once(&s_default_once, s_default_init);
    return s_default;
}

int mcts_settings_check(const mcts_settings *s, char *err, size_t errlen)
{
    if (s->simulations < 1 || s->simulations > 1000000)
        return err_set(err, errlen, KZ_EINVAL, "simulations must be from 1 to 1000000");
    if (!(s->c_puct > 0 && s->c_puct <= 100))
        return err_set(err, errlen, KZ_EINVAL, "c_puct must be in (0, 100]");
    if (!(s->dirichlet_alpha > 0 && s->dirichlet_alpha <= 100))
        return err_set(err, errlen, KZ_EINVAL, "dirichlet_alpha must be in (0, 100]");
    if (!(s->dirichlet_epsilon >= 0 && s->dirichlet_epsilon <= 1))
        return err_set(err, errlen, KZ_EINVAL, "dirichlet_epsilon must be in [0, 1]");
    if (s->temperature_plies < 0 || s->temperature_plies > 100000)
        return err_set(err, errlen, KZ_EINVAL, "temperature_plies must be from 0 to 100000");
    if (!(s->fpu >= 0 && s->fpu <= 2))
        return err_set(err, errlen, KZ_EINVAL, "fpu must be in [0, 2]");
    if (s->leaves_per_tree < 1 || s->leaves_per_tree > 256)
        return err_set(err, errlen, KZ_EINVAL, "leaves_per_tree must be from 1 to 256");
    if (s->cache_entries < 0 || s->cache_entries > (1 << 24))
        return err_set(err, errlen, KZ_EINVAL, "cache_entries must be from 0 to 16777216");
    if (s->tree_nodes != 0 && (s->tree_nodes < 2 * GAME_MAX_LEGAL || s->tree_nodes > (1 << 28)))
        return err_set(err, errlen, KZ_EINVAL,
                       "tree_nodes must be 0 (automatic) or from 512 to 268435456");
    if (!(s->forced_playouts_k >= 0 && s->forced_playouts_k <= 100))
        return err_set(err, errlen, KZ_EINVAL, "forced_playouts_k must be in [0, 100] (0 = off)");
    if (s->policy_pruning && !(s->forced_playouts_k > 0))
        return err_set(err, errlen, KZ_EINVAL,
                       "policy_pruning needs forced_playouts_k > 0 (it prunes them)");
    if (s->root_mode != MCTS_ROOT_PUCT && s->root_mode != MCTS_ROOT_GUMBEL)
        return err_set(err, errlen, KZ_EINVAL, "root_mode must be puct or gumbel");
    if (s->root_mode == MCTS_ROOT_GUMBEL && (s->forced_playouts_k > 0 || s->policy_pruning))
        return err_set(err, errlen, KZ_EINVAL,
                       "forced_playouts_k and policy_pruning belong to root_mode puct, not gumbel");
    if (s->gumbel_m < 1 || s->gumbel_m > GAME_MAX_LEGAL)
        return err_set(err, errlen, KZ_EINVAL, "gumbel_m must be from 1 to 256");
    if (!(s->gumbel_c_visit >= 0 && s->gumbel_c_visit <= 100000))
        return err_set(err, errlen, KZ_EINVAL, "gumbel_c_visit must be in [0, 100000]");
    if (!(s->gumbel_c_scale > 0 && s->gumbel_c_scale <= 1000))
        return err_set(err, errlen, KZ_EINVAL, "gumbel_c_scale must be in (0, 1000]");
    return 0;
}

int mcts_root_mode_parse(const char *name, int *mode)
{
    static const char *const names[] = {[MCTS_ROOT_PUCT] = "puct", [MCTS_ROOT_GUMBEL] = "gumbel"};
    return name_parse(name, names, 2, mode);
}

const char *mcts_root_mode_name(int mode)
{
    return mode == MCTS_ROOT_PUCT ? "puct" : mode == MCTS_ROOT_GUMBEL ? "gumbel" : "?";
}

/* --- results ---------------------------------------------------------------- */

int mcts_result_choose(const mcts_result *r, bool tau_one, rng_t *rng)
{
    if (!tau_one || r->forced || r->total == 0 || r->gumbel)
        return r->best;
    if (r->pruned) {
        float x = (float)rng_uniform(rng);
        int last = -1;
        for (int k = 0; k < r->n; k++) {
            if (r->target[k] <= 0)
                continue;
            last = k;
            if (x < r->target[k])
                return r->actions[k];
            x -= r->target[k];
        }
        return last >= 0 ? r->actions[last] : r->best; /* rounding left x past the sum */
    }
    uint32_t x = (uint32_t)(rng_uniform(rng) * r->total);
    for (int k = 0; k < r->n; k++) {
        if (x < r->visits[k])
            return r->actions[k];
        x -= r->visits[k];
    }
    return r->best; /* not reached: x < total */
}

/* --- mechanics of the root methods ---------------------------------------------- */

float mcts_forced_playouts(float k, float prior, uint32_t total)
{
    return sqrtf(k * prior * (float)total);
}

void mcts_prune_visits(int n, const uint32_t *visits, const float *priors, const float *q,
                       int best, float c_puct, uint32_t parent_n, float k, uint32_t *out)
{
    assert(best >= 0 && best < n);
    uint32_t total = 0;
    for (int i = 0; i < n; i++)
        total += visits[i];
    /* PUCT as s_pick computes it, with no visit in flight. */
    float c_sqrt = c_puct * sqrtf((float)(parent_n > 1 ? parent_n : 1));
    float best_u = q[best] + c_sqrt * priors[best] / (float)(1 + visits[best]);
    for (int i = 0; i < n; i++) {
        out[i] = visits[i];
        if (i == best || visits[i] == 0)
            continue;
        uint32_t budget = (uint32_t)floorf(mcts_forced_playouts(k, priors[i], total));
        uint32_t v = visits[i];
        /* One visit at a time, while the child with one visit fewer would
         * still not have been preferred to the best one. */
        while (budget > 0 && v > 0 && q[i] + c_sqrt * priors[i] / (float)v < best_u) {
            v--;
            budget--;
        }
        out[i] = v <= 1 ? 0 : v;
    }
}

int mcts_gumbel_top_k(int n, const float *logits, const float *gumbel, int m, int *out)
{
    bool taken[GAME_MAX_LEGAL] = {false};
    assert(n <= GAME_MAX_LEGAL);
    int k = m < n ? m : n;
    for (int j = 0; j < k; j++) {
        int arg = -1;
        float best = 0;
        for (int i = 0; i < n; i++) {
            float v = logits[i] + gumbel[i];
            if (!taken[i] && (arg < 0 || v > best)) {
                arg = i;
                best = v;
            }
        }
        taken[arg] = true;
        out[j] = arg;
    }
    return k;
}

float mcts_gumbel_draw(rng_t *rng)
{
    /* u in (0, 1): 53 random bits, shifted half a step off 0 */
    double u = ((double)(rng_next(rng) >> 11) + 0.5) * 0x1p-53;
    return (float)-log(-log(u));
}

int mcts_gumbel_considered_visit(int m, int n, int s)
{
    if (m <= 1)
        return s;
    int log2m = 0;
    while ((1 << log2m) < m)
        log2m++;
    int k = m, visits = 0;
    long start = 0;
    for (;;) {
        int extra = n / (log2m * k);
        if (extra < 1)
            extra = 1;
        long len = (long)extra * k;
        if (s < start + len)
            return visits + (int)((s - start) / k);
        start += len;
        visits += extra;
        k = k / 2 > 2 ? k / 2 : 2;
    }
}

float mcts_gumbel_policy(int n, const float *priors, const uint32_t *visits, const float *q,
                         float raw, float c_visit, float c_scale, float *cq, float *pi)
{
    /* Step 1. The mixed value: the raw value and the prior-weighted mean of
     * the visited actions' values, weighted 1 : sum N. */
    uint32_t sum_n = 0, max_n = 0;
    float p_visited = 0, pq = 0;
    for (int i = 0; i < n; i++) {
        if (visits[i] == 0)
            continue;
        float p = priors[i] > FLT_MIN ? priors[i] : FLT_MIN;
        sum_n += visits[i];
        if (visits[i] > max_n)
            max_n = visits[i];
        p_visited += p;
        pq += p * q[i];
    }
    float mixed = raw;
    if (sum_n > 0)
        mixed = (raw + (float)sum_n * (pq / p_visited)) / (float)(1 + sum_n);
    /* Step 2. Completed values and pi' = softmax(log P + sigma(cq)). */
    float sigma = (c_visit + (float)max_n) * c_scale;
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) {
        cq[i] = visits[i] > 0 ? q[i] : mixed;
        pi[i] = logf(priors[i] > FLT_MIN ? priors[i] : FLT_MIN) + sigma * cq[i];
        if (pi[i] > mx)
            mx = pi[i];
    }
    float sum = 0;
    for (int i = 0; i < n; i++) {
        pi[i] = expf(pi[i] - mx);
        sum += pi[i];
    }
    for (int i = 0; i < n; i++)
        pi[i] /= sum;
    return sigma;
}

/* --- batch lifecycle ----------------------------------------------------------- */

static uint32_t s_pow2_at_least(uint32_t x)
{
    uint32_t p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

mcts_batch *mcts_batch_new(const game_def *g, const mcts_settings *s, int trees, evaluator ev)
{
    char err[128];
    if (!g || !s || trees < 1 || trees > 65536 || !ev.run || ev.max_batch < 1 ||
        mcts_settings_check(s, err, sizeof err) != 0)
        return NULL;
    mcts_batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->g = g;
    b->s = *s;
    b->ev = ev;
    b->n_trees = trees;
    b->plain = s->root_mode == MCTS_ROOT_PUCT && !(s->forced_playouts_k > 0);
    /* A game with chance expands nature's nodes too (21 outcomes each): twice the room. */
    uint64_t per_sim = g->is_chance ? 128 : 64;
    uint64_t cap = s->tree_nodes ? (uint64_t)s->tree_nodes : per_sim * s->simulations + 4096;
    b->cap = (uint32_t)cap;
    b->max_pending = trees * s->leaves_per_tree;
    b->plane_size = (size_t)g->planes * g->height * g->width;
    b->trees = calloc((size_t)trees, sizeof *b->trees);
    if (s->root_mode == MCTS_ROOT_GUMBEL) {
        b->groots = calloc((size_t)trees, sizeof *b->groots);
        if (!b->groots)
            goto out_fail;
    }
    /* calloc of a large block maps zero pages lazily: an arena costs memory
     * only as far as its tree ever grows. */
    b->arena = calloc((size_t)trees * 2 * b->cap, sizeof(node));
    b->pend = calloc((size_t)b->max_pending, sizeof *b->pend);
    b->planes = calloc((size_t)b->max_pending * b->plane_size, sizeof(float));
    b->logits = calloc((size_t)b->max_pending * g->action_count, sizeof(float));
    b->values = calloc((size_t)b->max_pending, sizeof(float));
    b->canon = calloc((size_t)b->max_pending * g->max_legal, sizeof(uint16_t));
    if (s->cache_entries > 0) {
        uint32_t n = s_pow2_at_least((uint32_t)s->cache_entries);
        b->cache = calloc(n, sizeof *b->cache);
        b->cache_mask = n - 1;
        if (!b->cache)
            goto out_fail;
    }
    if (!b->trees || !b->arena || !b->pend || !b->planes || !b->logits || !b->values ||
        !b->canon)
        goto out_fail;
    for (int i = 0; i < trees; i++) {
        b->trees[i].nodes = b->arena + (size_t)i * 2 * b->cap;
        b->trees[i].spare = b->trees[i].nodes + b->cap;
        b->trees[i].status = MCTS_IDLE;
        b->trees[i].sims = b->trees[i].next_sims = s->simulations;
        b->trees[i].explore = b->trees[i].next_explore = true;
        b->trees[i].gr = b->groots ? &b->groots[i] : NULL;
    }
    return b;
out_fail:
    mcts_batch_destroy(&b);
    return NULL;
}

void mcts_batch_destroy(mcts_batch **pb)
{
    if (!pb || !*pb)
        return;
    mcts_batch *b = *pb;
    free_all(b->trees, b->groots, b->arena, b->pend, b->planes, b->logits, b->values, b->canon,
             b->cache, b);
    *pb = NULL;
}

void mcts_batch_set_evaluator(mcts_batch *b, evaluator ev)
{
    assert(ev.run && ev.max_batch >= 1);
    b->ev = ev;
    if (b->cache)
        memset(b->cache, 0, sizeof *b->cache * ((size_t)b->cache_mask + 1));
}

void mcts_batch_set_oracle(mcts_batch *b, const game_oracle *o)
{
    KZ_CHECK(!o || !o->probe || o->game == b->g); /* it reads the state as its game's */
    b->oracle = o ? *o : (game_oracle){0};
}

int mcts_batch_trees(const mcts_batch *b) { return b->n_trees; }
const mcts_settings *mcts_batch_settings(const mcts_batch *b) { return &b->s; }
const mcts_stats *mcts_batch_stats(const mcts_batch *b) { return &b->stats; }
void mcts_batch_reset_stats(mcts_batch *b) { memset(&b->stats, 0, sizeof b->stats); }

/* --- tree operations -------------------------------------------------------------- */

static void s_fresh_root(tree *t)
{
    memset(&t->nodes[0], 0, sizeof(node));
    t->nodes[0].parent = NONE;
    t->used = 1;
}

/* Mixes Dirichlet(alpha) noise into the root's priors, once per move. */
static void s_root_noise(const mcts_batch *b, tree *t)
{
    node *root = &t->nodes[0];
    if (t->noise_done || !t->explore || b->s.dirichlet_epsilon <= 0 ||
        !(root->flags & F_EXPANDED) || root->n_children < 2 || t->gr)
        return; /* (gumbel mode: the Gumbel noise replaces it) */
    t->noise_done = true;
    double eta[GAME_MAX_LEGAL], sum = 0;
    int n = root->n_children;
    for (int k = 0; k < n; k++) {
        eta[k] = rng_gamma(&t->rng, b->s.dirichlet_alpha);
        sum += eta[k];
    }
    if (!(sum > 0))
        return; /* every draw underflowed (tiny alpha): no noise this move */
    float eps = b->s.dirichlet_epsilon;
    node *c = &t->nodes[root->first_child];
    for (int k = 0; k < n; k++)
        c[k].prior = (1 - eps) * c[k].prior + eps * (float)(eta[k] / sum);
}

/* Gumbel mode, once per move when the root is expanded: the draws, the m
 * considered actions (Gumbel-Top-k), the visits kept, this move's budget. */
static void s_gumbel_prepare(const mcts_batch *b, tree *t)
{
    groot *gr = t->gr;
    node *root = &t->nodes[0];
    if (!gr || gr->ready || !(root->flags & F_EXPANDED) || root->n_children < 2)
        return;
    gr->ready = true;
    int n = root->n_children;
    /* (a fast search of playout cap randomization draws none) */
    bool noise = t->explore &&
                 (b->s.gumbel_noise || b->g->ply(&t->root_state) < b->s.temperature_plies);
    const node *c = &t->nodes[root->first_child];
    float logits[GAME_MAX_LEGAL];
    uint32_t kept = 0;
    for (int k = 0; k < n; k++) {
        gr->g[k] = noise ? mcts_gumbel_draw(&t->rng) : 0;
        logits[k] = logf(c[k].prior > FLT_MIN ? c[k].prior : FLT_MIN);
        gr->base[k] = (uint32_t)c[k].n;
        gr->considered[k] = false;
        kept += (uint32_t)c[k].n;
    }
    int top[GAME_MAX_LEGAL];
    gr->m = mcts_gumbel_top_k(n, logits, gr->g, b->s.gumbel_m, top);
    for (int j = 0; j < gr->m; j++)
        gr->considered[top[j]] = true;
    gr->budget = kept < (uint32_t)t->sims ? t->sims - (int)kept : 0;
}

/* Sets the status, the root's legal count, and the visit count for a new move. */
static void s_begin_move(mcts_batch *b, tree *t)
{
    const game_def *g = b->g;
    t->noise_done = false;
    t->sims = t->next_sims;
    t->explore = t->next_explore;
    if (t->gr)
        t->gr->ready = false;
    t->full = false;
    t->inflight = 0;
    t->root_visits = 0;
    node *root = &t->nodes[0];
    if (root->n_children && !(root->flags & F_PENDING))
        for (int k = 0; k < root->n_children; k++)
            t->root_visits += (uint32_t)t->nodes[root->first_child + k].n;
    if (g->result(&t->root_state).over) {
        t->status = MCTS_OVER;
        t->n_legal = 0;
        return;
    }
    uint16_t acts[GAME_MAX_LEGAL];
    t->n_legal = g->legal_actions(&t->root_state, acts);
    KZ_CHECK(t->n_legal > 0);
    t->forced_action = acts[0];
    if (t->n_legal == 1 || (g->is_chance && g->is_chance(&t->root_state))) {
        /* One action, or nature's turn (the caller draws the outcome and
         * advances): nothing to search. */
        t->status = MCTS_DONE;
        return;
    }
    t->status = t->root_visits >= (uint32_t)t->sims && (root->flags & F_EXPANDED)
                    ? MCTS_DONE
                    : MCTS_SEARCHING;
    s_root_noise(b, t);
    s_gumbel_prepare(b, t);
}

void mcts_batch_reset(mcts_batch *b, int i, const game_state *s, uint64_t seed)
{
    assert(i >= 0 && i < b->n_trees);
    tree *t = &b->trees[i];
    t->root_state = *s;
    rng_seed(&t->rng, mix64(seed ^ 0x6d637473ull));
    s_fresh_root(t);
    s_begin_move(b, t);
}

void mcts_batch_set_budget(mcts_batch *b, int i, int simulations, bool explore)
{
    assert(i >= 0 && i < b->n_trees);
    assert(simulations >= 1 && simulations <= b->s.simulations);
    b->trees[i].next_sims = simulations;
    b->trees[i].next_explore = explore;
}

void mcts_batch_clear(mcts_batch *b, int i)
{
    assert(i >= 0 && i < b->n_trees);
    tree *t = &b->trees[i];
    s_fresh_root(t);
    t->status = MCTS_IDLE;
}

enum mcts_status mcts_batch_status(const mcts_batch *b, int i)
{
    assert(i >= 0 && i < b->n_trees);
    return b->trees[i].status;
}

const game_state *mcts_batch_state(const mcts_batch *b, int i)
{
    assert(i >= 0 && i < b->n_trees);
    return &b->trees[i].root_state;
}

/* Copies the subtree under `from` (an index in t->nodes) into t->spare with
 * `from` as the new root, breadth first so that siblings stay contiguous,
 * and swaps the arenas. */
static void s_compact(tree *t, uint32_t from)
{
    node *src = t->nodes, *dst = t->spare;
    dst[0] = src[from];
    dst[0].parent = NONE;
    uint32_t head = 0, tail = 1;
    while (head < tail) {
        node *x = &dst[head];
        if (x->n_children) {
            uint32_t first = tail;
            memcpy(&dst[tail], &src[x->first_child], sizeof(node) * x->n_children);
            for (uint32_t k = 0; k < x->n_children; k++)
                dst[first + k].parent = head;
            x->first_child = first;
            tail += x->n_children;
        }
        head++;
    }
    t->spare = src;
    t->nodes = dst;
    t->used = tail;
}

void mcts_batch_advance(mcts_batch *b, int i, int action)
{
    assert(i >= 0 && i < b->n_trees);
    tree *t = &b->trees[i];
    const game_def *g = b->g;
    assert(t->status != MCTS_IDLE && t->status != MCTS_OVER);
    assert(game_is_legal(g, &t->root_state, action));
    uint32_t child = NONE;
    node *root = &t->nodes[0];
    if (root->n_children && !(root->flags & F_PENDING))
        for (uint32_t k = 0; k < root->n_children; k++)
            if (t->nodes[root->first_child + k].action == action)
                child = root->first_child + k;
    g->apply(&t->root_state, action);
    /* A terminal child keeps no subtree: in the endgame tables it was one
     * without being over (mcts_batch_set_oracle), and as a root it is
     * searched afresh. */
    if (b->s.reuse_tree && child != NONE && !(t->nodes[child].flags & F_TERMINAL) &&
        (t->nodes[child].n > 0 || t->nodes[child].n_children > 0)) {
        assert(!(t->nodes[child].flags & F_PENDING) && t->nodes[child].vl == 0);
        s_compact(t, child);
        node *r = &t->nodes[0];
        if (r->flags & F_FLIP)
            r->w = -r->w; /* the root's value is kept from its own mover's view */
        r->flags &= (uint8_t)~F_FLIP;
    } else {
        s_fresh_root(t);
    }
    s_begin_move(b, t);
}

/* --- selection and backup ------------------------------------------------------------ */

/* Backs up v (from the view of the mover at node x) from x to the root,
 * turning one in-flight visit per node into a real one (R18 signs). */
static void s_backup(mcts_batch *b, tree *t, uint32_t x, float v)
{
    for (;;) {
        node *nd = &t->nodes[x];
        if (nd->flags & F_FLIP)
            v = -v; /* now from the chooser's view */
        assert(nd->vl > 0);
        nd->vl--;
        nd->n++;
        nd->w += v;
        if (nd->parent == NONE)
            break;
        if (nd->parent == 0) {
            t->root_visits++;
            b->stats.simulations++;
        }
        x = nd->parent;
    }
}

/* Removes one in-flight visit from x and its ancestors. */
static void s_revert(tree *t, uint32_t x)
{
    for (;;) {
        node *nd = &t->nodes[x];
        assert(nd->vl > 0);
        nd->vl--;
        if (nd->parent == NONE)
            break;
        x = nd->parent;
    }
}

/* Forced playouts: the first root child that has been visited and has fewer
 * visits (in-flight ones included) than mcts_forced_playouts, or NONE. */
static uint32_t s_forced_child(const mcts_batch *b, const tree *t)
{
    const node *p = &t->nodes[0];
    const node *c = &t->nodes[p->first_child];
    uint32_t total = 0;
    for (uint32_t k = 0; k < p->n_children; k++)
        total += (uint32_t)c[k].n + c[k].vl;
    for (uint32_t k = 0; k < p->n_children; k++) {
        uint32_t nv = (uint32_t)c[k].n + c[k].vl;
        if (nv > 0 && (float)nv < mcts_forced_playouts(b->s.forced_playouts_k, c[k].prior, total))
            return p->first_child + k;
    }
    return NONE;
}

/* The PUCT choice among the children of the expanded node x. */
static uint32_t s_pick(const mcts_batch *b, const tree *t, uint32_t x)
{
    const node *p = &t->nodes[x];
    int total = p->n + p->vl;
    float sqrt_n = sqrtf((float)(total > 1 ? total : 1));
    float v_parent = 0;
    if (p->n > 0)
        v_parent = ((p->flags & F_FLIP) ? -p->w : p->w) / (float)p->n;
    float fpu_q = v_parent - b->s.fpu;
    if (fpu_q < -1)
        fpu_q = -1;
    float c_sqrt = b->s.c_puct * sqrt_n;
    uint32_t best = p->first_child;
    float best_score = -INFINITY;
    const node *c = &t->nodes[p->first_child];
    for (uint32_t k = 0; k < p->n_children; k++) {
        int nv = c[k].n + c[k].vl;
        float q = nv > 0 ? (c[k].w - (float)c[k].vl) / (float)nv : fpu_q;
        float score = q + c_sqrt * c[k].prior / (float)(1 + nv);
        if (score > best_score) {
            best_score = score;
            best = p->first_child + k;
        }
    }
    return best;
}

/* The outcome to walk to at the chance node x: the one furthest behind its
 * probability's share of the node's visits (in-flight ones included), the
 * first of equals: argmax p_k (N + 1) - N_k. Deterministic, and the visits
 * follow the probabilities within one visit each, so the node's mean value
 * is the expectation over the outcomes searched so far (stratified
 * sampling: docs/rules-backgammon.md, "The search at chance nodes"). */
static uint32_t s_pick_chance(const tree *t, uint32_t x)
{
    const node *p = &t->nodes[x];
    const node *c = &t->nodes[p->first_child];
    float total = 1;
    for (uint32_t k = 0; k < p->n_children; k++)
        total += (float)(c[k].n + c[k].vl);
    uint32_t best = 0;
    float best_gap = -INFINITY;
    for (uint32_t k = 0; k < p->n_children; k++) {
        float gap = c[k].prior * total - (float)(c[k].n + c[k].vl);
        if (gap > best_gap) {
            best_gap = gap;
            best = k;
        }
    }
    return p->first_child + best;
}

/* Gumbel mode: node x's raw evaluator value from its mover's view (see the
 * top of this file), clamped to [-1, 1] against rounding. */
static float s_raw_value(const tree *t, uint32_t x)
{
    const node *p = &t->nodes[x];
    float v = (p->flags & F_FLIP) ? -p->w : p->w;
    const node *c = &t->nodes[p->first_child];
    for (uint32_t k = 0; k < p->n_children; k++)
        v -= c[k].w;
    return v > 1 ? 1 : v < -1 ? -1 : v;
}

/* Gumbel mode: completed values and pi' at the expanded node x (n children),
 * into the caller's arrays; returns sigma's factor. */
static float s_gumbel_node(const mcts_batch *b, const tree *t, uint32_t x, float *prior,
                           uint32_t *visits, float *q, float *cq, float *pi)
{
    const node *p = &t->nodes[x];
    const node *c = &t->nodes[p->first_child];
    int n = p->n_children;
    for (int k = 0; k < n; k++) {
        prior[k] = c[k].prior;
        visits[k] = (uint32_t)c[k].n;
        q[k] = c[k].n > 0 ? c[k].w / (float)c[k].n : 0;
    }
    return mcts_gumbel_policy(n, prior, visits, q, s_raw_value(t, x), b->s.gumbel_c_visit,
                              b->s.gumbel_c_scale, cq, pi);
}

/* Gumbel mode's choice at the expanded node x: Sequential Halving at the
 * root, the deterministic eq. 14 below it. */
static uint32_t s_pick_gumbel(const mcts_batch *b, const tree *t, uint32_t x)
{
    const node *p = &t->nodes[x];
    const node *c = &t->nodes[p->first_child];
    int n = p->n_children;
    if (n == 1)
        return p->first_child;
    float prior[GAME_MAX_LEGAL], q[GAME_MAX_LEGAL], cq[GAME_MAX_LEGAL], pi[GAME_MAX_LEGAL];
    uint32_t visits[GAME_MAX_LEGAL];
    float sigma = s_gumbel_node(b, t, x, prior, visits, q, cq, pi);
    int best = -1;
    if (x == 0 && t->gr && t->gr->ready) {
        /* Sequential Halving: this move's visits, in-flight ones included. */
        const groot *gr = t->gr;
        uint32_t started = 0;
        for (int k = 0; k < n; k++)
            started += (uint32_t)c[k].n + c[k].vl - gr->base[k];
        uint32_t want = (uint32_t)mcts_gumbel_considered_visit(gr->m, gr->budget, (int)started);
        float score[GAME_MAX_LEGAL];
        uint32_t fewest = UINT32_MAX;
        for (int k = 0; k < n; k++) {
            score[k] = gr->g[k] + logf(prior[k] > FLT_MIN ? prior[k] : FLT_MIN) + sigma * cq[k];
            uint32_t v = (uint32_t)c[k].n + c[k].vl - gr->base[k];
            if (gr->considered[k] && v < fewest)
                fewest = v;
        }
        /* The schedule's count always has a candidate (every selection takes
         * one, in order); should it not, the fewest visits stand in. */
        for (int pass = 0; pass < 2 && best < 0; pass++) {
            uint32_t need = pass == 0 ? want : fewest;
            for (int k = 0; k < n; k++)
                if (gr->considered[k] && (uint32_t)c[k].n + c[k].vl - gr->base[k] == need &&
                    (best < 0 || score[k] > score[best]))
                    best = k;
        }
        KZ_CHECK(best >= 0); /* the second pass finds a considered action: the fewest visits */
    } else {
        /* Eq. 14: argmax pi'(a) - n(a) / (1 + sum n), in-flight visits counted. */
        uint32_t total = 0;
        for (int k = 0; k < n; k++)
            total += (uint32_t)c[k].n + c[k].vl;
        float best_score = 0;
        for (int k = 0; k < n; k++) {
            float score = pi[k] - (float)((uint32_t)c[k].n + c[k].vl) / (float)(1 + total);
            if (best < 0 || score > best_score) {
                best = k;
                best_score = score;
            }
        }
    }
    return p->first_child + (uint32_t)best;
}

/* The choice at node x when forced playouts or gumbel mode are on, or NONE
 * where PUCT decides. */
static uint32_t s_pick_root_methods(const mcts_batch *b, const tree *t, uint32_t x)
{
    if (t->gr)
        return s_pick_gumbel(b, t, x);
    return x == 0 && t->explore ? s_forced_child(b, t) : NONE; /* (fast searches: none) */
}

/* Called when node x has just been expanded. */
static void s_expanded(mcts_batch *b, tree *t, uint32_t x)
{
    if (x == 0) {
        s_root_noise(b, t);
        s_gumbel_prepare(b, t);
    }
}

/* The cache slot holding `key` with n legal actions, or NULL. */
static cache_entry *s_cache_find(mcts_batch *b, uint64_t key, int n)
{
    if (!b->cache || n > CACHE_PRIORS)
        return NULL;
    cache_entry *e = &b->cache[key & b->cache_mask];
    return e->n != 0 && e->key == key && (e->n == n || e->n == CACHE_WAITING) ? e : NULL;
}

/* Leaf x is terminal (its value in term): backs the value up. */
static int s_select_terminal(mcts_batch *b, tree *t, uint32_t x)
{
    b->stats.terminal_leaves++;
    s_backup(b, t, x, t->nodes[x].term / 100.0f);
    return SEL_DONE;
}

/* Makes the n children of node x (the actions acts, in order) in t's arena;
 * false when they do not fit. */
static bool s_add_children(const mcts_batch *b, tree *t, uint32_t x, const uint16_t *acts, int n)
{
    if (t->used + (uint32_t)n > b->cap)
        return false;
    uint32_t first = t->used;
    t->used += (uint32_t)n;
    for (int k = 0; k < n; k++) {
        node *c = &t->nodes[first + k];
        memset(c, 0, sizeof *c);
        c->parent = x;
        c->action = acts[k];
    }
    t->nodes[x].first_child = first;
    t->nodes[x].n_children = (uint16_t)n;
    return true;
}

/* Queues leaf x of tree ti (at state st, with its n children made for acts)
 * for this step's evaluator batch: answered by the cache (but backed up with
 * the batch like any leaf, so that a tree searches the same whatever the
 * cache holds), sharing the row of the same position already waiting in
 * this step, or in a row of its own. */
static int s_queue_leaf(mcts_batch *b, int ti, uint32_t x, const game_state *st,
                        const uint16_t *acts, int n)
{
    const game_def *g = b->g;
    tree *t = &b->trees[ti];
    node *nd = &t->nodes[x];
    uint64_t h = g->hash(st);
    cache_entry *e = s_cache_find(b, h, n);
    pending *p = &b->pend[b->n_pend];
    p->tree = ti;
    p->node = x;
    p->known = false;
    p->cache_ix = NONE;
    if (e && e->n != CACHE_WAITING) {
        for (int k = 0; k < n; k++)
            t->nodes[nd->first_child + k].prior = e->priors[k];
        p->known = true;
        p->value = e->value;
        b->stats.cache_hits++;
    } else {
        p->hash = h;
        p->canon = (uint32_t)b->n_pend * (uint32_t)g->max_legal;
        for (int k = 0; k < n; k++)
            b->canon[p->canon + k] = (uint16_t)g->canonical_action(st, acts[k]);
        if (e) {
            p->slot = e->slot; /* the same position waits in this batch */
            b->stats.duplicates++;
        } else {
            p->slot = (uint32_t)b->n_slots++;
            g->encode_planes(st, b->planes + (size_t)p->slot * b->plane_size);
            if (b->cache && n <= CACHE_PRIORS) {
                p->cache_ix = (uint32_t)(h & b->cache_mask);
                cache_entry *w = &b->cache[p->cache_ix];
                w->key = h;
                w->n = CACHE_WAITING;
                w->slot = p->slot;
            }
        }
    }
    b->n_pend++;
    nd->flags |= F_PENDING;
    if (x != 0)
        t->inflight++;
    return SEL_PENDING;
}

/* Expands node x of tree ti, reached at state st: a finished game is
 * terminal (SEL_DONE), so is a state in the endgame tables below the root
 * (mcts_batch_set_oracle), a state with one legal action is walked through
 * without evaluation (SEL_WALK), any other is queued (SEL_PENDING); SEL_FULL
 * when its children do not fit in the arena. acts: room for the legal
 * actions (GAME_MAX_LEGAL). */
static int s_expand(mcts_batch *b, int ti, uint32_t x, const game_state *st, uint16_t *acts)
{
    const game_def *g = b->g;
    tree *t = &b->trees[ti];
    node *nd = &t->nodes[x];
    game_result r = g->result(st);
    if (r.over) {
        nd->flags |= F_TERMINAL;
        nd->term = (int8_t)lrintf(100 * game_result_value(g, r, g->to_move(st)));
        return s_select_terminal(b, t, x);
    }
    int score;
    if (x != 0 && b->oracle.probe && b->oracle.probe(b->oracle.ctx, st, &score) == 0) {
        /* Its exact result (the tables' distance makes the search hurry), as
         * a terminal. */
        nd->flags |= F_TERMINAL;
        nd->term = (int8_t)score;
        b->stats.tb_leaves++;
        s_backup(b, t, x, score / 100.0f);
        return SEL_DONE;
    }
    int n = g->legal_actions(st, acts);
    KZ_CHECK(n > 0); /* a state that is not over has an action */
    if (!s_add_children(b, t, x, acts, n)) {
        s_revert(t, x);
        return SEL_FULL;
    }
    if (g->is_chance && g->is_chance(st)) {
        /* Nature's node: the outcomes' probabilities are its priors; the
         * walk goes on to an outcome (s_pick_chance), never evaluated here. */
        float probs[GAME_MAX_LEGAL];
        g->chance_probs(st, probs);
        for (int k = 0; k < n; k++)
            t->nodes[nd->first_child + k].prior = probs[k];
        nd->flags |= F_EXPANDED | F_CHANCE;
        b->stats.chance_nodes++;
        return SEL_WALK;
    }
    /* A game with chance evaluates its forced states too: walked through,
     * a chain of forced moves and rolls would expand 21 outcomes at every
     * roll down to the game's end in one selection. */
    if (n > 1 || g->is_chance)
        return s_queue_leaf(b, ti, x, st, acts, n);
    t->nodes[nd->first_child].prior = 1; /* forced: no evaluation */
    nd->flags |= F_EXPANDED;
    b->stats.forced_nodes++;
    return SEL_WALK;
}

/* Moves from the expanded node x to the child the search picks: plays its
 * action on st, records whether the mover changes (the value's sign), and
 * adds a virtual visit. Returns the child. */
static uint32_t s_descend(mcts_batch *b, tree *t, uint32_t x, game_state *st)
{
    const game_def *g = b->g;
    /* (b->plain: the default walk pays one test per edge) */
    uint32_t c;
    if (t->nodes[x].flags & F_CHANCE) {
        c = s_pick_chance(t, x);
    } else {
        c = b->plain ? NONE : s_pick_root_methods(b, t, x);
        if (c == NONE)
            c = s_pick(b, t, x);
    }
    int before = g->to_move(st);
    g->apply(st, t->nodes[c].action);
    if (g->to_move(st) != before)
        t->nodes[c].flags |= F_FLIP;
    else
        t->nodes[c].flags &= (uint8_t)~F_FLIP;
    t->nodes[c].vl++;
    return c;
}

/* One selection in tree ti: walks down from the root, replaying the actions,
 * to a leaf; finishes it at once (terminal, cached) or queues it for the
 * evaluator. Returns SEL_*. */
static int s_select(mcts_batch *b, int ti)
{
    tree *t = &b->trees[ti];
    game_state st = t->root_state;
    uint32_t x = 0;
    /* s_expand's legal actions, in this frame rather than its own: GCC then
     * inlines the gumbel pick (its arrays are large) into this loop as
     * before the split (callgrind: without it, 1% more instructions). */
    uint16_t acts[GAME_MAX_LEGAL];
    t->nodes[0].vl++;
    for (;;) {
        uint8_t flags = t->nodes[x].flags;
        if (flags & F_TERMINAL)
            return s_select_terminal(b, t, x);
        if (flags & F_PENDING) {
            s_revert(t, x);
            return SEL_COLLISION;
        }
        if (!(flags & F_EXPANDED)) {
            int r = s_expand(b, ti, x, &st, acts);
            if (r != SEL_WALK)
                return r;
        }
        x = s_descend(b, t, x, &st);
    }
}

/* Undoes every waiting selection of this step (after an evaluator error). */
static void s_abandon_pending(mcts_batch *b)
{
    for (int k = 0; k < b->n_pend; k++) {
        pending *p = &b->pend[k];
        tree *t = &b->trees[p->tree];
        node *nd = &t->nodes[p->node];
        nd->flags &= (uint8_t)~F_PENDING;
        nd->n_children = 0; /* the allocated children are dropped (reclaimed at the next move) */
        if (p->node != 0)
            t->inflight--;
        s_revert(t, p->node);
        if (p->cache_ix != NONE && b->cache[p->cache_ix].n == CACHE_WAITING)
            b->cache[p->cache_ix].n = 0;
    }
    /* A leaf that shared a row may have left a waiting mark too. */
    if (b->cache)
        for (int k = 0; k < b->n_pend; k++) {
            cache_entry *e = &b->cache[b->pend[k].hash & b->cache_mask];
            if (e->n == CACHE_WAITING)
                e->n = 0;
        }
    b->n_pend = 0;
    b->n_slots = 0;
}

/* Step 2: runs the evaluator over the rows [0, n_slots). */
static int s_evaluate(mcts_batch *b)
{
    int A = b->g->action_count;
    double t0 = time_now();
    for (int done = 0; done < b->n_slots;) {
        int B = b->n_slots - done;
        if (B > b->ev.max_batch)
            B = b->ev.max_batch;
        int rc = b->ev.run(b->ev.ctx, b->planes + (size_t)done * b->plane_size, B,
                           b->logits + (size_t)done * A, b->values + done);
        b->stats.evaluator_calls++;
        b->stats.evaluated += (uint64_t)B;
        if (B > b->stats.max_batch_seen)
            b->stats.max_batch_seen = B;
        if (rc != 0) {
            b->stats.eval_seconds += time_now() - t0;
            return rc;
        }
        done += B;
    }
    b->stats.eval_seconds += time_now() - t0;
    return 0;
}

/* Step 3 check: every value in [-1, 1] and every legal logit finite. */
static int s_check_outputs(const mcts_batch *b)
{
    int A = b->g->action_count;
    for (int k = 0; k < b->n_pend; k++) {
        const pending *p = &b->pend[k];
        if (p->known)
            continue;
        float v = b->values[p->slot];
        if (!(v >= -1.0001f && v <= 1.0001f))
            return KZ_EINVAL;
        const float *lg = b->logits + (size_t)p->slot * A;
        int n = b->trees[p->tree].nodes[p->node].n_children;
        for (int j = 0; j < n; j++)
            if (!isfinite(lg[b->canon[p->canon + j]]))
                return KZ_EINVAL;
    }
    return 0;
}

/* Step 3: priors, cache, backup. */
static void s_finish_pending(mcts_batch *b)
{
    int A = b->g->action_count;
    for (int k = 0; k < b->n_pend; k++) {
        const pending *p = &b->pend[k];
        tree *t = &b->trees[p->tree];
        node *nd = &t->nodes[p->node];
        if (p->known) {
            nd->flags = (uint8_t)((nd->flags & ~F_PENDING) | F_EXPANDED);
            if (p->node != 0)
                t->inflight--;
            s_expanded(b, t, p->node);
            s_backup(b, t, p->node, p->value);
            continue;
        }
        int n = nd->n_children;
        const float *lg = b->logits + (size_t)p->slot * A;
        const uint16_t *canon = b->canon + p->canon;
        float mx = -INFINITY;
        for (int j = 0; j < n; j++)
            if (lg[canon[j]] > mx)
                mx = lg[canon[j]];
        node *c = &t->nodes[nd->first_child];
        float sum = 0;
        for (int j = 0; j < n; j++) {
            c[j].prior = expf(lg[canon[j]] - mx);
            sum += c[j].prior;
        }
        for (int j = 0; j < n; j++)
            c[j].prior /= sum;
        float v = b->values[p->slot];
        if (v > 1)
            v = 1;
        if (v < -1)
            v = -1;
        if (p->cache_ix != NONE) {
            cache_entry *e = &b->cache[p->cache_ix];
            e->key = p->hash;
            e->value = v;
            e->n = (uint16_t)n;
            for (int j = 0; j < n; j++)
                e->priors[j] = c[j].prior;
        }
        nd->flags = (uint8_t)((nd->flags & ~F_PENDING) | F_EXPANDED);
        if (p->node != 0)
            t->inflight--;
        s_expanded(b, t, p->node);
        s_backup(b, t, p->node, v);
    }
    b->n_pend = 0;
    b->n_slots = 0;
}

int mcts_batch_step(mcts_batch *b)
{
    double t0 = time_now();
    bool worked = false;
    /* Step 1. */
    for (int i = 0; i < b->n_trees; i++) {
        tree *t = &b->trees[i];
        int queued = 0;
        while (t->status == MCTS_SEARCHING && queued < b->s.leaves_per_tree) {
            node *root = &t->nodes[0];
            if (root->flags & F_PENDING)
                break; /* the root's own evaluation waits: nothing to select yet */
            if ((root->flags & F_EXPANDED) && t->root_visits + t->inflight >= (uint32_t)t->sims)
                break;
            worked = true;
            int r = s_select(b, i);
            if (r == SEL_PENDING) {
                queued++;
            } else if (r == SEL_COLLISION) {
                b->stats.collisions++;
                break;
            } else if (r == SEL_FULL) {
                if (!t->full)
                    b->stats.arena_full++;
                t->full = true;
                break;
            }
        }
    }
    /* Steps 2 and 3. */
    if (b->n_pend > 0) {
        int rc = b->n_slots > 0 ? s_evaluate(b) : 0;
        if (rc == 0)
            rc = s_check_outputs(b);
        if (rc != 0) {
            s_abandon_pending(b);
            b->stats.step_seconds += time_now() - t0;
            return rc;
        }
        s_finish_pending(b);
    }
    int searching = 0;
    for (int i = 0; i < b->n_trees; i++) {
        tree *t = &b->trees[i];
        if (t->status != MCTS_SEARCHING)
            continue;
        if (t->full ||
            ((t->nodes[0].flags & F_EXPANDED) && t->root_visits >= (uint32_t)t->sims))
            t->status = MCTS_DONE;
        else
            searching++;
    }
    if (worked)
        b->stats.steps++;
    b->stats.step_seconds += time_now() - t0;
    return searching;
}

int mcts_batch_run(mcts_batch *b)
{
    for (;;) {
        int rc = mcts_batch_step(b);
        if (rc <= 0)
            return rc;
    }
}

/* Gumbel mode: the halving's winner as out->best and pi' as out->target. */
static void s_gumbel_result(const mcts_batch *b, const tree *t, mcts_result *out)
{
    const groot *gr = t->gr;
    const node *c = &t->nodes[t->nodes[0].first_child];
    int n = out->n;
    float prior[GAME_MAX_LEGAL], q[GAME_MAX_LEGAL], cq[GAME_MAX_LEGAL];
    uint32_t visits[GAME_MAX_LEGAL];
    float sigma = s_gumbel_node(b, t, 0, prior, visits, q, cq, out->target);
    /* The most visited this move among the considered, then the best score. */
    int best = -1;
    uint32_t best_v = 0;
    float best_score = 0;
    for (int k = 0; k < n; k++) {
        if (!gr->considered[k])
            continue;
        uint32_t v = (uint32_t)c[k].n - gr->base[k];
        float score = gr->g[k] + logf(prior[k] > FLT_MIN ? prior[k] : FLT_MIN) + sigma * cq[k];
        if (best < 0 || v > best_v || (v == best_v && score > best_score)) {
            best = k;
            best_v = v;
            best_score = score;
        }
    }
    out->best = out->actions[best];
}

void mcts_batch_result(const mcts_batch *b, int i, mcts_result *out)
{
    assert(i >= 0 && i < b->n_trees);
    const tree *t = &b->trees[i];
    const node *root = &t->nodes[0];
    out->n = 0;
    out->total = 0;
    out->forced = false;
    out->pruned = false;
    out->gumbel = t->gr != NULL;
    out->value = root->n > 0 ? root->w / (float)root->n : 0;
    if (t->status == MCTS_OVER || t->status == MCTS_IDLE) {
        out->best = -1;
        return;
    }
    if (root->n_children && !(root->flags & F_PENDING)) {
        out->n = root->n_children;
        const node *c = &t->nodes[root->first_child];
        for (int k = 0; k < out->n; k++) {
            out->actions[k] = c[k].action;
            out->visits[k] = (uint32_t)c[k].n;
            out->priors[k] = c[k].prior;
            out->q[k] = c[k].n > 0 ? c[k].w / (float)c[k].n : 0;
            out->total += (uint32_t)c[k].n;
        }
    } else {
        uint16_t acts[GAME_MAX_LEGAL];
        out->n = b->g->legal_actions(&t->root_state, acts);
        for (int k = 0; k < out->n; k++) {
            out->actions[k] = acts[k];
            out->visits[k] = 0;
            out->priors[k] = 1.0f / (float)out->n;
            out->q[k] = 0;
        }
    }
    int best = 0;
    for (int k = 1; k < out->n; k++)
        if (out->visits[k] > out->visits[best] ||
            (out->visits[k] == out->visits[best] && out->priors[k] > out->priors[best]))
            best = k;
    out->best = out->actions[best];
    for (int k = 0; k < out->n; k++)
        out->target[k] = out->total ? (float)out->visits[k] / (float)out->total : 0;
    if (out->total && b->s.policy_pruning && t->explore) { /* nothing forced otherwise */
        uint32_t pruned[GAME_MAX_LEGAL], sum = 0;
        mcts_prune_visits(out->n, out->visits, out->priors, out->q, best, b->s.c_puct,
                          (uint32_t)root->n, b->s.forced_playouts_k, pruned);
        for (int k = 0; k < out->n; k++)
            sum += pruned[k];
        for (int k = 0; k < out->n; k++)
            out->target[k] = (float)pruned[k] / (float)sum; /* sum > 0: best keeps its visits */
        out->pruned = true;
    }
    if (t->gr && t->gr->ready && (root->flags & F_EXPANDED) && root->n_children == out->n)
        s_gumbel_result(b, t, out);
    out->forced = t->n_legal == 1;
    if (out->forced)
        out->best = t->forced_action;
}

int mcts_search(const game_def *g, const mcts_settings *s, evaluator ev, const game_state *st,
                uint64_t seed, mcts_result *out)
{
    if (mcts_settings_check(s, NULL, 0) != 0 || g->result(st).over)
        return KZ_EINVAL;
    mcts_batch *b = mcts_batch_new(g, s, 1, ev);
    if (!b)
        return KZ_ENOMEM;
    mcts_batch_reset(b, 0, st, seed);
    int rc = mcts_batch_run(b);
    if (rc == 0)
        mcts_batch_result(b, 0, out);
    mcts_batch_destroy(&b);
    return rc;
}
