/* FRL_PRINTF lets gcc and clang check a printf-style function's format against its
 * arguments. It has a header of its own so that error.h and c_numeric.h, which both
 * declare such functions, need not include each other. */
#ifndef FRL_CORE_PRINTF_ATTR_H
#define FRL_CORE_PRINTF_ATTR_H

#if defined(__GNUC__)
#define FRL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FRL_PRINTF(f, a)
#endif

#endif
