/* testgen: random Khreibaga position strings (R20) for the tests: valid at a
 * turn start (at most 12 pieces a side, no man on the row where it would be
 * crowned), both sides to move, kings likely. Deterministic in the rng.
 * `out` holds at least 32 bytes. */
#ifndef KZ_TESTS_TESTGEN_H
#define KZ_TESTS_TESTGEN_H

#include "common/util.h"

/* Any mix: 0..12 pieces a side, from no kings to mostly kings. */
void testgen_position(rng_t *rng, char *out);
/* A quiet endgame: 1-2 kings and 1-4 men a side, men on their own half. */
void testgen_endgame(rng_t *rng, char *out);

#endif
