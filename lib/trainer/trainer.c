/* frl_trainer: construction, the learn step and the public API. The sampler and the
 * learner are tables chosen by the settings; the trainer calls through them and never
 * asks which it holds. */
#include <math.h>
#include <string.h>

#include "env/vec_env_named.h"
#include "rl/policy_io.h"
#include "trainer/trainer.h"
#include "trainer/trainer_dist.h"
#include "trainer/trainer_hold.h"
#include "trainer/trainer_output.h"

/* PPO's train.decoupled defaults to on with the async sampler (ppo_learner.c), to off
 * with sync. A checkpoint's settings set every key, so the value the run takes is
 * written here: loaded, it read the key's own default (off) as set, and an async run
 * went on learning as plain PPO. */
static frl_status pin_decoupled(frl_config *c)
{
    if (frl_cfg_is_set(c, FRL_KEY_TRAIN_DECOUPLED) ||
        frl_cfg_choice(c, FRL_KEY_TRAIN_ALGO) != FRL_TRAIN_ALGO_PPO)
        return FRL_OK;
    return frl_config_set_bool(c, "train.decoupled",
                               frl_cfg_choice(c, FRL_KEY_SAMPLER_MODE) == FRL_SAMPLER_MODE_ASYNC);
}

/* The caller's settings over the learner's own (its table's) over the environment's
 * defaults over the library's. */
static frl_status resolve_settings(frl_runtime *rt, const char *env_name, const frl_config *cfg,
                                   frl_config **out)
{
    frl_status st = frl_config_create(out, &rt->alloc);
    if (st != FRL_OK)
        return st;
    if (frl_config_parse(*out, frl_env_default_settings(env_name)) != FRL_OK) {
        frl_config_destroy(*out);
        *out = NULL;
        return frl_fail(NULL, FRL_ERR_INTERNAL, "defaults of %s: %s", env_name, frl_last_error());
    }
    frl_config_overlay(*out, cfg);
    /* The algorithm's own settings replace the env's PPO-tuned ones; the caller's win. */
    const char *algo = frl_learner_lookup(*out)->settings;
    if (algo && frl_config_parse(*out, algo) != FRL_OK) {
        frl_config_destroy(*out);
        *out = NULL;
        return frl_fail(NULL, FRL_ERR_INTERNAL, "settings of the algorithm: %s", frl_last_error());
    }
    frl_config_overlay(*out, cfg);
    if (pin_decoupled(*out) != FRL_OK) {
        frl_config_destroy(*out);
        *out = NULL;
        return frl_fail(NULL, FRL_ERR_INTERNAL, "train.decoupled: %s", frl_last_error());
    }
    return FRL_OK;
}

/* ---- construction ---- */

static frl_status learn_step(void *owner, int32_t slot, int64_t num_updates)
{
    frl_trainer *t = owner;
    return t->learn(t, slot, num_updates);
}

static frl_status after_update(void *owner)
{
    return frl_trainer_after_update(owner);
}

static int target_reached(const void *owner)
{
    return frl_trainer_target_reached(owner);
}

static void refresh_progress(void *owner)
{
    frl_trainer_refresh_progress(owner);
}

static void fill_host(frl_trainer *t)
{
    t->host = (frl_sampler_host){
        .rt = t->rt, .cfg = t->cfg, .policy = t->policy, .ring = t->ring,
        .population = t->store.population,
        .groups = t->groups, .T = t->T, .B = t->B, .venvs = t->venvs,
        .group_first = t->group_first, .seed = t->seed, .book = &t->book,
        .metrics = &t->metrics, .stop = &t->stop, .err = t->err, .owner = t,
        .learn = learn_step, .after_update = after_update, .target_reached = target_reached,
        .refresh_progress = refresh_progress,
    };
    frl_trainer_dist_host(t, &t->host);
}

/* The floats of an observation row that hold an image's bytes (its words), 0 without one. */
static int32_t pixel_words(const frl_space *obs)
{
    const frl_space *image = frl_space_image_of(obs);
    return image ? (int32_t)(image->n / 4) : 0;
}

