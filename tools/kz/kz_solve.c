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
#include "data/record.h"
#include "data/store.h"
#include "play/match.h"
#include "play/referee.h"
#include "play/yardstick.h"
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
    int book;                      /* book: 0 coordinator, 1 learning, 2 seeded */
    long openings;                 /* book: how many (0: the book's size) */
    char cert_dir[CONFIG_STR_MAX]; /* book: write each answer's certificate here ("": none) */
    char out[CONFIG_STR_MAX];      /* book: write the openings proven drawn here ("": none) */
    long positions;                /* accuracy: positions */
    long sims;                     /* accuracy: the search's simulations */
    char players[CONFIG_STR_MAX];  /* accuracy: more players (specs joined by commas) */
    char records[CONFIG_STR_MAX];  /* referee, accuracy: a record file */
    char store[CONFIG_STR_MAX];    /* referee, accuracy: a coordinator's store directory */
    int kind;                      /* --store: selfplay, rating, arena or any */
    long model;                    /* --store: games of this model version (0: any) */
    long games;                    /* referee, accuracy: games at most (0: the source's default) */
    char match[CONFIG_STR_MAX];    /* referee, accuracy: play A,B as kz match does */
    char match_book[CONFIG_STR_MAX]; /* --match: the openings from this book file ("": random) */
    int match_tables;              /* referee --match: tables for 0 none, 1 A, 2 B, 3 both */
    long seed;                     /* the match's seed; accuracy: the draw of positions */
    bool quiet;                    /* referee: no line per game */
    bool fresh;                    /* referee: every position at count 0 (the old judging) */
} solve_opts;

#define CONFIG_STRUCT solve_opts
static const config_option s_rows[] = {
    CONFIG_ROW_STRING(position, KH_START, "the root position (R20, a turn start)"),
    CONFIG_ROW_CHOICE(side, "black|white", "X of the claim \"X does not lose\""),
    CONFIG_ROW_STRING(tables, "./var/tb",
                      "the endgame tables' directory (kz tb build; \"\": none)"),
    CONFIG_ROW_INT(pieces, "0", 0, TB_MAX_PIECES, "load tables up to this many pieces (0: all)"),
    CONFIG_ROW_STRING(tt, "",
                      "the transposition table file (created if missing, resumed if there; \"\": "
                      "in memory)"),
    CONFIG_ROW_INT(tt_mb, "256", 1, 1 << 20, "the transposition table's size when created"),
    CONFIG_ROW_STRING(cert, "", "write the certificate of a proof here"),
    CONFIG_ROW_INT(nodes, "0", 0, 1e18,
                   "stop after this many expansions (0: no limit); referee, accuracy: a "
                   "position's budget (0: 200000)"),
    CONFIG_ROW_DOUBLE(seconds, "0", 0, 1e9,
                      "stop after this long (0: no limit); book: each claim; referee, accuracy: "
                      "each position"),
    CONFIG_ROW_DOUBLE(progress, "10", 0.1, 1e6, "seconds between progress lines"),
    CONFIG_ROW_BOOL(verify_tables, "false",
                    "verify: check every loaded table class against the rules first (slow)"),
    CONFIG_ROW_CHOICE(book, "coordinator|learning|seeded",
                      "book: the coordinator's (500 openings, seed 1), bench_learning's (50, "
                      "seed 20261124) or --openings N of match_openings from --seed"),
    CONFIG_ROW_INT(openings, "0", 0, 100000,
                   "book: the first N openings (0: all); --match: distinct openings (0: games / "
                   "2)"),
    CONFIG_ROW_STRING(cert_dir, "",
                      "book: write the certificate of each answer into this directory "
                      "(NNN-black.txt, NNN-white.txt: the claim \"X does not lose\", or the "
                      "opponent's win)"),
    CONFIG_ROW_STRING(out, "",
                      "book: write the openings proven drawn (both claims proven) to this book "
                      "file, for --match_book and --book of kz match, kz yardstick and "
                      "bench_learning"),
    CONFIG_ROW_INT(positions, "20", 1, 1000000,
                   "accuracy: positions (the book's first N openings, at most 500, or N turn "
                   "starts of the games given)"),
    CONFIG_ROW_INT(sims, "100", 1, 100000, "accuracy: the mcts player's simulations"),
    CONFIG_ROW_STRING(players, "",
                      "accuracy: more players to measure, specs joined by commas "
                      "(alphabeta:4,perfect)"),
    CONFIG_ROW_STRING(records, "",
                      "referee, accuracy: the games of this record file (kz selfplay --out)"),
    CONFIG_ROW_STRING(store, "",
                      "referee, accuracy: the newest --games games of this coordinator store "
                      "(read only)"),
    CONFIG_ROW_CHOICE(kind, "selfplay|rating|arena|any", "--store: the kind of game"),
    CONFIG_ROW_INT(model, "0", 0, 4294967295.0,
                   "--store: only games of this model version (0: any)"),
    CONFIG_ROW_INT(games, "0", 0, 10000000,
                   "referee, accuracy: games at most (0: all of a file, 100 of a store, 20 of a "
                   "match)"),
    CONFIG_ROW_STRING(match, "",
                      "referee, accuracy: A,B: play kz match A B (--games, --openings, --seed) "
                      "and judge it"),
    CONFIG_ROW_STRING(match_book, "",
                      "--match: the openings from this book file (kz yardstick book), its first "
                      "--openings; \"\" = random ones from --seed; book: the candidates"),
    CONFIG_ROW_CHOICE(match_tables, "none|a|b|both",
                      "referee --match: give --tables to the searches of A, B or both (as kz "
                      "match --tb_dir); the judge has them either way"),
    CONFIG_ROW_INT(seed, "1", 0, 9007199254740991,
                   "--match: the match's seed; accuracy: the draw of positions from games"),
    CONFIG_ROW_BOOL(quiet, "false", "referee: only the summary"),
    CONFIG_ROW_BOOL(fresh, "false",
                    "referee: value the tables' positions at no-progress count 0 (as before the "
                    "count was kept; default: at the game's own count, R13)"),
};
#undef CONFIG_STRUCT
#define N_ROWS (sizeof s_rows / sizeof s_rows[0])

