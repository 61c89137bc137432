/* Tests of the training targets' data path (docs/learning.md): playout cap
 * randomization's states without a policy target and the q + z value target,
 * from a game record through record pack/unpack, the coordinator's validator,
 * the replay store (a real LMDB environment in a temp directory) and the
 * wire's BatchReply to the trainer's batch assembly (trainer/batch.c) and
 * loss (model_train); with worked examples of the loss and of the mixing;
 * and the producers of fast-search states: self-play (selfplay.h) and a real
 * kz-worker against a real kz-coordinator. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/layer.h"
#include "play/match.h"
#include "nn/model.h"
#include "data/record.h"
#include "play/selfplay.h"
#include "data/store.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

/* Every Criterion .timeout in the runner has one value (tools/check_timeouts.sh
 * says why: other values leak 48 bytes in Criterion's runner under make asan). */
TestSuite(targets, .timeout = 600);

#define MAX_POS 1024 /* positions of one test game at most */

/* What each training position of a test game should come out as. */
typedef struct expect {
    int n;                /* positions */
    bool fast[MAX_POS];   /* no policy target */
    bool forced[MAX_POS]; /* forced state: q = z */
    float q[MAX_POS];     /* root value recorded (the expected q unless forced) */
    int mover[MAX_POS];   /* player to move */
    int moves;            /* moves in the record */
    int fast_moves;       /* moves marked fast_search */
} expect;

/* A record of a random game from the initial position (seed): every
 * non-forced move is a full search except every third, which is a fast
 * search (of those, every other one recorded without a distribution);
 * root values are distinctive, forced ones 0.75 (a reused subtree's value). */
static game_record *s_game(const game_def *g, uint64_t seed, bool with_fast, expect *e)
{
    game_record *r = record_new();
    cr_assert_not_null(r);
    memset(e, 0, sizeof *e);
    rng_t rng;
    rng_seed(&rng, seed);
    cr_assert_eq(record_new_id(r), 0);
    snprintf(r->game, sizeof r->game, "%s", g->name);
    r->kind = RECORD_SELFPLAY;
    r->model_version = 1;
    r->settings.simulations = 200;
    r->settings.fast_simulations = with_fast ? 40 : 0;
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    float share[GAME_MAX_LEGAL];
    int searched = 0;
    while (!g->result(&s).over) {
        int nl = g->legal_actions(&s, legal);
        bool forced = nl == 1;
        bool fast = with_fast && !forced && searched++ % 3 == 2;
        bool empty = fast && e->fast_moves % 2 == 1;
        for (int k = 0; k < nl; k++)
            share[k] = 1.0f / (float)nl;
        float rv = forced ? 0.75f : (float)((int)(rng_below(&rng, 9)) - 4) * 0.25f;
        int a = legal[rng_below(&rng, (uint32_t)nl)];
        cr_assert_eq(record_add_move(r, a, forced, rv, empty ? 0 : nl, legal, share), 0);
        r->moves[r->n_moves - 1].fast_search = fast;
        e->fast_moves += fast;
        cr_assert_lt(e->n, MAX_POS);
        e->fast[e->n] = fast;
        e->forced[e->n] = forced;
        e->q[e->n] = rv;
        e->mover[e->n] = g->to_move(&s);
        e->n++;
        g->apply(&s, a);
    }
    e->moves = r->n_moves;
    game_result res = g->result(&s);
    r->winner = res.winner;
    r->reason = res.reason;
    r->plies = (uint32_t)g->ply(&s);
    return r;
}

/* z of position p from its mover's view. */
static float s_z(const game_record *r, const expect *e, int p)
{
    return r->winner < 0 ? 0.0f : r->winner == e->mover[p] ? 1.0f : -1.0f;
}

/* The expected value target q of position p. */
static float s_q(const game_record *r, const expect *e, int p)
{
    return e->forced[p] ? s_z(r, e, p) : e->q[p];
}

