/* Frame stacks rebuilt from a rollout's column (frame_stack.h). */
#include <string.h>

#include "rl/frame_stack.h"

/* Step u's frame starts an episode when step u - 1 autoreset (the ring's flag). Step 0's
 * is known to acting only, which left zeros in state0 for the frames before it. */
static int starts_episode(const frl_frame_source *s, int32_t u, int32_t b)
{
    return u >= 1 && s->reset[(size_t)(u - 1) * (size_t)s->B + (size_t)b];
}

static const float *frame_at(const frl_frame_source *s, int32_t step, int32_t b)
{
    if (step == s->T)
        return s->boot + (size_t)b * s->fw;
    if (step >= 0)
        return s->obs + ((size_t)step * (size_t)s->B + (size_t)b) * s->fw;
    /* before the rollout: state0 holds steps -(k - 1) .. -1 */
    size_t sw = (size_t)(s->k - 1) * s->fw;
    return s->state0 + (size_t)b * sw + (size_t)(s->k - 1 + step) * s->fw;
}

void frl_frame_stack_row(const frl_frame_source *s, int32_t t, int32_t b, float *out)
{
    size_t bytes = sizeof(float) * s->fw;
    int ended = 0; /* an episode began after the frame being placed */
    for (int32_t j = 0; j < s->k; j++) {
        float *dst = out + (size_t)(s->k - 1 - j) * s->fw; /* newest last */
        if (j > 0)
            ended |= starts_episode(s, t - j + 1, b);
        if (ended)
            memset(dst, 0, bytes);
        else
            memcpy(dst, frame_at(s, t - j, b), bytes);
    }
}
