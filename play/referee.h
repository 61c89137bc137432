/* referee: Khreibaga games and players measured against perfect play
 * (issue 23; `kz solve referee`, `kz solve accuracy`, docs/solve.md "The
 * referee"). The proof search (solve/pns.h) and the endgame tables
 * (games/tablebase.h) value positions; nothing is guessed.
 *
 * Values. The value of a turn-start position P for its mover is the value
 * of P with a fresh history (R20: ply 0, no-progress count 0): win (+1),
 * draw (0) or loss (-1). It is settled by two df-pn searches ("the opponent
 * does not lose": disproven means a win; "the mover does not lose": proven
 * means at least a draw, disproven a loss), or by the tables when P has few
 * enough pieces, and only within a budget: at most `nodes` expansions and
 * `seconds` of wall-clock time a position (both searches together). What the
 * budget leaves unsettled is kept as an interval [lo, hi] of the values not
 * yet excluded ("not a win" is [-1, 0]); a position nothing settles is
 * [-1, +1], unknown. A position already over (R12: the mover has no pieces
 * or no legal action) is a loss for its mover.
 *
 * A value-losing turn. A whole turn (a simple move or a complete capture
 * sequence, R8, R9) by mover m from P to Q changes m's value from v(P) to
 * -v(Q). It loses value when -v(Q) < v(P): a won position turned into a
 * draw or a loss, a drawn one into a loss. With intervals: the turn is
 * judged value-losing when -v(Q).hi < v(P).lo, value-keeping when
 * -v(Q).lo >= v(P).hi, and unknown otherwise (so a turn into a position
 * proven lost for the opponent keeps the value whatever P is). A keeping
 * turn that raises the value (-v(Q).lo > v(P).hi) would contradict the
 * rules (P's value is the best of its turns) and is counted as
 * `inconsistent`: it must stay 0.
 *
 * What the values leave out: R13's count, R14's repetitions and R15's length
 * cap look at the history, which a fresh-history value does not see. In a
 * game (referee_game_judge) the referee sees what it can of them: a
 * position the tables cover is valued at the game's own no-progress count
 * (tb_value_at: a win too far for the count left is a draw, as the players'
 * searches with the tables see it; at the count of 50 every position is a
 * draw). So a winner who lets R13's count run out in an ending is charged
 * the turn that threw the win away. R14's repetitions and R15's cap stay
 * unseen (a game's real end is not used: a loser's turn into a draw by
 * them would look like a raised value). The proof search stays count-free: above the tables'
 * pieces a value is the fresh-history one (the count restarts at every
 * capture and man move, and in the middle game stays low). Set `fresh` to
 * value every position at count 0, as before (docs/solve.md). A game can
 * still end drawn from a position proven won without any value-losing turn
 * (R14, R15, or R13 above the tables' reach: the winner wandered);
 * referee_game counts such games (`unconverted`) apart from the
 * value-losing turns.
 *
 * Phases are yardstick.h's (yard_phase: by the pieces on the board before
 * the turn: opening > 16, middle game 9-16, ending <= 8).
 *
 * Thread rules: a referee is used by one thread at a time (its
 * transposition table and cache are its own); the tables are borrowed and
 * may be shared. Valuing allocates nothing per position (pns_solve's own
 * scratch aside). */
#ifndef KZ_REFEREE_H
#define KZ_REFEREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "games/tablebase.h"
#include "play/yardstick.h"
#include "search/player.h"

#define REFEREE_NODES 200000          /* default budget: expansions a position */
#define REFEREE_TT_BYTES (256ull << 20) /* default transposition table (in memory) */
#define REFEREE_MAX_TURNS 2048        /* most whole turns of one game referee_game judges */
#define REFEREE_MAX_ERRORS 32         /* value-losing turns a referee_game keeps in detail */

