/* The interface between libfastrl and its CUDA plugin (libfastrl-cuda.so.0), which the
 * core loads with dlopen when a runtime asks for runtime.device=cuda or auto. The core
 * links nothing of CUDA; everything that touches the driver lives behind this table.
 * Internal: both sides are built from this tree, and the ABI number guards against a
 * plugin from another build (so the table may share internal structs such as frl_mlp).
 * It sits in core beside its loader (device.c), since a runtime opens its device.
 *
 * The plugin holds a policy's networks on the device (a model) and a PPO/APPO learner
 * over them. The core keeps the algorithm's control (epochs, shuffles, learning-rate
 * schedule, early stop, statistics) and a host copy of the parameters, refreshed after
 * every update, so saving, acting through the public API and the metrics work as on
 * the CPU. Calls return 0 on success, else nonzero with a sentence in err.
 *
 * Streams: every model has its own stream (and cuBLAS handle), and its learner runs on
 * the model's stream. A role is a model: the trainer's model carries the learner, and the
 * asynchronous sampler infers on a second model, so inference runs beside the learner's
 * epochs instead of queueing behind them. One host thread at a time per model; two
 * models may be driven from two threads. Weights pass between roles on the device:
 * the learner's model stages a snapshot of its parameters and records an event, and the
 * sampler's model takes it on its own stream after waiting for that event, so neither
 * host thread waits for the other's stream. */
#ifndef FRL_CORE_PLUGIN_API_H
#define FRL_CORE_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

/* 7: the RUNS path, and frl_net_desc carries a pixel encoder (frl_cnn).
 * 8: the learner's frl_dm_loss and frl_dm_adv_params carry decoupled PPO (lagged
 *    rollouts of the async sampler), and the loss op reads the rows' log-ratios.
 * 11: frl_net_desc carries the head (Q-values, dueling) and recurrent towers, and
 *    model_step runs a recurrent model's acting step. */
#define FRL_CUDA_PLUGIN_ABI 11u
#define FRL_CUDA_PLUGIN_SYMBOL "frl_cuda_plugin_get"
#define FRL_CUDA_PLUGIN_FILE "libfastrl-cuda.so.0"

/* What the plugin can run. */
enum { FRL_CUDA_CAP_INFERENCE = 1u, FRL_CUDA_CAP_LEARNER = 2u };

/* How model_forward runs a batch (lib/cuda/model_forward.c says what each costs):
 * LAUNCH  upload, one product and one bias kernel a layer, download: op by op;
 * GRAPH   the same captured once per batch size as a graph and replayed, through the
 *         model's page-locked staging buffers (batches up to FRL_CUDA_STAGE_ROWS);
 * FUSED   upload, one kernel for the whole forward (a block per row), download, as a
 *         graph (widths up to 1024, batches up to FRL_CUDA_STAGE_ROWS);
 * MAPPED  the fused kernel reading and writing page-locked host memory directly: one
 *         launch and a synchronise, no copies;
 * STREAMS the batch in chunks over two streams, so one chunk's copies overlap another's
 *         products (page-locked obs and out);
 * RUNS    one kernel, a block per 16 rows sharing each weight load, reading and writing
 *         page-locked host memory directly (widths up to 256; pageable memory goes
 *         through the staging buffers, batches up to FRL_CUDA_STAGE_ROWS);
 * AUTO    chosen by the batch's size and the memory it is in. A path that cannot run a
 *         call (too wide, too many rows, pageable memory) falls back to LAUNCH. */
enum {
    FRL_CUDA_PATH_AUTO = 0,
    FRL_CUDA_PATH_LAUNCH,
    FRL_CUDA_PATH_GRAPH,
    FRL_CUDA_PATH_FUSED,
    FRL_CUDA_PATH_MAPPED,
    FRL_CUDA_PATH_STREAMS,
    FRL_CUDA_PATH_RUNS, /* ABI 7 */
    FRL_CUDA_PATHS
};
enum { FRL_CUDA_STAGE_ROWS = 1024 };

