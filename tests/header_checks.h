/* The checks shared by the header programs: header_c99.c (built as strict C99, and as
 * C11 with the library's flags) and header_cxx.cpp (C++11). Each program
 *   - prints, on stdout, the layout of every public struct of fastrl.h (sizeof, and the
 *     offset and size of every field) and what each static inline initialiser leaves in
 *     a table filled with garbage. tests/header_layout.py compares the three outputs: a
 *     struct laid out differently in C99 or C++ than in the library's C11 would have the
 *     library read and write a caller's fields at the wrong places;
 *   - checks, on its own, that every initialiser leaves sizeof in struct_size, its
 *     documented defaults and zeros elsewhere, and that the library it links fills a
 *     table of the caller's layout (frl_config_describe) and is this header's version;
 *     it says what failed on stderr and exits 1.
 * Valid C99 and C++11 (no designated initialisers, no compound literals). */
#ifndef FRL_TESTS_HEADER_CHECKS_H
#define FRL_TESTS_HEADER_CHECKS_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fastrl.h"

/* ---- layout ------------------------------------------------------------------------- */

#define HC_STRUCT(T) printf("%s sizeof %zu\n", #T, sizeof(T))
#define HC_FIELD(T, f)                                                                  \
    printf("%s.%s offset %zu size %zu\n", #T, #f, (size_t)offsetof(T, f),              \
           sizeof(((T *)0)->f))

static void hc_layout_tables(void)
{
    HC_STRUCT(frl_allocator);
    HC_FIELD(frl_allocator, struct_size);
    HC_FIELD(frl_allocator, alloc);
    HC_FIELD(frl_allocator, free);
    HC_FIELD(frl_allocator, user);
    HC_STRUCT(frl_logger);
    HC_FIELD(frl_logger, struct_size);
    HC_FIELD(frl_logger, log);
    HC_FIELD(frl_logger, user);
    HC_FIELD(frl_logger, max_level);
    HC_STRUCT(frl_config_key_info);
    HC_FIELD(frl_config_key_info, struct_size);
    HC_FIELD(frl_config_key_info, name);
    HC_FIELD(frl_config_key_info, type);
    HC_FIELD(frl_config_key_info, default_text);
    HC_FIELD(frl_config_key_info, min);
    HC_FIELD(frl_config_key_info, max);
    HC_FIELD(frl_config_key_info, choices);
    HC_FIELD(frl_config_key_info, help);
}

static void hc_layout_envs(void)
{
    HC_STRUCT(frl_env_callbacks);
    HC_FIELD(frl_env_callbacks, struct_size);
    HC_FIELD(frl_env_callbacks, reset);
    HC_FIELD(frl_env_callbacks, step);
    HC_FIELD(frl_env_callbacks, close);
    HC_FIELD(frl_env_callbacks, state_size);
    HC_FIELD(frl_env_callbacks, get_state);
    HC_FIELD(frl_env_callbacks, set_state);
    HC_FIELD(frl_env_callbacks, frame);
    HC_STRUCT(frl_frame);
    HC_FIELD(frl_frame, struct_size);
    HC_FIELD(frl_frame, pixels);
    HC_FIELD(frl_frame, height);
    HC_FIELD(frl_frame, width);
    HC_FIELD(frl_frame, channels);
    HC_FIELD(frl_frame, row_stride);
    HC_STRUCT(frl_batch_env_callbacks);
    HC_FIELD(frl_batch_env_callbacks, struct_size);
    HC_FIELD(frl_batch_env_callbacks, reset);
    HC_FIELD(frl_batch_env_callbacks, step);
    HC_FIELD(frl_batch_env_callbacks, close);
    HC_STRUCT(frl_mujoco_callbacks);
    HC_FIELD(frl_mujoco_callbacks, struct_size);
    HC_FIELD(frl_mujoco_callbacks, observe);
    HC_FIELD(frl_mujoco_callbacks, reward);
    HC_FIELD(frl_mujoco_callbacks, reset);
    HC_FIELD(frl_mujoco_callbacks, randomize_bodies);
    HC_FIELD(frl_mujoco_callbacks, randomize_geoms);
    HC_FIELD(frl_mujoco_callbacks, randomize_joints);
}

