/* The dashboard as its users expect it (issue 27), against a live cluster of
 * the real programs (a kz-coordinator with gate none, as make run's, and a
 * kz-worker that rates the first best against fixed anchors) and headless
 * Chromium: the rating plots draw the anchors as labelled reference lines,
 * every rating point names its version, Elo, interval and time on hover, the
 * axes have titles and the anchors are listed with their ratings; the
 * network list is complete and paged (GET /models?offset=&limit=), each row
 * with its architecture, training steps, games, rating and a download link,
 * with a link to the strongest rated; with gate none the arena table gives
 * way to the rating history. Nothing here waits for a time to pass: every
 * wait is for a state, with a generous deadline. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/util.h"
#include "games/game.h"
#include "net/client.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "search/gnubg.h"
#include "tests/harness/browser.h"
#include "tests/harness/harness.h"

TestSuite(dashboard, .fini = harness_cleanup, .timeout = 600);

#define CANDIDATES 30 /* registered after v1: 31 models, two pages of 25 */

/* Registers `n` tiny networks (parent 1, trainer step 100 + i) through a
 * trainer client; gate none makes each the best. */
static void s_add_candidates(const harness *h, int n)
{
    void *zctx = zmq_ctx_new();
    client *t = harness_client(zctx, h->endpoint, NULL, "trainer-dash", "trainer", 3000);
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 0;
    a.filters = 4;
    for (int i = 0; i < n; i++) {
        model *m = model_new(&a, 1000 + (uint64_t)i);
        uint8_t *blob;
        size_t len;
        cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
        model_destroy(&m);
        wire_candidate_ack ack;
        cr_assert_eq(client_submit_candidate(t, blob, len, 1, 100 + (uint64_t)i, &ack), 0, "%s",
                     client_last_error(t));
        cr_assert_eq(ack.version, 2 + (uint32_t)i);
        free(blob);
    }
    client_destroy(&t);
    zmq_ctx_term(zctx);
}

/* The value of a JavaScript expression as JSON text (caller frees). */
static char *s_eval(browser *b, const char *expr)
{
    char *v = browser_eval(b, expr);
    cr_assert_not_null(v, "%s: %s (errors: %s)", expr, browser_last_error(b), browser_errors(b));
    return v;
}

/* Whether the expression's value (JSON text) contains `want`. */
static void s_has(browser *b, const char *expr, const char *want)
{
    char *v = s_eval(b, expr);
    cr_assert(strstr(v, want), "%s: want '%s' in %s", expr, want, v);
    free(v);
}

/* The text of every element matching a CSS selector, joined by " | ". */
static char *s_texts(browser *b, const char *sel)
{
    char expr[400];
    snprintf(expr, sizeof expr, "Array.from(document.querySelectorAll('%s'))"
                                ".map(function (e) { return e.textContent; }).join(' | ')", sel);
    return s_eval(b, expr);
}

/* A live cluster whose first best is rated: a coordinator with gate none and
 * three anchors on the game's fixed scale, a real kz-worker until v1's
 * gauntlet ends (then stopped, so that nothing changes under the page). */
static void s_rated_cluster(harness *h, const char *name)
{
    harness_init(h, name);
    const char *const extra[] = {"--anchors=random,greedy,alphabeta:2", "--eval_share=1",
                                 "--eval_pairs=1", "--calibration_pairs=1",
                                 "--eval_simulations=4", "--book_openings=10", "--gate=none",
                                 "--simulations=4", NULL};
    harness_coord_start(h, extra);
    char ep[96], sub[96], wlog[160];
    snprintf(ep, sizeof ep, "--endpoint=%s", h->endpoint);
    snprintf(sub, sizeof sub, "--sub_endpoint=%s", h->pub);
    snprintf(wlog, sizeof wlog, "%s/worker.log", h->dir);
    const char *const wargs[] = {ep, sub, "--model_cache_dir=", "--worker_id=dash-w1",
                                 "--parallel=4", "--heartbeat_ms=100", "--seed=3", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, wlog);
    cr_assert_eq(harness_wait_status(h, "\"history\"", "version", 1, 240), 1,
                 "v1's gauntlet did not end (see %s)", wlog);
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 60, &wst), "the worker did not stop");
}

