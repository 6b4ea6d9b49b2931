/* The device ops on host memory: the CPU kernel table for the networks and plain loops
 * over lib/nn/dev_math.h for the learner. It is the CPU reference the CUDA ops are
 * tested against, and the ops of the test build of the plugin, which runs the plugin's
 * networks and learner (and the core's dispatch to them) on machines without a GPU.
 * FAKE_CUDA=nodevice makes its probe fail as a machine without a device would, and
 * FAKE_CUDA_FAIL_SYNC=n makes the process's n-th sync from then on report a device
 * failure (the tests' stand-in for an Xid error or a lost device), and
 * FAKE_CUDA_NO_PINNED=1 makes page-locked allocations fail (the locked-memory limit), and
 * FAKE_CUDA_NO_EVENTS=1 makes event creation fail. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kernels.h"
#include "ops_host.h"

struct frl_dev {
    const frl_kernels *k;
    char err[256];
};

static int probe(int32_t *count, char *err, size_t err_size)
{
    const char *mode = getenv("FAKE_CUDA");
    if (mode && strcmp(mode, "nodevice") == 0) {
        snprintf(err, err_size, "the CUDA driver sees no device");
        return 1;
    }
    *count = 1;
    return 0;
}

static int describe(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes)
{
    snprintf(name, name_size, "host stand-in %d", (int)index);
    *cc_major = 0;
    *cc_minor = 0;
    *memory_bytes = 0;
    return 0;
}

static int open_dev(frl_dev **out, int32_t device, int32_t tf32, char *err, size_t err_size)
{
    (void)device;
    (void)tf32;
    frl_dev *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, err_size, "out of memory for a host device context");
        return 1;
    }
    /* The scalar table: the reference every other table is tested against. */
    d->k = frl_kernels_all()[0];
    *out = d;
    return 0;
}

static void close_dev(frl_dev *d)
{
    free(d);
}

/* A fault knob counting down: FAKE_CUDA_FAIL_SYNC=n or FAKE_CUDA_FAIL_ALLOC=n, read
 * again whenever the variable changes, makes the n-th call from then on fail. */
typedef struct countdown {
    const char *name;
    _Atomic(const char *) seen;
    atomic_int left;
} countdown;

static countdown fail_alloc = {.name = "FAKE_CUDA_FAIL_ALLOC"};
static countdown fail_sync = {.name = "FAKE_CUDA_FAIL_SYNC"};

/* Nonzero when this call is the n-th since the knob was set. */
static int counted_out(countdown *k)
{
    const char *v = getenv(k->name);
    if (v != atomic_exchange(&k->seen, v))
        atomic_store(&k->left, v ? atoi(v) : 0);
    return atomic_load(&k->left) > 0 && atomic_fetch_sub(&k->left, 1) == 1;
}

/* 64-byte aligned, like the library's own buffers (the kernels do not need it). */
static void *aligned_block(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 64, bytes ? bytes : 1) == 0 ? p : NULL;
}

/* Device memory. NULL means out of memory to the callers, as from the CUDA ops. */
static void *alloc_mem(frl_dev *d, size_t bytes)
{
    (void)d;
    return counted_out(&fail_alloc) ? NULL : aligned_block(bytes); /* out of memory */
}

static void release_mem(frl_dev *d, void *p)
{
    (void)d;
    free(p);
}

static void *alloc_pinned(frl_dev *d, size_t bytes)
{
    const char *v = getenv("FAKE_CUDA_NO_PINNED");
    if (v && v[0] == '1') {
        snprintf(d->err, sizeof d->err, "page-locked allocation of %zu bytes refused "
                 "(FAKE_CUDA_NO_PINNED)", bytes);
        return NULL;
    }
    return aligned_block(bytes);
}

static void move_bytes(frl_dev *d, void *dst, const void *src, size_t bytes)
{
    (void)d;
    if (bytes)
        memmove(dst, src, bytes);
}

static void zero_bytes(frl_dev *d, void *dst, size_t bytes)
{
    (void)d;
    if (bytes)
        memset(dst, 0, bytes);
}

static int sync_dev(frl_dev *d, char *err, size_t err_size)
{
    if (counted_out(&fail_sync)) {
        snprintf(err, err_size, "injected device failure (FAKE_CUDA_FAIL_SYNC)");
        d->err[0] = '\0';
        return 1;
    }
    if (!d->err[0])
        return 0;
    snprintf(err, err_size, "%s", d->err);
    d->err[0] = '\0';
    return 1;
}