static void hc_layout_args(void)
{
    HC_STRUCT(frl_act_args);
    HC_FIELD(frl_act_args, struct_size);
    HC_FIELD(frl_act_args, batch);
    HC_FIELD(frl_act_args, observations);
    HC_FIELD(frl_act_args, actions);
    HC_FIELD(frl_act_args, log_probs);
    HC_FIELD(frl_act_args, values);
    HC_FIELD(frl_act_args, deterministic);
    HC_FIELD(frl_act_args, stream_offset);
    HC_FIELD(frl_act_args, counter);
    HC_FIELD(frl_act_args, workspace);
    HC_FIELD(frl_act_args, workspace_size);
    HC_FIELD(frl_act_args, observation_width);
    HC_FIELD(frl_act_args, action_width);
    HC_FIELD(frl_act_args, state);
    HC_FIELD(frl_act_args, state_width);
    HC_FIELD(frl_act_args, reset);
    HC_FIELD(frl_act_args, outputs);
    HC_STRUCT(frl_eval_args);
    HC_FIELD(frl_eval_args, struct_size);
    HC_FIELD(frl_eval_args, episodes);
    HC_FIELD(frl_eval_args, deterministic);
    HC_FIELD(frl_eval_args, seed);
    HC_FIELD(frl_eval_args, returns);
    HC_FIELD(frl_eval_args, lengths);
    HC_FIELD(frl_eval_args, max_steps);
}

static void hc_layout_metrics_counts(void)
{
    HC_STRUCT(frl_population_act_args);
    HC_FIELD(frl_population_act_args, struct_size);
    HC_FIELD(frl_population_act_args, batch);
    HC_FIELD(frl_population_act_args, observations);
    HC_FIELD(frl_population_act_args, members);
    HC_FIELD(frl_population_act_args, actions);
    HC_FIELD(frl_population_act_args, deterministic);
    HC_FIELD(frl_population_act_args, stream_offset);
    HC_FIELD(frl_population_act_args, counter);
    HC_FIELD(frl_population_act_args, observation_width);
    HC_FIELD(frl_population_act_args, action_width);
    HC_STRUCT(frl_population_eval_args);
    HC_FIELD(frl_population_eval_args, struct_size);
    HC_FIELD(frl_population_eval_args, episodes);
    HC_FIELD(frl_population_eval_args, deterministic);
    HC_FIELD(frl_population_eval_args, seed);
    HC_FIELD(frl_population_eval_args, max_episode_steps);
    HC_FIELD(frl_population_eval_args, returns);
    HC_FIELD(frl_population_eval_args, steps);
    HC_FIELD(frl_population_eval_args, lengths);
    HC_FIELD(frl_population_eval_args, update_obs_norm);
    HC_FIELD(frl_population_eval_args, max_steps);
    HC_STRUCT(frl_metrics);
    HC_FIELD(frl_metrics, struct_size);
    HC_FIELD(frl_metrics, update);
    HC_FIELD(frl_metrics, env_steps);
    HC_FIELD(frl_metrics, episodes);
    HC_FIELD(frl_metrics, mean_return);
    HC_FIELD(frl_metrics, mean_length);
    HC_FIELD(frl_metrics, seconds);
    HC_FIELD(frl_metrics, steps_per_second);
    HC_FIELD(frl_metrics, policy_loss);
    HC_FIELD(frl_metrics, value_loss);
    HC_FIELD(frl_metrics, entropy);
    HC_FIELD(frl_metrics, approx_kl);
    HC_FIELD(frl_metrics, clip_fraction);
    HC_FIELD(frl_metrics, explained_variance);
    HC_FIELD(frl_metrics, grad_norm);
    HC_FIELD(frl_metrics, learning_rate);
}

