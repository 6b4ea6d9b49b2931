/* V-trace targets and advantages, one env's column at a time (see vtrace.h). The
 * arithmetic is the device learner's own (lib/nn/dev_math.h), so the two cannot
 * drift apart. */
#include "algo/vtrace.h"
#include "nn/dev_math.h"

void frl_vtrace_column(int32_t T, int64_t stride, const float *reward, const float *value,
                       const float *log_ratio, const uint8_t *terminated,
                       const uint8_t *truncated, const uint8_t *reset, float bootstrap,
                       const frl_vtrace_params *p, float *target, float *adv, uint8_t *valid)
{
    const frl_dm_adv_params dp = {p->gamma, p->lambda, p->rho_bar, p->c_bar, 1, 0};
    /* Column 0 of pointers already at the env's column: element t at t * stride. */
    frl_dm_vtrace_column(T, stride, 0, reward, value, log_ratio, terminated, truncated, reset,
                         bootstrap, &dp, adv, target, valid);
}
