/* config: table-driven program settings. Each program describes its settings
 * once, in a table of config_option (name, type, default, range, help, where
 * in the program's config struct the value goes); config_parse fills the
 * struct from the defaults, then an optional `key = value` file
 * (--config=PATH), then `--key=value` / `--key value` flags, in that order.
 *
 * Unknown keys, malformed or out-of-range values and missing values are
 * errors, reported as one line in `err` that names the key as it was given
 * ("--seed: ..." for a flag, "FILE:LINE: seed: ..." in a file). `--help`
 * prints the table.
 *
 * File syntax: one `key = value` per line; blank lines and lines starting
 * with '#' are ignored; values may be quoted with "..."; keys may use '-' or
 * '_' interchangeably (so do flags).
 *
 * Groups. A module that programs configure owns its rows (mcts_options in
 * mcts.h, client_options in client.h): their offsets are within the module's
 * own struct (mcts_settings, client_config), which the program's config
 * struct embeds. A program lists groups (config_group: rows, and where the
 * module's struct sits in its own) and config_join makes them one table, so
 * that a setting has one name, range, help and default in every program.
 *
 * Threads: pure functions over their arguments. */
#ifndef KZ_CONFIG_H
#define KZ_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONFIG_STR_MAX 256 /* bytes of a string setting, NUL included */

enum config_type {
    CONFIG_INT,    /* long */
    CONFIG_DOUBLE, /* double */
    CONFIG_BOOL,   /* bool: true/false, yes/no, on/off, 1/0 */
    CONFIG_STRING, /* char[CONFIG_STR_MAX] */
    CONFIG_INT32,  /* int (a module's own struct) */
    CONFIG_FLOAT,  /* float (a module's own struct) */
    CONFIG_SIZE,   /* size_t (a module's own struct) */
    CONFIG_CHOICE, /* int set by name: def lists the names, '|'-separated, the first
                    * being the default; the value is the name's index */
    CONFIG_ALIAS,  /* another spelling of a row (def: its name), or with def
                    * "name=value" a bare flag that sets that value (--no_reuse) */
};

typedef struct config_option {
    const char *name;  /* key, snake_case */
    int type;          /* enum config_type */
    const char *def;   /* default value, as text; NULL: the field keeps what the
                        * program put there first (a module's *_default());
                        * CONFIG_CHOICE, CONFIG_ALIAS: see there */
    double min, max;   /* inclusive range (numbers), ignored for the other types */
    size_t offset;     /* offsetof(program config struct, field) */
    const char *help;  /* one line */
} config_option;

/* Rows keyed by their field's name. Before a table, define CONFIG_STRUCT as
 * the struct its offsets are in (#undef it after); then
 *     CONFIG_ROW_INT(seed, "0", 0, 100, "help")
 * is {"seed", CONFIG_INT, "0", 0, 100, offsetof(CONFIG_STRUCT, seed), "help"}.
 * The bool, string and choice rows have no range (0, 0). A row whose key is
 * not its field's name (an alias, a field of an embedded struct) is written
 * out as a config_option. */