/* The storage the learner declared: the ring always, a replay or a population beside. */
static frl_status alloc_storage(frl_trainer *t, const frl_storage_need *need)
{
    const frl_policy *p = t->policy;
    t->store.kind = need->kind;
    t->store.ring = t->ring;
    if (need->kind == FRL_STORAGE_REPLAY) {
        /* Blocks of the ring's slots: observations once, x' B rows after x. */
        frl_replay_shape s = {.capacity = need->capacity, .steps = t->T, .envs = t->B,
                              .obs_w = p->obs_w, .act_w = p->discrete ? 1 : p->out_w,
                              .discrete = p->discrete, .actions = p->discrete ? p->out_w : 0,
                              .prioritized = need->prioritized,
                              .alpha = need->alpha, .batch_rows = need->batch_rows,
                              .state_w = need->keep_state ? p->state_w : 0,
                              .stack = p->stack, .pixel_words = pixel_words(p->obs_space)};
        return frl_replay_create(&t->store.replay, t->rt, &s, t->err);
    }
    if (need->kind != FRL_STORAGE_POPULATION)
        return FRL_OK;
    frl_status st = frl_population_create(&t->store.population, t->policy, need->members);
    return st == FRL_OK ? FRL_OK : frl_fail_msg(t->err, st, frl_last_error());
}

static frl_status build_learner(frl_trainer *t)
{
    frl_storage_need need = {.kind = FRL_STORAGE_ROLLOUT};
    t->learner.rt = t->rt;
    t->learner.saved_alpha = NAN; /* a load sets it */
    t->learner.ops->storage(t->cfg, &need);
    frl_status st = alloc_storage(t, &need);
    frl_learner_ctx c = {t->rt, t->cfg, t->policy, &t->store, t->groups, t->group_first, t->dist};
    if (st == FRL_OK)
        st = t->learner.ops->create(&t->learner, &c, t->err);
    return st;
}

/* The sampler the learner needs: a population's evaluation for a learner that keeps
 * one (neuroevolution), else sampler.mode's. */
static const frl_sampler_ops *sampler_for(const frl_config *cfg, const frl_learner_ops *l)
{
    frl_storage_need need = {.kind = FRL_STORAGE_ROLLOUT};
    l->storage(cfg, &need);
    return need.kind == FRL_STORAGE_POPULATION ? &frl_sampler_population
                                               : frl_sampler_lookup(cfg);
}

/* What the ring holds, said once: with image observations a slot is mostly pixels, and
 * its size is what decides how many envs and steps fit (doc/pixels.md). */
static void log_ring_memory(frl_trainer *t, const frl_space *os, const frl_space *as)
{
    size_t bytes = 0;
    int32_t slots = t->ring->slots;
    if (frl_ring_memory_size(slots, t->T, t->B, os, as, &bytes) != FRL_OK)
        return;
    char space[96];
    frl_space_describe(os, space, sizeof space);
    frl_log(t->rt, FRL_LOG_INFO,
            "ring: %d slots of %d steps x %d envs, %.1f MiB (%.1f MiB a slot; observations "
            "%s, %lld bytes a row)", (int)slots, (int)t->T, (int)t->B,
            (double)bytes / 1048576.0, (double)bytes / slots / 1048576.0, space,
            (long long)(4 * frl_space_row_floats(os)));
}

/* runtime.device=auto: a trainer with too few envs for its threads runs faster with its
 * networks on the CPU (frl_device_pays), and leaves the device; cuda keeps them there. */
static void place_networks(frl_trainer *t, const char *who)
{
    const frl_device *d = &t->rt->device;
    int32_t threads = frl_runtime_threads(t->rt);
    if (!t->policy->dev || !d->automatic || frl_device_pays(t->B, threads))
        return;
    frl_policy_leave_device(t->policy);
    frl_log(t->rt, FRL_LOG_INFO,
            "%s: runtime.device=auto: on the CPU, since %d envs on %d threads run faster "
            "there (the device pays from 16 envs a thread; runtime.device=cuda forces it)",
            who, (int)t->B, (int)threads);
}

static frl_status build_parts(frl_trainer *t, const char *who)
{
    const frl_space *os = frl_vec_env_observation_space(t->venv);
    const frl_space *as = frl_vec_env_action_space(t->venv);
    const frl_sampler_ops *sampler = sampler_for(t->cfg, t->learner.ops);
    frl_status st = frl_policy_create_seeded(&t->policy, t->rt, t->cfg, os, as, t->seed, who);
    if (st == FRL_OK)
        place_networks(t, who);
    if (st == FRL_OK)
        st = frl_ring_create(&t->ring, t->rt, sampler->slots(t->cfg, t->groups), t->T, t->B, os,
                             as);
    if (st != FRL_OK)
        return st;
    log_ring_memory(t, os, as);
    if ((st = frl_ring_alloc_state(t->ring, t->policy->state_w)) != FRL_OK)
        return frl_fail_msg(NULL, st, t->ring->err);
    if (t->policy->state_w && !sampler->carries_state)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED,
                        "%s: a policy with state (policy.core, policy.frame_stack) does not "
                        "train with train.algo=%s, whose %s sampler carries no state", who,
                        t->learner.ops->name, sampler->name);
    if ((st = frl_trainer_dist_open(t, who)) != FRL_OK)
        return st;
    if ((st = build_learner(t)) != FRL_OK)
        return frl_fail_msg(NULL, st, t->err);
    if (frl_rollout_book_init(&t->book, &t->rt->alloc, t->B,
                              (int32_t)frl_cfg_bool(t->cfg, FRL_KEY_TRAIN_REWARD_NORM),
                              frl_cfg_float(t->cfg, FRL_KEY_TRAIN_GAMMA),
                              t->policy->state_w) != FRL_OK)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    if ((st = frl_trainer_dist_book(t, who)) != FRL_OK)
        return st;
    t->learn = t->store.population ? frl_trainer_learn_population : frl_trainer_learn_slot;
    fill_host(t);
    if ((st = sampler->create(&t->sampler, &t->host)) != FRL_OK)
        return frl_fail_msg(NULL, st, t->err);
    return FRL_OK;
}

