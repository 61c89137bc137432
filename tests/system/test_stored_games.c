/* Stored games out of the cluster, against the real kz-coordinator and kz:
 * `kz store --game SEQ` (the printer of `kz records --game`), GET /games
 * (recent games, filters, bounded count) and GET /games/SEQ (a record's
 * moves as JSON), with their answers to bad input, and the viewer page in
 * headless Chromium replaying a stored game. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/harness/browser.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "data/record.h"
#include "common/util.h"
#include "data/validate.h"

TestSuite(games, .fini = harness_cleanup);

/* The text after the first line (the title differs between the printers). */
static const char *s_after_title(const char *text)
{
    const char *nl = strchr(text, '\n');
    return nl ? nl + 1 : text;
}

Test(games, kz_store_game_prints_a_stored_game_as_kz_records_does)
{
    harness h;
    harness_init(&h, "games-store");
    harness_coord_start(&h, NULL);
    harness_submit_random_games(&h, 3, 500);

    /* The same records in a record file, for kz records --game. */
    validate_random_opts vo = {.model_version = 1, .worker_id = "harness"};
    char path[160], err[200];
    snprintf(path, sizeof path, "%s/same.kzr", h.dir);
    record_file *f;
    cr_assert_eq(record_file_create(path, &f, err, sizeof err), 0, "%s", err);
    game_record *r = record_new();
    for (int i = 0; i < 3; i++) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(validate_random_record(game_default(), 500 + (uint64_t)i, &vo, &buf, &len), 0);
        cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), 0, "%s", err);
        cr_assert_eq(record_file_write(f, r, err, sizeof err), 0, "%s", err);
        free(buf);
    }
    record_destroy(&r);
    cr_assert_eq(record_file_close(&f), 0);

    /* Which stored sequence holds the third record: kz store --games lists
     * them in order of arrival, all three from one client in order. */
    proc_output o, want;
    char args[400];
    snprintf(args, sizeof args, "store --data_dir=%s/store --game 2", h.dir);
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    cr_assert(!strncmp(o.out, "game 2 (selfplay): id ", 22), "%s", o.out);
    snprintf(args, sizeof args, "records %s --game 3", path);
    cr_assert_eq(harness_kz(args, NULL, &want), 0, "%s%s", want.out, want.err);
    cr_assert_str_eq(s_after_title(o.out), s_after_title(want.out),
                     "the same listing after the title line");
    cr_assert(strstr(o.out, "\nresult: "), "%s", o.out);
    proc_output_free(&o);
    proc_output_free(&want);

    /* Bad input: exit 2 with one line. */
    static const struct {
        const char *fmt; /* %s: the directory */
        const char *says;
    } bad[] = {
        {"store --data_dir=%s/store --game 3", "no game 3 in the store (games 0..2)"},
        {"store --data_dir=%s/store --game x", "game"},
        {"store --data_dir=%s/store --game=-2", "game"},
        {"store --data_dir=%s/store --game 1 --export best x.kzm", "not both"},
        {"store --data_dir=%s/nothing --game 0", "no store"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i].fmt, h.dir);
        cr_assert_eq(harness_kz(args, NULL, &o), 2, "kz %s: %s%s", args, o.out, o.err);
        cr_assert(strstr(o.err, bad[i].says), "kz %s: '%s'", args, o.err);
        cr_assert(strchr(o.err, '\n') == o.err + strlen(o.err) - 1, "one line: '%s'", o.err);
        proc_output_free(&o);
    }
    harness_fini(&h);
}

/* METHOD path on 127.0.0.1:port: the status code, the body in *body (caller
 * frees) and the Content-Type in type (optional). */
