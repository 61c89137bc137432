/* Tests of the real kz-worker binary against a real kz-coordinator on
 * loopback (temp LMDB store, a tiny network, few simulations): bad settings,
 * games played, submitted and acknowledged, the model cache, an arena and
 * the switch to the promoted model, a coordinator killed and restarted under
 * a running worker (its held games arrive exactly once, the queue bound
 * holds), and both SIGTERM behaviours. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "net/client.h"
#include "tests/harness/harness.h"
#include "games/game.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "data/record.h"
#include "data/store.h"
#include "games/tablebase.h"
#include "common/util.h"
#include "net/wire.h"

TestSuite(worker, .fini = harness_cleanup, .timeout = 600);

/* Starts a worker of h with its common flags plus extra (NULL-terminated). */
static pid_t s_worker(const harness *h, const char *log, const char *const *extra)
{
    static char a_end[96], a_sub[96], a_cache[128];
    snprintf(a_end, sizeof a_end, "--endpoint=%s", h->endpoint);
    snprintf(a_sub, sizeof a_sub, "--sub_endpoint=%s", h->pub);
    snprintf(a_cache, sizeof a_cache, "--model_cache_dir=%s/models", h->dir);
    const char *args[40] = {a_end,           a_sub,         a_cache,          "--simulations=8",
                            "--timeout_ms=300", "--retries=1", "--heartbeat_ms=100",
                            "--log_s=0.1",   "--seed=7"};
    int n = 9;
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    return harness_spawn("kz-worker", args, log);
}

/* Runs kz-worker with args alone (no coordinator needed); returns the exit code. */
static int s_run_alone(const char *const *args, const char *log)
{
    pid_t pid = harness_spawn("kz-worker", args, log);
    int st;
    cr_assert(harness_wait(pid, 20, &st), "kz-worker did not exit");
    return harness_exit_code(st);
}

Test(worker, bad_settings_exit_2_with_one_line)
{
    harness h;
    harness_init(&h, "wbad");
    char log[128];
    static const char *const cases[][2] = {
        {"--parallel=0", "parallel"},
        {"--no_such_key=1", "unknown option"},
        {"--drain_s=-1", "drain_s"},
        {"--game=chess", "chess"},
        {"--max_pending=many", "max_pending"},
        {"--policy_pruning=true", "forced_playouts_k"},
        {"--pcr_full_fraction=1.5", "pcr_full_fraction"},
        {"--root_mode=alphago", "root_mode"},
        {"--precision=fp16", "precision"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(log, sizeof log, "%s/bad%zu.log", h.dir, i);
        const char *args[] = {cases[i][0], NULL};
        cr_expect_eq(s_run_alone(args, log), 2, "%s", cases[i][0]);
        char *text = harness_read(log);
        cr_expect_eq(harness_count(log, "\n"), 1, "%s: not one line: %s", cases[i][0], text);
        cr_expect(strstr(text, "kz-worker: ") == text, "%s: %s", cases[i][0], text);
        cr_expect_not_null(strstr(text, cases[i][1]), "%s: %s", cases[i][0], text);
        free(text);
    }
    /* A config file with a bad line names the file and the line. */
    char conf[128];
    snprintf(conf, sizeof conf, "%s/worker.conf", h.dir);
    FILE *f = fopen(conf, "w");
    fprintf(f, "# a worker\nparallel = 4\nsimulations = lots\n");
    fclose(f);
    char a_conf[160];
    snprintf(a_conf, sizeof a_conf, "--config=%s", conf);
    snprintf(log, sizeof log, "%s/conf.log", h.dir);
    const char *cargs[] = {a_conf, NULL};
    cr_expect_eq(s_run_alone(cargs, log), 2);
    cr_expect_eq(harness_count(log, "worker.conf:3"), 1);
    /* --help prints the whole table and exits 0. */
    snprintf(log, sizeof log, "%s/help.log", h.dir);
    const char *hargs[] = {"--help", NULL};
    cr_expect_eq(s_run_alone(hargs, log), 0);
    static const char *const keys[] = {"--endpoint", "--sub_endpoint", "--parallel",
                                       "--simulations", "--threads", "--model_cache_dir",
                                       "--timeout_ms", "--max_pending", "--worker_id", "--seed",
                                       "--forced_playouts_k", "--policy_pruning",
                                       "--pcr_full_fraction", "--pcr_fast_simulations",
                                       "--root_mode", "--gumbel_m", "--gumbel_c_visit",
                                       "--gumbel_c_scale"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_expect_eq(harness_count(log, keys[i]) > 0, true, "--help lacks %s", keys[i]);
    harness_fini(&h);
}

/* The model file the worker cached: named <version>-<checksum>.kzm, holding
 * exactly the blob the coordinator serves (the tiny model file). */
static void s_check_cache(const harness *h)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/models", h->dir);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "no model cache directory");
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "1-", 2)) {
            char path[400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            uint8_t *blob, *orig;
            size_t len, olen;
            cr_assert_eq(file_read_all(path, &blob, &len), 0);
            cr_assert_eq(file_read_all(h->model, &orig, &olen), 0);
            cr_expect_eq(len, olen);
            cr_expect_eq(memcmp(blob, orig, len), 0, "cached blob differs from the model");
            char want[64];
            snprintf(want, sizeof want, "1-%016llx.kzm",
                     (unsigned long long)wire_blob_checksum(blob, len));
            cr_expect_str_eq(e->d_name, want);
            free(blob);
            free(orig);
            found++;
        }
    closedir(d);
    cr_expect_eq(found, 1, "model 1 cached %d times", found);
}