/* ---- networks ---- */

static void linear_fwd(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x,
                       const float *wt, const float *b, float *y, int32_t act)
{
    d->k->linear_fwd(m, n, k, x, wt, b, y, (frl_nn_act)act);
}

static void linear_bwd_input(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *dy,
                             const float *wt, float *dx)
{
    d->k->linear_bwd_input(m, n, k, dy, wt, dx);
}

static void linear_bwd_weight(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x,
                              const float *dy, float *dwt, float *db, int32_t accumulate)
{
    d->k->linear_bwd_weight(m, n, k, x, dy, dwt, db, accumulate);
}

static void act_bwd(frl_dev *d, int64_t n, const float *y, const float *dy, float *dx,
                    int32_t act)
{
    d->k->act_bwd(n, y, dy, dx, (frl_nn_act)act);
}

/* The reference: act_bwd, then linear_bwd_weight on what it gave. */
static void wgrad(frl_dev *d, int32_t m, int32_t n, int32_t k, const float *x, const float *g,
                  const float *y, int32_t act, float *delta, float *dwt, float *db,
                  int32_t accumulate)
{
    if (act != 0) {
        act_bwd(d, (int64_t)m * n, y, g, delta, act);
        g = delta;
    }
    linear_bwd_weight(d, m, n, k, x, g, dwt, db, accumulate);
}

/* The reference of the tiled passes: each network layer by layer through the ops
 * above, as dev_net.c runs them op by op. */
static void mlp_forward_tiled(frl_dev *d, int32_t rows, int32_t nets, const frl_dev_fused_mlp *m,
                              const float *params, const float *x, float *const *acts)
{
    for (int32_t i = 0; i < nets; i++) {
        const float *in = x;
        float *y = acts[i];
        for (int32_t l = 0; l < m[i].layers; l++) {
            int32_t k = m[i].width[l], n = m[i].width[l + 1];
            linear_fwd(d, rows, n, k, in, params + m[i].off_w[l], params + m[i].off_b[l], y,
                       m[i].act[l]);
            in = y;
            y += (size_t)rows * (size_t)n;
        }
    }
}

/* Network i's backward from its gradient g (copied into cur; nxt as wide). */
static void tiled_net_backward(frl_dev *d, int32_t rows, const frl_dev_fused_mlp *m,
                               const float *params, const float *x, const float *acts,
                               float *cur, float *nxt, float *dx, float *grads)
{
    for (int32_t l = m->layers - 1; l >= 0; l--) {
        int32_t k = m->width[l], n = m->width[l + 1];
        size_t off = 0;
        for (int32_t i = 0; i < l; i++)
            off += (size_t)rows * (size_t)m->width[i + 1];
        const float *y = acts + off, *in = l == 0 ? x : acts + off - (size_t)rows * (size_t)k;
        if (m->act[l])
            act_bwd(d, (int64_t)rows * n, y, cur, cur, m->act[l]);
        linear_bwd_weight(d, rows, n, k, in, cur, grads + m->off_w[l], grads + m->off_b[l], 0);
        float *to = l > 0 ? nxt : dx;
        if (to)
            linear_bwd_input(d, rows, n, k, cur, params + m->off_w[l], to);
        nxt = cur;
        cur = to;
    }
}

static void mlp_backward_tiled(frl_dev *d, int32_t rows, int32_t nets, const frl_dev_fused_mlp *m,
                               const float *params, const float *x, float *const *acts,
                               const float *const *g, float *const *dx, float *grads)
{
    for (int32_t i = 0; i < nets; i++) {
        int32_t wide = 1, L = m[i].layers;
        for (int32_t l = 0; l <= L; l++)
            wide = m[i].width[l] > wide ? m[i].width[l] : wide;
        size_t bytes = sizeof(float) * (size_t)(rows > 0 ? rows : 1) * (size_t)wide;
        float *cur = malloc(bytes), *nxt = malloc(bytes);
        if (!cur || !nxt) {
            snprintf(d->err, sizeof d->err, "mlp_backward_tiled: out of host memory");
        } else {
            memcpy(cur, g[i], sizeof(float) * (size_t)rows * (size_t)m[i].width[L]);
            tiled_net_backward(d, rows, &m[i], params, x, acts[i], cur, nxt, dx ? dx[i] : NULL,
                               grads);
        }
        free(cur);
        free(nxt);
    }
}

static void axpy(frl_dev *d, int64_t n, float alpha, const float *x, float *y)
{
    (void)d;
    for (int64_t i = 0; i < n; i++)
        y[i] += alpha * x[i];
}

