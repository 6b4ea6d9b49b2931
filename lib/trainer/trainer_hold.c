/* Holding a trainer: see trainer_hold.h. */
#include "core/error.h"
#include "trainer/trainer_hold.h"

/* The trainer whose metrics callback this thread runs (a callback may train another
 * trainer, whose callback then nests). */
static _Thread_local const frl_trainer *tls_callback_of;

int frl_trainer_run_callback(frl_trainer *t)
{
    const frl_trainer *outer = tls_callback_of;
    tls_callback_of = t;
    int rc = t->cb(t->cb_user, &t->metrics);
    tls_callback_of = outer;
    return rc;
}

int frl_trainer_in_callback(const frl_trainer *t)
{
    return tls_callback_of == t;
}

frl_status frl_trainer_hold(frl_trainer *t, const char *who, const char *why, int *held)
{
    *held = 0;
    if (frl_trainer_in_callback(t))
        return FRL_OK;
    if (atomic_exchange(&t->running, 1))
        return frl_fail(NULL, FRL_ERR_STATE, "%s: frl_trainer_train is running (or another "
                        "thread's save or set_output): %s", who, why);
    *held = 1;
    return FRL_OK;
}

void frl_trainer_release(frl_trainer *t, int held)
{
    if (held)
        atomic_store(&t->running, 0);
}
