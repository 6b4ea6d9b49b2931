/* Elastic policies (once-for-all, Cai et al., 2020): one MLP actor-critic whose
 * sub-policies of any depth and of narrower widths share its weights.
 *
 * A sub-policy (depth d, widths w[0..d)) keeps the first d hidden layers of the actor
 * and of the critic and the leading w[i] units of each. Its output layers read the
 * last kept layer: at the full depth the policy's own output layers, at a smaller
 * depth d a head of that depth (one per network and depth, [hidden[d-1] x out] and a
 * bias, the leading w[d-1] rows used). Those heads are the only parameters beyond the
 * ordinary policy's, in a vector of their own (the "head block"), so the full policy
 * acts, learns, saves and runs on a device exactly as a plain one does.
 *
 * A sub-policy's parameters, gathered, are laid out as an ordinary policy with
 * policy.hidden = w: so learning one is an ordinary forward and backward pass whose
 * gradient is scattered back, and cutting one out is the same gather into a plain
 * policy, which saves, loads, evaluates and exports like any other. */
#ifndef FRL_RL_ELASTIC_H
#define FRL_RL_ELASTIC_H

#include "rl/policy.h"

enum { FRL_ELASTIC_MAX_CHOICES = 16 };

typedef struct frl_elastic_arch {
    int32_t depth;                        /* hidden layers kept, 1..L */
    int32_t width[FRL_MLP_MAX_LAYERS];    /* units kept in each */
} frl_elastic_arch;

typedef struct frl_elastic {
    int32_t depth;                        /* L: the full policy's hidden layers */
    int32_t hidden[FRL_MLP_MAX_LAYERS];   /* their widths */
    int32_t in_w, out_w;
    frl_nn_act act;
    int32_t choices[FRL_ELASTIC_MAX_CHOICES]; /* width choice set, ascending */
    int32_t n_choices;
    /* Head of network n (0 actor, 1 critic) for depth d < L: wt at head_w[n][d], bias
     * at head_b[n][d] in the head block. */
    size_t head_w[2][FRL_MLP_MAX_LAYERS], head_b[2][FRL_MLP_MAX_LAYERS];
    size_t num_heads;                     /* floats of the head block */
    int32_t log_std;                      /* 1: a Gaussian's log-stds follow the critic */
} frl_elastic;

/* The elastic shape of policy p with the width choices of elastic.widths (cfg). Fails
 * with a message in err for a policy that cannot be elastic (a shared trunk, a core,
 * an encoder, a Q-head, no hidden layer) or a narrowest choice wider than a hidden
 * layer (no choice would fit that layer; err names it). */
frl_status frl_elastic_init(frl_elastic *e, const frl_policy *p, const frl_config *cfg,
                            char *err);

/* The width choices of layer i: elastic.widths below its width, then its width. */
int32_t frl_elastic_layer_choices(const frl_elastic *e, int32_t layer, int32_t *out);

/* Orthogonal initial heads (gain 0.01 for the actor's, 1 for the critic's, as the
 * policy's own output layers), zero biases, from seed; work: doubles of
 * frl_elastic_init_work. */
size_t frl_elastic_init_work(const frl_elastic *e);
void frl_elastic_init_heads(const frl_elastic *e, float *heads, uint64_t seed, double *work);

/* The full architecture, and a check of a given one (err names what is wrong). */
void frl_elastic_full(const frl_elastic *e, frl_elastic_arch *a);
frl_status frl_elastic_check(const frl_elastic *e, const frl_elastic_arch *a, char *err);
/* "w0,w1,..." text of an architecture, and parsing it ("w0,w1" means depth = count):
 * scan reads the text alone (FRL_ERR_INVALID_ARGUMENT unless it is positive whole
 * numbers joined by single commas, so a command can refuse it before loading a
 * policy), parse then checks it against e (frl_elastic_check). */
void frl_elastic_arch_text(const frl_elastic_arch *a, char *buf, size_t size);
frl_status frl_elastic_arch_scan(const char *text, frl_elastic_arch *a, char *err);
frl_status frl_elastic_arch_parse(const frl_elastic *e, const char *text, frl_elastic_arch *a,
                                  char *err);

/* Architectures of every depth and width choice: how many, and the i-th of them (by
 * depth, then the widths as a mixed-radix number, the first layer's choice fastest). */
int64_t frl_elastic_count(const frl_elastic *e);
int64_t frl_elastic_count_depth(const frl_elastic *e, int32_t depth); /* of one depth */
void frl_elastic_nth(const frl_elastic *e, int64_t i, frl_elastic_arch *a);

/* The sub-policy's layout as an ordinary policy with policy.hidden = a->width: actor at
 * 0, critic after it, log-stds after that. Returns its parameter count. */
size_t frl_elastic_sub_layout(const frl_elastic *e, const frl_elastic_arch *a, frl_mlp *actor,
                              frl_mlp *critic);

/* sub = the sub-policy's parameters taken from the policy's (full) and the head block. */
void frl_elastic_gather(const frl_elastic *e, const frl_policy *p, const frl_elastic_arch *a,
                        const float *full, const float *heads, float *sub);
/* The reverse for gradients: g_full and g_heads += the sub-policy's gradient g_sub (the
 * log-stds' excepted: distillation does not train them). */
void frl_elastic_scatter_add(const frl_elastic *e, const frl_policy *p,
                             const frl_elastic_arch *a, const float *g_sub, float *g_full,
                             float *g_heads);

/* Reorder every hidden layer's units by importance (the L1 norm of each unit's outgoing
 * weights in the full policy, largest first), so that narrower sub-policies keep the
 * units that matter most. Every function of the policy is unchanged. The same
 * permutation is applied to the vectors laid out like the parameters (full_like[i],
 * e.g. Adam's moments) and like the head block (heads_like[i]). work: floats of
 * frl_elastic_reorder_work. */
size_t frl_elastic_reorder_work(const frl_elastic *e);
void frl_elastic_reorder(const frl_elastic *e, const frl_policy *p, float *full, float *heads,
                         float *const *full_like, int32_t n_full_like,
                         float *const *heads_like, int32_t n_heads_like, float *work);

/* A plain policy of architecture a cut out of p and its head block: its own settings
 * (p's with policy.hidden = the widths), the same seed, normaliser and version. */
frl_status frl_elastic_cut(const frl_elastic *e, const frl_policy *p, const float *heads,
                           const frl_elastic_arch *a, frl_policy **out, char *err);

#endif
