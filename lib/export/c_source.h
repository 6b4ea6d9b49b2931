/* The source half of the C export (c_source.c): NAME.c's weights and functions, and the
 * stack its forward function takes, which the header states. */
#ifndef FRL_EXPORT_C_SOURCE_H
#define FRL_EXPORT_C_SOURCE_H

#include "io/bytes.h"
#include "rl/policy.h"

typedef struct frl_cgen {
    frl_bytes *out;       /* the file being written */
    const frl_policy *p;
    const char *name;     /* the symbols' prefix */
    int int8;             /* int8 weights with a float scale per output row */
} frl_cgen;

void frl_cgen_source(frl_cgen *g);

/* Floats of stack the forward function declares (its work buffers). */
size_t frl_cgen_stack_floats(const frl_policy *p);

#endif
