/* `fastrl cut CHECKPOINT`: choose a sub-policy of an elastic run (elastic.widths) for a
 * latency budget and write it as a plain policy (doc/elastic.md).
 *
 * Every architecture (depth, widths) is scored by the latency model (measured here, or
 * read from --latency-model) and by the mean return of evaluation episodes; --list
 * prints the Pareto front, --latency-us picks the best return whose predicted latency
 * meets the budget and checks it by measuring the cut policy. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/error.h"
#include "io/container.h"
#include "io/file.h"
#include "core/rng.h"
#include "core/cpu.h"
#include "rl/latency.h"

typedef struct cut_opts {
    const char *path, *out, *arch, *model_path;
    const char *probe_path;   /* --fit-latency: another target's probe times */
    double budget_us;         /* < 0: none */
    int32_t batch, episodes, list, deterministic;
    int32_t evolution;        /* --search: 1 evolution, 0 exhaustive, -1 auto (evolution
                               * beyond MAX_CANDIDATES) */
    uint64_t seed;
} cut_opts;

typedef struct candidate {
    frl_elastic_arch arch;
    double predicted_us, ret;
    int64_t params;           /* the actor's: what a deployment carries */
} candidate;

typedef struct cut_run {
    frl_runtime *rt;
    frl_policy *p;            /* the full policy */
    float *heads;
    frl_elastic e;
    frl_latency_model model;
    frl_config *cfg;          /* the run's settings */
    char env[64];
    candidate *c;
    int64_t n;
} cut_run;

enum { MAX_CANDIDATES = 4096 };

static void cut_usage(FILE *f)
{
    fprintf(f, "usage: fastrl cut CHECKPOINT [--latency-us X] [--batch B] [--out FILE]\n"
               "       [--list] [--arch W1,W2,...] [--episodes N] [--deterministic]\n"
               "       [--latency-model FILE] [--fit-latency TIMES] [--seed S]\n"
               "       [--search exhaustive|evolution]\n");
}

static int usage_fail(void)
{
    cut_usage(stderr);
    return 2;
}

/* --search's value: 0, or 2 after saying why. */
static int parse_search(const char *w, cut_opts *o)
{
    if (strcmp(w, "exhaustive") && strcmp(w, "evolution")) {
        fprintf(stderr, "fastrl cut: --search takes exhaustive or evolution, not '%s'\n", w);
        return usage_fail();
    }
    o->evolution = !strcmp(w, "evolution");
    return 0;
}

/* Option a with its value v: 0, 2 after saying why v is refused, -1 when a is not one. */
static int parse_value(const char *a, const char *v, cut_opts *o)
{
    const char *const texts[] = {"--out", "--arch", "--latency-model", "--fit-latency"};
    const char **dst[] = {&o->out, &o->arch, &o->model_path, &o->probe_path};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        if (!strcmp(a, texts[k])) {
            *dst[k] = v; /* --arch's list is read whole by check_cut_args */
            return k == 1 ? 0 : cli_path_value("cut", a, "FILE", v);
        }
    int64_t n = 0;
    int rc = -1;
    if (!strcmp(a, "--latency-us"))
        rc = cli_parse_real("cut", a, v, 0, HUGE_VAL, &o->budget_us);
    else if (!strcmp(a, "--batch") && /* a usage error, not one found after loading */
             (rc = cli_parse_int("cut", a, v, 1, FRL_LATENCY_MAX_BATCH, &n)) == 0)
        o->batch = (int32_t)n;
    else if (!strcmp(a, "--episodes") &&
             (rc = cli_parse_int("cut", a, v, 1, INT32_MAX, &n)) == 0)
        o->episodes = (int32_t)n;
    else if (!strcmp(a, "--seed") && (rc = cli_parse_int("cut", a, v, 0, INT64_MAX, &n)) == 0)
        o->seed = (uint64_t)n;
    else if (!strcmp(a, "--search"))
        rc = parse_search(v, o);
    return rc;
}

/* 1 when the latency model would be written over a file the command reads or writes. */
static int model_overwrites_input(const cut_opts *o)
{
    const char *m = o->model_path;
    return m && ((o->path && cli_same_file(m, o->path)) || (o->out && cli_same_file(m, o->out)) ||
                 (o->probe_path && cli_same_file(m, o->probe_path)));
}

