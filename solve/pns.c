/* pns: df-pn proof search for "X does not lose" claims over whole turns,
 * with a memory-mapped transposition table and certificate extraction.
 * See pns.h and docs/solve.md. */
#include "solve/pns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "games/khreibaga.h"

#define TT_MAGIC "KZTT\r\n\x1a\n"
#define TT_HEADER 64
#define TT_BUCKET 4
#define TT_MIN_BYTES 4096

/* --- positions ---------------------------------------------------------------- */

static const game_def *s_g(void) { return &khreibaga_game; }

int pns_pos_from_state(const game_state *s, pns_pos *out)
{
    if (s_g()->mid_turn(s))
        return KZ_EINVAL;
    out->black = khreibaga_pieces(s, 0);
    out->white = khreibaga_pieces(s, 1);
    out->kings = khreibaga_kings(s);
    out->side = (uint32_t)s_g()->to_move(s);
    return 0;
}

static int s_state(const pns_pos *p, game_state *s)
{
    return khreibaga_set(s, p->black, p->white, p->kings, (int)p->side);
}

int pns_pos_parse(const char *str, pns_pos *out, char *err, size_t errlen)
{
    game_state s;
    int rc = s_g()->parse_position(&s, str, err, errlen);
    if (rc)
        return rc;
    if (s_g()->mid_turn(&s)) {
        snprintf(err, errlen, "a mid-sequence position: the solver takes turn starts only");
        return KZ_EINVAL;
    }
    return pns_pos_from_state(&s, out);
}

void pns_pos_format(const pns_pos *p, char *buf, size_t len)
{
    char tmp[32];
    for (int sq = 0; sq < 25; sq++) {
        uint32_t b = 1u << sq;
        bool k = p->kings & b;
        tmp[sq] = p->black & b ? (k ? 'B' : 'b') : p->white & b ? (k ? 'W' : 'w') : '.';
    }
    tmp[25] = ' ';
    tmp[26] = p->side ? 'w' : 'b';
    tmp[27] = 0;
    snprintf(buf, len, "%s", tmp);
}

/* R19: (r, c) -> (r, 4 - c), five bits a row. */
static uint32_t s_mirror_bits(uint32_t x)
{
    static const uint8_t rev5[32] = {0, 16, 8, 24, 4, 20, 12, 28, 2, 18, 10, 26, 6, 22, 14, 30,
                                     1, 17, 9, 25, 5, 21, 13, 29, 3, 19, 11, 27, 7, 23, 15, 31};
    uint32_t y = 0;
    for (int r = 0; r < 5; r++)
        y |= (uint32_t)rev5[(x >> (5 * r)) & 31u] << (5 * r);
    return y;
}

pns_pos pns_pos_mirror(const pns_pos *p)
{
    return (pns_pos){s_mirror_bits(p->black), s_mirror_bits(p->white), s_mirror_bits(p->kings),
                     p->side};
}

/* The one of a mirror pair that the table stores. */
static pns_pos s_canon(const pns_pos *p)
{
    pns_pos m = pns_pos_mirror(p);
    if (m.black != p->black)
        return m.black < p->black ? m : *p;
    if (m.white != p->white)
        return m.white < p->white ? m : *p;
    return m.kings < p->kings ? m : *p;
}

static bool s_same(const pns_pos *a, const pns_pos *b)
{
    return a->black == b->black && a->white == b->white && a->kings == b->kings &&
           a->side == b->side;
}

static int s_pieces(const pns_pos *p) { return __builtin_popcount(p->black | p->white); }

/* --- whole turns ---------------------------------------------------------------- */

typedef struct turn_gen {
    pns_turn *out;          /* the turns found */
    int n;                  /* how many */
    uint8_t path[PNS_MAX_HOPS + 1]; /* points of the turn in progress */
} turn_gen;

static void s_emit(turn_gen *tg, const game_state *s, int nhops)
{
    pns_pos to;
    to.black = khreibaga_pieces(s, 0);
    to.white = khreibaga_pieces(s, 1);
    to.kings = khreibaga_kings(s);
    to.side = (uint32_t)s_g()->to_move(s);
    for (int i = 0; i < tg->n; i++)
        if (s_same(&tg->out[i].to, &to))
            return; /* another hop order to the same position */
    KZ_CHECK(tg->n < PNS_MAX_TURNS);
    pns_turn *t = &tg->out[tg->n++];
    t->to = to;
    t->nhops = (uint8_t)nhops;
    memcpy(t->hop, tg->path, (size_t)nhops + 1);
}

/* Depth-first over the hops of one turn (R9): a state mid-sequence goes on. */
static void s_hops(turn_gen *tg, const game_state *s, int depth)
{
    uint16_t acts[GAME_MAX_LEGAL];
    int n = s_g()->legal_actions(s, acts);
    for (int i = 0; i < n; i++) {
        game_state c;
        s_g()->copy(&c, s);
        s_g()->apply(&c, acts[i]);
        KZ_CHECK(depth < PNS_MAX_HOPS);
        tg->path[depth] = (uint8_t)(acts[i] / KH_POINTS);
        tg->path[depth + 1] = (uint8_t)(acts[i] % KH_POINTS);
        if (s_g()->mid_turn(&c))
            s_hops(tg, &c, depth + 1);
        else
            s_emit(tg, &c, depth + 1);
    }
}

