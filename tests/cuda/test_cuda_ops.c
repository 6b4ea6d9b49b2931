/* The CUDA device ops (lib/cuda/ops_cuda.cu) against the host ops (tests/cuda/ops_host.c),
 * op by op, in the manner of checkasm: fresh random inputs of several sizes (awkward ones
 * included), every output poisoned with NaN bytes first so that an element left unwritten
 * fails, then the device's result compared with the host's within a bound that the op's
 * arithmetic justifies. Products are bounded by tol * sum_k |a_ik b_kj| (the scale of
 * their rounding), element-wise ops relative to their result, integers and bytes exactly.
 *
 * Prints the seed (FRL_TEST_SEED=n repeats a run) and one line per op and case; an
 * argument runs only the ops whose name contains it. Exit 0: all passed; 1: a failure;
 * 77 (meson's skip): no usable CUDA device. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/dev_ops.h"
#include "ops_host.h"
#include "../test_sanitizer.h"

static const frl_dev_ops *const G = &frl_dev_ops_cuda;
static const frl_dev_ops *const H = &frl_dev_ops_host;

/* gdev: fp32 products; gtf32: TensorFloat-32 products; hdev: the reference. */
static frl_dev *gdev, *gtf32, *hdev;
static int failures;
static uint64_t rng_state;

/* Products: |d| <= tol * sum_k |a_ik b_kj| + ATOL_PRODUCT. TF32 keeps 10 bits of each
 * factor's mantissa: a term a b is then off by at most 2 * 2^-11 (about 1e-3) of |a b| when
 * the factors are rounded to nearest, 2 * 2^-10 when truncated (about 1e-3 on average):
 * 2e-3 holds for either. */
#define TOL_FP32 1e-5
#define TOL_TF32 2e-3
#define ATOL_PRODUCT 1e-6
/* An activation's own rounding, relative to its output. */
#define TOL_ACT 1e-6

/* ---- random inputs ---- */

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uni(double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_u64() >> 11) / 9007199254740992.0;
}

/* ---- buffers, all freed at the end of each case ---- */

enum { MAX_BUFS = 256 };
static void *host_bufs[MAX_BUFS], *dev_bufs[MAX_BUFS];
static int n_host, n_dev;

static void die(const char *what)
{
    fprintf(stderr, "test_cuda_ops: %s\n", what);
    exit(1);
}

static void *hmem(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p || n_host == MAX_BUFS)
        die("out of host memory (or buffers)");
    return host_bufs[n_host++] = p;
}

static void *dmem(size_t bytes)
{
    void *p = G->alloc(gdev, bytes);
    if (!p || n_dev == MAX_BUFS)
        die("out of device memory (or buffers)");
    return dev_bufs[n_dev++] = p;
}

static void free_all(void)
{
    for (int i = 0; i < n_dev; i++)
        G->release(gdev, dev_bufs[i]);
    for (int i = 0; i < n_host; i++)
        free(host_bufs[i]);
    n_dev = n_host = 0;
}

static float *rand_f(size_t n, double lo, double hi)
{
    float *x = hmem(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)uni(lo, hi);
    return x;
}

static uint8_t *rand_flags(size_t n, double p)
{
    uint8_t *x = hmem(n);
    for (size_t i = 0; i < n; i++)
        x[i] = uni(0, 1) < p;
    return x;
}

static int32_t *rand_idx(size_t n, int32_t hi)
{
    int32_t *x = hmem(sizeof(int32_t) * n);
    for (size_t i = 0; i < n; i++)
        x[i] = (int32_t)(next_u64() % (uint64_t)hi);
    return x;
}

static void *dup_host(const void *src, size_t bytes)
{
    void *p = hmem(bytes);
    if (bytes)
        memcpy(p, src, bytes);
    return p;
}

/* NaN in every float and double, 0xFF in every byte: an unwritten element shows. */
static void *host_poisoned(size_t bytes)
{
    void *p = hmem(bytes);
    memset(p, 0xFF, bytes);
    return p;
}

/* A device copy of host memory, enqueued on d's stream (the op that reads it follows
 * on the same stream). */
static void *up(frl_dev *d, const void *h, size_t bytes)
{
    void *p = dmem(bytes);
    G->put(d, p, h, bytes);
    return p;
}

static void *dev_poisoned(frl_dev *d, size_t bytes)
{
    return up(d, host_poisoned(bytes), bytes);
}

/* Enqueues the copy of device memory into a new host buffer (valid after a sync). */
static void *down(frl_dev *d, const void *dp, size_t bytes)
{
    void *h = hmem(bytes);
    G->get(d, h, dp, bytes);
    return h;
}

/* ---- comparison ---- */

typedef struct check {
    char name[112];
    double max_err, max_ratio;
    int64_t bad, first;
    double got, ref, bound;
} check;

static void check_start(check *c, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check_start(check *c, const char *op, const char *fmt, ...)
{
    char label[80];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label, sizeof label, fmt, ap);
    va_end(ap);
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%-18s %s", op, label);
}

/* NaN on either side fails: no input here makes one, and poison is NaN. */
static void check_val(check *c, int64_t i, double got, double ref, double bound)
{
    double e = fabs(got - ref);
    int ok = e <= bound;
    if (isnan(e))
        e = INFINITY;
    double ratio = bound > 0 ? e / bound : (e > 0 ? INFINITY : 0);
    c->max_err = e > c->max_err ? e : c->max_err;
    c->max_ratio = ratio > c->max_ratio ? ratio : c->max_ratio;
    if (!ok && c->bad++ == 0) {
        c->first = i;
        c->got = got;
        c->ref = ref;
        c->bound = bound;
    }
}

static void check_end(check *c)
{
    printf("%-58s max err %-10.3g err/bound %-10.3g %s", c->name, c->max_err, c->max_ratio,
           c->bad ? "FAIL" : "ok");
    if (c->bad)
        printf(" (%lld bad; first [%lld]: got %.9g, want %.9g, bound %.3g)", (long long)c->bad,
               (long long)c->first, c->got, c->ref, c->bound);
    printf("\n");
    failures += c->bad != 0;
}

/* |got - ref| <= tol * scale + atol per element; scale NULL: |ref|. */
static void cmp_f(check *c, const float *got, const float *ref, size_t n, const double *scale,
                  double tol, double atol)
{
    for (size_t i = 0; i < n; i++) {
        double s = scale ? scale[i] : fabs((double)ref[i]);
        check_val(c, (int64_t)i, got[i], ref[i], tol * s + atol);
    }
}

static void cmp_bytes(check *c, const uint8_t *got, const uint8_t *ref, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check_val(c, (int64_t)i, got[i], ref[i], 0);
}

/* Waits for d; on failure the case fails with the device's sentence. */
static int synced(frl_dev *d, const check *c)
{
    char err[256];
    if (G->sync(d, err, sizeof err) == 0)
        return 1;
    printf("%-58s FAIL (sync: %s)\n", c->name, err);
    failures++;
    return 0;
}

/* ---- products ---- */

static const int32_t shapes[][3] = {{1, 1, 1},    {1, 7, 3},      {2, 3, 1},       {3, 5, 7},
                                    {17, 33, 65}, {64, 1, 300},   {4, 6, 0},       {0, 3, 2},
                                    {5, 0, 3},    {1000, 64, 64}, {4096, 256, 256}};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

/* FRL_TEST_QUICK=1: the sanitizer builds, which run the ops on the CUDA emulator of
 * tests/cuda/emu, where the largest cases take minutes rather than seconds. */
static int quick(void)
{
    const char *q = getenv("FRL_TEST_QUICK");
    return q && q[0] == '1';
}

/* Quick: shapes over 2^24 multiply-adds are left to the release builds. Says so once. */
static int skipped_shape(const int32_t *s)
{
    static int said;
    if (!quick() || (double)s[0] * s[1] * s[2] <= 16777216.0)
        return 0;
    if (!said++)
        printf("FRL_TEST_QUICK: products over 2^24 multiply-adds (%dx%dx%d) are left to the "
               "release builds\n", (int)s[0], (int)s[1], (int)s[2]);
    return 1;
}

/* Quick, and the case is one of the op's largest (big): skipped, saying so once an op.
 * The release builds run every case. */
static int quick_skips(const char *op, int big)
{
    if (!quick() || !big)
        return 0;
    static const char *said;
    if (said != op)
        printf("FRL_TEST_QUICK: %s's largest cases are left to the release builds\n", op);
    said = op;
    return 1;
}

/* Under ThreadSanitizer (the emulator's blocks run on threads there, some 20 times
 * slower): an op's cases over a few blocks check its threads as well as its largest
 * ones, whose extra work is arithmetic (more blocks, or more rounds of a grid-stride
 * loop). Skips the case when it is one of those (big), saying so once an op; the other
 * builds run every case. */
static int tsan_skips(const char *op, int big, const char *which)
{
    if (!FRL_TEST_TSAN || !big)
        return 0;
    static const char *said;
    if (said != op)
        printf("TSan: %s's %s are left to the other builds\n", op, which);
    said = op;
    return 1;
}

