/* Tests of data/record: game records from real self-play games (uniform
 * evaluator), their proto round trip, the rules check, and record files with
 * truncated and corrupted contents. Also a usage example of record.h. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/evaluator.h"
#include "games/game.h"
#include "data/record.h"
#include "record.pb-c.h"
#include "play/selfplay.h"
#include "common/util.h"

/* Collects finished games into an array of records. */
typedef struct games {
    game_record *rec[16]; /* the games, in finishing order */
    int n;                /* how many */
} games;

static int s_keep(void *ctx, const game_record *r)
{
    games *gs = ctx;
    cr_assert_lt(gs->n, 16);
    gs->rec[gs->n] = record_new();
    cr_assert_eq(record_copy(gs->rec[gs->n], r), 0);
    gs->n++;
    return 0;
}

static void s_play(games *gs, int n, uint64_t seed)
{
    const game_def *g = game_default();
    selfplay_config cfg = selfplay_config_default();
    cfg.games = n;
    cfg.parallel = 4;
    cfg.seed = seed;
    cfg.model_version = 7;
    cfg.worker_id = "test";
    cfg.search.simulations = 24;
    char err[200];
    selfplay *sp = selfplay_new(g, &cfg, evaluator_uniform(g), err, sizeof err);
    cr_assert_not_null(sp, "%s", err);
    memset(gs, 0, sizeof *gs);
    cr_assert_eq(selfplay_run(sp, s_keep, gs), 0);
    selfplay_destroy(&sp);
    cr_assert_eq(gs->n, n);
}

static void s_free(games *gs)
{
    for (int i = 0; i < gs->n; i++)
        record_destroy(&gs->rec[i]);
}

static void s_assert_same(const game_record *a, const game_record *b)
{
    cr_assert_eq(memcmp(a->id, b->id, RECORD_ID_BYTES), 0);
    cr_assert_str_eq(a->game, b->game);
    cr_assert_eq(a->kind, b->kind);
    cr_assert_eq(a->model_version, b->model_version);
    cr_assert_eq(a->opponent_version, b->opponent_version);
    cr_assert_eq(a->candidate_player, b->candidate_player);
    cr_assert_str_eq(a->start_position, b->start_position);
    cr_assert_eq(a->settings.simulations, b->settings.simulations);
    cr_assert_eq(a->settings.c_puct, b->settings.c_puct);
    cr_assert_eq(a->settings.dirichlet_alpha, b->settings.dirichlet_alpha);
    cr_assert_eq(a->settings.dirichlet_epsilon, b->settings.dirichlet_epsilon);
    cr_assert_eq(a->settings.temperature_plies, b->settings.temperature_plies);
    cr_assert_eq(a->settings.fpu, b->settings.fpu);
    cr_assert_eq(a->settings.leaves_per_tree, b->settings.leaves_per_tree);
    cr_assert_eq(a->settings.reuse_tree, b->settings.reuse_tree);
    cr_assert_eq(a->seed, b->seed);
    cr_assert_eq(a->started_ms, b->started_ms);
    cr_assert_eq(a->finished_ms, b->finished_ms);
    cr_assert_str_eq(a->worker_id, b->worker_id);
    cr_assert_eq(a->winner, b->winner);
    cr_assert_eq(a->reason, b->reason);
    cr_assert_eq(a->plies, b->plies);
    cr_assert_eq(a->n_moves, b->n_moves);
    for (int k = 0; k < a->n_moves; k++) {
        const record_move *x = &a->moves[k], *y = &b->moves[k];
        cr_assert_eq(x->action, y->action);
        cr_assert_eq(x->forced, y->forced);
        cr_assert_eq(x->root_value, y->root_value);
        cr_assert_eq(x->policy_n, y->policy_n);
        for (int j = 0; j < x->policy_n; j++) {
            cr_assert_eq(a->policy_actions[x->policy_off + j],
                         b->policy_actions[y->policy_off + j]);
            cr_assert_eq(a->policy[x->policy_off + j], b->policy[y->policy_off + j]);
        }
    }
}

