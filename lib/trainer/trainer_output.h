/* The trainer's outputs: settings.txt, the CSV of metrics, TensorBoard events. */
#ifndef FRL_TRAINER_TRAINER_OUTPUT_H
#define FRL_TRAINER_TRAINER_OUTPUT_H

#include "trainer/trainer_state.h"

frl_status frl_trainer_settings_text(const frl_trainer *t, char *buf, size_t size);
frl_status frl_trainer_write_outputs(frl_trainer *t);
void frl_trainer_close_outputs(frl_trainer *t);

#endif
