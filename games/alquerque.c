/* alquerque: the rules engine of Alquerque (docs/rules-alquerque.md A1-A20).
 *
 * Representation. Bitboards in 32-bit words, bit sq = point sq: the mover's
 * pieces and the other side's (swapped when the turn passes), and A6's
 * memory as two words over both colours in the board's own orientation: the
 * pieces that may not step to the left (their last move was a step to the
 * right) and those that may not step to the right. Per point, tables built
 * once list the simple moves of each colour (A4, A5; ascending) and the
 * jumps (A7; ascending by landing point), so that the legal actions come
 * out in ascending order without sorting.
 *
 * No history is kept: nothing in A1-A13 depends on earlier positions, and
 * A13 bounds every game (the turn count serves A14 only). */
#include "games/alquerque.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/board5.h"
#include "common/util.h"
#include "games/view.h"

#define ALL_POINTS 0x1ffffffu
#define ROW0 0x1fu
#define ROW4 (0x1fu << 20)
#define COL0 0x108421u          /* points 0, 5, 10, 15, 20 */
#define COL4 (COL0 << 4)        /* points 4, 9, 14, 19, 24 */
#define MAX_SIDE 12             /* A18: pieces of a side at most */

typedef struct alq_state {
    uint32_t own;      /* the pieces of the side to move */
    uint32_t opp;      /* the other side's pieces */
    uint32_t no_left;  /* A6: pieces (either colour) that may not step to col - 1 */
    uint32_t no_right; /* A6: pieces that may not step to col + 1 */
    uint16_t ply;      /* completed turns (A14) */
    uint8_t side;      /* player to move: 0 Light, 1 Dark */
    int8_t chain;      /* point of the piece that must jump on, -1 at a turn start */
} alq_state;

_Static_assert(sizeof(alq_state) <= GAME_STATE_BYTES, "alq_state must fit game_state");

static struct {
    uint8_t n_moves[2][ALQ_POINTS];    /* simple moves of a colour's piece on sq (A4, A5) */
    uint8_t moves[2][ALQ_POINTS][5];   /* their destinations, ascending */
    uint8_t n_jumps[ALQ_POINTS];       /* jumps from sq (A7) */
    uint8_t jump_over[ALQ_POINTS][8];  /* the point jumped, by ascending landing point */
    uint8_t jump_land[ALQ_POINTS][8];  /* the landing point */
    int8_t over[ALQ_POINTS][ALQ_POINTS]; /* the point between src and dst of a jump, else -1 */
    uint32_t jump_reach[ALQ_POINTS];   /* the neighbours of sq with a point beyond on the line */
    uint16_t rot_action[ALQ_ACTIONS];  /* A15: the action turned by 180 degrees */
    uint16_t mirror_action[ALQ_ACTIONS]; /* A17: the action mirrored left to right */
} T;

static int s_cmp_u8(const void *a, const void *b)
{
    return (int)*(const uint8_t *)a - (int)*(const uint8_t *)b;
}

