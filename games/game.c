/* game: the registry of game modules and helpers over game_def. See game.h. */
#include "games/game.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* The built-in games live in games/registry.c, above their engines, so that
 * the interface names none of its implementations. */
#define s_builtin game_builtin
#define N_BUILTIN game_n_builtin

/* Games added by game_register, after the built-in ones. */
static const game_def *s_extra[GAME_MAX_GAMES];
static int s_n_extra;

const game_def *game_at(int i)
{
    if (i < 0)
        return NULL;
    if (i < N_BUILTIN)
        return s_builtin[i];
    return i - N_BUILTIN < s_n_extra ? s_extra[i - N_BUILTIN] : NULL;
}

const game_def *game_find(const char *name)
{
    if (!name)
        return NULL;
    const game_def *g;
    for (int i = 0; (g = game_at(i)); i++)
        if (!strcmp(name, g->name))
            return g;
    return NULL;
}

const game_def *game_default(void)
{
    const game_def *g = game_find(GAME_DEFAULT_NAME);
    KZ_CHECK(g);
    return g;
}

void game_names(char *buf, size_t len)
{
    if (!len)
        return;
    buf[0] = '\0';
    size_t used = 0;
    const game_def *g;
    for (int i = 0; (g = game_at(i)); i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", g->name);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}

const game_def *game_find_said(const char *name, int shown, char *err, size_t errlen)
{
    const game_def *g = game_find(name);
    if (!g) {
        char names[256];
        game_names(names, sizeof names);
        snprintf(err, errlen, "unknown game '%.*s' (the games: %s)", shown, name ? name : "",
                 names);
    }
    return g;
}

/* Whether map holds a permutation of [0, n). */
static bool s_is_permutation(const int16_t *map16, const int8_t *map8, int n)
{
    bool seen[GAME_MAX_PLANE_FLOATS] = {false};
    for (int i = 0; i < n; i++) {
        int to = map16 ? map16[i] : map8[i];
        if (to < 0 || to >= n || seen[to])
            return false;
        seen[to] = true;
    }
    return true;
}

/* game_check's bound on one of game n's sizes: 0 when v is in lo..hi, else
 * KZ_EINVAL with "game n: what v is not in lo..hi". */
static int s_range(const char *n, const char *what, int v, int lo, int hi, char *err,
                   size_t errlen)
{
    if (v >= lo && v <= hi)
        return 0;
    return err_set(err, errlen, KZ_EINVAL, "game %s: %s %d is not in %d..%d", n, what, v, lo, hi);
}

int game_check(const game_def *g, char *err, size_t errlen)
{
    if (!g || !g->name || !g->name[0] || strlen(g->name) > GAME_NAME_CHARS ||
        strspn(g->name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(g->name))
        return err_set(err, errlen, KZ_EINVAL,
                       "a game's name must be 1 to %d characters of a-z, 0-9, _ and -",
                       GAME_NAME_CHARS);
    const char *n = g->name;
    if (!g->init || !g->legal_actions || !g->copy || !g->apply || !g->to_move ||
        !g->mid_turn || !g->ply || !g->result || !g->encode_planes || !g->canonical_action ||
        !g->hash || !g->pack || !g->unpack_planes || !g->parse_position ||
        !g->format_position || !g->parse_action || !g->format_action || !g->render ||
        !g->player_name)
        return err_set(err, errlen, KZ_EINVAL, "game %s: a required function is missing", n);
    int rc = s_range(n, "action_count", g->action_count, 1, GAME_MAX_ACTIONS, err, errlen);
    if (!rc)
        rc = s_range(n, "max_legal", g->max_legal, 1, GAME_MAX_LEGAL, err, errlen);
    if (rc)
        return rc;
    if (g->planes < 1 || g->height < 1 || g->width < 1 ||
        (long)g->planes * g->height * g->width > GAME_MAX_PLANE_FLOATS)
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: planes %d x %d x %d must be positive and at most %d floats", n,
                       g->planes, g->height, g->width, GAME_MAX_PLANE_FLOATS);
    rc = s_range(n, "packed_bytes", g->packed_bytes, 1, GAME_PACKED_BYTES, err, errlen);
    if (!rc)
        rc = s_range(n, "state_bytes", g->state_bytes, 1, GAME_STATE_BYTES, err, errlen);
    if (!rc)
        rc = s_range(n, "position_chars", g->position_chars, 1, GAME_POSITION_CHARS, err,
                     errlen);
    if (rc)
        return rc;
    if (g->simulations < 1 || g->simulations > 1000000 ||
        !(g->dirichlet_alpha > 0 && g->dirichlet_alpha <= 100))
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: search defaults: simulations must be in 1..1000000 and "
                       "dirichlet_alpha in (0, 100]", n);
    rc = s_range(n, "max_points", g->max_points, 0, GAME_MAX_POINTS, err, errlen);
    if (rc)
        return rc;
    if (g->reasons) {
        bool ok = g->n_reasons >= 2 && g->n_reasons <= GAME_MAX_REASONS &&
                  g->reasons[0] && !strcmp(g->reasons[0], "none");
        for (int k = 1; ok && k < g->n_reasons; k++)
            ok = g->reasons[k] && g->reasons[k][0];
        if (!ok)
            return err_set(err, errlen, KZ_EINVAL,
                           "game %s: reasons must be 2..%d names, the first \"none\"", n,
                           GAME_MAX_REASONS);
    }
    if (!g->is_chance != !g->chance_probs)
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: is_chance and chance_probs go together", n);
    if (g->n_features < 0 || g->n_features > GAME_MAX_PLANE_FLOATS ||
        (g->n_features > 0) != (g->features != NULL))
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: n_features %d and the features hook disagree (or over %d)", n,
                       g->n_features, GAME_MAX_PLANE_FLOATS);
    if (g->derived_planes < 0 || (g->derived_planes > 0) != (g->derive_planes != NULL) ||
        (long)(g->planes + g->derived_planes) * g->height * g->width > GAME_MAX_PLANE_FLOATS)
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: derived_planes %d and the derive_planes hook disagree (or the "
                       "planes with them are over %d floats)", n, g->derived_planes,
                       GAME_MAX_PLANE_FLOATS);
    if (g->n_symmetries < 0 || g->n_symmetries > GAME_MAX_SYMMETRIES ||
        (g->n_symmetries > 0 && !g->symmetries))
        return err_set(err, errlen, KZ_EINVAL, "game %s: n_symmetries %d is not in 0..%d", n,
                       g->n_symmetries, GAME_MAX_SYMMETRIES);
    for (int k = 0; k < g->n_symmetries; k++) {
        const game_symmetry *y = &g->symmetries[k];
        bool ok = y->name && y->cells && y->action &&
                  s_is_permutation(y->cells, NULL, g->height * g->width) &&
                  (!y->planes || s_is_permutation(NULL, y->planes, g->planes));
        if (ok) {
            uint8_t *hit = calloc((size_t)g->action_count, 1);
            KZ_CHECK(hit);
            for (int a = 0; a < g->action_count && ok; a++) {
                int b = y->action(a);
                ok = b >= 0 && b < g->action_count && !hit[b];
                if (ok)
                    hit[b] = 1;
            }
            free(hit);
        }
        if (!ok)
            return err_set(err, errlen, KZ_EINVAL,
                           "game %s: symmetry %d must name permutations of the cells, planes "
                           "and actions", n, k);
    }
    /* The initial position's string fits and reads back. */
    game_state s, t;
    g->init(&s);
    char pos[GAME_POSITION_CHARS + 2], why[200];
    g->format_position(&s, pos, sizeof pos);
    if ((int)strlen(pos) > g->position_chars)
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: the initial position's string is longer than position_chars "
                       "%d", n, g->position_chars);
    if (g->parse_position(&t, pos, why, sizeof why) != 0)
        return err_set(err, errlen, KZ_EINVAL,
                       "game %s: the initial position's string does not parse back: %s", n, why);
    /* unpack_state gives back a state that packs to the same bytes. */
    uint8_t a[GAME_PACKED_BYTES], b[GAME_PACKED_BYTES];
    g->pack(&s, a);
    if (g->unpack_state) {
        if (g->unpack_state(a, &t) != 0)
            return err_set(err, errlen, KZ_EINVAL,
                           "game %s: unpack_state refuses the initial position's bytes", n);
        g->pack(&t, b);
        if (memcmp(a, b, (size_t)g->packed_bytes))
            return err_set(err, errlen, KZ_EINVAL,
                           "game %s: unpack_state's state packs to other bytes", n);
    }
    return 0;
}

