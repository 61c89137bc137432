/* games: the worker's games in play over batched searches. See worker.h.
 *
 * Engines. An engine is one mcts_batch of G trees for one (network, kind,
 * simulations): self-play trees carry root noise, arena trees none. Game
 * slot i uses tree i of each engine it plays with: one engine for a
 * self-play game, one per colour for an arena game. games_step steps every
 * engine that has searching trees (one network batch each), then settles
 * every slot: plays the moves whose search is complete, records them, and
 * finishes games.
 *
 * Arena games and tree reuse. Each colour's tree follows the game lazily: it
 * is advanced only when its player is to move, through the actions played
 * since its root (its own last action, then the opponent's), so that the
 * subtree it searched is reused and a dormant tree (status DONE) costs no
 * search. Inside a capture sequence the mover's tree is advanced at once.
 *
 * Playout cap randomization (self-play, pcr_full_fraction < 1). Before each
 * move's search begins (the tree's reset or advance) a draw from the slot's
 * generator decides: a full search (the engine's simulations, root noise,
 * sampled opening moves) with probability pcr_full_fraction, else a fast
 * one (pcr_fast_simulations, no noise, the most visited played), recorded
 * with fast_search (no policy target). With the fraction at 1 nothing is
 * drawn, so games are exactly those of before.
 *
 * Baseline sides (rating games). A side without a network is a player of
 * player.h, made for the game and freed with it; when it is to move it
 * chooses at once in s_settle, and its move is recorded with the chosen
 * action as the whole distribution and a root value of 0. */
#include <stdlib.h>
#include <string.h>

#include "selfplay.h"
#include "util.h"
#include "worker.h"

#define GAMES_MAX_ENGINES 8 /* engines alive at once */
#define LAG_MAX 64          /* actions a dormant tree may lag behind */

enum { PURPOSE_SELFPLAY = 0, PURPOSE_ARENA = 1 };

/* One batched search over one network. */
typedef struct engine {
    wnet *net;            /* the network (a reference is held) */
    int purpose;          /* PURPOSE_* */
    int simulations;      /* per move */
    mcts_batch *b;        /* G trees */
    int users;            /* trees in use */
} engine;

/* One game in play. */
typedef struct slot {
    bool busy;                 /* a game is in play */
    engine *eng[2];            /* engine of each player (equal in self-play), NULL for a
                                  side played by a baseline player */
    player *base[2];           /* baseline player of each side, NULL for a network */
    bool tree_on[2];           /* the player's tree has a position */
    uint16_t lag[2][LAG_MAX];  /* actions played since the tree's root */
    int n_lag[2];              /* entries of lag */
    uint64_t seed;             /* the game's seed */
    rng_t rng;                 /* move sampling */
    int temperature_plies;     /* sample while the turn count is below this */
    bool pcr;                  /* self-play with playout cap randomization */
    bool fast;                 /* the move being searched has a fast search (PCR) */
    bool tb;                   /* the endgame tables play this game to its end */
    uint32_t arena_slot;       /* arena: the coordinator's slot */
    game_state state;          /* the game's position */
    game_record *rec;          /* the record so far */
} slot;

struct games {
    const game_def *g;         /* the game */
    worker_config cfg;         /* settings (search part used) */
    char worker_id[64];        /* recorded in every game */
    int G;                     /* slots */
    slot *slots;               /* (G) */
    engine *engines[GAMES_MAX_ENGINES]; /* NULL = free entry */
    uint64_t seed;             /* base seed */
    const tb_set *tb;          /* endgame tables (borrowed), or NULL */
    bool stopping;             /* games_stop was called */
    bool forge_visits;         /* setting forge = visits (tests): doctored visit shares */
    int busy;                  /* slots in use */
    games_stats st;            /* counters (search counters of dead engines folded in) */
};

static void s_settings_of(const worker_config *cfg, int purpose, int sims, mcts_settings *s)
{
    *s = cfg->play.search;
    s->simulations = sims;
    if (purpose == PURPOSE_ARENA) {
        /* No root noise; a few sampled turns for varied games; forced playouts
         * serve the training target, so arena games play without them. */
        s->dirichlet_epsilon = 0.0f;
        s->temperature_plies = (int)cfg->arena_temperature_plies;
        s->forced_playouts_k = 0.0f;
        s->policy_pruning = false;
    }
    /* Gumbel noise in self-play; arena games get it only in their first
     * arena_temperature_plies turns (temperature_plies above), for variety. */
    s->gumbel_noise = purpose != PURPOSE_ARENA;
}

