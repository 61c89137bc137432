/* config: defaults, `key = value` files and --flags into a program's
 * settings struct, checked against one table. See config.h. */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

/* Compares keys treating '-' and '_' alike. */
static bool s_key_eq(const char *a, const char *b, size_t blen)
{
    size_t i = 0;
    for (; i < blen && a[i]; i++) {
        char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
        if (x != y)
            return false;
    }
    return i == blen && a[i] == 0;
}

static const config_option *s_find_row(const config_option *t, size_t n, const char *key,
                                       size_t keylen)
{
    for (size_t i = 0; i < n; i++)
        if (s_key_eq(t[i].name, key, keylen))
            return &t[i];
    return NULL;
}

/* The row a key sets, through an alias; *fixed (when not NULL) gets an
 * alias's fixed value ("false" of "reuse_tree=false"), else NULL. An alias
 * naming no row is a bug in the table (checked). */
static const config_option *s_find(const config_option *t, size_t n, const char *key,
                                   size_t keylen, const char **fixed)
{
    if (fixed)
        *fixed = NULL;
    const config_option *o = s_find_row(t, n, key, keylen);
    if (!o || o->type != CONFIG_ALIAS)
        return o;
    const char *eq = strchr(o->def, '=');
    size_t len = eq ? (size_t)(eq - o->def) : strlen(o->def);
    if (fixed && eq)
        *fixed = eq + 1;
    const config_option *target = s_find_row(t, n, o->def, len);
    KZ_CHECK(target && target->type != CONFIG_ALIAS);
    return target;
}

/* The index of `value` among a choice's '|'-separated names, or -1. */
static int s_choice_index(const char *names, const char *value)
{
    size_t vl = strlen(value);
    for (int i = 0;; i++) {
        const char *bar = strchr(names, '|');
        size_t len = bar ? (size_t)(bar - names) : strlen(names);
        if (len == vl && !strncmp(names, value, len))
            return i;
        if (!bar)
            return -1;
        names = bar + 1;
    }
}

/* The i-th name of a choice into buf ("?" when there is none). */
static void s_choice_name(const char *names, int i, char *buf, size_t len)
{
    for (int k = 0; k < i && names; k++) {
        names = strchr(names, '|');
        if (names)
            names++;
    }
    if (!names || i < 0) {
        snprintf(buf, len, "?");
        return;
    }
    const char *bar = strchr(names, '|');
    int n = bar ? (int)(bar - names) : (int)strlen(names);
    snprintf(buf, len, "%.*s", n, names);
}

/* User text (a value, a key, an argument) in a one-line message. */
static const char *s_show(const char *text, size_t n, char *buf, size_t len)
{
    return text_printable(buf, len, text, n);
}
#define SHOW_MAX 80 /* bytes of user text quoted in a message */

/* Whether a word can be a boolean's value ("--flag false"); anything else
 * after a bare boolean flag is the next argument ("--json URL"). */
static bool s_is_bool_word(const char *w)
{
    static const char *words[] = {"true", "false", "yes", "no", "on", "off", "1", "0"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcasecmp(w, words[i]))
            return true;
    return false;
}

/* Sets o's field from value; messages name the setting `name` (the key as
 * the user wrote it: an alias, or '-' for '_'). */
