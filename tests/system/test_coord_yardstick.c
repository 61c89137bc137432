/* The coordinator's yardstick (issue 24; server/yardstick.c), against the
 * real kz-coordinator, kz and Chromium: the best's perfect-play accuracy on
 * the book's first openings and its value head's error by phase on labelled
 * positions, measured in the background per new best, in /status (the same
 * figures as `kz solve accuracy` and `kz yardstick value` of the same model
 * file), /metrics, `kz status` and the dashboard, its history kept across a restart; a
 * new best waits for yardstick_minutes; bad settings stop the start with a
 * line. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"
#include "games/game.h"
#include "net/client.h"
#include "net/wire.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "tests/harness/harness.h"

TestSuite(coord_yardstick, .fini = harness_cleanup);

#define STATUS_CAP (1 << 20)

/* GET /status (caller frees). */
static char *s_status(const harness *h)
{
    char *buf = xmalloc(STATUS_CAP);
    int code = harness_http(h->http_port, "/status", buf, STATUS_CAP);
    cr_assert_eq(code, 200, "GET /status: %d", code);
    cr_assert(json_valid(buf), "%s", buf);
    return buf;
}

/* Registers a second model (version 2, parent 1) through a trainer client;
 * its blob (caller frees). */
static uint8_t *s_add_candidate(const harness *h, size_t *len)
{
    void *zctx = zmq_ctx_new();
    client *t = harness_client(zctx, h->endpoint, NULL, "trainer-y", "trainer", 3000);
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 0;
    a.filters = 4;
    model *m = model_new(&a, 42);
    uint8_t *blob;
    cr_assert_eq(modelfile_to_bytes(m, &blob, len), 0);
    model_destroy(&m);
    wire_candidate_ack ack;
    cr_assert_eq(client_submit_candidate(t, blob, *len, 1, 77, &ack), 0, "%s",
                 client_last_error(t));
    cr_assert_eq(ack.version, 2);
    client_destroy(&t);
    zmq_ctx_term(zctx);
    return blob;
}

/* The first n labelled positions of the committed file, into path. */
static void s_positions(const char *path, int n)
{
    char src[512];
    snprintf(src, sizeof src, "%s/tools/bench/books/khreibaga-positions.txt", harness_src_dir());
    char *all = harness_read_file(src);
    cr_assert_not_null(all, "cannot read %s", src);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    int k = 0;
    for (char *line = strtok(all, "\n"); line && k < n; line = strtok(NULL, "\n"))
        if (line[0] != '#') {
            fprintf(f, "%s\n", line);
            k++;
        }
    fclose(f);
    free(all);
    cr_assert_eq(k, n);
}

/* "K of N" after `label` in kz's output. */
static void s_of(const char *out, const char *label, int *k, int *n)
{
    const char *p = strstr(out, label);
    cr_assert_not_null(p, "no '%s' in %s", label, out);
    cr_assert_eq(sscanf(p + strlen(label), "%d of %d", k, n), 2, "%s", p);
}