static void s_settings(const games *gm, int purpose, int sims, mcts_settings *s)
{
    s_settings_of(&gm->cfg, purpose, sims, s);
}

int games_check_settings(const worker_config *cfg, char *err, size_t errlen)
{
    mcts_settings s;
    for (int purpose = PURPOSE_SELFPLAY; purpose <= PURPOSE_ARENA; purpose++) {
        s_settings_of(cfg, purpose, 200, &s);
        if (mcts_settings_check(&s, err, errlen))
            return KZ_EINVAL;
    }
    return 0;
}

games *games_new(const game_def *g, const worker_config *cfg, const char *worker_id,
                 uint64_t seed, char *err, size_t errlen)
{
    games *gm = xcalloc(1, sizeof *gm);
    gm->g = g;
    gm->cfg = *cfg;
    gm->G = cfg->play.parallel;
    gm->seed = seed;
    gm->forge_visits = !strcmp(cfg->forge, "visits");
    snprintf(gm->worker_id, sizeof gm->worker_id, "%s", worker_id ? worker_id : "");
    mcts_settings s;
    s_settings(gm, PURPOSE_SELFPLAY, 200, &s);
    if (mcts_settings_check(&s, err, errlen)) {
        free(gm);
        return NULL;
    }
    gm->slots = xcalloc((size_t)gm->G, sizeof *gm->slots);
    for (int i = 0; i < gm->G; i++) {
        gm->slots[i].rec = record_new();
        if (!gm->slots[i].rec) {
            snprintf(err, errlen, "out of memory");
            games_destroy(&gm);
            return NULL;
        }
    }
    return gm;
}

void games_set_tablebase(games *gm, const tb_set *t) { gm->tb = t; }

/* Folds an engine's search counters into the totals and frees it. */
static void s_engine_free(games *gm, int k)
{
    engine *e = gm->engines[k];
    const mcts_stats *ms = mcts_batch_stats(e->b);
    gm->st.simulations += ms->simulations;
    gm->st.evaluated += ms->evaluated;
    gm->st.eval_calls += ms->evaluator_calls;
    gm->st.eval_seconds += ms->eval_seconds;
    mcts_batch_destroy(&e->b);
    e->net->refs--;
    free(e);
    gm->engines[k] = NULL;
}

void games_destroy(games **pgm)
{
    if (!pgm || !*pgm)
        return;
    games *gm = *pgm;
    for (int k = 0; k < GAMES_MAX_ENGINES; k++)
        if (gm->engines[k])
            s_engine_free(gm, k);
    if (gm->slots)
        for (int i = 0; i < gm->G; i++)
            record_destroy(&gm->slots[i].rec);
    free(gm->slots);
    free(gm);
    *pgm = NULL;
}

/* The engine for (net, purpose, sims), made if needed; NULL when none can be. */
static engine *s_engine_get(games *gm, wnet *net, int purpose, int sims, char *err,
                            size_t errlen)
{
    int free_k = -1;
    for (int k = 0; k < GAMES_MAX_ENGINES; k++) {
        engine *e = gm->engines[k];
        if (e && e->net == net && e->purpose == purpose && e->simulations == sims)
            return e;
        if (!e && free_k < 0)
            free_k = k;
    }
    if (free_k < 0) { /* drop an idle engine to make room */
        for (int k = 0; k < GAMES_MAX_ENGINES && free_k < 0; k++)
            if (gm->engines[k]->users == 0) {
                s_engine_free(gm, k);
                free_k = k;
            }
    }
    if (free_k < 0) {
        snprintf(err, errlen, "too many searches at once (%d)", GAMES_MAX_ENGINES);
        return NULL;
    }
    mcts_settings s;
    s_settings(gm, purpose, sims, &s);
    if (mcts_settings_check(&s, err, errlen))
        return NULL;
    engine *e = xcalloc(1, sizeof *e);
    e->b = mcts_batch_new(gm->g, &s, gm->G, net->ev);
    if (!e->b) {
        free(e);
        snprintf(err, errlen, "out of memory for a search of %d trees", gm->G);
        return NULL;
    }
    if (purpose == PURPOSE_SELFPLAY && gm->tb && gm->cfg.play.tb_search)
        mcts_batch_set_tablebase(e->b, gm->tb);
    e->net = net;
    e->purpose = purpose;
    e->simulations = sims;
    net->refs++;
    gm->engines[free_k] = e;
    return e;
}

