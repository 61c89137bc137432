/* Tests of common/config: defaults, a `key = value` file, flags overriding
 * the file, and refusal of unknown keys and out-of-range values. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"

typedef struct demo_config {
    long port;                 /* an int */
    double ratio;              /* a real */
    bool verbose;              /* a flag */
    char name[CONFIG_STR_MAX]; /* a string */
} demo_config;

static const config_option s_table[] = {
    {"port", CONFIG_INT, "5555", 1, 65535, offsetof(demo_config, port), "a port"},
    {"ratio", CONFIG_DOUBLE, "0.5", 0, 1, offsetof(demo_config, ratio), "a ratio"},
    {"verbose", CONFIG_BOOL, "false", 0, 0, offsetof(demo_config, verbose), "chatty"},
    {"bind_name", CONFIG_STRING, "127.0.0.1", 0, 0, offsetof(demo_config, name), "a name"},
};
#define N_OPT (sizeof s_table / sizeof s_table[0])

static int s_parse(demo_config *c, int argc, char **argv, char *err)
{
    return config_parse(s_table, N_OPT, c, argc, argv, NULL, 0, NULL, err, 256);
}

Test(config, defaults_file_then_flags)
{
    char dir[] = "/tmp/kz-config-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/c.conf", dir);
    const char *text = "# comment\n\nport = 6000\nbind-name = \"0.0.0.0\"\nratio=0.25\n";
    cr_assert_eq(file_write_atomic(path, text, strlen(text)), 0);

    demo_config c;
    char err[256] = "";
    char *argv0[] = {"p"};
    cr_assert_eq(s_parse(&c, 1, argv0, err), CONFIG_OK, "%s", err);
    cr_assert_eq(c.port, 5555);
    cr_assert_float_eq(c.ratio, 0.5, 0);
    cr_assert(!c.verbose);
    cr_assert_str_eq(c.name, "127.0.0.1");

    char cfg_flag[320];
    snprintf(cfg_flag, sizeof cfg_flag, "--config=%s", path);
    char *argv1[] = {"p", "--port=7000", cfg_flag, "--verbose"};
    cr_assert_eq(s_parse(&c, 4, argv1, err), CONFIG_OK, "%s", err);
    cr_assert_eq(c.port, 7000, "flags override the file wherever --config appears");
    cr_assert_float_eq(c.ratio, 0.25, 0);
    cr_assert(c.verbose);
    cr_assert_str_eq(c.name, "0.0.0.0");

    char *argv2[] = {"p", "--ratio", "1", "--verbose=no"};
    cr_assert_eq(s_parse(&c, 4, argv2, err), CONFIG_OK, "%s", err);
    cr_assert_float_eq(c.ratio, 1.0, 0);
    cr_assert(!c.verbose);
    unlink(path);
    rmdir(dir);
}

Test(config, errors_are_one_line_and_name_the_problem)
{
    demo_config c;
    char err[256];
    char *a1[] = {"p", "--prot=1"};
    cr_assert_eq(s_parse(&c, 2, a1, err), KZ_EINVAL);
    cr_assert(strstr(err, "unknown option '--prot'"), "%s", err);
    char *a2[] = {"p", "--port=70000"};
    cr_assert_eq(s_parse(&c, 2, a2, err), KZ_EINVAL);
    cr_assert(strstr(err, "port") && strstr(err, "65535"), "%s", err);
    char *a3[] = {"p", "--ratio=abc"};
    cr_assert_eq(s_parse(&c, 2, a3, err), KZ_EINVAL);
    char *a4[] = {"p", "--port"};
    cr_assert_eq(s_parse(&c, 2, a4, err), KZ_EINVAL);
    cr_assert(strstr(err, "needs a value"), "%s", err);
    char *a5[] = {"p", "stray"};
    cr_assert_eq(s_parse(&c, 2, a5, err), KZ_EINVAL);
    char *a6[] = {"p", "--config=/nonexistent/kz.conf"};
    cr_assert_eq(s_parse(&c, 2, a6, err), KZ_EINVAL);
    cr_assert(strstr(err, "/nonexistent/kz.conf"), "%s", err);
    cr_assert_null(strchr(err, '\n'));
    char *a7[] = {"p", "--port=1", "--help"};
    cr_assert_eq(s_parse(&c, 3, a7, err), CONFIG_HELP);

    char dir[] = "/tmp/kz-config-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/bad.conf", dir);
    const char *text = "port = 6000\nnonsense = 3\n";
    cr_assert_eq(file_write_atomic(path, text, strlen(text)), 0);
    cr_assert_eq(config_read_file(s_table, N_OPT, &c, path, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, ":2:") && strstr(err, "nonsense"), "%s", err);
    unlink(path);
    rmdir(dir);
}