static char *s_tmp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/kz_test_record_%d_%s", (int)getpid(), name);
    return path;
}

/* --- in memory and on the wire --------------------------------------------------- */

Test(record, pack_unpack_round_trip_keeps_every_field)
{
    games gs;
    s_play(&gs, 3, 5);
    game_record *back = record_new();
    for (int i = 0; i < gs.n; i++) {
        gs.rec[i]->kind = RECORD_ARENA;
        gs.rec[i]->opponent_version = 3;
        gs.rec[i]->candidate_player = 1;
        gs.rec[i]->settings.reuse_tree = false;
        uint8_t *buf;
        size_t len;
        cr_assert_eq(record_pack(gs.rec[i], &buf, &len), 0);
        char err[200];
        cr_assert_eq(record_unpack(buf, len, back, err, sizeof err), 0, "%s", err);
        s_assert_same(gs.rec[i], back);
        free(buf);
    }
    record_destroy(&back);
    cr_assert_null(back);
    s_free(&gs);
}

Test(record, self_play_records_pass_the_rules_check)
{
    games gs;
    s_play(&gs, 4, 9);
    const game_def *g = game_default();
    int mid = 0;
    for (int i = 0; i < gs.n; i++) {
        char err[200];
        cr_assert_eq(record_validate(g, gs.rec[i], err, sizeof err), 0, "%s", err);
        cr_assert_neq(gs.rec[i]->reason, GAME_REASON_NONE);
        /* Replay by hand: mid-sequence states are recorded too. */
        game_state s;
        g->init(&s);
        for (int k = 0; k < gs.rec[i]->n_moves; k++) {
            mid += g->mid_turn(&s);
            g->apply(&s, gs.rec[i]->moves[k].action);
        }
    }
    cr_assert_gt(mid, 0, "four games without a single multi-hop capture are unlikely");
    s_free(&gs);
}

typedef struct z_check {
    const game_def *g; /* the game */
    int winner;        /* the record's winner */
    int states;        /* states seen */
    game_state expect; /* the state the callback should see next */
} z_check;

static int s_check_z(void *ctx, const game_state *s, int k, const record_move *m, int z)
{
    z_check *zc = ctx;
    const game_def *g = zc->g;
    cr_assert_eq(k, zc->states);
    cr_assert_eq(memcmp(s, &zc->expect, sizeof *s), 0, "state %d differs", k);
    int want = zc->winner < 0 ? 0 : zc->winner == g->to_move(s) ? 1 : -1;
    cr_assert_eq(z, want, "state %d: z %d, want %d", k, z, want);
    g->apply(&zc->expect, m->action);
    zc->states++;
    return 0;
}

Test(record, replay_gives_every_state_with_z_from_the_movers_view)
{
    games gs;
    s_play(&gs, 3, 21);
    const game_def *g = game_default();
    for (int i = 0; i < gs.n; i++) {
        z_check zc = {.g = g, .winner = gs.rec[i]->winner};
        g->init(&zc.expect);
        char err[200];
        cr_assert_eq(record_replay(g, gs.rec[i], s_check_z, &zc, err, sizeof err), 0, "%s", err);
        cr_assert_eq(zc.states, gs.rec[i]->n_moves);
    }
    s_free(&gs);
}

/* Applies one kind of damage to a copy of r and expects record_validate to
 * fail with `code` and a message containing `word`. */
