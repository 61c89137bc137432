/* kz store: looks into a coordinator's LMDB store (read-only use; safe while
 * the coordinator runs): a summary of games, positions, window and models,
 * with --games one line per stored game (for operators, and for tests that
 * check every acknowledged game is stored exactly once), with --game one
 * stored game move by move (the printer of kz records --game), and with --export
 * one registered model written out as a model file (its registry version and
 * parent stamped in, as GET /models/N.kzm serves it).
 *
 * kz store check DIR walks the whole store without trusting it (storecheck.h)
 * and prints every problem; kz store salvage SRC DST copies what is readable
 * into a new store. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/config.h"
#include "games/game.h"
#include "tools/kz/kz.h"
#include "nn/modelfile.h"
#include "nn/modelkind.h"
#include "data/record.h"
#include "data/store.h"
#include "data/storecheck.h"
#include "common/util.h"

typedef struct store_cmd_config {
    char data_dir[CONFIG_STR_MAX]; /* the store */
    bool games;                    /* list the games */
    bool models;                   /* list the models */
    char export_model[CONFIG_STR_MAX]; /* VERSION or "best" to write out, "" none */
    long game;                     /* sequence of the game to print, -1 none */
} store_cmd_config;

#define O(f) offsetof(store_cmd_config, f)
#define CONFIG_STRUCT store_cmd_config
static const config_option s_options[] = {
    CONFIG_ROW_STRING(data_dir, "./var/coordinator", "the coordinator's store directory"),
    CONFIG_ROW_BOOL(games, "false",
                    "one line per game: sequence, id (hex), kind, model, winner, reason, plies, "
                    "worker"),
    CONFIG_ROW_BOOL(models, "false",
                    "one line per model: version, parent, status, arena tally, bytes"),
    {"export", CONFIG_STRING, "", 0, 0, O(export_model),
     "VERSION or best: write that model to FILE (its version and parent stamped in)"},
    CONFIG_ROW_INT(game, "-1", -1, 9007199254740991,
                   "SEQ: print that stored game move by move (as kz records --game); -1 = none"),
};
#undef CONFIG_STRUCT
#define N_OPTIONS (sizeof s_options / sizeof s_options[0])

typedef struct list_ctx {
    game_record *rec; /* decode buffer */
    long bad;         /* records that do not decode */
} list_ctx;

static int s_print_game(void *ctx, uint64_t seq, const uint8_t *bytes, size_t len)
{
    list_ctx *lc = ctx;
    char err[200];
    if (record_unpack(bytes, len, lc->rec, err, sizeof err)) {
        printf("%llu ? undecodable: %s\n", (unsigned long long)seq, err);
        lc->bad++;
        return 0;
    }
    const game_record *r = lc->rec;
    char id[2 * RECORD_ID_BYTES + 1];
    for (int i = 0; i < RECORD_ID_BYTES; i++)
        snprintf(id + 2 * i, 3, "%02x", r->id[i]);
    char worker[sizeof r->worker_id]; /* any client's: one word, no control characters */
    text_printable(worker, sizeof worker, r->worker_id[0] ? r->worker_id : "-",
                   sizeof r->worker_id);
    for (char *c = worker; *c; c++)
        *c = *c == ' ' ? '_' : *c;
    printf("%llu %s %s %u %d %s %u %s\n", (unsigned long long)seq, id,
           r->kind == RECORD_ARENA  ? "arena"
           : r->kind == RECORD_EVAL ? "eval"
                                    : "selfplay",
           r->model_version, r->winner,
           game_reason_name(game_find(r->game) ? game_find(r->game) : game_default(), r->reason),
           r->plies, worker);
    return 0;
}

/* --game: stored game `seq` printed move by move. 0, 1 (unreadable) or 2
 * (no such game). */