/* Headless Chromium on the dashboard (skips the test without Chromium). */
static browser *s_open(const harness *h)
{
    char why[300], url[96];
    browser *b = browser_start(h->dir, 1200, 900, why, sizeof why);
    cr_assert_not_null(b, "%s", why);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", h->http_port);
    cr_assert_eq(browser_open(b, url, 60), 0, "%s", browser_last_error(b));
    return b;
}

/* No script error, then the browser and the cluster stopped. */
static void s_close(browser *b, harness *h)
{
    const char *errs = browser_errors(b);
    cr_assert_str_eq(errs, "", "script errors: %s", errs);
    browser_stop(&b);
    harness_fini(h);
}

#define NEED_CHROMIUM()                                                                           \
    do {                                                                                          \
        if (!browser_path())                                                                      \
            cr_skip_test("no Chromium here (apt-get install chromium): the dashboard is not "     \
                         "tested in a browser");                                                  \
    } while (0)

/* 1. The rating plots explain themselves: the anchors as labelled dashed
 * lines at their fixed ratings, every rating point's values on hover, axis
 * titles; the anchors and their ratings in a table. */
Test(dashboard, the_rating_plots_name_the_anchors_and_every_point)
{
    NEED_CHROMIUM();
    harness h;
    s_rated_cluster(&h, "dash-plots");
    browser *b = s_open(&h);
    cr_assert(browser_wait(b, "document.querySelectorAll('#rating g.point title').length >= 1 && "
                              "document.querySelectorAll('#versions g.point title').length >= 1",
                           60),
              "no rating point with a hover text: %s", browser_errors(b));
    char *tip = s_texts(b, "#rating g.point title");
    cr_assert(strstr(tip, "v1: ") && strstr(tip, " Elo, 95% [") && strstr(tip, " rating games") &&
                  strstr(tip, " UTC"),
              "version, Elo, interval, games and time: %s", tip);
    free(tip);
    tip = s_texts(b, "#versions g.point title");
    cr_assert(strstr(tip, "v1: ") && strstr(tip, " Elo, 95% ["), "%s", tip);
    free(tip);
    for (int plot = 0; plot < 2; plot++) {
        const char *id = plot ? "versions" : "rating";
        char sel[64];
        snprintf(sel, sizeof sel, "#%s g.anchor title", id);
        char *lines = s_texts(b, sel);
        cr_assert(strstr(lines, "random: 0 Elo") && strstr(lines, "greedy: 642 Elo") &&
                      strstr(lines, "alphabeta:2: 860 Elo"),
                  "%s: the anchors as reference lines at their fixed ratings: %s", id, lines);
        free(lines);
        snprintf(sel, sizeof sel, "#%s .anchor-label", id);
        char *labels = s_texts(b, sel);
        cr_assert(strstr(labels, "greedy") && strstr(labels, "alphabeta:2"), "%s: %s", id,
                  labels);
        free(labels);
        snprintf(sel, sizeof sel, "#%s .ytitle", id);
        char *yt = s_texts(b, sel);
        cr_assert(strstr(yt, "Elo (random = 0)"), "%s: %s", id, yt);
        free(yt);
        snprintf(sel, sizeof sel, "#%s .xtitle", id);
        char *xt = s_texts(b, sel);
        cr_assert(strstr(xt, plot ? "model version" : "(UTC)"), "%s: %s", id, xt);
        free(xt);
    }
    char *anchors = s_texts(b, "#anchors tr");
    cr_assert(strstr(anchors, "greedy642[531, 752]fixed (the game's scale)") &&
                  strstr(anchors, "alphabeta:2860"),
              "the anchors listed with their ratings: %s", anchors);
    free(anchors);
    s_has(b, "document.getElementById('anchors').textContent", "random0[0, 0]fixed");
    s_close(b, &h);
}

