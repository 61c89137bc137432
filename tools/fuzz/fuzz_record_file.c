/* fuzz_record_file: record files (data/record.h: record_file_open /
 * record_file_read) holding arbitrary bytes, as `kz records` and the tools
 * read files that may be truncated or corrupted.
 *
 * The first input byte picks the framing: odd, the harness writes a valid
 * 8-byte header before the rest (so that the fuzzer works on the length
 * prefixes and records); even, the rest is the whole file.
 *
 * Properties: no crash, hang or leak; reading stops at the clean end or at
 * the first error, which is one line naming the record, and sticks (the next
 * read returns the same error); every record read packs again. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "data/record.h"

static game_record *s_rec;

void fuzz_setup(void)
{
    s_rec = record_new();
    FUZZ_ASSERT(s_rec);
}

int fuzz_input(const uint8_t *data, size_t size)
{
    uint8_t mode;
    if (!fuzz_mode(&data, &size, &mode))
        return 0;
    uint8_t *file = malloc(size + 8);
    FUZZ_ASSERT(file);
    size_t len = 0;
    if (mode & 1) {
        const uint8_t hdr[8] = {'K', 'Z', 'R', 'E', 'C', 0, RECORD_FILE_VERSION, 0};
        memcpy(file, hdr, 8);
        len = 8;
    }
    if (size)
        memcpy(file + len, data, size);
    len += size;
    const char *path = fuzz_memfile(file, len);
    free(file);
    record_file *f = NULL;
    char err[256] = "";
    int rc = record_file_open(path, &f, err, sizeof err);
    if (rc) {
        FUZZ_ASSERT(f == NULL && fuzz_one_line(err));
        FUZZ_ASSERT(rc == KZ_ECORRUPT || rc == KZ_EVERSION);
        return 0;
    }
    long n = 0;
    for (;;) {
        err[0] = 0;
        rc = record_file_read(f, s_rec, err, sizeof err);
        if (rc)
            break;
        n++;
        FUZZ_ASSERT(n <= (long)len / 4);
        uint8_t *buf;
        size_t blen;
        FUZZ_ASSERT(record_pack(s_rec, &buf, &blen) == 0);
        free(buf);
    }
    FUZZ_ASSERT(record_file_count(f) == n);
    if (rc != KZ_ENOTFOUND) {
        FUZZ_ASSERT(fuzz_one_line(err) && strstr(err, "record "));
        char again[256] = "";
        FUZZ_ASSERT(record_file_read(f, s_rec, again, sizeof again) == rc);
        FUZZ_ASSERT(!strcmp(again, err));
    }
    FUZZ_ASSERT(record_file_close(&f) == 0 && f == NULL);
    return 0;
}