Test(targets, fast_search_moves_round_trip_through_record_pack_and_unpack)
{
    const game_def *g = game_default();
    expect e;
    game_record *r = s_game(g, 11, true, &e);
    cr_assert_gt(e.fast_moves, 2, "the test game needs fast moves");
    uint8_t *buf;
    size_t len;
    cr_assert_eq(record_pack(r, &buf, &len), 0);
    game_record *back = record_new();
    char err[256];
    cr_assert_eq(record_unpack(buf, len, back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back->n_moves, r->n_moves);
    cr_assert_eq(back->settings.fast_simulations, 40);
    int fast = 0;
    for (int k = 0; k < r->n_moves; k++) {
        cr_assert_eq(back->moves[k].fast_search, r->moves[k].fast_search, "move %d", k);
        cr_assert_eq(back->moves[k].policy_n, r->moves[k].policy_n, "move %d", k);
        fast += back->moves[k].fast_search;
    }
    cr_assert_eq(fast, e.fast_moves);
    cr_assert_eq(record_validate(g, back, err, sizeof err), 0, "%s", err);
    /* A record without fast searches packs no flag at all: the bytes of a
     * record from before the setting, read as full searches. */
    game_record *old = s_game(g, 11, false, &e);
    uint8_t *obuf;
    size_t olen;
    cr_assert_eq(record_pack(old, &obuf, &olen), 0);
    cr_assert_eq(record_unpack(obuf, olen, back, err, sizeof err), 0, "%s", err);
    for (int k = 0; k < back->n_moves; k++)
        cr_assert(!back->moves[k].fast_search);
    cr_assert_eq(back->settings.fast_simulations, 0);
    free(buf);
    free(obuf);
    record_destroy(&r);
    record_destroy(&old);
    record_destroy(&back);
}

Test(targets, a_forced_state_marked_fast_is_refused)
{
    const game_def *g = game_default();
    expect e;
    game_record *r = s_game(g, 5, false, &e);
    int k = 0;
    while (k < r->n_moves && !r->moves[k].forced)
        k++;
    cr_assert_lt(k, r->n_moves, "the test game needs a forced move");
    r->moves[k].fast_search = true;
    char err[256];
    cr_assert_eq(record_validate(g, r, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "forced"), "%s", err);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(record_pack(r, &buf, &len), 0);
    validator *v = validator_new(g, NULL);
    validate_result res;
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_MALFORMED);
    validator_destroy(&v);
    free(buf);
    record_destroy(&r);
}

/* Checks the validator's positions of r against e. */
static void s_check_positions(const game_def *g, const game_record *r, const expect *e,
                              const validate_result *v)
{
    cr_assert_eq(v->n_positions, (uint32_t)e->n, "one position per state, fast ones too");
    cr_assert_not_null(v->q);
    for (int p = 0; p < e->n; p++) {
        uint32_t n = v->offsets[p + 1] - v->offsets[p];
        if (e->fast[p])
            cr_assert_eq(n, 0, "position %d: a fast search has no policy target", p);
        else
            cr_assert_gt(n, 0, "position %d: a full search has one", p);
        cr_assert_float_eq(v->z[p], s_z(r, e, p), 0, "position %d", p);
        cr_assert_float_eq(v->q[p], s_q(r, e, p), 0, "position %d", p);
    }
    (void)g;
}

/* Stores v's positions as game `id_seed` into s and returns the first
 * position's sequence. */
static uint64_t s_put(store *s, const uint8_t *rec, size_t len, const validate_result *v)
{
    store_stats st;
    store_get_stats(s, &st);
    store_game sg = {v->game_id, rec,       len,        v->n_positions, v->packed_bytes,
                     v->packed,  v->z,      v->offsets, v->actions,     v->probs,
                     v->q,       false,     0,          NULL,           NULL,
                     NULL,       NULL};
    cr_assert_eq(store_put_games(s, &sg, 1), 0);
    cr_assert(!sg.duplicate);
    return st.positions_total;
}