/* 2. The network list, complete and paged: GET /models?offset=&limit= gives
 * a page, newest first, with the total and the strongest rated; the
 * dashboard's table shows 25 networks a page, each with its architecture,
 * training steps, games, rating and download link, and links the strongest
 * rated model's file. */
Test(dashboard, the_network_list_is_complete_and_paged)
{
    NEED_CHROMIUM();
    harness h;
    s_rated_cluster(&h, "dash-models");
    s_add_candidates(&h, CANDIDATES);
    /* The list by pages over HTTP: newest first, complete, the strongest named. */
    static char doc[1 << 20];
    double total = 0, first = 0, last = 0, top = 0, n = 0;
    for (double end = harness_now() + 30; harness_now() < end && total < 1 + CANDIDATES;
         harness_sleep(0.05)) {
        cr_assert_eq(harness_http(h.http_port, "/models?offset=0&limit=10", doc, sizeof doc),
                     200, "%s", doc);
        json_number(doc, "total", &total);
    }
    cr_assert_eq(total, 1 + CANDIDATES, "%s", doc);
    cr_assert(json_number(doc, "models.0.version", &first) && first == 1 + CANDIDATES, "%s", doc);
    cr_assert(json_number(doc, "models.9.version", &last) && last == CANDIDATES - 8, "%s", doc);
    cr_assert(!json_number(doc, "models.10.version", &n), "a page of 10: %s", doc);
    cr_assert(strstr(doc, "\"architecture\": \"khreibaga: 0 blocks x 4 filters") ||
                  strstr(doc, "\"architecture\": null"), "%s", doc);
    cr_assert(json_number(doc, "strongest.version", &top) && top >= 1, "%s", doc);
    cr_assert_eq(harness_http(h.http_port, "/models?offset=30&limit=10", doc, sizeof doc), 200);
    cr_assert(json_number(doc, "models.0.version", &first) && first == 1, "%s", doc);
    cr_assert(!json_number(doc, "models.1.version", &n), "the last page: %s", doc);
    cr_assert(json_number(doc, "models.0.rating_games", &n) && n >= 2, "v1 was rated: %s", doc);
    static const char *const bad[] = {"/models?limit=0", "/models?limit=1001", "/models?offset=x",
                                      "/models?offset=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(harness_http(h.http_port, bad[i], doc, sizeof doc), 400, "%s", bad[i]);
        cr_assert(strchr(doc, '\n') == doc + strlen(doc) - 1, "one line: %s", doc);
    }
    /* The whole list (no arguments) keeps its form: an array, oldest first. */
    cr_assert_eq(harness_http(h.http_port, "/models", doc, sizeof doc), 200);
    cr_assert(doc[0] == '[' && json_number(doc, "0.version", &first) && first == 1, "%.300s",
              doc);

    browser *b = s_open(&h);
    cr_assert(browser_wait(b, "document.getElementById('models-page').textContent"
                              ".indexOf('page 1 of 2 (31 networks stored)') === 0",
                           30),
              "%s", browser_errors(b));
    cr_assert(browser_wait(b, "document.querySelectorAll('#models tr').length === 26", 10),
              "25 rows and the head");
    s_has(b, "document.querySelector('#models tr:nth-child(2)').textContent", "v31 (best)");
    cr_assert(browser_wait(b, "document.querySelector('#models tr:nth-child(2) td:nth-child(2)')"
                              ".textContent.indexOf('0 blocks x 4 filters, heads ') === 0",
                           30),
              "the architecture is read from the model");
    s_has(b, "document.querySelector('#models tr:nth-child(2) td:nth-child(2) span')"
             ".getAttribute('title')", "0 blocks x 4 filters, input 7x5x5, 625 actions, heads");
    s_has(b, "document.querySelector('#models tr:nth-child(2) td:nth-child(3)').textContent",
          "129");
    s_has(b, "document.querySelector('#models tr:nth-child(2) a').getAttribute('href')",
          "/models/31.kzm");
    char expr[300];
    snprintf(expr, sizeof expr,
             "document.getElementById('strongest').getAttribute('href') === '/models/%d.kzm' && "
             "document.getElementById('strongest').textContent.indexOf("
             "'download the strongest rated: v%d (') === 0", (int)top, (int)top);
    cr_assert(browser_wait(b, expr, 30), "%s", browser_errors(b));
    cr_assert_eq(browser_click(b, "#models-older"), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "document.getElementById('models-page').textContent"
                              ".indexOf('page 2 of 2') === 0 && "
                              "document.querySelectorAll('#models tr').length === 7",
                           30),
              "the older page: v6 .. v1: %s", browser_errors(b));
    char *row = s_texts(b, "#models tr:last-child td");
    cr_assert(strstr(row, "v1 | ") && strstr(row, "| v1.kzm"), "v1's row: %s", row);
    free(row);
    /* v1's games: at least its rating games. */
    long games = 0;
    char *g = s_eval(b, "document.querySelector('#models tr:last-child td:nth-child(4)')"
                        ".textContent");
    games = atol(g + 1);
    free(g);
    cr_assert_geq(games, 2, "v1's games");
    s_has(b, "document.querySelector('#models tr:last-child td:nth-child(4) span')"
             ".getAttribute('title')", " rating, ");

    s_close(b, &h);
}

