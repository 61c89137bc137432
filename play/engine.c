/* engine: analyses for people, and the JSON API of the play page and the
 * game viewer (see engine.h). */
#include "play/engine.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "nn/evaluator.h"
#include "nn/model.h"
#include "nn/modelfile.h"
#include "common/util.h"
#include "games/view.h"

#define ENGINE_TOP_SHARES 5 /* visit shares per move in engine_json_game */

struct engine {
    const game_def *g;          /* the game */
    evaluator_net *net;         /* the network (owned), NULL for uniform or a spec */
    evaluator ev;               /* what the search evaluates with (network engines) */
    bool network;               /* a network engine: simulations per request */
    char source[PLAYER_SPEC_MAX]; /* the model's path (or "uniform"), or the spec */
    char label[PLAYER_SPEC_MAX];  /* the name on the pages */
    uint32_t version;           /* the model's version, 0 none */
    int sims;                   /* default simulations */
    int max_sims;               /* most simulations a request may ask for */
    pthread_mutex_t search;     /* one search at a time (the evaluator's workspace) */
    player *p;                  /* the current player (under `search`) */
    tb_set *tb_own;             /* tables opened from tb_dir (owned), NULL */
    const tb_set *tb;           /* the tables in use (tb_own or borrowed), NULL none */
    game_oracle oracle;         /* tb as the players' oracle (tb_oracle) */
    int p_sims;                 /* its simulations (network engines) */
    char records[1024];         /* saved games go here, "" none */
    bool show_paths;            /* engine_config's */
    double save_rate;           /* saves a second allowed (saves_per_hour / 3600) */
    double save_burst;          /* the bucket's size */
    double save_tokens;         /* saves allowed now (under `save`) */
    double save_at;             /* time_now() of save_tokens */
    uint64_t records_max;       /* bytes */
    pthread_mutex_t save;       /* one save at a time */
    uint8_t saved[ENGINE_SAVED_IDS][RECORD_ID_BYTES]; /* ids saved lately (ring) */
    long saved_index[ENGINE_SAVED_IDS]; /* their index in the file, 1-based */
    int n_saved;                /* saves so far (ring position) */
};

/* --- text --------------------------------------------------------------------------- */

/* text with the directories of every path in it left out: a '/' drops what
 * came before it back to the last ':', ',', ' ', '=' or '(' (a spec
 * "mcts:/srv/m.kzm:30" reads "mcts:m.kzm:30"). In place. */
static char *s_strip_dirs(char *text)
{
    size_t o = 0, word = 0;
    for (size_t i = 0; text[i]; i++) {
        char ch = text[i];
        if (ch == '/') {
            o = word;
            continue;
        }
        text[o++] = ch;
        if (strchr(":, =(", ch))
            word = o;
    }
    text[o] = 0;
    return text;
}

/* text (cap bytes) with every occurrence of path replaced by its file name
 * (the part after its last '/'). In place; a longer result is cut. */
static void s_unpath(char *text, size_t cap, const char *path)
{
    const char *name = strrchr(path, '/');
    size_t pl = strlen(path);
    if (!name || !pl)
        return;
    name++;
    char out[1024];
    size_t o = 0;
    for (const char *t = text; *t && o + 1 < sizeof out;) {
        if (!strncmp(t, path, pl)) {
            o += (size_t)snprintf(out + o, sizeof out - o, "%s", name);
            if (o >= sizeof out)
                o = sizeof out - 1;
            t += pl;
        } else {
            out[o++] = *t++;
        }
    }
    out[o] = 0;
    snprintf(text, cap, "%s", out);
}

/* The record file as answers name it (show_paths, or its file name). */
static const char *s_records_shown(const engine *e)
{
    const char *name = strrchr(e->records, '/');
    return e->show_paths || !name ? e->records : name + 1;
}

/* A number JSON can hold (NaN and infinity are not JSON: null). */
/* Saves and reads of record files take turns in the process (a reader never
 * sees half a record being appended). */
static pthread_mutex_t s_records_lock = PTHREAD_MUTEX_INITIALIZER;

static void sb_num(strbuf *b, double x, int decimals)
{
    if (isfinite(x))
        strbuf_printf(b, "%.*f", decimals, x);
    else
        strbuf_printf(b, "null");
}

