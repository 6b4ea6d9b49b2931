/* libfastrl: an embeddable reinforcement-learning library.
 *
 * The whole public API. Valid C99, C11 and C++.
 *
 * Conventions (doc/api.md has the full text):
 * - Every handle is opaque. Constructors are `frl_status frl_X_create(frl_X **out, ...)`;
 *   on failure *out is set to NULL and nothing leaks. `frl_X_destroy(NULL)` does nothing.
 * - Every function returning frl_status sets a message retrievable with frl_last_error()
 *   on the calling thread (and, where the call has a non-const handle, with
 *   frl_X_last_error(h); the const config getters set only the thread's message).
 * - Pointers returned by accessors are borrowed: valid until the handle is destroyed,
 *   unless the comment says otherwise.
 * - Threads: a handle may be used from any thread, but not from two threads at once,
 *   unless the comment says otherwise. Calls on different handles are independent.
 * - Callback tables start with struct_size, are filled with defaults by frl_X_init(),
 *   and are copied when registered.
 * - The library never prints unless a logger is set, never calls exit() or abort(),
 *   and never touches signals. */
#ifndef FASTRL_H
#define FASTRL_H

#include <stddef.h>
#include <stdint.h>

#define FRL_VERSION_MAJOR 0
#define FRL_VERSION_MINOR 1
#define FRL_VERSION_PATCH 0
/* The ABI: MAJOR is the soname (libfastrl.so.MAJOR); MINOR grows when symbols are added. */
#define FRL_ABI_VERSION_MAJOR 0
#define FRL_ABI_VERSION_MINOR 1

#if defined(FRL_STATIC)
#define FRL_API
#elif defined(_WIN32)
#if defined(FRL_BUILDING_LIBRARY)
#define FRL_API __declspec(dllexport)
#else
#define FRL_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define FRL_API __attribute__((visibility("default")))
#else
#define FRL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Status codes. Values are fixed forever; new codes only get new numbers. */
typedef enum frl_status {
    FRL_OK = 0,
    FRL_ERR_NULL = -1,             /* a required pointer or handle was NULL */
    FRL_ERR_INVALID_ARGUMENT = -2, /* an argument is malformed (e.g. inconsistent table) */
    FRL_ERR_UNKNOWN_NAME = -3,     /* unknown environment, config key or choice */
    FRL_ERR_SIZE = -4,             /* an array or buffer has the wrong size */
    FRL_ERR_RANGE = -5,            /* a value is outside its valid range */
    FRL_ERR_NONFINITE = -6,        /* NaN or infinity where a finite number is required */
    FRL_ERR_NOMEM = -7,            /* an allocation failed */
    FRL_ERR_THREAD = -8,           /* a thread could not be created */
    FRL_ERR_CALLBACK = -9,         /* a host callback reported failure */
    FRL_ERR_STATE = -10,           /* the call is not valid now (e.g. step before reset) */
    FRL_ERR_TYPE = -11,            /* a config key was used with the wrong type */
    FRL_ERR_PARSE = -12,           /* text could not be parsed */
    FRL_ERR_UNSUPPORTED = -13,     /* not built in, or not available on this machine */
    FRL_ERR_IO = -14,              /* a file could not be read or written */
    FRL_ERR_FORMAT = -15,          /* a file is corrupted, truncated or foreign */
    FRL_ERR_VERSION = -16,         /* a file, or a table's struct_size, is of an incompatible version */
    FRL_ERR_INTERNAL = -17         /* a bug in libfastrl: please report it */
} frl_status;

/* Static text naming the status ("FRL_ERR_NULL"); "FRL_ERR_UNKNOWN_STATUS" for others. */
FRL_API const char *frl_status_name(frl_status status);

/* The message of the last failing call on this thread; "" if none. The text stays
 * valid until the next failing call on this thread. Any thread. */
FRL_API const char *frl_last_error(void);

/* "0.1.0". Static. */
FRL_API const char *frl_version_string(void);
/* (FRL_ABI_VERSION_MAJOR << 16) | FRL_ABI_VERSION_MINOR of the library actually loaded. */
FRL_API uint32_t frl_abi_version(void);
/* Static, space-separated: the CPU features this process can use ("sse2 avx2 fma ..."). */
FRL_API const char *frl_cpu_features(void);
/* Static, one "key: value" per line: version, ABI, compiler, CUDA plugin built or not,
 * and the kernels in use. */
FRL_API const char *frl_build_info(void);

/* ---------------------------------------------------------------------------------------
 * Allocator and logger (callback tables, copied when given to a runtime). */
