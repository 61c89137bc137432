/* player_perfect: the `perfect` player (player.h), Khreibaga only. At each
 * decision (every hop, R9) it lists the whole turns that can complete from
 * the state, values each distinct position they reach with the proof search
 * (solve/pns.h: "the opponent does not lose" disproven = a win for us; "we
 * do not lose" proven = a draw at least, disproven = a loss), within a node
 * budget per search, and plays the first hop of a turn of the best proven
 * value: win > not lose > unknown > loss. Where no child is proven to keep
 * at least a draw and some are unknown (the budget ran out), alpha-beta
 * (depth PERFECT_AB_DEPTH) chooses among the unknown ones: a fallback,
 * counted (player_perfect_fallbacks) and shown in player_info.value (a proven
 * value is exactly +1, 0 or -1). One transposition table (in memory) lives
 * as long as the player, so later decisions reuse earlier proofs. */
#include <stdlib.h>
#include <string.h>

#include "games/khreibaga.h"
#include "search/player.h"
#include "search/player_internal.h"
#include "solve/pns.h"
#include "common/util.h"

#define PERFECT_TT_BYTES (64ull << 20) /* the player's transposition table */
#define PERFECT_AB_DEPTH 4             /* the fallback's alpha-beta depth (turns) */
#define PERFECT_MAX_CHILDREN PNS_MAX_TURNS

enum { V_LOSS = 0, V_UNKNOWN = 1, V_NOTLOSE = 2, V_WIN = 3 };

typedef struct child {
    pns_pos to;      /* the turn start reached */
    uint16_t first;  /* the first hop's action */
    int8_t value;    /* V_..., or -1 not valued yet */
    uint64_t len;    /* V_WIN: the win's length in turns (the table's; 0 an immediate end) */
} child;

typedef struct perfect {
    pns_tt *tt;
    uint64_t nodes;      /* budget per search */
    child *kids;         /* PERFECT_MAX_CHILDREN */
    int n;
    child *cache;        /* the previous decision's children (the same turn goes on) */
    int ncache;
    long fallbacks;      /* decisions the fallback made */
    long work;           /* proof searches and alpha-beta nodes of the last decision */
} perfect;

static void s_pos_of(const game_state *s, pns_pos *p)
{
    p->black = khreibaga_pieces(s, 0);
    p->white = khreibaga_pieces(s, 1);
    p->kings = khreibaga_kings(s);
    p->side = (uint32_t)khreibaga_game.to_move(s);
}

static bool s_same(const pns_pos *a, const pns_pos *b)
{
    return a->black == b->black && a->white == b->white && a->kings == b->kings &&
           a->side == b->side;
}

/* Every completion of the current turn from s: the first hop and the end. */
static void s_enum(perfect *pf, const game_state *s, int first, int depth)
{
    const game_def *g = &khreibaga_game;
    uint16_t acts[GAME_MAX_LEGAL];
    int n = g->legal_actions(s, acts);
    for (int i = 0; i < n && depth < PNS_MAX_HOPS; i++) {
        game_state c;
        g->copy(&c, s);
        g->apply(&c, acts[i]);
        int f = depth == 0 ? acts[i] : first;
        if (g->mid_turn(&c)) {
            s_enum(pf, &c, f, depth + 1);
            continue;
        }
        pns_pos to;
        s_pos_of(&c, &to);
        bool seen = false;
        for (int k = 0; k < pf->n && !seen; k++)
            seen = s_same(&pf->kids[k].to, &to);
        if (!seen && pf->n < PERFECT_MAX_CHILDREN)
            pf->kids[pf->n++] = (child){.to = to, .first = (uint16_t)f, .value = -1};
    }
}

/* 0 PNS_PROVEN/DISPROVEN/OPEN for "claim does not lose" from p. */
static int s_search(perfect *pf, const pns_pos *p, int claim)
{
    uint32_t pn, dn;
    if (pns_tt_lookup(pf->tt, p, claim, &pn, &dn) == 0 && dn == 0)
        return PNS_DISPROVEN; /* disproofs are history-free (pns.h) */
    pns_opts o = {.claim = claim, .max_nodes = pf->nodes};
    int out = PNS_OPEN;
    pf->work++;
    if (pns_solve(pf->tt, p, &o, &out) != 0)
        return PNS_OPEN;
    return out;
}

/* Pass 1 (win only): whether the child is a win for the mover `me` (who
 * just played into it), with its length; pass 2: its value otherwise. */
