/* Regression tests of bugs that the fuzz harnesses (tools/fuzz/, `make fuzz`)
 * and the hostile-input review found: each test replays the input class that
 * broke a module (a value with a line break, a directory given as a file,
 * ...) through the module's real API and asserts the documented behaviour:
 * a one-line error and no crash, leak or silent acceptance. */
#include <criterion/criterion.h>
#include <errno.h>
#include <lmdb.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "games/game.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "data/record.h"
#include "data/store.h"
#include "common/util.h"
#include "data/validate.h"

/* --- config ------------------------------------------------------------------ */

typedef struct fr_config {
    long count;                /* an int */
    double rate;               /* a real */
    bool flag;                 /* a bool */
    char name[CONFIG_STR_MAX]; /* a string */
} fr_config;

static const config_option s_table[] = {
    {"count", CONFIG_INT, "4", 1, 64, offsetof(fr_config, count), "an int"},
    {"rate", CONFIG_DOUBLE, "0.5", 0, 1, offsetof(fr_config, rate), "a real"},
    {"flag", CONFIG_BOOL, "false", 0, 0, offsetof(fr_config, flag), "a bool"},
    {"name", CONFIG_STRING, "x", 0, 0, offsetof(fr_config, name), "a string"},
};
#define N_OPT (sizeof s_table / sizeof s_table[0])

static bool s_one_line(const char *s)
{
    return s[0] && !strchr(s, '\n') && !strchr(s, '\r');
}

/* fuzz_config: a flag value (or key) with a line break in it was echoed
 * verbatim, so the "one-line" error printed as two lines. */
Test(fuzz_regressions, config_error_with_line_break_is_one_line)
{
    fr_config c;
    char err[512];
    char *bad_value[] = {"p", "--count", "90path = \n", NULL};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 3, bad_value, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(s_one_line(err), "[%s]", err);
    cr_assert(strstr(err, "count"), "names the option: %s", err);
    char *bad_key[] = {"p", "--co\nunt=3", NULL};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 2, bad_key, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(s_one_line(err), "[%s]", err);
    char *bad_bool[] = {"p", "--flag=\r\nyes", NULL};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 2, bad_bool, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(s_one_line(err), "[%s]", err);
    char *bad_arg[] = {"p", "stray\nword", NULL};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 2, bad_arg, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(s_one_line(err), "[%s]", err);
    cr_assert_eq(config_set(s_table, N_OPT, &c, "na\nme", "v", err, sizeof err), KZ_EINVAL);
    cr_assert(s_one_line(err), "[%s]", err);
}

/* Review of the config boundary: --config naming a directory opened fine
 * (fopen succeeds on directories), every read then failed, and the loop took
 * that for an empty file: the settings silently stayed at their defaults. */
Test(fuzz_regressions, config_file_that_is_a_directory_is_an_error)
{
    char dir[] = "/tmp/kz-fr-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    fr_config c;
    char err[512] = "";
    cr_assert_neq(config_read_file(s_table, N_OPT, &c, dir, err, sizeof err), 0);
    cr_assert(s_one_line(err) && strstr(err, dir), "[%s]", err);
    char flag[64];
    snprintf(flag, sizeof flag, "--config=%s", dir);
    char *argv[] = {"p", flag, NULL};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 2, argv, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(s_one_line(err), "[%s]", err);
    rmdir(dir);
}

/* --- util ---------------------------------------------------------------------- */

/* Review of the model-file boundary: a directory given as a model file was
 * reported as "input/output error" (file_read_all turned every read error
 * into KZ_EIO); the errno says what is wrong. */
Test(fuzz_regressions, reading_a_directory_as_a_file_says_so)
{
    char dir[] = "/tmp/kz-fr-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    uint8_t *data = (uint8_t *)1;
    size_t len = 7;
    cr_assert_eq(file_read_all(dir, &data, &len), EISDIR);
    cr_assert_null(data);
    cr_assert_eq(len, 0);
    model *m = NULL;
    char err[512] = "";
    cr_assert_neq(modelfile_load(dir, NULL, &m, err, sizeof err), 0);
    cr_assert_null(m);
    cr_assert(strstr(err, "directory") && s_one_line(err), "[%s]", err);
    rmdir(dir);
}

/* Review of the log boundary: log lines quote client ids, record fields and
 * peers' messages; one with a line break forged a second entry in the
 * coordinator's log ("...\n2026-... ERROR ..."). */
Test(fuzz_regressions, a_log_entry_is_one_line_whatever_it_quotes)
{
    char path[] = "/tmp/kz-fr-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    log_init("fr");
    log_set_level(LOG_INFO);
    log_warn("client %s is here", "w1\n2026-01-01T00:00:00.000Z ERROR kz-coordinator[1] forged\r");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    uint8_t *data;
    size_t len;
    cr_assert_eq(file_read_all(path, &data, &len), 0);
    unlink(path);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += data[i] == '\n';
    cr_assert_eq(lines, 1, "%.*s", (int)len, data);
    cr_assert(memmem(data, len, "w1?2026", 7) && memmem(data, len, "forged?", 7));
    free(data);
}

