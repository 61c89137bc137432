/* driver: G games in play over batched searches. See driver.h.
 *
 * A slot holds one game: its state, its record, its generator, the search of
 * each side (or a baseline player), and for each side whether its tree has a
 * position and the actions played since its root (the lag it catches up on
 * at its next turn). s_settle plays a slot's moves until its mover's tree
 * searches or the game ends; driver_step settles, steps the searches,
 * settles again. */
#include "play/driver.h"

#include <stdlib.h>
#include <string.h>

#include "search/player.h"
#include "common/util.h"

#define LAG_MAX 64 /* actions a dormant tree may lag behind */

#define CONFIG_STRUCT selfplay_config
const config_option selfplay_options[] = {
    CONFIG_ROW_INT32(parallel, "32", 1, 4096, "games played at once (trees in one batched search)"),
    CONFIG_ROW_DOUBLE(pcr_full_fraction, "1", 0, 1,
                      "playout cap randomization: the share of moves searched in full (policy "
                      "targets); the others get a fast search (no root noise, the most visited "
                      "played, value targets only); 1 = off (KataGo: 0.25)"),
    CONFIG_ROW_INT32(pcr_fast_simulations, "40", 1, 1000000,
                     "playout cap randomization: simulations of a fast search (at most the full "
                     "search's)"),
    CONFIG_ROW_BOOL(tb_search, "false",
                    "endgame tables (tb_dir): the search values the leaves they cover by their "
                    "exact result"),
    CONFIG_ROW_BOOL(tb_adjudicate, "false",
                    "endgame tables (tb_dir): a game that reaches them is played to its end by "
                    "their perfect play (no search; those moves value targets only)"),
};
#undef CONFIG_STRUCT
const size_t selfplay_options_n = sizeof selfplay_options / sizeof selfplay_options[0];

selfplay_config selfplay_config_default(void)
{
    /* The fields without a row: the search's defaults, 1 game, the rest 0 or NULL. */
    selfplay_config c = {.search = mcts_settings_default(), .games = 1};
    config_defaults(selfplay_options, selfplay_options_n, &c);
    return c;
}

record_settings selfplay_record_settings(const mcts_settings *s)
{
    record_settings r = {0};
    r.simulations = s->simulations;
    r.c_puct = s->c_puct;
    r.dirichlet_alpha = s->dirichlet_alpha;
    r.dirichlet_epsilon = s->dirichlet_epsilon;
    r.temperature_plies = s->temperature_plies;
    r.fpu = s->fpu;
    r.leaves_per_tree = s->leaves_per_tree;
    r.reuse_tree = s->reuse_tree;
    r.forced_playouts_k = s->forced_playouts_k;
    r.policy_pruning = s->policy_pruning;
    r.root_mode = s->root_mode;
    r.gumbel_m = s->gumbel_m;
    r.gumbel_c_visit = s->gumbel_c_visit;
    r.gumbel_c_scale = s->gumbel_c_scale;
    r.gumbel_noise = s->gumbel_noise;
    return r;
}

enum { PURPOSE_SELFPLAY = 0, PURPOSE_ARENA = 1 };

/* One batched search over one network. */
typedef struct search {
    driver_net *net;      /* the network (a hold is taken: refs) */
    int purpose;          /* PURPOSE_* */
    int simulations;      /* per move */
    mcts_batch *b;        /* G trees */
    int users;            /* trees in use */
} search;

/* One game in play. */
typedef struct slot {
    bool busy;                 /* a game is in play */
    search *eng[2];            /* search of each player (equal in self-play), NULL for a
                                  side played by a baseline player */
    player *base[2];           /* baseline player of each side, NULL for a network */
    bool tree_on[2];           /* the player's tree has a position */
    uint16_t lag[2][LAG_MAX];  /* actions played since the tree's root */
    int n_lag[2];              /* entries of lag */
    uint64_t seed;             /* the game's seed */
    rng_t rng;                 /* move sampling and PCR draws */
    rng_t dice;                /* a game with chance: its dice (game_dice_seed of seed) */
    int temperature_plies;     /* sample while the turn count is below this */
    bool pcr;                  /* self-play with playout cap randomization */
    bool fast;                 /* the move being searched has a fast search (PCR) */
    bool tb;                   /* the endgame tables play this game to its end */
    uint32_t arena_slot;       /* arena, eval: the coordinator's slot */
    game_state state;          /* the game's position */
    game_record *rec;          /* the record so far (reused between games) */
} slot;

