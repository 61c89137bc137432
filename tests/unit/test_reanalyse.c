/* Tests of the trainer's reanalyse (trainer/reanalyse.c, docs/trainer.md):
 * stored Khreibaga positions searched again by MCTS with a real network give
 * policy targets over the legal actions that replace the stored ones in the
 * trainer's batch (trainer/batch.c), the root value blends into the value
 * target, and with reanalyse off the batch and the trained weights are
 * exactly those of the batch assembly without it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/game.h"
#include "nn/model.h"
#include "net/wire.h"
#include "trainer/trainer.h"

/* Every Criterion .timeout in the runner has one value (tools/check_timeouts.sh). */
TestSuite(reanalyse, .timeout = 600);

#define N 8 /* samples in the test batch */

/* A batch reply of N turn starts and mid-turn states of random Khreibaga
 * games, each with a one-hot stored policy on its last legal action
 * (canonical), z alternating +1 / -1 and q 0. */
typedef struct test_batch {
    uint8_t packed[N * GAME_PACKED_BYTES];
    float z[N], q[N], probs[N];
    uint32_t offsets[N + 1], actions[N];
    int legal[N]; /* legal actions of each */
    wire_batch_reply br;
} test_batch;

static void s_batch(const game_def *g, uint64_t seed, test_batch *t)
{
    memset(t, 0, sizeof *t);
    rng_t rng;
    rng_seed(&rng, seed);
    int i = 0;
    while (i < N) {
        game_state s;
        g->init(&s);
        int plies = 4 + (int)rng_below(&rng, 30);
        uint16_t legal[GAME_MAX_LEGAL];
        for (int p = 0; p < plies && g->result(&s).over == false; p++) {
            int n = g->legal_actions(&s, legal);
            if (n == 0)
                break;
            g->apply(&s, legal[rng_below(&rng, (uint32_t)n)]);
        }
        int n = g->legal_actions(&s, legal);
        if (g->result(&s).over || n < 2)
            continue; /* a position with a choice */
        g->pack(&s, t->packed + (size_t)i * g->packed_bytes);
        t->legal[i] = n;
        t->offsets[i] = (uint32_t)i;
        t->actions[i] = (uint32_t)g->canonical_action(&s, legal[n - 1]);
        t->probs[i] = 1;
        t->z[i] = i % 2 ? -1.0f : 1.0f;
        t->q[i] = 0;
        i++;
    }
    t->offsets[N] = N;
    t->br = (wire_batch_reply){N,       (uint32_t)g->packed_bytes, t->packed, t->z, t->offsets,
                               t->actions, t->probs, 0, N, 1, 1, t->q, {0}, g->name};
}

static model *s_model(const game_def *g, uint64_t seed)
{
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 8;
    model *m = model_new(&a, seed);
    cr_assert_not_null(m);
    return m;
}

Test(reanalyse, a_reanalysed_target_is_a_new_distribution_over_the_legal_actions)
{
    model_set_threads(1);
    const game_def *g = game_default();
    cr_assert_not_null(g->unpack_state, "Khreibaga's positions can be searched again");
    static test_batch tb;
    s_batch(g, 5, &tb);
    model *m = s_model(g, 11);
    reanalyser *r = reanalyser_new(g, N, 4, 32);
    cr_assert_not_null(r);
    batch_reanalysed re = {0};
    re.value_weight = 0.5f;
    /* No network yet: nothing searched. */
    cr_assert_eq(reanalyser_run(r, &tb.br, 4, &re), 0);
    cr_assert_eq(re.n_searched, 0);
    cr_assert_eq(reanalyser_set_model(r, m), 0);
    cr_assert_eq(reanalyser_run(r, &tb.br, 4, &re), 0);
    cr_assert_eq(re.n_searched, 4, "the first 4 of %d", N);
    cr_assert_float_eq(re.value_weight, 0.5f, 0, "the caller's weight is kept");
    size_t A = (size_t)g->action_count;
    for (int i = 0; i < N; i++) {
        if (i >= 4) {
            cr_assert_eq(re.row[i], -1, "sample %d is beyond the share", i);
            continue;
        }
        cr_assert_geq(re.row[i], 0, "sample %d searched", i);
        const float *row = re.pi + (size_t)re.row[i] * A;
        game_state s;
        cr_assert_eq(g->unpack_state(tb.packed + (size_t)i * g->packed_bytes, &s), 0);
        uint8_t legal[GAME_MAX_ACTIONS] = {0};
        uint16_t acts[GAME_MAX_LEGAL];
        int n = g->legal_actions(&s, acts);
        for (int k = 0; k < n; k++)
            legal[g->canonical_action(&s, acts[k])] = 1;
        double sum = 0;
        int support = 0;
        for (size_t a = 0; a < A; a++) {
            cr_assert(row[a] >= 0 && isfinite(row[a]), "sample %d action %zu: %g", i, a,
                      (double)row[a]);
            if (row[a] > 0) {
                cr_assert(legal[a], "sample %d: share %g on illegal action %zu", i,
                          (double)row[a], a);
                support++;
            }
            sum += row[a];
        }
        cr_assert_float_eq(sum, 1.0, 1e-5, "sample %d sums to %g", i, sum);
        cr_assert_gt(support, 1, "sample %d: 32 simulations over %d actions visit several", i,
                     n);
        cr_assert_lt(row[tb.actions[i]], 1.0f, "sample %d: still the stored one-hot", i);
        cr_assert(isfinite(re.v[re.row[i]]) && fabsf(re.v[re.row[i]]) <= 1.0f);
    }
    uint64_t searched, changed;
    reanalyser_counts(r, &searched, &changed);
    cr_assert_eq(searched, 4);
    /* Into the trainer's batch: the fresh rows for the first 4, the stored
     * one-hots for the rest, the value target blended half and half. */
    size_t P = (size_t)g->planes * g->height * g->width;
    float *x = malloc(N * P * sizeof *x), *pi = malloc(N * A * sizeof *pi), z[N];
    batch_counts cnt = {0};
    rng_t rng;
    rng_seed(&rng, 3);
    cr_assert_eq(batch_fill_re(g, &tb.br, false, 0, NULL, &re, &rng, x, pi, z, NULL, N, &cnt),
                 N);
    cr_assert_eq(cnt.reanalysed, 4);
    for (int i = 0; i < N; i++) {
        if (i < 4) {
            cr_assert_eq(memcmp(pi + i * A, re.pi + (size_t)re.row[i] * A, A * sizeof *pi), 0,
                         "sample %d: the fresh target", i);
            cr_assert_float_eq(z[i], 0.5f * tb.z[i] + 0.5f * re.v[re.row[i]], 1e-6);
        } else {
            cr_assert_float_eq(pi[i * A + tb.actions[i]], 1.0f, 0, "sample %d: stored", i);
            cr_assert_eq(z[i], tb.z[i]);
        }
    }
    free(x);
    free(pi);
    reanalyser_destroy(&r);
    cr_assert_null(r);
    model_destroy(&m);
}