int pns_turns(const pns_pos *p, pns_turn *out)
{
    game_state s;
    if (s_state(p, &s))
        return 0;
    turn_gen tg = {.out = out};
    s_hops(&tg, &s, 0);
    return tg.n;
}

void pns_turn_format(const pns_turn *t, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    /* R21 lets '-' and 'x' stand for any hop: 'x' joins a chain of hops (all
     * captures), '-' a single hop (a simple move or one capture). */
    bool capture = t->nhops > 1;
    for (int i = 0; i <= t->nhops && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%d", i == 0 ? "" : capture ? "x" : "-",
                                t->hop[i]);
}

/* --- the transposition table ------------------------------------------------------ */

/* One entry: 32 bytes. Empty: all zero (a position always has pieces). */
typedef struct tt_entry {
    uint32_t black, white, kings; /* the position (the stored one of its mirror pair) */
    uint8_t side;                 /* 0 Black, 1 White to move */
    uint8_t claim;                /* X of the claim "X does not lose" */
    uint8_t pad;                  /* zero */
    uint8_t check;                /* check byte over the other fields */
    uint32_t pn, dn;              /* proof and disproof numbers (0: proven / disproven) */
    uint64_t work;                /* nodes expanded below it (replacement keeps the largest) */
} tt_entry;
_Static_assert(sizeof(tt_entry) == 32, "tt_entry is 32 bytes");

typedef struct tt_header {
    char magic[8];       /* TT_MAGIC */
    uint32_t version;    /* PNS_TT_VERSION */
    uint32_t entry_bytes;/* 32 */
    uint64_t entries;    /* a power of two */
    uint8_t zero[32];    /* reserved */
    uint64_t check;      /* mix64 chain over the bytes before */
} tt_header;
_Static_assert(sizeof(tt_header) == TT_HEADER, "tt_header is 64 bytes");

struct pns_tt {
    void *map;            /* the whole file (or anonymous memory) */
    size_t map_bytes;     /* its size */
    tt_entry *e;          /* (entries) */
    uint64_t mask;        /* entries / TT_BUCKET - 1: bucket index mask */
    uint64_t entries;     /* room */
    pns_stats st;         /* this process's figures */
    uint64_t used_est;    /* entries used, kept up to date by stores into empty slots */
};

static uint8_t s_check(const tt_entry *x)
{
    uint64_t h = mix64(((uint64_t)x->black << 32 | x->white) ^
                       mix64((uint64_t)x->kings << 32 | (uint64_t)x->side << 8 | x->claim) ^
                       mix64((uint64_t)x->pn << 32 | x->dn) ^ mix64(x->work + 1));
    return (uint8_t)(h | 1u); /* never 0: an all-zero entry is empty, not valid */
}

static uint64_t s_header_check(const tt_header *h)
{
    const uint8_t *b = (const uint8_t *)h;
    uint64_t x = 0x6b7a7474u;
    for (size_t i = 0; i < offsetof(tt_header, check); i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        x = mix64(x ^ w);
    }
    return x;
}

pns_tt *pns_tt_open(const char *path, uint64_t bytes, char *err, size_t errlen)
{
    bool anon = !path || !*path;
    int fd = -1;
    uint64_t entries;
    struct stat st;
    bool fresh = true;
    if (!anon && stat(path, &st) == 0) {
        fresh = false;
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, errlen, "%s: not a regular file", path);
            return NULL;
        }
        if ((uint64_t)st.st_size < TT_HEADER) {
            snprintf(err, errlen, "%s: %lld bytes, shorter than the header: not a "
                     "transposition table", path, (long long)st.st_size);
            return NULL;
        }
        fd = open(path, O_RDWR);
        if (fd < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return NULL;
        }
        tt_header h;
        if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
            snprintf(err, errlen, "%s: cannot read the header", path);
            close(fd);
            return NULL;
        }
        const char *why = NULL;
        if (memcmp(h.magic, TT_MAGIC, 8))
            why = "bad magic: not a transposition table";
        else if (h.version != PNS_TT_VERSION)
            why = "another format version";
        else if (s_header_check(&h) != h.check)
            why = "header checksum wrong";
        else if (h.entry_bytes != sizeof(tt_entry) || h.entries < TT_BUCKET ||
                 (h.entries & (h.entries - 1)) ||
                 h.entries > ((uint64_t)1 << 40))
            why = "bad entry size or count";
        else if ((uint64_t)st.st_size != TT_HEADER + h.entries * sizeof(tt_entry))
            why = "file size does not match the header (truncated?)";
        if (why) {
            snprintf(err, errlen, "%s: %s", path, why);
            close(fd);
            return NULL;
        }
        entries = h.entries;
    } else {
        if (bytes < TT_MIN_BYTES)
            bytes = TT_MIN_BYTES;
        entries = 1;
        while (entries * 2 * sizeof(tt_entry) <= bytes)
            entries *= 2;
        if (!anon) {
            fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
            if (fd < 0) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return NULL;
            }
            if (ftruncate(fd, (off_t)(TT_HEADER + entries * sizeof(tt_entry)))) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                close(fd);
                unlink(path);
                return NULL;
            }
        }
    }
    size_t map_bytes = TT_HEADER + entries * sizeof(tt_entry);
    void *map = anon ? mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                     : mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map %zu bytes: %s", anon ? "(memory)" : path,
                 map_bytes, strerror(errno));
        return NULL;
    }
    if (fresh) {
        tt_header h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, TT_MAGIC, 8);
        h.version = PNS_TT_VERSION;
        h.entry_bytes = sizeof(tt_entry);
        h.entries = entries;
        h.check = s_header_check(&h);
        memcpy(map, &h, sizeof h);
    }
    pns_tt *t = xcalloc(1, sizeof *t);
    t->map = map;
    t->map_bytes = map_bytes;
    t->e = (tt_entry *)((uint8_t *)map + TT_HEADER);
    t->entries = entries;
    t->mask = entries / TT_BUCKET - 1;
    t->st.entries = entries;
    return t;
}

