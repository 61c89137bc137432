/* tablebase: Khreibaga endgame tables. See tablebase.h for the manual and
 * docs/tablebase.md for the reasoning (rule numbers there).
 *
 * Positions. A stored position is seen from its mover (R16): "own" pieces
 * move up (like Black), "opp" pieces down. Its class is the material
 * (own men, own kings, opp men, opp kings). Within a class the men are fixed
 * by a *slice* (one layout of both sides' men), the kings by their places on
 * the remaining empty points. index = slice * per_slice + rank of the own
 * kings among the empty points * C(E - ok, pk) + rank of the opp kings among
 * the points left (colex ranks). Own men stand on points 0..19, opp men on
 * 5..24 (R10: a man on its far row at a turn start has been crowned).
 *
 * Mirror (R19). Of a men layout and its mirror image only the one with the
 * smaller (own rank, opp rank) is a slice; a position whose men layout is
 * the other one is mirrored whole before indexing. A layout that is its own
 * mirror keeps all its king placements (mirror pairs among them both stored).
 *
 * Building. Zeroing moves (captures, man moves: R13) leave a slice for good:
 * captures lead to a class with fewer pieces, a promotion (R10) to one with
 * fewer men, a plain man move to a layout with one more step of *progress*
 * (the sum of how far every man has come). So classes are built by pieces,
 * then men, and a class's slices by falling progress; only king simple
 * moves (R5) stay inside a slice, and they join a slice of the class with
 * the mover's material and a slice of the class with the other side's (the
 * two colours of one board): a *slice pair*, solved alone by retrograde
 * analysis with distances bounded by R13's 50 plies. docs/tablebase.md has
 * the recursion and the proof. Moves (and whole capture sequences, R8, R9)
 * come from the rules engine itself (khreibaga.h); the king moves backward
 * (predecessors) from R1's lines here. */
#include "games/tablebase.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "games/khreibaga.h"
#include "common/util.h"

#define ALL 0x1ffffffu
#define HEADER_BYTES 128
#define MAX_SIDE 7 /* most pieces of one kind in a class (TB_MAX_PIECES - 1) + 1 */

/* Value bytes (tablebase.h): draw, win in d, loss in d; UNRES only while building. */
#define V_DRAW 0x00u
#define V_WIN(d) (0x40u | (unsigned)(d))
#define V_LOSS(d) (0x80u | (unsigned)(d))
#define V_UNRES 0xc0u
#define V_KIND(v) ((v) & 0xc0u)
#define V_DIST(v) ((v) & 0x3fu)

static const uint8_t MAGIC[8] = {'K', 'Z', 'T', 'B', '\r', '\n', 0x1a, '\n'};

/* --- geometry (R1, R16, R19) ---------------------------------------------- */

static struct {
    uint64_t binom[26][26];   /* C(n, k) */
    uint16_t rev10[1024];     /* 10 bits reversed */
    uint16_t mir10[1024];     /* two rows (10 bits), each row's 5 bits reversed */
    uint8_t rev5[32];         /* 5 bits reversed */
    int8_t ray[25][8][5];     /* the points from sq along direction d, nearest first */
    int8_t ray_len[25][8];    /* their count (diagonals only from r+c even, R1) */
} G;

/* 180-degree rotation (R16: sq -> 24 - sq) of a bitboard. */
static inline uint32_t s_rot(uint32_t x)
{
    return (uint32_t)G.rev10[x & 1023] << 15 | (uint32_t)G.rev10[(x >> 10) & 1023] << 5 |
           G.rev5[x >> 20];
}

/* Left-right mirror (R19: (r, c) -> (r, 4 - c)) of a bitboard. */
static inline uint32_t s_mir(uint32_t x)
{
    return G.mir10[x & 1023] | (uint32_t)G.mir10[(x >> 10) & 1023] << 10 |
           (uint32_t)G.rev5[x >> 20] << 20;
}

