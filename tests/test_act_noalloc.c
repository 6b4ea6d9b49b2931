/* After creation, frl_policy_act never allocates.
 *
 * This program replaces malloc, calloc, realloc, free, posix_memalign, aligned_alloc
 * and mmap for the whole process (its definitions interpose on the C library's, for
 * libfastrl.so and libc's own callers alike), counts calls while armed, and runs act
 * 10,000 times on each of two threads at once after warm-up: one thread with its
 * own workspace, the other with the policy's internal one, for an MLP policy and for
 * recurrent ones (GRU shared, LSTM per head), whose state arrays the threads own and
 * whose rows they reset now and then, and 300 times for a policy with a convolutional
 * encoder over 40 x 40 x 3 images (PixelGrid-v0's settings), alone and before a GRU.
 * Calls are counted on the acting threads, where act runs (it never hands work to other threads). Sanitizers bring their own
 * allocator, so this test is not built under them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fastrl.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

/* Armed per thread: only the act loops count, not thread start-up or joins. */
static _Thread_local int armed;
static atomic_long calls;

static void note(void)
{
    if (armed)
        atomic_fetch_add(&calls, 1);
}

void *malloc(size_t n)
{
    note();
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    note();
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    note();
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p)
        note();
    __libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    note();
    void *p = __libc_memalign(align, n);
    if (!p)
        return 12;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    note();
    return __libc_memalign(align, n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    note();
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

enum { CALLS = 10000, BATCH = 32 };

typedef struct worker {
    frl_policy *p;
    void *ws;
    size_t ws_size;
    pthread_barrier_t *start;
    int failures;
    int calls;
    float *obs;             /* [BATCH x row floats] */
    int32_t actions[BATCH];
    float logp[BATCH], values[BATCH];
    float *state;           /* [BATCH x state size], NULL for an MLP */
    uint8_t reset[BATCH];
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    frl_act_args a;
    frl_act_args_init(&a);
    a.observation_width = frl_space_width(frl_policy_observation_space(w->p));
    a.action_width = frl_space_width(frl_policy_action_space(w->p));
    a.batch = BATCH;
    a.observations = w->obs;
    a.actions = w->actions;
    a.log_probs = w->logp;
    a.values = w->values;
    a.workspace = w->ws;
    a.workspace_size = w->ws_size;
    a.counter = 1u << 30;
    a.state = w->state;
    a.state_width = frl_policy_state_size(w->p);
    a.reset = w->reset;
    w->failures += frl_policy_act(w->p, &a) != FRL_OK; /* warm-up */
    pthread_barrier_wait(w->start);
    armed = 1;
    for (int i = 0; i < w->calls; i++) {
        a.counter = (uint64_t)i;
        w->reset[i % BATCH] = (uint8_t)(i % 3 == 0); /* episodes end at odd times */
        w->failures += frl_policy_act(w->p, &a) != FRL_OK;
    }
    armed = 0;
    return NULL;
}

/* Two threads act CALLS times each on a policy of these settings; returns the
 * allocator calls counted while armed (or -1 if setup failed), adds the failures. */
static int make_obs_space(const char *settings, frl_space **os)
{
    int64_t shape = 4;
    if (strstr(settings, "policy.encoder="))
        return frl_space_create_image(os, NULL, 40, 40, 3);
    return frl_space_create_box(os, NULL, 1, &shape, NULL, NULL);
}

static long run_policy(const char *settings, int num_calls, int *failures)
{
    frl_runtime *rt;
    frl_space *os, *as;
    frl_policy *p;
    frl_config *cfg = NULL;
    if (frl_runtime_create(&rt, NULL, NULL, NULL) || make_obs_space(settings, &os) ||
        frl_space_create_discrete(&as, NULL, 2) || frl_config_create(&cfg, NULL) ||
        frl_config_parse(cfg, settings) || frl_policy_create(&p, rt, cfg, os, as)) {
        fprintf(stderr, "setup failed: %s\n", frl_last_error());
        return -1;
    }
    static worker w[2];
    memset(w, 0, sizeof w);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    size_t size = frl_policy_workspace_size(p, 16); /* smaller than the batch: chunks */
    w[0].ws = aligned_alloc(64, (size + 63) / 64 * 64);
    w[0].ws_size = size;
    int64_t sw = frl_policy_state_size(p);
    pthread_t th[2];
    long before = atomic_load(&calls);
    int64_t ow = frl_space_width(os), image = frl_space_get_kind(os) == FRL_SPACE_IMAGE;
    for (int i = 0; i < 2; i++) {
        w[i].p = p;
        w[i].start = &start;
        w[i].calls = num_calls;
        w[i].state = sw ? calloc((size_t)(BATCH * sw), sizeof(float)) : NULL;
        w[i].obs = calloc((size_t)(BATCH * ow), sizeof(float));
        for (int k = 0; k < BATCH * ow; k++) {
            if (image)
                ((uint8_t *)w[i].obs)[k] = (uint8_t)(k * 7 + i);
            else
                w[i].obs[k] = (float)((k * 7 + i) % 11) * 0.1f - 0.5f;
        }
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    long n = atomic_load(&calls) - before;
    printf("%-36s act calls: %d on 2 threads, %d rows each, state %lld floats a row; "
           "allocator calls while armed: %ld; failures: %d\n", settings[0] ? settings : "(MLP)",
           2 * num_calls, BATCH, (long long)sw, n, w[0].failures + w[1].failures);
    *failures += w[0].failures + w[1].failures;
    frl_policy_destroy(p);
    frl_config_destroy(cfg);
    frl_space_destroy(os);
    frl_space_destroy(as);
    frl_runtime_destroy(rt);
    free(w[0].ws);
    for (int i = 0; i < 2; i++) {
        free(w[i].state);
        free(w[i].obs);
    }
    pthread_barrier_destroy(&start);
    return n;
}

int main(void)
{
    static const char *const settings[] = {
        "", "policy.core=gru policy.shared=true", "policy.core=lstm policy.shared=false",
        "policy.encoder=simple policy.conv_channels=8,16,16",
        "policy.encoder=simple policy.conv_channels=8,16,16 policy.core=gru"};
    static const int call_counts[] = {CALLS, CALLS, CALLS, 300, 300};
    int failures = 0, bad = 0;
    for (int i = 0; i < 5; i++) {
        long n = run_policy(settings[i], call_counts[i], &failures);
        bad |= n != 0;
    }
    return !bad && failures == 0 ? 0 : 1;
}