void pns_tt_close(pns_tt **t)
{
    if (!t || !*t)
        return;
    msync((*t)->map, (*t)->map_bytes, MS_SYNC);
    munmap((*t)->map, (*t)->map_bytes);
    free(*t);
    *t = NULL;
}

void pns_tt_stats(pns_tt *t, pns_stats *out)
{
    uint64_t used = 0, proven = 0, disproven = 0, damaged = 0;
    for (uint64_t i = 0; i < t->entries; i++) {
        const tt_entry *x = &t->e[i];
        if (!x->black && !x->white)
            continue;
        if (x->check != s_check(x)) {
            damaged++;
            continue;
        }
        used++;
        proven += x->pn == 0;
        disproven += x->dn == 0;
    }
    *out = t->st;
    out->used = used;
    out->proven = proven;
    out->disproven = disproven;
    if (damaged > out->damaged)
        out->damaged = damaged;
}

static tt_entry *s_bucket(pns_tt *t, const pns_pos *c, int claim)
{
    uint64_t h = mix64(((uint64_t)c->black << 32 | c->white) ^
                       mix64((uint64_t)c->kings << 2 | c->side << 1 | (uint64_t)claim));
    return &t->e[(h & t->mask) * TT_BUCKET];
}

static bool s_match(const tt_entry *x, const pns_pos *c, int claim)
{
    return x->black == c->black && x->white == c->white && x->kings == c->kings &&
           x->side == c->side && x->claim == claim;
}

/* The entry of a canonical position, or NULL. */
static tt_entry *s_find(pns_tt *t, const pns_pos *c, int claim)
{
    tt_entry *b = s_bucket(t, c, claim);
    for (int i = 0; i < TT_BUCKET; i++) {
        if (s_match(&b[i], c, claim)) {
            if (b[i].check != s_check(&b[i])) {
                t->st.damaged++;
                return NULL;
            }
            return &b[i];
        }
    }
    return NULL;
}

int pns_tt_lookup(pns_tt *t, const pns_pos *p, int claim, uint32_t *pn, uint32_t *dn)
{
    pns_pos c = s_canon(p);
    tt_entry *e = s_find(t, &c, claim);
    if (!e)
        return KZ_ENOTFOUND;
    *pn = e->pn;
    *dn = e->dn;
    return 0;
}

int pns_tt_win_length(pns_tt *t, const pns_pos *p, int claim, uint64_t *turns)
{
    pns_pos c = s_canon(p);
    tt_entry *e = s_find(t, &c, claim);
    if (!e || e->dn != 0)
        return KZ_ENOTFOUND;
    *turns = e->work;
    return 0;
}

/* Stores (pn, dn, work) for a canonical position. A full bucket gives up
 * its least-worked unsolved entry; when all four are solved, nothing is
 * stored (the search finds the node again later). */
static void s_store(pns_tt *t, const pns_pos *c, int claim, uint32_t pn, uint32_t dn,
                    uint64_t work)
{
    tt_entry *b = s_bucket(t, c, claim), *slot = NULL;
    for (int i = 0; i < TT_BUCKET && !slot; i++)
        if (s_match(&b[i], c, claim))
            slot = &b[i];
    if (!slot)
        for (int i = 0; i < TT_BUCKET && !slot; i++)
            if ((!b[i].black && !b[i].white) || b[i].check != s_check(&b[i])) {
                slot = &b[i];
                t->used_est++;
            }
    if (!slot) {
        for (int i = 0; i < TT_BUCKET; i++) {
            if (b[i].pn == 0 || b[i].dn == 0)
                continue;
            if (!slot || b[i].work < slot->work)
                slot = &b[i];
        }
        if (!slot || (slot->work > work && pn != 0 && dn != 0))
            return;
    }
    tt_entry x = {c->black, c->white, c->kings, (uint8_t)c->side, (uint8_t)claim, 0, 0,
                  pn, dn, work};
    x.check = s_check(&x);
    *slot = x;
}