/* Every group's vec env must have the first one's spaces. */
static frl_status check_groups(frl_vec_env *const *v, int32_t groups, frl_runtime *rt,
                               const char *who)
{
    for (int32_t g = 0; g < groups; g++) {
        char arg[24] = "venv"; /* as the caller's function names it: create_vec's venv */
        if (groups > 1)
            snprintf(arg, sizeof arg, "venvs[%d]", (int)g);
        if (!v[g])
            return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, arg);
        if (v[g]->rt != rt)
            return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: %s belongs to another "
                            "runtime", who, arg);
        for (int32_t h = 0; h < g; h++)
            if (v[h] == v[g])
                return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: venvs[%d] and venvs[%d] are "
                                "the same vec env", who, (int)h, (int)g);
        if (!frl_space_equal(v[g]->obs_space, v[0]->obs_space) ||
            !frl_space_equal(v[g]->act_space, v[0]->act_space))
            return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: venvs[%d]'s spaces differ from "
                            "venvs[0]'s", who, (int)g);
    }
    return FRL_OK;
}

static void destroy_groups(frl_vec_env *const *v, int32_t groups)
{
    for (int32_t g = 0; g < groups; g++)
        frl_vec_env_destroy(v[g]);
}

/* B from the vec envs, and into t->cfg's train.num_envs: the one place the key is
 * written, so a trainer's settings say B however its vec envs were made, and
 * settings.txt and checkpoints record it (frl_trainer_load makes a built-in's vec env
 * again from it). A host's B above the key's range is left unrecorded, since only a
 * built-in's run is made again from the key. */
static void set_groups(frl_trainer *t, frl_vec_env *const *venvs, int32_t groups)
{
    t->groups = groups;
    t->venv = venvs[0];
    t->B = 0;
    for (int32_t g = 0; g < groups; g++) {
        t->venvs[g] = venvs[g];
        t->group_first[g] = t->B;
        t->B += frl_vec_env_num_envs(venvs[g]);
    }
    (void)frl_cfg_set_int(t->cfg, FRL_KEY_TRAIN_NUM_ENVS, t->B);
}

/* Every group's vec env taken for this trainer alone (t->held counts those taken, which
 * destroy gives back). */
static frl_status hold_groups(frl_trainer *t, const char *who)
{
    for (; t->held < t->groups; t->held++) {
        char what[32];
        snprintf(what, sizeof what, "venvs[%d]", (int)t->held);
        frl_status st = frl_vec_env_hold(t->venvs[t->held], who, t->groups > 1 ? what : "venv");
        if (st != FRL_OK)
            return st;
    }
    return FRL_OK;
}

static frl_status check_mode(const frl_config *c, const frl_learner_ops *l, int32_t groups,
                             const char *who)
{
    const frl_sampler_ops *s = sampler_for(c, l);
    /* ES and GA step one vec env, or two pipelined: a third was taken as two, unsaid */
    int64_t asked = frl_cfg_is_set(c, FRL_KEY_SAMPLER_GROUPS)
                        ? frl_cfg_int(c, FRL_KEY_SAMPLER_GROUPS) : groups;
    if (s == &frl_sampler_population && (groups > s->max_groups || asked > s->max_groups))
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: train.algo=%s evaluates on one "
                        "env group or two (sampler.groups=2 steps one while the other acts), "
                        "not %lld", who, l->name, (long long)(groups > asked ? groups : asked));
    if (groups > s->max_groups)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: %d vec envs need sampler.mode=async "
                        "(the synchronous sampler steps one)", who, (int)groups);
    if (!l->elastic && frl_cfg_list(c, FRL_KEY_ELASTIC_WIDTHS).n > 0)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: elastic.widths: train.algo=%s does not "
                        "train elastic policies (ppo, impala and a2c do)", who, l->name);
    return FRL_OK;
}

