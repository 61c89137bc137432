/* test_khreibaga_props: properties of the rules engine over thousands of
 * seeded random games, checked at every state and after every action:
 * legality of what is applied, capture bookkeeping (R4, R6, R7), the turn
 * passing only at sequence ends (R9, R11), the 180-degree colour-swapping
 * symmetry of the canonical form (R16), the left-right mirror (R19), the
 * position hash, pack/unpack of the planes, and format/parse round trips
 * (R20). Nothing here is compared with stored values: each property relates
 * the engine to itself under a transformation the rules say is harmless. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "games/khreibaga.h"
#include "tests/harness/testgen.h"
#include "common/util.h"

#define N_GAMES 1500

static const game_def *G(void) { return game_default(); }

static int s_count(const game_state *s, int side)
{
    int n = 0;
    for (int sq = 0; sq < 25; sq++) {
        char p = khreibaga_piece_at(s, sq);
        n += side == 0 ? (p == 'b' || p == 'B') : (p == 'w' || p == 'W');
    }
    return n;
}

/* The legal actions as a 625-entry membership table; returns the count. */
static int s_legal_set(const game_state *s, bool *set)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = G()->legal_actions(s, legal);
    memset(set, 0, KH_ACTIONS * sizeof *set);
    for (int i = 0; i < n; i++) {
        cr_assert(legal[i] < KH_ACTIONS);
        cr_assert(i == 0 || legal[i - 1] < legal[i], "legal actions ascending");
        set[legal[i]] = true;
    }
    return n;
}

/* The points strictly between src and dst on their line, or -1 when they do
 * not share a straight line (row, column or diagonal). */
static int s_between(int src, int dst, int *out)
{
    int dr = dst / 5 - src / 5, dc = dst % 5 - src % 5;
    if (!(dr == 0 || dc == 0 || abs(dr) == abs(dc)) || (dr == 0 && dc == 0))
        return -1;
    int sr = (dr > 0) - (dr < 0), sc = (dc > 0) - (dc < 0);
    int steps = abs(dr) > abs(dc) ? abs(dr) : abs(dc), n = 0;
    for (int i = 1; i < steps; i++)
        out[n++] = (src / 5 + i * sr) * 5 + src % 5 + i * sc;
    return n;
}

/* Writes the 180-degree rotation with colours swapped (R16) of the position
 * string `in` into `out`. */
static void s_rotate_string(const char *in, char *out, size_t len)
{
    char board[26];
    for (int sq = 0; sq < 25; sq++) {
        char p = in[sq];
        board[24 - sq] = p == '.' ? '.' : (char)(islower((unsigned char)p) ? (p == 'b' ? 'w' : 'b')
                                                                        : (p == 'B' ? 'W' : 'B'));
    }
    board[25] = '\0';
    char side = in[26] == 'b' ? 'w' : 'b';
    if (strlen(in) > 27)
        snprintf(out, len, "%s %c %d", board, side, 24 - atoi(in + 28));
    else
        snprintf(out, len, "%s %c", board, side);
}

/* Writes the left-right mirror (R19) of a position string. */
static void s_mirror_string(const char *in, char *out, size_t len)
{
    char board[26];
    for (int sq = 0; sq < 25; sq++)
        board[(sq / 5) * 5 + 4 - sq % 5] = in[sq];
    board[25] = '\0';
    if (strlen(in) > 27) {
        int c = atoi(in + 28);
        snprintf(out, len, "%s %c %d", board, in[26], (c / 5) * 5 + 4 - c % 5);
    } else {
        snprintf(out, len, "%s %c", board, in[26]);
    }
}

static int s_rot_action(int a) { return (24 - a / 25) * 25 + 24 - a % 25; }

/* --- per-state properties --------------------------------------------------------- */

/* R20 round trip: the string of s parses back to a state with the same
 * string, pieces, mover, chain point and legal actions (mid-sequence too: the
 * legal hops depend only on the board and the chain piece). */
