/* Every built-in game in the browser, drawn from its own description: for
 * each game, the real `kz serve --game G` and headless Chromium. A person
 * (the second player, so the engine moves first and the board starts
 * turned) plays a whole game by clicking the points of each action on the
 * board (every intermediate point must show the next as a target); the
 * sides offered are the game's players; the pieces are drawn in their
 * player's colour and there is a click target for every point of the
 * position; the finished game is saved, then replayed in the viewer step by
 * step, each step drawing as many pieces as its position holds.
 * Screenshots: build/play-G.png and build/viewer-G.png (docs/img/). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/record.h"
#include "games/backgammon.h"
#include "games/game.h"
#include "tests/harness/browser.h"
#include "tests/harness/harness.h"

TestSuite(web_games, .fini = harness_cleanup, .timeout = 600);

/* kz serve for game g with the uniform network; its port once /healthz answers. */
static int s_serve(harness *h, proc *p, const game_def *g)
{
    int port = tcp_free_port();
    cr_assert(port > 0);
    char kz[512], a_port[32], a_game[64], a_rec[300], log[300];
    harness_bin(kz, sizeof kz, "kz");
    snprintf(a_port, sizeof a_port, "--port=%d", port);
    snprintf(a_game, sizeof a_game, "--game=%s", g->name);
    snprintf(a_rec, sizeof a_rec, "--records=%s/play.kzr", h->dir);
    snprintf(log, sizeof log, "%s/serve.log", h->dir);
    char *argv[] = {kz, "serve", a_port, a_game, a_rec, "--sims=2", "--model=uniform", NULL};
    cr_assert_eq(proc_start(p, "kz-serve", NULL, log, argv), 0);
    for (double end = harness_now() + 20; harness_now() < end; harness_sleep_ms(20))
        if (harness_http(port, "/healthz", NULL, 0) == 200)
            return port;
    cr_assert_fail("kz serve did not answer /healthz: %s", proc_log_tail(p, 2000));
    return 0;
}

/* The value of an expression (JSON text; caller frees). */
static char *s_eval(browser *b, const char *expr)
{
    char *v = browser_eval(b, expr);
    cr_assert_not_null(v, "%s: %s (errors: %s)", expr, browser_last_error(b), browser_errors(b));
    return v;
}
static long s_num(browser *b, const char *expr)
{
    char *v = s_eval(b, expr);
    long n = atol(v[0] == '"' ? v + 1 : v);
    free(v);
    return n;
}

/* Waits until the page waits for the person or the game is over; true for
 * the person's turn. */
static bool s_wait_person(browser *b)
{
    cr_assert(browser_wait(b, "(function () { var e = document.getElementById('board');"
                              " return (e.getAttribute('data-turn') === 'human' ||"
                              " e.getAttribute('data-turn') === 'over') &&"
                              " e.getAttribute('data-busy') === '0'; })()", 60),
              "the page never waited for the person: %s; errors: %s", browser_last_error(b),
              browser_errors(b));
    char *v = s_eval(b, "document.getElementById('board').getAttribute('data-turn')");
    bool human = !strcmp(v, "\"human\"");
    free(v);
    return human;
}

/* Occupied points of a position string whose first field has one character
 * per point ('.' empty); -1 when the field is not n characters long. */
static int s_occupied(const char *pos, int n)
{
    const char *sp = strchr(pos, ' ');
    if (!sp || sp - pos != n)
        return -1;
    int k = 0;
    for (int i = 0; i < n; i++)
        k += pos[i] != '.';
    return k;
}

/* Backgammon (a position string of a Position ID, B17): what the board must
 * show, as the page's pieces say it (BG_DRAWN): per place of the description
 * (0-23 white's points 1-24, 24 and 25 the bars, 26 and 27 the borne-off
 * trays) the count and the side's character, "" when empty, comma-separated,
 * then '|' and the dice drawn (the roll, a double's four). Into buf; the
 * number of places with checkers. */