/* As frl_trainer_build, with the learner's table given (NULL: train.algo's). */
static frl_status build(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                        int32_t groups, int own, frl_config *resolved, const char *env_name,
                        const char *who, const frl_learner_ops *learner)
{
    if (!learner)
        learner = frl_learner_lookup(resolved);
    frl_status st = check_mode(resolved, learner, groups, who);
    frl_trainer *t = st == FRL_OK ? frl_alloc(&rt->alloc, sizeof *t, FRL_CACHE_LINE) : NULL;
    if (!t) {
        frl_config_destroy(resolved);
        if (own)
            destroy_groups(venvs, groups);
        return st != FRL_OK ? st : frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    }
    t->rt = rt;
    t->cfg = resolved;
    set_groups(t, venvs, groups);
    t->own_venv = own;
    snprintf(t->env_name, sizeof t->env_name, "%s", env_name);
    /* The offset lets trainers on one runtime differ (members of a population). */
    t->seed = frl_runtime_seed(rt) + (uint64_t)frl_cfg_int(resolved, FRL_KEY_TRAIN_SEED_OFFSET);
    /* The learner says how long its rollouts are (DQN: train.train_freq). */
    t->learner.ops = learner;
    t->T = (int32_t)(t->learner.ops->rollout ? t->learner.ops->rollout(resolved)
                                             : frl_cfg_int(resolved, FRL_KEY_TRAIN_ROLLOUT));
    int64_t rows = (int64_t)t->T * t->B;
    if (rows > 0x7fffffff) {
        frl_trainer_destroy(t);
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: train.rollout x envs = %lld rows exceeds 2^31 - 1",
                        who, (long long)rows);
    }
    atomic_init(&t->stop, 0);
    atomic_init(&t->dist_stop, 0);
    atomic_init(&t->running, 0);
    t->metrics.struct_size = sizeof t->metrics;
    st = hold_groups(t, who);
    if (st == FRL_OK)
        st = build_parts(t, who);
    if (st != FRL_OK) {
        frl_trainer_destroy(t);
        return st;
    }
    t->t_start = frl_now();
    *out = t;
    return FRL_OK;
}

frl_status frl_trainer_build(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                             int32_t groups, int own, frl_config *resolved, const char *env_name,
                             const char *who)
{
    return build(out, rt, venvs, groups, own, resolved, env_name, who, NULL);
}

/* A new trainer (not a load's): under dist.mode its ranks' seeds checked equal
 * (frl_trainer_dist_check_seed); a trainer that fails it is destroyed. */
static frl_status build_new(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                            int32_t groups, int own, frl_config *resolved, const char *env_name,
                            const char *who, const frl_learner_ops *learner)
{
    frl_status st = build(out, rt, venvs, groups, own, resolved, env_name, who, learner);
    if (st == FRL_OK && (*out)->dist && (st = frl_trainer_dist_check_seed(*out, who)) != FRL_OK) {
        frl_trainer_destroy(*out);
        *out = NULL;
    }
    return st;
}

int32_t frl_trainer_groups_for(const frl_config *c)
{
    return sampler_for(c, frl_learner_lookup(c))->groups(c);
}

/* k vec envs of the built-in, the envs split as evenly as possible. Here
 * train.num_envs decides B (see frl_trainer_check_num_envs for the other direction). */
frl_status frl_trainer_make_groups(frl_vec_env **v, int32_t k, frl_runtime *rt,
                                  const char *env_name, const frl_config *c, const char *who)
{
    int32_t n = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_NUM_ENVS);
    if (k < 1)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: sampler.groups %d, at least 1", who, (int)k);
    if (k > n)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: sampler.groups %d is more than train.num_envs %d",
                        who, (int)k, (int)n);
    for (int32_t g = 0; g < k; g++) {
        int32_t size = n / k + (g < n % k);
        frl_status st = frl_vec_env_create_as(&v[g], rt, env_name, size, c, who);
        if (st != FRL_OK) {
            destroy_groups(v, g);
            return st;
        }
    }
    return FRL_OK;
}

FRL_API frl_status frl_trainer_create(frl_trainer **out, frl_runtime *rt, const char *env_name,
                                      const frl_config *cfg)
{
    const char *who = "frl_trainer_create";
    if (out)
        *out = NULL;
    if (!out || !rt || !env_name)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !out ? "out" : !rt ? "runtime" : "env_name");
    if (strlen(env_name) >= FRL_ENV_NAME_MAX)
        return frl_fail(NULL, FRL_ERR_UNKNOWN_NAME, "%s: unknown environment '%.40s...'", who,
                        env_name);
    frl_config *resolved;
    frl_status st = resolve_settings(rt, env_name, cfg, &resolved);
    if (st != FRL_OK)
        return st;
    frl_vec_env *v[FRL_MAX_GROUPS];
    int32_t groups = frl_trainer_groups_for(resolved);
    if ((st = frl_trainer_make_groups(v, groups, rt, env_name, resolved, who)) != FRL_OK) {
        frl_config_destroy(resolved);
        return st;
    }
    return build_new(out, rt, v, groups, 1, resolved, env_name, who, NULL);
}