static double *zeros_d(size_t n)
{
    double *s = hmem(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        s[i] = 0;
    return s;
}

/* s[m x n] = |a|[m x k] . |b|[k x n], in double: the scale of a product's rounding. */
static double *abs_product(int32_t m, int32_t n, int32_t k, const float *a, const float *b)
{
    double *s = zeros_d((size_t)m * (size_t)n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            double av = fabs((double)a[i * k + p]);
            for (int64_t j = 0; j < n; j++)
                s[i * n + j] += av * fabs((double)b[p * n + j]);
        }
    return s;
}

static float *transposed(int32_t rows, int32_t cols, const float *x)
{
    float *t = hmem(sizeof(float) * (size_t)rows * (size_t)cols);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            t[c * rows + r] = x[r * cols + c];
    return t;
}

/* The device contexts the products run on, with their tolerances. */
typedef struct product_ctx {
    frl_dev **d;
    const char *tag;
    double tol;
} product_ctx;

static const product_ctx product_ctxs[] = {{&gdev, "fp32", TOL_FP32}, {&gtf32, "tf32", TOL_TF32}};

static float *fwd_on(frl_dev *d, const int32_t *s, const float *x, const float *wt, const float *b,
                     int32_t act)
{
    int32_t m = s[0], n = s[1], k = s[2];
    size_t ny = (size_t)m * (size_t)n;
    float *dx = up(d, x, sizeof(float) * (size_t)m * (size_t)k);
    float *dw = up(d, wt, sizeof(float) * (size_t)k * (size_t)n);
    float *db = b ? up(d, b, sizeof(float) * (size_t)n) : NULL;
    float *dy = dev_poisoned(d, sizeof(float) * ny);
    G->linear_fwd(d, m, n, k, dx, dw, db, dy, act);
    return down(d, dy, sizeof(float) * ny);
}

/* One shape, with or without bias. act 0: the products on both contexts; else fp32 only,
 * within the product's bound plus the activation's own rounding (each activation is
 * 1-Lipschitz, so the product's error passes through it no larger). */
static void fwd_case(const int32_t *s, int bias, int32_t act)
{
    int32_t m = s[0], n = s[1], k = s[2];
    size_t ny = (size_t)m * (size_t)n;
    float *x = rand_f((size_t)m * (size_t)k, -2, 2);
    float *wt = rand_f((size_t)k * (size_t)n, -1 / sqrt(k + 1.0), 1 / sqrt(k + 1.0));
    float *b = bias ? rand_f((size_t)n, -1, 1) : NULL;
    double *scale = abs_product(m, n, k, x, wt);
    for (size_t i = 0; b && i < ny; i++)
        scale[i] += fabs((double)b[i % (size_t)n]);
    float *ref = host_poisoned(sizeof(float) * ny);
    H->linear_fwd(hdev, m, n, k, x, wt, b, ref, act);
    for (int c = 0; c < (act ? 1 : 2); c++) {
        const product_ctx *p = &product_ctxs[c];
        check ck;
        check_start(&ck, "linear_fwd", "%s %dx%dx%d bias=%d act=%d", p->tag, m, n, k, bias, act);
        float *got = fwd_on(*p->d, s, x, wt, b, act);
        if (synced(*p->d, &ck)) {
            for (size_t i = 0; i < ny; i++)
                check_val(&ck, (int64_t)i, got[i], ref[i],
                          p->tol * scale[i] + (act ? TOL_ACT * fabs((double)ref[i]) : 0) +
                              ATOL_PRODUCT);
            check_end(&ck);
        }
    }
    free_all();
}

static void test_linear_fwd(void)
{
    for (int i = 0; i < N_SHAPES; i++)
        for (int bias = 0; bias < 2 && !skipped_shape(shapes[i]); bias++)
            fwd_case(shapes[i], bias, 0);
    static const int act_shapes[] = {2, 3, 6, 9};
    for (int a = 1; a <= 3; a++)
        for (size_t i = 0; i < sizeof act_shapes / sizeof act_shapes[0]; i++)
            fwd_case(shapes[act_shapes[i]], 1, a);
}

static void bwd_input_case(const int32_t *s)
{
    int32_t m = s[0], n = s[1], k = s[2];
    size_t nx = (size_t)m * (size_t)k;
    float *dy = rand_f((size_t)m * (size_t)n, -1, 1);
    float *wt = rand_f((size_t)k * (size_t)n, -1, 1);
    double *scale = abs_product(m, k, n, dy, transposed(k, n, wt));
    float *ref = host_poisoned(sizeof(float) * nx);
    H->linear_bwd_input(hdev, m, n, k, dy, wt, ref);
    for (int c = 0; c < 2; c++) {
        const product_ctx *p = &product_ctxs[c];
        frl_dev *d = *p->d;
        check ck;
        check_start(&ck, "linear_bwd_input", "%s %dx%dx%d", p->tag, m, n, k);
        float *ddy = up(d, dy, sizeof(float) * (size_t)m * (size_t)n);
        float *dw = up(d, wt, sizeof(float) * (size_t)k * (size_t)n);
        float *ddx = dev_poisoned(d, sizeof(float) * nx);
        G->linear_bwd_input(d, m, n, k, ddy, dw, ddx);
        float *got = down(d, ddx, sizeof(float) * nx);
        if (synced(d, &ck)) {
            cmp_f(&ck, got, ref, nx, scale, p->tol, ATOL_PRODUCT);
            check_end(&ck);
        }
    }
    free_all();
}

static void test_linear_bwd_input(void)
{
    for (int i = 0; i < N_SHAPES; i++)
        if (!skipped_shape(shapes[i]))
            bwd_input_case(shapes[i]);
}

/* The inputs and references of one linear_bwd_weight case. */
typedef struct bwd_w {
    int32_t m, n, k, accumulate, with_db;
    const float *x, *dy, *pre_w, *pre_b, *ref_w, *ref_b;
    const double *scale_w, *scale_b;
} bwd_w;

/* Outputs start from pre_* when accumulating, else from poison. */
static float *start_out(frl_dev *d, const float *pre, size_t n, int accumulate)
{
    return accumulate ? up(d, pre, sizeof(float) * n) : dev_poisoned(d, sizeof(float) * n);
}

static void bwd_w_run(const bwd_w *t, const product_ctx *p)
{
    frl_dev *d = *p->d;
    size_t nw = (size_t)t->k * (size_t)t->n, nb = (size_t)t->n;
    check ck;
    check_start(&ck, "linear_bwd_weight", "%s %dx%dx%d acc=%d db=%d", p->tag, t->m, t->n, t->k,
                t->accumulate, t->with_db);
    float *dx = up(d, t->x, sizeof(float) * (size_t)t->m * (size_t)t->k);
    float *ddy = up(d, t->dy, sizeof(float) * (size_t)t->m * (size_t)t->n);
    float *dw = start_out(d, t->pre_w, nw, t->accumulate);
    float *db = t->with_db ? start_out(d, t->pre_b, nb, t->accumulate) : NULL;
    G->linear_bwd_weight(d, t->m, t->n, t->k, dx, ddy, dw, db, t->accumulate);
    float *got_w = down(d, dw, sizeof(float) * nw);
    float *got_b = db ? down(d, db, sizeof(float) * nb) : NULL;
    if (!synced(d, &ck))
        return;
    cmp_f(&ck, got_w, t->ref_w, nw, t->scale_w, p->tol, ATOL_PRODUCT);
    if (got_b) /* a plain sum: fp32 rounding whatever the context */
        cmp_f(&ck, got_b, t->ref_b, nb, t->scale_b, TOL_FP32, ATOL_PRODUCT);
    check_end(&ck);
}

/* scale[j] = sum_i |dy_ij| (+ |pre_j|). */
static double *abs_col_sums(int32_t m, int32_t n, const float *dy, const float *pre)
{
    double *s = zeros_d((size_t)n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            s[j] += fabs((double)dy[i * n + j]);
    for (int64_t j = 0; pre && j < n; j++)
        s[j] += fabs((double)pre[j]);
    return s;
}

static void bwd_weight_case(const int32_t *s, int32_t accumulate, int32_t with_db)
{
    bwd_w t = {.m = s[0], .n = s[1], .k = s[2], .accumulate = accumulate, .with_db = with_db};
    size_t nw = (size_t)t.k * (size_t)t.n;
    t.x = rand_f((size_t)t.m * (size_t)t.k, -1, 1);
    t.dy = rand_f((size_t)t.m * (size_t)t.n, -1, 1);
    t.pre_w = rand_f(nw, -1, 1);
    t.pre_b = rand_f((size_t)t.n, -1, 1);
    double *sw = abs_product(t.k, t.n, t.m, transposed(t.m, t.k, t.x), t.dy);
    for (size_t i = 0; accumulate && i < nw; i++)
        sw[i] += fabs((double)t.pre_w[i]);
    t.scale_w = sw;
    t.scale_b = abs_col_sums(t.m, t.n, t.dy, accumulate ? t.pre_b : NULL);
    float *rw =
        accumulate ? dup_host(t.pre_w, sizeof(float) * nw) : host_poisoned(sizeof(float) * nw);
    float *rb = accumulate ? dup_host(t.pre_b, sizeof(float) * (size_t)t.n)
                           : host_poisoned(sizeof(float) * (size_t)t.n);
    H->linear_bwd_weight(hdev, t.m, t.n, t.k, t.x, t.dy, rw, with_db ? rb : NULL, accumulate);
    t.ref_w = rw;
    t.ref_b = rb;
    for (int c = 0; c < 2; c++)
        bwd_w_run(&t, &product_ctxs[c]);
    free_all();
}

static void test_linear_bwd_weight(void)
{
    for (int i = 0; i < N_SHAPES; i++)
        for (int acc = 0; acc < 2 && !skipped_shape(shapes[i]); acc++)
            for (int db = 0; db < 2; db++)
                bwd_weight_case(shapes[i], acc, db);
}

/* wgrad against the host's act_bwd then linear_bwd_weight: delta within the
 * activation's rounding, dwt within the product's bound over |x|^T |delta| (plus what it
 * started from), db within a plain sum's. */
typedef struct wg_case {
    int32_t m, n, k, act, accumulate, with_db;
} wg_case;

static void wgrad_run(const wg_case *c, const float *x, const float *g, const float *y,
                      const float *pre_w, const float *pre_b, const float *ref_d,
                      const float *ref_w, const float *ref_b, const double *sw, const double *sb)
{
    size_t nx = (size_t)c->m * (size_t)c->k, ng = (size_t)c->m * (size_t)c->n;
    size_t nw = (size_t)c->k * (size_t)c->n, f = sizeof(float);
    check ck;
    check_start(&ck, "wgrad", "%dx%dx%d act=%d acc=%d db=%d", c->m, c->n, c->k, c->act,
                c->accumulate, c->with_db);
    float *dx = up(gdev, x, f * nx), *dg = up(gdev, g, f * ng), *dy = up(gdev, y, f * ng);
    float *dd = c->act ? dev_poisoned(gdev, f * ng) : NULL;
    float *dw = start_out(gdev, pre_w, nw, c->accumulate);
    float *db = c->with_db ? start_out(gdev, pre_b, (size_t)c->n, c->accumulate) : NULL;
    G->wgrad(gdev, c->m, c->n, c->k, dx, dg, dy, c->act, dd, dw, db, c->accumulate);
    float *got_d = dd ? down(gdev, dd, f * ng) : NULL;
    float *got_w = down(gdev, dw, f * nw);
    float *got_b = db ? down(gdev, db, f * (size_t)c->n) : NULL;
    if (!synced(gdev, &ck))
        return;
    if (got_d) {
        double *sd = hmem(sizeof(double) * (ng ? ng : 1));
        for (size_t i = 0; i < ng; i++)
            sd[i] = fabs((double)ref_d[i]) + fabs((double)g[i]);
        cmp_f(&ck, got_d, ref_d, ng, sd, 1e-6, 1e-30);
    }
    cmp_f(&ck, got_w, ref_w, nw, sw, TOL_FP32, ATOL_PRODUCT);
    if (got_b)
        cmp_f(&ck, got_b, ref_b, (size_t)c->n, sb, TOL_FP32, ATOL_PRODUCT);
    check_end(&ck);
}

static void wgrad_case(wg_case c)
{
    size_t nx = (size_t)c.m * (size_t)c.k, ng = (size_t)c.m * (size_t)c.n;
    size_t nw = (size_t)c.k * (size_t)c.n, f = sizeof(float);
    float *x = rand_f(nx, -1, 1), *g = rand_f(ng, -1, 1), *y = rand_f(ng, -3, 3);
    for (size_t i = 0; i < ng; i++)
        y[i] = frl_dm_act(y[i], c.act);
    float *pre_w = rand_f(nw, -1, 1), *pre_b = rand_f((size_t)c.n, -1, 1);
    float *ref_d = host_poisoned(f * (ng ? ng : 1));
    float *ref_w = c.accumulate ? dup_host(pre_w, f * nw) : host_poisoned(f * nw);
    float *ref_b = c.accumulate ? dup_host(pre_b, f * (size_t)c.n) : host_poisoned(f * (size_t)c.n);
    H->wgrad(hdev, c.m, c.n, c.k, x, g, y, c.act, c.act ? ref_d : NULL, ref_w,
             c.with_db ? ref_b : NULL, c.accumulate);
    const float *delta = c.act ? ref_d : g;
    double *sw = abs_product(c.k, c.n, c.m, transposed(c.m, c.k, x), delta);
    for (size_t i = 0; c.accumulate && i < nw; i++)
        sw[i] += fabs((double)pre_w[i]);
    double *sb = abs_col_sums(c.m, c.n, delta, c.accumulate ? pre_b : NULL);
    wgrad_run(&c, x, g, y, pre_w, pre_b, ref_d, ref_w, ref_b, sw, sb);
    free_all();
}

/* Shapes across the tile's edges (64), one row to several chunks, k = 1 (a layer over
 * one feature) and no rows; the minibatch layers of PPO on CartPole in the release
 * builds. */
static void test_wgrad(void)
{
    static const int32_t sh[][3] = {{1, 1, 1},   {3, 5, 4},   {70, 64, 64}, {300, 2, 64},
                                    {257, 65, 130}, {1000, 1, 7}, {0, 3, 2}, {16384, 64, 64},
                                    {16384, 64, 4}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        if (skipped_shape(sh[i]) || quick_skips("wgrad", sh[i][0] > 4096))
            continue;
        for (int32_t act = 0; act <= 3; act++)
            for (int32_t v = 0; v < 4; v++)
                if ((act == 0 || v == 0 || i < 3) &&
                    !tsan_skips("wgrad", sh[i][0] > 64 && !(act == 0 && v == 3) &&
                                               !(act == 3 && v == 0),
                                "shapes over 64 rows with options other than (act 0, "
                                "accumulate, bias) and (act 3)"))
                    wgrad_case((wg_case){sh[i][0], sh[i][1], sh[i][2], act, v & 1, v >> 1});
    }
}

/* ---- element-wise ops ---- */

static const int64_t elem_sizes[] = {1, 1000, 300001};
enum { N_ELEM = sizeof elem_sizes / sizeof elem_sizes[0] };

/* dx = dy * act'(y): the rounding of 1 - y^2 (fused or not) is relative to dy, not to
 * the (possibly cancelled) result. */
static void act_bwd_case(int64_t n, int32_t act, int in_place)
{
    size_t bytes = sizeof(float) * (size_t)n;
    float *y = rand_f((size_t)n, -3, 3), *dy = rand_f((size_t)n, -1, 1);
    double *scale = hmem(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        y[i] = frl_dm_act(y[i], act);
    float *ref = in_place ? dup_host(dy, bytes) : host_poisoned(bytes);
    H->act_bwd(hdev, n, y, in_place ? ref : dy, ref, act);
    for (int64_t i = 0; i < n; i++)
        scale[i] = fabs((double)ref[i]) + fabs((double)dy[i]);
    check ck;
    check_start(&ck, "act_bwd", "n=%lld act=%d in_place=%d", (long long)n, act, in_place);
    float *d_y = up(gdev, y, bytes), *d_dy = up(gdev, dy, bytes);
    float *d_dx = in_place ? d_dy : dev_poisoned(gdev, bytes);
    G->act_bwd(gdev, n, d_y, d_dy, d_dx, act);
    float *got = down(gdev, d_dx, bytes);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, (size_t)n, scale, 1e-6, 1e-30);
        check_end(&ck);
    }
    free_all();
}

static void test_act_bwd(void)
{
    for (int32_t act = 1; act <= 3; act++)
        for (int i = 0; i < N_ELEM; i++)
            act_bwd_case(elem_sizes[i], act, i == 1);
}

static void axpy_case(int64_t n)
{
    size_t bytes = sizeof(float) * (size_t)n;
    float alpha = (float)uni(-2, 2);
    float *x = rand_f((size_t)n, -1, 1), *y = rand_f((size_t)n, -1, 1);
    float *ref = dup_host(y, bytes);
    double *scale = hmem(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        scale[i] = fabs((double)y[i]) + fabs((double)alpha * x[i]);
    H->axpy(hdev, n, alpha, x, ref);
    check ck;
    check_start(&ck, "axpy", "n=%lld", (long long)n);
    float *dx = up(gdev, x, bytes), *dy = up(gdev, y, bytes);
    G->axpy(gdev, n, alpha, dx, dy);
    float *got = down(gdev, dy, bytes);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, (size_t)n, scale, 1e-6, 1e-30);
        check_end(&ck);
    }
    free_all();
}

