/* kz solve: the proof search (solve/pns.h), its certificates and their
 * verifier (solve/certificate.h) from the command line; docs/solve.md. */
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "games/game.h"
#include "games/khreibaga.h"
#include "games/tablebase.h"
#include "play/match.h"
#include "search/player.h"
#include "solve/certificate.h"
#include "solve/pns.h"
#include "tools/kz/kz.h"

typedef struct solve_opts {
    char position[CONFIG_STR_MAX]; /* the root (R20) */
    int side;                      /* X: 0 black, 1 white */
    char tables[CONFIG_STR_MAX];   /* the tables' directory ("": none) */
    long pieces;                   /* load tables up to this many pieces (0: all) */
    char tt[CONFIG_STR_MAX];       /* the transposition table file ("": memory) */
    long tt_mb;                    /* its size when created */
    char cert[CONFIG_STR_MAX];     /* where the certificate goes ("": nowhere) */
    long nodes;                    /* budget: expansions (0: none) */
    double seconds;                /* budget: wall-clock seconds (0: none) */
    double progress;               /* seconds between progress lines */
    bool verify_tables;            /* verify: tb_verify_class every class first */
    int book;                      /* book: 0 coordinator, 1 learning */
    long openings;                 /* book: how many (0: the book's size) */
    char cert_dir[CONFIG_STR_MAX]; /* book: write each answer's certificate here ("": none) */
    long positions;                /* accuracy: positions */
    long sims;                     /* accuracy: the search's simulations */
} solve_opts;

#define O(f) offsetof(solve_opts, f)
static const config_option s_rows[] = {
    {"position", CONFIG_STRING, KH_START, 0, 0, O(position),
     "the root position (R20, a turn start)"},
    {"side", CONFIG_CHOICE, "black|white", 0, 0, O(side), "X of the claim \"X does not lose\""},
    {"tables", CONFIG_STRING, "./var/tb", 0, 0, O(tables),
     "the endgame tables' directory (kz tb build; \"\": none)"},
    {"pieces", CONFIG_INT, "0", 0, TB_MAX_PIECES, O(pieces),
     "load tables up to this many pieces (0: all)"},
    {"tt", CONFIG_STRING, "", 0, 0, O(tt),
     "the transposition table file (created if missing, resumed if there; \"\": in memory)"},
    {"tt_mb", CONFIG_INT, "1024", 1, 1 << 20, O(tt_mb),
     "the transposition table's size when created"},
    {"cert", CONFIG_STRING, "", 0, 0, O(cert), "write the certificate of a proof here"},
    {"nodes", CONFIG_INT, "0", 0, 1e18, O(nodes), "stop after this many expansions (0: no limit)"},
    {"seconds", CONFIG_DOUBLE, "0", 0, 1e9, O(seconds), "stop after this long (0: no limit)"},
    {"progress", CONFIG_DOUBLE, "10", 0.1, 1e6, O(progress), "seconds between progress lines"},
    {"verify_tables", CONFIG_BOOL, "false", 0, 0, O(verify_tables),
     "verify: check every loaded table class against the rules first (slow)"},
    {"book", CONFIG_CHOICE, "coordinator|learning", 0, 0, O(book),
     "book: the coordinator's (500 openings, seed 1) or bench_learning's (50, seed 20261124)"},
    {"openings", CONFIG_INT, "0", 0, 100000, O(openings), "book: the first N openings (0: all)"},
    {"cert_dir", CONFIG_STRING, "", 0, 0, O(cert_dir),
     "book: write the certificate of each answer into this directory (NNN-black.txt, "
     "NNN-white.txt: the claim \"X does not lose\", or the opponent's win)"},
    {"positions", CONFIG_INT, "20", 1, 500, O(positions),
     "accuracy: positions (the coordinator's book's openings, in order)"},
    {"sims", CONFIG_INT, "100", 1, 100000, O(sims), "accuracy: the mcts player's simulations"},
};
#undef O
#define N_ROWS (sizeof s_rows / sizeof s_rows[0])