static int s_fetch(int port, const char *method, const char *path, char **body, char *type,
                   size_t type_len)
{
    char req[8192];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                     method, path);
    cr_assert(n > 0 && (size_t)n < sizeof req);
    size_t got = 0;
    char *a = http_exchange(NULL, "127.0.0.1", port, req, (size_t)n, 30, &got);
    cr_assert_not_null(a, "no answer to %s %s", method, path);
    char *end = strstr(a, "\r\n\r\n");
    cr_assert_not_null(end, "no end of headers for %s", path);
    *end = 0;
    if (type) {
        type[0] = 0;
        char *p = strcasestr(a, "\r\nContent-Type:");
        if (p)
            sscanf(p + 15, " %255[^\r\n]", type);
        (void)type_len;
    }
    int code = http_code(a);
    *body = strdup(end + 4);
    free(a);
    return code;
}

/* The stored games of the tests below: seeds seed..seed+n-1 in order. */
static game_record *s_record(uint64_t seed)
{
    validate_random_opts vo = {.model_version = 1, .worker_id = "harness"};
    uint8_t *buf;
    size_t len;
    char err[200];
    cr_assert_eq(validate_random_record(game_default(), seed, &vo, &buf, &len), 0);
    game_record *r = record_new();
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), 0, "%s", err);
    free(buf);
    return r;
}

/* The position string after the first k actions of r. */
static void s_position_after(const game_record *r, int k, char *buf, size_t len)
{
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    for (int i = 0; i < k; i++)
        g->apply(&s, r->moves[i].action);
    g->format_position(&s, buf, len);
}

