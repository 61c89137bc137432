/* curve: CurveZMQ keys for the cluster (docs/security.md). Key files (what
 * `kz keygen` writes), the coordinator's allow-list of clients' public keys
 * with a role each, and the socket options that make a ZeroMQ socket a
 * CurveZMQ server or client.
 *
 * Key files: NAME.key holds a secret key, NAME.pub its public key, each as
 * its 40 characters of Z85 text and a newline, nothing else (Z85 uses '#',
 * so a key file has no comments). A secret key file must not be readable by
 * group or others (as ssh's): curve_read_secret refuses it otherwise.
 *
 * The allow-list (the coordinator's `allow_keys` file): one client a line,
 *   NAME ROLE PUBLICKEY
 * NAME 1..63 of [A-Za-z0-9._-], ROLE worker, trainer or observer, PUBLICKEY
 * the 40 Z85 characters of the client's NAME.pub; blank lines and lines
 * starting with '#' are ignored. A name or a key listed twice is an error
 * (one key, one identity). The client's id is its key's name (coordinator.c).
 *
 * Errors: 0, errno values, KZ_EINVAL (a malformed key or line), KZ_EIO,
 * each with one line in err naming the file (and line). Threads: the
 * functions are pure over their arguments; an allow-list is read-only once
 * loaded (share it freely, destroy it once). */
#ifndef KZ_CURVE_H
#define KZ_CURVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CURVE_KEY_TEXT 41  /* a Z85 key: 40 characters and the NUL */
#define CURVE_KEY_BYTES 32 /* a key in binary */
#define CURVE_NAME_MAX 64  /* a key's name, the NUL included */

/* True when libzmq was built with CurveZMQ (zmq_has("curve")). */
bool curve_available(void);

/* True when name is 1..63 of [A-Za-z0-9._-] and not "." or "..". */
bool curve_name_ok(const char *name);

/* Makes a new key pair and writes dir/NAME.key (mode 0600) and dir/NAME.pub
 * (0644). Refuses (EEXIST) when either file exists: a key is never
 * overwritten. dir must exist. On success *public_key (optional) receives
 * the public key. 0 or an error with one line in err. */
int curve_keygen(const char *dir, const char *name, char public_key[CURVE_KEY_TEXT], char *err,
                 size_t errlen);

/* A program's own key pair (Z85 text). */
typedef struct curve_keypair {
    char public_key[CURVE_KEY_TEXT]; /* derived from the secret key */
    char secret_key[CURVE_KEY_TEXT]; /* from the .key file */
} curve_keypair;

/* Reads a secret key file (and derives its public key). Refuses a file that
 * group or others may read (EACCES), one larger than a key or whose text is
 * not a Z85 key (KZ_EINVAL). */
int curve_read_secret(const char *path, curve_keypair *out, char *err, size_t errlen);
/* Reads a public key file into out (Z85 text). KZ_EINVAL when it holds no key. */
int curve_read_public(const char *path, char out[CURVE_KEY_TEXT], char *err, size_t errlen);
/* True when text is exactly a 40-character Z85 key; with raw non-NULL the
 * 32 bytes are written there. */
bool curve_decode(const char *text, uint8_t raw[CURVE_KEY_BYTES]);
/* The Z85 text of a binary key. */
void curve_encode(const uint8_t raw[CURVE_KEY_BYTES], char out[CURVE_KEY_TEXT]);

/* What a client key may do (the coordinator's check, coordinator.c). */
enum curve_role {
    CURVE_WORKER = 0,   /* self-play and arena jobs, game submissions */
    CURVE_TRAINER = 1,  /* training batches, candidates, trainer statistics */
    CURVE_OBSERVER = 2, /* reads only: models, batches */
    CURVE_ROLES = 3     /* number of roles */
};
/* "worker", "trainer", "observer" ("?" otherwise). */
const char *curve_role_name(int role);
/* The role named s, or -1. */
int curve_role_parse(const char *s);

/* One allowed client key. */
typedef struct curve_entry {
    char name[CURVE_NAME_MAX];       /* its name: the client's id */
    int role;                        /* enum curve_role */
    char key[CURVE_KEY_TEXT];        /* public key, Z85 */
    uint8_t raw[CURVE_KEY_BYTES];    /* the same in binary (the order of the list) */
} curve_entry;

typedef struct curve_allow {
    curve_entry *e;   /* (n) sorted by raw key */
    size_t n;         /* entries */
} curve_allow;

/* Parses an allow-list file. 0 and *out (caller owns: curve_allow_destroy),
 * or an error with "FILE:LINE: what" in err (nothing allocated). At most
 * 100000 entries. An empty list is valid (it admits nobody). */
int curve_allow_load(const char *path, curve_allow **out, char *err, size_t errlen);
/* NULL-safe; sets *a to NULL. */
void curve_allow_destroy(curve_allow **a);
/* The entry of a binary public key, or NULL. Borrowed from a. */
const curve_entry *curve_allow_find(const curve_allow *a, const uint8_t raw[CURVE_KEY_BYTES]);

/* Makes socket s a CurveZMQ server with kp (before its bind). 0 or zmq errno. */
int curve_setup_server(void *s, const curve_keypair *kp);
/* Starts a monitor of socket s for the events (ZMQ_EVENT_* bits) on the
 * inproc endpoint ep (unique in zctx) and returns the PAIR socket of zctx
 * connected to it, which curve_monitor_event reads (the caller closes it
 * after zmq_socket_monitor(s, NULL, 0)). NULL when it cannot be made: then s
 * has no monitor (only what it would have told is lost). */
void *curve_monitor_open(void *zctx, void *s, const char *ep, int events);
/* Reads one event from a ZeroMQ socket monitor (zmq_socket_monitor's PAIR
 * socket `mon`) without waiting: its event and value frames, the endpoint
 * frame that follows dropped. true with *event and *value (0 and 0 for a
 * short frame), false when none is waiting. */
bool curve_monitor_event(void *mon, uint16_t *event, uint32_t *value);
/* Makes socket s a CurveZMQ client of the server whose public key is
 * server_public, with its own kp (before its connect). 0 or zmq errno. */
int curve_setup_client(void *s, const char *server_public, const curve_keypair *kp);

#endif
