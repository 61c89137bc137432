/* test_solve: the proof search (solve/pns.h) and the certificate verifier
 * (solve/certificate.h), used as the manual shows:
 *
 * - tables_agree: 4-piece positions searched down to the tables up to 3
 *   pieces agree with the 4-piece tables on both claims ("Black does not
 *   lose", "White does not lose"), half of them mirrored (R19), and every
 *   answer's certificate (a closed set for a proof, a win certificate for a
 *   disproof) passes the verifier with the naive rules;
 * - larger positions (5 to 8 pieces, from random games) answered within a
 *   budget have certificates that verify, and never both claims disproven;
 * - start_is_a_white_win: the start position, with no tables at all: White
 *   does not lose, and White wins (both certificates verify: the result of
 *   docs/solve.md, in about a second);
 * - doctored certificates are refused with the first bad line: a wrong
 *   value, a missing AND child, an illegal action, an unfinished turn, a
 *   cycle in a win certificate, and malformed or damaged files;
 * - the transposition table file: a stopped search resumes from it, a
 *   damaged one is refused with one line (or, entry damage, ignored);
 * - `kz solve` and `kz solve verify`, and their errors;
 * - `kz solve book --out`: of a book of candidates, exactly the ones the
 *   tables call drawn are written, in order, as a book file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "games/game.h"
#include "games/khreibaga.h"
#include "games/tablebase.h"
#include "play/yardstick.h"
#include "solve/certificate.h"
#include "solve/pns.h"
#include "tests/harness/harness.h"

TestSuite(solve, .timeout = 600);

static char *s_tables(const char *tag, int pieces)
{
    char *dir = harness_tmpdir(tag);
    cr_assert(dir);
    tb_build_opts o = {.pieces = pieces, .threads = 2, .verify = false};
    char err[512];
    cr_assert_eq(tb_build(dir, &o, err, sizeof err), 0, "tb_build: %s", err);
    return dir;
}

static tb_set *s_open(const char *dir, int pieces)
{
    char err[512];
    tb_set *t = tb_open(dir, pieces, err, sizeof err);
    cr_assert(t, "tb_open: %s", err);
    return t;
}

/* Solves one claim in a fresh in-memory table; writes the certificate of an
 * answer to path and verifies it. Returns the outcome. */
static int s_solve_verify(const pns_pos *root, int claim, const tb_set *t, uint64_t budget,
                          const char *path)
{
    char err[512];
    pns_tt *tt = pns_tt_open(NULL, 64 << 20, err, sizeof err);
    cr_assert(tt, "%s", err);
    pns_opts o = {.claim = claim, .tables = t, .max_nodes = budget};
    int outcome;
    cr_assert_eq(pns_solve(tt, root, &o, &outcome), 0);
    if (outcome != PNS_OPEN) {
        FILE *f = fopen(path, "w");
        cr_assert(f);
        pns_cert_stats cs;
        int rc = outcome == PNS_PROVEN ? pns_extract(tt, root, &o, f, &cs)
                                       : pns_extract_win(tt, root, &o, f, &cs);
        cr_assert_eq(fclose(f), 0);
        cr_assert_eq(rc, 0, "extraction failed for claim %d", claim);
        cr_assert(cs.nodes >= 1);
        cert_report r;
        rc = cert_verify(path, t, &r, err, sizeof err);
        char pos[32];
        pns_pos_format(root, pos, sizeof pos);
        cr_assert_eq(rc, 0, "%s, claim %d, outcome %d: %s", pos, claim, outcome, err);
        cr_assert_eq(r.nodes, cs.nodes);
        cr_assert_eq(r.win, outcome == PNS_DISPROVEN);
        cr_assert_eq(r.claim, outcome == PNS_PROVEN ? claim : 1 - claim);
    }
    pns_tt_close(&tt);
    return outcome;
}

