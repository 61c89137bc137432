/* rules_check: what the hand-built-position tests of the hop-by-hop games
 * (test_alquerque.c, test_draughts.c) share: positions built from
 * placements, the legal actions as text, and actions played from text,
 * each failing the calling test with a message on a bad input. */
#ifndef KZ_RULES_CHECK_H
#define KZ_RULES_CHECK_H

#include <stddef.h>

#include "games/game.h"

/* g's position from its string (the test fails if it does not parse). */
game_state rules_position(const game_def *g, const char *text);
/* A position string for a board of `cells` cells from "PIECE NUMBER ..."
 * placements ("l12 d17"; numbers from `first`, 0 or 1), side to move `side`:
 * every other cell empty ('.'), then " side". out holds cells + 3 bytes. */
void rules_board(char *out, int cells, int first, const char *pieces, char side);
/* rules_board's position parsed. */
game_state rules_place(const game_def *g, int cells, int first, const char *pieces, char side);
/* The legal actions of s as "a-b c-d ..." (ascending) into buf. */
void rules_legal_text(const game_def *g, const game_state *s, char *buf, size_t len);
/* Plays the space-separated actions; each must parse and be legal. */
void rules_play(const game_def *g, game_state *s, const char *actions);

/* The test fails unless s's legal actions read `want`. */
#define RULES_EXPECT_LEGAL(g, s, want)                                                      \
    do {                                                                                    \
        char got_[512];                                                                     \
        rules_legal_text((g), &(s), got_, sizeof got_);                                     \
        cr_assert_str_eq(got_, want);                                                       \
    } while (0)

#endif
