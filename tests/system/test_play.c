/* The play page without a cluster, against the real `kz serve`: its JSON API
 * over HTTP (bad requests of every kind answered with one line, a long
 * search that does not hold up /healthz, games saved as records and listed
 * for the viewer), its bad usage, and a person in headless Chromium playing
 * whole games by clicking on the board: pieces picked and targets shown,
 * captures hop by hop, illegal clicks refused, hint, undo, flip, the
 * engine's opinion, the game saved (build/play.png). */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "tests/harness/browser.h"
#include "games/game.h"
#include "games/tablebase.h"
#include "play/engine.h"
#include "tests/harness/harness.h"
#include "data/record.h"
#include "common/util.h"

TestSuite(play, .fini = harness_cleanup);

/* kz serve on a free port (the tiny model unless extra gives --model or --player:
 * extra is a NULL-terminated list of more flags); returns the port once
 * /healthz answers. */
static int s_serve(harness *h, proc *p, const char *const *extra)
{
    int port = tcp_free_port();
    cr_assert(port > 0);
    char kz[512], a_port[32], a_model[200], a_rec[200], log[200];
    harness_bin(kz, sizeof kz, "kz");
    snprintf(a_port, sizeof a_port, "--port=%d", port);
    snprintf(a_model, sizeof a_model, "--model=%s", h->model);
    snprintf(a_rec, sizeof a_rec, "--records=%s/play.kzr", h->dir);
    snprintf(log, sizeof log, "%s/serve.log", h->dir);
    char *argv[HARNESS_MAX_ARGS] = {kz, "serve", a_port, a_rec, "--sims=8"};
    size_t n = 5;
    bool model = true;
    for (size_t i = 0; extra && extra[i]; i++) {
        model &= strncmp(extra[i], "--player", 8) != 0 && strncmp(extra[i], "--model", 7) != 0;
        argv[n++] = (char *)extra[i];
    }
    if (model)
        argv[n++] = a_model;
    argv[n] = NULL;
    cr_assert_eq(proc_start(p, "kz-serve", NULL, log, argv), 0);
    for (double end = harness_now() + 20; harness_now() < end; harness_sleep_ms(20))
        if (harness_http(port, "/healthz", NULL, 0) == 200)
            return port;
    cr_assert_fail("kz serve did not answer /healthz: %s", proc_log_tail(p, 2000));
    return 0;
}

static int s_fetch_from(const char *host, int port, const char *method, const char *path,
                        const char *body, size_t body_len, char **out);

/* METHOD path with an optional body: the code, the body (caller frees). */
static int s_fetch(int port, const char *method, const char *path, const char *body,
                   size_t body_len, char **out)
{
    return s_fetch_from("127.0.0.1", port, method, path, body, body_len, out);
}

/* As s_fetch, to the server's address host. */
static int s_fetch_from(const char *host, int port, const char *method, const char *path,
                        const char *body, size_t body_len, char **out)
{
    size_t cap = strlen(path) + body_len + 256;
    char *req = xmalloc(cap);
    int n = snprintf(req, cap, "%s %s HTTP/1.0\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
                     method, path, body_len);
    if (body_len)
        memcpy(req + n, body, body_len);
    size_t got = 0;
    char *a = http_exchange(NULL, host, port, req, (size_t)n + body_len, 60, &got);
    free(req);
    if (!a) {
        *out = strdup("");
        return 0;
    }
    char *end = strstr(a, "\r\n\r\n");
    *out = strdup(end ? end + 4 : "");
    int code = http_code(a);
    free(a);
    return code;
}

/* One line of text ending with a newline. */
static bool s_one_line(const char *s)
{
    size_t n = strlen(s);
    return n > 1 && s[n - 1] == '\n' && !memchr(s, '\n', n - 1);
}

