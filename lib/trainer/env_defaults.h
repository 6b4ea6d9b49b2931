/* The settings that solve each built-in environment (lib/trainer/env_defaults.c). */
#ifndef FRL_TRAINER_ENV_DEFAULTS_H
#define FRL_TRAINER_ENV_DEFAULTS_H

/* The settings that solve a built-in, as "key=value" text ("" if none). */
const char *frl_env_default_settings(const char *env_name);

#endif
