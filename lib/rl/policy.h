/* Internal view of frl_policy: networks over one flat parameter vector, the head,
 * the observation normaliser, and the forward pass shared by acting and learning. */
#ifndef FRL_RL_POLICY_H
#define FRL_RL_POLICY_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/config.h"
#include "core/runtime.h"
#include "core/space.h"
#include "nn/cnn.h"
#include "nn/mlp.h"
#include "nn/rnn.h"
#include "rl/obsnorm.h"
#include "rl/policy_device.h"

struct frl_policy {
    frl_runtime *rt;
    frl_config *cfg;          /* the settings it was built from (policy.* keys) */
    frl_space *obs_space, *act_space;
    int32_t obs_w;            /* floats per observation row: box width, 1 for discrete,
                                 an image's bytes / 4 (frl_space_row_floats) */
    int32_t in_w;             /* the networks' input width: obs_w, n for discrete(n), the
                                 encoder's features for an image (then a mixed row's
                                 vector part) */
    int32_t vec_at, vec_w;    /* a mixed space's vector part: its first float in a row
                                 and its width (0 and 0 for any other space) */
    /* policy.encoder nature or simple: a convolutional stack over image observations at
     * the start of the parameters, its features the networks' input (cnn.layers == 0:
     * none, the networks read the observations). */
    frl_cnn cnn;
    /* policy.frame_stack: frames each row the networks read stacks (1: none). The
     * earlier stack-1 frames of an env are its state when acting (state_w floats) and
     * are gathered from the ring's column when learning (rl/frame_stack.h); the
     * forward pass reads rows of stack * obs_w floats, oldest frame first. */
    int32_t stack;
    int32_t obs_n;            /* discrete(n) observations: n, each index becomes a one-hot
                                 row before the first layer; 0 for a box */
    int32_t out_w;            /* logits (discrete n) or Gaussian means (box width) */
    int32_t discrete;         /* 1: categorical head */
    int32_t shared;           /* 1: trunk + two linear heads */
    /* policy.head: FRL_POLICY_HEAD_ACTOR_CRITIC, _Q (the actor network outputs Q-values;
     * the critic is an empty network of no parameters) or _DUELING_Q (shared trunk, the
     * actor head the advantages A, the critic head V, and Q = V + A - mean(A): the
     * forward pass writes Q over A, the backward pass takes dL/dQ). */
    int32_t head;
    /* Q-policies acting without `deterministic`: the chance of a uniform random action.
     * DQN's learner moves it along its schedule while samplers read it. */
    _Atomic double epsilon;
    /* Per-env epsilons (R2D2's Ape-X actors): a row whose sampling stream (the trainer's
     * env index) is below env_epsilon_n acts with env_epsilon[stream] instead. Set by a
     * learner before sampling starts and cleared when it is destroyed; NULL: none. */
    const double *env_epsilon;
    int64_t env_epsilon_n;
    frl_mlp actor, critic;    /* separate: full networks; shared: one-layer heads */
    frl_mlp trunk;            /* shared only */
    /* policy.core gru or lstm (rl/policy_rnn.h): towers of an encoder and a core (1:
     * shared, 2: the actor's and the critic's), actor and critic being one-layer heads;
     * 0 towers for an MLP policy. */
    int32_t towers;
    frl_mlp enc[2];           /* layers == 0: the core reads the input */
    frl_rnn core[2];
    int32_t state_w;          /* floats of recurrent state per row (0: none) */
    size_t log_std_off;       /* box only: out_w log-stds in params */
    size_t num_params;
    float *params;
    const frl_kernels *k;
    int32_t obs_norm;
    frl_obsnorm norm;
    uint64_t seed;
    uint64_t version;
    int64_t expect_params;    /* loading: the file's parameter count, checked before
                                 anything is allocated for it (-1: not loading) */
    /* runtime.device=cuda: the networks' copy on the device (policy_device.h). The host
     * parameters stay the master copy; the device's is refreshed when p->version moves
     * past dev_version or the frozen normaliser changes (dev_norm_stale). */
    frl_dev_model *dev;       /* NULL on the CPU */
    uint64_t dev_version;
    int32_t dev_norm_stale;
    float *dev_out, *dev_value; /* pinned host buffers of one forward's outputs */
    float *dev_stacked;       /* a frame stack's rows for the device (pinned, NULL without) */
    pthread_mutex_t ws_lock;  /* guards the policy's own act workspace (and the device
                                 model, which one thread at a time may use) */
    float *ws;
    size_t ws_size;
    char err[FRL_ERRMSG_SIZE];
};