Test(play, kz_serve_answers_the_api_and_refuses_bad_requests_in_one_line)
{
    harness h;
    harness_init(&h, "play-api");
    proc p;
    int port = s_serve(&h, &p, NULL);
    char *body;
    cr_assert_eq(s_fetch(port, "GET", "/api/info", NULL, 0, &body), 200, "%s", body);
    cr_assert(json_valid(body), "%s", body);
    double v;
    cr_assert(json_number(body, "sims", &v) && v == 8, "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/play", NULL, 0, &body), 200);
    cr_assert(strstr(body, "<script src=\"/board.js\">") && !strstr(body, "src=\"http"),
              "our own script only");
    /* The look and the helpers every page shares, the helpers before board.js. */
    const char *css = strstr(body, "<link rel=\"stylesheet\" href=\"/page.css\">");
    const char *js = strstr(body, "<script src=\"/page.js\">");
    cr_assert(css && js && js < strstr(body, "<script src=\"/board.js\">"), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/board.js", NULL, 0, &body), 200);
    cr_assert(strstr(body, "var KZ ="));
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/page.js", NULL, 0, &body), 200);
    cr_assert(strstr(body, "function el(tag, attrs, text)"), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/page.css", NULL, 0, &body), 200);
    cr_assert(strstr(body, "\nbody { font:"), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/api/analyse?moves=7-12,17x7&sims=16", NULL, 0, &body), 200,
                 "%s", body);
    cr_assert(json_valid(body));
    cr_assert(json_number(body, "analysis.value", &v) && v >= -1 && v <= 1);
    free(body);

    /* kz analyse --json is the same engine with the same answer. */
    cr_assert_eq(s_fetch(port, "GET", "/api/analyse?moves=6-12&sims=24", NULL, 0, &body), 200);
    proc_output o;
    char args[300];
    snprintf(args, sizeof args, "analyse --model %s --sims 24 --json 6-12", h.model);
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    cr_assert(json_valid(o.out), "%s", o.out);
    const char *a1 = strstr(body, "\"analysis\""), *a2 = strstr(o.out, "\"analysis\"");
    cr_assert(a1 && a2);
    const char *cut1 = strstr(a1, "\"seconds\""), *cut2 = strstr(a2, "\"seconds\"");
    cr_assert(cut1 && cut2 && cut1 - a1 == cut2 - a2 && !memcmp(a1, a2, (size_t)(cut1 - a1)),
              "the page's %.200s, kz analyse's %.200s", a1, a2);
    cr_assert_str_eq(strstr(a1, "\"top\""), strstr(a2, "\"top\""));
    proc_output_free(&o);
    free(body);

    /* Bad requests: the right code and one line, and the server lives on. */
    char huge[12000] = "/api/legal?moves=";
    for (size_t n = strlen(huge); n + 6 < sizeof huge; n += 5)
        memcpy(huge + n, "7-12,", 6);
    static const struct {
        const char *method, *path;
        int code;
        const char *says;
    } bad[] = {
        {"GET", "/api/apply?action=7-13", 400, "illegal action '7-13'"},
        {"GET", "/api/apply?moves=8-12&action=16-9", 400, "legal here: 16x8"},
        {"GET", "/api/legal?moves=7-12%2C", 400, "comma"},
        {"GET", "/api/legal?moves=%FF%00", 400, "cannot read"},
        {"GET", "/api/legal?position=zzz", 400, "position"},
        {"GET", "/api/analyse?sims=0", 400, "sims"},
        {"GET", "/api/analyse?sims=99999999999999999999", 400, "sims"},
        {"GET", "/api/analyse?position=............w............%20b", 400, "over"},
        {"GET", "/api/legal?a=1&b=2", 400, "unknown argument"},
        {"POST", "/api/save?moves=7-12&engine=white&id=00112233445566778899aabbccddeeff", 400,
         "not over"},
        {"GET", "/api/save", 405, "POST"},
        {"DELETE", "/api/legal", 405, "GET"},
        {"GET", "/api/nope", 404, "/api/info"},
        {"GET", "/nope", 404, "/play"},
        {"POST", "/play", 405, "GET"},
        {"GET", "/games/0", 404, "no game"},
        {"GET", "/games/1", 404, "the file has 0"},
        {"GET", "/games?limit=9999", 400, "limit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int code = s_fetch(port, bad[i].method, bad[i].path, NULL, 0, &body);
        cr_assert_eq(code, bad[i].code, "%s %s: %d %s", bad[i].method, bad[i].path, code, body);
        cr_assert(strstr(body, bad[i].says), "%s %s: '%s'", bad[i].method, bad[i].path, body);
        if (strcmp(bad[i].method, "DELETE") && strcmp(bad[i].path, "/play"))
            cr_assert(s_one_line(body), "%s: one line: '%s'", bad[i].path, body);
        free(body);
    }
    int code = s_fetch(port, "GET", huge, NULL, 0, &body);
    cr_assert(code == 400 || code == 414 || code == 0, "a huge request: %d", code);
    free(body);
    /* A body the API does not take (100 KiB): dropped, or the connection closed. */
    char *big = calloc(1, 100 * 1024);
    s_fetch(port, "POST", "/api/save", big, 100 * 1024, &body);
    free(body);
    free(big);
    /* A small one: a 400 in one line (issue 28, #13, as the coordinator). */
    cr_assert_eq(s_fetch(port, "GET", "/api/info", "hello", 5, &body), 400, "%s", body);
    cr_assert(strstr(body, "the API takes none") && s_one_line(body), "%s", body);
    free(body);
    cr_assert_eq(harness_http(port, "/healthz", NULL, 0), 200, "alive after bad requests");

    /* A finished game saved, listed, and shown. */
    const game_def *g = game_default();
    rng_t rng;
    rng_seed(&rng, 3);
    game_state s;
    g->init(&s);
    char path[8192] = "/api/save?engine=black&id=0123456789abcdef0123456789abcdef&moves=";
    int actions = 0;
    while (!g->result(&s).over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)n)];
        char t[16];
        g->format_action(a, t, sizeof t);
        snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", actions ? "%2C" : "", t);
        g->apply(&s, a);
        actions++;
    }
    cr_assert_eq(s_fetch(port, "POST", path, NULL, 0, &body), 200, "%s", body);
    cr_assert(json_number(body, "index", &v) && v == 1, "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/games", NULL, 0, &body), 200, "%s", body);
    char t[64];
    cr_assert(json_number(body, "listed", &v) && v == 1, "%s", body);
    cr_assert(json_string(body, "games.0.b", t, sizeof t) && !strcmp(t, "human"), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/games/1", NULL, 0, &body), 200, "%s", body);
    cr_assert(json_valid(body));
    snprintf(t, sizeof t, "moves.%d.action", actions - 1);
    char last[16];
    cr_assert(json_string(body, t, last, sizeof last), "%d actions", actions);
    free(body);
    snprintf(args, sizeof args, "records %s/play.kzr --game 1", h.dir);
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    cr_assert(strstr(o.out, "rating game: ") && strstr(o.out, "against human"), "%s", o.out);
    proc_output_free(&o);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

Test(play, a_long_search_does_not_hold_up_healthz)
{
    harness h;
    harness_init(&h, "play-busy");
    proc p;
    const char *const extra[] = {"--player=uct:100000", NULL};
    int port = s_serve(&h, &p, extra);
    /* The search's request, sent and not read yet. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    static const char req[] = "GET /api/analyse HTTP/1.0\r\nHost: x\r\n\r\n";
    cr_assert_eq(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    /* Meanwhile: /healthz, the page, the rules. */
    cr_assert_eq(harness_http(port, "/healthz", NULL, 0), 200);
    char buf[256];
    cr_assert_eq(harness_http(port, "/api/legal?moves=7-12", buf, sizeof buf), 200);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, 0), 0, "the search (100000 playouts) is still running");
    /* Then its answer. */
    char answer[65536];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, answer + got, sizeof answer - 1 - got)) > 0)
        got += (size_t)r;
    answer[got] = 0;
    close(fd);
    cr_assert_eq(http_code(answer), 200, "%s", answer);
    cr_assert(strstr(answer, "\"work\": 100000"), "%.500s", answer);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* A connection from address `from` to 127.0.0.1:port, -1 on failure. */
