/* fastrl render ENV --out FILE.png: one frame of an image env as the policy sees it,
 * after a reset and optionally some steps, written as PNG by tools/png.c. The ray envs
 * step with their scripted oracle by default, so a picture shows the task being
 * solved; other image envs with uniform random actions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/rng.h"
#include "env/ray/env.h"
#include "png.h"

typedef struct render_opts {
    const char *env, *out, *policy;
    uint64_t seed;
    int32_t steps;
} render_opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: fastrl render ENV --out FILE.png [--seed S] [--steps K] "
               "[--policy oracle|random] [--set key=value ...]\n");
}

static int usage_fail(void)
{
    usage(stderr);
    return 2;
}

/* Option a with its value v: 0, or 2 after saying why it is refused. */
static int parse_option(const char *a, const char *v, render_opts *o, frl_config *cfg)
{
    int64_t n = 0;
    int rc;
    if (!strcmp(a, "--out")) {
        o->out = v;
        return cli_path_value("render", a, "FILE", v);
    }
    if (!strcmp(a, "--seed")) {
        rc = cli_parse_int("render", a, v, 0, INT64_MAX, &n);
        o->seed = (uint64_t)n;
        return rc;
    }
    if (!strcmp(a, "--steps")) {
        rc = cli_parse_int("render", a, v, 0, INT32_MAX, &n);
        o->steps = (int32_t)n;
        return rc;
    }
    if (!strcmp(a, "--policy")) {
        if (strcmp(v, "oracle") != 0 && strcmp(v, "random") != 0) {
            fprintf(stderr, "fastrl render: --policy %s: the choices are oracle and "
                            "random\n", v);
            return 2;
        }
        o->policy = v;
        return 0;
    }
    if (strcmp(a, "--set") != 0) {
        fprintf(stderr, "fastrl render: unknown option %s\n", a);
        return usage_fail();
    }
    return cli_set("render", cfg, v);
}

static int parse(int argc, char **argv, render_opts *o, frl_config *cfg)
{
    if (argc < 1 || argv[0][0] == '-')
        return usage_fail();
    o->env = argv[0];
    for (int i = 1; i < argc; i += 2) {
        int rc = i + 1 < argc ? parse_option(argv[i], argv[i + 1], o, cfg) : usage_fail();
        if (rc != 0)
            return rc;
    }
    if (!o->out)
        return usage_fail();
    if (!o->policy)
        o->policy = frl_ray_env_is(o->env) ? "oracle" : "random";
    if (!strcmp(o->policy, "oracle") && !frl_ray_env_is(o->env)) {
        fprintf(stderr, "fastrl render: %s has no scripted oracle (the ray envs have one); "
                        "use --policy random\n", o->env);
        return 2;
    }
    return 0;
}

static frl_status act(frl_vec_env *v, const render_opts *o, frl_rng *r)
{
    int32_t *a = frl_vec_env_actions(v);
    if (!strcmp(o->policy, "oracle"))
        return frl_ray_oracle_actions(v, a);
    int64_t n = frl_space_n(frl_vec_env_action_space(v));
    a[0] = (int32_t)(frl_rng_next(r) % (uint64_t)n);
    return FRL_OK;
}

static int run(frl_vec_env *v, const render_opts *o)
{
    const frl_space *s = frl_vec_env_observation_space(v);
    if (frl_space_get_kind(s) == FRL_SPACE_MIXED)
        s = frl_space_part(s, 0); /* the image leads each row: env 0's is the first bytes */
    if (frl_space_get_kind(s) != FRL_SPACE_IMAGE) {
        fprintf(stderr, "fastrl render: %s observes a vector, not an image; only image envs "
                        "(fastrl envs: Image(...)) can be rendered\n", o->env);
        return 1;
    }
    const int64_t *sh = frl_space_shape(s);
    if (sh[2] != 1 && sh[2] != 3) {
        fprintf(stderr, "fastrl render: %lld channels; PNG frames take 1 or 3\n", (long long)sh[2]);
        return 1;
    }
    frl_status st = frl_vec_env_reset(v, o->seed);
    frl_rng r = frl_rng_stream(o->seed, 1);
    for (int32_t k = 0; st == FRL_OK && k < o->steps; k++)
        if ((st = act(v, o, &r)) == FRL_OK)
            st = frl_vec_env_step(v);
    if (st != FRL_OK)
        return cli_fail(o->env, st);
    if (png_write(o->out, frl_vec_env_frames(v), (int32_t)sh[1], (int32_t)sh[0], (int32_t)sh[2])) {
        fprintf(stderr, "fastrl render: cannot write %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    printf("%s: %lld x %lld x %lld frame after %d steps (%s policy, seed %llu) -> %s\n", o->env,
           (long long)sh[1], (long long)sh[0], (long long)sh[2], (int)o->steps, o->policy,
           (unsigned long long)o->seed, o->out);
    return 0;
}

int cli_render(int argc, char **argv)
{
    render_opts o = {NULL, NULL, NULL, 0, 0};
    if (cli_asks_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    frl_config *cfg;
    if (frl_config_create(&cfg, NULL) != FRL_OK || frl_config_set_int(cfg, "runtime.threads", 1))
        return cli_fail("config", FRL_ERR_NOMEM);
    int rc = parse(argc, argv, &o, cfg);
    frl_runtime *rt = NULL;
    frl_vec_env *v = NULL;
    frl_status st = FRL_OK;
    if (rc == 0 && (st = frl_runtime_create(&rt, cfg, NULL, NULL)) != FRL_OK)
        rc = cli_fail("runtime", st);
    if (rc == 0 && (st = frl_vec_env_create(&v, rt, o.env, 1, cfg)) != FRL_OK)
        rc = cli_fail(o.env, st);
    if (rc == 0)
        rc = run(v, &o);
    frl_vec_env_destroy(v);
    frl_runtime_destroy(rt);
    frl_config_destroy(cfg);
    return rc;
}
