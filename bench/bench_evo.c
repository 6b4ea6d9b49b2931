/* bench_evo: the optimisers' own costs, apart from any environment.
 *
 *   bench_evo [--threads 1] [--generations 1000]
 *
 * 1. Deep GA genomes: a GA of P = 64 members of n = 4610 parameters (a 64x64 tanh MLP on
 *    CartPole-v1's spaces; ga.truncation 10, ga.elites 2) runs --generations generations
 *    on a fitness drawn at random per member and generation, so the parents change every
 *    generation and the genomes grow by a seed a generation, to about that many seeds.
 *    Then every member of the last generation is rebuilt from its seeds alone
 *    (frl_evo_rebuild) and compared bit for bit with what ask gave. Printed: the genome
 *    length, the time to rebuild one from scratch, and the time per child with the parent
 *    cache (a tell makes P - elites children, each one mutation of a cached parent), and
 *    their ratio; then the GA saved and loaded into a fresh one (every member rebuilt,
 *    each distinct parent once), its time, and that the loaded population is
 *    bit-identical. Exit status 1 if a member differs or the GA cannot be saved and
 *    loaded.
 * 2. OpenAI-ES: ask and tell per generation for P = 256 of the same n (es.noise_floats
 *    2^22), against the floor of writing the P x n block once (memset).
 * Timings are printed, never asserted; medians over the generations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "bench_time.h"
#include "fastrl.h"

enum { N = 4610 };

static void fitness_of(const float *x, int32_t P, double *f)
{
    for (int32_t i = 0; i < P; i++) {
        double s = 0;
        for (int j = 0; j < 64; j++)
            s -= (double)x[(size_t)i * N + (size_t)j] * x[(size_t)i * N + (size_t)j];
        f[i] = s;
    }
}

static frl_evo *make(frl_runtime *rt, const char *settings, const float *initial)
{
    frl_config *cfg;
    frl_evo *e = NULL;
    if (frl_config_create(&cfg, NULL) != FRL_OK || frl_config_parse(cfg, settings) != FRL_OK ||
        frl_evo_create(&e, rt, cfg, N, initial) != FRL_OK)
        fprintf(stderr, "bench_evo: %s\n", frl_last_error());
    frl_config_destroy(cfg);
    return e;
}

/* Returns the number of members whose rebuilt parameters differ. */
static int bench_ga(frl_runtime *rt, int generations, const float *initial)
{
    enum { P = 64, ELITES = 2 };
    frl_evo *e = make(rt, "train.algo=ga ga.population=64 ga.truncation=10 ga.elites=2 "
                          "ga.sigma=0.02 ga.init_sigma=0.1", initial);
    if (!e)
        return P;
    float *x = malloc(sizeof(float) * P * N), *r = malloc(sizeof(float) * N);
    double f[P], *tell = malloc(sizeof(double) * (size_t)generations);
    uint64_t h = 88172645463325252ULL;
    for (int g = 0; g < generations; g++) {
        frl_evo_ask(e, x, (int64_t)P * N);
        for (int32_t i = 0; i < P; i++) { /* xorshift64: a fitness at random */
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            f[i] = (double)(h >> 11) * 0x1.0p-53;
        }
        double t0 = bench_now();
        frl_evo_tell(e, f, P);
        tell[g] = bench_now() - t0;
    }
    frl_evo_ask(e, x, (int64_t)P * N);
    int differ = 0, longest = 0;
    double rebuild = 0;
    uint64_t *seeds = malloc(sizeof(uint64_t) * (size_t)(generations + 2));
    for (int32_t m = 0; m < P; m++) {
        int32_t len;
        frl_evo_genome(e, m, seeds, generations + 2, &len);
        double t0 = bench_now();
        frl_evo_rebuild(e, seeds, len, r, N);
        double t = bench_now() - t0;
        if (len > longest) {
            longest = len;
            rebuild = t;
        }
        differ += memcmp(r, x + (size_t)m * N, sizeof(float) * N) != 0;
    }
    /* Saved as seed lists and loaded into a fresh GA: every member rebuilt, parents
     * shared. */
    const char *path = "bench_evo_ga.frl";
    frl_evo *loaded = make(rt, "train.algo=ga ga.population=64 ga.truncation=10 ga.elites=2 "
                          "ga.sigma=0.02 ga.init_sigma=0.1", initial);
    /* The loaded population's check is its own: a save or load that failed once printed
     * a load time of -1000 ms and "bit-identical", and a loaded population that differed
     * counted as one more member not rebuilt. */
    double t_load = -1;
    int load_differs = 1;
    if (loaded && frl_evo_save(e, path) == FRL_OK) {
        double t0 = bench_now();
        if (frl_evo_load(loaded, path) == FRL_OK) {
            t_load = bench_now() - t0;
            float *y = malloc(sizeof(float) * P * N);
            frl_evo_ask(loaded, y, (int64_t)P * N);
            load_differs = memcmp(x, y, sizeof(float) * P * N) != 0;
            free(y);
        }
        remove(path);
    }
    if (t_load < 0)
        fprintf(stderr, "bench_evo: saving or loading the GA: %s\n", frl_last_error());
    frl_evo_destroy(loaded);
    double per_child = bench_median(tell, generations) / (P - ELITES);
    printf("GA genomes: %d generations of %d members of %d parameters\n", generations, P, N);
    printf("  rebuilt from seeds: %d of %d members bit-identical to ask's\n", P - differ, P);
    printf("  longest genome %d seeds: from scratch %.2f ms; a child from the parent cache "
           "%.1f us (tell's median %.2f ms / %d children): %.0fx\n", longest, rebuild * 1e3,
           per_child * 1e6, bench_median(tell, generations) * 1e3, P - ELITES, rebuild / per_child);
    if (t_load >= 0)
        printf("  a checkpoint of the %d genomes loaded (every member rebuilt, shared parents "
               "replayed once) in %.1f ms, against %.0f ms for %d genomes from scratch; the "
               "loaded population %s\n", P, t_load * 1e3, rebuild * 1e3 * P, P,
               load_differs ? "DIFFERS" : "is bit-identical");
    free(seeds);
    free(tell);
    free(x);
    free(r);
    frl_evo_destroy(e);
    return differ + load_differs;
}

