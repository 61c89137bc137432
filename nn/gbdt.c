/* gbdt: tree models, their file form and the batch walker. See gbdt.h. */
#include "nn/gbdt.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "nn/filehead.h"

static const char s_magic[8] = {'K', 'Z', 'G', 'B', 'D', 'T', '\0', '\0'};
static const filehead_kind s_file = {s_magic, "not a GBDT model file (no KZGBDT magic)",
                                     "GBDT model", GBDT_FORMAT, GBDT_FORMAT, 0};

#define GAME_FIELD 32      /* bytes of the game name in the payload */
#define NODE_BYTES 16      /* bytes of one node in the payload */
#define MAX_TREES (1 << 24) /* trees in one forest at most */

/* One node. */
typedef struct node {
    int32_t feature; /* split feature, -1 for a leaf */
    float value;     /* the threshold (x < value goes to yes), or the leaf's value */
    uint32_t yes;    /* child for x < threshold (index in the forest's nodes) */
    uint32_t no;     /* the other child */
} node;

/* One forest. */
typedef struct forest {
    float base;      /* margin added to the sum of the trees */
    int n_trees;     /* trees */
    int n_nodes;     /* nodes of all trees */
    int depth;       /* the deepest tree's depth (nodes on its longest path) */
    uint32_t *roots; /* (n_trees) each tree's root */
    node *nodes;     /* (n_nodes) children after parents */
} forest;

struct gbdt {
    char game[GAME_FIELD]; /* the game's name */
    int planes, height, width, actions; /* C, H, W, A of the game */
    int features;      /* F: state features */
    model_meta meta;   /* version, parent, samples trained on (step), creation time */
    forest f[2];       /* value, policy */
};

bool gbdt_is_file(const uint8_t *buf, size_t len)
{
    return len >= sizeof s_magic && memcmp(buf, s_magic, sizeof s_magic) == 0;
}

int gbdt_feature_count(const game_def *g)
{
    return g->n_features > 0 ? g->n_features : g->planes * g->height * g->width;
}

void gbdt_features(const game_def *g, const float *planes, float *out)
{
    if (g->features)
        g->features(planes, out);
    else
        memcpy(out, planes, sizeof(float) * (size_t)g->planes * g->height * g->width);
}

gbdt *gbdt_new(const game_def *g)
{
    gbdt *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    snprintf(m->game, sizeof m->game, "%s", g->name);
    m->planes = g->planes;
    m->height = g->height;
    m->width = g->width;
    m->actions = g->action_count;
    m->features = gbdt_feature_count(g);
    return m;
}

static void s_forest_free(forest *f)
{
    free(f->roots);
    free(f->nodes);
    memset(f, 0, sizeof *f);
}

void gbdt_destroy(gbdt **pm)
{
    if (!pm || !*pm)
        return;
    s_forest_free(&(*pm)->f[0]);
    s_forest_free(&(*pm)->f[1]);
    free(*pm);
    *pm = NULL;
}

const model_meta *gbdt_get_meta(const gbdt *m) { return &m->meta; }
model_meta *gbdt_edit_meta(gbdt *m) { return &m->meta; }
const char *gbdt_game(const gbdt *m) { return m->game; }
int gbdt_tree_count(const gbdt *m, int head) { return m->f[head].n_trees; }
int gbdt_node_count(const gbdt *m, int head) { return m->f[head].n_nodes; }

void gbdt_describe(const gbdt *m, char *buf, size_t len)
{
    snprintf(buf, len, "gbdt value %d trees (%d nodes), policy %d trees (%d nodes), %d features",
             m->f[0].n_trees, m->f[0].n_nodes, m->f[1].n_trees, m->f[1].n_nodes, m->features);
}

/* --- Forests ----------------------------------------------------------------- */

/* The depth of every tree (children after parents: one pass from the end);
 * the deepest, or -1 when a child is not after its parent or out of range. */
