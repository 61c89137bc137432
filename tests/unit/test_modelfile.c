/* Tests of nn/modelfile: save -> load is bit-exact (published and
 * checkpoint forms, several architectures), and every kind of bad file is
 * rejected with the message that names its problem: truncated, corrupted,
 * another game or architecture, an unknown format version, inconsistent
 * contents behind a valid checksum. */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "model.pb-c.h"
#include "nn/modelfile.h"
#include "common/util.h"

/* A temporary directory for one test; removed by s_rmdir. */
static void s_tmpdir(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/kz-modelfile-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void s_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* A trained-looking model: random weights, BN stats, metadata, and (when
 * opt) optimizer state with non-zero slots. */
static model *s_model(const model_arch *a, int opt, uint64_t seed)
{
    model *m = model_new(a, seed);
    cr_assert_not_null(m);
    *model_edit_meta(m) = (model_meta){.version = 42, .parent = 41, .step = 123456789012ull,
                                       .created_ms = 1700000000123ll};
    rng_t r;
    rng_seed(&r, seed + 1);
    for (int i = 0; i < model_tensor_count(m); i++) {
        model_tensor_info ti;
        model_tensor_info_get(m, i, &ti);
        float *v = malloc(ti.size * sizeof *v);
        for (size_t k = 0; k < ti.size; k++)
            v[k] = ti.kind == MODEL_TENSOR_STAT ? (float)(0.5 + rng_uniform(&r))
                                                : (float)rng_normal(&r);
        model_tensor_write(m, i, v);
        if (opt && ti.kind != MODEL_TENSOR_STAT) {
            if (model_optim_kind(m) == MODEL_OPT_NONE)
                cr_assert_eq(model_optim_reset(m, opt, 77), 0);
            for (int s = 0; s < model_optim_slots(m); s++) {
                for (size_t k = 0; k < ti.size; k++)
                    v[k] = (float)(s ? rng_uniform(&r) : rng_normal(&r));
                model_optim_write(m, s, i, v);
            }
        }
        free(v);
    }
    return m;
}

/* Asserts every tensor, slot and metadata field of a and b is identical. */
static void s_assert_same(const model *a, const model *b, bool with_opt)
{
    cr_assert(model_arch_equal(model_get_arch(a), model_get_arch(b)));
    cr_assert_eq(model_get_meta(a)->version, model_get_meta(b)->version);
    cr_assert_eq(model_get_meta(a)->parent, model_get_meta(b)->parent);
    cr_assert_eq(model_get_meta(a)->step, model_get_meta(b)->step);
    cr_assert_eq(model_get_meta(a)->created_ms, model_get_meta(b)->created_ms);
    cr_assert_eq(model_bn_eps(a), model_bn_eps(b));
    cr_assert_eq(model_checksum(a), model_checksum(b));
    cr_assert_eq(model_tensor_count(a), model_tensor_count(b));
    if (with_opt) {
        cr_assert_eq(model_optim_kind(a), model_optim_kind(b));
        cr_assert_eq(model_optim_steps(a), model_optim_steps(b));
    } else {
        cr_assert_eq(model_optim_kind(b), MODEL_OPT_NONE);
    }
    for (int i = 0; i < model_tensor_count(a); i++) {
        model_tensor_info ti, tj;
        model_tensor_info_get(a, i, &ti);
        model_tensor_info_get(b, i, &tj);
        cr_assert_str_eq(ti.name, tj.name);
        cr_assert_eq(ti.size, tj.size);
        float *x = malloc(ti.size * sizeof *x), *y = malloc(ti.size * sizeof *y);
        model_tensor_read(a, i, x);
        model_tensor_read(b, i, y);
        cr_assert(memcmp(x, y, ti.size * sizeof *x) == 0, "tensor %s", ti.name);
        for (int s = 0; with_opt && ti.kind != MODEL_TENSOR_STAT && s < model_optim_slots(a);
             s++) {
            model_optim_read(a, s, i, x);
            model_optim_read(b, s, i, y);
            cr_assert(memcmp(x, y, ti.size * sizeof *x) == 0, "slot %d of %s", s, ti.name);
        }
        free(x), free(y);
    }
}

Test(modelfile, save_load_is_bit_exact)
{
    char dir[64], path[128];
    s_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.kzm", dir);
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    for (int ck = 0; ck < 2; ck++) {
        model *m = s_model(&a, ck ? MODEL_OPT_ADAM : MODEL_OPT_NONE, 5 + ck);
        cr_assert_eq(modelfile_save(m, path, ck), 0);
        model *r = NULL;
        char err[300];
        cr_assert_eq(modelfile_load(path, g, &r, err, sizeof err), 0, "%s", err);
        s_assert_same(m, r, ck);
        /* Encoding is deterministic: the reloaded model writes the same bytes. */
        uint8_t *b1, *b2, *file;
        size_t l1, l2, lf;
        cr_assert_eq(modelfile_encode(m, ck, &b1, &l1), 0);
        cr_assert_eq(modelfile_encode(r, ck, &b2, &l2), 0);
        cr_assert_eq(file_read_all(path, &file, &lf), 0);
        cr_assert(l1 == l2 && l1 == lf && !memcmp(b1, b2, l1) && !memcmp(b1, file, l1));
        free(b1), free(b2), free(file);
        model_destroy(&m);
        model_destroy(&r);
    }
    /* No temporary files are left behind. */
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)))
        files += e->d_name[0] != '.';
    closedir(d);
    cr_assert_eq(files, 1);
    s_rmdir(dir);
}

