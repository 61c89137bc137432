/* certificate: checks a solver certificate with the naive reference rules.
 * See certificate.h for the format and docs/solve.md for why these checks
 * prove the claim. Written apart from the search (solve/pns.c): it shares
 * no code with it but the file format. */
#include "solve/certificate.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "games/khreibaga.h"
#include "solve/ref_khreibaga.h"

/* A position as a key: the pieces of each kind by point, and the side. */
typedef struct ckey {
    uint32_t bm, bk, wm, wk; /* Black men, Black kings, White men, White kings */
    uint32_t side;           /* 0 Black, 1 White to move */
} ckey;

static ckey s_key_of(const char *board, int side)
{
    ckey k = {0, 0, 0, 0, (uint32_t)side};
    for (int sq = 0; sq < REF_POINTS; sq++) {
        uint32_t b = 1u << sq;
        switch (board[sq]) {
        case 'b': k.bm |= b; break;
        case 'B': k.bk |= b; break;
        case 'w': k.wm |= b; break;
        case 'W': k.wk |= b; break;
        default: break;
        }
    }
    return k;
}

/* R19: point (r, c) -> (r, 4 - c). */
static uint32_t s_flip(uint32_t x)
{
    uint32_t y = 0;
    for (int sq = 0; sq < REF_POINTS; sq++)
        if (x >> sq & 1u)
            y |= 1u << ((sq / 5) * 5 + 4 - sq % 5);
    return y;
}

static int s_cmp(const ckey *a, const ckey *b) { return memcmp(a, b, sizeof *a); }

/* The smaller of a key and its mirror image's. */
static ckey s_canon(ckey k)
{
    ckey m = {s_flip(k.bm), s_flip(k.bk), s_flip(k.wm), s_flip(k.wk), k.side};
    return s_cmp(&m, &k) < 0 ? m : k;
}

/* The set of the file's positions: open addressing over canonical keys. */
typedef struct kset {
    ckey *key;       /* (cap) */
    uint8_t *used;   /* (cap) */
    uint32_t *idx;   /* (cap) the member's number (its node line, in order) */
    uint64_t cap, n; /* a power of two; members */
} kset;

static uint64_t s_hash(const ckey *k)
{
    return mix64(((uint64_t)k->bm << 32 | k->bk) ^ mix64((uint64_t)k->wm << 32 | k->wk) ^
                 k->side);
}

static void s_kset_grow(kset *s);

/* Inserts with the next number; returns false when the key was there already. */
static bool s_kset_add(kset *s, const ckey *k, uint32_t idx)
{
    if (2 * (s->n + 1) > s->cap)
        s_kset_grow(s);
    for (uint64_t i = s_hash(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->used[i]) {
            s->used[i] = 1;
            s->key[i] = *k;
            s->idx[i] = idx;
            s->n++;
            return true;
        }
        if (!s_cmp(&s->key[i], k))
            return false;
    }
}

/* The member's number, or -1. */
static int64_t s_kset_find(const kset *s, const ckey *k)
{
    if (!s->cap)
        return -1;
    for (uint64_t i = s_hash(k) & (s->cap - 1); s->used[i]; i = (i + 1) & (s->cap - 1))
        if (!s_cmp(&s->key[i], k))
            return s->idx[i];
    return -1;
}

static void s_kset_grow(kset *s)
{
    kset b = {.cap = s->cap ? 2 * s->cap : 1024};
    b.key = xmalloc(b.cap * sizeof *b.key);
    b.used = xcalloc(b.cap, 1);
    b.idx = xmalloc(b.cap * sizeof *b.idx);
    for (uint64_t i = 0; i < s->cap; i++)
        if (s->used[i])
            s_kset_add(&b, &s->key[i], s->idx[i]);
    free_all(s->key, s->used, s->idx);
    *s = b;
}

/* A win certificate's graph: edges between node lines and edges to table
 * leaves, with what R13 and R15 need. */
