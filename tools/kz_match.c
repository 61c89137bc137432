/* kz match | analyse | play: players against each other (with the scorer and
 * SPRT of common/match.h), one decision looked at closely, and a person
 * against the engine in the terminal. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "game.h"
#include "kz.h"
#include "match.h"
#include "player.h"
#include "util.h"

/* Writes the legal actions of s, space-separated, into buf. */
static void s_legal_list(const game_def *g, const game_state *s, char *buf, size_t len)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[16];
        g->format_action(legal[i], a, sizeof a);
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", a);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}

static const char *s_result_text(const game_def *g, game_result r)
{
    return r.winner < 0 ? "draw" : g->player_name(r.winner);
}

static void s_fmt_elo(double e, char *buf, size_t len)
{
    if (isinf(e))
        snprintf(buf, len, "%sinf", e < 0 ? "-" : "+");
    else
        snprintf(buf, len, "%+.0f", fabs(e) < 0.5 ? 0.0 : e); /* no "-0" */
}

/* ---- kz match ------------------------------------------------------------------------------ */

typedef struct match_cli {
    const game_def *g;      /* the game */
    const match_config *cfg; /* the settings (for SPRT progress) */
    const char *a, *b;      /* player names */
    bool quiet;             /* no per-game lines */
    int prev;               /* A's result in the last even-numbered game (a pair's first) */
    int penta[MATCH_PENTA]; /* completed pairs (games 2j, 2j+1: one opening, both colours) */
} match_cli;

static void s_on_game(void *ctx, const match_game *gm, int w, int d, int l)
{
    match_cli *m = ctx;
    if (gm->index % 2 == 0)
        m->prev = gm->a_result;
    else
        match_penta_add(m->penta, m->prev, gm->a_result);
    if (gm->index == 0)
        printf("match: A = %s, B = %s, %d games%s, seed %" PRIu64 "\n", m->a, m->b,
               m->cfg->games, m->cfg->openings ? ", openings" : "", m->cfg->seed);
    if (m->quiet)
        return;
    char llr[64] = "";
    if (m->cfg->sprt)
        snprintf(llr, sizeof llr, "  LLR %+.2f",
                 match_llr(w, d, l, m->cfg->elo0, m->cfg->elo1));
    char opening[32] = "";
    if (gm->opening >= 0)
        snprintf(opening, sizeof opening, " opening %d,", gm->opening + 1);
    printf("game %d/%d:%s A %s as %s: %s (%s, %d plies)  A: +%d =%d -%d%s\n", gm->index + 1,
           m->cfg->games, opening, gm->a_result > 0 ? "wins" : gm->a_result < 0 ? "loses" : "draws",
           m->g->player_name(gm->a_player), s_result_text(m->g, gm->result),
           game_reason_name(gm->result.reason), gm->plies, w, d, l, llr);
    fflush(stdout);
}

/* The pentanomial lines of the result, over the completed pairs of `games` games. */
static void s_print_pairs(const match_cli *m, int games)
{
    const int *p = m->penta;
    const match_config *cfg = m->cfg;
    match_stats st;
    match_penta_stats(p, &st);
    char e[32], elo_lo[32], elo_hi[32];
    s_fmt_elo(st.elo, e, sizeof e);
    s_fmt_elo(st.elo_lo, elo_lo, sizeof elo_lo);
    s_fmt_elo(st.elo_hi, elo_hi, sizeof elo_hi);
    char odd[64] = "";
    if (games % 2)
        snprintf(odd, sizeof odd, "; game %d has no partner and is left out", games);
    printf("  pairs: %d (LL/LD/DD+WL/WD/WW: %d/%d/%d/%d/%d)%s\n", st.games / 2, p[0], p[1], p[2],
           p[3], p[4], odd);
    printf("  pair score: %.3f +/- %.3f (95%%: %.3f .. %.3f)\n", st.score, MATCH_Z95 * st.sd,
           st.score_lo, st.score_hi);
    printf("  pair elo: %s (95%%: %s .. %s)\n", e, elo_lo, elo_hi);
    if (cfg->sprt) {
        double llr, lower, upper;
        int dec = match_penta_sprt_decide(p, cfg->elo0, cfg->elo1, cfg->alpha, cfg->beta, &llr);
        match_sprt_bounds(cfg->alpha, cfg->beta, &lower, &upper);
        printf("  pair sprt: LLR %.3f in [%.3f, %.3f]: %s\n", llr, lower, upper,
               dec == GATE_ACCEPT   ? "H1 accepted (A is stronger by elo1)"
               : dec == GATE_REJECT ? "H0 accepted (A is not stronger by elo1)"
                                    : "undecided");
    }
}

