/* The policy-loader fuzz target: a container parsed, then rebuilt into a policy. */
#ifndef FRL_TESTS_FUZZ_POLICY_H
#define FRL_TESTS_FUZZ_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* Returns the status of parse + frl_policy_from_container; aborts if an accepted
 * policy breaks an invariant (finite parameters, consistent spaces, act works). */
int frl_fuzz_policy_one(const uint8_t *data, size_t size);

#endif
