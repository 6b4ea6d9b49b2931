/* Finite-difference gradient checks against float64 references.
 *
 * For several policy shapes (separate and shared trunks; tanh, relu and elu;
 * categorical and Gaussian heads; with and without observation normalisation) the
 * library's float32 PPO gradient over a random minibatch is compared with central
 * differences of an independent float64 implementation of the same loss: the MLP
 * layers, the heads' log-probabilities and entropies, the clipped surrogate, the
 * clipped value loss and the entropy bonus; and decoupled PPO's loss, the plain value loss
 * and raw advantages. The heads are also checked alone.
 *
 * Recurrent policies (GRU and LSTM cores; one shared tower or an actor's and a critic's;
 * with and without an encoder MLP) are checked the same way over a minibatch of whole
 * env columns: the reference runs each column's [T] sequence from its first state,
 * restarts the state from zeros after an autoreset step, and holds the state fixed at
 * the bptt truncation points, so its differences are the library's truncated gradient
 * (every encoder, core, head and log-std parameter). Each recurrent case also shows the
 * check could fail: the reference without its resets, and without the truncation,
 * disagrees with the library. Before the gradients, the reference's loss must equal
 * the one the library reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "rl/heads.h"
#include "algo/ppo.h"
#include "test_util.h"

/* ---- float64 reference ---- */

enum { MAXROWS = 256, MAXOUT = 4, MAXH = 16, MAXPARAMS = 16384, MAXIMG = 8192 };

/* What a sensitivity check leaves out of the recurrent reference. */
enum { SKIP_RESETS = 1, SKIP_CUTS = 2 };

/* The reference's buffers, row-indexed like the slot (row t * B + b). */
typedef struct ref {
    int record;                        /* 1: store the states at truncation points */
    int skip;                          /* SKIP_* */
    double out[MAXROWS * MAXOUT];      /* head outputs */
    double v[MAXROWS];                 /* values */
    double core[2][MAXROWS * MAXH];    /* each tower's core output */
    double cut[2][MAXROWS * 2 * MAXH]; /* the state entering a truncation point */
} ref;

static double act_d(double x, frl_nn_act a)
{
    switch (a) {
    case FRL_NN_TANH: return tanh(x);
    case FRL_NN_RELU: return x > 0 ? x : 0;
    case FRL_NN_ELU: return x > 0 ? x : expm1(x);
    default: return x;
    }
}

/* One MLP on one row: out receives width[layers] values. */
static void mlp_d(const frl_mlp *m, const double *p, const double *x, double *out)
{
    double a[256], b[256];
    memcpy(a, x, sizeof(double) * (size_t)m->width[0]);
    for (int32_t l = 0; l < m->layers; l++) {
        int32_t in = m->width[l], o = m->width[l + 1];
        int act = l + 1 < m->layers || m->activate_last;
        for (int32_t j = 0; j < o; j++) {
            double s = p[m->off_b[l] + (size_t)j];
            for (int32_t i = 0; i < in; i++)
                s += a[i] * p[m->off_w[l] + (size_t)i * (size_t)o + (size_t)j];
            b[j] = act ? act_d(s, m->act) : s;
        }
        memcpy(a, b, sizeof(double) * (size_t)o);
    }
    memcpy(out, a, sizeof(double) * (size_t)m->width[m->layers]);
}

/* What the networks read for one observation row (normalised and clipped with obs_norm). */
static void input_d(const frl_policy *pol, const float *obs, double *x)
{
    for (int32_t i = 0; i < pol->obs_w; i++) {
        double v = obs[i];
        if (pol->obs_norm) {
            v = (v - pol->norm.use_mean[i]) * pol->norm.use_inv_std[i];
            v = v > pol->norm.clip ? pol->norm.clip : (v < -pol->norm.clip ? -pol->norm.clip : v);
        }
        x[i] = v;
    }
}

/* One unpadded convolution of an NHWC image, ReLU after, as its definition reads. */
static void conv_d(const frl_conv2d *c, const double *p, const double *in, double *out)
{
    for (int32_t oh = 0; oh < c->out_h; oh++)
        for (int32_t ow = 0; ow < c->out_w; ow++)
            for (int32_t oc = 0; oc < c->out_c; oc++) {
                double s = p[c->off_b + (size_t)oc];
                for (int32_t ki = 0; ki < c->kh; ki++)
                    for (int32_t kj = 0; kj < c->kw; kj++)
                        for (int32_t ic = 0; ic < c->in_c; ic++) {
                            int32_t ih = oh * c->stride + ki, iw = ow * c->stride + kj;
                            size_t wi = ((size_t)(ki * c->kw + kj) * (size_t)c->in_c +
                                         (size_t)ic) * (size_t)c->out_c + (size_t)oc;
                            s += in[((size_t)ih * (size_t)c->in_w + (size_t)iw) *
                                        (size_t)c->in_c + (size_t)ic] * p[c->off_w + wi];
                        }
                out[((size_t)oh * (size_t)c->out_w + (size_t)ow) * (size_t)c->out_c +
                    (size_t)oc] = s > 0 ? s : 0;
            }
}

/* The conv encoder's features, remembered: differencing a parameter after the
 * encoder's leaves its weights and images as they were, and recomputing them was most of
 * this test's time. An entry is found by its image's bytes (a frame stack's rows are
 * built in one buffer) and used only while the encoder's parameters are bit for bit
 * those it was computed with. */
enum { FEAT_ENTRIES = 512, FEAT_W = 64 };
static struct {
    double params[MAXPARAMS];
    size_t n;
    int count;
    uint8_t img[FEAT_ENTRIES][MAXIMG];
    double feat[FEAT_ENTRIES][FEAT_W];
} feat_cache;

/* The entry for img under the encoder's parameters p[0..n), or -1; a change of those
 * parameters empties the cache. (The images are random bytes: a comparison with another
 * entry ends within its first bytes.) */
static int feat_find(const double *p, size_t n, const uint8_t *img, size_t in)
{
    if (feat_cache.n != n || memcmp(feat_cache.params, p, sizeof(double) * n) != 0) {
        memcpy(feat_cache.params, p, sizeof(double) * n);
        feat_cache.n = n;
        feat_cache.count = 0;
        return -1;
    }
    for (int e = 0; e < feat_cache.count; e++)
        if (memcmp(feat_cache.img[e], img, in) == 0)
            return e;
    return -1;
}

/* A convolutional encoder's features of one image row (bytes scaled to [0, 1]). */
static void encode_d(const frl_policy *pol, const double *p, const float *obs, double *x)
{
    static double a[MAXIMG], b[MAXIMG];
    const uint8_t *img = (const uint8_t *)obs;
    size_t in = (size_t)pol->cnn.in_h * (size_t)pol->cnn.in_w * (size_t)pol->cnn.in_c;
    size_t fw = (size_t)pol->cnn.out_w;
    ck_assert(in <= MAXIMG && pol->cnn.widest <= MAXIMG && pol->in_w <= 64 && fw <= FEAT_W);
    int e = feat_find(p, pol->cnn.num_params, img, in);
    if (e >= 0) {
        memcpy(x, feat_cache.feat[e], sizeof(double) * fw);
    } else {
        for (size_t i = 0; i < in; i++)
            a[i] = img[i] / 255.0;
        for (int32_t l = 0; l < pol->cnn.layers; l++) {
            conv_d(&pol->cnn.conv[l], p, a, b);
            memcpy(a, b, sizeof(double) * frl_conv2d_out_size(&pol->cnn.conv[l]));
        }
        memcpy(x, a, sizeof(double) * fw);
        if (feat_cache.count < FEAT_ENTRIES) {
            e = feat_cache.count++;
            memcpy(feat_cache.img[e], img, in);
            memcpy(feat_cache.feat[e], a, sizeof(double) * fw);
        }
    }
    for (int32_t j = 0; j < pol->vec_w; j++) { /* a mixed row's vector joins the features */
        double v = obs[pol->vec_at + j];
        if (pol->obs_norm) {
            v = (v - pol->norm.use_mean[j]) * pol->norm.use_inv_std[j];
            v = v > pol->norm.clip ? pol->norm.clip : (v < -pol->norm.clip ? -pol->norm.clip : v);
        }
        x[pol->cnn.out_w + j] = v;
    }
}