static void s_check_round_trip(const game_state *s, const char *pos)
{
    game_state t;
    char err[200], buf[64];
    cr_assert_eq(G()->parse_position(&t, pos, err, sizeof err), 0, "'%s': %s", pos, err);
    G()->format_position(&t, buf, sizeof buf);
    cr_assert_str_eq(buf, pos);
    cr_assert_eq(G()->to_move(&t), G()->to_move(s));
    cr_assert_eq(G()->mid_turn(&t), G()->mid_turn(s));
    cr_assert_eq(khreibaga_chain_point(&t), khreibaga_chain_point(s));
    if (G()->result(s).over)
        return; /* R13-R15 draws depend on history the string does not carry */
    bool a[KH_ACTIONS], b[KH_ACTIONS];
    int na = s_legal_set(s, a), nb = s_legal_set(&t, b);
    cr_assert_eq(na, nb, "'%s': %d legal in game, %d after parse", pos, na, nb);
    cr_assert(!memcmp(a, b, sizeof a), "'%s': legal sets differ after parse", pos);
}

/* R16: the position and its rotation with colours swapped, both parsed
 * fresh, have the same canonical planes (plane 5, the colour, aside) and the
 * same canonical legal actions; their results mirror each other. */
static void s_check_rotation(const char *pos)
{
    char rot[64], err[200];
    s_rotate_string(pos, rot, sizeof rot);
    game_state a, b;
    cr_assert_eq(G()->parse_position(&a, pos, err, sizeof err), 0, "'%s': %s", pos, err);
    cr_assert_eq(G()->parse_position(&b, rot, err, sizeof err), 0, "'%s' (rotated): %s", rot,
                 err);
    float pa[7 * 25], pb[7 * 25];
    G()->encode_planes(&a, pa);
    G()->encode_planes(&b, pb);
    for (int i = 0; i < 7 * 25; i++) {
        if (i / 25 == 5)
            cr_assert_eq(pa[i], 1.0f - pb[i], "'%s': colour plane", pos);
        else
            cr_assert_eq(pa[i], pb[i], "'%s' vs '%s': plane %d point %d", pos, rot, i / 25,
                         i % 25);
    }
    bool la[KH_ACTIONS], lb[KH_ACTIONS], ca[KH_ACTIONS] = {false}, cb[KH_ACTIONS] = {false};
    int na = s_legal_set(&a, la), nb = s_legal_set(&b, lb);
    cr_assert_eq(na, nb, "'%s' vs '%s': legal counts", pos, rot);
    for (int x = 0; x < KH_ACTIONS; x++) {
        if (la[x]) {
            ca[G()->canonical_action(&a, x)] = true;
            cr_assert(lb[s_rot_action(x)], "'%s': %d-%d has no rotated twin", pos, x / 25, x % 25);
        }
        if (lb[x])
            cb[G()->canonical_action(&b, x)] = true;
    }
    cr_assert(!memcmp(ca, cb, sizeof ca), "'%s': canonical legal sets differ", pos);
    game_result ra = G()->result(&a), rb = G()->result(&b);
    cr_assert_eq(ra.over, rb.over);
    cr_assert_eq(ra.reason, rb.reason);
    if (ra.over && ra.winner >= 0)
        cr_assert_eq(rb.winner, 1 - ra.winner);
}

/* R19: the mirror of s (history and all, so the planes of s are compared
 * with those of the mirrored string only on the piece planes 0-3, and the
 * uniform planes 4-6 are unchanged by the mirror) has the mirrored
 * canonical legal set. */
