/* toy_game: the tests' tiny capture game (rules T1-T6 in toy_game.h), a
 * second game module written plainly (no speed work): lists of actions
 * built by walking the four directions of every man. */
#include "tests/harness/toy_game.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

typedef struct toy_state {
    uint16_t men[2]; /* South's and North's men, bit sq = cell sq */
    uint8_t side;    /* player to move */
    int8_t chain;    /* the man that must jump on, -1 at a turn start */
    uint8_t ply;     /* completed turns */
} toy_state;

static inline toy_state *S(game_state *g) { return (toy_state *)g->bytes; }
static inline const toy_state *CS(const game_state *g) { return (const toy_state *)g->bytes; }

static const int DR[4] = {1, -1, 0, 0}, DC[4] = {0, 0, 1, -1};

/* The cell k steps from sq in direction d, or -1 off the board (T1). */
static int s_step(int sq, int d, int k)
{
    int r = sq / 3 + k * DR[d], c = sq % 3 + k * DC[d];
    return r >= 0 && r < 3 && c >= 0 && c < 3 ? r * 3 + c : -1;
}

/* The captures of the man on sq (T3), appended to out; returns their count. */
static int s_captures(const toy_state *s, int sq, uint16_t *out)
{
    int n = 0, me = s->side;
    uint16_t occ = s->men[0] | s->men[1];
    for (int d = 0; d < 4; d++) {
        int mid = s_step(sq, d, 1), land = s_step(sq, d, 2);
        if (mid >= 0 && land >= 0 && (s->men[me ^ 1] >> mid & 1) && !(occ >> land & 1))
            out[n++] = (uint16_t)(sq * TOY_CELLS + land);
    }
    return n;
}

static void s_sort(uint16_t *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            uint16_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

/* Every legal action, ascending (T3, T4); their count. */
static int s_legal(const toy_state *s, uint16_t *out)
{
    int n = 0;
    if (s->chain >= 0) {
        n = s_captures(s, s->chain, out);
    } else {
        for (int sq = 0; sq < TOY_CELLS; sq++)
            if (s->men[s->side] >> sq & 1)
                n += s_captures(s, sq, out + n);
        if (n == 0) {
            uint16_t occ = s->men[0] | s->men[1];
            for (int sq = 0; sq < TOY_CELLS; sq++)
                for (int d = 0; d < 4 && (s->men[s->side] >> sq & 1); d++) {
                    int to = s_step(sq, d, 1);
                    if (to >= 0 && !(occ >> to & 1))
                        out[n++] = (uint16_t)(sq * TOY_CELLS + to);
                }
        }
    }
    s_sort(out, n);
    return n;
}

static int toy_legal_actions(const game_state *g, uint16_t *out)
{
    const toy_state *s = CS(g);
    if (s->chain < 0 && (!s->men[s->side] || s->ply >= TOY_MAX_PLIES))
        return 0;
    return s_legal(s, out);
}

static void toy_legal_mask(const game_state *g, uint8_t *mask)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = toy_legal_actions(g, legal);
    memset(mask, 0, TOY_ACTIONS);
    for (int i = 0; i < n; i++)
        mask[legal[i]] = 1;
}

static bool toy_is_legal(const game_state *g, int action)
{
    if (action < 0 || action >= TOY_ACTIONS)
        return false;
    uint16_t legal[GAME_MAX_LEGAL];
    int n = toy_legal_actions(g, legal);
    for (int i = 0; i < n; i++)
        if (legal[i] == action)
            return true;
    return false;
}

static void toy_copy(game_state *dst, const game_state *src)
{
    memcpy(dst->bytes, src->bytes, sizeof(toy_state));
}

static bool toy_is_capture(const game_state *g, int action)
{
    (void)g;
    int d = action % TOY_CELLS - action / TOY_CELLS;
    return d == 2 || d == -2 || d == 6 || d == -6;
}

static void toy_apply(game_state *g, int action)
{
    assert(toy_is_legal(g, action));
    toy_state *s = S(g);
    int me = s->side, src = action / TOY_CELLS, dst = action % TOY_CELLS;
    s->men[me] = (uint16_t)((s->men[me] & ~(1u << src)) | 1u << dst);
    if (toy_is_capture(g, action)) {
        s->men[me ^ 1] &= (uint16_t)~(1u << (src + dst) / 2);
        uint16_t more[4];
        if (s_captures(s, dst, more) > 0) {
            s->chain = (int8_t)dst; /* T3: the same man jumps on */
            return;
        }
    }
    s->chain = -1;
    s->side ^= 1;
    s->ply++;
}

static int toy_to_move(const game_state *g) { return CS(g)->side; }
static bool toy_mid_turn(const game_state *g) { return CS(g)->chain >= 0; }
static int toy_ply(const game_state *g) { return CS(g)->ply; }

