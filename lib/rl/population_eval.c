/* frl_population_evaluate: episodes of many members over vec envs.
 *
 * Each env (a slot) runs one (member, episode) job at a time and takes the next pending
 * job when its episode ends. Every step only the slots whose episodes are running go
 * through inference, as one batch of compacted rows each naming its member
 * (frl_population_act), so members with short episodes free their envs for the others
 * and nothing acts for an env that is resetting or idle. Autoreset is next-step: after
 * an episode ends, the env's next step is its reset (its action ignored), so a job
 * taken then starts acting one step later.
 *
 * With two vec envs (groups) the work is pipelined: while one group's envs step on one
 * thread, the other group's actions are computed on another (two pool tasks, each
 * running its nested pool calls inline), as Such et al. overlap CPU stepping with
 * inference. The jobs are shared; each group's bookkeeping runs on the calling thread
 * between the halves, so nothing is written by two threads. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/table.h"
#include "env/vec_step.h"
#include "rl/population.h"

/* 0.3's table, the first: every field up to update_obs_norm. */
#define EVAL_ARGS_V1_SIZE (offsetof(frl_population_eval_args, update_obs_norm) + sizeof(int32_t))

enum slot_state { SLOT_IDLE, SLOT_RESETTING, SLOT_LIVE, SLOT_DRAINING };
enum { MAX_GROUPS = 2 };

typedef struct eval_slot {
    int32_t state;
    int32_t member;
    int32_t length;
    double ret;
} eval_slot;

typedef struct eval_group {
    frl_vec_env *v;
    int32_t n;            /* envs */
    eval_slot *slot;      /* [n] */
    int32_t *rows;        /* [n]: the live slots this step */
    int32_t *members;     /* [n]: their members */
    float *obs;           /* [n x obs_w]: their observations */
    unsigned char *act;   /* [n x action bytes]: their actions */
    uint8_t *active;      /* [n]: envs with an episode to run (the rest are not stepped) */
    int32_t k;            /* rows acted for this step */
    uint64_t streams;     /* its row i samples from stream streams + i: the envs of the
                           * groups before it, so two groups never share a stream */
    uint64_t step;
    frl_status st;        /* of the group's last act or step */
    /* its message, taken on the thread that ran it: the last error is per thread, and
     * a pipelined half may run on a pool worker */
    char msg[FRL_ERRMSG_SIZE];
} eval_group;

typedef struct pop_run {
    frl_population *pop;
    const char *who;  /* the public call (or the trainer's) that messages begin with */
    atomic_int *stop; /* a trainer's stop request, or NULL */
    int32_t groups;
    eval_group g[MAX_GROUPS];
    frl_population_eval_args a;
    int64_t next_job;     /* jobs are member-major: job j is member j / episodes */
    int64_t jobs, jobs_left;
    double *ret_sum;      /* [P] */
    double *len_sum;      /* [P] */
    int64_t *steps;       /* [P] */
    void *block;
    int64_t env_steps;
    int64_t stalled;      /* acts in a row with no env running an episode */
    /* update_obs_norm: the normaliser's running statistics as they were, put back when
     * the evaluation fails (its count, then mean and m2 [width] each) */
    double *norm_before;
} pop_run;

static size_t action_bytes(const frl_policy *p)
{
    return p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
}

static frl_status check_spaces(pop_run *r, const frl_vec_env *v)
{
    const frl_policy *p = r->pop->policy;
    frl_status st = frl_space_check_same(p->obs_space, frl_vec_env_observation_space(v), r->who,
                                         "the observation spaces of the population and the "
                                         "vec env", r->pop->err);
    if (st == FRL_OK)
        st = frl_space_check_same(p->act_space, frl_vec_env_action_space(v), r->who,
                                  "the action spaces of the population and the vec env",
                                  r->pop->err);
    return st;
}

