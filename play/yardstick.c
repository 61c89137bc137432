/* yardstick: books, labelled positions, the paired difference, the value
 * head's calibration and the search's budget (yardstick.h). */
#include "play/yardstick.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "play/match.h"

/* ---- files ------------------------------------------------------------------------------- */

int yard_read(const game_def *g, const char *path, game_state *out, int8_t *z, int max, int *n,
              char *err, size_t errlen)
{
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(err, errlen, KZ_EIO, "%s: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        if (*n >= max) {
            rc = err_set(err, errlen, KZ_EINVAL, "%s:%d: more than %d positions", path, lineno,
                         max);
            break;
        }
        char *tab = strchr(line, '\t');
        if (tab)
            *tab = 0;
        char perr[256];
        if (g->parse_position(&out[*n], line, perr, sizeof perr)) {
            rc = err_set(err, errlen, KZ_EINVAL, "%s:%d: %s", path, lineno, perr);
            break;
        }
        if (z) {
            long v;
            if (!tab || parse_long(tab + 1, -1, 1, &v)) {
                rc = err_set(err, errlen, KZ_EINVAL, "%s:%d: no label (POSITION<TAB>z, z -1, 0 "
                             "or 1)", path, lineno);
                break;
            }
            z[*n] = (int8_t)v;
        }
        if (g->result(&out[*n]).over) {
            rc = err_set(err, errlen, KZ_EINVAL, "%s:%d: the game is over there", path, lineno);
            break;
        }
        (*n)++;
    }
    fclose(f);
    if (!rc && *n == 0)
        rc = err_set(err, errlen, KZ_EINVAL, "%s: no positions", path);
    return rc;
}

int yard_write(const game_def *g, const char *path, const char *header, const game_state *s,
               const int8_t *z, int n)
{
    size_t cap = (size_t)n * ((size_t)g->position_chars + 8) + strlen(header) * 2 + 64, len = 0;
    char *buf = xmalloc(cap);
    for (const char *h = header; h && *h;) {
        size_t l = strcspn(h, "\n");
        len += (size_t)snprintf(buf + len, cap - len, "# %.*s\n", (int)l, h);
        h += l + (h[l] == '\n');
    }
    for (int i = 0; i < n; i++) {
        char pos[512];
        g->format_position(&s[i], pos, sizeof pos);
        if (z)
            len += (size_t)snprintf(buf + len, cap - len, "%s\t%d\n", pos, z[i]);
        else
            len += (size_t)snprintf(buf + len, cap - len, "%s\n", pos);
    }
    int rc = file_write_atomic(path, buf, len);
    free(buf);
    return rc ? KZ_EIO : 0;
}

