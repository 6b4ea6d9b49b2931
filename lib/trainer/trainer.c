/* frl_trainer: the synchronous sampler writing into the ring, and the training loop. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "cuda/plugin_api.h"
#include "trainer/trainer.h"

double frl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- settings ---- */

static void read_ppo_settings(const frl_config *c, frl_ppo_settings *s)
{
    s->epochs = (int32_t)frl_config_int(c, "train.epochs");
    s->minibatches = (int32_t)frl_config_int(c, "train.minibatches");
    s->lr = frl_config_float(c, "train.lr");
    s->clip = frl_config_float(c, "train.clip");
    s->ent_coef = frl_config_float(c, "train.ent_coef");
    s->vf_coef = frl_config_float(c, "train.vf_coef");
    s->max_grad_norm = frl_config_float(c, "train.max_grad_norm");
    s->gamma = frl_config_float(c, "train.gamma");
    s->lambda = frl_config_float(c, "train.gae_lambda");
    s->adam_eps = frl_config_float(c, "train.adam_eps");
    s->target_kl = frl_config_float(c, "train.target_kl");
    s->use_target_kl = frl_config_is_set(c, "train.target_kl");
    s->clip_value = (int32_t)frl_config_int(c, "train.clip_value");
    s->norm_adv = (int32_t)frl_config_int(c, "train.norm_adv");
    s->anneal_lr = (int32_t)frl_config_int(c, "train.anneal_lr");
    s->impala = frl_config_int(c, "train.algo") == 1;
    /* IMPALA is defined with V-trace's targets and advantages; the async sampler (APPO)
     * uses them unless the caller chose GAE, since its rollouts lag the learner. */
    int async_default = frl_config_int(c, "sampler.mode") == 1 && !frl_config_is_set(c, "train.advantage");
    s->vtrace = s->impala || frl_config_int(c, "train.advantage") == 1 || async_default;
    s->rho_bar = frl_config_float(c, "train.vtrace_rho");
    s->c_bar = frl_config_float(c, "train.vtrace_c");
}

/* The caller's settings over the environment's defaults over the library's. */
static frl_status resolve_settings(frl_runtime *rt, const char *env_name, const frl_config *cfg,
                                   frl_config **out)
{
    frl_status st = frl_config_create(out, &rt->alloc);
    if (st != FRL_OK)
        return st;
    if ((st = frl_config_parse(*out, frl_env_default_settings(env_name))) != FRL_OK) {
        frl_config_destroy(*out);
        *out = NULL;
        return frl_fail(NULL, FRL_ERR_INTERNAL, "defaults of %s: %s", env_name, frl_last_error());
    }
    frl_config_overlay(*out, cfg);
    return FRL_OK;
}

/* ---- construction ---- */

/* Sync sampling on a device: one forward of all envs per step into a pinned buffer,
 * from which the pool's tasks sample. */
static frl_status alloc_device_outputs(frl_trainer *t)
{
    const frl_policy *p = t->policy;
    size_t bytes = sizeof(float) * (size_t)t->B * (size_t)p->out_w;
    char why[FRL_ERRMSG_SIZE / 2] = "";
    t->dev_out = frl_device_host_alloc(&t->rt->device, &t->rt->alloc, bytes, why, sizeof why);
    if (!t->dev_out)
        return frl_fail(t->err, FRL_ERR_NOMEM, "the outputs of %d envs' inference: %s",
                        (int)t->B, why);
    return FRL_OK;
}

