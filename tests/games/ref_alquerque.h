/* ref_alquerque: a deliberately plain second implementation of Alquerque,
 * written from docs/rules-alquerque.md alone (no bitboards, no tables, no
 * code shared with games/alquerque.c), the oracle of tests/games/test_alquerque.c.
 * The board is 25 characters; each piece carries the point its last simple
 * move came from (A6, as the seed's program keeps it), forgotten when it
 * jumps; every neighbour is found from (row, col) and the direction. Slow
 * on purpose: clarity over speed. */
#ifndef KZ_TESTS_REF_ALQUERQUE_H
#define KZ_TESTS_REF_ALQUERQUE_H

#include <stdbool.h>
#include <stdint.h>

#define REF_ALQ_MAX_LEGAL 128 /* more than any position has */

typedef struct ref_alq {
    char board[25];   /* '.', 'l' (Light) or 'd' (Dark), by point */
    int prev[25];     /* the point the piece here came from by its last simple move, -1 */
    int side;         /* 0 Light, 1 Dark to move */
    int chain;        /* the piece that must jump on, -1 at a turn start */
} ref_alq;

/* A2's start. */
void ref_alq_init(ref_alq *p);
/* Reads an A18 string (trusting it is valid); false when it cannot. */
bool ref_alq_parse(ref_alq *p, const char *text);
/* The legal actions (src*25 + dst), ascending; their count. */
int ref_alq_legal(const ref_alq *p, int *out);
/* Plays a legal action. */
void ref_alq_apply(ref_alq *p, int action);
/* Whether the game is over at this turn start (A12), and who won. */
bool ref_alq_over(const ref_alq *p, int *winner);
/* A20's perft: hops, or whole turns. */
uint64_t ref_alq_perft(const ref_alq *p, int depth);
uint64_t ref_alq_perft_turns(const ref_alq *p, int depth);

#endif
