/* Internal view of frl_ring. */
#ifndef FRL_RL_RING_H
#define FRL_RL_RING_H

#include <pthread.h>

#include "core/runtime.h"

typedef struct frl_ring_slot {
    void *array[FRL_RING_ARRAY_COUNT];
    size_t bytes[FRL_RING_ARRAY_COUNT];
    frl_slot_state state;
    uint64_t commit_seq; /* order of commits, so readers take the oldest first */
    float *state0;       /* [envs x state_w]: a recurrent policy's states at the rollout's
                            first step (frl_ring_alloc_state; else NULL) */
    int32_t steps;       /* the steps the rollout collected (0: all; fewer when DD-PPO's
                            preemption stopped it, dist.preempt) */
} frl_ring_slot;

struct frl_ring {
    frl_runtime *rt;
    int32_t slots, steps, envs;
    int32_t obs_w, act_w;   /* act_w: 1 for discrete (int32) */
    int32_t discrete;
    int32_t state_w;        /* floats of recurrent state per env (0: none) */
    void *arena;
    float *states;          /* the slots' state0 arrays, one allocation */
    frl_ring_slot *slot;
    pthread_mutex_t lock;
    uint64_t next_seq;
    char err[FRL_ERRMSG_SIZE];
};

/* FREE -> WRITING for the lowest free slot, or -1 when none is free (the async sampler
 * then waits for the learner; not an error, so nothing is reported). */
int32_t frl_ring_try_acquire_write(frl_ring *r);
/* WRITING -> FREE: a sampler gives up a slot it could not fill. */
frl_status frl_ring_abandon(frl_ring *r, int32_t slot);

/* Give every slot room for the recurrent state of its envs at the rollout's start
 * (state_w floats each; 0 leaves none): the learner runs each column from there. */
frl_status frl_ring_alloc_state(frl_ring *r, int32_t state_w);

/* Typed views of slot s (no checks: for the library's own sampler and learner). */
static inline void *frl_ring_at(frl_ring *r, int32_t s, frl_ring_array_id id)
{
    return r->slot[s].array[id];
}

#endif