/* Described above the core and only passed through it: a policy's networks
 * (frl_net_desc, lib/nn/net.h) and a learner's shape and settings (frl_dm_learn_desc,
 * lib/nn/dev_math.h). The loader (device.c) calls only the device part of the table, so
 * this header needs nothing above core; the model and learner parts are called from the
 * policy's and the learner's device modules (lib/rl/policy_device.c, ppo_device.c). */
struct frl_net_desc;
struct frl_dm_learn_desc;

/* One rollout in host memory (a ring slot), rows t * B + b. */
typedef struct frl_cuda_rollout {
    const float *obs;            /* [T*B x obs_w] */
    const void *actions;         /* int32 [T*B] or float [T*B x out_w] */
    const float *log_probs;      /* [T*B], of the policy that acted */
    const float *rewards;        /* [T*B], normalised if the trainer does */
    const uint8_t *terminated, *truncated, *reset; /* [T*B] */
    const float *bootstrap_obs;  /* [B x obs_w] */
    /* ABI 9: a frame-stacking policy's rows (obs_w floats: k frames of fw) are rebuilt
     * from single frames: obs and bootstrap_obs then hold one frame a row ([T*B x fw],
     * [B x fw]) and state0 each env's k - 1 frames before step 0 ([B x (k-1) fw],
     * oldest first, zeros before an episode's start). NULL without a stack. */
    const float *state0;
} frl_cuda_rollout;

/* Epoch statistics, summed over the epoch's valid rows (divide by count). */
typedef struct frl_cuda_epoch_stats {
    double policy_loss, value_loss, entropy, approx_kl, clip_fraction, count;
    double grad_norm; /* of the epoch's last minibatch, before clipping */
} frl_cuda_epoch_stats;

