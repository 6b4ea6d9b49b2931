/* A link-time stand-in for libfastrl 0.2: it exports (empty) the functions that
 * old_caller.c calls, at the version nodes of 0.2's map (tests/abi/0.2/fastrl.map), with
 * the soname libfastrl.so.0. Linking against it gives old_caller the versioned
 * references (frl_act_args_init@FASTRL_0.2, ...) that a program linked against the real
 * 0.2 carries; at run time the loader finds the current libfastrl.so.0 instead. Never
 * loaded (its file name is not the soname). */
#define STUB(name)                                                                        \
    void name(void);                                                                      \
    void name(void) {}

STUB(frl_abi_version)
STUB(frl_act_args_init)
STUB(frl_allocator_init)
STUB(frl_batch_env_callbacks_init)
STUB(frl_env_callbacks_init)
STUB(frl_last_error)
STUB(frl_logger_init)
STUB(frl_policy_act)
STUB(frl_policy_create)
STUB(frl_policy_destroy)
STUB(frl_runtime_create)
STUB(frl_runtime_destroy)
STUB(frl_space_create_box)
STUB(frl_space_create_discrete)
STUB(frl_space_destroy)
STUB(frl_vec_env_actions)
STUB(frl_vec_env_create_callbacks)
STUB(frl_vec_env_destroy)
STUB(frl_vec_env_observations)
STUB(frl_vec_env_reset)
STUB(frl_vec_env_step)