/* The options agree: one thing to cut, and --fit-latency at batch 1. */
static int check_cut_args(cut_opts *o)
{
    if (o->arch && (o->list || o->budget_us >= 0)) {
        fprintf(stderr, "fastrl cut: --arch cuts the architecture it names, while --list and "
                        "--latency-us search them: give --arch alone\n");
        return usage_fail();
    }
    frl_elastic_arch a;
    char err[FRL_ERRMSG_SIZE];
    if (o->arch && frl_elastic_arch_scan(o->arch, &a, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: --arch: %s\n", err);
        return 2;
    }
    if (o->out && o->list && o->budget_us < 0) {
        fprintf(stderr, "fastrl cut: --list prints the front and cuts nothing, so --out "
                        "would write nothing: add --latency-us X to save the cut for that "
                        "budget, or give --arch W1,W2,... instead of --list\n");
        return 2;
    }
    if (o->probe_path && o->batch != 1) {
        fprintf(stderr, "fastrl cut: --fit-latency fits a model of single calls (the probe "
                        "acts on one row): leave --batch at 1\n");
        return 2;
    }
    if (o->out && o->path && cli_same_file(o->path, o->out)) {
        fprintf(stderr, "fastrl cut: --out names the checkpoint itself, which the cut "
                        "policy would replace: give another file\n");
        return 2;
    }
    if (o->out && o->probe_path && cli_same_file(o->probe_path, o->out)) {
        fprintf(stderr, "fastrl cut: --out names the --fit-latency file, which the cut "
                        "policy would replace: give another file\n");
        return 2;
    }
    if (model_overwrites_input(o)) {
        fprintf(stderr, "fastrl cut: --latency-model names the checkpoint, --out or the "
                        "--fit-latency file, which the model would replace: give another "
                        "file\n");
        return 2;
    }
    if (o->probe_path)
        o->deterministic = 1; /* an exported policy gives the mode; the host samples */
    if (o->path && !o->list && !o->arch && o->budget_us < 0)
        fprintf(stderr, "fastrl cut: say what to cut: --latency-us X, --arch W1,W2,... "
                        "or --list\n");
    if (!o->path || (!o->list && !o->arch && o->budget_us < 0))
        return usage_fail();
    return 0;
}

/* The directory path would go in ("." for a bare name, "/" for "/x"); 1 if too long. */
static int parent_dir(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= size)
        return 1;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    return 0;
}

/* 0 when path can be written: it is no directory, and the directory it would go in
 * exists and takes new files (a save renames a temporary file there). Else says why and
 * returns 1, before any policy is loaded, measured or evaluated. */
static int check_writable(const char *opt, const char *path)
{
    struct stat st;
    char dir[4096];
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "fastrl cut: %s %s is a directory: name a file in it\n", opt, path);
        return 1;
    }
    if (parent_dir(path, dir, sizeof dir)) {
        fprintf(stderr, "fastrl cut: %s %s: the path is too long\n", opt, path);
        return 1;
    }
    if (access(dir, W_OK | X_OK) == 0)
        return 0;
    int e = errno;
    fprintf(stderr, "fastrl cut: %s %s cannot be written: its directory %s %s%s%s\n", opt,
            path, dir, e == ENOENT ? "does not exist" : "is not writable (",
            e == ENOENT ? "" : strerror(e), e == ENOENT ? "" : ")");
    return 1;
}

/* The files the command will write, checked before the work that makes them. */
static int check_outputs(const cut_opts *o)
{
    int model_written = o->model_path && (o->probe_path || access(o->model_path, F_OK) != 0);
    if (o->out && check_writable("--out", o->out))
        return 1;
    return model_written ? check_writable("--latency-model", o->model_path) : 0;
}

/* 0, 2 for a usage error (said why), or -1 for --help. */
static int parse_cut_args(int argc, char **argv, cut_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = i + 1 < argc ? parse_value(a, argv[i + 1], o) : -1;
        if (rc == 0) {
            i++;
        } else if (rc > 0) {
            return rc;
        } else if (!strcmp(a, "--list")) {
            o->list = 1;
        } else if (!strcmp(a, "--deterministic")) {
            o->deterministic = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return -1;
        } else if (a[0] != '-' && !o->path) {
            o->path = a;
        } else {
            fprintf(stderr, "fastrl cut: unknown or incomplete option '%s'\n", a);
            return usage_fail();
        }
    }
    return check_cut_args(o);
}

/* ---- loading ---- */

