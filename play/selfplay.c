/* selfplay: N games of one model against itself, as a source of games for
 * the driver (driver.h), which plays them G at once. See selfplay.h.
 *
 * The source gives game k (0, 1, ... in the order slots come free, slots in
 * order) with seed config.seed + k; the driver starts it in the slot that
 * came free at once, so a slot searches again in the step its game ended. */
#include "play/selfplay.h"

#include <stdlib.h>
#include <string.h>

#include "play/driver.h"
#include "common/util.h"

struct selfplay {
    const game_def *g;        /* the game */
    selfplay_config cfg;      /* settings (strings copied below) */
    char start[GAME_POSITION_CHARS + 1]; /* copy of cfg.start_position, "" = the initial one */
    driver_net net;           /* the model (pinned: its search lives as long as the run) */
    driver *d;                /* the games in play */
    int next_game;            /* index of the next game to start */
    int last_game;            /* games started stop before this index */
    selfplay_game_fn fn;      /* the caller's callback during selfplay_step */
    void *fn_ctx;             /* its context */
};

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
    if (cfg->start_position && cfg->start_position[0]) {
        char perr[160];
        game_state start;
        if (strlen(cfg->start_position) >= sizeof sp->start ||
            g->parse_position(&start, cfg->start_position, perr, sizeof perr) != 0) {
            err_set(err, errlen, KZ_EINVAL, "start position: %s",
                    strlen(cfg->start_position) >= sizeof sp->start ? "too long" : perr);
            goto out_fail;
        }
        if (g->result(&start).over) {
            err_set(err, errlen, KZ_EINVAL, "start position: the game is already over there");
            goto out_fail;
        }
        snprintf(sp->start, sizeof sp->start, "%s", cfg->start_position);
    }
    sp->cfg.start_position = sp->start;
    sp->net = (driver_net){.ev = ev, .pinned = true};
    driver_config dc = driver_config_default();
    dc.play = *cfg;
    dc.play.parallel = cfg->parallel < cfg->games ? cfg->parallel : cfg->games;
    dc.arena_temperature_plies = 0; /* no arena games */
    sp->d = driver_new(g, &dc, err, errlen);
    if (!sp->d)
        goto out_fail;
    sp->cfg.worker_id = NULL; /* the driver keeps its copy */
    sp->last_game = cfg->games;
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
    driver_destroy(&sp->d);
    free(sp);
    *psp = NULL;
}

void selfplay_stop_new(selfplay *sp) { sp->last_game = sp->next_game; }

void selfplay_get_stats(const selfplay *sp, selfplay_stats *out)
{
    driver_stats d;
    driver_get_stats(sp->d, &d);
    memset(out, 0, sizeof *out);
    out->games_started = (int)d.started;
    out->games_done = (int)d.finished;
    out->states = d.positions;
    out->plies = d.plies;
    out->forced = d.forced;
    out->wins[0] = (int)d.wins[0];
    out->wins[1] = (int)d.wins[1];
    out->draws = (int)d.draws;
    for (int k = 0; k < GAME_MAX_REASONS; k++)
        out->reasons[k] = (int)d.reasons[k];
    out->tb_games = (int)d.tb_games;
    out->tb_moves = d.tb_moves;
    out->seconds = d.seconds;
    out->search = d.search;
}

/* The driver's source: game k while there are games to start. */
static int s_next(void *ctx, driver_game *spec)
{
    selfplay *sp = ctx;
    if (sp->next_game >= sp->last_game)
        return 0;
    int k = sp->next_game++;
    *spec = (driver_game){.kind = RECORD_SELFPLAY,
                          .net = {&sp->net, &sp->net},
                          .model_version = sp->cfg.model_version,
                          .simulations = sp->cfg.search.simulations,
                          .start_position = sp->start,
                          .seed = sp->cfg.seed + (uint64_t)k};
    return 1;
}

/* The driver's callback: the caller's, without the arena slot. */
static int s_done(void *ctx, const game_record *r, uint32_t arena_slot)
{
    (void)arena_slot;
    selfplay *sp = ctx;
    return sp->fn ? sp->fn(sp->fn_ctx, r) : 0;
}

int selfplay_step(selfplay *sp, selfplay_game_fn fn, void *ctx, int *remaining)
{
    sp->fn = fn;
    sp->fn_ctx = ctx;
    driver_set_source(sp->d, s_next, sp);
    int rc = driver_step(sp->d, s_done, sp);
    if (remaining)
        *remaining = driver_in_play(sp->d) + (sp->last_game - sp->next_game);
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

uint32_t selfplay_sims_schedule(long start, long end, long ramp_games, uint64_t games)
{
    if (start <= 0 || end <= 0)
        return end > 0 ? (uint32_t)end : 0;
    double f = (double)games / (double)(ramp_games >= 1 ? ramp_games : 1);
    if (f > 1)
        f = 1;
    return (uint32_t)((double)start + f * (double)(end - start) + 0.5);
}
