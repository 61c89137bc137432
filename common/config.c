/* config: defaults, `key = value` files and --flags into a program's
 * settings struct, checked against one table. See config.h. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

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

static const config_option *s_find(const config_option *t, size_t n, const char *key,
                                   size_t keylen)
{
    for (size_t i = 0; i < n; i++)
        if (s_key_eq(t[i].name, key, keylen))
            return &t[i];
    return NULL;
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

static int s_set(const config_option *o, void *out, const char *value, char *err, size_t errlen)
{
    char *field = (char *)out + o->offset;
    char shown[SHOW_MAX];
    s_show(value, strlen(value), shown, sizeof shown);
    switch (o->type) {
    case CONFIG_INT: {
        long v;
        if (parse_long(value, (long)o->min, (long)o->max, &v)) {
            snprintf(err, errlen, "%s: '%s' is not a whole number in [%.0f, %.0f]", o->name,
                     shown, o->min, o->max);
            return KZ_EINVAL;
        }
        *(long *)field = v;
        return 0;
    }
    case CONFIG_DOUBLE: {
        double v;
        if (parse_double(value, o->min, o->max, &v)) {
            snprintf(err, errlen, "%s: '%s' is not a number in [%g, %g]", o->name, shown,
                     o->min, o->max);
            return KZ_EINVAL;
        }
        *(double *)field = v;
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
            snprintf(err, errlen, "%s: '%s' is not true/false", o->name, shown);
            return KZ_EINVAL;
        }
        return 0;
    case CONFIG_STRING:
        if (strlen(value) >= CONFIG_STR_MAX) {
            snprintf(err, errlen, "%s: value longer than %d bytes", o->name, CONFIG_STR_MAX - 1);
            return KZ_EINVAL;
        }
        strcpy(field, value);
        return 0;
    default:
        snprintf(err, errlen, "%s: bad option type", o->name);
        return KZ_EINVAL;
    }
}

int config_set(const config_option *table, size_t n, void *out, const char *key,
               const char *value, char *err, size_t errlen)
{
    const config_option *o = s_find(table, n, key, strlen(key));
    if (!o) {
        char shown[SHOW_MAX];
        snprintf(err, errlen, "unknown setting '%s' (see --help)",
                 s_show(key, strlen(key), shown, sizeof shown));
        return KZ_EINVAL;
    }
    return s_set(o, out, value, err, errlen);
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
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", shown, strerror(e));
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
    /* Step 2. Defaults (a bad default is a bug in the table); a row without
     * one keeps what the caller put there (a module's *_default()). */
    for (size_t i = 0; i < n; i++)
        if (table[i].def)
            KZ_CHECK(s_set(&table[i], out, table[i].def, err, errlen) == 0);
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
        const config_option *o = s_find(table, n, key, keylen);
        if (!o) {
            char shown[SHOW_MAX];
            snprintf(err, errlen, "unknown option '--%s' (see --help)",
                     s_show(key, keylen, shown, sizeof shown));
            return KZ_EINVAL;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (o->type == CONFIG_BOOL && (i + 1 >= argc || !s_is_bool_word(argv[i + 1]))) {
                value = "true"; /* a bare boolean flag: the next word is not its value */
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                snprintf(err, errlen, "--%s needs a value", o->name);
                return KZ_EINVAL;
            }
        }
        if (s_set(o, out, value, err, errlen)) {
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
    case CONFIG_INT: return "int";
    case CONFIG_DOUBLE: return "real";
    case CONFIG_BOOL: return "bool";
    default: return "text";
    }
}

void config_help(const config_option *table, size_t n, FILE *f)
{
    config_help_from(table, n, NULL, f);
}

void config_help_from(const config_option *table, size_t n, const void *cfg, FILE *f)
{
    fprintf(f, "Settings (defaults, then --config=FILE of 'key = value' lines, then "
               "--key=value flags):\n");
    for (size_t i = 0; i < n; i++) {
        const config_option *o = &table[i];
        char range[64] = "";
        if (o->type == CONFIG_INT)
            snprintf(range, sizeof range, " [%.0f..%.0f]", o->min, o->max);
        else if (o->type == CONFIG_DOUBLE)
            snprintf(range, sizeof range, " [%g..%g]", o->min, o->max);
        char def[CONFIG_STR_MAX + 8] = "(the program's)";
        if (o->def)
            snprintf(def, sizeof def, "%s", o->def[0] ? o->def : "\"\"");
        else if (cfg)
            config_format(o, cfg, def, sizeof def);
        fprintf(f, "  --%-22s %-4s default %s%s\n      %s\n", o->name, s_type_name(o->type), def,
                range, o->help);
    }
}

void config_format(const config_option *o, const void *cfg, char *buf, size_t len)
{
    const char *field = (const char *)cfg + o->offset;
    switch (o->type) {
    case CONFIG_INT: snprintf(buf, len, "%ld", *(const long *)field); break;
    case CONFIG_DOUBLE: snprintf(buf, len, "%g", *(const double *)field); break;
    case CONFIG_BOOL: snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false"); break;
    default: snprintf(buf, len, "\"%s\"", field); break;
    }
}

void config_log(const config_option *table, size_t n, const void *cfg)
{
    for (size_t i = 0; i < n; i++) {
        char buf[CONFIG_STR_MAX + 8];
        config_format(&table[i], cfg, buf, sizeof buf);
        log_info("config %s = %s", table[i].name, buf);
    }
}