static void s_check_mirror(const game_state *s, const char *pos)
{
    char mir[64], err[200];
    s_mirror_string(pos, mir, sizeof mir);
    game_state m;
    cr_assert_eq(G()->parse_position(&m, mir, err, sizeof err), 0, "'%s' (mirror): %s", mir, err);
    float ps[7 * 25], pm[7 * 25], orig[7 * 25];
    G()->encode_planes(s, ps);
    memcpy(orig, ps, sizeof orig);
    G()->encode_planes(&m, pm);
    game_symmetry_planes(G(), 0, ps);
    for (int i = 0; i < 4 * 25; i++)
        cr_assert_eq(ps[i], pm[i], "'%s' vs mirror '%s': plane %d point %d", pos, mir, i / 25,
                     i % 25);
    for (int i = 4 * 25; i < 7 * 25; i++)
        cr_assert_eq(ps[i], orig[i], "uniform plane %d changed by the mirror", i / 25);
    if (G()->result(s).over)
        return;
    bool ls[KH_ACTIONS], lm[KH_ACTIONS], cs[KH_ACTIONS] = {false}, cm[KH_ACTIONS] = {false};
    s_legal_set(s, ls);
    s_legal_set(&m, lm);
    for (int x = 0; x < KH_ACTIONS; x++) {
        if (ls[x])
            cs[G()->symmetries[0].action(G()->canonical_action(s, x))] = true;
        if (lm[x])
            cm[G()->canonical_action(&m, x)] = true;
    }
    cr_assert(!memcmp(cs, cm, sizeof cs), "'%s': mirrored legal set differs from the mirror's",
              pos);
}

/* pack + unpack_planes gives exactly encode_planes; unpack_state the state. */
static void s_check_pack(const game_state *s, const char *pos)
{
    uint8_t packed[GAME_PACKED_BYTES + 8];
    memset(packed, 0xa5, sizeof packed);
    cr_assert_leq(G()->packed_bytes, GAME_PACKED_BYTES);
    G()->pack(s, packed);
    for (size_t i = (size_t)G()->packed_bytes; i < sizeof packed; i++)
        cr_assert_eq(packed[i], 0xa5, "pack wrote past packed_bytes");
    float want[7 * 25], got[7 * 25];
    G()->encode_planes(s, want);
    cr_assert_eq(G()->unpack_planes(packed, got), 0, "'%s': unpack refused pack's bytes", pos);
    for (int i = 0; i < 7 * 25; i++)
        cr_assert_eq(got[i], want[i], "'%s': unpacked plane %d point %d", pos, i / 25, i % 25);
    /* The state back (khreibaga_unpack_state): the position, ply and count. */
    game_state u;
    cr_assert_eq(khreibaga_unpack_state(packed, &u), 0, "'%s': unpack_state refused it", pos);
    char upos[64];
    G()->format_position(&u, upos, sizeof upos);
    cr_assert_str_eq(upos, pos);
    cr_assert_eq(G()->ply(&u), G()->ply(s), "'%s'", pos);
    cr_assert_eq(khreibaga_no_progress(&u), khreibaga_no_progress(s), "'%s'", pos);
}

/* --- random games ------------------------------------------------------------------ */

/* Counters over all games. */
typedef struct s_stats {
    int states;   /* states checked */
    int mid;      /* of which mid-sequence */
    int hops;     /* actions applied */
    int captures; /* of which captures */
    int kings;    /* states with a king on the board */
} s_stats;

/* Plays one random game from s to its end, checking every property at every
 * state and after every action. */
