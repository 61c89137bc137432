/* test_referee: the perfect-play referee (play/referee.c, `kz solve
 * referee`). Its verdicts are checked against the endgame tables, which are
 * built and proven independently of the proof search:
 * - on the tables' own test positions (exactly one keeping action each), a
 *   game of the keeping turn is judged keeping and a game of any other turn
 *   value-losing, by the search alone and with the tables;
 * - on self-play games of `kz selfplay` from small positions, the real
 *   binary's count of value-losing turns equals the count the test works out
 *   from the tables turn by turn;
 * - a match is judged with both players' turns accounted for, and bad input
 *   gets one line and a non-zero exit;
 * - --match_tables: the tables in a player's search take its value-losing
 *   turns in 4-piece endings to none (alphabeta:1 loses some without);
 * - a winner who lets R13's count run out in an ending is charged the one
 *   turn that threw the win away (the game's own counts), and nothing at a
 *   fresh history (--fresh: the draw is "unconverted"). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/record.h"
#include "games/game.h"
#include "games/khreibaga.h"
#include "games/tablebase.h"
#include "play/referee.h"
#include "tests/harness/harness.h"

TestSuite(referee, .timeout = 600);

static char *s_tables(const char *tag, int pieces)
{
    char *dir = harness_tmpdir(tag);
    cr_assert(dir);
    tb_build_opts o = {.pieces = pieces, .threads = 2, .verify = false};
    char err[512];
    cr_assert_eq(tb_build(dir, &o, err, sizeof err), 0, "tb_build: %s", err);
    return dir;
}

/* Completes the turn begun by `first` from s: the tables' choice at each
 * further hop (any legal hop when they do not say). The actions go to out. */
static int s_turn(const tb_set *t, const game_state *s0, int first, uint16_t *out)
{
    const game_def *g = &khreibaga_game;
    game_state s = *s0;
    int n = 0;
    out[n++] = (uint16_t)first;
    g->apply(&s, first);
    while (g->mid_turn(&s) && !g->result(&s).over) {
        int a;
        if (tb_best_action(t, &s, &a)) {
            uint16_t acts[GAME_MAX_LEGAL];
            cr_assert_gt(g->legal_actions(&s, acts), 0);
            a = acts[0];
        }
        out[n++] = (uint16_t)a;
        g->apply(&s, a);
    }
    return n;
}