/* Parses "elo0,elo1[,alpha,beta]". */
static int s_parse_sprt(const char *arg, match_config *cfg)
{
    char buf[128];
    if (strlen(arg) >= sizeof buf)
        return KZ_EINVAL;
    strcpy(buf, arg);
    double v[4] = {0, 0, 0.05, 0.05};
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == 4)
            return KZ_EINVAL;
        double lo = n < 2 ? -2000 : 1e-6, hi = n < 2 ? 2000 : 0.5;
        if (parse_double(tok, lo, hi, &v[n]) != 0)
            return KZ_EINVAL;
        n++;
    }
    if ((n != 2 && n != 4) || !(v[0] < v[1]))
        return KZ_EINVAL;
    cfg->sprt = true;
    cfg->elo0 = v[0];
    cfg->elo1 = v[1];
    cfg->alpha = v[2];
    cfg->beta = v[3];
    return 0;
}

int cmd_match(int argc, char **argv)
{
    static const char usage_head[] =
        "usage: kz match A B [--games N] [--openings K] [--opening-turns T] [--seed S]\n"
        "                    [--sprt ELO0,ELO1[,ALPHA,BETA]] [--quiet]\n\n"
        "Plays N games (default 100) of player A against player B with alternating\n"
        "colours (A is black in games 1, 3, ...). With --openings K, the games start from\n"
        "K distinct positions reached by T random turns (default: the fewest turns that\n"
        "give K distinct positions), each opening played once with each colour. Prints\n"
        "a line per game, then from A's view: wins, draws, losses, the score with its 95%\n"
        "interval (trinomial variance), the logistic Elo difference with its interval, and\n"
        "with --sprt the log-likelihood ratio (GSPRT as fishtest; H0: Elo = ELO0, H1: Elo =\n"
        "ELO1, alpha and beta default 0.05), stopping as soon as it accepts one hypothesis.\n"
        "With --openings, games 2j-1 and 2j (one opening, both colours) also form a pair,\n"
        "and the same figures follow for the pairs (pentanomial: LL/LD/DD+WL/WD/WW counts,\n"
        "the score with its interval from the pair variance, its Elo, and with --sprt the\n"
        "pentanomial LLR): pairs cancel most of the colour's and the opening's advantage.\n"
        "The same --seed (default 1) replays the same match.\n\n";
    match_config cfg;
    match_config_default(&cfg);
    /* Rows without a default keep match_config_default's values. */
    typedef struct match_opts {
        long games, openings, opening_turns, seed; /* match_config's */
        char sprt[CONFIG_STR_MAX];                 /* ELO0,ELO1[,ALPHA,BETA], "" = none */
        bool quiet;                                /* only the summary */
    } match_opts;
    static const config_option rows[] = {
        {"games", CONFIG_INT, NULL, 1, 10000000, offsetof(match_opts, games), "games to play"},
        {"openings", CONFIG_INT, NULL, 1, MATCH_MAX_OPENINGS, offsetof(match_opts, openings),
         "distinct openings, each played with both colours (a pair); 0 = none"},
        {"opening_turns", CONFIG_INT, NULL, 1, MATCH_MAX_OPENING_TURNS,
         offsetof(match_opts, opening_turns),
         "random turns of an opening; 0 = the fewest that give enough openings"},
        {"seed", CONFIG_INT, NULL, 0, 9007199254740991, offsetof(match_opts, seed),
         "the match's seed: the same seed replays the same match"},
        {"sprt", CONFIG_STRING, "", 0, 0, offsetof(match_opts, sprt),
         "ELO0,ELO1[,ALPHA,BETA]: stop when the GSPRT accepts a hypothesis"},
        {"quiet", CONFIG_BOOL, "false", 0, 0, offsetof(match_opts, quiet),
         "no line per game, only the summary"},
    };
    match_opts o = {.games = cfg.games, .openings = cfg.openings,
                    .opening_turns = cfg.opening_turns, .seed = (long)cfg.seed};
    const char *words[argc];
    size_t nw;
    int rc = kz_parse_args("match", usage_head, rows, sizeof rows / sizeof rows[0], &o, argc, argv,
                           words, (size_t)argc, &nw);
    if (rc == 0)
        fputs(player_spec_help(), stdout);
    if (rc >= 0)
        return rc;
    cfg.games = (int)o.games;
    cfg.openings = (int)o.openings;
    cfg.opening_turns = (int)o.opening_turns;
    cfg.seed = (uint64_t)o.seed;
    if (o.sprt[0] && s_parse_sprt(o.sprt, &cfg) != 0)
        return kz_usage_error("match: --sprt wants ELO0,ELO1[,ALPHA,BETA] with ELO0 < "
                              "ELO1 and ALPHA, BETA in (0, 0.5], not '%s'", o.sprt);
    bool quiet = o.quiet;
    if (nw != 2)
        return kz_usage_error("match: give exactly two players A and B (see kz match --help)");
    const game_def *g = game_default();
    char err[300];
    player *a = player_from_spec(g, words[0], err, sizeof err);
    if (!a)
        return kz_usage_error("match: %s", err);
    player *b = player_from_spec(g, words[1], err, sizeof err);
    if (!b) {
        player_destroy(&a);
        return kz_usage_error("match: %s", err);
    }
    match_cli m = {.g = g, .cfg = &cfg, .a = player_name(a), .b = player_name(b), .quiet = quiet};
    cfg.on_game = s_on_game;
    cfg.ctx = &m;
    int w, d, l, decision;
    double t0 = time_now();
    rc = match_run(g, a, b, &cfg, &w, &d, &l, &decision);
    double dt = time_now() - t0;
    int status = 0;
    if (rc == KZ_EINVAL && cfg.openings > 0 && w + d + l == 0) {
        if (cfg.opening_turns)
            status = kz_usage_error("match: cannot find %d distinct openings of %d random turns; "
                                    "raise --opening-turns", cfg.openings, cfg.opening_turns);
        else
            status = kz_usage_error("match: cannot find %d distinct openings", cfg.openings);
        goto out;
    }
    if (rc != 0) {
        fprintf(stderr, "kz: match: stopped after %d games: %s\n", w + d + l, err_str(rc));
        status = 1;
        goto out;
    }
    match_stats st;
    match_stats_compute(w, d, l, &st);
    char e[32], elo_lo[32], elo_hi[32];
    s_fmt_elo(st.elo, e, sizeof e);
    s_fmt_elo(st.elo_lo, elo_lo, sizeof elo_lo);
    s_fmt_elo(st.elo_hi, elo_hi, sizeof elo_hi);
    printf("result: %s vs %s after %d games (%.1f s)\n", m.a, m.b, st.games, dt);
    printf("  W/D/L: %d/%d/%d\n", w, d, l);
    printf("  score: %.3f +/- %.3f (95%%: %.3f .. %.3f)\n", st.score, MATCH_Z95 * st.sd,
           st.score_lo, st.score_hi);
    printf("  elo: %s (95%%: %s .. %s)\n", e, elo_lo, elo_hi);
    if (cfg.sprt) {
        double llr, lower, upper;
        match_sprt_decide(w, d, l, cfg.elo0, cfg.elo1, cfg.alpha, cfg.beta, &llr);
        match_sprt_bounds(cfg.alpha, cfg.beta, &lower, &upper);
        printf("  sprt: elo0 %g, elo1 %g, alpha %g, beta %g: LLR %.3f in [%.3f, %.3f]: %s\n",
               cfg.elo0, cfg.elo1, cfg.alpha, cfg.beta, llr, lower, upper,
               decision == GATE_ACCEPT   ? "H1 accepted (A is stronger by elo1)"
               : decision == GATE_REJECT ? "H0 accepted (A is not stronger by elo1)"
                                         : "undecided");
    }
    if (cfg.openings > 0)
        s_print_pairs(&m, w + d + l);
out:
    player_destroy(&a);
    player_destroy(&b);
    return status;
}