static void s_props_game(game_state s, rng_t *rng, s_stats *st)
{
    for (;;) {
        char pos[64];
        G()->format_position(&s, pos, sizeof pos);
        st->states++;
        st->mid += G()->mid_turn(&s);
        st->kings += strchr(pos, 'B') || strchr(pos, 'W');
        game_state copy = s, fast;
        memset(&fast, 0x5a, sizeof fast);
        G()->copy(&fast, &s);
        cr_assert_eq(G()->hash(&s), G()->hash(&copy), "hash of a copy");
        cr_assert_eq(G()->hash(&s), G()->hash(&fast), "hash after game_def.copy");
        s_check_round_trip(&s, pos);
        /* The symmetry checks parse strings; do them on a sample. */
        if (rng_below(rng, 3) == 0) {
            s_check_rotation(pos);
            s_check_mirror(&s, pos);
        }
        s_check_pack(&s, pos);
        game_result r = G()->result(&s);
        if (r.over)
            break;

        /* Every applied action is legal: in the list, the mask, is_legal. */
        uint16_t legal[GAME_MAX_LEGAL];
        uint8_t mask[KH_ACTIONS];
        int n = G()->legal_actions(&s, legal);
        cr_assert_gt(n, 0, "'%s': live game without actions", pos);
        cr_assert_leq(n, G()->max_legal);
        game_legal_mask(G(), &s, mask);
        for (int x = 0, k = 0; x < KH_ACTIONS; x++) {
            bool in = k < n && legal[k] == x;
            k += in;
            if ((mask[x] != 0) != in) /* (asserting only on failure keeps the loop fast) */
                cr_assert_fail("'%s': mask and list disagree on %d-%d", pos, x / 25, x % 25);
        }
        int a = legal[rng_below(rng, (uint32_t)n)];
        cr_assert(mask[a] && game_is_legal(G(), &s, a), "'%s': %d-%d", pos, a / 25, a % 25);

        /* Capture bookkeeping (R4, R6, R7). */
        int mover = G()->to_move(&s), src = a / 25, dst = a % 25, ply = G()->ply(&s);
        int between[5], nb = s_between(src, dst, between), cap = -1;
        cr_assert_geq(nb, 0, "'%s': %d-%d is not along a line", pos, src, dst);
        for (int k = 0; k < nb; k++)
            if (khreibaga_piece_at(&s, between[k]) != '.') {
                cr_assert_eq(cap, -1, "'%s': R9: two pieces between %d and %d", pos, src, dst);
                cap = between[k];
            }
        if (G()->mid_turn(&s))
            cr_assert(cap >= 0 && src == khreibaga_chain_point(&s),
                      "'%s': mid-sequence actions are hops of the chain piece", pos);
        char piece = khreibaga_piece_at(&s, src);
        int own = s_count(&s, mover), enemy = s_count(&s, 1 - mover);
        G()->apply(&fast, a);
        G()->apply(&s, a);
        st->hops++;
        {
            /* game_def.copy + apply gives the same state as a full copy. */
            char p1[64], p2[64];
            G()->format_position(&s, p1, sizeof p1);
            G()->format_position(&fast, p2, sizeof p2);
            cr_assert_str_eq(p1, p2, "copy + apply differs");
            cr_assert_eq(G()->hash(&s), G()->hash(&fast));
            cr_assert_eq(khreibaga_no_progress(&s), khreibaga_no_progress(&fast));
            cr_assert_eq(khreibaga_repetitions(&s), khreibaga_repetitions(&fast));
            game_result r1 = G()->result(&s), r2 = G()->result(&fast);
            cr_assert(r1.over == r2.over && r1.reason == r2.reason && r1.winner == r2.winner);
        }
        cr_assert_eq(s_count(&s, mover), own, "the mover never loses a piece");
        if (cap >= 0) {
            st->captures++;
            cr_assert_eq(s_count(&s, 1 - mover), enemy - 1, "a hop takes exactly one");
            cr_assert_eq(khreibaga_piece_at(&s, cap), '.', "R7: removed at once");
        } else {
            cr_assert_eq(s_count(&s, 1 - mover), enemy, "a simple move takes nothing");
            cr_assert(!G()->mid_turn(&s), "R11: a simple move ends the turn");
        }

        /* The turn passes only at sequence ends (R9, R11). */
        if (G()->mid_turn(&s)) {
            cr_assert_eq(G()->to_move(&s), mover);
            cr_assert_eq(G()->ply(&s), ply);
            cr_assert_eq(khreibaga_chain_point(&s), dst);
            cr_assert_eq(khreibaga_piece_at(&s, dst), piece, "R10: no crowning mid-turn");
        } else {
            cr_assert_eq(G()->to_move(&s), 1 - mover);
            cr_assert_eq(G()->ply(&s), ply + 1);
            if (cap >= 0) {
                /* The sequence ended: the piece (as it moved, before any
                 * crowning) has no capture left, so R20 refuses it as a
                 * chain piece. */
                char after[64], err[200];
                G()->format_position(&s, after, sizeof after);
                after[dst] = piece;
                after[26] = mover ? 'w' : 'b';
                snprintf(after + 27, sizeof after - 27, " %d", dst);
                game_state t;
                cr_assert_eq(G()->parse_position(&t, after, err, sizeof err), KZ_EINVAL,
                             "'%s': the turn passed while the piece could capture on", after);
            }
        }
    }
}

