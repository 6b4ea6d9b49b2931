#!/usr/bin/env python3
"""Neuroevolution throughput on CartPole-v1: population env steps per second (env steps
plus policy inference of all members, and the searcher's ask/tell) for fastrl's ES,
EvoTorch's VecGymNE and evosax + gymnax under jax.jit, same population and network.

Every system evolves P = 256 members of a 4-64-64-2 tanh MLP (deterministic argmax over
the 2 logits), one episode per member per generation, for --generations generations
(default 20), and the figure is the MEDIAN over generations of (env steps in that
generation) / (wall seconds of that generation). Env steps are the steps each member's
episode actually lived (up to and including its terminating or truncating step, at most
500), summed over the population:

  fastrl        build/tools/fastrl train CartPole-v1 --seed S --steps G*256*500 --quiet
                    --out TMP --set train.algo=es --set es.population=256
                    --set policy.hidden=64,64 --set policy.activation=tanh
                    --set train.num_envs=E --set runtime.threads=T
                (fastrl's OpenAI-ES defaults: es.sigma 0.1, es.lr 0.03, es.episodes 1;
                one row per --num-envs value E, default 64 and 256). The per-generation
                figures come from TMP/metrics.csv (one row per generation: cumulative
                env_steps and seconds), the first G rows; each E is run --fastrl-runs
                times (default 3), spread between the peers, generations pooled.
  evotorch      evotorch.neuroevolution.VecGymNE("CartPole-v1", "Linear(obs_length, 64)
                    >> Tanh() >> Linear(64, 64) >> Tanh() >> Linear(64, act_length)",
                    num_actors=None) (evaluation in this process, no ray), searched by
                    PGPE(popsize=256, ClipUp, stdev 0.05, centre a torch-initialised
                    network); torch.set_num_threads(T), CPU tensors.
                VecGymNE makes one env per member (256) and runs them in lock-step with
                one batched forward of all members' networks per step; with a gym id it
                steps them through EvoTorch's own SyncVectorEnv, a Python loop over 256
                gymnasium CartPoleEnv instances. Env steps: the problem's
                interaction_count (it counts only members whose episode is still
                running; VecGymNE keeps stepping every env until the longest episode of
                the generation ends, so it steps 256 x (longest episode) envs: printed
                as `stepped` for context).
  evotorch-vec  the same, with the env given as a callable returning gymnasium's own
                    numpy-vectorised CartPoleVectorEnv (gymnasium.make_vec(...,
                    vectorization_mode="vector_entry_point")): EvoTorch's evaluator on
                    gymnasium's fastest CartPole. Not in the brief's configuration, shown
                    because it is the fair best case of EvoTorch on this env.
  evosax+gymnax one jax.jit'ed function per generation: evosax Open_ES ask (antithetic,
                    std 0.1, adam lr 0.03, params unravelled by evosax into the MLP's
                    pytree, its ParameterReshaper's successor), a rollout of all members
                    (vmap over members and --episodes episodes) of gymnax CartPole-v1 as
                    a lax.scan over 500 steps, and tell. gymnax episodes are fixed-length
                    scans (a finished env auto-resets and keeps being stepped), so two
                    counts are reported: `counted` = steps before each episode's done
                    (the same definition as fastrl's and EvoTorch's, so this is the
                    comparable one and the one the target is judged on) and `scanned` =
                    256 x 500 x episodes per generation (the work XLA does; it equals
                    `counted` only when every member survives 500 steps, so it is
                    JAX's best case). The compile time (lower().compile()) is reported
                    separately; throughput is given excluding it (median per generation)
                    and including it (all counted steps / (compile + all generations)).
                    The process is pinned to T CPUs; XLA's CPU thread pool is left at
                    its defaults (it sizes itself from the CPUs it may use).

Targets printed (and judged per fastrl --num-envs value): fastrl / evotorch >= 20x;
fastrl / evosax+gymnax (counted, excluding compile) >= 3x. Ratios against evotorch-vec
and against gymnax's scanned steps are printed for context, not judged. The members'
episode lengths differ between systems (their searchers learn at different speeds), and
gymnax's cost per generation is fixed (500 scanned steps per member) while its counted
steps grow with the episode lengths, so the counted ratio mixes throughput with how
fast each searcher lengthens its episodes. For a like-for-like figure the table also
gives fastrl's median over only its generations whose mean episode length is >= 450
(`gens with ep len >= 450`), compared with gymnax's scanned steps (both then step
~500-step episodes), and each system's mean episode length.

The script pins itself (and so its children) to --threads CPUs (--cpus to choose them)
and passes --threads to every system; it reports how busy the rest of the machine was
during each run (other processes' CPU-seconds per wall second), as compare_env.py does.

Setup and run, from the repository root (the peers reuse /tmp/trainvenv's torch, as
bench/requirements-async.txt does; see bench/requirements-evo.txt):
  python3 -m venv /tmp/evovenv
  echo /tmp/trainvenv/lib/python3.11/site-packages \\
      > /tmp/evovenv/lib/python3.11/site-packages/zz_trainvenv.pth
  /tmp/evovenv/bin/pip install -r bench/requirements-evo.txt
  python3 bench/compare_evo.py --python /tmp/evovenv/bin/python [--generations 20]
        [--threads 2] [--num-envs 64,256] [--skip evotorch,evotorch-vec,evosax,fastrl]

A peer whose packages do not import in --python is skipped with the reason printed.
Nothing is installed by this script.
Exit status: 0 when every run ran (the targets are printed, not folded in); 1 when fastrl
has no train command or a run crashed, timed out or printed no result; 2 on bad
arguments.
"""

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "train_peers"))
sys.path.insert(0, HERE)