static const char s_usage[] =
    "usage: kz solve [--position P] [--side black|white] [--tables D] [--tt FILE] [--cert C]\n"
    "                [--nodes N] [--seconds S]\n"
    "       kz solve verify FILE... [--tables D] [--verify_tables]\n"
    "       kz solve book [--book coordinator|learning] [--openings N] [--seconds S]\n"
    "                     [--cert_dir D] ...\n"
    "       kz solve accuracy MODEL [--positions N] [--sims S] [--nodes B]\n\n"
    "Proves \"X does not lose from P\" by a df-pn proof search over whole turns down to\n"
    "the endgame tables (docs/solve.md). The transposition table can live in a file\n"
    "(--tt): a run stopped (budget, Ctrl-C, SIGTERM) resumes from it. A proof is\n"
    "accepted only as a closed set of positions; --cert writes it as a certificate,\n"
    "which `kz solve verify` re-checks with the naive reference rules and the tables\n"
    "(exit 0: it holds; 1: the first bad line is named). `book` tries both claims on\n"
    "each opening of a book, --seconds each. Prints \"result: proven|disproven|open\".\n"
    "`accuracy` values every whole turn of N book openings with the search (--nodes\n"
    "each, default 1000000) and counts the turns of policy:MODEL and mcts:MODEL:S\n"
    "that keep the position's proven value (MODEL may be `uniform`).\n";

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile int s_stop;
static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static void s_progress(const pns_progress *p, void *arg)
{
    const char *what = arg;
    fprintf(stderr, "solve %s: root pn %" PRIu32 " dn %" PRIu32 ", %" PRIu64
            " nodes, %.0f nodes/s, %" PRIu64 " entries stored, %d repairs, %.0f s\n",
            what, p->root_pn, p->root_dn, p->nodes, p->seconds > 0 ? p->nodes / p->seconds : 0,
            p->used, p->repairs, p->seconds);
}

static int s_tables(const solve_opts *o, tb_set **t)
{
    *t = NULL;
    if (!o->tables[0])
        return 0;
    struct stat sb;
    if (!strcmp(o->tables, "./var/tb") && stat(o->tables, &sb) != 0) {
        /* The default directory, never built: go on without tables (a
         * certificate with table leaves then fails at its first one). */
        fprintf(stderr, "kz solve: no tables in ./var/tb (make tb builds them); going on "
                        "without\n");
        return 0;
    }
    char err[512];
    *t = tb_open(o->tables, (int)o->pieces, err, sizeof err);
    if (!*t) {
        fprintf(stderr, "kz solve: %s\n", err);
        return 1;
    }
    return 0;
}

/* One claim from one root: search, then the certificate. */
static int s_one(const solve_opts *o, const tb_set *t, pns_tt *tt, const pns_pos *root, int side,
                 double seconds, const char *cert, int *outcome)
{
    char label[64], pos[32];
    pns_pos_format(root, pos, sizeof pos);
    snprintf(label, sizeof label, "%s-not-lose", side ? "white" : "black");
    pns_opts po = {.claim = side, .tables = t, .max_nodes = (uint64_t)o->nodes,
                   .max_seconds = seconds, .stop = &s_stop, .progress = s_progress,
                   .progress_seconds = o->progress, .arg = label};
    double c0 = cpu_seconds();
    int rc = pns_solve(tt, root, &po, outcome);
    if (rc) {
        fprintf(stderr, "kz solve: %s\n", err_str(rc));
        return 2;
    }
    static const char *names[] = {"open", "proven", "disproven"};
    printf("%s %s: %s (%.1f s CPU)\n", pos, label, names[*outcome], cpu_seconds() - c0);
    if (*outcome != PNS_OPEN && cert && *cert) {
        char tmp[CONFIG_STR_MAX + 8];
        snprintf(tmp, sizeof tmp, "%s.tmp", cert);
        FILE *f = fopen(tmp, "w");
        if (!f) {
            fprintf(stderr, "kz solve: %s: cannot write\n", tmp);
            return 1;
        }
        pns_cert_stats cs;
        rc = *outcome == PNS_PROVEN ? pns_extract(tt, root, &po, f, &cs)
                                    : pns_extract_win(tt, root, &po, f, &cs);
        if (fclose(f) || rc || rename(tmp, cert)) {
            fprintf(stderr, "kz solve: %s: %s\n", cert, rc ? err_str(rc) : "cannot write");
            unlink(tmp);
            return 1;
        }
        printf("certificate %s (%s): %" PRIu64 " nodes (%" PRIu64 " X to move, %" PRIu64
               " the opponent), %" PRIu64 " table leaves, %" PRIu64 " R12 leaves, %" PRIu64
               " bytes\n", cert,
               *outcome == PNS_PROVEN ? label : side ? "black-wins" : "white-wins",
               cs.nodes, cs.or_nodes, cs.and_nodes, cs.table_leaves,
               cs.end_leaves, cs.bytes);
    }
    return 0;
}

