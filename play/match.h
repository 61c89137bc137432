/* match: games between two players, their statistics, SPRT, and the gate.
 *
 * Playing. match_run plays games between players A and B with alternating
 * colours (A is player 0, who moves first, in even-numbered games), either
 * all from the start position or from K distinct random openings, each
 * opening played twice, once with each colour: game i uses opening
 * (i / 2) mod K. Every action of both players goes through player_choose;
 * each game reseeds both players from the match seed and the game index, so a
 * match is reproducible from its seed. In a game with chance (backgammon)
 * the two games of a pair (2j, 2j + 1: one start, A with each colour) have
 * the same seed, so the same dice (duplicate dice: each side gets the
 * other's rolls once, as make learn plays them); the games without chance
 * are seeded per game as before.
 *
 * Statistics, from A's view, over N = W + D + L games:
 *   score      s = (W + D/2) / N
 *   variance   per game (trinomial): v = (W (1-s)^2 + D (1/2-s)^2 + L s^2) / N
 *   interval   s +/- 1.959964 sqrt(v / N)                       (95%, normal)
 *   Elo        E(s) = -400 log10(1/s - 1)  (logistic Elo), and its interval
 *              [E(s_lo), E(s_hi)] from the score interval's ends (+/-inf at 0, 1)
 *
 * SPRT (as fishtest computes it for W/D/L: LLRcalc.LLR_logistic). H0: the
 * expected score is s0 = 1/(1 + 10^(-elo0/400)); H1: s1 likewise from elo1.
 * The generalised log-likelihood ratio (GSPRT) is
 *   LLR = N' sum_i p_i log(q1_i / q0_i)
 * where outcomes x_i in {1, 1/2, 0} have empirical frequencies p_i (counts
 * regularised: a zero count becomes 0.001; N' the regularised total), and
 * q_j is the maximum-likelihood trinomial whose mean is s_j:
 *   q_j,i = p_i / (1 + t (x_i - s_j)), t solving sum_i p_i (x_i - s_j) / (1 + t (x_i - s_j)) = 0.
 * For large N this tends to the normal approximation
 *   LLR ~ N (s1 - s0) (2 s - s0 - s1) / (2 v).
 * Decision: LLR >= log((1-beta)/alpha) accepts H1, LLR <= log(beta/(1-alpha))
 * accepts H0, otherwise continue. Unlike the plain normal approximation, this
 * stays sane with zero counts and few games (one win gives LLR ~ log(s1/s0)).
 *
 * Pentanomial: game pairs. With a strong first- or second-mover advantage
 * (in Khreibaga White wins ~90% of games between decent networks) single
 * games mostly measure the colour, so each opening is played once with each
 * colour and the PAIR is the unit of observation. A pair scores 0, 1/2, 1,
 * 3/2 or 2 points for A (LL, LD, DD or WL, WD, WW; either order), counted in
 * penta[0..4]. Over N pairs (2N games), with y_k = k/4 a pair's per-game score:
 *   score      s = sum_k penta[k] y_k / N             (the same per-game score)
 *   variance   per pair: v = sum_k penta[k] (y_k - s)^2 / N
 *   interval   s +/- 1.959964 sqrt(v / N), Elo as above
 * A pair's two games share the opening and swap the colours, so their results
 * are correlated; the pair variance counts that, where the trinomial formula
 * treats the games as independent and overstates the error when the colour or
 * the opening decides much of a game (every pair WL: pair variance 0, trinomial
 * 1/4 per game). The GSPRT is the same as above with the five outcomes y_k (fishtest's
 * LLR_logistic on pentanomial results: a zero count becomes 0.001, N' is the
 * regularised number of pairs, s0 and s1 are per-game scores).
 *
 * Thread rules: the statistics are pure functions; match_run uses its players
 * from the calling thread only. */
#ifndef KZ_MATCH_H
#define KZ_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "search/player.h"

#define MATCH_Z95 1.959963984540054   /* two-sided 95% normal quantile */
#define MATCH_REGULARISE 1e-3          /* what a zero count becomes in the LLR */
#define MATCH_MAX_OPENINGS 100000      /* most openings match_run accepts */
#define MATCH_MAX_OPENING_TURNS 200    /* most random turns in an opening */
#define MATCH_PENTA 5                  /* pair outcomes: LL, LD, DD or WL, WD, WW */

/* ---- the gate: when a candidate network replaces the best one ---- */