Test(modelfile, published_blob_has_no_optimizer_state_and_same_checksum)
{
    model_arch a = harness_arch("g", 3, 4, 4, 9, 1, 8, 0);
    model *m = s_model(&a, MODEL_OPT_SGD, 9);
    uint8_t *pub, *ck;
    size_t lp, lc;
    cr_assert_eq(modelfile_to_bytes(m, &pub, &lp), 0);
    cr_assert_eq(modelfile_encode(m, true, &ck, &lc), 0);
    cr_assert(lc > lp + model_arch_param_count(&a) * 4, "checkpoint holds one more slot");
    model *p = NULL, *c = NULL;
    char err[300];
    cr_assert_eq(modelfile_from_bytes(pub, lp, NULL, &p, err, sizeof err), 0, "%s", err);
    cr_assert_eq(modelfile_from_bytes(ck, lc, NULL, &c, err, sizeof err), 0, "%s", err);
    s_assert_same(m, p, false);
    s_assert_same(m, c, true);
    cr_assert_eq(model_optim_kind(c), MODEL_OPT_SGD);
    cr_assert_eq(model_optim_steps(c), 77);
    free(pub), free(ck);
    model_destroy(&m), model_destroy(&p), model_destroy(&c);
}

Test(modelfile, other_architectures_load_and_run)
{
    model_arch cases[3];
    cases[0] = harness_arch("khreibaga", 7, 5, 5, 625, 10, 64, 0);
    cases[1] = harness_arch("khreibaga", 7, 5, 5, 625, 4, 64, 0);
    cases[1].value_hidden = 32;
    cases[2] = harness_arch("draughts", 6, 8, 8, 4096, 2, 32, 0);
    for (int k = 0; k < 3; k++) {
        model *m = model_new(&cases[k], 60 + k);
        uint8_t *buf;
        size_t len;
        cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
        model *r = NULL;
        char err[300];
        const game_def *expect = k < 2 ? game_default() : NULL;
        cr_assert_eq(modelfile_from_bytes(buf, len, expect, &r, err, sizeof err), 0, "%s", err);
        cr_assert(model_arch_equal(model_get_arch(r), &cases[k]));
        int A = cases[k].actions, n = cases[k].in_planes * cases[k].height * cases[k].width;
        float *x = calloc((size_t)2 * n, sizeof *x), *l1 = malloc((size_t)2 * A * sizeof *l1);
        float *l2 = malloc((size_t)2 * A * sizeof *l2), v1[2], v2[2];
        for (int i = 0; i < 2 * n; i += 3)
            x[i] = 1.0f;
        model_eval *e1 = model_eval_new(m, 2), *e2 = model_eval_new(r, 2);
        model_eval_run(e1, x, 2, l1, v1);
        model_eval_run(e2, x, 2, l2, v2);
        cr_assert(memcmp(l1, l2, (size_t)2 * A * sizeof *l1) == 0 && !memcmp(v1, v2, sizeof v1));
        model_eval_destroy(&e1), model_eval_destroy(&e2);
        free(x), free(l1), free(l2), free(buf);
        model_destroy(&m), model_destroy(&r);
    }
}

