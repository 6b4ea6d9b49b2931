/* The settings-parser fuzz target: any text through frl_config_parse. */
#ifndef FRL_TESTS_FUZZ_CONFIG_H
#define FRL_TESTS_FUZZ_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* Returns the status of frl_config_parse on the bytes as a C string; aborts if an
 * invariant breaks (all-or-nothing on failure, a message with every failure, an accepted
 * text round-trips through frl_config_to_text). */
int frl_fuzz_config_one(const uint8_t *data, size_t size);

#endif
