/* view: what the games share to describe themselves to the web pages (see view.h). */
#include "games/view.h"

#include <string.h>

void view_open(strbuf *out, const game_def *g, const char *c0, const char *c1)
{
    strbuf_printf(out, "{\"players\": [{\"name\": ");
    const char *n0 = g->player_name(0), *n1 = g->player_name(1);
    strbuf_json_str(out, n0, strlen(n0));
    strbuf_printf(out, ", \"colour\": \"%s\"}, {\"name\": ", c0);
    strbuf_json_str(out, n1, strlen(n1));
    strbuf_printf(out, ", \"colour\": \"%s\"}]", c1);
}

/* The points of an h x w grid, row 0 at the bottom, labelled by index. */
static void s_grid_points(strbuf *out, int h, int w)
{
    strbuf_printf(out, "\"points\": [");
    for (int i = 0; i < h * w; i++)
        strbuf_printf(out, "%s[%d, %d, \"%d\"]", i ? ", " : "", i % w, h - 1 - i / w, i);
    strbuf_printf(out, "]");
}

void view_alquerque_board(strbuf *out, const char *background, const char *ink)
{
    enum { N = 5 };
    strbuf_printf(out, ",\n\"board\": {");
    s_grid_points(out, N, N);
    strbuf_printf(out, ",\n \"lines\": [");
    int n = 0;
    for (int sq = 0; sq < N * N; sq++) {
        int r = sq / N, c = sq % N;
        int to[4], k = 0;
        if (c + 1 < N)
            to[k++] = sq + 1;
        if (r + 1 < N)
            to[k++] = sq + N;
        if ((r + c) % 2 == 0 && r + 1 < N) {
            if (c + 1 < N)
                to[k++] = sq + N + 1;
            if (c > 0)
                to[k++] = sq + N - 1;
        }
        for (int j = 0; j < k; j++)
            strbuf_printf(out, "%s[%d, %d]", n++ ? ", " : "", sq, to[j]);
    }
    strbuf_printf(out, "],\n \"bottom\": 0, \"labels\": \"corner\", \"background\": \"%s\", "
                       "\"ink\": \"%s\"},\n", background, ink);
}

void view_hop_end(strbuf *out, const char men[2], const char *kings, const char *fields)
{
    strbuf_printf(out, "\"pieces\": {");
    for (int p = 0; p < 2; p++) {
        strbuf_printf(out, "%s\"%c\": {\"player\": %d, \"kind\": \"man\"}", p ? ", " : "",
                      men[p], p);
        if (kings)
            strbuf_printf(out, ", \"%c\": {\"player\": %d, \"kind\": \"king\"}", kings[p], p);
    }
    strbuf_printf(out, "},\n\"position\": {\"board\": \"chars\", \"empty\": \".\", "
                       "\"fields\": [%s]},\n"
                       "\"actions\": {\"separators\": \"-x\", \"capture\": \"x\"}}",
                  fields);
}

void view_describe(const game_def *g, strbuf *out)
{
    if (g->describe) {
        g->describe(out);
        return;
    }
    /* A grid of points, no lines; one char per point, each char a piece of
     * the first player when lower case, of the second when upper case. */
    view_open(out, g, "#222222", "#fafafa");
    strbuf_printf(out, ",\n\"board\": {");
    s_grid_points(out, g->height, g->width);
    strbuf_printf(out, ", \"lines\": [], \"bottom\": 0, \"labels\": \"corner\"},\n"
                       "\"pieces\": {");
    for (char c = 'a'; c <= 'z'; c++)
        strbuf_printf(out, "%s\"%c\": {\"player\": 0, \"kind\": \"man\"}, "
                           "\"%c\": {\"player\": 1, \"kind\": \"man\"}",
                      c == 'a' ? "" : ", ", c, c - 'a' + 'A');
    strbuf_printf(out, "},\n\"position\": {\"board\": \"chars\", \"empty\": \".\", "
                       "\"fields\": [\"side\"]},\n"
                       "\"actions\": {\"separators\": \"-x\", \"capture\": \"x\"}}");
}
