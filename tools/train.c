/* `fastrl train` (`fastrl eval` is tools/eval.c). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/error.h"
#include "io/container.h"
#include "trainer/trainer.h"

typedef struct train_opts {
    const char *env, *out, *resume;
    int64_t steps;
    int quiet;
    int verbose;            /* --verbose: the library's INFO lines too */
    int overwrite;          /* --overwrite: --out may replace the run it holds */
    int64_t eval_every;     /* greedy evaluations every this many env steps (0: none) */
    int32_t eval_episodes;
    int64_t eval_max_steps; /* an evaluation's env steps before it gives up (0: none) */
    double eval_target;     /* stop at the first evaluation reaching it (NaN: never) */
    double max_seconds;     /* stop after this much wall time, from the start (0: never) */
    const char *eval_option; /* --eval-episodes, --eval-target or --eval-max-steps, given:
                              * need --eval-every */
    int follower;           /* a rank other than 0 under mpirun or srun: prints nothing */
} train_opts;

/* The process's rank as MPI launchers tell it (OpenMPI, MPICH and Slurm), -1 when none
 * does: a distributed run (dist.mode) prints its progress once, from rank 0. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0])
            return atoi(v);
    }
    return -1;
}

/* The settings the run saved in dir records ("trainer.settings"), or NULL when they
 * cannot be read (the load then says why). */
static frl_config *saved_settings(const char *dir)
{
    char path[4096], err[FRL_ERRMSG_SIZE], *text = NULL;
    frl_container *c;
    frl_config *saved = NULL;
    snprintf(path, sizeof path, "%s/checkpoint.frl", dir);
    if (frl_container_read(&c, path, NULL, err) != FRL_OK)
        return NULL;
    const frl_section *s = frl_container_find(c, "trainer.settings", FRL_DTYPE_TEXT, -1, err);
    if (s && (text = malloc(s->count + 1)) && frl_config_create(&saved, NULL) == FRL_OK) {
        memcpy(text, s->data, s->count);
        text[s->count] = '\0';
        if (frl_config_parse(saved, text) != FRL_OK) {
            frl_config_destroy(saved);
            saved = NULL;
        }
    }
    free(text);
    frl_container_free(c);
    return saved;
}

/* 1 when the run is distributed: dist.mode other than none, the command line's, else
 * the resumed run's saved one (the trainer resolves it alike). A launcher's rank means
 * nothing without it: srun and mpirun also start single-process runs, each its own. */
static int distributed(const char *resume, const frl_config *cfg)
{
    char mode[16] = "none";
    frl_config *saved = NULL;
    if (frl_config_is_set(cfg, "dist.mode"))
        frl_config_get_text(cfg, "dist.mode", mode, sizeof mode);
    else if (resume && (saved = saved_settings(resume)))
        frl_config_get_text(saved, "dist.mode", mode, sizeof mode);
    frl_config_destroy(saved);
    return strcmp(mode, "none") != 0;
}

static frl_trainer *volatile g_trainer;
static volatile sig_atomic_t g_sigint; /* the stopping signal's number, or 0 */

/* Ctrl-C (SIGINT), or SIGTERM (a batch system's or a container's stop, a CI timeout),
 * asks the trainer to stop at the end of its update, so the run is saved; a second one
 * kills. */
static void on_sigint(int sig)
{
    g_sigint = sig;
    signal(sig, SIG_DFL);
    if (g_trainer)
        frl_trainer_request_stop(g_trainer);
}

/* SIGINT and SIGTERM only mark the run interrupted from before its trainer is made
 * until its checkpoint is saved: restored to their defaults right after training, they
 * killed a run in its final save, and a finished run lost its checkpoint. */
static void catch_stop_signals(int on)
{
    signal(SIGINT, on ? on_sigint : SIG_DFL);
    signal(SIGTERM, on ? on_sigint : SIG_DFL);
}

static volatile sig_atomic_t g_alarm;

/* --max-seconds inside a long update (an ES or GA generation, a first rollout of slow
 * envs): the stop request then acts at the trainer's next check, not only between
 * updates, where on_metrics checks the time. */
static void on_alarm(int sig)
{
    (void)sig;
    g_alarm = 1;
    if (g_trainer)
        frl_trainer_request_stop(g_trainer);
}

