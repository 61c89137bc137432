/* Tests of deployment: `make install`'s script (tools/install.sh) lays out
 * the programs, the systemd units with their paths filled in and the example
 * configuration, without ever overwriting an operator's configuration, and
 * `make uninstall` (--uninstall) removes them again but the configuration;
 * `systemd-analyze verify` accepts the installed units; and the example
 * configuration files are accepted by the real programs. Every wait has its
 * own deadline (no Criterion .timeout: it leaks 48 bytes under ASan). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/harness.h"

static const char *s_units[] = {"kz-coordinator.service", "kz-worker@.service",
                                "kz-trainer.service"};
static const char *s_confs[] = {"coordinator.conf", "worker.conf", "trainer.conf"};
static const char *s_unit_progs[] = {"kz-coordinator", "kz-worker", "kz-trainer"};
static const char *s_progs[] = {"kz", "kz-coordinator", "kz-worker", "kz-trainer"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static char *s_tmp; /* this test's directory, removed in s_fini */

static void s_fini(void)
{
    proc_kill_all();
    harness_rm_rf(s_tmp);
    free(s_tmp);
    s_tmp = NULL;
}

static bool s_exists(const char *path, mode_t type)
{
    struct stat st;
    return !stat(path, &st) && (st.st_mode & S_IFMT) == type;
}

/* Runs tools/install.sh with the given options (and --uninstall when
 * uninstall); returns its exit status. */
static int s_install_mode(char *out, size_t cap, const char *destdir, const char *prefix,
                          const char *sysconfdir, bool uninstall)
{
    char script[1024], b[1024], d[1024], p[1024], s[1024];
    snprintf(script, sizeof script, "%s/tools/install.sh", harness_src_dir());
    snprintf(b, sizeof b, "--build=%s", harness_bin_dir());
    snprintf(d, sizeof d, "--destdir=%s", destdir);
    snprintf(p, sizeof p, "--prefix=%s", prefix);
    snprintf(s, sizeof s, "--sysconfdir=%s", sysconfdir);
    char *argv[] = {"sh", script, b, d, p, s, uninstall ? "--uninstall" : NULL, NULL};
    return proc_run(argv, out, cap, 60);
}

static int s_install(char *out, size_t cap, const char *destdir, const char *prefix,
                     const char *sysconfdir)
{
    return s_install_mode(out, cap, destdir, prefix, sysconfdir, false);
}