Test(worker, plays_games_that_are_acknowledged_and_stored)
{
    harness h;
    harness_init(&h, "wplay");
    harness_coord_start(&h, NULL);
    char log[128];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    const char *extra[] = {"--parallel=4", "--max_games=12", NULL};
    pid_t w = s_worker(&h, log, extra);
    int st;
    cr_assert(harness_wait(w, 60, &st), "the worker did not finish 12 games");
    cr_expect_eq(harness_exit_code(st), 0, "see %s", log);
    cr_expect_eq(harness_log_num(log, "exit: games "), 12);
    cr_expect_eq(harness_log_num(log, ", acked "), 12);
    cr_expect_eq(harness_log_num(log, ", unacknowledged "), 0);
    cr_expect_eq(harness_log_num(log, ", rejected "), 0);
    /* The coordinator stored exactly those 12 games, none rejected. */
    cr_expect_eq(harness_wait_status(&h, "\"replay\"", "games", 12, 5), 12);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "rejected"), 0);
    cr_expect_gt(harness_status_num(&h, "\"replay\"", "positions"), 12 * 5);
    cr_expect_eq(harness_count(log, "config parallel = 4"), 1, "effective config not logged");
    s_check_cache(&h);
    /* A second run finds the model in the disk cache. */
    const char *again[] = {"--parallel=2", "--max_games=2", NULL};
    w = s_worker(&h, log, again);
    cr_assert(harness_wait(w, 60, &st));
    cr_expect_eq(harness_exit_code(st), 0);
    cr_expect_eq(harness_count(log, "from the disk cache"), 1);
    cr_expect_eq(harness_wait_status(&h, "\"replay\"", "games", 14, 5), 14);
    harness_fini(&h);
}

/* What the stored games of a worker with tb_adjudicate show (s_tb_game). */
typedef struct tb_scan {
    const tb_set *t;  /* the worker's tables */
    int games;        /* games stored */
    int selfplay;     /* of which self-play games */
    int reached;      /* of which reached the tables */
    int table_moves;  /* moves played in them */
    int unforced;     /* of which with more than one legal action */
    int bad;          /* faults seen (the first one in why) */
    char why[256];    /* the first fault */
    int first_wdl;    /* the game being replayed: its first table state's value for the
                         mover there; -2 before the tables */
    int z_first;      /* the game's result from that mover's view */
} tb_scan;

static void s_tb_fault(tb_scan *sc, const char *fmt, int a, int b)
{
    if (sc->bad++ == 0)
        snprintf(sc->why, sizeof sc->why, fmt, a, b);
}

/* Per state of a replayed game: from the first state the tables cover on,
 * every move is the tables' (tb_best_action) with their value as its root
 * value and no policy target; no search move is played there. */