struct driver {
    const game_def *g;         /* the game */
    driver_config cfg;         /* settings (worker_id pointing at the copy below) */
    char worker_id[sizeof ((game_record *)0)->worker_id]; /* recorded in every game */
    int G;                     /* slots */
    slot *slots;               /* (G) */
    search *searches[DRIVER_MAX_SEARCHES]; /* NULL = free entry */
    driver_next_fn next;       /* source of games, or NULL */
    void *next_ctx;            /* its context */
    bool stopping;             /* driver_stop was called */
    player_tick_fn tick;       /* given to every baseline player (driver_set_tick) */
    void *tick_ctx;
    int busy;                  /* slots in use */
    driver_stats st;           /* counters; search: of the searches already freed */
};

driver_config driver_config_default(void)
{
    return (driver_config){.play = selfplay_config_default(), .arena_temperature_plies = 4};
}

static void s_settings_of(const driver_config *cfg, int purpose, int sims, mcts_settings *s)
{
    *s = cfg->play.search;
    s->simulations = sims;
    if (purpose == PURPOSE_ARENA) {
        /* No root noise; a few sampled turns for varied games; forced playouts
         * serve the training target, so arena games play without them. Gumbel
         * noise only in the sampled turns (temperature_plies). */
        s->dirichlet_epsilon = 0.0f;
        s->temperature_plies = cfg->arena_temperature_plies;
        s->forced_playouts_k = 0.0f;
        s->policy_pruning = false;
        s->gumbel_noise = false;
    }
}

int driver_check_settings(const driver_config *cfg, char *err, size_t errlen)
{
    if (cfg->play.parallel < 1)
        return err_set(err, errlen, KZ_EINVAL, "parallel must be >= 1");
    mcts_settings s;
    char msg[200];
    for (int purpose = PURPOSE_SELFPLAY; purpose <= PURPOSE_ARENA; purpose++) {
        s_settings_of(cfg, purpose, 200, &s);
        if (mcts_settings_check(&s, msg, sizeof msg))
            return err_set(err, errlen, KZ_EINVAL, "%s", msg);
    }
    return 0;
}

driver *driver_new(const game_def *g, const driver_config *cfg, char *err, size_t errlen)
{
    if (driver_check_settings(cfg, err, errlen))
        return NULL;
    const char *wid = cfg->play.worker_id ? cfg->play.worker_id : "";
    if (strlen(wid) >= sizeof ((game_record *)0)->worker_id) {
        err_set(err, errlen, KZ_EINVAL, "worker id longer than %d characters",
                (int)sizeof ((game_record *)0)->worker_id - 1);
        return NULL;
    }
    driver *d = calloc(1, sizeof *d);
    if (!d) {
        err_set(err, errlen, KZ_ENOMEM, "out of memory");
        return NULL;
    }
    d->g = g;
    d->cfg = *cfg;
    snprintf(d->worker_id, sizeof d->worker_id, "%s", wid);
    d->cfg.play.worker_id = d->worker_id;
    d->G = cfg->play.parallel;
    d->slots = calloc((size_t)d->G, sizeof *d->slots);
    if (!d->slots)
        goto out_nomem;
    for (int i = 0; i < d->G; i++) {
        d->slots[i].rec = record_new();
        if (!d->slots[i].rec)
            goto out_nomem;
    }
    return d;
out_nomem:
    err_set(err, errlen, KZ_ENOMEM, "out of memory for %d games at once", d->G);
    driver_destroy(&d);
    return NULL;
}

