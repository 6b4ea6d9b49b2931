/* frl_vec_env_create: the name picks a built-in class (env/registry.h), a pixel env
 * (env/pixel_grid.h, env/ray/env.h) or a MuJoCo task (env/mujoco_env.h); an unknown
 * name lists what there is. Apart from vec_env.c so that the vec env itself knows
 * nothing of MuJoCo, whose side builds on it. */
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "env/mujoco_env.h"
#include "env/pixel_grid.h"
#include "env/ray/env.h"
#include "env/registry.h"
#include "env/vec_env_named.h"

static frl_status unknown_env(const char *name, const char *who)
{
    char names[384] = "";
    for (int32_t i = 0; i < frl_env_class_count(); i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", i ? "," : "",
                 frl_env_class_at(i)->name);
    }
    for (int32_t i = 0; frl_pixel_env_name_at(i); i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, ",%s", frl_pixel_env_name_at(i));
    }
    for (int32_t i = 0; frl_ray_env_name_at(i); i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, ",%s", frl_ray_env_name_at(i));
    }
    /* Terse, commas without spaces: with the 12 built-ins the message takes 254 of its
     * 255 bytes for an 18-character caller and a 12-character name (test_bad_input). */
    return frl_fail(NULL, FRL_ERR_UNKNOWN_NAME, "%s: unknown env '%s' (built-ins: %s; "
                    "MuJoCo's need its plugin)", who, name, names);
}

FRL_API frl_status frl_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                      int32_t num_envs, const frl_config *cfg)
{
    return frl_vec_env_create_as(out, rt, name, num_envs, cfg, "frl_vec_env_create");
}

static frl_status create_named(frl_vec_env **out, frl_runtime *rt, const char *name,
                               int32_t num_envs, const frl_config *cfg, const char *who)
{
    const frl_env_class *c = frl_env_class_find(name);
    if (c)
        return frl_vec_env_create_builtin(out, rt, c, num_envs, cfg, who);
    if (frl_pixel_env_is(name))
        return frl_pixel_vec_env_create(out, rt, name, num_envs, cfg, who);
    if (frl_ray_env_is(name))
        return frl_ray_vec_env_create(out, rt, name, num_envs, cfg, who);
    if (frl_mujoco_is_task(name))
        return frl_mujoco_vec_env_create(out, rt, name, num_envs, cfg, who);
    return unknown_env(name, who);
}

/* The env.* keys of cfg (set or default; NULL: the defaults) into a config of v's own. */
static frl_status keep_env_settings(frl_vec_env *v, const frl_config *cfg, const char *who)
{
    char text[2048];
    frl_status st = frl_config_create(&v->env_cfg, &v->rt->alloc);
    if (st == FRL_OK)
        st = frl_config_to_text(cfg ? cfg : v->env_cfg, "env.", text, sizeof text);
    if (st == FRL_OK)
        st = frl_config_parse(v->env_cfg, text);
    if (st != FRL_OK)
        return frl_fail(NULL, st, "%s: keeping the env settings: %s", who, frl_last_error());
    return FRL_OK;
}

frl_status frl_vec_env_create_as(frl_vec_env **out, frl_runtime *rt, const char *name,
                                 int32_t num_envs, const frl_config *cfg, const char *who)
{
    frl_status st = frl_vec_env_check_args(out, rt, num_envs, who);
    if (st != FRL_OK)
        return st;
    if (!name)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: name is NULL", who);
    if ((st = create_named(out, rt, name, num_envs, cfg, who)) != FRL_OK)
        return st;
    if ((st = keep_env_settings(*out, cfg, who)) != FRL_OK) {
        frl_vec_env_destroy(*out);
        *out = NULL;
    }
    return st;
}
