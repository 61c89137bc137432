/* rating: Bradley-Terry (logistic Elo) maximum likelihood over all games,
 * with anchors, BayesElo's virtual-draw prior and intervals from the observed
 * information. See rating.h for the model. */
#include "play/rating.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "play/match.h"
#include "common/util.h"

#define RATING_C (M_LN10 / 400.0)  /* d/dr of the logit: p = 1/(1 + exp(-C (ri - rj))) */
#define RATING_MAX_ANCHOR_ELO 1e6  /* most |elo| of an anchor */
#define RATING_STEP_TOL 1e-7       /* converged when no rating moves more (Elo) */
#define RATING_MAX_HALVINGS 60     /* most step halvings in one Newton iteration */
#define S_STR2(x) #x
#define S_STR(x) S_STR2(x)

/* One pair of players with games, after merging the input. */
typedef struct edge {
    int a, b;      /* players, a < b */
    double n;      /* games, virtual draws included */
    double s;      /* a's points, virtual draws' halves included */
    long real;     /* real games */
} edge;

/* The problem the Newton iterations solve. */
typedef struct problem {
    int n_edges;        /* edges that enter the fit (a fitted player at one end) */
    edge *e;            /* (n_edges) */
    int m;              /* fitted players */
    int *var;           /* (n) player -> 0..m-1 if fitted, else -1 */
    int *player;        /* (m) the fitted player of each variable */
    double *r;          /* (n) ratings: the anchors' given, the fitted ones' current */
} problem;

/* ---- input -------------------------------------------------------------------------------- */

static int s_edge_cmp(const void *x, const void *y)
{
    const edge *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Checks the input and merges it into edges (real games only, n = real, s =
 * points of a). Writes a reason and returns KZ_EINVAL on bad input. */
static int s_edges(int n, const rating_result *res, int n_res, edge **out, int *n_out,
                   const char **why)
{
    edge *e = xmalloc((size_t)(n_res > 0 ? n_res : 1) * sizeof *e);
    int k = 0;
    for (int t = 0; t < n_res; t++) {
        const rating_result *r = &res[t];
        if (r->i < 0 || r->i >= n || r->j < 0 || r->j >= n) {
            *why = "rating: a result names a player out of range";
            goto bad;
        }
        if (r->i == r->j) {
            *why = "rating: a result of a player against itself";
            goto bad;
        }
        if (r->wins < 0 || r->draws < 0 || r->losses < 0) {
            *why = "rating: a result with a negative count";
            goto bad;
        }
        /* Far beyond any real count; keeps the sums exact in a double and a long. */
        if (r->wins > (1L << 40) || r->draws > (1L << 40) || r->losses > (1L << 40)) {
            *why = "rating: a result with an absurd count (over 2^40 games)";
            goto bad;
        }
        long g = r->wins + r->draws + r->losses;
        if (g == 0)
            continue;
        double pts = r->wins + 0.5 * r->draws; /* i's points */
        if (r->scored) {
            if (!(r->score >= 0 && r->score <= (double)g)) {
                *why = "rating: a result whose score is not between 0 and its games";
                goto bad;
            }
            pts = r->score;
        }
        if (r->i < r->j)
            e[k] = (edge){.a = r->i, .b = r->j, .n = (double)g, .s = pts, .real = g};
        else
            e[k] = (edge){.a = r->j, .b = r->i, .n = (double)g, .s = g - pts, .real = g};
        k++;
    }
    qsort(e, (size_t)k, sizeof *e, s_edge_cmp);
    int m = 0;
    for (int t = 0; t < k; t++) {
        if (m > 0 && e[m - 1].a == e[t].a && e[m - 1].b == e[t].b) {
            e[m - 1].n += e[t].n;
            e[m - 1].s += e[t].s;
            e[m - 1].real += e[t].real;
        } else {
            e[m++] = e[t];
        }
    }
    *out = e;
    *n_out = m;
    return 0;
bad:
    free(e);
    return KZ_EINVAL;
}

/* Marks the players connected to an anchor by edges as fitted (status was
 * set to RATING_ANCHOR for anchors, RATING_UNRATED for all others). */
static void s_connect(int n, const edge *e, int n_edges, int *status)
{
    /* Adjacency in compressed rows: off[i] .. off[i+1] index adj. */
    int *off = xcalloc((size_t)n + 1, sizeof *off);
    int *adj = xmalloc((size_t)(2 * n_edges > 0 ? 2 * n_edges : 1) * sizeof *adj);
    for (int t = 0; t < n_edges; t++) {
        off[e[t].a + 1]++;
        off[e[t].b + 1]++;
    }
    for (int i = 0; i < n; i++)
        off[i + 1] += off[i];
    int *fill = xmalloc((size_t)n * sizeof *fill);
    memcpy(fill, off, (size_t)n * sizeof *fill);
    for (int t = 0; t < n_edges; t++) {
        adj[fill[e[t].a]++] = e[t].b;
        adj[fill[e[t].b]++] = e[t].a;
    }
    /* Breadth-first from every anchor at once; the queue reuses fill. */
    int *queue = fill, head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (status[i] == RATING_ANCHOR)
            queue[tail++] = i;
    while (head < tail) {
        int i = queue[head++];
        for (int t = off[i]; t < off[i + 1]; t++) {
            int j = adj[t];
            if (status[j] == RATING_UNRATED) {
                status[j] = RATING_FITTED;
                queue[tail++] = j;
            }
        }
    }
    free_all(fill, adj, off);
}

/* ---- the likelihood ----------------------------------------------------------------------- */

/* log(1 / (1 + exp(-x))) without overflow. */
static double s_log_sigmoid(double x)
{
    return x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x));
}

