// The device ops (dev_ops.h) in CUDA: cuBLAS for the products, small kernels over the
// arithmetic of dev_math.h for the rest, everything on one stream per context. Part of
// libfastrl-cuda, which links the CUDA runtime statically, so what it needs from the
// machine is the driver (libcuda.so.1) and cuBLAS.
//
// Reductions (column sums, sums of squares, moments) run in double over a partition of
// the input fixed by its size alone (never by the device's SM count or by timing), each
// part and then the parts summed in a fixed order: a result repeats bit for bit.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef __CUDACC__
#include <cooperative_groups.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/dev_ops.h"

// The emulator (tests/cuda/emu) compiles this file as plain C++, which knows no unroll.
#ifdef __CUDACC__
#define UNROLL_ALL _Pragma("unroll")
#else
#define UNROLL_ALL
#endif

static constexpr int THREADS = 256;            // per block of the element-wise kernels
static constexpr int MOMENT_THREADS = 1024;    // the one block of the moments
static constexpr int64_t MAX_BLOCKS = 1 << 20; // beyond this a grid-stride loop takes the rest
static constexpr int64_t SUM_BLOCKS = 1024;    // the most partial sums of sum_squares
static constexpr int64_t COL_CHUNKS = 1024;    // the most row chunks of a column sum
static constexpr int64_t ROWS_PER_THREAD = 64; // a column sum's rows per thread in a chunk
static constexpr int FUSED_THREADS = 256;      // per block (one row) of the fused forward
static constexpr int MAX_RETIRED = 32;         // outgrown scratch buffers kept until close
static constexpr int CLUSTER = 8;              // blocks a row of the fused forward, on Hopper

struct frl_dev {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    double *scratch; // partial sums of the reductions, grown on demand
    size_t scratch_len;
    // Outgrown scratch buffers: a captured graph may still name one, so they live as
    // long as the context (a doubling growth keeps them under the current one's size).
    double *retired[MAX_RETIRED];
    int n_retired;
    int clusters; // thread-block clusters (compute capability 9.0 on): the fused forward's
    int failed;
    char err[256];
};

// ---- errors ----

__attribute__((format(printf, 2, 3))) static void fail(frl_dev *d, const char *fmt, ...)
{
    if (d->failed)
        return;
    d->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
}

// A failed runtime call is also the thread's "last error": cleared here, so that the next
// launch check does not report it a second time, against another op.
static int check_rt(frl_dev *d, cudaError_t e, const char *call, const char *op)
{
    if (e == cudaSuccess)
        return 0;
    cudaGetLastError();
    fail(d, "%s failed: %s (%s)", call, cudaGetErrorString(e), op);
    return 1;
}

static void launched(frl_dev *d, const char *op)
{
    check_rt(d, cudaGetLastError(), "kernel launch", op);
}

static void check_gemm(frl_dev *d, cublasStatus_t s, const char *op, int32_t m, int32_t n,
                       int32_t k)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return;
    cudaGetLastError(); // a failed launch inside cuBLAS, reported here already
    fail(d, "cublasSgemm failed: %s (%s %dx%dx%d)", cublasGetStatusName(s), op, (int)m, (int)n,
         (int)k);
}

// The calling thread's current device may be another one (or none yet): kernels launch
// on the current device, so every op makes it the context's first.
static void enter(frl_dev *d)
{
    check_rt(d, cudaSetDevice(d->device), "cudaSetDevice", "device op");
}

// Ops still queued may use the memory: they finish first (a failure among them is kept
// for the next sync, as any other).
static void drain(frl_dev *d, const char *op)
{
    enter(d);
    check_rt(d, cudaStreamSynchronize(d->stream), "cudaStreamSynchronize", op);
}

static unsigned grid_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define FOR_EACH(i, n)                                                                             \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

// At least count doubles of scratch, or NULL (the failure recorded). Never inside a
// capture that has not sized it already: cudaMalloc cannot be captured.
static double *scratch(frl_dev *d, size_t count)
{
    if (count <= d->scratch_len)
        return d->scratch;
    if (d->n_retired == MAX_RETIRED) {
        fail(d, "reduction scratch: grown %d times", MAX_RETIRED);
        return NULL;
    }
    if (d->scratch)
        d->retired[d->n_retired++] = d->scratch;
    d->scratch = NULL;
    d->scratch_len = 0;
    size_t len = 1;
    while (len < count)
        len *= 2;
    if (check_rt(d, cudaMalloc((void **)&d->scratch, len * sizeof(double)), "cudaMalloc",
                 "reduction scratch")) {
        d->scratch = NULL;
        return NULL;
    }
    d->scratch_len = len;
    return d->scratch;
}

// ---- devices ----

static int probe(int32_t *count, char *err, size_t err_size)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (e == cudaErrorInsufficientDriver) {
        snprintf(err, err_size,
                 "no usable CUDA driver (libcuda.so.1 is missing or older than "
                 "this CUDA %d.%d build needs)",
                 CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        return 1;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        snprintf(err, err_size, "the CUDA driver sees no device");
        return 1;
    }
    if (e != cudaSuccess) {
        snprintf(err, err_size, "cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
        return 1;
    }
    *count = n;
    return 0;
}

static int describe(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, index) != cudaSuccess) {
        cudaGetLastError();
        return 1;
    }
    snprintf(name, name_size, "%s", p.name);
    *cc_major = p.major;
    *cc_minor = p.minor;
    *memory_bytes = (uint64_t)p.totalGlobalMem;
    return 0;
}

static void close_dev(frl_dev *d)
{
    if (!d)
        return;
    cudaSetDevice(d->device);
    if (d->stream)
        cudaStreamSynchronize(d->stream);
    if (d->blas)
        cublasDestroy(d->blas);
    cudaFree(d->scratch);
    for (int i = 0; i < d->n_retired; i++)
        cudaFree(d->retired[i]);
    if (d->stream)
        cudaStreamDestroy(d->stream);
    cudaGetLastError();
    free(d);
}

// Default math keeps fp32 products in fp32 arithmetic: since CUDA 11 cuBLAS uses TF32 only
// when the handle asks for it (and BF16x9 emulation, when asked, keeps fp32 accuracy).
// Pedantic math would add nothing to the accuracy of these products and may cost speed.
static int setup_blas(frl_dev *d, int32_t tf32)
{
    if (cublasCreate(&d->blas) != CUBLAS_STATUS_SUCCESS) {
        d->blas = NULL;
        fail(d, "cublasCreate failed on device %d", d->device);
        return 1;
    }
    cublasStatus_t s = cublasSetStream(d->blas, d->stream);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasSetMathMode(d->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS)
        fail(d, "cuBLAS setup failed: %s", cublasGetStatusName(s));
    return s != CUBLAS_STATUS_SUCCESS;
}

// Clusters from compute capability 9.0; FRL_CUDA_CLUSTERS=0 runs the fused forward a
// block a row instead, so a GPU test can check that variant too.
static int use_clusters(int device)
{
#ifdef __CUDACC__
    const char *v = getenv("FRL_CUDA_CLUSTERS");
    int major = 0;
    if (v && v[0] == '0')
        return 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return major >= 9;
#else
    (void)device;
    return 0;
#endif
}

static int setup(frl_dev *d, int32_t tf32)
{
    char what[64];
    snprintf(what, sizeof what, "opening device %d", d->device);
    if (check_rt(d, cudaSetDevice(d->device), "cudaSetDevice", what) ||
        check_rt(d, cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags", what))
        return 1;
    if (setup_blas(d, tf32))
        return 1;
    d->clusters = use_clusters(d->device);
    // Enough for every reduction of a typical minibatch, so ops rarely grow it.
    return scratch(d, (size_t)1 << 16) == NULL;
}

static int open_dev(frl_dev **out, int32_t device, int32_t tf32, char *err, size_t err_size)
{
    *out = NULL;
    frl_dev *d = (frl_dev *)calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, err_size, "out of host memory for a CUDA context");
        return 1;
    }
    d->device = device;
    if (setup(d, tf32)) {
        snprintf(err, err_size, "%s", d->err);
        close_dev(d);
        return 1;
    }
    *out = d;
    return 0;
}

// ---- memory and transfers ----

// A request of 0 bytes gets a valid (minimal) allocation, as from the host ops: NULL
// always means out of memory to the callers.
static void *alloc_mem(frl_dev *d, size_t bytes)
{
    void *p = NULL;
    enter(d);
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

static void release_mem(frl_dev *d, void *p)
{
    if (!p)
        return;
    drain(d, "release");
    check_rt(d, cudaFree(p), "cudaFree", "release");
}

// The page-locked blocks alloc_pinned handed out, so that `mapped` can tell a kernel
// may address a host pointer (with unified addressing, the same pointer) without asking
// the driver on every forward. One table for every context: memory pinned through one
// context is used by another's models. A block that finds the table full still works,
// through copies.
static constexpr int MAX_PINNED = 256;
static struct {
    pthread_mutex_t lock;
    const char *base[MAX_PINNED];
    size_t bytes[MAX_PINNED];
    int n;
} pinned_blocks = {PTHREAD_MUTEX_INITIALIZER, {}, {}, 0};

static void pinned_add(void *p, size_t bytes)
{
    pthread_mutex_lock(&pinned_blocks.lock);
    if (pinned_blocks.n < MAX_PINNED) {
        pinned_blocks.base[pinned_blocks.n] = (const char *)p;
        pinned_blocks.bytes[pinned_blocks.n++] = bytes;
    }
    pthread_mutex_unlock(&pinned_blocks.lock);
}

static void pinned_remove(void *p)
{
    pthread_mutex_lock(&pinned_blocks.lock);
    for (int i = 0; i < pinned_blocks.n; i++)
        if (pinned_blocks.base[i] == (const char *)p) {
            int last = --pinned_blocks.n;
            pinned_blocks.base[i] = pinned_blocks.base[last];
            pinned_blocks.bytes[i] = pinned_blocks.bytes[last];
            break;
        }
    pthread_mutex_unlock(&pinned_blocks.lock);
}

static int mapped(frl_dev *, const void *p, size_t bytes)
{
    const char *c = (const char *)p;
    int found = 0;
    pthread_mutex_lock(&pinned_blocks.lock);
    for (int i = 0; i < pinned_blocks.n && !found; i++)
        found = c >= pinned_blocks.base[i] && bytes <= pinned_blocks.bytes[i] &&
                (size_t)(c - pinned_blocks.base[i]) <= pinned_blocks.bytes[i] - bytes;
    pthread_mutex_unlock(&pinned_blocks.lock);
    return found;
}

// Mapped and portable: kernels of any context may read and write it directly.
static void *alloc_pinned(frl_dev *d, size_t bytes)
{
    void *p = NULL;
    enter(d);
    char what[64];
    snprintf(what, sizeof what, "%zu bytes of page-locked host memory", bytes);
    // The reason waits for the next sync, where the plugin fetches it for its caller.
    if (check_rt(d, cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped),
                 "cudaHostAlloc", what))
        return NULL;
    pinned_add(p, bytes);
    return p;
}