Test(config, positional_arguments_when_allowed)
{
    demo_config c;
    char err[256];
    const char *pos[2];
    size_t npos;
    char *a[] = {"p", "http://x:1/", "--port=9"};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 3, a, pos, 2, &npos, err, sizeof err),
                 CONFIG_OK, "%s", err);
    cr_assert_eq(npos, 1);
    cr_assert_str_eq(pos[0], "http://x:1/");
    cr_assert_eq(c.port, 9);
}

Test(config, bare_boolean_flag_does_not_swallow_the_next_argument)
{
    demo_config c;
    char err[256];
    const char *pos[2];
    size_t npos;
    /* "--verbose URL": URL is a positional argument, not the flag's value. */
    char *a[] = {"p", "--verbose", "http://x:1/"};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 3, a, pos, 2, &npos, err, sizeof err),
                 CONFIG_OK, "%s", err);
    cr_assert(c.verbose);
    cr_assert_eq(npos, 1);
    cr_assert_str_eq(pos[0], "http://x:1/");
    /* "--verbose false": a boolean word right after the flag is its value. */
    char *b[] = {"p", "--verbose", "false", "--port", "7"};
    cr_assert_eq(config_parse(s_table, N_OPT, &c, 5, b, pos, 2, &npos, err, sizeof err),
                 CONFIG_OK, "%s", err);
    cr_assert(!c.verbose);
    cr_assert_eq(npos, 0);
    cr_assert_eq(c.port, 7);
}

/* A row without a text default keeps what the program put in the field (a
 * module's *_default()), and --help shows that value; flag errors name the
 * flag as given. */
Test(config, rows_without_a_default_keep_the_program_s_value)
{
    static const config_option rows[] = {
        {"port", CONFIG_INT, NULL, 1, 65535, offsetof(demo_config, port), "a port"},
        {"ratio", CONFIG_DOUBLE, "0.5", 0, 1, offsetof(demo_config, ratio), "a ratio"},
    };
    demo_config c = {.port = 4242};
    char err[256];
    char *a0[] = {"p"};
    cr_assert_eq(config_parse(rows, 2, &c, 1, a0, NULL, 0, NULL, err, sizeof err), CONFIG_OK);
    cr_assert_eq(c.port, 4242);
    cr_assert_float_eq(c.ratio, 0.5, 0);
    char *a1[] = {"p", "--port", "99"};
    cr_assert_eq(config_parse(rows, 2, &c, 3, a1, NULL, 0, NULL, err, sizeof err), CONFIG_OK);
    cr_assert_eq(c.port, 99);
    char *a2[] = {"p", "--port=0"};
    cr_assert_eq(config_parse(rows, 2, &c, 2, a2, NULL, 0, NULL, err, sizeof err), KZ_EINVAL);
    cr_assert(!strncmp(err, "--port: '0'", 11), "the flag as given: %s", err);
    char buf[2048] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cr_assert_not_null(f);
    c.port = 4242;
    config_help_from(rows, 2, &c, f);
    fclose(f);
    cr_assert(strstr(buf, "default 4242"), "%s", buf);
    cr_assert(strstr(buf, "default 0.5"), "%s", buf);
}

/* --- a module's own rows, joined into a program's table ------------------------------- */

/* A module's settings in the C types its code uses. */
typedef struct demo_module {
    int count;     /* an int */
    float scale;   /* a float */
    size_t bytes;  /* a size */
    int mode;      /* an enum: 0 fast, 1 exact */
    bool reuse;    /* a flag */
} demo_module;

static const config_option s_module_rows[] = {
    {"count", CONFIG_INT32, "3", 1, 100, offsetof(demo_module, count), "an int"},
    {"scale", CONFIG_FLOAT, "0.25", 0, 2, offsetof(demo_module, scale), "a float"},
    {"bytes", CONFIG_SIZE, "4096", 1, 1e9, offsetof(demo_module, bytes), "a size"},
    {"mode", CONFIG_CHOICE, "fast|exact", 0, 0, offsetof(demo_module, mode), "a choice"},
    {"reuse", CONFIG_BOOL, "true", 0, 0, offsetof(demo_module, reuse), "a flag"},
};

