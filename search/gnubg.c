/* gnubg: GNU Backgammon's text mode through a socket pair. See gnubg.h. */
#include "search/gnubg.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "games/backgammon.h"

struct gnubg {
    pid_t pid;
    int fd;            /* our end of the socket pair: gnubg's stdin and stdout */
    double timeout_s;  /* per answer */
    unsigned sync;     /* the sentinel counter */
    char *buf;         /* the last answer */
    size_t len, cap;
    gnubg_tick_fn tick; /* called while waiting (gnubg_set_tick), or NULL */
    void *tick_ctx;
};

#define TICK_S 0.1 /* the tick's period while an answer is awaited */

void gnubg_set_tick(gnubg *g, gnubg_tick_fn fn, void *ctx)
{
    g->tick = fn;
    g->tick_ctx = ctx;
}

const char *gnubg_path(void)
{
    const char *env = getenv("KZ_GNUBG");
    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    if (access("/usr/games/gnubg", X_OK) == 0)
        return "/usr/games/gnubg";
    const char *path = getenv("PATH");
    static char found[4096];
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && n < sizeof found - 8) {
            snprintf(found, sizeof found, "%.*s/gnubg", (int)n, path);
            if (access(found, X_OK) == 0)
                return found;
        }
        path = end ? end + 1 : NULL;
    }
    return NULL;
}

int gnubg_pid(const gnubg *g) { return g ? (int)g->pid : -1; }

