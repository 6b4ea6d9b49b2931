/* The trainer's side of dist.mode=ddppo (doc/distributed.md): opening the ranks'
 * communicator, the checks of what can run distributed, and the exchange after each
 * update of what every rank must agree on (the observation normaliser's statistics by
 * env group, the episodes that decide a target return). The learner's side is
 * algo/ppo_groups.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dist.h"
#include "io/container.h"
#include "io/crc32c.h"
#include "trainer/trainer_dist.h"

/* episodes, window episodes, window return and length sums, the rollout's steps,
 * rollouts cut short so far, a stop request */
enum { PROGRESS = 7 };

static frl_status check_supported(frl_trainer *t, const char *who)
{
    const char *algo = t->learner.ops->name;
    if (strcmp(algo, "ppo") && strcmp(algo, "impala") && strcmp(algo, "a2c"))
        return frl_fail(t->err, FRL_ERR_UNSUPPORTED, "%s: dist.mode=ddppo trains train.algo=ppo, "
                        "impala or a2c, not %s", who, algo);
    if (frl_cfg_choice(t->cfg, FRL_KEY_SAMPLER_MODE) != FRL_SAMPLER_MODE_SYNC)
        return frl_fail(t->err, FRL_ERR_UNSUPPORTED, "%s: dist.mode=ddppo samples with "
                        "sampler.mode=sync (every rank's update waits for all ranks' rollouts)",
                        who);
    return FRL_OK;
}

frl_status frl_trainer_dist_open(frl_trainer *t, const char *who)
{
    if (frl_cfg_choice(t->cfg, FRL_KEY_DIST_MODE) == FRL_DIST_MODE_NONE)
        return FRL_OK;
    frl_status st = check_supported(t, who);
    char arithmetic[64];
    snprintf(arithmetic, sizeof arithmetic, "the %s kernels", t->policy->k->name);
    const frl_dist_run run = {arithmetic, t->env_name, t->policy->obs_space,
                              t->policy->act_space, (int64_t)t->policy->num_params};
    if (st == FRL_OK)
        st = frl_dist_open(&t->dist, &t->rt->alloc, t->cfg, &run, who, t->err);
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, t->err);
    int64_t G = frl_cfg_int(t->cfg, FRL_KEY_DIST_GROUP_ENVS);
    t->dist_group_envs = (int32_t)(G > 0 ? G : t->B);
    size_t w = t->policy->obs_norm ? (size_t)t->policy->norm.width : 0;
    t->dist_record = PROGRESS + (size_t)(t->B / t->dist_group_envs) * (1 + 2 * w);
    t->dist_send = frl_alloc(&t->rt->alloc, sizeof(double) * t->dist_record * (size_t)(t->dist->size + 1), 64);
    if (!t->dist_send)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    t->dist_recv = t->dist_send + t->dist_record;
    t->dist_return = t->dist_length = NAN; /* no episode exchanged yet */
    frl_log(t->rt, FRL_LOG_INFO, "%s: dist.mode=ddppo: rank %d of %d, envs %lld-%lld of %lld "
            "in groups of %d; the policy's %lld parameters", who, (int)t->dist->rank,
            (int)t->dist->size, (long long)t->dist->rank * t->B,
            (long long)(t->dist->rank + 1) * t->B - 1, (long long)t->dist->size * t->B,
            (int)t->dist_group_envs, (long long)t->policy->num_params);
    t->dist_bytes0 = t->dist_mark = t->dist->bytes;
    t->dist_exchanges0 = t->dist->exchanges;
    double share = frl_cfg_float(t->cfg, FRL_KEY_DIST_PREEMPT);
    if (share > 0 && t->dist->size > 1) {
        t->dist_need = (int32_t)ceil(share * t->dist->size);
        t->dist_min_steps = t->T >= 4 ? t->T / 4 : 1;
    }
    return FRL_OK;
}

/* ---- DD-PPO's preemption (dist.preempt) ---- */

static frl_status rollout_begins(void *owner)
{
    frl_trainer *t = owner;
    return frl_dist_notices_open(t->dist, t->book.pr.updates, t->err);
}

/* Stop once enough other ranks have finished (this one has not) and a quarter of the
 * rollout is in. */
static frl_status step_done(void *owner, int32_t steps, int *stop)
{
    frl_trainer *t = owner;
    *stop = steps >= t->dist_min_steps && steps < t->T &&
            frl_dist_notices_arrived(t->dist) >= t->dist_need;
    t->dist_preempted += *stop;
    return FRL_OK;
}