static void test_axpy(void)
{
    for (int i = 0; i < N_ELEM; i++)
        axpy_case(elem_sizes[i]);
}

static void normalize_case(int32_t rows, int32_t width)
{
    size_t n = (size_t)rows * (size_t)width, bytes = sizeof(float) * n;
    float clip = 3.0f;
    float *x = rand_f(n, -10, 10), *mean = rand_f((size_t)width, -2, 2);
    float *inv = rand_f((size_t)width, 0.1, 2);
    float *ref = host_poisoned(bytes);
    H->normalize(hdev, rows, width, x, mean, inv, clip, ref);
    check ck;
    check_start(&ck, "normalize", "%dx%d", rows, width);
    float *dx = up(gdev, x, bytes), *dm = up(gdev, mean, sizeof(float) * (size_t)width);
    float *di = up(gdev, inv, sizeof(float) * (size_t)width), *dy = dev_poisoned(gdev, bytes);
    G->normalize(gdev, rows, width, dx, dm, di, clip, dy);
    float *got = down(gdev, dy, bytes);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, n, NULL, 1e-6, 1e-6);
        check_end(&ck);
    }
    free_all();
}

static void test_normalize(void)
{
    static const int32_t cases[][2] = {{1, 1}, {7, 3}, {1000, 17}, {300000, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        normalize_case(cases[i][0], cases[i][1]);
}

/* kind 1 GRU, 2 LSTM; pre-activations wide enough to saturate the gates both ways. */
static void rnn_cell_case(int32_t kind, int32_t rows, int32_t h)
{
    size_t g = kind == 2 ? 4 : 3, n = (size_t)rows * (size_t)h, fb = sizeof(float);
    float *gx = rand_f(n * g, -6, 6), *gh = rand_f(n * g, -6, 6);
    float *hp = rand_f(n, -1, 1), *cp = rand_f(n, -3, 3);
    float *ref_h = host_poisoned(fb * n), *ref_c = host_poisoned(fb * n);
    H->rnn_cell(hdev, kind, rows, h, gx, gh, hp, cp, ref_h, ref_c);
    check ck;
    check_start(&ck, "rnn_cell", "%s %dx%d", kind == 2 ? "lstm" : "gru", rows, h);
    float *dgx = up(gdev, gx, fb * n * g), *dgh = up(gdev, gh, fb * n * g);
    float *dhp = up(gdev, hp, fb * n), *dcp = up(gdev, cp, fb * n);
    float *dh = dev_poisoned(gdev, fb * n), *dc = dev_poisoned(gdev, fb * n);
    G->rnn_cell(gdev, kind, rows, h, dgx, dgh, dhp, dcp, dh, dc);
    float *got_h = down(gdev, dh, fb * n), *got_c = down(gdev, dc, fb * n);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got_h, ref_h, n, NULL, 1e-5, 1e-6);
        if (kind == 2)
            cmp_f(&ck, got_c, ref_c, n, NULL, 1e-5, 1e-6);
        check_end(&ck);
    }
    free_all();
}

static void test_rnn_cell(void)
{
    static const int32_t cases[][2] = {{1, 1}, {7, 16}, {300, 64}, {4096, 256}};
    for (int32_t kind = 1; kind <= 2; kind++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (!quick_skips("rnn_cell", cases[i][0] > 1000))
                rnn_cell_case(kind, cases[i][0], cases[i][1]);
}

/* src_off / dst_off: byte offsets that take the copy off its widest word. */
static void gather_case(int32_t rows, size_t row_bytes, size_t src_off, size_t dst_off)
{
    int32_t src_rows = 2 * rows + 3;
    size_t sb = (size_t)src_rows * row_bytes, db = (size_t)rows * row_bytes;
    uint8_t *src = hmem(sb);
    for (size_t i = 0; i < sb; i++)
        src[i] = (uint8_t)next_u64();
    int32_t *idx = rand_idx((size_t)rows, src_rows);
    uint8_t *ref = host_poisoned(db);
    H->gather(hdev, rows, row_bytes, idx, src, ref);
    check ck;
    check_start(&ck, "gather", "rows=%d row_bytes=%zu src+%zu dst+%zu", rows, row_bytes, src_off,
                dst_off);
    uint8_t *dsrc = dmem(sb + src_off), *ddst = dev_poisoned(gdev, db + dst_off);
    G->put(gdev, dsrc + src_off, src, sb);
    int32_t *didx = up(gdev, idx, sizeof(int32_t) * (size_t)rows);
    G->gather(gdev, rows, row_bytes, didx, dsrc + src_off, ddst + dst_off);
    uint8_t *got = down(gdev, ddst + dst_off, db);
    if (synced(gdev, &ck)) {
        cmp_bytes(&ck, got, ref, db);
        check_end(&ck);
    }
    free_all();
}

static void test_gather(void)
{
    static const size_t widths[] = {1, 3, 4, 12, 16, 68, 80, 256};
    static const int32_t rows[] = {1, 1000};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (size_t r = 0; r < 2; r++) {
            gather_case(rows[r], widths[w], 0, 0);
            gather_case(rows[r], widths[w], 1, 0);
            gather_case(rows[r], widths[w], 0, 4);
        }
    gather_case(100000, 4, 0, 0);
}

/* gather_fields: the minibatch's narrow arrays, byte for byte as gather gives each. */
static void gather_fields_case(int32_t rows, int32_t fields)
{
    static const size_t widths[] = {16, 4, 1, 64, 3, 8, 4, 12};
    int32_t src_rows = 2 * rows + 3;
    frl_dev_field hf[FRL_DEV_GATHER_MAX], df[FRL_DEV_GATHER_MAX];
    int32_t *idx = rand_idx((size_t)rows, src_rows);
    int32_t *didx = up(gdev, idx, sizeof(int32_t) * (size_t)rows);
    uint8_t *ref[FRL_DEV_GATHER_MAX];
    for (int32_t i = 0; i < fields; i++) {
        size_t w = widths[i], sb = (size_t)src_rows * w;
        uint8_t *src = hmem(sb);
        for (size_t j = 0; j < sb; j++)
            src[j] = (uint8_t)next_u64();
        ref[i] = host_poisoned((size_t)rows * w);
        hf[i] = (frl_dev_field){src, ref[i], w};
        df[i] = (frl_dev_field){up(gdev, src, sb), dev_poisoned(gdev, (size_t)rows * w), w};
    }
    H->gather_fields(hdev, rows, idx, fields, hf);
    check ck;
    check_start(&ck, "gather_fields", "rows=%d fields=%d", rows, fields);
    G->gather_fields(gdev, rows, didx, fields, df);
    uint8_t *got[FRL_DEV_GATHER_MAX];
    for (int32_t i = 0; i < fields; i++)
        got[i] = down(gdev, df[i].dst, (size_t)rows * widths[i]);
    if (synced(gdev, &ck)) {
        for (int32_t i = 0; i < fields; i++)
            cmp_bytes(&ck, got[i], ref[i], (size_t)rows * widths[i]);
        check_end(&ck);
    }
    free_all();
}

static void test_gather_fields(void)
{
    gather_fields_case(1, 1);
    gather_fields_case(1000, 3);
    gather_fields_case(16384, FRL_DEV_GATHER_MAX);
    /* Too many fields, or a row too wide: the op refuses, and the sync says so. */
    check ck;
    check_start(&ck, "gather_fields", "9 fields refused");
    frl_dev_field f[FRL_DEV_GATHER_MAX + 1] = {{0}};
    G->gather_fields(gdev, 1, NULL, FRL_DEV_GATHER_MAX + 1, f);
    char err[256] = "";
    if (!G->sync(gdev, err, sizeof err) || !strstr(err, "gather_fields"))
        check_val(&ck, 0, 1, 0, 0);
    check_end(&ck);
}

/* Strided rows (a mixed observation's join and its gradient's unpacking): bytes
 * outside the rows stay as they were (the destination is poisoned first). */
static void copy2d_case(int32_t rows, size_t row_bytes, size_t dst_pitch, size_t src_pitch)
{
    size_t sb = (size_t)rows * src_pitch, db = (size_t)rows * dst_pitch;
    uint8_t *src = hmem(sb);
    for (size_t i = 0; i < sb; i++)
        src[i] = (uint8_t)next_u64();
    uint8_t *ref = host_poisoned(db);
    H->copy2d(hdev, rows, row_bytes, ref, dst_pitch, src, src_pitch);
    check ck;
    check_start(&ck, "copy2d", "rows=%d row_bytes=%zu dst_pitch=%zu src_pitch=%zu", rows,
                row_bytes, dst_pitch, src_pitch);
    uint8_t *dsrc = dmem(sb), *ddst = dev_poisoned(gdev, db);
    G->put(gdev, dsrc, src, sb);
    G->copy2d(gdev, rows, row_bytes, ddst, dst_pitch, dsrc, src_pitch);
    uint8_t *got = down(gdev, ddst, db);
    if (synced(gdev, &ck)) {
        cmp_bytes(&ck, got, ref, db);
        check_end(&ck);
    }
    free_all();
}

static void test_copy2d(void)
{
    copy2d_case(1, 4, 4, 4);
    copy2d_case(7, 8, 20, 4808);    /* a vector of 2 into a join 5 wide */
    copy2d_case(33, 128, 136, 128); /* features into the join */
    copy2d_case(33, 128, 128, 136); /* and their gradient out of it */
    copy2d_case(20000, 12, 16, 12);
}

/* ---- the learner ---- */

/* variant 0: GAE (log-ratios given but not asked for); 1: V-trace; 2: vtrace set with no
 * log-ratios, which is GAE; 3: V-trace for decoupled PPO (advantages without rho). */
static void advantages_case(int32_t T, int32_t B, int variant)
{
    size_t n = (size_t)T * (size_t)B, fb = sizeof(float) * n;
    static const char *const names[] = {"gae", "vtrace", "vtrace-no-ratio", "vtrace-decoupled"};
    int vt = variant == 1 || variant == 3;
    frl_dm_adv_params p = {0.99, 0.95, vt ? 1.5 : 1.0, vt ? 0.8 : 1.0, variant != 0, variant == 3};
    float *rew = rand_f(n, -1, 1), *val = rand_f(n, -1, 1), *lr = rand_f(n, -1, 1);
    float *boot = rand_f((size_t)B, -1, 1);
    uint8_t *term = rand_flags(n, 0.05), *trunc = rand_flags(n, 0.05);
    uint8_t *reset = rand_flags(n, 0.05);
    const float *lr_used = variant == 2 ? NULL : lr;
    float *ra = host_poisoned(fb), *rr = host_poisoned(fb);
    uint8_t *rv = host_poisoned(n);
    H->advantages(hdev, T, B, rew, val, lr_used, term, trunc, reset, boot, &p, ra, rr, rv);
    check ck;
    check_start(&ck, "advantages", "%dx%d %s", T, B, names[variant]);
    float *da = dev_poisoned(gdev, fb), *dr = dev_poisoned(gdev, fb);
    uint8_t *dv = dev_poisoned(gdev, n);
    G->advantages(gdev, T, B, up(gdev, rew, fb), up(gdev, val, fb),
                  lr_used ? up(gdev, lr, fb) : NULL, up(gdev, term, n), up(gdev, trunc, n),
                  up(gdev, reset, n), up(gdev, boot, sizeof(float) * (size_t)B), &p, da, dr, dv);
    float *ga = down(gdev, da, fb), *gr = down(gdev, dr, fb);
    uint8_t *gv = down(gdev, dv, n);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, ga, ra, n, NULL, 1e-6, 1e-6);
        cmp_f(&ck, gr, rr, n, NULL, 1e-6, 1e-6);
        cmp_bytes(&ck, gv, rv, n);
        check_end(&ck);
    }
    free_all();
}

