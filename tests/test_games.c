/* Stored games out of the cluster, against the real kz-coordinator and kz:
 * `kz store --game SEQ` (the printer of `kz records --game`), GET /games
 * (recent games, filters, bounded count) and GET /games/SEQ (a record's
 * moves as JSON), with their answers to bad input, and the viewer page in
 * headless Chromium replaying a stored game. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "game.h"
#include "harness.h"
#include "record.h"
#include "util.h"
#include "validate.h"

TestSuite(games, .fini = harness_cleanup);

/* The text after the first line (the title differs between the printers). */
static const char *s_after_title(const char *text)
{
    const char *nl = strchr(text, '\n');
    return nl ? nl + 1 : text;
}

Test(games, kz_store_game_prints_a_stored_game_as_kz_records_does)
{
    harness h;
    harness_init(&h, "games-store");
    harness_coord_start(&h, NULL);
    harness_submit_random_games(&h, 3, 500);

    /* The same records in a record file, for kz records --game. */
    validate_random_opts vo = {.model_version = 1, .worker_id = "harness"};
    char path[160], err[200];
    snprintf(path, sizeof path, "%s/same.kzr", h.dir);
    record_file *f;
    cr_assert_eq(record_file_create(path, &f, err, sizeof err), 0, "%s", err);
    game_record *r = record_new();
    for (int i = 0; i < 3; i++) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(validate_random_record(game_default(), 500 + (uint64_t)i, &vo, &buf, &len), 0);
        cr_assert_eq(record_unpack(buf, len, r, err, sizeof err), 0, "%s", err);
        cr_assert_eq(record_file_write(f, r, err, sizeof err), 0, "%s", err);
        free(buf);
    }
    record_destroy(&r);
    cr_assert_eq(record_file_close(&f), 0);

    /* Which stored sequence holds the third record: kz store --games lists
     * them in order of arrival, all three from one client in order. */
    proc_output o, want;
    char args[400];
    snprintf(args, sizeof args, "store --data_dir=%s/store --game 2", h.dir);
    cr_assert_eq(harness_kz(args, NULL, &o), 0, "%s%s", o.out, o.err);
    cr_assert(!strncmp(o.out, "game 2 (selfplay): id ", 22), "%s", o.out);
    snprintf(args, sizeof args, "records %s --game 3", path);
    cr_assert_eq(harness_kz(args, NULL, &want), 0, "%s%s", want.out, want.err);
    cr_assert_str_eq(s_after_title(o.out), s_after_title(want.out),
                     "the same listing after the title line");
    cr_assert(strstr(o.out, "\nresult: "), "%s", o.out);
    proc_output_free(&o);
    proc_output_free(&want);

    /* Bad input: exit 2 with one line. */
    static const struct {
        const char *fmt; /* %s: the directory */
        const char *says;
    } bad[] = {
        {"store --data_dir=%s/store --game 3", "no game 3 in the store (games 0..2)"},
        {"store --data_dir=%s/store --game x", "game"},
        {"store --data_dir=%s/store --game=-2", "game"},
        {"store --data_dir=%s/store --game 1 --export best x.kzm", "not both"},
        {"store --data_dir=%s/nothing --game 0", "no store"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i].fmt, h.dir);
        cr_assert_eq(harness_kz(args, NULL, &o), 2, "kz %s: %s%s", args, o.out, o.err);
        cr_assert(strstr(o.err, bad[i].says), "kz %s: '%s'", args, o.err);
        cr_assert(strchr(o.err, '\n') == o.err + strlen(o.err) - 1, "one line: '%s'", o.err);
        proc_output_free(&o);
    }
    harness_fini(&h);
}
