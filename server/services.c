/* services: what every part of the coordinator asks of it, below them all:
 * the worker table, the model cache (and what a damaged model does to the
 * best), announcements of the best, the opening book, and the host-order
 * u32s of the coordinator's meta values. See services.h.
 *
 * Everything here runs on the main thread (the store is the main thread's
 * alone), except that coord_model_damaged writes model_alarm under
 * snap_lock for the HTTP thread. */
#include "server/services.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zmq.h>

#include "play/match.h"
#include "common/util.h"

/* --- workers ------------------------------------------------------------------ */

static size_t s_windex_slot(const coord *c, const char *id)
{
    return (size_t)hash_bytes(id, strlen(id), 7) & (c->windex_cap - 1);
}

static void s_windex_rebuild(coord *c, size_t cap)
{
    free(c->windex);
    c->windex_cap = cap;
    c->windex = xcalloc(cap, sizeof *c->windex);
    for (size_t i = 0; i < c->n_workers; i++) {
        size_t h = s_windex_slot(c, c->workers[i].id);
        while (c->windex[h])
            h = (h + 1) & (cap - 1);
        c->windex[h] = (int32_t)i + 1;
    }
}

void coord_workers_init(coord *c) { s_windex_rebuild(c, 256); }

worker *coord_worker(coord *c, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "%s", id && id[0] ? id : "anonymous");
    size_t h = s_windex_slot(c, key);
    while (c->windex[h]) {
        worker *w = &c->workers[c->windex[h] - 1];
        if (!strcmp(w->id, key))
            return w;
        h = (h + 1) & (c->windex_cap - 1);
    }
    if (c->n_workers >= (size_t)c->cfg.max_clients) {
        /* A stream of made-up ids must not grow the table (and /status)
         * without bound: reuse the entry silent the longest among the gone. */
        size_t victim = SIZE_MAX;
        for (size_t i = 0; i < c->n_workers; i++)
            if (!c->workers[i].alive &&
                (victim == SIZE_MAX || c->workers[i].last_seen < c->workers[victim].last_seen))
                victim = i;
        if (victim == SIZE_MAX) {
            if (c->clients_refused++ % 1000 == 0)
                log_warn("max_clients (%ld) clients are live: new client ids turned away",
                         c->cfg.max_clients);
            return NULL;
        }
        if (c->clients_forgotten++ % 1000 == 0)
            log_info("max_clients (%ld) reached: forgetting silent clients to make room",
                     c->cfg.max_clients);
        worker *w = &c->workers[victim];
        memset(w, 0, sizeof *w);
        snprintf(w->id, sizeof w->id, "%s", key);
        w->first_seen = time_now();
        s_windex_rebuild(c, c->windex_cap);
        return w;
    }
    if (c->n_workers == c->cap_workers) {
        size_t cap = c->cap_workers ? c->cap_workers * 2 : 64;
        worker *nw = realloc(c->workers, cap * sizeof *nw);
        if (!nw)
            return NULL;
        c->workers = nw;
        c->cap_workers = cap;
    }
    worker *w = &c->workers[c->n_workers];
    memset(w, 0, sizeof *w);
    snprintf(w->id, sizeof w->id, "%s", key);
    w->first_seen = time_now();
    c->windex[h] = (int32_t)c->n_workers + 1;
    c->n_workers++;
    if (c->n_workers * 2 > c->windex_cap)
        s_windex_rebuild(c, c->windex_cap * 2);
    return w;
}

size_t coord_live_workers(const coord *c)
{
    size_t live = 0;
    for (size_t i = 0; i < c->n_workers; i++)
        live += c->workers[i].alive && !strcmp(c->workers[i].role, "worker");
    return live;
}

/* --- models --------------------------------------------------------------------- */

const model_cache_entry *coord_model(coord *c, uint32_t version)
{
    model_cache_entry *lru = &c->cache[0];
    for (int i = 0; i < MODEL_CACHE; i++) {
        if (c->cache[i].version == version && version) {
            c->cache[i].used = time_now();
            return &c->cache[i];
        }
        if (c->cache[i].used < lru->used)
            lru = &c->cache[i];
    }
    uint8_t *blob;
    size_t len;
    store_model_info info;
    int rc = store_get_model(c->st, version, &blob, &len, &info);
    if (rc == KZ_ECORRUPT)
        coord_model_damaged(c, version);
    if (rc)
        return NULL;
    free(lru->blob);
    *lru = (model_cache_entry){version, blob, len, info, time_now()};
    return lru;
}

