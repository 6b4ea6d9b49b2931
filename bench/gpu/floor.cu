/* bench_gpu_floor: what a batch-1 inference round trip costs on this GPU at the least,
 * so that the inference benchmarks can print their figures as ratios to it.
 *
 * Each measurement is one "call", timed on its own with CLOCK_MONOTONIC around it,
 * --reps times after a warm-up; reported as median, min and 90th percentile µs:
 *   sync              cudaStreamSynchronize on an idle non-blocking stream
 *   copies            obs (--obs-bytes) pinned host -> device, out (--out-bytes) device ->
 *                     pinned host, synchronise: the copies-plus-synchronise floor of
 *                     batch-1 acting, which no implementation that copies can beat
 *   copies+3 kernels  the same with a naive MLP between the copies (in -> 256 tanh ->
 *                     256 tanh -> out linear, one thread per output, three launches)
 *   graph(c)          copies+3 kernels captured once as a CUDA graph, then replayed
 *   mapped fused      one kernel, all three layers in one block, reading obs from and
 *                     writing out to mapped page-locked host memory, synchronise
 *   launch+sync       one empty kernel and synchronise
 * and the copy bandwidths of a large buffer (--bw-mib): pinned host -> device and device
 * -> pinned host (wall clock per copy, as the benchmarks see it), device -> device
 * (cudaEvent time, counting read + write). The MLP's input and output widths are
 * obs-bytes/4 and out-bytes/4 floats (64 and 8 by default).
 *
 * Before timing, the MLP output of copies+3 kernels, graph(c) and mapped fused is checked
 * against a CPU double-precision forward pass on random inputs; the run fails (exit 1)
 * if the largest difference exceeds 1e-4 relative to 1 + the largest |output| (the rule
 * of bench_gpu_infer). Without a GPU it prints `SKIP: <why>` and exits 0 (1 with
 * FRL_BENCH_REQUIRE_DEVICE=1). Exit 2: bad arguments.
 *
 *   bench_gpu_floor [--reps 2000] [--obs-bytes 256] [--out-bytes 32] [--device 0]
 *                   [--bw-mib 64] [--bw-reps 20] [--csv]
 *
 * --csv: `# ` header lines, then `name,median_us,min_us,p90_us` and one line per
 * measurement (sync, copies, copies_3k, graph_3k, mapped_fused, launch_sync), then
 * `bandwidth,GBps,bytes,median_us` and the lines bw_h2d, bw_d2h, bw_d2d. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    HIDDEN = 256,         /* the hidden layers' width, as bench_gpu_infer's default */
    BLOCK = 256,          /* threads per block of every kernel */
    MAX_IO_BYTES = 16384, /* obs/out at most 4096 floats: the fused kernel's shared memory */
    NLAYERS = 3,
    WARM_MIN = 200,       /* warm-up: at least this many calls ... */
    WARM_MAX = 100000,
};
static const double WARM_S = 0.25; /* ... and this long, so the clocks have risen */
static const double CHECK_TOL = 1e-4;

/* A failed CUDA call ends the run: a floor measured around an error means nothing. */
#define CK(call) ck((call), #call, __FILE__, __LINE__)
/* After every launch: a bad configuration shows up only here. */
#define CK_LAUNCH() CK(cudaGetLastError())

static void ck(cudaError_t e, const char *what, const char *file, int line)
{
    if (e == cudaSuccess)
        return;
    printf("FAIL: %s:%d: %s: %s (%s)\n", file, line, what, cudaGetErrorString(e),
           cudaGetErrorName(e));
    exit(1);
}

typedef struct opts {
    int reps, obs_bytes, out_bytes, csv, device, bw_mib, bw_reps;
} opts;

/* The MLP on the device: per layer, weights input-major (w[i * n_out + j]) so that the
 * threads of a warp, one per output j, read adjacent words; one parameter buffer. */
typedef struct mlp_dev {
    const float *w[NLAYERS], *b[NLAYERS];
    int dims[NLAYERS + 1];
} mlp_dev;