Test(deploy, install_layout, .fini = s_fini)
{
    s_tmp = harness_tmpdir("install");
    cr_assert_not_null(s_tmp);
    char out[8192], path[2048];
    int rc = s_install(out, sizeof out, s_tmp, "/usr/local", "/etc");
    cr_assert_eq(rc, 0, "install.sh failed (%d):\n%s", rc, out);

    /* Programs: all four, executable. */
    for (size_t i = 0; i < N_OF(s_progs); i++) {
        snprintf(path, sizeof path, "%s/usr/local/bin/%s", s_tmp, s_progs[i]);
        cr_expect(!access(path, X_OK), "%s not installed as an executable", path);
    }

    /* Units: the final paths (never DESTDIR), no placeholder left. */
    for (size_t i = 0; i < N_OF(s_units); i++) {
        snprintf(path, sizeof path, "%s/usr/local/lib/systemd/system/%s", s_tmp, s_units[i]);
        char *u = harness_read_file(path);
        cr_assert_not_null(u, "%s missing", path);
        cr_expect_null(strstr(u, "@BINDIR@"), "%s keeps @BINDIR@", s_units[i]);
        cr_expect_null(strstr(u, "@SYSCONFDIR@"), "%s keeps @SYSCONFDIR@", s_units[i]);
        cr_expect_null(strstr(u, "@DOCDIR@"), "%s keeps @DOCDIR@", s_units[i]);
        cr_expect_null(strstr(u, s_tmp), "%s names the staging directory", s_units[i]);
        cr_expect_not_null(strstr(u, "ExecStart=/usr/local/bin/kz-"), "%s: ExecStart", s_units[i]);
        cr_expect_not_null(strstr(u, "/etc/khreibaga/"), "%s: configuration", s_units[i]);
        cr_expect_not_null(strstr(u, "Restart=on-failure"), "%s: Restart", s_units[i]);
        cr_expect_not_null(strstr(u, "ProtectSystem=strict"), "%s: sandbox", s_units[i]);
        cr_expect_not_null(strstr(u, "NoNewPrivileges=yes"), "%s: sandbox", s_units[i]);
        cr_expect_not_null(strstr(u, "LoadCredential=curve.key:/etc/khreibaga/keys/"),
                           "%s: the secret key as a credential", s_units[i]);
        cr_expect_not_null(strstr(u, "--curve_secret_key=%d/curve.key"), "%s: its path",
                           s_units[i]);
        free(u);
    }

    /* The target that groups the worker instances: installed, its paths
     * filled in; each instance is enabled into it and stops with it. */
    snprintf(path, sizeof path, "%s/usr/local/lib/systemd/system/kz-workers.target", s_tmp);
    char *tg = harness_read_file(path);
    cr_assert_not_null(tg, "%s missing", path);
    cr_expect_null(strstr(tg, "@DOCDIR@"), "kz-workers.target keeps @DOCDIR@");
    cr_expect_not_null(strstr(tg, "WantedBy=multi-user.target"), "%s", tg);
    free(tg);
    snprintf(path, sizeof path, "%s/usr/local/lib/systemd/system/kz-worker@.service", s_tmp);
    char *wu = harness_read_file(path);
    cr_assert_not_null(wu);
    cr_expect_not_null(strstr(wu, "\nPartOf=kz-workers.target\n"), "%s", wu);
    cr_expect_not_null(strstr(wu, "\nWantedBy=kz-workers.target\n"), "%s", wu);
    free(wu);

    /* Configuration: examples and /etc copies equal to deploy/. */
    for (size_t i = 0; i < N_OF(s_confs); i++) {
        char src[1024];
        snprintf(src, sizeof src, "%s/deploy/%s", harness_src_dir(), s_confs[i]);
        char *want = harness_read_file(src);
        cr_assert_not_null(want, "%s missing", src);
        snprintf(path, sizeof path, "%s/etc/khreibaga/%s", s_tmp, s_confs[i]);
        char *got = harness_read_file(path);
        cr_assert_not_null(got, "%s not installed", path);
        cr_expect_str_eq(got, want);
        free(got);
        snprintf(path, sizeof path, "%s/usr/local/share/khreibaga/examples/%s", s_tmp,
                 s_confs[i]);
        got = harness_read_file(path);
        cr_assert_not_null(got, "%s not installed", path);
        cr_expect_str_eq(got, want);
        free(got);
        free(want);
    }
    snprintf(path, sizeof path, "%s/usr/local/share/doc/khreibaga/README.md", s_tmp);
    cr_expect(s_exists(path, S_IFREG), "README not installed");
    snprintf(path, sizeof path, "%s/etc/khreibaga/keys", s_tmp);
    cr_expect(s_exists(path, S_IFDIR), "no directory for the keys");

    /* Installing again keeps the operator's edited configuration. */
    snprintf(path, sizeof path, "%s/etc/khreibaga/coordinator.conf", s_tmp);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("# edited by the operator\nhttp_port = 9999\n", f);
    fclose(f);
    rc = s_install(out, sizeof out, s_tmp, "/usr/local", "/etc");
    cr_assert_eq(rc, 0, "second install failed:\n%s", out);
    char *kept = harness_read_file(path);
    cr_assert_not_null(kept);
    cr_expect_str_eq(kept, "# edited by the operator\nhttp_port = 9999\n",
                     "install overwrote an edited configuration");
    free(kept);
    cr_expect_not_null(strstr(out, "keeping"), "the second install should say it kept files");

    /* Uninstalling removes programs, units, examples and documents, and
     * keeps the configuration (and says so). */
    rc = s_install_mode(out, sizeof out, s_tmp, "/usr/local", "/etc", true);
    cr_assert_eq(rc, 0, "uninstall failed:\n%s", out);
    for (size_t i = 0; i < N_OF(s_progs); i++) {
        snprintf(path, sizeof path, "%s/usr/local/bin/%s", s_tmp, s_progs[i]);
        cr_expect_neq(access(path, F_OK), 0, "%s left behind", path);
    }
    for (size_t i = 0; i < N_OF(s_units); i++) {
        snprintf(path, sizeof path, "%s/usr/local/lib/systemd/system/%s", s_tmp, s_units[i]);
        cr_expect_neq(access(path, F_OK), 0, "%s left behind", path);
    }
    snprintf(path, sizeof path, "%s/usr/local/share/khreibaga", s_tmp);
    cr_expect_neq(access(path, F_OK), 0, "%s left behind", path);
    snprintf(path, sizeof path, "%s/usr/local/share/doc/khreibaga", s_tmp);
    cr_expect_neq(access(path, F_OK), 0, "%s left behind", path);
    snprintf(path, sizeof path, "%s/etc/khreibaga/coordinator.conf", s_tmp);
    kept = harness_read_file(path);
    cr_assert_not_null(kept, "uninstall removed the configuration");
    cr_expect_str_eq(kept, "# edited by the operator\nhttp_port = 9999\n");
    free(kept);
    cr_expect_not_null(strstr(out, "Kept"), "%s", out);
}

