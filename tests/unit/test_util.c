/* Tests of common/util, read as its usage example: the one-line error message
 * of a failing call (err_set), parsing numbers, atomic files, the PRNG and
 * the stop signals of a program's main loop. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* A function in the style of the project: 0, or an error code with a
 * one-line message in err (which may be NULL when the caller does not care). */
static int s_check_port(long port, char *err, size_t errlen)
{
    if (port < 1 || port > 65535)
        return err_set(err, errlen, KZ_EINVAL, "port %ld is out of range 1..65535", port);
    return 0;
}

/* The same with a va_list, as a module's own reporting helper would call it. */
static int s_report(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int s_report(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rc = err_vset(err, errlen, rc, fmt, ap);
    va_end(ap);
    return rc;
}

Test(util, err_set_fills_the_message_and_returns_the_code)
{
    char err[64] = "untouched";
    cr_assert_eq(s_check_port(8080, err, sizeof err), 0);
    cr_assert_str_eq(err, "untouched");
    cr_assert_eq(s_check_port(70000, err, sizeof err), KZ_EINVAL);
    cr_assert_str_eq(err, "port 70000 is out of range 1..65535");
    cr_assert_eq(s_report(err, sizeof err, KZ_ECORRUPT, "%s at byte %d", "bad tag", 7),
                 KZ_ECORRUPT);
    cr_assert_str_eq(err, "bad tag at byte 7");
}

Test(util, err_set_without_a_buffer_only_returns_the_code)
{
    cr_assert_eq(s_check_port(0, NULL, 0), KZ_EINVAL);
    cr_assert_eq(s_check_port(0, NULL, 64), KZ_EINVAL);
    char err[4] = "abc";
    cr_assert_eq(s_check_port(0, err, 0), KZ_EINVAL);
    cr_assert_str_eq(err, "abc", "errlen 0 writes nothing");
    cr_assert_eq(s_report(NULL, 0, ENOENT, "no %s", "file"), ENOENT);
}

Test(util, err_set_cuts_a_long_message_to_fit)
{
    char err[8];
    cr_assert_eq(s_check_port(-1, err, sizeof err), KZ_EINVAL);
    cr_assert_str_eq(err, "port -1");
}

/* A library's own error codes, named by the module that wraps it. */
static const char *s_fake_library_error(int rc)
{
    return rc == -40001 ? "FAKE_ONE: the first fake error" : "FAKE: another fake error";
}

Test(util, err_str_names_a_registered_range)
{
    cr_assert_str_eq(err_str(-40001), "unknown error");
    err_register_range(-40009, -40000, s_fake_library_error);
    err_register_range(-40009, -40000, s_fake_library_error); /* again: no second entry */
    cr_assert_str_eq(err_str(-40001), "FAKE_ONE: the first fake error");
    cr_assert_str_eq(err_str(-40009), "FAKE: another fake error");
    cr_assert_str_eq(err_str(-40010), "unknown error");
    cr_assert_str_eq(err_str(KZ_EINVAL), "invalid input");
    cr_assert_str_eq(err_str(ENOENT), strerror(ENOENT));
}

Test(util, numbers_parse_whole_and_in_range)
{
    long l = -1;
    double d = -1;
    cr_assert_eq(parse_long("42", 0, 100, &l), 0);
    cr_assert_eq(l, 42);
    cr_assert_eq(parse_long("101", 0, 100, &l), KZ_EINVAL, "above the range");
    cr_assert_eq(parse_long("4x", 0, 100, &l), KZ_EINVAL, "trailing text");
    cr_assert_eq(parse_long("", 0, 100, &l), KZ_EINVAL);
    cr_assert_eq(parse_long(NULL, 0, 100, &l), KZ_EINVAL);
    cr_assert_eq(parse_long("99999999999999999999", 0, LONG_MAX, &l), KZ_EINVAL, "overflow");
    cr_assert_eq(l, 42, "a refusal leaves the value alone");
    cr_assert_eq(parse_double("0.25", 0, 1, &d), 0);
    cr_assert_eq(d, 0.25);
    cr_assert_eq(parse_double("nan", 0, 1, &d), KZ_EINVAL, "NaN is in no range");
    cr_assert_eq(parse_double("1.5", 0, 1, &d), KZ_EINVAL);
    cr_assert_eq(parse_double("1e", 0, 10, &d), KZ_EINVAL);
}

Test(util, a_file_written_atomically_reads_back_whole)
{
    char dir[] = "/tmp/kz-util-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/f.bin", dir);
    uint8_t blob[100000];
    for (size_t i = 0; i < sizeof blob; i++)
        blob[i] = (uint8_t)(i * 7);
    cr_assert_eq(file_write_atomic(path, blob, sizeof blob), 0);
    cr_assert_eq(file_write_atomic(path, blob, 10), 0, "replaced, not appended");
    uint8_t *data;
    size_t len;
    cr_assert_eq(file_read_all(path, &data, &len), 0);
    cr_assert_eq(len, 10);
    cr_assert(!memcmp(data, blob, 10));
    free(data);
    cr_assert_eq(file_read_all(dir, &data, &len), EISDIR, "a directory is not a file");
    unlink(path);
    cr_assert_eq(file_read_all(path, &data, &len), ENOENT);
    rmdir(dir);
}