Test(referee, judges_the_tables_test_positions_turn_by_turn)
{
    const game_def *g = &khreibaga_game;
    char *dir = s_tables("referee-tb", 4);
    char err[512];
    tb_set *t = tb_open(dir, 4, err, sizeof err);
    cr_assert(t, "%s", err);
    enum { N = 24 };
    game_state pos[N];
    uint16_t keep[N];
    int n = tb_test_positions(t, N, 11, pos, keep);
    cr_assert_eq(n, N);
    for (int with_tables = 0; with_tables < 2; with_tables++) {
        referee_opts ro = {.tables = with_tables ? t : NULL, .nodes = 100000,
                           .tt_bytes = 16u << 20};
        referee *r = referee_new(&ro, err, sizeof err);
        cr_assert(r, "%s", err);
        int judged = 0, losing_games = 0, unknown = 0;
        for (int i = 0; i < n; i++) {
            uint16_t acts[GAME_MAX_LEGAL], turn[32];
            int na = g->legal_actions(&pos[i], acts);
            for (int k = 0; k < na; k++) {
                int len = s_turn(t, &pos[i], acts[k], turn);
                referee_game rg;
                cr_assert_eq(referee_game_judge(r, &pos[i], turn, len, &rg), 0);
                cr_assert_eq(rg.turns, 1);
                int mover = g->to_move(&pos[i]), ph = yard_phase(g, &pos[i]);
                int lose = rg.by[ph][mover][REFEREE_LOSE];
                int kept = rg.by[ph][mover][REFEREE_KEEP];
                cr_assert_eq(rg.inconsistent, 0);
                /* The search alone may leave a turn unknown (a king chasing
                 * two men to a draw: position 0 of this set needs more
                 * than 2 million nodes), never wrong; the tables know all. */
                if (!lose && !kept && !with_tables) {
                    unknown++;
                    continue;
                }
                if (acts[k] == keep[i]) {
                    cr_assert_eq(kept, 1, "position %d, the tables' keeping action %d judged "
                                 "%s (tables %d)", i, acts[k], lose ? "losing" : "unknown",
                                 with_tables);
                } else {
                    cr_assert_eq(lose, 1, "position %d, action %d: the tables say it loses "
                                 "value, the referee %s (tables %d)", i, acts[k],
                                 kept ? "keeps it" : "does not know", with_tables);
                    cr_assert_eq(rg.n_errors, 1);
                    cr_assert_eq(rg.errors[0].side, mover);
                    cr_assert_eq(rg.errors[0].turn, 0);
                    cr_assert_gt(rg.errors[0].before, rg.errors[0].after);
                    losing_games++;
                }
                judged++;
            }
        }
        cr_assert_gt(losing_games, N, "too few losing turns to mean anything");
        cr_assert_lt(unknown * 5, judged, "%d unknown, %d judged", unknown, judged);
        referee_work w;
        referee_get_work(r, &w);
        if (with_tables)
            cr_assert_gt(w.probed, 0);
        else
            cr_assert(w.searched > 0 && w.probed == 0 && w.nodes > 0);
        cr_assert_gt(judged, losing_games);
        referee_destroy(&r);
        cr_assert_null(r);
    }
    referee_destroy(NULL);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* The value of turn start s for its mover as the referee sees it in a game:
 * the tables' at the game's no-progress count (`counts`), or at a fresh
 * history (count 0); R12's ends either way. */
static int s_value_in_game(const tb_set *t, const game_state *s, bool counts)
{
    const game_def *g = &khreibaga_game;
    int side = g->to_move(s);
    game_state fresh;
    khreibaga_set(&fresh, khreibaga_pieces(s, 0), khreibaga_pieces(s, 1), khreibaga_kings(s),
                  side);
    game_result res = g->result(&fresh);
    if (res.over)
        return res.winner == side ? 1 : -1;
    tb_value tv;
    cr_assert_eq(tb_probe(t, &fresh, &tv), 0);
    return counts ? tb_value_at(tv, khreibaga_no_progress(s)) : tv.wdl;
}

/* The tables' count of value-losing turns in a record file's games, and of
 * all turns (see s_value_in_game for `counts`). */
static void s_count(const tb_set *t, const char *path, bool counts, long *turns, long *losing)
{
    const game_def *g = &khreibaga_game;
    char err[512];
    record_file *f;
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    game_record *r = record_new();
    *turns = *losing = 0;
    while (record_file_read(f, r, err, sizeof err) == 0) {
        game_state s;
        if (r->start_position[0])
            cr_assert_eq(g->parse_position(&s, r->start_position, err, sizeof err), 0, "%s",
                         err);
        else
            g->init(&s);
        int before = 0, mover = 0;
        for (int k = 0; k <= r->n_moves; k++) {
            if (!g->mid_turn(&s)) {
                int side = g->to_move(&s);
                int v = s_value_in_game(t, &s, counts);
                if (k > 0) {
                    int after = side == mover ? v : -v;
                    (*turns)++;
                    *losing += after < before;
                }
                before = v;
                mover = side;
            }
            if (k < r->n_moves)
                g->apply(&s, r->moves[k].action);
        }
    }
    record_destroy(&r);
    record_file_close(&f);
}

/* "referee: G games (S skipped), T turns: K keep the value, L lose it, U unknown" */
static void s_summary(const char *out, long *games, long *turns, long *keep, long *lose,
                      long *unknown)
{
    const char *p = strstr(out, "referee: ");
    cr_assert(p, "%s", out);
    long skipped;
    cr_assert_eq(sscanf(p, "referee: %ld games (%ld skipped), %ld turns: %ld keep the value, "
                           "%ld lose it, %ld unknown", games, &skipped, turns, keep, lose,
                        unknown), 6, "%s", p);
    cr_assert_eq(skipped, 0);
    cr_assert_eq(*turns, *keep + *lose + *unknown);
}

Test(referee, kz_solve_referee_counts_what_the_tables_count)
{
    char *dir = s_tables("referee-kz", 4);
    char err[512];
    tb_set *t = tb_open(dir, 4, err, sizeof err);
    cr_assert(t, "%s", err);
    harness_cli c;
    harness_cli_init(&c, "referee-kz");
    /* Small games: a man and a king a side, played by a weak search. */
    const char *starts[] = {"B...........b.......w...W b", "B.....b...........w.....W w"};
    char args[1024], files[256] = "";
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "selfplay --games 4 --sims 4 --seed %d --position '%s' "
                 "--out g%d.rec --quiet", 3 + i, starts[i], i);
        cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
        snprintf(files + strlen(files), sizeof files - strlen(files), " g%d.rec", i);
    }
    long want_turns = 0, lose_fresh = 0, lose_counts = 0;
    for (int i = 0; i < 2; i++) {
        char path[512];
        long tn, ln;
        snprintf(path, sizeof path, "%s/g%d.rec", c.dir, i);
        s_count(t, path, false, &tn, &ln);
        want_turns += tn;
        lose_fresh += ln;
        s_count(t, path, true, &tn, &ln);
        lose_counts += ln;
    }
    cr_assert_gt(lose_fresh, 0, "the weak games made no value-losing turn: the test says "
                 "nothing");
    /* The search alone and the tables at a fresh history: the same
     * verdicts; the tables at the games' own counts (the default): theirs. */
    for (int k = 0; k < 3; k++) {
        long want_lose = k < 2 ? lose_fresh : lose_counts;
        snprintf(args, sizeof args, "solve referee%s --tables '%s' --nodes 300000%s", files,
                 k ? dir : "", k < 2 ? " --fresh" : "");
        cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
        long games, turns, keep, lose, unknown;
        s_summary(c.out, &games, &turns, &keep, &lose, &unknown);
        cr_assert_eq(games, 8, "%s", c.out);
        cr_assert_eq(turns, want_turns, "%s", c.out);
        cr_assert_eq(unknown, 0, "%s", c.out);
        cr_assert_eq(lose, want_lose, "the tables count %ld value-losing turns; %s", want_lose,
                     c.out);
        cr_assert_null(strstr(c.out, "INCONSISTENT"), "%s", c.out);
        cr_assert(strstr(c.out, "ending (<=8)"), "%s", c.out);
        /* Every turn of these games is from 4 pieces or fewer: the ending's
         * "of it <=6 pieces" row holds them all. */
        const char *few = strstr(c.out, "\n    of it <=6 pieces ");
        cr_assert(few, "%s", c.out);
        long ft, fj, fu, fl;
        cr_assert_eq(sscanf(few + strlen("\n    of it <=6 pieces "), "%ld %ld %ld %ld", &ft, &fj,
                            &fu, &fl), 4);
        cr_assert_eq(ft, want_turns, "%s", c.out);
        cr_assert_eq(fl, want_lose, "%s", c.out);
        /* Eight lines, one a game, each naming its file. */
        int lines = 0;
        for (const char *p = c.out; (p = strstr(p, "\ngame ")) != NULL; p++)
            lines++;
        cr_assert_eq(lines + (strncmp(c.out, "game ", 5) == 0), 8, "%s", c.out);
    }
    /* A tiny budget leaves turns unknown, never guessed. */
    cr_assert_eq(harness_cli_kz(&c, "solve referee g0.rec --tables '' --nodes 1 --quiet"), 0,
                 "%s", c.err);
    long games, turns, keep, lose, unknown;
    s_summary(c.out, &games, &turns, &keep, &lose, &unknown);
    cr_assert_gt(unknown, 0, "%s", c.out);
    cr_assert_null(strstr(c.out, "\ngame "), "--quiet: %s", c.out);
    harness_cli_fini(&c);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

