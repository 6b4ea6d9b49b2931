/* fastrl: the command-line program. Subcommands: train (tools/train.c), eval
 * (tools/eval.c), export (tools/export.c), cut (tools/cut.c), envs, info, config --list, bench env
 * (tools/bench_env.c), bench train (tools/bench_train.c) and render (tools/render.c); `fastrl --help` lists them
 * with their options. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "openblas_core.h"
#include "core/config.h"
#include "core/dist.h"
#include "env/mujoco_env.h"

double cli_start;

int cli_fail(const char *what, frl_status st)
{
    fprintf(stderr, "fastrl: %s: %s: %s\n", what, frl_status_name(st), frl_last_error());
    return 1;
}

int cli_asks_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

int cli_bad_option(const char *what, frl_status st)
{
    cli_fail(what, st);
    return 2;
}

int cli_set(const char *cmd, frl_config *cfg, const char *text)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p) { /* a run with the defaults, as if the option were not there */
        fprintf(stderr, "fastrl %s: --set: '%s' sets nothing (give key=value)\n", cmd, text);
        return 2;
    }
    frl_status st = frl_config_parse(cfg, text);
    return st == FRL_OK ? 0 : cli_bad_option("--set", st);
}

int cli_path_value(const char *cmd, const char *opt, const char *what, const char *text)
{
    int env = !strcmp(what, "ENV");
    if (!text[0]) {
        fprintf(stderr, "fastrl %s: %s: an empty %s (%s)\n", cmd, opt, env ? "name" : "path",
                env                    ? "fastrl envs lists the environments"
                : !strcmp(what, "DIR") ? "give . for the working directory"
                                       : "name a file");
        return 2;
    }
    if (strncmp(text, "--", 2) != 0)
        return 0;
    fprintf(stderr, "fastrl %s: %s takes %s %s, not an option ('%s'%s%s%s)\n", cmd, opt,
            env ? "an" : "a", what, text, env ? "" : "; ./", env ? "" : text,
            env ? "" : " names a file so called");
    return 2;
}

/* A bound as a reader takes it in: exact below a trillion, then 9.2e+18. */
static void format_bound(char *buf, size_t size, double x)
{
    snprintf(buf, size, fabs(x) < 1e12 ? "%.12g" : "%.2g", x);
}

