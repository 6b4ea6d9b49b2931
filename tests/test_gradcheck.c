/* Finite-difference gradient checks against float64 references.
 *
 * For several policy shapes (separate and shared trunks; tanh, relu and elu;
 * categorical and Gaussian heads; with and without observation normalisation) the
 * library's float32 PPO gradient over a random minibatch is compared with central
 * differences of an independent float64 implementation of the same loss: the MLP
 * layers, the heads' log-probabilities and entropies, the clipped surrogate, the
 * clipped value loss and the entropy bonus. The heads are also checked alone. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "rl/heads.h"
#include "algo/ppo.h"
#include "test_util.h"

/* ---- float64 reference ---- */

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

static void policy_d(const frl_policy *pol, const double *p, const float *obs, double *out,
                     double *value)
{
    double x[64], h[256];
    for (int32_t i = 0; i < pol->obs_w; i++) {
        double v = obs[i];
        if (pol->obs_norm) {
            v = (v - pol->norm.use_mean[i]) * pol->norm.use_inv_std[i];
            v = v > pol->norm.clip ? pol->norm.clip : (v < -pol->norm.clip ? -pol->norm.clip : v);
        }
        x[i] = v;
    }
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

/* The PPO loss over the minibatch rows idx[0..n), as frl_ppo defines it. */
static double ppo_loss_d(const frl_ppo *l, const double *p, const int32_t *idx, int32_t n)
{
    const frl_policy *pol = l->p;
    const float *obs = frl_ring_at(l->ring, 0, FRL_RING_OBSERVATIONS);
    const unsigned char *acts = frl_ring_at(l->ring, 0, FRL_RING_ACTIONS);
    const float *old_lp = frl_ring_at(l->ring, 0, FRL_RING_LOG_PROBS);
    const float *old_v = frl_ring_at(l->ring, 0, FRL_RING_VALUES);
    size_t ab = pol->discrete ? 4 : 4 * (size_t)pol->out_w;
    double s = 0, ss = 0, cnt = 0, c = l->s.clip;
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
        double out[64], v, ent;
        policy_d(pol, p, obs + (size_t)i * (size_t)pol->obs_w, out, &v);
        double lp = logp_d(pol, p, out, acts + (size_t)i * ab, &ent);
        double ratio = exp(lp - old_lp[i]), A = (l->adv[i] - mean) / (sd + 1e-8);
        double rc = ratio < 1 - c ? 1 - c : (ratio > 1 + c ? 1 + c : ratio);
        pg += l->s.impala ? -A * lp : fmax(-A * ratio, -A * rc);
        double d = v - old_v[i], vc = old_v[i] + (d < -c ? -c : (d > c ? c : d));
        vl += 0.5 * fmax((v - l->ret[i]) * (v - l->ret[i]), (vc - l->ret[i]) * (vc - l->ret[i]));
        en += ent;
    }
    return pg / cnt - l->s.ent_coef * en / cnt + l->s.vf_coef * vl / cnt;
}

/* ---- setup: a policy, a ring slot of random experience, a learner ---- */

typedef struct fixture {
    frl_runtime *rt;
    frl_space *os, *as;
    frl_policy *p;
    frl_ring *ring;
    frl_ppo l;
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

static void setup(fixture *f, const char *settings, int discrete, int obs_w)
{
    frl_config *cfg;
    ck_assert_int_eq(frl_config_create(&cfg, NULL), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, "runtime.threads=2 train.minibatches=1"), FRL_OK);
    ck_assert_int_eq(frl_config_parse(cfg, settings), FRL_OK);
    ck_assert_int_eq(frl_runtime_create(&f->rt, cfg, NULL, NULL), FRL_OK);
    int64_t shape = obs_w;
    ck_assert_int_eq(frl_space_create_box(&f->os, NULL, 1, &shape, NULL, NULL), FRL_OK);
    int64_t ashape = 2;
    float lo[2] = {-1, -1}, hi[2] = {1, 1};
    if (discrete)
        ck_assert_int_eq(frl_space_create_discrete(&f->as, NULL, 3), FRL_OK);
    else
        ck_assert_int_eq(frl_space_create_box(&f->as, NULL, 1, &ashape, lo, hi), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&f->p, f->rt, cfg, f->os, f->as), FRL_OK);
    ck_assert_int_eq(frl_ring_create(&f->ring, f->rt, 1, 5, 40, f->os, f->as), FRL_OK);
    frl_ppo_settings s = {1, 1, 1e-3, 0.2, 0.01, 0.5, 0.5, 0.99, 0.95, 1e-5, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0};
    s.impala = frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_IMPALA;
    char err[256];
    ck_assert_int_eq(frl_ppo_init(&f->l, f->rt, f->p, f->ring, &s, err), FRL_OK);
    frl_config_destroy(cfg);
}