static frl_status build_parts(frl_trainer *t, const char *who)
{
    const frl_space *os = frl_vec_env_observation_space(t->venv);
    const frl_space *as = frl_vec_env_action_space(t->venv);
    frl_status st = frl_policy_create_seeded(&t->policy, t->rt, t->cfg, os, as, t->seed, who);
    if (st == FRL_OK)
        st = frl_ring_create(&t->ring, t->rt,
                             t->groups > 1 || frl_config_int(t->cfg, "sampler.mode") == 1
                                 ? (int32_t)frl_config_int(t->cfg, "sampler.slots") : 1,
                             t->T, t->B, os, as);
    if (st != FRL_OK)
        return st;
    frl_ppo_settings s;
    read_ppo_settings(t->cfg, &s);
    st = frl_ppo_init(&t->ppo, t->rt, t->policy, t->ring, &s, t->err);
    if (st == FRL_OK)
        st = frl_ppo_device_create(&t->ppo, t->err);
    if (st == FRL_OK && t->policy->dev)
        st = alloc_device_outputs(t);
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, t->err);
    t->disc_return = frl_alloc(&t->rt->alloc, sizeof(double) * (size_t)t->B, 64);
    if (!t->disc_return)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    /* Acting splits the envs over the threads (an action depends only on its row, so
     * the split changes no result), in pieces no larger than a learner workspace. */
    int32_t threads = frl_runtime_threads(t->rt);
    int32_t per = (t->B + threads - 1) / threads;
    t->act_rows = per < t->ppo.shard_rows ? per : t->ppo.shard_rows;
    t->rn_scale = 1.0f;
    t->learn = frl_trainer_learn_slot;
    if (frl_config_int(t->cfg, "sampler.mode") == 1)
        return frl_async_create(&t->as, t);
    return FRL_OK;
}

/* Every group's vec env must have the first one's spaces. */
static frl_status check_groups(frl_vec_env *const *v, int32_t groups, frl_runtime *rt,
                               const char *who)
{
    for (int32_t g = 0; g < groups; g++) {
        if (!v[g])
            return frl_fail(NULL, FRL_ERR_NULL, "%s: venvs[%d] is NULL", who, (int)g);
        if (v[g]->rt != rt)
            return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: venvs[%d] belongs to another "
                            "runtime", who, (int)g);
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
}

static frl_status check_mode(const frl_config *c, int32_t groups, const char *who)
{
    if (frl_config_int(c, "sampler.mode") == 0 && groups > 1)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: %d vec envs need sampler.mode=async "
                        "(the synchronous sampler steps one)", who, (int)groups);
    return FRL_OK;
}

frl_status frl_trainer_build(frl_trainer **out, frl_runtime *rt, frl_vec_env *const *venvs,
                             int32_t groups, int own, frl_config *resolved, const char *env_name,
                             const char *who)
{
    frl_status st = check_mode(resolved, groups, who);
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
    t->seed = frl_runtime_seed(rt) + (uint64_t)frl_config_int(resolved, "train.seed_offset");
    t->T = (int32_t)frl_config_int(resolved, "train.rollout");
    int64_t rows = (int64_t)t->T * t->B;
    if (rows > 0x7fffffff) {
        frl_trainer_destroy(t);
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: train.rollout x envs = %lld rows exceeds 2^31 - 1",
                        who, (long long)rows);
    }
    t->reward_norm = (int32_t)frl_config_int(resolved, "train.reward_norm");
    atomic_init(&t->stop, 0);
    atomic_init(&t->running, 0);
    t->metrics.struct_size = sizeof t->metrics;
    st = build_parts(t, who);
    if (st != FRL_OK) {
        frl_trainer_destroy(t);
        return st;
    }
    t->t_start = frl_now();
    *out = t;
    return FRL_OK;
}

/* sampler.groups vec envs of the built-in, the envs split as evenly as possible. Here
 * train.num_envs decides B (see frl_trainer_check_num_envs for the other direction). */
static frl_status create_groups(frl_vec_env **v, int32_t *groups, frl_runtime *rt,
                                const char *env_name, const frl_config *c, const char *who)
{
    int32_t n = (int32_t)frl_config_int(c, "train.num_envs");
    int32_t k = frl_config_int(c, "sampler.mode") == 1 ? (int32_t)frl_config_int(c, "sampler.groups")
                                                        : 1;
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
    *groups = k;
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
    int32_t groups = 0;
    if ((st = create_groups(v, &groups, rt, env_name, resolved, who)) != FRL_OK) {
        frl_config_destroy(resolved);
        return st;
    }
    return frl_trainer_build(out, rt, v, groups, 1, resolved, env_name, who);
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
    return frl_trainer_create_vecs(out, rt, &venv, 1, cfg);
}

FRL_API frl_status frl_trainer_create_vecs(frl_trainer **out, frl_runtime *rt,
                                           frl_vec_env *const *venvs, int32_t count,
                                           const frl_config *cfg)
{
    const char *who = count == 1 ? "frl_trainer_create_vec" : "frl_trainer_create_vecs";
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
    const char *name = count == 1 && v0->kind == VEC_BUILTIN ? v0->cls->name : "";
    frl_config *resolved;
    if ((st = resolve_settings(rt, name, cfg, &resolved)) != FRL_OK)
        return st;
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
    /* Written back, so settings.txt and checkpoints record B (frl_trainer_load makes a
     * built-in's vec env again from it). */
    frl_config_set_int(resolved, "train.num_envs", n);
    frl_config_set_int(resolved, "sampler.groups", count);
    return frl_trainer_build(out, rt, venvs, count, 0, resolved, name, who);
}

