/* A2C: synchronous advantage actor-critic (Mnih et al., 2016, synchronous form), with
 * Stable-Baselines3's settings: 5 steps of 8 envs per update, one gradient step over
 * the whole rollout, n-step returns (GAE with lambda 1), the plain policy gradient
 * -A log pi with no clipping and no advantage normalisation, value coefficient 0.5 on
 * SB3's mean squared error (train.vf_coef=1 here: this learner's value loss is half the
 * squared error, so 1 x 0.5 (v - R)^2 = SB3's 0.5 x (v - R)^2), no entropy bonus,
 * gradients clipped at norm 0.5, a constant learning rate of 7e-4.
 *
 * SB3 steps with RMSprop (alpha 0.99, eps 1e-5); this learner steps with the shared
 * Adam at SB3's learning rate and eps, since RMSprop would be a second optimiser in
 * the PPO learner this one reuses (its update, checkpoint and device paths). */
#include <math.h>

#include "algo/ppo_learner.h"

static void a2c_storage(const frl_config *cfg, frl_storage_need *need)
{
    (void)cfg;
    need->kind = FRL_STORAGE_ROLLOUT;
}

/* A2C's advantages are GAE's and its loss is not decoupled PPO's: a setting asking
 * otherwise would be ignored, so it is refused instead (as IMPALA refuses GAE). */
static frl_status a2c_conflicts(const frl_config *c, char *err)
{
    if (frl_cfg_is_set(c, FRL_KEY_TRAIN_ADVANTAGE) &&
        frl_cfg_choice(c, FRL_KEY_TRAIN_ADVANTAGE) != FRL_TRAIN_ADVANTAGE_GAE)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "train.algo=a2c learns from GAE's "
                        "advantages; train.advantage=vtrace is for train.algo=ppo or impala");
    if (frl_cfg_is_set(c, FRL_KEY_TRAIN_DECOUPLED) && frl_cfg_bool(c, FRL_KEY_TRAIN_DECOUPLED))
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "train.algo=a2c has its own loss; "
                        "train.decoupled=true is decoupled PPO's (train.algo=ppo)");
    return FRL_OK;
}

/* The settings from the resolved config (a2c.settings under the caller's), and what
 * makes the update A2C's whatever the keys say: one epoch of one minibatch (the ratio
 * is then 1 and PPO's clip never acts), IMPALA's -A log pi, GAE's advantages (A2C is
 * on-policy: no V-trace, whichever sampler runs it). */
static frl_status a2c_create(frl_learner *l, const frl_learner_ctx *c, char *err)
{
    const frl_config *cfg = c->cfg;
    frl_status st = a2c_conflicts(cfg, err);
    if (st != FRL_OK)
        return st;
    frl_ppo_settings s = {0};
    s.epochs = 1;
    s.minibatches = 1;
    s.lr = frl_cfg_float(cfg, FRL_KEY_TRAIN_LR);
    s.ent_coef = frl_cfg_float(cfg, FRL_KEY_TRAIN_ENT_COEF);
    s.vf_coef = frl_cfg_float(cfg, FRL_KEY_TRAIN_VF_COEF);
    s.max_grad_norm = frl_cfg_float(cfg, FRL_KEY_TRAIN_MAX_GRAD_NORM);
    s.gamma = frl_cfg_float(cfg, FRL_KEY_TRAIN_GAMMA);
    s.lambda = frl_cfg_float(cfg, FRL_KEY_TRAIN_GAE_LAMBDA);
    s.adam_eps = frl_cfg_float(cfg, FRL_KEY_TRAIN_ADAM_EPS);
    s.norm_adv = frl_cfg_bool(cfg, FRL_KEY_TRAIN_NORM_ADV);
    s.anneal_lr = frl_cfg_bool(cfg, FRL_KEY_TRAIN_ANNEAL_LR);
    s.bptt = (int32_t)frl_cfg_int(cfg, FRL_KEY_TRAIN_BPTT);
    s.impala = 1;
    /* Nothing is clipped: a ratio beyond no bound, so clip_fraction stays 0 under the
     * async sampler too, whose rows older weights acted (rho != 1; approx_kl shows it). */
    s.clip = HUGE_VAL;
    return frl_ppo_learner_create(l, c, &s, err);
}

const frl_learner_ops frl_algo_a2c = {
    .name = "a2c",
    .settings = "train.rollout=5 train.num_envs=8 train.lr=7e-4 train.gae_lambda=1 "
                "train.ent_coef=0 train.vf_coef=1 train.max_grad_norm=0.5 train.adam_eps=1e-5 "
                "train.anneal_lr=false train.norm_adv=false",
    .storage = a2c_storage,
    .create = a2c_create,
    .destroy = frl_ppo_learner_destroy,
    .learn = frl_ppo_learner_learn,
    .save = frl_ppo_learner_save,
    .load = frl_ppo_learner_load,
    .elastic = 1,
};
