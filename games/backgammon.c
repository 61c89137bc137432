/* backgammon: the rules engine of backgammon without the cube
 * (docs/rules-backgammon.md B1-B20).
 *
 * Representation. Each side's 25 counts in its own numbering (index i =
 * point i + 1, 24 the bar; borne off = 15 minus the sum); the mover's point
 * i faces the other side's point 23 - i. A turn: a chance state (the roll),
 * then the mover's atomic moves until `need` reaches 0. `need` is the most
 * dice the roll can play from here (B10), fixed when the roll is applied and
 * one less after each move: a move is legal when the rest of the roll can
 * still play need - 1 dice after it (B10), and, with both dice of a
 * non-double unplayed and only one of them playable, when it plays the
 * larger if it can (B11). A roll that plays nothing passes the turn at once
 * (B12): the state after it is the other side's roll. */
#include "games/backgammon.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/view.h"

enum { PH_OPENING = 0, PH_ROLL, PH_MOVE, PH_OVER };

typedef struct bg_state {
    uint8_t pts[2][25]; /* player p's checkers on its own points (B1), [p][24] its bar */
    uint8_t side;       /* the player to move (after the roll at a chance state) */
    uint8_t phase;      /* PH_* */
    uint8_t roll[2];    /* the roll being played, high die first (0 0 before any) */
    uint8_t left[7];    /* left[v]: dice of value v still to play */
    uint8_t need;       /* dice this turn must still play (B10) */
    uint8_t used;       /* dice played this turn */
    uint16_t ply;       /* completed turns */
} bg_state;

_Static_assert(sizeof(bg_state) <= GAME_STATE_BYTES, "bg_state must fit game_state");

static inline bg_state *S(game_state *g) { return (bg_state *)g->bytes; }
static inline const bg_state *CS(const game_state *g) { return (const bg_state *)g->bytes; }

static const char *const s_reasons[] = {"none", "single", "gammon", "backgammon", "length"};

/* ---- moves of one die ------------------------------------------------- */

static inline int s_off(const uint8_t *p) /* borne off */
{
    int n = 0;
    for (int i = 0; i < 25; i++)
        n += p[i];
    return BG_CHECKERS - n;
}

/* Whether the mover (own, facing opp) may move a checker from `from` with
 * die d (B6-B8, B13). */
static bool s_can(const uint8_t *own, const uint8_t *opp, int from, int d)
{
    if (!own[from] || (own[BG_BAR] && from != BG_BAR))
        return false; /* B7: the bar first */
    int to = from - d;
    if (to >= 0)
        return opp[23 - to] < 2; /* B6: not onto two or more */
    for (int i = 6; i < 25; i++)
        if (own[i])
            return false; /* B13: bear off only with all home */
    if (to == -1)
        return true;
    for (int i = from + 1; i < 6; i++)
        if (own[i])
            return false; /* B13: a higher die only from the highest point */
    return true;
}

/* Plays it; returns whether it hit (B8). */
static bool s_move(uint8_t *own, uint8_t *opp, int from, int d)
{
    int to = from - d;
    own[from]--;
    if (to < 0)
        return false;
    own[to]++;
    if (opp[23 - to] == 1) {
        opp[23 - to] = 0;
        opp[BG_BAR]++;
        return true;
    }
    return false;
}

/* The most dice of left[] the mover can play from here, stopping at `cap`
 * (B10). */
static int s_maxuse(const uint8_t *own, const uint8_t *opp, uint8_t *left, int cap)
{
    if (cap == 0)
        return 0;
    /* B15: with every checker off no die more plays; B10 then asks for the
     * move that plays the most dice even when the last checker could come
     * off sooner (as GNU Backgammon: 21 with one checker on the 2-point and
     * a blot on the 1-point must hit, 2/1* 1/off, not 2/off). */
    int best = 0;
    for (int d = 6; d >= 1; d--) {
        if (!left[d])
            continue;
        for (int from = 24; from >= 0; from--) {
            if (!s_can(own, opp, from, d))
                continue;
            uint8_t o2[25], p2[25];
            memcpy(o2, own, 25);
            memcpy(p2, opp, 25);
            s_move(o2, p2, from, d);
            left[d]--;
            int u = 1 + s_maxuse(o2, p2, left, cap - 1);
            left[d]++;
            if (u > best)
                best = u;
            if (best == cap)
                return best;
        }
    }
    return best;
}

static int s_left_count(const bg_state *s)
{
    int n = 0;
    for (int v = 1; v <= 6; v++)
        n += s->left[v];
    return n;
}

/* The legal checker moves of a PH_MOVE state, ascending (B9-B11). */
static int s_legal_moves(const bg_state *s, uint16_t *out)
{
    const uint8_t *own = s->pts[s->side], *opp = s->pts[s->side ^ 1];
    int n = 0;
    bool two_kinds = s->roll[0] != s->roll[1] && s->left[s->roll[0]] && s->left[s->roll[1]];
    int hi = s->roll[0];
    bool hi_ok = false;
    uint8_t left[7];
    memcpy(left, s->left, 7);
    for (int from = 0; from < 25; from++)
        for (int d = 1; d <= 6; d++) {
            if (!left[d] || !s_can(own, opp, from, d))
                continue;
            if (s->need > 1) {
                uint8_t o2[25], p2[25];
                memcpy(o2, own, 25);
                memcpy(p2, opp, 25);
                s_move(o2, p2, from, d);
                left[d]--;
                int u = s_maxuse(o2, p2, left, s->need - 1);
                left[d]++;
                if (u != s->need - 1)
                    continue;
            }
            if (two_kinds && s->need == 1 && d == hi)
                hi_ok = true;
            out[n++] = (uint16_t)(from * 6 + d - 1);
        }
    if (two_kinds && s->need == 1 && hi_ok) { /* B11: the larger die when only one plays */
        int k = 0;
        for (int i = 0; i < n; i++)
            if (out[i] % 6 + 1 == hi)
                out[k++] = out[i];
        n = k;
    }
    return n;
}