/* Expects decoding to fail with rc and a message containing `what`. */
static void s_expect_fail(const uint8_t *buf, size_t len, const game_def *g, int rc,
                          const char *what)
{
    model *m = (model *)1;
    char err[400] = "";
    int got = modelfile_from_bytes(buf, len, g, &m, err, sizeof err);
    cr_assert_eq(got, rc, "rc %d (%s), wanted %d for '%s'", got, err, rc, what);
    cr_assert_null(m);
    cr_assert(strstr(err, what), "message '%s' lacks '%s'", err, what);
    cr_assert(!strchr(err, '\n'), "one line");
}

Test(modelfile, truncated_files_are_rejected)
{
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = s_model(&a, MODEL_OPT_ADAM, 3);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_encode(m, true, &buf, &len), 0);
    size_t cuts[] = {0, 5, 8, 20, 31, 32, 33, 100, len / 2, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        s_expect_fail(buf, cuts[i], NULL, KZ_ECORRUPT, "truncated");
    /* Through a file: the message names it. */
    char dir[64], path[128], err[400];
    s_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/short.kzm", dir);
    cr_assert_eq(file_write_atomic(path, buf, len - 10), 0);
    model *r = NULL;
    cr_assert_eq(modelfile_load(path, NULL, &r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, path) && strstr(err, "truncated"), "%s", err);
    cr_assert_null(r);
    snprintf(path, sizeof path, "%s/missing.kzm", dir);
    cr_assert_eq(modelfile_load(path, NULL, &r, err, sizeof err), ENOENT);
    cr_assert(strstr(err, "cannot read") && strstr(err, path), "%s", err);
    cr_assert_neq(modelfile_save(m, "/nonexistent-dir/x.kzm", false), 0);
    s_rmdir(dir);
    free(buf);
    model_destroy(&m);
}

/* A file that never ends, or a huge sparse one, fails at once (its header or
 * its size, before any bulk read), with a clear message; so does a good
 * header announcing more than any model file holds. The test's deadline
 * (harness's, 60 s) is the guard against reading /dev/zero to the end of
 * memory, as before the cap. */
