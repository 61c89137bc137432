/* Tests of data/validate: records made by random legal play pass and give
 * the right training positions; every kind of bad record, made by mutating a
 * valid one, is refused with its reason. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "data/record.h"
#include "record.pb-c.h"
#include "common/util.h"
#include "data/validate.h"

#define MAX_MODEL 3

static const game_def *G;
static validator *V;

static void s_setup(void)
{
    G = game_default();
    V = validator_new(G, NULL);
    cr_assert_not_null(V);
}

static void s_teardown(void)
{
    validator_destroy(&V);
}

/* A valid record (decoded, to mutate) from random legal play. */
static Kz__GameRecord *s_random_record(uint64_t seed, int kind)
{
    validate_random_opts o = {.model_version = 2, .kind = kind, .opponent_version = 1,
                              .candidate_player = 1, .worker_id = "w-test"};
    uint8_t *buf;
    size_t len;
    cr_assert_eq(validate_random_record(G, seed, &o, &buf, &len), 0);
    Kz__GameRecord *r = kz__game_record__unpack(NULL, len, buf);
    free(buf);
    cr_assert_not_null(r);
    return r;
}

/* Packs a (mutated) record and validates it. */
static int s_check(const Kz__GameRecord *r, validate_result *res)
{
    size_t len = kz__game_record__get_packed_size(r);
    uint8_t *buf = malloc(len);
    kz__game_record__pack(r, buf);
    int rc = validate_record(V, buf, len, MAX_MODEL, res);
    free(buf);
    return rc;
}

#define EXPECT_REASON(rec, want)                                                              \
    do {                                                                                      \
        validate_result res_;                                                                 \
        int got_ = s_check(rec, &res_);                                                       \
        cr_assert_eq(got_, want, "expected %s, got %s: %s", validate_reason_name(want),       \
                     validate_reason_name(got_), res_.detail);                                \
        cr_assert_eq(res_.reason, got_);                                                      \
        if (want)                                                                             \
            cr_assert(res_.detail[0], "a refusal says why");                                  \
    } while (0)

/* The state before move k of r. */
static game_state s_state_before(const Kz__GameRecord *r, size_t k)
{
    game_state s;
    G->init(&s);
    for (size_t i = 0; i < k; i++)
        G->apply(&s, (int)r->moves[i]->action);
    return s;
}

/* An action that is illegal in s (exists: far fewer legal than all actions). */
static uint32_t s_illegal_action(const game_state *s)
{
    for (int a = 0; a < G->action_count; a++)
        if (!game_is_legal(G, s, a))
            return (uint32_t)a;
    cr_assert_fail("no illegal action");
    return 0;
}

/* The first move with more than one legal action. */
static Kz__MoveRecord *s_move_with_choice(const Kz__GameRecord *r)
{
    for (size_t i = 0; i < r->n_moves; i++)
        if (r->moves[i]->n_policy > 1)
            return r->moves[i];
    cr_assert_fail("no move with a choice");
    return NULL;
}

TestSuite(validate, .init = s_setup, .fini = s_teardown);

Test(validate, random_legal_games_pass_with_their_training_positions)
{
    int decisive = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        Kz__GameRecord *r = s_random_record(seed, 0);
        validate_result res;
        int rc = s_check(r, &res);
        cr_assert_eq(rc, VALIDATE_OK, "seed %llu: %s", (unsigned long long)seed, res.detail);
        cr_assert_eq(res.n_positions, r->n_moves);
        cr_assert_eq(res.packed_bytes, (uint32_t)G->packed_bytes);
        cr_assert(res.has_id);
        cr_assert_eq(memcmp(res.game_id, r->game_id.data, 16), 0);
        cr_assert_str_eq(res.worker_id, "w-test");
        cr_assert_eq(res.model_version, 2);
        /* Replay independently: each position is the state's pack, z the
         * result from its mover's view, the policy the legal actions mapped
         * to canonical orientation, ascending, 1/n each. */
        game_state s;
        G->init(&s);
        int winner = r->winner;
        decisive += winner >= 0;
        for (size_t i = 0; i < r->n_moves; i++) {
            uint8_t packed[GAME_PACKED_BYTES];
            G->pack(&s, packed);
            cr_assert_eq(memcmp(res.packed + i * res.packed_bytes, packed, res.packed_bytes), 0);
            float z = winner < 0 ? 0.f : winner == G->to_move(&s) ? 1.f : -1.f;
            cr_assert_float_eq(res.z[i], z, 0);
            uint16_t legal[GAME_MAX_LEGAL];
            int nl = G->legal_actions(&s, legal);
            cr_assert_eq(res.offsets[i + 1] - res.offsets[i], (uint32_t)nl);
            uint8_t seen[GAME_MAX_ACTIONS] = {0};
            for (int k = 0; k < nl; k++)
                seen[G->canonical_action(&s, legal[k])] = 1;
            for (uint32_t k = res.offsets[i]; k < res.offsets[i + 1]; k++) {
                cr_assert(seen[res.actions[k]], "canonical action of a legal one");
                if (k > res.offsets[i])
                    cr_assert_gt(res.actions[k], res.actions[k - 1], "ascending");
                cr_assert_float_eq(res.probs[k], 1.0f / (float)nl, 1e-7);
            }
            G->apply(&s, (int)r->moves[i]->action);
        }
        kz__game_record__free_unpacked(r, NULL);
    }
    cr_assert_gt(decisive, 0, "some random games are won");
}

