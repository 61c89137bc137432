/* game: the interface between a board game's rules and everything above them
 * (network, search, self-play, cluster), and the registry of games. Nothing
 * outside a game module names a game's details: code asks a `game_def` for
 * its action count, input-plane shape, legal actions, symmetries, search
 * defaults and so on, and finds the game by its name (game_find; programs
 * take it as the setting `game`, kz as --game).
 *
 * A state is a small fixed-size value (`game_state`, GAME_STATE_BYTES bytes,
 * copy it with `=`); each module lays out its own struct inside
 * (game_def.state_bytes of them). Everything a game needs to decide legality
 * and the end of the game (repetition history, counters, a capture sequence
 * in progress) lives inside the state.
 *
 * Actions are integers in [0, action_count). A state's legal actions come
 * sorted ascending. `apply` requires a legal action on a state whose game is
 * not over (checked by assert); use game_is_legal and `result` on untrusted
 * input.
 *
 * Players are 0 (who moves first) and 1. Values and results in search and
 * training are always from the view of the player to move (see R18).
 *
 * Canonical form: the network sees a state from the mover's side
 * (`encode_planes`); `canonical_action` maps an action between the real and
 * the canonical orientation (it is its own inverse for a given state).
 *
 * Symmetries: a game lists the board symmetries that keep its rules and the
 * value of every position (none, the left-right mirror, the dihedral ones
 * the game has), each as a map of the canonical planes (cells and planes
 * permuted) and of the canonical actions. The trainer augments its samples
 * with them (a game with none trains without augmentation).
 *
 * Limits. The buffers above the games hold the largest of any game
 * (GAME_STATE_BYTES, GAME_MAX_ACTIONS, GAME_MAX_LEGAL, GAME_PACKED_BYTES,
 * GAME_POSITION_CHARS, GAME_MAX_PLANE_FLOATS); each game_def states its own
 * sizes and game_check holds them to those limits when a game is registered.
 *
 * Thread rules: every function of a game_def is pure over its arguments;
 * game_defs are immutable and shared. game_register is for start-up (before
 * other threads look games up). */
#ifndef KZ_GAME_H
#define KZ_GAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GAME_STATE_BYTES 512  /* room for any module's state */
#define GAME_MAX_ACTIONS 8192 /* largest action count of any module (Yinsh: 85*85 from-to) */
#define GAME_MAX_LEGAL 256    /* most legal actions in one state, any module */
#define GAME_PACKED_BYTES 32  /* most bytes of a packed position (pack/unpack_planes) */
#define GAME_POSITION_CHARS 255 /* longest position string of any module (NUL excluded) */
#define GAME_MAX_PLANE_FLOATS 4096 /* most floats of one state's planes (C * H * W) */
#define GAME_MAX_SYMMETRIES 11 /* most symmetries besides the identity (the hexagon's
                                  dihedral, Yinsh) */
#define GAME_NAME_CHARS 31    /* longest game name (models and records keep 32 bytes) */
#define GAME_MAX_GAMES 16     /* games registered at most, built-in ones included */
/* The game of a program that is not told another (its `game` setting's default). */
#define GAME_DEFAULT_NAME "khreibaga"

/* An opaque game state; copy by value. */
typedef struct game_state {
    _Alignas(16) uint8_t bytes[GAME_STATE_BYTES]; /* module-defined layout */
} game_state;

#define GAME_MAX_REASONS 16   /* most end reasons of one game, "none" included */
#define GAME_MAX_POINTS 3     /* most points one game can score (backgammon's backgammon) */

/* Why a game ended: each game names its own reasons (game_def.reasons), 0
 * always "none" (not over). The codes below are the board games' of the
 * Alquerque family (Khreibaga, Alquerque, draughts), whose game_defs leave
 * `reasons` NULL to use them; a game with other endings lists its own. */
enum game_reason {
    GAME_REASON_NONE = 0,    /* not over */
    GAME_REASON_NO_PIECES,   /* the mover has no pieces (loss) */
    GAME_REASON_NO_MOVES,    /* the mover has pieces but no legal action (loss) */
    GAME_REASON_NO_PROGRESS, /* too long without progress (draw) */
    GAME_REASON_REPETITION,  /* repeated position (draw) */
    GAME_REASON_LENGTH,      /* length cap (draw) */
    GAME_REASON_COUNT
};