static void policy_d(const frl_policy *pol, const double *p, const float *obs, double *out,
                     double *value)
{
    double x[64], h[256];
    if (pol->cnn.layers)
        encode_d(pol, p, obs, x);
    else
        input_d(pol, obs, x);
    const double *in = x;
    if (pol->shared) {
        mlp_d(&pol->trunk, p, x, h);
        in = h;
    }
    mlp_d(&pol->actor, p, in, out);
    mlp_d(&pol->critic, p, in, value);
}

static double logp_d(const frl_policy *pol, const double *p, const double *out, const void *a,
                     double *ent)
{
    int32_t n = pol->out_w;
    if (pol->discrete) {
        double mx = out[0], s = 0, lp = 0, h = 0;
        for (int32_t i = 1; i < n; i++)
            mx = out[i] > mx ? out[i] : mx;
        for (int32_t i = 0; i < n; i++)
            s += exp(out[i] - mx);
        for (int32_t i = 0; i < n; i++) {
            double l = out[i] - mx - log(s);
            h -= exp(l) * l;
        }
        lp = out[*(const int32_t *)a] - mx - log(s);
        *ent = h;
        return lp;
    }
    const float *x = a;
    double lp = 0, h = 0;
    for (int32_t i = 0; i < n; i++) {
        double ls = p[pol->log_std_off + (size_t)i], z = (x[i] - out[i]) / exp(ls);
        lp += -0.5 * z * z - ls - 0.5 * log(2 * M_PI);
        h += 0.5 + 0.5 * log(2 * M_PI) + ls;
    }
    *ent = h;
    return lp;
}

/* A frame-stacking policy's input at row i (step t, env b) as one image of k * c
 * channels, frame j (oldest first) in channels j c ..: the frames of steps t - k + 1 ..
 * t, zeros before the step that began row i's episode (the step after a flagged
 * autoreset), and state0's frames for the steps before the rollout when the episode
 * began earlier. skip_resets: ignore the flags (the sensitivity check). */
static void stack_d(const frl_ppo *l, size_t i, int skip_resets, uint8_t *img)
{
    const frl_policy *pol = l->p;
    int32_t k = pol->stack, B = l->B, t = (int32_t)(i / (size_t)B), b = (int32_t)(i % (size_t)B);
    size_t fb = 4 * (size_t)pol->obs_w, c = (size_t)pol->cnn.in_c / (size_t)k, pixels = fb / c;
    const uint8_t *obs = frl_ring_at(l->ring, 0, FRL_RING_OBSERVATIONS);
    const uint8_t *reset = frl_ring_at(l->ring, 0, FRL_RING_RESET_STEPS);
    const uint8_t *s0 = (const uint8_t *)l->state0 + (size_t)b * (size_t)(k - 1) * fb;
    int32_t start = INT32_MIN; /* the first step of row i's episode, when in the rollout */
    for (int32_t u = 1; u <= t && !skip_resets; u++)
        if (reset[(size_t)(u - 1) * (size_t)B + (size_t)b])
            start = u;
    for (int32_t j = 0; j < k; j++) {
        int32_t s = t - (k - 1) + j;
        const uint8_t *src = NULL;
        if (s >= 0 && s >= start)
            src = obs + ((size_t)s * (size_t)B + (size_t)b) * fb;
        else if (s < 0 && start == INT32_MIN)
            src = s0 + (size_t)(k - 1 + s) * fb;
        for (size_t px = 0; px < pixels; px++)
            for (size_t ch = 0; ch < c; ch++)
                img[(px * (size_t)k + (size_t)j) * c + ch] = src ? src[px * c + ch] : 0;
    }
}

/* An MLP policy's outputs at the rows idx[0..n). */
static void mlp_rows_d(const frl_ppo *l, const double *p, const int32_t *idx, int32_t n, ref *R)
{
    static uint8_t img[MAXIMG] __attribute__((aligned(64)));
    const frl_policy *pol = l->p;
    const float *obs = frl_ring_at(l->ring, 0, FRL_RING_OBSERVATIONS);
    for (int32_t r = 0; r < n; r++) {
        size_t i = (size_t)idx[r];
        const float *row = obs + i * (size_t)pol->obs_w;
        if (pol->stack > 1) {
            stack_d(l, i, R->skip & SKIP_RESETS, img);
            row = (const float *)(const void *)img;
        }
        policy_d(pol, p, row, R->out + i * (size_t)pol->out_w, R->v + i);
    }
}

static double sig_d(double x)
{
    return 1 / (1 + exp(-x));
}

/* One core step of one column, from PyTorch's equations (GRU r, z, n: n = tanh(x W_n +
 * b_xn + r (h W_hn + b_hn)), h' = (1 - z) n + z h; LSTM i, f, g, o: c' = f c + i g,
 * h' = o tanh c'): s (h, then an LSTM's c) is replaced by the new state. */
static void cell_d(const frl_rnn *c, const double *p, const double *x, double *s)
{
    int32_t h = c->h, gw = c->gates * h;
    double a[4 * MAXH], g[4 * MAXH], hn[MAXH], cn[MAXH];
    for (int32_t j = 0; j < gw; j++) {
        a[j] = p[c->off_bx + (size_t)j];
        g[j] = p[c->off_bh + (size_t)j];
        for (int32_t i = 0; i < c->in; i++)
            a[j] += x[i] * p[c->off_wx + (size_t)i * (size_t)gw + (size_t)j];
        for (int32_t i = 0; i < h; i++)
            g[j] += s[i] * p[c->off_wh + (size_t)i * (size_t)gw + (size_t)j];
    }
    for (int32_t j = 0; j < h; j++) {
        if (c->kind == FRL_RNN_GRU) {
            double r = sig_d(a[j] + g[j]), z = sig_d(a[h + j] + g[h + j]);
            hn[j] = (1 - z) * tanh(a[2 * h + j] + r * g[2 * h + j]) + z * s[j];
            continue;
        }
        double i = sig_d(a[j] + g[j]), f = sig_d(a[h + j] + g[h + j]);
        double o = sig_d(a[3 * h + j] + g[3 * h + j]);
        cn[j] = f * s[h + j] + i * tanh(a[2 * h + j] + g[2 * h + j]);
        hn[j] = o * tanh(cn[j]);
    }
    memcpy(s, hn, sizeof(double) * (size_t)h);
    if (c->kind == FRL_RNN_LSTM)
        memcpy(s + h, cn, sizeof(double) * (size_t)h);
}

/* The state s (sw values) of tower k's core entering step t of column b. At a truncation
 * point (t > 0, t % bptt == 0) it is the state the unperturbed parameters gave there,
 * stored when R->record: the library carries the state on across the point (truncation
 * detaches, it does not restart) but passes no gradient back, so no parameter may reach
 * the loss through the steps before it. After an autoreset step (row t - 1 flagged: its
 * observation is still the old episode's, the next is the new one's first) the column
 * starts from zeros. */