Test(config, defaults_set_the_rows_text_defaults_and_nothing_else)
{
    static const config_option rows[] = {
        {"count", CONFIG_INT32, "3", 1, 100, offsetof(demo_module, count), "an int"},
        {"scale", CONFIG_FLOAT, NULL, 0, 2, offsetof(demo_module, scale), "no text default"},
        {"mode", CONFIG_CHOICE, "fast|exact", 0, 0, offsetof(demo_module, mode), "a choice"},
        {"n", CONFIG_ALIAS, "count", 0, 0, 0, "old spelling"},
    };
    const demo_module before = {.count = 7, .scale = 1.5f, .bytes = 99, .mode = 1, .reuse = true};
    demo_module m = before;
    config_defaults(rows, 4, &m);
    cr_assert_eq(m.count, 3);
    cr_assert_eq(m.mode, 0, "a choice's default is its first name");
    cr_assert_eq(m.scale, 1.5f, "a row without a text default keeps the caller's value");
    cr_assert(m.bytes == 99 && m.reuse, "a field without a row is left as it was");
    /* config_parse without settings starts with the same. */
    demo_module p = before;
    char err[256];
    char *a0[] = {"p"};
    cr_assert_eq(config_parse(rows, 4, &p, 1, a0, NULL, 0, NULL, err, sizeof err), CONFIG_OK,
                 "%s", err);
    cr_assert(p.count == m.count && p.scale == m.scale && p.bytes == m.bytes &&
              p.mode == m.mode && p.reuse == m.reuse);
}

/* A program that embeds the module's struct after its own settings. */
typedef struct demo_program {
    long port;          /* the program's own */
    long count;         /* the program's own meaning of the module's `count` */
    demo_module module; /* the module's settings */
} demo_program;

static const config_option s_program_rows[] = {
    {"port", CONFIG_INT, "5555", 1, 65535, offsetof(demo_program, port), "a port"},
    {"count", CONFIG_INT, "0", 0, 100, offsetof(demo_program, count), "0 = the module's"},
    {"n", CONFIG_ALIAS, "count", 0, 0, 0, "old spelling"},
    {"no_reuse", CONFIG_ALIAS, "reuse=false", 0, 0, 0, "old spelling"},
};

static size_t s_program_table(config_option *rows, size_t max)
{
    config_group groups[] = {
        {s_program_rows, sizeof s_program_rows / sizeof s_program_rows[0], 0},
        {s_module_rows, sizeof s_module_rows / sizeof s_module_rows[0],
         offsetof(demo_program, module)},
    };
    return config_join(rows, max, groups, 2);
}