Test(deploy, install_bad_arguments, .fini = s_fini)
{
    char script[1024], out[2048];
    snprintf(script, sizeof script, "%s/tools/install.sh", harness_src_dir());
    char *a1[] = {"sh", script, "--bogus=1", NULL};
    cr_expect_eq(proc_run(a1, out, sizeof out, 20), 2, "unknown argument: %s", out);
    cr_expect_not_null(strstr(out, "unknown argument"), "%s", out);
    char *a2[] = {"sh", script, "--prefix=relative/path", NULL};
    cr_expect_eq(proc_run(a2, out, sizeof out, 20), 2, "relative prefix: %s", out);
    cr_expect_not_null(strstr(out, "not an absolute path"), "%s", out);
    s_tmp = harness_tmpdir("install-nobuild");
    cr_assert_not_null(s_tmp);
    char b[1024];
    snprintf(b, sizeof b, "--build=%s/none", s_tmp);
    char d[1024];
    snprintf(d, sizeof d, "--destdir=%s", s_tmp);
    char *a3[] = {"sh", script, b, d, NULL};
    cr_expect_eq(proc_run(a3, out, sizeof out, 20), 1, "nothing built: %s", out);
    cr_expect_not_null(strstr(out, "not built"), "%s", out);
}

/* systemd-analyze comes with Debian's `systemd` package; `verify` works in a
 * container whose PID 1 is not systemd (it loads the units offline). */