Test(validate, arena_records_pass)
{
    Kz__GameRecord *r = s_random_record(99, 1);
    validate_result res;
    cr_assert_eq(s_check(r, &res), VALIDATE_OK, "%s", res.detail);
    cr_assert_eq(res.kind, 1);
    cr_assert_eq(res.opponent_version, 1);
    cr_assert_eq(res.candidate_player, 1);
    r->candidate_player = 2;
    EXPECT_REASON(r, VALIDATE_ARENA);
    r->candidate_player = 0;
    r->opponent_version = 2; /* against itself */
    EXPECT_REASON(r, VALIDATE_ARENA);
    r->opponent_version = MAX_MODEL + 1;
    EXPECT_REASON(r, VALIDATE_UNKNOWN_MODEL);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, oversized_records)
{
    Kz__GameRecord *r = s_random_record(3, 0);
    size_t len = kz__game_record__get_packed_size(r);
    validate_limits lim;
    validate_limits_default(&lim);
    lim.max_record_bytes = len - 1;
    validator *small = validator_new(G, &lim);
    uint8_t *buf = malloc(len);
    kz__game_record__pack(r, buf);
    validate_result res;
    cr_assert_eq(validate_record(small, buf, len, MAX_MODEL, &res), VALIDATE_OVERSIZED);
    validator_destroy(&small);
    validate_limits_default(&lim);
    lim.max_moves = (uint32_t)r->n_moves - 1;
    small = validator_new(G, &lim);
    cr_assert_eq(validate_record(small, buf, len, MAX_MODEL, &res), VALIDATE_OVERSIZED);
    cr_assert(strstr(res.detail, "moves"), "%s", res.detail);
    lim.max_moves = (uint32_t)r->n_moves;
    validator_destroy(&small);
    small = validator_new(G, &lim);
    cr_assert_eq(validate_record(small, buf, len, MAX_MODEL, &res), VALIDATE_OK, "%s",
                 res.detail);
    validator_destroy(&small);
    free(buf);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, malformed_records)
{
    validate_result res;
    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
    cr_assert_eq(validate_record(V, garbage, sizeof garbage, MAX_MODEL, &res), VALIDATE_MALFORMED);
    cr_assert_eq(validate_record(V, garbage, 0, MAX_MODEL, &res), VALIDATE_MALFORMED);

    Kz__GameRecord *r = s_random_record(4, 0);
    r->game_id.len = 15;
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    r->game_id.len = 16;
    r->kind = (Kz__GameKind)7;
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    r->kind = KZ__GAME_KIND__GAME_KIND_SELFPLAY;
    char *start = r->start_position;
    r->start_position = "not a position";
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    r->start_position = start;
    /* Policy arrays of different lengths. */
    Kz__MoveRecord *m = s_move_with_choice(r);
    cr_assert_gt(m->n_policy, 1);
    m->n_policy--;
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    m->n_policy++;
    /* Unsorted policy actions. */
    uint32_t t = m->policy_actions[0];
    m->policy_actions[0] = m->policy_actions[1];
    m->policy_actions[1] = t;
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    m->policy_actions[1] = m->policy_actions[0];
    m->policy_actions[0] = t;
    EXPECT_REASON(r, VALIDATE_OK);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, wrong_game_and_unknown_models)
{
    Kz__GameRecord *r = s_random_record(5, 0);
    char *game = r->game;
    r->game = "draughts";
    EXPECT_REASON(r, VALIDATE_WRONG_GAME);
    r->game = game;
    r->model_version = 0;
    EXPECT_REASON(r, VALIDATE_UNKNOWN_MODEL);
    r->model_version = MAX_MODEL + 1;
    EXPECT_REASON(r, VALIDATE_UNKNOWN_MODEL);
    r->model_version = MAX_MODEL;
    EXPECT_REASON(r, VALIDATE_OK);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, illegal_actions)
{
    Kz__GameRecord *r = s_random_record(6, 0);
    size_t k = r->n_moves / 2;
    game_state s = s_state_before(r, k);
    uint32_t good = r->moves[k]->action;
    r->moves[k]->action = s_illegal_action(&s);
    EXPECT_REASON(r, VALIDATE_ILLEGAL_ACTION);
    r->moves[k]->action = 100000; /* outside the action space */
    EXPECT_REASON(r, VALIDATE_ILLEGAL_ACTION);
    r->moves[k]->action = good;
    EXPECT_REASON(r, VALIDATE_OK);

    /* One more move after the end. */
    Kz__MoveRecord extra = *r->moves[0];
    Kz__MoveRecord **moves = malloc((r->n_moves + 1) * sizeof *moves);
    memcpy(moves, r->moves, r->n_moves * sizeof *moves);
    moves[r->n_moves] = &extra;
    Kz__MoveRecord **saved = r->moves;
    r->moves = moves;
    r->n_moves++;
    EXPECT_REASON(r, VALIDATE_ILLEGAL_ACTION);
    r->n_moves--;
    r->moves = saved;
    free(moves);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, policy_on_an_illegal_action)
{
    Kz__GameRecord *r = s_random_record(7, 0);
    size_t k = 2;
    game_state s = s_state_before(r, k);
    Kz__MoveRecord *m = r->moves[k];
    /* The legal actions plus one illegal action, still ascending, shares 1/(n+1). */
    uint32_t bad = s_illegal_action(&s);
    size_t n = m->n_policy + 1;
    uint32_t *acts = malloc(n * sizeof *acts);
    float *pol = malloc(n * sizeof *pol);
    size_t j = 0;
    bool placed = false;
    for (size_t i = 0; i < m->n_policy; i++) {
        if (!placed && bad < m->policy_actions[i]) {
            acts[j++] = bad;
            placed = true;
        }
        acts[j++] = m->policy_actions[i];
    }
    if (!placed)
        acts[j++] = bad;
    for (size_t i = 0; i < n; i++)
        pol[i] = 1.0f / (float)n;
    uint32_t *old_a = m->policy_actions;
    float *old_p = m->policy;
    size_t old_n = m->n_policy;
    m->policy_actions = acts;
    m->policy = pol;
    m->n_policy_actions = m->n_policy = n;
    EXPECT_REASON(r, VALIDATE_POLICY_ILLEGAL);
    m->policy_actions = old_a;
    m->policy = old_p;
    m->n_policy_actions = m->n_policy = old_n;
    EXPECT_REASON(r, VALIDATE_OK);
    free(acts);
    free(pol);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, policy_not_summing_to_one)
{
    Kz__GameRecord *r = s_random_record(8, 0);
    Kz__MoveRecord *m = s_move_with_choice(r);
    float keep0 = m->policy[0], keep1 = m->policy[1];
    m->policy[0] *= 0.5f; /* sum < 1 */
    EXPECT_REASON(r, VALIDATE_POLICY_SUM);
    m->policy[0] = keep0;
    /* Summing to 1 with a negative share. */
    m->policy[0] = keep0 - 1.0f;
    m->policy[1] = keep1 + 1.0f;
    EXPECT_REASON(r, VALIDATE_POLICY_SUM);
    m->policy[0] = keep0;
    m->policy[1] = keep1;
    EXPECT_REASON(r, VALIDATE_OK);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, nan_and_infinity)
{
    Kz__GameRecord *r = s_random_record(9, 0);
    Kz__MoveRecord *m = r->moves[1];
    float keep = m->policy[0];
    m->policy[0] = NAN;
    EXPECT_REASON(r, VALIDATE_NAN);
    m->policy[0] = INFINITY;
    EXPECT_REASON(r, VALIDATE_NAN);
    m->policy[0] = keep;
    m->root_value = NAN;
    EXPECT_REASON(r, VALIDATE_NAN);
    m->root_value = -INFINITY;
    EXPECT_REASON(r, VALIDATE_NAN);
    m->root_value = 0.25f;
    EXPECT_REASON(r, VALIDATE_OK);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, wrong_results)
{
    /* Find a decisive game so that flipping the winner is a lie. */
    Kz__GameRecord *r = NULL;
    for (uint64_t seed = 10; !r || r->winner < 0; seed++) {
        if (r)
            kz__game_record__free_unpacked(r, NULL);
        r = s_random_record(seed, 0);
    }
    int w = r->winner;
    r->winner = 1 - w;
    EXPECT_REASON(r, VALIDATE_WRONG_RESULT);
    r->winner = -1;
    EXPECT_REASON(r, VALIDATE_WRONG_RESULT);
    r->winner = w;
    char *reason = r->reason;
    r->reason = strcmp(reason, "length") ? "length" : "no-pieces";
    EXPECT_REASON(r, VALIDATE_WRONG_RESULT);
    r->reason = reason;
    r->plies++;
    EXPECT_REASON(r, VALIDATE_WRONG_RESULT);
    r->plies--;
    r->n_moves--; /* stops before the end */
    EXPECT_REASON(r, VALIDATE_WRONG_RESULT);
    r->n_moves++;
    EXPECT_REASON(r, VALIDATE_OK);
    kz__game_record__free_unpacked(r, NULL);
}

