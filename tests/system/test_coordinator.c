/* Tests of the real kz-coordinator binary (KZ_BIN_DIR) over loopback, with a
 * real LMDB store in a temp directory, through the real client library:
 * games are acknowledged and stored once, bad records are refused with their
 * reason, another protocol version gets a clear refusal, garbage does not
 * hurt, /status and /healthz answer, arenas are spread, reassigned and
 * decided, batches come back, and everything survives a restart. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "data/store.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

/* A coordinator process under test. */
typedef struct coordp {
    pid_t pid;           /* the process */
    char dir[64];        /* temp directory: store and log */
    char endpoint[64];   /* ROUTER */
    char pub[64];        /* PUB */
    int http_port;       /* status port */
    char extra[8][64];   /* extra --key=value flags */
    int n_extra;         /* used */
} coordp;

static void s_start(coordp *c)
{
    char a_dir[128], a_bind[96], a_pub[96], a_port[48];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s/store", c->dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", c->endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", c->pub);
    snprintf(a_port, sizeof a_port, "--http_port=%d", c->http_port);
    /* No rating games unless a test asks (--eval_share later wins): the job
     * sequences below are the arena's and self-play's. */
    const char *args[24] = {a_dir,           a_bind,          a_pub,
                            a_port,          "--sync=false",  "--status_ms=20",
                            "--initial_blocks=1", "--initial_filters=8", "--eval_share=0"};
    int n = 9;
    for (int i = 0; i < c->n_extra; i++)
        args[n++] = c->extra[i];
    args[n] = NULL;
    char logpath[128];
    snprintf(logpath, sizeof logpath, "%s/coordinator.log", c->dir);
    c->pid = harness_coord_spawn(args, c->http_port, logpath);
}

/* SIGTERM and wait: returns the exit status. */
static int s_stop(coordp *c)
{
    int code = harness_stop(c->pid, SIGTERM, 15);
    c->pid = 0;
    return code;
}

static void s_setup(coordp *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/kz-coord-XXXXXX");
    cr_assert_not_null(mkdtemp(c->dir));
    snprintf(c->endpoint, sizeof c->endpoint, "tcp://127.0.0.1:%d", tcp_free_port());
    snprintf(c->pub, sizeof c->pub, "tcp://127.0.0.1:%d", tcp_free_port());
    c->http_port = tcp_free_port();
}

static void s_teardown(coordp *c)
{
    if (c->pid > 0)
        harness_stop(c->pid, SIGKILL, 10);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", c->dir);
    int rc = system(cmd);
    (void)rc;
}

static client *s_client(void *zctx, const coordp *c, const char *id, bool sub)
{
    return harness_client(zctx, c->endpoint, sub ? c->pub : NULL, id, NULL, 1000);
}

/* A valid self-play record from random play; caller frees. */
static uint8_t *s_record(uint64_t seed, size_t *len)
{
    validate_random_opts o = {.model_version = 1, .worker_id = "test"};
    uint8_t *buf;
    cr_assert_eq(validate_random_record(game_default(), seed, &o, &buf, len), 0);
    return buf;
}

/* Waits until /status shows `key` of section `after` equal to want (at
 * least -want when want is negative). */
static void s_wait_status(const coordp *c, const char *after, const char *key, double want)
{
    static char buf[1 << 16];
    double got = -1;
    double deadline = time_now() + 10;
    while (time_now() < deadline) {
        cr_assert_eq(harness_http(c->http_port, "/status", buf, sizeof buf), 200);
        got = json_number_after(buf, after, key);
        if (want < 0 ? got >= -want : got == want)
            return;
        usleep(20000);
    }
    cr_assert_fail("status %s.%s is %g, expected %g", after ? after : "", key, got, want);
}

