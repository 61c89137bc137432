/* kz keygen: a CurveZMQ key pair for a coordinator, a worker, a trainer or
 * an observer (curve.h, docs/security.md): NAME.key (secret, mode 0600) and
 * NAME.pub (public) in a directory; never overwrites a key. */
#include <stddef.h>
#include <stdio.h>

#include "common/config.h"
#include "net/curve.h"
#include "tools/kz/kz.h"
#include "common/util.h"

typedef struct keygen_config {
    char dir[CONFIG_STR_MAX]; /* where the two files go */
} keygen_config;

#define CONFIG_STRUCT keygen_config
static const config_option s_options[] = {
    CONFIG_ROW_STRING(dir, ".", "directory to write NAME.key and NAME.pub in"),
};
#define N_OPTIONS (sizeof s_options / sizeof s_options[0])

int cmd_keygen(int argc, char **argv)
{
    keygen_config cfg;
    const char *pos[2];
    size_t npos = 0;
    int rc = kz_parse_args("keygen",
                           "usage: kz keygen NAME [--dir D]\n\n"
                           "Makes a CurveZMQ key pair: D/NAME.key, the secret key (mode 0600: "
                           "it stays on\nthis machine) and D/NAME.pub, the public key (copy it "
                           "where it is needed:\nthe coordinator's .pub to every client as "
                           "curve_server_key, a client's .pub\ninto the coordinator's "
                           "allow_keys as `NAME ROLE KEY`). Never overwrites a key.\n"
                           "docs/security.md has the whole setup.\n",
                           s_options, N_OPTIONS, &cfg, argc, argv, pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (npos != 1)
        return kz_usage_error("keygen: give exactly one NAME (see kz keygen --help)");
    char err[600], pub[CURVE_KEY_TEXT];
    if (!curve_name_ok(pos[0])) {
        char shown[80];
        return kz_usage_error("keygen: '%s' is not a key name (1 to %d of A-Z a-z 0-9 . _ -)",
                              text_printable(shown, sizeof shown, pos[0], 64),
                              CURVE_NAME_MAX - 1);
    }
    rc = curve_keygen(cfg.dir, pos[0], pub, err, sizeof err);
    if (rc)
        return kz_usage_error("keygen: %s", err);
    printf("wrote %s/%s.key (secret: keep it on this machine) and %s/%s.pub (public)\n"
           "public key: %s\n"
           "its allow_keys line on the coordinator: %s ROLE %s   (ROLE: worker, trainer or "
           "observer)\n",
           cfg.dir, pos[0], cfg.dir, pos[0], pub, pos[0], pub);
    return 0;
}

#undef CONFIG_STRUCT