/* frl_policy_evaluate: whole episodes of a policy on a vec env, a fixed quota per env.
 *
 * Counting the first `episodes` episodes to end, whichever env they came from, would
 * favour short episodes (an env whose episodes are short finishes more of them), so
 * env i counts only its own first quota[i] episodes and the rest are ignored. */
#include <math.h>
#include <stddef.h>

#include "core/error.h"
#include "core/space.h"
#include "core/table.h"
#include "env/vec_env.h"
#include "rl/policy.h"

static const char who[] = "frl_policy_evaluate";

/* 0.3's table, the first: every field up to max_steps. Fields appended later are read
 * only when the caller's struct_size covers them (frl_copy_table). */
#define EVAL_ARGS_V1_SIZE (offsetof(frl_eval_args, max_steps) + sizeof(int64_t))

typedef struct eval_run {
    frl_policy *p;
    frl_vec_env *v;
    frl_eval_args a;   /* the caller's table over the defaults */
    int32_t n;         /* envs */
    int32_t left;      /* episodes still to finish */
    int32_t *quota;    /* [n] episodes env i must finish */
    int32_t *done;     /* [n] episodes env i has finished */
    int32_t *first;    /* [n] where env i's episodes start in the out arrays */
    float *state;      /* [n x state size]: a recurrent policy's state per env */
    double *returns;   /* [episodes]: the caller's array or our own */
    int64_t steps;     /* env steps taken (all envs) */
    void *block;       /* the one allocation behind quota, done, first (and returns) */
} eval_run;

static frl_status read_args(eval_run *r, const frl_eval_args *args)
{
    frl_eval_args_init(&r->a);
    frl_status st = frl_copy_table(&r->a, sizeof r->a, args, EVAL_ARGS_V1_SIZE, who, "args",
                                   "frl_eval_args_init");
    if (st != FRL_OK)
        return frl_fail_msg(r->p->err, st, frl_last_error());
    if (r->a.episodes < 1)
        return frl_fail(r->p->err, FRL_ERR_RANGE, "%s: args->episodes is %d; it must be >= 1",
                        who, (int)r->a.episodes);
    if (r->a.deterministic != 0 && r->a.deterministic != 1)
        return frl_fail(r->p->err, FRL_ERR_RANGE,
                        "%s: args->deterministic is %d; it must be 1 (the mode) or 0 (sample)",
                        who, (int)r->a.deterministic);
    if (r->a.max_steps < 0)
        return frl_fail(r->p->err, FRL_ERR_RANGE,
                        "%s: args->max_steps is %lld; it must be >= 0 (0: no limit)", who,
                        (long long)r->a.max_steps);
    return FRL_OK;
}

/* The policy reads the env's observation rows and writes its action rows: their
 * layouts must agree, or act would read and write past each row. */
static frl_status check_spaces(eval_run *r)
{
    frl_status st = frl_space_check_same(
        r->p->obs_space, frl_vec_env_observation_space(r->v), who,
        "the observation spaces of the policy and the vec env", r->p->err);
    if (st == FRL_OK)
        st = frl_space_check_same(r->p->act_space, frl_vec_env_action_space(r->v), who,
                                  "the action spaces of the policy and the vec env", r->p->err);
    return st;
}

/* Quotas (episodes / n, one more for the first episodes % n) and where each env's
 * episodes go, env-major. */
static frl_status alloc_run(eval_run *r)
{
    /* Our own returns (when the caller keeps none) first: doubles need the alignment. */
    size_t own = r->a.returns ? 0 : (size_t)r->a.episodes;
    size_t states = (size_t)r->n * (size_t)r->p->state_w; /* zeros: fresh agents */
    size_t bytes = sizeof(double) * own + 3 * sizeof(int32_t) * (size_t)r->n +
                   sizeof(float) * states;
    r->block = frl_alloc(&r->p->rt->alloc, bytes, FRL_CACHE_LINE);
    if (!r->block)
        return frl_fail(r->p->err, FRL_ERR_NOMEM, "%s: out of memory for %d envs and %d "
                        "episodes", who, (int)r->n, (int)r->a.episodes);
    double *own_returns = r->block;
    r->returns = r->a.returns ? r->a.returns : own_returns;
    r->quota = (int32_t *)(own_returns + own);
    r->done = r->quota + r->n;
    r->first = r->done + r->n;
    r->state = (float *)(void *)(r->first + r->n);
    int32_t at = 0;
    for (int32_t i = 0; i < r->n; i++) {
        r->quota[i] = r->a.episodes / r->n + (i < r->a.episodes % r->n);
        r->first[i] = at;
        at += r->quota[i];
    }
    r->left = r->a.episodes;
    return FRL_OK;
}

/* Clip box actions to the env's bounds, as the trainer does (CleanRL's ClipAction):
 * the Gaussian head's samples and means are unbounded. The env's bounds, not the
 * policy's: only the layouts of the two spaces must match, and the env's are the
 * ones it accepts (in the trainer the two are the same). */
static void clip_actions(eval_run *r)
{
    const frl_space *s = frl_vec_env_action_space(r->v);
    if (frl_space_get_kind(s) != FRL_SPACE_BOX)
        return;
    const float *lo = frl_space_low(s), *hi = frl_space_high(s);
    int64_t w = frl_space_width(s);
    float *a = frl_vec_env_actions(r->v);
    for (int32_t e = 0; e < r->n; e++, a += w)
        for (int64_t i = 0; i < w; i++)
            a[i] = a[i] < lo[i] ? lo[i] : (a[i] > hi[i] ? hi[i] : a[i]);
}