static const char s_usage[] =
    "usage: kz solve [--position P] [--side black|white] [--tables D] [--tt FILE] [--cert C]\n"
    "                [--nodes N] [--seconds S]\n"
    "       kz solve verify FILE... [--tables D] [--verify_tables]\n"
    "       kz solve book [--book coordinator|learning|seeded] [--openings N] [--seed S]\n"
    "                     [--seconds S] [--cert_dir D] [--out F] ...\n"
    "       kz solve accuracy [MODEL] [--players A,B] [--positions N] [--sims S] [--nodes B]\n"
    "                         [--seconds S] [--records F | --store D | --match A,B]\n"
    "       kz solve referee [FILE...] [--records F] [--store D [--kind K] [--model V]]\n"
    "                        [--match A,B [--match_book F] [--match_tables a|b|both]]\n"
    "                        [--games N] [--nodes B]\n"
    "                        [--seconds S] [--quiet] [--fresh]\n\n"
    "Proves \"X does not lose from P\" by a df-pn proof search over whole turns down to\n"
    "the endgame tables (docs/solve.md). The transposition table can live in a file\n"
    "(--tt): a run stopped (budget, Ctrl-C, SIGTERM) resumes from it. A proof is\n"
    "accepted only as a closed set of positions; --cert writes it as a certificate,\n"
    "which `kz solve verify` re-checks with the naive reference rules and the tables\n"
    "(exit 0: it holds; 1: the first bad line is named). `book` tries both claims on\n"
    "each opening of a book, --seconds each; --out keeps the drawn ones as a book of\n"
    "openings balanced under perfect play. Prints \"result: proven|disproven|open\".\n"
    "`accuracy` values N positions (the coordinator's book's openings, or turn starts\n"
    "drawn from the games given) with the search, at most --nodes expansions (default\n"
    "200000) and --seconds a position, and counts the turns of policy:MODEL,\n"
    "mcts:MODEL:S and the --players that keep the position's proven value (MODEL may\n"
    "be `uniform`). `referee` judges every whole turn of the games given (record\n"
    "files, a store's newest games, or a match it plays as kz match does): whether it\n"
    "lost the proven value (win to draw or loss, draw to loss), by phase, side and\n"
    "player, within the same budget a position; what the budget leaves open is\n"
    "counted as unknown, never guessed (docs/solve.md, \"The referee\").\n";

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
    static const char *const names[] = {"coordinator", "learning", "seeded"};
    int n, rc = 0;
    uint64_t seed = o->book == 2 ? (uint64_t)o->seed : o->book ? 20261124 : 1;
    char from[CONFIG_STR_MAX + 64];
    game_state *st;
    if (o->match_book[0]) { /* the candidates from a book file */
        if (kz_read_book("solve book", &khreibaga_game, o->match_book, &st, &n))
            return 2;
        snprintf(from, sizeof from, "the book file %s", o->match_book);
    } else {
        if (o->book == 2 && !o->openings)
            return kz_usage_error("solve book: --book seeded needs --openings N (the candidates)");
        n = o->book == 2 ? (int)o->openings : o->book ? 50 : 500;
        st = xcalloc((size_t)n, sizeof *st);
        rc = match_openings(&khreibaga_game, n, 0, seed, st);
        if (rc) {
            free(st);
            fprintf(stderr, "kz solve: cannot make the book: %s\n", err_str(rc));
            return 1;
        }
        snprintf(from, sizeof from, "book %s, seed %llu", names[o->book],
                 (unsigned long long)seed);
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
    int tally[3][3] = {{0}}, n_drawn = 0, done = 0;
    game_state *drawn = xcalloc((size_t)n, sizeof *drawn);
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
        if (!rc) {
            tally[out[0]][out[1]]++;
            done++;
            if (out[0] == PNS_PROVEN && out[1] == PNS_PROVEN)
                drawn[n_drawn++] = st[i];
        }
    }
    printf("%s, %d openings: both proven (draw) %d; Black does not lose only %d; "
           "White does not lose only %d; Black proven, White disproven (Black wins in G-inf) "
           "%d; White proven, Black disproven %d; the rest open %d\n",
           from, n, tally[1][1], tally[1][0], tally[0][1], tally[1][2], tally[2][1],
           n - tally[1][1] - tally[1][0] - tally[0][1] - tally[1][2] - tally[2][1]);
    if (!rc && o->out[0]) {
        char header[1024];
        snprintf(header, sizeof header,
                 "Openings of khreibaga balanced under perfect play (kz solve book): of %d "
                 "candidates (%s), the %d where both \"Black does not lose\"\n"
                 "and \"White does not lose\" are proven (down to the tables of %s, %.0f s a "
                 "claim at most; %d not reached).",
                 n, from, n_drawn,
                 o->tables[0] ? o->tables : "none", o->seconds, n - done);
        if (yard_write(&khreibaga_game, o->out, header, drawn, NULL, n_drawn)) {
            fprintf(stderr, "kz solve: book: cannot write %s\n", o->out);
            rc = 1;
        } else {
            printf("wrote %d drawn openings to %s\n", n_drawn, o->out);
        }
    }
    free(drawn);
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

