/* The C export's writer state, shared by its parts (c_source.c, c_conv.c,
 * c_weights.c). */
#ifndef FRL_EXPORT_CGEN_H
#define FRL_EXPORT_CGEN_H

#include "io/bytes.h"
#include "rl/policy.h"

typedef struct frl_cgen {
    frl_bytes *out;       /* the file being written */
    const frl_policy *p;
    const char *name;     /* the symbols' prefix */
    int int8;             /* int8 weights with a float scale per output row */
} frl_cgen;

/* Whether forward and act take a state argument: a recurrent core's, or a frame stack's
 * earlier frames (as the library's frl_policy_act keeps them). */
static inline int frl_cgen_stateful(const frl_policy *p)
{
    return p->towers > 0 || p->stack > 1;
}

#endif