Test(games, get_games_lists_filters_and_bounds_and_get_games_seq_gives_the_moves)
{
    harness h;
    harness_init(&h, "games-http");
    harness_coord_start(&h, NULL);
    enum { GAMES = 8 };
    harness_submit_random_games(&h, GAMES, 700);
    int winners[3] = {0, 0, 0}; /* draws, black, white */
    for (int i = 0; i < GAMES; i++) {
        game_record *r = s_record(700 + (uint64_t)i);
        winners[r->winner + 1]++;
        record_destroy(&r);
    }
    char *body, type[256];
    /* The newest first, all of them. */
    cr_assert_eq(s_fetch(h.http_port, "GET", "/games", &body, type, sizeof type), 200, "%s", body);
    cr_assert_str_eq(type, "application/json");
    cr_assert(json_valid(body), "%s", body);
    double v;
    cr_assert(json_number(body, "listed", &v) && v == GAMES, "%s", body);
    cr_assert(json_number(body, "total", &v) && v == GAMES);
    cr_assert(json_number(body, "games.0.seq", &v) && v == GAMES - 1, "newest first");
    cr_assert(json_number(body, "games.7.seq", &v) && v == 0);
    char s[64];
    cr_assert(json_string(body, "games.0.kind", s, sizeof s) && !strcmp(s, "selfplay"));
    cr_assert(json_string(body, "games.0.worker", s, sizeof s) && !strcmp(s, "harness"));
    cr_assert(strstr(body, "\"next_before\": null"), "every game looked at: %s", body);
    free(body);
    /* A bounded count, and the page after it. */
    cr_assert_eq(s_fetch(h.http_port, "GET", "/games?limit=3", &body, NULL, 0), 200);
    cr_assert(json_number(body, "listed", &v) && v == 3);
    cr_assert(json_number(body, "next_before", &v) && v == GAMES - 4, "%s", body);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/games?limit=3&before=4", &body, NULL, 0), 200);
    cr_assert(json_number(body, "games.0.seq", &v) && v == 4);
    cr_assert(json_number(body, "games.2.seq", &v) && v == 2);
    free(body);
    /* Filters: kind, model, result. */
    static const struct {
        const char *q; /* query */
        int listed;    /* -1: from winners[] */
        int winner;    /* which */
    } filters[] = {
        {"/games?kind=selfplay", GAMES, 0}, {"/games?kind=arena", 0, 0},
        {"/games?model=1", GAMES, 0},       {"/games?model=2", 0, 0},
        {"/games?result=black", -1, 1},     {"/games?result=white", -1, 2},
        {"/games?result=draw&kind=selfplay", -1, 0},
    };
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        cr_assert_eq(s_fetch(h.http_port, "GET", filters[i].q, &body, NULL, 0), 200, "%s",
                     filters[i].q);
        int want = filters[i].listed >= 0 ? filters[i].listed : winners[filters[i].winner];
        cr_assert(json_number(body, "listed", &v) && v == want, "%s: %s", filters[i].q, body);
        free(body);
    }

    /* One game: its moves replay to the record's end. */
    game_record *r = s_record(700 + 5);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/games/5", &body, NULL, 0), 200, "%s", body);
    cr_assert(json_valid(body), "%.3000s", body);
    cr_assert(json_number(body, "seq", &v) && v == 5);
    char path[64], act[32], want[32], pos[128];
    snprintf(path, sizeof path, "moves.%d.action", r->n_moves - 1);
    cr_assert(json_string(body, path, act, sizeof act), "%d moves listed", r->n_moves);
    snprintf(path, sizeof path, "moves.%d.action", r->n_moves);
    cr_assert_not(json_string(body, path, act, sizeof act), "no more than the record's");
    game_default()->format_action(r->moves[0].action, want, sizeof want);
    cr_assert(json_string(body, "moves.0.action", act, sizeof act) && !strcmp(act, want));
    snprintf(path, sizeof path, "positions.%d", r->n_moves);
    s_position_after(r, r->n_moves, want, sizeof want);
    cr_assert(json_string(body, path, pos, sizeof pos) && !strcmp(pos, want), "%s vs %s", pos,
              want);
    cr_assert(json_string(body, "result.reason", s, sizeof s) &&
              !strcmp(s, game_reason_name(game_default(), r->reason)));
    /* A capture is written with x, and says so. */
    bool capture = false;
    for (int k = 0; k < r->n_moves && !capture; k++) {
        snprintf(path, sizeof path, "moves.%d.capture", k);
        cr_assert(json_number(body, path, &v));
        if (v) {
            snprintf(path, sizeof path, "moves.%d.action", k);
            cr_assert(json_string(body, path, act, sizeof act) && strchr(act, 'x'), "%s", act);
            capture = true;
        }
    }
    cr_assert(capture, "a random game captures");
    free(body);
    record_destroy(&r);

    /* Bad requests: one line, never a crash. */
    static const struct {
        const char *path;
        int code;
        const char *says;
    } bad[] = {
        {"/games?kind=blitz", 400, "kind"},       {"/games?limit=0", 400, "limit"},
        {"/games?limit=501", 400, "limit"},        {"/games?limit=x", 400, "limit"},
        {"/games?model=abc", 400, "model"},        {"/games?result=blue", 400, "result"},
        {"/games?before=-1", 400, "before"},       {"/games?colour=black", 400, "unknown"},
        {"/games?kind=arena&kind=eval", 400, "twice"},
        {"/games/8", 404, "no game 8 (the games are 0..7)"},
        {"/games/07", 404, "no game"},             {"/games/x", 404, "no game"},
        {"/games/", 404, "no game"},               {"/games/1?x=1", 400, "no arguments"},
        {"/games/99999999999999999999", 404, "no game"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(s_fetch(h.http_port, "GET", bad[i].path, &body, NULL, 0), bad[i].code,
                     "%s: %s", bad[i].path, body);
        cr_assert(strstr(body, bad[i].says), "%s: '%s'", bad[i].path, body);
        size_t n = strlen(body);
        cr_assert(n > 1 && body[n - 1] == '\n' && !memchr(body, '\n', n - 1), "%s: one line",
                  bad[i].path);
        free(body);
    }
    cr_assert_eq(s_fetch(h.http_port, "POST", "/games", &body, NULL, 0), 405);
    free(body);
    cr_assert_eq(harness_http(h.http_port, "/healthz", NULL, 0), 200, "still healthy");
    harness_fini(&h);
}

/* The viewer in a real browser: the list of stored games, one opened with a
 * click and stepped through with the buttons (real mouse clicks), the hops
 * of a capture sequence shown one by one with the captured pieces marked,
 * the end reached; no script error. Screenshot: build/viewer.png. */