Test(reanalyse, off_trains_the_same_weights_bit_for_bit)
{
    /* reanalyse = 0: the trainer hands batch_fill_re no fresh targets (or a
     * run with share 0); the batch, the augmentation's draws and the weights
     * after training steps are those of batch_fill_aux, the assembly of
     * before. */
    model_set_threads(1);
    const game_def *g = game_default();
    static test_batch tb;
    s_batch(g, 7, &tb);
    size_t A = (size_t)g->action_count, P = (size_t)g->planes * g->height * g->width;
    model *m[3];
    model_train *tr[3];
    train_config c;
    train_config_default(&c);
    for (int k = 0; k < 3; k++) {
        m[k] = s_model(g, 21);
        tr[k] = model_train_new(m[k], &c, N);
        cr_assert_not_null(tr[k]);
    }
    reanalyser *r = reanalyser_new(g, N, 4, 16);
    cr_assert_not_null(r);
    cr_assert_eq(reanalyser_set_model(r, m[0]), 0);
    float *x[3], *pi[3], z[3][N];
    rng_t rng[3];
    for (int k = 0; k < 3; k++) {
        x[k] = malloc(N * P * sizeof *x[k]);
        pi[k] = malloc(N * A * sizeof *pi[k]);
        rng_seed(&rng[k], 99);
    }
    for (int step = 0; step < 3; step++) {
        batch_counts cnt[3] = {{0}};
        batch_reanalysed re = {0};
        cr_assert_eq(reanalyser_run(r, &tb.br, 0, &re), 0);
        cr_assert_eq(re.n_searched, 0);
        int n0 = batch_fill_aux(g, &tb.br, true, 0.25f, NULL, &rng[0], x[0], pi[0], z[0], NULL,
                                N, &cnt[0]);
        int n1 = batch_fill_re(g, &tb.br, true, 0.25f, NULL, NULL, &rng[1], x[1], pi[1], z[1],
                               NULL, N, &cnt[1]);
        int n2 = batch_fill_re(g, &tb.br, true, 0.25f, NULL, &re, &rng[2], x[2], pi[2], z[2],
                               NULL, N, &cnt[2]);
        cr_assert(n0 == N && n1 == N && n2 == N);
        for (int k = 1; k < 3; k++) {
            cr_assert_eq(memcmp(x[0], x[k], N * P * sizeof *x[0]), 0, "step %d, %d: x", step, k);
            cr_assert_eq(memcmp(pi[0], pi[k], N * A * sizeof *pi[0]), 0, "pi");
            cr_assert_eq(memcmp(z[0], z[k], sizeof z[0]), 0, "z");
            cr_assert_eq(memcmp(&cnt[0], &cnt[k], sizeof cnt[0]), 0, "counts");
        }
        for (int k = 0; k < 3; k++) {
            train_losses l;
            model_train_step(tr[k], x[k], pi[k], z[k], N, &l);
        }
    }
    cr_assert_eq(model_checksum(m[0]), model_checksum(m[1]));
    cr_assert_eq(model_checksum(m[0]), model_checksum(m[2]));
    /* The augmentation drew from rng alike: the next draw agrees too. */
    cr_assert_eq(rng_next(&rng[0]), rng_next(&rng[2]));
    for (int k = 0; k < 3; k++) {
        free(x[k]);
        free(pi[k]);
        model_train_destroy(&tr[k]);
        model_destroy(&m[k]);
    }
    reanalyser_destroy(&r);
}

Test(reanalyse, refused_for_a_game_without_unpack_state_and_bad_arguments)
{
    const game_def *g = game_default();
    cr_assert_null(reanalyser_new(g, 8, 9, 16), "more searches than samples");
    cr_assert_null(reanalyser_new(g, 8, 0, 16));
    cr_assert_null(reanalyser_new(g, 8, 4, 0));
    for (int i = 0; game_at(i); i++)
        if (!game_at(i)->unpack_state)
            cr_assert_null(reanalyser_new(game_at(i), 8, 4, 16), "%s", game_at(i)->name);
}