Test(coordinator, games_are_acked_stored_once_and_reported)
{
    coordp c;
    s_setup(&c);
    s_start(&c);
    void *zctx = zmq_ctx_new();
    client *cl = s_client(zctx, &c, "worker-a", false);
    enum { N = 40 };
    uint8_t *recs[N];
    size_t lens[N];
    for (int i = 0; i < N; i++) {
        recs[i] = s_record((uint64_t)i + 1, &lens[i]);
        cr_assert_eq(client_submit_game(cl, recs[i], lens[i], 0), 0);
    }
    harness_client_drain(cl);
    client_stats st;
    client_get_stats(cl, &st);
    cr_assert_eq(st.acked, N);
    cr_assert_eq(st.duplicates, 0);
    cr_assert_eq(st.rejected, 0);
    /* The same games again (a worker resending after a lost ack): acked as
     * duplicates, not stored twice. */
    for (int i = 0; i < N; i += 2)
        cr_assert_eq(client_submit_game(cl, recs[i], lens[i], 0), 0);
    harness_client_drain(cl);
    client_get_stats(cl, &st);
    cr_assert_eq(st.acked, N + N / 2);
    cr_assert_eq(st.duplicates, N / 2);
    s_wait_status(&c, "\"replay\"", "games", N);
    s_wait_status(&c, "\"ingest\"", "duplicates", N / 2);
    static char buf[1 << 16];
    cr_assert_eq(harness_http(c.http_port, "/status", buf, sizeof buf), 200);
    cr_assert(strstr(buf, "\"id\": \"worker-a\""), "the worker is listed");
    cr_assert_eq(json_number_after(buf, "\"worker-a\"", "games"), N);
    double positions = json_number_after(buf, "\"replay\"", "positions");
    cr_assert_gt(positions, N, "every move is a training position");
    cr_assert_eq(harness_http(c.http_port, "/healthz", buf, sizeof buf), 200);
    cr_assert_str_eq(buf, "ok\n");
    cr_assert_eq(harness_http(c.http_port, "/metrics", buf, sizeof buf), 200);
    cr_assert(strstr(buf, "kz_games_stored_total 40\n"), "%s", buf);
    cr_assert(strstr(buf, "# TYPE kz_games_rejected_total counter"));
    cr_assert_eq(harness_http(c.http_port, "/nope", buf, sizeof buf), 404);

    /* Batches: uniform samples of the stored positions, well formed. */
    const wire_batch_reply *b;
    cr_assert_eq(client_get_batch(cl, 64, 0, &b), 0);
    cr_assert_eq(b->n, 64);
    cr_assert_eq(b->window_hi, (uint64_t)positions);
    cr_assert_eq(b->games_total, N);
    const game_def *g = game_default();
    cr_assert_eq(b->packed_bytes, (uint32_t)g->packed_bytes);
    float *planes = malloc((size_t)g->planes * g->height * g->width * sizeof *planes);
    for (uint32_t i = 0; i < b->n; i++) {
        cr_assert_eq(g->unpack_planes(b->packed + (size_t)i * b->packed_bytes, planes), 0);
        cr_assert(b->z[i] == -1 || b->z[i] == 0 || b->z[i] == 1);
        double sum = 0;
        for (uint32_t k = b->offsets[i]; k < b->offsets[i + 1]; k++) {
            cr_assert_lt(b->actions[k], (uint32_t)g->action_count);
            sum += b->probs[k];
        }
        cr_assert_float_eq(sum, 1.0, 1e-4);
    }
    free(planes);
    cr_assert_eq(client_get_batch(cl, 64, (uint64_t)positions + 1, &b), 0);
    cr_assert_eq(b->n, 0, "fewer positions than min_positions: empty batch");

    /* Stop cleanly, restart on the same store: all there, dedup remembered. */
    cr_assert_eq(s_stop(&c), 0, "SIGTERM stops cleanly");
    s_start(&c);
    s_wait_status(&c, "\"replay\"", "games", N);
    cr_assert_eq(client_submit_game(cl, recs[1], lens[1], 0), 0);
    harness_client_drain(cl); /* the client reconnects by itself */
    client_get_stats(cl, &st);
    cr_assert_eq(st.duplicates, N / 2 + 1);
    s_wait_status(&c, "\"replay\"", "games", N);

    for (int i = 0; i < N; i++)
        free(recs[i]);
    client_destroy(&cl);
    zmq_ctx_term(zctx);
    cr_assert_eq(s_stop(&c), 0);
    s_teardown(&c);
}

