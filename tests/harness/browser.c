/* browser: headless Chromium over the DevTools protocol on a pipe (see
 * browser.h). */
#include "tests/harness/browser.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/harness.h"
#include "common/util.h"

#define BROWSER_CALL_S 60.0 /* longest wait for the answer to one command */

struct browser {
    pid_t pid;             /* the browser (its own process group) */
    int to;                /* our end of its fd 3: commands */
    int from;              /* our end of its fd 4: answers and events */
    char *in;              /* (in_cap) bytes read, not yet split */
    size_t in_len, in_cap; /* used, allocated */
    int next_id;           /* id of the next command */
    char session[64];      /* the page's session id */
    char *errors;          /* script errors, one per line (owned) */
    size_t errors_len;     /* bytes */
    char last[512];        /* why the last call failed */
};

static void s_fail(browser *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_fail(browser *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->last, sizeof b->last, fmt, ap);
    va_end(ap);
}

const char *browser_path(void)
{
    static const char *const names[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (access(names[i], X_OK) == 0)
            return names[i];
    return NULL;
}

/* A JSON string's value at the start of p (after its opening quote is p[0]),
 * unescaped into a new string; NULL when it is not a string. */
static char *s_json_unquote(const char *p)
{
    if (!p || *p != '"')
        return NULL;
    size_t cap = strlen(p) + 1, n = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    for (p++; *p && *p != '"'; p++) {
        char c = *p;
        if (c == '\\' && p[1]) {
            c = *++p;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'r') c = '\r';
            else if (c == 'b') c = '\b';
            else if (c == 'f') c = '\f';
            else if (c == 'u' && p[1] && p[2] && p[3] && p[4]) {
                /* As UTF-8 (the basic plane; a surrogate half stays one '?'). */
                unsigned v = 0;
                sscanf(p + 1, "%4x", &v);
                p += 4;
                if (v >= 0x80 && v < 0x800) {
                    out[n++] = (char)(0xc0 | v >> 6);
                    c = (char)(0x80 | (v & 0x3f));
                } else if (v >= 0x800 && (v < 0xd800 || v > 0xdfff)) {
                    out[n++] = (char)(0xe0 | v >> 12);
                    out[n++] = (char)(0x80 | ((v >> 6) & 0x3f));
                    c = (char)(0x80 | (v & 0x3f));
                } else {
                    c = v < 0x80 ? (char)v : '?';
                }
            }
        }
        out[n++] = c;
    }
    out[n] = 0;
    return out;
}

/* The value after "key": in msg (first occurrence), or NULL. */
static const char *s_after_key(const char *msg, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(msg, pat);
    return p ? p + strlen(pat) : NULL;
}

/* Keeps what an event says about script errors. */
static void s_event(browser *b, const char *msg)
{
    const char *text = NULL;
    char *owned = NULL;
    if (strstr(msg, "\"method\":\"Runtime.exceptionThrown\"")) {
        owned = s_json_unquote(s_after_key(msg, "description"));
        if (!owned)
            owned = s_json_unquote(s_after_key(msg, "text"));
        text = owned ? owned : "an uncaught exception";
    } else if (strstr(msg, "\"method\":\"Runtime.consoleAPICalled\"") &&
               strstr(msg, "\"type\":\"error\"")) {
        owned = s_json_unquote(s_after_key(msg, "value"));
        text = owned ? owned : "console.error";
    } else if (strstr(msg, "\"method\":\"Log.entryAdded\"") &&
               strstr(msg, "\"level\":\"error\"")) {
        owned = s_json_unquote(s_after_key(msg, "text"));
        text = owned ? owned : "an error in the log";
    } else {
        return;
    }
    size_t n = strlen(text);
    char *e = realloc(b->errors, b->errors_len + n + 2);
    if (e) {
        b->errors = e;
        memcpy(b->errors + b->errors_len, text, n);
        b->errors_len += n;
        b->errors[b->errors_len++] = '\n';
        b->errors[b->errors_len] = 0;
    }
    free(owned);
}

/* Sends a command (params: a JSON object, or NULL for none) and returns its
 * answer (a new string: the whole message), or NULL after a failure. */
