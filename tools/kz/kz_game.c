/* kz perft | moves | show | random-game: the rules engine from the command
 * line (R20 positions, R21 actions, R22 perft). */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/backgammon.h"
#include "games/game.h"
#include "tools/kz/kz.h"
#include "common/util.h"

int kz_setup(const game_def *g, const char *cmd, const char *position, int argc, char **argv,
             int first, game_state *s)
{
    char err[200];
    if (position) {
        if (g->parse_position(s, position, err, sizeof err) != 0)
            return kz_usage_error("%s: %s", cmd, err);
    } else {
        g->init(s);
    }
    for (int i = first; i < argc; i++) {
        int a;
        if (g->parse_action(argv[i], &a) != 0)
            return kz_usage_error("%s: cannot parse action '%s' (write actions of %s as "
                                  "`kz moves --game %s` lists them)", cmd, argv[i], g->name,
                                  g->name);
        game_result r = g->result(s);
        if (r.over)
            return kz_usage_error("%s: action %d '%s': the game is already over (%s)", cmd,
                                  i - first + 1, argv[i], game_reason_name(g, r.reason));
        if (!game_is_legal(g, s, a)) {
            uint16_t legal[GAME_MAX_LEGAL];
            int n = g->legal_actions(s, legal);
            char list[1024] = "", buf[16];
            for (int k = 0; k < n && strlen(list) < sizeof list - 20; k++) {
                g->format_action(legal[k], buf, sizeof buf);
                strcat(list, k ? " " : "");
                strcat(list, buf);
            }
            return kz_usage_error("%s: action %d '%s' is illegal here; legal: %s", cmd,
                                  i - first + 1, argv[i], list);
        }
        g->apply(s, a);
    }
    return 0;
}

/* The options of perft, moves and show. */
typedef struct position_opts {
    char position[CONFIG_STR_MAX]; /* R20 string, "" = the start */
    char game[CONFIG_STR_MAX];     /* the game */
    bool turns;                    /* perft: count whole turns, not hops */
    char dice[CONFIG_STR_MAX];     /* a roll appended to the position (backgammon, B17) */
    char moves[CONFIG_STR_MAX];    /* perft: actions played first, space-separated */
} position_opts;

/* moves and show read the first three, perft all five. */
#define CONFIG_STRUCT position_opts
static const config_option s_position_rows[] = {
    CONFIG_ROW_STRING(position, "", "start from this position (R20), not the initial one"),
    KZ_GAME_OPTION(position_opts, game),
    CONFIG_ROW_STRING(dice, "",
                      "a game with dice: the roll to play in the position, e.g. 31 (backgammon "
                      "B17)"),
    CONFIG_ROW_BOOL(turns, "false",
                    "count whole turns (a capture sequence one node) instead of hops (R22)"),
    CONFIG_ROW_STRING(moves, "", "play these actions (space-separated) from the position first"),
};
#undef CONFIG_STRUCT

/* Parses --position, --game (and for perft --turns) and the other words
 * (actions, or perft's DEPTH) into words (argc of them at most). Returns -1
 * to go on, else the exit status. */
static int s_parse_position(const char *cmd, const char *usage, int argc, char **argv,
                            position_opts *o, const char **words, size_t *n)
{
    size_t rows = strcmp(cmd, "perft") ? 3 : 5;
    return kz_parse_args(cmd, usage, s_position_rows, rows, o, argc, argv, words, (size_t)argc,
                         n);
}

/* Sets s to the position to start from, --position (with --dice appended in
 * a game with dice; the start without), and plays the n actions on it.
 * 0, or 2 after a one-line error (kz_setup's, or a bad --dice). */
