/* Frame stacks gathered from a rollout: each frame is stored once, in the ring's slot
 * (one row per step and env) or, for the frames before the rollout began, in the slot's
 * state0 (each env's stack-1 earlier frames, as acting left them: zeros before an
 * episode's first frame). A row's stack is rebuilt from its column when the learner
 * needs it, so a stack of k frames costs memory once, not k times. */
#ifndef FRL_RL_FRAME_STACK_H
#define FRL_RL_FRAME_STACK_H

#include <stddef.h>
#include <stdint.h>

/* Where a rollout's frames are: T steps x B envs of frames fw floats wide. */
typedef struct frl_frame_source {
    int32_t k;               /* frames a stack holds, >= 2 */
    size_t fw;               /* floats per frame */
    int32_t T, B;
    const float *obs;        /* [T x B x fw]: the frame acted on at each step */
    const float *boot;       /* [B x fw]: the frame after the last step (step T) */
    const uint8_t *reset;    /* [T x B]: 1 where the step autoreset, so the next frame
                                starts an episode */
    const float *state0;     /* [B x (k - 1) fw]: the frames before step 0, oldest first */
} frl_frame_source;

/* The stack of env b at step t (0 <= t <= T; T: the bootstrap frame) into out
 * [k x fw], oldest frame first: the frames of steps t - k + 1 .. t, zeros for the steps
 * before the episode of step t began. */
void frl_frame_stack_row(const frl_frame_source *s, int32_t t, int32_t b, float *out);

#endif