/* Tell the others; a cut rollout's later steps carry no return statistics. */
static frl_status rollout_ends(void *owner, int32_t steps)
{
    frl_trainer *t = owner;
    if (t->book.rn_steps && steps < t->T) {
        size_t groups = (size_t)(t->B / t->dist_group_envs);
        memset(t->book.rn_steps + (size_t)steps * groups * 3, 0,
               sizeof(double) * (size_t)(t->T - steps) * groups * 3);
    }
    return frl_dist_notice_send(t->dist, t->book.pr.updates, t->err);
}

void frl_trainer_dist_host(frl_trainer *t, frl_sampler_host *h)
{
    h->env_first = frl_trainer_env_first(t);
    h->ranks = frl_trainer_ranks(t);
    if (t->dist)
        h->stop = &t->dist_stop;
    if (!t->dist_need)
        return;
    h->rollout_begins = rollout_begins;
    h->step_done = step_done;
    h->rollout_ends = rollout_ends;
}

void frl_trainer_dist_report(frl_trainer *t, int64_t updates)
{
    int64_t bytes = t->dist->bytes - t->dist_bytes0, ex = t->dist->exchanges - t->dist_exchanges0;
    t->dist_bytes0 = t->dist->bytes;
    t->dist_exchanges0 = t->dist->exchanges;
    if (updates <= 0 || t->dist->rank != 0)
        return;
    frl_log(t->rt, FRL_LOG_INFO, "dist.mode=ddppo: %lld updates on %d ranks: %.1f KiB sent and "
            "received per update by each rank in %.1f exchanges; rollouts cut short by "
            "preemption (dist.preempt), all ranks: %lld", (long long)updates,
            (int)t->dist->size, (double)bytes / (double)updates / 1024.0,
            (double)ex / (double)updates, (long long)t->dist_preempted_all);
}

void frl_trainer_dist_close(frl_trainer *t)
{
    frl_free(&t->rt->alloc, t->dist_send);
    frl_free(&t->rt->alloc, t->dist_rewards);
    frl_dist_close(t->dist, &t->rt->alloc);
    t->dist = NULL;
}

frl_status frl_trainer_dist_book(frl_trainer *t, const char *who)
{
    if (!t->dist || !t->book.reward_norm)
        return FRL_OK;
    if (frl_rollout_defer_rewards(&t->book, &t->rt->alloc, t->B, t->T, t->dist_group_envs) != FRL_OK)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    size_t doubles = (size_t)t->T * (size_t)(t->B / t->dist_group_envs) * 3;
    t->dist_rewards = frl_alloc(&t->rt->alloc, sizeof(double) * doubles * (size_t)t->dist->size, 64);
    return t->dist_rewards ? FRL_OK : frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
}

frl_status frl_trainer_dist_before_learn(frl_trainer *t, int32_t slot)
{
    char phase[96];
    if (t->dist_need) {
        snprintf(phase, sizeof phase, "the end of the rollouts of update %lld",
                 (long long)t->book.pr.updates);
        frl_status st = frl_dist_notices_close(t->dist, phase, t->err);
        if (st != FRL_OK)
            return st;
    }
    if (!t->dist_rewards)
        return FRL_OK;
    snprintf(phase, sizeof phase, "the return normaliser's exchange before update %lld",
             (long long)t->book.pr.updates);
    size_t bytes = sizeof(double) * (size_t)t->T * (size_t)(t->B / t->dist_group_envs) * 3;
    frl_status st = frl_dist_allgather(t->dist, t->book.rn_steps, bytes, t->dist_rewards, phase,
                                       t->err);
    if (st == FRL_OK)
        frl_rollout_scale_rewards(&t->book, t->ring, slot, t->dist_rewards, t->dist->size);
    return st;
}

int64_t frl_trainer_env_first(const frl_trainer *t)
{
    return t->dist ? (int64_t)t->dist->rank * t->B : 0;
}

int32_t frl_trainer_ranks(const frl_trainer *t)
{
    return t->dist ? t->dist->size : 1;
}

/* ---- after each update ---- */

/* Group j's (count, mean[w], m2[w]) of the slot's observations: its envs' rows in step
 * order, each feature's mean first, then the squared deviations (as frl_obsnorm_update
 * does for a whole rollout). */
