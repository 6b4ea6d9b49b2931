/* `fastrl eval CHECKPOINT`: run a saved policy for whole episodes and report the mean. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io/container.h"

typedef struct eval_opts {
    const char *path, *env;
    int32_t episodes, deterministic, envs;
    uint64_t seed;
} eval_opts;

/* The environment a trainer checkpoint was trained on ("" for a bare policy file). */
static void checkpoint_env(const char *path, char *env, size_t size)
{
    frl_container *c;
    char err[256];
    env[0] = '\0';
    if (frl_container_read(&c, path, NULL, err) != FRL_OK)
        return;
    const frl_section *s = frl_container_find(c, "trainer.env", FRL_DTYPE_TEXT, -1, err);
    if (s && s->count < size) {
        memcpy(env, s->data, s->count);
        env[s->count] = '\0';
    }
    frl_container_free(c);
}

static int parse_eval_args(int argc, char **argv, eval_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--deterministic")) {
            o->deterministic = 1;
        } else if (!strcmp(a, "--episodes") && v) {
            o->episodes = atoi(argv[++i]);
        } else if (!strcmp(a, "--env") && v) {
            o->env = argv[++i];
        } else if (!strcmp(a, "--seed") && v) {
            o->seed = strtoull(argv[++i], NULL, 0);
        } else if (a[0] != '-' && !o->path) {
            o->path = a;
        } else {
            fprintf(stderr, "fastrl eval: unknown or incomplete option '%s'\n", a);
            return 2;
        }
    }
    if (!o->path || o->episodes < 1) {
        fprintf(stderr, "usage: fastrl eval CHECKPOINT [--episodes N] [--deterministic] "
                        "[--env ENV] [--seed S]\n");
        return 2;
    }
    return 0;
}

/* Step until `episodes` episodes have ended; each env counts only episodes it started
 * in order, so many envs do not favour short episodes. */
static int run_episodes(frl_policy *p, frl_vec_env *v, const eval_opts *o, double *mean)
{
    int32_t n = frl_vec_env_num_envs(v), quota = (o->episodes + n - 1) / n, done = 0;
    int32_t *count = calloc((size_t)n, sizeof *count);
    double sum = 0;
    frl_act_args a;
    frl_act_args_init(&a);
    a.observation_width = frl_space_width(frl_vec_env_observation_space(v));
    a.action_width = frl_space_width(frl_vec_env_action_space(v));
    a.batch = n;
    a.observations = frl_vec_env_observations(v);
    a.actions = frl_vec_env_actions(v);
    a.deterministic = o->deterministic;
    frl_status st = count ? frl_vec_env_reset(v, o->seed) : FRL_ERR_NOMEM;
    for (uint64_t step = 0; st == FRL_OK && done < o->episodes; step++) {
        a.counter = step;
        if ((st = frl_policy_act(p, &a)) == FRL_OK)
            st = frl_vec_env_step(v);
        for (int32_t i = 0; st == FRL_OK && i < n; i++) {
            if (!(frl_vec_env_terminated(v)[i] | frl_vec_env_truncated(v)[i]) || count[i] >= quota ||
                done >= o->episodes)
                continue;
            count[i]++;
            done++;
            sum += frl_vec_env_episode_returns(v)[i];
        }
    }
    free(count);
    *mean = done ? sum / done : NAN;
    return st == FRL_OK ? 0 : cli_fail("eval", st);
}

static int evaluate(frl_runtime *rt, const eval_opts *o)
{
    char env[64];
    checkpoint_env(o->path, env, sizeof env);
    const char *name = o->env ? o->env : env;
    if (!name[0]) {
        fprintf(stderr, "fastrl eval: %s is a bare policy; name its environment with --env\n",
                o->path);
        return 2;
    }
    frl_policy *p;
    frl_vec_env *v;
    frl_status st = frl_policy_load(&p, rt, o->path);
    if (st != FRL_OK)
        return cli_fail(o->path, st);
    int32_t envs = o->episodes < 16 ? o->episodes : 16;
    if ((st = frl_vec_env_create(&v, rt, name, envs, NULL)) != FRL_OK) {
        frl_policy_destroy(p);
        return cli_fail(name, st);
    }
    double mean;
    int rc = run_episodes(p, v, o, &mean);
    if (rc == 0)
        printf("episodes: %d\nmean_return: %.4f\n", (int)o->episodes, mean);
    frl_vec_env_destroy(v);
    frl_policy_destroy(p);
    return rc;
}

int cli_eval(int argc, char **argv)
{
    eval_opts o = {NULL, NULL, 100, 0, 16, 12345};
    int rc = parse_eval_args(argc, argv, &o);
    if (rc != 0)
        return rc;
    frl_runtime *rt;
    frl_status st = frl_runtime_create(&rt, NULL, NULL, NULL);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    rc = evaluate(rt, &o);
    frl_runtime_destroy(rt);
    return rc;
}
