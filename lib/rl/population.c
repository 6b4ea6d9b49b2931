/* Populations: P members of one policy architecture, and acting for rows of many
 * members in one call (Such et al.'s batched heterogeneous inference on the CPU).
 *
 * A block of rows is sorted by member with a counting sort, and each member's rows run
 * through the networks with that member's parameter row as the parameter vector: the
 * actor reads only its prefix of the vector (the trunk and the actor come first in
 * every MLP layout), so no weights are copied. The sorted rows are cut into equal
 * pieces, one per thread; a piece may split a member's rows, which changes nothing,
 * since by the kernels' determinism contract an output row depends only on its input
 * row and its weights. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/table.h"
#include "env/values.h"
#include "rl/population.h"

static const char who_act[] = "frl_population_act";

/* 0.3's table, the first: every field up to action_width. Fields appended later are
 * read only when the caller's struct_size covers them. */
#define ACT_ARGS_V1_SIZE (offsetof(frl_population_act_args, action_width) + sizeof(int64_t))

int64_t frl_population_prefix(const frl_policy *p)
{
    if (p->state_w) /* members act without state: no cores, no frame stacks yet */
        return 0;
    return (int64_t)(p->actor.param_base + p->actor.num_params);
}

static size_t action_bytes(const frl_policy *p)
{
    return p->discrete ? sizeof(int32_t) : sizeof(float) * (size_t)p->out_w;
}

FRL_API void frl_population_destroy(frl_population *pop)
{
    if (!pop)
        return;
    const frl_allocator *al = &pop->rt->alloc;
    for (int32_t i = 0; pop->ws && i < pop->threads; i++)
        frl_free(al, pop->ws[i]);
    frl_free(al, pop->ws);
    frl_free(al, pop->dev_out);
    frl_free(al, pop->eval_block);
    frl_free(al, pop->obs);
    frl_free(al, pop->order);
    frl_free(al, pop->count);
    frl_free(al, pop->params);
    frl_free(al, pop->fitness);
    frl_free(al, pop->steps);
    frl_free(al, pop);
}

static frl_status alloc_scratch(frl_population *pop)
{
    const frl_allocator *al = &pop->rt->alloc;
    const frl_policy *p = pop->policy;
    pop->count = frl_alloc(al, sizeof(int32_t) * ((size_t)pop->members + 1), 64);
    pop->order = frl_alloc(al, sizeof(int32_t) * FRL_POP_BLOCK, 64);
    pop->obs = frl_alloc(al, sizeof(float) * FRL_POP_BLOCK * (size_t)p->obs_w, 64);
    pop->threads = frl_runtime_threads(pop->rt);
    pop->ws = frl_alloc(al, sizeof(float *) * (size_t)pop->threads, 64);
    if (p->dev)
        pop->dev_out = frl_alloc(al, sizeof(float) * FRL_POP_BLOCK * (size_t)p->out_w, 64);
    if (!pop->count || !pop->order || !pop->obs || !pop->ws || (p->dev && !pop->dev_out))
        return FRL_ERR_NOMEM;
    memset(pop->ws, 0, sizeof(float *) * (size_t)pop->threads);
    size_t floats = frl_policy_pass_floats(p, FRL_POP_CHUNK, 0);
    for (int32_t i = 0; i < pop->threads; i++)
        if (!(pop->ws[i] = frl_alloc(al, sizeof(float) * floats, 64)))
            return FRL_ERR_NOMEM;
    return FRL_OK;
}

/* Every member starts as the policy's own acting parameters. */
static void fill_members(frl_population *pop)
{
    for (int32_t m = 0; m < pop->members; m++)
        memcpy(pop->params + (size_t)m * (size_t)pop->n, pop->policy->params,
               sizeof(float) * (size_t)pop->n);
}