ENV_ID = "CartPole-v1"
POP = 256
HIDDEN = (64, 64)
MAX_STEPS = 500
NET = "Linear(obs_length, 64) >> Tanh() >> Linear(64, 64) >> Tanh() >> Linear(64, act_length)"
ES_SIGMA, ES_LR = 0.1, 0.03           # fastrl's es.sigma and es.lr defaults, reused by evosax
PEERS = ("evotorch", "evotorch-vec", "evosax")
SYSTEMS = ("fastrl",) + PEERS
PEER_MODULES = {"evotorch": ("torch", "gymnasium", "evotorch"),
                "evotorch-vec": ("torch", "gymnasium", "evotorch"),
                "evosax": ("jax", "jaxlib", "evosax", "gymnax", "optax")}
TARGETS = {"evotorch": 20.0, "evosax": 3.0}
LONG = 450   # a generation whose mean episode length is at least this is 'solved'
PEER_LABELS = {"evotorch": "EvoTorch VecGymNE (gym id)",
               "evotorch-vec": "EvoTorch VecGymNE (CartPoleVectorEnv)",
               "evosax": "evosax+gymnax jit"}


# ================================================================ peer children
# Run as `PYTHON bench/compare_evo.py --child NAME ...`; each prints one line per
# generation and a final `result: {json}` line.


def emit(result):
    print("result: " + json.dumps(result), flush=True)


