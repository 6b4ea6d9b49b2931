/* Built twice: as strict C99 (-std=c99 -pedantic -Werror: the public header stands
 * alone in C99), and as C11 with the library's flags, the reference that
 * tests/header_layout.py compares the C99 and C++ builds with. header_checks.h says
 * what it prints and checks. */
#include "header_checks.h"

int main(void) { return hc_run(); }
