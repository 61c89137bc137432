/* ref_khreibaga: a deliberately naive, independent reference implementation of
 * the Khreibaga rules (docs/rules.md R1-R22), used by the tests to cross-check
 * the engine (games/khreibaga.c) and by the solver's certificate verifier
 * (solve/certificate.h, docs/solve.md), which must not trust the engine it
 * checks. It lives in solve/ so that kz can link it; it was written from the
 * rules text alone, without reading the engine, and favours obviousness over
 * speed: a plain 25-char board, every complete capture sequence enumerated by
 * depth-first search (seed 000 §3.1, Algorithm 1), the majority filter over
 * those sequences, and mid-sequence hops recomputed from the board the turn
 * started on and the hops already made. Repetition keeps every turn-start
 * position of the game.
 *
 * Nothing here is shared with the engine: not the state layout, not the line
 * tables, not the reason codes (reasons are named by the same short strings
 * game_reason_name() uses, so tests can compare them).
 *
 * Thread rules: every function is pure over its arguments. */
#ifndef KZ_SOLVE_REF_KHREIBAGA_H
#define KZ_SOLVE_REF_KHREIBAGA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REF_POINTS 25
#define REF_ACTIONS 625
#define REF_MAX_PLIES 300   /* R15 */
#define REF_NO_PROGRESS 50  /* R13 */
#define REF_MAX_HIST (REF_MAX_PLIES + 2) /* turn-start positions a game can hold */
#define REF_MAX_HOPS 32     /* longest capture sequence (at most 12 captures) with room */

/* One turn-start position as R14 sees it: the pieces and the side to move. */
typedef struct ref_pos {
    char board[REF_POINTS]; /* '.', 'b', 'B', 'w', 'W' per point */
    char side;              /* 'b' or 'w' */
} ref_pos;

/* A game in progress. Copy with ref_copy (the history is long). */
typedef struct ref_game {
    char board[REF_POINTS];      /* the pieces now ('.', 'b', 'B', 'w', 'W') */
    int side;                    /* 0 Black, 1 White: who moves */
    int chain;                   /* -1 at a turn start, else the point that must hop on */
    int ply;                     /* completed turns since the start or the parsed position */
    int no_progress;             /* R13 counter: turns since a capture or a man move */
    char turn_board[REF_POINTS]; /* the board when the current turn (or parse) began */
    int turn_piece;              /* -1, or the only piece that may capture (parsed chain) */
    int nhops;                   /* hops made so far in this turn */
    int hop_src[REF_MAX_HOPS];   /* their source points */
    int hop_dst[REF_MAX_HOPS];   /* their destination points */
    int nhist;                   /* turn-start positions recorded (R14) */
    ref_pos hist[REF_MAX_HIST];  /* every turn-start position of the game, in order */
} ref_game;

/* The start position (R2). */
void ref_init(ref_game *g);
/* Parses an R20 position string; 0, or -1 with a reason in err. */
int ref_parse(ref_game *g, const char *str, char *err, size_t errlen);
/* Writes the R20 string of g (with the chain point mid-sequence). */
void ref_format(const ref_game *g, char *buf, size_t len);
/* Copies a game (only the used part of the history). */
void ref_copy(ref_game *dst, const ref_game *src);

/* The rule-legal actions (R8, R9), ascending, into out[REF_ACTIONS]; returns
 * their count. Ignores whether the game is over. */
int ref_legal(const ref_game *g, int *out);
/* Plays an action; 0, or -1 (g unchanged) when it is not in ref_legal. */
int ref_apply(ref_game *g, int action);
/* Terminal status (R12-R15), decided only at a turn start. Returns NULL while
 * the game goes on, else the reason's short name ("no-pieces", "no-moves",
 * "no-progress", "repetition", "length"); *winner = 0, 1, or -1 for a draw. */
const char *ref_result(const ref_game *g, int *winner);
/* Pieces of a side (0 Black, 1 White) on the board. */
int ref_count(const ref_game *g, int side);
/* How often the current turn-start position has occurred (0 mid-sequence). */
int ref_repetitions(const ref_game *g);
/* The canonical input planes (R16, R17), 7*25 floats [plane][row][col]. */
void ref_planes(const ref_game *g, float *out);
/* R22 perft: leaf nodes of the atomic-action tree to depth d. */
uint64_t ref_perft(const ref_game *g, int depth);

#endif
