/* Tests of `kz model init|info|dump` and `kz eval`, running the real binary
 * (found through KZ_BIN_DIR) and checking its output against the library. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"

static model *s_load(harness_cli *c, const char *name)
{
    char p[128], err[300];
    snprintf(p, sizeof p, "%s/%s", c->dir, name);
    model *m = NULL;
    cr_assert_eq(modelfile_load(p, NULL, &m, err, sizeof err), 0, "%s", err);
    return m;
}

Test(model_cli, init_and_info)
{
    harness_cli c;
    harness_cli_init(&c, "model-cli");
    cr_assert_eq(
        harness_cli_kz(&c, "model init --blocks 2 --filters 16 --seed 5 --version 3 a.kzm"), 0,
        "%s", c.err);
    model *m = s_load(&c, "a.kzm");
    const model_arch *a = model_get_arch(m);
    cr_assert(a->blocks == 2 && a->filters == 16 && a->value_hidden == 64);
    cr_assert_str_eq(a->game, game_default()->name);
    cr_assert_eq(model_get_meta(m)->version, 3);
    char want[64];
    snprintf(want, sizeof want, "checksum %016" PRIx64, model_checksum(m));
    cr_assert(strstr(c.out, want), "%s", c.out);
    /* The same seed gives the same weights; an existing file needs --force. */
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 2 --filters 16 --seed 5 a.kzm"), 2);
    cr_assert(strstr(c.err, "exists"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 2 --filters 16 --seed 5 --force b.kzm"),
                 0);
    model *b = s_load(&c, "b.kzm");
    cr_assert_eq(model_checksum(b), model_checksum(m));
    cr_assert_eq(harness_cli_kz(&c, "model info a.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "2 blocks x 16 filters, input 7x5x5, 625 actions"), "%s", c.out);
    snprintf(want, sizeof want, "%zu trainable", model_arch_param_count(a));
    cr_assert(strstr(c.out, want), "%s", c.out);
    snprintf(want, sizeof want, "checksum:      %016" PRIx64, model_checksum(m));
    cr_assert(strstr(c.out, want), "%s", c.out);
    cr_assert(strstr(c.out, "version:       3 (parent 0)"), "%s", c.out);
    cr_assert(strstr(c.out, "published"), "%s", c.out);
    model_destroy(&m);
    model_destroy(&b);
    harness_cli_fini(&c);
}

/* Reads the "data" array of tensor `name` in a dump into out (n floats);
 * returns how many values it held. */
static size_t s_dump_values(const char *json, const char *name, float *out, size_t n)
{
    char key[160];
    snprintf(key, sizeof key, "{\"name\": \"%s\", \"shape\": [", name);
    const char *p = strstr(json, key);
    cr_assert_not_null(p, "no tensor %s in the dump", name);
    p = strstr(p, "\"data\": [");
    cr_assert_not_null(p);
    p += 9;
    size_t k = 0;
    while (*p != ']') {
        char *end;
        float v = strtof(p, &end);
        cr_assert(end != p, "bad number in %s", name);
        if (k < n)
            out[k] = v;
        k++;
        p = *end == ',' ? end + 1 : end;
    }
    return k;
}

Test(model_cli, dump_round_trips_every_value)
{
    harness_cli c;
    harness_cli_init(&c, "model-cli");
    /* A checkpoint with optimizer state, written through the library. */
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 1;
    a.filters = 8;
    model *m = model_new(&a, 9);
    cr_assert_eq(model_optim_reset(m, MODEL_OPT_SGD, 12), 0);
    float v = 0.125f;
    int vi = model_tensor_find(m, "value.fc2.bias");
    model_optim_write(m, 0, vi, &v);
    char p[128];
    snprintf(p, sizeof p, "%s/ck.kzm", c.dir);
    cr_assert_eq(modelfile_save(m, p, true), 0);
    cr_assert_eq(harness_cli_kz(&c, "model dump ck.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "\"game\": \"khreibaga\""));
    cr_assert(strstr(c.out, "\"blocks\": 1, \"filters\": 8"));
    cr_assert(strstr(c.out, "\"optimizer\": {\"kind\": \"sgd\", \"steps\": 12"));
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        float *want = malloc(ti.size * sizeof *want), *got = malloc(ti.size * sizeof *got);
        model_tensor_read(m, i, want);
        cr_assert_eq(s_dump_values(c.out, ti.name, got, ti.size), ti.size, "%s", ti.name);
        cr_assert(memcmp(want, got, ti.size * sizeof *got) == 0, "%s differs", ti.name);
        free(want), free(got);
    }
    float got;
    cr_assert_eq(s_dump_values(c.out, "sgd.momentum/value.fc2.bias", &got, 1), 1);
    cr_assert_eq(got, 0.125f);
    cr_assert_eq(harness_cli_kz(&c, "model info ck.kzm"), 0);
    cr_assert(strstr(c.out, "checkpoint") && strstr(c.out, "optimizer:     sgd, 12 steps"),
              "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model dump --no-data ck.kzm"), 0);
    cr_assert(!strstr(c.out, "\"data\""));
    cr_assert(strstr(c.out, "{\"name\": \"blocks.0.conv2.weight\", \"shape\": [8, 8, 3, 3]}"));
    model_destroy(&m);
    harness_cli_fini(&c);
}

