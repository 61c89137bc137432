/* draughts: the rules engine of English draughts (docs/rules-draughts.md
 * D1-D22).
 *
 * Representation. Bitboards in 32-bit words, bit sq = square sq + 1 of the
 * standard numbering: the pieces of each colour (by colour, not by mover,
 * so that the repetition history below reads the same whichever side
 * moves) and the kings of both. Tables built once give each square's
 * diagonal neighbours and jump landings in the order (row - 1, left),
 * (row - 1, right), (row + 1, left), (row + 1, right), which is ascending by
 * square, so the legal actions come out ascending without sorting.
 *
 * History (D13, D14). A man move or a capture can never be undone (men only
 * go forward, pieces only leave), so a position can only recur among the
 * turn starts since the last of them, and in that span only kings move and
 * the men stand still. The state keeps those quiet turns' king moves
 * (from, to: two bytes each, at most DR_QUIET_DRAW), and after each one
 * walks them back to count how often the new position has stood before. */
#include "games/draughts.h"

#include <assert.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/view.h"

#define MAX_SIDE 12      /* D2, D19: pieces of a side at most */
#define ROW0 0xfu        /* squares 1-4: Black's back row, White's crowning row */
#define ROW7 0xf0000000u /* squares 29-32: White's back row, Black's crowning row */

typedef struct dr_state {
    uint32_t pieces[2]; /* the pieces of Black (0) and White (1) */
    uint32_t kings;     /* the kings among them */
    uint16_t ply;       /* completed turns */
    uint8_t side;       /* player to move: 0 Black, 1 White */
    int8_t chain;       /* square of the piece that must jump on, -1 at a turn start */
    uint8_t quiet;      /* D13: turns in a row of kings' simple moves (entries of moves) */
    uint8_t reps;       /* D14: occurrences of this turn start's position so far (1..3) */
    uint8_t moves[2 * DR_QUIET_DRAW]; /* those turns' king moves: from, to */
} dr_state;

_Static_assert(sizeof(dr_state) <= GAME_STATE_BYTES, "dr_state must fit game_state");

static struct {
    int8_t step[DR_SQUARES][4];  /* the diagonal neighbour in each direction, or -1 */
    int8_t land[DR_SQUARES][4];  /* the square two steps on (a jump's landing), or -1 */
    int8_t over[DR_SQUARES][DR_SQUARES]; /* the square between src and dst of a jump, or -1 */
    int16_t cell[DR_SQUARES];    /* D17: the plane cell (row*8 + col) of a square, Black's view */
} T;

/* Directions as (drow, dcol), in the order that keeps destinations ascending. */
static const int DR[4] = {-1, -1, 1, 1};
static const int DC[4] = {-1, 1, -1, 1};

/* D1: a square's row (0 at squares 1-4) and column (0 at the a-file). */
static int s_row(int sq) { return sq >> 2; }
static int s_col(int sq) { return 2 * (sq & 3) + ((sq >> 2) % 2 == 0); }

/* The square at (row, col), or -1 off the board or on a light square. */
static int s_square(int r, int c)
{
    if (r < 0 || r > 7 || c < 0 || c > 7 || (r + c) % 2 == 0)
        return -1;
    return r * 4 + c / 2;
}

/* Filled once before main() runs; read-only afterwards (so thread-safe). */
__attribute__((constructor)) static void s_init_tables(void)
{
    memset(&T, -1, sizeof T);
    for (int sq = 0; sq < DR_SQUARES; sq++) {
        int r = s_row(sq), c = s_col(sq);
        T.cell[sq] = (int16_t)(r * 8 + c);
        for (int d = 0; d < 4; d++) {
            T.step[sq][d] = (int8_t)s_square(r + DR[d], c + DC[d]);
            int to = s_square(r + 2 * DR[d], c + 2 * DC[d]);
            if (to >= 0) {
                T.land[sq][d] = (int8_t)to;
                T.over[sq][to] = T.step[sq][d];
            }
        }
    }
}

static inline dr_state *S(game_state *g) { return (dr_state *)g->bytes; }
static inline const dr_state *CS(const game_state *g) { return (const dr_state *)g->bytes; }
static inline int s_lsb(uint32_t x) { return __builtin_ctz(x); }

