/* Error reporting: every failing call formats one message, stores it in the
 * calling thread's buffer (frl_last_error) and in the handle's own buffer. */
#ifndef FRL_CORE_ERROR_H
#define FRL_CORE_ERROR_H

#include "core/printf_attr.h"
#include "fastrl.h"

enum { FRL_ERRMSG_SIZE = 256 };

/* Record status with a printf-style message; handle_msg (FRL_ERRMSG_SIZE bytes) may be
 * NULL. Returns status so a caller can write `return frl_fail(...)`. */
frl_status frl_fail(char *handle_msg, frl_status status, const char *fmt, ...) FRL_PRINTF(3, 4);

/* Record an already formatted message (from a worker thread) on this thread. */
frl_status frl_fail_msg(char *handle_msg, frl_status status, const char *msg);

/* The static analysers (clang's in scripts/analyze.sh; gcc's -fanalyzer given
 * -DFRL_STATIC_ANALYSIS) see one file at a time, so they would assume these may return
 * FRL_OK and follow paths where a failed allocation succeeds. Tell them what error.c
 * does: the status given comes back. */
#if defined(__clang_analyzer__) || defined(FRL_STATIC_ANALYSIS)
#define frl_fail(handle_msg, status, ...)                                                   \
    ((void)frl_fail((handle_msg), (status), __VA_ARGS__), (frl_status)(status))
#define frl_fail_msg(handle_msg, status, msg)                                               \
    ((void)frl_fail_msg((handle_msg), (status), (msg)), (frl_status)(status))
#endif

#endif