Test(targets, states_without_a_policy_target_reach_the_trainer_with_zero_policy_rows)
{
    const game_def *g = game_default();
    expect e;
    game_record *r = s_game(g, 23, true, &e);
    uint8_t *rec;
    size_t len;
    cr_assert_eq(record_pack(r, &rec, &len), 0);
    /* Step 1. The validator: a position per state, fast ones with an empty policy. */
    validator *v = validator_new(g, NULL);
    validate_result res;
    cr_assert_eq(validate_record(v, rec, len, 1, &res), VALIDATE_OK, "%s", res.detail);
    s_check_positions(g, r, &e, &res);
    /* Step 2. The store (real LMDB): each position reads back as written. */
    char *dir = harness_tmpdir("targets");
    cr_assert_not_null(dir);
    store_options o;
    store_options_default(&o);
    o.no_sync = true;
    store *s;
    cr_assert_eq(store_open(&s, dir, &o), 0);
    uint64_t first = s_put(s, rec, len, &res);
    cr_assert_eq(first, 0);
    store_batch *b = store_batch_new(4 * (size_t)e.n);
    cr_assert_not_null(b);
    for (int p = 0; p < e.n; p++) {
        cr_assert_eq(store_get_position(s, (uint64_t)p, b), 0);
        cr_assert_eq(b->offsets[1] - b->offsets[0] == 0, e.fast[p], "position %d", p);
        cr_assert_float_eq(b->z[0], s_z(r, &e, p), 0);
        cr_assert_float_eq(b->q[0], s_q(r, &e, p), 0, "position %d", p);
    }
    /* Step 3. A sampled batch over the wire. */
    rng_t rng;
    rng_seed(&rng, 9);
    cr_assert_eq(store_sample(s, &rng, 4 * (size_t)e.n, b), 0);
    cr_assert_eq(b->n, 4 * (size_t)e.n);
    wire_msg m = {0}, d = {0};
    m.kind = WIRE_BATCH_REPLY;
    m.u.batch_reply = (wire_batch_reply){(uint32_t)b->n, b->packed_bytes, b->packed, b->z,
                                         b->offsets, b->actions, b->probs, 0, (uint64_t)e.n, 1,
                                         1, b->q, {0}, "khreibaga"};
    wire_buf wb = {0};
    cr_assert_eq(wire_encode(&m, &wb), 0);
    cr_assert_eq(wire_decode(&d, wb.data, wb.len, 64u << 20), 0);
    const wire_batch_reply *br = &d.u.batch_reply;
    /* Step 4. The trainer's batch: zero rows without a target, z mixed with q. */
    int B = (int)br->n, A = g->action_count;
    size_t P = (size_t)g->planes * g->height * g->width;
    float *x = malloc((size_t)B * P * sizeof *x), *pi = malloc((size_t)B * A * sizeof *pi);
    float *z = malloc((size_t)B * sizeof *z);
    batch_counts cnt = {0};
    int n = batch_fill(g, br, false, 0.25f, &rng, x, pi, z, B, &cnt);
    cr_assert_eq(n, B);
    cr_assert_eq(cnt.skipped, 0);
    uint64_t want_empty = 0;
    for (int i = 0; i < B; i++) {
        int p = (int)b->sequences[i];
        double sum = 0;
        for (int a = 0; a < A; a++)
            sum += pi[(size_t)i * A + a];
        want_empty += e.fast[p];
        cr_assert_float_eq(sum, e.fast[p] ? 0.0 : 1.0, 1e-5, "sample %d (position %d)", i, p);
        float zz = s_z(r, &e, p), qq = s_q(r, &e, p);
        cr_assert_float_eq(z[i], 0.75f * zz + 0.25f * qq, 1e-6, "sample %d", i);
    }
    cr_assert_gt(want_empty, 0, "the sample holds states without a policy target");
    cr_assert_eq(cnt.no_policy, want_empty);
    /* q_weight 0: z exactly, as before the setting. */
    n = batch_fill(g, br, false, 0.0f, &rng, x, pi, z, B, &cnt);
    for (int i = 0; i < n; i++)
        cr_assert_eq(z[i], br->z[i]);
    free(x);
    free(pi);
    free(z);
    wire_msg_clear(&d);
    wire_buf_free(&wb);
    store_batch_destroy(&b);
    store_close(&s);
    harness_rm_rf(dir);
    free(dir);
    validator_destroy(&v);
    free(rec);
    record_destroy(&r);
}