static void test_advantages(void)
{
    static const int32_t cases[][2] = {{1, 1}, {5, 3}, {128, 64}, {33, 1000}, {1000, 7}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int v = 0; v < 4; v++)
            advantages_case(cases[i][0], cases[i][1], v);
}

/* Actions of rows rows: int32 indices (discrete) or floats [rows x n]. */
static void *rand_actions(int32_t rows, int32_t n, int32_t discrete, size_t *bytes)
{
    if (discrete) {
        *bytes = sizeof(int32_t) * (size_t)rows;
        return rand_idx((size_t)rows, n);
    }
    *bytes = sizeof(float) * (size_t)rows * (size_t)n;
    return rand_f((size_t)rows * (size_t)n, -2, 2);
}

/* Old log-probabilities near the current ones, so that ratios fall on both sides of a
 * 0.2 clip. */
static float *old_logp(int32_t rows, int32_t n, int32_t discrete, const float *z, const void *act,
                       const float *log_std, double noise)
{
    float *lp = hmem(sizeof(float) * (size_t)rows);
    for (int64_t r = 0; r < rows; r++)
        lp[r] = (float)(frl_dm_logp(z + r * n, n, discrete, (const int32_t *)act + r,
                                    (const float *)act + r * n, log_std) +
                        uni(-noise, noise));
    return lp;
}

static void log_ratio_case(int32_t rows, int32_t n, int32_t discrete)
{
    size_t ab, nz = (size_t)rows * (size_t)n, fb = sizeof(float) * (size_t)rows;
    float *z = rand_f(nz, -3, 3), *log_std = rand_f((size_t)n, -1, 0.5);
    void *act = rand_actions(rows, n, discrete, &ab);
    float *old = old_logp(rows, n, discrete, z, act, log_std, 1.0);
    float *ref = host_poisoned(fb);
    H->log_ratio(hdev, rows, n, discrete, z, act, log_std, old, ref);
    check ck;
    check_start(&ck, "log_ratio", "rows=%d n=%d %s", rows, n, discrete ? "discrete" : "box");
    float *dout = dev_poisoned(gdev, fb);
    G->log_ratio(gdev, rows, n, discrete, up(gdev, z, sizeof(float) * nz), up(gdev, act, ab),
                 up(gdev, log_std, sizeof(float) * (size_t)n), up(gdev, old, fb), dout);
    float *got = down(gdev, dout, fb);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, (size_t)rows, NULL, 1e-6, 1e-6);
        check_end(&ck);
    }
    free_all();
}

static void test_log_ratio(void)
{
    static const int32_t cases[][3] = {{1, 2, 1}, {1000, 2, 1}, {1000, 7, 1}, {3000, 100, 1},
                                       {1, 1, 0}, {1000, 1, 0}, {1000, 6, 0}, {100000, 6, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        log_ratio_case(cases[i][0], cases[i][1], cases[i][2]);
}

static void moments_case(int32_t rows, double p_valid, int32_t norm_adv)
{
    float *adv = rand_f((size_t)rows, -2.5, 3.5);
    uint8_t *valid = rand_flags((size_t)rows, p_valid);
    float ref[4], got[4];
    memset(ref, 0xFF, sizeof ref);
    H->moments(hdev, rows, adv, valid, norm_adv, ref);
    check ck;
    check_start(&ck, "moments", "rows=%d valid=%.2f norm=%d", rows, p_valid, norm_adv);
    float *dout = dev_poisoned(gdev, sizeof got);
    G->moments(gdev, rows, up(gdev, adv, sizeof(float) * (size_t)rows),
               up(gdev, valid, (size_t)rows), norm_adv, dout);
    G->get(gdev, got, dout, sizeof got);
    if (synced(gdev, &ck)) {
        check_val(&ck, 0, got[0], ref[0], 1e-6 * fabs(ref[0]) + 1e-12);
        cmp_f(&ck, got + 1, ref + 1, 2, NULL, 1e-6, 0);
        check_val(&ck, 3, got[3], ref[3], 0);
        check_end(&ck);
    }
    free_all();
}

static void test_moments(void)
{
    static const int32_t rows[] = {0, 1, 2, 1000, 300000};
    static const double valid[] = {1.0, 0.9, 0.0};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
        for (size_t v = 0; v < sizeof valid / sizeof valid[0]; v++)
            for (int32_t norm = 0; norm < 2; norm++)
                moments_case(rows[r], valid[v], norm);
}

/* The inputs of one loss_rows case, on the host. */
typedef struct loss_in {
    int32_t rows, n, discrete;
    frl_dm_loss s;
    float *z, *value, *old_lp, *log_ratio, *adv, *ret, *old_v, *log_std, mo[4];
    void *act;
    size_t act_bytes;
    uint8_t *valid;
} loss_in;

/* mode: 0 PPO, 1 IMPALA, 2 decoupled PPO (log-ratios on both sides of log 1.5, the
 * weights' truncation). */
static loss_in loss_inputs(int32_t rows, int32_t n, int32_t discrete, int32_t clip_value,
                           int32_t mode)
{
    loss_in in;
    memset(&in, 0, sizeof in);
    in.rows = rows;
    in.n = n;
    in.discrete = discrete;
    in.s = (frl_dm_loss){.clip = 0.2, .ent_coef = 0.01, .vf_coef = 0.5,
                         .clip_value = clip_value, .impala = mode == 1,
                         .decoupled = mode == 2, .rho_bar = 1.5};
    size_t nr = (size_t)rows;
    in.z = rand_f(nr * (size_t)n, -2, 2);
    in.log_std = rand_f((size_t)n, -1, 0.5);
    in.act = rand_actions(rows, n, discrete, &in.act_bytes);
    in.old_lp = old_logp(rows, n, discrete, in.z, in.act, in.log_std, 0.3);
    in.value = rand_f(nr, -1, 1);
    in.old_v = rand_f(nr, -0.5, 0.5);
    for (size_t r = 0; r < nr; r++)
        in.old_v[r] += in.value[r];
    in.log_ratio = rand_f(nr, -1, 1);
    in.adv = rand_f(nr, -2, 2);
    in.ret = rand_f(nr, -2, 2);
    in.valid = rand_flags(nr, 0.9);
    H->moments(hdev, rows, in.adv, in.valid, 1, in.mo);
    return in;
}

typedef struct loss_out {
    float *d_z, *d_value, *d_log_std, *stats;
} loss_out;

static void loss_sizes(const loss_in *in, size_t sz[4])
{
    size_t nr = (size_t)in->rows, nz = nr * (size_t)in->n;
    sz[0] = nz;
    sz[1] = nr;
    sz[2] = in->discrete ? 0 : nz;
    sz[3] = nr * FRL_DM_STATS;
}

static loss_out loss_on_device(const loss_in *in)
{
    size_t sz[4], f = sizeof(float), nr = (size_t)in->rows;
    loss_sizes(in, sz);
    loss_out o = {dev_poisoned(gdev, f * sz[0]), dev_poisoned(gdev, f * sz[1]),
                  in->discrete ? NULL : dev_poisoned(gdev, f * sz[2]),
                  dev_poisoned(gdev, f * sz[3])};
    G->loss_rows(gdev, in->rows, in->n, in->discrete, &in->s, up(gdev, in->z, f * sz[0]),
                 up(gdev, in->value, f * nr), up(gdev, in->act, in->act_bytes),
                 up(gdev, in->old_lp, f * nr), up(gdev, in->log_ratio, f * nr),
                 up(gdev, in->adv, f * nr), up(gdev, in->ret, f * nr),
                 up(gdev, in->old_v, f * nr), up(gdev, in->valid, nr),
                 up(gdev, in->log_std, f * (size_t)in->n), up(gdev, in->mo, sizeof in->mo), o.d_z,
                 o.d_value, o.d_log_std, o.stats);
    loss_out h = {down(gdev, o.d_z, f * sz[0]), down(gdev, o.d_value, f * sz[1]),
                  o.d_log_std ? down(gdev, o.d_log_std, f * sz[2]) : NULL,
                  down(gdev, o.stats, f * sz[3])};
    return h;
}

static loss_out loss_on_host(const loss_in *in)
{
    size_t sz[4], f = sizeof(float);
    loss_sizes(in, sz);
    loss_out o = {host_poisoned(f * sz[0]), host_poisoned(f * sz[1]),
                  in->discrete ? NULL : host_poisoned(f * sz[2]), host_poisoned(f * sz[3])};
    H->loss_rows(hdev, in->rows, in->n, in->discrete, &in->s, in->z, in->value, in->act, in->old_lp,
                 in->log_ratio, in->adv, in->ret, in->old_v, in->valid, in->log_std, in->mo, o.d_z, o.d_value,
                 o.d_log_std, o.stats);
    return o;
}

/* Heads and losses run in double on both sides: the float results agree to a rounding. */
static void loss_case(int32_t rows, int32_t n, int32_t discrete, int32_t clip_value, int32_t mode)
{
    static const char *const modes[] = {"ppo", "impala", "decoupled"};
    loss_in in = loss_inputs(rows, n, discrete, clip_value, mode);
    loss_out ref = loss_on_host(&in);
    check ck;
    check_start(&ck, "loss_rows", "rows=%d n=%d %s clip_v=%d %s", rows, n,
                discrete ? "discrete" : "box", clip_value, modes[mode]);
    loss_out got = loss_on_device(&in);
    if (synced(gdev, &ck)) {
        size_t sz[4];
        loss_sizes(&in, sz);
        cmp_f(&ck, got.d_z, ref.d_z, sz[0], NULL, 1e-5, 1e-9);
        cmp_f(&ck, got.d_value, ref.d_value, sz[1], NULL, 1e-5, 1e-9);
        if (!discrete)
            cmp_f(&ck, got.d_log_std, ref.d_log_std, sz[2], NULL, 1e-5, 1e-9);
        cmp_f(&ck, got.stats, ref.stats, sz[3], NULL, 1e-5, 1e-9);
        check_end(&ck);
    }
    free_all();
}

static void test_loss_rows(void)
{
    static const int32_t heads[][2] = {{2, 1}, {7, 1}, {100, 1}, {1, 0}, {6, 0}};
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
        for (int32_t cv = 0; cv < 2; cv++)
            for (int32_t mode = 0; mode < 3; mode++) {
                loss_case(1, heads[h][0], heads[h][1], cv, mode);
                loss_case(1000, heads[h][0], heads[h][1], cv, mode);
            }
    loss_case(70000, 6, 0, 1, 0);
    loss_case(70000, 6, 0, 1, 2);
}

static void col_sums_case(int32_t rows, int32_t cols)
{
    size_t n = (size_t)rows * (size_t)cols, fc = sizeof(float) * (size_t)cols;
    float *x = rand_f(n, -1, 1);
    double *scale = abs_col_sums(rows, cols, x, NULL);
    for (int32_t c = 0; c < cols; c++)
        scale[c] *= 1e-4; /* tol 1e-10 of sum |x| next to 1e-6 of |sum| */
    float *ref = host_poisoned(fc);
    H->col_sums(hdev, rows, cols, x, ref);
    for (int32_t c = 0; c < cols; c++)
        scale[c] += fabs((double)ref[c]);
    check ck;
    check_start(&ck, "col_sums", "%dx%d", rows, cols);
    float *dout = dev_poisoned(gdev, fc);
    G->col_sums(gdev, rows, cols, up(gdev, x, sizeof(float) * n), dout);
    float *got = down(gdev, dout, fc);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, (size_t)cols, scale, 1e-6, 0);
        check_end(&ck);
    }
    free_all();
}

