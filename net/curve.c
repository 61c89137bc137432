/* curve: CurveZMQ key files, the allow-list and socket options. See curve.h. */
#include "net/curve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/util.h"

#define KEY_CHARS 40         /* Z85 text of 32 bytes */
#define MAX_ENTRIES 100000   /* allow-list lines with a key, at most */
#define MAX_LINE 512         /* longest allow-list line */

bool curve_available(void)
{
    return zmq_has("curve") != 0;
}

bool curve_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= CURVE_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

bool curve_decode(const char *text, uint8_t raw[CURVE_KEY_BYTES])
{
    if (strlen(text) != KEY_CHARS)
        return false;
    uint8_t tmp[CURVE_KEY_BYTES];
    /* zmq_z85_decode checks every character against the alphabet. */
    if (!zmq_z85_decode(raw ? raw : tmp, text))
        return false;
    return true;
}

void curve_encode(const uint8_t raw[CURVE_KEY_BYTES], char out[CURVE_KEY_TEXT])
{
    zmq_z85_encode(out, raw, CURVE_KEY_BYTES);
}

/* Writes text to a new file (O_EXCL) with mode `mode`, synced. 0 or errno. */
static int s_write_new(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return errno;
    size_t len = strlen(text), off = 0;
    int rc = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = errno;
            break;
        }
        off += (size_t)w;
    }
    if (!rc && fsync(fd))
        rc = errno;
    if (close(fd) && !rc)
        rc = errno;
    if (rc)
        unlink(path);
    return rc;
}

int curve_keygen(const char *dir, const char *name, char public_key[CURVE_KEY_TEXT], char *err,
                 size_t errlen)
{
    if (!curve_available())
        return err_set(err, errlen, KZ_EINVAL, "this libzmq was built without CurveZMQ");
    if (!curve_name_ok(name))
        return err_set(err, errlen, KZ_EINVAL,
                       "'%.80s' is not a key name (1 to %d of A-Z a-z 0-9 . _ -)", name,
                       CURVE_NAME_MAX - 1);
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return err_set(err, errlen, ENOTDIR, "%.200s: not a directory", dir);
    char kpath[4096], ppath[4096];
    snprintf(kpath, sizeof kpath, "%s/%s.key", dir, name);
    snprintf(ppath, sizeof ppath, "%s/%s.pub", dir, name);
    if (!lstat(kpath, &sb) || !lstat(ppath, &sb))
        return err_set(err, errlen, EEXIST, "%.200s/%s.key or .pub exists: a key is never "
                       "overwritten (remove both files first)", dir, name);
    char pub[CURVE_KEY_TEXT], sec[CURVE_KEY_TEXT];
    if (zmq_curve_keypair(pub, sec))
        return err_set(err, errlen, zmq_errno(), "cannot make a key pair: %s",
                       zmq_strerror(zmq_errno()));
    char text[KEY_CHARS + 2];
    snprintf(text, sizeof text, "%s\n", sec);
    int rc = s_write_new(kpath, text, 0600);
    if (rc)
        return err_set(err, errlen, rc, "%.200s: %s", kpath, strerror(rc));
    snprintf(text, sizeof text, "%s\n", pub);
    rc = s_write_new(ppath, text, 0644);
    if (rc) {
        unlink(kpath);
        return err_set(err, errlen, rc, "%.200s: %s", ppath, strerror(rc));
    }
    memset(sec, 0, sizeof sec);
    memset(text, 0, sizeof text);
    if (public_key)
        memcpy(public_key, pub, CURVE_KEY_TEXT);
    return 0;
}

/* Reads a key file: at most a key, a newline and trailing blanks. The key
 * text goes to out. 0, errno, or KZ_EINVAL with err set. */
static int s_read_key_file(const char *path, bool secret, char out[CURVE_KEY_TEXT], char *err,
                           size_t errlen)
{
    char buf[KEY_CHARS + 64];
    size_t len;
    int rc = file_read_secret(path, secret ? 077 : 0, "a secret key", buf, sizeof buf, &len, err,
                              errlen);
    if (rc)
        return rc;
    if (len != KEY_CHARS || !curve_decode(buf, NULL)) {
        memset(buf, 0, sizeof buf);
        return err_set(err, errlen, KZ_EINVAL, "%.200s: not a %s key (40 characters of Z85 "
                       "text, as kz keygen writes)", path, secret ? "secret" : "public");
    }
    memcpy(out, buf, CURVE_KEY_TEXT);
    memset(buf, 0, sizeof buf);
    return 0;
}

