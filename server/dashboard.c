/* dashboard: the page GET / serves (server/dashboard.html, built into the
 * binary as it is: the assembler's .incbin, so the page is one file to edit
 * and nothing to install; the Makefile makes this object depend on it). */
#include <stddef.h>

#include "server/features.h"

__asm__(".pushsection .rodata\n"
        ".global status_dashboard_html\n"
        ".type status_dashboard_html, @object\n"
        "status_dashboard_html:\n"
        ".incbin \"server/dashboard.html\"\n"
        "status_dashboard_end:\n"
        ".byte 0\n"
        ".global status_dashboard_len\n"
        ".type status_dashboard_len, @object\n"
        ".balign 8\n"
        "status_dashboard_len:\n"
        ".quad status_dashboard_end - status_dashboard_html\n"
        ".popsection\n");
