/* The workspace of one pass over a policy's networks: see net.h. */
#include <string.h>

#include "core/alloc.h"
#include "nn/net.h"

enum { FLOAT_ALIGN = 16 }; /* floats in 64 bytes */

/* The next array of n floats at *cursor; the cursor moves past it, rounded up. */
static size_t take(size_t *cursor, size_t n)
{
    size_t at = *cursor;
    *cursor += frl_align_up(n, FLOAT_ALIGN);
    return at;
}

int32_t frl_net_widest(const frl_net_shape *n)
{
    int32_t w = n->actor->max_width > n->critic->max_width ? n->actor->max_width
                                                            : n->critic->max_width;
    return n->trunk && n->trunk->max_width > w ? n->trunk->max_width : w;
}

void frl_net_pass_plan(const frl_net_shape *n, int32_t rows, int training, frl_pass_plan *plan)
{
    size_t r = (size_t)rows, at = 0;
    memset(plan, 0, sizeof *plan);
    plan->xn = take(&at, r * (size_t)n->in_w);
    if (n->trunk)
        plan->trunk_acts = take(&at, r * (size_t)n->trunk->act_width);
    plan->actor_acts = take(&at, r * (size_t)n->actor->act_width);
    plan->critic_acts = take(&at, r * (size_t)n->critic->act_width);
    if (training) {
        plan->dy = take(&at, r * (size_t)frl_net_widest(n));
        plan->scratch = take(&at, r * (size_t)frl_net_widest(n));
        plan->d_out = take(&at, r * (size_t)n->out_w);
        plan->d_value = take(&at, r);
        if (n->trunk)
            plan->dh = take(&at, r * (size_t)frl_mlp_out(n->trunk));
    }
    plan->floats = at;
}

void frl_net_dueling_combine(int32_t rows, int32_t n, float *a, const float *v)
{
    for (int32_t r = 0; r < rows; r++) {
        float *q = a + (size_t)r * (size_t)n;
        double mean = 0;
        for (int32_t j = 0; j < n; j++)
            mean += q[j];
        float shift = v[r] - (float)(mean / n);
        for (int32_t j = 0; j < n; j++)
            q[j] += shift;
    }
}
