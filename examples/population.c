/* population: four PPO learners on one runtime, trained together by the asynchronous
 * sampler (frl_trainer_train_many): each member has its own CartPole envs, policy,
 * learner and seed, and a learning rate of its own; the runtime's threads step, infer
 * and learn for all of them at once. This is the base of population-based training and
 * of self-play: after a round, a host can copy the best member's weights (through
 * policy files) over the worst and change its settings.
 *
 * Trains 4 members for 150K steps each (--steps N to change it), prints each member's
 * mean return, policy lag and learning rate, and exits non-zero if a call fails or, with
 * 100K steps or more, no member learns (mean return of the best member under 150;
 * random play averages about 22).
 *
 * Build: cc -std=c11 population.c $(pkg-config --cflags --libs fastrl) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"

enum { MEMBERS = 4 };

static int fail(const char *what)
{
    fprintf(stderr, "population: %s: %s\n", what, frl_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    static const char *const lr[MEMBERS] = {"1e-4", "5e-4", "2.5e-3", "1e-2"};
    long long steps = 150000;
    char *end = NULL;
    if (argc == 3 && strcmp(argv[1], "--steps") == 0)
        steps = strtoll(argv[2], &end, 10);
    /* Read whole: "abc" was 0 steps, "too few to check", and exit 0. */
    if ((argc != 1 && !end) || (end && *end) || steps < 1) {
        fprintf(stderr, "usage: population [--steps N (N >= 1)]\n");
        return 2;
    }
    frl_config *cfg;
    frl_runtime *rt;
    if (frl_config_create(&cfg, NULL) != FRL_OK ||
        frl_config_parse(cfg, "runtime.threads=2 runtime.seed=11") != FRL_OK ||
        frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK)
        return fail("runtime");
    frl_trainer *member[MEMBERS];
    for (int i = 0; i < MEMBERS; i++) {
        char text[160];
        snprintf(text, sizeof text, "sampler.mode=async train.seed_offset=%d train.lr=%s", i, lr[i]);
        if (frl_config_parse(cfg, text) != FRL_OK ||
            frl_trainer_create(&member[i], rt, "CartPole-v1", cfg) != FRL_OK)
            return fail("member");
    }
    if (frl_trainer_train_many(member, MEMBERS, steps) != FRL_OK)
        return fail("train");
    double best = -1;
    for (int i = 0; i < MEMBERS; i++) {
        const frl_metrics *m = frl_trainer_metrics(member[i]);
        printf("member %d  lr %-7s  %lld steps  mean return %6.1f  lag %.2f (max %.0f)  %.0f steps/s\n",
               i, lr[i], (long long)m->env_steps, m->mean_return, m->policy_lag_mean,
               m->policy_lag_max, m->steps_per_second);
        best = m->mean_return > best ? m->mean_return : best;
        frl_trainer_destroy(member[i]);
    }
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    if (steps < 100000) { /* the sanitizer builds' short run exercises the calls only */
        printf("(%lld steps are too few to expect learning: not checked)\n", steps);
        return 0;
    }
    if (best < 150) {
        fprintf(stderr, "population: no member learned (best mean return %.1f)\n", best);
        return 1;
    }
    return 0;
}