static bool s_over(const bg_state *s)
{
    return s_off(s->pts[0]) == BG_CHECKERS || s_off(s->pts[1]) == BG_CHECKERS;
}

/* The turn ends: the other side rolls (or the game is over, B15). */
static void s_end_turn(bg_state *s)
{
    memset(s->left, 0, sizeof s->left);
    s->need = 0;
    s->used = 0;
    s->ply++;
    if (s_over(s)) {
        s->phase = PH_OVER;
        return;
    }
    s->side ^= 1;
    s->phase = s->ply >= BG_MAX_PLIES ? PH_OVER : PH_ROLL;
}

/* The roll hi-lo is the mover's to play (B5, B9, B12). */
static void s_start_roll(bg_state *s, int hi, int lo)
{
    s->roll[0] = (uint8_t)hi;
    s->roll[1] = (uint8_t)lo;
    memset(s->left, 0, sizeof s->left);
    if (hi == lo)
        s->left[hi] = 4;
    else
        s->left[hi] = s->left[lo] = 1;
    s->used = 0;
    s->phase = PH_MOVE;
    uint8_t left[7];
    memcpy(left, s->left, 7);
    s->need = (uint8_t)s_maxuse(s->pts[s->side], s->pts[s->side ^ 1], left, s_left_count(s));
    if (!s->need)
        s_end_turn(s); /* B12: no move at all: the turn passes */
}

/* ---- game_def --------------------------------------------------------- */

static int bg_legal_actions(const game_state *g, uint16_t *out)
{
    const bg_state *s = CS(g);
    int n = 0;
    switch (s->phase) {
    case PH_OPENING: /* B3: (white's die, black's die), never equal */
        for (int a = 1; a <= 6; a++)
            for (int b = 1; b <= 6; b++)
                if (a != b)
                    out[n++] = (uint16_t)(BG_CHANCE_BASE + (a - 1) * 6 + (b - 1));
        return n;
    case PH_ROLL: /* B5: the 21 rolls, high die first */
        for (int a = 1; a <= 6; a++)
            for (int b = 1; b <= a; b++)
                out[n++] = (uint16_t)(BG_CHANCE_BASE + (a - 1) * 6 + (b - 1));
        return n;
    case PH_MOVE:
        return s_legal_moves(s, out);
    default:
        return 0;
    }
}

static bool bg_is_chance(const game_state *g)
{
    return CS(g)->phase == PH_OPENING || CS(g)->phase == PH_ROLL;
}

static void bg_chance_probs(const game_state *g, float *probs)
{
    const bg_state *s = CS(g);
    int n = 0;
    if (s->phase == PH_OPENING) {
        for (int i = 0; i < 30; i++)
            probs[n++] = 1.0f / 30.0f;
        return;
    }
    for (int a = 1; a <= 6; a++)
        for (int b = 1; b <= a; b++)
            probs[n++] = a == b ? 1.0f / 36.0f : 2.0f / 36.0f;
}

static void bg_copy(game_state *dst, const game_state *src)
{
    memcpy(dst->bytes, src->bytes, sizeof(bg_state));
}

static void bg_apply(game_state *g, int action)
{
    bg_state *s = S(g);
    assert(action >= 0 && action < BG_ACTIONS);
    if (action >= BG_CHANCE_BASE) {
        int a = (action - BG_CHANCE_BASE) / 6 + 1, b = (action - BG_CHANCE_BASE) % 6 + 1;
        assert(s->phase == PH_OPENING || s->phase == PH_ROLL);
        if (s->phase == PH_OPENING) {
            assert(a != b);
            s->side = a > b ? 0 : 1; /* B3: the higher die moves first, with both */
            s_start_roll(s, a > b ? a : b, a > b ? b : a);
        } else {
            assert(a >= b);
            s_start_roll(s, a, b);
        }
        return;
    }
    int from = action / 6, d = action % 6 + 1;
    assert(s->phase == PH_MOVE && s->left[d] && s->need > 0);
    s_move(s->pts[s->side], s->pts[s->side ^ 1], from, d);
    s->left[d]--;
    s->need--;
    s->used++;
    if (!s->need || s_off(s->pts[s->side]) == BG_CHECKERS)
        s_end_turn(s); /* B9, B10: the roll is played (the rest cannot be) */
}

static int bg_to_move(const game_state *g) { return CS(g)->side; }
static bool bg_mid_turn(const game_state *g)
{
    return CS(g)->phase == PH_MOVE && CS(g)->used > 0;
}
static int bg_ply(const game_state *g) { return CS(g)->ply; }