/* Filled once before main() runs; read-only afterwards (so thread-safe). */
__attribute__((constructor)) static void s_init_tables(void)
{
    memset(&T, 0, sizeof T);
    memset(T.over, -1, sizeof T.over);
    for (int sq = 0; sq < ALQ_POINTS; sq++) {
        int r = sq / 5;
        for (int side = 0; side < 2; side++) {
            if (r == (side ? 0 : 4))
                continue; /* A5: no simple move on the opponent's base row */
            for (int d = 0; d < 8; d++) {
                int to = board5_along(sq, d, 1);
                int dr = board5_dr[d] * (side ? -1 : 1); /* rows gained towards the opponent */
                if (to >= 0 && dr >= 0)           /* A4: forward or sideways */
                    T.moves[side][sq][T.n_moves[side][sq]++] = (uint8_t)to;
            }
            qsort(T.moves[side][sq], T.n_moves[side][sq], 1, s_cmp_u8);
        }
        /* Jumps, sorted by landing point (a landing point has one line to sq). */
        int n = 0;
        uint8_t land[8], over[8];
        for (int d = 0; d < 8; d++) {
            int mid = board5_along(sq, d, 1), to = board5_along(sq, d, 2);
            if (mid >= 0 && to >= 0) {
                land[n] = (uint8_t)to;
                over[n++] = (uint8_t)mid;
                T.over[sq][to] = (int8_t)mid;
                T.jump_reach[sq] |= 1u << mid;
            }
        }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (land[j] < land[i]) {
                    uint8_t t = land[i];
                    land[i] = land[j], land[j] = t;
                    t = over[i], over[i] = over[j], over[j] = t;
                }
        T.n_jumps[sq] = (uint8_t)n;
        memcpy(T.jump_land[sq], land, (size_t)n);
        memcpy(T.jump_over[sq], over, (size_t)n);
    }
    for (int a = 0; a < ALQ_ACTIONS; a++) {
        T.rot_action[a] = (uint16_t)board5_rot_action(a);
        T.mirror_action[a] = (uint16_t)board5_mirror_action(a);
    }
}

static inline alq_state *S(game_state *g) { return (alq_state *)g->bytes; }
static inline const alq_state *CS(const game_state *g) { return (const alq_state *)g->bytes; }
static inline int s_lsb(uint32_t x) { return __builtin_ctz(x); }
static inline uint32_t s_colour(const alq_state *s, int c)
{
    return c == s->side ? s->own : s->opp;
}

/* The jumps of the mover's piece on sq (A7), appended to out; their count. */
static inline int s_jumps(const alq_state *s, int sq, uint16_t *out)
{
    if (!(T.jump_reach[sq] & s->opp))
        return 0;
    uint32_t empty = ALL_POINTS & ~(s->own | s->opp);
    int n = 0;
    for (int k = 0; k < T.n_jumps[sq]; k++)
        if ((s->opp >> T.jump_over[sq][k] & 1) && (empty >> T.jump_land[sq][k] & 1))
            out[n++] = (uint16_t)(sq * 25 + T.jump_land[sq][k]);
    return n;
}

/* Whether the mover's piece on sq can jump (A7). */
static inline bool s_can_jump(const alq_state *s, int sq)
{
    if (!(T.jump_reach[sq] & s->opp))
        return false;
    uint32_t empty = ALL_POINTS & ~(s->own | s->opp);
    for (int k = 0; k < T.n_jumps[sq]; k++)
        if ((s->opp >> T.jump_over[sq][k] & 1) && (empty >> T.jump_land[sq][k] & 1))
            return true;
    return false;
}

/* The simple moves of the mover's piece on sq (A4, A5, A6), appended. */
static inline int s_steps(const alq_state *s, int sq, uint16_t *out)
{
    uint32_t empty = ALL_POINTS & ~(s->own | s->opp);
    int n = 0;
    for (int k = 0; k < T.n_moves[s->side][sq]; k++) {
        int to = T.moves[s->side][sq][k];
        if (!(empty >> to & 1))
            continue;
        if ((to == sq - 1 && (s->no_left >> sq & 1)) || (to == sq + 1 && (s->no_right >> sq & 1)))
            continue; /* A6: not back where its last sideways step came from */
        out[n++] = (uint16_t)(sq * 25 + to);
    }
    return n;
}

/* The legal actions, ascending (A8, A9, A11); their count. */
static int s_legal(const alq_state *s, uint16_t *out)
{
    if (s->chain >= 0)
        return s_jumps(s, s->chain, out); /* A9: the same piece jumps on */
    int n = 0;
    for (uint32_t m = s->own; m; m &= m - 1)
        n += s_jumps(s, s_lsb(m), out + n);
    if (n)
        return n; /* A8: captures are compulsory, any of them */
    for (uint32_t m = s->own; m; m &= m - 1)
        n += s_steps(s, s_lsb(m), out + n);
    return n;
}

