/* test_khreibaga_ref: cross-checks the rules engine (games/khreibaga.c, reached
 * through game_default()) against the independent naive reference
 * (solve/ref_khreibaga.c) over seeded random games, random positions (turn
 * starts and mid-sequence, both sides to move, kings included), random position
 * strings (valid and not), and perft from several positions. At every state the
 * two must agree on the position string, the mover, the turn progress, the
 * counters (R13, R14, R15), the terminal status and its reason, the legal action
 * set (list, mask and is_legal), and the canonical planes (R16, R17). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "games/khreibaga.h"
#include "tests/games/khreibaga_lines.h"
#include "solve/ref_khreibaga.h"
#include "tests/harness/testgen.h"
#include "common/util.h"

/* --- comparing one state ----------------------------------------------------- */

/* Asserts that the engine state s and the reference r describe the same state;
 * `what` names the state in failure messages. Returns the legal count. */
static int s_compare(const game_state *s, const ref_game *r, const char *what, bool check_is_legal)
{
    const game_def *g = game_default();
    char es[64], rs[64];
    g->format_position(s, es, sizeof es);
    ref_format(r, rs, sizeof rs);
    cr_assert_str_eq(es, rs, "%s: engine position '%s' != reference '%s'", what, es, rs);
    cr_assert_eq(g->to_move(s), r->side, "%s (%s): mover", what, rs);
    cr_assert_eq(g->mid_turn(s), r->chain >= 0, "%s (%s): mid_turn", what, rs);
    cr_assert_eq(khreibaga_chain_point(s), r->chain, "%s (%s): chain point", what, rs);
    cr_assert_eq(g->ply(s), r->ply, "%s (%s): ply %d != %d", what, rs, g->ply(s), r->ply);
    cr_assert_eq(khreibaga_no_progress(s), r->no_progress, "%s (%s): no-progress %d != %d", what,
                 rs, khreibaga_no_progress(s), r->no_progress);
    cr_assert_eq(khreibaga_repetitions(s), ref_repetitions(r), "%s (%s): repetitions %d != %d",
                 what, rs, khreibaga_repetitions(s), ref_repetitions(r));
    for (int sq = 0; sq < 25; sq++)
        cr_assert_eq(khreibaga_piece_at(s, sq), r->board[sq], "%s (%s): piece at %d", what, rs, sq);

    /* Terminal status (R12-R15). */
    game_result er = g->result(s);
    int rwin;
    const char *rreason = ref_result(r, &rwin);
    cr_assert_eq(er.over, rreason != NULL, "%s (%s): engine over=%d (%s), reference %s", what,
                 rs, er.over, game_reason_name(g, er.reason), rreason ? rreason : "not over");
    if (er.over) {
        cr_assert_str_eq(game_reason_name(g, er.reason), rreason, "%s (%s): reason", what, rs);
        cr_assert_eq(er.winner, rwin, "%s (%s): winner", what, rs);
    }

    /* Legal actions (R3-R9), compared where the engine promises them: at every
     * live state and where the game ended for lack of moves or pieces. */
    int rl[REF_ACTIONS];
    int rn = ref_legal(r, rl);
    uint16_t el[GAME_MAX_LEGAL];
    int en = g->legal_actions(s, el);
    bool compare = !er.over || er.reason == GAME_REASON_NO_MOVES ||
                   er.reason == GAME_REASON_NO_PIECES;
    if (compare) {
        char list[4096] = "";
        for (int i = 0; i < rn && strlen(list) < sizeof list - 16; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), " %d-%d", rl[i] / 25,
                     rl[i] % 25);
        cr_assert_eq(en, rn, "%s (%s): engine has %d legal actions, reference %d:%s", what, rs,
                     en, rn, list);
        for (int i = 0; i < rn; i++)
            cr_assert_eq(el[i], rl[i], "%s (%s): legal[%d] engine %d-%d, reference %d-%d", what,
                         rs, i, el[i] / 25, el[i] % 25, rl[i] / 25, rl[i] % 25);
        uint8_t mask[KH_ACTIONS];
        game_legal_mask(g, s, mask);
        int k = 0;
        for (int a = 0; a < KH_ACTIONS; a++) {
            bool in = k < rn && rl[k] == a;
            k += in;
            /* (asserting only on failure keeps the loop fast) */
            if ((mask[a] != 0) != in)
                cr_assert_fail("%s (%s): mask[%d-%d] is %d", what, rs, a / 25, a % 25, mask[a]);
            if (check_is_legal && game_is_legal(g, s, a) != in)
                cr_assert_fail("%s (%s): is_legal(%d-%d) is %d", what, rs, a / 25, a % 25, !in);
        }
        cr_assert(!game_is_legal(g, s, -1) && !game_is_legal(g, s, KH_ACTIONS) &&
                  !game_is_legal(g, s, 1 << 20), "%s: out-of-range actions must be illegal", what);
    }

    /* Canonical planes (R16, R17). */
    float ep[7 * 25], rp[7 * 25];
    g->encode_planes(s, ep);
    ref_planes(r, rp);
    for (int i = 0; i < 7 * 25; i++)
        if (!(ep[i] > rp[i] - 1e-6f && ep[i] < rp[i] + 1e-6f))
            cr_assert_fail("%s (%s): plane %d point %d: engine %g, reference %g", what, rs,
                           i / 25, i % 25, ep[i], rp[i]);
    return rn;
}

