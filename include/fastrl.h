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
#define FRL_VERSION_MINOR 3
#define FRL_VERSION_PATCH 0
/* One comparable number, MAJOR * 10000 + MINOR * 100 + PATCH (300 for 0.3.0), for
 * "#if FRL_VERSION_NUMBER >= 300"; frl_version_number() gives the loaded library's. */
#define FRL_VERSION_NUMBER \
    (FRL_VERSION_MAJOR * 10000 + FRL_VERSION_MINOR * 100 + FRL_VERSION_PATCH)
/* The ABI: MAJOR is the soname (libfastrl.so.MAJOR); MINOR names the newest symbol
 * version node (FASTRL_0.MINOR in lib/fastrl.map) and grows with each release that adds
 * symbols. Released nodes never change (doc/api.md, "ABI and versions"). */
#define FRL_ABI_VERSION_MAJOR 0
#define FRL_ABI_VERSION_MINOR 3

/* Supported platforms: Linux with glibc on x86-64 (built and tested) and arm64 (built
 * only). The library relies on ELF symbol visibility and versioning; other systems are
 * not supported. */
#if defined(FRL_STATIC)
#define FRL_API
#elif defined(__GNUC__)
#define FRL_API __attribute__((visibility("default")))
#else
#define FRL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The initialisers of the versioned tables below (frl_allocator_init and the rest) are
 * static inline, so the caller's compiler sizes what they clear and writes its own
 * sizeof into struct_size: a program built against this header and run with a newer
 * library, whose tables have grown, keeps within its own structs. (Programs built
 * against 0.2 called exported initialisers; those symbols stay, at their old version
 * nodes, and clear only the 0.2 sizes.) */
static inline void frl_inline_zero(void *p, size_t size)
{
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < size; i++)
        b[i] = 0;
}

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
    FRL_ERR_INTERNAL = -17,        /* a bug in libfastrl: please report it */
    FRL_ERR_INTERRUPTED = -18,     /* stopped by request before finishing */
    FRL_ERR_DEVICE = -19           /* the GPU or its driver failed (networks on the device) */
} frl_status;

/* Static text naming the status ("FRL_ERR_NULL"); "FRL_ERR_UNKNOWN_STATUS" for others. */
FRL_API const char *frl_status_name(frl_status status);

/* The message of the last failing call on this thread; "" if none. The text stays
 * valid until the next failing call on this thread. Any thread. */
FRL_API const char *frl_last_error(void);

/* "0.3.0". Static. */
FRL_API const char *frl_version_string(void);
/* FRL_VERSION_NUMBER of the library actually loaded (compare with the header's). */
FRL_API uint32_t frl_version_number(void);
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
     * Called from any thread the library runs on. alloc and free both NULL (as
     * frl_allocator_init leaves them): the C library's aligned allocation. */
    void *(*alloc)(void *user, size_t size, size_t alignment);
    /* Free a pointer returned by alloc; never called with NULL. */
    void (*free)(void *user, void *ptr);
    void *user;
} frl_allocator;

/* Fill *a with the default allocator (alloc and free NULL: the C library's aligned
 * allocation). */
static inline void frl_allocator_init(frl_allocator *a)
{
    if (a) {
        frl_inline_zero(a, sizeof *a);
        a->struct_size = sizeof *a;
    }
}

typedef enum frl_log_level {
    FRL_LOG_ERROR = 0,
    FRL_LOG_WARNING = 1,
    FRL_LOG_INFO = 2,
    FRL_LOG_DEBUG = 3
} frl_log_level;

typedef struct frl_logger {
    size_t struct_size; /* sizeof(frl_logger), set by frl_logger_init */
    /* message is valid only during the call. Called from any library thread, one
     * call at a time per runtime (a library call made from it logs to it nested, on
     * the same thread). NULL (the default): nothing is logged. */
    void (*log)(void *user, frl_log_level level, const char *message);
    void *user;
    frl_log_level max_level; /* messages above this level are not formatted */
} frl_logger;

/* Fill *l with defaults: no log function, max_level FRL_LOG_INFO. */
static inline void frl_logger_init(frl_logger *l)
{
    if (l) {
        frl_inline_zero(l, sizeof *l);
        l->struct_size = sizeof *l;
        l->max_level = FRL_LOG_INFO;
    }
}

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
    FRL_CONFIG_CHOICE = 4, /* one of a fixed list of strings */
    FRL_CONFIG_INT_LIST = 5 /* up to 8 integers, as text "64,64" ("" = empty) */
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
/* An INT_LIST key: *count values into out[0..capacity); FRL_ERR_SIZE if they don't fit. */
FRL_API frl_status frl_config_get_int_list(const frl_config *cfg, const char *key,
                                           int64_t *out, int32_t capacity, int32_t *count);
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
/* The device the runtime computes on (runtime.device): "cpu", or "cuda:0 <name> (...)"
 * when the CUDA plugin found a device. Borrowed, valid while the runtime lives. */
FRL_API const char *frl_runtime_device(const frl_runtime *rt);
/* With runtime.device=auto, why the runtime stayed on the CPU; "" otherwise. */
FRL_API const char *frl_runtime_device_note(const frl_runtime *rt);
FRL_API uint64_t frl_runtime_seed(const frl_runtime *rt);

/* A unit of parallel work: return 0 on success, anything else to fail the job (the
 * value is reported in the error message). thread_index is in [0, threads). */
typedef int (*frl_task_fn)(void *user, int32_t task_index, int32_t thread_index);

/* Run fn for every task index in [0, num_tasks) on the runtime's threads, the calling
 * thread included, and return when all are done. Tasks may run in any order; all run even
 * if one fails; the first failure is returned as FRL_ERR_CALLBACK. May be called from
 * several threads at once: jobs that need the workers are serialised, jobs that run on the
 * caller alone (one thread, or num_tasks <= 1) are not. A call from inside a task of the
 * same runtime runs inline on that thread (unless that task's job had num_tasks <= 1 and so
 * ran inline itself: then the call uses the workers). thread_index is unique among the
 * threads running tasks of one job (a nested job's tasks get the index of the thread
 * running them). Nesting across runtimes must not loop back: a task of runtime A may call
 * runtime B, but B's tasks must not then call A (A's job holds its pool while B's workers
 * wait for it: a deadlock). */
FRL_API frl_status frl_runtime_parallel_for(frl_runtime *rt, int32_t num_tasks,
                                            frl_task_fn fn, void *user);
FRL_API const char *frl_runtime_last_error(const frl_runtime *rt);

/* ---------------------------------------------------------------------------------------
 * Spaces: discrete(n) and box(shape, low, high) of float32. A discrete action is one
 * int32 in [0, n); a discrete observation is one float holding the index (n <= 2^24).
 * Since 0.3, image(height, width, channels): observations of uint8 pixels, row-major
 * [height x width x channels] (channels fastest, the layout of an RGB or RGBA frame),
 * height * width * channels bytes a row in every array that holds them (vec env, ring,
 * replay, frl_act_args.observations: pass the bytes, cast). Only observations can be
 * images; a policy reads them through a convolutional encoder (policy.encoder), which
 * scales each byte to [0, 1] (doc/pixels.md).
 * Since 0.3, mixed(image, box): an image and a vector of float32 in one observation (the
 * usual game case: a frame plus health, speed, a goal). A row is the image's bytes, then
 * the box's floats (the image's byte count is a multiple of 4, so they stay aligned):
 * frl_space_width of them are bytes. The encoder reads the image part and the vector
 * part joins its features before the MLP trunk. */
typedef struct frl_space frl_space;