/* Whether the mover has a legal action (A12), without listing them. */
static bool s_has_action(const alq_state *s)
{
    uint16_t tmp[8];
    for (uint32_t m = s->own; m; m &= m - 1)
        if (s_can_jump(s, s_lsb(m)) || s_steps(s, s_lsb(m), tmp))
            return true;
    return false;
}

static int alq_legal_actions(const game_state *g, uint16_t *out)
{
    const alq_state *s = CS(g);
    if (s->chain < 0 && s->ply >= ALQ_MAX_PLIES)
        return 0;
    return s_legal(s, out);
}

static void alq_copy(game_state *dst, const game_state *src)
{
    memcpy(dst->bytes, src->bytes, sizeof(alq_state));
}

static void s_end_turn(alq_state *s)
{
    uint32_t t = s->own;
    s->own = s->opp;
    s->opp = t;
    s->side ^= 1;
    s->chain = -1;
    s->ply++;
}

/* Plays a legal action (src, dst) on s (A4-A11). */
static inline void s_apply(alq_state *s, int src, int dst)
{
    uint32_t sb = 1u << src, db = 1u << dst;
    s->own = (s->own & ~sb) | db;
    /* A6: the piece's memory goes with it, replaced by this move's. */
    s->no_left &= ~(sb | db);
    s->no_right &= ~(sb | db);
    int over = T.over[src][dst];
    if (over >= 0) {
        uint32_t ob = 1u << over;
        s->opp &= ~ob; /* A7, A10: taken at once, its memory with it */
        s->no_left &= ~ob;
        s->no_right &= ~ob;
        if (s_can_jump(s, dst)) {
            s->chain = (int8_t)dst; /* A9: the same piece must jump on */
            return;
        }
    } else if (dst == src + 1) {
        s->no_left |= db; /* stepped right: may not step back left */
    } else if (dst == src - 1) {
        s->no_right |= db;
    }
    s_end_turn(s);
}

static void alq_apply(game_state *g, int action)
{
    assert(action >= 0 && action < ALQ_ACTIONS);
    assert(CS(g)->own >> (action / 25) & 1);
    s_apply(S(g), action / 25, action % 25);
}

/* Perft (A20) as game_perft's generic loop counts it, without its indirect
 * calls: a turn start with no legal action (A12) or at A14's limit counts
 * nothing; every child is made in full. */
static uint64_t s_perft(const alq_state *s, int depth)
{
    if (depth == 0)
        return 1;
    if (s->chain < 0 && s->ply >= ALQ_MAX_PLIES)
        return 0;
    uint16_t legal[GAME_MAX_LEGAL];
    int n = s_legal(s, legal);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        alq_state c = *s;
        s_apply(&c, legal[i] / 25, legal[i] % 25);
        total += s_perft(&c, depth - 1);
    }
    return total;
}

static uint64_t alq_perft(const game_state *g, int depth) { return s_perft(CS(g), depth); }

static int alq_to_move(const game_state *g) { return CS(g)->side; }
static bool alq_mid_turn(const game_state *g) { return CS(g)->chain >= 0; }
static int alq_ply(const game_state *g) { return CS(g)->ply; }

static game_result alq_result(const game_state *g)
{
    const alq_state *s = CS(g);
    game_result r = {false, -1, GAME_REASON_NONE, 0};
    if (s->chain >= 0)
        return r; /* A12: decided only at the start of a turn */
    int me = s->side;
    if (!s->own)
        r = (game_result){true, me ^ 1, GAME_REASON_NO_PIECES, 0};
    else if (!s_has_action(s))
        r = (game_result){true, me ^ 1, GAME_REASON_NO_MOVES, 0};
    else if (s->ply >= ALQ_MAX_PLIES)
        r = (game_result){true, -1, GAME_REASON_LENGTH, 0}; /* A14: never reached (A13) */
    return r;
}

static void alq_init(game_state *g)
{
    memset(g, 0, sizeof *g);
    alq_state *s = S(g);
    s->own = 0x3ffu | 1u << 13 | 1u << 14;      /* A2: Light on 0..9, 13, 14 */
    s->opp = (0x3ffu << 15) | 1u << 10 | 1u << 11; /* Dark on 15..24, 10, 11 */
    s->chain = -1;
}