Test(deploy, systemd_analyze_verify, .fini = s_fini)
{
    char out[16384];
    char *probe[] = {"systemd-analyze", "--version", NULL};
    if (proc_run(probe, out, sizeof out, 20) != 0) {
        fprintf(stderr, "deploy::systemd_analyze_verify: SKIPPED: systemd-analyze is not "
                        "installed (Debian package systemd)\n");
        cr_skip_test("systemd-analyze is not installed (Debian package systemd)");
    }
    /* Installed with a real prefix (no DESTDIR) so that the units name
     * programs that exist: verify checks that ExecStart is executable. */
    s_tmp = harness_tmpdir("verify");
    cr_assert_not_null(s_tmp);
    char prefix[1024], etc[1024];
    snprintf(prefix, sizeof prefix, "%s/usr", s_tmp);
    snprintf(etc, sizeof etc, "%s/etc", s_tmp);
    int rc = s_install(out, sizeof out, "", prefix, etc);
    cr_assert_eq(rc, 0, "install.sh failed:\n%s", out);
    char *argv[8];
    char paths[N_OF(s_units) + 1][2200];
    size_t n = 0;
    argv[n++] = "systemd-analyze";
    argv[n++] = "verify";
    for (size_t i = 0; i < N_OF(s_units); i++) {
        char built[1024];
        cr_assert(!access(harness_bin(built, sizeof built, s_unit_progs[i]), X_OK),
                  "%s is not built", built);
        snprintf(paths[i], sizeof paths[i], "%s/lib/systemd/system/%s", prefix, s_units[i]);
        argv[n++] = paths[i];
    }
    snprintf(paths[N_OF(s_units)], sizeof paths[0], "%s/lib/systemd/system/kz-workers.target",
             prefix);
    argv[n++] = paths[N_OF(s_units)];
    argv[n] = NULL;
    rc = proc_run(argv, out, sizeof out, 60);
    cr_expect_eq(rc, 0, "systemd-analyze verify failed (%d):\n%s", rc, out);
    /* Unknown keys and bad values are only warnings: any output is a failure. */
    cr_expect_str_empty(out, "systemd-analyze verify complained:\n%s", out);
}

/* The example coordinator.conf is accepted by kz-coordinator as it is (only
 * the addresses, the data directory and the key files are moved out of the
 * way: it runs with CurveZMQ). */
Test(deploy, example_coordinator_conf, .fini = s_fini)
{
    s_tmp = harness_tmpdir("conf");
    cr_assert_not_null(s_tmp);
    int http = tcp_free_port(), req = tcp_free_port(), pub = tcp_free_port();
    cr_assert(http && req && pub);
    char exe[1024], conf[1024], a_data[1024], a_bind[128], a_pub[128], a_http[64], log[1024];
    harness_bin(exe, sizeof exe, "kz-coordinator");
    snprintf(conf, sizeof conf, "--config=%s/deploy/coordinator.conf", harness_src_dir());
    snprintf(a_data, sizeof a_data, "--data_dir=%s/store", s_tmp);
    snprintf(a_bind, sizeof a_bind, "--bind=tcp://127.0.0.1:%d", req);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=tcp://127.0.0.1:%d", pub);
    snprintf(a_http, sizeof a_http, "--http_port=%d", http);
    snprintf(log, sizeof log, "%s/coordinator.log", s_tmp);
    char keys[1024], a_key[1100], a_allow[1100];
    snprintf(keys, sizeof keys, "%s/keys", s_tmp);
    harness_keygen(keys, "coordinator");
    char allow[1100];
    snprintf(allow, sizeof allow, "%s/allow", keys);
    cr_assert_eq(harness_write(allow, "# no client: the coordinator alone\n"), 0);
    snprintf(a_key, sizeof a_key, "--curve_secret_key=%s/coordinator.key", keys);
    snprintf(a_allow, sizeof a_allow, "--allow_keys=%s", allow);
    char *argv[] = {exe,    conf,  a_data, a_bind, a_pub, "--http_bind=127.0.0.1", a_http,
                    a_key, a_allow, NULL};
    proc c;
    cr_assert_eq(proc_start(&c, "coordinator", NULL, log, argv), 0);
    char *body = NULL;
    double end = harness_now() + 30;
    while (harness_now() < end && proc_alive(&c) &&
           http_get(NULL, "127.0.0.1", http, "/healthz", &body))
        harness_sleep_ms(50);
    cr_assert_not_null(body, "kz-coordinator with deploy/coordinator.conf never became healthy:"
                             "\n%s", proc_log_tail(&c, 2000));
    free(body);
    cr_assert_eq(http_get(NULL, "127.0.0.1", http, "/status", &body), 0);
    double v;
    cr_expect(json_number(body, "arena.games", &v) || json_number(body, "models.best", &v),
              "status: %s", body);
    free(body);
    int st = proc_stop(&c, SIGTERM, 30);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "coordinator exit status %d:\n%s", st,
              proc_log_tail(&c, 2000));
    char *logtext = harness_read_file(log);
    cr_assert_not_null(logtext);
    /* The file's settings took effect (the flags only moved the addresses). */
    cr_expect_not_null(strstr(logtext, "arena_games = 50"), "log:\n%s", logtext);
    cr_expect_not_null(strstr(logtext, "simulations = 200"), "log:\n%s", logtext);
    cr_expect_not_null(strstr(logtext, "curve: CurveZMQ on"), "log:\n%s", logtext);
    free(logtext);
}

