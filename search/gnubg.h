/* gnubg: GNU Backgammon as a separate process, driven through its text mode
 * (docs/rules-backgammon.md "Driving gnubg"). We start `gnubg -t -q -r`
 * with its standard input and output on a socket pair, send one command a
 * line, and read its answer up to a sentinel: an unknown command
 * ("kzsyncN"), which gnubg answers with "Unknown keyword `kzsyncN'." once
 * every command before it is done. Every read has a deadline; a gnubg that
 * exits or stops answering is reported (KZ_EIO with a one-line reason),
 * never waited on forever; the process is killed and reaped on close.
 *
 * Positions go in as Position IDs (games/backgammon.h): `set board ID`
 * reads the ID from the view of the player on roll, `set dice A B` sets the
 * roll, `hint N` lists up to N moves (every legal move when N is large,
 * each distinct resulting position once) in the on-roll player's numbering.
 *
 * Not thread-safe: one gnubg per thread. */
#ifndef KZ_GNUBG_H
#define KZ_GNUBG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

typedef struct gnubg gnubg;

/* The gnubg program: $KZ_GNUBG, else /usr/games/gnubg (Debian's), else
 * "gnubg" on the PATH; NULL when none is found. */
const char *gnubg_path(void);

/* Starts gnubg and sets it up for `level` (NULL or "expert": 0-ply, no
 * noise; the predefined levels beginner, casual, intermediate, advanced,
 * expert, worldclass, supremo, grandmaster; docs/rules-backgammon.md).
 * timeout_s bounds each answer. 0, or KZ_EINVAL (unknown level) / KZ_EIO
 * (no gnubg, it did not start) with a one-line reason in err. */
int gnubg_open(gnubg **out, const char *level, double timeout_s, char *err, size_t errlen);
/* Whether `level` is one of the levels above: 0, or KZ_EINVAL with the
 * one-line reason gnubg_open would give (no gnubg is started). */
int gnubg_level_check(const char *level, char *err, size_t errlen);
/* Stops it (quit, then SIGKILL if it lingers) and frees g (NULL: nothing). */
void gnubg_close(gnubg *g);

/* A tick while an answer is awaited (e.g. a worker servicing its connection,
 * so that its heartbeats go on during a slow level): fn(ctx) is called about
 * every 100 ms of waiting; when it returns true the wait is given up and the
 * call returns KZ_ECANCELED ("stopped"). The gnubg process is left as it is
 * (close it: its answer is still to come). NULL fn: none (the default). */
typedef bool (*gnubg_tick_fn)(void *ctx);
void gnubg_set_tick(gnubg *g, gnubg_tick_fn fn, void *ctx);

/* The moves gnubg lists for the player on roll in position `id` with the
 * roll d1 d2, best first, each as its notation ("8/5 6/5") into
 * moves[i] (up to max of them, each 64 bytes); *n their number (0: no legal
 * move). 0, or KZ_EIO (gnubg died, timed out, or answered something we do
 * not read, the reason in err). */
int gnubg_hint(gnubg *g, const char *id, int d1, int d2, int max_moves, char (*moves)[64],
               int *n, char *err, size_t errlen);

/* gnubg_hint with each move's equity (cubeless, the mover's, points per
 * game; best first) into equity[i]. */
int gnubg_equities(gnubg *g, const char *id, int d1, int d2, int max_moves, char (*moves)[64],
                   float *equity, int *n, char *err, size_t errlen);

/* gnubg's judgement of a whole move: start a backgammon state with a fresh
 * roll, after_id the Position ID the move reached (from the mover's view,
 * backgammon_whole_move.after); *loss the equity gnubg's best move has over
 * it (0 when it is the best; points per game), *n_moves the distinct moves
 * of the roll (1: no decision). 0, KZ_EIO (gnubg failed) or KZ_EINVAL. */
int gnubg_move_loss(gnubg *g, const game_state *start, const char *after_id, float *loss,
                    int *n_moves, char *err, size_t errlen);

/* Plays gnubg's notation `text` ("13/3 8/3(2)", "bar/22* 6/off") for the
 * player on roll on own (on roll) and opp (25 counts each, index = point - 1,
 * 24 the bar; backgammon.h's layout), hits included. 0, or KZ_EINVAL when
 * the text does not read or moves a checker that is not there. */
int gnubg_play_notation(const char *text, uint8_t own[25], uint8_t opp[25]);

/* Compares our whole moves of s (a backgammon state with a fresh roll to
 * play) with gnubg's: the sets of distinct resulting positions. 0 when
 * equal, 1 when they differ (the first difference described in err), or
 * KZ_EIO / KZ_EINVAL (gnubg failed; s is not a fresh roll). *ours and
 * *theirs (may be NULL) get the two counts. */
int gnubg_compare_moves(gnubg *g, const game_state *s, int *ours, int *theirs, char *err,
                        size_t errlen);

/* The pid of the running gnubg (for tests that kill it). */
int gnubg_pid(const gnubg *g);

#endif