int curve_read_secret(const char *path, curve_keypair *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = s_read_key_file(path, true, out->secret_key, err, errlen);
    if (rc)
        return rc;
    if (zmq_curve_public(out->public_key, out->secret_key)) {
        memset(out, 0, sizeof *out);
        return err_set(err, errlen, KZ_EINVAL, "%.200s: cannot derive its public key: %s", path,
                       zmq_strerror(zmq_errno()));
    }
    return 0;
}

int curve_read_public(const char *path, char out[CURVE_KEY_TEXT], char *err, size_t errlen)
{
    return s_read_key_file(path, false, out, err, errlen);
}

const char *curve_role_name(int role)
{
    switch (role) {
    case CURVE_WORKER: return "worker";
    case CURVE_TRAINER: return "trainer";
    case CURVE_OBSERVER: return "observer";
    default: return "?";
    }
}

int curve_role_parse(const char *s)
{
    for (int r = 0; r < CURVE_ROLES; r++)
        if (!strcmp(s, curve_role_name(r)))
            return r;
    return -1;
}

static int s_cmp_entry(const void *a, const void *b)
{
    return memcmp(((const curve_entry *)a)->raw, ((const curve_entry *)b)->raw, CURVE_KEY_BYTES);
}

static int s_cmp_name(const void *a, const void *b)
{
    return strcmp(((const curve_entry *)a)->name, ((const curve_entry *)b)->name);
}

/* Parses one line into e. 0 (an entry), 1 (nothing: blank or comment), or
 * KZ_EINVAL with the reason in why. */
static int s_parse_line(char *line, curve_entry *e, char *why, size_t whylen)
{
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == 0 || *p == '#')
        return 1;
    char *save = NULL, *f[4] = {0};
    int n = 0;
    for (char *w = strtok_r(p, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (n == 3)
            return err_set(why, whylen, KZ_EINVAL, "more than three fields (NAME ROLE KEY)");
        f[n++] = w;
    }
    if (n < 3)
        return err_set(why, whylen, KZ_EINVAL, "%d field%s, expected three: NAME ROLE KEY", n,
                       n == 1 ? "" : "s");
    char shown[80];
    if (!curve_name_ok(f[0]))
        return err_set(why, whylen, KZ_EINVAL, "'%s' is not a key name (1 to %d of A-Z a-z 0-9 "
                       ". _ -)", text_printable(shown, sizeof shown, f[0], 64),
                       CURVE_NAME_MAX - 1);
    int role = curve_role_parse(f[1]);
    if (role < 0)
        return err_set(why, whylen, KZ_EINVAL, "'%s' is not a role (worker, trainer, observer)",
                       text_printable(shown, sizeof shown, f[1], 64));
    if (!curve_decode(f[2], e->raw))
        return err_set(why, whylen, KZ_EINVAL, "'%s' is not a public key (40 characters of Z85 "
                       "text: the client's NAME.pub)", text_printable(shown, sizeof shown, f[2],
                                                                      64));
    snprintf(e->name, sizeof e->name, "%s", f[0]);
    e->role = role;
    memcpy(e->key, f[2], CURVE_KEY_TEXT);
    return 0;
}

