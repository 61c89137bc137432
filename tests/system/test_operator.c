/* What an operator meets, against the real programs: --version everywhere
 * and in /status and /metrics, the figures /metrics adds, `kz help
 * COMMAND`, kz status's messages, `kz store` beside a busy writer (read-only),
 * a coordinator that cannot bind its ports (and leaves no store behind), an
 * initial_model that cannot be used, and journald priorities on log lines. */
#include <criterion/criterion.h>
#include <math.h>
#include <errno.h>
#include <lmdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"
#include "net/wire.h"

TestSuite(operator, .fini = harness_cleanup);

/* The line a program prints for --version (NUL-terminated in buf). */
static void s_version(const char *prog, char *buf, size_t cap)
{
    const char *const args[] = {"--version", NULL};
    proc_output o;
    cr_assert_eq(harness_run_bin(prog, args, NULL, &o), 0, "%s --version: %s", prog, o.err);
    snprintf(buf, cap, "%s", o.out);
    proc_output_free(&o);
}

/* The value of the sample NAME in a /metrics text; NaN when absent. */
static double s_metric_num(const char *text, const char *name)
{
    double v = NAN;
    metrics_value(text, name, &v);
    return v;
}

Test(operator, every_program_has_the_same_version_and_status_and_metrics_name_it)
{
    static const char *const progs[] = {"kz", "kz-coordinator", "kz-worker", "kz-trainer"};
    char want[128];
    snprintf(want, sizeof want, "%s\n", util_version());
    for (size_t i = 0; i < 4; i++) {
        char got[256], line[160];
        s_version(progs[i], got, sizeof got);
        snprintf(line, sizeof line, "%s %s", progs[i], want);
        cr_assert_str_eq(got, line, "%s --version", progs[i]);
    }
    cr_assert(!strncmp(util_version(), "0.", 2), "%s", util_version());

    harness h;
    harness_init(&h, "operator-version");
    harness_coord_start(&h, NULL);
    /* A trainer's report: its figures in /metrics; it is live but no worker. */
    void *zctx = zmq_ctx_new();
    client *t = harness_client(zctx, h.endpoint, NULL, "op-trainer", "trainer", 3000);
    wire_trainer_stats st = {.step = 12, .loss = 3.5f, .policy_loss = 2.25f,
                             .value_loss = 0.75f, .l2_loss = 0.5f, .learning_rate = 0.002f};
    cr_assert_eq(client_report_stats(t, &st), 0, "%s", client_last_error(t));
    char *doc = NULL;
    for (double end = harness_now() + 10; harness_now() < end; harness_sleep(0.02)) {
        free(doc);
        doc = NULL;
        cr_assert_eq(http_get(NULL, "127.0.0.1", h.http_port, "/status", &doc), 0);
        double v;
        if (json_number(doc, "trainer.step", &v) && v == 12)
            break;
    }
    char s[128];
    cr_assert(json_string(doc, "coordinator.version", s, sizeof s) &&
                  !strcmp(s, util_version()), "coordinator.version '%s'", s);
    cr_assert(json_string(doc, "workers.list.0.version", s, sizeof s) &&
                  !strcmp(s, util_version()), "a client's version (its Hello) '%s'", s);
    free(doc);
    cr_assert_eq(http_get(NULL, "127.0.0.1", h.http_port, "/metrics", &doc), 0);
    char build[200];
    snprintf(build, sizeof build, "\nkz_build_info{version=\"%s\",protocol=\"%d\",game=\"%s\"} 1\n",
             util_version(), WIRE_PROTOCOL_VERSION, game_default()->name);
    static const char *const has[] = {
        "\n# TYPE kz_build_info gauge\n", "\nprocess_start_time_seconds ",
        "\n# TYPE process_cpu_seconds_total counter\n",
        "\nkz_trainer_policy_loss 2.25\n", "\nkz_trainer_value_loss 0.75\n",
        "\nkz_trainer_l2_loss 0.5\n", "\nkz_trainer_learning_rate 0.0020000000949949026\n",
        "\nkz_last_arena_candidate 0\n", "\nkz_last_arena_promoted 0\n",
        "\nkz_last_arena_games{result=\"win\"} 0\n",
        "\nkz_workers_live 0\n", /* the trainer is not a worker */
        "\nkz_clients_live 1\n"};
    cr_assert(strstr(doc, build), "%s not in /metrics", build);
    for (size_t i = 0; i < sizeof has / sizeof has[0]; i++)
        cr_assert(strstr(doc, has[i]), "'%s' not in /metrics:\n%s", has[i], doc);
    /* Prometheus' conventions: event times are Unix times (not "seconds
     * since"), the process_* series are there and sane. */
    double now = (double)time_wall_ms() / 1000.0;
    static const struct { const char *name; double lo, hi; } vals[] = {
        {"process_start_time_seconds", -600, 1},
        {"kz_trainer_last_report_timestamp_seconds", -600, 1},
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        double v = s_metric_num(doc, vals[i].name);
        cr_assert(v >= now + vals[i].lo && v <= now + vals[i].hi, "%s %f, now %f",
                  vals[i].name, v, now);
    }
    cr_assert_gt(s_metric_num(doc, "process_resident_memory_bytes"), 1 << 20, "%s", doc);
    cr_assert_gt(s_metric_num(doc, "process_virtual_memory_bytes"), 1 << 20, "%s", doc);
    cr_assert_gt(s_metric_num(doc, "process_open_fds"), 3, "%s", doc);
    cr_assert_geq(s_metric_num(doc, "process_max_fds"), s_metric_num(doc, "process_open_fds"));
    cr_assert_geq(s_metric_num(doc, "process_cpu_seconds_total"), 0, "%s", doc);
    cr_assert_null(strstr(doc, "_since_seconds"), "%s", doc);
    cr_assert_null(strstr(doc, "{player=\"v"), "no label names a model version: %s", doc);
    /* One spelling for the label values the coordinator names (snake_case):
     * every reason, kind, result and outcome (players and workers are names). */
    static const char *const keys[] = {"{reason=\"", "{kind=\"", "result=\"", "{outcome=\""};
    int labels = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (const char *p = strstr(doc, keys[k]); p; p = strstr(p + 1, keys[k])) {
            const char *v = p + strlen(keys[k]);
            size_t n = strcspn(v, "\"");
            cr_assert(strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") == n,
                      "label value '%.*s' is not snake_case", (int)n, v);
            labels++;
        }
    cr_assert_gt(labels, 20, "%d label values checked", labels);
    free(doc);
    client_destroy(&t);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(operator, kz_help_command_and_kz_status_messages)
{
    proc_output a, b;
    cr_assert_eq(harness_kz("help match", NULL, &a), 0);
    cr_assert_eq(harness_kz("match --help", NULL, &b), 0);
    cr_assert_str_eq(a.out, b.out, "kz help match is kz match --help");
    cr_assert(strstr(a.out, "usage: kz match"), "%s", a.out);
    proc_output_free(&a);
    proc_output_free(&b);
    cr_assert_eq(harness_kz("help nosuch", NULL, &a), 2);
    cr_assert(strstr(a.err, "unknown command 'nosuch'"), "%s", a.err);
    proc_output_free(&a);
    /* One legal action is one action. */
    cr_assert_eq(harness_kz("analyse --sims 10 7-12", NULL, &a), 0, "%s", a.err);
    cr_assert(strstr(a.out, "(1 legal action)"), "%s", a.out);
    proc_output_free(&a);

    harness h;
    harness_init(&h, "operator-status");
    const char *const spec[] = {"--gate=spec", "--arena_games=10", NULL};
    harness_coord_start(&h, spec);
    char args[160];
    /* A path of our own is asked for as given, and named so in the error. */
    snprintf(args, sizeof args, "status http://127.0.0.1:%d/nope", h.http_port);
    cr_assert_eq(harness_kz(args, NULL, &a), 1);
    char want[96];
    snprintf(want, sizeof want, "http://127.0.0.1:%d/nope answered 404", h.http_port);
    cr_assert(strstr(a.err, want) && !strstr(a.err, "/nope/nope"), "%s", a.err);
    proc_output_free(&a);
    /* An arena without a game yet has no score. */
    void *zctx = zmq_ctx_new();
    client *t = harness_client(zctx, h.endpoint, NULL, "op-trainer", "trainer", 3000);
    model_arch arch;
    model_arch_default(&arch, game_default());
    arch.blocks = 0;
    arch.filters = 4;
    model *m = model_new(&arch, 5);
    uint8_t *blob;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
    model_destroy(&m);
    cr_assert_eq(client_submit_candidate(t, blob, len, 1, 50, NULL), 0, "%s",
                 client_last_error(t));
    free(blob);
    client_destroy(&t);
    zmq_ctx_term(zctx);
    cr_assert_eq(harness_wait_status(&h, "\"arena\"", "candidate", 2, 10), 2);
    snprintf(args, sizeof args, "status http://127.0.0.1:%d", h.http_port);
    cr_assert_eq(harness_kz(args, NULL, &a), 0, "%s", a.err);
    cr_assert(strstr(a.out, "0/10 played, +0 =0 -0 (score -)"), "%s", a.out);
    proc_output_free(&a);
    harness_fini(&h);
}

/* kz store reads a live store without a write transaction: a writer holding
 * LMDB's writer lock (as the coordinator does while it commits) does not
 * keep it waiting. */
Test(operator, kz_store_reads_beside_a_writer)
{
    harness h;
    harness_init(&h, "operator-store");
    harness_coord_start(&h, NULL);
    harness_submit_random_games(&h, 3, 11);
    harness_coord_kill(&h, SIGTERM);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/store", h.dir);
    MDB_env *env;
    MDB_txn *txn;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 8);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0, "the test holds the writer lock");
    char args[200];
    snprintf(args, sizeof args, "store --data_dir=%s --models", dir);
    proc_opts po = {.timeout_s = 30};
    proc_output o;
    int rc = harness_kz(args, &po, &o);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    cr_assert_eq(rc, 0, "kz store waited for the writer or failed (%d): %s", rc, o.err);
    cr_assert(strstr(o.out, ": 3 games,") && strstr(o.out, "model 1 "), "%s", o.out);
    proc_output_free(&o);
    /* A directory with an LMDB file that is not a store: a clear failure. */
    char other[160];
    snprintf(other, sizeof other, "%s/other", h.dir);
    mkdir(other, 0755);
    cr_assert_eq(mdb_env_create(&env), 0);
    cr_assert_eq(mdb_env_open(env, other, 0, 0644), 0);
    mdb_env_close(env);
    snprintf(args, sizeof args, "store --data_dir=%s", other);
    cr_assert_eq(harness_kz(args, NULL, &o), 1, "%s", o.err);
    cr_assert(strstr(o.err, "cannot open"), "%s", o.err);
    proc_output_free(&o);
    harness_fini(&h);
}

