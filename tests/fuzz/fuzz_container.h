/* The checkpoint-reader fuzz target, shared by the libFuzzer binary and the standalone
 * corpus driver. */
#ifndef FRL_TESTS_FUZZ_CONTAINER_H
#define FRL_TESTS_FUZZ_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

/* Parse data[0..size), use every section, free. Returns the parse status; aborts if a
 * parsed container breaks an invariant the reader promises. */
int frl_fuzz_container_one(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