FRL_API frl_status frl_population_create(frl_population **out, frl_policy *policy,
                                         int32_t members)
{
    static const char who[] = "frl_population_create";
    if (out)
        *out = NULL;
    if (!out || !policy)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, !out ? "out" : "policy");
    if (members < 1)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: members is %d; it must be >= 1", who,
                        (int)members);
    int64_t n = frl_population_prefix(policy);
    if (n == 0)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: a policy with state (a recurrent "
                        "core, policy.core, or a frame stack, policy.frame_stack > 1) "
                        "cannot be a population's architecture yet", who);
    /* A member's row is the prefix up to the actor: a dueling Q's V head lies beyond. */
    if (policy->head == FRL_POLICY_HEAD_DUELING_Q)
        return frl_fail(NULL, FRL_ERR_UNSUPPORTED, "%s: a dueling Q-policy (policy.head="
                        "dueling_q) cannot be a population's architecture yet: use "
                        "policy.head=q", who);
    if ((double)members * (double)n * sizeof(float) > (double)(SIZE_MAX / 2))
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: %d members x %lld parameters do not fit in "
                        "memory", who, (int)members, (long long)n);
    frl_runtime *rt = policy->rt;
    frl_population *pop = frl_alloc(&rt->alloc, sizeof *pop, 64);
    if (!pop)
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory", who);
    memset(pop, 0, sizeof *pop);
    *pop = (frl_population){.policy = policy, .rt = rt, .members = members, .n = n};
    pop->params = frl_alloc(&rt->alloc, sizeof(float) * (size_t)members * (size_t)n, 64);
    pop->fitness = frl_alloc(&rt->alloc, sizeof(double) * (size_t)members, 64);
    pop->steps = frl_alloc(&rt->alloc, sizeof(int64_t) * (size_t)members, 64);
    if (!pop->params || !pop->fitness || !pop->steps || alloc_scratch(pop) != FRL_OK) {
        frl_population_destroy(pop);
        return frl_fail(NULL, FRL_ERR_NOMEM, "%s: out of memory for %d members x %lld "
                        "parameters (%.1f MB)", who, (int)members, (long long)n,
                        (double)members * (double)n * 4e-6);
    }
    fill_members(pop);
    *out = pop;
    return FRL_OK;
}

FRL_API int32_t frl_population_members(const frl_population *pop)
{
    return pop ? pop->members : 0;
}

FRL_API int64_t frl_population_member_size(const frl_population *pop)
{
    return pop ? pop->n : 0;
}

FRL_API float *frl_population_parameters(frl_population *pop)
{
    return pop ? pop->params : NULL;
}

FRL_API const char *frl_population_last_error(const frl_population *pop)
{
    return pop ? pop->err : "frl_population_last_error: population is NULL";
}

/* Keys that shape what the parameters mean without always changing their number: a
 * tanh member copied into a relu policy of the same widths would act as another network,
 * and so would one whose inputs are normalised or clipped otherwise. The first that
 * differs, or NULL. */
static const char *other_architecture(const frl_policy *a, const frl_policy *b)
{
    static const char *const keys[] = {"policy.activation", "policy.hidden", "policy.shared",
                                       "policy.head", "policy.encoder", "policy.conv_channels",
                                       "policy.frame_stack", "policy.core", "policy.core_size",
                                       "policy.obs_norm", "policy.obs_clip"};
    char x[256], y[256];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (frl_config_get_text(a->cfg, keys[i], x, sizeof x) != FRL_OK ||
            frl_config_get_text(b->cfg, keys[i], y, sizeof y) != FRL_OK || strcmp(x, y) != 0)
            return keys[i];
    }
    if (a->in_w != b->in_w || a->out_w != b->out_w || a->discrete != b->discrete ||
        a->obs_n != b->obs_n || (a->obs_norm && a->norm.width != b->norm.width))
        return "the spaces' shapes";
    return NULL;
}

/* The members act through the population's policy's normaliser: a copy that is to act as
 * one takes its statistics, running and frozen, too. */