/* B15, B16: single 1, gammon 2, backgammon 3. */
static game_result bg_result(const game_state *g)
{
    const bg_state *s = CS(g);
    game_result r = {false, -1, 0, 0};
    if (s->phase != PH_OVER)
        return r;
    int w = s_off(s->pts[0]) == BG_CHECKERS ? 0 : s_off(s->pts[1]) == BG_CHECKERS ? 1 : -1;
    if (w < 0)
        return (game_result){true, -1, 4, 0}; /* B19: the length cap, a draw */
    const uint8_t *l = s->pts[w ^ 1];
    int pts = 1;
    if (s_off(l) == 0) {
        pts = 2;
        for (int i = 18; i < 25; i++)
            if (l[i])
                pts = 3; /* on the bar or in the winner's home board */
    }
    return (game_result){true, w, pts, pts};
}

/* ---- planes ------------------------------------------------------------ */

/* Packed (28 bytes): per mover's index i < 24, the mover's count | the
 * other's count on that point << 4; byte 24 the bars (mover | other << 4);
 * bytes 25-27 the dice left, 3 bits per value 1..6. */
static void s_pack(const uint8_t *own, const uint8_t *opp, const uint8_t *left, uint8_t *out)
{
    for (int i = 0; i < 24; i++)
        out[i] = (uint8_t)(own[i] | opp[23 - i] << 4);
    out[24] = (uint8_t)(own[BG_BAR] | opp[BG_BAR] << 4);
    uint32_t d = 0;
    for (int v = 1; v <= 6; v++)
        d |= (uint32_t)left[v] << (3 * (v - 1));
    out[25] = (uint8_t)d;
    out[26] = (uint8_t)(d >> 8);
    out[27] = (uint8_t)(d >> 16);
}

#define BG_PLANES 17
#define BG_W 25

/* B18: the mover's view. Planes over the 25 columns (the mover's points,
 * column 24 its bar): 0-3 the mover's checkers (>= 1, >= 2, >= 3, (n - 3) / 2:
 * TD-Gammon's units), 4-7 the other side's on the same points; constant
 * planes: 8 the mover's borne off / 15, 9 the other's, 10 the other's bar / 15,
 * 11-16 the dice left of each value / 4 (all 0 before the roll). */
static int s_planes(const uint8_t *in, float *out)
{
    memset(out, 0, sizeof(float) * BG_PLANES * BG_W);
    int own_n = 0, opp_n = 0;
    for (int i = 0; i < 25; i++) {
        int a = in[i] & 15, b = in[i] >> 4;
        if (i < 24 && a && b)
            return KZ_ECORRUPT;
        own_n += a;
        opp_n += b;
        for (int k = 0; k < 2; k++) {
            int n = k ? b : a;
            if (k && i == 24)
                break; /* the other's bar is plane 10 */
            float *p = out + k * 4 * BG_W + i;
            p[0] = n >= 1;
            p[BG_W] = n >= 2;
            p[2 * BG_W] = n >= 3;
            p[3 * BG_W] = n > 3 ? (float)(n - 3) / 2.0f : 0.0f;
        }
    }
    if (own_n > 15 || opp_n > 15)
        return KZ_ECORRUPT;
    uint32_t d = in[25] | (uint32_t)in[26] << 8 | (uint32_t)in[27] << 16;
    if (d >> 18)
        return KZ_ECORRUPT;
    float c[3] = {(float)(15 - own_n) / 15.0f, (float)(15 - opp_n) / 15.0f,
                  (float)(in[24] >> 4) / 15.0f};
    for (int v = 1; v <= 6; v++) {
        int n = (int)(d >> (3 * (v - 1)) & 7);
        if (n > 4)
            return KZ_ECORRUPT;
        for (int i = 0; i < BG_W; i++)
            out[(10 + v) * BG_W + i] = (float)n / 4.0f;
    }
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < BG_W; i++)
            out[(8 + k) * BG_W + i] = c[k];
    return 0;
}

static void bg_pack(const game_state *g, uint8_t *out)
{
    const bg_state *s = CS(g);
    s_pack(s->pts[s->side], s->pts[s->side ^ 1], s->left, out);
}

static int bg_unpack_planes(const uint8_t *in, float *out) { return s_planes(in, out); }

static void bg_encode_planes(const game_state *g, float *out)
{
    uint8_t b[28];
    bg_pack(g, b);
    int rc = s_planes(b, out);
    assert(rc == 0);
    (void)rc;
}

static int bg_canonical_action(const game_state *g, int action)
{
    (void)g; /* actions are in the mover's numbering already */
    return action;
}

static uint64_t bg_hash(const game_state *g)
{
    const bg_state *s = CS(g);
    uint8_t b[32] = {0};
    bg_pack(g, b);
    b[28] = s->phase;
    b[29] = s->side;
    b[30] = s->need;
    uint64_t h = 0x6267;
    for (int k = 0; k < 4; k++) {
        uint64_t w;
        memcpy(&w, b + 8 * k, 8);
        h = mix64(h ^ w);
    }
    return h;
}

/* ---- Position IDs (B17) ----------------------------------------------- */

static const char s_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void backgammon_position_id(const uint8_t own[25], const uint8_t opp[25], char *buf)
{
    uint8_t key[12] = {0};
    int bit = 0;
    for (int k = 0; k < 2; k++) {
        const uint8_t *p = k ? own : opp; /* the player on roll last (gnubg) */
        for (int i = 0; i < 25; i++) {
            for (int c = 0; c < p[i]; c++, bit++)
                key[bit / 8] |= (uint8_t)(1u << (bit % 8));
            bit++;
        }
    }
    for (int i = 0; i < 14; i++) {
        int v = 0;
        for (int j = 0; j < 6; j++) {
            int b = i * 6 + j; /* base64 takes the bytes' bits high first */
            int byte = b / 8, off = 7 - b % 8;
            v = v << 1 | (byte < 10 ? key[byte] >> off & 1 : 0);
        }
        buf[i] = s_b64[v];
    }
    buf[14] = '\0';
}