static int s_bg_expected(const char *pos, char *buf, size_t len)
{
    uint8_t own[25], opp[25];
    char err[200];
    cr_assert_eq(backgammon_parse_id(pos, own, opp, err, sizeof err), 0, "%s", err);
    const char *rest = pos + 14;
    while (*rest == ' ')
        rest++;
    char dice[8] = "";
    if (rest[0] >= '1' && rest[0] <= '6' && rest[1] >= '1' && rest[1] <= '6') {
        snprintf(dice, sizeof dice, "%c%c", rest[0], rest[1]);
        if (rest[0] == rest[1])
            snprintf(dice, sizeof dice, "%c%c%c%c", rest[0], rest[0], rest[0], rest[0]);
    }
    const char *side = strrchr(pos, ' ');
    int on = side && !strcmp(side, " b"); /* the side on roll: own */
    int count[28] = {0};
    char who[28] = {0};
    for (int k = 0; k < 2; k++) {
        int p = k ? 1 - on : on, total = 0;
        const uint8_t *c = k ? opp : own;
        for (int i = 0; i < 25; i++) {
            int q = i == 24 ? 24 + p : p ? 23 - i : i;
            count[q] += c[i];
            who[q] = c[i] ? (p ? 'b' : 'w') : who[q];
            total += c[i];
        }
        count[26 + p] = BG_CHECKERS - total;
        who[26 + p] = p ? 'b' : 'w';
    }
    size_t n = 0;
    int places = 0;
    buf[0] = 0;
    for (int q = 0; q < 28; q++) {
        if (count[q]) {
            n += (size_t)snprintf(buf + n, len - n, "%s%d%c", q ? "," : "", count[q], who[q]);
            places++;
        } else {
            n += (size_t)snprintf(buf + n, len - n, "%s", q ? "," : "");
        }
    }
    snprintf(buf + n, len - n, "|%s", dice);
    return places;
}
static const char *const BG_DRAWN =
    "(function () { var o = []; for (var i = 0; i < 28; i++) o.push('');"
    " document.querySelectorAll('#board > circle.piece').forEach(function (c) {"
    "  o[+c.getAttribute('data-sq')] = c.getAttribute('data-count') +"
    "   c.getAttribute('class').split(' ')[1]; });"
    " return o.join(',') + '|' + Array.prototype.map.call(document.querySelectorAll("
    "  '#board rect.die'), function (d) { return d.getAttribute('data-value'); }).join(''); })()";

/* Pieces drawn on the board (not the faded ones taken). */
static const char *const PIECES = "document.querySelectorAll('#board > circle.piece').length";

/* Every piece drawn in its player's colour (fill, or the stroke of a ring):
 * the characters of the ones that are not ("" when all are). */
static const char *const WRONG_COLOURS =
    "(function () { var bad = [];"
    " document.querySelectorAll('#board > circle.piece').forEach(function (c) {"
    "  var ch = c.getAttribute('class').split(' ')[1], pc = P.game.pieces[ch];"
    "  var want = pc ? P.game.colour(pc.player) : null;"
    "  if (!pc || (c.getAttribute('fill') !== want && c.getAttribute('stroke') !== want))"
    "   bad.push(ch); });"
    " return bad.join(','); })()";

/* The colours the pieces on the board are drawn in (a ring's is its stroke). */
static const char *const BOTH_COLOURS =
    "new Set(Array.prototype.map.call(document.querySelectorAll('#board > circle.piece'),"
    " function (c) { var f = c.getAttribute('fill');"
    "  return f === 'none' ? c.getAttribute('stroke') : f; })).size";

/* The pieces drawn beside the board in its tallies (docs/web.md: Yinsh's
 * rings removed), per player: "n0,n1" ("" when the game has no tallies). */
static const char *const TALLIED =
    "(function () { var t = V.game && game.view.board.tallies; if (!t) return '';"
    " return [0, 1].map(function (p) { return document.querySelectorAll("
    "  '#board .tally .tallied[data-player=\"' + p + '\"]').length; }).join(','); })()";

/* What the tallies must show for position pos: the digits of the field
 * named `field` (its index among the fields after the board: k), "n0,n1". */