/* The alarm for what is left of --max-seconds (whole seconds, at least one). */
static void arm_alarm(double max_seconds)
{
    double left = ceil(max_seconds - (cli_now() - cli_start));
    if (max_seconds <= 0 || left > 1e9)
        return;
    signal(SIGALRM, on_alarm);
    alarm(left >= 1 ? (unsigned)left : 1);
}

static int is_tty;

/* Periodic greedy evaluation on an env of its own (--eval-every): run between updates
 * from the metrics callback, on the thread that trains, so the policy is not acting
 * elsewhere. The evaluation's time counts in the run's wall time, as a peer's
 * evaluation callback does. */
typedef struct evaluator {
    frl_trainer *t;
    frl_vec_env *venv;
    int64_t every, next;
    int32_t episodes;
    int64_t max_steps;
    double target;
    int reached;    /* an evaluation reached the target: training stops */
    int silent;     /* a follower rank: evaluates (every rank stops alike), prints nothing */
    int64_t count, last_steps;
    double last_mean;
    frl_status st;  /* the first evaluation's failure */
    char why[FRL_ERRMSG_SIZE]; /* its message: the trainer's "the metrics callback
                                * returned 1" replaces the thread's last error */
} evaluator;

typedef struct progress {
    int64_t total;
    double last_print;
    int async;      /* sampler.mode=async: show the policy lag */
    int quiet;
    evaluator *ev;  /* NULL without --eval-every */
    frl_trainer *t;
    double max_seconds;
    int timed_out;  /* --max-seconds stopped the run */
    int64_t printed_update; /* the update of the last line written, -1 before any */
} progress;

static void format_time(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7) {
        snprintf(buf, size, "--:--");
        return;
    }
    int t = (int)(s + 0.5);
    snprintf(buf, size, "%d:%02d", t / 60, t % 60);
}