/* --- the search --------------------------------------------------------------------- */

/* A child of a node during the search. */
typedef struct kid {
    pns_pos canon;  /* the canonical position */
    uint32_t pn, dn;/* its numbers from X's side of the claim, as last looked at */
    uint32_t spn, sdn; /* what its last search returned (if the table lost it) */
    uint8_t fixed;  /* 1: a leaf (R12 or a table): pn, dn never change */
    uint8_t seen;   /* 1: searched at least once from here (spn, sdn valid) */
    int16_t init;   /* heuristic start value (material), for ordering new nodes */
} kid;

typedef struct solver {
    pns_tt *t;
    const pns_opts *o;
    int claim;
    int tb_n;                               /* pieces the tables cover */
    kid *kids;                              /* (PNS_MAX_DEPTH, PNS_MAX_TURNS) */
    pns_turn *turns;                        /* (PNS_MAX_TURNS) scratch */
    pns_pos path[PNS_MAX_DEPTH];            /* canonical positions on the path */
    uint16_t onpath[1 << 16];               /* counts by hash: a quick "maybe on the path" */
    uint64_t nodes;                         /* expansions in this search */
    double t0, next_progress;               /* timing */
    bool stopped;                           /* a budget or the stop flag ended the search */
    uint32_t root_pn, root_dn;              /* the root's numbers when last computed */
    int repairs;                            /* failed extractions */
} solver;

static unsigned s_phash(const pns_pos *c)
{
    return (unsigned)(mix64(((uint64_t)c->black << 32 | c->white) ^ c->kings ^
                            (uint64_t)c->side << 40) & 0xffffu);
}

static bool s_on_path(const solver *sv, int depth, const pns_pos *c)
{
    if (!sv->onpath[s_phash(c)])
        return false;
    for (int i = 0; i < depth; i++)
        if (s_same(&sv->path[i], c))
            return true;
    return false;
}

static uint32_t s_add(uint32_t a, uint32_t b)
{
    uint64_t s = (uint64_t)a + b;
    return s >= PNS_INF ? PNS_INF - 1 : (uint32_t)s;
}

/* A leaf's value for X: 1 X does not lose, 0 X loses, -1 not a leaf. The
 * mover without pieces or legal actions loses (R12); a table position is
 * valued at count 0. */
static int s_leaf(solver *sv, const pns_pos *p)
{
    uint32_t mover = p->side ? p->white : p->black, other = p->side ? p->black : p->white;
    if (!mover)
        return (int)p->side != sv->claim;
    if (!other)
        return (int)p->side == sv->claim; /* cannot happen after a legal turn; for roots */
    if (s_pieces(p) > sv->tb_n)
        return -1;
    game_state s;
    if (s_state(p, &s))
        return -1;
    tb_value v;
    sv->t->st.probes++;
    if (tb_probe(sv->o->tables, &s, &v))
        return -1;
    int x = (int)p->side == sv->claim ? v.wdl : -v.wdl;
    return x >= 0;
}

/* Material from X's view: men 1, kings 3. */
static int s_material(const solver *sv, const pns_pos *p)
{
    uint32_t x = sv->claim ? p->white : p->black, y = sv->claim ? p->black : p->white;
    return __builtin_popcount(x) + 2 * __builtin_popcount(x & p->kings) -
           __builtin_popcount(y) - 2 * __builtin_popcount(y & p->kings);
}

static void s_progress(solver *sv)
{
    uint32_t pn = sv->root_pn, dn = sv->root_dn;
    double now = time_now();
    if (sv->o->max_seconds > 0 && now - sv->t0 > sv->o->max_seconds)
        sv->stopped = true;
    if (sv->o->stop && *sv->o->stop)
        sv->stopped = true;
    if (sv->o->progress && now >= sv->next_progress) {
        pns_progress pr = {pn, dn, sv->nodes, now - sv->t0, sv->t->used_est, sv->repairs};
        sv->o->progress(&pr, sv->o->arg);
        sv->next_progress = now + (sv->o->progress_seconds > 0 ? sv->o->progress_seconds : 1);
    }
}

/* Step 1 of a node: its children with their leaf values or table entries. */
static int s_expand(solver *sv, int depth, const pns_pos *p, kid *kids)
{
    int n = pns_turns(p, sv->turns);
    for (int i = 0; i < n; i++) {
        kid *k = &kids[i];
        k->canon = s_canon(&sv->turns[i].to);
        k->seen = 0;
        int leaf = s_leaf(sv, &k->canon);
        k->fixed = leaf >= 0;
        if (leaf >= 0) {
            k->pn = leaf ? 0 : PNS_INF;
            k->dn = leaf ? PNS_INF : 0;
        }
        int m = s_material(sv, &k->canon);
        k->init = (int16_t)m;
    }
    (void)depth;
    return n;
}

