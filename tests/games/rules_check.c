/* rules_check: the hop-by-hop games' test helpers. See rules_check.h. */
#include "tests/games/rules_check.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

game_state rules_position(const game_def *g, const char *text)
{
    game_state s;
    char err[200];
    cr_assert_eq(g->parse_position(&s, text, err, sizeof err), 0, "'%s': %s", text, err);
    return s;
}

void rules_board(char *out, int cells, int first, const char *pieces, char side)
{
    memset(out, '.', (size_t)cells);
    for (const char *p = pieces; *p;) {
        char c = *p++;
        int n = (int)strtol(p, (char **)&p, 10) - first;
        cr_assert(n >= 0 && n < cells, "placement %c%d off the board", c, n + first);
        out[n] = c;
        while (*p == ' ')
            p++;
    }
    out[cells] = ' ';
    out[cells + 1] = side;
    out[cells + 2] = '\0';
}

game_state rules_place(const game_def *g, int cells, int first, const char *pieces, char side)
{
    char text[GAME_POSITION_CHARS + 1];
    cr_assert_lt(cells + 3, (int)sizeof text);
    rules_board(text, cells, first, pieces, side);
    return rules_position(g, text);
}

void rules_legal_text(const game_def *g, const game_state *s, char *buf, size_t len)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char a[16];
        g->format_action(legal[i], a, sizeof a);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? " " : "", a);
    }
}

void rules_play(const game_def *g, game_state *s, const char *actions)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", actions);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        int a;
        cr_assert_eq(g->parse_action(t, &a), 0, "'%s'", t);
        cr_assert(game_is_legal(g, s, a), "'%s' is illegal", t);
        g->apply(s, a);
    }
}
