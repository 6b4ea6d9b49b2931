/* The ONNX writer: a policy's acting path as a model (opset 17, IR version 8). The
 * checks every format shares are frl_policy_export's (export.c). */
#ifndef FRL_EXPORT_ONNX_H
#define FRL_EXPORT_ONNX_H

#include "rl/policy.h"

frl_status frl_export_onnx(const frl_policy *p, const char *path, char *err);

#endif