static int s_depth(const forest *f)
{
    int *d = malloc(sizeof(int) * (size_t)(f->n_nodes ? f->n_nodes : 1));
    if (!d)
        return -1;
    int deepest = 0;
    for (int i = f->n_nodes - 1; i >= 0; i--) {
        const node *n = &f->nodes[i];
        if (n->feature < 0) {
            d[i] = 1;
            continue;
        }
        if (n->yes <= (uint32_t)i || n->no <= (uint32_t)i || n->yes >= (uint32_t)f->n_nodes ||
            n->no >= (uint32_t)f->n_nodes) {
            free(d);
            return -1;
        }
        d[i] = 1 + (d[n->yes] > d[n->no] ? d[n->yes] : d[n->no]);
    }
    for (int t = 0; t < f->n_trees; t++)
        if (d[f->roots[t]] > deepest)
            deepest = d[f->roots[t]];
    free(d);
    return deepest;
}

/* One parsed line of a dump: XGBoost's node id and the node with XGBoost's
 * child ids. */
typedef struct dump_node {
    int id;     /* XGBoost's node id, -1 for an absent one */
    node n;     /* yes/no: XGBoost's ids */
    int placed; /* index in the compact tree, -1 before placing */
} dump_node;

/* Parses one tree's text dump into nodes (indexed by XGBoost id). The
 * count of ids (max id + 1), or -1 with err. */
static int s_parse_tree(const char *text, dump_node **out, int n_features, char *err,
                        size_t errlen)
{
    int cap = 0, max_id = -1;
    dump_node *v = NULL;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        while (n && (*p == '\t' || *p == ' '))
            p++, n--;
        if (n == 0) {
            p += eol ? 1 : 0;
            if (!eol)
                break;
            continue;
        }
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, p, n);
        line[n] = 0;
        p = eol ? eol + 1 : p + n;
        int id, f, yes, no, used = 0;
        float x;
        dump_node d = {.placed = -1};
        if (sscanf(line, "%d:leaf=%f%n", &id, &x, &used) == 2 && used > 0) {
            d.n = (node){-1, x, 0, 0};
        } else if (sscanf(line, "%d:[f%d<%f] yes=%d,no=%d", &id, &f, &x, &yes, &no) == 5) {
            if (f < 0 || f >= n_features || yes < 0 || no < 0) {
                free(v);
                return err_set(err, errlen, KZ_EINVAL, "tree node '%.60s': feature or child "
                               "out of range (%d features)", line, n_features), -1;
            }
            d.n = (node){f, x, (uint32_t)yes, (uint32_t)no};
        } else {
            free(v);
            return err_set(err, errlen, KZ_EINVAL, "tree line '%.60s' does not parse", line), -1;
        }
        if (id < 0 || id > (1 << 24) || !isfinite(x)) {
            free(v);
            return err_set(err, errlen, KZ_EINVAL, "tree line '%.60s': bad id or value", line),
                   -1;
        }
        if (id >= cap) {
            int ncap = cap ? cap : 64;
            while (ncap <= id)
                ncap *= 2;
            dump_node *nv = realloc(v, sizeof *v * (size_t)ncap);
            if (!nv) {
                free(v);
                return err_set(err, errlen, KZ_ENOMEM, "out of memory for a tree"), -1;
            }
            for (int k = cap; k < ncap; k++)
                nv[k].id = -1;
            v = nv;
            cap = ncap;
        }
        d.id = id;
        v[id] = d;
        if (id > max_id)
            max_id = id;
    }
    if (max_id < 0 || v[0].id != 0) {
        free(v);
        return err_set(err, errlen, KZ_EINVAL, "a tree without a root"), -1;
    }
    *out = v;
    return max_id + 1;
}

/* Appends the tree in v (XGBoost ids) to f's nodes in preorder from id,
 * children after parents. The new index, or -1 (a missing child, a cycle,
 * too deep) with err. */
