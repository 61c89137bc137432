/* fuzz_unpack_planes: packed positions (game_def->unpack_planes), as the
 * trainer receives them in batches from the coordinator's store.
 *
 * Properties: no crash; bytes that unpack give planes of zeros and ones
 * (except the game's scalar planes, which stay in [0, 1]), and the same
 * bytes unpack to the same planes again; bytes that do not unpack leave an
 * error (KZ_ECORRUPT). */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "games/game.h"

int fuzz_input(const uint8_t *data, size_t size)
{
    const game_def *g = game_default();
    if (size < (size_t)g->packed_bytes)
        return 0;
    /* Exactly packed_bytes, heap-allocated: ASan catches any read beyond. */
    uint8_t *in = malloc((size_t)g->packed_bytes);
    FUZZ_ASSERT(in);
    memcpy(in, data, (size_t)g->packed_bytes);
    size_t np = (size_t)g->planes * (size_t)g->height * (size_t)g->width;
    float *a = malloc(np * sizeof *a), *b = malloc(np * sizeof *b);
    FUZZ_ASSERT(a && b);
    int rc = g->unpack_planes(in, a);
    if (rc == 0) {
        for (size_t i = 0; i < np; i++)
            FUZZ_ASSERT(isfinite(a[i]) && a[i] >= 0.0f && a[i] <= 1.0f);
        FUZZ_ASSERT(g->unpack_planes(in, b) == 0 && !memcmp(a, b, np * sizeof *a));
    } else {
        FUZZ_ASSERT(rc == KZ_ECORRUPT);
    }
    free(a);
    free(b);
    free(in);
    return 0;
}