int backgammon_parse_id(const char *id, uint8_t own[25], uint8_t opp[25], char *err,
                        size_t errlen)
{
    if (!id || strlen(id) < 14 || (id[14] && id[14] != ' '))
        return err_set(err, errlen, KZ_EINVAL,
                       "a Position ID is 14 base64 characters (B17)");
    uint8_t key[11] = {0};
    for (int i = 0; i < 14; i++) {
        const char *c = id[i] ? strchr(s_b64, id[i]) : NULL;
        if (!c)
            return err_set(err, errlen, KZ_EINVAL,
                           "'%.14s': '%c' is not a base64 character (B17)", id, id[i]);
        int v = (int)(c - s_b64);
        for (int j = 0; j < 6; j++) {
            int b = i * 6 + j;
            if (v >> (5 - j) & 1)
                key[b / 8] |= (uint8_t)(1u << (7 - b % 8));
        }
    }
    uint8_t bytes[10], sides[2][25];
    memcpy(bytes, key, 10);
    if (key[10])
        return err_set(err, errlen, KZ_EINVAL, "'%.14s': bits past the 80th are set (B17)", id);
    memset(sides, 0, sizeof sides);
    int bit = 0, k = 0, i = 0, total = 0;
    while (k < 2 && bit < 80) {
        if (bytes[bit / 8] >> (bit % 8) & 1) {
            if (++sides[k][i] > BG_CHECKERS || ++total > 30)
                return err_set(err, errlen, KZ_EINVAL,
                               "'%.14s': more than 15 checkers of a side (B17)", id);
        } else if (++i == 25) {
            i = 0;
            k++;
        }
        bit++;
    }
    for (; bit < 80; bit++)
        if (bytes[bit / 8] >> (bit % 8) & 1)
            return err_set(err, errlen, KZ_EINVAL, "'%.14s': checkers past both sides (B17)",
                           id);
    for (int s = 0; s < 2; s++) {
        int n = 0;
        for (int j = 0; j < 25; j++)
            n += sides[s][j];
        if (n > BG_CHECKERS)
            return err_set(err, errlen, KZ_EINVAL,
                           "'%.14s': more than 15 checkers of a side (B17)", id);
    }
    for (int j = 0; j < 24; j++)
        if (sides[1][j] && sides[0][23 - j])
            return err_set(err, errlen, KZ_EINVAL,
                           "'%.14s': both sides on point %d (B2, B17)", id, j + 1);
    memcpy(opp, sides[0], 25);
    memcpy(own, sides[1], 25);
    return 0;
}

void backgammon_board(const game_state *g, uint8_t own[25], uint8_t opp[25])
{
    const bg_state *s = CS(g);
    memcpy(own, s->pts[s->side], 25);
    memcpy(opp, s->pts[s->side ^ 1], 25);
}

void backgammon_pips(const game_state *g, int *own, int *opp)
{
    const bg_state *s = CS(g);
    int a = 0, b = 0;
    for (int i = 0; i < 25; i++) {
        a += s->pts[s->side][i] * (i + 1);
        b += s->pts[s->side ^ 1][i] * (i + 1);
    }
    *own = a;
    *opp = b;
}

bool backgammon_contact(const game_state *g)
{
    const bg_state *s = CS(g);
    const uint8_t *a = s->pts[0], *b = s->pts[1];
    /* In a's indices (0 = its 1-point, 24 = its bar): a's rearmost checker,
     * and b's rearmost (b's index j is a's 23 - j; b's bar is a's -1). */
    int a_back = -2, b_back = 99;
    for (int i = 0; i < 25; i++)
        if (a[i])
            a_back = i;
    for (int j = 0; j < 25; j++)
        if (b[j] && (j == BG_BAR ? -1 : 23 - j) < b_back)
            b_back = j == BG_BAR ? -1 : 23 - j;
    return a_back > b_back && a_back >= 0 && b_back < 99;
}

/* ---- strings ---------------------------------------------------------- */

static const char *bg_player_name(int player) { return player == 0 ? "white" : "black"; }

/* B17: "ID [ROLL[:LEFT]] SIDE" or "ID opening" (see the rules). */
static void bg_format_position(const game_state *g, char *buf, size_t len)
{
    const bg_state *s = CS(g);
    char id[16];
    backgammon_position_id(s->pts[s->side], s->pts[s->side ^ 1], id);
    if (s->phase == PH_OPENING) {
        snprintf(buf, len, "%s opening", id);
        return;
    }
    char dice[16] = "";
    if (s->phase == PH_MOVE) {
        int n = snprintf(dice, sizeof dice, " %d%d", s->roll[0], s->roll[1]);
        if (s->used) {
            dice[n++] = ':';
            for (int v = 6; v >= 1; v--)
                for (int c = 0; c < s->left[v]; c++)
                    dice[n++] = (char)('0' + v);
            dice[n] = '\0';
        }
    }
    snprintf(buf, len, "%s%s %c", id, dice, s->side ? 'b' : 'w');
}

static int s_die(char c) { return c >= '1' && c <= '6' ? c - '0' : -1; }