/* A game's status. */
typedef struct game_result {
    bool over;   /* false while the game goes on */
    int winner;  /* 0 or 1 when won, -1 for a draw (or not over) */
    int reason;  /* the game's end reason: an index into its reasons (0: not over) */
    int points;  /* what the win is worth, 1..max_points (0: a draw, not over, or a
                    game that scores no points: read as 1 for a winner) */
} game_result;

/* An oracle that knows some positions exactly (a game's endgame tables): the
 * search and the players ask it through this hook, without knowing the game
 * or the tables (tablebase.h makes Khreibaga's). A small value; ctx borrowed. */
typedef struct game_oracle {
    /* 0 and *score when s is known: > 0 won, < 0 lost, 0 drawn for the
     * mover, |score| <= 100 (nearer wins score higher); nonzero otherwise. */
    int (*probe)(const void *ctx, const game_state *s, int *score);
    /* 0 and a best action for s (a known position); nonzero otherwise. */
    int (*best_action)(const void *ctx, const game_state *s, int *action);
    const void *ctx;
    const struct game_def *game; /* the game whose states it reads */
} game_oracle;

/* A board symmetry over the canonical view: sample (planes, policy) becomes
 * (planes', policy') with planes'[planes[p]][cells[i]] = planes[p][i] and
 * policy'[action(a)] = policy[a]. */
typedef struct game_symmetry {
    const char *name;         /* "mirror", "rot90", ... */
    const int16_t *cells;     /* (H*W) where each cell goes: a permutation */
    const int8_t *planes;     /* (C) where each plane goes (a permutation), NULL: each stays */
    int (*action)(int action); /* where each canonical action goes: a permutation of [0, A) */
} game_symmetry;

struct strbuf; /* common/util.h */

typedef struct game_def game_def;
struct game_def {
    const char *name;    /* short identifier stored in models and records */
    int action_count;    /* A: size of the action space */
    int planes;          /* C: input planes */
    int height, width;   /* H, W: board shape of the planes */
    int max_legal;       /* upper bound on legal actions in one state */
    int packed_bytes;    /* bytes written by pack() */
    int state_bytes;     /* bytes of game_state the module's state uses (its history too) */
    int position_chars;  /* longest string format_position writes (NUL excluded) */
    int simulations;     /* the search's default simulations per move */
    float dirichlet_alpha; /* the search's default root noise: about 10 / the typical
                              number of legal actions (AlphaZero's rule of thumb) */
    int max_points;      /* the most points one win scores (0 or 1: a win is a win;
                            backgammon 3); values are points / max_points */
    const char *const *reasons; /* n_reasons end-reason names, reasons[0] "none"
                                   (NULL: the Alquerque family's, enum game_reason) */
    int n_reasons;
    int n_symmetries;    /* entries of symmetries (0: none, no augmentation) */
    const game_symmetry *symmetries; /* the board symmetries besides the identity */