static int s_place(forest *f, int *cap, dump_node *v, int n, int id, int depth, char *err,
                   size_t errlen)
{
    if (id < 0 || id >= n || v[id].id < 0)
        return err_set(err, errlen, KZ_EINVAL, "a tree names node %d, which is not there", id),
               -1;
    if (v[id].placed >= 0 || depth > GBDT_MAX_DEPTH)
        return err_set(err, errlen, KZ_EINVAL, "a tree deeper than %d or with a cycle",
                       GBDT_MAX_DEPTH), -1;
    if (f->n_nodes == *cap) {
        int ncap = *cap ? 2 * *cap : 256;
        node *nn = realloc(f->nodes, sizeof *nn * (size_t)ncap);
        if (!nn)
            return err_set(err, errlen, KZ_ENOMEM, "out of memory for the trees"), -1;
        f->nodes = nn;
        *cap = ncap;
    }
    int at = f->n_nodes++;
    v[id].placed = at;
    f->nodes[at] = v[id].n;
    if (v[id].n.feature >= 0) {
        int yes = s_place(f, cap, v, n, (int)v[id].n.yes, depth + 1, err, errlen);
        if (yes < 0)
            return -1;
        int no = s_place(f, cap, v, n, (int)v[id].n.no, depth + 1, err, errlen);
        if (no < 0)
            return -1;
        f->nodes[at].yes = (uint32_t)yes;
        f->nodes[at].no = (uint32_t)no;
    }
    return at;
}

int gbdt_set_forest_from_dump(gbdt *m, int head, const char *const *dump, int n_trees,
                              float base, char *err, size_t errlen)
{
    assert(head == GBDT_VALUE || head == GBDT_POLICY);
    if (n_trees < 0 || n_trees > MAX_TREES || !isfinite(base))
        return err_set(err, errlen, KZ_EINVAL, "%d trees with base %g", n_trees, (double)base);
    forest f = {.base = base, .n_trees = n_trees};
    f.roots = malloc(sizeof *f.roots * (size_t)(n_trees ? n_trees : 1));
    if (!f.roots)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for the trees");
    int cap = 0, nf = m->features + (head == GBDT_POLICY);
    for (int t = 0; t < n_trees; t++) {
        dump_node *v = NULL;
        int n = s_parse_tree(dump[t], &v, nf, err, errlen);
        int root = n < 0 ? -1 : s_place(&f, &cap, v, n, 0, 1, err, errlen);
        free(v);
        if (root < 0) {
            s_forest_free(&f);
            return KZ_EINVAL;
        }
        f.roots[t] = (uint32_t)root;
    }
    f.depth = s_depth(&f);
    if (f.depth < 0) {
        s_forest_free(&f);
        return err_set(err, errlen, KZ_EINVAL, "out of memory or a bad tree");
    }
    s_forest_free(&m->f[head]);
    m->f[head] = f;
    return 0;
}

void gbdt_adopt_forests(gbdt *m, gbdt *from)
{
    assert(m->features == from->features && m->actions == from->actions);
    for (int k = 0; k < 2; k++) {
        s_forest_free(&m->f[k]);
        m->f[k] = from->f[k];
        memset(&from->f[k], 0, sizeof from->f[k]);
    }
}

/* The walk of one row through one tree. */
static inline float s_walk(const node *nodes, uint32_t i, const float *x)
{
    while (nodes[i].feature >= 0)
        i = x[nodes[i].feature] < nodes[i].value ? nodes[i].yes : nodes[i].no;
    return nodes[i].value;
}

float gbdt_predict_row(const gbdt *m, int head, const float *x)
{
    const forest *f = &m->f[head];
    float s = 0.0f;
    for (int t = 0; t < f->n_trees; t++)
        s += s_walk(f->nodes, f->roots[t], x);
    return f->base + s;
}

/* --- File form --------------------------------------------------------------- */