typedef enum frl_space_kind {
    FRL_SPACE_DISCRETE = 1,
    FRL_SPACE_BOX = 2,
    FRL_SPACE_IMAGE = 3,
    FRL_SPACE_MIXED = 4 /* since 0.3 */
} frl_space_kind;

/* alloc may be NULL. n in [1, 2^31). */
FRL_API frl_status frl_space_create_discrete(frl_space **out, const frl_allocator *alloc,
                                             int64_t n);
/* shape: rank values >= 1, rank in [1, 8], their product <= 2^31 - 1; low and high: that
 * many values each, copied; NULL means unbounded (-inf / +inf). low <= high and no NaN,
 * or FRL_ERR_RANGE. */
FRL_API frl_status frl_space_create_box(frl_space **out, const frl_allocator *alloc,
                                        int32_t rank, const int64_t *shape, const float *low,
                                        const float *high);
/* Since 0.3. Each size >= 1, channels <= 64, height * width * channels <= 2^24 and a
 * multiple of 4 (every row of the library's arrays then starts 4-byte aligned; pad the
 * width otherwise), else FRL_ERR_RANGE or FRL_ERR_SIZE saying which. */
FRL_API frl_status frl_space_create_image(frl_space **out, const frl_allocator *alloc,
                                          int32_t height, int32_t width, int32_t channels);
/* Since 0.3. image: an image space; vector: a box (any rank, read flat; its bounds are
 * kept). Both are copied. Either of the wrong kind is FRL_ERR_INVALID_ARGUMENT; a row
 * (image bytes + 4 * vector floats) over 2^31 - 1 bytes, FRL_ERR_RANGE. */
FRL_API frl_status frl_space_create_mixed(frl_space **out, const frl_allocator *alloc,
                                          const frl_space *image, const frl_space *vector);
/* Since 0.3. A mixed space's parts: 0 the image, 1 the box (owned by the space, valid as
 * long as it is); NULL for any other index or kind. */
FRL_API const frl_space *frl_space_part(const frl_space *space, int32_t index);
FRL_API void frl_space_destroy(frl_space *space);
FRL_API frl_space_kind frl_space_get_kind(const frl_space *space);
/* Discrete: n. Box: the number of float32 elements (the product of the shape). Image:
 * the number of bytes (height * width * channels). Mixed: the bytes of a row (the
 * image's plus 4 per float of the vector). */
FRL_API int64_t frl_space_n(const frl_space *space);
/* Box: the rank and shape; image: rank 3, {height, width, channels}; discrete and
 * mixed: rank 0 (a mixed space's parts have theirs). */
FRL_API int32_t frl_space_rank(const frl_space *space);
FRL_API const int64_t *frl_space_shape(const frl_space *space);
/* Box: frl_space_n values each; discrete, image and mixed: NULL (pixels are 0..255; a
 * mixed space's vector part has the bounds). */
FRL_API const float *frl_space_low(const frl_space *space);
FRL_API const float *frl_space_high(const frl_space *space);
/* Values per environment in an action or observation array: 1 for discrete (one
 * int32), frl_space_n for box (float32), image and mixed (uint8: a mixed row's vector
 * part is 4 bytes a float). */
FRL_API int64_t frl_space_width(const frl_space *space);

/* ---------------------------------------------------------------------------------------
 * Host environments through callbacks.
 *
 * Callbacks return 0 on success and any other value on failure; the library then
 * fails the call with FRL_ERR_CALLBACK naming the env index (per-env callbacks), the
 * step and the value.
 * Observations and rewards must be finite (FRL_ERR_NONFINITE otherwise). Actions
 * are int32_t (discrete) or float (box); box actions are checked to be finite but
 * are not clipped.
 * With a discrete(n) observation space (n <= 2^24, so every index is exact in a float)
 * a callback writes one float per env, the state's index: a value that is not an
 * integer in [0, n), NaN and infinities included, fails the call with FRL_ERR_RANGE
 * naming the env and the value. The policy makes the one-hot row itself. Image
 * observations are bytes: any value is valid. */

/* A frame a host env rendered (see frl_env_callbacks.frame). The pixels stay the host's:
 * the library copies what it needs right after the callback returns and keeps no
 * pointer, so the buffer may be rendered over on the next step. */
typedef struct frl_frame {
    size_t struct_size;
    const uint8_t *pixels;   /* the first byte of the top row */
    int32_t height, width;   /* must equal the image space's height and width */
    int32_t channels;        /* bytes per pixel in the buffer, >= the space's channels */
    /* Bytes from the start of one row to the next: at least width * channels, more for
     * padded rows; negative for a bottom-up buffer (glReadPixels), pixels then pointing
     * at the top row, the last one in memory. */
    int64_t row_stride;
} frl_frame;

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
    /* Since 0.3, image and mixed observation spaces only, optional: the frame the env
     * has just rendered, described in *frame (zeroed by the library, struct_size set)
     * instead of written into obs. Called after every successful reset and step; the library copies
     * the space's channels out of it (the first `channels` bytes of each pixel: RGBA
     * gives RGB), honouring the row stride, so an engine hands its render target as it
     * is. Without it, reset and step write height * width * channels bytes into obs
     * themselves (cast obs to uint8_t *). With a mixed space reset and step write the
     * vector part (its floats start at byte height * width * channels of obs) and
     * either the image part too or, with this callback, not: the frame fills it. */
    int (*frame)(void *user, frl_frame *frame);
} frl_env_callbacks;

/* Fill *cb with defaults: no callbacks, state_size 0. */
static inline void frl_env_callbacks_init(frl_env_callbacks *cb)
{
    if (cb) {
        frl_inline_zero(cb, sizeof *cb);
        cb->struct_size = sizeof *cb;
    }
}

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

static inline void frl_batch_env_callbacks_init(frl_batch_env_callbacks *cb)
{
    if (cb) {
        frl_inline_zero(cb, sizeof *cb);
        cb->struct_size = sizeof *cb;
    }
}

/* ---------------------------------------------------------------------------------------
 * A single environment. */
typedef struct frl_env frl_env;

/* A built-in by id ("CartPole-v1"; frl_env_name_at lists them). cfg may be NULL; key
 * used: env.max_episode_steps (-1 = the id's own limit, 0 = none); MemoryProbe-v0 also
 * reads env.memory_cues and env.memory_delay. */
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
/* Start an episode; obs receives one observation: frl_space_width(observation space)
 * floats for a box or discrete space, that many bytes for an image or mixed one. */
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
/* Since 0.3. num_envs envs of the first-person task `task` (RayRoom-v0 or
 * RayCollect-v0) on a map of the host's own instead of the task's room. map is text,
 * one line a row, every row the same length (3 to 31 cells a side): '.' or ' ' floor,
 * '1' to '4' (or '#') a wall of that texture, 'D' a door that the `use` action opens.
 * The edge must be wall or door and the floor one connected region. A map that cannot
 * be built fails with FRL_ERR_PARSE (a bad character or row length), FRL_ERR_SIZE or
 * FRL_ERR_INVALID_ARGUMENT, naming the row and column; RayMaze-v0, which makes its own
 * mazes, with FRL_ERR_UNSUPPORTED. cfg: as frl_vec_env_create (env.width, ...). The
 * result is a host env (frl_vec_env_name is NULL): a run on it continues only through
 * frl_trainer_load_vec, on the same map. */
FRL_API frl_status frl_vec_env_create_ray_map(frl_vec_env **out, frl_runtime *rt,
                                              const char *task, const char *map,
                                              int32_t num_envs, const frl_config *cfg);
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
/* The built-in id venv was made from ("CartPole-v1", a MuJoCo task's; also a trainer's
 * own vec env, loaded ones included), or NULL for host envs (a ray task on a host's map
 * too). New in 0.3. */
FRL_API const char *frl_vec_env_name(const frl_vec_env *venv);