typedef struct floor_ctx {
    cudaStream_t s;
    size_t obs_bytes, out_bytes;
    mlp_dev mlp;
    float *h_params;                 /* host copy of the parameters (for the reference) */
    float *h_obs, *h_out;            /* pinned host (cudaHostAlloc) */
    float *d_obs, *d_h1, *d_h2, *d_out, *d_params;
    float *m_obs, *m_out;            /* mapped pinned host ... */
    float *m_obs_dev, *m_out_dev;    /* ... and the device's pointers to it */
    cudaGraphExec_t graph;
} floor_ctx;

typedef struct stat3 {
    double med, min, p90; /* µs */
} stat3;

/* ---------------------------------------------------------------- kernels */

/* y[j] = act(b[j] + sum_i x[i] w[i][j]) for the outputs j this thread owns. */
__device__ void layer(const float *x, const float *__restrict__ w, const float *__restrict__ b,
                      float *y, int n_in, int n_out, int j0, int stride, int act_tanh)
{
    for (int j = j0; j < n_out; j += stride) {
        float acc = b[j];
        for (int i = 0; i < n_in; i++)
            acc += x[i] * w[(size_t)i * n_out + j];
        y[j] = act_tanh ? tanhf(acc) : acc;
    }
}

/* One layer, one thread per output: the naive three-launch forward of copies+3 kernels. */
__global__ void layer_kernel(const float *x, const float *__restrict__ w,
                             const float *__restrict__ b, float *y, int n_in, int n_out,
                             int act_tanh)
{
    layer(x, w, b, y, n_in, n_out, blockIdx.x * blockDim.x + threadIdx.x, n_out, act_tanh);
}

/* All three layers in one block: obs read from mapped host memory once (into shared
 * memory, not once per thread), the activations in shared memory, the output written
 * straight to mapped host memory. No copies, one launch. */
__global__ void fused_kernel(const float *obs, mlp_dev m, float *out)
{
    extern __shared__ float sh[]; /* x[dims[0]], h1[HIDDEN], h2[HIDDEN] */
    float *x = sh, *h1 = sh + m.dims[0], *h2 = h1 + HIDDEN;
    int t = threadIdx.x, n = blockDim.x;
    for (int i = t; i < m.dims[0]; i += n)
        x[i] = obs[i];
    __syncthreads();
    layer(x, m.w[0], m.b[0], h1, m.dims[0], m.dims[1], t, n, 1);
    __syncthreads();
    layer(h1, m.w[1], m.b[1], h2, m.dims[1], m.dims[2], t, n, 1);
    __syncthreads();
    layer(h2, m.w[2], m.b[2], out, m.dims[2], m.dims[3], t, n, 0);
}

__global__ void empty_kernel(void) {}

/* ---------------------------------------------------------------- the calls */

static int grid_for(int n) { return (n + BLOCK - 1) / BLOCK; }

static void enqueue_obs_in(floor_ctx *c)
{
    CK(cudaMemcpyAsync(c->d_obs, c->h_obs, c->obs_bytes, cudaMemcpyHostToDevice, c->s));
}

static void enqueue_out_back(floor_ctx *c)
{
    CK(cudaMemcpyAsync(c->h_out, c->d_out, c->out_bytes, cudaMemcpyDeviceToHost, c->s));
}

static void enqueue_mlp(floor_ctx *c)
{
    const mlp_dev *m = &c->mlp;
    layer_kernel<<<grid_for(m->dims[1]), BLOCK, 0, c->s>>>(c->d_obs, m->w[0], m->b[0], c->d_h1,
                                                          m->dims[0], m->dims[1], 1);
    CK_LAUNCH();
    layer_kernel<<<grid_for(m->dims[2]), BLOCK, 0, c->s>>>(c->d_h1, m->w[1], m->b[1], c->d_h2,
                                                          m->dims[1], m->dims[2], 1);
    CK_LAUNCH();
    layer_kernel<<<grid_for(m->dims[3]), BLOCK, 0, c->s>>>(c->d_h2, m->w[2], m->b[2], c->d_out,
                                                          m->dims[2], m->dims[3], 0);
    CK_LAUNCH();
}