/* ---- the learner ---- */

static void normalize(frl_dev *d, int32_t rows, int32_t width, const float *x,
                      const float *mean, const float *inv_std, float clip, float *y)
{
    (void)d;
    for (int64_t r = 0; r < rows; r++)
        for (int32_t c = 0; c < width; c++) {
            int64_t i = r * width + c;
            y[i] = frl_dm_normalize(x[i], mean[c], inv_std[c], clip);
        }
}

static void gather(frl_dev *d, int32_t rows, size_t row_bytes, const int32_t *idx,
                   const void *src, void *dst)
{
    (void)d;
    for (int32_t r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)r * row_bytes,
               (const char *)src + (size_t)idx[r] * row_bytes, row_bytes);
}

static void gather_fields(frl_dev *d, int32_t rows, const int32_t *idx, int32_t fields,
                          const frl_dev_field *f)
{
    for (int32_t i = 0; i < fields; i++)
        gather(d, rows, f[i].row_bytes, idx, f[i].src, f[i].dst);
}

static void copy2d(frl_dev *d, int32_t rows, size_t row_bytes, void *dst, size_t dst_pitch,
                   const void *src, size_t src_pitch)
{
    (void)d;
    for (int32_t r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)r * dst_pitch, (const char *)src + (size_t)r * src_pitch,
               row_bytes);
}

static void rnn_cell(frl_dev *d, int32_t kind, int32_t rows, int32_t h, const float *gx,
                     const float *gh, const float *hp, const float *cp, float *hout, float *cout)
{
    (void)d;
    int64_t g = kind == 2 ? 4 : 3;
    for (int64_t r = 0; r < rows; r++)
        for (int32_t j = 0; j < h; j++) {
            int64_t i = r * h + j;
            const float *x = gx + r * g * h, *y = gh + r * g * h;
            if (kind == 2)
                hout[i] = frl_dm_lstm_unit(h, j, x, y, cp[i], &cout[i]);
            else
                hout[i] = frl_dm_gru_unit(h, j, x, y, hp[i]);
        }
}

static void advantages(frl_dev *d, int32_t T, int32_t B, const float *reward,
                       const float *value, const float *log_ratio, const uint8_t *term,
                       const uint8_t *trunc, const uint8_t *reset, const float *bootstrap,
                       const frl_dm_adv_params *p, float *adv, float *ret, uint8_t *valid)
{
    (void)d;
    for (int32_t b = 0; b < B; b++) {
        if (p->vtrace && log_ratio)
            frl_dm_vtrace_column(T, B, b, reward, value, log_ratio, term, trunc, reset,
                                 bootstrap[b], p, adv, ret, valid);
        else
            frl_dm_gae_column(T, B, b, reward, value, term, trunc, reset, bootstrap[b], p,
                              adv, ret, valid);
    }
}

static void log_ratio(frl_dev *d, int32_t rows, int32_t n, int32_t discrete, const float *z,
                      const void *actions, const float *log_std, const float *old_lp,
                      float *out)
{
    (void)d;
    for (int64_t r = 0; r < rows; r++)
        out[r] = (float)(frl_dm_logp(z + r * n, n, discrete, (const int32_t *)actions + r,
                                     (const float *)actions + r * n, log_std) -
                         old_lp[r]);
}

static void moments(frl_dev *d, int32_t rows, const float *adv, const uint8_t *valid,
                    int32_t norm_adv, float *out)
{
    (void)d;
    double s = 0, ss = 0;
    int64_t n = 0;
    for (int32_t r = 0; r < rows; r++)
        if (valid[r]) {
            s += adv[r];
            n++;
        }
    double mean = n ? s / (double)n : 0;
    for (int32_t r = 0; r < rows; r++)
        if (valid[r])
            ss += (adv[r] - mean) * (adv[r] - mean);
    double sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    out[0] = norm_adv ? (float)mean : 0.0f;
    out[1] = norm_adv ? (float)(1.0 / (sd + 1e-8)) : 1.0f;
    out[2] = n ? (float)(1.0 / (double)n) : 0.0f;
    out[3] = (float)n;
    if (n == 0)
        out[0] = 0.0f, out[1] = 1.0f;
}

