/* The model store bounded, fast-forwarded: a coordinator with gate none and
 * a small retention (keep_models_last 3, keep_models_every 5) takes 40
 * candidates in a row from a trainer; it keeps the initial model, every
 * fifth version, the three newest and the best, deletes the rest, says so in
 * /metrics (models, their bytes, deletions) and /models, answers 404 for a
 * deleted one, and warns when the data disk has less free space than
 * disk_warn_mb (set above any disk here). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/util.h"
#include "games/game.h"
#include "net/client.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "tests/harness/harness.h"

TestSuite(retention, .fini = harness_cleanup, .timeout = 600);

/* A metric's value in a /metrics text; NAN when absent. */
static double s_metric(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return atof(p + n + 1);
    return NAN;
}

Test(retention, forty_candidates_leave_the_kept_models_and_the_store_bounded)
{
    harness h;
    harness_init(&h, "retain");
    const char *const extra[] = {"--gate=none", "--eval_share=0", "--keep_models_last=3",
                                 "--keep_models_every=5", "--disk_warn_mb=100000000", NULL};
    harness_coord_start(&h, extra);
    char err[256];
    model *m;
    cr_assert_eq(modelfile_load(h.model, game_default(), &m, err, sizeof err), 0, "%s", err);
    void *zctx = zmq_ctx_new();
    client *tr = harness_client(zctx, h.endpoint, NULL, "trainer", "trainer", 2000);
    size_t blob_len = 0;
    for (int i = 0; i < 40; i++) {
        model_edit_meta(m)->created_ms += 1000;
        uint8_t *blob;
        cr_assert_eq(modelfile_to_bytes(m, &blob, &blob_len), 0);
        wire_candidate_ack ack;
        cr_assert_eq(client_submit_candidate(tr, blob, blob_len, 1, 10 * (uint64_t)(i + 1), &ack),
                     0, "%s", client_last_error(tr));
        cr_assert_eq(ack.version, (uint32_t)i + 2);
        free(blob);
    }
    /* 1, 5, 10, ..., 40, then 39, 41 (the newest three, 41 the best). */
    static const uint32_t kept[] = {1, 5, 10, 15, 20, 25, 30, 35, 39, 40, 41};
    const size_t n_kept = sizeof kept / sizeof kept[0];
    static char body[1 << 17];
    double models = NAN;
    for (double end = time_now() + 20; time_now() < end; harness_sleep_ms(100)) {
        cr_assert_eq(harness_http(h.http_port, "/metrics", body, sizeof body), 200);
        models = s_metric(body, "kz_store_models");
        if (models == (double)n_kept && s_metric(body, "kz_best_version") == 41 &&
            s_metric(body, "kz_store_models_deleted_total") == 41.0 - (double)n_kept)
            break;
    }
    cr_assert_eq(models, (double)n_kept, "models kept: %.0f\n%s", models, body);
    /* Deleted by the retention: all the others, once the newest is the best
     * (until then the candidates in flight are in use and kept). */
    cr_assert_eq(s_metric(body, "kz_store_models_deleted_total"), 41.0 - (double)n_kept, "%s",
                 body);
    /* Every stored model is a blob of the same size here (the initial one too). */
    double bytes = s_metric(body, "kz_store_model_bytes");
    cr_assert(bytes >= (double)(n_kept - 1) * (double)blob_len &&
              bytes <= (double)(n_kept + 1) * (double)blob_len,
              "%.0f bytes for %zu models of %zu bytes", bytes, n_kept, blob_len);
    cr_assert_eq(s_metric(body, "kz_best_version"), 41);
    cr_assert_gt(s_metric(body, "kz_disk_free_bytes"), 0);
    cr_assert_eq(s_metric(body, "kz_disk_low"), 1, "below disk_warn_mb");
    cr_assert(harness_wait_log(h.coord_log, "disk: ", 10), "no warning of a low disk");
    /* /models lists exactly the kept ones; a deleted one is a 404. */
    for (double end = time_now() + 10; time_now() < end; harness_sleep_ms(100)) {
        cr_assert_eq(harness_http(h.http_port, "/models", body, sizeof body), 200);
        if (!strstr(body, "\"version\": 2,"))
            break;
    }
    int listed = 0;
    for (const char *p = body; (p = strstr(p, "{\"version\": ")) != NULL; p++) {
        unsigned v = (unsigned)atoi(p + strlen("{\"version\": "));
        bool want = false;
        for (size_t k = 0; k < n_kept; k++)
            want |= kept[k] == v;
        cr_assert(want, "v%u listed but not kept: %s", v, body);
        listed++;
    }
    cr_assert_eq(listed, (int)n_kept, "%s", body);
    cr_assert_eq(harness_http(h.http_port, "/models/7.kzm", NULL, 0), 404);
    cr_assert_eq(harness_http(h.http_port, "/models/41.kzm", NULL, 0), 200);
    client_destroy(&tr);
    zmq_ctx_term(zctx);
    model_destroy(&m);
    harness_fini(&h);
}
