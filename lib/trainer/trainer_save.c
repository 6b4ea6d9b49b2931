/* Trainer checkpoints: everything a run needs to continue exactly where it stopped. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "env/vec_env_named.h"
#include "env/vec_env_state.h"
#include "core/dist.h"
#include "trainer/trainer_dist.h"
#include "trainer/trainer_hold.h"
#include "rl/policy_io.h"
#include "trainer/trainer.h"
#include "trainer/trainer_output.h"

/* Room for every section of a one-group checkpoint (43 at most: GA's 11 learner
 * sections with a recurrent policy), and a few to spare. */
enum { MAX_SECTIONS = 34 + FRL_REPLAY_SECTIONS + FRL_POLICY_SECTIONS, COUNTERS = 7 };

typedef struct save_buf {
    char settings[FRL_SETTINGS_MAX];
    int64_t counters[COUNTERS];
    int64_t unlearned[2];  /* rollouts dropped for lag, lost to a failed update */
    double rn[4];
    double dist_progress[4]; /* dist.mode: all ranks' episodes, window, mean return, length */
    uint64_t seed;
} save_buf;

static int keeps_replay(const frl_trainer *t)
{
    return t->store.replay && frl_cfg_bool(t->cfg, FRL_KEY_TRAIN_SAVE_REPLAY);
}

static void trainer_sections(const frl_trainer *t, save_buf *b, frl_section *s, int32_t *n)
{
    const frl_rollout_book *k = &t->book;
    b->rn[0] = k->rn_count;
    b->rn[1] = k->rn_mean;
    b->rn[2] = k->rn_m2;
    b->rn[3] = k->rn_scale;
    b->seed = t->seed;
    frl_section_add(s, n, "kind", FRL_DTYPE_TEXT, 7, "trainer");
    frl_section_add(s, n, "trainer.env", FRL_DTYPE_TEXT, strlen(t->env_name), t->env_name);
    frl_section_add(s, n, "trainer.settings", FRL_DTYPE_TEXT, strlen(b->settings), b->settings);
    frl_section_add(s, n, "trainer.counters", FRL_DTYPE_I64, COUNTERS, b->counters);
    frl_section_add(s, n, "trainer.seed", FRL_DTYPE_U64, 1, &b->seed);
    /* The learner's sections; its optimiser step is a counter (written before the file). */
    int64_t learner_steps = 0;
    t->learner.ops->save(&t->learner, s, n, &learner_steps);
    /* A replay's contents, so a continued run samples what it would have (unless
     * train.save_replay=false: the file is then small and the replay refills). */
    if (keeps_replay(t))
        frl_replay_save(t->store.replay, s, n);
    const int64_t c[COUNTERS] = {k->pr.env_steps, k->pr.updates, k->pr.rollout_steps,
                                 k->pr.episodes, learner_steps, k->pr.started, t->B};
    memcpy(b->counters, c, sizeof c);
    /* Loading refuses a non-finite window, which finite rewards can still make (an
     * episode's return beyond float's range): refused here too, so such a run does not
     * replace its last good file with one that cannot be loaded. */
    frl_section_add_finite(s, n, "trainer.recent_return", FRL_DTYPE_F32, FRL_RECENT_EPISODES,
                           k->recent_return);
    frl_section_add(s, n, "trainer.recent_length", FRL_DTYPE_I32, FRL_RECENT_EPISODES, k->recent_length);
    frl_section_add(s, n, "trainer.reward_norm", FRL_DTYPE_F64, 4, b->rn);
    frl_section_add(s, n, "trainer.disc_return", FRL_DTYPE_F64, (uint64_t)t->B, k->disc_return);
    /* A recurrent policy's memory of each env, so a resumed run acts as the saved one
     * would have (no section for a policy without a core). */
    if (k->state_w)
        frl_section_add(s, n, "trainer.policy_state", FRL_DTYPE_F32,
                        (uint64_t)t->B * (uint64_t)k->state_w, k->state);
    /* Rollouts dropped for lag or lost to a failed update (async) count toward the
     * budget beside the updates: a file without them continued for that many extra
     * rollouts. Its own section, so older files (none: 0) still load. */
    b->unlearned[0] = k->pr.slots_dropped;
    b->unlearned[1] = k->pr.lost;
    if (b->unlearned[0] || b->unlearned[1])
        frl_section_add(s, n, "trainer.unlearned", FRL_DTYPE_I64, 2, b->unlearned);
    /* dist.mode: the counters hold rank 0's episodes; the run's (its metrics and target)
     * are every rank's, as of the last exchange. Its own section: older files load. */
    if (t->dist) {
        const double d[4] = {(double)t->dist_episodes, (double)t->dist_window, t->dist_return,
                             t->dist_length};
        memcpy(b->dist_progress, d, sizeof d);
        frl_section_add(s, n, "trainer.dist_progress", FRL_DTYPE_F64, 4, b->dist_progress);
    }
}