/* The children's current numbers (the table, the path, the start values). */
static void s_look(solver *sv, int depth, kid *kids, int n)
{
    for (int i = 0; i < n; i++) {
        kid *k = &kids[i];
        if (k->fixed)
            continue;
        if (s_on_path(sv, depth + 1, &k->canon)) {
            k->pn = 0; /* a repetition: an endless play is a draw (docs/solve.md) */
            k->dn = PNS_INF;
            continue;
        }
        tt_entry *e = s_find(sv->t, &k->canon, sv->claim);
        if (e) {
            k->pn = e->pn;
            k->dn = e->dn;
        } else if (k->seen) {
            k->pn = k->spn;
            k->dn = k->sdn;
        } else {
            /* df-pn+ start values: material makes a proof likelier for the
             * side ahead. */
            int m = k->init;
            k->pn = 1 + (uint32_t)(m < 0 ? -m : 0);
            k->dn = 1 + (uint32_t)(m > 0 ? m : 0);
        }
    }
}

static uint32_t s_eps(uint32_t x)
{
    uint64_t y = (uint64_t)x + x / 4 + 1; /* the 1 + epsilon trick, epsilon = 1/4 */
    return y >= PNS_INF ? PNS_INF - 1 : (uint32_t)y;
}

/* The opponent's win length at a disproven node: 1 + the longest of the
 * children's (X to move: every child is disproven) or 1 + the shortest
 * disproven child's (the opponent to move). A child lost from the table
 * counts 1 + a large number, so that it is never preferred to a known one. */
static uint64_t s_win_length(solver *sv, const kid *kids, int n, bool or_node)
{
    uint64_t best = or_node ? 0 : UINT64_MAX;
    for (int i = 0; i < n; i++) {
        uint64_t len;
        if (kids[i].fixed) {
            if (kids[i].dn != 0)
                continue;
            len = 0;
        } else {
            tt_entry *e = s_find(sv->t, &kids[i].canon, sv->claim);
            if (!e || e->dn != 0) {
                if (!or_node)
                    continue;
                len = PNS_INF;
            } else {
                len = e->work;
            }
        }
        if (or_node ? len > best : len < best)
            best = len;
    }
    return best == UINT64_MAX ? PNS_INF : best + 1;
}

/* Multiple iterative deepening at one node (Nagai's MID). */
static void s_mid(solver *sv, int depth, const pns_pos *c, uint32_t thpn, uint32_t thdn,
                  uint32_t *out_pn, uint32_t *out_dn)
{
    bool or_node = (int)c->side == sv->claim;
    uint64_t nodes0 = sv->nodes++;
    if ((sv->nodes & 1023) == 0) {
        s_progress(sv);
        if (sv->o->max_nodes && sv->nodes >= sv->o->max_nodes)
            sv->stopped = true;
    }
    if (depth >= PNS_MAX_DEPTH - 1) {
        /* Too deep: left open with large numbers, so that the search looks elsewhere. */
        *out_pn = *out_dn = PNS_INF / 2;
        return;
    }
    kid *kids = &sv->kids[(size_t)depth * PNS_MAX_TURNS];
    int n = s_expand(sv, depth, c, kids);
    uint32_t pn, dn;
    if (n == 0) {
        /* R12: the mover has no legal action and loses. */
        pn = or_node ? PNS_INF : 0;
        dn = or_node ? 0 : PNS_INF;
        s_store(sv->t, c, sv->claim, pn, dn, or_node ? 0 : 1);
        *out_pn = pn;
        *out_dn = dn;
        return;
    }
    sv->path[depth] = *c;
    sv->onpath[s_phash(c)]++;
    for (;;) {
        s_look(sv, depth, kids, n);
        /* Step 2. The node's numbers, the best child and the runner-up. */
        int best = -1;
        /* The other number is the weak sum (WPNS: the largest plus one for each
         * further open child), not the sum: in a graph with cycles and
         * transpositions the sum counts shared subtrees again at every turn
         * of a cycle and grows without bound. */
        uint32_t b1 = PNS_INF, b2 = PNS_INF, sum = 0, wmax = 0, other_best = 0;
        int open = 0;
        for (int i = 0; i < n; i++) {
            uint32_t v = or_node ? kids[i].pn : kids[i].dn;
            uint32_t w = or_node ? kids[i].dn : kids[i].pn;
            if (w > 0) {
                open++;
                if (w > wmax)
                    wmax = w;
            }
            if (v < b1 || (v == b1 && best >= 0 && w > (or_node ? kids[best].dn : kids[best].pn))) {
                b2 = b1;
                b1 = v;
                best = i;
            } else if (v < b2) {
                b2 = v;
            }
        }
        sum = open ? s_add(wmax, (uint32_t)open - 1) : 0;
        if (sum >= PNS_INF - 1 && b1 > 0)
            sum = PNS_INF - 1;
        for (int i = 0; i < n; i++)
            if ((or_node ? kids[i].dn : kids[i].pn) >= PNS_INF)
                sum = PNS_INF; /* one "never" child makes the sum never */
        pn = or_node ? b1 : sum;
        dn = or_node ? sum : b1;
        if (pn == 0)
            dn = PNS_INF;
        if (dn == 0)
            pn = PNS_INF;
        if (pn >= thpn || dn >= thdn || sv->stopped)
            break;
        /* Step 3. Thresholds for the best child, and into it. */
        kid *k = &kids[best];
        uint32_t cpn, cdn;
        other_best = or_node ? k->dn : k->pn;
        if (or_node) {
            cpn = thpn < s_eps(b2) ? thpn : s_eps(b2);
            uint64_t t = (uint64_t)thdn - dn + other_best;
            cdn = t >= PNS_INF ? PNS_INF : (uint32_t)t;
        } else {
            cdn = thdn < s_eps(b2) ? thdn : s_eps(b2);
            uint64_t t = (uint64_t)thpn - pn + other_best;
            cpn = t >= PNS_INF ? PNS_INF : (uint32_t)t;
        }
        s_mid(sv, depth + 1, &k->canon, cpn, cdn, &k->spn, &k->sdn);
        k->seen = 1;
    }
    if (depth == 0) {
        sv->root_pn = pn;
        sv->root_dn = dn;
    }
    sv->onpath[s_phash(c)]--;
    /* A disproven entry keeps, instead of its work, the length in turns of
     * the opponent's win (the loser delaying, the winner hurrying): the win
     * certificate follows falling lengths, so it has no cycle. */
    s_store(sv->t, c, sv->claim, pn, dn, dn == 0 ? s_win_length(sv, kids, n, or_node)
                                                 : sv->nodes - nodes0);
    *out_pn = pn;
    *out_dn = dn;
}