/* How the random player picks among the legal actions. */
enum {
    POLICY_UNIFORM,  /* uniformly */
    POLICY_SHUFFLE,  /* prefer king moves, often undoing the mover's last one (R14) */
    POLICY_STALL,    /* king moves to new positions until the R13 count nears a random
                      * threshold, then a man move: long games (R13, R15) */
};

/* Whether the mover of s has a capture (then every legal action is one, R8). */
static bool s_engine_has_capture(const game_state *s)
{
    const game_def *g = game_default();
    uint16_t legal[GAME_MAX_LEGAL];
    if (g->result(s).over || g->legal_actions(s, legal) == 0)
        return false;
    game_state c = *s;
    int before = 0, after = 0;
    for (int sq = 0; sq < 25; sq++)
        before += khreibaga_piece_at(&c, sq) != '.';
    g->apply(&c, legal[0]);
    for (int sq = 0; sq < 25; sq++)
        after += khreibaga_piece_at(&c, sq) != '.';
    return after < before;
}

/* Picks an action for the reference state r (engine state s alike; the engine
 * only helps choose, the comparison judges). `last[side]` is that side's last
 * action (or -1). */
static int s_pick(const game_state *s, const ref_game *r, rng_t *rng, int policy,
                  const int *last, int threshold)
{
    const game_def *g = game_default();
    int rl[REF_ACTIONS], kings[REF_ACTIONS], men[REF_ACTIONS];
    int rn = ref_legal(r, rl), nk = 0, nm = 0;
    cr_assert_gt(rn, 0, "a live game has legal actions");
    int any = rl[rng_below(rng, (uint32_t)rn)];
    /* Captures are compulsory (R8); mid-sequence and capture turns are uniform. */
    if (policy == POLICY_UNIFORM || r->chain >= 0 || rng_below(rng, 50) == 0)
        return any;
    for (int i = 0; i < rn; i++) {
        char p = r->board[rl[i] / 25];
        if (p == 'B' || p == 'W')
            kings[nk++] = rl[i];
        else
            men[nm++] = rl[i];
    }
    /* SHUFFLE: the king move undoing the mover's last move (R14), else any
     * king move. STALL: king moves while the R13 count is below the
     * threshold, else man moves. Both prefer a move that gives the opponent no
     * capture, and STALL one that reaches no position seen before. */
    int back = last[r->side] >= 0 ? (last[r->side] % 25) * 25 + last[r->side] / 25 : -1;
    const int *cand = kings;
    int nc = nk;
    if (policy == POLICY_STALL && (r->no_progress >= threshold || !nk)) {
        cand = men;
        nc = nm;
    }
    if (nc == 0)
        return any;
    int start = (int)rng_below(rng, (uint32_t)nc);
    if (policy == POLICY_SHUFFLE && rng_below(rng, 4) != 0)
        for (int i = 0; i < nc; i++)
            if (cand[i] == back)
                return back;
    for (int i = 0; i < nc; i++) {
        int a = cand[(start + i) % nc];
        game_state c = *s;
        g->apply(&c, a);
        if (!s_engine_has_capture(&c) &&
            (policy == POLICY_SHUFFLE || khreibaga_repetitions(&c) <= 1))
            return a;
    }
    return cand[start];
}