Test(coordinator, bad_records_are_refused_with_their_reason)
{
    coordp c;
    s_setup(&c);
    s_start(&c);
    void *zctx = zmq_ctx_new();
    client *cl = s_client(zctx, &c, "worker-bad", false);
    size_t len;
    uint8_t *rec = s_record(5, &len);
    /* Garbage as a record, and a record for a model that does not exist. */
    uint8_t junk[40];
    memset(junk, 0xff, sizeof junk);
    cr_assert_eq(client_submit_game(cl, junk, sizeof junk, 0), 0);
    validate_random_opts o = {.model_version = 7};
    uint8_t *unknown;
    size_t ulen;
    cr_assert_eq(validate_random_record(game_default(), 6, &o, &unknown, &ulen), 0);
    cr_assert_eq(client_submit_game(cl, unknown, ulen, 0), 0);
    cr_assert_eq(client_submit_game(cl, rec, len, 0), 0);
    harness_client_drain(cl);
    client_stats st;
    client_get_stats(cl, &st);
    cr_assert_eq(st.rejected, 2);
    cr_assert_eq(st.rejected_by_reason[VALIDATE_MALFORMED], 1);
    cr_assert_eq(st.rejected_by_reason[VALIDATE_UNKNOWN_MODEL], 1);
    cr_assert_eq(st.acked, 1);
    s_wait_status(&c, "\"rejected_by_reason\"", "unknown-model", 1);
    static char buf[1 << 16];
    cr_assert_eq(harness_http(c.http_port, "/status", buf, sizeof buf), 200);
    cr_assert_eq(json_number_after(buf, "\"rejected_by_reason\"", "malformed"), 1);
    cr_assert_eq(json_number_after(buf, "\"replay\"", "games"), 1, "refused games are not stored");
    cr_assert_eq(json_number_after(buf, "\"worker-bad\"", "rejected"), 2, "counted per worker");
    cr_assert_eq(harness_http(c.http_port, "/metrics", buf, sizeof buf), 200);
    cr_assert(strstr(buf, "kz_games_rejected_total{reason=\"unknown_model\"} 1\n"), "%s", buf);
    cr_assert(strstr(buf, "kz_worker_rejected_total{worker=\"worker-bad\"} 2\n"), "%s", buf);
    free(rec);
    free(unknown);
    client_destroy(&cl);
    zmq_ctx_term(zctx);
    cr_assert_eq(s_stop(&c), 0);
    s_teardown(&c);
}