int game_register(const game_def *g, char *err, size_t errlen)
{
    int rc = game_check(g, err, errlen);
    if (rc)
        return rc;
    if (game_find(g->name))
        return err_set(err, errlen, KZ_EINVAL, "game %s is registered already", g->name);
    if (N_BUILTIN + s_n_extra >= GAME_MAX_GAMES)
        return err_set(err, errlen, KZ_EINVAL, "game %s: %d games are registered already",
                       g->name, GAME_MAX_GAMES);
    s_extra[s_n_extra++] = g;
    return 0;
}

/* The Alquerque family's reasons (enum game_reason). */
static const char *const s_family_reasons[GAME_REASON_COUNT] = {
    "none", "no-pieces", "no-moves", "no-progress", "repetition", "length",
};

int game_reason_count(const game_def *g)
{
    return g->reasons ? g->n_reasons : GAME_REASON_COUNT;
}

const char *game_reason_name(const game_def *g, int reason)
{
    const char *const *names = g->reasons ? g->reasons : s_family_reasons;
    return reason >= 0 && reason < game_reason_count(g) ? names[reason] : "unknown";
}

int game_reason_parse(const game_def *g, const char *name)
{
    for (int k = 0; name && k < game_reason_count(g); k++)
        if (!strcmp(name, game_reason_name(g, k)))
            return k;
    return -1;
}