static void test_col_sums(void)
{
    static const int32_t cases[][2] = {{1, 1},      {3, 5},      {0, 3},     {1000, 64},
                                       {300000, 5}, {300000, 1}, {4099, 33}, {777, 300}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        col_sums_case(cases[i][0], cases[i][1]);
}

static void sum_squares_case(int64_t n)
{
    float *x = rand_f((size_t)n, -1, 1);
    double ref, got;
    H->sum_squares(hdev, n, x, &ref);
    check ck;
    check_start(&ck, "sum_squares", "n=%lld", (long long)n);
    double *dout = dev_poisoned(gdev, sizeof got);
    G->sum_squares(gdev, n, up(gdev, x, sizeof(float) * (size_t)n), dout);
    G->get(gdev, &got, dout, sizeof got);
    if (synced(gdev, &ck)) {
        check_val(&ck, 0, got, ref, 1e-9 * ref);
        check_end(&ck);
    }
    free_all();
}

static void test_sum_squares(void)
{
    static const int64_t sizes[] = {0, 1, 1000, 300001, 5000001};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!quick_skips("sum_squares", sizes[i] > 1000000))
            sum_squares_case(sizes[i]);
}

/* Bounds of a moment or a parameter relative to its old value and the gradient, which
 * an update's (fused or not) rounding is relative to. */
static double *adam_scale(int64_t n, const float *ref, const float *old, const float *g)
{
    double *s = hmem(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        s[i] = fabs((double)ref[i]) + fabs((double)old[i]) + fabs((double)g[i]);
    return s;
}

/* clip 0: off; 1: a max norm above the gradient's norm; 2: below it (scaled). */
static void adam_case(int64_t n, int clip)
{
    size_t fb = sizeof(float) * (size_t)n;
    float *p = rand_f((size_t)n, -1, 1), *g = rand_f((size_t)n, -1, 1);
    float *m = rand_f((size_t)n, -0.1, 0.1), *v = rand_f((size_t)n, 0, 0.01);
    double sumsq = 0;
    for (int64_t i = 0; i < n; i++)
        sumsq += (double)g[i] * g[i];
    double t = 3, lr = 1e-3;
    frl_dev_adam c = {0.9f,
                      0.999f,
                      (float)(lr / (1 - pow(0.9, t))),
                      (float)(1 / sqrt(1 - pow(0.999, t))),
                      1e-8f,
                      clip == 0 ? 0.0 : sqrt(sumsq) * (clip == 1 ? 2.0 : 0.5)};
    float *rp = dup_host(p, fb), *rm = dup_host(m, fb), *rv = dup_host(v, fb);
    H->adam(hdev, n, rp, g, rm, rv, &c, &sumsq);
    check ck;
    check_start(&ck, "adam", "n=%lld clip=%s", (long long)n,
                clip == 0 ? "off" : (clip == 1 ? "inactive" : "active"));
    float *dp = up(gdev, p, fb), *dm = up(gdev, m, fb), *dv = up(gdev, v, fb);
    G->adam(gdev, n, dp, up(gdev, g, fb), dm, dv, up(gdev, &c, sizeof c),
            up(gdev, &sumsq, sizeof sumsq));
    float *gp = down(gdev, dp, fb), *gm = down(gdev, dm, fb), *gv = down(gdev, dv, fb);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, gp, rp, (size_t)n, adam_scale(n, rp, p, g), 1e-6, 1e-12);
        cmp_f(&ck, gm, rm, (size_t)n, adam_scale(n, rm, m, g), 1e-6, 1e-12);
        cmp_f(&ck, gv, rv, (size_t)n, adam_scale(n, rv, v, g), 1e-6, 1e-12);
        check_end(&ck);
    }
    free_all();
}

static void test_adam(void)
{
    for (int i = 0; i < N_ELEM; i++)
        for (int clip = 0; clip < 3; clip++)
            if (!tsan_skips("adam", elem_sizes[i] > 100000, "cases over 100,000 elements"))
                adam_case(elem_sizes[i], clip);
}

/* ---- the fused forward ---- */

/* Lays out an MLP in -> w[0..nl) from *off on, as frl_mlp does (weights then bias per
 * layer), and returns its output width. */
static int32_t plan_mlp(frl_dev_fused_mlp *m, int32_t in, const int32_t *w, int32_t nl,
                        int32_t act, int activate_last, uint64_t *off)
{
    *m = (frl_dev_fused_mlp){.layers = nl};
    m->width[0] = in;
    for (int32_t l = 0; l < nl; l++) {
        m->width[l + 1] = w[l];
        m->off_w[l] = *off;
        *off += (uint64_t)in * (uint64_t)w[l];
        m->off_b[l] = *off;
        *off += (uint64_t)w[l];
        m->act[l] = l + 1 < nl || activate_last ? act : 0;
        in = w[l];
    }
    return in;
}

typedef struct fused_case {
    const char *name;
    int32_t obs_w, act, norm;
    int32_t trunk[3], nt, actor[3], na, critic[3], nc;
} fused_case;

/* Weights of the scale an initialiser gives, so every layer's sums stay near 1. */
static float *fused_params(const frl_dev_fused *p, uint64_t n)
{
    float *w = rand_f((size_t)n, -1, 1);
    const frl_dev_fused_mlp *ms[3] = {&p->trunk, &p->actor, &p->critic};
    for (int i = 0; i < 3; i++)
        for (int32_t l = 0; l < ms[i]->layers; l++) {
            float s = 1.0f / sqrtf((float)ms[i]->width[l]);
            for (uint64_t k = 0; k < (uint64_t)ms[i]->width[l] * (uint64_t)ms[i]->width[l + 1]; k++)
                w[ms[i]->off_w[l] + k] *= s;
        }
    return w;
}

/* The device's forward of one network: the fused kernel, or (runs) forward_runs
 * without a population, in runs of FRL_DEV_RUN_ROWS rows. */
static void device_forward(int runs, int32_t rows, const frl_dev_fused *p, const float *params,
                           const float *obs, float *out, float *value)
{
    if (runs)
        G->forward_runs(gdev, rows, 0, p, params, NULL, NULL, obs, out, value);
    else
        G->forward_fused(gdev, rows, p, params, obs, out, value);
}

/* mapped: obs, out and value in page-locked host memory that the kernel reads and
 * writes directly; else device memory. Against the host's forward_fused. */
static void fused_run(const fused_case *fc, int32_t rows, int with_value, int mapped, int runs)
{
    frl_dev_fused p = {.obs_w = fc->obs_w, .clip = 5.0f};
    uint64_t np = 0;
    int32_t h = fc->nt ? plan_mlp(&p.trunk, fc->obs_w, fc->trunk, fc->nt, fc->act, 1, &np)
                       : fc->obs_w;
    int32_t ow = plan_mlp(&p.actor, h, fc->actor, fc->na, fc->act, 0, &np);
    plan_mlp(&p.critic, h, fc->critic, fc->nc, fc->act, 0, &np);
    size_t ob = sizeof(float) * (size_t)rows * (size_t)fc->obs_w;
    size_t outb = sizeof(float) * (size_t)rows * (size_t)ow, vb = sizeof(float) * (size_t)rows;
    float *params = fused_params(&p, np), *obs = rand_f(ob / sizeof(float), -3, 3);
    float *mean = rand_f((size_t)fc->obs_w, -1, 1), *inv = rand_f((size_t)fc->obs_w, 0.2, 2);
    float *ref = host_poisoned(outb), *ref_v = host_poisoned(vb);
    frl_dev_fused hp = p;
    if (fc->norm) {
        hp.norm_mean = mean;
        hp.norm_inv_std = inv;
        p.norm_mean = up(gdev, mean, sizeof(float) * (size_t)fc->obs_w);
        p.norm_inv_std = up(gdev, inv, sizeof(float) * (size_t)fc->obs_w);
    }
    H->forward_fused(hdev, rows, &hp, params, obs, ref, with_value ? ref_v : NULL);
    check ck;
    check_start(&ck, runs ? "forward_runs" : "forward_fused", "%s rows=%d%s%s", fc->name,
                (int)rows, with_value ? " +value" : "", mapped ? " mapped" : "");
    float *gout, *gv = NULL;
    const float *dp = up(gdev, params, sizeof(float) * np);
    if (mapped) {
        float *x = G->alloc_pinned(gdev, ob), *y = G->alloc_pinned(gdev, outb);
        float *v = G->alloc_pinned(gdev, vb);
        if (!x || !y || !v || !G->mapped(gdev, x, ob) || G->mapped(gdev, obs, ob))
            printf("%-58s FAIL (pinned memory, or mapped() on it)\n", ck.name), failures++;
        memcpy(x, obs, ob);
        memset(y, 0xFF, outb);
        memset(v, 0xFF, vb);
        device_forward(runs, rows, &p, dp, x, y, with_value ? v : NULL);
        if (synced(gdev, &ck)) {
            cmp_f(&ck, y, ref, outb / sizeof(float), NULL, 1e-5, 1e-5);
            if (with_value)
                cmp_f(&ck, v, ref_v, (size_t)rows, NULL, 1e-5, 1e-5);
            check_end(&ck);
        }
        G->release_pinned(gdev, x);
        G->release_pinned(gdev, y);
        G->release_pinned(gdev, v);
        free_all();
        return;
    }
    float *dy = dev_poisoned(gdev, outb), *dv = with_value ? dev_poisoned(gdev, vb) : NULL;
    device_forward(runs, rows, &p, dp, up(gdev, obs, ob), dy, dv);
    gout = down(gdev, dy, outb);
    if (with_value)
        gv = down(gdev, dv, vb);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, gout, ref, outb / sizeof(float), NULL, 1e-5, 1e-5);
        if (with_value)
            cmp_f(&ck, gv, ref_v, (size_t)rows, NULL, 1e-5, 1e-5);
        check_end(&ck);
    }
    free_all();
}