/* ---- kz analyse ---------------------------------------------------------------------------- */

/* The engine for analyse and play: --player, else mcts:MODEL:SIMS with a
 * model, else uct:SIMS. */
static player *s_engine(const game_def *g, const char *cmd, const char *spec,
                        const char *model_path, long sims, char *err, size_t errlen)
{
    char buf[PLAYER_SPEC_MAX + 32];
    if (!spec) {
        if (model_path)
            snprintf(buf, sizeof buf, "mcts:%s:%ld", model_path, sims > 0 ? sims : 200);
        else
            snprintf(buf, sizeof buf, "uct:%ld", sims > 0 ? sims : 1000);
        spec = buf;
    }
    player *p = player_from_spec(g, spec, err, errlen);
    if (!p)
        kz_usage_error("%s: %s", cmd, err);
    return p;
}

typedef struct engine_opts {
    char model[CONFIG_STR_MAX];    /* --model, "" = none */
    char spec[CONFIG_STR_MAX];     /* --player, "" = none */
    char position[CONFIG_STR_MAX]; /* --position, "" = the start */
    long sims;                     /* --sims, 0 = the engine's default */
    long seed;                     /* --seed */
    char color[CONFIG_STR_MAX];    /* play: --color b|w */
    int color_id;                  /* play: the person's player id */
} engine_opts;

