/* khreibaga: the rules engine (R1-R22 of docs/rules.md).
 *
 * Representation. Bitboards in 32-bit words, bit sq = point sq: the pieces
 * of the side to move (own), those of the other side (opp), the kings of
 * both; the turn passing swaps own and opp. Everything geometric is a table
 * filled once at start-up (s_init_tables) or a constant checked there.
 *
 * Men (R3, R4). Simple moves: three direction bitboards, constant shifts of
 * all men at once. First capture hops: for each of the 4 axes (N/S, E/W,
 * NE/SW, NW/SE) one 64-bit word holds, with right shifts only, the men that
 * hop up the axis (low half) and the landing points of the hops down it (high
 * half). A single man's capture test (does it go on after a hop?) looks up
 * the landing points behind its adjacent enemies without a branch per enemy.
 *
 * Kings (R5, R6). For each of the up to 4 lines through a point, the line's
 * occupancy, masked and multiplied, indexes what a king there sees: the
 * empty points up to the nearest piece each way, and those pieces. Simple
 * moves are what it sees that is empty; captures are the enemies it sees
 * with an empty point behind them, landing on any empty point beyond up to
 * the next piece (tables behind/away).
 *
 * Legal actions (R8, R9). Step 1: every capture hop with a flag: can the
 * piece capture again after it. Step 2, the majority rule: when no hop can
 * go on, every hop is legal; when exactly one can, it alone is (its sequence
 * is longer than all others); only when several can is the longest chain
 * after each searched, depth first over bitboards, and those reaching the
 * maximum are legal. Without captures, the simple moves. Mid-sequence the
 * same two steps run on the one piece that must go on: the hops made so far
 * belong to a maximal sequence, so the legal next hops are those with the
 * longest chain left. apply() itself only asks whether the piece can capture
 * again (R8: a sequence goes on while it can), which costs no search.
 *
 * Repetition (R14). Between a capture or a man move and the next one, only kings
 * move, and no earlier position can recur across a capture (pieces only
 * disappear) or a man move (men only move forward, never back, and never
 * un-promote). So history is kept only since the last such turn, and within it
 * the men never change: a position is identified exactly by the kings of both
 * sides and the side to move, 51 bits in one uint64. At most 51 turn starts
 * fit between two resets before R13 ends the game. Within the window the
 * turn starts alternate sides, and a king move always changes its side's
 * kings, so a position can only recur 4, 6, 8, ... turns later: only those
 * entries are compared. Right after a reset the window's one key is left
 * implicit until a king move needs it; mid-sequence the history is empty (the
 * turn will end with a capture, which resets it).
 *
 * Perft (R22) has its own loop here (game_def.perft): no indirect calls, the
 * terminal test read off the state and the legal-action count, every child
 * made in full, leaves too, by the same make functions apply() uses, written
 * straight from the parent's values (no copy of the parent first) and given
 * what generation found (the captured point, whether the piece goes on).
 */
/* This file alone at -O3 (the project builds at -O2): the rules engine is the
 * hot loop of perft and search, and -O3 saves it ~3.5% of its instructions. */
#pragma GCC optimize("O3")
#include "games/khreibaga.h"

#include <assert.h>
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "games/board5.h"
#include "common/util.h"
#include "games/view.h"

#define HIST_MAX (KH_NO_PROGRESS + 1)
#define ALL_POINTS 0x1ffffffu
#define ROW0 0x1fu
#define ROW4 (0x1fu << 20)
#define MAX_HOPS 128 /* most capture hops in one state: 12 pieces, each at most 10 (checked) */

typedef struct kh_state {
    uint32_t own;            /* the pieces of the side to move */
    uint32_t opp;            /* the other side's pieces */
    uint32_t kings;          /* kings of both colours */
    uint16_t ply;            /* completed turns */
    uint8_t side;            /* player to move: 0 Black, 1 White */
    int8_t chain;            /* point of the piece that must hop on, -1 at a turn start */
    uint8_t no_progress;     /* R13: turns since the last capture or man move */
    uint8_t reps;            /* R14: occurrences of this turn-start position, 0 mid-sequence */
    uint8_t hist_len;        /* entries in hist, 0 when implicit (see below) */
    uint64_t hist[HIST_MAX]; /* turn-start keys since the last capture or man move */
} kh_state;
/* History (R14): hist[0..hist_len) are the keys (s_key) of the turn starts
 * since the last capture or man move, oldest first, this one last. Right
 * after such a turn the window holds only the current position: then
 * hist_len is 0 and its key is written only when a king's simple move
 * starts to need it. Mid-sequence hist_len is 0 too (the turn will end with
 * a capture). */

/* The bytes before the history: what every copy takes. */
#define HEAD_BYTES offsetof(kh_state, hist)

_Static_assert(sizeof(kh_state) <= GAME_STATE_BYTES, "kh_state must fit game_state");

/* Directions as (drow, dcol), and their step in point numbers. */
enum { DIR_N, DIR_S, DIR_E, DIR_W, DIR_NE, DIR_NW, DIR_SE, DIR_SW };
#define STEP(d) ((d) == DIR_N ? 5 : (d) == DIR_S ? -5 : (d) == DIR_E ? 1 : (d) == DIR_W ? -1 \
                 : (d) == DIR_NE ? 6 : (d) == DIR_NW ? 4 : (d) == DIR_SE ? -4 : -6)

/* A king's view along the (up to 4) lines through its point, for R5 and R6.
 * For line k: the occupancy of its points, masked and multiplied, gives in
 * its top 5 bits (>> 27) an index; att[k][index] is what the king sees along
 * that line: the empty points up to the nearest piece each way, and those
 * nearest pieces. Absent lines have mask 0 and an empty att[k][0]. */
typedef struct king_lines {
    uint32_t mask[4];    /* the line's points */
    uint32_t mul[4];     /* gathers them into bits 27..31 */
    uint32_t att[4][32]; /* seen points, by gathered occupancy */
} king_lines;
#define KL_SHIFT 27

static struct {
    king_lines kl[KH_POINTS];               /* a king's view along its lines, by point */
    uint32_t away[KH_POINTS][KH_POINTS];    /* the points behind c seen from sq on their line */
    uint32_t behind[KH_POINTS][KH_POINTS];  /* the first of them (0 if none, or off-line) */
    uint32_t lines[KH_POINTS];              /* all points on the lines through a point */
    uint32_t adj[KH_POINTS];                /* the points one step away along a line */
    uint32_t jump_from[8];                  /* points with a ray of length >= 2, by direction */
    uint32_t man_caps[KH_POINTS];           /* the points a man on sq could jump over (R4) */
    uint32_t hop_land[KH_POINTS][32];       /* landing of a man's hop sq over c < 32, or 0 */
    uint32_t fwd[2][KH_POINTS];             /* a man's forward neighbours (R3) */
    uint32_t fwd_from[2][3];                /* points with a forward step, by forward direction */
    uint32_t between[KH_POINTS][KH_POINTS]; /* points strictly between src and dst on one line */
    uint16_t rot_action[KH_ACTIONS];        /* R16 rotation of an action */
    uint16_t mirror_action[KH_ACTIONS];     /* R19 mirror of an action */
    uint64_t zob[4][KH_POINTS];             /* hash keys: black/white man/king, by point */
} T;

/* Forward directions of each colour (R3): N, NE, NW for Black, S, SE, SW for White. */
static const int FWD_DIR[2][3] = {{DIR_N, DIR_NE, DIR_NW}, {DIR_S, DIR_SE, DIR_SW}};

/* The points of direction d from sq to the board's edge, nearest first;
 * returns their count. Diagonals only through points with r+c even (R1). */

/* Fills T.kl[sq] line k (directions d and its opposite d + 1 ... as the
 * pairs N/S, E/W, NE/SW, NW/SE): finds a multiplier that gathers the line's
 * occupancy injectively into bits 27..31, then what a king sees for each. */