/* The directions a piece on sq of the mover may go (D4-D6): men forward
 * only (Black to higher rows, White to lower), kings all four. */
static inline void s_dirs(const dr_state *s, int sq, int *lo, int *hi)
{
    if (s->kings >> sq & 1)
        *lo = 0, *hi = 4;
    else if (s->side == 0)
        *lo = 2, *hi = 4;
    else
        *lo = 0, *hi = 2;
}

/* The jumps of the mover's piece on sq (D6), appended to out; their count. */
static inline int s_jumps(const dr_state *s, int sq, uint16_t *out)
{
    uint32_t opp = s->pieces[s->side ^ 1];
    uint32_t empty = ~(opp | s->pieces[s->side]);
    int lo, hi, n = 0;
    s_dirs(s, sq, &lo, &hi);
    for (int d = lo; d < hi; d++) {
        int to = T.land[sq][d];
        if (to >= 0 && (opp >> T.step[sq][d] & 1) && (empty >> to & 1))
            out[n++] = (uint16_t)(sq * 32 + to);
    }
    return n;
}

/* Whether the mover's piece on sq can jump (D6). */
static inline bool s_can_jump(const dr_state *s, int sq)
{
    uint16_t tmp[4];
    return s_jumps(s, sq, tmp) > 0;
}

/* The simple moves of the mover's piece on sq (D4, D5), appended. */
static inline int s_steps(const dr_state *s, int sq, uint16_t *out)
{
    uint32_t empty = ~(s->pieces[0] | s->pieces[1]);
    int lo, hi, n = 0;
    s_dirs(s, sq, &lo, &hi);
    for (int d = lo; d < hi; d++) {
        int to = T.step[sq][d];
        if (to >= 0 && (empty >> to & 1))
            out[n++] = (uint16_t)(sq * 32 + to);
    }
    return n;
}

/* The legal actions, ascending (D7, D8, D11), game end aside; their count. */
static int s_legal(const dr_state *s, uint16_t *out)
{
    if (s->chain >= 0)
        return s_jumps(s, s->chain, out); /* D8: the same piece jumps on */
    uint32_t own = s->pieces[s->side];
    int n = 0;
    for (uint32_t m = own; m; m &= m - 1)
        n += s_jumps(s, s_lsb(m), out + n);
    if (n)
        return n; /* D7: a capture must be made, any of them */
    for (uint32_t m = own; m; m &= m - 1)
        n += s_steps(s, s_lsb(m), out + n);
    return n;
}

/* Whether the mover has a legal action (D12), without listing them. */
static bool s_has_action(const dr_state *s)
{
    uint16_t tmp[4];
    for (uint32_t m = s->pieces[s->side]; m; m &= m - 1)
        if (s_steps(s, s_lsb(m), tmp) || s_can_jump(s, s_lsb(m)))
            return true;
    return false;
}

/* Whether a turn start is drawn by D13 or D14 (its losses come first, D15). */
static inline bool s_drawn(const dr_state *s)
{
    return s->chain < 0 && (s->quiet >= DR_QUIET_DRAW || s->reps >= 3);
}

static int dr_legal_actions(const game_state *g, uint16_t *out)
{
    const dr_state *s = CS(g);
    return s_drawn(s) ? 0 : s_legal(s, out);
}

/* The bytes of the state in use: the fixed part and the quiet turns' moves. */
static inline size_t s_used(const dr_state *s)
{
    return offsetof(dr_state, moves) + 2u * s->quiet;
}

static void dr_copy(game_state *dst, const game_state *src)
{
    memcpy(dst->bytes, src->bytes, s_used(CS(src)));
}

/* D14: how often the position now at the turn start has stood at a turn
 * start, this time included: the quiet turns' king moves walked back, each
 * undone on the side that made it; a position with the same side to move
 * lies an even number of turns back. */
