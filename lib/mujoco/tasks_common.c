/* Helpers shared by the MuJoCo tasks (task.h). */
#include <math.h>

#include "mujoco/task.h"

/* NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src) for the sizes the
 * tasks use (n <= 128): a plain loop below 8 values, else eight strided accumulators
 * combined as a tree, then the remainder. One body for float64 and float32, as NumPy's
 * template has: the accumulators are of the array's type. */
#define PAIRWISE_SUM(name, T)                                                              \
    static T name(const T *a, int n)                                                       \
    {                                                                                      \
        T res = 0;                                                                         \
        if (n < 8) {                                                                       \
            for (int i = 0; i < n; i++)                                                    \
                res += a[i];                                                               \
            return res;                                                                    \
        }                                                                                  \
        T r[8];                                                                            \
        for (int j = 0; j < 8; j++)                                                        \
            r[j] = a[j];                                                                   \
        int i = 8;                                                                         \
        for (; i < n - (n % 8); i += 8)                                                    \
            for (int j = 0; j < 8; j++)                                                    \
                r[j] += a[i + j];                                                          \
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));           \
        for (; i < n; i++)                                                                 \
            res += a[i];                                                                   \
        return res;                                                                        \
    }
PAIRWISE_SUM(pairwise_f64, double)
PAIRWISE_SUM(pairwise_f32, float)

/* NumPy 2.4's add.reduce of a contiguous array is the pairwise sum of all of it (checked
 * against np.sum for the sizes used, 2 to 84 values). */
double mjt_numpy_sum(const double *x, int n)
{
    return pairwise_f64(x, n);
}

float mjt_ctrl_cost(const float *a, int n, float weight)
{
    float sq[32];
    n = n < 32 ? n : 32; /* the tasks have at most 8 actuators */
    for (int i = 0; i < n; i++)
        sq[i] = a[i] * a[i];
    return weight * pairwise_f32(sq, n);
}

void mjt_add_uniform(mjtNum *x, const mjtNum *base, int n, double scale, frl_rng *rng)
{
    for (int i = 0; i < n; i++)
        x[i] = (base ? base[i] : 0.0) + frl_rng_uniform_range(rng, -scale, scale);
}

void mjt_add_normal(mjtNum *x, const mjtNum *base, int n, double scale, frl_rng *rng)
{
    for (int i = 0; i < n; i++)
        x[i] = (base ? base[i] : 0.0) + scale * frl_rng_normal(rng);
}

double mjt_clip(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

int mjt_state_finite(const mjModel *m, const mjData *d)
{
    int ok = 1;
    for (int i = 0; i < m->nq; i++)
        ok &= isfinite(d->qpos[i]) != 0;
    for (int i = 0; i < m->nv; i++)
        ok &= isfinite(d->qvel[i]) != 0;
    return ok;
}

float *mjt_put(float *obs, const mjtNum *x, int n, double limit)
{
    for (int k = 0; k < n; k++)
        obs[k] = (float)(limit > 0 ? mjt_clip(x[k], -limit, limit) : x[k]);
    return obs + n;
}
