/* kz match | analyse | play: players against each other (with the scorer and
 * SPRT of play/match.h), one decision looked at closely, and a person
 * against the engine in the terminal. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "play/engine.h"
#include "games/game.h"
#include "tools/kz/kz.h"
#include "play/match.h"
#include "search/gnubg.h"
#include "search/player.h"
#include "games/tablebase.h"
#include "common/util.h"

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

/* The line "  LABELelo: E (95%: LO .. HI)" of a match's figures. */
static void s_print_elo(const char *label, const match_stats *st)
{
    char e[32], lo[32], hi[32];
    s_fmt_elo(st->elo, e, sizeof e);
    s_fmt_elo(st->elo_lo, lo, sizeof lo);
    s_fmt_elo(st->elo_hi, hi, sizeof hi);
    printf("  %selo: %s (95%%: %s .. %s)\n", label, e, lo, hi);
}

/* ---- kz match ------------------------------------------------------------------------------ */

typedef struct match_cli {
    const game_def *g;      /* the game */
    const match_config *cfg; /* the settings (for SPRT progress) */
    const char *a, *b;      /* player names */
    bool quiet;             /* no per-game lines */
    int prev;               /* A's result in the last even-numbered game (a pair's first) */
    int penta[MATCH_PENTA]; /* completed pairs (games 2j, 2j+1: one opening, both colours) */
    double loss[2];         /* the judge: equity lost by A (0) and B (1) at their decisions */
    int decisions[2];       /* and those decisions */
    match_ratio err[2];     /* per game: A's (0) and B's (1) loss over decisions */
    double race_loss[2];    /* of the loss, in races (no contact) */
    int race_decisions[2];
    long points;            /* a game scored in points (max_points > 1): A's net points */
    double points_sq;       /* and the sum of their squares (the per-game variance) */
    int prev_points;        /* A's net points in the last even-numbered game */
    match_ratio pair_points; /* per completed pair: A's net points over its 2 games */
    uint64_t hash;          /* the game in progress: its start, colours and actions hashed */
    uint64_t *seen;         /* (n_seen) each finished game's hash << 2 | A's result + 1 */
    size_t n_seen, cap_seen;
} match_cli;

/* Hashes every action of a game into m->hash (games that hash alike are the
 * same game played again: players without randomness from one start). */
static void s_on_action(void *ctx, int game, const game_state *s, int action)
{
    (void)game;
    (void)s;
    match_cli *m = ctx;
    m->hash = mix64(m->hash ^ (uint64_t)(uint32_t)action) + 0x9e3779b97f4a7c15ull;
}

static void s_on_game(void *ctx, const match_game *gm, int w, int d, int l)
{
    match_cli *m = ctx;
    if (m->n_seen == m->cap_seen) {
        m->cap_seen = m->cap_seen ? 2 * m->cap_seen : 256;
        uint64_t *t = realloc(m->seen, m->cap_seen * sizeof *t);
        KZ_CHECK(t != NULL);
        m->seen = t;
    }
    uint64_t start = (uint64_t)(gm->opening + 2) << 1 | (uint64_t)gm->a_player;
    uint64_t key = mix64(m->hash ^ mix64(start));
    m->seen[m->n_seen++] = key << 2 | (uint64_t)(gm->a_result + 1);
    m->hash = 0;
    int pts = gm->result.winner < 0 ? 0 : gm->result.points > 0 ? gm->result.points : 1;
    m->points += gm->a_result * pts;
    m->points_sq += (double)pts * pts * (gm->a_result != 0);
    if (gm->index % 2 == 0)
        m->prev_points = gm->a_result * pts;
    else
        match_ratio_add(&m->pair_points, m->prev_points + gm->a_result * pts, 2);
    for (int p = 0; p < 2; p++) { /* player id p was A when p == a_player */
        int side = p == gm->a_player ? 0 : 1;
        m->loss[side] += gm->loss[p];
        m->decisions[side] += gm->decisions[p];
        m->race_loss[side] += gm->race_loss[p];
        m->race_decisions[side] += gm->race_decisions[p];
        if (gm->decisions[p])
            match_ratio_add(&m->err[side], gm->loss[p], gm->decisions[p]);
    }
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
           game_reason_name(m->g, gm->result.reason), gm->plies, w, d, l, llr);
    fflush(stdout);
}