/* The bench's actor; a shared trunk wider than a block (two column passes) with a narrow
 * head (many input slices); the widest layers allowed; one-unit layers. */
static const fused_case fused_cases[] = {
    {"64-256-256-8 tanh", 64, 1, 0, {0}, 0, {256, 256, 8}, 3, {256, 256, 1}, 3},
    {"17-[33-300]-7 elu norm", 17, 3, 1, {33, 300}, 2, {7}, 1, {1}, 1},
    {"1024-1024-3 relu", 1024, 2, 1, {0}, 0, {1024, 3}, 2, {1024, 1}, 2},
    {"1-1-1 tanh", 1, 1, 0, {0}, 0, {1, 1}, 2, {1}, 1},
};

/* Each case at the first nr batch sizes, with the critic but at the second size, and
 * once more on mapped memory at size index mapped_at. */
static void run_cases(const fused_case *cases, size_t n, const int32_t *rows, size_t nr,
                      size_t mapped_at, int runs)
{
    for (size_t c = 0; c < n; c++)
        for (size_t r = 0; r < nr; r++) {
            fused_run(&cases[c], rows[r], r != 1, 0, runs);
            if (r == mapped_at)
                fused_run(&cases[c], rows[r], 1, 1, runs);
        }
}

/* Under the sanitizers (quick) without the 64-row batches: on the emulator every
 * thread of every row is a fiber, which TSan follows through each barrier. */
static void test_forward_fused(void)
{
    static const int32_t rows[] = {1, 3, 64};
    run_cases(fused_cases, sizeof fused_cases / sizeof fused_cases[0], rows, quick() ? 2 : 3,
              0, 0);
}

/* forward_runs on one network: a run, a run and a bit, several runs (the last one
 * short); mapped memory; with and without the critic; a wide layer (every thread a
 * column) and narrow ones (rows split among thread groups). */
static const fused_case runs_cases[] = {
    {"64-256-256-8 tanh", 64, 1, 0, {0}, 0, {256, 256, 8}, 3, {256, 256, 1}, 3},
    {"17-[33-200]-7 elu norm", 17, 3, 1, {33, 200}, 2, {7}, 1, {1}, 1},
    {"4-64-64-2 tanh", 4, 1, 0, {0}, 0, {64, 64, 2}, 3, {64, 64, 1}, 3},
    {"1-1-1 relu", 1, 2, 0, {0}, 0, {1, 1}, 2, {1}, 1},
};

static void test_forward_runs(void)
{
    static const int32_t rows[] = {1, 16, 17, 45};
    run_cases(runs_cases, sizeof runs_cases / sizeof runs_cases[0], rows, quick() ? 3 : 4, 2,
              1);
}

/* ---- a pixel encoder ---- */

/* im2col (a copy: exact), col2im (sums in another order: within rounding) and the
 * images' scaling (exact) against the host's, for unpadded and padded shapes, strides 1
 * to 4, one and several channels. */
/* ---- the learner's tiled passes ---- */

typedef struct tiled_case {
    int32_t rows, in, act, with_dx;
    int32_t actor[3], na, critic[3], nc;
} tiled_case;

static size_t acts_floats(const frl_dev_fused_mlp *m, int32_t rows)
{
    size_t f = 0;
    for (int32_t l = 1; l <= m->layers; l++)
        f += (size_t)rows * (size_t)m->width[l];
    return f;
}

/* |got - ref| <= tol (1 + |ref|): a layer's sums in another order. */
static void cmp_rel(check *ck, const float *got, const float *ref, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        check_val(ck, (int64_t)i, got[i], ref[i], tol * (1 + fabs((double)ref[i])));
}

/* Parameters at an initialiser's scale (weights within 1/sqrt(fan-in)). */
static float *tiled_params(const frl_dev_fused_mlp *m, int32_t nets, uint64_t n)
{
    float *w = rand_f((size_t)n, -0.5, 0.5);
    for (int32_t i = 0; i < nets; i++)
        for (int32_t l = 0; l < m[i].layers; l++)
            for (uint64_t k = 0; k < (uint64_t)m[i].width[l] * (uint64_t)m[i].width[l + 1]; k++)
                w[m[i].off_w[l] + k] *= 2.0f / sqrtf((float)m[i].width[l]);
    return w;
}

/* Both networks forward, then backward from random output gradients: the device's acts,
 * gradients and input gradients against the host's layer-by-layer ops. */
static void tiled_case_run(const tiled_case *t)
{
    frl_dev_fused_mlp m[2];
    uint64_t np = 0;
    plan_mlp(&m[0], t->in, t->actor, t->na, t->act, 0, &np);
    plan_mlp(&m[1], t->in, t->critic, t->nc, t->act, 0, &np);
    size_t f = sizeof(float), nx = (size_t)t->rows * (size_t)t->in;
    float *params = tiled_params(m, 2, np), *x = rand_f(nx, -1, 1);
    float *h_acts[2], *d_acts[2], *h_dx[2], *d_dx[2];
    const float *h_g[2], *d_g[2];
    size_t na[2], ng[2];
    float *d_params = up(gdev, params, f * np), *d_x = up(gdev, x, f * nx);
    for (int i = 0; i < 2; i++) {
        na[i] = acts_floats(&m[i], t->rows);
        ng[i] = (size_t)t->rows * (size_t)m[i].width[m[i].layers];
        h_acts[i] = host_poisoned(f * (na[i] ? na[i] : 1));
        d_acts[i] = dev_poisoned(gdev, f * (na[i] ? na[i] : 1));
        h_g[i] = rand_f(ng[i] ? ng[i] : 1, -1, 1);
        d_g[i] = up(gdev, h_g[i], f * (ng[i] ? ng[i] : 1));
        h_dx[i] = host_poisoned(f * (nx ? nx : 1));
        d_dx[i] = dev_poisoned(gdev, f * (nx ? nx : 1));
    }
    float *h_grads = host_poisoned(f * np), *d_grads = dev_poisoned(gdev, f * np);
    H->mlp_forward_tiled(hdev, t->rows, 2, m, params, x, h_acts);
    H->mlp_backward_tiled(hdev, t->rows, 2, m, params, x, h_acts, h_g, t->with_dx ? h_dx : NULL,
                          h_grads);
    G->mlp_forward_tiled(gdev, t->rows, 2, m, d_params, d_x, d_acts);
    G->mlp_backward_tiled(gdev, t->rows, 2, m, d_params, d_x, d_acts, d_g,
                          t->with_dx ? d_dx : NULL, d_grads);
    float *got_a[2], *got_dx[2], *got_g = down(gdev, d_grads, f * np);
    for (int i = 0; i < 2; i++) {
        got_a[i] = down(gdev, d_acts[i], f * (na[i] ? na[i] : 1));
        got_dx[i] = down(gdev, d_dx[i], f * (nx ? nx : 1));
    }
    check ck;
    check_start(&ck, "mlp_tiled", "rows=%d in=%d %d+%d layers act=%d dx=%d", t->rows, t->in,
                t->na, t->nc, t->act, t->with_dx);
    if (!synced(gdev, &ck))
        return;
    for (int i = 0; i < 2; i++) {
        cmp_rel(&ck, got_a[i], h_acts[i], na[i], 1e-5);
        if (t->with_dx)
            cmp_rel(&ck, got_dx[i], h_dx[i], nx, 1e-5);
    }
    /* The host sums a gradient over all the rows in float: its own rounding grows with
     * them (the device's tiles are 64 rows, summed in double). */
    cmp_rel(&ck, got_g, h_grads, (size_t)np, t->rows > 4096 ? 1e-3 : 1e-4);
    check_end(&ck);
    free_all();
}

/* One network forward (the value pass), and refusals. */
static void tiled_one_and_refusals(void)
{
    frl_dev_fused_mlp m[2];
    uint64_t np = 0;
    static const int32_t w[2] = {64, 1}, wide[2] = {65, 1};
    plan_mlp(&m[0], 5, w, 2, 1, 0, &np);
    float *params = tiled_params(m, 1, np), *x = rand_f(100 * 5, -1, 1);
    float *h = host_poisoned(sizeof(float) * acts_floats(&m[0], 100));
    float *d = dev_poisoned(gdev, sizeof(float) * acts_floats(&m[0], 100));
    H->mlp_forward_tiled(hdev, 100, 1, m, params, x, &h);
    G->mlp_forward_tiled(gdev, 100, 1, m, up(gdev, params, sizeof(float) * np),
                         up(gdev, x, sizeof(float) * 500), &d);
    float *got = down(gdev, d, sizeof(float) * acts_floats(&m[0], 100));
    check ck;
    check_start(&ck, "mlp_tiled", "one network forward");
    if (synced(gdev, &ck)) {
        cmp_rel(&ck, got, h, acts_floats(&m[0], 100), 1e-5);
        check_end(&ck);
    }
    check_start(&ck, "mlp_tiled", "a layer of 65 refused");
    np = 0;
    plan_mlp(&m[0], 5, wide, 2, 1, 0, &np);
    G->mlp_forward_tiled(gdev, 100, 1, m, NULL, NULL, &d);
    char err[256] = "";
    if (!G->sync(gdev, err, sizeof err) || !strstr(err, "mlp_forward_tiled"))
        check_val(&ck, 0, 1, 0, 0);
    check_end(&ck);
    free_all();
}

