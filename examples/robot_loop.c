/* A robot controller's loop: load a policy checkpoint and run it at a fixed rate
 * (1 kHz by default) against a plant, here the built-in Pendulum-v1 standing in for
 * the hardware. Everything is allocated before the loop; the loop itself calls only
 * frl_policy_act with a caller-owned workspace and frl_env_step, neither of which
 * allocates. Memory is locked and pre-faulted where the process is allowed to.
 *
 *   robot_loop [CHECKPOINT] [--hz 1000] [--iterations 2000] [--core gru|lstm]
 *
 * Without a checkpoint it saves a freshly initialised Pendulum policy first (with
 * --core, a recurrent one: policy.core=gru or lstm), so the example runs anywhere.
 * The loop passes the policy's recurrent state, a caller-owned array allocated before
 * the loop, and restarts it when the plant resets: the same calls run a policy with or
 * without a core (state size 0). Prints act latency p50 / p99 / max and missed
 * deadlines.
 *
 * A controller with a latency budget runs a sub-policy cut from an elastic run
 * (doc/elastic.md), a plain policy file like any other:
 *   fastrl train Pendulum-v1 --steps 600000 --out run --set policy.hidden=128,128 \
 *       --set elastic.widths=4,8,16,32,64
 *   fastrl cut run/checkpoint.frl --latency-us 0.5 --deterministic --out small.frl
 *   robot_loop small.frl
 * (tests/test_cli_cut.sh runs this loop on a cut policy.) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_nanosleep, mlockall */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <fastrl.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what)
{
    fprintf(stderr, "robot_loop: %s: %s\n", what, frl_last_error());
    return 1;
}

/* Save an untrained Pendulum policy (core: NULL, "gru" or "lstm") so the example needs no
 * training run. */
static int make_checkpoint(frl_runtime *rt, const char *path, const char *core)
{
    frl_env *e;
    frl_policy *p;
    frl_config *cfg;
    if (frl_config_create(&cfg, NULL) != FRL_OK ||
        (core && frl_config_set(cfg, "policy.core", core) != FRL_OK))
        return fail("--core");
    if (frl_env_create(&e, rt, "Pendulum-v1", NULL) != FRL_OK)
        return fail("env");
    frl_status st = frl_policy_create(&p, rt, cfg, frl_env_observation_space(e),
                                      frl_env_action_space(e));
    frl_config_destroy(cfg);
    frl_env_destroy(e);
    if (st != FRL_OK)
        return fail("policy");
    st = frl_policy_save(p, path);
    frl_policy_destroy(p);
    return st == FRL_OK ? 0 : fail("save");
}