void engine_reply_free(engine_reply *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

void engine_reply_line(engine_reply *r, int code, const char *fmt, ...)
{
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    /* One line: whatever came from the request is made printable. */
    size_t n = text_line_vformat(text, sizeof text, true, fmt, ap);
    va_end(ap);
    r->code = code;
    r->type = "text/plain; charset=utf-8";
    r->body = xmalloc(n + 1);
    memcpy(r->body, text, n + 1);
    r->len = n;
}

static void s_reply_json(engine_reply *r, strbuf *b)
{
    r->code = 200;
    r->type = "application/json";
    r->body = b->s;
    r->len = b->len;
    b->s = NULL;
}

/* --- the engine ---------------------------------------------------------------------- */

void engine_config_default(engine_config *c)
{
    *c = (engine_config){.sims = 200, .max_sims = 5000};
}

static engine *s_engine_alloc(const game_def *g, const engine_config *cfg)
{
    engine *e = xcalloc(1, sizeof *e);
    e->g = g;
    e->sims = cfg->sims > 0 ? cfg->sims : 200;
    e->max_sims = cfg->max_sims > 0 ? cfg->max_sims : 5000;
    if (e->sims > e->max_sims)
        e->sims = e->max_sims;
    pthread_mutex_init(&e->search, NULL);
    pthread_mutex_init(&e->save, NULL);
    if (cfg->records)
        snprintf(e->records, sizeof e->records, "%s", cfg->records);
    e->show_paths = cfg->show_paths;
    int per_hour = cfg->saves_per_hour > 0 ? cfg->saves_per_hour : ENGINE_SAVES_PER_HOUR;
    e->save_rate = per_hour / 3600.0;
    e->save_burst = per_hour < ENGINE_SAVE_BURST ? per_hour : ENGINE_SAVE_BURST;
    e->save_tokens = e->save_burst;
    e->save_at = time_now();
    double mb = cfg->records_max_mb > 0 ? cfg->records_max_mb : ENGINE_RECORDS_MAX_MB;
    e->records_max = (uint64_t)(mb * (1 << 20));
    return e;
}

/* The tables of cfg (tb, else tb_dir opened), or none. 0, or a one-line
 * reason in err. */
static int s_engine_tables(engine *e, const engine_config *cfg, char *err, size_t errlen)
{
    bool dir = cfg->tb_dir && cfg->tb_dir[0];
    if (!cfg->tb && !dir)
        return 0;
    if (e->g != tb_game())
        return err_set(err, errlen, KZ_EINVAL, "tb_dir: the endgame tables are %s's, not %s's",
                       tb_game()->name, e->g->name);
    if (cfg->tb) {
        e->tb = cfg->tb;
    } else {
        char terr[512];
        e->tb_own = tb_open(cfg->tb_dir, 0, terr, sizeof terr);
        if (!e->tb_own)
            return err_set(err, errlen, KZ_EINVAL, "tb_dir: %s", terr);
        if (tb_pieces(e->tb_own) == 0)
            return err_set(err, errlen, KZ_EINVAL, "tb_dir: %s: no endgame tables there "
                           "(kz tb build --dir %s)", cfg->tb_dir, cfg->tb_dir);
        e->tb = e->tb_own;
    }
    e->oracle = tb_oracle(e->tb);
    if (e->p)
        player_set_oracle(e->p, &e->oracle);
    return 0;
}

/* The page's name of the engine: the label, else the spec it plays. */
static void s_set_label(engine *e, const engine_config *cfg)
{
    if (cfg->label && cfg->label[0])
        snprintf(e->label, sizeof e->label, "%s", cfg->label);
    else if (e->network) /* the model file's name, without its directories */
        snprintf(e->label, sizeof e->label, "%s",
                 strrchr(e->source, '/') ? strrchr(e->source, '/') + 1 : e->source);
    else
        snprintf(e->label, sizeof e->label, "%s", e->source);
    if (!cfg->label && !e->show_paths) /* a spec's model files without their directories */
        s_strip_dirs(e->label);
}

engine *engine_new(const game_def *g, const engine_config *cfg, char *err, size_t errlen)
{
    engine *e = s_engine_alloc(g, cfg);
    if (cfg->model && cfg->model[0]) {
        if (strlen(cfg->model) >= sizeof e->source) {
            err_set(err, errlen, KZ_EINVAL, "model path too long");
            engine_destroy(&e);
            return NULL;
        }
        snprintf(e->source, sizeof e->source, "%s", cfg->model);
        e->network = true;
        if (!strcmp(cfg->model, "uniform")) {
            e->ev = evaluator_uniform(g);
        } else {
            /* A tree sends at most leaves_per_tree leaves to one batch. */
            mcts_settings s = player_mcts_settings(e->sims);
            if (evaluator_net_load(cfg->model, g, s.leaves_per_tree, &e->net, err, errlen)) {
                engine_destroy(&e);
                return NULL;
            }
            e->ev = evaluator_net_get(e->net);
            e->version = evaluator_net_version(e->net);
        }
    } else {
        const char *spec = cfg->spec && cfg->spec[0] ? cfg->spec : "uct:1000";
        if (strlen(spec) >= sizeof e->source) {
            err_set(err, errlen, KZ_EINVAL, "player spec too long");
            engine_destroy(&e);
            return NULL;
        }
        snprintf(e->source, sizeof e->source, "%s", spec);
        e->p = player_from_spec(g, spec, err, errlen);
        if (!e->p) {
            engine_destroy(&e);
            return NULL;
        }
    }
    if (s_engine_tables(e, cfg, err, errlen)) {
        engine_destroy(&e);
        return NULL;
    }
    s_set_label(e, cfg);
    return e;
}

engine *engine_new_bytes(const game_def *g, const uint8_t *blob, size_t len, uint32_t version,
                         const engine_config *cfg, char *err, size_t errlen)
{
    engine *e = s_engine_alloc(g, cfg);
    mcts_settings s = player_mcts_settings(e->sims);
    if (evaluator_net_from_bytes(blob, len, g, s.leaves_per_tree, EVALUATOR_PRECISION_DEFAULT,
                                 &e->net, err, errlen)) {
        engine_destroy(&e);
        return NULL;
    }
    e->ev = evaluator_net_get(e->net);
    e->network = true;
    e->version = version;
    snprintf(e->source, sizeof e->source, "v%u", version);
    if (s_engine_tables(e, cfg, err, errlen)) {
        engine_destroy(&e);
        return NULL;
    }
    s_set_label(e, cfg);
    return e;
}

void engine_take_saves(engine *e, const engine *from)
{
    if (!from)
        return;
    e->save_tokens = from->save_tokens < e->save_burst ? from->save_tokens : e->save_burst;
    e->save_at = from->save_at;
}

void engine_destroy(engine **pe)
{
    if (!pe || !*pe)
        return;
    engine *e = *pe;
    player_destroy(&e->p);
    evaluator_net_destroy(&e->net);
    tb_close(&e->tb_own);
    pthread_mutex_destroy(&e->search);
    pthread_mutex_destroy(&e->save);
    free(e);
    *pe = NULL;
}

uint32_t engine_model_version(const engine *e) { return e->version; }

int engine_tb_pieces(const engine *e) { return e->tb ? tb_pieces(e->tb) : 0; }

bool engine_is_capture(const game_def *g, const game_state *s, int action)
{
    return g->is_capture && g->is_capture(s, action);
}

void engine_format_action(const game_def *g, const game_state *s, int action, char *buf,
                          size_t len)
{
    g->format_action(action, buf, len);
    char *dash = strchr(buf, '-');
    if (dash && engine_is_capture(g, s, action))
        *dash = 'x';
}

/* The player for `sims` simulations (network engines build one per count). */
static int s_player_for(engine *e, int sims, char *err, size_t errlen)
{
    if (!e->network)
        return 0;
    if (e->p && e->p_sims == sims)
        return 0;
    player_destroy(&e->p);
    mcts_settings s = player_mcts_settings(sims);
    char name[PLAYER_SPEC_MAX + 16];
    snprintf(name, sizeof name, "mcts:%s:%d", e->source, sims);
    e->p = player_mcts_new_evaluator(e->g, e->ev, &s, name, err, errlen);
    e->p_sims = e->p ? sims : 0;
    if (e->p && e->tb)
        player_set_oracle(e->p, &e->oracle);
    return e->p ? 0 : KZ_EINVAL;
}

/* Locks the search, giving up after ENGINE_WAIT_S. */
static int s_lock_search(engine *e)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ENGINE_WAIT_S;
    return pthread_mutex_timedlock(&e->search, &deadline) ? KZ_ETIMEOUT : 0;
}

/* When the engine's tables cover s (not over): info is theirs (engine.h,
 * engine_analysis.tables) and true. */
static bool s_from_tables(const engine *e, const game_state *s, player_info *in)
{
    int wdl, best;
    tb_action_value av[GAME_MAX_LEGAL];
    if (!e->tb || tb_probe_wdl(e->tb, s, &wdl) || tb_best_action(e->tb, s, &best))
        return false;
    int n = tb_action_values(e->tb, s, av);
    if (n <= 0)
        return false;
    in->action = best;
    in->value = wdl;
    in->score = 0;
    in->n = n;
    in->work = 0;
    for (int i = 0; i < n; i++) {
        in->actions[i] = av[i].action;
        in->share[i] = av[i].action == best ? 1.0f : 0.0f;
        in->prior[i] = NAN;
        in->q[i] = av[i].wdl;
    }
    return true;
}

/* Whether action k goes before action l: the higher share (the tables'
 * answer: then the better exact result). */
static bool s_before(const engine_analysis *out, int k, int l)
{
    const player_info *in = &out->info;
    if (in->share[k] != in->share[l])
        return in->share[k] > in->share[l];
    return out->tables && in->q[k] > in->q[l];
}

/* Orders out->order by share, highest first (the tables': then by exact
 * result), ties by the lower action. */
static void s_order(engine_analysis *out)
{
    const player_info *in = &out->info;
    for (int i = 0; i < in->n; i++)
        out->order[i] = i;
    for (int i = 1; i < in->n; i++)
        for (int j = i; j > 0 && s_before(out, out->order[j], out->order[j - 1]); j--) {
            int t = out->order[j];
            out->order[j] = out->order[j - 1];
            out->order[j - 1] = t;
        }
}