static int s_setup(const char *cmd, const game_def *g, const position_opts *o, int n,
                   char **actions, game_state *s)
{
    char buf[2 * CONFIG_STR_MAX + 2];
    const char *start = o->position[0] ? o->position : NULL;
    if (o->dice[0]) {
        if (!g->is_chance)
            return kz_usage_error("%s: game %s has no dice", cmd, g->name);
        if (!o->position[0])
            return kz_usage_error("%s: --dice needs --position (a Position ID)", cmd);
        snprintf(buf, sizeof buf, "%s %s", o->position, o->dice);
        start = buf;
    }
    return kz_setup(g, cmd, start, n, actions, 0, s);
}

/* The start of moves and show: the options, the game in *g and the position
 * after the actions given (the words) in *s. Returns -1 to go on, else the
 * exit status. */
static int s_position(const char *cmd, const char *usage, int argc, char **argv,
                      const game_def **g, game_state *s)
{
    position_opts o;
    const char *words[argc];
    size_t nw;
    int rc = s_parse_position(cmd, usage, argc, argv, &o, words, &nw);
    if (rc >= 0)
        return rc;
    *g = kz_game(cmd, o.game);
    if (!*g)
        return 2;
    rc = s_setup(cmd, *g, &o, (int)nw, (char **)words, s);
    return rc ? rc : -1;
}

/* "result: WINNER (REASON)" ("draw" for no winner), after indent. */
static void s_print_result(const game_def *g, game_result r, const char *indent)
{
    printf("%sresult: %s (%s)\n", indent, r.winner < 0 ? "draw" : g->player_name(r.winner),
           game_reason_name(g, r.reason));
}