/* A15, A16: the canonical planes (C = 7, H = W = 5). For Dark the board is
 * turned, and left and right with it. */
static void s_planes(uint32_t own, uint32_t opp, uint32_t nl, uint32_t nr, int side, int chain,
                     float *out)
{
    memset(out, 0, sizeof(float) * 7 * ALQ_POINTS);
    if (side) {
        uint32_t t = nl;
        nl = nr, nr = t;
    }
    for (uint32_t m = own | opp; m; m &= m - 1) {
        int sq = s_lsb(m), c = side ? 24 - sq : sq;
        bool mine = own >> sq & 1;
        out[(mine ? 0 : 1) * ALQ_POINTS + c] = 1.0f;
        if (nl >> sq & 1)
            out[(mine ? 2 : 4) * ALQ_POINTS + c] = 1.0f;
        if (nr >> sq & 1)
            out[(mine ? 3 : 5) * ALQ_POINTS + c] = 1.0f;
    }
    if (chain >= 0)
        out[6 * ALQ_POINTS + (side ? 24 - chain : chain)] = 1.0f;
}

static void alq_encode_planes(const game_state *g, float *out)
{
    const alq_state *s = CS(g);
    s_planes(s->own, s->opp, s->no_left, s->no_right, s->side, s->chain, out);
}

static int alq_canonical_action(const game_state *g, int action)
{
    assert(action >= 0 && action < ALQ_ACTIONS);
    return CS(g)->side == 0 ? action : T.rot_action[action];
}

static int alq_mirror_action(int action)
{
    assert(action >= 0 && action < ALQ_ACTIONS);
    return T.mirror_action[action];
}

/* A17: the mirror's cells, (r, c) -> (r, 4 - c); "may not step left" and
 * "may not step right" exchanged (planes 2 <-> 3, 4 <-> 5). */
static const int8_t s_mirror_planes[7] = {0, 1, 3, 2, 5, 4, 6};
static const game_symmetry s_symmetries[] = {
    {.name = "mirror", .cells = board5_mirror_cells, .planes = s_mirror_planes,
     .action = alq_mirror_action},
};

static uint64_t alq_hash(const game_state *g)
{
    const alq_state *s = CS(g);
    uint64_t light = s_colour(s, 0), dark = s_colour(s, 1);
    uint64_t memory = s->no_left | (uint64_t)s->no_right << 32;
    return mix64(light | dark << 32) ^ mix64(memory + 0x616c71) ^
           mix64((uint64_t)s->side | (uint64_t)(uint8_t)(s->chain + 1) << 8 | 0x71ull << 40);
}

/* Packed (18 bytes): Light, Dark, no_left, no_right as little-endian u32,
 * the side, chain + 1. */
static void alq_pack(const game_state *g, uint8_t *out)
{
    const alq_state *s = CS(g);
    le_put32(out, s_colour(s, 0));
    le_put32(out + 4, s_colour(s, 1));
    le_put32(out + 8, s->no_left);
    le_put32(out + 12, s->no_right);
    out[16] = s->side;
    out[17] = (uint8_t)(s->chain + 1);
}

/* Whether these words are a position A18 accepts (the chain piece checked
 * by the caller): both colours apart, at most 12 each, the memory on pieces
 * able to have stepped sideways there. */
static bool s_words_ok(uint32_t light, uint32_t dark, uint32_t nl, uint32_t nr)
{
    return !((light | dark | nl | nr) & ~ALL_POINTS) && !(light & dark) &&
           __builtin_popcount(light) <= MAX_SIDE && __builtin_popcount(dark) <= MAX_SIDE &&
           !(nl & nr) && !((nl | nr) & ~(light | dark)) && !(nl & COL0) && !(nr & COL4) &&
           !((nl | nr) & ((light & ROW4) | (dark & ROW0)));
}