static void print_progress(const progress *p, const frl_metrics *m, int final)
{
    double frac = p->total > 0 ? (double)m->env_steps / (double)p->total : 1;
    frac = frac > 1 ? 1 : frac;
    char bar[21], el[32], eta[32];
    int fill = (int)(frac * 20);
    for (int i = 0; i < 20; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[20] = '\0';
    format_time(cli_now() - cli_start, el, sizeof el);
    /* the last update may pass --steps (a whole rollout): nothing is left, not -1 s */
    int64_t left = p->total > m->env_steps ? p->total - m->env_steps : 0;
    format_time(m->steps_per_second > 0 ? (double)left / m->steps_per_second : -1, eta,
                sizeof eta);
    char lag[64] = "";
    if (p->async)
        snprintf(lag, sizeof lag, "  lag %.1f (max %.0f)", m->policy_lag_mean, m->policy_lag_max);
    if (p->async && m->slots_dropped)
        snprintf(lag + strlen(lag), sizeof lag - strlen(lag), " %lld dropped",
                 (long long)m->slots_dropped);
    /* A run stopped short (--max-seconds) still has its ETA; the final line on a
     * terminal clears what a longer running line left to its right, then ends. */
    int done = final && m->env_steps >= p->total;
    fprintf(stderr, "%s[%s] %3.0f%% %lld steps  %.0f steps/s  return %.1f%s  %s elapsed  "
                    "ETA %s%s%s",
            is_tty ? "\r" : "", bar, 100 * frac, (long long)m->env_steps, m->steps_per_second,
            m->mean_return, lag, el, done ? "0:00" : eta, is_tty ? "\033[K" : "",
            final || !is_tty ? "\n" : "");
    fflush(stderr);
}

/* Evaluate when the run has passed the next multiple of --eval-every steps; returns
 * nonzero to stop training (the target reached, or the evaluation failed). */
static int maybe_evaluate(evaluator *e, const frl_metrics *m)
{
    if (m->env_steps < e->next)
        return 0;
    /* The seed follows the schedule's mark, so a resumed run evaluates as an
     * uninterrupted one does. */
    uint64_t mark = (uint64_t)(e->next / e->every);
    while (e->next <= m->env_steps)
        e->next += e->every;
    frl_eval_args a;
    frl_eval_args_init(&a);
    a.episodes = e->episodes;
    a.max_steps = e->max_steps;
    a.seed = (uint64_t)1000003 * mark;
    e->count++;
    double mean;
    e->st = frl_policy_evaluate(frl_trainer_policy(e->t), e->venv, &a, &mean);
    if (e->st != FRL_OK) {
        /* FRL_ERR_RANGE here is the step limit (the options are checked): name the
         * option that sets it, where the library names its field. */
        snprintf(e->why, sizeof e->why, "%s%s", frl_last_error(),
                 e->st == FRL_ERR_RANGE ? " [fastrl train: --eval-max-steps M sets it]" : "");
        return 1;
    }
    e->last_steps = m->env_steps;
    e->last_mean = mean;
    if (!e->silent) {
        printf("eval: env_steps=%lld mean_return=%.4f seconds=%.3f\n",
               (long long)m->env_steps, mean, cli_now() - cli_start);
        fflush(stdout);
    }
    e->reached = !isnan(e->target) && mean >= e->target;
    return e->reached;
}

static int on_metrics(void *user, const frl_metrics *m)
{
    progress *p = user;
    double now = cli_now();
    if (p->ev && maybe_evaluate(p->ev, m))
        return 1;
    if (p->max_seconds > 0 && now - cli_start >= p->max_seconds && !p->timed_out) {
        p->timed_out = 1; /* stop as Ctrl-C does: at the end of this update, saved */
        frl_trainer_request_stop(p->t);
    }
    if (!p->quiet && now - p->last_print >= (is_tty ? 0.1 : 2.0)) {
        p->last_print = now;
        p->printed_update = m->update;
        print_progress(p, m, 0);
    }
    return 0;
}

/* A number option's value: 0, 2 after saying why it is refused, -1 when a is not one. */
static int train_number(const char *a, const char *v, train_opts *o)
{
    int64_t n = 0;
    int rc = -1;
    if (!strcmp(a, "--steps")) {
        rc = cli_parse_int("train", a, v, 1, INT64_MAX, &o->steps);
    } else if (!strcmp(a, "--eval-every")) {
        rc = cli_parse_int("train", a, v, 1, INT64_MAX, &o->eval_every);
    } else if (!strcmp(a, "--eval-episodes")) {
        rc = cli_parse_int("train", a, v, 1, INT32_MAX, &n);
        o->eval_episodes = (int32_t)n;
        o->eval_option = a;
    } else if (!strcmp(a, "--eval-max-steps")) {
        rc = cli_parse_int("train", a, v, 0, INT64_MAX, &o->eval_max_steps);
        o->eval_option = a;
    } else if (!strcmp(a, "--eval-target")) {
        rc = cli_parse_real("train", a, v, -HUGE_VAL, HUGE_VAL, &o->eval_target);
        o->eval_option = a;
    } else if (!strcmp(a, "--max-seconds")) {
        rc = cli_parse_real("train", a, v, 0, HUGE_VAL, &o->max_seconds);
    }
    return rc;
}

/* An option with a value (the config checks --seed, --threads and --set): 0, 2 after
 * saying why the value is refused, -1 when a is not one. */
static int train_value(const char *a, const char *v, train_opts *o, frl_config *cfg)
{
    frl_status st;
    if (!strcmp(a, "--out") || !strcmp(a, "--resume")) {
        *(!strcmp(a, "--out") ? &o->out : &o->resume) = v;
        return cli_path_value("train", a, "DIR", v);
    }
    if (!strcmp(a, "--seed"))
        st = frl_config_set(cfg, "runtime.seed", v);
    else if (!strcmp(a, "--threads"))
        st = frl_config_set(cfg, "runtime.threads", v);
    else if (!strcmp(a, "--set"))
        return cli_set("train", cfg, v);
    else
        return train_number(a, v, o);
    return st == FRL_OK ? 0 : cli_bad_option(a, st);
}

/* What the options ask for is whole: evaluation settings with --eval-every, an env or
 * a run to resume. */
static int check_train_args(train_opts *o, const frl_config *cfg)
{
    if (o->eval_option && !o->eval_every) {
        fprintf(stderr, "fastrl train: %s needs --eval-every N (a greedy evaluation every N "
                        "env steps)\n", o->eval_option);
        return 2;
    }
    o->follower = launcher_rank() > 0 && distributed(o->resume, cfg);
    o->quiet |= o->follower;
    o->verbose &= !o->follower;
    if (o->overwrite && !o->out) {
        fprintf(stderr, "fastrl train: --overwrite goes with --out DIR (the run it replaces)\n");
        return 2;
    }
    if (!o->env && !o->resume) {
        fprintf(stderr, "fastrl train: name an environment (fastrl envs lists them) or "
                        "--resume DIR\n");
        return 2;
    }
    return 0;
}

/* Every option is checked here, before anything is created or written: 0, 2 for a usage
 * error (said why), or -1 for --help. */
static int parse_train_args(int argc, char **argv, train_opts *o, frl_config *cfg)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = i + 1 < argc ? train_value(a, argv[i + 1], o, cfg) : -1;
        if (rc == 0) {
            i++;
        } else if (rc > 0) {
            return rc;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(a, "--overwrite")) {
            o->overwrite = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return -1;
        } else if (a[0] != '-' && !o->env) {
            o->env = a;
        } else {
            fprintf(stderr, "fastrl train: unknown or incomplete option '%s'\n", a);
            return 2;
        }
    }
    return check_train_args(o, cfg);
}

