/* ref_khreibaga: the naive reference rules for cross-checking the engine. See
 * ref_khreibaga.h. Written from the rules text (docs/rules.md) only; each step
 * cites its rule. */
#include "solve/ref_khreibaga.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The 8 directions (row step, column step). */
static const int s_dir[8][2] = {
    {1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}, {1, -1}, {-1, 1}, {-1, -1},
};

static int s_row(int sq) { return sq / 5; }
static int s_col(int sq) { return sq % 5; }
static bool s_on(int r, int c) { return r >= 0 && r < 5 && c >= 0 && c < 5; }

/* R1: a line runs from sq in direction k when the first step stays on the
 * board and, for a diagonal, (row + col) of sq is even. Every point further
 * along a diagonal from an even point is even too. */
static bool s_line(int sq, int k)
{
    int r = s_row(sq), c = s_col(sq);
    bool diag = s_dir[k][0] != 0 && s_dir[k][1] != 0;
    if (diag && (r + c) % 2 != 0)
        return false;
    return s_on(r + s_dir[k][0], c + s_dir[k][1]);
}

/* The i-th point (i >= 1) along direction k from sq, or -1 off the board. */
static int s_step(int sq, int k, int i)
{
    int r = s_row(sq) + i * s_dir[k][0], c = s_col(sq) + i * s_dir[k][1];
    return s_on(r, c) ? r * 5 + c : -1;
}

static bool s_is_side(char p, int side)
{
    return side == 0 ? (p == 'b' || p == 'B') : (p == 'w' || p == 'W');
}
static bool s_is_king(char p) { return p == 'B' || p == 'W'; }

/* --- capture sequences (R4, R6, R7, R8) ------------------------------------ */

/* One hop: from src over the captured point to dst. */
typedef struct s_hop {
    int src, dst, cap;
} s_hop;

/* All single capture hops of the piece on sq (its type as on the board:
 * a man stays a man mid-sequence, R10). Returns their count. */
static int s_hops(const char *board, int sq, s_hop *out)
{
    char me = board[sq];
    int side = (me == 'b' || me == 'B') ? 0 : 1, n = 0;
    for (int k = 0; k < 8; k++) {
        if (!s_line(sq, k))
            continue;
        if (!s_is_king(me)) {
            /* R4: over an adjacent enemy onto the empty point right behind it,
             * in any direction along a line. */
            int q = s_step(sq, k, 1), t = s_step(sq, k, 2);
            if (q >= 0 && t >= 0 && board[q] != '.' && !s_is_side(board[q], side) &&
                board[t] == '.')
                out[n++] = (s_hop){sq, t, q};
        } else {
            /* R6: empty points, exactly one enemy, then any of the consecutive
             * empty points behind it; a friendly piece or a second enemy stops. */
            int i = 1, q;
            while ((q = s_step(sq, k, i)) >= 0 && board[q] == '.')
                i++;
            if (q < 0 || s_is_side(board[q], side))
                continue;
            int t;
            for (int j = i + 1; (t = s_step(sq, k, j)) >= 0 && board[t] == '.'; j++)
                out[n++] = (s_hop){sq, t, q};
        }
    }
    return n;
}

/* A visitor of complete sequences. */
typedef struct s_visit {
    int max_len;              /* pass 1: the longest sequence seen */
    int want_len;             /* pass 2: only sequences of this length count */
    int nprefix;              /* pass 2: hops that must match */
    const int *pre_src;       /* their sources */
    const int *pre_dst;       /* their destinations */
    bool *mark;               /* pass 2: mark[action] for hop number nprefix */
} s_visit;

/* Depth-first enumeration of every complete sequence (a chain that goes on
 * until the piece has no capture, R8) continuing from `path[0..len)`. */
