/* test_tablebase: the endgame tables (games/tablebase.h) proven against
 * independent work and used as the manual shows:
 *
 * - naive_agrees: a naive solver written here, separately from the builder,
 *   over the explicit game graph of every position with at most 3 pieces
 *   (both colours, both movers, no symmetry), its moves from the naive
 *   reference rules (solve/ref_khreibaga.c), its values by plain forward
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

#include "games/game.h"
#include "tests/harness/harness.h"
#include "games/khreibaga.h"
#include "search/mcts.h"
#include "search/player.h"
#include "solve/ref_khreibaga.h"
#include "games/tablebase.h"
#include "common/util.h"

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

Test(tablebase, naive_agrees, .timeout = 600)
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

/* --- consistency ------------------------------------------------------------------ */

/* The files' checksum as docs/tablebase.md describes it (written from the
 * document, not from the code, so the document stays true). */
static uint64_t s_doc_checksum(const uint8_t *p, size_t n, uint64_t seed)
{
    const uint64_t P1 = 0x9e3779b185ebca87ULL, P2 = 0xc2b2ae3d27d4eb4fULL;
    uint64_t h[4] = {seed + P1, seed ^ P2, seed - P1, ~seed};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w = 0;
            for (int b = 0; b < 8; b++)
                w |= (uint64_t)p[i + 8 * k + b] << (8 * b);
            h[k] = h[k] + w * P2;
            h[k] = ((h[k] << 31) | (h[k] >> 33)) * P1;
        }
    uint64_t r = mix64(h[0]) ^ mix64(h[1] + 1) ^ mix64(h[2] + 2) ^ mix64(h[3] + 3);
    for (; i < n; i++)
        r = (r ^ p[i]) * P1;
    return mix64(r ^ n);
}

/* Rewrites both checksums of a file image (data from byte 128, the header's
 * own over bytes 0..119 at 120, the data's at 80). */
static void s_fix_checksums(uint8_t *f, size_t len)
{
    le_put64(f + 80, s_doc_checksum(f + 128, len - 128, 0));
    le_put64(f + 120, s_doc_checksum(f, 120, 1));
}

Test(tablebase, consistency, .timeout = 600)
{
    char *dir = s_build_dir("tb-consist", 4, false);
    tb_set *t = s_open(dir, 0);
    cr_assert_eq(tb_pieces(t), 4);
    cr_assert_eq(tb_class_count(t), 41);
    uint64_t positions = 0;
    for (int i = 0; i < tb_class_count(t); i++) {
        tb_class_info c;
        tb_class_get(t, i, &c);
        char err[512];
        cr_assert_eq(tb_verify_class(t, i, 2, err, sizeof err), 0, "%s: %s", c.name, err);
        cr_assert_eq(c.wins + c.draws + c.losses, c.positions, "%s", c.name);
        positions += c.positions;
    }
    /* docs/tablebase.md's counts: 1375 + 51080 + 1091780. */
    cr_assert_eq(positions, 1144235);
    tb_close(&t);

    /* A wrong value, with the checksums redone: the file opens, the check finds it. */
    char path[512];
    snprintf(path, sizeof path, "%s/KKvK.kztb", dir);
    uint8_t *f;
    size_t len;
    cr_assert_eq(file_read_all(path, &f, &len), 0);
    size_t at = 0;
    for (size_t i = 128; i < len && !at; i++)
        if ((f[i] & 0xc0) == 0x40 && (f[i] & 0x3f) >= 2)
            at = i;
    cr_assert(at);
    f[at]++; /* a win one ply longer than it is */
    s_fix_checksums(f, len);
    cr_assert_eq(file_write_atomic(path, f, len), 0);
    t = s_open(dir, 0);
    int k = -1;
    for (int i = 0; i < tb_class_count(t); i++) {
        tb_class_info c;
        tb_class_get(t, i, &c);
        if (!strcmp(c.name, "KKvK"))
            k = i;
    }
    cr_assert(k >= 0);
    char err[512];
    cr_assert_eq(tb_verify_class(t, k, 1, err, sizeof err), KZ_ECORRUPT);
    char want[64];
    snprintf(want, sizeof want, "position %zu ", at - 128);
    cr_assert(strstr(err, want) && strstr(err, "its moves give"), "%s", err);
    tb_close(&t);
    free(f);
    harness_rm_rf(dir);
    free(dir);
}