/* The head block of an elastic checkpoint; a plain one is an error that says so. */
static int read_heads(cut_run *r, const char *path)
{
    frl_container *c;
    char err[FRL_ERRMSG_SIZE];
    frl_status st = frl_container_read(&c, path, NULL, err);
    if (st != FRL_OK)
        return cli_fail(path, st);
    const frl_section *s =
        frl_container_find(c, "elastic.heads", FRL_DTYPE_F32, (int64_t)r->e.num_heads, err);
    int rc = 0;
    if (!s) {
        fprintf(stderr, "fastrl cut: %s has no elastic policy's heads (%s)\n", path, err);
        rc = 1;
    } else {
        r->heads = malloc(sizeof(float) * (r->e.num_heads + 1));
        if (r->heads)
            memcpy(r->heads, s->data, sizeof(float) * r->e.num_heads);
        rc = r->heads ? 0 : cli_fail("cut", FRL_ERR_NOMEM);
        for (size_t i = 0; rc == 0 && i < r->e.num_heads; i++)
            if (!isfinite(r->heads[i])) { /* a diverged run's: no sub-policy to cut */
                fprintf(stderr, "fastrl cut: %s: elastic.heads holds a non-finite value\n",
                        path);
                rc = 1;
            }
    }
    frl_container_free(c);
    return rc;
}