def child_evotorch(a, vec):
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    import gymnasium as gym
    from evotorch.algorithms import PGPE
    from evotorch.neuroevolution import VecGymNE
    from evotorch.neuroevolution.net import str_to_net

    t0 = time.perf_counter()
    if vec:
        def env(num_envs, **kw):
            return gym.make_vec(ENV_ID, num_envs=num_envs,
                                vectorization_mode="vector_entry_point", **kw)
    else:
        env = ENV_ID
    problem = VecGymNE(env, NET, num_actors=None, num_episodes=a.episodes, device="cpu")
    # Centre: a freshly initialised torch network of the same structure (torch's default
    # init), as fastrl and the evosax child start from a random network, not from ~0
    # (VecGymNE's default initial bounds), whose members all push one action and end
    # their episodes in ~9 steps.
    net = str_to_net(NET, obs_length=4, act_length=2)
    center = torch.nn.utils.parameters_to_vector(net.parameters()).detach()
    assert center.numel() == problem.solution_length
    searcher = PGPE(problem, popsize=POP, center_init=center, center_learning_rate=0.075,
                    stdev_learning_rate=0.1, stdev_init=ES_SIGMA, optimizer="clipup",
                    optimizer_config={"max_speed": 0.15})
    setup = time.perf_counter() - t0
    gens = []
    for g in range(a.generations):
        c0 = problem.interaction_count
        t = time.perf_counter()
        searcher.step()
        dt = time.perf_counter() - t
        steps = problem.interaction_count - c0
        longest = float(searcher.status["pop_best_eval"])  # return == length on CartPole
        envs = problem._num_envs or POP
        gens.append({"steps": steps, "stepped": int(round(envs * longest)) * a.episodes,
                     "seconds": dt, "mean_return": float(searcher.status["mean_eval"])})
        print(f"gen: {g} steps={steps} seconds={dt:.4f} "
              f"mean_return={gens[-1]['mean_return']:.2f}", flush=True)
    envs = problem._env
    emit({"gens": gens, "setup_seconds": setup, "torch_threads": torch.get_num_threads(),
          "solution_length": problem.solution_length, "num_envs": problem._num_envs,
          "env_class": type(getattr(envs, "env", envs)).__name__,
          "searcher": f"PGPE (ClipUp max speed 0.15, center lr 0.075, stdev lr 0.1, "
                      f"stdev {ES_SIGMA}, centre a torch-initialised net)"})


def child_evosax(a):
    import jax
    import jax.numpy as jnp
    import gymnax
    import optax
    from evosax.algorithms import Open_ES

    t0 = time.perf_counter()
    env, env_params = gymnax.make(ENV_ID)
    T = int(env_params.max_steps_in_episode)
    E = a.episodes

    def init_params(key):
        sizes = (4,) + HIDDEN + (2,)
        keys = jax.random.split(key, len(sizes) - 1)
        return [{"w": jax.random.normal(k, (i, o)) / jnp.sqrt(i), "b": jnp.zeros(o)}
                for k, i, o in zip(keys, sizes[:-1], sizes[1:])]

    def act(p, obs):
        h = obs
        for layer in p[:-1]:
            h = jnp.tanh(h @ layer["w"] + layer["b"])
        return jnp.argmax(h @ p[-1]["w"] + p[-1]["b"])

    def rollout(p, key):
        k_reset, k_scan = jax.random.split(key)
        obs, st = env.reset(k_reset, env_params)

        def step(carry, k):
            obs, st, ret, alive, n = carry
            out = env.step(k, st, act(p, obs), env_params)
            if len(out) == 5:
                obs, st, r, done, _ = out
            else:
                obs, st, r, term, trunc, _ = out
                done = jnp.logical_or(term, trunc)
            ret = ret + r * alive
            n = n + alive                      # counts the step that ends the episode
            alive = alive * (1.0 - done.astype(jnp.float32))
            return (obs, st, ret, alive, n), None

        init = (obs, st, jnp.float32(0), jnp.float32(1), jnp.float32(0))
        (_, _, ret, _, n), _ = jax.lax.scan(step, init, jax.random.split(k_scan, T))
        return ret, n

    template = init_params(jax.random.key(a.seed))
    es = Open_ES(POP, template, optimizer=optax.adam(ES_LR),
                 std_schedule=optax.constant_schedule(ES_SIGMA))
    es_params = es.default_params
    state = es.init(jax.random.key(a.seed + 1), template, es_params)

    def generation(state, key):
        k_ask, k_eval, k_tell = jax.random.split(key, 3)
        pop, state = es.ask(k_ask, state, es_params)
        keys = jax.random.split(k_eval, POP * E).reshape((POP, E))
        per_member = jax.vmap(rollout, in_axes=(None, 0))       # episodes
        ret, n = jax.vmap(per_member, in_axes=(0, 0))(pop, keys)  # members
        state, _ = es.tell(k_tell, pop, -ret.mean(axis=1), state, es_params)  # minimises
        return state, ret.mean(), n.sum()

    setup = time.perf_counter() - t0
    t = time.perf_counter()
    compiled = jax.jit(generation).lower(state, jax.random.key(0)).compile()
    compile_s = time.perf_counter() - t
    key = jax.random.key(a.seed + 2)
    gens = []
    for g in range(a.generations):
        key, k = jax.random.split(key)
        t = time.perf_counter()
        state, mean_ret, n = compiled(state, k)
        n = float(jax.block_until_ready(n))
        dt = time.perf_counter() - t
        gens.append({"steps": int(n), "stepped": POP * E * T, "seconds": dt,
                     "mean_return": float(mean_ret)})
        print(f"gen: {g} steps={int(n)} scanned={POP * E * T} seconds={dt:.4f} "
              f"mean_return={float(mean_ret):.2f}", flush=True)
    emit({"gens": gens, "setup_seconds": setup, "compile_seconds": compile_s,
          "scan_length": T, "devices": [str(d) for d in jax.devices()],
          "cpus_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
          else os.cpu_count(),
          "xla_flags": os.environ.get("XLA_FLAGS", ""),
          "searcher": f"Open_ES (antithetic, std {ES_SIGMA}, adam lr {ES_LR})"})


