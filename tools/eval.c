/* `fastrl eval CHECKPOINT`: run a saved policy for whole episodes (frl_policy_evaluate)
 * and report the returns: mean, std, min, max, and the mean episode length. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/error.h"
#include "env/vec_env.h"
#include "io/container.h"

typedef struct eval_opts {
    const char *path, *env;
    int32_t episodes, deterministic, envs;
    uint64_t seed;
    int64_t max_steps;  /* --max-steps; -1: max_steps_for chooses */
} eval_opts;

/* The run's settings ("trainer.settings"), so that the environment is made as it was
 * trained: env.* settings such as MemoryProbe's cues and delay change its spaces.
 * *cfg stays NULL (the defaults) for a bare policy. */
static int checkpoint_settings(const frl_container *c, const char *path, frl_config **cfg)
{
    char err[FRL_ERRMSG_SIZE], text[1 << 14];
    const frl_section *s = frl_container_find(c, "trainer.settings", FRL_DTYPE_TEXT, -1, err);
    if (!s)
        return 0;
    if (s->count >= sizeof text || frl_config_create(cfg, NULL) != FRL_OK) {
        fprintf(stderr, "fastrl: %s: cannot read its settings\n", path);
        return 1;
    }
    memcpy(text, s->data, s->count);
    text[s->count] = '\0';
    if (frl_config_parse(*cfg, text) != FRL_OK) {
        fprintf(stderr, "fastrl: %s: its settings: %s\n", path,
                frl_config_last_error(*cfg));
        return 1;
    }
    return 0;
}

/* The environment a trainer checkpoint names (its "trainer.env"), or "" for a bare
 * policy file, which frl_policy_save writes without one, and the run's settings. A
 * file the container reader refuses (missing, empty, a directory, corrupted) fails
 * here with the reader's own message: it is not a bare policy. */
int cli_checkpoint_env(const char *path, char *env, size_t size, frl_config **cfg)
{
    frl_container *c;
    char err[FRL_ERRMSG_SIZE];
    env[0] = '\0';
    frl_status st = frl_container_read(&c, path, NULL, err);
    if (st != FRL_OK)
        return cli_fail(path, st);
    const frl_section *s = frl_container_find(c, "trainer.env", FRL_DTYPE_TEXT, -1, err);
    int rc = checkpoint_settings(c, path, cfg);
    if (rc != 0) {
        /* reported by checkpoint_settings */
    } else if (s && s->count < size) {
        memcpy(env, s->data, s->count);
        env[s->count] = '\0';
    } else if (s) {
        fprintf(stderr, "fastrl: %s: its environment name is %llu bytes long (at most "
                        "%zu); name the environment with --env\n",
                path, (unsigned long long)s->count, size - 1);
        rc = 1;
    }
    frl_container_free(c);
    return rc;
}

/* Option a with its value v: 0, 2 after saying why v is refused, -1 when a is not one. */
static int parse_eval_value(const char *a, const char *v, eval_opts *o)
{
    int64_t n = 0;
    int rc = -1;
    if (!strcmp(a, "--env")) {
        o->env = v; /* '' read as no name: "a bare policy; name its environment" */
        rc = cli_path_value("eval", a, "ENV", v);
    } else if (!strcmp(a, "--episodes") &&
               (rc = cli_parse_int("eval", a, v, 1, INT32_MAX, &n)) == 0) {
        o->episodes = (int32_t)n;
    } else if (!strcmp(a, "--seed") && (rc = cli_parse_int("eval", a, v, 0, INT64_MAX, &n)) == 0) {
        o->seed = (uint64_t)n;
    } else if (!strcmp(a, "--max-steps")) {
        rc = cli_parse_int("eval", a, v, 0, INT64_MAX, &o->max_steps);
    }
    return rc;
}

static void eval_usage(FILE *f)
{
    fprintf(f, "usage: fastrl eval CHECKPOINT [--episodes N] [--deterministic] "
               "[--env ENV] [--seed S] [--max-steps M]\n");
}

/* 0 to go on, -1 after --help (the usage on stdout), else the exit status of a usage
 * error. */
static int parse_eval_args(int argc, char **argv, eval_opts *o)
{
    if (cli_asks_help(argc, argv)) {
        eval_usage(stdout);
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = i + 1 < argc ? parse_eval_value(a, argv[i + 1], o) : -1;
        if (rc == 0) {
            i++;
        } else if (rc > 0) {
            return rc;
        } else if (!strcmp(a, "--deterministic")) {
            o->deterministic = 1;
        } else if (a[0] != '-' && !o->path) {
            o->path = a;
        } else {
            fprintf(stderr, "fastrl eval: unknown or incomplete option '%s'\n", a);
            return 2;
        }
    }
    if (!o->path) {
        eval_usage(stderr);
        return 2;
    }
    return 0;
}

typedef struct eval_stats {
    double mean, std, min, max, mean_length;
} eval_stats;

