/* The sampler interface: how a trainer's envs are stepped into the ring and when the
 * learner runs (sampler.mode: the synchronous loop, or the asynchronous roles). The
 * trainer looks a table up (frl_sampler_lookup) and calls through it, and never asks
 * which sampler it holds. A sampler sees its trainer only through frl_sampler_host, so
 * samplers sit below the trainer. */
#ifndef FRL_SAMPLER_SAMPLER_H
#define FRL_SAMPLER_SAMPLER_H

#include <stdatomic.h>

#include "core/config.h"
#include "sampler/rollout.h"

enum { FRL_MAX_GROUPS = 64 };

/* What a sampler sees of its trainer: the parts it reads, the bookkeeping it advances,
 * and the trainer's steps it calls (learn releases the slot it is given). */
typedef struct frl_sampler_host {
    frl_runtime *rt;
    const frl_config *cfg;
    frl_policy *policy;
    frl_ring *ring;
    frl_population *population;     /* a neuroevolution learner's (else NULL) */
    int32_t groups, T, B;
    frl_vec_env *const *venvs;      /* [groups] */
    const int32_t *group_first;     /* group g's first column of the ring */
    uint64_t seed;
    /* dist.mode: this rank's first env among all ranks' (its envs' reset streams and
     * action draws are those envs'), and the ranks, whose steps all count */
    int64_t env_first;
    int32_t ranks;
    /* dist.preempt (NULL when off): a rollout's start, each step's end (*stop: collect no
     * more), and its end with the steps collected (the sync sampler calls them) */
    frl_status (*rollout_begins)(void *owner);
    frl_status (*step_done)(void *owner, int32_t steps, int *stop);
    frl_status (*rollout_ends)(void *owner, int32_t steps);
    frl_rollout_book *book;
    frl_metrics *metrics;
    atomic_int *stop;               /* a stop request */
    char *err;                      /* the trainer's error buffer */
    void *owner;
    frl_status (*learn)(void *owner, int32_t slot, int64_t num_updates);
    frl_status (*after_update)(void *owner);
    int (*target_reached)(const void *owner);
    void (*refresh_progress)(void *owner);
} frl_sampler_host;

typedef struct frl_sampler frl_sampler;

typedef struct frl_sampler_ops {
    const char *name;
    /* The vec envs (groups) and ring slots it works with under these settings. */
    int32_t (*groups)(const frl_config *cfg);
    int32_t (*slots)(const frl_config *cfg, int32_t groups);
    int32_t max_groups;         /* vec envs it can step (a host's several need async) */
    /* The learner runs beside sampling: a value pass counts as learning time, and the
     * policy lag of each update is measured. */
    int32_t overlaps_learning;
    /* It carries a recurrent policy's state from step to step (frl_rollout_book). */
    int32_t carries_state;
    /* Why a trainer with this sampler cannot be checkpointed (NULL: it can). */
    const char *no_save;
    frl_status (*create)(frl_sampler **out, frl_sampler_host *h);
    void (*destroy)(frl_sampler *s);
    /* Train count samplers (of trainers on one runtime) to total_steps each; *failed:
     * the index of the one whose error ended it (-1 if none). train_many may be NULL:
     * the sampler trains one trainer at a time. */
    frl_status (*train)(frl_sampler *s, int64_t total_steps);
    frl_status (*train_many)(frl_sampler *const *s, int32_t count, int64_t total_steps,
                             int32_t *failed);
    /* Held while the learner reads progress the sampler writes (may be no-ops). */
    void (*lock)(frl_sampler *s);
    void (*unlock)(frl_sampler *s);
} frl_sampler_ops;

/* Every sampler object starts with this header. */
struct frl_sampler {
    const frl_sampler_ops *ops;
    frl_sampler_host *h;
};

/* The loop of a sampler that updates on the calling thread: update(arg) (a rollout or
 * an evaluation, and the learn step) then the host's after_update, until total_steps,
 * the target, an error or a stop request (FRL_ERR_INTERRUPTED). */
frl_status frl_sampler_loop(frl_sampler_host *h, int64_t total_steps,
                            frl_status (*update)(void *arg), void *arg);
/* A lock and unlock that do nothing (a sampler whose learner runs on its thread). */
void frl_sampler_no_lock(frl_sampler *s);

/* The table of sampler.mode's choice in cfg (lib/sampler/sampler.c). */
const frl_sampler_ops *frl_sampler_lookup(const frl_config *cfg);

extern const frl_sampler_ops frl_sampler_sync;
extern const frl_sampler_ops frl_sampler_async;
/* What a learner with population storage (train.algo=es|ga) trains with, whatever
 * sampler.mode says: it evaluates members, not a policy's rollouts. */
extern const frl_sampler_ops frl_sampler_population;

#endif