static char *s_call(browser *b, const char *method, const char *params, bool to_page)
{
    int id = ++b->next_id;
    size_t cap = strlen(method) + (params ? strlen(params) : 2) + 160;
    char *cmd = malloc(cap);
    if (!cmd)
        return NULL;
    int n = snprintf(cmd, cap, "{\"id\":%d,\"method\":\"%s\",\"params\":%s%s%s%s}", id, method,
                     params ? params : "{}", to_page ? ",\"sessionId\":\"" : "",
                     to_page ? b->session : "", to_page ? "\"" : "");
    size_t len = (size_t)n + 1; /* the NUL ends the message */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(b->to, cmd + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(cmd);
            s_fail(b, "%s: cannot write to the browser: %s", method, strerror(errno));
            return NULL;
        }
        off += (size_t)w;
    }
    free(cmd);
    double end = harness_now() + BROWSER_CALL_S;
    for (;;) {
        /* Step 1. Every whole message in the buffer: the answer, or an event. */
        char *nul;
        while (b->in_len && (nul = memchr(b->in, 0, b->in_len)) != NULL) {
            size_t mlen = (size_t)(nul - b->in);
            char *msg = malloc(mlen + 1);
            if (!msg)
                return NULL;
            memcpy(msg, b->in, mlen + 1);
            memmove(b->in, nul + 1, b->in_len - mlen - 1);
            b->in_len -= mlen + 1;
            double got;
            if (!strncmp(msg, "{\"id\":", 6) && json_number(msg, "id", &got) && (int)got == id) {
                if (strstr(msg, "\"error\":{") == msg + strcspn(msg, ",") + 1) {
                    s_fail(b, "%s: %.400s", method, msg);
                    free(msg);
                    return NULL;
                }
                return msg;
            }
            s_event(b, msg);
            free(msg);
        }
        /* Step 2. More bytes. */
        double left = end - harness_now();
        if (left <= 0) {
            s_fail(b, "%s: no answer from the browser within %.0f s", method, BROWSER_CALL_S);
            return NULL;
        }
        struct pollfd pfd = {.fd = b->from, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        if (b->in_cap - b->in_len < 65536) {
            size_t ncap = b->in_cap ? b->in_cap * 2 : 1 << 20;
            char *in = realloc(b->in, ncap);
            if (!in)
                return NULL;
            b->in = in;
            b->in_cap = ncap;
        }
        ssize_t r = read(b->from, b->in + b->in_len, b->in_cap - b->in_len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            s_fail(b, "%s: the browser closed its pipe (it died?)", method);
            return NULL;
        }
        b->in_len += (size_t)r;
    }
}