static void call_sync(floor_ctx *c) { CK(cudaStreamSynchronize(c->s)); }

static void call_copies(floor_ctx *c)
{
    enqueue_obs_in(c);
    enqueue_out_back(c);
    CK(cudaStreamSynchronize(c->s));
}

static void call_copies_3k(floor_ctx *c)
{
    enqueue_obs_in(c);
    enqueue_mlp(c);
    enqueue_out_back(c);
    CK(cudaStreamSynchronize(c->s));
}

static void call_graph(floor_ctx *c)
{
    CK(cudaGraphLaunch(c->graph, c->s));
    CK(cudaStreamSynchronize(c->s));
}

static size_t fused_shmem(const floor_ctx *c)
{
    return (size_t)(c->mlp.dims[0] + 2 * HIDDEN) * sizeof(float);
}

static void call_mapped(floor_ctx *c)
{
    fused_kernel<<<1, BLOCK, fused_shmem(c), c->s>>>(c->m_obs_dev, c->mlp, c->m_out_dev);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(c->s));
}

static void call_launch(floor_ctx *c)
{
    empty_kernel<<<1, 1, 0, c->s>>>();
    CK_LAUNCH();
    CK(cudaStreamSynchronize(c->s));
}

/* copies+3 kernels, captured once; the replay is one launch for five operations. */
static void capture_graph(floor_ctx *c)
{
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(c->s, cudaStreamCaptureModeThreadLocal));
    enqueue_obs_in(c);
    enqueue_mlp(c);
    enqueue_out_back(c);
    CK(cudaStreamEndCapture(c->s, &g));
    CK(cudaGraphInstantiate(&c->graph, g, 0));
    CK(cudaGraphDestroy(g)); /* the executable graph keeps what it needs */
}

/* ---------------------------------------------------------------- timing */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos, hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

typedef void (*call_fn)(floor_ctx *c);

/* Warm up (the clocks rise, the driver's lazy work is done), then time each of reps
 * calls on its own; t has room for reps. */
static stat3 time_calls(call_fn f, floor_ctx *c, int reps, double *t)
{
    double t0 = now_s();
    for (int i = 0; i < WARM_MIN || (i < WARM_MAX && now_s() - t0 < WARM_S); i++)
        f(c);
    for (int i = 0; i < reps; i++) {
        double s = now_s();
        f(c);
        t[i] = now_s() - s;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    stat3 r = {1e6 * quantile(t, reps, 0.5), 1e6 * t[0], 1e6 * quantile(t, reps, 0.9)};
    return r;
}

/* ---------------------------------------------------------------- the check */

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_next(s) >> 40) * (1.0 / 16777216.0));
}

static size_t param_count(const int *dims)
{
    size_t n = 0;
    for (int l = 0; l < NLAYERS; l++)
        n += (size_t)dims[l] * dims[l + 1] + dims[l + 1];
    return n;
}

/* Parameters as bench_gpu_infer makes them: weights uniform in ±1/sqrt(fan-in), biases
 * in ±0.1 (tanh neither saturated nor linear), per layer weights then biases. */
static void init_params(float *p, const int *dims, uint64_t *s)
{
    for (int l = 0; l < NLAYERS; l++) {
        float a = 1.0f / sqrtf((float)dims[l]);
        for (size_t k = 0; k < (size_t)dims[l] * dims[l + 1]; k++)
            *p++ = uniform(s, -a, a);
        for (int k = 0; k < dims[l + 1]; k++)
            *p++ = uniform(s, -0.1f, 0.1f);
    }
}