/* Reset every env; env i draws from the stream (seed, i). */
FRL_API frl_status frl_vec_env_reset(frl_vec_env *venv, uint64_t seed);
/* Step every env with the actions in frl_vec_env_actions(). Actions are validated
 * first: a bad one fails the call with its env index and no env is stepped. If per-env
 * callbacks fail, every other env is still stepped (results in the arrays), the call
 * returns the error of the lowest failing env, and each failed env reports reward 0,
 * no flags, and is reset on the next step (a failed autoreset again, with the same
 * seed). If a batch callback fails, no bookkeeping is done for that step (its resets
 * get the same seeds on the next). After a failed reset, step fails until a reset
 * succeeds.
 * A reset or step called while one runs on the same vec env (from one of its own
 * callbacks), or on a vec env a trainer holds (frl_trainer_vec_env, or one given to a
 * trainer until it is destroyed), fails with FRL_ERR_STATE and does nothing. */
FRL_API frl_status frl_vec_env_step(frl_vec_env *venv);

/* int32_t[num_envs] (discrete) or float[num_envs * width] (box), written by the caller. */
FRL_API void *frl_vec_env_actions(frl_vec_env *venv);
FRL_API const float *frl_vec_env_observations(const frl_vec_env *venv); /* [N * width] */
/* Since 0.3: an image space's observations as bytes, [N x height x width x channels],
 * or a mixed space's rows as bytes ([N x frl_space_n], each the image then the vector);
 * NULL for any other space (the pointer is the same as frl_vec_env_observations'). */
FRL_API const uint8_t *frl_vec_env_frames(const frl_vec_env *venv);
FRL_API const float *frl_vec_env_rewards(const frl_vec_env *venv);      /* [N] */
FRL_API const uint8_t *frl_vec_env_terminated(const frl_vec_env *venv); /* [N] */
FRL_API const uint8_t *frl_vec_env_truncated(const frl_vec_env *venv);  /* [N] */
FRL_API const uint8_t *frl_vec_env_reset_steps(const frl_vec_env *venv);/* [N] */
/* Where terminated[i] | truncated[i]: the return and length of the episode that just
 * ended (the length counts steps, not the reset, up to 2^31 - 1). Other entries are
 * stale. */
FRL_API const float *frl_vec_env_episode_returns(const frl_vec_env *venv);
FRL_API const int32_t *frl_vec_env_episode_lengths(const frl_vec_env *venv);
/* Totals since create: env steps of every frl_vec_env_step call whose actions passed
 * validation (autoreset steps included, frl_vec_env_reset not), and episodes ended. */
FRL_API int64_t frl_vec_env_total_steps(const frl_vec_env *venv);
FRL_API int64_t frl_vec_env_total_episodes(const frl_vec_env *venv);
FRL_API const char *frl_vec_env_last_error(const frl_vec_env *venv);

/* ---------------------------------------------------------------------------------------
 * MuJoCo models of the host's own (with the MuJoCo plugin; doc/environments.md).
 *
 * The host gives an MJCF model and callbacks that read MuJoCo's data; the library
 * compiles the model once, gives each env its own mjData and steps the envs on its
 * threads: ctrl = the action, env.frame_skip mj_step calls (1 by default), then observe
 * and reward. `model` and `data` are the const mjModel * and mjData * of the MuJoCo the
 * plugin was built against (frl_mujoco_version; read them with that version's
 * mujoco.h, or find its arrays by name with frl_mujoco_array below). Callbacks run on
 * library threads, several at once for different envs (`env` says which), and must not
 * call into libfastrl except frl_mujoco_array and frl_mujoco_name_id. They return 0,
 * or nonzero to fail the step or reset as host callbacks do (FRL_ERR_CALLBACK naming
 * env and value).
 * A step in which MuJoCo raises a warning or the state stops being finite ends the
 * episode (truncated, reward 0) with a warning in the runtime's log, and the run goes
 * on. get_state / set_state, checkpoints included, hold MuJoCo's full physics state. */
typedef struct frl_mujoco_callbacks {
    size_t struct_size; /* sizeof(frl_mujoco_callbacks), set by frl_mujoco_callbacks_init */
    /* Write observation_width floats for the env's current data. Required. */
    int (*observe)(void *user, int32_t env, const void *model, const void *data, float *obs);
    /* The reward of the step that led to data and whether the episode terminated;
     * action holds the floats applied (before MuJoCo clamps them). Required. */
    int (*reward)(void *user, int32_t env, const void *model, const void *data,
                  const float *action, float *reward, uint8_t *terminated);
    /* A new episode's initial state: called after mj_resetData to change data (qpos,
     * qvel, a target's position, ...), drawing from seed; mj_forward follows. Optional
     * (NULL: the model's initial state). A value of the state left NaN or infinite
     * (qpos, qvel, act, ctrl, applied forces, mocap, userdata, time) fails the reset,
     * naming it, as does a warning from MuJoCo in that mj_forward. */
    int (*reset)(void *user, int32_t env, const void *model, void *data, uint64_t seed);
    /* What env.randomize_mass, env.randomize_friction and env.randomize_damping apply
     * to: NULL-terminated lists of the model's body, geom and joint names (a joint's
     * dofs take its damping factor). NULL (the default): every body, geom and dof. Read
     * during frl_vec_env_create_mujoco only; a name the model lacks fails it. */
    const char *const *randomize_bodies;
    const char *const *randomize_geoms;
    const char *const *randomize_joints;
} frl_mujoco_callbacks;

/* Fill *cb with defaults: no callbacks. */
static inline void frl_mujoco_callbacks_init(frl_mujoco_callbacks *cb)
{
    if (cb) {
        frl_inline_zero(cb, sizeof *cb);
        cb->struct_size = sizeof *cb;
    }
}

/* num_envs envs of the MJCF model mjcf: the XML itself when it starts with '<' (after
 * a UTF-8 byte order mark and white space), else a file path. Observations: a box of
 * observation_width unbounded floats (1..65536); actions: a box of the actuators'
 * ctrlrange (unbounded for an actuator without ctrllimited). cfg keys: env.frame_skip,
 * env.max_episode_steps (-1 or 0: no time limit), env.randomize_mass,
 * env.randomize_friction, env.randomize_damping.
 * A model MuJoCo cannot load or compile fails with FRL_ERR_INVALID_ARGUMENT carrying
 * MuJoCo's message; a model without actuators, or with a limited actuator whose
 * ctrlrange is not finite with low <= high, FRL_ERR_INVALID_ARGUMENT; without the
 * plugin, FRL_ERR_UNSUPPORTED saying why. */
FRL_API frl_status frl_vec_env_create_mujoco(frl_vec_env **out, frl_runtime *rt,
                                             const char *mjcf, const frl_mujoco_callbacks *cb,
                                             void *user, int32_t observation_width,
                                             int32_t num_envs, const frl_config *cfg);
/* The version of the MuJoCo the plugin runs ("4.0.0"), loading the plugin if needed;
 * NULL when there is no plugin. */
FRL_API const char *frl_mujoco_version(void);

/* The element types of frl_mujoco_array. */
typedef enum frl_mujoco_type {
    FRL_MUJOCO_FLOAT64 = 1, /* mjtNum */
    FRL_MUJOCO_FLOAT32 = 2,
    FRL_MUJOCO_INT32 = 3,
    FRL_MUJOCO_UINT8 = 4,   /* mjtByte, mjtBool */
    FRL_MUJOCO_INT64 = 5    /* mjtSize */
} frl_mujoco_type;

