/* httpguard: keeps an HTTP server (libmicrohttpd, a thread per connection)
 * answerable when its connections are taken by many addresses at once.
 *
 * The daemon's own limits (connections at most, per address) stop one
 * address; a slow-loris from many addresses can still take every slot with
 * connections that never finish their request header, and then nobody else
 * gets in. The guard counts the daemon's connections (its notify callback)
 * and keeps `reserve` of the `limit` slots free: a connection that arrives
 * when more than limit - reserve are open makes the guard close the idle
 * connection that has waited longest (one with no request being answered:
 * still sending its header, or kept alive between requests), so a new
 * connection, a health probe or the operator's request, always finds a slot.
 * While the reserve is in use, an address that already holds a connection
 * that has not yet sent a whole request header is refused another at once
 * (http_guard_accept: before the daemon makes a thread for it), so attackers
 * that reconnect cost little and cannot churn the reserve; an address new to
 * the server gets in. A connection being answered (a model download, an
 * analysis) is never closed. http_guard_sweep closes, in addition, any
 * connection that has waited for its request header longer than a given time
 * (a slow-loris trickles bytes and so escapes the daemon's idle timeout).
 *
 * A connection is closed by shutdown() on a duplicate of its socket, so the
 * guard never touches a descriptor number the daemon has closed and reused;
 * the connection's thread sees the end of the stream and ends it.
 *
 * Use: http_guard_new, pass http_guard_notify as MHD_OPTION_NOTIFY_CONNECTION
 * and http_guard_accept as the daemon's accept policy (MHD_start_daemon's
 * apc; both with the guard as cls), call http_guard_busy at each call of the access handler
 * and http_guard_idle from the MHD_OPTION_NOTIFY_COMPLETED callback. All
 * functions are thread-safe. */
#ifndef KZ_HTTPGUARD_H
#define KZ_HTTPGUARD_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct http_guard http_guard;

/* The counts of a guard (http_guard_stats). */
typedef struct http_guard_stats {
    unsigned open;         /* connections open now (closing ones left out) */
    unsigned open_max;     /* most open at once */
    uint64_t accepted;     /* connections the daemon took */
    uint64_t evicted;      /* idle connections closed to keep the reserve free */
    uint64_t refused;      /* refused at once: the reserve in use, the address holds a
                            * connection still sending its first header */
    uint64_t swept;        /* closed by http_guard_sweep (header too slow) */
} http_guard_stats;

/* A guard for a daemon of at most `limit` connections keeping `reserve` of
 * them free (reserve < limit; 0: limit / 8, at least 1). NULL on no memory.
 * Caller owns it: http_guard_free, after MHD_stop_daemon. */
http_guard *http_guard_new(unsigned limit, unsigned reserve);
/* Frees g (NULL-safe) and sets *g to NULL. */
void http_guard_free(http_guard **g);
/* MHD_OPTION_NOTIFY_CONNECTION's callback; cls is the guard. */
void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
/* The daemon's accept policy (MHD_AcceptPolicyCallback); cls is the guard. */
enum MHD_Result http_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* The access handler was called for conn: a request is being answered. */
void http_guard_busy(struct MHD_Connection *conn);
/* conn's request is complete (MHD_OPTION_NOTIFY_COMPLETED): idle again,
 * waiting for a next request from now on. */
void http_guard_idle(struct MHD_Connection *conn);
/* Closes every idle connection that has waited for a request header longer
 * than header_s seconds; returns how many. */
unsigned http_guard_sweep(http_guard *g, double header_s);
void http_guard_get_stats(http_guard *g, http_guard_stats *out);
/* Whether the request on conn comes from this machine (127.0.0.0/8 or ::1,
 * or IPv4 loopback mapped into IPv6): what may write without a token (issue
 * 28, #5: saved games from /play). False when the address is unknown. */
bool http_client_is_local(struct MHD_Connection *conn);

#endif