static void s_tally_want(const char *pos, int k, char *out, size_t len)
{
    const char *f = pos;
    for (int i = 0; i <= k && f; i++) {
        f = strchr(f, ' ');
        f = f ? f + 1 : NULL;
    }
    cr_assert(f && f[0] >= '0' && f[0] <= '9' && f[1] >= '0' && f[1] <= '9',
              "field %d of %s is two digits", k, pos);
    snprintf(out, len, "\"%c,%c\"", f[0], f[1]);
}

/* One action of the person, chosen with rng among the legal ones: its points
 * clicked in order (those already picked skipped), each intermediate one
 * showing the next as a target. */
static void s_person_action(browser *b, rng_t *rng, int *hops, int *choices)
{
    long n = s_num(b, "P.state.legal.length");
    cr_assert(n > 0);
    long k = (long)rng_below(rng, (uint32_t)n);
    char expr[300];
    snprintf(expr, sizeof expr,
             "(function () { var a = P.game.parseAction(P.state.legal[%ld].action,"
             " P.state.to_move);"
             " return a.points ? a.points.join(' ') : ''; })()", k);
    char *pts = s_eval(b, expr);
    int p[64], np = 0, used;
    for (const char *s = pts + 1; np < 64 && sscanf(s, "%d%n", &p[np], &used) == 1; s += used)
        np++;
    free(pts);
    long before = s_num(b, "+document.getElementById('board').getAttribute('data-moves')");
    snprintf(expr, sizeof expr, "P.state.legal[%ld].action", k);
    char *action = s_eval(b, expr);
    char sel[128];
    if (!np) {
        /* An action that is not points on the board: its button. */
        snprintf(expr, sizeof expr, "P.state.legal[%ld].action", k);
        char *a = s_eval(b, expr);
        snprintf(sel, sizeof sel, "#others button[data-action=%s]", a);
        cr_assert(!strchr(a, '/'), "an action on the board offered as a button: %s", a);
        free(a);
        cr_assert_eq(browser_click(b, sel), 0, "%s", browser_last_error(b));
    } else {
        int first = (int)s_num(b, "P.clicks.length");
        for (int i = 0; i < first && i < np; i++)
            cr_assert_eq(s_num(b, "P.clicks[0]"), p[0], "the piece that must go on is picked");
        for (int i = first; i < np; i++) {
            snprintf(sel, sizeof sel, "#board .pt[data-sq=\"%d\"]", p[i]);
            cr_assert_eq(browser_click(b, sel), 0, "%s", browser_last_error(b));
            if (i + 1 < np) {
                snprintf(expr, sizeof expr,
                         "document.querySelector('#board .target[data-sq=\"%d\"]') !== null",
                         p[i + 1]);
                cr_assert(browser_wait(b, expr, 10), "no target on point %d after a click on %d",
                          p[i + 1], p[i]);
            }
        }
        /* Points that spell several actions (a checker borne off with either
         * die): the page asks which, with a button for each. */
        if (s_num(b, "P.choice ? P.choice.length : 0") > 1) {
            snprintf(sel, sizeof sel, "#others button.action[data-action=%s]", action);
            cr_assert_eq(browser_click(b, sel), 0, "%s", browser_last_error(b));
            (*choices)++;
        }
    }
    free(action);
    snprintf(expr, sizeof expr,
             "+document.getElementById('board').getAttribute('data-moves') > %ld", before);
    cr_assert(browser_wait(b, expr, 30), "the action was not played: %s", browser_errors(b));
    (*hops)++;
}