/* The forward pass in double, same layout: what the GPU's float results are held to. */
static void reference(const float *p, const int *dims, const float *obs, double *out)
{
    double x[MAX_IO_BYTES / 4 + HIDDEN], y[MAX_IO_BYTES / 4 + HIDDEN];
    for (int i = 0; i < dims[0]; i++)
        x[i] = obs[i];
    for (int l = 0; l < NLAYERS; l++) {
        const float *w = p, *b = p + (size_t)dims[l] * dims[l + 1];
        for (int j = 0; j < dims[l + 1]; j++) {
            double acc = b[j];
            for (int i = 0; i < dims[l]; i++)
                acc += x[i] * (double)w[(size_t)i * dims[l + 1] + j];
            y[j] = l < NLAYERS - 1 ? tanh(acc) : acc;
        }
        memcpy(x, y, sizeof(double) * (size_t)dims[l + 1]);
        p = b + dims[l + 1];
    }
    memcpy(out, x, sizeof(double) * (size_t)dims[NLAYERS]);
}

/* Largest |got - ref| relative to 1 + largest |ref|; NaN (an output never written: the
 * buffers are NaN-filled first) counts as infinitely wrong. */
static double max_err(const float *got, const double *ref, int n)
{
    double big = 0, err = 0;
    for (int j = 0; j < n; j++)
        big = fmax(big, fabs(ref[j]));
    for (int j = 0; j < n; j++) {
        double d = fabs((double)got[j] - ref[j]);
        err = isnan(d) ? INFINITY : fmax(err, d);
    }
    return err / (1 + big);
}

/* NaN everywhere an output could come from, so a call that skips a step fails. */
static void poison(floor_ctx *c)
{
    CK(cudaMemsetAsync(c->d_h1, 0xff, HIDDEN * sizeof(float), c->s));
    CK(cudaMemsetAsync(c->d_h2, 0xff, HIDDEN * sizeof(float), c->s));
    CK(cudaMemsetAsync(c->d_out, 0xff, c->out_bytes, c->s));
    CK(cudaStreamSynchronize(c->s));
    memset(c->h_out, 0xff, c->out_bytes);
    memset(c->m_out, 0xff, c->out_bytes);
}

/* One call of each of the three MLP paths against the reference; the worst error. */
static double check_mlp(floor_ctx *c)
{
    int n_out = c->mlp.dims[NLAYERS];
    double ref[MAX_IO_BYTES / 4], err = 0;
    reference(c->h_params, c->mlp.dims, c->h_obs, ref);
    poison(c);
    call_copies_3k(c);
    err = fmax(err, max_err(c->h_out, ref, n_out));
    poison(c);
    call_graph(c);
    err = fmax(err, max_err(c->h_out, ref, n_out));
    poison(c);
    call_mapped(c);
    err = fmax(err, max_err(c->m_out, ref, n_out));
    return err;
}

/* ---------------------------------------------------------------- set-up */

static void *host_alloc(size_t bytes, unsigned flags)
{
    void *p;
    CK(cudaHostAlloc(&p, bytes, flags));
    return p;
}

static void *dev_alloc(size_t bytes)
{
    void *p;
    CK(cudaMalloc(&p, bytes));
    return p;
}

static void setup(floor_ctx *c, const opts *o)
{
    int dims[NLAYERS + 1] = {o->obs_bytes / 4, HIDDEN, HIDDEN, o->out_bytes / 4};
    uint64_t seed = 12345;
    size_t np = param_count(dims);
    memset(c, 0, sizeof *c);
    c->obs_bytes = (size_t)o->obs_bytes;
    c->out_bytes = (size_t)o->out_bytes;
    /* Non-blocking, as the plugin's stream: no implicit syncs with the legacy stream. */
    CK(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking));
    c->h_params = (float *)malloc(np * sizeof(float));
    if (!c->h_params) {
        printf("FAIL: out of host memory\n");
        exit(1);
    }
    init_params(c->h_params, dims, &seed);
    c->d_params = (float *)dev_alloc(np * sizeof(float));
    CK(cudaMemcpy(c->d_params, c->h_params, np * sizeof(float), cudaMemcpyHostToDevice));
    const float *p = c->d_params;
    for (int l = 0; l < NLAYERS; l++) {
        c->mlp.w[l] = p;
        c->mlp.b[l] = p + (size_t)dims[l] * dims[l + 1];
        p = c->mlp.b[l] + dims[l + 1];
    }
    memcpy(c->mlp.dims, dims, sizeof dims);
    c->h_obs = (float *)host_alloc(c->obs_bytes, cudaHostAllocDefault);
    c->h_out = (float *)host_alloc(c->out_bytes, cudaHostAllocDefault);
    c->m_obs = (float *)host_alloc(c->obs_bytes, cudaHostAllocMapped);
    c->m_out = (float *)host_alloc(c->out_bytes, cudaHostAllocMapped);
    CK(cudaHostGetDevicePointer((void **)&c->m_obs_dev, c->m_obs, 0));
    CK(cudaHostGetDevicePointer((void **)&c->m_out_dev, c->m_out, 0));
    c->d_obs = (float *)dev_alloc(c->obs_bytes);
    c->d_h1 = (float *)dev_alloc(HIDDEN * sizeof(float));
    c->d_h2 = (float *)dev_alloc(HIDDEN * sizeof(float));
    c->d_out = (float *)dev_alloc(c->out_bytes);
    for (int i = 0; i < dims[0]; i++)
        c->h_obs[i] = uniform(&seed, -1, 1);
    memcpy(c->m_obs, c->h_obs, c->obs_bytes);
    capture_graph(c);
}

