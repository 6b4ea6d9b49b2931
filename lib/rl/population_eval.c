/* frl_population_evaluate: episodes of many members over one vec env.
 *
 * Each env (a slot) runs one (member, episode) job at a time and takes the next pending
 * job when its episode ends. Every step only the slots whose episodes are running go
 * through inference, as one batch of compacted rows each naming its member
 * (frl_population_act), so members with short episodes free their envs for the others
 * and nothing acts for an env that is resetting or idle. Autoreset is next-step: after
 * an episode ends, the env's next step is its reset (its action ignored), so a job
 * taken then starts acting one step later. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/table.h"
#include "rl/population.h"

static const char who[] = "frl_population_evaluate";

/* 0.3's table, the first: every field up to update_obs_norm. */
#define EVAL_ARGS_V1_SIZE (offsetof(frl_population_eval_args, update_obs_norm) + sizeof(int32_t))

enum slot_state { SLOT_IDLE, SLOT_RESETTING, SLOT_LIVE, SLOT_DRAINING };

typedef struct eval_slot {
    int32_t state;
    int32_t member;
    int32_t length;
    double ret;
} eval_slot;

typedef struct pop_run {
    frl_population *pop;
    frl_vec_env *v;
    frl_population_eval_args a;
    int32_t n;            /* envs */
    int64_t next_job;     /* jobs are member-major: job j is member j / episodes */
    int64_t jobs, jobs_left;
    eval_slot *slot;      /* [n] */
    int32_t *rows;        /* [n]: the live slots this step */
    int32_t *members;     /* [n]: their members */
    float *obs;           /* [n x obs_w]: their observations */
    unsigned char *act;   /* [n x action bytes]: their actions */
    double *ret_sum;      /* [P] */
    double *len_sum;      /* [P] */
    int64_t *steps;       /* [P] */
    void *block;
    int64_t env_steps;
    int64_t stalled;      /* steps in a row with no env acting */
} pop_run;

static frl_status read_args(pop_run *r, const frl_population_eval_args *args)
{
    frl_population_eval_args_init(&r->a);
    frl_status st = frl_copy_table(&r->a, sizeof r->a, args, EVAL_ARGS_V1_SIZE, who, "args",
                                   "frl_population_eval_args_init");
    if (st != FRL_OK)
        return frl_fail_msg(r->pop->err, st, frl_last_error());
    if (r->a.episodes < 1 || (r->a.deterministic != 0 && r->a.deterministic != 1) ||
        r->a.max_episode_steps < 0)
        return frl_fail(r->pop->err, FRL_ERR_RANGE, "%s: args->episodes %d (>= 1), "
                        "deterministic %d (0 or 1) or max_episode_steps %lld (>= 0) is out "
                        "of range", who, (int)r->a.episodes, (int)r->a.deterministic,
                        (long long)r->a.max_episode_steps);
    const frl_policy *p = r->pop->policy;
    st = frl_space_check_same(p->obs_space, frl_vec_env_observation_space(r->v), who,
                              "the observation spaces of the population and the vec env",
                              r->pop->err);
    if (st == FRL_OK)
        st = frl_space_check_same(p->act_space, frl_vec_env_action_space(r->v), who,
                                  "the action spaces of the population and the vec env",
                                  r->pop->err);
    if (st == FRL_OK && r->a.update_obs_norm && !p->obs_norm)
        st = frl_fail(r->pop->err, FRL_ERR_INVALID_ARGUMENT, "%s: args->update_obs_norm is set "
                      "but the policy has no normaliser (policy.obs_norm=false)", who);
    return st;
}

static size_t action_bytes(const frl_policy *p)
{
    return p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
}

static frl_status alloc_run(pop_run *r)
{
    const frl_policy *p = r->pop->policy;
    size_t P = (size_t)r->pop->members, n = (size_t)r->n;
    size_t bytes = sizeof(double) * 2 * P + sizeof(int64_t) * P + sizeof(eval_slot) * n +
                   sizeof(int32_t) * 2 * n + sizeof(float) * n * (size_t)p->obs_w +
                   action_bytes(p) * n + 64;
    r->block = frl_alloc(&r->pop->rt->alloc, bytes, 64);
    if (!r->block)
        return frl_fail(r->pop->err, FRL_ERR_NOMEM, "%s: out of memory for %d members and %d "
                        "envs", who, (int)P, (int)n);
    memset(r->block, 0, bytes);
    r->ret_sum = r->block;
    r->len_sum = r->ret_sum + P;
    r->steps = (int64_t *)(r->len_sum + P);
    r->slot = (eval_slot *)(r->steps + P);
    r->obs = (float *)(r->slot + n);
    r->rows = (int32_t *)(r->obs + n * (size_t)p->obs_w);
    r->members = r->rows + n;
    r->act = (unsigned char *)(r->members + n);
    r->jobs = (int64_t)P * r->a.episodes;
    r->jobs_left = r->jobs;
    return FRL_OK;
}

/* Slot i takes the next pending job, if any, in state (LIVE right after a reset of the
 * vec env, RESETTING after an episode's end). */
static void take_job(pop_run *r, int32_t i, int32_t state)
{
    eval_slot *s = &r->slot[i];
    if (r->next_job == r->jobs) {
        s->state = SLOT_IDLE;
        return;
    }
    *s = (eval_slot){.state = state, .member = (int32_t)(r->next_job++ / r->a.episodes)};
}

