/* The fault suite's short version (tools/faults/faults.c, docs/faults.md) against
 * the real programs: a few coordinator SIGKILLs under load, a short
 * partition of the workers, a few trainer SIGKILLs, a full disk, a
 * slow-loris and a flood on the status port, two torn copies of a live store
 * salvaged, a bit flipped in the best model. The suite checks its own
 * ledgers against the store; this test holds it to its exit status and to
 * the counts it prints (no game lost, none stored twice, every resume
 * exact), never to its timings. A scenario the machine cannot run (no
 * root: no namespaces, no mount) must say SKIPPED with its reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

/* The summary line of scenario `name` in the suite's output, or NULL. */
static const char *s_line(const char *out, const char *name, char *buf, size_t len)
{
    const char *s = strstr(out, "faults: summary");
    if (!s)
        return NULL;
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", name);
    const char *at = strstr(s, key);
    if (!at)
        return NULL;
    at += 3;
    size_t n = strcspn(at, "\n");
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), at);
    return buf;
}

Test(faults, short_suite, .fini = harness_cleanup)
{
    char bin[1024];
    harness_bin(bin, sizeof bin, "faults");
    cr_assert(!access(bin, X_OK), "%s is not built", bin);
    char *argv[] = {bin, "--short", NULL};
    proc_opts o = {.merge = true, .timeout_s = 900};
    proc_output out;
    int st = proc_capture(argv, &o, &out);
    cr_assert_eq(st, 0, "faults --short exited with %d:\n%s", st, out.out);
    const char *names[] = {"kills", "partition", "trainer", "disk", "status", "torn-copy",
                           "flipped-model"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char line[1200];
        cr_assert_not_null(s_line(out.out, names[i], line, sizeof line),
                           "no summary line for %s:\n%s", names[i], out.out);
        bool pass = strstr(line, " PASS ") != NULL, skip = strstr(line, " SKIPPED ") != NULL;
        cr_assert(pass || skip, "%s\n%s", line, out.out);
        if (skip) {
            cr_expect(strlen(line) > 30, "a skip without its reason: %s", line);
            fprintf(stderr, "faults: %s\n", line);
            continue;
        }
        /* The counts behind PASS. */
        if (i < 5 && i != 2 && i != 4) {
            cr_expect(strstr(line, ", lost 0;") != NULL, "%s", line);
            cr_expect(strstr(line, "stored twice 0") != NULL, "%s", line);
        }
        if (i == 0)
            cr_expect(strstr(line, "kills 4 (") && strstr(line, "restarts 4 "), "%s", line);
        if (i == 0 || i == 1)
            cr_expect(strstr(line, "workers' games lost 0") != NULL, "%s", line);
        if (i == 1)
            cr_expect(strstr(line, "resumed 2 of 2") != NULL, "%s", line);
        if (i == 2) {
            cr_expect(strstr(line, "kills 3, resumed exactly 3") != NULL, "%s", line);
            cr_expect(strstr(line, "registered twice 0") != NULL, "%s", line);
        }
        if (i == 4) { /* both attacks: every /healthz probe answered */
            const char *a = strstr(line, " answered, 0 failed");
            cr_expect(a && strstr(a + 1, " answered, 0 failed"), "%s", line);
        }
        if (i == 5) { /* both copies refused and salvaged, nothing unlike the store */
            cr_expect(strstr(line, "copies 2 (") != NULL, "%s", line);
            cr_expect(strstr(line, "unlike the store's 0;") != NULL, "%s", line);
            cr_expect(strstr(line, "kz store check passed on 2 of 2 salvaged") != NULL, "%s",
                      line);
        }
        if (i == 6) { /* the fallback shown, and model 1's games after the restart */
            cr_expect(strstr(line, "/status best 1, fallback 2 -> 1, damaged [2]") != NULL,
                      "%s", line);
            cr_expect(strstr(line, "(model 1: 0,") == NULL, "%s", line);
        }
    }
    proc_output_free(&out);
}

Test(faults, bad_settings, .fini = harness_cleanup)
{
    char bin[1024], out[2048];
    harness_bin(bin, sizeof bin, "faults");
    char *argv[] = {bin, "--scenarios=kills,nope", NULL};
    cr_assert_eq(proc_run(argv, out, sizeof out, 30), 2, "%s", out);
    cr_expect(strstr(out, "unknown scenario 'nope'") != NULL, "%s", out);
    char *argv2[] = {bin, "--kills=-1", NULL};
    cr_assert_eq(proc_run(argv2, out, sizeof out, 30), 2, "%s", out);
}
