/* batch: a training batch from the wire into dense arrays. See trainer.h. */
#include <math.h>
#include <string.h>

#include "nn/model.h"
#include "trainer/trainer.h"

/* Spreads entries [lo, hi) of actions/probs into the dense row (A, zeroed
 * first) and renormalises it to sum 1 (an empty range leaves zeros). false
 * for an action outside [0, A), a negative or non-finite share, or a
 * non-empty range summing to 0. */
static bool s_spread(float *row, size_t A, const uint32_t *actions, const float *probs,
                     uint32_t lo, uint32_t hi)
{
    memset(row, 0, A * sizeof *row);
    double sum = 0;
    for (uint32_t k = lo; k < hi; k++) {
        float p = probs[k];
        if (actions[k] >= A || !isfinite(p) || p < 0)
            return false;
        row[actions[k]] += p;
        sum += p;
    }
    if (hi == lo)
        return true;
    if (!(sum > 0))
        return false;
    float inv = (float)(1.0 / sum);
    for (size_t a = 0; a < A; a++)
        row[a] *= inv;
    return true;
}

int batch_fill(const game_def *g, const wire_batch_reply *b, bool augment, float q_weight,
               rng_t *rng, float *x, float *pi, float *z, int max, batch_counts *counts)
{
    return batch_fill_aux(g, b, augment, q_weight, NULL, rng, x, pi, z, NULL, max, counts);
}

int batch_fill_aux(const game_def *g, const wire_batch_reply *b, bool augment, float q_weight,
                   const tb_set *tb, rng_t *rng, float *x, float *pi, float *z,
                   const batch_aux *aux, int max, batch_counts *counts)
{
    return batch_fill_re(g, b, augment, q_weight, tb, NULL, rng, x, pi, z, aux, max, counts);
}

int batch_fill_re(const game_def *g, const wire_batch_reply *b, bool augment, float q_weight,
                  const tb_set *tb, const batch_reanalysed *re, rng_t *rng, float *x, float *pi,
                  float *z, const batch_aux *aux, int max, batch_counts *counts)
{
    size_t P = (size_t)g->planes * g->height * g->width;
    size_t A = (size_t)g->action_count;
    if (b->n && b->packed_bytes != (uint32_t)g->packed_bytes) {
        counts->skipped += b->n; /* another game's positions: nothing usable */
        return 0;
    }
    const wire_batch_aux *ba = &b->aux;
    int n = 0;
    for (uint32_t i = 0; i < b->n && n < max; i++) {
        float *xi = x + (size_t)n * P, *pii = pi + (size_t)n * A;
        float zi = b->z[i], qi = b->q ? b->q[i] : zi;
        bool ok = isfinite(zi) && zi >= -1.0f && zi <= 1.0f && isfinite(qi) && qi >= -1.0f &&
                  qi <= 1.0f && g->unpack_planes(b->packed + (size_t)i * b->packed_bytes, xi) == 0;
        bool target = b->offsets[i + 1] > b->offsets[i]; /* empty: no policy target */
        ok = ok && s_spread(pii, A, b->actions, b->probs, b->offsets[i], b->offsets[i + 1]);
        /* The auxiliary targets, when asked for: none sent is weight 0. */
        float *oppi = aux ? aux->opp_pi + (size_t)n * A : NULL, mi = 0.0f, wi = 0.0f;
        bool opp = false;
        if (ok && aux) {
            if (ba->opp_offsets) {
                opp = ba->opp_offsets[i + 1] > ba->opp_offsets[i];
                ok = s_spread(oppi, A, ba->opp_actions, ba->opp_probs, ba->opp_offsets[i],
                              ba->opp_offsets[i + 1]);
            } else {
                memset(oppi, 0, A * sizeof *oppi);
            }
            if (ba->material) {
                mi = ba->material[i];
                wi = ba->material_w[i];
                ok = ok && isfinite(mi) && mi >= -1.0f && mi <= 1.0f && isfinite(wi) &&
                     wi >= 0.0f && wi <= 1.0f;
                mi = wi > 0 ? mi : 0.0f;
            }
        }
        if (!ok) {
            counts->skipped++;
            continue;
        }
        /* Reanalysed: the fresh search's target in place of the stored one. */
        int ra = re && i < (uint32_t)re->n ? re->row[i] : -1;
        if (ra >= 0) {
            memcpy(pii, re->pi + (size_t)ra * A, A * sizeof *pii);
            target = true;
            counts->reanalysed++;
        }
        if (!target)
            counts->no_policy++;
        /* One of the game's symmetries or the identity, uniformly (none: no
         * draw at all, the rng untouched). */
        int k = augment && g->n_symmetries > 0
                    ? (int)rng_below(rng, (uint32_t)g->n_symmetries + 1)
                    : 0;
        if (k > 0) {
            game_symmetry_planes(g, k - 1, xi);
            game_symmetry_policy(g, k - 1, pii);
            if (oppi)
                game_symmetry_policy(g, k - 1, oppi);
            counts->augmented++;
        }
        if (aux) {
            aux->material[n] = mi;
            aux->material_w[n] = wi;
            counts->aux_opp += opp;
            counts->aux_material += wi > 0;
        }
        /* The value target: the tables' exact value where they cover the
         * position, else q + z (Lc0, KataGo); q_weight 0 keeps z exactly. */
        int wdl;
        if (tb && tb_probe_packed(tb, b->packed + (size_t)i * b->packed_bytes, b->packed_bytes,
                                  &wdl) == 0) {
            counts->tb_values++;
            counts->tb_changed += (float)wdl != zi;
            z[n++] = (float)wdl;
        } else if (re && re->proven && i < (uint32_t)re->n_proven &&
                   re->proven[i] != BATCH_UNPROVEN) {
            counts->proven_values++;
            counts->proven_changed += (float)re->proven[i] != zi;
            z[n++] = (float)re->proven[i];
        } else {
            float zt = q_weight > 0 ? (1.0f - q_weight) * zi + q_weight * qi : zi;
            if (ra >= 0 && re->value_weight > 0)
                zt = (1.0f - re->value_weight) * zt + re->value_weight * re->v[ra];
            z[n++] = zt;
        }
    }
    counts->used += (uint64_t)n;
    return n;
}