/* ---- referee and accuracy: games from record files, a store, or a match ---------------- */

#define REF_MAX_WHO 64 /* named players a report keeps apart (the rest: "others") */

/* One game to judge, from any source. */
typedef struct ref_game {
    game_state start;      /* where it starts (a turn start) */
    uint16_t *actions;     /* (cap) one action a hop */
    int n, cap;            /* actions, capacity */
    char who[2][48];       /* who played Black (0) and White (1) */
    char label[96];        /* where it came from */
} ref_game;

/* A named player's sums. */
typedef struct ref_who {
    char name[48];
    referee_tally t;
} ref_who;

/* What a referee or accuracy run carries along. */
typedef struct ref_run {
    const solve_opts *o;
    referee *r;              /* referee: the judge; NULL when only collecting */
    referee_tally all;       /* every game */
    ref_who who[REF_MAX_WHO + 1]; /* by player; the last one "others" */
    int nwho;
    long games, skipped;     /* judged; skipped (invalid records, another game) */
    game_state *pos;         /* accuracy: turn starts collected (cap) */
    int npos, cappos;
    ref_game cur;            /* match: the game being played */
    int cur_index;           /* its index (-1 none) */
    char match_names[2][48]; /* match: A's and B's names */
    const tb_set *tables;    /* referee: the judge's tables (borrowed; NULL: none) */
    int rc;                  /* an error met inside a callback */
    double t0;               /* when the run started */
} ref_run;

static void *s_realloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    KZ_CHECK(q != NULL);
    return q;
}

static void s_game_push(ref_game *g, int action)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->actions = s_realloc(g->actions, (size_t)g->cap * sizeof *g->actions);
    }
    g->actions[g->n++] = (uint16_t)action;
}

static const char *s_value_name(referee_value v, int mover)
{
    static const char *const names[2][3] = {{"White wins", "draw", "Black wins"},
                                            {"Black wins", "draw", "White wins"}};
    if (v.lo != v.hi)
        return v.hi <= 0 ? (mover ? "Black does not lose" : "White does not lose")
               : v.lo >= 0 ? (mover ? "White does not lose" : "Black does not lose")
                           : "unknown";
    return names[mover][v.lo + 1];
}

static referee_tally *s_who(ref_run *c, const char *name)
{
    for (int i = 0; i < c->nwho; i++)
        if (!strcmp(c->who[i].name, name))
            return &c->who[i].t;
    if (c->nwho == REF_MAX_WHO) {
        snprintf(c->who[REF_MAX_WHO].name, sizeof c->who[0].name, "(others)");
        return &c->who[REF_MAX_WHO].t;
    }
    snprintf(c->who[c->nwho].name, sizeof c->who[0].name, "%s", name);
    return &c->who[c->nwho++].t;
}

/* Accuracy: keeps the game's turn starts (not over) as candidate positions. */
static void s_collect(ref_run *c, const ref_game *g)
{
    const game_def *kg = &khreibaga_game;
    game_state s = g->start;
    for (int i = 0; i <= g->n; i++) {
        if (!kg->mid_turn(&s) && !kg->result(&s).over) {
            if (c->npos == c->cappos) {
                c->cappos = c->cappos ? 2 * c->cappos : 1024;
                c->pos = s_realloc(c->pos, (size_t)c->cappos * sizeof *c->pos);
            }
            c->pos[c->npos++] = s;
        }
        if (i < g->n)
            kg->apply(&s, g->actions[i]);
    }
}

