/* bench_population: batched heterogeneous acting (frl_population_act) against a loop
 * over the members and against the GEMM floor, measured in the same run.
 *
 *   bench_population [--threads 1] [--members 256] [--reps 15] [--sample-ms 10]
 *
 * A 64x64 tanh MLP policy (policy.hidden=64,64, policy.activation=tanh) on CartPole-v1's
 * spaces (obs width 4, discrete(2) actions), a population of P = --members members, each
 * a different perturbation of the policy's parameters. For R = 1 and R = 16 rows per
 * member, P x R rows of random observations, row i acting for member i % P (so the
 * members are interleaved and the call's sort has work to do), deterministic acting.
 * Figures, each the median over reps of the time per call (wall clock), the variants
 * interleaved inside each rep so machine noise hits all of them:
 *   batched      one frl_population_act call for all P x R rows;
 *   loop+copy    what a host without the batched call writes, public API only: for each
 *                member frl_population_copy_to_policy into a working policy, then
 *                frl_policy_act on that member's R rows (gathered contiguous beforehand,
 *                outside the timing);
 *   loop nocopy  the same loop through the internal API with no copy: for each member
 *                frl_policy_forward_heads (actor only) with the member's row of the
 *                population's block as the parameters, then frl_policy_head_act per row
 *                (what frl_population_act does per member, without its sort and
 *                gather);
 *   floor        the same P x R rows through the same three layers with ONE weight set:
 *                frl_policy_act with the template policy, no per-member work at all;
 *   weights read a bare loop reading the [P x n] parameter block once: what any acting
 *                of all P members must stream from memory per call (with few rows per
 *                member this, not the floor's arithmetic, is the bound).
 * All on runtime.threads = --threads: the loops and the floor are cut into T pieces of
 * contiguous members (rows) run by frl_runtime_parallel_for (one working policy and one
 * workspace per thread); at T = 1 that is the plain loop and one frl_policy_act call on
 * the calling thread. With T > 1, "floor 1 call" is also printed: one frl_policy_act
 * call on all rows, which runs on the calling thread only. The loops' actions are
 * checked against the batched call's (bit-identical by contract) outside the timing.
 * Timings are printed, never asserted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "bench_time.h"
#include "rl/population.h"

enum { MAX_REPS = 101, MAX_THREADS = 256, WS_ROWS = 256, MAX_VARIANTS = 6, LANES = 16 };

typedef struct opts {
    int threads, members, reps;
    double sample_ms;
} opts;

/* Everything one configuration (R rows per member) needs. */
typedef struct bench {
    frl_runtime *rt;
    frl_policy *policy;              /* the template: the population's architecture */
    frl_policy *work[MAX_THREADS];   /* loop+copy: one working policy per thread */
    frl_population *pop;
    void *ws[MAX_THREADS];           /* per thread: a workspace of WS_ROWS rows */
    size_t ws_size;
    int32_t P, R, rows, T;
    int64_t ow;                      /* observation width */
    float *obs;                      /* [rows x ow], row i of member i % P */
    int32_t *members;                /* [rows] */
    float *obs_sorted;               /* [P x R x ow]: member m's rows at m * R */
    int32_t *act_batched;            /* [rows], the caller's order */
    int32_t *act_sorted;             /* [rows], the loops' order (member by member) */
    int32_t *act_floor;              /* [rows] */
    float sink[MAX_THREADS];         /* the weights read's sums, so they are not dropped */
} bench;