static void incoming_d(const frl_ppo *l, int32_t k, int32_t t, int32_t b, int32_t sw,
                       double *s, ref *R)
{
    const uint8_t *reset = frl_ring_at(l->ring, 0, FRL_RING_RESET_STEPS);
    int32_t bptt = l->s.bptt > 0 ? l->s.bptt : l->T;
    size_t row = (size_t)t * (size_t)l->B + (size_t)b, bytes = sizeof(double) * (size_t)sw;
    double *cut = R->cut[k] + row * 2 * MAXH;
    if (t > 0 && t % bptt == 0 && !(R->skip & SKIP_CUTS)) {
        if (R->record)
            memcpy(cut, s, bytes);
        else
            memcpy(s, cut, bytes);
    }
    if (t > 0 && reset[row - (size_t)l->B] && !(R->skip & SKIP_RESETS))
        memset(s, 0, bytes);
}

/* Tower k's core output at every row: each column from its first state (its part of
 * l->state0), the encoder (if any) then the core at each step. */
static void tower_d(const frl_ppo *l, const double *p, int32_t k, ref *R)
{
    const frl_policy *pol = l->p;
    const frl_rnn *c = &pol->core[k];
    const float *obs = frl_ring_at(l->ring, 0, FRL_RING_OBSERVATIONS);
    int32_t sw = frl_rnn_state_w(c), off = k ? frl_rnn_state_w(&pol->core[0]) : 0;
    for (int32_t b = 0; b < l->B; b++) {
        double s[2 * MAXH], x[64], e[256];
        for (int32_t j = 0; j < sw; j++)
            s[j] = l->state0[(size_t)b * (size_t)pol->state_w + (size_t)(off + j)];
        for (int32_t t = 0; t < l->T; t++) {
            size_t row = (size_t)t * (size_t)l->B + (size_t)b;
            if (pol->cnn.layers)
                encode_d(pol, p, obs + row * (size_t)pol->obs_w, x);
            else
                input_d(pol, obs + row * (size_t)pol->obs_w, x);
            if (pol->enc[k].layers)
                mlp_d(&pol->enc[k], p, x, e);
            incoming_d(l, k, t, b, sw, s, R);
            cell_d(c, p, pol->enc[k].layers ? e : x, s);
            memcpy(R->core[k] + row * MAXH, s, sizeof(double) * (size_t)c->h);
        }
    }
}

/* A recurrent policy's outputs at every row: the actor's head reads tower 0's core, the
 * critic's the last tower's (the same one when shared). */
static void rnn_rows_d(const frl_ppo *l, const double *p, ref *R)
{
    const frl_policy *pol = l->p;
    for (int32_t k = 0; k < pol->towers; k++)
        tower_d(l, p, k, R);
    for (size_t i = 0; i < (size_t)l->N; i++) {
        mlp_d(&pol->actor, p, R->core[0] + i * MAXH, R->out + i * (size_t)pol->out_w);
        mlp_d(&pol->critic, p, R->core[pol->towers - 1] + i * MAXH, R->v + i);
    }
}

/* The PPO loss over the minibatch rows idx[0..n), as frl_ppo defines it. */
static double ppo_loss_d(const frl_ppo *l, const double *p, ref *R, const int32_t *idx,
                         int32_t n)
{
    const frl_policy *pol = l->p;
    const unsigned char *acts = frl_ring_at(l->ring, 0, FRL_RING_ACTIONS);
    const float *old_lp = frl_ring_at(l->ring, 0, FRL_RING_LOG_PROBS);
    const float *old_v = frl_ring_at(l->ring, 0, FRL_RING_VALUES);
    size_t ab = pol->discrete ? 4 : 4 * (size_t)pol->out_w;
    double s = 0, ss = 0, cnt = 0, c = l->s.clip;
    if (pol->towers)
        rnn_rows_d(l, p, R);
    else
        mlp_rows_d(l, p, idx, n, R);
    for (int32_t r = 0; r < n; r++)
        if (l->valid[idx[r]]) {
            s += l->adv[idx[r]];
            cnt++;
        }
    double mean = s / cnt;
    for (int32_t r = 0; r < n; r++)
        if (l->valid[idx[r]])
            ss += (l->adv[idx[r]] - mean) * (l->adv[idx[r]] - mean);
    double sd = sqrt(ss / (cnt - 1)), pg = 0, vl = 0, en = 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t i = idx[r];
        if (!l->valid[i])
            continue;
        double ent, v = R->v[i];
        double lp = logp_d(pol, p, R->out + (size_t)i * (size_t)pol->out_w, acts + (size_t)i * ab,
                           &ent);
        double A = l->s.norm_adv ? (l->adv[i] - mean) / (sd + 1e-8) : l->adv[i];
        double old = old_lp[i];
        if (l->s.decoupled) { /* Hilton et al.: clip around pi_0, weight min(rho_bar, pi_0/mu) */
            old = (double)(float)(old_lp[i] + l->log_ratio[i]);
            A *= fmin(l->s.rho_bar, exp((double)l->log_ratio[i]));
        }
        double ratio = exp(lp - old);
        double rc = ratio < 1 - c ? 1 - c : (ratio > 1 + c ? 1 + c : ratio);
        pg += l->s.impala ? -A * lp : fmax(-A * ratio, -A * rc);
        double d = v - old_v[i], vc = old_v[i] + (d < -c ? -c : (d > c ? c : d));
        double l1 = (v - l->ret[i]) * (v - l->ret[i]), l2 = (vc - l->ret[i]) * (vc - l->ret[i]);
        vl += 0.5 * (l->s.clip_value ? fmax(l1, l2) : l1);
        en += ent;
    }
    return pg / cnt - l->s.ent_coef * en / cnt + l->s.vf_coef * vl / cnt;
}

/* Which parameters get a central difference: all in the plain builds. A sanitizer
 * build (3 to 10 times slower, TSan most) checks every fourth, and every sixteenth of a
 * conv encoder's, whose forward passes dominate the time; TSan four times fewer again,
 * since the differences are this test's own single-threaded passes and what TSan watches
 * (the library's gradient on the pool's threads) runs whole either way. The gcc and
 * clang release builds check every parameter. */
enum { FD_EVERY = FRL_TEST_TSAN ? 16 : 4 };
static int fd_checked(const frl_policy *p, size_t j)
{
    if (!FRL_TEST_SANITIZED)
        return 1;
    if (p->cnn.layers && j < p->cnn.num_params)
        return j % (4 * FD_EVERY) == 0;
    return j % FD_EVERY == 0;
}

/* Central differences of the reference loss at p (left as it was) into fd
 * [num_params], from parameter `from` on (NaN before it); the states at the truncation
 * points are recorded at p first. */
static void fd_gradient(const frl_ppo *l, double *p, ref *R, const int32_t *idx, int32_t n,
                        size_t from, double *fd)
{
    R->record = 1;
    ppo_loss_d(l, p, R, idx, n);
    R->record = 0;
    for (size_t j = 0; j < l->p->num_params; j++) {
        if (j < from || !fd_checked(l->p, j)) {
            fd[j] = NAN;
            continue;
        }
        double h = 1e-6, keep = p[j];
        p[j] = keep + h;
        double up = ppo_loss_d(l, p, R, idx, n);
        p[j] = keep - h;
        double dn = ppo_loss_d(l, p, R, idx, n);
        p[j] = keep;
        fd[j] = (up - dn) / (2 * h);
    }
}

/* The bound on a float32 gradient g against the float64 difference fd. */
static int within(double g, double fd)
{
    return fabs(fd - g) <= 2e-3 * fabs(fd) + 2e-5;
}

/* ---- setup: a policy, a ring slot of random experience, a learner ---- */

typedef struct fixture {
    frl_runtime *rt;
    frl_space *os, *as;
    frl_policy *p;
    frl_ring *ring;
    frl_ppo l;
    float state0[256]; /* recurrent: the columns' first states */
    float *frames0;    /* a frame stack's: the columns' earlier frames */
} fixture;