/* 0 when path is a directory now (made here, or there already), else an errno. */
static int make_one(const char *path)
{
    struct stat st;
    if (mkdir(path, 0777) == 0)
        return 0;
    if (errno != EEXIST)
        return errno;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* dir and the directories above it that do not exist yet, as mkdir -p: --out runs/x
 * needs no runs/ made first. */
static int make_dir(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n >= sizeof path) {
        fprintf(stderr, "fastrl train: cannot create %s: the path is too long\n", dir);
        return 1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0'; /* each prefix ending before a '/', then the whole */
        int e = make_one(path);
        if (e) {
            fprintf(stderr, "fastrl train: cannot create %s: %s: %s\n", dir, path,
                    strerror(e));
            return 1;
        }
        path[i] = dir[i];
    }
    return 0;
}

/* The environment of the run saved at path into env ("" for a host env's run); 0 when
 * the file cannot say (unreadable, no name), and then frl_trainer_load reports why. */
static int saved_env(const char *path, char *env, size_t size)
{
    frl_container *c;
    char err[FRL_ERRMSG_SIZE];
    if (frl_container_read(&c, path, NULL, err) != FRL_OK)
        return 0;
    const frl_section *s = frl_container_find(c, "trainer.env", FRL_DTYPE_TEXT, -1, err);
    int found = s && s->count < size;
    if (found) {
        memcpy(env, s->data, s->count);
        env[s->count] = '\0';
    }
    frl_container_free(c);
    return found;
}

/* `train ENV --resume DIR`: the checkpoint holds its own environment, so an ENV that
 * names another is a mistake (the run would continue on the saved one), refused before
 * anything in DIR changes. */
static int check_resume_env(const train_opts *o)
{
    char path[4096], env[64];
    snprintf(path, sizeof path, "%s/checkpoint.frl", o->resume);
    if (!o->env || !saved_env(path, env, sizeof env) || strcmp(env, o->env) == 0)
        return 0;
    if (!env[0])
        fprintf(stderr, "fastrl train: %s holds a run on host envs, not %s: only the program "
                        "that made them can continue it (frl_trainer_load_vec)\n", path, o->env);
    else
        fprintf(stderr, "fastrl train: %s holds a run of %s, not %s: resume it without naming "
                        "an environment (or with %s), or train %s with another --out\n",
                path, env, o->env, env, o->env);
    return 1;
}

static frl_status open_trainer(frl_trainer **t, frl_runtime *rt, const train_opts *o,
                               const frl_config *cfg)
{
    if (!o->resume)
        return frl_trainer_create(t, rt, o->env, cfg);
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.frl", o->resume);
    return frl_trainer_load(t, rt, path, cfg);
}

