/* fuzz_config: the settings parser (common/config.h): `key = value` files
 * and --flags, as every program reads its /etc/khreibaga files and its command
 * line.
 *
 * Input: NUL-separated segments. The first segment is the text of a config
 * file; the rest are command-line arguments. When the first byte of the input
 * is odd a --config=FILE argument naming that file is put first; bit 2 allows
 * positional arguments.
 *
 * Properties: no crash or out-of-bounds access; the result is CONFIG_OK,
 * CONFIG_HELP or KZ_EINVAL; an error is one non-empty line; on success every
 * number lies in its option's range, every string fits, and integers and
 * booleans print and parse back to the same value. */
#include <stddef.h>
#include <string.h>

#include "common/config.h"
#include "fuzz.h"

typedef struct fuzz_cfg {
    long count;           /* an int option */
    long big;             /* an int with a wide range */
    double rate;          /* a real option */
    bool flag;            /* a bool option */
    char name[CONFIG_STR_MAX]; /* a string option */
    char path[CONFIG_STR_MAX]; /* another string */
} fuzz_cfg;

#define O(f) offsetof(fuzz_cfg, f)
#define CONFIG_STRUCT fuzz_cfg
static const config_option s_table[] = {
    CONFIG_ROW_INT(count, "4", 1, 64, "an int"),
    {"big_number", CONFIG_INT, "0", -9007199254740991.0, 9007199254740991.0, O(big), "wide"},
    CONFIG_ROW_DOUBLE(rate, "0.5", 0, 1, "a real"),
    CONFIG_ROW_BOOL(flag, "false", "a bool"),
    CONFIG_ROW_STRING(name, "x", "a string"),
    CONFIG_ROW_STRING(path, "", "a string"),
};
#define N (sizeof s_table / sizeof s_table[0])

int fuzz_input(const uint8_t *data, size_t size)
{
    uint8_t mode;
    if (!fuzz_mode(&data, &size, &mode))
        return 0;
    bool with_file = mode & 1;
    char *text = fuzz_text(data, size);
    /* Step 1. Segments: the file, then the arguments. */
    size_t file_len = strnlen(text, size);
    char *argv[66];
    char flag[96];
    int argc = 0;
    argv[argc++] = (char *)"prog";
    if (with_file) {
        snprintf(flag, sizeof flag, "--config=%s", fuzz_memfile(data, file_len));
        argv[argc++] = flag;
    }
    for (size_t at = file_len + 1; at <= size && argc < 65; at += strlen(text + at) + 1)
        argv[argc++] = text + at;
    argv[argc] = NULL;
    /* Step 2. Parse. */
    fuzz_cfg cfg;
    memset(&cfg, 0xa5, sizeof cfg);
    char err[512] = "";
    const char *pos[4];
    size_t npos = 0;
    int rc = config_parse(s_table, N, &cfg, argc, argv, (mode & 2) ? pos : NULL, 4, &npos,
                          err, sizeof err);
    FUZZ_ASSERT(rc == CONFIG_OK || rc == CONFIG_HELP || rc == KZ_EINVAL);
    if (rc == KZ_EINVAL) {
        if (!fuzz_one_line(err) || !err[0])
            fprintf(stderr, "error is not one line: [%s]\n", err);
        FUZZ_ASSERT(err[0] && fuzz_one_line(err));
    } else if (rc == CONFIG_OK) {
        FUZZ_ASSERT(cfg.count >= 1 && cfg.count <= 64);
        FUZZ_ASSERT(cfg.big >= -9007199254740991L && cfg.big <= 9007199254740991L);
        FUZZ_ASSERT(cfg.rate >= 0 && cfg.rate <= 1);
        FUZZ_ASSERT(memchr(cfg.name, 0, sizeof cfg.name) && memchr(cfg.path, 0, sizeof cfg.path));
        for (size_t i = 0; i < N; i++) {
            if (s_table[i].type != CONFIG_INT && s_table[i].type != CONFIG_BOOL)
                continue;
            char v[64];
            config_format(&s_table[i], &cfg, v, sizeof v);
            fuzz_cfg copy = cfg;
            FUZZ_ASSERT(config_set(s_table, N, &copy, s_table[i].name, v, err, sizeof err) == 0);
            FUZZ_ASSERT(!memcmp(&copy, &cfg, sizeof cfg));
        }
    }
    free(text);
    return 0;
}

#undef CONFIG_STRUCT