static void fill_slot(fixture *f, frl_rng *r)
{
    frl_ring *ring = f->ring;
    int32_t N = ring->steps * ring->envs, ow = f->p->obs_w, w = f->p->out_w;
    float *obs = frl_ring_at(ring, 0, FRL_RING_OBSERVATIONS);
    float *lp = frl_ring_at(ring, 0, FRL_RING_LOG_PROBS), *v = frl_ring_at(ring, 0, FRL_RING_VALUES);
    float *rew = frl_ring_at(ring, 0, FRL_RING_REWARDS);
    uint8_t *term = frl_ring_at(ring, 0, FRL_RING_TERMINATED);
    uint8_t *reset = frl_ring_at(ring, 0, FRL_RING_RESET_STEPS);
    for (int32_t i = 0; i < N * ow; i++)
        obs[i] = (float)frl_rng_uniform_range(r, -2, 2);
    if (f->p->cnn.layers) /* image rows: random pixels (a mixed row's vector: floats) */
        for (int32_t i = 0; i < N; i++)
            for (size_t b = 0; b < 4 * (size_t)(f->p->vec_w ? f->p->vec_at : ow); b++)
                ((uint8_t *)(obs + (size_t)i * (size_t)ow))[b] = (uint8_t)(frl_rng_next(r) >> 56);
    for (int32_t i = 0; i < N; i++) {
        if (f->p->discrete)
            ((int32_t *)frl_ring_at(ring, 0, FRL_RING_ACTIONS))[i] = (int32_t)(frl_rng_next(r) % (uint64_t)w);
        else
            for (int32_t k = 0; k < w; k++)
                ((float *)frl_ring_at(ring, 0, FRL_RING_ACTIONS))[i * w + k] =
                    (float)frl_rng_uniform_range(r, -1.5, 1.5);
        /* Old log-probs near the current ones so both clipping branches occur. */
        lp[i] = (float)frl_rng_uniform_range(r, -2.5, -0.2);
        v[i] = (float)frl_rng_uniform_range(r, -0.5, 0.5);
        rew[i] = (float)frl_rng_uniform_range(r, -1, 1);
        term[i] = frl_rng_uniform(r) < 0.1;
        reset[i] = i >= ring->envs && term[i - ring->envs];
    }
}

/* Episode ends at chosen steps rather than random ones, so that every kind of restart
 * occurs: the row after an ending step is its autoreset step, and the state restarts
 * one step later. Column 0 restarts before step 4 (its autoreset step 3 is a truncation
 * point of bptt 3), column 1 before step 1 (row 0 is an autoreset step: an episode
 * ended on the previous rollout's last step) and before step 6 (a truncation point of
 * bptt 2 and 3), column 2 never (gradients reach back over whole truncation windows),
 * column 3 before step 2, and its last row is an autoreset step. */
static void plant_episodes(fixture *f)
{
    static const int32_t ends[][2] = {{2, 0}, {4, 1}, {0, 3}, {6, 3}}; /* {step, column} */
    int32_t T = f->ring->steps, B = f->ring->envs;
    uint8_t *term = frl_ring_at(f->ring, 0, FRL_RING_TERMINATED);
    uint8_t *reset = frl_ring_at(f->ring, 0, FRL_RING_RESET_STEPS);
    ck_assert(T >= 8 && B >= 4);
    memset(term, 0, (size_t)T * (size_t)B);
    memset(reset, 0, (size_t)T * (size_t)B);
    for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
        term[ends[e][0] * B + ends[e][1]] = 1;
        reset[(ends[e][0] + 1) * B + ends[e][1]] = 1;
    }
    reset[1] = 1;
}

/* Old log-probabilities within 0.4 of the current policy's (by the reference), since
 * with few rows the random ones can leave none unclipped. */
static void near_old_logps(fixture *f, frl_rng *r)
{
    const frl_policy *pol = f->p;
    const unsigned char *acts = frl_ring_at(f->ring, 0, FRL_RING_ACTIONS);
    float *old_lp = frl_ring_at(f->ring, 0, FRL_RING_LOG_PROBS);
    size_t ab = pol->discrete ? 4 : 4 * (size_t)pol->out_w;
    double *p = calloc(pol->num_params, sizeof(double)), ent;
    ref *R = calloc(1, sizeof *R);
    ck_assert(p && R);
    for (size_t j = 0; j < pol->num_params; j++)
        p[j] = pol->params[j];
    R->record = 1;
    rnn_rows_d(&f->l, p, R);
    for (size_t i = 0; i < (size_t)f->l.N; i++)
        old_lp[i] = (float)(logp_d(pol, p, R->out + i * (size_t)pol->out_w, acts + i * ab, &ent) +
                            frl_rng_uniform_range(r, -0.4, 0.4));
    free(p);
    free(R);
}

/* A recurrent rollout's first states (random, as a mid-training batch has), then
 * frl_ppo_values: it derives the start flags from the resets (and V-trace's
 * log-ratios), and overwrites the ring's old values with the current ones, where value
 * clipping would never bind, so the random ones go back. */
static void prepare_recurrent(fixture *f, frl_rng *r)
{
    int32_t N = f->l.N, sw = f->p->state_w;
    float *v = frl_ring_at(f->ring, 0, FRL_RING_VALUES), old[MAXROWS];
    ck_assert(f->l.B * sw <= 256 && N <= MAXROWS);
    for (int32_t i = 0; i < f->l.B * sw; i++)
        f->state0[i] = (float)frl_rng_uniform_range(r, -0.9, 0.9);
    frl_ppo_set_state0(&f->l, f->state0);
    near_old_logps(f, r);
    memcpy(old, v, sizeof(float) * (size_t)N);
    char err[256];
    ck_assert_int_eq(frl_ppo_values(&f->l, 0, err), FRL_OK);
    memcpy(v, old, sizeof(float) * (size_t)N);
}

/* Floats of a vector beside the image (a mixed observation space) in the next case
 * with an encoder; 0: a plain image. check_mixed sets it around check_case. */
static int32_t mixed_vector;

static void setup(fixture *f, const char *settings, int discrete, int obs_w, int32_t T,
                  int32_t B)
{
    feat_cache.n = 0; /* a new encoder: no features of another case's are reused */
    feat_cache.count = 0;
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, "runtime.threads=2 train.minibatches=1"), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, settings), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&f->rt, cfg, NULL, NULL), FRL_OK);
    int64_t shape = obs_w;
    f->frames0 = NULL;
    if (strstr(settings, "policy.encoder=")) { /* a 40 x 40 image of obs_w channels */
        ck_assert_int_eq(frl_space_create_image(&f->os, NULL, 40, 40, obs_w), FRL_OK);
        if (mixed_vector > 0) { /* and a vector after it */
            frl_space *im = f->os, *vec;
            int64_t vw = mixed_vector;
            ck_assert_int_eq(frl_space_create_box(&vec, NULL, 1, &vw, NULL, NULL), FRL_OK);
            ck_assert_int_eq(frl_space_create_mixed(&f->os, NULL, im, vec), FRL_OK);
            frl_space_destroy(im);
            frl_space_destroy(vec);
        }
    } else
        ck_assert_int_eq(frl_space_create_box(&f->os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    int64_t ashape = 2;
    float lo[2] = {-1, -1}, hi[2] = {1, 1};
    if (discrete)
        ck_assert_int_eq(frl_space_create_discrete(&f->as, NULL, 3), FRL_OK);
    else
        ck_assert_int_eq(frl_space_create_box(&f->as, NULL, 1, &ashape, lo, hi), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&f->p, f->rt, cfg, f->os, f->as), FRL_OK);
    ck_assert_int_eq(f->p->vec_w, mixed_vector);
    ck_assert_int_eq(frl_ring_create(&f->ring, f->rt, 1, T, B, f->os, f->as), FRL_OK);
    frl_ppo_settings s = {.epochs = 1, .minibatches = 1, .lr = 1e-3, .clip = 0.2,
                          .ent_coef = 0.01, .vf_coef = 0.5, .max_grad_norm = 0.5,
                          .gamma = 0.99, .lambda = 0.95, .adam_eps = 1e-5, .clip_value = 1,
                          .norm_adv = 1, .rho_bar = 1, .c_bar = 1};
    s.impala = frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_IMPALA;
    s.clip_value = frl_cfg_bool(cfg, FRL_KEY_TRAIN_CLIP_VALUE);
    s.norm_adv = frl_cfg_bool(cfg, FRL_KEY_TRAIN_NORM_ADV);
    s.decoupled = frl_cfg_bool(cfg, FRL_KEY_TRAIN_DECOUPLED);
    s.rho_bar = frl_cfg_float(cfg, FRL_KEY_TRAIN_VTRACE_RHO);
    /* The recurrent cases run frl_ppo_values, which gives V-trace its log-ratios; the
     * MLP ones keep GAE over random values. */
    s.vtrace = s.impala && f->p->towers > 0;
    s.bptt = (int32_t)frl_cfg_int(cfg, FRL_KEY_TRAIN_BPTT);
    char err[256];
    ck_assert_int_eq(frl_ppo_init(&f->l, f->rt, f->p, f->ring, &s, err), FRL_OK);
    frl_config_destroy(cfg);
}