static int finish(frl_trainer *t, const train_opts *o, frl_status st, progress *p)
{
    const frl_metrics *m = frl_trainer_metrics(t);
    /* On a terminal the final line replaces the running one; in a log, a line for the
     * same update would only repeat it. */
    if (!o->quiet && m->update > 0 && (is_tty || m->update != p->printed_update))
        print_progress(p, m, 1); /* ended by a newline whatever stopped the run */
    const char *dir = o->out ? o->out : o->resume;
    char why[FRL_ERRMSG_SIZE]; /* the training's error, before saving overwrites it */
    snprintf(why, sizeof why, "%s",
             p->ev && p->ev->st != FRL_OK ? p->ev->why : frl_last_error());
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/checkpoint.frl", dir);
        frl_status sv = frl_trainer_save(t, path);
        if (sv == FRL_ERR_UNSUPPORTED || sv == FRL_ERR_STATE || sv == FRL_ERR_NONFINITE)
            fprintf(stderr, "no checkpoint: %s\n", frl_last_error());
        else if (sv != FRL_OK) {
            if (st != FRL_OK && st != FRL_ERR_INTERRUPTED) /* said first: what stopped it */
                fprintf(stderr, "fastrl: train: %s: %s\n", frl_status_name(st), why);
            return cli_fail("saving the checkpoint", sv);
        }
        else if (!o->follower) /* rank 0 wrote it */
            fprintf(stderr, "checkpoint: %s\n", path);
    }
    /* A distributed run stops on every rank at once (rank 0 reports it); a rank's own
     * signal still gives 128 + the signal, as on rank 0 (doc/distributed.md). */
    if ((st == FRL_OK || st == FRL_ERR_INTERRUPTED) && o->follower)
        return st == FRL_ERR_INTERRUPTED && g_sigint ? 128 + (int)g_sigint : 0;
    if (st == FRL_ERR_INTERRUPTED)
        fprintf(stderr, "interrupted at %lld steps%s\n", (long long)m->env_steps,
                dir ? "; continue with --resume" : " (no --out: nothing saved)");
    else if (st != FRL_OK) {
        fprintf(stderr, "fastrl: train: %s: %s\n", frl_status_name(st), why);
        return 1;
    }
    if (p->ev && p->ev->count > 0)
        printf("final: env_steps=%lld mean_return=%.4f seconds=%.3f\n",
               (long long)p->ev->last_steps, p->ev->last_mean, cli_now() - cli_start);
    printf("env_steps_per_second: %.1f\n", m->steps_per_second);
    printf("mean_return: %.4f steps: %lld seconds: %.3f\n", m->mean_return,
           (long long)m->env_steps, cli_now() - cli_start);
    /* 128 + the signal, as a shell reports a command the signal ended */
    return st == FRL_ERR_INTERRUPTED ? 128 + (g_sigint ? (int)g_sigint : SIGINT) : 0;
}

/* One env of the run's kind (the checkpoint's when resuming), made with the trainer's
 * settings: a resumed run's are the checkpoint's (env.max_episode_steps, ...) under any
 * --set, not the command line's alone. Its evaluations continue the run's schedule: the
 * first comes at the first multiple of --eval-every past the steps already done. */
static frl_status open_evaluator(evaluator *e, frl_runtime *rt, const train_opts *o,
                                 frl_trainer *t)
{
    char env[64] = "", path[4096];
    e->last_mean = NAN;
    int64_t k = frl_trainer_metrics(t)->env_steps / e->every + 1;
    e->next = k > INT64_MAX / e->every ? INT64_MAX : k * e->every;
    if (o->resume) {
        snprintf(path, sizeof path, "%s/checkpoint.frl", o->resume);
        saved_env(path, env, sizeof env);
    }
    const char *name = env[0] ? env : o->env;
    return frl_vec_env_create(&e->venv, rt, name ? name : "", 1, t->cfg);
}

/* The callback's stop at the target is a finished run; its failed evaluation is the
 * evaluation's error. */
static frl_status training_result(const evaluator *e, frl_status st)
{
    if (st != FRL_ERR_CALLBACK || !e->venv)
        return st;
    if (e->st != FRL_OK)
        return e->st; /* e->why says why */
    return e->reached ? FRL_OK : st;
}

/* The experience ring's memory, once at the start: with pixels it is what limits the
 * envs and steps a run can hold (doc/pixels.md). */