frl_status frl_trainer_check_num_envs(const frl_config *cfg, int64_t n, int32_t count, char *err)
{
    if (!frl_config_is_set(cfg, "train.num_envs") || frl_config_int(cfg, "train.num_envs") == n)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                    "train.num_envs=%lld is set, but %s %lld envs%s (leave the key unset to "
                    "take their size)", (long long)frl_config_int(cfg, "train.num_envs"),
                    count == 1 ? "the vec env has" : "the vec envs have", (long long)n,
                    count == 1 ? "" : " in all");
}

FRL_API void frl_trainer_destroy(frl_trainer *t)
{
    if (!t)
        return;
    frl_trainer_close_outputs(t);
    frl_async_destroy(t->as);
    if (t->ppo.rt)
        frl_ppo_free(&t->ppo);
    if (t->dev_out)
        frl_device_host_free(&t->rt->device, &t->rt->alloc, t->dev_out);
    frl_ring_destroy(t->ring);
    frl_policy_destroy(t->policy);
    if (t->own_venv)
        destroy_groups(t->venvs, t->groups);
    frl_free(&t->rt->alloc, t->disc_return);
    frl_config_destroy(t->cfg);
    frl_free(&t->rt->alloc, t);
}

/* ---- the sampler ---- */

typedef struct act_job {
    frl_trainer *t;
    int32_t step;
} act_job;

/* Write the action of env `local` of group g into its vec env (box actions clipped to
 * the space, as CleanRL's ClipAction does; the ring keeps the unclipped sample the
 * log-prob belongs to). */
void frl_trainer_env_action(frl_trainer *t, int32_t g, int32_t local, const void *sampled)
{
    const frl_policy *p = t->policy;
    if (p->discrete) {
        ((int32_t *)frl_vec_env_actions(t->venvs[g]))[local] = *(const int32_t *)sampled;
        return;
    }
    const float *a = sampled, *lo = p->act_space->low, *hi = p->act_space->high;
    float *dst = (float *)frl_vec_env_actions(t->venvs[g]) + (size_t)local * (size_t)p->out_w;
    for (int32_t i = 0; i < p->out_w; i++)
        dst[i] = a[i] < lo[i] ? lo[i] : (a[i] > hi[i] ? hi[i] : a[i]);
}

static int act_task(void *user, int32_t task, int32_t thread)
{
    act_job *j = user;
    frl_trainer *t = j->t;
    const frl_policy *p = t->policy;
    int32_t first = task * t->act_rows;
    int32_t rows = t->B - first < t->act_rows ? t->B - first : t->act_rows;
    size_t row0 = (size_t)j->step * (size_t)t->B + (size_t)first;
    const float *obs = (const float *)frl_ring_at(t->ring, t->slot, FRL_RING_OBSERVATIONS) +
                       row0 * (size_t)p->obs_w;
    unsigned char *act = frl_ring_at(t->ring, t->slot, FRL_RING_ACTIONS);
    float *lp = (float *)frl_ring_at(t->ring, t->slot, FRL_RING_LOG_PROBS) + row0;
    size_t ab = p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
    frl_pass f;
    frl_policy_pass_layout(p, rows, 0, t->ppo.ws[thread], &f);
    /* Values come later, in one batch (frl_ppo_values). On a device the outputs are
     * there already (rollout_step). */
    if (t->dev_out)
        f.out = t->dev_out + (size_t)first * (size_t)p->out_w;
    else
        frl_policy_forward_heads(p, p->params, rows, obs, &f, FRL_HEAD_ACTOR);
    for (int32_t r = 0; r < rows; r++) {
        void *a = act + (row0 + (size_t)r) * ab;
        lp[r] = (float)frl_policy_head_act(p, p->params, f.out + (size_t)r * (size_t)p->out_w, 0,
                                          (uint64_t)(first + r), (uint64_t)t->rollout_steps, a);
        frl_trainer_env_action(t, 0, first + r, a);
    }
    return 0;
}

