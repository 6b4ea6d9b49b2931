/* Policies outside the library (doc/export.md): what an exported file describes, in the
 * words of its outputs, shared by the ONNX and the C writers. */
#ifndef FRL_EXPORT_KIND_H
#define FRL_EXPORT_KIND_H

#include "rl/policy.h"

enum frl_export_kind {
    FRL_EXPORT_CATEGORICAL, /* logits, value, action (argmax) */
    FRL_EXPORT_GAUSSIAN,    /* mean, log_std, value, action (the mean) */
    FRL_EXPORT_QVALUES      /* q, value (max q), action (argmax) */
};

static inline int frl_export_kind_of(const frl_policy *p)
{
    if (p->head != FRL_POLICY_HEAD_ACTOR_CRITIC)
        return FRL_EXPORT_QVALUES;
    return p->discrete ? FRL_EXPORT_CATEGORICAL : FRL_EXPORT_GAUSSIAN;
}

#endif
