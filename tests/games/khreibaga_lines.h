/* khreibaga_lines: long action sequences (R21 notation) shared by the
 * Khreibaga tests, for the rules that only show after hundreds of plies.
 *
 * KL_FORTRESS is a position with both kings behind their own men; from it
 * KL_LONG_PREFIX (299 actions: kings touring, men stepping now and then,
 * with captures) continues either with KL_LONG_TAIL_LENGTH, after which the
 * game stands at ply 300 with pieces and moves on both sides (R15: draw by
 * length), or with KL_LONG_TAIL_LOSS, whose last capture at ply 300 takes
 * Black's last piece (R12: the loss stands although R15 holds too).
 *
 * The lines were found by a depth-first search over the engine with a
 * "stall" heuristic (king moves to unseen positions, a man move every 40
 * plies or so); they are plain data, judged by the tests: every action must
 * be legal to the engine and to the independent reference, and both must
 * find the game going on until ply 300. */
#ifndef KZ_TESTS_KHREIBAGA_LINES_H
#define KZ_TESTS_KHREIBAGA_LINES_H

#define KL_FORTRESS "bbbbbb.B.b.....w.W.wwwwww b"

#define KL_LONG_PREFIX \
    "7-8 17-16 8-13 16-10 13-14 10-16 14-8 16-10 8-6 10-16 6-10 16-17 10-11 17-18 11-6 " \
    "18-14 6-10 14-18 10-14 18-17 14-10 17-16 10-6 16-17 6-7 17-18 7-8 18-14 8-7 14-10 " \
    "7-8 10-11 8-6 11-10 6-7 10-16 7-6 16-18 6-7 18-14 2-6 14-13 7-8 13-14 8-2 14-18 " \
    "2-12 18-14 12-10 14-2 6-11 2-14 0-6 14-2 10-16 2-0 0-12 12-10 10-0 16-11 0-1 11-13 " \
    "1-6 13-8 6-1 8-12 1-0 12-2 0-5 2-12 5-10 12-7 10-16 7-5 16-1 5-0 1-11 0-5 11-14 5-6 " \
    "14-10 6-8 10-0 8-7 0-1 7-2 1-0 2-8 0-5 8-13 5-10 13-14 10-16 14-2 16-11 2-0 11-10 " \
    "0-1 10-14 1-0 22-17 0-6 14-22 6-5 22-14 5-0 14-13 0-6 13-10 6-7 10-22 7-6 22-16 6-5 " \
    "16-1 5-8 1-11 8-2 11-12 2-1 12-10 1-2 10-22 2-1 22-14 1-2 14-22 2-7 20-16 7-5 16-10 " \
    "5-0 22-14 0-1 14-12 1-11 12-0 11-13 0-18 13-8 18-14 8-7 14-22 7-8 22-18 8-20 18-22 " \
    "20-8 22-18 8-14 18-6 14-2 6-12 2-8 12-0 8-7 0-12 7-2 10-5 2-0 12-10 0-2 10-22 2-8 " \
    "22-14 8-2 14-12 2-10 12-13 10-0 0-20 20-22 22-12 12-14 23-18 14-22 19-14 9-19 24-14 " \
    "22-18 14-22 4-8 22-16 8-13 16-10 3-8 10-6 13-18 6-0 18-23 0-1 23-22 1-2 22-14 2-22 " \
    "14-4 22-23 4-3 23-20 3-4 20-21 4-1 21-23 1-3 23-21 3-0 21-24 0-15 24-6 8-14 6-0 " \
    "15-20 0-2 20-10 2-22 10-2 22-20 2-3 20-16 3-2 16-22 2-0 22-20 0-6 20-4 6-9 4-2 9-4 " \
    "2-0 4-16 0-2 16-19 2-6 19-17 6-11 17-2 11-21 2-17 21-20 17-19 20-15 19-24 15-0 " \
    "24-22 0-3 22-10 3-1 10-22 1-4 14-18 4-1 22-7 1-0 7-12 0-10 12-2 10-11 2-0 11-16 " \
    "18-22 16-4 0-6 4-0 6-9 0-20 22-17 20-0 17-16 0-5 16-8 5-15 8-6 15-5 6-1 5-10 1-0 " \
    "10-22 0-4 22-10 4-1 10-13 1-16 13-3 9-5 3-4 16-20 4-24 5-8 24-4 8-23 4-0 20-16 0-5 " \
    "16-1 5-15 1-3 15-5 3-2 5-15 "

#define KL_LONG_TAIL_LENGTH "2-0 15-17 0-4 17-7 4-0 7-9 0-15 9-4"
#define KL_LONG_TAIL_LOSS "2-17 15-19 23-13 19-14 13-3 14-4 3-1 4-0"

/* R12 over R13: from KL_CAGE (White to move) both kings alone move for 50
 * plies; Black's 50th, 21-6, shuts White's king on 5 in (6 is Black's king
 * with White's own man on 7 behind it, 0 below, 10 and 15 above) while
 * White's man on 7 is blocked by 2 and can jump nothing. At that turn start
 * the no-progress count reaches 50 (R13) and White has no action (R12): the
 * loss stands. Found by a search over king walks on the engine, like the
 * lines above. */
#define KL_CAGE "bBb.b..w.Wb.b..b.bb...... w"
#define KL_CAGE_LINE \
    "9-19 1-11 19-24 11-1 24-19 1-11 19-24 11-1 24-20 1-16 20-21 16-1 21-20 1-16 20-21 " \
    "16-20 21-6 20-21 6-5 21-20 5-6 20-22 6-5 22-23 5-6 23-20 6-5 20-22 5-6 22-20 6-5 " \
    "20-22 5-6 22-23 6-5 23-24 5-6 24-14 6-11 14-13 11-21 13-14 21-6 14-19 6-5 19-24 " \
    "5-6 24-21 6-5 21-6"

#endif