/* Scale rewards r[0..n) of envs [first, first + n) by the running std of the
 * discounted return (Engstrom et al., 2020). */
static void normalise_rewards(frl_trainer *t, int32_t first, int32_t n, float *r,
                              const uint8_t *term, const uint8_t *trunc)
{
    double g = t->ppo.s.gamma, s = 0, ss = 0, *d = t->disc_return + first;
    for (int32_t b = 0; b < n; b++) {
        d[b] = d[b] * g + r[b];
        s += d[b];
    }
    double bm = s / n;
    for (int32_t b = 0; b < n; b++)
        ss += (d[b] - bm) * (d[b] - bm);
    double tot = t->rn_count + n, dm = bm - t->rn_mean;
    t->rn_mean += dm * n / tot;
    t->rn_m2 += ss + dm * dm * t->rn_count * n / tot;
    t->rn_count = tot;
    t->rn_scale = (float)(1.0 / sqrt(t->rn_m2 / t->rn_count + 1e-8));
    for (int32_t b = 0; b < n; b++) {
        r[b] *= t->rn_scale;
        if (term[b] | trunc[b])
            d[b] = 0;
    }
}

static void record_episodes(frl_trainer *t, const frl_vec_env *v)
{
    const uint8_t *term = frl_vec_env_terminated(v), *trunc = frl_vec_env_truncated(v);
    const float *ret = frl_vec_env_episode_returns(v);
    const int32_t *len = frl_vec_env_episode_lengths(v);
    for (int32_t b = 0; b < v->n; b++) {
        if (!(term[b] | trunc[b]))
            continue;
        t->recent_return[t->episodes % FRL_RECENT_EPISODES] = ret[b];
        t->recent_length[t->episodes % FRL_RECENT_EPISODES] = len[b];
        t->episodes++;
    }
}

void frl_trainer_store_step(frl_trainer *t, int32_t g, int32_t slot, int32_t step)
{
    const frl_vec_env *v = t->venvs[g];
    size_t off = (size_t)step * (size_t)t->B + (size_t)t->group_first[g], n = (size_t)v->n;
    float *r = (float *)frl_ring_at(t->ring, slot, FRL_RING_REWARDS) + off;
    uint8_t *term = (uint8_t *)frl_ring_at(t->ring, slot, FRL_RING_TERMINATED) + off;
    uint8_t *trunc = (uint8_t *)frl_ring_at(t->ring, slot, FRL_RING_TRUNCATED) + off;
    memcpy(r, frl_vec_env_rewards(v), sizeof(float) * n);
    memcpy(term, frl_vec_env_terminated(v), n);
    memcpy(trunc, frl_vec_env_truncated(v), n);
    memcpy((uint8_t *)frl_ring_at(t->ring, slot, FRL_RING_RESET_STEPS) + off,
           frl_vec_env_reset_steps(v), n);
    if (t->reward_norm)
        normalise_rewards(t, t->group_first[g], v->n, r, term, trunc);
    record_episodes(t, v);
}

/* *clock is the time the step starts, and becomes the time it ends: two clock reads a
 * step, not three. */
static frl_status rollout_step(frl_trainer *t, int32_t step, double *clock)
{
    size_t ow = (size_t)t->policy->obs_w, B = (size_t)t->B;
    float *obs = (float *)frl_ring_at(t->ring, t->slot, FRL_RING_OBSERVATIONS) + (size_t)step * B * ow;
    memcpy(obs, frl_vec_env_observations(t->venv), sizeof(float) * B * ow);
    ((uint64_t *)frl_ring_at(t->ring, t->slot, FRL_RING_POLICY_VERSION))[step] = t->policy->version;
    act_job j = {t, step};
    int32_t failed, tasks = (t->B + t->act_rows - 1) / t->act_rows;
    if (t->dev_out) {
        frl_status st = frl_policy_device_forward(t->policy, t->B, obs, t->dev_out, NULL, t->err);
        if (st != FRL_OK)
            return st;
    }
    if (frl_pool_run(t->rt->pool, tasks, act_task, &j, &failed) != 0)
        return frl_fail(t->err, FRL_ERR_INTERNAL, "acting failed in task %d", (int)failed);
    double t1 = frl_now();
    frl_status st = frl_vec_env_step(t->venv);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_vec_env_last_error(t->venv));
    frl_trainer_store_step(t, 0, t->slot, step);
    t->rollout_steps++;
    t->env_steps += t->B;
    double t2 = frl_now();
    t->metrics.time_inference += t1 - *clock;
    t->metrics.time_env += t2 - t1;
    *clock = t2;
    return FRL_OK;
}

