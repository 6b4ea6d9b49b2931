/* V-trace (Espeholt et al., 2018, "IMPALA"): value targets and policy-gradient
 * advantages corrected for the gap between the behaviour policy mu that acted and the
 * policy pi being trained, over one env's column of a [T x B] ring slot. */
#ifndef FRL_ALGO_VTRACE_H
#define FRL_ALGO_VTRACE_H

#include <stdint.h>

typedef struct frl_vtrace_params {
    double gamma;   /* discount */
    double lambda;  /* trace decay: c_t = lambda * min(c_bar, pi/mu) */
    double rho_bar; /* truncation of the TD weights rho_t = min(rho_bar, pi/mu) */
    double c_bar;   /* truncation of the traces */
} frl_vtrace_params;

/* One env's column: element t of each array is at [t * stride]. log_ratio is
 * log pi(a_t|x_t) - log mu(a_t|x_t); value is V(x_t) under the learner's critic; bootstrap
 * is V of the observation after the column's last step.
 *
 * With next-step autoreset, a row whose reset flag is set is not a transition: it is
 * masked (valid 0, target and advantage 0), and its value is that of the final
 * observation of the episode before, which a truncated episode bootstraps from (a
 * terminated one bootstraps from 0). Traces never cross an episode's end.
 *
 * Outputs: target[t] = v_t, the V-trace value target, and adv[t] =
 * rho_t (r_t + gamma v_{t+1} - V(x_t)), the advantage of the policy gradient; the sums
 * run in double, backwards in time. On-policy (log_ratio 0, rho_bar and c_bar >= 1),
 * v_t - V(x_t) is exactly GAE(lambda)'s advantage. */
void frl_vtrace_column(int32_t T, int64_t stride, const float *reward, const float *value,
                       const float *log_ratio, const uint8_t *terminated,
                       const uint8_t *truncated, const uint8_t *reset, float bootstrap,
                       const frl_vtrace_params *p, float *target, float *adv, uint8_t *valid);

#endif