static void group_obs_moments(const frl_trainer *t, const float *x, int32_t T, int32_t j,
                              double *out)
{
    const frl_obsnorm *nm = &t->policy->norm;
    int32_t w = nm->width, G = t->dist_group_envs;
    size_t sw = (size_t)nm->stride;
    double n = (double)T * G, *mean = out + 1, *m2 = out + 1 + w;
    out[0] = n;
    x += nm->at; /* a mixed row's vector part */
    for (int32_t i = 0; i < w; i++) {
        double s = 0, ss = 0;
        for (int32_t s_t = 0; s_t < T; s_t++)
            for (int32_t b = 0; b < G; b++)
                s += x[((size_t)s_t * t->B + (size_t)(j * G + b)) * sw + (size_t)i];
        mean[i] = s / n;
        for (int32_t s_t = 0; s_t < T; s_t++)
            for (int32_t b = 0; b < G; b++) {
                double d = x[((size_t)s_t * t->B + (size_t)(j * G + b)) * sw + (size_t)i] -
                           mean[i];
                ss += d * d;
            }
        m2[i] = ss;
    }
}

/* This rank's episodes, and the sums over its latest ceil(100 / ranks): the ranks'
 * windows together are about the last 100 episodes, as one process's metrics are. */
static void fill_progress(const frl_trainer *t, int32_t steps, double *out)
{
    const frl_rollout_book *k = &t->book;
    int64_t share = (FRL_RECENT_EPISODES + t->dist->size - 1) / t->dist->size;
    int64_t n = k->pr.episodes < share ? k->pr.episodes : share;
    double sr = 0, sl = 0;
    for (int64_t e = k->pr.episodes - n; e < k->pr.episodes; e++) {
        sr += k->recent_return[e % FRL_RECENT_EPISODES];
        sl += k->recent_length[e % FRL_RECENT_EPISODES];
    }
    out[0] = (double)k->pr.episodes;
    out[1] = (double)n;
    out[2] = sr;
    out[3] = sl;
    out[4] = steps;
    out[5] = (double)t->dist_preempted;
    out[6] = atomic_load(&t->stop);
}

/* acc (count, mean[w], m2[w]) += g's, feature by feature (Chan et al.). */
static void merge_obs(double *acc, const double *g, int32_t w)
{
    double na = acc[0], nb = g[0], n = na + nb;
    if (na == 0) {
        memcpy(acc, g, sizeof(double) * (size_t)(1 + 2 * w));
        return;
    }
    for (int32_t i = 0; i < w; i++) {
        double d = g[1 + i] - acc[1 + i];
        acc[1 + i] += d * nb / n;
        acc[1 + w + i] += g[1 + w + i] + d * d * na * nb / n;
    }
    acc[0] = n;
}

/* Every group's statistics, in global group order, into the running normaliser. */
static void apply_obs(frl_trainer *t)
{
    int32_t w = t->policy->norm.width, lg = t->B / t->dist_group_envs;
    size_t rec = (size_t)(1 + 2 * w);
    double *acc = t->dist_send + PROGRESS; /* this rank's records are sent: reuse */
    memset(acc, 0, sizeof(double) * rec);
    for (int32_t r = 0; r < t->dist->size; r++)
        for (int32_t j = 0; j < lg; j++)
            merge_obs(acc, t->dist_recv + (size_t)r * t->dist_record + PROGRESS + (size_t)j * rec, w);
    frl_obsnorm_merge(&t->policy->norm, acc[0], acc + 1, acc + 1 + w);
    frl_obsnorm_freeze(&t->policy->norm);
    t->policy->dev_norm_stale = 1;
}

/* The episodes of all ranks; and under preemption the env steps, which this rank
 * counted as if every rank had collected its own steps. */
static void apply_progress(frl_trainer *t, int32_t steps)
{
    double ep = 0, n = 0, sr = 0, sl = 0, all = 0, cut = 0, stop = 0;
    for (int32_t r = 0; r < t->dist->size; r++) {
        const double *p = t->dist_recv + (size_t)r * t->dist_record;
        ep += p[0];
        n += p[1];
        sr += p[2];
        sl += p[3];
        all += p[4];
        cut += p[5];
        stop += p[6];
    }
    if (stop > 0) { /* every rank stops before the same update */
        atomic_store(&t->stop, 0);
        atomic_store(&t->dist_stop, 1);
    }
    t->dist_preempted_all = (int64_t)cut;
    t->book.pr.env_steps += ((int64_t)all - (int64_t)steps * t->dist->size) * t->B;
    t->dist_episodes = (int64_t)ep + t->dist_episodes_base;
    t->dist_window = (int64_t)n;
    t->dist_return = n > 0 ? sr / n : NAN;
    t->dist_length = n > 0 ? sl / n : NAN;
}