int curve_allow_load(const char *path, curve_allow **out, char *err, size_t errlen)
{
    *out = NULL;
    int fd;
    int orc = file_open_read(path, &fd);
    if (orc)
        return err_set(err, errlen, orc, "%.200s: %s", path, err_str(orc));
    /* Whoever can write the list can admit any key: like a key file that
     * others can read, a list that every user can change is refused. */
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (sb.st_mode & 0002)) {
        close(fd);
        return err_set(err, errlen, EACCES, "%.200s: writable by every user (mode %04o): "
                       "chmod o-w it", path, (unsigned)(sb.st_mode & 07777));
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return err_set(err, errlen, errno, "%.200s: %s", path, strerror(errno));
    }
    curve_allow *a = xcalloc(1, sizeof *a);
    size_t cap = 0;
    char line[MAX_LINE + 2], why[200];
    int rc = 0;
    long lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = 0;
        else if (!feof(f)) {
            rc = err_set(err, errlen, KZ_EINVAL, "%.200s:%ld: a line longer than %d bytes", path,
                         lineno, MAX_LINE);
            goto out;
        }
        if (len && line[len - 1] == '\r')
            line[--len] = 0;
        if (a->n == cap) {
            if (cap == MAX_ENTRIES) {
                rc = err_set(err, errlen, KZ_EINVAL, "%.200s:%ld: more than %d keys", path,
                             lineno, MAX_ENTRIES);
                goto out;
            }
            cap = cap ? cap * 2 : 16;
            if (cap > MAX_ENTRIES)
                cap = MAX_ENTRIES;
            curve_entry *ne = realloc(a->e, cap * sizeof *a->e);
            if (!ne) {
                rc = err_set(err, errlen, KZ_ENOMEM, "%.200s: out of memory", path);
                goto out;
            }
            a->e = ne;
        }
        int r = s_parse_line(line, &a->e[a->n], why, sizeof why);
        if (r == 1)
            continue;
        if (r) {
            rc = err_set(err, errlen, r, "%.200s:%ld: %s", path, lineno, why);
            goto out;
        }
        a->n++;
    }
    if (ferror(f)) {
        rc = err_set(err, errlen, KZ_EIO, "%.200s: read error", path);
        goto out;
    }
    /* One name, one key: duplicates are errors (names first, in a copy). */
    if (a->n > 1) {
        curve_entry *byname = xmalloc(a->n * sizeof *byname);
        memcpy(byname, a->e, a->n * sizeof *byname);
        qsort(byname, a->n, sizeof *byname, s_cmp_name);
        for (size_t i = 1; i < a->n && !rc; i++)
            if (!strcmp(byname[i].name, byname[i - 1].name))
                rc = err_set(err, errlen, KZ_EINVAL, "%.200s: the name '%s' is listed twice",
                             path, byname[i].name);
        free(byname);
        if (rc)
            goto out;
        qsort(a->e, a->n, sizeof *a->e, s_cmp_entry);
        for (size_t i = 1; i < a->n; i++)
            if (!memcmp(a->e[i].raw, a->e[i - 1].raw, CURVE_KEY_BYTES)) {
                rc = err_set(err, errlen, KZ_EINVAL, "%.200s: one key is listed twice (as '%s' "
                             "and '%s'): one key, one identity", path, a->e[i - 1].name,
                             a->e[i].name);
                goto out;
            }
    }
out:
    fclose(f);
    if (rc) {
        curve_allow_destroy(&a);
        return rc;
    }
    *out = a;
    return 0;
}

void curve_allow_destroy(curve_allow **ap)
{
    if (!ap || !*ap)
        return;
    free((*ap)->e);
    free(*ap);
    *ap = NULL;
}

const curve_entry *curve_allow_find(const curve_allow *a, const uint8_t raw[CURVE_KEY_BYTES])
{
    if (!a || !a->n)
        return NULL;
    curve_entry probe;
    memcpy(probe.raw, raw, CURVE_KEY_BYTES);
    return bsearch(&probe, a->e, a->n, sizeof *a->e, s_cmp_entry);
}

int curve_setup_server(void *s, const curve_keypair *kp)
{
    int one = 1;
    if (zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof one) ||
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, kp->secret_key, KEY_CHARS))
        return zmq_errno();
    return 0;
}

int curve_setup_client(void *s, const char *server_public, const curve_keypair *kp)
{
    if (zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_public, KEY_CHARS) ||
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, kp->public_key, KEY_CHARS) ||
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, kp->secret_key, KEY_CHARS))
        return zmq_errno();
    return 0;
}

void *curve_monitor_open(void *zctx, void *s, const char *ep, int events)
{
    if (zmq_socket_monitor(s, ep, events))
        return NULL;
    void *m = zmq_socket(zctx, ZMQ_PAIR);
    int zero = 0;
    if (m)
        zmq_setsockopt(m, ZMQ_LINGER, &zero, sizeof zero);
    if (m && zmq_connect(m, ep)) {
        zmq_close(m);
        m = NULL;
    }
    if (!m)
        zmq_socket_monitor(s, NULL, 0);
    return m;
}

bool curve_monitor_event(void *mon, uint16_t *event, uint32_t *value)
{
    zmq_msg_t ev;
    zmq_msg_init(&ev);
    if (zmq_msg_recv(&ev, mon, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&ev);
        return false;
    }
    *event = 0;
    *value = 0;
    if (zmq_msg_size(&ev) >= 6) {
        memcpy(event, zmq_msg_data(&ev), 2);
        memcpy(value, (const uint8_t *)zmq_msg_data(&ev) + 2, 4);
    }
    bool more = zmq_msg_more(&ev);
    zmq_msg_close(&ev);
    while (more) {
        zmq_msg_t rest;
        zmq_msg_init(&rest);
        more = zmq_msg_recv(&rest, mon, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&rest);
        zmq_msg_close(&rest);
    }
    return true;
}
