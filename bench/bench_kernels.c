/* bench_kernels: the nn kernel tables against OpenBLAS sgemm on the networks' shapes.
 *
 *   bench_kernels [M ...]      (default M = 64 256 2048)
 *
 * For each layer shape (k, n) and batch m, each operation is timed for every table
 * this CPU runs and for cblas_sgemm doing the same product, in the same run: GFLOP/s
 * (2 m n k flops per call) as the median of 9 samples of at least 2 ms of thread CPU
 * time each, samples of the implementations interleaved, and the ratio to sgemm.
 * fwd runs without bias and activation, as sgemm; "fwd+b+tanh" adds both (sgemm still
 * does the bare product). bwd_weight accumulates (beta = 1 in sgemm)
 * without db. One thread: the OpenBLAS linked here is the serial build. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tools/openblas_core.h"
#include "bench_args.h"
#include "nn/kernels.h"

#ifndef OPENBLAS_VERSION /* a cblas.h other than OpenBLAS's */
#define OPENBLAS_VERSION " unknown BLAS"
#endif

enum { SAMPLES = 9, MAX_TABLES = 8 };
static const double SAMPLE_S = 2e-3;

typedef enum { OP_FWD, OP_FWD_TANH, OP_BWD_INPUT, OP_BWD_WEIGHT, OP_COUNT } op_kind;
static const char *const op_names[] = {"fwd", "fwd+b+tanh", "bwd_input", "bwd_weight"};

typedef struct problem {
    int32_t m, n, k;
    float *x, *wt, *b, *y, *dy, *dx, *dwt;
} problem;

/* One call of `op`: table == NULL means cblas_sgemm. */
static void run_once(const problem *p, const frl_kernels *t, op_kind op)
{
    const int32_t m = p->m, n = p->n, k = p->k;
    switch (op) {
    case OP_FWD:
    case OP_FWD_TANH:
        if (t)
            t->linear_fwd(m, n, k, p->x, p->wt, op == OP_FWD ? NULL : p->b, p->y,
                          op == OP_FWD ? FRL_NN_LINEAR : FRL_NN_TANH);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, p->x, k,
                        p->wt, n, 0.0f, p->y, n);
        break;
    case OP_BWD_INPUT:
        if (t)
            t->linear_bwd_input(m, n, k, p->dy, p->wt, p->dx);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, n, 1.0f, p->dy, n,
                        p->wt, n, 0.0f, p->dx, k);
        break;
    case OP_BWD_WEIGHT:
    default:
        if (t)
            t->linear_bwd_weight(m, n, k, p->x, p->dy, p->dwt, NULL, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, m, 1.0f, p->x, k,
                        p->dy, n, 1.0f, p->dwt, n);
        break;
    }
}

/* Thread CPU time: the machine may be shared, and time spent descheduled is not ours. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sample(const problem *p, const frl_kernels *t, op_kind op, long reps)
{
    const double t0 = now_s();
    for (long r = 0; r < reps; r++)
        run_once(p, t, op);
    return (now_s() - t0) / (double)reps;
}

/* Median seconds per call of each implementation (impl[i] NULL: sgemm). Samples of
 * the implementations alternate, so a noisy moment hits them all alike. */
static void time_op(const problem *p, op_kind op, const frl_kernels *const *impl, int n,
                    double *sec)
{
    long reps[MAX_TABLES + 1];
    double s[MAX_TABLES + 1][SAMPLES];
    for (int i = 0; i < n; i++) {
        run_once(p, impl[i], op); /* warm caches and lazy initialisation */
        reps[i] = 1;
        while (sample(p, impl[i], op, reps[i]) * (double)reps[i] < SAMPLE_S)
            reps[i] *= 2;
    }
    for (int k = 0; k < SAMPLES; k++)
        for (int i = 0; i < n; i++)
            s[i][k] = sample(p, impl[i], op, reps[i]);
    for (int i = 0; i < n; i++) {
        qsort(s[i], SAMPLES, sizeof s[i][0], cmp_double);
        sec[i] = s[i][SAMPLES / 2];
    }
}

static float *rand_buf(size_t n, uint32_t *seed)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "bench_kernels: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = (float)(*seed >> 8) * 0x1.0p-23f - 1.0f; /* [-1, 1) */
    }
    return p;
}

static void bench_shape(int32_t m, int32_t k, int32_t n, const frl_kernels *const *tabs,
                        int ntabs)
{
    uint32_t seed = 1;
    problem p = {m, n, k, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    p.x = rand_buf((size_t)m * k, &seed);
    p.wt = rand_buf((size_t)k * n, &seed);
    p.b = rand_buf((size_t)n, &seed);
    p.y = rand_buf((size_t)m * n, &seed);
    p.dy = rand_buf((size_t)m * n, &seed);
    p.dx = rand_buf((size_t)m * k, &seed);
    p.dwt = rand_buf((size_t)k * n, &seed);
    const double flops = 2.0 * m * n * k;
    const frl_kernels *impl[MAX_TABLES + 1] = {NULL}; /* sgemm first */
    for (int i = 0; i < ntabs; i++)
        impl[i + 1] = tabs[i];
    for (int op = 0; op < OP_COUNT; op++) {
        double sec[MAX_TABLES + 1];
        time_op(&p, (op_kind)op, impl, ntabs + 1, sec);
        const double gemm = flops / sec[0] * 1e-9;
        printf("%-11s %5d %3d %3d %8.2f", op_names[op], m, k, n, gemm);
        for (int i = 1; i <= ntabs; i++) {
            const double g = flops / sec[i] * 1e-9;
            printf("   %8.2f (%5.2fx)", g, g / gemm);
        }
        printf("\n");
        fflush(stdout);
    }
    free(p.x), free(p.wt), free(p.b), free(p.y), free(p.dy), free(p.dx), free(p.dwt);
}

int main(int argc, char **argv)
{
    static const int32_t shapes[][2] = {{4, 64}, {64, 64}, {64, 2}, {64, 1},
                                        {3, 64}, {6, 64}, {64, 3}, {3, 4}, {6, 4}};
    bench_args_init(argc, argv, "bench_kernels",
                    "usage: bench_kernels [M ...]  (default 64 256 2048; at most 32, each "
                    "1..1000000)\n");
    int32_t ms[32] = {64, 256, 2048};
    int nm = argc > 1 ? 0 : 3;
    for (int i = 1; i < argc; i++) {
        if (nm == 32)
            bench_refuse("at most 32 batches");
        ms[nm++] = (int32_t)bench_int("M", argv[i], 1, 1000000);
    }
    frl_openblas_check_core(argv); /* after the usage: --help runs nothing */
    const frl_kernels *tabs[MAX_TABLES];
    int ntabs = 0;
    const frl_kernels *const *all = frl_kernels_all();
    for (int i = 0; all[i] && ntabs < MAX_TABLES; i++)
        if (frl_kernels_supported(all[i]))
            tabs[ntabs++] = all[i];
    printf("frl_kernels_get: %s;  sgemm:%s(core %s);  GFLOP/s, median of %d, (x) = vs "
           "sgemm\n", frl_kernels_get()->name, OPENBLAS_VERSION, frl_openblas_core(), SAMPLES);
    printf("%-11s %5s %3s %3s %8s", "op", "m", "k", "n", "sgemm");
    for (int i = 0; i < ntabs; i++)
        printf("   %8s %8s", tabs[i]->name, "");
    printf("\n");
    for (int mi = 0; mi < nm; mi++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            bench_shape(ms[mi], shapes[s][0], shapes[s][1], tabs, ntabs);
    return 0;
}
