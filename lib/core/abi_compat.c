/* The initialisers that programs built against 0.2 call.
 *
 * Until 0.2 the table initialisers were exported functions that cleared the library's
 * own sizeof of each table; a program built against an older, smaller table had its
 * stack overrun as soon as a table grew. From 0.3 the initialisers are static inline in
 * fastrl.h, sized by the caller's compiler. The old symbols stay for binaries already
 * linked against them, at the version nodes they were released in (as glibc keeps old
 * symbol versions), each clearing exactly the 0.2 size of its table. They are
 * non-default versions ("name@NODE", one @), so new programs cannot link against them.
 *
 * Each 0.2 size is where the table's 0.2 fields end, rounded up to the table's
 * alignment: the sizeof the 0.2 header gave, on every ABI the library supports. */
#include <stdalign.h>
#include <stddef.h>

#include "core/alloc.h"
#include "fastrl.h"

#define FRL_FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define FRL_SIZE_UNTIL(type, last)                                                        \
    ((FRL_FIELD_END(type, last) + alignof(type) - 1) / alignof(type) * alignof(type))

enum {
    FRL_ALLOCATOR_SIZE_0_2 = FRL_SIZE_UNTIL(frl_allocator, user),
    FRL_LOGGER_SIZE_0_2 = FRL_SIZE_UNTIL(frl_logger, max_level),
    FRL_ENV_CALLBACKS_SIZE_0_2 = FRL_SIZE_UNTIL(frl_env_callbacks, set_state),
    FRL_BATCH_ENV_CALLBACKS_SIZE_0_2 = FRL_SIZE_UNTIL(frl_batch_env_callbacks, close),
    FRL_ACT_ARGS_SIZE_0_2 = FRL_SIZE_UNTIL(frl_act_args, workspace_size),
};

/* The symbol `name` at version node `node`, defined by the function `impl`: exported
 * (default visibility) so that the version script can bind the versioned name, while
 * `impl` itself stays local (the script's "local: *"). */
#define FRL_COMPAT_SYMBOL(impl, name, node)                                               \
    __asm__(".symver " #impl "," #name "@" #node);                                        \
    __attribute__((visibility("default"))) void impl

/* Declared here only: -Wmissing-prototypes wants a prototype for each. */
void frl_compat_allocator_init_0_2(frl_allocator *a);
void frl_compat_logger_init_0_2(frl_logger *l);
void frl_compat_env_callbacks_init_0_2(frl_env_callbacks *cb);
void frl_compat_batch_env_callbacks_init_0_2(frl_batch_env_callbacks *cb);
void frl_compat_act_args_init_0_2(frl_act_args *a);

static void clear(void *p, size_t size)
{
    unsigned char *b = p;
    for (size_t i = 0; i < size; i++)
        b[i] = 0;
    *(size_t *)p = size; /* every table starts with its struct_size */
}

FRL_COMPAT_SYMBOL(frl_compat_allocator_init_0_2, frl_allocator_init, FASTRL_0.1)
(frl_allocator *a)
{
    if (!a)
        return;
    frl_allocator d;
    frl_allocator_default(&d); /* 0.2 filled in the functions themselves */
    clear(a, FRL_ALLOCATOR_SIZE_0_2);
    a->alloc = d.alloc;
    a->free = d.free;
}

FRL_COMPAT_SYMBOL(frl_compat_logger_init_0_2, frl_logger_init, FASTRL_0.1)
(frl_logger *l)
{
    if (!l)
        return;
    clear(l, FRL_LOGGER_SIZE_0_2);
    l->max_level = FRL_LOG_INFO;
}

FRL_COMPAT_SYMBOL(frl_compat_env_callbacks_init_0_2, frl_env_callbacks_init, FASTRL_0.1)
(frl_env_callbacks *cb)
{
    if (cb)
        clear(cb, FRL_ENV_CALLBACKS_SIZE_0_2);
}

FRL_COMPAT_SYMBOL(frl_compat_batch_env_callbacks_init_0_2, frl_batch_env_callbacks_init,
                  FASTRL_0.1)
(frl_batch_env_callbacks *cb)
{
    if (cb)
        clear(cb, FRL_BATCH_ENV_CALLBACKS_SIZE_0_2);
}

FRL_COMPAT_SYMBOL(frl_compat_act_args_init_0_2, frl_act_args_init, FASTRL_0.2)
(frl_act_args *a)
{
    if (a)
        clear(a, FRL_ACT_ARGS_SIZE_0_2);
}