static int s_send(gnubg *g, const char *line, char *err, size_t errlen)
{
    size_t n = strlen(line), off = 0;
    while (off < n) {
        ssize_t w = send(g->fd, line + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return err_set(err, errlen, KZ_EIO, "gnubg (pid %d) is gone: %s", (int)g->pid,
                           strerror(errno));
        off += (size_t)w;
    }
    return 0;
}

/* Sends the sentinel and reads everything up to its answer into g->buf. */
static int s_sync(gnubg *g, char *err, size_t errlen)
{
    char cmd[32], want[48];
    g->sync++;
    snprintf(cmd, sizeof cmd, "kzsync%u\n", g->sync);
    snprintf(want, sizeof want, "`kzsync%u'", g->sync);
    int rc = s_send(g, cmd, err, errlen);
    if (rc)
        return rc;
    g->len = 0;
    double deadline = time_now() + g->timeout_s, next_tick = time_now() + TICK_S;
    for (;;) {
        if (g->len + 4096 + 1 > g->cap) {
            g->cap = g->cap ? 2 * g->cap : 65536;
            g->buf = realloc(g->buf, g->cap);
            KZ_CHECK(g->buf);
        }
        double left = deadline - time_now();
        if (left <= 0)
            return err_set(err, errlen, KZ_EIO, "gnubg (pid %d) did not answer within %.0f s",
                           (int)g->pid, g->timeout_s);
        if (g->tick) {
            double now = time_now();
            if (now >= next_tick) {
                if (g->tick(g->tick_ctx))
                    return err_set(err, errlen, KZ_ECANCELED,
                                   "gnubg (pid %d): stopped while waiting", (int)g->pid);
                next_tick = now + TICK_S;
            }
            if (left > next_tick - now)
                left = next_tick - now;
        }
        struct pollfd p = {.fd = g->fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t r = read(g->fd, g->buf + g->len, g->cap - g->len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int status = 0;
            pid_t w = 0; /* its end of the socket closes as it dies: a moment to reap it */
            for (int i = 0; i < 20 && w == 0; i++) {
                w = waitpid(g->pid, &status, WNOHANG);
                if (w == 0)
                    usleep(5000);
            }
            if (w == g->pid) {
                g->pid = -1;
                return err_set(err, errlen, KZ_EIO, "gnubg exited (%s %d) mid-game",
                               WIFSIGNALED(status) ? "signal" : "status",
                               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            }
            return err_set(err, errlen, KZ_EIO, "gnubg (pid %d) closed its output", (int)g->pid);
        }
        g->len += (size_t)r;
        g->buf[g->len] = '\0';
        if (strstr(g->buf, want))
            return 0;
    }
}

static int s_cmds(gnubg *g, const char *lines, char *err, size_t errlen)
{
    int rc = s_send(g, lines, err, errlen);
    return rc ? rc : s_sync(g, err, errlen);
}

/* The levels' chequer-play settings (gnubg's eval.c aecSettings; research
 * notes): plies, noise; world class and above use gnubg's move filters. */
static const struct {
    const char *name;
    int plies;
    double noise;
} s_levels[] = {
    {"beginner", 0, 0.060},   {"casual", 0, 0.050}, {"intermediate", 0, 0.040},
    {"advanced", 0, 0.015},   {"expert", 0, 0.0},   {"worldclass", 2, 0.0},
    {"supremo", 2, 0.0},      {"grandmaster", 3, 0.0},
};

int gnubg_level_check(const char *level, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof s_levels / sizeof s_levels[0]; i++)
        if (level && !strcmp(level, s_levels[i].name))
            return 0;
    return err_set(err, errlen, KZ_EINVAL,
                   "unknown gnubg level '%s' (beginner, casual, intermediate, advanced, "
                   "expert, worldclass, supremo, grandmaster)", level ? level : "");
}

int gnubg_open(gnubg **out, const char *level, double timeout_s, char *err, size_t errlen)
{
    *out = NULL;
    int li = 4;
    if (level) {
        li = -1;
        for (size_t i = 0; i < sizeof s_levels / sizeof s_levels[0]; i++)
            if (!strcmp(level, s_levels[i].name))
                li = (int)i;
        if (li < 0)
            return err_set(err, errlen, KZ_EINVAL,
                           "unknown gnubg level '%s' (beginner, casual, intermediate, advanced, "
                           "expert, worldclass, supremo, grandmaster)", level);
    }
    const char *path = gnubg_path();
    if (!path)
        return err_set(err, errlen, KZ_EIO,
                       "gnubg is not installed (apt-get install gnubg, or set KZ_GNUBG)");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return err_set(err, errlen, KZ_EIO, "socketpair: %s", strerror(errno));
    /* Its environment made here: between fork and exec a child of a threaded
     * process (a worker's ZeroMQ threads, the coordinator's) may call only
     * async-signal-safe functions, which setenv (malloc) is not. */
    size_t n_env = 0;
    while (environ[n_env])
        n_env++;
    char **envp = xmalloc((n_env + 3) * sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (strncmp(environ[i], "LANG=", 5) && strncmp(environ[i], "LC_ALL=", 7))
            envp[k++] = environ[i];
    envp[k++] = "LANG=C";
    envp[k++] = "LC_ALL=C";
    envp[k] = NULL;
    char *const argv[] = {"gnubg", "-t", "-q", "-r", NULL};
    pid_t pid = fork();
    if (pid < 0) {
        free(envp);
        close(sv[0]);
        close(sv[1]);
        return err_set(err, errlen, KZ_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(sv[1], 0);
        dup2(sv[1], 1);
        dup2(sv[1], 2);
        execve(path, argv, envp);
        _exit(127);
    }
    free(envp);
    close(sv[1]);
    gnubg *g = xcalloc(1, sizeof *g);
    g->pid = pid;
    g->fd = sv[0];
    g->timeout_s = timeout_s > 0 ? timeout_s : 60;
    char cmds[1024];
    int plies = s_levels[li].plies;
    snprintf(cmds, sizeof cmds,
             "set player 0 human\nset player 1 human\n"
             "set evaluation chequerplay evaluation cubeful off\n"
             "set evaluation chequerplay evaluation plies %d\n"
             "set evaluation chequerplay evaluation prune on\n"
             "set evaluation chequerplay evaluation deterministic on\n"
             "set evaluation chequerplay evaluation noise %.3f\n"
             "new game\n",
             plies, s_levels[li].noise);
    int rc = s_cmds(g, cmds, err, errlen);
    if (rc) {
        gnubg_close(g);
        return rc;
    }
    *out = g;
    return 0;
}

void gnubg_close(gnubg *g)
{
    if (!g)
        return;
    if (g->pid > 0) {
        (void)s_send(g, "quit\ny\n", NULL, 0);
        shutdown(g->fd, SHUT_WR);
        for (int i = 0; i < 5; i++) { /* up to 50 ms to go by itself (nothing to save) */
            if (waitpid(g->pid, NULL, WNOHANG) == g->pid) {
                g->pid = -1;
                break;
            }
            usleep(10000);
        }
        if (g->pid > 0) {
            kill(g->pid, SIGKILL);
            waitpid(g->pid, NULL, 0);
        }
    }
    close(g->fd);
    free(g->buf);
    free(g);
}

static int s_hint(gnubg *g, const char *id, int d1, int d2, int max_moves, char (*moves)[64],
                  float *equity, int *n, char *err, size_t errlen)
{
    *n = 0;
    if (strlen(id) != 14 || strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789+/") != 14)
        return err_set(err, errlen, KZ_EINVAL, "'%s' is not a Position ID", id);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "set board %s\nset dice %d %d\nhint %d\n", id, d1, d2,
             max_moves);
    int rc = s_cmds(g, cmd, err, errlen);
    if (rc)
        return rc;
    const char *dice = strstr(g->buf, "The dice have been set to");
    if (!dice || strstr(g->buf, "Illegal position") || strstr(g->buf, "llegal or unparsable"))
        return err_set(err, errlen, KZ_EIO, "gnubg did not take position %s with %d%d", id, d1,
                       d2);
    if (strstr(dice, "There are no legal moves"))
        return 0;
    /* "    1. Cubeless 0-ply    8/5 6/5       Eq.: +0.200" */
    for (const char *p = dice; (p = strchr(p, '\n')); ) {
        p++;
        const char *q = p;
        while (*q == ' ')
            q++;
        if (!isdigit((unsigned char)*q))
            continue;
        while (isdigit((unsigned char)*q))
            q++;
        if (q[0] != '.' || q[1] != ' ')
            continue;
        const char *ply = strstr(q, "-ply"), *eq = strstr(q, "Eq.:"), *nl = strchr(q, '\n');
        if (!ply || !eq || (nl && (ply > nl || eq > nl)))
            continue;
        ply += 4;
        while (*ply == ' ')
            ply++;
        const char *e = eq;
        while (e > ply && e[-1] == ' ')
            e--;
        if (*n < max_moves) {
            snprintf(moves[*n], 64, "%.*s", (int)(e - ply), ply);
            if (equity)
                equity[*n] = strtof(eq + 4, NULL);
        }
        (*n)++;
    }
    if (!*n)
        return err_set(err, errlen, KZ_EIO, "gnubg listed no moves for %s %d%d", id, d1, d2);
    return 0;
}

int gnubg_hint(gnubg *g, const char *id, int d1, int d2, int max_moves, char (*moves)[64],
               int *n, char *err, size_t errlen)
{
    return s_hint(g, id, d1, d2, max_moves, moves, NULL, n, err, errlen);
}

int gnubg_equities(gnubg *g, const char *id, int d1, int d2, int max_moves, char (*moves)[64],
                   float *equity, int *n, char *err, size_t errlen)
{
    return s_hint(g, id, d1, d2, max_moves, moves, equity, n, err, errlen);
}

/* A point in gnubg's notation at *p: "bar" 25, "off" 0, 1..24. */
static int s_point(const char **p)
{
    if (!strncmp(*p, "bar", 3)) {
        *p += 3;
        return 25;
    }
    if (!strncmp(*p, "off", 3)) {
        *p += 3;
        return 0;
    }
    if (!isdigit((unsigned char)**p))
        return -1;
    int v = 0;
    while (isdigit((unsigned char)**p))
        v = v * 10 + (*(*p)++ - '0');
    return v >= 1 && v <= 24 ? v : -1;
}

int gnubg_play_notation(const char *text, uint8_t own[25], uint8_t opp[25])
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        int pts[8], k = 0;
        for (;;) {
            int v = s_point(&p);
            if (v < 0 || k == 8)
                return KZ_EINVAL;
            pts[k++] = v;
            if (*p == '*')
                p++;
            if (*p != '/')
                break;
            p++;
        }
        int rep = 1;
        if (*p == '(') {
            rep = (int)strtol(p + 1, (char **)&p, 10);
            if (*p != ')' || rep < 1 || rep > 4)
                return KZ_EINVAL;
            p++;
        }
        if (k < 2 || (*p && *p != ' '))
            return KZ_EINVAL;
        for (int r = 0; r < rep; r++)
            for (int h = 0; h + 1 < k; h++) {
                int from = pts[h] - 1, to = pts[h + 1] - 1; /* bar 24, off -1 */
                if (from < 0 || !own[from])
                    return KZ_EINVAL;
                own[from]--;
                if (to >= 0) {
                    own[to]++;
                    if (opp[23 - to] == 1) {
                        opp[23 - to] = 0;
                        opp[24]++;
                    }
                }
            }
    }
    return 0;
}

static int s_cmp16(const void *a, const void *b) { return strcmp(a, b); }

int gnubg_compare_moves(gnubg *g, const game_state *s, int *ours, int *theirs, char *err,
                        size_t errlen)
{
    const game_def *bg = &backgammon_game;
    char pos[GAME_POSITION_CHARS + 1];
    bg->format_position(s, pos, sizeof pos);
    if (bg->is_chance(s) || bg->result(s).over || bg->mid_turn(s) || strlen(pos) < 17)
        return err_set(err, errlen, KZ_EINVAL, "'%s' is not a fresh roll to play", pos);
    enum { MAX = 4096 };
    bg_whole_move *mine = xmalloc(sizeof *mine * MAX);
    char (*text)[64] = xmalloc(sizeof *text * MAX);
    char (*a)[16] = xmalloc(sizeof *a * MAX), (*b)[16] = xmalloc(sizeof *b * MAX);
    int nm = backgammon_whole_moves(s, mine, MAX), nt = 0, rc = 0;
    char id[16];
    snprintf(id, sizeof id, "%.14s", pos);
    rc = gnubg_hint(g, id, pos[15] - '0', pos[16] - '0', MAX, text, &nt, err, errlen);
    if (!rc && (nm > MAX || nt > MAX))
        rc = err_set(err, errlen, KZ_EINVAL, "%s: more than %d moves", pos, MAX);
    for (int i = 0; !rc && i < nt; i++) {
        uint8_t own[25], opp[25];
        backgammon_parse_id(id, own, opp, NULL, 0);
        if (gnubg_play_notation(text[i], own, opp))
            rc = err_set(err, errlen, 1, "%s: gnubg's move '%s' does not play here", pos,
                         text[i]);
        backgammon_position_id(own, opp, b[i]);
    }
    if (!rc) {
        for (int i = 0; i < nm; i++)
            snprintf(a[i], 16, "%s", mine[i].after);
        qsort(a, (size_t)nm, 16, s_cmp16);
        qsort(b, (size_t)nt, 16, s_cmp16);
        int i = 0, j = 0;
        while (!rc && (i < nm || j < nt)) {
            int c = i == nm ? 1 : j == nt ? -1 : strcmp(a[i], b[j]);
            if (c < 0) {
                const char *t = "";
                for (int k = 0; k < nm; k++)
                    if (!strcmp(mine[k].after, a[i]))
                        t = mine[k].text;
                rc = err_set(err, errlen, 1, "%s: our move %s (to %s) is not gnubg's", pos, t,
                             a[i]);
            } else if (c > 0) {
                rc = err_set(err, errlen, 1, "%s: gnubg's move to %s is not ours (%d vs %d)",
                             pos, b[j], nm, nt);
            }
            i++, j++;
        }
    }
    if (ours)
        *ours = nm;
    if (theirs)
        *theirs = nt;
    free_all(mine, text, a, b);
    return rc;
}

int gnubg_move_loss(gnubg *g, const game_state *start, const char *after_id, float *loss,
                    int *n_moves, char *err, size_t errlen)
{
    const game_def *bg = &backgammon_game;
    char pos[GAME_POSITION_CHARS + 1], id[16];
    bg->format_position(start, pos, sizeof pos);
    if (bg->is_chance(start) || bg->result(start).over || bg->mid_turn(start) ||
        strlen(pos) < 17)
        return err_set(err, errlen, KZ_EINVAL, "'%s' is not a fresh roll to play", pos);
    snprintf(id, sizeof id, "%.14s", pos);
    enum { MAX = 4096 };
    char (*text)[64] = xmalloc(sizeof *text * MAX);
    float *eq = xmalloc(sizeof *eq * MAX);
    int n = 0;
    int rc = s_hint(g, id, pos[15] - '0', pos[16] - '0', MAX, text, eq, &n, err, errlen);
    *n_moves = n;
    *loss = 0;
    bool found = false;
    for (int i = 0; !rc && i < n && i < MAX && !found; i++) {
        uint8_t own[25], opp[25];
        char after[16];
        backgammon_parse_id(id, own, opp, NULL, 0);
        if (gnubg_play_notation(text[i], own, opp))
            continue;
        backgammon_position_id(own, opp, after);
        if (!strcmp(after, after_id)) {
            *loss = eq[0] - eq[i];
            found = true;
        }
    }
    if (!rc && n > 0 && !found)
        rc = err_set(err, errlen, KZ_EINVAL, "%s: the move to %s is none of gnubg's", pos,
                     after_id);
    free(text);
    free(eq);
    return rc;
}