/* The whole of text as a finite double (no sign of overflow or underflow). */
static int whole_real(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || isspace((unsigned char)text[0]) || errno == ERANGE ||
        !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* The whole of text as an int64, as the config reads an int key: digits, or a real that
 * is exactly a whole number (1e6), read exactly (a double would round 2^53 + 1, and make
 * a whole number of 4503599627370497.5). */
static int whole_int(const char *text, int64_t *out)
{
    return frl_parse_int_text(text, out) == 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text, int64_t lo, int64_t hi,
                  int64_t *out)
{
    int64_t v;
    if (whole_int(text, &v) && v >= lo && v <= hi) {
        *out = v;
        return 0;
    }
    char l[32], h[32];
    format_bound(l, sizeof l, (double)lo);
    format_bound(h, sizeof h, (double)hi);
    fprintf(stderr, "fastrl %s: %s: '%s' is not a whole number in [%s, %s]\n", cmd, opt, text,
            l, h);
    return 2;
}

int cli_parse_real(const char *cmd, const char *opt, const char *text, double lo, double hi,
                   double *out)
{
    double v;
    if (whole_real(text, &v) && v >= lo && v <= hi) {
        *out = v;
        return 0;
    }
    char l[32], h[32], range[80] = "";
    format_bound(l, sizeof l, lo);
    format_bound(h, sizeof h, hi);
    if (isfinite(lo) && isfinite(hi))
        snprintf(range, sizeof range, " in [%s, %s]", l, h);
    else if (isfinite(lo))
        snprintf(range, sizeof range, " >= %s", l);
    fprintf(stderr, "fastrl %s: %s: '%s' is not a finite number%s\n", cmd, opt, text, range);
    return 2;
}

/* A file not made yet as one spelling: its directory resolved (links, "..", "./") and
 * its last name; 1 when the directory does not resolve. */
static int resolved_new_path(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return 1;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    char *real = realpath(dir, NULL);
    if (!real)
        return 1;
    int w = snprintf(out, size, "%s/%s", real, slash ? slash + 1 : path);
    free(real);
    return w < 0 || (size_t)w >= size;
}

int cli_same_file(const char *a, const char *b)
{
    struct stat x, y;
    if (!strcmp(a, b))
        return 1; /* two outputs not yet made are one file all the same */
    int has_a = stat(a, &x) == 0, has_b = stat(b, &y) == 0;
    if (has_a || has_b)
        return has_a && has_b && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
    /* neither made yet: "./m.txt" and "m.txt" are one file too */
    char ra[8192], rb[8192];
    return !resolved_new_path(a, ra, sizeof ra) && !resolved_new_path(b, rb, sizeof rb) &&
           !strcmp(ra, rb);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_space(const char *label, const frl_space *s)
{
    int64_t n = frl_space_n(s);
    if (frl_space_get_kind(s) == FRL_SPACE_DISCRETE) {
        printf("  %s: Discrete(%lld)\n", label, (long long)n);
        return;
    }
    if (frl_space_get_kind(s) == FRL_SPACE_MIXED) {
        printf("  %s: Mixed(an image, then a vector; %lld bytes a row)\n", label, (long long)n);
        print_space("  image", frl_space_part(s, 0));
        print_space("  vector", frl_space_part(s, 1));
        return;
    }
    if (frl_space_get_kind(s) == FRL_SPACE_IMAGE) {
        const int64_t *sh = frl_space_shape(s);
        printf("  %s: Image(height=%lld, width=%lld, channels=%lld, uint8)\n", label,
               (long long)sh[0], (long long)sh[1], (long long)sh[2]);
        return;
    }
    int unbounded = 1;
    for (int64_t i = 0; i < n; i++)
        unbounded &= isinf(frl_space_low(s)[i]) && isinf(frl_space_high(s)[i]);
    if (unbounded) { /* the MuJoCo tasks' observations: n infinities say nothing */
        printf("  %s: Box(shape=(%lld,), unbounded)\n", label, (long long)n);
        return;
    }
    printf("  %s: Box(shape=(%lld,), low=[", label, (long long)n);
    for (int64_t i = 0; i < n; i++)
        printf("%s%g", i ? ", " : "", (double)frl_space_low(s)[i]);
    printf("], high=[");
    for (int64_t i = 0; i < n; i++)
        printf("%s%g", i ? ", " : "", (double)frl_space_high(s)[i]);
    printf("])\n");
}

static frl_status print_env(frl_runtime *rt, const char *name)
{
    frl_env *e;
    frl_status st = frl_env_create(&e, rt, name, NULL);
    if (st != FRL_OK)
        return st;
    printf("%s\n", name);
    print_space("observation", frl_env_observation_space(e));
    print_space("action", frl_env_action_space(e));
    printf("  state: %d float64 values\n", (int)frl_env_state_size(e));
    frl_env_destroy(e);
    return FRL_OK;
}

static int cmd_envs(void)
{
    frl_runtime *rt;
    frl_config *cfg;
    if (frl_config_create(&cfg, NULL) != FRL_OK || frl_config_set_int(cfg, "runtime.threads", 1))
        return cli_fail("config", FRL_ERR_NOMEM);
    frl_status st = frl_runtime_create(&rt, cfg, NULL, NULL);
    frl_config_destroy(cfg);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    for (int32_t i = 0; frl_env_name_at(i); i++)
        if ((st = print_env(rt, frl_env_name_at(i))) != FRL_OK)
            return cli_fail(frl_env_name_at(i), st);
    if (strncmp(frl_mujoco_describe(), "MuJoCo", 6) != 0)
        printf("MuJoCo tasks: %s\n", frl_mujoco_describe());
    for (int32_t i = 0; strncmp(frl_mujoco_describe(), "MuJoCo", 6) == 0 && frl_mujoco_task_at(i); i++)
        if ((st = print_env(rt, frl_mujoco_task_at(i))) != FRL_OK)
            return cli_fail(frl_mujoco_task_at(i), st);
    frl_runtime_destroy(rt);
    return 0;
}

/* What runtime.device=auto would choose, and why, without failing the command. */
static void print_device(void)
{
    frl_config *cfg;
    frl_runtime *rt;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return;
    frl_config_set_int(cfg, "runtime.threads", 1);
    frl_config_set(cfg, "runtime.device", "auto");
    if (frl_runtime_create(&rt, cfg, NULL, NULL) == FRL_OK) {
        const char *note = frl_runtime_device_note(rt);
        printf("device (runtime.device=auto): %s%s%s\n", frl_runtime_device(rt),
               note[0] ? "; " : "", note);
        frl_runtime_destroy(rt);
    }
    frl_config_destroy(cfg);
}

static int cmd_info(void)
{
    frl_runtime *rt;
    frl_status st = frl_runtime_create(&rt, NULL, NULL, NULL);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    printf("%s", frl_build_info());
    printf("abi loaded: %u.%u\n", frl_abi_version() >> 16, frl_abi_version() & 0xffff);
    printf("threads (default): %d\n", (int)frl_runtime_threads(rt));
    printf("cpu features: %s\n", frl_cpu_features());
    int32_t n = 0;
    while (frl_env_name_at(n))
        n++;
    printf("built-in environments: %d\n", (int)n);
    printf("mujoco: %s\n", frl_mujoco_describe());
    printf("mpi (dist.mode): %s\n", frl_dist_describe());
    frl_runtime_destroy(rt);
    print_device();
    return 0;
}

/* x in the fewest digits that read back as x: 1048576 and 2147483647, where %g wrote
 * 1.04858e+06 and 2.14748e+09, bounds below the real ones. */
static void format_exact(char *buf, size_t size, double x)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

static int cmd_config_list(void)
{
    static const char *const types[] = {"?", "int", "float", "bool", "choice", "list"};
    for (const char *k = frl_config_next(NULL); k; k = frl_config_next(k)) {
        frl_config_key_info info;
        info.struct_size = sizeof info;
        if (frl_config_describe(k, &info) != FRL_OK)
            return cli_fail(k, FRL_ERR_INTERNAL);
        printf("%-24s %-6s default %-6s", info.name, types[info.type], info.default_text);
        char lo[32], hi[32];
        format_exact(lo, sizeof lo, info.min);
        format_exact(hi, sizeof hi, info.max);
        if (info.type == FRL_CONFIG_INT || info.type == FRL_CONFIG_FLOAT)
            printf(" range [%s, %s]", lo, hi);
        if (info.type == FRL_CONFIG_INT_LIST)
            printf(" items in [%s, %s]", lo, hi);
        if (info.type == FRL_CONFIG_CHOICE)
            printf(" choices %s", info.choices);
        printf("\n    %s\n", info.help);
    }
    return 0;
}

/* `fastrl config --list`; anything else gets the command's usage (--help: on stdout). */
static int cmd_config(int argc, char **argv)
{
    if (argc == 1 && !strcmp(argv[0], "--list"))
        return cmd_config_list();
    int help = argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"));
    fprintf(help ? stdout : stderr, "usage: fastrl config --list   every setting with its type, "
                                    "default and help\n");
    return help ? 0 : 2;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fastrl <command> [options]\n"
               "  envs                      list the built-in environments and their spaces\n"
               "  info                      version, ABI, threads, CPU features, kernels, device\n"
               "  config --list             every setting with its type, default and help\n"
               "  train ENV [--steps N] [--seed S] [--threads T] [--set key=value ...]\n"
               "        [--out DIR [--overwrite]] [--resume DIR] [--quiet] [--verbose]\n"
               "        [--max-seconds S]\n"
               "        [--eval-every N [--eval-episodes K] [--eval-target R] [--eval-max-steps M]]\n"
               "                            train (PPO unless train.algo says otherwise);\n"
               "                            N: the run's total env steps, a resumed run's\n"
               "                            included (default 500,000); progress on\n"
               "                            stderr (--quiet: none); DIR gets metrics.csv,\n"
               "                            TensorBoard events, settings.txt and\n"
               "                            checkpoint.frl (a DIR holding a run takes\n"
               "                            --overwrite, which replaces its metrics and\n"
               "                            events); Ctrl-C saves and stops (exit status\n"
               "                            130; SIGTERM alike, 143), --max-seconds after\n"
               "                            S s of wall time (exit status 0, S 0: no\n"
               "                            limit);\n"
               "                            --verbose adds the library's info lines\n"
               "                            (where runtime.device=auto put the networks);\n"
               "                            --eval-every: K greedy episodes (default 20) on\n"
               "                            an env of its own every N steps, printed as\n"
               "                            `eval:` lines, stopping once the mean reaches R;\n"
               "                            M: an evaluation's env steps before the run\n"
               "                            stops with its error (0: none; default\n"
               "                            10,000,000)\n"
               "  eval CHECKPOINT [--episodes N] [--deterministic] [--env ENV] [--seed S]\n"
               "        [--max-steps M]\n"
               "                            run a saved policy's episodes: mean, std, min\n"
               "                            and max return, mean length; the policy's\n"
               "                            spaces must match the env's; M: env steps\n"
               "                            before giving up (0: none; default none with\n"
               "                            an episode time limit, else 10,000,000)\n"
               "  export CHECKPOINT (--onnx FILE | --c PREFIX) [--int8] [--probe]\n"
               "                            write the policy as an ONNX model, or as C99\n"
               "                            source PREFIX.h and PREFIX.c (libm only; int8\n"
               "                            weights; --probe: PREFIX_probe.c times act)\n"
               "  cut CHECKPOINT (--latency-us X | --list | --arch W1,W2,...) [--batch B]\n"
               "        [--out FILE] [--episodes N] [--deterministic] [--seed S]\n"
               "        [--latency-model FILE] [--fit-latency TIMES]\n"
               "        [--search exhaustive|evolution]\n"
               "                            an elastic run's sub-policy for a latency\n"
               "                            budget at batch B (default 1), chosen by the\n"
               "                            return of N episodes (default 20); --list\n"
               "                            prints the Pareto front; FILE gets a plain\n"
               "                            policy; TIMES: another target's probe\n"
               "                            times; --search: evolution past 4,096\n"
               "                            architectures (doc/elastic.md)\n"
               "  render ENV --out FILE.png [--seed S] [--steps K] [--policy oracle|random]\n"
               "        [--set key=value ...]\n"
               "                            write the env's observation as a PNG after a\n"
               "                            reset and K steps (the ray envs' oracle acts)\n"
               "  bench env ENV [--envs N] [--threads T] [--seconds S]\n"
               "                            environment stepping throughput vs the floor\n"
               "  bench train [ENV] [--steps N] [--threads T] [--set key=value ...]\n"
               "                            end-to-end training throughput vs the FLOP floor\n");
}

static int run_command(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "bench") && argc > 2 && !strcmp(argv[2], "train") &&
        !cli_asks_help(argc - 3, argv + 3))
        frl_openblas_check_core(argv); /* its floor is sgemm's rate */
    if ((!strcmp(cmd, "envs") || !strcmp(cmd, "info")) && cli_asks_help(argc - 2, argv + 2)) {
        usage(stdout); /* they take no options: the program's usage says what they do */
        return 0;
    }
    if ((!strcmp(cmd, "envs") || !strcmp(cmd, "info")) && argc > 2) {
        /* run as if it were not there, a mistyped option went unsaid, with status 0 */
        fprintf(stderr, "fastrl %s: takes no arguments, not '%s'\n", cmd, argv[2]);
        return 2;
    }
    if (!strcmp(cmd, "envs"))
        return cmd_envs();
    if (!strcmp(cmd, "info"))
        return cmd_info();
    if (!strcmp(cmd, "config"))
        return cmd_config(argc - 2, argv + 2);
    if (!strcmp(cmd, "train"))
        return cli_train(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval"))
        return cli_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "export"))
        return cli_export(argc - 2, argv + 2);
    if (!strcmp(cmd, "cut"))
        return cli_cut(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench"))
        return cli_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "render"))
        return cli_render(argc - 2, argv + 2);
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "fastrl: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    cli_start = cli_now();
    int rc = run_command(argc, argv);
    /* stdout on a full disk: the results are lost, which exit status 0 would hide */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "fastrl: cannot write its output: %s\n", strerror(errno));
        return rc ? rc : 1;
    }
    return rc;
}
