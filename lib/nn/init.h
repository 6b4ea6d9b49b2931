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

/* Orthogonal init of every layer of m: hidden layers with hidden_gain, the last one
 * with out_gain (a trunk uses hidden_gain throughout). */
void frl_mlp_init_params(const frl_mlp *m, float *params, double hidden_gain, double out_gain,
                         frl_rng *r, double *work);

/* PyTorch's default for nn.Linear: weights and biases uniform in +-1/sqrt(fan_in), for
 * every layer of m (what SB3's and CleanRL's DQN networks start from). */
void frl_mlp_init_uniform(const frl_mlp *m, float *params, frl_rng *r);

#endif