static int s_occurrences(const dr_state *s)
{
    uint32_t b[2] = {s->pieces[0], s->pieces[1]};
    int n = 1, q = s->quiet;
    for (int j = q - 1; j >= 0; j--) {
        int back = q - j, who = s->side ^ (back & 1);
        b[who] ^= 1u << s->moves[2 * j] | 1u << s->moves[2 * j + 1];
        if (!(back & 1) && b[0] == s->pieces[0] && b[1] == s->pieces[1])
            n++;
    }
    return n;
}

static inline void s_end_turn(dr_state *s)
{
    s->side ^= 1;
    s->chain = -1;
    s->ply++;
}

/* Plays a legal action (src, dst) on s (D4-D15). */
static inline void s_apply(dr_state *s, int src, int dst)
{
    int me = s->side;
    uint32_t sb = 1u << src, db = 1u << dst;
    bool king = s->kings >> src & 1;
    s->pieces[me] ^= sb | db;
    if (king)
        s->kings ^= sb | db;
    int over = T.over[src][dst];
    bool crowned = !king && (db & (me == 0 ? ROW7 : ROW0));
    if (over >= 0) {
        uint32_t ob = 1u << over;
        s->pieces[me ^ 1] &= ~ob; /* D6, D9: taken at once */
        s->kings &= ~ob;
        s->quiet = 0; /* D13: a capture is progress */
        s->reps = 1;
        if (crowned) {
            s->kings |= db; /* D10: crowned, and the turn ends there */
        } else if (s_can_jump(s, dst)) {
            s->chain = (int8_t)dst; /* D8: the same piece must jump on */
            return;
        }
        s_end_turn(s);
        return;
    }
    s_end_turn(s);
    if (!king) {
        if (crowned)
            s->kings |= db; /* D10 */
        s->quiet = 0; /* D13: a man move is progress */
        s->reps = 1;
        return;
    }
    /* A king's simple move: a quiet turn (D13), maybe a repetition (D14). */
    s->moves[2 * s->quiet] = (uint8_t)src;
    s->moves[2 * s->quiet + 1] = (uint8_t)dst;
    s->quiet++;
    s->reps = (uint8_t)s_occurrences(s);
}

static void dr_apply(game_state *g, int action)
{
    assert(action >= 0 && action < DR_ACTIONS);
    assert(CS(g)->pieces[CS(g)->side] >> (action / 32) & 1);
    assert(!s_drawn(CS(g)));
    s_apply(S(g), action / 32, action % 32);
}

/* Perft (D21) as game_perft's generic loop counts it, without its indirect
 * calls: a drawn turn start or one without an action counts nothing; every
 * child is made in full. */
static uint64_t s_perft(const dr_state *s, int depth)
{
    if (depth == 0)
        return 1;
    if (s_drawn(s))
        return 0;
    uint16_t legal[GAME_MAX_LEGAL];
    int n = s_legal(s, legal);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        dr_state c;
        memcpy(&c, s, s_used(s));
        s_apply(&c, legal[i] / 32, legal[i] % 32);
        total += s_perft(&c, depth - 1);
    }
    return total;
}

static uint64_t dr_perft(const game_state *g, int depth) { return s_perft(CS(g), depth); }

static int dr_to_move(const game_state *g) { return CS(g)->side; }
static bool dr_mid_turn(const game_state *g) { return CS(g)->chain >= 0; }
static int dr_ply(const game_state *g) { return CS(g)->ply; }

static game_result dr_result(const game_state *g)
{
    const dr_state *s = CS(g);
    game_result r = {false, -1, GAME_REASON_NONE, 0};
    if (s->chain >= 0)
        return r; /* D12: decided only at the start of a turn */
    int me = s->side;
    if (!s->pieces[me])
        r = (game_result){true, me ^ 1, GAME_REASON_NO_PIECES, 0};
    else if (!s_has_action(s))
        r = (game_result){true, me ^ 1, GAME_REASON_NO_MOVES, 0};
    else if (s->quiet >= DR_QUIET_DRAW)
        r = (game_result){true, -1, GAME_REASON_NO_PROGRESS, 0};
    else if (s->reps >= 3)
        r = (game_result){true, -1, GAME_REASON_REPETITION, 0};
    return r;
}