/* 3. With gate none no arena is played: the arena table gives way to the
 * rating history of the bests (no rows of "no gate (promoted)"). */
Test(dashboard, gate_none_shows_the_rating_history_in_the_arena_s_place)
{
    NEED_CHROMIUM();
    harness h;
    s_rated_cluster(&h, "dash-history");
    s_add_candidates(&h, 2);
    browser *b = s_open(&h);
    cr_assert(browser_wait(b, "document.querySelectorAll('#history td').length > 0", 30), "%s",
              browser_errors(b));
    s_has(b, "document.getElementById('arena-section').hidden", "true");
    s_has(b, "document.getElementById('history-section').hidden", "false");
    char *hist = s_texts(b, "#history td");
    cr_assert(strstr(hist, "v1 | "), "the history names v1: %s", hist);
    free(hist);
    s_has(b, "document.getElementById('matches').textContent.indexOf('no gate') < 0", "true");
    s_close(b, &h);

    /* With an arena gate (spec) the arena table is there and the history is not. */
    harness_init(&h, "dash-arena");
    const char *const extra[] = {"--gate=spec", NULL};
    harness_coord_start(&h, extra);
    b = s_open(&h);
    cr_assert(browser_wait(b, "document.getElementById('history-section').hidden === true && "
                              "document.getElementById('arena-section').hidden === false && "
                              "document.getElementById('summary').textContent.length > 0",
                           30),
              "gate spec: the arena table: %s", browser_errors(b));
    s_close(b, &h);
}

/* 4. A small screen (400 px wide, a phone's): the page has a viewport, the
 * plots shrink to the width, wide tables scroll in their own box, and the
 * page itself never scrolls sideways. Every rate is per minute, as kz status
 * and make run's line give them; the page names its own icon (no request
 * for /favicon.ico). Leaves build/dashboard-narrow.png. */