static void s_dfs(char *board, int sq, s_hop *path, int len, s_visit *v)
{
    s_hop hops[64];
    int n = s_hops(board, sq, hops);
    if (n == 0) {
        if (len == 0)
            return; /* no capture at all: not a sequence */
        if (!v->mark) {
            if (len > v->max_len)
                v->max_len = len;
            return;
        }
        if (len != v->want_len || len <= v->nprefix)
            return;
        for (int i = 0; i < v->nprefix; i++)
            if (path[i].src != v->pre_src[i] || path[i].dst != v->pre_dst[i])
                return;
        v->mark[path[v->nprefix].src * 25 + path[v->nprefix].dst] = true;
        return;
    }
    for (int i = 0; i < n; i++) {
        /* R7: the captured piece leaves at once; the start point is empty. */
        char me = board[sq], cap = board[hops[i].cap];
        board[sq] = '.';
        board[hops[i].cap] = '.';
        board[hops[i].dst] = me;
        path[len] = hops[i];
        s_dfs(board, hops[i].dst, path, len + 1, v);
        board[hops[i].dst] = '.';
        board[hops[i].cap] = cap;
        board[sq] = me;
    }
}

/* Runs the visitor over every sequence of the mover (or only of `piece`). */
static void s_all_sequences(const char *turn_board, int side, int piece, s_visit *v)
{
    char board[REF_POINTS];
    s_hop path[REF_MAX_HOPS];
    memcpy(board, turn_board, sizeof board);
    for (int sq = 0; sq < REF_POINTS; sq++)
        if (s_is_side(board[sq], side) && (piece < 0 || piece == sq))
            s_dfs(board, sq, path, 0, v);
}

/* Marks the hops of this turn that continue some longest sequence consistent
 * with the hops made so far (R8, R9); returns the longest length (0: none). */
static int s_capture_hops(const ref_game *g, bool *mark)
{
    s_visit v = {0};
    s_all_sequences(g->turn_board, g->side, g->turn_piece, &v);
    if (v.max_len == 0)
        return 0;
    v.want_len = v.max_len;
    v.nprefix = g->nhops;
    v.pre_src = g->hop_src;
    v.pre_dst = g->hop_dst;
    v.mark = mark;
    s_all_sequences(g->turn_board, g->side, g->turn_piece, &v);
    return v.max_len;
}

/* R3, R5: the simple moves of the mover. */
static void s_simple_moves(const ref_game *g, bool *mark)
{
    for (int sq = 0; sq < REF_POINTS; sq++) {
        char p = g->board[sq];
        if (!s_is_side(p, g->side))
            continue;
        for (int k = 0; k < 8; k++) {
            if (!s_line(sq, k))
                continue;
            if (!s_is_king(p)) {
                int forward = g->side == 0 ? 1 : -1;
                if (s_dir[k][0] != forward)
                    continue; /* R3: straight or diagonally forward only */
                int t = s_step(sq, k, 1);
                if (t >= 0 && g->board[t] == '.')
                    mark[sq * 25 + t] = true;
            } else {
                int t;
                for (int i = 1; (t = s_step(sq, k, i)) >= 0 && g->board[t] == '.'; i++)
                    mark[sq * 25 + t] = true;
            }
        }
    }
}

int ref_legal(const ref_game *g, int *out)
{
    bool mark[REF_ACTIONS] = {false};
    int longest = s_capture_hops(g, mark);
    if (longest == 0 && g->chain < 0)
        s_simple_moves(g, mark); /* R8: captures, when any, exclude simple moves */
    int n = 0;
    for (int a = 0; a < REF_ACTIONS; a++)
        if (mark[a])
            out[n++] = a;
    return n;
}

/* --- applying actions -------------------------------------------------------- */

static void s_record(ref_game *g)
{
    if (g->nhist < REF_MAX_HIST) {
        memcpy(g->hist[g->nhist].board, g->board, REF_POINTS);
        g->hist[g->nhist].side = g->side == 0 ? 'b' : 'w';
        g->nhist++;
    }
}

/* R10, R11, R13, R15: the turn ends. */
static void s_end_turn(ref_game *g, int last_dst, bool progress)
{
    char p = g->board[last_dst];
    if (p == 'b' && s_row(last_dst) == 4)
        g->board[last_dst] = 'B';
    if (p == 'w' && s_row(last_dst) == 0)
        g->board[last_dst] = 'W';
    g->no_progress = progress ? 0 : g->no_progress + 1;
    g->ply++;
    g->side ^= 1;
    g->chain = -1;
    g->turn_piece = -1;
    g->nhops = 0;
    memcpy(g->turn_board, g->board, REF_POINTS);
    s_record(g);
}