/* Engines nobody uses go, except those of a pinned (self-play) network. */
static void s_engines_collect(games *gm)
{
    for (int k = 0; k < GAMES_MAX_ENGINES; k++) {
        engine *e = gm->engines[k];
        if (e && e->users == 0 && !e->net->pinned)
            s_engine_free(gm, k);
    }
}

int games_start(games *gm, const game_spec *spec, char *err, size_t errlen)
{
    KZ_CHECK(!gm->stopping);
    int i = 0;
    while (i < gm->G && gm->slots[i].busy)
        i++;
    KZ_CHECK(i < gm->G);
    int purpose = spec->kind == RECORD_SELFPLAY ? PURPOSE_SELFPLAY : PURPOSE_ARENA;
    slot *sl = &gm->slots[i];
    /* Step 1. Each side: a baseline player, or an engine (one for both sides
     * when they play the same network in self-play). */
    engine *e[2] = {NULL, NULL};
    player *base[2] = {NULL, NULL};
    int rc = 0;
    for (int p = 0; p < 2 && rc == 0; p++) {
        if (!spec->net[p]) {
            const char *b = spec->baseline[p] ? spec->baseline[p] : "";
            char perr[200];
            base[p] = player_from_spec(gm->g, b, perr, sizeof perr);
            if (!base[p]) {
                snprintf(err, errlen, "baseline player '%s': %s", b, perr);
                rc = KZ_EINVAL;
            }
        } else if (p == 1 && spec->net[1] == spec->net[0] && e[0]) {
            e[1] = e[0];
        } else {
            e[p] = s_engine_get(gm, spec->net[p], purpose, spec->simulations, err, errlen);
            if (!e[p])
                rc = KZ_ENOMEM;
            else
                e[p]->users++; /* held while the other side is made */
        }
    }
    if (rc) {
        for (int p = 0; p < 2; p++) {
            player_destroy(&base[p]);
            if (e[p] && (p == 0 || e[1] != e[0]))
                e[p]->users--;
        }
        return rc;
    }
    sl->busy = true;
    for (int p = 0; p < 2; p++) {
        sl->eng[p] = e[p];
        sl->base[p] = base[p];
    }
    sl->tree_on[0] = sl->tree_on[1] = false;
    sl->n_lag[0] = sl->n_lag[1] = 0;
    sl->seed = mix64(gm->seed + gm->st.started);
    rng_seed(&sl->rng, sl->seed);
    sl->arena_slot = spec->arena_slot;
    mcts_settings s0;
    s_settings(gm, purpose, spec->simulations, &s0);
    const mcts_settings *s = e[0] ? mcts_batch_settings(e[0]->b)
                             : e[1] ? mcts_batch_settings(e[1]->b) : &s0;
    sl->temperature_plies = s->temperature_plies;
    sl->pcr = purpose == PURPOSE_SELFPLAY && gm->cfg.play.pcr_full_fraction < 1;
    sl->fast = false;
    sl->tb = false;
    for (int p = 0; p < 2; p++)
        if (sl->base[p])
            player_new_game(sl->base[p], mix64(sl->seed ^ (uint64_t)(p + 11)));
    /* Step 2. The position and the record. */
    game_record *r = sl->rec;
    record_clear(r);
    const char *start = spec->start_position ? spec->start_position : "";
    rc = 0;
    if (start[0]) {
        char perr[128];
        if (strlen(start) >= sizeof r->start_position ||
            gm->g->parse_position(&sl->state, start, perr, sizeof perr) ||
            gm->g->result(&sl->state).over) { /* nothing to play from a finished game */
            snprintf(err, errlen, "start position '%.80s' unusable", start);
            rc = KZ_EINVAL;
        }
    } else {
        gm->g->init(&sl->state);
    }
    if (rc == 0) {
        rc = record_new_id(r);
        if (rc)
            snprintf(err, errlen, "no random game id: %s", err_str(rc));
    }
    if (rc) {
        sl->busy = false;
        for (int p = 0; p < 2; p++) {
            player_destroy(&sl->base[p]);
            if (sl->eng[p] && (p == 0 || sl->eng[1] != sl->eng[0]))
                sl->eng[p]->users--;
            sl->eng[p] = NULL;
        }
        return rc;
    }
    snprintf(r->game, sizeof r->game, "%s", gm->g->name);
    r->kind = spec->kind;
    r->model_version = spec->model_version;
    r->opponent_version = spec->kind != RECORD_SELFPLAY ? spec->opponent_version : 0;
    r->candidate_player = spec->kind != RECORD_SELFPLAY ? spec->candidate_player : 0;
    snprintf(r->start_position, sizeof r->start_position, "%s", start);
    if (spec->kind == RECORD_EVAL) {
        /* Side A is player candidate_player. */
        int a = spec->candidate_player;
        snprintf(r->model_player, sizeof r->model_player, "%s",
                 spec->net[a] ? "" : spec->baseline[a]);
        snprintf(r->opponent_player, sizeof r->opponent_player, "%s",
                 spec->net[1 - a] ? "" : spec->baseline[1 - a]);
    }
    r->settings = selfplay_record_settings(s);
    if (sl->pcr) {
        int fast = gm->cfg.play.pcr_fast_simulations;
        r->settings.fast_simulations = fast < s->simulations ? fast : s->simulations;
        r->settings.pcr_full_fraction = gm->cfg.play.pcr_full_fraction;
    }
    /* What a re-search of the game needs (recheck.h): the tables' use and the
     * networks' arithmetic (both sides' evaluators are made alike). */
    bool tables = purpose == PURPOSE_SELFPLAY && gm->tb;
    r->settings.tb_search = tables && gm->cfg.play.tb_search;
    r->settings.tb_adjudicate = tables && gm->cfg.play.tb_adjudicate;
    const wnet *net = spec->net[0] ? spec->net[0] : spec->net[1];
    snprintf(r->settings.evaluator, sizeof r->settings.evaluator, "%s",
             net ? model_eval_path(net->eval) : "");
    r->seed = sl->seed;
    r->started_ms = time_wall_ms();
    snprintf(r->worker_id, sizeof r->worker_id, "%s", gm->worker_id);
    gm->busy++;
    gm->st.started++;
    return 0;
}