frl_status frl_trainer_dist_after_learn(frl_trainer *t, int32_t slot)
{
    int32_t lg = t->B / t->dist_group_envs, steps = t->ring->slot[slot].steps;
    steps = steps > 0 ? steps : t->T;
    double *send = t->dist_send;
    fill_progress(t, steps, send);
    if (t->policy->obs_norm) {
        const float *x = frl_ring_at(t->ring, slot, FRL_RING_OBSERVATIONS);
        size_t rec = (size_t)(1 + 2 * t->policy->norm.width);
        for (int32_t j = 0; j < lg; j++)
            group_obs_moments(t, x, steps, j, send + PROGRESS + (size_t)j * rec);
    }
    char phase[96];
    snprintf(phase, sizeof phase, "the normaliser and episode exchange after update %lld",
             (long long)t->book.pr.updates);
    frl_status st = frl_dist_allgather(t->dist, send, sizeof(double) * t->dist_record,
                                       t->dist_recv, phase, t->err);
    if (st != FRL_OK)
        return st;
    if (t->policy->obs_norm)
        apply_obs(t);
    apply_progress(t, steps);
    t->dist_update_bytes = t->dist->bytes - t->dist_mark;
    t->dist_mark = t->dist->bytes;
    return FRL_OK;
}

/* ---- values every rank must share ---- */

/* v of every rank against rank 0's: 0 when all agree, else the first rank r that
 * differs, with *vr its value and *v0 rank 0's (an all-gather; FRL_ERR_IO in *st when
 * it fails, FRL_ERR_NOMEM likewise). */
static int32_t first_differing(frl_trainer *t, int64_t v, const char *phase, int64_t *v0,
                               int64_t *vr, frl_status *st)
{
    frl_dist *d = t->dist;
    int64_t *all = frl_alloc(&t->rt->alloc, sizeof(int64_t) * ((size_t)d->size + 1), 64);
    *st = all ? FRL_OK : frl_fail(t->err, FRL_ERR_NOMEM, "out of memory");
    if (!all)
        return 0;
    all[d->size] = v;
    *st = frl_dist_allgather(d, &all[d->size], sizeof(int64_t), all, phase, t->err);
    int32_t r = 1;
    while (*st == FRL_OK && r < d->size && all[r] == all[0])
        r++;
    r = *st == FRL_OK && r < d->size ? r : 0;
    *v0 = *st == FRL_OK ? all[0] : 0;
    *vr = *st == FRL_OK ? all[r] : 0;
    frl_free(&t->rt->alloc, all);
    return r;
}

/* The seed is the runtime's (runtime.seed) plus train.seed_offset: a host whose ranks'
 * runtimes differ passed the settings check (which sees the trainer's settings), and its
 * ranks started from different parameters, then applied the same summed gradients to
 * them: each trained its own policy, with no error. */
frl_status frl_trainer_dist_check_seed(frl_trainer *t, const char *who)
{
    int64_t s0 = 0, sr = 0;
    frl_status st;
    int32_t r = first_differing(t, (int64_t)t->seed, "the seed check at start", &s0, &sr, &st);
    if (st != FRL_OK)
        return frl_fail(NULL, st, "%s: %s", who, t->err);
    if (r > 0)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: rank %d's seed is %llu, rank 0's "
                        "%llu (the runtime's runtime.seed plus train.seed_offset): every rank "
                        "needs the same seed (the ranks' policies would start apart; each rank's "
                        "envs take their own streams anyway)", who, (int)r,
                        (unsigned long long)sr, (unsigned long long)s0);
    return FRL_OK;
}

/* ---- the train call's budget ---- */

/* The ranks' budgets must agree: the update count, the learning rate's annealing over it
 * and the last update follow from total_steps. A rank given another one annealed at
 * another rate (the ranks' parameters drifting apart unseen), then finished on its own
 * while the others waited out dist.timeout at an exchange it never came to. The
 * exchange is left out of the traffic reported per update. */
frl_status frl_trainer_dist_check_budget(frl_trainer *t, int64_t total_steps)
{
    frl_dist *d = t->dist;
    int64_t s0 = 0, sr = 0;
    frl_status st;
    int32_t r = first_differing(t, total_steps, "the train call's budget check", &s0, &sr, &st);
    if (st == FRL_ERR_NOMEM)
        st = frl_fail(t->err, st, "frl_trainer_train: out of memory");
    if (r > 0)
        st = frl_fail(t->err, FRL_ERR_INVALID_ARGUMENT, "frl_trainer_train: the ranks' "
                      "total_steps differ: rank %d's is %lld env steps, rank 0's %lld "
                      "(every rank must train to the same total)", (int)r, (long long)sr,
                      (long long)s0);
    t->dist_bytes0 = t->dist_mark = d->bytes;
    t->dist_exchanges0 = d->exchanges;
    return st;
}

