/* ref_yinsh: the plain second implementation of Yinsh. See ref_yinsh.h. */
#include "tests/games/ref_yinsh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Y1: the numbers each column runs over. */
static const int LOW[11] = {2, 1, 1, 1, 1, 2, 2, 3, 4, 5, 7};
static const int HIGH[11] = {5, 7, 8, 9, 10, 10, 11, 11, 11, 11, 10};

static bool on_board(int l, int n) { return l >= 0 && l <= 10 && n >= LOW[l] && n <= HIGH[l]; }

/* Y1: the index of a point, counting in the order of the list. */
static int index_slow(int l, int n)
{
    int i = 0;
    for (int a = 0; a < 11; a++)
        for (int b = LOW[a]; b <= HIGH[a]; b++) {
            if (a == l && b == n)
                return i;
            i++;
        }
    return -1;
}

static void point_slow(int i, int *l, int *n)
{
    for (int a = 0; a < 11; a++)
        for (int b = LOW[a]; b <= HIGH[a]; b++)
            if (i-- == 0) {
                *l = a;
                *n = b;
                return;
            }
    abort();
}

/* The same, remembered (filled by count_actions). */
static int index_memo[11][12], letter_memo[85], number_memo[85];

static int index_of(int l, int n) { return on_board(l, n) ? index_memo[l][n] : -1; }

static void point_of(int i, int *l, int *n)
{
    *l = letter_memo[i];
    *n = number_memo[i];
}

/* Y2: the three line directions (letter step, number step): +number,
 * +letter, +both; the six directions are these and their opposites. */
static const int LINE_DL[3] = {0, 1, 1};
static const int LINE_DN[3] = {1, 0, 1};

static bool on_common_line(int i, int j)
{
    int a, b, c, d;
    point_of(i, &a, &b);
    point_of(j, &c, &d);
    return i != j && (a == c || b == d || a - b == c - d);
}

/* Y21's numbers, found by counting once. */
static int move_number[85][85];
static int window_number[85][3];
static int move_from_of[2142], move_to_of[2142], window_point_of[2142], window_dir_of[2142];
static int first_move, first_row, first_ring, pass_action;
static bool counted;

static void count_actions(void)
{
    if (counted)
        return;
    for (int l = 0; l < 11; l++)
        for (int n = 0; n < 12; n++)
            index_memo[l][n] = on_board(l, n) ? index_slow(l, n) : -1;
    for (int i = 0; i < 85; i++)
        point_slow(i, &letter_memo[i], &number_memo[i]);
    first_move = 85;
    int k = 0;
    for (int i = 0; i < 85; i++)
        for (int j = 0; j < 85; j++)
            if (on_common_line(i, j)) {
                move_from_of[first_move + k] = i;
                move_to_of[first_move + k] = j;
                move_number[i][j] = first_move + k++;
            } else {
                move_number[i][j] = -1;
            }
    first_row = first_move + k;
    k = 0;
    for (int i = 0; i < 85; i++) {
        int l, n;
        point_of(i, &l, &n);
        for (int d = 0; d < 3; d++)
            if (on_board(l + 4 * LINE_DL[d], n + 4 * LINE_DN[d])) {
                window_point_of[first_row + k] = i;
                window_dir_of[first_row + k] = d;
                window_number[i][d] = first_row + k++;
            } else {
                window_number[i][d] = -1;
            }
    }
    first_ring = first_row + k;
    pass_action = first_ring + 85;
    if (pass_action + 1 > 2142)
        abort(); /* more actions than Y21 counts */
    counted = true;
}

void ref_ys_init(ref_ys *p, int target)
{
    count_actions();
    memset(p, 0, sizeof *p);
    for (int l = 0; l < 11; l++)
        for (int n = 0; n < 12; n++)
            p->board[l][n] = on_board(l, n) ? '.' : ' ';
    p->target = target;
    p->todo = 'p';
    p->winner = -1;
}

static char ring_of(int side) { return side ? 'B' : 'W'; }
static char marker_of(int side) { return side ? 'b' : 'w'; }

static int count(const ref_ys *p, char what)
{
    int k = 0;
    for (int l = 0; l < 11; l++)
        for (int n = 0; n < 12; n++)
            k += p->board[l][n] == what;
    return k;
}