static void release_pinned(frl_dev *d, void *p)
{
    if (!p)
        return;
    drain(d, "release_pinned");
    pinned_remove(p);
    check_rt(d, cudaFreeHost(p), "cudaFreeHost", "release_pinned");
}

static void transfer(frl_dev *d, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                     const char *op)
{
    if (!bytes)
        return;
    enter(d);
    check_rt(d, cudaMemcpyAsync(dst, src, bytes, kind, d->stream), "cudaMemcpyAsync", op);
}

static void put(frl_dev *d, void *dst, const void *src, size_t bytes)
{
    transfer(d, dst, src, bytes, cudaMemcpyHostToDevice, "put");
}

static void get(frl_dev *d, void *dst, const void *src, size_t bytes)
{
    transfer(d, dst, src, bytes, cudaMemcpyDeviceToHost, "get");
}

static void copy(frl_dev *d, void *dst, const void *src, size_t bytes)
{
    transfer(d, dst, src, bytes, cudaMemcpyDeviceToDevice, "copy");
}

static void zero(frl_dev *d, void *dst, size_t bytes)
{
    if (!bytes)
        return;
    enter(d);
    check_rt(d, cudaMemsetAsync(dst, 0, bytes, d->stream), "cudaMemsetAsync", "zero");
}

static int sync_dev(frl_dev *d, char *err, size_t err_size)
{
    enter(d);
    check_rt(d, cudaStreamSynchronize(d->stream), "cudaStreamSynchronize", "sync");
    if (!d->failed)
        return 0;
    if (err && err_size)
        snprintf(err, err_size, "%s", d->err);
    d->failed = 0;
    d->err[0] = '\0';
    return 1;
}

// ---- reductions ----

// The block's sum of v, by a fixed tree (blockDim.x a power of two, sh of blockDim.x).
static __device__ double block_sum(double v, double *sh)
{
    unsigned t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
        if (t < h)
            sh[t] += sh[t + h];
        __syncthreads();
    }
    double s = sh[0];
    __syncthreads(); // sh may be reused at once
    return s;
}

