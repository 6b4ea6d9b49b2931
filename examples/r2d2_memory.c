/* r2d2_memory: R2D2 in SEED RL's layout on a memory task, through the public C API.
 *
 * MemoryProbe-v0 shows one of K cues at an episode's first step, then D blank steps,
 * then asks for the cue: the answer needs memory. Two actors (the async sampler's env
 * groups, epsilons 0.4 and 0.4^8) step their envs while the runtime's threads run the
 * LSTM Q-network over every waiting env at once (central batched inference); the
 * learner replays prioritised sequences that start from the recurrent state acting had.
 * The run is saved half way, loaded back and continued (async checkpoints drop only
 * the rollouts in flight); then 200 greedy episodes on a fresh vec env
 * (frl_policy_evaluate carries each env's recurrent state) say how often the answer
 * is right.
 *
 * Trains 60K steps (--steps N to change it); exits non-zero if a call fails or, with
 * 40K steps or more, the greedy answers are right less than 90% of the time (chance is
 * 1/K = 33%).
 *
 * Build: cc -std=c11 r2d2_memory.c $(pkg-config --cflags --libs fastrl) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"

static const char settings[] =
    "env.memory_delay=8 env.memory_cues=3 train.algo=r2d2 sampler.mode=async "
    "sampler.groups=2 train.num_envs=8 train.seq_length=20 train.seq_overlap=10 "
    "train.burn_in=5 train.batch_size=32 train.lr=2e-3 train.adam_eps=1e-5 "
    "train.gamma=0.9 train.n_step=3 train.replay_ratio=8 train.target_period=100 "
    "train.learning_starts=2000 train.buffer_size=50000 policy.core_size=32 "
    "policy.hidden=32";

static int fail(const char *what)
{
    fprintf(stderr, "r2d2_memory: %s: %s\n", what, frl_last_error());
    return 1;
}

/* Greedy episodes on venv: the share of right answers (an episode's return is 1 for a
 * right answer, 0 otherwise). */
static int greedy_share(frl_policy *p, frl_vec_env *venv, int episodes, double *share)
{
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = episodes;
    return frl_policy_evaluate(p, venv, &a, share) == FRL_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
    long long steps = 60000;
    char *end = NULL;
    if (argc == 3 && strcmp(argv[1], "--steps") == 0)
        steps = strtoll(argv[2], &end, 10);
    /* Read whole: "abc" was 0 steps, "too few to check", and exit 0. */
    if ((argc != 1 && !end) || (end && *end) || steps < 1) {
        fprintf(stderr, "usage: r2d2_memory [--steps N (N >= 1)]\n");
        return 2;
    }
    char path[] = "r2d2_memory_checkpoint.frl";
    frl_config *cfg;
    frl_runtime *rt;
    frl_trainer *t;
    if (frl_config_create(&cfg, NULL) != FRL_OK ||
        frl_config_parse(cfg, "runtime.threads=2 runtime.seed=5") != FRL_OK ||
        frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK)
        return fail("runtime");
    if (frl_config_parse(cfg, settings) != FRL_OK ||
        frl_trainer_create(&t, rt, "MemoryProbe-v0", cfg) != FRL_OK)
        return fail("trainer");
    if (frl_trainer_train(t, steps / 2) != FRL_OK || frl_trainer_save(t, path) != FRL_OK)
        return fail("first half");
    frl_trainer_destroy(t);
    if (frl_trainer_load(&t, rt, path, NULL) != FRL_OK)
        return fail("load");
    remove(path);
    if (frl_trainer_train(t, steps) != FRL_OK)
        return fail("second half");
    const frl_metrics *m = frl_trainer_metrics(t);
    printf("%lld steps: training share right %.3f, mean Q %.3f, |TD| %.4f, priority spread "
           "%.2f, policy lag %.2f (max %.0f), %.0f steps/s\n", (long long)m->env_steps,
           m->mean_return, m->q_mean, m->td_error, m->priority_spread, m->policy_lag_mean,
           m->policy_lag_max, m->steps_per_second);
    frl_vec_env *eval_env;
    double share = 0;
    if (frl_vec_env_create(&eval_env, rt, "MemoryProbe-v0", 4, cfg) != FRL_OK ||
        greedy_share(frl_trainer_policy(t), eval_env, 200, &share) != 0)
        return fail("evaluate");
    printf("greedy: %.1f%% of 200 answers right (chance %.1f%%)\n", 100 * share, 100.0 / 3);
    frl_vec_env_destroy(eval_env);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    if (steps >= 40000 && share < 0.9) {
        fprintf(stderr, "r2d2_memory: %.1f%% right after %lld steps, want 90%%\n", 100 * share,
                steps);
        return 1;
    }
    return 0;
}
