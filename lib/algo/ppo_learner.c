/* The PPO learner's table (lib/algo/learner.h): settings, the CPU or device update,
 * checkpoints. PPO and IMPALA share it (train.algo=impala sets IMPALA's loss and
 * V-trace); A2C builds on its functions. */
#include <string.h>
#include <time.h>

#include "algo/elastic_distill.h"
#include "algo/ppo_device.h"
#include "algo/ppo_learner.h"
#include "core/dist.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void read_ppo_settings(const frl_config *c, frl_ppo_settings *s)
{
    s->epochs = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_EPOCHS);
    s->minibatches = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_MINIBATCHES);
    s->lr = frl_cfg_float(c, FRL_KEY_TRAIN_LR);
    s->clip = frl_cfg_float(c, FRL_KEY_TRAIN_CLIP);
    s->ent_coef = frl_cfg_float(c, FRL_KEY_TRAIN_ENT_COEF);
    s->vf_coef = frl_cfg_float(c, FRL_KEY_TRAIN_VF_COEF);
    s->max_grad_norm = frl_cfg_float(c, FRL_KEY_TRAIN_MAX_GRAD_NORM);
    s->gamma = frl_cfg_float(c, FRL_KEY_TRAIN_GAMMA);
    s->lambda = frl_cfg_float(c, FRL_KEY_TRAIN_GAE_LAMBDA);
    s->adam_eps = frl_cfg_float(c, FRL_KEY_TRAIN_ADAM_EPS);
    s->target_kl = frl_cfg_float(c, FRL_KEY_TRAIN_TARGET_KL);
    s->use_target_kl = frl_cfg_is_set(c, FRL_KEY_TRAIN_TARGET_KL);
    s->clip_value = frl_cfg_bool(c, FRL_KEY_TRAIN_CLIP_VALUE);
    s->norm_adv = frl_cfg_bool(c, FRL_KEY_TRAIN_NORM_ADV);
    s->anneal_lr = frl_cfg_bool(c, FRL_KEY_TRAIN_ANNEAL_LR);
    s->impala = frl_cfg_choice(c, FRL_KEY_TRAIN_ALGO) == FRL_TRAIN_ALGO_IMPALA;
    /* IMPALA is defined with V-trace's targets and advantages. The async sampler's
     * rollouts lag the learner by about one update: PPO on them is decoupled unless the
     * caller says otherwise (bench/async_learning.py's ablation: with GAE it then learns as sync
     * does; V-trace's advantages were the earlier default and learned far less). */
    s->vtrace = s->impala ||
                frl_cfg_choice(c, FRL_KEY_TRAIN_ADVANTAGE) == FRL_TRAIN_ADVANTAGE_VTRACE;
    int async = frl_cfg_choice(c, FRL_KEY_SAMPLER_MODE) == FRL_SAMPLER_MODE_ASYNC;
    s->decoupled = !s->impala && (frl_cfg_is_set(c, FRL_KEY_TRAIN_DECOUPLED)
                                      ? frl_cfg_bool(c, FRL_KEY_TRAIN_DECOUPLED)
                                      : async);
    s->rho_bar = frl_cfg_float(c, FRL_KEY_TRAIN_VTRACE_RHO);
    s->c_bar = frl_cfg_float(c, FRL_KEY_TRAIN_VTRACE_C);
    s->bptt = (int32_t)frl_cfg_int(c, FRL_KEY_TRAIN_BPTT);
}

static void ppo_storage(const frl_config *cfg, frl_storage_need *need)
{
    (void)cfg;
    need->kind = FRL_STORAGE_ROLLOUT;
}

/* An elastic policy's distillation runs on the CPU: under runtime.device=auto its
 * networks leave the device, and runtime.device=cuda is refused. */
static frl_status elastic_placement(const frl_learner_ctx *c, char *err)
{
    if (!c->policy->dev)
        return FRL_OK;
    if (!c->rt->device.automatic)
        return frl_fail(err, FRL_ERR_UNSUPPORTED,
                        "elastic policies (elastic.widths) train on the CPU for now: use "
                        "runtime.device=cpu or auto");
    frl_policy_leave_device(c->policy);
    frl_log(c->rt, FRL_LOG_INFO, "elastic policy: runtime.device=auto: on the CPU (the "
            "distillation of sub-policies runs there)");
    return FRL_OK;
}

static int is_elastic(const frl_config *cfg)
{
    return frl_cfg_list(cfg, FRL_KEY_ELASTIC_WIDTHS).n > 0;
}

/* dist.mode=ddppo: CPU learners on every rank (the grouped sums of algo/ppo_groups.c
 * have no device path yet), MLP policies. */