static int s_show_game(store *st, const store_stats *s, uint64_t seq)
{
    if (seq >= s->games)
        return kz_usage_error("store: --game: no game %llu in the store (games 0..%lld)",
                              (unsigned long long)seq, (long long)s->games - 1);
    uint8_t *bytes;
    size_t len;
    int rc = store_get_game(st, seq, &bytes, &len);
    if (rc) {
        fprintf(stderr, "kz: store: cannot read game %llu: %s\n", (unsigned long long)seq,
                err_str(rc));
        return 1;
    }
    game_record *r = record_new();
    char err[200];
    if (!r || record_unpack(bytes, len, r, err, sizeof err)) {
        fprintf(stderr, "kz: store: game %llu does not decode: %s\n", (unsigned long long)seq,
                r ? err : "out of memory");
        free(bytes);
        record_destroy(&r);
        return 1;
    }
    free(bytes);
    const game_def *g = game_find(r->game);
    if (!g) {
        char name[sizeof r->game];
        fprintf(stderr, "kz: store: game %llu is of an unknown game '%s'\n",
                (unsigned long long)seq,
                text_printable(name, sizeof name, r->game, sizeof r->game));
        record_destroy(&r);
        return 1;
    }
    char title[64];
    snprintf(title, sizeof title, "game %llu (%s)", (unsigned long long)seq,
             r->kind == RECORD_ARENA ? "arena" : r->kind == RECORD_EVAL ? "eval" : "selfplay");
    kz_print_record(g, r, title);
    record_destroy(&r);
    return 0;
}

/* --export: model `which` (a version or "best") to path. 0, 1 (cannot
 * read or write) or 2 (no such model). */
static int s_export(store *st, const store_stats *s, const char *which, const char *path)
{
    long v = 0;
    if (!strcmp(which, "best"))
        v = s->best;
    else if (parse_long(which, 1, UINT32_MAX, &v))
        return kz_usage_error("store: --export: '%s' is not a model version (1..%u) or best",
                              which, s->models);
    if (v < 1 || (uint32_t)v > s->models)
        return kz_usage_error("store: --export: no model version %ld in the store (versions "
                              "1..%u)", v, s->models);
    uint8_t *blob, *out;
    size_t len, outlen;
    store_model_info info;
    int rc = store_get_model(st, (uint32_t)v, &blob, &len, &info);
    if (rc) {
        fprintf(stderr, "kz: store: cannot read model %ld: %s\n", v, err_str(rc));
        return 1;
    }
    char err[400];
    rc = modelkind_stamp(blob, len, (uint32_t)v, info.parent, &out, &outlen, err, sizeof err);
    free(blob);
    if (rc) {
        fprintf(stderr, "kz: store: model %ld in the store: %s\n", v, err);
        return 1;
    }
    rc = file_write_atomic(path, out, outlen);
    free(out);
    if (rc)
        return kz_write_error("store", path, rc);
    printf("wrote %s: model version %ld (parent %u, %s), %zu bytes\n", path, v, info.parent,
           store_model_status_name(info.status), outlen);
    return 0;
}

/* kz store check / salvage: prints each problem as found. */
static void s_print_problem(void *ctx, const char *line)
{
    (void)ctx;
    printf("problem: %s\n", line);
    fflush(stdout);
}

typedef struct check_cmd_config {
    bool pages_only; /* the structure only */
} check_cmd_config;

#define CONFIG_STRUCT check_cmd_config
static const config_option s_check_options[] = {
    CONFIG_ROW_BOOL(pages_only, "false",
                    "check the pages only (what the coordinator does at start), not the entries"),
};
#undef CONFIG_STRUCT

static void s_print_summary(const char *dir, const storecheck_result *r)
{
    printf("store %s: %llu pages of %u bytes (transaction %llu), %llu read in %.2f s: %llu "
           "models, %llu games, %llu positions, %llu dedup entries, %llu meta entries\n",
           dir, (unsigned long long)r->pages, r->page_size, (unsigned long long)r->txnid,
           (unsigned long long)r->visited, r->seconds, (unsigned long long)r->models,
           (unsigned long long)r->games, (unsigned long long)r->positions,
           (unsigned long long)r->dedup, (unsigned long long)r->meta);
}