static void s_init_king_line(int sq, int k, int d_fwd, int d_back)
{
    int fwd[5], back[5], nf = board5_ray(sq, d_fwd, fwd), nb = board5_ray(sq, d_back, back);
    if (nf + nb == 0)
        return; /* no such line through sq */
    int pts[9], n = 0;
    for (int i = nb - 1; i >= 0; i--)
        pts[n++] = back[i];
    pts[n++] = sq;
    for (int i = 0; i < nf; i++)
        pts[n++] = fwd[i];
    /* Ascending point order along the line, either way round. */
    if (pts[0] > pts[n - 1])
        for (int i = 0; i < n / 2; i++) {
            int t = pts[i];
            pts[i] = pts[n - 1 - i];
            pts[n - 1 - i] = t;
        }
    king_lines *kl = &T.kl[sq];
    uint32_t mask = 0;
    for (int i = 0; i < n; i++)
        mask |= 1u << pts[i];
    for (int order = 0; order < 2 && !kl->mask[k]; order++) {
        uint32_t mul = 0;
        for (int i = 0; i < n; i++)
            mul |= 1u << (KL_SHIFT + (order ? n - 1 - i : i) - pts[i]);
        uint32_t seen = 0;
        bool injective = true;
        for (uint32_t sub = 0; sub < 1u << n && injective; sub++) {
            uint32_t x = 0;
            for (int i = 0; i < n; i++)
                x |= (sub >> i & 1) << pts[i];
            uint32_t idx = (x * mul) >> KL_SHIFT;
            injective = !(seen >> idx & 1);
            seen |= 1u << idx;
        }
        if (injective) {
            kl->mask[k] = mask;
            kl->mul[k] = mul;
        }
    }
    KZ_CHECK(kl->mask[k] != 0);
    for (uint32_t sub = 0; sub < 1u << n; sub++) {
        uint32_t x = 0;
        for (int i = 0; i < n; i++)
            x |= (sub >> i & 1) << pts[i];
        uint32_t att = 0;
        for (int i = 0; i < nf; i++) {
            att |= 1u << fwd[i];
            if (x >> fwd[i] & 1)
                break;
        }
        for (int i = 0; i < nb; i++) {
            att |= 1u << back[i];
            if (x >> back[i] & 1)
                break;
        }
        kl->att[k][(x * kl->mul[k]) >> KL_SHIFT] = att;
    }
}

/* Filled once before main() runs; read-only afterwards (so thread-safe). */
__attribute__((constructor)) static void s_init_tables(void)
{
    memset(&T, 0, sizeof T);
    for (int sq = 0; sq < KH_POINTS; sq++) {
        for (int d = 0; d < 8; d++) {
            int pts[5], n = board5_ray(sq, d, pts);
            uint32_t path = 0;
            for (int i = 0; i < n; i++) {
                T.between[sq][pts[i]] = path;
                T.lines[sq] |= 1u << pts[i];
                path |= 1u << pts[i];
            }
            for (int i = 0; i + 1 < n; i++) {
                T.away[sq][pts[i]] = (path & ~T.between[sq][pts[i]]) & ~(1u << pts[i]);
                T.behind[sq][pts[i]] = 1u << pts[i + 1];
            }
            if (n >= 1) {
                T.adj[sq] |= 1u << pts[0];
                for (int side = 0; side < 2; side++)
                    for (int k = 0; k < 3; k++)
                        if (FWD_DIR[side][k] == d) {
                            T.fwd[side][sq] |= 1u << pts[0];
                            T.fwd_from[side][k] |= 1u << sq;
                        }
            }
            if (n >= 2) {
                T.jump_from[d] |= 1u << sq;
                T.man_caps[sq] |= 1u << pts[0];
                T.hop_land[sq][pts[0]] = 1u << pts[1];
            }
        }
        /* A piece's hops: at most one per landing point on its rays,
         * i.e. per ray point but the first. MAX_HOPS holds 12 pieces' worth. */
        int most = 0;
        for (int d = 0; d < 8; d++) {
            int pts[5], n = board5_ray(sq, d, pts);
            most += n > 1 ? n - 1 : 0;
        }
        KZ_CHECK(12 * most <= MAX_HOPS);
        s_init_king_line(sq, 0, DIR_N, DIR_S);
        s_init_king_line(sq, 1, DIR_E, DIR_W);
        s_init_king_line(sq, 2, DIR_NE, DIR_SW);
        s_init_king_line(sq, 3, DIR_NW, DIR_SE);
    }
    for (int a = 0; a < KH_ACTIONS; a++) {
        T.rot_action[a] = (uint16_t)board5_rot_action(a);
        T.mirror_action[a] = (uint16_t)board5_mirror_action(a);
    }
    uint64_t seed = 0x4b687265696261ULL; /* fixed: hashes are stable across runs */
    for (int k = 0; k < 4; k++)
        for (int sq = 0; sq < KH_POINTS; sq++)
            T.zob[k][sq] = mix64(seed++);
}

static inline kh_state *S(game_state *g) { return (kh_state *)g->bytes; }
static inline const kh_state *CS(const game_state *g) { return (const kh_state *)g->bytes; }

static inline int s_popcount(uint32_t x) { return __builtin_popcount(x); }
static inline int s_lsb(uint32_t x) { return __builtin_ctz(x); }

/* The far row of a colour (R10): row 4 for Black, row 0 for White. */
static inline uint32_t s_far_row(int side) { return ROW4 >> (20 * side); }

/* The pieces of a colour (0 Black, 1 White). */
static inline uint32_t s_colour(const kh_state *s, int c) { return c == s->side ? s->own : s->opp; }

/* The turn-start key within a history window (see the file comment): the
 * kings of the side to move, those of the other side, the side. */
static inline uint64_t s_key(const kh_state *s)
{
    return (uint64_t)(s->kings & s->own) | (uint64_t)(s->kings & s->opp) << 25 |
           (uint64_t)s->side << 50;
}

/* x shifted by a constant number of points: up (left) for by > 0. */
#define SHIFT(x, by) ((by) >= 0 ? (x) << ((by) & 31) : (x) >> (-(by) & 31))

/* The men (of `men`) that can capture in direction d: an enemy on the next
 * point along a line, an empty point after it. */
#define MEN_HOP_DIR(men, opp, empty, d) \
    ((men) & T.jump_from[d] & SHIFT(opp, -STEP(d)) & SHIFT(empty, -2 * STEP(d)))

/* The men (of `men`) that have at least one capture (R4). */
static inline uint32_t s_men_capturers(uint32_t men, uint32_t opp, uint32_t empty)
{
    return MEN_HOP_DIR(men, opp, empty, DIR_N) | MEN_HOP_DIR(men, opp, empty, DIR_S) |
           MEN_HOP_DIR(men, opp, empty, DIR_E) | MEN_HOP_DIR(men, opp, empty, DIR_W) |
           MEN_HOP_DIR(men, opp, empty, DIR_NE) | MEN_HOP_DIR(men, opp, empty, DIR_NW) |
           MEN_HOP_DIR(men, opp, empty, DIR_SE) | MEN_HOP_DIR(men, opp, empty, DIR_SW);
}

/* Whether a man on sq has a capture (R4): an adjacent enemy along a line
 * with an empty point behind it. */
static inline bool s_man_can_capture(int sq, uint32_t opp, uint32_t empty)
{
    /* The landing points behind the adjacent enemies: the first two without
     * a branch (an empty c scans to 31, whose entry is 0), any more in a loop. */
    uint32_t c = opp & T.man_caps[sq];
    uint32_t lands = T.hop_land[sq][__builtin_ctz(c | 1u << 31)];
    c &= c - 1;
    lands |= T.hop_land[sq][__builtin_ctz(c | 1u << 31)];
    c &= c - 1;
    for (; c; c &= c - 1)
        lands |= T.hop_land[sq][s_lsb(c)];
    return (lands & empty) != 0;
}

/* What a king on sq sees (R5, R6): along each line, the empty points up to
 * the nearest piece each way, and those pieces. `occ`: the pieces on board
 * (the king's own point may be in it or not). */
static inline uint32_t s_king_sees(int sq, uint32_t occ)
{
    const king_lines *kl = &T.kl[sq];
    return kl->att[0][((occ & kl->mask[0]) * kl->mul[0]) >> KL_SHIFT] |
           kl->att[1][((occ & kl->mask[1]) * kl->mul[1]) >> KL_SHIFT] |
           kl->att[2][((occ & kl->mask[2]) * kl->mul[2]) >> KL_SHIFT] |
           kl->att[3][((occ & kl->mask[3]) * kl->mul[3]) >> KL_SHIFT];
}

/* Whether a king on sq has a capture (R6): a nearest piece along a line is
 * an enemy with an empty point right behind it. `occ` holds every piece but
 * the king itself. */