static void dr_init(game_state *g)
{
    memset(g, 0, sizeof *g);
    dr_state *s = S(g);
    s->pieces[0] = 0xfffu;         /* D2: Black on 1-12 */
    s->pieces[1] = 0xfffu << 20;   /* White on 21-32 */
    s->chain = -1;
    s->reps = 1;
}

/* D16, D17: the canonical planes (C = 7, H = W = 8). For White the board
 * is turned by 180 degrees (sq -> 31 - sq). */
static void s_planes(uint32_t black, uint32_t white, uint32_t kings, int side, int chain,
                     int quiet, bool repeated, float *out)
{
    memset(out, 0, sizeof(float) * 7 * 64);
    uint32_t own = side ? white : black;
    for (uint32_t m = black | white; m; m &= m - 1) {
        int sq = s_lsb(m), cell = T.cell[side ? 31 - sq : sq];
        int plane = (own >> sq & 1 ? 0 : 2) + (int)(kings >> sq & 1);
        out[plane * 64 + cell] = 1.0f;
    }
    if (chain >= 0)
        out[4 * 64 + T.cell[side ? 31 - chain : chain]] = 1.0f;
    for (int i = 0; i < 64; i++) {
        out[5 * 64 + i] = repeated ? 1.0f : 0.0f;
        out[6 * 64 + i] = (float)quiet / DR_QUIET_DRAW;
    }
}

static void dr_encode_planes(const game_state *g, float *out)
{
    const dr_state *s = CS(g);
    s_planes(s->pieces[0], s->pieces[1], s->kings, s->side, s->chain, s->quiet, s->reps >= 2,
             out);
}

static int dr_canonical_action(const game_state *g, int action)
{
    assert(action >= 0 && action < DR_ACTIONS);
    return CS(g)->side == 0 ? action : (31 - action / 32) * 32 + (31 - action % 32);
}

static uint64_t dr_hash(const game_state *g)
{
    const dr_state *s = CS(g);
    uint64_t extra = (uint64_t)s->side | (uint64_t)(uint8_t)(s->chain + 1) << 8 |
                     (uint64_t)s->quiet << 16 | (uint64_t)(s->reps >= 2) << 24 |
                     0x6472ull << 40;
    return mix64(s->pieces[0] | (uint64_t)s->pieces[1] << 32) ^ mix64(s->kings ^ 0x64726175ull) ^
           mix64(extra);
}

/* Packed (16 bytes): Black, White, kings as little-endian u32, the side,
 * chain + 1, the quiet turns, whether the position stood before. */
static void dr_pack(const game_state *g, uint8_t *out)
{
    const dr_state *s = CS(g);
    le_put32(out, s->pieces[0]);
    le_put32(out + 4, s->pieces[1]);
    le_put32(out + 8, s->kings);
    out[12] = s->side;
    out[13] = (uint8_t)(s->chain + 1);
    out[14] = s->quiet;
    out[15] = s->reps >= 2;
}

/* Whether these words are a position D19 accepts: colours apart, at most
 * 12 each, kings on pieces, no man on its own crowning row. */
static bool s_words_ok(uint32_t black, uint32_t white, uint32_t kings)
{
    return !(black & white) && !(kings & ~(black | white)) &&
           __builtin_popcount(black) <= MAX_SIDE && __builtin_popcount(white) <= MAX_SIDE &&
           !(black & ~kings & ROW7) && !(white & ~kings & ROW0);
}

static int dr_unpack_planes(const uint8_t *in, float *out)
{
    uint32_t black = le_get32(in), white = le_get32(in + 4), kings = le_get32(in + 8);
    int side = in[12], chain = (int)in[13] - 1, quiet = in[14], repeated = in[15];
    if (!s_words_ok(black, white, kings) || side > 1 || chain >= DR_SQUARES ||
        quiet > DR_QUIET_DRAW || repeated > 1 ||
        (chain >= 0 && (!((side ? white : black) >> chain & 1) || quiet || repeated)))
        return KZ_ECORRUPT;
    s_planes(black, white, kings, side, chain, quiet, repeated, out);
    return 0;
}

