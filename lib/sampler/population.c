/* The population sampler: what a neuroevolution learner (train.algo=es|ga) trains
 * with. Each update evaluates every member of the trainer's population over the vec env
 * (frl_population_evaluate: envs shared by the members, inference on compacted live
 * rows), hands their fitnesses to the learner, and counts the episodes' steps.
 * Generation g's episodes start from the vec env reset with the seed (trainer seed,
 * g), so a resumed run evaluates exactly what it would have. */
#include "core/rng.h"
#include "rl/population.h"
#include "sampler/sampler.h"

typedef struct pop_sampler {
    frl_sampler base;
    int64_t total_steps; /* the train call's budget */
} pop_sampler;

/* A generation's evaluation gives up past this many env steps, or the train call's whole
 * budget where that is more: envs whose episodes never end must not hang training. */
static const int64_t MIN_EVAL_STEPS = 10000000;

/* One vec env, or two where sampler.groups is set to 2 or more: then one steps while the
 * other's actions are computed (frl_population_evaluate_groups). Not by default: with
 * cheap envs (the classic tasks) inference dominates, and acting over both threads is
 * faster than a pipeline that gives it one (bench/README.md). */
static int32_t pop_groups(const frl_config *cfg)
{
    return frl_cfg_is_set(cfg, FRL_KEY_SAMPLER_GROUPS) &&
                   frl_cfg_int(cfg, FRL_KEY_SAMPLER_GROUPS) >= 2
               ? 2
               : 1;
}

static int32_t one_slot(const frl_config *cfg, int32_t groups)
{
    (void)cfg;
    (void)groups;
    return 1;
}

static frl_status pop_create(frl_sampler **out, frl_sampler_host *h)
{
    if (!h->population)
        return frl_fail(h->err, FRL_ERR_INTERNAL, "the population sampler needs a population");
    pop_sampler *s = frl_alloc(&h->rt->alloc, sizeof *s, FRL_CACHE_LINE);
    *out = (frl_sampler *)s;
    if (!s)
        return frl_fail(h->err, FRL_ERR_NOMEM, "population sampler: out of memory");
    s->base.ops = &frl_sampler_population;
    s->base.h = h;
    /* every generation's evaluation then runs in this block: train allocates nothing */
    frl_status st = frl_population_reserve_eval(h->population, h->venvs, h->groups,
                                                h->policy->obs_norm);
    return st == FRL_OK ? st : frl_fail_msg(h->err, st, h->population->err);
}

static void pop_destroy(frl_sampler *s)
{
    if (s)
        frl_free(&s->h->rt->alloc, s);
}

/* Each member's fitness into the episode window, as if each were an episode: the
 * trainer's mean return is then the population's (train.target_return reads the kept
 * policy's fitness instead, frl_trainer_target_reached). */
static void record(frl_sampler_host *h, const frl_population *pop, int32_t episodes)
{
    frl_rollout_book *k = h->book;
    for (int32_t m = 0; m < pop->members; m++) {
        k->recent_return[k->pr.episodes % FRL_RECENT_EPISODES] = (float)pop->fitness[m];
        k->recent_length[k->pr.episodes % FRL_RECENT_EPISODES] =
            (int32_t)(pop->steps[m] / episodes);
        k->pr.episodes++;
    }
}

static frl_status evaluate(pop_sampler *s)
{
    frl_sampler_host *h = s->base.h;
    frl_population *pop = h->population;
    int32_t es = frl_cfg_choice(h->cfg, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_ES;
    frl_population_eval_args a;
    frl_population_eval_args_init(&a);
    a.episodes = (int32_t)frl_cfg_int(h->cfg, es ? FRL_KEY_ES_EPISODES : FRL_KEY_GA_EPISODES);
    frl_rng r = frl_rng_stream(h->seed, 0x706f70ULL); /* "pop" */
    r.counter = (uint64_t)h->book->pr.updates;
    a.seed = frl_rng_next(&r);
    a.returns = pop->fitness;
    a.steps = pop->steps;
    /* the statistics of this generation's rollouts act from the next one on */
    a.update_obs_norm = h->policy->obs_norm;
    a.max_steps = s->total_steps > MIN_EVAL_STEPS ? s->total_steps : MIN_EVAL_STEPS;
    int64_t steps = 0;
    double t0 = frl_now();
    frl_status st = frl_population_evaluate_stoppable(pop, h->venvs, h->groups, &a, &steps,
                                                      h->stop, "frl_population_evaluate");
    if (st == FRL_ERR_INTERRUPTED)
        return frl_fail(h->err, st, "training stopped by request at %lld steps, during "
                        "generation %lld's evaluation (it runs again when training continues)",
                        (long long)h->book->pr.env_steps, (long long)h->book->pr.updates);
    if (st != FRL_OK)
        return frl_fail_msg(h->err, st, pop->err);
    h->metrics->time_env = frl_now() - t0;
    h->metrics->time_inference = 0;
    h->book->pr.env_steps += steps;
    h->book->pr.rollout_steps++;
    record(h, pop, a.episodes);
    return FRL_OK;
}

static frl_status generation(void *arg)
{
    pop_sampler *s = arg;
    frl_status st = evaluate(s);
    return st == FRL_OK ? s->base.h->learn(s->base.h->owner, -1, 0) : st;
}

static frl_status pop_train(frl_sampler *base, int64_t total_steps)
{
    pop_sampler *s = (pop_sampler *)base;
    base->h->book->pr.started = 1;
    s->total_steps = total_steps;
    return frl_sampler_loop(base->h, total_steps, generation, s);
}

const frl_sampler_ops frl_sampler_population = {
    .name = "population",
    .groups = pop_groups,
    .slots = one_slot,
    .max_groups = 2,
    .overlaps_learning = 0,
    .carries_state = 0,
    .no_save = NULL,
    .create = pop_create,
    .destroy = pop_destroy,
    .train = pop_train,
    .train_many = NULL,
    .lock = frl_sampler_no_lock,
    .unlock = frl_sampler_no_lock,
};