typedef struct wedge {
    uint32_t from;  /* node number */
    int32_t to;     /* node number, -1 for a table leaf */
    uint8_t zero;   /* the turn captured or moved a man (R13's count restarts) */
    uint8_t dist;   /* a table leaf's distance (its value at count 0) */
    uint16_t len;   /* a table leaf: the longest game left under the tables' play */
} wedge;

/* Memo of table lines' lengths: turn-start positions -> plies to the end. */
typedef struct lmemo {
    uint64_t *a;     /* (cap) pieces and side; 0 empty */
    uint32_t *k;     /* (cap) kings */
    uint16_t *len;   /* (cap) */
    uint64_t cap, n; /* a power of two; entries */
} lmemo;

/* The verifier's state. */
typedef struct vctx {
    const char *path;        /* for messages */
    const tb_set *tables;    /* borrowed */
    int claim;               /* X */
    int tables_n;            /* N */
    kset set;                /* the file's positions */
    bool win;                /* a win certificate ("X-wins"), else "X-not-lose" */
    uint32_t cur;            /* the node being checked */
    wedge *edges;            /* (nedges) win certificates: the graph */
    uint64_t nedges, edges_cap;
    uint32_t *line_of;       /* (nodes) each node's line number */
    lmemo memo;              /* table lines' lengths */
    ref_game *stack;         /* (REF_MAX_HOPS + 1) games for the turns' depth-first walk */
    cert_report *rep;        /* figures */
    char why[160];           /* the reason of a failed check */
} vctx;

/* A line split: the position string, its claim and turn (or NULL). */
typedef struct vline {
    char pos[28];       /* R20 string */
    const char *claim;  /* the claim word */
    const char *turn;   /* the turn, NULL when none */
} vline;

static const char *s_claim_word(int x, bool win)
{
    return win ? (x ? "white-wins" : "black-wins") : (x ? "white-not-lose" : "black-not-lose");
}

static void s_edge(vctx *c, int32_t to, bool zero, int dist, int len)
{
    if (!c->win)
        return;
    if (c->nedges == c->edges_cap) {
        c->edges_cap = c->edges_cap ? 2 * c->edges_cap : 4096;
        c->edges = realloc(c->edges, c->edges_cap * sizeof *c->edges);
        KZ_CHECK(c->edges);
    }
    c->edges[c->nedges++] = (wedge){c->cur, to, zero, (uint8_t)dist, (uint16_t)len};
}

/* --- the length of the tables' winning lines (R15) ----------------------------- */

#define LEN_MAX 60000 /* longer (or a memo too large): refused */

static uint64_t s_lkey(const game_state *s)
{
    return 1 | (uint64_t)khreibaga_pieces(s, 0) << 1 | (uint64_t)khreibaga_pieces(s, 1) << 26 |
           (uint64_t)khreibaga_game.to_move(s) << 51;
}

static uint16_t *s_lslot(lmemo *m, uint64_t a, uint32_t k, bool *found)
{
    if (2 * (m->n + 1) > m->cap) {
        lmemo b = {.cap = m->cap ? 2 * m->cap : 1 << 16};
        b.a = xcalloc(b.cap, sizeof *b.a);
        b.k = xmalloc(b.cap * sizeof *b.k);
        b.len = xmalloc(b.cap * sizeof *b.len);
        for (uint64_t i = 0; i < m->cap; i++) {
            if (!m->a[i])
                continue;
            bool f;
            *s_lslot(&b, m->a[i], m->k[i], &f) = m->len[i];
        }
        free_all(m->a, m->k, m->len);
        *m = b;
    }
    for (uint64_t i = mix64(a ^ (uint64_t)k << 13) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->a[i]) {
            m->a[i] = a;
            m->k[i] = k;
            m->n++;
            *found = false;
            return &m->len[i];
        }
        if (m->a[i] == a && m->k[i] == k) {
            *found = true;
            return &m->len[i];
        }
    }
}