/* A TCP socket listening on 127.0.0.1:port (the port taken); its fd. */
static int s_listen(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0,
              "cannot take port %d: %s", port, strerror(errno));
    return fd;
}

/* Runs kz-coordinator on dir/store with h's ports to its exit (it must not
 * start); its exit status and stderr (caller frees). */
static int s_coord_fails(const harness *h, const char *extra, char **err)
{
    char a_dir[128], a_bind[96], a_pub[96], a_port[48], a_model[160];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", h->dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", h->endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", h->pub);
    snprintf(a_port, sizeof a_port, "--http_port=%d", h->http_port);
    snprintf(a_model, sizeof a_model, "--initial_model=%s", h->model);
    const char *const args[] = {a_dir, a_bind, a_pub, a_port, a_model, "--sync=false", extra,
                                NULL};
    proc_output o;
    proc_opts po = {.timeout_s = 30};
    int rc = harness_run_bin("kz-coordinator", args, &po, &o);
    *err = strdup(o.err);
    proc_output_free(&o);
    return rc;
}

Test(operator, a_coordinator_that_cannot_bind_leaves_no_store)
{
    harness h;
    harness_init(&h, "operator-bind");
    char data[160], *err;
    snprintf(data, sizeof data, "%s/store/data.mdb", h.dir);
    /* The status port taken. */
    int fd = s_listen(h.http_port);
    cr_assert_eq(s_coord_fails(&h, NULL, &err), 1);
    close(fd);
    cr_assert(strstr(err, "cannot serve HTTP") && strstr(err, "in use"), "%s", err);
    free(err);
    cr_assert_neq(access(data, F_OK), 0, "the store was made before the ports were bound");
    /* The request port taken. */
    int port = atoi(strrchr(h.endpoint, ':') + 1);
    fd = s_listen(port);
    cr_assert_eq(s_coord_fails(&h, NULL, &err), 1);
    close(fd);
    cr_assert(strstr(err, "cannot bind"), "%s", err);
    free(err);
    cr_assert_neq(access(data, F_OK), 0, "the store was made before the ports were bound");
    /* With the ports free it starts, with the initial model as version 1. */
    harness_coord_start(&h, NULL);
    cr_assert_eq(access(data, F_OK), 0);
    harness_coord_kill(&h, SIGTERM);
    /* Started again with the same file: nothing to say. With another one:
     * said that it is ignored. */
    harness_coord_start(&h, NULL);
    harness_coord_kill(&h, SIGTERM);
    cr_assert_eq(harness_count(h.coord_log, "is ignored"), 0, "%s", h.coord_log);
    char other[160], arg[200];
    snprintf(other, sizeof other, "%s/other.kzm", h.dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "model init --blocks 0 --filters 4 --seed 9 %s", other);
    proc_output o;
    cr_assert_eq(harness_kz(cmd, NULL, &o), 0, "%s", o.err);
    proc_output_free(&o);
    snprintf(arg, sizeof arg, "--initial_model=%s", other);
    const char *const extra[] = {arg, NULL};
    harness_coord_start(&h, extra);
    cr_assert(harness_wait_log(h.coord_log, "is ignored", 10), "no word on the unused "
              "initial_model in %s", h.coord_log);
    harness_fini(&h);
}