Test(coordinator, another_protocol_version_is_refused_clearly)
{
    coordp c;
    s_setup(&c);
    s_start(&c);
    void *zctx = zmq_ctx_new();
    client_config cfg;
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", c.endpoint);
    snprintf(cfg.client_id, sizeof cfg.client_id, "%s", "from-the-future");
    cfg.timeout_ms = 1000;
    cfg.protocol_version = WIRE_PROTOCOL_VERSION + 1;
    client *cl = client_new(zctx, &cfg);
    const wire_job *job;
    wire_job_request jr = {.free_slots = 1};
    int rc = client_get_job(cl, &jr, &job);
    cr_assert_eq(rc, KZ_EVERSION, "got %s", err_str(rc));
    char want[64];
    snprintf(want, sizeof want, "speaks version %d", WIRE_PROTOCOL_VERSION);
    cr_assert(strstr(client_last_error(cl), want), "message: %s", client_last_error(cl));
    cr_assert_eq(client_poll(cl, 0), KZ_EVERSION, "the client stays refused");
    size_t len;
    uint8_t *rec = s_record(1, &len);
    cr_assert_eq(client_submit_game(cl, rec, len, 0), KZ_EVERSION);
    free(rec);
    client_destroy(&cl);

    /* Garbage on the raw socket: answered with an error, and the
     * coordinator carries on. */
    void *d = zmq_socket(zctx, ZMQ_DEALER);
    int zero = 0, tmo = 2000;
    zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(d, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
    cr_assert_eq(zmq_connect(d, c.endpoint), 0);
    const char garbage[] = "\xff\xfe this is not an envelope";
    cr_assert_eq(zmq_send(d, garbage, sizeof garbage, 0), (int)sizeof garbage);
    char reply[1024];
    int n = zmq_recv(d, reply, sizeof reply, 0);
    cr_assert_gt(n, 0, "garbage gets an answer");
    wire_msg m = {0};
    cr_assert_eq(wire_decode(&m, reply, (size_t)n, sizeof reply), 0);
    cr_assert_eq(m.kind, WIRE_ERROR);
    cr_assert_eq(m.u.error.code, WIRE_ERR_MALFORMED);
    wire_msg_clear(&m);
    zmq_close(d);
    static char buf[1 << 16];
    cr_assert_eq(harness_http(c.http_port, "/healthz", buf, sizeof buf), 200);
    s_wait_status(&c, "\"ingest\"", "refused_version", -1);
    s_wait_status(&c, "\"ingest\"", "malformed", 1);
    zmq_ctx_term(zctx);
    cr_assert_eq(s_stop(&c), 0);
    s_teardown(&c);
}

/* A random arena record for `slot` of candidate 2 vs best 1 in which the
 * candidate wins (win = true) or loses. */
/* The openings the coordinator handed out, by arena slot (from the jobs). */
static char s_openings[64][64];

static void s_note_openings(const wire_job *job)
{
    cr_assert_eq(job->n_start, job->n_arena, "an opening per slot");
    for (size_t i = 0; i < job->n_arena; i++) {
        cr_assert_lt(job->arena_slots[i], 64);
        snprintf(s_openings[job->arena_slots[i]], 64, "%s", job->start_positions[i]);
        cr_assert(job->start_positions[i][0], "arena games start from book openings");
    }
}

static uint8_t *s_arena_record(uint32_t slot, bool win, uint64_t *seed, size_t *len)
{
    int cp = (int)(slot % 2);
    for (;; (*seed)++) {
        validate_random_opts o = {.model_version = 2, .kind = 1, .opponent_version = 1,
                                  .candidate_player = cp,
                                  .start_position = s_openings[slot < 64 ? slot : 0]};
        uint8_t *buf;
        cr_assert_eq(validate_random_record(game_default(), *seed, &o, &buf, len), 0);
        validator *v = validator_new(game_default(), NULL);
        validate_result r;
        cr_assert_eq(validate_record(v, buf, *len, 2, &r), VALIDATE_OK, "%s", r.detail);
        validator_destroy(&v);
        if (r.winner >= 0 && (r.winner == cp) == win) {
            (*seed)++;
            return buf;
        }
        free(buf);
    }
}

Test(coordinator, arena_spread_reassigned_and_decided)
{
    coordp c;
    s_setup(&c);
    snprintf(c.extra[c.n_extra++], 64, "--gate=spec");
    snprintf(c.extra[c.n_extra++], 64, "--arena_games=6");
    snprintf(c.extra[c.n_extra++], 64, "--arena_per_worker=4");
    snprintf(c.extra[c.n_extra++], 64, "--heartbeat_ms=50");
    snprintf(c.extra[c.n_extra++], 64, "--expiry_ms=400");
    s_start(&c);
    void *zctx = zmq_ctx_new();
    client *trainer = s_client(zctx, &c, "trainer", true);
    client *a = s_client(zctx, &c, "worker-a", true);
    client *b = s_client(zctx, &c, "worker-b", true);

    /* Model 1 is there (bootstrap); model 9 is not. */
    uint8_t *blob;
    size_t blen;
    wire_model_reply info;
    cr_assert_eq(client_get_model(a, 0, 0, &blob, &blen, &info), 0);
    cr_assert_eq(info.version, 1);
    cr_assert_eq(wire_blob_checksum(blob, blen), info.checksum);
    model *m1 = NULL;
    char merr[200];
    cr_assert_eq(modelfile_from_bytes(blob, blen, game_default(), &m1, merr, sizeof merr), 0,
                 "the bootstrap model is a real network: %s", merr);
    cr_assert_eq(model_get_arch(m1)->blocks, 1);
    model_destroy(&m1);
    free(blob);
    cr_assert_eq(client_get_model(a, 9, 0, &blob, &blen, NULL), KZ_ENOTFOUND);

    /* Before a candidate: self-play with the best. */
    const wire_job *job;
    wire_job_request jr = {.free_slots = 8};
    cr_assert_eq(client_get_job(a, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_SELFPLAY);
    cr_assert_eq(job->model_version, 1);
    cr_assert_eq(job->games, 8);

    /* Something that is not a model is refused. */
    const char junk[] = "not a model";
    wire_candidate_ack ack;
    cr_assert_eq(client_submit_candidate(trainer, (const uint8_t *)junk, sizeof junk, 1, 50, &ack),
                 KZ_EREJECTED);
    cr_assert(strstr(client_last_error(trainer), "not a usable model"), "%s",
              client_last_error(trainer));
    /* A candidate starts an arena; the same blob again is the same version. */
    model_arch arch;
    model_arch_default(&arch, game_default());
    arch.blocks = 0;
    arch.filters = 4;
    model *mc = model_new(&arch, 42);
    uint8_t *cand;
    size_t cand_len;
    cr_assert_eq(modelfile_to_bytes(mc, &cand, &cand_len), 0);
    model_destroy(&mc);
    cr_assert_eq(client_submit_candidate(trainer, cand, cand_len, 1, 50, &ack), 0);
    cr_assert_eq(ack.version, 2);
    cr_assert(!ack.queued && !ack.duplicate);
    cr_assert_eq(client_submit_candidate(trainer, cand, cand_len, 1, 50, &ack), 0);
    cr_assert_eq(ack.version, 2);
    cr_assert(ack.duplicate);

    /* Worker a gets 4 arena games, alternating colours; b gets the other 2. */
    cr_assert_eq(client_get_job(a, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_ARENA);
    cr_assert_eq(job->model_version, 2);
    cr_assert_eq(job->opponent_version, 1);
    cr_assert_eq(job->n_arena, 4);
    s_note_openings(job);
    /* A pair is one opening with both colours. */
    cr_assert_str_eq(job->start_positions[0], job->start_positions[1]);
    cr_assert_str_neq(job->start_positions[0], job->start_positions[2]);
    uint32_t a_slots[4];
    for (size_t i = 0; i < 4; i++) {
        a_slots[i] = job->arena_slots[i];
        cr_assert_eq(job->candidate_players[i], (int32_t)(a_slots[i] % 2));
    }
    cr_assert_eq(job->model_checksum, wire_blob_checksum(cand, cand_len));
    free(cand);
    cr_assert_eq(client_get_job(b, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_ARENA);
    cr_assert_eq(job->n_arena, 2);
    s_note_openings(job);
    uint32_t b_slots[2] = {job->arena_slots[0], job->arena_slots[1]};
    /* All slots out: the next request is self-play. */
    cr_assert_eq(client_get_job(trainer, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_SELFPLAY);

    /* Worker a vanishes: after expiry_ms its 4 games go to b. */
    client_destroy(&a);
    double until = time_now() + 1.0;
    while (time_now() < until)
        client_poll(b, 50); /* b stays alive by heartbeats */
    wire_job_request jb = {.free_slots = 8, .arena_candidate = 2, .arena_slots = b_slots,
                           .n_arena_slots = 2};
    cr_assert_eq(client_get_job(b, &jb, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_ARENA, "a's games are reassigned");
    cr_assert_eq(job->n_arena, 4);
    s_note_openings(job);
    uint32_t re[4];
    for (size_t i = 0; i < 4; i++) {
        re[i] = job->arena_slots[i];
        bool was_a = false;
        for (int k = 0; k < 4; k++)
            was_a |= re[i] == a_slots[k];
        cr_assert(was_a, "slot %u was a's", re[i]);
    }

    /* b wins all six: a score of 1 > 0.55 promotes the candidate. A record
     * with the wrong colours for its slot is refused. */
    uint64_t seed = 1000;
    size_t len;
    uint8_t *wrong = s_arena_record(b_slots[0] + 1, true, &seed, &len);
    cr_assert_eq(client_submit_game(b, wrong, len, b_slots[0]), 0);
    harness_client_drain(b);
    client_stats st;
    client_get_stats(b, &st);
    cr_assert_eq(st.rejected_by_reason[VALIDATE_ARENA], 1);
    free(wrong);
    /* So is one from another opening than its slot's. */
    char keep[64];
    snprintf(keep, sizeof keep, "%s", s_openings[b_slots[0]]);
    memcpy(s_openings[b_slots[0]], s_openings[a_slots[0]], 64);
    cr_assert_str_neq(s_openings[b_slots[0]], keep);
    wrong = s_arena_record(b_slots[0], true, &seed, &len);
    snprintf(s_openings[b_slots[0]], 64, "%s", keep);
    cr_assert_eq(client_submit_game(b, wrong, len, b_slots[0]), 0);
    harness_client_drain(b);
    client_get_stats(b, &st);
    cr_assert_eq(st.rejected_by_reason[VALIDATE_ARENA], 2);
    free(wrong);
    uint32_t all[6] = {b_slots[0], b_slots[1], re[0], re[1], re[2], re[3]};
    for (int i = 0; i < 6; i++) {
        uint8_t *rec = s_arena_record(all[i], true, &seed, &len);
        cr_assert_eq(client_submit_game(b, rec, len, all[i]), 0);
        free(rec);
    }
    harness_client_drain(b);
    client_get_stats(b, &st);
    cr_assert_eq(st.acked, 6);
    s_wait_status(&c, "\"models\"", "best", 2);
    wire_announcement an = {0};
    bool got = false;
    for (double end = time_now() + 5; time_now() < end && !got;) {
        client_poll(b, 20);
        while (client_next_announcement(b, &an))
            got |= an.best_version == 2;
    }
    cr_assert(got, "the promotion is announced over PUB");
    cr_assert_eq(an.previous_version, 1);
    /* Decided once 4 wins make the score certain to exceed 0.55 * 6 = 3.3
     * (or later, if more games arrived in the same commit). */
    cr_assert(an.wins >= 4 && an.wins <= 6, "wins %u", an.wins);
    cr_assert_eq(an.losses, 0);
    static char buf[1 << 16];
    cr_assert_eq(harness_http(c.http_port, "/status", buf, sizeof buf), 200);
    cr_assert_eq(json_number_after(buf, "\"last\"", "candidate"), 2);
    cr_assert(strstr(buf, "\"promoted\": true"));
    cr_assert_eq(json_number_after(buf, "\"arena\"", "candidate"), 0, "no arena running");
    /* Self-play now uses the new best. */
    cr_assert_eq(client_get_job(b, &jr, &job), 0);
    cr_assert_eq(job->kind, WIRE_JOB_SELFPLAY);
    cr_assert_eq(job->model_version, 2);
    cr_assert_eq(client_best_version(b), 2);

    client_destroy(&b);
    client_destroy(&trainer);
    zmq_ctx_term(zctx);
    cr_assert_eq(s_stop(&c), 0);
    s_teardown(&c);
}

Test(coordinator, bad_settings_exit_2_with_one_line)
{
    proc_output o;
    const char *range[] = {"--arena_games=0", NULL};
    cr_assert_eq(harness_run_bin("kz-coordinator", range, NULL, &o), 2, "%s", o.err);
    proc_output_free(&o);
    const char *unknown[] = {"--no_such_thing=1", NULL};
    cr_assert_eq(harness_run_bin("kz-coordinator", unknown, NULL, &o), 2, "%s", o.err);
    char line[256] = "";
    snprintf(line, sizeof line, "%s", o.err); /* the first line */
    line[strcspn(line, "\n")] = 0;
    proc_output_free(&o);
    cr_assert(strstr(line, "no_such_thing"), "%s", line);
}

/* The store keeps the game it holds: a coordinator of another game on it
 * refuses to start, naming both. */
Test(coordinator, a_store_of_another_game_is_refused)
{
    coordp c;
    s_setup(&c);
    s_start(&c);
    cr_assert_eq(s_stop(&c), 0);
    char store_dir[128];
    snprintf(store_dir, sizeof store_dir, "%s/store", c.dir);
    store_options so;
    store_options_default(&so);
    store *st;
    cr_assert_eq(store_open(&st, store_dir, &so), 0);
    char held[64] = "";
    size_t len = 0;
    cr_assert_eq(store_get_meta(st, "game", held, sizeof held - 1, &len), 0);
    cr_assert_str_eq(held, GAME_DEFAULT_NAME, "written at the first start");
    cr_assert_eq(store_put_meta(st, "game", "othergame", 9), 0);
    store_close(&st);
    char a_dir[128], a_bind[96], a_pub[96], a_port[48];
    snprintf(a_dir, sizeof a_dir, "--data_dir=%s", store_dir);
    snprintf(a_bind, sizeof a_bind, "--bind=%s", c.endpoint);
    snprintf(a_pub, sizeof a_pub, "--pub_bind=%s", c.pub);
    snprintf(a_port, sizeof a_port, "--http_port=%d", c.http_port);
    const char *args[] = {a_dir, a_bind, a_pub, a_port, "--sync=false", NULL};
    proc_output o;
    cr_assert_eq(harness_run_bin("kz-coordinator", args, NULL, &o), 1, "%s", o.err);
    cr_assert(strstr(o.err, "holds othergame games, not " GAME_DEFAULT_NAME), "%s", o.err);
    proc_output_free(&o);
    s_teardown(&c);
}

Test(coordinator, a_client_outlives_a_coordinator_crash)
{
    coordp c;
    s_setup(&c);
    s_start(&c);
    void *zctx = zmq_ctx_new();
    client *cl = s_client(zctx, &c, "survivor", false);
    uint8_t *recs[20];
    size_t lens[20];
    for (int i = 0; i < 20; i++)
        recs[i] = s_record((uint64_t)i + 500, &lens[i]);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(client_submit_game(cl, recs[i], lens[i], 0), 0);
    harness_client_drain(cl);
    /* SIGKILL: no clean stop. Games submitted meanwhile wait in the queue. */
    harness_stop(c.pid, SIGKILL, 10);
    c.pid = 0;
    for (int i = 10; i < 20; i++)
        cr_assert_eq(client_submit_game(cl, recs[i], lens[i], 0), 0);
    double until = time_now() + 2.5; /* > 2 timeouts: resends and a reconnect */
    while (time_now() < until)
        client_poll(cl, 50);
    cr_assert_eq(client_pending(cl), 10, "nothing is dropped while the coordinator is away");
    client_stats st;
    client_get_stats(cl, &st);
    cr_assert_gt(st.reconnects, 0, "a silent coordinator gets a fresh socket (Lazy Pirate)");
    s_start(&c);
    harness_client_drain(cl);
    client_get_stats(cl, &st);
    cr_assert_eq(st.acked, 20);
    cr_assert_gt(st.resent, 0);
    s_wait_status(&c, "\"replay\"", "games", 20);
    for (int i = 0; i < 20; i++)
        free(recs[i]);
    client_destroy(&cl);
    zmq_ctx_term(zctx);
    cr_assert_eq(s_stop(&c), 0);
    s_teardown(&c);
}

/* Runs a shell command, returns its exit status and the first 64 KiB of its
 * standard output in out. */
static int s_run(const char *cmd, char *out, size_t cap)
{
    return harness_sh(cmd, out, cap);
}

Test(coordinator, kz_status_and_kz_loadgen)
{
    coordp c;
    s_setup(&c);
    s_start(&c);
    const char *dir = getenv("KZ_BIN_DIR");
    static char out[1 << 16];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/kz loadgen --endpoint=%s --games=300 --workers=4 --pool=16 "
                              "--repeat=0.1 --curve=false 2>/dev/null", dir, c.endpoint);
    cr_assert_eq(s_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "loadgen: 300 acked ("), "%s", out);
    cr_assert(strstr(out, " 0 rejected"), "%s", out);
    long stored = -1, dups = -1;
    const char *p = strstr(out, "acked (");
    cr_assert(p && sscanf(p, "acked (%ld stored, %ld duplicates", &stored, &dups) == 2, "%s", out);
    cr_assert_eq(stored + dups, 300);
    s_wait_status(&c, "\"replay\"", "games", (double)stored);

    snprintf(cmd, sizeof cmd, "%s/kz status http://127.0.0.1:%d 2>&1", dir, c.http_port);
    cr_assert_eq(s_run(cmd, out, sizeof out), 0, "%s", out);
    char want[96];
    snprintf(want, sizeof want, "replay      %ld games", stored);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(strstr(out, "models      best 1"), "%s", out);
    cr_assert(strstr(out, "loadgen-"), "the simulated workers are listed: %s", out);
    snprintf(cmd, sizeof cmd, "%s/kz status http://127.0.0.1:%d/status --json 2>&1", dir,
             c.http_port);
    cr_assert_eq(s_run(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_eq(out[0], '{');
    snprintf(cmd, sizeof cmd, "%s/kz status --bogus 2>&1", dir);
    cr_assert_eq(s_run(cmd, out, sizeof out), 2, "unknown flag: exit 2");
    cr_assert(strstr(out, "--bogus"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s/kz status http://127.0.0.1:1/ 2>&1", dir);
    cr_assert_eq(s_run(cmd, out, sizeof out), 1, "unreachable: exit 1");
    cr_assert(strstr(out, "cannot connect"), "%s", out);
    /* kz store lists each stored game once (the coordinator still runs). */
    snprintf(cmd, sizeof cmd, "%s/kz store --data_dir=%s/store --games --models 2>&1", dir,
             c.dir);
    cr_assert_eq(s_run(cmd, out, sizeof out), 0, "%s", out);
    snprintf(want, sizeof want, ": %ld games,", stored);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(strstr(out, "model 1 parent 0 initial"), "%s", out);
    long lines = 0;
    char ids[400][33];
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        long seq;
        char id[33];
        if (sscanf(line, "%ld %32s selfplay", &seq, id) != 2)
            continue;
        for (long k = 0; k < lines; k++)
            cr_assert_str_neq(ids[k], id, "game %s listed twice", id);
        cr_assert_lt(lines, 400);
        snprintf(ids[lines++], 33, "%s", id);
    }
    cr_assert_eq(lines, stored);
    snprintf(cmd, sizeof cmd, "%s/kz store --data_dir=%s/nothing 2>&1", dir, c.dir);
    cr_assert_eq(s_run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s/kz loadgen --help", dir);
    cr_assert_eq(s_run(cmd, out, sizeof out), 0);
    cr_assert(strstr(out, "--workers"), "%s", out);
    cr_assert_eq(s_stop(&c), 0);
    s_teardown(&c);
}
