/* services: what every part of the coordinator asks of it (services.c),
 * below them all: the worker table, the model cache (and what a damaged
 * model does to the best), announcements of the best, the opening book, the
 * host-order u32s of the coordinator's meta values, the background thread
 * of a part. Main thread. */
#ifndef KZ_SERVER_SERVICES_H
#define KZ_SERVER_SERVICES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

/* The worker table, empty (start-up). */
void coord_workers_init(coord *c);
/* The worker entry of client id (created on first sight). At most
 * max_clients ids are tracked: a new id then takes the place of the client
 * silent the longest among those that are gone (expired, so holding no arena
 * slots); NULL when every tracked client is live (or out of memory). */
worker *coord_worker(coord *c, const char *id);
/* Blob of a model (cached); NULL if unknown. Borrowed until the next call. */
const model_cache_entry *coord_model(coord *c, uint32_t version);
/* Notes that model v fails its checksum (a damaged store): logged, kept for
 * /status and /healthz; when v is the best, the best falls back to the newest
 * earlier promoted (or initial) model that is intact, in the store too. */
void coord_model_damaged(coord *c, uint32_t v);
/* The best v cannot be played (why: "IS DAMAGED", "IS MISSING", ... as the
 * loud line says it): noted as damaged, and the newest earlier promoted (or
 * initial) model that is intact becomes the best, in the store too, with one
 * ERROR line, /status's fallback and /healthz's alarm. 0, or KZ_ENOTFOUND when
 * no earlier best is intact (logged; the best is left as it was). */
int coord_best_fall_back(coord *c, uint32_t v, const char *why);
/* Logs, as one ERROR line, that the store is damaged (what: how it shows)
 * and was not opened, with what to do (kz store check, kz store salvage).
 * Returns KZ_ECORRUPT. */
int coord_store_damaged(const coord *c, const char *what);
/* Publishes an announcement of the current best. */
void coord_announce(coord *c, uint32_t previous, uint32_t wins, uint32_t draws, uint32_t losses);
/* Opening k of the book (k taken modulo its size). Borrowed. */
const char *coord_opening(const coord *c, uint32_t k);
/* Notes that the best changed to v (stall figures). */
void coord_best_changed(coord *c);
/* Live clients of role "worker" (the trainer and tools not counted). */
size_t coord_live_workers(const coord *c);
/* Makes the opening book: book_openings positions from book_seed (match_openings:
 * level material, no capture pending), as R20 strings. 0 or an error (logged). */
int coord_book_make(coord *c);
/* A meta value of n records of item bytes after a header of head bytes
 * (at least 8): the 4-byte magic, n as a host_put32, the rest for the
 * caller. Returns it (xmalloc), its length in *len. */
uint8_t *coord_meta_new(const char magic[4], size_t n, size_t head, size_t item, size_t *len);
/* A part's history of measured bests (endgame accuracy, the judge, the
 * yardstick), kept in the store's meta table under `key`: the 4-byte
 * magic, the count n (u32 big-endian), with `sized` a point's size (u32
 * big-endian: a later, longer form is read by its first `bytes`), then the
 * n points. In memory an array of points of `size` bytes, each beginning
 * with its uint32_t version. */
typedef struct meta_history {
    const char *key;   /* the meta key ("endgame_history") */
    const char *magic; /* its form's 4-byte name ("EGH1") */
    const char *what;  /* the log lines' subject ("endgame accuracy") */
    size_t bytes;      /* a stored point's bytes as this version writes them */
    int max;           /* most points */
    bool sized;        /* the header holds a stored point's size */
    size_t size;       /* a point's bytes in memory */
    void (*decode)(const uint8_t *p, void *point);  /* a stored point into memory */
    void (*encode)(const void *point, uint8_t *p);  /* and back, h->bytes */
} meta_history;
/* What coord_history_sync keeps between calls (zero at the start). */
typedef struct history_sync {
    bool loaded;    /* the stored history was read */
    uint64_t saved; /* *results when it was last written */
} history_sync;
/* The part's tick (main thread): once the store is open, reads the stored
 * history into pts[0..*n) (first call), before the points measured since
 * the start (the same version again: the newer figures); then writes the
 * points whenever *results changed since the last write. Points and
 * results are read under `lock`. A history that does not read, or in
 * another form, is dropped with a warning line, a failed write logged.
 * Returns true on the call that read it. */
