/* yinsh: the rules engine of Yinsh (docs/rules-yinsh.md Y1-Y24).
 *
 * Representation. The board is an array of 85 bytes in Y1's point order
 * (0 empty, 1 + c a ring of colour c, 3 + c a marker of colour c), with the
 * counts kept beside it (rings on the board, removed, markers on the board)
 * and the stage of the turn (placing, moving, a row due, a ring due; the
 * removals before or after the own move; whether the side has acted in this
 * turn). The end of the game is decided when a turn ends and stored in the
 * state, so that `result` reads it at a turn start (Y16-Y18).
 *
 * Tables built once before main(): each point's neighbour in the six
 * directions, the from-to id of every pair of points on a line, the 123
 * five-point windows and the windows through each point, the cell of each
 * point in the 11x11 plane grid, and the 11 symmetries' maps of points,
 * cells and actions. */
#include "games/yinsh.h"

#include <assert.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/view.h"

#define N YS_POINTS
#define GRID 11           /* Y20: the plane grid is GRID x GRID */
#define CELLS (GRID * GRID)
#define PLANES 12
#define SYMS 11           /* Y20: besides the identity */
#define MAX_REACH 26      /* a ring's destinations at most: the other points of its three
                             lines, 26 at most (d5 e4-e7 f5 f7 g5-g8 h7) */

enum { EMPTY = 0, RING = 1, MARK = 3 }; /* RING + colour, MARK + colour */
enum { ST_PLACE = 0, ST_MOVE, ST_ROW, ST_RING };

typedef struct ys_state {
    uint8_t board[N];   /* Y1 order: EMPTY, RING + c, MARK + c */
    uint8_t side;       /* who acts: 0 White, 1 Black */
    uint8_t stage;      /* ST_* */
    uint8_t after;      /* the removals due come after the side's own move (Y14) */
    uint8_t acted;      /* the side has acted in this turn (game.h's mid_turn) */
    uint8_t rings[2];   /* rings on the board */
    uint8_t removed[2]; /* rings removed (Y10) */
    uint8_t target;     /* rings that win (Y16, Y19) */
    uint8_t markers;    /* markers on the board (Y18) */
    uint8_t over;       /* the game has ended (at a turn start) */
    int8_t winner;      /* 0, 1, or -1 a draw */
    uint8_t reason;     /* enum ys_reason */
    uint16_t ply;       /* completed turns */
} ys_state;

_Static_assert(sizeof(ys_state) <= GAME_STATE_BYTES, "ys_state must fit game_state");

static struct {
    int8_t col[N], row[N];        /* Y1: letter 0..10, number 1..11 */
    int8_t at[GRID][GRID + 1];    /* [letter][number]: the point, or -1 */
    int8_t nb[N][6];              /* the neighbour in each direction, or -1 */
    int16_t move_id[N][N];        /* the from-to action (YS_MOVE + k), or -1 */
    uint8_t move_from[YS_MOVES], move_to[YS_MOVES];
    int8_t move_dir[YS_MOVES];    /* the direction from -> to */
    uint8_t win_pts[YS_WINDOWS][5]; /* the window's points, from its first */
    int16_t win_at[N][3];         /* the window starting at a point in a direction, or -1 */
    uint8_t n_through[N];         /* windows through a point */
    uint8_t through[N][15];       /* their ids */
    int16_t cell[N];              /* Y20: (number - 1) * 11 + letter */
    uint8_t sym_pt[SYMS][N];      /* where each symmetry takes a point */
    int16_t sym_cell[SYMS][CELLS];
    int16_t sym_action[SYMS][YS_ACTIONS];
} T;

/* The six directions as (d letter, d number): +number, +letter, +both, then
 * their opposites (d + 3). */
static const int DL[6] = {0, 1, 1, 0, -1, -1};
static const int DN[6] = {1, 0, 1, -1, 0, -1};

static const char *const s_reasons[YS_REASON_COUNT] = {"none", "rings", "markers", "blocked"};

const char *yinsh_reason_name(int r)
{
    return r >= 0 && r < YS_REASON_COUNT ? s_reasons[r] : "unknown";
}

/* Y1: whether (letter, number) is a point: the hexagon of radius 5 around
 * f6 without its corners. */
static bool s_on_board(int l, int n)
{
    int x = l - 5, y = n - 6, z = x - y;
    if (abs(x) > 5 || abs(y) > 5 || abs(z) > 5)
        return false;
    bool corner = (abs(x) == 5 || abs(y) == 5 || abs(z) == 5) &&
                  (x == 0 || y == 0 || z == 0);
    return !corner;
}

static int s_point(int l, int n)
{
    return l >= 0 && l < GRID && n >= 1 && n <= GRID ? T.at[l][n] : -1;
}

/* The window whose two ends are a and b (either order), or -1. */
static int s_window_of_ends(int a, int b)
{
    for (int d = 0; d < 6; d++) {
        int p = a;
        for (int k = 0; k < 4 && p >= 0; k++)
            p = T.nb[p][d];
        if (p == b && p >= 0)
            return d < 3 ? T.win_at[a][d] : T.win_at[b][d - 3];
    }
    return -1;
}

/* Symmetry k of Y20 on axial (x, y): rotations (k < 5: k + 1 steps of
 * (x, y) -> (x - y, x)), then the reflections (k >= 5: (x, y) -> (y, x),
 * then k - 5 rotation steps). */