static void copy_norm(frl_policy *to, const frl_policy *from)
{
    const frl_obsnorm *s = &from->norm;
    frl_obsnorm *d = &to->norm;
    size_t w = (size_t)s->width;
    if (!from->obs_norm || to == from)
        return;
    d->count = s->count;
    memcpy(d->mean, s->mean, sizeof(double) * w);
    memcpy(d->m2, s->m2, sizeof(double) * w);
    memcpy(d->use_mean, s->use_mean, sizeof(float) * w);
    memcpy(d->use_inv_std, s->use_inv_std, sizeof(float) * w);
    to->dev_norm_stale = 1;
}

FRL_API frl_status frl_population_copy_to_policy(const frl_population *pop, int32_t member,
                                                 frl_policy *policy)
{
    static const char who[] = "frl_population_copy_to_policy";
    if (!pop || !policy)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: %s is NULL", who, !pop ? "population" : "policy");
    if (member < 0 || member >= pop->members)
        return frl_fail(NULL, FRL_ERR_RANGE, "%s: member %d is outside [0, %d)", who,
                        (int)member, (int)pop->members);
    if (frl_population_prefix(policy) != pop->n || policy->num_params != pop->policy->num_params)
        return frl_fail(NULL, FRL_ERR_SIZE, "%s: the policy has %zu parameters (%lld acting), "
                        "the population's architecture %zu (%lld)", who, policy->num_params,
                        (long long)frl_population_prefix(policy), pop->policy->num_params,
                        (long long)pop->n);
    const char *differs = other_architecture(policy, pop->policy);
    if (differs)
        return frl_fail(NULL, FRL_ERR_INVALID_ARGUMENT, "%s: the policy's network differs from "
                        "the population's in %s (a member's parameters would mean another "
                        "network)", who, differs);
    memcpy(policy->params, pop->params + (size_t)member * (size_t)pop->n,
           sizeof(float) * (size_t)pop->n);
    copy_norm(policy, pop->policy);
    policy->version++; /* a device copy of the policy is refreshed */
    return FRL_OK;
}

/* ---- acting ---- */

static frl_status check_act(frl_population *pop, const frl_population_act_args *a)
{
    const frl_policy *p = pop->policy;
    if (!a)
        return frl_fail(pop->err, FRL_ERR_NULL, "%s: args is NULL", who_act);
    if (a->struct_size < ACT_ARGS_V1_SIZE)
        return frl_fail(pop->err, FRL_ERR_VERSION, "%s: args->struct_size %zu is too small "
                        "(use frl_population_act_args_init)", who_act, a->struct_size);
    if (!a->observations || !a->members || !a->actions)
        return frl_fail(pop->err, FRL_ERR_NULL, "%s: args->%s is NULL", who_act,
                        !a->observations ? "observations" : !a->members ? "members" : "actions");
    if (a->batch < 1)
        return frl_fail(pop->err, FRL_ERR_RANGE, "%s: batch %d must be >= 1", who_act,
                        (int)a->batch);
    int64_t ow = frl_space_width(p->obs_space), aw = frl_space_width(p->act_space);
    if (a->observation_width != ow || a->action_width != aw)
        return frl_fail(pop->err, FRL_ERR_SIZE, "%s: the arrays are %lld observation and %lld "
                        "action values wide, the policy's spaces %lld and %lld", who_act,
                        (long long)a->observation_width, (long long)a->action_width,
                        (long long)ow, (long long)aw);
    for (int32_t i = 0; i < a->batch; i++)
        if (a->members[i] < 0 || a->members[i] >= pop->members)
            return frl_fail(pop->err, FRL_ERR_RANGE, "%s: row %d names member %d, outside "
                            "[0, %d)", who_act, (int)i, (int)a->members[i], (int)pop->members);
    return frl_policy_check_observations(p, a->observations, a->batch, who_act, pop->err);
}

/* One block of rows [first, first + rows): what each thread's piece needs. */
typedef struct act_block {
    frl_population *pop;
    const frl_population_act_args *a;
    int64_t first;
    int32_t rows, pieces;
    _Atomic int64_t bad_row; /* a row whose network output is not finite, or -1 */
} act_block;