/* Writes the one-line alarm on damaged models for /healthz (snap_lock). */
static void s_model_alarm(coord *c)
{
    char alarm[sizeof c->model_alarm];
    if (c->fallback_from && c->fallback_to)
        snprintf(alarm, sizeof alarm, "%u damaged model%s (the best %u fell back to %u)",
                 c->n_damaged, c->n_damaged == 1 ? "" : "s", c->fallback_from, c->fallback_to);
    else if (c->fallback_from)
        snprintf(alarm, sizeof alarm, "the best model %u is damaged and no earlier best is "
                 "intact", c->fallback_from);
    else
        snprintf(alarm, sizeof alarm, "%u damaged model%s (not the best)", c->n_damaged,
                 c->n_damaged == 1 ? "" : "s");
    pthread_mutex_lock(&c->snap_lock);
    memcpy(c->model_alarm, alarm, sizeof alarm);
    pthread_mutex_unlock(&c->snap_lock);
}

/* Whether model v is in the damaged list already. */
static bool s_is_damaged(const coord *c, uint32_t v)
{
    for (uint32_t i = 0; i < c->n_damaged && i < COORD_DAMAGED; i++)
        if (c->damaged[i] == v)
            return true;
    return false;
}

/* Notes model v in the damaged list (once). */
static void s_note_damaged(coord *c, uint32_t v)
{
    if (s_is_damaged(c, v))
        return;
    if (c->n_damaged < COORD_DAMAGED)
        c->damaged[c->n_damaged] = v;
    c->n_damaged++;
}

int coord_best_fall_back(coord *c, uint32_t v, const char *why)
{
    s_note_damaged(c, v);
    /* The newest earlier best (promoted, or the initial model) that is intact:
     * from below v, or from the newest model when v lies past them all. */
    uint32_t latest = store_latest_model(c->st), to = 0;
    store_model_info m;
    for (uint32_t u = v - 1 < latest ? v - 1 : latest; u >= 1 && !to; u--) {
        uint8_t *blob = NULL;
        size_t len;
        if (store_get_model_info(c->st, u, &m) == 0 &&
            (m.status == STORE_MODEL_PROMOTED || m.status == STORE_MODEL_INITIAL) &&
            store_get_model(c->st, u, &blob, &len, &m) == 0)
            to = u;
        free(blob);
    }
    int rc = to ? store_set_best(c->st, to) : KZ_ENOTFOUND;
    c->fallback_from = v;
    c->fallback_to = rc ? 0 : to;
    if (rc) {
        log_error("THE BEST MODEL %u %s and no earlier best is intact (%s): workers cannot "
                  "play; salvage the store or start from a model file", v, why, err_str(rc));
    } else {
        log_error("THE BEST MODEL %u %s: the best falls back to model %u, the last good best "
                  "(self-play goes on with it)", v, why, to);
        c->best = to;
        c->best_sum = m.checksum;
        coord_best_changed(c);
        if (c->pub)
            coord_announce(c, v, 0, 0, 0);
    }
    s_model_alarm(c);
    return rc;
}

void coord_model_damaged(coord *c, uint32_t v)
{
    if (s_is_damaged(c, v))
        return;
    log_error("model %u fails its checksum: the store in %s is damaged (`kz store check %s` "
              "says where; `kz store salvage` copies what is intact)",
              v, c->cfg.data_dir, c->cfg.data_dir);
    if (v == store_best(c->st)) {
        coord_best_fall_back(c, v, "IS DAMAGED");
        return;
    }
    s_note_damaged(c, v);
    s_model_alarm(c);
}

int coord_store_damaged(const coord *c, const char *what)
{
    const char *d = c->cfg.data_dir;
    log_error("the store in %s is damaged (%s) and was not opened: `kz store check %s` says "
              "what is wrong; `kz store salvage %s NEWDIR` copies what is readable into a new "
              "store (then start with data_dir = NEWDIR)", d, what, d, d);
    return KZ_ECORRUPT;
}

/* --- announcements and the best -------------------------------------------------- */

