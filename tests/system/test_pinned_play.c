/* Pinned play: every built-in game's self-play, as `kz selfplay` records it,
 * against digests taken before the house was rebuilt (issue 22: "all games
 * play bit for bit as before, the same records for the same seeds").
 *
 * Each game plays two games with the uniform evaluator (no network: its
 * arithmetic depends on the CPU, bf16 or fp32, AVX-512 or not), 16
 * simulations, no root noise (Dirichlet samples go through libm's exp and
 * log, whose last bit may differ between machines), seed 11; sampling by
 * visits, the dice and the tie-breaks are the seeded integer generator. The
 * digest is FNV-1a 64 over `kz records FILE --game K` for both games (every
 * state: ply, mover, action, z, root value, visit shares), the id line left
 * out (a game id is random), and the result line's wall time. Checked
 * when pinned: Khreibaga's, Alquerque's and draughts' records are the same,
 * line for line, as those of the tree before the house was rebuilt (07794f3^,
 * also at 20 games, 64 simulations, root noise on). A change that means to change play (a search
 * rule, a game's rules) updates the table: the failure prints the digest. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "games/game.h"
#include "tests/harness/harness.h"

typedef struct pin {
    const char *game;
    uint64_t digest;
} pin;

static const pin s_pins[] = {
    {"khreibaga", 0x9a00755cfa61f92dull},   {"alquerque", 0x6659adb9f2970b9aull},
    {"draughts", 0x68b2b018e38597f4ull},    {"yinsh", 0xf08e8f2e31e0b272ull},
    {"yinsh-blitz", 0x1911f1a21877ebd7ull}, {"backgammon", 0xa4049cc1eccc012dull},
};

/* FNV-1a 64 of text, the lines starting "game " (the id line) left out and
 * the result line's time ("result: ... after 34 plies, 36 states, 0.1 s")
 * cut at its last comma. */
static uint64_t s_digest(const char *text, uint64_t h)
{
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) + 1 : strlen(p), use = n;
        if (!strncmp(p, "game ", 5))
            use = 0;
        else if (!strncmp(p, "result:", 7))
            while (use > 0 && p[use - 1] != ',')
                use--;
        for (size_t i = 0; i < use; i++)
            h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
        p += n;
    }
    return h;
}

Test(pinned_play, every_game_plays_as_before, .timeout = 600)
{
    /* Every built-in game has its pin, and every pin a built-in game. */
    cr_assert_eq((int)(sizeof s_pins / sizeof s_pins[0]), game_n_builtin,
                 "a game added or removed: pin its play here");
    harness_cli c;
    harness_cli_init(&c, "pinned-play");
    char args[256], failed[2048] = "";
    for (size_t k = 0; k < sizeof s_pins / sizeof s_pins[0]; k++) {
        const pin *p = &s_pins[k];
        cr_assert_not_null(game_find(p->game), "%s is not built in", p->game);
        snprintf(args, sizeof args,
                 "selfplay --game %s --games 2 --sims 16 --epsilon 0 --seed 11 --quiet "
                 "--out %s.kzr",
                 p->game, p->game);
        cr_assert_eq(harness_cli_kz(&c, args), 0, "%s: %s", p->game, c.err);
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis */
        for (int g = 1; g <= 2; g++) {
            snprintf(args, sizeof args, "records %s.kzr --game %d", p->game, g);
            cr_assert_eq(harness_cli_kz(&c, args), 0, "%s: %s", p->game, c.err);
            cr_assert(strstr(c.out, "mover"), "%s: %s", p->game, c.out);
            h = s_digest(c.out, h);
        }
        if (h != p->digest)
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed),
                     "\n  %s: 0x%016" PRIx64 " (pinned 0x%016" PRIx64 ")", p->game, h,
                     p->digest);
    }
    harness_cli_fini(&c);
    cr_assert_str_empty(failed, "self-play differs from its pin:%s", failed);
}