int engine_analyse(engine *e, const game_state *s, int sims, uint64_t seed,
                   engine_analysis *out)
{
    const game_def *g = e->g;
    memset(out, 0, offsetof(engine_analysis, player));
    out->player[0] = 0;
    if (sims <= 0 || !e->network)
        sims = e->network ? e->sims : 0;
    out->sims = sims;
    int rc = s_lock_search(e);
    if (rc)
        return rc;
    char err[200];
    if ((rc = s_player_for(e, sims, err, sizeof err)) != 0) {
        log_warn("engine: %s", err);
        goto out;
    }
    snprintf(out->player, sizeof out->player, "%s", player_spec_name(e->p));
    if (!e->show_paths)
        s_strip_dirs(out->player);
    double t0 = time_now();
    int action;
    out->tables = s_from_tables(e, s, &out->info);
    if (out->tables) {
        action = out->info.action;
    } else {
        player_new_game(e->p, seed);
        if ((rc = player_choose(e->p, s, &action, &out->info)) != 0)
            goto out;
    }
    out->forced = out->info.n == 1;
    if (out->forced && !out->tables) {
        /* Step 1. Past the forced actions, to a decision or the end. */
        game_state t;
        g->copy(&t, s);
        int mover = g->to_move(s), hops = 0, wdl;
        uint16_t legal[GAME_MAX_LEGAL];
        g->apply(&t, action);
        while (!g->result(&t).over && g->legal_actions(&t, legal) == 1 && hops++ < 64)
            g->apply(&t, legal[0]);
        /* Step 2. Its value, back to the mover's view. */
        game_result r = g->result(&t);
        if (r.over) {
            out->info.value = game_result_value(g, r, mover);
        } else if (g->is_chance && g->is_chance(&t)) {
            out->info.value = NAN; /* the dice come next: no search stands there */
        } else if (e->tb && tb_probe_wdl(e->tb, &t, &wdl) == 0) {
            out->info.value = g->to_move(&t) == mover ? wdl : -wdl; /* exact */
        } else {
            player_info *later = xmalloc(sizeof *later);
            int a2;
            player_new_game(e->p, seed);
            rc = player_choose(e->p, &t, &a2, later);
            double v = later->value;
            free(later);
            if (rc)
                goto out;
            out->info.value = g->to_move(&t) == mover ? v : -v;
        }
    }
    out->seconds = time_now() - t0;
    s_order(out);
out:
    pthread_mutex_unlock(&e->search);
    return rc;
}

/* --- requests ------------------------------------------------------------------------ */

void engine_args_add(engine_args *a, const char *key, const char *value)
{
    if (a->n >= ENGINE_MAX_ARGS) {
        a->too_many = true;
        return;
    }
    a->key[a->n] = key ? key : "";
    a->value[a->n] = value ? value : "";
    a->n++;
}

const char *engine_arg(const engine_args *a, const char *key)
{
    for (int i = 0; a && i < a->n; i++)
        if (!strcmp(a->key[i], key))
            return a->value[i];
    return NULL;
}

/* 0 when every argument's name is one of `known` (NULL-terminated), else a
 * message naming the first stranger. */
static int s_check_args(const engine_args *a, const char *const *known, char *err,
                        size_t errlen)
{
    if (a->too_many)
        return err_set(err, errlen, KZ_EINVAL, "too many arguments (at most %d)",
                       ENGINE_MAX_ARGS);
    for (int i = 0; i < a->n; i++) {
        bool ok = false;
        for (int k = 0; known[k] && !ok; k++)
            ok = !strcmp(a->key[i], known[k]);
        if (!ok) {
            char shown[40], list[200] = "";
            text_printable(shown, sizeof shown, a->key[i], strlen(a->key[i]));
            for (int k = 0; known[k]; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                         known[k]);
            return err_set(err, errlen, KZ_EINVAL, "unknown argument '%s' (known: %s)", shown,
                           list);
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(a->key[i], a->key[j]))
                return err_set(err, errlen, KZ_EINVAL, "argument '%s' given twice", a->key[i]);
    }
    return 0;
}

/* A game replayed from a request: the start, the actions, the states. */
typedef struct replay {
    game_state start;       /* the start */
    char start_text[128];   /* its position string */
    int n;                  /* actions */
    uint16_t *actions;      /* (n) */
    game_state now;         /* after them */
    bool chance;            /* the game has dice: seed and dice below */
    uint64_t seed;          /* the game's seed (the request's `seed`, or a new one) */
    rng_t dice;             /* its dice (game_dice_seed), drawn up to `now` */
} replay;

/* The legal actions of s as "a b c" (for messages), cut to fit. */
static void s_legal_text(const game_def *g, const game_state *s, char *buf, size_t len)
{
    uint16_t legal[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, legal);
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        char a[16];
        engine_format_action(g, s, legal[i], a, sizeof a);
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", a);
        if (w < 0 || (size_t)w >= len - used) {
            if (len > 4)
                strcpy(buf + (used < len - 4 ? used : len - 4), "...");
            break;
        }
        used += (size_t)w;
    }
}

/* Parses one action string and checks it in s. 0, or a message. */
static int s_check_action(const game_def *g, const game_state *s, const char *text, int index,
                          int *action, char *err, size_t errlen)
{
    char shown[24], where[32] = "";
    text_printable(shown, sizeof shown, text, strlen(text));
    if (index > 0)
        snprintf(where, sizeof where, " (move %d)", index);
    if (g->parse_action(text, action))
        return err_set(err, errlen, KZ_EINVAL, "cannot read action '%s'%s: write src-dst, "
                       "e.g. 7-12, or 7x17 for a capture", shown, where);
    game_result r = g->result(s);
    if (r.over)
        return err_set(err, errlen, KZ_EILLEGAL, "action '%s'%s: the game is already over (%s)",
                       shown, where, game_reason_name(g, r.reason));
    if (!game_is_legal(g, s, *action)) {
        char list[240];
        s_legal_text(g, s, list, sizeof list);
        return err_set(err, errlen, KZ_EILLEGAL, "illegal action '%s'%s; legal here: %s", shown,
                       where, list);
    }
    return 0;
}

/* A seed nobody chose: the kernel's random bytes (the clock's when none). */
static uint64_t s_new_seed(void)
{
    uint64_t v = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&v, sizeof v, 1, f) != 1)
        v = mix64((uint64_t)time_wall_ms() ^ (uint64_t)(time_now() * 1e9));
    if (f)
        fclose(f);
    return v;
}

/* Nature's moves at rp->now (a game with dice): while the state is a chance
 * state, the roll its seed gives is played and appended. 0, or a message. */
static int s_roll(const game_def *g, replay *rp, char *err, size_t errlen)
{
    while (rp->chance && g->is_chance(&rp->now) && !g->result(&rp->now).over) {
        if (rp->n >= ENGINE_MAX_MOVES)
            return err_set(err, errlen, KZ_EINVAL, "moves: more than %d actions",
                           ENGINE_MAX_MOVES);
        if (!rp->actions)
            rp->actions = xmalloc(ENGINE_MAX_MOVES * sizeof *rp->actions);
        int a = game_chance_draw(g, &rp->now, &rp->dice);
        rp->actions[rp->n++] = (uint16_t)a;
        g->apply(&rp->now, a);
    }
    return 0;
}

/* Replays position + moves from args into rp (rp->actions owned: free), the
 * dice of a game with chance rolled from the seed up to a decision (see
 * engine.h). 0, or a one-line reason in err. */
