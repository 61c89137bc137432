/* Tests of the cluster's authentication and authorisation (docs/security.md):
 * `kz keygen`, key files and the allow-list (curve.h), a whole cluster of
 * the real programs over CurveZMQ, unknown keys refused and counted, the
 * allow-list reloaded on SIGHUP, each role held to its requests (a worker
 * key cannot publish a model), the id a key may claim; and the status
 * endpoint's token and connection limits. Real coordinators and real
 * sockets throughout. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "net/curve.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

TestSuite(auth, .fini = harness_cleanup);
TestSuite(http_access, .fini = harness_cleanup);

/* --- keys and the allow-list ---------------------------------------------------------- */

Test(auth, keygen_writes_a_private_pair_and_never_overwrites_it)
{
    harness_cli cli;
    harness_cli_init(&cli, "keygen");
    cr_assert_eq(harness_cli_kz(&cli, "keygen w1"), 0, "%s", cli.err);
    cr_assert_not_null(strstr(cli.out, "w1.pub"), "%s", cli.out);
    char key[512], pub[512];
    snprintf(key, sizeof key, "%s/w1.key", cli.dir);
    snprintf(pub, sizeof pub, "%s/w1.pub", cli.dir);
    struct stat sb;
    cr_assert_eq(stat(key, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600, "the secret key is mode %o", sb.st_mode & 0777);
    /* The public file is the public half of the secret one. */
    char err[600], text[CURVE_KEY_TEXT];
    curve_keypair kp;
    cr_assert_eq(curve_read_secret(key, &kp, err, sizeof err), 0, "%s", err);
    cr_assert_eq(curve_read_public(pub, text, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(kp.public_key, text);
    cr_assert_not_null(strstr(cli.out, text), "kz keygen names the public key: %s", cli.out);
    char *before = harness_read_file(key);
    cr_assert_not_null(before);

    /* Never overwritten; clear one-line errors for the rest. */
    cr_assert_eq(harness_cli_kz(&cli, "keygen w1"), 2);
    cr_assert_not_null(strstr(cli.err, "never overwritten"), "%s", cli.err);
    char *after = harness_read_file(key);
    cr_assert_str_eq(after, before, "the secret key changed");
    free(before);
    free(after);
    cr_assert_eq(harness_cli_kz(&cli, "keygen"), 2);
    cr_assert_not_null(strstr(cli.err, "NAME"), "%s", cli.err);
    cr_assert_eq(harness_cli_kz(&cli, "keygen ../up"), 2);
    cr_assert_not_null(strstr(cli.err, "not a key name"), "%s", cli.err);
    cr_assert_eq(harness_cli_kz(&cli, "keygen w2 --dir no/such/dir"), 2);
    cr_assert_not_null(strstr(cli.err, "not a directory"), "%s", cli.err);
    cr_assert_eq(harness_cli_kz(&cli, "keygen w3 --dir keys"), 2, "a missing --dir");

    /* A secret key others may read is refused; so is a file that is no key. */
    cr_assert_eq(chmod(key, 0640), 0);
    cr_assert_eq(curve_read_secret(key, &kp, err, sizeof err), EACCES);
    cr_assert_not_null(strstr(err, "chmod 600"), "%s", err);
    cr_assert_eq(curve_read_public(key, text, err, sizeof err), 0, "a public key may be read");
    char junk[512];
    snprintf(junk, sizeof junk, "%s/junk.pub", cli.dir);
    cr_assert_eq(harness_write(junk, "not a key at all\n"), 0);
    cr_assert_eq(curve_read_public(junk, text, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "not a public key"), "%s", err);
    harness_cli_fini(&cli);
}

/* An allow-list file with `text`, loaded: the return code and the message. */
static int s_allow(const char *dir, const char *text, curve_allow **a, char *err, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/allow", dir);
    cr_assert_eq(harness_write(path, text), 0);
    return curve_allow_load(path, a, err, len);
}

/* An allow list that every user can write would let anyone admit a key
 * (issue 28): refused like a key file others can read, by the library and
 * by the real coordinator, in one line; chmod o-w mends it. */
Test(auth, a_world_writable_allow_list_is_refused)
{
    char *dir = harness_tmpdir("allow-ww");
    cr_assert_not_null(dir);
    char k1[CURVE_KEY_TEXT], err[600], text[256], path[512];
    cr_assert_eq(curve_keygen(dir, "coordinator", k1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(curve_keygen(dir, "w", k1, err, sizeof err), 0, "%s", err);
    snprintf(text, sizeof text, "w worker %s\n", k1);
    snprintf(path, sizeof path, "%s/allow", dir);
    cr_assert_eq(harness_write(path, text), 0);
    cr_assert_eq(chmod(path, 0666), 0);
    curve_allow *a = NULL;
    cr_assert_eq(curve_allow_load(path, &a, err, sizeof err), EACCES);
    cr_assert_not_null(strstr(err, "writable by every user (mode 0666): chmod o-w"), "%s", err);
    cr_assert_null(a);
    char a_dir[600], a_key[600], a_allow[600];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", dir);
    snprintf(a_key, sizeof a_key, "--curve_secret_key=%s/coordinator.key", dir);
    snprintf(a_allow, sizeof a_allow, "--allow_keys=%s", path);
    const char *const args[] = {a_dir, a_key, a_allow, "--http_port=0", "--curve=true", NULL};
    proc_output o;
    int rc = harness_run_bin("kz-coordinator", args, NULL, &o);
    cr_assert(rc == 1 || rc == 2, "exit %d: %s", rc, o.err);
    cr_assert_not_null(strstr(o.err, "writable by every user"), "%s", o.err);
    proc_output_free(&o);
    cr_assert_eq(chmod(path, 0644), 0);
    cr_assert_eq(curve_allow_load(path, &a, err, sizeof err), 0, "%s", err);
    curve_allow_destroy(&a);
    harness_rm_rf(dir);
    free(dir);
}

Test(auth, the_allow_list_is_checked_line_by_line)
{
    char *dir = harness_tmpdir("allow");
    cr_assert_not_null(dir);
    char k1[CURVE_KEY_TEXT], k2[CURVE_KEY_TEXT], err[600], text[1024];
    cr_assert_eq(curve_keygen(dir, "a", k1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(curve_keygen(dir, "b", k2, err, sizeof err), 0, "%s", err);
    curve_allow *a = NULL;

    snprintf(text, sizeof text, "# the cluster's keys\n\nhost-1.example worker %s\n"
                                "  trainer\ttrainer %s  \n", k1, k2);
    cr_assert_eq(s_allow(dir, text, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a->n, 2);
    uint8_t raw[CURVE_KEY_BYTES];
    cr_assert(curve_decode(k2, raw));
    const curve_entry *e = curve_allow_find(a, raw);
    cr_assert_not_null(e);
    cr_assert_str_eq(e->name, "trainer");
    cr_assert_eq(e->role, CURVE_TRAINER);
    raw[0] ^= 1;
    cr_assert_null(curve_allow_find(a, raw), "a key not listed");
    curve_allow_destroy(&a);
    cr_assert_null(a);

    static const struct {
        const char *fmt;  /* the file, %s = a key, %s = the other */
        const char *want; /* in the message */
    } bad[] = {
        {"a worker %s\nb boss %s\n", "allow:2: 'boss' is not a role"},
        {"a worker %s\nb trainer %.39s\n", "allow:2: '"},
        {"a worker %s %s\n", "allow:1: more than three fields"},
        {"# %s %s\na worker\n", "allow:2: 2 fields"},
        {"a worker %s\na observer %s\n", "the name 'a' is listed twice"},
        {"a/b worker %s\n%s\n", "allow:1: 'a/b' is not a key name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, bad[i].fmt, k1, k2);
        cr_assert_eq(s_allow(dir, text, &a, err, sizeof err), KZ_EINVAL, "case %zu: %s", i,
                     text);
        cr_assert_null(a);
        cr_assert_not_null(strstr(err, bad[i].want), "case %zu: '%s' lacks '%s'", i, err,
                           bad[i].want);
    }
    snprintf(text, sizeof text, "a worker %s\nb observer %s\n", k1, k1);
    cr_assert_eq(s_allow(dir, text, &a, err, sizeof err), KZ_EINVAL);
    cr_assert_not_null(strstr(err, "one key is listed twice"), "%s", err);
    cr_assert_eq(s_allow(dir, "", &a, err, sizeof err), 0, "an empty list admits nobody");
    cr_assert_eq(a->n, 0);
    curve_allow_destroy(&a);
    char missing[512];
    snprintf(missing, sizeof missing, "%s/none", dir);
    cr_assert_eq(curve_allow_load(missing, &a, err, sizeof err), ENOENT);
    harness_rm_rf(dir);
    free(dir);
}

/* --- an authenticated coordinator -------------------------------------------------------- */

/* Keys in h->dir/keys: the coordinator's, and clients w (worker), t
 * (trainer), o (observer) in the allow-list; x is made but not listed. */
static void s_keys(const harness *h, char *keys, size_t cap, char *allow, size_t acap)
{
    snprintf(keys, cap, "%s/keys", h->dir);
    snprintf(allow, acap, "%s/allow", keys);
    harness_keygen(keys, "coordinator");
    static const char *const names[] = {"w", "t", "o"}, *const roles[] = {"worker", "trainer",
                                                                           "observer"};
    for (int i = 0; i < 3; i++) {
        harness_keygen(keys, names[i]);
        harness_allow_key(allow, keys, names[i], roles[i]);
    }
    harness_keygen(keys, "x");
}

/* The number at a dotted path of h's /status (NAN when absent). */
static double s_status_number(const harness *h, const char *path)
{
    char *doc = NULL;
    double v = NAN;
    if (http_get(NULL, "127.0.0.1", h->http_port, "/status", &doc) == 0 &&
        !json_number(doc, path, &v))
        v = NAN;
    free(doc);
    return v;
}

/* Lines in text (newlines). */
static int s_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* Starts h's coordinator with CurveZMQ on the keys of s_keys. */
static void s_start(harness *h, const char *keys, const char *allow, const char *const *more)
{
    char a_key[600], a_allow[600];
    snprintf(a_key, sizeof a_key, "--curve_secret_key=%s/coordinator.key", keys);
    snprintf(a_allow, sizeof a_allow, "--allow_keys=%s", allow);
    const char *args[16] = {a_key, a_allow};
    int n = 2;
    for (int i = 0; more && more[i] && n < 15; i++)
        args[n++] = more[i];
    args[n] = NULL;
    harness_coord_start(h, args);
}

/* The model blob of a tiny network (a candidate). */
static uint8_t *s_blob(size_t *len, uint64_t seed)
{
    model_arch a;
    model_arch_default(&a, game_default());
    a.blocks = 0;
    a.filters = 4;
    model *m = model_new(&a, seed);
    uint8_t *blob;
    cr_assert_eq(modelfile_to_bytes(m, &blob, len), 0);
    model_destroy(&m);
    return blob;
}

/* One valid random self-play record (caller frees). */
static uint8_t *s_record(uint64_t seed, size_t *len)
{
    validate_random_opts o = {.model_version = 1, .worker_id = "auth"};
    uint8_t *buf;
    cr_assert_eq(validate_random_record(game_default(), seed, &o, &buf, len), 0);
    return buf;
}

/* Submits one game through c and waits for its answer: 1 acknowledged,
 * 0 refused (rejected or an error: stats.rejected grew). */
static int s_submit(client *c, uint64_t seed)
{
    size_t len;
    uint8_t *rec = s_record(seed, &len);
    client_stats before, after;
    client_get_stats(c, &before);
    cr_assert_eq(client_submit_game(c, rec, len, 0), 0);
    free(rec);
    for (double end = harness_now() + 15; client_pending(c) && harness_now() < end;)
        client_poll(c, 20);
    cr_assert_eq(client_pending(c), 0, "no answer to a game: %s", client_last_error(c));
    client_get_stats(c, &after);
    return after.acked > before.acked ? 1 : 0;
}

/* The id of the status's client list entry whose id ends with `suffix`,
 * waiting for it (the snapshot is rebuilt every status_ms) up to 10 s; ""
 * when none. */
static void s_client_id(const harness *h, const char *suffix, char *out, size_t cap)
{
    out[0] = 0;
    for (double end = harness_now() + 10; !out[0] && harness_now() < end;) {
        char *doc = NULL;
        cr_assert_eq(http_get(NULL, "127.0.0.1", h->http_port, "/status", &doc), 0);
        for (int i = 0; i < 64; i++) {
            char path[64], id[128];
            snprintf(path, sizeof path, "workers.list.%d.id", i);
            if (!json_string(doc, path, id, sizeof id))
                break;
            size_t n = strlen(id), k = strlen(suffix);
            if (n >= k && !strcmp(id + n - k, suffix)) {
                snprintf(out, cap, "%s", id);
                break;
            }
        }
        free(doc);
        if (!out[0])
            harness_sleep_ms(20);
    }
}

Test(auth, a_cluster_of_the_real_programs_runs_authenticated)
{
    harness h;
    harness_init(&h, "auth-cluster");
    char keys[256], allow[300];
    s_keys(&h, keys, sizeof keys, allow, sizeof allow);
    const char *const more[] = {"--simulations=8", "--selfplay_games=4", "--eval_share=0",
                                NULL};
    s_start(&h, keys, allow, more);
    char ep[96], sub[96], cache[160], ckpt[160], wlog[160], tlog[160], server[400], wkey[400],
        tkey[400];
    snprintf(ep, sizeof ep, "--endpoint=%s", h.endpoint);
    snprintf(sub, sizeof sub, "--sub_endpoint=%s", h.pub);
    snprintf(cache, sizeof cache, "--model_cache_dir=%s/cache", h.dir);
    snprintf(ckpt, sizeof ckpt, "--checkpoint_dir=%s/trainer", h.dir);
    snprintf(wlog, sizeof wlog, "%s/worker.log", h.dir);
    snprintf(tlog, sizeof tlog, "%s/trainer.log", h.dir);
    snprintf(server, sizeof server, "--curve_server_key=%s/coordinator.pub", keys);
    snprintf(wkey, sizeof wkey, "--curve_secret_key=%s/w.key", keys);
    snprintf(tkey, sizeof tkey, "--curve_secret_key=%s/t.key", keys);
    const char *const wargs[] = {ep, sub, cache, "--worker_id=w", "--parallel=4",
                                 "--heartbeat_ms=100", server, wkey, NULL};
    const char *const targs[] = {ep, ckpt, "--batch_size=32", "--min_positions=64",
                                 "--max_reuse=1000", "--steps_per_candidate=5",
                                 "--stats_s=0.2", "--wait_ms=100", "--client_id=t", server,
                                 tkey, NULL};
    pid_t wp = harness_spawn("kz-worker", wargs, wlog);
    pid_t tp = harness_spawn("kz-trainer", targs, tlog);
    /* Games from the worker, steps and a candidate from the trainer. */
    cr_assert_geq(harness_wait_status(&h, "\"replay\"", "games", 8, 60), 8,
                  "no games over CurveZMQ (see %s, %s)", wlog, h.coord_log);
    cr_assert_geq(harness_wait_status(&h, "\"models\"", "latest", 2, 90), 2,
                  "no candidate over CurveZMQ (see %s)", tlog);
    char id[128];
    s_client_id(&h, "w", id, sizeof id);
    cr_assert_str_eq(id, "w", "the worker is filed under its key's name");
    s_client_id(&h, "t", id, sizeof id);
    cr_assert_str_eq(id, "t");
    cr_assert_eq(s_status_number(&h, "auth.curve"), 1);
    cr_assert_eq(s_status_number(&h, "auth.keys"), 3);
    cr_assert_eq(s_status_number(&h, "auth.refused_keys"), 0);
    cr_assert_eq(s_status_number(&h, "auth.refused_requests"), 0);
    cr_assert_eq(harness_stop(wp, SIGTERM, 30), 0, "worker (see %s)", wlog);
    cr_assert_eq(harness_stop(tp, SIGTERM, 30), 0, "trainer (see %s)", tlog);
    cr_assert_eq(harness_count(h.coord_log, "curve = false"), 0);
    harness_fini(&h);
}

/* A worker whose key the coordinator refuses (listed with another role, or
 * not listed at all) cannot change that: it stops with one line saying why
 * and exit status 1 rather than ask again every few seconds. */
Test(auth, a_worker_whose_key_is_refused_stops_with_one_line)
{
    harness h;
    harness_init(&h, "auth-worker-refused");
    char keys[256], allow[300];
    s_keys(&h, keys, sizeof keys, allow, sizeof allow);
    s_start(&h, keys, allow, NULL);
    static const char *const names[] = {"t", "x"};
    static const char *const reasons[] = {"key 't' (trainer) may not take jobs",
                                          "refused this client's key"};
    for (int i = 0; i < 2; i++) {
        char ep[96], server[400], key[400], log[160];
        snprintf(ep, sizeof ep, "--endpoint=%s", h.endpoint);
        snprintf(server, sizeof server, "--curve_server_key=%s/coordinator.pub", keys);
        snprintf(key, sizeof key, "--curve_secret_key=%s/%s.key", keys, names[i]);
        snprintf(log, sizeof log, "%s/worker-%s.log", h.dir, names[i]);
        const char *const args[] = {ep, server, key, "--model_cache_dir=", "--parallel=2",
                                    "--timeout_ms=300", NULL};
        pid_t w = harness_spawn("kz-worker", args, log);
        int st;
        cr_assert(harness_wait(w, 30, &st), "worker %s did not stop (see %s)", names[i], log);
        cr_assert_eq(harness_exit_code(st), 1, "worker %s (see %s)", names[i], log);
        cr_assert_eq(harness_count(log, "stopping: the coordinator refuses this worker's key: "),
                     1, "see %s", log);
        cr_assert_eq(harness_count(log, reasons[i]), i == 0 ? 1 : 2, "see %s", log);
        cr_assert_eq(harness_count(log, "no job:"), 0, "see %s", log);
    }
    harness_fini(&h);
}

Test(auth, an_unknown_key_is_refused_counted_and_admitted_after_a_reload)
{
    harness h;
    harness_init(&h, "auth-unknown");
    char keys[256], allow[300];
    s_keys(&h, keys, sizeof keys, allow, sizeof allow);
    s_start(&h, keys, allow, NULL);
    void *zctx = zmq_ctx_new();
    /* x is not listed: every call times out, the client says why. */
    client *x = harness_client_keyed(zctx, h.endpoint, NULL, "x", "worker", 300, keys, "x");
    uint8_t *blob;
    size_t len;
    cr_assert_eq(client_get_model(x, 0, 0, &blob, &len, NULL), KZ_ETIMEOUT);
    cr_assert_not_null(strstr(client_last_error(x), "refused this client's key"), "%s",
                       client_last_error(x));
    /* It keeps trying (reconnects): counted every time, logged once. */
    cr_assert_geq(harness_wait_status(&h, "\"auth\"", "refused_keys", 3, 30), 3);
    cr_assert_eq(harness_count(h.coord_log, "is not in allow_keys"), 1, "see %s", h.coord_log);
    char *metrics = NULL;
    cr_assert_eq(http_get(NULL, "127.0.0.1", h.http_port, "/metrics", &metrics), 0);
    cr_assert_not_null(strstr(metrics, "kz_auth_refused_total{reason=\"unknown_key\"} "));
    cr_assert_null(strstr(metrics, "kz_auth_refused_total{reason=\"unknown_key\"} 0\n"),
                   "%s", metrics);
    free(metrics);
    cr_assert_eq(s_status_number(&h, "workers.known"), 0, "a refused key became a client");

    /* A client without CurveZMQ: its handshake fails, it says why (the
     * mechanism mismatch, or a closed connection first: both name CurveZMQ). */
    client *plain = harness_client(zctx, h.endpoint, NULL, "plain", "worker", 300);
    cr_assert_eq(client_get_model(plain, 0, 0, &blob, &len, NULL), KZ_ETIMEOUT);
    cr_assert_not_null(strstr(client_last_error(plain), "require"), "%s",
                       client_last_error(plain));
    cr_assert_geq(harness_wait_status(&h, "\"auth\"", "handshake_failures", 1, 10), 1);
    client_destroy(&plain);

    /* x listed and SIGHUP: admitted, without a restart. */
    harness_allow_key(allow, keys, "x", "worker");
    harness_signal(h.coord, SIGHUP);
    cr_assert_eq(harness_wait_status(&h, "\"auth\"", "reloads", 1, 10), 1);
    cr_assert_eq(s_status_number(&h, "auth.keys"), 4);
    int rc = KZ_ETIMEOUT;
    for (double end = harness_now() + 20; rc == KZ_ETIMEOUT && harness_now() < end;)
        rc = client_get_model(x, 0, 0, &blob, &len, NULL);
    cr_assert_eq(rc, 0, "x after the reload: %s", client_last_error(x));
    free(blob);
    cr_assert_eq(s_submit(x, 7), 1, "x's game: %s", client_last_error(x));

    /* A bad file on SIGHUP: refused, the list stays. */
    FILE *f = fopen(allow, "a");
    cr_assert_not_null(f);
    fputs("garbage\n", f);
    fclose(f);
    harness_signal(h.coord, SIGHUP);
    cr_assert_eq(harness_wait_status(&h, "\"auth\"", "reload_errors", 1, 10), 1);
    cr_assert_eq(s_status_number(&h, "auth.keys"), 4);
    cr_assert_eq(s_submit(x, 8), 1, "x after a refused reload: %s", client_last_error(x));

    /* x removed: its open connection is refused at its next request. */
    char line[600];
    char *text = harness_read_file(allow);
    cr_assert_not_null(text);
    char *xl = strstr(text, "\nx worker ");
    cr_assert_not_null(xl);
    *xl = 0;
    snprintf(line, sizeof line, "%s\n", text);
    free(text);
    cr_assert_eq(harness_write(allow, line), 0);
    harness_signal(h.coord, SIGHUP);
    cr_assert_eq(harness_wait_status(&h, "\"auth\"", "reloads", 2, 10), 2);
    cr_assert_eq(s_submit(x, 9), 0, "a removed key's game was taken");
    cr_assert_not_null(strstr(client_last_error(x), "no longer in the coordinator's allow_keys"),
                       "%s", client_last_error(x));
    client_destroy(&x);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(auth, each_role_is_held_to_its_requests)
{
    harness h;
    harness_init(&h, "auth-roles");
    char keys[256], allow[300];
    s_keys(&h, keys, sizeof keys, allow, sizeof allow);
    s_start(&h, keys, allow, NULL);
    void *zctx = zmq_ctx_new();
    client *w = harness_client_keyed(zctx, h.endpoint, NULL, "w", "worker", 2000, keys, "w");
    client *t = harness_client_keyed(zctx, h.endpoint, NULL, "t", "trainer", 2000, keys, "t");
    client *o = harness_client_keyed(zctx, h.endpoint, NULL, "o", "tool", 2000, keys, "o");

    /* A worker key cannot publish a model, however often it tries. */
    size_t len;
    uint8_t *blob = s_blob(&len, 11);
    wire_candidate_ack ack;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(client_submit_candidate(w, blob, len, 1, 5, &ack), KZ_EREJECTED);
        cr_assert_not_null(strstr(client_last_error(w), "may not publish candidate models"),
                           "%s", client_last_error(w));
    }
    cr_assert_eq(s_status_number(&h, "models.latest"), 1, "the model was registered");
    cr_assert_eq(harness_wait_status(&h, "\"auth\"", "refused_requests", 3, 10), 3);
    double v;
    char *doc = NULL;
    cr_assert_eq(http_get(NULL, "127.0.0.1", h.http_port, "/status", &doc), 0);
    cr_assert(json_number(doc, "auth.refused_by_role.worker", &v) && v == 3, "%s", doc);
    free(doc);
    cr_assert_eq(harness_count(h.coord_log, "may not publish"), 1, "logged once per key");
    /* The trainer's key can. */
    cr_assert_eq(client_submit_candidate(t, blob, len, 1, 5, &ack), 0, "%s",
                 client_last_error(t));
    cr_assert_eq(ack.version, 2);
    free(blob);

    /* Games: the worker's taken, the trainer's and the observer's refused. */
    cr_assert_eq(s_submit(w, 1), 1, "%s", client_last_error(w));
    cr_assert_eq(s_submit(t, 2), 0, "a trainer key submitted a game");
    cr_assert_not_null(strstr(client_last_error(t), "may not submit games"), "%s",
                       client_last_error(t));
    cr_assert_eq(s_submit(o, 3), 0, "an observer key submitted a game");
    /* An observer reads: models, batches. */
    cr_assert_eq(client_get_model(o, 1, 0, &blob, &len, NULL), 0, "%s", client_last_error(o));
    free(blob);
    const wire_batch_reply *b;
    cr_assert_eq(client_get_batch(o, 4, 0, &b), 0, "%s", client_last_error(o));
    cr_assert_eq(client_report_stats(o, &(wire_trainer_stats){.step = 1}), KZ_EREJECTED);
    const wire_job *job;
    wire_job_request jr = {.free_slots = 1};
    cr_assert_eq(client_get_job(o, &jr, &job), KZ_EREJECTED, "an observer took a job");
    cr_assert_eq(client_get_job(w, &jr, &job), 0, "%s", client_last_error(w));
    client_destroy(&w);
    client_destroy(&t);
    client_destroy(&o);

    /* One key cannot claim another's id: w naming itself "t" is w/t. */
    client *fake = harness_client_keyed(zctx, h.endpoint, NULL, "t", "worker", 2000, keys, "w");
    cr_assert_eq(s_submit(fake, 4), 1, "%s", client_last_error(fake));
    char id[128];
    s_client_id(&h, "/t", id, sizeof id);
    cr_assert_str_eq(id, "w/t", "the claimed id is filed under the key's name");
    cr_assert_eq(harness_wait_status(&h, "\"w/t\"", "games", 1, 10), 1);
    cr_assert_eq(harness_status_num(&h, "\"t\"", "games"), 0, "t was credited with w's game");
    client_destroy(&fake);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(auth, without_keys_the_coordinator_says_what_to_do_and_curve_false_warns)
{
    harness h;
    harness_init(&h, "auth-settings");
    char a_dir[160];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", h.dir);
    const char *const bare[] = {a_dir, "--http_port=0", "--curve=true", NULL};
    proc_output o;
    cr_assert_eq(harness_run_bin("kz-coordinator", bare, NULL, &o), 2, "%s", o.err);
    cr_assert_not_null(strstr(o.err, "curve_secret_key: not set"), "%s", o.err);
    cr_assert_not_null(strstr(o.err, "curve = false"), "%s", o.err);
    cr_assert_eq(s_lines(o.err), 1, "%s", o.err);
    proc_output_free(&o);
    const char *const wargs[] = {"--endpoint=tcp://127.0.0.1:9", "--curve=true", NULL};
    cr_assert_eq(harness_run_bin("kz-worker", wargs, NULL, &o), 2, "%s", o.err);
    cr_assert_not_null(strstr(o.err, "curve_server_key: not set"), "%s", o.err);
    cr_assert_eq(s_lines(o.err), 1, "%s", o.err);
    proc_output_free(&o);
    /* The harness's coordinator runs with curve = false: a warning at start. */
    harness_coord_start(&h, NULL);
    cr_assert_eq(harness_count(h.coord_log, "curve = false: no CurveZMQ"), 1);
    cr_assert_eq(s_status_number(&h, "auth.curve"), 0);
    harness_fini(&h);
}

/* --- the status endpoint ------------------------------------------------------------------ */

/* An HTTP GET of path with an extra header line (NULL none): the status
 * code; with answer non-NULL the whole answer too (caller frees). */
static int s_get_answer(int port, const char *path, const char *header, char **answer)
{
    char req[600];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n%s%sConnection: close\r\n\r\n",
                     path, header ? header : "", header ? "\r\n" : "");
    size_t got;
    char *a = http_exchange(NULL, "127.0.0.1", port, req, (size_t)n, 10, &got);
    int code = a ? http_code(a) : -1;
    if (answer)
        *answer = a;
    else
        free(a);
    return code;
}

static int s_get(int port, const char *path, const char *header)
{
    return s_get_answer(port, path, header, NULL);
}

Test(http_access, a_token_guards_everything_but_healthz)
{
    harness h;
    harness_init(&h, "http-token");
    char token[256], a_token[300];
    snprintf(token, sizeof token, "%s/token", h.dir);
    cr_assert_eq(harness_write(token, "s3cret-t0ken-of-some-length\n"), 0);
    cr_assert_eq(chmod(token, 0600), 0);
    snprintf(a_token, sizeof a_token, "--status_token_file=%s", token);
    const char *const extra[] = {a_token, NULL};
    harness_coord_start(&h, extra);
    static const char *const paths[] = {"/status", "/metrics", "/", "/models", "/timeline",
                                        "/viewer", "/games", "/page.css", "/page.js",
                                        "/nothing"};
    const size_t n_paths = sizeof paths / sizeof paths[0];
    for (size_t i = 0; i < n_paths; i++)
        cr_assert_eq(s_get(h.http_port, paths[i], NULL), 401, "%s without the token", paths[i]);
    cr_assert_eq(s_get(h.http_port, "/status", "Authorization: Bearer wrong-token-of-length"),
                 401);
    cr_assert_eq(s_get(h.http_port, "/healthz", NULL), 200, "/healthz needs no token");
    cr_assert_eq(s_get(h.http_port, "/status", "Authorization: Bearer s3cret-t0ken-of-some-length"),
                 200);
    /* With it, the pages' shared files as board.js: their type, revalidated on every load. */
    static const char *const files[][2] = {{"/page.css", "text/css; charset=utf-8"},
                                           {"/page.js", "text/javascript; charset=utf-8"},
                                           {"/board.js", "text/javascript; charset=utf-8"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *a = NULL, type[80];
        cr_assert_eq(s_get_answer(h.http_port, files[i][0],
                                  "Authorization: Bearer s3cret-t0ken-of-some-length", &a),
                     200, "%s", files[i][0]);
        snprintf(type, sizeof type, "\r\nContent-Type: %s\r\n", files[i][1]);
        cr_assert(strstr(a, type) && strstr(a, "\r\nCache-Control: no-cache\r\n"), "%s", a);
        free(a);
    }
    /* Basic auth, any user, the token as password (what a browser sends):
     * "me:s3cret-t0ken-of-some-length". */
    cr_assert_eq(s_get(h.http_port, "/metrics",
                       "Authorization: Basic bWU6czNjcmV0LXQwa2VuLW9mLXNvbWUtbGVuZ3Ro"),
                 200);
    /* The refusals are counted (in the next snapshot: status_ms). */
    double refused = 0, want = (double)n_paths + 1;
    for (double end = harness_now() + 10; refused < want && harness_now() < end;) {
        char *a = NULL;
        s_get_answer(h.http_port, "/metrics", "Authorization: Bearer s3cret-t0ken-of-some-length",
                     &a);
        static const char name[] = "\nkz_http_unauthorized_total ";
        const char *p = a ? strstr(a, name) : NULL;
        refused = p ? strtod(p + sizeof name - 1, NULL) : 0;
        free(a);
        if (refused < want)
            harness_sleep_ms(20);
    }
    cr_assert_geq(refused, want, "refused requests are counted");
    /* kz status: a clear error without the token, the status with it. */
    char args[200], out[8192];
    snprintf(args, sizeof args, "status http://127.0.0.1:%d", h.http_port);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 1, "%s", out);
    cr_assert_not_null(strstr(out, "wants a token"), "%s", out);
    setenv("KZ_STATUS_TOKEN_FILE", token, 1);
    int rc = harness_kz_out(args, NULL, true, out, sizeof out);
    unsetenv("KZ_STATUS_TOKEN_FILE");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "auth "), "%s", out);
    harness_fini(&h);

    /* A token file others may read, or too short, stops the start. */
    harness_init(&h, "http-token-bad");
    snprintf(token, sizeof token, "%s/token", h.dir);
    cr_assert_eq(harness_write(token, "s3cret-t0ken-of-some-length\n"), 0);
    cr_assert_eq(chmod(token, 0644), 0);
    snprintf(a_token, sizeof a_token, "--status_token_file=%s", token);
    const char *const args2[] = {a_token, "--http_port=0", "--curve=false", NULL};
    proc_output o;
    cr_assert_eq(harness_run_bin("kz-coordinator", args2, NULL, &o), 2, "%s", o.err);
    cr_assert_not_null(strstr(o.err, "status_token_file"), "%s", o.err);
    cr_assert_not_null(strstr(o.err, "readable by every user"), "%s", o.err);
    proc_output_free(&o);
    cr_assert_eq(chmod(token, 0600), 0);
    cr_assert_eq(harness_write(token, "short\n"), 0);
    cr_assert_eq(harness_run_bin("kz-coordinator", args2, NULL, &o), 2, "%s", o.err);
    cr_assert_not_null(strstr(o.err, "not a token"), "%s", o.err);
    proc_output_free(&o);
    harness_fini(&h);
}

/* A TCP connection from address `from` (127.0.0.x) to 127.0.0.1:port, or -1. */
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

/* True when the server closed fd (EOF or reset) within timeout_s. */
static bool s_closed(int fd, double timeout_s)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)(timeout_s * 1000)) <= 0)
        return false;
    char c;
    return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

Test(http_access, idle_connections_from_one_address_do_not_starve_healthz)
{
    harness h;
    harness_init(&h, "http-idle");
    /* Idle connections stay open a minute, longer than this test waits. */
    const char *const extra[] = {"--http_timeout_s=60", "--http_per_ip=16", NULL};
    harness_coord_start(&h, extra);
    int fd[64], open_n = 0;
    for (int i = 0; i < 64; i++) {
        fd[i] = s_connect_from("127.0.0.2", h.http_port);
        cr_assert_geq(fd[i], 0, "connection %d: %s", i, strerror(errno));
    }
    /* Beyond the per-address limit the server closes them at once; the
     * first 16 stay open, idle. */
    for (int i = 0; i < 64; i++)
        open_n += !s_closed(fd[i], i < 16 ? 0.05 : 5);
    cr_assert_eq(open_n, 16, "connections from one address left open");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(s_get(h.http_port, "/healthz", NULL), 200, "/healthz behind idle ones");
    char buf[4096];
    cr_assert_eq(harness_http(h.http_port, "/status", buf, sizeof buf), 200);
    for (int i = 0; i < 64; i++)
        close(fd[i]);
    harness_fini(&h);
}

/* A slow-loris from 64 addresses (each within the per-address limit, all of
 * them together past the connection limit): /healthz and /status from
 * another address are still answered (issue 28, #3: with every slot taken
 * the server refused them; 299 of 300 probes failed). The guard keeps an
 * eighth of the slots free by closing the idle connections that waited
 * longest. Counts only: each probe may try again (a closed connection's slot
 * frees when its thread has ended), and every probe must be answered. */
Test(http_access, a_slow_loris_from_64_addresses_does_not_starve_healthz)
{
    harness h;
    harness_init(&h, "http-flood");
    /* Nothing is closed for silence or a slow header during the test. */
    const char *const extra[] = {"--http_timeout_s=600", "--http_connections=128",
                                 "--http_per_ip=4", NULL};
    harness_coord_start(&h, extra);
    enum { ADDRS = 64, PER = 4, N = ADDRS * PER };
    static const char hdr[] = "GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: a";
    int fd[N];
    for (int i = 0; i < N; i++) {
        char from[32];
        snprintf(from, sizeof from, "127.0.1.%d", 1 + i / PER);
        fd[i] = s_connect_from(from, h.http_port);
        cr_assert_geq(fd[i], 0, "connection %d from %s: %s", i, from, strerror(errno));
        (void)!send(fd[i], hdr, sizeof hdr - 1, MSG_NOSIGNAL); /* a header never finished */
    }
    int answered = 0, retries = 0;
    for (int probe = 0; probe < 10; probe++) {
        int code = -1;
        for (int attempt = 0; attempt < 60 && code != 200; attempt++) {
            code = s_get(h.http_port, "/healthz", NULL);
            if (code != 200) {
                retries++;
                harness_sleep_ms(500);
            }
        }
        answered += code == 200;
        cr_assert_eq(code, 200, "probe %d: /healthz not answered behind %d slow connections "
                     "from %d addresses", probe, N, ADDRS);
    }
    cr_assert_eq(answered, 10);
    double evicted = s_status_number(&h, "auth.http_evicted");
    double open_max = s_status_number(&h, "auth.http_open_max");
    cr_assert_geq(evicted, 1, "no idle connection closed (retries %d)", retries);
    cr_assert_leq(open_max, 128);
    for (int i = 0; i < N; i++)
        close(fd[i]);
    harness_fini(&h);
}