Test(games, the_viewer_replays_a_stored_game_in_chromium)
{
    if (!browser_path())
        cr_skip_test("no Chromium here (apt-get install chromium): the viewer is not tested in "
                     "a browser");
    harness h;
    harness_init(&h, "games-viewer");
    harness_coord_start(&h, NULL);
    enum { GAMES = 6 };
    harness_submit_random_games(&h, GAMES, 900);
    /* A game with a capture sequence of two hops or more, and where it starts. */
    const game_def *g = game_default();
    int seq = -1, first_hop = -1;
    game_record *r = NULL;
    for (int i = 0; i < GAMES && seq < 0; i++) {
        r = s_record(900 + (uint64_t)i);
        game_state s;
        g->init(&s);
        for (int k = 0; k < r->n_moves && seq < 0; k++) {
            g->apply(&s, r->moves[k].action);
            if (g->mid_turn(&s)) {
                seq = i;
                first_hop = k;
            }
        }
        if (seq < 0)
            record_destroy(&r);
    }
    cr_assert(seq >= 0, "no capture sequence in %d random games", GAMES);

    char why[300], url[128];
    browser *b = browser_start(h.dir, 1280, 900, why, sizeof why);
    cr_assert_not_null(b, "%s", why);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/viewer", h.http_port);
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(browser_wait(b, "document.querySelectorAll('tr.game').length === 6", 20), "%s",
              browser_last_error(b));
    char sel[64];
    snprintf(sel, sizeof sel, "tr.game[data-seq=\"%d\"]", seq);
    cr_assert_eq(browser_click(b, sel), 0, "%s", browser_last_error(b));
    char cond[256];
    snprintf(cond, sizeof cond,
             "document.getElementById('title').textContent.indexOf('Game %d:') === 0 "
             "&& document.getElementById('board').getAttribute('data-step') === '0'",
             seq);
    cr_assert(browser_wait(b, cond, 20), "%s", browser_last_error(b));
    /* Forward to the first hop of the sequence, click by click. */
    for (int k = 0; k <= first_hop; k++)
        cr_assert_eq(browser_click(b, "#next"), 0, "%s", browser_last_error(b));
    char want[128], *got;
    s_position_after(r, first_hop + 1, want, sizeof want);
    got = browser_eval(b, "document.getElementById('board').getAttribute('data-position')");
    cr_assert(got && got[0] == '"' && !strncmp(got + 1, want, strlen(want)),
              "after action %d: the board shows %s, the record %s", first_hop + 1, got, want);
    free(got);
    got = browser_eval(b, "document.getElementById('where').textContent");
    cr_assert(got && strstr(got, "(hop 1 of "), "%s", got);
    free(got);
    got = browser_eval(b, "document.querySelectorAll('#board .captured').length + ' ' + "
                          "document.querySelectorAll('#board .lastpath').length");
    cr_assert(got && !strcmp(got, "\"1 1\""), "one piece taken, the path drawn: %s", got);
    free(got);
    cr_assert_eq(browser_click(b, "#next"), 0);
    got = browser_eval(b, "document.getElementById('where').textContent");
    cr_assert(got && strstr(got, "(hop 2 of "), "%s", got);
    free(got);
    got = browser_eval(b, "document.querySelectorAll('#board .captured').length");
    cr_assert(got && !strcmp(got, "2"), "both pieces of the sequence marked: %s", got);
    free(got);
    cr_assert_eq(browser_click(b, "#flip"), 0);
    cr_assert(browser_wait(b, "document.getElementById('board').getAttribute('data-flip') === '1'",
                           10));
    char shot[600];
    snprintf(shot, sizeof shot, "%s/viewer.png", harness_bin_dir());
    cr_assert_eq(browser_screenshot(b, shot), 0, "%s", browser_last_error(b));
    /* The end: the record's last position and result. */
    cr_assert_eq(browser_click(b, "#last"), 0);
    s_position_after(r, r->n_moves, want, sizeof want);
    got = browser_eval(b, "document.getElementById('board').getAttribute('data-position')");
    cr_assert(got && !strncmp(got + 1, want, strlen(want)), "the end: %s, the record %s", got,
              want);
    free(got);
    got = browser_eval(b, "document.getElementById('result-line').textContent");
    cr_assert(got && strstr(got, game_reason_name(game_default(), r->reason)), "%s", got);
    free(got);
    cr_assert_str_eq(browser_errors(b), "", "script errors");
    browser_stop(&b);
    record_destroy(&r);
    harness_fini(&h);
}

