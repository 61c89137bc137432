/* storecheck: checks a coordinator's store (store.h) that may be damaged,
 * and copies what is readable out of it.
 *
 * LMDB trusts its file: it has no page checksums, and a flipped byte in a
 * page can make it follow a page number or an offset out of the file and
 * crash its reader (SIGSEGV, SIGBUS). So the check does not read through
 * LMDB. It reads the data file page by page itself (pread: nothing is
 * mapped) and walks every tree from the meta page LMDB would use: LMDB's
 * freelist, the main tree, and the store's five databases (models, games,
 * positions, dedup, meta). Each page must be where it says, of a kind that
 * belongs at its depth, with its node offsets, key and value sizes inside
 * it, its keys in order and within the bounds its parent gives, its child
 * and overflow pages inside the file and reached once; the counts in each
 * tree's record must match; the freelist must name pages inside the file
 * that no tree uses. A page that fails is reported and skipped with what
 * hangs below it: the walk goes on with the rest.
 *
 * Then, unless pages_only, what the store keeps in the entries: every game
 * record decodes and replays through the rules (validate.h), every dedup
 * entry names a stored game with that id and every game has one, every
 * position decodes and the positions are dense from the first kept to the
 * next, every model's header and checksum hold, the counters in meta agree
 * with the contents.
 *
 * A store being written (a coordinator running) is checked on a snapshot:
 * a read transaction held through store_pin_open keeps the writer from
 * reusing its pages. When one of the two meta pages is damaged (LMDB then
 * refuses the file, so nothing writes it), the other one's trees are
 * walked; when both are, nothing can be.
 *
 * Salvage: storecheck_salvage walks a store the same way and writes every
 * entry it can read and that checks out into a fresh store: models whose
 * checksum holds (versions kept), games that decode and replay (sequences
 * kept, their dedup entries made again from their ids), positions that
 * decode (renumbered densely, ending where the source's ended), meta
 * entries; then counters that agree with what was copied. When the walk
 * found any problem (a tree broken off: a copy taken while the store was
 * written holds pages of several transactions), salvage then reads every
 * page the walk did not reach, and copies the entries of each leaf page that
 * check out and were not copied yet: models, games, positions of the window
 * (meta blobs and dedup entries only from the tree; dedup is made again).
 * What the source held is known from its counters (the tree's, else the
 * largest each takes on any leaf page: they only grow); what was not copied
 * of it is reported as lost.
 *
 * Problems are reported one line each through the options' callback (and
 * counted). Errors (the return values): 0 when the walk ran (whatever it
 * found: see the result's problems), else ENOENT (no data file), KZ_EIO
 * (cannot read it), KZ_EINVAL (bad arguments; salvage: a destination that
 * holds a store), or the destination store's error. Threads: one call, one
 * thread; calls on different stores may run at once. */
#ifndef KZ_STORECHECK_H
#define KZ_STORECHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

typedef struct storecheck_opts {
    bool pages_only;          /* the structure only (what the coordinator checks at start) */
    const game_def *g;        /* replay game records through these rules (NULL: the store's
                                 game, meta "game", else game_default) */
    void (*problem)(void *ctx, const char *line); /* each problem, one line (NULL: none) */
    void *ctx;                /* passed to problem */
} storecheck_opts;

typedef struct storecheck_result {
    uint64_t problems;        /* found in all */
    uint32_t page_size;       /* bytes per page */
    uint64_t pages;           /* pages in use (the file up to the last) */
    uint64_t visited;         /* pages read by the walk */
    uint64_t txnid;           /* the snapshot's transaction */
    uint64_t models;          /* entries read, by database */
    uint64_t games;
    uint64_t positions;
    uint64_t dedup;
    uint64_t meta;
    uint64_t bad_entries;     /* entries read that did not check out */
    double seconds;           /* the walk's wall time */
} storecheck_result;

/* Checks the store in dir. 0 and *r (r->problems: none means intact), or
 * an error (see the top). */
int storecheck_run(const char *dir, const storecheck_opts *o, storecheck_result *r);

typedef struct storecheck_salvaged {
    uint64_t models;          /* copied, by database */
    uint64_t games;
    uint64_t positions;
    uint64_t meta;
    uint64_t dropped;         /* entries read but not copied (they did not check out) */
    uint32_t best;            /* the destination's best model (0: none survived) */
    uint64_t scanned_pages;   /* leaf pages the walk did not reach, read by the scan */
    uint64_t scanned_models;  /* of the copied: found by the scan, by database */
    uint64_t scanned_games;
    uint64_t scanned_positions;
    uint64_t lost_models;     /* the source held them (its counters), none copied */
    uint64_t lost_games;
    uint64_t lost_positions;  /* of the source's sampling window */
} storecheck_salvaged;

/* Copies what is readable of the store in src into a new store in dst
 * (created; refused with KZ_EINVAL when dst already holds data.mdb). The
 * problems of src are reported as storecheck_run's (o->pages_only is
 * ignored: the entries are checked). 0 and *out, or an error. */
int storecheck_salvage(const char *src, const char *dst, const storecheck_opts *o,
                       storecheck_result *r, storecheck_salvaged *out);

#endif
