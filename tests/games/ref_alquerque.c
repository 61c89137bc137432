/* ref_alquerque: see ref_alquerque.h. Every rule is looked up from the
 * board the slow way, each step named after its rule. */
#include "tests/games/ref_alquerque.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The eight directions (drow, dcol). */
static const int DIRS[8][2] = {{1, 0},  {-1, 0}, {0, 1},  {0, -1},
                               {1, 1},  {1, -1}, {-1, 1}, {-1, -1}};

/* A1: the point one step from (r, c) in direction d on a line, or -1. */
static int s_next(int r, int c, int d)
{
    int dr = DIRS[d][0], dc = DIRS[d][1];
    if (dr != 0 && dc != 0 && (r + c) % 2 != 0)
        return -1; /* diagonals only through points with row + col even */
    int r2 = r + dr, c2 = c + dc;
    if (r2 < 0 || r2 > 4 || c2 < 0 || c2 > 4)
        return -1;
    return r2 * 5 + c2;
}

static char s_mine(int side) { return side == 0 ? 'l' : 'd'; }
static char s_theirs(int side) { return side == 0 ? 'd' : 'l'; }

void ref_alq_init(ref_alq *p)
{
    /* A2: Light on 0..9, 13, 14; Dark on 15..24, 10, 11; 12 empty. */
    for (int sq = 0; sq < 25; sq++) {
        p->board[sq] = (sq <= 9 || sq == 13 || sq == 14) ? 'l' : (sq == 12 ? '.' : 'd');
        p->prev[sq] = -1;
    }
    p->side = 0;
    p->chain = -1;
}

bool ref_alq_parse(ref_alq *p, const char *text)
{
    if (strlen(text) < 27)
        return false;
    for (int sq = 0; sq < 25; sq++) {
        p->board[sq] = text[sq];
        p->prev[sq] = -1;
    }
    p->side = text[26] == 'd';
    p->chain = -1;
    const char *q = text + 27;
    while (*q == ' ') {
        q++;
        char *end;
        long a = strtol(q, &end, 10);
        if (end == q)
            return false;
        if (*end == '-') {
            long b = strtol(end + 1, &end, 10);
            p->prev[b] = (int)a; /* the piece on b came from a */
        } else {
            p->chain = (int)a;
        }
        q = end;
    }
    return *q == '\0';
}

/* A7: the jumps of the mover's piece on sq, appended. */
static int s_jumps(const ref_alq *p, int sq, int *out)
{
    int n = 0;
    for (int d = 0; d < 8; d++) {
        int mid = s_next(sq / 5, sq % 5, d);
        if (mid < 0)
            continue;
        int land = s_next(mid / 5, mid % 5, d); /* straight on along the same line */
        if (land < 0)
            continue;
        if (p->board[mid] == s_theirs(p->side) && p->board[land] == '.')
            out[n++] = sq * 25 + land;
    }
    return n;
}

/* A4, A5, A6: the simple moves of the mover's piece on sq, appended. */
static int s_steps(const ref_alq *p, int sq, int *out)
{
    int r = sq / 5, n = 0;
    int base = p->side == 0 ? 4 : 0; /* the opponent's base row */
    if (r == base)
        return 0; /* A5 */
    for (int d = 0; d < 8; d++) {
        int forward = p->side == 0 ? DIRS[d][0] : -DIRS[d][0];
        if (forward < 0)
            continue; /* A4: never backward */
        int to = s_next(r, sq % 5, d);
        if (to < 0 || p->board[to] != '.')
            continue;
        if (p->prev[sq] == to)
            continue; /* A6: not back to where its last simple move came from */
        out[n++] = sq * 25 + to;
    }
    return n;
}

static int s_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int ref_alq_legal(const ref_alq *p, int *out)
{
    int n = 0;
    if (p->chain >= 0) {
        n = s_jumps(p, p->chain, out); /* A9: only the piece that jumped */
    } else {
        for (int sq = 0; sq < 25; sq++)
            if (p->board[sq] == s_mine(p->side))
                n += s_jumps(p, sq, out + n);
        if (n == 0) /* A8: a capture, if there is one, must be made */
            for (int sq = 0; sq < 25; sq++)
                if (p->board[sq] == s_mine(p->side))
                    n += s_steps(p, sq, out + n);
    }
    qsort(out, (size_t)n, sizeof *out, s_cmp);
    return n;
}

void ref_alq_apply(ref_alq *p, int action)
{
    int src = action / 25, dst = action % 25;
    int sr = src / 5, sc = src % 5, dr = dst / 5, dc = dst % 5;
    bool jump = abs(dr - sr) == 2 || abs(dc - sc) == 2;
    p->board[dst] = p->board[src];
    p->board[src] = '.';
    p->prev[src] = -1;
    if (jump) {
        int mid = ((sr + dr) / 2) * 5 + (sc + dc) / 2;
        p->board[mid] = '.'; /* A7, A10 */
        p->prev[mid] = -1;
        p->prev[dst] = -1; /* a jump: no point to go back to (A6's choice) */
        int more[8];
        p->chain = -1;
        if (s_jumps(p, dst, more) > 0) {
            p->chain = dst; /* A9 */
            return;
        }
    } else {
        p->prev[dst] = src;
    }
    p->chain = -1;
    p->side = 1 - p->side;
}

bool ref_alq_over(const ref_alq *p, int *winner)
{
    if (p->chain >= 0)
        return false;
    int moves[REF_ALQ_MAX_LEGAL];
    if (ref_alq_legal(p, moves) == 0) { /* A12: no piece means no action too */
        *winner = 1 - p->side;
        return true;
    }
    return false;
}

uint64_t ref_alq_perft(const ref_alq *p, int depth)
{
    if (depth == 0)
        return 1;
    int w;
    if (ref_alq_over(p, &w))
        return 0;
    int moves[REF_ALQ_MAX_LEGAL];
    int n = ref_alq_legal(p, moves);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        ref_alq c = *p;
        ref_alq_apply(&c, moves[i]);
        total += ref_alq_perft(&c, depth - 1);
    }
    return total;
}

uint64_t ref_alq_perft_turns(const ref_alq *p, int depth)
{
    if (depth == 0)
        return 1;
    int w;
    if (ref_alq_over(p, &w))
        return 0;
    int moves[REF_ALQ_MAX_LEGAL];
    int n = ref_alq_legal(p, moves);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        ref_alq c = *p;
        ref_alq_apply(&c, moves[i]);
        total += ref_alq_perft_turns(&c, c.chain >= 0 ? depth : depth - 1);
    }
    return total;
}
