/* Tests of nn/evaluator, read as its usage example: the uniform
 * evaluator, and the network behind the same interface (made from a model or
 * loaded from a model file) giving what the model's own evaluator gives,
 * refusing a batch over its size, and saying why a file does not load. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"

/* A small network for the default game (1 block x 8 filters). */
static model *s_tiny_model(uint64_t seed)
{
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 8;
    model *m = model_new(&a, seed);
    cr_assert_not_null(m);
    model_edit_meta(m)->version = 7;
    return m;
}

/* The planes of the first n states of a game of first legal actions. */
static float *s_planes(const game_def *g, int n)
{
    size_t per = (size_t)g->planes * (size_t)g->height * (size_t)g->width;
    float *x = malloc((size_t)n * per * sizeof *x);
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    for (int i = 0; i < n; i++) {
        g->encode_planes(&s, x + (size_t)i * per);
        if (!g->result(&s).over && g->legal_actions(&s, legal) > 0)
            g->apply(&s, legal[0]);
    }
    return x;
}

Test(evaluator, uniform_gives_zero_logits_and_values_for_any_batch)
{
    const game_def *g = game_default();
    evaluator ev = evaluator_uniform(g);
    cr_assert_eq(ev.max_batch, EVALUATOR_UNLIMITED);
    enum { B = 3 };
    float *x = s_planes(g, B);
    size_t A = (size_t)g->action_count;
    float *logits = malloc((B * A + 1) * sizeof *logits);
    float values[B + 1];
    for (size_t i = 0; i < B * A + 1; i++)
        logits[i] = 5;
    for (int i = 0; i < B + 1; i++)
        values[i] = 5;
    cr_assert_eq(ev.run(ev.ctx, x, B, logits, values), 0);
    for (size_t i = 0; i < B * A; i++)
        cr_assert_eq(logits[i], 0);
    for (int i = 0; i < B; i++)
        cr_assert_eq(values[i], 0);
    cr_assert_eq(logits[B * A], 5, "nothing written past the batch");
    cr_assert_eq(values[B], 5, "nothing written past the batch");
    free(logits);
    free(x);
}

Test(evaluator, the_network_gives_what_its_model_gives)
{
    const game_def *g = game_default();
    model *m = s_tiny_model(3);
    cr_assert_null(evaluator_net_new(m, 0), "a batch of at least one");
    cr_assert_null(evaluator_net_new(NULL, 4));
    evaluator_net *net = evaluator_net_new(m, 4);
    cr_assert_not_null(net);
    cr_assert_eq(evaluator_net_version(net), 7);
    cr_assert_eq(evaluator_net_checksum(net), model_checksum(m));
    evaluator ev = evaluator_net_get(net);
    cr_assert_eq(ev.max_batch, 4);
    enum { B = 4 };
    float *x = s_planes(g, B);
    size_t A = (size_t)g->action_count;
    float *got = malloc(B * A * sizeof *got), *want = malloc(B * A * sizeof *want);
    float gv[B], wv[B];
    model_eval *e = model_eval_new(m, B);
    model_eval_run(e, x, B, want, wv);
    model_destroy(&m); /* the evaluator keeps its own copy of the weights */
    cr_assert_eq(ev.run(ev.ctx, x, B, got, gv), 0);
    cr_assert(!memcmp(got, want, B * A * sizeof *got) && !memcmp(gv, wv, sizeof gv));
    for (int i = 0; i < B; i++)
        cr_assert(gv[i] >= -1 && gv[i] <= 1);
    cr_assert_eq(ev.run(ev.ctx, x, B + 1, got, gv), KZ_EINVAL, "a batch over max_batch");
    model_eval_destroy(&e);
    evaluator_net_destroy(&net);
    cr_assert_null(net);
    evaluator_net_destroy(&net); /* NULL-safe */
    free(got);
    free(want);
    free(x);
}

Test(evaluator, a_model_file_loads_or_says_why_not)
{
    const game_def *g = game_default();
    char *dir = harness_tmpdir("evaluator");
    cr_assert_not_null(dir);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/tiny.kzm", dir);
    model *m = s_tiny_model(5);
    cr_assert_eq(modelfile_save(m, path, false), 0);
    evaluator_net *net = NULL;
    cr_assert_eq(evaluator_net_load(path, g, 2, &net, err, sizeof err), 0, "%s", err);
    cr_assert_eq(evaluator_net_checksum(net), model_checksum(m));
    cr_assert_eq(evaluator_net_version(net), 7);
    evaluator_net_destroy(&net);
    /* A missing file, and a file that is not a model: an error, a one-line
     * reason naming the file, no evaluator. */
    snprintf(path, sizeof path, "%s/missing.kzm", dir);
    cr_assert_eq(evaluator_net_load(path, g, 2, &net, err, sizeof err), ENOENT);
    cr_assert_null(net);
    cr_assert(strstr(err, "missing.kzm") && !strchr(err, '\n'), "%s", err);
    snprintf(path, sizeof path, "%s/junk.kzm", dir);
    cr_assert_eq(harness_write(path, "not a model\n"), 0);
    cr_assert_neq(evaluator_net_load(path, g, 2, &net, err, sizeof err), 0);
    cr_assert_null(net);
    cr_assert(err[0] && !strchr(err, '\n'), "%s", err);
    model_destroy(&m);
    harness_rm_rf(dir);
    free(dir);
}
