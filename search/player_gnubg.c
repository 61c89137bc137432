/* player_gnubg: GNU Backgammon as a player (player.h: player_gnubg_new),
 * through gnubg.h's text-mode driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/backgammon.h"
#include "search/gnubg.h"
#include "search/player.h"
#include "search/player_internal.h"

enum { PLAN_MAX = 4 };

typedef struct gnubg_player {
    gnubg *gb;
    int n_plan;                 /* the whole move in hand: its atomic actions ... */
    uint64_t plan_hash[PLAN_MAX]; /* ... and the hash of the state each is played in */
    uint16_t plan[PLAN_MAX];
    bg_whole_move *moves;       /* (BG_WHOLE_MAX) scratch */
} gnubg_player;

#define BG_WHOLE_MAX 4096

/* Asks gnubg for its move at the fresh roll s and plans its actions. */
static int s_plan(player *p, const game_state *s)
{
    const game_def *g = p->g;
    gnubg_player *gp = p->impl;
    char pos[GAME_POSITION_CHARS + 1], id[16], err[300], best[1][64];
    g->format_position(s, pos, sizeof pos);
    snprintf(id, sizeof id, "%.14s", pos);
    int n = 0;
    gnubg_set_tick(gp->gb, p->tick, p->tick_ctx);
    int rc = gnubg_hint(gp->gb, id, pos[15] - '0', pos[16] - '0', 1, best, &n, err, sizeof err);
    if (rc) {
        if (rc == KZ_ECANCELED)
            return rc;
        log_error("player %s: %s", p->name, err);
        return KZ_EIO;
    }
    uint8_t own[25], opp[25];
    char after[16];
    backgammon_board(s, own, opp);
    if (n < 1 || gnubg_play_notation(best[0], own, opp)) {
        log_error("player %s: gnubg's move '%s' at %s does not read", p->name,
                  n ? best[0] : "", pos);
        return KZ_EIO;
    }
    backgammon_position_id(own, opp, after);
    int nm = backgammon_whole_moves(s, gp->moves, BG_WHOLE_MAX);
    for (int i = 0; i < nm && i < BG_WHOLE_MAX; i++) {
        if (strcmp(gp->moves[i].after, after))
            continue;
        game_state t = *s;
        gp->n_plan = gp->moves[i].n_actions;
        for (int k = 0; k < gp->n_plan; k++) {
            gp->plan_hash[k] = g->hash(&t);
            gp->plan[k] = gp->moves[i].actions[k];
            g->apply(&t, gp->plan[k]);
        }
        return 0;
    }
    log_error("player %s: gnubg's move '%s' at %s is none of ours", p->name, best[0], pos);
    return KZ_EIO;
}

static int s_gnubg_choose(player *p, const game_state *s, int n, const uint16_t *legal,
                          int *action, player_info *info)
{
    const game_def *g = p->g;
    gnubg_player *gp = p->impl;
    (void)info;
    uint64_t h = g->hash(s);
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < gp->n_plan; k++)
            if (gp->plan_hash[k] == h && game_is_legal(g, s, gp->plan[k])) {
                *action = gp->plan[k];
                return 0;
            }
        if (pass || g->mid_turn(s))
            break;
        int rc = s_plan(p, s);
        if (rc)
            return rc;
    }
    /* Inside a turn gnubg did not plan (another player's hops): the first. */
    *action = legal[0];
    (void)n;
    return 0;
}

static void s_gnubg_destroy(player *p)
{
    gnubg_player *gp = p->impl;
    if (!gp)
        return;
    gnubg_close(gp->gb);
    free(gp->moves);
    free(gp);
}

static const player_ops s_gnubg_ops = {.choose = s_gnubg_choose,
                                       .destroy_impl = s_gnubg_destroy};

player *player_gnubg_new(const game_def *g, const char *level, char *err, size_t errlen)
{
    if (g != &backgammon_game) {
        err_set(err, errlen, KZ_EINVAL, "gnubg plays backgammon only, not %s", g->name);
        return NULL;
    }
    gnubg *gb;
    if (gnubg_open(&gb, level, 120, err, errlen))
        return NULL;
    char name[PLAYER_SPEC_MAX];
    snprintf(name, sizeof name, "gnubg:%s", level ? level : "expert");
    player *p = player_new_of(g, &s_gnubg_ops, name);
    gnubg_player *gp = xcalloc(1, sizeof *gp);
    gp->gb = gb;
    gp->moves = xmalloc(sizeof *gp->moves * BG_WHOLE_MAX);
    p->impl = gp;
    return p;
}