/* The most plies the game can last from s (a table position won by `winner`,
 * or a state inside a turn) when the winner plays the tables' choice
 * (tb_best_action: the shortest win; whole turns counted) and the loser any
 * action, to the winner's R12 win. The tables' distances fall along every
 * such line (docs/tablebase.md), so it is finite. LEN_MAX when longer, or
 * when the tables fail. Turn starts are taken at count 0 (the leaf's R13
 * check is c + d <= 50, made apart). */
static int s_line_len(vctx *c, const game_state *s0, int winner, int depth)
{
    game_state s;
    khreibaga_game.copy(&s, s0);
    bool start = !khreibaga_game.mid_turn(&s);
    uint16_t *slot = NULL;
    if (start) {
        khreibaga_set(&s, khreibaga_pieces(s0, 0), khreibaga_pieces(s0, 1), khreibaga_kings(s0),
                      khreibaga_game.to_move(s0));
        bool found;
        slot = s_lslot(&c->memo, s_lkey(&s), khreibaga_kings(&s), &found);
        if (found)
            return *slot;
        *slot = LEN_MAX; /* on the way: a cycle would read it as too long */
    }
    uint16_t acts[GAME_MAX_LEGAL];
    int n = khreibaga_game.legal_actions(&s, acts), best = 0;
    if (n > 0 && depth < 2000) {
        int mover = khreibaga_game.to_move(&s);
        if (mover == winner) {
            int a;
            if (tb_best_action(c->tables, &s, &a)) {
                best = LEN_MAX;
            } else {
                acts[0] = (uint16_t)a;
                n = 1;
            }
        }
        for (int i = 0; i < n && best < LEN_MAX; i++) {
            game_state t;
            khreibaga_game.copy(&t, &s);
            khreibaga_game.apply(&t, acts[i]);
            int l = s_line_len(c, &t, winner, depth + 1);
            l = l >= LEN_MAX ? LEN_MAX : l + !khreibaga_game.mid_turn(&t);
            if (l > best)
                best = l;
        }
    } else if (n > 0) {
        best = LEN_MAX;
    } else if (khreibaga_game.to_move(&s) == winner) {
        best = LEN_MAX; /* the winner stuck: not a win */
    }
    if (start) {
        bool found;
        slot = s_lslot(&c->memo, s_lkey(&s), khreibaga_kings(&s), &found);
        *slot = (uint16_t)(best > LEN_MAX ? LEN_MAX : best);
    }
    return best;
}

/* Splits a node line (modified in place). NULL, or what is malformed. */
static const char *s_split(char *line, vline *v)
{
    char *tok[5];
    int n = 0;
    for (char *p = strtok(line, " "); p; p = strtok(NULL, " ")) {
        if (n == 4)
            return "too many fields (POSITION SIDE CLAIM [TURN])";
        tok[n++] = p;
    }
    if (n < 3)
        return "too few fields (POSITION SIDE CLAIM [TURN])";
    if (strlen(tok[0]) != REF_POINTS || strlen(tok[1]) != 1)
        return "not an R20 turn-start position (25 points, a space, b or w)";
    memcpy(v->pos, tok[0], REF_POINTS);
    v->pos[25] = ' ';
    v->pos[26] = tok[1][0];
    v->pos[27] = 0;
    v->claim = tok[2];
    v->turn = n == 4 ? tok[3] : NULL;
    return NULL;
}

/* Whether the game g (a turn start, after a whole turn) is acceptable:
 * NULL, or the reason (in c->why). Counts the leaves. */