static int bg_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    uint8_t own[25], opp[25];
    int rc = backgammon_parse_id(str, own, opp, err, errlen);
    if (rc)
        return rc;
    game_state t;
    memset(&t, 0, sizeof t);
    bg_state *s = S(&t);
    const char *p = str + 14;
    int side = 0, hi = 0, lo = 0;
    uint8_t left[7] = {0};
    bool opening = false, rolled = false, partial = false;
    while (*p == ' ')
        p++;
    if (!strcmp(p, "opening")) {
        opening = true;
        p += 7;
    } else if (s_die(p[0]) > 0 && s_die(p[1]) > 0) {
        hi = s_die(p[0]), lo = s_die(p[1]);
        if (hi < lo) {
            int x = hi;
            hi = lo, lo = x;
        }
        rolled = true;
        p += 2;
        if (*p == ':') {
            partial = true;
            p++;
            int n = 0;
            while (s_die(*p) > 0) {
                left[s_die(*p)]++;
                p++, n++;
            }
            int full = hi == lo ? 4 : 2;
            bool ok = n >= 1 && n < full;
            for (int v = 1; v <= 6; v++)
                if (left[v] && v != hi && v != lo)
                    ok = false;
            if (hi != lo && (left[hi] > 1 || left[lo] > 1))
                ok = false;
            if (!ok)
                return err_set(err, errlen, KZ_EINVAL,
                               "'%s': the dice left after ':' must be fewer than the roll's "
                               "and among its values (B17)", str);
        } else if (isdigit((unsigned char)*p)) {
            return err_set(err, errlen, KZ_EINVAL,
                           "'%s': a roll is two dice 1-6, e.g. 31 or 55 (B17)", str);
        }
    } else if (isdigit((unsigned char)p[0])) {
        return err_set(err, errlen, KZ_EINVAL,
                       "'%s': a roll is two dice 1-6, e.g. 31 or 55 (B17)", str);
    }
    while (*p == ' ')
        p++;
    if (!opening && (*p == 'w' || *p == 'b') && (!p[1] || p[1] == ' ')) {
        side = *p == 'b';
        p++;
    }
    while (*p == ' ')
        p++;
    if (*p)
        return err_set(err, errlen, KZ_EINVAL,
                       "'%s': write ID [ROLL[:LEFT]] [w|b] or ID opening (B17)", str);
    memcpy(s->pts[side], own, 25);
    memcpy(s->pts[side ^ 1], opp, 25);
    s->side = (uint8_t)side;
    if (s_off(own) == BG_CHECKERS && s_off(opp) == BG_CHECKERS)
        return err_set(err, errlen, KZ_EINVAL, "'%s': no checkers on the board (B17)", str);
    if (s_over(s)) {
        if (rolled || opening)
            return err_set(err, errlen, KZ_EINVAL,
                           "'%s': the game is over: no roll to play (B15)", str);
        s->phase = PH_OVER;
        *g = t;
        return 0;
    }
    if (opening) {
        s->phase = PH_OPENING;
    } else if (!rolled) {
        s->phase = PH_ROLL;
    } else if (!partial) {
        s_start_roll(s, hi, lo);
        s->ply = 0;
        if (s->phase != PH_MOVE)
            return err_set(err, errlen, KZ_EINVAL,
                           "'%s': the roll %d%d cannot be played here (B12): give the "
                           "position without it", str, hi, lo);
    } else {
        s->roll[0] = (uint8_t)hi;
        s->roll[1] = (uint8_t)lo;
        memcpy(s->left, left, 7);
        int n = 0;
        for (int v = 1; v <= 6; v++)
            n += left[v];
        s->used = (uint8_t)((hi == lo ? 4 : 2) - n);
        s->phase = PH_MOVE;
        uint8_t l2[7];
        memcpy(l2, left, 7);
        s->need = (uint8_t)s_maxuse(s->pts[side], s->pts[side ^ 1], l2, n);
        if (!s->need)
            return err_set(err, errlen, KZ_EINVAL,
                           "'%s': the dice left cannot be played: the turn is over (B12)",
                           str);
    }
    *g = t;
    return 0;
}

/* B14: "13/8" (from/to in the mover's numbering), "bar/22", "3/off"
 * (exact) or "3/off:6" (bearing off with a higher die); chance outcomes as
 * two digits, "31" (high die first; at the opening white's die, black's). */
static int bg_parse_action(const char *str, int *action)
{
    if (!str)
        return KZ_EINVAL;
    if (s_die(str[0]) > 0 && s_die(str[1]) > 0 && !str[2]) {
        *action = BG_CHANCE_BASE + (s_die(str[0]) - 1) * 6 + s_die(str[1]) - 1;
        return 0;
    }
    const char *p = str;
    int from;
    if (!strncmp(p, "bar/", 4)) {
        from = 25;
        p += 4;
    } else {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || *end != '/' || v < 1 || v > 24 || !isdigit((unsigned char)*p))
            return KZ_EINVAL;
        from = (int)v;
        p = end + 1;
    }
    int d;
    if (!strncmp(p, "off", 3)) {
        p += 3;
        d = from;
        if (*p == ':') {
            if (s_die(p[1]) < 0 || p[2])
                return KZ_EINVAL;
            d = s_die(p[1]);
            p += 2;
        }
        if (*p || from > 6 || d < from)
            return KZ_EINVAL;
    } else {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || *end || !isdigit((unsigned char)*p) || v < 1 || v >= from)
            return KZ_EINVAL;
        d = from - (int)v;
        if (d > 6)
            return KZ_EINVAL;
    }
    *action = (from - 1) * 6 + d - 1;
    return 0;
}