browser *browser_start(const char *dir, int width, int height, char *why, size_t len)
{
    const char *path = browser_path();
    if (!path) {
        snprintf(why, len, "no Chromium (apt-get install chromium)");
        return NULL;
    }
    int to[2], from[2];
    if (pipe(to) || pipe(from)) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return NULL;
    }
    char profile[600], size[64], log[600];
    snprintf(profile, sizeof profile, "--user-data-dir=%s/chromium-profile", dir);
    snprintf(size, sizeof size, "--window-size=%d,%d", width, height);
    snprintf(log, sizeof log, "%s/chromium.log", dir);
    char *const argv[] = {(char *)path, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-quic", "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                          "--mute-audio", profile, size, "--remote-debugging-pipe",
                          "about:blank", NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "fork: %s", strerror(errno));
        return NULL;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int devnull = open("/dev/null", O_RDONLY);
        /* fds 3 and 4 are the protocol's: its commands in, its answers out. */
        int in3 = dup(to[0]), out4 = dup(from[1]);
        if (fd < 0 || devnull < 0 || in3 < 0 || out4 < 0)
            _exit(126);
        dup2(devnull, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        dup2(in3, 3);
        dup2(out4, 4);
        for (int k = 5; k < 1024; k++)
            close(k);
        signal(SIGPIPE, SIG_DFL);
        execv(path, argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    browser *b = calloc(1, sizeof *b);
    b->pid = pid;
    b->to = to[1];
    b->from = from[0];
    fcntl(b->to, F_SETFD, FD_CLOEXEC);
    fcntl(b->from, F_SETFD, FD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN); /* a dead browser is an error return, not a signal */
    /* The page target, and a session on it. */
    char *msg = s_call(b, "Target.getTargets", NULL, false);
    const char *page = msg ? strstr(msg, "\"type\":\"page\"") : NULL;
    const char *tid = NULL;
    if (page) { /* the targetId of the object that holds "type":"page" */
        const char *start = page;
        while (start > msg && *start != '{')
            start--;
        tid = strstr(start, "\"targetId\":\"");
    }
    char target[128] = "";
    if (tid)
        sscanf(tid + 12, "%127[^\"]", target);
    free(msg);
    if (!target[0]) {
        snprintf(why, len, "no page in the browser: %s", b->last);
        browser_stop(&b);
        return NULL;
    }
    char params[256];
    snprintf(params, sizeof params, "{\"targetId\":\"%s\",\"flatten\":true}", target);
    msg = s_call(b, "Target.attachToTarget", params, false);
    const char *sid = msg ? strstr(msg, "\"sessionId\":\"") : NULL;
    if (sid)
        sscanf(sid + 13, "%63[^\"]", b->session);
    free(msg);
    if (!b->session[0]) {
        snprintf(why, len, "cannot attach to the page: %s", b->last);
        browser_stop(&b);
        return NULL;
    }
    static const char *const enable[] = {"Runtime.enable", "Page.enable", "Log.enable"};
    for (size_t i = 0; i < 3; i++) {
        msg = s_call(b, enable[i], NULL, true);
        if (!msg) {
            snprintf(why, len, "%s", b->last);
            browser_stop(&b);
            return NULL;
        }
        free(msg);
    }
    return b;
}

void browser_stop(browser **pb)
{
    if (!pb || !*pb)
        return;
    browser *b = *pb;
    if (b->session[0] || b->next_id) {
        /* Browser.close: its answer may not come before the pipe closes. */
        static const char cmd[] = "{\"id\":999999,\"method\":\"Browser.close\",\"params\":{}}";
        if (write(b->to, cmd, sizeof cmd) < 0) { /* gone already */
        }
    }
    close(b->to);
    int status;
    double end = harness_now() + 5;
    while (waitpid(b->pid, &status, WNOHANG) == 0) {
        if (harness_now() > end) {
            kill(-b->pid, SIGKILL);
            waitpid(b->pid, &status, 0);
            break;
        }
        harness_sleep_ms(20);
    }
    kill(-b->pid, SIGKILL); /* helpers left in its group */
    close(b->from);
    free(b->in);
    free(b->errors);
    free(b);
    *pb = NULL;
}

/* s as a JSON string literal (new string). */
static char *s_json_quote(const char *s)
{
    size_t cap = 2 * strlen(s) * 3 + 3, n = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[n++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n++] = '"';
    out[n] = 0;
    return out;
}

char *browser_eval(browser *b, const char *expr)
{
    /* JSON.stringify in the page: every value comes back as one string. */
    size_t wl = strlen(expr) + 128;
    char *wrapped = malloc(wl);
    snprintf(wrapped, wl, "Promise.resolve((%s)).then(function (v) { return JSON.stringify(v); })",
             expr);
    char *q = s_json_quote(wrapped);
    free(wrapped);
    size_t pl = strlen(q) + 80;
    char *params = malloc(pl);
    snprintf(params, pl, "{\"expression\":%s,\"returnByValue\":true,\"awaitPromise\":true}", q);
    free(q);
    char *msg = s_call(b, "Runtime.evaluate", params, true);
    free(params);
    if (!msg)
        return NULL;
    if (strstr(msg, "\"exceptionDetails\":")) {
        char *d = s_json_unquote(s_after_key(msg, "description"));
        s_fail(b, "exception: %.400s", d ? d : msg);
        free(d);
        free(msg);
        return NULL;
    }
    const char *v = s_after_key(msg, "value");
    char *out = v && *v == '"' ? s_json_unquote(v) : strdup("undefined");
    free(msg);
    return out;
}

bool browser_wait(browser *b, const char *expr, double timeout_s)
{
    size_t wl = strlen(expr) + 32;
    char *wrapped = malloc(wl);
    snprintf(wrapped, wl, "!!(%s)", expr);
    double end = harness_now() + timeout_s;
    bool ok = false;
    for (;;) {
        char *v = browser_eval(b, wrapped);
        ok = v && !strcmp(v, "true");
        bool dead = !v && strstr(b->last, "browser") != NULL;
        free(v);
        if (ok || dead || harness_now() > end)
            break;
        harness_sleep_ms(50);
    }
    free(wrapped);
    if (!ok && !strstr(b->last, "browser"))
        s_fail(b, "waited %.0f s for: %.300s", timeout_s, expr);
    return ok;
}

int browser_set_mobile(browser *b, int width, int height)
{
    char params[160];
    snprintf(params, sizeof params,
             "{\"width\":%d,\"height\":%d,\"deviceScaleFactor\":1,\"mobile\":true}", width,
             height);
    char *msg = s_call(b, "Emulation.setDeviceMetricsOverride", params, true);
    if (!msg)
        return -1;
    free(msg);
    return 0;
}

int browser_open(browser *b, const char *url, double timeout_s)
{
    char *q = s_json_quote(url);
    size_t pl = strlen(q) + 16;
    char *params = malloc(pl);
    snprintf(params, pl, "{\"url\":%s}", q);
    char *msg = s_call(b, "Page.navigate", params, true);
    free(params);
    if (!msg) {
        free(q);
        return -1;
    }
    free(msg);
    char expr[1200];
    snprintf(expr, sizeof expr, "document.readyState === 'complete' && location.href === %s", q);
    free(q);
    return browser_wait(b, expr, timeout_s) ? 0 : -1;
}

int browser_click(browser *b, const char *selector)
{
    char *q = s_json_quote(selector);
    size_t el = strlen(q) + 300;
    char *expr = malloc(el);
    snprintf(expr, el,
             "(function () { var e = document.querySelector(%s); if (!e) return null;"
             " if (e.scrollIntoView) e.scrollIntoView({block: 'center'});"
             " var r = e.getBoundingClientRect();"
             " return [r.left + r.width / 2, r.top + r.height / 2]; })()", q);
    free(q);
    char *v = browser_eval(b, expr);
    free(expr);
    double x, y;
    if (!v || sscanf(v, "[%lf,%lf]", &x, &y) != 2) {
        if (v)
            s_fail(b, "no element %.200s on the page", selector);
        free(v);
        return -1;
    }
    free(v);
    static const char *const kinds[] = {"mouseMoved", "mousePressed", "mouseReleased"};
    for (int i = 0; i < 3; i++) {
        char params[256];
        snprintf(params, sizeof params,
                 "{\"type\":\"%s\",\"x\":%.1f,\"y\":%.1f,\"button\":\"%s\",\"clickCount\":%d}",
                 kinds[i], x, y, i ? "left" : "none", i ? 1 : 0);
        char *msg = s_call(b, "Input.dispatchMouseEvent", params, true);
        if (!msg)
            return -1;
        free(msg);
    }
    return 0;
}

/* Base64 (RFC 4648) into out (at least strlen(in) * 3 / 4 bytes); the bytes. */
static size_t s_base64(const char *in, unsigned char *out)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (; *in; in++) {
        int v;
        char c = *in;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '+') v = 62;
        else if (c == '/') v = 63;
        else continue; /* padding, line breaks */
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return n;
}

int browser_screenshot(browser *b, const char *path)
{
    char *msg = s_call(b, "Page.captureScreenshot", "{\"format\":\"png\"}", true);
    if (!msg)
        return -1;
    char *data = s_json_unquote(s_after_key(msg, "data"));
    free(msg);
    if (!data) {
        s_fail(b, "no screenshot data");
        return -1;
    }
    unsigned char *png = malloc(strlen(data) + 1);
    size_t n = s_base64(data, png);
    free(data);
    int rc = file_write_atomic(path, png, n);
    free(png);
    if (rc)
        s_fail(b, "cannot write %s: %s", path, strerror(rc > 0 ? rc : EIO));
    return rc ? -1 : 0;
}

const char *browser_errors(const browser *b) { return b->errors ? b->errors : ""; }
const char *browser_last_error(const browser *b) { return b->last; }
