/* referee: values positions with the proof search and the tables, judges
 * games turn by turn and players on fixed positions (referee.h). */
#include "play/referee.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "games/khreibaga.h"
#include "solve/pns.h"

#define CACHE_BITS 18 /* values cached: 2^18 entries of 20 bytes */
#define CACHE_WAYS 4  /* entries looked at per probe */

/* One cached value. */
typedef struct cache_entry {
    pns_pos p;          /* the position (black = white = 0: empty) */
    referee_value v;    /* what is known */
} cache_entry;

struct referee {
    referee_opts o;          /* settings (nodes, tt_bytes filled in) */
    pns_tt *tt;              /* the proof search's table, in memory */
    uint64_t tt_entries;     /* entries it has room for */
    uint64_t tt_used;        /* entries in use, as the last search reported */
    cache_entry *cache;      /* (1 << CACHE_BITS) */
    referee_work work;       /* what was done */
    pns_pos *pos;            /* (REFEREE_MAX_TURNS + 1) a game's turn starts */
    referee_value *val;      /* (REFEREE_MAX_TURNS + 1) their values */
    int *first_action;       /* (REFEREE_MAX_TURNS + 1) index of each turn's first action */
    int *ply;                /* (REFEREE_MAX_TURNS + 1) the game's ply at each turn start */
    int *count;              /* (REFEREE_MAX_TURNS + 1) the no-progress count (R13) at each */
    pns_turn *turns;         /* (PNS_MAX_TURNS) accuracy: a position's turns */
};

/* A position's budget: expansions left and the wall-clock deadline. */
typedef struct budget {
    uint64_t nodes;   /* expansions left */
    double deadline;  /* time_now() limit; 0: none */
} budget;

/* ---- the table and the cache ------------------------------------------------------------ */

static int s_tt_open(referee *r, char *err, size_t errlen)
{
    r->tt = pns_tt_open(NULL, r->o.tt_bytes, err, errlen);
    if (!r->tt)
        return KZ_ENOMEM;
    pns_stats st;
    pns_tt_stats(r->tt, &st);
    r->tt_entries = st.entries;
    r->tt_used = 0;
    return 0;
}

referee *referee_new(const referee_opts *o, char *err, size_t errlen)
{
    referee *r = xcalloc(1, sizeof *r);
    r->o = *o;
    if (!r->o.nodes)
        r->o.nodes = REFEREE_NODES;
    if (!r->o.tt_bytes)
        r->o.tt_bytes = REFEREE_TT_BYTES;
    if (s_tt_open(r, err, errlen)) {
        free(r);
        return NULL;
    }
    r->cache = xcalloc((size_t)1 << CACHE_BITS, sizeof *r->cache);
    r->pos = xcalloc(REFEREE_MAX_TURNS + 1, sizeof *r->pos);
    r->val = xcalloc(REFEREE_MAX_TURNS + 1, sizeof *r->val);
    r->first_action = xcalloc(REFEREE_MAX_TURNS + 1, sizeof *r->first_action);
    r->ply = xcalloc(REFEREE_MAX_TURNS + 1, sizeof *r->ply);
    r->count = xcalloc(REFEREE_MAX_TURNS + 1, sizeof *r->count);
    r->turns = xcalloc(PNS_MAX_TURNS, sizeof *r->turns);
    return r;
}

void referee_destroy(referee **rp)
{
    referee *r = rp ? *rp : NULL;
    if (!r)
        return;
    pns_tt_close(&r->tt);
    free_all(r->cache, r->pos, r->val, r->first_action, r->ply, r->count, r->turns, r);
    *rp = NULL;
}

void referee_get_work(const referee *r, referee_work *out)
{
    *out = r->work;
}

static bool s_same(const pns_pos *a, const pns_pos *b)
{
    return a->black == b->black && a->white == b->white && a->kings == b->kings &&
           a->side == b->side;
}