    /* The initial position. */
    void (*init)(game_state *s);
    /* Legal actions, ascending; returns their count (0 when none or when the
     * game is over for lack of moves). `out` holds max_legal entries. */
    int (*legal_actions)(const game_state *s, uint16_t *out);
    /* Optional (NULL: from legal_actions): mask[a] = 1 for legal a, else 0;
     * mask holds action_count bytes. Called through game_legal_mask. */
    void (*legal_mask)(const game_state *s, uint8_t *mask);
    /* Optional (NULL: looked up among legal_actions): whether `action` (any
     * int) is legal in s. Called through game_is_legal. */
    bool (*is_legal)(const game_state *s, int action);
    /* Copies a state, like `*dst = *src` but skipping bytes the state does
     * not use (unused history slots): the cheap way in hot loops. */
    void (*copy)(game_state *dst, const game_state *src);
    /* Plays a legal action. */
    void (*apply)(game_state *s, int action);
    /* The player to move (0 or 1). Inside a multi-step turn it stays the same. */
    int (*to_move)(const game_state *s);
    /* Whether s is in the middle of a turn (a capture sequence). */
    bool (*mid_turn)(const game_state *s);
    /* Completed turns since the start (or since the position was given). */
    int (*ply)(const game_state *s);
    /* Terminal status; decided only at the start of a turn. */
    game_result (*result)(const game_state *s);
    /* Optional (NULL: the game has no chance). Whether nature acts next (a
     * roll of the dice): then legal_actions lists the outcomes (ids in
     * [0, action_count), ascending), apply plays the one drawn, and to_move
     * is the player who moves after it. A chance state is never over. */
    bool (*is_chance)(const game_state *s);
    /* With is_chance: the probability of each outcome legal_actions lists, in
     * its order, summing to 1; probs holds max_legal entries. */
    void (*chance_probs)(const game_state *s, float *probs);
    /* Canonical input planes (C, H, W), floats, written to out. */
    void (*encode_planes)(const game_state *s, float *out);
    /* Maps an action between real and canonical orientation for s (involution). */
    int (*canonical_action)(const game_state *s, int action);
    /* A 64-bit hash of everything the planes and the legal actions depend on:
     * equal positions (same pieces, mover, turn progress, plane inputs) hash equally. */
    uint64_t (*hash)(const game_state *s);
    /* Packs what encode_planes needs into packed_bytes bytes; unpack_planes
     * turns such bytes into planes. unpack_planes returns 0 or KZ_ECORRUPT
     * for bytes no pack() could have written. */
    void (*pack)(const game_state *s, uint8_t *out);
    int (*unpack_planes)(const uint8_t *in, float *out);
    /* Optional (NULL: none): packed bytes back to a state that can be
     * searched (the trainer's reanalyse, docs/trainer.md): the position,
     * the mover and the turn's progress as pack() saw them; what the bytes
     * lack (a game's repetition history) starts afresh. 0, or KZ_ECORRUPT
     * for bytes no pack() could have written. */
    int (*unpack_state)(const uint8_t *in, game_state *out);
    /* Parses a position string; 0, or KZ_EINVAL with a one-line reason in err. */
    int (*parse_position)(game_state *s, const char *str, char *err, size_t errlen);
    /* Writes the position string (always NUL-terminated). */
    void (*format_position)(const game_state *s, char *buf, size_t len);
    /* Parses an action string (syntax only); 0 or KZ_EINVAL. */
    int (*parse_action)(const char *str, int *action);
    /* Writes an action string (always NUL-terminated). */
    void (*format_action)(int action, char *buf, size_t len);
    /* Draws the board for a person. */
    void (*render)(const game_state *s, FILE *out);
    /* Optional (NULL: render of the state reached): draws the board for a
     * person at play (kz play) after the last turn, the n actions played
     * from the turn start `from`, marked on the board (n may be 0); from the
     * second player's side when `turned`. */
    void (*render_turn)(const game_state *from, const uint16_t *actions, int n, bool turned,
                        FILE *out);
    /* Optional (NULL: none): a paragraph for a person at play (kz play's
     * help): what the board's symbols mean and the rule a player must know. */
    const char *legend;
    /* Optional (NULL: a capture sequence, "captures on"): how a turn that goes
     * on after an action (mid_turn) is said, e.g. "moves on" (the rest of a
     * roll). */
    const char *mid_turn_verb;
    /* Optional (NULL: never): whether `action` (legal in s) takes a piece. */
    bool (*is_capture)(const game_state *s, int action);
    /* "black", "white", ... */
    const char *(*player_name)(int player);
    /* Optional (NULL: none): the module's own perft, counting exactly what
     * game_perft's generic loop counts (same full make-move at every node),
     * only faster; game_perft calls it when set. */
    uint64_t (*perft)(const game_state *s, int depth);
    /* Optional (NULL: none): the material balance of s from `player`'s view,
     * scaled into [-1, 1]; at the game's end, the target of the network's
     * auxiliary material head (model.h). */
    float (*material)(const game_state *s, int player);
    /* Optional (NULL: 0 everywhere): the baseline players' static evaluation
     * of s (a turn start) from the mover's view, in hundredths of the game's
     * common piece (a man = 100): what the greedy and alpha-beta players of
     * player.h maximise. */
    long (*evaluate)(const game_state *s);
    /* Optional (NULL: never): whether the mover at this turn start must
     * capture (compulsory capture): the baseline players' quiescence searches
     * such positions on instead of evaluating them. */
    bool (*must_capture)(const game_state *s);
    /* Optional (0 and NULL: the planes flattened, C * H * W features): the
     * features a tree model (nn/gbdt.h) sees, n_features floats computed
     * from one position's canonical planes (C, H, W) into out. */
    int n_features;
    void (*features)(const float *planes, float *out);
    /* Optional (0 and NULL: none): input features the network cannot cheaply
     * compute itself (KataGo's "game-specific input features"): from one
     * position's canonical planes (C, H, W), derived_planes more planes
     * (derived_planes, H, W) written to out. A network built with them
     * (model_arch.derived_planes, nn/model.h) appends them to its input; the
     * rest of the program still hands it the C planes. Computed from the
     * planes alone, so that they follow the board symmetries. */
    int derived_planes;
    void (*derive_planes)(const float *planes, float *out);
    /* Optional (NULL: a plain grid, games/view.h): writes the game's
     * description for the web pages, one JSON object (docs/web.md, "A game's
     * description": board geometry, pieces and colours, players, how the
     * position and the actions are written) appended to out. */
    void (*describe)(struct strbuf *out);
};

