/* x^a for a positive float x, in double, without a libm call: the prioritised replay's
 * priority^alpha for a batch of rows. libm's exp(a log x) costs about 12 ns a row as two
 * calls; this is a few multiply-adds with no branch and no table, so a loop of it
 * vectorises (two lanes in SSE2: about 15% faster than the calls), and every build, CPU
 * and libm gives the same bits (only +, -, *, / and bit moves, no fused multiply-add:
 * the library is built with -ffp-contract=off).
 *
 * log: x = 2^k m with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m-1)/(m+1),
 * |s| <= 0.1716, as the series 2s (1 + s^2/3 + s^4/5 + ...) to s^24 (the next term is
 * below 1e-17 relative). exp: y = j ln2 + r with |r| <= ln2/2, e^r by its Taylor series
 * to r^13 (the next term is below 5e-18), scaled by 2^j through the exponent bits.
 * ln2 is split in two parts so that k ln2 and j ln2 lose nothing.
 *
 * log and exp are each within an ulp of libm's; the product a log x, rounded, is what
 * limits x^a: up to 2e-14 relative from pow at the ends of the float range, as for
 * libm's exp(a log x) (tests/test_replay.c checks 5e-14). For x a finite float > 0 (a
 * double from one: always normal) and 0 <= a <= 1, so the result's binary exponent
 * stays within [-150, 128]. */
#ifndef FRL_CORE_POW_POS_H
#define FRL_CORE_POW_POS_H

#include <stdint.h>
#include <string.h>

static inline uint64_t frl_pp_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double frl_pp_double(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define FRL_PP_LN2_HI 6.93147180369123816490e-01 /* ln2's first 32 bits: k ln2_hi exact */
#define FRL_PP_LN2_LO 1.90821492927058770002e-10

/* log x for x a normal double > 0. */
static inline double frl_pp_log(double x)
{
    /* k and m from the bits: adding 1's bits less sqrt(1/2)'s moves the exponent's step
     * from m = 2 to m = sqrt(2) */
    const uint64_t t = frl_pp_bits(x) + (0x3ff0000000000000ULL - 0x3fe6a09e667f3bcdULL);
    const double m = frl_pp_double((t & 0x000fffffffffffffULL) + 0x3fe6a09e667f3bcdULL);
    /* k as a double without an int64 conversion (none in SSE2): 2^52 + field - 2^52 */
    const double k = (frl_pp_double(0x4330000000000000ULL | (t >> 52)) - 0x1p52) - 1023.0;
    const double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = 1.0 / 25;
    p = p * z + 1.0 / 23;
    p = p * z + 1.0 / 21;
    p = p * z + 1.0 / 19;
    p = p * z + 1.0 / 17;
    p = p * z + 1.0 / 15;
    p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11;
    p = p * z + 1.0 / 9;
    p = p * z + 1.0 / 7;
    p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;
    const double lm = 2.0 * s + 2.0 * s * (z * p);
    return (k * FRL_PP_LN2_HI + lm) + k * FRL_PP_LN2_LO;
}

/* e^y for y in [-104, 89]. */
static inline double frl_pp_exp(double y)
{
    /* j = round(y / ln2) in the low bits of a sum with 1.5 * 2^52 */
    const double big = y * 1.44269504088896338700 + 0x1.8p52, j = big - 0x1.8p52;
    const double r = (y - j * FRL_PP_LN2_HI) - j * FRL_PP_LN2_LO;
    double p = 1.0 / 6227020800.0; /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    const double er = 1.0 + (r + r * (r * p));
    /* 2^j: j + 1023 into the exponent field (big's low bits hold j, two's complement) */
    return er * frl_pp_double((frl_pp_bits(big) + 1023) << 52);
}

static inline double frl_pow_pos(double x, double a)
{
    return frl_pp_exp(a * frl_pp_log(x));
}

/* The same in float for x^a with 1 <= x <= 2^125 and -1 <= a <= 0 (the replay's
 * importance weights (p / p_min)^-beta): series to s^9 and r^6, never below 2^-125. As
 * for expf(a logf x), the rounding of a log x in float limits it: a few ulps for small
 * x, 1e-5 relative at x = 2^125 (tests/test_replay.c: within twice expf(a logf x)'s).
 * No clamp inside: gcc would keep a clamp as a branch, and the loop would not vectorise
 * (four lanes in SSE2: 40% of the time of expf(a logf x)). */
static inline uint32_t frl_ppf_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float frl_ppf_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline float frl_ppf_log(float x)
{
    const uint32_t t = frl_ppf_bits(x) + (0x3f800000u - 0x3f3504f3u);
    const float m = frl_ppf_float((t & 0x007fffffu) + 0x3f3504f3u);
    const float k = (float)((int32_t)(t >> 23) - 127);
    const float s = (m - 1.0f) / (m + 1.0f), z = s * s;
    float p = 1.0f / 9;
    p = p * z + 1.0f / 7;
    p = p * z + 1.0f / 5;
    p = p * z + 1.0f / 3;
    const float lm = 2.0f * s + 2.0f * s * (z * p);
    return (k * 0.693359375f + lm) + k * -2.12194440e-4f;
}

static inline float frl_ppf_exp(float y)
{
    const float j = (float)(int32_t)(y * 1.44269504f - 0.5f);
    const float r = (y - j * 0.693359375f) - j * -2.12194440e-4f;
    float p = 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    const float er = 1.0f + (r + r * (r * p));
    return er * frl_ppf_float((uint32_t)((int32_t)j + 127) << 23);
}

static inline float frl_powf_pos(float x, float a)
{
    return frl_ppf_exp(a * frl_ppf_log(x));
}

#endif