static game_result toy_result(const game_state *g)
{
    const toy_state *s = CS(g);
    game_result r = {false, -1, GAME_REASON_NONE, 0};
    if (s->chain >= 0)
        return r;
    uint16_t legal[GAME_MAX_LEGAL];
    if (!s->men[s->side])
        r = (game_result){true, s->side ^ 1, GAME_REASON_NO_PIECES, 0};
    else if (s_legal(s, legal) == 0)
        r = (game_result){true, s->side ^ 1, GAME_REASON_NO_MOVES, 0};
    else if (s->ply >= TOY_MAX_PLIES)
        r = (game_result){true, -1, GAME_REASON_LENGTH, 0};
    return r;
}

static void toy_init(game_state *g)
{
    memset(g, 0, sizeof *g);
    toy_state *s = S(g);
    s->men[0] = 0x005; /* T2: cells 0 and 2 */
    s->men[1] = 0x140; /* cells 6 and 8 */
    s->chain = -1;
}

/* The mover's view (T6): turned for North. */
static int s_view(int side, int sq) { return side ? TOY_CELLS - 1 - sq : sq; }

static void s_planes(uint16_t own, uint16_t opp, int side, int chain, int ply, float *out)
{
    memset(out, 0, sizeof(float) * 4 * TOY_CELLS);
    for (int sq = 0; sq < TOY_CELLS; sq++) {
        int c = s_view(side, sq);
        out[0 * TOY_CELLS + c] = (float)(own >> sq & 1);
        out[1 * TOY_CELLS + c] = (float)(opp >> sq & 1);
        out[3 * TOY_CELLS + c] = (float)ply / TOY_MAX_PLIES;
    }
    if (chain >= 0)
        out[2 * TOY_CELLS + s_view(side, chain)] = 1.0f;
}

static void toy_encode_planes(const game_state *g, float *out)
{
    const toy_state *s = CS(g);
    s_planes(s->men[s->side], s->men[s->side ^ 1], s->side, s->chain, s->ply, out);
}

static int toy_canonical_action(const game_state *g, int action)
{
    int side = CS(g)->side;
    return s_view(side, action / TOY_CELLS) * TOY_CELLS + s_view(side, action % TOY_CELLS);
}

/* 4 bytes, little-endian: South 9 bits, North 9, side 1, chain + 1 4, ply 5. */
static uint32_t s_word(const toy_state *s)
{
    return (uint32_t)s->men[0] | (uint32_t)s->men[1] << 9 | (uint32_t)s->side << 18 |
           (uint32_t)(s->chain + 1) << 19 | (uint32_t)s->ply << 23;
}

static uint64_t toy_hash(const game_state *g) { return mix64(s_word(CS(g)) + 0x70f); }

static void toy_pack(const game_state *g, uint8_t *out)
{
    uint32_t w = s_word(CS(g));
    for (int k = 0; k < 4; k++)
        out[k] = (uint8_t)(w >> (8 * k));
}

static int toy_unpack_planes(const uint8_t *in, float *out)
{
    uint32_t w = 0;
    for (int k = 0; k < 4; k++)
        w |= (uint32_t)in[k] << (8 * k);
    uint16_t m0 = w & 0x1ff, m1 = w >> 9 & 0x1ff;
    int side = w >> 18 & 1, chain = (int)(w >> 19 & 15) - 1, ply = (int)(w >> 23);
    if ((m0 & m1) || chain >= TOY_CELLS || ply > TOY_MAX_PLIES ||
        (chain >= 0 && !((side ? m1 : m0) >> chain & 1)))
        return KZ_ECORRUPT;
    s_planes(side ? m1 : m0, side ? m0 : m1, side, chain, ply, out);
    return 0;
}

static int toy_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    game_state t;
    memset(&t, 0, sizeof t);
    toy_state *s = S(&t);
    s->chain = -1;
    if (!str || strlen(str) < 11 || str[9] != ' ' || (str[10] != 's' && str[10] != 'n'))
        return err_set(err, errlen, KZ_EINVAL,
                       "a position is 9 cells of . s n, a space and s or n (T6)");
    for (int sq = 0; sq < TOY_CELLS; sq++) {
        if (str[sq] == 's')
            s->men[0] |= (uint16_t)(1u << sq);
        else if (str[sq] == 'n')
            s->men[1] |= (uint16_t)(1u << sq);
        else if (str[sq] != '.')
            return err_set(err, errlen, KZ_EINVAL, "cell %d: '%c' is not . s or n", sq, str[sq]);
    }
    s->side = str[10] == 'n';
    if (str[11]) {
        if (str[11] != ' ' || !isdigit((unsigned char)str[12]) || str[13] || str[12] > '8')
            return err_set(err, errlen, KZ_EINVAL, "after the side: a space and a cell 0..8");
        int c = str[12] - '0';
        uint16_t caps[4];
        s->chain = (int8_t)c;
        if (!(s->men[s->side] >> c & 1) || s_captures(s, c, caps) == 0)
            return err_set(err, errlen, KZ_EINVAL,
                           "cell %d: no man of the side to move that can capture", c);
    }
    *g = t;
    return 0;
}