int ref_apply(ref_game *g, int action)
{
    int legal[REF_ACTIONS];
    int n = ref_legal(g, legal), ok = 0;
    for (int i = 0; i < n; i++)
        ok |= legal[i] == action;
    if (!ok)
        return -1;
    int src = action / 25, dst = action % 25;
    /* The piece between src and dst on their line, if any (R9: at most one). */
    int dr = s_row(dst) - s_row(src), dc = s_col(dst) - s_col(src);
    int sr = (dr > 0) - (dr < 0), sc = (dc > 0) - (dc < 0);
    int steps = abs(dr) > abs(dc) ? abs(dr) : abs(dc), cap = -1;
    for (int i = 1; i < steps; i++) {
        int q = (s_row(src) + i * sr) * 5 + s_col(src) + i * sc;
        if (g->board[q] != '.')
            cap = q;
    }
    char me = g->board[src];
    bool man = !s_is_king(me);
    g->board[src] = '.';
    g->board[dst] = me;
    if (cap < 0) {
        s_end_turn(g, dst, man); /* R11: a simple move ends the turn */
        return 0;
    }
    g->board[cap] = '.'; /* R7 */
    g->hop_src[g->nhops] = src;
    g->hop_dst[g->nhops] = dst;
    g->nhops++;
    g->chain = dst;
    /* R9, R11: the same player goes on while some longest sequence does. */
    int more[REF_ACTIONS];
    if (ref_legal(g, more) == 0)
        s_end_turn(g, dst, true);
    return 0;
}

/* --- the end of the game ------------------------------------------------------- */

int ref_count(const ref_game *g, int side)
{
    int n = 0;
    for (int sq = 0; sq < REF_POINTS; sq++)
        n += s_is_side(g->board[sq], side);
    return n;
}

int ref_repetitions(const ref_game *g)
{
    if (g->chain >= 0)
        return 0;
    char side = g->side == 0 ? 'b' : 'w';
    int n = 0;
    for (int i = 0; i < g->nhist; i++)
        n += g->hist[i].side == side && !memcmp(g->hist[i].board, g->board, REF_POINTS);
    return n;
}

const char *ref_result(const ref_game *g, int *winner)
{
    *winner = -1;
    if (g->chain >= 0)
        return NULL; /* R12: decided only at a turn start */
    int legal[REF_ACTIONS];
    if (ref_count(g, g->side) == 0) {
        *winner = g->side ^ 1;
        return "no-pieces";
    }
    if (ref_legal(g, legal) == 0) {
        *winner = g->side ^ 1;
        return "no-moves";
    }
    if (g->no_progress >= REF_NO_PROGRESS)
        return "no-progress";
    if (ref_repetitions(g) >= 3)
        return "repetition";
    if (g->ply >= REF_MAX_PLIES)
        return "length";
    return NULL;
}

/* --- text -------------------------------------------------------------------------- */

void ref_init(ref_game *g)
{
    char err[64];
    int rc = ref_parse(g, "bbbbbbbbbbbb.wwwwwwwwwwww b", err, sizeof err);
    (void)rc;
}

