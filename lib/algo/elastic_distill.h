/* Progressive shrinking (once-for-all, Cai et al., 2020) on top of the PPO learner: after
 * each PPO update, sub-policies of the elastic policy (rl/elastic.h) are distilled
 * towards the full policy on the same rollout.
 *
 * Stages, by the share of the run's updates done (elastic.full_fraction,
 * elastic.depth_fraction): the full policy alone (PPO only), then elastic depth (the
 * sub-policies keep the full widths), then elastic depth and width. Entering each
 * elastic stage, every hidden layer's units are reordered by importance.
 *
 * Each distillation minibatch trains the full policy, anchored to its own outputs at
 * the phase's start (so the shared weights do not drift from what PPO learned), and
 * elastic.subnets sub-policies drawn for the stage, the narrowest of the stage always
 * among them (the "sandwich rule" of slimmable networks): KL(teacher || student) of
 * the action distributions plus train.vf_coef x half the squared difference of the
 * values. Every architecture is a task on the pool, and their gradients are added in
 * a fixed order, so the result does not depend on the thread count. */
#ifndef FRL_ALGO_ELASTIC_DISTILL_H
#define FRL_ALGO_ELASTIC_DISTILL_H

#include "algo/ppo.h"
#include "rl/elastic.h"

typedef struct frl_elastic_task frl_elastic_task;

typedef struct frl_elastic_learner {
    frl_elastic e;
    frl_ppo *ppo;             /* the PPO learner this one follows (its policy, rollout) */
    float *heads;             /* the head block */
    float *g_full, *g_heads;  /* a minibatch's gradient */
    frl_adam adam_full, adam_heads;
    float *teacher_out, *teacher_value; /* [N x out_w], [N]: the full policy's outputs */
    float *obs, *xn;          /* a minibatch's observations and normalised input */
    int32_t *rows;            /* the rollout's valid rows, shuffled per epoch */
    frl_elastic_task *tasks;  /* per architecture of a minibatch, its row shards */
    int32_t n_archs;          /* elastic.subnets + 1 (the full policy) */
    float *teach_ws;          /* the teacher's forward pass over a chunk of l->M rows */
    int32_t M;                /* most rows of a minibatch */
    int32_t epochs, minibatches, subnets;
    double full_fraction, depth_fraction;
    int32_t stage;            /* the last stage begun (0: full, 1: depth, 2: width) */
    double kl_full, kl_smallest; /* the last minibatch's, for the logs */
    float *work;              /* reordering's scratch */
    int64_t saved[2];         /* elastic.state while a checkpoint is written */
    /* this minibatch */
    int32_t mb_rows;
    const int32_t *mb;
    const float *in;
    double step_lr;           /* this optimiser step's learning rate and clipping */
    float step_scale;
} frl_elastic_learner;

/* Set up for the PPO learner's policy (its head block initialised from the policy's
 * seed); err says why a policy cannot be elastic. */
frl_status frl_elastic_learner_create(frl_elastic_learner **out, frl_ppo *ppo,
                                      const frl_config *cfg, char *err);
void frl_elastic_learner_destroy(frl_elastic_learner *l, const frl_allocator *al);

/* The distillation phase after PPO's update of the same slot (its valid rows). */
frl_status frl_elastic_learner_learn(frl_elastic_learner *l, int32_t slot, int64_t update_index,
                                     int64_t num_updates, uint64_t seed, char *err);

/* Checkpoint sections (elastic.heads, elastic.adam, elastic.state) and their restore. */
void frl_elastic_learner_save(frl_elastic_learner *l, frl_section *s, int32_t *n);
frl_status frl_elastic_learner_load(frl_elastic_learner *l, const frl_container *c, char *err);

#endif