/* Plays up to max_actions legal actions chosen by `policy` from (s, r) in
 * lockstep, comparing after each. Returns the actions played. */
static int s_play_random(game_state *s, ref_game *r, rng_t *rng, int max_actions,
                         const char *what, int *checked_states, int policy)
{
    const game_def *g = game_default();
    char label[160];
    int played = 0, last[2] = {-1, -1}, threshold = 30 + (int)rng_below(rng, 25);
    snprintf(label, sizeof label, "%s, action 0", what);
    s_compare(s, r, label, rng_below(rng, 8) == 0);
    (*checked_states)++;
    while (played < max_actions) {
        game_result er = g->result(s);
        if (er.over)
            break;
        int mover = r->side;
        int a = s_pick(s, r, rng, policy, last, threshold);
        last[mover] = a;
        g->apply(s, a);
        cr_assert_eq(ref_apply(r, a), 0, "%s: reference refused its own legal action", what);
        played++;
        snprintf(label, sizeof label, "%s, after action %d (%d-%d)", what, played, a / 25, a % 25);
        s_compare(s, r, label, rng_below(rng, 8) == 0);
        (*checked_states)++;
    }
    return played;
}

/* --- random games from the start -------------------------------------------- */

#define N_GAMES 1000

Test(khreibaga_ref, random_games_agree)
{
    const game_def *g = game_default();
    int states = 0, ended[GAME_REASON_COUNT] = {0};
    ref_game *r = malloc(sizeof *r);
    for (int i = 0; i < N_GAMES; i++) {
        rng_t rng;
        rng_seed(&rng, 0x6b7a0000u + (uint64_t)i);
        game_state s;
        g->init(&s);
        ref_init(r);
        char what[64];
        snprintf(what, sizeof what, "game seed %d", i);
        s_play_random(&s, r, &rng, 100000, what, &states, i % 3);
        game_result res = g->result(&s);
        cr_assert(res.over, "%s: a game always ends (R15)", what);
        ended[res.reason]++;
    }
    free(r);
    /* Every way a game can end must have been exercised by this many games, or
     * the comparison proved less than it claims. */
    cr_log_info("random games: %d games, %d states compared; no-pieces %d, no-moves %d, "
                "no-progress %d, repetition %d, length %d",
                N_GAMES, states, ended[1], ended[2], ended[3], ended[4], ended[5]);
    cr_expect_gt(ended[GAME_REASON_NO_PIECES], 0);
    cr_expect_gt(ended[GAME_REASON_NO_PROGRESS], 0);
    cr_expect_gt(ended[GAME_REASON_REPETITION], 0);
    cr_expect_gt(ended[GAME_REASON_NO_MOVES], 0);
}

/* --- random positions ----------------------------------------------------------- */