typedef struct frl_allocator {
    size_t struct_size; /* sizeof(frl_allocator), set by frl_allocator_init */
    /* Return size bytes aligned to alignment (a power of two <= 4096), or NULL.
     * Called from any thread the library runs on. */
    void *(*alloc)(void *user, size_t size, size_t alignment);
    /* Free a pointer returned by alloc; never called with NULL. */
    void (*free)(void *user, void *ptr);
    void *user;
} frl_allocator;

/* Fill *a with the default allocator (the C library's aligned allocation). */
FRL_API void frl_allocator_init(frl_allocator *a);

typedef enum frl_log_level {
    FRL_LOG_ERROR = 0,
    FRL_LOG_WARNING = 1,
    FRL_LOG_INFO = 2,
    FRL_LOG_DEBUG = 3
} frl_log_level;

typedef struct frl_logger {
    size_t struct_size; /* sizeof(frl_logger), set by frl_logger_init */
    /* message is valid only during the call. Called from any library thread, one
     * call at a time per runtime. NULL (the default): nothing is logged. */
    void (*log)(void *user, frl_log_level level, const char *message);
    void *user;
    frl_log_level max_level; /* messages above this level are not formatted */
} frl_logger;

/* Fill *l with defaults: no log function, max_level FRL_LOG_INFO. */
FRL_API void frl_logger_init(frl_logger *l);

/* ---------------------------------------------------------------------------------------
 * Config: typed key/value settings, validated on set.
 *
 * Every key has a type, a default, a range or a list of choices, and a one-line help;
 * frl_config_next and frl_config_describe list them. A config holds only the values
 * set on it; every other key reads as its default. Keys are namespaced
 * ("runtime.threads", "env.max_episode_steps"). */
typedef struct frl_config frl_config;

typedef enum frl_config_type {
    FRL_CONFIG_INT = 1,   /* int64 */
    FRL_CONFIG_FLOAT = 2, /* double */
    FRL_CONFIG_BOOL = 3,  /* "true"/"false", "1"/"0", "yes"/"no", "on"/"off", any case */
    FRL_CONFIG_CHOICE = 4 /* one of a fixed list of strings */
} frl_config_type;

typedef struct frl_config_key_info {
    size_t struct_size;       /* set by the caller to sizeof(frl_config_key_info) */
    const char *name;         /* all strings are static */
    frl_config_type type;
    const char *default_text; /* the default, as text */
    double min;               /* INT and FLOAT: the valid range, inclusive */
    double max;
    const char *choices;      /* CHOICE: "a|b|c"; otherwise "" */
    const char *help;
} frl_config_key_info;

/* alloc may be NULL (the default allocator); it is copied. */
FRL_API frl_status frl_config_create(frl_config **out, const frl_allocator *alloc);
FRL_API void frl_config_destroy(frl_config *cfg);
/* A new config with the same values. */
FRL_API frl_status frl_config_clone(frl_config **out, const frl_config *cfg);

/* Typed setters. An unknown key gives FRL_ERR_UNKNOWN_NAME (the message lists the
 * keys of its namespace), a value of the wrong type FRL_ERR_TYPE (set_int is accepted
 * on a FLOAT key), one outside the range FRL_ERR_RANGE, NaN FRL_ERR_NONFINITE. On
 * error the config is unchanged. */
FRL_API frl_status frl_config_set_int(frl_config *cfg, const char *key, int64_t value);
FRL_API frl_status frl_config_set_float(frl_config *cfg, const char *key, double value);
FRL_API frl_status frl_config_set_bool(frl_config *cfg, const char *key, int value);
/* Set any key from text ("4", "3e-4", "true", a choice); FRL_ERR_PARSE if malformed.
 * INT keys also take a number with an exact integer value ("1e6", "0x10"). An unknown
 * choice gives FRL_ERR_UNKNOWN_NAME. */
FRL_API frl_status frl_config_set(frl_config *cfg, const char *key, const char *text);
/* Parse "key=value key=value" (spaces, tabs or newlines between pairs). Applied all or
 * nothing: on error the config is unchanged and the message names the bad pair. */
FRL_API frl_status frl_config_parse(frl_config *cfg, const char *text);
/* Remove a key's value, so it reads as its default again. */
FRL_API frl_status frl_config_unset(frl_config *cfg, const char *key);

/* Getters return the value set, or the default. cfg may be NULL (all defaults).
 * An INT key may be read with get_float; a FLOAT key not with get_int; get_int on a
 * CHOICE key gives the index of the choice. */