static inline bool s_king_can_capture(int sq, uint32_t occ, uint32_t opp)
{
    if (!(T.lines[sq] & opp))
        return false;
    for (uint32_t e = s_king_sees(sq, occ) & opp; e; e &= e - 1)
        if (T.behind[sq][s_lsb(e)] & ~occ)
            return true;
    return false;
}

/* The points a king on sq can land on after capturing the enemy on c, the
 * nearest piece along their line (R6): the empty points behind c up to the
 * next piece. `occ` holds every piece but the king. */
static inline uint32_t s_king_lands(int sq, int c, uint32_t occ)
{
    uint32_t away = T.away[sq][c], b = away & occ;
    /* Up the line from sq the next piece is the lowest of b, down it the
     * highest (both forms give all of `away` when b is empty). */
    uint32_t up = away & ((b & -b) - 1);
    uint32_t down = away & ~((1u << (31 - __builtin_clz(b << 1 | 1))) - 1);
    return c > sq ? up : down;
}

/* The longest chain of captures a man on sq can still make. `opp` holds the
 * enemies left, `empty` the empty points (those the man left and the pieces
 * it took included). Stops early once `left` (all enemies) would be taken. */
static int s_chain_man(int sq, uint32_t opp, uint32_t empty, int left)
{
    int best = 0;
    for (uint32_t c = opp & T.man_caps[sq]; c; c &= c - 1) {
        int cap = s_lsb(c);
        uint32_t land = T.hop_land[sq][cap] & empty;
        if (!land)
            continue;
        uint32_t cbit = 1u << cap;
        int v = 1 + s_chain_man(s_lsb(land), opp & ~cbit, empty | cbit, left - 1);
        if (v > best) {
            best = v;
            if (v == left)
                return v;
        }
    }
    return best;
}

/* The longest chain of captures a king on sq can still make; `occ` holds
 * every piece but the king, `opp` the enemies left (`left` of them). */
static int s_chain_king(int sq, uint32_t occ, uint32_t opp, int left)
{
    if (!(T.lines[sq] & opp))
        return 0;
    /* The enemies it can take: those it sees with an empty point behind. */
    uint32_t takes = 0;
    for (uint32_t e = s_king_sees(sq, occ) & opp; e; e &= e - 1)
        if (T.behind[sq][s_lsb(e)] & ~occ)
            takes |= e & -e;
    if (!takes)
        return 0;
    if (left == 1)
        return 1;
    int best = 1;
    for (; takes; takes &= takes - 1) {
        int cap = s_lsb(takes);
        uint32_t cbit = takes & -takes;
        for (uint32_t lands = s_king_lands(sq, cap, occ); lands; lands &= lands - 1) {
            int v = 1 + s_chain_king(s_lsb(lands), occ & ~cbit, opp & ~cbit, left - 1);
            if (v > best) {
                best = v;
                if (v == left)
                    return v;
            }
        }
    }
    return best;
}

/* The capture hops found in one state, as bits: point from, point taken,
 * landing point, and whether the piece could capture again after it. */
typedef struct hop_list {
    int n;                  /* hops */
    int n_more;             /* of which can go on */
    uint32_t sb[MAX_HOPS];  /* the hopping piece's point */
    uint32_t cb[MAX_HOPS];  /* the captured piece's point */
    uint32_t lb[MAX_HOPS];  /* the landing point */
    uint8_t more[MAX_HOPS]; /* 1 if a further capture follows (R8) */
} hop_list;

static inline void s_hop_add(hop_list *h, uint32_t sb, uint32_t cb, uint32_t lb, bool more)
{
    int i = h->n++;
    h->sb[i] = sb;
    h->cb[i] = cb;
    h->lb[i] = lb;
    h->more[i] = more;
    h->n_more += more;
}

/* The men's first hops along one axis (a direction with step +st and its
 * opposite), both at once in a 64-bit word: the low half holds the men that
 * hop up the axis (enemy at +st, empty at +2st), the half from bit AXIS_HI
 * the landing points of the hops down it (a man at +2st, enemy at +st).
 * Only right shifts, so one shift serves both halves; AXIS_HI is high enough
 * that nothing shifted out of the upper half reaches the board's 25 bits.
 * `oo` and `ee` are the enemies and the empty points in both halves. */
#define AXIS_HI 38
static inline uint64_t s_axis_hops(uint32_t men, uint64_t oo, uint32_t empty, uint64_t ee,
                                   int d_up, int d_down, int st)
{
    uint64_t downs = ((uint64_t)(men & T.jump_from[d_down]) << AXIS_HI | empty) >> 2 * st;
    uint64_t ups = ee | (men & T.jump_from[d_up]);
    return downs & (oo >> st) & ups;
}

/* Adds the hops found by s_axis_hops. */
static inline void s_axis_add(hop_list *h, uint64_t x, uint32_t opp, uint32_t empty, int st)
{
    for (; x; x &= x - 1) {
        uint64_t b = x & -x;
        uint32_t up = (uint32_t)b, down = (uint32_t)(b >> AXIS_HI); /* one of them is 0 */
        uint32_t sb = up | down << 2 * st, cb = (up | down) << st, lb = up << 2 * st | down;
        s_hop_add(h, sb, cb, lb, s_man_can_capture(s_lsb(lb), opp & ~cb, empty | cb | sb));
    }
}

/* All first hops of the men in `men`, axis by axis (`empty`: the empty
 * points). */
static inline void s_men_hops(hop_list *h, uint32_t men, uint32_t opp, uint32_t empty)
{
    uint64_t oo = (uint64_t)opp << AXIS_HI | opp, ee = (uint64_t)empty << AXIS_HI;
    uint64_t ns = s_axis_hops(men, oo, empty, ee, DIR_N, DIR_S, 5);
    uint64_t ew = s_axis_hops(men, oo, empty, ee, DIR_E, DIR_W, 1);
    uint64_t nesw = s_axis_hops(men, oo, empty, ee, DIR_NE, DIR_SW, 6);
    uint64_t nwse = s_axis_hops(men, oo, empty, ee, DIR_NW, DIR_SE, 4);
    if (!(ns | ew | nesw | nwse))
        return;
    s_axis_add(h, ns, opp, empty, 5);
    s_axis_add(h, ew, opp, empty, 1);
    s_axis_add(h, nesw, opp, empty, 6);
    s_axis_add(h, nwse, opp, empty, 4);
}

/* The hops of the one man on sq. */
static inline void s_man_hops(hop_list *h, int sq, uint32_t opp, uint32_t empty)
{
    uint32_t sb = 1u << sq;
    for (uint32_t c = opp & T.man_caps[sq]; c; c &= c - 1) {
        uint32_t lb = T.hop_land[sq][s_lsb(c)] & empty, cb = c & -c;
        if (lb)
            s_hop_add(h, sb, cb, lb, s_man_can_capture(s_lsb(lb), opp & ~cb, empty | cb | sb));
    }
}

/* The hops of the king on sq over the enemies in `e`, those it sees;
 * `occ` holds every piece but the king. */
static inline void s_king_hops_over(hop_list *h, int sq, uint32_t e, uint32_t occ, uint32_t opp)
{
    uint32_t sb = 1u << sq;
    for (; e; e &= e - 1) {
        uint32_t cb = e & -e;
        for (uint32_t lands = s_king_lands(sq, s_lsb(e), occ); lands; lands &= lands - 1) {
            uint32_t lb = lands & -lands;
            s_hop_add(h, sb, cb, lb, s_king_can_capture(s_lsb(lb), occ & ~cb, opp & ~cb));
        }
    }
}

/* All hops of the king on sq; `occ` holds every piece but the king. */
static inline void s_king_hops(hop_list *h, int sq, uint32_t occ, uint32_t opp)
{
    if (T.lines[sq] & opp)
        s_king_hops_over(h, sq, s_king_sees(sq, occ) & opp, occ, opp);
}

/* Step 2, the majority rule (R8): keeps only the legal hops in h (in their
 * order) and returns their count. `own` and `opp` are the pieces on board
 * (each hopping piece on its source point). */
/* The pieces hop i of h takes in all, itself and the longest chain after it
 * (own, opp, kings: the state the hops were found in). */
