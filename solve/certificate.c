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
    uint64_t cap, n; /* a power of two; members */
} kset;

static uint64_t s_hash(const ckey *k)
{
    return mix64(((uint64_t)k->bm << 32 | k->bk) ^ mix64((uint64_t)k->wm << 32 | k->wk) ^
                 k->side);
}

static void s_kset_grow(kset *s);

/* Inserts; returns false when the key was there already. */
static bool s_kset_add(kset *s, const ckey *k)
{
    if (2 * (s->n + 1) > s->cap)
        s_kset_grow(s);
    for (uint64_t i = s_hash(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->used[i]) {
            s->used[i] = 1;
            s->key[i] = *k;
            s->n++;
            return true;
        }
        if (!s_cmp(&s->key[i], k))
            return false;
    }
}

static bool s_kset_has(const kset *s, const ckey *k)
{
    if (!s->cap)
        return false;
    for (uint64_t i = s_hash(k) & (s->cap - 1); s->used[i]; i = (i + 1) & (s->cap - 1))
        if (!s_cmp(&s->key[i], k))
            return true;
    return false;
}

static void s_kset_grow(kset *s)
{
    kset b = {.cap = s->cap ? 2 * s->cap : 1024};
    b.key = xmalloc(b.cap * sizeof *b.key);
    b.used = xcalloc(b.cap, 1);
    for (uint64_t i = 0; i < s->cap; i++)
        if (s->used[i])
            s_kset_add(&b, &s->key[i]);
    free(s->key);
    free(s->used);
    *s = b;
}

/* The verifier's state. */
typedef struct vctx {
    const char *path;        /* for messages */
    const tb_set *tables;    /* borrowed */
    int claim;               /* X */
    int tables_n;            /* N */
    kset set;                /* the file's positions */
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

static const char *s_claim_word(int x) { return x ? "white-not-lose" : "black-not-lose"; }

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
    if (s_kset_has(&c->set, &k))
        return NULL;
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
        if (x < 0) {
            snprintf(c->why, sizeof c->why, "it reaches %s, a table loss for X", str);
            return c->why;
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
            if (!strcmp(buf + 6, "black-not-lose"))
                c.claim = 0;
            else if (!strcmp(buf + 6, "white-not-lose"))
                c.claim = 1;
            else
                rc = s_fail(&c, lineno, "unknown claim (black-not-lose or white-not-lose)", err,
                            errlen);
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
        if (!bad && strcmp(v.claim, s_claim_word(c.claim)))
            bad = "the claim differs from the header's";
        if (!bad && (c.stack[0].side == c.claim) != (v.turn != NULL))
            bad = c.stack[0].side == c.claim ? "X to move (an OR node) but no turn given"
                                             : "the opponent to move (an AND node) but a turn given";
        if (!bad) {
            ckey k = s_canon(s_key_of(c.stack[0].board, c.stack[0].side));
            if (!s_kset_add(&c.set, &k))
                bad = "a position (or its mirror image) given twice";
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
    if (!rc && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = KZ_EIO;
    }
    fclose(f);
    free(c.stack);
    free(c.set.key);
    free(c.set.used);
    return rc;
}
