/* The interface suite, run over every registered game (games/game.h), as
 * OpenSpiel's basic tests run over each of its games: seeded random games
 * checked state by state against the interface's own promises. A game added
 * to games/registry.c (or registered by a test, as the toy game) is checked
 * here without a line of this file changing. Each game's rules have their
 * own tests beside it; this suite holds what every game owes the layers
 * above it:
 *   - legal actions ascending, distinct, within action_count and max_legal,
 *     and equal to game_legal_mask's and game_is_legal's view (every action id);
 *   - a state not over has an action; a chance state lists outcomes whose
 *     probabilities are positive and sum to 1, and is never over;
 *   - copy gives an equal hash; apply keeps the mover inside a turn;
 *   - the position string parses back to a state with the same hash, the
 *     same legal actions and the same string; every legal action's string
 *     parses back to it;
 *   - planes: pack then unpack_planes equals encode_planes; canonical_action
 *     is an involution on the legal actions;
 *   - a result: winner in -1..1, reason named and in range, points in
 *     0..max_points, game_result_value in [-1, 1] and opposite for the
 *     two players;
 *   - perft through the module's own counter equals the generic loop. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "common/util.h"

#define GAMES_PER_GAME 20
#define MAX_STEPS 600

static int s_n_games(void)
{
    int n = 0;
    while (game_at(n))
        n++;
    return n;
}

/* The checks of one state that is not over. */
static void s_check_state(const game_def *g, const game_state *s, uint8_t *mask, float *p1,
                          float *p2, uint8_t *packed)
{
    const char *n = g->name;
    uint16_t legal[GAME_MAX_LEGAL];
    int k = g->legal_actions(s, legal);
    cr_assert(k > 0 && k <= g->max_legal, "%s: %d legal actions (max_legal %d)", n, k,
              g->max_legal);
    for (int i = 0; i < k; i++) {
        cr_assert_lt(legal[i], g->action_count, "%s: action %d out of range", n, legal[i]);
        cr_assert(i == 0 || legal[i] > legal[i - 1], "%s: legal actions not ascending", n);
    }
    game_legal_mask(g, s, mask);
    int in_mask = 0;
    for (int a = 0; a < g->action_count; a++) {
        in_mask += mask[a] != 0;
        cr_assert_eq(mask[a] != 0, game_is_legal(g, s, a),
                     "%s: legal_mask and is_legal differ on %d", n, a);
    }
    cr_assert_eq(in_mask, k, "%s: legal_mask has %d actions, legal_actions %d", n, in_mask, k);
    cr_assert(!game_is_legal(g, s, -1) && !game_is_legal(g, s, g->action_count),
              "%s: an action out of range is legal", n);

    if (g->is_chance && g->is_chance(s)) {
        float probs[GAME_MAX_LEGAL];
        g->chance_probs(s, probs);
        double sum = 0;
        for (int i = 0; i < k; i++) {
            cr_assert_gt(probs[i], 0.0f, "%s: chance outcome %d has probability %g", n,
                         legal[i], probs[i]);
            sum += probs[i];
        }
        cr_assert_lt(fabs(sum - 1.0), 1e-5, "%s: chance probabilities sum to %g", n, sum);
    }

    game_state c;
    g->copy(&c, s);
    cr_assert_eq(g->hash(&c), g->hash(s), "%s: a copy hashes differently", n);

    char pos[GAME_POSITION_CHARS + 1], pos2[GAME_POSITION_CHARS + 1], err[200];
    g->format_position(s, pos, sizeof pos);
    cr_assert_leq((int)strlen(pos), g->position_chars, "%s: position string too long", n);
    game_state back;
    cr_assert_eq(g->parse_position(&back, pos, err, sizeof err), 0, "%s: '%s': %s", n, pos, err);
    g->format_position(&back, pos2, sizeof pos2);
    cr_assert_str_eq(pos2, pos, "%s: the position string does not round-trip", n);
    uint16_t legal2[GAME_MAX_LEGAL];
    int k2 = g->legal_actions(&back, legal2);
    cr_assert(k2 == k && !memcmp(legal, legal2, (size_t)k * sizeof *legal),
              "%s: '%s' parsed back has other legal actions", n, pos);

    for (int i = 0; i < k; i++) {
        char as[64];
        int a2 = -1;
        g->format_action(legal[i], as, sizeof as);
        cr_assert_eq(g->parse_action(as, &a2), 0, "%s: action string '%s' does not parse", n, as);
        cr_assert_eq(a2, legal[i], "%s: '%s' parses to %d, not %d", n, as, a2, legal[i]);
        int c1 = g->canonical_action(s, legal[i]);
        cr_assert(c1 >= 0 && c1 < g->action_count, "%s: canonical action out of range", n);
        cr_assert_eq(g->canonical_action(s, c1), legal[i], "%s: canonical_action is no involution",
                     n);
    }

    g->encode_planes(s, p1);
    g->pack(s, packed);
    cr_assert_eq(g->unpack_planes(packed, p2), 0, "%s: unpack_planes refused pack's bytes", n);
    size_t nf = (size_t)g->planes * g->height * g->width;
    cr_assert(!memcmp(p1, p2, nf * sizeof *p1), "%s: pack/unpack_planes differ from encode_planes",
              n);
}

