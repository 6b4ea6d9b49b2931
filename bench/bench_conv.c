/* bench_conv: the convolutions of lib/nn/conv.c against their own GEMM floor, in one run.
 *
 *   bench_conv [BATCH ...]      (default 1 32 256)
 *
 * Layers: Nature-DQN's CNN on 84x84x4 frames (32 8x8/4, 64 4x4/2, 64 3x3/1, ReLU) and
 * Sample Factory's convnet_simple on 128x72x3 (32 8x8/4, 64 4x4/2, 128 3x3/2). For each
 * layer and batch: the forward pass and the backward pass (weight, bias and input
 * gradients) through the fastest kernel table, in GFLOP/s (2 x rows x k x n per GEMM:
 * one forward, two backward), and the floor: the same GEMMs alone, through the same
 * table (linear_fwd, linear_bwd_weight, linear_bwd_input on a ready patch matrix), and
 * through OpenBLAS's sgemm. Below 100%, conv / floor is what gathering the patches,
 * col2im and the activation cost; above it, the table's direct kernels (conv_fwd,
 * conv_bwd_weight, conv_bwd_input read the image where it lies and skip the patch
 * matrices) beat the GEMMs on a patch matrix, which at batch 256 streams from memory.
 * Median of 5 samples of at least 20 ms of thread CPU time, one thread. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tools/openblas_core.h"
#include "bench_args.h"
#include "core/alloc.h"
#include "nn/conv.h"

#ifndef OPENBLAS_VERSION /* a cblas.h other than OpenBLAS's */
#define OPENBLAS_VERSION " unknown BLAS"
#endif

typedef struct layer {
    const char *net;
    int32_t h, w, c, oc, k, stride;
} layer;

static const layer layers[] = {
    {"nature", 84, 84, 4, 32, 8, 4},  {"nature", 20, 20, 32, 64, 4, 2},
    {"nature", 9, 9, 64, 64, 3, 1},   {"simple", 72, 128, 3, 32, 8, 4},
    {"simple", 17, 31, 32, 64, 4, 2}, {"simple", 7, 14, 64, 128, 3, 2},
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct run {
    const frl_conv2d *c;
    const frl_kernels *k;
    int32_t batch;
    float *p, *g, *x, *y, *dy, *dx, *work, *patches;
} run;

enum { CONV_FWD, CONV_BWD, GEMM_FWD, GEMM_BWD, BLAS_FWD, BLAS_BWD, KINDS };

static void once(const run *r, int kind)
{
    const frl_conv2d *c = r->c;
    int32_t rows = r->batch * c->out_h * c->out_w;
    switch (kind) {
    case CONV_FWD:
        frl_conv2d_forward(c, r->k, r->p, r->batch, r->x, r->y, r->work);
        break;
    case CONV_BWD:
        frl_conv2d_backward(c, r->k, r->p, r->g, 0, r->batch, r->x, r->y, r->dy, r->dx,
                            r->work);
        break;
    case GEMM_FWD:
        r->k->linear_fwd(rows, c->out_c, c->patch, r->patches, r->p + c->off_w, NULL, r->y,
                         FRL_NN_LINEAR);
        break;
    case GEMM_BWD:
        r->k->linear_bwd_weight(rows, c->out_c, c->patch, r->patches, r->dy, r->g + c->off_w,
                                NULL, 0);
        r->k->linear_bwd_input(rows, c->out_c, c->patch, r->dy, r->p + c->off_w, r->work);
        break;
    case BLAS_FWD:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, c->out_c, c->patch, 1.0f,
                    r->patches, c->patch, r->p + c->off_w, c->out_c, 0.0f, r->y, c->out_c);
        break;
    default:
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c->patch, c->out_c, rows, 1.0f,
                    r->patches, c->patch, r->dy, c->out_c, 0.0f, r->g + c->off_w, c->out_c);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, c->patch, c->out_c, 1.0f,
                    r->dy, c->out_c, r->p + c->off_w, c->out_c, 0.0f, r->work, c->patch);
        break;
    }
}

