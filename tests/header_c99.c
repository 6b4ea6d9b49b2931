/* Compiled as strict C99 (-std=c99 -pedantic -Werror): the public header stands alone. */
#include "fastrl.h"

int main(void)
{
    frl_env_callbacks cb;
    frl_env_callbacks_init(&cb);
    return cb.struct_size == sizeof cb ? 0 : 1;
}
