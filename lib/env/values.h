/* Checks of the values that cross into the library from environments and callers:
 * non-finite floats, indices of discrete observation spaces, and a value as text for an
 * error message. Used by the vec env, the policy and the trainer (values.c). */
#ifndef FRL_ENV_VALUES_H
#define FRL_ENV_VALUES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Index of the first non-finite value of x[0..n), or -1. Bit tests, so the check
 * survives any floating-point optimisation flags. */
int64_t frl_find_nonfinite(const float *x, int64_t n);

/* The same over a column range of rows: in each of rows rows of row_w floats, the
 * values [at, at + w) (a mixed observation's vector part). Returns the first bad one's
 * index in the whole array (row * row_w + column), or -1. */
int64_t frl_find_nonfinite_cols(const float *x, int64_t rows, int64_t row_w, int64_t at,
                                int64_t w);

/* A discrete(n) observation is one float holding its index, so n is at most 2^24:
 * every integer up to 2^24 is exact in a float32, none is lost or merged in transit. */
enum { FRL_DISCRETE_OBS_MAX = 1 << 24 };

/* The index x names in a discrete(n) observation space, or -1 when x is not an integer
 * in [0, n). The exponent test rejects NaN and infinities before any comparison, so no
 * floating-point flag lets one through, and the cast runs only inside [0, n), where it
 * is exact and defined. */
static inline int32_t frl_discrete_obs_index(float x, int64_t n)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u || !(x >= 0.0f && x < (float)n))
        return -1;
    int32_t i = (int32_t)x;
    return (float)i == x ? i : -1;
}

/* Index of the first value of x[0..count) that is not an index of discrete(n), or -1. */
int64_t frl_find_bad_index(const float *x, int64_t count, int64_t n);

/* The value as text for an error message ("NaN", "inf", "-inf" or %.9g). */
void frl_describe_value(float v, char *buf, size_t size);

#endif
