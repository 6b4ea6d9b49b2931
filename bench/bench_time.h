/* The clock and the median the C benchmarks time with. Header-only: each bench is one
 * program. */
#ifndef FRL_BENCH_TIME_H
#define FRL_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

/* The monotonic clock in seconds. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v): the upper middle for an even n. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

#endif
