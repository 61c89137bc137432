/* engine: the analyses of kz analyse and the play page, and the JSON API
 * (engine.h) answered in process: states, legal actions, apply, analyse,
 * save, and bad requests of every kind answered with one line (never a
 * crash: random junk too). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "play/engine.h"
#include "games/game.h"
#include "tests/harness/harness.h"
#include "games/backgammon.h"
#include "games/khreibaga.h"
#include "data/record.h"
#include "common/util.h"

TestSuite(engine);

/* A network engine over the uniform evaluator (no model file needed). */
static engine *s_uniform(const char *records)
{
    engine_config c;
    engine_config_default(&c);
    c.model = "uniform";
    c.sims = 32;
    c.max_sims = 400;
    c.records = records;
    char err[300];
    engine *e = engine_new(game_default(), &c, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    return e;
}

/* Answers METHOD /api/NAME with "k=v" pairs (NULL-terminated). */
static void s_req(engine *e, const char *method, const char *name, engine_reply *r, ...)
{
    engine_args a = {0};
    va_list ap;
    va_start(ap, r);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;)
        engine_args_add(&a, k, va_arg(ap, const char *));
    va_end(ap);
    engine_request(e, game_default(), method, name, &a, r);
    cr_assert_not_null(r->body);
    cr_assert_eq(strlen(r->body), r->len);
}

/* A one-line error with code, saying `says`. */
static void s_assert_line(engine_reply *r, int code, const char *says, const char *what)
{
    cr_assert_eq(r->code, code, "%s: %d %s", what, r->code, r->body);
    cr_assert(r->len > 1 && r->body[r->len - 1] == '\n' && !memchr(r->body, '\n', r->len - 1),
              "%s: one line: '%s'", what, r->body);
    cr_assert(strstr(r->body, says), "%s: '%s' lacks '%s'", what, r->body, says);
    engine_reply_free(r);
}

Test(engine, an_analysis_orders_the_legal_actions_by_visits)
{
    engine *e = s_uniform(NULL);
    const game_def *g = game_default();
    game_state s;
    g->init(&s);
    engine_analysis *an = malloc(sizeof *an);
    cr_assert_eq(engine_analyse(e, &s, 100, 1, an), 0);
    cr_assert_eq(an->sims, 100);
    cr_assert_not(an->forced);
    cr_assert(an->info.value >= -1 && an->info.value <= 1);
    double sum = 0;
    for (int i = 0; i < an->info.n; i++) {
        sum += an->info.share[i];
        if (i)
            cr_assert(an->info.share[an->order[i]] <= an->info.share[an->order[i - 1]]);
    }
    cr_assert_float_eq(sum, 1.0, 1e-4);
    cr_assert_eq(an->info.actions[an->order[0]], an->info.action, "the most visited is played");
    cr_assert(strstr(an->player, "mcts:uniform:100"), "%s", an->player);
    /* The default simulations, and the same answer again (no noise). */
    int first = an->info.action;
    cr_assert_eq(engine_analyse(e, &s, 0, 1, an), 0);
    cr_assert_eq(an->sims, 32);
    cr_assert_eq(engine_analyse(e, &s, 100, 1, an), 0);
    cr_assert_eq(an->info.action, first);
    free(an);
    engine_destroy(&e);
    cr_assert_null(e);
    engine_destroy(&e); /* NULL-safe */
}

Test(engine, a_forced_state_has_the_value_after_it)
{
    engine *e = s_uniform(NULL);
    const game_def *g = game_default();
    game_state s;
    char err[200];
    /* Black's man on 12 must take the white man on 17 (one legal action);
     * then white has no pieces: black has won. */
    cr_assert_eq(g->parse_position(&s, "............b....w....... b", err, sizeof err), 0, "%s",
                 err);
    uint16_t legal[GAME_MAX_LEGAL];
    cr_assert_eq(g->legal_actions(&s, legal), 1);
    engine_analysis *an = malloc(sizeof *an);
    cr_assert_eq(engine_analyse(e, &s, 50, 1, an), 0);
    cr_assert(an->forced);
    cr_assert_float_eq(an->info.value, 1.0, 1e-9, "a forced win: %f", an->info.value);
    free(an);
    cr_assert(engine_is_capture(g, &s, legal[0]));
    char buf[16];
    engine_format_action(g, &s, legal[0], buf, sizeof buf);
    cr_assert_str_eq(buf, "12x22");
    g->init(&s);
    g->legal_actions(&s, legal);
    cr_assert_not(engine_is_capture(g, &s, legal[0]));
    engine_format_action(g, &s, legal[0], buf, sizeof buf);
    cr_assert(strchr(buf, '-'), "%s", buf);
    engine_destroy(&e);
}