static int s_replay(const game_def *g, const engine_args *a, replay *rp, char *err,
                    size_t errlen)
{
    memset(rp, 0, sizeof *rp);
    rp->chance = g->is_chance != NULL;
    if (rp->chance) {
        const char *sd = engine_arg(a, "seed");
        if (sd && sd[0]) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(sd, &end, 16);
            if (errno || *end || strlen(sd) > 16 || sd[0] == '-' || sd[0] == '+' ||
                sd[0] == ' ')
                return err_set(err, errlen, KZ_EINVAL,
                               "seed must be 1 to 16 hex digits (the game's dice)");
            rp->seed = (uint64_t)v;
        } else {
            rp->seed = s_new_seed();
        }
        game_dice_seed(&rp->dice, rp->seed);
    }
    const char *pos = engine_arg(a, "position");
    if (pos && pos[0]) {
        char e2[200];
        if (strlen(pos) >= sizeof rp->start_text ||
            g->parse_position(&rp->start, pos, e2, sizeof e2))
            return err_set(err, errlen, KZ_EINVAL, "position: %s",
                           strlen(pos) >= sizeof rp->start_text ? "too long" : e2);
    } else {
        g->init(&rp->start);
    }
    g->format_position(&rp->start, rp->start_text, sizeof rp->start_text);
    g->copy(&rp->now, &rp->start);
    const char *moves = engine_arg(a, "moves");
    if (!moves || !moves[0])
        return s_roll(g, rp, err, errlen);
    rp->actions = xmalloc(ENGINE_MAX_MOVES * sizeof *rp->actions);
    for (const char *p = moves; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char word[24];
        if (rp->n >= ENGINE_MAX_MOVES)
            return err_set(err, errlen, KZ_EINVAL, "moves: more than %d actions",
                           ENGINE_MAX_MOVES);
        if (n == 0 || n >= sizeof word)
            return err_set(err, errlen, KZ_EINVAL, "moves: action %d is %s (write "
                           "comma-separated actions, e.g. 7-12,17x7)", rp->n + 1,
                           n ? "too long" : "empty");
        memcpy(word, p, n);
        word[n] = 0;
        int action;
        int rc = s_check_action(g, &rp->now, word, rp->n + 1, &action, err, errlen);
        if (rc)
            return rc;
        if (rp->chance && g->is_chance(&rp->now)) {
            /* The dice are the seed's, never the page's. */
            int want = game_chance_draw(g, &rp->now, &rp->dice);
            if (action != want) {
                char roll[16];
                g->format_action(want, roll, sizeof roll);
                return err_set(err, errlen, KZ_EILLEGAL, "moves: the dice '%s' (move %d) are "
                               "not the game's: its seed rolls %s", word, rp->n + 1, roll);
            }
        }
        rp->actions[rp->n++] = (uint16_t)action;
        g->apply(&rp->now, action);
        p += n + (end ? 1 : 0);
        if (end && !*p)
            return err_set(err, errlen, KZ_EINVAL, "moves: ends with a comma");
    }
    return s_roll(g, rp, err, errlen);
}

static const char *s_winner_name(const game_def *g, int winner)
{
    return winner < 0 ? "draw" : g->player_name(winner);
}

static void sb_result(strbuf *b, const game_def *g, game_result r)
{
    if (!r.over) {
        strbuf_printf(b, "null");
        return;
    }
    strbuf_printf(b, "{\"winner\": \"%s\", \"reason\": \"%s\"}", s_winner_name(g, r.winner),
              game_reason_name(g, r.reason));
}

/* The move list and positions of a replay (shared by states and stored
 * games); with rec, each move's search figures from the record. */
static void sb_history(strbuf *b, const game_def *g, const game_state *start,
                       const uint16_t *actions, int n, const game_record *rec)
{
    game_state s;
    g->copy(&s, start);
    strbuf pos = {0};
    char text[128];
    strbuf_printf(b, "\"moves\": [");
    strbuf_printf(&pos, "\"positions\": [");
    for (int k = 0; k <= n; k++) {
        g->format_position(&s, text, sizeof text);
        strbuf_printf(&pos, "%s\n  ", k ? "," : "");
        strbuf_json_str(&pos, text, sizeof text);
        if (k == n)
            break;
        char a[16];
        engine_format_action(g, &s, actions[k], a, sizeof a);
        /* Nature's move (a roll): "chance", its mover the player who moves
         * after it (the one it was rolled for when nobody can play it). */
        bool chance = g->is_chance && g->is_chance(&s);
        int mover = g->to_move(&s);
        if (chance) {
            game_state after;
            g->copy(&after, &s);
            g->apply(&after, actions[k]);
            if (!g->is_chance(&after) && !g->result(&after).over)
                mover = g->to_move(&after);
        }
        strbuf_printf(b, "%s\n  {\"action\": \"%s\", \"capture\": %s, %s\"mover\": \"%s\", "
                     "\"ply\": %d",
                  k ? "," : "", a, strchr(a, 'x') ? "true" : "false",
                  chance ? "\"chance\": true, " : "", g->player_name(mover), g->ply(&s));
        if (rec) {
            const record_move *m = &rec->moves[k];
            strbuf_printf(b, ", \"value\": ");
            sb_num(b, m->root_value, 3);
            strbuf_printf(b, ", \"forced\": %s, \"fast\": %s, \"top\": [",
                      m->forced ? "true" : "false", m->fast_search ? "true" : "false");
            /* The largest shares, largest first (selection: the lists are short). */
            bool used[GAME_MAX_LEGAL] = {false};
            for (int t = 0; t < ENGINE_TOP_SHARES && t < m->policy_n; t++) {
                int best = -1;
                for (int j = 0; j < m->policy_n && j < GAME_MAX_LEGAL; j++)
                    if (!used[j] && (best < 0 || rec->policy[m->policy_off + (uint32_t)j] >
                                                     rec->policy[m->policy_off + (uint32_t)best]))
                        best = j;
                if (best < 0)
                    break;
                used[best] = true;
                char pa[16];
                engine_format_action(g, &s, rec->policy_actions[m->policy_off + (uint32_t)best],
                                     pa, sizeof pa);
                strbuf_printf(b, "%s[\"%s\", ", t ? ", " : "", pa);
                sb_num(b, rec->policy[m->policy_off + (uint32_t)best], 3);
                strbuf_printf(b, "]");
            }
            strbuf_printf(b, "]");
        }
        strbuf_printf(b, "}");
        g->apply(&s, actions[k]);
    }
    strbuf_printf(b, "],\n");
    strbuf_printf(&pos, "]");
    strbuf_printf(b, "%s", pos.s);
    free(pos.s);
}