static frl_status read_args(pop_run *r, const frl_population_eval_args *args)
{
    frl_population_eval_args_init(&r->a);
    frl_status st = frl_copy_table(&r->a, sizeof r->a, args, EVAL_ARGS_V1_SIZE, r->who, "args",
                                   "frl_population_eval_args_init");
    if (st != FRL_OK)
        return frl_fail_msg(r->pop->err, st, frl_last_error());
    if (r->a.episodes < 1 || (r->a.deterministic != 0 && r->a.deterministic != 1) ||
        r->a.max_episode_steps < 0 || r->a.max_steps < 0)
        return frl_fail(r->pop->err, FRL_ERR_RANGE, "%s: args->episodes %d (>= 1), "
                        "deterministic %d (0 or 1), max_episode_steps %lld or max_steps %lld "
                        "(>= 0) is out of range", r->who, (int)r->a.episodes,
                        (int)r->a.deterministic, (long long)r->a.max_episode_steps,
                        (long long)r->a.max_steps);
    for (int32_t g = 0; g < r->groups; g++)
        if ((st = check_spaces(r, r->g[g].v)) != FRL_OK)
            return st;
    if (r->a.update_obs_norm && !r->pop->policy->obs_norm)
        return frl_fail(r->pop->err, FRL_ERR_INVALID_ARGUMENT, "%s: args->update_obs_norm is "
                        "set but the policy has no normaliser (policy.obs_norm=false)", r->who);
    return FRL_OK;
}

static size_t group_bytes(const frl_policy *p, size_t n)
{
    return sizeof(eval_slot) * n + sizeof(int32_t) * 2 * n + sizeof(float) * n * (size_t)p->obs_w +
           action_bytes(p) * n + n + 64;
}

/* A group's arrays from *at (each starts 8-byte aligned: the sizes keep it so). */
static void carve_group(eval_group *g, const frl_policy *p, unsigned char **at)
{
    size_t n = (size_t)g->n;
    g->slot = (eval_slot *)(void *)*at;
    g->obs = (float *)(g->slot + n);
    g->rows = (int32_t *)(g->obs + n * (size_t)p->obs_w);
    g->members = g->rows + n;
    g->act = (unsigned char *)(g->members + n);
    g->active = g->act + action_bytes(p) * n;
    *at += (group_bytes(p, n) + 63) / 64 * 64;
}

/* Doubles that keep the normaliser's running statistics (update_obs_norm), or 0. */
static size_t norm_doubles(const pop_run *r)
{
    return r->a.update_obs_norm ? 1 + 2 * (size_t)r->pop->policy->norm.width : 0;
}

static size_t run_bytes(const pop_run *r)
{
    const frl_policy *p = r->pop->policy;
    size_t P = (size_t)r->pop->members;
    size_t bytes = (sizeof(double) * 2 * P + sizeof(int64_t) * P + 63) / 64 * 64;
    for (int32_t g = 0; g < r->groups; g++)
        bytes += (group_bytes(p, (size_t)r->g[g].n) + 63) / 64 * 64;
    return bytes + sizeof(double) * norm_doubles(r);
}

/* The population's kept block, grown to at least bytes. */
static frl_status take_block(frl_population *pop, size_t bytes, const char *who)
{
    if (bytes <= pop->eval_bytes)
        return FRL_OK;
    void *b = frl_alloc(&pop->rt->alloc, bytes, 64);
    if (!b)
        return frl_fail(pop->err, FRL_ERR_NOMEM, "%s: out of memory for %d members", who,
                        (int)pop->members);
    frl_free(&pop->rt->alloc, pop->eval_block);
    pop->eval_block = b;
    pop->eval_bytes = bytes;
    return FRL_OK;
}

frl_status frl_population_reserve_eval(frl_population *pop, frl_vec_env *const *venvs,
                                       int32_t count, int update_obs_norm)
{
    pop_run r = {.pop = pop, .groups = count};
    for (int32_t g = 0; g < count; g++)
        r.g[g] = (eval_group){.v = venvs[g], .n = frl_vec_env_num_envs(venvs[g])};
    r.a.update_obs_norm = update_obs_norm;
    return take_block(pop, run_bytes(&r), "frl_population_evaluate");
}