static eval_stats stats_of(const double *ret, const int32_t *len, int32_t n)
{
    eval_stats s = {0, 0, ret[0], ret[0], 0};
    double sum = 0, dev = 0, steps = 0;
    for (int32_t i = 0; i < n; i++) {
        sum += ret[i];
        steps += len[i];
        s.min = ret[i] < s.min ? ret[i] : s.min;
        s.max = ret[i] > s.max ? ret[i] : s.max;
    }
    s.mean = sum / n;
    for (int32_t i = 0; i < n; i++)
        dev += (ret[i] - s.mean) * (ret[i] - s.mean);
    s.std = sqrt(dev / n); /* of these episodes, as numpy's std() */
    s.mean_length = steps / n;
    return s;
}

/* frl_eval_args.max_steps unless --max-steps gives it. With an episode time limit every
 * episode ends, so no cap is needed however many episodes are asked for (the library's
 * default, 10,000,000 env steps, is only 20,000 episodes of CartPole's 500); without one
 * the default stops a policy that never ends an episode. */
static int64_t max_steps_for(const frl_vec_env *v, const eval_opts *o)
{
    frl_eval_args a;
    frl_eval_args_init(&a);
    if (o->max_steps >= 0)
        return o->max_steps;
    return v->b.max_episode_steps > 0 ? 0 : a.max_steps;
}

/* The evaluation ran into max_steps (the step it refused would have passed it): said in
 * the CLI's terms, with the episodes that had ended (their lengths, the rest still 0). */
static int cap_reached(const frl_vec_env *v, const frl_eval_args *a, const char *what)
{
    int32_t ended = 0;
    for (int32_t i = 0; i < a->episodes; i++)
        ended += a->lengths[i] > 0;
    fprintf(stderr, "fastrl %s: %d of %d episodes ended within %lld env steps (--max-steps, "
                    "all envs counted)%s; raise --max-steps, or give 0 for no limit\n", what,
            (int)ended, (int)a->episodes, (long long)a->max_steps,
            v->b.max_episode_steps > 0 ? "" : ": the env has no episode time limit here");
    return 1;
}

/* Whole episodes through frl_policy_evaluate: a fixed quota per env (short episodes
 * are not favoured), box actions clipped, and spaces that differ from the policy's an
 * error naming both. */
static int run_episodes(frl_policy *p, frl_vec_env *v, const eval_opts *o, const char *what)
{
    double *ret = calloc((size_t)o->episodes, sizeof *ret);
    int32_t *len = calloc((size_t)o->episodes, sizeof *len);
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = o->episodes;
    a.deterministic = o->deterministic;
    a.seed = o->seed;
    a.returns = ret;
    a.lengths = len;
    a.max_steps = max_steps_for(v, o);
    frl_status st;
    int rc = 0;
    if (!ret || !len) {
        fprintf(stderr, "fastrl eval: out of memory for %d episodes\n", (int)o->episodes);
        rc = 1;
    } else if ((st = frl_policy_evaluate(p, v, &a, NULL)) != FRL_OK) {
        int capped = st == FRL_ERR_RANGE && a.max_steps > 0 &&
                     frl_vec_env_total_steps(v) + frl_vec_env_num_envs(v) > a.max_steps;
        rc = capped ? cap_reached(v, &a, what) : cli_fail(what, st);
    } else {
        eval_stats s = stats_of(ret, len, o->episodes);
        printf("episodes: %d\nmean_return: %.4f\nstd_return: %.4f\nmin_return: %.4f\n"
               "max_return: %.4f\nmean_length: %.2f\n",
               (int)o->episodes, s.mean, s.std, s.min, s.max, s.mean_length);
    }
    free(ret);
    free(len);
    return rc;
}

static int evaluate(frl_runtime *rt, const eval_opts *o, const char *env,
                    const frl_config *cfg)
{
    frl_policy *p;
    frl_vec_env *v;
    frl_status st = frl_policy_load(&p, rt, o->path);
    if (st != FRL_OK)
        return cli_fail(o->path, st);
    /* Only a file that loads as a policy and names no environment is a bare policy. */
    const char *name = o->env ? o->env : env;
    if (!name[0]) {
        frl_policy_destroy(p);
        fprintf(stderr, "fastrl eval: %s is a bare policy; name its environment with --env\n",
                o->path);
        return 2;
    }
    int32_t envs = o->episodes < o->envs ? o->episodes : o->envs;
    if ((st = frl_vec_env_create(&v, rt, name, envs, cfg)) != FRL_OK) {
        frl_policy_destroy(p);
        return cli_fail(name, st);
    }
    char what[512];
    snprintf(what, sizeof what, "eval %s on %s", o->path, name);
    int rc = run_episodes(p, v, o, what);
    frl_vec_env_destroy(v);
    frl_policy_destroy(p);
    return rc;
}

int cli_eval(int argc, char **argv)
{
    eval_opts o = {NULL, NULL, 100, 0, 16, 12345, -1};
    int rc = parse_eval_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    frl_runtime *rt;
    frl_status st = frl_runtime_create(&rt, NULL, NULL, NULL);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    char env[64];
    frl_config *cfg = NULL;
    rc = cli_checkpoint_env(o.path, env, sizeof env, &cfg);
    if (rc == 0)
        rc = evaluate(rt, &o, env, cfg);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    return rc;
}