Test(modelfile, dev_zero_and_a_huge_sparse_file_fail_at_once)
{
    char err[400];
    model *r = NULL;
    cr_assert_eq(modelfile_load("/dev/zero", NULL, &r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "/dev/zero") && strstr(err, "not a model file"), "%s", err);
    cr_assert_null(r);
    char dir[64], path[128];
    s_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/huge.kzm", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(truncate(path, 100ll << 30), 0, "a sparse file of 100 GB: %s", strerror(errno));
    cr_assert_eq(modelfile_load(path, NULL, &r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "larger than any model file"), "%s", err);
    /* A real header whose payload length says 100 GB, in a short file. */
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = s_model(&a, MODEL_OPT_ADAM, 3);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    for (int i = 0; i < 8; i++) /* payload length, little-endian: 100 GB */
        buf[16 + i] = (uint8_t)((100ull << 30) >> (8 * i));
    cr_assert_eq(file_write_atomic(path, buf, len), 0);
    cr_assert_eq(modelfile_load(path, NULL, &r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "more than any model file"), "%s", err);
    /* The same cap in util for other files (a worker's model cache). */
    uint8_t *data;
    cr_assert_eq(file_read_max("/dev/zero", 1u << 20, &data, &len), KZ_EFULL);
    cr_assert_eq(truncate(path, 100ll << 30), 0);
    cr_assert_eq(file_read_max(path, MODELFILE_MAX_BYTES, &data, &len), KZ_EFULL);
    /* The programs say so in one line (exit status 2). */
    snprintf(path, sizeof path, "%s/huge.kzm", dir);
    char arg[200], data_dir[200];
    snprintf(arg, sizeof arg, "--initial_model=%s", path);
    snprintf(data_dir, sizeof data_dir, "--data_dir=%s/store", dir);
    const char *const args[] = {arg, data_dir, "--http_port=0", NULL};
    proc_opts po = {.timeout_s = 60};
    proc_output o;
    cr_assert_eq(harness_run_bin("kz-coordinator", args, &po, &o), 2, "%s", o.err);
    cr_assert(strstr(o.err, "initial_model") && strstr(o.err, "larger than any model file"),
              "%s", o.err);
    proc_output_free(&o);
    const char *const zero[] = {"--initial_model=/dev/zero", data_dir, "--http_port=0", NULL};
    cr_assert_eq(harness_run_bin("kz-coordinator", zero, &po, &o), 2, "%s", o.err);
    cr_assert(strstr(o.err, "not a model file"), "%s", o.err);
    proc_output_free(&o);
    s_rmdir(dir);
    free(buf);
    model_destroy(&m);
}

/* A FIFO given as a model or config file (issue 28): refused at once with
 * one line, not a program hung in open() waiting for a writer. */
Test(modelfile, a_fifo_is_refused_not_waited_on)
{
    char dir[] = "/tmp/kz-fifo-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char fifo[100], err[512];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    uint8_t *data;
    size_t len;
    cr_assert_eq(file_read_max(fifo, 1u << 20, &data, &len), KZ_ENOTREG);
    model *r = NULL;
    cr_assert_eq(modelfile_load(fifo, NULL, &r, err, sizeof err), KZ_ENOTREG);
    cr_assert(strstr(err, "not a regular file"), "%s", err);
    char model_arg[200], config_arg[200], data_dir[200];
    snprintf(model_arg, sizeof model_arg, "--initial_model=%s", fifo);
    snprintf(config_arg, sizeof config_arg, "--config=%s", fifo);
    snprintf(data_dir, sizeof data_dir, "--data_dir=%s/store", dir);
    proc_opts po = {.timeout_s = 20};
    proc_output o;
    const char *const as_model[] = {model_arg, data_dir, "--http_port=0", NULL};
    int rc = harness_run_bin("kz-coordinator", as_model, &po, &o);
    cr_assert(rc == 1 || rc == 2, "exit %d: %s", rc, o.err);
    cr_assert(strstr(o.err, "not a regular file"), "%s", o.err);
    proc_output_free(&o);
    const char *const as_config[] = {config_arg, data_dir, "--http_port=0", NULL};
    const char *const progs[] = {"kz-coordinator", "kz-worker", "kz-trainer"};
    for (int i = 0; i < 3; i++) {
        rc = harness_run_bin(progs[i], as_config, &po, &o);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", progs[i], rc, o.err);
        cr_assert(strstr(o.err, "not a regular file"), "%s: %s", progs[i], o.err);
        proc_output_free(&o);
    }
    unlink(fifo);
    s_rmdir(dir);
}

