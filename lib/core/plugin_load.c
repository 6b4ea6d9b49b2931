/* See plugin_load.h. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/plugin_load.h"

/* An object of this library, for dladdr (ISO C has no function-to-object casts). */
static const char in_this_library = 0;

/* The folder of this library ("" when unknown): plugins are installed beside it. */
static void own_folder(char *buf, size_t size)
{
    Dl_info info;
    buf[0] = '\0';
    if (dladdr(&in_this_library, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash)
            snprintf(buf, size, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
    }
}

/* A reason into why, cut to size (a long path must not lose the rest of the message's
 * beginning, so the parts are bounded by the callers' precisions). */
static void say(char *why, size_t size, const char *fmt, ...) FRL_PRINTF(3, 4);
static void say(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* The loader's reason without the path that dlerror repeats before it ("PATH: cannot
 * open ..."): the path is said once, after the reason, so that a long install path
 * cannot push the reason out of a message cut to size. */
static const char *loader_reason(const char *path)
{
    const char *e = dlerror();
    size_t n = strlen(path);
    if (!e)
        return "no reason given";
    return strncmp(e, path, n) == 0 && e[n] == ':' && e[n + 1] == ' ' ? e + n + 2 : e;
}

/* The last characters of path: "..." and its tail when it is longer than TAIL. */
enum { TAIL = 60 };
static const char *tail_of(const char *path, const char **dots)
{
    size_t n = strlen(path);
    *dots = n > TAIL ? "..." : "";
    return n > TAIL ? path + n - TAIL : path;
}

/* "FILE cannot be loaded: REASON (WHERE)", the reason before the path (above). */
static void say_unloadable(char *why, size_t size, const char *path, const char *where)
{
    const char *slash = strrchr(path, '/'), *dots;
    const char *reason = loader_reason(path), *tail = tail_of(path, &dots);
    say(why, size, "%.64s cannot be loaded: %.160s (%s%s%s)", slash ? slash + 1 : path,
        reason, where, dots, tail);
}

/* dlopen path; a file that exists but does not load is reported with the loader's
 * reason (a missing dependency, the wrong architecture). */
static void *try_path(const char *path, char *why, size_t size)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h && access(path, F_OK) == 0)
        say_unloadable(why, size, path, "at ");
    return h;
}

/* dlopen(file) through the loader's path. A file the loader cannot find is refused
 * with the file's own name first ("FILE: cannot open shared object file"); any other
 * reason (a missing dependency such as libcudart, an undefined symbol) means it was
 * found and does not load, which must not read as "not found, rebuild". An earlier
 * reason in why (a file beside libfastrl that did not load) is kept. */
static void *try_library_path(const char *file, char *why, size_t size)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (h || why[0])
        return h;
    const char *e = dlerror();
    size_t n = strlen(file);
    if (e && !(strncmp(e, file, n) == 0 && strstr(e + n, "cannot open shared object file")))
        say(why, size, "%.64s cannot be loaded: %.160s (on the library path)", file, e);
    return h;
}

void *frl_plugin_open(const char *file, const char *env_var, const char *hint, char *why,
                      size_t size)
{
    const char *env = getenv(env_var);
    if (env && env[0]) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        char where[64];
        snprintf(where, sizeof where, "%s=", env_var);
        if (!h)
            say_unloadable(why, size, env, where);
        return h;
    }
    char dir[2048], path[2200];
    void *h = NULL;
    why[0] = '\0';
    own_folder(dir, sizeof dir);
    if (dir[0]) {
        snprintf(path, sizeof path, "%s/%s", dir, file);
        h = try_path(path, why, size);
        snprintf(path, sizeof path, "%s/../lib/%s", dir, file);
        h = h ? h : try_path(path, why, size);
    }
    h = h ? h : try_library_path(file, why, size);
    if (!h && !why[0])
        say(why, size, "%s was not found (beside libfastrl, in ../lib, or on the library "
            "path); %s or set %s", file, hint, env_var);
    return h;
}

/* The file frl_plugin_open opened, as messages name it: env_var's path when that is
 * set (it need not be the plugin's name at all), else the plugin's file name. */
static void opened_name(const char *file, const char *env_var, char *buf, size_t size)
{
    const char *chosen = getenv(env_var);
    if (chosen && chosen[0])
        snprintf(buf, size, "%.100s (%s)", chosen, env_var);
    else
        snprintf(buf, size, "%s", file);
}

const void *frl_plugin_table(void *handle, const char *file, const char *env_var,
                             const char *symbol, uint32_t abi, char *why, size_t size)
{
    char name[160];
    opened_name(file, env_var, name, sizeof name);
    const void *(*get)(void);
    void *sym = dlsym(handle, symbol);
    memcpy(&get, &sym, sizeof get); /* object to function pointer, as POSIX allows */
    const void *table = sym ? get() : NULL;
    uint32_t has = 0;
    if (table)
        memcpy(&has, table, sizeof has);
    /* A missing entry point and one that gives no table are different faults. */
    if (!sym)
        say(why, size, "%s has no %s", name, symbol);
    else if (!table)
        say(why, size, "%s: %s returned no table", name, symbol);
    else if (has != abi)
        say(why, size, "%s speaks plugin ABI %u, this libfastrl %u (a plugin from another "
            "build)", name, has, abi);
    return table && has == abi ? table : NULL;
}