static void teardown(fixture *f)
{
    free(f->frames0);
    frl_ppo_free(&f->l);
    frl_ring_destroy(f->ring);
    frl_policy_destroy(f->p);
    frl_space_destroy(f->os);
    frl_space_destroy(f->as);
    frl_runtime_destroy(f->rt);
}

/* A frame stack's earlier frames at the rollout's start (random pixels), and an
 * autoreset at step 1 of env 0, so some stacks end at an episode's start. */
static void prepare_stack(fixture *f, frl_rng *r)
{
    size_t bytes = sizeof(float) * (size_t)f->l.B * (size_t)f->p->state_w;
    f->frames0 = malloc(bytes);
    ck_assert_ptr_nonnull(f->frames0);
    for (size_t i = 0; i < bytes; i++)
        ((uint8_t *)f->frames0)[i] = (uint8_t)(frl_rng_next(r) >> 56);
    ((uint8_t *)frl_ring_at(f->ring, 0, FRL_RING_RESET_STEPS))[f->l.B] = 1;
    frl_ppo_set_state0(&f->l, f->frames0);
}

/* Larger random weights than the init, so every layer's gradient is far from zero. */
static void randomise(fixture *f, frl_rng *r)
{
    for (size_t i = 0; i < f->p->num_params; i++)
        f->p->params[i] = (float)frl_rng_uniform_range(r, -0.6, 0.6);
    if (f->p->obs_norm) {
        for (int32_t i = 0; i < f->p->obs_w; i++) {
            f->p->norm.use_mean[i] = (float)frl_rng_uniform_range(r, -0.5, 0.5);
            f->p->norm.use_inv_std[i] = (float)frl_rng_uniform_range(r, 0.5, 2);
        }
        f->p->norm.clip = 1.5f; /* some inputs clipped */
    }
}

/* The minibatch's n rows into idx, and another's into other (its count returned in *m).
 * An MLP policy's: a permutation of the slot's rows, and its second half. A recurrent
 * policy's: whole columns in an order not the identity, step-major, as frl_ppo_update's
 * column minibatches lay out one shard's; the other has half the columns. */
static int32_t minibatch(const frl_ppo *l, int32_t *idx, int32_t *other, int32_t *m)
{
    int32_t N = l->N, T = l->T, B = l->B, half = l->B / 2;
    if (!l->p->towers) {
        for (int32_t i = 0; i < N; i++)
            idx[i] = (i * 37) % N;
        *m = N - N / 2;
        memcpy(other, idx + N / 2, sizeof(int32_t) * (size_t)*m);
        return N;
    }
    ck_assert_int_eq(l->shards, 1);
    ck_assert(B % 3 != 0); /* so j -> 3 j + 2 mod B permutes the columns */
    for (int32_t t = 0; t < T; t++) {
        for (int32_t j = 0; j < B; j++)
            idx[t * B + j] = t * B + (3 * j + 2) % B;
        for (int32_t j = 0; j < half; j++)
            other[t * half + j] = t * B + (3 * j + 1) % B;
    }
    *m = T * half;
    return N;
}

/* Shards write their gradients rather than add them, and the untransposed weights are
 * rebuilt per minibatch: after another minibatch, with every gradient buffer poisoned,
 * the same rows must give the same bits. */
static void check_no_stale_state(fixture *f, const int32_t *idx, int32_t n, const int32_t *other,
                                 int32_t m)
{
    size_t np = f->p->num_params, bytes = sizeof(float) * np;
    float *first = malloc(bytes);
    ck_assert_ptr_nonnull(first);
    memcpy(first, f->l.g, bytes);
    char err[256];
    ck_assert_int_eq(frl_ppo_gradient(&f->l, other, m, NULL, err), FRL_OK);
    size_t all = f->l.grad_stride * (size_t)(f->l.shards + 2);
    for (size_t i = 0; i < all; i++)
        f->l.grads[i] = NAN;
    ck_assert_int_eq(frl_ppo_gradient(&f->l, idx, n, NULL, err), FRL_OK);
    ck_assert_msg(memcmp(first, f->l.g, bytes) == 0, "a gradient depends on earlier minibatches");
    free(first);
}

/* The library's gradient of the minibatch into f->l.g; returns the loss it reports. */
static double library_gradient(fixture *f, const char *settings, const int32_t *idx, int32_t n,
                               const int32_t *other, int32_t m)
{
    char err[256];
    double sums[8] = {0};
    ck_assert_int_eq(frl_ppo_gradient(&f->l, idx, n, sums, err), FRL_OK);
    /* sums[4] counts rows whose ratio is clipped: both branches must be exercised. */
    ck_assert_msg(sums[4] > 0 && sums[4] < sums[5], "%s: %g of %g rows clipped", settings,
                  sums[4], sums[5]);
    check_no_stale_state(f, idx, n, other, m);
    return (sums[0] - f->l.s.ent_coef * sums[2] + f->l.s.vf_coef * sums[1]) / sums[5];
}

/* The check could fail: the recurrent reference without its resets, and (bptt < T)
 * without the truncation, must each disagree with the library beyond the bound. Only
 * the parameters after a conv encoder's are differenced here: a missed reset or cut
 * changes the cores' and heads' gradients as well, and the encoder's forward passes were
 * two thirds of the whole test's time. */
static void check_sensitive(fixture *f, const char *settings, double *p, ref *R,
                            const int32_t *idx, int32_t n, double *fd)
{
    for (int skip = SKIP_RESETS; skip <= SKIP_CUTS; skip <<= 1) {
        if (skip == SKIP_CUTS && (f->l.s.bptt == 0 || f->l.s.bptt >= f->l.T))
            continue;
        R->skip = skip;
        fd_gradient(&f->l, p, R, idx, n, f->p->cnn.layers ? f->p->cnn.num_params : 0, fd);
        int32_t off = 0;
        for (size_t j = 0; j < f->p->num_params; j++)
            off += !isnan(fd[j]) && !within(f->l.g[j], fd[j]);
        const char *what = skip == SKIP_RESETS ? "resets" : "truncation";
        ck_assert_msg(off > 0, "%s: the reference without its %s agrees with the library",
                      settings, what);
        printf("    without the %-10s %d parameters outside the bound\n", what, (int)off);
    }
    R->skip = 0;
}

/* Decoupled PPO: the log-ratios of the learner's policy at the update's start to the
 * one that acted, as the values pass would leave them (set_log_ratio), on both sides of
 * train.vtrace_rho. */