/* Settings of a referee. */
typedef struct referee_opts {
    const tb_set *tables;  /* borrowed, may be NULL: the endgame tables (Khreibaga's) */
    uint64_t nodes;        /* budget: expansions a position (0: REFEREE_NODES) */
    double seconds;        /* budget: wall-clock seconds a position (0: none) */
    uint64_t tt_bytes;     /* transposition table (0: REFEREE_TT_BYTES); cleared when half full */
    volatile int *stop;    /* when *stop becomes non-zero, searches stop (values stay open) */
    bool fresh;            /* referee_game_judge: every position at a fresh history (count 0),
                            * as before the count was kept; false: the game's own count where
                            * the tables value a position (see "What the values leave out") */
} referee_opts;

/* What is known of a value, from the mover's view: every value in lo..hi
 * (-1 loss, 0 draw, +1 win) is still possible. lo == hi: settled. */
typedef struct referee_value {
    int8_t lo, hi;
} referee_value;

typedef struct referee referee;

/* A referee for Khreibaga. NULL with a one-line reason in err when the
 * transposition table cannot be made. Caller owns it: referee_destroy. */
referee *referee_new(const referee_opts *o, char *err, size_t errlen);
/* Frees; NULL-safe; sets *r to NULL. */
void referee_destroy(referee **r);

/* The value of the turn-start position of s for its mover (its pieces, kings
 * and mover only: a fresh history), within the budget. 0 with *out, or
 * KZ_EINVAL for a state of another game or a mid-sequence state. Values are
 * cached: a position valued again costs nothing. */
int referee_value_of(referee *r, const game_state *s, referee_value *out);

/* The work done so far: expansions, positions searched (not cached, not in
 * the tables), table probes answered, and the clearings of the table. */
typedef struct referee_work {
    uint64_t nodes;      /* df-pn expansions */
    uint64_t searched;   /* positions valued by search */
    uint64_t probed;     /* positions valued by the tables */
    uint64_t cached;     /* positions found in the cache */
    uint64_t open;       /* positions the budget left unsettled (an interval) */
    int clears;          /* transposition-table clearings (half full) */
} referee_work;
void referee_get_work(const referee *r, referee_work *out);

/* ---- games ---- */

/* How a turn is judged. */
enum referee_verdict { REFEREE_KEEP = 0, REFEREE_LOSE = 1, REFEREE_UNKNOWN = 2 };
#define REFEREE_VERDICTS 3

/* One value-losing turn. */
typedef struct referee_error {
    int turn;        /* the turn's index in the game (0 the first) */
    int ply;         /* the game's ply before it (game_def.ply: an opening's ply included) */
    int side;        /* the mover: 0 Black, 1 White */
    int phase;       /* yard_phase before the turn */
    int8_t before;   /* the mover's value before (lo of v(P)) */
    int8_t after;    /* its value after (hi of -v(Q)) */
    char turn_text[64]; /* the turn in R21 notation, hops joined ("7x17x5") */
    char position[32];  /* the position before it (R20, its mover's letter last) */
    int count;          /* the no-progress count (R13) before it */
} referee_error;

#define REFEREE_FEW_PIECES 6   /* the pieces the "few" count of the ending goes up to */
#define REFEREE_FEW YARD_PHASES /* referee_tally_turns's phase for that count */

/* A game judged turn by turn. */
typedef struct referee_game {
    int turns;                          /* whole turns played */
    int by[YARD_PHASES][2][REFEREE_VERDICTS]; /* turns by phase, mover, verdict */
    int few[2][REFEREE_VERDICTS];       /* the ending's turns from at most REFEREE_FEW_PIECES
                                         * pieces (the 6-piece tables' reach), by mover, verdict */
    int inconsistent;                   /* keeping turns that raised the value (must be 0) */
    referee_value start;                /* the start position's value for its mover */
    int start_mover;                    /* who moved first: 0 Black, 1 White */
    game_result result;                 /* how the game ended */
    bool unconverted;                   /* a side had a proven win from some turn on, made no
                                         * value-losing turn after, and did not win */
    int n_errors;                       /* value-losing turns (all of them) */
    referee_error errors[REFEREE_MAX_ERRORS]; /* the first REFEREE_MAX_ERRORS of them */
} referee_game;