/* Chromium's DOM of the dashboard, or NULL when no Chromium is installed. */
static char *s_dashboard_dom(const harness *h)
{
    const char *browser = NULL;
    static const char *const names[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
    for (size_t i = 0; i < 2 && !browser; i++)
        if (access(names[i], X_OK) == 0)
            browser = names[i];
    if (!browser)
        return NULL;
    char url[64], profile[200];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", h->http_port);
    snprintf(profile, sizeof profile, "--user-data-dir=%s/chromium", h->dir);
    char *const dump[] = {(char *)browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-quic", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update",
                          "--disable-sync", profile, "--virtual-time-budget=5000",
                          "--dump-dom", url, NULL};
    proc_output o;
    proc_opts po = {.timeout_s = 90};
    cr_assert_eq(proc_capture(dump, &po, &o), 0, "chromium: %s", o.err);
    char *dom = strdup(o.out);
    proc_output_free(&o);
    return dom;
}

/* Perfect play on the book's first 12 openings (a small budget, no tables)
 * and the value head on 40 labelled positions (5 compared at 200 and 1600
 * simulations), for v1 at the start and v2 once it is the best. */
Test(coord_yardstick, the_best_s_perfect_play_accuracy_and_value_calibration, .timeout = 600)
{
    harness h;
    harness_init(&h, "yardstick");
    char pos[160], a_pos[200], out[16384], args[600];
    snprintf(pos, sizeof pos, "%s/positions.txt", h.dir);
    s_positions(pos, 40);
    snprintf(a_pos, sizeof a_pos, "--value_positions=%s", pos);
    const char *const extra[] = {"--perfect_positions=12", "--perfect_nodes=100000",
                                 "--perfect_tt_mb=16", a_pos, "--value_compare=5",
                                 "--yardstick_minutes=0", NULL};
    harness_coord_start(&h, extra);
    cr_assert_eq(harness_wait_status(&h, "\"yardstick\"", "version", 1, 120), 1,
                 "v1 not measured (see %s)", h.coord_log);
    size_t len;
    uint8_t *blob2 = s_add_candidate(&h, &len);
    cr_assert_eq(harness_wait_status(&h, "\"models\"", "best", 2, 10), 2, "v2 is not the best");
    cr_assert_eq(harness_wait_status(&h, "\"yardstick\"", "version", 2, 120), 2,
                 "v2 not measured (see %s)", h.coord_log);
    char path2[160];
    snprintf(path2, sizeof path2, "%s/v2.kzm", h.dir);
    cr_assert_eq(file_write_atomic(path2, blob2, len), 0);
    free(blob2);

    char *st = s_status(&h);
    double v, x, computing;
    cr_assert(json_number(st, "yardstick.version", &v) && v == 2);
    cr_assert(json_number(st, "yardstick.computing", &computing) && computing == 0);
    cr_assert(json_number(st, "yardstick.interval_minutes", &x) && x == 0);
    cr_assert(json_number(st, "yardstick.cpu_seconds", &x) && x >= 0, "%s", st);
    cr_assert(json_number(st, "yardstick.perfect.positions", &x) && x == 12);
    cr_assert(json_number(st, "yardstick.perfect.pieces", &x) && x == 0);
    cr_assert(json_number(st, "yardstick.perfect.nodes", &x) && x == 100000);
    double pj, pk, sj, sk, settled;
    cr_assert(json_number(st, "yardstick.perfect.settled", &settled) && settled <= 12);
    cr_assert(json_number(st, "yardstick.perfect.policy.judged", &pj) &&
              json_number(st, "yardstick.perfect.policy.keep", &pk));
    cr_assert(pk <= pj && pj <= 12 && pj >= 3, "policy %g of %g", pk, pj);
    cr_assert(json_number(st, "yardstick.perfect.search.judged", &sj) &&
              json_number(st, "yardstick.perfect.search.keep", &sk));
    cr_assert(sk <= sj && sj <= 12 && sj >= 3, "search %g of %g", sk, sj);
    cr_assert(json_number(st, "yardstick.value.positions", &x) && x == 40);
    cr_assert(json_number(st, "yardstick.value.compare", &x) && x == 5);
    double n_mid, n_end, n_open, mse, compared, differ;
    cr_assert(json_number(st, "yardstick.value.phases.opening.n", &n_open) &&
              json_number(st, "yardstick.value.phases.middle.n", &n_mid) &&
              json_number(st, "yardstick.value.phases.ending.n", &n_end));
    cr_assert_eq(n_open + n_mid + n_end, 40, "%s", st);
    cr_assert(json_number(st, "yardstick.value.mse", &mse) && mse >= 0 && mse <= 4, "%s", st);
    cr_assert(json_number(st, "yardstick.value.compared", &compared) && compared <= 5 &&
              compared >= 1);
    cr_assert(json_number(st, "yardstick.value.differ", &differ) && differ <= compared);
    /* The history: v1 then v2, v2's point the figures above. */
    double hv;
    cr_assert(json_number(st, "yardstick.history.0.0", &hv) && hv == 1, "%s", st);
    cr_assert(json_number(st, "yardstick.history.1.0", &hv) && hv == 2, "%s", st);
    cr_assert(!json_number(st, "yardstick.history.2.0", &hv), "two versions: %s", st);
    cr_assert(json_number(st, "yardstick.history.1.6", &hv) && hv == sj, "%s", st);
    if (sj > 0)
        cr_assert(json_number(st, "yardstick.history.1.2", &hv) && fabs(hv - sk / sj) < 1e-3);
    cr_assert(json_number(st, "yardstick.history.1.12", &hv) && fabs(hv - mse) < 1e-3, "%s", st);
    cr_assert(json_number(st, "yardstick.history.1.14", &hv) && hv == compared, "%s", st);
    double sjc, skc;
    cr_assert(json_number(st, "yardstick.perfect.search.judged_choice", &sjc) &&
              json_number(st, "yardstick.perfect.search.keep_choice", &skc) && skc <= sjc);
    free(st);

    /* The same figures as kz of the same model file. */
    snprintf(args, sizeof args,
             "solve accuracy %s --positions 12 --sims 200 --seed 1 --tables '' --nodes 100000 "
             "--tt_mb 16", path2);
    cr_assert_eq(harness_kz_out(args, NULL, false, out, sizeof out), 0, "%s", out);
    int k, n;
    char label[256];
    snprintf(label, sizeof label, "policy:%s: ", path2);
    s_of(out, label, &k, &n);
    cr_assert(k == pk && n == pj, "policy %d of %d, the coordinator %g of %g: %s", k, n, pk, pj,
              out);
    snprintf(label, sizeof label, "mcts:%s:200: ", path2);
    s_of(out, label, &k, &n);
    cr_assert(k == sk && n == sj, "search %d of %d, the coordinator %g of %g: %s", k, n, sk, sj,
              out);
    const char *where = strstr(strstr(out, label), "where a turn loses value ");
    cr_assert(where && sscanf(where, "where a turn loses value %d of %d", &k, &n) == 2, "%s", out);
    cr_assert(k == skc && n == sjc, "where a turn loses value: %d of %d, the coordinator %g of "
              "%g", k, n, skc, sjc);
    snprintf(args, sizeof args, "yardstick value %s --positions %s --compare 5", path2, pos);
    cr_assert_eq(harness_kz_out(args, NULL, false, out, sizeof out), 0, "%s", out);
    const char *all = strstr(out, "  all ");
    double kz_mse;
    cr_assert(all && sscanf(all + 6, " %*d %lf", &kz_mse) == 1, "%s", out);
    cr_assert(fabs(kz_mse - mse) < 0.0006, "kz %g, the coordinator %g: %s", kz_mse, mse, out);
    char want[128];
    snprintf(want, sizeof want, "a different move in %.1f%% of %d positions",
             100.0 * differ / compared, (int)compared);
    cr_assert(strstr(out, want), "%s not in %s", want, out);
    cr_expect_eq(harness_count(h.coord_log, "yardstick of v1 in "), 1);
    cr_expect_eq(harness_count(h.coord_log, "yardstick of v2 in "), 1);

    /* /metrics. */
    char *met = xmalloc(STATUS_CAP);
    cr_assert_eq(harness_http(h.http_port, "/metrics", met, STATUS_CAP), 200);
    double mv;
    cr_assert(metrics_value(met, "kz_yardstick_version", &mv) && mv == 2, "%s", met);
    cr_assert(metrics_value(met, "kz_value_squared_error", &mv) && fabs(mv - mse) < 1e-3);
    free(met);

    /* kz status says it in a line. */
    snprintf(args, sizeof args, "status http://127.0.0.1:%d", h.http_port);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "yardstick   v2: ") && strstr(out, "200 and 1600 simulations differ"),
              "%s", out);

    /* The dashboard: the line and the three plots along versions. */
    char *dom = s_dashboard_dom(&h);
    if (dom) {
        cr_assert(strstr(dom, "<span id=\"yardstick\">yardstick: v2 perfect play on 12 positions"),
                  "%.2000s", strstr(dom, "id=\"summary\"") ? strstr(dom, "id=\"summary\"") : dom);
        char *svg = strstr(dom, "id=\"yperfect\"");
        cr_assert_not_null(svg);
        if (pj > 0)
            cr_assert(strstr(svg, "<title>v2: the raw policy loses value in "), "%.3000s", svg);
        cr_assert(strstr(dom, "<title>v1: mean squared error ") &&
                      strstr(dom, "<title>v2: mean squared error "),
                  "the value error plot");
        cr_assert(strstr(dom, "<title>v2: 200 and 1600 simulations choose differently in "),
                  "the budget plot");
        free(dom);
    } else {
        cr_log_warn("no Chromium here: the dashboard's yardstick plots are not checked");
    }

    /* A restart keeps the history; the best measured again replaces its point. */
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, extra);
    cr_assert(harness_wait_log(h.coord_log, "yardstick of v2 in ", 120));
    for (double end = harness_now() + 120; harness_now() < end; harness_sleep(0.1))
        if (harness_count(h.coord_log, "yardstick of v2 in ") == 2)
            break;
    cr_assert_eq(harness_count(h.coord_log, "yardstick of v2 in "), 2, "see %s", h.coord_log);
    harness_sleep(0.2); /* the next status refresh */
    st = s_status(&h);
    cr_assert(json_number(st, "yardstick.history.0.0", &hv) && hv == 1, "v1 kept: %s", st);
    cr_assert(json_number(st, "yardstick.history.1.0", &hv) && hv == 2, "%s", st);
    cr_assert(!json_number(st, "yardstick.history.2.0", &hv), "v2 once: %s", st);
    free(st);
    harness_fini(&h);
}