/* Judges one game, prints its line, adds it to the sums. 0, or 1 on an error. */
static int s_judge(ref_run *c, ref_game *g)
{
    if (!c->r) {
        s_collect(c, g);
        c->games++;
        return 0;
    }
    referee_game rg;
    int rc = referee_game_judge(c->r, &g->start, g->actions, g->n, &rg);
    if (rc) {
        fprintf(stderr, "kz solve referee: %s: %s\n", g->label,
                rc == KZ_EFULL ? "more turns than the referee judges" : err_str(rc));
        c->skipped++;
        return 0;
    }
    c->games++;
    referee_tally_add(&c->all, &rg, 3);
    if (!strcmp(g->who[0], g->who[1])) {
        referee_tally_add(s_who(c, g->who[0]), &rg, 3);
    } else {
        referee_tally_add(s_who(c, g->who[0]), &rg, 1);
        referee_tally_add(s_who(c, g->who[1]), &rg, 2);
    }
    if (c->o->quiet) {
        /* Progress on stderr: a line every 10 games. */
        if (c->games % 10 == 0) {
            referee_work w;
            referee_get_work(c->r, &w);
            fprintf(stderr, "referee: %ld games, %ld value-losing turns, %ld unknown, %" PRIu64
                    " positions searched, %" PRIu64 " nodes, %.0f s\n", c->games,
                    referee_tally_turns(&c->all, -1, -1, REFEREE_LOSE),
                    referee_tally_turns(&c->all, -1, -1, REFEREE_UNKNOWN), w.searched, w.nodes,
                    time_now() - c->t0);
        }
        return 0;
    }
    long unknown = 0;
    for (int ph = 0; ph < YARD_PHASES; ph++)
        for (int m = 0; m < 2; m++)
            unknown += rg.by[ph][m][REFEREE_UNKNOWN];
    static const char *const vnames[3] = {"loss", "draw", "win"};
    printf("game %ld (%s; Black %s, White %s): %d turns, %ld unknown; start %s; %s", c->games,
           g->label, g->who[0], g->who[1], rg.turns, unknown,
           s_value_name(rg.start, rg.start_mover),
           !rg.result.over ? "not over" : rg.result.winner < 0 ? "drawn"
           : rg.result.winner ? "White won" : "Black won");
    if (rg.n_errors) {
        printf("; %d value-losing:", rg.n_errors);
        for (int i = 0; i < rg.n_errors && i < 4; i++) {
            const referee_error *e = &rg.errors[i];
            printf("%s ply %d %s %s %s->%s (%s, from %s count %d)", i ? "," : "", e->ply,
                   e->side ? "White" : "Black", e->turn_text, vnames[e->before + 1],
                   vnames[e->after + 1], e->phase == 0 ? "opening" : e->phase == 1 ? "middle"
                                                                                : "ending",
                   e->position, e->count);
        }
        if (rg.n_errors > 4)
            printf(", ...");
    }
    if (rg.unconverted)
        printf("; a proven win not converted");
    printf("\n");
    fflush(stdout);
    return 0;
}

/* A record's game: 0 (judged or collected), 1 skipped (said why). */
static int s_record_game(ref_run *c, const game_record *r, const char *label)
{
    const game_def *g = &khreibaga_game;
    char err[256];
    if (strcmp(r->game, g->name)) {
        fprintf(stderr, "kz solve: %s: a game of %s, not %s: skipped\n", label, r->game, g->name);
        c->skipped++;
        return 1;
    }
    if (record_validate(g, r, err, sizeof err)) {
        fprintf(stderr, "kz solve: %s: skipped: %s\n", label, err);
        c->skipped++;
        return 1;
    }
    ref_game *rg = &c->cur;
    rg->n = 0;
    if (r->start_position[0]) {
        if (g->parse_position(&rg->start, r->start_position, err, sizeof err)) {
            fprintf(stderr, "kz solve: %s: skipped: %s\n", label, err);
            c->skipped++;
            return 1;
        }
    } else {
        g->init(&rg->start);
    }
    for (int k = 0; k < r->n_moves; k++)
        s_game_push(rg, r->moves[k].action);
    char a[48], b[48];
    if (r->kind == RECORD_SELFPLAY) {
        snprintf(a, sizeof a, "v%u", r->model_version);
        snprintf(b, sizeof b, "v%u", r->model_version);
    } else if (r->kind == RECORD_ARENA) {
        snprintf(a, sizeof a, "v%u", r->model_version);
        snprintf(b, sizeof b, "v%u", r->opponent_version);
    } else {
        snprintf(a, sizeof a, "%s", r->model_player[0] ? r->model_player : "");
        if (!a[0])
            snprintf(a, sizeof a, "v%u", r->model_version);
        snprintf(b, sizeof b, "%s", r->opponent_player[0] ? r->opponent_player : "");
        if (!b[0])
            snprintf(b, sizeof b, "v%u", r->opponent_version);
    }
    int ap = r->kind == RECORD_SELFPLAY ? 0 : r->candidate_player; /* side A's player id */
    snprintf(rg->who[ap], sizeof rg->who[0], "%s", a);
    snprintf(rg->who[1 - ap], sizeof rg->who[0], "%s", b);
    snprintf(rg->label, sizeof rg->label, "%s", label);
    return s_judge(c, rg);
}

static int s_from_file(ref_run *c, const char *path)
{
    char err[512];
    record_file *f;
    int rc = record_file_open(path, &f, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kz solve: %s\n", err);
        return 1;
    }
    game_record *r = record_new();
    long i = 0;
    while (!s_stop && (rc = record_file_read(f, r, err, sizeof err)) == 0) {
        char label[96];
        snprintf(label, sizeof label, "%s #%ld", path, i++);
        s_record_game(c, r, label);
        if (c->o->games && c->games >= c->o->games)
            break;
    }
    record_destroy(&r);
    record_file_close(&f);
    if (rc > 0 || rc == KZ_EINVAL || rc == KZ_ECORRUPT || rc == KZ_EVERSION) {
        fprintf(stderr, "kz solve: %s\n", err);
        return 1;
    }
    return 0;
}

/* The store's matching games, newest first: their sequences. */
typedef struct store_pick {
    const solve_opts *o;
    uint64_t *seq;
    long n, want;
    game_record *r;
} store_pick;

