/* khreibaga_frozen: FROZEN copy of common/khreibaga.c as of commit 30ff042, the
 * oracle of tests/test_khreibaga_diff.c (see khreibaga_frozen.h). Do not edit
 * beyond the renaming block and the include line; the original header comment follows.
 *
 * khreibaga: the rules engine (R1-R22 of ../shared/khreibaga-rules.md).
 *
 * Representation. Bitboards in 32-bit words, bit sq = point sq: one word per
 * colour for all its pieces, one word for the kings of both colours. Rays
 * (R1's lines from each point in each of 8 directions) are precomputed once.
 *
 * Majority rule (R8) without enumerating sequences on every call: the longest
 * capture chain from a landing point is found by a depth-first search over
 * bitboards (s_max_chain), only when legal actions are listed. At a turn start
 * the legal actions are the first hops whose chain length is the global
 * maximum. Mid-sequence, the hops made so far belong to a maximal sequence, so
 * the legal next hops are those of the chain piece with the longest chain left.
 * apply() itself only asks whether the piece can capture again (R8: a
 * sequence goes on while it can), which costs no search.
 *
 * Repetition (R14). Between a capture or a man move and the next one, only kings
 * move, and no earlier position can recur across a capture (pieces only
 * disappear) or a man move (men only move forward, never back, and never
 * un-promote). So history is kept only since the last such turn, and within it
 * the men never change: a position is identified exactly by the kings of both
 * colours and the side to move, 51 bits in one uint64. At most 51 turn starts
 * fit between two resets before R13 ends the game.
 */
/* The exported names of khreibaga.c, renamed for the frozen copy (only in this
 * file: the test sees both engines under their own names). */
#define khreibaga_game khreibaga_frozen_game
#define khreibaga_piece_at khreibaga_frozen_piece_at
#define khreibaga_chain_point khreibaga_frozen_chain_point
#define khreibaga_no_progress khreibaga_frozen_no_progress
#define khreibaga_repetitions khreibaga_frozen_repetitions
#include "khreibaga_frozen.h"

#include <assert.h>
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define HIST_MAX (KH_NO_PROGRESS + 1)
#define ALL_POINTS 0x1ffffffu
#define ROW0 0x1fu
#define ROW4 (0x1fu << 20)

typedef struct kh_state {
    uint32_t pieces[2];     /* all pieces of Black [0] and White [1] */
    uint32_t kings;         /* kings of both colours */
    uint8_t side;           /* player to move: 0 Black, 1 White */
    int8_t chain;           /* point of the piece that must hop on, -1 at a turn start */
    uint8_t no_progress;    /* R13: turns since the last capture or man move */
    uint8_t reps;           /* R14: occurrences of this turn-start position, 0 mid-sequence */
    uint8_t hist_len;       /* entries in hist */
    uint16_t ply;           /* completed turns */
    uint64_t hist[HIST_MAX]; /* turn-start keys since the last capture or man move */
} kh_state;

_Static_assert(sizeof(kh_state) <= GAME_STATE_BYTES, "kh_state must fit game_state");

/* Directions: N, S, E, W, NE, NW, SE, SW as (drow, dcol). */
static const int DR[8] = {1, -1, 0, 0, 1, 1, -1, -1};
static const int DC[8] = {0, 0, 1, -1, 1, -1, 1, -1};

/* A man's capture hop: the point jumped over and the landing point. */
typedef struct hop {
    int8_t cap;  /* adjacent point holding the enemy */
    int8_t land; /* the point directly behind it */
} hop_t;

static struct {
    int8_t ray[KH_POINTS][8][5];   /* points along each direction, -1 terminated */
    hop_t man_hops[KH_POINTS][8];  /* a man's possible capture hops (R4) */
    uint8_t n_man_hops[KH_POINTS]; /* their count */
    uint32_t man_caps[KH_POINTS];  /* the points a man on sq could jump over */
    uint32_t fwd[2][KH_POINTS];         /* a man's forward neighbours (R3) */
    int shift[8];                       /* sq offset of one step in each direction */
    uint32_t raymask[KH_POINTS][8];     /* the points of each ray, as a bitboard */
    uint32_t jump_from[8];              /* points with a ray of length >= 2 in each direction */
    uint8_t ray_len[KH_POINTS][8]; /* their count */
    uint32_t between[KH_POINTS][KH_POINTS]; /* points strictly between src and dst on one line */
    int8_t line_dir[KH_POINTS][KH_POINTS];  /* direction from src to dst, -1 if not on a line */
    uint16_t rot_action[KH_ACTIONS];        /* R16 rotation of an action */
    uint16_t mirror_action[KH_ACTIONS];     /* R19 mirror of an action */
    uint64_t zob[4][KH_POINTS];             /* hash keys: black man, black king, white man, white king */
} T;

