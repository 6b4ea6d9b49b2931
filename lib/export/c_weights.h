/* Weight arrays of the C export (c_weights.c), shared by the networks' writer
 * (c_source.c) and the conv encoder's (c_conv.c). */
#ifndef FRL_EXPORT_C_WEIGHTS_H
#define FRL_EXPORT_C_WEIGHTS_H

#include "export/cgen.h"

/* [storage]const float NAME_what[n] = {...}; */
void frl_cgen_float_array(frl_cgen *g, const char *storage, const char *what, const float *v,
                          size_t n);

/* NAME_what_w [out x in] (or _q and _s with int8 weights) from the library's wt[in x
 * out], and the bias NAME_what_b. */
void frl_cgen_matrix(frl_cgen *g, const float *wt, const float *bias, size_t in, size_t out,
                     const char *what);

#endif