static void loss_row(int32_t r, int32_t n, int32_t discrete, const frl_dm_loss *s,
                     const float *z, const float *value, const void *actions,
                     const float *old_lp, const float *log_ratio, const float *adv,
                     const float *ret, const float *old_v, const float *log_std,
                     const float *mo, float *d_z, float *d_value, float *d_log_std,
                     float *stats)
{
    float dummy[1];
    frl_dm_row row = {
        .z = z + (size_t)r * (size_t)n,
        .value = value[r],
        .old_v = old_v[r],
        .old_lp = old_lp[r],
        .adv = (float)((adv[r] - mo[0]) * mo[1]),
        .ret = ret[r],
        .a_int = (const int32_t *)actions + r,
        .a_box = (const float *)actions + (size_t)r * (size_t)n,
        .log_std = log_std,
    };
    if (s->decoupled)
        frl_dm_decouple(log_ratio[r], s->rho_bar, old_lp[r], row.adv, &row.old_lp, &row.adv);
    frl_dm_row_grad(s, &row, n, discrete, mo[2], d_z + (size_t)r * (size_t)n, d_value + r,
                    d_log_std ? d_log_std + (size_t)r * (size_t)n : dummy,
                    stats + (size_t)r * FRL_DM_STATS);
}

static void loss_rows(frl_dev *d, int32_t rows, int32_t n, int32_t discrete,
                      const frl_dm_loss *s, const float *z, const float *value,
                      const void *actions, const float *old_lp, const float *log_ratio,
                      const float *adv, const float *ret, const float *old_v,
                      const uint8_t *valid, const float *log_std, const float *mo, float *d_z,
                      float *d_value, float *d_log_std, float *stats)
{
    (void)d;
    for (int32_t r = 0; r < rows; r++) {
        if (valid[r]) {
            loss_row(r, n, discrete, s, z, value, actions, old_lp, log_ratio, adv, ret, old_v,
                     log_std, mo, d_z, d_value, d_log_std, stats);
            continue;
        }
        memset(d_z + (size_t)r * (size_t)n, 0, sizeof(float) * (size_t)n);
        d_value[r] = 0;
        if (d_log_std)
            memset(d_log_std + (size_t)r * (size_t)n, 0, sizeof(float) * (size_t)n);
        memset(stats + (size_t)r * FRL_DM_STATS, 0, sizeof(float) * FRL_DM_STATS);
    }
}

static void col_sums(frl_dev *d, int32_t rows, int32_t cols, const float *x, float *out)
{
    (void)d;
    for (int32_t c = 0; c < cols; c++) {
        double s = 0;
        for (int64_t r = 0; r < rows; r++)
            s += x[r * cols + c];
        out[c] = (float)s;
    }
}

static void sum_squares(frl_dev *d, int64_t n, const float *x, double *out)
{
    (void)d;
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    *out = s;
}

static void adam(frl_dev *d, int64_t n, float *p, const float *g, float *m, float *v,
                 const frl_dev_adam *c, const double *sumsq)
{
    (void)d;
    double norm = sqrt(*sumsq);
    float gscale = c->max_norm > 0 && norm > c->max_norm ? (float)(c->max_norm / (norm + 1e-6))
                                                          : 1.0f;
    for (int64_t i = 0; i < n; i++)
        frl_dm_adam(p + i, g[i], m + i, v + i, gscale, c->b1, c->b2, c->step, c->rbc2, c->eps);
}

/* ---- acting at small batches ---- */

/* The MLP m on one row from in, through the two buffers a and b (each of the widest
 * layer); returns the output's buffer. */
static const float *fused_mlp(frl_dev *d, const frl_dev_fused_mlp *m, const float *params,
                              const float *in, float *a, float *b)
{
    const float *cur = in;
    for (int32_t l = 0; l < m->layers; l++) {
        float *next = l % 2 ? b : a;
        d->k->linear_fwd(1, m->width[l + 1], m->width[l], cur, params + m->off_w[l],
                         params + m->off_b[l], next, (frl_nn_act)m->act[l]);
        cur = next;
    }
    return cur;
}

