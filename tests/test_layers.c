/* Tests of tools/check_layers.sh, the layering check of `make check`: the
 * tree passes, and an include that runs up the table, a library header or
 * string literal outside its owner, and a module in no row are each named
 * with their file and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char *s_tmp; /* this test's directory */

static void s_fini(void)
{
    harness_rm_rf(s_tmp);
    free(s_tmp);
    s_tmp = NULL;
}

static void s_write(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", s_tmp, name);
    cr_assert_eq(harness_write(path, text), 0, "%s", path);
}

/* Runs the check on DOC and DIR (NULL: the repository's); its exit status. */
static int s_check(const char *doc, const char *dir, char *out, size_t cap)
{
    char script[1024];
    snprintf(script, sizeof script, "%s/tools/check_layers.sh", harness_src_dir());
    char *argv[] = {"sh", script, (char *)doc, (char *)dir, NULL};
    if (!doc)
        argv[2] = NULL;
    return proc_run(argv, out, cap, 30);
}

Test(layers, the_tree_keeps_its_layers)
{
    char out[8192];
    int rc = s_check(NULL, NULL, out, sizeof out);
    cr_assert_eq(rc, 0, "check_layers.sh failed (%d):\n%s", rc, out);
}

Test(layers, wrong_way_arrows_are_named, .fini = s_fini)
{
    s_tmp = harness_tmpdir("layers");
    cr_assert_not_null(s_tmp);
    char doc[1024], dir[1024], out[8192];
    snprintf(doc, sizeof doc, "%s/arch.md", s_tmp);
    snprintf(dir, sizeof dir, "%s", s_tmp);
    s_write("arch.md", "# Layers\n\n```layers\nbase\nrules\nsearch\n```\n\n"
                       "```owners\nstore: <lmdb.h>\nrules: \"chess\"\n```\n");
    s_write("base.h", "/* base: nothing below it, \"chess\" in a comment is fine */\n");
    s_write("rules.c", "#include \"rules.h\"\n#include \"base.h\"\nstatic const char *g = "
                       "\"chess\"; /* its own */\n");
    s_write("rules.h", "#include \"base.h\"\n");
    s_write("search.c", "#include <stdio.h>\n#include \"search.h\"\n#include \"rules.h\"\n");
    s_write("search.h", "#include \"rules.h\"\n");
    int rc = s_check(doc, dir, out, sizeof out);
    cr_assert_eq(rc, 0, "a clean tree: (%d)\n%s", rc, out);

    /* An arrow the wrong way, a library outside its owner, a foreign string
     * literal, and a module the table does not know. */
    s_write("base.h", "#include \"search.h\"\n");
    s_write("search.c", "#include <lmdb.h>\n#include \"search.h\"\nconst char *n = \"chess\";\n");
    s_write("extra.c", "#include \"base.h\"\n");
    rc = s_check(doc, dir, out, sizeof out);
    cr_assert_eq(rc, 1, "(%d)\n%s", rc, out);
    cr_assert(strstr(out, "base.h:1: base (row 1: base) includes search.h (row 3: search)"), "%s",
              out);
    cr_assert(strstr(out, "search.c:1: search includes <lmdb.h>, which only store may include"),
              "%s", out);
    cr_assert(strstr(out, "search.c:3: search writes \"chess\", which only rules may"), "%s", out);
    cr_assert(strstr(out, "extra.c: module extra is in no row"), "%s", out);
    cr_assert(strstr(out, "4 violation(s)"), "%s", out);
}
