/* kz: dispatches to the subcommands. See kz.h and `kz --help`. */
#include "tools/kz/kz.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "play/yardstick.h"

typedef struct kz_command {
    const char *name;                  /* as typed */
    int (*run)(int argc, char **argv); /* the subcommand */
    const char *summary;               /* one line for `kz --help` */
} kz_command;

static const kz_command s_commands[] = {
    {"perft", cmd_perft, "count the leaf nodes of the action tree (R22)"},
    {"moves", cmd_moves, "list the legal actions after a sequence of actions"},
    {"show", cmd_show, "draw the board after a sequence of actions"},
    {"random-game", cmd_random_game, "play a random game and print it"},
    {"selfplay", cmd_selfplay, "play self-play games with MCTS and write a record file"},
    {"records", cmd_records, "summarise a record file or print one of its games"},
    {"model", cmd_model,
     "create, inspect, dump and download model files (init, info, dump, fetch)"},
    {"eval", cmd_eval, "evaluate a position with a model: value and policy"},
    {"match", cmd_match, "play two players against each other: score, Elo, SPRT"},
    {"analyse", cmd_analyse, "show the engine's choice, value and visit distribution"},
    {"play", cmd_play, "play against the engine in the terminal"},
    {"serve", cmd_serve, "the play page and the engine's JSON API, without a cluster"},
    {"status", cmd_status, "print a coordinator's /status readably"},
    {"scale", cmd_scale, "measure a game's anchor scale (the lines of play/scales.txt)"},
    {"ratings", cmd_ratings, "the rating pool: anchors and models with Elo and intervals"},
    {"loadgen", cmd_loadgen, "imitate many workers submitting games (ingest load)"},
    {"keygen", cmd_keygen, "make a CurveZMQ key pair (NAME.key, NAME.pub) for the cluster"},
    {"store", cmd_store, "summarize a coordinator's store, list its games and models"},
    {"solve", cmd_solve, "prove \"X does not lose\" (df-pn to the tables); verify certificates"},
    {"tb", cmd_tb, "endgame tablebases: build, probe, stats, verify, bench, accuracy"},
    {"yardstick", cmd_yardstick,
     "measures of learning: balanced book, labelled positions, value calibration, paired A/B"},
};
#define N_COMMANDS (sizeof s_commands / sizeof s_commands[0])

int kz_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int kz_write_error(const char *cmd, const char *path, int rc)
{
    fprintf(stderr, "kz: %s: cannot write '%s': %s\n", cmd, path, err_str(rc));
    return 1;
}

bool kz_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return true;
    return false;
}

/* kz_subcommand_parse's answers without a subcommand or for -h, --help. */
static int s_subcommand_help(int argc, char **argv, const char *usage, const config_option *rows,
                             size_t n)
{
    if (argc >= 2 && strcmp(argv[1], "-h") && strcmp(argv[1], "--help"))
        return -1;
    fputs(usage, argc < 2 ? stderr : stdout);
    if (argc >= 2) {
        putchar('\n');
        config_help(rows, n, stdout);
    }
    return argc < 2 ? 2 : 0;
}

int kz_parse_args(const char *cmd, const char *usage, const config_option *rows, size_t n,
                  void *out, int argc, char **argv, const char **pos, size_t max_pos,
                  size_t *n_pos)
{
    char err[300];
    int rc = config_parse(rows, n, out, argc, argv, pos, max_pos, n_pos, err, sizeof err);
    if (rc == CONFIG_HELP) {
        fputs(usage, stdout);
        putchar('\n');
        config_help_dashed(rows, n, out, stdout);
        return 0;
    }
    if (!rc)
        return -1;
    /* kz's words for an unknown flag, as before the subcommands used this parser. */
    static const char unknown[] = "unknown option ";
    char *see = strstr(err, " (see --help)");
    if (!strncmp(err, unknown, sizeof unknown - 1) && see) {
        *see = 0;
        return kz_usage_error("%s: unknown or incomplete option %s (see kz %s --help)", cmd,
                              err + sizeof unknown - 1, cmd);
    }
    return kz_usage_error("%s: %s", cmd, err);
}