static void teardown(fixture *f)
{
    frl_ppo_free(&f->l);
    frl_ring_destroy(f->ring);
    frl_policy_destroy(f->p);
    frl_space_destroy(f->os);
    frl_space_destroy(f->as);
    frl_runtime_destroy(f->rt);
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

/* Shards write their gradients rather than add them, and the untransposed weights are
 * rebuilt per minibatch: after another minibatch, with every gradient buffer poisoned,
 * the same rows must give the same bits. */
static void check_no_stale_state(fixture *f, const int32_t *idx, int32_t n)
{
    size_t np = f->p->num_params, bytes = sizeof(float) * np;
    float *first = malloc(bytes);
    ck_assert_ptr_nonnull(first);
    memcpy(first, f->l.g, bytes);
    char err[256];
    ck_assert_int_eq(frl_ppo_gradient(&f->l, idx + n / 2, n - n / 2, NULL, err), FRL_OK);
    size_t all = f->l.grad_stride * (size_t)(f->l.shards + 2);
    for (size_t i = 0; i < all; i++)
        f->l.grads[i] = NAN;
    ck_assert_int_eq(frl_ppo_gradient(&f->l, idx, n, NULL, err), FRL_OK);
    ck_assert_msg(memcmp(first, f->l.g, bytes) == 0, "a gradient depends on earlier minibatches");
    free(first);
}

static void check_case(const char *settings, int discrete, int obs_w)
{
    fixture f;
    setup(&f, settings, discrete, obs_w);
    frl_rng r = frl_rng_stream(42, (uint64_t)obs_w * 7 + (uint64_t)discrete);
    randomise(&f, &r);
    fill_slot(&f, &r);
    frl_ppo_bootstrap(&f.l, 0);
    frl_ppo_advantages(&f.l, 0);
    f.l.slot = 0;
    int32_t N = f.l.N, idx[256];
    for (int32_t i = 0; i < N; i++)
        idx[i] = (i * 37) % N; /* a permutation, not the identity */
    char err[256];
    double sums[8] = {0};
    ck_assert_int_eq(frl_ppo_gradient(&f.l, idx, N, sums, err), FRL_OK);
    /* sums[4] counts rows whose ratio is clipped: both branches must be exercised. */
    ck_assert_msg(sums[4] > 0 && sums[4] < sums[5], "%s: %g of %g rows clipped", settings,
                  sums[4], sums[5]);
    check_no_stale_state(&f, idx, N);
    size_t np = f.p->num_params;
    double p[16384], worst = 0, gmax = 0;
    ck_assert(np <= 16384);
    for (size_t j = 0; j < np; j++)
        p[j] = f.p->params[j];
    for (size_t j = 0; j < np; j++) {
        double h = 1e-6, keep = p[j];
        p[j] = keep + h;
        double up = ppo_loss_d(&f.l, p, idx, N);
        p[j] = keep - h;
        double dn = ppo_loss_d(&f.l, p, idx, N);
        p[j] = keep;
        double fd = (up - dn) / (2 * h), err_j = fabs(fd - f.l.g[j]);
        gmax = fmax(gmax, fabs(fd));
        ck_assert_msg(err_j <= 2e-3 * fabs(fd) + 2e-5, "%s: parameter %zu: library %.8g, "
                      "finite difference %.8g", settings, j, (double)f.l.g[j], fd);
        worst = fmax(worst, err_j / (fabs(fd) + 1e-4));
    }
    printf("%-60s %zu parameters, largest |grad| %.3g, worst relative error %.2e\n", settings, np,
           gmax, worst);
    teardown(&f);
}

START_TEST(ppo_gradient_separate_tanh_categorical)
{
    check_case("policy.hidden=8,6 policy.activation=tanh", 1, 4);
}
END_TEST

START_TEST(ppo_gradient_shared_relu_categorical)
{
    check_case("policy.hidden=8,7 policy.activation=relu policy.shared=true", 1, 3);
}
END_TEST

START_TEST(ppo_gradient_separate_elu_gaussian)
{
    check_case("policy.hidden=9 policy.activation=elu policy.init_log_std=-0.5", 0, 3);
}
END_TEST

START_TEST(ppo_gradient_shared_tanh_gaussian_obs_norm)
{
    check_case("policy.hidden=6,5 policy.shared=true policy.obs_norm=true", 0, 5);
}
END_TEST

/* IMPALA's loss (-A log pi, no clipping) on the same random experience. */
START_TEST(impala_gradient_separate_relu_gaussian)
{
    check_case("policy.hidden=7,5 policy.activation=relu train.algo=impala", 0, 3);
}
END_TEST

START_TEST(ppo_gradient_linear_policy)
{
    check_case("policy.hidden=", 1, 4);
}
END_TEST

/* ---- the heads alone ---- */

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
    tcase_add_test(tc, categorical_head);
    tcase_add_test(tc, gaussian_head);
    tcase_add_test(tc, ppo_gradient_separate_tanh_categorical);
    tcase_add_test(tc, ppo_gradient_shared_relu_categorical);
    tcase_add_test(tc, ppo_gradient_separate_elu_gaussian);
    tcase_add_test(tc, ppo_gradient_shared_tanh_gaussian_obs_norm);
    tcase_add_test(tc, ppo_gradient_linear_policy);
    tcase_add_test(tc, impala_gradient_separate_relu_gaussian);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