void coord_announce(coord *c, uint32_t previous, uint32_t wins, uint32_t draws, uint32_t losses)
{
    wire_msg m = {0};
    m.kind = WIRE_ANNOUNCEMENT;
    m.u.announcement = (wire_announcement){c->best, c->best_sum, previous, wins, draws, losses};
    if (wire_encode(&m, &c->tx))
        return;
    zmq_send(c->pub, WIRE_TOPIC_BEST, strlen(WIRE_TOPIC_BEST), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(c->pub, c->tx.data, c->tx.len, ZMQ_DONTWAIT);
    log_info("announced best model %u (was %u)", c->best, previous);
}

void coord_best_changed(coord *c)
{
    c->best_since_ms = time_wall_ms();
    c->best_since_step = c->trainer.step;
    c->rejected_in_row = 0;
}

/* --- the opening book ------------------------------------------------------------ */

int coord_book_make(coord *c)
{
    int n = (int)c->cfg.book_openings;
    game_state *st = xcalloc((size_t)n, sizeof *st);
    int rc = match_openings(c->g, n, 0, (uint64_t)c->cfg.book_seed, st);
    if (rc) {
        log_error("cannot make a book of %d openings: %s", n, err_str(rc));
        free(st);
        return rc;
    }
    c->book = xcalloc((size_t)n, sizeof *c->book);
    for (int k = 0; k < n; k++)
        c->g->format_position(&st[k], c->book[k], COORD_POSITION);
    c->book_n = n;
    free(st);
    return 0;
}

const char *coord_opening(const coord *c, uint32_t k)
{
    return c->book[k % (uint32_t)c->book_n];
}

uint8_t *coord_meta_new(const char magic[4], size_t n, size_t head, size_t item, size_t *len)
{
    *len = head + n * item;
    uint8_t *b = xmalloc(*len);
    memcpy(b, magic, 4);
    host_put32(b + 4, (uint32_t)n);
    return b;
}

static size_t s_history_head(const meta_history *h) { return h->sized ? 12 : 8; }

static void s_history_read(coord *c, const meta_history *h, void *pts, int *n,
                           pthread_mutex_t *lock)
{
    size_t size = h->size;
    size_t head = s_history_head(h), big = h->sized ? 1024 : h->bytes;
    size_t cap = head + (size_t)h->max * big, len = 0;
    uint8_t *b = xmalloc(cap);
    int rc = store_get_meta(c->st, h->key, b, cap, &len);
    uint32_t count = rc == 0 && len >= head ? be_get32(b + 4) : 0;
    size_t item = h->sized ? (rc == 0 && len >= head ? be_get32(b + 8) : 0) : h->bytes;
    if (rc && rc != KZ_ENOTFOUND) {
        log_warn("%s: the stored history does not read (%s); starting without it", h->what,
                 err_str(rc));
    } else if (rc == 0 && (len < head || memcmp(b, h->magic, 4) || item < h->bytes ||
                           item > big || count > (uint32_t)h->max || len != head + count * item)) {
        log_warn("%s: the stored history is in an unknown form; starting without it", h->what);
    } else if (rc == 0) {
        pthread_mutex_lock(lock);
        uint8_t *fresh = xmalloc((size_t)h->max * size);
        int n_fresh = *n; /* measured since the start, before the store was open */
        memcpy(fresh, pts, (size_t)n_fresh * size);
        for (uint32_t i = 0; i < count; i++)
            h->decode(b + head + i * item, (uint8_t *)pts + i * size);
        *n = (int)count;
        for (int i = 0; i < n_fresh; i++)
            coord_history_append(pts, size, n, h->max, fresh + (size_t)i * size);
        pthread_mutex_unlock(lock);
        free(fresh);
    }
    free(b);
}

static int s_history_write(coord *c, const meta_history *h, const void *pts, const int *n,
                           pthread_mutex_t *lock)
{
    size_t size = h->size;
    pthread_mutex_lock(lock);
    size_t head = s_history_head(h), len = head + (size_t)*n * h->bytes;
    uint8_t *b = xmalloc(len);
    memcpy(b, h->magic, 4);
    be_put32(b + 4, (uint32_t)*n);
    if (h->sized)
        be_put32(b + 8, (uint32_t)h->bytes);
    for (int i = 0; i < *n; i++)
        h->encode((const uint8_t *)pts + (size_t)i * size, b + head + (size_t)i * h->bytes);
    pthread_mutex_unlock(lock);
    int rc = store_put_meta(c->st, h->key, b, len);
    free(b);
    if (rc)
        log_warn("%s: cannot save the history: %s", h->what, err_str(rc));
    return rc;
}

bool coord_history_sync(coord *c, const meta_history *h, history_sync *s, void *pts, int *n,
                        pthread_mutex_t *lock, const uint64_t *results)
{
    if (!c->st)
        return false;
    bool read = !s->loaded;
    if (read) {
        s->loaded = true;
        s_history_read(c, h, pts, n, lock);
    }
    pthread_mutex_lock(lock);
    uint64_t r = *results;
    pthread_mutex_unlock(lock);
    if (r != s->saved && s_history_write(c, h, pts, n, lock) == 0)
        s->saved = r;
    return read;
}

void coord_history_append(void *pts, size_t size, int *n, int max, const void *q)
{
    uint8_t *p = pts;
    uint32_t v, last;
    memcpy(&v, q, sizeof v);
    if (*n > 0) {
        memcpy(&last, p + (size_t)(*n - 1) * size, sizeof last);
        if (last == v)
            (*n)--;
    }
    if (*n == max) {
        int k = 0;
        for (int i = 0; i < *n; i += 2)
            memmove(p + (size_t)k++ * size, p + (size_t)i * size, size);
        *n = k;
    }
    memcpy(p + (size_t)(*n)++ * size, q, size);
}

void coord_services_fini(coord *c)
{
    for (int i = 0; i < MODEL_CACHE; i++)
        free(c->cache[i].blob);
    free_all(c->book, c->workers, c->windex);
}

/* Every part thread: lowers its own priority, then steps while work waits
 * until the stop. */
static void *s_part_main(void *arg)
{
    part_thread *t = arg;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int prio = getpriority(PRIO_PROCESS, (id_t)tid);
    setpriority(PRIO_PROCESS, (id_t)tid, prio + t->nice > 19 ? 19 : prio + t->nice);
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->stop && !t->ready(t->arg))
            pthread_cond_wait(&t->changed, &t->lock);
        if (t->stop)
            break;
        t->step(t->arg);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int part_thread_start(part_thread *t, int nice, bool (*ready)(void *arg), void (*step)(void *arg),
                      void *arg, const char *part)
{
    t->nice = nice;
    t->ready = ready;
    t->step = step;
    t->arg = arg;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->changed, NULL);
    if (pthread_create(&t->thread, NULL, s_part_main, t)) {
        log_error("%s: cannot start its thread", part);
        return KZ_ENOMEM;
    }
    t->started = true;
    return 0;
}