char draughts_piece_at(const game_state *g, int sq)
{
    const dr_state *s = CS(g);
    char c = s->pieces[0] >> sq & 1 ? 'b' : s->pieces[1] >> sq & 1 ? 'w' : '.';
    return c != '.' && (s->kings >> sq & 1) ? (char)toupper(c) : c;
}

/* A square 1..32 in decimal at *p (no leading zero); its index 0..31, or -1. */
static int s_number(const char **p)
{
    const char *q = *p;
    if (q[0] < '1' || q[0] > '9')
        return -1;
    int v = q[0] - '0';
    q++;
    if (isdigit((unsigned char)q[0])) {
        v = v * 10 + (q[0] - '0');
        q++;
    }
    if (v > DR_SQUARES || isdigit((unsigned char)q[0]))
        return -1;
    *p = q;
    return v - 1;
}

/* D19: 32 squares, a space, b or w, then maybe " CHAIN". */
static int dr_parse_position(game_state *g, const char *str, char *err, size_t errlen)
{
    if (!str || strlen(str) < 34 || str[32] != ' ' || (str[33] != 'b' && str[33] != 'w') ||
        (str[34] && str[34] != ' '))
        return err_set(err, errlen, KZ_EINVAL,
                       "a position is 32 squares of . b B w W, a space and b or w (D19)");
    uint32_t black = 0, white = 0, kings = 0;
    for (int sq = 0; sq < DR_SQUARES; sq++) {
        char c = str[sq];
        if (c == 'b' || c == 'B')
            black |= 1u << sq;
        else if (c == 'w' || c == 'W')
            white |= 1u << sq;
        else if (c != '.')
            return err_set(err, errlen, KZ_EINVAL, "square %d: '%c' is not . b B w or W (D19)",
                           sq + 1, c);
        if (c == 'B' || c == 'W')
            kings |= 1u << sq;
    }
    if (__builtin_popcount(black) > MAX_SIDE || __builtin_popcount(white) > MAX_SIDE)
        return err_set(err, errlen, KZ_EINVAL, "more than %d pieces of a side (D19)", MAX_SIDE);
    if (!s_words_ok(black, white, kings))
        return err_set(err, errlen, KZ_EINVAL,
                       "a man on its crowning row (D10: it would be a king; D19)");
    game_state t;
    memset(&t, 0, sizeof t);
    dr_state *s = S(&t);
    s->pieces[0] = black;
    s->pieces[1] = white;
    s->kings = kings;
    s->side = str[33] == 'w';
    s->chain = -1;
    s->reps = 1;
    if (str[34]) {
        const char *p = str + 35;
        int chain = s_number(&p);
        if (chain < 0 || *p)
            return err_set(err, errlen, KZ_EINVAL,
                           "after the side only the square 1..32 of the piece that must jump on");
        if (!(s->pieces[s->side] >> chain & 1) || !s_can_jump(s, chain))
            return err_set(err, errlen, KZ_EINVAL,
                           "square %d: no piece of the side to move that can jump on (D8)",
                           chain + 1);
        s->chain = (int8_t)chain;
    }
    *g = t;
    return 0;
}

static void dr_format_position(const game_state *g, char *buf, size_t len)
{
    const dr_state *s = CS(g);
    char tmp[48];
    for (int sq = 0; sq < DR_SQUARES; sq++)
        tmp[sq] = draughts_piece_at(g, sq);
    int n = 32 + snprintf(tmp + 32, sizeof tmp - 32, " %c", s->side ? 'w' : 'b');
    if (s->chain >= 0)
        snprintf(tmp + n, sizeof tmp - (size_t)n, " %d", s->chain + 1);
    snprintf(buf, len, "%s", tmp);
}

/* A square as its number 1..32 or algebraic a1..h8 (a dark square, D1) at
 * *p; its index, or -1. */
static int s_any_square(const char **p)
{
    const char *q = *p;
    if (q[0] >= 'a' && q[0] <= 'h' && q[1] >= '1' && q[1] <= '8') {
        int sq = s_square('8' - q[1], q[0] - 'a'); /* rank 8 is row 0 */
        if (sq >= 0)
            *p = q + 2;
        return sq;
    }
    return s_number(p);
}