/* The coordinator's /play: the page and its engine over the best model. */
Test(games, the_coordinator_serves_the_play_page_with_its_best_model)
{
    harness h;
    harness_init(&h, "games-play");
    harness_coord_start(&h, NULL);
    char *body, type[256];
    cr_assert_eq(s_fetch(h.http_port, "GET", "/play", &body, type, sizeof type), 200);
    cr_assert_str_eq(type, "text/html; charset=utf-8");
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/info", &body, NULL, 0), 200, "%s", body);
    double v;
    cr_assert(json_number(body, "version", &v) && v == 1, "the best, v1: %s", body);
    cr_assert(json_number(body, "max_sims", &v) && v == 2000);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/analyse?moves=6-12&sims=30", &body, NULL, 0),
                 200, "%s", body);
    cr_assert(json_valid(body), "%s", body);
    cr_assert(strstr(body, "\"player\": \"mcts:v1:30\""), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/apply?action=6-13", &body, NULL, 0), 400);
    cr_assert(strstr(body, "illegal action '6-13'"), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/analyse?sims=2001", &body, NULL, 0), 400);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "POST", "/api/save?moves=6-12", &body, NULL, 0), 400);
    cr_assert(strstr(body, "id must be"), "%s", body);
    free(body);
    /* The description the pages draw the game from. */
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/info", &body, NULL, 0), 200, "%s", body);
    char t[64];
    cr_assert(json_string(body, "view.players.1.name", t, sizeof t) && !strcmp(t, "white"),
              "%s", body);
    free(body);
    /* A finished game saved from /play opens under /saved (not /games: the store's). */
    cr_assert_eq(s_fetch(h.http_port, "GET", "/saved", &body, NULL, 0), 200, "%s", body);
    cr_assert(json_number(body, "total", &v) && v == 0, "%s", body);
    free(body);
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    char path[8192] = "/api/save?engine=white&id=000102030405060708090a0b0c0d0e0f&moves=";
    rng_t rng;
    rng_seed(&rng, 5);
    int n = 0;
    while (!g->result(&s).over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int k = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)k)];
        char text[16];
        g->format_action(a, text, sizeof text);
        size_t len = strlen(path);
        cr_assert(len + 20 < sizeof path, "a game short enough for one URL");
        snprintf(path + len, sizeof path - len, "%s%s", n++ ? "," : "", text);
        g->apply(&s, a);
    }
    cr_assert_eq(s_fetch(h.http_port, "POST", path, &body, NULL, 0), 200, "%s", body);
    cr_assert(json_number(body, "index", &v) && v == 1, "%s", body);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/saved/1", &body, NULL, 0), 200, "%s", body);
    cr_assert(json_string(body, "b", t, sizeof t) && !strcmp(t, "human"), "%s", body);
    cr_assert(json_number(body, "seq", &v) && v == 1, "%s", body);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/saved/2", &body, NULL, 0), 404, "%s", body);
    free(body);
    cr_assert_eq(harness_http(h.http_port, "/healthz", NULL, 0), 200);
    harness_fini(&h);
}

/* The /api/ takes no body: one is answered 400 with one line saying so
 * (issue 28, #13: the connection was dropped without an answer), a GET and a
 * POST alike, and the connection's server goes on answering. */