/* The built-in games, the default first (games/registry.c, the one file that
 * names them): what game_at lists before the games added by game_register. */
extern const game_def *const game_builtin[];
extern const int game_n_builtin;

/* The registered game called `name`; NULL when there is none (or name is NULL). */
const game_def *game_find(const char *name);
/* The game named GAME_DEFAULT_NAME. */
const game_def *game_default(void);
/* The registered games in order (the built-in ones first): the i-th, or NULL
 * past the last. */
const game_def *game_at(int i);
/* The registered games' names, ", "-separated, into buf (always NUL-terminated;
 * for messages such as "unknown game 'x' (known: ...)"). */
void game_names(char *buf, size_t len);
/* game_find for a program's setting: the game called `name`, or NULL with
 * "unknown game 'NAME' (the games: ...)" in err, NAME cut at `shown`
 * characters (INT_MAX: whole). */
const game_def *game_find_said(const char *name, int shown, char *err, size_t errlen);
/* Checks g against the limits above and its own declarations: name (1 to
 * GAME_NAME_CHARS of [a-z0-9_-]), sizes, the required functions, the
 * symmetries (permutations), the search defaults, and the initial position
 * (its string fits position_chars and parses back; with unpack_state, its
 * packed bytes unpack to a state that packs to them again). 0, or KZ_EINVAL with a
 * one-line reason in err (may be NULL). */
int game_check(const game_def *g, char *err, size_t errlen);
/* Adds g (borrowed: it must outlive every use; a static game_def) to the
 * registry, after game_check. 0, or KZ_EINVAL (g fails the check, its name is
 * taken, or GAME_MAX_GAMES are registered) with a one-line reason in err.
 * Built-in games are registered already; this is for games defined elsewhere
 * (the tests' toy game). Call before other threads use the registry. */
int game_register(const game_def *g, char *err, size_t errlen);
/* The name of g's end reason (g->reasons, or the Alquerque family's "none",
 * "no-pieces", "no-moves", "no-progress", "repetition", "length"); "unknown"
 * out of range. */
const char *game_reason_name(const game_def *g, int reason);
/* g's number of end reasons, "none" included (at most GAME_MAX_REASONS). */
int game_reason_count(const game_def *g);
/* The code of g's reason called name; -1 when g has none of that name. */
int game_reason_parse(const game_def *g, const char *name);
/* mask[a] = 1 for each legal action a of s, else 0 (mask holds
 * g->action_count bytes): g->legal_mask, or from g->legal_actions. */
void game_legal_mask(const game_def *g, const game_state *s, uint8_t *mask);
/* Whether `action` (any int) is legal in s: g->is_legal, or whether
 * g->legal_actions lists it. */