/* The state object (without its closing brace). */
static void sb_state(strbuf *b, const game_def *g, const replay *rp)
{
    char text[128];
    g->format_position(&rp->now, text, sizeof text);
    strbuf_printf(b, "{\"start\": ");
    strbuf_json_str(b, rp->start_text, sizeof rp->start_text);
    strbuf_printf(b, ", \"position\": ");
    strbuf_json_str(b, text, sizeof text);
    game_result r = g->result(&rp->now);
    strbuf_printf(b, ", \"to_move\": \"%s\", \"mid_turn\": %s, \"ply\": %d,\n",
              g->player_name(g->to_move(&rp->now)), g->mid_turn(&rp->now) ? "true" : "false",
              g->ply(&rp->now));
    if (rp->chance) /* the dice's seed: the page sends it back with the game */
        strbuf_printf(b, "\"seed\": \"%016llx\", ", (unsigned long long)rp->seed);
    sb_history(b, g, &rp->start, rp->actions, rp->n, NULL);
    strbuf_printf(b, ",\n\"legal\": [");
    if (!r.over) {
        uint16_t legal[GAME_MAX_LEGAL];
        int n = g->legal_actions(&rp->now, legal);
        for (int i = 0; i < n; i++) {
            char a[16];
            engine_format_action(g, &rp->now, legal[i], a, sizeof a);
            strbuf_printf(b, "%s{\"action\": \"%s\", \"capture\": %s}", i ? ", " : "", a,
                      strchr(a, 'x') ? "true" : "false");
        }
    }
    strbuf_printf(b, "],\n\"result\": ");
    sb_result(b, g, r);
}

static void s_api_info(engine *e, const game_def *g, engine_reply *out)
{
    game_state s;
    g->init(&s);
    char start[128];
    g->format_position(&s, start, sizeof start);
    strbuf b = {0};
    strbuf_printf(&b, "{\"game\": ");
    strbuf_json_str(&b, g->name, strlen(g->name));
    strbuf_printf(&b, ", \"height\": %d, \"width\": %d, \"players\": [\"%s\", \"%s\"], "
                  "\"start\": ",
              g->height, g->width, g->player_name(0), g->player_name(1));
    strbuf_json_str(&b, start, sizeof start);
    strbuf_printf(&b, ",\n \"view\": ");
    view_describe(g, &b);
    if (e) {
        strbuf_printf(&b, ",\n \"engine\": ");
        strbuf_json_str(&b, e->label, sizeof e->label);
        strbuf_printf(&b, ", \"version\": %u, \"network\": %s, \"sims\": %d, \"max_sims\": %d, "
                      "\"tables\": %d, \"records\": ",
                  e->version, e->network ? "true" : "false", e->network ? e->sims : 0,
                  e->network ? e->max_sims : 0, engine_tb_pieces(e));
        if (e->records[0])
            strbuf_json_str(&b, s_records_shown(e), sizeof e->records);
        else
            strbuf_printf(&b, "null");
    } else {
        strbuf_printf(&b, ",\n \"engine\": null");
    }
    strbuf_printf(&b, "}\n");
    s_reply_json(out, &b);
}

/* s_replay for a request: false, with the reason answered (400) and the
 * replay's actions freed, when it fails. */
static bool s_replay_or_refuse(const game_def *g, const engine_args *a, replay *rp,
                               engine_reply *out)
{
    char err[400];
    if (!s_replay(g, a, rp, err, sizeof err))
        return true;
    engine_reply_line(out, 400, "%s", err);
    free(rp->actions);
    return false;
}

static void s_api_state(const game_def *g, const engine_args *a, bool apply, engine_reply *out)
{
    static const char *const k_legal[] = {"position", "moves", "seed", NULL};
    static const char *const k_apply[] = {"position", "moves", "seed", "action", NULL};
    char err[400];
    if (s_check_args(a, apply ? k_apply : k_legal, err, sizeof err)) {
        engine_reply_line(out, 400, "%s", err);
        return;
    }
    replay rp;
    if (!s_replay_or_refuse(g, a, &rp, out))
        return;
    if (apply) {
        const char *text = engine_arg(a, "action");
        int action;
        if (!text || !text[0]) {
            engine_reply_line(out, 400, "apply: give the action to play (action=7-12)");
            free(rp.actions);
            return;
        }
        if (s_check_action(g, &rp.now, text, 0, &action, err, sizeof err)) {
            engine_reply_line(out, 400, "%s", err);
            free(rp.actions);
            return;
        }
        if (!rp.actions)
            rp.actions = xmalloc(ENGINE_MAX_MOVES * sizeof *rp.actions);
        if (rp.n >= ENGINE_MAX_MOVES) {
            engine_reply_line(out, 400, "moves: more than %d actions", ENGINE_MAX_MOVES);
            free(rp.actions);
            return;
        }
        rp.actions[rp.n++] = (uint16_t)action;
        g->apply(&rp.now, action);
        if (s_roll(g, &rp, err, sizeof err)) {
            engine_reply_line(out, 400, "%s", err);
            free(rp.actions);
            return;
        }
    }
    strbuf b = {0};
    sb_state(&b, g, &rp);
    strbuf_printf(&b, "}\n");
    free(rp.actions);
    s_reply_json(out, &b);
}

static void s_api_analyse(engine *e, const game_def *g, const engine_args *a, engine_reply *out)
{
    static const char *const known[] = {"position", "moves", "seed", "sims", NULL};
    char err[400];
    if (s_check_args(a, known, err, sizeof err)) {
        engine_reply_line(out, 400, "%s", err);
        return;
    }
    long sims = 0;
    const char *st = engine_arg(a, "sims");
    if (st && st[0] && e->network && parse_long(st, 1, e->max_sims, &sims)) {
        char shown[24];
        engine_reply_line(out, 400, "sims must be a whole number from 1 to %d, not '%s'",
                          e->max_sims, text_printable(shown, sizeof shown, st, strlen(st)));
        return;
    }
    replay rp;
    if (!s_replay_or_refuse(g, a, &rp, out))
        return;
    game_result r = g->result(&rp.now);
    if (r.over) {
        engine_reply_line(out, 400, "analyse: the game is over (%s, %s)",
                          s_winner_name(g, r.winner), game_reason_name(g, r.reason));
        free(rp.actions);
        return;
    }
    engine_analysis *an = xmalloc(sizeof *an);
    int rc = engine_analyse(e, &rp.now, (int)sims, 1, an);
    if (rc) {
        if (rc == KZ_ETIMEOUT)
            engine_reply_line(out, 503, "the engine is busy with other searches; try again");
        else
            engine_reply_line(out, 500, "the engine failed: %s", err_str(rc));
        free(an);
        free(rp.actions);
        return;
    }
    strbuf b = {0};
    sb_state(&b, g, &rp);
    const player_info *in = &an->info;
    char best[16];
    engine_format_action(g, &rp.now, in->action, best, sizeof best);
    strbuf_printf(&b, ",\n\"analysis\": {\"value\": ");
    sb_num(&b, in->value, 3);
    strbuf_printf(&b, ", \"best\": \"%s\", \"forced\": %s, \"tables\": %s, \"sims\": %d, "
                  "\"work\": %ld, \"seconds\": %.3f, \"player\": ",
              best, an->forced ? "true" : "false", an->tables ? "true" : "false", an->sims,
              in->work, an->seconds);
    strbuf_json_str(&b, an->player, sizeof an->player);
    strbuf_printf(&b, ",\n  \"top\": [");
    for (int i = 0; i < in->n; i++) {
        int k = an->order[i];
        char act[16];
        engine_format_action(g, &rp.now, in->actions[k], act, sizeof act);
        strbuf_printf(&b, "%s\n   {\"action\": \"%s\", \"share\": ", i ? "," : "", act);
        sb_num(&b, in->share[k], 4);
        strbuf_printf(&b, ", \"prior\": ");
        sb_num(&b, in->prior[k], 4);
        strbuf_printf(&b, ", \"q\": ");
        sb_num(&b, in->q[k], 3);
        strbuf_printf(&b, "}");
    }
    strbuf_printf(&b, "]}}\n");
    free(an);
    free(rp.actions);
    s_reply_json(out, &b);
}