static void bench_es(frl_runtime *rt, const float *initial)
{
    enum { P = 256, GENS = 40 };
    frl_evo *e = make(rt, "train.algo=es es.population=256", initial);
    if (!e)
        return;
    float *x = malloc(sizeof(float) * P * N);
    double f[P], ask[GENS], tell[GENS], floor[GENS];
    for (int g = 0; g < GENS; g++) {
        double t0 = bench_now();
        frl_evo_ask(e, x, (int64_t)P * N);
        double t1 = bench_now();
        fitness_of(x, P, f);
        double t2 = bench_now();
        frl_evo_tell(e, f, P);
        double t3 = bench_now();
        memset(x, g, sizeof(float) * P * N);
        double t4 = bench_now();
        ask[g] = t1 - t0;
        tell[g] = t3 - t2;
        floor[g] = t4 - t3;
    }
    double a = bench_median(ask, GENS), t = bench_median(tell, GENS), fl = bench_median(floor, GENS);
    printf("ES: %d members of %d parameters, median of %d generations\n", P, N, GENS);
    printf("  ask %.2f ms (%.1fx the floor, writing the %.1f MB block once: %.2f ms), tell "
           "%.2f ms\n", a * 1e3, a / fl, (double)P * N * 4e-6, fl * 1e3, t * 1e3);
    free(x);
    frl_evo_destroy(e);
}

int main(int argc, char **argv)
{
    int threads = 1, generations = 1000;
    bench_args_init(argc, argv, "bench_evo",
                    "usage: bench_evo [--threads 1] [--generations 1000]\n");
    for (int i = 1; i < argc; i += 2) {
        const char *v = bench_value(argc, argv, i);
        if (strcmp(argv[i], "--threads") == 0)
            threads = (int)bench_int(argv[i], v, 1, 1024);
        else if (strcmp(argv[i], "--generations") == 0)
            generations = (int)bench_int(argv[i], v, 1, 1 << 24);
        else
            bench_unknown(argv[i]);
    }
    frl_config *cfg;
    frl_runtime *rt = NULL;
    if (frl_config_create(&cfg, NULL) != FRL_OK ||
        frl_config_set_int(cfg, "runtime.threads", threads) != FRL_OK ||
        frl_runtime_create(&rt, cfg, NULL, NULL) != FRL_OK) {
        fprintf(stderr, "bench_evo: %s\n", frl_last_error());
        return 1;
    }
    frl_config_destroy(cfg);
    float *initial = malloc(sizeof(float) * N);
    for (int j = 0; j < N; j++)
        initial[j] = 0.1f * sinf((float)j);
    printf("bench_evo: runtime.threads %d, %s\n", threads, frl_cpu_features());
    int differ = bench_ga(rt, generations, initial);
    bench_es(rt, initial);
    free(initial);
    frl_runtime_destroy(rt);
    return differ ? 1 : 0;
}
