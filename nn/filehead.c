/* filehead: the model files' header. See filehead.h. */
#include "nn/filehead.h"

#include <string.h>

#include "common/util.h"

int filehead_check(const uint8_t *buf, size_t len, const filehead_kind *kind, filehead *h,
                   char *err, size_t errlen)
{
    size_t head = len < 8 ? len : 8;
    if (head && memcmp(buf, kind->magic, head) != 0)
        return err_set(err, errlen, KZ_ECORRUPT, "%s", kind->not_this);
    if (len < FILEHEAD_BYTES)
        return err_set(err, errlen, KZ_ECORRUPT,
                       "truncated: %zu bytes, shorter than the %d-byte header", len,
                       FILEHEAD_BYTES);
    uint32_t format = le_get32(buf + 8), flags = le_get32(buf + 12);
    uint64_t n = le_get64(buf + 16), sum = le_get64(buf + 24);
    if (format < kind->format_min || format > kind->format_max) {
        if (kind->format_min == kind->format_max)
            return err_set(err, errlen, KZ_EVERSION,
                           "unknown %s format version %u (this build reads version %u)",
                           kind->format_of, format, kind->format_max);
        return err_set(err, errlen, KZ_EVERSION,
                       "unknown %s format version %u (this build reads versions %u to %u)",
                       kind->format_of, format, kind->format_min, kind->format_max);
    }
    if (flags & ~kind->flags_known)
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: unknown header flags 0x%x", flags);
    size_t have = len - FILEHEAD_BYTES;
    if (n > have)
        return err_set(err, errlen, KZ_ECORRUPT,
                       "truncated: the header announces %llu payload bytes, %zu are present",
                       (unsigned long long)n, have);
    if (n < have)
        return err_set(err, errlen, KZ_ECORRUPT, "corrupt: %zu unexpected bytes after the payload",
                       have - (size_t)n);
    uint64_t got = hash_bytes(buf + FILEHEAD_BYTES, (size_t)n, 0);
    if (got != sum)
        return err_set(err, errlen, KZ_ECORRUPT,
                       "corrupt: payload checksum mismatch (header %016llx, data %016llx)",
                       (unsigned long long)sum, (unsigned long long)got);
    *h = (filehead){format, flags, buf + FILEHEAD_BYTES, (size_t)n};
    return 0;
}

void filehead_put(uint8_t *buf, const filehead_kind *kind, uint32_t format, uint32_t flags,
                  size_t plen)
{
    memcpy(buf, kind->magic, 8);
    le_put32(buf + 8, format);
    le_put32(buf + 12, flags);
    le_put64(buf + 16, plen);
    le_put64(buf + 24, hash_bytes(buf + FILEHEAD_BYTES, plen, 0));
}