Test(dashboard, a_small_screen_shows_the_page_without_sideways_scrolling)
{
    NEED_CHROMIUM();
    harness h;
    harness_init(&h, "dash-narrow");
    const char *const extra[] = {"--gate=none", "--timeline_s=0.2", NULL};
    harness_coord_start(&h, extra);
    harness_submit_random_games(&h, 6, 700);
    s_add_candidates(&h, 3);
    char why[300], url[96];
    browser *b = browser_start(h.dir, 800, 900, why, sizeof why);
    cr_assert_not_null(b, "%s", why);
    cr_assert_eq(browser_set_mobile(b, 400, 900), 0, "%s", browser_last_error(b));
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", h.http_port);
    cr_assert_eq(browser_open(b, url, 60), 0, "%s", browser_last_error(b));
    /* Drawn: the network list and the games plot's lines. */
    cr_assert(browser_wait(b, "document.querySelectorAll('#models tr').length === 5 && "
                              "document.querySelectorAll('#rates polyline').length > 0 && "
                              "document.getElementById('summary').textContent.length > 0",
                           60),
              "the page was not drawn: %s", browser_errors(b));
    s_has(b, "document.querySelector('meta[name=viewport]').getAttribute('content')",
          "width=device-width");
    s_has(b, "window.innerWidth", "400");
    s_has(b, "document.querySelector('link[rel=icon]').getAttribute('href')", "data:");
    char *w = s_eval(b, "document.documentElement.scrollWidth + ' ' + window.innerWidth");
    int sw = 0, iw = 0;
    cr_assert_eq(sscanf(w + 1, "%d %d", &sw, &iw), 2, "%s", w);
    free(w);
    cr_assert_leq(sw, iw, "the page is %d px wide in a %d px window: it scrolls sideways", sw,
                  iw);
    /* Each plot within the window, at its full height ratio. */
    s_has(b, "Array.from(document.querySelectorAll('svg')).filter(function (s) { "
             "var r = s.getBoundingClientRect(); return r.width > 0 && "
             "(r.right > window.innerWidth + 0.5 || r.left < 0 || "
             "Math.abs(r.height / r.width - 260 / 560) > 0.05); }).length", "0");
    s_has(b, "document.querySelector('#models').parentNode.className", "scroll");
    /* One unit for the rates. */
    s_has(b, "document.getElementById('summary').textContent", "games/min: ");
    s_has(b, "document.querySelector('#rates .ytitle').textContent", "games per minute");
    s_has(b, "document.querySelector('#positions .ytitle').textContent", "positions per minute");
    char shot[600];
    snprintf(shot, sizeof shot, "%s/dashboard-narrow.png", harness_bin_dir());
    cr_assert_eq(browser_screenshot(b, shot), 0, "%s", browser_last_error(b));
    s_close(b, &h);
}

/* 5b. Khreibaga judged by perfect play (issue 24): the summary names the
 * value-losing turns a game of the newest judged best with its interval,
 * the judge's plot is titled for perfect play and has v1's point with the
 * figures on hover. A Khreibaga coordinator (judge auto), a real kz-worker
 * until v1's gauntlet (random and greedy, a pair each: 4 games) has been
 * rated and judged. */
Test(dashboard, a_khreibaga_pool_plots_perfect_play_s_judgement)
{
    NEED_CHROMIUM();
    harness h;
    harness_init(&h, "dash-judge");
    const char *const extra[] = {"--anchors=random,greedy", "--eval_share=1", "--eval_pairs=1",
                                 "--calibration_pairs=1", "--eval_simulations=4",
                                 "--book_openings=4", "--gate=none", "--simulations=4",
                                 "--judge=auto", "--perfect_nodes=20000", "--perfect_tt_mb=16",
                                 NULL};
    harness_coord_start(&h, extra);
    char ep[96], sub[96], wlog[160];
    snprintf(ep, sizeof ep, "--endpoint=%s", h.endpoint);
    snprintf(sub, sizeof sub, "--sub_endpoint=%s", h.pub);
    snprintf(wlog, sizeof wlog, "%s/worker.log", h.dir);
    const char *const wargs[] = {ep, sub, "--model_cache_dir=", "--parallel=2",
                                 "--heartbeat_ms=100", "--seed=3", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, wlog);
    cr_assert_eq(harness_wait_status(&h, "\"judge\": {", "games", 4, 240), 4,
                 "v1's four rating games were not judged (see %s)", wlog);
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 60, &wst), "the worker did not stop");
    browser *b = s_open(&h);
    cr_assert(browser_wait(b, "document.querySelectorAll('#judge g.point title').length >= 1", 60),
              "no point in the judge's plot: %s", browser_errors(b));
    char *tip = s_texts(b, "#judge g.point title");
    cr_assert(strstr(tip, "v1: ") && strstr(tip, " value-losing turns a game [") &&
                  strstr(tip, "in 4 rating games") && strstr(tip, " turns settled"),
              "%s", tip);
    free(tip);
    s_has(b, "document.getElementById('judge-now').textContent", "perfect play's judgement: v1 ");
    s_has(b, "document.getElementById('judge-title').textContent",
          "Perfect play's judgement of the best (value-losing turns a rating game)");
    s_has(b, "document.querySelector('.judge').hidden", "false");
    s_close(b, &h);
}