/* --- extraction --------------------------------------------------------------------- */

/* The set of positions of the certificate being extracted: canonical
 * position -> index, open addressing; and each member's parent (for repairs). */
typedef struct cset {
    pns_pos *key;     /* (cap) */
    int64_t *val;     /* (cap) index, -1 empty */
    uint64_t cap;     /* a power of two */
    uint64_t n;       /* members */
    pns_pos *pos;     /* (room) members in order: the position as reached */
    int64_t *parent;  /* (room) the member that needs it, -1 for the root */
    uint64_t room;    /* allocated members */
} cset;

static void s_cset_grow(cset *s);

static int64_t *s_cset_slot(cset *s, const pns_pos *c)
{
    uint64_t h = mix64(((uint64_t)c->black << 32 | c->white) ^
                       mix64(c->kings | (uint64_t)c->side << 32));
    for (uint64_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->val[i] < 0) {
            s->key[i] = *c;
            return &s->val[i];
        }
        if (s_same(&s->key[i], c))
            return &s->val[i];
    }
}

static int64_t s_cset_find(cset *s, const pns_pos *c)
{
    return *s_cset_slot(s, c);
}

static int64_t s_cset_add(cset *s, const pns_pos *reached, int64_t parent)
{
    if (2 * (s->n + 1) > s->cap)
        s_cset_grow(s);
    pns_pos c = s_canon(reached);
    int64_t *v = s_cset_slot(s, &c);
    if (*v >= 0)
        return *v;
    if (s->n == s->room) {
        s->room = s->room ? 2 * s->room : 1024;
        s->pos = realloc(s->pos, s->room * sizeof *s->pos);
        s->parent = realloc(s->parent, s->room * sizeof *s->parent);
        KZ_CHECK(s->pos && s->parent);
    }
    *v = (int64_t)s->n;
    s->pos[s->n] = *reached;
    s->parent[s->n] = parent;
    return (int64_t)s->n++;
}

static void s_cset_grow(cset *s)
{
    uint64_t old = s->cap;
    pns_pos *ok = s->key;
    int64_t *ov = s->val;
    s->cap = old ? 2 * old : 4096;
    s->key = xmalloc(s->cap * sizeof *s->key);
    s->val = xmalloc(s->cap * sizeof *s->val);
    for (uint64_t i = 0; i < s->cap; i++)
        s->val[i] = -1;
    for (uint64_t i = 0; i < old; i++)
        if (ov[i] >= 0)
            *s_cset_slot(s, &ok[i]) = ov[i];
    free(ok);
    free(ov);
}

static void s_cset_free(cset *s)
{
    free_all(s->key, s->val, s->pos, s->parent);
    memset(s, 0, sizeof *s);
}

static bool s_member(cset *set, const pns_pos *reached)
{
    pns_pos c = s_canon(reached);
    return set->cap && s_cset_find(set, &c) >= 0;
}

static bool s_tt_proven(solver *sv, const pns_pos *reached)
{
    pns_pos c = s_canon(reached);
    tt_entry *e = s_find(sv->t, &c, sv->claim);
    return e && e->pn == 0;
}

/* Reopens member i and the members that led to it (their proofs rested on it). */
static void s_reopen(solver *sv, cset *set, int64_t i)
{
    for (; i >= 0; i = set->parent[i]) {
        pns_pos c = s_canon(&set->pos[i]);
        s_store(sv->t, &c, sv->claim, 1, 1, 1);
        sv->t->st.repairs++;
    }
}