Test(config, module_rows_write_the_module_s_own_types)
{
    demo_module m;
    memset(&m, 0xa5, sizeof m);
    char err[256];
    char *a0[] = {"p"};
    cr_assert_eq(config_parse(s_module_rows, 5, &m, 1, a0, NULL, 0, NULL, err, sizeof err),
                 CONFIG_OK, "%s", err);
    cr_assert_eq(m.count, 3);
    cr_assert_eq(m.scale, 0.25f);
    cr_assert_eq(m.bytes, 4096);
    cr_assert_eq(m.mode, 0, "a choice's default is its first name");
    cr_assert(m.reuse);
    char *a1[] = {"p", "--count=100", "--scale", "1.5", "--bytes=7", "--mode=exact"};
    cr_assert_eq(config_parse(s_module_rows, 5, &m, 6, a1, NULL, 0, NULL, err, sizeof err),
                 CONFIG_OK, "%s", err);
    cr_assert_eq(m.count, 100);
    cr_assert_eq(m.scale, 1.5f);
    cr_assert_eq(m.bytes, 7);
    cr_assert_eq(m.mode, 1);
    char buf[64];
    config_format(&s_module_rows[3], &m, buf, sizeof buf);
    cr_assert_str_eq(buf, "exact");
    config_format(&s_module_rows[1], &m, buf, sizeof buf);
    cr_assert_str_eq(buf, "1.5");
    char *a2[] = {"p", "--mode=slow"};
    cr_assert_eq(config_parse(s_module_rows, 5, &m, 2, a2, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(strstr(err, "--mode: 'slow' is not one of fast/exact"), "%s", err);
    char *a3[] = {"p", "--count=101"};
    cr_assert_eq(config_parse(s_module_rows, 5, &m, 2, a3, NULL, 0, NULL, err, sizeof err),
                 KZ_EINVAL);
    cr_assert(strstr(err, "[1, 100]"), "%s", err);
}

Test(config, a_program_joins_groups_and_its_own_row_of_a_name_wins)
{
    config_option rows[16];
    size_t n = s_program_table(rows, 16);
    cr_assert_eq(n, 8, "the module's count is left out: the program's came first");
    demo_program p;
    memset(&p, 0, sizeof p);
    char err[256];
    char *a0[] = {"p", "--count=7", "--scale=2"};
    cr_assert_eq(config_parse(rows, n, &p, 3, a0, NULL, 0, NULL, err, sizeof err), CONFIG_OK,
                 "%s", err);
    cr_assert_eq(p.count, 7);
    cr_assert_eq(p.module.count, 0, "no row writes the module's count");
    cr_assert_eq(p.module.scale, 2.0f);
    cr_assert_eq(p.module.bytes, 4096);
    cr_assert_eq(p.port, 5555);
    /* A program's own default for a module's row. */
    config_set_default(rows, n, "bytes", "65536");
    char *a1[] = {"p"};
    cr_assert_eq(config_parse(rows, n, &p, 1, a1, NULL, 0, NULL, err, sizeof err), CONFIG_OK);
    cr_assert_eq(p.module.bytes, 65536);
}

Test(config, aliases_are_other_spellings_and_bare_flags)
{
    config_option rows[16];
    size_t n = s_program_table(rows, 16);
    demo_program p;
    char err[256];
    char *a0[] = {"p", "--n", "9", "--no-reuse"};
    cr_assert_eq(config_parse(rows, n, &p, 4, a0, NULL, 0, NULL, err, sizeof err), CONFIG_OK,
                 "%s", err);
    cr_assert_eq(p.count, 9);
    cr_assert(!p.module.reuse);
    char *a1[] = {"p", "--n=101"};
    cr_assert_eq(config_parse(rows, n, &p, 2, a1, NULL, 0, NULL, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "--n: '101'"), "the error names the flag as given: %s", err);
    char *a2[] = {"p", "--no_reuse=true"};
    cr_assert_eq(config_parse(rows, n, &p, 2, a2, NULL, 0, NULL, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "--no_reuse takes no value"), "%s", err);
    cr_assert_eq(config_set(rows, n, &p, "n", "4", err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.count, 4, "a file may use the other spelling too");
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cr_assert_not_null(f);
    config_help(rows, n, f);
    fclose(f);
    cr_assert(strstr(buf, "--no_reuse") && strstr(buf, "same as --reuse=false"), "%s", buf);
    cr_assert(strstr(buf, "default fast [fast|exact]"), "%s", buf);
}

/* config_start: what a program's main does with config_parse's outcome. */
Test(config, start_goes_on_with_settings_read)
{
    demo_config c;
    char *argv[] = {"p", "--port=6000"};
    cr_assert_eq(config_start("p", "usage: p\n", s_table, N_OPT, &c, 2, argv, NULL, 0, NULL), -1);
    cr_assert_eq(c.port, 6000);
}

Test(config, start_writes_the_usage_and_the_table_on_help, .init = cr_redirect_stdout)
{
    char *want = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&want, &len);
    cr_assert_not_null(f);
    fputs("usage: p [--port=N]\n\n100% a demo\n\n", f);
    config_help(s_table, N_OPT, f);
    fclose(f);
    demo_config c;
    char *argv[] = {"p", "--port=0", "--help"};
    cr_assert_eq(config_start("p", "usage: p [--port=N]\n\n100% a demo\n\n", s_table, N_OPT, &c,
                              3, argv, NULL, 0, NULL),
                 0, "--help wins over a bad value and exits 0");
    fflush(stdout);
    cr_assert_stdout_eq_str(want);
    free(want);
}

Test(config, start_names_the_program_in_a_bad_setting_s_line, .init = cr_redirect_stderr)
{
    demo_config c;
    char err[256] = "";
    char *argv[] = {"p", "--port=0"};
    cr_assert_eq(s_parse(&c, 2, argv, err), KZ_EINVAL);
    char want[300];
    snprintf(want, sizeof want, "kz: demo: %s\n", err);
    cr_assert_eq(config_start("kz: demo", "usage\n", s_table, N_OPT, &c, 2, argv, NULL, 0, NULL),
                 2);
    fflush(stderr);
    cr_assert_stderr_eq_str(want);
}