/* Parses 32 hex digits. */
static int s_parse_id(const char *text, uint8_t id[RECORD_ID_BYTES])
{
    if (!text || strlen(text) != 2 * RECORD_ID_BYTES)
        return KZ_EINVAL;
    for (int i = 0; i < RECORD_ID_BYTES; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            char c = text[2 * i + j];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return KZ_EINVAL;
            v = v * 16 + (unsigned)d;
        }
        id[i] = (uint8_t)v;
    }
    return 0;
}

static void s_api_save(engine *e, const game_def *g, const engine_args *a, engine_reply *out)
{
    static const char *const known[] = {"position", "moves", "seed", "engine", "id",
                                        "started_ms", "sims", NULL};
    char err[400];
    if (s_check_args(a, known, err, sizeof err)) {
        engine_reply_line(out, 400, "%s", err);
        return;
    }
    if (!e->records[0]) {
        engine_reply_line(out, 503, "games are not saved here (no record file)");
        return;
    }
    uint8_t id[RECORD_ID_BYTES];
    if (s_parse_id(engine_arg(a, "id"), id)) {
        engine_reply_line(out, 400, "save: id must be %d hex digits", 2 * RECORD_ID_BYTES);
        return;
    }
    const char *side = engine_arg(a, "engine");
    int engine_player = side && !strcmp(side, g->player_name(0))   ? 0
                        : side && !strcmp(side, g->player_name(1)) ? 1
                                                                   : -1;
    if (engine_player < 0) {
        engine_reply_line(out, 400, "save: engine must be %s or %s (the engine's colour)",
                          g->player_name(0), g->player_name(1));
        return;
    }
    long started = 0, sims = 0;
    const char *st = engine_arg(a, "started_ms");
    if (st && parse_long(st, 0, 1L << 52, &started)) {
        engine_reply_line(out, 400, "save: started_ms must be a time in ms since 1970");
        return;
    }
    st = engine_arg(a, "sims");
    if (st && parse_long(st, 1, PLAYER_MAX_SIMS, &sims)) {
        engine_reply_line(out, 400, "save: sims must be a whole number from 1 to %d",
                          PLAYER_MAX_SIMS);
        return;
    }
    replay rp;
    if (!s_replay_or_refuse(g, a, &rp, out))
        return;
    game_result r = g->result(&rp.now);
    if (!r.over) {
        engine_reply_line(out, 400, "save: the game is not over (only finished games are "
                          "saved)");
        free(rp.actions);
        return;
    }
    /* Step 1. The record: a rating-game record, side A the engine (its model,
     * or its spec), side B "human"; the moves without search figures. */
    game_record *rec = record_new();
    KZ_CHECK(rec != NULL);
    memcpy(rec->id, id, RECORD_ID_BYTES);
    snprintf(rec->game, sizeof rec->game, "%s", g->name);
    rec->kind = RECORD_EVAL;
    rec->model_version = e->version;
    if (!e->version)
        snprintf(rec->model_player, sizeof rec->model_player, "%s", e->source);
    snprintf(rec->opponent_player, sizeof rec->opponent_player, "human");
    rec->candidate_player = engine_player;
    const char *pos = engine_arg(a, "position");
    if (pos && pos[0])
        snprintf(rec->start_position, sizeof rec->start_position, "%s", rp.start_text);
    rec->settings.simulations = (int)sims;
    rec->started_ms = started ? started : time_wall_ms();
    rec->finished_ms = time_wall_ms();
    if (rec->finished_ms < rec->started_ms)
        rec->started_ms = rec->finished_ms;
    snprintf(rec->worker_id, sizeof rec->worker_id, "play");
    rec->seed = rp.seed; /* a game with dice: they follow from it (record_validate) */
    game_state s;
    g->copy(&s, &rp.start);
    uint16_t legal[GAME_MAX_LEGAL];
    for (int k = 0; k < rp.n; k++) {
        bool forced = g->legal_actions(&s, legal) == 1;
        KZ_CHECK(record_add_move(rec, rp.actions[k], forced, 0, 0, NULL, NULL) == 0);
        g->apply(&s, rp.actions[k]);
    }
    rec->winner = r.winner;
    rec->reason = r.reason;
    rec->plies = (uint32_t)g->ply(&rp.now);
    free(rp.actions);
    if (record_validate(g, rec, err, sizeof err)) {
        engine_reply_line(out, 500, "save: the record does not check: %s", err);
        record_destroy(&rec);
        return;
    }
    /* Step 2. Appended once: a repeated id answers with the earlier save. */
    pthread_mutex_lock(&e->save);
    long index = 0;
    bool again = false;
    for (int i = 0; i < ENGINE_SAVED_IDS && i < e->n_saved; i++)
        if (!memcmp(e->saved[i], id, RECORD_ID_BYTES)) {
            index = e->saved_index[i];
            again = true;
        }
    int rc = 0;
    if (!again) {
        /* The limits (issue 28, #5: anyone who reaches the page could grow
         * the file without end): a rate, and a size. */
        double now = time_now();
        e->save_tokens += (now - e->save_at) * e->save_rate;
        if (e->save_tokens > e->save_burst)
            e->save_tokens = e->save_burst;
        e->save_at = now;
        struct stat sb;
        uint64_t size = stat(e->records, &sb) ? 0 : (uint64_t)sb.st_size;
        if (size >= e->records_max) {
            pthread_mutex_unlock(&e->save);
            record_destroy(&rec);
            log_warn("a save refused: the record file %s is full (%.1f MB, records_max_mb)",
                     e->records, (double)size / (1 << 20));
            engine_reply_line(out, 507, "save: the record file is full (%.1f MB, the most "
                              "this server keeps): the game was not saved",
                              (double)size / (1 << 20));
            return;
        }
        if (e->save_tokens < 1) {
            double wait = (1 - e->save_tokens) / e->save_rate;
            pthread_mutex_unlock(&e->save);
            record_destroy(&rec);
            engine_reply_line(out, 429, "save: too many saves (at most %.0f an hour, %.0f at "
                              "once): try again in %.0f s", e->save_rate * 3600, e->save_burst,
                              wait + 0.5);
            return;
        }
        e->save_tokens -= 1;
        record_file *f;
        pthread_mutex_lock(&s_records_lock);
        char warn[600];
        rc = record_file_append(e->records, &f, warn, sizeof warn, err, sizeof err);
        if (!rc && warn[0])
            log_warn("save: %s", warn);
        if (!rc) {
            rc = record_file_write(f, rec, err, sizeof err);
            index = record_file_count(f);
            int rc2 = record_file_close(&f);
            if (!rc && rc2) {
                rc = rc2;
                snprintf(err, sizeof err, "closing %s: %s", e->records, err_str(rc2));
            }
        }
        pthread_mutex_unlock(&s_records_lock);
        if (!rc) {
            int slot = e->n_saved % ENGINE_SAVED_IDS;
            memcpy(e->saved[slot], id, RECORD_ID_BYTES);
            e->saved_index[slot] = index;
            e->n_saved++;
            log_info("saved a game against a person as record %ld of %s (%s, %s)", index,
                     e->records, s_winner_name(g, r.winner), game_reason_name(g, r.reason));
        }
    }
    pthread_mutex_unlock(&e->save);
    record_destroy(&rec);
    if (rc) {
        log_warn("cannot save a game: %s", err);
        if (!e->show_paths)
            s_unpath(err, sizeof err, e->records);
        engine_reply_line(out, 500, "save: %s", err);
        return;
    }
    strbuf b = {0};
    strbuf_printf(&b, "{\"saved\": true, \"again\": %s, \"file\": ", again ? "true" : "false");
    strbuf_json_str(&b, s_records_shown(e), sizeof e->records);
    strbuf_printf(&b, ", \"index\": %ld}\n", index);
    s_reply_json(out, &b);
}