/* The rows of analyse and play (play alone has --color, the last). */
static const config_option s_engine_rows[] = {
    {"model", CONFIG_STRING, "", 0, 0, offsetof(engine_opts, model),
     "the engine is mcts:MODEL:SIMS (a model file or `uniform`)"},
    {"sims", CONFIG_INT, NULL, 1, PLAYER_MAX_PLAYOUTS, offsetof(engine_opts, sims),
     "simulations (mcts) or playouts (uct); 0 = 200 (mcts) or 1000 (uct)"},
    {"player", CONFIG_STRING, "", 0, 0, offsetof(engine_opts, spec),
     "the engine as a player spec (below)"},
    {"position", CONFIG_STRING, "", 0, 0, offsetof(engine_opts, position),
     "start from this position (R20), not the initial one"},
    {"seed", CONFIG_INT, "1", 0, 9007199254740991, offsetof(engine_opts, seed),
     "the engine's seed"},
    {"color", CONFIG_STRING, "b", 0, 0, offsetof(engine_opts, color),
     "your colour: b (black, moves first) or w"},
};

/* Parses the options shared by analyse and play, the other words into
 * words (*nw of them). Returns -1 to go on, else the exit status. */
static int s_engine_opts(int argc, char **argv, const char *usage, bool play, engine_opts *o,
                         const char **words, size_t *nw)
{
    *o = (engine_opts){.sims = 0};
    size_t rows = sizeof s_engine_rows / sizeof s_engine_rows[0] - (play ? 0 : 1);
    int rc = kz_parse_args(argv[0], usage, s_engine_rows, rows, o, argc, argv, words,
                           (size_t)argc, nw);
    if (rc == 0)
        fputs(player_spec_help(), stdout);
    if (rc >= 0)
        return rc;
    if (play) {
        if (!strcmp(o->color, "b") || !strcmp(o->color, "black"))
            o->color_id = 0;
        else if (!strcmp(o->color, "w") || !strcmp(o->color, "white"))
            o->color_id = 1;
        else
            return kz_usage_error("%s: --color must be b or w, not '%s'", argv[0], o->color);
    }
    if (o->spec[0] && (o->model[0] || o->sims))
        return kz_usage_error("%s: give either --player or --model/--sims, not both", argv[0]);
    return -1;
}

