/* testgen: random Khreibaga positions for the tests (see testgen.h). */
#include "tests/harness/testgen.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Writes a random position string valid per R20 at a turn start: up to 12
 * pieces a side, kings likely, no man on the row where it would be crowned. */
void testgen_position(rng_t *rng, char *out)
{
    char board[26];
    memset(board, '.', 25);
    board[25] = '\0';
    int maxp = 1 + (int)rng_below(rng, 12);
    int nb = (int)rng_below(rng, (uint32_t)maxp + 1), nw = (int)rng_below(rng, (uint32_t)maxp + 1);
    int kings = (int)rng_below(rng, 4); /* 0: none, 3: mostly kings */
    for (int side = 0; side < 2; side++) {
        for (int k = 0; k < (side ? nw : nb); k++) {
            bool king = rng_below(rng, 3) < (uint32_t)kings;
            char p = side ? (king ? 'W' : 'w') : (king ? 'B' : 'b');
            /* A crowded board may have no room left for a man: skip it then. */
            for (int tries = 0; tries < 200; tries++) {
                int sq = (int)rng_below(rng, 25);
                if (board[sq] == '.' && !(p == 'b' && sq >= 20) && !(p == 'w' && sq < 5)) {
                    board[sq] = p;
                    break;
                }
            }
        }
    }
    snprintf(out, 32, "%s %c", board, rng_below(rng, 2) ? 'w' : 'b');
}

/* Writes a random quiet endgame (R20-valid): 1 or 2 kings and 1 to 4 men a
 * side, the men on their own half, so that careful play lasts long. */
void testgen_endgame(rng_t *rng, char *out)
{
    char board[26];
    memset(board, '.', 25);
    board[25] = '\0';
    for (int side = 0; side < 2; side++) {
        int nk = 1 + (int)rng_below(rng, 2), nm = 1 + (int)rng_below(rng, 4);
        for (int k = 0; k < nk + nm; k++) {
            char p = side ? (k < nk ? 'W' : 'w') : (k < nk ? 'B' : 'b');
            for (int tries = 0; tries < 200; tries++) {
                int sq = (int)rng_below(rng, 25), row = sq / 5;
                bool ok = k < nk || (side == 0 ? row <= 1 : row >= 3);
                if (board[sq] == '.' && ok) {
                    board[sq] = p;
                    break;
                }
            }
        }
    }
    snprintf(out, 32, "%s %c", board, rng_below(rng, 2) ? 'w' : 'b');
}