static uint64_t s_trees_checksum(const gbdt *m)
{
    uint64_t h = hash_bytes(m->game, sizeof m->game, 0x9bd7);
    for (int k = 0; k < 2; k++) {
        const forest *f = &m->f[k];
        uint8_t b[12];
        memcpy(b, &f->base, 4);
        le_put32(b + 4, (uint32_t)f->n_trees);
        le_put32(b + 8, (uint32_t)f->n_nodes);
        h = hash_bytes(b, sizeof b, h);
        for (int t = 0; t < f->n_trees; t++) {
            le_put32(b, f->roots[t]);
            h = hash_bytes(b, 4, h);
        }
        for (int i = 0; i < f->n_nodes; i++) {
            uint8_t nb[NODE_BYTES];
            le_put32(nb, (uint32_t)f->nodes[i].feature);
            memcpy(nb + 4, &f->nodes[i].value, 4);
            le_put32(nb + 8, f->nodes[i].yes);
            le_put32(nb + 12, f->nodes[i].no);
            h = hash_bytes(nb, sizeof nb, h);
        }
    }
    return h;
}

uint64_t gbdt_checksum(const gbdt *m) { return s_trees_checksum(m); }


int gbdt_to_bytes(const gbdt *m, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    size_t plen = GAME_FIELD + 5 * 4 + 2 * 4 + 3 * 8;
    for (int k = 0; k < 2; k++)
        plen += 12 + 4 * (size_t)m->f[k].n_trees + NODE_BYTES * (size_t)m->f[k].n_nodes;
    uint8_t *buf = calloc(1, GBDT_HEADER_BYTES + plen);
    if (!buf)
        return KZ_ENOMEM;
    uint8_t *p = buf + GBDT_HEADER_BYTES;
    memcpy(p, m->game, GAME_FIELD);
    p += GAME_FIELD;
    uint32_t dims[5] = {(uint32_t)m->planes, (uint32_t)m->height, (uint32_t)m->width,
                        (uint32_t)m->actions, (uint32_t)m->features};
    for (int k = 0; k < 5; k++, p += 4)
        le_put32(p, dims[k]);
    le_put32(p, m->meta.version);
    le_put32(p + 4, m->meta.parent);
    le_put64(p + 8, m->meta.step);
    le_put64(p + 16, (uint64_t)m->meta.created_ms);
    le_put64(p + 24, s_trees_checksum(m));
    p += 32;
    for (int k = 0; k < 2; k++) {
        const forest *f = &m->f[k];
        le_put_f32(p, f->base);
        le_put32(p + 4, (uint32_t)f->n_trees);
        le_put32(p + 8, (uint32_t)f->n_nodes);
        p += 12;
        for (int t = 0; t < f->n_trees; t++, p += 4)
            le_put32(p, f->roots[t]);
        for (int i = 0; i < f->n_nodes; i++, p += NODE_BYTES) {
            le_put32(p, (uint32_t)f->nodes[i].feature);
            le_put_f32(p + 4, f->nodes[i].value);
            le_put32(p + 8, f->nodes[i].yes);
            le_put32(p + 12, f->nodes[i].no);
        }
    }
    filehead_put(buf, &s_file, GBDT_FORMAT, 0, plen);
    *out = buf;
    *outlen = GBDT_HEADER_BYTES + plen;
    return 0;
}

/* Reads one forest at *p (end: the payload's end) into f and checks it
 * against nf features. */