static void s_sym_xy(int k, int *x, int *y)
{
    int steps = k < 5 ? k + 1 : k - 5;
    if (k >= 5) {
        int t = *x;
        *x = *y;
        *y = t;
    }
    for (int i = 0; i < steps; i++) {
        int nx = *x - *y, ny = *x;
        *x = nx;
        *y = ny;
    }
}

__attribute__((constructor)) static void s_init_tables(void)
{
    memset(&T, -1, sizeof T);
    int n = 0;
    for (int l = 0; l < GRID; l++)
        for (int r = 1; r <= GRID; r++)
            if (s_on_board(l, r)) {
                T.col[n] = (int8_t)l;
                T.row[n] = (int8_t)r;
                T.at[l][r] = (int8_t)n;
                T.cell[n] = (int16_t)((r - 1) * GRID + l);
                n++;
            }
    KZ_CHECK(n == N);
    for (int p = 0; p < N; p++)
        for (int d = 0; d < 6; d++)
            T.nb[p][d] = (int8_t)s_point(T.col[p] + DL[d], T.row[p] + DN[d]);
    /* From-to pairs on a line, ascending by (from, to). */
    int m = 0;
    for (int f = 0; f < N; f++)
        for (int t = 0; t < N; t++) {
            T.move_id[f][t] = -1;
            for (int d = 0; d < 6 && t != f; d++)
                for (int q = T.nb[f][d]; q >= 0; q = T.nb[q][d])
                    if (q == t) {
                        T.move_id[f][t] = (int16_t)(YS_MOVE + m);
                        T.move_from[m] = (uint8_t)f;
                        T.move_to[m] = (uint8_t)t;
                        T.move_dir[m] = (int8_t)d;
                        m++;
                    }
        }
    KZ_CHECK(m == YS_MOVES);
    /* Windows, ascending by (first point, direction). */
    int w = 0;
    memset(T.n_through, 0, sizeof T.n_through);
    for (int p = 0; p < N; p++)
        for (int d = 0; d < 3; d++) {
            int q = p, k = 0;
            uint8_t pts[5];
            for (; k < 5 && q >= 0; k++) {
                pts[k] = (uint8_t)q;
                q = k < 4 ? T.nb[q][d] : q;
            }
            if (k == 5 && q >= 0) {
                memcpy(T.win_pts[w], pts, sizeof pts);
                T.win_at[p][d] = (int16_t)w;
                for (int j = 0; j < 5; j++) {
                    int x = T.win_pts[w][j];
                    T.through[x][T.n_through[x]++] = (uint8_t)w;
                }
                w++;
            }
        }
    KZ_CHECK(w == YS_WINDOWS);
    /* Symmetries: points, cells (off-board cells stay), actions. */
    for (int k = 0; k < SYMS; k++) {
        for (int c = 0; c < CELLS; c++)
            T.sym_cell[k][c] = (int16_t)c;
        for (int p = 0; p < N; p++) {
            int x = T.col[p] - 5, y = T.row[p] - 6;
            s_sym_xy(k, &x, &y);
            int q = s_point(x + 5, y + 6);
            KZ_CHECK(q >= 0);
            T.sym_pt[k][p] = (uint8_t)q;
            T.sym_cell[k][T.cell[p]] = T.cell[q];
        }
        const uint8_t *sp = T.sym_pt[k];
        for (int p = 0; p < N; p++) {
            T.sym_action[k][YS_PLACE + p] = (int16_t)(YS_PLACE + sp[p]);
            T.sym_action[k][YS_RING + p] = (int16_t)(YS_RING + sp[p]);
        }
        for (int i = 0; i < YS_MOVES; i++)
            T.sym_action[k][YS_MOVE + i] = T.move_id[sp[T.move_from[i]]][sp[T.move_to[i]]];
        for (int i = 0; i < YS_WINDOWS; i++) {
            int v = s_window_of_ends(sp[T.win_pts[i][0]], sp[T.win_pts[i][4]]);
            KZ_CHECK(v >= 0);
            T.sym_action[k][YS_ROW + i] = (int16_t)(YS_ROW + v);
        }
        T.sym_action[k][YS_PASS] = YS_PASS;
    }
}

static inline ys_state *S(game_state *g) { return (ys_state *)g->bytes; }
static inline const ys_state *CS(const game_state *g) { return (const ys_state *)g->bytes; }

/* ---- rules ------------------------------------------------------------------------------ */

/* Y6: the destinations of the ring on p as a 128-bit set (lo: points
 * 0..63, hi: 64..84), and their count. */
static inline int s_reach(const ys_state *s, int p, uint64_t *lo, uint64_t *hi)
{
    int n = 0;
    for (int d = 0; d < 6; d++) {
        int q = T.nb[p][d];
        bool jumped = false;
        while (q >= 0) {
            int v = s->board[q];
            if (v == EMPTY) {
                if (q < 64)
                    *lo |= 1ull << q;
                else
                    *hi |= 1ull << (q - 64);
                n++;
                if (jumped)
                    break; /* the first empty point after the markers */
            } else if (v >= MARK) {
                jumped = true;
            } else {
                break; /* a ring: no further */
            }
            q = T.nb[q][d];
        }
    }
    return n;
}

/* Whether the side `c` has a ring that can move (Y8). */
static bool s_can_move(const ys_state *s, int c)
{
    for (int p = 0; p < N; p++)
        if (s->board[p] == RING + c)
            for (int d = 0; d < 6; d++) {
                int q = T.nb[p][d];
                while (q >= 0 && s->board[q] >= MARK)
                    q = T.nb[q][d];
                if (q >= 0 && s->board[q] == EMPTY)
                    return true;
            }
    return false;
}

