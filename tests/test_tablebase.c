/* test_tablebase: the endgame tables (common/tablebase.h) proven against
 * independent work and used as the manual shows:
 *
 * - naive_agrees: a naive solver written here, separately from the builder,
 *   over the explicit game graph of every position with at most 3 pieces
 *   (both colours, both movers, no symmetry), its moves from the naive
 *   reference rules (tests/ref_khreibaga.c), its values by plain forward
 *   iteration over the plies left before R13's draw, must agree with the
 *   tables at every position and every no-progress count 0..50, and on the
 *   mid-sequence states after every first hop of a longer capture;
 * - consistency: tb_verify_class on every class up to 4 pieces, and a wrong
 *   byte written into a file (with its checksums redone from the format in
 *   docs/tablebase.md) is found;
 * - perfect_play: random table positions, after a few random actions (so the
 *   no-progress count and the history are not fresh), played out by perfect
 *   play from the tables end as tb_probe_wdl predicted, under the engine's
 *   full rules (R12-R15);
 * - corrupt files (truncated, flipped bytes, another version, extra bytes)
 *   are refused with a message naming the file, and a build replaces them;
 * - builds resume (only missing classes are built again);
 * - `kz tb` build, probe, stats, verify, bench, and its errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "game.h"
#include "harness.h"
#include "khreibaga.h"
#include "ref_khreibaga.h"
#include "tablebase.h"
#include "util.h"

/* Builds the tables up to `pieces` into a fresh directory (caller frees and removes). */
static char *s_build_dir(const char *tag, int pieces, bool verify)
{
    char *dir = harness_tmpdir(tag);
    cr_assert(dir);
    tb_build_opts o = {.pieces = pieces, .threads = 2, .verify = verify};
    char err[512];
    int rc = tb_build(dir, &o, err, sizeof err);
    cr_assert_eq(rc, 0, "tb_build: %s", err);
    return dir;
}

static tb_set *s_open(const char *dir, int pieces)
{
    char err[512];
    tb_set *t = tb_open(dir, pieces, err, sizeof err);
    cr_assert(t, "tb_open: %s", err);
    return t;
}

/* --- the naive solver ---------------------------------------------------------- */

#define NV_T (TB_MAX_DIST + 1) /* plies left: 0..50 */

/* One turn-start position of the explicit graph. */
typedef struct nv_node {
    uint32_t black, white, kings; /* pieces */
    int side;                     /* 0 Black, 1 White to move */
    int key;                      /* pieces, men, progress: zeroing moves lead to smaller */
} nv_node;

/* The whole graph: nodes, their moves (CSR), their values per plies left. */
typedef struct nv_graph {
    nv_node *nodes;     /* (n) */
    int n;              /* nodes */
    int *off;           /* (n + 1) first move of each node */
    int *to;            /* (moves) the child node, -1: its mover has no pieces (R12) */
    uint8_t *zeroing;   /* (moves) a capture or a man move (R13) */
    int moves, cap;     /* moves stored, room */
    uint64_t *hkey;     /* (hcap) hash of positions -> node */
    int *hval;          /* (hcap) */
    int hcap;           /* power of two */
    int8_t *v;          /* (n * NV_T) value with t plies left, mover's view */
} nv_graph;

static uint64_t nv_hash_key(uint32_t black, uint32_t white, uint32_t kings, int side)
{
    /* kings as bits over the occupied points in order (3 pieces at most) */
    uint32_t occ = black | white, kbits = 0;
    int i = 0;
    for (uint32_t m = occ; m; m &= m - 1, i++)
        if (kings & m & -m)
            kbits |= 1u << i;
    return (uint64_t)black | (uint64_t)white << 25 | (uint64_t)side << 50 |
           (uint64_t)kbits << 51;
}

static int *nv_slot(nv_graph *g, uint64_t key)
{
    uint64_t h = mix64(key);
    for (int i = (int)(h & (uint64_t)(g->hcap - 1));; i = (i + 1) & (g->hcap - 1)) {
        if (g->hval[i] < 0 || g->hkey[i] == key) {
            g->hkey[i] = key;
            return &g->hval[i];
        }
    }
}