/* Each env group's state (one group unless the sampler is async); on failure the
 * snapshots taken are freed. */
static frl_status snapshot_groups(frl_trainer *t, frl_vec_env_snap *snap, frl_section *s,
                                  int32_t *n)
{
    for (int32_t g = 0; g < t->groups; g++) {
        frl_status st = frl_vec_env_snapshot_group(t->venvs[g], g, &snap[g], s, n, t->err);
        if (st != FRL_OK) {
            while (g-- > 0)
                frl_vec_env_snap_free(&snap[g]);
            return st;
        }
    }
    return FRL_OK;
}

/* Every section of the checkpoint, written to path; what they point to is freed after. */
static frl_status write_sections(frl_trainer *t, const char *path, frl_section *s)
{
    save_buf b;
    frl_vec_env_snap snap[FRL_MAX_GROUPS];
    frl_policy_blob pb;
    int32_t n = 0;
    frl_status st = frl_trainer_settings_text(t, b.settings, sizeof b.settings);
    if (st != FRL_OK)
        return frl_fail_msg(t->err, st, frl_last_error());
    trainer_sections(t, &b, s, &n);
    /* The env states first: a host's get_state may fail, and then nothing is written. */
    if ((st = snapshot_groups(t, snap, s, &n)) != FRL_OK)
        return st;
    st = frl_policy_blob_make(t->policy, &pb, s, &n, t->err);
    if (st == FRL_OK)
        st = frl_container_write(path, &t->rt->alloc, s, n, t->err);
    frl_policy_blob_free(&pb);
    for (int32_t g = 0; g < t->groups; g++)
        frl_vec_env_snap_free(&snap[g]);
    return st;
}

static frl_status write_checkpoint(frl_trainer *t, const char *path)
{
    size_t count = MAX_SECTIONS + (size_t)FRL_VEC_ENV_SECTIONS * (size_t)(t->groups - 1);
    frl_section *s = frl_alloc(&t->rt->alloc, sizeof(frl_section) * count, 64);
    if (!s)
        return frl_fail(t->err, FRL_ERR_NOMEM, "out of memory for %zu checkpoint sections",
                        count);
    frl_status st = write_sections(t, path, s);
    frl_free(&t->rt->alloc, s);
    return st;
}