static __global__ void sumsq_part_k(int64_t n, const float *x, double *part)
{
    __shared__ double sh[THREADS];
    double s = 0;
    FOR_EACH(i, n) {
        double v = x[i];
        s += v * v;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

static __global__ void sum_parts_k(int64_t parts, const double *part, double *out)
{
    __shared__ double sh[THREADS];
    double s = 0;
    for (int64_t i = threadIdx.x; i < parts; i += blockDim.x)
        s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        *out = s;
}

static void sum_squares(frl_dev *d, int64_t n, const float *x, double *out)
{
    enter(d);
    int64_t parts = n > 0 ? (n + THREADS * 16 - 1) / (THREADS * 16) : 0;
    parts = parts < SUM_BLOCKS ? parts : SUM_BLOCKS;
    double *part = scratch(d, SUM_BLOCKS);
    if (!part)
        return;
    if (parts > 0) {
        sumsq_part_k<<<(unsigned)parts, THREADS, 0, d->stream>>>(n, x, part);
        launched(d, "sum_squares");
    }
    sum_parts_k<<<1, THREADS, 0, d->stream>>>(parts, part, out);
    launched(d, "sum_squares");
}

// A column sum's partition: tiles of cw columns across blockIdx.x, `lanes` threads per
// column in a block, chunks of chunk_rows rows across blockIdx.y. Reads are coalesced:
// consecutive threads read consecutive floats of a row (or of consecutive rows).
typedef struct col_plan {
    int32_t cw, lanes, tiles;
    int64_t chunk_rows, chunks;
} col_plan;

static col_plan plan_cols(int32_t rows, int32_t cols)
{
    col_plan p;
    p.cw = cols < THREADS ? cols : THREADS;
    p.lanes = THREADS / p.cw;
    p.tiles = (cols + p.cw - 1) / p.cw;
    int64_t per = (int64_t)p.lanes * ROWS_PER_THREAD;
    int64_t least = ((int64_t)rows + COL_CHUNKS - 1) / COL_CHUNKS;
    p.chunk_rows = per > least ? per : least;
    p.chunks = ((int64_t)rows + p.chunk_rows - 1) / p.chunk_rows;
    return p;
}

// The lanes' sums of each column into lane 0, by a fixed tree over a count of lanes
// that need not be a power of two.
static __device__ void lane_sum(double *sh, int32_t lanes, int32_t lane, int32_t cw)
{
    for (int32_t n = lanes; n > 1;) {
        int32_t h = (n + 1) / 2;
        if (lane < n - h)
            sh[threadIdx.x] += sh[threadIdx.x + h * cw];
        __syncthreads();
        n = h;
    }
}

static __global__ void col_part_k(int32_t rows, int32_t cols, int32_t cw, int64_t chunk_rows,
                                  const float *x, double *part)
{
    __shared__ double sh[THREADS];
    int32_t lanes = THREADS / cw, lane = (int32_t)threadIdx.x / cw;
    int32_t cl = (int32_t)threadIdx.x % cw;
    int64_t c = (int64_t)blockIdx.x * cw + cl;
    int64_t lo = (int64_t)blockIdx.y * chunk_rows, hi = lo + chunk_rows;
    hi = hi < rows ? hi : rows;
    double s = 0;
    if (lane < lanes && c < cols)
        for (int64_t r = lo + lane; r < hi; r += lanes)
            s += x[r * cols + c];
    sh[threadIdx.x] = s;
    __syncthreads();
    lane_sum(sh, lanes, lane, cw);
    if (lane == 0 && c < cols)
        part[(int64_t)blockIdx.y * cols + c] = sh[cl];
}

static __global__ void col_finish_k(int64_t chunks, int32_t cols, const double *part, float *out,
                                    int32_t accumulate)
{
    FOR_EACH(c, cols) {
        double s = 0;
        for (int64_t k = 0; k < chunks; k++)
            s += part[k * cols + c];
        out[c] = accumulate ? out[c] + (float)s : (float)s;
    }
}

// out[c] (+)= the sum over rows of x[r * cols + c], in double.
static void col_reduce(frl_dev *d, int32_t rows, int32_t cols, const float *x, float *out,
                       int32_t accumulate, const char *op)
{
    if (cols <= 0)
        return;
    rows = rows > 0 ? rows : 0;
    col_plan p = plan_cols(rows, cols);
    double *part = scratch(d, (size_t)(p.chunks > 0 ? p.chunks : 1) * (size_t)cols);
    if (!part)
        return;
    if (p.chunks > 0) {
        dim3 grid((unsigned)p.tiles, (unsigned)p.chunks);
        col_part_k<<<grid, THREADS, 0, d->stream>>>(rows, cols, p.cw, p.chunk_rows, x, part);
        launched(d, op);
    }
    col_finish_k<<<grid_for(cols), THREADS, 0, d->stream>>>(p.chunks, cols, part, out, accumulate);
    launched(d, op);
}

static void col_sums(frl_dev *d, int32_t rows, int32_t cols, const float *x, float *out)
{
    enter(d);
    col_reduce(d, rows, cols, x, out, 0, "col_sums");
}

// ---- the networks ----

// y = act(y + b) per row, or act(b) when the product was empty (from_zero).
static __global__ void bias_act_k(int64_t total, int32_t n, const float *b, int32_t act,
                                  int32_t from_zero, float *y)
{
    FOR_EACH(i, total) {
        float v = from_zero ? 0.0f : y[i];
        if (b)
            v += b[i % n];
        y[i] = frl_dm_act(v, act);
    }
}

// Row-major products through column-major cuBLAS: a row-major [r x c] matrix is the
// column-major [c x r] one, so y = x . wt is y^T = wt^T . x^T with no transposition.
static void linear_fwd(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x, const float *wt,
                       const float *b, float *y, int32_t act)
{
    if (m <= 0 || n <= 0)
        return;
    enter(d);
    const float one = 1.0f, zero = 0.0f;
    if (k > 0) {
        cublasStatus_t s =
            cublasSgemm(d->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, wt, n, x, k, &zero, y, n);
        check_gemm(d, s, "linear_fwd", m, n, k);
    }
    if (k > 0 && !b && act == 0)
        return;
    int64_t total = (int64_t)m * n;
    bias_act_k<<<grid_for(total), THREADS, 0, d->stream>>>(total, n, b, act, k <= 0, y);
    launched(d, "linear_fwd");
}

static void linear_bwd_input(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *dy,
                             const float *wt, float *dx)
{
    if (m <= 0 || k <= 0)
        return;
    enter(d);
    if (n <= 0) {
        check_rt(d, cudaMemsetAsync(dx, 0, sizeof(float) * (size_t)m * (size_t)k, d->stream),
                 "cudaMemsetAsync", "linear_bwd_input");
        return;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s =
        cublasSgemm(d->blas, CUBLAS_OP_T, CUBLAS_OP_N, k, m, n, &one, wt, n, dy, n, &zero, dx, k);
    check_gemm(d, s, "linear_bwd_input", m, n, k);
}

// beta = 0 makes cuBLAS ignore what dwt held (NaN included), as accumulate = 0 needs.
static void linear_bwd_weight(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, float *db, int32_t accumulate)
{
    if (n <= 0)
        return;
    enter(d);
    m = m > 0 ? m : 0;
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    if (k > 0 && m > 0) {
        cublasStatus_t s = cublasSgemm(d->blas, CUBLAS_OP_N, CUBLAS_OP_T, n, k, m, &one, dy, n, x,
                                       k, &beta, dwt, n);
        check_gemm(d, s, "linear_bwd_weight", m, n, k);
    } else if (k > 0 && !accumulate)
        check_rt(d, cudaMemsetAsync(dwt, 0, sizeof(float) * (size_t)n * (size_t)k, d->stream),
                 "cudaMemsetAsync", "linear_bwd_weight");
    if (db)
        col_reduce(d, m, n, dy, db, accumulate, "linear_bwd_weight");
}

static __global__ void act_bwd_k(int64_t n, const float *y, const float *dy, float *dx, int32_t act)
{
    FOR_EACH(i, n) {
        dx[i] = dy[i] * frl_dm_act_grad(y[i], act);
    }
}

static void act_bwd(frl_dev *d, int64_t n, const float *y, const float *dy, float *dx, int32_t act)
{
    if (n <= 0)
        return;
    enter(d);
    act_bwd_k<<<grid_for(n), THREADS, 0, d->stream>>>(n, y, dy, dx, act);
    launched(d, "act_bwd");
}

// ---- a layer's gradients in one pass (wgrad) ----

// A block takes a WG_TILE x WG_TILE tile of the weight gradient (k by n) over one chunk
// of the rows, staging WG_SUB rows of x and of delta at a time; its 16 x 16 threads each
// keep 4 x 4 sums of the tile (and the first row of threads the bias's 64). Each chunk's
// sums go to the scratch (part[chunk][(k + 1) x n], the bias last), which one more
// kernel adds up in chunk order: a fixed order that does not depend on the device. The
// rows are cut into chunks of at least WG_MIN_ROWS so that all tiles make about
// WG_BLOCKS blocks: 64 x 64 layers of a 16K-row minibatch take 128 chunks of 128.
static constexpr int WG_TILE = 64;
static constexpr int WG_SUB = 32;
static constexpr int WG_THREADS = 256;
static constexpr int64_t WG_BLOCKS = 256;
static constexpr int64_t WG_MIN_ROWS = 64;

typedef struct wg_args {
    int32_t m, n, k, act, tiles_k;
    int64_t chunk_rows;
    const float *x, *g, *y;
    float *delta, *part;
} wg_args;

// A thread's share of a staged sub-tile: WG_PER values of x, g and y (y only with an
// activation), loaded into registers together so that their loads overlap, and the
// next sub-tile's are in flight while the block multiplies the current one.
static constexpr int WG_PER = WG_SUB * WG_TILE / WG_THREADS;

typedef struct wg_regs {
    float x[WG_PER], g[WG_PER], y[WG_PER];
} wg_regs;

static __device__ void wg_load(const wg_args &a, int64_t r0, int64_t hi, int32_t k0, int32_t n0,
                               wg_regs &v)
{
    UNROLL_ALL
    for (int e = 0; e < WG_PER; e++) {
        int i = (int)threadIdx.x + e * WG_THREADS, c = i % WG_TILE;
        int64_t r = r0 + i / WG_TILE, at = r * a.n + n0 + c;
        bool in = r < hi && n0 + c < a.n;
        v.x[e] = r < hi && k0 + c < a.k ? a.x[r * a.k + k0 + c] : 0.0f;
        v.g[e] = in ? a.g[at] : 0.0f;
        v.y[e] = in && a.act != 0 ? a.y[at] : 0.0f;
    }
}

// The sub-tile into shared memory, delta = g * act'(y) (act_bwd_k's arithmetic), which
// the blocks of the first k tile also write out.
static __device__ void wg_store(const wg_args &a, int64_t r0, int64_t hi, int32_t n0,
                                int write_delta, const wg_regs &v, float (*xs)[WG_TILE],
                                float (*ds)[WG_TILE])
{
    UNROLL_ALL
    for (int e = 0; e < WG_PER; e++) {
        int i = (int)threadIdx.x + e * WG_THREADS, rr = i / WG_TILE, c = i % WG_TILE;
        int64_t r = r0 + rr;
        float dv = v.g[e];
        if (a.act != 0) {
            dv = dv * frl_dm_act_grad(v.y[e], a.act);
            if (write_delta && r < hi && n0 + c < a.n)
                a.delta[r * a.n + n0 + c] = dv;
        }
        xs[rr][c] = v.x[e];
        ds[rr][c] = dv;
    }
}

// acc (+)= the staged rows' products, bacc (+)= their deltas (this thread's 4 x 4 and 4).
static __device__ void wg_multiply(int32_t tx, int32_t ty, const float (*xs)[WG_TILE],
                                   const float (*ds)[WG_TILE], float (&acc)[4][4],
                                   float (&bacc)[4])
{
    for (int rr = 0; rr < WG_SUB; rr++) {
        float xv[4], dv[4];
        UNROLL_ALL
        for (int i = 0; i < 4; i++) {
            xv[i] = xs[rr][ty * 4 + i];
            dv[i] = ds[rr][tx * 4 + i];
        }
        UNROLL_ALL
        for (int i = 0; i < 4; i++)
            UNROLL_ALL
            for (int j = 0; j < 4; j++)
                acc[i][j] += xv[i] * dv[j];
        UNROLL_ALL
        for (int j = 0; j < 4; j++)
            bacc[j] += dv[j];
    }
}

static __global__ void __launch_bounds__(WG_THREADS) wgrad_part_k(wg_args a)
{
    __shared__ float xs[WG_SUB][WG_TILE];
    __shared__ float ds[WG_SUB][WG_TILE];
    int32_t tk = (int32_t)(blockIdx.x % (unsigned)a.tiles_k);
    int32_t k0 = tk * WG_TILE, n0 = (int32_t)(blockIdx.x / (unsigned)a.tiles_k) * WG_TILE;
    int32_t tx = (int32_t)threadIdx.x % 16, ty = (int32_t)threadIdx.x / 16;
    int64_t lo = (int64_t)blockIdx.y * a.chunk_rows, hi = lo + a.chunk_rows;
    hi = hi < a.m ? hi : a.m;
    float acc[4][4] = {}, bacc[4] = {};
    wg_regs v;
    wg_load(a, lo, hi, k0, n0, v);
    for (int64_t r0 = lo; r0 < hi; r0 += WG_SUB) {
        wg_store(a, r0, hi, n0, tk == 0, v, xs, ds);
        __syncthreads();
        if (r0 + WG_SUB < hi)
            wg_load(a, r0 + WG_SUB, hi, k0, n0, v);
        wg_multiply(tx, ty, xs, ds, acc, bacc);
        __syncthreads();
    }
    float *p = a.part + (int64_t)blockIdx.y * (int64_t)(a.k + 1) * a.n;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int32_t kk = k0 + ty * 4 + i, nn = n0 + tx * 4 + j;
            if (kk < a.k && nn < a.n)
                p[(int64_t)kk * a.n + nn] = acc[i][j];
        }
    for (int j = 0; ty == 0 && tk == 0 && j < 4; j++)
        if (n0 + tx * 4 + j < a.n)
            p[(int64_t)a.k * a.n + n0 + tx * 4 + j] = bacc[j];
}

// dwt (then db) (+)= the chunks' sums (double): a block takes 32 outputs, its 8 warps
// the chunks in turn (warp w: chunks w, w + 8, ...), then a fixed tree over the warps.
static constexpr int WF_COLS = 32;
static constexpr int WF_LANES = THREADS / WF_COLS;

static __global__ void __launch_bounds__(THREADS)
    wgrad_finish_k(int64_t chunks, int32_t n, int32_t k, const float *part, float *dwt,
                   float *db, int32_t accumulate)
{
    __shared__ double sh[THREADS];
    int64_t kn = (int64_t)k * n, total = kn + n, count = db ? total : kn;
    int32_t col = (int32_t)threadIdx.x % WF_COLS, lane = (int32_t)threadIdx.x / WF_COLS;
    int64_t j = (int64_t)blockIdx.x * WF_COLS + col;
    double s = 0;
    for (int64_t c = lane; j < count && c < chunks; c += WF_LANES)
        s += part[c * total + j];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int h = WF_LANES / 2; h > 0; h /= 2) {
        if (lane < h)
            sh[threadIdx.x] += sh[threadIdx.x + h * WF_COLS];
        __syncthreads();
    }
    if (lane != 0 || j >= count)
        return;
    float *out = j < kn ? dwt + j : db + (j - kn);
    *out = accumulate ? *out + (float)sh[col] : (float)sh[col];
}

static void wgrad(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x, const float *g,
                  const float *y, int32_t act, float *delta, float *dwt, float *db,
                  int32_t accumulate)
{
    if (n <= 0)
        return;
    enter(d);
    m = m > 0 ? m : 0;
    k = k > 0 ? k : 0;
    wg_args a = {m, n, k, act, (k + WG_TILE - 1) / WG_TILE, 0, x, g, y, delta, NULL};
    a.tiles_k = a.tiles_k > 0 ? a.tiles_k : 1; // k = 0: the bias alone
    int64_t tiles = (int64_t)a.tiles_k * ((n + WG_TILE - 1) / WG_TILE);
    int64_t want = (WG_BLOCKS + tiles - 1) / tiles;
    int64_t rows = ((int64_t)m + want - 1) / want;
    rows = rows > WG_MIN_ROWS ? rows : WG_MIN_ROWS;
    a.chunk_rows = (rows + WG_SUB - 1) / WG_SUB * WG_SUB;
    int64_t chunks = ((int64_t)m + a.chunk_rows - 1) / a.chunk_rows;
    size_t floats = (size_t)(chunks > 0 ? chunks : 1) * (size_t)(k + 1) * (size_t)n;
    a.part = (float *)scratch(d, (floats + 1) / 2);
    if (!a.part)
        return;
    if (chunks > 0) {
        dim3 grid((unsigned)tiles, (unsigned)chunks);
        wgrad_part_k<<<grid, WG_THREADS, 0, d->stream>>>(a);
        launched(d, "wgrad");
    }
    int64_t count = (int64_t)(db ? k + 1 : k) * n;
    if (count == 0)
        return;
    unsigned blocks = (unsigned)((count + WF_COLS - 1) / WF_COLS);
    wgrad_finish_k<<<blocks, THREADS, 0, d->stream>>>(chunks, n, k, a.part, dwt, db, accumulate);
    launched(d, "wgrad");
}

// ---- small MLPs over tiles of rows (the learner's passes) ----
//
// A block takes TL_ROWS rows of one network (blockIdx.y) through every layer: the rows'
// activations stay in shared memory between layers (two [TL_ROWS x TL_W] tiles), the
// layer's weights are staged beside them, and each of the 16 x 16 threads computes 4 x 4
// outputs from float4 reads (4 steps of the sum at a time). The forward writes every
// layer's output for the backward; the backward keeps the rows' gradient in shared
// memory from the top layer down, and writes each layer's weight and bias sums over its
// rows into its tile's row of the scratch (part[tile][span]), which wgrad_finish_k then
// adds up in tile order. Widths (input included) at most TL_W.
static constexpr int TL_ROWS = 64;
static constexpr int TL_W = FRL_DEV_TILE_MAX_WIDTH;
static constexpr int TL_THREADS = 256;

#ifdef __CUDACC__
typedef float4 tl_f4;
#define TL_FMA(a, b, c) fmaf(a, b, c)
#else
struct alignas(16) tl_f4 {
    float x, y, z, w;
};
// The emulator multiplies and adds: fmaf is a library call on a CPU built for plain
// x86-64, which made the emulated learner twice as slow; its tests compare within a
// tolerance either way.
#define TL_FMA(a, b, c) ((a) * (b) + (c))
#endif

typedef struct tl_args {
    int32_t rows;
    frl_dev_fused_mlp m[2];
    const float *params, *x;
    float *acts[2];
    const float *g[2];
    float *dx[2];
    float *part;
    int64_t lo, span; // the scratch's row: parameters [lo, lo + span)
} tl_args;

static __device__ float tl_at(const tl_f4 &v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

static __device__ int32_t round4(int32_t v)
{
    return (v + 3) & ~3;
}

// A layer's output inside acts (dev_net.c's layout: the layers' outputs in turn).
static __device__ float *tl_layer_out(const frl_dev_fused_mlp &m, float *acts, int32_t rows,
                                      int32_t l)
{
    int64_t off = 0;
    for (int32_t i = 0; i < l; i++)
        off += (int64_t)rows * m.width[i + 1];
    return acts + off;
}

// t[r][c] = src[(r0 + r) * w + c] for the tile's rows and c < w; zeros elsewhere.
static __device__ void tl_load_rows(float (*t)[TL_W], const float *src, int32_t w, int64_t r0,
                                    int32_t here)
{
    for (int i = (int)threadIdx.x; i < TL_ROWS * TL_W; i += TL_THREADS) {
        int r = i / TL_W, c = i % TL_W;
        t[r][c] = r < here && c < w ? src[(r0 + r) * w + c] : 0.0f;
    }
}

// ws[k][j] = wt[k * n + j] (transposed: ws[j][k]), zeros outside [k x n].
static __device__ void tl_load_weights(float (*ws)[TL_W], const float *wt, int32_t k, int32_t n,
                                       int transposed)
{
    for (int i = (int)threadIdx.x; i < TL_W * TL_W; i += TL_THREADS) {
        int a = i / TL_W, b = i % TL_W; // a: k, b: j (coalesced reads of a row of wt)
        float v = a < k && b < n ? wt[(int64_t)a * n + b] : 0.0f;
        if (transposed)
            ws[b][a] = v;
        else
            ws[a][b] = v;
    }
}

// A product's outputs in 4 x 4 blocks, one a thread: cg blocks across (ceil(columns /
// 4)), the threads from 0 on, so that the threads of a narrow product (an output layer of
// a few units, an input of a few features) are a few warps and the rest of the block
// skips it. Row block ty (0.. rows / 4 - 1), column block tx; the thread is idle when ty
// is past the rows.
typedef struct tl_map {
    int tx, ty;
} tl_map;

static __device__ tl_map tl_map_of(int32_t cols)
{
    int cg = (cols + 3) / 4;
    return tl_map{(int)threadIdx.x % cg, (int)threadIdx.x / cg};
}

// acc[i][j] = sum over s < depth of a[ty*4 + i][s] * b[s][tx*4 + j] (TL_ROWS rows of a).
// The sums are fused multiply-adds: the learner's products need not match the CPU's
// bits (its tests compare within a tolerance), and they halve the instructions.
static __device__ void tl_product(const float (*a)[TL_W], const float (*b)[TL_W], int32_t depth,
                                  tl_map t, float (&acc)[4][4])
{
    if (t.ty >= TL_ROWS / 4)
        return;
    for (int s = 0; s < depth; s += 4) {
        tl_f4 av[4], bv[4];
        UNROLL_ALL
        for (int i = 0; i < 4; i++) {
            av[i] = *(const tl_f4 *)&a[t.ty * 4 + i][s];
            bv[i] = *(const tl_f4 *)&b[s + i][t.tx * 4];
        }
        UNROLL_ALL
        for (int i = 0; i < 4; i++)
            UNROLL_ALL
            for (int q = 0; q < 4; q++)
                UNROLL_ALL
                for (int j = 0; j < 4; j++)
                    acc[i][j] = TL_FMA(tl_at(av[i], q), tl_at(bv[q], j), acc[i][j]);
    }
}

static __global__ void __launch_bounds__(TL_THREADS) mlp_fwd_tiles_k(tl_args a)
{
    __align__(16) __shared__ float t0[TL_ROWS][TL_W];
    __align__(16) __shared__ float t1[TL_ROWS][TL_W];
    __align__(16) __shared__ float ws[TL_W][TL_W];
    const frl_dev_fused_mlp &m = a.m[blockIdx.y];
    int64_t r0 = (int64_t)blockIdx.x * TL_ROWS;
    int32_t here = (int32_t)(a.rows - r0 < TL_ROWS ? a.rows - r0 : TL_ROWS);
    float(*in)[TL_W] = t0, (*out)[TL_W] = t1;
    tl_load_rows(in, a.x, m.width[0], r0, here);
    for (int32_t l = 0; l < m.layers; l++) {
        int32_t k = m.width[l], n = m.width[l + 1];
        tl_load_weights(ws, a.params + m.off_w[l], k, n, 0);
        __syncthreads();
        float acc[4][4] = {};
        tl_map t = tl_map_of(n);
        tl_product(in, ws, round4(k), t, acc);
        __syncthreads(); // in and ws read by all
        const float *b = a.params + m.off_b[l];
        float *y = tl_layer_out(m, a.acts[blockIdx.y], a.rows, l);
        for (int i = 0; t.ty < TL_ROWS / 4 && i < 4; i++)
            for (int j = 0; j < 4; j++) { // columns n .. round4(n) get zeros: the next depth
                int r = t.ty * 4 + i, c = t.tx * 4 + j;
                float v = c < n ? frl_dm_act(acc[i][j] + b[c], m.act[l]) : 0.0f;
                out[r][c] = v;
                if (r < here && c < n)
                    y[(r0 + r) * n + c] = v;
            }
        float(*swap)[TL_W] = in;
        in = out;
        out = swap;
    }
}

// The tile's gradient rows gt (dL/d(output of layer l)) become delta = gt * act'(y).
static __device__ void tl_delta(float (*gt)[TL_W], const float *y, int32_t n, int32_t act,
                                int64_t r0, int32_t here)
{
    for (int i = (int)threadIdx.x; act != 0 && i < TL_ROWS * TL_W; i += TL_THREADS) {
        int r = i / TL_W, c = i % TL_W;
        if (r < here && c < n)
            gt[r][c] = gt[r][c] * frl_dm_act_grad(y[(r0 + r) * n + c], act);
    }
}

// This tile's sums of layer l's weight gradient (in^T . delta) and bias (delta's column
// sums) into its scratch row p (indexed by parameter offset - lo).
static __device__ void tl_wsums(const float (*in)[TL_W], const float (*delta)[TL_W], int32_t k,
                                int32_t n, int64_t ow, int64_t ob, float *p)
{
    tl_map t = tl_map_of(n); // ty: blocks of 4 inputs
    int tx = t.tx, ty = t.ty;
    if (ty * 4 >= k)
        return;
    float acc[4][4] = {}, bacc[4] = {};
    for (int r = 0; r < TL_ROWS; r++) {
        tl_f4 xv = *(const tl_f4 *)&in[r][ty * 4], dv = *(const tl_f4 *)&delta[r][tx * 4];
        UNROLL_ALL
        for (int i = 0; i < 4; i++)
            UNROLL_ALL
            for (int j = 0; j < 4; j++)
                acc[i][j] = TL_FMA(tl_at(xv, i), tl_at(dv, j), acc[i][j]);
        UNROLL_ALL
        for (int j = 0; j < 4; j++)
            bacc[j] += tl_at(dv, j);
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (ty * 4 + i < k && tx * 4 + j < n)
                p[ow + (int64_t)(ty * 4 + i) * n + tx * 4 + j] = acc[i][j];
    for (int j = 0; ty == 0 && j < 4; j++)
        if (tx * 4 + j < n)
            p[ob + tx * 4 + j] = bacc[j];
}

static __global__ void __launch_bounds__(TL_THREADS) mlp_bwd_tiles_k(tl_args a)
{
    __align__(16) __shared__ float gt[TL_ROWS][TL_W];
    __align__(16) __shared__ float in[TL_ROWS][TL_W];
    __align__(16) __shared__ float wt[TL_W][TL_W]; // the layer's weights, transposed
    const frl_dev_fused_mlp &m = a.m[blockIdx.y];
    float *acts = a.acts[blockIdx.y], *dx = a.dx[blockIdx.y];
    int64_t r0 = (int64_t)blockIdx.x * TL_ROWS;
    int32_t here = (int32_t)(a.rows - r0 < TL_ROWS ? a.rows - r0 : TL_ROWS);
    float *p = a.part + (int64_t)blockIdx.x * a.span - a.lo;
    tl_load_rows(gt, a.g[blockIdx.y], m.width[m.layers], r0, here);
    for (int32_t l = m.layers - 1; l >= 0; l--) {
        int32_t k = m.width[l], n = m.width[l + 1];
        __syncthreads();
        tl_delta(gt, tl_layer_out(m, acts, a.rows, l), n, m.act[l], r0, here);
        tl_load_rows(in, l == 0 ? a.x : tl_layer_out(m, acts, a.rows, l - 1), k, r0, here);
        tl_load_weights(wt, a.params + m.off_w[l], k, n, 1);
        __syncthreads();
        tl_wsums(in, gt, k, n, (int64_t)m.off_w[l], (int64_t)m.off_b[l], p);
        if (l == 0 && !dx)
            break;
        float acc[4][4] = {}; // dL/d(in) = delta . wt^T, [rows x k]
        tl_map t = tl_map_of(k);
        tl_product(gt, wt, round4(n), t, acc);
        __syncthreads(); // gt read by all
        for (int i = 0; t.ty < TL_ROWS / 4 && i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = t.ty * 4 + i, c = t.tx * 4 + j;
                float v = c < k ? acc[i][j] : 0.0f;
                gt[r][c] = v;
                if (l == 0 && r < here && c < k)
                    dx[(r0 + r) * k + c] = v;
            }
    }
}

static int tl_fits(const frl_dev_fused_mlp *m)
{
    for (int32_t l = 0; l <= m->layers; l++)
        if (m->width[l] > TL_W || m->width[l] < 1)
            return 0;
    return m->layers >= 1;
}

static void mlp_forward_tiled(frl_dev *d, int32_t rows, int32_t nets, const frl_dev_fused_mlp *m,
                              const float *params, const float *x, float *const *acts)
{
    if (rows <= 0 || nets <= 0)
        return;
    enter(d);
    tl_args a;
    memset(&a, 0, sizeof a);
    a.rows = rows;
    a.params = params;
    a.x = x;
    for (int32_t i = 0; i < nets && i < 2; i++) {
        if (!tl_fits(&m[i])) {
            fail(d, "mlp_forward_tiled: a network wider than %d or without layers", TL_W);
            return;
        }
        a.m[i] = m[i];
        a.acts[i] = acts[i];
    }
    dim3 grid((unsigned)((rows + TL_ROWS - 1) / TL_ROWS), (unsigned)(nets < 2 ? nets : 2));
    mlp_fwd_tiles_k<<<grid, TL_THREADS, 0, d->stream>>>(a);
    launched(d, "mlp_forward_tiled");
}

// The parameters [lo, hi) the networks' layers span, which must be contiguous.
static int tl_span(const frl_dev_fused_mlp *m, int32_t nets, int64_t *lo, int64_t *hi)
{
    int64_t s[2], e[2];
    for (int32_t i = 0; i < nets; i++) {
        int32_t L = m[i].layers;
        s[i] = (int64_t)m[i].off_w[0];
        e[i] = (int64_t)m[i].off_b[L - 1] + m[i].width[L];
    }
    *lo = nets == 2 && s[1] < s[0] ? s[1] : s[0];
    *hi = nets == 2 && e[1] > e[0] ? e[1] : e[0];
    return nets == 1 || e[0] == s[1] || e[1] == s[0];
}

static void mlp_backward_tiled(frl_dev *d, int32_t rows, int32_t nets, const frl_dev_fused_mlp *m,
                               const float *params, const float *x, float *const *acts,
                               const float *const *g, float *const *dx, float *grads)
{
    if (nets <= 0)
        return;
    enter(d);
    tl_args a;
    memset(&a, 0, sizeof a);
    int64_t hi = 0;
    if (nets > 2 || !tl_fits(&m[0]) || (nets == 2 && !tl_fits(&m[1])) ||
        !tl_span(m, nets, &a.lo, &hi)) {
        fail(d, "mlp_backward_tiled: networks wider than %d, without layers or not side by side",
             TL_W);
        return;
    }
    rows = rows > 0 ? rows : 0;
    a.rows = rows;
    a.params = params;
    a.x = x;
    a.span = hi - a.lo;
    for (int32_t i = 0; i < nets; i++) {
        a.m[i] = m[i];
        a.acts[i] = acts[i];
        a.g[i] = g[i];
        a.dx[i] = dx ? dx[i] : NULL;
    }
    int64_t tiles = (rows + TL_ROWS - 1) / TL_ROWS;
    a.part = (float *)scratch(d, ((size_t)(tiles > 0 ? tiles : 1) * (size_t)a.span + 1) / 2);
    if (!a.part)
        return;
    if (tiles > 0) {
        mlp_bwd_tiles_k<<<dim3((unsigned)tiles, (unsigned)nets), TL_THREADS, 0, d->stream>>>(a);
        launched(d, "mlp_backward_tiled");
    }
    unsigned blocks = (unsigned)((a.span + WF_COLS - 1) / WF_COLS);
    wgrad_finish_k<<<blocks, THREADS, 0, d->stream>>>(tiles, (int32_t)a.span, 0, a.part,
                                                      (float *)NULL, grads + a.lo, 0);
    launched(d, "mlp_backward_tiled");
}

// A kernel rather than cublasSaxpy, whose int count would cap n below the op's int64.
static __global__ void axpy_k(int64_t n, float alpha, const float *x, float *y)
{
    FOR_EACH(i, n) {
        y[i] += alpha * x[i];
    }
}

static void axpy(frl_dev *d, int64_t n, float alpha, const float *x, float *y)
{
    if (n <= 0)
        return;
    enter(d);
    axpy_k<<<grid_for(n), THREADS, 0, d->stream>>>(n, alpha, x, y);
    launched(d, "axpy");
}

// ---- recurrent cores ----

static __global__ void rnn_cell_k(int32_t kind, int64_t total, int32_t h, const float *gx,
                                  const float *gh, const float *hp, const float *cp, float *hout,
                                  float *cout)
{
    FOR_EACH(i, total) {
        int64_t r = i / h;
        int32_t j = (int32_t)(i % h), g = kind == 2 ? 4 : 3;
        const float *x = gx + r * g * h, *y = gh + r * g * h;
        if (kind == 2)
            hout[i] = frl_dm_lstm_unit(h, j, x, y, cp[i], &cout[i]);
        else
            hout[i] = frl_dm_gru_unit(h, j, x, y, hp[i]);
    }
}

static void rnn_cell(frl_dev *d, int32_t kind, int32_t rows, int32_t h, const float *gx,
                     const float *gh, const float *hp, const float *cp, float *hout, float *cout)
{
    if (rows <= 0 || h <= 0)
        return;
    enter(d);
    int64_t total = (int64_t)rows * h;
    rnn_cell_k<<<grid_for(total), THREADS, 0, d->stream>>>(kind, total, h, gx, gh, hp, cp, hout,
                                                           cout);
    launched(d, "rnn_cell");
}

// ---- the learner ----

static __global__ void normalize_k(int64_t total, int32_t width, const float *x, const float *mean,
                                   const float *inv_std, float clip, float *y)
{
    FOR_EACH(i, total) {
        int64_t c = i % width;
        y[i] = frl_dm_normalize(x[i], mean[c], inv_std[c], clip);
    }
}

static void normalize(frl_dev *d, int32_t rows, int32_t width, const float *x, const float *mean,
                      const float *inv_std, float clip, float *y)
{
    if (rows <= 0 || width <= 0)
        return;
    enter(d);
    int64_t total = (int64_t)rows * width;
    normalize_k<<<grid_for(total), THREADS, 0, d->stream>>>(total, width, x, mean, inv_std, clip,
                                                            y);
    launched(d, "normalize");
}

// One thread per word of W bytes of the output.
template <typename W>
static __global__ void gather_k(int64_t total, int64_t words, const int32_t *idx, const W *src,
                                W *dst)
{
    FOR_EACH(i, total) {
        int64_t r = i / words, w = i % words;
        dst[i] = src[(int64_t)idx[r] * words + w];
    }
}

template <typename W>
static void gather_as(frl_dev *d, int32_t rows, size_t row_bytes, const int32_t *idx,
                      const void *src, void *dst)
{
    int64_t words = (int64_t)(row_bytes / sizeof(W)), total = (int64_t)rows * words;
    gather_k<W>
        <<<grid_for(total), THREADS, 0, d->stream>>>(total, words, idx, (const W *)src, (W *)dst);
}

// The widest word that divides the rows and the alignment of both buffers.
static void gather(frl_dev *d, int32_t rows, size_t row_bytes, const int32_t *idx, const void *src,
                   void *dst)
{
    if (rows <= 0 || row_bytes == 0)
        return;
    enter(d);
    size_t a = (size_t)(uintptr_t)src | (size_t)(uintptr_t)dst | row_bytes;
    if (a % 16 == 0)
        gather_as<uint4>(d, rows, row_bytes, idx, src, dst);
    else if (a % 4 == 0)
        gather_as<uint32_t>(d, rows, row_bytes, idx, src, dst);
    else
        gather_as<uint8_t>(d, rows, row_bytes, idx, src, dst);
    launched(d, "gather");
}

typedef struct field_args {
    int32_t fields;
    frl_dev_field f[FRL_DEV_GATHER_MAX];
} field_args;

// A thread a row of a field, the fields one after the other (neighbours copy neighbouring
// rows); in 4-byte words when the field's buffers and rows allow.
static __global__ void gather_fields_k(int64_t total, int32_t rows, const int32_t *idx,
                                       field_args a)
{
    FOR_EACH(i, total) {
        const frl_dev_field &f = a.f[i / rows];
        int64_t r = i % rows, s = idx[r];
        size_t b = f.row_bytes;
        if (((uintptr_t)f.src | (uintptr_t)f.dst | b) % 4 == 0) {
            size_t w = b / 4;
            const uint32_t *src = (const uint32_t *)f.src + (size_t)s * w;
            uint32_t *dst = (uint32_t *)f.dst + (size_t)r * w;
            for (size_t j = 0; j < w; j++)
                dst[j] = src[j];
        } else {
            const uint8_t *src = (const uint8_t *)f.src + (size_t)s * b;
            uint8_t *dst = (uint8_t *)f.dst + (size_t)r * b;
            for (size_t j = 0; j < b; j++)
                dst[j] = src[j];
        }
    }
}

static void gather_fields(frl_dev *d, int32_t rows, const int32_t *idx, int32_t fields,
                          const frl_dev_field *f)
{
    if (rows <= 0 || fields <= 0)
        return;
    enter(d);
    if (fields > FRL_DEV_GATHER_MAX) {
        fail(d, "gather_fields: %d fields (at most %d)", (int)fields, FRL_DEV_GATHER_MAX);
        return;
    }
    field_args a;
    memset(&a, 0, sizeof a); // every field's bytes, the unused ones too, go to the kernel
    a.fields = fields;
    for (int32_t i = 0; i < fields; i++) {
        if (f[i].row_bytes > FRL_DEV_GATHER_ROW) {
            fail(d, "gather_fields: rows of %zu bytes (at most %d)", f[i].row_bytes,
                 FRL_DEV_GATHER_ROW);
            return;
        }
        a.f[i] = f[i];
    }
    int64_t total = (int64_t)rows * fields;
    gather_fields_k<<<grid_for(total), THREADS, 0, d->stream>>>(total, rows, idx, a);
    launched(d, "gather_fields");
}

static __global__ void copy2d_k(int64_t total, int64_t words, const uint32_t *src, int64_t sp,
                                uint32_t *dst, int64_t dp)
{
    FOR_EACH(i, total) {
        int64_t r = i / words, w = i % words;
        dst[r * dp + w] = src[r * sp + w];
    }
}

// Word by word: the rows are a few features or a vector's floats, not worth a memcpy2D.
static void copy2d(frl_dev *d, int32_t rows, size_t row_bytes, void *dst, size_t dst_pitch,
                   const void *src, size_t src_pitch)
{
    int64_t words = (int64_t)(row_bytes / 4), total = (int64_t)rows * words;
    if (total <= 0)
        return;
    enter(d);
    copy2d_k<<<grid_for(total), THREADS, 0, d->stream>>>(
        total, words, (const uint32_t *)src, (int64_t)(src_pitch / 4), (uint32_t *)dst,
        (int64_t)(dst_pitch / 4));
    launched(d, "copy2d");
}

typedef struct adv_args {
    int32_t T, B;
    const float *reward, *value, *log_ratio;
    const uint8_t *term, *trunc, *reset;
    const float *bootstrap;
    float *adv, *ret;
    uint8_t *valid;
} adv_args;

// One thread per env column, which runs backwards in time.
static __global__ void advantages_k(adv_args a, frl_dm_adv_params p)
{
    FOR_EACH(b, a.B) {
        if (p.vtrace && a.log_ratio)
            frl_dm_vtrace_column(a.T, a.B, b, a.reward, a.value, a.log_ratio, a.term, a.trunc,
                                 a.reset, a.bootstrap[b], &p, a.adv, a.ret, a.valid);
        else
            frl_dm_gae_column(a.T, a.B, b, a.reward, a.value, a.term, a.trunc, a.reset,
                              a.bootstrap[b], &p, a.adv, a.ret, a.valid);
    }
}

static void advantages(frl_dev *d, int32_t T, int32_t B, const float *reward, const float *value,
                       const float *log_ratio, const uint8_t *term, const uint8_t *trunc,
                       const uint8_t *reset, const float *bootstrap, const frl_dm_adv_params *p,
                       float *adv, float *ret, uint8_t *valid)
{
    if (T <= 0 || B <= 0)
        return;
    enter(d);
    adv_args a = {T, B, reward, value, log_ratio, term, trunc, reset, bootstrap, adv, ret, valid};
    advantages_k<<<grid_for(B), THREADS, 0, d->stream>>>(a, *p);
    launched(d, "advantages");
}

static __global__ void log_ratio_k(int32_t rows, int32_t n, int32_t discrete, const float *z,
                                   const void *actions, const float *log_std, const float *old_lp,
                                   float *out)
{
    FOR_EACH(r, rows) {
        double lp = frl_dm_logp(z + r * n, n, discrete, (const int32_t *)actions + r,
                                (const float *)actions + r * n, log_std);
        out[r] = (float)(lp - old_lp[r]);
    }
}

static void log_ratio(frl_dev *d, int32_t rows, int32_t n, int32_t discrete, const float *z,
                      const void *actions, const float *log_std, const float *old_lp, float *out)
{
    if (rows <= 0)
        return;
    enter(d);
    log_ratio_k<<<grid_for(rows), THREADS, 0, d->stream>>>(rows, n, discrete, z, actions, log_std,
                                                           old_lp, out);
    launched(d, "log_ratio");
}

// One block: a minibatch is small enough, and one block's fixed tree makes the result
// independent of the device. Two passes over the rows, as on the host: the mean, then
// the squared deviations from it.
static __global__ void __launch_bounds__(MOMENT_THREADS)
    moments_k(int32_t rows, const float *adv, const uint8_t *valid, int32_t norm_adv, float *out)
{
    __shared__ double sh[MOMENT_THREADS];
    double s = 0, c = 0, ss = 0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
        if (valid[r]) {
            s += adv[r];
            c += 1;
        }
    s = block_sum(s, sh);
    c = block_sum(c, sh);
    double mean = c > 0 ? s / c : 0;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
        if (valid[r])
            ss += (adv[r] - mean) * (adv[r] - mean);
    ss = block_sum(ss, sh);
    if (threadIdx.x != 0)
        return;
    double sd = c > 1 ? sqrt(ss / (c - 1)) : 0;
    int on = norm_adv && c > 0;
    out[0] = on ? (float)mean : 0.0f;
    out[1] = on ? (float)(1.0 / (sd + 1e-8)) : 1.0f;
    out[2] = c > 0 ? (float)(1.0 / c) : 0.0f;
    out[3] = (float)c;
}

static void moments(frl_dev *d, int32_t rows, const float *adv, const uint8_t *valid,
                    int32_t norm_adv, float *out)
{
    enter(d);
    moments_k<<<1, MOMENT_THREADS, 0, d->stream>>>(rows > 0 ? rows : 0, adv, valid, norm_adv, out);
    launched(d, "moments");
}

typedef struct loss_args {
    int32_t rows, n, discrete;
    const float *z, *value;
    const void *actions;
    const float *old_lp, *log_ratio, *adv, *ret, *old_v;
    const uint8_t *valid;
    const float *log_std, *moments;
    float *d_z, *d_value, *d_log_std, *stats;
} loss_args;

static __device__ void loss_zero_row(const loss_args &a, int64_t r)
{
    for (int64_t i = 0; i < a.n; i++)
        a.d_z[r * a.n + i] = 0.0f;
    a.d_value[r] = 0.0f;
    if (a.d_log_std)
        for (int64_t i = 0; i < a.n; i++)
            a.d_log_std[r * a.n + i] = 0.0f;
    for (int64_t i = 0; i < FRL_DM_STATS; i++)
        a.stats[r * FRL_DM_STATS + i] = 0.0f;
}

static __device__ void loss_row(const loss_args &a, const frl_dm_loss *s, int64_t r)
{
    const float *mo = a.moments;
    frl_dm_row row;
    row.z = a.z + r * a.n;
    row.value = a.value[r];
    row.old_v = a.old_v[r];
    row.old_lp = a.old_lp[r];
    row.adv = (float)((a.adv[r] - mo[0]) * mo[1]);
    row.ret = a.ret[r];
    row.a_int = (const int32_t *)a.actions + r;
    row.a_box = (const float *)a.actions + r * a.n;
    row.log_std = a.log_std;
    if (s->decoupled)
        frl_dm_decouple(a.log_ratio[r], s->rho_bar, a.old_lp[r], row.adv, &row.old_lp, &row.adv);
    float unused; // discrete rows write no d_log_std, which may then be NULL
    frl_dm_row_grad(s, &row, a.n, a.discrete, mo[2], a.d_z + r * a.n, a.d_value + r,
                    a.d_log_std ? a.d_log_std + r * a.n : &unused, a.stats + r * FRL_DM_STATS);
}

static __global__ void loss_rows_k(loss_args a, frl_dm_loss s)
{
    FOR_EACH(r, a.rows) {
        if (a.valid[r])
            loss_row(a, &s, r);
        else
            loss_zero_row(a, r);
    }
}

static void loss_rows(frl_dev *d, int32_t rows, int32_t n, int32_t discrete, const frl_dm_loss *s,
                      const float *z, const float *value, const void *actions, const float *old_lp,
                      const float *log_ratio, const float *adv, const float *ret,
                      const float *old_v, const uint8_t *valid,
                      const float *log_std, const float *mo, float *d_z, float *d_value,
                      float *d_log_std, float *stats)
{
    if (rows <= 0)
        return;
    enter(d);
    // A box row writes n gradients of its log-stds: without a buffer it has nowhere to go.
    if (!discrete && !d_log_std) {
        fail(d, "loss_rows: a Gaussian head needs d_log_std");
        return;
    }
    if (s->decoupled && !log_ratio) {
        fail(d, "loss_rows: decoupled PPO needs the rows' log-ratios");
        return;
    }
    loss_args a = {rows,  n,   discrete, z,     value,   actions,   old_lp, log_ratio, adv,
                   ret,   old_v, valid,  log_std, mo,    d_z,       d_value, d_log_std, stats};
    loss_rows_k<<<grid_for(rows), THREADS, 0, d->stream>>>(a, *s);
    launched(d, "loss_rows");
}

// The clipping factor, once per block (frl_clip_scale of lib/nn/optim.c): a thread reads
// the norm the previous op left on the device, so the host never waits for it.
static __global__ void adam_k(int64_t n, float *p, const float *g, float *m, float *v,
                              const frl_dev_adam *cp, const double *sumsq)
{
    __shared__ float gscale;
    const frl_dev_adam c = *cp;
    if (threadIdx.x == 0) {
        double norm = sqrt(*sumsq);
        gscale = c.max_norm > 0 && norm > c.max_norm ? (float)(c.max_norm / (norm + 1e-6)) : 1.0f;
    }
    __syncthreads();
    FOR_EACH(i, n) {
        frl_dm_adam(p + i, g[i], m + i, v + i, gscale, c.b1, c.b2, c.step, c.rbc2, c.eps);
    }
}

static void adam(frl_dev *d, int64_t n, float *p, const float *g, float *m, float *v,
                 const frl_dev_adam *c, const double *sumsq)
{
    if (n <= 0)
        return;
    enter(d);
    adam_k<<<grid_for(n), THREADS, 0, d->stream>>>(n, p, g, m, v, c, sumsq);
    launched(d, "adam");
}

// ---- acting at small batches ----

// The fused forward runs a row on a cluster of CLUSTER blocks (Hopper's thread-block
// clusters): each block takes a slice of every layer's columns, so the layer's weights
// are read by CLUSTER multiprocessors rather than one, and hands its outputs to every
// block of the cluster through distributed shared memory; a cluster barrier ends each
// layer. A row's forward at batch 1 is bound by how fast the weights reach the
// multiprocessors, and the GPU's clocks stay low while it idles between such calls, so
// the one-block kernel took four times as long. Before Hopper, and in the emulator
// (which runs blocks one after another), a cluster is one block.
template <int CL> static __device__ unsigned rank_in_row()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (CL > 1)
        return cooperative_groups::this_cluster().block_rank();
#endif
    return 0;
}

// A barrier of the row's blocks (and so of this block's threads too).
template <int CL> static __device__ void row_sync()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (CL > 1) {
        cooperative_groups::this_cluster().sync();
        return;
    }
#endif
    __syncthreads();
}

// Block r's copy of the shared array p (this block's own for a cluster of one).
template <int CL> static __device__ float *row_smem(float *p, unsigned r)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (CL > 1)
        return cooperative_groups::this_cluster().map_shared_rank(p, r);
#endif
    (void)r;
    return p;
}