static inline bool s_window_is(const ys_state *s, int w, int v)
{
    const uint8_t *q = T.win_pts[w];
    return s->board[q[0]] == v && s->board[q[1]] == v && s->board[q[2]] == v &&
           s->board[q[3]] == v && s->board[q[4]] == v;
}

/* Y9: whether colour c has a row anywhere. */
static bool s_has_row(const ys_state *s, int c)
{
    for (int w = 0; w < YS_WINDOWS; w++)
        if (s_window_is(s, w, MARK + c))
            return true;
    return false;
}

/* Ends the game scored by the rings removed (Y17, Y18). */
static void s_score_end(ys_state *s, int reason)
{
    s->over = 1;
    s->reason = (uint8_t)reason;
    s->winner = s->removed[0] > s->removed[1] ? 0 : s->removed[1] > s->removed[0] ? 1 : -1;
}

/* The stage of the side to move at the start of its turn, and the ends
 * decided there (Y4, Y14, Y17, Y18). */
static void s_begin_turn(ys_state *s, bool after_pass)
{
    s->acted = 0;
    s->after = 0;
    if (s->rings[0] + s->rings[1] + s->removed[0] + s->removed[1] < 2 * YS_RINGS) {
        s->stage = ST_PLACE;
        return;
    }
    if (s_has_row(s, s->side)) {
        s->stage = ST_ROW; /* Y14: the rows the opponent made, before the move */
        return;
    }
    s->stage = ST_MOVE;
    if (s->markers >= YS_MARKERS)
        s_score_end(s, YS_REASON_MARKERS);
    else if (after_pass && !s_can_move(s, s->side))
        s_score_end(s, YS_REASON_BLOCKED);
}

static void s_end_turn(ys_state *s, bool passed)
{
    s->side ^= 1;
    s->ply++;
    s_begin_turn(s, passed);
}

/* The legal actions, ascending (Y4-Y11, Y21); their count. */
static int s_legal(const ys_state *s, uint16_t *out)
{
    if (s->over)
        return 0;
    int n = 0, c = s->side;
    switch (s->stage) {
    case ST_PLACE:
        for (int p = 0; p < N; p++)
            if (s->board[p] == EMPTY)
                out[n++] = (uint16_t)(YS_PLACE + p);
        return n;
    case ST_MOVE:
        for (int p = 0; p < N; p++) {
            if (s->board[p] != RING + c)
                continue;
            uint64_t lo = 0, hi = 0;
            s_reach(s, p, &lo, &hi);
            for (; lo; lo &= lo - 1)
                out[n++] = (uint16_t)T.move_id[p][__builtin_ctzll(lo)];
            for (; hi; hi &= hi - 1)
                out[n++] = (uint16_t)T.move_id[p][64 + __builtin_ctzll(hi)];
        }
        if (!n)
            out[n++] = YS_PASS; /* Y8 */
        return n;
    case ST_ROW:
        for (int w = 0; w < YS_WINDOWS; w++)
            if (s_window_is(s, w, MARK + c))
                out[n++] = (uint16_t)(YS_ROW + w);
        return n;
    default: /* ST_RING */
        for (int p = 0; p < N; p++)
            if (s->board[p] == RING + c)
                out[n++] = (uint16_t)(YS_RING + p);
        return n;
    }
}

/* Plays a legal action (Y4-Y18). */
static void s_apply(ys_state *s, int a)
{
    int c = s->side;
    if (a < YS_MOVE) { /* Y4 */
        s->board[a - YS_PLACE] = (uint8_t)(RING + c);
        s->rings[c]++;
        s_end_turn(s, false);
        return;
    }
    if (a < YS_ROW) { /* Y5-Y7 */
        int k = a - YS_MOVE, f = T.move_from[k], t = T.move_to[k], d = T.move_dir[k];
        s->board[f] = (uint8_t)(MARK + c);
        s->markers++;
        for (int q = T.nb[f][d]; q != t; q = T.nb[q][d])
            if (s->board[q] >= MARK)
                s->board[q] ^= 7; /* 3 <-> 4: the marker turns over */
        s->board[t] = (uint8_t)(RING + c);
        if (s_has_row(s, c)) {
            s->stage = ST_ROW; /* Y14: the mover's rows first */
            s->after = 1;
            s->acted = 1;
        } else {
            s_end_turn(s, false);
        }
        return;
    }
    if (a < YS_RING) { /* Y10: the row's markers back to the pool */
        const uint8_t *q = T.win_pts[a - YS_ROW];
        for (int j = 0; j < 5; j++)
            s->board[q[j]] = EMPTY;
        s->markers -= 5;
        s->stage = ST_RING;
        s->acted = 1;
        return;
    }
    if (a < YS_PASS) { /* Y10: then a ring */
        s->board[a - YS_RING] = EMPTY;
        s->rings[c]--;
        s->removed[c]++;
        s->acted = 1;
        if (s->removed[c] >= s->target) { /* Y16: at once */
            s->side ^= 1;
            s->ply++;
            s->acted = 0;
            s->after = 0;
            s->over = 1;
            s->winner = (int8_t)c;
            s->reason = YS_REASON_RINGS;
            return;
        }
        if (s_has_row(s, c))
            s->stage = ST_ROW; /* Y11, Y13: while a row remains */
        else if (s->after)
            s_end_turn(s, false);
        else
            s->stage = ST_MOVE; /* Y14: now the move (or a pass, Y8) */
        return;
    }
    s_end_turn(s, true); /* Y8: pass */
}