/* Adds b's counters to a's (max_batch_seen: the larger). */
static void s_stats_add(mcts_stats *a, const mcts_stats *b)
{
    a->simulations += b->simulations;
    a->evaluator_calls += b->evaluator_calls;
    a->evaluated += b->evaluated;
    a->cache_hits += b->cache_hits;
    a->duplicates += b->duplicates;
    a->terminal_leaves += b->terminal_leaves;
    a->tb_leaves += b->tb_leaves;
    a->forced_nodes += b->forced_nodes;
    a->collisions += b->collisions;
    a->arena_full += b->arena_full;
    a->steps += b->steps;
    if (b->max_batch_seen > a->max_batch_seen)
        a->max_batch_seen = b->max_batch_seen;
    a->eval_seconds += b->eval_seconds;
    a->step_seconds += b->step_seconds;
}

/* Folds search k's counters into the totals, frees it, releases its network. */
static void s_search_free(driver *d, int k)
{
    search *e = d->searches[k];
    s_stats_add(&d->st.search, mcts_batch_stats(e->b));
    mcts_batch_destroy(&e->b);
    e->net->refs--;
    free(e);
    d->searches[k] = NULL;
}

void driver_destroy(driver **pd)
{
    if (!pd || !*pd)
        return;
    driver *d = *pd;
    if (d->slots)
        for (int i = 0; i < d->G; i++) {
            for (int p = 0; p < 2; p++)
                player_destroy(&d->slots[i].base[p]);
            record_destroy(&d->slots[i].rec);
        }
    for (int k = 0; k < DRIVER_MAX_SEARCHES; k++)
        if (d->searches[k])
            s_search_free(d, k);
    free(d->slots);
    free(d);
    *pd = NULL;
}

void driver_set_source(driver *d, driver_next_fn fn, void *ctx)
{
    d->next = fn;
    d->next_ctx = ctx;
}

/* Whether a search for (net, purpose, sims) would need a new entry and every
 * entry is held by a game in play. */
static bool s_searches_full(const driver *d, const driver_net *net, int purpose, int sims)
{
    for (int k = 0; k < DRIVER_MAX_SEARCHES; k++) {
        const search *e = d->searches[k];
        if (!e || e->users == 0 ||
            (e->net == net && e->purpose == purpose && e->simulations == sims))
            return false;
    }
    return true;
}

/* The search for (net, purpose, sims), made if needed; NULL when none can be. */
static search *s_search_get(driver *d, driver_net *net, int purpose, int sims, char *err,
                            size_t errlen)
{
    int free_k = -1;
    for (int k = 0; k < DRIVER_MAX_SEARCHES; k++) {
        search *e = d->searches[k];
        if (e && e->net == net && e->purpose == purpose && e->simulations == sims)
            return e;
        if (!e && free_k < 0)
            free_k = k;
    }
    if (free_k < 0) { /* drop an idle search to make room */
        for (int k = 0; k < DRIVER_MAX_SEARCHES && free_k < 0; k++)
            if (d->searches[k]->users == 0) {
                s_search_free(d, k);
                free_k = k;
            }
    }
    if (free_k < 0) {
        snprintf(err, errlen, "all %d searches are held by games in play (the models changed "
                 "faster than games finish): the game waits for one of them to finish",
                 DRIVER_MAX_SEARCHES);
        return NULL;
    }
    mcts_settings s;
    s_settings_of(&d->cfg, purpose, sims, &s);
    if (mcts_settings_check(&s, err, errlen))
        return NULL;
    search *e = calloc(1, sizeof *e);
    if (e)
        e->b = mcts_batch_new(d->g, &s, d->G, net->ev);
    if (!e || !e->b) {
        free(e);
        snprintf(err, errlen, "out of memory for a search of %d trees", d->G);
        return NULL;
    }
    const selfplay_config *play = &d->cfg.play;
    if (purpose == PURPOSE_SELFPLAY && play->oracle && play->tb_search)
        mcts_batch_set_oracle(e->b, play->oracle);
    e->net = net;
    e->purpose = purpose;
    e->simulations = sims;
    net->refs++;
    d->searches[free_k] = e;
    return e;
}