// sum over i = s, s + S, ... < k of in[i] wt[i][j]. Measured with ncu on an H200, the
// one-row forward is bound by each warp's instruction stream, not by memory: so the
// FUSED_LOADS weights of a round are loaded together before any is used, the column's
// pointer steps instead of an index being multiplied out per load, and four fused
// multiply-adds chains run side by side (a single chain waits on each add). The order
// of the sum is fixed, so a result repeats bit for bit; it is not the CPU's order, nor
// its rounding (fmaf), which the tests' tolerance allows for.
static constexpr int FUSED_LOADS = 32;

static __device__ float slice_dot(const float *in, int32_t k, int32_t n, const float *wt,
                                  int32_t j, int s, int S)
{
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int64_t step = (int64_t)S * n;
    const float *col = wt + (int64_t)s * n + j;
    for (int32_t i0 = s; i0 < k; i0 += FUSED_LOADS * S, col += FUSED_LOADS * step) {
        float w[FUSED_LOADS];
        UNROLL_ALL
        for (int q = 0; q < FUSED_LOADS; q++)
            w[q] = i0 + q * S < k ? col[q * step] : 0.0f;
        UNROLL_ALL
        for (int q = 0; q < FUSED_LOADS; q++)
            acc[q % 4] = fmaf(i0 + q * S < k ? in[i0 + q * S] : 0.0f, w[q], acc[q % 4]);
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// The sum over the S slices of thread t's column (t = s * C + c), valid in threads
// t < C, in a fixed order. When C divides the warp, a warp's slices of a column meet
// by shuffles and the warps' sums through `part`, with one barrier; otherwise a tree
// through `part`, a barrier a level.
static __device__ float sum_slices(float v, int C, int S, float *part)
{
    const int t = (int)threadIdx.x;
    if (C <= 32 && 32 % C == 0) {
        for (int off = C; off < 32; off *= 2)
            v += __shfl_xor_sync(0xffffffffu, v, off);
        const int warps = FUSED_THREADS / 32;
        if (t % 32 < C)
            part[(t / 32) * C + t % 32] = v;
        __syncthreads();
        float sum = 0.0f;
        if (t < C)
            for (int w = 0; w < warps; w++)
                sum += part[w * C + t];
        __syncthreads(); // part is reused by the next columns
        return sum;
    }
    const int s = t / C;
    part[t] = v;
    __syncthreads();
    for (int h = 1; h < S; h *= 2) {
        if ((s & (2 * h - 1)) == 0 && s + h < S) // h is a power of two: s % 2h == 0
            part[t] += part[t + h * C];
        __syncthreads();
    }
    const float sum = part[t];
    __syncthreads();
    return sum;
}

// This block's columns of out = act(b + in . wt): the block's threads take C columns at a
// time and split the inputs of each into S = FUSED_THREADS / C strided slices, so a
// narrow slice (the head) still keeps every thread loading, and a warp's loads of one
// input row of wt are adjacent. The slices' sums meet in a fixed tree: a result repeats
// bit for bit. Each output goes to every block's `out` (shared), or to gout (global or
// mapped host memory) for a network's last layer.
template <int CL>
static __device__ void fused_layer(const float *in, int32_t k, int32_t n, const float *wt,
                                   const float *b, int32_t act, float *out, float *gout,
                                   float *part)
{
    const int t = (int)threadIdx.x;
    const int32_t per = (n + CL - 1) / CL, c0 = (int32_t)rank_in_row<CL>() * per;
    const int32_t c1 = n < c0 + per ? n : c0 + per, w = c1 - c0;
    const int C = w >= FUSED_THREADS ? FUSED_THREADS : (w > 0 ? w : 1), S = FUSED_THREADS / C;
    const int s = t / C, c = t % C;
    for (int32_t j0 = c0; j0 < c1; j0 += C) {
        const int32_t j = j0 + c;
        const float acc = s < S && j < c1 ? slice_dot(in, k, n, wt, j, s, S) : 0.0f;
        const float sum = sum_slices(acc, C, S, part);
        if (t < C && j < c1) {
            const float v = frl_dm_act(b[j] + sum, act);
            if (gout)
                gout[j] = v;
            else
                for (unsigned r = 0; r < (unsigned)CL; r++)
                    row_smem<CL>(out, r)[j] = v;
        }
    }
    row_sync<CL>(); // every block's `out` is whole before anyone reads it
}

// The MLP from buffer `in` of the three, writing its layers into the other two in turn
// (in itself is kept: the critic reads the trunk's output after the actor), its last
// layer into gout when given. Returns the buffer that holds the output.
template <int CL>
static __device__ int fused_mlp(const frl_dev_fused_mlp &m, const float *params,
                                float (*buf)[FRL_DEV_FUSED_MAX_WIDTH], int in, float *gout,
                                float *part)
{
    int cur = in;
    for (int32_t l = 0; l < m.layers; l++) {
        const int next = (in + 1 + (l & 1)) % 3; // no array: it would live in local memory
        fused_layer<CL>(buf[cur], m.width[l], m.width[l + 1], params + m.off_w[l],
                        params + m.off_b[l], m.act[l], buf[next],
                        l + 1 == m.layers ? gout : nullptr, part);
        cur = next;
    }
    return cur;
}

template <int CL>
static __global__ void __launch_bounds__(FUSED_THREADS)
forward_fused_k(frl_dev_fused p, const float *params, const float *obs, float *out, float *value)
{
    __shared__ float buf[3][FRL_DEV_FUSED_MAX_WIDTH];
    __shared__ float part[FUSED_THREADS];
    const int64_t r = blockIdx.x / CL;
    const float *x = obs + r * p.obs_w;
    for (int32_t i = (int32_t)threadIdx.x; i < p.obs_w; i += FUSED_THREADS)
        buf[0][i] = p.norm_mean ? frl_dm_normalize(x[i], p.norm_mean[i], p.norm_inv_std[i], p.clip)
                                : x[i];
    row_sync<CL>(); // also: every block of the cluster runs before another writes to it
    if (p.members) // a population's row: its member's parameter row
        params += (int64_t)p.members[r] * p.member_stride;
    const int h = fused_mlp<CL>(p.trunk, params, buf, 0, nullptr, part);
    const int32_t w = p.actor.width[p.actor.layers];
    fused_mlp<CL>(p.actor, params, buf, h, out + r * w, part);
    if (value)
        fused_mlp<CL>(p.critic, params, buf, h, value + r, part);
}

#ifdef __CUDACC__
// rows clusters of CLUSTER blocks (launch attributes: the one kernel also runs unclustered).
static void launch_clustered(frl_dev *d, int32_t rows, const frl_dev_fused *p,
                             const float *params, const float *obs, float *out, float *value)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CLUSTER;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3((unsigned)rows * CLUSTER);
    cfg.blockDim = dim3(FUSED_THREADS);
    cfg.stream = d->stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    check_rt(d, cudaLaunchKernelEx(&cfg, forward_fused_k<CLUSTER>, *p, params, obs, out, value),
             "cudaLaunchKernelEx", "forward_fused");
}
#endif

static void forward_fused(frl_dev *d, int32_t rows, const frl_dev_fused *p, const float *params,
                          const float *obs, float *out, float *value)
{
    if (rows <= 0)
        return;
    enter(d);
#ifdef __CUDACC__
    if (d->clusters) {
        launch_clustered(d, rows, p, params, obs, out, value);
        return;
    }
#endif
    forward_fused_k<1><<<(unsigned)rows, FUSED_THREADS, 0, d->stream>>>(*p, params, obs, out,
                                                                       value);
    launched(d, "forward_fused");
}

// ---- runs: a block takes up to RUN rows that share their networks ----

// A block keeps its run's activations in shared memory, transposed ([unit][row]), and
// each thread owns a column and PER of the rows: a weight is loaded once a run, not once
// a row as in the fused kernel, and a thread's PER activations of one unit are adjacent,
// so they come in vector loads that every thread of the warp shares. A narrow layer (the
// head) splits its rows among groups of threads instead, so that the block still has
// work for all its threads. Sums run over the inputs in order, each in one chain (its
// rounding differs from the CPU's blocked sums within the tests' tolerance).
static constexpr int RUN_THREADS = 256;
static constexpr int RUN = FRL_DEV_RUN_ROWS;
// Iterations of a column's loop unrolled, so that their weight loads are in flight
// together: more takes more registers than two blocks a multiprocessor leave (ptxas:
// 128 registers, no spills, at 4; 8 spills).
#ifdef __CUDACC__
#define UNROLL_RUN _Pragma("unroll 4")
#else
#define UNROLL_RUN
#endif

template <int PER> static __device__ void run_rows(const float *a, float (&x)[PER])
{
#ifdef __CUDACC__
    if constexpr (PER % 4 == 0) {
        UNROLL_ALL
        for (int q = 0; q < PER / 4; q++) {
            const float4 v = reinterpret_cast<const float4 *>(a)[q];
            x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
        }
    } else
#endif
    {
        UNROLL_ALL
        for (int u = 0; u < PER; u++)
            x[u] = a[u];
    }
}

// Column j of rows g * PER ... of out = act(b + in . wt) for one layer: into the next
// buffer ([unit][row]) or, for a network's last layer, into gout (row-major, rows of n,
// only the run's `rows` first rows).
template <int PER>
static __device__ void run_column(const float *in, int32_t k, int32_t n, const float *wt,
                                  float bias, int32_t act, int32_t j, int g, float *out,
                                  float *gout, int rows)
{
    float acc[PER];
    UNROLL_ALL
    for (int u = 0; u < PER; u++)
        acc[u] = 0.0f;
    const float *col = wt + j;
    UNROLL_RUN
    for (int32_t i = 0; i < k; i++) {
        const float w = col[(int64_t)i * n];
        float x[PER];
        run_rows<PER>(in + (int64_t)i * RUN + g * PER, x);
        UNROLL_ALL
        for (int u = 0; u < PER; u++)
            acc[u] = fmaf(x[u], w, acc[u]);
    }
    UNROLL_ALL
    for (int u = 0; u < PER; u++) {
        const int r = g * PER + u;
        const float v = frl_dm_act(bias + acc[u], act);
        if (!gout)
            out[j * RUN + r] = v;
        else if (r < rows)
            gout[(int64_t)r * n + j] = v;
    }
}

// One layer for the whole run: C = min(n, threads) columns at a time, the run's rows
// (rounded up to a power of two, rp: a short run does not pay for RUN rows) in G groups
// of PER (G the largest power of two <= threads / C, at most rp).
static __device__ void run_layer(const float *in, int32_t k, int32_t n, const float *wt,
                                 const float *b, int32_t act, float *out, float *gout,
                                 int rows)
{
    const int t = (int)threadIdx.x;
    const int C = n < RUN_THREADS ? (int)n : RUN_THREADS;
    int rp = 1, G = 1;
    while (rp < rows)
        rp *= 2;
    while (G < rp && 2 * G * C <= RUN_THREADS)
        G *= 2;
    const int g = t / C;
    if (g < G)
        for (int32_t j = t % C; j < n; j += C) {
            switch (rp / G) {
            case 16: run_column<16>(in, k, n, wt, b[j], act, j, g, out, gout, rows); break;
            case 8: run_column<8>(in, k, n, wt, b[j], act, j, g, out, gout, rows); break;
            case 4: run_column<4>(in, k, n, wt, b[j], act, j, g, out, gout, rows); break;
            case 2: run_column<2>(in, k, n, wt, b[j], act, j, g, out, gout, rows); break;
            default: run_column<1>(in, k, n, wt, b[j], act, j, g, out, gout, rows); break;
            }
        }
    __syncthreads(); // the next layer reads all of out
}

// An MLP from buffer `in` of the three, its layers into the other two in turn (in is
// kept: the critic reads the trunk's output after the actor), its last into gout when
// given. Returns the buffer holding the output.
static __device__ int run_mlp(const frl_dev_fused_mlp &m, const float *w,
                              float (*buf)[FRL_DEV_RUN_MAX_WIDTH * RUN], int in, float *gout,
                              int rows)
{
    int cur = in;
    for (int32_t l = 0; l < m.layers; l++) {
        const int next = (in + 1 + (l & 1)) % 3;
        run_layer(buf[cur], m.width[l], m.width[l + 1], w + m.off_w[l], w + m.off_b[l],
                  m.act[l], buf[next], l + 1 == m.layers ? gout : nullptr, rows);
        cur = next;
    }
    return cur;
}

static __global__ void __launch_bounds__(RUN_THREADS, 2)
runs_k(frl_dev_fused p, const float *params, int32_t total, const int32_t *start,
       const int32_t *mem, const float *obs, float *out, float *value)
{
    __align__(16) __shared__ float buf[3][FRL_DEV_RUN_MAX_WIDTH * RUN];
    int32_t r0 = (int32_t)blockIdx.x * RUN, rows = total - r0 < RUN ? total - r0 : RUN;
    const float *w = params;
    if (start) {
        r0 = start[blockIdx.x];
        rows = start[blockIdx.x + 1] - r0;
        w += (int64_t)mem[blockIdx.x] * p.member_stride;
    }
    // rows past the run's are zeros, so that their (unwritten) sums stay finite
    for (int32_t e = (int32_t)threadIdx.x; e < RUN * p.obs_w; e += RUN_THREADS) {
        const int32_t r = e / p.obs_w, c = e % p.obs_w;
        float x = 0.0f;
        if (r < rows) {
            x = obs[(int64_t)(r0 + r) * p.obs_w + c];
            if (p.norm_mean)
                x = frl_dm_normalize(x, p.norm_mean[c], p.norm_inv_std[c], p.clip);
        }
        buf[0][c * RUN + r] = x;
    }
    __syncthreads();
    const int h = run_mlp(p.trunk, w, buf, 0, nullptr, rows);
    const int32_t ow = p.actor.width[p.actor.layers];
    run_mlp(p.actor, w, buf, h, out + (int64_t)r0 * ow, rows);
    if (value)
        run_mlp(p.critic, w, buf, h, value + r0, rows);
}

static void forward_runs(frl_dev *d, int32_t rows, int32_t runs, const frl_dev_fused *p,
                         const float *params, const int32_t *start, const int32_t *member,
                         const float *obs, float *out, float *value)
{
    if (!start)
        runs = (rows + RUN - 1) / RUN;
    if (runs <= 0)
        return;
    enter(d);
    runs_k<<<(unsigned)runs, RUN_THREADS, 0, d->stream>>>(*p, params, rows, start, member, obs,
                                                         out, value);
    launched(d, "forward_runs");
}

static int32_t fused_blocks(frl_dev *d)
{
    return d->clusters ? CLUSTER : 1;
}

// ---- graphs ----

// Thread-local capture: only this thread's calls that cannot be captured break it, so
// another role's thread may allocate meanwhile.
static void *graph_capture(frl_dev *d, void (*enqueue)(void *), void *arg, char *err,
                           size_t err_size)
{
    enter(d);
    if (d->failed) {
        snprintf(err, err_size, "graph_capture: a failure is pending: %s", d->err);
        return NULL;
    }
    cudaError_t e = cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeThreadLocal);
    cudaGraph_t g = NULL;
    if (e == cudaSuccess) {
        enqueue(arg);
        e = cudaStreamEndCapture(d->stream, &g);
    }
    cudaGraphExec_t x = NULL;
    if (e == cudaSuccess && !d->failed && g)
        e = cudaGraphInstantiate(&x, g, 0);
    if (g)
        cudaGraphDestroy(g);
    if (e == cudaSuccess && !d->failed && x)
        return (void *)x;
    // Nothing ran: the failure belongs to the capture alone, not to the stream.
    snprintf(err, err_size, "graph_capture: %s", d->failed ? d->err : cudaGetErrorString(e));
    cudaGetLastError();
    d->failed = 0;
    d->err[0] = '\0';
    if (x)
        cudaGraphExecDestroy(x);
    return NULL;
}