static int s_connect_from(const char *from, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &a.sin_addr);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) ||
        connect(fd, (struct sockaddr *)&to, sizeof to)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* kz serve takes the coordinator's limits (issue 28, #7: 64 idle connections
 * from anywhere took all its slots for 60 s): 80 idle connections from one
 * address hold 32 (http_per_ip), and a slow-loris from 64 more addresses does
 * not keep /healthz and /play from being answered from another (336
 * connections: below the limit less the guard's free share, so nothing
 * needs to wait; a probe may try 3 times, far below the old 60 s). */
Test(play, kz_serve_is_not_blocked_by_idle_connections)
{
    harness h;
    harness_init(&h, "play-idle");
    proc p;
    int port = s_serve(&h, &p, NULL); /* its defaults: the coordinator's */
    enum { ONE = 80, MANY = 64 * 4, N = ONE + MANY };
    static const char hdr[] = "GET /play HTTP/1.1\r\nHost: x\r\nX-Slow: a";
    int fd[N];
    for (int i = 0; i < N; i++) {
        char from[32];
        if (i < ONE)
            snprintf(from, sizeof from, "127.0.0.2");
        else
            snprintf(from, sizeof from, "127.0.3.%d", 1 + (i - ONE) / 4);
        fd[i] = s_connect_from(from, port);
        cr_assert_geq(fd[i], 0, "connection %d from %s", i, from);
        if (i >= ONE)
            (void)!send(fd[i], hdr, sizeof hdr - 1, MSG_NOSIGNAL);
    }
    static const char *const paths[] = {"/healthz", "/play"};
    for (int probe = 0; probe < 10; probe++) {
        int code = -1;
        for (int attempt = 0; attempt < 3 && code != 200; attempt++) {
            code = harness_http(port, paths[probe % 2], NULL, 0);
            if (code != 200)
                harness_sleep_ms(500);
        }
        cr_assert_eq(code, 200, "probe %d (%s) not answered behind %d idle connections",
                     probe, paths[probe % 2], N);
    }
    /* Past 32 from one address the server closed them at once (and the
     * first 32 later, when idle past http_timeout_s). */
    int open_n = 0;
    for (int i = 0; i < ONE; i++) {
        struct pollfd pf = {.fd = fd[i], .events = POLLIN};
        char c;
        bool closed = poll(&pf, 1, i < 32 ? 0 : 30000) > 0 &&
                      recv(fd[i], &c, 1, MSG_DONTWAIT) <= 0;
        open_n += !closed;
    }
    cr_assert_leq(open_n, 32, "idle connections from one address left open");
    for (int i = 0; i < N; i++)
        close(fd[i]);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

Test(play, kz_serve_bad_usage)
{
    harness h;
    harness_init(&h, "play-usage");
    char garbage[200];
    snprintf(garbage, sizeof garbage, "%s/garbage.kzr", h.dir);
    cr_assert_eq(harness_write(garbage, "not records\n"), 0);
    static const struct {
        const char *fmt; /* %s: the directory */
        int status;
        const char *says;
    } bad[] = {
        {"serve", 2, "--model"},
        {"serve --model %s/none.kzm", 2, "none.kzm"},
        {"serve --model uniform --player random", 2, "not both"},
        {"serve --model uniform --port 0", 2, "port"},
        {"serve --model uniform --bind nowhere", 2, "IPv4"},
        {"serve --model uniform --sims 10 --max_sims 5", 2, "max_sims"},
        {"serve --model uniform --records %s/garbage.kzr", 2, "not a record file"},
        {"serve --model uniform extra", 2, "unexpected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[400];
        snprintf(args, sizeof args, bad[i].fmt, h.dir);
        proc_output o;
        cr_assert_eq(harness_kz(args, NULL, &o), bad[i].status, "kz %s: %s%s", args, o.out, o.err);
        cr_assert(strstr(o.err, bad[i].says), "kz %s: '%s'", args, o.err);
        cr_assert(s_one_line(o.err), "kz %s: one line: '%s'", args, o.err);
        proc_output_free(&o);
    }
    /* A port already taken: a run-time failure. */
    proc p;
    int port = s_serve(&h, &p, NULL);
    char args[400];
    snprintf(args, sizeof args, "serve --model uniform --port %d --records=", port);
    proc_output o;
    cr_assert_eq(harness_kz(args, NULL, &o), 1, "%s%s", o.out, o.err);
    cr_assert(strstr(o.err, "cannot listen"), "%s", o.err);
    proc_output_free(&o);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* Plays a random game from seed and saves it with POST /api/save under id
 * (32 hex digits): the record's index in the file (fails the test if the
 * save is not answered 200). */
static long s_save_game(int port, uint64_t seed, const char *id)
{
    const game_def *g = game_default();
    rng_t rng;
    rng_seed(&rng, seed);
    game_state s;
    g->init(&s);
    char path[8192];
    snprintf(path, sizeof path, "/api/save?engine=black&id=%s&moves=", id);
    int actions = 0;
    while (!g->result(&s).over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)n)];
        char t[16];
        g->format_action(a, t, sizeof t);
        cr_assert(strlen(path) + 20 < sizeof path, "a game short enough for one URL");
        snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", actions ? "%2C" : "", t);
        g->apply(&s, a);
        actions++;
    }
    char *body;
    cr_assert_eq(s_fetch(port, "POST", path, NULL, 0, &body), 200, "%s", body);
    double v = 0;
    cr_assert(json_number(body, "index", &v), "%s", body);
    free(body);
    return (long)v;
}