/* Lock current and future pages and touch the stack the loop will use. */
static void lock_memory(void)
{
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        printf("memory not locked (%s): latency may include page faults\n", strerror(errno));
    volatile char stack[64 * 1024];
    for (size_t i = 0; i < sizeof stack; i += 4096)
        stack[i] = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct loop {
    frl_policy *policy;
    frl_env *plant;
    frl_act_args args;
    float obs[3], action[1], reward;
    float *state;       /* [state size]: the policy's memory of this plant (NULL: none) */
    uint8_t reset;      /* 1: the plant was just reset, the state restarts */
    double *lat;
    int iterations, missed;
    double period;
} loop;

static int run_loop(loop *l)
{
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int i = 0; i < l->iterations; i++) {
        double t0 = now_s();
        l->args.counter = (uint64_t)i;
        if (frl_policy_act(l->policy, &l->args) != FRL_OK)
            return fail("act");
        l->lat[i] = now_s() - t0;
        uint8_t term, trunc;
        if (frl_env_step(l->plant, l->action, l->obs, &l->reward, &term, &trunc) != FRL_OK)
            return fail("step");
        l->reset = term || trunc;
        if (l->reset && frl_env_reset(l->plant, (uint64_t)i, l->obs) != FRL_OK)
            return fail("reset");
        next.tv_nsec += (long)(l->period * 1e9);
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
            l->missed++;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    return 0;
}

static int setup(loop *l, frl_runtime *rt, const char *path, void *ws, size_t ws_size)
{
    if (frl_policy_load(&l->policy, rt, path) != FRL_OK)
        return fail(path);
    if (frl_env_create(&l->plant, rt, "Pendulum-v1", NULL) != FRL_OK)
        return fail("plant");
    if (frl_space_n(frl_policy_observation_space(l->policy)) != 3)
        return fprintf(stderr, "robot_loop: %s is not a Pendulum policy\n", path), 1;
    if (frl_env_reset(l->plant, 1, l->obs) != FRL_OK)
        return fail("reset");
    frl_act_args_init(&l->args);
    /* The widths of the arrays as this program laid them out: the plant's spaces. A
     * policy trained on another env fails the first act instead of misreading rows. */
    l->args.observation_width = frl_space_width(frl_env_observation_space(l->plant));
    l->args.action_width = frl_space_width(frl_env_action_space(l->plant));
    l->args.batch = 1;
    l->args.observations = l->obs;
    l->args.actions = l->action;
    l->args.deterministic = 1;
    l->args.workspace = ws;
    l->args.workspace_size = ws_size;
    /* The recurrent state, zeros for a fresh start; allocated here, before the loop. */
    int64_t sw = frl_policy_state_size(l->policy);
    l->state = sw ? calloc((size_t)sw, sizeof(float)) : NULL;
    if (sw && !l->state)
        return fprintf(stderr, "robot_loop: out of memory\n"), 1;
    l->args.state = l->state;
    l->args.state_width = sw;
    l->args.reset = &l->reset;
    printf("policy: %lld parameters, recurrent state %lld floats\n",
           (long long)frl_policy_num_parameters(l->policy), (long long)sw);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *core = NULL;
    double hz = 1000;
    int iterations = 2000, usage = 0;
    char *end = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hz") && i + 1 < argc)
            hz = strtod(argv[++i], &end);
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--core") && i + 1 < argc)
            core = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            usage = 1; /* an option without its value ("--hz" was read as a path) */
        if (end && *end)
            break;
    }
    /* A rate of 0 (or "abc") made the period infinite: its nanoseconds as a long are
     * undefined, and the loop ran without a deadline. --core makes the policy trained
     * here; a checkpoint has its own. */
    if (usage || (end && *end) || !(hz > 0 && hz <= 1e6) || iterations < 1 || (path && core)) {
        fprintf(stderr, "usage: robot_loop [CHECKPOINT] [--hz RATE (0 < RATE <= 1e6)] "
                        "[--iterations N (N >= 1)] [--core gru|lstm (without CHECKPOINT)]\n");
        return 2;
    }
    frl_config *cfg;
    frl_runtime *rt;
    /* One thread: act runs on the caller; no pool workers compete with the loop. */
    if (frl_config_create(&cfg, NULL) || frl_config_set_int(cfg, "runtime.threads", 1) ||
        frl_runtime_create(&rt, cfg, NULL, NULL))
        return fail("runtime");
    frl_config_destroy(cfg);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/robot_loop_%d.frl", (int)getpid());
    if (!path && make_checkpoint(rt, path = tmp, core) != 0)
        return 1;
    loop l;
    memset(&l, 0, sizeof l);
    l.iterations = iterations;
    l.period = 1.0 / hz;
    l.lat = calloc((size_t)l.iterations, sizeof(double));
    static unsigned char ws[1 << 16] __attribute__((aligned(64)));
    int rc = setup(&l, rt, path, ws, sizeof ws);
    if (rc == 0 && !l.lat) {
        fprintf(stderr, "robot_loop: out of memory for %d latencies\n", l.iterations);
        rc = 1;
    }
    if (rc == 0) {
        lock_memory();
        rc = run_loop(&l);
    }
    if (rc == 0) {
        qsort(l.lat, (size_t)l.iterations, sizeof(double), cmp_double);
        printf("%d iterations at %.0f Hz: act latency p50 %.2f us, p99 %.2f us, max %.2f us; "
               "missed deadlines: %d\n", l.iterations, hz, 1e6 * l.lat[l.iterations / 2],
               1e6 * l.lat[(l.iterations * 99) / 100], 1e6 * l.lat[l.iterations - 1], l.missed);
    }
    free(l.lat);
    free(l.state);
    frl_env_destroy(l.plant);
    frl_policy_destroy(l.policy);
    frl_runtime_destroy(rt);
    if (path == tmp)
        unlink(tmp);
    return rc;
}