static cache_entry *s_cache_slot(referee *r, const pns_pos *p, bool *found)
{
    uint64_t h = mix64(((uint64_t)p->black << 32 | p->white) ^ ((uint64_t)p->kings << 7) ^
                       ((uint64_t)p->side << 61));
    size_t mask = ((size_t)1 << CACHE_BITS) - 1, i0 = (size_t)h & mask;
    cache_entry *empty = NULL;
    for (int k = 0; k < CACHE_WAYS; k++) {
        cache_entry *e = &r->cache[(i0 + (size_t)k) & mask];
        if (s_same(&e->p, p)) {
            *found = true;
            return e;
        }
        if (!empty && !e->p.black && !e->p.white)
            empty = e;
    }
    *found = false;
    return empty ? empty : &r->cache[(i0 + (size_t)(h >> 60) % CACHE_WAYS) & mask];
}

/* ---- valuing ---------------------------------------------------------------------------- */

/* What a search reports at its end: its expansions and the table's use. */
typedef struct search_note {
    uint64_t nodes;
    uint64_t used;
} search_note;

static void s_note(const pns_progress *p, void *arg)
{
    search_note *n = arg;
    n->nodes = p->nodes;
    n->used = p->used;
}

/* Searches "claim does not lose" from p within b; PNS_OPEN when the budget
 * is spent or the search fails. */
static int s_claim(referee *r, const pns_pos *p, int claim, budget *b)
{
    uint32_t pn, dn;
    if (!r->tt)
        return PNS_OPEN;
    if (pns_tt_lookup(r->tt, p, claim, &pn, &dn) == 0 && dn == 0)
        return PNS_DISPROVEN; /* disproofs are history-free (pns.h) */
    double now = time_now();
    if (b->nodes == 0 || (b->deadline > 0 && now >= b->deadline) || (r->o.stop && *r->o.stop))
        return PNS_OPEN;
    search_note note = {0, 0};
    pns_opts po = {.claim = claim, .tables = r->o.tables, .max_nodes = b->nodes,
                   .max_seconds = b->deadline > 0 ? b->deadline - now : 0, .stop = r->o.stop,
                   .progress = s_note, .progress_seconds = 1e12, .arg = &note};
    int out = PNS_OPEN;
    if (pns_solve(r->tt, p, &po, &out) != 0)
        out = PNS_OPEN;
    r->work.nodes += note.nodes;
    b->nodes = note.nodes >= b->nodes ? 0 : b->nodes - note.nodes;
    r->tt_used = note.used;
    return out;
}

/* What the outcome of a search of "claim does not lose" says of the mover's value. */
static void s_narrow(referee_value *v, int mover, int claim, int outcome)
{
    if (outcome == PNS_OPEN)
        return;
    if (claim == mover) {
        if (outcome == PNS_PROVEN)
            v->lo = v->lo > 0 ? v->lo : 0;
        else
            v->lo = v->hi = -1;
    } else {
        if (outcome == PNS_PROVEN)
            v->hi = v->hi < 0 ? v->hi : 0;
        else
            v->lo = v->hi = 1;
    }
}

/* Men 1, kings 3, from the mover's view. */
static int s_material(const pns_pos *p)
{
    uint32_t me = p->side ? p->white : p->black, you = p->side ? p->black : p->white;
    return __builtin_popcount(me) + 2 * __builtin_popcount(me & p->kings) -
           __builtin_popcount(you) - 2 * __builtin_popcount(you & p->kings);
}

/* The value of p within b. `want`: -1 the whole value (both claims, the
 * mover's opponent's first when the mover is not behind in material), or a
 * claim: search that one only (referee_accuracy's question about a turn).
 * `count`: the no-progress count at which the tables value p (0: fresh). */