/* A record file whose last record was cut short (a write torn by a crash or
 * a full disk) is cut back to its whole records with a warning, and saving
 * goes on after them (issue 28, #11: kz serve refused to start and the
 * coordinator's saves failed from then on). Damage before the end is still
 * refused. */
Test(play, a_torn_record_file_is_cut_back_and_saving_goes_on)
{
    harness h;
    harness_init(&h, "play-torn");
    proc p;
    int port = s_serve(&h, &p, NULL);
    cr_assert_eq(s_save_game(port, 11, "00000000000000000000000000000001"), 1);
    cr_assert_eq(s_save_game(port, 12, "00000000000000000000000000000002"), 2);
    proc_stop(&p, SIGTERM, 10);
    char file[300];
    snprintf(file, sizeof file, "%s/play.kzr", h.dir);
    uint8_t *bytes;
    size_t len;
    cr_assert_eq(file_read_all(file, &bytes, &len), 0);
    cr_assert_eq(file_write_atomic(file, bytes, len - 7), 0, "the second record torn");
    port = s_serve(&h, &p, NULL);
    const char *log = proc_log_tail(&p, 4000);
    cr_assert(strstr(log, "torn last record") && strstr(log, "whole records kept: 1"), "%s", log);
    cr_assert_eq(s_save_game(port, 13, "00000000000000000000000000000003"), 2);
    /* Torn while serving: /games lists the whole records, the next save cuts
     * the tail off. */
    free(bytes);
    cr_assert_eq(file_read_all(file, &bytes, &len), 0);
    cr_assert_eq(file_write_atomic(file, bytes, len - 7), 0, "the second record torn again");
    char *body;
    double v;
    cr_assert_eq(s_fetch(port, "GET", "/games", NULL, 0, &body), 200, "%s", body);
    cr_assert(json_number(body, "listed", &v) && v == 1, "%s", body);
    free(body);
    cr_assert_eq(s_save_game(port, 14, "00000000000000000000000000000004"), 2);
    cr_assert_eq(s_fetch(port, "GET", "/games", NULL, 0, &body), 200, "%s", body);
    cr_assert(json_number(body, "listed", &v) && v == 2, "%s", body);
    free(body);
    proc_stop(&p, SIGTERM, 10);
    char args[400];
    proc_output o;
    snprintf(args, sizeof args, "records %s --game 2", file);
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    proc_output_free(&o);
    /* Damage before the last record: refused in one line, the file untouched. */
    uint8_t *now;
    size_t now_len;
    cr_assert_eq(file_read_all(file, &now, &now_len), 0);
    now[8 + 3] = 0x7f; /* the first record's length: past the limit */
    cr_assert_eq(file_write_atomic(file, now, now_len), 0);
    snprintf(args, sizeof args, "serve --model uniform --port %d --records=%s", port, file);
    cr_assert_eq(harness_kz(args, NULL, &o), 2, "%s%s", o.out, o.err);
    cr_assert(strstr(o.err, "exceeds the limit") && s_one_line(o.err), "%s", o.err);
    proc_output_free(&o);
    struct stat sb;
    cr_assert(stat(file, &sb) == 0 && (size_t)sb.st_size == now_len, "the file untouched");
    free(now);
    free(bytes);
    harness_fini(&h);
}

/* kz serve (no token) names no directory of the server in its answers: not
 * the record file's (/api/info, /api/save), not the model's (/api/analyse's
 * player), not in an error (issue 28, #12). */
Test(play, kz_serve_names_no_server_directory)
{
    harness h;
    harness_init(&h, "play-paths");
    proc p;
    int port = s_serve(&h, &p, NULL);
    char *body;
    cr_assert_eq(s_fetch(port, "GET", "/api/info", NULL, 0, &body), 200, "%s", body);
    char t[300];
    cr_assert(json_string(body, "records", t, sizeof t) && !strcmp(t, "play.kzr"), "%s", body);
    cr_assert_null(strstr(body, h.dir), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/api/analyse?moves=6-12&sims=8", NULL, 0, &body), 200,
                 "%s", body);
    cr_assert(json_string(body, "analysis.player", t, sizeof t), "%s", body);
    cr_assert(strstr(t, "mcts:") && !strchr(t, '/'), "the player without directories: %s", t);
    free(body);
    proc_stop(&p, SIGTERM, 10);
    /* A player spec's model, too. */
    char spec[400];
    snprintf(spec, sizeof spec, "--player=mcts:%s:8", h.model);
    const char *extra[] = {spec, NULL};
    port = s_serve(&h, &p, extra);
    cr_assert_eq(s_fetch(port, "GET", "/api/info", NULL, 0, &body), 200, "%s", body);
    cr_assert_null(strstr(body, h.dir), "%s", body);
    free(body);
    cr_assert_eq(s_fetch(port, "GET", "/api/analyse?moves=6-12", NULL, 0, &body), 200, "%s",
                 body);
    cr_assert_null(strstr(body, h.dir), "%s", body);
    free(body);
    cr_assert_eq(s_save_game(port, 21, "00000000000000000000000000000021"), 1);
    char file[300];
    snprintf(file, sizeof file, "%s/play.kzr", h.dir);
    cr_assert_eq(harness_write(file, "not a record file\n"), 0);
    cr_assert_eq(s_fetch(port, "GET", "/games", NULL, 0, &body), 500, "%s", body);
    cr_assert(strstr(body, "play.kzr") && !strstr(body, h.dir), "%s", body);
    free(body);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* Saves are limited (issue 28, #5: anyone who reaches the page could grow the
 * record file without end): at most saves_per_hour (a burst of that many
 * here), then a 429 in one line; a repeated id is not a new save; and none
 * once the file has records_max_mb (507), the file left as it was. No clock
 * is raced: at 2 an hour the next save is 30 minutes away. */
Test(play, kz_serve_limits_the_saves)
{
    harness h;
    harness_init(&h, "play-limits");
    proc p;
    const char *rate[] = {"--saves_per_hour=2", NULL};
    int port = s_serve(&h, &p, rate);
    cr_assert_eq(s_save_game(port, 31, "00000000000000000000000000000031"), 1);
    cr_assert_eq(s_save_game(port, 32, "00000000000000000000000000000032"), 2);
    cr_assert_eq(s_save_game(port, 31, "00000000000000000000000000000031"), 1, "again: 1");
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    char *body;
    int code = 0;
    /* A third game (its moves do not matter to the limit: a finished one). */
    rng_t rng;
    rng_seed(&rng, 33);
    char path[8192] = "/api/save?engine=black&id=00000000000000000000000000000033&moves=";
    for (int n = 0; !g->result(&s).over; n++) {
        uint16_t legal[GAME_MAX_LEGAL];
        int k = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)k)];
        char t[16];
        g->format_action(a, t, sizeof t);
        snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", n ? "%2C" : "", t);
        g->apply(&s, a);
    }
    code = s_fetch(port, "POST", path, NULL, 0, &body);
    cr_assert_eq(code, 429, "%d %s", code, body);
    cr_assert(strstr(body, "too many saves") && s_one_line(body), "%s", body);
    free(body);
    proc_stop(&p, SIGTERM, 10);
    char file[300];
    snprintf(file, sizeof file, "%s/play.kzr", h.dir);
    struct stat before, after;
    cr_assert_eq(stat(file, &before), 0);
    const char *cap[] = {"--records_max_mb=0.0001", NULL}; /* about 100 bytes */
    port = s_serve(&h, &p, cap);
    code = s_fetch(port, "POST", path, NULL, 0, &body);
    cr_assert_eq(code, 507, "%d %s", code, body);
    cr_assert(strstr(body, "record file is full") && s_one_line(body), "%s", body);
    free(body);
    cr_assert_eq(stat(file, &after), 0);
    cr_assert_eq(after.st_size, before.st_size, "the file as it was");
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* --- a person in the browser ------------------------------------------------------- */