Test(fuzz_regressions, text_printable_cuts_and_masks)
{
    char buf[8];
    cr_assert_str_eq(text_printable(buf, sizeof buf, "ab\ncd", 99), "ab?cd");
    cr_assert_str_eq(text_printable(buf, sizeof buf, "abcdefghij", 99), "abcd...");
    cr_assert_str_eq(text_printable(buf, sizeof buf, "abcdefg", 99), "abcdefg");
    cr_assert_str_eq(text_printable(buf, sizeof buf, "abcdefghij", 3), "abc");
    cr_assert_str_eq(text_printable(buf, sizeof buf, NULL, 3), "");
    cr_assert_str_eq(text_printable(buf, 2, "xyz", 3), "x");
}

/* --- records ------------------------------------------------------------------ */

/* A valid record with `extra` (n bytes of protobuf fields) appended: a
 * field given again overrides (scalars, strings) or merges (messages). */
static uint8_t *s_record_raw(const void *extra, size_t n, size_t *len)
{
    validate_random_opts o = {.model_version = 1, .max_moves = 400};
    uint8_t *buf = NULL;
    for (uint64_t seed = 1; validate_random_record(game_default(), seed, &o, &buf, len); seed++)
        ;
    buf = realloc(buf, *len + n);
    cr_assert_not_null(buf);
    memcpy(buf + *len, extra, n);
    *len += n;
    return buf;
}

/* The same with one string field (protobuf field number `field`) set again. */
static uint8_t *s_record_with(int field, const char *value, size_t *len)
{
    uint8_t f[130];
    size_t n = strlen(value);
    cr_assert_lt(n, 128);
    f[0] = (uint8_t)(field << 3 | 2);
    f[1] = (uint8_t)n;
    memcpy(f + 2, value, n);
    return s_record_raw(f, n + 2, len);
}

/* fuzz_record, fuzz_record_file: a record's end reason or game name with a
 * line break was quoted verbatim in the one-line error of record_unpack,
 * record_validate and the coordinator's validator (whose detail goes back
 * to the worker and into the coordinator's log). */
Test(fuzz_regressions, record_strings_with_line_breaks_give_one_line_errors)
{
    const game_def *g = game_default();
    game_record *r = record_new();
    validator *v = validator_new(g, NULL);
    cr_assert(r && v);
    char err[256];
    validate_result res;
    size_t len;
    uint8_t *buf = s_record_with(10, "no\rpieces\n", &len); /* reason */
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(s_one_line(err) && strstr(err, "end reason"), "[%s]", err);
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_WRONG_RESULT);
    cr_assert(s_one_line(res.detail) && strstr(res.detail, "reason"), "[%s]", res.detail);
    free(buf);
    buf = s_record_with(2, "khreibaga\nforged", &len); /* game */
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_WRONG_GAME);
    cr_assert(s_one_line(res.detail), "[%s]", res.detail);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(record_validate(g, r, err, sizeof err), KZ_EMISMATCH);
    cr_assert(s_one_line(err), "[%s]", err);
    free(buf);
    validator_destroy(&v);
    record_destroy(&r);
}

/* fuzz_record: the coordinator's validator accepted (and stored) self-play
 * records that record_unpack refuses, so `kz store --games` could not read
 * them back: a candidate_player of 18602315, a worker_id over 63 bytes, a
 * NaN in the search settings. */
Test(fuzz_regressions, the_validator_refuses_what_record_unpack_refuses)
{
    validator *v = validator_new(game_default(), NULL);
    game_record *r = record_new();
    cr_assert(v && r);
    validate_result res;
    char err[256];
    size_t len;
    uint8_t *buf = s_record_raw((const uint8_t[]){0x30, 0xcb, 0xb2, 0xef, 0x08}, 5, &len);
    cr_assert_neq(record_unpack(buf, len, r, err, sizeof err), 0);
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_MALFORMED, "%s", res.detail);
    cr_assert(strstr(res.detail, "candidate_player"), "%s", res.detail);
    free(buf);
    char id[80];
    memset(id, 'w', 70);
    id[70] = 0;
    buf = s_record_with(15, id, &len);
    cr_assert_neq(record_unpack(buf, len, r, err, sizeof err), 0);
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_MALFORMED, "%s", res.detail);
    free(buf);
    /* settings { c_puct: NaN } */
    buf = s_record_raw((const uint8_t[]){0x62, 0x05, 0x15, 0x00, 0x00, 0xc0, 0x7f}, 7, &len);
    cr_assert_neq(record_unpack(buf, len, r, err, sizeof err), 0);
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_MALFORMED, "%s", res.detail);
    free(buf);
    /* Unchanged: the plain record passes both. */
    buf = s_record_raw("", 0, &len);
    cr_assert_eq(validate_record(v, buf, len, 1, &res), VALIDATE_OK, "%s", res.detail);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), 0, "%s", err);
    free(buf);
    record_destroy(&r);
    validator_destroy(&v);
}

/* --- model files ---------------------------------------------------------------- */