Test(solve, tables_agree)
{
    char *dir = s_tables("solve-agree", 4);
    tb_set *full = s_open(dir, 4), *small = s_open(dir, 3);
    cr_assert_eq(tb_pieces(small), 3);
    char path[600];
    snprintf(path, sizeof path, "%s/cert.txt", dir);
    rng_t rng;
    rng_seed(&rng, 23);
    int classes[64], nc = 0;
    for (int i = 0; i < tb_class_count(full); i++) {
        tb_class_info ci;
        tb_class_get(full, i, &ci);
        if (ci.own_men + ci.own_kings + ci.opp_men + ci.opp_kings == 4)
            classes[nc++] = i;
    }
    cr_assert_geq(nc, 10);
    int seen[3] = {0};
    for (int k = 0; k < 60; k++) {
        int ci = classes[rng_below(&rng, (uint32_t)nc)];
        tb_class_info info;
        tb_class_get(full, ci, &info);
        game_state s;
        tb_class_position(full, ci, rng_next(&rng) % info.positions, &s);
        tb_value v;
        cr_assert_eq(tb_probe(full, &s, &v), 0);
        int black = v.wdl; /* Black moves in a stored position */
        pns_pos root;
        cr_assert_eq(pns_pos_from_state(&s, &root), 0);
        if (k & 1)
            root = pns_pos_mirror(&root);
        int nl_black = s_solve_verify(&root, 0, small, 0, path);
        int nl_white = s_solve_verify(&root, 1, small, 0, path);
        char pos[32];
        pns_pos_format(&root, pos, sizeof pos);
        cr_assert_eq(nl_black, black >= 0 ? PNS_PROVEN : PNS_DISPROVEN, "%s: table %d", pos,
                     black);
        cr_assert_eq(nl_white, black <= 0 ? PNS_PROVEN : PNS_DISPROVEN, "%s: table %d", pos,
                     black);
        seen[black + 1]++;
    }
    /* Wins, draws and losses all among them. */
    cr_assert(seen[0] > 0 && seen[1] > 0 && seen[2] > 0, "%d %d %d", seen[0], seen[1], seen[2]);
    tb_close(&full);
    tb_close(&small);
    harness_rm_rf(dir);
    free(dir);
}

Test(solve, larger_positions_verify)
{
    char *dir = s_tables("solve-larger", 3);
    tb_set *t = s_open(dir, 3);
    char path[600];
    snprintf(path, sizeof path, "%s/cert.txt", dir);
    const game_def *g = &khreibaga_game;
    rng_t rng;
    rng_seed(&rng, 5);
    int answered = 0;
    for (int k = 0; k < 12; k++) {
        /* A random game from the start until at most 8 pieces at a turn start. */
        game_state s;
        g->init(&s);
        pns_pos root;
        for (;;) {
            game_result r = g->result(&s);
            if (r.over) {
                g->init(&s);
                continue;
            }
            if (!g->mid_turn(&s)) {
                pns_pos_from_state(&s, &root);
                if (__builtin_popcount(root.black | root.white) <= 8 - (k % 4))
                    break;
            }
            uint16_t acts[GAME_MAX_LEGAL];
            int n = g->legal_actions(&s, acts);
            g->apply(&s, acts[rng_below(&rng, (uint32_t)n)]);
        }
        int b = s_solve_verify(&root, 0, t, 50000, path);
        int w = s_solve_verify(&root, 1, t, 50000, path);
        cr_assert(!(b == PNS_DISPROVEN && w == PNS_DISPROVEN));
        answered += (b != PNS_OPEN) + (w != PNS_OPEN);
    }
    cr_assert_geq(answered, 12, "answered %d of 24 claims", answered);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* The start position, no tables: White wins (docs/solve.md). */
Test(solve, start_is_a_white_win)
{
    char *dir = harness_tmpdir("solve-start");
    char path[600];
    snprintf(path, sizeof path, "%s/cert.txt", dir);
    pns_pos root;
    char err[200];
    cr_assert_eq(pns_pos_parse(KH_START, &root, err, sizeof err), 0);
    cr_assert_eq(s_solve_verify(&root, 1, NULL, 0, path), PNS_PROVEN);
    cr_assert_eq(s_solve_verify(&root, 0, NULL, 0, path), PNS_DISPROVEN);
    cert_report r;
    cr_assert_eq(cert_verify(path, NULL, &r, err, sizeof err), 0, "%s", err);
    cr_assert(r.win && r.claim == 1 && !strcmp(r.root, KH_START));
    cr_assert(r.longest > 10 && r.longest <= 300 && r.max_count < 50);
    harness_rm_rf(dir);
    free(dir);
}

/* --- doctored certificates ---------------------------------------------------- */

/* Writes text to dir/name and verifies it: the return code, the message in err. */
static int s_check(const char *dir, const char *name, const char *text, const tb_set *t,
                   char *err, size_t errlen)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(harness_write(path, text), 0);
    cert_report r;
    err[0] = 0;
    return cert_verify(path, t, &r, err, errlen);
}