/* For hosts that read MuJoCo's structs without its headers (the Python binding): where
 * the array `name` lies, with model and data as the callbacks get them. data NULL: an
 * array of mjModel ("body_mass", "geom_friction", "actuator_ctrlrange", ...), else one
 * of mjData ("qpos", "qvel", "xpos", "site_xpos", "sensordata", ...; its scalars such
 * as "time" and "ncon" as 1 x 1 arrays, "energy" as 2 x 1): the fields mujoco.h
 * declares (its mjxmacro.h lists them), except arrays of structs, strings and
 * pointers. *ptr holds rows x cols elements of *type (frl_mujoco_type), row-major;
 * rows is the model's count (nq, nbody, ...); an empty array gives rows or
 * cols 0 and *ptr NULL. The pointer lives as long as the model or data: an env's, as
 * long as its vec env; except the arrays each step lays out again in mjData's arena
 * (the solver's "efc_force", "efc_J", ..., sized by "nefc"), valid during one call.
 * A data array is the env's to change only inside its reset callback, a model array
 * never (a randomising env's model is its own copy, changed
 * at each reset). Unknown name: FRL_ERR_UNKNOWN_NAME; no plugin: FRL_ERR_UNSUPPORTED.
 * May be called from the callbacks. ptr, rows, cols and type may each be NULL. */
FRL_API frl_status frl_mujoco_array(const void *model, const void *data, const char *name,
                                    void **ptr, int64_t *rows, int64_t *cols, int32_t *type);
/* The index of the object `name` of `kind` ("body", "joint", "geom", "site",
 * "actuator", "sensor", "tendon", "camera", ... as MJCF names them) in model, to index
 * the arrays above (xpos's row of a body). No such object: FRL_ERR_UNKNOWN_NAME; no
 * such kind: FRL_ERR_INVALID_ARGUMENT. May be called from the callbacks. */
FRL_API frl_status frl_mujoco_name_id(const void *model, const char *kind, const char *name,
                                      int32_t *id);

/* ---------------------------------------------------------------------------------------
 * Policies: a network mapping observations to an action distribution and a value.
 *
 * Built from config keys policy.* (frl_config_next lists them): an MLP trunk
 * (policy.hidden = "64,64", policy.activation = tanh|relu|elu), separate or shared for
 * actor and critic (policy.shared), a categorical head for a discrete action space or
 * a diagonal Gaussian with a learned state-independent log-std for a box, and optional
 * observation normalisation (policy.obs_norm) whose statistics are saved with it.
 * The observation space is a box, or discrete(n) with n <= 2^24: each row is then one
 * float, the index, which the networks see as a one-hot row of n values (an embedding
 * lookup in the first layer). policy.obs_norm is refused with it
 * (FRL_ERR_INVALID_ARGUMENT), and so is a runtime on a CUDA device
 * (FRL_ERR_UNSUPPORTED): discrete observations run on the CPU for now. */
typedef struct frl_policy frl_policy;

FRL_API frl_status frl_policy_create(frl_policy **out, frl_runtime *rt, const frl_config *cfg,
                                     const frl_space *observation_space,
                                     const frl_space *action_space);
FRL_API void frl_policy_destroy(frl_policy *policy);
FRL_API const frl_space *frl_policy_observation_space(const frl_policy *policy);
FRL_API const frl_space *frl_policy_action_space(const frl_policy *policy);
/* Trainable float32 parameters (weights, biases, log-std). */
FRL_API int64_t frl_policy_num_parameters(const frl_policy *policy);
/* Incremented by every learner update; 0 after create. */
FRL_API uint64_t frl_policy_version(const frl_policy *policy);

/* One call of frl_policy_act. Set struct_size with frl_act_args_init; fields added in
 * later versions go at the end and default to "off". */
typedef struct frl_act_args {
    size_t struct_size;
    int32_t batch;               /* rows, >= 1 */
    const float *observations;   /* [batch * observation width]: finite (box), or each an
                                    index in [0, n) (discrete(n), width 1) */
    void *actions;               /* out: int32_t[batch] (discrete) or float[batch * width] */
    float *log_probs;            /* out, optional: [batch] log-probability of each action */
    float *values;               /* out, optional: [batch] value estimates */
    int32_t deterministic;       /* 1: the mode (argmax or mean) instead of a sample */
    /* Row i samples from the random stream (policy seed, stream_offset + i) at position
     * counter: the same inputs give the same actions on any thread. Advance counter
     * between calls (the trainer uses the env index and its step count). */
    uint64_t stream_offset;
    uint64_t counter;
    /* Optional caller-owned scratch of frl_policy_workspace_size() bytes, 64-byte
     * aligned. With it, act may run on several threads at once; without it, act uses
     * the policy's own scratch under a lock. Any batch size works with any workspace:
     * rows are processed in chunks of the workspace's capacity. */
    void *workspace;
    size_t workspace_size;
    /* Since 0.3, and required: the values per row of observations and of actions as
     * the caller laid them out. They must equal frl_space_width of the policy's
     * observation and action spaces, or act fails with FRL_ERR_SIZE naming both, so a
     * policy paired with another env's arrays (or a short action buffer) is an error
     * instead of reads and writes past each row. Not checked for callers built against
     * 0.2, whose struct_size ends before them. */
    int64_t observation_width;
    int64_t action_width;
    /* Since 0.3: the recurrent state of a policy with a core (policy.core gru or lstm)
     * or the earlier frames of a frame stack (policy.frame_stack),
     * [batch x state_width] floats the caller owns and act reads and replaces in place,
     * row i being the state of the agent of observation row i. A new agent's row starts
     * as zeros; reset (optional, [batch]) zeroes row i first where reset[i] != 0, so the
     * vec env's frl_vec_env_reset_steps array can be passed as it is. state_width must
     * be frl_policy_state_size(policy): 0 (and state may be NULL) for a policy without
     * a core, so a host written for state runs every policy with the same calls. A
     * policy with a core and a caller that passes no state fail with FRL_ERR_NULL. */
    float *state;
    int64_t state_width;
    const uint8_t *reset;
    /* Since 0.3, optional: [batch x frl_policy_output_size] floats, the head's raw
     * outputs of each row: the categorical logits, the Gaussian means, or the
     * Q-values (what an exported policy's forward gives, doc/export.md). */
    float *outputs;
} frl_act_args;

/* Zero *args and set struct_size; the caller then sets batch, the arrays and the widths. */
static inline void frl_act_args_init(frl_act_args *args)
{
    if (args) {
        frl_inline_zero(args, sizeof *args);
        args->struct_size = sizeof *args;
    }
}
/* Floats of recurrent state per row of frl_act_args.state: 0 for a policy without a
 * core, h for policy.core=gru, 2 h for lstm (h then c), per core (two cores with
 * policy.shared=false: the actor's, then the critic's). A frame stack
 * (policy.frame_stack = k > 1) keeps its k - 1 earlier frames there instead, oldest
 * first, each frame's bytes taking bytes / 4 floats. */
FRL_API int64_t frl_policy_state_size(const frl_policy *policy);
/* Floats per row of frl_act_args.outputs: the number of actions (discrete) or the
 * action width (box). 0 for NULL. */
FRL_API int64_t frl_policy_output_size(const frl_policy *policy);
/* Bytes of workspace that hold rows_per_chunk rows (>= 1) of activations. */
FRL_API size_t frl_policy_workspace_size(const frl_policy *policy, int32_t rows_per_chunk);
/* Compute actions (and optionally log-probs and values) for a batch. Runs on the
 * calling thread and never allocates. Non-finite box observations give
 * FRL_ERR_NONFINITE naming the row, discrete ones that are not an index in [0, n)
 * FRL_ERR_RANGE naming the row and the value; nothing is written then. */
FRL_API frl_status frl_policy_act(frl_policy *policy, const frl_act_args *args);

