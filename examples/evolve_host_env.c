/* evolve_host_env: OpenAI-ES, driven by the host through ask and tell, on a world the
 * host writes itself.
 *
 * The world ("thrust to the target") is a point on a line, x in [-1, 1], velocity v; the
 * action is one thrust in [-1, 1]; each step v += 0.02 thrust, x += v, and the reward is
 * -|x - target| (the target is 0.5); an episode lasts 100 steps (the library's time
 * limit). The host gives it to libfastrl through per-env callbacks and then:
 *   1. makes a policy (the architecture: a 16x16 tanh MLP) and a population of P
 *      members of it;
 *   2. makes an ES optimiser (train.algo=es) starting from the policy's parameters;
 *   3. each generation asks for P parameter vectors straight into the population's
 *      block, evaluates every member over the 32 envs (frl_population_evaluate: envs
 *      shared by the members, inference only for running episodes), and tells the mean
 *      returns back;
 *   4. copies the kept parameters into the policy and evaluates it greedily.
 * Exits non-zero if any call fails or the evolved policy is not better than the start.
 *
 * Build: cc -std=c11 evolve_host_env.c $(pkg-config --cflags --libs fastrl) -lm */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastrl.h"

enum { NUM_ENVS = 32, MEMBERS = 48, DEFAULT_GENERATIONS = 60 };

typedef struct world {
    float x, v;
} world;

static const float TARGET = 0.5f;

static int world_reset(void *user, uint64_t seed, float *obs)
{
    world *w = user;
    w->x = (float)(seed % 1000) / 1000.0f - 0.5f; /* a start the seed decides */
    w->v = 0;
    obs[0] = w->x;
    obs[1] = w->v * 10;
    return 0;
}

static int world_step(void *user, const void *action, float *obs, float *reward,
                      uint8_t *terminated, uint8_t *truncated)
{
    world *w = user;
    float a = *(const float *)action;
    w->v += 0.02f * a;
    w->x += w->v;
    w->x = w->x < -1 ? -1 : (w->x > 1 ? 1 : w->x);
    obs[0] = w->x;
    obs[1] = w->v * 10;
    *reward = -fabsf(w->x - TARGET);
    *terminated = 0;
    *truncated = 0;
    return 0;
}

static int check(frl_status st, const char *what)
{
    if (st != FRL_OK)
        fprintf(stderr, "evolve_host_env: %s: %s\n", what, frl_last_error());
    return st != FRL_OK;
}

static frl_status make_vec(frl_runtime *rt, world *worlds, frl_vec_env **out)
{
    int64_t shape[1] = {2}, ashape[1] = {1};
    float lo[2] = {-1, -10}, hi[2] = {1, 10}, alo[1] = {-1}, ahi[1] = {1};
    frl_space *os = NULL, *as = NULL;
    frl_status st = frl_space_create_box(&os, NULL, 1, shape, lo, hi);
    if (st == FRL_OK)
        st = frl_space_create_box(&as, NULL, 1, ashape, alo, ahi);
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = world_reset;
    cb.step = world_step;
    void *users[NUM_ENVS];
    for (int i = 0; i < NUM_ENVS; i++)
        users[i] = &worlds[i];
    frl_config *cfg = NULL;
    if (st == FRL_OK && (st = frl_config_create(&cfg, NULL)) == FRL_OK)
        st = frl_config_set_int(cfg, "env.max_episode_steps", 100);
    if (st == FRL_OK)
        st = frl_vec_env_create_callbacks(out, rt, &cb, users, NUM_ENVS, os, as, cfg);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    return st;
}

/* The greedy mean return of policy over 32 episodes. */
static frl_status greedy(frl_policy *p, frl_vec_env *v, double *mean)
{
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = 32;
    a.seed = 12345;
    return frl_policy_evaluate(p, v, &a, mean);
}

typedef struct run {
    frl_runtime *rt;
    frl_vec_env *venv;
    frl_policy *policy;
    frl_population *pop;
    frl_evo *es;
    double fitness[MEMBERS];
} run;