static int ys_legal_actions(const game_state *g, uint16_t *out) { return s_legal(CS(g), out); }

static void ys_copy(game_state *dst, const game_state *src)
{
    memcpy(dst->bytes, src->bytes, sizeof(ys_state));
}

static void ys_apply(game_state *g, int action)
{
    assert(action >= 0 && action < YS_ACTIONS);
    assert(!CS(g)->over);
    s_apply(S(g), action);
}

static int ys_to_move(const game_state *g) { return CS(g)->side; }
static bool ys_mid_turn(const game_state *g) { return CS(g)->acted != 0; }
static int ys_ply(const game_state *g) { return CS(g)->ply; }

static game_result ys_result(const game_state *g)
{
    const ys_state *s = CS(g);
    game_result r = {.over = false, .winner = -1, .reason = 0};
    if (s->over)
        r = (game_result){.over = true, .winner = s->winner, .reason = s->reason};
    return r;
}

static void s_init(game_state *g, int target)
{
    memset(g, 0, sizeof *g);
    ys_state *s = S(g);
    s->target = (uint8_t)target;
    s->stage = ST_PLACE;
}

static void ys_init(game_state *g) { s_init(g, 3); }
static void ys_blitz_init(game_state *g) { s_init(g, 1); }

/* ---- the network's view (Y20) ----------------------------------------------------------- */

/* The board from the mover's view: 0 empty, 1 own ring, 2 own marker, 3 the
 * opponent's ring, 4 its marker. */
static inline uint8_t s_canon(int v, int side)
{
    if (v == EMPTY)
        return 0;
    bool own = ((v - 1) & 1) == side;
    return (uint8_t)((v >= MARK ? 2 : 1) + (own ? 0 : 2));
}

static void s_planes(const uint8_t *canon, int own_removed, int opp_removed, int stage,
                     int after, int target, float *out)
{
    memset(out, 0, sizeof(float) * PLANES * CELLS);
    int markers = 0;
    for (int p = 0; p < N; p++)
        markers += canon[p] == 2 || canon[p] == 4;
    float fill[PLANES] = {0};
    fill[4] = 1.0f;
    fill[5] = stage == ST_PLACE;
    fill[6] = stage == ST_ROW;
    fill[7] = stage == ST_RING;
    fill[8] = after != 0;
    fill[9] = (float)own_removed / (float)target;
    fill[10] = (float)opp_removed / (float)target;
    fill[11] = (float)(YS_MARKERS - markers) / YS_MARKERS;
    for (int p = 0; p < N; p++) {
        int c = T.cell[p];
        if (canon[p])
            out[(canon[p] - 1) * CELLS + c] = 1.0f;
        for (int k = 4; k < PLANES; k++)
            out[k * CELLS + c] = fill[k];
    }
}

static void ys_encode_planes(const game_state *g, float *out)
{
    const ys_state *s = CS(g);
    uint8_t canon[N];
    for (int p = 0; p < N; p++)
        canon[p] = s_canon(s->board[p], s->side);
    s_planes(canon, s->removed[s->side], s->removed[s->side ^ 1], s->stage, s->after, s->target,
             out);
}

/* The trees' features (nn/gbdt.h, Y20): the four piece planes on the 85
 * points only, then planes 5..11 once (they fill the board): 347 floats
 * instead of the 1,452 of the whole grid, with nothing lost. */
#define FEATURES (4 * N + PLANES - 5)

static void ys_features(const float *planes, float *out)
{
    for (int k = 0; k < 4; k++)
        for (int p = 0; p < N; p++)
            *out++ = planes[k * CELLS + T.cell[p]];
    for (int k = 5; k < PLANES; k++)
        *out++ = planes[k * CELLS + T.cell[0]];
}

/* Y20: the colours are symmetric and the board is not turned. */
static int ys_canonical_action(const game_state *g, int action)
{
    (void)g;
    assert(action >= 0 && action < YS_ACTIONS);
    return action;
}

static uint64_t ys_hash(const game_state *g)
{
    const ys_state *s = CS(g);
    uint64_t h = 0x79696e7368ull;
    for (int p = 0; p < N; p += 8) {
        uint64_t w = 0;
        for (int j = 0; j < 8 && p + j < N; j++)
            w |= (uint64_t)s->board[p + j] << (8 * j);
        h = mix64(h ^ w);
    }
    uint64_t extra = (uint64_t)s->side | (uint64_t)s->stage << 8 | (uint64_t)s->after << 16 |
                     (uint64_t)s->acted << 24 | (uint64_t)s->removed[0] << 32 |
                     (uint64_t)s->removed[1] << 40 | (uint64_t)s->target << 48 |
                     (uint64_t)s->over << 56;
    return mix64(h ^ mix64(extra));
}

/* Packed (31 bytes): the mover's-view board three points a byte (p0 + 5 p1
 * + 25 p2; 29 bytes), then own removed | opponent's removed << 2 | stage
 * << 4 | after << 6, then the target. */
#define PACKED 31

static void ys_pack(const game_state *g, uint8_t *out)
{
    const ys_state *s = CS(g);
    memset(out, 0, PACKED);
    for (int p = 0; p < N; p++) {
        static const uint8_t mul[3] = {1, 5, 25};
        out[p / 3] = (uint8_t)(out[p / 3] + mul[p % 3] * s_canon(s->board[p], s->side));
    }
    out[29] = (uint8_t)(s->removed[s->side] | s->removed[s->side ^ 1] << 2 | s->stage << 4 |
                        s->after << 6);
    out[30] = s->target;
}

