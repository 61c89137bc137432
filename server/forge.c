/* forge: the sampled re-search of submitted games (docs/security.md, "Forged
 * games"; recheck.h). Each searched state of a valid self-play or arena game
 * is picked with probability 1 / forge_check_states; a game with a picked
 * state is held back (neither stored nor acknowledged) and handed to this
 * module's thread, which searches the game again from its first state
 * through the last picked one with the networks the record names and
 * compares. A game that matches (or that cannot be checked) goes on to its
 * commit and acknowledgement as if it had just arrived; one that does not is
 * refused with reason `forged` and counted against its client.
 *
 * Off the ingest path: the main loop only draws the sample, copies the
 * record's networks' blobs into the job and moves the message; the thread,
 * at a lower priority, decodes and searches. At most forge_queue games are
 * held; when that many are, a sampled game is stored unchecked (counted as
 * skipped), so a flood never slows ingest down. A resend of a held game
 * (same id) only updates where the answer goes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/features.h"
#include "server/services.h"
#include "nn/evaluator.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "play/recheck.h"
#include "data/record.h"
#include "common/util.h"

#define FORGE_NICE 10 /* the thread's priority below the coordinator's */
#define FORGE_NETS 4  /* evaluators the thread keeps (by version) */

/* One held game. */
typedef struct forge_job {
    struct forge_job *next;  /* in its list */
    forge_held held;         /* the message and where its answer goes */
    uint32_t version[2];     /* the networks of player 0 and 1 */
    uint8_t *blob[2];        /* their blobs (owned; blob[1] NULL when one network) */
    size_t len[2];           /* bytes */
    int upto;                /* the last state to check */
    recheck_report rep;      /* the thread's answer */
    int rc;                  /* an error of the check (then stored unchecked) */
    double seconds;          /* the check's wall time */
} forge_job;

/* A network the thread keeps. */
typedef struct forge_net {
    uint32_t version;        /* 0 = empty */
    evaluator_net *net;      /* its evaluator */
    char path[24];           /* its arithmetic */
    uint64_t used;           /* LRU stamp */
} forge_net;

struct forge {
    const game_def *g;       /* the game */
    part_thread th;          /* the checking thread; its lock guards the lists */
    forge_job *todo, *todo_tail; /* waiting for the thread, oldest first */
    forge_job *done;         /* checked, waiting for the main loop */
    int held;                /* jobs in either list or in the thread's hands (main thread's) */
    forge_job *all[256];     /* held jobs, for resends (main thread's; forge_queue <= 256) */
    forge_net nets[FORGE_NETS]; /* the thread's networks */
    uint64_t stamp;          /* LRU clock */
    game_record *rec;        /* the thread's decoded record */
    forge_figures fig;       /* counters (main thread's) */
};

/* The evaluator of `version` for arithmetic `path`, made from blob if not
 * kept. NULL with a reason in err. Thread only. */
static evaluator_net *s_net(forge *f, uint32_t version, const uint8_t *blob, size_t len,
                            const char *path, char *err, size_t errlen)
{
    forge_net *lru = &f->nets[0];
    for (int i = 0; i < FORGE_NETS; i++) {
        forge_net *n = &f->nets[i];
        if (n->version == version && !strcmp(n->path, path)) {
            n->used = ++f->stamp;
            return n->net;
        }
        if (n->used < lru->used)
            lru = n;
    }
    int precision;
    if (!recheck_evaluator_usable(path, &precision)) {
        snprintf(err, errlen, "arithmetic %s not available", path);
        return NULL;
    }
    evaluator_net *e = NULL;
    char merr[200];
    if (!blob || evaluator_net_from_bytes(blob, len, f->g, 64, precision, &e, merr, sizeof merr)) {
        snprintf(err, errlen, "model v%u: %s", version, blob ? merr : "no blob");
        return NULL;
    }
    if (strcmp(evaluator_net_path(e), path)) {
        snprintf(err, errlen, "model v%u: its evaluator here is %s, not %s", version,
                 evaluator_net_path(e), path);
        evaluator_net_destroy(&e);
        return NULL;
    }
    evaluator_net_destroy(&lru->net);
    *lru = (forge_net){version, e, "", ++f->stamp};
    snprintf(lru->path, sizeof lru->path, "%s", path);
    return e;
}

