/* R2D2's value rescaling (lib/algo/r2d2.c), for its tests: h(x) = sign(x)(sqrt(|x| + 1)
 * - 1) + eps x with eps = 1e-3, and its inverse (Pohlen et al., 2018). */
#ifndef FRL_ALGO_R2D2_H
#define FRL_ALGO_R2D2_H

#include <stdint.h>

double frl_r2d2_rescale(double x);
double frl_r2d2_unrescale(double x);

/* Where the sequence passes zero a column's recurrent state, from a span's autoreset
 * flags reset [rows x cols]. An autoreset row holds the ended episode's final
 * observation (its step only resets the env), so acting zeroed the state before the row
 * after it: starts[t] = reset[t - 1]; row 0 starts from the stored state, which acting
 * had already zeroed where its episode began (as PPO's recurrent learner does). */
void frl_r2d2_starts(const uint8_t *reset, int32_t rows, int32_t cols, uint8_t *starts);

#endif