static void print_ring_memory(frl_trainer *t)
{
    const frl_ring *r = frl_trainer_ring(t);
    frl_vec_env *v = frl_trainer_vec_env(t);
    size_t bytes = 0;
    if (!r || !v)
        return; /* a population's learner keeps no ring */
    const frl_space *os = frl_vec_env_observation_space(v);
    int32_t slots = frl_ring_slots(r);
    if (frl_ring_memory_size(slots, frl_ring_steps(r), frl_ring_envs(r), os,
                             frl_vec_env_action_space(v), &bytes) != FRL_OK)
        return;
    frl_space_kind kind = frl_space_get_kind(os);
    int image = kind == FRL_SPACE_IMAGE || kind == FRL_SPACE_MIXED;
    long long row = frl_space_width(os) * (image ? 1 : 4); /* a pixel is a byte */
    fprintf(stderr, "ring: %d slots of %d steps x %d envs, %.1f MiB (%.2f MiB a slot); "
            "observations %lld bytes a row%s\n", (int)slots, (int)frl_ring_steps(r),
            (int)frl_ring_envs(r), (double)bytes / 1048576.0,
            (double)bytes / (double)slots / 1048576.0, row,
            kind == FRL_SPACE_MIXED ? " (uint8 pixels, then float32 values)"
            : image                 ? " (uint8 pixels)" : "");
}

/* --out is the directory the resumed run came from (spelt alike or not): the run goes on
 * writing there, appending to its metrics. */
static int continues_in_place(const train_opts *o)
{
    return o->out && o->resume && cli_same_file(o->out, o->resume);
}

/* The first of a run's outputs other than its checkpoint that dir holds (metrics.csv,
 * settings.txt, a TensorBoard event file), into name; 0 when none. A run killed before
 * it saved leaves these alone, and they are its only record. */
static int other_run_output(const char *dir, char *name, size_t size)
{
    static const char *const files[] = {"metrics.csv", "settings.txt"};
    char path[4096];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (access(path, F_OK) == 0) {
            snprintf(name, size, "%s", files[i]);
            return 1;
        }
    }
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *ent; d && !found && (ent = readdir(d));)
        if (strncmp(ent->d_name, "events.out.tfevents.", 20) == 0) {
            snprintf(name, size, "%s", ent->d_name);
            found = 1;
        }
    if (d)
        closedir(d);
    return found;
}

/* --out names a directory that holds another run: replacing it (its checkpoint and
 * metrics) takes --overwrite; continuing it takes --resume. Rank 0 alone asks, before
 * any rank writes. */
static int check_out_free(const train_opts *o)
{
    if (!o->out || o->overwrite || o->follower || continues_in_place(o))
        return 0;
    char path[4096], env[64] = "", name[256];
    snprintf(path, sizeof path, "%s/checkpoint.frl", o->out);
    if (access(path, F_OK) != 0) {
        if (!other_run_output(o->out, name, sizeof name))
            return 0;
        fprintf(stderr, "fastrl train: %s already holds %s, but no checkpoint.frl (a run "
                        "stopped before it saved?): replace it with --overwrite, or choose "
                        "another --out\n", o->out, name);
        return 2;
    }
    saved_env(path, env, sizeof env);
    fprintf(stderr, "fastrl train: %s already holds a run%s%s%s: continue it with --resume %s, "
                    "or replace it with --overwrite\n", o->out, env[0] ? " (" : "", env,
            env[0] ? ")" : "", o->out);
    return 2;
}

/* A run written into --out that it does not continue replaces what the directory held:
 * its metrics.csv (a resumed run appends to one, keeping the old run's first rows) and
 * its TensorBoard event files (each run opens a new one, and TensorBoard drew the old
 * beside the new as one run). The checkpoint is replaced when the run saves. */
