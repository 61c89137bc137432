/* Tests of net/client against a real kz-coordinator (tests/harness/harness.h),
 * read as its usage example: make a client, fetch the best model, submit
 * games and read what became of them, and what a caller sees when the
 * coordinator is silent, refuses, or the queue is full. (The client
 * outliving a coordinator crash is in test_coordinator.c; a whole worker's
 * use of it in test_worker.c.) */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "net/client.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

TestSuite(client, .fini = harness_cleanup);

/* A valid self-play record of model 1 from random play; caller frees. */
static uint8_t *s_record(uint64_t seed, size_t *len)
{
    validate_random_opts o = {.model_version = 1, .worker_id = "client-test"};
    uint8_t *buf;
    cr_assert_eq(validate_random_record(game_default(), seed, &o, &buf, len), 0);
    return buf;
}

Test(client, fetches_the_best_model_and_hears_the_welcome)
{
    harness h;
    harness_init(&h, "client-model");
    harness_coord_start(&h, NULL);
    void *zctx = zmq_ctx_new();
    client *c = harness_client(zctx, h.endpoint, NULL, "client-a", "tool", 2000);
    cr_assert_str_eq(client_id(c), "client-a");
    uint8_t *blob = NULL;
    size_t len = 0;
    wire_model_reply info;
    cr_assert_eq(client_get_model(c, 0, 0, &blob, &len, &info), 0, "%s", client_last_error(c));
    cr_assert_eq(info.version, 1, "the best of a new cluster is its initial model");
    cr_assert_eq(wire_blob_checksum(blob, len), info.checksum);
    cr_assert_eq(client_best_version(c), 1);
    cr_assert(client_connected(c));
    const wire_welcome *w = client_welcome(c);
    cr_assert_str_eq(w->game, game_default()->name, "the cluster's game: %s", w->game);
    /* The same blob again by version, and checked against its checksum. */
    uint8_t *again = NULL;
    size_t alen = 0;
    cr_assert_eq(client_get_model(c, 1, info.checksum, &again, &alen, NULL), 0);
    cr_assert(alen == len && !memcmp(again, blob, len));
    free(again);
    cr_assert_eq(client_get_model(c, 1, info.checksum ^ 1, &again, &alen, NULL), KZ_ECORRUPT,
                 "a checksum other than the expected one is refused");
    free(blob);
    client_destroy(&c);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(client, an_unknown_model_is_not_found_with_the_coordinator_s_reason)
{
    harness h;
    harness_init(&h, "client-nomodel");
    harness_coord_start(&h, NULL);
    void *zctx = zmq_ctx_new();
    client *c = harness_client(zctx, h.endpoint, NULL, "client-b", "tool", 2000);
    uint8_t *blob = NULL;
    size_t len = 0;
    cr_assert_eq(client_get_model(c, 99, 0, &blob, &len, NULL), KZ_ENOTFOUND);
    cr_assert_null(blob);
    cr_assert(strstr(client_last_error(c), "99"), "%s", client_last_error(c));
    client_destroy(&c);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(client, submitted_games_are_acked_once_and_invalid_ones_rejected)
{
    harness h;
    harness_init(&h, "client-games");
    harness_coord_start(&h, NULL);
    void *zctx = zmq_ctx_new();
    client *c = harness_client(zctx, h.endpoint, NULL, "client-c", NULL, 2000);
    size_t len[3];
    uint8_t *rec[3];
    for (int i = 0; i < 3; i++) {
        rec[i] = s_record(100 + (uint64_t)i, &len[i]);
        cr_assert_eq(client_submit_game(c, rec[i], len[i], 0), 0);
    }
    harness_client_drain(c);
    /* The first again: acknowledged as a duplicate; bytes that are no record:
     * rejected, not resent. */
    cr_assert_eq(client_submit_game(c, rec[0], len[0], 0), 0);
    const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
    cr_assert_eq(client_submit_game(c, junk, sizeof junk, 0), 0);
    harness_client_drain(c);
    client_stats st;
    client_get_stats(c, &st);
    cr_assert_eq(st.submitted, 5);
    cr_assert_eq(st.acked, 4);
    cr_assert_eq(st.duplicates, 1);
    cr_assert_eq(st.rejected, 1);
    cr_assert_eq(st.rejected_by_reason[1], 1, "malformed (RejectReason 1)");
    cr_assert_eq(harness_wait_status(&h, "\"replay\"", "games", 3, 10), 3, "stored once");
    for (int i = 0; i < 3; i++)
        free(rec[i]);
    client_destroy(&c);
    zmq_ctx_term(zctx);
    harness_fini(&h);
}

Test(client, a_silent_coordinator_times_out_and_the_queue_is_bounded)
{
    int port = tcp_free_port();
    cr_assert_gt(port, 0);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port); /* nobody there */
    void *zctx = zmq_ctx_new();
    client_config cfg;
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", endpoint);
    snprintf(cfg.client_id, sizeof cfg.client_id, "%s", "client-d");
    cfg.timeout_ms = 50;
    cfg.retries = 2;
    cfg.max_pending = 2;
    client *c = client_new(zctx, &cfg);
    cr_assert_not_null(c);
    uint8_t *blob = NULL;
    size_t len = 0;
    cr_assert_eq(client_get_model(c, 0, 0, &blob, &len, NULL), KZ_ETIMEOUT);
    cr_assert_not(client_connected(c));
    client_stats st;
    client_get_stats(c, &st);
    cr_assert_eq(st.timeouts, 1);
    /* Games wait in a queue of max_pending, resent until someone answers. */
    size_t rlen;
    uint8_t *rec = s_record(7, &rlen);
    cr_assert_eq(client_submit_game(c, rec, rlen, 0), 0);
    cr_assert_eq(client_submit_game(c, rec, rlen, 0), 0);
    cr_assert_eq(client_submit_game(c, rec, rlen, 0), KZ_EFULL);
    cr_assert_eq(client_pending(c), 2);
    cr_assert_eq(client_submit_game(c, rec, 0, 0), KZ_EINVAL, "an empty record");
    free(rec);
    client_destroy(&c);
    zmq_ctx_term(zctx);
}

Test(client, a_bad_configuration_makes_no_client)
{
    void *zctx = zmq_ctx_new();
    client_config cfg;
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    cfg.endpoint[0] = 0;
    cr_assert_null(client_new(zctx, &cfg), "no endpoint");
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", "tcp://127.0.0.1:1");
    cfg.timeout_ms = 0;
    cr_assert_null(client_new(zctx, &cfg), "timeout 0");
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", "tcp://127.0.0.1:1");
    cfg.retries = 0;
    cr_assert_null(client_new(zctx, &cfg), "no attempt");
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s", "not an endpoint");
    cr_assert_null(client_new(zctx, &cfg), "a malformed endpoint");
    client_config_default(&cfg);
    cfg.curve = false; /* the harness's coordinators run without CurveZMQ */
    cr_assert_str_eq(cfg.game, "", "no game until the program says");
    zmq_ctx_term(zctx);
}