Test(targets, records_without_fast_searches_give_the_positions_of_before)
{
    const game_def *g = game_default();
    expect e;
    game_record *r = s_game(g, 31, false, &e);
    uint8_t *rec;
    size_t len;
    cr_assert_eq(record_pack(r, &rec, &len), 0);
    validator *v = validator_new(g, NULL);
    validate_result res;
    cr_assert_eq(validate_record(v, rec, len, 1, &res), VALIDATE_OK, "%s", res.detail);
    cr_assert_eq(res.n_positions, (uint32_t)r->n_moves);
    for (uint32_t p = 0; p < res.n_positions; p++)
        cr_assert_gt(res.offsets[p + 1], res.offsets[p]);
    validator_destroy(&v);
    free(rec);
    record_destroy(&r);
}

/* Worked example: the policy loss of two samples, the second without a
 * target. logits (0, ln 3): softmax (1/4, 3/4); target (0, 1):
 * -ln(3/4) = 0.2876821; the zero row adds 0 and gets no gradient. */
Test(targets, the_policy_loss_ignores_a_zero_target_row)
{
    float logits[4] = {0.0f, logf(3.0f), 2.0f, -1.0f};
    float pi[4] = {0, 1, 0, 0};
    float d[4] = {0};
    double total = layer_policy_loss(d, logits, pi, 1.0f, 2, 2);
    cr_assert_float_eq(total, 0.2876821, 1e-6);
    cr_assert_float_eq(d[0], 0.25f, 1e-6);  /* softmax - target */
    cr_assert_float_eq(d[1], -0.25f, 1e-6);
    cr_assert_eq(d[2], 0.0f);
    cr_assert_eq(d[3], 0.0f);
}

/* The same in a whole network: the loss and gradient of a batch are those
 * of its samples' targets added up, so a zero row contributes nothing:
 * L(pi0, pi1) = L(pi0, 0) + L(0, pi1), and the gradients likewise (minus
 * the value and L2 parts, counted twice). */
Test(targets, a_network_learns_no_policy_from_samples_without_a_target)
{
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 8;
    model *m = model_new(&a, 3);
    cr_assert_not_null(m);
    train_config c;
    train_config_default(&c);
    model_train *t = model_train_new(m, &c, 2);
    cr_assert_not_null(t);
    int A = a.actions;
    size_t X = (size_t)a.in_planes * a.height * a.width;
    float *x = calloc(2 * X, sizeof *x);
    rng_t rng;
    rng_seed(&rng, 4);
    for (size_t i = 0; i < 2 * X; i++)
        x[i] = (float)rng_below(&rng, 2);
    float *both = calloc(2 * (size_t)A, sizeof *both),
          *first = calloc(2 * (size_t)A, sizeof *first);
    float *second = calloc(2 * (size_t)A, sizeof *second), *none = calloc(2 * (size_t)A, 4);
    both[3] = first[3] = 0.5f;
    both[7] = first[7] = 0.5f;
    both[A + 11] = second[A + 11] = 1.0f;
    float z[2] = {1, -1};
    train_losses lb, l1, l2, l0;
    size_t np;
    model_train_compute(t, x, both, z, 2, &lb);
    const float *gr = model_train_grads(t, &np);
    float *gb = malloc(np * sizeof *gb), *g1 = malloc(np * sizeof *g1);
    float *g2 = malloc(np * sizeof *g2), *g0 = malloc(np * sizeof *g0);
    memcpy(gb, gr, np * sizeof *gb);
    model_train_compute(t, x, first, z, 2, &l1);
    memcpy(g1, gr, np * sizeof *g1);
    model_train_compute(t, x, second, z, 2, &l2);
    memcpy(g2, gr, np * sizeof *g2);
    model_train_compute(t, x, none, z, 2, &l0);
    memcpy(g0, gr, np * sizeof *g0);
    cr_assert_float_eq(l0.policy, 0.0, 0, "no targets: no policy loss");
    cr_assert_float_eq(l1.policy + l2.policy, lb.policy, 1e-6);
    cr_assert_gt(l1.policy, 0.0);
    cr_assert_float_eq(l1.value, lb.value, 0, "the value loss keeps every sample");
    double worst = 0;
    for (size_t i = 0; i < np; i++) {
        double diff = fabs((double)g1[i] + g2[i] - g0[i] - gb[i]);
        worst = diff > worst ? diff : worst;
    }
    cr_assert_lt(worst, 1e-4, "gradients not additive: %g", worst);
    free(gb);
    free(g1);
    free(g2);
    free(g0);
    free(x);
    free(both);
    free(first);
    free(second);
    free(none);
    model_train_destroy(&t);
    model_destroy(&m);
}

