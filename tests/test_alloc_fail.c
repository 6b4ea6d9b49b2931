/* Allocation failure, through the public allocator hook (frl_allocator).
 *
 * A counting allocator counts the allocations a successful create makes (K), then for
 * every N in 1..K makes the N-th fail (once, and also "from the N-th on"), and checks
 * that the create returns FRL_ERR_NOMEM with *out == NULL, that every allocation it made
 * was freed (the live count is back where it was), and that no host close callback ran.
 * A successful create + destroy must free everything too, and the allocator must only
 * ever see valid alignments and pointers it handed out.
 *
 * Objects other than configs and spaces take their allocator from the runtime, so for
 * env creates the runtime is made with the counting allocator first (disarmed) and the
 * failure is armed for the env create only.
 *
 * Public API only; links against libfastrl. Passes with CK_FORK=no too. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastrl.h"
#include "test_util.h"

/* ---- the counting allocator ------------------------------------------------------- */

enum { MAX_LIVE = 4096 };

typedef struct counting {
    pthread_mutex_t lock; /* alloc/free may be called from any library thread */
    long calls;           /* alloc calls since the last counting_arm */
    long fail_at;         /* fail the fail_at-th call (1-based); 0: never */
    int sticky;           /* also fail every call after it */
    long injected;        /* failures handed out */
    long live;            /* allocations not yet freed */
    long bad_free;        /* frees of NULL or of pointers we did not hand out */
    long bad_align;       /* alignments that are not a power of two <= 4096 */
    void *ptrs[MAX_LIVE];
} counting;

static void *counting_alloc(void *user, size_t size, size_t alignment)
{
    counting *c = user;
    pthread_mutex_lock(&c->lock);
    long n = ++c->calls;
    if (c->fail_at > 0 && (n == c->fail_at || (c->sticky && n > c->fail_at))) {
        c->injected++;
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
        c->bad_align++;
    void *p = NULL;
    size_t a = alignment < sizeof(void *) ? sizeof(void *) : alignment;
    if (posix_memalign(&p, a, size ? size : 1) != 0)
        p = NULL;
    if (p) {
        int slot = 0;
        while (slot < MAX_LIVE && c->ptrs[slot])
            slot++;
        ck_assert_msg(slot < MAX_LIVE, "counting allocator: too many live allocations");
        c->ptrs[slot] = p;
        c->live++;
    }
    pthread_mutex_unlock(&c->lock);
    return p;
}

static void counting_free(void *user, void *ptr)
{
    counting *c = user;
    pthread_mutex_lock(&c->lock);
    int slot = 0;
    while (ptr && slot < MAX_LIVE && c->ptrs[slot] != ptr)
        slot++;
    if (!ptr || slot == MAX_LIVE) {
        c->bad_free++; /* do not free what we do not know */
    } else {
        c->ptrs[slot] = NULL;
        c->live--;
        free(ptr);
    }
    pthread_mutex_unlock(&c->lock);
}

static void counting_init(counting *c, frl_allocator *table)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    frl_allocator_init(table);
    table->alloc = counting_alloc;
    table->free = counting_free;
    table->user = c;
}

static void counting_arm(counting *c, long fail_at, int sticky)
{
    pthread_mutex_lock(&c->lock);
    c->calls = 0;
    c->fail_at = fail_at;
    c->sticky = sticky;
    pthread_mutex_unlock(&c->lock);
}

static long counting_get(counting *c, const long *field)
{
    pthread_mutex_lock(&c->lock);
    long v = *field;
    pthread_mutex_unlock(&c->lock);
    return v;
}

static void counting_finish(counting *c)
{
    ck_assert_msg(c->live == 0, "%ld allocations never freed", c->live);
    ck_assert_msg(c->bad_free == 0, "%ld frees of NULL or unknown pointers", c->bad_free);
    ck_assert_msg(c->bad_align == 0, "%ld invalid alignments requested", c->bad_align);
    pthread_mutex_destroy(&c->lock);
}

/* ---- host callbacks (never expected to run during a create) ----------------------- */

enum { NUM_HOSTS = 7 };