static int nv_find(nv_graph *g, uint32_t black, uint32_t white, uint32_t kings, int side)
{
    return *nv_slot(g, nv_hash_key(black, white, kings, side));
}

/* A reference game at a node (fresh history, R20). */
static void nv_ref(const nv_node *nd, ref_game *r)
{
    char s[32];
    for (int sq = 0; sq < 25; sq++) {
        uint32_t b = 1u << sq;
        bool k = nd->kings & b;
        s[sq] = nd->black & b ? (k ? 'B' : 'b') : nd->white & b ? (k ? 'W' : 'w') : '.';
    }
    s[25] = ' ';
    s[26] = nd->side ? 'w' : 'b';
    s[27] = 0;
    char err[128];
    cr_assert_eq(ref_parse(r, s, err, sizeof err), 0, "ref_parse %s: %s", s, err);
}

/* The node a reference game stands at (a turn start), -1 when its mover has no pieces. */
static int nv_node_of(nv_graph *g, const ref_game *r)
{
    uint32_t black = 0, white = 0, kings = 0;
    for (int sq = 0; sq < 25; sq++) {
        char p = r->board[sq];
        if (p == 'b' || p == 'B')
            black |= 1u << sq;
        if (p == 'w' || p == 'W')
            white |= 1u << sq;
        if (p == 'B' || p == 'W')
            kings |= 1u << sq;
    }
    if (!(r->side ? white : black))
        return -1;
    int k = nv_find(g, black, white, kings, r->side);
    cr_assert(k >= 0, "naive: a child outside the graph");
    return k;
}

static void nv_add_move(nv_graph *g, int to, bool zeroing)
{
    if (g->moves == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 1 << 16;
        g->to = realloc(g->to, (size_t)g->cap * sizeof *g->to);
        g->zeroing = realloc(g->zeroing, (size_t)g->cap);
        cr_assert(g->to && g->zeroing);
    }
    g->to[g->moves] = to;
    g->zeroing[g->moves] = zeroing;
    g->moves++;
}

/* Every completion of the turn in progress in r (R8, R9) as moves of the node. */
static void nv_sequences(nv_graph *g, const ref_game *r, int pieces_before, bool man)
{
    int acts[REF_ACTIONS];
    int n = ref_legal(r, acts);
    for (int i = 0; i < n; i++) {
        ref_game *c = malloc(sizeof *c);
        cr_assert(c);
        ref_copy(c, r);
        cr_assert_eq(ref_apply(c, acts[i]), 0);
        if (c->chain >= 0) {
            nv_sequences(g, c, pieces_before, man);
        } else {
            int pieces = ref_count(c, 0) + ref_count(c, 1);
            nv_add_move(g, nv_node_of(g, c), pieces < pieces_before || man);
        }
        free(c);
    }
}

/* The naive value of a mid-sequence reference game: its best completion. */
static int nv_mid_value(nv_graph *g, const ref_game *r)
{
    int acts[REF_ACTIONS], best = -2;
    int n = ref_legal(r, acts);
    for (int i = 0; i < n; i++) {
        ref_game *c = malloc(sizeof *c);
        ref_copy(c, r);
        cr_assert_eq(ref_apply(c, acts[i]), 0);
        int v;
        if (c->chain >= 0) {
            v = nv_mid_value(g, c);
        } else {
            int k = nv_node_of(g, c);
            v = k < 0 ? 1 : -g->v[(size_t)k * NV_T + TB_MAX_DIST];
        }
        best = v > best ? v : best;
        free(c);
    }
    return best;
}

static int nv_cmp_key(const void *a, const void *b, void *arg)
{
    const nv_node *nodes = arg;
    int x = nodes[*(const int *)a].key, y = nodes[*(const int *)b].key;
    return (x > y) - (x < y);
}