Test(khreibaga_props, random_games)
{
    s_stats st = {0};
    for (int i = 0; i < N_GAMES; i++) {
        rng_t rng;
        rng_seed(&rng, 0x70000000u + (uint64_t)i);
        game_state s;
        G()->init(&s);
        s_props_game(s, &rng, &st);
    }
    cr_log_info("props from the start: %d games, %d states (%d mid-sequence), %d actions, "
                "%d captures", N_GAMES, st.states, st.mid, st.hops, st.captures);
    cr_expect_gt(st.mid, 1000);
}

/* The same from random positions, most with kings (R5, R6, flying kings). */
Test(khreibaga_props, random_positions)
{
    s_stats st = {0};
    for (int i = 0; i < N_GAMES; i++) {
        rng_t rng;
        rng_seed(&rng, 0x71000000u + (uint64_t)i);
        char pos[40], err[200];
        if (i % 2)
            testgen_position(&rng, pos);
        else
            testgen_endgame(&rng, pos);
        game_state s;
        cr_assert_eq(G()->parse_position(&s, pos, err, sizeof err), 0, "'%s': %s", pos, err);
        s_props_game(s, &rng, &st);
    }
    cr_log_info("props from random positions: %d games, %d states (%d mid-sequence, %d with "
                "kings), %d actions, %d captures", N_GAMES, st.states, st.mid, st.kings, st.hops,
                st.captures);
    cr_expect_gt(st.kings, 10000);
}

/* --- the hash ---------------------------------------------------------------------------- */

/* Everything the hash promises to cover: pieces, mover, chain point, ply
 * (plane 6) and the repetition flag (plane 4). */
typedef struct s_key {
    char pos[40];   /* R20 string (pieces, mover, chain) */
    int ply;        /* completed turns */
    int repeated;   /* plane 4 */
    uint64_t hash;  /* the engine's hash */
} s_key;

static int s_key_cmp(const void *x, const void *y)
{
    const s_key *a = x, *b = y;
    int c = strcmp(a->pos, b->pos);
    if (c)
        return c;
    if (a->ply != b->ply)
        return a->ply - b->ply;
    return a->repeated - b->repeated;
}

static int s_u64_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void s_collect(const game_state *s, int depth, s_key *keys, int *n, int cap)
{
    if (*n >= cap)
        return;
    s_key *k = &keys[(*n)++];
    G()->format_position(s, k->pos, sizeof k->pos);
    k->ply = G()->ply(s);
    k->repeated = khreibaga_repetitions(s) >= 2;
    k->hash = G()->hash(s);
    if (depth == 0 || G()->result(s).over)
        return;
    uint16_t legal[GAME_MAX_LEGAL];
    int m = G()->legal_actions(s, legal);
    for (int i = 0; i < m; i++) {
        game_state c = *s;
        G()->apply(&c, legal[i]);
        s_collect(&c, depth - 1, keys, n, cap);
    }
}

/* Equal positions reached along different paths (transpositions in the
 * trees below) hash equally; different ones do not collide here. */