static int setup(run *r)
{
    static world worlds[NUM_ENVS];
    frl_config *cfg = NULL;
    int bad = check(frl_runtime_create(&r->rt, NULL, NULL, NULL), "runtime") ||
              check(make_vec(r->rt, worlds, &r->venv), "vec env") ||
              check(frl_config_create(&cfg, NULL), "config") ||
              check(frl_config_parse(cfg, "policy.hidden=16,16 train.algo=es es.population=48 "
                                          "es.sigma=0.1 es.lr=0.05 es.noise_floats=1000000"),
                    "settings") ||
              check(frl_policy_create(&r->policy, r->rt, cfg,
                                      frl_vec_env_observation_space(r->venv),
                                      frl_vec_env_action_space(r->venv)), "policy") ||
              check(frl_population_create(&r->pop, r->policy, MEMBERS), "population");
    /* ES over the acting parameters (a prefix of the policy's: trunk and actor). */
    float *initial = bad ? NULL : malloc(sizeof(float) * (size_t)frl_population_member_size(r->pop));
    if (!bad && !initial) {
        fprintf(stderr, "evolve_host_env: out of memory\n");
        bad = 1;
    }
    if (!bad) {
        memcpy(initial, frl_population_parameters(r->pop),
               sizeof(float) * (size_t)frl_population_member_size(r->pop));
        bad = check(frl_evo_create(&r->es, r->rt, cfg, frl_population_member_size(r->pop), initial),
                    "ES");
    }
    free(initial);
    frl_config_destroy(cfg);
    return bad;
}

/* One generation: ask into the population, evaluate every member, tell. */
static int generation(run *r, int g)
{
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    a.episodes = 2;
    a.seed = (uint64_t)g;
    a.returns = r->fitness;
    int64_t n = frl_population_member_size(r->pop);
    return check(frl_evo_ask(r->es, frl_population_parameters(r->pop), MEMBERS * n), "ask") ||
           check(frl_population_evaluate(r->pop, r->venv, &a, NULL), "evaluate") ||
           check(frl_evo_tell(r->es, r->fitness, MEMBERS), "tell");
}

static void teardown(run *r)
{
    frl_evo_destroy(r->es);
    frl_population_destroy(r->pop);
    frl_policy_destroy(r->policy);
    frl_vec_env_destroy(r->venv);
    frl_runtime_destroy(r->rt);
}

int main(int argc, char **argv)
{
    int generations = DEFAULT_GENERATIONS;
    char *end = NULL;
    if (argc == 3 && strcmp(argv[1], "--generations") == 0)
        generations = (int)strtol(argv[2], &end, 10);
    /* Read whole: "abc" was 0 generations, then "not better than the start". */
    if ((argc != 1 && !end) || (end && *end) || generations < 1) {
        fprintf(stderr, "usage: evolve_host_env [--generations G (G >= 1)]\n");
        return 2;
    }
    run r;
    memset(&r, 0, sizeof r);
    double before = 0, after = 0;
    int bad = setup(&r) || check(greedy(r.policy, r.venv, &before), "evaluate the start");
    for (int g = 0; !bad && g < generations; g++)
        bad = generation(&r, g);
    /* The kept parameters (ES's centre) into the policy, which now acts as it. */
    int64_t n = frl_population_member_size(r.pop);
    float *kept = bad ? NULL : malloc(sizeof(float) * (size_t)n);
    if (!bad && !kept) {
        fprintf(stderr, "evolve_host_env: out of memory\n");
        bad = 1;
    }
    if (!bad) {
        bad = check(frl_evo_best(r.es, kept, n, NULL), "best");
        if (!bad)
            memcpy(frl_population_parameters(r.pop), kept, sizeof(float) * (size_t)n);
        bad = bad || check(frl_population_copy_to_policy(r.pop, 0, r.policy), "copy") ||
              check(greedy(r.policy, r.venv, &after), "evaluate the result");
    }
    free(kept);
    if (!bad)
        printf("evolve_host_env: %d generations of %d members: greedy return %.2f -> %.2f\n",
               generations, MEMBERS, before, after);
    teardown(&r);
    if (!bad && !(after > before + 5.0)) {
        fprintf(stderr, "evolve_host_env: the evolved policy is not better than the start\n");
        bad = 1;
    }
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