Test(games, a_body_on_the_api_is_answered_400_in_one_line)
{
    harness h;
    harness_init(&h, "games-body");
    harness_coord_start(&h, NULL);
    static const char *const reqs[] = {
        "POST /api/save?moves=6-12 HTTP/1.0\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        "GET /api/info HTTP/1.0\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
        "POST /api/save HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        "Transfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        size_t got = 0;
        char *a = http_exchange(NULL, "127.0.0.1", h.http_port, reqs[i], strlen(reqs[i]), 30,
                                &got);
        cr_assert_not_null(a, "request %zu: could not connect", i);
        cr_assert_eq(http_code(a), 400, "request %zu: answered '%s'", i, a);
        char *text = strstr(a, "\r\n\r\n");
        cr_assert_not_null(text);
        text += 4;
        cr_assert(strstr(text, "the API takes none"), "request %zu: '%s'", i, text);
        cr_assert(strchr(text, '\n') == text + strlen(text) - 1, "one line: '%s'", text);
        free(a);
    }
    char *body;
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/info", &body, NULL, 0), 200, "%s", body);
    free(body);
    harness_fini(&h);
}

/* Without a token, no answer of /api/ or /saved names a directory of the
 * server (issue 28, #12: /api/info and /api/save gave the record file's
 * absolute path to anyone). */
Test(games, the_api_names_no_server_directory_without_a_token)
{
    harness h;
    harness_init(&h, "games-paths");
    harness_coord_start(&h, NULL);
    char *body;
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/info", &body, NULL, 0), 200, "%s", body);
    char t[300];
    cr_assert(json_string(body, "records", t, sizeof t) && !strcmp(t, "play.kzr"), "%s", body);
    cr_assert_null(strstr(body, h.dir), "%s", body);
    free(body);
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    char path[8192] = "/api/save?engine=white&id=000102030405060708090a0b0c0d0e0f&moves=";
    rng_t rng;
    rng_seed(&rng, 7);
    for (int n = 0; !g->result(&s).over; n++) {
        uint16_t legal[GAME_MAX_LEGAL];
        int k = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)k)];
        char text[16];
        g->format_action(a, text, sizeof text);
        cr_assert(strlen(path) + 20 < sizeof path, "a game short enough for one URL");
        snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", n ? "," : "", text);
        g->apply(&s, a);
    }
    cr_assert_eq(s_fetch(h.http_port, "POST", path, &body, NULL, 0), 200, "%s", body);
    cr_assert(json_string(body, "file", t, sizeof t) && !strcmp(t, "play.kzr"), "%s", body);
    cr_assert_null(strstr(body, h.dir), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/api/analyse?moves=6-12&sims=20", &body, NULL, 0),
                 200, "%s", body);
    cr_assert_null(strstr(body, h.dir), "%s", body);
    free(body);
    /* The record file damaged: the error names it without its directory. */
    char file[300];
    snprintf(file, sizeof file, "%s/store/play.kzr", h.dir);
    cr_assert_eq(harness_write(file, "not a record file\n"), 0);
    cr_assert_eq(s_fetch(h.http_port, "GET", "/saved", &body, NULL, 0), 500, "%s", body);
    cr_assert(strstr(body, "play.kzr") && !strstr(body, h.dir), "%s", body);
    free(body);
    path[strlen("/api/save?engine=white&id=0")] = '1'; /* another game id */
    cr_assert_eq(s_fetch(h.http_port, "POST", path, &body, NULL, 0), 500, "%s", body);
    cr_assert(strstr(body, "play.kzr") && !strstr(body, h.dir), "%s", body);
    free(body);
    harness_fini(&h);
}

/* POST /api/save of a random finished game from seed under id (32 hex
 * digits): the status code, the answer in *body (caller frees). */
static int s_save(int port, uint64_t seed, const char *id, char **body)
{
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    char path[8192];
    snprintf(path, sizeof path, "/api/save?engine=white&id=%s&moves=", id);
    rng_t rng;
    rng_seed(&rng, seed);
    for (int n = 0; !g->result(&s).over; n++) {
        uint16_t legal[GAME_MAX_LEGAL];
        int k = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)k)];
        char text[16];
        g->format_action(a, text, sizeof text);
        cr_assert(strlen(path) + 20 < sizeof path, "a game short enough for one URL");
        snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", n ? "," : "", text);
        g->apply(&s, a);
    }
    return s_fetch(port, "POST", path, body, NULL, 0);
}

/* The coordinator limits the games saved from /play (issue 28, #5): at
 * play_saves_per_hour 1 the second save is a 429 in one line (the next is an
 * hour away: no clock is raced); at play_records_max_mb a 507. */