FRL_API frl_status frl_trainer_save(const frl_trainer *ct, const char *path)
{
    if (!ct || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_save: %s is NULL", ct ? "path" : "trainer");
    frl_trainer *t = (frl_trainer *)ct; /* its error buffer, and held for the save */
    /* Any moment of a train call but its metrics callback (another thread, an env
     * callback) is mid-rollout: the file would hold counters and env states of steps no
     * update learned from. Held, a train call made meanwhile is refused, not stepping
     * what the save reads. */
    int held;
    frl_status st = frl_trainer_hold(t, "frl_trainer_save", "the run is mid-update: save "
                                     "after it returns, or from its metrics callback", &held);
    if (st != FRL_OK)
        return st;
    /* A fault first: every rank's policy is part-way through an update, so every rank
     * says so (a rank that writes nothing would otherwise report a save). */
    if (t->dist && t->dist->faulted)
        st = frl_fail(t->err, FRL_ERR_STATE, "an exchange between the ranks failed during an "
                      "update, which left the policy part-way through it: nothing is saved, "
                      "so the last checkpoint stays as it was");
    else if (t->sampler->ops->no_save)
        st = frl_fail(t->err, FRL_ERR_UNSUPPORTED, "%s", t->sampler->ops->no_save);
    /* frl_trainer_load builds its own vec envs and frl_trainer_load_vec takes one of the
     * host's: a run on several of the host's has no call that continues it, and a file
     * nothing can load is no checkpoint. */
    else if (!t->own_venv && t->groups > 1)
        st = frl_fail(t->err, FRL_ERR_UNSUPPORTED, "the run steps %d vec envs of the host's "
                      "(frl_trainer_create_vecs), and no call continues such a run yet "
                      "(frl_trainer_load_vec takes one): nothing is written; keep its policy "
                      "with frl_policy_save(frl_trainer_policy(trainer), path)", (int)t->groups);
    /* From the metrics callback: the sync sampler is between rollouts then, the async
     * one's env groups are still stepping (a save would snapshot a moving run). */
    else if (!held && t->sampler->ops->overlaps_learning)
        st = frl_fail(t->err, FRL_ERR_STATE, "an async trainer's env groups are stepping while "
                      "frl_trainer_train runs: save after it returns (the metrics callback may "
                      "call frl_trainer_request_stop)");
    /* dist.mode: rank 0 writes the checkpoint and all hold its contents; the other ranks
     * refuse what rank 0 refuses above (a save mid-update), so that every rank says alike */
    if (st == FRL_OK && frl_trainer_dist_writes(t))
        st = write_checkpoint(t, path);
    frl_trainer_release(t, held);
    if (st != FRL_OK)
        frl_fail(NULL, st, "frl_trainer_save: %s", t->err);
    return st;
}

/* ---- loading ---- */

static frl_status text_of(const frl_container *c, const char *name, char *buf, size_t size,
                          char *err)
{
    const frl_section *s = frl_container_find(c, name, FRL_DTYPE_TEXT, -1, err);
    if (!s)
        return FRL_ERR_FORMAT;
    if (s->count >= size)
        return frl_fail(err, FRL_ERR_FORMAT, "section %s is too long", name);
    /* "CartPole-v1\0x" read as CartPole-v1: the text would end early, unsaid */
    if (memchr(s->data, '\0', s->count))
        return frl_fail(err, FRL_ERR_FORMAT, "section %s holds a NUL byte", name);
    memcpy(buf, s->data, s->count);
    buf[s->count] = '\0';
    return FRL_OK;
}

/* The recurrent state of every env, checked finite (the policy would carry a NaN on). A
 * frame stack's state is its earlier frames' bytes, any bit pattern (a white frame's
 * words read as NaN), so it is taken as it is. */
static frl_status restore_policy_state(frl_trainer *t, const frl_container *c, char *err)
{
    frl_rollout_book *b = &t->book;
    if (!b->state_w)
        return FRL_OK;
    int64_t count = (int64_t)t->B * (int64_t)b->state_w;
    const frl_section *ps = frl_container_find(c, "trainer.policy_state", FRL_DTYPE_F32, count, err);
    if (!ps)
        return FRL_ERR_FORMAT;
    const float *v = ps->data;
    for (int64_t i = 0; t->policy->stack <= 1 && i < count; i++)
        if (!isfinite(v[i]))
            return frl_fail(err, FRL_ERR_FORMAT, "trainer.policy_state holds a non-finite value "
                            "(env %lld)", (long long)(i / b->state_w));
    memcpy(b->state, v, sizeof(float) * (size_t)count);
    return FRL_OK;
}

/* dist.mode: every rank loads rank 0's file, and the envs restart (their states were
 * rank 0's alone, and the run may go on with other rank or env counts): the sampler
 * resets them from streams of the update count. Rank 0 keeps the saved episodes; the
 * run's totals and window come back as saved (a run that had reached its target stops
 * at once, and the metrics after a load are the run's), and the episodes count on. */
static frl_status restore_dist(frl_trainer *t, const frl_container *c, char *err)
{
    frl_rollout_book *b = &t->book;
    b->pr.started = 0;
    const frl_section *s = frl_container_optional(c, "trainer.dist_progress", FRL_DTYPE_F64, 4);
    if (s) {
        const double *d = s->data;
        if (!(d[0] >= (double)b->pr.episodes && d[0] <= 0x1p53 && d[1] >= 0 &&
              d[1] <= 2 * FRL_RECENT_EPISODES && d[1] == floor(d[1]) && d[0] == floor(d[0])) ||
            (d[1] > 0 && !(isfinite(d[2]) && isfinite(d[3]))))
            return frl_fail(err, FRL_ERR_FORMAT, "trainer.dist_progress is not a run's "
                            "episode counts and means");
        t->dist_episodes = (int64_t)d[0];
        t->dist_window = (int64_t)d[1];
        t->dist_return = d[2];
        t->dist_length = d[3];
        t->dist_episodes_base = t->dist_episodes - b->pr.episodes;
    }
    if (t->dist->rank != 0)
        b->pr.episodes = 0;
    return FRL_OK;
}

/* Reward normalisation's discounted return of each env. A NaN or a square beyond
 * double's range would turn the normaliser's statistics, and so every later reward,
 * NaN; no run's discounted return comes near 1e100 (float rewards over < 2^53 steps). */
static frl_status check_disc_return(const double *d, int64_t n, char *err)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(d[i]) <= 1e100))
            return frl_fail(err, FRL_ERR_FORMAT, "trainer.disc_return holds %g for env %lld, "
                            "not a discounted return (not finite, or beyond 1e100)", d[i],
                            (long long)i);
    return FRL_OK;
}

/* The rollouts dropped for lag and lost to failed updates; absent (none, or an older
 * file): 0. */
static frl_status restore_unlearned(frl_trainer *t, const frl_container *c, int64_t updates,
                                    char *err)
{
    const frl_section *d = frl_container_optional(c, "trainer.unlearned", FRL_DTYPE_I64, 2);
    const int64_t zero[2] = {0, 0}, *u = d ? d->data : zero;
    const int64_t most = ((int64_t)1 << 53) / ((int64_t)t->T * t->B) - updates;
    if (u[0] < 0 || u[1] < 0 || u[0] > most || u[1] > most - u[0])
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.unlearned is out of range");
    t->book.pr.slots_dropped = u[0];
    t->book.pr.lost = u[1];
    t->metrics.slots_dropped = u[0];
    return FRL_OK;
}

