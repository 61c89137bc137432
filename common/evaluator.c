/* evaluator: the uniform evaluator. See evaluator.h. */
#include "evaluator.h"

#include <string.h>

static int s_uniform_run(void *ctx, const float *planes, int B, float *logits, float *values)
{
    const game_def *g = ctx;
    (void)planes;
    memset(logits, 0, sizeof(float) * (size_t)B * (size_t)g->action_count);
    memset(values, 0, sizeof(float) * (size_t)B);
    return 0;
}

evaluator evaluator_uniform(const game_def *g)
{
    return (evaluator){.run = s_uniform_run, .ctx = (void *)g, .max_batch = EVALUATOR_UNLIMITED};
}