static frl_status create_vecs(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                               int32_t count, const frl_config *cfg, const frl_learner_ops *learner,
                               const char *who)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !venvs)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !out ? "out" : !rt ? "runtime" : "venvs");
    if (count < 1 || count > FRL_MAX_GROUPS)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: count %d is outside [1, %d]", who, (int)count,
                        FRL_MAX_GROUPS);
    frl_status st = check_groups(venvs, count, rt, who);
    if (st != FRL_OK)
        return st;
    /* A built-in vec env keeps its name, so a checkpoint of this trainer can be loaded. */
    const frl_vec_env *v0 = venvs[0];
    const char *name = count == 1 && frl_vec_env_builtin_name(v0) ? frl_vec_env_builtin_name(v0)
                                                                  : "";
    /* A ray task on a host's map takes the task's settings but saves no name. */
    const char *tuned = count == 1 && v0->settings_of ? v0->settings_of : name;
    frl_config *resolved;
    if ((st = resolve_settings(rt, tuned, cfg, &resolved)) != FRL_OK)
        return st;
    /* The env.* settings a built-in vec env was made with are what runs, whatever cfg
     * says: recorded, a checkpoint's load remakes these envs (it remade the defaults'). */
    if (count == 1 && v0->env_cfg)
        frl_config_overlay(resolved, v0->env_cfg);
    int64_t n = 0;
    for (int32_t g = 0; g < count; g++)
        n += frl_vec_env_num_envs(venvs[g]);
    if (n > 0x7fffffff) {
        frl_config_destroy(resolved);
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: %lld envs in all exceed 2^31 - 1", who,
                        (long long)n);
    }
    char why[FRL_ERRMSG_SIZE];
    if ((st = frl_trainer_check_num_envs(cfg, n, count, why)) != FRL_OK) {
        frl_config_destroy(resolved);
        return frl_fail(NULL, st, "%s: %s", who, why);
    }
    /* The host's group count, so settings.txt records it (the build records B). */
    (void)frl_cfg_set_int(resolved, FRL_KEY_SAMPLER_GROUPS, count);
    return build_new(out, rt, venvs, count, 0, resolved, name, who, learner);
}

FRL_API frl_status frl_trainer_create_vec(frl_trainer **out, frl_runtime *rt, frl_vec_env *venv,
                                          const frl_config *cfg)
{
    const char *who = "frl_trainer_create_vec";
    if (out)
        *out = NULL;
    if (!out || !rt || !venv)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who,
                        !out ? "out" : !rt ? "runtime" : "venv");
    return create_vecs(out, rt, &venv, 1, cfg, NULL, who);
}

FRL_API frl_status frl_trainer_create_vecs(frl_trainer **out, frl_runtime *rt,
                                           frl_vec_env *const *venvs, int32_t count,
                                           const frl_config *cfg)
{
    return create_vecs(out, rt, venvs, count, cfg, NULL, "frl_trainer_create_vecs");
}

frl_status frl_trainer_create_with_learner(frl_trainer **out, frl_runtime *rt, frl_vec_env *venv,
                                           const frl_config *cfg, const frl_learner_ops *learner)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !venv || !learner)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_create_with_learner: an argument is NULL");
    return create_vecs(out, rt, &venv, 1, cfg, learner, "frl_trainer_create_vec");
}

frl_status frl_trainer_check_num_envs(const frl_config *cfg, int64_t n, int32_t count, char *err)
{
    int64_t asked = frl_cfg_int(cfg, FRL_KEY_TRAIN_NUM_ENVS);
    if (!frl_cfg_is_set(cfg, FRL_KEY_TRAIN_NUM_ENVS) || asked == n)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                    "train.num_envs=%lld is set, but %s %lld envs%s (leave the key unset to "
                    "take their size)", (long long)asked,
                    count == 1 ? "the vec env has" : "the vec envs have", (long long)n,
                    count == 1 ? "" : " in all");
}

