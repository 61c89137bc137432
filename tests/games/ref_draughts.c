/* ref_draughts: see ref_draughts.h. Every rule is looked up from the board
 * the slow way, each step named after its rule. */
#include "tests/games/ref_draughts.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"

/* D1: whether (row, col) is a playable (dark) square: the standard diagram
 * has a light square in its top-left corner. */
static bool s_dark(int row, int col)
{
    return row >= 0 && row < 8 && col >= 0 && col < 8 && (row + col) % 2 == 1;
}

/* D1: the number of the dark square (row, col), counting the dark squares
 * in reading order from the top-left of the standard diagram. */
static int s_numbers[8][8]; /* the count, made once (0: not yet) */
static int s_number(int row, int col)
{
    if (!s_numbers[0][1]) {
        int n = 0;
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++)
                s_numbers[r][c] = s_dark(r, c) ? ++n : 0;
    }
    return s_numbers[row][col];
}

/* The (row, col) of square number n. */
static void s_where(int n, int *row, int *col)
{
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            if (s_dark(r, c) && s_number(r, c) == n) {
                *row = r;
                *col = c;
                return;
            }
}

static bool s_is_mine(char p, int side)
{
    return side == 0 ? (p == 'b' || p == 'B') : (p == 'w' || p == 'W');
}
static bool s_is_theirs(char p, int side) { return s_is_mine(p, 1 - side); }
static bool s_is_king(char p) { return p == 'B' || p == 'W'; }

/* D4, D5, D6: may the piece p go in row direction dr? Black's men go down
 * the diagram (to higher numbers), White's up, kings both ways. */
static bool s_may_go(char p, int dr)
{
    if (s_is_king(p))
        return true;
    return p == 'b' ? dr == 1 : dr == -1;
}

static void s_remember(ref_dr *p)
{
    ref_dr_seen *e = &p->seen[p->n_seen++];
    memcpy(e->board, p->board, sizeof p->board);
    e->side = p->side;
}

void ref_dr_init(ref_dr *p)
{
    /* D2: Black's twelve men on 1-12, White's on 21-32, Black to move. */
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) {
            int n = s_dark(r, c) ? s_number(r, c) : 0;
            p->board[r][c] = !n ? ' ' : n <= 12 ? 'b' : n >= 21 ? 'w' : '.';
        }
    p->side = 0;
    p->chain = 0;
    p->quiet = 0;
    p->seen = calloc(REF_DR_MAX_TURNS, sizeof *p->seen);
    p->n_seen = 0;
    s_remember(p);
}

void ref_dr_free(ref_dr *p)
{
    free(p->seen);
    p->seen = NULL;
}

bool ref_dr_parse(ref_dr *p, const char *text)
{
    if (strlen(text) < 34)
        return false;
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            p->board[r][c] = s_dark(r, c) ? text[s_number(r, c) - 1] : ' ';
    p->side = text[33] == 'w';
    p->chain = text[34] == ' ' ? atoi(text + 35) : 0;
    p->quiet = 0;
    p->n_seen = 0;
    s_remember(p);
    return true;
}

void ref_dr_format(const ref_dr *p, char *buf)
{
    for (int n = 1; n <= 32; n++) {
        int r, c;
        s_where(n, &r, &c);
        buf[n - 1] = p->board[r][c];
    }
    int k = 32 + sprintf(buf + 32, " %c", p->side ? 'w' : 'b');
    if (p->chain)
        sprintf(buf + k, " %d", p->chain);
}

/* D6: the jumps of the mover's piece on (r, c), appended. */
static int s_jumps(const ref_dr *p, int r, int c, int *out)
{
    int n = 0;
    char me = p->board[r][c];
    for (int dr = -1; dr <= 1; dr += 2)
        for (int dc = -1; dc <= 1; dc += 2) {
            if (!s_may_go(me, dr))
                continue;
            int mr = r + dr, mc = c + dc, lr = r + 2 * dr, lc = c + 2 * dc;
            if (!s_dark(lr, lc))
                continue;
            if (s_is_theirs(p->board[mr][mc], p->side) && p->board[lr][lc] == '.')
                out[n++] = (s_number(r, c) - 1) * 32 + s_number(lr, lc) - 1;
        }
    return n;
}

/* D4, D5: the simple moves of the mover's piece on (r, c), appended. */
static int s_steps(const ref_dr *p, int r, int c, int *out)
{
    int n = 0;
    char me = p->board[r][c];
    for (int dr = -1; dr <= 1; dr += 2)
        for (int dc = -1; dc <= 1; dc += 2) {
            if (!s_may_go(me, dr))
                continue;
            if (s_dark(r + dr, c + dc) && p->board[r + dr][c + dc] == '.')
                out[n++] = (s_number(r, c) - 1) * 32 + s_number(r + dr, c + dc) - 1;
        }
    return n;
}