/* Builds the graph of every position with 2..max_pieces pieces and solves it. */
static void nv_solve(nv_graph *g, int max_pieces)
{
    memset(g, 0, sizeof *g);
    /* Step 1. The nodes: every placement of b B w W, men off their far row
     * (R10), both colours present, either side to move. */
    int cap = 1 << 20;
    g->nodes = malloc((size_t)cap * sizeof *g->nodes);
    for (int np = 2; np <= max_pieces; np++) {
        int sq[3] = {0, 1, 2};
        for (sq[0] = 0; sq[0] < 25; sq[0]++)
            for (sq[1] = np > 1 ? sq[0] + 1 : 25; sq[1] < 25; sq[1]++)
                for (sq[2] = np > 2 ? sq[1] + 1 : 24; sq[2] < 25; sq[2]++) {
                    for (int types = 0; types < 1 << (2 * np); types++) {
                        nv_node nd = {0, 0, 0, 0, 0};
                        bool ok = true;
                        int men = 0, progress = 0;
                        for (int i = 0; i < np; i++) {
                            int ty = types >> (2 * i) & 3, s = sq[i], row = s / 5;
                            uint32_t b = 1u << s;
                            if (ty == 0 && row == 4)
                                ok = false;
                            if (ty == 2 && row == 0)
                                ok = false;
                            if (ty < 2)
                                nd.black |= b;
                            else
                                nd.white |= b;
                            if (ty & 1)
                                nd.kings |= b;
                            else {
                                men++;
                                progress += ty == 0 ? row : 4 - row;
                            }
                        }
                        if (!ok || !nd.black || !nd.white)
                            continue;
                        nd.key = np * 10000 + men * 100 + (99 - progress);
                        for (int side = 0; side < 2; side++) {
                            nd.side = side;
                            cr_assert(g->n < cap);
                            g->nodes[g->n++] = nd;
                        }
                    }
                    if (np < 3)
                        break;
                }
    }
    g->hcap = 1 << 21;
    g->hkey = malloc((size_t)g->hcap * sizeof *g->hkey);
    g->hval = malloc((size_t)g->hcap * sizeof *g->hval);
    for (int i = 0; i < g->hcap; i++)
        g->hval[i] = -1;
    for (int i = 0; i < g->n; i++) {
        nv_node *nd = &g->nodes[i];
        *nv_slot(g, nv_hash_key(nd->black, nd->white, nd->kings, nd->side)) = i;
    }
    /* Step 2. The moves: every complete turn (a simple move, or a whole
     * capture sequence), zeroing when it captures or moves a man (R13). */
    g->off = malloc((size_t)(g->n + 1) * sizeof *g->off);
    ref_game *r = malloc(sizeof *r);
    for (int i = 0; i < g->n; i++) {
        g->off[i] = g->moves;
        nv_ref(&g->nodes[i], r);
        int acts[REF_ACTIONS];
        int n = ref_legal(r, acts), pieces = ref_count(r, 0) + ref_count(r, 1);
        for (int k = 0; k < n; k++) {
            ref_game *c = malloc(sizeof *c);
            ref_copy(c, r);
            char piece = r->board[acts[k] / 25];
            cr_assert_eq(ref_apply(c, acts[k]), 0);
            bool man = piece == 'b' || piece == 'w';
            if (c->chain >= 0)
                nv_sequences(g, c, pieces, man);
            else
                nv_add_move(g, nv_node_of(g, c), man || ref_count(c, 0) + ref_count(c, 1) < pieces);
            free(c);
        }
    }
    g->off[g->n] = g->moves;
    free(r);
    /* Step 3. Values, by groups of equal key (only king moves inside one),
     * smallest key first: with t plies left before R13's draw,
     *   no move: a loss (R12, even at t = 0); t = 0: a draw;
     *   else the best of: a zeroing move, minus its child's value at 50 left;
     *   a king move, minus its child's value at t - 1 left. */
    int *order = malloc((size_t)g->n * sizeof *order);
    for (int i = 0; i < g->n; i++)
        order[i] = i;
    qsort_r(order, (size_t)g->n, sizeof *order, nv_cmp_key, g->nodes);
    g->v = malloc((size_t)g->n * NV_T);
    for (int a = 0; a < g->n;) {
        int b = a;
        while (b < g->n && g->nodes[order[b]].key == g->nodes[order[a]].key)
            b++;
        for (int t = 0; t < NV_T; t++)
            for (int k = a; k < b; k++) {
                int i = order[k];
                int best = -2;
                if (g->off[i] == g->off[i + 1]) {
                    best = -1;
                } else if (t == 0) {
                    best = 0;
                } else {
                    for (int m = g->off[i]; m < g->off[i + 1]; m++) {
                        int c = g->to[m], v;
                        if (c < 0)
                            v = 1;
                        else if (g->zeroing[m]) {
                            cr_assert(g->nodes[c].key < g->nodes[i].key, "naive: order");
                            v = -g->v[(size_t)c * NV_T + TB_MAX_DIST];
                        } else {
                            cr_assert(g->nodes[c].key == g->nodes[i].key, "naive: king move");
                            v = -g->v[(size_t)c * NV_T + t - 1];
                        }
                        best = v > best ? v : best;
                    }
                }
                g->v[(size_t)i * NV_T + t] = (int8_t)best;
            }
        a = b;
    }
    free(order);
}