static void s_stats_line(pns_tt *tt)
{
    pns_stats st;
    pns_tt_stats(tt, &st);
    printf("table: %" PRIu64 " of %" PRIu64 " entries used (%" PRIu64 " proven, %" PRIu64
           " disproven, %" PRIu64 " damaged); this run: %" PRIu64 " nodes in %.1f s (%.0f/s), %"
           PRIu64 " table probes, %" PRIu64 " nodes reopened\n",
           st.used, st.entries, st.proven, st.disproven, st.damaged, st.nodes, st.seconds,
           st.seconds > 0 ? st.nodes / st.seconds : 0, st.probes, st.repairs);
}

static int s_search(const solve_opts *o)
{
    pns_pos root;
    char err[512];
    if (pns_pos_parse(o->position, &root, err, sizeof err))
        return kz_usage_error("solve: bad --position: %s", err);
    tb_set *t;
    if (s_tables(o, &t))
        return 1;
    pns_tt *tt = pns_tt_open(o->tt, (uint64_t)o->tt_mb << 20, err, sizeof err);
    if (!tt) {
        fprintf(stderr, "kz solve: %s\n", err);
        tb_close(&t);
        return 1;
    }
    int outcome;
    int rc = s_one(o, t, tt, &root, o->side, o->seconds, o->cert, &outcome);
    s_stats_line(tt);
    pns_tt_close(&tt);
    tb_close(&t);
    return rc;
}

static int s_book(const solve_opts *o)
{
    int n = o->book ? 50 : 500;
    uint64_t seed = o->book ? 20261124 : 1;
    game_state *st = xcalloc((size_t)n, sizeof *st);
    int rc = match_openings(&khreibaga_game, n, 0, seed, st);
    if (rc) {
        free(st);
        fprintf(stderr, "kz solve: cannot make the book: %s\n", err_str(rc));
        return 1;
    }
    if (o->openings && o->openings < n)
        n = (int)o->openings;
    tb_set *t;
    char err[512];
    if (s_tables(o, &t)) {
        free(st);
        return 1;
    }
    pns_tt *tt = pns_tt_open(o->tt, (uint64_t)o->tt_mb << 20, err, sizeof err);
    if (!tt) {
        fprintf(stderr, "kz solve: %s\n", err);
        free(st);
        tb_close(&t);
        return 1;
    }
    int tally[3][3] = {{0}};
    for (int i = 0; i < n && !s_stop && !rc; i++) {
        pns_pos root;
        pns_pos_from_state(&st[i], &root);
        int out[2];
        for (int side = 0; side < 2 && !rc; side++) {
            char cert[CONFIG_STR_MAX + 32] = "";
            if (o->cert_dir[0])
                snprintf(cert, sizeof cert, "%s/%03d-%s.txt", o->cert_dir, i,
                         side ? "white" : "black");
            rc = s_one(o, t, tt, &root, side, o->seconds, cert, &out[side]);
        }
        if (!rc)
            tally[out[0]][out[1]]++;
    }
    printf("book %s, %d openings: both proven (draw) %d; Black does not lose only %d; "
           "White does not lose only %d; Black proven, White disproven (Black wins in G-inf) "
           "%d; White proven, Black disproven %d; the rest open %d\n",
           o->book ? "learning" : "coordinator", n, tally[1][1], tally[1][0], tally[0][1],
           tally[1][2], tally[2][1], n - tally[1][1] - tally[1][0] - tally[0][1] - tally[1][2] -
           tally[2][1]);
    s_stats_line(tt);
    pns_tt_close(&tt);
    tb_close(&t);
    free(st);
    return rc;
}