static inline int s_hop_chain(const hop_list *h, int i, uint32_t own, uint32_t opp,
                              uint32_t kings)
{
    if (!h->more[i])
        return 1;
    int land = s_lsb(h->lb[i]), left = s_popcount(opp) - 1;
    uint32_t sb = h->sb[i], cb = h->cb[i];
    if (kings & sb)
        return 1 + s_chain_king(land, (own | opp) & ~(sb | cb), opp & ~cb, left);
    return 1 + s_chain_man(land, opp & ~cb, (ALL_POINTS & ~(own | opp)) | sb | cb, left);
}

static int s_majority(hop_list *h, uint32_t own, uint32_t opp, uint32_t kings)
{
    int n = 0;
    if (h->n_more == 0)
        return h->n; /* no hop goes on: every hop is a whole sequence of one */
    if (h->n_more == 1) {
        /* Exactly one goes on: its sequence is longer than any other. */
        while (!h->more[n])
            n++;
        h->sb[0] = h->sb[n];
        h->cb[0] = h->cb[n];
        h->lb[0] = h->lb[n];
        h->more[0] = 1;
        return h->n = 1;
    }
    /* Several go on: the longest chain after each decides. */
    int8_t val[MAX_HOPS];
    int best = 0;
    for (int i = 0; i < h->n; i++) {
        int v = h->more[i] ? s_hop_chain(h, i, own, opp, kings) : 0;
        val[i] = (int8_t)v;
        best = v > best ? v : best;
    }
    for (int i = 0; i < h->n; i++) {
        if (val[i] != best)
            continue;
        h->sb[n] = h->sb[i];
        h->cb[n] = h->cb[i];
        h->lb[n] = h->lb[i];
        h->more[n] = h->more[i];
        n++;
    }
    return h->n = n;
}

/* The legal actions of a state, as s_gen finds them. */
typedef struct gen_out {
    hop_list h;                  /* captures (R8): the legal hops; h.n == 0 if none */
    uint32_t men_to[3];          /* else the men's simple moves (R3): destinations per */
                                 /* forward direction, FWD_DIR order */
    uint32_t king_srcs;          /* the kings (with or without simple moves) */
    uint32_t king_to[KH_POINTS]; /* each king's simple moves (R5), at its point */
} gen_out;

/* The men's simple moves (R3): forward only, one step to an empty point. */
static inline void s_men_moves(int me, uint32_t men, uint32_t empty, uint32_t to[3])
{
    if (me == 0) {
        to[0] = (men & T.fwd_from[0][0]) << 5 & empty;
        to[1] = (men & T.fwd_from[0][1]) << 6 & empty;
        to[2] = (men & T.fwd_from[0][2]) << 4 & empty;
    } else {
        to[0] = (men & T.fwd_from[1][0]) >> 5 & empty;
        to[1] = (men & T.fwd_from[1][1]) >> 4 & empty;
        to[2] = (men & T.fwd_from[1][2]) >> 6 & empty;
    }
}

/* The legal actions (see gen_out); returns their count. Inlined into perft
 * (s_gen_call serves the rest). */
static inline __attribute__((always_inline)) int s_gen(const kh_state *s, gen_out *g)
{
    int me = s->side;
    uint32_t own = s->own, opp = s->opp, occ = own | opp;
    uint32_t empty = ALL_POINTS & ~occ;
    hop_list *h = &g->h;
    h->n = h->n_more = 0;

    if (s->chain >= 0) {
        /* Mid-sequence (R9): the hops of the chain piece that still complete a
         * maximal sequence, i.e. those with the longest chain left. */
        int sq = s->chain;
        uint32_t b = 1u << sq;
        if (s->kings & b)
            s_king_hops(h, sq, occ & ~b, opp);
        else
            s_man_hops(h, sq, opp, empty);
        return h->n_more ? s_majority(h, own, opp, s->kings) : h->n;
    }

    /* Turn start: captures first (R8). */
    uint32_t men = own & ~s->kings, kings = own & s->kings;
    s_men_hops(h, men, opp, empty);
    for (uint32_t m = kings; m; m &= m - 1) {
        /* What the king sees serves its captures now, its moves below. */
        int sq = s_lsb(m);
        uint32_t sees = s_king_sees(sq, occ);
        g->king_to[sq] = sees;
        if (sees & opp)
            s_king_hops_over(h, sq, sees & opp, occ & ~(1u << sq), opp);
    }
    if (h->n)
        return h->n_more ? s_majority(h, own, opp, s->kings) : h->n;

    /* No capture: simple moves (R3, R5). */
    s_men_moves(me, men, empty, g->men_to);
    int count = s_popcount(g->men_to[0]) + s_popcount(g->men_to[1]) + s_popcount(g->men_to[2]);
    g->king_srcs = kings;
    for (uint32_t m = kings; m; m &= m - 1) {
        int sq = s_lsb(m);
        uint32_t to = g->king_to[sq] & ~occ;
        g->king_to[sq] = to;
        count += s_popcount(to);
    }
    return count;
}

static int s_gen_call(const kh_state *s, gen_out *g) { return s_gen(s, g); }

/* The legal actions as one destination mask per source point (only the
 * entries of the sources in *srcs_out are written; at a turn start without
 * captures every piece is a source, with or without moves); returns their
 * count. */
static int s_legal_dsts(const kh_state *s, uint32_t dsts[KH_POINTS], uint32_t *srcs_out)
{
    gen_out g;
    int n = s_gen_call(s, &g);
    if (g.h.n) {
        uint32_t srcs = 0;
        for (int i = 0; i < g.h.n; i++) {
            int src = s_lsb(g.h.sb[i]);
            if (!(srcs & g.h.sb[i])) {
                srcs |= g.h.sb[i];
                dsts[src] = 0;
            }
            dsts[src] |= g.h.lb[i];
        }
        *srcs_out = srcs;
        return n;
    }
    int me = s->side;
    *srcs_out = s->own;
    uint32_t empty = ALL_POINTS & ~(s->own | s->opp);
    for (uint32_t m = s->own & ~s->kings; m; m &= m - 1) {
        int sq = s_lsb(m);
        dsts[sq] = T.fwd[me][sq] & empty; /* forward only (R3) */
    }
    for (uint32_t m = g.king_srcs; m; m &= m - 1)
        dsts[s_lsb(m)] = g.king_to[s_lsb(m)];
    return n;
}

/* Whether the mover has at least one legal action (cheaper than listing):
 * any simple move, or any capture (a capture always starts a legal sequence). */
static bool s_has_action(const kh_state *s)
{
    int me = s->side;
    uint32_t own = s->own, opp = s->opp, occ = own | opp;
    uint32_t men = own & ~s->kings, empty = ALL_POINTS & ~occ;
    static const int fwd_step[2][3] = {{5, 6, 4}, {5, 4, 6}}; /* up for Black, down for White */
    for (int k = 0; k < 3; k++) {
        uint32_t from = men & T.fwd_from[me][k];
        if ((me == 0 ? from << fwd_step[0][k] : from >> fwd_step[1][k]) & empty)
            return true;
    }
    if (s_men_capturers(men, opp, empty))
        return true;
    for (uint32_t m = own & s->kings; m; m &= m - 1) {
        int sq = s_lsb(m);
        if ((T.adj[sq] & empty) || s_king_can_capture(sq, occ & ~(1u << sq), opp))
            return true;
    }
    return false;
}

static int s_emit(const uint32_t dsts[KH_POINTS], uint32_t srcs, uint16_t *out)
{
    int n = 0;
    for (; srcs; srcs &= srcs - 1) {
        int sq = s_lsb(srcs);
        for (uint32_t m = dsts[sq]; m; m &= m - 1)
            out[n++] = (uint16_t)(sq * 25 + s_lsb(m));
    }
    return n;
}

static int kh_legal_actions(const game_state *g, uint16_t *out)
{
    uint32_t dsts[KH_POINTS], srcs;
    s_legal_dsts(CS(g), dsts, &srcs);
    return s_emit(dsts, srcs, out);
}

static void kh_legal_mask(const game_state *g, uint8_t *mask)
{
    uint32_t dsts[KH_POINTS], srcs;
    s_legal_dsts(CS(g), dsts, &srcs);
    memset(mask, 0, KH_ACTIONS);
    for (; srcs; srcs &= srcs - 1) {
        int sq = s_lsb(srcs);
        for (uint32_t m = dsts[sq]; m; m &= m - 1)
            mask[sq * 25 + s_lsb(m)] = 1;
    }
}