Test(validate, forced_flags_root_values_and_empty_policies)
{
    Kz__GameRecord *r = s_random_record(21, 0);
    Kz__MoveRecord *m = s_move_with_choice(r);
    m->forced = true; /* more than one legal action */
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    m->forced = false;
    m->root_value = 1.5f;
    EXPECT_REASON(r, VALIDATE_MALFORMED);
    m->root_value = -1.0f;
    EXPECT_REASON(r, VALIDATE_OK);
    /* A move without a policy (a player that does not search) is valid and
     * gives no training position. */
    size_t n = m->n_policy;
    m->n_policy = m->n_policy_actions = 0;
    validate_result res;
    cr_assert_eq(s_check(r, &res), VALIDATE_OK, "%s", res.detail);
    cr_assert_eq(res.n_positions, r->n_moves - 1);
    m->n_policy = m->n_policy_actions = n;
    kz__game_record__free_unpacked(r, NULL);
}

/* The search module's records (data/record.h) and ours agree. */
Test(validate, records_from_the_record_module_pass)
{
    game_record *rec = record_new();
    rng_t rng;
    rng_seed(&rng, 31);
    for (int game = 0; game < 10; game++) {
        record_clear(rec);
        cr_assert_eq(record_new_id(rec), 0);
        snprintf(rec->game, sizeof rec->game, "%s", G->name);
        rec->model_version = 1;
        game_state s;
        G->init(&s);
        uint16_t legal[GAME_MAX_LEGAL];
        float share[GAME_MAX_LEGAL];
        while (!G->result(&s).over) {
            int nl = G->legal_actions(&s, legal);
            for (int k = 0; k < nl; k++)
                share[k] = 1.0f / (float)nl;
            int a = legal[rng_below(&rng, (uint32_t)nl)];
            cr_assert_eq(record_add_move(rec, a, nl == 1, 0.0f, nl, legal, share), 0);
            G->apply(&s, a);
        }
        game_result res = G->result(&s);
        rec->winner = res.winner;
        rec->reason = res.reason;
        rec->plies = (uint32_t)G->ply(&s);
        char err[200];
        cr_assert_eq(record_validate(G, rec, err, sizeof err), 0, "%s", err);
        uint8_t *buf;
        size_t len;
        cr_assert_eq(record_pack(rec, &buf, &len), 0);
        validate_result vr;
        cr_assert_eq(validate_record(V, buf, len, MAX_MODEL, &vr), VALIDATE_OK, "%s", vr.detail);
        cr_assert_eq(vr.n_positions, (uint32_t)rec->n_moves);
        free(buf);
        /* And ours through theirs. */
        validate_random_opts o = {.model_version = 1};
        cr_assert_eq(validate_random_record(G, (uint64_t)game + 77, &o, &buf, &len), 0);
        cr_assert_eq(record_unpack(buf, len, rec, err, sizeof err), 0, "%s", err);
        cr_assert_eq(record_validate(G, rec, err, sizeof err), 0, "%s", err);
        free(buf);
    }
    record_destroy(&rec);
}

Test(validate, reason_names_match_the_protocol)
{
    /* docs/protocol.md's table, by number. */
    const char *want[] = {"ok", "malformed", "oversized", "wrong-game", "unknown-model",
                          "illegal-action", "policy-illegal", "policy-sum", "nan",
                          "wrong-result", "arena", "eval", "forged"};
    cr_assert_eq(sizeof want / sizeof want[0], VALIDATE_REASON_COUNT);
    for (int i = 0; i < VALIDATE_REASON_COUNT; i++)
        cr_assert_str_eq(validate_reason_name(i), want[i]);
    cr_assert_str_eq(validate_reason_name(VALIDATE_REASON_COUNT), "?");
}
