/* Policies in files (policy_io.c): the sections that describe one, written by
 * frl_policy_save and a trainer's checkpoint and read back by frl_policy_load and a
 * resumed run. Above the policy: it builds policies, the policy never calls it. */
#ifndef FRL_RL_POLICY_IO_H
#define FRL_RL_POLICY_IO_H

#include "io/container.h"
#include "rl/policy.h"

/* The sections of a policy. The blob holds the encoded copies the sections point to;
 * free it after writing. */
enum { FRL_POLICY_SECTIONS = 8 };
typedef struct frl_policy_blob {
    char settings[FRL_SETTINGS_MAX];
    double *obs_space, *act_space, *norm;
    double epsilon; /* the acting epsilon now (DQN's schedule moves it off policy.epsilon) */
    uint64_t ids[2];
    const frl_allocator *alloc;
} frl_policy_blob;
/* The first Gaussian log-std beyond what a policy file holds (+-80: beyond it acting
 * overflows), or -1: the trainer calls a run that reaches it diverged. */
int32_t frl_policy_bad_log_std(const frl_policy *p);
frl_status frl_policy_blob_make(const frl_policy *p, frl_policy_blob *b, frl_section *s,
                                int32_t *n, char *err);
void frl_policy_blob_free(frl_policy_blob *b);

/* A space as the blob stores it (section policy.obs_space or policy.act_space), checked
 * value by value before any conversion: FRL_ERR_FORMAT naming the section if malformed. */
frl_status frl_policy_space_decode(const frl_section *sec, const frl_allocator *al,
                                   frl_space **out, char *err);

/* Rebuild a policy from the sections of a file, its acting epsilon the saved one
 * (policy.epsilon's value in files written before that section existed). */
frl_status frl_policy_from_container(frl_policy **out, frl_runtime *rt,
                                     const frl_container *c, char *err);

/* Weights, normaliser, seed and version from a file into a policy of the same layout. */
frl_status frl_policy_restore_state(frl_policy *p, const frl_container *c, char *err);

#endif