Test(model_cli, eval_matches_the_library)
{
    harness_cli c;
    harness_cli_init(&c, "model-cli");
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 16 --seed 3 m.kzm"), 0, "%s",
                 c.err);
    model *m = s_load(&c, "m.kzm");
    const game_def *g = game_default();
    /* One legal action from the start, found through the library. */
    game_state s;
    g->init(&s);
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(&s, legal);
    char a1[32];
    g->format_action(legal[n - 1], a1, sizeof a1);
    g->apply(&s, legal[n - 1]);
    n = g->legal_actions(&s, legal);
    char args[128];
    snprintf(args, sizeof args, "eval m.kzm --json %s", a1);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    /* The library's own evaluation of the same position. */
    float planes[7 * 25], logits[625], value;
    g->encode_planes(&s, planes);
    model_eval *e = model_eval_new(m, 1);
    model_eval_run(e, planes, 1, logits, &value);
    const char *vp = strstr(c.out, "\"value\": ");
    cr_assert_not_null(vp, "%s", c.out);
    cr_assert_float_eq(strtod(vp + 9, NULL), value, 2e-6);
    /* Every legal action once, priors summing to 1, sorted, equal to the
     * masked softmax. */
    uint16_t canon[GAME_MAX_LEGAL];
    float probs[GAME_MAX_LEGAL];
    for (int i = 0; i < n; i++)
        canon[i] = (uint16_t)g->canonical_action(&s, legal[i]);
    model_softmax_masked(logits, canon, n, probs);
    double sum = 0, last = 2;
    int count = 0;
    for (const char *p = strstr(c.out, "{\"action\": \""); p;
         p = strstr(p + 1, "{\"action\": \"")) {
        char act[32];
        sscanf(p + 12, "%31[^\"]", act);
        int a;
        cr_assert_eq(g->parse_action(act, &a), 0);
        int k = -1;
        for (int i = 0; i < n; i++)
            k = legal[i] == a ? i : k;
        cr_assert(k >= 0, "%s is not legal", act);
        double prior = strtod(strstr(p, "\"prior\": ") + 9, NULL);
        cr_assert_float_eq(prior, probs[k], 2e-6);
        cr_assert(prior <= last + 1e-9, "sorted best first");
        last = prior;
        sum += prior;
        count++;
    }
    cr_assert_eq(count, n);
    cr_assert_float_eq(sum, 1.0, 1e-4);
    /* The text form names the mover and lists the same count. */
    snprintf(args, sizeof args, "eval m.kzm %s", a1);
    cr_assert_eq(harness_cli_kz(&c, args), 0);
    char want[64];
    snprintf(want, sizeof want, "policy over %d legal action%s:", n, n == 1 ? "" : "s");
    cr_assert(strstr(c.out, want), "%s", c.out);
    model_eval_destroy(&e);
    model_destroy(&m);
    harness_cli_fini(&c);
}

