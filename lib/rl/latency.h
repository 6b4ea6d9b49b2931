/* A latency model of acting with an elastic policy's sub-policies (once-for-all's
 * per-device latency table): the median time of each linear layer shape on this
 * machine's kernel table at one batch size (in act's chunks of rows, as act runs
 * it), plus a fixed per-call intercept (the normalisation, the head, sampling and the
 * call itself) for each depth. A
 * sub-policy's predicted latency is its depth's intercept plus its actor's layers
 * (acting runs the actor alone).
 *
 * Why an intercept per depth: inside a policy each layer costs a little more than
 * alone (its output stored for the next, activations of other magnitudes): on this
 * machine about 7 ns a row a layer at batch 256, which one intercept for all depths
 * would put on the shallow sub-policies' predictions as a 15% error. */
#ifndef FRL_RL_LATENCY_H
#define FRL_RL_LATENCY_H

#include "rl/elastic.h"

enum { FRL_LATENCY_MAX_LAYERS = 512 };
/* The largest batch a model is measured at (and read with). */
enum { FRL_LATENCY_MAX_BATCH = 1 << 20 };

typedef struct frl_latency_layer {
    int32_t in, out, act;     /* act: frl_nn_act */
    double us;
} frl_latency_layer;

typedef struct frl_latency_model {
    int32_t batch;
    int32_t deterministic;    /* 1: acting takes the mode, 0: it samples */
    char kernels[16];         /* the kernel table it was measured with */
    char machine[64];         /* the CPU it was measured on ("" for a probe fit) */
    double intercept_us[FRL_MLP_MAX_LAYERS]; /* [depth]: 1..the policy's depth */
    int32_t depth;            /* intercepts known: depths 1..depth */
    int32_t n;
    frl_latency_layer layer[FRL_LATENCY_MAX_LAYERS];
} frl_latency_model;

/* Median microseconds of one frl_policy_act call on batch rows (the mode with
 * deterministic, else sampled actions): the lower of two medians of reps timed samples;
 * a negative value on failure (err says why). */
double frl_latency_act_us(frl_policy *p, int32_t batch, int32_t deterministic, int32_t reps,
                          char *err);

/* Measure every layer shape of e's architectures at batch rows, then each depth's
 * intercept as the median, over 3 architectures of that depth cut from p and heads
 * (its narrowest, a middle one, its widest), of their measured act time less their
 * layers, at least 0. Times are the lower of two medians of 101 samples each. */
frl_status frl_latency_fit(frl_latency_model *m, const frl_elastic *e, const frl_policy *p,
                           const float *heads, int32_t batch, int32_t deterministic, char *err);

/* A batch-1 model for a target where the library does not run, from the export's
 * latency probe (doc/elastic.md): us[i] is architecture archs[i]'s measured time a
 * call there. Non-negative least squares over the features (1, layers, multiply-adds)
 * of the actor, then every layer shape's time as the per-layer term
 * plus its multiply-adds' and every depth's intercept as the constant. Needs three
 * architectures whose features are independent (err says so otherwise). */
frl_status frl_latency_fit_probes(frl_latency_model *m, const frl_elastic *e,
                                  const frl_elastic_arch *archs, const double *us, int32_t n,
                                  char *err);

/* Predicted microseconds of acting with architecture a; negative if the model lacks
 * one of its layer shapes (a model measured for another policy). */
double frl_latency_predict(const frl_latency_model *m, const frl_elastic *e,
                           const frl_elastic_arch *a);

/* The architecture predicted fastest (into best) and its predicted microseconds, over
 * every depth and width: measured times need not grow with the widths, so it is not
 * always the narrowest. Negative when the model predicts no architecture of e. */
double frl_latency_fastest(const frl_latency_model *m, const frl_elastic *e,
                           frl_elastic_arch *best);

/* The model as text ("key value" lines, "intercept_us depth us" per depth, "layer in
 * out act us" per shape) and back. Reading refuses (FRL_ERR_FORMAT, naming the line) a
 * text that does not end in a newline (truncated), a line with anything after its
 * fields, a number out of range (a time not finite, negative or over 1e9 us) and a key,
 * depth or layer shape given twice. The "machine" line is optional (models written
 * before it had none). */
int frl_latency_to_text(const frl_latency_model *m, char *buf, size_t size);
frl_status frl_latency_from_text(frl_latency_model *m, const char *text, char *err);

#endif