static void bg_format_action(int action, char *buf, size_t len)
{
    if (action >= BG_CHANCE_BASE) {
        int a = (action - BG_CHANCE_BASE) / 6 + 1, b = (action - BG_CHANCE_BASE) % 6 + 1;
        snprintf(buf, len, "%d%d", a, b);
        return;
    }
    int from = action / 6 + 1, d = action % 6 + 1, to = from - d;
    char f[12];
    if (from == 25)
        snprintf(f, sizeof f, "bar");
    else
        snprintf(f, sizeof f, "%d", from);
    if (to > 0)
        snprintf(buf, len, "%s/%d", f, to);
    else if (to == 0)
        snprintf(buf, len, "%s/off", f);
    else
        snprintf(buf, len, "%s/off:%d", f, d);
}

/* ---- whole moves ------------------------------------------------------ */

typedef struct {
    bg_whole_move *out;
    int max, n;
    uint8_t (*seen)[50];
    int seen_cap;
} s_walk;

/* A whole move's standard notation: hops in points (25 the bar, 0 off), a
 * checker's consecutive hops joined when it hits nothing on the way
 * ("24/20"), the higher origin first, hits marked "*", repeats as "(n)". */
static void s_notation(const game_state *start, const uint16_t *acts, int depth, char *buf,
                       size_t len)
{
    int from[4], to[4], n = depth;
    bool hit[4];
    game_state c = *start;
    for (int k = 0; k < depth; k++) {
        const bg_state *cs = CS(&c);
        int f = acts[k] / 6, t = f - (acts[k] % 6 + 1);
        hit[k] = t >= 0 && cs->pts[cs->side ^ 1][23 - t] == 1;
        from[k] = f + 1;
        to[k] = t < 0 ? 0 : t + 1;
        bg_apply(&c, acts[k]);
    }
    for (bool merged = true; merged;) {
        merged = false;
        for (int i = 0; i < n && !merged; i++)
            for (int j = 0; j < n && !merged; j++)
                if (i != j && !hit[i] && to[i] && to[i] == from[j]) {
                    to[i] = to[j];
                    hit[i] = hit[j];
                    from[j] = from[n - 1], to[j] = to[n - 1], hit[j] = hit[n - 1];
                    n--;
                    merged = true;
                }
    }
    for (int i = 0; i < n; i++) /* the higher origin (then destination) first */
        for (int j = i + 1; j < n; j++)
            if (from[j] > from[i] || (from[j] == from[i] && to[j] > to[i])) {
                int x = from[i];
                from[i] = from[j], from[j] = x;
                x = to[i], to[i] = to[j], to[j] = x;
                bool h = hit[i];
                hit[i] = hit[j], hit[j] = h;
            }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int rep = 1;
        while (i + rep < n && from[i + rep] == from[i] && to[i + rep] == to[i] &&
               hit[i + rep] == hit[i])
            rep++;
        char f[8], t[8];
        snprintf(f, sizeof f, from[i] == 25 ? "bar" : "%d", from[i]);
        snprintf(t, sizeof t, to[i] == 0 ? "off" : "%d", to[i]);
        used += (size_t)snprintf(buf + used, len - used, "%s%s/%s%s", i ? " " : "", f, t,
                                 hit[i] ? "*" : "");
        if (rep > 1)
            used += (size_t)snprintf(buf + used, len - used, "(%d)", rep);
        if (used >= len)
            return;
        i += rep;
    }
}

static void s_whole(const game_state *start, const game_state *g, uint16_t *acts, int depth,
                    s_walk *w)
{
    const bg_state *s = CS(g);
    if (depth > 0 && (s->phase != PH_MOVE || s->side != CS(start)->side)) {
        const bg_state *s0 = CS(start);
        uint8_t key[50];
        memcpy(key, s->pts[s0->side], 25);
        memcpy(key + 25, s->pts[s0->side ^ 1], 25);
        for (int i = 0; i < w->n && i < w->seen_cap; i++)
            if (!memcmp(w->seen[i], key, 50))
                return;
        if (w->n < w->seen_cap)
            memcpy(w->seen[w->n], key, 50);
        if (w->n < w->max) {
            bg_whole_move *m = &w->out[w->n];
            memset(m, 0, sizeof *m);
            backgammon_position_id(s->pts[s0->side], s->pts[s0->side ^ 1], m->after);
            memcpy(m->actions, acts, sizeof(uint16_t) * (size_t)depth);
            m->n_actions = depth;
            s_notation(start, acts, depth, m->text, sizeof m->text);
        }
        w->n++;
        return;
    }
    uint16_t legal[GAME_MAX_LEGAL];
    int n = bg_legal_actions(g, legal);
    for (int i = 0; i < n; i++) {
        game_state c = *g;
        bg_apply(&c, legal[i]);
        acts[depth] = legal[i];
        s_whole(start, &c, acts, depth + 1, w);
    }
}

int backgammon_whole_moves(const game_state *g, bg_whole_move *out, int max)
{
    const bg_state *s = CS(g);
    if (s->phase != PH_MOVE)
        return 0;
    s_walk w = {out, max, 0, NULL, 8192};
    w.seen = xmalloc(sizeof *w.seen * (size_t)w.seen_cap);
    uint16_t acts[4];
    s_whole(g, g, acts, 0, &w);
    free(w.seen);
    return w.n;
}