static bool s_kind_wanted(const solve_opts *o, const game_record *r)
{
    static const int kinds[] = {RECORD_SELFPLAY, RECORD_EVAL, RECORD_ARENA, -1};
    if (kinds[o->kind] >= 0 && r->kind != kinds[o->kind])
        return false;
    return !o->model || r->model_version == (uint32_t)o->model ||
           (r->kind != RECORD_SELFPLAY && r->opponent_version == (uint32_t)o->model);
}

static int s_pick(void *ctx, uint64_t seq, const uint8_t *rec, size_t len)
{
    store_pick *p = ctx;
    char err[256];
    if (record_unpack(rec, len, p->r, err, sizeof err) == 0 && s_kind_wanted(p->o, p->r))
        p->seq[p->n++] = seq;
    return p->n >= p->want || s_stop;
}

static int s_from_store(ref_run *c, const char *dir)
{
    struct stat sb;
    char path[CONFIG_STR_MAX + 16];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &sb)) {
        fprintf(stderr, "kz solve: no store in '%s' (no data.mdb)\n", dir);
        return 1;
    }
    store_options so;
    store_options_default(&so);
    so.map_bytes = 1u << 20;
    so.read_only = true;
    store *st;
    int rc = store_open(&st, dir, &so);
    if (rc) {
        fprintf(stderr, "kz solve: cannot open the store %s: %s\n", dir, err_str(rc));
        return 1;
    }
    long want = c->o->games ? c->o->games : 100;
    store_pick p = {c->o, xcalloc((size_t)want, sizeof(uint64_t)), 0, want, record_new()};
    rc = store_foreach_game_desc(st, UINT64_MAX, s_pick, &p);
    if (rc < 0)
        fprintf(stderr, "kz solve: %s: %s\n", dir, err_str(rc));
    for (long i = p.n - 1; i >= 0 && rc >= 0 && !s_stop; i--) {
        uint8_t *rec;
        size_t len;
        char err[256], label[96];
        snprintf(label, sizeof label, "store %" PRIu64, p.seq[i]);
        if (store_get_game(st, p.seq[i], &rec, &len) == 0) {
            if (record_unpack(rec, len, p.r, err, sizeof err) == 0) {
                snprintf(label, sizeof label, "store %" PRIu64 " %s", p.seq[i],
                         p.r->kind == RECORD_SELFPLAY ? "selfplay"
                         : p.r->kind == RECORD_EVAL   ? "rating"
                                                      : "arena");
                s_record_game(c, p.r, label);
            }
            free(rec);
        }
    }
    if (p.n == 0)
        fprintf(stderr, "kz solve: %s: no game of that kind%s\n", dir,
                c->o->model ? " and model" : "");
    record_destroy(&p.r);
    free(p.seq);
    store_close(&st);
    return rc < 0 || p.n == 0 ? 1 : 0;
}

static void s_match_action(void *ctx, int game, const game_state *s, int action)
{
    ref_run *c = ctx;
    if (game != c->cur_index) {
        c->cur_index = game;
        c->cur.n = 0;
        c->cur.start = *s;
    }
    s_game_push(&c->cur, action);
}

static void s_match_game(void *ctx, const match_game *gm, int w, int d, int l)
{
    (void)w;
    (void)d;
    (void)l;
    ref_run *c = ctx;
    snprintf(c->cur.who[gm->a_player], sizeof c->cur.who[0], "%s", c->match_names[0]);
    snprintf(c->cur.who[1 - gm->a_player], sizeof c->cur.who[0], "%s", c->match_names[1]);
    snprintf(c->cur.label, sizeof c->cur.label, "match game %d, opening %d", gm->index + 1,
             gm->opening);
    s_judge(c, &c->cur);
    c->cur_index = -1;
}

/* --match A,B: plays the games as kz match A B does (the same seed and
 * openings: the same games), judging each as it ends. */
static int s_from_match(ref_run *c, const char *specs)
{
    char a[PLAYER_SPEC_MAX], err[512];
    const char *comma = strchr(specs, ',');
    if (!comma || comma == specs || !comma[1] || strchr(comma + 1, ',') ||
        (size_t)(comma - specs) >= sizeof a)
        return kz_usage_error("solve: --match wants two player specs joined by a comma "
                              "(A,B), not '%s'", specs);
    snprintf(a, sizeof a, "%.*s", (int)(comma - specs), specs);
    player *pa = player_from_spec(&khreibaga_game, a, err, sizeof err);
    player *pb = pa ? player_from_spec(&khreibaga_game, comma + 1, err, sizeof err) : NULL;
    if (!pb) {
        player_destroy(&pa);
        return kz_usage_error("solve: --match: %s", err);
    }
    if (c->o->match_tables) {
        if (!c->tables || !c->r) {
            player_destroy(&pa);
            player_destroy(&pb);
            return kz_usage_error("solve: --match_tables needs the referee's --tables");
        }
        game_oracle o_tb = tb_oracle(c->tables);
        if (c->o->match_tables & 1)
            player_set_oracle(pa, &o_tb);
        if (c->o->match_tables & 2)
            player_set_oracle(pb, &o_tb);
    }
    match_config cfg;
    match_config_default(&cfg);
    cfg.games = c->o->games ? (int)c->o->games : 20;
    cfg.openings = c->o->openings ? (int)c->o->openings : (cfg.games + 1) / 2;
    game_state *book = NULL;
    if (c->o->match_book[0]) {
        int nb;
        if (kz_read_book("solve", &khreibaga_game, c->o->match_book, &book, &nb)) {
            player_destroy(&pa);
            player_destroy(&pb);
            return 2;
        }
        if (c->o->openings > nb) {
            free(book);
            player_destroy(&pa);
            player_destroy(&pb);
            return kz_usage_error("solve: --openings %ld: the book %s holds %d", c->o->openings,
                                  c->o->match_book, nb);
        }
        cfg.openings = cfg.openings < nb ? cfg.openings : nb;
        cfg.book = book;
    }
    cfg.seed = (uint64_t)c->o->seed;
    cfg.on_action = s_match_action;
    cfg.on_game = s_match_game;
    cfg.ctx = c;
    c->cur_index = -1;
    snprintf(c->match_names[0], sizeof c->match_names[0], "%s", player_spec_name(pa));
    snprintf(c->match_names[1], sizeof c->match_names[1], "%s", player_spec_name(pb));
    int wins, draws, losses;
    int rc = match_run(&khreibaga_game, pa, pb, &cfg, &wins, &draws, &losses, NULL);
    if (rc)
        fprintf(stderr, "kz solve: the match: %s\n", err_str(rc));
    else
        printf("match %s against %s: +%d =%d -%d\n", c->match_names[0], c->match_names[1],
               wins, draws, losses);
    free(book);
    player_destroy(&pa);
    player_destroy(&pb);
    return rc ? 1 : 0;
}

