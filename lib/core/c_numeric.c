/* The C locale for number text (c_numeric.h). */
#include "core/c_numeric.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

/* Made once and kept for the process: a locale_t may be used by any thread. */
static void make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* (locale_t)0 when the C locale could not be made (no memory): the caller then formats
 * in the host's locale, which is the C locale unless the host changed it. */
locale_t frl_c_numeric_begin(void)
{
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

void frl_c_numeric_end(locale_t previous)
{
    if (previous)
        uselocale(previous);
}

double frl_strtod_c(const char *text, char **end)
{
    locale_t previous = frl_c_numeric_begin();
    double v = strtod(text, end);
    frl_c_numeric_end(previous);
    return v;
}

int frl_vsnprintf_c(char *buf, size_t size, const char *fmt, va_list ap)
{
    locale_t previous = frl_c_numeric_begin();
    int n = vsnprintf(buf, size, fmt, ap);
    frl_c_numeric_end(previous);
    return n;
}

int frl_snprintf_c(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = frl_vsnprintf_c(buf, size, fmt, ap);
    va_end(ap);
    return n;
}
