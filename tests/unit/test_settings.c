/* Tests of the settings groups: each module's rows (mcts_options,
 * selfplay_options, client_options, client_worker_options,
 * gbdt_train_options) against the module's *_default(), which reads their
 * text defaults and may set no row's field over them, and the programs
 * that list those groups (kz-worker, kz-trainer, kz selfplay) showing the
 * module's defaults in --help, except where a program says otherwise on
 * purpose (config_set_default, listed here). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/client.h"
#include "nn/gbdt_train.h"
#include "common/config.h"
#include "tests/harness/harness.h"
#include "search/mcts.h"
#include "play/selfplay.h"

/* Bytes of the field a row writes, for a comparison (strings: up to the NUL). */
static bool s_field_eq(const config_option *o, const void *a, const void *b)
{
    const char *x = (const char *)a + o->offset, *y = (const char *)b + o->offset;
    switch (o->type) {
    case CONFIG_INT: return !memcmp(x, y, sizeof(long));
    case CONFIG_INT32:
    case CONFIG_CHOICE: return !memcmp(x, y, sizeof(int));
    case CONFIG_SIZE: return !memcmp(x, y, sizeof(size_t));
    case CONFIG_DOUBLE: return !memcmp(x, y, sizeof(double));
    case CONFIG_FLOAT: return !memcmp(x, y, sizeof(float));
    case CONFIG_BOOL: return *(const bool *)x == *(const bool *)y;
    case CONFIG_STRING: return !strcmp(x, y);
    default: return false;
    }
}

/* Checks a module's rows against its defaults `def` (a struct of `size`
 * bytes): the text defaults parse to exactly def's values, def's values lie
 * in the rows' ranges (formatted and set back, they are accepted and equal),
 * and every row has a unique snake_case name and a help line. */