static int alq_unpack_planes(const uint8_t *in, float *out)
{
    uint32_t light = le_get32(in), dark = le_get32(in + 4), nl = le_get32(in + 8),
             nr = le_get32(in + 12);
    int side = in[16], chain = (int)in[17] - 1;
    if (!s_words_ok(light, dark, nl, nr) || side > 1 || chain >= ALQ_POINTS ||
        (chain >= 0 && (!((side ? dark : light) >> chain & 1) || ((nl | nr) >> chain & 1))))
        return KZ_ECORRUPT;
    s_planes(side ? dark : light, side ? light : dark, nl, nr, side, chain, out);
    return 0;
}

char alquerque_piece_at(const game_state *g, int sq)
{
    const alq_state *s = CS(g);
    return s_colour(s, 0) >> sq & 1 ? 'l' : s_colour(s, 1) >> sq & 1 ? 'd' : '.';
}

/* A point 0..24 in decimal at *p (one or two digits); -1 if none. */
static int s_point(const char **p)
{
    const char *q = *p;
    if (!isdigit((unsigned char)q[0]))
        return -1;
    int v = q[0] - '0';
    q++;
    if (isdigit((unsigned char)q[0]) && v != 0) {
        v = v * 10 + (q[0] - '0');
        q++;
    }
    if (v >= ALQ_POINTS || isdigit((unsigned char)q[0]))
        return -1;
    *p = q;
    return v;
}

/* A18: 25 points, a space, l or d, then " CHAIN" and " FROM-TO" tokens. */
static int alq_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    if (!str || strlen(str) < 27 || str[25] != ' ' || (str[26] != 'l' && str[26] != 'd') ||
        (str[27] && str[27] != ' '))
        return err_set(err, errlen, KZ_EINVAL,
                       "a position is 25 points of . l d, a space and l or d (A18)");
    uint32_t light = 0, dark = 0, nl = 0, nr = 0;
    for (int sq = 0; sq < ALQ_POINTS; sq++) {
        if (str[sq] == 'l')
            light |= 1u << sq;
        else if (str[sq] == 'd')
            dark |= 1u << sq;
        else if (str[sq] != '.')
            return err_set(err, errlen, KZ_EINVAL, "point %d: '%c' is not . l or d (A18)", sq,
                           str[sq]);
    }
    if (__builtin_popcount(light) > MAX_SIDE || __builtin_popcount(dark) > MAX_SIDE)
        return err_set(err, errlen, KZ_EINVAL, "more than %d pieces of a side (A18)", MAX_SIDE);
    int side = str[26] == 'd', chain = -1;
    const char *p = str + 27;
    bool first = true;
    while (*p) {
        if (*p != ' ' || p[1] == ' ' || !p[1])
            return err_set(err, errlen, KZ_EINVAL, "tokens after the side are one space apart");
        p++;
        const char *tok = p;
        int a = s_point(&p);
        if (a < 0)
            return err_set(err, errlen, KZ_EINVAL, "'%.8s': not a point 0..24", tok);
        if (*p != '-') {
            if (!first || (*p && *p != ' '))
                return err_set(err, errlen, KZ_EINVAL,
                               "'%.8s': the chain point comes first, alone", tok);
            chain = a;
            first = false;
            continue;
        }
        p++;
        int b = s_point(&p);
        if (b < 0 || (*p && *p != ' '))
            return err_set(err, errlen, KZ_EINVAL, "'%.8s': write a remembered step FROM-TO",
                           tok);
        first = false;
        if (!((light | dark) >> b & 1) || b / 5 != a / 5 || (a != b - 1 && a != b + 1))
            return err_set(err, errlen, KZ_EINVAL,
                           "'%d-%d': not a sideways step onto a piece (A6, A18)", a, b);
        if (((nl | nr) >> b & 1))
            return err_set(err, errlen, KZ_EINVAL, "'%d-%d': a second step for one piece", a,
                           b);
        if (a < b)
            nl |= 1u << b;
        else
            nr |= 1u << b;
    }
    if (!s_words_ok(light, dark, nl, nr))
        return err_set(err, errlen, KZ_EINVAL,
                       "a remembered step on a piece standing on its opponent's base row (A5)");
    game_state t;
    memset(&t, 0, sizeof t);
    alq_state *s = S(&t);
    s->own = side ? dark : light;
    s->opp = side ? light : dark;
    s->no_left = nl;
    s->no_right = nr;
    s->side = (uint8_t)side;
    s->chain = -1;
    if (chain >= 0) {
        if (!(s->own >> chain & 1) || !s_can_jump(s, chain) || ((nl | nr) >> chain & 1))
            return err_set(err, errlen, KZ_EINVAL,
                           "point %d: no piece of the side to move that can jump on (A9)",
                           chain);
        s->chain = (int8_t)chain;
    }
    *g = t;
    return 0;
}