/* A client of the coordinator started from an example configuration. */
static bool s_status_has_client(int http, const char *role, const char *id_prefix)
{
    char *body = NULL;
    if (http_get(NULL, "127.0.0.1", http, "/status", &body))
        return false;
    bool found = false;
    for (int i = 0; i < 64 && !found; i++) {
        char path[64], got[128], id[128];
        double alive = 0;
        snprintf(path, sizeof path, "workers.list.%d.role", i);
        if (!json_string(body, path, got, sizeof got))
            break;
        snprintf(path, sizeof path, "workers.list.%d.id", i);
        json_string(body, path, id, sizeof id);
        snprintf(path, sizeof path, "workers.list.%d.alive", i);
        json_number(body, path, &alive);
        found = !strcmp(got, role) && alive && !strncmp(id, id_prefix, strlen(id_prefix));
    }
    free(body);
    return found;
}

/* The example worker.conf and trainer.conf are accepted by kz-worker and
 * kz-trainer as they are (only the coordinator's address, the directories
 * and the key files are moved): both connect to a coordinator over CurveZMQ
 * with their own keys and stop cleanly on SIGTERM. */
Test(deploy, example_worker_and_trainer_conf, .fini = s_fini)
{
    char exe_w[1024], exe_t[1024], exe_c[1024], kz[1024];
    harness_bin(exe_w, sizeof exe_w, "kz-worker");
    harness_bin(exe_t, sizeof exe_t, "kz-trainer");
    harness_bin(exe_c, sizeof exe_c, "kz-coordinator");
    harness_bin(kz, sizeof kz, "kz");
    cr_assert(!access(exe_w, X_OK) && !access(exe_t, X_OK), "kz-worker or kz-trainer is not built");
    s_tmp = harness_tmpdir("conf2");
    cr_assert_not_null(s_tmp);
    char model[1024], out[2048];
    snprintf(model, sizeof model, "%s/tiny.model", s_tmp);
    char *init[] = {kz, "model", "init", "--blocks", "1", "--filters", "8", "--value-hidden", "8",
                    model, NULL};
    cr_assert_eq(proc_run(init, out, sizeof out, 60), 0, "kz model init: %s", out);

    int http = tcp_free_port(), req = tcp_free_port(), pub = tcp_free_port();
    cr_assert(http && req && pub);
    char a_data[1024], a_bind[128], a_pub[128], a_http[64], a_model[1100], log_c[1024];
    snprintf(a_data, sizeof a_data, "--data_dir=%s/store", s_tmp);
    snprintf(a_bind, sizeof a_bind, "--bind=tcp://127.0.0.1:%d", req);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=tcp://127.0.0.1:%d", pub);
    snprintf(a_http, sizeof a_http, "--http_port=%d", http);
    snprintf(a_model, sizeof a_model, "--initial_model=%s", model);
    snprintf(log_c, sizeof log_c, "%s/coordinator.log", s_tmp);
    char keys[1024], allow[1100], a_key[1100], a_allow[1200], server[1100];
    snprintf(keys, sizeof keys, "%s/keys", s_tmp);
    snprintf(allow, sizeof allow, "%s/allow", keys);
    harness_keygen(keys, "coordinator");
    harness_keygen(keys, "deploy-example-1");
    harness_allow_key(allow, keys, "deploy-example-1", "worker");
    harness_keygen(keys, "deploy-example-trainer");
    harness_allow_key(allow, keys, "deploy-example-trainer", "trainer");
    snprintf(a_key, sizeof a_key, "--curve_secret_key=%s/coordinator.key", keys);
    snprintf(a_allow, sizeof a_allow, "--allow_keys=%s", allow);
    snprintf(server, sizeof server, "--curve_server_key=%s/coordinator.pub", keys);
    char *cargv[] = {exe_c, a_data, a_bind, a_pub, a_http, a_model, "--simulations=4",
                     "--status_ms=100", a_key, a_allow, NULL};
    proc c, w, t;
    cr_assert_eq(proc_start(&c, "coordinator", NULL, log_c, cargv), 0);

    char w_conf[1024], w_ep[128], w_sub[128], w_cache[1024], log_w[1024];
    snprintf(w_conf, sizeof w_conf, "--config=%s/deploy/worker.conf", harness_src_dir());
    snprintf(w_ep, sizeof w_ep, "--endpoint=tcp://127.0.0.1:%d", req);
    snprintf(w_sub, sizeof w_sub, "--sub_endpoint=tcp://127.0.0.1:%d", pub);
    snprintf(w_cache, sizeof w_cache, "--model_cache_dir=%s/cache", s_tmp);
    snprintf(log_w, sizeof log_w, "%s/worker.log", s_tmp);
    char w_key[1100];
    snprintf(w_key, sizeof w_key, "--curve_secret_key=%s/deploy-example-1.key", keys);
    char *wargv[] = {exe_w,  w_conf, w_ep, w_sub, w_cache, "--worker_id=deploy-example-1",
                     server, w_key, NULL};
    cr_assert_eq(proc_start(&w, "worker", NULL, log_w, wargv), 0);

    char t_conf[1024], t_ep[128], t_ckpt[1024], log_t[1024];
    snprintf(t_conf, sizeof t_conf, "--config=%s/deploy/trainer.conf", harness_src_dir());
    snprintf(t_ep, sizeof t_ep, "--endpoint=tcp://127.0.0.1:%d", req);
    snprintf(t_ckpt, sizeof t_ckpt, "--checkpoint_dir=%s/trainer", s_tmp);
    snprintf(log_t, sizeof log_t, "%s/trainer.log", s_tmp);
    char t_key[1100];
    snprintf(t_key, sizeof t_key, "--curve_secret_key=%s/deploy-example-trainer.key", keys);
    char *targv[] = {exe_t,  t_conf, t_ep, t_ckpt, "--client_id=deploy-example-trainer",
                     server, t_key, NULL};
    cr_assert_eq(proc_start(&t, "trainer", NULL, log_t, targv), 0);

    double end = harness_now() + 60;
    bool worker_seen = false, trainer_seen = false;
    while (!(worker_seen && trainer_seen)) {
        cr_assert(proc_alive(&w), "kz-worker with deploy/worker.conf exited:\n%s",
                  proc_log_tail(&w, 2000));
        cr_assert(proc_alive(&t), "kz-trainer with deploy/trainer.conf exited:\n%s",
                  proc_log_tail(&t, 2000));
        cr_assert(proc_alive(&c), "coordinator exited:\n%s", proc_log_tail(&c, 2000));
        cr_assert(harness_now() < end, "the worker (%d) or the trainer (%d) never connected",
                  worker_seen, trainer_seen);
        worker_seen = worker_seen || s_status_has_client(http, "worker", "deploy-example-1");
        trainer_seen = trainer_seen || s_status_has_client(http, "trainer", "deploy-example-tr");
        harness_sleep_ms(100);
    }
    int st = proc_stop(&w, SIGTERM, 30);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker exit status %#x:\n%s", st,
              proc_log_tail(&w, 1500));
    st = proc_stop(&t, SIGTERM, 30);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trainer exit status %#x:\n%s", st,
              proc_log_tail(&t, 1500));
    proc_stop(&c, SIGTERM, 30);
    /* The files' settings took effect. */
    char *lw = harness_read_file(log_w), *lt = harness_read_file(log_t);
    cr_assert(lw && lt);
    cr_expect_not_null(strstr(lw, "parallel = 32"), "worker log:\n%s", lw);
    cr_expect_not_null(strstr(lw, "drain_s = 10"), "worker log:\n%s", lw);
    cr_expect_not_null(strstr(lt, "steps_per_candidate = 50"), "trainer log:\n%s", lt);
    cr_expect_not_null(strstr(lt, "max_reuse = 4"), "trainer log:\n%s", lt);
    free(lw);
    free(lt);
}

