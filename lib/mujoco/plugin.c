/* libfastrl-mujoco.so.0: the plugin side of env/mujoco_api.h. It links libmujoco (the
 * one in the pinned pip package, see meson.build) and embeds the tasks' MJCF models
 * (assets.c), so it needs no data folder at run time. Models are model.c's, envs
 * env.c's; this file is the table the core loads. */
#include "mujoco/plugin.h"

static const char *version(void)
{
    return mj_versionString();
}

static const frl_mujoco_plugin table = {
    .abi = FRL_MUJOCO_PLUGIN_ABI,
    .version = version,
    .task_at = mjt_task_at,
    .model_open = mjt_model_open,
    .model_open_mjcf = mjt_model_open_mjcf,
    .model_release = mjt_model_release,
    .env_create = mjt_env_create,
    .callbacks = {
        .struct_size = sizeof(frl_env_callbacks),
        .reset = mjt_env_reset,
        .step = mjt_env_step,
        .close = mjt_env_close,
        .get_state = mjt_env_get_state,
        .set_state = mjt_env_set_state,
    },
    .observe = mjt_env_observe,
    .fault = mjt_env_fault,
    .bare_step = mjt_env_bare_step,
    .array = mjt_array,
    .name_id = mjt_name_id,
};

__attribute__((visibility("default"))) const frl_mujoco_plugin *frl_mujoco_plugin_get(void);
const frl_mujoco_plugin *frl_mujoco_plugin_get(void)
{
    return &table;
}