static const char *s_child(vctx *c, const ref_game *g)
{
    int legal[REF_ACTIONS];
    int mover = g->side;
    char str[40];
    ref_format(g, str, sizeof str);
    bool zero = g->no_progress == 0; /* a capture or a man move (R13) */
    if (ref_count(g, mover) == 0 || ref_legal(g, legal) == 0) {
        if (mover == c->claim) {
            snprintf(c->why, sizeof c->why, "it reaches %s, where X has no move (R12: a loss)",
                     str);
            return c->why;
        }
        c->rep->end_leaves++;
        return NULL;
    }
    ckey k = s_canon(s_key_of(g->board, g->side));
    int64_t idx = s_kset_find(&c->set, &k);
    if (idx >= 0) {
        s_edge(c, (int32_t)idx, zero, 0, 0);
        return NULL;
    }
    int pieces = ref_count(g, 0) + ref_count(g, 1);
    if (pieces <= c->tables_n) {
        game_state s;
        char err[120];
        tb_value v;
        if (khreibaga_game.parse_position(&s, str, err, sizeof err) ||
            tb_probe(c->tables, &s, &v)) {
            snprintf(c->why, sizeof c->why, "the tables have no value for %s", str);
            return c->why;
        }
        int x = mover == c->claim ? v.wdl : -v.wdl;
        if (x < (c->win ? 1 : 0)) {
            snprintf(c->why, sizeof c->why, "it reaches %s, a table %s for X", str,
                     x < 0 ? "loss" : "draw");
            return c->why;
        }
        if (c->win) {
            int len = s_line_len(c, &s, c->claim, 0);
            if (len >= LEN_MAX) {
                snprintf(c->why, sizeof c->why, "the tables' line from %s has no bound", str);
                return c->why;
            }
            s_edge(c, -1, zero, v.dist, len);
        }
        c->rep->table_leaves++;
        return NULL;
    }
    snprintf(c->why, sizeof c->why, "it reaches %s, which is not in the certificate", str);
    return c->why;
}

/* Every complete turn from stack[depth] (R8, R9), each reached position checked. */
static const char *s_all_turns(vctx *c, int depth, int *count)
{
    int legal[REF_ACTIONS];
    int n = ref_legal(&c->stack[depth], legal);
    for (int i = 0; i < n; i++) {
        if (depth + 1 > REF_MAX_HOPS) {
            snprintf(c->why, sizeof c->why, "a turn of more than %d hops", REF_MAX_HOPS);
            return c->why;
        }
        ref_game *next = &c->stack[depth + 1];
        ref_copy(next, &c->stack[depth]);
        if (ref_apply(next, legal[i]))
            return "the reference rules refused their own legal action";
        const char *bad;
        if (next->chain >= 0) {
            bad = s_all_turns(c, depth + 1, count);
        } else {
            (*count)++;
            c->rep->turns++;
            bad = s_child(c, next);
            if (bad) {
                char turn[160];
                snprintf(turn, sizeof turn, "%s", bad);
                snprintf(c->why, sizeof c->why, "after %d-%d: %s", legal[i] / 25, legal[i] % 25,
                         turn);
                return c->why;
            }
        }
        if (bad)
            return bad;
    }
    return NULL;
}