Test(modelfile, corrupted_files_are_rejected)
{
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = s_model(&a, MODEL_OPT_NONE, 4);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    uint8_t *c = malloc(len + 1);
    /* Any flipped bit in the payload: the checksum. */
    size_t spots[] = {32, 40, len / 3, len / 2, len - 1};
    for (size_t i = 0; i < sizeof spots / sizeof spots[0]; i++) {
        memcpy(c, buf, len);
        c[spots[i]] ^= 0x10;
        s_expect_fail(c, len, NULL, KZ_ECORRUPT, "checksum mismatch");
    }
    /* In the header. */
    memcpy(c, buf, len);
    c[1] = 'X';
    s_expect_fail(c, len, NULL, KZ_ECORRUPT, "not a model file");
    s_expect_fail((const uint8_t *)"hello", 5, NULL, KZ_ECORRUPT, "not a model file");
    memcpy(c, buf, len);
    c[12] = 0x80;
    s_expect_fail(c, len, NULL, KZ_ECORRUPT, "unknown header flags");
    memcpy(c, buf, len);
    c[24] ^= 1;
    s_expect_fail(c, len, NULL, KZ_ECORRUPT, "checksum mismatch");
    memcpy(c, buf, len);
    c[len] = 0;
    s_expect_fail(c, len + 1, NULL, KZ_ECORRUPT, "unexpected bytes after the payload");
    free(c);
    free(buf);
    model_destroy(&m);
}

Test(modelfile, unknown_format_version_is_rejected)
{
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = model_new(&a, 1);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    cr_assert_eq(buf[8], 1, "a model without a win/draw/loss head stays format 1");
    buf[8] = MODELFILE_FORMAT + 1;
    s_expect_fail(buf, len, NULL, KZ_EVERSION, "unknown model format version 3");
    buf[8] = 0;
    s_expect_fail(buf, len, NULL, KZ_EVERSION, "unknown model format version 0");
    free(buf);
    model_destroy(&m);
}

Test(modelfile, wdl_head_round_trips_as_format_2)
{
    /* A win/draw/loss value head: format 2, its arch and every value back;
     * the same file headed format 1 is refused (a format 1 file never has
     * that head); the plain model of the same seed keeps format 1. */
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 5);
    a.value_wdl = 1;
    model *m = model_new(&a, 7);
    cr_assert_not_null(m);
    cr_assert_eq(modelfile_format_of(&a), 2);
    int fc2 = model_tensor_find(m, "value.fc2.weight");
    model_tensor_info ti;
    model_tensor_info_get(m, fc2, &ti);
    cr_assert(ti.ndim == 2 && ti.shape[0] == 3 && ti.shape[1] == 5);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    cr_assert_eq(buf[8], 2);
    model *r = NULL;
    char err[300];
    cr_assert_eq(modelfile_from_bytes(buf, len, NULL, &r, err, sizeof err), 0, "%s", err);
    cr_assert(model_arch_equal(model_get_arch(r), &a));
    cr_assert_eq(model_checksum(r), model_checksum(m));
    float x[27], v0[2], v1[2], wdl[6];
    for (int i = 0; i < 27; i++)
        x[i] = (float)(i % 3 == 0);
    model_forward_reference(m, x, 1, NULL, v0);
    model_forward_reference(r, x, 1, NULL, v1);
    cr_assert_eq(v0[0], v1[0]);
    cr_assert_eq(model_forward_reference_wdl(r, x, 1, wdl), 0);
    cr_assert_float_eq(wdl[0] + wdl[1] + wdl[2], 1.0f, 1e-6);
    cr_assert_float_eq(v1[0], wdl[0] - wdl[2], 1e-6);
    buf[8] = 1;
    s_expect_fail(buf, len, NULL, KZ_ECORRUPT, "win/draw/loss value head in a format version 1");
    free(buf);
    model_arch p = a;
    p.value_wdl = 0;
    model *plain = model_new(&p, 7);
    cr_assert_eq(model_forward_reference_wdl(plain, x, 1, wdl), KZ_EINVAL);
    cr_assert_eq(modelfile_to_bytes(plain, &buf, &len), 0);
    cr_assert_eq(buf[8], 1);
    free(buf);
    model_destroy(&plain);
    model_destroy(&r);
    model_destroy(&m);
}

