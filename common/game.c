/* game: the registry of game modules and helpers over game_def. See game.h. */
#include "game.h"

#include <string.h>

#include "khreibaga.h"

const game_def *game_find(const char *name)
{
    if (name && !strcmp(name, khreibaga_game.name))
        return &khreibaga_game;
    return NULL;
}

const game_def *game_default(void) { return &khreibaga_game; }

const char *game_reason_name(int reason)
{
    static const char *names[GAME_REASON_COUNT] = {
        "none", "no-pieces", "no-moves", "no-progress", "repetition", "length",
    };
    return reason >= 0 && reason < GAME_REASON_COUNT ? names[reason] : "unknown";
}

void game_mirror_planes(const game_def *g, float *planes)
{
    int W = g->width;
    for (int p = 0; p < g->planes * g->height; p++) {
        float *row = planes + (size_t)p * W;
        for (int c = 0; c < W / 2; c++) {
            float t = row[c];
            row[c] = row[W - 1 - c];
            row[W - 1 - c] = t;
        }
    }
}

int game_result_for(game_result r, int player)
{
    if (!r.over || r.winner < 0)
        return 0;
    return r.winner == player ? 1 : -1;
}

uint64_t game_perft_generic(const game_def *g, const game_state *s, int depth)
{
    if (depth == 0)
        return 1;
    if (g->result(s).over)
        return 0; /* R22: terminal nodes above the depth add nothing */
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        game_state c;
        g->copy(&c, s);
        g->apply(&c, legal[i]);
        total += game_perft_generic(g, &c, depth - 1);
    }
    return total;
}

uint64_t game_perft(const game_def *g, const game_state *s, int depth)
{
    return g->perft ? g->perft(s, depth) : game_perft_generic(g, s, depth);
}