/* Three rules, chosen by gate_config.mode (setting names in quotes):
 * - GATE_MODE_SPEC "spec": the specification's gate, unchanged: `games` games,
 *   ACCEPT iff the candidate's score > threshold (draws count half). With the
 *   `sprt` flag, the trinomial SPRT per game decides instead, with `games` as
 *   the cap (the older option; games are scored one by one). gate_decide.
 * - GATE_MODE_SPRT "sprt": the pentanomial GSPRT on game PAIRS (each opening of
 *   a fixed book played once with each colour; match.h above) with elo0, elo1,
 *   alpha, beta. `games` (even) is the cap: at games/2 pairs without an SPRT
 *   decision, ACCEPT iff the pentanomial score is > 1/2, else REJECT.
 *   gate_decide_pairs.
 *   Why 1/2 at the cap, and not the spec's threshold or the SPRT's midpoint
 *   (s0+s1)/2: an SPRT still undecided after many pairs says the true difference
 *   is small, between about elo0 and elo1. Demanding more there (the midpoint is
 *   ~17 Elo for 0/35) rejects the many small real steps a run makes (Leela
 *   Zero's promotions measured ~+5 Elo each), and stalls learning; a candidate
 *   not behind on the point estimate is no likely regression. KataGo's gate was
 *   likewise ">= 50%". Exactly 1/2 keeps the incumbent (no evidence of progress).
 * - GATE_MODE_NONE "none": every candidate is accepted at once (AlphaZero's
 *   choice; both decide functions return GATE_ACCEPT without games).
 * Thread-safe (pure). */
typedef enum gate_mode { GATE_MODE_SPEC = 0, GATE_MODE_SPRT = 1, GATE_MODE_NONE = 2 } gate_mode;
#define GATE_MODES 3          /* number of gate modes */
#define GATE_MAX_ELO 2000     /* most |elo0|, |elo1| gate_config_check accepts */

typedef struct gate_config {
    gate_mode mode;     /* GATE_MODE_SPEC */
    int games;          /* 50; spec: the games; sprt: the cap in games (2 per pair) */
    double threshold;   /* 0.55: spec: candidate's score must be > threshold, draws count half */
    bool sprt;          /* spec mode only: per-game trinomial SPRT with `games` as the cap */
    double elo0, elo1, alpha, beta;  /* SPRT parameters (defaults 0, 35, 0.05, 0.05) */
} gate_config;
enum gate_decision { GATE_CONTINUE = 0, GATE_ACCEPT = 1, GATE_REJECT = 2 };
/* Mode spec, 50 games, threshold 0.55, no sprt flag, SPRT parameters 0, 35, 0.05, 0.05. */
void gate_config_default(gate_config *c);
/* Checks a configuration from a user or a file: a known mode; spec: games >= 1,
 * 0 <= threshold < 1, and with the sprt flag the SPRT parameters; sprt: games
 * >= 2 and even, no sprt flag, and the SPRT parameters; none: nothing else. The
 * SPRT parameters: elo0 < elo1, both within +/-GATE_MAX_ELO, alpha and beta in
 * (0, 1). 0, or KZ_EINVAL with a one-line reason in err (if non-NULL). The
 * decide functions assert what this checks. */
int gate_config_check(const gate_config *c, char *err, size_t errlen);
/* The name of a mode ("spec", "sprt", "none"; "?" for anything else), and back:
 * 0, or KZ_EINVAL for an unknown name (*out unchanged). */
const char *gate_mode_name(gate_mode m);
int gate_mode_parse(const char *name, gate_mode *out);
/* Whether the mode scores pairs (gate_decide_pairs) rather than games (gate_decide).
 * Mode none works with either. */
bool gate_uses_pairs(const gate_config *c);
/* Decision after wins/draws/losses from the candidate's view, in modes spec and
 * none (asserts on mode sprt). Spec, fixed: CONTINUE until `games` games are
 * played, then ACCEPT iff score > threshold (may decide early when the outcome
 * can no longer change). Spec with the sprt flag: the SPRT's decision (with
 * `games` as a cap). */
int gate_decide(const gate_config *c, int wins, int draws, int losses);
/* Details of gate_decide (what the header above leaves open):
 * - Counts must be >= 0 and the configuration valid (gate_config_check; assert).
 * - The score is compared in half points, with a 1e-9 tolerance against
 *   rounding, so 27.5/50 is not > 0.55.
 * - Fixed mode, early: ACCEPT once the points already won exceed threshold *
 *   games even if every remaining game is lost; REJECT once they cannot exceed
 *   it even if every remaining game is won. With more than `games` games, the
 *   score over all of them decides.
 * - SPRT flag: ACCEPT/REJECT as soon as the SPRT accepts H1/H0; at `games`
 *   games without an SPRT decision, the fixed rule decides (score > threshold). */
