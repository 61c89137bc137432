/* kz serve: the play page without a cluster. An HTTP server (libmicrohttpd,
 * a thread per connection) with GET /play, /board.js, /page.css and /page.js
 * (webpages.h), the engine's JSON API under /api/ (engine.h: one engine over
 * --model), the games saved from the page in a record file (--records), and
 * those games for the viewer: GET /games, /games/K (K = the record's index in
 * the file, 1 first, as `kz records FILE --game K`) and /viewer. A search
 * runs in its request's thread, so /healthz and the pages answer meanwhile. */
#include <microhttpd.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "play/engine.h"
#include "tools/kz/kz.h"
#include "data/record.h"
#include "common/util.h"
#include "play/webpages.h"
#include "net/httpguard.h"

#define SERVE_BODY_MAX (64 * 1024) /* request body bytes read at most (the API takes none) */

typedef struct serve_opts {
    char model[CONFIG_STR_MAX];   /* model file or uniform */
    char spec[CONFIG_STR_MAX];    /* --player instead of a model */
    long port;                    /* HTTP port */
    char bind[CONFIG_STR_MAX];    /* IPv4 address */
    long sims;                    /* default simulations */
    long max_sims;                /* most a request may ask for */
    char records[CONFIG_STR_MAX]; /* games saved here, "" none */
    long saves_per_hour;          /* engine_config's */
    double records_max_mb;        /* engine_config's */
    char game[CONFIG_STR_MAX];    /* the game */
    long connections;             /* connections at once at most */
    long per_ip;                  /* from one address at most */
    long timeout_s;               /* idle / header time limit */
    bool remote_saves;            /* other machines' pages may save games */
    char tb_dir[CONFIG_STR_MAX];  /* endgame tables, "" none */
} serve_opts;

/* The server's state, shared by the connection threads. */
typedef struct server {
    const game_def *g;            /* the game */
    engine *e;                    /* the engine */
    const char *records;          /* the record file, NULL none */
    pthread_mutex_t file;         /* saves and reads of the record file take turns */
    bool remote_saves;            /* serve_opts' */
} server;

static volatile sig_atomic_t s_stop;
static void s_on_signal(int sig)
{
    (void)sig;
    s_stop = 1;
}

static enum MHD_Result s_send(struct MHD_Connection *conn, int code, const char *type,
                              const char *body, size_t len, bool persistent)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, persistent ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", persistent ? "no-cache" : "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result s_send_reply(struct MHD_Connection *conn, engine_reply *r)
{
    enum MHD_Result ret = s_send(conn, r->code, r->type, r->body, r->len, false);
    engine_reply_free(r);
    return ret;
}

static enum MHD_Result s_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    engine_args_add(cls, key, value);
    return MHD_YES;
}

/* GET /games and /games/K from the record file (engine.h's saved games). */
static void s_games(server *sv, const char *url, const engine_args *a, engine_reply *out)
{
    pthread_mutex_lock(&sv->file);
    engine_saved_games(sv->g, sv->records, "/games", url + 6, a, false, out);
    pthread_mutex_unlock(&sv->file);
}

static enum MHD_Result s_http(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)version;
    (void)upload;
    server *sv = cls;
    http_guard_busy(conn);
    /* The first call only announces the request; a body (the API takes none:
     * a 400) is read and dropped, up to SERVE_BODY_MAX (past it the
     * connection is closed). */
    if (!*state) {
        *state = xcalloc(1, sizeof(size_t));
        return MHD_YES;
    }
    size_t *seen = *state;
    if (*upload_len) {
        *seen += *upload_len;
        *upload_len = 0;
        return *seen > SERVE_BODY_MAX ? MHD_NO : MHD_YES;
    }
    engine_reply r;
    if (!strcmp(url, "/healthz"))
        return s_send(conn, 200, "text/plain", "ok\n", 3, true);
    if (!strcmp(url, "/")) {
        static const char to_play[] = "<!DOCTYPE html><meta http-equiv=\"refresh\" "
                                      "content=\"0; url=/play\"><a href=\"/play\">play</a>\n";
        return s_send(conn, 200, "text/html; charset=utf-8", to_play, sizeof to_play - 1, true);
    }
    webpage page;
    if (webpages_find(url, &page)) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD"))
            return s_send(conn, 405, "text/plain", "only GET\n", 9, true);
        return s_send(conn, 200, page.type, page.body, page.len, true);
    }
    engine_args a = {0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_collect_arg, &a);
    if (!strncmp(url, "/api/", 5)) {
        if (*seen) { /* as the coordinator: a 400 */
            char shown[80];
            text_printable(shown, sizeof shown, url, strlen(url));
            engine_reply_line(&r, 400, "a request body (%zu bytes) on %s: the API takes none "
                              "(its arguments go in the query string)", *seen, shown);
            return s_send_reply(conn, &r);
        }
        bool save = !strcmp(url, "/api/save");
        if (save && !sv->remote_saves && !http_client_is_local(conn)) {
            engine_reply_line(&r, 403, "saving games from another machine is off (kz serve "
                              "--remote_saves turns it on)");
            return s_send_reply(conn, &r);
        }
        if (save)
            pthread_mutex_lock(&sv->file);
        engine_request(sv->e, sv->g, method, url + 5, &a, &r);
        if (save)
            pthread_mutex_unlock(&sv->file);
        return s_send_reply(conn, &r);
    }
    /* /saved (the viewer's saved games) is /games here: the record file. */
    char games_url[64];
    if (!strcmp(url, "/saved") || !strncmp(url, "/saved/", 7)) {
        snprintf(games_url, sizeof games_url, "/games%.50s", url + 6);
        url = games_url;
    }
    if (!strcmp(url, "/games") || !strncmp(url, "/games/", 7)) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD"))
            return s_send(conn, 405, "text/plain", "only GET\n", 9, true);
        s_games(sv, url, &a, &r);
        return s_send_reply(conn, &r);
    }
    engine_reply_line(&r, 404,
                      "not found: try /play, /viewer, /api/info, /games, /saved, /healthz");
    return s_send_reply(conn, &r);
}