static int s_read_forest(const uint8_t **pp, const uint8_t *end, int nf, forest *f,
                         const char *what, char *err, size_t errlen)
{
    const uint8_t *p = *pp;
    if (end - p < 12)
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: the %s forest is cut short", what);
    f->base = le_get_f32(p);
    uint32_t nt = le_get32(p + 4), nn = le_get32(p + 8);
    p += 12;
    if (!isfinite(f->base) || nt > MAX_TREES || nn > (uint32_t)INT32_MAX ||
        (uint64_t)nt * 4 + (uint64_t)nn * NODE_BYTES > (uint64_t)(end - p) || (nt && !nn))
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: the %s forest's counts (%u trees, "
                       "%u nodes) do not fit the file", what, nt, nn);
    f->n_trees = (int)nt;
    f->n_nodes = (int)nn;
    f->roots = malloc(4 * (size_t)(nt ? nt : 1));
    f->nodes = malloc(sizeof *f->nodes * (size_t)(nn ? nn : 1));
    if (!f->roots || !f->nodes)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for %u nodes", nn);
    for (uint32_t t = 0; t < nt; t++, p += 4)
        if ((f->roots[t] = le_get32(p)) >= nn)
            return err_set(err, errlen, KZ_ECORRUPT, "corrupt: %s tree %u's root %u is not one "
                           "of its %u nodes", what, t, f->roots[t], nn);
    for (uint32_t i = 0; i < nn; i++, p += NODE_BYTES) {
        node *n = &f->nodes[i];
        n->feature = (int32_t)le_get32(p);
        n->value = le_get_f32(p + 4);
        n->yes = le_get32(p + 8);
        n->no = le_get32(p + 12);
        if (n->feature < -1 || n->feature >= nf || !isfinite(n->value))
            return err_set(err, errlen, KZ_ECORRUPT, "corrupt: %s node %u has feature %d (of "
                           "%d) or a non-finite value", what, i, n->feature, nf);
    }
    int depth = s_depth(f);
    if (depth < 0 || depth > GBDT_MAX_DEPTH)
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: a %s tree's children come before "
                       "their parent or are not there, or it is deeper than %d", what,
                       GBDT_MAX_DEPTH);
    f->depth = depth;
    *pp = p;
    return 0;
}

int gbdt_from_bytes(const uint8_t *buf, size_t len, const game_def *g, gbdt **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    /* Step 1. The header. */
    filehead h;
    int hrc = filehead_check(buf, len, &s_file, &h, err, errlen);
    if (hrc)
        return hrc;
    const uint8_t *p = h.payload, *end = p + h.plen;
    /* Step 2. The game and shapes. */
    if (h.plen < GAME_FIELD + 5 * 4 + 32)
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: the payload is cut short");
    gbdt *m = calloc(1, sizeof *m);
    if (!m)
        return err_set(err, errlen, KZ_ENOMEM, "out of memory for the model");
    int rc = 0;
    memcpy(m->game, p, GAME_FIELD);
    p += GAME_FIELD;
    bool printable = m->game[GAME_FIELD - 1] == 0 && m->game[0];
    for (const char *c = m->game; printable && *c; c++)
        printable = (unsigned char)*c >= 0x20 && *c != 0x7f;
    uint32_t dims[5];
    for (int k = 0; k < 5; k++, p += 4)
        dims[k] = le_get32(p);
    if (!printable) {
        rc = err_set(err, errlen, KZ_ECORRUPT, "corrupt: bad game name");
        goto out;
    }
    for (int k = 0; k < 5; k++)
        if (dims[k] < 1 || dims[k] > 1u << 20) {
            rc = err_set(err, errlen, KZ_ECORRUPT, "corrupt: shape %u out of range", dims[k]);
            goto out;
        }
    m->planes = (int)dims[0];
    m->height = (int)dims[1];
    m->width = (int)dims[2];
    m->actions = (int)dims[3];
    m->features = (int)dims[4];
    if (g) {
        if (strcmp(m->game, g->name)) {
            char shown[40];
            text_printable(shown, sizeof shown, m->game, GAME_FIELD);
            rc = err_set(err, errlen, KZ_EMISMATCH, "the model is for game '%s', not '%s'",
                         shown, g->name);
            goto out;
        }
        if (m->planes != g->planes || m->height != g->height || m->width != g->width ||
            m->actions != g->action_count || m->features != gbdt_feature_count(g)) {
            rc = err_set(err, errlen, KZ_EMISMATCH, "shape mismatch: the model has %dx%dx%d "
                         "planes, %d actions, %d features; game %s has %dx%dx%d, %d, %d",
                         m->planes, m->height, m->width, m->actions, m->features, g->name,
                         g->planes, g->height, g->width, g->action_count,
                         gbdt_feature_count(g));
            goto out;
        }
    }
    m->meta = (model_meta){.version = le_get32(p), .parent = le_get32(p + 4),
                           .step = le_get64(p + 8), .created_ms = (int64_t)le_get64(p + 16)};
    uint64_t tsum = le_get64(p + 24);
    p += 32;
    /* Step 3. The forests, their checksum. */
    if ((rc = s_read_forest(&p, end, m->features, &m->f[0], "value", err, errlen)) ||
        (rc = s_read_forest(&p, end, m->features + 1, &m->f[1], "policy", err, errlen)))
        goto out;
    if (p != end) {
        rc = err_set(err, errlen, KZ_ECORRUPT, "corrupt: %zu bytes after the forests",
                     (size_t)(end - p));
        goto out;
    }
    uint64_t have_sum = s_trees_checksum(m);
    if (have_sum != tsum)
        rc = err_set(err, errlen, KZ_ECORRUPT,
                     "corrupt: trees checksum mismatch (stored %016llx, computed %016llx)",
                     (unsigned long long)tsum, (unsigned long long)have_sum);
out:
    if (rc)
        gbdt_destroy(&m);
    *out = m;
    return rc;
}

