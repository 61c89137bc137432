/* registry: the built-in games, the default first (game.h: game_builtin).
 * The one place above the engines that names them; a new game is one line
 * here and its module beside it in games/. */
#include "games/alquerque.h"
#include "games/backgammon.h"
#include "games/draughts.h"
#include "games/game.h"
#include "games/khreibaga.h"
#include "games/yinsh.h"

const game_def *const game_builtin[] = {&khreibaga_game, &alquerque_game, &draughts_game,
                                        &yinsh_game, &yinsh_blitz_game, &backgammon_game};
const int game_n_builtin = (int)(sizeof game_builtin / sizeof game_builtin[0]);