/* Record the episodes that ended this step, each env up to its quota. */
static void collect(eval_run *r)
{
    const uint8_t *term = frl_vec_env_terminated(r->v), *trunc = frl_vec_env_truncated(r->v);
    const float *ret = frl_vec_env_episode_returns(r->v);
    const int32_t *len = frl_vec_env_episode_lengths(r->v);
    for (int32_t i = 0; i < r->n; i++) {
        if (!(term[i] | trunc[i]) || r->done[i] == r->quota[i])
            continue;
        int32_t k = r->first[i] + r->done[i]++;
        r->returns[k] = (double)ret[i];
        if (r->a.lengths)
            r->a.lengths[k] = len[i];
        r->left--;
    }
}

/* Never more than max_steps env steps: the check comes before the step that would
 * pass it. */
static frl_status check_budget(eval_run *r)
{
    if (r->a.max_steps == 0 || r->steps + r->n <= r->a.max_steps)
        return FRL_OK;
    return frl_fail(r->p->err, FRL_ERR_RANGE,
                    "%s: %lld env steps finished %d of %d episodes, and max_steps %lld "
                    "allows no further step of %d envs (episodes that never end? raise "
                    "args->max_steps, or 0 for no limit)",
                    who, (long long)r->steps, (int)(r->a.episodes - r->left),
                    (int)r->a.episodes, (long long)r->a.max_steps, (int)r->n);
}

/* Act for every env (row i draws from stream seed * N + i at position `step`), then
 * step the vec env. */
static frl_status step_once(eval_run *r, frl_act_args *act, uint64_t step)
{
    act->counter = step;
    frl_status st = frl_policy_act(r->p, act);
    int stepped = 0;
    if (st == FRL_OK) {
        clip_actions(r);
        int64_t calls = r->v->step_calls;
        st = frl_vec_env_step(r->v);
        /* A step refused before it ran (an action the space cannot hold, such as a NaN
         * from a policy fed an observation far out of its range) leaves the count, and
         * the last step's flags, which must not be collected twice. */
        stepped = r->v->step_calls != calls;
    }
    /* After a per-env host failure the other envs' results are valid (the failed ones
     * report no episode): the episodes they finished in this step are kept, as the
     * arrays promise. A batch world's failure leaves no results to read. */
    int per_env = st == FRL_ERR_CALLBACK || st == FRL_ERR_NONFINITE || st == FRL_ERR_RANGE;
    if (st == FRL_OK || (stepped && per_env && r->v->kind == VEC_CALLBACKS)) {
        r->steps += r->n;
        collect(r);
    }
    if (st != FRL_OK)
        return frl_fail(r->p->err, st, "%s: step %llu: %s", who, (unsigned long long)step,
                        frl_last_error());
    return FRL_OK;
}

static frl_status run_episodes(eval_run *r)
{
    frl_act_args act;
    frl_act_args_init(&act);
    act.batch = r->n;
    act.observations = frl_vec_env_observations(r->v);
    act.actions = frl_vec_env_actions(r->v);
    act.deterministic = r->a.deterministic;
    /* Sampled actions draw from the seed's N streams: another seed is another sample of
     * the policy's returns, not its resets under the same noise. */
    act.stream_offset = r->a.seed * (uint64_t)r->n;
    act.observation_width = frl_space_width(frl_vec_env_observation_space(r->v));
    act.action_width = frl_space_width(frl_vec_env_action_space(r->v));
    /* A recurrent policy's state per env, restarted where an autoreset began a new
     * episode (the vec env's flags of the last step). */
    act.state = r->state;
    act.state_width = r->p->state_w;
    act.reset = frl_vec_env_reset_steps(r->v);
    frl_status st = frl_vec_env_reset(r->v, r->a.seed);
    if (st != FRL_OK)
        return frl_fail(r->p->err, st, "%s: reset: %s", who, frl_last_error());
    for (uint64_t step = 0; st == FRL_OK && r->left > 0; step++) {
        st = check_budget(r);
        if (st == FRL_OK)
            st = step_once(r, &act, step);
    }
    return st;
}

static double mean_of(const double *x, int32_t n)
{
    double sum = 0;
    for (int32_t i = 0; i < n; i++)
        sum += x[i];
    return sum / n;
}

FRL_API frl_status frl_policy_evaluate(frl_policy *policy, frl_vec_env *venv,
                                       const frl_eval_args *args, double *mean_return)
{
    if (mean_return)
        *mean_return = NAN; /* until every episode has finished */
    if (!policy)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: policy is NULL", who);
    if (!venv)
        return frl_fail(policy->err, FRL_ERR_NULL, "%s: venv is NULL", who);
    if (frl_vec_env_check_free(venv, who) != FRL_OK)
        return frl_fail_msg(policy->err, FRL_ERR_STATE, frl_last_error());
    eval_run r = {.p = policy, .v = venv, .n = frl_vec_env_num_envs(venv)};
    frl_status st = read_args(&r, args);
    if (st == FRL_OK)
        st = check_spaces(&r);
    if (st == FRL_OK)
        st = alloc_run(&r);
    if (st == FRL_OK)
        st = run_episodes(&r);
    if (st == FRL_OK && mean_return)
        *mean_return = mean_of(r.returns, r.a.episodes);
    frl_free(&policy->rt->alloc, r.block);
    return st;
}