static referee_value s_value(referee *r, const pns_pos *p, budget *b, int want, int count)
{
    referee_value v = {-1, 1};
    game_state s;
    if (khreibaga_set(&s, p->black, p->white, p->kings, (int)p->side) != 0)
        return v;
    game_result res = khreibaga_game.result(&s);
    if (res.over) {
        /* From a fresh history only R12 ends a game: the mover lost. */
        v.lo = v.hi = (int8_t)(res.winner == (int)p->side ? 1 : res.winner < 0 ? 0 : -1);
        return v;
    }
    int pieces = __builtin_popcount(p->black | p->white);
    tb_value tv;
    if (r->o.tables && pieces <= tb_pieces(r->o.tables) && tb_probe(r->o.tables, &s, &tv) == 0) {
        r->work.probed++;
        v.lo = v.hi = (int8_t)tb_value_at(tv, count);
        return v;
    }
    bool found;
    cache_entry *e = s_cache_slot(r, p, &found);
    if (found && (e->v.lo == e->v.hi || want < 0)) {
        r->work.cached++;
        return e->v;
    }
    if (found)
        v = e->v;
    /* Clear the table when half full: solved entries are never replaced, and
     * a full table makes every search slow. */
    if (r->tt_used * 2 > r->tt_entries) {
        pns_tt_close(&r->tt);
        char err[256];
        if (s_tt_open(r, err, sizeof err))
            log_error("referee: cannot make its table again: %s", err); /* searches stay open */
        r->work.clears++;
    }
    int mover = (int)p->side;
    bool full = b->nodes >= r->o.nodes;
    if (want >= 0) {
        s_narrow(&v, mover, want, s_claim(r, p, want, b));
    } else {
        int first = s_material(p) >= 0 ? 1 - mover : mover;
        s_narrow(&v, mover, first, s_claim(r, p, first, b));
        if (v.lo != v.hi)
            s_narrow(&v, mover, 1 - first, s_claim(r, p, 1 - first, b));
    }
    r->work.searched++;
    r->work.open += v.lo != v.hi;
    /* An unsettled value is worth keeping only when a whole budget was spent on it. */
    if (v.lo == v.hi || (full && want < 0)) {
        e->p = *p;
        e->v = v;
    }
    return v;
}

static budget s_budget(const referee *r)
{
    return (budget){r->o.nodes, r->o.seconds > 0 ? time_now() + r->o.seconds : 0};
}

int referee_value_of(referee *r, const game_state *s, referee_value *out)
{
    pns_pos p;
    if (khreibaga_game.mid_turn(s) || pns_pos_from_state(s, &p))
        return KZ_EINVAL;
    budget b = s_budget(r);
    *out = s_value(r, &p, &b, -1, 0);
    return 0;
}

/* ---- games -------------------------------------------------------------------------------- */

/* The verdict of a turn from `before` (the mover's) to `after` (the mover's,
 * already turned to its view). */
static int s_verdict(referee_value before, referee_value after, bool *inconsistent)
{
    *inconsistent = false;
    if (after.hi < before.lo)
        return REFEREE_LOSE;
    if (after.lo >= before.hi) {
        *inconsistent = after.lo > before.hi;
        return REFEREE_KEEP;
    }
    return REFEREE_UNKNOWN;
}

static referee_value s_neg(referee_value v)
{
    return (referee_value){(int8_t)-v.hi, (int8_t)-v.lo};
}