/* Searches nobody uses go, except those of a pinned network. */
static void s_searches_collect(driver *d)
{
    for (int k = 0; k < DRIVER_MAX_SEARCHES; k++) {
        search *e = d->searches[k];
        if (e && e->users == 0 && !e->net->pinned)
            s_search_free(d, k);
    }
}

/* Lets go of slot i's sides: baseline players freed, trees cleared, the
 * searches' users down. */
static void s_sides_release(driver *d, int i)
{
    slot *sl = &d->slots[i];
    search *e[2] = {sl->eng[0], sl->eng[1]};
    for (int p = 0; p < 2; p++) {
        player_destroy(&sl->base[p]);
        sl->eng[p] = NULL;
        if (!e[p] || (p == 1 && e[1] == e[0]))
            continue;
        mcts_batch_clear(e[p]->b, i);
        e[p]->users--;
    }
}

/* Ends the game in slot i: its sides released, the slot free. */
static void s_release(driver *d, int i)
{
    s_sides_release(d, i);
    d->slots[i].busy = false;
    d->busy--;
}

/* Starts spec's game in free slot i. */
static int s_start(driver *d, int i, const driver_game *spec, char *err, size_t errlen)
{
    KZ_CHECK(!d->stopping && !d->slots[i].busy);
    int purpose = spec->kind == RECORD_SELFPLAY ? PURPOSE_SELFPLAY : PURPOSE_ARENA;
    slot *sl = &d->slots[i];
    /* Step 1. Each side: a baseline player, or a search (one for both sides
     * when they play the same network). */
    search *e[2] = {NULL, NULL};
    player *base[2] = {NULL, NULL};
    int rc = 0;
    for (int p = 0; p < 2 && rc == 0; p++) {
        if (!spec->net[p]) {
            const char *b = spec->baseline[p] ? spec->baseline[p] : "";
            char perr[200];
            base[p] = player_from_spec(d->g, b, perr, sizeof perr);
            if (base[p])
                player_set_tick(base[p], d->tick, d->tick_ctx);
            if (!base[p]) {
                snprintf(err, errlen, "baseline player '%s': %s", b, perr);
                rc = KZ_EINVAL;
            }
        } else if (p == 1 && spec->net[1] == spec->net[0] && e[0]) {
            e[1] = e[0];
        } else {
            bool full = s_searches_full(d, spec->net[p], purpose, spec->simulations);
            e[p] = s_search_get(d, spec->net[p], purpose, spec->simulations, err, errlen);
            if (!e[p])
                rc = full ? KZ_EFULL : KZ_ENOMEM;
            else
                e[p]->users++; /* held while the other side is made */
        }
    }
    for (int p = 0; p < 2; p++) {
        sl->eng[p] = e[p];
        sl->base[p] = base[p];
    }
    if (rc) {
        s_sides_release(d, i);
        return rc;
    }
    sl->tree_on[0] = sl->tree_on[1] = false;
    sl->n_lag[0] = sl->n_lag[1] = 0;
    sl->seed = spec->seed;
    rng_seed(&sl->rng, sl->seed);
    game_dice_seed(&sl->dice, sl->seed);
    sl->arena_slot = spec->arena_slot;
    mcts_settings s0;
    s_settings_of(&d->cfg, purpose, spec->simulations, &s0);
    const mcts_settings *s = e[0] ? mcts_batch_settings(e[0]->b)
                             : e[1] ? mcts_batch_settings(e[1]->b) : &s0;
    sl->temperature_plies = s->temperature_plies;
    sl->pcr = purpose == PURPOSE_SELFPLAY && d->cfg.play.pcr_full_fraction < 1;
    sl->fast = false;
    sl->tb = false;
    for (int p = 0; p < 2; p++)
        if (sl->base[p])
            player_new_game(sl->base[p], mix64(sl->seed ^ (uint64_t)(p + 11)));
    /* Step 2. The position and the record. */
    game_record *r = sl->rec;
    record_clear(r);
    const char *start = spec->start_position ? spec->start_position : "";
    if (start[0]) {
        char perr[128];
        if (strlen(start) >= sizeof r->start_position ||
            d->g->parse_position(&sl->state, start, perr, sizeof perr) ||
            d->g->result(&sl->state).over) { /* nothing to play from a finished game */
            snprintf(err, errlen, "start position '%.80s' unusable", start);
            rc = KZ_EINVAL;
        }
    } else {
        d->g->init(&sl->state);
    }
    if (rc == 0) {
        rc = record_new_id(r);
        if (rc)
            snprintf(err, errlen, "no random game id: %s", err_str(rc));
    }
    if (rc) {
        s_sides_release(d, i);
        return rc;
    }
    snprintf(r->game, sizeof r->game, "%s", d->g->name);
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
        int fast = d->cfg.play.pcr_fast_simulations;
        r->settings.fast_simulations = fast < s->simulations ? fast : s->simulations;
        r->settings.pcr_full_fraction = d->cfg.play.pcr_full_fraction;
    }
    /* What a re-search of the game needs (recheck.h): the tables' use and the
     * networks' arithmetic (both sides' evaluators are made alike). */
    bool tables = purpose == PURPOSE_SELFPLAY && d->cfg.play.oracle;
    r->settings.tb_search = tables && d->cfg.play.tb_search;
    r->settings.tb_adjudicate = tables && d->cfg.play.tb_adjudicate;
    const driver_net *net = spec->net[0] ? spec->net[0] : spec->net[1];
    bool replayable = purpose == PURPOSE_ARENA || d->cfg.tree_per_side;
    snprintf(r->settings.evaluator, sizeof r->settings.evaluator, "%s",
             net && net->arith && replayable ? net->arith : "");
    r->seed = sl->seed;
    r->started_ms = time_wall_ms();
    snprintf(r->worker_id, sizeof r->worker_id, "%s", d->worker_id);
    sl->busy = true;
    d->busy++;
    d->st.started++;
    return 0;
}

