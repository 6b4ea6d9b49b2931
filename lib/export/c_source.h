/* The source half of the C export (c_source.c): NAME.c's weights and functions, and the
 * stack its forward function takes, which the header states. */
#ifndef FRL_EXPORT_C_SOURCE_H
#define FRL_EXPORT_C_SOURCE_H

#include "export/cgen.h"

void frl_cgen_source(frl_cgen *g);

/* Floats of stack the forward function declares (its work buffers). */
size_t frl_cgen_stack_floats(const frl_policy *p);

#endif
