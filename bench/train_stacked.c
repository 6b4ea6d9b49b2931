/* train_stacked ENV [--stack K] [--seed S] [--steps N] [--set key=value ...]
 *
 * PPO with a memoryless (MLP) policy that sees the last K observations of a built-in
 * env side by side, oldest first, zeros before an episode's first step (Stable-Baselines3's
 * VecFrameStack convention). It is the baseline bench/learning.py sets beside the
 * recurrent policies (task nv-stack4): on CartPoleNoVel-v1 stacking lets an MLP take
 * velocities as differences, the usual alternative to a memory.
 *
 * The stacking sits outside the library, in per-env host callbacks around frl_env, so the
 * trainer is the one a host program gets. It takes the env's own default settings (as
 * `fastrl train ENV` does), then the --set keys; --seed sets runtime.seed. It prints the
 * result lines of `fastrl train` (bench/train_peers/runner.py reads them):
 *   env_steps_per_second: X
 *   mean_return: X steps: N seconds: S      (S from the process start) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "fastrl.h"
#include "trainer/env_defaults.h"

typedef struct options {
    const char *env;
    int32_t stack;
    int64_t steps;
} options;

/* One env and its window of frames: frames[(stack - 1) * width ...] is the newest. */
typedef struct stacked_env {
    frl_env *env;
    int32_t width, stack;
    float *frames, *obs;
} stacked_env;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the host callbacks ---- */

/* Drop the oldest frame, append obs, hand the window to the library. */
static void push_frame(stacked_env *s, float *out)
{
    size_t w = (size_t)s->width, n = w * (size_t)s->stack;
    memmove(s->frames, s->frames + w, (n - w) * sizeof(float));
    memcpy(s->frames + n - w, s->obs, w * sizeof(float));
    memcpy(out, s->frames, n * sizeof(float));
}

static int stacked_reset(void *user, uint64_t seed, float *obs)
{
    stacked_env *s = user;
    if (frl_env_reset(s->env, seed, s->obs) != FRL_OK)
        return 1;
    memset(s->frames, 0, (size_t)s->width * (size_t)s->stack * sizeof(float));
    push_frame(s, obs);
    return 0;
}

static int stacked_step(void *user, const void *action, float *obs, float *reward,
                        uint8_t *terminated, uint8_t *truncated)
{
    stacked_env *s = user;
    if (frl_env_step(s->env, action, s->obs, reward, terminated, truncated) != FRL_OK)
        return 2;
    push_frame(s, obs);
    return 0;
}

/* ---- setup ---- */

static const char usage[] = "usage: train_stacked ENV [--stack K (1..64, default 4)] "
                            "[--seed S] [--steps N] [--set key=value ...]\n";

/* A key the config refuses: its message, then the usage (exit 2). */
static void config_or_refuse(frl_status st)
{
    if (st != FRL_OK)
        bench_refuse(frl_last_error());
}

static void parse(int argc, char **argv, options *o, frl_config *cfg)
{
    bench_args_init(argc, argv, "train_stacked", usage);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' && !o->env) {
            o->env = a;
            continue;
        }
        const char *v = bench_value(argc, argv, i++);
        if (!strcmp(a, "--stack"))
            o->stack = (int32_t)bench_int(a, v, 1, 64);
        else if (!strcmp(a, "--steps"))
            o->steps = bench_int(a, v, 1, INT64_C(1) << 50);
        else if (!strcmp(a, "--seed"))
            config_or_refuse(frl_config_set(cfg, "runtime.seed", v));
        else if (!strcmp(a, "--set"))
            config_or_refuse(frl_config_parse(cfg, v));
        else
            bench_unknown(a);
    }
    if (!o->env)
        bench_refuse("no ENV");
}

/* The env's defaults under the caller's keys, as the built-in trainer resolves them. */
static frl_config *settings(const char *env, const frl_config *given)
{
    frl_config *cfg;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return NULL;
    const char *defaults = frl_env_default_settings(env);
    if (frl_config_parse(cfg, defaults ? defaults : "") != FRL_OK) {
        frl_config_destroy(cfg);
        return NULL;
    }
    for (const char *key = frl_config_next(NULL); key; key = frl_config_next(key)) {
        char text[1024];
        if (frl_config_is_set(given, key) &&
            (frl_config_get_text(given, key, text, sizeof text) != FRL_OK ||
             frl_config_set(cfg, key, text) != FRL_OK)) {
            frl_config_destroy(cfg);
            return NULL;
        }
    }
    return cfg;
}