/* One call of frl_policy_evaluate. Fill with frl_eval_args_init; fields added in later
 * versions go at the end. */
typedef struct frl_eval_args {
    size_t struct_size;
    int32_t episodes;      /* episodes to run, >= 1 (default 100) */
    int32_t deterministic; /* 1 (default): the mode (argmax or mean); 0: sample */
    uint64_t seed;         /* the vec env is reset from this seed (default 0); sampled
                              actions of env i of N draw from the policy's stream
                              seed * N + i */
    /* Out, optional: [episodes] each, env 0's episodes first, then env 1's, ... */
    double *returns;
    int32_t *lengths;
    /* Give up with FRL_ERR_RANGE after this many env steps (all envs counted) without
     * finishing (default 10,000,000; 0 = no limit). */
    int64_t max_steps;
} frl_eval_args;

static inline void frl_eval_args_init(frl_eval_args *args)
{
    if (args) {
        frl_inline_zero(args, sizeof *args);
        args->struct_size = sizeof *args;
        args->episodes = 100;
        args->deterministic = 1;
        args->max_steps = 10000000;
    }
}

/* Run whole episodes of the policy on venv (reset first) and report their returns.
 * Env i of the N envs runs a fixed quota of episodes (episodes / N, one more for the
 * first episodes % N), so short episodes are not favoured. Box actions are clipped to
 * the action space, as the trainer does. The spaces of policy and venv must match
 * (kind, discrete n, box shape; bounds may differ), or FRL_ERR_SIZE naming both.
 * mean_return (may be NULL) receives the mean. Runs on the calling thread and venv's
 * runtime; allocates per call. */
FRL_API frl_status frl_policy_evaluate(frl_policy *policy, frl_vec_env *venv,
                                       const frl_eval_args *args, double *mean_return);

/* Save the policy (spaces, settings, weights, normaliser) to path: a versioned,
 * zstd-compressed, checksummed file written to a temporary name, fsync'd and renamed,
 * so a crash leaves the previous file intact. */
FRL_API frl_status frl_policy_save(const frl_policy *policy, const char *path);
/* Load a policy saved by frl_policy_save or a trainer checkpoint. Truncated, corrupted
 * or foreign files give FRL_ERR_FORMAT, newer format versions FRL_ERR_VERSION. */
FRL_API frl_status frl_policy_load(frl_policy **out, frl_runtime *rt, const char *path);
FRL_API const char *frl_policy_last_error(const frl_policy *policy);

/* Since 0.3: write the policy's acting path (its observation normaliser included) for
 * use without the library (doc/export.md). options (NULL: the defaults) are read for
 * the export.* keys:
 * - export.format=onnx (default): an ONNX model at path (opset 17) with input
 *   "observation" (float [batch x obs width]; uint8 [batch, H, W, C] for a conv
 *   encoder; a mixed space adds "vector", float [batch x V]) and outputs "logits", or
 *   "mean" and "log_std", or "q", then "value" [batch] and "action" (the greedy
 *   action: int64 [batch], or the mean); a recurrent policy adds the input "state" and
 *   the output "state_out" (floats), a frame stack of k the same as uint8
 *   [batch, k-1, H, W, C], its earlier frames. Sampling stays with the host.
 * - export.format=c: C99 source, path.h and path.c (path's last part, a C identifier,
 *   names every symbol), needing only <math.h>; export.weights=int8 quantises the
 *   weights per output channel; export.probe=true adds path_probe.c, a main() timing
 *   the act function on the target.
 * Files are written atomically (as frl_policy_save; the C files are all written before
 * any is renamed, one at a time: FRL_ERR_IO from a rename or the directory's sync may
 * leave new files in place, a mismatched pair failing to compile). Errors:
 * FRL_ERR_NULL (policy or path), FRL_ERR_INVALID_ARGUMENT for a name that is not a C
 * identifier, for export.weights=int8 or export.probe=true with export.format=onnx, or
 * for a path longer than 4,032 bytes (either format), FRL_ERR_UNSUPPORTED for a
 * recurrent Q-policy (an R2D2 run's), FRL_ERR_NONFINITE for non-finite
 * parameters, FRL_ERR_IO naming the path, FRL_ERR_NOMEM; nothing at the path changes
 * then, but for the renames' FRL_ERR_IO. Reads the parameters: not while a
 * trainer updates this policy on another thread. */
FRL_API frl_status frl_policy_export(frl_policy *policy, const char *path,
                                     const frl_config *options);

/* ---------------------------------------------------------------------------------------
 * Populations and neuroevolution (since 0.3; doc/neuroevolution.md).
 *
 * A population is P members of one policy's architecture: the parameters its acting path
 * reads (the trunk and the actor; not the critic or a Gaussian's log-std, which members
 * share with the policy), one row of frl_population_member_size floats per member, in one
 * [P x n] block the host may read and write. The population keeps a pointer to its policy
 * (which must outlive it) and acts with the policy's normaliser and head. */
typedef struct frl_population frl_population;

/* A population of members copies of policy's acting parameters. Recurrent policies are
 * refused (FRL_ERR_UNSUPPORTED); a block too large for memory is FRL_ERR_NOMEM. */
FRL_API frl_status frl_population_create(frl_population **out, frl_policy *policy,
                                         int32_t members);
FRL_API void frl_population_destroy(frl_population *population);
FRL_API int32_t frl_population_members(const frl_population *population);
/* n: floats per member (a prefix of the policy's parameter vector). */
FRL_API int64_t frl_population_member_size(const frl_population *population);
/* The [members x n] block, row-major, writable; valid for the population's life. */
FRL_API float *frl_population_parameters(frl_population *population);
/* Write member's parameters into policy (of the same architecture: FRL_ERR_SIZE for
 * another parameter count, FRL_ERR_INVALID_ARGUMENT for another network of as many),
 * which then acts, evaluates, saves and exports as that member. */
FRL_API frl_status frl_population_copy_to_policy(const frl_population *population,
                                                 int32_t member, frl_policy *policy);

/* One call of frl_population_act; fill with frl_population_act_args_init. */
typedef struct frl_population_act_args {
    size_t struct_size;
    int32_t batch;               /* rows, >= 1 */
    const float *observations;   /* [batch x observation width] */
    const int32_t *members;      /* [batch]: the member acting for each row, in [0, P) */
    void *actions;               /* out: int32_t[batch] or float[batch x action width] */
    int32_t deterministic;       /* 1: the mode; 0: sample (row i: stream stream_offset + i) */
    uint64_t stream_offset;
    uint64_t counter;
    int64_t observation_width;   /* must equal the policy's (FRL_ERR_SIZE otherwise) */
    int64_t action_width;
} frl_population_act_args;

static inline void frl_population_act_args_init(frl_population_act_args *args)
{
    if (args) {
        frl_inline_zero(args, sizeof *args);
        args->struct_size = sizeof *args;
    }
}

/* Act for rows of different members in one call: the rows are grouped by member and each
 * group runs through the networks with that member's weights (no weights are copied),
 * spread over the runtime's threads. Row i's action is bit-identical to that of
 * frl_policy_act on a policy holding member members[i]'s parameters with the same
 * stream. A member index out of range is FRL_ERR_RANGE naming the row, an observation
 * frl_policy_act refuses is refused as there; nothing is written then. A member whose
 * network gives a non-finite output is FRL_ERR_NONFINITE naming it, and the actions are
 * then undefined. Never allocates. Not thread-safe on one population. */
FRL_API frl_status frl_population_act(frl_population *population,
                                      const frl_population_act_args *args);