void engine_request(engine *e, const game_def *g, const char *method, const char *name,
                    const engine_args *args, engine_reply *out)
{
    memset(out, 0, sizeof *out);
    static const engine_args none = {0};
    if (!args)
        args = &none;
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    bool post = !strcmp(method, "POST");
    bool save = !strcmp(name, "save");
    bool known = !strcmp(name, "info") || !strcmp(name, "legal") || !strcmp(name, "apply") ||
                 !strcmp(name, "analyse") || save;
    if (!known) {
        char shown[40];
        engine_reply_line(out, 404, "no /api/%s: the API is /api/info, legal, apply, analyse, "
                          "save", text_printable(shown, sizeof shown, name, strlen(name)));
        return;
    }
    if (save ? !post : !get) {
        engine_reply_line(out, 405, "/api/%s takes %s", name, save ? "POST" : "GET");
        return;
    }
    if (!strcmp(name, "info")) {
        static const char *const k_none[] = {NULL};
        char err[300];
        if (s_check_args(args, k_none, err, sizeof err))
            engine_reply_line(out, 400, "%s", err);
        else
            s_api_info(e, g, out);
    } else if (!strcmp(name, "legal") || !strcmp(name, "apply")) {
        s_api_state(g, args, name[0] == 'a', out);
    } else if (!e) {
        engine_reply_line(out, 503, "no engine here: /api/%s is not served", name);
    } else if (save) {
        s_api_save(e, g, args, out);
    } else {
        s_api_analyse(e, g, args, out);
    }
}

/* --- stored games -------------------------------------------------------------------- */

static const char *s_kind_name(int kind)
{
    return kind == RECORD_ARENA ? "arena" : kind == RECORD_EVAL ? "eval" : "selfplay";
}

/* The summary's fields (without braces). */
static void sb_summary(strbuf *b, const game_record *r, uint64_t seq)
{
    char id[2 * RECORD_ID_BYTES + 1];
    for (int i = 0; i < RECORD_ID_BYTES; i++)
        snprintf(id + 2 * i, 3, "%02x", r->id[i]);
    strbuf_printf(b, "\"seq\": %llu, \"id\": \"%s\", \"game\": ", (unsigned long long)seq, id);
    strbuf_json_str(b, r->game, sizeof r->game);
    strbuf_printf(b, ", \"kind\": \"%s\", \"model\": %u, \"opponent\": %u, ", s_kind_name(r->kind),
              r->model_version, r->opponent_version);
    /* The sides' names: a model "vN" or a baseline player's spec. */
    char a[RECORD_PLAYER_MAX + 16], o[RECORD_PLAYER_MAX + 16];
    if (r->kind == RECORD_SELFPLAY) {
        snprintf(a, sizeof a, "v%u", r->model_version);
        snprintf(o, sizeof o, "v%u", r->model_version);
    } else {
        if (r->model_player[0])
            snprintf(a, sizeof a, "%.*s", (int)sizeof r->model_player, r->model_player);
        else
            snprintf(a, sizeof a, "v%u", r->model_version);
        if (r->opponent_player[0])
            snprintf(o, sizeof o, "%.*s", (int)sizeof r->opponent_player, r->opponent_player);
        else
            snprintf(o, sizeof o, "v%u", r->opponent_version);
    }
    strbuf_printf(b, "\"a\": ");
    strbuf_json_str(b, a, sizeof a);
    strbuf_printf(b, ", \"b\": ");
    strbuf_json_str(b, o, sizeof o);
    const game_def *g = game_find(r->game);
    strbuf_printf(b, ", \"candidate_player\": %d, \"winner\": \"%s\", \"reason\": \"%s\", "
                 "\"plies\": %u, \"states\": %d, \"started_ms\": %lld, \"seconds\": %.1f, "
                 "\"worker\": ",
              r->candidate_player ? 1 : 0,
              r->winner < 0 ? "draw" : g ? g->player_name(r->winner ? 1 : 0)
                                     : r->winner == 0 ? "first" : "second",
              game_reason_name(g, r->reason), r->plies, r->n_moves, (long long)r->started_ms,
              (double)(r->finished_ms - r->started_ms) / 1000.0);
    strbuf_json_str(b, r->worker_id, sizeof r->worker_id);
}

char *engine_json_summary(const game_record *r, uint64_t seq)
{
    strbuf b = {0};
    strbuf_printf(&b, "{");
    sb_summary(&b, r, seq);
    strbuf_printf(&b, "}");
    return b.s;
}

char *engine_json_game(const game_def *g, const game_record *r, uint64_t seq, char *err,
                       size_t errlen)
{
    if (record_validate(g, r, err, errlen))
        return NULL;
    game_state start;
    if (r->start_position[0]) {
        if (g->parse_position(&start, r->start_position, err, errlen))
            return NULL;
    } else {
        g->init(&start);
    }
    uint16_t *actions = xmalloc(((size_t)r->n_moves + 1) * sizeof *actions);
    for (int k = 0; k < r->n_moves; k++)
        actions[k] = r->moves[k].action;
    strbuf b = {0};
    char text[128];
    g->format_position(&start, text, sizeof text);
    strbuf_printf(&b, "{");
    sb_summary(&b, r, seq);
    strbuf_printf(&b, ",\n\"players\": [\"%s\", \"%s\"], \"simulations\": %d, \"start\": ",
              g->player_name(0), g->player_name(1), r->settings.simulations);
    strbuf_json_str(&b, text, sizeof text);
    strbuf_printf(&b, ",\n");
    sb_history(&b, g, &start, actions, r->n_moves, r);
    game_result res = {.over = true, .winner = r->winner, .reason = r->reason, 0};
    strbuf_printf(&b, ",\n\"result\": ");
    sb_result(&b, g, res);
    strbuf_printf(&b, "}\n");
    free(actions);
    return b.s;
}

