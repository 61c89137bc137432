/* httpguard: see httpguard.h. The connections sit in a fixed table of
 * `limit` entries (the daemon never holds more), under one lock. */
#include "net/httpguard.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"

typedef struct conn_entry {
    bool used;          /* a connection of the daemon */
    bool busy;          /* a request is being answered */
    bool served;        /* it has sent a whole request header once */
    bool closing;       /* shut down by the guard: on its way out */
    int fd;             /* a duplicate of its socket (ours to close), -1 none */
    double since;       /* time_now() it began to wait for a request header */
    uint8_t from[16];   /* its address (s_addr_key) */
    http_guard *g;      /* back to the guard */
} conn_entry;

struct http_guard {
    pthread_mutex_t lock;
    unsigned limit, reserve;
    conn_entry *e;      /* limit entries */
    http_guard_stats st;
};

/* An address as 16 bytes (IPv4 in the first 4; all zero when unknown). */
static void s_addr_key(const struct sockaddr *a, uint8_t key[16])
{
    memset(key, 0, 16);
    if (a && a->sa_family == AF_INET)
        memcpy(key, &((const struct sockaddr_in *)a)->sin_addr, 4);
    else if (a && a->sa_family == AF_INET6)
        memcpy(key, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
}

bool http_client_is_local(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ai =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ai || !ai->client_addr)
        return false;
    uint8_t k[16];
    s_addr_key(ai->client_addr, k);
    if (ai->client_addr->sa_family == AF_INET)
        return k[0] == 127;
    static const uint8_t v6_loop[16] = {[15] = 1};
    static const uint8_t v4_mapped[12] = {[10] = 0xff, [11] = 0xff};
    return !memcmp(k, v6_loop, 16) || (!memcmp(k, v4_mapped, 12) && k[12] == 127);
}

http_guard *http_guard_new(unsigned limit, unsigned reserve)
{
    if (limit < 2)
        limit = 2;
    if (reserve == 0)
        reserve = limit / 8 ? limit / 8 : 1;
    if (reserve >= limit)
        reserve = limit - 1;
    http_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->e = calloc(limit, sizeof *g->e);
    if (!g->e) {
        free(g);
        return NULL;
    }
    g->limit = limit;
    g->reserve = reserve;
    for (unsigned i = 0; i < limit; i++)
        g->e[i].fd = -1;
    pthread_mutex_init(&g->lock, NULL);
    return g;
}

void http_guard_free(http_guard **pg)
{
    if (!pg || !*pg)
        return;
    http_guard *g = *pg;
    for (unsigned i = 0; i < g->limit; i++)
        if (g->e[i].fd >= 0)
            close(g->e[i].fd);
    pthread_mutex_destroy(&g->lock);
    free(g->e);
    free(g);
    *pg = NULL;
}

/* Shuts entry e's connection down (g->lock held). */
static void s_close(http_guard *g, conn_entry *e)
{
    if (e->fd >= 0)
        shutdown(e->fd, SHUT_RDWR);
    e->closing = true;
    g->st.open--;
}

/* Closes the idle connection that has waited longest, but not `keep`
 * (g->lock held). false: none is idle. */
static bool s_evict_one(http_guard *g, const conn_entry *keep)
{
    conn_entry *old = NULL;
    for (unsigned i = 0; i < g->limit; i++) {
        conn_entry *e = &g->e[i];
        if (e->used && !e->busy && !e->closing && e != keep && (!old || e->since < old->since))
            old = e;
    }
    if (!old)
        return false;
    s_close(g, old);
    g->st.evicted++;
    return true;
}

enum MHD_Result http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addrlen;
    http_guard *g = cls;
    uint8_t key[16];
    s_addr_key(addr, key);
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&g->lock);
    if (g->st.open >= g->limit - g->reserve)
        for (unsigned i = 0; i < g->limit && ok == MHD_YES; i++) {
            const conn_entry *e = &g->e[i];
            if (e->used && !e->closing && !e->served && !memcmp(e->from, key, 16))
                ok = MHD_NO;
        }
    if (ok == MHD_NO)
        g->st.refused++;
    pthread_mutex_unlock(&g->lock);
    return ok;
}

void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    http_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = ci ? dup(ci->connect_fd) : -1;
        pthread_mutex_lock(&g->lock);
        conn_entry *e = NULL;
        for (unsigned i = 0; i < g->limit && !e; i++)
            if (!g->e[i].used)
                e = &g->e[i];
        if (e) {
            *e = (conn_entry){.used = true, .fd = fd, .since = time_now(), .g = g};
            const union MHD_ConnectionInfo *ai =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
            s_addr_key(ai ? ai->client_addr : NULL, e->from);
            fd = -1;
            g->st.accepted++;
            g->st.open++;
            if (g->st.open > g->st.open_max)
                g->st.open_max = g->st.open;
            while (g->st.open > g->limit - g->reserve && s_evict_one(g, e))
                ;
        }
        *socket_context = e;
        pthread_mutex_unlock(&g->lock);
        if (fd >= 0)
            close(fd);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_entry *e = *socket_context;
        if (!e)
            return;
        pthread_mutex_lock(&g->lock);
        if (!e->closing)
            g->st.open--;
        if (e->fd >= 0)
            close(e->fd);
        *e = (conn_entry){.fd = -1};
        pthread_mutex_unlock(&g->lock);
        *socket_context = NULL;
    }
}

/* conn's entry, NULL when it has none. */
static conn_entry *s_entry(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void http_guard_busy(struct MHD_Connection *conn)
{
    conn_entry *e = s_entry(conn);
    if (!e || e->busy)
        return; /* only its own thread changes busy: no lock to read it */
    pthread_mutex_lock(&e->g->lock);
    e->busy = true;
    e->served = true;
    pthread_mutex_unlock(&e->g->lock);
}

void http_guard_idle(struct MHD_Connection *conn)
{
    conn_entry *e = s_entry(conn);
    if (!e)
        return;
    pthread_mutex_lock(&e->g->lock);
    e->busy = false;
    e->since = time_now();
    pthread_mutex_unlock(&e->g->lock);
}

unsigned http_guard_sweep(http_guard *g, double header_s)
{
    unsigned n = 0;
    double now = time_now();
    pthread_mutex_lock(&g->lock);
    for (unsigned i = 0; i < g->limit; i++) {
        conn_entry *e = &g->e[i];
        if (e->used && !e->busy && !e->closing && now - e->since > header_s) {
            s_close(g, e);
            n++;
        }
    }
    g->st.swept += n;
    pthread_mutex_unlock(&g->lock);
    return n;
}

void http_guard_get_stats(http_guard *g, http_guard_stats *out)
{
    pthread_mutex_lock(&g->lock);
    *out = g->st;
    pthread_mutex_unlock(&g->lock);
}