static frl_status alloc_run(pop_run *r)
{
    size_t P = (size_t)r->pop->members;
    size_t bytes = run_bytes(r);
    frl_status st = take_block(r->pop, bytes, r->who);
    if (st != FRL_OK)
        return st;
    r->block = r->pop->eval_block;
    memset(r->block, 0, bytes);
    r->ret_sum = r->block;
    r->len_sum = r->ret_sum + P;
    r->steps = (int64_t *)(r->len_sum + P);
    unsigned char *at = (unsigned char *)r->block +
                        (sizeof(double) * 2 * P + sizeof(int64_t) * P + 63) / 64 * 64;
    for (int32_t g = 0; g < r->groups; g++)
        carve_group(&r->g[g], r->pop->policy, &at);
    r->norm_before = norm_doubles(r) ? (double *)(void *)at : NULL;
    r->jobs = (int64_t)P * r->a.episodes;
    r->jobs_left = r->jobs;
    return FRL_OK;
}

/* Slot i of g takes the next pending job, if any, in state (LIVE right after a reset of
 * the vec env, RESETTING after an episode's end). */
static void take_job(pop_run *r, eval_group *g, int32_t i, int32_t state)
{
    eval_slot *s = &g->slot[i];
    if (r->next_job == r->jobs) {
        s->state = SLOT_IDLE;
        return;
    }
    *s = (eval_slot){.state = state, .member = (int32_t)(r->next_job++ / r->a.episodes)};
}

/* The live slots' rows, compacted: observations, members. */
static int32_t compact(pop_run *r, eval_group *g)
{
    const frl_policy *p = r->pop->policy;
    const float *obs = frl_vec_env_observations(g->v);
    size_t w = (size_t)p->obs_w;
    int32_t k = 0;
    for (int32_t i = 0; i < g->n; i++) {
        if (g->slot[i].state != SLOT_LIVE)
            continue;
        g->rows[k] = i;
        g->members[k] = g->slot[i].member;
        memcpy(g->obs + (size_t)k * w, obs + (size_t)i * w, sizeof(float) * w);
        k++;
    }
    return k;
}

/* The actions of g's running episodes (its other envs act idly). */
static frl_status act_group(pop_run *r, eval_group *g)
{
    g->k = compact(r, g);
    if (g->k == 0)
        return FRL_OK;
    frl_population_act_args act;
    frl_population_act_args_init(&act);
    act.batch = g->k;
    act.observations = g->obs;
    act.members = g->members;
    act.actions = g->act;
    act.deterministic = r->a.deterministic;
    act.stream_offset = g->streams;
    act.counter = g->step;
    act.observation_width = frl_space_width(r->pop->policy->obs_space);
    act.action_width = frl_space_width(r->pop->policy->act_space);
    frl_status st = frl_population_act(r->pop, &act);
    if (st == FRL_OK && r->a.update_obs_norm)
        frl_obsnorm_update(&r->pop->policy->norm, g->obs, g->k);
    return st;
}

/* Actions into the vec env: the live rows' (box ones clipped to the env's bounds, as the
 * trainer does), zeros (clipped) for every other env. */
static void place_actions(pop_run *r, eval_group *g)
{
    const frl_space *s = frl_vec_env_action_space(g->v);
    size_t ab = action_bytes(r->pop->policy);
    unsigned char *dst = frl_vec_env_actions(g->v);
    memset(dst, 0, ab * (size_t)g->n);
    for (int32_t j = 0; j < g->k; j++)
        memcpy(dst + (size_t)g->rows[j] * ab, g->act + (size_t)j * ab, ab);
    if (frl_space_get_kind(s) != FRL_SPACE_BOX)
        return;
    const float *lo = frl_space_low(s), *hi = frl_space_high(s);
    int64_t w = frl_space_width(s);
    float *a = (float *)(void *)dst;
    for (int32_t e = 0; e < g->n; e++, a += w)
        for (int64_t i = 0; i < w; i++)
            a[i] = a[i] < lo[i] ? lo[i] : (a[i] > hi[i] ? hi[i] : a[i]);
}

/* Envs left idle (no job remains for them) are not stepped: a generation's last long
 * episodes do not pay for every other env. */