static int ys_unpack_planes(const uint8_t *in, float *out)
{
    uint8_t canon[N];
    int count[5] = {0};
    for (int i = 0; i < 29; i++)
        if (in[i] >= 125 || (i == 28 && in[i] >= 5))
            return KZ_ECORRUPT;
    for (int p = 0; p < N; p++) {
        int v = in[p / 3];
        for (int k = p % 3; k > 0; k--)
            v /= 5;
        canon[p] = (uint8_t)(v % 5);
        count[canon[p]]++;
    }
    int own = in[29] & 3, opp = in[29] >> 2 & 3, stage = in[29] >> 4 & 3, after = in[29] >> 6;
    int target = in[30];
    if ((target != 1 && target != 3) || own > target || opp > target || after > 1 ||
        count[1] + own > YS_RINGS || count[3] + opp > YS_RINGS ||
        count[2] + count[4] > YS_MARKERS || (after && stage < ST_ROW))
        return KZ_ECORRUPT;
    s_planes(canon, own, opp, stage, after, target, out);
    return 0;
}

/* ---- notation (Y22, Y23) ---------------------------------------------------------------- */

int yinsh_parse_point(const char **p)
{
    const char *q = *p;
    if (q[0] < 'a' || q[0] > 'k' || q[1] < '1' || q[1] > '9')
        return -1;
    int l = q[0] - 'a', n = q[1] - '0';
    q += 2;
    if (isdigit((unsigned char)q[0])) {
        n = n * 10 + (q[0] - '0');
        q++;
    }
    if (isdigit((unsigned char)q[0]))
        return -1;
    int pt = s_point(l, n);
    if (pt >= 0)
        *p = q;
    return pt;
}

void yinsh_point_name(int point, char *buf)
{
    assert(point >= 0 && point < N);
    snprintf(buf, 4, "%c%d", 'a' + T.col[point], T.row[point]);
}

static int ys_parse_action(const char *str, int *action)
{
    if (!str)
        return KZ_EINVAL;
    if (!strcmp(str, "pass")) {
        *action = YS_PASS;
        return 0;
    }
    const char *p = str;
    bool ring = *p == 'x';
    p += ring;
    int a = yinsh_parse_point(&p);
    if (a < 0)
        return KZ_EINVAL;
    if (ring || !*p) {
        if (*p)
            return KZ_EINVAL;
        *action = (ring ? YS_RING : YS_PLACE) + a;
        return 0;
    }
    char sep = *p++;
    int b = yinsh_parse_point(&p);
    if (b < 0 || *p)
        return KZ_EINVAL;
    int id = sep == '-' ? T.move_id[a][b] : sep == ':' ? s_window_of_ends(a, b) : -1;
    if (id < 0)
        return KZ_EINVAL; /* not on a line, or not five points apart */
    *action = sep == '-' ? id : YS_ROW + id;
    return 0;
}

static void ys_format_action(int action, char *buf, size_t len)
{
    char a[4], b[4];
    if (action < 0 || action >= YS_ACTIONS) {
        snprintf(buf, len, "?");
    } else if (action < YS_MOVE) {
        yinsh_point_name(action - YS_PLACE, a);
        snprintf(buf, len, "%s", a);
    } else if (action < YS_ROW) {
        yinsh_point_name(T.move_from[action - YS_MOVE], a);
        yinsh_point_name(T.move_to[action - YS_MOVE], b);
        snprintf(buf, len, "%s-%s", a, b);
    } else if (action < YS_RING) {
        yinsh_point_name(T.win_pts[action - YS_ROW][0], a);
        yinsh_point_name(T.win_pts[action - YS_ROW][4], b);
        snprintf(buf, len, "%s:%s", a, b);
    } else if (action < YS_PASS) {
        yinsh_point_name(action - YS_RING, a);
        snprintf(buf, len, "x%s", a);
    } else {
        snprintf(buf, len, "pass");
    }
}

char yinsh_at(const game_state *g, int point)
{
    assert(point >= 0 && point < N);
    return ".WBwb"[CS(g)->board[point]];
}

static const char *const s_stage_names[4] = {"place", "move", "row", "ring"};

static void ys_format_position(const game_state *g, char *buf, size_t len)
{
    const ys_state *s = CS(g);
    char tmp[128];
    for (int p = 0; p < N; p++)
        tmp[p] = yinsh_at(g, p);
    snprintf(tmp + N, sizeof tmp - N, " %c %d%d %s %s%s%s", s->side ? 'b' : 'w', s->removed[0],
             s->removed[1], s_stage_names[s->stage], s->after ? "a" : "", s->acted ? "t" : "",
             s->after || s->acted ? "" : "-");
    snprintf(buf, len, "%s", tmp);
}