int gbdt_save(const gbdt *m, const char *path)
{
    uint8_t *buf;
    size_t len;
    int rc = gbdt_to_bytes(m, &buf, &len);
    if (rc)
        return rc;
    rc = file_write_atomic(path, buf, len);
    free(buf);
    return rc;
}

int gbdt_load(const char *path, const game_def *g, gbdt **out, char *err, size_t errlen)
{
    *out = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = file_read_max(path, GBDT_MAX_BYTES, &buf, &len);
    if (rc)
        return err_set(err, errlen, rc, "cannot read model file '%s': %s", path,
                       rc == KZ_EFULL ? "larger than any model file" : err_str(rc));
    char why[400];
    rc = gbdt_from_bytes(buf, len, g, out, why, sizeof why);
    free(buf);
    if (rc)
        err_set(err, errlen, rc, "model file '%s': %s", path, why);
    return rc;
}

int gbdt_stamp(const uint8_t *buf, size_t len, uint32_t version, uint32_t parent, uint8_t **out,
               size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    gbdt *m;
    int rc = gbdt_from_bytes(buf, len, NULL, &m, err, errlen);
    if (rc)
        return rc;
    m->meta.version = version;
    m->meta.parent = parent;
    rc = gbdt_to_bytes(m, out, outlen);
    gbdt_destroy(&m);
    if (rc)
        return err_set(err, errlen, rc, "out of memory for the stamped model");
    return 0;
}

/* --- The walker ---------------------------------------------------------------- */

struct gbdt_eval {
    const game_def *g; /* the game (its feature hook) */
    gbdt *m;           /* own copy of the trees */
    int max_batch;     /* largest batch */
    int F, A;          /* features, actions */
    float *x;          /* (F + 1) one row: the action id, then the features */
    double *diff;      /* (A + 1) the policy's difference array */
    uint32_t *stack;   /* (3 * (depth + 1)) pending (node, lo, hi) of the interval walk */
};

static int s_forest_copy(forest *dst, const forest *src)
{
    *dst = *src;
    dst->roots = malloc(4 * (size_t)(src->n_trees ? src->n_trees : 1));
    dst->nodes = malloc(sizeof *dst->nodes * (size_t)(src->n_nodes ? src->n_nodes : 1));
    if (!dst->roots || !dst->nodes)
        return KZ_ENOMEM;
    memcpy(dst->roots, src->roots, 4 * (size_t)src->n_trees);
    memcpy(dst->nodes, src->nodes, sizeof *dst->nodes * (size_t)src->n_nodes);
    return 0;
}