static frl_status step_group(pop_run *r, eval_group *g)
{
    place_actions(r, g);
    for (int32_t i = 0; i < g->n; i++)
        g->active[i] = g->slot[i].state != SLOT_IDLE;
    return frl_vec_env_step_active(g->v, g->active);
}

static void finish_episode(pop_run *r, eval_slot *s)
{
    r->ret_sum[s->member] += s->ret;
    r->len_sum[s->member] += s->length;
    r->jobs_left--;
}

/* After g's step: rewards into the running episodes, ended ones recorded, their envs
 * given the next job (it starts after the env's reset step). */
static void collect(pop_run *r, eval_group *g)
{
    const float *rew = frl_vec_env_rewards(g->v);
    const uint8_t *term = frl_vec_env_terminated(g->v), *trunc = frl_vec_env_truncated(g->v);
    const uint8_t *reset = frl_vec_env_reset_steps(g->v);
    for (int32_t i = 0; i < g->n; i++) {
        eval_slot *s = &g->slot[i];
        int ended = term[i] | trunc[i];
        if (s->state == SLOT_RESETTING && reset[i]) {
            s->state = SLOT_LIVE;
        } else if (s->state == SLOT_LIVE) {
            s->ret += rew[i];
            s->length++;
            r->steps[s->member]++;
            r->env_steps++;
            int cut = r->a.max_episode_steps && s->length >= r->a.max_episode_steps;
            if (ended || cut) {
                finish_episode(r, s);
                s->state = SLOT_DRAINING;
            }
        }
        /* A draining env takes a job once its episode has ended (the cut one's at the
         * env's own end): the job starts acting after the reset step. */
        if (s->state == SLOT_DRAINING && ended)
            take_job(r, g, i, SLOT_RESETTING);
    }
    g->step++;
}

/* The normaliser's running statistics kept (update_obs_norm), or put back. */
static void norm_keep(pop_run *r, int restore)
{
    frl_obsnorm *n = &r->pop->policy->norm;
    size_t w = (size_t)n->width;
    double *k = r->norm_before;
    if (!k)
        return;
    if (!restore) {
        k[0] = n->count;
        memcpy(k + 1, n->mean, sizeof(double) * w);
        memcpy(k + 1 + w, n->m2, sizeof(double) * w);
        return;
    }
    n->count = k[0];
    memcpy(n->mean, k + 1, sizeof(double) * w);
    memcpy(n->m2, k + 1 + w, sizeof(double) * w);
}

/* After each step: the step budget (args->max_steps), and a stop request. */
static frl_status check_going(pop_run *r)
{
    if (r->a.max_steps && r->env_steps >= r->a.max_steps && r->jobs_left > 0)
        return frl_fail(r->pop->err, FRL_ERR_RANGE, "%s: %lld env steps taken (args->max_steps)"
                        " and %lld of %lld episodes still running or to run: episodes that "
                        "never end? (give the env a time limit, env.max_episode_steps, or set "
                        "args->max_episode_steps)", r->who, (long long)r->env_steps,
                        (long long)r->jobs_left, (long long)r->jobs);
    if (r->stop && atomic_load(r->stop))
        return frl_fail(r->pop->err, FRL_ERR_INTERRUPTED, "%s: stopped by request after %lld "
                        "env steps", r->who, (long long)r->env_steps);
    return FRL_OK;
}

/* Envs whose cut episodes never end would hold the last jobs back for ever. */
enum { MAX_STALLED = 1000000 };

/* A group's act found no running episode: count it (g->st carries the error). */
static frl_status check_stalled(pop_run *r, const eval_group *g)
{
    r->stalled = g->k > 0 ? 0 : r->stalled + 1;
    if (r->stalled <= MAX_STALLED)
        return FRL_OK;
    return frl_fail(r->pop->err, FRL_ERR_RANGE, "%s: %d steps passed with no episode running "
                    "and %lld still to run: the envs' cut episodes never end (give the env a "
                    "time limit)", r->who, MAX_STALLED, (long long)r->jobs_left);
}

/* st, the outcome of g's act or step, kept with its message (on the thread it ran on). */
static frl_status group_ran(eval_group *g, frl_status st)
{
    g->st = st;
    if (st != FRL_OK)
        snprintf(g->msg, sizeof g->msg, "%s", frl_last_error());
    return st;
}