/* The value of a JavaScript expression (JSON text; caller frees). */
static char *s_eval(browser *b, const char *expr)
{
    char *v = browser_eval(b, expr);
    cr_assert_not_null(v, "%s: %s", expr, browser_last_error(b));
    return v;
}

/* An attribute of the board. */
static long s_board_num(browser *b, const char *attr)
{
    char expr[128];
    snprintf(expr, sizeof expr, "+document.getElementById('board').getAttribute('%s')", attr);
    char *v = s_eval(b, expr);
    long n = atol(v);
    free(v);
    return n;
}

/* Waits until the page waits for the person (nothing in flight) or the game
 * is over; true for the person's turn. */
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

/* Clicks point sq of the board. */
static void s_click_point(browser *b, int sq)
{
    char sel[64];
    snprintf(sel, sizeof sel, "#board .pt[data-sq=\"%d\"]", sq);
    cr_assert_eq(browser_click(b, sel), 0, "%s", browser_last_error(b));
}

/* The text of an element (JSON string; caller frees). */
static char *s_text(browser *b, const char *id)
{
    char expr[128];
    snprintf(expr, sizeof expr, "document.getElementById('%s').textContent", id);
    return s_eval(b, expr);
}

/* The legal actions the page holds: from/to pairs into from[], to[]; count. */
static int s_legal(browser *b, int *from, int *to, bool *capture)
{
    char *v = s_eval(b, "P.state.legal.map(function (l) { return l.action; }).join(' ')");
    int n = 0;
    for (const char *p = v + 1; *p && *p != '"' && n < GAME_MAX_LEGAL;) {
        int f, t, used;
        char sep;
        cr_assert_eq(sscanf(p, "%d%c%d%n", &f, &sep, &t, &used), 3, "%s", v);
        from[n] = f;
        to[n] = t;
        capture[n] = sep == 'x';
        n++;
        p += used;
        while (*p == ' ')
            p++;
    }
    free(v);
    return n;
}

/* The person's move: a piece clicked (unless it is the one that must capture
 * on), its targets checked, then the target clicked; waits for the page.
 * Returns true when the person's turn goes on (a capture continues). */
static bool s_person_moves(browser *b, int from, int to, bool capture)
{
    long before = s_board_num(b, "data-moves");
    char *sel = s_eval(b, "P.sel");
    bool picked = atoi(sel) == from;
    free(sel);
    if (!picked)
        s_click_point(b, from);
    char expr[200];
    snprintf(expr, sizeof expr,
             "document.querySelector('#board .target%s[data-sq=\"%d\"]') !== null",
             capture ? ".capture" : "", to);
    cr_assert(browser_wait(b, expr, 10), "no %s target on %d after picking %d",
              capture ? "capture" : "move", to, from);
    s_click_point(b, to);
    snprintf(expr, sizeof expr,
             "+document.getElementById('board').getAttribute('data-moves') > %ld", before);
    cr_assert(browser_wait(b, expr, 30), "the move %d-%d was not played: %s", from, to,
              browser_errors(b));
    if (!s_wait_person(b))
        return false;
    char *st = s_text(b, "status");
    bool on = strstr(st, "Continue the capture") != NULL;
    free(st);
    return on;
}

/* Plays the person's side to the end of the game with choices from rng.
 * *multi counts the person's turns of two hops or more. Returns the
 * number of actions played in the game. */
static long s_play_to_the_end(browser *b, rng_t *rng, int *multi)
{
    int from[GAME_MAX_LEGAL], to[GAME_MAX_LEGAL];
    bool cap[GAME_MAX_LEGAL];
    while (s_wait_person(b)) {
        int hops = 0;
        bool on;
        do {
            int n = s_legal(b, from, to, cap);
            cr_assert(n > 0);
            int k = (int)rng_below(rng, (uint32_t)n);
            on = s_person_moves(b, from[k], to[k], cap[k]);
            hops++;
        } while (on);
        *multi += hops >= 2;
    }
    return s_board_num(b, "data-moves");
}