int engine_games_filter_parse(const game_def *g, const engine_args *a, engine_games_filter *f,
                              char *err, size_t errlen)
{
    static const char *const known[] = {"kind", "model", "result", "limit", "before", NULL};
    *f = (engine_games_filter){.winner = -2, .limit = ENGINE_GAMES_DEFAULT, .before = UINT64_MAX};
    int rc = s_check_args(a, known, err, errlen);
    if (rc)
        return rc;
    const char *v;
    char shown[24];
    if ((v = engine_arg(a, "kind")) && v[0]) {
        if (strcmp(v, "selfplay") && strcmp(v, "arena") && strcmp(v, "eval"))
            return err_set(err, errlen, KZ_EINVAL, "kind must be selfplay, arena or eval, not "
                           "'%s'", text_printable(shown, sizeof shown, v, strlen(v)));
        snprintf(f->kind, sizeof f->kind, "%s", v);
    }
    long n;
    if ((v = engine_arg(a, "model")) && v[0]) {
        if (parse_long(v, 1, UINT32_MAX, &n))
            return err_set(err, errlen, KZ_EINVAL, "model must be a model version (1 or more), "
                           "not '%s'", text_printable(shown, sizeof shown, v, strlen(v)));
        f->model = (uint32_t)n;
    }
    if ((v = engine_arg(a, "result")) && v[0]) {
        if (!strcmp(v, "draw"))
            f->winner = -1;
        else if (!strcmp(v, g->player_name(0)))
            f->winner = 0;
        else if (!strcmp(v, g->player_name(1)))
            f->winner = 1;
        else
            return err_set(err, errlen, KZ_EINVAL, "result must be %s, %s or draw, not '%s'",
                           g->player_name(0), g->player_name(1),
                           text_printable(shown, sizeof shown, v, strlen(v)));
    }
    if ((v = engine_arg(a, "limit")) && v[0]) {
        if (parse_long(v, 1, ENGINE_GAMES_MAX, &n))
            return err_set(err, errlen, KZ_EINVAL, "limit must be a whole number from 1 to %d, "
                           "not '%s'", ENGINE_GAMES_MAX,
                           text_printable(shown, sizeof shown, v, strlen(v)));
        f->limit = (int)n;
    }
    if ((v = engine_arg(a, "before")) && v[0]) {
        if (parse_long(v, 0, 9007199254740991L, &n))
            return err_set(err, errlen, KZ_EINVAL, "before must be a game sequence number, "
                           "not '%s'", text_printable(shown, sizeof shown, v, strlen(v)));
        f->before = (uint64_t)n;
    }
    return 0;
}

bool engine_games_match(const engine_games_filter *f, const game_record *r)
{
    if (f->kind[0] && strcmp(f->kind, s_kind_name(r->kind)))
        return false;
    if (f->model && r->model_version != f->model &&
        !(r->kind != RECORD_SELFPLAY && r->opponent_version == f->model))
        return false;
    if (f->winner != -2 && r->winner != f->winner)
        return false;
    return true;
}

struct engine_games_list {
    engine_games_filter f; /* the filter */
    strbuf b;                /* the games so far */
    int listed;            /* games in b */
    int scanned;           /* records offered */
    int unreadable;        /* of them, undecodable */
    uint64_t last;         /* the last sequence offered */
    bool full;             /* limit or scan bound reached */
};

engine_games_list *engine_games_begin(const engine_games_filter *f)
{
    engine_games_list *l = xcalloc(1, sizeof *l);
    l->f = *f;
    strbuf_printf(&l->b, "{\"games\": [");
    return l;
}

bool engine_games_offer(engine_games_list *l, const game_record *r, uint64_t seq)
{
    if (l->full)
        return false;
    l->scanned++;
    l->last = seq;
    if (!r) {
        l->unreadable++;
    } else if (engine_games_match(&l->f, r)) {
        strbuf_printf(&l->b, "%s\n  {", l->listed ? "," : "");
        sb_summary(&l->b, r, seq);
        strbuf_printf(&l->b, "}");
        l->listed++;
    }
    l->full = l->listed >= l->f.limit || l->scanned >= ENGINE_GAMES_SCAN;
    return !l->full;
}

char *engine_games_end(engine_games_list **pl, uint64_t total)
{
    engine_games_list *l = *pl;
    strbuf_printf(&l->b, "],\n\"listed\": %d, \"scanned\": %d, \"unreadable\": %d, "
                     "\"total\": %llu, \"next_before\": ",
              l->listed, l->scanned, l->unreadable, (unsigned long long)total);
    if (l->full && l->last > 0)
        strbuf_printf(&l->b, "%llu}\n", (unsigned long long)(l->last - 1));
    else
        strbuf_printf(&l->b, "null}\n");
    char *out = l->b.s;
    free(l);
    *pl = NULL;
    return out;
}

/* --- saved games ------------------------------------------------------------------- */

void engine_saved_games(const game_def *g, const char *path, const char *base,
                        const char *rest, const engine_args *a, bool show_paths,
                        engine_reply *out)
{
    bool one = rest[0] == '/';
    long want = 0;
    engine_games_filter f;
    char err[300];
    if (one) {
        const char *num = rest + 1;
        if (a->n) {
            engine_reply_line(out, 400, "%s/K takes no arguments", base);
            return;
        }
        if (!num[0] || num[0] == '0' || parse_long(num, 1, 1L << 40, &want)) {
            char shown[40];
            engine_reply_line(out, 404, "no game '%s': games are %s/K, K from 1 (as kz "
                              "records --game K)",
                              text_printable(shown, sizeof shown, num, strlen(num)), base);
            return;
        }
    } else if (engine_games_filter_parse(g, a, &f, err, sizeof err)) {
        engine_reply_line(out, 400, "%s", err);
        return;
    }
    if (!path || !path[0]) {
        if (one) {
            engine_reply_line(out, 404, "no game %ld: no games are saved here", want);
        } else {
            engine_games_list *l = engine_games_begin(&f);
            char *json = engine_games_end(&l, 0);
            *out = (engine_reply){200, "application/json", json, strlen(json)};
        }
        return;
    }
    pthread_mutex_lock(&s_records_lock);
    /* Step 1. Every record of the file (the games of people: a small file). */
    record_file *rf;
    game_record **recs = NULL;
    long n = 0, cap = 0;
    int rc = record_file_open(path, &rf, err, sizeof err);
    if (rc == ENOENT) {
        rc = 0;
        rf = NULL;
    }
    while (!rc && rf) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            recs = realloc(recs, (size_t)cap * sizeof *recs);
            KZ_CHECK(recs != NULL);
        }
        recs[n] = record_new();
        KZ_CHECK(recs[n] != NULL);
        rc = record_file_read(rf, recs[n], err, sizeof err);
        if (rc) {
            record_destroy(&recs[n]);
            /* A torn tail (the next save cuts it off): the whole records. */
            if (rc == KZ_ENOTFOUND || (rc == KZ_ECORRUPT && record_file_torn(rf)))
                rc = 0;
            break;
        }
        n++;
    }
    record_file_close(&rf);
    pthread_mutex_unlock(&s_records_lock);
    /* Step 2. The answer. */
    if (rc) {
        if (!show_paths)
            s_unpath(err, sizeof err, path);
        engine_reply_line(out, 500, "cannot read the saved games: %s", err);
    } else if (one) {
        char *json;
        const game_def *rg;
        if (want > n)
            engine_reply_line(out, 404, "no game %ld (the file has %ld)", want, n);
        else if (!(rg = game_find(recs[want - 1]->game)))
            engine_reply_line(out, 500, "game %ld is of an unknown game", want);
        else if (!(json = engine_json_game(rg, recs[want - 1], (uint64_t)want, err, sizeof err)))
            engine_reply_line(out, 500, "game %ld does not replay: %s", want, err);
        else
            *out = (engine_reply){200, "application/json", json, strlen(json)};
    } else {
        engine_games_list *l = engine_games_begin(&f);
        for (long k = n; k >= 1; k--)
            if ((uint64_t)k <= f.before && !engine_games_offer(l, recs[k - 1], (uint64_t)k))
                break;
        char *json = engine_games_end(&l, (uint64_t)n);
        *out = (engine_reply){200, "application/json", json, strlen(json)};
    }
    for (long k = 0; k < n; k++)
        record_destroy(&recs[k]);
    free(recs);
}