/* Replaces the first occurrence of `from` in a model file's payload by `to`
 * (same length) and fixes the header's payload checksum. */
static void s_patch_model(uint8_t *buf, size_t len, const char *from, const char *to)
{
    size_t n = strlen(from);
    cr_assert_eq(strlen(to), n);
    uint8_t *at = memmem(buf + MODELFILE_HEADER_BYTES, len - MODELFILE_HEADER_BYTES, from, n);
    cr_assert_not_null(at, "'%s' not in the payload", from);
    memcpy(at, to, n);
    uint64_t sum = hash_bytes(buf + MODELFILE_HEADER_BYTES, len - MODELFILE_HEADER_BYTES, 0);
    for (int i = 0; i < 8; i++)
        buf[24 + i] = (uint8_t)(sum >> (8 * i));
}

/* fuzz_modelfile: a tensor name (or the game name) with a line break was
 * quoted verbatim: "unexpected tensor 'blocks.0.conv1.wei\rht'" printed
 * as two lines; a game name with one loaded. */
Test(fuzz_regressions, model_file_names_with_line_breaks_give_one_line_errors)
{
    const game_def *g = game_default();
    model_arch a;
    model_arch_default(&a, g);
    a.blocks = 1;
    a.filters = 2;
    model *m = model_new(&a, 1);
    cr_assert_not_null(m);
    cr_assert_eq(model_optim_reset(m, MODEL_OPT_ADAM, 3), 0);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(modelfile_encode(m, true, &buf, &len), 0);
    model_destroy(&m);
    const char *cases[][2] = {
        {"stem.conv.weight", "stem.conv.wei\rht"},     /* a tensor */
        {"adam.v/stem.conv.weight", "adam.v/stem.conv.we\nght"}, /* an optimizer slot */
        {"khreibaga", "khre\nbaga"},                  /* the game */
    };
    for (size_t k = 0; k < 3; k++) {
        uint8_t *copy = malloc(len);
        cr_assert_not_null(copy);
        memcpy(copy, buf, len);
        s_patch_model(copy, len, cases[k][0], cases[k][1]);
        for (int expect = 0; expect < 2; expect++) {
            char err[512] = "";
            model *out = NULL;
            cr_assert_eq(modelfile_from_bytes(copy, len, expect ? g : NULL, &out, err, sizeof err),
                         KZ_ECORRUPT, "case %zu: %s", k, err);
            cr_assert_null(out);
            cr_assert(s_one_line(err), "case %zu: [%s]", k, err);
        }
        free(copy);
    }
    free(buf);
}

/* Review of the store boundary: err_str's LMDB range was wrong (-30800 and
 * below, where LMDB has no codes), so every LMDB error - a full map, a
 * corrupt or truncated data file - was reported as "unknown error". */
Test(fuzz_regressions, err_str_names_lmdb_errors)
{
    cr_assert(strstr(err_str(MDB_INVALID), "MDB_INVALID"), "%s", err_str(MDB_INVALID));
    cr_assert(strstr(err_str(MDB_MAP_FULL), "MDB_MAP_FULL"), "%s", err_str(MDB_MAP_FULL));
    cr_assert(strstr(err_str(MDB_KEYEXIST), "MDB_KEYEXIST"));
    cr_assert(strstr(err_str(MDB_BAD_DBI), "MDB_BAD_DBI"));
    cr_assert_str_eq(err_str(KZ_ECORRUPT), "corrupted data");
    cr_assert_str_eq(err_str(ENOSPC), strerror(ENOSPC));
    cr_assert_str_eq(err_str(-5), "unknown error");
}

/* Review of the store boundary: a data.mdb cut short (a bad copy, a full
 * disk) made the first read of a missing page fault: kz-coordinator and
 * `kz store` died of SIGBUS. Now store_open refuses it. */
Test(fuzz_regressions, a_truncated_store_is_refused_not_a_crash)
{
    char dir[] = "/tmp/kz-fr-store-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    store_options o;
    store_options_default(&o);
    o.no_sync = true;
    store *st = NULL;
    cr_assert_eq(store_open(&st, dir, &o), 0);
    /* Enough to span many pages: a few models of 64 KiB. */
    static uint8_t blob[1 << 16];
    memset(blob, 7, sizeof blob);
    for (int i = 0; i < 4; i++) {
        store_model_info info = {.checksum = (uint64_t)i + 1};
        blob[0] = (uint8_t)i;
        cr_assert_eq(store_add_model(st, blob, sizeof blob, &info), 0);
    }
    store_close(&st);
    char path[64];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_gt(sb.st_size, 200000);
    cr_assert_eq(truncate(path, 20000), 0);
    cr_assert_eq(store_open(&st, dir, &o), KZ_ECORRUPT);
    cr_assert_null(st);
    /* Not an LMDB file at all. */
    static uint8_t junk[100000];
    rng_t r;
    rng_seed(&r, 1);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rng_next(&r);
    cr_assert_eq(file_write_atomic(path, junk, sizeof junk), 0);
    int rc = store_open(&st, dir, &o);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(err_str(rc), "MDB_INVALID"), "%s", err_str(rc));
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