/* Under systemd (JOURNAL_STREAM names stderr's device and inode) each log
 * line starts with its syslog priority; elsewhere it does not. */
Test(operator, log_lines_carry_journald_priorities_when_stderr_is_the_journal)
{
    harness h;
    harness_init(&h, "operator-journal");
    char log[160], other[160], ckpt[160], ckpt2[160];
    snprintf(log, sizeof log, "%s/journal.log", h.dir);
    snprintf(other, sizeof other, "%s/plain.log", h.dir);
    snprintf(ckpt, sizeof ckpt, "--checkpoint_dir=%s/t1", h.dir);
    snprintf(ckpt2, sizeof ckpt2, "--checkpoint_dir=%s/t2", h.dir);
    cr_assert_eq(harness_write(log, ""), 0);
    struct stat sb;
    cr_assert_eq(stat(log, &sb), 0);
    char js[64];
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino);
    /* A trainer with no coordinator: it says at once where it looks, then
     * warns that nobody answers. */
    const char *const args[] = {"--endpoint=tcp://127.0.0.1:9", ckpt, "--timeout_ms=100",
                                "--retries=1", "--wait_ms=100", NULL};
    setenv("JOURNAL_STREAM", js, 1);
    pid_t p = harness_spawn("kz-trainer", args, log);
    setenv("JOURNAL_STREAM", "1:1", 1); /* inherited, but not this stderr's */
    const char *const args2[] = {"--endpoint=tcp://127.0.0.1:9", ckpt2, "--timeout_ms=100",
                                 "--retries=1", "--wait_ms=100", NULL};
    pid_t p2 = harness_spawn("kz-trainer", args2, other);
    unsetenv("JOURNAL_STREAM");
    cr_assert(harness_wait_log(log, "<4>", 20), "no warning line: %s", log);
    cr_assert(harness_wait_log(other, "not answering", 20));
    harness_signal(p, SIGTERM);
    harness_signal(p2, SIGTERM);
    int st;
    harness_wait(p, 20, &st);
    harness_wait(p2, 20, &st);
    char *j = harness_read(log), *o = harness_read(other);
    const char *info = strstr(j, "coordinator at tcp://127.0.0.1:9");
    const char *warn = strstr(j, "coordinator not answering");
    cr_assert(info && warn && info < warn, "where it looks comes first: %s", j);
    cr_assert(!strncmp(j, "<6>", 3), "the first line is info: %.200s", j);
    cr_assert(warn - j >= 3 && strstr(j, "<4>") && strstr(j, "<4>") < warn, "%s", j);
    for (const char *l = j; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        cr_assert(*l == '<' || *l == 0, "every line has a priority: %.120s", l);
    cr_assert_null(strstr(o, "<6>"), "no priorities without the journal: %.300s", o);
    cr_assert_null(strstr(o, "<4>"));
    free(j);
    free(o);
    harness_fini(&h);
}