FRL_API frl_status frl_config_get_int(const frl_config *cfg, const char *key, int64_t *out);
FRL_API frl_status frl_config_get_float(const frl_config *cfg, const char *key, double *out);
FRL_API frl_status frl_config_get_bool(const frl_config *cfg, const char *key, int *out);
/* The value as text, into buf (always NUL-terminated); FRL_ERR_SIZE if it does not fit. */
FRL_API frl_status frl_config_get_text(const frl_config *cfg, const char *key, char *buf,
                                       size_t size);
/* 1 if the key has a value set on cfg, 0 if it reads as its default or is unknown. */
FRL_API int frl_config_is_set(const frl_config *cfg, const char *key);

/* Iterate every known key: frl_config_next(NULL) is the first, NULL after the last.
 * Static strings, any thread. */
FRL_API const char *frl_config_next(const char *key);
FRL_API frl_status frl_config_describe(const char *key, frl_config_key_info *info);

FRL_API const char *frl_config_last_error(const frl_config *cfg);

/* ---------------------------------------------------------------------------------------
 * Runtime: the thread pool, allocator, logger and base seed. Every other handle
 * belongs to one runtime, which must outlive it. */
typedef struct frl_runtime frl_runtime;

/* cfg, alloc and logger may be NULL (defaults); all are copied. Keys used:
 * runtime.threads (0 = one per core; 1 = no worker threads, all work runs on the
 * calling thread), runtime.seed (returned by frl_runtime_seed; environments take their
 * seed from reset), runtime.spin_us (how long an idle worker spins before it parks). */
FRL_API frl_status frl_runtime_create(frl_runtime **out, const frl_config *cfg,
                                      const frl_allocator *alloc, const frl_logger *logger);
/* Joins the workers. No call on this runtime or its objects may be in flight. */
FRL_API void frl_runtime_destroy(frl_runtime *rt);
/* Threads doing work, the calling thread included (>= 1). */
FRL_API int32_t frl_runtime_threads(const frl_runtime *rt);
FRL_API uint64_t frl_runtime_seed(const frl_runtime *rt);

/* A unit of parallel work: return 0 on success, anything else to fail the job (the
 * value is reported in the error message). thread_index is in [0, threads). */
typedef int (*frl_task_fn)(void *user, int32_t task_index, int32_t thread_index);

/* Run fn for every task index in [0, num_tasks) on the runtime's threads, the calling
 * thread included, and return when all are done. Tasks may run in any order; all run
 * even if one fails; the first failure is returned as FRL_ERR_CALLBACK. May be called
 * from several threads at once: jobs that need the workers are serialised, jobs that
 * run on the caller alone (one thread, or num_tasks <= 1) are not. A call from inside
 * a task runs inline on that thread. thread_index is unique among the threads running
 * tasks of one job (a nested job's tasks get the index of the thread running them). */
FRL_API frl_status frl_runtime_parallel_for(frl_runtime *rt, int32_t num_tasks,
                                            frl_task_fn fn, void *user);
FRL_API const char *frl_runtime_last_error(const frl_runtime *rt);

/* ---------------------------------------------------------------------------------------
 * Spaces: discrete(n) with int32 actions in [0, n), and box(shape, low, high) of float32. */
typedef struct frl_space frl_space;

typedef enum frl_space_kind {
    FRL_SPACE_DISCRETE = 1,
    FRL_SPACE_BOX = 2
} frl_space_kind;

/* alloc may be NULL. n in [1, 2^31). */
FRL_API frl_status frl_space_create_discrete(frl_space **out, const frl_allocator *alloc,
                                             int64_t n);
/* shape: rank values >= 1, rank in [1, 8]; low and high: product(shape) values each,
 * copied; NULL means unbounded (-inf / +inf). low <= high and no NaN, or FRL_ERR_RANGE. */
FRL_API frl_status frl_space_create_box(frl_space **out, const frl_allocator *alloc,
                                        int32_t rank, const int64_t *shape, const float *low,
                                        const float *high);
FRL_API void frl_space_destroy(frl_space *space);
FRL_API frl_space_kind frl_space_get_kind(const frl_space *space);
/* Discrete: n. Box: the number of float32 elements (the product of the shape). */
FRL_API int64_t frl_space_n(const frl_space *space);
/* Box: the rank and shape; discrete: rank 0. */
FRL_API int32_t frl_space_rank(const frl_space *space);
FRL_API const int64_t *frl_space_shape(const frl_space *space);
/* Box: frl_space_n values each; discrete: NULL. */
FRL_API const float *frl_space_low(const frl_space *space);
FRL_API const float *frl_space_high(const frl_space *space);
/* Values per environment in an action or observation array: 1 for discrete (one
 * int32), frl_space_n for box (float32). */
