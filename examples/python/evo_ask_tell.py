#!/usr/bin/env python3
"""OpenAI-ES on CartPole-v1 through the ask/tell interface, with no gradient.

A Population holds P copies of a small policy's acting parameters in one [P, n] float32
block; pop.parameters is a writable numpy view of it. Each generation the optimiser
writes its P candidates straight into that block (es.ask(out=pop.parameters)), the
library plays one episode of every member on a shared vec env (pop.evaluate, each env
taking the next member when its episode ends), and the members' returns go back to the
optimiser (es.tell). The centre of the search distribution (es.best()) is then copied
into the policy, which is saved and evaluated like any other.

    FASTRL_LIBRARY=build/lib/libfastrl.so.0 PYTHONPATH=bindings/python \
        python3 examples/python/evo_ask_tell.py [--generations 60] [--out es-cartpole.frl]

Exits 1 if the final policy's greedy mean return over 100 episodes is below 475 (the
default run reaches 500 in under a second).
"""

import argparse
import sys
import time

import fastrl


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generations", type=int, default=60)
    ap.add_argument("--population", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="save the final policy here")
    args = ap.parse_args()

    rt = fastrl.Runtime(seed=args.seed)
    venv = fastrl.make_vec("CartPole-v1", num_envs=64, runtime=rt)
    policy = fastrl.Policy(venv.single_observation_space, venv.single_action_space,
                           hidden=[16], runtime=rt)
    pop = fastrl.Population(policy, args.population)
    print(f"{pop.members} members of {pop.member_size} acting parameters "
          f"(the policy has {policy.num_parameters})")

    # Short names resolve inside the algorithm's namespace: es.population, es.sigma, es.lr.
    es = fastrl.Evo(pop.parameters[0], algo="es", population=args.population, sigma=0.1,
                    lr=0.05, noise_floats=1 << 20, runtime=rt)
    t0 = time.perf_counter()
    steps = 0
    for g in range(args.generations):
        es.ask(out=pop.parameters)                     # the candidates, into the population
        result = pop.evaluate(venv, episodes=1, seed=g)
        es.tell(result.returns)                        # higher is better
        steps += result.env_steps
        if g % 5 == 4 or g == args.generations - 1:
            print(f"generation {es.generation:3d}  mean return {result.returns.mean():6.1f}  "
                  f"best {result.returns.max():5.0f}  {steps:8d} env steps")
        if result.returns.mean() >= 499:
            break
    print(f"{es.generation} generations in {time.perf_counter() - t0:.2f} s")

    centre, _ = es.best()
    pop.parameters[0] = centre
    pop.copy_to_policy(0, policy)                      # the policy now acts as the centre
    if args.out:
        policy.save(args.out)
        print(f"policy saved to {args.out}")
    returns = fastrl.evaluate(policy, "CartPole-v1", episodes=100, seed=12345)
    print(f"evaluation: 100 greedy episodes, mean return {returns.mean():.1f} "
          f"(min {returns.min():.0f})")
    return 0 if returns.mean() >= 475 else 1


if __name__ == "__main__":
    sys.exit(main())