/* Rows [from, to) of the block's sorted order into the gathered arrays, sorted. */
static void gather(act_block *b, int32_t from, int32_t to)
{
    const frl_policy *p = b->pop->policy;
    size_t w = (size_t)p->obs_w;
    for (int32_t s = from; s < to; s++)
        memcpy(b->pop->obs + (size_t)s * w,
               b->a->observations + (size_t)(b->first + b->pop->order[s]) * w,
               sizeof(float) * w);
}

/* Sorted rows [s, s + rows) all of member m: forward and heads, in chunks. */
static void act_run(act_block *b, int32_t s, int32_t rows, int32_t m, float *ws)
{
    frl_population *pop = b->pop;
    const frl_policy *p = pop->policy;
    const float *w = pop->params + (size_t)m * (size_t)pop->n;
    size_t ab = action_bytes(p);
    for (int32_t c = 0; c < rows; c += FRL_POP_CHUNK) {
        int32_t k = rows - c < FRL_POP_CHUNK ? rows - c : FRL_POP_CHUNK;
        frl_pass f;
        frl_policy_pass_layout(p, k, 0, ws, &f);
        frl_policy_forward_heads(p, w, k, pop->obs + (size_t)(s + c) * (size_t)p->obs_w, &f,
                                 FRL_HEAD_ACTOR);
        /* The member's row is the host's to write: a NaN in it shows here, in k rows'
         * outputs, not in a scan of P x n weights a call. Any one bad row is named. */
        int64_t bad = frl_find_nonfinite(f.out, (int64_t)k * p->out_w);
        if (bad >= 0)
            atomic_store(&b->bad_row, b->first + pop->order[s + c + (int32_t)(bad / p->out_w)]);
        for (int32_t r = 0; r < k; r++) {
            int64_t row = b->first + pop->order[s + c + r];
            /* The log-std (a Gaussian's) is the policy's: members do not carry it. Each
             * piece writes its own rows of the caller's actions. */
            frl_policy_head_sample(p, p->params, f.out + (size_t)r * (size_t)p->out_w,
                                   b->a->deterministic, b->a->stream_offset + (uint64_t)row,
                                   b->a->counter, (unsigned char *)b->a->actions + (size_t)row * ab);
        }
    }
}

static int act_piece(void *user, int32_t task, int32_t thread)
{
    act_block *b = user;
    int32_t from = (int32_t)((int64_t)b->rows * task / b->pieces);
    int32_t to = (int32_t)((int64_t)b->rows * (task + 1) / b->pieces);
    gather(b, from, to);
    const int32_t *mem = b->a->members + b->first;
    for (int32_t s = from; s < to;) {
        int32_t m = mem[b->pop->order[s]], e = s + 1;
        while (e < to && mem[b->pop->order[e]] == m)
            e++;
        act_run(b, s, e - s, m, b->pop->ws[thread]);
        s = e;
    }
    return 0;
}

/* Counting sort of the block's rows by member (stable: rows keep their order). */
static void sort_block(act_block *b)
{
    frl_population *pop = b->pop;
    const int32_t *mem = b->a->members + b->first;
    memset(pop->count, 0, sizeof(int32_t) * ((size_t)pop->members + 1));
    for (int32_t r = 0; r < b->rows; r++)
        pop->count[mem[r] + 1]++;
    for (int32_t m = 0; m < pop->members; m++)
        pop->count[m + 1] += pop->count[m];
    for (int32_t r = 0; r < b->rows; r++)
        pop->order[pop->count[mem[r]]++] = r;
}

/* ---- on the device ---- */