int cmd_analyse(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz analyse [--model M] [--sims N] [--player SPEC] [--position P] [--seed S]\n"
        "                  [ACTION ...]\n\n"
        "Plays the ACTIONs (R21) from P (R20; default the start position), then lets the\n"
        "engine decide the next action and prints the board, the chosen action, the\n"
        "value from the mover's view (in [-1, 1]), the work done, and the distribution\n"
        "over the legal actions (visit shares for search players), most visited first.\n"
        "The engine is --player SPEC if given, else mcts:M:N with --model M (N default\n"
        "200; M a model file or `uniform`), else uct:N (pure Monte-Carlo search, N default\n"
        "1000). Search players also show each action's prior and mean value q.\n\n";
    engine_opts o;
    const char *words[argc];
    size_t nw;
    int rc = s_engine_opts(argc, argv, usage, false, &o, words, &nw);
    if (rc >= 0)
        return rc;
    const game_def *g = game_default();
    game_state s;
    rc = kz_setup(g, "analyse", o.position[0] ? o.position : NULL, (int)nw, (char **)words, 0,
                  &s);
    if (rc)
        return rc;
    char err[300];
    player *p = s_engine(g, "analyse", o.spec[0] ? o.spec : NULL, o.model[0] ? o.model : NULL, o.sims, err,
                         sizeof err);
    if (!p)
        return 2;
    player_info *info = xmalloc(sizeof *info);
    int status = 0, action;
    g->render(&s, stdout);
    game_result r = g->result(&s);
    if (r.over) {
        printf("result: %s (%s)\n", s_result_text(g, r), game_reason_name(r.reason));
        goto out;
    }
    player_new_game(p, (uint64_t)o.seed);
    double t0 = time_now();
    rc = player_choose(p, &s, &action, info);
    double dt = time_now() - t0;
    if (rc != 0) {
        fprintf(stderr, "kz: analyse: %s failed: %s\n", player_name(p), err_str(rc));
        status = 1;
        goto out;
    }
    char buf[16];
    g->format_action(action, buf, sizeof buf);
    printf("engine: %s (%s to move)\n", player_name(p), g->player_name(g->to_move(&s)));
    printf("chosen: %s\n", buf);
    if (isnan(info->value))
        printf("value: none (this player does not estimate one)\n");
    else
        printf("value: %+.3f\n", info->value);
    if (info->score)
        printf("score: %+ld (alpha-beta, %d per man)\n", info->score, PLAYER_EVAL_MAN);
    printf("work: %ld in %.3f s\n", info->work, dt);
    /* The legal actions by share, highest first (stable: ascending action on ties). */
    int order[GAME_MAX_LEGAL];
    for (int i = 0; i < info->n; i++)
        order[i] = i;
    for (int i = 1; i < info->n; i++)
        for (int j = i; j > 0 && info->share[order[j]] > info->share[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    bool priors = false, qs = false;
    for (int i = 0; i < info->n; i++) {
        priors |= !isnan(info->prior[i]);
        qs |= !isnan(info->q[i]);
    }
    printf("distribution (%d legal actions): action share%s%s\n", info->n,
           priors ? " prior" : "", qs ? " q (mean value, mover's view)" : "");
    for (int i = 0; i < info->n; i++) {
        int k = order[i];
        char extra[64] = "";
        size_t used = 0;
        if (priors)
            used += (size_t)snprintf(extra, sizeof extra, "  %.3f", info->prior[k]);
        if (qs && !isnan(info->q[k]))
            snprintf(extra + used, sizeof extra - used, "  %+.3f", info->q[k]);
        else if (qs)
            snprintf(extra + used, sizeof extra - used, "  -");
        g->format_action(info->actions[k], buf, sizeof buf);
        printf("  %-7s %.3f%s%s\n", buf, info->share[k], extra,
               info->actions[k] == action ? "  <-" : "");
    }
out:
    free(info);
    player_destroy(&p);
    return status;
}

/* ---- kz play ------------------------------------------------------------------------------- */

/* Reads one line into buf without its newline; false at end of input. Lines
 * longer than the buffer are read whole and cut. */
static bool s_read_line(FILE *in, char *buf, size_t len)
{
    if (!fgets(buf, (int)len, in))
        return false;
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == '\n') {
        buf[n - 1] = '\0';
    } else {
        int ch;
        while ((ch = fgetc(in)) != EOF && ch != '\n')
            ;
    }
    return true;
}

static char *s_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int cmd_play(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz play [--model M] [--sims N] [--player SPEC] [--color b|w]\n"
        "               [--position P] [--seed S]\n\n"
        "Plays a game against the engine in the terminal: you play --color (default b,\n"
        "black, who moves first). Type an action as in R21 (e.g. 7-12; a capture as\n"
        "7x17 or 7-17), one hop at a time: a capture sequence is entered hop by hop, and\n"
        "the board is redrawn after every move. An illegal or unreadable action is refused\n"
        "with the list of legal ones. `moves` lists the legal actions, `quit` (or the end\n"
        "of input) ends the game. The engine is chosen as in kz analyse (default uct:1000,\n"
        "or mcts:M:N with --model M, N from --sims, default 200).\n\n";
    engine_opts o;
    const char *words[argc];
    size_t nw;
    int rc = s_engine_opts(argc, argv, usage, true, &o, words, &nw);
    if (rc >= 0)
        return rc;
    if (nw)
        return kz_usage_error("play: unexpected argument '%s' (see kz play --help)", words[0]);
    const game_def *g = game_default();
    game_state s;
    rc = kz_setup(g, "play", o.position[0] ? o.position : NULL, 0, NULL, 0, &s);
    if (rc)
        return rc;
    char err[300];
    player *p = s_engine(g, "play", o.spec[0] ? o.spec : NULL, o.model[0] ? o.model : NULL, o.sims, err,
                         sizeof err);
    if (!p)
        return 2;
    player_new_game(p, (uint64_t)o.seed);
    const char *you = g->player_name(o.color_id);
    printf("You play %s; the engine (%s) plays %s.\n", you, player_name(p),
           g->player_name(1 - o.color_id));
    g->render(&s, stdout);
    int status = 0;
    game_result r;
    char line[512], list[4096], buf[16];
    while (!(r = g->result(&s)).over) {
        int mover = g->to_move(&s), a;
        if (mover != o.color_id) {
            rc = player_choose(p, &s, &a, NULL);
            if (rc != 0) {
                fprintf(stderr, "kz: play: the engine failed: %s\n", err_str(rc));
                status = 1;
                goto out;
            }
            g->format_action(a, buf, sizeof buf);
            player_observe(p, &s, a);
            g->apply(&s, a);
            printf("engine (%s) plays %s%s\n", g->player_name(mover), buf,
                   g->mid_turn(&s) ? " and captures on" : "");
            if (!g->mid_turn(&s))
                g->render(&s, stdout);
            continue;
        }
        printf("%s%s> ", you, g->mid_turn(&s) ? " (continue the capture)" : "");
        fflush(stdout);
        if (!s_read_line(stdin, line, sizeof line)) {
            printf("\nend of input: game abandoned\n");
            goto out;
        }
        char *t = s_trim(line);
        if (!isatty(fileno(stdin)))
            printf("%s\n", t); /* a transcript reads like a session */
        if (!*t)
            continue;
        s_legal_list(g, &s, list, sizeof list);
        if (!strcmp(t, "quit") || !strcmp(t, "resign")) {
            printf("game abandoned\n");
            goto out;
        }
        if (!strcmp(t, "moves") || !strcmp(t, "?") || !strcmp(t, "help")) {
            printf("legal: %s\n", list);
            continue;
        }
        if (g->parse_action(t, &a) != 0) {
            printf("cannot read '%s' (write src-dst, e.g. 7-12); legal: %s\n", t, list);
            continue;
        }
        if (!g->is_legal(&s, a)) {
            printf("illegal: %s; legal: %s\n", t, list);
            continue;
        }
        player_observe(p, &s, a);
        g->apply(&s, a);
        g->render(&s, stdout);
    }
    printf("result: %s (%s)%s\n", s_result_text(g, r), game_reason_name(r.reason),
           r.winner < 0 ? "" : r.winner == o.color_id ? ": you win" : ": the engine wins");
out:
    player_destroy(&p);
    return status;
}