static int closes;
/* Incremented from pool threads, hence atomic. */
static atomic_int callbacks_run;

static int h_reset(void *user, uint64_t seed, float *obs)
{
    (void)user;
    (void)seed;
    obs[0] = obs[1] = 0.0f;
    atomic_fetch_add(&callbacks_run, 1);
    return 0;
}

static int h_step(void *user, const void *action, float *obs, float *reward, uint8_t *term,
                  uint8_t *trunc)
{
    (void)user;
    (void)action;
    obs[0] = obs[1] = 1.0f;
    *reward = 1.0f;
    *term = *trunc = 0;
    atomic_fetch_add(&callbacks_run, 1);
    return 0;
}

static void h_close(void *user)
{
    (void)user;
    closes++;
}

static int b_reset(void *user, int32_t n, const uint64_t *seeds, float *obs)
{
    (void)user;
    (void)seeds;
    memset(obs, 0, sizeof(float) * 2 * (size_t)n);
    atomic_fetch_add(&callbacks_run, 1);
    return 0;
}

static int b_step(void *user, int32_t n, const void *actions, const uint8_t *mask,
                  const uint64_t *seeds, float *obs, float *rewards, uint8_t *term,
                  uint8_t *trunc)
{
    (void)user;
    (void)actions;
    (void)mask;
    (void)seeds;
    memset(obs, 0, sizeof(float) * 2 * (size_t)n);
    memset(rewards, 0, sizeof(float) * (size_t)n);
    memset(term, 0, (size_t)n);
    memset(trunc, 0, (size_t)n);
    atomic_fetch_add(&callbacks_run, 1);
    return 0;
}

static void b_close(void *user)
{
    (void)user;
    closes++;
}

/* ---- scenarios -------------------------------------------------------------------- */

typedef struct fixture {
    counting c;
    frl_allocator alloc;
    frl_runtime *rt;       /* made with the counting allocator, for env creates */
    frl_config *src;       /* made with the counting allocator, for clone */
    frl_space *obs_space;  /* default allocator: not counted */
    frl_space *act_space;
    void *users[NUM_HOSTS];
    int hosts[NUM_HOSTS];
} fixture;

typedef struct scenario {
    const char *name;
    int needs_runtime;
    int expected_closes; /* close calls on destroy after a successful create */
    frl_status (*create)(fixture *f, void **out);
    void (*destroy)(void *obj);
} scenario;

static frl_status make_runtime_threads(const frl_allocator *a, int threads, frl_runtime **rt)
{
    frl_config *cfg = NULL;
    frl_status st = frl_config_create(&cfg, NULL); /* not counted */
    ck_assert_int_eq(st, FRL_OK);
    ck_assert_int_eq(frl_config_set_int(cfg, "runtime.threads", threads), FRL_OK);
    st = frl_runtime_create(rt, cfg, a, NULL);
    frl_config_destroy(cfg);
    return st;
}