static frl_status restore_counters(frl_trainer *t, const frl_container *c, char *err)
{
    const frl_section *cs = frl_container_find(c, "trainer.counters", FRL_DTYPE_I64, COUNTERS, err);
    const frl_section *sd = frl_container_find(c, "trainer.seed", FRL_DTYPE_U64, 1, err);
    const frl_section *rr = frl_container_find(c, "trainer.recent_return", FRL_DTYPE_F32,
                                               FRL_RECENT_EPISODES, err);
    const frl_section *rl = frl_container_find(c, "trainer.recent_length", FRL_DTYPE_I32,
                                               FRL_RECENT_EPISODES, err);
    const frl_section *rn = frl_container_find(c, "trainer.reward_norm", FRL_DTYPE_F64, 4, err);
    /* dist.mode: the run may go on with other rank and env counts; envs restart */
    int dist = t->dist != NULL;
    const frl_section *dr = frl_container_find(c, "trainer.disc_return", FRL_DTYPE_F64,
                                               dist ? -1 : t->B, err);
    if (!cs || !sd || !rr || !rl || !rn || !dr)
        return FRL_ERR_FORMAT;
    const int64_t *k = cs->data;
    if (k[0] < 0 || k[1] < 0 || k[2] < 0 || k[3] < 0 || k[4] < 0 || (k[6] != t->B && !dist))
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.counters are inconsistent");
    /* No run reaches 2^53 steps; a file beyond would overflow the learners' step
     * arithmetic (updates times the rollout's T * B). */
    const int64_t most = (int64_t)1 << 53, per = (int64_t)t->T * t->B;
    if (k[0] > most || k[1] > most / per || k[2] > most || k[3] > most || k[4] > most ||
        k[5] < 0 || k[5] > INT32_MAX)
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.counters are out of range");
    /* The episode window feeds the target check and the metrics' means. */
    if (frl_find_nonfinite(rr->data, FRL_RECENT_EPISODES) >= 0)
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.recent_return holds a non-finite value");
    for (int32_t i = 0; i < FRL_RECENT_EPISODES; i++)
        if (((const int32_t *)rl->data)[i] < 0)
            return frl_fail(err, FRL_ERR_FORMAT, "trainer.recent_length holds a negative length");
    const double *r = rn->data;
    if (!(r[0] >= 0 && r[0] <= 1e300) || !isfinite(r[1]) || !(r[2] >= 0 && r[2] <= 1e300) ||
        !(r[3] > 0 && r[3] <= FLT_MAX))
        return frl_fail(err, FRL_ERR_FORMAT, "trainer.reward_norm is not a normaliser's state");
    frl_status st = check_disc_return(dr->data, (int64_t)dr->count, err);
    if (st == FRL_OK)
        st = t->learner.ops->load(&t->learner, c, k[4], err);
    if (st != FRL_OK)
        return st;
    frl_rollout_book *b = &t->book;
    b->pr.env_steps = k[0];
    b->pr.updates = k[1];
    b->pr.rollout_steps = k[2];
    b->pr.episodes = k[3];
    b->pr.started = (int32_t)k[5];
    t->seed = *(const uint64_t *)sd->data;
    t->host.seed = t->seed; /* the sampler's copy */
    memcpy(b->recent_return, rr->data, sizeof b->recent_return);
    memcpy(b->recent_length, rl->data, sizeof b->recent_length);
    b->rn_count = r[0];
    b->rn_mean = r[1];
    b->rn_m2 = r[2];
    b->rn_scale = (float)r[3];
    if ((st = restore_unlearned(t, c, k[1], err)) != FRL_OK)
        return st;
    if (dist)
        return restore_dist(t, c, err);
    memcpy(b->disc_return, dr->data, sizeof(double) * (size_t)t->B);
    return restore_policy_state(t, c, err);
}

/* An IMPALA run saved before IMPALA refused train.advantage=gae and train.decoupled=true
 * holds them (a checkpoint's settings set every key: gae and false were the defaults),
 * but its learner never read them: it learned from V-trace, not decoupled. They are
 * read as what the run did, so such a checkpoint loads and continues the same run. */
static void impala_as_it_ran(frl_config *saved)
{
    if (frl_cfg_choice(saved, FRL_KEY_TRAIN_ALGO) != FRL_TRAIN_ALGO_IMPALA)
        return;
    (void)frl_config_set(saved, "train.advantage", "vtrace");
    (void)frl_config_set(saved, "train.decoupled", "false");
}

/* What the saved settings said before the caller's keys went on top. alpha: the saved
 * train.per_alpha, which priorities saved before files recorded their exponent were
 * raised to; algo: the saved train.algo, named when an override of it fails. */
typedef struct saved_run {
    double alpha;
    char algo[32];
    int with_replay; /* the file holds the replay (train.save_replay as saved) */
} saved_run;