/* A certificate's first lines (with out) after stats is zeroed: 0 or KZ_EIO. */
static int s_cert_header(const solver *sv, FILE *out, const char *claim, pns_cert_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    if (!out)
        return 0;
    int w = fprintf(out, "kz-solve-certificate 1\nclaim %s\ntables %d\n", claim, sv->tb_n);
    if (w < 0)
        return KZ_EIO;
    stats->bytes += (uint64_t)w;
    return 0;
}

/* A certificate's node p: its line (with out: the position, the claim and,
 * at the prover's turn, the turn chosen, sv->turns[chosen]; -1: none), then
 * counted. 0 or KZ_EIO. */
static int s_cert_node(const solver *sv, FILE *out, const pns_pos *p, const char *claim,
                       int chosen, pns_cert_stats *stats)
{
    if (out) {
        char pos[32], turn[80] = "";
        pns_pos_format(p, pos, sizeof pos);
        if (chosen >= 0)
            pns_turn_format(&sv->turns[chosen], turn, sizeof turn);
        int w = fprintf(out, "%s %s%s%s\n", pos, claim, chosen >= 0 ? " " : "", turn);
        if (w < 0)
            return KZ_EIO;
        stats->bytes += (uint64_t)w;
    }
    stats->nodes++;
    return 0;
}

/* Counts q, a leaf the game ended at, as a table leaf (won by the side
 * that just moved, within the tables' pieces) or an end leaf. */
static void s_count_end(const solver *sv, const pns_pos *q, pns_cert_stats *stats)
{
    if (s_pieces(q) <= sv->tb_n && (q->side ? q->white : q->black))
        stats->table_leaves++;
    else
        stats->end_leaves++;
}

static int s_extract(solver *sv, const pns_pos *root, FILE *out, pns_cert_stats *stats)
{
    const char *claim = sv->claim ? "white-not-lose" : "black-not-lose";
    if (s_cert_header(sv, out, claim, stats))
        return KZ_EIO;
    cset set = {0};
    s_cset_add(&set, root, -1);
    int rc = 0;
    for (uint64_t i = 0; i < set.n; i++) {
        pns_pos p = set.pos[i];
        bool or_node = (int)p.side == sv->claim;
        int n = pns_turns(&p, sv->turns);
        int chosen = -1;
        if (or_node) {
            /* Prefer an R12 win, a table position, a member, then a proven node. */
            int rank = 9;
            for (int j = 0; j < n && rank > 0; j++) {
                pns_pos *q = &sv->turns[j].to;
                int leaf = s_leaf(sv, q), r;
                if (leaf == 1)
                    r = (q->side ? q->white : q->black) ? 1 : 0;
                else if (leaf == 0)
                    continue;
                else if (s_member(&set, q))
                    r = 2;
                else if (s_tt_proven(sv, q))
                    r = 3;
                else
                    continue;
                if (r < rank) {
                    rank = r;
                    chosen = j;
                }
            }
            if (chosen < 0) {
                s_reopen(sv, &set, (int64_t)i);
                rc = KZ_ENOTFOUND;
                break;
            }
            pns_pos *q = &sv->turns[chosen].to;
            if (s_leaf(sv, q) == 1)
                s_count_end(sv, q, stats);
            else
                s_cset_add(&set, q, (int64_t)i);
            stats->or_nodes++;
        } else {
            for (int j = 0; j < n; j++) {
                pns_pos *q = &sv->turns[j].to;
                int leaf = s_leaf(sv, q);
                if (leaf == 1) {
                    stats->table_leaves++;
                    continue;
                }
                if (leaf == 0 || !(s_member(&set, q) || s_tt_proven(sv, q))) {
                    s_reopen(sv, &set, (int64_t)i);
                    rc = KZ_ENOTFOUND;
                    break;
                }
                s_cset_add(&set, q, (int64_t)i);
            }
            if (rc)
                break;
            if (n == 0)
                stats->end_leaves++;
            stats->and_nodes++;
        }
        if ((rc = s_cert_node(sv, out, &p, claim, or_node ? chosen : -1, stats)))
            break;
    }
    s_cset_free(&set);
    return rc;
}

/* The win certificate of the opponent of X from a root where "X does not
 * lose" is disproven: at the winner's turn the disproven child with the
 * shortest win, at the loser's every child. */
