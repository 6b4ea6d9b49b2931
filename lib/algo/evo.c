/* Neuroevolution as learners (train.algo=es|ga): the trainer's population is the
 * optimiser's generation. The population sampler evaluates the members the learner
 * asked for; learn tells their fitnesses, asks for the next generation into the
 * population, and writes the parameters to keep (ES's centre, GA's best member) into
 * the trainer's policy, which is then an ordinary policy for eval, saving and exports.
 * The ring the trainer keeps for every learner is not read. */
#include <math.h>
#include <string.h>

#include "algo/learner.h"
#include "evo/evo.h"

typedef struct evo_learner {
    frl_evo *evo;
    frl_policy *policy;
    frl_population *pop;
    int64_t meta[5];          /* a checkpoint's evo.meta section */
} evo_learner;

static int64_t evo_rollout(const frl_config *cfg)
{
    (void)cfg;
    return 1; /* the ring is not used: its smallest shape */
}

static void evo_storage(const frl_config *cfg, frl_storage_need *need)
{
    need->kind = FRL_STORAGE_POPULATION;
    need->members = (int32_t)frl_cfg_int(cfg, frl_cfg_choice(cfg, FRL_KEY_TRAIN_ALGO) ==
                                                      FRL_TRAIN_ALGO_ES
                                                  ? FRL_KEY_ES_POPULATION
                                                  : FRL_KEY_GA_POPULATION);
}

static void evo_destroy(frl_learner *l)
{
    evo_learner *v = l->impl;
    if (!v)
        return;
    frl_evo_destroy(v->evo);
    frl_free(&l->rt->alloc, v);
    l->impl = NULL;
}

/* The next generation into the population, the parameters to keep into the policy. */
static frl_status ask_next(evo_learner *v, char *err)
{
    frl_population *pop = v->pop;
    frl_status st = frl_evo_ask(v->evo, pop->params, (int64_t)pop->members * pop->n);
    if (st == FRL_OK)
        st = frl_evo_best(v->evo, v->policy->params, pop->n, NULL);
    if (st != FRL_OK)
        return frl_fail(err, st, "%s", frl_last_error());
    v->policy->version++;
    return FRL_OK;
}

static frl_status evo_create(frl_learner *l, const frl_learner_ctx *c, char *err)
{
    if (c->policy->towers)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "train.algo=es|ga: recurrent policies "
                        "(policy.core) are not evolved yet; use policy.core=none");
    if (c->policy->state_w)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "train.algo=es|ga: frame stacks "
                        "(policy.frame_stack > 1) are not evolved yet; use "
                        "policy.frame_stack=1");
    evo_learner *v = frl_alloc(&l->rt->alloc, sizeof *v, 64);
    if (!v)
        return frl_fail(err, FRL_ERR_NOMEM, "out of memory");
    memset(v, 0, sizeof *v);
    l->impl = v;
    v->policy = c->policy;
    v->pop = c->store->population;
    frl_status st = frl_evo_create(&v->evo, l->rt, c->cfg, v->pop->n, c->policy->params);
    if (st != FRL_OK)
        return frl_fail(err, st, "%s", frl_last_error());
    frl_learner_add_net(l, "policy", FRL_NET_ACTOR_CRITIC, -1, c->policy->params,
                        (int64_t)c->policy->num_params);
    return ask_next(v, err);
}

/* ES keeps its centre, whose fitness is the generation's mean; GA its best member. */
static double evo_kept_fitness(const frl_learner *l)
{
    const evo_learner *v = l->impl;
    return v->evo->algo == FRL_TRAIN_ALGO_ES ? v->evo->last_fitness[0] : v->evo->ga.best_fitness;
}

static frl_status evo_learn(frl_learner *l, const frl_batch *b, frl_learn_stats *out, char *err)
{
    (void)b;
    evo_learner *v = l->impl;
    frl_status st = frl_evo_tell(v->evo, v->pop->fitness, v->pop->members);
    if (st != FRL_OK)
        return frl_fail(err, st, "%s", frl_last_error());
    if ((st = ask_next(v, err)) != FRL_OK)
        return st;
    out->population_mean = v->evo->last_fitness[0];
    out->population_best = v->evo->last_fitness[1];
    out->kept_fitness = evo_kept_fitness(l);
    out->epochs_done = 1;
    return FRL_OK;
}

static void evo_save(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps)
{
    evo_learner *v = l->impl;
    *steps = frl_evo_generation(v->evo);
    frl_evo_sections(v->evo, s, n, v->meta);
}

static frl_status evo_load(frl_learner *l, const frl_container *c, int64_t steps, char *err)
{
    (void)steps;
    evo_learner *v = l->impl;
    frl_status st = frl_evo_restore(v->evo, c, 1, err);
    return st == FRL_OK ? ask_next(v, err) : st;
}

/* Evaluation wants many envs (members' episodes run side by side) and the mode of the
 * policy (OpenAI-ES and Deep GA evaluate deterministic policies). */
#define EVO_SETTINGS "train.num_envs=64 train.reward_norm=false"

/* ES and GA differ only in the optimiser frl_evo makes from train.algo. */
#define EVO_LEARNER(NAME)                                                                  \
    {                                                                                      \
        .name = NAME, .settings = EVO_SETTINGS, .rollout = evo_rollout,                     \
        .storage = evo_storage, .create = evo_create, .destroy = evo_destroy,              \
        .learn = evo_learn, .save = evo_save, .load = evo_load,                             \
        .kept_fitness = evo_kept_fitness,                                                   \
    }

const frl_learner_ops frl_algo_es = EVO_LEARNER("es");
const frl_learner_ops frl_algo_ga = EVO_LEARNER("ga");