Test(engine, legal_apply_and_analyse_answer_json)
{
    engine *e = s_uniform(NULL);
    engine_reply r;
    double v;
    char s[128];
    s_req(e, "GET", "info", &r, NULL);
    cr_assert_eq(r.code, 200);
    cr_assert(json_valid(r.body), "%s", r.body);
    cr_assert(json_number(r.body, "height", &v) && v == 5);
    cr_assert(json_string(r.body, "players.1", s, sizeof s) && !strcmp(s, "white"));
    cr_assert(json_number(r.body, "sims", &v) && v == 32);
    cr_assert(json_number(r.body, "max_sims", &v) && v == 400);
    engine_reply_free(&r);

    s_req(e, "GET", "legal", &r, "moves", "", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(json_valid(r.body), "%s", r.body);
    cr_assert(json_string(r.body, "position", s, sizeof s) && !strcmp(s, KH_START), "%s", s);
    cr_assert(json_string(r.body, "to_move", s, sizeof s) && !strcmp(s, "black"));
    cr_assert(strstr(r.body, "\"result\": null"));
    cr_assert(json_string(r.body, "legal.0.action", s, sizeof s), "%s", r.body);
    engine_reply_free(&r);

    /* 8-12, then white must take it: 16x8 (a capture, written with x). */
    s_req(e, "GET", "apply", &r, "moves", "8-12", "action", "16-8", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(json_valid(r.body));
    cr_assert(json_string(r.body, "moves.1.action", s, sizeof s) && !strcmp(s, "16x8"), "%s", s);
    cr_assert(json_number(r.body, "moves.1.capture", &v) && v == 1);
    cr_assert(json_string(r.body, "moves.1.mover", s, sizeof s) && !strcmp(s, "white"));
    cr_assert(json_string(r.body, "positions.0", s, sizeof s) && !strcmp(s, KH_START));
    cr_assert(json_string(r.body, "positions.2", s, sizeof s));
    engine_reply_free(&r);

    s_req(e, "GET", "analyse", &r, "moves", "8-12,16x8", "sims", "64", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(json_valid(r.body), "%s", r.body);
    cr_assert(json_number(r.body, "analysis.sims", &v) && v == 64);
    cr_assert(json_number(r.body, "analysis.value", &v) && v >= -1 && v <= 1);
    char best[16], top[16];
    cr_assert(json_string(r.body, "analysis.best", best, sizeof best));
    cr_assert(json_string(r.body, "analysis.top.0.action", top, sizeof top));
    cr_assert_str_eq(best, top, "the best is the most visited");
    double share0, share1;
    cr_assert(json_number(r.body, "analysis.top.0.share", &share0));
    if (json_number(r.body, "analysis.top.1.share", &share1))
        cr_assert(share1 <= share0);
    engine_reply_free(&r);
    engine_destroy(&e);
}

Test(engine, bad_requests_get_one_line_and_the_right_code)
{
    engine *e = s_uniform(NULL);
    engine_reply r;
    s_req(e, "GET", "apply", &r, "action", "7-13", NULL);
    s_assert_line(&r, 400, "illegal action '7-13'; legal here: 6-12 7-12 8-12", "illegal");
    s_req(e, "GET", "apply", &r, "action", "x", NULL);
    s_assert_line(&r, 400, "cannot read action 'x'", "unreadable");
    s_req(e, "GET", "apply", &r, NULL);
    s_assert_line(&r, 400, "give the action", "no action");
    s_req(e, "GET", "legal", &r, "moves", "8-12,7-13", NULL);
    s_assert_line(&r, 400, "(move 2)", "illegal move 2");
    s_req(e, "GET", "legal", &r, "moves", "8-12,", NULL);
    s_assert_line(&r, 400, "", "trailing comma");
    s_req(e, "GET", "legal", &r, "moves", ",8-12", NULL);
    s_assert_line(&r, 400, "empty", "empty action");
    s_req(e, "GET", "legal", &r, "position", "bbb", NULL);
    s_assert_line(&r, 400, "position: ", "bad position");
    s_req(e, "GET", "legal", &r, "colour", "red", NULL);
    s_assert_line(&r, 400, "unknown argument 'colour'", "unknown argument");
    s_req(e, "GET", "legal", &r, "moves", "8-12", "moves", "8-12", NULL);
    s_assert_line(&r, 400, "twice", "twice");
    s_req(e, "GET", "analyse", &r, "sims", "0", NULL);
    s_assert_line(&r, 400, "sims must be a whole number from 1 to 400", "sims 0");
    s_req(e, "GET", "analyse", &r, "sims", "401", NULL);
    s_assert_line(&r, 400, "sims", "sims above the most");
    s_req(e, "GET", "analyse", &r, "position", "............w............ b", NULL);
    s_assert_line(&r, 400, "the game is over", "analyse after the end");
    s_req(e, "GET", "apply", &r, "position", "............w............ b", "action", "12-17",
          NULL);
    s_assert_line(&r, 400, "already over", "apply after the end");
    s_req(e, "GET", "nothing", &r, NULL);
    s_assert_line(&r, 404, "/api/info", "unknown endpoint");
    s_req(e, "POST", "legal", &r, NULL);
    s_assert_line(&r, 405, "GET", "POST legal");
    s_req(e, "GET", "save", &r, NULL);
    s_assert_line(&r, 405, "POST", "GET save");
    s_req(e, "POST", "save", &r, NULL);
    s_assert_line(&r, 503, "not saved here", "no record file");
    /* No engine at all: the rules still answer, the search does not. */
    engine_request(NULL, game_default(), "GET", "analyse", NULL, &r);
    s_assert_line(&r, 503, "no engine", "analyse without an engine");
    engine_request(NULL, game_default(), "GET", "legal", NULL, &r);
    cr_assert_eq(r.code, 200);
    engine_reply_free(&r);
    /* Too many arguments. */
    engine_args a = {0};
    for (int i = 0; i < ENGINE_MAX_ARGS + 3; i++)
        engine_args_add(&a, "moves", "");
    engine_request(e, game_default(), "GET", "legal", &a, &r);
    s_assert_line(&r, 400, "too many arguments", "too many");
    engine_destroy(&e);
}

/* A random string of printable and unprintable bytes (NUL-terminated). */
static void s_junk(rng_t *rng, char *buf, size_t cap)
{
    static const char alphabet[] = "0123456789-x,. bBwW\x01\xff\"\\";
    size_t n = rng_below(rng, (uint32_t)cap - 1);
    for (size_t i = 0; i < n; i++)
        buf[i] = rng_below(rng, 4) ? alphabet[rng_below(rng, sizeof alphabet - 1)]
                                   : (char)(1 + rng_below(rng, 255));
    buf[n] = 0;
}

Test(engine, junk_never_crashes_and_is_answered)
{
    engine *e = s_uniform(NULL);
    rng_t rng;
    rng_seed(&rng, 11);
    static const char *const names[] = {"legal", "apply", "analyse", "info", "save"};
    static const char *const keys[] = {"position", "moves", "action", "sims", "engine", "id"};
    char v[6][120];
    for (int t = 0; t < 3000; t++) {
        engine_args a = {0};
        int n = (int)rng_below(&rng, 5);
        for (int i = 0; i < n; i++) {
            s_junk(&rng, v[i], sizeof v[i]);
            engine_args_add(&a, keys[rng_below(&rng, 6)], v[i]);
        }
        engine_reply r;
        const char *name = names[rng_below(&rng, 5)];
        engine_request(e, game_default(), !strcmp(name, "save") ? "POST" : "GET", name, &a, &r);
        cr_assert(r.code == 200 || r.code == 400 || r.code == 503, "%s: %d %s", name, r.code,
                  r.body);
        if (r.code != 200)
            cr_assert(r.body[r.len - 1] == '\n' && !memchr(r.body, '\n', r.len - 1));
        engine_reply_free(&r);
    }
    engine_destroy(&e);
}

Test(engine, a_finished_game_is_saved_once_as_a_valid_record)
{
    char *dir = harness_tmpdir("engine-save");
    char path[300];
    snprintf(path, sizeof path, "%s/play.kzr", dir);
    engine *e = s_uniform(path);
    const game_def *g = game_default();
    /* A random game to its end, as the page would send it. */
    rng_t rng;
    rng_seed(&rng, 5);
    game_state s;
    g->init(&s);
    char moves[8192] = "";
    int n = 0;
    while (!g->result(&s).over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int k = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)k)];
        char buf[16];
        g->format_action(a, buf, sizeof buf);
        snprintf(moves + strlen(moves), sizeof moves - strlen(moves), "%s%s", n ? "," : "", buf);
        g->apply(&s, a);
        n++;
    }
    const char *id = "00112233445566778899aabbccddeeff";
    engine_reply r;
    s_req(e, "POST", "save", &r, "moves", moves, "engine", "white", "id", id, "sims", "32", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    double v;
    cr_assert(json_number(r.body, "index", &v) && v == 1, "%s", r.body);
    cr_assert(strstr(r.body, "\"again\": false"));
    engine_reply_free(&r);
    /* The same id again: the earlier save. */
    s_req(e, "POST", "save", &r, "moves", moves, "engine", "white", "id", id, NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(json_number(r.body, "index", &v) && v == 1);
    cr_assert(strstr(r.body, "\"again\": true"));
    engine_reply_free(&r);
    /* Not over, bad id, bad colour. */
    s_req(e, "POST", "save", &r, "moves", "8-12", "engine", "white", "id", id, NULL);
    s_assert_line(&r, 400, "not over", "unfinished");
    s_req(e, "POST", "save", &r, "moves", moves, "engine", "white", "id", "123", NULL);
    s_assert_line(&r, 400, "id must be 32 hex digits", "short id");
    s_req(e, "POST", "save", &r, "moves", moves, "engine", "red", "id", id, NULL);
    s_assert_line(&r, 400, "engine must be black or white", "colour");
    engine_destroy(&e);
    /* One record: valid, the engine white (side A), the person "human". */
    record_file *f;
    char err[200];
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    game_record *rec = record_new();
    cr_assert_eq(record_file_read(f, rec, err, sizeof err), 0, "%s", err);
    cr_assert_eq(record_file_read(f, rec, err, sizeof err), KZ_ENOTFOUND, "saved once");
    record_file_close(&f);
    cr_assert_eq(rec->n_moves, n);
    cr_assert_eq(rec->kind, RECORD_EVAL);
    cr_assert_eq(rec->candidate_player, 1);
    cr_assert_str_eq(rec->opponent_player, "human");
    cr_assert_str_eq(rec->model_player, "uniform");
    cr_assert_eq(rec->settings.simulations, 32);
    cr_assert_eq(record_validate(g, rec, err, sizeof err), 0, "%s", err);
    record_destroy(&rec);
    harness_rm_rf(dir);
    free(dir);
}

Test(engine, stored_games_as_json)
{
    const game_def *g = game_default();
    game_record *r = record_new();
    snprintf(r->game, sizeof r->game, "%s", g->name);
    r->kind = RECORD_ARENA;
    r->model_version = 3;
    r->opponent_version = 2;
    r->candidate_player = 1;
    snprintf(r->worker_id, sizeof r->worker_id, "w\"1\x01");
    game_state s;
    g->init(&s);
    rng_t rng;
    rng_seed(&rng, 9);
    while (!g->result(&s).over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int k = g->legal_actions(&s, legal);
        int a = legal[rng_below(&rng, (uint32_t)k)];
        float share = 1.0f;
        uint16_t played = (uint16_t)a;
        cr_assert_eq(record_add_move(r, a, k == 1, 0.25f, 1, &played, &share), 0);
        g->apply(&s, a);
    }
    game_result res = g->result(&s);
    r->winner = res.winner;
    r->reason = res.reason;
    r->plies = (uint32_t)g->ply(&s);
    char err[200];
    char *one = engine_json_game(g, r, 42, err, sizeof err);
    cr_assert_not_null(one, "%s", err);
    cr_assert(json_valid(one), "%s", one);
    double v;
    char t[64];
    cr_assert(json_number(one, "seq", &v) && v == 42);
    cr_assert(json_string(one, "kind", t, sizeof t) && !strcmp(t, "arena"));
    cr_assert(json_string(one, "a", t, sizeof t) && !strcmp(t, "v3"));
    cr_assert(json_string(one, "b", t, sizeof t) && !strcmp(t, "v2"));
    cr_assert(json_number(one, "moves.0.value", &v) && v == 0.25);
    cr_assert(strstr(one, "\"worker\": \"w\\\"1\\u0001\""), "escaped: %.400s", one);
    free(one);
    /* The filter. */
    engine_games_filter f;
    engine_args a = {0};
    engine_args_add(&a, "model", "2");
    cr_assert_eq(engine_games_filter_parse(g, &a, &f, err, sizeof err), 0, "%s", err);
    cr_assert(engine_games_match(&f, r), "an arena's opponent counts");
    f.kind[0] = 0;
    snprintf(f.kind, sizeof f.kind, "selfplay");
    cr_assert_not(engine_games_match(&f, r));
    /* A broken record: NULL with the reason. */
    r->moves[0].action = 0;
    cr_assert_null(engine_json_game(g, r, 1, err, sizeof err));
    cr_assert(err[0]);
    record_destroy(&r);
}

/* Answers METHOD /api/NAME of game g with "k=v" pairs (NULL-terminated). */
static void s_req_g(engine *e, const game_def *g, const char *method, const char *name,
                    engine_reply *r, ...)
{
    engine_args a = {0};
    va_list ap;
    va_start(ap, r);
    for (const char *k; (k = va_arg(ap, const char *)) != NULL;)
        engine_args_add(&a, k, va_arg(ap, const char *));
    va_end(ap);
    engine_request(e, g, method, name, &a, r);
    cr_assert_not_null(r->body);
}

/* The roll the dice of seed give at the first chance state from s, as text. */
static void s_first_roll(const game_def *g, const game_state *s, uint64_t seed, char *buf,
                         size_t len)
{
    rng_t dice;
    game_dice_seed(&dice, seed);
    g->format_action(game_chance_draw(g, s, &dice), buf, len);
}

/* Backgammon's dice on the API (engine.h, "Dice"): rolled by the server from
 * the game's seed, appended to the moves as nature's ("chance"), checked
 * when sent back, and kept in the saved record so that it validates. */
Test(engine, backgammon_s_dice_are_the_server_s_rolled_from_the_seed)
{
    const game_def *g = &backgammon_game;
    char *dir = harness_tmpdir("engine-dice");
    char path[300], err[300], want[160], roll[8];
    snprintf(path, sizeof path, "%s/play.kzr", dir);
    engine_config c;
    engine_config_default(&c);
    c.model = "uniform";
    c.sims = 8;
    c.records = path;
    engine *e = engine_new(g, &c, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    game_state s;
    g->init(&s);
    s_first_roll(g, &s, 0x2b, roll, sizeof roll);
    /* Step 1. The opening roll is the seed's, never a legal action. */
    engine_reply r;
    s_req_g(e, g, "GET", "legal", &r, "seed", "2b", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"seed\": \"000000000000002b\""), "%s", r.body);
    snprintf(want, sizeof want, "{\"action\": \"%s\", \"capture\": false, \"chance\": true", roll);
    cr_assert(strstr(r.body, want), "%s lacks %s", r.body, want);
    cr_assert(strstr(r.body, "\"legal\": [{\"action\": \""), "%s", r.body);
    cr_assert_null(strstr(strstr(r.body, "\"legal\""), "chance"), "%s", r.body);
    engine_reply_free(&r);
    /* Step 2. Other dice than the seed's, a bad seed: refused; no seed: a new one. */
    s_req_g(e, g, "GET", "legal", &r, "seed", "2b", "moves", strcmp(roll, "61") ? "61" : "62",
            NULL);
    s_assert_line(&r, 400, "are not the game's: its seed rolls", "other dice");
    s_req_g(e, g, "GET", "legal", &r, "seed", "xyz", NULL);
    s_assert_line(&r, 400, "seed must be 1 to 16 hex digits", "bad seed");
    s_req_g(e, g, "GET", "legal", &r, "seed", "12345678901234567", NULL);
    s_assert_line(&r, 400, "seed must be", "long seed");
    s_req_g(e, g, "GET", "legal", &r, NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"seed\": \""), "%s", r.body);
    engine_reply_free(&r);
    /* Step 3. A last checker each (white on roll): the server rolls, white
     * bears off and wins; the game saves with its seed and validates. */
    uint8_t own[25] = {1}, opp[25] = {1};
    char id[16], pos[40];
    backgammon_position_id(own, opp, id);
    snprintf(pos, sizeof pos, "%s w", id);
    cr_assert_eq(g->parse_position(&s, pos, err, sizeof err), 0, "%s", err);
    s_first_roll(g, &s, 5, roll, sizeof roll);
    s_req_g(e, g, "GET", "legal", &r, "position", pos, "seed", "5", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    const char *l = strstr(r.body, "\"legal\": [{\"action\": \"");
    cr_assert_not_null(l, "%s", r.body);
    char off[16] = "";
    sscanf(l + strlen("\"legal\": [{\"action\": \""), "%15[^\"]", off);
    cr_assert(!strncmp(off, "1/off", 5), "%s", off);
    engine_reply_free(&r);
    char moves[40];
    snprintf(moves, sizeof moves, "%s,%s", roll, off);
    s_req_g(e, g, "GET", "legal", &r, "position", pos, "seed", "5", "moves", moves, NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"winner\": \"white\""), "%s", r.body);
    engine_reply_free(&r);
    const char *gid = "00112233445566778899aabbccddeeff";
    s_req_g(e, g, "POST", "save", &r, "position", pos, "moves", moves, "seed", "6", "engine",
            "black", "id", gid, NULL);
    cr_assert_eq(r.code, 400, "another seed's dice are refused: %s", r.body);
    engine_reply_free(&r);
    s_req_g(e, g, "POST", "save", &r, "position", pos, "moves", moves, "seed", "5", "engine",
            "black", "id", gid, NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    engine_reply_free(&r);
    engine_destroy(&e);
    record_file *f;
    cr_assert_eq(record_file_open(path, &f, err, sizeof err), 0, "%s", err);
    game_record *rec = record_new();
    cr_assert_eq(record_file_read(f, rec, err, sizeof err), 0, "%s", err);
    record_file_close(&f);
    cr_assert_eq(rec->seed, 5);
    cr_assert_eq(rec->n_moves, 2);
    cr_assert_eq(record_validate(g, rec, err, sizeof err), 0, "%s", err);
    rec->seed = 6;
    cr_assert_neq(record_validate(g, rec, err, sizeof err), 0, "the dice follow from the seed");
    record_destroy(&rec);
    harness_rm_rf(dir);
    free(dir);
}

/* The endgame tables (engine_config.tb, tb_dir): a position they cover is
 * answered by them, without a search: their best action (the one that keeps
 * the value where only one does), the exact value, each action's exact
 * result as q; the same engine without them misses some (so the test can
 * tell). A forced state inside them has its exact value; tables for
 * another game, a missing directory and an empty one are refused in one
 * line naming it. */
Test(engine, the_endgame_tables_answer_the_positions_they_cover, .timeout = 600)
{
    char *dir = harness_tmpdir("engine-tb");
    cr_assert_not_null(dir);
    tb_build_opts bo = {.pieces = 3, .threads = 1};
    char err[600];
    cr_assert_eq(tb_build(dir, &bo, err, sizeof err), 0, "tb_build: %s", err);
    tb_set *t = tb_open(dir, 0, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    const game_def *g = game_default();
    engine_config c;
    engine_config_default(&c);
    c.model = "uniform";
    c.sims = 2;
    engine *plain = engine_new(g, &c, err, sizeof err);
    cr_assert_not_null(plain, "%s", err);
    c.tb_dir = dir; /* opened by the engine */
    engine *opened = engine_new(g, &c, err, sizeof err);
    cr_assert_not_null(opened, "%s", err);
    cr_assert_eq(engine_tb_pieces(opened), 3);
    cr_assert_eq(engine_tb_pieces(plain), 0);
    c.tb_dir = NULL;
    c.tb = t; /* borrowed */
    engine *e = engine_new(g, &c, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    c.model = NULL;
    c.spec = "random"; /* a player spec answers from them too */
    engine *spec = engine_new(g, &c, err, sizeof err);
    cr_assert_not_null(spec, "%s", err);
    c.model = "uniform";
    c.spec = NULL;
    enum { N = 30 };
    static game_state ts[N];
    static uint16_t keep[N];
    cr_assert_eq(tb_test_positions(t, N, 7, ts, keep), N);
    engine_analysis *an = malloc(sizeof *an);
    int missed = 0;
    for (int i = 0; i < N; i++) {
        char pos[64];
        g->format_position(&ts[i], pos, sizeof pos);
        for (int k = 2; k >= 0; k--) {
            cr_assert_eq(engine_analyse(k == 2 ? spec : k ? opened : e, &ts[i], 0, 1, an), 0);
            cr_assert(an->tables, "%s", pos);
            cr_assert_eq(an->info.action, keep[i], "%s: %d, not the keeping %d", pos,
                         an->info.action, keep[i]);
            cr_assert_eq(an->info.work, 0, "%s: no search", pos);
        }
        int wdl;
        cr_assert_eq(tb_probe_wdl(t, &ts[i], &wdl), 0);
        cr_assert_float_eq(an->info.value, (double)wdl, 1e-9, "%s: %f", pos, an->info.value);
        tb_action_value av[GAME_MAX_LEGAL];
        int n = tb_action_values(t, &ts[i], av);
        cr_assert_eq(n, an->info.n);
        for (int j = 0; j < n; j++) {
            cr_assert_eq(an->info.actions[j], av[j].action);
            cr_assert_float_eq(an->info.q[j], (float)av[j].wdl, 1e-9);
            cr_assert(isnan(an->info.prior[j]));
        }
        cr_assert_eq(an->info.actions[an->order[0]], keep[i]);
        for (int j = 1; j + 1 < n; j++) /* then the better results first */
            cr_assert_geq(an->info.q[an->order[j]], an->info.q[an->order[j + 1]], "%s", pos);
        cr_assert_eq(engine_analyse(plain, &ts[i], 0, 1, an), 0);
        cr_assert_not(an->tables);
        missed += an->info.action != keep[i];
    }
    cr_assert_gt(missed, 0, "without the tables mcts:uniform:2 found all %d: no test", N);
    /* A forced capture that ends the game, and one inside the tables. */
    game_state s;
    cr_assert_eq(g->parse_position(&s, "............b....w....... b", err, sizeof err), 0);
    cr_assert_eq(engine_analyse(e, &s, 0, 1, an), 0);
    cr_assert(an->forced && an->tables);
    cr_assert_float_eq(an->info.value, 1.0, 1e-9);
    /* The JSON says so. */
    engine_reply r;
    s_req(e, "GET", "analyse", &r, "position", "....Wb.......B........... b", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"value\": 1.000, \"best\": \"13-11\", \"forced\": false, "
                             "\"tables\": true"), "%s", r.body);
    engine_reply_free(&r);
    s_req(e, "GET", "analyse", &r, NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"tables\": false"), "the start is not in them: %s", r.body);
    engine_reply_free(&r);
    s_req(e, "GET", "info", &r, NULL);
    cr_assert(strstr(r.body, "\"tables\": 3"), "%s", r.body);
    engine_reply_free(&r);
    s_req(plain, "GET", "info", &r, NULL);
    cr_assert(strstr(r.body, "\"tables\": 0"), "%s", r.body);
    engine_reply_free(&r);
    free(an);
    engine_destroy(&e);
    engine_destroy(&opened);
    engine_destroy(&plain);
    engine_destroy(&spec);

    /* Refused: another game's engine, no directory, no tables in it. */
    c.tb = NULL;
    c.tb_dir = dir;
    cr_assert_null(engine_new(game_find("alquerque"), &c, err, sizeof err));
    cr_assert(strstr(err, "tb_dir: the endgame tables are khreibaga's, not alquerque's"), "%s",
              err);
    c.tb = t;
    cr_assert_null(engine_new(game_find("alquerque"), &c, err, sizeof err));
    c.tb = NULL;
    char missing[700], empty[700];
    snprintf(missing, sizeof missing, "%s/none", dir);
    c.tb_dir = missing;
    cr_assert_null(engine_new(g, &c, err, sizeof err));
    cr_assert(strstr(err, missing) && !strchr(err, '\n'), "%s", err);
    snprintf(empty, sizeof empty, "%s/empty", dir);
    cr_assert_eq(mkdir(empty, 0700), 0);
    c.tb_dir = empty;
    c.spec = "alphabeta:1";
    c.model = NULL;
    cr_assert_null(engine_new(g, &c, err, sizeof err));
    cr_assert(strstr(err, "no endgame tables") && strstr(err, empty), "%s", err);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}