static int s_tb_state(void *ctx, const game_state *s, int k, const record_move *m, int z)
{
    tb_scan *sc = ctx;
    int wdl, best;
    if (tb_probe_wdl(sc->t, s, &wdl) != 0)
        return 0;
    if (sc->first_wdl == -2) {
        sc->first_wdl = wdl;
        sc->z_first = z;
        sc->reached++;
    }
    sc->table_moves++;
    sc->unforced += !m->forced;
    cr_assert_eq(tb_best_action(sc->t, s, &best), 0);
    if (m->action != best)
        s_tb_fault(sc, "move %d: %d is not the tables' move", k, m->action);
    if (m->root_value != (float)wdl)
        s_tb_fault(sc, "move %d: root value is not the tables' %d", k, wdl);
    if (!m->forced && (m->policy_n != 0 || !m->fast_search))
        s_tb_fault(sc, "move %d: a policy target (%d entries) on a table move", k,
                   m->policy_n);
    return 0;
}

static int s_tb_game(void *ctx, uint64_t seq, const uint8_t *bytes, size_t len)
{
    tb_scan *sc = ctx;
    (void)seq;
    game_record *r = record_new();
    char err[256];
    cr_assert_eq(record_unpack(bytes, len, r, err, sizeof err), 0, "%s", err);
    sc->games++;
    sc->first_wdl = -2;
    if (r->kind != RECORD_SELFPLAY) {
        record_destroy(&r); /* rating games never use the tables */
        return 0;
    }
    sc->selfplay++;
    cr_assert_eq(record_replay(game_default(), r, s_tb_state, sc, err, sizeof err), 0, "%s",
                 err);
    /* The game ends as the tables said where it reached them (R14 and R15,
     * which they do not model, aside). */
    if (sc->first_wdl != -2 && r->reason != GAME_REASON_REPETITION &&
        r->reason != GAME_REASON_LENGTH && sc->z_first != sc->first_wdl)
        s_tb_fault(sc, "a game ended %d for the player the tables gave %d", sc->z_first,
                   sc->first_wdl);
    record_destroy(&r);
    return 0;
}

/* Endgame tables (docs/tablebase.md): self-play games that reach them are
 * played out by them, and the coordinator takes those records as any. */
Test(worker, plays_out_games_in_the_endgame_tables)
{
    harness h;
    harness_init(&h, "wtb");
    char tbdir[160], args[240], out[1024];
    snprintf(tbdir, sizeof tbdir, "%s/tb", h.dir);
    snprintf(args, sizeof args, "tb build --pieces 4 --dir %s --threads 1", tbdir);
    cr_assert_eq(harness_kz_out(args, NULL, true, out, sizeof out), 0, "%s", out);
    const char *coord[] = {"--eval_share=0", NULL};
    harness_coord_start(&h, coord);
    char log[128], a_tb[200];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    snprintf(a_tb, sizeof a_tb, "--tb_dir=%s", tbdir);
    const char *extra[] = {"--parallel=4", "--max_games=40", a_tb, "--tb_adjudicate=true",
                           "--tb_search=true", NULL};
    pid_t w = s_worker(&h, log, extra);
    int st;
    cr_assert(harness_wait(w, 60, &st), "the worker did not finish 40 games");
    cr_expect_eq(harness_exit_code(st), 0, "see %s", log);
    cr_expect_eq(harness_count(log, "endgame tables: every position with up to 4 pieces"), 1);
    cr_expect_gt(harness_log_num(log, "endgame tables: "), 0, "no game reached the tables");
    cr_expect_eq(harness_log_num(log, ", acked "), 40);
    cr_expect_eq(harness_log_num(log, ", rejected "), 0);
    cr_expect_eq(harness_wait_status(&h, "\"replay\"", "games", 40, 5), 40);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "rejected"), 0);
    /* The stored games (the store read beside the running coordinator). */
    char sdir[128], err[512];
    snprintf(sdir, sizeof sdir, "%s/store", h.dir);
    store_options so;
    store_options_default(&so);
    so.read_only = true;
    store *s = NULL;
    cr_assert_eq(store_open(&s, sdir, &so), 0);
    tb_set *t = tb_open(tbdir, 0, err, sizeof err);
    cr_assert(t, "%s", err);
    tb_scan sc = {.t = t};
    cr_assert_eq(store_foreach_game(s, s_tb_game, &sc), 0);
    store_close(&s);
    tb_close(&t);
    cr_expect_eq(sc.games, 40);
    cr_expect_eq(sc.bad, 0, "%d faults; the first: %s", sc.bad, sc.why);
    cr_expect_gt(sc.reached, 0, "no stored game reached the tables");
    cr_expect_gt(sc.unforced, 0, "no table move had a choice");
    /* (The worker's counts include the games it abandoned at its stop.) */
    cr_expect_leq(sc.reached, harness_log_num(log, "endgame tables: "));
    cr_expect_leq(sc.table_moves, harness_log_num(log, "games played out by them ("));
    /* Using them without them is bad settings; tables that cannot be opened
     * stop the worker at start, saying why. */
    snprintf(log, sizeof log, "%s/worker-none.log", h.dir);
    const char *none[] = {"--tb_search=true", NULL};
    cr_expect_eq(s_run_alone(none, log), 2);
    cr_expect_eq(harness_count(log, "tb_search and tb_adjudicate need tb_dir"), 1);
    snprintf(log, sizeof log, "%s/worker-bad.log", h.dir);
    const char *bad[] = {"--tb_dir=/nonexistent/tb", "--tb_adjudicate=true", NULL};
    w = s_worker(&h, log, bad);
    cr_assert(harness_wait(w, 20, &st));
    cr_expect_eq(harness_exit_code(st), 1);
    cr_expect_eq(harness_count(log, "tb_dir: /nonexistent/tb: no such tablebase directory"), 1);
    harness_fini(&h);
}

