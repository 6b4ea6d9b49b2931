/* PPO and APPO (PPO's clipped loss on V-trace targets) and IMPALA on a device: the
 * rollout is uploaded once, then values, advantages and every minibatch's forward,
 * loss, backward and Adam step run on the device without a round trip to the host;
 * the host reads back the epoch's statistics once per epoch and the parameters once
 * per update. The algorithm's control (shuffles, epochs, learning rate, early stop)
 * stays with the core (lib/algo/ppo_device.c), which drives this through the plugin. */
#ifndef FRL_CUDA_DEV_LEARNER_H
#define FRL_CUDA_DEV_LEARNER_H

#include "core/plugin_api.h"
#include "cuda/dev_net.h"

typedef struct frl_dev_learner {
    frl_dev_net *net;
    frl_dm_learn_desc s;
    int32_t N, minibatches;
    size_t act_bytes;            /* bytes of one row's action */
    /* the rollout */
    float *obs, *log_probs, *rewards, *values, *log_ratio, *adv, *ret, *boot_obs, *vboot;
    void *actions;
    uint8_t *term, *trunc, *reset, *valid;
    int32_t *perm;
    /* A frame stack (frames > 1): obs holds single frames of fw floats, the rollout's,
     * then the bootstrap step's, then state0's, then one of zeros; row i's stack (the
     * rollout's rows, then the bootstrap rows) is frames fidx[i k .. i k + k), oldest
     * first, gathered into whole rows where the networks read them. */
    int32_t frames;
    size_t fw;
    int32_t *fidx, *mb_fidx, *h_fidx;
    /* one minibatch */
    float *mb_obs, *mb_lp, *mb_lr, *mb_adv, *mb_ret, *mb_v;
    void *mb_act;
    uint8_t *mb_valid;
    float *ws;                   /* a training pass of M rows */
    float *d_log_std, *stats, *moments;
    float *grads, *adam_m, *adam_v;
    float *epoch_sums;           /* [minibatches x (FRL_DM_STATS + 1)]: sums and count */
    double *sumsq;               /* [minibatches] */
    frl_dev_adam *adam_c;        /* [minibatches]: each step's constants, uploaded per epoch */
    /* host copies of the epoch's sums, and the step constants to upload */
    float *h_sums;
    double *h_sumsq;
    frl_dev_adam *h_adam;
    /* An epoch's minibatches captured once as a graph (graph_capture) and replayed: the
     * epoch's permutation and step constants are read from device memory, so one graph
     * serves every epoch; the normaliser's clip, passed by value, is its key. */
    void *graph;
    float graph_clip;
    int32_t graphs_off;          /* capture failed or FRL_CUDA_GRAPHS=0: always enqueue */
    int64_t epochs;              /* epochs run, the first of them enqueued op by op */
} frl_dev_learner;

int frl_dev_learner_create(frl_dev_learner **out, frl_dev_net *net,
                           const frl_dm_learn_desc *s, char *err, size_t err_size);
void frl_dev_learner_destroy(frl_dev_learner *l);
int frl_dev_learner_begin(frl_dev_learner *l, const frl_cuda_rollout *r, char *err,
                          size_t err_size);
int frl_dev_learner_epoch(frl_dev_learner *l, const int32_t *perm, double lr, int64_t adam_t,
                          frl_cuda_epoch_stats *out, char *err, size_t err_size);
int frl_dev_learner_adam(frl_dev_learner *l, float *m, float *v, int upload, char *err,
                         size_t err_size);
int frl_dev_learner_end(frl_dev_learner *l, float *params, float *ret, float *values,
                        uint8_t *valid, char *err, size_t err_size);

#endif