/* Plays X's turn "a-b-c" on stack[0] and checks where it goes. */
static const char *s_or_turn(vctx *c, const char *turn)
{
    int pts[REF_MAX_HOPS + 2], n = 0;
    const char *p = turn;
    while (*p) {
        if (*p < '0' || *p > '9') {
            snprintf(c->why, sizeof c->why, "malformed turn '%.40s' (points joined by - or x)",
                     turn);
            return c->why;
        }
        int v = 0, digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 3) {
            v = v * 10 + (*p++ - '0');
            digits++;
        }
        if (v > 24 || (*p >= '0' && *p <= '9') || n == REF_MAX_HOPS + 1) {
            snprintf(c->why, sizeof c->why, "malformed turn '%.40s' (a point past 24, or too "
                     "many hops)", turn);
            return c->why;
        }
        pts[n++] = v;
        if (*p == '-' || *p == 'x') {
            p++;
            if (!*p) {
                snprintf(c->why, sizeof c->why, "malformed turn '%.40s'", turn);
                return c->why;
            }
        } else if (*p) {
            snprintf(c->why, sizeof c->why, "malformed turn '%.40s' (points joined by - or x)",
                     turn);
            return c->why;
        }
    }
    if (n < 2) {
        snprintf(c->why, sizeof c->why, "malformed turn '%.40s' (at least two points)", turn);
        return c->why;
    }
    ref_game *g = &c->stack[1];
    ref_copy(g, &c->stack[0]);
    for (int i = 1; i < n; i++) {
        if (g->chain < 0 && i > 1) {
            snprintf(c->why, sizeof c->why, "the turn %s ended before hop %d-%d", turn,
                     pts[i - 1], pts[i]);
            return c->why;
        }
        if (ref_apply(g, pts[i - 1] * 25 + pts[i])) {
            snprintf(c->why, sizeof c->why, "hop %d-%d of %s is not legal", pts[i - 1], pts[i],
                     turn);
            return c->why;
        }
    }
    if (g->chain >= 0) {
        snprintf(c->why, sizeof c->why, "the turn %s is not finished (the piece on %d must "
                 "capture on)", turn, g->chain);
        return c->why;
    }
    c->rep->turns++;
    const char *bad = s_child(c, g);
    if (bad) {
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s", bad);
        snprintf(c->why, sizeof c->why, "turn %s: %s", turn, tmp);
        return c->why;
    }
    return NULL;
}

/* Reads one line into buf (without the '\n'): 1, 0 at the end, -1 when too
 * long or holding a NUL byte. */
static int s_read_line(FILE *f, char *buf, size_t cap)
{
    size_t n = 0;
    int ch;
    bool any = false, bad = false;
    while ((ch = fgetc(f)) != EOF) {
        any = true;
        if (ch == '\n')
            break;
        if (ch == 0 || n + 1 >= cap)
            bad = true;
        else
            buf[n++] = (char)ch;
    }
    buf[n] = 0;
    if (!any)
        return 0;
    return bad ? -1 : 1;
}

static int s_fail(vctx *c, long line, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s:%ld: %s", c->path, line, what);
    return KZ_ECORRUPT;
}

/* Step 3 of a win certificate: from the root (node 0), the graph of its
 * node lines has no cycle (every play ends), no position is reached after 50
 * plies without a capture or a man move (R13), every table leaf is reached
 * at a count c with c + d <= 50, and every game ends by ply 300 (R15). */
