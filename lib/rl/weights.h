/* Acting weights: a versioned double buffer between one learner and any number of
 * acting threads (the asynchronous sampler).
 *
 * The learner changes the policy's parameters in place during an update; acting must
 * not see a half-updated vector. After each update the learner publishes a copy into
 * the buffer no reader holds and then makes it current; readers pin the current
 * buffer for the length of one inference batch. A reader never waits. The learner
 * waits only for readers of the old buffer, and they hold it for one batch (no reader
 * waits on anything while pinned), so publishing cannot deadlock. */
#ifndef FRL_RL_WEIGHTS_H
#define FRL_RL_WEIGHTS_H

#include <pthread.h>

#include "rl/policy.h"

typedef struct frl_weights {
    pthread_mutex_t lock;
    pthread_cond_t released;   /* a reader let go of a buffer that is not current */
    float *buf[2];             /* parameters, then the normaliser's frozen mean and 1/std */
    uint64_t version[2];
    int32_t readers[2];
    int32_t staged[2];         /* the buffer has a device copy (its stage hook succeeded) */
    int32_t current;
    size_t num_params;
    int32_t obs_w;
    const frl_allocator *alloc;
    int32_t sync_live;         /* the mutex and condition are initialised */
} frl_weights;

/* A pinned buffer: what one inference batch reads. */
typedef struct frl_weights_view {
    int32_t index;
    uint64_t version;
    int32_t staged;            /* the buffer has a device copy, indexed like the buffer */
    const float *params;
    frl_obsnorm norm;          /* width, clip and the frozen arrays only */
} frl_weights_view;

/* Sized for p, holding p's present parameters and version. */
frl_status frl_weights_init(frl_weights *w, const frl_allocator *alloc, const frl_policy *p,
                            char *err);
void frl_weights_free(frl_weights *w);
/* A publisher's hook on the buffer v (about to become current, pinned by nobody): make
 * its device copy, with the same index (lib/sampler/async.c). *staged = 1 when it
 * did; an error leaves no device copy. */
typedef frl_status (*frl_weights_stage_fn)(void *ctx, const frl_weights_view *v,
                                           int32_t *staged, char *err);

/* Copy p's parameters, frozen normaliser and version into the idle buffer, call stage
 * on it (when not NULL) and make it current. One publisher at a time (the learner).
 * The host copy is published even when stage fails; the failure is returned. */
frl_status frl_weights_publish(frl_weights *w, const frl_policy *p, frl_weights_stage_fn stage,
                               void *ctx, char *err);
void frl_weights_pin(frl_weights *w, const frl_policy *p, frl_weights_view *v);
void frl_weights_unpin(frl_weights *w, const frl_weights_view *v);

#endif