/* Y23, for a game whose target is `target`. */
static int s_parse_position(game_state *g, const char *str, char *err, size_t errlen,
                            int target)
{
    static const char usage[] = "a position is 85 points of . W B w b, then w or b, the rings "
                                "removed by White and Black (two digits), the stage (place, "
                                "move, row, ring) and the flags - t or at (Y23)";
    game_state t;
    s_init(&t, target);
    ys_state *s = S(&t);
    if (!str || strlen(str) < N + 2)
        return err_set(err, errlen, KZ_EINVAL, "%s", usage);
    for (int p = 0; p < N; p++) {
        const char *c = strchr(".WBwb", str[p]);
        if (!c || !*c) {
            char name[4];
            yinsh_point_name(p, name);
            return err_set(err, errlen, KZ_EINVAL, "point %s: '%c' is not . W B w or b (Y23)",
                           name, str[p]);
        }
        s->board[p] = (uint8_t)(c - ".WBwb");
    }
    char side, flags[8], stage[8];
    int r0, r1, used = 0;
    if (sscanf(str + N, " %c %1d%1d %7s %7s%n", &side, &r0, &r1, stage, flags, &used) != 5 ||
        str[N] != ' ' || str[N + used] || (side != 'w' && side != 'b'))
        return err_set(err, errlen, KZ_EINVAL, "%s", usage);
    s->side = side == 'b';
    s->removed[0] = (uint8_t)r0;
    s->removed[1] = (uint8_t)r1;
    int st = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(stage, s_stage_names[k]))
            st = k;
    bool fa = !strcmp(flags, "a") || !strcmp(flags, "at"), ft = !strcmp(flags, "t") ||
                                                                 !strcmp(flags, "at");
    if (st < 0 || (!fa && !ft && strcmp(flags, "-")))
        return err_set(err, errlen, KZ_EINVAL, "%s", usage);
    if (r0 >= target || r1 >= target)
        return err_set(err, errlen, KZ_EINVAL,
                       "a side has removed %d rings or more: the game is over (Y16)", target);
    for (int p = 0; p < N; p++) {
        int v = s->board[p];
        if (v >= RING && v < MARK)
            s->rings[v - RING]++;
        else if (v >= MARK)
            s->markers++;
    }
    s->stage = (uint8_t)st;
    s->after = fa;
    s->acted = fa || ft;
    for (int c = 0; c < 2; c++)
        if (s->rings[c] + s->removed[c] > YS_RINGS)
            return err_set(err, errlen, KZ_EINVAL, "more than %d rings of a side (Y3)",
                           YS_RINGS);
    if (s->markers > YS_MARKERS)
        return err_set(err, errlen, KZ_EINVAL, "more than %d markers (Y3)", YS_MARKERS);
    int placed = s->rings[0] + s->rings[1] + r0 + r1;
    if (st == ST_PLACE) {
        if (placed >= 2 * YS_RINGS || r0 || r1 || s->markers || s->acted ||
            s->rings[0] - s->rings[1] != s->side)
            return err_set(err, errlen, KZ_EINVAL,
                           "placement: fewer than 10 rings, White's count equal to Black's "
                           "(White to place) or one more (Black to place), no markers (Y4)");
    } else {
        bool row_own = s_has_row(s, s->side), row_opp = s_has_row(s, s->side ^ 1);
        if (placed != 2 * YS_RINGS)
            return err_set(err, errlen, KZ_EINVAL, "after placement: 5 rings a side on the "
                                                   "board or removed (Y4)");
        if (st == ST_MOVE && (row_own || row_opp || s->after))
            return err_set(err, errlen, KZ_EINVAL,
                           "a move is due only when no row stands (Y11, Y14)");
        if (st == ST_ROW && !row_own)
            return err_set(err, errlen, KZ_EINVAL, "a row removal is due only with a row of "
                                                   "the side's colour (Y11)");
        if (st == ST_RING && !s->acted)
            return err_set(err, errlen, KZ_EINVAL, "a ring removal follows a row removal in "
                                                   "the same turn (flag t, Y10)");
        if (!s->after && row_opp)
            return err_set(err, errlen, KZ_EINVAL, "the opponent's rows stand only after the "
                                                   "side's move (flag a, Y14)");
        if (st == ST_MOVE && s->markers >= YS_MARKERS) {
            if (s->acted)
                return err_set(err, errlen, KZ_EINVAL, "51 markers after removals (Y18)");
            s_score_end(s, YS_REASON_MARKERS);
        }
    }
    char again[GAME_POSITION_CHARS + 1];
    ys_format_position(&t, again, sizeof again);
    if (strcmp(again, str))
        return err_set(err, errlen, KZ_EINVAL, "%s; single spaces, flags - t or at", usage);
    *g = t;
    return 0;
}

static int ys_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    return s_parse_position(g, str, err, errlen, 3);
}

static int ys_blitz_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    return s_parse_position(g, str, err, errlen, 1);
}

static const char *ys_player_name(int player) { return player == 0 ? "white" : "black"; }

/* The board, columns upright (a on the left), each point drawn at (3 *
 * letter, 2 * number - letter): the three lines are the columns and the two
 * slants. marks (may be NULL): '*' where the last turn's ring started. */
static void s_draw(const game_state *g, const char *marks, FILE *out)
{
    const ys_state *s = CS(g);
    fputs("    a  b  c  d  e  f  g  h  i  j  k\n", out);
    for (int y = 2 * GRID - 0; y >= 2 - (GRID - 1); y--) {
        char line[64];
        memset(line, ' ', sizeof line);
        int last = -1;
        for (int p = 0; p < N; p++)
            if (2 * T.row[p] - T.col[p] == y) {
                int x = 4 + 3 * T.col[p];
                line[x] = yinsh_at(g, p);
                if (marks && marks[p])
                    line[x + 1] = marks[p];
                last = x + 1;
            }
        if (last < 0)
            continue;
        line[last + 1] = '\0';
        fprintf(out, "%s\n", line);
    }
    fputs("    a  b  c  d  e  f  g  h  i  j  k\n", out);
    char pos[GAME_POSITION_CHARS + 1];
    ys_format_position(g, pos, sizeof pos);
    fprintf(out,
            "\n  columns count up from a2 b1 c1 d1 e1 f2 g2 h3 i4 j5 k7 (the lowest points)\n"
            "  %s to act (%s), ply %d; rings removed: white %d, black %d (%d win); "
            "markers in the pool: %d\n  position: %s\n",
            ys_player_name(s->side), s->over ? "game over" : s_stage_names[s->stage], s->ply,
            s->removed[0], s->removed[1], s->target, YS_MARKERS - s->markers, pos);
}

