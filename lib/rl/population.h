/* Internal view of frl_population: P members' acting parameters in one [P x n] block,
 * per-member statistics of the last evaluation, and the scratch of batched acting
 * (allocated once at create, so acting never allocates). */
#ifndef FRL_RL_POPULATION_H
#define FRL_RL_POPULATION_H

#include <stdatomic.h>

#include "rl/policy.h"

/* Rows grouped per call of the sort (a larger batch is acted in blocks of this many). */
enum { FRL_POP_BLOCK = 4096, FRL_POP_CHUNK = 256 };

struct frl_population {
    frl_policy *policy;       /* the architecture, normaliser and head (borrowed) */
    frl_runtime *rt;
    int32_t members;
    int64_t n;                /* acting parameters per member: a prefix of the policy's */
    float *params;            /* [members x n] */
    /* the last evaluation of the trainer's population sampler: per member */
    double *fitness;          /* mean return */
    int64_t *steps;           /* env steps */
    /* acting scratch */
    int32_t *count;           /* [members + 1]: counting sort of a block's rows */
    int32_t *order;           /* [FRL_POP_BLOCK]: the block's rows by member */
    float *obs;               /* [FRL_POP_BLOCK x obs_w]: their observations, gathered */
    int32_t threads;
    float **ws;               /* per thread: a forward pass of FRL_POP_CHUNK rows */
    /* A runtime on a CUDA device: the members uploaded by frl_population_evaluate, which
     * then acts there (on_device) with the head's sampling here, from dev_out
     * [FRL_POP_BLOCK x out_w]. */
    int32_t on_device;
    int32_t cpu_said;       /* runtime.device=auto's note that the members act on the CPU */
    float *dev_out;
    /* An evaluation's arrays, kept between evaluations and grown when one needs more, so
     * that a trainer's generations allocate nothing once the sampler has reserved them
     * (frl_population_reserve_eval). */
    void *eval_block;
    size_t eval_bytes;
    char err[FRL_ERRMSG_SIZE];
};

/* Floats of the acting prefix of p's parameters (trunk and actor), or 0 for a policy a
 * population cannot hold (a recurrent one). */
int64_t frl_population_prefix(const frl_policy *p);

/* The policy's device copy refreshed and the members uploaded: until
 * frl_population_device_end, frl_population_act runs the networks on the device. FRL_OK
 * with nothing done on a CPU runtime. */
frl_status frl_population_device_begin(frl_population *pop);
void frl_population_device_end(frl_population *pop);

/* The arrays of an evaluation over venvs[0..count) (update_obs_norm as its args will
 * say) taken now, so that evaluations of that shape allocate nothing. */
frl_status frl_population_reserve_eval(frl_population *pop, frl_vec_env *const *venvs,
                                       int32_t count, int update_obs_norm);

/* frl_population_evaluate_groups, stopping with FRL_ERR_INTERRUPTED at the next env step
 * once *stop is set (a trainer's stop request; NULL: none), its messages begun with who.
 * Whatever the outcome but success, the normaliser's statistics are left as they were. */
frl_status frl_population_evaluate_stoppable(frl_population *pop, frl_vec_env *const *venvs,
                                             int32_t count, const frl_population_eval_args *args,
                                             int64_t *env_steps, atomic_int *stop,
                                             const char *who);

#endif