/* Row by row through the kernel table: the reference the fused CUDA kernel is held to. */
static void forward_fused(frl_dev *d, int32_t rows, const frl_dev_fused *p, const float *params,
                          const float *obs, float *out, float *value)
{
    enum { W = FRL_DEV_FUSED_MAX_WIDTH };
    float *buf = malloc(sizeof(float) * 5 * W);
    if (!buf) {
        snprintf(d->err, sizeof d->err, "forward_fused: out of host memory");
        return;
    }
    int32_t ow = p->actor.width[p->actor.layers];
    for (int32_t r = 0; r < rows; r++) {
        const float *x = obs + (size_t)r * (size_t)p->obs_w;
        for (int32_t i = 0; i < p->obs_w; i++)
            buf[i] = p->norm_mean ? frl_dm_normalize(x[i], p->norm_mean[i], p->norm_inv_std[i],
                                                     p->clip)
                                  : x[i];
        const float *w = p->members ? params + (int64_t)p->members[r] * p->member_stride
                                    : params;
        const float *h = fused_mlp(d, &p->trunk, w, buf, buf + W, buf + 2 * W);
        float *s1 = buf + 3 * W, *s2 = h == buf + W ? buf + 2 * W : buf + W;
        memcpy(out + (size_t)r * (size_t)ow, fused_mlp(d, &p->actor, w, h, s1, s2),
               sizeof(float) * (size_t)ow);
        if (value)
            value[r] = *fused_mlp(d, &p->critic, w, h, s1, s2);
    }
    free(buf);
}

static int32_t fused_blocks(frl_dev *d)
{
    (void)d;
    return 1;
}

/* Each run's rows through forward_fused with the run's member's networks; without
 * start, the rows are one run of one network. */
static void forward_runs(frl_dev *d, int32_t rows, int32_t runs, const frl_dev_fused *p,
                         const float *params, const int32_t *start, const int32_t *member,
                         const float *obs, float *out, float *value)
{
    frl_dev_fused q = *p;
    q.members = NULL;
    if (!start) {
        forward_fused(d, rows, &q, params, obs, out, value);
        return;
    }
    int32_t ow = p->actor.width[p->actor.layers];
    for (int32_t r = 0; r < runs; r++)
        forward_fused(d, start[r + 1] - start[r], &q,
                      params + (int64_t)member[r] * p->member_stride,
                      obs + (size_t)start[r] * (size_t)p->obs_w,
                      out + (size_t)start[r] * (size_t)ow, value ? value + start[r] : NULL);
}

/* ---- a pixel encoder: conv.c's and cnn.c's loops, written out again ---- */

static void scale_images(frl_dev *d, const frl_cnn *n, int32_t rows, const uint8_t *images,
                         size_t row_bytes, float *x)
{
    (void)d;
    const float s = 1.0f / 255.0f;
    size_t pixels = (size_t)n->in_h * (size_t)n->in_w, k = (size_t)n->frames;
    size_t c = (size_t)n->in_c / k;
    for (int32_t r = 0; r < rows; r++) {
        const uint8_t *row = images + (size_t)r * row_bytes;
        float *xr = x + (size_t)r * pixels * k * c;
        for (size_t j = 0; j < k; j++)
            for (size_t p = 0; p < pixels; p++)
                for (size_t ch = 0; ch < c; ch++)
                    xr[p * k * c + j * c + ch] = (float)row[(j * pixels + p) * c + ch] * s;
    }
}

/* Visits every (position, patch element) with the input value it reads (NULL where the
 * patch overhangs): im2col copies, col2im adds. */
static void patches_walk(const frl_conv2d *c, int32_t batch, float *patches, float *x,
                         int add)
{
    for (int32_t b = 0; b < batch; b++)
        for (int32_t oy = 0; oy < c->out_h; oy++)
            for (int32_t ox = 0; ox < c->out_w; ox++)
                for (int32_t ki = 0; ki < c->kh; ki++)
                    for (int32_t kj = 0; kj < c->kw; kj++)
                        for (int32_t ch = 0; ch < c->in_c; ch++) {
                            int32_t iy = oy * c->stride - c->pad + ki;
                            int32_t ix = ox * c->stride - c->pad + kj;
                            size_t pos = ((size_t)b * (size_t)c->out_h + (size_t)oy) *
                                             (size_t)c->out_w + (size_t)ox;
                            float *pe = patches + pos * (size_t)c->patch +
                                        ((size_t)ki * (size_t)c->kw + (size_t)kj) *
                                            (size_t)c->in_c + (size_t)ch;
                            int in = iy >= 0 && iy < c->in_h && ix >= 0 && ix < c->in_w;
                            float *xe = in ? x + (((size_t)b * (size_t)c->in_h + (size_t)iy) *
                                                      (size_t)c->in_w + (size_t)ix) *
                                                     (size_t)c->in_c + (size_t)ch
                                           : NULL;
                            if (add && xe)
                                *xe += *pe;
                            else if (!add)
                                *pe = xe ? *xe : 0.0f;
                        }
}

static void im2col(frl_dev *d, const frl_conv2d *c, int32_t batch, const float *x,
                   float *patches)
{
    (void)d;
    patches_walk(c, batch, patches, (float *)x, 0);
}