static void s_game_in_chromium(const game_def *g)
{
    harness h;
    harness_init(&h, "web-games");
    proc p;
    int port = s_serve(&h, &p, g);
    char why[300], url[300], expr[400], shot[600];
    browser *b = browser_start(h.dir, 1200, 900, why, sizeof why);
    cr_assert_not_null(b, "%s", why);

    /* The second player: the engine moves first. */
    /* A game with dice: the seed they are rolled from (the same game each run). */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/play?colour=%s%s", port, g->player_name(1),
             g->is_chance ? "&seed=2b" : "");
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "P.state !== null", 20), "%s", browser_errors(b));
    char *v = s_eval(b, "Array.prototype.map.call(document.querySelectorAll('#colour option'),"
                        " function (o) { return o.value; }).join(',')");
    char want[80];
    snprintf(want, sizeof want, "\"%s,%s\"", g->player_name(0), g->player_name(1));
    cr_assert_str_eq(v, want, "the sides offered are the game's players");
    free(v);
    v = s_eval(b, "document.getElementById('colour').value");
    snprintf(want, sizeof want, "\"%s\"", g->player_name(1));
    cr_assert_str_eq(v, want);
    free(v);
    /* A click target per point of the position, the pieces in their colours. */
    game_state s;
    g->init(&s);
    char pos[GAME_POSITION_CHARS + 1];
    g->format_position(&s, pos, sizeof pos);
    long points = s_num(b, "document.querySelectorAll('#board .pt').length");
    bool bg = g == &backgammon_game;
    char want_bg[400];
    int occupied = bg ? s_bg_expected(pos, want_bg, sizeof want_bg) : s_occupied(pos, (int)points);
    cr_assert(occupied >= 0, "%ld points drawn for the position %s", points, pos);
    cr_assert(s_wait_person(b), "the engine moved first and the person is to move");
    long turned = s_num(b, "P.game.bottom !== 1 ? 1 : 0");
    cr_assert_eq(s_num(b, "document.getElementById('board').getAttribute('data-flip')"), turned,
                 "turned when the person's side is at the top");
    v = s_eval(b, WRONG_COLOURS);
    cr_assert_str_eq(v, "\"\"", "pieces drawn in the wrong colour: %s", v);
    free(v);
    if (occupied)
        cr_assert_geq(s_num(b, BOTH_COLOURS), 2, "both sides' colours drawn");

    /* The whole game by clicks; the screenshot 6 actions in, and again at
     * 16 when the board starts empty (Yinsh's rings placed first). */
    rng_t rng;
    rng_seed(&rng, 27);
    int hops = 0, choices = 0;
    while (s_wait_person(b)) {
        if (g->is_chance) {
            /* The dice are the server's: never a button; the board shows the
             * position the server sent, checker by checker, and its dice. */
            cr_assert_eq(s_num(b, "document.querySelectorAll('#others button').length"), 0,
                         "a button for the person at a game with dice");
            char *at = s_eval(b, "P.state.position");
            at[strlen(at) - 1] = 0;
            s_bg_expected(at + 1, want_bg, sizeof want_bg);
            v = s_eval(b, BG_DRAWN);
            cr_assert(!strncmp(v + 1, want_bg, strlen(want_bg)) && v[strlen(want_bg) + 1] == '"',
                      "%s drawn as %s, not %s", at + 1, v, want_bg);
            free(v);
            free(at);
        }
        s_person_action(b, &rng, &hops, &choices);
        if (hops == 6 || (!occupied && hops == 16)) {
            v = s_eval(b, WRONG_COLOURS);
            cr_assert_str_eq(v, "\"\"", "pieces drawn in the wrong colour: %s", v);
            free(v);
            cr_assert_geq(s_num(b, BOTH_COLOURS), 2, "both sides' colours drawn");
            snprintf(shot, sizeof shot, "%s/play-%s.png", harness_bin_dir(), g->name);
            cr_assert_eq(browser_screenshot(b, shot), 0, "%s", browser_last_error(b));
        }
    }
    cr_assert(hops >= 3, "a whole game: %d actions of the person", hops);
    cr_log_info("%s: a whole game, %d actions of the person (%d chosen by a button)", g->name,
                hops, choices);
    if (g->is_chance) {
        v = s_eval(b, "P.state.seed");
        cr_assert_str_eq(v, "\"000000000000002b\"", "the dice rolled from the page's seed: %s", v);
        free(v);
        /* This seed's game bears checkers off where either die would do. */
        cr_assert(choices > 0, "the page never asked which die");
    }
    cr_assert(browser_wait(b, "document.getElementById('saved').textContent.indexOf("
                              "'Saved as game 1') === 0", 20),
              "not saved: %s", browser_errors(b));
    long actions = s_num(b, "P.moves.length");
    v = s_eval(b, "document.getElementById('status').textContent");
    cr_assert(strstr(v, "win") || strstr(v, "Draw"), "%s", v);
    free(v);
    cr_assert_str_eq(browser_errors(b), "", "script errors");

    /* The saved record, replayed through the rules. */
    char path[400], err[200];
    snprintf(path, sizeof path, "%s/play.kzr", h.dir);
    record_file *f;
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    game_record *r = record_new();
    cr_assert_eq(record_file_read(f, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(record_validate(g, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r->n_moves, actions);
    cr_assert_eq(r->candidate_player, 0, "the engine played the first side");
    record_file_close(&f);

    /* The viewer: the saved game step by step, each step's pieces drawn. */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/viewer?saved=1", port);
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "V.game !== null && document.getElementById('board')"
                              ".getAttribute('data-step') === '0'", 20),
              "the viewer did not open the saved game: %s", browser_errors(b));
    cr_assert_eq(s_num(b, "V.game.moves.length"), actions);
    g->init(&s);
    long tally_field =
        s_num(b, "(function () { var t = game.view.board.tallies;"
                 " return t ? game.view.position.fields.indexOf(t.field) : -1; })()");
    int tallied_max = 0;
    for (int k = 0; k <= r->n_moves; k++) {
        if (k) {
            cr_assert_eq(browser_click(b, "#next"), 0, "%s", browser_last_error(b));
            snprintf(expr, sizeof expr,
                     "document.getElementById('board').getAttribute('data-step') === '%d'", k);
            cr_assert(browser_wait(b, expr, 10), "step %d not shown", k);
            g->apply(&s, r->moves[k - 1].action);
        }
        g->format_position(&s, pos, sizeof pos);
        if (bg) {
            s_bg_expected(pos, want_bg, sizeof want_bg);
            v = s_eval(b, BG_DRAWN);
            cr_assert(!strncmp(v + 1, want_bg, strlen(want_bg)) && v[strlen(want_bg) + 1] == '"',
                      "step %d: %s drawn as %s, not %s", k, pos, v, want_bg);
            free(v);
        } else {
            cr_assert_eq(s_num(b, PIECES), s_occupied(pos, (int)points),
                         "step %d: the pieces of %s", k, pos);
        }
        if (tally_field >= 0) {
            char tw[16];
            s_tally_want(pos, (int)tally_field, tw, sizeof tw);
            v = s_eval(b, TALLIED);
            cr_assert_str_eq(v, tw, "step %d: the pieces beside the board for %s", k, pos);
            free(v);
            tallied_max = tw[1] - '0' > tallied_max ? tw[1] - '0' : tallied_max;
            tallied_max = tw[3] - '0' > tallied_max ? tw[3] - '0' : tallied_max;
        }
        if (k == r->n_moves / 2) {
            free(s_eval(b, "document.getElementById('game').scrollIntoView(), 1"));
            snprintf(shot, sizeof shot, "%s/viewer-%s.png", harness_bin_dir(), g->name);
            cr_assert_eq(browser_screenshot(b, shot), 0, "%s", browser_last_error(b));
        }
    }
    if (tally_field >= 0)
        cr_log_info("%s: at most %d pieces beside the board per player", g->name, tallied_max);
    v = s_eval(b, "document.getElementById('result-line').textContent");
    cr_assert(strstr(v, "after"), "%s", v);
    free(v);
    cr_assert_str_eq(browser_errors(b), "", "script errors");
    record_destroy(&r);
    browser_stop(&b);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* One test per built-in game (its index in game_builtin). */
ParameterizedTestParameters(web_games, every_game_played_by_clicks_and_replayed_in_chromium)
{
    static int idx[GAME_MAX_GAMES];
    for (int i = 0; i < game_n_builtin && i < GAME_MAX_GAMES; i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, (size_t)game_n_builtin);
}

ParameterizedTest(int *i, web_games, every_game_played_by_clicks_and_replayed_in_chromium)
{
    if (!browser_path())
        cr_skip_test("no Chromium here (apt-get install chromium): the games are not tested "
                     "in a browser");
    const game_def *g = game_builtin[*i];
    if (!g->describe)
        cr_skip_test("%s has no description for the pages yet (game_def.describe, docs/web.md): "
                     "it is not drawn in the browser", g->name);
    s_game_in_chromium(g);
}

/* The description's forms no built-in game uses yet, drawn by the real
 * board.js in Chromium from made-up descriptions: a backgammon-like board
 * (triangles as shapes, stacks in "counts", a "dice" field, a "roll" action
 * that is no point) and a Yinsh-like one (rings and markers on points joined
 * by lines, single-point actions, and the forms Yinsh's description uses:
 * a prefix, pieces taken as any that leave a point, flipped markers, the
 * path of moves only, tallies beside the board, what each action says). */
Test(web_games, descriptions_of_stacks_dice_rings_and_markers_draw)
{
    if (!browser_path())
        cr_skip_test("no Chromium here (apt-get install chromium)");
    harness h;
    harness_init(&h, "web-forms");
    proc p;
    int port = s_serve(&h, &p, game_default());
    char why[300], url[200];
    browser *b = browser_start(h.dir, 1000, 800, why, sizeof why);
    cr_assert_not_null(b, "%s", why);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/play", port);
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "typeof KZ === 'object' && P.game !== null", 20), "%s",
              browser_errors(b));
    /* Backgammon-like: 4 points (two triangles, bar, off), 5 white on 0, 2
     * black on 1, dice 3 and 5. */
    char *v = s_eval(b,
        "(function () {"
        " var d = {players: [{name: 'white', colour: '#f4f1ea'}, {name: 'black', colour:"
         " '#222222'}],"
        "  board: {points: [[0.5, 0.5, '1'], [1.5, 0.5, '2'], [2.5, 0.5, 'bar'], [3.5, 0.5,"
         " 'off']],"
        "   lines: [], shapes: [{poly: [0, 0, 1, 0, 0.5, 3], fill: '#a33'},"
        "   {poly: [1, 0, 2, 0, 1.5, 3], fill: '#eee'}], bottom: 0},"
        "  pieces: {w: {player: 0, kind: 'checker'}, b: {player: 1, kind: 'checker'}},"
        "  position: {board: 'counts', fields: ['side', 'dice']},"
        "  actions: {separators: '/', capture: '*'}};"
        " var g = new KZ.Game(d), svg = document.createElementNS('http://www.w3.org/2000/svg',"
         " 'svg');"
        " document.body.appendChild(svg);"
        " new KZ.Board(svg, g, null).draw('5w,2b,, w 35', {});"
        " var a = g.parseAction('1/2'), r = g.parseAction('roll');"
        " return [svg.querySelectorAll('circle.piece').length,"
         " svg.querySelector('text.count').textContent,"
        "  svg.querySelectorAll('rect.die').length, svg.querySelectorAll('polygon.shape').length,"
        "  a.points.join('-'), r.points === null, g.board('5w,2b,, w 35').join('|')].join(' ');"
        "})()");
    cr_assert_str_eq(v, "\"2 5 2 2 0-1 true wwwww|bb||\"", "counts, dice, shapes, actions: %s",
                     v);
    free(v);
    /* Yinsh-like: three points on a line, a ring and a marker of each side. */
    v = s_eval(b,
        "(function () {"
        " var d = {players: [{name: 'white', colour: '#fafafa'}, {name: 'black', colour:"
         " '#222222'}],"
        "  board: {points: [[0, 0, 'a1'], [1, 0.5, 'a2'], [2, 1, 'a3']], lines: [[0, 1], [1, 2]],"
        "   bottom: 0}, pieces: {R: {player: 0, kind: 'ring'}, M: {player: 0, kind: 'marker'},"
        "   r: {player: 1, kind: 'ring'}, m: {player: 1, kind: 'marker'}},"
        "  position: {board: 'chars', empty: '.', fields: ['side']},"
        "  actions: {separators: '-', capture: 'x'}};"
        " var g = new KZ.Game(d), svg = document.createElementNS('http://www.w3.org/2000/svg',"
         " 'svg');"
        " document.body.appendChild(svg);"
        " new KZ.Board(svg, g, null).draw('RMr w', {});"
        " var ring = svg.querySelector('circle.piece.R'), mk = svg.querySelector('circle.piece.M');"
        " return [svg.querySelectorAll('circle.piece').length, svg.querySelectorAll('line').length,"
        "  ring.getAttribute('fill'), ring.getAttribute('stroke'), mk.getAttribute('fill'),"
        "  g.parseAction('a2').points.join(','), g.parseAction('a1-a3').points.join(',')].join('"
         " ');"
        "})()");
    cr_assert_str_eq(v, "\"3 2 none #fafafa #fafafa 1 0,2\"", "rings, markers, lines, actions: %s",
                     v);
    free(v);
    /* Yinsh's forms: a prefix (xa1: one point), a row a1:a3 taken and a
     * marker flipped ("taken": "any"), the path of "-" actions only, the
     * rings removed as tallies, what each form of action says. */
    v = s_eval(b,
        "(function () {"
        " var d = {players: [{name: 'white', colour: '#fafafa'}, {name: 'black', colour:"
         " '#222222'}],"
        "  board: {points: [[0, 0, 'a1'], [1, 0, 'a2'], [2, 0, 'a3'], [3, 0, 'a4']],"
        "   lines: [[0, 1], [1, 2], [2, 3]], bottom: 0, tallies: {field: 'removed',"
        "   pieces: ['R', 'r'], slots: 2, at: [[0, 2, 1, 0], [3, -2, -1, 0]]}},"
        "  pieces: {R: {player: 0, kind: 'ring'}, M: {player: 0, kind: 'marker'},"
        "   r: {player: 1, kind: 'ring'}, m: {player: 1, kind: 'marker'}},"
        "  position: {board: 'chars', empty: '.', fields: ['side', 'removed']},"
        "  actions: {separators: '-:', prefixes: 'x', capture: ':', path: '-', taken: 'any',"
        "   says: {'': 'place', '-': 'move', ':': 'row', x: 'ring'}}};"
        " var g = new KZ.Game(d), svg = document.createElementNS('http://www.w3.org/2000/svg',"
         " 'svg');"
        " document.body.appendChild(svg);"
        " var moves = [{action: 'a1-a3', mover: 'white', ply: 4},"
        "  {action: 'a1:a2', mover: 'white', ply: 4}, {action: 'xa3', mover: 'white', ply: 4}];"
        " var pos = ['Rm.. w 00', 'MMR. w 00', '..R. w 00', '.... b 10'];"
        " var m1 = KZ.turnMarks(g, moves, pos, 0, 0), m3 = KZ.turnMarks(g, moves, pos, 0, 2);"
        " new KZ.Board(svg, g, null).draw(pos[3], m3);"
        " return [g.parseAction('xa1').points.join(','), g.parseAction('a2:a4').capture,"
        "  m1.path.join(','), m1.flipped.join(','), m1.captured.length, m3.path.join(','),"
        "  m3.captured.map(function (c) { return c.sq + c.piece; }).join(','),"
        "  svg.querySelectorAll('.tally .slot').length,"
        "  svg.querySelectorAll('.tally .tallied').length,"
        "  svg.querySelectorAll(':scope > circle.piece').length,"
        "  ['a2', 'a1-a2', 'a1:a3', 'xa1', 'pass'].map(function (a) {"
        "   return KZ.actionSays(g, a); }).join('/'),"
        "  KZ.chained(g, moves, 0, 2)].join(' ');"
        "})()");
    cr_assert_str_eq(v, "\"0 true 0,2 1 0 0,2 0M,1M,2R 4 1 0 place/move/row/ring/ false\"",
                     "prefixes, pieces taken and flipped, tallies, says: %s", v);
    free(v);
    cr_assert_str_eq(browser_errors(b), "", "script errors");
    browser_stop(&b);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* Yinsh's removals by clicks on the real page: a row of five due for the
 * person (White's f3-f7, made by Black's last move) clicked from its far
 * end, then one of the person's rings taken with one click: the status says
 * what is due, the row's both ends are offered, the ring removal targets are
 * red, the six pieces taken are crossed out, the tally shows the ring, the
 * move list writes the turn as two actions. */