static bool kh_is_legal(const game_state *g, int action)
{
    if (action < 0 || action >= KH_ACTIONS)
        return false;
    const kh_state *s = CS(g);
    int src = action / 25, dst = action % 25;
    if (!(s->own >> src & 1))
        return false;
    if (s->chain >= 0 && src != s->chain)
        return false;
    uint32_t dsts[KH_POINTS], srcs;
    s_legal_dsts(s, dsts, &srcs);
    return (srcs >> src & 1) && (dsts[src] >> dst & 1);
}

/* The make functions below write the state after an action into c, from
 * the state s before it; c may be s (apply) or a fresh state (perft, which
 * then needs no copy of the head first). Each reads all it needs before it
 * writes. */

/* Writes the head of the turn-start state after a capture or a man move
 * (R11, R13, R14): `me` moved, `own`/`opp` are its and the enemy's pieces
 * now, `kings` all kings (crowning done), `ply` the completed turns. The
 * history restarts from this position (see kh_state). */
static inline void s_put_after_progress(kh_state *c, int me, uint32_t own, uint32_t opp,
                                        uint32_t kings, int ply)
{
    c->own = opp; /* the move passes */
    c->opp = own;
    c->kings = kings;
    c->ply = (uint16_t)ply;
    c->side = (uint8_t)(me ^ 1);
    c->chain = -1;
    c->no_progress = 0;
    c->reps = 1;
    c->hist_len = 0;
}

/* What the make functions read of the state before the action (perft reads
 * it once for all the children of a node). */
typedef struct kh_before {
    int me;          /* the side to move */
    uint32_t own;    /* its pieces */
    uint32_t opp;    /* the enemy's */
    uint32_t kings;  /* all kings */
    int ply;         /* completed turns */
    int no_progress; /* R13 counter */
} kh_before;

static inline kh_before s_before(const kh_state *s)
{
    return (kh_before){s->side, s->own, s->opp, s->kings, s->ply, s->no_progress};
}

/* The simple move of a man from sb to db (bits): progress (R13); a man
 * stopping on the far row is crowned (R10). */
static inline void s_make_man_move(kh_state *c, kh_before b, uint32_t sb, uint32_t db)
{
    s_put_after_progress(c, b.me, b.own ^ (sb | db), b.opp, b.kings | (s_far_row(b.me) & db),
                         b.ply + (b.ply < UINT16_MAX));
}

/* The capture hop from sb over cb to lb (bits); `more` whether the piece can
 * capture again from lb (R8: then the sequence goes on, else the turn ends
 * and a man on the far row is crowned, R10). */
static inline void s_make_hop(kh_state *c, kh_before b, uint32_t sb, uint32_t cb, uint32_t lb,
                              bool more)
{
    uint32_t move = sb | lb;
    uint32_t own = b.own ^ move, opp = b.opp ^ cb; /* R7: the captured piece leaves at once */
    uint32_t kings = (b.kings ^ (move & (0u - ((b.kings & sb) != 0)))) & ~cb;
    if (more) {
        c->own = own;
        c->opp = opp;
        c->kings = kings;
        c->ply = (uint16_t)b.ply;
        c->side = (uint8_t)b.me;
        c->chain = (int8_t)s_lsb(lb);
        c->no_progress = (uint8_t)b.no_progress;
        c->reps = 0;
        c->hist_len = 0; /* the turn ends with a capture: history restarts */
    } else {
        s_put_after_progress(c, b.me, own, opp, kings | (s_far_row(b.me) & lb),
                             b.ply + (b.ply < UINT16_MAX));
    }
}

/* Plays the simple move of a king from sb to db (bits), a turn without
 * progress (R13): the position joins the history (R14). */
static inline void s_make_king_move(kh_state *s, uint32_t sb, uint32_t db)
{
    int n = s->hist_len;
    if (n == 0) {
        s->hist[0] = s_key(s); /* the turn-start position, kept implicit until now */
        n = 1;
    }
    int me = s->side;
    uint32_t own = s->own ^ (sb | db);
    s->own = s->opp; /* the move passes */
    s->opp = own;
    s->kings ^= sb | db;
    s->side = (uint8_t)(me ^ 1);
    s->ply += s->ply < UINT16_MAX;
    s->no_progress += s->no_progress < 255;
    uint64_t key = s_key(s);
    int reps = 1;
    for (int i = n - 4; i >= 0; i -= 2)
        reps += s->hist[i] == key;
    if (n == HIST_MAX) {
        /* Only reachable by playing on past an R13 draw; keep the newest. */
        memmove(s->hist, s->hist + 1, sizeof(uint64_t) * (HIST_MAX - 1));
        n--;
    }
    s->hist[n] = key;
    s->hist_len = (uint8_t)(n + 1);
    s->reps = (uint8_t)(reps > 255 ? 255 : reps);
}

/* Plays the hop or simple move src -> dst of the side to move. */
static inline void s_apply(kh_state *s, int src, int dst)
{
    uint32_t sb = 1u << src, db = 1u << dst, opp = s->opp;
    uint32_t captured = T.between[src][dst] & opp;
    bool king = s->kings & sb;
    if (!captured) {
        if (king)
            s_make_king_move(s, sb, db);
        else
            s_make_man_move(s, s_before(s), sb, db);
        return;
    }
    /* R8: the sequence goes on while the piece can capture. (Which next hops
     * are legal is decided by legal_actions: the majority rule.) */
    opp ^= captured;
    uint32_t occ = (s->own & ~sb) | opp;
    bool more = king ? s_king_can_capture(dst, occ, opp)
                     : s_man_can_capture(dst, opp, ALL_POINTS & ~occ);
    s_make_hop(s, s_before(s), sb, captured, 1u << dst, more);
}

static void kh_apply(game_state *g, int action)
{
    assert(action >= 0 && action < KH_ACTIONS);
    assert(CS(g)->own >> (action / 25) & 1);
    s_apply(S(g), action / 25, action % 25);
}

/* Perft (R22) as game_perft's generic loop counts it, without its indirect
 * calls: at a turn start the game is over for a draw (R13-R15) or when there
 * is no legal action (R12: no pieces or no moves; mid-sequence there always is
 * one). Every child is made in full, leaves too: a copy (the history only for
 * a king's simple move: every other action restarts it) and the same make
 * functions apply() uses, given what generation found (captured point, whether
 * the piece goes on). */
static uint64_t s_perft(const kh_state *s, int depth)
{
    if (s->chain < 0 && (s->no_progress >= KH_NO_PROGRESS || s->reps >= 3 ||
                         s->ply >= KH_MAX_PLIES))
        return 0;
    gen_out g;
    if (s_gen(s, &g) == 0)
        return 0;
    uint64_t total = 0;
    /* A leaf's child is made and then only counted: the barrier keeps the
     * compiler from dropping its making as dead code. */
#define KH_CHILD(c)                                                                         \
    do {                                                                                    \
        if (depth > 1) {                                                                    \
            total += s_perft(&(c), depth - 1);                                              \
        } else {                                                                            \
            __asm__ volatile("" : : "r"(&(c)) : "memory");                                 \
            total++;                                                                        \
        }                                                                                   \
    } while (0)
    kh_before b = s_before(s);
    if (g.h.n) {
        for (int i = 0; i < g.h.n; i++) {
            kh_state c;
            s_make_hop(&c, b, g.h.sb[i], g.h.cb[i], g.h.lb[i], g.h.more[i]);
            KH_CHILD(c);
        }
        return total;
    }
    /* The men's moves, with each colour's constant steps. */
#define KH_MEN_DIR(k, SB_OF_DB)                                                             \
    for (uint32_t m = g.men_to[k]; m; m &= m - 1) {                                         \
        uint32_t db = m & -m;                                                               \
        kh_state c;                                                                         \
        s_make_man_move(&c, b, SB_OF_DB, db);                                               \
        KH_CHILD(c);                                                                        \
    }
    if (b.me == 0) {
        b.me = 0; /* a constant for the compiler from here on */
        KH_MEN_DIR(0, db >> 5);
        KH_MEN_DIR(1, db >> 6);
        KH_MEN_DIR(2, db >> 4);
    } else {
        b.me = 1;
        KH_MEN_DIR(0, db << 5);
        KH_MEN_DIR(1, db << 4);
        KH_MEN_DIR(2, db << 6);
    }
#undef KH_MEN_DIR
    for (uint32_t ks = g.king_srcs; ks; ks &= ks - 1) {
        uint32_t sb = ks & -ks;
        for (uint32_t m = g.king_to[s_lsb(ks)]; m; m &= m - 1) {
            kh_state c;
            memcpy(&c, s, HEAD_BYTES);
            for (int i = 0; i < s->hist_len; i++)
                c.hist[i] = s->hist[i];
            s_make_king_move(&c, sb, m & -m);
            KH_CHILD(c);
        }
    }
#undef KH_CHILD
    return total;
}