int cmd_perft(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz perft [--game G] [--position P [--dice D]] [--moves \"ACTIONS\"] [--turns]\n"
        "                DEPTH\n\n"
        "Counts the leaf nodes of the tree of atomic actions (R22) from P (default:\n"
        "the start position; after ACTIONS when given) for every depth 1..DEPTH, one\n"
        "hop per level (--turns:\n"
        "one turn per level, a capture sequence one node), printing `perft D: N`\n"
        "lines, then the nodes per second over all depths.\n";
    position_opts o;
    const char *words[argc];
    size_t nw;
    int rc = s_parse_position("perft", usage, argc, argv, &o, words, &nw);
    if (rc >= 0)
        return rc;
    if (nw != 1)
        return kz_usage_error("perft: give exactly one DEPTH (see kz perft --help)");
    long depth;
    if (parse_long(words[0], 1, 64, &depth) != 0)
        return kz_usage_error("perft: DEPTH must be a whole number from 1 to 64, not '%s'",
                              words[0]);
    const game_def *g = kz_game("perft", o.game);
    if (!g)
        return 2;
    game_state s;
    char moves[CONFIG_STR_MAX], *mv[CONFIG_STR_MAX / 2], *save = NULL;
    int n_mv = 0;
    snprintf(moves, sizeof moves, "%s", o.moves);
    for (char *t = strtok_r(moves, " ", &save); t; t = strtok_r(NULL, " ", &save))
        mv[n_mv++] = t;
    rc = s_setup("perft", g, &o, n_mv, mv, &s);
    if (rc)
        return rc;
    uint64_t nodes = 0;
    double t0 = time_now();
    for (int d = 1; d <= depth; d++) {
        uint64_t n = o.turns ? game_perft_turns(g, &s, d) : game_perft(g, &s, d);
        nodes += n;
        printf("perft %d: %" PRIu64 "\n", d, n);
        fflush(stdout);
    }
    double dt = time_now() - t0;
    printf("nodes per second: %.0f (%" PRIu64 " leaf nodes over all depths in %.3f s)\n",
           dt > 0 ? nodes / dt : 0.0, nodes, dt);
    return 0;
}

int cmd_moves(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz moves [--game G] [--position P [--dice D]] [ACTION ...]\n\n"
        "Plays the ACTIONs (R21, e.g. 7-12 or 7x17) from P (R20; default: the start\n"
        "position), then prints the legal actions, one per line in src-dst form sorted\n"
        "by action index, or `result: black|white|draw (REASON)` when the game is over.\n"
        "History (R13, R14) accumulates over the given actions.\n"
        "Backgammon (docs/rules-backgammon.md): P a Position ID, D the roll (31, 55);\n"
        "prints every legal whole move for the roll, one per line in standard notation\n"
        "(8/5 6/5), each distinct resulting position once; ACTIONs are checker moves\n"
        "(13/8, bar/22, 3/off) played before it.\n";
    const game_def *g;
    game_state s;
    int rc = s_position("moves", usage, argc, argv, &g, &s);
    if (rc >= 0)
        return rc;
    if (g == &backgammon_game && !g->is_chance(&s) && !g->result(&s).over) {
        enum { MAX = 4096 };
        bg_whole_move *m = xmalloc(sizeof *m * MAX);
        int n = backgammon_whole_moves(&s, m, MAX);
        for (int i = 0; i < n && i < MAX; i++)
            puts(m[i].text);
        free(m);
        return 0;
    }
    game_result r = g->result(&s);
    if (r.over) {
        s_print_result(g, r, "");
        return 0;
    }
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(&s, legal);
    char buf[16];
    for (int i = 0; i < n; i++) {
        g->format_action(legal[i], buf, sizeof buf);
        puts(buf);
    }
    return 0;
}

int cmd_show(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz show [--game G] [--position P] [ACTION ...]\n\n"
        "Plays the ACTIONs from P (default: the start position) and draws the board\n"
        "with its lines (R1), the pieces (b B black man/king, w W white), the side to\n"
        "move and, mid-sequence, the piece that must hop on (in brackets).\n";
    const game_def *g;
    game_state s;
    int rc = s_position("show", usage, argc, argv, &g, &s);
    if (rc >= 0)
        return rc;
    g->render(&s, stdout);
    game_result r = g->result(&s);
    if (r.over)
        s_print_result(g, r, "  ");
    return 0;
}

int cmd_random_game(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz random-game [--game G] [--seed N] [--show]\n\n"
        "Plays a game of uniformly random legal actions and prints each action\n"
        "(`ply N: black 7-12`), then the result with its reason. --show draws the\n"
        "board after every turn. The same seed gives the same game.\n";
    typedef struct {
        long seed;                 /* the game's seed */
        bool show;                 /* draw the board after every turn */
        char game[CONFIG_STR_MAX]; /* the game */
    } random_opts;
#define CONFIG_STRUCT random_opts
    static const config_option rows[] = {
        CONFIG_ROW_INT(seed, "1", 0, 9007199254740991,
                       "the game's seed: the same seed, the same game"),
        CONFIG_ROW_BOOL(show, "false", "draw the board after every turn"),
        KZ_GAME_OPTION(random_opts, game),
    };
#undef CONFIG_STRUCT
    random_opts o;
    int rc = kz_parse_args("random-game", usage, rows, 3, &o, argc, argv, NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    long seed = o.seed;
    bool show = o.show;
    const game_def *g = kz_game("random-game", o.game);
    if (!g)
        return 2;
    rng_t rng;
    rng_seed(&rng, (uint64_t)seed);
    game_state s;
    g->init(&s);
    if (show)
        g->render(&s, stdout);
    game_result r;
    int hops = 0;
    while (!(r = g->result(&s)).over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)n)];
        char buf[16];
        g->format_action(a, buf, sizeof buf);
        int mover = g->to_move(&s), ply = g->ply(&s);
        g->apply(&s, a);
        hops++;
        printf("ply %d: %s %s%s%s%s\n", ply + 1, g->player_name(mover), buf,
               g->mid_turn(&s) ? " (" : "",
               g->mid_turn(&s) ? (g->mid_turn_verb ? g->mid_turn_verb : "captures on") : "",
               g->mid_turn(&s) ? ")" : "");
        if (show && !g->mid_turn(&s)) {
            g->render(&s, stdout);
            putchar('\n');
        }
    }
    printf("result: %s (%s) after %d plies, %d actions\n",
           r.winner < 0 ? "draw" : g->player_name(r.winner), game_reason_name(g, r.reason),
           g->ply(&s), hops);
    return 0;
}