static void test_mlp_tiled(void)
{
    static const tiled_case cases[] = {
        {1, 4, 1, 0, {64, 64, 2}, 3, {64, 64, 1}, 3},
        {65, 4, 1, 1, {64, 64, 2}, 3, {64, 64, 1}, 3},
        {130, 17, 2, 1, {33, 6}, 2, {5, 1}, 2},
        {200, 64, 3, 1, {64, 3}, 2, {1}, 1},
        {1000, 3, 1, 0, {16, 7, 2}, 3, {40, 1}, 2},
        {16384, 4, 1, 0, {64, 64, 2}, 3, {64, 64, 1}, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!quick() || cases[i].rows <= 1000)
            tiled_case_run(&cases[i]);
    tiled_one_and_refusals();
}

static void conv_run(int32_t h, int32_t w, int32_t c, int32_t k, int32_t stride, int32_t pad,
                     int32_t batch)
{
    frl_conv2d cv;
    if (frl_conv2d_init(&cv, h, w, c, 5, k, k, stride, pad, FRL_NN_RELU, 0) != 0)
        die("conv_run: a shape that does not fit");
    size_t in = (size_t)batch * frl_conv2d_in_size(&cv);
    size_t pm = (size_t)batch * (size_t)cv.out_h * (size_t)cv.out_w * (size_t)cv.patch;
    float *x = rand_f(in, -2, 2), *ref = host_poisoned(sizeof(float) * pm);
    H->im2col(hdev, &cv, batch, x, ref);
    check ck;
    check_start(&ck, "im2col", "%dx%dx%d k%d s%d p%d batch %d", (int)h, (int)w, (int)c, (int)k,
                (int)stride, (int)pad, (int)batch);
    float *dp = dev_poisoned(gdev, sizeof(float) * pm);
    G->im2col(gdev, &cv, batch, up(gdev, x, sizeof(float) * in), dp);
    float *got = down(gdev, dp, sizeof(float) * pm);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, pm, NULL, 0, 0);
        check_end(&ck);
    }
    float *g = rand_f(pm, -1, 1), *dref = host_poisoned(sizeof(float) * in);
    H->col2im(hdev, &cv, batch, g, dref);
    check_start(&ck, "col2im", "%dx%dx%d k%d s%d p%d batch %d", (int)h, (int)w, (int)c, (int)k,
                (int)stride, (int)pad, (int)batch);
    float *ddx = dev_poisoned(gdev, sizeof(float) * in);
    G->col2im(gdev, &cv, batch, up(gdev, g, sizeof(float) * pm), ddx);
    float *dgot = down(gdev, ddx, sizeof(float) * in);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, dgot, dref, in, NULL, 1e-6, 1e-6);
        check_end(&ck);
    }
    free_all();
}

/* rows of `frames` h x w x c frames, each row padded to row_bytes. */
static void scale_run(int32_t h, int32_t w, int32_t c, int32_t frames, int32_t rows)
{
    frl_cnn n = {.in_h = h, .in_w = w, .in_c = c * frames, .frames = frames};
    size_t img = (size_t)h * (size_t)w * (size_t)c * (size_t)frames, row_bytes = img + 7;
    uint8_t *bytes = hmem(row_bytes * (size_t)rows);
    for (size_t i = 0; i < row_bytes * (size_t)rows; i++)
        bytes[i] = (uint8_t)(next_u64() >> 56);
    size_t out = img * (size_t)rows;
    float *ref = host_poisoned(sizeof(float) * out);
    H->scale_images(hdev, &n, rows, bytes, row_bytes, ref);
    check ck;
    check_start(&ck, "scale_images", "%dx%dx%d, %d frames, %d rows", (int)h, (int)w, (int)c,
                (int)frames, (int)rows);
    float *dx = dev_poisoned(gdev, sizeof(float) * out);
    G->scale_images(gdev, &n, rows, up(gdev, bytes, row_bytes * (size_t)rows), row_bytes, dx);
    float *got = down(gdev, dx, sizeof(float) * out);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, got, ref, out, NULL, 0, 0);
        check_end(&ck);
    }
    free_all();
}

static void test_conv(void)
{
    conv_run(20, 20, 4, 8, 4, 0, 3); /* Nature's first layer, small */
    conv_run(9, 9, 32, 4, 2, 0, 2);
    conv_run(7, 6, 3, 3, 1, 1, 2); /* padded */
    conv_run(11, 13, 2, 5, 3, 2, 1); /* padded, stride 3 */
    scale_run(12, 10, 1, 1, 3);
    scale_run(8, 9, 3, 4, 2); /* a stack of four RGB frames */
}

/* A population's rows: row r reads member members[r]'s parameter row (the trunk and
 * the actor, a prefix of the layout), no critic. */
static void members_run(const fused_case *fc, int32_t rows, int32_t P)
{
    frl_dev_fused p = {.obs_w = fc->obs_w, .clip = 5.0f};
    uint64_t np = 0;
    int32_t h = fc->nt ? plan_mlp(&p.trunk, fc->obs_w, fc->trunk, fc->nt, fc->act, 1, &np)
                       : fc->obs_w;
    int32_t ow = plan_mlp(&p.actor, h, fc->actor, fc->na, fc->act, 0, &np);
    uint64_t stride = np; /* the acting prefix: no critic */
    plan_mlp(&p.critic, h, fc->critic, fc->nc, fc->act, 0, &np);
    float *block = malloc(sizeof(float) * (size_t)P * stride);
    for (int32_t m = 0; m < P; m++) {
        float *w = fused_params(&p, np);
        memcpy(block + (size_t)m * stride, w, sizeof(float) * stride);
    }
    int32_t *mem = malloc(sizeof(int32_t) * (size_t)rows);
    for (int32_t r = 0; r < rows; r++)
        mem[r] = (int32_t)((r * 7 + 3) % P);
    size_t ob = sizeof(float) * (size_t)rows * (size_t)fc->obs_w;
    size_t outb = sizeof(float) * (size_t)rows * (size_t)ow;
    float *obs = rand_f(ob / sizeof(float), -3, 3), *ref = host_poisoned(outb);
    frl_dev_fused hp = p;
    hp.members = mem;
    hp.member_stride = (int64_t)stride;
    H->forward_fused(hdev, rows, &hp, block, obs, ref, NULL);
    check ck;
    check_start(&ck, "forward_fused", "%s rows=%d members=%d", fc->name, (int)rows, (int)P);
    p.members = up(gdev, mem, sizeof(int32_t) * (size_t)rows);
    p.member_stride = (int64_t)stride;
    const float *dp = up(gdev, block, sizeof(float) * (size_t)P * stride);
    float *dy = dev_poisoned(gdev, outb);
    G->forward_fused(gdev, rows, &p, dp, up(gdev, obs, ob), dy, NULL);
    float *gout = down(gdev, dy, outb);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, gout, ref, outb / sizeof(float), NULL, 1e-5, 1e-5);
        check_end(&ck);
    }
    free(block);
    free(mem);
    free_all();
}

/* The same rows sorted by member in runs (forward_runs) against the host's. */
static void runs_run(const fused_case *fc, int32_t P, const int32_t *per, int32_t norm)
{
    frl_dev_fused p = {.obs_w = fc->obs_w, .clip = 5.0f};
    uint64_t np = 0;
    int32_t h = fc->nt ? plan_mlp(&p.trunk, fc->obs_w, fc->trunk, fc->nt, fc->act, 1, &np)
                       : fc->obs_w;
    int32_t ow = plan_mlp(&p.actor, h, fc->actor, fc->na, fc->act, 0, &np);
    uint64_t stride = np;
    plan_mlp(&p.critic, h, fc->critic, fc->nc, fc->act, 0, &np);
    float *block = malloc(sizeof(float) * (size_t)P * stride);
    for (int32_t m = 0; m < P; m++)
        memcpy(block + (size_t)m * stride, fused_params(&p, np), sizeof(float) * stride);
    /* member m has per[m] rows, cut into runs of at most FRL_DEV_RUN_ROWS */
    int32_t rows = 0, runs = 0, start[256], member[256];
    for (int32_t m = 0; m < P; m++)
        for (int32_t left = per[m]; left > 0; left -= FRL_DEV_RUN_ROWS) {
            start[runs] = rows;
            member[runs++] = m;
            rows += left < FRL_DEV_RUN_ROWS ? left : FRL_DEV_RUN_ROWS;
        }
    start[runs] = rows;
    size_t ob = sizeof(float) * (size_t)rows * (size_t)fc->obs_w;
    size_t outb = sizeof(float) * (size_t)rows * (size_t)ow;
    float *obs = rand_f(ob / sizeof(float), -3, 3), *ref = host_poisoned(outb);
    float *mean = rand_f((size_t)fc->obs_w, -1, 1), *inv = rand_f((size_t)fc->obs_w, 0.2, 2);
    p.member_stride = (int64_t)stride;
    frl_dev_fused hp = p;
    if (norm) {
        hp.norm_mean = mean;
        hp.norm_inv_std = inv;
        p.norm_mean = up(gdev, mean, sizeof(float) * (size_t)fc->obs_w);
        p.norm_inv_std = up(gdev, inv, sizeof(float) * (size_t)fc->obs_w);
    }
    H->forward_runs(hdev, rows, runs, &hp, block, start, member, obs, ref, NULL);
    check ck;
    check_start(&ck, "forward_runs", "%s rows=%d runs=%d%s", fc->name, (int)rows, (int)runs,
                norm ? " norm" : "");
    const float *dp = up(gdev, block, sizeof(float) * (size_t)P * stride);
    float *dy = dev_poisoned(gdev, outb);
    G->forward_runs(gdev, rows, runs, &p, dp,
                    up(gdev, start, sizeof(int32_t) * (size_t)(runs + 1)),
                    up(gdev, member, sizeof(int32_t) * (size_t)runs), up(gdev, obs, ob), dy,
                    NULL);
    float *gout = down(gdev, dy, outb);
    if (synced(gdev, &ck)) {
        cmp_f(&ck, gout, ref, outb / sizeof(float), NULL, 1e-5, 1e-5);
        check_end(&ck);
    }
    free(block);
    free_all();
}

static void test_forward_members(void)
{
    members_run(&fused_cases[0], quick() ? 9 : 300, 5);
    members_run(&fused_cases[1], 17, 3);
    /* runs: one row, a full run, a run and a bit, several members */
    static const int32_t per[] = {1, 16, 17, 3, 40};
    static const fused_case mlp64 = {"4-64-64-2 tanh", 4, 1, 0, {0}, 0, {64, 64, 2}, 3, {64, 64, 1}, 3};
    static const fused_case shared = {"9-[200-64]-5 relu", 9, 2, 0, {200, 64}, 2, {5}, 1, {1}, 1};
    runs_run(&mlp64, 5, per, 0);
    runs_run(&shared, 5, per, 1);
}

/* ---- graphs ---- */

typedef struct graph_job {
    int32_t m, n, k;
    const float *x, *wt, *b; /* x: page-locked host; wt, b: device */
    float *dx, *dy, *y;      /* dx, dy: device; y: page-locked host */
} graph_job;

static void graph_enqueue(void *arg)
{
    const graph_job *j = arg;
    size_t f = sizeof(float);
    G->put(gdev, j->dx, j->x, f * (size_t)j->m * (size_t)j->k);
    G->linear_fwd(gdev, j->m, j->n, j->k, j->dx, j->wt, j->b, j->dy, 1);
    G->get(gdev, j->y, j->dy, f * (size_t)j->m * (size_t)j->n);
}

/* A layer's upload, product and download captured once, replayed on new inputs: each
 * replay gives the host's result for the inputs it found. */