#define CONFIG_ROW(type, f, def, min, max, help)                                       \
    {#f, type, def, min, max, offsetof(CONFIG_STRUCT, f), help}
#define CONFIG_ROW_INT(f, def, min, max, help) CONFIG_ROW(CONFIG_INT, f, def, min, max, help)
#define CONFIG_ROW_DOUBLE(f, def, min, max, help)                                      \
    CONFIG_ROW(CONFIG_DOUBLE, f, def, min, max, help)
#define CONFIG_ROW_INT32(f, def, min, max, help) CONFIG_ROW(CONFIG_INT32, f, def, min, max, help)
#define CONFIG_ROW_FLOAT(f, def, min, max, help) CONFIG_ROW(CONFIG_FLOAT, f, def, min, max, help)
#define CONFIG_ROW_SIZE(f, def, min, max, help) CONFIG_ROW(CONFIG_SIZE, f, def, min, max, help)
#define CONFIG_ROW_BOOL(f, def, help) CONFIG_ROW(CONFIG_BOOL, f, def, 0, 0, help)
#define CONFIG_ROW_STRING(f, def, help) CONFIG_ROW(CONFIG_STRING, f, def, 0, 0, help)
#define CONFIG_ROW_CHOICE(f, names, help) CONFIG_ROW(CONFIG_CHOICE, f, names, 0, 0, help)

/* One module's rows in a program's table. */
typedef struct config_group {
    const config_option *rows; /* the module's rows (offsets within its struct) */
    size_t n;                  /* number of rows */
    size_t offset;             /* offsetof(program config struct, the module's struct); 0
                                * for the program's own rows */
} config_group;

/* Copies the groups' rows into out, in order, each offset moved by its
 * group's offset. A row whose name is already in out is left out: a program
 * that lists its own row of a module's name first gives that setting its own
 * meaning (kz-worker's simulations: 0 = the job's). More than max rows is a
 * bug in the program (checked). Returns the number of rows. */
size_t config_join(config_option *out, size_t max, const config_group *groups, size_t n_groups);
/* Gives row `name` of a program's (joined) table another text default, for a
 * program whose use differs (the trainer's longer timeout_ms). The row must
 * exist and take the value (checked when parsing). */
void config_set_default(config_option *table, size_t n, const char *name, const char *def);

/* Outcome of config_parse. */
enum {
    CONFIG_OK = 0,   /* settings filled */
    CONFIG_HELP = 1, /* --help was given (nothing else checked); print config_help */
};

/* Sets every row's text default in `out` (a choice: its first name); rows
 * without one (def NULL) and fields without a row keep what out holds. This
 * is config_parse's first step; a module's *_default() calls it over its own
 * rows, so that the table is the one place its defaults are written. A
 * default that does not parse is a bug in the table (checked). */
void config_defaults(const config_option *table, size_t n, void *out);

/* Fills `out` from the table: defaults, then --config=PATH's file, then the
 * flags in argv[1..argc). Positional arguments (not starting with "--") are
 * errors unless `positional` is non-NULL: then they are stored there in order
 * (up to max_positional, count in *n_positional). Returns CONFIG_OK,
 * CONFIG_HELP, or KZ_EINVAL with a one-line message in err. */
int config_parse(const config_option *table, size_t n, void *out, int argc, char **argv,
                 const char **positional, size_t max_positional, size_t *n_positional,
                 char *err, size_t errlen);

/* The settings step of a program's start: config_parse (the same arguments),
 * then what every program does with its outcome. --help writes `usage` (as
 * is: the text before the table) and the table to stdout and returns 0; a
 * bad setting writes "PROG: MESSAGE" to stderr and returns 2 (the exit
 * status of bad settings); settings read return -1 (the program goes on). */
int config_start(const char *prog, const char *usage, const config_option *table, size_t n,
                 void *out, int argc, char **argv, const char **positional,
                 size_t max_positional, size_t *n_positional);

/* Sets one option by name from text (what the file and the flags do).
 * 0, or KZ_EINVAL with a message (unknown key, bad or out-of-range value). */
int config_set(const config_option *table, size_t n, void *out, const char *key,
               const char *value, char *err, size_t errlen);

/* Reads a `key = value` file into out. 0, or KZ_EINVAL/errno with a message
 * naming the file and line. */
int config_read_file(const config_option *table, size_t n, void *out, const char *path,
                     char *err, size_t errlen);

/* Prints the table (name, type, default, range, help) for --help. */
void config_help(const config_option *table, size_t n, FILE *f);
/* The same, showing the rows without a text default with their value in cfg
 * (the program's defaults, before config_parse). */
void config_help_from(const config_option *table, size_t n, const void *cfg, FILE *f);
/* config_help_from with the keys spelled with '-' (--key-name: kz's spelling;
 * both are accepted everywhere). */
void config_help_dashed(const config_option *table, size_t n, const void *cfg, FILE *f);

/* Logs the effective value of every option (log_info, one line each). */
void config_log(const config_option *table, size_t n, const void *cfg);

/* Writes the value of one option as text (always NUL-terminated). */
void config_format(const config_option *opt, const void *cfg, char *buf, size_t len);

#endif