Test(games, the_coordinator_limits_the_saves_from_play)
{
    harness h;
    harness_init(&h, "games-limits");
    const char *cx[] = {"--play_saves_per_hour=1", NULL};
    harness_coord_start(&h, cx);
    char *body;
    cr_assert_eq(s_save(h.http_port, 41, "000102030405060708090a0b0c0d0e41", &body), 200, "%s",
                 body);
    free(body);
    cr_assert_eq(s_save(h.http_port, 42, "000102030405060708090a0b0c0d0e42", &body), 429, "%s",
                 body);
    cr_assert(strstr(body, "too many saves") && strchr(body, '\n') == body + strlen(body) - 1,
              "%s", body);
    free(body);
    /* A new best (gate none) gives /play a new engine: the limit carries over. */
    cr_assert_eq(harness_submit_candidate(&h), 2);
    cr_assert_eq(harness_wait_status(&h, "\"models\"", "best", 2, 30), 2);
    cr_assert_eq(s_save(h.http_port, 44, "000102030405060708090a0b0c0d0e44", &body), 429,
                 "a new best refilled the save limit: %s", body);
    free(body);
    harness_coord_kill(&h, SIGTERM);
    const char *cap[] = {"--play_records_max_mb=0.0001", NULL}; /* about 100 bytes */
    harness_coord_start(&h, cap);
    cr_assert_eq(s_save(h.http_port, 43, "000102030405060708090a0b0c0d0e43", &body), 507, "%s",
                 body);
    cr_assert(strstr(body, "record file is full"), "%s", body);
    free(body);
    harness_fini(&h);
}

/* Issue 28, #5: a coordinator without a status token keeps saved games to
 * pages opened on its own machine: a save from the machine's outside
 * address (the status port on 0.0.0.0) is refused in one line; with the
 * token the same save is no longer refused for where it comes from. */
Test(games, saves_from_other_machines_need_the_token)
{
    char outside[64];
    if (!harness_outside_ipv4(outside, sizeof outside))
        cr_skip_test("this machine has no address but loopback");
    harness h;
    harness_init(&h, "games-remote");
    const char *const open_bind[] = {"--http_bind=0.0.0.0", NULL};
    harness_coord_start(&h, open_bind);
    const char *save = "/api/save?engine=white&id=000102030405060708090a0b0c0d0eaa&moves=6-12";
    char req[512];
    int n = snprintf(req, sizeof req, "POST %s HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                     save);
    size_t got = 0;
    char *a = http_exchange(NULL, outside, h.http_port, req, (size_t)n, 30, &got);
    cr_assert_not_null(a, "no answer from %s", outside);
    cr_assert_eq(http_code(a), 403, "%s", a);
    cr_assert(strstr(a, "another machine") && strstr(a, "status_token_file"), "%s", a);
    free(a);
    char *body;
    cr_assert_neq(s_fetch(h.http_port, "POST", save, &body, NULL, 0), 403, "%s", body);
    free(body);
    harness_coord_kill(&h, SIGTERM);
    char tok[256], arg[300];
    snprintf(tok, sizeof tok, "%s/token", h.dir);
    cr_assert_eq(harness_write(tok, "0123456789abcdef0123456789abcdef\n"), 0);
    chmod(tok, 0600);
    snprintf(arg, sizeof arg, "--status_token_file=%s", tok);
    const char *const with_token[] = {"--http_bind=0.0.0.0", arg, NULL};
    harness_coord_start(&h, with_token);
    n = snprintf(req, sizeof req, "POST %s HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\n"
                 "Authorization: Bearer 0123456789abcdef0123456789abcdef\r\n\r\n", save);
    a = http_exchange(NULL, outside, h.http_port, req, (size_t)n, 30, &got);
    cr_assert_not_null(a);
    cr_assert_neq(http_code(a), 403, "%s", a);
    cr_assert_null(strstr(a, "another machine"), "%s", a);
    free(a);
    harness_fini(&h);
}
