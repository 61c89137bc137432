/* filehead: the 32-byte header that starts both kinds of model file
 * (modelfile.h's networks, gbdt.h's trees), and its checks. Little-endian:
 * an 8-byte magic, the format version (u32), flags (u32), the payload's
 * length (u64) and its checksum (u64, util's hash_bytes of the payload),
 * then exactly that payload.
 *
 * Pure functions: thread-safe. */
#ifndef KZ_NN_FILEHEAD_H
#define KZ_NN_FILEHEAD_H

#include <stddef.h>
#include <stdint.h>

#define FILEHEAD_BYTES 32 /* bytes before the payload */

/* What a kind of file accepts. Static, borrowed. */
typedef struct filehead_kind {
    const char *magic;      /* the 8 bytes the file starts with */
    const char *not_this;   /* the message when it does not: "not a model file (no
                               KZMODEL magic)" */
    const char *format_of;  /* what the version is of: "model" gives "unknown model
                               format version 9" */
    uint32_t format_min;    /* the oldest format version read */
    uint32_t format_max;    /* the newest */
    uint32_t flags_known;   /* the header flags the kind knows (others are corrupt) */
} filehead_kind;

/* A header read by filehead_check. */
typedef struct filehead {
    uint32_t format;        /* the format version */
    uint32_t flags;         /* the header flags */
    const uint8_t *payload; /* the payload (inside the bytes checked) */
    size_t plen;            /* its bytes */
} filehead;

/* Checks the header of buf (len bytes) as kind's, in this order: the magic
 * (as far as len goes), the length of the header, the format version, the
 * flags, the payload's length (len must be the header and the payload,
 * exactly) and its checksum. 0 with *h filled; or KZ_ECORRUPT, or
 * KZ_EVERSION for an unknown version, with a one-line reason in err. */
int filehead_check(const uint8_t *buf, size_t len, const filehead_kind *kind, filehead *h,
                   char *err, size_t errlen);
/* Writes the header of a file whose plen-byte payload is already in place
 * at buf + FILEHEAD_BYTES. */
void filehead_put(uint8_t *buf, const filehead_kind *kind, uint32_t format, uint32_t flags,
                  size_t plen);

#endif