/* Decision after the pairs in penta (candidate's view, match_penta_add), in modes
 * sprt and none (asserts on mode spec: pairs do not tell DD from WL, which the
 * spec's per-game rule needs). Sprt: ACCEPT/REJECT as soon as the pentanomial
 * SPRT accepts H1/H0; once 2 * pairs >= games without a decision, ACCEPT iff
 * the pentanomial score > 1/2 (compared exactly, in half points); else
 * CONTINUE. */
int gate_decide_pairs(const gate_config *c, const int penta[MATCH_PENTA]);

/* ---- statistics ---- */

/* Everything the scorer reports about W/D/L or pairs (from A's view). */
typedef struct match_stats {
    int games;                 /* N = W + D + L; for pairs 2 * pairs */
    double score;              /* (W + D/2) / N; 0.5 when N = 0 */
    double sd;                 /* standard error of the score, sqrt(v / N) (N pairs for pairs) */
    double score_lo, score_hi; /* 95% interval, clamped to [0, 1] */
    double elo;                /* E(score); +/-INFINITY at 1 and 0 */
    double elo_lo, elo_hi;     /* E(score_lo), E(score_hi) */
} match_stats;

void match_stats_compute(int wins, int draws, int losses, match_stats *out);
/* Wilson's 95% interval of a share of k successes in n trials (the
 * endgame accuracy's, player_accuracy), in [0, 1]; [0, 1] itself at n 0. */
void match_wilson(int k, int n, double *lo, double *hi);
/* Logistic Elo of a score in [0, 1] (+/-INFINITY at the ends), and back. */
double match_elo_from_score(double score);
double match_score_from_elo(double elo);
/* The GSPRT log-likelihood ratio above (elo0 < elo1). */
double match_llr(int wins, int draws, int losses, double elo0, double elo1);
/* The SPRT's bounds: *lower = log(beta/(1-alpha)), *upper = log((1-beta)/alpha). */
void match_sprt_bounds(double alpha, double beta, double *lower, double *upper);
/* GATE_ACCEPT (H1), GATE_REJECT (H0) or GATE_CONTINUE for the SPRT above;
 * llr may be NULL, else receives the LLR. */
int match_sprt_decide(int wins, int draws, int losses, double elo0, double elo1, double alpha,
                      double beta, double *llr);

/* Pentanomial (pairs of games, see above). A penta array is int[MATCH_PENTA],
 * zeroed by the caller; counts must be >= 0. */
/* Adds the pair of games with results r1, r2 (+1 A won, 0 draw, -1 A lost):
 * penta[2 + r1 + r2]++. */
void match_penta_add(int penta[MATCH_PENTA], int r1, int r2);
/* The statistics above over the pairs in penta; out->games = 2 * pairs. With
 * no pairs, as match_stats_compute with no games. */
void match_penta_stats(const int penta[MATCH_PENTA], match_stats *out);
/* The pentanomial GSPRT log-likelihood ratio (elo0 < elo1). */
double match_penta_llr(const int penta[MATCH_PENTA], double elo0, double elo1);
/* As match_sprt_decide, for pairs. */
int match_penta_sprt_decide(const int penta[MATCH_PENTA], double elo0, double elo1, double alpha,
                            double beta, double *llr);

/* ---- playing ---- */

/* One finished game as match_run reports it. */
typedef struct match_game {
    int index;           /* 0-based game number */
    int opening;         /* opening index, -1 when played from the start */
    int a_player;        /* the player id (0 moves first) A played */
    game_result result;  /* how the game ended */
    int a_result;        /* +1 A won, 0 draw, -1 A lost */
    int plies;           /* completed turns */
    int actions;         /* actions (hops) played */
    /* With match_config.judge (backgammon): gnubg's equity lost by each
     * player id's whole moves at rolls with a choice, summed, and their count. */
    double loss[2];
    int decisions[2];
    /* Of those, the ones in a race (no contact left at the roll: backgammon_contact). */
    double race_loss[2];
    int race_decisions[2];
} match_game;

