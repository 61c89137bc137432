/* Tests of tools/check_layers.sh, the layering check of `make check`: the
 * tree passes, and an include that runs up the table (also from an interface
 * to its implementations), into a folder beside its own, a library header or
 * string literal outside its owner, and a header in no row are each named
 * with their file and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/harness/harness.h"

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
    const char *folders[] = {"base", "rules", "search", "store"};
    for (int i = 0; i < 4; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", s_tmp, folders[i]);
        cr_assert_eq(mkdir(path, 0700), 0, "%s", path);
    }
    s_write("arch.md", "# Layers\n\n```layers\nbase\nrules/iface\nrules\nsearch store\n```\n\n"
                       "```owners\nstore/db: <lmdb.h>\nrules: \"chess\"\n```\n");
    s_write("base/base.h", "/* base: nothing below it, \"chess\" in a comment is fine */\n");
    s_write("rules/iface.h", "#include \"base/base.h\"\n");
    s_write("rules/chess.c", "#include \"iface.h\"\n#include \"base/base.h\"\n"
                             "static const char *g = \"chess\"; /* its own */\n");
    s_write("search/search.c",
            "#include <stdio.h>\n#include \"search.h\"\n#include \"rules/iface.h\"\n");
    s_write("search/search.h", "#include \"rules/iface.h\"\n");
    s_write("store/db.c", "#include <lmdb.h>\n#include \"base/base.h\"\n");
    int rc = s_check(doc, dir, out, sizeof out);
    cr_assert_eq(rc, 0, "a clean tree: (%d)\n%s", rc, out);

    /* An arrow up a row, the interface naming its implementation, a wing
     * reaching into the wing beside it, a library outside its owner, a
     * foreign string literal, and a header the table does not know. */
    s_write("base/base.h", "#include \"search/search.h\"\n");
    s_write("rules/iface.h", "#include \"base/base.h\"\n#include \"rules/chess.h\"\n");
    s_write("search/search.c",
            "#include <lmdb.h>\n#include \"search.h\"\nconst char *n = \"chess\";\n"
            "#include \"store/db.h\"\n#include \"misc/x.h\"\n");
    rc = s_check(doc, dir, out, sizeof out);
    cr_assert_eq(rc, 1, "(%d)\n%s", rc, out);
    cr_assert(strstr(out, "base/base.h:1: base/base (row 1: base) includes search/search.h (row 4: "
                          "search store), a row above it"),
              "%s", out);
    cr_assert(strstr(out,
                     "rules/iface.h:2: rules/iface (row 2: rules/iface) includes rules/chess.h "
                     "(row 3: rules), a row above it"),
              "%s", out);
    cr_assert(strstr(out, "search/search.c:1: search/search includes <lmdb.h>, which only store/db "
                          "may include"),
              "%s", out);
    cr_assert(
        strstr(out, "search/search.c:3: search/search writes \"chess\", which only rules may"),
        "%s", out);
    cr_assert(strstr(out,
                     "search/search.c:4: search/search includes store/db.h, a folder beside its "
                     "own in row 4"),
              "%s", out);
    cr_assert(strstr(out, "search/search.c:5: search/search includes misc/x.h, which is in no row"),
              "%s", out);
    cr_assert(strstr(out, "6 violation(s)"), "%s", out);
}