/* --- perfect play ------------------------------------------------------------------ */

/* The value of s for player `who` under R13 (mid-sequence too). */
static int s_value_for(const tb_set *t, const game_state *s, int who)
{
    int wdl;
    cr_assert_eq(tb_probe_wdl(t, s, &wdl), 0);
    return game_default()->to_move(s) == who ? wdl : -wdl;
}

Test(tablebase, perfect_play, .timeout = 600)
{
    char *dir = s_build_dir("tb-play", 4, true);
    tb_set *t = s_open(dir, 0);
    const game_def *g = game_default();
    rng_t rng;
    rng_seed(&rng, 12);
    int results[3] = {0, 0, 0}, counted = 0, mid = 0;
    for (int game = 0; game < 400; game++) {
        int cls = (int)rng_below(&rng, (uint32_t)tb_class_count(t));
        tb_class_info ci;
        tb_class_get(t, cls, &ci);
        game_state s;
        tb_class_position(t, cls, rng_next(&rng) % ci.positions, &s);
        /* A few random actions first: a count above 0, a history, maybe a
         * capture sequence in progress. Repeated positions are avoided (R14
         * needs a third occurrence; the tables are exact while none of the
         * history occurred twice). */
        int prefix = (int)rng_below(&rng, 12);
        bool fresh = true;
        for (int k = 0; k < prefix && !g->result(&s).over; k++) {
            uint16_t acts[GAME_MAX_LEGAL];
            int n = g->legal_actions(&s, acts);
            g->apply(&s, acts[rng_below(&rng, (uint32_t)n)]);
            if (!g->mid_turn(&s) && khreibaga_repetitions(&s) > 1)
                fresh = false;
        }
        if (!fresh || g->result(&s).over)
            continue;
        int me = g->to_move(&s), predicted = s_value_for(t, &s, me);
        counted += khreibaga_no_progress(&s) > 0;
        mid += g->mid_turn(&s);
        game_result r;
        while (!(r = g->result(&s)).over) {
            cr_assert_eq(s_value_for(t, &s, me), predicted, "the value changed along the line");
            int a;
            cr_assert_eq(tb_best_action(t, &s, &a), 0);
            g->apply(&s, a);
        }
        cr_assert_neq(r.reason, GAME_REASON_LENGTH, "R15 ended a line");
        cr_assert_eq(game_result_for(r, me), predicted, "game %d: predicted %d, got %s (%s)",
                     game, predicted, r.winner < 0 ? "draw" : g->player_name(r.winner),
                     game_reason_name(g, r.reason));
        results[predicted + 1]++;
    }
    cr_assert(results[0] > 20 && results[1] > 20 && results[2] > 20 && counted > 20 && mid > 0,
              "losses %d draws %d wins %d, with a count %d, mid-sequence %d", results[0],
              results[1], results[2], counted, mid);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* The accuracy test set: the same for the same seed, and what it says. */
Test(tablebase, test_positions, .timeout = 600)
{
    char *dir = s_build_dir("tb-testset", 4, false);
    tb_set *t = s_open(dir, 0);
    enum { N = 300 };
    static game_state a[N], b[N];
    static uint16_t ka[N], kb[N];
    cr_assert_eq(tb_test_positions(t, N, 7, a, ka), N);
    cr_assert_eq(tb_test_positions(t, N, 7, b, kb), N);
    const game_def *g = game_default();
    int white = 0, draws = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(!memcmp(&a[i], &b[i], sizeof a[i]) || g->hash(&a[i]) == g->hash(&b[i]));
        cr_assert_eq(ka[i], kb[i]);
        tb_value v;
        cr_assert_eq(tb_probe(t, &a[i], &v), 0);
        cr_assert_geq(v.wdl, 0);
        tb_action_value av[GAME_MAX_LEGAL];
        int n = tb_action_values(t, &a[i], av), keeping = 0;
        cr_assert_geq(n, 2);
        for (int k = 0; k < n; k++) {
            keeping += av[k].wdl == v.wdl;
            cr_assert(av[k].wdl <= v.wdl);
            cr_assert(av[k].wdl < v.wdl || av[k].action == ka[i]);
        }
        cr_assert_eq(keeping, 1);
        white += g->to_move(&a[i]);
        draws += v.wdl == 0;
    }
    cr_assert(white > N / 4 && white < 3 * N / 4 && draws > 0 && draws < N, "white %d draws %d",
              white, draws);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* --- packed positions (the trainer's value targets) ----------------------------------- */

Test(tablebase, probe_packed_positions, .timeout = 600)
{
    char *dir = s_build_dir("tb-packed", 3, false);
    tb_set *t = s_open(dir, 0);
    const game_def *g = game_default();
    uint8_t pk[GAME_PACKED_BYTES];
    int wdl, want;
    /* Positions of random play from table positions: the packed bytes give
     * what the state itself gives, no-progress count and mid-sequence
     * states included. */
    enum { N = 200 };
    static game_state ts[N];
    static uint16_t keep[N];
    cr_assert_eq(tb_test_positions(t, N, 9, ts, keep), N);
    rng_t rng;
    rng_seed(&rng, 4);
    int counted = 0, mid = 0, checked = 0;
    for (int i = 0; i < N; i++) {
        game_state s = ts[i];
        for (int ply = 0; ply < 12 && !g->result(&s).over; ply++) {
            g->pack(&s, pk);
            cr_assert_eq(tb_probe_wdl(t, &s, &want), 0);
            cr_assert_eq(tb_probe_packed(t, pk, (size_t)g->packed_bytes, &wdl), 0);
            cr_assert_eq(wdl, want);
            checked++;
            counted += khreibaga_no_progress(&s) > 0;
            mid += g->mid_turn(&s);
            uint16_t acts[GAME_MAX_LEGAL];
            int n = g->legal_actions(&s, acts);
            g->apply(&s, acts[rng_below(&rng, (uint64_t)n)]);
        }
    }
    cr_assert(counted > 100 && mid > 0, "%d states, %d with a count, %d mid-sequence", checked,
              counted, mid);
    /* The count decides: a win in 13 at count 30 stays one, at 45 R13 draws it. */
    game_state s;
    char err[128];
    cr_assert_eq(g->parse_position(&s, "....Wb.......B........... b", err, sizeof err), 0);
    tb_value v;
    cr_assert_eq(tb_probe(t, &s, &v), 0);
    cr_assert(v.wdl == 1 && v.dist == 13);
    g->pack(&s, pk);
    for (int count = 0; count <= TB_MAX_DIST; count++) {
        pk[14] = (uint8_t)((pk[14] & 1) | count << 1);
        cr_assert_eq(tb_probe_packed(t, pk, (size_t)g->packed_bytes, &wdl), 0);
        cr_assert_eq(wdl, count <= 37 ? 1 : 0, "count %d", count);
    }
    /* More pieces than the tables: not found; bad bytes or length: corrupt,
     * never a crash. */
    g->init(&s);
    g->pack(&s, pk);
    cr_assert_eq(tb_probe_packed(t, pk, (size_t)g->packed_bytes, &wdl), KZ_ENOTFOUND);
    cr_assert_eq(tb_probe_packed(t, pk, (size_t)g->packed_bytes - 1, &wdl), KZ_ECORRUPT);
    int found = 0;
    for (int i = 0; i < 20000; i++) {
        for (int k = 0; k < g->packed_bytes; k++)
            pk[k] = (uint8_t)rng_next(&rng);
        /* Mostly few pieces and fields in range, so that the bytes reach
         * the state's own checks (some still overlap, or put a man on its
         * far row, or a chain point on no piece). */
        for (int k = 0; k < 8; k++)
            for (int r = 0; r < 4; r++)
                pk[k] &= (uint8_t)rng_next(&rng);
        for (int k = 8; k < 12; k++)
            pk[k] &= pk[k - 8] | pk[k - 4];
        pk[12] &= 1;
        pk[13] %= 26;
        pk[14] %= 2 * (TB_MAX_DIST + 1);
        int rc = tb_probe_packed(t, pk, (size_t)g->packed_bytes, &wdl);
        cr_assert(rc == 0 || rc == KZ_ENOTFOUND || rc == KZ_ECORRUPT, "rc %d", rc);
        cr_assert(rc != 0 || (wdl >= -1 && wdl <= 1));
        found += rc == 0;
    }
    cr_assert_gt(found, 0);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* --- the tables in the searches ------------------------------------------------------ */

/* Plays a game from `pos` between a and b (a Black); the winner, -1 a draw. */
static int s_play(const char *pos, player *a, player *b)
{
    const game_def *g = game_default();
    game_state s;
    char err[128];
    cr_assert_eq(g->parse_position(&s, pos, err, sizeof err), 0, "%s", err);
    player_new_game(a, 1);
    player_new_game(b, 2);
    game_result r;
    while (!(r = g->result(&s)).over) {
        int action;
        cr_assert_eq(player_choose(g->to_move(&s) ? b : a, &s, &action, NULL), 0);
        player_observe(a, &s, action);
        player_observe(b, &s, action);
        g->apply(&s, action);
    }
    return r.winner;
}

Test(tablebase, searches_probe_the_tables, .timeout = 600)
{
    char *dir = s_build_dir("tb-search", 3, false);
    tb_set *t = s_open(dir, 0);
    const game_def *g = game_default();
    const char *win = "....Wb.......B........... b"; /* Black wins, 13 plies to zeroing */
    game_state s;
    char err[256];
    cr_assert_eq(g->parse_position(&s, win, err, sizeof err), 0);

    /* MCTS: the leaves in the tables are valued by them, never by the
     * evaluator; the chosen action keeps the win. */
    mcts_settings ms = player_mcts_settings(64);
    mcts_batch *b = mcts_batch_new(g, &ms, 1, evaluator_uniform(g));
    game_oracle ot = tb_oracle(t);
    mcts_batch_set_oracle(b, &ot);
    mcts_batch_reset(b, 0, &s, 1);
    cr_assert_eq(mcts_batch_run(b), 0);
    mcts_result res;
    mcts_batch_result(b, 0, &res);
    const mcts_stats *st = mcts_batch_stats(b);
    cr_assert_gt(st->tb_leaves, 0);
    cr_assert_eq(st->evaluated, 1, "only the root goes to the evaluator, not %llu",
                 (unsigned long long)st->evaluated);
    tb_action_value av[GAME_MAX_LEGAL];
    int n = tb_action_values(t, &s, av);
    cr_assert_eq(n, res.n);
    for (int i = 0; i < n; i++) {
        if (av[i].action == res.best)
            cr_assert_eq(av[i].wdl, 1, "the search chose %d-%d, which does not keep the win",
                         res.best / 25, res.best % 25);
        /* Every child visited is valued exactly (a win less by its distance). */
        if (res.visits[i]) {
            game_state c = s;
            g->apply(&c, av[i].action);
            int score;
            cr_assert_eq(tb_probe_search(t, &c, &score), 0);
            cr_assert_float_eq(res.q[i], (g->to_move(&c) == 0 ? score : -score) / 100.0f, 1e-4,
                               "%d-%d: q %f, score %d", av[i].action / 25, av[i].action % 25,
                               res.q[i], score);
            cr_assert_eq(score > 0 ? 1 : score < 0 ? -1 : 0,
                         g->to_move(&c) == 0 ? av[i].wdl : -av[i].wdl);
        }
    }
    mcts_batch_destroy(&b);

    /* The table's best move: on positions where exactly one action keeps
     * the value (the accuracy test set), the network-free search with the
     * tables and alpha-beta at depth 1 with them choose it every time; the
     * same search without them does not (so the test can tell). */
    enum { NT = 60 };
    static game_state ts[NT];
    static uint16_t keep[NT];
    cr_assert_eq(tb_test_positions(t, NT, 3, ts, keep), NT);
    int found[3] = {0, 0, 0}; /* mcts with, mcts without, alpha-beta with */
    for (int w = 0; w < 2; w++) {
        b = mcts_batch_new(g, &ms, 1, evaluator_uniform(g));
        mcts_batch_set_oracle(b, w == 0 ? &ot : NULL);
        for (int i = 0; i < NT; i++) {
            mcts_batch_reset(b, 0, &ts[i], (uint64_t)i + 1);
            cr_assert_eq(mcts_batch_run(b), 0);
            mcts_batch_result(b, 0, &res);
            found[w] += res.best == keep[i];
        }
        mcts_batch_destroy(&b);
    }
    player *ab = player_from_spec(g, "alphabeta:1", err, sizeof err);
    cr_assert(ab, "%s", err);
    player_set_oracle(ab, &ot);
    for (int i = 0; i < NT; i++) {
        player_new_game(ab, 1);
        int action;
        cr_assert_eq(player_choose(ab, &ts[i], &action, NULL), 0);
        found[2] += action == keep[i];
    }
    player_destroy(&ab);
    /* An mcts player whose root the tables cover plays their best action
     * (root probing), whatever its search would have visited: with 2
     * simulations a search alone cannot see the children it never visits. */
    int root_found[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        player *m = player_from_spec(g, "mcts:uniform:2", err, sizeof err);
        cr_assert(m, "%s", err);
        player_set_oracle(m, w == 0 ? &ot : NULL);
        for (int i = 0; i < NT; i++) {
            player_new_game(m, (uint64_t)i + 1);
            int action;
            player_info pi;
            cr_assert_eq(player_choose(m, &ts[i], &action, &pi), 0);
            root_found[w] += action == keep[i];
            if (w == 0 && pi.n > 1) {
                cr_assert_eq(pi.work, 0, "the tables' move took a search");
                for (int k = 0; k < pi.n; k++)
                    cr_assert_float_eq(pi.share[k], pi.actions[k] == action ? 1.0f : 0.0f,
                                       1e-6);
            }
        }
        player_destroy(&m);
    }
    cr_assert_eq(root_found[0], NT, "mcts:uniform:2 with the tables: %d of %d", root_found[0],
                 NT);
    cr_assert_lt(root_found[1], NT / 2, "mcts:uniform:2 without the tables found %d of %d",
                 root_found[1], NT);
    cr_assert_eq(found[0], NT, "mcts with the tables: %d of %d", found[0], NT);
    cr_assert_eq(found[2], NT, "alpha-beta with the tables: %d of %d", found[2], NT);
    cr_assert_lt(found[1], NT, "mcts without the tables found every one (%d)", found[1]);

    /* Whole games: a network-free search with the tables converts the win
     * (the tree below a table position is never entered: no repetition, R13
     * respected through the values at each count). */
    player *a = player_from_spec(g, "mcts:uniform:64", err, sizeof err);
    player *o = player_from_spec(g, "mcts:uniform:64", err, sizeof err);
    cr_assert(a && o, "%s", err);
    player_set_oracle(a, &ot);
    player_set_oracle(o, &ot);
    cr_assert_eq(s_play(win, a, o), 0, "mcts with the tables did not win");
    player_destroy(&a);
    player_destroy(&o);
    /* Alpha-beta likewise, against an alpha-beta without them. */
    a = player_from_spec(g, "alphabeta:2", err, sizeof err);
    o = player_from_spec(g, "alphabeta:2", err, sizeof err);
    player_set_oracle(a, &ot);
    cr_assert_eq(s_play(win, a, o), 0, "alpha-beta with the tables did not win");
    player_destroy(&a);
    player_destroy(&o);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* --- files -------------------------------------------------------------------------- */

/* Opening dir must fail with a message holding every word of `words`. */
static void s_refused(const char *dir, const char *what, const char *w1, const char *w2)
{
    char err[512] = "";
    tb_set *t = tb_open(dir, 0, err, sizeof err);
    cr_assert_null(t, "%s: opened", what);
    cr_assert(strstr(err, w1) && strstr(err, w2), "%s: message '%s'", what, err);
    cr_assert_null(strchr(err, '\n'), "%s: one line", what);
}

Test(tablebase, corrupt_files_refused, .timeout = 600)
{
    char *dir = s_build_dir("tb-corrupt", 3, true);
    char path[512];
    snprintf(path, sizeof path, "%s/KMvK.kztb", dir);
    uint8_t *orig, *f;
    size_t len;
    cr_assert_eq(file_read_all(path, &orig, &len), 0);
    f = malloc(len + 16);
    cr_assert_eq(len, 128 + 6624);

    cr_assert_eq(file_write_atomic(path, orig, len - 10), 0);
    s_refused(dir, "cut", "KMvK.kztb", "truncated");
    cr_assert_eq(file_write_atomic(path, orig, 50), 0);
    s_refused(dir, "cut into the header", "KMvK.kztb", "truncated");
    memcpy(f, orig, len);
    memset(f + len, 0, 16);
    cr_assert_eq(file_write_atomic(path, f, len + 16), 0);
    s_refused(dir, "longer", "KMvK.kztb", "oversized");
    f[128 + 100] ^= 0x40;
    cr_assert_eq(file_write_atomic(path, f, len), 0);
    s_refused(dir, "a data byte", "KMvK.kztb", "data checksum");
    memcpy(f, orig, len);
    f[40] ^= 1; /* the count of wins */
    cr_assert_eq(file_write_atomic(path, f, len), 0);
    s_refused(dir, "a header byte", "KMvK.kztb", "header checksum");
    memcpy(f, orig, len);
    f[8] = 2; /* the version */
    cr_assert_eq(file_write_atomic(path, f, len), 0);
    s_refused(dir, "version", "KMvK.kztb", "version 2");
    memcpy(f, orig, len);
    f[0] = 'X';
    cr_assert_eq(file_write_atomic(path, f, len), 0);
    s_refused(dir, "magic", "KMvK.kztb", "not a tablebase");
    memcpy(f, orig, len);
    f[17] = 2; /* another class's material, checksums redone */
    s_fix_checksums(f, len);
    cr_assert_eq(file_write_atomic(path, f, len), 0);
    s_refused(dir, "material", "KMvK.kztb", "class KMvK");

    /* `kz tb` says so in one line too. */
    char args[600], out[4096];
    snprintf(args, sizeof args, "tb stats --dir %s", dir);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 1);
    cr_assert(strstr(out, "KMvK.kztb") && strstr(out, "class KMvK"), "%s", out);

    /* A build makes it again (and the same bytes: the build is deterministic). */
    tb_build_opts o = {.pieces = 3, .threads = 1, .verify = true};
    char err[512];
    cr_assert_eq(tb_build(dir, &o, err, sizeof err), 0, "%s", err);
    uint8_t *again;
    size_t len2;
    cr_assert_eq(file_read_all(path, &again, &len2), 0);
    cr_assert(len2 == len && !memcmp(again, orig, len), "rebuilt file differs");
    tb_set *t = s_open(dir, 0);
    cr_assert_eq(tb_pieces(t), 3);
    tb_close(&t);
    free(again);
    free(orig);
    free(f);
    harness_rm_rf(dir);
    free(dir);
}

static void s_count_pairs(const tb_progress *p, void *arg)
{
    int *most = arg;
    if (p->pairs > *most)
        *most = p->pairs;
}

Test(tablebase, build_resumes, .timeout = 600)
{
    char *dir = s_build_dir("tb-resume", 3, false);
    char path[512];
    snprintf(path, sizeof path, "%s/MvKM.kztb", dir);
    cr_assert_eq(unlink(path), 0);
    int pairs = 0;
    tb_build_opts o = {.pieces = 3, .threads = 1, .verify = true, .progress = s_count_pairs,
                       .arg = &pairs};
    char err[512];
    cr_assert_eq(tb_build(dir, &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pairs, 1, "built %d class pairs again", pairs); /* MvKM with KMvM */
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    /* Nothing left to do: no pair built. */
    pairs = 0;
    cr_assert_eq(tb_build(dir, &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pairs, 0);
    /* Bad options. */
    o.pieces = 1;
    cr_assert_eq(tb_build(dir, &o, err, sizeof err), KZ_EINVAL);
    cr_assert(strstr(err, "pieces"), "%s", err);
    harness_rm_rf(dir);
    free(dir);
}

/* --- kz tb ---------------------------------------------------------------------------- */

Test(tablebase, kz_tb, .timeout = 600)
{
    harness_cli c;
    harness_cli_init(&c, "tb-kz");
    char args[1024];
    snprintf(args, sizeof args, "tb build --pieces 3 --dir %s/tb --threads 1", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "tables for up to 3 pieces") && strstr(c.out, "16 classes") &&
                  strstr(c.out, "52455 positions, verified"),
              "%s", c.out);
    cr_assert(strstr(c.err, "tb verify") && strstr(c.err, "positions"), "%s", c.err);

    /* A won king ending: the value, and every action's. */
    snprintf(args, sizeof args, "tb probe --dir %s/tb --position '....Wb.......B........... b'",
             c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "value     win in 13 for black") && strstr(c.out, "at 0: win") &&
                  strstr(c.out, "  13-11   win in 13") && strstr(c.out, "draw"),
              "%s", c.out);
    /* After a king move each way the count is 2: still a win (11 + 2 <= 50). */
    snprintf(args, sizeof args,
             "tb probe --dir %s/tb --position '....Wb.......B........... b' 13-11 4-24", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "no-progress 2") && strstr(c.out, "win in 11") &&
                  strstr(c.out, "at 2: win"),
              "%s", c.out);
    /* Mid-sequence (R9): a king takes two men, the chain piece must go on. */
    snprintf(args, sizeof args,
             "tb probe --dir %s/tb --position 'B.....w..........w....... b' 0-12", c.dir);
    int rc = harness_cli_kz(&c, args);
    cr_assert_eq(rc, 0, "%s %s", c.out, c.err);
    cr_assert(strstr(c.out, " 12 (black to move") && strstr(c.out, "win in 1"), "%s", c.out);

    snprintf(args, sizeof args, "tb stats --dir %s/tb", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "KMvK") && strstr(c.out, "\nall ") && strstr(c.out, " 52455 ") &&
                  strstr(c.out, "longest win: ....Wb.......B........... b, 13 plies") &&
                  strstr(c.out, "result: black (no-pieces)"),
              "%s", c.out);
    snprintf(args, sizeof args, "tb verify --dir %s/tb --threads 2", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "verified 16 classes (up to 3 pieces)"), "%s", c.out);
    snprintf(args, sizeof args, "tb bench --dir %s/tb --seconds 0.2", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "M probes/s"), "%s", c.out);

    /* A model's accuracy on the fixed test set (the uniform evaluator here). */
    snprintf(args, sizeof args,
             "tb accuracy uniform --dir %s/tb --positions 40 --simulations 16", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "tb accuracy of uniform on 40 table positions (up to 3 pieces") &&
                  strstr(c.out, "policy (raw network)") &&
                  strstr(c.out, "search (16 simulations)") && strstr(c.out, "of 40; 95%"),
              "%s", c.out);
    cr_assert_eq(harness_cli_kz(&c, "tb accuracy"), 2);
    snprintf(args, sizeof args, "tb accuracy nosuch.kzm --dir %s/tb", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 2);
    cr_assert(strstr(c.err, "nosuch.kzm"), "%s", c.err);

    /* Self-play that reaches the tables: played out by them (valid records, the
     * tables' result), or the search's leaves valued by them. */
    snprintf(args, sizeof args,
             "selfplay --games 4 --parallel 2 --sims 16 --seed 5 --quiet --out %s/a.kzr "
             "--position '....Wb.......B........... b' --tb-dir %s/tb --tb-adjudicate",
             c.dir, c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "results: black 4, white 0, draws 0") &&
                  strstr(c.out, "tables: 4 games ended by them (52 moves)"),
              "%s", c.out);
    snprintf(args, sizeof args, "records %s/a.kzr", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "checked by replay: 4 valid, 0 invalid"), "%s", c.out);
    snprintf(args, sizeof args,
             "selfplay --games 4 --parallel 2 --sims 64 --seed 5 --quiet --out %s/b.kzr "
             "--temperature-plies 0 --position '....Wb.......B........... b' --tb-dir %s/tb "
             "--tb-search",
             c.dir, c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "results: black 4, white 0, draws 0") &&
                  strstr(c.out, "tables: 0 games ended by them") &&
                  !strstr(c.out, ", 0 search leaves valued"),
              "%s", c.out);
    snprintf(args, sizeof args, "selfplay --games 1 --out %s/c.kzr --tb-search", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 2);
    cr_assert(strstr(c.err, "need --tb_dir"), "%s", c.err);

    /* Errors: one line, exit 1 at run time, 2 for bad usage. */
    snprintf(args, sizeof args, "tb probe --dir %s/tb", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 1);
    cr_assert(strstr(c.err, "more pieces than the tables"), "%s", c.err);
    snprintf(args, sizeof args, "tb probe --dir %s/none", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 1);
    cr_assert(strstr(c.err, "no such tablebase directory"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "tb frob"), 2);
    cr_assert(strstr(c.err, "unknown subcommand"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "tb build --pieces 9"), 2);
    snprintf(args, sizeof args,
             "tb probe --dir %s/tb --position 'B.....w..........w....... b' 0-13", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 2);
    cr_assert(strstr(c.err, "illegal"), "%s", c.err);
    harness_cli_fini(&c);
}