FRL_API void frl_trainer_destroy(frl_trainer *t)
{
    if (!t)
        return;
    frl_trainer_close_outputs(t);
    if (t->sampler)
        t->sampler->ops->destroy(t->sampler);
    if (t->learner.ops)
        t->learner.ops->destroy(&t->learner);
    frl_trainer_dist_close(t);
    frl_replay_destroy(t->store.replay);
    frl_population_destroy(t->store.population);
    frl_ring_destroy(t->ring);
    frl_policy_destroy(t->policy);
    for (int32_t g = 0; g < t->held; g++)
        frl_vec_env_release(t->venvs[g]);
    if (t->own_venv)
        destroy_groups(t->venvs, t->groups);
    frl_rollout_book_free(&t->book, &t->rt->alloc);
    frl_config_destroy(t->cfg);
    frl_free(&t->rt->alloc, t);
}

/* ---- the learner step and the loop ---- */

void frl_trainer_refresh_progress(frl_trainer *t)
{
    frl_metrics *m = &t->metrics;
    m->update = t->book.pr.updates;
    m->env_steps = t->book.pr.env_steps;
    m->episodes = t->book.pr.episodes;
    frl_rollout_recent_means(&t->book, &m->mean_return, &m->mean_length);
    if (t->dist) { /* every rank's episodes, as of the last update */
        m->episodes = t->dist_episodes;
        m->mean_return = t->dist_return;
        m->mean_length = t->dist_length;
    }
}

static void fill_metrics(frl_trainer *t, const frl_learn_stats *s)
{
    frl_metrics *m = &t->metrics;
    frl_trainer_refresh_progress(t);
    m->seconds = frl_now() - t->t_start;
    /* Steps since create or load: a resumed run's rate is its own. */
    m->steps_per_second = m->seconds > 0 ? (double)(t->book.pr.env_steps - t->steps_at_start) / m->seconds : 0;
    m->policy_loss = s->policy_loss;
    m->value_loss = s->value_loss;
    m->entropy = s->entropy;
    m->approx_kl = s->approx_kl;
    m->clip_fraction = s->clip_fraction;
    m->explained_variance = s->explained_variance;
    m->grad_norm = s->grad_norm;
    m->learning_rate = s->learning_rate;
    m->epochs_done = s->epochs_done;
    m->time_backward = s->time_backward;
    m->time_optimizer = s->time_optimizer;
    m->time_waiting = 0;
    m->q_mean = s->q_mean;
    m->td_error = s->td_error;
    m->epsilon = s->epsilon;
    m->replay_fill = s->replay_fill;
    m->sample_age = s->sample_age;
    m->time_replay = s->time_replay;
    m->population_mean = s->population_mean;
    m->population_best = s->population_best;
    m->kept_fitness = s->kept_fitness;
    m->priority_spread = s->priority_spread;
}

/* A neuroevolution learner's update: the population's fitnesses are in it already. */
frl_status frl_trainer_learn_population(frl_trainer *t, int32_t slot, int64_t num_updates)
{
    (void)slot;
    frl_learn_stats s = {0};
    frl_batch b = {-1, NULL, 0, t->book.pr.updates, num_updates, t->seed, 0};
    double t0 = frl_now();
    frl_status st = t->learner.ops->learn(&t->learner, &b, &s, t->err);
    if (st != FRL_OK)
        return st;
    s.time_optimizer = frl_now() - t0;
    t->book.pr.updates++;
    fill_metrics(t, &s);
    return FRL_OK;
}


frl_status frl_trainer_learn_slot(frl_trainer *t, int32_t slot, int64_t num_updates)
{
    frl_learn_stats s = {0};
    frl_batch b = {slot, t->ring->slot[slot].state0, t->book.state_w, t->book.pr.updates, num_updates,
                   t->seed, t->ring->slot[slot].steps};
    frl_status st = t->dist ? frl_trainer_dist_before_learn(t, slot) : FRL_OK;
    if (st == FRL_OK)
        st = t->learner.ops->learn(&t->learner, &b, &s, t->err);
    if (st != FRL_OK) {
        frl_ring_release(t->ring, slot);
        return st;
    }
    if (t->dist && (st = frl_trainer_dist_after_learn(t, slot)) != FRL_OK) {
        frl_ring_release(t->ring, slot);
        return st;
    }
    if (!t->dist && t->policy->obs_norm) {
        frl_obsnorm_update(&t->policy->norm, frl_ring_at(t->ring, slot, FRL_RING_OBSERVATIONS),
                           (int64_t)t->T * t->B);
        frl_obsnorm_freeze(&t->policy->norm);
        t->policy->dev_norm_stale = 1;
    }
    frl_ring_release(t->ring, slot);
    t->book.pr.updates++;
    /* The progress the sampler writes, read under its lock. */
    t->sampler->ops->lock(t->sampler);
    fill_metrics(t, &s);
    t->sampler->ops->unlock(t->sampler);
    /* Sync: acting's time plus the value pass; async: the sampler's roles report their
     * own busy time, so the value pass counts as learning. */
    if (t->sampler->ops->overlaps_learning)
        t->metrics.time_backward += s.time_values;
    else
        t->metrics.time_inference += s.time_values;
    if (st == FRL_OK && frl_find_nonfinite(t->policy->params, (int64_t)t->policy->num_params) >= 0)
        st = frl_fail(t->err, FRL_ERR_NONFINITE,
                      "training diverged: a parameter became non-finite at update %lld (lower "
                      "train.lr or set train.max_grad_norm)", (long long)t->book.pr.updates);
    int32_t k = st == FRL_OK ? frl_policy_bad_log_std(t->policy) : -1;
    if (k >= 0) /* acting's draws would overflow from here, and no save could hold it */
        st = frl_fail(t->err, FRL_ERR_NONFINITE, "training diverged: the Gaussian head's "
                      "log_std[%d] reached %g at update %lld, beyond +-80 (lower train.lr or "
                      "set train.max_grad_norm)", (int)k,
                      (double)t->policy->params[t->policy->log_std_off + (size_t)k],
                      (long long)t->book.pr.updates);
    return st;
}