/* A small generator of the bench's own data (splitmix64). */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float uniform_pm1(uint64_t *s)
{
    return (float)((double)(next_u64(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void parse(opts *o, int argc, char **argv)
{
    *o = (opts){1, 256, 15, 10.0};
    bench_args_init(argc, argv, "bench_population",
                    "usage: bench_population [--threads 1] [--members 256] [--reps 15] "
                    "[--sample-ms 10]\n");
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = bench_value(argc, argv, i);
        if (!strcmp(k, "--threads"))
            o->threads = (int)bench_int(k, v, 1, MAX_THREADS);
        else if (!strcmp(k, "--members"))
            o->members = (int)bench_int(k, v, 1, 65536);
        else if (!strcmp(k, "--reps"))
            o->reps = (int)bench_int(k, v, 1, MAX_REPS);
        else if (!strcmp(k, "--sample-ms"))
            o->sample_ms = bench_real(k, v, 0, 1);
        else
            bench_unknown(k);
    }
}

/* ---- the variants: each returns 0 on success ---- */

static int run_batched(bench *b)
{
    frl_population_act_args a;
    frl_population_act_args_init(&a);
    a.batch = b->rows;
    a.observations = b->obs;
    a.members = b->members;
    a.actions = b->act_batched;
    a.deterministic = 1;
    a.observation_width = b->ow;
    a.action_width = 1;
    return frl_population_act(b->pop, &a) != FRL_OK;
}

/* Members [P * task / T, P * (task + 1) / T) of piece `task`. */
static void piece_members(const bench *b, int32_t task, int32_t *from, int32_t *to)
{
    *from = (int32_t)((int64_t)b->P * task / b->T);
    *to = (int32_t)((int64_t)b->P * (task + 1) / b->T);
}

static int loop_copy_piece(void *user, int32_t task, int32_t thread)
{
    bench *b = user;
    frl_policy *w = b->work[thread];
    int32_t from, to;
    piece_members(b, task, &from, &to);
    for (int32_t m = from; m < to; m++) {
        if (frl_population_copy_to_policy(b->pop, m, w) != FRL_OK)
            return 1;
        frl_act_args a;
        frl_act_args_init(&a);
        a.batch = b->R;
        a.observations = b->obs_sorted + (size_t)m * (size_t)b->R * (size_t)b->ow;
        a.actions = b->act_sorted + (size_t)m * (size_t)b->R;
        a.deterministic = 1;
        a.observation_width = b->ow;
        a.action_width = 1;
        if (frl_policy_act(w, &a) != FRL_OK)
            return 1;
    }
    return 0;
}

static int loop_nocopy_piece(void *user, int32_t task, int32_t thread)
{
    bench *b = user;
    const frl_policy *p = b->policy;
    const float *params = frl_population_parameters(b->pop);
    int64_t n = frl_population_member_size(b->pop);
    int32_t from, to;
    piece_members(b, task, &from, &to);
    for (int32_t m = from; m < to; m++) {
        frl_pass f;
        frl_policy_pass_layout(p, b->R, 0, b->ws[thread], &f);
        frl_policy_forward_heads(p, params + (size_t)m * (size_t)n, b->R,
                                 b->obs_sorted + (size_t)m * (size_t)b->R * (size_t)b->ow, &f,
                                 FRL_HEAD_ACTOR);
        for (int32_t r = 0; r < b->R; r++)
            frl_policy_head_act(p, p->params, f.out + (size_t)r * (size_t)p->out_w, 1,
                                (uint64_t)r, 0, b->act_sorted + (size_t)m * (size_t)b->R + r);
    }
    return 0;
}

/* The floor's piece: rows [rows * task / T, rows * (task + 1) / T) in one act call. */
static int floor_piece(void *user, int32_t task, int32_t thread)
{
    bench *b = user;
    int32_t from = (int32_t)((int64_t)b->rows * task / b->T);
    int32_t to = (int32_t)((int64_t)b->rows * (task + 1) / b->T);
    frl_act_args a;
    frl_act_args_init(&a);
    a.batch = to - from;
    a.observations = b->obs_sorted + (size_t)from * (size_t)b->ow;
    a.actions = b->act_floor + from;
    a.deterministic = 1;
    a.observation_width = b->ow;
    a.action_width = 1;
    if (b->T > 1) { /* several threads at once: each brings its workspace */
        a.workspace = b->ws[thread];
        a.workspace_size = b->ws_size;
    }
    return a.batch > 0 && frl_policy_act(b->policy, &a) != FRL_OK;
}

/* The weights read's piece: members [from, to) of the parameter block summed in LANES
 * independent chains (which the compiler vectorises: no reordering of any one sum). */
static int read_piece(void *user, int32_t task, int32_t thread)
{
    bench *b = user;
    const float *params = frl_population_parameters(b->pop);
    size_t n = (size_t)frl_population_member_size(b->pop);
    int32_t from, to;
    piece_members(b, task, &from, &to);
    const float *x = params + (size_t)from * n;
    size_t count = (size_t)(to - from) * n, i = 0;
    float acc[LANES] = {0};
    for (; i + LANES <= count; i += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] += x[i + l];
    for (; i < count; i++)
        acc[0] += x[i];
    float sum = 0;
    for (int l = 0; l < LANES; l++)
        sum += acc[l];
    b->sink[thread] += sum;
    return 0;
}

static int run_pieces(bench *b, frl_task_fn fn)
{
    if (b->T == 1)
        return fn(b, 0, 0);
    return frl_runtime_parallel_for(b->rt, b->T, fn, b) != FRL_OK;
}

static int run_loop_copy(bench *b)
{
    return run_pieces(b, loop_copy_piece);
}

static int run_loop_nocopy(bench *b)
{
    return run_pieces(b, loop_nocopy_piece);
}

static int run_floor(bench *b)
{
    return run_pieces(b, floor_piece);
}

static int run_read(bench *b)
{
    return run_pieces(b, read_piece);
}

/* One frl_policy_act call on all rows (on the calling thread, whatever T is). */
static int run_floor_one(bench *b)
{
    frl_act_args a;
    frl_act_args_init(&a);
    a.batch = b->rows;
    a.observations = b->obs_sorted;
    a.actions = b->act_floor;
    a.deterministic = 1;
    a.observation_width = b->ow;
    a.action_width = 1;
    return frl_policy_act(b->policy, &a) != FRL_OK;
}

typedef struct variant {
    const char *name, *what;
    int (*run)(bench *);
    int iters;
    double t[MAX_REPS];
} variant;

/* Calls per sample so that one sample takes about sample_ms. */
static int calibrate(bench *b, variant *v, double sample_ms)
{
    if (v->run(b)) /* warm-up */
        return -1;
    int iters = 1;
    for (;;) {
        double t0 = bench_now();
        for (int i = 0; i < iters; i++)
            if (v->run(b))
                return -1;
        double dt = bench_now() - t0;
        if (dt >= 1e-3 * sample_ms / 4 || iters >= (1 << 24)) {
            double per = dt / iters;
            double want = 1e-3 * sample_ms / (per > 0 ? per : 1e-9);
            v->iters = want < 1 ? 1 : want > (1 << 24) ? (1 << 24) : (int)want;
            return 0;
        }
        iters *= 2;
    }
}

static int setup(bench *b, frl_runtime *rt, const frl_config *pcfg, const frl_space *os,
                 const frl_space *as, int32_t P, int32_t R)
{
    memset(b, 0, sizeof *b);
    b->rt = rt;
    b->P = P;
    b->R = R;
    b->rows = P * R;
    b->T = frl_runtime_threads(rt);
    b->ow = frl_space_width(os);
    if (frl_policy_create(&b->policy, rt, pcfg, os, as) ||
        frl_population_create(&b->pop, b->policy, P))
        return -1;
    for (int32_t t = 0; t < b->T; t++)
        if (frl_policy_create(&b->work[t], rt, pcfg, os, as))
            return -1;
    b->ws_size = frl_policy_workspace_size(b->policy, WS_ROWS);
    b->ws_size = (b->ws_size + 63) / 64 * 64;
    for (int32_t t = 0; t < b->T; t++)
        if (!(b->ws[t] = aligned_alloc(64, b->ws_size)))
            return -1;
    size_t rows = (size_t)b->rows, ow = (size_t)b->ow;
    b->obs = malloc(sizeof(float) * rows * ow);
    b->obs_sorted = malloc(sizeof(float) * rows * ow);
    b->members = malloc(sizeof(int32_t) * rows);
    b->act_batched = malloc(sizeof(int32_t) * rows);
    b->act_sorted = malloc(sizeof(int32_t) * rows);
    b->act_floor = malloc(sizeof(int32_t) * rows);
    if (!b->obs || !b->obs_sorted || !b->members || !b->act_batched || !b->act_sorted ||
        !b->act_floor)
        return -1;
    uint64_t s = 12345;
    /* Members: the policy's parameters plus noise of 0.05 (as an ES population), so
     * every member acts differently. */
    float *params = frl_population_parameters(b->pop);
    size_t n = (size_t)frl_population_member_size(b->pop);
    for (size_t i = 0; i < (size_t)P * n; i++)
        params[i] += 0.05f * uniform_pm1(&s);
    /* CartPole-like observations; row i acts for member i % P. */
    static const float scale[4] = {2.4f, 3.0f, 0.21f, 3.0f};
    for (size_t i = 0; i < rows; i++) {
        b->members[i] = (int32_t)(i % (size_t)P);
        for (size_t w = 0; w < ow; w++)
            b->obs[i * ow + w] = scale[w % 4] * uniform_pm1(&s);
    }
    /* The loops' copy: member m's rows contiguous at m * R (row i = j * P + m). */
    for (int32_t m = 0; m < P; m++)
        for (int32_t j = 0; j < R; j++)
            memcpy(b->obs_sorted + ((size_t)m * (size_t)R + (size_t)j) * ow,
                   b->obs + ((size_t)j * (size_t)P + (size_t)m) * ow, sizeof(float) * ow);
    return 0;
}

static void teardown(bench *b)
{
    for (int32_t t = 0; t < b->T; t++) {
        frl_policy_destroy(b->work[t]);
        free(b->ws[t]);
    }
    frl_population_destroy(b->pop);
    frl_policy_destroy(b->policy);
    free(b->obs);
    free(b->obs_sorted);
    free(b->members);
    free(b->act_batched);
    free(b->act_sorted);
    free(b->act_floor);
}

/* The loop's actions (member by member) against the batched call's (the caller's
 * order): the number of rows that differ. */
static int64_t mismatches(const bench *b)
{
    int64_t bad = 0;
    for (int32_t m = 0; m < b->P; m++)
        for (int32_t j = 0; j < b->R; j++)
            bad += b->act_sorted[m * b->R + j] != b->act_batched[j * b->P + m];
    return bad;
}

static int check_loops(bench *b)
{
    if (run_batched(b))
        return -1;
    memset(b->act_sorted, 0xff, sizeof(int32_t) * (size_t)b->rows);
    if (run_loop_copy(b))
        return -1;
    int64_t c = mismatches(b);
    memset(b->act_sorted, 0xff, sizeof(int32_t) * (size_t)b->rows);
    if (run_loop_nocopy(b))
        return -1;
    int64_t nc = mismatches(b);
    int64_t ones = 0;
    for (int32_t i = 0; i < b->rows; i++)
        ones += b->act_batched[i] == 1;
    printf("  check: loop+copy %s, loop nocopy %s the batched actions (%lld of %d rows "
           "chose action 1)\n", c ? "DIFFERS FROM" : "matches",
           nc ? "DIFFERS FROM" : "matches", (long long)ones, (int)b->rows);
    return c || nc ? 1 : 0;
}

static int run_config(frl_runtime *rt, const frl_config *pcfg, const frl_space *os,
                      const frl_space *as, int32_t P, int32_t R, const opts *o)
{
    bench b;
    if (setup(&b, rt, pcfg, os, as, P, R))
        return fprintf(stderr, "bench_population: setup: %s\n", frl_last_error()), 1;
    printf("\n%d members x %d row%s each = %d rows (row i -> member i %% %d), "
           "%lld acting parameters a member (%.1f KiB; %.2f MiB in all)\n", (int)P, (int)R,
           R == 1 ? "" : "s", (int)b.rows, (int)P, (long long)frl_population_member_size(b.pop),
           4.0 * (double)frl_population_member_size(b.pop) / 1024.0,
           4.0 * (double)frl_population_member_size(b.pop) * P / 1048576.0);
    int bad = check_loops(&b);
    if (bad < 0)
        return fprintf(stderr, "bench_population: check: %s\n", frl_last_error()), 1;
    variant v[MAX_VARIANTS] = {
        {"batched", "one frl_population_act call", run_batched, 0, {0}},
        {"loop+copy", "per member: copy_to_policy + frl_policy_act (public API)",
         run_loop_copy, 0, {0}},
        {"loop nocopy", "per member: forward_heads on its parameter row (internal API)",
         run_loop_nocopy, 0, {0}},
        {"floor", "frl_policy_act, one weight set", run_floor, 0, {0}},
        {"weights read", "a bare loop reading the P x n parameter block once", run_read, 0,
         {0}},
        {"floor 1 call", "one frl_policy_act call, calling thread only", run_floor_one, 0,
         {0}},
    };
    int nv = b.T > 1 ? 6 : 5;
    if (b.T > 1) {
        v[3].what = "frl_policy_act, one weight set, T pieces";
        v[4].what = "a bare loop reading the P x n parameter block once, T pieces";
    }
    for (int i = 0; i < nv; i++)
        if (calibrate(&b, &v[i], o->sample_ms))
            return fprintf(stderr, "bench_population: %s: %s\n", v[i].name, frl_last_error()),
                   1;
    for (int rep = 0; rep < o->reps; rep++)
        for (int i = 0; i < nv; i++) {
            double t0 = bench_now();
            for (int k = 0; k < v[i].iters; k++)
                if (v[i].run(&b))
                    return fprintf(stderr, "bench_population: %s: %s\n", v[i].name,
                                   frl_last_error()), 1;
            v[i].t[rep] = (bench_now() - t0) / v[i].iters;
        }
    double med[MAX_VARIANTS];
    for (int i = 0; i < nv; i++)
        med[i] = bench_median(v[i].t, o->reps);
    printf("  %-13s %10s %12s %12s\n", "", "us/call", "Mrows/s", "t / batched");
    for (int i = 0; i < nv; i++) {
        char ratio[32] = "", rate[32] = "-";
        if (i > 0)
            snprintf(ratio, sizeof ratio, "%.2fx", med[i] / med[0]);
        if (v[i].run != run_read) /* it acts on no rows */
            snprintf(rate, sizeof rate, "%.3f", 1e-6 * b.rows / med[i]);
        printf("  %-13s %10.1f %12s %12s  %s (%d calls a sample)\n", v[i].name, 1e6 * med[i],
               rate, ratio, v[i].what, v[i].iters);
    }
    printf("  speedup batched vs loop+copy: %.2fx, vs loop nocopy: %.2fx; "
           "batched/floor time: %.2fx (floor/batched: %.0f%%); batched/weights read: "
           "%.2fx\n", med[1] / med[0], med[2] / med[0], med[0] / med[3], 100 * med[3] / med[0],
           med[0] / med[4]);
    printf("  per row: batched %.1f ns, floor %.1f ns; per member: batched %.0f ns, "
           "loop+copy %.0f ns; weights read at %.1f GB/s\n", 1e9 * med[0] / b.rows,
           1e9 * med[3] / b.rows, 1e9 * med[0] / P, 1e9 * med[1] / P,
           4e-9 * (double)frl_population_member_size(b.pop) * P / med[4]);
    teardown(&b);
    return bad; /* the figures stand, but a loop that disagrees fails the run */
}

/* The machine: the CPU's model, the online CPUs and the load. */
static void print_machine(void)
{
    char model[256] = "unknown", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            const char *c = strchr(line, ':');
            if (c) {
                snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = 0;
            }
            break;
        }
    if (f)
        fclose(f);
    double load[3] = {0, 0, 0};
    f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
            load[0] = load[1] = load[2] = -1;
        fclose(f);
    }
    printf("machine: %s, %ld online CPUs, load average %.2f %.2f %.2f\n", model,
           sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);
}

int main(int argc, char **argv)
{
    opts o;
    parse(&o, argc, argv);
    frl_config *cfg;
    frl_runtime *rt;
    if (frl_config_create(&cfg, NULL) || frl_config_set_int(cfg, "runtime.threads", o.threads) ||
        frl_config_set(cfg, "policy.hidden", "64,64") ||
        frl_config_set(cfg, "policy.activation", "tanh") ||
        frl_runtime_create(&rt, cfg, NULL, NULL))
        return fprintf(stderr, "bench_population: %s\n", frl_last_error()), 1;
    frl_env *env;
    if (frl_env_create(&env, rt, "CartPole-v1", NULL))
        return fprintf(stderr, "bench_population: %s\n", frl_last_error()), 1;
    const frl_space *os = frl_env_observation_space(env), *as = frl_env_action_space(env);
    printf("bench_population: fastrl %s\n", frl_version_string());
    print_machine();
    const char *info = frl_build_info();
    const char *k = strstr(info, "network kernels:"), *c = strstr(info, "compiler:");
    if (c)
        printf("%.*s\n", (int)strcspn(c, "\n"), c);
    if (k)
        printf("%.*s\n", (int)strcspn(k, "\n"), k);
    printf("cpu features: %s\n", frl_cpu_features());
    printf("threads: %d (runtime.threads; the batched call, the loops and the floor all on "
           "them)\n", (int)frl_runtime_threads(rt));
    printf("policy: CartPole-v1 spaces (obs width %lld, discrete(%lld) actions), "
           "policy.hidden=64,64, policy.activation=tanh; deterministic acting\n",
           (long long)frl_space_width(os), (long long)frl_space_n(as));
    printf("timing: median of %d reps, each a sample of about %.0f ms of back-to-back calls, "
           "the variants interleaved\n", o.reps, o.sample_ms);
    int rc = 0;
    static const int32_t rows_per_member[2] = {1, 16};
    for (int i = 0; i < 2; i++)
        rc |= run_config(rt, cfg, os, as, o.members, rows_per_member[i], &o);
    frl_env_destroy(env);
    frl_runtime_destroy(rt);
    frl_config_destroy(cfg);
    return rc;
}