static void s_done(void *cls, struct MHD_Connection *conn, void **state,
                   enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)why;
    http_guard_idle(conn);
    free(*state);
    *state = NULL;
}

int cmd_serve(int argc, char **argv)
{
    static const char usage[] =
        "usage: kz serve --model M [--game G] [--port P] [--bind ADDR] [--sims N]\n"
        "                [--records FILE] [--tb_dir D]\n\n"
        "Serves the play page on its own, without a cluster: open http://ADDR:P/play and\n"
        "play the engine (M with PUCT search, N simulations per move by default; the page\n"
        "chooses your colour and the simulations, shows the engine's value, its top moves\n"
        "on request, its opinion of your moves, and lets you undo and flip the board).\n"
        "Finished games are appended to FILE as records (kz records FILE; the viewer at\n"
        "/viewer replays them). The engine's JSON API is /api/ (docs/web.md). M is a model\n"
        "file (kz model fetch URL best.kzm gets the cluster's best) or `uniform`; --player\n"
        "SPEC serves another player instead (its own strength: --sims does not apply).\n"
        "--tb_dir D gives the engine the endgame tables of D (Khreibaga, kz tb build):\n"
        "where they cover the position it plays their best action and the page shows the\n"
        "exact value (\"tables\": true in /api/analyse).\n"
        "Ctrl-C stops it.\n\n";
    serve_opts o;
#define CONFIG_STRUCT serve_opts
    static const config_option rows[] = {
        KZ_GAME_OPTION(serve_opts, game),
        CONFIG_ROW_STRING(model, "", "the engine's network: a model file, or uniform"),
        {"player", CONFIG_STRING, "", 0, 0, offsetof(serve_opts, spec),
         "the engine as a player spec instead of --model"},
        CONFIG_ROW_INT(port, "8090", 1, 65535, "HTTP port"),
        CONFIG_ROW_STRING(bind, "127.0.0.1",
                          "IPv4 address to listen on (0.0.0.0: every interface)"),
        CONFIG_ROW_INT(sims, "0", 0, PLAYER_MAX_SIMS,
                       "simulations per move unless the page asks for others (0 = the game's: "
                       "Khreibaga 200)"),
        CONFIG_ROW_INT(max_sims, "5000", 1, PLAYER_MAX_SIMS, "most simulations a page may ask for"),
        {"http_connections", CONFIG_INT, "512", 8, 65536, offsetof(serve_opts, connections),
         "connections at once at most (a thread each); an eighth is kept free for new ones "
         "(the coordinator's http_connections)"},
        {"http_per_ip", CONFIG_INT, "32", 1, 65536, offsetof(serve_opts, per_ip),
         "connections at once from one address at most"},
        {"http_timeout_s", CONFIG_INT, "10", 1, 3600, offsetof(serve_opts, timeout_s),
         "a connection silent this long, or still sending its request header after this long, "
         "is closed"},
        CONFIG_ROW_STRING(records, "play.kzr",
                          "record file the finished games are appended to; \"\" = not saved"),
        CONFIG_ROW_BOOL(remote_saves, "false",
                        "pages opened from other machines may save their games too (by default "
                        "only this machine's: anyone who reaches the port could fill the disk)"),
        CONFIG_ROW_INT(saves_per_hour, "120", 1, 1000000,
                       "games saved an hour at most (bursts of up to 20); more are refused (429)"),
        CONFIG_ROW_DOUBLE(records_max_mb, "64", 0.0001, 1e6,
                          "no game is saved once the record file has this size (507)"),
        CONFIG_ROW_STRING(tb_dir, "",
                          "endgame tables (kz tb build; Khreibaga): positions they cover are "
                          "answered by them, and the search values those below exactly; "
                          "\"\" = none"),
    };
#undef CONFIG_STRUCT
    const char *words[argc];
    size_t nw;
    int rc = kz_parse_args("serve", usage, rows, sizeof rows / sizeof rows[0], &o, argc, argv,
                           words, (size_t)argc, &nw);
    if (rc >= 0)
        return rc;
    const game_def *g = kz_game_of_model("serve", o.game, sizeof o.game, o.model);
    if (!g)
        return 2;
    if (!o.sims)
        o.sims = g->simulations;
    if (nw)
        return kz_usage_error("serve: unexpected argument '%s' (see kz serve --help)", words[0]);
    if (!o.model[0] && !o.spec[0])
        return kz_usage_error("serve: give the engine: --model FILE (or --model uniform, or "
                              "--player SPEC)");
    if (o.model[0] && o.spec[0])
        return kz_usage_error("serve: give either --model or --player, not both");
    if (o.sims > o.max_sims)
        return kz_usage_error("serve: --sims %ld is above --max_sims %ld", o.sims, o.max_sims);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)o.port);
    if (inet_pton(AF_INET, o.bind, &addr.sin_addr) != 1)
        return kz_usage_error("serve: --bind '%s' is not an IPv4 address", o.bind);
    engine_config ec;
    engine_config_default(&ec);
    ec.model = o.model;
    ec.spec = o.spec;
    ec.sims = (int)o.sims;
    ec.max_sims = (int)o.max_sims;
    ec.records = o.records;
    ec.saves_per_hour = (int)o.saves_per_hour;
    ec.records_max_mb = o.records_max_mb;
    ec.tb_dir = o.tb_dir;
    char err[700];
    server sv = {.g = g, .records = o.records[0] ? o.records : NULL};
    sv.remote_saves = o.remote_saves;
    sv.e = engine_new(g, &ec, err, sizeof err);
    if (!sv.e)
        return kz_usage_error("serve: %s", err);
    if (sv.records) { /* a damaged file is refused now, not at the end of a game */
        record_file *f;
        char warn[600];
        if (record_file_append(sv.records, &f, warn, sizeof warn, err, sizeof err)) {
            engine_destroy(&sv.e);
            return kz_usage_error("serve: --records: %s", err);
        }
        if (warn[0])
            log_warn("serve: --records: %s", warn);
        record_file_close(&f);
    }
    pthread_mutex_init(&sv.file, NULL);
    /* The coordinator's limits (server/status.c): connections in all and
     * per address, idle time, and the guard's free share. */
    http_guard *guard = http_guard_new((unsigned)o.connections, 0);
    struct MHD_Daemon *d = !guard ? NULL : MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
        (uint16_t)o.port, http_guard_accept, guard, s_http, &sv, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, (unsigned)o.connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o.per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)o.timeout_s, MHD_OPTION_NOTIFY_COMPLETED, s_done, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, guard, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(512u << 10), MHD_OPTION_END);
    int status = 0;
    if (!d) {
        fprintf(stderr, "kz: serve: cannot listen on %s:%ld (port in use?)\n", o.bind, o.port);
        status = 1;
        goto out;
    }
    struct sigaction sa = {.sa_handler = s_on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("kz serve: play at http://%s:%ld/play (the engine: %s%s%s)\n", o.bind, o.port,
           o.model[0] ? "mcts:" : "", o.model[0] ? o.model : o.spec,
           o.model[0] ? "" : ", its own simulations");
    if (engine_tb_pieces(sv.e))
        printf("  endgame tables: every position of up to %d pieces (%s)\n",
               engine_tb_pieces(sv.e), o.tb_dir);
    if (sv.records)
        printf("  finished games are appended to %s (the viewer: http://%s:%ld/viewer)\n",
               sv.records, o.bind, o.port);
    printf("  Ctrl-C stops it.\n");
    fflush(stdout);
    while (!s_stop) {
        struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
        http_guard_sweep(guard, (double)o.timeout_s); /* slow-loris headers */
    }
    printf("kz serve: stopping\n");
    MHD_stop_daemon(d);
out:
    http_guard_free(&guard);
    pthread_mutex_destroy(&sv.file);
    engine_destroy(&sv.e);
    return status;
}