/* With yardstick_minutes, a new best waits: v2 is not measured within the
 * minutes after v1. And without the yardstick, "yardstick" is null. */
Test(coord_yardstick, a_new_best_waits_for_the_interval, .timeout = 600)
{
    harness h;
    harness_init(&h, "yardstick-wait");
    char pos[160], a_pos[200];
    snprintf(pos, sizeof pos, "%s/positions.txt", h.dir);
    s_positions(pos, 10);
    snprintf(a_pos, sizeof a_pos, "--value_positions=%s", pos);
    const char *const extra[] = {a_pos, "--value_compare=0", "--yardstick_minutes=60", NULL};
    harness_coord_start(&h, extra);
    cr_assert_eq(harness_wait_status(&h, "\"yardstick\"", "version", 1, 60), 1,
                 "v1 not measured (see %s)", h.coord_log);
    size_t len;
    free(s_add_candidate(&h, &len));
    cr_assert_eq(harness_wait_status(&h, "\"models\"", "best", 2, 10), 2, "v2 is not the best");
    harness_sleep(1.5);
    char *st = s_status(&h);
    double v;
    cr_assert(json_number(st, "yardstick.version", &v) && v == 1, "%s", st);
    cr_assert(json_number(st, "yardstick.computing", &v) && v == 0, "%s", st);
    cr_assert(strstr(st, "\"perfect\": null"), "perfect play is off: %s", st);
    free(st);
    cr_expect_eq(harness_count(h.coord_log, "yardstick of v2"), 0);
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, NULL);
    st = s_status(&h);
    cr_assert(strstr(st, "\"yardstick\": null"), "%.400s", strstr(st, "\"yardstick\""));
    free(st);
    harness_fini(&h);
}