static frl_status group_failed(pop_run *r, const eval_group *g, const char *what)
{
    return frl_fail(r->pop->err, g->st, "%s: %s of step %llu: %s", r->who, what,
                    (unsigned long long)g->step, g->msg);
}

static frl_status run_sequential(pop_run *r)
{
    eval_group *g = &r->g[0];
    while (r->jobs_left > 0) {
        if (group_ran(g, act_group(r, g)) != FRL_OK)
            return group_failed(r, g, "acting");
        frl_status st = check_stalled(r, g);
        if (st != FRL_OK)
            return st;
        if (group_ran(g, step_group(r, g)) != FRL_OK)
            return group_failed(r, g, "stepping");
        collect(r, g);
        if ((st = check_going(r)) != FRL_OK)
            return st;
    }
    return FRL_OK;
}

/* One half of the pipeline: `stepping` steps while `acting` acts, on two threads. */
typedef struct half {
    pop_run *r;
    eval_group *stepping, *acting;
} half;

static int half_task(void *user, int32_t task, int32_t thread)
{
    (void)thread;
    half *h = user;
    if (task == 0)
        group_ran(h->stepping, step_group(h->r, h->stepping));
    else
        group_ran(h->acting, act_group(h->r, h->acting));
    return 0;
}

static frl_status run_half(pop_run *r, eval_group *stepping, eval_group *acting)
{
    half h = {r, stepping, acting};
    frl_pool_run(r->pop->rt->pool, 2, half_task, &h, NULL);
    if (stepping->st != FRL_OK)
        return group_failed(r, stepping, "stepping");
    if (acting->st != FRL_OK)
        return group_failed(r, acting, "acting");
    collect(r, stepping);
    frl_status st = check_stalled(r, acting);
    return st == FRL_OK ? check_going(r) : st;
}

static frl_status run_pipelined(pop_run *r)
{
    eval_group *a = &r->g[0], *b = &r->g[1];
    if (group_ran(a, act_group(r, a)) != FRL_OK)
        return group_failed(r, a, "acting");
    frl_status st = FRL_OK;
    while (st == FRL_OK && r->jobs_left > 0) {
        st = run_half(r, a, b);
        if (st == FRL_OK && r->jobs_left > 0)
            st = run_half(r, b, a);
    }
    return st;
}

static frl_status run_jobs(pop_run *r)
{
    for (int32_t g = 0; g < r->groups; g++) {
        /* each group's envs from their own seed */
        frl_status st = frl_vec_env_reset_from(
            r->g[g].v, r->a.seed + (uint64_t)g * 0x9e3779b97f4a7c15ULL, 0);
        if (st != FRL_OK)
            return frl_fail(r->pop->err, st, "%s: reset of group %d: %s", r->who, (int)g,
                            frl_last_error());
    }
    for (int32_t g = 0; g < r->groups; g++)
        for (int32_t i = 0; i < r->g[g].n; i++)
            take_job(r, &r->g[g], i, SLOT_LIVE);
    return r->groups == 1 ? run_sequential(r) : run_pipelined(r);
}

static void report(const pop_run *r, int64_t *env_steps)
{
    for (int32_t m = 0; m < r->pop->members; m++) {
        if (r->a.returns)
            r->a.returns[m] = r->ret_sum[m] / r->a.episodes;
        if (r->a.lengths)
            r->a.lengths[m] = r->len_sum[m] / r->a.episodes;
        if (r->a.steps)
            r->a.steps[m] = r->steps[m];
    }
    if (env_steps)
        *env_steps = r->env_steps;
}

