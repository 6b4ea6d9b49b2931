/* Parameter initialisation: orthogonal weights with a gain, zero biases. */
#ifndef FRL_NN_INIT_H
#define FRL_NN_INIT_H

#include "core/rng.h"
#include "nn/mlp.h"

/* Fill wt[in x out] with an orthogonal matrix times gain (Saxe et al., 2014): the
 * [out x in] weight has orthonormal rows or columns, whichever are fewer. work holds
 * max(in, out) * min(in, out) doubles. Biases are left as they are (zero). */
void frl_init_orthogonal(float *wt, int32_t in, int32_t out, double gain, frl_rng *r,
                         double *work);

/* Doubles of work frl_mlp_init_params needs for m: its largest layer's in x out (at
 * least 1). Not the widest layer squared: a wide input (a one-hot row of 10^5 states,
 * an encoder's 50,176 features) times a 64-unit layer needs megabytes, its square tens
 * of gigabytes, which failed policies that fit in memory many times over. */
size_t frl_mlp_init_work(const frl_mlp *m);

/* Orthogonal init of every layer of m: hidden layers with hidden_gain, the last one
 * with out_gain (a trunk uses hidden_gain throughout). work: frl_mlp_init_work
 * doubles. */
void frl_mlp_init_params(const frl_mlp *m, float *params, double hidden_gain, double out_gain,
                         frl_rng *r, double *work);

/* PyTorch's default for nn.Linear: weights and biases uniform in +-1/sqrt(fan_in), for
 * every layer of m (what SB3's and CleanRL's DQN networks start from). */
void frl_mlp_init_uniform(const frl_mlp *m, float *params, frl_rng *r);

#endif