int yard_pieces(const game_def *g, const game_state *s)
{
    char pos[512];
    g->format_position(s, pos, sizeof pos);
    int n = 0;
    for (const char *p = pos; *p && *p != ' '; p++)
        n += (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
    return n;
}

int yard_phase(const game_def *g, const game_state *s)
{
    int p = yard_pieces(g, s);
    return p > 16 ? 0 : p > 8 ? 1 : 2;
}

const char *yard_phase_name(int phase)
{
    static const char *const names[YARD_PHASES] = {"opening (>16 pieces)", "middle (9-16)",
                                                   "ending (<=8)"};
    return phase >= 0 && phase < YARD_PHASES ? names[phase] : "?";
}

/* ---- balanced openings ------------------------------------------------------------------- */

int yard_balance(const game_def *g, player *deep, const game_state *open, uint64_t seed, int r[2],
                 int *plies)
{
    int mover = g->to_move(open), total = 0;
    for (int k = 0; k < 2; k++) {
        player *both[2] = {deep, deep};
        game_result res;
        int pl = 0;
        int rc = match_play_game(g, both, open, mix64(seed + (uint64_t)k), &res, &pl, NULL);
        if (rc)
            return rc;
        r[k] = game_result_for(res, mover);
        total += pl;
    }
    if (plies)
        *plies = total;
    return r[0] == -r[1];
}

/* ---- the paired difference --------------------------------------------------------------- */

void yard_paired_compute(const int *half_a, const int *half_b, int n, yard_paired *out)
{
    memset(out, 0, sizeof *out);
    out->pairs = n;
    if (n < 1)
        return;
    double sa = 0, sb = 0, sd = 0, sdd = 0;
    for (int k = 0; k < n; k++) {
        double d = (half_a[k] - half_b[k]) / 4.0; /* per-game score difference of the pair */
        sa += half_a[k] / 4.0;
        sb += half_b[k] / 4.0;
        sd += d;
        sdd += d * d;
    }
    out->score_a = sa / n;
    out->score_b = sb / n;
    out->diff = sd / n;
    double var = n > 1 ? (sdd - sd * sd / n) / (n - 1) : 0;
    double h = MATCH_Z95 * sqrt(var > 0 ? var / n : 0);
    out->lo = out->diff - h;
    out->hi = out->diff + h;
    double ea = match_elo_from_score(out->score_a), eb = match_elo_from_score(out->score_b);
    out->elo = ea - eb;
    double m = (out->score_a + out->score_b) / 2;
    if (m <= 0.01)
        m = 0.01;
    if (m >= 0.99)
        m = 0.99;
    double slope = 400.0 / (log(10.0) * m * (1 - m)); /* dE/ds at the mean score */
    out->elo_lo = isfinite(out->elo) ? out->elo - h * slope : out->elo;
    out->elo_hi = isfinite(out->elo) ? out->elo + h * slope : out->elo;
}

/* ---- the value head and the search's budget ---------------------------------------------- */

int yard_value_add(const game_def *g, player *net, player *lo, player *hi, const game_state *s,
                   int8_t z, uint64_t i, bool compare, double *err_out, yard_value *out)
{
    static _Thread_local player_info info;
    int a, rc;
    player_new_game(net, i);
    if ((rc = player_choose(net, s, &a, &info)))
        return rc;
    int ph = yard_phase(g, s);
    double v = info.value, e = (v - z) * (v - z);
    out->n[ph]++;
    out->v[ph] += v;
    out->z[ph] += z;
    out->mse[ph] += e;
    int b = v < -0.6 ? 0 : v < -0.2 ? 1 : v < 0.2 ? 2 : v < 0.6 ? 3 : 4;
    out->bin_n[b]++;
    out->bin_v[b] += v;
    out->bin_z[b] += z;
    if (err_out)
        *err_out = e;
    uint16_t legal[GAME_MAX_LEGAL];
    if (lo && hi && compare && g->legal_actions(s, legal) > 1) {
        int al, ah;
        player_new_game(lo, i);
        player_new_game(hi, i);
        if ((rc = player_choose(lo, s, &al, NULL)) || (rc = player_choose(hi, s, &ah, NULL)))
            return rc;
        out->compared++;
        out->cmp_n[ph]++;
        out->differ[ph] += al != ah;
        out->differ[YARD_PHASES] += al != ah;
    }
    return 0;
}

void yard_value_finish(yard_value *out)
{
    for (int p = 0; p < YARD_PHASES; p++)
        if (out->n[p]) {
            out->v[p] /= out->n[p];
            out->z[p] /= out->n[p];
            out->mse[p] /= out->n[p];
        }
    for (int b = 0; b < 5; b++)
        if (out->bin_n[b]) {
            out->bin_v[b] /= out->bin_n[b];
            out->bin_z[b] /= out->bin_n[b];
        }
}

int yard_value_measure(const game_def *g, player *net, player *lo, player *hi,
                       const game_state *s, const int8_t *z, int n, int n_cmp,
                       double *err_out, yard_value *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        int rc = yard_value_add(g, net, lo, hi, &s[i], z[i], (uint64_t)i, i < n_cmp,
                                err_out ? &err_out[i] : NULL, out);
        if (rc)
            return rc;
    }
    yard_value_finish(out);
    return 0;
}

void yard_value_format(const yard_value *v, int low, int high, char *buf, size_t cap)
{
    size_t len = 0;
#define OUT(...)                                                                        \
    do {                                                                                \
        if (len < cap)                                                                  \
            len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__);                 \
    } while (0)
    buf[0] = 0;
    OUT("  %-22s %5s %8s %8s %8s\n", "phase", "n", "mean v", "mean z", "mse");
    double all = 0;
    int nall = 0;
    for (int p = 0; p < YARD_PHASES; p++) {
        OUT("  %-22s %5d %+8.3f %+8.3f %8.3f\n", yard_phase_name(p), v->n[p], v->v[p], v->z[p],
            v->mse[p]);
        all += v->mse[p] * v->n[p];
        nall += v->n[p];
    }
    OUT("  %-22s %5d %8s %8s %8.3f\n", "all", nall, "", "", nall ? all / nall : 0.0);
    static const char *const bins[5] = {"[-1, -0.6)", "[-0.6, -0.2)", "[-0.2, 0.2)",
                                        "[0.2, 0.6)", "[0.6, 1]"};
    OUT("  calibration: predicted value -> mean label (n)\n");
    for (int b = 0; b < 5; b++)
        OUT("    %-13s %+6.3f -> %+6.3f  (%d)\n", bins[b], v->bin_v[b], v->bin_z[b],
            v->bin_n[b]);
    if (v->compared) {
        double wl, wh;
        match_wilson(v->differ[YARD_PHASES], v->compared, &wl, &wh);
        OUT("  %d against %d simulations: a different move in %.1f%% of %d positions "
            "(95%% %.1f..%.1f)", low, high, 100.0 * v->differ[YARD_PHASES] / v->compared,
            v->compared, 100 * wl, 100 * wh);
        for (int p = 0; p < YARD_PHASES; p++)
            if (v->cmp_n[p])
                OUT("%s %s %.1f%% of %d", p ? ";" : ":", yard_phase_name(p),
                    100.0 * v->differ[p] / v->cmp_n[p], v->cmp_n[p]);
        OUT("\n");
    }
#undef OUT
}