int ref_parse(ref_game *g, const char *str, char *err, size_t errlen)
{
    memset(g, 0, offsetof(ref_game, hist));
    size_t len = strlen(str);
    if (len != 27 && !(len >= 29 && len <= 30)) {
        snprintf(err, errlen, "wrong length %zu", len);
        return -1;
    }
    int nb = 0, nw = 0;
    for (int sq = 0; sq < REF_POINTS; sq++) {
        char p = str[sq];
        if (!strchr(".bBwW", p) || p == '\0') {
            snprintf(err, errlen, "bad piece '%c' at %d", p, sq);
            return -1;
        }
        g->board[sq] = p;
        nb += p == 'b' || p == 'B';
        nw += p == 'w' || p == 'W';
    }
    if (str[25] != ' ' || (str[26] != 'b' && str[26] != 'w')) {
        snprintf(err, errlen, "bad side to move");
        return -1;
    }
    g->side = str[26] == 'b' ? 0 : 1;
    g->chain = -1;
    if (len > 27) {
        if (str[27] != ' ' || str[28] < '0' || str[28] > '9' ||
            (len == 30 && (str[29] < '0' || str[29] > '9'))) {
            snprintf(err, errlen, "bad chain point");
            return -1;
        }
        g->chain = atoi(str + 28);
        if (g->chain > 24) {
            snprintf(err, errlen, "chain point out of range");
            return -1;
        }
    }
    if (nb > 12 || nw > 12) {
        snprintf(err, errlen, "more than 12 pieces a side");
        return -1;
    }
    /* A man on the row where it would have been crowned cannot exist at a turn
     * start (R10); mid-sequence only the chain piece may stand there. */
    for (int sq = 0; sq < REF_POINTS; sq++) {
        if ((g->board[sq] == 'b' && s_row(sq) == 4) || (g->board[sq] == 'w' && s_row(sq) == 0)) {
            if (sq != g->chain) {
                snprintf(err, errlen, "man on its promotion row at %d", sq);
                return -1;
            }
        }
    }
    memcpy(g->turn_board, g->board, REF_POINTS);
    g->turn_piece = -1;
    g->nhist = 0;
    if (g->chain >= 0) {
        /* R20: the chain piece must be the mover's and must have a capture. */
        s_hop hops[64];
        if (!s_is_side(g->board[g->chain], g->side) || s_hops(g->board, g->chain, hops) == 0) {
            snprintf(err, errlen, "chain piece without capture");
            return -1;
        }
        g->turn_piece = g->chain;
    } else {
        s_record(g); /* R14: the given position is its first occurrence */
    }
    return 0;
}

void ref_format(const ref_game *g, char *buf, size_t len)
{
    if (g->chain >= 0)
        snprintf(buf, len, "%.25s %c %d", g->board, g->side == 0 ? 'b' : 'w', g->chain);
    else
        snprintf(buf, len, "%.25s %c", g->board, g->side == 0 ? 'b' : 'w');
}

void ref_copy(ref_game *dst, const ref_game *src)
{
    memcpy(dst, src, offsetof(ref_game, hist));
    memcpy(dst->hist, src->hist, (size_t)src->nhist * sizeof src->hist[0]);
}

/* --- planes and perft ---------------------------------------------------------------- */

void ref_planes(const ref_game *g, float *out)
{
    memset(out, 0, 7 * 25 * sizeof *out);
    for (int sq = 0; sq < REF_POINTS; sq++) {
        char p = g->board[sq];
        if (p == '.')
            continue;
        /* R16: White to move sees the board turned by 180 degrees. */
        int csq = g->side == 0 ? sq : 24 - sq;
        bool own = s_is_side(p, g->side);
        int plane = (own ? 0 : 2) + (s_is_king(p) ? 1 : 0);
        out[plane * 25 + csq] = 1.0f;
    }
    float rep = ref_repetitions(g) >= 2 ? 1.0f : 0.0f;
    for (int i = 0; i < 25; i++) {
        out[4 * 25 + i] = rep;
        out[5 * 25 + i] = g->side == 0 ? 1.0f : 0.0f;
        out[6 * 25 + i] = (float)g->ply / REF_MAX_PLIES;
    }
}

uint64_t ref_perft(const ref_game *g, int depth)
{
    if (depth == 0)
        return 1;
    int winner;
    if (ref_result(g, &winner))
        return 0;
    int legal[REF_ACTIONS];
    int n = ref_legal(g, legal);
    uint64_t total = 0;
    ref_game *c = malloc(sizeof *c);
    for (int i = 0; i < n; i++) {
        ref_copy(c, g);
        ref_apply(c, legal[i]);
        total += ref_perft(c, depth - 1);
    }
    free(c);
    return total;
}