static void alq_format_position(const game_state *g, char *buf, size_t len)
{
    const alq_state *s = CS(g);
    char tmp[GAME_POSITION_CHARS + 1];
    for (int sq = 0; sq < ALQ_POINTS; sq++)
        tmp[sq] = alquerque_piece_at(g, sq);
    size_t n = 25;
    n += (size_t)snprintf(tmp + n, sizeof tmp - n, " %c", s->side ? 'd' : 'l');
    if (s->chain >= 0)
        n += (size_t)snprintf(tmp + n, sizeof tmp - n, " %d", s->chain);
    for (int sq = 0; sq < ALQ_POINTS; sq++) {
        if (s->no_left >> sq & 1)
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, " %d-%d", sq - 1, sq);
        else if (s->no_right >> sq & 1)
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, " %d-%d", sq + 1, sq);
    }
    snprintf(buf, len, "%s", tmp);
}

/* A point as decimal 0..24 or algebraic a1..e5 (A1) at *p; -1 if neither. */
static int s_any_point(const char **p)
{
    const char *q = *p;
    if (q[0] >= 'a' && q[0] <= 'e' && q[1] >= '1' && q[1] <= '5') {
        *p = q + 2;
        return (q[1] - '1') * 5 + (q[0] - 'a');
    }
    return s_point(p);
}

/* A19: "src-dst" or "srcxdst", decimal or algebraic. */
static int alq_parse_action(const char *str, int *action)
{
    return game_parse_hop_action(str, s_any_point, 25, action);
}

static void alq_format_action(int action, char *buf, size_t len)
{
    snprintf(buf, len, "%d-%d", action / 25, action % 25);
}

static const char *alq_player_name(int player) { return player == 0 ? "light" : "dark"; }

static bool alq_is_capture(const game_state *g, int action)
{
    (void)g;
    return action >= 0 && action < ALQ_ACTIONS && T.over[action / 25][action % 25] >= 0;
}

/* The board with its lines (A1), row 4 at the top or, turned, at the bottom;
 * marks (may be NULL) per point: 'l' where the last turn's piece landed,
 * 'o' a point it left, 'x' a piece it took. */
static void s_draw(const game_state *g, const char *marks, bool turned, FILE *out)
{
    const alq_state *s = CS(g);
    for (int i = 0; i < 5; i++) {
        int r = board5_print_row_start(out, i, turned);
        for (int j = 0; j < 5; j++) {
            int c = turned ? 4 - j : j, sq = r * 5 + c;
            game_draw_hop_square(out, alquerque_piece_at(g, sq), marks ? marks[sq] : 0,
                                 sq == s->chain);
            if (j < 4)
                fputs("-", out);
        }
        board5_print_row_end(out, i, turned);
    }
    char pos[GAME_POSITION_CHARS + 1];
    alq_format_position(g, pos, sizeof pos);
    fprintf(out, "\n  %s to move, ply %d%s", alq_player_name(s->side), s->ply,
            turned ? " (turned: Dark's side at the bottom)" : "");
    if (s->chain >= 0)
        fprintf(out, ", mid-sequence: the piece on %d must jump on", s->chain);
    fprintf(out, "\n  position: %s\n", pos);
}