static void toy_format_position(const game_state *g, char *buf, size_t len)
{
    const toy_state *s = CS(g);
    char tmp[16];
    for (int sq = 0; sq < TOY_CELLS; sq++)
        tmp[sq] = s->men[0] >> sq & 1 ? 's' : s->men[1] >> sq & 1 ? 'n' : '.';
    snprintf(tmp + 9, sizeof tmp - 9, " %c", s->side ? 'n' : 's');
    if (s->chain >= 0)
        snprintf(tmp + 11, sizeof tmp - 11, " %d", s->chain);
    snprintf(buf, len, "%s", tmp);
}

static int toy_parse_action(const char *str, int *action)
{
    if (!str || strlen(str) != 3 || !isdigit((unsigned char)str[0]) ||
        (str[1] != '-' && str[1] != 'x') || !isdigit((unsigned char)str[2]) || str[0] > '8' ||
        str[2] > '8')
        return KZ_EINVAL;
    *action = (str[0] - '0') * TOY_CELLS + (str[2] - '0');
    return 0;
}

static void toy_format_action(int action, char *buf, size_t len)
{
    snprintf(buf, len, "%d-%d", action / TOY_CELLS, action % TOY_CELLS);
}

static const char *toy_player_name(int player) { return player == 0 ? "south" : "north"; }

static void toy_render(const game_state *g, FILE *out)
{
    char pos[16];
    toy_format_position(g, pos, sizeof pos);
    for (int r = 2; r >= 0; r--)
        fprintf(out, "  %c %c %c\n", pos[r * 3], pos[r * 3 + 1], pos[r * 3 + 2]);
    fprintf(out, "  %s to move, ply %d\n  position: %s\n", toy_player_name(CS(g)->side),
            CS(g)->ply, pos);
}

/* Men count 100 each (player.h's baseline players). */
static long toy_evaluate(const game_state *g)
{
    const toy_state *s = CS(g);
    return 100L * (__builtin_popcount(s->men[s->side]) - __builtin_popcount(s->men[s->side ^ 1]));
}

static bool toy_must_capture(const game_state *g)
{
    const toy_state *s = CS(g);
    uint16_t caps[4];
    for (int sq = 0; sq < TOY_CELLS; sq++)
        if ((s->men[s->side] >> sq & 1) && s_captures(s, sq, caps))
            return true;
    return false;
}

static float toy_material(const game_state *g, int player)
{
    const toy_state *s = CS(g);
    return (float)(__builtin_popcount(s->men[player]) - __builtin_popcount(s->men[player ^ 1])) /
           3.0f;
}

const game_def toy_game = {
    .name = "toy",
    .action_count = TOY_ACTIONS,
    .planes = 4,
    .height = 3,
    .width = 3,
    .max_legal = 12,
    .packed_bytes = 4,
    .state_bytes = (int)sizeof(toy_state),
    .position_chars = 13,
    .simulations = 32,
    .dirichlet_alpha = 3.0f,
    .n_symmetries = 0,
    .symmetries = NULL,
    .init = toy_init,
    .legal_actions = toy_legal_actions,
    .legal_mask = toy_legal_mask,
    .is_legal = toy_is_legal,
    .copy = toy_copy,
    .apply = toy_apply,
    .to_move = toy_to_move,
    .mid_turn = toy_mid_turn,
    .ply = toy_ply,
    .result = toy_result,
    .encode_planes = toy_encode_planes,
    .canonical_action = toy_canonical_action,
    .hash = toy_hash,
    .pack = toy_pack,
    .unpack_planes = toy_unpack_planes,
    .parse_position = toy_parse_position,
    .format_position = toy_format_position,
    .parse_action = toy_parse_action,
    .format_action = toy_format_action,
    .render = toy_render,
    .player_name = toy_player_name,
    .material = toy_material,
    .evaluate = toy_evaluate,
    .must_capture = toy_must_capture,
    .is_capture = toy_is_capture,
};

/* Linked in, the game is there: the test runner and build/toy/'s programs. */
__attribute__((constructor)) static void s_register(void)
{
    char err[200];
    KZ_CHECK(game_register(&toy_game, err, sizeof err) == 0);
}
