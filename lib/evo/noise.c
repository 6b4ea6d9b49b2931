/* Noise and ranks shared by ES and GA. */
#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "evo/evo.h"

/* Box-Muller with both of its outputs: one pair of uniforms gives two normals. */
void frl_evo_normals(uint64_t seed, uint64_t stream, float *out, int64_t n, double scale,
                     int add)
{
    frl_rng r = frl_rng_stream(seed, stream);
    for (int64_t j = 0; j < n; j += 2) {
        double u1 = 1.0 - frl_rng_uniform(&r), u2 = frl_rng_uniform(&r);
        double rad = sqrt(-2.0 * log(u1)), ang = 6.283185307179586 * u2;
        float z[2] = {(float)(scale * rad * cos(ang)), (float)(scale * rad * sin(ang))};
        for (int64_t k = 0; k < 2 && j + k < n; k++)
            out[j + k] = add ? out[j + k] + z[k] : z[k];
    }
}

/* qsort is not stable: ties are broken by index, so the order is a function of the
 * fitnesses alone. */
static int by_fitness_desc(const void *a, const void *b)
{
    const frl_evo_rank *x = a, *y = b;
    if (x->fitness != y->fitness)
        return x->fitness > y->fitness ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

void frl_evo_sort_desc(const double *fitness, int32_t P, frl_evo_rank *scratch, int32_t *order)
{
    for (int32_t i = 0; i < P; i++)
        scratch[i] = (frl_evo_rank){fitness[i], i};
    qsort(scratch, (size_t)P, sizeof *scratch, by_fitness_desc);
    for (int32_t i = 0; i < P; i++)
        order[i] = scratch[i].index;
}

void frl_evo_centred_ranks(const double *fitness, int32_t P, frl_evo_rank *scratch,
                           int32_t *order, double *weight)
{
    frl_evo_sort_desc(fitness, P, scratch, order);
    /* order[0] is the best: rank P - 1. Members that tie share the mean of their ranks:
     * ranks by index would give a pair whose members tie (or a flat generation) a
     * weight difference of 1 / (P - 1), which Adam turns into a full step along noise. */
    for (int32_t lo = 0, hi; lo < P; lo = hi) {
        for (hi = lo + 1; hi < P && scratch[hi].fitness == scratch[lo].fitness; hi++)
            ;
        double rank = (double)(P - 1) - 0.5 * (double)(lo + hi - 1);
        for (int32_t r = lo; r < hi; r++)
            weight[order[r]] = P > 1 ? rank / (double)(P - 1) - 0.5 : 0.0;
    }
}