Test(modelfile, kz_model_init_value_wdl)
{
    harness_cli c;
    harness_cli_init(&c, "wdl-cli");
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 --value-wdl w.kzm"), 0,
                 "%s", c.err);
    cr_assert(strstr(c.out, "value wdl"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model info w.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "value hidden 32, value win/draw/loss") ||
                  strstr(c.out, "value win/draw/loss"),
              "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model dump --no-data w.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "\"format\": 2"), "%s", c.out);
    cr_assert(strstr(c.out, "\"value_wdl\": 1"), "%s", c.out);
    cr_assert(strstr(c.out, "\"name\": \"value.fc2.weight\", \"shape\": [3, "), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 p.kzm"), 0, "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "model dump --no-data p.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "\"format\": 1"), "%s", c.out);
    cr_assert(strstr(c.out, "\"value_wdl\": 0"), "%s", c.out);
    harness_cli_fini(&c);
}

/* kz model init with derived planes: Khreibaga's network takes 11 planes
 * (7 + 4 derived), says so in model info and dump; --derived-planes for a
 * game without them is one line and exit 2; --derived-planes-if-any there
 * makes the plain network (make run's KZ_DERIVED_PLANES=auto). */
Test(modelfile, kz_model_init_derived_planes)
{
    harness_cli c;
    harness_cli_init(&c, "derived-cli");
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 --derived-planes d.kzm"),
                 0, "%s", c.err);
    cr_assert(strstr(c.out, "input 11x5x5") && strstr(c.out, "4 derived planes"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model info d.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "7 planes of the game, 4 derived"), "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "model dump --no-data d.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "\"format\": 2") && strstr(c.out, "\"derived_planes\": 4"), "%s",
              c.out);
    cr_assert_eq(harness_cli_kz(&c, "model init --game draughts --derived-planes x.kzm"), 2);
    cr_assert(strstr(c.err, "has no derived input planes"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "model init --game draughts --blocks 1 --filters 8 "
                                    "--derived-planes-if-any y.kzm"), 0, "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "model dump --no-data y.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "\"format\": 1") && strstr(c.out, "\"derived_planes\": 0"), "%s",
              c.out);
    cr_assert_eq(harness_cli_kz(&c, "model init --blocks 1 --filters 8 --derived-planes-if-any "
                                    "z.kzm"), 0, "%s", c.err);
    cr_assert(strstr(c.out, "4 derived planes"), "%s", c.out);
    harness_cli_fini(&c);
}

Test(modelfile, other_game_or_architecture_is_rejected)
{
    const game_def *g = game_default();
    model_arch a = harness_arch("draughts", 7, 5, 5, 625, 1, 4, 0);
    model *m = model_new(&a, 1);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    s_expect_fail(buf, len, g, KZ_EMISMATCH, "the model is for game 'draughts', not");
    model *r = NULL;
    char err[300];
    cr_assert_eq(modelfile_from_bytes(buf, len, NULL, &r, err, sizeof err), 0, "any game");
    model_destroy(&r);
    free(buf);
    model_destroy(&m);
    /* The right name with the wrong shape (an 8x8 board). */
    a = harness_arch(g->name, 7, 8, 8, 4096, 1, 4, 0);
    m = model_new(&a, 2);
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    s_expect_fail(buf, len, g, KZ_EMISMATCH, "architecture mismatch");
    free(buf);
    model_destroy(&m);
}

/* --- Bad contents behind a valid checksum ------------------------------------------------ */