int driver_start(driver *d, const driver_game *spec, char *err, size_t errlen)
{
    int i = 0;
    while (i < d->G && d->slots[i].busy)
        i++;
    KZ_CHECK(i < d->G);
    return s_start(d, i, spec, err, errlen);
}

/* Playout cap randomization: draws the budget of slot i's next search (a
 * self-play game's only tree, before its reset or advance). */
static void s_pcr_draw(driver *d, int i)
{
    slot *sl = &d->slots[i];
    search *e = sl->eng[0];
    sl->fast = rng_uniform(&sl->rng) >= d->cfg.play.pcr_full_fraction;
    int fast = d->cfg.play.pcr_fast_simulations;
    mcts_batch_set_budget(e->b, i, sl->fast && fast < e->simulations ? fast : e->simulations,
                          !sl->fast);
}

/* Brings player p's tree to the game's position: a fresh root the first
 * time (or after too long a lag), else advanced through the lag. */
static void s_catch_up(driver *d, int i, int p)
{
    slot *sl = &d->slots[i];
    mcts_batch *b = sl->eng[p]->b;
    if (!sl->tree_on[p]) {
        if (sl->pcr)
            s_pcr_draw(d, i);
        bool one_tree = sl->eng[0] == sl->eng[1] && !d->cfg.tree_per_side;
        mcts_batch_reset(b, i, &sl->state,
                         one_tree ? sl->seed : mix64(sl->seed ^ (uint64_t)(p + 1)));
        sl->tree_on[p] = true;
        if (one_tree)
            sl->tree_on[1 - p] = true; /* the one tree follows every move from now on */
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
static int s_finish(driver *d, int i, driver_done_fn fn, void *ctx)
{
    slot *sl = &d->slots[i];
    const game_def *g = d->g;
    game_result res = g->result(&sl->state);
    game_record *r = sl->rec;
    r->winner = res.winner;
    r->reason = res.reason;
    r->plies = (uint32_t)g->ply(&sl->state);
    r->finished_ms = time_wall_ms();
    d->st.finished++;
    d->st.finished_arena += r->kind == RECORD_ARENA;
    d->st.positions += (uint64_t)r->n_moves;
    d->st.plies += r->plies;
    for (int k = 0; k < r->n_moves; k++)
        d->st.forced += r->moves[k].forced;
    if (res.winner == 0 || res.winner == 1)
        d->st.wins[res.winner]++;
    else
        d->st.draws++;
    if (res.reason >= 0 && res.reason < GAME_MAX_REASONS)
        d->st.reasons[res.reason]++;
    int rc = fn ? fn(ctx, r, sl->arena_slot) : 0;
    s_release(d, i);
    return rc;
}

/* A self-play game whose state is in the endgame tables (tb_adjudicate):
 * records their move (the exact value, no policy target) into *action.
 * 1 if it did, 0 if not, or KZ_ENOMEM. */
static int s_table_move(driver *d, slot *sl, int *action)
{
    const game_def *g = d->g;
    const game_oracle *t = d->cfg.play.oracle;
    int score;
    if (!t || !d->cfg.play.tb_adjudicate || sl->rec->kind != RECORD_SELFPLAY ||
        !t->probe || t->probe(t->ctx, &sl->state, &score) != 0 ||
        t->best_action(t->ctx, &sl->state, action) != 0)
        return 0;
    int wdl = score > 0 ? 1 : score < 0 ? -1 : 0;
    uint16_t acts[GAME_MAX_LEGAL];
    bool forced = g->legal_actions(&sl->state, acts) == 1;
    uint16_t one = (uint16_t)*action;
    float share = 1;
    if (record_add_move(sl->rec, *action, forced, (float)wdl, forced, &one, &share))
        return KZ_ENOMEM;
    sl->rec->moves[sl->rec->n_moves - 1].fast_search = !forced;
    if (!sl->tb)
        d->st.tb_games++;
    sl->tb = true;
    d->st.tb_moves++;
    return 1;
}

/* Plays every move of slot i whose search is complete, until its mover's
 * tree searches or the game ends. */
static int s_play(driver *d, int i, driver_done_fn fn, void *ctx)
{
    slot *sl = &d->slots[i];
    const game_def *g = d->g;
    mcts_result res;
    while (sl->busy) {
        int p = g->to_move(&sl->state);
        search *e = sl->eng[p];
        uint16_t acts[GAME_MAX_LEGAL];
        float shares[GAME_MAX_LEGAL];
        int n = 0, action;
        if (g->is_chance && g->is_chance(&sl->state)) {
            /* Nature moves: the dice from the game's seed (game.h), recorded
             * as a move with no policy target; the trees follow. */
            action = game_chance_draw(g, &sl->state, &sl->dice);
            if (record_add_move(sl->rec, action, false, 0, 0, NULL, NULL))
                return KZ_ENOMEM;
            g->apply(&sl->state, action);
            if (g->result(&sl->state).over)
                return s_finish(d, i, fn, ctx);
            if (sl->eng[0] && sl->eng[0] == sl->eng[1]) {
                if (sl->tree_on[0] || sl->tree_on[1])
                    mcts_batch_advance(sl->eng[0]->b, i, action);
            } else {
                s_lag(sl, 0, action);
                s_lag(sl, 1, action);
            }
            continue;
        }
        int tm = s_table_move(d, sl, &action);
        if (tm < 0)
            return tm;
        if (tm > 0) {
            /* The tables play it out: the trees are not followed any more. */
            g->apply(&sl->state, action);
            if (g->result(&sl->state).over)
                return s_finish(d, i, fn, ctx);
            if (d->stopping) {
                d->st.abandoned++;
                s_release(d, i);
                return 0;
            }
            continue;
        }
        if (sl->base[p]) {
            /* Step 1'. A baseline player answers at once. */
            int rc = player_choose(sl->base[p], &sl->state, &action, NULL);
            if (rc == KZ_ECANCELED) { /* its tick said stop: the game is given up */
                d->st.abandoned++;
                s_release(d, i);
                return 0;
            }
            if (rc) { /* e.g. its gnubg died: this game is given up, the others go on */
                log_error("driver: baseline player %s failed (%s): its game is given up",
                          player_spec_name(sl->base[p]), err_str(rc));
                d->st.abandoned++;
                d->st.failed++;
                s_release(d, i);
                return 0;
            }
            bool forced = g->legal_actions(&sl->state, acts) == 1;
            acts[0] = (uint16_t)action;
            shares[0] = 1;
            if (record_add_move(sl->rec, action, forced, 0, 1, acts, shares))
                return KZ_ENOMEM;
            goto play;
        }
        s_catch_up(d, i, p);
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
        if (n >= 2 && d->cfg.forge_shares) { /* a test of the coordinator's check (forge) */
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
        if (g->result(&sl->state).over)
            return s_finish(d, i, fn, ctx);
        if (sl->eng[0] == sl->eng[1]) {
            if (sl->pcr)
                s_pcr_draw(d, i);
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
        if (d->stopping) {
            d->st.abandoned++;
            s_release(d, i);
            return 0;
        }
    }
    return 0;
}

/* Slot i: its moves, and with a source, new games in it as it comes free,
 * until it searches or stays free. */
static int s_settle(driver *d, int i, driver_done_fn fn, void *ctx)
{
    slot *sl = &d->slots[i];
    for (;;) {
        if (!sl->busy) {
            if (!d->next || d->stopping)
                return 0;
            driver_game spec;
            int got = d->next(d->next_ctx, &spec);
            if (got <= 0)
                return got;
            char err[300];
            int rc = s_start(d, i, &spec, err, sizeof err);
            if (rc) {
                log_error("driver: a game of the source cannot start: %s", err);
                return rc;
            }
        }
        int rc = s_play(d, i, fn, ctx);
        if (rc || sl->busy)
            return rc;
    }
}

static int s_settle_all(driver *d, driver_done_fn fn, void *ctx)
{
    for (int i = 0; i < d->G; i++) {
        int rc = s_settle(d, i, fn, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

int driver_step(driver *d, driver_done_fn fn, void *ctx)
{
    double t0 = time_now();
    /* Step 1. New games may be waiting for their first move: settle first
     * so that every mover's tree is searching. */
    int rc = s_settle_all(d, fn, ctx);
    /* Step 2. One batched step per search with searching trees. */
    for (int k = 0; k < DRIVER_MAX_SEARCHES && rc == 0; k++) {
        search *e = d->searches[k];
        if (e && e->users > 0) {
            int n = mcts_batch_step(e->b);
            rc = n < 0 ? n : 0;
        }
    }
    /* Step 3. Moves whose search completed. */
    if (rc == 0)
        rc = s_settle_all(d, fn, ctx);
    if (rc == 0)
        s_searches_collect(d);
    d->st.seconds += time_now() - t0;
    return rc;
}

void driver_set_tick(driver *d, player_tick_fn fn, void *ctx)
{
    d->tick = fn;
    d->tick_ctx = ctx;
}

void driver_stop(driver *d)
{
    d->stopping = true;
}

int driver_free(const driver *d)
{
    return d->stopping ? 0 : d->G - d->busy;
}

int driver_in_play(const driver *d)
{
    return d->busy;
}

size_t driver_arena_slots(const driver *d, uint32_t candidate, uint32_t *out, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < d->G && n < max; i++) {
        const slot *sl = &d->slots[i];
        if (sl->busy && sl->rec->kind == RECORD_ARENA &&
            (!candidate || sl->rec->model_version == candidate))
            out[n++] = sl->arena_slot;
    }
    return n;
}

uint32_t driver_arena_candidate(const driver *d)
{
    uint32_t c = 0;
    for (int i = 0; i < d->G; i++) {
        const slot *sl = &d->slots[i];
        if (sl->busy && sl->rec->kind == RECORD_ARENA && sl->rec->model_version > c)
            c = sl->rec->model_version;
    }
    return c;
}

void driver_get_stats(const driver *d, driver_stats *out)
{
    *out = d->st;
    for (int k = 0; k < DRIVER_MAX_SEARCHES; k++)
        if (d->searches[k])
            s_stats_add(&out->search, mcts_batch_stats(d->searches[k]->b));
}
