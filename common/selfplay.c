/* selfplay: G games at once on one mcts_batch. See selfplay.h.
 *
 * Each slot (tree) holds one game: its record, its move-sampling generator and
 * its index. selfplay_step first "settles" every slot (plays the moves whose
 * search is complete, finishes games that ended, starts new ones), then runs
 * one batched search step, then settles again so that finished games reach
 * the callback without waiting for the next step. */
#include "selfplay.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct slot {
    int game;             /* index k of the game in this slot, -1 when idle */
    rng_t rng;            /* move sampling (and the PCR draws) */
    bool fast;            /* the move being searched has a fast search (PCR) */
    bool tb;              /* the tables play this game to its end */
    game_record *rec;     /* the game so far (reused between games) */
} slot;

struct selfplay {
    const game_def *g;     /* the game */
    selfplay_config cfg;   /* settings (strings copied below) */
    char worker_id[64];    /* copy of cfg.worker_id */
    char start[GAME_POSITION_CHARS + 1]; /* copy of cfg.start_position, "" = the initial one */
    game_state start_state; /* the start of every game */
    mcts_batch *batch;     /* the trees */
    slot *slots;           /* (parallel) */
    int next_game;         /* index of the next game to start */
    int last_game;         /* games started stop before this index */
    int active;            /* slots with a game */
    selfplay_stats st;     /* counters (search copied on request) */
};

selfplay_config selfplay_config_default(void)
{
    return (selfplay_config){.search = mcts_settings_default(),
                             .games = 1,
                             .parallel = 32,
                             .pcr_full_fraction = 1,
                             .pcr_fast_simulations = 40};
}

#define O(f) offsetof(selfplay_config, f)
const config_option selfplay_options[] = {
    {"parallel", CONFIG_INT32, "32", 1, 4096, O(parallel),
     "games played at once (trees in one batched search)"},
    {"pcr_full_fraction", CONFIG_DOUBLE, "1", 0, 1, O(pcr_full_fraction),
     "playout cap randomization: the share of moves searched in full (policy targets); the "
     "others get a fast search (no root noise, the most visited played, value targets only); "
     "1 = off (KataGo: 0.25)"},
    {"pcr_fast_simulations", CONFIG_INT32, "40", 1, 1000000, O(pcr_fast_simulations),
     "playout cap randomization: simulations of a fast search (at most the full search's)"},
    {"tb_search", CONFIG_BOOL, "false", 0, 0, O(tb_search),
     "endgame tables (tb_dir): the search values the leaves they cover by their exact result"},
    {"tb_adjudicate", CONFIG_BOOL, "false", 0, 0, O(tb_adjudicate),
     "endgame tables (tb_dir): a game that reaches them is played to its end by their perfect "
     "play (no search; those moves value targets only)"},
};
#undef O
const size_t selfplay_options_n = sizeof selfplay_options / sizeof selfplay_options[0];