static void graph_launch(frl_dev *d, void *g)
{
    enter(d);
    check_rt(d, cudaGraphLaunch((cudaGraphExec_t)g, d->stream), "cudaGraphLaunch", "graph_launch");
}

// A launch still running frees the graph once it finishes (the runtime's promise).
static void graph_destroy(frl_dev *d, void *g)
{
    if (!g)
        return;
    enter(d);
    check_rt(d, cudaGraphExecDestroy((cudaGraphExec_t)g), "cudaGraphExecDestroy",
             "graph_destroy");
}

// ---- ordering between streams ----

static void *event_create(frl_dev *d)
{
    cudaEvent_t e = NULL;
    enter(d);
    // Timing would make every record a timestamp write; only the ordering is wanted.
    if (check_rt(d, cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                 "cudaEventCreateWithFlags", "event_create"))
        return NULL;
    return (void *)e;
}

// A record not yet reached by its stream is released by the driver once it is.
static void event_destroy(frl_dev *d, void *ev)
{
    if (!ev)
        return;
    enter(d);
    check_rt(d, cudaEventDestroy((cudaEvent_t)ev), "cudaEventDestroy", "event_destroy");
}

static void record(frl_dev *d, void *ev)
{
    enter(d);
    check_rt(d, cudaEventRecord((cudaEvent_t)ev, d->stream), "cudaEventRecord", "record");
}

