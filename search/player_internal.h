/* player_internal: what the player modules share (player.c, the interface
 * and spec parsing; player_ab.c, alpha-beta and greedy; player_uct.c, UCT;
 * player_net.c, the network players): the player struct, its table of
 * operations per kind, and the constructors the spec parser calls. Not for
 * use outside them; player.h is the manual. */
#ifndef KZ_PLAYER_INTERNAL_H
#define KZ_PLAYER_INTERNAL_H

#include "search/player.h"
#include "common/util.h"

/* What each kind of player does (its file fills one table). */
typedef struct player_ops {
    /* Chooses an action in s (not over, at least two legal actions: the
     * single-action case never reaches a player's choose). */
    int (*choose)(player *p, const game_state *s, int n, const uint16_t *legal, int *action,
                  player_info *info);
    /* Frees the kind's own memory (p->impl); may be NULL. */
    void (*destroy_impl)(player *p);
    /* Sees an action played in s (player_observe); may be NULL. */
    void (*observe)(player *p, const game_state *s, int action);
    /* Starts a new game (after the reseed); may be NULL. */
    void (*new_game)(player *p);
} player_ops;

/* A player: the common part, and the kind's own state in impl. */
struct player {
    const game_def *g;        /* the game, borrowed */
    const player_ops *ops;    /* the kind's operations */
    char name[PLAYER_SPEC_MAX]; /* the spec that rebuilds this player */
    rng_t rng;                /* reseeded by player_new_game */
    void *impl;               /* the kind's own state, owned */
    int depth;                /* alpha-beta depth in turns */
    bool mobility;            /* alpha-beta evaluation includes mobility */
    game_oracle oracle;       /* exact values for the search (probe NULL: none) */
    player_tick_fn tick;      /* called during long searches (player_set_tick), or NULL */
    void *tick_ctx;           /* its argument */
};

/* A new player of the kind `ops` for g named `name` (its spec), rng seeded 1,
 * no impl; the caller owns it (player_destroy). */
player *player_new_of(const game_def *g, const player_ops *ops, const char *name);

/* The network players of a spec with a precision (model.h's, or
 * EVALUATOR_PRECISION_DEFAULT): player_policy_new and player_mcts_new with it. */
player *player_policy_new_precision(const game_def *g, const char *model_path, int precision,
                                    char *err, size_t errlen);
player *player_mcts_new_precision(const game_def *g, const char *model_path,
                                  const mcts_settings *s, int precision, char *err,
                                  size_t errlen);

#endif