selfplay *selfplay_new(const game_def *g, const selfplay_config *cfg, evaluator ev, char *err,
                       size_t errlen)
{
    char msg[200];
    if (mcts_settings_check(&cfg->search, msg, sizeof msg) != 0) {
        err_set(err, errlen, KZ_EINVAL, "%s", msg);
        return NULL;
    }
    if (cfg->games < 1 || cfg->parallel < 1 || cfg->parallel > 65536) {
        err_set(err, errlen, KZ_EINVAL, "games must be >= 1 and parallel from 1 to 65536");
        return NULL;
    }
    bool pcr = cfg->pcr_full_fraction < 1;
    if (!(cfg->pcr_full_fraction >= 0 && cfg->pcr_full_fraction <= 1)) {
        err_set(err, errlen, KZ_EINVAL, "pcr_full_fraction must be in [0, 1]");
        return NULL;
    }
    if (pcr && cfg->pcr_fast_simulations < 1) {
        err_set(err, errlen, KZ_EINVAL, "pcr_fast_simulations must be >= 1");
        return NULL;
    }
    if (cfg->worker_id && strlen(cfg->worker_id) >= 64) {
        err_set(err, errlen, KZ_EINVAL, "worker id longer than 63 characters");
        return NULL;
    }
    selfplay *sp = calloc(1, sizeof *sp);
    if (!sp) {
        err_set(err, errlen, KZ_ENOMEM, "out of memory");
        return NULL;
    }
    sp->g = g;
    sp->cfg = *cfg;
    snprintf(sp->worker_id, sizeof sp->worker_id, "%s", cfg->worker_id ? cfg->worker_id : "");
    sp->cfg.worker_id = sp->worker_id;
    if (cfg->start_position && cfg->start_position[0]) {
        char perr[160];
        if (strlen(cfg->start_position) >= sizeof sp->start ||
            g->parse_position(&sp->start_state, cfg->start_position, perr, sizeof perr) != 0) {
            err_set(err, errlen, KZ_EINVAL, "start position: %s",
                    strlen(cfg->start_position) >= sizeof sp->start ? "too long" : perr);
            goto out_fail;
        }
        if (g->result(&sp->start_state).over) {
            err_set(err, errlen, KZ_EINVAL, "start position: the game is already over there");
            goto out_fail;
        }
        snprintf(sp->start, sizeof sp->start, "%s", cfg->start_position);
    } else {
        g->init(&sp->start_state);
    }
    sp->cfg.start_position = sp->start;
    int G = cfg->parallel < cfg->games ? cfg->parallel : cfg->games;
    sp->batch = mcts_batch_new(g, &cfg->search, G, ev);
    sp->slots = calloc((size_t)G, sizeof *sp->slots);
    if (!sp->batch || !sp->slots) {
        err_set(err, errlen, KZ_ENOMEM, "out of memory");
        goto out_fail;
    }
    for (int i = 0; i < G; i++) {
        sp->slots[i].game = -1;
        sp->slots[i].rec = record_new();
        if (!sp->slots[i].rec) {
            err_set(err, errlen, KZ_ENOMEM, "out of memory");
            goto out_fail;
        }
    }
    sp->last_game = cfg->games;
    if (cfg->tablebase && cfg->tb_search)
        mcts_batch_set_tablebase(sp->batch, cfg->tablebase);
    return sp;
out_fail:
    selfplay_destroy(&sp);
    return NULL;
}

void selfplay_destroy(selfplay **psp)
{
    if (!psp || !*psp)
        return;
    selfplay *sp = *psp;
    if (sp->slots) {
        int G = sp->batch ? mcts_batch_trees(sp->batch) : 0;
        for (int i = 0; i < G; i++)
            record_destroy(&sp->slots[i].rec);
    }
    free(sp->slots);
    mcts_batch_destroy(&sp->batch);
    free(sp);
    *psp = NULL;
}

void selfplay_stop_new(selfplay *sp) { sp->last_game = sp->next_game; }

void selfplay_get_stats(const selfplay *sp, selfplay_stats *out)
{
    *out = sp->st;
    out->search = *mcts_batch_stats(sp->batch);
}

/* Whether the run draws full and fast searches (playout cap randomization). */
static bool s_pcr(const selfplay *sp)
{
    return sp->cfg.pcr_full_fraction < 1;
}

/* The fast searches' simulations. */
static int s_fast_sims(const selfplay *sp)
{
    int f = sp->cfg.pcr_fast_simulations, full = sp->cfg.search.simulations;
    return f < full ? f : full;
}

/* PCR: draws the budget of slot i's next search (before its reset or advance). */
static void s_pcr_draw(selfplay *sp, int i)
{
    slot *sl = &sp->slots[i];
    sl->fast = rng_uniform(&sl->rng) >= sp->cfg.pcr_full_fraction;
    mcts_batch_set_budget(sp->batch, i, sl->fast ? s_fast_sims(sp) : sp->cfg.search.simulations,
                          !sl->fast);
}