static void col2im(frl_dev *d, const frl_conv2d *c, int32_t batch, const float *dpatches,
                   float *dx)
{
    (void)d;
    memset(dx, 0, sizeof(float) * (size_t)batch * frl_conv2d_in_size(c));
    patches_walk(c, batch, (float *)dpatches, dx, 1);
}

/* Host memory is what these ops run on, so every pointer is "mapped". */
static int mapped(frl_dev *d, const void *p, size_t bytes)
{
    (void)d, (void)p, (void)bytes;
    return 1;
}

/* ---- graphs ----
 * Ops here run when they are called, so there is nothing to capture: the callers'
 * fallback (enqueue as before) is what runs, and the emulator checks the graphs. */
static void *graph_capture(frl_dev *d, void (*enqueue)(void *), void *arg, char *err,
                           size_t err_size)
{
    (void)d, (void)enqueue, (void)arg;
    snprintf(err, err_size, "graph_capture: the host ops capture no graphs");
    return NULL;
}

static void graph_launch(frl_dev *d, void *g)
{
    (void)g;
    if (!d->err[0])
        snprintf(d->err, sizeof d->err, "graph_launch: the host ops have no graphs");
}

static void graph_destroy(frl_dev *d, void *g)
{
    (void)d, (void)g;
}

/* ---- events ----
 * Host ops run when they are called, so an event is complete once recorded and waiting
 * has nothing to wait for. What the host can check is the protocol: a wait on an event
 * that was never recorded waits on nothing on a GPU, so the data it was meant to guard
 * may not be there yet; here it is a failure. */
typedef struct host_event {
    atomic_int recorded;
} host_event;

static void *event_create(frl_dev *d)
{
    const char *v = getenv("FAKE_CUDA_NO_EVENTS");
    if (v && v[0] == '1') {
        snprintf(d->err, sizeof d->err, "event creation refused (FAKE_CUDA_NO_EVENTS)");
        return NULL;
    }
    host_event *e = calloc(1, sizeof *e);
    if (!e)
        snprintf(d->err, sizeof d->err, "out of host memory for an event");
    return e;
}

static void event_destroy(frl_dev *d, void *ev)
{
    (void)d;
    free(ev);
}

static void record(frl_dev *d, void *ev)
{
    (void)d;
    atomic_store(&((host_event *)ev)->recorded, 1);
}

static void wait_event(frl_dev *d, void *ev)
{
    if (!atomic_load(&((host_event *)ev)->recorded) && !d->err[0])
        snprintf(d->err, sizeof d->err, "waited on an event that was never recorded");
}

static int check(frl_dev *d, char *err, size_t err_size)
{
    if (!d->err[0])
        return 0;
    snprintf(err, err_size, "%s", d->err);
    return 1;
}

const frl_dev_ops frl_dev_ops_host = {
    .name = "host",
    .probe = probe,
    .describe = describe,
    .open = open_dev,
    .close = close_dev,
    .alloc = alloc_mem,
    .release = release_mem,
    .alloc_pinned = alloc_pinned,
    .release_pinned = release_mem,
    .put = move_bytes,
    .get = move_bytes,
    .copy = move_bytes,
    .zero = zero_bytes,
    .sync = sync_dev,
    .linear_fwd = linear_fwd,
    .linear_bwd_input = linear_bwd_input,
    .linear_bwd_weight = linear_bwd_weight,
    .act_bwd = act_bwd,
    .axpy = axpy,
    .wgrad = wgrad,
    .mlp_forward_tiled = mlp_forward_tiled,
    .mlp_backward_tiled = mlp_backward_tiled,
    .gather_fields = gather_fields,
    .normalize = normalize,
    .gather = gather,
    .advantages = advantages,
    .log_ratio = log_ratio,
    .moments = moments,
    .loss_rows = loss_rows,
    .col_sums = col_sums,
    .sum_squares = sum_squares,
    .adam = adam,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .record = record,
    .wait = wait_event,
    .check = check,
    .forward_fused = forward_fused,
    .forward_runs = forward_runs,
    .fused_blocks = fused_blocks,
    .mapped = mapped,
    .graph_capture = graph_capture,
    .graph_launch = graph_launch,
    .graph_destroy = graph_destroy,
    .scale_images = scale_images,
    .im2col = im2col,
    .col2im = col2im,
    .copy2d = copy2d,
    .rnn_cell = rnn_cell,
};
