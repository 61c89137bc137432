/* scale: the built-in anchor scales (see scale.h). */
#include "play/scale.h"

#include <stdio.h>
#include <string.h>

__asm__(".pushsection .rodata\n"
        ".global scale_txt\n"
        ".type scale_txt, @object\n"
        "scale_txt:\n"
        ".incbin \"play/scales.txt\"\n"
        ".byte 0\n"
        ".popsection\n");
extern const char scale_txt[];

const char *scale_text(void) { return scale_txt; }

/* The next non-comment line of the built-in text at *p into line (cap
 * bytes); false at the end. Lines too long for line are skipped. */
static bool s_next_line(const char **p, char *line, size_t cap)
{
    while (**p) {
        const char *end = strchr(*p, '\n');
        size_t len = end ? (size_t)(end - *p) : strlen(*p);
        bool ok = len < cap && **p != '#';
        if (ok) {
            memcpy(line, *p, len);
            line[len] = 0;
        }
        *p += len + (end != NULL);
        if (ok)
            return true;
    }
    return false;
}

bool scale_find(const char *game, const char *player, scale_entry *out)
{
    if (!game || !player)
        return false;
    char line[256], g[64], pl[64];
    for (const char *p = scale_txt; s_next_line(&p, line, sizeof line);) {
        scale_entry e;
        if (sscanf(line, "%63s %63s %lf %lf %lf %ld", g, pl, &e.elo, &e.lo, &e.hi, &e.games) ==
                6 &&
            !strcmp(g, game) && !strcmp(pl, player)) {
            *out = e;
            return true;
        }
    }
    return false;
}

int scale_players(const char *game, char *out, size_t cap)
{
    int n = 0;
    size_t used = 0;
    if (cap)
        out[0] = 0;
    char line[256], g[64], pl[64];
    for (const char *p = scale_txt; game && s_next_line(&p, line, sizeof line);) {
        if (sscanf(line, "%63s %63s", g, pl) != 2 || strcmp(g, game))
            continue;
        int w = snprintf(out + used, cap > used ? cap - used : 0, "%s%s", n ? "," : "", pl);
        if (w < 0 || used + (size_t)w >= cap)
            break;
        used += (size_t)w;
        n++;
    }
    return n;
}