/* Starts the next game in slot i, or makes the slot idle. 0 or an errno. */
static int s_start_game(selfplay *sp, int i)
{
    slot *sl = &sp->slots[i];
    if (sp->next_game >= sp->last_game) {
        if (sl->game >= 0)
            sp->active--;
        sl->game = -1;
        mcts_batch_clear(sp->batch, i);
        return 0;
    }
    if (sl->game < 0)
        sp->active++;
    sl->game = sp->next_game++;
    sp->st.games_started++;
    uint64_t seed = sp->cfg.seed + (uint64_t)sl->game;
    rng_seed(&sl->rng, seed);
    game_record *r = sl->rec;
    record_clear(r);
    int rc = record_new_id(r);
    if (rc != 0)
        return rc;
    snprintf(r->game, sizeof r->game, "%s", sp->g->name);
    r->kind = RECORD_SELFPLAY;
    r->model_version = sp->cfg.model_version;
    snprintf(r->start_position, sizeof r->start_position, "%s", sp->start);
    r->settings = selfplay_record_settings(&sp->cfg.search);
    if (s_pcr(sp)) {
        r->settings.fast_simulations = s_fast_sims(sp);
        r->settings.pcr_full_fraction = sp->cfg.pcr_full_fraction;
    }
    r->settings.tb_search = sp->cfg.tablebase && sp->cfg.tb_search;
    r->settings.tb_adjudicate = sp->cfg.tablebase && sp->cfg.tb_adjudicate;
    r->seed = seed;
    r->started_ms = time_wall_ms();
    snprintf(r->worker_id, sizeof r->worker_id, "%s", sp->worker_id);
    sl->fast = false;
    sl->tb = false;
    if (s_pcr(sp))
        s_pcr_draw(sp, i);
    mcts_batch_reset(sp->batch, i, &sp->start_state, seed);
    return 0;
}

/* Records the finished game in slot i and hands it to fn. */
static int s_finish_game(selfplay *sp, int i, selfplay_game_fn fn, void *ctx)
{
    slot *sl = &sp->slots[i];
    const game_def *g = sp->g;
    const game_state *s = mcts_batch_state(sp->batch, i);
    game_result res = g->result(s);
    game_record *r = sl->rec;
    r->winner = res.winner;
    r->reason = res.reason;
    r->plies = (uint32_t)g->ply(s);
    r->finished_ms = time_wall_ms();
    sp->st.games_done++;
    sp->st.states += (uint64_t)r->n_moves;
    sp->st.plies += r->plies;
    if (res.winner >= 0)
        sp->st.wins[res.winner]++;
    else
        sp->st.draws++;
    if (res.reason >= 0 && res.reason < GAME_REASON_COUNT)
        sp->st.reasons[res.reason]++;
    sp->st.tb_games += sl->tb;
    return fn ? fn(ctx, r) : 0;
}

/* When slot i's state is in the endgame tables (with tb_adjudicate): plays
 * and records their move, no search. 1 if it did, 0 if not, or KZ_ENOMEM. */
static int s_table_move(selfplay *sp, int i)
{
    const tb_set *t = sp->cfg.tablebase;
    if (!t || !sp->cfg.tb_adjudicate)
        return 0;
    const game_def *g = sp->g;
    const game_state *s = mcts_batch_state(sp->batch, i);
    int wdl, action;
    if (tb_probe_wdl(t, s, &wdl) != 0 || tb_best_action(t, s, &action) != 0)
        return 0;
    slot *sl = &sp->slots[i];
    uint16_t acts[GAME_MAX_LEGAL];
    bool forced = g->legal_actions(s, acts) == 1;
    uint16_t one = (uint16_t)action;
    float share = 1;
    if (record_add_move(sl->rec, action, forced, (float)wdl, forced, &one, &share) != 0)
        return KZ_ENOMEM;
    sl->rec->moves[sl->rec->n_moves - 1].fast_search = !forced;
    sl->tb = true;
    sp->st.tb_moves++;
    sp->st.forced += forced;
    mcts_batch_advance(sp->batch, i, action);
    return 1;
}