Test(khreibaga_ref, random_positions_agree)
{
    const game_def *g = game_default();
    int states = 0, positions = 0, mid = 0, terminal = 0;
    ref_game *r = malloc(sizeof *r);
    for (int i = 0; i < 2000; i++) {
        rng_t rng;
        rng_seed(&rng, 0x505f0000u + (uint64_t)i);
        char pos[40], err[200], rerr[200];
        testgen_position(&rng, pos);
        game_state s;
        int erc = g->parse_position(&s, pos, err, sizeof err);
        int rrc = ref_parse(r, pos, rerr, sizeof rerr);
        cr_assert_eq(erc, 0, "engine rejects valid '%s': %s", pos, err);
        cr_assert_eq(rrc, 0, "reference rejects valid '%s': %s", pos, rerr);
        positions++;
        terminal += g->result(&s).over;
        char what[80];
        snprintf(what, sizeof what, "position '%s'", pos);
        s_play_random(&s, r, &rng, 40, what, &states, i % 3);

        /* The same board mid-sequence: every mover's piece as the chain piece.
         * R20: valid exactly when that piece has a capture. */
        int side = pos[26] == 'b' ? 0 : 1;
        for (int sq = 0; sq < 25; sq++) {
            char p = pos[sq];
            if (p == '.' || ((p == 'b' || p == 'B') != (side == 0)))
                continue;
            char cpos[40];
            snprintf(cpos, sizeof cpos, "%.27s %d", pos, sq);
            erc = g->parse_position(&s, cpos, err, sizeof err);
            rrc = ref_parse(r, cpos, rerr, sizeof rerr);
            cr_assert_eq(erc == 0, rrc == 0, "'%s': engine %s, reference %s", cpos,
                         erc ? err : "accepts", rrc ? rerr : "accepts");
            if (erc)
                continue;
            mid++;
            snprintf(what, sizeof what, "position '%s'", cpos);
            s_play_random(&s, r, &rng, 12, what, &states, POLICY_UNIFORM);
        }
    }
    free(r);
    cr_log_info("random positions: %d turn starts (%d terminal), %d mid-sequence, "
                "%d states compared", positions, terminal, mid, states);
    cr_expect_gt(mid, 100, "the generator must produce mid-sequence positions");
    cr_expect_gt(terminal, 10, "the generator must produce terminal positions");
}

/* Whole games from random positions, most with kings, played to their end by
 * all three policies: the draws (R13, R14, R15) and their order against the
 * losses (R12) are compared here. */
Test(khreibaga_ref, random_endgames_agree)
{
    const game_def *g = game_default();
    int states = 0, ended[GAME_REASON_COUNT] = {0};
    ref_game *r = malloc(sizeof *r);
    for (int i = 0; i < 600; i++) {
        rng_t rng;
        rng_seed(&rng, 0xe0d00000u + (uint64_t)i);
        char pos[40], err[200];
        if (i % 4 == 0)
            testgen_position(&rng, pos);
        else
            testgen_endgame(&rng, pos);
        game_state s;
        cr_assert_eq(g->parse_position(&s, pos, err, sizeof err), 0, "'%s': %s", pos, err);
        cr_assert_eq(ref_parse(r, pos, err, sizeof err), 0, "'%s': %s", pos, err);
        char what[80];
        snprintf(what, sizeof what, "endgame %d from '%s'", i, pos);
        s_play_random(&s, r, &rng, 100000, what, &states, 1 + i % 2);
        ended[g->result(&s).reason]++;
    }
    free(r);
    cr_log_info("random endgames: %d states compared; no-pieces %d, no-moves %d, "
                "no-progress %d, repetition %d, length %d",
                states, ended[1], ended[2], ended[3], ended[4], ended[5]);
    /* R15's cap needs deliberate play: see long_game_reaches_length_cap. */
    for (int reason = 1; reason < GAME_REASON_LENGTH; reason++)
        cr_expect_gt(ended[reason], 0, "no endgame ended by %s", game_reason_name(g, reason));
}

/* The long lines of khreibaga_lines.h, in lockstep: the reference must find
 * every action legal, agree on every state, and end the games as the engine
 * does (R15 by length; R12's loss over R15; R12's loss over R13). */