bool coord_history_sync(coord *c, const meta_history *h, history_sync *s, void *pts, int *n,
                        pthread_mutex_t *lock, const uint64_t *results);
/* Appends point q (size bytes; its first field the uint32_t version) to
 * pts[0..*n), at most max: in place of the last point when that is the same
 * version's (measured again: the newer figures); when full, every other
 * older point goes first (a plot keeps its span, with fewer points). */
void coord_history_append(void *pts, size_t size, int *n, int max, const void *q);

/* A part's background thread (endgame accuracy, the forge check, the judge,
 * the yardstick): it runs below the coordinator's work (its own nice value
 * raised) and, holding
 * `lock`, waits on `changed` until ready(arg) says work waits or the stop
 * comes; then step(arg) takes the work, and does it with the lock released
 * (called and returning with the lock held). The part embeds the struct,
 * guards its own shared fields with the same lock and signals `changed`
 * when it hands work over. */
typedef struct part_thread {
    pthread_t thread;        /* the thread */
    bool started;            /* the thread runs */
    pthread_mutex_t lock;    /* guards stop and the part's shared fields */
    pthread_cond_t changed;  /* work or the stop */
    bool stop;               /* part_thread_stop was called */
    int nice;                /* how far below the caller the thread runs */
    bool (*ready)(void *arg); /* whether work waits (lock held) */
    void (*step)(void *arg);  /* takes and does one piece of work (see above) */
    void *arg;               /* their argument */
} part_thread;
/* Initialises t (lock, changed) and starts its thread, `nice` steps below
 * the caller's priority (Linux: a thread's own nice value, at most 19).
 * 0, or KZ_ENOMEM when no thread starts (logged as an error: "<part>:
 * cannot start its thread").
 * Either way t is part_thread_stop's to end. t must not move while the
 * thread runs. */
int part_thread_start(part_thread *t, int nice, bool (*ready)(void *arg), void (*step)(void *arg),
                      void *arg, const char *part);
/* Stops the thread if it runs (stop set under lock, changed signalled, the
 * thread joined), then destroys lock and changed. */
void part_thread_stop(part_thread *t);
/* The thread, between two pieces of a long piece of work (lock not held):
 * whether part_thread_stop was called (read under t's lock). */
bool part_thread_stopping(part_thread *t);
/* A part's one waiting job (endgame accuracy, the yardstick): a copy of a
 * best's model blob, posted by the main thread's tick and taken by the
 * thread's step. Zero at the start. */
typedef struct part_job {
    uint8_t *blob;    /* the copy to measure next (owned), NULL none (under t's lock) */
    size_t len;       /* its bytes (under t's lock) */
    uint32_t version; /* its version (under t's lock) */
    uint32_t posted;  /* the last version handed over (main thread's) */
    double posted_at; /* when (time_now, main thread's) */
} part_job;
/* Main thread (the part's tick): when c's best is not the version last
 * posted as j, and at least interval_s seconds have passed since that post
 * (0: every new best), posts a copy of the best's blob as j, under t's lock,
 * and signals t->changed; a job still waiting is freed (this one is newer).
 * A model that cannot be read posts nothing: "vN: the model cannot be read"
 * is written to error (error_size bytes, the part's figure) instead. */
void part_job_post(coord *c, part_thread *t, part_job *j, double interval_s, char *error,
                   size_t error_size);
/* The step (lock held): the waiting blob, now the caller's to free, with
 * its length and version in *len and *version; j is left without one. */
uint8_t *part_job_take(part_job *j, size_t *len, uint32_t *version);
/* Copies a part's figures (size bytes at fig) to out under t's lock (the
 * thread publishes them). Returns true (a part's _get returns whether the
 * part runs). */
bool part_figures_copy(part_thread *t, void *out, const void *fig, size_t size);
/* Copies a part's n points of history (size bytes each) to out under t's
 * lock (the thread appends to them). Returns n. */
int part_history_copy(part_thread *t, void *out, const void *pts, const int *n, size_t size);
/* Frees the worker table, the model cache and the book. */
void coord_services_fini(coord *c);

#endif