static int s_set(const config_option *o, const char *name, void *out, const char *value,
                 char *err, size_t errlen)
{
    char *field = (char *)out + o->offset;
    char shown[SHOW_MAX];
    s_show(value, strlen(value), shown, sizeof shown);
    switch (o->type) {
    case CONFIG_INT:
    case CONFIG_INT32:
    case CONFIG_SIZE: {
        long v;
        if (parse_long(value, (long)o->min, (long)o->max, &v)) {
            snprintf(err, errlen, "%s: '%s' is not a whole number in [%.0f, %.0f]", name,
                     shown, o->min, o->max);
            return KZ_EINVAL;
        }
        if (o->type == CONFIG_INT32)
            *(int *)field = (int)v; /* the range is within int's (a table's promise) */
        else if (o->type == CONFIG_SIZE)
            *(size_t *)field = (size_t)v; /* the range starts at 0 or above (likewise) */
        else
            *(long *)field = v;
        return 0;
    }
    case CONFIG_DOUBLE:
    case CONFIG_FLOAT: {
        double v;
        if (parse_double(value, o->min, o->max, &v)) {
            snprintf(err, errlen, "%s: '%s' is not a number in [%g, %g]", name, shown,
                     o->min, o->max);
            return KZ_EINVAL;
        }
        if (o->type == CONFIG_FLOAT)
            *(float *)field = (float)v;
        else
            *(double *)field = v;
        return 0;
    }
    case CONFIG_CHOICE: {
        int i = s_choice_index(o->def, value);
        if (i < 0) {
            char names[CONFIG_STR_MAX];
            snprintf(names, sizeof names, "%s", o->def);
            for (char *c = names; *c; c++)
                if (*c == '|')
                    *c = '/';
            snprintf(err, errlen, "%s: '%s' is not one of %s", name, shown, names);
            return KZ_EINVAL;
        }
        *(int *)field = i;
        return 0;
    }
    case CONFIG_BOOL:
        if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcasecmp(value, "on") ||
            !strcmp(value, "1")) {
            *(bool *)field = true;
        } else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") ||
                   !strcasecmp(value, "off") || !strcmp(value, "0")) {
            *(bool *)field = false;
        } else {
            snprintf(err, errlen, "%s: '%s' is not true/false", name, shown);
            return KZ_EINVAL;
        }
        return 0;
    case CONFIG_STRING:
        if (strlen(value) >= CONFIG_STR_MAX) {
            snprintf(err, errlen, "%s: value longer than %d bytes", name, CONFIG_STR_MAX - 1);
            return KZ_EINVAL;
        }
        strcpy(field, value);
        return 0;
    default:
        snprintf(err, errlen, "%s: bad option type", name);
        return KZ_EINVAL;
    }
}

int config_start(const char *prog, const char *usage, const config_option *table, size_t n,
                 void *out, int argc, char **argv, const char **positional,
                 size_t max_positional, size_t *n_positional)
{
    char err[512];
    int rc = config_parse(table, n, out, argc, argv, positional, max_positional, n_positional,
                          err, sizeof err);
    if (rc == CONFIG_HELP) {
        fputs(usage, stdout);
        config_help(table, n, stdout);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 2;
    }
    return -1;
}

int config_set(const config_option *table, size_t n, void *out, const char *key,
               const char *value, char *err, size_t errlen)
{
    const char *fixed;
    const config_option *o = s_find(table, n, key, strlen(key), &fixed);
    char shown[SHOW_MAX];
    if (!o) {
        snprintf(err, errlen, "unknown setting '%s' (see --help)",
                 s_show(key, strlen(key), shown, sizeof shown));
        return KZ_EINVAL;
    }
    if (fixed) {
        snprintf(err, errlen, "%s: a flag without a value (say %s = %s)",
                 s_show(key, strlen(key), shown, sizeof shown), o->name, fixed);
        return KZ_EINVAL;
    }
    return s_set(o, s_show(key, strlen(key), shown, sizeof shown), out, value, err, errlen);
}

/* Trims spaces at both ends in place; returns the start. */
static char *s_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        s[--len] = 0;
    return s;
}

int config_read_file(const config_option *table, size_t n, void *out, const char *path,
                     char *err, size_t errlen)
{
    char shown[256];
    s_show(path, strlen(path), shown, sizeof shown);
    int fd;
    int orc = file_open_read(path, &fd); /* a FIFO would block in open() */
    FILE *f = orc ? NULL : fdopen(fd, "r");
    if (!f) {
        int e = orc ? orc : errno;
        if (!orc)
            close(fd);
        snprintf(err, errlen, "%s: %s", shown, err_str(e));
        return e;
    }
    path = shown; /* only messages name it from here on */
    char line[1024];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            rc = KZ_EINVAL;
            break;
        }
        char *s = s_trim(line);
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            rc = KZ_EINVAL;
            break;
        }
        *eq = 0;
        char *key = s_trim(s), *value = s_trim(eq + 1);
        size_t vl = strlen(value);
        if (vl >= 2 && value[0] == '"' && value[vl - 1] == '"') {
            value[vl - 1] = 0;
            value++;
        }
        char sub[512];
        if (config_set(table, n, out, key, value, sub, sizeof sub)) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, sub);
            rc = KZ_EINVAL;
            break;
        }
    }
    if (rc == 0 && ferror(f)) { /* a directory, an I/O error: not an empty file */
        rc = errno ? errno : KZ_EIO;
        snprintf(err, errlen, "%s: cannot read: %s", path, err_str(rc));
    }
    fclose(f);
    return rc;
}