static void s_print_tally_row(const char *name, const referee_tally *t, int phase, int side,
                              long games)
{
    long keep = referee_tally_turns(t, phase, side, REFEREE_KEEP);
    long lose = referee_tally_turns(t, phase, side, REFEREE_LOSE);
    long unk = referee_tally_turns(t, phase, side, REFEREE_UNKNOWN);
    printf("  %-24s %7ld %7ld %7ld %7ld %6.2f%%", name, keep + lose + unk, keep + lose, unk, lose,
           keep + lose ? 100.0 * lose / (double)(keep + lose) : 0.0);
    if (games > 0)
        printf(" %8.2f", (double)lose / (double)games);
    printf("\n");
}

static void s_report(const ref_run *c, double seconds)
{
    const referee_tally *t = &c->all;
    referee_work w;
    referee_get_work(c->r, &w);
    long keep = referee_tally_turns(t, -1, -1, REFEREE_KEEP);
    long lose = referee_tally_turns(t, -1, -1, REFEREE_LOSE);
    long unk = referee_tally_turns(t, -1, -1, REFEREE_UNKNOWN);
    char budget[96];
    int n = snprintf(budget, sizeof budget, "%ld nodes", c->o->nodes ? c->o->nodes
                                                                      : (long)REFEREE_NODES);
    if (c->o->seconds > 0)
        snprintf(budget + n, sizeof budget - (size_t)n, ", %.3g s", c->o->seconds);
    printf("referee: %ld games (%ld skipped), %ld turns: %ld keep the value, %ld lose it, %ld "
           "unknown; budget %s a position; %" PRIu64 " positions searched (%" PRIu64
           " left open), %" PRIu64 " from the tables, %" PRIu64 " nodes, %.1f s\n",
           c->games, c->skipped, keep + lose + unk, keep, lose, unk, budget, w.searched, w.open,
           w.probed, w.nodes, seconds);
    printf("value-losing turns: %ld, %.2f a game, %.2f%% of the %ld judged; games with one or "
           "more: %ld of %ld; win->draw %ld, win->loss %ld, draw->loss %ld%s\n",
           lose, c->games ? (double)lose / (double)c->games : 0.0,
           keep + lose ? 100.0 * lose / (double)(keep + lose) : 0.0, keep + lose,
           t->games_with_error, t->games, t->kinds[0], t->kinds[1], t->kinds[2],
           lose > REFEREE_MAX_ERRORS * c->games ? " (kinds of the first 32 a game)" : "");
    if (t->unconverted)
        printf("unconverted: %ld games where a side proven winning made no value-losing turn "
               "and did not win (R13-R15 drew it, or the game was cut short)\n", t->unconverted);
    if (t->inconsistent)
        printf("INCONSISTENT: %ld turns raised a proven value (a bug: please report)\n",
               t->inconsistent);
    printf("  %-24s %7s %7s %7s %7s %7s %8s\n", "phase (before the turn)", "turns", "judged",
           "unknown", "losing", "share", "a game");
    for (int ph = 0; ph < YARD_PHASES; ph++)
        s_print_tally_row(yard_phase_name(ph), t, ph, -1, c->games);
    s_print_tally_row("  of it <=6 pieces", t, REFEREE_FEW, -1, c->games);
    s_print_tally_row("all", t, -1, -1, c->games);
    s_print_tally_row("Black's turns", t, -1, 0, c->games);
    s_print_tally_row("White's turns", t, -1, 1, c->games);
    if (c->nwho > 0) {
        printf("  %-24s %7s %7s %7s %7s %7s %8s\n", "player (its own turns)", "turns", "judged",
               "unknown", "losing", "share", "a game");
        for (int i = 0; i <= c->nwho && i <= REF_MAX_WHO; i++) {
            if (i == c->nwho && i < REF_MAX_WHO)
                break;
            const ref_who *wh = &c->who[i == c->nwho ? REF_MAX_WHO : i];
            s_print_tally_row(wh->name, &wh->t, -1, -1, wh->t.games);
            for (int ph = 0; ph < YARD_PHASES; ph++) {
                char name[64];
                snprintf(name, sizeof name, "  %s", yard_phase_name(ph));
                s_print_tally_row(name, &wh->t, ph, -1, wh->t.games);
            }
            s_print_tally_row("    of it <=6 pieces", &wh->t, REFEREE_FEW, -1, wh->t.games);
        }
    }
}