static int s_verify(const solve_opts *o, int nfiles, const char **files)
{
    tb_set *t;
    if (s_tables(o, &t))
        return 1;
    char err[512];
    if (o->verify_tables && t) {
        for (int i = 0; i < tb_class_count(t); i++) {
            if (tb_verify_class(t, i, 0, err, sizeof err)) {
                fprintf(stderr, "kz solve verify: tables: %s\n", err);
                tb_close(&t);
                return 1;
            }
        }
        printf("tables: %d classes verified against the rules\n", tb_class_count(t));
    }
    int worst = 0;
    for (int i = 0; i < nfiles; i++) {
        cert_report r;
        double c0 = cpu_seconds();
        int rc = cert_verify(files[i], t, &r, err, sizeof err);
        if (rc) {
            fprintf(stderr, "kz solve verify: %s\n", err);
            int code = rc == KZ_EINVAL ? 2 : 1;
            worst = code > worst ? code : worst;
            continue;
        }
        printf("verified: %s %s from %s: %" PRIu64 " nodes (%" PRIu64 " X to move, %"
               PRIu64 " the opponent), %" PRIu64 " turns checked by the reference rules, %" PRIu64
               " table leaves (tables up to %d pieces trusted), %" PRIu64 " R12 leaves, %" PRIu64
               " bytes, %.1f s CPU\n", r.claim ? "White" : "Black",
               r.win ? "wins" : "does not lose", r.root, r.nodes, r.or_nodes,
               r.and_nodes, r.turns, r.table_leaves, r.tables, r.end_leaves, r.bytes,
               cpu_seconds() - c0);
        if (r.win)
            printf("win: no cycle; highest no-progress count at a node %u (R13: < 50, and "
                   "c + d <= 50 at every table leaf); the longest game %" PRIu64 " plies with "
                   "the tables' lines (R15: <= 300)\n", r.max_count, r.longest);
    }
    tb_close(&t);
    return worst;
}

static bool s_pos_equal(const pns_pos *a, const pns_pos *b)
{
    return a->black == b->black && a->white == b->white && a->kings == b->kings &&
           a->side == b->side;
}

/* A whole turn's value for the mover me: 2 win, 1 draw, 0 loss, -1 unknown. */
static int s_turn_value(pns_tt *tt, const pns_pos *to, int me, uint64_t nodes)
{
    game_state s;
    khreibaga_set(&s, to->black, to->white, to->kings, (int)to->side);
    game_result r = khreibaga_game.result(&s);
    if (r.over)
        return r.winner == me ? 2 : r.winner < 0 ? 1 : 0;
    int out[2] = {PNS_OPEN, PNS_OPEN};
    for (int k = 0; k < 2; k++) {
        pns_opts po = {.claim = k ? me : 1 - me, .max_nodes = nodes, .stop = &s_stop};
        if (pns_solve(tt, to, &po, &out[k]) != 0)
            return -1;
        if (k == 0 && out[0] == PNS_DISPROVEN)
            return 2;
    }
    return out[1] == PNS_PROVEN ? (out[0] == PNS_PROVEN ? 1 : -1)
                                : out[1] == PNS_DISPROVEN ? 0 : -1;
}

/* Plays p's whole turn from s; the position it reaches. */
static int s_player_turn(player *p, const game_state *s0, pns_pos *to)
{
    game_state s;
    khreibaga_game.copy(&s, s0);
    int me = khreibaga_game.to_move(&s);
    player_new_game(p, 1);
    while (!khreibaga_game.result(&s).over && khreibaga_game.to_move(&s) == me) {
        int a;
        int rc = player_choose(p, &s, &a, NULL);
        if (rc)
            return rc;
        khreibaga_game.apply(&s, a);
        if (!khreibaga_game.mid_turn(&s))
            break;
    }
    return pns_pos_from_state(&s, to);
}

