/* Tests of common/config: defaults, a `key = value` file, flags overriding
 * the file, and refusal of unknown keys and out-of-range values. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "util.h"

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
