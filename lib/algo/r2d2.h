/* R2D2's value rescaling (lib/algo/r2d2.c), for its tests: h(x) = sign(x)(sqrt(|x| + 1)
 * - 1) + eps x with eps = 1e-3, and its inverse (Pohlen et al., 2018). */
#ifndef FRL_ALGO_R2D2_H
#define FRL_ALGO_R2D2_H

double frl_r2d2_rescale(double x);
double frl_r2d2_unrescale(double x);

#endif