static uint64_t kh_perft(const game_state *g, int depth)
{
    return depth <= 0 ? 1 : s_perft(CS(g), depth);
}

static void kh_copy(game_state *dst, const game_state *src)
{
    const kh_state *s = CS(src);
    memcpy(dst->bytes, src->bytes, HEAD_BYTES + sizeof(uint64_t) * s->hist_len);
}

static int kh_to_move(const game_state *g) { return CS(g)->side; }
static bool kh_mid_turn(const game_state *g) { return CS(g)->chain >= 0; }
static int kh_ply(const game_state *g) { return CS(g)->ply; }

static game_result kh_result(const game_state *g)
{
    const kh_state *s = CS(g);
    game_result r = {false, -1, GAME_REASON_NONE, 0};
    if (s->chain >= 0)
        return r; /* R12: decided only at the start of a turn */
    int me = s->side;
    /* R12 before R13, R14, R15: a loss stands over a draw. */
    if (!s->own) {
        r = (game_result){true, me ^ 1, GAME_REASON_NO_PIECES, 0};
    } else if (!s_has_action(s)) {
        r = (game_result){true, me ^ 1, GAME_REASON_NO_MOVES, 0};
    } else if (s->no_progress >= KH_NO_PROGRESS) {
        r = (game_result){true, -1, GAME_REASON_NO_PROGRESS, 0};
    } else if (s->reps >= 3) {
        r = (game_result){true, -1, GAME_REASON_REPETITION, 0};
    } else if (s->ply >= KH_MAX_PLIES) {
        r = (game_result){true, -1, GAME_REASON_LENGTH, 0};
    }
    return r;
}

static void s_reset_history(kh_state *s)
{
    s->no_progress = 0;
    s->ply = 0;
    s->hist_len = 0; /* R14: the first occurrence, implicit (see kh_state) */
    s->reps = s->chain < 0;
}

static void kh_init(game_state *g)
{
    memset(g, 0, sizeof *g);
    kh_state *s = S(g);
    s->own = 0xfffu;       /* R2: Black, to move, on points 0..11 */
    s->opp = 0xfffu << 13; /* White on points 13..24 */
    s->chain = -1;
    s_reset_history(s);
}

/* R16/R17: canonical planes (C=7, H=5, W=5). */
static void s_planes(uint32_t own, uint32_t opp, uint32_t kings, int side, bool repeated,
                     int ply, float *out)
{
    memset(out, 0, sizeof(float) * 7 * KH_POINTS);
    for (int sq = 0; sq < KH_POINTS; sq++) {
        int c = side == 0 ? sq : 24 - sq; /* rotate 180 degrees for White */
        uint32_t b = 1u << sq;
        if (own & b)
            out[(kings & b ? 1 : 0) * KH_POINTS + c] = 1.0f;
        else if (opp & b)
            out[(kings & b ? 3 : 2) * KH_POINTS + c] = 1.0f;
    }
    float rep = repeated ? 1.0f : 0.0f, black = side == 0 ? 1.0f : 0.0f;
    float t = (float)ply / KH_MAX_PLIES;
    for (int i = 0; i < KH_POINTS; i++) {
        out[4 * KH_POINTS + i] = rep;
        out[5 * KH_POINTS + i] = black;
        out[6 * KH_POINTS + i] = t;
    }
}

static void kh_encode_planes(const game_state *g, float *out)
{
    const kh_state *s = CS(g);
    s_planes(s->own, s->opp, s->kings, s->side,
             s->chain < 0 && s->reps >= 2, s->ply, out);
}

/* The longest capture sequence (in pieces taken) of the side to move at a
 * turn start, and the pieces its legal first hops take (R8: under the
 * majority rule every legal first hop starts a sequence of that length). */
static int s_longest_capture(const kh_state *s, uint32_t *taken)
{
    gen_out g;
    s_gen_call(s, &g);
    *taken = 0;
    if (!g.h.n)
        return 0;
    for (int i = 0; i < g.h.n; i++)
        *taken |= g.h.cb[i];
    return s_hop_chain(&g.h, 0, s->own, s->opp, s->kings);
}

/* The derived input planes (game_def.derive_planes), from the canonical
 * planes, where the mover plays Black's way up the board: 0 the mover's
 * pieces the opponent's legal first hops would take were it to move, 1 the
 * opponent's pieces the mover's legal first hops take, 2 and 3 the longest
 * capture of the mover and of the opponent (pieces, / 4, at most 1) on
 * every point. What the network lacks for the majority rule's choices and
 * the pieces en prise (docs/learning.md, "Input features"). */
#define KH_DERIVED 4
static void kh_derive_planes(const float *planes, float *out)
{
    uint32_t own = 0, opp = 0, kings = 0;
    for (int c = 0; c < KH_POINTS; c++) {
        uint32_t b = 1u << c;
        own |= planes[c] > 0.5f || planes[KH_POINTS + c] > 0.5f ? b : 0;
        opp |= planes[2 * KH_POINTS + c] > 0.5f || planes[3 * KH_POINTS + c] > 0.5f ? b : 0;
        kings |= planes[KH_POINTS + c] > 0.5f || planes[3 * KH_POINTS + c] > 0.5f ? b : 0;
    }
    opp &= ~own;
    kh_state m = {.own = own, .opp = opp, .kings = kings, .side = 0, .chain = -1};
    kh_state o = {.own = opp, .opp = own, .kings = kings, .side = 1, .chain = -1};
    uint32_t takes_own, takes_opp;
    int lm = s_longest_capture(&m, &takes_opp), lo = s_longest_capture(&o, &takes_own);
    float fm = lm >= 4 ? 1.0f : (float)lm / 4, fo = lo >= 4 ? 1.0f : (float)lo / 4;
    for (int c = 0; c < KH_POINTS; c++) {
        out[c] = takes_own >> c & 1 ? 1.0f : 0.0f;
        out[KH_POINTS + c] = takes_opp >> c & 1 ? 1.0f : 0.0f;
        out[2 * KH_POINTS + c] = fm;
        out[3 * KH_POINTS + c] = fo;
    }
}

static int kh_canonical_action(const game_state *g, int action)
{
    assert(action >= 0 && action < KH_ACTIONS);
    return CS(g)->side == 0 ? action : T.rot_action[action];
}

static int kh_mirror_action(int action)
{
    assert(action >= 0 && action < KH_ACTIONS);
    return T.mirror_action[action];
}

/* R19: the mirror's cells, (r, c) -> (r, 4 - c); every plane stays itself. */
static const game_symmetry s_symmetries[] = {
    {.name = "mirror", .cells = board5_mirror_cells, .planes = NULL, .action = kh_mirror_action},
};

static uint64_t kh_hash(const game_state *g)
{
    const kh_state *s = CS(g);
    uint64_t h = 0;
    for (int c = 0; c < 2; c++)
        for (uint32_t m = s_colour(s, c); m; m &= m - 1) {
            int sq = s_lsb(m);
            h ^= T.zob[c * 2 + (s->kings >> sq & 1)][sq];
        }
    uint64_t extra = (uint64_t)s->side | (uint64_t)(uint8_t)(s->chain + 1) << 8 |
                     (uint64_t)(s->chain < 0 && s->reps >= 2) << 16 | (uint64_t)s->ply << 24;
    return h ^ mix64(extra);
}

/* Packed: black u32, white u32, kings u32 (little-endian), side, chain+1,
 * the repeated flag (bit 0) with the no-progress count (R13, bits 1-6: not
 * in the planes; for the endgame tables' value targets, tablebase.h), ply
 * u16: 17 bytes. Bytes packed before the count was kept read count 0. */
