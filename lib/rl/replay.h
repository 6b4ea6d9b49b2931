/* A replay of transitions (x, a, r, x', done) with random access: the storage an
 * off-policy learner declares (frl_storage_need), beside the ring the samplers fill.
 * A circular buffer of `capacity` rows; when full, the oldest row is overwritten. */
#ifndef FRL_RL_REPLAY_H
#define FRL_RL_REPLAY_H

#include "core/runtime.h"
#include "rl/ring.h"

typedef struct frl_replay {
    frl_runtime *rt;
    int64_t capacity, size, next;
    int32_t obs_w, act_w;   /* act_w: 1 for discrete (stored as int32) */
    float *obs, *next_obs, *reward;
    int32_t *action;        /* discrete actions; box actions are act_w floats in fact */
    float *box_action;
    uint8_t *done;          /* terminated (truncation bootstraps, so it is not done) */
} frl_replay;

frl_status frl_replay_create(frl_replay **out, frl_runtime *rt, int64_t capacity, int32_t obs_w,
                             int32_t act_w, int discrete, char *err);
void frl_replay_destroy(frl_replay *r);
/* Append every transition of a committed ring slot: step t's next observation is step
 * t+1's (the bootstrap observations after the last step); rows whose env was reset
 * before the step (reset-step flags) are skipped, as their x' is a new episode's. */
void frl_replay_add_slot(frl_replay *r, frl_ring *ring, int32_t slot);

#endif
