/* storecheck: checks a store page by page without LMDB, and salvages what
 * is readable. See storecheck.h.
 *
 * LMDB's file format (lmdb 0.9, mdb.c; native byte order, this machine's):
 *   page      16-byte header: pgno u64, pad u16, flags u16, then lower u16
 *             and upper u16 (branch, leaf) or the page count u32 (the first
 *             page of an overflow run); then lower - 16 bytes of u16 node
 *             offsets; the nodes lie between upper and the page's end.
 *   node      8-byte header: lo u16, hi u16, flags u16, key size u16; then
 *             the key, then (leaf) the value or, with F_BIGDATA, the u64
 *             number of its overflow page. Data size = lo | hi << 16; a
 *             branch node's child page = lo | hi << 16 | flags << 32.
 *   meta      pages 0 and 1 (flags P_META), after the header: magic u32,
 *             version u32, address u64, map size u64, two tree records (the
 *             freelist, the main tree), last page u64, transaction id u64.
 *             LMDB uses the one with the larger transaction id.
 *   tree      48 bytes: pad u32 (the page size in the freelist's record),
 *             flags u16, depth u16, branch, leaf and overflow page counts,
 *             entries, root page (all u64; no root: all bits set).
 * The main tree's leaves name the databases (F_SUBDATA: the value is their
 * tree record); the freelist maps a transaction id to the pages it freed (a
 * count, then that many page numbers, descending). */
#include "data/storecheck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/store.h"
#include "common/util.h"
#include "data/validate.h"
#include "net/wire.h"

#define PAGE_HEADER 16
#define NODE_HEADER 8
#define META_OFFSET PAGE_HEADER
#define TREE_BYTES 48
#define MAX_DEPTH 32            /* LMDB's cursor stack */
#define MAX_KEY 511             /* LMDB's largest key */
#define MAX_VALUE (1ull << 30)  /* a larger value is damage (models are at most 64 MiB) */
#define MDB_MAGIC 0xBEEFC0DEu
#define MDB_VERSION 1
#define NO_PAGE (~(uint64_t)0)
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define P_META 0x08
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02
#define F_DUPDATA 0x04
#define INTEGERKEY 0x08         /* the freelist's keys compare as integers */
#define SALVAGE_BATCH 512       /* entries written per transaction */

enum { DB_MODELS, DB_GAMES, DB_POSITIONS, DB_DEDUP, DB_META, DB_N, DB_MAIN = -1, DB_FREE = -2 };
static const char *const s_db_names[DB_N] = {"models", "games", "positions", "dedup", "meta"};
static const char *const s_counters[5] = {"next_game", "next_pos", "first_pos", "next_model",
                                          "best"};

/* A tree record. */
typedef struct tree {
    uint32_t pad;      /* the page size, in the freelist's record */
    uint16_t flags;    /* database flags */
    uint16_t depth;    /* levels, 0 when empty */
    uint64_t branch;   /* branch pages */
    uint64_t leaf;     /* leaf pages */
    uint64_t overflow; /* overflow pages */
    uint64_t entries;  /* leaf nodes */
    uint64_t root;     /* root page, NO_PAGE when empty */
} tree;

/* A meta page. */
typedef struct meta {
    uint32_t magic, version; /* MDB_MAGIC, MDB_VERSION */
    uint64_t mapsize;        /* bytes */
    tree free, main;         /* the freelist, the main tree */
    uint64_t last;           /* last page in use */
    uint64_t txnid;          /* its transaction */
} meta;

/* A copy being written (salvage). */
typedef struct copy {
    store *dst;                   /* the new store */
    store_raw e[DB_N][SALVAGE_BATCH]; /* pending entries per database */
    uint8_t *data[DB_N];          /* their bytes (keys and values), owned */
    size_t used[DB_N], cap[DB_N]; /* bytes used, allocated */
    size_t n[DB_N];               /* entries pending */
    int rc;                       /* the first write error */
    uint64_t copied[DB_N];        /* entries queued, by database */
    uint64_t pos_base;            /* the first position's new sequence */
    uint64_t pos_next;            /* the next one's */
    uint64_t scanned[DB_N];       /* entries copied by the leaf scan, by database */
    uint64_t scanned_pages;       /* leaf pages it read */
} copy;

/* A set of u64 (open addressing, key + 1 stored: 0 is empty). */
typedef struct u64set {
    uint64_t *slot;               /* (cap) */
    size_t cap, n;                /* slots (a power of two), used */
} u64set;

typedef struct checker {
    const storecheck_opts *o;     /* options */
    storecheck_result *r;         /* counters */
    bool quiet;                   /* report nothing (salvage's second walk) */
    int fd;                       /* the data file */
    uint32_t psize;               /* page size */
    uint64_t npages;              /* pages in use: 0 .. last */
    uint8_t *seen;                /* (npages bits) pages reached */
    uint8_t *freed;               /* (npages bits) pages in the freelist */
    uint8_t *pages;               /* (MAX_DEPTH + 1, psize) one page per level */
    unsigned max_nodes;           /* nodes a page can hold at most */
    const uint8_t **node_key;     /* (MAX_DEPTH + 1, max_nodes) per level: each node's key */
    uint16_t *node_ksz;           /* (MAX_DEPTH + 1, max_nodes) its size */
    uint8_t *node_ok;             /* (MAX_DEPTH + 1, max_nodes) it checked out */
    uint8_t *big;                 /* (big_cap) an overflow value */
    size_t big_cap;
    meta m;                       /* the meta page used */

    /* The tree being walked. */
    const char *name;             /* for messages */
    int db;                       /* DB_*, DB_MAIN, DB_FREE */
    bool intkey;                  /* integer keys */
    int depth;                    /* its levels */
    uint64_t n_branch, n_leaf, n_over, n_entries; /* counted */
    bool damaged;                 /* a page or node was skipped */
    uint8_t last[MAX_KEY + 1];    /* the last leaf key */
    size_t last_len;              /* its bytes */
    bool has_last;                /* one was seen */

    /* The databases (from the main tree). */
    tree dbs[DB_N];               /* their records */
    bool has_db[DB_N];            /* found */

    /* Contents. */
    uint64_t counter[5];          /* s_counters' values */
    bool has_counter[5];          /* found and readable */
    uint64_t *game_seq;           /* (n_games) sequences of the games read, ascending */
    uint8_t (*game_id)[16];       /* (n_games) their ids */
    uint8_t *game_indexed;        /* (n_games) a dedup entry names it */
    size_t n_games, cap_games;
    uint64_t pos_expect;          /* the next position sequence expected */
    uint64_t pos_good;            /* positions that decode */
    bool pos_any;                 /* one was read */
    uint32_t max_model;           /* highest model version that checks out */
    uint32_t best_found;          /* the best counter's model checked out */
    uint32_t best_promoted;       /* highest promoted or initial model that checks out */
    uint64_t max_game;            /* highest game sequence read + 1 */
    validator *val;               /* replays records (made at the first game) */
    char game[GAME_NAME_CHARS + 1]; /* the store's game (meta "game"), "" unknown */
    store_batch *scratch;         /* decodes positions */
    copy *cp;                     /* salvage: the destination, or NULL */

    /* Salvage's leaf scan (a broken tree): entries copied, by their source keys. */
    u64set got_games, got_positions, got_models; /* sequences, sequences, versions */
    uint64_t scan_max[5];         /* the largest value of each counter on any leaf */
    bool scan_has[5];             /* one was seen */
    uint64_t file_pages;          /* pages in the data file (a torn copy: beyond last) */
} checker;