/* Worked examples of the value target (1 - w) z + w q. */
Test(targets, the_value_target_mixes_z_and_q)
{
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    uint8_t packed[4][GAME_PACKED_BYTES];
    for (int i = 0; i < 4; i++)
        g->pack(&s, packed[i]);
    uint8_t flat[4 * GAME_PACKED_BYTES];
    for (int i = 0; i < 4; i++)
        memcpy(flat + (size_t)i * g->packed_bytes, packed[i], (size_t)g->packed_bytes);
    float zs[4] = {1, -1, 0, 1};
    float qs[4] = {-0.5f, 0.2f, 0.6f, 1};
    uint32_t offsets[5] = {0, 1, 1, 2, 3};
    uint32_t actions[3] = {(uint32_t)(5 * 25 + 10), 100, 200};
    float probs[3] = {1, 1, 1};
    wire_batch_reply br = {4, (uint32_t)g->packed_bytes, flat, zs, offsets, actions, probs,
                           0, 4, 1, 1, qs, {0}, g->name};
    int A = g->action_count;
    size_t P = (size_t)g->planes * g->height * g->width;
    float *x = malloc(4 * P * sizeof *x), *pi = malloc(4 * (size_t)A * sizeof *pi), z[4];
    batch_counts cnt = {0};
    rng_t rng;
    rng_seed(&rng, 1);
    cr_assert_eq(batch_fill(g, &br, false, 0.25f, &rng, x, pi, z, 4, &cnt), 4);
    cr_assert_float_eq(z[0], 0.625f, 1e-6);  /* 0.75 * 1 + 0.25 * -0.5 */
    cr_assert_float_eq(z[1], -0.7f, 1e-6);   /* 0.75 * -1 + 0.25 * 0.2 */
    cr_assert_float_eq(z[2], 0.15f, 1e-6);   /* 0.75 * 0 + 0.25 * 0.6 */
    cr_assert_float_eq(z[3], 1.0f, 1e-6);    /* q = z (not searched): z */
    cr_assert_eq(cnt.no_policy, 1);
    cr_assert_eq(batch_fill(g, &br, false, 1.0f, &rng, x, pi, z, 4, &cnt), 4);
    cr_assert_float_eq(z[0], -0.5f, 1e-6);   /* w = 1: q alone */
    /* An older coordinator sends no q: z whatever the weight. */
    br.q = NULL;
    cr_assert_eq(batch_fill(g, &br, false, 0.5f, &rng, x, pi, z, 4, &cnt), 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(z[i], zs[i]);
    /* A q outside [-1, 1] is refused like a bad z. */
    qs[1] = 1.5f;
    br.q = qs;
    uint64_t skipped = cnt.skipped;
    cr_assert_eq(batch_fill(g, &br, false, 0.5f, &rng, x, pi, z, 4, &cnt), 3);
    cr_assert_eq(cnt.skipped, skipped + 1);
    free(x);
    free(pi);
}

/* Counts of a set of records: full and fast searches among the searched
 * (non-forced) states. */
typedef struct pcr_count {
    long full, fast, forced, moves, games; /* states by kind, all states, games */
} pcr_count;

static void s_count(pcr_count *c, const game_record *r)
{
    c->games++;
    for (int k = 0; k < r->n_moves; k++) {
        const record_move *m = &r->moves[k];
        c->moves++;
        if (m->forced)
            c->forced++;
        else if (m->fast_search)
            c->fast++;
        else
            c->full++;
        cr_assert(!(m->forced && m->fast_search));
    }
}

static int s_on_selfplay(void *ctx, const game_record *r)
{
    const game_def *g = game_default();
    char err[256];
    cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r->settings.fast_simulations, 4);
    s_count(ctx, r);
    return 0;
}

/* Self-play (kz selfplay) with a full search on a quarter of the moves:
 * about a quarter of the searched states are full searches. */
