/* The raycasting envs (lib/env/ray): env frames per second per core through the public
 * vec env API, beside the renderer alone in the same run, and each task's returns under
 * its scripted oracle and under uniform random actions.
 *
 *   build/bench/bench_raycast [--seconds S] [--episodes E] [--threads T] [--set "k=v ..."]
 *
 * Frames are counted as Sample Factory counts them: every env frame, the skipped ones
 * included, so a step at frame skip 4 is 4 frames. The renderer-alone figure draws the
 * two frames a step renders and nothing else; env frames/s over it (x 2 renders per 4
 * frames) shows what stepping, the tasks and the vec env add. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_time.h"
#include "core/rng.h"
#include "env/ray/env.h"
#include "env/ray/render.h"
#include "env/ray/tasks.h"
#include "fastrl.h"

enum { ENVS = 64, RUNS = 5 };

typedef struct opts {
    double seconds;
    int32_t episodes, threads;
    const char *set; /* settings for the returns table (e.g. env.maze_size=3) */
} opts;

static frl_runtime *make_runtime(int32_t threads)
{
    frl_config *cfg;
    frl_runtime *rt = NULL;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return NULL;
    frl_config_set_int(cfg, "runtime.threads", threads);
    if (frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK)
        fprintf(stderr, "runtime: %s\n", frl_last_error());
    frl_config_destroy(cfg);
    return rt;
}

static frl_vec_env *make_env(frl_runtime *rt, const char *name, int32_t n, const char *set)
{
    frl_config *cfg;
    frl_vec_env *v = NULL;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return NULL;
    if ((set[0] && frl_config_parse(cfg, set) != FRL_OK) ||
        frl_vec_env_create(&v, rt, name, n, cfg) != FRL_OK)
        fprintf(stderr, "%s: %s\n", name, frl_last_error());
    frl_config_destroy(cfg);
    return v;
}

/* --set refused before anything is timed (an unknown key made every return 0). */
static void check_set(const char *set)
{
    frl_config *cfg;
    char why[600];
    if (!set[0] || frl_config_create(&cfg, NULL) != FRL_OK)
        return;
    frl_status st = frl_config_parse(cfg, set);
    snprintf(why, sizeof why, "--set: %s", frl_last_error());
    frl_config_destroy(cfg);
    if (st != FRL_OK)
        bench_refuse(why);
}

/* Env steps per second with random actions, the median of RUNS samples. */
static double steps_per_second(frl_vec_env *v, double seconds)
{
    double rates[RUNS];
    frl_rng r = frl_rng_stream(7, 0);
    int32_t n = frl_vec_env_num_envs(v), *a = frl_vec_env_actions(v);
    if (frl_vec_env_reset(v, 1) != FRL_OK)
        return -1;
    for (int run = 0; run < RUNS; run++) {
        int64_t steps = 0;
        double t0 = bench_now(), t = t0;
        for (; t - t0 < seconds / RUNS; t = bench_now()) {
            for (int32_t i = 0; i < n; i++)
                a[i] = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
            if (frl_vec_env_step(v) != FRL_OK)
                return -1;
            steps += n;
        }
        rates[run] = (double)steps / (t - t0);
    }
    return bench_median(rates, RUNS);
}

/* Renders per second of the renderer alone, on a world mid-episode. */
static double renders_per_second(const char *task, int32_t w, int32_t h, int32_t ch,
                                 double seconds)
{
    static ray_textures tex;
    ray_view view;
    ray_sim sim;
    memset(&sim, 0, sizeof sim);
    sim.maze_size = 5;
    sim.rng = frl_rng_stream(3, 0);
    ray_textures_make(&tex);
    if (ray_view_init(&view, w, h, ch) != 0)
        return -1;
    ray_task_find(task)->reset(&sim);
    float *depth = malloc(sizeof(float) * (size_t)w);
    uint8_t *out = malloc((size_t)w * (size_t)h * (size_t)ch);
    double rates[RUNS];
    for (int run = 0; run < RUNS; run++) {
        int64_t k = 0;
        double t0 = bench_now(), t = t0;
        for (; t - t0 < seconds / RUNS; t = bench_now(), k++) {
            sim.world.angle += 0.01f; /* a new view each time */
            ray_render(&sim.world, &tex, &view, depth, out);
        }
        rates[run] = (double)k / (t - t0);
    }
    free(depth);
    free(out);
    return bench_median(rates, RUNS);
}

