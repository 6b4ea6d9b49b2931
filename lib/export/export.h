/* Policies outside the library: an ONNX model for engines and runtimes, dependency-free
 * C99 source for controllers (doc/export.md). Both write a policy's acting path, the
 * observation normaliser included, and leave sampling to the host. export.c holds the
 * public entry point and the checks both formats share. */
#ifndef FRL_EXPORT_EXPORT_H
#define FRL_EXPORT_EXPORT_H

#include "rl/policy.h"

/* What a file describes, in the words of its outputs. */
enum frl_export_kind {
    FRL_EXPORT_CATEGORICAL, /* logits, value, action (argmax) */
    FRL_EXPORT_GAUSSIAN,    /* mean, log_std, value, action (the mean) */
    FRL_EXPORT_QVALUES      /* q, value (max q), action (argmax) */
};
int frl_export_kind_of(const frl_policy *p);

/* The ONNX model of p's acting path at path (opset 17, IR version 8). */
frl_status frl_export_onnx(const frl_policy *p, const char *path, char *err);

/* C99 source: prefix.h and prefix.c (and prefix_probe.c when probe), symbols named by
 * `name` (a C identifier); int8: weights quantised per output channel. */
frl_status frl_export_c(const frl_policy *p, const char *prefix, const char *name, int int8,
                        int probe, char *err);

#endif