static frl_status s_config_create(fixture *f, void **out)
{
    return frl_config_create((frl_config **)out, &f->alloc);
}
static frl_status s_config_clone(fixture *f, void **out)
{
    return frl_config_clone((frl_config **)out, f->src);
}
static frl_status s_space_discrete(fixture *f, void **out)
{
    return frl_space_create_discrete((frl_space **)out, &f->alloc, 5);
}
static frl_status s_space_box(fixture *f, void **out)
{
    int64_t shape[2] = {2, 3};
    float low[6] = {-1, -1, -1, -2, -2, -2}, high[6] = {1, 1, 1, 2, 2, 2};
    return frl_space_create_box((frl_space **)out, &f->alloc, 2, shape, low, high);
}
static frl_status s_runtime_1(fixture *f, void **out)
{
    return make_runtime_threads(&f->alloc, 1, (frl_runtime **)out);
}
static frl_status s_runtime_3(fixture *f, void **out)
{
    return make_runtime_threads(&f->alloc, 3, (frl_runtime **)out);
}
static frl_status s_env_cartpole(fixture *f, void **out)
{
    return frl_env_create((frl_env **)out, f->rt, "CartPole-v1", NULL);
}
static frl_status s_env_pendulum(fixture *f, void **out)
{
    return frl_env_create((frl_env **)out, f->rt, "Pendulum-v1", NULL);
}
static frl_status s_env_callbacks(fixture *f, void **out)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = h_reset;
    cb.step = h_step;
    cb.close = h_close;
    return frl_env_create_callbacks((frl_env **)out, f->rt, &cb, f->users[0], f->obs_space,
                                    f->act_space, NULL);
}
static frl_status s_vec_cartpole(fixture *f, void **out)
{
    return frl_vec_env_create((frl_vec_env **)out, f->rt, "CartPole-v1", 300, NULL);
}
static frl_status s_vec_mcc(fixture *f, void **out)
{
    return frl_vec_env_create((frl_vec_env **)out, f->rt, "MountainCarContinuous-v0", 17, NULL);
}
static frl_status s_vec_callbacks(fixture *f, void **out)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    cb.reset = h_reset;
    cb.step = h_step;
    cb.close = h_close;
    return frl_vec_env_create_callbacks((frl_vec_env **)out, f->rt, &cb, f->users, NUM_HOSTS,
                                        f->obs_space, f->act_space, NULL);
}
static frl_status s_vec_batch(fixture *f, void **out)
{
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    cb.reset = b_reset;
    cb.step = b_step;
    cb.close = b_close;
    return frl_vec_env_create_batch((frl_vec_env **)out, f->rt, &cb, f->users[0], NUM_HOSTS,
                                    f->obs_space, f->act_space, NULL);
}

static frl_status s_space_mixed(fixture *f, void **out)
{
    frl_space *im = NULL;
    ck_assert_int_eq(frl_space_create_image(&im, NULL, 4, 4, 4), FRL_OK);
    frl_status st = frl_space_create_mixed((frl_space **)out, &f->alloc, im, f->obs_space);
    frl_space_destroy(im);
    return st;
}
static frl_status s_policy(fixture *f, void **out)
{
    return frl_policy_create((frl_policy **)out, f->rt, NULL, f->obs_space, f->act_space);
}

/* A policy file of the fixture's spaces, saved once with the default allocator (not
 * counted) and removed at exit. */
static char policy_path[64];

static void remove_policy_file(void)
{
    remove(policy_path);
}