void part_thread_stop(part_thread *t)
{
    if (t->started) {
        pthread_mutex_lock(&t->lock);
        t->stop = true;
        pthread_cond_signal(&t->changed);
        pthread_mutex_unlock(&t->lock);
        pthread_join(t->thread, NULL);
    }
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->changed);
}

bool part_thread_stopping(part_thread *t)
{
    pthread_mutex_lock(&t->lock);
    bool stop = t->stop;
    pthread_mutex_unlock(&t->lock);
    return stop;
}

void part_job_post(coord *c, part_thread *t, part_job *j, double interval_s, char *error,
                   size_t error_size)
{
    double now = time_now();
    uint32_t version = c->best;
    if (!version || version == j->posted || (j->posted && now - j->posted_at < interval_s))
        return;
    j->posted = version;
    j->posted_at = now;
    const model_cache_entry *me = coord_model(c, version);
    pthread_mutex_lock(&t->lock);
    if (!me) {
        snprintf(error, error_size, "v%u: the model cannot be read", version);
    } else {
        free(j->blob); /* a best still waiting is measured no more: this one is newer */
        j->blob = xmalloc(me->len);
        memcpy(j->blob, me->blob, me->len);
        j->len = me->len;
        j->version = version;
        pthread_cond_signal(&t->changed);
    }
    pthread_mutex_unlock(&t->lock);
}

uint8_t *part_job_take(part_job *j, size_t *len, uint32_t *version)
{
    uint8_t *blob = j->blob;
    *len = j->len;
    *version = j->version;
    j->blob = NULL;
    j->len = 0;
    j->version = 0;
    return blob;
}

bool part_figures_copy(part_thread *t, void *out, const void *fig, size_t size)
{
    pthread_mutex_lock(&t->lock);
    memcpy(out, fig, size);
    pthread_mutex_unlock(&t->lock);
    return true;
}

int part_history_copy(part_thread *t, void *out, const void *pts, const int *n, size_t size)
{
    pthread_mutex_lock(&t->lock);
    int k = *n;
    memcpy(out, pts, (size_t)k * size);
    pthread_mutex_unlock(&t->lock);
    return k;
}
