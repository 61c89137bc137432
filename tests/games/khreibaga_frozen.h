/* khreibaga_frozen: a frozen copy of the Khreibaga rules engine (the commit
 * is named at the top of khreibaga_frozen.c), kept only as the oracle of the
 * differential test (test_khreibaga_diff.c). Same interface as khreibaga.h
 * under khreibaga_frozen_* names, so both engines link into the one test
 * runner. Never optimise or "fix" this copy: a rules fix goes into
 * games/khreibaga.c, and then this copy is replaced by the fixed engine as a
 * whole (copy, keep the renaming block at its top). */
#ifndef KZ_KHREIBAGA_FROZEN_H
#define KZ_KHREIBAGA_FROZEN_H

#include "games/game.h"

/* The constants of khreibaga.h (identical values; guarded so that a file can
 * include both headers). */
#ifndef KH_POINTS
#define KH_POINTS 25
#define KH_ACTIONS 625
#define KH_MAX_PLIES 300
#define KH_NO_PROGRESS 50
#define KH_START "bbbbbbbbbbbb.wwwwwwwwwwww b"
#endif

extern const game_def khreibaga_frozen_game;
char khreibaga_frozen_piece_at(const game_state *s, int sq);
int khreibaga_frozen_chain_point(const game_state *s);
int khreibaga_frozen_no_progress(const game_state *s);
int khreibaga_frozen_repetitions(const game_state *s);

#endif