def child_main(a):
    if a.child == "evotorch":
        child_evotorch(a, vec=False)
    elif a.child == "evotorch-vec":
        child_evotorch(a, vec=True)
    elif a.child == "evosax":
        child_evosax(a)
    else:
        sys.exit(f"unknown child {a.child}")


# ================================================================ driver


def peer_problem(python, modules):
    """None and versions when `modules` import in `python`, else why not and None."""
    code = ("import importlib, importlib.metadata as m\n"
            f"mods = {list(modules)!r}\n"
            "for x in mods: importlib.import_module(x)\n"
            "print(' '.join(x + ' ' + m.version(x) for x in mods))")
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True,
                           timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run {python}: {e}", None
    if p.returncode != 0:
        return (f"{python} cannot import {', '.join(modules)}: "
                f"{p.stderr.strip()[-300:]}. Install them as this script's docstring "
                "says (pip install -r bench/requirements-evo.txt into /tmp/evovenv) and "
                "pass --python /tmp/evovenv/bin/python"), None
    return None, p.stdout.strip().splitlines()[-1]


class Run:
    """One child run: per-generation figures plus what the child reported."""

    def __init__(self, name, label):
        self.name, self.label = name, label
        self.gens, self.info, self.error = [], {}, None
        self.wall = self.other_load = self.maxrss_mb = None


def measure(cmd, timeout):
    """run() from runner.py plus how busy the rest of the machine was meanwhile."""
    from compare_env import busy_seconds, own_seconds
    from runner import run as run_child
    b0, o0 = busy_seconds(), own_seconds()
    r = run_child(cmd, timeout)
    b1, o1 = busy_seconds(), own_seconds()
    other = None
    if b0 is not None and r.wall > 0:
        other = max(0.0, ((b1 - b0) - (o1 - o0)) / r.wall)
    return r, other


def fastrl_run(a, E):
    run = Run("fastrl", f"fastrl num_envs={E}")
    with tempfile.TemporaryDirectory(prefix="fastrl_evo_") as out:
        cmd = [a.fastrl, "train", ENV_ID, "--seed", str(a.seed),
               "--steps", str(a.generations * POP * MAX_STEPS * a.episodes), "--quiet",
               "--out", out, "--set", "train.algo=es", "--set", f"es.population={POP}",
               "--set", f"es.episodes={a.episodes}",
               "--set", "policy.hidden=" + ",".join(map(str, HIDDEN)),
               "--set", "policy.activation=tanh", "--set", f"train.num_envs={E}",
               "--set", f"runtime.threads={a.threads}"]
        run.cmd = cmd
        r, run.other_load = measure(cmd, a.timeout)
        run.wall, run.maxrss_mb = r.wall, r.maxrss_mb
        if r.error:
            run.error = r.error
            return run
        run.info = {"whole_run_sps": r.sps, "final_return": r.mean_return}
        try:
            with open(os.path.join(out, "metrics.csv")) as f:
                rows = list(csv.DictReader(f))
        except OSError as e:
            run.error = f"no metrics.csv: {e}"
            return run
    # env_steps, episodes and seconds are cumulative (seconds from the start of training)
    prev_steps, prev_eps, prev_s = 0, 0, 0.0
    for row in rows[:a.generations]:
        steps, sec = int(float(row["env_steps"])), float(row["seconds"])
        eps = int(float(row["episodes"]))
        run.gens.append({"steps": steps - prev_steps, "seconds": sec - prev_s,
                         "mean_return": float(row["mean_return"]),
                         "episodes": eps - prev_eps})
        prev_steps, prev_eps, prev_s = steps, eps, sec
    if len(run.gens) < a.generations:
        run.error = f"only {len(run.gens)} generations in metrics.csv"
    else:
        run.info["first_gens_sps"] = prev_steps / prev_s if prev_s > 0 else None
    return run