__attribute__((constructor)) static void s_init_geometry(void)
{
    for (int n = 0; n < 26; n++) {
        G.binom[n][0] = 1;
        for (int k = 1; k <= n; k++)
            G.binom[n][k] = G.binom[n - 1][k - 1] + (k < n ? G.binom[n - 1][k] : 0);
    }
    for (int x = 0; x < 32; x++)
        for (int i = 0; i < 5; i++)
            if (x >> i & 1)
                G.rev5[x] |= (uint8_t)(1u << (4 - i));
    for (int x = 0; x < 1024; x++) {
        for (int i = 0; i < 10; i++)
            if (x >> i & 1)
                G.rev10[x] |= (uint16_t)(1u << (9 - i));
        G.mir10[x] = (uint16_t)(G.rev5[x & 31] | G.rev5[x >> 5] << 5);
    }
    static const int dr[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dc[8] = {0, 0, 1, -1, 1, -1, 1, -1};
    for (int sq = 0; sq < 25; sq++)
        for (int d = 0; d < 8; d++) {
            int r = sq / 5, c = sq % 5, n = 0;
            if (d < 4 || (r + c) % 2 == 0)
                for (r += dr[d], c += dc[d]; r >= 0 && r < 5 && c >= 0 && c < 5;
                     r += dr[d], c += dc[d])
                    G.ray[sq][d][n++] = (int8_t)(r * 5 + c);
            G.ray_len[sq][d] = (int8_t)n;
        }
}

/* Colex rank of the set bits of x (bit positions as the elements). */
static inline uint64_t s_rank(uint32_t x)
{
    uint64_t r = 0;
    for (int i = 1; x; x &= x - 1, i++)
        r += G.binom[__builtin_ctz(x)][i];
    return r;
}

/* Colex rank of `set` within `universe` (elements: positions among its bits). */
static inline uint64_t s_rank_in(uint32_t set, uint32_t universe)
{
    uint64_t r = 0;
    for (int i = 1; set; set &= set - 1, i++)
        r += G.binom[__builtin_popcount(universe & ((set & -set) - 1))][i];
    return r;
}

/* The k-element subset of universe with colex rank r. */
static uint32_t s_unrank_in(uint64_t r, int k, uint32_t universe)
{
    int pts[25], n = 0;
    for (uint32_t u = universe; u; u &= u - 1)
        pts[n++] = __builtin_ctz(u);
    uint32_t out = 0;
    int p = n;
    for (int i = k; i >= 1; i--) {
        p--;
        while (G.binom[p][i] > r)
            p--;
        r -= G.binom[p][i];
        out |= 1u << pts[p];
    }
    return out;
}

/* --- men layouts (slices) ------------------------------------------------------ */

/* The slices of every class with om own men and pm opp men. */
typedef struct tb_layout {
    int om, pm;        /* men of the mover, of the other side */
    uint32_t n_opp;    /* C(20, pm): opp men combinations (the map's row length) */
    int32_t *map;      /* (C(20, om) * n_opp) slice << 1 | mirrored, or -1 (men overlap) */
    uint64_t slices;   /* canonical layouts */
    uint32_t *own;     /* (slices) own men */
    uint32_t *opp;     /* (slices) opp men */
    uint8_t *progress; /* (slices) steps made by all men: own rows + (4 - opp rows) */
} tb_layout;

static int s_progress(uint32_t own, uint32_t opp)
{
    int p = 0;
    for (; own; own &= own - 1)
        p += __builtin_ctz(own) / 5;
    for (; opp; opp &= opp - 1)
        p += 4 - __builtin_ctz(opp) / 5;
    return p;
}


/* Every k-subset of n bits as a mask, in increasing order (which is colex rank
 * order: out[r] has rank r); returns their count. */
static uint64_t s_combos(int k, int n, uint32_t *out)
{
    if (k == 0) {
        out[0] = 0;
        return 1;
    }
    uint64_t c = 0;
    for (uint32_t x = (1u << k) - 1; !(x >> n);) {
        out[c++] = x;
        uint32_t low = x & -x, r = x + low;
        x = (((r ^ x) >> 2) / low) | r; /* Gosper's hack: the next with k bits */
    }
    return c;
}

typedef struct s_slice_key {
    uint32_t own, opp; /* men */
    uint32_t progress; /* sorted by it, falling */
    uint64_t key;      /* own rank * n_opp + opp rank (then by it) */
} s_slice_key;

static int s_cmp_slice(const void *a, const void *b)
{
    const s_slice_key *x = a, *y = b;
    if (x->progress != y->progress)
        return x->progress > y->progress ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static tb_layout *s_layout_new(int om, int pm)
{
    tb_layout *l = xcalloc(1, sizeof *l);
    l->om = om;
    l->pm = pm;
    uint64_t n_own = G.binom[20][om];
    l->n_opp = (uint32_t)G.binom[20][pm];
    uint32_t *ca = xmalloc(n_own * sizeof *ca), *cb = xmalloc(l->n_opp * sizeof *cb);
    s_combos(om, 20, ca);
    s_combos(pm, 20, cb);
    uint64_t n_map = n_own * l->n_opp, n = 0;
    l->map = xmalloc(n_map * sizeof *l->map);
    s_slice_key *keys = xmalloc(n_map * sizeof *keys);
    /* Step 1. The canonical layouts: men apart, key <= the mirror image's key. */
    for (uint64_t ia = 0; ia < n_own; ia++)
        for (uint64_t ib = 0; ib < l->n_opp; ib++) {
            uint32_t own = ca[ia], opp = cb[ib] << 5;
            uint64_t key = ia * l->n_opp + ib;
            l->map[key] = -1;
            if (own & opp)
                continue;
            uint64_t mkey = s_rank(s_mir(own)) * l->n_opp + s_rank(s_mir(opp) >> 5);
            if (key <= mkey)
                keys[n++] = (s_slice_key){own, opp, (uint32_t)s_progress(own, opp), key};
        }
    /* Step 2. Slices by falling progress: the build's order. */
    qsort(keys, n, sizeof *keys, s_cmp_slice);
    l->slices = n;
    l->own = xmalloc((n ? n : 1) * sizeof *l->own);
    l->opp = xmalloc((n ? n : 1) * sizeof *l->opp);
    l->progress = xmalloc(n ? n : 1);
    for (uint64_t s = 0; s < n; s++) {
        l->own[s] = keys[s].own;
        l->opp[s] = keys[s].opp;
        l->progress[s] = (uint8_t)keys[s].progress;
        KZ_CHECK(s < (1u << 30));
        l->map[keys[s].key] = (int32_t)(s << 1);
    }
    /* Step 3. The other layouts point to their mirror image's slice. */
    for (uint64_t ia = 0; ia < n_own; ia++)
        for (uint64_t ib = 0; ib < l->n_opp; ib++) {
            uint32_t own = ca[ia], opp = cb[ib] << 5;
            uint64_t key = ia * l->n_opp + ib;
            if (own & opp || l->map[key] >= 0)
                continue;
            uint64_t mkey = s_rank(s_mir(own)) * l->n_opp + s_rank(s_mir(opp) >> 5);
            KZ_CHECK(l->map[mkey] >= 0 && !(l->map[mkey] & 1));
            l->map[key] = l->map[mkey] | 1;
        }
    free_all(keys, ca, cb);
    return l;
}

static void s_layout_free(tb_layout *l)
{
    if (!l)
        return;
    free_all(l->map, l->own, l->opp, l->progress, l);
}

/* --- classes -------------------------------------------------------------------- */

typedef struct tb_class {
    int om, ok, pm, pk;      /* material: own men, own kings, opp men, opp kings */
    char name[16];           /* "KMMvK" */
    const tb_layout *lay;    /* its slices (shared by the classes with the same men) */
    int empties;             /* points left by the men: 25 - om - pm */
    uint64_t per_slice;      /* king placements per slice: C(E, ok) * C(E - ok, pk) */
    uint64_t opp_combos;     /* C(E - ok, pk) */
    uint64_t positions;      /* slices * per_slice */
    const uint8_t *data;     /* (positions) value bytes; NULL while not built */
    uint8_t *buf;            /* the file's bytes: mapped, or the build's buffer */
    size_t buf_len;          /* their length */
    bool mapped;             /* buf is a mapping (else malloc'd) */
    tb_class_info info;      /* counts and the longest win, from the header */
} tb_class;

struct tb_set {
    char dir[PATH_MAX];                               /* where the files are */
    int pieces;                                       /* every class up to this is loaded */
    tb_layout *lay[TB_MAX_PIECES + 1][TB_MAX_PIECES + 1]; /* by (own men, opp men) */
    tb_class *mat[MAX_SIDE + 1][MAX_SIDE + 1][MAX_SIDE + 1][MAX_SIDE + 1]; /* by material */
    tb_class **list;                                  /* the loaded classes, in build order */
    int n;                                            /* their count */
};

static void s_class_name(int om, int ok, int pm, int pk, char *buf, size_t len)
{
    char t[24];
    int n = 0;
    for (int i = 0; i < ok; i++)
        t[n++] = 'K';
    for (int i = 0; i < om; i++)
        t[n++] = 'M';
    t[n++] = 'v';
    for (int i = 0; i < pk; i++)
        t[n++] = 'K';
    for (int i = 0; i < pm; i++)
        t[n++] = 'M';
    t[n] = 0;
    snprintf(buf, len, "%s", t);
}

/* The class of a material in t (made, with its layout, when missing). */
static tb_class *s_class_get(tb_set *t, int om, int ok, int pm, int pk)
{
    tb_class **slot = &t->mat[om][ok][pm][pk];
    if (*slot)
        return *slot;
    if (!t->lay[om][pm])
        t->lay[om][pm] = s_layout_new(om, pm);
    tb_class *c = xcalloc(1, sizeof *c);
    c->om = om;
    c->ok = ok;
    c->pm = pm;
    c->pk = pk;
    s_class_name(om, ok, pm, pk, c->name, sizeof c->name);
    c->lay = t->lay[om][pm];
    c->empties = 25 - om - pm;
    c->opp_combos = G.binom[c->empties - ok][pk];
    c->per_slice = G.binom[c->empties][ok] * c->opp_combos;
    c->positions = c->lay->slices * c->per_slice;
    snprintf(c->info.name, sizeof c->info.name, "%s", c->name);
    c->info.own_men = om;
    c->info.own_kings = ok;
    c->info.opp_men = pm;
    c->info.opp_kings = pk;
    c->info.positions = c->positions;
    *slot = c;
    return c;
}

static void s_class_unload(tb_class *c)
{
    if (c->mapped)
        munmap(c->buf, c->buf_len);
    else
        free(c->buf);
    c->buf = NULL;
    c->buf_len = 0;
    c->mapped = false;
    c->data = NULL;
}

/* The index of a position (own men on 0..19 and opp men on 5..24, apart) in c. */
static inline uint64_t s_index(const tb_class *c, uint32_t om, uint32_t ok, uint32_t pm,
                               uint32_t pk)
{
    const tb_layout *l = c->lay;
    int32_t e = l->map[s_rank(om) * l->n_opp + s_rank(pm >> 5)];
    if (e & 1) {
        ok = s_mir(ok);
        pk = s_mir(pk);
    }
    uint64_t slice = (uint64_t)(e >> 1);
    uint32_t empty = ALL & ~(l->own[slice] | l->opp[slice]);
    return slice * c->per_slice + s_rank_in(ok, empty) * c->opp_combos +
           s_rank_in(pk, empty & ~ok);
}

/* The position at an index of c. */
static void s_unindex(const tb_class *c, uint64_t index, uint32_t *om, uint32_t *ok,
                      uint32_t *pm, uint32_t *pk)
{
    uint64_t slice = index / c->per_slice, k = index % c->per_slice;
    const tb_layout *l = c->lay;
    *om = l->own[slice];
    *pm = l->opp[slice];
    uint32_t empty = ALL & ~(*om | *pm);
    *ok = s_unrank_in(k / c->opp_combos, c->ok, empty);
    *pk = s_unrank_in(k % c->opp_combos, c->pk, empty & ~*ok);
}

/* The value byte of a position from its mover's view (own pieces moving up);
 * V_LOSS(0) when the mover has no pieces (R12). -1 when its class is not
 * loaded. */
static inline int s_lookup(const tb_set *t, uint32_t own, uint32_t opp, uint32_t kings)
{
    if (!own)
        return (int)V_LOSS(0);
    uint32_t om = own & ~kings, ok = own & kings, pm = opp & ~kings, pk = opp & kings;
    int nom = __builtin_popcount(om), nok = __builtin_popcount(ok);
    int npm = __builtin_popcount(pm), npk = __builtin_popcount(pk);
    if (nom + nok + npm + npk > TB_MAX_PIECES)
        return -1;
    const tb_class *c = t->mat[nom][nok][npm][npk];
    if (!c || !c->data)
        return -1;
    return c->data[s_index(c, om, ok, pm, pk)];
}

/* The value byte of the turn-start state s (either side to move), or -1. */
static inline int s_lookup_state(const tb_set *t, const game_state *s)
{
    uint32_t b = khreibaga_pieces(s, 0), w = khreibaga_pieces(s, 1), k = khreibaga_kings(s);
    if (khreibaga_game.to_move(s) == 0)
        return s_lookup(t, b, w, k);
    return s_lookup(t, s_rot(w), s_rot(b), s_rot(k));
}

static tb_value s_decode(int v)
{
    tb_value r = {0, 0};
    if (V_KIND((unsigned)v) == V_WIN(0))
        r = (tb_value){1, (uint8_t)V_DIST((unsigned)v)};
    else if (V_KIND((unsigned)v) == V_LOSS(0))
        r = (tb_value){-1, (uint8_t)V_DIST((unsigned)v)};
    return r;
}

int tb_value_at(tb_value v, int count)
{
    if (v.wdl < 0 && v.dist == 0)
        return -1; /* R12 is checked before R13 */
    return count + v.dist <= TB_MAX_DIST ? v.wdl : 0;
}

/* --- moves ------------------------------------------------------------------------- */

/* What a position's moves lead to (s_scan). */
typedef struct tb_scan {
    int actions;       /* legal actions (first hops or simple moves) */
    int exits;         /* zeroing moves looked at: capture sequences, man moves */
    int best_exit;     /* the best of them for the mover: -1, 0, +1 (-2: none) */
    int kings;         /* king simple moves */
    uint8_t king_val[GAME_MAX_LEGAL]; /* their children's value bytes (if asked for) */
} tb_scan;

/* The best completion of the capture sequence in progress in s, for its
 * mover, into *best (stops at a win). 0, or KZ_ENOTFOUND. */
static int s_sequences(const tb_set *t, const game_state *s, int *best, int *exits)
{
    const game_def *g = &khreibaga_game;
    uint16_t acts[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, acts);
    for (int i = 0; i < n && *best < 1; i++) {
        game_state c;
        g->copy(&c, s);
        g->apply(&c, acts[i]);
        if (g->mid_turn(&c)) {
            int rc = s_sequences(t, &c, best, exits);
            if (rc)
                return rc;
            continue;
        }
        int v = s_lookup_state(t, &c);
        if (v < 0)
            return KZ_ENOTFOUND;
        int w = -s_decode(v).wdl;
        (*exits)++;
        if (w > *best)
            *best = w;
    }
    return 0;
}

/* The moves of the position (own men om, own kings ok, opp pm, pk; own moving
 * up, a turn start): the best zeroing move's value, the count of king moves
 * and, with want_kings, their children's values. 0, or KZ_ENOTFOUND when a
 * class they lead to is not loaded. */
static int s_scan(const tb_set *t, uint32_t om, uint32_t ok, uint32_t pm, uint32_t pk,
                  bool want_kings, tb_scan *sc)
{
    const game_def *g = &khreibaga_game;
    game_state s;
    KZ_CHECK(khreibaga_set(&s, om | ok, pm | pk, ok | pk, 0) == 0);
    uint16_t acts[GAME_MAX_LEGAL];
    int n = g->legal_actions(&s, acts);
    sc->actions = n;
    sc->exits = 0;
    sc->best_exit = -2;
    sc->kings = 0;
    if (n == 0)
        return 0;
    /* R8: when the turn captures, every action is a capture; the first says. */
    game_state first;
    g->copy(&first, &s);
    g->apply(&first, acts[0]);
    bool captures = g->mid_turn(&first) ||
                    __builtin_popcount(khreibaga_pieces(&first, 1)) < __builtin_popcount(pm | pk);
    for (int i = 0; i < n; i++) {
        int a = acts[i];
        bool king_move = !captures && (ok >> (a / 25) & 1); /* stays in the slice pair */
        if (king_move && !want_kings) {
            sc->kings++;
            continue;
        }
        game_state c;
        if (i == 0) {
            g->copy(&c, &first);
        } else {
            g->copy(&c, &s);
            g->apply(&c, a);
        }
        if (king_move) {
            int v = s_lookup_state(t, &c);
            if (v < 0)
                return KZ_ENOTFOUND;
            sc->king_val[sc->kings++] = (uint8_t)v;
            continue;
        }
        if (g->mid_turn(&c)) {
            int rc = s_sequences(t, &c, &sc->best_exit, &sc->exits);
            if (rc)
                return rc;
        } else {
            int v = s_lookup_state(t, &c);
            if (v < 0)
                return KZ_ENOTFOUND;
            int w = -s_decode(v).wdl;
            sc->exits++;
            if (w > sc->best_exit)
                sc->best_exit = w;
        }
        if (sc->best_exit == 1 && !want_kings)
            break; /* a win in 1: nothing else matters */
    }
    return 0;
}

/* The value the moves give (the recursion of docs/tablebase.md): a win at the
 * shortest distance, else a loss at the longest if every move loses within
 * R13's bound, else a draw. Needs the king children's values in sc. */
static unsigned s_expected(const tb_scan *sc)
{
    if (sc->actions == 0)
        return V_LOSS(0);
    int win = sc->best_exit == 1 ? 1 : TB_MAX_DIST + 1;
    for (int i = 0; i < sc->kings; i++) {
        unsigned v = sc->king_val[i];
        if (V_KIND(v) == V_LOSS(0) && (int)V_DIST(v) + 1 < win)
            win = (int)V_DIST(v) + 1;
    }
    if (win <= TB_MAX_DIST)
        return V_WIN(win);
    bool lose = sc->best_exit <= -1;
    int longest = 1;
    for (int i = 0; i < sc->kings && lose; i++) {
        unsigned v = sc->king_val[i];
        if (V_KIND(v) != V_WIN(0) || (int)V_DIST(v) + 1 > TB_MAX_DIST)
            lose = false;
        else if ((int)V_DIST(v) + 1 > longest)
            longest = (int)V_DIST(v) + 1;
    }
    return lose ? V_LOSS(longest) : V_DRAW;
}

/* --- probing ---------------------------------------------------------------------- */

int tb_pieces(const tb_set *t) { return t ? t->pieces : 0; }

int tb_probe(const tb_set *t, const game_state *s, tb_value *out)
{
    if (khreibaga_game.mid_turn(s)) {
        /* R9: the best completion of the sequence; each ends the turn with a
         * capture, so at no-progress 0 (R13) and with fewer pieces. */
        int best = -2, exits = 0;
        int rc = s_sequences(t, s, &best, &exits);
        if (rc)
            return rc;
        KZ_CHECK(exits > 0);
        *out = best == 0 ? (tb_value){0, 0} : (tb_value){(int8_t)best, 1};
        return 0;
    }
    int v = s_lookup_state(t, s);
    if (v < 0)
        return KZ_ENOTFOUND;
    *out = s_decode(v);
    return 0;
}

/* The no-progress count s is judged at: its own, 0 mid-turn. */
static int s_count(const game_state *s)
{
    return khreibaga_game.mid_turn(s) ? 0 : khreibaga_no_progress(s);
}

int tb_probe_wdl(const tb_set *t, const game_state *s, int *wdl)
{
    tb_value v;
    int rc = tb_probe(t, s, &v);
    if (!rc)
        *wdl = tb_value_at(v, s_count(s));
    return rc;
}

int tb_probe_search(const tb_set *t, const game_state *s, int *score)
{
    tb_value v;
    int rc = tb_probe(t, s, &v);
    if (rc)
        return rc;
    int count = s_count(s);
    int wdl = khreibaga_game.mid_turn(s) ? v.wdl : tb_value_at(v, count);
    *score = wdl * (count > 0 ? 100 - v.dist : 100);
    return 0;
}

int tb_probe_packed(const tb_set *t, const uint8_t *packed, size_t len, int *wdl)
{
    if (len != (size_t)khreibaga_game.packed_bytes)
        return KZ_ECORRUPT;
    /* A turn start with more pieces than the tables is the common answer:
     * no state to build (bytes 0..7 are both colours, byte 13 the chain). */
    uint32_t both = 0;
    for (int k = 0; k < 4; k++)
        both |= ((uint32_t)packed[k] | (uint32_t)packed[4 + k]) << (8 * k);
    if (packed[13] == 0 && __builtin_popcount(both) > t->pieces)
        return KZ_ENOTFOUND;
    game_state s;
    if (khreibaga_unpack_state(packed, &s))
        return KZ_ECORRUPT;
    return tb_probe_wdl(t, &s, wdl);
}

int tb_action_values(const tb_set *t, const game_state *s, tb_action_value *out)
{
    const game_def *g = &khreibaga_game;
    uint16_t acts[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, acts);
    for (int i = 0; i < n; i++) {
        game_state c;
        g->copy(&c, s);
        g->apply(&c, acts[i]);
        tb_action_value *o = &out[i];
        o->action = acts[i];
        if (g->mid_turn(&c)) {
            /* The same player goes on capturing: a zeroing move (R13). */
            tb_value v;
            int rc = tb_probe(t, &c, &v);
            if (rc)
                return rc;
            o->wdl = v.wdl;
            o->dist = v.wdl ? 1 : 0;
            continue;
        }
        game_result r = g->result(&c);
        if (r.over) {
            /* The rules end it here (R12-R15, with this game's history). */
            o->wdl = (int8_t)game_result_for(r, g->to_move(s));
            o->dist = o->wdl ? 1 : 0;
            continue;
        }
        tb_value v;
        int rc = tb_probe(t, &c, &v);
        if (rc)
            return rc;
        int count = khreibaga_no_progress(&c);
        o->wdl = (int8_t)-tb_value_at(v, count);
        o->dist = !o->wdl ? 0 : count == 0 ? 1 : (uint8_t)(1 + v.dist);
    }
    return n;
}

int tb_best_action(const tb_set *t, const game_state *s, int *action)
{
    tb_action_value av[GAME_MAX_LEGAL];
    int n = tb_action_values(t, s, av);
    if (n < 0)
        return n;
    if (n == 0)
        return KZ_EINVAL;
    int best = 0;
    for (int i = 1; i < n; i++) {
        const tb_action_value *a = &av[i], *b = &av[best];
        if (a->wdl > b->wdl || (a->wdl == b->wdl && a->wdl > 0 && a->dist < b->dist) ||
            (a->wdl == b->wdl && a->wdl < 0 && a->dist > b->dist))
            best = i;
    }
    *action = av[best].action;
    return 0;
}

/* --- files ---------------------------------------------------------------------------- */

/* The files' checksum: four lanes of multiply-rotate over little-endian
 * 8-byte words (several GB/s, so a file is checked whenever it is opened),
 * the tail bytes one by one, finished with mix64. */
static uint64_t s_checksum(const uint8_t *p, size_t n, uint64_t seed)
{
    const uint64_t P1 = 0x9e3779b185ebca87ULL, P2 = 0xc2b2ae3d27d4eb4fULL;
    uint64_t h[4] = {seed + P1, seed ^ P2, seed - P1, ~seed};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w = le_get64(p + i + 8 * k);
            h[k] += w * P2;
            h[k] = (h[k] << 31 | h[k] >> 33) * P1;
        }
    uint64_t r = mix64(h[0]) ^ mix64(h[1] + 1) ^ mix64(h[2] + 2) ^ mix64(h[3] + 3);
    for (; i < n; i++)
        r = (r ^ p[i]) * P1;
    return mix64(r ^ n);
}

/* Header offsets (tablebase.h). */
enum {
    H_MAGIC = 0, H_VERSION = 8, H_HBYTES = 12, H_MATERIAL = 16, H_MAXDIST = 20,
    H_POSITIONS = 24, H_SLICES = 32, H_WINS = 40, H_DRAWS = 48, H_LOSSES = 56,
    H_LONGEST = 64, H_LONGEST_INDEX = 72, H_DATA_SUM = 80, H_HEAD_SUM = 120,
};

static void s_header_write(tb_class *c)
{
    uint8_t *h = c->buf;
    memset(h, 0, HEADER_BYTES);
    memcpy(h + H_MAGIC, MAGIC, sizeof MAGIC);
    le_put32(h + H_VERSION, TB_FORMAT_VERSION);
    le_put32(h + H_HBYTES, HEADER_BYTES);
    h[H_MATERIAL] = (uint8_t)c->om;
    h[H_MATERIAL + 1] = (uint8_t)c->ok;
    h[H_MATERIAL + 2] = (uint8_t)c->pm;
    h[H_MATERIAL + 3] = (uint8_t)c->pk;
    le_put32(h + H_MAXDIST, TB_MAX_DIST);
    le_put64(h + H_POSITIONS, c->positions);
    le_put64(h + H_SLICES, c->lay->slices);
    le_put64(h + H_WINS, c->info.wins);
    le_put64(h + H_DRAWS, c->info.draws);
    le_put64(h + H_LOSSES, c->info.losses);
    le_put32(h + H_LONGEST, (uint32_t)c->info.longest);
    le_put64(h + H_LONGEST_INDEX, c->info.longest_index);
    le_put64(h + H_DATA_SUM, s_checksum(c->buf + HEADER_BYTES, c->positions, 0));
    le_put64(h + H_HEAD_SUM, s_checksum(h, H_HEAD_SUM, 1));
}

static void s_path(const tb_set *t, const tb_class *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s.kztb", t->dir, c->name);
}

/* Maps c's file and checks it. 0; ENOENT when there is none; else an error
 * code with a one-line message naming the file. */
static int s_map(tb_set *t, tb_class *c, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    s_path(t, c, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? ENOENT
                               : err_set(err, errlen, errno, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return err_set(err, errlen, e, "%s: %s", path, strerror(e));
    }
    size_t len = (size_t)st.st_size;
    if (len < HEADER_BYTES) {
        close(fd);
        return err_set(err, errlen, KZ_ECORRUPT,
                       "%s: truncated table (%zu bytes, less than its %d-byte header)", path,
                       len, HEADER_BYTES);
    }
    uint8_t *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return err_set(err, errlen, e, "%s: cannot map: %s", path, strerror(e));
    int rc = 0;
    uint64_t positions = le_get64(m + H_POSITIONS);
    if (memcmp(m, MAGIC, sizeof MAGIC) != 0)
        rc = err_set(err, errlen, KZ_ECORRUPT, "%s: not a tablebase file (bad magic)", path);
    else if (le_get32(m + H_VERSION) != TB_FORMAT_VERSION)
        rc = err_set(err, errlen, KZ_EVERSION, "%s: format version %u, this program reads %d",
                     path, le_get32(m + H_VERSION), TB_FORMAT_VERSION);
    else if (le_get64(m + H_HEAD_SUM) != s_checksum(m, H_HEAD_SUM, 1))
        rc = err_set(err, errlen, KZ_ECORRUPT, "%s: header checksum mismatch (corrupted)", path);
    else if (m[H_MATERIAL] != c->om || m[H_MATERIAL + 1] != c->ok ||
             m[H_MATERIAL + 2] != c->pm || m[H_MATERIAL + 3] != c->pk ||
             le_get32(m + H_HBYTES) != HEADER_BYTES || le_get32(m + H_MAXDIST) != TB_MAX_DIST ||
             positions != c->positions || le_get64(m + H_SLICES) != c->lay->slices)
        rc = err_set(err, errlen, KZ_ECORRUPT,
                     "%s: header does not describe class %s as this program indexes it", path,
                     c->name);
    else if (len != HEADER_BYTES + positions)
        rc = err_set(err, errlen, KZ_ECORRUPT,
                     "%s: %s table (%zu bytes, the header says %llu)", path,
                     len < HEADER_BYTES + positions ? "truncated" : "oversized", len,
                     (unsigned long long)(HEADER_BYTES + positions));
    else if (le_get64(m + H_DATA_SUM) != s_checksum(m + HEADER_BYTES, positions, 0))
        rc = err_set(err, errlen, KZ_ECORRUPT, "%s: data checksum mismatch (corrupted)", path);
    if (rc) {
        munmap(m, len);
        return rc;
    }
    s_class_unload(c);
    c->buf = m;
    c->buf_len = len;
    c->mapped = true;
    c->data = m + HEADER_BYTES;
    c->info.wins = le_get64(m + H_WINS);
    c->info.draws = le_get64(m + H_DRAWS);
    c->info.losses = le_get64(m + H_LOSSES);
    c->info.longest = (int)le_get32(m + H_LONGEST);
    c->info.longest_index = le_get64(m + H_LONGEST_INDEX);
    return 0;
}

/* The classes with exactly n pieces (both sides on the board), by men, then
 * by name; appends them to out (room for all) and returns their count. */
static int s_classes_of(int n, int out[][4])
{
    int k = 0;
    for (int men = 0; men <= n; men++)
        for (int om = 0; om <= men; om++) {
            int pm = men - om;
            for (int ok = 0; ok + om + pm <= n; ok++) {
                int pk = n - om - pm - ok;
                if (om + ok == 0 || pm + pk == 0)
                    continue;
                out[k][0] = om;
                out[k][1] = ok;
                out[k][2] = pm;
                out[k][3] = pk;
                k++;
            }
        }
    return k;
}

static tb_set *s_set_new(const char *dir)
{
    tb_set *t = xcalloc(1, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    return t;
}

static void s_list_add(tb_set *t, tb_class *c)
{
    for (int i = 0; i < t->n; i++)
        if (t->list[i] == c)
            return;
    t->list = realloc(t->list, (size_t)(t->n + 1) * sizeof *t->list);
    KZ_CHECK(t->list);
    t->list[t->n++] = c;
}

/* Sets t->pieces from the loaded classes. */
static void s_set_pieces(tb_set *t)
{
    int cls[512][4];
    t->pieces = 0;
    for (int n = 2; n <= TB_MAX_PIECES; n++) {
        int k = s_classes_of(n, cls);
        for (int i = 0; i < k; i++) {
            const tb_class *c = t->mat[cls[i][0]][cls[i][1]][cls[i][2]][cls[i][3]];
            if (!c || !c->data)
                return;
        }
        t->pieces = n;
    }
}

const game_def *tb_game(void) { return &khreibaga_game; }

tb_set *tb_open(const char *dir, int max_pieces, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        err_set(err, errlen, KZ_ENOTFOUND, "%s: no such tablebase directory", dir);
        return NULL;
    }
    tb_set *t = s_set_new(dir);
    int limit = max_pieces > 0 && max_pieces < TB_MAX_PIECES ? max_pieces : TB_MAX_PIECES;
    int cls[512][4];
    for (int n = 2; n <= limit; n++) {
        int k = s_classes_of(n, cls);
        for (int i = 0; i < k; i++) {
            char name[16], path[PATH_MAX + 32];
            s_class_name(cls[i][0], cls[i][1], cls[i][2], cls[i][3], name, sizeof name);
            snprintf(path, sizeof path, "%s/%s.kztb", dir, name);
            if (access(path, F_OK) != 0)
                continue; /* no layout is made for a class that is not there */
            tb_class *c = s_class_get(t, cls[i][0], cls[i][1], cls[i][2], cls[i][3]);
            int rc = s_map(t, c, err, errlen);
            if (rc == ENOENT)
                continue;
            if (rc) {
                tb_close(&t);
                return NULL;
            }
            s_list_add(t, c);
        }
    }
    s_set_pieces(t);
    return t;
}

void tb_close(tb_set **tp)
{
    if (!tp || !*tp)
        return;
    tb_set *t = *tp;
    for (int a = 0; a <= MAX_SIDE; a++)
        for (int b = 0; b <= MAX_SIDE; b++)
            for (int c = 0; c <= MAX_SIDE; c++)
                for (int d = 0; d <= MAX_SIDE; d++) {
                    tb_class *k = t->mat[a][b][c][d];
                    if (k) {
                        s_class_unload(k);
                        free(k);
                    }
                }
    for (int a = 0; a <= TB_MAX_PIECES; a++)
        for (int b = 0; b <= TB_MAX_PIECES; b++)
            s_layout_free(t->lay[a][b]);
    free(t->list);
    free(t);
    *tp = NULL;
}

/* --- classes ---------------------------------------------------------------------------- */

int tb_class_count(const tb_set *t) { return t->n; }

void tb_class_get(const tb_set *t, int i, tb_class_info *out)
{
    KZ_CHECK(i >= 0 && i < t->n);
    *out = t->list[i]->info;
}

void tb_class_position(const tb_set *t, int i, uint64_t index, game_state *s)
{
    KZ_CHECK(i >= 0 && i < t->n && index < t->list[i]->positions);
    uint32_t om, ok, pm, pk;
    s_unindex(t->list[i], index, &om, &ok, &pm, &pk);
    KZ_CHECK(khreibaga_set(s, om | ok, pm | pk, ok | pk, 0) == 0);
}

tb_value tb_class_value(const tb_set *t, int i, uint64_t index)
{
    KZ_CHECK(i >= 0 && i < t->n && index < t->list[i]->positions);
    return s_decode(t->list[i]->data[index]);
}

int tb_test_positions(const tb_set *t, int n, uint64_t seed, game_state *states,
                      uint16_t *keep)
{
    if (t->pieces < 3)
        return 0;
    int cls[512][4];
    rng_t rng;
    rng_seed(&rng, seed);
    int found = 0;
    for (long tries = 0; found < n && tries < 1000L * n; tries++) {
        int pieces = 3 + (int)rng_below(&rng, (uint32_t)(t->pieces - 2));
        int k = s_classes_of(pieces, cls);
        int *m = cls[rng_below(&rng, (uint32_t)k)];
        const tb_class *c = t->mat[m[0]][m[1]][m[2]][m[3]];
        uint64_t index = rng_next(&rng) % c->positions;
        uint32_t om, ok, pm, pk;
        s_unindex(c, index, &om, &ok, &pm, &pk);
        game_state s;
        if (rng_next(&rng) & 1)
            KZ_CHECK(khreibaga_set(&s, s_rot(pm | pk), s_rot(om | ok), s_rot(ok | pk), 1) == 0);
        else
            KZ_CHECK(khreibaga_set(&s, om | ok, pm | pk, ok | pk, 0) == 0);
        tb_value v = s_decode(c->data[index]);
        if (v.wdl < 0)
            continue;
        tb_action_value av[GAME_MAX_LEGAL];
        int na = tb_action_values(t, &s, av);
        if (na < 2)
            continue;
        int keeping = 0, which = 0;
        for (int i = 0; i < na; i++)
            if (av[i].wdl == v.wdl) {
                keeping++;
                which = av[i].action;
            }
        if (keeping != 1)
            continue;
        states[found] = s;
        keep[found] = (uint16_t)which;
        found++;
    }
    return found;
}

/* --- threads ------------------------------------------------------------------------------ */

/* Runs fn(arg) on `threads` threads and returns when all are done, calling
 * poll(poll_arg) about every 200 ms meanwhile (from the calling thread). */
typedef struct s_runner {
    void *(*fn)(void *);   /* the work */
    void *arg;             /* its argument */
    int left;              /* threads still running (under lock) */
    pthread_mutex_t lock;  /* guards left */
    pthread_cond_t cond;   /* signalled as each thread ends */
} s_runner;

static void *s_runner_main(void *p)
{
    s_runner *r = p;
    r->fn(r->arg);
    pthread_mutex_lock(&r->lock);
    r->left--;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void s_run(int threads, void *(*fn)(void *), void *arg, void (*poll)(void *),
                  void *poll_arg)
{
    s_runner r = {fn, arg, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    pthread_t th[64];
    int started = 0;
    if (threads > 64)
        threads = 64;
    pthread_mutex_lock(&r.lock);
    for (; started < threads; started++) {
        r.left++;
        if (pthread_create(&th[started], NULL, s_runner_main, &r) != 0) {
            r.left--;
            break;
        }
    }
    if (started == 0) {
        pthread_mutex_unlock(&r.lock);
        fn(arg); /* no thread could start: do it here */
        return;
    }
    while (r.left > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&r.cond, &r.lock, &ts);
        if (r.left > 0 && poll) {
            pthread_mutex_unlock(&r.lock);
            poll(poll_arg);
            pthread_mutex_lock(&r.lock);
        }
    }
    pthread_mutex_unlock(&r.lock);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

static int s_threads(int asked)
{
    if (asked > 0)
        return asked > 64 ? 64 : asked;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* --- verification --------------------------------------------------------------------------- */

#define VERIFY_CHUNK 4096

typedef struct s_verify_ctx {
    const tb_set *t;                /* the tables */
    const tb_class *c;              /* the class checked */
    atomic_uint_fast64_t next;      /* next chunk's first index */
    atomic_uint_fast64_t *done;     /* positions checked (for progress), or NULL */
    atomic_int stop;                /* set at the first fault */
    pthread_mutex_t lock;           /* guards the fault below */
    int rc;                         /* 0, KZ_ECORRUPT or KZ_ENOTFOUND */
    uint64_t bad;                   /* the faulty index (the lowest found) */
    unsigned got, want;             /* its stored and expected bytes */
} s_verify_ctx;

static void *s_verify_thread(void *arg)
{
    s_verify_ctx *x = arg;
    const tb_class *c = x->c;
    tb_scan sc;
    for (;;) {
        uint64_t lo = atomic_fetch_add(&x->next, VERIFY_CHUNK);
        if (lo >= c->positions || atomic_load(&x->stop))
            break;
        uint64_t hi = lo + VERIFY_CHUNK < c->positions ? lo + VERIFY_CHUNK : c->positions;
        for (uint64_t i = lo; i < hi; i++) {
            uint32_t om, ok, pm, pk;
            s_unindex(c, i, &om, &ok, &pm, &pk);
            int rc = s_scan(x->t, om, ok, pm, pk, true, &sc);
            unsigned want = rc ? 0 : s_expected(&sc);
            if (rc || want != c->data[i]) {
                pthread_mutex_lock(&x->lock);
                if (!x->rc || i < x->bad) {
                    x->rc = rc ? rc : KZ_ECORRUPT;
                    x->bad = i;
                    x->got = c->data[i];
                    x->want = want;
                }
                pthread_mutex_unlock(&x->lock);
                atomic_store(&x->stop, 1);
                break;
            }
        }
        if (x->done)
            atomic_fetch_add(x->done, hi - lo);
    }
    return NULL;
}

static void s_value_text(unsigned v, char *buf, size_t len)
{
    tb_value d = s_decode((int)v);
    if (V_KIND(v) == V_UNRES)
        snprintf(buf, len, "invalid byte 0x%02x", v);
    else if (d.wdl == 0)
        snprintf(buf, len, "draw");
    else
        snprintf(buf, len, "%s in %d", d.wdl > 0 ? "win" : "loss", d.dist);
}

static int s_verify(const tb_set *t, const tb_class *c, int threads,
                    atomic_uint_fast64_t *done, void (*poll)(void *), void *poll_arg, char *err,
                    size_t errlen)
{
    s_verify_ctx x = {.t = t, .c = c, .done = done, .lock = PTHREAD_MUTEX_INITIALIZER};
    atomic_init(&x.next, 0);
    atomic_init(&x.stop, 0);
    if (c->positions < 4 * VERIFY_CHUNK || threads <= 1)
        s_verify_thread(&x);
    else
        s_run(threads, s_verify_thread, &x, poll, poll_arg);
    if (!x.rc)
        return 0;
    game_state s;
    uint32_t om, ok, pm, pk;
    s_unindex(c, x.bad, &om, &ok, &pm, &pk);
    KZ_CHECK(khreibaga_set(&s, om | ok, pm | pk, ok | pk, 0) == 0);
    char pos[64], got[32], want[32];
    khreibaga_game.format_position(&s, pos, sizeof pos);
    if (x.rc == KZ_ENOTFOUND)
        return err_set(err, errlen, x.rc, "%s: position %llu (%s) leads to a class not loaded",
                       c->name, (unsigned long long)x.bad, pos);
    s_value_text(x.got, got, sizeof got);
    s_value_text(x.want, want, sizeof want);
    return err_set(err, errlen, KZ_ECORRUPT,
                   "%s: position %llu (%s) holds %s, its moves give %s", c->name,
                   (unsigned long long)x.bad, pos, got, want);
}

int tb_verify_class(const tb_set *t, int i, int threads, char *err, size_t errlen)
{
    KZ_CHECK(i >= 0 && i < t->n);
    return s_verify(t, t->list[i], s_threads(threads), NULL, NULL, NULL, err, errlen);
}

/* --- building ------------------------------------------------------------------------------- */

/* One slice pair: slice sa of class ca and its partner, slice sb of cb (the
 * same board with the other side to move). sa == sb and ca == cb when the
 * slice is its own partner. */
typedef struct tb_job {
    tb_class *ca, *cb; /* the classes */
    uint64_t sa, sb;   /* the slices */
} tb_job;

/* A thread's workspace for s_solve, grown as needed. */
typedef struct tb_work {
    uint8_t *val;    /* (n) value bytes, V_UNRES while open */
    uint8_t *cnt;    /* (n) king moves not yet known to lose; bit 7: a zeroing move draws */
    uint32_t *queue; /* (n) resolved positions by rising distance */
    uint64_t cap;    /* room in each */
} tb_work;

typedef struct s_build {
    tb_set *t;                  /* the tables, the pair being built among them */
    const tb_build_opts *o;     /* the caller's options */
    int threads;                /* worker threads */
    tb_work *work;              /* (threads) workspaces */
    const tb_job *jobs;         /* the group running: jobs of one progress */
    size_t n_jobs;              /* their count */
    atomic_size_t next;         /* next job to take */
    atomic_int ids;             /* thread numbers handed out */
    atomic_int failed;          /* set by the first failing job */
    atomic_uint_fast64_t done;  /* positions built or verified in this run */
    pthread_mutex_t lock;       /* guards rc and err */
    int rc;                     /* the first failure */
    char err[256];              /* its message */
    uint64_t total;             /* positions to build (twice with verify) */
    double t0, last;            /* start, last progress call */
    char name[40];              /* the pair's name */
    const char *phase;          /* "build" or "verify" */
    int pair, pairs;            /* the pair's number, how many */
} s_build;

static void s_work_reserve(tb_work *w, uint64_t n)
{
    if (n <= w->cap)
        return;
    free_all(w->val, w->cnt, w->queue);
    w->val = xmalloc(n);
    w->cnt = xmalloc(n);
    w->queue = xmalloc(n * sizeof *w->queue);
    w->cap = n;
}

/* Solves one slice pair (docs/tablebase.md, "The recursion") and writes its
 * values into the classes' buffers. 0, or KZ_ENOTFOUND (a class it needs is
 * missing: a bug in the build order). */
static int s_solve(s_build *b, const tb_job *j, tb_work *w)
{
    const tb_set *t = b->t;
    uint64_t K = j->ca->per_slice;
    bool single = j->ca == j->cb && j->sa == j->sb;
    uint64_t n = single ? K : 2 * K;
    KZ_CHECK(j->cb->per_slice == K && n < UINT32_MAX);
    s_work_reserve(w, n);
    uint8_t *val = w->val, *cnt = w->cnt;
    uint32_t *queue = w->queue;

    /* Step 1. Each position's moves: the zeroing ones (captures, man moves)
     * lead to finished tables; count the king moves. */
    for (uint64_t i = 0; i < n; i++) {
        const tb_class *c = i < K ? j->ca : j->cb;
        uint64_t slice = i < K ? j->sa : j->sb;
        uint32_t om, ok, pm, pk;
        s_unindex(c, slice * K + i % K, &om, &ok, &pm, &pk);
        tb_scan sc;
        int rc = s_scan(t, om, ok, pm, pk, false, &sc);
        if (rc)
            return rc;
        cnt[i] = 0;
        if (sc.actions == 0)
            val[i] = (uint8_t)V_LOSS(0); /* R12 */
        else if (sc.best_exit == 1)
            val[i] = (uint8_t)V_WIN(1);
        else if (sc.kings == 0)
            val[i] = (uint8_t)(sc.best_exit == 0 ? V_DRAW : V_LOSS(1));
        else {
            KZ_CHECK(sc.kings < 128);
            val[i] = (uint8_t)V_UNRES;
            cnt[i] = (uint8_t)(sc.kings | (sc.best_exit == 0 ? 0x80 : 0));
        }
        if ((i & 4095) == 4095)
            atomic_fetch_add(&b->done, 4096);
    }
    atomic_fetch_add(&b->done, n & 4095);

    /* Step 2. The resolved ones, by distance: 0, then 1. */
    uint64_t qn = 0;
    for (uint64_t i = 0; i < n; i++)
        if (val[i] == V_LOSS(0))
            queue[qn++] = (uint32_t)i;
    for (uint64_t i = 0; i < n; i++)
        if (val[i] == V_WIN(1) || val[i] == V_LOSS(1))
            queue[qn++] = (uint32_t)i;

    /* Step 3. Backward, by rising distance: the king moves into each resolved
     * position. Into a loss at d: the mover there wins at d + 1 (the first
     * time is the shortest). Into a win at d: one fewer king move left that
     * saves the mover; at none (and no drawing zeroing move) a loss at d + 1,
     * the longest. Nothing past R13's 50 plies. */
    for (uint64_t head = 0; head < qn; head++) {
        uint32_t i = queue[head];
        unsigned v = val[i], d = V_DIST(v);
        if (d >= TB_MAX_DIST)
            continue;
        bool from_a = i < K;
        const tb_class *c = from_a ? j->ca : j->cb, *pc = from_a ? j->cb : j->ca;
        uint64_t pslice = from_a ? j->sb : j->sa, pbase = from_a && !single ? K : 0;
        uint32_t om, ok, pm, pk;
        s_unindex(c, (from_a ? j->sa : j->sb) * K + i % K, &om, &ok, &pm, &pk);
        uint32_t occ = om | ok | pm | pk;
        /* The predecessor's mover is this position's opponent, seen from its
         * own side (R16 rotation): its men rot(pm), the other's rot(om), rot(ok). */
        uint32_t q_om = s_rot(pm), q_pm = s_rot(om), q_pk = s_rot(ok);
        for (uint32_t ks = pk; ks; ks &= ks - 1) {
            int sq = __builtin_ctz(ks);
            for (int dir = 0; dir < 8; dir++)
                for (int k = 0; k < G.ray_len[sq][dir]; k++) {
                    int from = G.ray[sq][dir][k];
                    if (occ >> from & 1)
                        break;
                    uint32_t kings = pk ^ (1u << sq) ^ (1u << from);
                    uint64_t idx = s_index(pc, q_om, s_rot(kings), q_pm, q_pk);
                    KZ_CHECK(idx / K == pslice);
                    uint64_t jl = pbase + idx % K;
                    if (val[jl] != V_UNRES)
                        continue;
                    if (V_KIND(v) == V_LOSS(0)) {
                        val[jl] = (uint8_t)V_WIN(d + 1);
                        queue[qn++] = (uint32_t)jl;
                    } else {
                        KZ_CHECK((cnt[jl] & 0x7f) > 0);
                        if ((--cnt[jl] & 0x7f) == 0 && !(cnt[jl] & 0x80)) {
                            val[jl] = (uint8_t)V_LOSS(d + 1);
                            queue[qn++] = (uint32_t)jl;
                        }
                    }
                }
        }
    }

    /* Step 4. What is still open is a draw: neither side forces a zeroing
     * move its way within 50 plies (R13), or ever (cycles, R14). */
    for (uint64_t i = 0; i < n; i++) {
        tb_class *c = i < K ? j->ca : j->cb;
        uint64_t slice = i < K ? j->sa : j->sb;
        c->buf[HEADER_BYTES + slice * K + i % K] = val[i] == V_UNRES ? (uint8_t)V_DRAW : val[i];
    }
    return 0;
}

static void *s_solve_thread(void *arg)
{
    s_build *b = arg;
    tb_work *w = &b->work[atomic_fetch_add(&b->ids, 1)];
    for (;;) {
        size_t k = atomic_fetch_add(&b->next, 1);
        if (k >= b->n_jobs || atomic_load(&b->failed))
            break;
        int rc = s_solve(b, &b->jobs[k], w);
        if (rc) {
            pthread_mutex_lock(&b->lock);
            if (!b->rc) {
                b->rc = rc;
                snprintf(b->err, sizeof b->err, "%s: a move leads to a class not built yet",
                         b->jobs[k].ca->name);
            }
            pthread_mutex_unlock(&b->lock);
            atomic_store(&b->failed, 1);
        }
    }
    return NULL;
}

static void s_report(s_build *b, bool finished)
{
    if (!b->o->progress)
        return;
    double now = time_now();
    if (!finished && now - b->last < 1.0)
        return;
    b->last = now;
    tb_progress p = {b->name, b->phase, b->pair, b->pairs, atomic_load(&b->done), b->total,
                     now - b->t0, finished};
    b->o->progress(&p, b->o->arg);
}

static void s_poll(void *arg) { s_report(arg, false); }

/* The partner of slice s of c in p: the same men, the other side to move. */
static uint64_t s_partner(const tb_class *c, uint64_t s, const tb_class *p)
{
    uint32_t own = s_rot(c->lay->opp[s]), opp = s_rot(c->lay->own[s]);
    int32_t e = p->lay->map[s_rank(own) * p->lay->n_opp + s_rank(opp >> 5)];
    KZ_CHECK(e >= 0);
    return (uint64_t)(e >> 1);
}

/* The statistics of a built class into its info (for the header). */
static void s_class_stats(tb_class *c)
{
    c->info.wins = c->info.draws = c->info.losses = 0;
    c->info.longest = 0;
    c->info.longest_index = 0;
    for (uint64_t i = 0; i < c->positions; i++) {
        unsigned v = c->data[i];
        KZ_CHECK(V_KIND(v) != V_UNRES && V_DIST(v) <= TB_MAX_DIST);
        if (V_KIND(v) == V_WIN(0)) {
            c->info.wins++;
            if ((int)V_DIST(v) > c->info.longest) {
                c->info.longest = (int)V_DIST(v);
                c->info.longest_index = i;
            }
        } else if (V_KIND(v) == V_LOSS(0)) {
            c->info.losses++;
        } else {
            c->info.draws++;
        }
    }
}

/* Builds the pair (c, p) (p == c for a class that is its own partner), writes
 * its files and maps them. 0 or an error with b->err. */
static int s_build_pair(s_build *b, tb_class *c, tb_class *p)
{
    tb_class *cs[2] = {c, p};
    int nc = c == p ? 1 : 2;
    for (int k = 0; k < nc; k++) {
        s_class_unload(cs[k]);
        cs[k]->buf_len = HEADER_BYTES + cs[k]->positions;
        cs[k]->buf = xmalloc(cs[k]->buf_len);
        memset(cs[k]->buf + HEADER_BYTES, 0xff, cs[k]->positions); /* "not written" */
        cs[k]->data = cs[k]->buf + HEADER_BYTES;
    }
    /* The slice pairs, by falling progress (c's slices are in that order);
     * those of one progress are independent: a group for the threads. */
    uint64_t slices = c->lay->slices;
    tb_job *jobs = xmalloc((slices ? slices : 1) * sizeof *jobs);
    size_t n_jobs = 0;
    for (uint64_t s = 0; s < slices; s++) {
        uint64_t ps = s_partner(c, s, p);
        if (c == p && ps < s)
            continue; /* solved with its partner */
        jobs[n_jobs++] = (tb_job){c, p, s, ps};
    }
    b->phase = "build";
    for (size_t g0 = 0; g0 < n_jobs && !b->rc;) {
        size_t g1 = g0;
        uint64_t size = 0;
        while (g1 < n_jobs && c->lay->progress[jobs[g1].sa] == c->lay->progress[jobs[g0].sa]) {
            size += c->per_slice;
            g1++;
        }
        b->jobs = jobs + g0;
        b->n_jobs = g1 - g0;
        atomic_store(&b->next, 0);
        atomic_store(&b->ids, 0);
        int threads = b->threads < (int)b->n_jobs ? b->threads : (int)b->n_jobs;
        if (threads <= 1 && size < (1u << 16))
            s_solve_thread(b);
        else
            s_run(threads, s_solve_thread, b, s_poll, b);
        g0 = g1;
    }
    free(jobs);
    if (b->rc)
        return b->rc;
    /* Step 2. The files: stats, header, written whole, then mapped. */
    for (int k = 0; k < nc; k++) {
        tb_class *x = cs[k];
        s_class_stats(x);
        s_header_write(x);
        char path[PATH_MAX + 32];
        s_path(b->t, x, path, sizeof path);
        int rc = file_write_atomic(path, x->buf, x->buf_len);
        if (rc) {
            snprintf(b->err, sizeof b->err, "%s: cannot write: %s", path, err_str(rc));
            return b->rc = rc;
        }
        rc = s_map(b->t, x, b->err, sizeof b->err);
        if (rc)
            return b->rc = rc;
        s_list_add(b->t, x);
    }
    /* Step 3. The check against the rules (tb_verify_class). */
    if (b->o->verify) {
        b->phase = "verify";
        for (int k = 0; k < nc; k++) {
            int rc = s_verify(b->t, cs[k], b->threads, &b->done, s_poll, b, b->err,
                              sizeof b->err);
            if (rc)
                return b->rc = rc;
        }
    }
    return 0;
}

static int s_mkdirs(const char *dir)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return ENAMETOOLONG;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return errno;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return errno;
    return 0;
}

int tb_build(const char *dir, const tb_build_opts *o, char *err, size_t errlen)
{
    if (o->pieces < 2 || o->pieces > TB_MAX_PIECES)
        return err_set(err, errlen, KZ_EINVAL, "pieces must be 2..%d, not %d", TB_MAX_PIECES,
                       o->pieces);
    int rc = s_mkdirs(dir);
    if (rc)
        return err_set(err, errlen, rc, "%s: cannot create: %s", dir, strerror(rc));
    tb_set *t = s_set_new(dir);
    s_build b = {.t = t, .o = o, .threads = s_threads(o->threads),
                 .lock = PTHREAD_MUTEX_INITIALIZER};
    b.work = xcalloc((size_t)b.threads, sizeof *b.work);
    /* Step 1. Every class: mapped when its file is there and sound. */
    int cls[512][4];
    tb_class *order[4096];
    int n_order = 0;
    for (int n = 2; n <= o->pieces; n++) {
        int k = s_classes_of(n, cls);
        for (int i = 0; i < k; i++) {
            tb_class *c = s_class_get(t, cls[i][0], cls[i][1], cls[i][2], cls[i][3]);
            char why[256];
            rc = s_map(t, c, why, sizeof why);
            if (rc == 0)
                s_list_add(t, c);
            else if (rc != ENOENT)
                log_warn("%s; building it again", why);
            KZ_CHECK(n_order < 4096);
            order[n_order++] = c;
        }
    }
    /* Step 2. The pairs to build, smallest first. */
    tb_class *pairs[4096][2];
    int n_pairs = 0;
    for (int i = 0; i < n_order; i++) {
        tb_class *c = order[i], *p = t->mat[c->pm][c->pk][c->om][c->ok];
        int ip = 0;
        while (order[ip] != p)
            ip++;
        if (ip < i || (c->data && p->data))
            continue; /* met as its partner's pair already, or built */
        pairs[n_pairs][0] = c;
        pairs[n_pairs][1] = p;
        n_pairs++;
        b.total += (c->positions + (c == p ? 0 : p->positions)) * (o->verify ? 2 : 1);
    }
    b.pairs = n_pairs;
    b.t0 = b.last = time_now();
    rc = 0;
    for (int k = 0; k < n_pairs && !rc; k++) {
        tb_class *c = pairs[k][0], *p = pairs[k][1];
        if (c == p)
            snprintf(b.name, sizeof b.name, "%s", c->name);
        else
            snprintf(b.name, sizeof b.name, "%s+%s", c->name, p->name);
        b.pair = k + 1;
        rc = s_build_pair(&b, c, p);
        s_report(&b, true);
    }
    if (rc)
        err_set(err, errlen, rc, "%s", b.err);
    for (int i = 0; i < b.threads; i++)
        free_all(b.work[i].val, b.work[i].cnt, b.work[i].queue);
    free(b.work);
    tb_close(&t);
    return rc;
}

static int s_oracle_probe(const void *ctx, const game_state *s, int *score)
{
    return tb_probe_search(ctx, s, score);
}

static int s_oracle_best(const void *ctx, const game_state *s, int *action)
{
    int wdl;
    if (tb_probe_wdl(ctx, s, &wdl) != 0)
        return KZ_ENOTFOUND;
    return tb_best_action(ctx, s, action);
}

game_oracle tb_oracle(const tb_set *t)
{
    return (game_oracle){s_oracle_probe, s_oracle_best, t, tb_game()};
}