Test(targets, selfplay_draws_full_searches_in_the_given_share)
{
    const game_def *g = game_default();
    selfplay_config cfg = {.search = mcts_settings_default(), .games = 24, .parallel = 8,
                           .seed = 5, .pcr_full_fraction = 0.25, .pcr_fast_simulations = 4};
    cfg.search.simulations = 16;
    char err[200];
    selfplay *sp = selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err);
    cr_assert_not_null(sp, "%s", err);
    pcr_count c = {0};
    cr_assert_eq(selfplay_run(sp, s_on_selfplay, &c), 0);
    selfplay_destroy(&sp);
    double share = (double)c.full / (double)(c.full + c.fast);
    /* n searched states ~ 24 games * 15; sd of the share about 0.025. */
    cr_assert_gt(c.full + c.fast, 150, "%ld searched states", c.full + c.fast);
    cr_assert(share > 0.15 && share < 0.35, "full searches: %ld of %ld (%.3f)", c.full,
              c.full + c.fast, share);
    /* A fast budget needs simulations. */
    cfg.pcr_fast_simulations = 0;
    cr_assert_null(selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err));
}

/* The counts of the self-play games in the store of h (the coordinator
 * stopped), and the positions without a policy target. */
typedef struct store_count {
    pcr_count c;        /* the records */
    long empty;         /* positions with an empty policy */
    uint64_t positions; /* positions stored */
    int fast_sims;      /* settings.fast_simulations seen (the last game's) */
    long others;        /* games other than self-play (rating games) */
    char starts[64][64];/* start positions of the first 64 self-play games */
} store_count;

static int s_on_stored(void *ctx, uint64_t seq, const uint8_t *rec, size_t len)
{
    store_count *sc = ctx;
    game_record *r = record_new();
    char err[256];
    cr_assert_eq(record_unpack(rec, len, r, err, sizeof err), 0, "%s", err);
    (void)seq;
    if (r->kind == RECORD_SELFPLAY && sc->c.games < 64)
        snprintf(sc->starts[sc->c.games], sizeof sc->starts[0], "%s", r->start_position);
    if (r->kind == RECORD_SELFPLAY) { /* (rating games may be stored too) */
        sc->fast_sims = r->settings.fast_simulations;
        s_count(&sc->c, r);
    } else {
        sc->others++;
    }
    record_destroy(&r);
    return 0;
}

static void s_count_store(const harness *h, store_count *sc)
{
    memset(sc, 0, sizeof *sc);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/store", h->dir);
    store *s;
    cr_assert_eq(store_open(&s, dir, NULL), 0);
    cr_assert_eq(store_foreach_game(s, s_on_stored, sc), 0);
    store_stats st;
    store_get_stats(s, &st);
    sc->positions = st.positions_total;
    store_batch *b = store_batch_new(1);
    for (uint64_t p = st.first_position; p < st.positions_total; p++) {
        cr_assert_eq(store_get_position(s, p, b), 0);
        sc->empty += b->offsets[1] == b->offsets[0];
    }
    store_batch_destroy(&b);
    store_close(&s);
}

/* Runs a kz-worker of h for `games` self-play games with extra flags, then
 * stops the coordinator. */
static void s_worker_games(harness *h, int games, const char *const *extra)
{
    char a_end[96], a_sub[96], a_cache[128], a_games[32], log[128];
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h->endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h->pub);
    snprintf(a_cache, sizeof a_cache, "--model_cache_dir=%s/models", h->dir);
    snprintf(a_games, sizeof a_games, "--max_games=%d", games);
    snprintf(log, sizeof log, "%s/worker.log", h->dir);
    const char *args[32] = {a_end, a_sub, a_cache, a_games, "--simulations=8", "--parallel=4",
                            "--timeout_ms=300", "--retries=1", "--heartbeat_ms=100",
                            "--seed=7"};
    int n = 10;
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    pid_t w = harness_spawn("kz-worker", args, log);
    int st;
    cr_assert(harness_wait(w, 90, &st), "the worker did not finish its games (%s)", log);
    cr_assert_eq(harness_exit_code(st), 0, "see %s", log);
    cr_assert_eq(harness_log_num(log, ", rejected "), 0, "games rejected: see %s", log);
    harness_coord_kill(h, SIGTERM);
}

