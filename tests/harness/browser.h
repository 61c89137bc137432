/* browser: the tests' driver of a real browser. Debian's Chromium runs
 * headless (fresh profile, no network beyond loopback: --disable-quic,
 * --no-first-run, --disable-background-networking, --disable-component-update,
 * --disable-sync) and is driven over the DevTools protocol on a pipe
 * (--remote-debugging-pipe: JSON messages separated by NUL bytes on file
 * descriptors 3 and 4), so a test can open a page, evaluate JavaScript in it,
 * click with the mouse at an element's place (real input events, as a person
 * would), and take a screenshot. Script errors (uncaught exceptions, console
 * errors, failed loads) are collected for browser_errors.
 *
 * Every call has a deadline; a browser that dies or stops answering makes the
 * call fail (NULL / false / nonzero), never hang. The browser dies with the
 * test process (PR_SET_PDEATHSIG). Threads: one thread per browser. */
#ifndef KZ_TESTS_BROWSER_H
#define KZ_TESTS_BROWSER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct browser browser;

/* The Chromium binary, NULL when none is installed (tests then skip with a
 * message: apt-get install chromium). */
const char *browser_path(void);

/* Starts the browser with its profile and log under dir (which must exist),
 * a window of width x height, and attaches to its page. NULL with a reason
 * in why. Caller owns the result: browser_stop. */
browser *browser_start(const char *dir, int width, int height, char *why, size_t len);
/* Closes the browser (Browser.close, then a kill after 5 s); NULL-safe. */
void browser_stop(browser **b);

/* Emulates a phone's screen of width x height CSS pixels (narrower than a
 * desktop window can be; the page's viewport meta is honoured): for the
 * pages loaded after it. 0 or -1. */
int browser_set_mobile(browser *b, int width, int height);
/* Loads url and waits (timeout_s) until the document is complete. 0 or -1
 * (the reason in browser_last_error). */
int browser_open(browser *b, const char *url, double timeout_s);
/* Evaluates the JavaScript expression (a promise is awaited) and returns
 * JSON.stringify of its value as a new string (caller frees); NULL on an
 * exception or a dead browser (browser_last_error says why). */
char *browser_eval(browser *b, const char *expr);
/* Evaluates expr every 50 ms until it is truthy; false after timeout_s. */
bool browser_wait(browser *b, const char *expr, double timeout_s);
/* Moves the mouse to the middle of the first element matching the CSS
 * selector (scrolled into view) and clicks the left button there. 0, or -1
 * when there is no such element or the browser does not answer. */
int browser_click(browser *b, const char *selector);
/* Writes a PNG screenshot of the viewport to path. 0 or -1. */
int browser_screenshot(browser *b, const char *path);

/* Script errors seen since the start, one per line ("" when none). Borrowed. */
const char *browser_errors(const browser *b);
/* Why the last call failed. Borrowed. */
const char *browser_last_error(const browser *b);

#endif