/* The certificate text with line `n` (from 1) replaced by `with` (NULL: removed). */
static char *s_edit(const char *text, int n, const char *with)
{
    size_t len = strlen(text);
    char *out = xmalloc(len + 256);
    size_t o = 0;
    int line = 1;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) + 1 : strlen(p);
        if (line == n) {
            if (with)
                o += (size_t)sprintf(out + o, "%s\n", with);
        } else {
            memcpy(out + o, p, l);
            o += l;
        }
        p += l;
        line++;
    }
    out[o] = 0;
    return out;
}

Test(solve, doctored_certificates_refused)
{
    char *dir = s_tables("solve-doctored", 3);
    tb_set *t = s_open(dir, 3);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/good.txt", dir);
    pns_pos root;
    cr_assert_eq(pns_pos_parse(KH_START, &root, err, sizeof err), 0);
    cr_assert_eq(s_solve_verify(&root, 1, t, 0, path), PNS_PROVEN);
    char *good = harness_read_file(path);
    cr_assert(good);
    /* Line 4 is the root (Black to move: an AND node), 5.. its children. */
    cr_assert(!strncmp(good, "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
                       KH_START " white-not-lose\n", 95), "%.200s", good);

    /* A missing AND child: the root's first child taken out. */
    char *doc = s_edit(good, 5, NULL);
    cr_assert_eq(s_check(dir, "missing.txt", doc, t, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "missing.txt:4: ") && strstr(err, "not in the certificate"), "%s",
              err);
    free(doc);

    /* An illegal action at an OR node (White to move at line 5). */
    char line[200];
    const char *l5 = good;
    for (int i = 1; i < 5; i++)
        l5 = strchr(l5, '\n') + 1;
    snprintf(line, sizeof line, "%.42s 24-23", l5);
    doc = s_edit(good, 5, line);
    cr_assert_eq(s_check(dir, "illegal.txt", doc, t, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "illegal.txt:5: ") && strstr(err, "hop 24-23") &&
                  strstr(err, "not legal"), "%s", err);
    free(doc);

    /* A wrong value: "Black does not lose" from a position the tables say
     * Black (to move) loses, and the same position claimed for White. */
    int ci = -1;
    for (int i = 0; i < tb_class_count(t) && ci < 0; i++) {
        tb_class_info info;
        tb_class_get(t, i, &info);
        if (info.own_men + info.own_kings + info.opp_men + info.opp_kings == 3 && info.losses)
            ci = i;
    }
    cr_assert_geq(ci, 0);
    pns_pos lost;
    static pns_turn turns[PNS_MAX_TURNS];
    int nt = 0;
    for (uint64_t idx = 0;; idx++) {
        tb_value v = tb_class_value(t, ci, idx);
        game_state s;
        tb_class_position(t, ci, idx, &s);
        pns_pos_from_state(&s, &lost);
        if (v.wdl < 0 && (nt = pns_turns(&lost, turns)) > 0)
            break;
    }
    char pos[32], turn[80], text[400];
    pns_pos_format(&lost, pos, sizeof pos);
    pns_turn_format(&turns[0], turn, sizeof turn);
    snprintf(text, sizeof text, "kz-solve-certificate 1\nclaim black-not-lose\ntables 3\n"
             "%s black-not-lose %s\n", pos, turn);
    cr_assert_eq(s_check(dir, "wrong.txt", text, t, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "wrong.txt:4: ") && strstr(err, "table loss for X"), "%s", err);
    snprintf(text, sizeof text, "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
             "%s white-not-lose\n", pos);
    cr_assert_eq(s_check(dir, "right.txt", text, t, err, sizeof err), 0, "%s", err);

    /* A cycle: a king ending drawn by shuffling (a closed set with cycles
     * proves "Black does not lose"), relabelled as a win: refused. */
    pns_pos kvk;
    cr_assert_eq(pns_pos_parse("B......W................. b", &kvk, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/kvk.txt", dir);
    cr_assert_eq(s_solve_verify(&kvk, 0, NULL, 0, path), PNS_PROVEN);
    char *kt = harness_read_file(path);
    cr_assert(kt);
    size_t kl = strlen(kt);
    char *relabel = xmalloc(kl + 1), *o = relabel;
    for (const char *q = kt; *q;) {
        if (!strncmp(q, "not-lose", 8)) {
            memcpy(o, "wins", 4);
            o += 4;
            q += 8;
        } else {
            *o++ = *q++;
        }
    }
    *o = 0;
    int rc = s_check(dir, "cycle.txt", relabel, NULL, err, sizeof err);
    cr_assert_eq(rc, KZ_ECORRUPT, "%s", err);
    cr_assert(strstr(err, "cycle.txt:") && strstr(err, "cycle"), "%s", err);
    free(relabel);
    free(kt);

    /* Malformed and damaged files: one line, never a crash. */
    static const char *bad[] = {
        "",
        "kz-solve-certificate 2\n",
        "kz-solve-certificate 1\nclaim black-draws\ntables 3\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 9\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\nbbbb b white-not-lose\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbbbbbbbb.wwwwwwwwwwww b white-not-lose 6-12\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbbbbbbbb.wwwwwwwwwwww b black-not-lose\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbbbbbbbb.wwwwwwwwwwww b white-not-lose\nbbbbbbbbbbbb.wwwwwwwwwwww b "
        "white-not-lose\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbbbbbbbbXwwwwwwwwwwww b white-not-lose\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbb.bbbbbbwwwwwwwwwwww w white-not-lose 16-99999999999\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbb.bbbbbbwwwwwwwwwwww w white-not-lose 16--6\n",
        "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n"
        "bbbbbb.bbbbbbwwwwwwwwwwww w white-not-lose 16-6 extra\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = s_check(dir, "bad.txt", bad[i], t, err, sizeof err);
        cr_assert(rc == KZ_ECORRUPT || rc == KZ_EINVAL, "case %zu: rc %d", i, rc);
        cr_assert(strstr(err, "bad.txt") && !strchr(err, '\n'), "case %zu: %s", i, err);
    }
    /* Truncated mid-line, a NUL byte, a very long line, random bytes. */
    size_t glen = strlen(good);
    char *cut = xmalloc(glen + 1);
    memcpy(cut, good, glen / 2);
    cut[glen / 2] = 0;
    rc = s_check(dir, "cut.txt", cut, t, err, sizeof err);
    cr_assert_eq(rc, KZ_ECORRUPT, "%s", err);
    free(cut);
    snprintf(path, sizeof path, "%s/nul.txt", dir);
    FILE *f = fopen(path, "w");
    fwrite(good, 1, 120, f);
    fputc(0, f);
    fputs(good + 121, f);
    fclose(f);
    cert_report r;
    cr_assert_eq(cert_verify(path, t, &r, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "NUL") || strstr(err, "bad position") || strstr(err, "fields"), "%s",
              err);
    char *longline = xmalloc(5000);
    snprintf(longline, 5000, "kz-solve-certificate 1\nclaim white-not-lose\ntables 3\n");
    memset(longline + strlen(longline), 'b', 3000);
    longline[4000] = 0;
    cr_assert_eq(s_check(dir, "long.txt", longline, t, err, sizeof err), KZ_ECORRUPT);
    cr_assert(strstr(err, "too long"), "%s", err);
    free(longline);
    rng_t rng;
    rng_seed(&rng, 7);
    for (int k = 0; k < 50; k++) {
        /* Random bytes written over a good certificate. */
        char *junk = xmalloc(glen + 1);
        memcpy(junk, good, glen + 1);
        for (int j = 0; j < 1 + k % 5; j++)
            junk[rng_below(&rng, (uint32_t)glen)] = (char)(1 + rng_below(&rng, 255));
        rc = s_check(dir, "junk.txt", junk, t, err, sizeof err);
        cr_assert(rc == 0 || rc == KZ_ECORRUPT || rc == KZ_EINVAL, "rc %d", rc);
        cr_assert(rc == 0 || !strchr(err, '\n'), "%s", err);
        free(junk);
    }
    cr_assert_eq(cert_verify("/nonexistent/cert.txt", t, &r, err, sizeof err), KZ_EIO);
    free(good);
    tb_close(&t);
    harness_rm_rf(dir);
    free(dir);
}

/* --- the transposition table file ------------------------------------------------ */

Test(solve, tt_file_resumes_and_refuses_damage)
{
    char *dir = harness_tmpdir("solve-tt");
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/black.tt", dir);
    pns_pos root;
    cr_assert_eq(pns_pos_parse(KH_START, &root, err, sizeof err), 0);
    /* Stopped by a budget, then resumed from the file. */
    pns_tt *tt = pns_tt_open(path, 16 << 20, err, sizeof err);
    cr_assert(tt, "%s", err);
    pns_opts o = {.claim = 0, .max_nodes = 3000};
    int outcome;
    cr_assert_eq(pns_solve(tt, &root, &o, &outcome), 0);
    cr_assert_eq(outcome, PNS_OPEN);
    pns_stats st;
    pns_tt_stats(tt, &st);
    cr_assert(st.used > 1000 && st.entries == 524288, "%lu of %lu", (unsigned long)st.used,
              (unsigned long)st.entries);
    pns_tt_close(&tt);
    tt = pns_tt_open(path, 0, err, sizeof err);
    cr_assert(tt, "%s", err);
    pns_stats again;
    pns_tt_stats(tt, &again);
    cr_assert_eq(again.used, st.used);
    o.max_nodes = 0;
    cr_assert_eq(pns_solve(tt, &root, &o, &outcome), 0);
    cr_assert_eq(outcome, PNS_DISPROVEN);
    uint32_t pn, dn;
    cr_assert_eq(pns_tt_lookup(tt, &root, 0, &pn, &dn), 0);
    cr_assert(pn == PNS_INF && dn == 0);
    pns_tt_close(&tt);

    /* Damaged entries are ignored (counted), the search still answers. */
    FILE *f = fopen(path, "r+");
    cr_assert(f);
    for (long off = 64 + 32 * 100; off < 64 + 32 * 524288L; off += 32 * 97) {
        fseek(f, off + 13, SEEK_SET);
        fputc(0x5a, f);
    }
    fclose(f);
    tt = pns_tt_open(path, 0, err, sizeof err);
    cr_assert(tt, "%s", err);
    cr_assert_eq(pns_solve(tt, &root, &o, &outcome), 0);
    cr_assert_eq(outcome, PNS_DISPROVEN);
    pns_tt_stats(tt, &st);
    cr_assert_gt(st.damaged, 0);
    pns_tt_close(&tt);

    /* A damaged header or size: refused with one line. */
    cr_assert_eq(truncate(path, 64 + 32 * 1000), 0);
    cr_assert_null(pns_tt_open(path, 0, err, sizeof err));
    cr_assert(strstr(err, "black.tt") && strstr(err, "size"), "%s", err);
    f = fopen(path, "r+");
    fputs("XXXX", f);
    fclose(f);
    cr_assert_null(pns_tt_open(path, 0, err, sizeof err));
    cr_assert(strstr(err, "magic"), "%s", err);
    harness_write(path, "short");
    cr_assert_null(pns_tt_open(path, 0, err, sizeof err));
    cr_assert(strstr(err, "shorter than the header"), "%s", err);
    harness_rm_rf(dir);
    free(dir);
}

/* --- kz solve ------------------------------------------------------------------------ */

Test(solve, kz_solve)
{
    harness_cli c;
    harness_cli_init(&c, "solve-kz");
    char args[1024];
    snprintf(args, sizeof args, "solve --tables '' --side white --tt %s/w.tt --tt_mb 64 "
             "--cert %s/w.txt", c.dir, c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, KH_START " white-not-lose: proven") &&
                  strstr(c.out, "certificate ") && strstr(c.out, "(white-not-lose)"),
              "%s", c.out);
    snprintf(args, sizeof args, "solve verify %s/w.txt --tables ''", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "verified: White does not lose from " KH_START), "%s", c.out);

    snprintf(args, sizeof args, "solve --tables '' --tt %s/b.tt --tt_mb 64 --cert %s/b.txt",
             c.dir, c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "black-not-lose: disproven") && strstr(c.out, "(white-wins)"), "%s",
              c.out);
    snprintf(args, sizeof args, "solve verify %s/b.txt --tables ''", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    cr_assert(strstr(c.out, "verified: White wins from " KH_START) &&
                  strstr(c.out, "win: no cycle"), "%s", c.out);

    /* A doctored certificate: exit 1, one line naming the first bad line. */
    char path[600];
    snprintf(path, sizeof path, "%s/b.txt", c.dir);
    char *text = harness_read_file(path);
    cr_assert(text);
    char *doc = s_edit(text, 6, NULL);
    snprintf(path, sizeof path, "%s/bad.txt", c.dir);
    harness_write(path, doc);
    snprintf(args, sizeof args, "solve verify %s --tables ''", path);
    cr_assert_eq(harness_cli_kz(&c, args), 1);
    cr_assert(strstr(c.err, "bad.txt:") && strchr(c.err, '\n') == c.err + strlen(c.err) - 1,
              "%s", c.err);
    free(doc);
    free(text);

    /* Bad input. */
    cr_assert_eq(harness_cli_kz(&c, "solve --position 'bbbb b' --tables ''"), 2);
    cr_assert(strstr(c.err, "bad --position"), "%s", c.err);
    cr_assert_eq(harness_cli_kz(&c, "solve verify --tables ''"), 2);
    cr_assert_eq(harness_cli_kz(&c, "solve nosuch"), 2);
    snprintf(path, sizeof path, "%s/junk.tt", c.dir);
    harness_write(path, "this is no transposition table, but long enough to have a header....");
    snprintf(args, sizeof args, "solve --tables '' --tt %s", path);
    cr_assert_eq(harness_cli_kz(&c, args), 1);
    cr_assert(strstr(c.err, "junk.tt") && strstr(c.err, "magic"), "%s", c.err);
    harness_cli_fini(&c);
}