static int s_cmd_check(int argc, char **argv)
{
    check_cmd_config cfg;
    const char *pos[2];
    size_t npos = 0;
    int rc = kz_parse_args("store check",
                           "usage: kz store check DIR [--pages-only]\n\n"
                           "Walks the whole store in DIR (a coordinator's data_dir) without "
                           "trusting it: every\npage of every tree (read from the file, not "
                           "through LMDB, which a damaged page\ncan crash), then every entry: "
                           "game records decode and replay through the rules,\ndedup entries "
                           "name their games, positions decode and are dense, models match\n"
                           "their checksums. Prints each problem on a line of its own, then a "
                           "summary. Exit\nstatus 0: no problem, 1: problems (kz store salvage "
                           "copies what is readable),\n2: no store there. Safe while the "
                           "coordinator runs (it checks a snapshot).\n",
                           s_check_options, 1, &cfg, argc - 1, argv + 1, pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (npos != 1)
        return kz_usage_error("store check: give exactly one DIR (see kz store check --help)");
    storecheck_opts o = {.pages_only = cfg.pages_only, .problem = s_print_problem};
    storecheck_result r;
    rc = storecheck_run(pos[0], &o, &r);
    if (rc == ENOENT)
        return kz_usage_error("store check: no store in '%s' (no data.mdb)", pos[0]);
    if (rc) {
        fprintf(stderr, "kz: store check: %s: %s\n", pos[0], err_str(rc));
        return 1;
    }
    s_print_summary(pos[0], &r);
    if (!r.problems) {
        printf("no problem found%s\n", cfg.pages_only ? " in the pages" : "");
        return 0;
    }
    printf("%llu problem%s: the store is damaged. kz store salvage %s NEWDIR copies what is "
           "readable into a new store.\n", (unsigned long long)r.problems,
           r.problems == 1 ? "" : "s", pos[0]);
    return 1;
}

static int s_cmd_salvage(int argc, char **argv)
{
    const char *pos[3];
    size_t npos = 0;
    int rc = kz_parse_args("store salvage",
                           "usage: kz store salvage SRC DST\n\n"
                           "Copies what is readable of the store in SRC into a new store in DST "
                           "(made; it\nmust hold no store yet): the models whose checksum holds "
                           "(their versions kept),\nthe games that decode and replay through "
                           "the rules (their sequences kept, their\ndedup entries made again), "
                           "the positions that decode (renumbered without gaps,\nending where "
                           "SRC's ended), the other meta entries, and counters that agree "
                           "with\nwhat was copied. When SRC's trees are broken (a copy taken "
                           "while it was\nwritten), the leaf pages they do not reach are read "
                           "too. Prints SRC's problems\nas kz store check does, then what was "
                           "copied and what was lost. Exit status 0:\nnothing lost, 1: "
                           "something lost (or nothing readable), 2: bad arguments.\nThen start "
                           "the coordinator on DST.\n",
                           NULL, 0, NULL, argc - 1, argv + 1, pos, 3, &npos);
    if (rc >= 0)
        return rc;
    if (npos != 2)
        return kz_usage_error("store salvage: give SRC and DST (see kz store salvage --help)");
    storecheck_opts o = {.problem = s_print_problem};
    storecheck_result r;
    storecheck_salvaged out;
    rc = storecheck_salvage(pos[0], pos[1], &o, &r, &out);
    if (rc == ENOENT)
        return kz_usage_error("store salvage: no store in '%s' (no data.mdb)", pos[0]);
    if (rc == KZ_EINVAL)
        return kz_usage_error("store salvage: '%s' holds a store already (salvage writes a new "
                              "one)", pos[1]);
    if (rc == KZ_ECORRUPT) {
        fprintf(stderr, "kz: store salvage: nothing in %s can be read (its meta pages are "
                        "damaged)\n", pos[0]);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "kz: store salvage: %s -> %s: %s\n", pos[0], pos[1], err_str(rc));
        return 1;
    }
    s_print_summary(pos[0], &r);
    printf("salvaged into %s: %llu models (best %u), %llu games, %llu positions, %llu meta "
           "entries; %llu entries dropped, %llu problems in %s\n",
           pos[1], (unsigned long long)out.models, out.best, (unsigned long long)out.games,
           (unsigned long long)out.positions, (unsigned long long)out.meta,
           (unsigned long long)out.dropped, (unsigned long long)r.problems, pos[0]);
    if (out.scanned_pages)
        printf("recovered from %llu leaf pages outside the tree: %llu models, %llu games, "
               "%llu positions\n", (unsigned long long)out.scanned_pages,
               (unsigned long long)out.scanned_models, (unsigned long long)out.scanned_games,
               (unsigned long long)out.scanned_positions);
    uint64_t lost = out.lost_models + out.lost_games + out.lost_positions;
    printf("lost: %llu models, %llu games, %llu positions of the window%s\n",
           (unsigned long long)out.lost_models, (unsigned long long)out.lost_games,
           (unsigned long long)out.lost_positions, lost ? "" : " (nothing)");
    if (lost) {
        fprintf(stderr, "kz: store salvage: %llu models, %llu games and %llu positions of %s "
                        "could not be recovered (exit 1)\n",
                (unsigned long long)out.lost_models, (unsigned long long)out.lost_games,
                (unsigned long long)out.lost_positions, pos[0]);
        return 1;
    }
    return 0;
}