gbdt_eval *gbdt_eval_new(const gbdt *m, const game_def *g, int max_batch)
{
    if (!m || !g || max_batch < 1 || m->features != gbdt_feature_count(g) ||
        m->actions != g->action_count)
        return NULL;
    gbdt_eval *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->g = g;
    e->max_batch = max_batch;
    e->F = m->features;
    e->A = m->actions;
    e->m = calloc(1, sizeof *e->m);
    int depth = m->f[1].depth > m->f[0].depth ? m->f[1].depth : m->f[0].depth;
    e->x = malloc(sizeof *e->x * (size_t)(e->F + 1));
    e->diff = malloc(sizeof *e->diff * (size_t)(e->A + 1));
    e->stack = malloc(sizeof *e->stack * 3 * (size_t)(depth + 2));
    if (!e->m || !e->x || !e->diff || !e->stack)
        goto fail;
    *e->m = *m;
    memset(e->m->f, 0, sizeof e->m->f);
    if (s_forest_copy(&e->m->f[0], &m->f[0]) || s_forest_copy(&e->m->f[1], &m->f[1]))
        goto fail;
    return e;
fail:
    gbdt_eval_destroy(&e);
    return NULL;
}

void gbdt_eval_destroy(gbdt_eval **pe)
{
    if (!pe || !*pe)
        return;
    gbdt_destroy(&(*pe)->m);
    free_all((*pe)->x, (*pe)->diff, (*pe)->stack, *pe);
    *pe = NULL;
}

/* All A logits of one position whose features are x + 1 (x[0] unused): one
 * walk per tree following both sides of the action splits, each reachable
 * leaf added over its interval of ids [lo, hi) in the difference array. */
static void s_policy(gbdt_eval *e, const float *x, float *logits)
{
    const forest *f = &e->m->f[GBDT_POLICY];
    double *d = e->diff;
    int A = e->A;
    memset(d, 0, sizeof *d * (size_t)(A + 1));
    uint32_t *st = e->stack;
    for (int t = 0; t < f->n_trees; t++) {
        int sp = 0;
        st[0] = f->roots[t];
        st[1] = 0;
        st[2] = (uint32_t)A;
        sp = 1;
        while (sp > 0) {
            sp--;
            uint32_t i = st[3 * sp], lo = st[3 * sp + 1], hi = st[3 * sp + 2];
            for (;;) {
                const node *n = &f->nodes[i];
                if (n->feature < 0) {
                    d[lo] += n->value;
                    d[hi] -= n->value;
                    break;
                }
                if (n->feature > 0) {
                    i = x[n->feature] < n->value ? n->yes : n->no;
                    continue;
                }
                /* Ids a < threshold go to yes: a < ceil(threshold). */
                double c = ceil((double)n->value);
                uint32_t cut = c <= lo ? lo : c >= hi ? hi : (uint32_t)c;
                if (cut == lo) {
                    i = n->no;
                } else if (cut == hi) {
                    i = n->yes;
                } else {
                    /* The no side waits on the stack (at most one entry per
                     * level: depth + 1 entries). */
                    st[3 * sp] = n->no;
                    st[3 * sp + 1] = cut;
                    st[3 * sp + 2] = hi;
                    sp++;
                    i = n->yes;
                    hi = cut;
                }
            }
        }
    }
    double run = f->base;
    for (int a = 0; a < A; a++) {
        run += d[a];
        logits[a] = (float)run;
    }
}

void gbdt_eval_run(gbdt_eval *e, const float *planes, int B, float *logits, float *values)
{
    assert(B >= 0 && B <= e->max_batch);
    const game_def *g = e->g;
    size_t P = (size_t)g->planes * g->height * g->width;
    for (int b = 0; b < B; b++) {
        gbdt_features(g, planes + (size_t)b * P, e->x + 1);
        float v = gbdt_predict_row(e->m, GBDT_VALUE, e->x + 1);
        values[b] = v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
        s_policy(e, e->x, logits + (size_t)b * e->A);
    }
}

void gbdt_eval_policy_naive(gbdt_eval *e, const float *planes, float *logits)
{
    gbdt_features(e->g, planes, e->x + 1);
    for (int a = 0; a < e->A; a++) {
        e->x[0] = (float)a;
        logits[a] = gbdt_predict_row(e->m, GBDT_POLICY, e->x);
    }
}
