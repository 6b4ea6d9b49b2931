// Compiled as C++11 with -Werror: the public header stands alone and links from C++.
#include "fastrl.h"

int main()
{
    frl_batch_env_callbacks cb;
    frl_batch_env_callbacks_init(&cb);
    return (cb.struct_size == sizeof cb && frl_status_name(FRL_OK)[0] == 'F') ? 0 : 1;
}