Test(khreibaga_ref, long_lines_reach_the_length_cap)
{
    static const char *starts[3] = {KL_FORTRESS, KL_FORTRESS, KL_CAGE};
    static const char *prefixes[3] = {KL_LONG_PREFIX, KL_LONG_PREFIX, ""};
    static const char *tails[3] = {KL_LONG_TAIL_LENGTH, KL_LONG_TAIL_LOSS, KL_CAGE_LINE};
    static const char *reasons[3] = {"length", "no-pieces", "no-moves"};
    static const int plies[3] = {300, 300, 50};
    const game_def *g = game_default();
    ref_game *r = malloc(sizeof *r);
    char *line = malloc(8192);
    for (int k = 0; k < 3; k++) {
        game_state s;
        char err[200], what[64];
        cr_assert_eq(g->parse_position(&s, starts[k], err, sizeof err), 0, "%s", err);
        cr_assert_eq(ref_parse(r, starts[k], err, sizeof err), 0, "%s", err);
        snprintf(line, 8192, "%s%s", prefixes[k], tails[k]);
        char *save = NULL;
        int n = 0;
        for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
            int a;
            cr_assert_eq(g->parse_action(t, &a), 0);
            cr_assert_eq(ref_apply(r, a), 0, "line %d action %d '%s': reference refuses", k, n, t);
            g->apply(&s, a);
            snprintf(what, sizeof what, "line %d after action %d (%s)", k, ++n, t);
            s_compare(&s, r, what, false);
        }
        int winner;
        const char *reason = ref_result(r, &winner);
        cr_assert(reason && !strcmp(reason, reasons[k]), "line %d ends by %s", k,
                  reason ? reason : "nothing");
        cr_assert_eq(r->ply, plies[k]);
    }
    free(line);
    free(r);
}

/* A man on its far row mid-sequence (R10: it landed there and captures on as
 * a man): the chain piece alone may stand there; any other man may not. */
Test(khreibaga_ref, far_row_chain_man_agrees)
{
    const game_def *g = game_default();
    ref_game *r = malloc(sizeof *r);
    int accepted = 0, states = 0;
    for (int i = 0; i < 2000; i++) {
        rng_t rng;
        rng_seed(&rng, 0xfa000000u + (uint64_t)i);
        char pos[40];
        testgen_position(&rng, pos);
        int side = pos[26] == 'b' ? 0 : 1;
        int sq = side == 0 ? 20 + (int)rng_below(&rng, 5) : (int)rng_below(&rng, 5);
        pos[sq] = side == 0 ? 'b' : 'w';
        char cpos[40], err[200], rerr[200];
        snprintf(cpos, sizeof cpos, "%.27s %d", pos, sq);
        game_state s;
        int erc = g->parse_position(&s, cpos, err, sizeof err);
        int rrc = ref_parse(r, cpos, rerr, sizeof rerr);
        cr_assert_eq(erc == 0, rrc == 0, "'%s': engine %s, reference %s", cpos,
                     erc ? err : "accepts", rrc ? rerr : "accepts");
        if (erc)
            continue;
        accepted++;
        s_play_random(&s, r, &rng, 12, cpos, &states, POLICY_UNIFORM);
    }
    free(r);
    cr_log_info("far-row chain men: %d accepted, %d states", accepted, states);
    cr_expect_gt(accepted, 20);
}

/* --- position strings, valid or not -------------------------------------------- */