/* Re-frames a (modified) ModelFile with a correct header. Caller frees. */
static uint8_t *s_frame(const Kz__ModelFile *mf, uint32_t flags, size_t *len)
{
    size_t plen = kz__model_file__get_packed_size(mf);
    uint8_t *buf = malloc(MODELFILE_HEADER_BYTES + plen);
    kz__model_file__pack(mf, buf + MODELFILE_HEADER_BYTES);
    memcpy(buf, "KZMODEL", 8);
    uint64_t sum = hash_bytes(buf + MODELFILE_HEADER_BYTES, plen, 0);
    uint32_t fields32[2] = {MODELFILE_FORMAT, flags};
    uint64_t fields64[2] = {plen, sum};
    memcpy(buf + 8, fields32, 8); /* little-endian host */
    memcpy(buf + 16, fields64, 16);
    *len = MODELFILE_HEADER_BYTES + plen;
    return buf;
}

/* The kinds of damage applied to a decoded ModelFile before re-framing. */
enum {
    D_MISSING, D_EXTRA, D_DUP, D_SHAPE, D_COUNT, D_NAN, D_NEGVAR, D_WSUM, D_ARCH, D_EPS,
    D_HUGE, D_FLAG_NO_OPT, D_OPT_MISSING, D_OPT_KIND, D_NOARCH, D_N
};

static void s_damage_case(int kind, const char *what)
{
    model_arch a = harness_arch("g", 3, 3, 3, 9, 1, 4, 0);
    model *m = s_model(&a, MODEL_OPT_ADAM, 8);
    uint8_t *buf;
    size_t len;
    bool ck = kind >= D_OPT_MISSING;
    cr_assert_eq(modelfile_encode(m, ck, &buf, &len), 0);
    Kz__ModelFile *mf =
        kz__model_file__unpack(NULL, len - MODELFILE_HEADER_BYTES, buf + MODELFILE_HEADER_BYTES);
    cr_assert_not_null(mf);
    Kz__Tensor **keep = mf->tensors;
    size_t nkeep = mf->n_tensors;
    Kz__Tensor *extra[64], copy;
    uint32_t shape[4], *shape0 = mf->tensors[0]->shape;
    float saved = 0;
    Kz__ModelArch *arch = mf->arch;
    Kz__OptimizerState *opt = mf->optimizer;
    uint32_t flags = ck ? MODELFILE_FLAG_CHECKPOINT : 0;
    switch (kind) {
    case D_MISSING: mf->n_tensors--; break;
    case D_EXTRA:
    case D_DUP:
        memcpy(extra, mf->tensors, nkeep * sizeof *extra);
        copy = *mf->tensors[0];
        copy.name = kind == D_EXTRA ? "stem.conv.bias" : mf->tensors[0]->name;
        extra[nkeep] = &copy;
        mf->tensors = extra;
        mf->n_tensors++;
        break;
    case D_SHAPE:
        memcpy(shape, mf->tensors[0]->shape, 4 * sizeof *shape);
        shape[0] = 2; /* 2 x 6 x 3 x 3 has as many values as 4 x 3 x 3 x 3 */
        shape[1] = 6;
        mf->tensors[0]->shape = shape;
        break;
    case D_COUNT: mf->tensors[1]->n_data--; break;
    case D_NAN: saved = mf->tensors[2]->data[1], mf->tensors[2]->data[1] = NAN; break;
    case D_NEGVAR: saved = mf->tensors[4]->data[0], mf->tensors[4]->data[0] = -1.0f; break;
    case D_WSUM: mf->weights_checksum ^= 1; break;
    case D_ARCH: arch->filters = 0; break;
    case D_EPS: arch->bn_eps = -1.0f; break;
    case D_HUGE: arch->blocks = 50, arch->filters = 512; break;
    case D_FLAG_NO_OPT: flags = MODELFILE_FLAG_CHECKPOINT; break;
    case D_OPT_MISSING: opt->n_slots--; break;
    case D_OPT_KIND: opt->kind = (Kz__OptimizerKind)7; break;
    case D_NOARCH: mf->arch = NULL; break;
    }
    size_t blen;
    uint8_t *bad = s_frame(mf, flags, &blen);
    s_expect_fail(bad, blen, NULL, KZ_ECORRUPT, what);
    free(bad);
    /* Undo what points outside the unpacked message before freeing it. */
    mf->tensors = keep;
    mf->n_tensors = nkeep;
    mf->arch = arch;
    if (kind == D_NAN)
        mf->tensors[2]->data[1] = saved;
    if (kind == D_NEGVAR)
        mf->tensors[4]->data[0] = saved;
    if (kind == D_SHAPE)
        mf->tensors[0]->shape = shape0;
    if (kind == D_OPT_MISSING)
        opt->n_slots++;
    kz__model_file__free_unpacked(mf, NULL);
    free(buf);
    model_destroy(&m);
}