static int s_value(perfect *pf, child *c, int me, bool win_only)
{
    const pns_pos *to = &c->to;
    game_state s;
    if (khreibaga_set(&s, to->black, to->white, to->kings, (int)to->side) != 0)
        return V_UNKNOWN;
    game_result r = khreibaga_game.result(&s);
    c->len = 0;
    if (r.over)
        return r.winner == me ? V_WIN : r.winner < 0 ? V_NOTLOSE : V_LOSS;
    if (win_only) {
        if (s_search(pf, to, 1 - me) != PNS_DISPROVEN)
            return -1;
        if (pns_tt_win_length(pf->tt, to, 1 - me, &c->len) != 0)
            c->len = UINT64_MAX;
        return V_WIN;
    }
    int mine = s_search(pf, to, me);
    return mine == PNS_PROVEN ? V_NOTLOSE : mine == PNS_DISPROVEN ? V_LOSS : V_UNKNOWN;
}

static int s_choose(player *p, const game_state *s, int n, const uint16_t *legal, int *action,
                    player_info *info)
{
    (void)n;
    (void)legal;
    perfect *pf = p->impl;
    const game_def *g = p->g;
    int me = g->to_move(s);
    pf->n = 0;
    pf->work = 0;
    s_enum(pf, s, -1, 0);
    /* Values: the cache first; the wins (the shortest is played: progress,
     * no repetition), then the rest only when there is none. */
    int best = -1, bestv = -1;
    for (int pass = 0; pass < 2 && bestv < V_WIN; pass++)
        for (int i = 0; i < pf->n; i++) {
            child *c = &pf->kids[i];
            for (int k = 0; k < pf->ncache && c->value < 0; k++)
                if (s_same(&pf->cache[k].to, &c->to)) {
                    c->value = pf->cache[k].value;
                    c->len = pf->cache[k].len;
                }
            if (c->value < 0)
                c->value = (int8_t)s_value(pf, c, me, pass == 0);
            if (c->value > bestv || (c->value == V_WIN && bestv == V_WIN &&
                                     c->len < pf->kids[best].len)) {
                bestv = c->value;
                best = i;
            }
        }
    double value = bestv == V_WIN ? 1 : bestv == V_NOTLOSE ? 0 : -1;
    if (bestv == V_UNKNOWN || bestv == V_LOSS) {
        /* The fallback: alpha-beta over the children of that value. */
        pf->fallbacks += bestv == V_UNKNOWN;
        long top = 0;
        best = -1;
        for (int i = 0; i < pf->n; i++) {
            child *c = &pf->kids[i];
            if (c->value != bestv)
                continue;
            game_state cs;
            long sc = 0;
            int a;
            if (khreibaga_set(&cs, c->to.black, c->to.white, c->to.kings, (int)c->to.side) == 0 &&
                !g->result(&cs).over) {
                pf->work += player_alphabeta_search(g, &cs, PERFECT_AB_DEPTH, true, &a, &sc);
                sc = (long)c->to.side == me ? sc : -sc;
            }
            if (best < 0 || sc > top) {
                best = i;
                top = sc;
            }
        }
        if (bestv == V_UNKNOWN)
            value = (double)top / ((double)labs(top) + 300.0) * 0.99;
    }
    *action = pf->kids[best].first;
    memcpy(pf->cache, pf->kids, (size_t)pf->n * sizeof *pf->kids);
    pf->ncache = pf->n;
    if (info) {
        info->value = value;
        info->work = pf->work;
        for (int k = 0; k < info->n; k++)
            info->share[k] = info->actions[k] == *action;
    }
    return 0;
}

static void s_new_game(player *p)
{
    perfect *pf = p->impl;
    pf->ncache = 0;
}

static void s_destroy(player *p)
{
    perfect *pf = p->impl;
    if (!pf)
        return;
    pns_tt_close(&pf->tt);
    free_all(pf->kids, pf->cache, pf);
}

static const player_ops s_perfect_ops = {
    .choose = s_choose, .destroy_impl = s_destroy, .new_game = s_new_game};

player *player_perfect_new(const game_def *g, long nodes, char *err, size_t errlen)
{
    if (g != &khreibaga_game) {
        err_set(err, errlen, KZ_EINVAL, "player 'perfect' plays %s only (the proof search)",
                khreibaga_game.name);
        return NULL;
    }
    if (nodes < 1) {
        err_set(err, errlen, KZ_EINVAL, "player 'perfect': the node budget must be >= 1");
        return NULL;
    }
    pns_tt *tt = pns_tt_open(NULL, PERFECT_TT_BYTES, err, errlen);
    if (!tt)
        return NULL;
    char name[PLAYER_SPEC_MAX];
    snprintf(name, sizeof name, "perfect:%ld", nodes);
    player *p = player_new_of(g, &s_perfect_ops, name);
    perfect *pf = xcalloc(1, sizeof *pf);
    pf->tt = tt;
    pf->nodes = (uint64_t)nodes;
    pf->kids = xcalloc(PERFECT_MAX_CHILDREN, sizeof *pf->kids);
    pf->cache = xcalloc(PERFECT_MAX_CHILDREN, sizeof *pf->cache);
    p->impl = pf;
    return p;
}

long player_perfect_fallbacks(const player *p)
{
    return p->ops == &s_perfect_ops ? ((const perfect *)p->impl)->fallbacks : -1;
}
