/* A policy's networks on the runtime's CUDA device: a model (plugin_api.h), its own
 * stream, parameters, frozen normaliser and inference workspace on the device. This is
 * the one module that calls the plugin's model functions. It knows the networks
 * (nn/net.h) and the device (core/device.h) but not frl_policy, so the policy (policy.c),
 * the asynchronous sampler's inference role (trainer_async.c) and the learner's device
 * module (ppo_device.c) all reach the device through it, and it sits below all three.
 *
 * One host thread at a time per model; two models may be driven from two threads. */
#ifndef FRL_RL_POLICY_DEVICE_H
#define FRL_RL_POLICY_DEVICE_H

#include "core/device.h"
#include "nn/net.h"

typedef struct frl_dev_model {
    const frl_device *device;   /* the runtime's */
    const frl_allocator *alloc; /* this struct's */
    void *model;                /* the plugin's (a learner runs over it: ppo_device.c) */
    int32_t rows;               /* the most rows one forward takes */
    int32_t obs_w, out_w;
    int32_t head;               /* frl_net_desc's: 2, a dueling Q, is combined here */
    int32_t state_w;            /* a recurrent model's state a row (0: none) */
    float *v;                   /* a dueling Q's values when the caller asks none [rows] */
} frl_dev_model;

/* A model of the networks n on device d, taking up to n->max_rows rows a forward; *out
 * stays NULL with FRL_ERR_DEVICE (or FRL_ERR_NOMEM) "<who>: ..." when there is none. */
frl_status frl_dev_model_create(frl_dev_model **out, const frl_device *d,
                                const frl_allocator *al, const frl_net_desc *n, const char *who);
void frl_dev_model_destroy(frl_dev_model *m);

/* Upload the parameters and the frozen normaliser's mean and 1/std (params, or mean and
 * inv_std, may be NULL: kept); clip is the normaliser's. */
frl_status frl_dev_model_load(frl_dev_model *m, const float *params, const float *mean,
                              const float *inv_std, float clip, char *err);

/* Forward rows host observations into out [rows x out_w] and, when value is not NULL,
 * value [rows], m->rows at a time. From page-locked memory the copies need no staging.
 * A Q-head's out holds Q-values (a dueling one's combined here) and it has no values
 * (value must be NULL; a dueling Q's are its V). */
frl_status frl_dev_model_forward(frl_dev_model *m, int64_t rows, const float *obs, float *out,
                                 float *value, char *err);

/* A recurrent model's acting step (plugin_api.h's model_step) over rows host
 * observations, m->rows at a time: state [rows x state_w] is read and replaced, rows
 * whose reset flag is set (reset may be NULL) starting from zeros; out and value as
 * frl_dev_model_forward's. After a failure each row holds its old state (zeros where it
 * reset): the chunks that succeeded before the one that failed hold the new. */
frl_status frl_dev_model_step(frl_dev_model *m, int64_t rows, const float *obs, float *state,
                              const uint8_t *reset, float *out, float *value, char *err);

/* A population's members on m's device (plugin_api.h's model_members): members rows of
 * stride floats from host params; forward_members runs rows host observations, row r
 * with member members[r] (host), the actor's outputs into out [rows x out_w] (host). */
frl_status frl_dev_model_members(frl_dev_model *m, int32_t members, int64_t stride,
                                 const float *params, char *err);
frl_status frl_dev_model_forward_members(frl_dev_model *m, int32_t rows, const int32_t *members,
                                         const float *obs, float *out, char *err);

/* Weights between roles without a round trip through the host (plugin_api.h's
 * model_stage and model_take, whose rules on slots hold): stage copies m's parameters
 * and the given normaliser into snapshot slot; take makes dst's stream wait for src's
 * snapshot and copies it into dst. Neither waits for a stream. */
frl_status frl_dev_model_stage(frl_dev_model *m, int32_t slot, const float *mean,
                               const float *inv_std, float clip, const char *who, char *err);
frl_status frl_dev_model_take(frl_dev_model *dst, const frl_dev_model *src, int32_t slot,
                              char *err);

#endif