static double s_sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

static double s_loglik(const problem *pb, const double *r)
{
    double ll = 0;
    for (int t = 0; t < pb->n_edges; t++) {
        const edge *e = &pb->e[t];
        double x = RATING_C * (r[e->a] - r[e->b]);
        ll += e->s * s_log_sigmoid(x) + (e->n - e->s) * s_log_sigmoid(-x);
    }
    return ll;
}

/* The gradient g of LL and the weights w_e = C^2 n p (1-p) of H = -Hessian
 * (in Elo units) at the current ratings. */
static void s_gradient(const problem *pb, double *g, double *w)
{
    memset(g, 0, (size_t)pb->m * sizeof *g);
    for (int t = 0; t < pb->n_edges; t++) {
        const edge *e = &pb->e[t];
        double p = s_sigmoid(RATING_C * (pb->r[e->a] - pb->r[e->b]));
        double d = RATING_C * (e->s - e->n * p);
        w[t] = RATING_C * RATING_C * e->n * p * (1 - p);
        int va = pb->var[e->a], vb = pb->var[e->b];
        if (va >= 0)
            g[va] += d;
        if (vb >= 0)
            g[vb] -= d;
    }
}

/* dg = diag(H) from the edge weights. */
static void s_diag(const problem *pb, const double *w, double *dg)
{
    memset(dg, 0, (size_t)pb->m * sizeof *dg);
    for (int t = 0; t < pb->n_edges; t++) {
        int va = pb->var[pb->e[t].a], vb = pb->var[pb->e[t].b];
        if (va >= 0)
            dg[va] += w[t];
        if (vb >= 0)
            dg[vb] += w[t];
    }
}

/* ---- dense solve -------------------------------------------------------------------------- */

/* H (m x m, row-major) from the edge weights. */
static void s_dense_h(const problem *pb, const double *w, double *h)
{
    int m = pb->m;
    memset(h, 0, (size_t)m * m * sizeof *h);
    for (int t = 0; t < pb->n_edges; t++) {
        int va = pb->var[pb->e[t].a], vb = pb->var[pb->e[t].b];
        if (va >= 0)
            h[(size_t)va * m + va] += w[t];
        if (vb >= 0)
            h[(size_t)vb * m + vb] += w[t];
        if (va >= 0 && vb >= 0) {
            h[(size_t)va * m + vb] -= w[t];
            h[(size_t)vb * m + va] -= w[t];
        }
    }
}

/* In-place Cholesky factorisation H = L L^T (L in the lower triangle).
 * false if H is not (numerically) positive definite. */