/* From the episode window itself, which checkpoints keep (the metrics are not). */
int frl_trainer_target_reached(const frl_trainer *t)
{
    double ret, len;
    /* Neuroevolution: the kept policy's fitness (a GA's population, mutants included,
     * stays below its best member; ES's centre is what it keeps), from the learner's
     * state, which a load restores (the metrics start empty); NaN before a generation. */
    if (t->store.population && t->learner.ops->kept_fitness)
        return frl_cfg_is_set(t->cfg, FRL_KEY_TRAIN_TARGET_RETURN) &&
               t->learner.ops->kept_fitness(&t->learner) >=
                   frl_cfg_float(t->cfg, FRL_KEY_TRAIN_TARGET_RETURN);
    if (t->dist)
        return frl_cfg_is_set(t->cfg, FRL_KEY_TRAIN_TARGET_RETURN) &&
               t->dist_window >= FRL_RECENT_EPISODES &&
               t->dist_return >= frl_cfg_float(t->cfg, FRL_KEY_TRAIN_TARGET_RETURN);
    frl_rollout_recent_means(&t->book, &ret, &len);
    return frl_cfg_is_set(t->cfg, FRL_KEY_TRAIN_TARGET_RETURN) &&
           t->book.pr.episodes >= FRL_RECENT_EPISODES &&
           ret >= frl_cfg_float(t->cfg, FRL_KEY_TRAIN_TARGET_RETURN);
}

frl_status frl_trainer_after_update(frl_trainer *t)
{
    frl_status st = frl_trainer_write_outputs(t);
    if (st != FRL_OK)
        return st;
    if (t->cb) {
        int rc = frl_trainer_run_callback(t);
        if (rc != 0)
            return frl_fail(t->err, FRL_ERR_CALLBACK, "the metrics callback returned %d", rc);
    }
    return FRL_OK;
}

/* A policy whose update diverged acts on NaN: another call would step the envs with
 * garbage actions and report the divergence again at a later update, as if new. Read
 * while the trainer is claimed (an async learner writes the parameters). */
static frl_status check_not_diverged(frl_trainer *t, const char *who)
{
    int64_t i = frl_find_nonfinite(t->policy->params, (int64_t)t->policy->num_params);
    if (i < 0)
        return FRL_OK;
    return frl_fail(t->err, FRL_ERR_NONFINITE, "%s: the policy has diverged (parameter %lld "
                    "is not finite): it cannot train on; continue from the last checkpoint",
                    who, (long long)i);
}

FRL_API frl_status frl_trainer_train(frl_trainer *t, int64_t total_steps)
{
    if (!t)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_train: trainer is NULL");
    if (total_steps < 0)
        return frl_fail(t->err, FRL_ERR_RANGE, "frl_trainer_train: total_steps %lld < 0",
                        (long long)total_steps);
    /* the thread's buffer only: the trainer's belongs to the call that holds it */
    if (atomic_exchange(&t->running, 1))
        return frl_fail(NULL, FRL_ERR_STATE, "frl_trainer_train: already running (a train, "
                        "or a save or set_output on another thread, holds the trainer)");
    frl_status st = check_not_diverged(t, "frl_trainer_train");
    if (st == FRL_OK && t->dist)
        st = frl_trainer_dist_check_budget(t, total_steps);
    if (st != FRL_OK) {
        atomic_store(&t->running, 0);
        return st;
    }
    int64_t updates0 = t->book.pr.updates;
    st = t->sampler->ops->train(t->sampler, total_steps);
    atomic_store(&t->running, 0);
    if (t->dist) {
        frl_trainer_dist_report(t, t->book.pr.updates - updates0);
        /* a request after the last exchange is not carried into the next call, as
         * without dist.mode */
        atomic_store(&t->stop, 0);
    }
    if (st != FRL_OK)
        frl_fail_msg(NULL, st, t->err);
    return st;
}