/* D20: "src-dst" or "srcxdst", numbers or algebraic. */
static int dr_parse_action(const char *str, int *action)
{
    return game_parse_hop_action(str, s_any_square, 32, action);
}

static void dr_format_action(int action, char *buf, size_t len)
{
    snprintf(buf, len, "%d-%d", action / 32 + 1, action % 32 + 1);
}

static const char *dr_player_name(int player) { return player == 0 ? "black" : "white"; }

static bool dr_is_capture(const game_state *g, int action)
{
    (void)g;
    return action >= 0 && action < DR_ACTIONS && T.over[action / 32][action % 32] >= 0;
}

/* The board: White's side at the bottom as in the standard diagram
 * (turned), or Black's (squares 1-4 at the bottom, the board seen from
 * Black's chair); marks (may be NULL) per square: 'l' where the last turn's
 * piece landed, 'o' a square it left, 'x' a piece it took. */
static void s_draw(const game_state *g, const char *marks, bool turned, FILE *out)
{
    const dr_state *s = CS(g);
    fputs(turned ? "     a  b  c  d  e  f  g  h\n" : "     h  g  f  e  d  c  b  a\n", out);
    for (int i = 0; i < 8; i++) {
        int r = turned ? i : 7 - i;
        fprintf(out, "  %d ", 8 - r);
        for (int j = 0; j < 8; j++) {
            int c = turned ? j : 7 - j, sq = s_square(r, c);
            if (sq < 0) {
                fputs("   ", out);
                continue;
            }
            game_draw_hop_square(out, draughts_piece_at(g, sq), marks ? marks[sq] : 0,
                                 sq == s->chain);
        }
        /* The row's squares in the standard numbering, left to right as drawn. */
        int a = r * 4 + 1, b = r * 4 + 4;
        fprintf(out, " %d   %2d..%-2d\n", 8 - r, turned ? a : b, turned ? b : a);
    }
    char pos[GAME_POSITION_CHARS + 1];
    dr_format_position(g, pos, sizeof pos);
    fprintf(out, "\n  %s to move, ply %d%s", dr_player_name(s->side), s->ply,
            turned ? " (turned: White's side at the bottom)" : "");
    if (s->chain >= 0)
        fprintf(out, ", mid-sequence: the piece on %d must jump on", s->chain + 1);
    if (s->quiet)
        fprintf(out, ", %d of %d quiet turns", s->quiet, DR_QUIET_DRAW);
    fprintf(out, "\n  position: %s\n", pos);
}

static void dr_render(const game_state *g, FILE *out) { s_draw(g, NULL, false, out); }

/* The square a hop from src to dst jumps, or -1 (game_render_hop_turn). */
static int s_over(int src, int dst) { return T.over[src][dst]; }

/* kz play's board (game.h's render_turn): the last turn marked. */
static void dr_render_turn(const game_state *from, const uint16_t *actions, int n, bool turned,
                           FILE *out)
{
    game_render_hop_turn(&draughts_game, from, actions, n, turned, out, DR_SQUARES, s_over,
                         s_draw);
}

/* D22: the baseline players' evaluation, own minus other: a man 100, a king 150. */
static long dr_evaluate(const game_state *g)
{
    const dr_state *s = CS(g);
    uint32_t own = s->pieces[s->side], opp = s->pieces[s->side ^ 1];
    return 100L * (__builtin_popcount(own) - __builtin_popcount(opp)) +
           50L * (__builtin_popcount(own & s->kings) - __builtin_popcount(opp & s->kings));
}

/* D7: the mover must capture when any piece can jump. */
static bool dr_must_capture(const game_state *g)
{
    const dr_state *s = CS(g);
    if (s->chain >= 0)
        return true;
    for (uint32_t m = s->pieces[s->side]; m; m &= m - 1)
        if (s_can_jump(s, s_lsb(m)))
            return true;
    return false;
}

/* The balance of men + 1.5 kings over 12 (a side's men at the start),
 * clamped to [-1, 1]: the auxiliary material head's target (game.h). */