static void lagged_policy(fixture *f, frl_rng *r)
{
    for (int32_t i = 0; i < f->l.N; i++) {
        f->l.log_ratio[i] = (float)frl_rng_uniform_range(r, -0.7, 0.7);
        f->l.dec_w[i] = fmin(f->l.s.rho_bar, exp((double)f->l.log_ratio[i]));
    }
}

static void check_case(const char *settings, int discrete, int obs_w, int32_t T, int32_t B)
{
    fixture f;
    setup(&f, settings, discrete, obs_w, T, B);
    frl_rng r = frl_rng_stream(42, (uint64_t)obs_w * 7 + (uint64_t)discrete);
    randomise(&f, &r);
    fill_slot(&f, &r);
    if (f.p->towers) {
        plant_episodes(&f);
        prepare_recurrent(&f, &r);
    } else if (f.p->stack > 1) {
        prepare_stack(&f, &r);
    }
    if (f.l.s.decoupled && !f.p->towers)
        lagged_policy(&f, &r);
    frl_ppo_bootstrap(&f.l, 0);
    frl_ppo_advantages(&f.l, 0);
    f.l.slot = 0;
    int32_t idx[MAXROWS], other[MAXROWS], m, n = minibatch(&f.l, idx, other, &m);
    double lib_loss = library_gradient(&f, settings, idx, n, other, m);
    size_t np = f.p->num_params;
    double *p = calloc(np, sizeof(double)), *fd = calloc(np, sizeof(double)), worst = 0, gmax = 0;
    double conv_max = 0; /* a conv encoder's largest: its gradient is checked, not all zero */
    ref *R = calloc(1, sizeof *R);
    ck_assert(p && fd && R && np <= MAXPARAMS && f.p->out_w <= MAXOUT && f.l.N <= MAXROWS);
    ck_assert(!f.p->towers || f.p->core[0].h <= MAXH);
    for (size_t j = 0; j < np; j++)
        p[j] = f.p->params[j];
    R->record = 1; /* the forward as it is: the truncation points' states are its own */
    double loss = ppo_loss_d(&f.l, p, R, idx, n);
    ck_assert_msg(fabs(loss - lib_loss) <= 1e-5 * (1 + fabs(loss)), "%s: loss %.8g, library's "
                  "%.8g", settings, loss, lib_loss);
    fd_gradient(&f.l, p, R, idx, n, 0, fd);
    for (size_t j = 0; j < np; j++) {
        if (isnan(fd[j]))
            continue; /* not differenced (fd_checked) */
        gmax = fmax(gmax, fabs(fd[j]));
        if (j < f.p->cnn.num_params)
            conv_max = fmax(conv_max, fabs(fd[j]));
        ck_assert_msg(within(f.l.g[j], fd[j]), "%s: parameter %zu: library %.8g, finite "
                      "difference %.8g", settings, j, (double)f.l.g[j], fd[j]);
        worst = fmax(worst, fabs(fd[j] - f.l.g[j]) / (fabs(fd[j]) + 1e-4));
    }
    printf("%-60s %zu parameters, largest |grad| %.3g (encoder's %.3g), worst relative error "
           "%.2e\n", settings, np, gmax, conv_max, worst);
    ck_assert_msg(!f.p->cnn.layers || conv_max > 1e-4, "%s: the encoder's gradient is %.3g at "
                  "most: too small to check anything", settings, conv_max);
    if (f.p->towers || f.p->stack > 1)
        check_sensitive(&f, settings, p, R, idx, n, fd);
    free(p);
    free(fd);
    free(R);
    teardown(&f);
}

START_TEST(ppo_gradient_separate_tanh_categorical)
{
    check_case("policy.hidden=8,6 policy.activation=tanh", 1, 4, 5, 40);
}
END_TEST

START_TEST(ppo_gradient_shared_relu_categorical)
{
    check_case("policy.hidden=8,7 policy.activation=relu policy.shared=true", 1, 3, 5, 40);
}
END_TEST

START_TEST(ppo_gradient_separate_elu_gaussian)
{
    check_case("policy.hidden=9 policy.activation=elu policy.init_log_std=-0.5", 0, 3, 5, 40);
}
END_TEST

START_TEST(ppo_gradient_shared_tanh_gaussian_obs_norm)
{
    check_case("policy.hidden=6,5 policy.shared=true policy.obs_norm=true", 0, 5, 5, 40);
}
END_TEST

/* IMPALA's loss (-A log pi, no clipping) on the same random experience. */
START_TEST(impala_gradient_separate_relu_gaussian)
{
    check_case("policy.hidden=7,5 policy.activation=relu train.algo=impala", 0, 3, 5, 40);
}
END_TEST

/* The other loss settings: decoupled PPO (the clip around pi_0, advantages weighted by
 * min(rho, pi_0/mu) after the normalisation), the plain value loss, raw advantages. */
START_TEST(ppo_gradient_decoupled_categorical)
{
    check_case("policy.hidden=8,6 train.decoupled=true train.vtrace_rho=1.2", 1, 4, 5, 40);
}
END_TEST

START_TEST(ppo_gradient_decoupled_gaussian_plain_values)
{
    check_case("policy.hidden=7 policy.shared=true train.decoupled=true train.clip_value=false",
               0, 3, 5, 40);
}
END_TEST

START_TEST(ppo_gradient_raw_advantages_categorical)
{
    check_case("policy.hidden=6,5 train.norm_adv=false train.clip_value=false", 1, 3, 5, 40);
}
END_TEST

START_TEST(ppo_gradient_linear_policy)
{
    check_case("policy.hidden=", 1, 4, 5, 40);
}
END_TEST

/* ---- convolutional encoders over 40 x 40 images ---- */

/* Sample Factory's stack (the last layer of stride 2) before separate networks: the
 * features' gradient is the sum of the actor's and the critic's. */
START_TEST(ppo_gradient_simple_encoder_separate)
{
    check_case("policy.encoder=simple policy.conv_channels=3,3,2 policy.hidden=6 "
               "policy.activation=relu", 1, 1, 2, 16);
}
END_TEST

/* Nature's stack, two channels in, a shared trunk and a Gaussian head. */
START_TEST(ppo_gradient_nature_encoder_shared_gaussian)
{
    check_case("policy.encoder=nature policy.conv_channels=2,3,2 policy.hidden=5 "
               "policy.shared=true", 0, 2, 2, 16);
}
END_TEST

/* A stack of 3 one-channel frames over 4 steps of 8 envs: stacks reach into the frames
 * before the rollout and stop at an episode's start; the reference builds them its own
 * way. */
START_TEST(ppo_gradient_frame_stack)
{
    check_case("policy.encoder=simple policy.conv_channels=2,2,2 policy.hidden=5 "
               "policy.frame_stack=3", 1, 1, 4, 8);
}
END_TEST

/* A rollout cut after S of its T steps (dist.preempt) learns as an S-step rollout of the
 * same steps: the bootstrap observation's stack is built on step S - 1's frames and
 * flags, not on the unwritten rows after it. */