/* Settings of match_run. */
typedef struct match_config {
    int games;           /* games to play (under SPRT, the most to play), >= 1 */
    int openings;        /* K >= 1: K random openings, each with both colours; 0: the start */
    /* Non-NULL: the K openings are book[0..K-1] (a book file read by the
     * caller, e.g. kz yardstick book's balanced openings), not random ones;
     * opening_turns is then unused. */
    const game_state *book;
    int opening_turns;   /* random turns per opening, >= 1; 0: the fewest that give K */
    uint64_t seed;       /* seeds the openings and the players */
    bool sprt;           /* stop when the SPRT decides */
    double elo0, elo1, alpha, beta; /* SPRT parameters */
    /* Called after every game with the game and the tally so far (may be NULL). */
    void (*on_game)(void *ctx, const match_game *game, int wins, int draws, int losses);
    void *ctx;           /* passed to on_game and on_action */
    /* Called before each action of a game is played (chance draws too), with
     * the game's index, the state and the action (may be NULL): a caller that
     * wants the moves (kz solve referee) keeps them. */
    void (*on_action)(void *ctx, int game, const game_state *s, int action);
    /* Backgammon: gnubg (search/gnubg.h) judging every whole move played at
     * a roll with a choice (match_game.loss); NULL: none. A judge that fails
     * stops the match with its error. */
    struct gnubg *judge;
} match_config;

/* Defaults: 100 games, start position, opening turns 0 (automatic), seed 1, no SPRT,
 * SPRT parameters 0, 35, 0.05, 0.05. */
void match_config_default(match_config *c);

/* K distinct positions (by game_def->hash), each reached from the start by
 * `turns` random turns without ending the game, with level material and no
 * capture pending (player_evaluate without mobility is 0 and the mover need
 * not capture): random turns easily blunder a piece, and a lost opening
 * played with both colours only adds a pair of noise games. 0, or KZ_EINVAL when fewer
 * than K distinct ones turn up (too few turns for that many openings).
 * turns = 0 tries 1, 2, ... MATCH_MAX_OPENING_TURNS turns and uses the first
 * that gives K (fewer random turns leave the games more natural). */
int match_openings(const game_def *g, int k, int turns, uint64_t seed, game_state *out);

/* gnubg `judge`'s rating of player id `side`'s whole moves in a recorded
 * backgammon game (data/record.h; its rolls are among its moves), as
 * match_play_judged rates them in play: the record is replayed through its
 * rules (record_replay) and each of side's whole moves at a roll with a
 * choice is judged; out gets side's loss and decisions (and the races'),
 * the winner and end reason (not the points) and the plies. 0, or
 * KZ_EINVAL (not backgammon, a bad side, a record that does not replay) or
 * KZ_EIO (the judge failed), with a one-line reason in err. */
struct game_record;
int match_judge_record(const game_def *g, const struct game_record *r, int side,
                       struct gnubg *judge, match_game *out, char *err, size_t errlen);

/* Plays one game from `start`: players[i] plays player id i. Both players are
 * reseeded with `seed` (player 1 with a derived seed). Writes the result and,
 * if non-NULL, the counts of turns and actions. 0, or the error of a player
 * that failed, or KZ_EILLEGAL if a player chose an illegal action. */
int match_play_game(const game_def *g, player *players[2], const game_state *start,
                    uint64_t seed, game_result *result, int *plies, int *actions);

/* As match_play_game, with gnubg `judge` (backgammon; NULL: none) rating
 * every whole move played at a roll with a choice, as match_run's judge
 * does: out receives the result, plies, actions and each player id's loss
 * and decisions (out->index, opening, a_player and a_result are left 0).
 * 0, a player's error, KZ_EILLEGAL, or the judge's error (KZ_EIO: gnubg
 * died or timed out; logged). */
int match_play_judged(const game_def *g, player *players[2], const game_state *start,
                      uint64_t seed, struct gnubg *judge, match_game *out);

/* A ratio of sums over independent units (games, or pairs of games) with
 * its 95% interval: e.g. equity lost over the decisions of each game (the
 * error rate per decision: the games, not the decisions, are independent),
 * or points over games. Add each unit's numerator x and denominator y;
 * the ratio R = sum x / sum y, its variance by the delta method
 *   var R = sum (x - R y)^2 / (n (n - 1) ybar^2)
 * (with every y = 1: the sample variance of the mean), the half-width
 * MATCH_Z95 sqrt(var R); 0 with fewer than 2 units (and R 0 when sum y is 0). */
typedef struct match_ratio {
    int n;                          /* units */
    double x, y, xx, yy, xy;        /* sums of x, y, x^2, y^2, x y */
} match_ratio;
void match_ratio_add(match_ratio *r, double x, double y);
void match_ratio_stats(const match_ratio *r, double *ratio, double *half);

/* Plays the match A vs B. Writes the tally from A's view, and the SPRT
 * decision (GATE_*; GATE_CONTINUE when SPRT is off or undecided) if decision
 * is non-NULL. 0, KZ_EINVAL for bad settings or openings, or a game's error. */
int match_run(const game_def *g, player *a, player *b, const match_config *cfg, int *wins,
              int *draws, int *losses, int *decision);

#endif
