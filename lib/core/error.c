/* Status names, the thread-local last error, and the library's version queries. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/c_numeric.h"
#include "core/error.h"

/* The analyser's stand-ins (error.h) are for callers; here are the functions. */
#undef frl_fail
#undef frl_fail_msg

static _Thread_local char tls_error[FRL_ERRMSG_SIZE];

static const char *const status_names[] = {
    "FRL_OK",
    "FRL_ERR_NULL",
    "FRL_ERR_INVALID_ARGUMENT",
    "FRL_ERR_UNKNOWN_NAME",
    "FRL_ERR_SIZE",
    "FRL_ERR_RANGE",
    "FRL_ERR_NONFINITE",
    "FRL_ERR_NOMEM",
    "FRL_ERR_THREAD",
    "FRL_ERR_CALLBACK",
    "FRL_ERR_STATE",
    "FRL_ERR_TYPE",
    "FRL_ERR_PARSE",
    "FRL_ERR_UNSUPPORTED",
    "FRL_ERR_IO",
    "FRL_ERR_FORMAT",
    "FRL_ERR_VERSION",
    "FRL_ERR_INTERNAL",
    "FRL_ERR_INTERRUPTED",
    "FRL_ERR_DEVICE",
};

FRL_API const char *frl_status_name(frl_status status)
{
    /* Compare before negating: -INT_MIN overflows. */
    if (status > FRL_OK || status < FRL_ERR_DEVICE)
        return "FRL_ERR_UNKNOWN_STATUS";
    return status_names[-(int)status];
}

FRL_API const char *frl_last_error(void)
{
    return tls_error;
}

frl_status frl_fail_msg(char *handle_msg, frl_status status, const char *msg)
{
    /* msg may be this thread's own buffer (frl_last_error()): copy it first. */
    char copy[FRL_ERRMSG_SIZE];
    snprintf(copy, sizeof copy, "%s", msg);
    msg = copy;
    snprintf(tls_error, sizeof tls_error, "%s", msg);
    if (handle_msg)
        snprintf(handle_msg, FRL_ERRMSG_SIZE, "%s", msg);
    return status;
}

frl_status frl_fail(char *handle_msg, frl_status status, const char *fmt, ...)
{
    char msg[FRL_ERRMSG_SIZE];
    va_list ap;
    va_start(ap, fmt);
    frl_vsnprintf_c(msg, sizeof msg, fmt, ap); /* numbers as settings are written */
    va_end(ap);
    return frl_fail_msg(handle_msg, status, msg);
}

#define FRL_STR2(x) #x
#define FRL_STR(x) FRL_STR2(x)

FRL_API const char *frl_version_string(void)
{
    return FRL_STR(FRL_VERSION_MAJOR) "." FRL_STR(FRL_VERSION_MINOR) "." FRL_STR(FRL_VERSION_PATCH);
}

FRL_API uint32_t frl_version_number(void)
{
    return FRL_VERSION_NUMBER;
}

FRL_API uint32_t frl_abi_version(void)
{
    return ((uint32_t)FRL_ABI_VERSION_MAJOR << 16) | (uint32_t)FRL_ABI_VERSION_MINOR;
}