static frl_status check_many(frl_trainer *const *tr, int32_t count, int64_t total_steps,
                             const char *who)
{
    if (!tr)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: trainers is NULL", who);
    if (count < 1 || count > FRL_MAX_GROUPS)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: count %d is outside [1, %d]", who, (int)count,
                        FRL_MAX_GROUPS);
    if (total_steps < 0)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: total_steps %lld < 0", who,
                        (long long)total_steps);
    for (int32_t i = 0; i < count; i++) {
        if (!tr[i])
            return frl_fail(NULL, FRL_ERR_NULL, "%s: trainers[%d] is NULL", who, (int)i);
        if (!tr[i]->sampler->ops->train_many)
            return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: trainers[%d] is not an async "
                            "trainer (set sampler.mode=async)", who, (int)i);
        if (tr[i]->rt != tr[0]->rt)
            return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: trainers[%d] belongs to another "
                            "runtime than trainers[0] (they share its threads)", who, (int)i);
        for (int32_t j = 0; j < i; j++)
            if (tr[j] == tr[i])
                return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: trainers[%d] and "
                                "trainers[%d] are the same trainer", who, (int)j, (int)i);
    }
    /* No vec env is in two of them: each trainer holds its own (frl_vec_env_hold). */
    return FRL_OK;
}

/* Mark the trainers running; none is marked if one already was. */
static frl_status claim(frl_trainer *const *tr, int32_t count, const char *who)
{
    for (int32_t i = 0; i < count; i++)
        if (atomic_exchange(&tr[i]->running, 1)) {
            while (i-- > 0)
                atomic_store(&tr[i]->running, 0);
            return frl_fail(NULL, FRL_ERR_STATE, "%s: a trainer is already training", who);
        }
    return FRL_OK;
}

static void release(frl_trainer *const *tr, int32_t count)
{
    for (int32_t i = 0; i < count; i++)
        atomic_store(&tr[i]->running, 0);
}

FRL_API frl_status frl_trainer_train_many(frl_trainer *const *trainers, int32_t count,
                                          int64_t total_steps)
{
    const char *who = "frl_trainer_train_many";
    frl_status st = check_many(trainers, count, total_steps, who);
    if (st == FRL_OK)
        st = claim(trainers, count, who);
    if (st != FRL_OK)
        return st;
    for (int32_t i = 0; i < count && st == FRL_OK; i++)
        if ((st = check_not_diverged(trainers[i], who)) != FRL_OK)
            frl_fail(NULL, st, "trainers[%d]: %s", (int)i, trainers[i]->err);
    if (st != FRL_OK) {
        release(trainers, count);
        return st;
    }
    frl_sampler *m[FRL_MAX_GROUPS];
    for (int32_t i = 0; i < count; i++)
        m[i] = trainers[i]->sampler;
    int32_t failed;
    st = trainers[0]->sampler->ops->train_many(m, count, total_steps, &failed);
    release(trainers, count);
    if (st != FRL_OK && failed >= 0)
        frl_fail(NULL, st, "trainers[%d]: %s", (int)failed, trainers[failed]->err);
    else if (st != FRL_OK)
        frl_fail(NULL, st, "%s: %s", who, trainers[0]->err);
    return st;
}

FRL_API void frl_trainer_request_stop(frl_trainer *t)
{
    if (t)
        atomic_store(&t->stop, 1);
}

FRL_API void frl_trainer_set_callback(frl_trainer *t, frl_metrics_fn fn, void *user)
{
    if (t) {
        t->cb = fn;
        t->cb_user = user;
    }
}

FRL_API frl_policy *frl_trainer_policy(frl_trainer *t)
{
    return t ? t->policy : NULL;
}

FRL_API frl_ring *frl_trainer_ring(frl_trainer *t)
{
    return t ? t->ring : NULL;
}

FRL_API frl_replay *frl_trainer_replay(frl_trainer *t)
{
    return t ? t->store.replay : NULL;
}

FRL_API frl_vec_env *frl_trainer_vec_env(frl_trainer *t)
{
    return t ? t->venv : NULL;
}

FRL_API const frl_metrics *frl_trainer_metrics(const frl_trainer *t)
{
    return t ? &t->metrics : NULL;
}

FRL_API const char *frl_trainer_last_error(const frl_trainer *t)
{
    return t ? t->err : "frl_trainer_last_error: trainer is NULL";
}
