/* tablebase: exact values of small Khreibaga endgames (every position with at
 * most N pieces), built by retrograde analysis and probed from memory-mapped
 * files. docs/tablebase.md gives the reasoning with rule numbers; in short:
 *
 * - Tables hold turn-start positions only, from the mover's view (R16: the
 *   mover's men move upward; a White-to-move position is rotated and its
 *   colours swapped), one file per material class ("KMMvK": the mover's
 *   kings and men, then the other side's). Mid-sequence states (R9) are not
 *   stored: their value is the best of the turn-start positions that their
 *   completed sequences reach, all with fewer pieces (tb_probe resolves them).
 * - One byte per position: win/draw/loss with the no-progress count at 0, and
 *   the distance in plies to the next zeroing move (a capture or a man move,
 *   R13) that keeps that value, or to the end (R12), as Syzygy's DTZ. A win at
 *   distance d is a win at no-progress count c exactly when c + d <= 50, and a
 *   draw otherwise (likewise a loss): tb_value_at.
 * - Repetition (R14) cannot change a value: the side that wins follows
 *   strictly decreasing distances, so never repeats a position. Values are
 *   exact for a fresh history (R20) at any no-progress count; the length cap
 *   (R15) is not modelled.
 * - The left-right mirror (R19) halves each class: only one of each pair of
 *   mirrored men layouts is stored.
 *
 * File format (version 1, little-endian): a 128-byte header (magic
 * "KZTB\r\n\x1a\n", version, the class, position and slice counts,
 * wins/draws/losses, the longest win and its index, a checksum of the data,
 * a checksum of the header), then one byte per position:
 * 0x00 draw, 0x40|d win in d plies (1..50), 0x80|d loss in d (0..50).
 * tb_open refuses a file whose size, header or checksums do not match.
 *
 * Thread rules: a tb_set is read-only once opened; probes from any number of
 * threads are safe. tb_build runs its own threads. */
#ifndef KZ_TABLEBASE_H
#define KZ_TABLEBASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

#define TB_MAX_PIECES 7      /* most pieces the indexing handles */
#define TB_FORMAT_VERSION 1  /* files of another version are refused */
#define TB_MAX_DIST 50       /* R13: the longest distance a value can have */
/* The endgame accuracy the tools report (kz tb accuracy's defaults, the
 * coordinator's status, bench_learning): the test set of this seed
 * (tb_test_positions) and the search at these simulations. */
#define TB_TEST_SEED 1
#define TB_TEST_SIMULATIONS 200

/* A value from the view of the player to move. */
typedef struct tb_value {
    int8_t wdl;   /* +1 win, 0 draw, -1 loss, with the no-progress count at 0 */
    uint8_t dist; /* plies to the zeroing move (or the end) that keeps wdl; 0 for a draw */
} tb_value;

/* The result under R13 at no-progress count `count`: wdl when
 * count + dist <= 50 (a loss with dist 0, no legal action, at any count),
 * else 0 (the count runs out first). */
int tb_value_at(tb_value v, int count);

typedef struct tb_set tb_set;

/* Opens the tables in dir: every class file with at most max_pieces pieces
 * (0: all found), each memory-mapped and checked (size, header, checksum).
 * Returns NULL with a one-line message in err for an unreadable directory or
 * a table that fails its checks (naming the file); a missing table is no
 * error, it only lowers tb_pieces. Caller owns the set (tb_close). */
tb_set *tb_open(const char *dir, int max_pieces, char *err, size_t errlen);
/* The game the tables are of (Khreibaga's game_def): a search or a program of
 * another game must not be given them. */
const game_def *tb_game(void);
/* Unmaps and frees; NULL-safe; sets *t to NULL. */
void tb_close(tb_set **t);
/* The tables as the game interface's oracle (game.h), for the searches and
 * players that know no game: probe is tb_probe_search, best_action is
 * tb_best_action of a state the tables cover. t is borrowed. */
game_oracle tb_oracle(const tb_set *t);
/* N such that every position with at most N pieces is covered (0: none). */
int tb_pieces(const tb_set *t);

/* The value of a state (turn start or mid-sequence; pieces <= tb_pieces):
 * 0 with *out, KZ_ENOTFOUND when the state has more pieces than the tables
 * cover. A mid-sequence state's value does not depend on the count (its turn
 * ends with a capture): dist is 1 for a win or a loss. The state's game
 * should not be over (R12-R15 decide those). */
int tb_probe(const tb_set *t, const game_state *s, tb_value *out);
/* The result of s under R13 at its own no-progress count (tb_value_at);
 * 0 with *wdl, or KZ_ENOTFOUND. The hot path of search probes. */
int tb_probe_wdl(const tb_set *t, const game_state *s, int *wdl);

/* The value the searches give a state the tables cover (mcts.h's leaves,
 * player.h's alpha-beta), in hundredths from the mover's view: the result
 * under R13 (tb_probe_wdl) as 100, 0 or -100, but for a state reached by a
 * king's simple move (no-progress count above 0) a win at distance d scores
 * 100 - d and a loss -(100 - d). So a search that sees only values hurries
 * to the zeroing move and takes it (a state right after one keeps the full
 * 100), and the loser delays it: without that, every winning move is "a
 * win" alike and a short search shuffles until R13 draws the game. 0 with
 * *score, or KZ_ENOTFOUND. */