/* --- a set of numbers ------------------------------------------------------------- */

static bool s_set_has(const u64set *t, uint64_t k)
{
    if (!t->cap)
        return false;
    for (size_t i = (size_t)(k * 0x9E3779B97F4A7C15ull) & (t->cap - 1);;
         i = (i + 1) & (t->cap - 1)) {
        if (t->slot[i] == 0)
            return false;
        if (t->slot[i] == k + 1)
            return true;
    }
}

/* Adds k; false when it was there already. */
static bool s_set_add(u64set *t, uint64_t k)
{
    if (s_set_has(t, k))
        return false;
    if (2 * (t->n + 1) > t->cap) {
        u64set g = {xcalloc(t->cap ? t->cap * 2 : 1024, sizeof *g.slot), t->cap ? t->cap * 2 : 1024,
                    0};
        for (size_t i = 0; i < t->cap; i++)
            if (t->slot[i])
                s_set_add(&g, t->slot[i] - 1);
        free(t->slot);
        *t = g;
    }
    size_t i = (size_t)(k * 0x9E3779B97F4A7C15ull) & (t->cap - 1);
    while (t->slot[i])
        i = (i + 1) & (t->cap - 1);
    t->slot[i] = k + 1;
    t->n++;
    return true;
}

static void s_set_free(u64set *t)
{
    free(t->slot);
    *t = (u64set){0};
}

/* --- reports ---------------------------------------------------------------------- */

static void s_vproblem(checker *c, const char *fmt, va_list ap)
{
    c->r->problems++;
    if (c->quiet || !c->o->problem)
        return;
    char line[512], shown[sizeof line * 4];
    vsnprintf(line, sizeof line, fmt, ap);
    /* Names and details come from a damaged file: every byte that is not
     * printable ASCII is shown as \xNN, never written raw to a terminal. */
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)line; *p && k + 5 < sizeof shown; p++)
        if (*p >= 0x20 && *p < 0x7f && *p != '\\')
            shown[k++] = (char)*p;
        else
            k += (size_t)snprintf(shown + k, sizeof shown - k, "\\x%02x", *p);
    shown[k] = 0;
    c->o->problem(c->o->ctx, shown);
}