static void kh_pack(const game_state *g, uint8_t *out)
{
    const kh_state *s = CS(g);
    uint32_t w[3] = {s_colour(s, 0), s_colour(s, 1), s->kings};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++)
            out[i * 4 + k] = (uint8_t)(w[i] >> (8 * k));
    out[12] = s->side;
    out[13] = (uint8_t)(s->chain + 1);
    int count = s->no_progress < KH_NO_PROGRESS ? s->no_progress : KH_NO_PROGRESS;
    out[14] = (uint8_t)((s->chain < 0 && s->reps >= 2) | count << 1);
    out[15] = (uint8_t)(s->ply & 0xff);
    out[16] = (uint8_t)(s->ply >> 8);
}

/* The words and small fields of packed bytes; false for bytes no pack()
 * could have written. */
static bool s_unpack(const uint8_t *in, uint32_t w[3], int *side, int *ply)
{
    for (int i = 0; i < 3; i++) {
        w[i] = 0;
        for (int k = 0; k < 4; k++)
            w[i] |= (uint32_t)in[i * 4 + k] << (8 * k);
    }
    *side = in[12];
    *ply = in[15] | in[16] << 8;
    return !((w[0] | w[1] | w[2]) & ~ALL_POINTS || (w[0] & w[1]) || (w[2] & ~(w[0] | w[1])) ||
             *side > 1 || in[13] > KH_POINTS || in[14] >> 1 > KH_NO_PROGRESS ||
             *ply > KH_MAX_PLIES);
}

static int kh_unpack_planes(const uint8_t *in, float *out)
{
    uint32_t w[3];
    int side, ply;
    if (!s_unpack(in, w, &side, &ply))
        return KZ_ECORRUPT;
    s_planes(w[side], w[side ^ 1], w[2], side, in[14] & 1, ply, out);
    return 0;
}

/* What a position must be beyond its characters (parse_position, and
 * khreibaga_unpack_state), with t's side, chain and kings set: at most 12
 * pieces a side, no man on its promotion row but a chain man (R10), a chain
 * point holding a piece of the side to move that can capture on. Sets t's
 * own and opp. 0 or KZ_EINVAL with err. */
static int s_check_position(kh_state *t, const uint32_t pieces[2], char *err, size_t errlen)
{
    t->own = pieces[t->side];
    t->opp = pieces[t->side ^ 1];
    for (int c = 0; c < 2; c++)
        if (s_popcount(pieces[c]) > 12)
            return err_set(err, errlen, KZ_EINVAL, "position: %s has %d pieces (at most 12)",
                           c ? "white" : "black", s_popcount(pieces[c]));
    for (int c = 0; c < 2; c++) {
        uint32_t bad = pieces[c] & ~t->kings & s_far_row(c);
        if (t->chain >= 0 && c == t->side)
            bad &= ~(1u << t->chain); /* R10: a chain man may stand on the far row */
        if (bad)
            return err_set(err, errlen, KZ_EINVAL,
                           "position: %s man on its promotion row at point %d",
                           c ? "white" : "black", s_lsb(bad));
    }
    if (t->chain >= 0) {
        int sq = t->chain;
        if (!(pieces[t->side] >> sq & 1))
            return err_set(err, errlen, KZ_EINVAL,
                           "position: chain point %d holds no piece of the side to move", sq);
        uint32_t b = 1u << sq, opp = pieces[t->side ^ 1];
        uint32_t occ = (pieces[t->side] & ~b) | opp;
        bool more = t->kings & b ? s_king_can_capture(sq, occ, opp)
                                 : s_man_can_capture(sq, opp, ALL_POINTS & ~occ);
        if (!more)
            return err_set(err, errlen, KZ_EINVAL,
                           "position: the piece on chain point %d has no capture", sq);
    }
    return 0;
}

/* R20: 25 characters, a space, b or w, and mid-sequence a space and a point. */
static int kh_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    kh_state t;
    uint32_t pieces[2] = {0, 0}; /* Black's, White's */
    memset(&t, 0, sizeof t);
    t.chain = -1;
    if (!str)
        return err_set(err, errlen, KZ_EINVAL, "empty position");
    size_t n = strlen(str);
    if (n < 27 || str[25] != ' ') {
        return err_set(err, errlen, KZ_EINVAL,
                       "position must be 25 characters of b B w W . then a space and b or w");
    }
    for (int sq = 0; sq < KH_POINTS; sq++) {
        char c = str[sq];
        uint32_t b = 1u << sq;
        switch (c) {
        case 'b': pieces[0] |= b; break;
        case 'B': pieces[0] |= b; t.kings |= b; break;
        case 'w': pieces[1] |= b; break;
        case 'W': pieces[1] |= b; t.kings |= b; break;
        case '.': break;
        default:
            return err_set(err, errlen, KZ_EINVAL,
                           "position: bad character '%c' at point %d (use b B w W .)",
                           isprint((unsigned char)c) ? c : '?', sq);
        }
    }
    if (str[26] == 'b')
        t.side = 0;
    else if (str[26] == 'w')
        t.side = 1;
    else
        return err_set(err, errlen, KZ_EINVAL, "position: side to move must be b or w");
    if (n > 27) {
        long chain;
        /* One or two decimal digits, as in actions (R21): no sign, no blank. */
        size_t digits = strspn(str + 28, "0123456789");
        if (str[27] != ' ' || digits < 1 || digits > 2 || str[28 + digits] != '\0' ||
            parse_long(str + 28, 0, 24, &chain) != 0)
            return err_set(err, errlen, KZ_EINVAL,
                           "position: after the side, only a space and a chain point 0..24");
        t.chain = (int8_t)chain;
    }
    int rc = s_check_position(&t, pieces, err, errlen);
    if (rc)
        return rc;
    s_reset_history(&t);
    memset(g, 0, sizeof *g);
    memcpy(g->bytes, &t, sizeof t);
    return 0;
}

int khreibaga_unpack_state(const uint8_t *in, game_state *g)
{
    uint32_t w[3];
    int side, ply;
    if (!s_unpack(in, w, &side, &ply))
        return KZ_ECORRUPT;
    kh_state t;
    memset(&t, 0, sizeof t);
    t.side = (uint8_t)side;
    t.chain = (int8_t)(in[13] - 1);
    t.kings = w[2];
    if (s_check_position(&t, w, NULL, 0))
        return KZ_ECORRUPT;
    s_reset_history(&t);
    t.ply = (uint16_t)ply;
    t.no_progress = (uint8_t)(in[14] >> 1);
    memset(g, 0, sizeof *g);
    memcpy(g->bytes, &t, sizeof t);
    return 0;
}

char khreibaga_piece_at(const game_state *g, int sq)
{
    const kh_state *s = CS(g);
    uint32_t b = 1u << sq;
    if (s_colour(s, 0) & b)
        return s->kings & b ? 'B' : 'b';
    if (s_colour(s, 1) & b)
        return s->kings & b ? 'W' : 'w';
    return '.';
}

int khreibaga_chain_point(const game_state *g) { return CS(g)->chain; }
int khreibaga_no_progress(const game_state *g) { return CS(g)->no_progress; }
int khreibaga_repetitions(const game_state *g) { return CS(g)->reps; }
uint32_t khreibaga_pieces(const game_state *g, int colour) { return s_colour(CS(g), colour & 1); }
uint32_t khreibaga_kings(const game_state *g) { return CS(g)->kings; }

int khreibaga_set(game_state *g, uint32_t black, uint32_t white, uint32_t kings, int side)
{
    if ((black | white) & ~ALL_POINTS || (black & white) || (kings & ~(black | white)) ||
        side < 0 || side > 1 || s_popcount(black) > 12 || s_popcount(white) > 12 ||
        (black & ~kings & s_far_row(0)) || (white & ~kings & s_far_row(1)))
        return KZ_EINVAL;
    /* Only the head: the history is empty (implicit, see kh_state). */
    kh_state *s = S(g);
    s->own = side ? white : black;
    s->opp = side ? black : white;
    s->kings = kings;
    s->side = (uint8_t)side;
    s->chain = -1;
    s_reset_history(s);
    return 0;
}

static void kh_format_position(const game_state *g, char *buf, size_t len)
{
    const kh_state *s = CS(g);
    char tmp[40];
    for (int sq = 0; sq < KH_POINTS; sq++)
        tmp[sq] = khreibaga_piece_at(g, sq);
    tmp[25] = ' ';
    tmp[26] = s->side ? 'w' : 'b';
    tmp[27] = 0;
    if (s->chain >= 0)
        snprintf(tmp + 27, sizeof tmp - 27, " %d", s->chain);
    snprintf(buf, len, "%s", tmp);
}