/* Ends the game in slot i: clears its trees and releases its engines. */
static void s_release(games *gm, int i)
{
    slot *sl = &gm->slots[i];
    engine *e[2] = {sl->eng[0], sl->eng[1]};
    for (int p = 0; p < 2; p++) {
        player_destroy(&sl->base[p]);
        sl->eng[p] = NULL;
        if (!e[p] || (p == 1 && e[1] == e[0]))
            continue;
        mcts_batch_clear(e[p]->b, i);
        e[p]->users--;
    }
    sl->busy = false;
    gm->busy--;
}

/* Playout cap randomization: draws the budget of slot i's next search (a
 * self-play game's only tree, before its reset or advance). */
static void s_pcr_draw(games *gm, int i)
{
    slot *sl = &gm->slots[i];
    engine *e = sl->eng[0];
    sl->fast = rng_uniform(&sl->rng) >= gm->cfg.play.pcr_full_fraction;
    int fast = gm->cfg.play.pcr_fast_simulations;
    mcts_batch_set_budget(e->b, i, sl->fast && fast < e->simulations ? fast : e->simulations,
                          !sl->fast);
}

/* Brings player p's tree to the game's position: a fresh root the first
 * time (or after too long a lag), else advanced through the lag. */
static void s_catch_up(games *gm, int i, int p)
{
    slot *sl = &gm->slots[i];
    mcts_batch *b = sl->eng[p]->b;
    if (!sl->tree_on[p]) {
        if (sl->pcr)
            s_pcr_draw(gm, i);
        mcts_batch_reset(b, i, &sl->state, mix64(sl->seed ^ (uint64_t)(p + 1)));
        sl->tree_on[p] = true;
        sl->n_lag[p] = 0;
        return;
    }
    for (int k = 0; k < sl->n_lag[p]; k++)
        mcts_batch_advance(b, i, sl->lag[p][k]);
    sl->n_lag[p] = 0;
}