static void graph_replays(void)
{
    graph_job j = {33, 40, 24, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t f = sizeof(float), xb = f * 33 * 24, yb = f * 33 * 40;
    float *wt = rand_f(24 * 40, -0.3, 0.3), *b = rand_f(40, -1, 1);
    float *x = G->alloc_pinned(gdev, xb), *y = G->alloc_pinned(gdev, yb);
    j.x = x, j.y = y, j.wt = up(gdev, wt, f * 24 * 40), j.b = up(gdev, b, f * 40);
    j.dx = dmem(xb), j.dy = dmem(yb);
    char err[256] = "";
    void *g = x && y ? G->graph_capture(gdev, graph_enqueue, &j, err, sizeof err) : NULL;
    for (int round = 0; round < 3 && g; round++) {
        check ck;
        check_start(&ck, "graph", "replay %d of a captured layer", round);
        float *in = rand_f(33 * 24, -2, 2), *ref = host_poisoned(yb);
        memcpy(x, in, xb);
        memset(y, 0xFF, yb);
        H->linear_fwd(hdev, 33, 40, 24, in, wt, b, ref, 1);
        G->graph_launch(gdev, g);
        if (synced(gdev, &ck)) {
            cmp_f(&ck, y, ref, 33 * 40, NULL, 1e-5, 1e-5);
            check_end(&ck);
        }
    }
    if (!g)
        printf("%-58s FAIL (%s)\n", "graph              capture", err), failures++;
    G->graph_destroy(gdev, g);
    G->release_pinned(gdev, x);
    G->release_pinned(gdev, y);
}

/* A sync cannot be captured: the capture fails with a reason, nothing ran, and the
 * stream goes on with no failure kept. (The emulator also refuses a copy from pageable
 * memory, which the runtime on an H200 captured.) */
static void enqueue_with_sync(void *arg)
{
    graph_enqueue(arg);
    char err[256];
    G->sync(gdev, err, sizeof err);
}

static void graph_refused(void)
{
    size_t f = sizeof(float);
    graph_job j = {1, 1, 1, NULL, NULL, NULL, NULL, NULL, NULL};
    float *x = G->alloc_pinned(gdev, f), *y = G->alloc_pinned(gdev, f);
    j.x = x, j.y = y, j.dx = dmem(f), j.dy = dmem(f), j.wt = up(gdev, rand_f(1, 0, 1), f);
    char err[256] = "", after[256] = "";
    G->sync(gdev, after, sizeof after);
    void *g = x && y ? G->graph_capture(gdev, enqueue_with_sync, &j, err, sizeof err) : NULL;
    int kept = G->sync(gdev, after, sizeof after);
    int ok = x && y && g == NULL && err[0] && !kept;
    printf("%-58s %s (%s)\n", "graph              a sync refused", ok ? "ok" : "FAIL",
           g ? "captured" : err);
    failures += !ok;
    G->graph_destroy(gdev, g);
    G->release_pinned(gdev, x);
    G->release_pinned(gdev, y);
}

static void test_graphs(void)
{
    graph_replays();
    graph_refused();
    free_all();
}

/* ---- memory, transfers and errors ---- */

/* put, copy (into the middle of another buffer), zero (part of it) and get, through
 * pinned host memory one way and pageable the other; alloc(0) and release(NULL). */
static void memory_check(check *ck, uint8_t *pin, size_t n)
{
    size_t off = 4097, len = 300001;
    uint8_t *src = hmem(n), *want = host_poisoned(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)next_u64();
    memcpy(want + off, src, n - off); /* the first off bytes keep the poison */
    memset(want + 2 * off, 0, len);
    uint8_t *a = up(gdev, src, n), *b = dev_poisoned(gdev, n);
    G->copy(gdev, b + off, a, n - off);
    G->zero(gdev, b + 2 * off, len);
    G->get(gdev, pin, b, n);
    if (!synced(gdev, ck))
        return;
    cmp_bytes(ck, pin, want, n);
    G->put(gdev, a, pin, n);
    uint8_t *back = down(gdev, a, n);
    if (synced(gdev, ck))
        cmp_bytes(ck, back, want, n);
}

static void test_memory(void)
{
    size_t n = 1000003;
    check ck;
    check_start(&ck, "memory", "put/copy/zero/get n=%zu", n);
    uint8_t *pin = G->alloc_pinned(gdev, n);
    void *empty = G->alloc(gdev, 0);
    check_val(&ck, 0, pin != NULL, 1, 0);
    check_val(&ck, 1, empty != NULL, 1, 0);
    if (pin)
        memory_check(&ck, pin, n);
    G->release(gdev, empty);
    G->release(gdev, NULL);
    G->release_pinned(gdev, pin);
    G->release_pinned(gdev, NULL);
    check_end(&ck);
    free_all();
}

/* A failed op is reported by the next sync, once: the one after it succeeds. */
static void test_errors(void)
{
    check ck;
    check_start(&ck, "errors", "sticky first failure");
    char err[256] = "";
    float *buf = dev_poisoned(gdev, 64 * sizeof(float));
    frl_dm_loss s = {0.2, 0.01, 0.5, 0, 0, 0, 1.0};
    /* A Gaussian head without d_log_std: the CUDA ops refuse it (a recorded failure). */
    G->loss_rows(gdev, 1, 2, 0, &s, buf, buf, buf, buf, buf, buf, buf, buf, (const uint8_t *)buf,
                 buf, buf, buf, buf, NULL, buf);
    char seen[256] = "";
    int queued = G->check(gdev, seen, sizeof seen);
    int first = G->sync(gdev, err, sizeof err);
    int second = G->sync(gdev, err + 128, sizeof err - 128);
    check_val(&ck, 0, first != 0 && err[0] != '\0', 1, 0);
    check_val(&ck, 1, second, 0, 0);
    /* check saw the same failure and left it for the sync. */
    check_val(&ck, 2, queued != 0 && strcmp(seen, err) == 0, 1, 0);
    check_val(&ck, 3, G->check(gdev, seen, sizeof seen), 0, 0);
    check_end(&ck);
    if (first)
        printf("%-58s (the sentence: %s)\n", "", err);
    free_all();
}

/* ---- ordering between streams ---- */

/* Stream A (gdev) adds 1 to a large buffer `rounds` times and records an event; stream B
 * (gtf32, another stream on the same device) copies the buffer out, after waiting for
 * the event when `wait` is set. Returns how many elements of the copy hold the final
 * value (exact: small integers in float). */
static size_t copied_final(float *x, const float *ones, size_t n, int rounds, void *ev,
                           int wait, const check *c)
{
    float *y = dev_poisoned(gtf32, sizeof(float) * n);
    G->zero(gdev, x, sizeof(float) * n);
    if (!synced(gtf32, c) || !synced(gdev, c))
        return 0;
    for (int r = 0; r < rounds; r++)
        G->axpy(gdev, (int64_t)n, 1.0f, ones, x);
    G->record(gdev, ev);
    if (wait)
        G->wait(gtf32, ev);
    G->copy(gtf32, y, x, sizeof(float) * n);
    float *h = down(gtf32, y, sizeof(float) * n);
    if (!synced(gtf32, c) || !synced(gdev, c))
        return 0;
    size_t done = 0;
    for (size_t i = 0; i < n; i++)
        done += h[i] == (float)rounds;
    return done;
}

/* After wait, the other stream sees everything recorded before the event. Without it the
 * copy may run while the adds do: printed, as a sign the case can tell the two apart, but
 * not asserted, since the hardware may order them anyway. check() reports a queued
 * failure without waiting and without clearing it. */
static void test_events(void)
{
    check ck;
    check_start(&ck, "events", "record on one stream, wait on another");
    /* Big enough that a GPU is still adding when the copy would start without the wait
     * (the emulator defers the adds until the wait, so any size shows it there). */
    size_t n = (size_t)1 << (quick() ? 16 : 23);
    int rounds = 64;
    float *x = dmem(sizeof(float) * n), *ones = dmem(sizeof(float) * n);
    float *h1 = hmem(sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        h1[i] = 1.0f;
    G->put(gdev, ones, h1, sizeof(float) * n);
    void *ev = G->event_create(gdev);
    if (!ev) {
        char err[256] = "";
        G->sync(gdev, err, sizeof err);
        printf("%-58s FAIL (event_create: %s)\n", ck.name, err);
        failures++;
        free_all();
        return;
    }
    size_t waited = copied_final(x, ones, n, rounds, ev, 1, &ck);
    check_val(&ck, 0, (double)waited, (double)n, 0);
    size_t raced = copied_final(x, ones, n, rounds, ev, 0, &ck);
    char err[256] = "";
    check_val(&ck, 1, G->check(gdev, err, sizeof err), 0, 0);
    G->event_destroy(gdev, ev);
    check_val(&ck, 2, G->sync(gdev, err, sizeof err), 0, 0);
    check_end(&ck);
    printf("%-58s (without the wait the copy saw %zu of %zu final)\n", "", raced, n);
    free_all();
}

/* ---- the harness ---- */

typedef struct test {
    const char *name;
    void (*run)(void);
} test;

static const test tests[] = {
    {"memory", test_memory},
    {"errors", test_errors},
    {"linear_fwd", test_linear_fwd},
    {"linear_bwd_input", test_linear_bwd_input},
    {"linear_bwd_weight", test_linear_bwd_weight},
    {"act_bwd", test_act_bwd},
    {"wgrad", test_wgrad},
    {"mlp_tiled", test_mlp_tiled},
    {"axpy", test_axpy},
    {"normalize", test_normalize},
    {"gather", test_gather},
    {"gather_fields", test_gather_fields},
    {"copy2d", test_copy2d},
    {"rnn_cell", test_rnn_cell},
    {"advantages", test_advantages},
    {"log_ratio", test_log_ratio},
    {"moments", test_moments},
    {"loss_rows", test_loss_rows},
    {"col_sums", test_col_sums},
    {"sum_squares", test_sum_squares},
    {"adam", test_adam},
    {"events", test_events},
    {"forward_fused", test_forward_fused},
    {"forward_members", test_forward_members},
    {"forward_runs", test_forward_runs},
    {"conv", test_conv},
    {"graph", test_graphs},
};

static uint64_t seed_from_env(void)
{
    const char *s = getenv("FRL_TEST_SEED");
    return s && *s ? strtoull(s, NULL, 0) : 20240611u;
}

/* 0 with the three contexts open; else 77 (no device) or 1, having said why. */
static int open_all(void)
{
    char err[256] = "";
    int32_t count = 0, major = 0, minor = 0;
    uint64_t mem = 0;
    char name[256] = "?";
    if (G->probe(&count, err, sizeof err) || G->open(&gdev, 0, 0, err, sizeof err)) {
        printf("SKIP: %s\n", err);
        return 77;
    }
    if (G->open(&gtf32, 0, 1, err, sizeof err)) {
        printf("SKIP: %s (the TF32 context)\n", err);
        return 77;
    }
    if (H->open(&hdev, 0, 0, err, sizeof err)) {
        printf("host ops: %s\n", err);
        return 1;
    }
    G->describe(0, name, sizeof name, &major, &minor, &mem);
    printf("device 0 of %d: %s, compute %d.%d, %.1f GiB\n", (int)count, name, (int)major,
           (int)minor, (double)mem / (1u << 30));
    return 0;
}

static void close_all(void)
{
    G->close(gtf32);
    G->close(gdev);
    if (hdev)
        H->close(hdev);
}

/* Whether a test runs: all with no arguments, else those whose name contains one. */
static int selected(const char *name, int argc, char **argv)
{
    for (int a = 1; a < argc; a++)
        if (strstr(name, argv[a]))
            return 1;
    return argc <= 1;
}

int main(int argc, char **argv)
{
    uint64_t seed = seed_from_env();
    printf("seed %llu (FRL_TEST_SEED=%llu repeats this run)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    int rc = open_all();
    if (rc) {
        close_all();
        return rc;
    }
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (!selected(tests[i].name, argc, argv))
            continue;
        /* Each op its own stream of numbers: a filtered run sees the same inputs. */
        rng_state = seed * 0x100000001B3ull + i;
        tests[i].run();
    }
    close_all();
    printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
