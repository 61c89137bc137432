/* pns: a forward proof search (df-pn, depth-first proof-number search) for
 * Khreibaga claims "side X does not lose from position P", down to the
 * endgame tables (games/tablebase.h), with its transposition table in a
 * memory-mapped file, and the extraction of a certificate (a closed set of
 * positions, solve/certificate.h) from that table. docs/solve.md gives the
 * claim and the soundness argument with rule numbers; in short:
 *
 * - Nodes are turn starts; an edge is a whole turn (a simple move or a
 *   complete capture sequence, R8, R9), enumerated hop by hop with the
 *   engine. OR nodes: X to move; AND nodes: the opponent to move.
 * - Leaves: a mover without pieces or moves (R12), and positions the tables
 *   cover (valued at no-progress count 0).
 * - A position already on the search's current path counts as proven for X
 *   (an endless play is a draw). That makes the search's marks
 *   path-dependent (the graph-history interaction), so they are never
 *   trusted: a proof is only accepted as the closed set pns_extract finds in
 *   the table; a node where it fails is reopened and the search goes on.
 *   Disproofs never rest on a repetition and are history-free.
 * - The left-right mirror (R19): one entry per mirror pair.
 *
 * Transposition table file (version 1, little-endian): a 64-byte header
 * (magic "KZTT\r\n\x1a\n", version, entry bytes 32, entries (a power of
 * two), a checksum of the header), then the entries, 4 to a bucket. Each
 * entry carries a check byte; an entry that fails it is ignored (counted in
 * pns_stats.damaged). pns_tt_open refuses a file whose size or header does
 * not match, with one line saying what is wrong.
 *
 * Thread rules: one search per pns_tt at a time; a pns_tt is not shared
 * between threads. Nothing on the search's path allocates. */
#ifndef KZ_SOLVE_PNS_H
#define KZ_SOLVE_PNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "games/game.h"
#include "games/tablebase.h"

#define PNS_INF 0x3fffffffu      /* a proof or disproof number meaning "never" */
#define PNS_TT_VERSION 1         /* transposition-table files of another version are refused */
#define PNS_MAX_DEPTH 1000       /* deepest search path (turns) */
#define PNS_MAX_TURNS 640        /* most distinct whole turns from one position */
#define PNS_MAX_HOPS 16          /* most hops in one turn (at most 12 captures) */

/* A turn-start position: pieces by colour (bit sq = point sq, R1), kings of
 * both colours, the side to move (0 Black, 1 White). */
typedef struct pns_pos {
    uint32_t black;   /* Black's pieces */
    uint32_t white;   /* White's pieces */
    uint32_t kings;   /* kings of both colours */
    uint32_t side;    /* 0 Black to move, 1 White */
} pns_pos;

/* The position of a game state at a turn start (KZ_EINVAL mid-sequence). */
int pns_pos_from_state(const game_state *s, pns_pos *out);
/* Parses an R20 turn-start position; 0, or KZ_EINVAL with a reason in err. */
int pns_pos_parse(const char *str, pns_pos *out, char *err, size_t errlen);
/* Writes the R20 string (27 characters and the NUL: buf holds 28 or more). */
void pns_pos_format(const pns_pos *p, char *buf, size_t len);
/* The left-right mirror image (R19). */
pns_pos pns_pos_mirror(const pns_pos *p);

/* One whole turn: the hops (src, dst points) and the position it reaches. */
typedef struct pns_turn {
    pns_pos to;                       /* the turn start it reaches */
    uint8_t nhops;                    /* hops (1 for a simple move) */
    uint8_t hop[PNS_MAX_HOPS + 1];    /* the points visited: hop[0] the start, then each landing */
} pns_turn;

/* Every distinct whole turn of p (turns reaching the same position once: the
 * first hop sequence found), by the engine, into out[PNS_MAX_TURNS]; returns
 * their count (0: no legal action). */
int pns_turns(const pns_pos *p, pns_turn *out);
/* Writes a turn as R21 hops chained: "7x17x5", "8-13" (NUL-terminated). */
void pns_turn_format(const pns_turn *t, char *buf, size_t len);

typedef struct pns_tt pns_tt;

/* Opens the transposition table file at path, creating it with `bytes` of
 * entries (rounded down to a power of two, at least 4 KiB) when it does not
 * exist; an existing file keeps its size (bytes is ignored). NULL with a
 * one-line reason in err for a file that cannot be made or mapped, or whose
 * size or header is wrong. path NULL or "": an anonymous table in memory.
 * Caller owns the table (pns_tt_close). */
pns_tt *pns_tt_open(const char *path, uint64_t bytes, char *err, size_t errlen);
/* Writes the table back (msync), unmaps, frees; NULL-safe; sets *t to NULL. */
void pns_tt_close(pns_tt **t);