static const char s_usage[] =
    "usage: kz store [--data_dir=DIR] [--games] [--models]\n"
    "       kz store [--data_dir=DIR] --game=SEQ\n"
    "       kz store [--data_dir=DIR] --export=VERSION|best FILE\n\n"
    "Summarizes a coordinator's replay store: games, positions, the sampling\n"
    "window, models and the best version. --games lists every stored game,\n"
    "--models every registered model. --game prints stored game SEQ (the first\n"
    "number of a --games line) move by move, as kz records --game does.\n"
    "--export writes one model to FILE\n"
    "(the registry's version and parent stamped in; `kz model info FILE` shows\n"
    "them). Safe while the coordinator runs.\n\n";

int cmd_store(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "check"))
        return s_cmd_check(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "salvage"))
        return s_cmd_salvage(argc, argv);
    store_cmd_config cfg;
    const char *pos[2];
    size_t npos = 0;
    int rc = config_start("kz: store", s_usage, s_options, N_OPTIONS, &cfg, argc, argv,
                          pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (cfg.export_model[0] && cfg.game >= 0)
        return kz_usage_error("store: give --game or --export, not both");
    if (cfg.export_model[0] && npos != 1)
        return kz_usage_error("store: --export needs exactly one FILE to write (see kz store "
                              "--help)");
    if (!cfg.export_model[0] && npos)
        return kz_usage_error("store: unexpected argument '%s' (see kz store --help)", pos[0]);
    struct stat sb;
    char path[CONFIG_STR_MAX + 16];
    snprintf(path, sizeof path, "%s/data.mdb", cfg.data_dir);
    if (stat(path, &sb))
        return kz_usage_error("store: no store in '%s' (no data.mdb)", cfg.data_dir);
    store_options so;
    store_options_default(&so);
    so.map_bytes = 1u << 20; /* the environment remembers its real size */
    so.read_only = true;
    store *st;
    rc = store_open(&st, cfg.data_dir, &so);
    if (rc) {
        fprintf(stderr, "kz: store: cannot open %s: %s\n", cfg.data_dir, err_str(rc));
        return 1;
    }
    store_stats s;
    store_get_stats(st, &s);
    if (cfg.export_model[0]) {
        rc = s_export(st, &s, cfg.export_model, pos[0]);
        store_close(&st);
        return rc;
    }
    if (cfg.game >= 0) {
        rc = s_show_game(st, &s, (uint64_t)cfg.game);
        store_close(&st);
        return rc;
    }
    printf("store %s: %llu games, %llu positions (stored from %llu), best model %u of %u, "
           "map %llu MiB (%llu MiB used)\n",
           cfg.data_dir, (unsigned long long)s.games, (unsigned long long)s.positions_total,
           (unsigned long long)s.first_position, s.best, s.models,
           (unsigned long long)(s.map_bytes >> 20), (unsigned long long)(s.used_bytes >> 20));
    int status = 0;
    if (cfg.models)
        for (uint32_t v = 1; v <= s.models; v++) {
            store_model_info m;
            if (store_get_model_info(st, v, &m)) {
                printf("model %u: unreadable\n", v);
                status = 1;
                continue;
            }
            printf("model %u parent %u %s +%u =%u -%u step %llu %llu bytes%s\n", v, m.parent,
                   store_model_status_name(m.status), m.wins, m.draws, m.losses,
                   (unsigned long long)m.trainer_step, (unsigned long long)m.blob_len,
                   v == s.best ? " (best)" : "");
        }
    if (cfg.games) {
        list_ctx lc = {record_new(), 0};
        if (!lc.rec) {
            store_close(&st);
            return 1;
        }
        rc = store_foreach_game(st, s_print_game, &lc);
        if (rc) {
            fprintf(stderr, "kz: store: reading games: %s\n", err_str(rc));
            status = 1;
        }
        if (lc.bad)
            status = 1;
        record_destroy(&lc.rec);
    }
    store_close(&st);
    return status;
}