static void teardown(floor_ctx *c)
{
    CK(cudaGraphExecDestroy(c->graph));
    void *dev[] = {c->d_obs, c->d_h1, c->d_h2, c->d_out, c->d_params};
    void *host[] = {c->h_obs, c->h_out, c->m_obs, c->m_out};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        CK(cudaFree(dev[i]));
    for (size_t i = 0; i < sizeof host / sizeof *host; i++)
        CK(cudaFreeHost(host[i]));
    CK(cudaStreamDestroy(c->s));
    free(c->h_params);
}

/* ---------------------------------------------------------------- bandwidth */

typedef struct bw {
    double gbps, median_us;
} bw;

/* Median wall time of one copy and synchronise, as a benchmark's large batch sees it. */
static bw bw_wall(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                  cudaStream_t s, int reps, double *t)
{
    for (int i = 0; i < reps + 2; i++) { /* the first two warm up */
        double t0 = now_s();
        CK(cudaMemcpyAsync(dst, src, bytes, kind, s));
        CK(cudaStreamSynchronize(s));
        if (i >= 2)
            t[i - 2] = now_s() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = quantile(t, reps, 0.5);
    bw r = {bytes / med / 1e9, med * 1e6};
    return r;
}

/* Device to device on the GPU's own clock (cudaEvent): a 64 MiB copy takes tens of µs
 * there, of which the launch and synchronise would be a good part. Counts read + write. */
static bw bw_d2d(void *dst, const void *src, size_t bytes, cudaStream_t s, int reps,
                 double *t)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < reps + 2; i++) {
        float ms;
        CK(cudaEventRecord(e0, s));
        CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 2)
            t[i - 2] = 1e-3 * ms;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = quantile(t, reps, 0.5);
    bw r = {2.0 * bytes / med / 1e9, med * 1e6};
    return r;
}

static void measure_bw(const opts *o, bw out[3])
{
    size_t bytes = (size_t)o->bw_mib << 20;
    double *t = (double *)malloc(sizeof(double) * (size_t)o->bw_reps);
    cudaStream_t s;
    if (!t) {
        printf("FAIL: out of host memory\n");
        exit(1);
    }
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *h = host_alloc(bytes, cudaHostAllocDefault), *d0 = dev_alloc(bytes),
         *d1 = dev_alloc(bytes);
    memset(h, 1, bytes); /* touched, so no first-use cost hides in the first copy */
    CK(cudaMemset(d1, 2, bytes));
    out[0] = bw_wall(d0, h, bytes, cudaMemcpyHostToDevice, s, o->bw_reps, t);
    out[1] = bw_wall(h, d1, bytes, cudaMemcpyDeviceToHost, s, o->bw_reps, t);
    out[2] = bw_d2d(d1, d0, bytes, s, o->bw_reps, t);
    CK(cudaFreeHost(h));
    CK(cudaFree(d0));
    CK(cudaFree(d1));
    CK(cudaStreamDestroy(s));
    free(t);
}