static void wait_event(frl_dev *d, void *ev)
{
    enter(d);
    check_rt(d, cudaStreamWaitEvent(d->stream, (cudaEvent_t)ev, 0), "cudaStreamWaitEvent",
             "wait");
}

static int check(frl_dev *d, char *err, size_t err_size)
{
    if (!d->failed)
        return 0;
    if (err && err_size)
        snprintf(err, err_size, "%s", d->err);
    return 1;
}

// ---- a pixel encoder ----

// A convolution's shape, by value for the kernels.
struct conv_geom {
    int32_t in_h, in_w, in_c, out_h, out_w, kh, kw, stride, pad, patch;
};

static conv_geom geom_of(const frl_conv2d *c)
{
    return conv_geom{c->in_h, c->in_w, c->in_c, c->out_h, c->out_w,
                     c->kh,   c->kw,   c->stride, c->pad, c->patch};
}

// x's element i is (row, pixel, frame j, channel): its byte is frame j's pixel channel.
static __global__ void scale_images_k(int64_t total, int32_t pixels, int32_t c, int32_t frames,
                                      int64_t row_bytes, const uint8_t *img, float *x)
{
    const float s = 1.0f / 255.0f;
    const int32_t kc = frames * c;
    FOR_EACH(i, total) {
        const int64_t rp = i / kc;
        const int32_t e = (int32_t)(i % kc), j = e / c, ch = e % c;
        const int64_t r = rp / pixels;
        const int32_t px = (int32_t)(rp % pixels);
        x[i] = (float)img[r * row_bytes + ((int64_t)j * pixels + px) * c + ch] * s;
    }
}

