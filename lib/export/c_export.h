/* The C writer: prefix.h and prefix.c (and prefix_probe.c when probe), every symbol
 * named by `name` (a C identifier, checked by export.c); int8: weights quantised per
 * output channel. c_export.c writes the header, the probe and the files; c_source.c
 * the source. */
#ifndef FRL_EXPORT_C_EXPORT_H
#define FRL_EXPORT_C_EXPORT_H

#include "rl/policy.h"

frl_status frl_export_c(const frl_policy *p, const char *prefix, const char *name, int int8,
                        int probe, char *err);

#endif
