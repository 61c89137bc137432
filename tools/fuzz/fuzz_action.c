/* fuzz_action: action strings (game_def->parse_action, R21) as typed by a
 * person in `kz play` / `kz moves` or read from a file.
 *
 * Properties: no crash or out-of-bounds read; what parses is an action in
 * [0, action_count) whose formatted string parses to the same action; a
 * string with a NUL inside parses no differently from its prefix. */
#include <string.h>

#include "fuzz.h"
#include "games/game.h"

int fuzz_input(const uint8_t *data, size_t size)
{
    const game_def *g = game_default();
    char *text = fuzz_text(data, size);
    int action = -12345;
    if (g->parse_action(text, &action) == 0) {
        FUZZ_ASSERT(action >= 0 && action < g->action_count);
        char out[32];
        int back = -1;
        g->format_action(action, out, sizeof out);
        FUZZ_ASSERT(g->parse_action(out, &back) == 0 && back == action);
    } else {
        FUZZ_ASSERT(action == -12345);
    }
    free(text);
    return 0;
}