static frl_status rollout(frl_trainer *t)
{
    frl_status st = frl_ring_acquire_write(t->ring, &t->slot);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_ring_last_error(t->ring));
    t->metrics.time_env = t->metrics.time_inference = 0;
    double clock = frl_now();
    for (int32_t s = 0; s < t->T && st == FRL_OK; s++)
        st = rollout_step(t, s, &clock);
    if (st != FRL_OK) {
        /* The slot is given back, so the run can go on after the caller fixes the cause. */
        frl_ring_abandon(t->ring, t->slot);
        return st;
    }
    memcpy(frl_ring_at(t->ring, t->slot, FRL_RING_BOOTSTRAP_OBS), frl_vec_env_observations(t->venv),
           sizeof(float) * (size_t)t->B * (size_t)t->policy->obs_w);
    return frl_ring_commit(t->ring, t->slot);
}

/* ---- the learner step and the loop ---- */

/* Mean return and length of the last (up to) 100 episodes; NaN before the first. */
static void recent_means(const frl_trainer *t, double *ret, double *len)
{
    int64_t n = t->episodes < FRL_RECENT_EPISODES ? t->episodes : FRL_RECENT_EPISODES;
    double sr = 0, sl = 0;
    for (int64_t i = 0; i < n; i++) {
        sr += t->recent_return[i];
        sl += t->recent_length[i];
    }
    *ret = n ? sr / (double)n : NAN;
    *len = n ? sl / (double)n : NAN;
}

void frl_trainer_refresh_progress(frl_trainer *t)
{
    frl_metrics *m = &t->metrics;
    m->update = t->updates;
    m->env_steps = t->env_steps;
    m->episodes = t->episodes;
    recent_means(t, &m->mean_return, &m->mean_length);
}

static void fill_metrics(frl_trainer *t, const frl_ppo_stats *s)
{
    frl_metrics *m = &t->metrics;
    frl_trainer_refresh_progress(t);
    m->seconds = frl_now() - t->t_start;
    /* Steps since create or load: a resumed run's rate is its own. */
    m->steps_per_second = m->seconds > 0 ? (double)(t->env_steps - t->steps_at_start) / m->seconds : 0;
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
}

/* The progress the sampler writes, read under the async scheduler's lock. */
static void lock_progress(frl_trainer *t)
{
    if (t->as)
        frl_async_lock(t->as);
}

static void unlock_progress(frl_trainer *t)
{
    if (t->as)
        frl_async_unlock(t->as);
}

/* Values, advantages and the update on the CPU; *t_values: the value pass's time. */
static frl_status learn_on_cpu(frl_trainer *t, int32_t slot, int64_t num_updates,
                               frl_ppo_stats *s, double *t_values)
{
    double t0 = frl_now();
    frl_status st = frl_ppo_values(&t->ppo, slot, t->err);
    if (st != FRL_OK)
        return st;
    frl_ppo_bootstrap(&t->ppo, slot);
    *t_values = frl_now() - t0;
    frl_ppo_advantages(&t->ppo, slot);
    return frl_ppo_update(&t->ppo, slot, t->updates, num_updates, t->seed, s, t->err);
}

frl_status frl_trainer_learn_slot(frl_trainer *t, int32_t slot, int64_t num_updates)
{
    frl_ppo_stats s;
    double t_values = 0;
    frl_status st = t->ppo.dev ? frl_ppo_device_update(&t->ppo, slot, t->updates, num_updates,
                                                       t->seed, &s, t->err)
                               : learn_on_cpu(t, slot, num_updates, &s, &t_values);
    if (st != FRL_OK) {
        frl_ring_release(t->ring, slot);
        return st;
    }
    if (st == FRL_OK && t->policy->obs_norm) {
        frl_obsnorm_update(&t->policy->norm, frl_ring_at(t->ring, slot, FRL_RING_OBSERVATIONS),
                           (int64_t)t->T * t->B);
        frl_obsnorm_freeze(&t->policy->norm);
        t->policy->dev_norm_stale = 1;
    }
    frl_ring_release(t->ring, slot);
    t->updates++;
    lock_progress(t);
    fill_metrics(t, &s);
    unlock_progress(t);
    /* Sync: acting's time plus the value pass; async: the sampler's roles report their
     * own busy time, so the value pass counts as learning. */
    if (t->as)
        t->metrics.time_backward += t_values;
    else
        t->metrics.time_inference += t_values;
    if (st == FRL_OK && frl_find_nonfinite(t->policy->params, (int64_t)t->policy->num_params) >= 0)
        st = frl_fail(t->err, FRL_ERR_NONFINITE,
                      "training diverged: a parameter became non-finite at update %lld (lower "
                      "train.lr or set train.max_grad_norm)", (long long)t->updates);
    return st;
}