/* The pentanomial lines of the result, over the completed pairs of `games` games. */
static void s_print_pairs(const match_cli *m, int games)
{
    const int *p = m->penta;
    const match_config *cfg = m->cfg;
    match_stats st;
    match_penta_stats(p, &st);
    char odd[64] = "";
    if (games % 2)
        snprintf(odd, sizeof odd, "; game %d has no partner and is left out", games);
    printf("  pairs: %d (LL/LD/DD+WL/WD/WW: %d/%d/%d/%d/%d)%s\n", st.games / 2, p[0], p[1], p[2],
           p[3], p[4], odd);
    printf("  pair score: %.3f +/- %.3f (95%%: %.3f .. %.3f)\n", st.score, MATCH_Z95 * st.sd,
           st.score_lo, st.score_hi);
    s_print_elo("pair ", &st);
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

static int s_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Games played more than once (the same start, colours and every action)
 * are one game, not independent ones: when some were, a warning and the
 * figures over the distinct games, each counted once. */
static void s_print_distinct(match_cli *m, int games)
{
    qsort(m->seen, m->n_seen, sizeof *m->seen, s_cmp_u64);
    int n = 0, w = 0, d = 0, l = 0;
    for (size_t i = 0; i < m->n_seen; i++) {
        if (i && m->seen[i] >> 2 == m->seen[i - 1] >> 2)
            continue;
        int r = (int)(m->seen[i] & 3) - 1;
        n++;
        w += r > 0;
        d += r == 0;
        l += r < 0;
    }
    if (n >= games)
        return;
    fprintf(stderr, "kz: match: warning: only %d of the %d games differ: the same players "
                    "from the same start replay the same games, which are not independent; "
                    "the distinct games' figures follow (give --openings K for K distinct "
                    "starts)\n", n, games);
    match_stats st;
    match_stats_compute(w, d, l, &st);
    printf("  distinct games: %d of %d (W/D/L %d/%d/%d): the intervals above count repeats "
           "as independent games; over the distinct games:\n", n, games, w, d, l);
    printf("  distinct score: %.3f +/- %.3f (95%%: %.3f .. %.3f)\n", st.score, MATCH_Z95 * st.sd,
           st.score_lo, st.score_hi);
    s_print_elo("distinct ", &st);
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
        "usage: kz match A B [--game G] [--games N] [--openings K] [--opening_turns T]\n"
        "                    [--book F] [--seed S] [--sprt ELO0,ELO1[,ALPHA,BETA]] [--quiet]\n"
        "                    [--tb_dir D [--tb_players P]]\n\n"
        "Plays N games (default 100) of player A against player B with alternating\n"
        "colours (A is black in games 1, 3, ...). The games start from K distinct positions\n"
        "(--openings, default N/2; 0: every game from the start, where players without\n"
        "randomness replay the same two games) reached by T random turns (default: the\n"
        "fewest turns that give K distinct positions), or the first K of a --book file\n"
        "(kz yardstick book's balanced openings), each played once with each colour.\n"
        "Games played again move for move are not independent: when there are some, a\n"
        "warning and the score and Elo over the distinct games (each counted once) follow.\n"
        "Prints a line per game, then from A's view: wins, draws, losses, the score with its\n"
        "95% interval (trinomial variance), the logistic Elo difference with its interval, and\n"
        "with --sprt the log-likelihood ratio (GSPRT as fishtest; H0: Elo = ELO0, H1: Elo =\n"
        "ELO1, alpha and beta default 0.05), stopping as soon as it accepts one hypothesis.\n"
        "With openings, games 2j-1 and 2j (one opening, both colours) also form a pair,\n"
        "and the same figures follow for the pairs (pentanomial: LL/LD/DD+WL/WD/WW counts,\n"
        "the score with its interval from the pair variance, its Elo, and with --sprt the\n"
        "pentanomial LLR): pairs cancel most of the colour's and the opening's advantage.\n"
        "In a game with dice (backgammon) the two games of a pair have the same dice\n"
        "(duplicate dice), so they form a pair from the start position too, and the points\n"
        "per game follow with their interval over the pairs.\n"
        "The same --seed (default 1) replays the same match. --tb_dir gives the endgame\n"
        "tables (docs/tablebase.md) to the searches of A, B or both (--tb_players):\n"
        "mcts and gumbel players value the leaves they cover exactly, alphabeta and\n"
        "greedy their nodes.\n\n";
    match_config cfg;
    match_config_default(&cfg);
    gnubg *judge = NULL; /* --judge: gnubg rating the moves (backgammon) */
    /* Rows without a default keep match_config_default's values. */
    typedef struct match_opts {
        long games, openings, opening_turns, seed; /* match_config's */
        char sprt[CONFIG_STR_MAX];                 /* ELO0,ELO1[,ALPHA,BETA], "" = none */
        bool quiet;                                /* only the summary */
        char tb_dir[CONFIG_STR_MAX];               /* endgame tables, "" = none */
        char tb_players[CONFIG_STR_MAX];           /* a, b or both */
        char judge[CONFIG_STR_MAX];                /* backgammon: gnubg's level, "" = none */
        char game[CONFIG_STR_MAX];                 /* the game */
        char book[CONFIG_STR_MAX];                 /* openings from this book file, "" = random */
    } match_opts;
#define CONFIG_STRUCT match_opts
    static const config_option rows[] = {
        KZ_GAME_OPTION(match_opts, game),
        CONFIG_ROW_INT(games, NULL, 1, 10000000, "games to play"),
        CONFIG_ROW_INT(openings, NULL, 0, MATCH_MAX_OPENINGS,
                       "distinct openings, each played with both colours (a pair); 0 = none, "
                       "every game from the start; default: games / 2"),
        CONFIG_ROW_INT(opening_turns, NULL, 1, MATCH_MAX_OPENING_TURNS,
                       "random turns of an opening; 0 = the fewest that give enough openings"),
        CONFIG_ROW_STRING(book, "",
                          "the openings from this book file (kz yardstick book: one position a "
                          "line), its first K; \"\" = K random openings"),
        CONFIG_ROW_INT(seed, NULL, 0, 9007199254740991,
                       "the match's seed: the same seed replays the same match"),
        CONFIG_ROW_STRING(sprt, "",
                          "ELO0,ELO1[,ALPHA,BETA]: stop when the GSPRT accepts a hypothesis"),
        CONFIG_ROW_BOOL(quiet, "false", "no line per game, only the summary"),
        CONFIG_ROW_STRING(tb_dir, "",
                          "endgame tables for the players' searches (kz tb build); \"\" = none"),
        CONFIG_ROW_STRING(tb_players, "both", "who searches with the tables: a, b or both"),
        CONFIG_ROW_STRING(judge, "",
                          "backgammon: gnubg at this level (e.g. expert) rates every move: each "
                          "side's error rate (equity lost per decision, millipoints) and PR; \"\" "
                          "= none"),
    };
#undef CONFIG_STRUCT
    match_opts o = {.games = cfg.games, .openings = -1,
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
    /* Openings by default: from the start position, players without randomness
     * replay the same two games, which the interval would count as independent. */
    cfg.openings = o.openings >= 0 ? (int)o.openings : cfg.games >= 2 ? cfg.games / 2 : 0;
    if (cfg.openings > MATCH_MAX_OPENINGS)
        cfg.openings = MATCH_MAX_OPENINGS;
    cfg.opening_turns = (int)o.opening_turns;
    cfg.seed = (uint64_t)o.seed;
    if (o.sprt[0] && s_parse_sprt(o.sprt, &cfg) != 0)
        return kz_usage_error("match: --sprt wants ELO0,ELO1[,ALPHA,BETA] with ELO0 < "
                              "ELO1 and ALPHA, BETA in (0, 0.5], not '%s'", o.sprt);
    bool quiet = o.quiet;
    if (nw != 2)
        return kz_usage_error("match: give exactly two players A and B (see kz match --help)");
    const game_def *g = kz_game("match", o.game);
    if (!g)
        return 2;
    game_state *book = NULL; /* --book's openings */
    if (o.book[0]) {
        int nb;
        if (kz_read_book("match", g, o.book, &book, &nb))
            return 2;
        if (o.openings > nb) {
            free(book);
            return kz_usage_error("match: --openings %ld: the book %s holds %d", o.openings,
                                  o.book, nb);
        }
        if (o.openings < 0) /* the default: games / 2, at most the book's */
            cfg.openings = cfg.openings < nb ? cfg.openings : nb;
        if (cfg.openings == 0) {
            free(book);
            return kz_usage_error("match: --book with --openings 0 plays no opening");
        }
        cfg.book = book;
    }
    char err[300];
    player *a = player_from_spec(g, words[0], err, sizeof err);
    if (!a) {
        free(book);
        return kz_usage_error("match: %s", err);
    }
    player *b = player_from_spec(g, words[1], err, sizeof err);
    if (!b) {
        player_destroy(&a);
        free(book);
        return kz_usage_error("match: %s", err);
    }
    tb_set *tb = NULL;
    if (o.tb_dir[0]) {
        bool ta = !strcmp(o.tb_players, "a") || !strcmp(o.tb_players, "both");
        bool tbb = !strcmp(o.tb_players, "b") || !strcmp(o.tb_players, "both");
        char terr[512];
        int bad = 0;
        if (!ta && !tbb)
            bad = kz_usage_error("match: --tb_players is a, b or both, not '%s'", o.tb_players);
        else if (g != tb_game())
            bad = kz_usage_error("match: --tb_dir: the endgame tables are %s's, not %s's",
                                 tb_game()->name, g->name);
        else if (!(tb = tb_open(o.tb_dir, 0, terr, sizeof terr)))
            bad = kz_usage_error("match: %s", terr);
        if (bad) {
            player_destroy(&a);
            player_destroy(&b);
            free(book);
            return bad;
        }
        game_oracle o_tb = tb_oracle(tb);
        if (ta)
            player_set_oracle(a, &o_tb);
        if (tbb)
            player_set_oracle(b, &o_tb);
    }
    if (o.judge[0]) {
        if (gnubg_open(&judge, o.judge, 120, err, sizeof err)) {
            player_destroy(&a);
            player_destroy(&b);
            tb_close(&tb);
            free(book);
            return kz_usage_error("match: --judge: %s", err);
        }
        cfg.judge = judge;
    }
    match_cli m = {.g = g, .cfg = &cfg, .a = player_spec_name(a), .b = player_spec_name(b), .quiet = quiet};
    cfg.on_game = s_on_game;
    cfg.on_action = s_on_action;
    cfg.ctx = &m;
    int w, d, l, decision;
    double t0 = time_now();
    rc = match_run(g, a, b, &cfg, &w, &d, &l, &decision);
    double dt = time_now() - t0;
    int status = 0;
    if (rc == KZ_EINVAL && cfg.openings > 0 && w + d + l == 0) {
        if (cfg.opening_turns)
            status = kz_usage_error("match: cannot find %d distinct openings of %d random turns; "
                                    "raise --opening_turns", cfg.openings, cfg.opening_turns);
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
    printf("result: %s vs %s after %d games (%.1f s)\n", m.a, m.b, st.games, dt);
    printf("  W/D/L: %d/%d/%d\n", w, d, l);
    for (int side = 0; judge && side < 2; side++) {
        /* gnubg's error rate: equity lost per decision (a roll with a choice), in
         * millipoints; PR (eXtreme Gammon's convention) 500 x that loss. */
        double mean, half;
        match_ratio_stats(&m.err[side], &mean, &half);
        printf("  gnubg %s judge: %s lost %.1f +/- %.1f millipoints per decision over %d "
               "decisions (PR %.1f +/- %.1f)\n", o.judge, side ? m.b : m.a, 1000 * mean,
               1000 * half, m.decisions[side], 500 * mean, 500 * half);
        if (m.decisions[side])
            printf("    of them in races (no contact): %d decisions, %.1f millipoints each, "
                   "%.0f%% of the loss\n", m.race_decisions[side],
                   m.race_decisions[side] ? 1000 * m.race_loss[side] / m.race_decisions[side]
                                          : 0.0,
                   m.loss[side] > 0 ? 100 * m.race_loss[side] / m.loss[side] : 0.0);
    }
    if (g->max_points > 1 && st.games > 0) {
        /* Points per game (backgammon's 1/2/3), A's view, with its 95% interval. */
        double mean = (double)m.points / st.games;
        double var = st.games > 1 ? (m.points_sq - st.games * mean * mean) / (st.games - 1) : 0;
        printf("  points: A %+ld over %d games: %+.3f per game +/- %.3f\n", m.points, st.games,
               mean, MATCH_Z95 * sqrt(var > 0 ? var / st.games : 0));
        if (g->is_chance && m.pair_points.n >= 2) { /* the pairs' duplicate dice */
            double ppg, half;
            match_ratio_stats(&m.pair_points, &ppg, &half);
            printf("  points over the %d pairs (duplicate dice): %+.3f per game +/- %.3f\n",
                   m.pair_points.n, ppg, half);
        }
    }
    printf("  score: %.3f +/- %.3f (95%%: %.3f .. %.3f)\n", st.score, MATCH_Z95 * st.sd,
           st.score_lo, st.score_hi);
    s_print_elo("", &st);
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
    if (cfg.openings > 0 || g->is_chance) /* pairs: one opening, or the same dice */
        s_print_pairs(&m, w + d + l);
    s_print_distinct(&m, w + d + l);
out:
    free(m.seen);
    free(book);
    player_destroy(&a);
    player_destroy(&b);
    gnubg_close(judge);
    tb_close(&tb);
    return status;
}

/* ---- kz analyse ---------------------------------------------------------------------------- */

typedef struct engine_opts {
    char game[CONFIG_STR_MAX];     /* --game */
    char model[CONFIG_STR_MAX];    /* --model, "" = none */
    char spec[CONFIG_STR_MAX];     /* --player, "" = none */
    char position[CONFIG_STR_MAX]; /* --position, "" = the start */
    long sims;                     /* --sims, 0 = the engine's default */
    long seed;                     /* --seed */
    char tb_dir[CONFIG_STR_MAX];   /* --tb_dir, "" = none */
    bool json;                     /* analyse: --json */
    char color[CONFIG_STR_MAX];    /* play: --color, a player's name or letter */
    int color_id;                  /* play: the person's player id */
    const game_def *g;             /* the game (s_engine_opts's) */
} engine_opts;

/* The rows of analyse and play (analyse alone has --json, play alone --color). */
#define CONFIG_STRUCT engine_opts
static const config_option s_engine_rows[] = {
    KZ_GAME_OPTION(engine_opts, game),
    CONFIG_ROW_STRING(model, "", "the engine is mcts:MODEL:SIMS (a model file or `uniform`)"),
    CONFIG_ROW_INT(sims, NULL, 1, PLAYER_MAX_PLAYOUTS,
                   "simulations (mcts) or playouts (uct); 0 = the game's (mcts) or 1000 (uct)"),
    {"player", CONFIG_STRING, "", 0, 0, offsetof(engine_opts, spec),
     "the engine as a player spec (below)"},
    CONFIG_ROW_STRING(position, "", "start from this position (R20), not the initial one"),
    CONFIG_ROW_INT(seed, "1", 0, 9007199254740991, "the engine's seed"),
    CONFIG_ROW_STRING(tb_dir, "",
                      "endgame tables (kz tb build; Khreibaga): a position they cover is "
                      "answered by them (their best action, the exact value), and the search "
                      "values the positions below it that they cover exactly; \"\" = none"),
    CONFIG_ROW_BOOL(json, "false",
                    "print the answer of the play page's GET /api/analyse instead (docs/web.md)"),
    CONFIG_ROW_STRING(color, "",
                      "your side: a player's name or its first letter (Khreibaga: b, black, moves "
                      "first; w, white); \"\" = the first player"),
};
#undef CONFIG_STRUCT
#define N_ENGINE_ROWS (sizeof s_engine_rows / sizeof s_engine_rows[0])

/* Parses the options of analyse (all rows but --color) or play (all but
 * --json), the other words into words (*nw of them). Returns -1 to go on,
 * else the exit status. */
static int s_engine_opts(int argc, char **argv, const char *usage, bool play, engine_opts *o,
                         const char **words, size_t *nw)
{
    *o = (engine_opts){.sims = 0};
    config_option rows[N_ENGINE_ROWS];
    size_t n = 0;
    for (size_t i = 0; i < N_ENGINE_ROWS; i++)
        if (strcmp(s_engine_rows[i].name, play ? "json" : "color"))
            rows[n++] = s_engine_rows[i];
    int rc = kz_parse_args(argv[0], usage, rows, n, o, argc, argv, words, (size_t)argc, nw);
    if (rc == 0)
        fputs(player_spec_help(), stdout);
    if (rc >= 0)
        return rc;
    const game_def *g = o->g = kz_game_of_model(argv[0], o->game, sizeof o->game, o->model);
    if (!g)
        return 2;
    if (play) {
        o->color_id = -1;
        for (int p = 0; p < 2; p++) {
            const char *name = g->player_name(p);
            if (!o->color[0] ? p == 0
                             : !strcmp(o->color, name) || (!o->color[1] && o->color[0] == name[0]))
                o->color_id = p;
        }
        if (o->color_id < 0)
            return kz_usage_error("%s: --color must be %s or %s (or %c, %c), not '%s'", argv[0],
                                  g->player_name(0), g->player_name(1), g->player_name(0)[0],
                                  g->player_name(1)[0], o->color);
    }
    if (o->spec[0] && (o->model[0] || o->sims))
        return kz_usage_error("%s: give either --player or --model/--sims, not both", argv[0]);
    if (o->model[0] && o->sims > PLAYER_MAX_SIMS)
        return kz_usage_error("%s: --sims with a model is at most %d", argv[0], PLAYER_MAX_SIMS);
    return -1;
}

/* The engine of analyse and play (engine.h, the play page's): --player SPEC,
 * else mcts over --model with --sims (default: the game's), else uct:SIMS
 * (default 1000). NULL after a one-line error. */
static engine *s_engine(const game_def *g, const char *cmd, const engine_opts *o)
{
    engine_config c;
    engine_config_default(&c);
    char spec[64];
    if (o->spec[0]) {
        c.spec = o->spec;
    } else if (o->model[0]) {
        c.model = o->model;
        c.sims = o->sims > 0 ? (int)o->sims : g->simulations;
        c.max_sims = PLAYER_MAX_SIMS;
    } else {
        snprintf(spec, sizeof spec, "uct:%ld", o->sims > 0 ? o->sims : 1000);
        c.spec = spec;
    }
    c.tb_dir = o->tb_dir;
    char err[700];
    engine *e = engine_new(g, &c, err, sizeof err);
    if (!e)
        kz_usage_error("%s: %s", cmd, err);
    return e;
}

/* The start of analyse and play (argv[0]): the options (s_engine_opts), the
 * position (--position, then analyse's actions, the words) in *s and the
 * engine (s_engine) in *e. Returns -1 to go on, else the exit status. */
static int s_engine_start(int argc, char **argv, const char *usage, bool play, engine_opts *o,
                          const char **words, size_t *nw, game_state *s, engine **e)
{
    int rc = s_engine_opts(argc, argv, usage, play, o, words, nw);
    if (rc >= 0)
        return rc;
    if (play && *nw)
        return kz_usage_error("play: unexpected argument '%s' (see kz play --help)", words[0]);
    rc = kz_setup(o->g, argv[0], o->position[0] ? o->position : NULL, play ? 0 : (int)*nw,
                  (char **)words, 0, s);
    if (rc)
        return rc;
    *e = s_engine(o->g, argv[0], o);
    return *e ? -1 : 2;
}

/* Prints an analysis: the chosen action, value, work, and the legal actions
 * by share (with prior and q for search players). */
static void s_print_analysis(const game_def *g, const game_state *s, const engine_analysis *an)
{
    const player_info *info = &an->info;
    char buf[16];
    engine_format_action(g, s, info->action, buf, sizeof buf);
    printf("engine: %s (%s to move)\n", an->player, g->player_name(g->to_move(s)));
    printf("chosen: %s%s%s\n", buf, an->forced ? " (the only legal action)" : "",
           an->tables ? " (the endgame tables' best)" : "");
    if (isnan(info->value))
        printf("value: none (this player does not estimate one)\n");
    else if (an->tables)
        printf("value: %+.3f (exact: the endgame tables; q is each action's exact result)\n",
               info->value);
    else
        printf("value: %+.3f%s\n", info->value, an->forced ? " (after the forced actions)" : "");
    if (info->score)
        printf("score: %+ld (alpha-beta, 100 per man)\n", info->score);
    printf("work: %ld in %.3f s\n", info->work, an->seconds);
    bool priors = false, qs = false;
    for (int i = 0; i < info->n; i++) {
        priors |= !isnan(info->prior[i]);
        qs |= !isnan(info->q[i]);
    }
    printf("distribution (%d legal action%s): action share%s%s\n", info->n, info->n == 1 ? "" : "s",
           priors ? " prior" : "", qs ? " q (mean value, mover's view)" : "");
    for (int i = 0; i < info->n; i++) {
        int k = an->order[i];
        char extra[64] = "";
        size_t used = 0;
        if (priors)
            used += (size_t)snprintf(extra, sizeof extra, "  %.3f", info->prior[k]);
        if (qs && !isnan(info->q[k]))
            snprintf(extra + used, sizeof extra - used, "  %+.3f", info->q[k]);
        else if (qs)
            snprintf(extra + used, sizeof extra - used, "  -");
        engine_format_action(g, s, info->actions[k], buf, sizeof buf);
        printf("  %-7s %.3f%s%s\n", buf, info->share[k], extra,
               info->actions[k] == info->action ? "  <-" : "");
    }
}

int cmd_analyse(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz analyse [--game G] [--model M] [--sims N] [--player SPEC] [--position P]\n"
        "                  [--seed S] [--tb_dir D] [--json] [ACTION ...]\n\n"
        "Plays the ACTIONs (R21) from P (R20; default the start position), then lets the\n"
        "engine decide the next action and prints the board, the chosen action, the\n"
        "value from the mover's view (in [-1, 1]), the work done, and the distribution\n"
        "over the legal actions (visit shares for search players), most visited first;\n"
        "a capture is written with x. The engine is the play page's (engine.h): --player\n"
        "SPEC if given, else mcts:M:N with --model M (N default the game's, 200 for\n"
        "Khreibaga; M a model file or `uniform`), else uct:N (pure Monte-Carlo search,\n"
        "N default 1000). Search players\n"
        "also show each action's prior and mean value q. With one legal action the value\n"
        "is the one after the forced actions. --tb_dir D gives the engine the endgame\n"
        "tables of D (Khreibaga, kz tb build): a position they cover is answered by them\n"
        "without a search (their best action, the exact value; docs/tablebase.md). --json\n"
        "prints what GET /api/analyse answers (the same engine, the same JSON:\n"
        "docs/web.md).\n\n";
    engine_opts o;
    const char *words[argc];
    size_t nw;
    game_state s;
    engine *e;
    int rc = s_engine_start(argc, argv, usage, false, &o, words, &nw, &s, &e);
    if (rc >= 0)
        return rc;
    const game_def *g = o.g;
    int status = 0;
    if (o.json) {
        /* The page's request: position, moves, sims. */
        size_t cap = 16;
        for (size_t i = 0; i < nw; i++)
            cap += strlen(words[i]) + 1;
        char *moves = xmalloc(cap), sims[32];
        moves[0] = 0;
        for (size_t i = 0; i < nw; i++)
            snprintf(moves + strlen(moves), cap - strlen(moves), "%s%s", i ? "," : "", words[i]);
        engine_args a = {0};
        engine_args_add(&a, "position", o.position);
        engine_args_add(&a, "moves", moves);
        if (o.model[0] && o.sims) {
            snprintf(sims, sizeof sims, "%ld", o.sims);
            engine_args_add(&a, "sims", sims);
        }
        engine_reply r;
        engine_request(e, g, "GET", "analyse", &a, &r);
        fputs(r.body, r.code == 200 ? stdout : stderr);
        status = r.code == 200 ? 0 : r.code == 400 ? 2 : 1;
        engine_reply_free(&r);
        free(moves);
        engine_destroy(&e);
        return status;
    }
    g->render(&s, stdout);
    game_result r = g->result(&s);
    if (r.over) {
        printf("result: %s (%s)\n", s_result_text(g, r), game_reason_name(g, r.reason));
        engine_destroy(&e);
        return 0;
    }
    engine_analysis *an = xmalloc(sizeof *an);
    rc = engine_analyse(e, &s, 0, (uint64_t)o.seed, an);
    if (rc != 0) {
        fprintf(stderr, "kz: analyse: the engine failed: %s\n", err_str(rc));
        status = 1;
    } else {
        s_print_analysis(g, &s, an);
    }
    free(an);
    engine_destroy(&e);
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

/* Writes the legal actions of s (captures with x), space-separated. */
static void s_legal_list(const game_def *g, const game_state *s, char *buf, size_t len)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[16];
        engine_format_action(g, s, legal[i], a, sizeof a);
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", a);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}

/* The game of kz play: the start, the actions, and who played them. */
typedef struct play_game {
    game_state start;        /* the start */
    int n;                   /* actions played */
    uint16_t *actions;       /* (cap) */
    int cap;                 /* allocated */
} play_game;

/* The state after the first k actions. */
static void s_state_at(const game_def *g, const play_game *pg, int k, game_state *s)
{
    g->copy(s, &pg->start);
    for (int i = 0; i < k; i++)
        g->apply(s, pg->actions[i]);
}

static void s_push(play_game *pg, int action)
{
    if (pg->n == pg->cap) {
        pg->cap = pg->cap ? 2 * pg->cap : 256;
        pg->actions = realloc(pg->actions, (size_t)pg->cap * sizeof *pg->actions);
        KZ_CHECK(pg->actions != NULL);
    }
    pg->actions[pg->n++] = (uint16_t)action;
}

/* Draws the board of the play: the game's render_turn with the last turn
 * (from its start on) marked, else its plain render. */
static void s_draw(const game_def *g, const play_game *pg, bool turned)
{
    game_state s;
    int lo = pg->n;
    if (pg->n) {
        for (lo = pg->n - 1; lo > 0; lo--) {
            s_state_at(g, pg, lo, &s);
            if (!g->mid_turn(&s))
                break;
        }
    }
    s_state_at(g, pg, g->render_turn ? lo : pg->n, &s);
    if (g->render_turn)
        g->render_turn(&s, pg->actions + lo, pg->n - lo, turned, stdout);
    else
        g->render(&s, stdout);
}

static const char s_play_help[] =
    "Commands:\n"
    "  SRC-DST    move a piece, e.g. 7-12 (the points are numbered on the board)\n"
    "  SRCxDST    capture, e.g. 7x17 (- works too); a capture sequence is entered\n"
    "             hop by hop: after each hop the same piece goes on while it can\n"
    "  moves, ?   the legal actions here\n"
    "  hint       the engine's top moves here with their visit shares and values\n"
    "  undo       take back your last move (and the engine's reply)\n"
    "  board      draw the board again\n"
    "  flip       turn the board around\n"
    "  help       this text\n"
    "  quit       end the game (also: resign, the end of input)\n";

int cmd_play(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz play [--game G] [--model M] [--sims N] [--player SPEC] [--color C]\n"
        "               [--position P] [--seed S] [--tb_dir D]\n\n"
        "Plays a game against the engine in the terminal: you play --color (default the\n"
        "first player, Khreibaga's b, black; as the second the board is turned, your\n"
        "side at the bottom).\n"
        "Type an action as in R21 (e.g. 7-12; a capture as 7x17), one hop at a time: a\n"
        "capture sequence is entered hop by hop; the board is redrawn after every move\n"
        "with the last move marked. `help` lists the commands: moves, hint (the engine's\n"
        "top moves), undo, board, flip, quit. An illegal or unreadable action is refused\n"
        "with the list of legal ones. The engine is chosen as in kz analyse (default\n"
        "uct:1000, or mcts:M:N with --model M, N from --sims, default the game's); with\n"
        "--tb_dir D it plays the endgame tables' best action where they cover the position.\n\n";
    engine_opts o;
    const char *words[argc];
    size_t nw;
    play_game pg = {0};
    engine *e;
    int rc = s_engine_start(argc, argv, usage, true, &o, words, &nw, &pg.start, &e);
    if (rc >= 0)
        return rc;
    const game_def *g = o.g;
    engine_analysis *an = xmalloc(sizeof *an);
    const char *you = g->player_name(o.color_id);
    bool turned = o.color_id == 1;
    bool echo = !isatty(fileno(stdin)); /* a transcript reads like a session */
    char name[PLAYER_SPEC_MAX + 32];
    if (o.spec[0])
        snprintf(name, sizeof name, "%s", o.spec);
    else if (o.model[0])
        snprintf(name, sizeof name, "mcts:%s:%ld", o.model, o.sims > 0 ? o.sims : g->simulations);
    else
        snprintf(name, sizeof name, "uct:%ld", o.sims > 0 ? o.sims : 1000);
    printf("You play %s; the engine (%s) plays %s. Type help for the commands.\n", you, name,
           g->player_name(1 - o.color_id));
    s_draw(g, &pg, turned);
    int status = 0;
    game_result r;
    char line[512], list[4096], buf[16];
    game_state s;
    rng_t dice; /* a game with chance: the dice from --seed (game.h) */
    game_dice_seed(&dice, (uint64_t)o.seed);
    for (;;) {
        s_state_at(g, &pg, pg.n, &s);
        if ((r = g->result(&s)).over)
            break;
        int mover = g->to_move(&s), a;
        if (g->is_chance && g->is_chance(&s)) {
            a = game_chance_draw(g, &s, &dice);
            g->format_action(a, buf, sizeof buf);
            s_push(&pg, a);
            g->apply(&s, a);
            if (g->is_chance(&s))
                printf("%s rolls %s: no move\n", g->player_name(mover), buf);
            else
                printf("%s rolls %s\n", g->player_name(g->to_move(&s)), buf);
            continue;
        }
        if (mover != o.color_id) {
            rc = engine_analyse(e, &s, 0, (uint64_t)o.seed + (uint64_t)pg.n, an);
            if (rc != 0) {
                fprintf(stderr, "kz: play: the engine failed: %s\n", err_str(rc));
                status = 1;
                goto out;
            }
            a = an->info.action;
            engine_format_action(g, &s, a, buf, sizeof buf);
            s_push(&pg, a);
            g->apply(&s, a);
            printf("engine (%s) plays %s%s%s\n", g->player_name(mover), buf,
                   g->mid_turn(&s) ? " and " : "",
                   g->mid_turn(&s) ? (g->mid_turn_verb ? g->mid_turn_verb : "captures on") : "");
            if (!g->mid_turn(&s))
                s_draw(g, &pg, turned);
            continue;
        }
        printf("%s%s> ", you,
               !g->mid_turn(&s) ? "" : g->mid_turn_verb ? " (your turn goes on)"
                                                        : " (continue the capture)");
        fflush(stdout);
        if (!s_read_line(stdin, line, sizeof line)) {
            printf("\nend of input: game abandoned\n");
            goto out;
        }
        char *t = s_trim(line);
        if (echo)
            printf("%s\n", t);
        if (!*t)
            continue;
        s_legal_list(g, &s, list, sizeof list);
        if (!strcmp(t, "quit") || !strcmp(t, "resign") || !strcmp(t, "q")) {
            printf("game abandoned\n");
            goto out;
        }
        if (!strcmp(t, "help") || !strcmp(t, "h")) {
            fputs(s_play_help, stdout);
            if (g->legend)
                fputs(g->legend, stdout);
            continue;
        }
        if (!strcmp(t, "moves") || !strcmp(t, "?")) {
            printf("legal: %s\n", list);
            continue;
        }
        if (!strcmp(t, "board")) {
            s_draw(g, &pg, turned);
            continue;
        }
        if (!strcmp(t, "flip")) {
            turned = !turned;
            s_draw(g, &pg, turned);
            continue;
        }
        if (!strcmp(t, "hint")) {
            rc = engine_analyse(e, &s, 0, (uint64_t)o.seed + (uint64_t)pg.n, an);
            if (rc != 0) {
                printf("no hint: the engine failed: %s\n", err_str(rc));
                continue;
            }
            char value[32] = "unknown";
            if (!isnan(an->info.value))
                snprintf(value, sizeof value, "%+.2f", an->info.value);
            printf("hint (%s): your value %s; top moves:", an->player, value);
            for (int i = 0; i < an->info.n && i < 5; i++) {
                int k = an->order[i];
                engine_format_action(g, &s, an->info.actions[k], buf, sizeof buf);
                printf(" %s %.0f%%", buf, 100.0 * an->info.share[k]);
                if (!isnan(an->info.q[k]))
                    printf(" (%+.2f)", an->info.q[k]);
            }
            printf("\n");
            continue;
        }
        if (!strcmp(t, "undo")) {
            /* Back to the start of your last turn: the last action played
             * by you at a turn start. */
            int k = -1;
            game_state u;
            for (int i = pg.n - 1; i >= 0 && k < 0; i--) {
                s_state_at(g, &pg, i, &u);
                if (g->to_move(&u) == o.color_id && !g->mid_turn(&u))
                    k = i;
            }
            if (k < 0) {
                printf("nothing to undo: you have not moved yet\n");
                continue;
            }
            printf("took back %d action%s\n", pg.n - k, pg.n - k == 1 ? "" : "s");
            pg.n = k;
            s_draw(g, &pg, turned);
            continue;
        }
        if (g->parse_action(t, &a) != 0) {
            printf("cannot read '%s' (write src-dst, e.g. 7-12, or 7x17 for a capture; help "
                   "lists the commands); legal: %s\n", t, list);
            continue;
        }
        if (!game_is_legal(g, &s, a)) {
            printf("illegal: %s; legal: %s\n", t, list);
            continue;
        }
        s_push(&pg, a);
        g->apply(&s, a);
        if (g->mid_turn(&s)) {
            s_legal_list(g, &s, list, sizeof list);
            printf("you capture on: go on with the same piece (%s)\n", list);
        }
        s_draw(g, &pg, turned);
    }
    printf("result: %s (%s)%s\n", s_result_text(g, r), game_reason_name(g, r.reason),
           r.winner < 0 ? "" : r.winner == o.color_id ? ": you win" : ": the engine wins");
out:
    free(an);
    free(pg.actions);
    engine_destroy(&e);
    return status;
}