/* Checks one job (thread). */
static void s_check(forge *f, forge_job *j)
{
    double t0 = time_now();
    const wire_game_submit *gs = &j->held.msg.u.game_submit;
    char err[300];
    recheck_report *rep = &j->rep;
    memset(rep, 0, sizeof *rep);
    rep->verdict = RECHECK_UNCHECKABLE;
    if (record_unpack(gs->record, gs->record_len, f->rec, err, sizeof err)) {
        snprintf(rep->detail, sizeof rep->detail, "does not decode: %s", err);
        goto out;
    }
    evaluator ev[2];
    evaluator_net *n0 = s_net(f, j->version[0], j->blob[0], j->len[0], f->rec->settings.evaluator,
                              err, sizeof err);
    evaluator_net *n1 = n0 && j->version[1] != j->version[0]
                            ? s_net(f, j->version[1], j->blob[1], j->len[1],
                                    f->rec->settings.evaluator, err, sizeof err)
                            : n0;
    if (!n0 || !n1) {
        snprintf(rep->detail, sizeof rep->detail, "%s", err);
        goto out;
    }
    ev[0] = evaluator_net_get(n0);
    ev[1] = evaluator_net_get(n1);
    j->rc = recheck_record(f->g, f->rec, ev, j->upto, rep);
out:
    j->seconds = time_now() - t0;
}

/* The thread's part_thread hooks: whether a job waits; checking the oldest. */
static bool s_ready(void *arg) { return ((forge *)arg)->todo != NULL; }

static void s_step(void *arg)
{
    forge *f = arg;
    forge_job *j = f->todo;
    f->todo = j->next;
    if (!f->todo)
        f->todo_tail = NULL;
    pthread_mutex_unlock(&f->th.lock);
    s_check(f, j);
    pthread_mutex_lock(&f->th.lock);
    j->next = f->done;
    f->done = j;
}

int forge_start(coord *c)
{
    if (c->cfg.forge_check_states <= 0)
        return 0;
    forge *f = xcalloc(1, sizeof *f);
    f->g = c->g;
    f->rec = record_new();
    if (!f->rec) {
        free(f);
        return KZ_ENOMEM;
    }
    c->forge = f;
    if (part_thread_start(&f->th, FORGE_NICE, s_ready, s_step, f, "forged games"))
        return KZ_ENOMEM;
    log_info("forged games: 1 in %ld searched states re-searched (at most %ld games held), "
             "arena slots barred after %ld forged games",
             c->cfg.forge_check_states, c->cfg.forge_queue, c->cfg.forge_arena_threshold);
    return 0;
}

static void s_job_free(forge_job **pj)
{
    forge_job *j = *pj;
    if (!j)
        return;
    wire_msg_clear(&j->held.msg);
    free_all(j->blob[0], j->blob[1], j);
    *pj = NULL;
}

void forge_stop(coord *c)
{
    forge *f = c->forge;
    if (!f)
        return;
    part_thread_stop(&f->th);
    /* Held games are dropped unacknowledged: their workers send them again. */
    for (size_t i = 0; i < sizeof f->all / sizeof f->all[0]; i++)
        s_job_free(&f->all[i]);
    for (int i = 0; i < FORGE_NETS; i++)
        evaluator_net_destroy(&f->nets[i].net);
    record_destroy(&f->rec);
    free(f);
    c->forge = NULL;
}

bool forge_resend(coord *c, const uint8_t *game_id, const uint8_t *route, size_t route_len,
                  uint64_t request_id)
{
    forge *f = c->forge;
    if (!f || !f->held)
        return false;
    for (size_t i = 0; i < sizeof f->all / sizeof f->all[0]; i++) {
        forge_job *j = f->all[i];
        if (j && !memcmp(j->held.game_id, game_id, 16)) {
            /* The thread reads only the record: the route is the main loop's. */
            memcpy(j->held.route, route, route_len);
            j->held.route_len = route_len;
            j->held.request_id = request_id;
            f->fig.resends++;
            return true;
        }
    }
    return false;
}