/* A problem: counted, and said through the options' problem callback. */
static void s_problem(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_problem(checker *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_vproblem(c, fmt, ap);
    va_end(ap);
}

/* A damaged entry: a problem, and counted among the bad entries. */
static void s_bad_entry(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_bad_entry(checker *c, const char *fmt, ...)
{
    c->r->bad_entries++;
    va_list ap;
    va_start(ap, fmt);
    s_vproblem(c, fmt, ap);
    va_end(ap);
}

/* Hex of up to 16 bytes of a key, for messages. */
static const char *s_hex(const uint8_t *k, size_t n, char *buf, size_t cap)
{
    size_t m = n > 16 ? 16 : n, at = 0;
    for (size_t i = 0; i < m && at + 3 < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%02x", k[i]);
    if (n > m && at + 4 < cap)
        snprintf(buf + at, cap - at, "...");
    return buf;
}

/* --- reading ---------------------------------------------------------------------- */

/* Reads n bytes at off. true when all were read. */
static bool s_pread(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static bool s_bit(const uint8_t *bits, uint64_t i)
{
    return bits[i >> 3] >> (i & 7) & 1;
}

static void s_set_bit(uint8_t *bits, uint64_t i)
{
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static void s_tree_parse(const uint8_t *p, tree *t)
{
    t->pad = host_get32(p);
    t->flags = host_get16(p + 4);
    t->depth = host_get16(p + 6);
    t->branch = host_get64(p + 8);
    t->leaf = host_get64(p + 16);
    t->overflow = host_get64(p + 24);
    t->entries = host_get64(p + 32);
    t->root = host_get64(p + 40);
}

/* --- the meta pages ------------------------------------------------------------- */

/* Reads meta page i (page size psize) into *m. NULL, or why it is not one. */
static const char *s_meta_read(int fd, uint32_t psize, int i, uint64_t file_bytes, meta *m)
{
    uint8_t buf[PAGE_HEADER + 160];
    if (!s_pread(fd, buf, sizeof buf, (uint64_t)i * psize))
        return "cannot be read (the file is too short)";
    if (host_get64(buf) != (uint64_t)i || !(host_get16(buf + 10) & P_META))
        return "is not marked as a meta page";
    const uint8_t *p = buf + META_OFFSET;
    m->magic = host_get32(p);
    m->version = host_get32(p + 4);
    m->mapsize = host_get64(p + 16);
    s_tree_parse(p + 24, &m->free);
    s_tree_parse(p + 24 + TREE_BYTES, &m->main);
    m->last = host_get64(p + 24 + 2 * TREE_BYTES);
    m->txnid = host_get64(p + 32 + 2 * TREE_BYTES);
    if (m->magic != MDB_MAGIC)
        return "has not LMDB's magic number";
    if (m->version != MDB_VERSION)
        return "names another LMDB format version";
    if (m->free.pad != psize)
        return "names another page size";
    if (m->last < 2 || m->last >= file_bytes / psize)
        return "names a last page beyond the end of the file";
    if (m->mapsize < (m->last + 1) * psize || m->mapsize > (1ull << 46))
        return "names an impossible map size";
    const tree *t[2] = {&m->free, &m->main};
    for (int k = 0; k < 2; k++) {
        if (t[k]->root == NO_PAGE ? t[k]->depth != 0 || t[k]->entries != 0
                                  : t[k]->root < 2 || t[k]->root > m->last || t[k]->depth < 1 ||
                                        t[k]->depth > MAX_DEPTH)
            return k ? "has a main tree record out of bounds" : "has a freelist record out of "
                                                                "bounds";
    }
    return NULL;
}

/* --- the walk ---------------------------------------------------------------------- */

static int s_cmp(const checker *c, const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    if (c->intkey && al == 8 && bl == 8) {
        uint64_t x = host_get64(a), y = host_get64(b);
        return x < y ? -1 : x > y;
    }
    size_t n = al < bl ? al : bl;
    int d = memcmp(a, b, n);
    return d ? d : al < bl ? -1 : al > bl;
}

typedef void leaf_fn(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                     size_t vlen, uint16_t flags);

/* The value of an F_BIGDATA node: the overflow run at pgno holding vlen
 * bytes, read into c->big. NULL when it is damaged (reported). */
static const uint8_t *s_overflow(checker *c, uint64_t pgno, uint64_t vlen, uint64_t from)
{
    uint64_t need = (PAGE_HEADER - 1 + vlen) / c->psize + 1;
    if (vlen > MAX_VALUE || pgno < 2 || pgno >= c->npages || need > c->npages - pgno) {
        s_problem(c, "%s: page %llu names an overflow value of %llu bytes at page %llu, out of "
                  "the file", c->name, (unsigned long long)from, (unsigned long long)vlen,
                  (unsigned long long)pgno);
        return NULL;
    }
    for (uint64_t k = 0; k < need; k++)
        if (s_bit(c->seen, pgno + k)) {
            s_problem(c, "%s: page %llu: its overflow pages %llu.. are reached twice", c->name,
                      (unsigned long long)from, (unsigned long long)pgno);
            return NULL;
        }
    size_t bytes = (size_t)(need * c->psize);
    if (bytes > c->big_cap) {
        uint8_t *nb = realloc(c->big, bytes);
        if (!nb) {
            s_problem(c, "%s: no memory for a value of %llu bytes", c->name,
                      (unsigned long long)vlen);
            return NULL;
        }
        c->big = nb;
        c->big_cap = bytes;
    }
    if (!s_pread(c->fd, c->big, bytes, pgno * c->psize)) {
        s_problem(c, "%s: overflow pages %llu.. cannot be read", c->name,
                  (unsigned long long)pgno);
        return NULL;
    }
    if (host_get64(c->big) != pgno || host_get16(c->big + 10) != P_OVERFLOW ||
        host_get32(c->big + 12) != need) {
        s_problem(c, "%s: page %llu is not the overflow run of %llu pages its parent %llu names",
                  c->name, (unsigned long long)pgno, (unsigned long long)need,
                  (unsigned long long)from);
        return NULL;
    }
    for (uint64_t k = 0; k < need; k++)
        s_set_bit(c->seen, pgno + k);
    c->n_over += need;
    c->r->visited += need;
    return c->big + PAGE_HEADER;
}

/* Walks the page pgno at level (1 = the root) whose keys must lie in
 * [lo, hi) (NULL: unbounded), calling leaf for every readable entry. */
static void s_walk(checker *c, uint64_t pgno, int level, const uint8_t *lo, size_t lol,
                   const uint8_t *hi, size_t hil, leaf_fn *leaf, uint64_t parent)
{
    unsigned long long pg = (unsigned long long)pgno, par = (unsigned long long)parent;
    if (pgno < 2 || pgno >= c->npages) {
        s_problem(c, "%s: page %llu names a child page %llu out of the file (pages 2..%llu)",
                  c->name, par, pg, (unsigned long long)c->npages - 1);
        c->damaged = true;
        return;
    }
    if (s_bit(c->seen, pgno)) {
        s_problem(c, "%s: page %llu is reached twice (from page %llu): a loop, or two owners",
                  c->name, pg, par);
        c->damaged = true;
        return;
    }
    s_set_bit(c->seen, pgno);
    c->r->visited++;
    uint8_t *p = c->pages + (size_t)level * c->psize;
    if (!s_pread(c->fd, p, c->psize, pgno * c->psize)) {
        s_problem(c, "%s: page %llu cannot be read", c->name, pg);
        c->damaged = true;
        return;
    }
    uint16_t flags = host_get16(p + 10), lower = host_get16(p + 12), upper = host_get16(p + 14);
    bool is_leaf = flags == P_LEAF, is_branch = flags == P_BRANCH;
    const char *why = NULL;
    if (host_get64(p) != pgno)
        why = "says it is another page";
    else if (!is_leaf && !is_branch)
        why = "is neither a branch nor a leaf page (its flags are damaged)";
    else if (is_leaf != (level == c->depth))
        why = is_leaf ? "is a leaf above the tree's depth" : "is a branch at the leaves' depth";
    else if (lower < PAGE_HEADER || lower > upper || upper > c->psize || (lower & 1) ||
             lower == PAGE_HEADER)
        why = "has its free-space bounds damaged";
    if (why) {
        s_problem(c, "%s: page %llu %s (flags 0x%x, lower %u, upper %u)", c->name, pg, why,
                  flags, lower, upper);
        c->damaged = true;
        return;
    }
    unsigned n = (unsigned)(lower - PAGE_HEADER) / 2;
    if (is_branch)
        c->n_branch++;
    else
        c->n_leaf++;
    /* Step 1. The nodes: inside the page, keys in order and in bounds. */
    const uint8_t **key = c->node_key + (size_t)level * c->max_nodes;
    uint16_t *ksz = c->node_ksz + (size_t)level * c->max_nodes;
    uint8_t *ok = c->node_ok + (size_t)level * c->max_nodes;
    const uint8_t *prev = NULL;
    size_t prevl = 0;
    if (n > c->max_nodes) {
        s_problem(c, "%s: page %llu holds %u nodes, more than a page can", c->name, pg, n);
        c->damaged = true;
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        ok[i] = 0;
        unsigned off = host_get16(p + PAGE_HEADER + 2 * i);
        if (off < upper || off + NODE_HEADER > c->psize) {
            s_problem(c, "%s: page %llu: node %u lies outside the page (offset %u)", c->name,
                      pg, i, off);
            c->damaged = true;
            continue;
        }
        const uint8_t *nd = p + off;
        ksz[i] = host_get16(nd + 6);
        key[i] = nd + NODE_HEADER;
        if (ksz[i] > MAX_KEY || off + NODE_HEADER + ksz[i] > c->psize) {
            s_problem(c, "%s: page %llu: node %u has a key of %u bytes that does not fit",
                      c->name, pg, i, ksz[i]);
            c->damaged = true;
            continue;
        }
        /* A branch's first key stands for "below the next": not compared. */
        if (is_branch && i == 0) {
            ok[i] = 1;
            continue;
        }
        char hex[40];
        if ((prev && s_cmp(c, prev, prevl, key[i], ksz[i]) >= 0) ||
            (lo && s_cmp(c, key[i], ksz[i], lo, lol) < 0) ||
            (hi && s_cmp(c, key[i], ksz[i], hi, hil) >= 0)) {
            s_problem(c, "%s: page %llu: key %s of node %u is out of order", c->name, pg,
                      s_hex(key[i], ksz[i], hex, sizeof hex), i);
            c->damaged = true;
            continue;
        }
        ok[i] = 1;
        prev = key[i];
        prevl = ksz[i];
    }
    /* Step 2. A branch: its children, each within its keys. */
    if (is_branch) {
        for (unsigned i = 0; i < n; i++) {
            if (!ok[i]) {
                continue;
            }
            const uint8_t *nd = key[i] - NODE_HEADER;
            uint64_t child = host_get16(nd) | (uint64_t)host_get16(nd + 2) << 16 |
                             (uint64_t)host_get16(nd + 4) << 32;
            unsigned j = i + 1;
            while (j < n && !ok[j])
                j++;
            const uint8_t *clo = i == 0 ? lo : key[i];
            size_t clol = i == 0 ? lol : ksz[i];
            const uint8_t *chi = j < n ? key[j] : hi;
            size_t chil = j < n ? ksz[j] : hil;
            s_walk(c, child, level + 1, clo, clol, chi, chil, leaf, pgno);
        }
        return;
    }
    /* Step 3. A leaf: its values, in order across the tree. */
    for (unsigned i = 0; i < n; i++) {
        if (!ok[i])
            continue;
        const uint8_t *nd = key[i] - NODE_HEADER;
        uint16_t nflags = host_get16(nd + 4);
        uint64_t vlen = host_get16(nd) | (uint64_t)host_get16(nd + 2) << 16;
        const uint8_t *val = key[i] + ksz[i];
        char hex[40];
        if (nflags & ~(F_BIGDATA | F_SUBDATA) || ((nflags & F_SUBDATA) && c->db != DB_MAIN)) {
            s_problem(c, "%s: page %llu: node %u (key %s) has flags 0x%x this store never "
                      "writes", c->name, pg, i, s_hex(key[i], ksz[i], hex, sizeof hex), nflags);
            c->damaged = true;
            continue;
        }
        if (c->has_last && s_cmp(c, c->last, c->last_len, key[i], ksz[i]) >= 0) {
            s_problem(c, "%s: page %llu: key %s comes after a larger one", c->name, pg,
                      s_hex(key[i], ksz[i], hex, sizeof hex));
            c->damaged = true;
            continue;
        }
        if (nflags & F_BIGDATA) {
            if ((size_t)(val - p) + 8 > c->psize) {
                s_problem(c, "%s: page %llu: node %u's overflow page number does not fit",
                          c->name, pg, i);
                c->damaged = true;
                continue;
            }
            val = s_overflow(c, host_get64(val), vlen, pgno);
            if (!val) {
                c->damaged = true;
                continue;
            }
        } else if ((size_t)(val - p) + vlen > c->psize) {
            s_problem(c, "%s: page %llu: node %u (key %s) has a value of %llu bytes that does "
                      "not fit", c->name, pg, i, s_hex(key[i], ksz[i], hex, sizeof hex),
                      (unsigned long long)vlen);
            c->damaged = true;
            continue;
        }
        memcpy(c->last, key[i], ksz[i]);
        c->last_len = ksz[i];
        c->has_last = true;
        c->n_entries++;
        leaf(c, key[i], ksz[i], val, (size_t)vlen, nflags);
    }
}

/* Walks one tree (name for messages), comparing its counts with t's. */
static void s_tree(checker *c, const char *name, int db, const tree *t, leaf_fn *leaf)
{
    c->name = name;
    c->db = db;
    c->intkey = t->flags & INTEGERKEY;
    c->depth = t->depth;
    c->n_branch = c->n_leaf = c->n_over = c->n_entries = 0;
    c->damaged = false;
    c->has_last = false;
    if (t->root == NO_PAGE) {
        if (t->depth || t->entries || t->branch || t->leaf || t->overflow)
            s_problem(c, "%s: an empty tree with counts (entries %llu)", name,
                      (unsigned long long)t->entries);
        return;
    }
    if (t->depth < 1 || t->depth > MAX_DEPTH) {
        s_problem(c, "%s: a tree of depth %u", name, t->depth);
        return;
    }
    s_walk(c, t->root, 1, NULL, 0, NULL, 0, leaf, 0);
    if (!c->damaged && (c->n_branch != t->branch || c->n_leaf != t->leaf ||
                        c->n_over != t->overflow || c->n_entries != t->entries))
        s_problem(c, "%s: the tree holds %llu entries in %llu/%llu/%llu branch/leaf/overflow "
                  "pages, its record says %llu in %llu/%llu/%llu", name,
                  (unsigned long long)c->n_entries, (unsigned long long)c->n_branch,
                  (unsigned long long)c->n_leaf, (unsigned long long)c->n_over,
                  (unsigned long long)t->entries, (unsigned long long)t->branch,
                  (unsigned long long)t->leaf, (unsigned long long)t->overflow);
}

/* --- the trees' entries ------------------------------------------------------------- */

/* Queues one entry for the copy (salvage); key and val are copied. */
static void s_copy(checker *c, int db, const void *key, size_t klen, const void *val,
                   size_t vlen)
{
    copy *cp = c->cp;
    if (!cp || cp->rc)
        return;
    if (cp->n[db] == SALVAGE_BATCH || cp->used[db] + klen + vlen > cp->cap[db]) {
        if (cp->n[db]) {
            /* The entries point into data: write them before it moves. */
            cp->rc = store_put_raw(cp->dst, s_db_names[db], cp->e[db], cp->n[db]);
            cp->n[db] = cp->used[db] = 0;
            if (cp->rc)
                return;
        }
        if (klen + vlen > cp->cap[db]) {
            size_t cap = klen + vlen > (4u << 20) ? klen + vlen : (4u << 20);
            free(cp->data[db]);
            cp->data[db] = malloc(cap);
            cp->cap[db] = cp->data[db] ? cap : 0;
            if (!cp->data[db]) {
                cp->rc = KZ_ENOMEM;
                return;
            }
        }
    }
    uint8_t *at = cp->data[db] + cp->used[db];
    memcpy(at, key, klen);
    memcpy(at + klen, val, vlen);
    cp->e[db][cp->n[db]++] = (store_raw){at, klen, at + klen, vlen};
    cp->used[db] += klen + vlen;
    cp->copied[db]++;
}

static void s_copy_flush(checker *c)
{
    copy *cp = c->cp;
    for (int db = 0; cp && db < DB_N && !cp->rc; db++)
        if (cp->n[db]) {
            cp->rc = store_put_raw(cp->dst, s_db_names[db], cp->e[db], cp->n[db]);
            cp->n[db] = cp->used[db] = 0;
        }
}

static void s_leaf_main(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                        size_t vlen, uint16_t flags)
{
    char name[80];
    text_printable(name, sizeof name, (const char *)key, klen);
    if (!(flags & F_SUBDATA) || vlen != TREE_BYTES) {
        s_problem(c, "main tree: entry '%s' is not a database record", name);
        return;
    }
    for (int db = 0; db < DB_N; db++)
        if (klen == strlen(s_db_names[db]) && !memcmp(key, s_db_names[db], klen)) {
            s_tree_parse(val, &c->dbs[db]);
            c->has_db[db] = true;
            return;
        }
    s_problem(c, "main tree: a database named '%s', which this store never makes", name);
}

static void s_leaf_free(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                        size_t vlen, uint16_t flags)
{
    (void)flags;
    char hex[40];
    if (klen != 8 || vlen < 8 || vlen % 8 || host_get64(val) != vlen / 8 - 1) {
        s_problem(c, "freelist: entry %s is not a list of pages", s_hex(key, klen, hex,
                                                                          sizeof hex));
        return;
    }
    uint64_t n = host_get64(val), prev = NO_PAGE;
    for (uint64_t i = 1; i <= n; i++) {
        uint64_t pg = host_get64(val + 8 * i);
        const char *why = pg < 2 || pg >= c->npages ? "out of the file"
                          : pg >= prev              ? "out of order"
                          : s_bit(c->freed, pg)     ? "listed twice"
                          : s_bit(c->seen, pg)      ? "in use by a tree"
                                                    : NULL;
        if (why) {
            s_problem(c, "freelist: transaction %llu frees page %llu, %s",
                      (unsigned long long)host_get64(key), (unsigned long long)pg, why);
            return;
        }
        s_set_bit(c->freed, pg);
        prev = pg;
    }
}

static void s_leaf_meta(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                        size_t vlen, uint16_t flags)
{
    (void)flags;
    c->r->meta++;
    for (int k = 0; k < 5; k++)
        if (klen == strlen(s_counters[k]) && !memcmp(key, s_counters[k], klen)) {
            if (store_check_counter(val, vlen, &c->counter[k]) == 0)
                c->has_counter[k] = true;
            else
                s_bad_entry(c, "meta: the counter %s is damaged (%zu bytes)", s_counters[k], vlen);
            return;
        }
    if (klen == 4 && !memcmp(key, "game", 4)) {
        if (store_check_game_name(val, vlen)) {
            s_bad_entry(c, "meta: the store's game '%.*s' (%zu bytes) is not a game's name (1 to "
                        "%d of a-z, 0-9, _ and -): damaged", (int)(vlen < 40 ? vlen : 40),
                        (const char *)val, vlen, GAME_NAME_CHARS);
            return;
        }
        memcpy(c->game, val, vlen);
        c->game[vlen] = 0;
    }
    s_copy(c, DB_META, key, klen, val, vlen);
}

static void s_leaf_models(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                          size_t vlen, uint16_t flags)
{
    (void)flags;
    c->r->models++;
    store_model_info info;
    const uint8_t *blob;
    uint32_t v = klen == 4 ? (uint32_t)key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3] : 0;
    const char *why = klen != 4 ? "a key that is not a version"
                      : store_check_model(val, vlen, &info, &blob) ? "a damaged header"
                      : info.version != v                          ? "another version inside"
                      : wire_blob_checksum(blob, (size_t)info.blob_len) != info.checksum
                          ? "a blob that does not match its checksum"
                          : NULL;
    if (why) {
        s_bad_entry(c, "models: model %u has %s", v, why);
        return;
    }
    if (v > c->max_model)
        c->max_model = v;
    if (c->has_counter[4] && v == c->counter[4])
        c->best_found = v;
    if ((info.status == STORE_MODEL_PROMOTED || info.status == STORE_MODEL_INITIAL) &&
        v > c->best_promoted)
        c->best_promoted = v;
    if (c->cp)
        s_set_add(&c->got_models, v);
    s_copy(c, DB_MODELS, key, klen, val, vlen);
}

static void s_leaf_games(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                         size_t vlen, uint16_t flags)
{
    (void)flags;
    c->r->games++;
    char hex[40];
    if (klen != 8) {
        s_bad_entry(c, "games: key %s is not a game sequence", s_hex(key, klen, hex, sizeof hex));
        return;
    }
    uint64_t seq = be_get64(key);
    unsigned long long sq = (unsigned long long)seq;
    if (c->has_counter[0] && seq >= c->counter[0])
        s_problem(c, "games: game %llu is beyond the next sequence %llu", sq,
                  (unsigned long long)c->counter[0]);
    if (!c->val) {
        /* The rules: the caller's, else the store's game, else the default. */
        const game_def *g = c->o->g ? c->o->g : c->game[0] ? game_find(c->game) : game_default();
        if (!g) {
            s_bad_entry(c, "games: the store's game '%s' is not built into this program: its "
                        "records cannot be replayed", c->game);
            g = game_default();
        }
        validate_limits lim = {64u << 20, 1u << 20, 1e-3};
        c->val = validator_new(g, &lim);
        KZ_CHECK(c->val);
    }
    validate_result v;
    uint32_t models = c->has_counter[3] && c->counter[3] > 1 ? (uint32_t)(c->counter[3] - 1)
                                                             : UINT32_MAX - 1;
    int reason = validate_record(c->val, val, vlen, models, &v);
    if (reason != VALIDATE_OK || !v.has_id) {
        s_bad_entry(c, "games: game %llu does not replay through the rules (%s): %s", sq,
                    validate_reason_name(reason), v.detail);
        return;
    }
    if (c->n_games == c->cap_games) {
        size_t cap = c->cap_games ? c->cap_games * 2 : 1024;
        c->game_seq = realloc(c->game_seq, cap * sizeof *c->game_seq);
        c->game_id = realloc(c->game_id, cap * sizeof *c->game_id);
        c->game_indexed = realloc(c->game_indexed, cap);
        KZ_CHECK(c->game_seq && c->game_id && c->game_indexed);
        c->cap_games = cap;
    }
    c->game_seq[c->n_games] = seq;
    memcpy(c->game_id[c->n_games], v.game_id, 16);
    c->game_indexed[c->n_games] = 0;
    c->n_games++;
    if (seq + 1 > c->max_game)
        c->max_game = seq + 1;
    if (c->cp)
        s_set_add(&c->got_games, seq);
    s_copy(c, DB_GAMES, key, klen, val, vlen);
    uint8_t sk[8];
    be_put64(sk, seq);
    s_copy(c, DB_DEDUP, v.game_id, 16, sk, 8);
}

static void s_leaf_positions(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                             size_t vlen, uint16_t flags)
{
    (void)flags;
    c->r->positions++;
    char hex[40];
    if (klen != 8) {
        s_bad_entry(c, "positions: key %s is not a position sequence",
                    s_hex(key, klen, hex, sizeof hex));
        return;
    }
    uint64_t seq = be_get64(key);
    if (!c->pos_any && c->has_counter[2])
        c->pos_expect = c->counter[2];
    if ((c->pos_any || c->has_counter[2]) && seq != c->pos_expect)
        s_problem(c, "positions: %llu..%llu missing (sampling fails there)",
                  (unsigned long long)c->pos_expect, (unsigned long long)seq - 1);
    if (c->has_counter[1] && seq >= c->counter[1])
        s_problem(c, "positions: position %llu is beyond the next sequence %llu",
                  (unsigned long long)seq, (unsigned long long)c->counter[1]);
    c->pos_any = true;
    c->pos_expect = seq + 1;
    if (store_check_position(val, vlen, c->scratch)) {
        s_bad_entry(c, "positions: position %llu does not decode", (unsigned long long)seq);
        return;
    }
    if (c->cp) {
        uint8_t nk[8];
        s_set_add(&c->got_positions, seq);
        be_put64(nk, c->cp->pos_next++);
        s_copy(c, DB_POSITIONS, nk, 8, val, vlen);
    }
    c->pos_good++;
}

/* The position of seq among the games read, or -1. */
static long s_game_index(const checker *c, uint64_t seq)
{
    size_t lo = 0, hi = c->n_games;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->game_seq[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n_games && c->game_seq[lo] == seq ? (long)lo : -1;
}

static void s_leaf_dedup(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                         size_t vlen, uint16_t flags)
{
    (void)flags;
    c->r->dedup++;
    char hex[40];
    if (klen != 16 || vlen != 8) {
        s_bad_entry(c, "dedup: entry %s is not a game id and a sequence",
                    s_hex(key, klen, hex, sizeof hex));
        return;
    }
    uint64_t seq = be_get64(val);
    long i = s_game_index(c, seq);
    if (i < 0) {
        s_bad_entry(c, "dedup: game id %s names game %llu, which is not stored (an index entry "
                    "without its game: a resubmission of it would be acknowledged, not stored)",
                    s_hex(key, 16, hex, sizeof hex), (unsigned long long)seq);
        return;
    }
    if (memcmp(c->game_id[i], key, 16)) {
        s_bad_entry(c, "dedup: game id %s names game %llu, whose id is another",
                    s_hex(key, 16, hex, sizeof hex), (unsigned long long)seq);
        return;
    }
    c->game_indexed[i] = 1;
}

/* Entries of a tree walked for the structure only. */
static void s_leaf_none(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                        size_t vlen, uint16_t flags)
{
    (void)c, (void)key, (void)klen, (void)val, (void)vlen, (void)flags;
}

/* --- salvage's leaf scan ------------------------------------------------------------ */

/* A copy made while the store was written (a naive backup, a crash during
 * the copy) holds pages of several transactions: the meta page names a tree
 * whose pages were rewritten later, so the walk from it breaks off and finds
 * little or nothing. Yet every leaf page still holds whole entries. The scan
 * reads each page of the file; a leaf page (its own
 * number in its header, sane bounds) gives its entries, each recognised by
 * what it holds: a model (its header and checksum hold), a game (it replays
 * through the rules), a position (it decodes), a counter of meta (its name).
 * Entries already copied (the same key) are skipped: stale copies of a page
 * hold the same games and positions, which never change once written. */

/* The value of an F_BIGDATA node for the scan: the overflow run's bytes, or
 * NULL (no bounds or reach checks of the walk: any run in the file). */
static const uint8_t *s_scan_overflow(checker *c, uint64_t pgno, uint64_t vlen)
{
    uint64_t need = (PAGE_HEADER - 1 + vlen) / c->psize + 1;
    if (vlen > MAX_VALUE || pgno < 2 || pgno >= c->file_pages || need > c->file_pages - pgno)
        return NULL;
    size_t bytes = (size_t)(need * c->psize);
    if (bytes > c->big_cap) {
        uint8_t *nb = realloc(c->big, bytes);
        if (!nb)
            return NULL;
        c->big = nb;
        c->big_cap = bytes;
    }
    if (!s_pread(c->fd, c->big, bytes, pgno * c->psize) || host_get64(c->big) != pgno ||
        host_get16(c->big + 10) != P_OVERFLOW || host_get32(c->big + 12) != need)
        return NULL;
    return c->big + PAGE_HEADER;
}

/* One entry found by the scan: copied when it checks out and is new. */
static void s_scan_entry(checker *c, const uint8_t *key, size_t klen, const uint8_t *val,
                         size_t vlen)
{
    copy *cp = c->cp;
    for (int k = 0; k < 5; k++)
        if (klen == strlen(s_counters[k]) && !memcmp(key, s_counters[k], klen)) {
            uint64_t v;
            if (store_check_counter(val, vlen, &v) == 0 &&
                (!c->scan_has[k] || v > c->scan_max[k])) {
                c->scan_max[k] = v;
                c->scan_has[k] = true;
            }
            return;
        }
    store_model_info info;
    const uint8_t *blob;
    if (klen == 4 && store_check_model(val, vlen, &info, &blob) == 0) {
        uint32_t v = (uint32_t)key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3];
        if (info.version != v ||
            wire_blob_checksum(blob, (size_t)info.blob_len) != info.checksum ||
            !s_set_add(&c->got_models, v))
            return;
        if (v > c->max_model)
            c->max_model = v;
        if ((info.status == STORE_MODEL_PROMOTED || info.status == STORE_MODEL_INITIAL) &&
            v > c->best_promoted)
            c->best_promoted = v;
        cp->scanned[DB_MODELS]++;
        s_copy(c, DB_MODELS, key, klen, val, vlen);
        return;
    }
    if (klen != 8)
        return; /* dedup entries are made again from the games; meta blobs: the tree's */
    uint64_t seq = be_get64(key);
    validate_result v;
    if (!s_set_has(&c->got_games, seq) && c->val && vlen > 0 &&
        validate_record(c->val, val, vlen, UINT32_MAX - 1, &v) == VALIDATE_OK && v.has_id) {
        s_set_add(&c->got_games, seq);
        if (seq + 1 > c->max_game)
            c->max_game = seq + 1;
        cp->scanned[DB_GAMES]++;
        s_copy(c, DB_GAMES, key, klen, val, vlen);
        uint8_t sk[8];
        be_put64(sk, seq);
        s_copy(c, DB_DEDUP, v.game_id, 16, sk, 8);
        return;
    }
    /* A position of the sampling window (one pruned since is not wanted). */
    uint64_t first = c->has_counter[2] ? c->counter[2] : 0;
    if (seq < first || s_set_has(&c->got_positions, seq) ||
        store_check_position(val, vlen, c->scratch))
        return;
    s_set_add(&c->got_positions, seq);
    cp->scanned[DB_POSITIONS]++;
    uint8_t nk[8];
    be_put64(nk, cp->pos_next++);
    s_copy(c, DB_POSITIONS, nk, 8, val, vlen);
}

/* Reads every page of the file; copies the entries of leaf pages not copied
 * yet (the walk may have reached a page and refused some of its entries as
 * out of order: keys of two transactions' trees side by side). */
static void s_scan(checker *c)
{
    if (!c->val) {
        const game_def *g = c->o->g ? c->o->g : c->game[0] ? game_find(c->game) : game_default();
        validate_limits lim = {64u << 20, 1u << 20, 1e-3};
        c->val = validator_new(g ? g : game_default(), &lim);
        KZ_CHECK(c->val);
    }
    uint8_t *p = c->pages; /* level 0's buffer: the walk is over */
    for (uint64_t pg = 2; pg < c->file_pages && !c->cp->rc; pg++) {
        if (!s_pread(c->fd, p, c->psize, pg * c->psize))
            break;
        uint16_t flags = host_get16(p + 10), lower = host_get16(p + 12), upper = host_get16(p + 14);
        if (host_get64(p) != pg || flags != P_LEAF || lower <= PAGE_HEADER || lower > upper ||
            upper > c->psize || (lower & 1))
            continue;
        c->cp->scanned_pages++;
        unsigned n = (unsigned)(lower - PAGE_HEADER) / 2;
        for (unsigned i = 0; i < n; i++) {
            unsigned off = host_get16(p + PAGE_HEADER + 2 * i);
            if (off < upper || off + NODE_HEADER > c->psize)
                continue;
            const uint8_t *nd = p + off, *key = nd + NODE_HEADER;
            uint16_t nflags = host_get16(nd + 4), ksz = host_get16(nd + 6);
            uint64_t vlen = host_get16(nd) | (uint64_t)host_get16(nd + 2) << 16;
            if (ksz == 0 || ksz > MAX_KEY || off + NODE_HEADER + ksz > c->psize ||
                (nflags & ~F_BIGDATA))
                continue;
            const uint8_t *val = key + ksz;
            if (nflags & F_BIGDATA) {
                if (off + NODE_HEADER + ksz + 8u > c->psize)
                    continue;
                /* The run replaces c->big, not the page: the key stays valid. */
                val = s_scan_overflow(c, host_get64(val), vlen);
                if (!val)
                    continue;
            } else if (off + NODE_HEADER + ksz + vlen > c->psize) {
                continue;
            }
            s_scan_entry(c, key, ksz, val, (size_t)vlen);
        }
    }
}

/* --- a whole walk ---------------------------------------------------------------------- */

/* Walks everything; with pages_only, the entries' contents are not checked. */
static void s_walk_all(checker *c, bool pages_only)
{
    memset(c->seen, 0, (size_t)(c->npages / 8 + 1));
    memset(c->freed, 0, (size_t)(c->npages / 8 + 1));
    s_set_bit(c->seen, 0);
    s_set_bit(c->seen, 1);
    memset(c->has_db, 0, sizeof c->has_db);
    memset(c->has_counter, 0, sizeof c->has_counter);
    c->n_games = 0;
    c->game[0] = 0;
    validator_destroy(&c->val);
    c->pos_any = false;
    c->pos_good = 0;
    c->max_model = c->best_found = c->best_promoted = 0;
    c->max_game = 0;
    s_tree(c, "main tree", DB_MAIN, &c->m.main, s_leaf_main);
    static leaf_fn *const leaves[DB_N] = {s_leaf_models, s_leaf_games, s_leaf_positions,
                                          s_leaf_dedup, s_leaf_meta};
    /* meta first (the counters), dedup after games (their ids). */
    static const int order[DB_N] = {DB_META, DB_MODELS, DB_GAMES, DB_POSITIONS, DB_DEDUP};
    for (int k = 0; k < DB_N; k++) {
        int db = order[k];
        if (!c->has_db[db]) {
            s_problem(c, "the %s database is missing", s_db_names[db]);
            continue;
        }
        if (c->dbs[db].flags & ~INTEGERKEY) {
            s_problem(c, "%s: database flags 0x%x, which this store never sets", s_db_names[db],
                      c->dbs[db].flags);
            continue;
        }
        s_tree(c, s_db_names[db], db, &c->dbs[db], pages_only ? s_leaf_none : leaves[db]);
    }
    /* The freelist last: the pages it names must be in no tree. */
    s_tree(c, "freelist", DB_FREE, &c->m.free, s_leaf_free);
    if (pages_only)
        return;
    /* Step 2. What the entries say together. */
    uint64_t unindexed = 0;
    for (size_t i = 0; i < c->n_games; i++)
        if (!c->game_indexed[i] && unindexed++ < 10)
            s_problem(c, "games: game %llu has no dedup entry (a resubmission of it would be "
                      "stored twice)", (unsigned long long)c->game_seq[i]);
    if (unindexed > 10)
        s_problem(c, "games: %llu more games without a dedup entry",
                  (unsigned long long)unindexed - 10);
    if (c->has_counter[1] && c->pos_any && c->pos_expect < c->counter[1])
        s_problem(c, "positions: %llu..%llu missing (the next sequence is %llu)",
                  (unsigned long long)c->pos_expect, (unsigned long long)c->counter[1] - 1,
                  (unsigned long long)c->counter[1]);
    if (c->has_counter[4] && c->counter[4] && c->best_found != c->counter[4])
        s_problem(c, "models: the best model %llu is missing or damaged",
                  (unsigned long long)c->counter[4]);
    for (int k = 0; k < 5; k++)
        if (!c->has_counter[k] && c->has_db[DB_META])
            s_problem(c, "meta: the counter %s is missing", s_counters[k]);
}

/* Opens dir's data file, checks its meta pages, pins a snapshot and picks
 * its meta page. 0 (problems reported, c->npages 0 when nothing can be
 * walked), or ENOENT / KZ_EIO. */
static int s_open(checker *c, const char *dir, store_pin **pin)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    c->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (c->fd < 0)
        return errno == ENOENT ? ENOENT : KZ_EIO;
    struct stat sb;
    uint8_t head[PAGE_HEADER + 32];
    if (fstat(c->fd, &sb) || !S_ISREG(sb.st_mode))
        return KZ_EIO;
    if (!s_pread(c->fd, head, sizeof head, 0)) {
        s_problem(c, "data.mdb is %lld bytes: too short for LMDB's meta pages",
                  (long long)sb.st_size);
        return 0;
    }
    /* The page size from the first meta page (its freelist record's pad). */
    uint32_t psize = host_get32(head + META_OFFSET + 24);
    if (psize < 512 || psize > 65536 || (psize & (psize - 1))) {
        /* Damaged: LMDB writes the system's page size; meta 1 may say more. */
        s_problem(c, "meta page 0 names a page size of %u bytes (damaged)", psize);
        psize = (uint32_t)sysconf(_SC_PAGESIZE);
    }
    c->psize = c->r->page_size = psize;
    c->file_pages = (uint64_t)sb.st_size / psize;
    meta m[2];
    const char *why[2];
    for (int i = 0; i < 2; i++) {
        why[i] = s_meta_read(c->fd, psize, i, (uint64_t)sb.st_size, &m[i]);
        if (why[i])
            s_problem(c, "meta page %d %s (LMDB refuses the file, or may crash on it)", i,
                      why[i]);
    }
    if (why[0] && why[1])
        return 0;
    if (why[0] || why[1]) {
        /* LMDB refuses the file (it reads both), so no writer runs on it and
         * no snapshot needs holding: the other meta page's trees are walked,
         * and a salvage starts from them. */
        c->m = m[why[0] ? 1 : 0];
        c->r->txnid = c->m.txnid;
        c->npages = c->r->pages = c->m.last + 1;
        return 0;
    }
    /* The snapshot: LMDB's choice of meta page, held against a writer. */
    for (int attempt = 0; attempt < 5; attempt++) {
        uint64_t txnid;
        int rc = store_pin_open(dir, pin, &txnid);
        if (rc) {
            s_problem(c, "LMDB refuses the file: %s", err_str(rc));
            return 0;
        }
        for (int i = 0; i < 2; i++)
            if (!s_meta_read(c->fd, psize, i, (uint64_t)sb.st_size, &m[i]) &&
                m[i].txnid == txnid) {
                c->m = m[i];
                c->r->txnid = txnid;
                c->npages = m[i].last + 1;
                c->r->pages = c->npages;
                return 0;
            }
        store_pin_close(pin); /* two commits since: try again */
    }
    s_problem(c, "the store changes too fast to be checked while it is written: stop its "
              "coordinator first");
    return 0;
}

static void s_fini(checker *c, store_pin **pin)
{
    store_pin_close(pin);
    if (c->fd >= 0)
        close(c->fd);
    free_all(c->seen, c->freed, c->pages, c->node_key, c->node_ksz, c->node_ok, c->big, c->game_seq,
             c->game_id, c->game_indexed);
    s_set_free(&c->got_games);
    s_set_free(&c->got_positions);
    s_set_free(&c->got_models);
    validator_destroy(&c->val);
    store_batch_destroy(&c->scratch);
}

/* Sets up the checker; 0 or an error (nothing to walk: c->npages == 0). */
static int s_init(checker *c, const char *dir, const storecheck_opts *o, storecheck_result *r,
                  store_pin **pin)
{
    memset(c, 0, sizeof *c);
    memset(r, 0, sizeof *r);
    c->o = o;
    c->r = r;
    c->fd = -1;
    int rc = s_open(c, dir, pin);
    if (rc || (!c->npages && !c->file_pages))
        return rc;
    c->seen = xcalloc((size_t)(c->npages / 8 + 1), 1);
    c->freed = xcalloc((size_t)(c->npages / 8 + 1), 1);
    c->pages = xmalloc((size_t)(MAX_DEPTH + 1) * c->psize);
    c->max_nodes = (c->psize - PAGE_HEADER) / (NODE_HEADER + 2) + 1;
    size_t slots = (size_t)(MAX_DEPTH + 1) * c->max_nodes;
    c->node_key = xmalloc(slots * sizeof *c->node_key);
    c->node_ksz = xmalloc(slots * sizeof *c->node_ksz);
    c->node_ok = xmalloc(slots);
    c->scratch = store_batch_new(1);
    KZ_CHECK(c->scratch);
    return 0;
}

int storecheck_run(const char *dir, const storecheck_opts *o, storecheck_result *r)
{
    checker c;
    store_pin *pin = NULL;
    double t0 = time_now();
    int rc = s_init(&c, dir, o, r, &pin);
    if (!rc && c.npages)
        s_walk_all(&c, o->pages_only);
    r->seconds = time_now() - t0;
    s_fini(&c, &pin);
    return rc;
}

int storecheck_salvage(const char *src, const char *dst, const storecheck_opts *o,
                       storecheck_result *r, storecheck_salvaged *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dst);
    struct stat sb;
    if (!stat(path, &sb)) {
        memset(r, 0, sizeof *r);
        return KZ_EINVAL;
    }
    checker c;
    store_pin *pin = NULL;
    double t0 = time_now();
    int rc = s_init(&c, src, o, r, &pin);
    if (rc || c.file_pages < 3) {
        s_fini(&c, &pin);
        return rc ? rc : KZ_ECORRUPT;
    }
    /* Step 1. The check: what is readable, and how many positions. */
    s_walk_all(&c, false);
    uint64_t next_pos = c.has_counter[1] ? c.counter[1] : c.pos_expect;
    uint64_t good = c.pos_good;
    /* Step 2. The copy: the same walk again, quietly, writing. */
    store_options so;
    store_options_default(&so);
    so.no_sync = true; /* synced once at the end (store_close) */
    copy *cp = xcalloc(1, sizeof *cp);
    rc = store_open(&cp->dst, dst, &so);
    if (!rc) {
        cp->pos_base = cp->pos_next = next_pos >= good ? next_pos - good : 0;
        c.cp = cp;
        c.quiet = true;
        storecheck_result again;
        c.r = &again;
        memset(&again, 0, sizeof again);
        s_walk_all(&c, false);
        c.r = r;
        /* Step 2b. A broken tree: the leaf pages it did not reach. */
        if (r->problems)
            s_scan(&c);
        s_copy_flush(&c);
        rc = cp->rc;
    }
    /* Step 3. Counters that agree with what was copied. */
    if (!rc) {
        /* What the source held: its counters (the tree's, else the largest
         * any leaf holds: they only grow), else what was found. */
        uint64_t cnt[5];
        bool has[5];
        for (int k = 0; k < 5; k++) {
            has[k] = c.has_counter[k] || c.scan_has[k];
            cnt[k] = c.has_counter[k] ? c.counter[k] : c.scan_max[k];
            if (c.has_counter[k] && c.scan_has[k] && c.scan_max[k] > cnt[k] && !r->problems)
                cnt[k] = c.scan_max[k];
        }
        uint64_t next_game = has[0] && cnt[0] > c.max_game ? cnt[0] : c.max_game;
        uint32_t next_model = has[3] && cnt[3] > c.max_model && cnt[3] <= UINT32_MAX
                                  ? (uint32_t)cnt[3]
                                  : c.max_model + 1;
        uint32_t best = c.best_found ? c.best_found
                        : c.best_promoted ? c.best_promoted
                                          : c.max_model;
        uint64_t models_had = next_model ? next_model - 1 : 0;
        if (!c.max_model)
            next_model = 0; /* no model: the coordinator registers a new version 1 */
        rc = store_set_counters(cp->dst, next_game, cp->pos_next, cp->pos_base, next_model,
                                best);
        uint64_t models = c.got_models.n, games = c.got_games.n;
        uint64_t pos_had = has[1] && has[2] && cnt[1] >= cnt[2] ? cnt[1] - cnt[2] : 0;
        uint64_t pos_got = 0; /* copied positions of the source's window */
        for (size_t i = 0; i < c.got_positions.cap; i++)
            pos_got += c.got_positions.slot[i] && (!has[2] || c.got_positions.slot[i] - 1 >=
                                                                   cnt[2]) &&
                       (!has[1] || c.got_positions.slot[i] - 1 < cnt[1]);
        *out = (storecheck_salvaged){.models = cp->copied[DB_MODELS],
                                     .games = cp->copied[DB_GAMES],
                                     .positions = cp->copied[DB_POSITIONS],
                                     .meta = cp->copied[DB_META],
                                     .dropped = r->bad_entries,
                                     .best = best};
        out->scanned_pages = cp->scanned_pages;
        out->scanned_models = cp->scanned[DB_MODELS];
        out->scanned_games = cp->scanned[DB_GAMES];
        out->scanned_positions = cp->scanned[DB_POSITIONS];
        out->lost_models = models_had > models ? models_had - models : 0;
        out->lost_games = next_game > games ? next_game - games : 0;
        out->lost_positions = pos_had > pos_got ? pos_had - pos_got : 0;
    }
    store_close(&cp->dst);
    for (int db = 0; db < DB_N; db++)
        free(cp->data[db]);
    free(cp);
    r->seconds = time_now() - t0;
    s_fini(&c, &pin);
    return rc;
}