float game_result_value(const game_def *g, game_result r, int player)
{
    if (!r.over || r.winner < 0)
        return 0.0f;
    int max = g->max_points > 1 ? g->max_points : 1;
    int pts = r.points > 0 ? r.points : 1;
    float v = (float)pts / (float)max;
    return r.winner == player ? v : -v;
}

void game_legal_mask(const game_def *g, const game_state *s, uint8_t *mask)
{
    if (g->legal_mask) {
        g->legal_mask(s, mask);
        return;
    }
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    memset(mask, 0, (size_t)g->action_count);
    for (int i = 0; i < n; i++)
        mask[legal[i]] = 1;
}

bool game_is_legal(const game_def *g, const game_state *s, int action)
{
    if (g->is_legal)
        return g->is_legal(s, action);
    if (action < 0 || action >= g->action_count)
        return false;
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    for (int i = 0; i < n; i++)
        if (legal[i] == action)
            return true;
    return false;
}

void game_symmetry_planes(const game_def *g, int k, float *planes)
{
    assert(k >= 0 && k < g->n_symmetries);
    const game_symmetry *y = &g->symmetries[k];
    int HW = g->height * g->width, C = g->planes;
    float tmp[GAME_MAX_PLANE_FLOATS]; /* (C, H, W) */
    memcpy(tmp, planes, (size_t)C * HW * sizeof *planes);
    for (int p = 0; p < C; p++) {
        float *to = planes + (size_t)(y->planes ? y->planes[p] : p) * HW;
        const float *from = tmp + (size_t)p * HW;
        for (int i = 0; i < HW; i++)
            to[y->cells[i]] = from[i];
    }
}

void game_symmetry_policy(const game_def *g, int k, float *pi)
{
    assert(k >= 0 && k < g->n_symmetries);
    int A = g->action_count;
    float tmp[GAME_MAX_ACTIONS]; /* (A): 32 KB of stack at most */
    memcpy(tmp, pi, (size_t)A * sizeof *pi);
    for (int a = 0; a < A; a++)
        pi[g->symmetries[k].action(a)] = tmp[a];
}

int game_result_for(game_result r, int player)
{
    if (!r.over || r.winner < 0)
        return 0;
    return r.winner == player ? 1 : -1;
}

/* The leaves at depth below s, a depth an action (hops) or, with turns, a
 * whole turn: the hops of one turn keep its depth, so that depth 0 is
 * reached only at a turn's start. */