/* ---- for people -------------------------------------------------------- */

/* The board from white's side: points 13-24 across the top, 12-1 below
 * (white's numbering), 'X' white's checkers, 'O' black's. */
static void bg_render(const game_state *g, FILE *out)
{
    const bg_state *s = CS(g);
    const uint8_t *w = s->pts[0], *b = s->pts[1];
    char pos[GAME_POSITION_CHARS + 1];
    fputs(" +13-14-15-16-17-18------19-20-21-22-23-24-+\n", out);
    for (int half = 0; half < 2; half++) {
        for (int row = 0; row < 5; row++) {
            int r = half ? 4 - row : row;
            fputs(" |", out);
            for (int c = 0; c < 12; c++) {
                int pt = half ? 12 - c : 13 + c; /* white's point number */
                int nw = w[pt - 1], nb = b[24 - pt];
                int n = nw ? nw : nb;
                char ch = nw ? 'X' : 'O';
                if (n > r && (r < 4 || n == 5))
                    fprintf(out, " %c ", ch);
                else if (r == 4 && n > 5)
                    fprintf(out, "%2d ", n);
                else
                    fputs(" . ", out);
                if (c == 5)
                    fputs("|   |", out);
            }
            fputs("|\n", out);
        }
        if (!half)
            fprintf(out, " |%18s|BAR|%18s|  bar: X %d  O %d\n", "", "", w[24], b[24]);
    }
    fputs(" +12-11-10--9--8--7-------6--5--4--3--2--1-+\n", out);
    int pw, pb;
    game_state t = *g;
    S(&t)->side = 0;
    backgammon_pips(&t, &pw, &pb);
    fprintf(out, "  off: X %d  O %d   pips: X %d  O %d\n", s_off(w), s_off(b), pw, pb);
    bg_format_position(g, pos, sizeof pos);
    if (s->phase == PH_OPENING)
        fputs("  the opening roll decides who starts\n", out);
    else if (s->phase == PH_ROLL)
        fprintf(out, "  %s (%c) to roll\n", bg_player_name(s->side), s->side ? 'O' : 'X');
    else if (s->phase == PH_MOVE) {
        fprintf(out, "  %s (%c) to move, rolled %d%d, dice left:", bg_player_name(s->side),
                s->side ? 'O' : 'X', s->roll[0], s->roll[1]);
        for (int v = 6; v >= 1; v--)
            for (int c = 0; c < s->left[v]; c++)
                fprintf(out, " %d", v);
        fputs(s->side ? "  (black counts its points from the top right: 1 = X's 24)\n" : "\n",
              out);
    } else {
        game_result r = bg_result(g);
        fprintf(out, "  over: %s wins %d point%s (%s)\n",
                r.winner < 0 ? "nobody" : bg_player_name(r.winner), r.points,
                r.points == 1 ? "" : "s", s_reasons[r.reason]);
    }
    fprintf(out, "  position: %s\n", pos);
}

/* The baseline players' evaluation: the pip count lead, a pip worth 8
 * hundredths of a checker (the race's 8% rule of thumb), plus borne off. */
static long bg_evaluate(const game_state *g)
{
    int own, opp;
    backgammon_pips(g, &own, &opp);
    const bg_state *s = CS(g);
    return 8L * (opp - own) +
           100L * (s_off(s->pts[s->side]) - s_off(s->pts[s->side ^ 1]));
}

static float bg_material(const game_state *g, int player)
{
    const bg_state *s = CS(g);
    return (float)(s_off(s->pts[player]) - s_off(s->pts[player ^ 1])) / 15.0f;
}

static void bg_init(game_state *g)
{
    memset(g, 0, sizeof *g);
    bg_state *s = S(g);
    for (int p = 0; p < 2; p++) { /* B2 */
        s->pts[p][23] = 2;
        s->pts[p][12] = 5;
        s->pts[p][7] = 3;
        s->pts[p][5] = 5;
    }
    s->phase = PH_OPENING;
}

/* ---- the web pages' description (docs/web.md) -------------------------- */

/* Where white's point p (1-24) stands: its x (the middle of its triangle)
 * and whether it is in the top half. White's home (1-6) is at the bottom
 * right, 13-24 along the top; black's point q is white's 25 - q. */
static double s_view_x(int p, bool *top)
{
    *top = p > 12;
    return p <= 6 ? 12.5 - (p - 1) : p <= 12 ? 5.5 - (p - 7) : p <= 18 ? 0.5 + (p - 13)
                                                                       : 7.5 + (p - 19);
}

/* Points 0-23 white's points 1-24, 24 white's bar, 25 black's, 26 white's
 * borne-off tray, 27 black's: each with the way its stack grows. */