static int s_win_graph(vctx *c, char *err, size_t errlen)
{
    uint64_t n = c->set.n;
    uint32_t *indeg = xcalloc(n, sizeof *indeg), *order = xmalloc(n * sizeof *order);
    uint64_t *first = xcalloc(n + 1, sizeof *first);
    uint32_t *cnt = xcalloc(n, sizeof *cnt), *ply = xcalloc(n, sizeof *ply);
    uint8_t *reach = xcalloc(n, 1);
    int rc = 0;
    /* Edges come in node order (each node's line was checked in turn). */
    for (uint64_t e = 0; e < c->nedges; e++)
        first[c->edges[e].from + 1]++;
    for (uint64_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    /* Reachable from the root, then Kahn's order over them. */
    uint64_t head = 0, tail = 0;
    order[tail++] = 0;
    reach[0] = 1;
    while (head < tail) {
        uint32_t u = order[head++];
        for (uint64_t e = first[u]; e < first[u + 1]; e++) {
            int32_t v = c->edges[e].to;
            if (v >= 0 && !reach[v]) {
                reach[v] = 1;
                order[tail++] = (uint32_t)v;
            }
        }
    }
    uint64_t nreach = tail;
    for (uint64_t i = 0; i < nreach; i++)
        for (uint64_t e = first[order[i]]; e < first[order[i] + 1]; e++)
            if (c->edges[e].to >= 0)
                indeg[c->edges[e].to]++;
    head = tail = 0;
    if (indeg[0] == 0)
        order[tail++] = 0;
    while (head < tail) {
        uint32_t u = order[head++];
        for (uint64_t e = first[u]; e < first[u + 1]; e++) {
            const wedge *w = &c->edges[e];
            uint32_t k = w->zero ? 0 : cnt[u] + 1;
            if (w->to < 0) {
                if (k + w->dist > 50) {
                    snprintf(err, errlen, "%s:%u: R13: a table leaf is reached at no-progress "
                             "count %u with distance %u (more than 50)", c->path,
                             c->line_of[u], k, w->dist);
                    rc = KZ_ECORRUPT;
                    goto out;
                }
                if (ply[u] + 1 + (uint32_t)w->len > 300) {
                    snprintf(err, errlen, "%s:%u: R15: a game can reach ply %u (more than 300)",
                             c->path, c->line_of[u], ply[u] + 1 + w->len);
                    rc = KZ_ECORRUPT;
                    goto out;
                }
                if (ply[u] + 1 + (uint64_t)w->len > c->rep->longest)
                    c->rep->longest = ply[u] + 1 + w->len;
                continue;
            }
            uint32_t v = (uint32_t)w->to;
            if (k > cnt[v])
                cnt[v] = k;
            if (ply[u] + 1 > ply[v])
                ply[v] = ply[u] + 1;
            if (--indeg[v] == 0)
                order[tail++] = v;
        }
        if (cnt[u] >= 50) {
            snprintf(err, errlen, "%s:%u: R13: this position can be reached after %u plies "
                     "without progress (a draw)", c->path, c->line_of[u], cnt[u]);
            rc = KZ_ECORRUPT;
            goto out;
        }
        if (ply[u] + 1 > c->rep->longest)
            c->rep->longest = ply[u] + 1;
        if (cnt[u] > c->rep->max_count)
            c->rep->max_count = cnt[u];
    }
    if (tail < nreach) {
        for (uint64_t i = 0; i < n; i++)
            if (reach[i] && indeg[i] > 0) {
                snprintf(err, errlen, "%s:%u: the win certificate has a cycle through this "
                         "line (a play could go on forever: a draw)", c->path, c->line_of[i]);
                break;
            }
        rc = KZ_ECORRUPT;
    }
out:
    free_all(indeg, order, first, cnt, ply, reach);
    return rc;
}

/* Step 1 reads the header and every node line into the set (syntax, the
 * claim, duplicates); step 2 checks each node's turns. */
int cert_verify(const char *path, const tb_set *tables, cert_report *out, char *err,
                size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return KZ_EIO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0)
        out->bytes = (uint64_t)st.st_size;
    vctx c = {.path = path, .tables = tables, .rep = out};
    c.stack = xmalloc((REF_MAX_HOPS + 2) * sizeof *c.stack);
    char buf[CERT_MAX_LINE + 2], msg[200];
    int rc = 0;
    long lineno = 0, first_node = 0;
    /* Step 1. Header and syntax. */
    const char *head[3] = {CERT_MAGIC " 1", "claim ", "tables "};
    for (int i = 0; i < 3 && !rc; i++) {
        lineno++;
        int r = s_read_line(f, buf, sizeof buf);
        if (r <= 0) {
            rc = s_fail(&c, lineno, r == 0 ? "the file ends inside the header" : "line too long",
                        err, errlen);
            break;
        }
        if (strncmp(buf, head[i], strlen(head[i]))) {
            snprintf(msg, sizeof msg, "expected '%s...' (a kz solve certificate, version %d)",
                     head[i], CERT_VERSION);
            rc = s_fail(&c, lineno, msg, err, errlen);
        } else if (i == 1) {
            c.claim = -1;
            for (int x = 0; x < 4; x++)
                if (!strcmp(buf + 6, s_claim_word(x & 1, x >> 1))) {
                    c.claim = x & 1;
                    c.win = x >> 1;
                }
            if (c.claim < 0)
                rc = s_fail(&c, lineno, "unknown claim (black-not-lose, white-not-lose, "
                            "black-wins, white-wins)", err, errlen);
        } else if (i == 2) {
            char *end;
            long n = strtol(buf + 7, &end, 10);
            if (*end || end == buf + 7 || n < 0 || n > TB_MAX_PIECES)
                rc = s_fail(&c, lineno, "bad tables line (tables N, 0 <= N <= 7)", err, errlen);
            c.tables_n = (int)n;
        }
    }
    if (!rc && c.tables_n > (tables ? tb_pieces(tables) : 0)) {
        snprintf(err, errlen, "%s: the certificate needs the tables up to %d pieces; the loaded "
                 "ones cover %d", path, c.tables_n, tables ? tb_pieces(tables) : 0);
        rc = KZ_EINVAL;
    }
    out->claim = c.claim;
    out->tables = c.tables_n;
    while (!rc) {
        lineno++;
        int r = s_read_line(f, buf, sizeof buf);
        if (r == 0)
            break;
        if (r < 0) {
            rc = s_fail(&c, lineno, "line too long or holding a NUL byte", err, errlen);
            break;
        }
        if (buf[0] == '#')
            continue;
        vline v;
        char work[CERT_MAX_LINE + 2];
        memcpy(work, buf, sizeof work);
        const char *bad = s_split(work, &v);
        char perr[120];
        if (!bad && ref_parse(&c.stack[0], v.pos, perr, sizeof perr)) {
            snprintf(msg, sizeof msg, "bad position: %s", perr);
            bad = msg;
        }
        if (!bad && strcmp(v.claim, s_claim_word(c.claim, c.win)))
            bad = "the claim differs from the header's";
        if (!bad && (c.stack[0].side == c.claim) != (v.turn != NULL))
            bad = c.stack[0].side == c.claim
                      ? "X to move (an OR node) but no turn given"
                      : "the opponent to move (an AND node) but a turn given";
        if (!bad) {
            ckey k = s_canon(s_key_of(c.stack[0].board, c.stack[0].side));
            if (!s_kset_add(&c.set, &k, (uint32_t)c.set.n))
                bad = "a position (or its mirror image) given twice";
            else if (c.win) {
                if ((c.set.n & (c.set.n - 1)) == 0) { /* 1, 2, 4, ...: double the room */
                    c.line_of = realloc(c.line_of, 2 * c.set.n * sizeof *c.line_of);
                    KZ_CHECK(c.line_of);
                }
                c.line_of[c.set.n - 1] = (uint32_t)lineno;
            }
        }
        if (bad) {
            rc = s_fail(&c, lineno, bad, err, errlen);
            break;
        }
        if (!first_node) {
            first_node = lineno;
            snprintf(out->root, sizeof out->root, "%s", v.pos);
        }
    }
    if (!rc && !first_node)
        rc = s_fail(&c, lineno, "no node lines: nothing is proven", err, errlen);
    /* Step 2. Each node's turns. */
    if (!rc && fseek(f, 0, SEEK_SET)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = KZ_EIO;
    }
    lineno = 0;
    while (!rc) {
        lineno++;
        int r = s_read_line(f, buf, sizeof buf);
        if (r == 0)
            break;
        if (lineno < first_node || buf[0] == '#')
            continue;
        vline v;
        s_split(buf, &v);
        char perr[120];
        ref_parse(&c.stack[0], v.pos, perr, sizeof perr);
        const char *bad;
        c.cur = (uint32_t)out->nodes;
        out->nodes++;
        if (v.turn) {
            out->or_nodes++;
            bad = s_or_turn(&c, v.turn);
        } else {
            out->and_nodes++;
            int count = 0;
            bad = s_all_turns(&c, 0, &count);
        }
        if (bad)
            rc = s_fail(&c, lineno, bad, err, errlen);
    }
    if (!rc && c.win)
        rc = s_win_graph(&c, err, errlen);
    if (!rc && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = KZ_EIO;
    }
    fclose(f);
    free_all(c.stack, c.set.key, c.set.used, c.set.idx, c.edges, c.line_of, c.memo.a, c.memo.k,
             c.memo.len);
    out->win = c.win;
    return rc;
}
