/* coordinator: kz-coordinator's actor (coordinator.c): the ROUTER/PUB
 * sockets, the request handlers, game ingest with group commit, worker
 * liveness, timers; it runs the parts of features.h over the services of
 * services.h, and nothing below calls back into it. main.c only. */
#ifndef KZ_SERVER_COORDINATOR_H
#define KZ_SERVER_COORDINATOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

/* The gate from the settings (checked). 0 or KZ_EINVAL with err. */
int coord_gate_config(const coord_config *cfg, gate_config *g, char *err, size_t errlen);
/* The anchors from the settings: baseline player specs (checked). 0 or KZ_EINVAL. */
int coord_anchors(const coord_config *cfg, const game_def *g,
                  char anchors[COORD_MAX_ANCHORS][COORD_NAME], int *n, char *err, size_t errlen);
int coord_init(coord *c, const coord_config *cfg, volatile sig_atomic_t *stop);
int coord_run(coord *c);
void coord_fini(coord *c);
/* The simulations a new self-play job asks for: `simulations`, or under the
 * schedule (sims_start > 0) sims_start + (simulations - sims_start) * min(1,
 * stored games / sims_ramp_games), rounded. */
uint32_t coord_selfplay_sims(coord *c);

#endif
