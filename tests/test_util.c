/* Tests of common/util, read as its usage example: the one-line error message
 * of a failing call (err_set), parsing numbers, atomic files and the PRNG. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

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