static void speed_table(const opts *o)
{
    static const struct { int32_t w, h; int gray; } res[] = {{84, 84, 1}, {84, 84, 0},
                                                              {128, 72, 1}, {128, 72, 0}};
    frl_runtime *rt = make_runtime(o->threads);
    printf("rendering, %d thread(s), %d envs, frame skip 4 (frames counted with the skipped "
           "ones):\n", (int)o->threads, ENVS);
    printf("%-14s %-12s %14s %16s %16s %8s\n", "task", "frame", "env frames/s",
           "per thread", "renderer alone", "ratio");
    for (int32_t t = 0; rt && ray_task_at(t); t++) {
        for (size_t k = 0; k < sizeof res / sizeof res[0]; k++) {
            char set[128], frame[32];
            snprintf(set, sizeof set, "env.width=%d env.height=%d env.grayscale=%s",
                     (int)res[k].w, (int)res[k].h, res[k].gray ? "true" : "false");
            snprintf(frame, sizeof frame, "%dx%d %s", (int)res[k].w, (int)res[k].h,
                     res[k].gray ? "gray" : "rgb");
            frl_vec_env *v = make_env(rt, ray_task_at(t)->name, ENVS, set);
            double fps = v ? 4.0 * steps_per_second(v, o->seconds) : -1;
            /* a step at frame skip 4 draws 2 frames: the renderer's bound is 2x its rate */
            double bound = 2.0 * renders_per_second(ray_task_at(t)->name, res[k].w, res[k].h,
                                                    res[k].gray ? 1 : 3, o->seconds);
            printf("%-14s %-12s %14.0f %16.0f %16.0f %7.0f%%\n", ray_task_at(t)->name, frame,
                   fps, fps / o->threads, bound, 100.0 * fps / o->threads / bound);
            frl_vec_env_destroy(v);
        }
    }
    frl_runtime_destroy(rt);
}

/* Mean return and length of `episodes` episodes under the oracle or random actions:
 * each of the ENVS envs runs the same number of its own episodes, so short episodes are
 * not over-counted (taking the first N to end across envs would favour them). */
static void returns(frl_runtime *rt, const char *task, int oracle, int32_t episodes,
                    const char *set, double *mean, double *len)
{
    frl_vec_env *v = make_env(rt, task, ENVS, set);
    frl_rng r = frl_rng_stream(11, 0);
    int32_t quota = (episodes + ENVS - 1) / ENVS, done = 0, *a = v ? frl_vec_env_actions(v) : NULL;
    double sum = 0, steps = 0, ret[ENVS] = {0}, el[ENVS] = {0};
    int32_t count[ENVS] = {0};
    if (!v || frl_vec_env_reset(v, 2) != FRL_OK)
        quota = 0;
    while (done < quota * ENVS) {
        if (oracle)
            frl_ray_oracle_actions(v, a);
        else
            for (int32_t i = 0; i < ENVS; i++)
                a[i] = (int32_t)(frl_rng_next(&r) % RAY_ACTIONS);
        if (frl_vec_env_step(v) != FRL_OK)
            break;
        const float *rw = frl_vec_env_rewards(v);
        const uint8_t *te = frl_vec_env_terminated(v), *tr = frl_vec_env_truncated(v);
        const uint8_t *rs = frl_vec_env_reset_steps(v);
        for (int32_t i = 0; i < ENVS; i++) {
            if (rs[i] || count[i] == quota)
                continue; /* the autoreset step is no step of either episode */
            ret[i] += rw[i];
            el[i] += 1;
            if (te[i] || tr[i]) {
                sum += ret[i];
                steps += el[i];
                count[i]++;
                done++;
                ret[i] = el[i] = 0;
            }
        }
    }
    *mean = done ? sum / done : 0;
    *len = done ? steps / done : 0;
    frl_vec_env_destroy(v);
}

static void returns_table(const opts *o)
{
    frl_runtime *rt = make_runtime(o->threads);
    /* each env runs its share, rounded up: --episodes 1000 is 16 from each of 64 */
    int32_t quota = (o->episodes + ENVS - 1) / ENVS;
    printf("\nreturns over %d episodes, %d from each of %d envs (84x84 gray, frame skip 4, "
           "the task's time limit%s%s):\n", (int)(quota * ENVS), (int)quota, ENVS,
           o->set[0] ? "; " : "", o->set);
    printf("%-14s %14s %12s %14s %12s\n", "task", "oracle return", "length", "random return",
           "length");
    for (int32_t t = 0; rt && ray_task_at(t); t++) {
        double om, ol, rm, rl;
        returns(rt, ray_task_at(t)->name, 1, o->episodes, o->set, &om, &ol);
        returns(rt, ray_task_at(t)->name, 0, o->episodes, o->set, &rm, &rl);
        printf("%-14s %14.3f %12.1f %14.3f %12.1f\n", ray_task_at(t)->name, om, ol, rm, rl);
    }
    frl_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    opts o = {2.0, 1000, 1, ""};
    bench_args_init(argc, argv, "bench_raycast",
                    "usage: bench_raycast [--seconds 2] [--episodes 1000] [--threads 1] "
                    "[--set \"k=v ...\"]\n");
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = bench_value(argc, argv, i);
        if (!strcmp(k, "--seconds")) /* 0 timed no step: 0 / 0 steps a second */
            o.seconds = bench_real(k, v, 0, 1);
        else if (!strcmp(k, "--episodes"))
            o.episodes = (int32_t)bench_int(k, v, 1, INT32_MAX - ENVS);
        else if (!strcmp(k, "--threads"))
            o.threads = (int32_t)bench_int(k, v, 1, 1024);
        else if (!strcmp(k, "--set"))
            o.set = v;
        else
            bench_unknown(k);
    }
    check_set(o.set);
    speed_table(&o);
    returns_table(&o);
    return 0;
}