/* Notes that `action` was played while player p's tree did not follow. */
static void s_lag(slot *sl, int p, int action)
{
    if (!sl->tree_on[p])
        return;
    if (sl->n_lag[p] == LAG_MAX) {
        sl->tree_on[p] = false; /* too far behind: a fresh root next time */
        return;
    }
    sl->lag[p][sl->n_lag[p]++] = (uint16_t)action;
}

/* Hands the finished game in slot i to fn and frees the slot. */
static int s_finish(games *gm, int i, games_done_fn fn, void *ctx)
{
    slot *sl = &gm->slots[i];
    const game_def *g = gm->g;
    game_result res = g->result(&sl->state);
    game_record *r = sl->rec;
    r->winner = res.winner;
    r->reason = res.reason;
    r->plies = (uint32_t)g->ply(&sl->state);
    r->finished_ms = time_wall_ms();
    gm->st.finished++;
    gm->st.finished_arena += r->kind == RECORD_ARENA;
    gm->st.positions += (uint64_t)r->n_moves;
    int rc = fn ? fn(ctx, r, sl->arena_slot) : 0;
    s_release(gm, i);
    return rc;
}

/* A self-play game whose state is in the endgame tables (tb_adjudicate):
 * records their move (the exact value, no policy target) into *action.
 * 1 if it did, 0 if not, or KZ_ENOMEM. */
static int s_table_move(games *gm, slot *sl, int *action)
{
    const game_def *g = gm->g;
    int wdl;
    if (!gm->tb || !gm->cfg.play.tb_adjudicate || sl->rec->kind != RECORD_SELFPLAY ||
        tb_probe_wdl(gm->tb, &sl->state, &wdl) != 0 ||
        tb_best_action(gm->tb, &sl->state, action) != 0)
        return 0;
    uint16_t acts[GAME_MAX_LEGAL];
    bool forced = g->legal_actions(&sl->state, acts) == 1;
    uint16_t one = (uint16_t)*action;
    float share = 1;
    if (record_add_move(sl->rec, *action, forced, (float)wdl, forced, &one, &share))
        return KZ_ENOMEM;
    sl->rec->moves[sl->rec->n_moves - 1].fast_search = !forced;
    if (!sl->tb)
        gm->st.tb_games++;
    sl->tb = true;
    gm->st.tb_moves++;
    return 1;
}

/* Plays every move of slot i whose search is complete, until its mover's
 * tree searches or the game ends. */