/* A real worker with pcr_full_fraction 0.25: the coordinator accepts its
 * games, whose records hold both kinds of states in about that proportion,
 * and stores a position per state, the fast ones without a policy target. */
Test(targets, a_worker_with_pcr_stores_both_kinds_of_states, .fini = harness_cleanup)
{
    harness h;
    harness_init(&h, "tpcr");
    harness_coord_start(&h, NULL);
    const char *extra[] = {"--pcr_full_fraction=0.25", "--pcr_fast_simulations=2", NULL};
    s_worker_games(&h, 24, extra);
    store_count sc;
    s_count_store(&h, &sc);
    cr_assert_eq(sc.c.games + sc.others, 24);
    cr_assert_gt(sc.c.games, 12, "%ld self-play games", sc.c.games);
    cr_assert_eq(sc.fast_sims, 2);
    double share = (double)sc.c.full / (double)(sc.c.full + sc.c.fast);
    cr_log_info("worker, pcr 0.25: %ld self-play games, %ld full and %ld fast searches (%.3f), "
                "%ld forced", sc.c.games, sc.c.full, sc.c.fast, share, sc.c.forced);
    cr_assert_gt(sc.c.full + sc.c.fast, 120, "%ld searched states", sc.c.full + sc.c.fast);
    cr_assert(share > 0.12 && share < 0.38, "full searches: %ld of %ld (%.3f)", sc.c.full,
              sc.c.full + sc.c.fast, share);
    cr_assert_eq(sc.positions, (uint64_t)sc.c.moves, "a position per state");
    cr_assert_eq(sc.empty, sc.c.fast, "the fast states' positions have no policy target");
    harness_fini(&h);
}

/* The coordinator's selfplay_openings: about that share of the self-play
 * games start from an opening of its book (the same book: book_openings
 * from book_seed, made again here), the others from the initial position. */
Test(targets, selfplay_openings_start_games_from_the_book, .fini = harness_cleanup)
{
    harness h;
    harness_init(&h, "topen");
    const char *flags[] = {"--selfplay_openings=0.5", "--book_openings=20", "--book_seed=5",
                           NULL};
    harness_coord_start(&h, flags);
    s_worker_games(&h, 24, NULL);
    store_count sc;
    s_count_store(&h, &sc);
    const game_def *g = game_default();
    game_state book[20];
    cr_assert_eq(match_openings(g, 20, 0, 5, book), 0);
    char text[20][64];
    for (int k = 0; k < 20; k++)
        g->format_position(&book[k], text[k], sizeof text[k]);
    int from_book = 0, from_start = 0;
    for (long i = 0; i < sc.c.games && i < 64; i++) {
        if (!sc.starts[i][0]) {
            from_start++;
            continue;
        }
        bool found = false;
        for (int k = 0; k < 20 && !found; k++)
            found = !strcmp(sc.starts[i], text[k]);
        cr_assert(found, "game %ld starts from '%s', not a book opening", i, sc.starts[i]);
        from_book++;
    }
    cr_log_info("selfplay_openings 0.5: %d of %ld self-play games from the book", from_book,
                sc.c.games);
    cr_assert_gt(sc.c.games, 12, "%ld self-play games", sc.c.games);
    cr_assert_gt(from_book, 0, "no game from the book");
    cr_assert_gt(from_start, 0, "no game from the initial position");
    harness_fini(&h);
}

/* Each program's --help names the settings of these methods. */
Test(targets, help_names_the_settings)
{
    static const char *const want[][3] = {
        {"kz-coordinator", "--selfplay_openings", NULL},
        {"kz-worker", "--pcr_full_fraction", "--pcr_fast_simulations"},
        {"kz-trainer", "--value_q_weight", NULL},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *args[] = {"--help", NULL};
        proc_output o;
        proc_opts opts = {.merge = true};
        cr_assert_eq(harness_run_bin(want[i][0], args, &opts, &o), 0, "%s --help", want[i][0]);
        for (int k = 1; k < 3 && want[i][k]; k++)
            cr_expect_not_null(strstr(o.out, want[i][k]), "%s --help lacks %s", want[i][0],
                               want[i][k]);
        proc_output_free(&o);
    }
}