static int s_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The legal actions by D6-D8, the game's end left aside. */
static int s_legal(const ref_dr *p, int *out)
{
    int n = 0;
    if (p->chain) {
        int r, c;
        s_where(p->chain, &r, &c);
        n = s_jumps(p, r, c, out); /* D8: only the piece that jumped */
    } else {
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++)
                if (s_is_mine(p->board[r][c], p->side))
                    n += s_jumps(p, r, c, out + n);
        if (n == 0) /* D7: a capture, if there is one, must be made */
            for (int r = 0; r < 8; r++)
                for (int c = 0; c < 8; c++)
                    if (s_is_mine(p->board[r][c], p->side))
                        n += s_steps(p, r, c, out + n);
    }
    qsort(out, (size_t)n, sizeof *out, s_cmp);
    return n;
}

/* D14: how often this turn start's position has stood at a turn start. */
static int s_times_seen(const ref_dr *p)
{
    int k = 0;
    for (int i = 0; i < p->n_seen; i++)
        if (p->seen[i].side == p->side && !memcmp(p->seen[i].board, p->board, sizeof p->board))
            k++;
    return k;
}

bool ref_dr_over(const ref_dr *p, int *winner, int *reason)
{
    if (p->chain)
        return false;
    int pieces = 0;
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            pieces += s_is_mine(p->board[r][c], p->side);
    int moves[REF_DR_MAX_LEGAL];
    *winner = 1 - p->side;
    if (pieces == 0) {
        *reason = GAME_REASON_NO_PIECES; /* D12 */
        return true;
    }
    if (s_legal(p, moves) == 0) {
        *reason = GAME_REASON_NO_MOVES; /* D12 */
        return true;
    }
    *winner = -1; /* D15: the losses above come first */
    if (p->quiet >= 80) {
        *reason = GAME_REASON_NO_PROGRESS; /* D13: 40 moves a side */
        return true;
    }
    if (s_times_seen(p) >= 3) {
        *reason = GAME_REASON_REPETITION; /* D14 */
        return true;
    }
    return false;
}

int ref_dr_legal(const ref_dr *p, int *out)
{
    int w, why;
    if (ref_dr_over(p, &w, &why))
        return 0;
    return s_legal(p, out);
}

void ref_dr_apply(ref_dr *p, int action)
{
    int sr, sc, dr, dc;
    s_where(action / 32 + 1, &sr, &sc);
    s_where(action % 32 + 1, &dr, &dc);
    char piece = p->board[sr][sc];
    bool jump = abs(dr - sr) == 2;
    p->board[dr][dc] = piece;
    p->board[sr][sc] = '.';
    bool crowned = false;
    if ((piece == 'b' && dr == 7) || (piece == 'w' && dr == 0)) {
        p->board[dr][dc] = (char)toupper(piece); /* D10 */
        crowned = true;
    }
    if (jump) {
        p->board[(sr + dr) / 2][(sc + dc) / 2] = '.'; /* D6, D9 */
        p->quiet = 0;
        int more[4];
        p->chain = 0;
        if (!crowned && s_jumps(p, dr, dc, more) > 0) { /* D10: a crowning ends the turn */
            p->chain = s_number(dr, dc); /* D8 */
            return;
        }
    } else {
        p->quiet = s_is_king(piece) ? p->quiet + 1 : 0; /* D13 */
    }
    p->chain = 0;
    p->side = 1 - p->side;
    s_remember(p);
}

uint64_t ref_dr_perft(const ref_dr *p, int depth)
{
    if (depth == 0)
        return 1;
    int moves[REF_DR_MAX_LEGAL];
    int n = ref_dr_legal(p, moves);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        ref_dr c = *p; /* shares the history, used as a stack below n_seen */
        ref_dr_apply(&c, moves[i]);
        total += ref_dr_perft(&c, depth - 1);
    }
    return total;
}

uint64_t ref_dr_perft_turns(const ref_dr *p, int depth)
{
    if (depth == 0)
        return 1;
    int moves[REF_DR_MAX_LEGAL];
    int n = ref_dr_legal(p, moves);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        ref_dr c = *p;
        ref_dr_apply(&c, moves[i]);
        total += ref_dr_perft_turns(&c, c.chain ? depth : depth - 1);
    }
    return total;
}
