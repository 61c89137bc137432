/* fuzz: helpers shared by the libFuzzer harnesses in tools/fuzz/ (built by
 * `make fuzz` with clang -fsanitize=fuzzer,address,undefined; see
 * docs/fuzzing.md). Every harness is its own program: fuzz_<target>.c linked
 * with driver.c, which holds libFuzzer's entry points. A harness defines
 * fuzz_input (one input's checks) and, when it has any setup, fuzz_setup.
 *
 * fuzz_memfile gives harnesses of path-taking readers (record files, config
 * files) a file without touching the disk: one memfd per process, rewritten
 * for each input, named by its /proc/self/fd path. FUZZ_ASSERT is a property
 * check that aborts (libFuzzer then saves the input as a crash). */
#ifndef KZ_FUZZ_H
#define KZ_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"

/* A harness's setup, once before the first input, after the logs are quieted
 * (fuzz_quiet). Optional: driver.c's does nothing. */
void fuzz_setup(void);
/* A harness's checks of one input (libFuzzer's LLVMFuzzerTestOneInput).
 * Returns 0. */
int fuzz_input(const uint8_t *data, size_t size);

/* Aborts with the failed property when cond is false. */
#define FUZZ_ASSERT(cond)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz property failed: %s (%s:%d)\n", #cond, __FILE__,   \
                    __LINE__);                                                       \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* A per-process in-memory file holding exactly data[0, len); returns its path
 * (static storage). Aborts when memfds are unavailable. */
static inline const char *fuzz_memfile(const uint8_t *data, size_t len)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("kz-fuzz", 0);
        FUZZ_ASSERT(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    FUZZ_ASSERT(ftruncate(fd, 0) == 0);
    size_t done = 0;
    while (done < len) {
        ssize_t w = pwrite(fd, data + done, len - done, (off_t)done);
        FUZZ_ASSERT(w > 0);
        done += (size_t)w;
    }
    return path;
}

/* An exact-size heap copy of data[0, size) with a NUL after it, so that ASan
 * sees any read past the terminator; the caller frees it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_ASSERT(text);
    memcpy(text, data, size);
    text[size] = 0;
    return text;
}

/* For a harness whose input's first byte picks a mode (a framing, options):
 * takes that byte off the input (*data, *size) into *mode. False for an
 * empty input, which has nothing to check. */
static inline int fuzz_mode(const uint8_t **data, size_t *size, uint8_t *mode)
{
    if (*size < 1)
        return 0;
    *mode = (*data)[0];
    (*data)++;
    (*size)--;
    return 1;
}

/* True when the NUL-terminated message is one line (no line break). */
static inline int fuzz_one_line(const char *msg)
{
    return strchr(msg, '\n') == NULL && strchr(msg, '\r') == NULL;
}

/* Quiet logs: harnesses exercise error paths that log on purpose. */
static inline void fuzz_quiet(void)
{
    log_init("fuzz");
    log_set_level(LOG_ERROR + 1);
}

#endif
