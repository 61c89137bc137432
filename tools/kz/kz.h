/* kz: the operator's and developer's command. Each subcommand is a function
 * `int cmd_<name>(int argc, char **argv)` (argv[0] is the subcommand name)
 * returning the process exit status: 0 success, 1 failure at run time,
 * 2 bad usage or bad input (with a one-line message on stderr). */
#ifndef KZ_TOOLS_KZ_H
#define KZ_TOOLS_KZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "games/game.h"

/* Prints "kz: <message>" to stderr and returns 2 (for `return usage_error(...)`). */
int kz_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "kz: CMD: cannot write 'PATH': <rc's text>" to stderr and returns 1
 * (for a file a command fails to write, rc a KZ_E* code). */
int kz_write_error(const char *cmd, const char *path, int rc);
/* True when argv holds -h or --help. */
bool kz_wants_help(int argc, char **argv);
/* A command with subcommands (kz tb, kz yardstick): its name, the names of
 * its subcommands (n_subs of them), its usage and its settings (n_rows). */
typedef struct kz_subcommands {
    const char *name;
    const char *const *subs;
    size_t n_subs;
    const char *usage;
    const config_option *rows;
    size_t n_rows;
} kz_subcommands;
/* The start of such a command: without a subcommand, the usage on stderr
 * and 2; for -h or --help, the usage and the settings table on stdout and 0;
 * a subcommand not among c->subs is the one-line error "NAME: unknown
 * subcommand 'X' (a, b, ...)"; else the flags after it are parsed as
 * kz_parse_args does (into out; the other words into pos, *n_pos of them, at
 * most argc) under the name "NAME SUB", which is written into cmd (len
 * bytes). Returns -1 to go on, else the exit status. */
int kz_subcommand_parse(const kz_subcommands *c, void *out, int argc, char **argv,
                        const char **pos, size_t *n_pos, char *cmd, size_t len);
/* Parses a subcommand's flags with the settings parser (config.h: --key value
 * or --key=value, '-' and '_' alike in keys, bare booleans, --config=FILE)
 * into out, and the other words into pos (at most max_pos; *n_pos of them).
 * Returns -1 to go on, 0 after printing usage and the table for --help (keys
 * spelled --key-name), or 2 after a one-line error naming cmd. */
int kz_parse_args(const char *cmd, const char *usage, const config_option *rows, size_t n,
                  void *out, int argc, char **argv, const char **pos, size_t max_pos,
                  size_t *n_pos);

/* The --game row of a subcommand's settings, over a char[CONFIG_STR_MAX]
 * field of its options struct: the game (game.h's registry), default
 * GAME_DEFAULT_NAME. */
#define KZ_GAME_OPTION(type, field)                                                       \
    {"game", CONFIG_STRING, GAME_DEFAULT_NAME, 0, 0, offsetof(type, field),                \
     "the game (the registered games are listed by kz --help)"}
/* The registered game called `name`, or NULL after a one-line error naming
 * cmd and the games there are. */
const game_def *kz_game(const char *cmd, const char *name);
/* The game of a command given a model file (kz play, analyse, serve): the
 * model's own game when game (a char[len] option) is the default, written
 * back into game; a --game naming another game than the model's is a
 * one-line error (NULL, as kz_game's). Without a model file (none,
 * "uniform", or unreadable: its reader says why later), kz_game's. */
const game_def *kz_game_of_model(const char *cmd, char *game, size_t len, const char *model_path);

/* The openings of a book file (kz yardstick book; play/yardstick.h's
 * format) in a new array *out (the caller frees it) of *n positions. 0, or 2
 * after a one-line error naming cmd and the file's fault. */
int kz_read_book(const char *cmd, const game_def *g, const char *path, game_state **out,
                 int *n);

/* Sets s to `position` (R20; NULL: the start) and plays argv[first..argc)
 * (R21). 0, or 2 after a one-line error naming `cmd` (an unparsable or
 * impossible position, an unparsable action, play after the end, an illegal
 * action with the legal list). tools/kz/kz_game.c. */
int kz_setup(const game_def *g, const char *cmd, const char *position, int argc, char **argv,
             int first, game_state *s);

/* tools/kz/kz_game.c */
int cmd_perft(int argc, char **argv);
int cmd_moves(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_random_game(int argc, char **argv);

/* tools/kz/kz_selfplay.c */
int cmd_selfplay(int argc, char **argv);
int cmd_records(int argc, char **argv);
/* Prints a game move by move (kz records --game, kz store --game): `title`
 * and the record's id, model, seed and worker; the sides of an arena or
 * rating game; the search settings; the start; per state the ply, mover,
 * action (~ inside a capture sequence), z, root value and largest visit
 * shares (replayed through g's rules: an invalid record says where it
 * fails); the result. */
struct game_record;
void kz_print_record(const game_def *g, const struct game_record *r, const char *title);
/* tools/kz/kz_model.c */
int cmd_model(int argc, char **argv);
int cmd_eval(int argc, char **argv);
/* tools/kz/kz_match.c */
int cmd_match(int argc, char **argv);
int cmd_analyse(int argc, char **argv);
int cmd_play(int argc, char **argv);
/* tools/kz/kz_keygen.c */
int cmd_keygen(int argc, char **argv);
/* tools/kz/kz_status.c */
int cmd_status(int argc, char **argv);
int cmd_ratings(int argc, char **argv);
/* tools/kz/kz_loadgen.c */
int cmd_loadgen(int argc, char **argv);
/* tools/kz/kz_store.c */
int cmd_store(int argc, char **argv);
/* tools/kz/kz_serve.c */
int cmd_serve(int argc, char **argv);
/* tools/kz/kz_solve.c */
int cmd_solve(int argc, char **argv);
/* tools/kz/kz_scale.c */
int cmd_scale(int argc, char **argv);
/* tools/kz/kz_tb.c */
int cmd_tb(int argc, char **argv);
/* tools/kz/kz_yardstick.c */
int cmd_yardstick(int argc, char **argv);

/* tools/kz/kz_http.c: HTTP/1.0 GET (http:// only).
 * Splits url (http://HOST[:PORT][/PATH]) into host, port (default 80) and
 * path ("/" when none); 0 or KZ_EINVAL with a one-line message in err. */
int kz_url_split(const char *url, char *host, size_t hostlen, int *port, char *path,
                 size_t pathlen, char *err, size_t errlen);
/* GETs url: 0 with the status code in *code and the body in *body (*len
 * bytes, NUL-terminated after them; caller frees) for any HTTP answer but
 * 401, or KZ_EINVAL / KZ_EIO with err (bad URL, no connection, not HTTP, an
 * answer over max_bytes, 10 s of silence, 60 s in all), KZ_EREJECTED for 401
 * (the coordinator wants a token). With KZ_STATUS_TOKEN_FILE set, the
 * request carries that file's token (Authorization: Bearer). */
int kz_http_get(const char *url, size_t max_bytes, uint8_t **body, size_t *len, int *code,
                char *err, size_t errlen);

#endif
