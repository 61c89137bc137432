/* kz perft | moves | show | random-game: the rules engine from the command
 * line (R20 positions, R21 actions, R22 perft). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game.h"
#include "kz.h"
#include "util.h"

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
            return kz_usage_error(
                "%s: cannot parse action '%s' (write src-dst, e.g. 7-12, points 0..24)", cmd,
                argv[i]);
        game_result r = g->result(s);
        if (r.over)
            return kz_usage_error("%s: action %d '%s': the game is already over (%s)", cmd,
                                  i - first + 1, argv[i], game_reason_name(r.reason));
        if (!g->is_legal(s, a)) {
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

/* Parses the common options (--position P, --help) of moves and show. Returns
 * the index of the first action, -1 after printing help, or -2 on error. */
static int s_parse_opts(int argc, char **argv, const char *usage, const char **position)
{
    static const struct option opts[] = {
        {"position", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *position = NULL;
    optind = 1;
    opterr = 0;
    int c;
    /* '+' stops at the first action; actions never start with '-'. */
    while ((c = getopt_long(argc, argv, "+p:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': *position = optarg; break;
        case 'h': fputs(usage, stdout); return -1;
        default:
            kz_usage_error("%s: unknown or incomplete option '%s' (see kz %s --help)", argv[0],
                           argv[optind - 1], argv[0]);
            return -2;
        }
    }
    return optind;
}

int cmd_perft(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz perft [--position P] DEPTH\n\n"
        "Counts the leaf nodes of the tree of atomic actions (R22) from P (default:\n"
        "the start position) for every depth 1..DEPTH, one hop per level, printing\n"
        "`perft D: N` lines, then the nodes per second over all depths.\n";
    const char *position;
    int first = s_parse_opts(argc, argv, usage, &position);
    if (first < 0)
        return first == -1 ? 0 : 2;
    if (argc - first != 1)
        return kz_usage_error("perft: give exactly one DEPTH (see kz perft --help)");
    long depth;
    if (parse_long(argv[first], 1, 64, &depth) != 0)
        return kz_usage_error("perft: DEPTH must be a whole number from 1 to 64, not '%s'",
                              argv[first]);
    const game_def *g = game_default();
    game_state s;
    int rc = kz_setup(g, "perft", position, 0, NULL, 0, &s);
    if (rc)
        return rc;
    uint64_t nodes = 0;
    double t0 = time_now();
    for (int d = 1; d <= depth; d++) {
        uint64_t n = game_perft(g, &s, d);
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
        "usage: kz moves [--position P] [ACTION ...]\n\n"
        "Plays the ACTIONs (R21, e.g. 7-12 or 7x17) from P (R20; default: the start\n"
        "position), then prints the legal actions, one per line in src-dst form sorted\n"
        "by action index, or `result: black|white|draw (REASON)` when the game is over.\n"
        "History (R13, R14) accumulates over the given actions.\n";
    const char *position;
    int first = s_parse_opts(argc, argv, usage, &position);
    if (first < 0)
        return first == -1 ? 0 : 2;
    const game_def *g = game_default();
    game_state s;
    int rc = kz_setup(g, "moves", position, argc, argv, first, &s);
    if (rc)
        return rc;
    game_result r = g->result(&s);
    if (r.over) {
        printf("result: %s (%s)\n", r.winner < 0 ? "draw" : g->player_name(r.winner),
               game_reason_name(r.reason));
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
        "usage: kz show [--position P] [ACTION ...]\n\n"
        "Plays the ACTIONs from P (default: the start position) and draws the board\n"
        "with its lines (R1), the pieces (b B black man/king, w W white), the side to\n"
        "move and, mid-sequence, the piece that must hop on (in brackets).\n";
    const char *position;
    int first = s_parse_opts(argc, argv, usage, &position);
    if (first < 0)
        return first == -1 ? 0 : 2;
    const game_def *g = game_default();
    game_state s;
    int rc = kz_setup(g, "show", position, argc, argv, first, &s);
    if (rc)
        return rc;
    g->render(&s, stdout);
    game_result r = g->result(&s);
    if (r.over)
        printf("  result: %s (%s)\n", r.winner < 0 ? "draw" : g->player_name(r.winner),
               game_reason_name(r.reason));
    return 0;
}

int cmd_random_game(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz random-game [--seed N] [--show]\n\n"
        "Plays a game of uniformly random legal actions and prints each action\n"
        "(`ply N: black 7-12`), then the result with its reason. --show draws the\n"
        "board after every turn. The same seed gives the same game.\n";
    static const struct option opts[] = {
        {"seed", required_argument, NULL, 's'},
        {"show", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long seed = 1;
    int show = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (parse_long(optarg, 0, INT64_MAX, &seed) != 0)
                return kz_usage_error("random-game: --seed must be a whole number >= 0, not '%s'",
                                      optarg);
            break;
        case 'S': show = 1; break;
        case 'h': fputs(usage, stdout); return 0;
        default:
            return kz_usage_error("random-game: unknown or incomplete option '%s'",
                                  argv[optind - 1]);
        }
    }
    if (optind != argc)
        return kz_usage_error("random-game: unexpected argument '%s'", argv[optind]);
    const game_def *g = game_default();
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
        printf("ply %d: %s %s%s\n", ply + 1, g->player_name(mover), buf,
               g->mid_turn(&s) ? " (captures on)" : "");
        if (show && !g->mid_turn(&s)) {
            g->render(&s, stdout);
            putchar('\n');
        }
    }
    printf("result: %s (%s) after %d plies, %d actions\n",
           r.winner < 0 ? "draw" : g->player_name(r.winner), game_reason_name(r.reason), g->ply(&s),
           hops);
    return 0;
}