static void s_expect_invalid(const game_record *r, int kind, int code, const char *word)
{
    const game_def *g = game_default();
    game_record *c = record_new();
    cr_assert_eq(record_copy(c, r), 0);
    record_move *m0 = &c->moves[0];
    /* The first searched move (with a distribution of at least two entries). */
    record_move *ms = NULL;
    for (int k = 0; k < c->n_moves && !ms; k++)
        if (c->moves[k].policy_n >= 2)
            ms = &c->moves[k];
    cr_assert_not_null(ms);
    switch (kind) {
    case 0: m0->action = 0; break;                                   /* 0-0 is never legal */
    case 1: c->policy[ms->policy_off] += 0.5f; break;                /* sum != 1 */
    case 2: c->policy_actions[ms->policy_off + 1] = c->policy_actions[ms->policy_off]; break;
    case 3: c->winner = c->winner == 0 ? 1 : 0; break;
    case 4: c->plies++; break;
    case 5: c->n_moves--; break;                                     /* not over */
    case 6: ms->forced = true; break;
    case 7: ms->root_value = 3; break;
    case 8: snprintf(c->game, sizeof c->game, "chess"); break;
    case 9: snprintf(c->start_position, sizeof c->start_position, "bbb"); break;
    case 10: c->policy_actions[ms->policy_off] = 0; break;          /* an illegal action */
    default: cr_assert_fail();
    }
    char err[200] = "";
    int rc = record_validate(g, c, err, sizeof err);
    cr_assert_eq(rc, code, "damage %d: rc %d (%s)", kind, rc, err);
    cr_assert(strstr(err, word), "damage %d: message '%s' lacks '%s'", kind, err, word);
    record_destroy(&c);
}

Test(record, validate_rejects_each_kind_of_bad_record_with_its_reason)
{
    games gs;
    s_play(&gs, 1, 33);
    const game_record *r = gs.rec[0];
    s_expect_invalid(r, 0, KZ_EILLEGAL, "move 1");
    s_expect_invalid(r, 1, KZ_EINVAL, "sums to");
    s_expect_invalid(r, 2, KZ_EINVAL, "ascending");
    s_expect_invalid(r, 3, KZ_EINVAL, "result");
    s_expect_invalid(r, 4, KZ_EINVAL, "plies");
    s_expect_invalid(r, 5, KZ_EINVAL, "not over");
    s_expect_invalid(r, 6, KZ_EINVAL, "forced");
    s_expect_invalid(r, 7, KZ_EINVAL, "root value");
    s_expect_invalid(r, 8, KZ_EMISMATCH, "chess");
    s_expect_invalid(r, 9, KZ_EINVAL, "start position");
    s_expect_invalid(r, 10, KZ_EILLEGAL, "illegal");
    s_free(&gs);
}

/* Packs a hand-made proto message. */
static uint8_t *s_pack_proto(Kz__GameRecord *gr, size_t *len)
{
    *len = kz__game_record__get_packed_size(gr);
    uint8_t *buf = malloc(*len ? *len : 1);
    kz__game_record__pack(gr, buf);
    return buf;
}

Test(record, unpack_rejects_malformed_messages)
{
    game_record *r = record_new();
    char err[200];
    /* Not protobuf at all. */
    uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    cr_assert_eq(record_unpack(junk, sizeof junk, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "decode"), "%s", err);
    /* A short id. */
    uint8_t id[4] = {1, 2, 3, 4};
    Kz__GameRecord gr = KZ__GAME_RECORD__INIT;
    gr.game_id.data = id;
    gr.game_id.len = 4;
    gr.game = "khreibaga";
    size_t len;
    uint8_t *buf = s_pack_proto(&gr, &len);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "id"), "%s", err);
    free(buf);
    /* Policy actions and shares of different lengths. */
    uint8_t id16[16] = {0};
    gr.game_id.data = id16;
    gr.game_id.len = 16;
    uint32_t acts[2] = {7 * 25 + 12, 8 * 25 + 12};
    float shares[1] = {1};
    Kz__MoveRecord mv = KZ__MOVE_RECORD__INIT;
    mv.action = 7 * 25 + 12;
    mv.n_policy_actions = 2;
    mv.policy_actions = acts;
    mv.n_policy = 1;
    mv.policy = shares;
    Kz__MoveRecord *mvp = &mv;
    gr.n_moves = 1;
    gr.moves = &mvp;
    buf = s_pack_proto(&gr, &len);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "policy"), "%s", err);
    free(buf);
    /* A NaN root value. */
    mv.n_policy_actions = 1;
    mv.root_value = NAN;
    buf = s_pack_proto(&gr, &len);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "finite"), "%s", err);
    free(buf);
    /* An unknown reason and an impossible winner. */
    mv.root_value = 0;
    gr.reason = "checkmate";
    buf = s_pack_proto(&gr, &len);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "reason"), "%s", err);
    free(buf);
    gr.reason = "no-pieces";
    gr.winner = 5;
    buf = s_pack_proto(&gr, &len);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "winner"), "%s", err);
    free(buf);
    /* The same message with a sane winner decodes. */
    gr.winner = 0;
    buf = s_pack_proto(&gr, &len);
    cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r->n_moves, 1);
    cr_assert_eq(r->reason, GAME_REASON_NO_PIECES);
    free(buf);
    record_destroy(&r);
}