Test(khreibaga_props, equal_positions_hash_equally)
{
    enum { CAP = 400000 };
    s_key *keys = malloc(CAP * sizeof *keys);
    int n = 0;
    static const char *roots[] = {
        KH_START,
        "B...........w.......W.... b",
        "..B.b..w.w...b.w..W...... w",
        "B.b.....w.....b...w.W.... b",
    };
    static const int depth[] = {11, 5, 5, 5};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; r++) {
        game_state s;
        char err[200];
        cr_assert_eq(G()->parse_position(&s, roots[r], err, sizeof err), 0, "%s", err);
        s_collect(&s, depth[r], keys, &n, CAP);
    }
    cr_assert_lt(n, CAP, "tree too big for the table");
    qsort(keys, (size_t)n, sizeof *keys, s_key_cmp);
    int transpositions = 0, distinct = 1;
    for (int i = 1; i < n; i++) {
        if (!s_key_cmp(&keys[i - 1], &keys[i])) {
            transpositions++;
            cr_assert_eq(keys[i - 1].hash, keys[i].hash, "'%s' ply %d: equal states, hashes differ",
                         keys[i].pos, keys[i].ply);
        } else {
            distinct++;
        }
    }
    /* No two distinct states share a hash. */
    uint64_t *h = malloc((size_t)n * sizeof *h);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || s_key_cmp(&keys[i - 1], &keys[i]))
            h[m++] = keys[i].hash;
    qsort(h, (size_t)m, sizeof *h, s_u64_cmp);
    for (int i = 1; i < m; i++)
        cr_assert_neq(h[i - 1], h[i], "two distinct states share hash %016llx",
                      (unsigned long long)h[i]);
    free(h);
    free(keys);
    cr_log_info("hash: %d states, %d distinct, %d transpositions", n, distinct, transpositions);
    cr_expect_gt(transpositions, 100, "the trees must contain transpositions");
}

/* --- unpack on bad bytes ------------------------------------------------------------------ */

/* unpack_planes returns 0 or KZ_ECORRUPT on any bytes, never crashes, and
 * accepts everything pack wrote (random_games). */
Test(khreibaga_props, unpack_rejects_or_accepts_random_bytes)
{
    rng_t rng;
    rng_seed(&rng, 99);
    int rejected = 0;
    for (int i = 0; i < 20000; i++) {
        uint8_t bytes[GAME_PACKED_BYTES];
        for (size_t k = 0; k < sizeof bytes; k++)
            bytes[k] = (uint8_t)rng_next(&rng);
        float planes[7 * 25];
        int rc = G()->unpack_planes(bytes, planes);
        cr_assert(rc == 0 || rc == KZ_ECORRUPT, "rc %d", rc);
        rejected += rc != 0;
        /* The state: refused with the planes, and where a position's rules
         * forbid it (khreibaga_unpack_state). */
        game_state u;
        int rs = khreibaga_unpack_state(bytes, &u);
        cr_assert(rs == 0 || rs == KZ_ECORRUPT, "rc %d", rs);
        cr_assert(rc == 0 || rs != 0, "a state from bytes whose planes are refused");
    }
    cr_expect_gt(rejected, 0, "random bytes are mostly not a position");
}

/* The pieces of `side` the mover's legal first actions take in s (a turn
 * start), as a point mask, and the pieces its whole turn takes when it
 * follows the first legal action at every step (R8: under the majority rule
 * every legal sequence is of the longest length). */