/* Judges the game that starts at `start` (a turn start of Khreibaga) and
 * plays actions[0..n) (one action a hop, as records and players give them):
 * values every turn-start position reached (at most REFEREE_MAX_TURNS
 * turns), then each turn. 0 with *out; KZ_EINVAL for a mid-sequence start,
 * KZ_EILLEGAL for an illegal action or one after the end, KZ_EFULL for more
 * than REFEREE_MAX_TURNS turns (then nothing is judged). A game cut short
 * mid-turn is judged up to its last whole turn. */
int referee_game_judge(referee *r, const game_state *start, const uint16_t *actions, int n,
                       referee_game *out);

/* Sums of judged games (by phase and mover), for a report. */
typedef struct referee_tally {
    long games;                          /* games added */
    long by[YARD_PHASES][2][REFEREE_VERDICTS]; /* turns by phase, mover, verdict */
    long few[2][REFEREE_VERDICTS];       /* of the ending, from at most REFEREE_FEW_PIECES */
    long kinds[3];                       /* value-losing turns: win->draw, win->loss, draw->loss */
    long games_with_error;               /* games with at least one value-losing turn */
    long inconsistent;                   /* must stay 0 */
    long unconverted;                    /* games a proven win did not win without an error */
} referee_tally;

/* Adds the turns of game g whose mover is in `sides` (bit 0 Black, bit 1
 * White: 3 both) to t; the game itself (games, unconverted) counts once for
 * any non-zero `sides`. */
void referee_tally_add(referee_tally *t, const referee_game *g, unsigned sides);
/* Sums over the phases and/or movers: phase -1 all phases, side -1 both;
 * phase REFEREE_FEW: only the ending's turns from at most REFEREE_FEW_PIECES
 * pieces (a part of phase 2, never added into -1). */
long referee_tally_turns(const referee_tally *t, int phase, int side, int verdict);

/* ---- accuracy: players against perfect play on fixed positions ---- */

/* What referee_accuracy found for one player. */
typedef struct referee_accuracy_player {
    int judged;   /* positions where its turn was judged (keep or lose) */
    int keep;     /* of them, turns that kept the position's value */
    int judged_choice; /* of the judged, positions with every turn judged and one losing */
    int keep_choice;   /* of them, turns that kept the value: the share that tells players
                        * apart (elsewhere every turn keeps it) */
} referee_accuracy_player;

#define REFEREE_MAX_PLAYERS 24

/* The counts of referee_accuracy. */
typedef struct referee_accuracy {
    int positions;       /* positions tried */
    int settled;         /* of them with the position's value settled */
    int all_known;       /* of them with every turn judged (keep or lose) */
    int with_choice;     /* of those, positions where some turn loses value */
    int phase_n[YARD_PHASES];      /* settled positions by phase */
    referee_accuracy_player p[REFEREE_MAX_PLAYERS];
    referee_accuracy_player by_phase[REFEREE_MAX_PLAYERS][YARD_PHASES];
} referee_accuracy;

/* Called after each position with the counts so far (may be NULL). */
typedef void (*referee_progress_fn)(void *ctx, int done, int total, const referee_accuracy *a);

/* For each of the n turn-start positions, values the position (the budget
 * a position covers everything below), lets each of the np players
 * (np <= REFEREE_MAX_PLAYERS, the calling thread's) choose its whole turn
 * there (player_choose hop by hop, each player reseeded with `seed` + the
 * position's index), and judges each chosen turn, then (within what is left
 * of the budget) every other turn for `with_choice`. The players must be
 * Khreibaga's. Zeroes *out first. 0, KZ_EINVAL (a mid-sequence position, np
 * out of range), KZ_EILLEGAL (a player chose an illegal action), or a
 * player's error. */
int referee_accuracy_run(referee *r, player *const *players, int np, const game_state *pos,
                         int n, uint64_t seed, referee_progress_fn progress, void *ctx,
                         referee_accuracy *out);

#endif