/* One call of frl_population_evaluate; fill with frl_population_eval_args_init. */
typedef struct frl_population_eval_args {
    size_t struct_size;
    int32_t episodes;            /* per member, >= 1 (default 1) */
    int32_t deterministic;       /* 1 (default): the mode; 0: sample */
    uint64_t seed;               /* the vec env is reset from this seed first */
    /* Cut an episode after this many steps (0, the default: the env's own limit). The
     * env then runs that episode out with idle actions before it takes the next one. */
    int64_t max_episode_steps;
    double *returns;             /* out, optional: [members] mean return per member */
    int64_t *steps;              /* out, optional: [members] env steps per member */
    /* Out, optional: [members] mean episode length per member. */
    double *lengths;
    /* Optional: merge every observation acted on into the policy's normaliser's running
     * statistics (policy.obs_norm), as OpenAI-ES gathers them from its rollouts; once the
     * call succeeds the policy acts with them (a failed call leaves them as they were). */
    int32_t update_obs_norm;
    /* Give up with FRL_ERR_RANGE after this many env steps in all without finishing
     * (default 10,000,000; 0 = no limit), as frl_eval_args.max_steps. */
    int64_t max_steps;
} frl_population_eval_args;

static inline void frl_population_eval_args_init(frl_population_eval_args *args)
{
    if (args) {
        frl_inline_zero(args, sizeof *args);
        args->struct_size = sizeof *args;
        args->episodes = 1;
        args->deterministic = 1;
        args->max_steps = 10000000;
    }
}

/* Run episodes of every member on venv (its envs shared by all members): each env takes
 * the next pending (member, episode) when its episode ends, and only the envs whose
 * episodes are running go through inference (frl_population_act on the compacted rows).
 * Spaces as frl_policy_evaluate. Its arrays are a block the population keeps (a call
 * allocates only when it needs a larger one); the runtime's threads act. *env_steps (may
 * be NULL): the episodes' steps in all. */
FRL_API frl_status frl_population_evaluate(frl_population *population, frl_vec_env *venv,
                                           const frl_population_eval_args *args,
                                           int64_t *env_steps);
/* The same over count (1 or 2) vec envs with the same spaces, whose envs the members share:
 * with two, one vec env steps while the other's actions are computed (on two of the
 * runtime's threads), as a pipeline. Group g is reset from seed + g * 0x9e3779b97f4a7c15.
 * venvs[0] and venvs[1] must differ. */
FRL_API frl_status frl_population_evaluate_groups(frl_population *population,
                                                  frl_vec_env *const *venvs, int32_t count,
                                                  const frl_population_eval_args *args,
                                                  int64_t *env_steps);
FRL_API const char *frl_population_last_error(const frl_population *population);

/* Ask/tell optimisers over parameter vectors: OpenAI-ES or Deep GA, chosen by
 * train.algo=es|ga and configured by the es.* or ga.* keys. The host asks for a
 * generation's P parameter vectors, evaluates them however it likes, and tells their
 * fitnesses (higher is better). */
typedef struct frl_evo frl_evo;

/* An optimiser of num_params parameters starting at initial (num_params floats):
 * ES's centre, or the base of every GA genome. Memory: ES keeps es.noise_floats + 3 n
 * floats and n doubles, GA (P + T + 2) n floats (T = ga.truncation) plus the genomes
 * (frl_evo_memory_size). */
FRL_API frl_status frl_evo_create(frl_evo **out, frl_runtime *rt, const frl_config *cfg,
                                  int64_t num_params, const float *initial);
FRL_API void frl_evo_destroy(frl_evo *evo);
/* Bytes an optimiser of these settings and num_params takes (before any GA genome grows). */
FRL_API frl_status frl_evo_memory_size(const frl_config *cfg, int64_t num_params,
                                       size_t *bytes);
FRL_API int32_t frl_evo_population(const frl_evo *evo);
FRL_API int64_t frl_evo_num_parameters(const frl_evo *evo);
/* Generations told so far. */
FRL_API int64_t frl_evo_generation(const frl_evo *evo);
/* Write this generation's members into params, [P x num_params] (count floats, which
 * must be P * num_params). Asking again before tell gives the same members. */
FRL_API frl_status frl_evo_ask(frl_evo *evo, float *params, int64_t count);
/* The fitness of each member asked for (count must be P). A non-finite fitness is
 * FRL_ERR_NONFINITE naming the member; tell before ask (or a second tell of one
 * generation) is FRL_ERR_STATE; GA: FRL_ERR_RANGE where a member's fitness sum would pass
 * a double's range, FRL_ERR_NOMEM where the genomes cannot grow (a seed a generation); ES:
 * FRL_ERR_NONFINITE where the update would leave float's range (a diverged centre). The
 * optimiser is unchanged on any failure. */
FRL_API frl_status frl_evo_tell(frl_evo *evo, const double *fitness, int32_t count);
/* The parameters to keep (count floats, num_params): ES's centre; GA's best member of the
 * generation last told by its mean fitness over every generation it was evaluated in,
 * among the members evaluated in three generations or more (the most evaluated while none
 * is); before the first tell, GA gives the base (initial). *fitness (may be NULL): that
 * mean (ES: the mean fitness of the last generation); NaN before the first tell. */
FRL_API frl_status frl_evo_best(const frl_evo *evo, float *params, int64_t count,
                                double *fitness);
/* GA: the seeds of member's genome as asked (the first makes its starting point, each
 * further one a mutation). capacity: room in seeds; *length: the genome's length (seeds
 * may be NULL to ask for it). FRL_ERR_SIZE if capacity is short, FRL_ERR_UNSUPPORTED
 * for ES. */
FRL_API frl_status frl_evo_genome(const frl_evo *evo, int32_t member, uint64_t *seeds,
                                  int32_t capacity, int32_t *length);
/* GA: the parameters of a genome rebuilt from its seeds alone (no cache): bit-identical
 * to the member that had it. */
FRL_API frl_status frl_evo_rebuild(const frl_evo *evo, const uint64_t *seeds, int32_t length,
                                   float *params, int64_t count);
/* The built-in loop: for each of generations generations, ask, call fitness on the
 * whole population, tell. fitness returns 0, or anything else to stop (the call then
 * returns FRL_ERR_CALLBACK). From inside fitness, frl_evo_ask, _tell, _run and _load
 * on the same optimiser fail with FRL_ERR_STATE (they would change the generation
 * being evaluated). */
typedef int (*frl_fitness_fn)(void *user, const float *params, int32_t members,
                              int64_t num_params, double *fitness);
FRL_API frl_status frl_evo_run(frl_evo *evo, frl_fitness_fn fitness, void *user,
                               int64_t generations);
/* Save the optimiser's whole state (atomic, checksummed, as frl_policy_save), and load it
 * into an optimiser created with the same algorithm, P, num_params, seed, es.noise_floats,
 * ga.sigma and ga.init_sigma (FRL_ERR_SIZE or FRL_ERR_INVALID_ARGUMENT naming what
 * differs; the other es.* and ga.* settings may differ and act from the next generation;
 * FRL_ERR_FORMAT for a corrupted file or values no optimiser holds; the optimiser is
 * unchanged on failure). A GA is saved as its genomes' seed lists. */
FRL_API frl_status frl_evo_save(const frl_evo *evo, const char *path);
FRL_API frl_status frl_evo_load(frl_evo *evo, const char *path);
FRL_API const char *frl_evo_last_error(const frl_evo *evo);

/* ---------------------------------------------------------------------------------------
 * The experience ring: preallocated slots, each a [T x B] block (T steps of B
 * environments, row t * B + b) of every array a learner needs. A sampler writes each
 * step straight into its slot, a learner reads it in place, and the host may read any
 * array through frl_ring_array. Arrays are named by an enum, so new arrays (recurrent
 * states, policy ids for populations) can be added without changing this interface. */
typedef struct frl_ring frl_ring;