Test(util, the_checksum_and_the_generator_are_fixed_by_their_seeds)
{
    /* Stable across platforms and builds: model files and game ids depend on it. */
    cr_assert_eq(hash_bytes("khreibaga", 9, 0), hash_bytes("khreibaga", 9, 0));
    cr_assert_neq(hash_bytes("khreibaga", 9, 0), hash_bytes("khreibaga", 9, 1));
    cr_assert_neq(hash_bytes("ab", 2, 0), hash_bytes("ba", 2, 0));
    cr_assert_neq(hash_bytes("", 0, 0), hash_bytes("\0", 1, 0), "the length counts");
    rng_t a, b;
    rng_seed(&a, 5);
    rng_seed(&b, 5);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(rng_next(&a), rng_next(&b));
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        uint32_t k = rng_below(&a, 7);
        cr_assert_lt(k, 7);
        seen[k]++;
        double u = rng_uniform(&a);
        cr_assert(u >= 0 && u < 1);
    }
    for (int k = 0; k < 7; k++)
        cr_assert_gt(seen[k], 800, "rng_below(7) hits %d %d times in 7000", k, seen[k]);
}

/* The first SIGTERM sets the flag and the program goes on (to stop cleanly);
 * the second ends it by SIGTERM at once. In a child process: the test's own
 * handlers stay as they are. */
Test(util, the_first_stop_signal_sets_the_flag_and_the_second_ends_the_process)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        static volatile sig_atomic_t stop;
        signal_catch_stop(&stop);
        raise(SIGTERM);
        if (stop != 1)
            _exit(3); /* the first signal did not set the flag */
        raise(SIGPIPE); /* ignored */
        raise(SIGTERM);
        _exit(4); /* the second did not end the process */
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "exit status %d, signal %d",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

Test(util, a_strbuf_grows_past_its_first_block_and_escapes_json)
{
    strbuf b = {0};
    for (int i = 0; i < 500; i++)
        strbuf_printf(&b, "%03d,", i);
    cr_assert_eq(b.len, 2000);
    cr_assert_eq(strlen(b.s), 2000);
    cr_assert(strncmp(b.s + 1996, "499,", 4) == 0);
    strbuf j = {0};
    strbuf_json_str(&j, "a\"b\\c\n\x7f\xc3\xa9zzz", 9);
    cr_assert_str_eq(j.s, "\"a\\\"b\\\\c\\u000a\\u007f\\u00c3\\u00a9\"");
    strbuf_json_str(&j, "ok", SIZE_MAX);
    cr_assert_str_eq(j.s + strlen(j.s) - 4, "\"ok\"");
    free(b.s);
    free(j.s);
}