static int s_extract_win(solver *sv, const pns_pos *root, FILE *out, pns_cert_stats *stats)
{
    int winner = 1 - sv->claim;
    const char *claim = winner ? "white-wins" : "black-wins";
    if (s_cert_header(sv, out, claim, stats))
        return KZ_EIO;
    cset set = {0};
    s_cset_add(&set, root, -1);
    int rc = 0;
    for (uint64_t i = 0; i < set.n && !rc; i++) {
        pns_pos p = set.pos[i];
        bool winner_moves = (int)p.side == winner;
        int n = pns_turns(&p, sv->turns), chosen = -1;
        uint64_t best = UINT64_MAX;
        for (int j = 0; j < n; j++) {
            pns_pos *q = &sv->turns[j].to;
            int leaf = s_leaf(sv, q);
            uint64_t len;
            if (leaf == 0) {
                len = 0;
            } else if (leaf == 1) {
                len = UINT64_MAX;
            } else {
                pns_pos c = s_canon(q);
                tt_entry *e = s_find(sv->t, &c, sv->claim);
                len = e && e->dn == 0 ? e->work : UINT64_MAX;
            }
            if (winner_moves) {
                if (len < best) {
                    best = len;
                    chosen = j;
                }
            } else if (len == UINT64_MAX) {
                rc = KZ_ENOTFOUND;
                break;
            } else if (leaf == 0) {
                s_count_end(sv, q, stats);
            } else {
                s_cset_add(&set, q, (int64_t)i);
            }
        }
        if (rc)
            break;
        if (winner_moves) {
            if (chosen < 0) {
                rc = KZ_ENOTFOUND;
                break;
            }
            pns_pos *q = &sv->turns[chosen].to;
            if (best == 0 && s_leaf(sv, q) == 0)
                s_count_end(sv, q, stats);
            else
                s_cset_add(&set, q, (int64_t)i);
            stats->or_nodes++;
        } else {
            stats->and_nodes++;
        }
        if ((rc = s_cert_node(sv, out, &p, claim, winner_moves ? chosen : -1, stats)))
            break;
    }
    s_cset_free(&set);
    return rc;
}

static solver *s_solver_new(pns_tt *t, const pns_opts *o)
{
    solver *sv = xcalloc(1, sizeof *sv);
    sv->t = t;
    sv->o = o;
    sv->claim = o->claim;
    sv->tb_n = o->tables ? tb_pieces(o->tables) : 0;
    sv->kids = xmalloc((size_t)PNS_MAX_DEPTH * PNS_MAX_TURNS * sizeof *sv->kids);
    sv->turns = xmalloc(PNS_MAX_TURNS * sizeof *sv->turns);
    sv->t0 = time_now();
    sv->next_progress = sv->t0 + (o->progress_seconds > 0 ? o->progress_seconds : 1);
    return sv;
}

static void s_solver_free(solver **sv)
{
    free_all((*sv)->kids, (*sv)->turns, *sv);
    *sv = NULL;
}

/* One extraction (s_extract or s_extract_win) on a solver of its own. */
static int s_extract_with(int (*extract)(solver *, const pns_pos *, FILE *, pns_cert_stats *),
                          pns_tt *t, const pns_pos *root, const pns_opts *o, FILE *out,
                          pns_cert_stats *stats)
{
    solver *sv = s_solver_new(t, o);
    int rc = extract(sv, root, out, stats);
    s_solver_free(&sv);
    return rc;
}

int pns_extract(pns_tt *t, const pns_pos *root, const pns_opts *o, FILE *out,
                pns_cert_stats *stats)
{
    return s_extract_with(s_extract, t, root, o, out, stats);
}

int pns_extract_win(pns_tt *t, const pns_pos *root, const pns_opts *o, FILE *out,
                    pns_cert_stats *stats)
{
    return s_extract_with(s_extract_win, t, root, o, out, stats);
}

int pns_solve(pns_tt *t, const pns_pos *root, const pns_opts *o, int *outcome)
{
    game_state st;
    *outcome = PNS_OPEN;
    if (s_state(root, &st))
        return KZ_EINVAL;
    solver *sv = s_solver_new(t, o);
    pns_pos c = s_canon(root);
    sv->root_pn = sv->root_dn = 1;
    while (!sv->stopped) {
        uint32_t pn, dn;
        s_mid(sv, 0, &c, PNS_INF, PNS_INF, &pn, &dn);
        if (dn == 0) {
            *outcome = PNS_DISPROVEN;
            break;
        }
        if (pn == 0) {
            /* The marks may rest on repetitions of a path since left: only a
             * closed set counts (docs/solve.md). */
            pns_cert_stats cs;
            if (s_extract(sv, root, NULL, &cs) == 0) {
                *outcome = PNS_PROVEN;
                break;
            }
            sv->repairs++;
            /* A failed extraction's walk is work too: counted against the
             * budget, or a search that keeps repairing a large set runs far
             * past it (a minute at 200,000 nodes was seen: kz solve referee). */
            sv->nodes += cs.nodes;
            if (sv->o->max_nodes && sv->nodes >= sv->o->max_nodes)
                sv->stopped = true;
            s_progress(sv);
        }
    }
    t->st.nodes += sv->nodes;
    t->st.seconds += time_now() - sv->t0;
    if (o->progress) {
        pns_progress pr = {sv->root_pn, sv->root_dn, sv->nodes, time_now() - sv->t0,
                           sv->t->used_est, sv->repairs};
        o->progress(&pr, o->arg);
    }
    s_solver_free(&sv);
    return 0;
}