START_TEST(preempted_frame_stack_bootstraps_from_its_last_step)
{
    const char *settings = "policy.encoder=simple policy.conv_channels=2,2,2 policy.hidden=5 "
                           "policy.frame_stack=3";
    enum { FULL = 6, CUT = 3, ENVS = 4 };
    fixture a, b;
    setup(&a, settings, 1, 1, FULL, ENVS);
    setup(&b, settings, 1, 1, CUT, ENVS);
    frl_rng r = frl_rng_stream(43, 0);
    randomise(&a, &r);
    memcpy(b.p->params, a.p->params, sizeof(float) * a.p->num_params);
    fill_slot(&a, &r);
    prepare_stack(&a, &r);
    /* env 2 autoresets on the cut's last step, and rows after the cut are stale */
    uint8_t *reset = frl_ring_at(a.ring, 0, FRL_RING_RESET_STEPS);
    reset[(CUT - 1) * ENVS + 2] = 1;
    reset[(CUT - 1) * ENVS + 3] = 0;
    reset[CUT * ENVS + 3] = 1;
    for (int k = 0; k < FRL_RING_ARRAY_COUNT; k++) {
        if (k == FRL_RING_POLICY_VERSION || k == FRL_RING_BOOTSTRAP_OBS)
            continue;
        size_t row = a.ring->slot[0].bytes[k] / FULL;
        memcpy(frl_ring_at(b.ring, 0, k), frl_ring_at(a.ring, 0, k), row * CUT);
    }
    memcpy(frl_ring_at(b.ring, 0, FRL_RING_BOOTSTRAP_OBS),
           frl_ring_at(a.ring, 0, FRL_RING_BOOTSTRAP_OBS),
           a.ring->slot[0].bytes[FRL_RING_BOOTSTRAP_OBS]);
    frl_ppo_set_state0(&b.l, a.frames0);
    a.l.steps_used = CUT;
    frl_ppo_bootstrap(&a.l, 0);
    frl_ppo_advantages(&a.l, 0);
    frl_ppo_bootstrap(&b.l, 0);
    frl_ppo_advantages(&b.l, 0);
    for (int32_t e = 0; e < ENVS; e++)
        ck_assert_msg(a.l.vboot[e] == b.l.vboot[e], "env %d: bootstrap value %.7g, the %d-step "
                      "rollout's %.7g", (int)e, (double)a.l.vboot[e], CUT, (double)b.l.vboot[e]);
    for (int32_t i = 0; i < CUT * ENVS; i++)
        ck_assert(a.l.adv[i] == b.l.adv[i] && a.l.valid[i] == b.l.valid[i]);
    for (int32_t i = CUT * ENVS; i < FULL * ENVS; i++)
        ck_assert(!a.l.valid[i]);
    teardown(&a);
    teardown(&b);
}
END_TEST

/* A preempted rollout's rows after its last step were never written: their actions can
 * be anything (here an index far out of range, as an allocator that does not zero could
 * leave). V-trace's and decoupled PPO's log-ratio pass read the logits at that index;
 * it now skips those rows (ratio 1), and the rows collected keep their ratios. */
START_TEST(preempted_rows_after_the_cut_are_not_read)
{
    const char *settings[] = {"policy.hidden=5 train.decoupled=true",
                              "policy.hidden=5 policy.core=gru policy.core_size=4 "
                              "train.decoupled=true"};
    enum { FULL = 6, CUT = 3, ENVS = 4 };
    for (int k = 0; k < 2; k++) {
        fixture a;
        setup(&a, settings[k], 1, 3, FULL, ENVS);
        frl_rng r = frl_rng_stream(44, 0);
        randomise(&a, &r);
        fill_slot(&a, &r);
        int32_t *act = frl_ring_at(a.ring, 0, FRL_RING_ACTIONS);
        for (int32_t i = CUT * ENVS; i < FULL * ENVS; i++)
            act[i] = 1 << 28;
        a.l.steps_used = CUT;
        memset(a.state0, 0, sizeof a.state0); /* the GRU's columns start from zeros */
        frl_ppo_set_state0(&a.l, a.state0);
        char err[FRL_ERRMSG_SIZE];
        ck_assert_msg(frl_ppo_values(&a.l, 0, err) == FRL_OK, "%s", err);
        for (int32_t i = 0; i < CUT * ENVS; i++)
            ck_assert(isfinite(a.l.log_ratio[i]));
        for (int32_t i = CUT * ENVS; i < FULL * ENVS; i++)
            ck_assert_msg(a.l.log_ratio[i] == 0.0f, "row %d: %g", (int)i,
                          (double)a.l.log_ratio[i]);
        /* Other bytes in the rows after the cut change nothing the cut rollout uses: its
         * values and the bootstrap values (a recurrent state stops at the cut). */
        float v[CUT * ENVS], boot[ENVS];
        memcpy(v, frl_ring_at(a.ring, 0, FRL_RING_VALUES), sizeof v);
        memcpy(boot, a.l.vboot, sizeof boot);
        float *obs = frl_ring_at(a.ring, 0, FRL_RING_OBSERVATIONS);
        uint8_t *reset = frl_ring_at(a.ring, 0, FRL_RING_RESET_STEPS);
        for (int32_t i = CUT * ENVS * a.p->obs_w; i < FULL * ENVS * a.p->obs_w; i++)
            obs[i] = 1.5f;
        memset(reset + CUT * ENVS, 1, (FULL - CUT) * ENVS);
        ck_assert_msg(frl_ppo_values(&a.l, 0, err) == FRL_OK, "%s", err);
        ck_assert(memcmp(v, frl_ring_at(a.ring, 0, FRL_RING_VALUES), sizeof v) == 0);
        for (int32_t b = 0; b < ENVS; b++)
            ck_assert_msg(a.l.vboot[b] == boot[b], "%s: column %d bootstraps from %g, then %g",
                          settings[k], (int)b, (double)boot[b], (double)a.l.vboot[b]);
        teardown(&a);
    }
}
END_TEST

/* ---- recurrent policies: 8 steps of 4 columns ---- */

/* One tower for both heads, the whole rollout back-propagated. */
START_TEST(ppo_gradient_gru_shared_categorical)
{
    check_case("policy.core=gru policy.core_size=6 policy.hidden=5 policy.shared=true", 1, 3, 8,
               4);
}
END_TEST

/* Two towers, truncation every 3 steps. */
START_TEST(ppo_gradient_lstm_separate_gaussian_bptt)
{
    check_case("policy.core=lstm policy.core_size=5 policy.hidden=6 policy.activation=elu "
               "train.bptt=3", 0, 3, 8, 4);
}
END_TEST

/* A two-layer encoder per tower, truncation every 2 steps. */
START_TEST(ppo_gradient_gru_separate_relu_gaussian_bptt)
{
    check_case("policy.core=gru policy.core_size=7 policy.hidden=6,5 policy.activation=relu "
               "train.bptt=2", 0, 3, 8, 4);
}
END_TEST

/* A conv encoder before the cores: its features feed both towers (their input
 * gradients summed), one with an MLP encoder, truncation every 3 steps. */
START_TEST(ppo_gradient_conv_encoder_gru_separate)
{
    check_case("policy.encoder=simple policy.conv_channels=2,2,2 policy.core=gru "
               "policy.core_size=4 policy.hidden=5 train.bptt=3", 1, 3, 8, 4);
}
END_TEST

static void check_case(const char *settings, int discrete, int obs_w, int32_t T, int32_t B);

static void check_mixed(const char *settings, int discrete, int32_t vector, int32_t T,
                        int32_t B)
{
    mixed_vector = vector;
    check_case(settings, discrete, 1, T, B);
    mixed_vector = 0;
}

/* A mixed observation (a one-channel image and 3 floats): the vector joins the
 * encoder's features before separate networks, whose input gradients are split back
 * into the features' alone. */
START_TEST(ppo_gradient_mixed_obs_separate)
{
    check_mixed("policy.encoder=simple policy.conv_channels=2,2,2 policy.hidden=5", 1, 3, 2,
                16);
}
END_TEST

/* The vector normalised (policy.obs_norm) before a shared trunk: its statistics are
 * the vector's alone. */
START_TEST(ppo_gradient_mixed_obs_norm_shared)
{
    check_mixed("policy.encoder=simple policy.conv_channels=2,2,3 policy.hidden=5 "
                "policy.shared=true policy.obs_norm=true", 1, 4, 2, 16);
}
END_TEST

