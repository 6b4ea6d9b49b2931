/* The built-in environments by index and by Gymnasium id (registry.c). A header of its
 * own, so the classes' description (env_class.h) does not declare what only the registry
 * defines. */
#ifndef FRL_ENV_REGISTRY_H
#define FRL_ENV_REGISTRY_H

#include "env/env_class.h"

int32_t frl_env_class_count(void);
const frl_env_class *frl_env_class_at(int32_t index); /* NULL outside [0, count) */
const frl_env_class *frl_env_class_find(const char *name); /* NULL: no such id */

#endif