Test(khreibaga_ref, parse_agrees_on_mutated_strings)
{
    const game_def *g = game_default();
    ref_game *r = malloc(sizeof *r);
    static const char alphabet[] = ".bBwWx 0123456789-+";
    int accepted = 0, rejected = 0;
    for (int i = 0; i < 20000; i++) {
        rng_t rng;
        rng_seed(&rng, 0x9a000000u + (uint64_t)i);
        char pos[48];
        testgen_position(&rng, pos);
        if (rng_below(&rng, 2))
            snprintf(pos + 27, sizeof pos - 27, " %d", (int)rng_below(&rng, 27));
        int edits = (int)rng_below(&rng, 3);
        for (int e = 0; e < edits; e++) {
            size_t len = strlen(pos);
            int kind = (int)rng_below(&rng, 3), at = (int)rng_below(&rng, (uint32_t)len);
            if (kind == 0) /* replace */
                pos[at] = alphabet[rng_below(&rng, sizeof alphabet - 1)];
            else if (kind == 1 && len > 1) /* delete */
                memmove(pos + at, pos + at + 1, len - (size_t)at);
            else if (len < sizeof pos - 2) { /* insert */
                memmove(pos + at + 1, pos + at, len - (size_t)at + 1);
                pos[at] = alphabet[rng_below(&rng, sizeof alphabet - 1)];
            }
        }
        game_state s;
        char err[200], rerr[200];
        err[0] = '\0';
        int erc = g->parse_position(&s, pos, err, sizeof err);
        int rrc = ref_parse(r, pos, rerr, sizeof rerr);
        cr_assert_eq(erc == 0, rrc == 0, "'%s': engine %s, reference %s", pos,
                     erc ? err : "accepts", rrc ? rerr : "accepts");
        if (erc) {
            cr_assert_eq(erc, KZ_EINVAL, "'%s': parse errors are KZ_EINVAL", pos);
            cr_assert(err[0] != '\0' && !strchr(err, '\n'), "'%s': a one-line reason", pos);
            rejected++;
        } else {
            int states = 0;
            s_play_random(&s, r, &rng, 3, pos, &states, POLICY_UNIFORM);
            accepted++;
        }
    }
    free(r);
    cr_log_info("mutated position strings: %d accepted, %d rejected", accepted, rejected);
    cr_expect_gt(accepted, 1000);
    cr_expect_gt(rejected, 1000);
}

/* --- perft --------------------------------------------------------------------------- */

static uint64_t s_perft(const game_state *s, int depth)
{
    const game_def *g = game_default();
    if (depth == 0)
        return 1;
    if (g->result(s).over)
        return 0; /* R22: terminal nodes above the depth add nothing */
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        game_state c = *s;
        g->apply(&c, legal[i]);
        total += s_perft(&c, depth - 1);
    }
    return total;
}

/* Perft of the engine and of the reference from `pos` agree at depths 1..depth. */
static void s_perft_agree(const char *pos, int depth)
{
    const game_def *g = game_default();
    game_state s;
    char err[200];
    cr_assert_eq(g->parse_position(&s, pos, err, sizeof err), 0, "'%s': %s", pos, err);
    ref_game *r = malloc(sizeof *r);
    cr_assert_eq(ref_parse(r, pos, err, sizeof err), 0, "'%s': %s", pos, err);
    for (int d = 1; d <= depth; d++) {
        uint64_t e = s_perft(&s, d), f = ref_perft(r, d), m = game_perft(g, &s, d);
        cr_assert_eq(e, f, "perft %d from '%s': engine %llu, reference %llu", d, pos,
                     (unsigned long long)e, (unsigned long long)f);
        /* game_perft uses the module's own fast perft when it has one. */
        cr_assert_eq(m, f, "perft %d from '%s': game_perft %llu, reference %llu", d, pos,
                     (unsigned long long)m, (unsigned long long)f);
        cr_log_info("perft %d from '%s': %llu", d, pos, (unsigned long long)e);
    }
    free(r);
}

Test(khreibaga_ref, perft_start) { s_perft_agree(KH_START, 10); }

/* Flying kings on open diagonals and lines (R5, R6), both sides to move. */
Test(khreibaga_ref, perft_flying_kings)
{
    s_perft_agree("B.......w...W.....b.....w b", 5);
    s_perft_agree("B.......w...W.....b.....w w", 5);
    s_perft_agree("..B...w.w...b.w...W...... b", 5);
    s_perft_agree("W...b..w.b..B..w...b...W. w", 5);
}

/* Majority rule (R8): several pieces with sequences of different lengths. */
Test(khreibaga_ref, perft_majority)
{
    s_perft_agree(".b.b..w.w.b.....w.w.w.... b", 6);
    s_perft_agree("b.b...www.....w.w.B...... b", 6);
    s_perft_agree("....B.w.w.w...w.b.b.w.... w", 6);
}

/* Mid-sequence starts (R9, R20). */
Test(khreibaga_ref, perft_mid_sequence)
{
    s_perft_agree("......w.w...B.w.w........ b 12", 6);
    s_perft_agree("bb.bb.w.w.b.w.w.b........ b 10", 6);
}
