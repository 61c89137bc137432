/* scale: the fixed anchor scale of each game. The baseline players' ratings
 * (random = 0) measured once per game with many games (`kz scale`) are kept
 * in the repository, play/scales.txt, built into the programs. Every run's
 * rating fit holds the anchors found there at these ratings instead of
 * refitting them from its own few calibration games, so ratings of
 * different runs, methods and `make learn`'s A/B compare on one scale.
 * docs/ratings.md ("The anchor scale") says how it was made and how to
 * remake it.
 *
 * The file: one line per game and player, `GAME PLAYER ELO LO HI GAMES`
 * (LO, HI: the 95% interval of the measurement; GAMES: the games it played),
 * '#' starts a comment. Threads: pure functions over the built-in text. */
#ifndef KZ_SCALE_H
#define KZ_SCALE_H

#include <stdbool.h>
#include <stddef.h>

/* One anchor's place on its game's scale. */
typedef struct scale_entry {
    double elo, lo, hi; /* rating and the 95% interval of its measurement */
    long games;         /* games the measurement played with it */
} scale_entry;

/* The scale's entry of `player` (a player spec, e.g. "alphabeta:4") in game
 * `game`: true and *out, or false when the scale has none. */
bool scale_find(const char *game, const char *player, scale_entry *out);

/* The players on game's scale, in the file's order (weakest first), joined
 * by commas into out (cap bytes); their count (0: the game has no scale). */
int scale_players(const char *game, char *out, size_t cap);

/* The built-in text of play/scales.txt (NUL-terminated). */
const char *scale_text(void);

#endif