/* R21: "src-dst" or "srcxdst", decimal points 0..24. */
static int kh_parse_action(const char *str, int *action)
{
    if (!str)
        return KZ_EINVAL;
    const char *sep = strpbrk(str, "-xX");
    if (!sep || sep == str || sep - str > 2)
        return KZ_EINVAL;
    char a[3] = {0};
    memcpy(a, str, (size_t)(sep - str));
    long src, dst;
    for (const char *p = a; *p; p++)
        if (!isdigit((unsigned char)*p))
            return KZ_EINVAL;
    for (const char *p = sep + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return KZ_EINVAL;
    if (strlen(sep + 1) > 2 || parse_long(a, 0, 24, &src) || parse_long(sep + 1, 0, 24, &dst))
        return KZ_EINVAL;
    *action = (int)(src * 25 + dst);
    return 0;
}

static void kh_format_action(int action, char *buf, size_t len)
{
    snprintf(buf, len, "%d-%d", action / 25, action % 25);
}

static const char *kh_player_name(int player) { return player == 0 ? "black" : "white"; }

/* The board with its lines (R1), row 4 at the top or, turned, at the bottom
 * (White's side); marks (may be NULL) per point: 'l' where the last turn's
 * piece landed, 'o' a point it left, 'x' a piece it took. */
static void s_draw(const game_state *g, const char *marks, bool turned, FILE *out)
{
    const kh_state *s = CS(g);
    for (int i = 0; i < 5; i++) {
        int r = board5_print_row_start(out, i, turned);
        for (int j = 0; j < 5; j++) {
            int c = turned ? 4 - j : j, sq = r * 5 + c;
            game_draw_hop_square(out, khreibaga_piece_at(g, sq), marks ? marks[sq] : 0,
                                 sq == s->chain);
            if (j < 4)
                fputs("-", out);
        }
        board5_print_row_end(out, i, turned);
    }
    char pos[40];
    kh_format_position(g, pos, sizeof pos);
    fprintf(out, "\n  %s to move, ply %d, no-progress %d%s", kh_player_name(s->side), s->ply,
            s->no_progress, turned ? " (turned: White's side at the bottom)" : "");
    if (s->chain >= 0)
        fprintf(out, ", mid-sequence: the piece on %d must capture on", s->chain);
    fprintf(out, "\n  position: %s\n", pos);
}

/* Draws the board with its lines (R1), row 4 at the top. */
static void kh_render(const game_state *g, FILE *out) { s_draw(g, NULL, false, out); }

/* Men count 1, kings 2.5 (a flying king is worth a few men); the balance,
 * own minus the other side's, over 12 (a side's men at the start),
 * clamped: the auxiliary material head's target (game.h). */
static float kh_material(const game_state *g, int player)
{
    const kh_state *s = CS(g);
    uint32_t own = s_colour(s, player), opp = s_colour(s, player ^ 1);
    float v = (float)(s_popcount(own & ~s->kings) - s_popcount(opp & ~s->kings)) +
              2.5f * (float)(s_popcount(own & s->kings) - s_popcount(opp & s->kings));
    v /= 12.0f;
    return v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
}

/* Whether a legal action takes a piece: the other side has fewer after it. */
static bool kh_is_capture(const game_state *g, int action)
{
    game_state t;
    kh_copy(&t, g);
    kh_apply(&t, action);
    int me = CS(g)->side;
    return s_popcount(s_colour(CS(&t), me ^ 1)) < s_popcount(s_colour(CS(g), me ^ 1));
}

/* kz play's board (game.h's render_turn): R1's lines, from Black's side or
 * turned for White (point 24 at the bottom left), with the last turn marked:
 * the piece's way in brackets <...>, the points it left as '*', the pieces it
 * took as 'x'; the piece that must capture on in [...]. */
static void kh_render_turn(const game_state *from, const uint16_t *actions, int n, bool turned,
                           FILE *out)
{
    char mark[KH_POINTS] = {0}; /* 'l' landed, 'o' left, 'x' taken */
    char last[128] = "";
    game_state s;
    kh_copy(&s, from);
    if (n)
        snprintf(last, sizeof last, "last: %s ", kh_player_name(CS(&s)->side));
    for (int k = 0; k < n; k++) {
        char a[16];
        kh_format_action(actions[k], a, sizeof a);
        if (kh_is_capture(&s, actions[k]))
            *strchr(a, '-') = 'x';
        int src = actions[k] / KH_POINTS, dst = actions[k] % KH_POINTS;
        game_state u;
        kh_copy(&u, &s);
        kh_apply(&u, actions[k]);
        for (int q = 0; q < KH_POINTS; q++)
            if (q != src && khreibaga_piece_at(&s, q) != '.' && khreibaga_piece_at(&u, q) == '.')
                mark[q] = 'x';
        if (!mark[src] || mark[src] == 'l')
            mark[src] = 'o';
        mark[dst] = 'l';
        snprintf(last + strlen(last), sizeof last - strlen(last), "%s%s", k ? ", " : "", a);
        s = u;
    }
    s_draw(&s, mark, turned, out);
    if (last[0])
        fprintf(out, "  %s   (<p> where it went, * where it came from, x what it took)\n", last);
}

/* The baseline players' evaluation (game.h): a man 100, a flying king 250
 * (own minus the other side's). */
static long kh_evaluate(const game_state *g)
{
    const kh_state *s = CS(g);
    return (long)KH_EVAL_MAN * (s_popcount(s->own & ~s->kings) - s_popcount(s->opp & ~s->kings)) +
           (long)KH_EVAL_KING * (s_popcount(s->own & s->kings) - s_popcount(s->opp & s->kings));
}

/* R8: captures are compulsory, so the mover must capture when any hop exists. */
static bool kh_must_capture(const game_state *g)
{
    gen_out o;
    s_gen_call(CS(g), &o);
    return o.h.n > 0;
}

/* The description for the web pages (view.h, docs/web.md): the board of R1,
 * black and white men and kings, positions as R20 writes them, actions as R21. */
static void kh_describe(strbuf *out)
{
    view_open(out, &khreibaga_game, "#222222", "#fafafa");
    view_alquerque_board(out, "#e8cf9a", "#6b4a1e");
    view_hop_end(out, "bw", "BW", "\"side\", \"chain\"");
}

const game_def khreibaga_game = {
    .name = "khreibaga",
    .action_count = KH_ACTIONS,
    .planes = 7,
    .height = 5,
    .width = 5,
    .max_legal = GAME_MAX_LEGAL,
    .packed_bytes = 17,
    .state_bytes = (int)sizeof(kh_state),
    .position_chars = 30, /* 25 points, side, and mid-sequence the chain point */
    .simulations = 200,
    .dirichlet_alpha = 1.0f, /* about 10 legal actions at a typical turn start */
    .n_symmetries = 1,
    .symmetries = s_symmetries,
    .init = kh_init,
    .legal_actions = kh_legal_actions,
    .legal_mask = kh_legal_mask,
    .is_legal = kh_is_legal,
    .copy = kh_copy,
    .apply = kh_apply,
    .to_move = kh_to_move,
    .mid_turn = kh_mid_turn,
    .ply = kh_ply,
    .result = kh_result,
    .encode_planes = kh_encode_planes,
    .canonical_action = kh_canonical_action,
    .hash = kh_hash,
    .pack = kh_pack,
    .unpack_planes = kh_unpack_planes,
    .unpack_state = khreibaga_unpack_state,
    .parse_position = kh_parse_position,
    .format_position = kh_format_position,
    .parse_action = kh_parse_action,
    .format_action = kh_format_action,
    .render = kh_render,
    .player_name = kh_player_name,
    .perft = kh_perft,
    .material = kh_material,
    .evaluate = kh_evaluate,
    .must_capture = kh_must_capture,
    .derived_planes = KH_DERIVED,
    .derive_planes = kh_derive_planes,
    .describe = kh_describe,
    .render_turn = kh_render_turn,
    .legend = "Captures are compulsory, and of the most pieces possible (R8). On the board:\n"
              "b B black man and king, w W white, <p> where the last move went, * where it\n"
              "came from, x a piece it took, [p] the piece that must capture on.\n",
    .is_capture = kh_is_capture,
};