FRL_API int64_t frl_space_width(const frl_space *space);

/* ---------------------------------------------------------------------------------------
 * Host environments through callbacks.
 *
 * Callbacks return 0 on success and any other value on failure; the library then
 * fails the call with FRL_ERR_CALLBACK naming the env index (per-env callbacks), the
 * step and the value.
 * Observations and rewards must be finite (FRL_ERR_NONFINITE otherwise). Actions
 * are int32_t (discrete) or float (box); box actions are checked to be finite but
 * are not clipped. */
typedef struct frl_env_callbacks {
    size_t struct_size; /* sizeof(frl_env_callbacks), set by frl_env_callbacks_init */
    /* Start an episode from seed; write the first observation. Required. */
    int (*reset)(void *user, uint64_t seed, float *obs);
    /* Apply action; write obs, *reward, *terminated and *truncated (0 or 1). Required. */
    int (*step)(void *user, const void *action, float *obs, float *reward,
                uint8_t *terminated, uint8_t *truncated);
    /* Called once when the env is destroyed. Optional. */
    void (*close)(void *user);
    /* Optional simulator state of state_size float64 values (0: none). */
    int32_t state_size;
    int (*get_state)(void *user, double *state);
    int (*set_state)(void *user, const double *state);
} frl_env_callbacks;

FRL_API void frl_env_callbacks_init(frl_env_callbacks *cb);

/* One callback table for a host that steps all its agents at once (a game world).
 * Called on the thread that calls frl_vec_env_reset / frl_vec_env_step. */
typedef struct frl_batch_env_callbacks {
    size_t struct_size; /* set by frl_batch_env_callbacks_init */
    /* Reset all num_envs agents, agent i from seeds[i]; write obs[num_envs * obs_width]. */
    int (*reset)(void *user, int32_t num_envs, const uint64_t *seeds, float *obs);
    /* Step every agent i with reset_mask[i] == 0 by its action; reset every agent with
     * reset_mask[i] == 1 from seeds[i] instead (its action, reward and flags are
     * ignored). Write obs, rewards, terminated and truncated for all agents. */
    int (*step)(void *user, int32_t num_envs, const void *actions, const uint8_t *reset_mask,
                const uint64_t *seeds, float *obs, float *rewards, uint8_t *terminated,
                uint8_t *truncated);
    void (*close)(void *user); /* optional */
} frl_batch_env_callbacks;

FRL_API void frl_batch_env_callbacks_init(frl_batch_env_callbacks *cb);

/* ---------------------------------------------------------------------------------------
 * A single environment. */
typedef struct frl_env frl_env;

/* A built-in by id ("CartPole-v1"; frl_env_name_at lists them). cfg may be NULL; key
 * used: env.max_episode_steps (-1 = the id's own limit, 0 = none). */
FRL_API frl_status frl_env_create(frl_env **out, frl_runtime *rt, const char *name,
                                  const frl_config *cfg);
/* A host environment. Spaces are copied; user is passed to every callback. */
FRL_API frl_status frl_env_create_callbacks(frl_env **out, frl_runtime *rt,
                                            const frl_env_callbacks *cb, void *user,
                                            const frl_space *observation_space,
                                            const frl_space *action_space,
                                            const frl_config *cfg);
FRL_API void frl_env_destroy(frl_env *env);
/* Built-in ids: index 0.. until NULL. Static. */
FRL_API const char *frl_env_name_at(int32_t index);
FRL_API const frl_space *frl_env_observation_space(const frl_env *env);
FRL_API const frl_space *frl_env_action_space(const frl_env *env);
/* Start an episode; obs receives frl_space_width(observation space) floats. */
FRL_API frl_status frl_env_reset(frl_env *env, uint64_t seed, float *obs);
/* One step. After an episode has ended, step fails with FRL_ERR_STATE until reset.
 * An invalid action fails with FRL_ERR_RANGE / FRL_ERR_NONFINITE and changes nothing. */
FRL_API frl_status frl_env_step(frl_env *env, const void *action, float *obs, float *reward,
                                uint8_t *terminated, uint8_t *truncated);
/* The full simulator state as float64 values, the episode's elapsed steps last.
 * frl_env_state_size: how many (0 if the env has none). For built-ins set_state also
 * writes the observation of the new state to obs (may be NULL); host envs cannot
 * report one, so obs receives their last observation. Sizes must match exactly.
 * After set_state the env may be stepped without a reset. */