static int s_tables_for(const solve_opts *o, tb_set **t)
{
    if (s_tables(o, t))
        return 1;
    if (*t)
        fprintf(stderr, "kz solve: tables up to %d pieces from %s\n", tb_pieces(*t), o->tables);
    return 0;
}

static referee *s_referee_new(const solve_opts *o, const tb_set *t)
{
    char err[512];
    referee_opts ro = {.tables = t, .nodes = (uint64_t)o->nodes, .seconds = o->seconds,
                       .tt_bytes = (uint64_t)o->tt_mb << 20, .stop = &s_stop, .fresh = o->fresh};
    referee *r = referee_new(&ro, err, sizeof err);
    if (!r)
        fprintf(stderr, "kz solve: %s\n", err);
    return r;
}

/* Reads the games of the sources given (files, --records, --store, --match)
 * into c (judged or collected). 0, 1 (an error said), 2 (usage). */
static int s_sources(ref_run *c, int nfiles, const char **files)
{
    const solve_opts *o = c->o;
    int given = nfiles + (o->records[0] != 0) + (o->store[0] != 0) + (o->match[0] != 0);
    if (!given)
        return kz_usage_error("solve %s: give games: record FILEs, --records FILE, --store DIR "
                              "or --match A,B (see kz solve --help)",
                              c->r ? "referee" : "accuracy");
    int rc = 0;
    for (int i = 0; i < nfiles && !rc; i++)
        rc = s_from_file(c, files[i]);
    if (!rc && o->records[0])
        rc = s_from_file(c, o->records);
    if (!rc && o->store[0])
        rc = s_from_store(c, o->store);
    if (!rc && o->match[0]) {
        signal(SIGINT, SIG_DFL); /* a match cannot be stopped halfway: Ctrl-C ends it all */
        signal(SIGTERM, SIG_DFL);
        rc = s_from_match(c, o->match);
    }
    return rc;
}

static int s_referee(const solve_opts *o, int nfiles, const char **files)
{
    tb_set *t;
    if (s_tables_for(o, &t))
        return 1;
    ref_run *c = xcalloc(1, sizeof *c);
    c->o = o;
    c->tables = t;
    c->r = s_referee_new(o, t);
    int rc = c->r ? 0 : 1;
    double t0 = time_now();
    c->t0 = t0;
    if (!rc)
        rc = s_sources(c, nfiles, files);
    if (rc != 2 && c->r && c->games > 0)
        s_report(c, time_now() - t0);
    else if (!rc && c->games == 0) {
        fprintf(stderr, "kz solve referee: no game to judge (%ld skipped)\n", c->skipped);
        rc = 1;
    }
    referee_destroy(&c->r);
    free_all(c->cur.actions, c->pos, c);
    tb_close(&t);
    return rc;
}

static void s_acc_progress(void *ctx, int done, int total, const referee_accuracy *a)
{
    double *t0 = ctx;
    if (done % 10 && done != total)
        return;
    fprintf(stderr, "accuracy: %d of %d positions, %d settled, %.0f s\n", done, total,
            a->settled, time_now() - *t0);
}