int referee_game_judge(referee *r, const game_state *start, const uint16_t *actions, int n,
                       referee_game *out)
{
    const game_def *g = &khreibaga_game;
    memset(out, 0, sizeof *out);
    out->start.lo = -1;
    out->start.hi = 1;
    if (g->mid_turn(start) || pns_pos_from_state(start, &r->pos[0]))
        return KZ_EINVAL;
    /* Step 1. Replay: the turn starts, each turn's first action. */
    game_state s = *start;
    int t = 0;
    r->first_action[0] = 0;
    r->ply[0] = g->ply(&s);
    r->count[0] = khreibaga_no_progress(&s);
    for (int i = 0; i < n; i++) {
        if (g->result(&s).over || !game_is_legal(g, &s, actions[i]))
            return KZ_EILLEGAL;
        g->apply(&s, actions[i]);
        if (!g->mid_turn(&s)) {
            if (t == REFEREE_MAX_TURNS)
                return KZ_EFULL;
            t++;
            pns_pos_from_state(&s, &r->pos[t]);
            r->first_action[t] = i + 1;
            r->ply[t] = g->ply(&s);
            r->count[t] = khreibaga_no_progress(&s);
        }
    }
    out->turns = t;
    out->result = g->result(&s);
    out->start_mover = (int)r->pos[0].side;
    /* Step 2. Value every turn start. */
    for (int k = 0; k <= t; k++) {
        budget b = s_budget(r);
        r->val[k] = s_value(r, &r->pos[k], &b, -1, r->o.fresh ? 0 : r->count[k]);
    }
    out->start = r->val[0];
    /* Step 3. Judge every turn. */
    int won_from[2] = {-1, -1}, errors_after[2] = {0, 0};
    for (int k = 0; k < t; k++) {
        int m = (int)r->pos[k].side;
        referee_value before = r->val[k];
        referee_value after = (int)r->pos[k + 1].side == m ? r->val[k + 1] : s_neg(r->val[k + 1]);
        bool inc;
        int verdict = s_verdict(before, after, &inc);
        game_state ps;
        khreibaga_set(&ps, r->pos[k].black, r->pos[k].white, r->pos[k].kings, m);
        int phase = yard_phase(g, &ps);
        out->by[phase][m][verdict]++;
        if (yard_pieces(g, &ps) <= REFEREE_FEW_PIECES)
            out->few[m][verdict]++;
        out->inconsistent += inc;
        if (before.lo == 1 && before.hi == 1 && won_from[m] < 0)
            won_from[m] = k;
        if (verdict != REFEREE_LOSE)
            continue;
        if (won_from[m] >= 0)
            errors_after[m]++;
        if (out->n_errors < REFEREE_MAX_ERRORS) {
            referee_error *e = &out->errors[out->n_errors];
            *e = (referee_error){.turn = k, .ply = r->ply[k], .side = m, .phase = phase,
                                 .before = before.lo, .after = after.hi, .count = r->count[k]};
            g->format_position(&ps, e->position, sizeof e->position);
            size_t len = 0;
            for (int i = r->first_action[k]; i < r->first_action[k + 1]; i++) {
                char a[32];
                g->format_action(actions[i], a, sizeof a);
                int w = snprintf(e->turn_text + len, sizeof e->turn_text - len, "%s%s",
                                 len ? " " : "", a);
                if (w < 0 || (size_t)w >= sizeof e->turn_text - len)
                    break;
                len += (size_t)w;
            }
        }
        out->n_errors++;
    }
    /* A side that was proven winning, made no value-losing turn since, and
     * did not win: the history (R13-R15) drew it, or the game was cut short. */
    if (out->result.over)
        for (int m = 0; m < 2; m++)
            if (won_from[m] >= 0 && errors_after[m] == 0 && out->result.winner != m)
                out->unconverted = true;
    return 0;
}

void referee_tally_add(referee_tally *t, const referee_game *g, unsigned sides)
{
    if (!sides)
        return;
    t->games++;
    t->unconverted += g->unconverted;
    int errors = 0;
    for (int ph = 0; ph < YARD_PHASES; ph++)
        for (int m = 0; m < 2; m++)
            if (sides & (1u << m))
                for (int v = 0; v < REFEREE_VERDICTS; v++) {
                    t->by[ph][m][v] += g->by[ph][m][v];
                    errors += v == REFEREE_LOSE ? g->by[ph][m][v] : 0;
                }
    for (int m = 0; m < 2; m++)
        if (sides & (1u << m))
            for (int v = 0; v < REFEREE_VERDICTS; v++)
                t->few[m][v] += g->few[m][v];
    t->games_with_error += errors > 0;
    t->inconsistent += g->inconsistent;
    for (int i = 0; i < g->n_errors && i < REFEREE_MAX_ERRORS; i++) {
        const referee_error *e = &g->errors[i];
        if (sides & (1u << e->side))
            t->kinds[e->before == 1 ? (e->after == 0 ? 0 : 1) : 2]++;
    }
}

long referee_tally_turns(const referee_tally *t, int phase, int side, int verdict)
{
    long n = 0;
    if (phase == REFEREE_FEW) {
        for (int m = 0; m < 2; m++)
            n += side < 0 || side == m ? t->few[m][verdict] : 0;
        return n;
    }
    for (int ph = 0; ph < YARD_PHASES; ph++)
        for (int m = 0; m < 2; m++)
            if ((phase < 0 || phase == ph) && (side < 0 || side == m))
                n += t->by[ph][m][verdict];
    return n;
}

/* ---- accuracy ----------------------------------------------------------------------------- */