Test(modelfile, inconsistent_contents_are_rejected)
{
    s_damage_case(D_MISSING, "tensor 'value.fc2.bias' is missing");
    s_damage_case(D_EXTRA, "unexpected tensor 'stem.conv.bias'");
    s_damage_case(D_DUP, "tensor 'stem.conv.weight' appears twice");
    s_damage_case(D_SHAPE, "has shape [2, 6, 3, 3], the architecture needs [4, 3, 3, 3]");
    s_damage_case(D_COUNT, "tensor 'stem.bn.weight' has 3 values, its shape needs 4");
    s_damage_case(D_NAN, "tensor 'stem.bn.bias' holds a non-finite value");
    s_damage_case(D_NEGVAR, "tensor 'stem.bn.running_var' holds a negative value");
    s_damage_case(D_WSUM, "weights checksum mismatch");
    s_damage_case(D_ARCH, "invalid architecture: filters is 0");
    s_damage_case(D_EPS, "invalid batch-norm epsilon");
    s_damage_case(D_HUGE, "the architecture needs 236152696 floats");
    s_damage_case(D_FLAG_NO_OPT, "the checkpoint flag says optimizer state, there is none");
    s_damage_case(D_OPT_MISSING, "optimizer tensor 'adam.v/value.fc2.bias' is missing");
    s_damage_case(D_OPT_KIND, "unknown optimizer kind 7");
    s_damage_case(D_NOARCH, "no architecture");
}

Test(modelfile, derived_planes_round_trip_as_format_2)
{
    /* A network with Khreibaga's derived planes: format 2, the arch back,
     * the same values; headed format 1 it is refused; for a game without
     * derived planes (draughts) the arch does not fit. */
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 8;
    a.value_hidden = 8;
    a.derived_planes = g->derived_planes;
    a.in_planes = g->planes + g->derived_planes;
    model *m = model_new(&a, 9);
    cr_assert_not_null(m);
    cr_assert_eq(modelfile_format_of(&a), 2);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &buf, &len), 0);
    cr_assert_eq(buf[8], 2);
    model *r = NULL;
    char err[300];
    cr_assert_eq(modelfile_from_bytes(buf, len, g, &r, err, sizeof err), 0, "%s", err);
    cr_assert(model_arch_equal(model_get_arch(r), &a));
    cr_assert_eq(model_checksum(r), model_checksum(m));
    game_state s;
    g->init(&s);
    float x[7 * 25], v0, v1;
    g->encode_planes(&s, x);
    model_forward_reference(m, x, 1, NULL, &v0);
    model_forward_reference(r, x, 1, NULL, &v1);
    cr_assert_eq(v0, v1);
    const game_def *dr = game_find("draughts");
    cr_assert_not_null(dr);
    model_destroy(&r);
    cr_assert_neq(modelfile_from_bytes(buf, len, dr, &r, err, sizeof err), 0);
    buf[8] = 1;
    s_expect_fail(buf, len, NULL, KZ_ECORRUPT, "network with derived planes in a format version 1");
    free(buf);
    model_destroy(&r);
    model_destroy(&m);
}