def peer_run(a, name):
    run = Run(name, PEER_LABELS[name])
    gens = a.evotorch_generations if name.startswith("evotorch") else a.generations
    cmd = [a.python, os.path.abspath(__file__), "--child", name, "--generations", str(gens),
           "--threads", str(a.threads), "--seed", str(a.seed), "--episodes",
           str(a.episodes)]
    run.cmd = cmd
    r, run.other_load = measure(cmd, a.timeout)
    run.wall, run.maxrss_mb = r.wall, r.maxrss_mb
    lines = [ln for ln in r.output.splitlines() if ln.startswith("result: ")]
    if r.error and r.error.startswith("timed out"):
        run.error = r.error
        return run
    if r.rc != 0 or not lines:
        run.error = (f"exited with status {r.rc}, no result line: "
                     f"{(r.stderr or r.output).strip()[-600:]}")
        return run
    run.info = json.loads(lines[-1][len("result: "):])
    run.gens = run.info.pop("gens")
    return run


def rate(gens, key="steps"):
    """Median over generations of steps / seconds."""
    return statistics.median(g[key] / g["seconds"] for g in gens if g["seconds"] > 0)


def fmt(x, digits=0):
    return "n/a" if x is None else f"{x:,.{digits}f}"


def ratio(x, y):
    return None if not x or not y else x / y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter with the peers installed (default: this one)")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpus", default=None, help="CPUs to pin to, e.g. 0,1; 'none': unpinned")
    ap.add_argument("--generations", type=int, default=20)
    ap.add_argument("--evotorch-generations", type=int, default=None,
                    help="generations for the EvoTorch runs (default --generations; the "
                         "gym-id one takes up to ~10 s a generation)")
    ap.add_argument("--episodes", type=int, default=1, help="episodes per member")
    ap.add_argument("--num-envs", default="64,256", help="fastrl train.num_envs values")
    ap.add_argument("--fastrl-runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", default="", help=f"comma list of {', '.join(SYSTEMS)}")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per run")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child_main(a)
    skip = {s for s in a.skip.split(",") if s}
    known = set(SYSTEMS)
    if skip - known:  # a misspelt peer ran unsaid
        ap.error(f"--skip: unknown {', '.join(sorted(skip - known))}")
    try:
        num_envs = [int(x) for x in a.num_envs.split(",") if x]
    except ValueError:
        num_envs = []
    if (skip - set(SYSTEMS) or not num_envs or a.generations < 1 or a.threads < 1
            or a.fastrl_runs < 1 or a.episodes < 1):
        ap.print_usage()
        print("bad arguments: --skip takes " + ", ".join(SYSTEMS) + "; --num-envs a comma "
              "list of integers; counts must be >= 1")
        return 2
    a.evotorch_generations = a.evotorch_generations or a.generations

    from compare_env import cpu_model, pin
    from runner import fastrl_train_problem, resolve
    a.fastrl = resolve(a.fastrl)
    cpus = pin(a.threads, a.cpus)
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; pinned to "
          f"{cpus if cpus else 'none (unpinned)'}; {platform.python_implementation()} "
          f"{platform.python_version()}")
    print(f"task: {ENV_ID}, population {POP}, MLP 4-{'-'.join(map(str, HIDDEN))}-2 tanh, "
          f"argmax actions, {a.episodes} episode(s) per member, {a.generations} "
          f"generations (EvoTorch {a.evotorch_generations}), {a.threads} threads")

    status = 0
    problems, versions = {}, {}
    if "fastrl" not in skip:
        p = fastrl_train_problem(a.fastrl)
        if p:
            problems["fastrl"] = p
            status = 1
    for name in PEERS:
        if name in skip:
            continue
        p, v = peer_problem(a.python, PEER_MODULES[name])
        if p:
            problems[name] = p
        else:
            versions[name] = v
    for name, p in problems.items():
        print(f"skipped {name}: {p}")
    for name, v in dict.fromkeys(versions.values(), None).items():
        print(f"versions: {name}")
    active = [s for s in SYSTEMS if s not in skip and s not in problems]

    # Interleaved: fastrl (every E), a peer, fastrl, the next peer, ... so that a noisy
    # patch of a shared machine is seen by fastrl's runs as well.
    runs = {}
    peers = [p for p in PEERS if p in active]
    order = []
    for i in range(max(a.fastrl_runs, len(peers))):
        if "fastrl" in active and i < a.fastrl_runs:
            order += [("fastrl", E) for E in num_envs]
        if i < len(peers):
            order.append((peers[i], None))
    for name, E in order:
        r = fastrl_run(a, E) if name == "fastrl" else peer_run(a, name)
        key = r.label
        runs.setdefault(key, []).append(r)
        if r.error:
            status = 1
            print(f"run {r.label}: FAILED: {r.error}\n  command: {' '.join(r.cmd)}",
                  flush=True)
        else:
            print(f"run {r.label}: {len(r.gens)} generations, median "
                  f"{fmt(rate(r.gens))} env steps/s, wall {r.wall:.1f} s, other load "
                  f"{fmt(r.other_load, 2)} CPUs", flush=True)

    # ------------------------------------------------------------ table
    def pooled(label):
        ok = [r for r in runs.get(label, []) if not r.error]
        return ok, [g for r in ok for g in r.gens]

    fast = {}
    for E in num_envs:
        ok, gens = pooled(f"fastrl num_envs={E}")
        if gens:
            fast[E] = rate(gens)
    rows = []   # (system, sps, context, key of the peer's rate or None)
    fast_long = {}
    for E in num_envs:
        ok, gens = pooled(f"fastrl num_envs={E}")
        if not gens:
            continue
        steps = sum(g["steps"] for g in gens)
        eps = sum(g["episodes"] for g in gens)
        ctx = (f"{len(ok)} runs x {a.generations} gens; per-run medians "
               f"{', '.join(fmt(rate(r.gens)) for r in ok)}; median gen "
               f"{statistics.median(g['seconds'] for g in gens) * 1e3:.1f} ms; mean ep len "
               f"{steps / max(eps, 1):.0f}; all {a.generations} gens incl. start-up "
               f"{fmt(statistics.median(r.info['first_gens_sps'] for r in ok))} steps/s; "
               f"return at gen {a.generations} {ok[0].gens[-1]['mean_return']:.0f}; RSS "
               f"{max(r.maxrss_mb for r in ok):.0f} MB; other load "
               + ", ".join(f"{r.other_load or 0:.2f}" for r in ok) + " CPUs")
        rows.append((f"fastrl ES (num_envs={E})", fast[E], ctx, None))
        long_gens = [g for g in gens if g["steps"] >= LONG * g["episodes"]]
        if long_gens:
            fast_long[E] = rate(long_gens)
            rows.append((f"fastrl ES (num_envs={E}), gens with ep len >= {LONG}",
                         fast_long[E], f"{len(long_gens)} of the {len(gens)} generations "
                         f"above, those whose mean episode length is >= {LONG}", None))
    peer_rates = {}
    for name in peers:
        ok, gens = pooled(PEER_LABELS[name])
        if not gens:
            continue
        r = ok[0]
        n = len(gens)
        steps = sum(g["steps"] for g in gens)
        mean_len = steps / (n * POP * a.episodes)
        med_ms = statistics.median(g["seconds"] for g in gens) * 1e3
        common = (f"{n} gens; median gen {med_ms:.1f} ms; mean ep len {mean_len:.0f}; "
                  f"return at gen {n} {gens[-1]['mean_return']:.0f}; RSS {r.maxrss_mb:.0f} MB; "
                  f"other load {r.other_load or 0:.2f} CPUs")
        if name.startswith("evotorch"):
            sps = rate(gens)
            peer_rates[name] = sps
            rows.append((f"{r.label}", sps,
                         f"{common}; stepped (256 x longest ep) {fmt(rate(gens, 'stepped'))}/s;"
                         f" {r.info.get('env_class')} x {r.info.get('num_envs')}, torch "
                         f"threads {r.info.get('torch_threads')}; {r.info.get('searcher')}",
                         name))
        else:
            sps = rate(gens)
            scanned = rate(gens, "stepped")
            comp = r.info["compile_seconds"]
            with_comp = steps / (comp + sum(g["seconds"] for g in gens))
            peer_rates["evosax"], peer_rates["evosax-scanned"] = sps, scanned
            peer_rates["evosax-incl-compile"] = with_comp
            info = (f"compile {comp:.2f} s; {r.info.get('devices')}, "
                    f"{r.info.get('cpus_allowed')} CPUs allowed; {r.info.get('searcher')}")
            rows.append((f"{r.label}, counted, excl. compile", sps, f"{common}; {info}",
                         "evosax"))
            rows.append((f"{r.label}, scanned, excl. compile", scanned,
                         f"256 x {r.info.get('scan_length')} x {a.episodes} steps per gen "
                         "(finished episodes keep being stepped)", "evosax-scanned"))
            rows.append((f"{r.label}, counted, incl. compile", with_comp,
                         f"all counted steps / (compile + all gens)", "evosax-incl-compile"))

    print()
    hdr = f"{'system':48} {'env steps/s':>13}"
    for E in fast:
        hdr += f" {'fastrl(E=' + str(E) + ')/peer':>18}"
    print(hdr)
    print("-" * len(hdr))
    for system, sps, ctx, key in rows:
        line = f"{system:48} {fmt(sps):>13}"
        for E in fast:
            line += f" {(fmt(ratio(fast[E], sps), 1) + 'x') if key else '':>18}"
        print(line)
    print("\nabsolute context:")
    for system, sps, ctx, key in rows:
        print(f"  {system}: {ctx}")

    print("\ntargets (median per-generation env steps/s; counted env steps):")
    for peer, target in TARGETS.items():
        for E in fast:
            x = ratio(fast[E], peer_rates.get(peer))
            verdict = "not checked" if x is None else ("pass" if x >= target else "FAIL")
            name = {"evotorch": "EvoTorch VecGymNE (gym id)",
                    "evosax": "evosax+gymnax, excl. compile"}[peer]
            print(f"  fastrl(num_envs={E}) / {name} >= {target:g}x: "
                  f"{fmt(x, 1) + 'x' if x else 'n/a'}  {verdict}")
    print("  context, not judged:")
    for peer, what in (("evotorch-vec", "EvoTorch VecGymNE (CartPoleVectorEnv)"),
                       ("evosax-scanned", "evosax+gymnax scanned steps, excl. compile"),
                       ("evosax-incl-compile", "evosax+gymnax counted, incl. compile")):
        for E in fast:
            x = ratio(fast[E], peer_rates.get(peer))
            print(f"    fastrl(num_envs={E}) / {what}: {fmt(x, 1) + 'x' if x else 'n/a'}")
    for E in fast:
        x = ratio(fast_long.get(E), peer_rates.get("evosax-scanned"))
        print(f"    fastrl(num_envs={E}, only its generations with mean episode length >= "
              f"{LONG}) / evosax+gymnax scanned steps: {fmt(x, 1) + 'x' if x else 'n/a'}"
              "  (both at ~500-step episodes)")
    return status


if __name__ == "__main__":
    sys.exit(main())