/* Pointers into a workspace for one forward (and backward) pass over rows rows. */
typedef struct frl_pass {
    float *xn;            /* [rows x in_w]: normalised observations (obs_norm) or
                             one-hot rows (discrete observations) */
    const float *in;      /* what the networks read: xn or the observations */
    float *trunk_acts, *actor_acts, *critic_acts;
    float *out;           /* [rows x out_w]: logits or means */
    float *value;         /* [rows]: values (critic output, width 1) */
    /* backward only */
    float *d_out, *d_value, *dy, *scratch, *dh;
    const float *w_out_in; /* optional: frl_policy_weights_out_in of the parameters */
    int accumulate;        /* backward: 1 adds to grads, 0 writes every network's
                              gradient (the log-std, if any, is the caller's) */
    const frl_obsnorm *norm; /* the normaliser the forward pass applies (obs_norm only):
                                the policy's own, or an acting snapshot of it */
    /* A conv encoder's stored activations and patch scratch; when training, the
     * gradient of the features (d_in, and d_in2 for the second of two networks) and
     * the encoder's own gradient buffers. NULL without an encoder. */
    float *enc_acts, *enc_work, *d_in, *d_in2, *enc_grad;
    float *stacked;       /* acting with a frame stack: [rows x stack * obs_w] */
} frl_pass;

/* Floats per row of what the forward pass reads: a frame stack's rows hold every
 * frame of the stack. */
static inline int32_t frl_policy_input_row_w(const frl_policy *p)
{
    return p->obs_w * p->stack;
}

/* A conv encoder's features of rows observations (each row_floats floats apart), joined
 * by a mixed row's vector part when the space has one (normalised by norm with
 * policy.obs_norm): then written to join [rows x in_w], each row the features and then
 * the vector. */
const float *frl_policy_encode(const frl_policy *p, const float *params,
                               const frl_obsnorm *norm, int32_t rows, const float *obs,
                               size_t row_floats, float *acts, float *work, float *join);

/* d_in, the gradient of the networks' input [rows x in_w], packed in place into that of
 * the encoder's features alone [rows x cnn.out_w] (a mixed row's vector part, an
 * observation, gets no gradient). */
void frl_policy_feature_grad(const frl_policy *p, int32_t rows, float *d_in);

/* A frame stack's rows for one step: row r's stack is its state (the k - 1 earlier
 * frames, oldest first; zeroed first where reset[r], which may be NULL) and the new
 * frame obs[r], written to stacked [rows x (k obs_w)]; the new frame then joins the
 * state. The CPU's acting and a device's (which takes whole stacks) share it. */
void frl_policy_stack_rows(const frl_policy *p, int32_t rows, const float *obs, float *state,
                           const uint8_t *reset, float *stacked);
/* Its two halves, for a device's caller, which steps the state on only once the forward
 * succeeded (a failed act keeps the frames): the stacks, leaving the state as it is;
 * then the state one frame on. */
void frl_policy_stack_build(const frl_policy *p, int32_t rows, const float *obs,
                            const float *state, const uint8_t *reset, float *stacked);
void frl_policy_stack_advance(const frl_policy *p, int32_t rows, const float *obs,
                              float *state, const uint8_t *reset);

/* The hidden layers' activation that policy.activation names. */
frl_nn_act frl_policy_activation(const frl_config *cfg);

/* What the networks read for rows observations: obs itself, or xn [rows x in_w] filled
 * with one-hot rows (discrete observations) or normalised ones (norm, obs_norm). */
const float *frl_policy_input(const frl_policy *p, const frl_obsnorm *norm, int32_t rows,
                              const float *obs, float *xn);

/* Rows of one chunk when frl_policy_act runs on the policy's own workspace: a batch is
 * acted on in chunks of this many rows (256 for an MLP on a vector). */
int32_t frl_policy_act_chunk_rows(const frl_policy *p);

/* Floats of workspace for rows rows (training adds the backward buffers). */
size_t frl_policy_pass_floats(const frl_policy *p, int32_t rows, int training);
void frl_policy_pass_layout(const frl_policy *p, int32_t rows, int training, float *ws,
                            frl_pass *f);

/* Forward pass of rows observations with parameters params (normally p->params). */
enum { FRL_HEAD_ACTOR = 1u, FRL_HEAD_CRITIC = 2u };
/* Only the heads named (a shared trunk always runs); f->out or f->value of a head not
 * run is left NULL. */
void frl_policy_forward_heads(const frl_policy *p, const float *params, int32_t rows,
                              const float *obs, frl_pass *f, unsigned heads);
void frl_policy_forward(const frl_policy *p, const float *params, int32_t rows,
                        const float *obs, frl_pass *f);

/* One acting step of a policy with state (policy.core or a frame stack) on rows single
 * observations: state [rows x state_w] is read and replaced, rows whose reset flag is
 * set starting from zeros; out and value (heads asked for) point into ws, a workspace
 * of frl_policy_pass_floats(p, rows, 0). */