void config_defaults(const config_option *table, size_t n, void *out)
{
    for (size_t i = 0; i < n; i++) {
        const config_option *o = &table[i];
        if (o->type == CONFIG_ALIAS || !o->def)
            continue;
        char first[CONFIG_STR_MAX]; /* a choice's default: its first name */
        if (o->type == CONFIG_CHOICE)
            s_choice_name(o->def, 0, first, sizeof first);
        char err[256];
        KZ_CHECK(s_set(o, o->name, out, o->type == CONFIG_CHOICE ? first : o->def, err,
                       sizeof err) == 0);
    }
}

int config_parse(const config_option *table, size_t n, void *out, int argc, char **argv,
                 const char **positional, size_t max_positional, size_t *n_positional,
                 char *err, size_t errlen)
{
    if (n_positional)
        *n_positional = 0;
    /* Step 1. Help wins over everything. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return CONFIG_HELP;
    /* Step 2. Defaults; a row without one keeps what the caller put there (a
     * module's *_default()). */
    config_defaults(table, n, out);
    /* Step 3. The file, wherever --config appears. */
    for (int i = 1; i < argc; i++) {
        const char *path = NULL;
        if (!strncmp(argv[i], "--config=", 9))
            path = argv[i] + 9;
        else if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--config needs a file");
                return KZ_EINVAL;
            }
            path = argv[i + 1];
        }
        if (path) {
            int rc = config_read_file(table, n, out, path, err, errlen);
            if (rc)
                return KZ_EINVAL;
        }
    }
    /* Step 4. The flags, in order. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2)) {
            if (!positional || !n_positional || *n_positional >= max_positional) {
                char shown[SHOW_MAX];
                snprintf(err, errlen, "unexpected argument '%s'",
                         s_show(a, strlen(a), shown, sizeof shown));
                return KZ_EINVAL;
            }
            positional[(*n_positional)++] = a;
            continue;
        }
        const char *key = a + 2, *eq = strchr(key, '=');
        size_t keylen = eq ? (size_t)(eq - key) : strlen(key);
        if (s_key_eq("config", key, keylen)) {
            if (!eq)
                i++;
            continue;
        }
        const char *fixed;
        const config_option *o = s_find(table, n, key, keylen, &fixed);
        char shown[SHOW_MAX]; /* the key as given */
        s_show(key, keylen, shown, sizeof shown);
        if (!o) {
            snprintf(err, errlen, "unknown option '--%s' (see --help)", shown);
            return KZ_EINVAL;
        }
        if (fixed && eq) {
            snprintf(err, errlen, "--%s takes no value", shown);
            return KZ_EINVAL;
        }
        const char *value = eq ? eq + 1 : fixed;
        if (!value) {
            if (o->type == CONFIG_BOOL && (i + 1 >= argc || !s_is_bool_word(argv[i + 1]))) {
                value = "true"; /* a bare boolean flag: the next word is not its value */
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                snprintf(err, errlen, "--%s needs a value", shown);
                return KZ_EINVAL;
            }
        }
        if (s_set(o, shown, out, value, err, errlen)) {
            /* Name the flag as it was given: "--seed: '-1' is not ...". */
            size_t len = strlen(err);
            if (errlen > 2 && len + 3 <= errlen) {
                memmove(err + 2, err, len + 1);
                memcpy(err, "--", 2);
            }
            return KZ_EINVAL;
        }
    }
    return CONFIG_OK;
}

static const char *s_type_name(int type)
{
    switch (type) {
    case CONFIG_INT:
    case CONFIG_INT32:
    case CONFIG_SIZE: return "int";
    case CONFIG_DOUBLE:
    case CONFIG_FLOAT: return "real";
    case CONFIG_BOOL: return "bool";
    case CONFIG_CHOICE: return "name";
    default: return "text";
    }
}

/* A key as --help shows it: '_' or, with dashes, '-' between words. */
static const char *s_key(const char *name, bool dashes, char *buf, size_t len)
{
    snprintf(buf, len, "%s", name);
    for (char *c = buf; dashes && *c; c++)
        if (*c == '_')
            *c = '-';
    return buf;
}