static void s_check_result(const game_def *g, const game_state *s, game_result r)
{
    const char *n = g->name;
    cr_assert(r.winner >= -1 && r.winner <= 1, "%s: winner %d", n, r.winner);
    cr_assert(r.reason > 0 && r.reason < game_reason_count(g), "%s: reason %d", n, r.reason);
    cr_assert_str_neq(game_reason_name(g, r.reason), "unknown", "%s", n);
    int maxp = g->max_points > 1 ? g->max_points : 1;
    cr_assert(r.points >= 0 && r.points <= maxp, "%s: points %d of %d", n, r.points, maxp);
    float v0 = game_result_value(g, r, 0), v1 = game_result_value(g, r, 1);
    cr_assert(v0 >= -1 && v0 <= 1 && v0 == -v1, "%s: values %g and %g", n, v0, v1);
    cr_assert_eq(v0 == 0, r.winner < 0, "%s: a draw values 0, a win not", n);
    cr_assert(!(g->is_chance && g->is_chance(s)), "%s: a chance state is over", n);
}

Test(every_game, random_games_keep_the_interface_s_promises, .timeout = 600)
{
    int ng = s_n_games();
    cr_assert_geq(ng, 3, "the built-in games are registered");
    uint8_t *mask = malloc(GAME_MAX_ACTIONS);
    float *p1 = malloc(GAME_MAX_PLANE_FLOATS * sizeof *p1);
    float *p2 = malloc(GAME_MAX_PLANE_FLOATS * sizeof *p2);
    uint8_t packed[GAME_PACKED_BYTES];
    cr_assert(mask && p1 && p2);
    for (int gi = 0; gi < ng; gi++) {
        const game_def *g = game_at(gi);
        rng_t rng;
        rng_seed(&rng, 0x9a3e + (uint64_t)gi);
        int ended = 0;
        for (int game = 0; game < GAMES_PER_GAME; game++) {
            game_state s;
            g->init(&s);
            for (int step = 0; step < MAX_STEPS; step++) {
                game_result r = g->result(&s);
                if (r.over) {
                    s_check_result(g, &s, r);
                    ended++;
                    break;
                }
                s_check_state(g, &s, mask, p1, p2, packed);
                uint16_t legal[GAME_MAX_LEGAL];
                int k = g->legal_actions(&s, legal);
                int mover = g->to_move(&s);
                bool chance = g->is_chance && g->is_chance(&s);
                bool mid = g->mid_turn(&s);
                g->apply(&s, legal[rng_below(&rng, (uint32_t)k)]);
                if (mid && !chance && g->mid_turn(&s))
                    cr_assert_eq(g->to_move(&s), mover, "%s: the mover changed inside a turn",
                                 g->name);
            }
        }
        cr_assert_gt(ended, 0, "%s: no random game of %d steps ended", g->name, MAX_STEPS);
    }
    free(mask);
    free(p1);
    free(p2);
}

Test(every_game, perft_agrees_with_the_generic_loop, .timeout = 600)
{
    for (int gi = 0; gi < s_n_games(); gi++) {
        const game_def *g = game_at(gi);
        game_state s;
        g->init(&s);
        /* Deep enough to pass a turn or two, small enough for any game. */
        int depth = 1;
        while (depth < 6 && game_perft_generic(g, &s, depth) < 20000)
            depth++;
        uint64_t a = game_perft(g, &s, depth), b = game_perft_generic(g, &s, depth);
        cr_assert_eq(a, b, "%s: perft %d: %llu, generic %llu", g->name, depth,
                     (unsigned long long)a, (unsigned long long)b);
        cr_assert_gt(a, 0, "%s", g->name);
    }
}

Test(every_game, end_reasons_are_the_game_s_own)
{
    for (int gi = 0; gi < s_n_games(); gi++) {
        const game_def *g = game_at(gi);
        int n = game_reason_count(g);
        cr_assert(n >= 2 && n <= GAME_MAX_REASONS, "%s: %d reasons", g->name, n);
        cr_assert_str_eq(game_reason_name(g, 0), "none", "%s", g->name);
        for (int k = 0; k < n; k++)
            cr_assert_eq(game_reason_parse(g, game_reason_name(g, k)), k, "%s: reason %d",
                         g->name, k);
        cr_assert_str_eq(game_reason_name(g, n), "unknown", "%s", g->name);
        cr_assert_eq(game_reason_parse(g, "no-such-reason"), -1, "%s", g->name);
    }
}