typedef enum frl_ring_array_id {
    FRL_RING_OBSERVATIONS = 0, /* float [T*B*obs width]: observation the action saw */
    FRL_RING_ACTIONS = 1,      /* int32 [T*B] or float [T*B*action width], as sampled */
    FRL_RING_LOG_PROBS = 2,    /* float [T*B] */
    FRL_RING_VALUES = 3,       /* float [T*B] */
    FRL_RING_REWARDS = 4,      /* float [T*B] */
    FRL_RING_TERMINATED = 5,   /* uint8 [T*B] */
    FRL_RING_TRUNCATED = 6,    /* uint8 [T*B] */
    FRL_RING_RESET_STEPS = 7,  /* uint8 [T*B]: 1 = an autoreset step, not a transition */
    FRL_RING_POLICY_VERSION = 8, /* uint64 [T]: policy version that acted at step t */
    FRL_RING_BOOTSTRAP_OBS = 9,  /* float [B*obs width]: observation after the last step */
    FRL_RING_ARRAY_COUNT = 10
} frl_ring_array_id;

typedef enum frl_slot_state {
    FRL_SLOT_FREE = 0,    /* may be acquired for writing */
    FRL_SLOT_WRITING = 1, /* a sampler is filling it */
    FRL_SLOT_READY = 2,   /* complete, waiting for a learner */
    FRL_SLOT_READING = 3  /* a learner is reading it */
} frl_slot_state;

/* Bytes a ring of these dimensions takes (all slots, all arrays, alignment included). */
FRL_API frl_status frl_ring_memory_size(int32_t slots, int32_t steps, int32_t envs,
                                        const frl_space *observation_space,
                                        const frl_space *action_space, size_t *bytes);
FRL_API frl_status frl_ring_create(frl_ring **out, frl_runtime *rt, int32_t slots,
                                   int32_t steps, int32_t envs,
                                   const frl_space *observation_space,
                                   const frl_space *action_space);
FRL_API void frl_ring_destroy(frl_ring *ring);
FRL_API int32_t frl_ring_slots(const frl_ring *ring);
FRL_API int32_t frl_ring_steps(const frl_ring *ring);
FRL_API int32_t frl_ring_envs(const frl_ring *ring);
/* The array's address and size in bytes; stable for the ring's life. */
FRL_API frl_status frl_ring_array(frl_ring *ring, int32_t slot, frl_ring_array_id id,
                                  void **data, size_t *bytes);
FRL_API frl_slot_state frl_ring_slot_state(const frl_ring *ring, int32_t slot);
/* Slot transitions. acquire_write takes the lowest free slot, acquire_read the ready
 * slot committed first; either gives FRL_ERR_STATE if there is none. commit and release
 * fail with FRL_ERR_STATE if the slot is not in the state they start from. Safe from
 * several threads at once. */
FRL_API frl_status frl_ring_acquire_write(frl_ring *ring, int32_t *slot);
FRL_API frl_status frl_ring_commit(frl_ring *ring, int32_t slot);    /* WRITING -> READY */
FRL_API frl_status frl_ring_acquire_read(frl_ring *ring, int32_t *slot);
FRL_API frl_status frl_ring_release(frl_ring *ring, int32_t slot);   /* READING -> FREE */
FRL_API const char *frl_ring_last_error(const frl_ring *ring);

/* ---------------------------------------------------------------------------------------
 * The replay of an off-policy trainer (train.algo=dqn; frl_trainer_replay), added in 0.3:
 * a circular buffer of blocks, each one rollout of T steps of B envs. Rows are records
 * of record_bytes, env by env: block k holds for env b the T + 1 records
 * (k*B + b)*(T+1) + t, each with the observation x (float[observation_width] at byte 0),
 * the action (int32, or float[action_width], at offset_action), the reward (float at
 * offset_reward) and three uint8 flags at offset_flags: terminated, truncated, and reset
 * (an autoreset row, not a transition); record t = T holds the observation after the
 * block's last step. A row's next observation is the next record's x. doc/dqn.md gives
 * the memory it takes. */
typedef struct frl_replay frl_replay;

typedef enum frl_replay_array_id {
    FRL_REPLAY_ROWS = 0,     /* the records: blocks*B*(T+1) of record_bytes */
    FRL_REPLAY_SUM_TREE = 1, /* double: prioritised replays' sum tree, leaves first (row
                                i = k*T*B + t*B + b has leaf i, holding priority^alpha);
                                empty otherwise */
    FRL_REPLAY_MIN_TREE = 2, /* float: the min tree, the same shape */
    FRL_REPLAY_STATES = 3,   /* float [blocks x B x state_width]: recurrent state at each
                                block's first step (empty when state_width is 0) */
    FRL_REPLAY_ARRAY_COUNT = 4
} frl_replay_array_id;

/* Set struct_size = sizeof(frl_replay_info) before frl_replay_get_info; the library
 * writes the fields that fit in it. */
typedef struct frl_replay_info {
    size_t struct_size;
    int64_t capacity;      /* rows: blocks * T * B */
    int64_t blocks;
    int64_t filled;        /* blocks holding a rollout */
    int64_t next;          /* the block the next rollout goes into (the oldest when full) */
    int64_t transitions;   /* rows that are transitions (not autoreset rows) */
    int32_t steps, envs;   /* T and B */
    int32_t observation_width, action_width, state_width;
    int32_t prioritized;
    size_t record_bytes, offset_action, offset_reward, offset_flags;
} frl_replay_info;

/* The replay's shape and fill. FRL_ERR_NULL, or FRL_ERR_SIZE when struct_size is smaller
 * than the table's first fields (0.3). */
FRL_API frl_status frl_replay_get_info(const frl_replay *replay, frl_replay_info *info);
/* The array's address and size in bytes; stable for the replay's life. Read it between
 * updates (from the metrics callback, or when train has returned): the learner writes
 * the records and the trees during an update. FRL_ERR_UNKNOWN_NAME for another id. */
FRL_API frl_status frl_replay_array(frl_replay *replay, frl_replay_array_id id, void **data,
                                    size_t *bytes);

/* ---------------------------------------------------------------------------------------
 * Trainer: a vec env, a policy, a ring, a sampler and a PPO learner for the common case.
 * Settings are the config keys train.* and policy.*; each built-in environment has
 * defaults that solve it, applied under the keys the caller sets. */
typedef struct frl_trainer frl_trainer;

/* Per-update metrics, passed to the callback; fields are added only at the end. */
typedef struct frl_metrics {
    size_t struct_size;
    int64_t update;            /* updates done, this one included */
    int64_t env_steps;         /* environment steps done (autoreset steps included) */
    int64_t episodes;          /* episodes finished */
    double mean_return;        /* mean return of the last 100 episodes (NaN if none) */
    double mean_length;        /* their mean length (NaN if none) */
    double seconds;            /* wall time since the trainer was created (or loaded) */
    double steps_per_second;   /* env steps per second since created (or loaded) */
    double policy_loss, value_loss, entropy, approx_kl, clip_fraction;
    double explained_variance, grad_norm, learning_rate;
    int32_t epochs_done;       /* fewer than train.epochs when target-KL stopped early */
    /* seconds spent in each stage during this update */
    double time_env, time_inference, time_backward, time_optimizer, time_waiting;
    /* Asynchronous sampling (sampler.mode=async; zero in sync mode). The lag of a step
     * is the learner's policy version minus the version that acted; time_env and
     * time_inference are then busy time summed over threads since the last update,
     * time_waiting the learner's wait for a rollout. */
    double policy_lag_mean;    /* mean over the rollout's steps */
    double policy_lag_max;
    int64_t slots_dropped;     /* rollouts dropped for exceeding sampler.max_lag, in all */
    /* Value learning (train.algo=dqn or r2d2; zero otherwise), added in 0.3: over this update's
     * minibatches, the mean Q of the actions taken and the mean |TD error|; the epsilon
     * the rollout acted with; the replay's fill (0..1); the minibatches' mean age (env
     * steps written to the replay since each transition); seconds spent in the replay
     * (adding the rollout, sampling, priority updates). value_loss is the TD loss. */
    double q_mean, td_error, epsilon, replay_fill, sample_age, time_replay;
    /* Neuroevolution (train.algo=es|ga; zero otherwise), added in 0.3: the mean and the
     * best fitness of this generation's members, and the kept policy's fitness
     * (frl_evo_best). */
    double population_mean, population_best, kept_fitness;
    /* R2D2 (train.algo=r2d2; zero otherwise), added in 0.3: the drawn sequences' largest
     * priority over their smallest, averaged over this update's minibatches (1: uniform;
     * the actor-learner lag is policy_lag_mean with sampler.mode=async). */
    double priority_spread;
} frl_metrics;