static void hc_layout_metrics_times(void)
{
    HC_FIELD(frl_metrics, epochs_done);
    HC_FIELD(frl_metrics, time_env);
    HC_FIELD(frl_metrics, time_inference);
    HC_FIELD(frl_metrics, time_backward);
    HC_FIELD(frl_metrics, time_optimizer);
    HC_FIELD(frl_metrics, time_waiting);
    HC_FIELD(frl_metrics, policy_lag_mean);
    HC_FIELD(frl_metrics, policy_lag_max);
    HC_FIELD(frl_metrics, slots_dropped);
    HC_FIELD(frl_metrics, q_mean);
    HC_FIELD(frl_metrics, td_error);
    HC_FIELD(frl_metrics, epsilon);
    HC_FIELD(frl_metrics, replay_fill);
    HC_FIELD(frl_metrics, sample_age);
    HC_FIELD(frl_metrics, time_replay);
    HC_FIELD(frl_metrics, population_mean);
    HC_FIELD(frl_metrics, population_best);
    HC_FIELD(frl_metrics, kept_fitness);
    HC_FIELD(frl_metrics, priority_spread);
    HC_STRUCT(frl_replay_info);
    HC_FIELD(frl_replay_info, struct_size);
    HC_FIELD(frl_replay_info, capacity);
    HC_FIELD(frl_replay_info, blocks);
    HC_FIELD(frl_replay_info, filled);
    HC_FIELD(frl_replay_info, next);
    HC_FIELD(frl_replay_info, transitions);
    HC_FIELD(frl_replay_info, steps);
    HC_FIELD(frl_replay_info, envs);
    HC_FIELD(frl_replay_info, observation_width);
    HC_FIELD(frl_replay_info, action_width);
    HC_FIELD(frl_replay_info, state_width);
    HC_FIELD(frl_replay_info, prioritized);
    HC_FIELD(frl_replay_info, record_bytes);
    HC_FIELD(frl_replay_info, offset_action);
    HC_FIELD(frl_replay_info, offset_reward);
    HC_FIELD(frl_replay_info, offset_flags);
}

/* ---- initialisers ------------------------------------------------------------------- */

/* got: a T filled with 0xa5, then given to T's initialiser; want: what the header says
 * it leaves, to be completed with the defaults (zeros, then struct_size). */
#define HC_INIT_PAIR(T, got, want)    \
    T got, want;                      \
    memset(&got, 0xa5, sizeof got);   \
    T##_init(&got);                   \
    T##_init(NULL); /* does nothing */ \
    memset(&want, 0, sizeof want);    \
    want.struct_size = sizeof want

/* Prints every byte the initialiser left (padding included: frl_inline_zero clears the
 * whole table) and compares them with want; 1 on a difference. */
static int hc_init_left(const char *name, const void *got, const void *want, size_t size)
{
    const unsigned char *b = (const unsigned char *)got;
    printf("%s leaves", name);
    for (size_t i = 0; i < size; i++)
        printf("%s%02x", i % 8 ? "" : " ", b[i]);
    printf("\n");
    if (memcmp(got, want, size) == 0)
        return 0;
    fprintf(stderr, "FAIL: %s does not leave sizeof in struct_size, its defaults and zeros\n",
            name);
    return 1;
}

static int hc_init_tables(void)
{
    HC_INIT_PAIR(frl_allocator, a, a0);
    HC_INIT_PAIR(frl_logger, l, l0);
    l0.max_level = FRL_LOG_INFO;
    printf("frl_logger_init struct_size %zu max_level %d\n", l.struct_size, (int)l.max_level);
    return hc_init_left("frl_allocator_init", &a, &a0, sizeof a) +
           hc_init_left("frl_logger_init", &l, &l0, sizeof l);
}

