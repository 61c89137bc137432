/* webpages: the pages people open in a browser, built into the programs that
 * serve them (kz-coordinator and `kz serve`): web/viewer.html (GET /viewer,
 * the game viewer), web/play.html (GET /play, a game against the engine),
 * web/board.js (GET /board.js, the board both draw), and what every page
 * shares, the coordinator's dashboard too (server/dashboard.html):
 * web/page.css (GET /page.css, the look) and web/page.js (GET /page.js, the
 * DOM helpers; loaded before board.js, which uses them). The files are embedded
 * as they are with the assembler's .incbin: one file to edit per page, no
 * build step, nothing to install; the Makefile makes webpages.o depend on
 * them. Their JSON comes from engine.h's API and the servers' /games.
 *
 * Threads: read-only data, any thread. */
#ifndef KZ_WEBPAGES_H
#define KZ_WEBPAGES_H

#include <stdbool.h>
#include <stddef.h>

/* A built-in file. */
typedef struct webpage {
    const char *path; /* as requested, e.g. "/play" */
    const char *type; /* its Content-Type */
    const char *body; /* (len) the bytes, NUL-terminated after them */
    size_t len;       /* bytes */
} webpage;

/* The file served at path (the path without its query): true and *out, or
 * false when there is none. */
bool webpages_find(const char *path, webpage *out);

#endif