/* The live slots' rows, compacted: observations, members. */
static int32_t compact(pop_run *r)
{
    const frl_policy *p = r->pop->policy;
    const float *obs = frl_vec_env_observations(r->v);
    size_t w = (size_t)p->obs_w;
    int32_t k = 0;
    for (int32_t i = 0; i < r->n; i++) {
        if (r->slot[i].state != SLOT_LIVE)
            continue;
        r->rows[k] = i;
        r->members[k] = r->slot[i].member;
        memcpy(r->obs + (size_t)k * w, obs + (size_t)i * w, sizeof(float) * w);
        k++;
    }
    return k;
}

/* Actions into the vec env: the live rows' (box ones clipped to the env's bounds, as the
 * trainer does), zeros (clipped) for every other env. */
static void place_actions(pop_run *r, int32_t k)
{
    const frl_space *s = frl_vec_env_action_space(r->v);
    size_t ab = action_bytes(r->pop->policy);
    unsigned char *dst = frl_vec_env_actions(r->v);
    memset(dst, 0, ab * (size_t)r->n);
    for (int32_t j = 0; j < k; j++)
        memcpy(dst + (size_t)r->rows[j] * ab, r->act + (size_t)j * ab, ab);
    if (frl_space_get_kind(s) != FRL_SPACE_BOX)
        return;
    const float *lo = frl_space_low(s), *hi = frl_space_high(s);
    int64_t w = frl_space_width(s);
    float *a = (float *)(void *)dst;
    for (int32_t e = 0; e < r->n; e++, a += w)
        for (int64_t i = 0; i < w; i++)
            a[i] = a[i] < lo[i] ? lo[i] : (a[i] > hi[i] ? hi[i] : a[i]);
}

static void finish_episode(pop_run *r, eval_slot *s)
{
    r->ret_sum[s->member] += s->ret;
    r->len_sum[s->member] += s->length;
    r->jobs_left--;
}

/* After a step: rewards into the running episodes, ended ones recorded, their envs given
 * the next job (it starts after the env's reset step). */
static void collect(pop_run *r)
{
    const float *rew = frl_vec_env_rewards(r->v);
    const uint8_t *term = frl_vec_env_terminated(r->v), *trunc = frl_vec_env_truncated(r->v);
    const uint8_t *reset = frl_vec_env_reset_steps(r->v);
    for (int32_t i = 0; i < r->n; i++) {
        eval_slot *s = &r->slot[i];
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
            take_job(r, i, SLOT_RESETTING);
    }
}

/* Envs whose cut episodes never end would hold the last jobs back for ever. */
enum { MAX_STALLED_STEPS = 1000000 };

static frl_status step_once(pop_run *r, frl_population_act_args *act, uint64_t step)
{
    int32_t k = compact(r);
    r->stalled = k > 0 ? 0 : r->stalled + 1;
    if (r->stalled > MAX_STALLED_STEPS)
        return frl_fail(r->pop->err, FRL_ERR_RANGE, "%s: %d steps passed with no episode "
                        "running and %lld still to run: the envs' cut episodes never end "
                        "(give the env a time limit)", who, MAX_STALLED_STEPS,
                        (long long)r->jobs_left);
    frl_status st = FRL_OK;
    if (k > 0) {
        act->batch = k;
        act->counter = step;
        st = frl_population_act(r->pop, act);
        if (st == FRL_OK && r->a.update_obs_norm)
            frl_obsnorm_update(&r->pop->policy->norm, r->obs, k);
    }
    if (st == FRL_OK) {
        place_actions(r, k);
        st = frl_vec_env_step(r->v);
    }
    if (st != FRL_OK)
        return frl_fail(r->pop->err, st, "%s: step %llu: %s", who, (unsigned long long)step,
                        frl_last_error());
    collect(r);
    return FRL_OK;
}

static frl_status run_jobs(pop_run *r)
{
    frl_population_act_args act;
    frl_population_act_args_init(&act);
    act.observations = r->obs;
    act.members = r->members;
    act.actions = r->act;
    act.deterministic = r->a.deterministic;
    act.observation_width = frl_space_width(r->pop->policy->obs_space);
    act.action_width = frl_space_width(r->pop->policy->act_space);
    frl_status st = frl_vec_env_reset(r->v, r->a.seed);
    if (st != FRL_OK)
        return frl_fail(r->pop->err, st, "%s: reset: %s", who, frl_last_error());
    for (int32_t i = 0; i < r->n; i++)
        take_job(r, i, SLOT_LIVE);
    for (uint64_t step = 0; st == FRL_OK && r->jobs_left > 0; step++)
        st = step_once(r, &act, step);
    return st;
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

FRL_API frl_status frl_population_evaluate(frl_population *pop, frl_vec_env *venv,
                                           const frl_population_eval_args *args,
                                           int64_t *env_steps)
{
    if (env_steps)
        *env_steps = 0;
    if (!pop)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: population is NULL", who);
    if (!venv)
        return frl_fail(pop->err, FRL_ERR_NULL, "%s: venv is NULL", who);
    pop_run r = {.pop = pop, .v = venv, .n = frl_vec_env_num_envs(venv)};
    frl_status st = read_args(&r, args);
    if (st == FRL_OK)
        st = alloc_run(&r);
    if (st == FRL_OK)
        st = run_jobs(&r);
    if (st == FRL_OK)
        report(&r, env_steps);
    frl_free(&pop->rt->alloc, r.block);
    if (st != FRL_OK)
        frl_fail_msg(NULL, st, pop->err);
    return st;
}