/* The numbers the table holds for a position (or its mirror image) under a
 * claim (X: 0 Black, 1 White): 0 with *pn, *dn (0 proven / disproven), or
 * KZ_ENOTFOUND. */
int pns_tt_lookup(pns_tt *t, const pns_pos *p, int claim, uint32_t *pn, uint32_t *dn);

/* After a disproof of the claim (X: 0 Black, 1 White) at p: the length in
 * turns of the opponent's win the table keeps for it (an upper bound against
 * any defence; pns.c's s_win_length), or KZ_ENOTFOUND (not disproven, or
 * the entry lost). A player that always moves to a shorter win makes
 * progress (no repetition, R14). */
int pns_tt_win_length(pns_tt *t, const pns_pos *p, int claim, uint64_t *turns);

/* What a table holds and what a search did. */
typedef struct pns_stats {
    uint64_t entries;     /* entries the table has room for */
    uint64_t used;        /* entries in use */
    uint64_t proven;      /* of them proven (for either claim) */
    uint64_t disproven;   /* of them disproven */
    uint64_t damaged;     /* entries found failing their check byte (ignored) */
    uint64_t nodes;       /* nodes expanded by this process's searches */
    uint64_t probes;      /* table probes */
    uint64_t repairs;     /* nodes reopened after a failed extraction */
    double seconds;       /* wall-clock time of this process's searches */
} pns_stats;
/* Counts the table's entries (a pass over the file) and this process's figures. */
void pns_tt_stats(pns_tt *t, pns_stats *out);

/* Outcome of a search. */
enum pns_outcome {
    PNS_OPEN = 0,      /* stopped before an answer (budget or pns_opts.stop) */
    PNS_PROVEN,        /* X does not lose: a closed set was found (pns_extract succeeded) */
    PNS_DISPROVEN,     /* the search disproved it (docs/solve.md: what that means) */
};

/* Where a search is (passed to the progress callback). */
typedef struct pns_progress {
    uint32_t root_pn, root_dn; /* the root's proof and disproof numbers */
    uint64_t nodes;            /* nodes expanded so far by this search */
    double seconds;            /* since it started */
    uint64_t used;             /* table entries in use (estimated from stores) */
    int repairs;               /* extractions that failed and were repaired */
} pns_progress;

typedef struct pns_opts {
    int claim;               /* X: 0 Black, 1 White ("X does not lose") */
    const tb_set *tables;    /* borrowed; NULL: no tables */
    uint64_t max_nodes;      /* stop after this many expansions, counting the positions
                              * walked by failed extractions (repairs) as expansions too
                              * (0: no limit) */
    double max_seconds;      /* stop after this long (0: no limit) */
    volatile int *stop;      /* stop when *stop becomes non-zero (a signal handler); NULL: none */
    void (*progress)(const pns_progress *p, void *arg); /* about every progress_seconds */
    double progress_seconds; /* 0: 1 s */
    void *arg;               /* passed to progress */
} pns_opts;

/* Searches the claim from root (a turn start) until it is proven (a closed
 * set extracted: see pns_extract), disproven, or stopped. Resumes from
 * whatever the table holds. 0 with *outcome, or KZ_EINVAL (a bad root). */
int pns_solve(pns_tt *t, const pns_pos *root, const pns_opts *o, int *outcome);

/* Figures of an extracted certificate. */
typedef struct pns_cert_stats {
    uint64_t nodes;       /* lines: positions in the closed set */
    uint64_t or_nodes;    /* of them with X to move (a turn given) */
    uint64_t and_nodes;   /* of them with the opponent to move */
    uint64_t table_leaves;/* table positions the set leads to (counted per edge) */
    uint64_t end_leaves;  /* R12 wins of X the set leads to (per edge) */
    uint64_t bytes;       /* bytes written */
} pns_cert_stats;

/* Extracts the closed set proving the claim of o from root out of the table,
 * writing it to out (the format of solve/certificate.h) when out is non-NULL.
 * 0 with *stats; KZ_ENOTFOUND when the table's proven marks do not close (a
 * node's proving child is missing or not proven: the search must go on;
 * the failing nodes are reopened in the table); KZ_EIO on a write error. */
int pns_extract(pns_tt *t, const pns_pos *root, const pns_opts *o, FILE *out,
                pns_cert_stats *stats);

/* After a disproof of "X does not lose" from root (o->claim = X): writes the
 * opponent's win certificate (claim "black-wins" or "white-wins", the same
 * format; docs/solve.md says what its verifier adds: no cycle, the R13
 * count, R15). 0 with *stats, KZ_ENOTFOUND when the table's disproofs do not
 * reach (entries lost), KZ_EIO on a write error. */
int pns_extract_win(pns_tt *t, const pns_pos *root, const pns_opts *o, FILE *out,
                    pns_cert_stats *stats);

#endif
