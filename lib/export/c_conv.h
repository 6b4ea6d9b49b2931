/* A convolutional encoder in the C export (c_conv.c): its weights, the helper that runs
 * one layer, and the forward function's first part, which scales the image's bytes and
 * runs the stack into a features buffer the networks then read. */
#ifndef FRL_EXPORT_C_CONV_H
#define FRL_EXPORT_C_CONV_H

#include "export/cgen.h"

/* Floats of the two buffers the stack alternates between (0 without an encoder). */
size_t frl_cgen_conv_stack_floats(const frl_policy *p);
void frl_cgen_conv_weights(frl_cgen *g);
void frl_cgen_conv_helper(frl_cgen *g);
void frl_cgen_conv_locals(frl_cgen *g);
/* Emits the stack's calls; returns the name of the buffer holding the features. */
const char *frl_cgen_conv_forward(frl_cgen *g);

#endif