/* Plays every move whose search is complete in slot i, finishing and
 * starting games as needed, until the slot searches or is idle. */
static int s_settle(selfplay *sp, int i, selfplay_game_fn fn, void *ctx)
{
    slot *sl = &sp->slots[i];
    const game_def *g = sp->g;
    mcts_result res;
    for (;;) {
        enum mcts_status st = mcts_batch_status(sp->batch, i);
        if (st == MCTS_SEARCHING && !sp->cfg.tb_adjudicate)
            return 0;
        if (st == MCTS_IDLE) {
            if (sp->next_game >= sp->last_game)
                return 0;
            int rc = s_start_game(sp, i);
            if (rc != 0)
                return rc;
            continue;
        }
        if (st == MCTS_OVER) {
            int rc = s_finish_game(sp, i, fn, ctx);
            if (rc != 0)
                return rc;
            rc = s_start_game(sp, i);
            if (rc != 0)
                return rc;
            continue;
        }
        /* In the endgame tables: their move, no search (tb_adjudicate). */
        int rc = s_table_move(sp, i);
        if (rc < 0)
            return rc;
        if (rc > 0)
            continue;
        if (st == MCTS_SEARCHING)
            return 0;
        /* MCTS_DONE: play the move. */
        mcts_batch_result(sp->batch, i, &res);
        const game_state *s = mcts_batch_state(sp->batch, i);
        bool tau_one = g->ply(s) < sp->cfg.search.temperature_plies && !sl->fast;
        int action = mcts_result_choose(&res, tau_one, &sl->rng);
        uint16_t acts[GAME_MAX_LEGAL];
        float shares[GAME_MAX_LEGAL];
        int n = 0;
        if (res.forced) {
            acts[0] = (uint16_t)action;
            shares[0] = 1;
            n = 1;
            sp->st.forced++;
        } else {
            /* The policy target: visits / total, pruned visits or Gumbel's pi' (mcts.h). */
            for (int k = 0; k < res.n; k++)
                if (res.target[k] > 0) {
                    acts[n] = res.actions[k];
                    shares[n] = res.target[k];
                    n++;
                }
        }
        if (record_add_move(sl->rec, action, res.forced, res.value, n, acts, shares) != 0)
            return KZ_ENOMEM;
        sl->rec->moves[sl->rec->n_moves - 1].fast_search = sl->fast && !res.forced;
        if (s_pcr(sp))
            s_pcr_draw(sp, i);
        mcts_batch_advance(sp->batch, i, action);
    }
}

static int s_settle_all(selfplay *sp, selfplay_game_fn fn, void *ctx)
{
    int G = mcts_batch_trees(sp->batch);
    for (int i = 0; i < G; i++) {
        int rc = s_settle(sp, i, fn, ctx);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int selfplay_step(selfplay *sp, selfplay_game_fn fn, void *ctx, int *remaining)
{
    double t0 = time_now();
    int rc = s_settle_all(sp, fn, ctx);
    if (rc == 0 && sp->active > 0) {
        rc = mcts_batch_step(sp->batch);
        if (rc >= 0)
            rc = s_settle_all(sp, fn, ctx);
    }
    sp->st.seconds += time_now() - t0;
    if (remaining)
        *remaining = sp->active + (sp->last_game - sp->next_game);
    return rc;
}

int selfplay_run(selfplay *sp, selfplay_game_fn fn, void *ctx)
{
    for (;;) {
        int remaining;
        int rc = selfplay_step(sp, fn, ctx, &remaining);
        if (rc != 0 || remaining == 0)
            return rc;
    }
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