static void bg_describe(strbuf *out)
{
    view_open(out, &backgammon_game, "#f4f1ea", "#222222");
    strbuf_printf(out, ",\n\"opening\": \"the opening roll decides who starts\",\n"
                       "\"board\": {\"points\": [");
    for (int p = 1; p <= 24; p++) {
        bool top;
        double x = s_view_x(p, &top);
        strbuf_printf(out, "%s[%.1f, %.1f, \"%d\", [0, %.1f]]", p > 1 ? ", " : "", x,
                      top ? 0.5 : 10.5, p, top ? 0.9 : -0.9);
    }
    strbuf_printf(out, ",\n  [6.5, 4.1, \"bar\", [0, -0.9]], [6.5, 6.9, \"bar\", [0, 0.9]],"
                       " [13.85, 10.5, \"off\", [0, -0.6]], [13.85, 0.5, \"off\", [0, 0.6]]],\n"
                       " \"lines\": [],\n \"shapes\": [{\"rect\": [0, 0, 6, 11], "
                       "\"fill\": \"#2f6a46\"}, {\"rect\": [7, 0, 6, 11], \"fill\": \"#2f6a46\"},"
                       "\n  {\"rect\": [6, 0, 1, 5.5], \"fill\": \"#4a2f14\", \"point\": 24}, "
                       "{\"rect\": [6, 5.5, 1, 5.5], \"fill\": \"#4a2f14\", \"point\": 25},\n"
                       "  {\"rect\": [13.3, 5.8, 1.1, 5.2], \"fill\": \"#2f6a46\", "
                       "\"point\": 26}, {\"rect\": [13.3, 0, 1.1, 5.2], \"fill\": \"#2f6a46\", "
                       "\"point\": 27}");
    for (int p = 1; p <= 24; p++) {
        bool top;
        double x = s_view_x(p, &top);
        strbuf_printf(out, ",\n  {\"poly\": [%.1f, %d, %.1f, %d, %.1f, %.1f], \"fill\": \"%s\", "
                           "\"point\": %d}",
                      x - 0.5, top ? 0 : 11, x + 0.5, top ? 0 : 11, x, top ? 4.6 : 6.4,
                      ((int)(x - 0.5) + top) % 2 ? "#e8d9b5" : "#b3432f", p - 1);
    }
    strbuf_printf(out, "],\n \"bottom\": 0, \"labels\": \"outside\", \"background\": "
                       "\"#5c3b1a\", \"ink\": \"#f5ecd9\", \"piece\": 0.44, \"stack\": 5,"
                       " \"pixels\": 760,\n \"dice\": [[10, 5.5], [3, 5.5]]},\n"
                       "\"pieces\": {\"w\": {\"player\": 0, \"kind\": \"checker\"}, "
                       "\"b\": {\"player\": 1, \"kind\": \"checker\"}},\n"
                       "\"position\": {\"board\": \"gnubg-id\", \"pieces\": [\"w\", \"b\"], "
                       "\"sides\": [\"w\", \"b\"], \"checkers\": %d, \"off\": [26, 27],\n"
                       "  \"points\": [[", BG_CHECKERS);
    for (int i = 0; i < 25; i++)
        strbuf_printf(out, "%s%d", i ? ", " : "", i < 24 ? i : 24);
    strbuf_printf(out, "], [");
    for (int i = 0; i < 25; i++)
        strbuf_printf(out, "%s%d", i ? ", " : "", i < 24 ? 23 - i : 25);
    strbuf_printf(out, "]]},\n\"actions\": {\"separators\": \"/\", \"capture\": \"*\", "
                       "\"strip\": \":[1-6]$\", \"labels\": [");
    for (int pl = 0; pl < 2; pl++) { /* B14: each side names the points in its numbering */
        strbuf_printf(out, "%s[", pl ? ",\n  " : "\n  ");
        for (int q = 0; q < 28; q++) {
            char l[8] = "";
            if (q < 24)
                snprintf(l, sizeof l, "%d", pl ? 24 - q : q + 1);
            else if (q - 24 == pl)
                snprintf(l, sizeof l, "bar");
            else if (q - 26 == pl)
                snprintf(l, sizeof l, "off");
            strbuf_printf(out, "%s\"%s\"", q ? ", " : "", l);
        }
        strbuf_printf(out, "]");
    }
    strbuf_printf(out, "]}}");
}

const game_def backgammon_game = {
    .name = "backgammon",
    .action_count = BG_ACTIONS,
    .planes = BG_PLANES,
    .height = 1,
    .width = BG_W,
    .max_legal = 50, /* 25 origins x 2 die values; 30 opening outcomes */
    .packed_bytes = 28,
    .state_bytes = (int)sizeof(bg_state),
    .position_chars = 30, /* ID, " 55:555", " b" */
    .simulations = 200,
    .dirichlet_alpha = 1.0f, /* about 10 atomic moves at a decision */
    .max_points = 3,
    .reasons = s_reasons,
    .n_reasons = 5,
    .n_symmetries = 0,
    .symmetries = NULL,
    .init = bg_init,
    .legal_actions = bg_legal_actions,
    .copy = bg_copy,
    .apply = bg_apply,
    .to_move = bg_to_move,
    .mid_turn = bg_mid_turn,
    .ply = bg_ply,
    .result = bg_result,
    .is_chance = bg_is_chance,
    .chance_probs = bg_chance_probs,
    .encode_planes = bg_encode_planes,
    .canonical_action = bg_canonical_action,
    .hash = bg_hash,
    .pack = bg_pack,
    .unpack_planes = bg_unpack_planes,
    .parse_position = bg_parse_position,
    .format_position = bg_format_position,
    .parse_action = bg_parse_action,
    .format_action = bg_format_action,
    .mid_turn_verb = "moves on",
    .render = bg_render,
    .player_name = bg_player_name,
    .material = bg_material,
    .evaluate = bg_evaluate,
    .describe = bg_describe,
    .legend = "Move one checker per die: FROM/TO in your own numbering (24 the farthest, 1 "
              "your ace point),\nbar/N to enter, N/off to bear off (N/off:D with a higher "
              "die D). Both dice must be\nplayed when they can be, else the larger; doubles "
              "play four times. X white, O black.\n",
};