Test(web_games, yinsh_row_clicked_from_either_end_and_a_ring_removed)
{
    if (!browser_path())
        cr_skip_test("no Chromium here (apt-get install chromium)");
    harness h;
    harness_init(&h, "web-yinsh");
    proc p;
    int port = s_serve(&h, &p, game_find("yinsh"));
    char why[300], url[400], expr[300];
    browser *b = browser_start(h.dir, 1200, 900, why, sizeof why);
    cr_assert_not_null(b, "%s", why);
    snprintf(url, sizeof url,
             "http://127.0.0.1:%d/play?colour=white&position=W..WB.....B................."
             "B..........wwwww..W...........................B.....BW..W%%20w%%2000%%20row%%20-",
             port);
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "P.state !== null", 20), "%s", browser_errors(b));
    cr_assert(s_wait_person(b));
    char *v = s_eval(b, "document.getElementById('status').textContent");
    cr_assert(strstr(v, "remove a row of five of your markers"), "%s", v);
    free(v);
    long f3 = s_num(b, "P.game.byLabel.f3"), f7 = s_num(b, "P.game.byLabel.f7");
    snprintf(expr, sizeof expr,
             "document.querySelectorAll('#board .movable[data-sq=\"%ld\"], "
             "#board .movable[data-sq=\"%ld\"]').length", f3, f7);
    cr_assert_eq(s_num(b, expr), 2, "both ends of the row offered");
    snprintf(expr, sizeof expr, "#board .pt[data-sq=\"%ld\"]", f7);
    cr_assert_eq(browser_click(b, expr), 0, "%s", browser_last_error(b));
    snprintf(expr, sizeof expr, "document.querySelector('#board .target.capture[data-sq=\"%ld\"]')"
                                " !== null", f3);
    cr_assert(browser_wait(b, expr, 10), "f3 is the red target after f7");
    snprintf(expr, sizeof expr, "#board .pt[data-sq=\"%ld\"]", f3);
    cr_assert_eq(browser_click(b, expr), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "P.moves.length === 1", 10), "%s", browser_errors(b));
    cr_assert(s_wait_person(b));
    v = s_eval(b, "P.moves[0] + ' ' + document.getElementById('status').textContent");
    cr_assert(!strncmp(v, "\"f3:f7 ", 7) && strstr(v, "remove one of your rings"), "%s", v);
    free(v);
    cr_assert_eq(s_num(b, "document.querySelectorAll('#board .target.capture').length"), 5,
                 "each of the 5 white rings a red target");
    cr_assert_eq(browser_click(b, "#board .pt[data-label=\"a2\"]"), 0, "%s",
                 browser_last_error(b));
    cr_assert(browser_wait(b, "P.moves.length === 2", 10), "%s", browser_errors(b));
    cr_assert(s_wait_person(b));
    v = s_eval(b, "[P.moves[1], document.querySelectorAll('#board .captured').length,"
                  " document.querySelectorAll('#board .lastpath').length,"
                  " document.querySelectorAll('#board .tally .tallied').length,"
                  " document.querySelectorAll('#board > circle.piece').length,"
                  " document.querySelector('#moves .turn').textContent].join('|')");
    cr_assert_str_eq(v, "\"xa2|6|0|1|9|1. white f3:f7 xa2\"",
                     "ring removed; taken crossed, no path, the tally, pieces, list: %s", v);
    free(v);
    v = s_eval(b, "document.getElementById('status').textContent");
    cr_assert(strstr(v, "click one of your rings"), "%s", v);
    free(v);
    cr_assert_str_eq(browser_errors(b), "", "script errors");
    browser_stop(&b);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}