/* Return 0 to go on; any other value stops training, and frl_trainer_train returns
 * FRL_ERR_CALLBACK naming that value. Called on the thread that called train. */
typedef int (*frl_metrics_fn)(void *user, const frl_metrics *metrics);

/* A trainer on the built-in environment env_name. */
FRL_API frl_status frl_trainer_create(frl_trainer **out, frl_runtime *rt,
                                      const char *env_name, const frl_config *cfg);
/* A trainer on a host vec env (borrowed: it must outlive the trainer). B is its size:
 * train.num_envs, if cfg sets it, must be the same (FRL_ERR_INVALID_ARGUMENT). The
 * trainer holds venv until it is destroyed: a second trainer on it is refused
 * (FRL_ERR_INVALID_ARGUMENT), and its public reset and step fail with FRL_ERR_STATE. */
FRL_API frl_status frl_trainer_create_vec(frl_trainer **out, frl_runtime *rt,
                                          frl_vec_env *venv, const frl_config *cfg);
/* A trainer on count (1..64) host vec envs with the same spaces, each one group of the
 * asynchronous sampler (sampler.mode=async; sets sampler.groups = count): while the
 * library computes one group's actions, another group steps. A group's callbacks are
 * called from library threads, never two batch callbacks of one trainer at once.
 * train.num_envs, if set, must be their sum. Borrowed: they must outlive the trainer. */
FRL_API frl_status frl_trainer_create_vecs(frl_trainer **out, frl_runtime *rt,
                                           frl_vec_env *const *venvs, int32_t count,
                                           const frl_config *cfg);
FRL_API void frl_trainer_destroy(frl_trainer *trainer);
FRL_API void frl_trainer_set_callback(frl_trainer *trainer, frl_metrics_fn fn, void *user);
/* Write metrics.csv, a TensorBoard event file and settings.txt into dir (which must
 * exist) from the next update on. Between train calls or from the metrics callback
 * (FRL_ERR_STATE while train runs otherwise). */
FRL_API frl_status frl_trainer_set_output(frl_trainer *trainer, const char *dir);
/* Train until env_steps reaches total_steps (counted from the run's start, so a resumed
 * run continues to the same total), until the mean return reaches train.target_return
 * when that key is set, or until a stop. Returns FRL_OK at the budget or the target,
 * FRL_ERR_INTERRUPTED after frl_trainer_request_stop (the run may be continued or
 * saved), FRL_ERR_CALLBACK if the callback stopped it. FRL_ERR_NONFINITE when an update
 * diverged (a parameter became NaN or infinite): later calls return it at once, stepping
 * nothing (load the last checkpoint). */
FRL_API frl_status frl_trainer_train(frl_trainer *trainer, int64_t total_steps);
/* Train count (1..64) async trainers (sampler.mode=async) on one runtime at once, each
 * with its own environments, policy and learner, sharing the runtime's threads (several
 * policies in one run: the base of self-play and population-based training; give each
 * its own train.seed_offset). Each trains to total_steps or its target; the call returns when
 * all have, on the first error (the thread's last error names trainers[i]; that
 * trainer's last error has the message), or with FRL_ERR_INTERRUPTED after a stop
 * request to any of them; FRL_ERR_NONFINITE before anything steps if one has diverged.
 * Metrics callbacks run on the calling thread. */
FRL_API frl_status frl_trainer_train_many(frl_trainer *const *trainers, int32_t count,
                                          int64_t total_steps);
/* Ask train to return FRL_ERR_INTERRUPTED at the end of the current update (a rollout
 * and its learning step, milliseconds; with train.algo=es or ga, at the next env step of
 * a generation's evaluation, which runs again when training continues), so the run stays
 * resumable exactly.
 * Async-signal-safe: only sets a flag, so it may be called from a signal handler or
 * another thread. */
FRL_API void frl_trainer_request_stop(frl_trainer *trainer);
/* Everything needed to continue the run: settings, weights, Adam moments, normaliser,
 * random streams, environment states, counters. Atomic as frl_policy_save. Host
 * per-env callbacks are saved through get_state (state_size > 0); a batch world,
 * callbacks without state give FRL_ERR_UNSUPPORTED, saying why. An async trainer saves
 * every env group; its rollouts in flight are not saved (doc/api.md, Checkpoints).
 * While frl_trainer_train runs, only a sync trainer's metrics callback may save; any
 * other caller gets FRL_ERR_STATE and nothing is written. */
FRL_API frl_status frl_trainer_save(const frl_trainer *trainer, const char *path);
/* Continue a saved run on the built-in env it was saved from. cfg may be NULL; keys it
 * sets override the saved settings (e.g. runtime-only ones). */
FRL_API frl_status frl_trainer_load(frl_trainer **out, frl_runtime *rt, const char *path,
                                    const frl_config *cfg);
/* Continue a saved run on venv, which the host made again: per-env callbacks with state
 * for a run saved on them, or a vec env of the built-in the run was saved from. venv is
 * borrowed as by frl_trainer_create_vec (it must outlive the trainer); the saved env
 * states are written into it (set_state for host envs), so the run continues exactly.
 * cfg as for frl_trainer_load. Before anything is written: FRL_ERR_INVALID_ARGUMENT if
 * venv is of another kind or built-in than the run's, belongs to another runtime, or cfg
 * sets train.num_envs to another size; FRL_ERR_SIZE if its number of envs, spaces or
 * state_size differ from the run's (both named); file errors as frl_trainer_load. A
 * set_state callback that fails gives FRL_ERR_CALLBACK, and venv must then be reset
 * before it is stepped. *out is NULL after every failure. */
FRL_API frl_status frl_trainer_load_vec(frl_trainer **out, frl_runtime *rt, const char *path,
                                        frl_vec_env *venv, const frl_config *cfg);
/* Borrowed handles, valid for the trainer's life. */
FRL_API frl_policy *frl_trainer_policy(frl_trainer *trainer);
FRL_API frl_ring *frl_trainer_ring(frl_trainer *trainer);
/* The replay of an off-policy trainer (train.algo=dqn or r2d2); NULL for other learners. */
FRL_API frl_replay *frl_trainer_replay(frl_trainer *trainer);
FRL_API frl_vec_env *frl_trainer_vec_env(frl_trainer *trainer);
/* Metrics of the last update (zeros before the first; after a load, the checkpoint's
 * progress fields, slots_dropped included, and zeros elsewhere). */
FRL_API const frl_metrics *frl_trainer_metrics(const frl_trainer *trainer);
FRL_API const char *frl_trainer_last_error(const frl_trainer *trainer);

#ifdef __cplusplus
}
#endif

#endif /* FASTRL_H */