static uint64_t s_perft(const game_def *g, const game_state *s, int depth, bool turns)
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
        total += s_perft(g, &c, turns && g->mid_turn(&c) ? depth : depth - 1, turns);
    }
    return total;
}

uint64_t game_perft_generic(const game_def *g, const game_state *s, int depth)
{
    return s_perft(g, s, depth, false);
}

uint64_t game_perft(const game_def *g, const game_state *s, int depth)
{
    return g->perft ? g->perft(s, depth) : game_perft_generic(g, s, depth);
}

uint64_t game_perft_turns(const game_def *g, const game_state *s, int depth)
{
    return s_perft(g, s, depth, true);
}

/* game_render_hop_turn's first half: the marks and the text of the turn,
 * the state reached in *s. */
static void s_turn_marks(const game_def *g, const game_state *from, const uint16_t *actions,
                         int n, int squares, int (*over)(int from, int to), char *marks,
                         game_state *s, char *last, size_t lastlen)
{
    g->copy(s, from);
    last[0] = 0;
    if (n)
        snprintf(last, lastlen, "last: %s ", g->player_name(g->to_move(s)));
    for (int k = 0; k < n; k++) {
        char a[16];
        g->format_action(actions[k], a, sizeof a);
        int src = actions[k] / squares, dst = actions[k] % squares, x = over(src, dst);
        if (x >= 0) {
            char *dash = strchr(a, '-');
            if (dash)
                *dash = 'x';
            marks[x] = 'x';
        }
        if (!marks[src] || marks[src] == 'l')
            marks[src] = 'o';
        marks[dst] = 'l';
        size_t used = strlen(last);
        snprintf(last + used, lastlen - used, "%s%s", k ? ", " : "", a);
        g->apply(s, actions[k]);
    }
}

void game_render_hop_turn(const game_def *g, const game_state *from, const uint16_t *actions,
                          int n, bool turned, FILE *out, int squares,
                          int (*over)(int from, int to),
                          void (*draw)(const game_state *s, const char *marks, bool turned,
                                       FILE *out))
{
    assert(squares <= GAME_HOP_SQUARES);
    char marks[GAME_HOP_SQUARES] = {0}, last[200];
    game_state s;
    s_turn_marks(g, from, actions, n, squares, over, marks, &s, last, sizeof last);
    draw(&s, marks, turned, out);
    if (last[0])
        fprintf(out, "  %s   (<p> where it went, * where it came from, x what it took)\n", last);
}

void game_draw_hop_square(FILE *out, char piece, char mark, bool chain)
{
    if (piece == '.' && mark == 'o')
        piece = '*';
    else if (piece == '.' && mark == 'x')
        piece = 'x';
    if (chain)
        fprintf(out, "[%c]", piece);
    else if (mark == 'l')
        fprintf(out, "<%c>", piece);
    else
        fprintf(out, " %c ", piece);
}

int game_parse_hop_action(const char *str, int (*point)(const char **p), int squares,
                          int *action)
{
    if (!str)
        return KZ_EINVAL;
    const char *p = str;
    int src = point(&p);
    if (src < 0 || (*p != '-' && *p != 'x' && *p != 'X'))
        return KZ_EINVAL;
    p++;
    int dst = point(&p);
    if (dst < 0 || *p)
        return KZ_EINVAL;
    *action = src * squares + dst;
    return 0;
}

void game_dice_seed(rng_t *dice, uint64_t seed) { rng_seed(dice, mix64(seed ^ GAME_DICE_KEY)); }

int game_chance_draw(const game_def *g, const game_state *s, rng_t *dice)
{
    uint16_t acts[GAME_MAX_LEGAL];
    float probs[GAME_MAX_LEGAL];
    assert(g->is_chance && g->is_chance(s));
    int n = g->legal_actions(s, acts);
    KZ_CHECK(n > 0);
    g->chance_probs(s, probs);
    float u = (float)rng_uniform(dice), sum = 0;
    for (int i = 0; i < n; i++) {
        sum += probs[i];
        if (u < sum)
            return acts[i];
    }
    return acts[n - 1];
}