static void scale_images(frl_dev *d, const frl_cnn *n, int32_t rows, const uint8_t *images,
                         size_t row_bytes, float *x)
{
    const int32_t pixels = n->in_h * n->in_w, c = n->in_c / n->frames;
    const int64_t total = (int64_t)rows * pixels * n->in_c;
    if (total <= 0)
        return;
    enter(d);
    scale_images_k<<<grid_for(total), THREADS, 0, d->stream>>>(total, pixels, c, n->frames,
                                                               (int64_t)row_bytes, images, x);
    launched(d, "scale_images");
}

// Patch element i: position (image, oy, ox), then (ki, kj, channel), channel fastest.
static __global__ void im2col_k(int64_t total, conv_geom g, const float *x, float *patches)
{
    FOR_EACH(i, total) {
        const int64_t pos = i / g.patch;
        const int32_t e = (int32_t)(i % g.patch), ch = e % g.in_c;
        const int32_t kj = (e / g.in_c) % g.kw, ki = e / (g.in_c * g.kw);
        const int32_t ox = (int32_t)(pos % g.out_w);
        const int64_t t = pos / g.out_w;
        const int32_t oy = (int32_t)(t % g.out_h);
        const int64_t b = t / g.out_h;
        const int32_t iy = oy * g.stride - g.pad + ki, ix = ox * g.stride - g.pad + kj;
        const bool in = iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w;
        patches[i] = in ? x[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ch] : 0.0f;
    }
}