static void s_check_module(const char *module, const config_option *rows, size_t n,
                           const void *def, size_t size)
{
    char *parsed = malloc(size), *back = malloc(size);
    memset(parsed, 0xa5, size); /* no row may leave its field as it was */
    char err[256] = "";
    char *argv[] = {"p"};
    cr_assert_eq(config_parse(rows, n, parsed, 1, argv, NULL, 0, NULL, err, sizeof err),
                 CONFIG_OK, "%s: %s", module, err);
    for (size_t i = 0; i < n; i++) {
        const config_option *o = &rows[i];
        cr_expect(o->name && o->help && o->help[0], "%s: row %zu", module, i);
        for (const char *c = o->name; *c; c++)
            cr_expect((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_',
                      "%s: %s is not snake_case", module, o->name);
        for (size_t j = 0; j < i; j++)
            cr_expect(strcmp(o->name, rows[j].name), "%s: %s twice", module, o->name);
        cr_expect(o->offset < size, "%s: %s outside the struct", module, o->name);
        char text[CONFIG_STR_MAX + 8];
        config_format(o, def, text, sizeof text);
        cr_expect(s_field_eq(o, parsed, def), "%s: %s: the table's default '%s' is not %s's %s",
                  module, o->name, o->def ? o->def : "(none)", module, text);
        /* The module's default is inside the row's range. */
        if (o->type == CONFIG_STRING) {
            const char *s = (const char *)def + o->offset;
            snprintf(text, sizeof text, "%s", s);
        }
        memcpy(back, parsed, size);
        cr_expect_eq(config_set(rows, n, back, o->name, text, err, sizeof err), 0,
                     "%s: %s: its own default is refused: %s", module, o->name, err);
        cr_expect(s_field_eq(o, back, def), "%s: %s", module, o->name);
    }
    free(parsed);
    free(back);
}

Test(settings, the_search_s_rows_hold_mcts_settings_default)
{
    mcts_settings def = mcts_settings_default();
    s_check_module("mcts", mcts_options, mcts_options_n, &def, sizeof def);
    char err[200];
    cr_assert_eq(mcts_settings_check(&def, err, sizeof err), 0, "%s", err);
    /* root_mode's names are the enum's values in order. */
    mcts_settings s = def;
    cr_assert_eq(config_set(mcts_options, mcts_options_n, &s, "root_mode", "gumbel", err,
                            sizeof err), 0, "%s", err);
    cr_assert_eq(s.root_mode, MCTS_ROOT_GUMBEL);
    cr_assert_eq(config_set(mcts_options, mcts_options_n, &s, "root_mode", "puct", err,
                            sizeof err), 0, "%s", err);
    cr_assert_eq(s.root_mode, MCTS_ROOT_PUCT);
}

Test(settings, self_play_s_rows_hold_selfplay_config_default)
{
    selfplay_config def = selfplay_config_default();
    s_check_module("selfplay", selfplay_options, selfplay_options_n, &def, sizeof def);
    mcts_settings search = mcts_settings_default();
    for (size_t i = 0; i < mcts_options_n; i++)
        cr_expect(s_field_eq(&mcts_options[i], &def.search, &search),
                  "its search's %s is not the search's default", mcts_options[i].name);
    cr_expect(def.search.tree_nodes == search.tree_nodes &&
              def.search.gumbel_noise == search.gumbel_noise);
}

Test(settings, the_connection_s_rows_hold_client_config_default)
{
    client_config def;
    client_config_default(&def);
    s_check_module("client", client_options, client_options_n, &def, sizeof def);
    s_check_module("client (worker)", client_worker_options, client_worker_options_n, &def,
                   sizeof def);
}

Test(settings, the_trees_training_rows_hold_gbdt_train_config_default)
{
    gbdt_train_config def;
    gbdt_train_config_default(&def);
    s_check_module("gbdt_train", gbdt_train_options, gbdt_train_options_n, &def, sizeof def);
}

/* The default a program's --help shows for `--name`, into buf ("" for
 * "\"\""); false when the row is not there. */
static bool s_help_default(const char *help, const char *name, char *buf, size_t len)
{
    char key[80];
    snprintf(key, sizeof key, "\n  --%s ", name);
    const char *at = strstr(help, key);
    if (!at) { /* kz spells its keys with '-' */
        for (char *c = key; *c; c++)
            *c = *c == '_' ? '-' : *c;
        at = strstr(help, key);
    }
    if (!at)
        return false;
    const char *eol = strchr(at + 1, '\n');
    const char *d = strstr(at, " default ");
    if (!d || (eol && d > eol))
        return false;
    d += 9;
    size_t n = 0;
    while (d[n] && d[n] != '\n' && strncmp(d + n, " [", 2))
        n++;
    snprintf(buf, len, "%.*s", (int)n, d);
    if (!strcmp(buf, "\"\""))
        buf[0] = 0;
    return true;
}

/* Every row of a module's group in a program's --help shows the module's
 * default, except the names in `own` (the program's own row of that name,
 * or its own default for it: each says why in its table). */
static void s_check_program(const char *help, const char *prog, const config_option *rows,
                            size_t n, const void *def, size_t size, const char *const *own)
{
    char *scratch = malloc(size);
    for (size_t i = 0; i < n; i++) {
        const config_option *o = &rows[i];
        bool skip = false;
        for (size_t k = 0; own && own[k]; k++)
            skip |= !strcmp(own[k], o->name);
        if (skip)
            continue;
        char shown[CONFIG_STR_MAX], err[256] = "";
        cr_expect(s_help_default(help, o->name, shown, sizeof shown), "%s --help lacks --%s",
                  prog, o->name);
        memcpy(scratch, def, size);
        cr_expect_eq(config_set(rows, n, scratch, o->name, shown, err, sizeof err), 0,
                     "%s --%s: default '%s': %s", prog, o->name, shown, err);
        cr_expect(s_field_eq(o, scratch, def), "%s --%s shows default '%s', not the module's",
                  prog, o->name, shown);
    }
    free(scratch);
}

static char *s_help_of(const char *prog, const char *sub)
{
    const char *args[] = {sub ? sub : "--help", sub ? "--help" : NULL, NULL};
    proc_output o;
    cr_assert_eq(harness_run_bin(prog, args, NULL, &o), 0, "%s --help: %s", prog, o.err);
    char *help = strdup(o.out);
    proc_output_free(&o);
    return help;
}

Test(settings, the_programs_show_the_modules_defaults)
{
    mcts_settings search = mcts_settings_default();
    selfplay_config play = selfplay_config_default();
    client_config conn;
    client_config_default(&conn);

    char *help = s_help_of("kz-worker", NULL);
    s_check_program(help, "kz-worker", selfplay_options, selfplay_options_n, &play, sizeof play,
                    NULL);
    static const char *const worker_search[] = {"simulations", NULL}; /* 0 = the job's */
    static const char *const worker_conn[] = {"sub_endpoint", NULL};  /* the coordinator's */
    s_check_program(help, "kz-worker", mcts_options, mcts_options_n, &search, sizeof search,
                    worker_search);
    s_check_program(help, "kz-worker", client_options, client_options_n, &conn, sizeof conn,
                    NULL);
    s_check_program(help, "kz-worker", client_worker_options, client_worker_options_n, &conn,
                    sizeof conn, worker_conn);
    char shown[CONFIG_STR_MAX];
    cr_assert(s_help_default(help, "sub_endpoint", shown, sizeof shown));
    cr_expect_str_eq(shown, "tcp://127.0.0.1:5556");
    cr_expect(s_help_default(help, "simulations", shown, sizeof shown));
    cr_expect_str_eq(shown, "0");
    free(help);

    help = s_help_of("kz-trainer", NULL);
    gbdt_train_config trees;
    gbdt_train_config_default(&trees);
    s_check_program(help, "kz-trainer", gbdt_train_options, gbdt_train_options_n, &trees,
                    sizeof trees, NULL);
    static const char *const trainer_conn[] = {"timeout_ms", NULL}; /* longer answers */
    s_check_program(help, "kz-trainer", client_options, client_options_n, &conn, sizeof conn,
                    trainer_conn);
    cr_expect(s_help_default(help, "timeout_ms", shown, sizeof shown));
    cr_expect_str_eq(shown, "5000");
    free(help);

    help = s_help_of("kz", "selfplay");
    s_check_program(help, "kz selfplay", selfplay_options, selfplay_options_n, &play, sizeof play,
                    NULL);
    s_check_program(help, "kz selfplay", mcts_options, mcts_options_n, &search, sizeof search,
                    NULL);
    free(help);
}