/* MemoryDenyWriteExecute=yes in the units: the network code (OpenBLAS) must
 * work without writable-and-executable memory. Linux 6.3+ offers the same
 * rule to any process (prctl PR_SET_MDWE, inherited across exec): self-play
 * with a real network, and the coordinator, under it. Skipped on older
 * kernels. */
#define S_PR_SET_MDWE 65              /* <linux/prctl.h>, Linux 6.3 */
#define S_PR_MDWE_REFUSE_EXEC_GAIN 1

static int s_run_mdwe(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (prctl(S_PR_SET_MDWE, S_PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(deploy, memory_deny_write_execute, .fini = s_fini)
{
    if (prctl(S_PR_SET_MDWE + 1 /* PR_GET_MDWE */, 0, 0, 0, 0) < 0) {
        fprintf(stderr, "deploy::memory_deny_write_execute: SKIPPED: this kernel has no "
                        "PR_SET_MDWE (Linux 6.3+)\n");
        cr_skip_test("no PR_SET_MDWE in this kernel");
    }
    s_tmp = harness_tmpdir("mdwe");
    cr_assert_not_null(s_tmp);
    char kz[1024], model[1024], rec[1024], log[1024], out[2048];
    harness_bin(kz, sizeof kz, "kz");
    snprintf(model, sizeof model, "%s/m.model", s_tmp);
    snprintf(rec, sizeof rec, "%s/games.rec", s_tmp);
    snprintf(log, sizeof log, "%s/selfplay.log", s_tmp);
    char *init[] = {kz, "model", "init", "--blocks", "2", "--filters", "16", "--value-hidden",
                    "16", model, NULL};
    cr_assert_eq(proc_run(init, out, sizeof out, 60), 0, "kz model init: %s", out);

    /* The probe: a writable and executable mapping is refused under MDWE. */
    pid_t pid = fork();
    if (pid == 0) {
        if (prctl(S_PR_SET_MDWE, S_PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0))
            _exit(2);
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        _exit(p == MAP_FAILED ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "MDWE does not refuse W+X memory here");

    char *selfplay[] = {kz, "selfplay", "--model", model, "--games", "4", "--sims", "32",
                        "--out", rec, NULL};
    int rc = s_run_mdwe(selfplay, log);
    char *text = harness_read_file(log);
    cr_expect_eq(rc, 0, "kz selfplay under MemoryDenyWriteExecute failed (%d):\n%s", rc,
                 text ? text : "");
    free(text);
    char *records[] = {kz, "records", rec, NULL};
    cr_expect_eq(proc_run(records, out, sizeof out, 60), 0, "kz records: %s", out);
    cr_expect_not_null(strstr(out, "games: 4 "), "the 4 games were not written:\n%s", out);
    cr_expect_not_null(strstr(out, "4 valid, 0 invalid"), "%s", out);
}