int tb_probe_search(const tb_set *t, const game_state *s, int *score);

/* tb_probe_wdl of the state packed in `packed` (len bytes of
 * khreibaga_game.pack, no-progress count included: khreibaga_unpack_state):
 * the exact value targets of training samples (docs/trainer.md). 0 with
 * *wdl, KZ_ENOTFOUND, or KZ_ECORRUPT for bytes that are no packed state. */
int tb_probe_packed(const tb_set *t, const uint8_t *packed, size_t len, int *wdl);

/* What one legal action leads to, from the view of the player who plays it. */
typedef struct tb_action_value {
    uint16_t action; /* the action */
    int8_t wdl;      /* the result under R13 after it (counts as the rules keep them) */
    uint8_t dist;    /* plies from now to the zeroing move that settles it: 1 for a
                      * capture or a man move, 1 + the reply's distance for a
                      * king's simple move; 0 for a draw */
} tb_action_value;

/* Every legal action of s with its value (ascending by action); returns the
 * count, or KZ_ENOTFOUND. out holds GAME_MAX_LEGAL entries. */
int tb_action_values(const tb_set *t, const game_state *s, tb_action_value *out);
/* The action perfect play chooses: a win at the shortest distance, else a
 * draw, else the loss at the longest distance (the first such action on
 * ties). 0 with *action, KZ_ENOTFOUND, or KZ_EINVAL when s has no legal action. */
int tb_best_action(const tb_set *t, const game_state *s, int *action);

/* A fixed test set of move accuracy (`kz tb accuracy`): up to n positions
 * drawn by `seed` from the loaded classes (a piece count from 3 to
 * tb_pieces uniformly, then a class of it, then a position; half of them
 * turned to White to move), each a turn start that is a win or a draw with
 * exactly one legal action keeping that value (with the no-progress count at
 * 0) while every other action loses it. Writes the states and their keeping
 * actions; returns how many it found (fewer than n only if 1000 * n draws
 * did not find them). The same tables and seed give the same set. */
int tb_test_positions(const tb_set *t, int n, uint64_t seed, game_state *states,
                      uint16_t *keep);

/* --- classes -------------------------------------------------------------- */

/* One class (one file), as tb_class_info reports it. */
typedef struct tb_class_info {
    char name[16];          /* e.g. "KMMvK": mover's kings and men, 'v', the other side's */
    int own_men, own_kings; /* the mover's material */
    int opp_men, opp_kings; /* the other side's */
    uint64_t positions;     /* stored positions (after the mirror) */
    uint64_t wins, draws, losses; /* with the no-progress count at 0 */
    int longest;            /* the longest win's distance (0 if no win) */
    uint64_t longest_index; /* a position with that win */
} tb_class_info;

/* Loaded classes: their number, and one by number (0 <= i < count). */
int tb_class_count(const tb_set *t);
void tb_class_get(const tb_set *t, int i, tb_class_info *out);
/* The position at an index of class i (Black to move, as stored) and its value. */
void tb_class_position(const tb_set *t, int i, uint64_t index, game_state *s);
tb_value tb_class_value(const tb_set *t, int i, uint64_t index);

/* Checks class i against the rules and the smaller classes: every position's
 * value and distance must be what its moves give (a win has a move to a loss
 * at distance one less and none shorter, a loss has only moves to wins and
 * one at distance one less, a draw neither). 0, or KZ_ECORRUPT with the first
 * wrong position in err (KZ_ENOTFOUND: a smaller class it needs is not
 * loaded). `threads` as in tb_build_opts. About as long as building it. */
int tb_verify_class(const tb_set *t, int i, int threads, char *err, size_t errlen);

/* --- building ---------------------------------------------------------------- */

/* Where a build is (passed to the progress callback). */
typedef struct tb_progress {
    const char *cls;          /* the class pair being built, e.g. "KMvK+KvKM" */
    const char *phase;        /* "build" or "verify" */
    int pair, pairs;          /* its number (from 1) and how many the build makes */
    uint64_t done, total;     /* positions built in this run, and to build */
    double seconds;           /* since the build started */
    bool finished_pair;       /* a pair's files were just written */
} tb_progress;

typedef struct tb_build_opts {
    int pieces;   /* build every class with at most this many pieces (2..TB_MAX_PIECES) */
    int threads;  /* worker threads (0: one per online CPU) */
    bool verify;  /* tb_verify_class every class built, before the next one */
    void (*progress)(const tb_progress *p, void *arg); /* called about once a second; NULL: none */
    void *arg;    /* passed to progress */
} tb_build_opts;

/* Builds the tables into dir (created if missing), smallest classes first.
 * Resumable: a class whose file exists and passes tb_open's checks is not
 * built again (a file that fails them is rebuilt, with a warning). Each file
 * is written atomically. 0, or an error code with a one-line message. */
int tb_build(const char *dir, const tb_build_opts *o, char *err, size_t errlen);

#endif