/* Settings from the file, with the caller's keys on top. */
static frl_status load_settings(frl_runtime *rt, const frl_container *c, const frl_config *over,
                                frl_config **out, char *env, saved_run *saved, char *err)
{
    char text[FRL_SETTINGS_MAX];
    frl_status st = text_of(c, "trainer.env", env, FRL_ENV_NAME_MAX, err);
    if (st == FRL_OK)
        st = text_of(c, "trainer.settings", text, sizeof text, err);
    if (st != FRL_OK)
        return st;
    /* The message the caller reports is err's, so the allocator's failure goes there. */
    if ((st = frl_config_create(out, &rt->alloc)) != FRL_OK)
        return frl_fail_msg(err, st, frl_last_error());
    if (frl_config_parse(*out, text) != FRL_OK) {
        frl_fail(err, FRL_ERR_FORMAT, "trainer.settings: %s", frl_config_last_error(*out));
        frl_config_destroy(*out);
        return FRL_ERR_FORMAT;
    }
    /* A communicator's handle belongs to the process that made it: a save leaves it out,
     * and a file that holds one (forged) must not hand a number to the MPI plugin as a
     * handle. The caller's override may still give one. */
    frl_config_unset(*out, "dist.comm");
    saved->alpha = frl_cfg_float(*out, FRL_KEY_TRAIN_PER_ALPHA);
    saved->with_replay = frl_cfg_bool(*out, FRL_KEY_TRAIN_SAVE_REPLAY);
    frl_cfg_choice_text(*out, FRL_KEY_TRAIN_ALGO, saved->algo, sizeof saved->algo);
    impala_as_it_ran(*out);
    frl_config_overlay(*out, over);
    return FRL_OK;
}

/* The saved network against the one the merged settings built: an override of its shape
 * (policy.hidden, policy.shared, the encoder) is the caller's, so it is said as such rather
 * than as a section of the wrong size further on. */
static frl_status check_network(const frl_trainer *t, const frl_container *c, char *err)
{
    const frl_section *p = frl_container_find(c, "policy.params", FRL_DTYPE_F32, -1, err);
    if (!p)
        return FRL_ERR_FORMAT;
    if (p->count == t->policy->num_params)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the run's policy was saved with %llu "
                    "parameters and the settings make %llu: a run continues with its network "
                    "(leave policy.hidden, policy.shared and the encoder's keys as saved)",
                    (unsigned long long)p->count, (unsigned long long)t->policy->num_params);
}

/* A run that had started steps on without resetting its envs, so they must have been
 * reset before the save. Checked from the file before any group is restored: a refused
 * load must leave a host's vec env (frl_trainer_load_vec) untouched. */
static frl_status check_saved_reset(const frl_container *c, int32_t g, char *err)
{
    char name[FRL_SECTION_NAME_MAX];
    if (g == 0)
        snprintf(name, sizeof name, "env.totals");
    else
        snprintf(name, sizeof name, "env.g%d.totals", (int)g);
    const frl_section *s = frl_container_find(c, name, FRL_DTYPE_I64, 4, err);
    if (!s)
        return FRL_ERR_FORMAT;
    if (((const int64_t *)s->data)[3] != 0)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_FORMAT, "trainer.counters say the run had started and env "
                    "group %d's state that its envs were never reset", (int)g);
}

static frl_status restore(frl_trainer *t, const frl_container *c, const saved_run *saved,
                          char *err)
{
    frl_status st = check_network(t, c, err);
    /* The replay before the learner: a replay of another shape is the settings' (said as
     * such, not as a learner section of another size), and R2D2 indexes its sequences by
     * the loaded blocks. A run saved without its replay refills it, whatever
     * train.save_replay says now (its next save holds the replay if that is true). */
    if (st == FRL_OK && keeps_replay(t) && saved->with_replay)
        st = frl_replay_load(t->store.replay, c, t->learner.saved_alpha, err);
    if (st == FRL_OK)
        st = restore_counters(t, c, err);
    if (st == FRL_OK)
        st = frl_policy_restore_state(t->policy, c, err);
    for (int32_t g = 0; g < t->groups && st == FRL_OK && !t->dist && t->book.pr.started; g++)
        st = check_saved_reset(c, g, err);
    /* A run that had not started, or failed in a callback, resets its envs first. */
    for (int32_t g = 0; g < t->groups && st == FRL_OK && !t->dist; g++)
        st = frl_vec_env_restore_group(t->venvs[g], g, c, t->book.pr.started != 0, err);
    return st;
}

/* The env groups a checkpoint holds: group 0's "env.*", then "env.g1.*", ... */
static int32_t saved_groups(const frl_container *c)
{
    char name[FRL_SECTION_NAME_MAX];
    int32_t g = 1;
    for (; g < FRL_MAX_GROUPS; g++) {
        snprintf(name, sizeof name, "env.g%d.totals", (int)g);
        if (!frl_container_optional(c, name, FRL_DTYPE_I64, 4))
            break;
    }
    return g;
}

/* ---- the vec env a run continues on ---- */

/* The thread's message into err without its leading "who: ", which the public function
 * adds again. */