static uint64_t s_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The simple king moves of turn start s that keep its mover's fresh-history
 * value (R13's draw at the count of 50 allowed as an end). */
static int s_quiet_keeping(const tb_set *t, const game_state *s, uint16_t *out)
{
    const game_def *g = &khreibaga_game;
    uint16_t acts[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, acts), k = 0;
    int v = s_value_in_game(t, s, false), c = khreibaga_no_progress(s);
    for (int i = 0; i < n; i++) {
        game_state x = *s;
        g->apply(&x, acts[i]);
        if (g->mid_turn(&x) || khreibaga_no_progress(&x) != c + 1)
            continue; /* a capture or a man's move (the count restarts) */
        if (g->result(&x).over ? khreibaga_no_progress(&x) < KH_NO_PROGRESS
                               : -s_value_in_game(t, &x, false) != v)
            continue;
        out[k++] = acts[i];
    }
    return k;
}

/* A game in which the winner lets R13's count run out: from a kings-only
 * ending of at most 4 pieces that the tables call won for its mover, both
 * sides play only simple king moves that keep their fresh-history values,
 * until R13 draws it. Returns its length, 0 when this seed finds none. */
static int s_wandering_game(const tb_set *t, uint64_t *rng, game_state *start, uint16_t *acts)
{
    const game_def *g = &khreibaga_game;
    int nw = 1 + (int)(s_rand(rng) % 3);
    int nb = 1 + (int)(s_rand(rng) % (unsigned)(4 - nw));
    uint32_t b = 0, w = 0;
    for (int i = 0; i < nw + nb; i++) {
        int p;
        do
            p = (int)(s_rand(rng) % 25);
        while (((b | w) >> p) & 1);
        *(i < nw ? &w : &b) |= 1u << p;
    }
    if (khreibaga_set(start, b, w, b | w, (int)(s_rand(rng) % 2)) ||
        g->result(start).over || s_value_in_game(t, start, false) != 1)
        return 0;
    game_state s = *start;
    int n = 0;
    while (!g->result(&s).over) {
        uint16_t c[GAME_MAX_LEGAL], d[GAME_MAX_LEGAL];
        int nc = s_quiet_keeping(t, &s, c), pick = -1;
        /* One whose reply can go on the same way, from a random first. */
        int from = nc ? (int)(s_rand(rng) % (unsigned)nc) : 0;
        for (int j = 0; j < nc && pick < 0; j++) {
            game_state x = s;
            g->apply(&x, c[(from + j) % nc]);
            if (g->result(&x).over || s_quiet_keeping(t, &x, d) > 0)
                pick = (from + j) % nc;
        }
        if (pick < 0)
            return 0;
        acts[n++] = c[pick];
        g->apply(&s, c[pick]);
    }
    return g->result(&s).winner < 0 && khreibaga_no_progress(&s) >= KH_NO_PROGRESS ? n : 0;
}

Test(referee, a_winner_who_lets_the_count_run_out_is_charged)
{
    const game_def *g = &khreibaga_game;
    char *dir = s_tables("referee-r13", 4);
    char err[512];
    tb_set *t = tb_open(dir, 4, err, sizeof err);
    cr_assert(t, "%s", err);
    referee_opts ro[2] = {{.tables = t, .nodes = 10000, .tt_bytes = 16u << 20},
                          {.tables = t, .nodes = 10000, .tt_bytes = 16u << 20, .fresh = true}};
    referee *r[2];
    for (int k = 0; k < 2; k++) {
        r[k] = referee_new(&ro[k], err, sizeof err);
        cr_assert(r[k], "%s", err);
    }
    uint64_t rng = 20261128;
    int games = 0;
    for (int tries = 0; tries < 20000 && games < 4; tries++) {
        game_state start;
        uint16_t acts[KH_NO_PROGRESS + 1];
        int n = s_wandering_game(t, &rng, &start, acts);
        if (!n)
            continue;
        games++;
        int winner = g->to_move(&start);
        /* The turns the tables charge at the game's own counts, by side: the
         * winner's that throw the win away to the count, and the loser's
         * that turn a draw by the count back into a loss. */
        game_state s = start;
        int want[2] = {0, 0}, before = s_value_in_game(t, &s, true), last_drop = -1;
        for (int i = 0; i < n; i++) {
            int m = g->to_move(&s);
            g->apply(&s, acts[i]);
            int after = -s_value_in_game(t, &s, true);
            if (after < before) {
                want[m]++;
                last_drop = m;
            }
            before = -after;
        }
        cr_assert_gt(want[winner], 0, "the tables charge the winner nothing");
        cr_assert_eq(last_drop, winner, "the last value lost was not the winner's");
        referee_game rg;
        cr_assert_eq(referee_game_judge(r[0], &start, acts, n, &rg), 0);
        cr_assert_eq(rg.result.over, true);
        cr_assert_lt(rg.result.winner, 0);
        for (int m = 0; m < 2; m++) {
            int lose = 0;
            for (int ph = 0; ph < YARD_PHASES; ph++)
                lose += rg.by[ph][m][REFEREE_LOSE];
            cr_assert_eq(lose, want[m], "game %d: side %d charged %d turns, the tables %d",
                         games, m, lose, want[m]);
        }
        cr_assert_eq(rg.n_errors, want[0] + want[1]);
        const referee_error *e = &rg.errors[rg.n_errors - 1];
        cr_assert(e->side == winner && e->before == 1 && e->after == 0,
                  "the last error: side %d, %d -> %d", e->side, e->before, e->after);
        cr_assert_eq(rg.inconsistent, 0);
        cr_assert_not(rg.unconverted);
        /* At a fresh history every turn keeps the win: the draw is unconverted. */
        cr_assert_eq(referee_game_judge(r[1], &start, acts, n, &rg), 0);
        cr_assert_eq(rg.n_errors, 0);
        cr_assert(rg.unconverted);
    }
    cr_assert_eq(games, 4, "found %d wandering games", games);
    for (int k = 0; k < 2; k++)
        referee_destroy(&r[k]);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

Test(referee, a_match_is_judged_for_both_players)
{
    harness_cli c;
    harness_cli_init(&c, "referee-match");
    cr_assert_eq(harness_cli_kz(&c, "solve referee --match alphabeta:1,random --games 2 "
                                    "--openings 1 --seed 3 --tables '' --nodes 100000"),
                 0, "%s", c.err);
    long games, turns, keep, lose, unknown;
    s_summary(c.out, &games, &turns, &keep, &lose, &unknown);
    cr_assert_eq(games, 2);
    cr_assert(strstr(c.out, "match alphabeta:1 against random: +"), "%s", c.out);
    /* Each player's own turns add up to all the turns. */
    long sum = 0;
    const char *names[] = {"\n  alphabeta:1 ", "\n  random "};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(c.out, names[i]);
        cr_assert(p, "%s", c.out);
        long pt;
        cr_assert_eq(sscanf(p + strlen(names[i]), "%ld", &pt), 1);
        sum += pt;
    }
    cr_assert_eq(sum, turns, "%s", c.out);
    harness_cli_fini(&c);
}

/* A player's own value-losing turns in the summary's "player" lines. */
static long s_player_losing(const char *out, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", name);
    const char *p = strstr(out, key);
    cr_assert(p, "no line for %s: %s", name, out);
    long turns, judged, unknown, losing;
    cr_assert_eq(sscanf(p + strlen(key), "%ld %ld %ld %ld", &turns, &judged, &unknown, &losing),
                 4, "%s", p);
    cr_assert_gt(judged, 0);
    return losing;
}

Test(referee, tables_in_a_players_search_take_its_ending_errors)
{
    char *dir = s_tables("referee-mt", 4);
    harness_cli c;
    harness_cli_init(&c, "referee-mt");
    char book[600];
    snprintf(book, sizeof book, "%s/b4.txt", c.dir);
    harness_write(book, "# king and man a side\n"
                        "B...........b.......w...W b\nB.....b...........w.....W w\n"
                        "b.....B.....W.....w...... b\n....B.b.....w.W.......... w\n");
    long losing[2];
    for (int k = 0; k < 2; k++) {
        char args[1024];
        snprintf(args, sizeof args, "solve referee --match alphabeta:1,random --match_book "
                 "b4.txt --games 16 --seed 5 --tables %s --match_tables %s --quiet", dir,
                 k ? "a" : "none");
        cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
        losing[k] = s_player_losing(c.out, "alphabeta:1");
    }
    cr_assert_gt(losing[0], 0, "alphabeta:1 lost no value without the tables: the test says "
                 "nothing");
    cr_assert_eq(losing[1], 0, "alphabeta:1 with the tables still lost value %ld times",
                 losing[1]);
    /* Without the referee's tables there are none to give. */
    cr_assert_eq(harness_cli_kz(&c, "solve referee --match alphabeta:1,random --games 2 "
                                    "--tables '' --match_tables a"), 2);
    const char *why = strstr(c.err, "--match_tables needs");
    cr_assert(why && strchr(why, '\n') == c.err + strlen(c.err) - 1, "%s", c.err);
    harness_cli_fini(&c);
    harness_rm_rf(dir);
    free(dir);
}

Test(referee, bad_input_gets_one_line)
{
    harness_cli c;
    harness_cli_init(&c, "referee-bad");
    struct {
        const char *args;
        int code;
        const char *says;
    } cases[] = {
        {"solve referee --tables ''", 2, "give games"},
        {"solve referee nosuch.rec --tables ''", 1, "nosuch.rec"},
        {"solve referee --store nosuch --tables ''", 1, "no store"},
        {"solve referee --match alphabeta:1 --tables ''", 2, "two player specs"},
        {"solve referee --match alphabeta:1,nosuch --tables ''", 2, "nosuch"},
        {"solve referee --store . --kind nosuch", 2, "kind"},
        {"solve referee junk.rec --tables ''", 1, "junk.rec"},
        {"solve accuracy --tables ''", 2, "MODEL"},
        {"solve accuracy --players alphabeta:1, --tables ''", 2, "comma"},
    };
    char path[512];
    snprintf(path, sizeof path, "%s/junk.rec", c.dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("this is not a record file\n", f);
    fclose(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = harness_cli_kz(&c, cases[i].args);
        cr_assert_eq(rc, cases[i].code, "%s: exit %d: %s", cases[i].args, rc, c.err);
        cr_assert(strstr(c.err, cases[i].says), "%s: %s", cases[i].args, c.err);
        const char *nl = strchr(c.err, '\n');
        cr_assert(nl && !nl[1], "%s: not one line: %s", cases[i].args, c.err);
    }
    harness_cli_fini(&c);
}