/* Bad settings stop the coordinator at its start with one line naming the
 * setting. */
Test(coord_yardstick, bad_settings_stop_the_start_with_a_line, .timeout = 600)
{
    harness h;
    harness_init(&h, "yardstick-bad");
    char pos[160];
    snprintf(pos, sizeof pos, "%s/bad.txt", h.dir);
    cr_assert_eq(harness_write(pos, "not a position\t1\n"), 0);
    char a_dir[160], a_bind[96], a_pub[96], a_bad[200];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", h.dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", h.endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", h.pub);
    snprintf(a_bad, sizeof a_bad, "--value_positions=%s", pos);
    static const struct {
        const char *arg[2];
        const char *line;
    } cases[] = {
        {{"--value_positions=/nonexistent/positions.txt", NULL},
         "value_positions: /nonexistent/positions.txt: No such file"},
        {{"--perfect_positions=5", "--perfect_file=/nonexistent/book.txt"},
         "perfect_file: /nonexistent/book.txt: No such file"},
        {{"--perfect_file=/nonexistent/book.txt", NULL}, "perfect_file: needs perfect_positions"},
        {{"--perfect_positions=5", "--game=alquerque"},
         "perfect_positions: perfect play is known for khreibaga only"},
        {{NULL, NULL}, "bad.txt:1: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char log[200];
        snprintf(log, sizeof log, "%s/coord-%zu.log", h.dir, i);
        const char *args[8] = {a_dir, a_bind, a_pub, "--http_port=0"};
        int n = 4;
        if (!cases[i].arg[0])
            args[n++] = a_bad;
        for (int k = 0; k < 2 && cases[i].arg[k]; k++)
            args[n++] = cases[i].arg[k];
        args[n] = NULL;
        pid_t pid = harness_spawn("kz-coordinator", args, log);
        int wst;
        cr_assert(harness_wait(pid, 30, &wst), "case %zu did not stop", i);
        cr_expect_neq(harness_exit_code(wst), 0, "case %zu", i);
        cr_expect_eq(harness_count(log, cases[i].line), 1, "case %zu: '%s' once in %s", i,
                     cases[i].line, log);
        cr_expect_eq(harness_count(log, "ERROR"), 2, "case %zu: the line and the exit: %s", i,
                     log);
    }
    harness_fini(&h);
}
