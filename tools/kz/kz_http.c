/* kz_http: a small HTTP/1.0 GET client for kz's subcommands (binary-safe,
 * bounded in size and time): what `kz model fetch` downloads with. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tools/kz/kz.h"
#include "common/util.h"

#define HTTP_MAX_SECONDS 60.0       /* longest a whole answer may take */

int kz_url_split(const char *url, char *host, size_t hostlen, int *port, char *path,
                 size_t pathlen, char *err, size_t errlen)
{
    const char *p = url;
    if (!strncmp(p, "http://", 7))
        p += 7;
    else if (strstr(p, "://"))
        return err_set(err, errlen, KZ_EINVAL, "only http:// URLs: '%s'", url);
    size_t hl = strcspn(p, ":/");
    if (hl == 0 || hl >= hostlen)
        return err_set(err, errlen, KZ_EINVAL, "no host in '%s'", url);
    memcpy(host, p, hl);
    host[hl] = 0;
    p += hl;
    *port = 80;
    if (*p == ':') {
        long v;
        char num[16];
        size_t nl = strcspn(p + 1, "/");
        snprintf(num, sizeof num, "%.*s", (int)(nl < 15 ? nl : 15), p + 1);
        if (nl > 15 || parse_long(num, 1, 65535, &v))
            return err_set(err, errlen, KZ_EINVAL, "bad port in '%s'", url);
        *port = (int)v;
        p += 1 + nl;
    }
    if (strlen(p) >= pathlen)
        return err_set(err, errlen, KZ_EINVAL, "URL too long: '%s'", url);
    for (const char *q = p; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == 0x7f)
            return err_set(err, errlen, KZ_EINVAL, "a space or control character in the URL");
    snprintf(path, pathlen, "%s", *p ? p : "/");
    return 0;
}

/* The token of KZ_STATUS_TOKEN_FILE into out ("" without one). 0 or an error. */
static int s_token(char *out, size_t cap, char *err, size_t errlen)
{
    out[0] = 0;
    const char *path = getenv("KZ_STATUS_TOKEN_FILE");
    if (!path || !*path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(err, errlen, KZ_EINVAL, "KZ_STATUS_TOKEN_FILE=%.200s: %s", path,
                       strerror(errno));
    size_t n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = 0;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = 0;
    for (size_t i = 0; i < n; i++)
        if (out[i] <= ' ' || out[i] == 0x7f)
            return err_set(err, errlen, KZ_EINVAL, "KZ_STATUS_TOKEN_FILE=%.200s: not a token "
                           "(one line without spaces)", path);
    return 0;
}

int kz_http_get(const char *url, size_t max_bytes, uint8_t **body, size_t *len, int *code,
                char *err, size_t errlen)
{
    *body = NULL;
    *len = 0;
    *code = 0;
    char token[512], auth[600] = "";
    int trc = s_token(token, sizeof token, err, errlen);
    if (trc)
        return trc;
    if (token[0])
        snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", token);
    char host[256], path[1024];
    int port;
    int rc = kz_url_split(url, host, sizeof host, &port, path, sizeof path, err, errlen);
    if (rc)
        return rc;
    struct addrinfo hints = {0}, *ai;
    hints.ai_socktype = SOCK_STREAM;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%d", port);
    rc = getaddrinfo(host, portstr, &hints, &ai);
    if (rc)
        return err_set(err, errlen, KZ_EIO, "%s: %s", host, gai_strerror(rc));
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    struct timeval tv = {10, 0};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return err_set(err, errlen, KZ_EIO, "cannot connect to %s:%d: %s", host, port,
                       strerror(e));
    }
    freeaddrinfo(ai);
    char req[2100];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.0\r\nHost: %s\r\n%sConnection: close\r\n\r\n", path, host,
                     auth);
    memset(token, 0, sizeof token);
    memset(auth, 0, sizeof auth);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return err_set(err, errlen, KZ_EIO, "cannot send to %s:%d", host, port);
    }
    /* A server that never stops (or dribbles) must not keep us. */
    size_t cap = 65536, got = 0;
    uint8_t *buf = xmalloc(cap);
    double deadline = time_now() + HTTP_MAX_SECONDS;
    for (;;) {
        if (got + 4096 > cap) {
            cap *= 2;
            uint8_t *nb = realloc(buf, cap);
            KZ_CHECK(nb != NULL);
            buf = nb;
        }
        ssize_t r = read(fd, buf + got, cap - got - 1);
        const char *why = NULL;
        char too_big[64];
        if (r < 0) {
            why = errno == EAGAIN || errno == EWOULDBLOCK ? "silent for 10 s" : strerror(errno);
        } else if (r > 0 && got + (size_t)r > max_bytes) {
            snprintf(too_big, sizeof too_big, "the answer exceeds %zu MiB", max_bytes >> 20);
            why = too_big;
        } else if (r > 0 && time_now() > deadline) {
            why = "no complete answer within 60 s";
        }
        if (why) {
            free(buf);
            close(fd);
            return err_set(err, errlen, KZ_EIO, "reading from %s:%d: %s", host, port, why);
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0;
    uint8_t *end = memmem(buf, got, "\r\n\r\n", 4);
    if (sscanf((char *)buf, "HTTP/%*s %d", code) != 1 || !end) {
        free(buf);
        return err_set(err, errlen, KZ_EIO, "%s:%d did not answer HTTP", host, port);
    }
    if (*code == 401) {
        free(buf);
        return err_set(err, errlen, KZ_EREJECTED, "%s:%d wants a token (its status_token_file): "
                       "%s", host, port, getenv("KZ_STATUS_TOKEN_FILE")
                                             ? "KZ_STATUS_TOKEN_FILE holds another one"
                                             : "set KZ_STATUS_TOKEN_FILE to a copy of it");
    }
    size_t off = (size_t)(end + 4 - buf);
    memmove(buf, buf + off, got - off + 1);
    *body = buf;
    *len = got - off;
    return 0;
}