/* ---------------------------------------------------------------- report */

typedef struct meas {
    const char *label, *csv_name, *what;
    call_fn f;
    stat3 r;
} meas;

static void print_header(const opts *o, const cudaDeviceProp *pr, const int *dims,
                         double err)
{
    int drv = 0, rt = 0;
    const char *h = o->csv ? "# " : "";
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    printf("%sbench_gpu_floor: device %d: %s (sm_%d%d, %d SMs, PCI %04x:%02x:%02x); "
           "driver %d.%d, runtime %d.%d\n",
           h, o->device, pr->name, pr->major, pr->minor, pr->multiProcessorCount,
           pr->pciDomainID, pr->pciBusID, pr->pciDeviceID, drv / 1000, drv % 1000 / 10,
           rt / 1000, rt % 1000 / 10);
    printf("%sper call: %d B obs host->device, %d B out device->host (pinned); MLP "
           "%d-%d tanh-%d tanh-%d; %d reps after warm-up, wall clock per call\n",
           h, o->obs_bytes, o->out_bytes, dims[0], dims[1], dims[2], dims[3], o->reps);
    printf("%scheck: MLP of copies+3 kernels, graph(c), mapped fused against a CPU double "
           "reference: max error %.3g (relative to 1 + max|ref|; limit %g)\n",
           h, err, CHECK_TOL);
}

static void print_table(const opts *o, const meas *m, int n, const bw *b)
{
    static const char *bw_name[3] = {"host->device", "device->host", "device->device"};
    static const char *bw_csv[3] = {"bw_h2d", "bw_d2h", "bw_d2d"};
    size_t bytes = (size_t)o->bw_mib << 20;
    if (o->csv) {
        printf("name,median_us,min_us,p90_us\n");
        for (int i = 0; i < n; i++)
            printf("%s,%.3f,%.3f,%.3f\n", m[i].csv_name, m[i].r.med, m[i].r.min, m[i].r.p90);
        printf("bandwidth,GBps,bytes,median_us\n");
        for (int i = 0; i < 3; i++)
            printf("%s,%.3f,%zu,%.3f\n", bw_csv[i], b[i].gbps, bytes, b[i].median_us);
        return;
    }
    printf("\n%-17s %9s %9s %9s  %s\n", "call", "median us", "min us", "p90 us",
           "what one call is");
    for (int i = 0; i < n; i++)
        printf("%-17s %9.2f %9.2f %9.2f  %s\n", m[i].label, m[i].r.med, m[i].r.min,
               m[i].r.p90, m[i].what);
    printf("\n%-17s %9s %9s  (%d MiB, median of %d)\n", "bandwidth", "GB/s", "us",
           o->bw_mib, o->bw_reps);
    for (int i = 0; i < 3; i++)
        printf("%-17s %9.2f %9.1f%s\n", bw_name[i], b[i].gbps, b[i].median_us,
               i == 2 ? "  (read + write, cudaEvent time)" : "  (pinned, wall clock)");
}

/* ---------------------------------------------------------------- main */

/* The usage on f; 2 (the exit status of a refused command line). */
static int usage(FILE *f)
{
    fprintf(f, "usage: bench_gpu_floor [--reps 2000] [--obs-bytes 256] [--out-bytes 32] "
               "[--device 0] [--bw-mib 64] [--bw-reps 20] [--csv]\n"
               "obs/out bytes: multiples of 4, at most %d\n", MAX_IO_BYTES);
    return 2;
}

/* A refused command line: why on stderr, then the usage; 2. */
static int refuse(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "bench_gpu_floor: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return usage(stderr);
}