/* tools/learn_compare.sh puts make learn runs side by side: a table of each
 * run's last rated point and an HTML page with the table and the plot; a run
 * without curve.csv, or a single run, is a usage error. */
Test(operator, learn_compare_puts_runs_side_by_side)
{
    char *dir = harness_tmpdir("learn-compare");
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/a %s/b && "
             "printf 'minutes,cpu_minutes,games,steps,version,elo,elo_lo,elo_hi\\n"
             "1.00,2.00,100,10,2,300.0,200.0,400.0\\n2.00,4.00,200,20,5,500.5,400.0,600.0\\n' "
             "> %s/a/curve.csv && "
             "printf 'minutes,cpu_minutes,games,steps,version,elo,elo_lo,elo_hi\\n"
             "1.00,2.00,90,9,2,,,\\n2.00,4.00,180,18,4,450.0,350.0,550.0\\n' > %s/b/curve.csv",
             dir, dir, dir, dir);
    cr_assert_eq(harness_sh(cmd, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "%s/tools/learn_compare.sh -o %s/cmp.html %s/a %s/b",
             harness_src_dir(), dir, dir, dir);
    cr_assert_eq(harness_sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "v5") && strstr(out, "+500  [+400, +600]"), "%s", out);
    cr_assert(strstr(out, "v4") && strstr(out, "+450  [+350, +550]"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s/cmp.html", dir);
    char *html = harness_read(cmd);
    cr_assert_not_null(html);
    cr_assert(strstr(html, "<svg") && strstr(html, "<polyline") && strstr(html, "+500"), "%s",
              html);
    free(html);
    snprintf(cmd, sizeof cmd, "%s/tools/learn_compare.sh %s/a 2>&1", harness_src_dir(), dir);
    cr_assert_eq(harness_sh(cmd, out, sizeof out), 2, "%s", out);
    snprintf(cmd, sizeof cmd, "%s/tools/learn_compare.sh %s/a %s/none 2>&1", harness_src_dir(),
             dir, dir);
    cr_assert_eq(harness_sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "curve.csv: no such file"), "%s", out);
    harness_rm_rf(dir);
    free(dir);
}