static void ys_render(const game_state *g, FILE *out) { s_draw(g, NULL, out); }

/* kz play's board: the last turn's actions written out, its ring's start marked. */
static void ys_render_turn(const game_state *from, const uint16_t *actions, int n, bool turned,
                           FILE *out)
{
    (void)turned; /* Y20: the board has no side to turn towards */
    char marks[N] = {0}, last[200] = "";
    game_state s;
    ys_copy(&s, from);
    if (n)
        snprintf(last, sizeof last, "last: %s ", ys_player_name(CS(&s)->side));
    for (int k = 0; k < n; k++) {
        char a[16];
        ys_format_action(actions[k], a, sizeof a);
        if (actions[k] >= YS_MOVE && actions[k] < YS_ROW)
            marks[T.move_from[actions[k] - YS_MOVE]] = '*';
        snprintf(last + strlen(last), sizeof last - strlen(last), "%s%s", k ? ", " : "", a);
        ys_apply(&s, actions[k]);
    }
    s_draw(&s, marks, out);
    if (last[0])
        fprintf(out, "  %s   (* where the ring started)\n", last);
}

/* ---- baselines' hooks ------------------------------------------------------------------- */

/* Rows in reach: windows holding four markers of colour c and, on the
 * fifth point, an empty point or a ring of c (whose move leaves a marker). */
static int s_rows_in_reach(const ys_state *s, int c)
{
    int n = 0;
    for (int w = 0; w < YS_WINDOWS; w++) {
        int own = 0, free_pt = 0;
        for (int j = 0; j < 5; j++) {
            int v = s->board[T.win_pts[w][j]];
            own += v == MARK + c;
            free_pt += v == EMPTY || v == RING + c;
        }
        n += own == 4 && free_pt == 1;
    }
    return n;
}

static int s_mobility(const ys_state *s, int c)
{
    int n = 0;
    for (int p = 0; p < N; p++)
        if (s->board[p] == RING + c) {
            uint64_t lo = 0, hi = 0;
            n += s_reach(s, p, &lo, &hi);
        }
    return n;
}

/* The baselines' evaluation from the mover's view (game.h): a ring removed
 * 1000, a marker on the board 10, a ring destination 3, a row in reach 50,
 * each own minus the opponent's. During placement 0: nothing is scored yet,
 * the baselines place at random (their ties are broken at random) unless
 * their search reaches the moves, and every placement opening is level for
 * the opening books (match_openings keeps the openings whose greedy value
 * is 0). */
static long ys_evaluate(const game_state *g)
{
    const ys_state *s = CS(g);
    if (s->stage == ST_PLACE)
        return 0;
    int me = s->side, op = me ^ 1, mk[2] = {0, 0};
    for (int p = 0; p < N; p++)
        if (s->board[p] >= MARK)
            mk[s->board[p] - MARK]++;
    return 1000L * (s->removed[me] - s->removed[op]) + 10L * (mk[me] - mk[op]) +
           3L * (s_mobility(s, me) - s_mobility(s, op)) +
           50L * (s_rows_in_reach(s, me) - s_rows_in_reach(s, op));
}

/* The rings removed, own minus the opponent's, over the target. */
static float ys_material(const game_state *g, int player)
{
    const ys_state *s = CS(g);
    float v = (float)(s->removed[player] - s->removed[player ^ 1]) / (float)s->target;
    return v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
}

/* A row to remove is the tactical moment the baselines search on. */
static bool ys_must_capture(const game_state *g) { return CS(g)->stage == ST_ROW; }

/* ---- the description for the web pages (games/view.h, docs/web.md) --------------------- */

/* The board as the rulebook draws it: the columns upright, a on the left and
 * the numbers growing upwards; neighbours 1 apart on a triangular lattice
 * (x = letter * sqrt(3)/2, y = 8 - number + letter / 2, y downwards). */
static void s_xy(int p, double *x, double *y)
{
    *x = T.col[p] * 0.8660254;
    *y = 8.0 - T.row[p] + T.col[p] * 0.5;
}

/* The 85 points (Y1) labelled as Y22 names them, the 222 lines between
 * neighbours (Y2), rings and markers (Y23's W B w b), the rings removed
 * (the position's third field, one digit per player) as `target` slots per
 * player in the corners, actions as Y22 writes them. */