static frl_status fail_unprefixed(char *err, frl_status st, const char *who)
{
    const char *m = frl_last_error();
    size_t k = strlen(who);
    if (strncmp(m, who, k) == 0 && m[k] == ':' && m[k + 1] == ' ')
        m += k + 2;
    return frl_fail_msg(err, st, m);
}

/* frl_trainer_load makes the built-in's vec env again. train.num_envs is the run's B:
 * the trainer's build wrote B into its settings, so the saved settings hold it however
 * the run's vec envs were made. */
static frl_status make_builtin(frl_vec_env **v, int32_t groups, frl_runtime *rt,
                               const frl_config *cfg, const char *env, char *err)
{
    if (!env[0])
        return frl_fail(err, FRL_ERR_UNKNOWN_NAME, "the run was saved on a host vec env, which "
                        "only the host can make again: continue it with frl_trainer_load_vec");
    frl_status st = frl_trainer_make_groups(v, groups, rt, env, cfg, "frl_trainer_load");
    return st == FRL_OK ? st : fail_unprefixed(err, st, "frl_trainer_load");
}

static void describe_vec(const frl_vec_env *v, char *buf, size_t size)
{
    if (frl_vec_env_builtin_name(v))
        snprintf(buf, size, "the built-in %s", frl_vec_env_builtin_name(v));
    else if (v->kind == VEC_CALLBACKS)
        snprintf(buf, size, "a host vec env (per-env callbacks)");
    else
        snprintf(buf, size, "a batch world (frl_vec_env_create_batch), whose state no "
                 "checkpoint holds");
}

/* The host's vec env must be what the run was saved on: the same built-in, or per-env
 * callbacks for a host run (only those can be saved). */
static frl_status check_kind(const frl_vec_env *v, const char *env, char *err)
{
    const char *named = frl_vec_env_builtin_name(v);
    int same = env[0] ? named && strcmp(named, env) == 0
                      : v->kind == VEC_CALLBACKS && !named;
    if (same)
        return FRL_OK;
    char have[96];
    describe_vec(v, have, sizeof have);
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the run was saved on %s, but venv is %s",
                    env[0] ? env : "host envs (per-env callbacks)", have);
}

/* A saved space, as policy_io.c wrote it (any kind: images and mixed spaces too). */
static frl_status saved_space(const frl_container *c, const char *name,
                              const frl_allocator *al, frl_space **out, char *err)
{
    const frl_section *s = frl_container_find(c, name, FRL_DTYPE_F64, -1, err);
    return s ? frl_policy_space_decode(s, al, out, err) : FRL_ERR_FORMAT;
}

static frl_status check_space(const frl_container *c, const char *name, const frl_space *have,
                              const char *what, const frl_allocator *al, char *err)
{
    frl_space *saved = NULL;
    frl_status st = saved_space(c, name, al, &saved, err);
    if (st == FRL_OK)
        st = frl_space_check_same(saved, have, "venv", what, err);
    frl_space_destroy(saved);
    return st;
}

/* The run's B, as its counters hold it; -1 (err says why) when they are missing or hold
 * no env count. */
static int64_t saved_num_envs(const frl_container *c, char *err)
{
    const frl_section *k = frl_container_find(c, "trainer.counters", FRL_DTYPE_I64, COUNTERS, err);
    int64_t B = k ? ((const int64_t *)k->data)[6] : -1;
    if (k && B < 1)
        frl_fail(err, FRL_ERR_FORMAT, "trainer.counters hold %lld envs", (long long)B);
    return B < 1 ? -1 : B;
}

/* B, the spaces and the host's state_size: what the saved arrays were made for. */
static frl_status check_sizes(const frl_vec_env *v, const frl_container *c, char *err)
{
    int64_t B = saved_num_envs(c, err);
    if (B < 0)
        return FRL_ERR_FORMAT;
    if (B != v->n)
        return frl_fail(err, FRL_ERR_SIZE, "the run was saved with %lld envs, venv has %d",
                        (long long)B, (int)v->n);
    const frl_allocator *al = &v->rt->alloc;
    frl_status st = check_space(c, "policy.obs_space", v->obs_space,
                                "the observation spaces of the saved run and venv", al, err);
    if (st == FRL_OK)
        st = check_space(c, "policy.act_space", v->act_space,
                         "the action spaces of the saved run and venv", al, err);
    if (st != FRL_OK || v->kind != VEC_CALLBACKS)
        return st;
    int64_t S = frl_vec_env_saved_state_size(c);
    if (S != v->state_dim)
        st = frl_fail(err, FRL_ERR_SIZE, "the run's host envs were saved with state_size %lld, "
                      "venv's callbacks have state_size %d", (long long)S, (int)v->state_dim);
    return st;
}

/* Everything frl_trainer_load_vec checks before it writes anything into venv. */
static frl_status check_fit(const frl_vec_env *v, frl_runtime *rt, const frl_container *c,
                            const frl_config *over, const char *env, char *err)
{
    if (v->rt != rt)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "venv belongs to another runtime");
    frl_status st = check_kind(v, env, err);
    if (st == FRL_OK)
        st = frl_trainer_check_num_envs(over, v->n, 1, err);
    if (st == FRL_OK)
        st = check_sizes(v, c, err);
    return st;
}