int forge_take(coord *c, forge_held *h, const validate_result *v, worker *w)
{
    forge *f = c->forge;
    if (!f || (v->kind != RECORD_SELFPLAY && v->kind != RECORD_ARENA) || !v->record)
        return 0;
    /* Step 1. The sample: most games have no state picked. */
    int upto = recheck_sample(v->record, (uint32_t)c->cfg.forge_check_states, &c->rng);
    if (upto < 0)
        return 0;
    f->fig.sampled++;
    /* Step 2. Records that cannot be checked are counted and go on. */
    char why[160];
    if (!recheck_supported(v->record, why, sizeof why)) {
        if (c->cfg.forge_refuse_unchecked) {
            snprintf(h->why, sizeof h->why, "cannot be checked: %s (forge_refuse_unchecked)",
                     why);
            return 2;
        }
        f->fig.unchecked++;
        if (w)
            w->unchecked++;
        if (f->fig.unchecked <= 3 || f->fig.unchecked % 1000 == 0)
            log_info("forged games: a game from %s cannot be checked (%s; %llu so far)",
                     w ? w->id : "?", why, (unsigned long long)f->fig.unchecked);
        return 0;
    }
    if (f->held >= c->cfg.forge_queue) {
        f->fig.skipped++;
        return 0;
    }
    /* Step 3. Hold it: the networks' blobs go with it (copies: the cache is the
     * main thread's). */
    uint32_t ver[2];
    int cp = v->candidate_player;
    if (v->kind == RECORD_SELFPLAY)
        ver[0] = ver[1] = v->model_version;
    else {
        ver[cp] = v->model_version;
        ver[1 - cp] = v->opponent_version;
    }
    forge_job *j = xcalloc(1, sizeof *j);
    for (int p = 0; p < 2; p++) {
        j->version[p] = ver[p];
        if (p == 1 && ver[1] == ver[0])
            break;
        const model_cache_entry *me = coord_model(c, ver[p]);
        if (!me) {
            free(j->blob[0]);
            free(j);
            f->fig.unchecked++;
            if (w)
                w->unchecked++;
            return 0;
        }
        j->blob[p] = xmalloc(me->len);
        memcpy(j->blob[p], me->blob, me->len);
        j->len[p] = me->len;
    }
    size_t slot = 0;
    while (f->all[slot])
        slot++;
    f->all[slot] = j;
    j->held = *h; /* takes the message */
    memset(&h->msg, 0, sizeof h->msg);
    j->upto = upto;
    f->held++;
    f->fig.held = (uint64_t)f->held;
    pthread_mutex_lock(&f->th.lock);
    if (f->todo_tail)
        f->todo_tail->next = j;
    else
        f->todo = j;
    f->todo_tail = j;
    pthread_cond_signal(&f->th.changed);
    pthread_mutex_unlock(&f->th.lock);
    return 1;
}

bool forge_next(coord *c, forge_held *out, int *verdict, char *detail, size_t detail_len)
{
    forge *f = c->forge;
    if (!f || !f->held)
        return false;
    pthread_mutex_lock(&f->th.lock);
    forge_job *j = f->done;
    if (j)
        f->done = j->next;
    pthread_mutex_unlock(&f->th.lock);
    if (!j)
        return false;
    for (size_t i = 0; i < sizeof f->all / sizeof f->all[0]; i++)
        if (f->all[i] == j)
            f->all[i] = NULL;
    f->held--;
    f->fig.held = (uint64_t)f->held;
    f->fig.seconds += j->seconds;
    worker *w = NULL;
    for (size_t i = 0; i < c->n_workers; i++)
        if (!strcmp(c->workers[i].id, j->held.client))
            w = &c->workers[i];
    int v = j->rc ? RECHECK_UNCHECKABLE : j->rep.verdict;
    if (j->rc)
        snprintf(j->rep.detail, sizeof j->rep.detail, "the check failed: %s", err_str(j->rc));
    f->fig.states += (uint64_t)j->rep.states;
    f->fig.searches += (uint64_t)j->rep.searches;
    if (v == RECHECK_MATCH) {
        f->fig.checked++;
        if (w)
            w->checked++;
    } else if (v == RECHECK_FORGED) {
        f->fig.forged++;
    } else {
        f->fig.unchecked++;
        if (w)
            w->unchecked++;
        log_info("forged games: a game from %s could not be checked: %s", j->held.client,
                 j->rep.detail);
    }
    *out = j->held;
    memset(&j->held.msg, 0, sizeof j->held.msg);
    *verdict = v;
    snprintf(detail, detail_len, "%s", j->rep.detail);
    s_job_free(&j);
    return true;
}

bool forge_get(const coord *c, forge_figures *out)
{
    const forge *f = c->forge;
    if (!f)
        return false;
    *out = f->fig;
    return true;
}

bool forge_barred(const coord *c, const worker *w)
{
    return w && c->cfg.forge_arena_threshold > 0 &&
           w->rejected_by[VALIDATE_FORGED] >= (uint64_t)c->cfg.forge_arena_threshold;
}

/* --- proven forgers ------------------------------------------------------------- */

/* FNV-1a of a client id (0 kept for "none"). */
static uint64_t s_id_hash(const char *id)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *id; id++)
        h = (h ^ (uint8_t)*id) * 0x100000001b3ull;
    return h ? h : 1;
}

/* The list as meta "barred": a line per client, tab-separated: id, since_ms,
 * removed games, removed positions, evidence. */
static int s_barred_save(coord *c)
{
    strbuf b = {0};
    for (size_t i = 0; i < c->n_barred; i++) {
        const barred_client *x = &c->barred[i];
        strbuf_printf(&b, "%s\t%lld\t%llu\t%llu\t%s\n", x->id, (long long)x->since_ms,
                      (unsigned long long)x->removed_games,
                      (unsigned long long)x->removed_positions, x->evidence);
    }
    int rc = store_put_meta(c->st, "barred", b.len ? b.s : "", b.len);
    free(b.s);
    if (rc)
        log_error("forged games: cannot keep the barred clients in the store: %s", err_str(rc));
    return rc;
}