static int clear_old_outputs(const train_opts *o)
{
    struct stat sb; /* no directory yet (or a file in the way): make_dir says so */
    if (!o->out || o->follower || continues_in_place(o) || stat(o->out, &sb) != 0 ||
        !S_ISDIR(sb.st_mode))
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", o->out);
    int e = unlink(path) != 0 && errno != ENOENT ? errno : 0;
    DIR *d = e ? NULL : opendir(o->out);
    for (struct dirent *ent; d && !e && (ent = readdir(d));) {
        if (strncmp(ent->d_name, "events.out.tfevents.", 20) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", o->out, ent->d_name);
        e = unlink(path) != 0 && errno != ENOENT ? errno : 0;
    }
    if (d)
        closedir(d);
    if (e)
        fprintf(stderr, "fastrl train: cannot remove %s (the replaced run's): %s\n", path,
                strerror(e));
    return e != 0;
}

/* The saved run's train.seed_offset, from the settings its checkpoint records (0 when
 * they do not set it, or cannot be read: the load read them already). */
static int64_t saved_seed_offset(const char *dir)
{
    frl_config *saved = saved_settings(dir);
    int64_t offset = 0;
    if (!saved || frl_config_get_int(saved, "train.seed_offset", &offset) != FRL_OK)
        offset = 0;
    frl_config_destroy(saved);
    return offset;
}

/* A resumed run keeps its saved seed (frl_trainer_load): another --seed, --set
 * runtime.seed or --set train.seed_offset would be ignored, so it is refused, as another
 * ENV is. The seed asked for is the command line's runtime seed and offset, each the
 * saved run's where the command line does not give it. */
static int check_resume_seed(const frl_trainer *t, const train_opts *o, const frl_config *cfg)
{
    int64_t seed = 0, offset = 0;
    if (!o->resume || (!frl_config_is_set(cfg, "runtime.seed") &&
                       !frl_config_is_set(cfg, "train.seed_offset")))
        return 0;
    const int64_t saved_offset = saved_seed_offset(o->resume);
    const uint64_t saved_seed = t->seed - (uint64_t)saved_offset;
    if (!frl_config_is_set(cfg, "runtime.seed") ||
        frl_config_get_int(cfg, "runtime.seed", &seed) != FRL_OK)
        seed = (int64_t)saved_seed;
    if (!frl_config_is_set(cfg, "train.seed_offset") ||
        frl_config_get_int(cfg, "train.seed_offset", &offset) != FRL_OK)
        offset = saved_offset;
    if ((uint64_t)seed + (uint64_t)offset == t->seed)
        return 0;
    fprintf(stderr, "fastrl train: seed %lld, train.seed_offset %lld with --resume %s: a "
                    "resumed run continues with its saved seed, %llu, and train.seed_offset, "
                    "%lld; train a new run (another --out) for another seed\n",
            (long long)seed, (long long)offset, o->resume, (unsigned long long)saved_seed,
            (long long)saved_offset);
    return 2;
}

/* A resumed run that has done --steps (the run's total) already: said, and nothing in
 * its directory changes. A distributed run goes to its train call all the same, where
 * the ranks compare their budgets (one rank leaving here would leave the others
 * waiting out dist.timeout). */
static int already_done(const frl_trainer *t, const train_opts *o)
{
    int64_t done = frl_trainer_metrics(t)->env_steps;
    char mode[16] = "";
    frl_config_get_text(t->cfg, "dist.mode", mode, sizeof mode);
    if (!o->resume || done < o->steps || strcmp(mode, "none") != 0)
        return 0;
    if (!o->follower)
        fprintf(stderr, "fastrl train: the run in %s has done %lld env steps, --steps %lld "
                        "(the run's total): nothing to train; give a larger --steps to go "
                        "on\n", o->resume, (long long)done, (long long)o->steps);
    return 1;
}

static int train_and_save(frl_runtime *rt, const train_opts *o, const frl_config *cfg)
{
    frl_trainer *t;
    if (o->resume && check_resume_env(o))
        return 1;
    if (check_out_free(o))
        return 2;
    frl_status st = open_trainer(&t, rt, o, cfg);
    if (st != FRL_OK)
        return cli_fail(o->resume ? "resume" : o->env, st);
    int rc = check_resume_seed(t, o, cfg);
    int done = !rc && already_done(t, o);
    if (rc || done || clear_old_outputs(o)) {
        frl_trainer_destroy(t);
        return rc ? rc : done ? 0 : 1;
    }
    const char *out = o->out ? o->out : o->resume; /* a resumed run keeps writing its dir */
    if (out && (make_dir(out) || (st = frl_trainer_set_output(t, out)) != FRL_OK)) {
        frl_trainer_destroy(t);
        return st != FRL_OK ? cli_fail("output", st) : 1;
    }
    char mode[16] = ""; /* the trainer's: a resumed run's mode is the checkpoint's */
    frl_config_get_text(t->cfg, "sampler.mode", mode, sizeof mode);
    progress p = {o->steps, 0, strcmp(mode, "async") == 0, o->quiet, NULL, t, o->max_seconds,
                  0, -1};
    evaluator ev = {.t = t, .every = o->eval_every, .episodes = o->eval_episodes,
                    .max_steps = o->eval_max_steps, .target = o->eval_target,
                    .silent = o->follower};
    if (o->eval_every && (st = open_evaluator(&ev, rt, o, t)) != FRL_OK) {
        frl_trainer_destroy(t);
        return cli_fail("the evaluation env", st);
    }
    p.ev = o->eval_every ? &ev : NULL;
    frl_trainer_set_callback(t, on_metrics, &p);
    if (!o->quiet && !o->verbose) /* --verbose: the library's info line says the same */
        print_ring_memory(t);
    g_trainer = t;
    if (g_sigint) /* a signal while the trainer was made: stop before the first update */
        frl_trainer_request_stop(t);
    arm_alarm(o->max_seconds);
    st = frl_trainer_train(t, o->steps);
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    g_trainer = NULL; /* a signal from here on only marks the run (g_sigint) */
    p.timed_out |= g_alarm;
    st = training_result(&ev, st);
    /* on a terminal the running progress line has no newline yet */
    const char *nl = is_tty && p.printed_update >= 0 ? "\n" : "";
    /* A follower rank prints nothing; rank 0 says why the run stopped. */
    if (st == FRL_ERR_INTERRUPTED && p.timed_out) {
        if (!o->follower)
            fprintf(stderr, "%stime limit: stopped after %g s (--max-seconds)\n", nl,
                    o->max_seconds);
        st = FRL_OK;
    } else if (st == FRL_ERR_INTERRUPTED && o->max_seconds > 0 && !g_sigint) {
        /* Neither this rank's Ctrl-C nor its clock: a distributed run's ranks exchange a
         * stop, and another rank's --max-seconds (all ranks run one command line) came
         * first; this rank started later or ran slower. */
        if (!o->follower)
            fprintf(stderr, "%stime limit: stopped with the other ranks, one of which reached "
                            "its --max-seconds first (this rank's: %g s)\n", nl,
                    o->max_seconds);
        st = FRL_OK;
    }
    rc = finish(t, o, st, &p);
    frl_vec_env_destroy(ev.venv);
    frl_trainer_destroy(t);
    return rc;
}

static int run_training(frl_runtime *rt, const train_opts *o, const frl_config *cfg)
{
    catch_stop_signals(1);
    int rc = train_and_save(rt, o, cfg);
    catch_stop_signals(0);
    return rc;
}

/* The library's warnings (a MuJoCo task's simulation fault, ...) on stderr, on a line
 * of their own below the progress bar; with --verbose its INFO lines too (where
 * runtime.device=auto put the networks, the ring's memory, an elastic run's stages). */
static void log_warning(void *user, frl_log_level level, const char *message)
{
    (void)user;
    static const char *names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "%sfastrl: %s: %s\n", is_tty ? "\n" : "",
            names[level <= FRL_LOG_DEBUG ? level : FRL_LOG_DEBUG], message);
}