Test(worker, plays_the_arena_and_switches_to_the_promoted_model)
{
    harness h;
    harness_init(&h, "warena");
    /* Threshold 0: the first win or draw promotes (an equal candidate loses
     * all 10 games with a probability far below 1e-3). Small self-play jobs
     * so that the worker asks for work often. */
    const char *cx[] = {"--gate=spec",          "--arena_games=10",   "--arena_threshold=0",
                        "--arena_per_worker=4", "--selfplay_games=2", NULL};
    harness_coord_start(&h, cx);
    char log[128];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    const char *extra[] = {"--parallel=4", NULL};
    pid_t w = s_worker(&h, log, extra);
    /* Self-play with model 1 first; then a candidate arrives. */
    cr_assert_geq(harness_wait_status(&h, "\"replay\"", "games", 4, 30), 4);
    cr_assert_eq(harness_submit_candidate(&h), 2);
    /* The arena is played with both models and decided; self-play switches
     * from model 1 to the promoted model 2. */
    cr_assert(harness_wait_log(log, "self-play now with model 2 (was 1)", 30), "see %s", log);
    cr_expect_eq(harness_count(log, "self-play now with model 1 (was 0)"), 1, "see %s", log);
    cr_expect_eq(harness_count(log, "arena: playing candidate 2 against best 1"), 1, "see %s",
                 log);
    cr_expect_eq(harness_wait_status(&h, "\"models\"", "promotions", 1, 5), 1);
    cr_expect_eq(harness_status_num(&h, "\"models\"", "best"), 2);
    double wins = harness_status_num(&h, "\"last\"", "wins");
    double draws = harness_status_num(&h, "\"last\"", "draws");
    double losses = harness_status_num(&h, "\"last\"", "losses");
    cr_expect_geq(wins + draws, 1, "+%g =%g -%g", wins, draws, losses);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "arena_counted"), wins + draws + losses);
    /* Games of model 2 arrive; then a clean stop with everything stored. */
    double g0 = harness_status_num(&h, "\"replay\"", "games");
    cr_expect_geq(harness_wait_status(&h, "\"replay\"", "games", g0 + 2, 20), g0 + 2);
    harness_signal(w, SIGTERM);
    int st;
    cr_assert(harness_wait(w, 30, &st), "the worker did not stop");
    cr_expect_eq(harness_exit_code(st), 0, "see %s", log);
    double finished = harness_log_num(log, "exit: games ");
    cr_expect_eq(harness_wait_status(&h, "\"replay\"", "games", finished, 5), finished);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "rejected"), 0);
    harness_fini(&h);
}

