/* fuzz_position: position strings and action strings (game_def->
 * parse_position / parse_action, R20/R21), then the rules on whatever
 * parses, as `kz moves/show/perft`, start positions in records and the
 * players' input reach them.
 *
 * Input: the first line is a position ("" or "-": the initial one); every
 * further line is an action string, applied when legal; a line that does not
 * parse picks the legal action indexed by its first byte instead. At most
 * 300 actions.
 *
 * Properties at every state reached: no crash (the rules assert on misuse);
 * the legal actions ascend, are at most max_legal, agree with legal_mask
 * (and with is_legal, every 8th state), and exist whenever the game is not
 * over; the state formats to
 * a string that parses again to the same string; pack + unpack_planes gives
 * exactly encode_planes; canonical_action and the mirror are involutions;
 * legal actions format and parse back; the module's perft agrees with the
 * generic one at depth 2 (every 8th state). */
#include <string.h>

#include "fuzz.h"
#include "games/game.h"

static const game_def *s_g;

void fuzz_setup(void)
{
    s_g = game_default();
}

/* Every property of one state (is_legal on every action and the perft
 * comparison every 8th state: they cost more than the rest together);
 * returns its legal actions' count. */
static int s_check_state(const game_state *s, uint16_t *legal, int step)
{
    const game_def *g = s_g;
    int n = g->legal_actions(s, legal);
    FUZZ_ASSERT(n >= 0 && n <= g->max_legal && g->max_legal <= GAME_MAX_LEGAL);
    static uint8_t mask[GAME_MAX_ACTIONS];
    game_legal_mask(g, s, mask);
    int in_mask = 0;
    for (int a = 0; a < g->action_count; a++) {
        if (step % 8 == 0) /* is_legal on every action: the costliest check */
            FUZZ_ASSERT(mask[a] == game_is_legal(g, s, a));
        in_mask += mask[a];
    }
    FUZZ_ASSERT(in_mask == n);
    FUZZ_ASSERT(!game_is_legal(g, s, -1) && !game_is_legal(g, s, g->action_count));
    for (int k = 0; k < n; k++) {
        FUZZ_ASSERT(legal[k] < g->action_count && mask[legal[k]] && game_is_legal(g, s, legal[k]));
        FUZZ_ASSERT(k == 0 || legal[k] > legal[k - 1]);
        int c = g->canonical_action(s, legal[k]);
        FUZZ_ASSERT(c >= 0 && c < g->action_count && g->canonical_action(s, c) == legal[k]);
        FUZZ_ASSERT(g->symmetries[0].action(g->symmetries[0].action(c)) == c);
        char text[32];
        int back = -1;
        g->format_action(legal[k], text, sizeof text);
        FUZZ_ASSERT(g->parse_action(text, &back) == 0 && back == legal[k]);
    }
    game_result r = g->result(s);
    FUZZ_ASSERT(r.over || n > 0);
    FUZZ_ASSERT(!r.over || (r.reason > GAME_REASON_NONE && r.reason < GAME_REASON_COUNT));
    FUZZ_ASSERT(!g->mid_turn(s) || !r.over);
    /* The position string round trip. */
    char pos[128], pos2[128], err[256] = "";
    g->format_position(s, pos, sizeof pos);
    game_state t;
    int prc = g->parse_position(&t, pos, err, sizeof err);
    if (prc)
        fprintf(stderr, "reached position '%s' does not parse: %s\n", pos, err);
    FUZZ_ASSERT(prc == 0);
    g->format_position(&t, pos2, sizeof pos2);
    FUZZ_ASSERT(!strcmp(pos, pos2));
    /* Planes: packed and unpacked equal encoded. */
    size_t np = (size_t)g->planes * (size_t)g->height * (size_t)g->width;
    static float a[4096], b[4096];
    FUZZ_ASSERT(np <= 4096 && g->packed_bytes <= GAME_PACKED_BYTES);
    uint8_t packed[GAME_PACKED_BYTES];
    g->encode_planes(s, a);
    g->pack(s, packed);
    FUZZ_ASSERT(g->unpack_planes(packed, b) == 0);
    FUZZ_ASSERT(!memcmp(a, b, np * sizeof *a));
    if (g->perft && !r.over && step % 8 == 0)
        FUZZ_ASSERT(game_perft(g, s, 2) == game_perft_generic(g, s, 2));
    return n;
}

int fuzz_input(const uint8_t *data, size_t size)
{
    const game_def *g = s_g;
    char *text = fuzz_text(data, size);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    game_state s;
    char err[256] = "";
    if (!line || !strcmp(line, "-")) {
        g->init(&s);
    } else {
        int rc = g->parse_position(&s, line, err, sizeof err);
        if (rc) {
            FUZZ_ASSERT(rc == KZ_EINVAL && fuzz_one_line(err) && err[0]);
            free(text);
            return 0;
        }
    }
    uint16_t legal[GAME_MAX_LEGAL];
    for (int step = 0; step < 300; step++) {
        int n = s_check_state(&s, legal, step);
        if (g->result(&s).over)
            break;
        line = strtok_r(NULL, "\n", &save);
        if (!line)
            break;
        int action;
        if (g->parse_action(line, &action) == 0) {
            FUZZ_ASSERT(action >= 0 && action < g->action_count);
            if (!game_is_legal(g, &s, action))
                continue;
        } else {
            action = legal[(unsigned char)line[0] % n];
        }
        int ply = g->ply(&s), mover = g->to_move(&s);
        g->apply(&s, action);
        FUZZ_ASSERT(g->ply(&s) == ply + (g->mid_turn(&s) ? 0 : 1));
        FUZZ_ASSERT(!g->mid_turn(&s) || g->to_move(&s) == mover);
    }
    free(text);
    return 0;
}
