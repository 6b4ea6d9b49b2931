/* V-trace (lib/algo/vtrace.c) against the paper's direct sums, computed here with every
 * product written out (O(T^2), no recursion), on random columns with terminations,
 * truncations, autoreset rows and ratios on both sides of the truncation levels; and
 * on-policy against GAE(lambda). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "algo/vtrace.h"
#include "nn/dev_math.h"
#include "test_util.h"

enum { T = 40, STRIDE = 3 }; /* a column of a [T x 3] slot: stride 3 */

typedef struct column {
    float r[T * STRIDE], v[T * STRIDE], lr[T * STRIDE];
    uint8_t term[T * STRIDE], trunc[T * STRIDE], reset[T * STRIDE];
    float boot;
} column;

static void random_column(column *c, frl_rng *g, double log_ratio_scale)
{
    memset(c, 0, sizeof *c);
    for (int t = 0; t < T; t++) {
        int i = t * STRIDE;
        c->r[i] = (float)frl_rng_uniform_range(g, -1, 2);
        c->v[i] = (float)frl_rng_uniform_range(g, -3, 3);
        c->lr[i] = (float)(log_ratio_scale * frl_rng_uniform_range(g, -1, 1));
        /* next-step autoreset: the row after an episode's end is a reset row */
        c->reset[i] = t > 0 && (c->term[i - STRIDE] | c->trunc[i - STRIDE]);
        if (!c->reset[i]) {
            double u = frl_rng_uniform(g);
            c->term[i] = u < 0.08;
            c->trunc[i] = u >= 0.08 && u < 0.14;
        }
    }
    c->boot = (float)frl_rng_uniform_range(g, -3, 3);
}

/* V(x_{t+1}) as the transition at t sees it; its episode ended if *ended. */
static double next_value(const column *c, int t, int *ended)
{
    int i = t * STRIDE;
    *ended = c->term[i] || c->trunc[i];
    if (c->term[i])
        return 0;
    if (t + 1 == T)
        return c->boot;
    return c->v[i + STRIDE]; /* the next state, or (truncation) the final observation */
}

/* v_s = V(x_s) + sum_{t >= s, same episode} gamma^(t-s) (prod_{s <= i < t} c_i) delta_t. */
static double target_ref(const column *c, int s, const frl_vtrace_params *p)
{
    double sum = 0;
    for (int t = s; t < T; t++) {
        double weight = pow(p->gamma, t - s);
        for (int i = s; i < t; i++)
            weight *= p->lambda * fmin(p->c_bar, exp((double)c->lr[i * STRIDE]));
        int ended;
        double nv = next_value(c, t, &ended);
        double rho = fmin(p->rho_bar, exp((double)c->lr[t * STRIDE]));
        sum += weight * rho * (c->r[t * STRIDE] + p->gamma * nv - c->v[t * STRIDE]);
        if (ended)
            break;
    }
    return c->v[s * STRIDE] + sum;
}

/* rho_s (r_s + gamma v_{s+1} - V(x_s)), v_{s+1} the target at s + 1 within the episode. */
static double adv_ref(const column *c, int s, const frl_vtrace_params *p)
{
    int ended, i = s * STRIDE;
    double nv = next_value(c, s, &ended);
    double next = (!ended && s + 1 < T) ? target_ref(c, s + 1, p) : nv;
    double rho = fmin(p->rho_bar, exp((double)c->lr[i]));
    return rho * (c->r[i] + p->gamma * next - c->v[i]);
}

static void run(const column *c, const frl_vtrace_params *p, float *target, float *adv,
                uint8_t *valid)
{
    for (int i = 0; i < T * STRIDE; i++) {
        target[i] = adv[i] = NAN;
        valid[i] = 7;
    }
    frl_vtrace_column(T, STRIDE, c->r, c->v, c->lr, c->term, c->trunc, c->reset, c->boot, p,
                      target, adv, valid);
}

START_TEST(matches_direct_sums)
{
    const frl_vtrace_params ps[] = {
        {0.99, 1.0, 1.0, 1.0}, {0.9, 0.95, 1.0, 1.0}, {0.97, 1.0, 2.0, 0.5}, {0.99, 0.9, 0.3, 3.0},
    };
    frl_rng g = frl_rng_stream(11, 0);
    int resets = 0, masked_checked = 0;
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
        for (int rep = 0; rep < 20; rep++) {
            column c;
            random_column(&c, &g, 1.5); /* ratios from 0.22 to 4.5: both sides of the bars */
            float target[T * STRIDE], adv[T * STRIDE];
            uint8_t valid[T * STRIDE];
            run(&c, &ps[pi], target, adv, valid);
            for (int s = 0; s < T; s++) {
                int i = s * STRIDE;
                if (c.reset[i]) {
                    ck_assert(valid[i] == 0 && target[i] == 0 && adv[i] == 0);
                    resets++;
                    continue;
                }
                ck_assert_int_eq(valid[i], 1);
                double tw = target_ref(&c, s, &ps[pi]), aw = adv_ref(&c, s, &ps[pi]);
                ck_assert_msg(fabs(target[i] - tw) <= 1e-5 * (1 + fabs(tw)),
                              "params %zu rep %d t %d: target %.7g, direct sum %.7g", pi, rep, s,
                              (double)target[i], tw);
                ck_assert_msg(fabs(adv[i] - aw) <= 1e-5 * (1 + fabs(aw)),
                              "params %zu rep %d t %d: advantage %.7g, direct sum %.7g", pi, rep,
                              s, (double)adv[i], aw);
            }
            /* Only the column's own rows are written. */
            for (int i = 0; i < T * STRIDE; i++)
                if (i % STRIDE) {
                    ck_assert(isnan(target[i]) && isnan(adv[i]) && valid[i] == 7);
                    masked_checked++;
                }
        }
    ck_assert_int_gt(resets, 50); /* the masking was exercised */
    ck_assert_int_gt(masked_checked, 0);
}
END_TEST