static void train_usage(void)
{
    printf("usage: fastrl train ENV [--steps N] [--seed S] [--threads T] [--set key=value ...]\n"
           "       [--out DIR [--overwrite]] [--resume DIR] [--quiet] [--verbose]\n"
           "       [--max-seconds S]\n"
           "       [--eval-every N [--eval-episodes K] [--eval-target R] [--eval-max-steps M]]\n"
           "(fastrl --help says what each does; fastrl config --list lists the settings)\n");
}

int cli_train(int argc, char **argv)
{
    train_opts o = {.steps = 500000, .eval_episodes = 20, .eval_max_steps = 10000000,
                    .eval_target = NAN};
    frl_config *cfg;
    if (frl_config_create(&cfg, NULL) != FRL_OK)
        return cli_fail("config", FRL_ERR_NOMEM);
    int rc = parse_train_args(argc, argv, &o, cfg);
    if (rc < 0) {
        train_usage();
        frl_config_destroy(cfg);
        return 0;
    }
    is_tty = isatty(2);
    frl_runtime *rt = NULL;
    if (rc == 0) {
        frl_logger lg;
        frl_logger_init(&lg);
        lg.log = log_warning;
        lg.max_level = o.verbose ? FRL_LOG_INFO : FRL_LOG_WARNING;
        frl_status st = frl_runtime_create(&rt, cfg, NULL, &lg);
        rc = st == FRL_OK ? run_training(rt, &o, cfg) : cli_fail("runtime", st);
    }
    frl_runtime_destroy(rt);
    frl_config_destroy(cfg);
    return rc;
}