void frl_policy_state_step(const frl_policy *p, const float *params, const frl_obsnorm *norm,
                           int32_t rows, const float *obs, float *state, const uint8_t *reset,
                           float *ws, unsigned heads, float **out, float **value);

/* Dueling heads (policy.head=dueling_q): Q = V + A - mean(A) written over a [rows x
 * out_w]; and back, dL/dQ in d_out turned into dL/dA there and dL/dV into d_value. */
void frl_policy_dueling_combine(const frl_policy *p, int32_t rows, float *a, const float *v);
void frl_policy_dueling_split(const frl_policy *p, int32_t rows, float *d_out, float *d_value);

/* The weights untransposed, for backward passes that share one set of parameters
 * (see frl_mlp_backward): num_params floats. */
void frl_policy_weights_out_in(const frl_policy *p, const float *params, float *w_out_in);

/* The gradient given f->d_out [rows x out_w] and f->d_value [rows], written into grads
 * (f->accumulate == 0: every network's parameters, not the log-std) or added to it
 * (f->accumulate == 1). d_out and d_value are overwritten. */
void frl_policy_backward(const frl_policy *p, const float *params, float *grads,
                         int32_t rows, frl_pass *f);

/* Action of row i from the head outputs: samples with the row's stream, writes the
 * action and returns its log-probability. params: the parameters that produced out
 * (a Gaussian's log-std is one of them). */
double frl_policy_head_act(const frl_policy *p, const float *params, const float *out,
                           int deterministic,
                           uint64_t stream, uint64_t counter, void *action_row);

/* Observations [batch x obs_w] the policy can act on (as frl_policy_act checks them):
 * FRL_ERR_NONFINITE or FRL_ERR_RANGE naming the row, the message begun with who. */
frl_status frl_policy_check_observations(const frl_policy *p, const float *obs, int64_t batch,
                                         const char *who, char *err);

/* This thread's last error (frl_last_error) into p's message under its lock, for calls
 * that may run on several threads at once (act, save); returns st. */
frl_status frl_policy_keep_failure(frl_policy *p, frl_status st);

/* The same action without its log-probability (acting that keeps none: populations). */
void frl_policy_head_sample(const frl_policy *p, const float *params, const float *out,
                            int deterministic, uint64_t stream, uint64_t counter,
                            void *action_row);

/* Create with a given seed for initialisation and sampling (used by load and trainer). */
frl_status frl_policy_create_seeded(frl_policy **out, frl_runtime *rt, const frl_config *cfg,
                                    const frl_space *obs, const frl_space *act, uint64_t seed,
                                    const char *who);

/* The same, failing with FRL_ERR_FORMAT before allocating if the layout does not have
 * expect_params parameters (for loading files; expect_params >= 0), and then also when
 * the spaces or settings are ones no policy can have. */
frl_status frl_policy_create_checked(frl_policy **out, frl_runtime *rt, const frl_config *cfg,
                                     const frl_space *obs, const frl_space *act, uint64_t seed,
                                     int64_t expect_params, const char *who);

/* The networks' copy on the runtime's CUDA device (p->dev; policy.c over
 * policy_device.h). refresh uploads what changed on the host since the last call
 * (parameters, normaliser); forward runs rows host observations there into out
 * [rows x out_w] and, when value is not NULL, value [rows]. One caller at a time. */
frl_status frl_policy_device_refresh(frl_policy *p, char *err);
frl_status frl_policy_device_forward(frl_policy *p, int64_t rows, const float *obs, float *out,
                                     float *value, char *err);
/* A recurrent policy's acting step there (frl_dev_model_step): state [rows x state_w]
 * read and replaced, rows with reset set (reset may be NULL) starting from zeros. */
frl_status frl_policy_device_step(frl_policy *p, int64_t rows, const float *obs, float *state,
                                  const uint8_t *reset, float *out, float *value, char *err);

/* Rows of the policy's own device model: 16,384, fewer for a pixel encoder, whose
 * stored activations per image are large. */
int32_t frl_policy_device_rows(const frl_policy *p);

/* Move p's networks off the device for good (runtime.device=auto found the CPU faster
 * for the work): acting and learning then run on the CPU. */
void frl_policy_leave_device(frl_policy *p);
/* Another model of p's networks on the device, taking up to rows rows a forward: its
 * own stream, so it can infer while p's model learns (the async sampler's inference
 * role). Free it with frl_dev_model_destroy. */
frl_status frl_policy_device_model(const frl_policy *p, int32_t rows, frl_dev_model **m,
                                   const char *who);

/* The longest settings text a policy or a run writes to a file. */
enum { FRL_SETTINGS_MAX = 8192 };

#endif