static frl_status learn(frl_trainer *t, int64_t num_updates)
{
    int32_t slot;
    frl_status st = frl_ring_acquire_read(t->ring, &slot);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_ring_last_error(t->ring));
    return t->learn(t, slot, num_updates);
}

/* From the episode window itself, which checkpoints keep (the metrics are not). */
int frl_trainer_target_reached(const frl_trainer *t)
{
    double ret, len;
    recent_means(t, &ret, &len);
    return frl_config_is_set(t->cfg, "train.target_return") &&
           t->episodes >= FRL_RECENT_EPISODES &&
           ret >= frl_config_float(t->cfg, "train.target_return");
}

static frl_status start(frl_trainer *t)
{
    if (t->started)
        return FRL_OK;
    frl_status st = frl_vec_env_reset(t->venv, t->seed);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_vec_env_last_error(t->venv));
    t->started = 1;
    return FRL_OK;
}

frl_status frl_trainer_after_update(frl_trainer *t)
{
    frl_status st = frl_trainer_write_outputs(t);
    if (st != FRL_OK)
        return st;
    if (t->cb) {
        int rc = t->cb(t->cb_user, &t->metrics);
        if (rc != 0)
            return frl_fail(t->err, FRL_ERR_CALLBACK, "the metrics callback returned %d", rc);
    }
    return FRL_OK;
}

static frl_status train_sync(frl_trainer *t, int64_t total_steps);

FRL_API frl_status frl_trainer_train(frl_trainer *t, int64_t total_steps)
{
    if (!t)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_train: trainer is NULL");
    if (total_steps < 0)
        return frl_fail(t->err, FRL_ERR_RANGE, "frl_trainer_train: total_steps %lld < 0",
                        (long long)total_steps);
    if (atomic_exchange(&t->running, 1))
        return frl_fail(t->err, FRL_ERR_STATE, "frl_trainer_train: already running");
    frl_status st = t->as ? frl_async_train(t->as, total_steps) : train_sync(t, total_steps);
    atomic_store(&t->running, 0);
    if (st != FRL_OK)
        frl_fail_msg(NULL, st, t->err);
    return st;
}

static frl_status train_sync(frl_trainer *t, int64_t total_steps)
{
    int64_t per = (int64_t)t->T * t->B, num_updates = (total_steps + per - 1) / per;
    frl_status st = start(t);
    while (st == FRL_OK && t->env_steps < total_steps && !frl_trainer_target_reached(t)) {
        if (atomic_exchange(&t->stop, 0))
            return frl_fail(t->err, FRL_ERR_INTERRUPTED, "training stopped by request at %lld steps",
                            (long long)t->env_steps);
        if ((st = rollout(t)) == FRL_OK && (st = learn(t, num_updates)) == FRL_OK)
            st = frl_trainer_after_update(t);
    }
    /* A stop that arrives during the last update is not carried over to the next call. */
    atomic_store(&t->stop, 0);
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
        if (!tr[i]->as)
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

FRL_API frl_status frl_trainer_train_many(frl_trainer *const *trainers, int32_t count,
                                          int64_t total_steps)
{
    const char *who = "frl_trainer_train_many";
    frl_status st = check_many(trainers, count, total_steps, who);
    if (st == FRL_OK)
        st = claim(trainers, count, who);
    if (st != FRL_OK)
        return st;
    struct frl_async *m[FRL_MAX_GROUPS];
    for (int32_t i = 0; i < count; i++)
        m[i] = trainers[i]->as;
    int32_t failed;
    st = frl_async_train_many(m, count, total_steps, &failed);
    for (int32_t i = 0; i < count; i++)
        atomic_store(&trainers[i]->running, 0);
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