static bool s_cholesky(int m, double *h)
{
    for (int j = 0; j < m; j++) {
        double *rj = h + (size_t)j * m;
        double d = rj[j];
        for (int k = 0; k < j; k++)
            d -= rj[k] * rj[k];
        if (!(d > 0))
            return false;
        d = sqrt(d);
        rj[j] = d;
        for (int i = j + 1; i < m; i++) {
            double *ri = h + (size_t)i * m;
            double v = ri[j];
            for (int k = 0; k < j; k++)
                v -= ri[k] * rj[k];
            ri[j] = v / d;
        }
    }
    return true;
}

/* Solves L L^T x = b (x may be b). */
static void s_cholesky_solve(int m, const double *l, const double *b, double *x)
{
    for (int i = 0; i < m; i++) {
        double v = b[i];
        for (int k = 0; k < i; k++)
            v -= l[(size_t)i * m + k] * x[k];
        x[i] = v / l[(size_t)i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) {
        double v = x[i];
        for (int k = i + 1; k < m; k++)
            v -= l[(size_t)k * m + i] * x[k];
        x[i] = v / l[(size_t)i * m + i];
    }
}

/* diag(H^-1) from the factor: (H^-1)_ii = |L^-1 e_i|^2, and L^-1 e_i is zero
 * above row i. y is scratch of m. */
static void s_inverse_diag(int m, const double *l, double *y, double *diag)
{
    for (int i = 0; i < m; i++) {
        double sum = 0;
        for (int r = i; r < m; r++) {
            double v = r == i ? 1.0 : 0.0;
            for (int k = i; k < r; k++)
                v -= l[(size_t)r * m + k] * y[k];
            y[r] = v / l[(size_t)r * m + r];
            sum += y[r] * y[r];
        }
        diag[i] = sum;
    }
}

/* ---- sparse solve ------------------------------------------------------------------------- */

/* out = H v, H from the edge weights. */
static void s_sparse_mul(const problem *pb, const double *w, const double *v, double *out)
{
    memset(out, 0, (size_t)pb->m * sizeof *out);
    for (int t = 0; t < pb->n_edges; t++) {
        int va = pb->var[pb->e[t].a], vb = pb->var[pb->e[t].b];
        double x = va >= 0 ? v[va] : 0, y = vb >= 0 ? v[vb] : 0;
        if (va >= 0)
            out[va] += w[t] * (x - y);
        if (vb >= 0)
            out[vb] += w[t] * (y - x);
    }
}

/* Solves H x = b by conjugate gradients preconditioned with diag(H) (dg).
 * ws: scratch of 4 m. false if H is not positive definite along the way. */
static bool s_cg(const problem *pb, const double *w, const double *dg, const double *b, double *x,
                 double *ws)
{
    int m = pb->m;
    double *res = ws, *z = ws + m, *d = ws + 2 * m, *hd = ws + 3 * m;
    double bb = 0, rz = 0;
    for (int i = 0; i < m; i++) {
        x[i] = 0;
        res[i] = b[i];
        z[i] = res[i] / dg[i];
        d[i] = z[i];
        bb += b[i] * b[i];
        rz += res[i] * z[i];
    }
    /* In exact arithmetic CG ends within m iterations; rounding may need more. */
    int max_it = 10 * m + 100;
    for (int it = 0; it < max_it; it++) {
        double rr = 0;
        for (int i = 0; i < m; i++)
            rr += res[i] * res[i];
        if (rr <= 1e-24 * bb)
            return true;
        s_sparse_mul(pb, w, d, hd);
        double dhd = 0;
        for (int i = 0; i < m; i++)
            dhd += d[i] * hd[i];
        if (!(dhd > 0))
            return false;
        double alpha = rz / dhd, rz_new = 0;
        for (int i = 0; i < m; i++) {
            x[i] += alpha * d[i];
            res[i] -= alpha * hd[i];
            z[i] = res[i] / dg[i];
            rz_new += res[i] * z[i];
        }
        double beta = rz_new / rz;
        rz = rz_new;
        for (int i = 0; i < m; i++)
            d[i] = z[i] + beta * d[i];
    }
    return true; /* not to full precision: Newton's next step corrects */
}

/* ---- the fit ------------------------------------------------------------------------------ */

void rating_config_default(rating_config *c)
{
    *c = (rating_config){.prior = 2.0, .dense_max = 500, .max_iter = 100};
}

static const char *s_check(int n, const rating_anchor *anchors, int n_anchors,
                           const rating_config *cfg, int *status)
{
    if (!cfg || !(cfg->prior >= 0 && cfg->prior <= 1e6))
        return "rating: prior must be in [0, 1e6]";
    if (cfg->dense_max < 0 || cfg->dense_max > RATING_DENSE_LIMIT)
        return "rating: dense_max must be in [0, " S_STR(RATING_DENSE_LIMIT) "]";
    if (cfg->max_iter < 1)
        return "rating: max_iter must be at least 1";
    if (n_anchors < 0 || n_anchors > n)
        return "rating: more anchors than players";
    for (int k = 0; k < n_anchors; k++) {
        const rating_anchor *a = &anchors[k];
        if (a->player < 0 || a->player >= n)
            return "rating: an anchor names a player out of range";
        if (!(fabs(a->elo) <= RATING_MAX_ANCHOR_ELO))
            return "rating: an anchor's rating must be finite, within +/-1e6";
        if (status[a->player] == RATING_ANCHOR)
            return "rating: a player anchored twice";
        status[a->player] = RATING_ANCHOR;
    }
    return NULL;
}

/* Adds the virtual draws (rating.h): v_ab = prior/2 (N_ab/N_a + N_ab/N_b). */
static void s_add_prior(edge *e, int n_edges, const long *games, double prior)
{
    if (prior <= 0)
        return;
    for (int t = 0; t < n_edges; t++) {
        double v = 0.5 * prior * ((double)e[t].real / games[e[t].a] +
                                  (double)e[t].real / games[e[t].b]);
        e[t].n += v;
        e[t].s += 0.5 * v;
    }
}

/* Newton's method with step halving from the current ratings. Returns the
 * iterations taken, or -1 if it failed (H singular or no convergence). */
static int s_newton(problem *pb, const rating_config *cfg, bool dense)
{
    int m = pb->m;
    double *g = xmalloc((size_t)m * sizeof *g), *dx = xmalloc((size_t)m * sizeof *dx);
    double *w = xmalloc((size_t)(pb->n_edges > 0 ? pb->n_edges : 1) * sizeof *w);
    double *h = dense ? xmalloc((size_t)m * m * sizeof *h) : NULL;
    double *dg = dense ? NULL : xmalloc((size_t)m * sizeof *dg);
    double *ws = dense ? NULL : xmalloc((size_t)4 * m * sizeof *ws);
    double *old = xmalloc((size_t)m * sizeof *old);
    int result = -1;
    double ll = s_loglik(pb, pb->r);
    for (int it = 1; it <= cfg->max_iter; it++) {
        /* Step 1. The Newton direction dx = H^-1 g. */
        s_gradient(pb, g, w);
        if (dense) {
            s_dense_h(pb, w, h);
            if (!s_cholesky(m, h))
                break;
            s_cholesky_solve(m, h, g, dx);
        } else {
            s_diag(pb, w, dg);
            bool pd = true;
            for (int i = 0; i < m && pd; i++)
                pd = dg[i] > 0;
            if (!pd || !s_cg(pb, w, dg, g, dx, ws))
                break;
        }
        /* Step 2. Halve the step until LL does not fall (LL is concave, so
         * a short enough step along the Newton direction raises it). */
        double step = 0;
        for (int i = 0; i < m; i++) {
            old[i] = pb->r[pb->player[i]];
            step = fmax(step, fabs(dx[i]));
        }
        if (!isfinite(step))
            break;
        double scale = 1, ll_new = ll;
        for (int k = 0; k < RATING_MAX_HALVINGS; k++, scale *= 0.5) {
            for (int i = 0; i < m; i++)
                pb->r[pb->player[i]] = old[i] + scale * dx[i];
            ll_new = s_loglik(pb, pb->r);
            if (ll_new >= ll - 1e-12 * (1 + fabs(ll)))
                break;
        }
        ll = ll_new;
        /* Step 3. Converged when the full step was tiny; a diverging fit
         * (no finite maximum) keeps taking steps of ~174 Elo until max_iter. */
        if (scale == 1 && step < RATING_STEP_TOL) {
            result = it;
            break;
        }
        bool huge = false;
        for (int i = 0; i < m; i++)
            huge |= !(fabs(pb->r[pb->player[i]]) < 1e7);
        if (huge)
            break;
    }
    free_all(old, ws, dg, h, w, dx, g);
    return result;
}

/* The standard errors at the fit: exact from the dense factor, else
 * 1/sqrt(H_ii). false if H is not positive definite there. */
static bool s_standard_errors(const problem *pb, bool dense, double *sd_var)
{
    bool ok = true;
    int m = pb->m;
    double *g = xmalloc((size_t)m * sizeof *g);
    double *w = xmalloc((size_t)(pb->n_edges > 0 ? pb->n_edges : 1) * sizeof *w);
    s_gradient(pb, g, w);
    if (dense) {
        double *h = xmalloc((size_t)m * m * sizeof *h);
        s_dense_h(pb, w, h);
        ok = s_cholesky(m, h);
        if (ok)
            s_inverse_diag(m, h, g, sd_var);
        free(h);
    } else {
        s_diag(pb, w, sd_var);
        for (int i = 0; i < m; i++) {
            ok &= sd_var[i] > 0;
            sd_var[i] = 1.0 / sd_var[i];
        }
    }
    for (int i = 0; i < m && ok; i++)
        sd_var[i] = sqrt(sd_var[i]);
    free(w);
    free(g);
    return ok;
}

static rating_fit *s_fit_new(int n)
{
    rating_fit *f = xcalloc(1, sizeof *f);
    f->n = n;
    f->elo = xmalloc((size_t)n * sizeof *f->elo);
    f->sd = xmalloc((size_t)n * sizeof *f->sd);
    f->lo = xmalloc((size_t)n * sizeof *f->lo);
    f->hi = xmalloc((size_t)n * sizeof *f->hi);
    f->status = xcalloc((size_t)n, sizeof *f->status);
    f->games = xcalloc((size_t)n, sizeof *f->games);
    return f;
}

void rating_fit_destroy(rating_fit **f)
{
    if (!f || !*f)
        return;
    free_all((*f)->elo, (*f)->sd, (*f)->lo, (*f)->hi, (*f)->status, (*f)->games, *f);
    *f = NULL;
}

int rating_fit_compute(int n, const rating_result *results, int n_results,
                       const rating_anchor *anchors, int n_anchors, const rating_config *cfg,
                       rating_fit **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *why = NULL;
    if (n < 1 || n > RATING_MAX_PLAYERS || n_results < 0 || (n_results > 0 && !results) ||
        (n_anchors > 0 && !anchors)) {
        why = "rating: need 1 to " S_STR(RATING_MAX_PLAYERS) " players, and results and anchors "
              "counted from 0 (with their arrays)";
        goto fail;
    }
    rating_fit *f = s_fit_new(n);
    problem pb = {0};
    edge *all = NULL;
    double *sd = NULL;
    int n_all = 0;
    /* Step 1. Check and merge the input; mark the anchors. */
    why = s_check(n, anchors, n_anchors, cfg, f->status);
    if (why || s_edges(n, results, n_results, &all, &n_all, &why) != 0)
        goto out;
    for (int t = 0; t < n_all; t++) {
        f->games[all[t].a] += all[t].real;
        f->games[all[t].b] += all[t].real;
    }
    /* Step 2. Who is rated; the virtual draws; the edges that enter the fit. */
    s_connect(n, all, n_all, f->status);
    s_add_prior(all, n_all, f->games, cfg->prior);
    pb.var = xmalloc((size_t)n * sizeof *pb.var);
    pb.player = xmalloc((size_t)n * sizeof *pb.player);
    pb.r = xmalloc((size_t)n * sizeof *pb.r);
    for (int i = 0; i < n; i++) {
        pb.var[i] = f->status[i] == RATING_FITTED ? pb.m++ : -1;
        if (pb.var[i] >= 0)
            pb.player[pb.var[i]] = i;
        pb.r[i] = 0;
    }
    for (int k = 0; k < n_anchors; k++)
        pb.r[anchors[k].player] = anchors[k].elo;
    pb.e = all;
    for (int t = 0; t < n_all; t++)
        if (pb.var[all[t].a] >= 0 || pb.var[all[t].b] >= 0)
            all[pb.n_edges++] = all[t]; /* both ends are fitted or anchors (connected) */
    f->fitted = pb.m;
    /* Step 3. Start every fitted player at the mean anchor rating, then Newton. */
    double mean = 0;
    for (int k = 0; k < n_anchors; k++)
        mean += anchors[k].elo / n_anchors;
    for (int v = 0; v < pb.m; v++)
        pb.r[pb.player[v]] = mean;
    f->exact_sd = pb.m <= cfg->dense_max;
    if (pb.m > 0) {
        f->iterations = s_newton(&pb, cfg, f->exact_sd);
        if (f->iterations < 0) {
            why = cfg->prior > 0 ? "rating: no finite maximum (the iterations did not converge)"
                                 : "rating: no finite maximum (a player won or lost every game "
                                   "against the rated pool; use a prior > 0)";
            goto out;
        }
        sd = xmalloc((size_t)pb.m * sizeof *sd);
        if (!s_standard_errors(&pb, f->exact_sd, sd)) {
            why = "rating: the information matrix is singular at the fit";
            goto out;
        }
    }
    /* Step 4. The report. */
    f->log_likelihood = s_loglik(&pb, pb.r);
    for (int i = 0; i < n; i++) {
        switch (f->status[i]) {
        case RATING_ANCHOR: f->elo[i] = pb.r[i], f->sd[i] = 0; break;
        case RATING_FITTED: f->elo[i] = pb.r[i], f->sd[i] = sd[pb.var[i]]; break;
        default: f->elo[i] = f->sd[i] = NAN;
        }
        f->lo[i] = f->elo[i] - MATCH_Z95 * f->sd[i];
        f->hi[i] = f->elo[i] + MATCH_Z95 * f->sd[i];
    }
out:
    free_all(sd, pb.r, pb.player, pb.var, all);
    if (why) {
        rating_fit_destroy(&f);
        goto fail;
    }
    *out = f;
    return 0;
fail:
    return err_set(err, errlen, KZ_EINVAL, "%s", why);
}

double rating_expected(const rating_fit *f, int i, int j)
{
    assert(f && i >= 0 && i < f->n && j >= 0 && j < f->n);
    if (f->status[i] == RATING_UNRATED || f->status[j] == RATING_UNRATED)
        return NAN;
    return match_score_from_elo(f->elo[i] - f->elo[j]);
}

/* Sorting anchors by weight, highest first, then by id. */
typedef struct s_ranked {
    int id;     /* anchor */
    double w;   /* p (1 - p) */
} s_ranked;

static int s_ranked_cmp(const void *x, const void *y)
{
    const s_ranked *p = x, *q = y;
    if (p->w != q->w)
        return p->w > q->w ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

int rating_nearest_anchors(const rating_fit *f, double elo, int k, int *out, double *weight)
{
    assert(f && k >= 0 && isfinite(elo) && (k == 0 || out));
    s_ranked *r = xmalloc((size_t)f->n * sizeof *r);
    int na = 0;
    for (int i = 0; i < f->n; i++)
        if (f->status[i] == RATING_ANCHOR) {
            double p = match_score_from_elo(elo - f->elo[i]);
            r[na++] = (s_ranked){.id = i, .w = p * (1 - p)};
        }
    qsort(r, (size_t)na, sizeof *r, s_ranked_cmp);
    int got = na < k ? na : k;
    for (int t = 0; t < got; t++) {
        out[t] = r[t].id;
        if (weight)
            weight[t] = r[t].w;
    }
    free(r);
    return got;
}