/* Plays p's whole turn from s0 (hop by hop); the position it reaches. */
static int s_player_turn(player *p, const game_state *s0, uint64_t seed, pns_pos *to)
{
    const game_def *g = &khreibaga_game;
    game_state s = *s0;
    int me = g->to_move(&s);
    player_new_game(p, seed);
    while (!g->result(&s).over && g->to_move(&s) == me) {
        int a;
        int rc = player_choose(p, &s, &a, NULL);
        if (rc)
            return rc;
        if (!game_is_legal(g, &s, a))
            return KZ_EILLEGAL;
        g->apply(&s, a);
        if (!g->mid_turn(&s))
            break;
    }
    return pns_pos_from_state(&s, to);
}

/* Whether the turn to `to` keeps the mover's settled value v (REFEREE_KEEP,
 * _LOSE or _UNKNOWN), asking the search only the one claim that decides. */
static int s_judge_turn(referee *r, const pns_pos *to, int mover, int v, budget *b)
{
    if (v < 0)
        return REFEREE_KEEP; /* nothing to lose */
    /* A win is kept when the opponent (to move at `to`) loses: "the
     * opponent does not lose" disproven. A draw when the mover does not
     * lose: "the mover does not lose" proven. */
    int claim = v > 0 ? 1 - mover : mover;
    referee_value w = s_value(r, to, b, (int)to->side == mover ? -1 : claim, 0);
    referee_value after = (int)to->side == mover ? w : s_neg(w);
    bool inc;
    return s_verdict((referee_value){(int8_t)v, (int8_t)v}, after, &inc);
}

int referee_accuracy_run(referee *r, player *const *players, int np, const game_state *pos,
                         int n, uint64_t seed, referee_progress_fn progress, void *ctx,
                         referee_accuracy *out)
{
    const game_def *g = &khreibaga_game;
    memset(out, 0, sizeof *out);
    if (np < 0 || np > REFEREE_MAX_PLAYERS)
        return KZ_EINVAL;
    for (int i = 0; i < n; i++) {
        pns_pos root;
        if (g->mid_turn(&pos[i]) || pns_pos_from_state(&pos[i], &root))
            return KZ_EINVAL;
        out->positions++;
        budget b = s_budget(r);
        referee_value v = s_value(r, &root, &b, -1, 0);
        if (v.lo == v.hi && !g->result(&pos[i]).over) {
            int mover = (int)root.side, phase = yard_phase(g, &pos[i]);
            out->settled++;
            out->phase_n[phase]++;
            /* The players' turns first: they are what is measured. */
            int verdicts[REFEREE_MAX_PLAYERS];
            for (int w = 0; w < np; w++) {
                verdicts[w] = REFEREE_UNKNOWN;
                pns_pos to;
                int rc = s_player_turn(players[w], &pos[i], mix64(seed + (uint64_t)i), &to);
                if (rc)
                    return rc;
                int verdict = s_judge_turn(r, &to, mover, v.lo, &b);
                verdicts[w] = verdict;
                if (verdict == REFEREE_UNKNOWN)
                    continue;
                out->p[w].judged++;
                out->p[w].keep += verdict == REFEREE_KEEP;
                out->by_phase[w][phase].judged++;
                out->by_phase[w][phase].keep += verdict == REFEREE_KEEP;
            }
            /* Then every turn, for how many positions offer a losing one. */
            int nt = pns_turns(&root, r->turns), known = 0, lose = 0;
            for (int k = 0; k < nt; k++) {
                int verdict = s_judge_turn(r, &r->turns[k].to, mover, v.lo, &b);
                known += verdict != REFEREE_UNKNOWN;
                lose += verdict == REFEREE_LOSE;
            }
            if (known == nt) {
                out->all_known++;
                out->with_choice += lose > 0;
                for (int w = 0; w < np && lose > 0; w++) {
                    out->p[w].judged_choice += verdicts[w] != REFEREE_UNKNOWN;
                    out->p[w].keep_choice += verdicts[w] == REFEREE_KEEP;
                }
            }
        }
        if (progress)
            progress(ctx, i + 1, n, out);
    }
    return 0;
}