Test(worker, outlives_a_coordinator_restart_and_its_games_arrive_once)
{
    harness h;
    harness_init(&h, "wrestart");
    harness_coord_start(&h, NULL);
    char log[128];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    const char *extra[] = {"--parallel=2", "--max_pending=3", "--simulations=16", NULL};
    pid_t w = s_worker(&h, log, extra);
    cr_assert_geq(harness_wait_status(&h, "\"replay\"", "games", 3, 30), 3);
    /* Step 1. The coordinator dies; the worker plays on and holds its games
     * until games held + in play reach max_pending, then starts no more. */
    harness_coord_kill(&h, SIGKILL);
    cr_assert(harness_wait_log(log, "coordinator not answering", 10), "see %s", log);
    cr_assert(harness_wait_log(log, "in play 0, pending 3,", 30), "the bound did not hold: %s",
              log);
    double done = harness_log_num(log, "progress: games ");
    harness_sleep(0.5);
    cr_expect_eq(harness_log_num(log, "progress: games "), done, "games went on past the bound");
    cr_expect_eq(harness_log_num(log, ", pending "), 3);
    /* Step 2. A new coordinator on the same store and ports gets them, and
     * new games follow. */
    harness_coord_start(&h, NULL);
    cr_assert(harness_wait_log(log, "coordinator answering again", 15), "see %s", log);
    cr_expect_geq(harness_wait_status(&h, "\"replay\"", "games", done + 2, 20), done + 2,
                  "no new game after the restart (%g finished before)", done);
    /* Step 3. SIGTERM: exit 0 with nothing left unacknowledged. */
    harness_signal(w, SIGTERM);
    int st;
    cr_assert(harness_wait(w, 30, &st), "the worker did not stop");
    cr_expect_eq(harness_exit_code(st), 0, "see %s", log);
    cr_expect_eq(harness_count(log, "stopping: finishing the moves in hand"), 1);
    cr_expect_eq(harness_log_num(log, ", unacknowledged "), 0);
    double finished = harness_log_num(log, "exit: games ");
    double acked = harness_log_num(log, ", acked ");
    cr_expect_eq(acked, finished, "acked %g of %g", acked, finished);
    /* Every finished game is in the store exactly once: no loss, no double. */
    double stored = harness_wait_status(&h, "\"replay\"", "games", finished, 5);
    cr_expect_eq(stored, finished, "stored %g, the worker finished %g", stored, finished);
    cr_expect_eq(harness_status_num(&h, "\"ingest\"", "rejected"), 0);
    harness_fini(&h);
}

/* Flips one bit in the middle of each copy of blob in the store file
 * data.mdb of h (LMDB keeps a value's bytes contiguous): a disk's bit rot. */
static void s_flip_blob_bit(const harness *h, const uint8_t *blob, size_t len)
{
    char path[160];
    snprintf(path, sizeof path, "%s/store/data.mdb", h->dir);
    FILE *f = fopen(path, "r+b");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    uint8_t *all = malloc((size_t)n);
    rewind(f);
    cr_assert_eq(fread(all, 1, (size_t)n, f), (size_t)n);
    /* LMDB may keep an older copy in a page it freed (copy on write): rot
     * every copy, so the live one is hit whichever it is. */
    int copies = 0;
    for (uint8_t *at = memmem(all, (size_t)n, blob, len); at;
         at = memmem(at + 1, (size_t)(all + n - at - 1), blob, len)) {
        long off = (long)(at - all) + (long)len / 2;
        uint8_t byte = all[off] ^ 0x10;
        fseek(f, off, SEEK_SET);
        if (fwrite(&byte, 1, 1, f) == 1)
            copies++;
    }
    fclose(f);
    free(all);
    cr_assert_gt(copies, 0, "the blob is not in %s", path);
}

/* A coordinator on h (tag's temp dir) and one worker (2 games at once,
 * its log at log) that has stored 2 games; the worker's pid. */
static pid_t s_cluster_playing(harness *h, const char *tag, char *log, size_t cap)
{
    harness_init(h, tag);
    harness_coord_start(h, NULL);
    snprintf(log, cap, "%s/worker.log", h->dir);
    const char *extra[] = {"--parallel=2", NULL};
    pid_t w = s_worker(h, log, extra);
    cr_assert_geq(harness_wait_status(h, "\"replay\"", "games", 2, 30), 2);
    return w;
}

/* A flipped bit in the best model's blob (issue 28): the coordinator's start
 * finds it, says so loudly, and falls back to the last good best; /status
 * and /healthz show it, the worker says its best went back and plays on. */