FRL_API int32_t frl_env_state_size(const frl_env *env);
FRL_API frl_status frl_env_get_state(frl_env *env, double *state, int32_t size);
FRL_API frl_status frl_env_set_state(frl_env *env, const double *state, int32_t size,
                                     float *obs);
FRL_API const char *frl_env_last_error(const frl_env *env);

/* ---------------------------------------------------------------------------------------
 * Vectorised environments: N environments stepped together by the runtime's threads.
 *
 * The caller writes actions into frl_vec_env_actions() and reads the results in place
 * from the other arrays; every array is contiguous, indexed by env, and stays at the
 * same address for the life of the vec env. Results of env i depend only on the seed
 * and i, never on the thread count.
 *
 * Autoreset is Gymnasium's next-step mode: the step after an episode ends resets that
 * env instead of stepping it, returns the reset observation with reward 0 and both
 * flags 0, ignores (and does not validate) its action, and sets reset_steps[i] = 1. */
typedef struct frl_vec_env frl_vec_env;

FRL_API frl_status frl_vec_env_create(frl_vec_env **out, frl_runtime *rt, const char *name,
                                      int32_t num_envs, const frl_config *cfg);
/* num_envs host environments; env i gets users[i] (the array is copied). */
FRL_API frl_status frl_vec_env_create_callbacks(frl_vec_env **out, frl_runtime *rt,
                                                const frl_env_callbacks *cb,
                                                void *const *users, int32_t num_envs,
                                                const frl_space *observation_space,
                                                const frl_space *action_space,
                                                const frl_config *cfg);
/* One host world holding num_envs agents, stepped by one batch callback. */
FRL_API frl_status frl_vec_env_create_batch(frl_vec_env **out, frl_runtime *rt,
                                            const frl_batch_env_callbacks *cb, void *user,
                                            int32_t num_envs,
                                            const frl_space *observation_space,
                                            const frl_space *action_space,
                                            const frl_config *cfg);
FRL_API void frl_vec_env_destroy(frl_vec_env *venv);
FRL_API int32_t frl_vec_env_num_envs(const frl_vec_env *venv);
FRL_API const frl_space *frl_vec_env_observation_space(const frl_vec_env *venv);
FRL_API const frl_space *frl_vec_env_action_space(const frl_vec_env *venv);

/* Reset every env; env i draws from the stream (seed, i). */
FRL_API frl_status frl_vec_env_reset(frl_vec_env *venv, uint64_t seed);
/* Step every env with the actions in frl_vec_env_actions(). Actions are validated
 * first: a bad one fails the call with its env index and no env is stepped. If per-env
 * callbacks fail, every other env is still stepped (results in the arrays), the call
 * returns the error of the lowest failing env, and each failed env reports reward 0,
 * no flags, and is reset on the next step. If a batch callback fails, no bookkeeping
 * is done for that step. After a failed reset, step fails until a reset succeeds. */
FRL_API frl_status frl_vec_env_step(frl_vec_env *venv);

/* int32_t[num_envs] (discrete) or float[num_envs * width] (box), written by the caller. */
FRL_API void *frl_vec_env_actions(frl_vec_env *venv);
FRL_API const float *frl_vec_env_observations(const frl_vec_env *venv); /* [N * width] */
FRL_API const float *frl_vec_env_rewards(const frl_vec_env *venv);      /* [N] */
FRL_API const uint8_t *frl_vec_env_terminated(const frl_vec_env *venv); /* [N] */
FRL_API const uint8_t *frl_vec_env_truncated(const frl_vec_env *venv);  /* [N] */
FRL_API const uint8_t *frl_vec_env_reset_steps(const frl_vec_env *venv);/* [N] */
/* Where terminated[i] | truncated[i]: the return and length of the episode that just
 * ended (the length counts steps, not the reset). Other entries are stale. */
FRL_API const float *frl_vec_env_episode_returns(const frl_vec_env *venv);
FRL_API const int32_t *frl_vec_env_episode_lengths(const frl_vec_env *venv);
/* Totals since create: env steps of every frl_vec_env_step call whose actions passed
 * validation (autoreset steps included, frl_vec_env_reset not), and episodes ended. */
FRL_API int64_t frl_vec_env_total_steps(const frl_vec_env *venv);
FRL_API int64_t frl_vec_env_total_episodes(const frl_vec_env *venv);
FRL_API const char *frl_vec_env_last_error(const frl_vec_env *venv);

#ifdef __cplusplus
}
#endif

#endif /* FASTRL_H */