typedef struct frl_cuda_plugin {
    uint32_t abi;          /* FRL_CUDA_PLUGIN_ABI */
    uint32_t capabilities; /* FRL_CUDA_CAP_* */
    const char *backend;   /* its ops: "frl_dev_ops_cuda", or "frl_dev_ops_host" (test build) */
    /* Find the driver and count the devices. 0 on success with *count >= 1; otherwise
     * nonzero with a sentence in err (no driver, no device, a driver too old). */
    int (*probe)(int32_t *count, char *err, size_t err_size);
    /* The name of device index ("NVIDIA H100 80GB HBM3"), its compute capability and
     * memory; 0 on success. */
    int (*describe)(int32_t index, char *name, size_t name_size, int32_t *cc_major,
                    int32_t *cc_minor, uint64_t *memory_bytes);

    /* A context on device `device`; tf32 != 0 allows TensorFloat-32 in the products of
     * every model created in it. */
    int (*open)(void **ctx, int32_t device, int32_t tf32, char *err, size_t err_size);
    void (*close)(void *ctx);
    /* Page-locked host memory, from which transfers run asynchronously; NULL with a
     * sentence in err when there is none. Any thread. */
    void *(*alloc_pinned)(void *ctx, size_t bytes, char *err, size_t err_size);
    void (*free_pinned)(void *ctx, void *p);

    /* A model: its stream, the parameters, the frozen observation normaliser and an
     * inference workspace of d->max_rows rows, on the device. */
    int (*model_create)(void *ctx, const struct frl_net_desc *d, void **model, char *err,
                        size_t err_size);
    void (*model_destroy)(void *model);
    /* Upload the parameters (params may be NULL: keep them) and the normaliser's frozen
     * mean and 1/std (NULL when the policy does not normalise). */
    int (*model_load)(void *model, const float *params, const float *norm_mean,
                      const float *norm_inv_std, float norm_clip, char *err, size_t err_size);
    /* Forward rows <= max_rows host observations: out [rows x out_w] (logits or means)
     * and, when value is not NULL, the critic's values [rows], into host memory. The
     * upload, the layers and the download are queued on the model's stream and waited
     * for once; from page-locked obs and out the copies run without staging. */
    int (*model_forward)(void *model, int32_t rows, const float *obs, float *out,
                         float *value, char *err, size_t err_size);

    /* Snapshots for another model (another role) to take without a round trip through
     * the host. model_stage copies this model's parameters into its snapshot `slot` (0
     * or 1), with the frozen normaliser's mean and 1/std from host memory (NULL: the
     * policy does not normalise; they must stay unchanged until the model's stream next
     * syncs), and records the slot's event; model_take makes dst's stream wait for that
     * event and copies the snapshot into dst's parameters and normaliser, so dst's next
     * forward uses them. Neither waits for a stream. The caller must not stage a slot
     * again while a take from it may be running, i.e. before dst's next forward after
     * the take has returned (the core's acting weights guarantee it: a slot is staged
     * only once no sampler holds it), nor destroy the staging model before dst's next
     * forward or dst's destruction (the async sampler's model goes first). */
    int (*model_stage)(void *model, int32_t slot, const float *norm_mean,
                       const float *norm_inv_std, float norm_clip, char *err, size_t err_size);
    int (*model_take)(void *dst, void *src, int32_t slot, char *err, size_t err_size);

    /* A learner training the model's parameters in place (with its own Adam state). */
    int (*learner_create)(void *model, const struct frl_dm_learn_desc *d, void **learner,
                          char *err, size_t err_size);
    void (*learner_destroy)(void *learner);
    /* Upload a rollout and compute its values, log-ratios (V-trace) and advantages. */
    int (*learner_begin)(void *learner, const frl_cuda_rollout *r, char *err,
                         size_t err_size);
    /* One epoch over the permutation perm [T*B] (host): minibatch m is rows
     * perm[m*M .. m*M+M). adam_t: the step count of the first minibatch's update. */
    int (*learner_epoch)(void *learner, const int32_t *perm, double lr, int64_t adam_t,
                         frl_cuda_epoch_stats *out, char *err, size_t err_size);
    /* The updated parameters into params (host), and the rollout's value targets, values
     * and valid flags [T*B] (host; any may be NULL) for the explained variance. */
    int (*learner_end)(void *learner, float *params, float *ret, float *values,
                       uint8_t *valid, char *err, size_t err_size);
    /* Adam's moments [num_params] each: upload != 0 sets the device's from m and v (a
     * run continued from a file), 0 reads them into m and v (for saving). */
    int (*learner_adam)(void *learner, float *m, float *v, int upload, char *err,
                        size_t err_size);

    /* Fix the path model_forward takes (FRL_CUDA_PATH_*; AUTO, the default, chooses per
     * call); 0 on success. The environment's FRL_CUDA_FORWARD=launch|graph|fused|mapped|
     * streams|runs sets the default of every model, for benchmarks. */
    int (*model_path)(void *model, int32_t path, char *err, size_t err_size);
    /* The path the model's last forward took. */
    int32_t (*model_last_path)(void *model);

    /* ABI 6: a population of the model's networks. model_members uploads members rows of
     * stride floats each (host params [members x stride]; each row a prefix of the
     * parameter vector holding the trunk and the actor). model_forward_members runs
     * rows host observations, row r with member members[r]'s parameters (host int32,
     * each in [0, members)), the actor's outputs into out [rows x out_w] (host); any
     * rows (in chunks of max_rows), the fused kernel (every width must fit it, else 1
     * with the reason). model_members returns 2 with the reason for a network the fused
     * kernel cannot run (an encoder, a core, a width or depth over its limits): the
     * caller may act on the CPU. Both wait for the stream. */
    int (*model_members)(void *model, int32_t members, int64_t stride, const float *params,
                         char *err, size_t err_size);
    int (*model_forward_members)(void *model, int32_t rows, const int32_t *members,
                                 const float *obs, float *out, char *err, size_t err_size);

    /* ABI 11: a recurrent model (frl_net_desc's towers) one acting step on rows <=
     * max_rows host observations: state [rows x state_w] (host) is read and replaced by
     * the next state (a row whose episode starts here must hold zeros: the caller's
     * reset), out [rows x out_w] and, when value is not NULL, value [rows] receive the
     * heads' outputs (a dueling Q's A and V; a Q-head has no value). Waits for the
     * stream. After a failure state is as it was (the new one lands in the model's own
     * buffer first). model_forward refuses such a model,
     * and learner_create refuses it and Q-heads (their learners run on the CPU). */
    int (*model_step)(void *model, int32_t rows, const float *obs, float *state, float *out,
                      float *value, char *err, size_t err_size);
} frl_cuda_plugin;

typedef const frl_cuda_plugin *(*frl_cuda_plugin_get_fn)(void);

#endif