/* The same before a GRU (the recurrent policy's own join), Gaussian head. */
START_TEST(ppo_gradient_mixed_obs_gru)
{
    check_mixed("policy.encoder=simple policy.conv_channels=2,2,4 policy.core=gru "
                "policy.core_size=4 policy.hidden=5 train.bptt=3", 0, 2, 8, 4);
}
END_TEST

/* The same stack straight into one LSTM (no MLP encoder) for both heads. */
START_TEST(ppo_gradient_conv_encoder_lstm_shared_no_mlp)
{
    check_case("policy.encoder=nature policy.conv_channels=2,2,2 policy.core=lstm "
               "policy.core_size=4 policy.hidden= policy.shared=true", 0, 2, 8, 4);
}
END_TEST

/* IMPALA's loss with V-trace's advantages; no encoder (the core reads the normalised
 * observations), truncation every 4 steps. */
START_TEST(impala_gradient_lstm_shared_categorical_obs_norm)
{
    check_case("policy.core=lstm policy.core_size=5 policy.hidden= policy.shared=true "
               "policy.obs_norm=true train.algo=impala train.bptt=4", 1, 4, 8, 4);
}
END_TEST

/* ---- the heads alone ---- */

/* The samplers' fused draw (one log-sum-exp) against frl_cat_sample and frl_cat_logp:
 * the same index and the same bits of log pi, over widths 2-9, logits up to +-30 and
 * draws at and beside the cumulative boundaries. */
START_TEST(categorical_sample_logp_is_both_calls)
{
    frl_rng r = frl_rng_stream(77, 0);
    float z[9];
    for (int rep = 0; rep < 20000; rep++) {
        int32_t n = 2 + rep % 8;
        double scale = rep % 3 == 0 ? 30.0 : 2.0;
        for (int32_t i = 0; i < n; i++)
            z[i] = (float)frl_rng_uniform_range(&r, -scale, scale);
        double u = frl_rng_uniform(&r);
        if (rep % 5 == 0) /* on a boundary: the first cumulative probability */
            u = exp(frl_cat_logp(z, n, 0));
        double lp, lp_ref;
        int32_t a = frl_cat_sample_logp(z, n, u, &lp);
        int32_t a_ref = frl_cat_sample(z, n, u);
        lp_ref = frl_cat_logp(z, n, a_ref);
        ck_assert_int_eq(a, a_ref);
        ck_assert_msg(memcmp(&lp, &lp_ref, sizeof lp) == 0, "n %d u %.17g: %.17g vs %.17g",
                      (int)n, u, lp, lp_ref);
    }
}
END_TEST

START_TEST(categorical_head)
{
    float z[5] = {0.3f, -1.2f, 2.0f, 0.0f, -0.4f}, g[5];
    for (int32_t a = 0; a < 5; a++) {
        frl_cat_backward(z, 5, a, 0.7, -0.3, g);
        for (int i = 0; i < 5; i++) {
            /* FD of the double formula with float inputs moved by h in double. */
            double h = 1e-6, zs[5], vals[2];
            for (int k = 0; k < 2; k++) {
                for (int j = 0; j < 5; j++)
                    zs[j] = z[j] + (j == i ? (k ? -h : h) : 0);
                double mx = zs[0], s = 0, e = 0;
                for (int j = 1; j < 5; j++)
                    mx = zs[j] > mx ? zs[j] : mx;
                for (int j = 0; j < 5; j++)
                    s += exp(zs[j] - mx);
                for (int j = 0; j < 5; j++)
                    e -= exp(zs[j] - mx - log(s)) * (zs[j] - mx - log(s));
                vals[k] = 0.7 * (zs[a] - mx - log(s)) - 0.3 * e;
            }
            double fd = (vals[0] - vals[1]) / (2 * h);
            ck_assert_msg(fabs(fd - g[i]) < 1e-5, "a=%d i=%d: %g vs %g", a, i, (double)g[i], fd);
        }
        double s = 0;
        for (int i = 0; i < 5; i++)
            s += exp(frl_cat_logp(z, 5, i));
        ck_assert(fabs(s - 1) < 1e-12);
    }
    ck_assert_int_eq(frl_cat_argmax(z, 5), 2);
    ck_assert_int_eq(frl_cat_sample(z, 5, 0.0), 0);
    ck_assert_int_eq(frl_cat_sample(z, 5, 0.999999999), 4);
}
END_TEST

START_TEST(gaussian_head)
{
    float mean[3] = {0.1f, -0.7f, 1.3f}, ls[3] = {-0.5f, 0.2f, 0.0f}, a[3] = {0.4f, -0.2f, 1.0f};
    float dm[3];
    double dls[3] = {0, 0, 0};
    double inv[3];
    frl_gauss_inv_std(ls, 3, inv);
    frl_gauss_backward_inv(mean, inv, a, 3, 0.6, 0.25, dm, dls);
    for (int i = 0; i < 3; i++) {
        double h = 1e-6;
        for (int which = 0; which < 2; which++) {
            double vals[2];
            for (int k = 0; k < 2; k++) {
                double lp = 0, e = 0;
                for (int j = 0; j < 3; j++) {
                    double m = mean[j] + (which == 0 && j == i ? (k ? -h : h) : 0);
                    double s = ls[j] + (which == 1 && j == i ? (k ? -h : h) : 0);
                    double z = (a[j] - m) / exp(s);
                    lp += -0.5 * z * z - s - 0.5 * log(2 * M_PI);
                    e += 0.5 + 0.5 * log(2 * M_PI) + s;
                }
                vals[k] = 0.6 * lp + 0.25 * e;
            }
            double fd = (vals[0] - vals[1]) / (2 * h), got = which ? dls[i] : dm[i];
            ck_assert_msg(fabs(fd - got) < 1e-5, "%s[%d]: %g vs %g", which ? "log_std" : "mean",
                          i, got, fd);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gradcheck");
    TCase *tc = tcase_create("gradcheck");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, categorical_sample_logp_is_both_calls);
    tcase_add_test(tc, categorical_head);
    tcase_add_test(tc, gaussian_head);
    tcase_add_test(tc, ppo_gradient_separate_tanh_categorical);
    tcase_add_test(tc, ppo_gradient_simple_encoder_separate);
    tcase_add_test(tc, ppo_gradient_conv_encoder_gru_separate);
    tcase_add_test(tc, ppo_gradient_conv_encoder_lstm_shared_no_mlp);
    tcase_add_test(tc, ppo_gradient_nature_encoder_shared_gaussian);
    tcase_add_test(tc, ppo_gradient_frame_stack);
    tcase_add_test(tc, preempted_frame_stack_bootstraps_from_its_last_step);
    tcase_add_test(tc, preempted_rows_after_the_cut_are_not_read);
    tcase_add_test(tc, ppo_gradient_mixed_obs_separate);
    tcase_add_test(tc, ppo_gradient_mixed_obs_gru);
    tcase_add_test(tc, ppo_gradient_mixed_obs_norm_shared);
    tcase_add_test(tc, ppo_gradient_shared_relu_categorical);
    tcase_add_test(tc, ppo_gradient_separate_elu_gaussian);
    tcase_add_test(tc, ppo_gradient_shared_tanh_gaussian_obs_norm);
    tcase_add_test(tc, ppo_gradient_linear_policy);
    tcase_add_test(tc, ppo_gradient_decoupled_categorical);
    tcase_add_test(tc, ppo_gradient_decoupled_gaussian_plain_values);
    tcase_add_test(tc, ppo_gradient_raw_advantages_categorical);
    tcase_add_test(tc, impala_gradient_separate_relu_gaussian);
    tcase_add_test(tc, ppo_gradient_gru_shared_categorical);
    tcase_add_test(tc, ppo_gradient_lstm_separate_gaussian_bptt);
    tcase_add_test(tc, ppo_gradient_gru_separate_relu_gaussian_bptt);
    tcase_add_test(tc, impala_gradient_lstm_shared_categorical_obs_norm);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