Test(play, a_person_plays_whole_games_in_chromium)
{
    if (!browser_path())
        cr_skip_test("no Chromium here (apt-get install chromium): the play page is not tested "
                     "in a browser");
    harness h;
    harness_init(&h, "play-page");
    proc p;
    int port = s_serve(&h, &p, NULL);
    char why[300], url[300];
    browser *b = browser_start(h.dir, 1100, 760, why, sizeof why);
    cr_assert_not_null(b, "%s", why);

    /* Game 1, as black from the start. */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/play?colour=black&sims=8", port);
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(s_wait_person(b));
    cr_assert_eq(s_board_num(b, "data-moves"), 0);
    /* Illegal clicks: refused with a reason, nothing played. */
    s_click_point(b, 12); /* empty, nothing picked */
    char *t = s_text(b, "notice");
    cr_assert(strstr(t, "Illegal: pick one of your pieces"), "%s", t);
    free(t);
    s_click_point(b, 20); /* a white man */
    s_click_point(b, 2);  /* a black man that cannot move */
    t = s_text(b, "notice");
    cr_assert(strstr(t, "Illegal: the piece on 2 cannot move"), "%s", t);
    free(t);
    s_click_point(b, 7);
    cr_assert(browser_wait(b, "document.querySelectorAll('#board .target').length === 1 && "
                              "document.querySelector('#board .target[data-sq=\"12\"]')", 10),
              "7 picked: its one target, 12");
    s_click_point(b, 13); /* a white man, not a target */
    t = s_text(b, "notice");
    cr_assert(strstr(t, "Illegal"), "%s", t);
    free(t);
    cr_assert_eq(s_board_num(b, "data-moves"), 0, "no illegal click was played");
    /* The hint: the engine's top moves with their shares, drawn too. */
    cr_assert_eq(browser_click(b, "#hint"), 0);
    cr_assert(browser_wait(b, "document.querySelectorAll('#hints .hintline').length >= 3", 20),
              "%s", browser_errors(b));
    t = s_text(b, "hints");
    cr_assert(strstr(t, "% of 8 simulations"), "%s", t);
    free(t);
    cr_assert(browser_wait(b, "document.querySelector('#board .hint') !== null", 10));
    /* A move, the engine's reply, and the engine's opinion of the move. */
    cr_assert_not(s_person_moves(b, 7, 12, false));
    cr_assert(s_board_num(b, "data-moves") >= 2, "the engine answered");
    t = s_text(b, "opinion");
    cr_assert(strstr(t, "Your 7-12: the engine ") && strstr(t, "\u2192"), "%s", t);
    free(t);
    cr_assert(browser_wait(
        b, "document.getElementById('value').getAttribute('data-value') !== null", 10));
    cr_assert(browser_wait(b, "document.querySelector('#board .lastpath') !== null", 10),
              "the engine's move is marked");
    /* White took the man on 12 (17x7): black must take back, 2x12. Picked:
     * its target shown as a capture; the screenshot. */
    s_click_point(b, 2);
    cr_assert(browser_wait(b, "document.querySelector('#board .target.capture[data-sq=\"12\"]') "
                              "!== null && document.querySelectorAll('#hints .hintline').length",
                           10), "%s", browser_errors(b));
    char shot[600];
    snprintf(shot, sizeof shot, "%s/play.png", harness_bin_dir());
    cr_assert_eq(browser_screenshot(b, shot), 0, "%s", browser_last_error(b));
    /* Flip and back. */
    cr_assert_eq(browser_click(b, "#flip"), 0);
    cr_assert_eq(s_board_num(b, "data-flip"), 1);
    cr_assert_eq(browser_click(b, "#flip"), 0);
    cr_assert_eq(s_board_num(b, "data-flip"), 0);
    /* Undo: back to the start. */
    cr_assert_eq(browser_click(b, "#undo"), 0);
    cr_assert(browser_wait(b, "document.getElementById('board').getAttribute('data-moves') === '0'",
                           20));
    /* Then to the end. */
    rng_t rng;
    rng_seed(&rng, 21);
    int multi = 0;
    long n1 = s_play_to_the_end(b, &rng, &multi);
    cr_assert(
        browser_wait(
            b, "document.getElementById('saved').textContent.indexOf('Saved as game 1') === 0", 20),
        "%s", browser_errors(b));
    t = s_text(b, "status");
    cr_assert(strstr(t, "win") || strstr(t, "Draw"), "%s", t);
    free(t);

    /* Game 2, from a position where black must take two men, hop by hop. */
    snprintf(url, sizeof url,
             "http://127.0.0.1:%d/play?colour=black&sims=8&position=b.....b....w.....w.....ww%%20b",
             port);
    cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
    cr_assert(s_wait_person(b));
    t = s_text(b, "status");
    cr_assert(strstr(t, "you must capture"), "%s", t);
    free(t);
    cr_assert(s_person_moves(b, 6, 16, true), "the capture goes on after the first hop");
    t = s_text(b, "status");
    cr_assert(strstr(t, "Continue the capture with the piece on 16"), "%s", t);
    free(t);
    s_click_point(b, 0); /* another piece, mid-sequence */
    t = s_text(b, "notice");
    cr_assert(strstr(t, "Illegal: you must go on capturing with the piece on 16"), "%s", t);
    free(t);
    cr_assert_not(s_person_moves(b, 16, 18, true), "the second hop ends the turn");
    cr_assert(browser_wait(b, "document.querySelectorAll('#board .captured').length >= 1", 10));
    multi++;
    long n2 = s_play_to_the_end(b, &rng, &multi);
    cr_assert(
        browser_wait(
            b, "document.getElementById('saved').textContent.indexOf('Saved as game 2') === 0", 20),
        "%s", browser_errors(b));
    cr_assert_str_eq(browser_errors(b), "", "script errors");
    browser_stop(&b);

    /* Both games in the record file, valid, as long as played. */
    char path[300], err[200];
    snprintf(path, sizeof path, "%s/play.kzr", h.dir);
    record_file *f;
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    game_record *r = record_new();
    cr_assert_eq(record_file_read(f, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r->n_moves, n1);
    cr_assert_eq(record_validate(game_default(), r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r->candidate_player, 1, "the engine played white");
    cr_assert_eq(record_file_read(f, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r->n_moves, n2);
    cr_assert_str_eq(r->start_position, "b.....b....w.....w.....ww b");
    cr_assert_eq(record_file_read(f, r, err, sizeof err), KZ_ENOTFOUND);
    record_file_close(&f);
    record_destroy(&r);
    cr_assert(multi >= 1);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* kz serve, play and analyse take the game from the model file: a draughts
 * model without --game serves draughts; --game naming another game than the
 * model's is a one-line usage error. */
Test(play, the_game_comes_from_the_model_file)
{
    harness h;
    harness_init(&h, "play-model-game");
    char args[600], path[300];
    snprintf(path, sizeof path, "%s/draughts.kzm", h.dir);
    snprintf(args, sizeof args, "model init --game draughts --blocks 1 --filters 4 %s", path);
    proc_output o;
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    proc_output_free(&o);
    char model_arg[320];
    snprintf(model_arg, sizeof model_arg, "--model=%s", path);
    const char *const extra[] = {model_arg, NULL};
    proc p;
    int port = s_serve(&h, &p, extra);
    char *body;
    cr_assert_eq(s_fetch(port, "GET", "/api/info", NULL, 0, &body), 200, "%s", body);
    cr_assert(strstr(body, "{\"game\": \"draughts\""), "%s", body);
    free(body);
    proc_stop(&p, SIGTERM, 10);
    snprintf(args, sizeof args, "serve --model %s --game alquerque --port 1 --records=", path);
    cr_assert_eq(harness_kz(args, NULL, &o), 2, "%s%s", o.out, o.err);
    cr_assert(strstr(o.err, "--game alquerque, but the model") && strstr(o.err, "is for draughts"),
              "%s", o.err);
    proc_output_free(&o);
    snprintf(args, sizeof args, "analyse --model %s --sims 2 11-15", path);
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    proc_output_free(&o);
    harness_fini(&h);
}

/* Issue 28, #5: without a token anyone who reached the port could fill the
 * disk with saved games. kz serve saves only this machine's games unless
 * --remote_saves: a save from the machine's outside address is refused
 * (403, one line), one from loopback is kept, and with --remote_saves the
 * outside one too. */
Test(play, saves_from_other_machines_are_refused_unless_allowed)
{
    char outside[64];
    if (!harness_outside_ipv4(outside, sizeof outside))
        cr_skip_test("this machine has no address but loopback");
    harness h;
    harness_init(&h, "play-remote");
    const char *const bind[] = {"--bind=0.0.0.0", NULL};
    proc p;
    int port = s_serve(&h, &p, bind);
    const char *save = "/api/save?engine=black&id=000000000000000000000000000000aa&moves=7-12";
    char *body;
    cr_assert_eq(s_fetch_from(outside, port, "POST", save, NULL, 0, &body), 403, "%s", body);
    cr_assert(s_one_line(body) && strstr(body, "another machine") &&
              strstr(body, "--remote_saves"), "%s", body);
    free(body);
    cr_assert_geq(s_save_game(port, 5, "000000000000000000000000000000ab"), 0); /* kept */
    proc_stop(&p, SIGTERM, 10);
    const char *const allow[] = {"--bind=0.0.0.0", "--remote_saves", NULL};
    port = s_serve(&h, &p, allow);
    cr_assert_neq(s_fetch_from(outside, port, "POST", save, NULL, 0, &body), 403, "%s", body);
    cr_assert_null(strstr(body, "another machine"), "%s", body);
    free(body);
    proc_stop(&p, SIGTERM, 10);
    harness_fini(&h);
}

/* The endgame tables for the engine people play and analyse with (--tb_dir):
 * `kz analyse` (mcts:uniform:2) plays the tables' keeping action of table
 * positions and says the value is exact, where without them it misses some;
 * `kz play` plays their best; `kz serve` answers "tables": true with the
 * tables' best over the API (false at the start) and its page says the
 * evaluation is exact (Chromium); a bad --tb_dir is one line and exit 2
 * for each of the three. */
Test(play, the_endgame_tables_answer_for_analyse_play_and_serve, .timeout = 600)
{
    harness h;
    harness_init(&h, "play-tb");
    char tbdir[300], args[1200], out[16384];
    snprintf(tbdir, sizeof tbdir, "%s/tb", h.dir);
    snprintf(args, sizeof args, "tb build --pieces 3 --dir %s --threads 1", tbdir);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    char err[600];
    tb_set *t = tb_open(tbdir, 0, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    const game_def *g = game_default();
    enum { N = 8 };
    game_state ts[N];
    uint16_t keep[N];
    cr_assert_eq(tb_test_positions(t, N, 11, ts, keep), N);
    int missed = 0;
    for (int i = 0; i < N; i++) {
        char pos[64], want[16], best[16];
        g->format_position(&ts[i], pos, sizeof pos);
        engine_format_action(g, &ts[i], keep[i], want, sizeof want);
        int wdl;
        cr_assert_eq(tb_probe_wdl(t, &ts[i], &wdl), 0);
        for (int with = 1; with >= 0; with--) {
            snprintf(args, sizeof args,
                     "analyse --model uniform --sims 2 --json --position='%s'%s%s",
                     pos, with ? " --tb_dir " : "", with ? tbdir : "");
            proc_output o;
            cr_assert_eq(harness_kz(args, NULL, &o), 0, "kz %s: %s", args, o.err);
            cr_assert(json_valid(o.out), "%s", o.out);
            cr_assert(json_string(o.out, "analysis.best", best, sizeof best), "%s", o.out);
            cr_assert(strstr(o.out, with ? "\"tables\": true" : "\"tables\": false"), "%s",
                      o.out);
            if (with) {
                cr_assert_str_eq(best, want, "%s: %s, not the keeping %s", pos, best, want);
                double v;
                cr_assert(json_number(o.out, "analysis.value", &v) && v == wdl, "%s", o.out);
            } else {
                missed += strcmp(best, want) != 0;
            }
            proc_output_free(&o);
        }
    }
    cr_assert_gt(missed, 0, "without the tables mcts:uniform:2 found all %d: no test", N);
    /* The text answer says where the value comes from. */
    const char *win = "....Wb.......B........... b"; /* Black wins by 13-11 */
    snprintf(args, sizeof args, "analyse --model uniform --sims 2 --position='%s' --tb_dir %s",
             win, tbdir);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "chosen: 13-11 (the endgame tables' best)"), "%s", out);
    cr_assert(strstr(out, "value: +1.000 (exact"), "%s", out);
    /* kz play: the engine (Black) moves first and plays the tables' best. */
    snprintf(args, sizeof args, "play --model uniform --sims 2 --color w --position='%s' "
             "--tb_dir %s", win, tbdir);
    cr_assert_eq(harness_kz_out(args, "quit\n", true, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "last: black 13-11"), "%s", out);

    /* kz serve with the tiny model and the tables. */
    char a_tb[400];
    snprintf(a_tb, sizeof a_tb, "--tb_dir=%s", tbdir);
    const char *extra[] = {a_tb, NULL};
    proc p;
    int port = s_serve(&h, &p, extra);
    char *body;
    cr_assert_eq(s_fetch(port, "GET", "/api/info", NULL, 0, &body), 200, "%s", body);
    double v;
    cr_assert(json_number(body, "tables", &v) && v == 3, "%s", body);
    free(body);
    for (int i = 0; i < N; i++) {
        char pos[64], url[200], want[16], best[16];
        g->format_position(&ts[i], pos, sizeof pos);
        engine_format_action(g, &ts[i], keep[i], want, sizeof want);
        *strchr(pos, ' ') = 0;
        snprintf(url, sizeof url, "/api/analyse?position=%s%%20%c", pos,
                 g->to_move(&ts[i]) ? 'w' : 'b');
        cr_assert_eq(s_fetch(port, "GET", url, NULL, 0, &body), 200, "%s: %s", url, body);
        cr_assert(strstr(body, "\"tables\": true"), "%s", body);
        cr_assert(json_string(body, "analysis.best", best, sizeof best), "%s", body);
        cr_assert_str_eq(best, want, "%s: %s", url, body);
        free(body);
    }
    cr_assert_eq(s_fetch(port, "GET", "/api/analyse?moves=6-12", NULL, 0, &body), 200, "%s",
                 body);
    cr_assert(strstr(body, "\"tables\": false"), "%s", body);
    free(body);
    /* The page says so (Chromium, where installed): the exact evaluation,
     * and the hint as each move's result. */
    if (browser_path()) {
        char why[300], url[300];
        browser *b = browser_start(h.dir, 1100, 760, why, sizeof why);
        cr_assert_not_null(b, "%s", why);
        snprintf(url, sizeof url, "http://127.0.0.1:%d/play?colour=black&sims=8&position="
                 "....Wb.......B...........%%20b", port);
        cr_assert_eq(browser_open(b, url, 30), 0, "%s", browser_last_error(b));
        cr_assert(s_wait_person(b));
        cr_assert(browser_wait(b, "document.getElementById('value').textContent"
                                  ".indexOf('+1.00 (before your move, exact: the endgame "
                                  "tables)') >= 0", 20),
                  "%s", browser_errors(b));
        cr_assert_eq(browser_click(b, "#hint"), 0);
        cr_assert(browser_wait(b, "document.querySelectorAll('#hints .hintline').length >= 3",
                               20), "%s", browser_errors(b));
        char *text = s_text(b, "hints");
        cr_assert(strstr(text, "13-11  wins (the endgame tables)"), "%s", text);
        cr_assert(strstr(text, "draws (the endgame tables)"), "%s", text);
        free(text);
        cr_assert_str_eq(browser_errors(b), "", "script errors: %s", browser_errors(b));
        browser_stop(&b);
    } else {
        cr_log_warn("no Chromium here: the play page with the tables is not checked");
    }
    proc_stop(&p, SIGTERM, 10);
    tb_close(&t);

    /* A bad --tb_dir: one line, exit 2, naming the directory. */
    char empty[400];
    snprintf(empty, sizeof empty, "%s/empty", h.dir);
    cr_assert_eq(mkdir(empty, 0700), 0);
    static const struct {
        const char *fmt; /* %s: the directory */
        const char *says;
    } bad[] = {
        {"analyse --model uniform --tb_dir %s/none", "/none: no such tablebase directory"},
        {"analyse --tb_dir %s/empty", "/empty: no endgame tables there"},
        {"analyse --game alquerque --tb_dir %s/tb", "the endgame tables are khreibaga's"},
        {"play --model uniform --tb_dir %s/none", "/none: no such tablebase directory"},
        {"serve --model uniform --records= --tb_dir %s/none", "/none: no such tablebase"},
        {"serve --model uniform --records= --tb_dir %s/empty", "no endgame tables there"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i].fmt, h.dir);
        proc_output o;
        cr_assert_eq(harness_kz(args, NULL, &o), 2, "kz %s: %s%s", args, o.out, o.err);
        cr_assert(strstr(o.err, bad[i].says) && strstr(o.err, "tb_dir: "), "kz %s: '%s'", args,
                  o.err);
        cr_assert(s_one_line(o.err), "kz %s: one line: '%s'", args, o.err);
        proc_output_free(&o);
    }
    harness_fini(&h);
}
