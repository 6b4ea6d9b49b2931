// Built as C++11 with -Wall -Wextra -Werror: the public header stands alone in C++ and
// links from it. header_checks.h says what it prints (for tests/header_layout.py to
// compare with the library's C11) and checks.
#include "header_checks.h"

int main() { return hc_run(); }
