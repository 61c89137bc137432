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

bool scale_find(const char *game, const char *player, scale_entry *out)
{
    if (!game || !player)
        return false;
    for (const char *p = scale_txt; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[256], g[64], pl[64];
        scale_entry e;
        if (len < sizeof line && *p != '#') {
            memcpy(line, p, len);
            line[len] = 0;
            if (sscanf(line, "%63s %63s %lf %lf %lf %ld", g, pl, &e.elo, &e.lo, &e.hi,
                       &e.games) == 6 &&
                !strcmp(g, game) && !strcmp(pl, player)) {
                *out = e;
                return true;
            }
        }
        p += len + (end != NULL);
    }
    return false;
}

int scale_players(const char *game, char *out, size_t cap)
{
    int n = 0;
    size_t used = 0;
    if (cap)
        out[0] = 0;
    for (const char *p = scale_txt; game && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[256], g[64], pl[64];
        if (len < sizeof line && *p != '#') {
            memcpy(line, p, len);
            line[len] = 0;
            if (sscanf(line, "%63s %63s", g, pl) == 2 && !strcmp(g, game)) {
                int w = snprintf(out + used, cap > used ? cap - used : 0, "%s%s", n ? "," : "",
                                 pl);
                if (w < 0 || used + (size_t)w >= cap)
                    break;
                used += (size_t)w;
                n++;
            }
        }
        p += len + (end != NULL);
    }
    return n;
}