static int hc_init_envs(void)
{
    HC_INIT_PAIR(frl_env_callbacks, e, e0);
    HC_INIT_PAIR(frl_batch_env_callbacks, b, b0);
    HC_INIT_PAIR(frl_mujoco_callbacks, m, m0);
    printf("frl_env_callbacks_init struct_size %zu state_size %d\n", e.struct_size,
           (int)e.state_size);
    return hc_init_left("frl_env_callbacks_init", &e, &e0, sizeof e) +
           hc_init_left("frl_batch_env_callbacks_init", &b, &b0, sizeof b) +
           hc_init_left("frl_mujoco_callbacks_init", &m, &m0, sizeof m);
}

static int hc_init_args(void)
{
    HC_INIT_PAIR(frl_act_args, a, a0);
    HC_INIT_PAIR(frl_eval_args, e, e0);
    e0.episodes = 100;
    e0.deterministic = 1;
    e0.max_steps = 10000000;
    HC_INIT_PAIR(frl_population_act_args, pa, pa0);
    HC_INIT_PAIR(frl_population_eval_args, pe, pe0);
    pe0.episodes = 1;
    pe0.deterministic = 1;
    pe0.max_steps = 10000000;
    printf("frl_act_args_init struct_size %zu deterministic %d\n", a.struct_size,
           (int)a.deterministic);
    printf("frl_population_eval_args_init struct_size %zu episodes %d deterministic %d "
           "max_steps %lld\n", pe.struct_size, (int)pe.episodes, (int)pe.deterministic,
           (long long)pe.max_steps);
    printf("frl_eval_args_init struct_size %zu episodes %d deterministic %d seed %llu "
           "max_steps %lld\n",
           e.struct_size, (int)e.episodes, (int)e.deterministic, (unsigned long long)e.seed,
           (long long)e.max_steps);
    return hc_init_left("frl_act_args_init", &a, &a0, sizeof a) +
           hc_init_left("frl_eval_args_init", &e, &e0, sizeof e) +
           hc_init_left("frl_population_act_args_init", &pa, &pa0, sizeof pa) +
           hc_init_left("frl_population_eval_args_init", &pe, &pe0, sizeof pe);
}

/* ---- the library against this caller ------------------------------------------------ */

/* The library fills a frl_config_key_info laid out by this compiler: every field it
 * writes must land where this program reads it. */
static int hc_library_fills_table(void)
{
    frl_config_key_info info;
    memset(&info, 0xa5, sizeof info);
    info.struct_size = sizeof info;
    const frl_status st = frl_config_describe("runtime.threads", &info);
    if (st == FRL_OK && strcmp(info.name, "runtime.threads") == 0 &&
        info.type == FRL_CONFIG_INT && info.default_text && info.default_text[0] &&
        info.min <= info.max && info.choices && strcmp(info.choices, "") == 0 && info.help &&
        info.help[0])
        return 0;
    fprintf(stderr, "FAIL: frl_config_describe(\"runtime.threads\") gave %s: %s\n",
            frl_status_name(st), st == FRL_OK ? "fields out of place" : frl_last_error());
    return 1;
}

static int hc_library_matches_header(void)
{
    if (strcmp(frl_status_name(FRL_OK), "FRL_OK") == 0 &&
        frl_version_number() == FRL_VERSION_NUMBER)
        return 0;
    fprintf(stderr, "FAIL: the library is version %u, this header %d\n",
            (unsigned)frl_version_number(), FRL_VERSION_NUMBER);
    return 1;
}

/* The exit status of main(). */
static int hc_run(void)
{
    hc_layout_tables();
    hc_layout_envs();
    hc_layout_args();
    hc_layout_metrics_counts();
    hc_layout_metrics_times();
    const int failed = hc_init_tables() + hc_init_envs() + hc_init_args() +
                       hc_library_fills_table() + hc_library_matches_header();
    return failed ? 1 : 0;
}

#endif