/* --- files ------------------------------------------------------------------------ */

static void s_write_file(const char *path, games *gs)
{
    record_file *f;
    char err[200];
    cr_assert_eq(record_file_create(path, &f, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < gs->n; i++)
        cr_assert_eq(record_file_write(f, gs->rec[i], err, sizeof err), 0, "%s", err);
    cr_assert_eq(record_file_count(f), gs->n);
    cr_assert_eq(record_file_close(&f), 0);
    cr_assert_null(f);
}

/* Reads the whole file: the number of records read, and the final code. */
static int s_read_file(const char *path, game_record *r, int *count, char *err, size_t errlen)
{
    record_file *f;
    *count = 0;
    int rc = record_file_open(path, &f, err, errlen);
    if (rc)
        return rc;
    while ((rc = record_file_read(f, r, err, errlen)) == 0)
        (*count)++;
    /* An error is sticky. */
    if (rc != KZ_ENOTFOUND)
        cr_assert_eq(record_file_read(f, r, err, errlen), rc);
    record_file_close(&f);
    return rc;
}

Test(record, file_round_trip_in_order)
{
    games gs;
    s_play(&gs, 5, 44);
    const char *path = s_tmp_path("rt");
    s_write_file(path, &gs);
    record_file *f;
    char err[200];
    game_record *r = record_new();
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < gs.n; i++) {
        cr_assert_eq(record_file_read(f, r, err, sizeof err), 0, "%s", err);
        s_assert_same(gs.rec[i], r);
    }
    cr_assert_eq(record_file_read(f, r, err, sizeof err), KZ_ENOTFOUND);
    cr_assert_eq(record_file_count(f), 5);
    cr_assert_eq(record_file_write(f, r, err, sizeof err), KZ_EINVAL, "a reader cannot write");
    record_file_close(&f);
    record_file_close(&f); /* NULL-safe */
    record_destroy(&r);
    unlink(path);
    s_free(&gs);
}

