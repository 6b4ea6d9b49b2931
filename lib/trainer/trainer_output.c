/* The trainer's output directory: metrics.csv, a TensorBoard event file, settings.txt. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/c_numeric.h"
#include "trainer/trainer_dist.h"
#include "trainer/trainer_hold.h"
#include "trainer/trainer_output.h"

static const char csv_header[] =
    "update,env_steps,episodes,mean_return,mean_length,seconds,steps_per_second,"
    "policy_loss,value_loss,entropy,approx_kl,clip_fraction,explained_variance,grad_norm,"
    "learning_rate,epochs_done,time_env,time_inference,time_backward,time_optimizer,"
    "time_waiting,policy_lag_mean,policy_lag_max,slots_dropped,q_mean,td_error,epsilon,"
    "replay_fill,sample_age,time_replay,priority_spread\n";

/* Drop the line of key (with its newline) from text. */
static void drop_line(char *text, const char *key)
{
    size_t kn = strlen(key);
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        char *next = end ? end + 1 : line + strlen(line);
        if (!strncmp(line, key, kn) && line[kn] == '=') {
            memmove(line, next, strlen(next) + 1);
            return;
        }
        line = next;
    }
}

/* The run's settings: every dist., elastic., env., es., ga., policy., sampler. and
 * train. key. runtime.* keys belong to the runtime the caller passes, not to the run,
 * and dist.comm to the process (a communicator's handle), so they are left out. */
frl_status frl_trainer_settings_text(const frl_trainer *t, char *buf, size_t size)
{
    static const char *const prefixes[] = {"dist.", "elastic.", "env.", "es.", "ga.",
                                           "policy.", "sampler.", "train."};
    size_t used = 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        frl_status st = frl_config_to_text(t->cfg, prefixes[i], buf + used, size - used);
        if (st != FRL_OK)
            return st;
        if (i == 0)
            drop_line(buf, "dist.comm");
        used += strlen(buf + used);
    }
    return FRL_OK;
}

static frl_status write_settings(frl_trainer *t, const char *dir)
{
    char path[4096], text[FRL_SETTINGS_MAX];
    snprintf(path, sizeof path, "%s/settings.txt", dir);
    frl_status st = frl_trainer_settings_text(t, text, sizeof text);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_last_error());
    FILE *f = fopen(path, "w");
    if (!f)
        return frl_fail(t->err, FRL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "# env=%s seed=%llu threads=%d\n%s", t->env_name[0] ? t->env_name : "(host)",
            (unsigned long long)t->seed, (int)frl_runtime_threads(t->rt), text);
    return fclose(f) == 0 ? FRL_OK : frl_fail(t->err, FRL_ERR_IO, "cannot write %s", path);
}

/* The files' paths are dir plus a name of at most 14 bytes in buffers of 4096. */
enum { OUTPUT_DIR_MAX = 4096 - 16 };

static frl_status check_dir(frl_trainer *t, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0)
        return frl_fail(t->err, FRL_ERR_INVALID_ARGUMENT, "frl_trainer_set_output: dir is "
                        "empty (give \".\" for the working directory)");
    if (n > OUTPUT_DIR_MAX)
        return frl_fail(t->err, FRL_ERR_RANGE, "frl_trainer_set_output: dir is %zu bytes "
                        "long; at most %d", n, (int)OUTPUT_DIR_MAX);
    return FRL_OK;
}

/* The env_steps field (the second) of a metrics row, or 0. */
static int64_t row_env_steps(const char *line)
{
    const char *comma = strchr(line, ',');
    return comma ? strtoll(comma + 1, NULL, 10) : 0;
}

/* A resumed run appends to the metrics of the run it continues; rows of updates after
 * the checkpoint's (written before a kill, and done again now) are cut first, so the
 * file keeps one row an update, in order. So is a last line without its newline (a
 * write cut short by a kill or a full disk): the next row would continue it. *last
 * gets the env_steps of the last row kept, where train.log_every counts on from (as
 * the uninterrupted run does); 0 when none is. */