static const char *policy_file(fixture *f)
{
    if (policy_path[0])
        return policy_path;
    snprintf(policy_path, sizeof policy_path, "/tmp/frl_alloc_fail_%d.frl", (int)getpid());
    frl_runtime *rt = NULL;
    frl_policy *p = NULL;
    ck_assert_int_eq(frl_runtime_create(&rt, NULL, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_policy_create(&p, rt, NULL, f->obs_space, f->act_space), FRL_OK);
    ck_assert_int_eq(frl_policy_save(p, policy_path), FRL_OK);
    frl_policy_destroy(p);
    frl_runtime_destroy(rt);
    atexit(remove_policy_file);
    return policy_path;
}

/* Its spaces are made while loading: an allocator's failure there was said as a
 * corrupt file (FRL_ERR_FORMAT). */
static frl_status s_policy_load(fixture *f, void **out)
{
    return frl_policy_load((frl_policy **)out, f->rt, policy_file(f));
}

/* A trainer checkpoint (CartPole-v1, PPO, a few updates), saved once with the default
 * allocator and removed at exit. */
static char trainer_path[64];

static void remove_trainer_file(void)
{
    remove(trainer_path);
}

static const char *trainer_file(void)
{
    if (trainer_path[0])
        return trainer_path;
    snprintf(trainer_path, sizeof trainer_path, "/tmp/frl_alloc_fail_%d.ckpt", (int)getpid());
    frl_runtime *rt = frl_test_runtime(1);
    frl_config *cfg = frl_test_settings("train.num_envs=4 train.rollout=16");
    frl_trainer *t = NULL;
    ck_assert_int_eq(frl_trainer_create(&t, rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 192), FRL_OK);
    ck_assert_int_eq(frl_trainer_save(t, trainer_path), FRL_OK);
    frl_trainer_destroy(t);
    frl_config_destroy(cfg);
    frl_runtime_destroy(rt);
    atexit(remove_trainer_file);
    return trainer_path;
}

/* The run's settings are made first while loading: an allocator's failure there left
 * the message the caller got unwritten (stack garbage after "frl_trainer_load: "). */
static frl_status s_trainer_load(fixture *f, void **out)
{
    return frl_trainer_load((frl_trainer **)out, f->rt, trainer_file(), NULL);
}

static void d_config(void *p) { frl_config_destroy(p); }
static void d_policy(void *p) { frl_policy_destroy(p); }
static void d_space(void *p) { frl_space_destroy(p); }
static void d_runtime(void *p) { frl_runtime_destroy(p); }
static void d_env(void *p) { frl_env_destroy(p); }
static void d_vec(void *p) { frl_vec_env_destroy(p); }
static void d_trainer(void *p) { frl_trainer_destroy(p); }

static const scenario scenarios[] = {
    {"frl_config_create", 0, 0, s_config_create, d_config},
    {"frl_config_clone", 0, 0, s_config_clone, d_config},
    {"frl_space_create_discrete", 0, 0, s_space_discrete, d_space},
    {"frl_space_create_box", 0, 0, s_space_box, d_space},
    {"frl_space_create_mixed", 0, 0, s_space_mixed, d_space},
    {"frl_policy_create", 1, 0, s_policy, d_policy},
    {"frl_policy_load", 1, 0, s_policy_load, d_policy},
    {"frl_runtime_create (1 thread)", 0, 0, s_runtime_1, d_runtime},
    {"frl_runtime_create (3 threads)", 0, 0, s_runtime_3, d_runtime},
    {"frl_env_create (CartPole-v1)", 1, 0, s_env_cartpole, d_env},
    {"frl_env_create (Pendulum-v1)", 1, 0, s_env_pendulum, d_env},
    {"frl_env_create_callbacks", 1, 1, s_env_callbacks, d_env},
    {"frl_vec_env_create (CartPole-v1)", 1, 0, s_vec_cartpole, d_vec},
    {"frl_vec_env_create (MountainCarContinuous-v0)", 1, 0, s_vec_mcc, d_vec},
    {"frl_vec_env_create_callbacks", 1, NUM_HOSTS, s_vec_callbacks, d_vec},
    {"frl_vec_env_create_batch", 1, 1, s_vec_batch, d_vec},
    {"frl_trainer_load", 1, 0, s_trainer_load, d_trainer},
};
enum { NUM_SCENARIOS = sizeof scenarios / sizeof scenarios[0] };

static char junk_storage;

static void fixture_init(fixture *f, const scenario *s)
{
    memset(f, 0, sizeof *f);
    counting_init(&f->c, &f->alloc);
    if (s->needs_runtime)
        ck_assert_int_eq(make_runtime_threads(&f->alloc, 2, &f->rt), FRL_OK);
    ck_assert_int_eq(frl_config_create(&f->src, &f->alloc), FRL_OK);
    ck_assert_int_eq(frl_config_set_int(f->src, "runtime.seed", 77), FRL_OK);
    int64_t two = 2;
    ck_assert_int_eq(frl_space_create_box(&f->obs_space, NULL, 1, &two, NULL, NULL), FRL_OK);
    ck_assert_int_eq(frl_space_create_discrete(&f->act_space, NULL, 3), FRL_OK);
    for (int i = 0; i < NUM_HOSTS; i++)
        f->users[i] = &f->hosts[i];
    closes = 0;
    atomic_store(&callbacks_run, 0);
}

static void fixture_finish(fixture *f)
{
    frl_space_destroy(f->obs_space);
    frl_space_destroy(f->act_space);
    frl_config_destroy(f->src);
    frl_runtime_destroy(f->rt);
    counting_finish(&f->c);
}

/* Fill the stack below the caller with non-zero bytes, so a message buffer a failing
 * call leaves unwritten shows as junk rather than as the last call's text. */
static __attribute__((noinline)) void scribble_stack(void)
{
    volatile char junk[32768];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 'Z';
}

/* One scenario: count K, then fail every N in 1..K, once and sticky. */
static void sweep(const scenario *s)
{
    fixture f;
    fixture_init(&f, s);
    long base = counting_get(&f.c, &f.c.live);

    /* A successful create: K allocations; destroy frees them all and closes hosts. */
    counting_arm(&f.c, 0, 0);
    void *obj = &junk_storage;
    frl_status st = s->create(&f, &obj);
    ck_assert_msg(st == FRL_OK, "%s: %s (%s)", s->name, frl_status_name(st), frl_last_error());
    ck_assert_ptr_nonnull(obj);
    long k = counting_get(&f.c, &f.c.calls);
    ck_assert_msg(k >= 1, "%s made no allocation through the hook", s->name);
    ck_assert_int_eq(closes, 0);
    s->destroy(obj);
    ck_assert_msg(counting_get(&f.c, &f.c.live) == base,
                  "%s: create + destroy leaked %ld allocations", s->name,
                  counting_get(&f.c, &f.c.live) - base);
    ck_assert_msg(closes == s->expected_closes, "%s: destroy called close %d times, not %d",
                  s->name, closes, s->expected_closes);
    ck_assert_int_eq(atomic_load(&callbacks_run), 0);

    for (long n = 1; n <= k; n++) {
        for (int sticky = 0; sticky < 2; sticky++) {
            closes = 0;
            scribble_stack();
            counting_arm(&f.c, n, sticky);
            obj = &junk_storage;
            st = s->create(&f, &obj);
            long injected = counting_get(&f.c, &f.c.injected);
            counting_arm(&f.c, 0, 0);
            ck_assert_msg(injected > 0, "%s: allocation %ld of %ld was never made", s->name, n,
                          k);
            ck_assert_msg(st == FRL_ERR_NOMEM,
                          "%s: allocation %ld of %ld failed (%s) but the create gave %s (%s)",
                          s->name, n, k, sticky ? "sticky" : "once", frl_status_name(st),
                          frl_last_error());
            ck_assert_msg(obj == NULL, "%s: allocation %ld failed but *out is not NULL",
                          s->name, n);
            ck_assert_msg(strstr(frl_last_error(), "memory") != NULL,
                          "%s: allocation %ld failed; message \"%s\" lacks \"memory\"", s->name,
                          n, frl_last_error());
            long live = counting_get(&f.c, &f.c.live);
            ck_assert_msg(live == base, "%s: allocation %ld of %ld failed (%s): %ld leaked",
                          s->name, n, k, sticky ? "sticky" : "once", live - base);
            ck_assert_msg(closes == 0, "%s: allocation %ld failed: close called %d times",
                          s->name, n, closes);
            ck_assert_int_eq(atomic_load(&callbacks_run), 0);
            pthread_mutex_lock(&f.c.lock);
            f.c.injected = 0;
            pthread_mutex_unlock(&f.c.lock);
        }
    }

    /* Failing the (K+1)-th allocation changes nothing: a create makes exactly K. */
    counting_arm(&f.c, k + 1, 1);
    obj = NULL;
    st = s->create(&f, &obj);
    counting_arm(&f.c, 0, 0);
    ck_assert_msg(st == FRL_OK, "%s: the allocation count is not stable", s->name);
    closes = 0;
    s->destroy(obj);
    ck_assert_int_eq(closes, s->expected_closes);
    ck_assert_int_eq(counting_get(&f.c, &f.c.live), base);
    fixture_finish(&f);
}

START_TEST(sweep_one)
{
    sweep(&scenarios[_i]);
}
END_TEST

/* After a create, stepping and resetting allocate nothing (the per-env arrays are
 * allocated once), and the runtime's objects all go back to the host's allocator. */
START_TEST(stepping_allocates_nothing)
{
    static const scenario with_runtime = {"stepping", 1, 0, NULL, NULL};
    fixture f;
    fixture_init(&f, &with_runtime);
    frl_vec_env *v = NULL;
    ck_assert_int_eq(frl_vec_env_create(&v, f.rt, "CartPole-v1", 300, NULL), FRL_OK);
    frl_vec_env *h = NULL;
    ck_assert_int_eq(s_vec_callbacks(&f, (void **)&h), FRL_OK);
    counting_arm(&f.c, 1, 1); /* any allocation from here on fails */
    ck_assert_int_eq(frl_vec_env_reset(v, 3), FRL_OK);
    ck_assert_int_eq(frl_vec_env_reset(h, 3), FRL_OK);
    for (int t = 0; t < 200; t++) {
        int32_t *a = frl_vec_env_actions(v);
        for (int i = 0; i < 300; i++)
            a[i] = (t + i) & 1;
        ck_assert_int_eq(frl_vec_env_step(v), FRL_OK);
        memset(frl_vec_env_actions(h), 0, sizeof(int32_t) * NUM_HOSTS);
        ck_assert_int_eq(frl_vec_env_step(h), FRL_OK);
    }
    ck_assert_int_eq(counting_get(&f.c, &f.c.calls), 0);
    counting_arm(&f.c, 0, 0);
    frl_vec_env_destroy(v);
    frl_vec_env_destroy(h);
    ck_assert_int_eq(closes, NUM_HOSTS);
    fixture_finish(&f);
}
END_TEST

static long count_bytes(const char *path, long *nuls, long *lines)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    long n = 0;
    *nuls = *lines = 0;
    for (int c; (c = fgetc(f)) != EOF; n++) {
        *nuls += c == 0;
        *lines += c == '\n';
    }
    fclose(f);
    return n;
}