static void alq_render(const game_state *g, FILE *out) { s_draw(g, NULL, false, out); }

/* The point a hop from src to dst jumps, or -1 (game_render_hop_turn). */
static int s_over(int src, int dst) { return T.over[src][dst]; }

/* kz play's board (game.h's render_turn): the last turn marked. */
static void alq_render_turn(const game_state *from, const uint16_t *actions, int n, bool turned,
                            FILE *out)
{
    game_render_hop_turn(&alquerque_game, from, actions, n, turned, out, ALQ_POINTS, s_over,
                         s_draw);
}

/* The baseline players' evaluation (game.h): 100 a piece, own minus other. */
static long alq_evaluate(const game_state *g)
{
    const alq_state *s = CS(g);
    return 100L * (__builtin_popcount(s->own) - __builtin_popcount(s->opp));
}

/* A8: the mover must capture when any piece can jump. */
static bool alq_must_capture(const game_state *g)
{
    const alq_state *s = CS(g);
    if (s->chain >= 0)
        return true;
    for (uint32_t m = s->own; m; m &= m - 1)
        if (s_can_jump(s, s_lsb(m)))
            return true;
    return false;
}

/* The balance of pieces over 12 (a side's at the start): the auxiliary
 * material head's target (game.h). */
static float alq_material(const game_state *g, int player)
{
    const alq_state *s = CS(g);
    int own = __builtin_popcount(s_colour(s, player));
    int opp = __builtin_popcount(s_colour(s, player ^ 1));
    return (float)(own - opp) / 12.0f;
}

/* The description for the web pages (view.h, docs/web.md): the board of A1,
 * light and dark men, positions as A18 writes them, actions as A19. */
static void alq_describe(strbuf *out)
{
    view_open(out, &alquerque_game, "#f3e6c4", "#5a2d12");
    view_alquerque_board(out, "#d9c7a0", "#4a3a22");
    view_hop_end(out, "ld", NULL, "\"side\", \"chain\", \"barred\"");
}

const game_def alquerque_game = {
    .name = "alquerque",
    .action_count = ALQ_ACTIONS,
    .planes = 7,
    .height = 5,
    .width = 5,
    .max_legal = 96, /* 12 pieces x 8 jumps; simple moves are fewer (5 each) */
    .packed_bytes = 18,
    .state_bytes = (int)sizeof(alq_state),
    .position_chars = 174, /* 25 + side + chain + 24 remembered steps of 6 characters */
    .simulations = 200,
    .dirichlet_alpha = 2.0f, /* about 5 legal actions at a turn start (4.5 over random games) */
    .n_symmetries = 1,
    .symmetries = s_symmetries,
    .init = alq_init,
    .legal_actions = alq_legal_actions,
    .copy = alq_copy,
    .apply = alq_apply,
    .to_move = alq_to_move,
    .mid_turn = alq_mid_turn,
    .ply = alq_ply,
    .result = alq_result,
    .encode_planes = alq_encode_planes,
    .canonical_action = alq_canonical_action,
    .hash = alq_hash,
    .pack = alq_pack,
    .unpack_planes = alq_unpack_planes,
    .parse_position = alq_parse_position,
    .format_position = alq_format_position,
    .parse_action = alq_parse_action,
    .format_action = alq_format_action,
    .render = alq_render,
    .player_name = alq_player_name,
    .perft = alq_perft,
    .material = alq_material,
    .evaluate = alq_evaluate,
    .must_capture = alq_must_capture,
    .describe = alq_describe,
    .render_turn = alq_render_turn,
    .legend = "Captures are compulsory, any of them (A8); a piece that has jumped jumps on while "
              "it can\n(A9). Pieces step forward or sideways, never back, not at all on the "
              "opponent's base\nrow (A5), and not back to where their last sideways step came "
              "from (A6). On the board:\nl Light, d Dark, <p> where the last move went, * where "
              "it came from, x a piece it took,\n[p] the piece that must jump on.\n",
    .is_capture = alq_is_capture,
};