static int s_accuracy(const solve_opts *o, const char *model, int nfiles, const char **files)
{
    const game_def *g = &khreibaga_game;
    static char specs[REFEREE_MAX_PLAYERS][PLAYER_SPEC_MAX];
    char err[512];
    int np = 0;
    if (model) {
        snprintf(specs[np++], PLAYER_SPEC_MAX, "policy:%s", model);
        snprintf(specs[np++], PLAYER_SPEC_MAX, "mcts:%s:%ld", model, o->sims);
    }
    for (const char *p = o->players; *p && np < REFEREE_MAX_PLAYERS;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= PLAYER_SPEC_MAX)
            return kz_usage_error("solve accuracy: --players: an empty or too long spec");
        snprintf(specs[np++], PLAYER_SPEC_MAX, "%.*s", (int)len, p);
        p += len + (e != NULL);
        if (e && !*p)
            return kz_usage_error("solve accuracy: --players ends with a comma");
        if (*p && np == REFEREE_MAX_PLAYERS)
            return kz_usage_error("solve accuracy: at most %d players", REFEREE_MAX_PLAYERS);
    }
    if (np == 0)
        return kz_usage_error("solve accuracy: give a MODEL (a model file or uniform) or "
                              "--players A,B");
    player *pl[REFEREE_MAX_PLAYERS] = {NULL};
    for (int w = 0; w < np; w++) {
        pl[w] = player_from_spec(g, specs[w], err, sizeof err);
        if (!pl[w]) {
            for (int k = 0; k < w; k++)
                player_destroy(&pl[k]);
            fprintf(stderr, "kz solve accuracy: %s\n", err);
            return 1;
        }
    }
    /* The positions: the coordinator's book's first N openings, or N turn
     * starts drawn (by --seed) from the games given. */
    ref_run *c = xcalloc(1, sizeof *c);
    c->o = o;
    int n = (int)o->positions, rc = 0;
    const char *from = "the coordinator's book (500 openings, seed 1)";
    char fromb[CONFIG_STR_MAX + 64];
    if (nfiles || o->records[0] || o->store[0] || o->match[0]) {
        rc = s_sources(c, nfiles, files);
        if (!rc && c->npos == 0) {
            fprintf(stderr, "kz solve accuracy: the games give no position\n");
            rc = 1;
        }
        if (!rc) {
            rng_t rng;
            rng_seed(&rng, (uint64_t)o->seed);
            for (int i = c->npos - 1; i > 0; i--) {
                int j = (int)rng_below(&rng, (uint32_t)i + 1);
                game_state tmp = c->pos[i];
                c->pos[i] = c->pos[j];
                c->pos[j] = tmp;
            }
            n = n < c->npos ? n : c->npos;
            snprintf(fromb, sizeof fromb, "turn starts drawn from %ld games (%d in all, seed %ld)",
                     c->games, c->npos, o->seed);
            from = fromb;
        }
    } else {
        c->pos = xcalloc(500, sizeof *c->pos);
        rc = match_openings(g, 500, 0, 1, c->pos);
        if (rc) {
            fprintf(stderr, "kz solve accuracy: cannot make the book: %s\n", err_str(rc));
            rc = 1;
        }
        n = n < 500 ? n : 500;
    }
    tb_set *t = NULL;
    if (!rc)
        rc = s_tables_for(o, &t);
    c->r = rc ? NULL : s_referee_new(o, t);
    if (!rc && !c->r)
        rc = 1;
    if (!rc) {
        referee_accuracy a;
        double t0 = time_now(), c0 = cpu_seconds();
        int e = referee_accuracy_run(c->r, pl, np, c->pos, n, (uint64_t)o->seed, s_acc_progress,
                                     &t0, &a);
        if (e) {
            fprintf(stderr, "kz solve accuracy: %s\n", err_str(e));
            rc = 1;
        } else {
            referee_work w;
            referee_get_work(c->r, &w);
            printf("positions: %d from %s; %d with a settled value (%d opening, %d middle, %d "
                   "ending), %d with every turn judged, %d of them with a value-losing turn; "
                   "budget %ld nodes%s a position; %" PRIu64 " nodes, %.1f s CPU\n",
                   a.positions, from, a.settled, a.phase_n[0], a.phase_n[1], a.phase_n[2],
                   a.all_known, a.with_choice, o->nodes ? o->nodes : (long)REFEREE_NODES,
                   o->seconds > 0 ? " and a time limit" : "", w.nodes, cpu_seconds() - c0);
            for (int k = 0; k < np; k++) {
                double lo, hi;
                match_wilson(a.p[k].keep, a.p[k].judged, &lo, &hi);
                printf("%s: %d of %d turns keep the proven value (%.1f%%; 95%% %.1f..%.1f)",
                       player_spec_name(pl[k]), a.p[k].keep, a.p[k].judged,
                       a.p[k].judged ? 100.0 * a.p[k].keep / a.p[k].judged : 0.0, 100 * lo,
                       100 * hi);
                printf("; where a turn loses value %d of %d (%.1f%%)", a.p[k].keep_choice,
                       a.p[k].judged_choice, a.p[k].judged_choice
                                                 ? 100.0 * a.p[k].keep_choice /
                                                       a.p[k].judged_choice
                                                 : 0.0);
                for (int ph = 0; ph < YARD_PHASES; ph++)
                    if (a.by_phase[k][ph].judged)
                        printf("; %s %d of %d", ph == 0 ? "opening" : ph == 1 ? "middle"
                                                                            : "ending",
                               a.by_phase[k][ph].keep, a.by_phase[k][ph].judged);
                printf("\n");
            }
        }
    }
    referee_destroy(&c->r);
    free_all(c->cur.actions, c->pos, c);
    tb_close(&t);
    for (int w = 0; w < np; w++)
        player_destroy(&pl[w]);
    return rc;
}
int cmd_solve(int argc, char **argv)
{
    const char *sub = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
    if (*sub && strcmp(sub, "verify") && strcmp(sub, "book") && strcmp(sub, "accuracy") &&
        strcmp(sub, "referee"))
        return kz_usage_error("solve: unknown subcommand '%s' (verify, book, accuracy, referee, "
                              "or flags)", sub);
    solve_opts o;
    const char *words[argc + 1];
    size_t nw;
    int skip = *sub ? 1 : 0;
    int rc = kz_parse_args(*sub ? (!strcmp(sub, "verify")  ? "solve verify"
                                   : !strcmp(sub, "book")  ? "solve book"
                                   : !strcmp(sub, "referee") ? "solve referee"
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
        if (nw > 1)
            return kz_usage_error("solve accuracy: give at most one MODEL (a model file or "
                                  "uniform); games come with --records, --store or --match");
        return s_accuracy(&o, nw ? words[0] : NULL, 0, NULL);
    }
    if (!strcmp(sub, "referee"))
        return s_referee(&o, (int)nw, words);
    if (nw > 0)
        return kz_usage_error("solve: unexpected argument '%s' (see kz solve --help)", words[0]);
    if (!strcmp(sub, "book"))
        return s_book(&o);
    return s_search(&o);
}