static int s_accuracy(const solve_opts *o, const char *model)
{
    int n = (int)o->positions;
    game_state *st = xcalloc(500, sizeof *st);
    int rc = match_openings(&khreibaga_game, 500, 0, 1, st);
    char err[512], spec[PLAYER_SPEC_MAX];
    player *pl[2] = {NULL, NULL};
    snprintf(spec, sizeof spec, "policy:%s", model);
    pl[0] = rc ? NULL : player_from_spec(&khreibaga_game, spec, err, sizeof err);
    snprintf(spec, sizeof spec, "mcts:%s:%ld", model, o->sims);
    pl[1] = pl[0] ? player_from_spec(&khreibaga_game, spec, err, sizeof err) : NULL;
    pns_tt *tt = pl[1] ? pns_tt_open(o->tt, (uint64_t)o->tt_mb << 20, err, sizeof err) : NULL;
    if (!tt) {
        fprintf(stderr, "kz solve accuracy: %s\n", rc ? err_str(rc) : err);
        player_destroy(&pl[0]);
        player_destroy(&pl[1]);
        free(st);
        return 1;
    }
    uint64_t nodes = o->nodes ? (uint64_t)o->nodes : 1000000;
    int decided = 0, keep[2] = {0, 0}, choice = 0;
    static pns_turn turns[PNS_MAX_TURNS];
    for (int i = 0; i < n && !s_stop && !rc; i++) {
        pns_pos root;
        pns_pos_from_state(&st[i], &root);
        int nt = pns_turns(&root, turns), best = -1, known = 1;
        int val[PNS_MAX_TURNS];
        for (int k = 0; k < nt; k++) {
            val[k] = s_turn_value(tt, &turns[k].to, (int)root.side, nodes);
            known &= val[k] >= 0;
            best = val[k] > best ? val[k] : best;
        }
        if (!known || nt == 0)
            continue;
        decided++;
        bool all_keep = true;
        for (int k = 0; k < nt; k++)
            all_keep &= val[k] == best;
        choice += !all_keep;
        for (int w = 0; w < 2 && !rc; w++) {
            pns_pos to;
            rc = s_player_turn(pl[w], &st[i], &to);
            for (int k = 0; k < nt && !rc; k++)
                if (s_pos_equal(&turns[k].to, &to))
                    keep[w] += val[k] == best;
        }
    }
    if (!rc) {
        printf("positions: %d (%d with every turn decided, %d of them with a value-losing "
               "turn)\n", n, decided, choice);
        for (int w = 0; w < 2; w++)
            printf("%s: %d of %d turns keep the proven value (%.1f%%)\n", player_name(pl[w]),
                   keep[w], decided, decided ? 100.0 * keep[w] / decided : 0.0);
    } else {
        fprintf(stderr, "kz solve accuracy: %s\n", err_str(rc));
    }
    pns_tt_close(&tt);
    player_destroy(&pl[0]);
    player_destroy(&pl[1]);
    free(st);
    return rc ? 1 : 0;
}

int cmd_solve(int argc, char **argv)
{
    const char *sub = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
    if (*sub && strcmp(sub, "verify") && strcmp(sub, "book") && strcmp(sub, "accuracy"))
        return kz_usage_error("solve: unknown subcommand '%s' (verify, book, accuracy, or flags)",
                              sub);
    solve_opts o;
    const char *words[argc + 1];
    size_t nw;
    int skip = *sub ? 1 : 0;
    int rc = kz_parse_args(*sub ? (!strcmp(sub, "verify")  ? "solve verify"
                                   : !strcmp(sub, "book") ? "solve book"
                                                          : "solve accuracy")
                                : "solve",
                           s_usage, s_rows, N_ROWS, &o, argc - skip, argv + skip, words,
                           (size_t)argc, &nw);
    if (rc >= 0)
        return rc;
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
    if (!strcmp(sub, "verify")) {
        if (nw < 1)
            return kz_usage_error("solve verify: give certificate files (see kz solve --help)");
        return s_verify(&o, (int)nw, words);
    }
    if (!strcmp(sub, "accuracy")) {
        if (nw != 1)
            return kz_usage_error("solve accuracy: give one MODEL (a model file or uniform)");
        return s_accuracy(&o, words[0]);
    }
    if (nw > 0)
        return kz_usage_error("solve: unexpected argument '%s' (see kz solve --help)", words[0]);
    if (!strcmp(sub, "book"))
        return s_book(&o);
    return s_search(&o);
}
