/* Checks of values: see values.h. */
#include <stdio.h>
#include <string.h>

#include "env/values.h"

int64_t frl_find_nonfinite_cols(const float *x, int64_t rows, int64_t row_w, int64_t at,
                                int64_t w)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t k = frl_find_nonfinite(x + r * row_w + at, w);
        if (k >= 0)
            return r * row_w + at + k;
    }
    return -1;
}

int64_t frl_find_nonfinite(const float *x, int64_t n)
{
    /* A float is NaN or infinite exactly when its exponent bits are all ones. The
     * branch-free OR over the array vectorises; the exact index is searched only
     * when something was found. */
    uint32_t any = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        any |= (uint32_t)((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (!any)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        if ((bits & 0x7f800000u) == 0x7f800000u)
            return i;
    }
    return -1;
}

int64_t frl_find_bad_index(const float *x, int64_t count, int64_t n)
{
    for (int64_t i = 0; i < count; i++)
        if (frl_discrete_obs_index(x[i], n) < 0)
            return i;
    return -1;
}

void frl_describe_value(float v, char *buf, size_t size)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u)
        snprintf(buf, size, "%s", (bits & 0x007fffffu) ? "NaN" : (bits >> 31) ? "-inf" : "inf");
    else
        snprintf(buf, size, "%.9g", (double)v);
}
