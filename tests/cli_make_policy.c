/* cli_make_policy ENV PATH: save an untrained policy for a built-in env with
 * frl_policy_save, for test_cli_eval.sh: the CLI itself writes only trainer
 * checkpoints, and a bare policy file (no environment inside) needs its own case. */
#include <stdio.h>

#include "fastrl.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cli_make_policy ENV PATH\n");
        return 2;
    }
    frl_runtime *rt = NULL;
    frl_env *env = NULL;
    frl_policy *p = NULL;
    frl_status st = frl_runtime_create(&rt, NULL, NULL, NULL);
    if (st == FRL_OK)
        st = frl_env_create(&env, rt, argv[1], NULL);
    if (st == FRL_OK)
        st = frl_policy_create(&p, rt, NULL, frl_env_observation_space(env),
                               frl_env_action_space(env));
    if (st == FRL_OK)
        st = frl_policy_save(p, argv[2]);
    if (st != FRL_OK)
        fprintf(stderr, "cli_make_policy: %s: %s\n", frl_status_name(st), frl_last_error());
    frl_policy_destroy(p);
    frl_env_destroy(env);
    frl_runtime_destroy(rt);
    return st == FRL_OK ? 0 : 1;
}