bool game_is_legal(const game_def *g, const game_state *s, int action);
/* Applies symmetry k (0 <= k < g->n_symmetries) to one sample's canonical
 * planes (C, H, W) in place. */
void game_symmetry_planes(const game_def *g, int k, float *planes);
/* Applies symmetry k to a dense canonical policy (A) in place. */
void game_symmetry_policy(const game_def *g, int k, float *pi);
/* Perft (R22): leaf nodes of the action tree to `depth`, full make-move at
 * every node, terminal nodes above the depth counting nothing. Uses the
 * module's g->perft when it has one, else the generic loop over the other
 * game_def functions (game_perft_generic). */
uint64_t game_perft(const game_def *g, const game_state *s, int depth);
/* The generic loop: result, legal_actions, then copy + apply + recurse. */
uint64_t game_perft_generic(const game_def *g, const game_state *s, int depth);
/* Whole-turn perft: leaf nodes of the tree of turns to `depth`, a turn being
 * every action from a turn start to the next (a capture sequence is one
 * turn; distinct hop paths count as distinct turns, as R22's hops do),
 * terminal turn starts above the depth counting nothing. */
uint64_t game_perft_turns(const game_def *g, const game_state *s, int depth);
/* The hop-by-hop games (Alquerque, draughts): actions are from-to pairs
 * (action = from * squares + to, squares <= GAME_HOP_SQUARES) with at most
 * one piece jumped per hop (over(from, to): its square, or -1). */
#define GAME_HOP_SQUARES 64
/* Such a game's render_turn (kz play's board after the last turn): replays
 * the n actions from `from`, marks the squares ('o' where a piece came
 * from, 'l' where it went, 'x' what it took), has draw() draw the state
 * reached with those marks (turned: from the second player's side), then
 * writes the turn under it, "last: <mover> a, b" (a capture's '-' shown as
 * 'x') with the legend of the marks (nothing when n is 0). */
void game_render_hop_turn(const game_def *g, const game_state *from, const uint16_t *actions,
                          int n, bool turned, FILE *out, int squares,
                          int (*over)(int from, int to),
                          void (*draw)(const game_state *s, const char *marks, bool turned,
                                       FILE *out));
/* One square of such a board, three characters: the piece p ('.' empty),
 * in brackets [p] when it must jump on (chain), <p> where the last turn
 * landed (mark 'l'); an empty square shows '*' where the last turn left it
 * (mark 'o'), 'x' where it took a piece (mark 'x'). */
void game_draw_hop_square(FILE *out, char piece, char mark, bool chain);
/* Such a game's parse_action: "src-dst" or "srcxdst" (x or X), each point
 * read by point() (its index, or -1; it moves *p past what it read) into
 * src * squares + dst. 0 or KZ_EINVAL. */
int game_parse_hop_action(const char *str, int (*point)(const char **p), int squares,
                          int *action);
/* Result from the view of `player`: +1 win, -1 loss, 0 draw (r must be over). */
int game_result_for(game_result r, int player);
/* The result as a value from `player`'s view in [-1, 1]: +-points/max_points
 * for a win or a loss (points 0 read as 1; max_points 0 as 1), 0 for a draw
 * or a game not over. The terminal value and value target of every game. */
float game_result_value(const game_def *g, game_result r, int player);

/* The dice of a game with chance (docs/rules-backgammon.md, "Dice from the
 * seed"): the one generator every driver draws chance outcomes from and every
 * replay of a record checks them against. A game's dice generator is an
 * rng_t (common/util.h: xoshiro256**) seeded with mix64(seed ^ GAME_DICE_KEY),
 * seed the game's (the record's) seed; at each chance state in the game's
 * order it draws u = rng_uniform and takes the first outcome of
 * legal_actions whose cumulative chance_probs (summed in float, in that
 * order) exceeds u (the last one if rounding leaves u beyond the sum). */
#define GAME_DICE_KEY 0x6b7a2d6469636521ull /* "kz-dice!" */
struct rng;
void game_dice_seed(struct rng *dice, uint64_t seed);
/* The outcome drawn at chance state s (g->is_chance(s)) from dice. */
int game_chance_draw(const game_def *g, const game_state *s, struct rng *dice);

#endif