static const char *stage_name(char todo)
{
    return todo == 'p' ? "place" : todo == 'm' ? "move" : todo == 'r' ? "row" : "ring";
}

void ref_ys_format(const ref_ys *p, char *buf)
{
    int k = 0;
    for (int l = 0; l < 11; l++)
        for (int n = LOW[l]; n <= HIGH[l]; n++)
            buf[k++] = p->board[l][n];
    char flags[4] = "";
    if (p->after)
        strcat(flags, "a");
    if (p->acted)
        strcat(flags, "t");
    if (!flags[0])
        strcat(flags, "-");
    sprintf(buf + k, " %c %d%d %s %s", p->side ? 'b' : 'w', p->removed[0], p->removed[1],
            stage_name(p->todo), flags);
}

/* Y9: the windows of five markers of `side`'s colour, as Y21's numbers, in order. */
static int rows_of(const ref_ys *p, int side, int *out)
{
    int k = 0;
    for (int i = 0; i < 85; i++) {
        int l, n;
        point_of(i, &l, &n);
        for (int d = 0; d < 3; d++) {
            if (window_number[i][d] < 0)
                continue;
            bool all = true;
            for (int s = 0; s < 5; s++)
                all = all && p->board[l + s * LINE_DL[d]][n + s * LINE_DN[d]] == marker_of(side);
            if (all)
                out[k++] = window_number[i][d];
        }
    }
    return k;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Y6: the ring moves of `side`, as Y21's numbers, sorted. */
static int moves_of(const ref_ys *p, int side, int *out)
{
    int k = 0;
    for (int l = 0; l < 11; l++)
        for (int n = 0; n < 12; n++) {
            if (p->board[l][n] != ring_of(side))
                continue;
            for (int d = 0; d < 6; d++) {
                int dl = d < 3 ? LINE_DL[d] : -LINE_DL[d - 3];
                int dn = d < 3 ? LINE_DN[d] : -LINE_DN[d - 3];
                bool over_markers = false;
                for (int s = 1;; s++) {
                    int a = l + s * dl, b = n + s * dn;
                    if (!on_board(a, b))
                        break;
                    char c = p->board[a][b];
                    if (c == 'W' || c == 'B')
                        break;
                    if (c == 'w' || c == 'b') {
                        over_markers = true;
                        continue;
                    }
                    out[k++] = move_number[index_of(l, n)][index_of(a, b)];
                    if (over_markers)
                        break;
                }
            }
        }
    qsort(out, (size_t)k, sizeof *out, cmp_int);
    return k;
}

int ref_ys_legal(const ref_ys *p, int *out)
{
    if (p->over)
        return 0;
    int k = 0;
    if (p->todo == 'p') {
        for (int i = 0; i < 85; i++) {
            int l, n;
            point_of(i, &l, &n);
            if (p->board[l][n] == '.')
                out[k++] = i;
        }
    } else if (p->todo == 'm') {
        k = moves_of(p, p->side, out);
        if (k == 0)
            out[k++] = pass_action;
    } else if (p->todo == 'r') {
        k = rows_of(p, p->side, out);
    } else {
        for (int i = 0; i < 85; i++) {
            int l, n;
            point_of(i, &l, &n);
            if (p->board[l][n] == ring_of(p->side))
                out[k++] = first_ring + i;
        }
    }
    return k;
}

/* The end scored by the rings removed (Y17, Y18). */
static void end_by_rings_removed(ref_ys *p, int reason)
{
    p->over = true;
    p->reason = reason;
    p->winner = p->removed[0] == p->removed[1] ? -1 : p->removed[0] > p->removed[1] ? 0 : 1;
}

/* The other side's turn begins (Y4, Y14, Y17, Y18). */
static void next_turn(ref_ys *p, bool passed)
{
    int buf[REF_YS_MAX_LEGAL];
    p->side = 1 - p->side;
    p->after = false;
    p->acted = false;
    int rings = count(p, 'W') + count(p, 'B') + p->removed[0] + p->removed[1];
    if (rings < 10) {
        p->todo = 'p';
    } else if (rows_of(p, p->side, buf) > 0) {
        p->todo = 'r';
    } else {
        p->todo = 'm';
        if (count(p, 'w') + count(p, 'b') == 51)
            end_by_rings_removed(p, 2);
        else if (passed && moves_of(p, p->side, buf) == 0)
            end_by_rings_removed(p, 3);
    }
}

void ref_ys_apply(ref_ys *p, int a)
{
    int buf[REF_YS_MAX_LEGAL];
    int l, n, l2, n2;
    if (a < first_move) {
        point_of(a, &l, &n);
        p->board[l][n] = ring_of(p->side);
        next_turn(p, false);
    } else if (a < first_row) {
        int from = move_from_of[a], to = move_to_of[a];
        point_of(from, &l, &n);
        point_of(to, &l2, &n2);
        int steps = abs(l2 - l) > abs(n2 - n) ? abs(l2 - l) : abs(n2 - n);
        int dl = (l2 - l) / steps, dn = (n2 - n) / steps;
        p->board[l][n] = marker_of(p->side);
        for (int s = 1; s < steps; s++) {
            char *c = &p->board[l + s * dl][n + s * dn];
            if (*c == 'w')
                *c = 'b';
            else if (*c == 'b')
                *c = 'w';
        }
        p->board[l2][n2] = ring_of(p->side);
        if (rows_of(p, p->side, buf) > 0) {
            p->todo = 'r';
            p->after = true;
            p->acted = true;
        } else {
            next_turn(p, false);
        }
    } else if (a < first_ring) {
        int d = window_dir_of[a];
        point_of(window_point_of[a], &l, &n);
        for (int s = 0; s < 5; s++)
            p->board[l + s * LINE_DL[d]][n + s * LINE_DN[d]] = '.';
        p->todo = 'x';
        p->acted = true;
    } else if (a < pass_action) {
        point_of(a - first_ring, &l, &n);
        p->board[l][n] = '.';
        p->removed[p->side]++;
        p->acted = true;
        if (p->removed[p->side] == p->target) {
            p->over = true;
            p->winner = p->side;
            p->reason = 1;
            p->side = 1 - p->side;
            p->acted = false;
            p->after = false;
        } else if (rows_of(p, p->side, buf) > 0) {
            p->todo = 'r';
        } else if (p->after) {
            next_turn(p, false);
        } else {
            p->todo = 'm';
        }
    } else {
        next_turn(p, true);
    }
}

int ref_ys_parse_action(const char *text)
{
    count_actions();
    if (!strcmp(text, "pass"))
        return pass_action;
    int pts[2], np = 0;
    char sep = 0;
    bool ring = text[0] == 'x';
    const char *q = text + ring;
    while (np < 2) {
        if (*q < 'a' || *q > 'k')
            return -1;
        int l = *q++ - 'a';
        char *end;
        long n = strtol(q, &end, 10);
        if (end == q || *q == '0' || !on_board(l, (int)n))
            return -1;
        pts[np++] = index_of(l, (int)n);
        q = end;
        if (*q == '-' || *q == ':') {
            if (np == 2 || ring)
                return -1;
            sep = *q++;
        } else {
            break;
        }
    }
    if (*q)
        return -1;
    if (np == 1)
        return sep ? -1 : ring ? first_ring + pts[0] : pts[0];
    if (sep == '-')
        return move_number[pts[0]][pts[1]];
    for (int d = 0; d < 3; d++)
        for (int e = 0; e < 2; e++) {
            int from = pts[e], to = pts[1 - e], l, n;
            point_of(from, &l, &n);
            if (window_number[from][d] >= 0 &&
                index_of(l + 4 * LINE_DL[d], n + 4 * LINE_DN[d]) == to)
                return window_number[from][d];
        }
    return -1;
}

uint64_t ref_ys_perft(const ref_ys *p, int depth)
{
    if (depth == 0)
        return 1;
    int legal[REF_YS_MAX_LEGAL];
    int k = ref_ys_legal(p, legal);
    uint64_t total = 0;
    for (int i = 0; i < k; i++) {
        ref_ys c = *p;
        ref_ys_apply(&c, legal[i]);
        total += ref_ys_perft(&c, depth - 1);
    }
    return total;
}