/* The env groups the run continues with: the file's. A host's vec env is one group; a
 * caller's override of sampler.mode or sampler.groups that asks for another count is
 * refused rather than ignored. (The count is not recomputed from the saved settings:
 * a population's sampler reads whether sampler.groups was set, and a saved file sets
 * every key.) */
static frl_status groups_to_make(const frl_container *c, const frl_config *cfg,
                                 const frl_config *over, int host, int32_t *groups, char *err)
{
    int32_t saved = saved_groups(c);
    *groups = saved;
    if (host && saved != 1)
        return frl_fail(err, FRL_ERR_UNSUPPORTED, "the run was saved with %d env groups "
                        "(sampler.groups); frl_trainer_load_vec continues runs on one vec env",
                        (int)saved);
    int asked = over && (frl_cfg_is_set(over, FRL_KEY_SAMPLER_MODE) ||
                         frl_cfg_is_set(over, FRL_KEY_SAMPLER_GROUPS));
    int32_t want = asked && !host ? frl_trainer_groups_for(cfg) : saved;
    if (want != saved)
        return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the run was saved with %d env groups, "
                        "and the settings make %d (sampler.mode, sampler.groups must stay as "
                        "saved)", (int)saved, (int)want);
    return FRL_OK;
}

/* ---- loading ---- */

/* A run continues on the envs it was saved with: its per-env arrays (discounted returns,
 * recurrent states, the ring) are B long. Said here, before anything is made, in the
 * settings' terms; only a dist.mode run may change B (its envs restart on resume). */
static frl_status check_saved_num_envs(const frl_container *c, const frl_config *cfg,
                                       char *err)
{
    int64_t saved = saved_num_envs(c, err);
    if (saved < 0)
        return FRL_ERR_FORMAT;
    int64_t asked = frl_cfg_int(cfg, FRL_KEY_TRAIN_NUM_ENVS);
    if (saved == asked || frl_cfg_choice(cfg, FRL_KEY_DIST_MODE) != FRL_DIST_MODE_NONE)
        return FRL_OK;
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "the run was saved with train.num_envs %lld "
                    "and the settings ask for %lld: a run continues on the envs it was saved "
                    "with (leave train.num_envs unset, or start a new run)",
                    (long long)saved, (long long)asked);
}

typedef struct load_job {
    const char *who;
    frl_vec_env *venv;          /* the host's (frl_trainer_load_vec), or NULL: a built-in's */
    const frl_config *over;     /* the caller's keys */
} load_job;

/* A build refused after the caller changed train.algo most often objects to a saved key
 * the old algorithm used (PPO's train.advantage=gae under IMPALA): the message says
 * that the value is the saved run's, which the caller did not write. */
static frl_status fail_build(char *err, frl_status st, const load_job *j, const char *algo,
                             const saved_run *saved)
{
    (void)fail_unprefixed(err, st, j->who);
    if (!j->over || !frl_cfg_is_set(j->over, FRL_KEY_TRAIN_ALGO) || !strcmp(algo, saved->algo))
        return st;
    char why[FRL_ERRMSG_SIZE];
    snprintf(why, sizeof why, "%s", err);
    return frl_fail(err, st, "train.algo=%s overrides the saved train.algo=%s, whose other "
                    "saved settings stay unless overridden too: %s", algo, saved->algo, why);
}

/* "key=value (saved: old)" for the first few keys over sets to other values than the
 * saved settings, into buf; the count of such keys. */
static int changed_keys(const frl_container *c, const frl_config *over, char *buf, size_t size)
{
    char text[FRL_SETTINGS_MAX], ignored[FRL_ERRMSG_SIZE], mine[256], theirs[256];
    frl_config *saved = NULL;
    int n = 0;
    buf[0] = '\0';
    if (text_of(c, "trainer.settings", text, sizeof text, ignored) != FRL_OK ||
        frl_config_create(&saved, NULL) != FRL_OK)
        return 0;
    if (frl_config_parse(saved, text) == FRL_OK)
        for (int32_t k = 0; k < FRL_KEY_COUNT; k++) {
            const char *name = frl_key_defs[k].name;
            if (!frl_cfg_is_set(over, (frl_key)k) ||
                frl_config_get_text(over, name, mine, sizeof mine) != FRL_OK ||
                frl_config_get_text(saved, name, theirs, sizeof theirs) != FRL_OK ||
                !strcmp(mine, theirs))
                continue;
            size_t at = strlen(buf);
            if (n++ < 3 && at < size)
                snprintf(buf + at, size - at, "%s%s=%.60s (saved: %.60s)", at ? ", " : "",
                         name, mine, theirs[0] ? theirs : "empty");
        }
    size_t at = strlen(buf);
    if (n > 3 && at < size)
        snprintf(buf + at, size - at, " and %d more", n - 3);
    frl_config_destroy(saved);
    return n;
}