frl_status frl_population_device_begin(frl_population *pop)
{
    frl_policy *p = pop->policy;
    if (!p->dev)
        return FRL_OK;
    frl_status st = frl_policy_device_refresh(p, pop->err);
    if (st == FRL_OK)
        st = frl_dev_model_members(p->dev, pop->members, pop->n, pop->params, pop->err);
    pop->on_device = st == FRL_OK;
    /* A network the members' kernel cannot run acts on the CPU under runtime.device=auto,
     * as a network the device cannot hold does; cuda forces the device and fails. */
    if (st == FRL_ERR_UNSUPPORTED && p->rt->device.automatic) {
        if (!pop->cpu_said)
            frl_log(p->rt, FRL_LOG_INFO, "runtime.device=auto: the population acts on the "
                    "CPU: %s", pop->err);
        pop->cpu_said = 1;
        return FRL_OK;
    }
    if (st == FRL_ERR_UNSUPPORTED) {
        char why[FRL_ERRMSG_SIZE];
        snprintf(why, sizeof why, "%s", pop->err);
        return frl_fail(pop->err, st, "runtime.device=cuda (auto acts on the CPU): %s", why);
    }
    return st;
}

void frl_population_device_end(frl_population *pop)
{
    pop->on_device = 0;
}

static frl_status fail_output(frl_population *pop, const frl_population_act_args *a,
                              int64_t row)
{
    return frl_fail(pop->err, FRL_ERR_NONFINITE, "%s: member %d's network gave a non-finite "
                    "output for row %lld: its parameter row holds a non-finite value",
                    who_act, (int)a->members[row], (long long)row);
}

/* The networks on the device, a block of rows at a time (the kernel reads each row's
 * member's weights: no sort), the head's sampling here with the same streams. */
static frl_status act_on_device(frl_population *pop, const frl_population_act_args *a)
{
    const frl_policy *p = pop->policy;
    size_t ab = action_bytes(p), ow = (size_t)p->out_w;
    for (int64_t first = 0; first < a->batch; first += FRL_POP_BLOCK) {
        int32_t k = (int32_t)(a->batch - first < FRL_POP_BLOCK ? a->batch - first : FRL_POP_BLOCK);
        frl_status st = frl_dev_model_forward_members(
            p->dev, k, a->members + first, a->observations + (size_t)first * (size_t)p->obs_w,
            pop->dev_out, pop->err);
        if (st != FRL_OK)
            return st;
        int64_t bad = frl_find_nonfinite(pop->dev_out, (int64_t)k * p->out_w);
        if (bad >= 0)
            return fail_output(pop, a, first + bad / p->out_w);
        for (int32_t r = 0; r < k; r++)
            frl_policy_head_sample(p, p->params, pop->dev_out + (size_t)r * ow, a->deterministic,
                                   a->stream_offset + (uint64_t)(first + r), a->counter,
                                   (unsigned char *)a->actions + (size_t)(first + r) * ab);
    }
    return FRL_OK;
}

FRL_API frl_status frl_population_act(frl_population *pop, const frl_population_act_args *a)
{
    if (!pop)
        return frl_fail(NULL, FRL_ERR_NULL, "%s: population is NULL", who_act);
    frl_status st = check_act(pop, a);
    if (st == FRL_OK && pop->on_device)
        st = act_on_device(pop, a);
    if (st != FRL_OK || pop->on_device)
        return st == FRL_OK ? st : frl_fail_msg(NULL, st, pop->err);
    for (int64_t first = 0; first < a->batch; first += FRL_POP_BLOCK) {
        int64_t left = a->batch - first;
        act_block b = {pop, a, first, (int32_t)(left < FRL_POP_BLOCK ? left : FRL_POP_BLOCK), 1,
                       -1};
        /* A piece per thread once each has 16 rows (so 64 envs use two threads): the
         * pool's fork and join cost less than 16 rows' forward. */
        int32_t pieces = b.rows / (FRL_POP_CHUNK / 16);
        b.pieces = pieces < 1 ? 1 : pieces > pop->threads ? pop->threads : pieces;
        sort_block(&b);
        if (b.pieces == 1)
            act_piece(&b, 0, 0);
        else
            frl_pool_run(pop->rt->pool, b.pieces, act_piece, &b, NULL);
        int64_t bad = atomic_load(&b.bad_row);
        if (bad >= 0)
            return frl_fail_msg(NULL, fail_output(pop, a, bad), pop->err);
    }
    return FRL_OK;
}
