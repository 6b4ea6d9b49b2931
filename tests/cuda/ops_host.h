/* The device ops on host memory (ops_host.c): a test double for the CUDA ops, the
 * reference they are checked against and the ops of the plugin's test build. */
#ifndef FRL_TESTS_CUDA_OPS_HOST_H
#define FRL_TESTS_CUDA_OPS_HOST_H

#include "cuda/dev_ops.h"

extern const frl_dev_ops frl_dev_ops_host;

#endif