/* 0 when parsed, else the exit status: 2 refused, -1 help printed (exit 0). */
static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){2000, 256, 32, 0, 0, 64, 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int *dst = !strcmp(a, "--reps")        ? &o->reps
                   : !strcmp(a, "--obs-bytes") ? &o->obs_bytes
                   : !strcmp(a, "--out-bytes") ? &o->out_bytes
                   : !strcmp(a, "--device")    ? &o->device
                   : !strcmp(a, "--bw-mib")    ? &o->bw_mib
                   : !strcmp(a, "--bw-reps")   ? &o->bw_reps
                                               : NULL;
        if (!strcmp(a, "--csv")) {
            o->csv = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!dst) {
            return refuse("unknown option '%s'%s", a, "");
        } else if (i + 1 >= argc) {
            return refuse("%s needs a value%s", a, "");
        } else {
            char *end;
            const char *v = argv[++i];
            long x = strtol(v, &end, 10);
            if (end == v || *end || x < 0 || x > 1000000000)
                return refuse("%s: '%s' is not a whole number in [0, 1e9]", a, v);
            *dst = (int)x;
        }
    }
    if (o->reps < 1 || o->bw_reps < 1 || o->bw_mib < 1)
        return refuse("--reps, --bw-reps and --bw-mib must be >= 1%s%s", "", "");
    if (o->obs_bytes < 4 || o->obs_bytes % 4 || o->obs_bytes > MAX_IO_BYTES ||
        o->out_bytes < 4 || o->out_bytes % 4 || o->out_bytes > MAX_IO_BYTES)
        return refuse("bad --obs-bytes or --out-bytes%s%s", "", "");
    return 0;
}

/* Nothing to measure without a GPU: say why and exit 0 (1 where one is required). */
static int skip(const char *why, cudaError_t e)
{
    printf("SKIP: %s%s%s\n", why, e != cudaSuccess ? ": " : "",
           e != cudaSuccess ? cudaGetErrorString(e) : "");
    const char *req = getenv("FRL_BENCH_REQUIRE_DEVICE");
    return req && req[0] == '1';
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse(argc, argv, &o), count = 0;
    if (rc)
        return rc < 0 ? 0 : rc;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver) /* also what no driver at all reads as */
        return skip("no CUDA driver, or one older than this runtime", e);
    if (e != cudaSuccess || count == 0)
        return skip("no CUDA device", e);
    if (o.device >= count) {
        fprintf(stderr, "bench_gpu_floor: --device %d, but %d device(s)\n", o.device, count);
        return 2;
    }
    CK(cudaSetDevice(o.device));
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, o.device));
    if (!pr.canMapHostMemory) {
        printf("FAIL: %s cannot map host memory (mapped fused)\n", pr.name);
        return 1;
    }

    floor_ctx c;
    setup(&c, &o);
    double err = check_mlp(&c);
    print_header(&o, &pr, c.mlp.dims, err);
    if (!(err <= CHECK_TOL)) {
        printf("FAIL: the GPU's MLP output differs from the CPU reference by %.3g > %g\n",
               err, CHECK_TOL);
        return 1;
    }

    meas m[] = {
        {"sync", "sync", "cudaStreamSynchronize, idle non-blocking stream", call_sync, {0, 0, 0}},
        {"copies", "copies", "obs H2D + out D2H, synchronise: THE batch-1 floor",
         call_copies, {0, 0, 0}},
        {"copies+3 kernels", "copies_3k", "the copies around 3 naive layer kernels",
         call_copies_3k, {0, 0, 0}},
        {"graph(c)", "graph_3k", "copies+3 kernels as one CUDA graph, replayed",
         call_graph, {0, 0, 0}},
        {"mapped fused", "mapped_fused", "1 kernel, 3 layers, obs/out in mapped host memory",
         call_mapped, {0, 0, 0}},
        {"launch+sync", "launch_sync", "1 empty kernel, synchronise", call_launch, {0, 0, 0}},
    };
    int n = (int)(sizeof m / sizeof *m);
    double *t = (double *)malloc(sizeof(double) * (size_t)o.reps);
    if (!t) {
        printf("FAIL: out of host memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++)
        m[i].r = time_calls(m[i].f, &c, o.reps, t);
    free(t);
    bw b[3];
    measure_bw(&o, b);
    print_table(&o, m, n, b);
    teardown(&c);
    return 0;
}
