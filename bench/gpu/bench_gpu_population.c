/* bench_gpu_population: a population's batched per-member inference on the CUDA device
 * (the plugin's fused kernel, each row reading its member's weights) against the same
 * call on the CPU, measured in one run.
 *
 *   bench_gpu_population [--members 256] [--threads 16] [--reps 200]
 *
 * P members of a 64x64 tanh MLP on CartPole-v1's spaces (4 inputs, 2 logits),
 * deterministic acting, R = 1 and 16 rows a member (row i acts for member i % P). On the
 * device: frl_population_act while the members are uploaded (as frl_population_evaluate
 * does once per evaluation): the rows' observations and members up, the kernel, the
 * logits down, the head on the host. Printed per R: the median microseconds of a call
 * on each side and the rows per second, as `pop_act device=... R=... us=...` lines that
 * bench/gpu/compare_population_torch.py reads. Without a device it says why and exits
 * 0 after the CPU's figures. Timings are printed, never asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench_args.h"
#include "../bench_time.h"
#include "rl/population.h"

static frl_runtime *runtime_on(const char *device, int threads)
{
    frl_config *cfg;
    frl_runtime *rt = NULL;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return NULL;
    frl_config_set(cfg, "runtime.device", device);
    frl_config_set_int(cfg, "runtime.threads", threads);
    if (frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK)
        rt = NULL;
    frl_config_destroy(cfg);
    return rt;
}

typedef struct setup {
    frl_policy *policy;
    frl_population *pop;
} setup;

static int make(frl_runtime *rt, int32_t P, setup *s)
{
    frl_env *e;
    frl_config *cfg;
    if (frl_env_create(&e, rt, "CartPole-v1", NULL) != FRL_OK ||
        frl_config_create(&cfg, NULL) != FRL_OK)
        return 1;
    frl_config_parse(cfg, "policy.hidden=64,64 policy.activation=tanh");
    frl_status st = frl_policy_create(&s->policy, rt, cfg, frl_env_observation_space(e),
                                      frl_env_action_space(e));
    frl_config_destroy(cfg);
    frl_env_destroy(e);
    if (st == FRL_OK)
        st = frl_population_create(&s->pop, s->policy, P);
    if (st != FRL_OK)
        return 1;
    float *w = frl_population_parameters(s->pop);
    int64_t n = frl_population_member_size(s->pop);
    for (int64_t i = 0; i < (int64_t)P * n; i++)
        w[i] += 0.05f * (float)((i * 2654435761u) % 1000) / 1000.0f;
    return 0;
}

/* The median microseconds of one frl_population_act call of rows rows. */
static double time_act(frl_population *pop, int32_t rows, int32_t P, int reps)
{
    float *obs = malloc(sizeof(float) * 4 * (size_t)rows);
    int32_t *mem = malloc(sizeof(int32_t) * (size_t)rows), *act = malloc(sizeof(int32_t) * (size_t)rows);
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int32_t i = 0; i < rows; i++) {
        mem[i] = i % P;
        for (int k = 0; k < 4; k++)
            obs[i * 4 + k] = (float)((i * 31 + k * 7) % 200) / 100.0f - 1.0f;
    }
    frl_population_act_args a;
    frl_population_act_args_init(&a);
    a.batch = rows;
    a.observations = obs;
    a.members = mem;
    a.actions = act;
    a.deterministic = 1;
    a.observation_width = 4;
    a.action_width = 1;
    double result = -1;
    if (frl_population_act(pop, &a) == FRL_OK) { /* a warm-up, and a check it runs */
        for (int r = 0; r < reps; r++) {
            double t0 = bench_now();
            frl_population_act(pop, &a);
            t[r] = (bench_now() - t0) * 1e6;
        }
        qsort(t, (size_t)reps, sizeof *t, bench_cmp_double);
        result = t[reps / 2];
    } else {
        fprintf(stderr, "bench_gpu_population: %s\n", frl_last_error());
    }
    free(obs);
    free(mem);
    free(act);
    free(t);
    return result;
}

static void run_side(const char *device, int threads, int32_t P, int reps)
{
    frl_runtime *rt = runtime_on(device, threads);
    setup s = {0};
    if (!rt || make(rt, P, &s)) {
        printf("pop_act device=%s: SKIP (%s)\n", device, frl_last_error());
        frl_policy_destroy(s.policy); /* made before a population that failed */
        frl_runtime_destroy(rt);
        return;
    }
    if (frl_population_device_begin(s.pop) != FRL_OK) {
        printf("pop_act device=%s: SKIP (%s)\n", device, frl_last_error());
    } else {
        static const int32_t per[] = {1, 16};
        for (int i = 0; i < 2; i++) {
            int32_t rows = P * per[i];
            double us = time_act(s.pop, rows, P, reps);
            if (us < 0) /* no figure: it printed us=-1.00 and negative rows a second */
                printf("pop_act device=%s R=%d: FAILED\n", frl_runtime_device(rt), (int)per[i]);
            else
                printf("pop_act device=%s R=%d members=%d rows=%d us=%.2f rows_per_s=%.0f\n",
                       frl_runtime_device(rt), (int)per[i], (int)P, (int)rows, us,
                       rows / us * 1e6);
        }
    }
    frl_population_device_end(s.pop);
    frl_population_destroy(s.pop);
    frl_policy_destroy(s.policy);
    frl_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    int32_t P = 256;
    int threads = 16, reps = 200;
    bench_args_init(argc, argv, "bench_gpu_population",
                    "usage: bench_gpu_population [--members 256] [--threads 16] [--reps 200]\n");
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = bench_value(argc, argv, i);
        if (strcmp(k, "--members") == 0) /* P x 16 rows stay an int32_t */
            P = (int32_t)bench_int(k, v, 1, 1 << 20);
        else if (strcmp(k, "--threads") == 0)
            threads = (int)bench_int(k, v, 1, 1024);
        else if (strcmp(k, "--reps") == 0)
            reps = (int)bench_int(k, v, 1, 1 << 20);
        else
            bench_unknown(k);
    }
    printf("bench_gpu_population: %d members of a 64x64 tanh MLP, CartPole-v1's spaces, %d "
           "threads on the CPU, median of %d calls\n", (int)P, threads, reps);
    run_side("cpu", threads, P, reps);
    run_side("cuda", threads, P, reps);
    return 0;
}
