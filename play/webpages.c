/* webpages: the files of web/ built in (see webpages.h). */
#include "play/webpages.h"

#include <string.h>

/* Each file between a start and an end symbol, a NUL after it. */
#define WEBPAGE_EMBED(sym, file)                                                         \
    __asm__(".pushsection .rodata\n"                                                     \
            ".global " #sym "\n"                                                         \
            ".type " #sym ", @object\n" #sym ":\n"                                       \
            ".incbin \"" file "\"\n"                                                     \
            ".global " #sym "_end\n" #sym "_end:\n"                                      \
            ".byte 0\n"                                                                  \
            ".popsection\n");                                                            \
    extern const char sym[], sym##_end[]

WEBPAGE_EMBED(webpages_viewer_html, "web/viewer.html");
WEBPAGE_EMBED(webpages_play_html, "web/play.html");
WEBPAGE_EMBED(webpages_board_js, "web/board.js");

bool webpages_find(const char *path, webpage *out)
{
    static const char *const html = "text/html; charset=utf-8";
    if (!strcmp(path, "/viewer"))
        *out = (webpage){"/viewer", html, webpages_viewer_html,
                         (size_t)(webpages_viewer_html_end - webpages_viewer_html)};
    else if (!strcmp(path, "/play"))
        *out = (webpage){"/play", html, webpages_play_html,
                         (size_t)(webpages_play_html_end - webpages_play_html)};
    else if (!strcmp(path, "/board.js"))
        *out = (webpage){"/board.js", "text/javascript; charset=utf-8", webpages_board_js,
                         (size_t)(webpages_board_js_end - webpages_board_js)};
    else
        return false;
    return true;
}