static void nv_free(nv_graph *g)
{
    free(g->nodes);
    free(g->off);
    free(g->to);
    free(g->zeroing);
    free(g->hkey);
    free(g->hval);
    free(g->v);
}

Test(tablebase, naive_agrees, .timeout = 300)
{
    char *dir = s_build_dir("tb-naive", 3, false);
    tb_set *t = s_open(dir, 3);
    cr_assert_eq(tb_pieces(t), 3);
    nv_graph g;
    nv_solve(&g, 3);
    const game_def *gd = game_default();
    int wins = 0, losses = 0, draws = 0, mids = 0, shortened = 0;
    ref_game *r = malloc(sizeof *r);
    for (int i = 0; i < g.n; i++) {
        const nv_node *nd = &g.nodes[i];
        game_state s;
        cr_assert_eq(khreibaga_set(&s, nd->black, nd->white, nd->kings, nd->side), 0);
        tb_value v;
        cr_assert_eq(tb_probe(t, &s, &v), 0);
        char pos[64];
        gd->format_position(&s, pos, sizeof pos);
        for (int c = 0; c <= TB_MAX_DIST; c++) {
            int want = g.v[(size_t)i * NV_T + TB_MAX_DIST - c], got = tb_value_at(v, c);
            if (got != want)
                cr_assert_fail("%s at no-progress %d: tables %d (wdl %d dist %d), naive %d", pos,
                               c, got, v.wdl, v.dist, want);
        }
        wins += v.wdl > 0;
        losses += v.wdl < 0;
        draws += v.wdl == 0;
        shortened += v.wdl != 0 && tb_value_at(v, TB_MAX_DIST - 1) == 0;
        /* The mid-sequence states after each first hop that goes on. */
        nv_ref(nd, r);
        int acts[REF_ACTIONS];
        int n = ref_legal(r, acts);
        for (int k = 0; k < n; k++) {
            ref_game *c = malloc(sizeof *c);
            ref_copy(c, r);
            cr_assert_eq(ref_apply(c, acts[k]), 0);
            if (c->chain >= 0) {
                game_state m = s;
                gd->apply(&m, acts[k]);
                cr_assert(gd->mid_turn(&m));
                tb_value mv;
                cr_assert_eq(tb_probe(t, &m, &mv), 0);
                int want = nv_mid_value(&g, c);
                cr_assert_eq(mv.wdl, want, "%s after %d-%d (mid-sequence): tables %d, naive %d",
                             pos, acts[k] / 25, acts[k] % 25, mv.wdl, want);
                mids++;
            }
            free(c);
        }
    }
    free(r);
    /* The graph is the whole of it: as many positions as the tables hold
     * before the mirror and the colour rotation, and every kind of value. */
    cr_assert_gt(g.n, 100000);
    cr_assert(wins > 0 && losses > 0 && draws > 0 && mids > 0 && shortened > 0,
              "wins %d losses %d draws %d mid-sequence %d shortened by R13 %d", wins, losses,
              draws, mids, shortened);
    nv_free(&g);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}