static int count_event_files(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^events.out.tfevents'", dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    int n = -1;
    ck_assert_int_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* set_output to the directory the run writes already, failing on an allocation: the
 * run keeps writing its files as they were. metrics.csv had been emptied ("w") before
 * the event file's allocation failed, and the old handle then wrote on past a hole of
 * NUL bytes where the rows had been. */
START_TEST(set_output_same_dir_fails_cleanly)
{
    static const scenario with_runtime = {"set_output", 1, 0, NULL, NULL};
    fixture f;
    fixture_init(&f, &with_runtime);
    char dir[64], csv[96];
    snprintf(dir, sizeof dir, "/tmp/frl_alloc_out_%d", (int)getpid());
    snprintf(csv, sizeof csv, "%s/metrics.csv", dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    frl_config *cfg = frl_test_settings("train.num_envs=4 train.rollout=16 train.log_every=1");
    frl_trainer *t = NULL;
    ck_assert_int_eq(frl_trainer_create(&t, f.rt, "CartPole-v1", cfg), FRL_OK);
    ck_assert_int_eq(frl_trainer_set_output(t, dir), FRL_OK);
    ck_assert_int_eq(frl_trainer_train(t, 256), FRL_OK);
    long nuls, rows_before, rows_after;
    long size = count_bytes(csv, &nuls, &rows_before);
    ck_assert_int_ge(rows_before, 2); /* the header and at least one row */
    for (int sticky = 0; sticky < 2; sticky++) {
        counting_arm(&f.c, 1, sticky);
        frl_status st = frl_trainer_set_output(t, dir);
        counting_arm(&f.c, 0, 0);
        ck_assert_msg(st == FRL_ERR_NOMEM, "set_output gave %s (%s)", frl_status_name(st),
                      frl_last_error());
        ck_assert_int_eq(count_bytes(csv, &nuls, &rows_after), size);
    }
    ck_assert_int_eq(frl_trainer_train(t, 512), FRL_OK);
    frl_trainer_destroy(t);
    long grown = count_bytes(csv, &nuls, &rows_after);
    ck_assert_msg(nuls == 0, "metrics.csv holds %ld NUL bytes", nuls);
    ck_assert_int_gt(grown, size);
    ck_assert_int_gt(rows_after, rows_before);
    ck_assert_int_eq(count_event_files(dir), 1);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    frl_config_destroy(cfg);
    fixture_finish(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("alloc_fail");
    TCase *tc = tcase_create("alloc_fail");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, sweep_one, 0, NUM_SCENARIOS);
    tcase_add_test(tc, stepping_allocates_nothing);
    tcase_add_test(tc, set_output_same_dir_fails_cleanly);
    suite_add_tcase(s, tc);
    return frl_test_run(s);
}