static frl_status check_venvs(frl_population *pop, frl_vec_env *const *venvs, int32_t count,
                               const char *who)
{
    if (!venvs)
        return frl_fail(pop->err, FRL_ERR_NULL, "%s: venvs is NULL", who);
    if (count < 1 || count > MAX_GROUPS)
        return frl_fail(pop->err, FRL_ERR_RANGE, "%s: count %d is outside [1, %d]", who,
                        (int)count, MAX_GROUPS);
    for (int32_t g = 0; g < count; g++) {
        if (!venvs[g])
            return frl_fail(pop->err, FRL_ERR_NULL, "%s: venvs[%d] is NULL", who, (int)g);
        if (g == 1 && venvs[1] == venvs[0])
            return frl_fail(pop->err, FRL_ERR_INVALID_ARGUMENT, "%s: venvs[0] and venvs[1] are "
                            "the same vec env", who);
    }
    return FRL_OK;
}

/* A successful evaluation's statistics act from the next call on (OpenAI-ES gathers them
 * from a generation's rollouts for the next one); a failed one's are dropped. */
static void finish_norm(pop_run *r, frl_status st)
{
    frl_policy *p = r->pop->policy;
    if (!r->norm_before)
        return;
    if (st != FRL_OK) {
        norm_keep(r, 1);
        return;
    }
    frl_obsnorm_freeze(&p->norm);
    p->dev_norm_stale = 1;
}

frl_status frl_population_evaluate_stoppable(frl_population *pop, frl_vec_env *const *venvs,
                                             int32_t count, const frl_population_eval_args *args,
                                             int64_t *env_steps, atomic_int *stop,
                                             const char *who)
{
    if (env_steps)
        *env_steps = 0;
    if (!pop)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: population is NULL", who);
    frl_status st = check_venvs(pop, venvs, count, who);
    if (st != FRL_OK)
        return frl_fail_msg(NULL, st, pop->err);
    pop_run r = {.pop = pop, .who = who, .groups = count, .stop = stop};
    for (int32_t g = 0; g < count; g++)
        r.g[g] = (eval_group){.v = venvs[g], .n = frl_vec_env_num_envs(venvs[g]),
                              .streams = g ? (uint64_t)r.g[0].n : 0};
    st = read_args(&r, args);
    if (st == FRL_OK && (st = alloc_run(&r)) == FRL_OK)
        norm_keep(&r, 0);
    /* On a CUDA runtime the members go to the device once, and inference runs there. */
    if (st == FRL_OK)
        st = frl_population_device_begin(pop);
    if (st == FRL_OK)
        st = run_jobs(&r);
    frl_population_device_end(pop);
    if (r.block)
        finish_norm(&r, st);
    if (st == FRL_OK)
        report(&r, env_steps);
    if (st != FRL_OK)
        frl_fail_msg(NULL, st, pop->err);
    return st;
}

/* The public calls take vec envs no trainer holds; the ES and GA trainers' own
 * evaluations (sampler/population.c) go straight to frl_population_evaluate_stoppable. */
static frl_status evaluate_free(frl_population *pop, frl_vec_env *const *venvs, int32_t count,
                                const frl_population_eval_args *args, int64_t *env_steps,
                                const char *who)
{
    for (int32_t g = 0; pop && venvs && g < count && g < MAX_GROUPS; g++)
        if (venvs[g] && frl_vec_env_check_free(venvs[g], who) != FRL_OK) {
            if (env_steps)
                *env_steps = 0;
            return frl_fail_msg(pop->err, FRL_ERR_STATE, frl_last_error());
        }
    return frl_population_evaluate_stoppable(pop, venvs, count, args, env_steps, NULL, who);
}

FRL_API frl_status frl_population_evaluate_groups(frl_population *pop,
                                                  frl_vec_env *const *venvs, int32_t count,
                                                  const frl_population_eval_args *args,
                                                  int64_t *env_steps)
{
    return evaluate_free(pop, venvs, count, args, env_steps, "frl_population_evaluate_groups");
}

FRL_API frl_status frl_population_evaluate(frl_population *pop, frl_vec_env *venv,
                                           const frl_population_eval_args *args,
                                           int64_t *env_steps)
{
    static const char who[] = "frl_population_evaluate";
    if (pop && !venv) {
        if (env_steps)
            *env_steps = 0;
        return frl_fail(pop->err, FRL_ERR_NULL, "%s: venv is NULL", who);
    }
    return evaluate_free(pop, &venv, 1, args, env_steps, who);
}