/* Seconds per call: the median of 5 samples of >= 20 ms each. */
static double seconds(const run *r, int kind)
{
    double s[5];
    for (int i = 0; i < 5; i++) {
        long n = 0;
        double t0 = now_s(), t;
        do {
            once(r, kind);
            n++;
            t = now_s();
        } while (t - t0 < 0.02);
        s[i] = (t - t0) / (double)n;
    }
    qsort(s, 5, sizeof s[0], cmp);
    return s[2];
}

/* The library's default allocator, as its workspaces get theirs (blocks of 4 MiB and
 * more on 2 MiB pages, core/alloc.c): a batch's images and patches read with 4 KiB
 * pages measured 5-19% slower. */
static frl_allocator bench_alloc;

static void release(float *p)
{
    frl_free(&bench_alloc, p);
}

static float *buf(size_t n)
{
    if (!bench_alloc.alloc)
        frl_allocator_default(&bench_alloc);
    float *p = frl_alloc(&bench_alloc, (n ? n : 1) * sizeof(float), 64);
    if (!p) {
        fprintf(stderr, "bench_conv: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((double)(i * 2654435761u % 1000) / 1000.0 - 0.5);
    return p;
}

static void bench_layer(const layer *l, int32_t batch)
{
    frl_conv2d c;
    if (frl_conv2d_init(&c, l->h, l->w, l->c, l->oc, l->k, l->k, l->stride, 0, FRL_NN_RELU, 0))
        return;
    size_t in = frl_conv2d_in_size(&c) * (size_t)batch, out = frl_conv2d_out_size(&c) * (size_t)batch;
    size_t work = frl_conv2d_work_floats(&c, batch);
    run r = {&c, frl_kernels_get(), batch, buf(c.num_params), buf(c.num_params), buf(in),
             buf(out), buf(out), buf(in), buf(work), buf(work)};
    double t[KINDS];
    for (int kind = 0; kind < KINDS; kind++)
        t[kind] = seconds(&r, kind);
    double flop = 2.0 * (double)batch * c.out_h * c.out_w * c.patch * c.out_c;
    printf("%-6s %3dx%-3dx%-2d %3d %dx%d/%d  batch %3d  fwd %6.1f GF/s (%3.0f%% of gemm %6.1f, "
           "sgemm %6.1f)  bwd %6.1f GF/s (%3.0f%% of gemm %6.1f, sgemm %6.1f)\n",
           l->net, l->h, l->w, l->c, l->oc, l->k, l->k, l->stride, batch,
           1e-9 * flop / t[CONV_FWD], 100 * t[GEMM_FWD] / t[CONV_FWD], 1e-9 * flop / t[GEMM_FWD],
           1e-9 * flop / t[BLAS_FWD], 2e-9 * flop / t[CONV_BWD], 100 * t[GEMM_BWD] / t[CONV_BWD],
           2e-9 * flop / t[GEMM_BWD], 2e-9 * flop / t[BLAS_BWD]);
    release(r.p), release(r.g), release(r.x), release(r.y), release(r.dy), release(r.dx);
    release(r.work), release(r.patches);
}

enum { MAX_BATCHES = 8 };

int main(int argc, char **argv)
{
    bench_args_init(argc, argv, "bench_conv",
                    "usage: bench_conv [BATCH ...]  (default 1 32 256; at most 8, each 1..4096)\n");
    int32_t batches[MAX_BATCHES] = {1, 32, 256};
    int nb = argc > 1 ? 0 : 3;
    for (int i = 1; i < argc; i++) {
        if (nb == MAX_BATCHES)
            bench_refuse("at most 8 batches");
        batches[nb++] = (int32_t)bench_int("BATCH", argv[i], 1, 4096);
    }
    frl_openblas_check_core(argv); /* after the usage: --help runs nothing */
    printf("bench_conv: kernel table %s, OpenBLAS%s(core %s), one thread\n",
           frl_kernels_get()->name, OPENBLAS_VERSION, frl_openblas_core());
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        for (int b = 0; b < nb; b++)
            bench_layer(&layers[i], batches[b]);
    return 0;
}