static int load_run(cut_run *r, const char *path)
{
    if (cli_checkpoint_env(path, r->env, sizeof r->env, &r->cfg) != 0)
        return 1;
    if (!r->cfg) { /* a policy file keeps policy.* alone: no elastic.widths, no heads */
        fprintf(stderr, "fastrl cut: %s is a policy file (frl_policy_save's, Policy.save's or "
                        "fastrl cut's), not a trainer checkpoint: it keeps neither the run's "
                        "elastic.widths nor the heads of the smaller depths, so nothing can be "
                        "cut from it (a cut policy is plain already); cut the elastic run's "
                        "checkpoint.frl\n", path);
        return 1;
    }
    if (frl_cfg_list(r->cfg, FRL_KEY_ELASTIC_WIDTHS).n == 0) {
        fprintf(stderr, "fastrl cut: %s is not an elastic run's checkpoint (it was trained "
                        "without elastic.widths, so it has no sub-policies to cut; train with "
                        "--set elastic.widths=8,16,32 for one)\n", path);
        return 1;
    }
    frl_status st = frl_policy_load(&r->p, r->rt, path);
    if (st != FRL_OK)
        return cli_fail(path, st);
    char err[FRL_ERRMSG_SIZE];
    if (frl_elastic_init(&r->e, r->p, r->cfg, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s: %s\n", path, err);
        return 1;
    }
    return read_heads(r, path);
}

/* ---- the latency model ---- */

/* 1 when the model was measured with other kernels or on another CPU (said): its times
 * do not hold here, and a budget would be met or missed by chance. */
static int model_elsewhere(const cut_run *r, const char *path)
{
    char here[sizeof r->model.machine];
    frl_cpu_name(here, sizeof here);
    const char *there = r->model.machine;
    int other_kernels = strcmp(r->model.kernels, r->p->k->name) != 0;
    if (!other_kernels && (!there[0] || !strcmp(there, here)))
        return 0;
    fprintf(stderr, "fastrl cut: %s was measured %s %s%s%s, and this machine runs %s on %s: "
                    "its times do not hold here (remove it to measure again, or give "
                    "another file)\n", path, other_kernels ? "with the kernels" : "on",
            other_kernels ? (r->model.kernels[0] ? r->model.kernels : "(none named)") : there,
            other_kernels && there[0] ? " on " : "", other_kernels ? there : "",
            r->p->k->name, here);
    return 1;
}

/* path opened for reading as a regular file, or NULL with errno set (EINVAL: not a
 * regular file). A FIFO with no writer blocked fopen for good, and a directory read as
 * an empty file ("0 times do not fit a model"). */
static FILE *open_regular(const char *path, const char *mode)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), e = 0;
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL;
    FILE *f = e ? NULL : fdopen(fd, mode);
    if (!f) {
        e = e ? e : errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* open_regular's failure in words. */
static const char *open_error(int e)
{
    return e == EINVAL ? "not a regular file" : strerror(e);
}

static int foreign_model(const cut_run *r);

static int read_model(cut_run *r, const char *path, int32_t batch, int32_t deterministic)
{
    FILE *f = open_regular(path, "rb");
    if (!f && errno == ENOENT)
        return -1; /* not there yet: measured and written */
    if (!f) { /* there but unreadable: measuring again would overwrite it */
        fprintf(stderr, "fastrl cut: cannot read the latency model %s: %s\n", path,
                open_error(errno));
        return 1;
    }
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    int longer = n == sizeof text - 1 && fgetc(f) != EOF;
    fclose(f);
    text[n] = '\0';
    if (longer || memchr(text, '\0', n)) { /* a NUL would end the text early, unsaid */
        fprintf(stderr, "fastrl cut: %s is %s: not a latency model this command wrote\n",
                path, longer ? "longer than any latency model (64 KiB)" : "binary (a NUL byte)");
        return 1;
    }
    char err[FRL_ERRMSG_SIZE];
    if (frl_latency_from_text(&r->model, text, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s: %s\n", path, err);
        return 1;
    }
    if (!foreign_model(r) && model_elsewhere(r, path))
        return 1;
    if (r->model.batch != batch || r->model.deterministic != deterministic) {
        fprintf(stderr, "fastrl cut: %s was measured at batch %d%s, not %d%s (give another "
                        "file or remove it to measure again)\n", path, (int)r->model.batch,
                r->model.deterministic ? " acting deterministically" : "", (int)batch,
                deterministic ? " acting deterministically" : "");
        return 1;
    }
    return 0;
}

/* Atomically, as checkpoints are written: a failed or interrupted write leaves the model
 * that was there (a truncated file once took its place, or the old one was emptied). */
static int write_model(const cut_run *r, const char *path)
{
    char text[1 << 16], err[FRL_ERRMSG_SIZE];
    if (frl_latency_to_text(&r->model, text, sizeof text) != 0) {
        fprintf(stderr, "fastrl cut: the latency model is too long to write to %s\n", path);
        return 1;
    }
    if (frl_file_replace(&r->p->rt->alloc, path, text, strlen(text), "fastrl cut: latency model",
                         err) != FRL_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}

static int same_arch(const frl_elastic_arch *a, const frl_elastic_arch *b)
{
    if (a->depth != b->depth)
        return 0;
    for (int32_t i = 0; i < a->depth; i++)
        if (a->width[i] != b->width[i])
            return 0;
    return 1;
}

enum { MAX_PROBES = 64 };

/* The probe times read so far: architectures, us per call, and the line of each. */
typedef struct probes {
    frl_elastic_arch arch[MAX_PROBES];
    double us[MAX_PROBES];
    int32_t line[MAX_PROBES], n;
} probes;

/* One line "WIDTHS NS" into w and *ns: 0, or 1 when the line holds anything else (a
 * third field, a unit after the number: a typo would otherwise fit a wrong model). */
static int probe_fields(const char *line, char *w, double *ns)
{
    int end = -1;
    if (sscanf(line, "%255s %lf %n", w, ns, &end) != 2 || end < 0)
        return 1;
    return line[end] != '\0' || !isfinite(*ns) || !(*ns > 0);
}

/* The entry of line line_no into pr: 0, or 1 after saying why it is refused. */
static int probe_entry(cut_run *r, const char *path, int32_t line_no, const char *line,
                       probes *pr)
{
    char w[256], err[FRL_ERRMSG_SIZE];
    double ns;
    frl_elastic_arch *a = &pr->arch[pr->n];
    if (!strchr(line, '\n') && strlen(line) == 255) {
        fprintf(stderr, "fastrl cut: %s:%d: a line of more than 254 characters\n", path,
                (int)line_no);
        return 1;
    }
    if (pr->n == MAX_PROBES || probe_fields(line, w, &ns)) {
        fprintf(stderr, "fastrl cut: %s:%d: write \"WIDTHS NS\" and nothing more (at most %d "
                        "lines), e.g. \"16,16 850\"\n", path, (int)line_no, MAX_PROBES);
        return 1;
    }
    if (frl_elastic_arch_parse(&r->e, w, a, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s:%d: %s\n", path, (int)line_no, err);
        return 1;
    }
    for (int32_t i = 0; i < pr->n; i++)
        if (same_arch(&pr->arch[i], a)) {
            /* a repeat would count twice in the fit and towards its 3 architectures */
            fprintf(stderr, "fastrl cut: %s:%d: widths %s were given on line %d already: "
                            "give each architecture once\n", path, (int)line_no, w,
                    (int)pr->line[i]);
            return 1;
        }
    pr->us[pr->n] = ns * 1e-3;
    pr->line[pr->n++] = line_no;
    return 0;
}

/* Reads past the rest of the line fgets stopped inside. */
static void skip_line(FILE *f)
{
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n')
        ;
}

/* Lines "WIDTHS NS" (an architecture and its probe's ns per call on the target); '#'
 * (after blanks) starts a comment line, of any length. */
static int fit_probes(cut_run *r, const char *path)
{
    FILE *f = open_regular(path, "r");
    if (!f) {
        fprintf(stderr, "fastrl cut: cannot read %s: %s\n", path, open_error(errno));
        return 1;
    }
    probes pr = {.n = 0};
    int32_t line_no = 0;
    char line[256], err[FRL_ERRMSG_SIZE];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        line_no++;
        const char *s = line + strspn(line, " \t");
        if (*s != '#' && s[strspn(s, " \t\r\n")] != '\0')
            rc = probe_entry(r, path, line_no, line, &pr);
        else if (!strchr(line, '\n'))
            skip_line(f); /* the rest of a long comment, not a line of its own */
    }
    fclose(f);
    if (rc == 0 &&
        frl_latency_fit_probes(&r->model, &r->e, pr.arch, pr.us, pr.n, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s: %s\n", path, err);
        rc = 1;
    }
    return rc;
}

/* 1 when the model describes another machine: nothing measured here can check it. */
static int foreign_model(const cut_run *r)
{
    return !strcmp(r->model.kernels, "probe");
}

static int latency_model(cut_run *r, const cut_opts *o)
{
    if (o->probe_path) {
        int rc = fit_probes(r, o->probe_path);
        return rc == 0 && o->model_path ? write_model(r, o->model_path) : rc;
    }
    int rc = o->model_path ? read_model(r, o->model_path, o->batch, o->deterministic) : -1;
    if (rc >= 0)
        return rc;
    char err[FRL_ERRMSG_SIZE];
    frl_status st = frl_latency_fit(&r->model, &r->e, r->p, r->heads, o->batch, o->deterministic, err);
    if (st != FRL_OK) {
        fprintf(stderr, "fastrl cut: measuring latency: %s\n", err);
        return 1;
    }
    return o->model_path ? write_model(r, o->model_path) : 0;
}

/* ---- scoring ---- */

static int evaluate_arch(cut_run *r, const cut_opts *o, candidate *c)
{
    frl_policy *sub;
    char err[FRL_ERRMSG_SIZE];
    frl_status st = frl_elastic_cut(&r->e, r->p, r->heads, &c->arch, &sub, err);
    if (st != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s\n", err);
        return 1;
    }
    frl_vec_env *v;
    int32_t envs = o->episodes < 16 ? o->episodes : 16;
    if ((st = frl_vec_env_create(&v, r->rt, r->env, envs, r->cfg)) != FRL_OK) {
        frl_policy_destroy(sub);
        return cli_fail(r->env, st);
    }
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = o->episodes;
    a.deterministic = o->deterministic;
    a.seed = o->seed;
    st = frl_policy_evaluate(sub, v, &a, &c->ret);
    frl_vec_env_destroy(v);
    frl_policy_destroy(sub);
    return st == FRL_OK ? 0 : cli_fail("evaluating a sub-policy", st);
}

static int64_t actor_params(const frl_elastic *e, const frl_elastic_arch *a)
{
    frl_mlp actor, critic;
    frl_elastic_sub_layout(e, a, &actor, &critic);
    return (int64_t)actor.num_params;
}

/* A candidate's latency and size; 1 if the model lacks one of its layers (said). */
static int describe(cut_run *r, candidate *c)
{
    c->predicted_us = frl_latency_predict(&r->model, &r->e, &c->arch);
    c->params = actor_params(&r->e, &c->arch);
    if (c->predicted_us >= 0)
        return 0;
    if (c->arch.depth > r->model.depth)
        fprintf(stderr, "fastrl cut: the latency model has intercepts for depths 1 to %d "
                        "and this policy's sub-policies go to depth %d: it lacks the "
                        "intercept_us line of depth %d (was it measured for another?)\n",
                (int)r->model.depth, (int)r->e.depth, (int)c->arch.depth);
    else
        fprintf(stderr, "fastrl cut: the latency model lacks a layer of this policy (was it "
                        "measured for another, or its file cut short at a line's end?)\n");
    return 1;
}

/* Every architecture whose predicted latency is within limit_us (< 0: all), scored. */
static int score_exhaustive(cut_run *r, const cut_opts *o, double limit_us)
{
    int64_t count = frl_elastic_count(&r->e);
    r->c = calloc((size_t)count, sizeof *r->c);
    if (!r->c)
        return cli_fail("cut", FRL_ERR_NOMEM);
    for (int64_t i = 0; i < count; i++) {
        candidate *c = &r->c[r->n];
        frl_elastic_nth(&r->e, i, &c->arch);
        if (describe(r, c) != 0)
            return 1;
        if (limit_us >= 0 && c->predicted_us > limit_us)
            continue;
        if (evaluate_arch(r, o, c) != 0)
            return 1;
        r->n++;
    }
    return 0;
}

/* ---- evolutionary search (once-for-all's, for spaces too large to evaluate) ---- */

enum { POPULATION = 32, GENERATIONS = 10, PARENTS = 8, TRIES = 1000 };

static int32_t pick(frl_rng *g, int32_t n)
{
    return (int32_t)(frl_rng_uniform(g) * (double)n);
}

static int32_t random_width(const frl_elastic *e, int32_t layer, frl_rng *g)
{
    int32_t c[FRL_ELASTIC_MAX_CHOICES + 1];
    return c[pick(g, frl_elastic_layer_choices(e, layer, c))];
}

/* kind 0: uniform; 1: a mutation of parent a (each gene redrawn with chance 0.1);
 * 2: a crossover of a and b (each layer's width from either), then mutated. */
static void breed(const frl_elastic *e, frl_rng *g, int kind, const frl_elastic_arch *a,
                  const frl_elastic_arch *b, frl_elastic_arch *out)
{
    frl_elastic_full(e, out);
    out->depth = kind == 0 || frl_rng_uniform(g) < 0.1 ? 1 + pick(g, e->depth)
                                                       : (kind == 2 && pick(g, 2) ? b : a)->depth;
    for (int32_t i = 0; i < out->depth; i++) {
        const frl_elastic_arch *from = kind == 2 && pick(g, 2) ? b : a;
        int fresh = kind == 0 || i >= from->depth || frl_rng_uniform(g) < 0.1;
        out->width[i] = fresh ? random_width(e, i, g) : from->width[i];
    }
}

/* The candidate for arch, evaluated once: an earlier one when it was seen. */
static candidate *evaluated(cut_run *r, const cut_opts *o, const frl_elastic_arch *arch,
                            int *rc)
{
    for (int64_t i = 0; i < r->n; i++)
        if (same_arch(&r->c[i].arch, arch))
            return &r->c[i];
    candidate *c = &r->c[r->n];
    c->arch = *arch;
    if ((*rc = describe(r, c)) != 0 || (*rc = evaluate_arch(r, o, c)) != 0)
        return NULL;
    r->n++;
    return c;
}

static int by_return(const void *a, const void *b);
static double fastest_arch(cut_run *r, frl_elastic_arch *best);

/* A population of POPULATION architectures within the limit, GENERATIONS times: the
 * PARENTS best kept, the rest half mutations and half crossovers of them. Every
 * candidate evaluated stays in r->c for the front and the choice. */
static int score_evolution(cut_run *r, const cut_opts *o, double limit_us)
{
    r->c = calloc(POPULATION * (GENERATIONS + 1), sizeof *r->c);
    candidate pop[POPULATION];
    if (!r->c)
        return cli_fail("cut", FRL_ERR_NOMEM);
    frl_rng g = frl_rng_stream(o->seed, 0x6576);
    int rc = 0;
    for (int32_t gen = 0; gen <= GENERATIONS && rc == 0; gen++) {
        for (int32_t k = gen ? PARENTS : 0; k < POPULATION && rc == 0; k++) {
            frl_elastic_arch a;
            int fits = 0;
            for (int32_t t = 0; t < TRIES && !fits; t++) {
                int kind = gen == 0 ? 0 : 1 + (k % 2);
                breed(&r->e, &g, kind, &pop[pick(&g, PARENTS)].arch,
                      &pop[pick(&g, PARENTS)].arch, &a);
                fits = limit_us < 0 || frl_latency_predict(&r->model, &r->e, &a) <= limit_us;
            }
            if (!fits && r->n == 0) /* rare fits the draws missed: the fastest may fit */
                fits = fastest_arch(r, &a) <= limit_us;
            if (!fits)
                return 0; /* nothing more within the limit: what was found stands */
            candidate *c = evaluated(r, o, &a, &rc);
            if (c)
                pop[k] = *c;
        }
        qsort(pop, POPULATION, sizeof pop[0], by_return);
    }
    return rc;
}

static int score_all(cut_run *r, const cut_opts *o, double limit_us)
{
    int64_t count = frl_elastic_count(&r->e);
    if (o->evolution > 0 || count > MAX_CANDIDATES)
        return score_evolution(r, o, limit_us);
    return score_exhaustive(r, o, limit_us);
}

/* Fastest first; among equal latencies the best return first (by_return's order), so
 * the front lists only it: the others are as fast and return less. */
static int by_latency(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->predicted_us != y->predicted_us)
        return x->predicted_us < y->predicted_us ? -1 : 1;
    return by_return(a, b);
}

static void print_row(const candidate *c, const char *extra)
{
    char w[96];
    frl_elastic_arch_text(&c->arch, w, sizeof w);
    printf("%-16s %12.3f %10lld %12.3f%s\n", w, c->predicted_us, (long long)c->params, c->ret,
           extra);
}

/* The Pareto front: by latency, each member returning more than every faster one. */
static void print_front(cut_run *r, const cut_opts *o)
{
    qsort(r->c, (size_t)r->n, sizeof *r->c, by_latency);
    printf("# Pareto front at batch %d (%s kernels; return: mean of %d episodes)\n",
           (int)o->batch, r->model.kernels, (int)o->episodes);
    printf("%-16s %12s %10s %12s\n", "widths", "latency_us", "params", "return");
    double best = -1e300;
    for (int64_t i = 0; i < r->n; i++)
        if (r->c[i].ret > best) {
            best = r->c[i].ret;
            print_row(&r->c[i], "");
        }
}

/* ---- cutting ---- */

static int save_cut(cut_run *r, const cut_opts *o, const frl_elastic_arch *a)
{
    frl_policy *sub;
    char err[FRL_ERRMSG_SIZE];
    frl_status st = frl_elastic_cut(&r->e, r->p, r->heads, a, &sub, err);
    if (st != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s\n", err);
        return 1;
    }
    st = frl_policy_save(sub, o->out);
    frl_policy_destroy(sub);
    if (st != FRL_OK)
        return cli_fail(o->out, st);
    printf("saved: %s\n", o->out);
    return 0;
}

static double measure(cut_run *r, const frl_elastic_arch *a, const cut_opts *o)
{
    frl_policy *sub;
    char err[FRL_ERRMSG_SIZE];
    if (frl_elastic_cut(&r->e, r->p, r->heads, a, &sub, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: cutting a sub-policy: %s\n", err);
        return -1;
    }
    double us = frl_latency_act_us(sub, o->batch, o->deterministic, 201, err);
    frl_policy_destroy(sub);
    if (us < 0)
        fprintf(stderr, "fastrl cut: measuring a sub-policy: %s\n", err);
    return us;
}

static void report(cut_run *r, const cut_opts *o, const candidate *c, double measured)
{
    char w[96], m[64];
    frl_elastic_arch_text(&c->arch, w, sizeof w);
    if (foreign_model(r))
        snprintf(m, sizeof m, "n/a (the model is of the probed target)");
    else
        snprintf(m, sizeof m, "%.3f", measured);
    printf("widths: %s\ndepth: %d\npredicted_us: %.3f\nmeasured_us: %s\nbatch: %d\n"
           "params: %lld\nreturn: %.4f\nepisodes: %d\n", w, (int)c->arch.depth,
           c->predicted_us, m, (int)o->batch, (long long)c->params, c->ret,
           (int)o->episodes);
}

/* The sub-policy predicted fastest and its time: for the error of a budget none meets,
 * and for an evolution whose draws found none within the budget. */
static double fastest_arch(cut_run *r, frl_elastic_arch *best)
{
    return frl_latency_fastest(&r->model, &r->e, best);
}

static void no_fit(cut_run *r, const cut_opts *o)
{
    frl_elastic_arch best;
    double best_us = fastest_arch(r, &best);
    char w[96];
    frl_elastic_arch_text(&best, w, sizeof w);
    fprintf(stderr, "fastrl cut: no sub-policy meets %.3f us at batch %d: the fastest, widths "
                    "%s, is predicted at %.3f us\n", o->budget_us, (int)o->batch, w, best_us);
}

/* A return as ranked: a NaN one (episodes that diverged) below every other, so the
 * order stays total and qsort cannot put it first. */
static double rank_return(const candidate *c)
{
    return isnan(c->ret) ? -HUGE_VAL : c->ret;
}

/* Best return first; among equal returns the faster, then the smaller (it dominates:
 * the front holds it and not the others), then by widths, so the choice does not rest
 * on qsort's order of equals. */
static int by_return(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    double rx = rank_return(x), ry = rank_return(y);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    if (x->predicted_us != y->predicted_us)
        return x->predicted_us < y->predicted_us ? -1 : 1;
    if (x->params != y->params)
        return x->params < y->params ? -1 : 1;
    if (x->arch.depth != y->arch.depth)
        return x->arch.depth < y->arch.depth ? -1 : 1;
    for (int32_t i = 0; i < x->arch.depth; i++)
        if (x->arch.width[i] != y->arch.width[i])
            return x->arch.width[i] < y->arch.width[i] ? -1 : 1;
    return 0;
}

/* The best return predicted within the budget whose measured latency meets it too. */
static int cut_for_budget(cut_run *r, const cut_opts *o)
{
    if (score_all(r, o, o->budget_us) != 0)
        return 1;
    if (r->n == 0) {
        no_fit(r, o);
        return 1;
    }
    qsort(r->c, (size_t)r->n, sizeof *r->c, by_return);
    for (int64_t i = 0; i < r->n; i++) {
        double us = foreign_model(r) ? 0 : measure(r, &r->c[i].arch, o);
        if (us >= 0 && us <= o->budget_us) {
            report(r, o, &r->c[i], us);
            return o->out ? save_cut(r, o, &r->c[i].arch) : 0;
        }
    }
    fprintf(stderr, "fastrl cut: %lld sub-policies are predicted within %.3f us, and none "
                    "measured within it here (a noisy machine, or a model measured elsewhere: "
                    "measure it again)\n", (long long)r->n, o->budget_us);
    return 1;
}

static int cut_arch(cut_run *r, const cut_opts *o)
{
    candidate c = {0};
    char err[FRL_ERRMSG_SIZE];
    if (frl_elastic_arch_parse(&r->e, o->arch, &c.arch, err) != FRL_OK) {
        fprintf(stderr, "fastrl cut: %s\n", err);
        return 1;
    }
    if (describe(r, &c) != 0 || evaluate_arch(r, o, &c) != 0)
        return 1;
    double us = foreign_model(r) ? 0 : measure(r, &c.arch, o);
    if (us < 0) /* said by measure; a -1 printed as a time would read as one */
        return 1;
    report(r, o, &c, us);
    return o->out ? save_cut(r, o, &c.arch) : 0;
}

/* An exhaustive search asked for where it cannot run is refused (said), before the
 * latency model is measured: running the evolution instead would go without a word. */
static int check_search(const cut_run *r, const cut_opts *o)
{
    int64_t count = frl_elastic_count(&r->e);
    if (o->evolution != 0 || o->arch || count <= MAX_CANDIDATES)
        return 0;
    fprintf(stderr, "fastrl cut: --search exhaustive: %s has %lld architectures, more than "
                    "the %d an exhaustive search evaluates: give --search evolution, or "
                    "leave --search out\n", o->path, (long long)count, (int)MAX_CANDIDATES);
    return 1;
}

static int run_cut(cut_run *r, const cut_opts *o)
{
    int rc = load_run(r, o->path);
    if (rc == 0)
        rc = check_search(r, o);
    if (rc == 0)
        rc = latency_model(r, o);
    if (rc != 0)
        return rc;
    if (o->arch)
        return cut_arch(r, o);
    if (o->list) {
        rc = score_all(r, o, -1);
        if (rc == 0)
            print_front(r, o);
        if (rc != 0 || o->budget_us < 0)
            return rc;
        free(r->c);
        r->c = NULL;
        r->n = 0;
    }
    return cut_for_budget(r, o);
}

int cli_cut(int argc, char **argv)
{
    cut_opts o = {.budget_us = -1, .batch = 1, .episodes = 20, .seed = 12345, .evolution = -1};
    int rc = parse_cut_args(argc, argv, &o);
    if (rc < 0)
        cut_usage(stdout);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (check_outputs(&o) != 0)
        return 1;
    cut_run r = {0};
    frl_status st = frl_runtime_create(&r.rt, NULL, NULL, NULL);
    if (st != FRL_OK)
        return cli_fail("runtime", st);
    rc = run_cut(&r, &o);
    free(r.c);
    free(r.heads);
    frl_policy_destroy(r.p);
    frl_config_destroy(r.cfg);
    frl_runtime_destroy(r.rt);
    return rc;
}