static int s_settle(games *gm, int i, games_done_fn fn, void *ctx)
{
    slot *sl = &gm->slots[i];
    const game_def *g = gm->g;
    mcts_result res;
    while (sl->busy) {
        int p = g->to_move(&sl->state);
        engine *e = sl->eng[p];
        uint16_t acts[GAME_MAX_LEGAL];
        float shares[GAME_MAX_LEGAL];
        int n = 0, action;
        int tm = s_table_move(gm, sl, &action);
        if (tm < 0)
            return tm;
        if (tm > 0) {
            /* The tables play it out: the trees are not followed any more. */
            g->apply(&sl->state, action);
            if (g->result(&sl->state).over)
                return s_finish(gm, i, fn, ctx);
            if (gm->stopping) {
                gm->st.abandoned++;
                s_release(gm, i);
                return 0;
            }
            continue;
        }
        if (sl->base[p]) {
            /* Step 1'. A baseline player answers at once. */
            int rc = player_choose(sl->base[p], &sl->state, &action, NULL);
            if (rc)
                return rc;
            bool forced = g->legal_actions(&sl->state, acts) == 1;
            acts[0] = (uint16_t)action;
            shares[0] = 1;
            if (record_add_move(sl->rec, action, forced, 0, 1, acts, shares))
                return KZ_ENOMEM;
            goto play;
        }
        s_catch_up(gm, i, p);
        enum mcts_status st = mcts_batch_status(e->b, i);
        if (st == MCTS_SEARCHING)
            return 0;
        KZ_CHECK(st == MCTS_DONE); /* the slot's own state is not over, so neither is the tree's */
        /* Step 1. Choose and record the move. */
        mcts_batch_result(e->b, i, &res);
        bool tau_one = g->ply(&sl->state) < sl->temperature_plies && !sl->fast;
        action = mcts_result_choose(&res, tau_one, &sl->rng);
        if (res.forced) {
            acts[0] = (uint16_t)action;
            shares[0] = 1;
            n = 1;
        } else {
            /* The policy target: visits / total, pruned visits or Gumbel's pi' (mcts.h). */
            for (int k = 0; k < res.n; k++)
                if (res.target[k] > 0) {
                    acts[n] = res.actions[k];
                    shares[n] = res.target[k];
                    n++;
                }
        }
        if (n >= 2 && gm->forge_visits) { /* a test of the coordinator's check (forge) */
            float t = shares[0];
            shares[0] = shares[1];
            shares[1] = t;
        }
        if (record_add_move(sl->rec, action, res.forced, res.value, n, acts, shares))
            return KZ_ENOMEM;
        sl->rec->moves[sl->rec->n_moves - 1].fast_search = sl->fast && !res.forced;
        /* Step 2. Play it and move the trees along (a baseline side has none). */
    play:
        g->apply(&sl->state, action);
        bool over = g->result(&sl->state).over;
        if (over)
            return s_finish(gm, i, fn, ctx);
        if (sl->eng[0] == sl->eng[1]) {
            if (sl->pcr)
                s_pcr_draw(gm, i);
            if (e)
                mcts_batch_advance(e->b, i, action);
        } else if (!e) {
            s_lag(sl, 1 - p, action);
        } else {
            int q = g->to_move(&sl->state);
            if (q == p)
                mcts_batch_advance(e->b, i, action);
            else
                s_lag(sl, p, action);
            s_lag(sl, 1 - p, action);
        }
        /* Step 3. At a stop, the move in hand was the last one. */
        if (gm->stopping) {
            gm->st.abandoned++;
            s_release(gm, i);
            return 0;
        }
    }
    return 0;
}

int games_step(games *gm, games_done_fn fn, void *ctx)
{
    /* Step 1. New games may be waiting for their first move: settle first
     * so that every mover's tree is searching. */
    for (int i = 0; i < gm->G; i++) {
        int rc = s_settle(gm, i, fn, ctx);
        if (rc)
            return rc;
    }
    /* Step 2. One batched step per engine with searching trees. */
    for (int k = 0; k < GAMES_MAX_ENGINES; k++) {
        engine *e = gm->engines[k];
        if (!e || e->users == 0)
            continue;
        int rc = mcts_batch_step(e->b);
        if (rc < 0)
            return rc;
    }
    /* Step 3. Moves whose search completed. */
    for (int i = 0; i < gm->G; i++) {
        int rc = s_settle(gm, i, fn, ctx);
        if (rc)
            return rc;
    }
    s_engines_collect(gm);
    return 0;
}

void games_stop(games *gm)
{
    gm->stopping = true;
}

int games_free(const games *gm)
{
    return gm->stopping ? 0 : gm->G - gm->busy;
}

int games_in_play(const games *gm)
{
    return gm->busy;
}

size_t games_arena_slots(const games *gm, uint32_t candidate, uint32_t *out, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < gm->G && n < max; i++) {
        const slot *sl = &gm->slots[i];
        if (sl->busy && sl->rec->kind == RECORD_ARENA &&
            (!candidate || sl->rec->model_version == candidate))
            out[n++] = sl->arena_slot;
    }
    return n;
}

uint32_t games_arena_candidate(const games *gm)
{
    uint32_t c = 0;
    for (int i = 0; i < gm->G; i++) {
        const slot *sl = &gm->slots[i];
        if (sl->busy && sl->rec->kind == RECORD_ARENA && sl->rec->model_version > c)
            c = sl->rec->model_version;
    }
    return c;
}

void games_get_stats(const games *gm, games_stats *out)
{
    *out = gm->st;
    for (int k = 0; k < GAMES_MAX_ENGINES; k++) {
        const engine *e = gm->engines[k];
        if (!e)
            continue;
        const mcts_stats *ms = mcts_batch_stats(e->b);
        out->simulations += ms->simulations;
        out->evaluated += ms->evaluated;
        out->eval_calls += ms->evaluator_calls;
        out->eval_seconds += ms->eval_seconds;
    }
}