/* The stacked observation space: the env's box repeated stack times along a new axis. */
static frl_space *stacked_space(const frl_space *inner, int32_t stack)
{
    int64_t w = frl_space_n(inner), shape[1] = {w * stack};
    if (frl_space_get_kind(inner) != FRL_SPACE_BOX)
        return NULL;
    float *low = malloc((size_t)shape[0] * sizeof(float)), *high = malloc((size_t)shape[0] * sizeof(float));
    frl_space *out = NULL;
    if (low && high) {
        for (int64_t i = 0; i < shape[0]; i++) {
            low[i] = frl_space_low(inner)[i % w];
            high[i] = frl_space_high(inner)[i % w];
        }
        if (frl_space_create_box(&out, NULL, 1, shape, low, high) != FRL_OK)
            out = NULL;
    }
    free(low);
    free(high);
    return out;
}

static int make_envs(stacked_env *envs, int32_t n, frl_runtime *rt, const options *o,
                     const frl_config *cfg)
{
    for (int32_t i = 0; i < n; i++) {
        stacked_env *s = &envs[i];
        if (frl_env_create(&s->env, rt, o->env, cfg) != FRL_OK)
            return -1;
        s->width = (int32_t)frl_space_n(frl_env_observation_space(s->env));
        s->stack = o->stack;
        s->frames = calloc((size_t)s->width * (size_t)s->stack, sizeof(float));
        s->obs = calloc((size_t)s->width, sizeof(float));
        if (!s->frames || !s->obs)
            return -1;
    }
    return 0;
}

static void free_envs(stacked_env *envs, int32_t n)
{
    for (int32_t i = 0; envs && i < n; i++) {
        frl_env_destroy(envs[i].env);
        free(envs[i].frames);
        free(envs[i].obs);
    }
    free(envs);
}

static frl_vec_env *make_vec(frl_runtime *rt, stacked_env *envs, int32_t n, const frl_config *cfg)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = stacked_reset;
    cb.step = stacked_step;
    void **users = malloc((size_t)n * sizeof *users);
    frl_space *obs = stacked_space(frl_env_observation_space(envs[0].env), envs[0].stack);
    frl_vec_env *venv = NULL;
    if (!obs)
        fprintf(stderr, "train_stacked: cannot stack: the observation space is not a box\n");
    if (users && obs) {
        for (int32_t i = 0; i < n; i++)
            users[i] = &envs[i];
        if (frl_vec_env_create_callbacks(&venv, rt, &cb, users, n, obs,
                                         frl_env_action_space(envs[0].env), cfg) != FRL_OK) {
            fprintf(stderr, "train_stacked: vec env: %s\n", frl_last_error());
            venv = NULL;
        }
    }
    free(users);
    frl_space_destroy(obs);
    return venv;
}

static int train(frl_runtime *rt, frl_vec_env *venv, const frl_config *cfg, int64_t steps,
                 double start)
{
    frl_trainer *t;
    if (frl_trainer_create_vec(&t, rt, venv, cfg) != FRL_OK) {
        fprintf(stderr, "train_stacked: trainer: %s\n", frl_last_error());
        return 1;
    }
    frl_status st = frl_trainer_train(t, steps);
    const frl_metrics *m = frl_trainer_metrics(t);
    if (st != FRL_OK)
        fprintf(stderr, "train_stacked: train: %s\n", frl_trainer_last_error(t));
    else {
        printf("env_steps_per_second: %.1f\n", m->steps_per_second);
        printf("mean_return: %.4f steps: %lld seconds: %.3f\n", m->mean_return,
               (long long)m->env_steps, now() - start);
    }
    frl_trainer_destroy(t);
    return st == FRL_OK ? 0 : 1;
}

static int run(const options *o, const frl_config *cfg, double start)
{
    frl_runtime *rt = NULL;
    int64_t n = 0;
    frl_config_get_int(cfg, "train.num_envs", &n);
    stacked_env *envs = calloc((size_t)(n > 0 ? n : 1), sizeof *envs);
    frl_vec_env *venv = NULL;
    int rc = 1;
    if (frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK)
        fprintf(stderr, "train_stacked: runtime: %s\n", frl_last_error());
    else if (!envs || make_envs(envs, (int32_t)n, rt, o, cfg))
        fprintf(stderr, "train_stacked: %s: %s\n", o->env, frl_last_error());
    else if ((venv = make_vec(rt, envs, (int32_t)n, cfg)) != NULL)
        rc = train(rt, venv, cfg, o->steps, start);
    frl_vec_env_destroy(venv);
    free_envs(envs, (int32_t)n);
    frl_runtime_destroy(rt);
    return rc;
}

int main(int argc, char **argv)
{
    double start = now();
    options o = {NULL, 4, 500000};
    frl_config *given, *cfg = NULL;
    if (frl_config_create(&given, NULL) != FRL_OK)
        return 1;
    int rc = 2;
    parse(argc, argv, &o, given);
    if (!(cfg = settings(o.env, given)))
        fprintf(stderr, "train_stacked: settings of %s: %s\n", o.env, frl_last_error());
    else
        rc = run(&o, cfg, start);
    frl_config_destroy(cfg);
    frl_config_destroy(given);
    return rc;
}
