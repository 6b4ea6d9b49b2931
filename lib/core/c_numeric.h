/* Numbers in text as the C locale writes and reads them, whatever LC_NUMERIC the host
 * program chose. A game engine or GUI that calls setlocale(LC_ALL, "") in a German
 * locale would otherwise make the library write "0,5" into settings, metrics, latency
 * models and exported source, which other machines and programs cannot read, and
 * refuse "0.5" from its own files. The switch is per thread (uselocale), so other
 * threads of the host keep their locale. */
#ifndef FRL_CORE_C_NUMERIC_H
#define FRL_CORE_C_NUMERIC_H

#include <locale.h>
#include <stdarg.h>
#include <stddef.h>

#include "core/printf_attr.h"

/* Make the calling thread use the C locale until frl_c_numeric_end(its return value). */
locale_t frl_c_numeric_begin(void);
void frl_c_numeric_end(locale_t previous);

/* strtod and vsnprintf in the C locale. */
double frl_strtod_c(const char *text, char **end);
int frl_vsnprintf_c(char *buf, size_t size, const char *fmt, va_list ap) FRL_PRINTF(3, 0);
int frl_snprintf_c(char *buf, size_t size, const char *fmt, ...) FRL_PRINTF(3, 4);

#endif
