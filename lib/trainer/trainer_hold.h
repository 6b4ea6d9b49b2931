/* Who may use a trainer while another call runs: a train call holds it, a save or
 * set_output made outside one holds it for its length, and the metrics callback's own
 * save and set_output run inside the train call that holds it. */
#ifndef FRL_TRAINER_TRAINER_HOLD_H
#define FRL_TRAINER_TRAINER_HOLD_H

#include "trainer/trainer_state.h"

/* Runs t's metrics callback; frl_trainer_in_callback(t) is 1 on this thread meanwhile. */
int frl_trainer_run_callback(frl_trainer *t);
/* 1 on the thread running t's metrics callback, while it runs (the sync sampler is
 * between updates then: the one moment of a train call at which a save may snapshot
 * the run); another thread gets 0 meanwhile. */
int frl_trainer_in_callback(const frl_trainer *t);
/* Holds t for who (FRL_OK, and 1 in *held to give back with frl_trainer_release), or
 * lets t's own callback through (*held 0); else FRL_ERR_STATE, said on the thread's
 * buffer only (t's belongs to the call that holds it), with why. */
frl_status frl_trainer_hold(frl_trainer *t, const char *who, const char *why, int *held);
void frl_trainer_release(frl_trainer *t, int held);

#endif
