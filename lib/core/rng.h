/* Counter-based random streams.
 *
 * Each stream is a (key, counter) pair; a draw is a pure function of both, so a
 * stream can be advanced from any thread and results never depend on which
 * thread stepped which environment. The mixer is SplitMix64's finaliser (Steele,
 * Lea and Flood, 2014), applied to a Weyl sequence offset by the key. */
#ifndef FRL_CORE_RNG_H
#define FRL_CORE_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct frl_rng {
    uint64_t key;
    uint64_t counter;
} frl_rng;

static inline uint64_t frl_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The stream for (seed, index): keys of nearby indices are decorrelated by two
 * rounds of mixing, so streams 0, 1, 2... of one seed look independent. */
static inline frl_rng frl_rng_stream(uint64_t seed, uint64_t index)
{
    frl_rng r;
    r.key = frl_mix64(frl_mix64(seed + 0x632be59bd9b4e019ULL) ^ (index * 0x9e3779b97f4a7c15ULL + 1));
    r.counter = 0;
    return r;
}

static inline uint64_t frl_rng_next(frl_rng *r)
{
    uint64_t x = r->key + r->counter * 0x9e3779b97f4a7c15ULL;
    r->counter++;
    return frl_mix64(x);
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double frl_rng_uniform(frl_rng *r)
{
    return (double)(frl_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform double in [low, high), computed as numpy does: low + (high - low) * u. */
static inline double frl_rng_uniform_range(frl_rng *r, double low, double high)
{
    return low + (high - low) * frl_rng_uniform(r);
}

/* perm = a uniformly random permutation of 0 .. n-1 (Fisher-Yates from the top). */
static inline void frl_rng_permutation(frl_rng *r, int32_t *perm, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        perm[i] = i;
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(frl_rng_uniform(r) * (double)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* A standard normal draw (Box-Muller on two uniforms). */
static inline double frl_rng_normal(frl_rng *r)
{
    double u1 = 1.0 - frl_rng_uniform(r); /* (0, 1]: log(0) is never taken */
    double u2 = frl_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
