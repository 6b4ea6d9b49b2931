/* Finding and opening the optional plugins shipped beside libfastrl (libfastrl-cuda.so.0,
 * libfastrl-mujoco.so.0). The core links none of their dependencies: a plugin is opened
 * with dlopen when asked for, so the library runs where CUDA or MuJoCo is absent and says
 * why a feature that needs one cannot run. */
#ifndef FRL_CORE_PLUGIN_LOAD_H
#define FRL_CORE_PLUGIN_LOAD_H

#include <stddef.h>
#include <stdint.h>

/* The plugin file: env_var's path when that variable is set (and then only it); else
 * beside this library, then in ../lib from it (a program linked statically: bin/ and
 * lib/, or a build tree's tools/ and lib/); else the loader's search path. NULL with a
 * sentence in why (ending in hint, how to build it) when none loads. */
void *frl_plugin_open(const char *file, const char *env_var, const char *hint, char *why,
                      size_t size);

/* The table returned by the plugin's symbol (a function of no arguments), whose first
 * member is its uint32_t ABI number; NULL with a sentence in why when the symbol is
 * missing or the number is not abi (a plugin from another build). The sentence names
 * the file frl_plugin_open(file, env_var, ...) opened: env_var's path when it is set. */
const void *frl_plugin_table(void *handle, const char *file, const char *env_var,
                             const char *symbol, uint32_t abi, char *why, size_t size);

#endif