int kz_subcommand_parse(const kz_subcommands *c, void *out, int argc, char **argv,
                        const char **pos, size_t *n_pos, char *cmd, size_t len)
{
    int rc = s_subcommand_help(argc, argv, c->usage, c->rows, c->n_rows);
    if (rc >= 0)
        return rc;
    const char *sub = argv[1];
    size_t i = 0;
    while (i < c->n_subs && strcmp(sub, c->subs[i]))
        i++;
    if (i == c->n_subs) {
        char names[256] = "";
        for (size_t k = 0; k < c->n_subs; k++) {
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s%s", k ? ", " : "", c->subs[k]);
        }
        return kz_usage_error("%s: unknown subcommand '%s' (%s)", c->name, sub, names);
    }
    snprintf(cmd, len, "%s %s", c->name, sub);
    return kz_parse_args(cmd, c->usage, c->rows, c->n_rows, out, argc - 1, argv + 1, pos,
                         (size_t)argc, n_pos);
}

const game_def *kz_game(const char *cmd, const char *name)
{
    const game_def *g = game_find(name);
    if (!g) {
        char names[256];
        game_names(names, sizeof names);
        kz_usage_error("%s: unknown game '%.60s' (the games: %s)", cmd, name, names);
    }
    return g;
}

int kz_read_book(const char *cmd, const game_def *g, const char *path, game_state **out,
                 int *n)
{
    char err[512];
    *out = xmalloc(YARD_MAX_BOOK * sizeof **out);
    if (yard_read(g, path, *out, NULL, YARD_MAX_BOOK, n, err, sizeof err)) {
        free(*out);
        *out = NULL;
        return kz_usage_error("%s: book: %s", cmd, err);
    }
    return 0;
}

const game_def *kz_game_of_model(const char *cmd, char *game, size_t len, const char *model_path)
{
    if (model_path && model_path[0] && strcmp(model_path, "uniform")) {
        model *m = NULL;
        char err[300];
        if (modelfile_load(model_path, NULL, &m, err, sizeof err) == 0) {
            const char *mg = model_get_arch(m)->game;
            bool other = strcmp(game, mg) != 0, asked = strcmp(game, GAME_DEFAULT_NAME) != 0;
            if (other && asked) {
                kz_usage_error("%s: --game %.60s, but the model %.200s is for %.32s", cmd, game,
                               model_path, mg);
                model_destroy(&m);
                return NULL;
            }
            if (other)
                snprintf(game, len, "%s", mg);
            model_destroy(&m);
        } /* else the engine reports the file's problem */
    }
    return kz_game(cmd, game);
}

static void s_help(FILE *out)
{
    fprintf(out, "usage: kz COMMAND [ARGS...]\n\n"
                 "Khreibaga Zero's command line. Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-13s %s\n", s_commands[i].name, s_commands[i].summary);
    fprintf(out, "  %-13s %s\n", "help COMMAND", "the same as kz COMMAND --help");
    fprintf(out, "  %-13s %s\n", "--version", "print kz's version");
    char names[256];
    game_names(names, sizeof names);
    fprintf(out,
            "\n`kz COMMAND --help` describes a command; flags may be written --key_name\n"
            "or --key-name alike. --game NAME picks the game (default %s; the games:\n"
            "%s). Khreibaga's positions are written as in R20\n"
            "(\""
            "bbbbbbbbbbbb.wwwwwwwwwwww b"
            "\"), actions as in R21 (\"7-12\", \"7x17\");\n"
            "the rules R1-R22 are in docs/rules.md, another game's in docs/rules-NAME.md.\n",
            GAME_DEFAULT_NAME, names);
}

int main(int argc, char **argv)
{
    log_init("kz");
    if (argc < 2) {
        s_help(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("kz %s\n", util_version());
        return 0;
    }
    /* `kz help COMMAND` is `kz COMMAND --help`. */
    if (!strcmp(argv[1], "help") && argc > 2) {
        char *args[] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (!strcmp(argv[2], s_commands[i].name))
                return s_commands[i].run(2, args);
        return kz_usage_error("help: unknown command '%s' (see kz --help)", argv[2]);
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        s_help(stdout);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], s_commands[i].name))
            return s_commands[i].run(argc - 1, argv + 1);
    return kz_usage_error("unknown command '%s' (see kz --help)", argv[1]);
}
