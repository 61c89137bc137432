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
WEBPAGE_EMBED(webpages_page_js, "web/page.js");
WEBPAGE_EMBED(webpages_page_css, "web/page.css");

#define HTML "text/html; charset=utf-8"
#define JS "text/javascript; charset=utf-8"
#define CSS "text/css; charset=utf-8"

/* Every file: its path, Content-Type and bytes. */
static const struct {
    const char *path;  /* as requested */
    const char *type;  /* its Content-Type */
    const char *start; /* its first byte */
    const char *end;   /* past its last byte (a NUL there) */
} s_files[] = {
    {"/viewer", HTML, webpages_viewer_html, webpages_viewer_html_end},
    {"/play", HTML, webpages_play_html, webpages_play_html_end},
    {"/board.js", JS, webpages_board_js, webpages_board_js_end},
    {"/page.js", JS, webpages_page_js, webpages_page_js_end},
    {"/page.css", CSS, webpages_page_css, webpages_page_css_end},
};

bool webpages_find(const char *path, webpage *out)
{
    for (size_t i = 0; i < sizeof s_files / sizeof s_files[0]; i++)
        if (!strcmp(path, s_files[i].path)) {
            *out = (webpage){s_files[i].path, s_files[i].type, s_files[i].start,
                             (size_t)(s_files[i].end - s_files[i].start)};
            return true;
        }
    return false;
}
