/* The built-in environments, looked up by their Gymnasium ids. */
#include <string.h>

#include "env/registry.h"

static const frl_env_class *const frl_env_classes[] = {
    &frl_env_cartpole,
    &frl_env_pendulum,
    &frl_env_acrobot,
    &frl_env_mountain_car,
    &frl_env_mountain_car_continuous,
    &frl_env_cartpole_novel,
    &frl_env_memory_probe,
};

#define FRL_ENV_CLASS_COUNT ((int32_t)(sizeof(frl_env_classes) / sizeof(frl_env_classes[0])))

int32_t frl_env_class_count(void)
{
    return FRL_ENV_CLASS_COUNT;
}

const frl_env_class *frl_env_class_at(int32_t index)
{
    if (index < 0 || index >= FRL_ENV_CLASS_COUNT)
        return NULL;
    return frl_env_classes[index];
}

/* Exact match: Gymnasium ids are case-sensitive and versioned. */
const frl_env_class *frl_env_class_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (int32_t i = 0; i < FRL_ENV_CLASS_COUNT; i++)
        if (strcmp(frl_env_classes[i]->name, name) == 0)
            return frl_env_classes[i];
    return NULL;
}