Test(record, appending_goes_on_after_the_last_record_and_refuses_damage)
{
    games gs;
    s_play(&gs, 4, 45);
    const char *path = s_tmp_path("append");
    unlink(path);
    record_file *f;
    char err[200];
    /* A missing file is created; then two more runs append. */
    for (int part = 0; part < 2; part++) {
        char warn[300];
        cr_assert_eq(record_file_append(path, &f, warn, sizeof warn, err, sizeof err), 0, "%s",
                     err);
        cr_assert_str_empty(warn);
        cr_assert_eq(record_file_count(f), 2 * part, "the records already there");
        for (int i = 2 * part; i < 2 * part + 2; i++)
            cr_assert_eq(record_file_write(f, gs.rec[i], err, sizeof err), 0, "%s", err);
        cr_assert_eq(record_file_count(f), 2 * part + 2);
        cr_assert_eq(record_file_close(&f), 0);
    }
    game_record *r = record_new();
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < gs.n; i++) {
        cr_assert_eq(record_file_read(f, r, err, sizeof err), 0, "%s", err);
        s_assert_same(gs.rec[i], r);
    }
    cr_assert_eq(record_file_read(f, r, err, sizeof err), KZ_ENOTFOUND);
    record_file_close(&f);
    /* A file cut inside its last record (a torn write), in its body or its
     * length prefix: cut back to the whole records, said in warn, and
     * appended to after them (issue 28, #11). */
    uint8_t *bytes;
    size_t len;
    cr_assert_eq(file_read_all(path, &bytes, &len), 0);
    char warn[300];
    for (int k = 0; k < 2; k++) {
        size_t keep = k ? 8 + 2 : len - 3; /* (8 + 2: two bytes of the first length prefix) */
        cr_assert_eq(file_write_atomic(path, bytes, keep), 0);
        cr_assert_eq(record_file_append(path, &f, warn, sizeof warn, err, sizeof err), 0, "%s",
                     err);
        long whole = k ? 0 : 3;
        char says[40];
        snprintf(says, sizeof says, "whole records kept: %ld", whole);
        cr_assert(strstr(warn, "torn last record") && strstr(warn, says), "%s", warn);
        cr_assert_eq(record_file_count(f), whole);
        cr_assert_eq(record_file_write(f, gs.rec[3], err, sizeof err), 0, "%s", err);
        cr_assert_eq(record_file_close(&f), 0);
        cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
        for (long i = 0; i <= whole; i++)
            cr_assert_eq(record_file_read(f, r, err, sizeof err), 0, "%s", err);
        s_assert_same(gs.rec[3], r);
        cr_assert_eq(record_file_read(f, r, err, sizeof err), KZ_ENOTFOUND, "%s", err);
        record_file_close(&f);
    }
    /* Damage before the end (the first record's length past the limit) is
     * refused, and the file left as it was. */
    cr_assert_eq(file_write_atomic(path, bytes, len), 0);
    bytes[8 + 3] = 0x7f;
    cr_assert_eq(file_write_atomic(path, bytes, len), 0);
    cr_assert_eq(record_file_append(path, &f, warn, sizeof warn, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "exceeds the limit") && strstr(err, "record 1"), "%s", err);
    cr_assert_null(f);
    uint8_t *after;
    size_t after_len;
    cr_assert_eq(file_read_all(path, &after, &after_len), 0);
    cr_assert(after_len == len && !memcmp(after, bytes, len), "the file untouched");
    free(after);
    /* Nor to a foreign file. */
    cr_assert_eq(file_write_atomic(path, "hello, world\n", 13), 0);
    cr_assert_eq(record_file_append(path, &f, warn, sizeof warn, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "not a record file"), "%s", err);
    free(bytes);
    record_destroy(&r);
    unlink(path);
    s_free(&gs);
}

Test(record, truncated_files_give_a_clear_error_at_every_cut)
{
    games gs;
    s_play(&gs, 2, 45);
    char path[256], cut_path[256]; /* s_tmp_path's buffer is static: copy each name */
    snprintf(path, sizeof path, "%s", s_tmp_path("trunc"));
    snprintf(cut_path, sizeof cut_path, "%s", s_tmp_path("cut"));
    s_write_file(path, &gs);
    uint8_t *data;
    size_t len;
    cr_assert_eq(file_read_all(path, &data, &len), 0);
    game_record *r = record_new();
    /* The byte where the second record starts: 8 + 4 + the first's length. */
    size_t first_end = 8 + 4 + (size_t)(data[8] | data[9] << 8 | data[10] << 16 | data[11] << 24);
    for (size_t cut = 0; cut < len; cut++) {
        FILE *fp = fopen(cut_path, "wb");
        fwrite(data, 1, cut, fp);
        fclose(fp);
        char err[200] = "";
        int count;
        int rc = s_read_file(cut_path, r, &count, err, sizeof err);
        if (cut < 8) {
            cr_assert_eq(rc, KZ_ECORRUPT, "cut %zu", cut);
            cr_assert(strstr(err, "not a record file"), "cut %zu: %s", cut, err);
        } else if (cut == 8 || cut == first_end) {
            cr_assert_eq(rc, KZ_ENOTFOUND, "cut %zu at a record boundary", cut);
            cr_assert_eq(count, cut == 8 ? 0 : 1);
        } else {
            cr_assert_eq(rc, KZ_ECORRUPT, "cut %zu: rc %d", cut, rc);
            cr_assert(strstr(err, "truncated"), "cut %zu: %s", cut, err);
            cr_assert(strstr(err, cut < first_end ? "record 1" : "record 2"), "cut %zu: %s", cut,
                      err);
            cr_assert_eq(count, cut < first_end ? 0 : 1);
        }
    }
    record_destroy(&r);
    free(data);
    unlink(path);
    unlink(cut_path);
    s_free(&gs);
}