/* ---- resuming: every rank from the same checkpoint ---- */

/* A resumed rank's state, as CRC32Cs of what it restored: the parameters, the optimiser
 * (its sections and step count), the observation normaliser, and the counters every rank
 * shares (not the episodes, which rank 0 alone keeps). */
enum { DIGESTS = 4, LEARNER_SECTIONS = 32 };
static const char *const digest_part[DIGESTS] = {"parameters", "optimiser state",
                                                 "observation normaliser", "counters"};

static uint32_t optimiser_digest(const frl_trainer *t)
{
    frl_section s[LEARNER_SECTIONS];
    int32_t n = 0;
    int64_t steps = 0;
    t->learner.ops->save(&t->learner, s, &n, &steps);
    uint32_t crc = frl_crc32c(0, &steps, sizeof steps);
    for (int32_t i = 0; i < n; i++)
        crc = frl_crc32c(crc, s[i].data, (size_t)s[i].count * frl_dtype_size(s[i].dtype));
    return crc;
}

static void resume_digest(const frl_trainer *t, uint32_t d[DIGESTS])
{
    const frl_policy *p = t->policy;
    const frl_rollout_book *b = &t->book;
    d[0] = frl_crc32c(0, p->params, sizeof(float) * p->num_params);
    d[1] = optimiser_digest(t);
    d[2] = 0;
    if (p->obs_norm) {
        size_t w = (size_t)p->norm.width;
        d[2] = frl_crc32c(0, &p->norm.count, sizeof p->norm.count);
        d[2] = frl_crc32c(d[2], p->norm.mean, sizeof(double) * w);
        d[2] = frl_crc32c(d[2], p->norm.m2, sizeof(double) * w);
    }
    const int64_t k[3] = {b->pr.env_steps, b->pr.updates, b->pr.rollout_steps};
    const double rn[3] = {b->rn_count, b->rn_mean, b->rn_m2};
    d[3] = frl_crc32c(0, k, sizeof k);
    d[3] = frl_crc32c(d[3], rn, sizeof rn);
    d[3] = frl_crc32c(d[3], &b->rn_scale, sizeof b->rn_scale);
    d[3] = frl_crc32c(d[3], &t->seed, sizeof t->seed);
}

/* The ranks whose digest differs from rank 0's, as "1, 3" (and the first's part). */
static int32_t differing_ranks(const frl_dist *d, const uint32_t *all, char *list, size_t size,
                               int *part)
{
    int32_t count = 0;
    size_t used = 0;
    list[0] = '\0';
    for (int32_t r = 1; r < d->size; r++) {
        const uint32_t *x = all + (size_t)r * DIGESTS;
        int q = 0;
        while (q < DIGESTS && x[q] == all[q])
            q++;
        if (q == DIGESTS)
            continue;
        if (count++ == 0)
            *part = q;
        if (used + 16 < size)
            used += (size_t)snprintf(list + used, size - used, "%s%d", used ? ", " : "", (int)r);
    }
    return count;
}

frl_status frl_trainer_dist_check_resume(frl_trainer *t, char *err)
{
    frl_dist *d = t->dist;
    uint32_t *all = frl_alloc(&t->rt->alloc, sizeof(uint32_t) * DIGESTS * ((size_t)d->size + 1),
                              64);
    if (!all)
        return frl_fail(err, FRL_ERR_NOMEM, "out of memory");
    uint32_t *mine = all + (size_t)d->size * DIGESTS;
    resume_digest(t, mine);
    frl_status st = frl_dist_allgather(d, mine, sizeof(uint32_t) * DIGESTS, all,
                                       "the checkpoint check after loading", err);
    char list[96];
    int part = 0;
    int32_t n = st == FRL_OK ? differing_ranks(d, all, list, sizeof list, &part) : 0;
    if (n > 0)
        st = frl_fail(err, FRL_ERR_INVALID_ARGUMENT, "rank%s %s resumed from another checkpoint "
                      "than rank 0 (%s %s differ%s): every rank must load the same file",
                      n > 1 ? "s" : "", list, n > 1 ? "the first's" : "its", digest_part[part],
                      part == 0 || part == 3 ? "" : "s");
    frl_free(&t->rt->alloc, all);
    return st;
}

int frl_trainer_dist_writes(const frl_trainer *t)
{
    return !t->dist || t->dist->rank == 0;
}