Test(worker, a_bit_flipped_best_falls_back_and_the_cluster_plays_on)
{
    harness h;
    char log[128];
    pid_t w = s_cluster_playing(&h, "wflip", log, sizeof log);
    /* Step 1. Model 2 becomes the best (gate none) and the worker plays it. */
    char err[256];
    model *m;
    cr_assert_eq(modelfile_load(h.model, game_default(), &m, err, sizeof err), 0, "%s", err);
    model_edit_meta(m)->created_ms += 1000;
    uint8_t *blob;
    size_t len;
    cr_assert_eq(modelfile_to_bytes(m, &blob, &len), 0);
    model_destroy(&m);
    cr_assert_eq(harness_submit_candidate(&h), 2);
    cr_assert(harness_wait_log(log, "self-play now with model 2 (was 1)", 30), "see %s", log);
    /* Step 2. The coordinator stops; one bit of model 2 flips on the disk. */
    harness_coord_kill(&h, SIGTERM);
    s_flip_blob_bit(&h, blob, len);
    free(blob);
    /* Step 3. It starts again: the damage is found, the best is model 1. */
    harness_coord_start(&h, NULL);
    cr_expect_eq(harness_count(h.coord_log, "THE BEST MODEL 2 IS DAMAGED: the best falls back "
                                            "to model 1"), 1, "see %s", h.coord_log);
    cr_expect_eq(harness_status_num(&h, "\"models\"", "best"), 1);
    cr_expect_eq(harness_status_num(&h, "\"models\"", "damaged_count"), 1);
    cr_expect_eq(harness_status_num(&h, "\"fallback\"", "from"), 2);
    cr_expect_eq(harness_status_num(&h, "\"fallback\"", "to"), 1);
    char hz[400];
    cr_expect_eq(harness_http(h.http_port, "/healthz", hz, sizeof hz), 200);
    cr_expect(strstr(hz, "degraded: 1 damaged model (the best 2 fell back to 1)"), "%s", hz);
    /* Step 4. The worker goes back to model 1 and its games keep coming. */
    cr_assert(harness_wait_log(log, "went back from model 2 to 1", 30), "see %s", log);
    double g0 = harness_status_num(&h, "\"replay\"", "games");
    cr_expect_geq(harness_wait_status(&h, "\"replay\"", "games", g0 + 2, 30), g0 + 2,
                  "the cluster does not play: see %s", log);
    /* Step 5. A model request for the damaged version says why. */
    cr_expect_eq(harness_count(log, "fails its checksum"), 0, "the worker got a bad blob");
    harness_signal(w, SIGTERM);
    int st;
    cr_assert(harness_wait(w, 30, &st), "the worker did not stop");
    harness_fini(&h);
}

/* A best the store does not hold (its model entry lost: a damaged copy, an
 * operator's slip): the coordinator starts anyway, falls back to the last
 * good best with a loud line, shows it in /status and /healthz, and the
 * worker plays on (issue 28, #2: such a store was refused before). */
Test(worker, a_best_the_store_lacks_falls_back_and_the_cluster_plays_on)
{
    harness h;
    char log[128];
    pid_t w = s_cluster_playing(&h, "wlost", log, sizeof log);
    /* The coordinator stops; the store's best now names model 5, which it lacks. */
    harness_coord_kill(&h, SIGTERM);
    char dir[160];
    snprintf(dir, sizeof dir, "%s/store", h.dir);
    store_options so;
    store_options_default(&so);
    store *st = NULL;
    cr_assert_eq(store_open(&st, dir, &so), 0);
    uint8_t five[8] = {5, 0, 0, 0, 0, 0, 0, 0};
    store_raw e = {"best", 4, five, sizeof five};
    cr_assert_eq(store_put_raw(st, "meta", &e, 1), 0);
    store_close(&st);
    /* It starts again: the loss is found, the best is model 1. */
    harness_coord_start(&h, NULL);
    cr_expect_eq(harness_count(h.coord_log, "THE BEST MODEL 5 IS MISSING from the store: the "
                                            "best falls back to model 1"), 1, "see %s",
                 h.coord_log);
    cr_expect_eq(harness_status_num(&h, "\"models\"", "best"), 1);
    cr_expect_eq(harness_status_num(&h, "\"fallback\"", "from"), 5);
    cr_expect_eq(harness_status_num(&h, "\"fallback\"", "to"), 1);
    char hz[400];
    cr_expect_eq(harness_http(h.http_port, "/healthz", hz, sizeof hz), 200);
    cr_expect(strstr(hz, "(the best 5 fell back to 1)"), "%s", hz);
    /* The store says model 1 too: a second start needs no fallback. */
    double g0 = harness_status_num(&h, "\"replay\"", "games");
    cr_expect_geq(harness_wait_status(&h, "\"replay\"", "games", g0 + 2, 30), g0 + 2,
                  "the cluster does not play: see %s", log);
    harness_coord_kill(&h, SIGTERM);
    harness_coord_start(&h, NULL);
    cr_expect_eq(harness_count(h.coord_log, "IS MISSING from the store"), 1, "see %s",
                 h.coord_log);
    cr_expect_eq(harness_status_num(&h, "\"models\"", "best"), 1);
    harness_signal(w, SIGTERM);
    int st2;
    cr_assert(harness_wait(w, 30, &st2), "the worker did not stop");
    harness_fini(&h);
}