Test(record, corrupted_files_never_crash_the_reader)
{
    games gs;
    s_play(&gs, 2, 46);
    const game_def *g = game_default();
    const char *path = s_tmp_path("corrupt");
    s_write_file(path, &gs);
    uint8_t *data;
    size_t len;
    cr_assert_eq(file_read_all(path, &data, &len), 0);
    game_record *r = record_new();
    char err[200];
    int count;
    /* A bad version and an absurd length prefix. */
    data[6] = 2;
    cr_assert_eq(file_write_atomic(path, data, len), 0);
    cr_assert_eq(s_read_file(path, r, &count, err, sizeof err), KZ_EVERSION);
    cr_assert(strstr(err, "version 2"), "%s", err);
    data[6] = 1;
    uint8_t saved = data[11];
    data[11] = 0x7f;
    cr_assert_eq(file_write_atomic(path, data, len), 0);
    cr_assert_eq(s_read_file(path, r, &count, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "exceeds"), "%s", err);
    data[11] = saved;
    /* Random byte damage: every outcome is a clean read, a clear error, or a
     * record that the rules check catches; never a crash (ASan watches). */
    rng_t rng;
    rng_seed(&rng, 99);
    int errors = 0, invalid = 0;
    for (int trial = 0; trial < 300; trial++) {
        uint8_t *d = malloc(len);
        memcpy(d, data, len);
        int flips = 1 + (int)rng_below(&rng, 4);
        for (int k = 0; k < flips; k++)
            d[8 + rng_below(&rng, (uint32_t)(len - 8))] = (uint8_t)rng_next(&rng);
        cr_assert_eq(file_write_atomic(path, d, len), 0);
        free(d);
        record_file *f;
        cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0);
        int rc;
        while ((rc = record_file_read(f, r, err, sizeof err)) == 0) {
            char verr[200];
            invalid += record_validate(g, r, verr, sizeof verr) != 0;
        }
        errors += rc != KZ_ENOTFOUND;
        if (rc != KZ_ENOTFOUND)
            cr_assert(strlen(err) > 10, "an error needs its message");
        record_file_close(&f);
    }
    cr_assert_gt(errors + invalid, 150, "most damage must be detected (%d + %d of 300)", errors,
                 invalid);
    record_destroy(&r);
    free(data);
    unlink(path);
    s_free(&gs);
}

Test(record, opening_a_missing_or_foreign_file_fails_clearly)
{
    record_file *f;
    char err[200];
    cr_assert_eq(record_file_open("/nonexistent/kz.rec", &f, err, sizeof err), ENOENT);
    cr_assert(strstr(err, "/nonexistent/kz.rec"), "%s", err);
    const char *path = s_tmp_path("foreign");
    cr_assert_eq(file_write_atomic(path, "hello, world\n", 13), 0);
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "not a record file"), "%s", err);
    cr_assert_eq(record_file_create("/nonexistent/dir/x.rec", &f, err, sizeof err), ENOENT);
    unlink(path);
}