static void im2col(frl_dev *d, const frl_conv2d *c, int32_t batch, const float *x,
                   float *patches)
{
    const int64_t total = (int64_t)batch * c->out_h * c->out_w * c->patch;
    if (total <= 0)
        return;
    enter(d);
    im2col_k<<<grid_for(total), THREADS, 0, d->stream>>>(total, geom_of(c), x, patches);
    launched(d, "im2col");
}

// A thread an input value: it gathers the patch entries that read it (kernel rows, then
// columns), so no two threads write one value and the sum's order is fixed.
static __global__ void col2im_k(int64_t total, conv_geom g, const float *dp, float *dx)
{
    FOR_EACH(i, total) {
        const int32_t ch = (int32_t)(i % g.in_c);
        int64_t t = i / g.in_c;
        const int32_t ix = (int32_t)(t % g.in_w);
        t /= g.in_w;
        const int32_t iy = (int32_t)(t % g.in_h);
        const int64_t b = t / g.in_h;
        float sum = 0.0f;
        for (int32_t ki = 0; ki < g.kh; ki++) {
            const int32_t y = iy + g.pad - ki;
            if (y < 0 || y % g.stride || y / g.stride >= g.out_h)
                continue;
            for (int32_t kj = 0; kj < g.kw; kj++) {
                const int32_t xx = ix + g.pad - kj;
                if (xx < 0 || xx % g.stride || xx / g.stride >= g.out_w)
                    continue;
                const int64_t pos = (b * g.out_h + y / g.stride) * g.out_w + xx / g.stride;
                sum += dp[pos * g.patch + (ki * g.kw + kj) * g.in_c + ch];
            }
        }
        dx[i] = sum;
    }
}

static void col2im(frl_dev *d, const frl_conv2d *c, int32_t batch, const float *dpatches,
                   float *dx)
{
    const int64_t total = (int64_t)batch * c->in_h * c->in_w * c->in_c;
    if (total <= 0)
        return;
    enter(d);
    col2im_k<<<grid_for(total), THREADS, 0, d->stream>>>(total, geom_of(c), dpatches, dx);
    launched(d, "col2im");
}

// Positional (C++17 has no designated initializers): the order of dev_ops.h.
extern "C" const frl_dev_ops frl_dev_ops_cuda = {
    "cuda",
    probe,
    describe,
    open_dev,
    close_dev,
    alloc_mem,
    release_mem,
    alloc_pinned,
    release_pinned,
    put,
    get,
    copy,
    zero,
    sync_dev,
    linear_fwd,
    linear_bwd_input,
    linear_bwd_weight,
    act_bwd,
    mlp_forward_tiled,
    mlp_backward_tiled,
    axpy,
    wgrad,
    normalize,
    gather,
    gather_fields,
    advantages,
    log_ratio,
    moments,
    loss_rows,
    col_sums,
    sum_squares,
    adam,
    event_create,
    event_destroy,
    record,
    wait_event,
    check,
    forward_fused,
    fused_blocks,
    mapped,
    forward_runs,
    graph_capture,
    graph_launch,
    graph_destroy,
    scale_images,
    im2col,
    col2im,
    copy2d,
    rnn_cell,
};