static float dr_material(const game_state *g, int player)
{
    const dr_state *s = CS(g);
    uint32_t own = s->pieces[player], opp = s->pieces[player ^ 1];
    float v = (float)(__builtin_popcount(own) - __builtin_popcount(opp)) +
              0.5f * (float)(__builtin_popcount(own & s->kings) -
                             __builtin_popcount(opp & s->kings));
    v /= 12.0f;
    return v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
}

/* The description for the web pages (view.h, docs/web.md): the 8x8 board
 * as D1 draws it (square 1 at the top, Black's side; White at the bottom),
 * its 32 dark squares the points, labelled 1..32; men and kings; positions
 * as D19 writes them, actions as D20 ("26x17"). */
static void dr_describe(strbuf *out)
{
    view_open(out, &draughts_game, "#222222", "#f4f1ea");
    strbuf_printf(out, ",\n\"board\": {\"points\": [");
    for (int sq = 0; sq < DR_SQUARES; sq++) {
        int r = sq / 4, c = 2 * (sq % 4) + (r % 2 == 0);
        strbuf_printf(out, "%s[%d.5, %d.5, \"%d\"]", sq ? ", " : "", c, r, sq + 1);
    }
    strbuf_printf(out, "],\n \"lines\": [], \"shapes\": [");
    for (int i = 0; i < 64; i++)
        strbuf_printf(out, "%s{\"rect\": [%d, %d, 1, 1], \"fill\": \"%s\"}", i ? ", " : "",
                      i % 8, i / 8, (i % 8 + i / 8) % 2 ? "#a9774b" : "#f0dcb4");
    strbuf_printf(out, "],\n \"bottom\": 1, \"labels\": \"corner\", \"background\": \"#6b4a1e\", "
                       "\"ink\": \"#f5ecd9\", \"piece\": 0.38},\n");
    view_hop_end(out, "bw", "BW", "\"side\", \"chain\"");
}

const game_def draughts_game = {
    .name = "draughts",
    .action_count = DR_ACTIONS,
    .planes = 7,
    .height = 8,
    .width = 8,
    .max_legal = 48, /* 12 kings x 4 directions; jumps are fewer (4 each, never with steps) */
    .packed_bytes = 16,
    .state_bytes = (int)sizeof(dr_state),
    .position_chars = 37, /* 32 squares, side, and mid-sequence the chain square */
    .simulations = 200,
    .dirichlet_alpha = 2.0f, /* about 5 legal actions at a turn start (5.2 over random games) */
    .n_symmetries = 0, /* D18: none keeps the dark squares and the direction of play */
    .symmetries = NULL,
    .init = dr_init,
    .legal_actions = dr_legal_actions,
    .copy = dr_copy,
    .apply = dr_apply,
    .to_move = dr_to_move,
    .mid_turn = dr_mid_turn,
    .ply = dr_ply,
    .result = dr_result,
    .encode_planes = dr_encode_planes,
    .canonical_action = dr_canonical_action,
    .hash = dr_hash,
    .pack = dr_pack,
    .unpack_planes = dr_unpack_planes,
    .parse_position = dr_parse_position,
    .format_position = dr_format_position,
    .parse_action = dr_parse_action,
    .format_action = dr_format_action,
    .render = dr_render,
    .player_name = dr_player_name,
    .perft = dr_perft,
    .material = dr_material,
    .evaluate = dr_evaluate,
    .must_capture = dr_must_capture,
    .describe = dr_describe,
    .render_turn = dr_render_turn,
    .legend = "Men move and capture diagonally forward, kings (B, W) one step in any diagonal "
              "direction.\nCaptures are compulsory, any of them (D7); a piece that has jumped "
              "jumps on while it can\n(D8), except that a man reaching the far row is crowned "
              "and its turn ends (D10). Drawn:\n40 moves a side with only kings moving and "
              "nothing taken (D13), or a position for the\nthird time (D14). On the board: b w "
              "men, B W kings, <p> where the last move went, * where\nit came from, x a piece "
              "it took, [p] the piece that must jump on.\n",
    .is_capture = dr_is_capture,
};
