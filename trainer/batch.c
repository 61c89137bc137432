/* batch: a training batch from the wire into dense arrays. See trainer.h. */
#include <math.h>
#include <string.h>

#include "model.h"
#include "trainer.h"

int batch_fill(const game_def *g, const wire_batch_reply *b, bool mirror, float q_weight,
               rng_t *rng, float *x, float *pi, float *z, int max, batch_counts *counts)
{
    size_t P = (size_t)g->planes * g->height * g->width;
    size_t A = (size_t)g->action_count;
    if (b->n && b->packed_bytes != (uint32_t)g->packed_bytes) {
        counts->skipped += b->n; /* another game's positions: nothing usable */
        return 0;
    }
    int n = 0;
    for (uint32_t i = 0; i < b->n && n < max; i++) {
        float *xi = x + (size_t)n * P, *pii = pi + (size_t)n * A;
        float zi = b->z[i], qi = b->q ? b->q[i] : zi;
        bool ok = isfinite(zi) && zi >= -1.0f && zi <= 1.0f && isfinite(qi) && qi >= -1.0f &&
                  qi <= 1.0f && g->unpack_planes(b->packed + (size_t)i * b->packed_bytes, xi) == 0;
        bool target = b->offsets[i + 1] > b->offsets[i]; /* empty: no policy target */
        double sum = 0;
        if (ok) {
            memset(pii, 0, A * sizeof *pii);
            for (uint32_t k = b->offsets[i]; k < b->offsets[i + 1] && ok; k++) {
                float p = b->probs[k];
                if (b->actions[k] >= A || !isfinite(p) || p < 0) {
                    ok = false;
                    break;
                }
                pii[b->actions[k]] += p;
                sum += p;
            }
            ok = ok && (sum > 0 || !target);
        }
        if (!ok) {
            counts->skipped++;
            continue;
        }
        if (target) {
            float inv = (float)(1.0 / sum);
            for (size_t a = 0; a < A; a++)
                pii[a] *= inv;
        } else {
            counts->no_policy++;
        }
        if (mirror && rng_below(rng, 2)) {
            model_mirror_sample(g, xi, pii);
            counts->mirrored++;
        }
        /* The value target: q + z (Lc0, KataGo); q_weight 0 keeps z exactly. */
        z[n++] = q_weight > 0 ? (1.0f - q_weight) * zi + q_weight * qi : zi;
    }
    counts->used += (uint64_t)n;
    return n;
}