static frl_status dist_placement(const frl_learner_ctx *c, char *err)
{
    if (is_elastic(c->cfg))
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "dist.mode=ddppo: elastic policies "
                        "(elastic.widths) do not train distributed yet");
    if (!c->policy->dev)
        return FRL_OK;
    if (!c->rt->device.automatic)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "dist.mode=ddppo learns on the CPU of each "
                        "rank for now: use runtime.device=cpu or auto");
    frl_policy_leave_device(c->policy);
    frl_log(c->rt, FRL_LOG_INFO, "dist.mode=ddppo: runtime.device=auto: on the CPU (the "
            "distributed learner runs there)");
    return FRL_OK;
}

/* The learner on the policy's device. One the device cannot hold (no memory for its
 * rollout and minibatch buffers) fails on runtime.device=cuda; on auto the networks
 * leave the device and the CPU learns, as for the policy itself (rl/policy.c). */
static frl_status device_learner(frl_ppo *p, const frl_learner_ctx *c, char *err)
{
    frl_status st = frl_ppo_device_create(p, err);
    if (st == FRL_OK || !c->rt->device.automatic)
        return st;
    frl_log(c->rt, FRL_LOG_INFO, "runtime.device=auto: on the CPU, since %s", frl_last_error());
    frl_policy_leave_device(c->policy);
    if (err)
        err[0] = '\0';
    return FRL_OK;
}

frl_status frl_ppo_learner_create(frl_learner *l, const frl_learner_ctx *c,
                                  const frl_ppo_settings *settings, char *err)
{
    frl_ppo_settings local = *settings;
    const frl_ppo_settings *s = &local;
    local.dist = c->dist;
    local.group_envs = (int32_t)frl_cfg_int(c->cfg, FRL_KEY_DIST_GROUP_ENVS);
    int32_t reduce = frl_cfg_choice(c->cfg, FRL_KEY_DIST_REDUCE);
    /* auto: slices from 8 ranks, where the bytes they save outweigh their second round
     * of messages on a network (doc/distributed.md's model; on one machine the gather
     * measured faster at 4 ranks) */
    local.reduce_slices = c->dist && (reduce == FRL_DIST_REDUCE_SLICES ||
                                      (reduce == FRL_DIST_REDUCE_AUTO && c->dist->size >= 8));
    char algo[16], head[16];
    if (c->policy->head != FRL_POLICY_HEAD_ACTOR_CRITIC)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT,
                        "train.algo=%s learns an actor and a critic, and policy.head=%s is a "
                        "Q-network (use train.algo=dqn, or policy.head=actor_critic)",
                        frl_cfg_choice_text(c->cfg, FRL_KEY_TRAIN_ALGO, algo, sizeof algo),
                        frl_cfg_choice_text(c->cfg, FRL_KEY_POLICY_HEAD, head, sizeof head));
    frl_ppo *p = frl_alloc(&c->rt->alloc, sizeof *p, FRL_CACHE_LINE);
    if (!p)
        return frl_fail(err, FRL_ERR_NOMEM, "PPO learner: out of memory");
    memset(p, 0, sizeof *p);
    l->impl = p;
    frl_status st = c->dist ? dist_placement(c, err)
                    : is_elastic(c->cfg) ? elastic_placement(c, err) : FRL_OK;
    if (st == FRL_OK)
        st = frl_ppo_init(p, c->rt, c->policy, c->store->ring, s, err);
    if (st == FRL_OK)
        st = device_learner(p, c, err);
    if (st == FRL_OK && is_elastic(c->cfg))
        st = frl_elastic_learner_create(&p->elastic, p, c->cfg, err);
    /* One network: the policy's actor and critic share its flat vector. */
    frl_learner_add_net(l, "policy", FRL_NET_ACTOR_CRITIC, -1, c->policy->params,
                        (int64_t)c->policy->num_params);
    return st;
}

/* IMPALA's loss is defined on V-trace's advantages and is never decoupled: a setting
 * asking otherwise would be ignored, so it is refused instead. */
static frl_status impala_conflicts(const frl_config *c, char *err)
{
    if (frl_cfg_choice(c, FRL_KEY_TRAIN_ALGO) != FRL_TRAIN_ALGO_IMPALA)
        return FRL_OK;
    if (frl_cfg_is_set(c, FRL_KEY_TRAIN_ADVANTAGE) &&
        frl_cfg_choice(c, FRL_KEY_TRAIN_ADVANTAGE) != FRL_TRAIN_ADVANTAGE_VTRACE)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "train.algo=impala learns from "
                        "V-trace's advantages; train.advantage=gae is for train.algo=ppo or a2c");
    if (frl_cfg_is_set(c, FRL_KEY_TRAIN_DECOUPLED) && frl_cfg_bool(c, FRL_KEY_TRAIN_DECOUPLED))
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "train.algo=impala has its own loss; "
                        "train.decoupled=true is decoupled PPO's (train.algo=ppo)");
    return FRL_OK;
}

static frl_status ppo_create(frl_learner *l, const frl_learner_ctx *c, char *err)
{
    frl_status st = impala_conflicts(c->cfg, err);
    if (st != FRL_OK)
        return st;
    frl_ppo_settings s;
    read_ppo_settings(c->cfg, &s);
    return frl_ppo_learner_create(l, c, &s, err);
}

