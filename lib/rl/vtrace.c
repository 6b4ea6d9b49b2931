/* V-trace targets and advantages, one env's column at a time (see vtrace.h). */
#include <math.h>

#include "rl/vtrace.h"

/* min(bar, exp(log_ratio)), computed without overflow for large ratios. */
static double truncated_ratio(double log_ratio, double bar)
{
    return log_ratio >= log(bar) ? bar : exp(log_ratio);
}

void frl_vtrace_column(int32_t T, int64_t stride, const float *reward, const float *value,
                       const float *log_ratio, const uint8_t *terminated,
                       const uint8_t *truncated, const uint8_t *reset, float bootstrap,
                       const frl_vtrace_params *p, float *target, float *adv, uint8_t *valid)
{
    /* Running state at t + 1: V(x_{t+1}), v_{t+1}, and v_{t+1} - V(x_{t+1}). */
    double next_v = bootstrap, next_target = bootstrap, next_acc = 0;
    for (int32_t t = T - 1; t >= 0; t--) {
        int64_t i = (int64_t)t * stride;
        valid[i] = !reset[i];
        if (reset[i]) {
            /* The value of the final observation: what a truncation bootstraps from. */
            target[i] = adv[i] = 0;
            next_v = next_target = value[i];
            next_acc = 0;
            continue;
        }
        double rho = truncated_ratio(log_ratio[i], p->rho_bar);
        double c = p->lambda * truncated_ratio(log_ratio[i], p->c_bar);
        double cont = (terminated[i] | truncated[i]) ? 0.0 : 1.0; /* the trace goes on */
        double boot_v = terminated[i] ? 0.0 : next_v;
        double boot_target = terminated[i] ? 0.0 : next_target;
        double v = value[i];
        double acc = rho * (reward[i] + p->gamma * boot_v - v) + p->gamma * c * cont * next_acc;
        target[i] = (float)(v + acc);
        adv[i] = (float)(rho * (reward[i] + p->gamma * boot_target - v));
        next_v = v;
        next_target = v + acc;
        next_acc = acc;
    }
}
