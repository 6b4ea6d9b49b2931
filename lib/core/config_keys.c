/* Every config key the library knows, with its type, default, range and help.
 * Add keys here; `fastrl config --list` and the bindings read this table. */
#include "core/config.h"

const frl_key_def frl_key_defs[] = {
    {"env.max_episode_steps", FRL_CONFIG_INT, "-1", -1, -1, 2147483647.0, "",
     "episode time limit in steps: -1 = the environment's own, 0 = none"},
    {"runtime.seed", FRL_CONFIG_INT, "0", 0, 0, 9007199254740992.0, "",
     "base seed of the runtime (environments take theirs from reset)"},
    {"runtime.spin_us", FRL_CONFIG_INT, "50", 50, 0, 1000000, "",
     "microseconds an idle worker spins for new work before it sleeps"},
    {"runtime.threads", FRL_CONFIG_INT, "0", 0, 0, 1024, "",
     "threads doing work, the caller included: 0 = one per core, 1 = no workers"},
};

const int32_t frl_key_count = (int32_t)(sizeof frl_key_defs / sizeof frl_key_defs[0]);