void frl_ppo_learner_destroy(frl_learner *l)
{
    frl_ppo *p = l->impl;
    if (!p)
        return;
    frl_ppo_device_free(p);
    frl_elastic_learner_destroy(p->elastic, &l->rt->alloc);
    if (p->rt)
        frl_ppo_free(p);
    frl_free(&l->rt->alloc, p);
    l->impl = NULL;
}

/* Values, advantages and the update on the CPU, timing the value pass. */
static frl_status learn_on_cpu(frl_ppo *p, const frl_batch *b, frl_ppo_stats *s, char *err)
{
    double t0 = now_s();
    p->steps_used = b->steps; /* before the bootstrap values: a frame stack's last step */
    frl_status st = frl_ppo_values(p, b->slot, err);
    if (st != FRL_OK)
        return st;
    frl_ppo_bootstrap(p, b->slot);
    double t_values = now_s() - t0;
    frl_ppo_advantages(p, b->slot);
    st = frl_ppo_update(p, b->slot, b->update_index, b->num_updates, b->seed, s, err);
    s->time_values = t_values;
    if (st == FRL_OK && p->elastic)
        st = frl_elastic_learner_learn(p->elastic, b->slot, b->update_index, b->num_updates,
                                       b->seed, err);
    return st;
}

frl_status frl_ppo_learner_learn(frl_learner *l, const frl_batch *b, frl_learn_stats *out,
                                 char *err)
{
    frl_ppo *p = l->impl;
    out->time_values = 0;
    frl_ppo_set_state0(p, b->state0); /* a core's state or a stack's frames at step 0 */
    /* Only DD-PPO's preemption cuts a rollout short, and dist_placement keeps its learner
     * on the CPU: the device learner reads all T rows, so a cut one must not reach it. */
    if (p->dev && b->steps > 0 && b->steps < p->T)
        return frl_fail(err, FRL_ERR_INTERNAL, "the device learner was given a rollout of %d "
                        "of its %d steps", (int)b->steps, (int)p->T);
    if (p->dev)
        return frl_ppo_device_update(p, b->slot, b->update_index, b->num_updates, b->seed, out,
                                     err);
    return learn_on_cpu(p, b, out, err);
}

/* Adam's moments ("trainer.adam", the name checkpoints have always had) and its step. */
void frl_ppo_learner_save(const frl_learner *l, frl_section *s, int32_t *n, int64_t *steps)
{
    const frl_ppo *p = l->impl;
    *steps = p->adam.t;
    frl_section_add_finite(s, n, "trainer.adam", FRL_DTYPE_F32, 2 * p->grad_stride, p->adam.m);
    if (p->elastic)
        frl_elastic_learner_save(p->elastic, s, n);
}

frl_status frl_ppo_learner_load(frl_learner *l, const frl_container *c, int64_t steps, char *err)
{
    frl_ppo *p = l->impl;
    const frl_section *ad = frl_container_find(c, "trainer.adam", FRL_DTYPE_F32,
                                               2 * (int64_t)p->grad_stride, err);
    if (!ad)
        return FRL_ERR_FORMAT;
    if (!frl_adam_moments_valid(ad->data, (const float *)ad->data + p->grad_stride,
                                p->grad_stride))
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.adam holds a moment out of range (not "
                        "finite, or a negative second moment)");
    p->adam.t = steps;
    memcpy(p->adam.m, ad->data, sizeof(float) * 2 * p->grad_stride);
    p->dev_adam_stale = 1;
    return p->elastic ? frl_elastic_learner_load(p->elastic, c, err) : FRL_OK;
}

/* PPO and IMPALA: one learner (read_ppo_settings tells the losses apart). */
#define PPO_LEARNER_FUNCTIONS                                                              \
    .storage = ppo_storage, .create = ppo_create, .destroy = frl_ppo_learner_destroy,      \
    .learn = frl_ppo_learner_learn, .save = frl_ppo_learner_save,                          \
    .load = frl_ppo_learner_load, .elastic = 1

const frl_learner_ops frl_algo_ppo = {.name = "ppo", PPO_LEARNER_FUNCTIONS};

/* IMPALA's loss has no trust region: several epochs over one batch drive it off (0/10
 * CartPole seeds with PPO's 4, bench/README.md), so it takes one pass per batch, as the
 * paper's learner does, and a smaller entropy bonus (9/10 seeds). Its advantages are
 * V-trace's, said in its settings: a checkpoint's settings set every key, and a saved
 * train.advantage=gae (the key's default) made impala_conflicts refuse the load. */
const frl_learner_ops frl_algo_impala = {
    .name = "impala",
    .settings = "train.epochs=1 train.ent_coef=0.001 train.advantage=vtrace",
    PPO_LEARNER_FUNCTIONS,
};