/* 6. Backgammon rated against gnubg (issue 25): the summary names gnubg's
 * error rate of the newest judged best, its plot has the best's point with
 * its interval and the figures on hover, and the rating plots name the zero
 * of a pool without random (gnubg:beginner). A backgammon coordinator with
 * gnubg's levels as anchors, a real kz-worker until v1's gauntlet (2 pairs)
 * has been rated and judged. */
Test(dashboard, a_backgammon_pool_against_gnubg_plots_gnubg_s_error_rate)
{
    NEED_CHROMIUM();
    if (!gnubg_path())
        cr_skip_test("gnubg is not installed (tools/deps.sh)");
    harness h;
    harness_init(&h, "dash-bg");
    char args[400], out[4096];
    snprintf(args, sizeof args, "model init --game=backgammon --blocks=1 --filters=8 --force %s",
             h.model);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    const char *const extra[] = {"--game=backgammon", "--anchors=gnubg:beginner,gnubg:intermediate",
                                 "--eval_share=1", "--eval_pairs=1", "--calibration_pairs=1",
                                 "--eval_simulations=4", "--book_openings=4", "--gate=none",
                                 "--simulations=4", "--judge=auto", NULL};
    harness_coord_start(&h, extra);
    char ep[96], sub[96], wlog[160];
    snprintf(ep, sizeof ep, "--endpoint=%s", h.endpoint);
    snprintf(sub, sizeof sub, "--sub_endpoint=%s", h.pub);
    snprintf(wlog, sizeof wlog, "%s/worker.log", h.dir);
    const char *const wargs[] = {"--game=backgammon", ep, sub, "--model_cache_dir=",
                                 "--parallel=2", "--heartbeat_ms=100", "--seed=3", NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, wlog);
    cr_assert_eq(harness_wait_status(&h, "\"judge\": {", "games", 4, 240), 4,
                 "v1's four rating games were not judged (see %s)", wlog);
    harness_signal(wp, SIGTERM);
    int wst;
    cr_assert(harness_wait(wp, 60, &wst), "the worker did not stop");
    browser *b = s_open(&h);
    cr_assert(browser_wait(b, "document.querySelectorAll('#judge g.point title').length >= 1", 60),
              "no point in gnubg's error-rate plot: %s", browser_errors(b));
    char *tip = s_texts(b, "#judge g.point title");
    cr_assert(strstr(tip, "v1: ") && strstr(tip, " mp per decision [") && strstr(tip, "PR ") &&
                  strstr(tip, "in 4 rating games"),
              "%s", tip);
    free(tip);
    s_has(b, "document.getElementById('judge-now').textContent", "gnubg expert's error rate: v1 ");
    s_has(b, "document.querySelector('.judge').hidden", "false");
    char *zero = s_texts(b, ".zero");
    cr_assert_str_eq(zero, "\"gnubg:beginner\"");
    free(zero);
    char *yt = s_texts(b, "#rating .ytitle");
    cr_assert(strstr(yt, "Elo (gnubg:beginner = 0)"), "%s", yt);
    free(yt);
    s_close(b, &h);
}