/* On-policy, with the bars at 1: v_t - V(x_t) is GAE(lambda)'s advantage. */
START_TEST(on_policy_is_gae)
{
    const frl_vtrace_params p = {0.99, 0.95, 1.0, 1.0};
    frl_rng g = frl_rng_stream(12, 0);
    for (int rep = 0; rep < 50; rep++) {
        column c;
        random_column(&c, &g, 0.0);
        float target[T * STRIDE], adv[T * STRIDE];
        uint8_t valid[T * STRIDE];
        run(&c, &p, target, adv, valid);
        double next_adv = 0;
        for (int s = T - 1; s >= 0; s--) {
            int i = s * STRIDE, ended;
            if (c.reset[i]) {
                next_adv = 0;
                continue;
            }
            double delta = c.r[i] + p.gamma * next_value(&c, s, &ended) - c.v[i];
            double gae = delta + p.gamma * p.lambda * (ended ? 0 : next_adv);
            next_adv = gae;
            ck_assert_msg(fabs((double)target[i] - c.v[i] - gae) <= 1e-5 * (1 + fabs(gae)),
                          "rep %d t %d: v - V = %.7g, GAE %.7g", rep, s,
                          (double)target[i] - c.v[i], gae);
        }
    }
}
END_TEST

/* GAE's column (frl_dm_gae_column, the PPO learner's) against the direct sums
 * A_s = sum over the episode's steps t >= s of (gamma lambda)^(t-s) delta_t, each
 * delta_t bootstrapping from the next state, a truncation's final observation (the
 * autoreset row's value), the rollout's bootstrap value, or 0 after a termination. */
START_TEST(gae_matches_direct_sums)
{
    const frl_dm_adv_params ps[] = {{0.99, 0.95, 1, 1, 0, 0}, {0.9, 1.0, 1, 1, 0, 0},
                                    {0.97, 0.0, 1, 1, 0, 0}};
    frl_rng g = frl_rng_stream(14, 0);
    int resets = 0;
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
        for (int rep = 0; rep < 20; rep++) {
            column c;
            random_column(&c, &g, 0.0);
            float ret[T * STRIDE], adv[T * STRIDE];
            uint8_t valid[T * STRIDE];
            for (int i = 0; i < T * STRIDE; i++) {
                ret[i] = adv[i] = NAN;
                valid[i] = 7;
            }
            frl_dm_gae_column(T, STRIDE, 0, c.r, c.v, c.term, c.trunc, c.reset, c.boot, &ps[pi],
                              adv, ret, valid);
            for (int s = 0; s < T; s++) {
                int i = s * STRIDE;
                if (c.reset[i]) {
                    ck_assert(valid[i] == 0 && adv[i] == 0 && ret[i] == 0);
                    resets++;
                    continue;
                }
                double want = 0, w = 1;
                for (int t = s; t < T; t++, w *= ps[pi].gamma * ps[pi].lambda) {
                    int ended;
                    double nv = next_value(&c, t, &ended);
                    want += w * (c.r[t * STRIDE] + ps[pi].gamma * nv - c.v[t * STRIDE]);
                    if (ended)
                        break;
                }
                ck_assert_int_eq(valid[i], 1);
                ck_assert_msg(fabs(adv[i] - want) <= 1e-5 * (1 + fabs(want)),
                              "params %zu rep %d t %d: GAE %.7g, direct sum %.7g", pi, rep, s,
                              (double)adv[i], want);
                ck_assert(fabs(ret[i] - (want + c.v[i])) <= 1e-5 * (1 + fabs(want + c.v[i])));
            }
            for (int i = 0; i < T * STRIDE; i++)
                if (i % STRIDE)
                    ck_assert(isnan(adv[i]) && isnan(ret[i]) && valid[i] == 7);
        }
    ck_assert_int_gt(resets, 50);
}
END_TEST

/* Ratios far beyond the bars (log-ratio +-80: exp overflows float) stay finite and are
 * truncated to the bars. */
START_TEST(extreme_ratios_are_truncated)
{
    const frl_vtrace_params p = {0.9, 1.0, 1.0, 1.0};
    column c;
    frl_rng g = frl_rng_stream(13, 0);
    random_column(&c, &g, 0.0);
    for (int t = 0; t < T; t++)
        c.lr[t * STRIDE] = t % 2 ? 80.0f : -80.0f;
    float target[T * STRIDE], adv[T * STRIDE];
    uint8_t valid[T * STRIDE];
    run(&c, &p, target, adv, valid);
    for (int s = 0; s < T; s++) {
        int i = s * STRIDE;
        ck_assert(isfinite(target[i]) && isfinite(adv[i]));
        if (!c.reset[i])
            ck_assert(fabs(target[i] - target_ref(&c, s, &p)) <= 1e-5 * (1 + fabs(target[i])));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vtrace");
    TCase *tc = tcase_create("vtrace");
    tcase_add_test(tc, matches_direct_sums);
    tcase_add_test(tc, on_policy_is_gae);
    tcase_add_test(tc, extreme_ratios_are_truncated);
    tcase_add_test(tc, gae_matches_direct_sums);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