/* kz solve book --match_book CANDIDATES --out F: the candidates are 4-piece
 * positions solved down to the 3-piece tables; F must hold exactly those the
 * 4-piece tables value as draws, in their order. */
Test(solve, kz_solve_book_keeps_the_drawn_openings)
{
    char *dir = s_tables("solve-book", 4);
    tb_set *full = s_open(dir, 4);
    rng_t rng;
    rng_seed(&rng, 29);
    enum { N = 16 };
    game_state cand[N], drawn[N];
    int n_drawn = 0, won = 0;
    for (int k = 0; k < N;) {
        int ci = (int)rng_below(&rng, (uint32_t)tb_class_count(full));
        tb_class_info info;
        tb_class_get(full, ci, &info);
        if (info.own_men + info.own_kings + info.opp_men + info.opp_kings != 4)
            continue;
        /* Draws are rarer than wins: take every draw, and a win or loss only
         * while there are as many draws as decided ones. */
        game_state s;
        tb_class_position(full, ci, rng_next(&rng) % info.positions, &s);
        tb_value v;
        cr_assert_eq(tb_probe(full, &s, &v), 0);
        if (v.wdl && won > n_drawn + 2)
            continue;
        cand[k++] = s;
        if (v.wdl)
            won++;
        else
            drawn[n_drawn++] = s;
    }
    cr_assert(n_drawn > 0 && won > 0, "%d drawn, %d decided", n_drawn, won);
    tb_close(&full);

    harness_cli c;
    harness_cli_init(&c, "solve-book");
    char book[600], out[600], args[2048];
    snprintf(book, sizeof book, "%s/cand.txt", c.dir);
    snprintf(out, sizeof out, "%s/drawn.txt", c.dir);
    cr_assert_eq(yard_write(&khreibaga_game, book, "candidates", cand, NULL, N), 0);
    snprintf(args, sizeof args, "solve book --match_book %s --tables %s --pieces 3 --out %s",
             book, dir, out);
    cr_assert_eq(harness_cli_kz(&c, args), 0, "%s", c.err);
    char line[128];
    snprintf(line, sizeof line, "%d openings: both proven (draw) %d;", N, n_drawn);
    cr_assert(strstr(c.out, line), "want '%s' in:\n%s", line, c.out);
    game_state got[N];
    int n_got = 0;
    char err[512];
    cr_assert_eq(yard_read(&khreibaga_game, out, got, NULL, N, &n_got, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(n_got, n_drawn);
    for (int i = 0; i < n_got; i++) {
        char a[64], b[64];
        khreibaga_game.format_position(&got[i], a, sizeof a);
        khreibaga_game.format_position(&drawn[i], b, sizeof b);
        cr_assert_str_eq(a, b, "opening %d", i);
    }
    char *text = harness_read_file(out);
    cr_assert(text && strstr(text, "# Openings of khreibaga balanced under perfect play"));
    free(text);

    /* Bad input: seeded without a count, an unwritable --out, a missing book. */
    cr_assert_eq(harness_cli_kz(&c, "solve book --book seeded --tables ''"), 2);
    cr_assert(strstr(c.err, "--openings"), "%s", c.err);
    snprintf(args, sizeof args,
             "solve book --match_book %s --tables %s --pieces 3 --openings 2 --out %s/no/such",
             book, dir, c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 1);
    const char *why = strstr(c.err, "kz solve: book: cannot write");
    cr_assert(why && strchr(why, '\n') == c.err + strlen(c.err) - 1, "%s", c.err);
    snprintf(args, sizeof args, "solve book --match_book %s/none.txt --tables ''", c.dir);
    cr_assert_eq(harness_cli_kz(&c, args), 2);
    cr_assert(strstr(c.err, "none.txt"), "%s", c.err);
    harness_cli_fini(&c);
    harness_rm_rf(dir);
    free(dir);
}