static uint32_t s_first_takes(const game_state *s, int side, int *longest)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = G()->legal_actions(s, legal);
    uint32_t taken = 0;
    *longest = 0;
    for (int i = 0; i < n; i++) {
        game_state t;
        G()->copy(&t, s);
        G()->apply(&t, legal[i]);
        for (int sq = 0; sq < 25; sq++) {
            char before = khreibaga_piece_at(s, sq), after = khreibaga_piece_at(&t, sq);
            bool theirs = side == 0 ? (before == 'b' || before == 'B')
                                    : (before == 'w' || before == 'W');
            if (theirs && after == '.')
                taken |= 1u << sq;
        }
    }
    if (n && taken) {
        game_state t;
        G()->copy(&t, s);
        int before = s_count(s, side);
        do {
            G()->legal_actions(&t, legal);
            G()->apply(&t, legal[0]);
        } while (G()->mid_turn(&t));
        *longest = before - s_count(&t, side);
    }
    return taken;
}

/* The derived input planes (game_def.derive_planes, for networks built with
 * them) against the engine's own moves, at the turn starts of random games:
 * plane 1 the opponent's pieces the mover's legal first hops take, plane 0
 * the mover's pieces the opponent's would take (the same position with the
 * other side to move), planes 2 and 3 each side's longest capture / 4, in
 * the canonical view (turned for White); and the same planes mirrored from
 * the mirrored planes (they follow the board's symmetry). */
Test(khreibaga_props, derived_planes_are_the_captures_on_the_board)
{
    const game_def *g = G();
    cr_assert_eq(g->derived_planes, 4);
    rng_t rng;
    rng_seed(&rng, 20261128);
    float planes[7 * 25], d[4 * 25], dm[4 * 25];
    int checked = 0, with_capture = 0;
    for (int game = 0; game < 300; game++) {
        game_state s;
        g->init(&s);
        while (!g->result(&s).over) {
            if (!g->mid_turn(&s)) {
                int me = g->to_move(&s), takes_mine, takes_theirs;
                char pos[64], flip[64], err[120];
                g->format_position(&s, pos, sizeof pos);
                snprintf(flip, sizeof flip, "%.25s %c", pos, me ? 'b' : 'w');
                game_state o;
                cr_assert_eq(g->parse_position(&o, flip, err, sizeof err), 0, "%s: %s", flip,
                             err);
                uint32_t theirs = s_first_takes(&s, me ^ 1, &takes_mine);
                uint32_t mine = s_first_takes(&o, me, &takes_theirs);
                g->encode_planes(&s, planes);
                g->derive_planes(planes, d);
                for (int sq = 0; sq < 25; sq++) {
                    int c = me == 0 ? sq : 24 - sq;
                    cr_assert_eq(d[c], (float)(mine >> sq & 1), "%s: own piece on %d", pos, sq);
                    cr_assert_eq(d[25 + c], (float)(theirs >> sq & 1), "%s: opponent on %d",
                                 pos, sq);
                }
                float fm = takes_mine >= 4 ? 1.0f : takes_mine / 4.0f;
                float fo = takes_theirs >= 4 ? 1.0f : takes_theirs / 4.0f;
                cr_assert_float_eq(d[50 + 7], fm, 1e-6, "%s: longest capture %d", pos,
                                   takes_mine);
                cr_assert_float_eq(d[75 + 19], fo, 1e-6, "%s: the opponent's longest %d", pos,
                                   takes_theirs);
                with_capture += takes_mine > 0;
                /* The mirror: derived from mirrored planes = the planes mirrored. */
                game_symmetry_planes(g, 0, planes);
                g->derive_planes(planes, dm);
                const int16_t *cells = g->symmetries[0].cells;
                for (int p = 0; p < 4; p++)
                    for (int i = 0; i < 25; i++)
                        cr_assert_eq(dm[p * 25 + cells[i]], d[p * 25 + i], "%s: mirror", pos);
                checked++;
            }
            uint16_t legal[GAME_MAX_LEGAL];
            int n = g->legal_actions(&s, legal);
            g->apply(&s, legal[rng_below(&rng, (uint32_t)n)]);
        }
    }
    cr_assert_gt(checked, 3000, "%d turn starts", checked);
    cr_assert_gt(with_capture, 300, "%d turn starts with a capture", with_capture);
}