/* Whether id is named in the comma-separated list. */
static bool s_listed(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t k = strcspn(p, ", ");
        if (k == n && n && !strncmp(p, id, n))
            return true;
        p += k;
    }
    return false;
}

int forge_load_barred(coord *c)
{
    c->barred = xcalloc(COORD_BARRED, sizeof *c->barred);
    c->recent = xcalloc(COORD_RECENT, sizeof *c->recent);
    char *buf = xmalloc(1u << 20);
    size_t len = 0;
    int rc = store_get_meta(c->st, "barred", buf, (1u << 20) - 1, &len);
    if (rc == KZ_ENOTFOUND) {
        free(buf);
        return 0;
    }
    if (rc) {
        log_error("forged games: cannot read the barred clients: %s", err_str(rc));
        free(buf);
        return rc;
    }
    buf[len] = 0;
    bool changed = false;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        barred_client x = {0};
        char *f[5] = {line, NULL, NULL, NULL, NULL};
        for (int k = 1; k < 5 && f[k - 1]; k++) {
            f[k] = strchr(f[k - 1], '\t');
            if (f[k])
                *f[k]++ = 0;
        }
        if (!f[4] || !f[0][0] || c->n_barred == COORD_BARRED)
            continue;
        snprintf(x.id, sizeof x.id, "%s", f[0]);
        x.since_ms = strtoll(f[1], NULL, 10);
        x.removed_games = strtoull(f[2], NULL, 10);
        x.removed_positions = strtoull(f[3], NULL, 10);
        snprintf(x.evidence, sizeof x.evidence, "%s", f[4]);
        if (s_listed(c->cfg.forge_readmit, x.id)) {
            log_warn("forged games: %s re-admitted by the operator (forge_readmit); barred "
                     "since %lld for: %s", x.id, (long long)x.since_ms, x.evidence);
            changed = true;
            continue;
        }
        c->barred[c->n_barred++] = x;
        log_warn("forged games: %s stays barred (a proven forger; forge_readmit re-admits it): "
                 "%s", x.id, x.evidence);
    }
    free(buf);
    return changed ? s_barred_save(c) : 0;
}

const barred_client *forge_barred_client(const coord *c, const char *id)
{
    for (size_t i = 0; id && i < c->n_barred; i++)
        if (!strcmp(c->barred[i].id, id))
            return &c->barred[i];
    return NULL;
}

void forge_note_game(coord *c, const char *id, uint64_t first_pos, uint32_t n_pos)
{
    if (!c->recent)
        return;
    c->recent[c->recent_next] = (recent_game){id && *id ? s_id_hash(id) : 0, first_pos, n_pos};
    c->recent_next = (c->recent_next + 1) % COORD_RECENT;
}

void forge_bar(coord *c, worker *w, const char *evidence)
{
    if (!w || !c->barred || forge_barred_client(c, w->id))
        return;
    if (c->n_barred == COORD_BARRED)
        memmove(c->barred, c->barred + 1, (COORD_BARRED - 1) * sizeof *c->barred);
    else
        c->n_barred++;
    barred_client *x = &c->barred[c->n_barred - 1];
    *x = (barred_client){.since_ms = time_wall_ms()};
    snprintf(x->id, sizeof x->id, "%s", w->id);
    snprintf(x->evidence, sizeof x->evidence, "%s", evidence);
    /* Its games still in the window leave it (their positions withdrawn). */
    uint64_t h = s_id_hash(w->id);
    uint64_t *first = xmalloc(COORD_RECENT * sizeof *first);
    uint32_t *n = xmalloc(COORD_RECENT * sizeof *n);
    size_t k = 0;
    for (size_t i = 0; i < COORD_RECENT; i++)
        if (c->recent[i].client == h && c->recent[i].n_pos) {
            first[k] = c->recent[i].first_pos;
            n[k++] = c->recent[i].n_pos;
            c->recent[i].client = 0;
        }
    uint64_t withdrawn = 0;
    int rc = store_withdraw_positions(c->st, first, n, k, &withdrawn);
    free(first);
    free(n);
    if (rc)
        log_error("forged games: the positions of %s cannot be withdrawn: %s", w->id,
                  err_str(rc));
    x->removed_games = k;
    x->removed_positions = withdrawn;
    s_barred_save(c);
    log_error("forged games: %s is a proven forger (%s): barred with its key until "
              "forge_readmit names it; %zu of its games taken out of the window (%llu "
              "positions)", w->id, evidence, k, (unsigned long long)withdrawn);
    arena_release_worker(c, (int)(w - c->workers));
    ratings_release_worker(c, (int)(w - c->workers));
}