/* Filled once before main() runs; read-only afterwards (so thread-safe). */
__attribute__((constructor)) static void s_init_tables(void)
{
    memset(&T, 0, sizeof T);
    memset(T.line_dir, -1, sizeof T.line_dir);
    for (int sq = 0; sq < KH_POINTS; sq++) {
        int r = sq / 5, c = sq % 5;
        for (int d = 0; d < 8; d++) {
            int n = 0;
            bool diag = d >= 4;
            /* R1: diagonals only through points with r+c even. */
            if (!diag || (r + c) % 2 == 0) {
                int rr = r + DR[d], cc = c + DC[d];
                uint32_t path = 0;
                while (rr >= 0 && rr < 5 && cc >= 0 && cc < 5) {
                    int t = rr * 5 + cc;
                    T.ray[sq][d][n++] = (int8_t)t;
                    T.between[sq][t] = path;
                    T.line_dir[sq][t] = (int8_t)d;
                    T.raymask[sq][d] |= 1u << t;
                    path |= 1u << t;
                    rr += DR[d];
                    cc += DC[d];
                }
            }
            T.ray_len[sq][d] = (uint8_t)n;
            for (int k = n; k < 5; k++)
                T.ray[sq][d][k] = -1;
            if (n >= 2) {
                hop_t h = {T.ray[sq][d][0], T.ray[sq][d][1]};
                T.man_hops[sq][T.n_man_hops[sq]++] = h;
                T.man_caps[sq] |= 1u << h.cap;
            }
            if (n >= 2) {
                T.shift[d] = T.ray[sq][d][0] - sq;
                T.jump_from[d] |= 1u << sq;
            }
            /* R3: forward is N, NE, NW for Black and S, SE, SW for White. */
            if (n >= 1 && (d == 0 || d == 4 || d == 5))
                T.fwd[0][sq] |= 1u << T.ray[sq][d][0];
            if (n >= 1 && (d == 1 || d == 6 || d == 7))
                T.fwd[1][sq] |= 1u << T.ray[sq][d][0];
        }
    }
    for (int a = 0; a < KH_ACTIONS; a++) {
        int s = a / 25, d = a % 25;
        T.rot_action[a] = (uint16_t)((24 - s) * 25 + (24 - d));
        int ms = (s / 5) * 5 + 4 - s % 5, md = (d / 5) * 5 + 4 - d % 5;
        T.mirror_action[a] = (uint16_t)(ms * 25 + md);
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
static inline uint32_t s_far_row(int side) { return side == 0 ? ROW4 : ROW0; }

/* The turn-start key within a history window (see the file comment). */
static inline uint64_t s_key(const kh_state *s)
{
    return (uint64_t)(s->kings & s->pieces[0]) | (uint64_t)(s->kings & s->pieces[1]) << 25 |
           (uint64_t)s->side << 50;
}

/* The point of `mask` nearest to the ray's origin in direction d (mask != 0):
 * directions with a positive step grow from the origin, the others shrink. */
static inline int s_nearest(uint32_t mask, int d)
{
    return (d == 0 || d == 2 || d == 4 || d == 5) ? __builtin_ctz(mask) : 31 - __builtin_clz(mask);
}

/* Step 1: single capture hops of one piece (R4, R6). The moving piece has
 * been lifted from its square (R7): `occ` excludes it; `opp` holds the enemy's
 * pieces. Runs BODY with LAND (landing point) and CAP (captured point) bound
 * for each hop. Men use the precomputed (cap, land) pairs; kings walk the
 * rays of length >= 2. */
#define FOR_EACH_HOP(sq, is_king, occ, opp, LAND, CAP, BODY)                               \
    do {                                                                                    \
        if (!(is_king)) {                                                                   \
            const hop_t *h_ = T.man_hops[sq];                                               \
            for (int i_ = 0, n_ = T.n_man_hops[sq]; i_ < n_; i_++) {                        \
                int c_ = h_[i_].cap, l_ = h_[i_].land;                                      \
                if (((opp) >> c_ & 1) && !((occ) >> l_ & 1)) {                              \
                    int LAND = l_, CAP = c_;                                                \
                    BODY                                                                    \
                }                                                                           \
            }                                                                               \
        } else {                                                                            \
            for (int d_ = 0; d_ < 8; d_++) {                                                \
                uint32_t b_ = T.raymask[sq][d_] & (occ);                                    \
                if (!b_)                                                                    \
                    continue;                                                               \
                int c_ = s_nearest(b_, d_);                                                 \
                if (!((opp) >> c_ & 1))                                                     \
                    continue;                                                               \
                uint32_t after_ = T.raymask[c_][d_], b2_ = after_ & (occ);                  \
                uint32_t lands_ = b2_ ? after_ & ~T.raymask[s_nearest(b2_, d_)][d_] & ~b2_  \
                                      : after_;                                             \
                for (; lands_; lands_ &= lands_ - 1) {                                      \
                    int LAND = s_lsb(lands_), CAP = c_;                                     \
                    BODY                                                                    \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

static inline uint32_t s_shift(uint32_t x, int by) { return by >= 0 ? x << by : x >> -by; }

/* The men (in `men`) that have at least one capture, for all men at once:
 * in each direction, an enemy on the next point and an empty point after. */
static inline uint32_t s_man_capturers(uint32_t men, uint32_t opp, uint32_t empty)
{
    uint32_t r = 0;
    for (int d = 0; d < 8; d++) {
        int sh = T.shift[d];
        r |= T.jump_from[d] & s_shift(opp, -sh) & s_shift(empty, -2 * sh);
    }
    return r & men;
}

/* Step 2: the longest chain of captures a piece standing (lifted) on sq can
 * still make. `own` excludes the moving piece; `opp` holds the enemies left.
 * Stops early once every enemy piece would be taken. */
static int s_max_chain_man(int sq, uint32_t opp, uint32_t empty, int all)
{
    if (!(T.man_caps[sq] & opp))
        return 0;
    int best = 0;
    const hop_t *h = T.man_hops[sq];
    for (int i = 0, n = T.n_man_hops[sq]; i < n; i++) {
        uint32_t cbit = 1u << h[i].cap;
        if ((opp & cbit) && (empty >> h[i].land & 1)) {
            int v = 1 + s_max_chain_man(h[i].land, opp & ~cbit, empty | cbit, all - 1);
            if (v > best) {
                best = v;
                if (v == all)
                    break;
            }
        }
    }
    return best;
}

static int s_max_chain(int sq, bool is_king, uint32_t own, uint32_t opp)
{
    if (!is_king)
        return s_max_chain_man(sq, opp, ALL_POINTS & ~(own | opp), s_popcount(opp));
    int best = 0, all = s_popcount(opp);
    uint32_t occ = own | opp;
    FOR_EACH_HOP(sq, true, occ, opp, land, cap, {
        int v = 1 + s_max_chain(land, true, own, opp & ~(1u << cap));
        if (v > best) {
            best = v;
            if (best == all)
                return best;
        }
    });
    return best;
}

/* Whether the piece on sq (lifted) has any capture at all. */
static bool s_can_capture(int sq, bool is_king, uint32_t own, uint32_t opp)
{
    uint32_t occ = own | opp;
    FOR_EACH_HOP(sq, is_king, occ, opp, land, cap, {
        (void)land;
        (void)cap;
        return true;
    });
    return false;
}

/* Step 3: the legal actions as one destination mask per source point. Returns
 * the number of legal actions. */
static int s_legal_dsts(const kh_state *s, uint32_t dsts[KH_POINTS], uint32_t *srcs_out)
{
    int me = s->side;
    uint32_t own = s->pieces[me], opp = s->pieces[me ^ 1];
    int count = 0;

    if (s->chain >= 0) {
        /* Mid-sequence (R9): hops of the chain piece that still complete a
         * maximal sequence. The hops made so far belong to some maximal
         * sequence, so those are exactly the hops with the longest chain
         * left from here. */
        int sq = s->chain, best = 0;
        bool king = s->kings >> sq & 1;
        *srcs_out = 1u << sq;
        dsts[sq] = 0;
        uint32_t own_rest = own & ~(1u << sq);
        uint32_t occ = own_rest | opp;
        FOR_EACH_HOP(sq, king, occ, opp, land, cap, {
            int v = 1 + s_max_chain(land, king, own_rest, opp & ~(1u << cap));
            if (v > best) {
                best = v;
                dsts[sq] = 0;
                count = 0;
            }
            if (v == best && !(dsts[sq] >> land & 1)) {
                dsts[sq] |= 1u << land;
                count++;
            }
        });
        return count;
    }

    /* Turn start: captures first (R8), by majority. Men's first hops are
     * found for all men at once, direction by direction; kings walk their
     * rays. Each hop's value is one plus the longest chain after it. */
    int best = 0;
    uint32_t empty = ALL_POINTS & ~(own | opp);
    uint32_t men = own & ~s->kings, srcs = 0;
    int all = s_popcount(opp);
#define KH_RECORD_HOP(SQ, LAND, V)                                                          \
    do {                                                                                    \
        int v_ = (V);                                                                       \
        if (v_ > best) {                                                                    \
            /* A longer sequence: everything found so far is illegal. */                  \
            best = v_;                                                                      \
            srcs = 0;                                                                       \
            count = 0;                                                                      \
        }                                                                                   \
        if (v_ == best) {                                                                   \
            if (!(srcs >> (SQ) & 1)) {                                                      \
                srcs |= 1u << (SQ);                                                         \
                dsts[SQ] = 0;                                                               \
            }                                                                               \
            if (!(dsts[SQ] >> (LAND) & 1)) {                                                \
                dsts[SQ] |= 1u << (LAND);                                                   \
                count++;                                                                    \
            }                                                                               \
        }                                                                                   \
    } while (0)
    for (int d = 0; d < 8; d++) {
        int sh = T.shift[d];
        uint32_t c = men & T.jump_from[d] & s_shift(opp, -sh) & s_shift(empty, -2 * sh);
        for (; c; c &= c - 1) {
            int sq = s_lsb(c), cap = sq + sh, land = sq + 2 * sh;
            uint32_t cbit = 1u << cap, opp2 = opp & ~cbit;
            int v = 1;
            if (T.man_caps[land] & opp2)
                v += s_max_chain_man(land, opp2, empty | cbit | 1u << sq, all - 1);
            KH_RECORD_HOP(sq, land, v);
        }
    }
    for (uint32_t m = own & s->kings; m; m &= m - 1) {
        int sq = s_lsb(m);
        uint32_t own_rest = own & ~(1u << sq);
        uint32_t occ = own_rest | opp;
        FOR_EACH_HOP(sq, true, occ, opp, land, cap, {
            KH_RECORD_HOP(sq, land, 1 + s_max_chain(land, true, own_rest, opp & ~(1u << cap)));
        });
    }
#undef KH_RECORD_HOP
    if (best > 0) {
        *srcs_out = srcs;
        return count;
    }

    /* No capture: simple moves (R3, R5). */
    uint32_t occ = own | opp;
    *srcs_out = own;
    for (uint32_t m = own; m; m &= m - 1) {
        int sq = s_lsb(m);
        if (s->kings >> sq & 1) {
            dsts[sq] = 0;
            for (int d = 0; d < 8; d++)
                for (int k = 0; k < T.ray_len[sq][d]; k++) {
                    int t = T.ray[sq][d][k];
                    if (occ >> t & 1)
                        break;
                    dsts[sq] |= 1u << t;
                    count++;
                }
        } else {
            /* Forward only (R3). */
            uint32_t to = T.fwd[me][sq] & ~occ;
            dsts[sq] = to;
            count += s_popcount(to);
        }
    }
    return count;
}

/* Whether the mover has at least one legal action (cheaper than listing):
 * any simple move, or any capture (a capture always starts a legal sequence). */
static bool s_has_action(const kh_state *s)
{
    int me = s->side;
    uint32_t own = s->pieces[me], opp = s->pieces[me ^ 1], occ = own | opp;
    uint32_t men = own & ~s->kings, empty = ALL_POINTS & ~occ;
    for (uint32_t m = men; m; m &= m - 1)
        if (T.fwd[me][s_lsb(m)] & empty)
            return true;
    if (s_man_capturers(men, opp, empty))
        return true;
    for (uint32_t m = own & s->kings; m; m &= m - 1) {
        int sq = s_lsb(m);
        for (int d = 0; d < 8; d++)
            if (T.ray_len[sq][d] && !(occ >> T.ray[sq][d][0] & 1))
                return true;
        if (s_can_capture(sq, true, own & ~(1u << sq), opp))
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
    if (!(s->pieces[s->side] >> src & 1))
        return false;
    if (s->chain >= 0 && src != s->chain)
        return false;
    uint32_t dsts[KH_POINTS], srcs;
    s_legal_dsts(s, dsts, &srcs);
    return (srcs >> src & 1) && (dsts[src] >> dst & 1);
}

/* Ends the turn (R10, R11, R13, R14): crowns a man that stopped on the far
 * row, passes the move, updates the counters and the history. */
static void s_end_turn(kh_state *s, int last_sq, bool progress)
{
    int me = s->side;
    if ((s_far_row(me) >> last_sq & 1) && !(s->kings >> last_sq & 1))
        s->kings |= 1u << last_sq; /* R10: crowned as the turn ends */
    s->side = (uint8_t)(me ^ 1);
    s->chain = -1;
    if (s->ply < UINT16_MAX)
        s->ply++;
    if (progress)
        s->no_progress = 0;
    else if (s->no_progress < 255)
        s->no_progress++;
    uint64_t key = s_key(s);
    if (progress) {
        s->hist[0] = key;
        s->hist_len = 1;
        s->reps = 1;
        return;
    }
    int reps = 1;
    for (int i = 0; i < s->hist_len; i++)
        reps += s->hist[i] == key;
    if (s->hist_len == HIST_MAX) {
        /* Only reachable by playing on past an R13 draw; keep the newest. */
        memmove(s->hist, s->hist + 1, sizeof(uint64_t) * (HIST_MAX - 1));
        s->hist_len--;
    }
    s->hist[s->hist_len++] = key;
    s->reps = (uint8_t)(reps > 255 ? 255 : reps);
}

static void kh_apply(game_state *g, int action)
{
    kh_state *s = S(g);
    assert(action >= 0 && action < KH_ACTIONS);
    int me = s->side;
    int src = action / 25, dst = action % 25;
    uint32_t sbit = 1u << src, dbit = 1u << dst;
    assert(s->pieces[me] & sbit);
    bool king = s->kings & sbit;
    uint32_t captured = T.between[src][dst] & s->pieces[me ^ 1];

    /* Move the piece. */
    s->pieces[me] = (s->pieces[me] & ~sbit) | dbit;
    if (king)
        s->kings = (s->kings & ~sbit) | dbit;

    if (!captured) {
        /* A simple move ends the turn; a man move is progress (R13). */
        s_end_turn(s, dst, !king);
        return;
    }
    /* A capture hop: the captured piece leaves at once (R7). */
    s->pieces[me ^ 1] &= ~captured;
    s->kings &= ~captured;
    /* R8: the sequence goes on while the piece can capture. (Which next hops
     * are legal is decided by legal_actions: the majority rule.) */
    uint32_t opp = s->pieces[me ^ 1];
    if ((!king && !(T.man_caps[dst] & opp)) ||
        !s_can_capture(dst, king, s->pieces[me] & ~dbit, opp)) {
        s_end_turn(s, dst, true);
    } else {
        s->chain = (int8_t)dst;
        s->reps = 0;
    }
}

static void kh_copy(game_state *dst, const game_state *src)
{
    const kh_state *s = CS(src);
    memcpy(dst->bytes, src->bytes, offsetof(kh_state, hist) + sizeof(uint64_t) * s->hist_len);
}

static int kh_to_move(const game_state *g) { return CS(g)->side; }
static bool kh_mid_turn(const game_state *g) { return CS(g)->chain >= 0; }
static int kh_ply(const game_state *g) { return CS(g)->ply; }

static game_result kh_result(const game_state *g)
{
    const kh_state *s = CS(g);
    game_result r = {false, -1, GAME_REASON_NONE};
    if (s->chain >= 0)
        return r; /* R12: decided only at the start of a turn */
    int me = s->side;
    /* R12 before R13, R14, R15: a loss stands over a draw. */
    if (!s->pieces[me]) {
        r = (game_result){true, me ^ 1, GAME_REASON_NO_PIECES};
    } else if (!s_has_action(s)) {
        r = (game_result){true, me ^ 1, GAME_REASON_NO_MOVES};
    } else if (s->no_progress >= KH_NO_PROGRESS) {
        r = (game_result){true, -1, GAME_REASON_NO_PROGRESS};
    } else if (s->reps >= 3) {
        r = (game_result){true, -1, GAME_REASON_REPETITION};
    } else if (s->ply >= KH_MAX_PLIES) {
        r = (game_result){true, -1, GAME_REASON_LENGTH};
    }
    return r;
}

static void s_reset_history(kh_state *s)
{
    s->no_progress = 0;
    s->ply = 0;
    s->hist_len = 0;
    if (s->chain < 0) {
        s->hist[s->hist_len++] = s_key(s); /* R14: the first occurrence */
        s->reps = 1;
    } else {
        s->reps = 0;
    }
}

static void kh_init(game_state *g)
{
    memset(g, 0, sizeof *g);
    kh_state *s = S(g);
    s->pieces[0] = 0xfffu;               /* R2: points 0..11 */
    s->pieces[1] = 0xfffu << 13;         /* points 13..24 */
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
    s_planes(s->pieces[s->side], s->pieces[s->side ^ 1], s->kings, s->side,
             s->chain < 0 && s->reps >= 2, s->ply, out);
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

static uint64_t kh_hash(const game_state *g)
{
    const kh_state *s = CS(g);
    uint64_t h = 0;
    for (int c = 0; c < 2; c++)
        for (uint32_t m = s->pieces[c]; m; m &= m - 1) {
            int sq = s_lsb(m);
            h ^= T.zob[c * 2 + (s->kings >> sq & 1)][sq];
        }
    uint64_t extra = (uint64_t)s->side | (uint64_t)(uint8_t)(s->chain + 1) << 8 |
                     (uint64_t)(s->chain < 0 && s->reps >= 2) << 16 | (uint64_t)s->ply << 24;
    return h ^ mix64(extra);
}

/* Packed: black u32, white u32, kings u32 (little-endian), side, chain+1,
 * repeated flag, ply u16: 17 bytes. */
static void kh_pack(const game_state *g, uint8_t *out)
{
    const kh_state *s = CS(g);
    uint32_t w[3] = {s->pieces[0], s->pieces[1], s->kings};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++)
            out[i * 4 + k] = (uint8_t)(w[i] >> (8 * k));
    out[12] = s->side;
    out[13] = (uint8_t)(s->chain + 1);
    out[14] = s->chain < 0 && s->reps >= 2;
    out[15] = (uint8_t)(s->ply & 0xff);
    out[16] = (uint8_t)(s->ply >> 8);
}

static int kh_unpack_planes(const uint8_t *in, float *out)
{
    uint32_t w[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++)
            w[i] |= (uint32_t)in[i * 4 + k] << (8 * k);
    int side = in[12], ply = in[15] | in[16] << 8;
    if ((w[0] | w[1] | w[2]) & ~ALL_POINTS || (w[0] & w[1]) || (w[2] & ~(w[0] | w[1])) ||
        side > 1 || in[13] > KH_POINTS || in[14] > 1 || ply > KH_MAX_PLIES)
        return KZ_ECORRUPT;
    s_planes(w[side], w[side ^ 1], w[2], side, in[14], ply, out);
    return 0;
}

static int s_fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return KZ_EINVAL;
}

/* R20: 25 characters, a space, b or w, and mid-sequence a space and a point. */
static int kh_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    char msg[160];
    kh_state t;
    memset(&t, 0, sizeof t);
    t.chain = -1;
    if (!str)
        return s_fail(err, errlen, "empty position");
    size_t n = strlen(str);
    if (n < 27 || str[25] != ' ') {
        return s_fail(err, errlen,
                      "position must be 25 characters of b B w W . then a space and b or w");
    }
    for (int sq = 0; sq < KH_POINTS; sq++) {
        char c = str[sq];
        uint32_t b = 1u << sq;
        switch (c) {
        case 'b': t.pieces[0] |= b; break;
        case 'B': t.pieces[0] |= b; t.kings |= b; break;
        case 'w': t.pieces[1] |= b; break;
        case 'W': t.pieces[1] |= b; t.kings |= b; break;
        case '.': break;
        default:
            snprintf(msg, sizeof msg, "position: bad character '%c' at point %d (use b B w W .)",
                     isprint((unsigned char)c) ? c : '?', sq);
            return s_fail(err, errlen, msg);
        }
    }
    if (str[26] == 'b')
        t.side = 0;
    else if (str[26] == 'w')
        t.side = 1;
    else
        return s_fail(err, errlen, "position: side to move must be b or w");
    if (n > 27) {
        long chain;
        if (str[27] != ' ' || parse_long(str + 28, 0, 24, &chain) != 0)
            return s_fail(err, errlen,
                          "position: after the side, only a space and a chain point 0..24");
        t.chain = (int8_t)chain;
    }
    for (int c = 0; c < 2; c++)
        if (s_popcount(t.pieces[c]) > 12) {
            snprintf(msg, sizeof msg, "position: %s has %d pieces (at most 12)",
                     c ? "white" : "black", s_popcount(t.pieces[c]));
            return s_fail(err, errlen, msg);
        }
    for (int c = 0; c < 2; c++) {
        uint32_t bad = t.pieces[c] & ~t.kings & s_far_row(c);
        if (t.chain >= 0 && c == t.side)
            bad &= ~(1u << t.chain); /* R10: a chain man may stand on the far row */
        if (bad) {
            snprintf(msg, sizeof msg, "position: %s man on its promotion row at point %d",
                     c ? "white" : "black", s_lsb(bad));
            return s_fail(err, errlen, msg);
        }
    }
    if (t.chain >= 0) {
        int sq = t.chain;
        if (!(t.pieces[t.side] >> sq & 1)) {
            snprintf(msg, sizeof msg, "position: chain point %d holds no piece of the side to move",
                     sq);
            return s_fail(err, errlen, msg);
        }
        bool king = t.kings >> sq & 1;
        if (!s_can_capture(sq, king, t.pieces[t.side] & ~(1u << sq), t.pieces[t.side ^ 1])) {
            snprintf(msg, sizeof msg, "position: the piece on chain point %d has no capture", sq);
            return s_fail(err, errlen, msg);
        }
    }
    s_reset_history(&t);
    memset(g, 0, sizeof *g);
    memcpy(g->bytes, &t, sizeof t);
    return 0;
}

char khreibaga_piece_at(const game_state *g, int sq)
{
    const kh_state *s = CS(g);
    uint32_t b = 1u << sq;
    if (s->pieces[0] & b)
        return s->kings & b ? 'B' : 'b';
    if (s->pieces[1] & b)
        return s->kings & b ? 'W' : 'w';
    return '.';
}

int khreibaga_chain_point(const game_state *g) { return CS(g)->chain; }
int khreibaga_no_progress(const game_state *g) { return CS(g)->no_progress; }
int khreibaga_repetitions(const game_state *g) { return CS(g)->reps; }

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

/* Draws the board with its lines (R1), row 4 at the top. */
static void kh_render(const game_state *g, FILE *out)
{
    const kh_state *s = CS(g);
    for (int r = 4; r >= 0; r--) {
        fprintf(out, "  %2d  ", r * 5);
        for (int c = 0; c < 5; c++) {
            int sq = r * 5 + c;
            char p = khreibaga_piece_at(g, sq);
            if (sq == s->chain)
                fprintf(out, "[%c]", p);
            else
                fprintf(out, " %c ", p);
            if (c < 4)
                fputs("-", out);
        }
        fprintf(out, "  %2d\n", r * 5 + 4);
        if (r > 0) {
            fputs("       ", out);
            for (int c = 0; c < 4; c++) {
                /* The square between rows r-1 and r, columns c and c+1: its
                 * diagonal joins the two corners with an even r+c (R1). */
                bool rising = ((r - 1) + c) % 2 == 0;
                fprintf(out, "| %c ", rising ? '/' : '\\');
            }
            fputs("|\n", out);
        }
    }
    char pos[40];
    kh_format_position(g, pos, sizeof pos);
    fprintf(out, "\n  %s to move, ply %d, no-progress %d", s->side ? "white" : "black", s->ply,
            s->no_progress);
    if (s->chain >= 0)
        fprintf(out, ", mid-sequence: the piece on %d must capture on", s->chain);
    fprintf(out, "\n  position: %s\n", pos);
}

const game_def khreibaga_game = {
    .name = "khreibaga",
    .action_count = KH_ACTIONS,
    .planes = 7,
    .height = 5,
    .width = 5,
    .max_legal = GAME_MAX_LEGAL,
    .packed_bytes = 17,
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
    .mirror_action = kh_mirror_action,
    .hash = kh_hash,
    .pack = kh_pack,
    .unpack_planes = kh_unpack_planes,
    .parse_position = kh_parse_position,
    .format_position = kh_format_position,
    .parse_action = kh_parse_action,
    .format_action = kh_format_action,
    .render = kh_render,
    .player_name = kh_player_name,
};
