/* A microcontroller-style control loop around a policy exported as C (fastrl export
 * --c), linking nothing of fastrl: no heap, fixed arrays, one act call per control
 * tick. The plant is CartPole-v1 simulated here (Gymnasium's equations and limits,
 * Euler steps, float64 state, float32 observations), standing in for the sensors and
 * the motor of a real cart.
 *
 *   fastrl train CartPole-v1 --steps 200000 --out run
 *   fastrl export run/checkpoint.frl --c cartpole_policy      (add --int8 for int8)
 *   cc -std=c99 -O2 -I. examples/exported_controller.c cartpole_policy.c -lm \
 *      -DPOLICY_HEADER='"cartpole_policy.h"' -DPOLICY_ACT=cartpole_policy_act
 *   ./a.out 20        20 episodes; exits 0 when every one balances for 500 steps
 *
 * tests/test_cli_export.sh builds and runs it with both weight formats. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include POLICY_HEADER

/* Uniform in [-0.05, 0.05) from a 64-bit LCG: reproducible on any libc. */
static double start_value(unsigned long long *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(*s >> 11) / 9007199254740992.0) * 0.1 - 0.05;
}

static void step(double *x, int push_right)
{
    const double gravity = 9.8, masspole = 0.1, total = 1.1, length = 0.5, tau = 0.02;
    double force = push_right ? 10.0 : -10.0;
    double c = cos(x[2]), s = sin(x[2]);
    double temp = (force + masspole * length * x[3] * x[3] * s) / total;
    double thetaacc = (gravity * s - c * temp) /
                      (length * (4.0 / 3.0 - masspole * c * c / total));
    double xacc = temp - masspole * length * thetaacc * c / total;
    x[0] += tau * x[1];
    x[1] += tau * xacc;
    x[2] += tau * x[3];
    x[3] += tau * thetaacc;
}

/* Steps until the pole falls or the cart leaves the track, at most 500. */
static int episode(unsigned long long *seed)
{
    const double theta_limit = 12.0 * 2.0 * 3.14159265358979323846 / 360.0; /* no M_PI in C99 */
    double x[4];
    float obs[4];
    int t, i;
    for (i = 0; i < 4; i++)
        x[i] = start_value(seed);
    for (t = 0; t < 500; t++) {
        for (i = 0; i < 4; i++)
            obs[i] = (float)x[i];
        step(x, POLICY_ACT(obs));
        if (x[0] < -2.4 || x[0] > 2.4 || x[2] < -theta_limit || x[2] > theta_limit)
            return t + 1;
    }
    return t;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long episodes = argc > 1 ? strtol(argv[1], &end, 10) : 10;
    int e, bad = 0;
    unsigned long long seed = 12345;
    /* Read whole and at least 1: "0" or "abc" ran no episode and exited 0, as if every
     * one had balanced. */
    if (argc > 2 || (end && (end == argv[1] || *end)) || episodes < 1 || episodes > 1000000) {
        fprintf(stderr, "usage: %s [EPISODES (1..1000000, default 10)]\n", argv[0]);
        return 2;
    }
    for (e = 0; e < episodes; e++) {
        int len = episode(&seed);
        printf("episode %d: %d steps\n", e, len);
        bad += len < 500;
    }
    printf("%ld of %ld episodes balanced for 500 steps\n", episodes - bad, episodes);
    return bad ? 1 : 0;
}