static void s_help(const config_option *table, size_t n, const void *cfg, bool dashes, FILE *f)
{
    fprintf(f, "Settings (defaults, then --config=FILE of 'key = value' lines, then "
               "--key=value flags):\n");
    char key[CONFIG_STR_MAX], target[CONFIG_STR_MAX];
    for (size_t i = 0; i < n; i++) {
        const config_option *o = &table[i];
        if (o->type == CONFIG_ALIAS) {
            fprintf(f, "  --%-22s same as --%s\n", s_key(o->name, dashes, key, sizeof key),
                    s_key(o->def, dashes, target, sizeof target));
            continue;
        }
        char range[CONFIG_STR_MAX + 8] = "";
        if (o->type == CONFIG_INT || o->type == CONFIG_INT32 || o->type == CONFIG_SIZE)
            snprintf(range, sizeof range, " [%.0f..%.0f]", o->min, o->max);
        else if (o->type == CONFIG_DOUBLE || o->type == CONFIG_FLOAT)
            snprintf(range, sizeof range, " [%g..%g]", o->min, o->max);
        else if (o->type == CONFIG_CHOICE)
            snprintf(range, sizeof range, " [%s]", o->def);
        char def[CONFIG_STR_MAX + 8] = "(the program's)";
        if (o->type == CONFIG_CHOICE)
            s_choice_name(o->def, 0, def, sizeof def);
        else if (o->def)
            snprintf(def, sizeof def, "%s", o->def[0] ? o->def : "\"\"");
        else if (cfg)
            config_format(o, cfg, def, sizeof def);
        fprintf(f, "  --%-22s %-4s default %s%s\n      %s\n",
                s_key(o->name, dashes, key, sizeof key), s_type_name(o->type), def, range,
                o->help);
    }
}

void config_help(const config_option *table, size_t n, FILE *f)
{
    s_help(table, n, NULL, false, f);
}

void config_help_from(const config_option *table, size_t n, const void *cfg, FILE *f)
{
    s_help(table, n, cfg, false, f);
}

void config_help_dashed(const config_option *table, size_t n, const void *cfg, FILE *f)
{
    s_help(table, n, cfg, true, f);
}

void config_format(const config_option *o, const void *cfg, char *buf, size_t len)
{
    const char *field = (const char *)cfg + o->offset;
    switch (o->type) {
    case CONFIG_INT: snprintf(buf, len, "%ld", *(const long *)field); break;
    case CONFIG_INT32: snprintf(buf, len, "%d", *(const int *)field); break;
    case CONFIG_SIZE: snprintf(buf, len, "%zu", *(const size_t *)field); break;
    case CONFIG_DOUBLE: snprintf(buf, len, "%g", *(const double *)field); break;
    case CONFIG_FLOAT: snprintf(buf, len, "%g", (double)*(const float *)field); break;
    case CONFIG_BOOL: snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false"); break;
    case CONFIG_CHOICE: s_choice_name(o->def, *(const int *)field, buf, len); break;
    case CONFIG_ALIAS: snprintf(buf, len, "(%s)", o->def); break;
    default: snprintf(buf, len, "\"%s\"", field); break;
    }
}

void config_log(const config_option *table, size_t n, const void *cfg)
{
    for (size_t i = 0; i < n; i++) {
        if (table[i].type == CONFIG_ALIAS)
            continue;
        char buf[CONFIG_STR_MAX + 8];
        config_format(&table[i], cfg, buf, sizeof buf);
        log_info("config %s = %s", table[i].name, buf);
    }
}

size_t config_join(config_option *out, size_t max, const config_group *groups, size_t n_groups)
{
    size_t n = 0;
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].n; i++) {
            const config_option *o = &groups[g].rows[i];
            if (s_find_row(out, n, o->name, strlen(o->name)))
                continue; /* the program's own row of that name came first */
            KZ_CHECK(n < max);
            out[n] = *o;
            if (o->type != CONFIG_ALIAS)
                out[n].offset += groups[g].offset;
            n++;
        }
    return n;
}

void config_set_default(config_option *table, size_t n, const char *name, const char *def)
{
    config_option *o = (config_option *)s_find_row(table, n, name, strlen(name));
    KZ_CHECK(o && o->type != CONFIG_ALIAS && o->type != CONFIG_CHOICE);
    o->def = def;
}