static frl_status trim_metrics(frl_trainer *t, const char *path, int64_t *last)
{
    *last = 0;
    FILE *f = fopen(path, "r+");
    if (!f)
        return FRL_OK; /* none yet: the append creates it */
    char line[4096];
    long keep = -1;
    int header = 1;
    while (keep < 0) {
        long at = ftell(f);
        if (!fgets(line, sizeof line, f))
            break;
        int partial = strchr(line, '\n') == NULL; /* rows are shorter than line */
        if (partial || (!header && strtoll(line, NULL, 10) > t->book.pr.updates))
            keep = at; /* a partial header too: the file starts again, header first */
        else if (!header)
            *last = row_env_steps(line);
        header = 0;
    }
    int bad = keep >= 0 && ftruncate(fileno(f), (off_t)keep) != 0;
    if (fclose(f) != 0 || bad)
        return frl_fail(t->err, FRL_ERR_IO, "cannot trim %s: %s", path, strerror(errno));
    return FRL_OK;
}

/* settings.txt, and the metrics and event files opened into *csv and *tb; *logged: the
 * env_steps of the last row in a metrics file appended to (0 for a new file). */
static frl_status open_outputs(frl_trainer *t, const char *dir, FILE **csv, frl_tfevents **tb,
                               int64_t *logged)
{
    *logged = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    frl_status st = write_settings(t, dir);
    /* The event file first: metrics.csv may be the file the run writes now (dir as
     * before), and "w" empties it, so nothing that can still fail comes after that. */
    if (st == FRL_OK)
        st = frl_tfevents_open(tb, dir, &t->rt->alloc, t->err);
    /* A resumed run (loaded, updates done) appends to the metrics of the run it
     * continues; a created one's rows are its own, whatever it has done already. */
    int append = t->resumed && t->book.pr.updates > 0;
    if (st == FRL_OK && append)
        st = trim_metrics(t, path, logged);
    if (st == FRL_OK && !(*csv = fopen(path, append ? "a" : "w")))
        st = frl_fail(t->err, FRL_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    /* flushed, so a file that cannot be written is refused here, not at an update */
    if (st == FRL_OK && ftell(*csv) == 0 && (fputs(csv_header, *csv) < 0 || fflush(*csv) != 0))
        st = frl_fail(t->err, FRL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return st;
}

static frl_status replace_outputs(frl_trainer *t, const char *dir);

FRL_API frl_status frl_trainer_set_output(frl_trainer *t, const char *dir)
{
    if (!t || !dir)
        return frl_fail(t ? t->err : NULL, FRL_ERR_NULL, "frl_trainer_set_output: %s is NULL",
                        t ? "dir" : "trainer");
    /* Train writes the files after each update, on its thread: only its callback runs
     * between those writes (another thread would close a file being written). */
    int held;
    frl_status st = frl_trainer_hold(t, "frl_trainer_set_output", "it writes the outputs: "
                                     "call this between train calls, or from the metrics "
                                     "callback", &held);
    if (st != FRL_OK)
        return st;
    st = replace_outputs(t, dir);
    frl_trainer_release(t, held);
    return st;
}

/* set_output's work, the trainer held. */
static frl_status replace_outputs(frl_trainer *t, const char *dir)
{
    frl_status st = check_dir(t, dir);
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, t->err);
    if (!frl_trainer_dist_writes(t)) {
        frl_trainer_close_outputs(t);
        return FRL_OK; /* dist.mode: rank 0 writes the run's files */
    }
    /* The new files replace the current ones only once all are open: a failed call
     * leaves the run writing where it did. */
    FILE *csv = NULL;
    frl_tfevents *tb = NULL;
    int64_t logged;
    st = open_outputs(t, dir, &csv, &tb, &logged);
    if (st != FRL_OK) {
        if (csv)
            fclose(csv);
        if (tb) /* only its version record: no file left of a call that failed */
            unlink(frl_tfevents_path(tb));
        frl_tfevents_close(tb);
        return frl_fail_msg(NULL, st, t->err);
    }
    frl_trainer_close_outputs(t);
    t->csv = csv;
    t->tb = tb;
    /* A new file's first row comes at the next update; a resumed run's rows keep the
     * steps the uninterrupted run's would (train.log_every counts from its last row) */
    t->logged_steps = logged;
    return FRL_OK;
}

void frl_trainer_close_outputs(frl_trainer *t)
{
    if (t->csv)
        fclose(t->csv);
    t->csv = NULL;
    frl_tfevents_close(t->tb);
    t->tb = NULL;
}

/* In the C locale: a decimal comma would split the CSV's fields. */
static void write_csv_row(FILE *f, const frl_metrics *m)
{
    locale_t previous = frl_c_numeric_begin();
    fprintf(f, "%lld,%lld,%lld,%.9g,%.9g,%.6f,%.1f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%d,"
            "%.6f,%.6f,%.6f,%.6f,%.6f,%.4f,%.0f,%lld,%.9g,%.9g,%.6g,%.6g,%.6g,%.6f,%.6g\n",
            (long long)m->update, (long long)m->env_steps, (long long)m->episodes,
            m->mean_return, m->mean_length, m->seconds, m->steps_per_second, m->policy_loss,
            m->value_loss, m->entropy, m->approx_kl, m->clip_fraction, m->explained_variance,
            m->grad_norm, m->learning_rate, (int)m->epochs_done, m->time_env,
            m->time_inference, m->time_backward, m->time_optimizer, m->time_waiting,
            m->policy_lag_mean, m->policy_lag_max, (long long)m->slots_dropped, m->q_mean,
            m->td_error, m->epsilon, m->replay_fill, m->sample_age, m->time_replay,
            m->priority_spread);
    frl_c_numeric_end(previous);
}

static frl_status write_scalars(frl_trainer *t, const frl_metrics *m, double wall)
{
    struct { const char *tag; double v; } s[] = {
        {"charts/mean_return", m->mean_return}, {"charts/mean_length", m->mean_length},
        {"charts/steps_per_second", m->steps_per_second}, {"losses/policy", m->policy_loss},
        {"losses/value", m->value_loss}, {"losses/entropy", m->entropy},
        {"losses/approx_kl", m->approx_kl}, {"losses/clip_fraction", m->clip_fraction},
        {"losses/explained_variance", m->explained_variance}, {"losses/grad_norm", m->grad_norm},
        {"charts/learning_rate", m->learning_rate},
        /* Value learners only (the replay is the sign): NaN rows are skipped below. */
        {"losses/q_mean", t->store.replay ? m->q_mean : NAN},
        {"losses/td_error", t->store.replay ? m->td_error : NAN},
        {"charts/epsilon", t->store.replay ? m->epsilon : NAN},
        {"charts/replay_fill", t->store.replay ? m->replay_fill : NAN},
        {"charts/sample_age", t->store.replay ? m->sample_age : NAN},
        {"charts/priority_spread", m->priority_spread > 0 ? m->priority_spread : NAN},
        /* ES and GA (a population is the sign); not in metrics.csv, whose columns stay
         * those its readers know */
        {"charts/population_mean", t->store.population ? m->population_mean : NAN},
        {"charts/population_best", t->store.population ? m->population_best : NAN},
        {"charts/kept_fitness", t->store.population ? m->kept_fitness : NAN},
        /* Lag exists only with the async sampler; NaN rows are skipped below. */
        {"charts/policy_lag_mean", t->sampler->ops->overlaps_learning ? m->policy_lag_mean : NAN},
        {"charts/policy_lag_max", t->sampler->ops->overlaps_learning ? m->policy_lag_max : NAN},
        /* dist.mode: rank 0's bytes sent and received in the update's exchanges, and the
         * rollouts all ranks cut short so far (dist.preempt) */
        {"dist/bytes_per_update", t->dist ? (double)t->dist_update_bytes : NAN},
        {"dist/preempted_rollouts", t->dist_need ? (double)t->dist_preempted_all : NAN},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        if (isnan(s[i].v))
            continue;
        frl_status st = frl_tfevents_scalar(t->tb, s[i].tag, m->env_steps, wall, (float)s[i].v,
                                            t->err);
        if (st != FRL_OK)
            return st;
    }
    return frl_tfevents_flush(t->tb, t->err);
}

frl_status frl_trainer_write_outputs(frl_trainer *t)
{
    int64_t every = frl_cfg_int(t->cfg, FRL_KEY_TRAIN_LOG_EVERY);
    if (!t->csv || (every > 0 && t->logged_steps > 0 &&
                    t->metrics.env_steps - t->logged_steps < every))
        return FRL_OK;
    t->logged_steps = t->metrics.env_steps;
    write_csv_row(t->csv, &t->metrics);
    if (fflush(t->csv) != 0)
        return frl_fail(t->err, FRL_ERR_IO, "cannot write metrics.csv: %s", strerror(errno));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return write_scalars(t, &t->metrics, (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
}