Test(model_cli, bad_input_exits_2_with_one_line)
{
    harness_cli c;
    harness_cli_init(&c, "model-cli");
    cr_assert_eq(harness_cli_kz(&c, "model init m.kzm"), 0);
    /* A corrupted copy. */
    char p[128];
    uint8_t *buf;
    size_t len;
    snprintf(p, sizeof p, "%s/m.kzm", c.dir);
    cr_assert_eq(file_read_all(p, &buf, &len), 0);
    buf[len / 2] ^= 0xff;
    snprintf(p, sizeof p, "%s/bad.kzm", c.dir);
    cr_assert_eq(file_write_atomic(p, buf, len), 0);
    snprintf(p, sizeof p, "%s/short.kzm", c.dir);
    cr_assert_eq(file_write_atomic(p, buf, len / 3), 0);
    free(buf);
    /* A model for another game. */
    model_arch a;
    model_arch_default(&a, game_default());
    snprintf(a.game, sizeof a.game, "draughts");
    a.blocks = 1;
    a.filters = 4;
    model *o = model_new(&a, 1);
    snprintf(p, sizeof p, "%s/other.kzm", c.dir);
    cr_assert_eq(modelfile_save(o, p, false), 0);
    model_destroy(&o);
    struct {
        const char *args, *msg;
    } cases[] = {
        {"eval bad.kzm", "checksum mismatch"},
        {"eval short.kzm", "truncated"},
        {"eval other.kzm", "for game 'draughts'"},
        {"eval missing.kzm", "cannot read model file"},
        {"eval m.kzm 1-2", "illegal"},
        {"eval m.kzm zz", "cannot parse action"},
        {"eval m.kzm --position nonsense", "eval:"},
        {"eval m.kzm --threads 0", "--threads"},
        {"eval m.kzm --frobnicate", "unknown or incomplete option"},
        {"eval", "give a MODEL"},
        {"model info bad.kzm", "checksum mismatch"},
        {"model dump short.kzm", "truncated"},
        {"model info", "exactly one FILE"},
        {"model frob x", "unknown subcommand"},
        {"model", "give a subcommand"},
        {"model init --blocks 999 x.kzm", "--blocks"},
        {"model init --filters abc x.kzm", "--filters"},
        {"model init --seed -3 x.kzm", "--seed"},
        {"model init", "exactly one OUT"},
        {"model init --wat x.kzm", "unknown or incomplete option"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(harness_cli_kz(&c, cases[i].args), 2, "kz %s", cases[i].args);
        cr_assert(strstr(c.err, cases[i].msg), "kz %s: '%s' lacks '%s'", cases[i].args, c.err,
                  cases[i].msg);
        char *nl = strchr(c.err, '\n');
        cr_assert(nl && nl[1] == 0, "kz %s: one line, got '%s'", cases[i].args, c.err);
    }
    /* model info on another game's file is fine: info reads any game. */
    cr_assert_eq(harness_cli_kz(&c, "model info other.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "game:          draughts"));
    harness_cli_fini(&c);
}

Test(model_cli, help)
{
    harness_cli c;
    harness_cli_init(&c, "model-cli");
    const char *cmds[] = {"model --help", "model init --help", "model info --help",
                          "model dump --help", "eval --help", "--help"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cr_assert_eq(harness_cli_kz(&c, cmds[i]), 0, "kz %s", cmds[i]);
        cr_assert(strstr(c.out, "usage") || strstr(c.out, "Commands"), "kz %s", cmds[i]);
    }
    cr_assert(strstr(c.out, "model") && strstr(c.out, "eval"), "kz --help lists them");
    harness_cli_fini(&c);
}