/* A restore that found no section the build asked for, after the caller changed the
 * settings (train.algo=ppo over a saved ES run, elastic.widths over a plain one): the
 * change made a trainer whose state the run never saved. Said as the caller's settings,
 * not as a corrupt file. */
static frl_status blame_overrides(const frl_container *c, const frl_config *over,
                                  frl_status st, char *err)
{
    char keys[512], why[FRL_ERRMSG_SIZE];
    if (st != FRL_ERR_FORMAT || !over || !strstr(err, "no section") ||
        changed_keys(c, over, keys, sizeof keys) == 0)
        return st;
    snprintf(why, sizeof why, "%s", err);
    return frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "%s: the settings changed on resume, %s, "
                    "make a trainer whose state the run did not save (leave them as saved, or "
                    "start a new run)", why, keys);
}

static frl_status load_from(frl_trainer **out, frl_runtime *rt, const frl_container *c,
                            const load_job *j, char *err)
{
    char env[FRL_ENV_NAME_MAX];
    frl_config *cfg;
    saved_run saved;
    frl_status st = load_settings(rt, c, j->over, &cfg, env, &saved, err);
    if (st != FRL_OK)
        return st;
    frl_vec_env *venv[FRL_MAX_GROUPS] = {j->venv};
    int32_t groups = 1;
    st = groups_to_make(c, cfg, j->over, j->venv != NULL, &groups, err);
    if (st == FRL_OK && !j->venv)
        st = check_saved_num_envs(c, cfg, err);
    if (st == FRL_OK && j->venv)
        st = check_fit(j->venv, rt, c, j->over, env, err);
    else if (st == FRL_OK)
        st = make_builtin(venv, groups, rt, cfg, env, err);
    if (st != FRL_OK) {
        frl_config_destroy(cfg);
        return st;
    }
    char algo[32]; /* the build takes cfg, failing or not */
    frl_cfg_choice_text(cfg, FRL_KEY_TRAIN_ALGO, algo, sizeof algo);
    if ((st = frl_trainer_build(out, rt, venv, groups, !j->venv, cfg, env, j->who)) != FRL_OK)
        return fail_build(err, st, j, algo, &saved);
    /* The vec env comes last: a host's set_state is called only once the rest loaded.
     * Under dist.mode every rank must have loaded the same file (each reads its own). */
    (*out)->learner.saved_alpha = saved.alpha;
    (*out)->learner.saved_replay = saved.with_replay;
    st = restore(*out, c, &saved, err);
    if (st == FRL_OK && (*out)->dist)
        st = frl_trainer_dist_check_resume(*out, err);
    if (st != FRL_OK) {
        frl_trainer_destroy(*out);
        *out = NULL;
        return blame_overrides(c, j->over, st, err);
    }
    (*out)->steps_at_start = (*out)->book.pr.env_steps;
    (*out)->resumed = 1;
    frl_trainer_refresh_progress(*out);
    return FRL_OK;
}

/* Read path, check that it holds a trainer checkpoint, and load it. */
static frl_status load_path(frl_trainer **out, frl_runtime *rt, const char *path,
                            const load_job *j)
{
    char err[FRL_ERRMSG_SIZE] = "";
    frl_container *c;
    frl_status st = frl_container_read(&c, path, &rt->alloc, err);
    if (st != FRL_OK)
        return frl_fail(NULL, st, "%s: %s", j->who, err);
    char kind[16];
    st = text_of(c, "kind", kind, sizeof kind, err);
    if (st == FRL_OK && strcmp(kind, "trainer") != 0)
        st = frl_fail(err, FRL_ERR_FORMAT, "%s holds a %s, not a trainer checkpoint", path, kind);
    if (st == FRL_OK)
        st = load_from(out, rt, c, j, err);
    frl_container_free(c);
    return st == FRL_OK ? st : frl_fail(NULL, st, "%s: %s", j->who, err);
}

FRL_API frl_status frl_trainer_load(frl_trainer **out, frl_runtime *rt, const char *path,
                                    const frl_config *cfg)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !path)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_load: %s is NULL",
                        !out ? "out" : !rt ? "runtime" : "path");
    load_job j = {"frl_trainer_load", NULL, cfg};
    return load_path(out, rt, path, &j);
}

FRL_API frl_status frl_trainer_load_vec(frl_trainer **out, frl_runtime *rt, const char *path,
                                        frl_vec_env *venv, const frl_config *cfg)
{
    if (out)
        *out = NULL;
    if (!out || !rt || !path || !venv)
        return frl_fail(NULL, FRL_ERR_NULL, "frl_trainer_load_vec: %s is NULL",
                        !out ? "out" : !rt ? "runtime" : !path ? "path" : "venv");
    load_job j = {"frl_trainer_load_vec", venv, cfg};
    return load_path(out, rt, path, &j);
}
