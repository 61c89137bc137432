/* Regression tests of bugs that the fuzz harnesses (tools/fuzz/, `make fuzz`)
 * and the hostile-input review found: each test replays the input class that
 * broke a module (a value with a line break, a directory given as a file,
 * ...) through the module's real API and asserts the documented behaviour:
 * a one-line error and no crash, leak or silent acceptance. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "util.h"

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