/* The games held by the last progress line after `mark` in the log (-1 if none). */
static double s_pending_since(const char *log, const char *mark)
{
    char *text = harness_read(log);
    const char *p = strstr(text, mark), *last = NULL;
    for (p = p ? strstr(p, ", pending ") : NULL; p; p = strstr(p + 1, ", pending "))
        last = p;
    double v = last ? strtod(last + strlen(", pending "), NULL) : -1;
    free(text);
    return v;
}

Test(worker, second_sigterm_exits_at_once)
{
    harness h;
    harness_init(&h, "wsig");
    harness_coord_start(&h, NULL);
    char log[128];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    const char *extra[] = {"--parallel=2", "--drain_s=60", NULL};
    pid_t w = s_worker(&h, log, extra);
    cr_assert_geq(harness_wait_status(&h, "\"replay\"", "games", 1, 30), 1);
    /* Without a coordinator, finished games stay pending (a progress line
     * after the worker noticed says so). */
    harness_coord_kill(&h, SIGKILL);
    cr_assert(harness_wait_log(log, "coordinator not answering", 10), "see %s", log);
    double end = time_now() + 30;
    while (!(s_pending_since(log, "coordinator not answering") >= 1) && time_now() < end)
        harness_sleep(0.02);
    cr_assert_geq(s_pending_since(log, "coordinator not answering"), 1, "no game held: %s", log);
    /* First SIGTERM: the moves in hand, then a (long) wait for acks. */
    harness_signal(w, SIGTERM);
    cr_assert(harness_wait_log(log, "waiting up to 60 s for", 10), "see %s", log);
    int st;
    cr_assert_not(harness_wait(w, 0.3, &st), "the worker did not wait for its acks");
    /* Second SIGTERM: gone at once, by the signal. */
    double t0 = time_now();
    harness_signal(w, SIGTERM);
    cr_assert(harness_wait(w, 5, &st), "the second SIGTERM did not end the worker");
    cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
    cr_expect_lt(time_now() - t0, 2.0);
    cr_expect_eq(harness_count(log, "exit: games"), 0);
    harness_fini(&h);
}

/* Issue 25: a worker inside an anchor's long move (here uct with 10 million
 * playouts, a calibration game random against it) went silent past the
 * heartbeat expiry ("client ... gone") and did not stop on SIGTERM until the
 * move ended (minutes). The baseline player's tick keeps the heartbeats
 * going and gives the move up at a stop: the worker stays live and exits at
 * once, cleanly. */
Test(worker, a_deep_anchor_move_keeps_it_live_and_gives_way_to_a_stop)
{
    harness h;
    harness_init(&h, "wdeep");
    const char *cargs[] = {"--anchors=random,uct:10000000", "--eval_share=1",
                           "--heartbeat_ms=200", "--expiry_ms=3000", NULL};
    harness_coord_start(&h, cargs);
    char log[128];
    snprintf(log, sizeof log, "%s/worker.log", h.dir);
    const char *extra[] = {"--parallel=2", "--heartbeat_ms=200", NULL};
    pid_t w = s_worker(&h, log, extra);
    cr_assert(harness_wait_log(log, "playing random against uct:10000000", 60),
              "no calibration game against the deep anchor: see %s", log);
    harness_sleep(7); /* more than twice the expiry, inside the deep move */
    cr_assert_eq(harness_count(h.coord_log, " gone (silent"), 0,
                 "the worker went silent during the move: see %s", h.coord_log);
    double t0 = time_now();
    harness_signal(w, SIGTERM);
    int st;
    cr_assert(harness_wait(w, 20, &st), "SIGTERM did not end the worker during the move");
    cr_expect_lt(time_now() - t0, 15.0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    cr_assert_eq(harness_count(log, "exit: games"), 1, "no clean exit line: see %s", log);
    harness_fini(&h);
}