static void s_describe(strbuf *out, const game_def *g, int target)
{
    view_open(out, g, "#f7f3e8", "#1e1e1e");
    strbuf_printf(out, ",\n\"board\": {\"points\": [");
    for (int p = 0; p < N; p++) {
        double x, y;
        char name[4];
        s_xy(p, &x, &y);
        yinsh_point_name(p, name);
        strbuf_printf(out, "%s[%.4f, %.1f, \"%s\"]", p ? ", " : "", x, y, name);
    }
    strbuf_printf(out, "],\n \"lines\": [");
    int n = 0;
    for (int p = 0; p < N; p++)
        for (int d = 0; d < 3; d++)
            if (T.nb[p][d] >= 0)
                strbuf_printf(out, "%s[%d, %d]", n++ ? ", " : "", p, T.nb[p][d]);
    /* White's removed rings below the lower left edge, Black's above the upper right. */
    strbuf_printf(out, "],\n \"tallies\": {\"field\": \"removed\", \"pieces\": [\"W\", \"B\"], "
                       "\"slots\": %d, \"at\": [[0, 9.6, 0.9, 0], [8.6603, -0.6, -0.9, 0]]},\n"
                       " \"bottom\": 0, \"labels\": \"corner\", \"background\": \"#d9c59a\", "
                       "\"ink\": \"#5b4526\", \"piece\": 0.4},\n"
                       "\"pieces\": {\"W\": {\"player\": 0, \"kind\": \"ring\"}, "
                       "\"B\": {\"player\": 1, \"kind\": \"ring\"}, "
                       "\"w\": {\"player\": 0, \"kind\": \"marker\"}, "
                       "\"b\": {\"player\": 1, \"kind\": \"marker\"}},\n"
                       "\"position\": {\"board\": \"chars\", \"empty\": \".\", "
                       "\"fields\": [\"side\", \"removed\", \"stage\", \"flags\"]},\n"
                       "\"actions\": {\"separators\": \"-:\", \"prefixes\": \"x\", "
                       "\"capture\": \":\", \"either\": \":\", \"path\": \"-\", "
                       "\"taken\": \"any\",\n"
                       " \"says\": {\"\": \"place a ring on an empty point\", "
                       "\"-\": \"click one of your rings, then where it goes "
                       "(it leaves a marker)\", "
                       "\":\": \"remove a row of five of your markers: click its two ends\", "
                       "\"x\": \"remove one of your rings\"}}}",
                  target);
}

static void ys_describe(strbuf *out) { s_describe(out, &yinsh_game, 3); }
static void ys_blitz_describe(strbuf *out) { s_describe(out, &yinsh_blitz_game, 1); }

/* ---- symmetries (Y20) ------------------------------------------------------------------- */

#define SYM_FN(k)                                                                           \
    static int s_sym##k(int a) { return T.sym_action[k][a]; }
SYM_FN(0) SYM_FN(1) SYM_FN(2) SYM_FN(3) SYM_FN(4) SYM_FN(5) SYM_FN(6) SYM_FN(7) SYM_FN(8)
SYM_FN(9) SYM_FN(10)

#define SYM(k, name) {name, T.sym_cell[k], NULL, s_sym##k}
static const game_symmetry s_symmetries[SYMS] = {
    SYM(0, "rot60"),   SYM(1, "rot120"),  SYM(2, "rot180"),  SYM(3, "rot240"),
    SYM(4, "rot300"),  SYM(5, "mirror"),  SYM(6, "mirror60"), SYM(7, "mirror120"),
    SYM(8, "mirror180"), SYM(9, "mirror240"), SYM(10, "mirror300"),
};

#define YS_COMMON                                                                           \
    .action_count = YS_ACTIONS, .planes = PLANES, .height = GRID, .width = GRID,             \
    .max_legal = 5 * MAX_REACH, .packed_bytes = PACKED, .state_bytes = (int)sizeof(ys_state), \
    .position_chars = 100, .simulations = 200, .dirichlet_alpha = 0.3f,                      \
    .reasons = s_reasons, .n_reasons = YS_REASON_COUNT, .max_points = 1,                    \
    .n_symmetries = SYMS, .symmetries = s_symmetries, .legal_actions = ys_legal_actions,     \
    .copy = ys_copy, .apply = ys_apply, .to_move = ys_to_move, .mid_turn = ys_mid_turn,      \
    .ply = ys_ply, .result = ys_result, .encode_planes = ys_encode_planes,                   \
    .canonical_action = ys_canonical_action, .hash = ys_hash, .pack = ys_pack,               \
    .unpack_planes = ys_unpack_planes, .format_position = ys_format_position,                \
    .parse_action = ys_parse_action, .format_action = ys_format_action,                      \
    .render = ys_render, .render_turn = ys_render_turn, .player_name = ys_player_name,       \
    .material = ys_material, .evaluate = ys_evaluate, .must_capture = ys_must_capture,       \
    .mid_turn_verb = "goes on", .legend = s_legend, .n_features = FEATURES,                 \
    .features = ys_features

static const char s_legend[] =
    "Place your 5 rings; then each turn put a marker of your colour in one of your rings\n"
    "and move the ring in a straight line over empty points and over one group of\n"
    "markers to the first empty point after them (Y6): the markers it jumps turn over.\n"
    "Five of your markers in a line form a row: remove it (e5:e9), then one of your rings\n"
    "(xe5). Three rings removed win (Y16). On the board: W B rings, w b markers, * where\n"
    "the last ring started. Actions: e5 (place), e5-e8 (move), e5:e9, xe5, pass.\n";

const game_def yinsh_game = {
    .name = "yinsh",
    .init = ys_init,
    .parse_position = ys_parse_position,
    .describe = ys_describe,
    YS_COMMON,
};

const game_def yinsh_blitz_game = {
    .name = "yinsh-blitz",
    .init = ys_blitz_init,
    .parse_position = ys_blitz_parse_position,
    .describe = ys_blitz_describe,
    YS_COMMON,
};
