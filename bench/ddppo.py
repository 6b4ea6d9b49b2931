#!/usr/bin/env python3
"""Data-parallel PPO across MPI ranks (dist.mode=ddppo, doc/distributed.md), on this
machine, ranks oversubscribing its cores when there are more ranks than cores:

  1. learning: `mpirun -np 2 fastrl train CartPole-v1 --steps 500000 --set
     dist.mode=ddppo --set train.num_envs=8` (CartPole's 16 envs split over the ranks)
     with train.target_return=475, over --seeds seeds: a seed solves when the mean
     return of the last 100 episodes of all ranks reaches 475 within 500K total steps
     (target: >= 9 of 10 seeds);
  2. throughput: --steps steps with --envs envs per rank on 1, 2 and 4 ranks (each rank
     one thread), beside the same run in one process without dist.mode, and 4 ranks
     with dist.preempt=0.6: env steps/s, each as a ratio to the 1-rank run, and the time
     per update;
  3. collectives: bench_mpi_costs under 2 and 4 ranks: ping-pong latency, and the
     library's all-gather and MPI_Allreduce of the policy's gradient record;
  4. the model of doc/distributed.md checked against 2: an update costs
     t1 x max(1, N / cores) + X x allgather(N), t1 the 1-rank update, X the exchanges an
     update makes (epochs x minibatches gradients, one of advantage moments, one of the
     normaliser and episodes); predicted against measured per rank count.

    python3 bench/ddppo.py [--build build] [--seeds 10] [--steps 200000] [--envs 8]
                           [--skip-learning]
Exit status: 0 whatever the targets; 1 when a command failed; 2 on bad arguments.
"""

import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_peers"))
from runner import resolve, run  # noqa: E402

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
EPOCHS, MINIBATCHES, ROLLOUT = 4, 4, 128  # CartPole-v1's PPO defaults (env_defaults.c)


def mpirun(np_, cmd):
    return ["mpirun", "-np", str(np_)] + cmd


def learning(fastrl, seeds):
    print("## learning: CartPole-v1, 2 ranks x 8 envs, target 475 within 500K steps")
    solved, steps = 0, []
    for seed in range(1, seeds + 1):
        r = run(mpirun(2, [fastrl, "train", "CartPole-v1", "--steps", "500000", "--seed",
                           str(seed), "--quiet", "--set", "dist.mode=ddppo", "--set",
                           "train.num_envs=8", "--set", "train.target_return=475"]), 600)
        if r.error:
            print(f"seed {seed}: FAILED: {r.error}")
            return None
        ok = r.mean_return >= 475 and r.steps <= 500000
        solved += ok
        steps.append(r.steps if ok else None)
        print(f"seed {seed}: mean return {r.mean_return:.1f} at {r.steps} steps "
              f"({r.seconds:.2f} s) {'solved' if ok else 'not solved'}")
    done = sorted(s for s in steps if s is not None)
    med = done[len(done) // 2] if done else float("nan")
    print(f"solved {solved}/{seeds} (target >= {int(0.9 * seeds + 0.999)}/{seeds}); "
          f"median steps to 475 among solved: {med}")
    return solved


def throughput(fastrl, steps, envs):
    print(f"\n## throughput: {steps} steps, {envs} envs a rank, one thread a rank")
    base = [fastrl, "train", "CartPole-v1", "--steps", str(steps), "--seed", "1", "--quiet",
            "--set", f"train.num_envs={envs}", "--set", "runtime.threads=1"]
    rows = {}
    r = run(base, 600)
    if r.error:
        print(f"one process: FAILED: {r.error}")
        return None
    rows[0] = r
    for n in (1, 2, 4):
        r = run(mpirun(n, base + ["--set", "dist.mode=ddppo", "--steps", str(steps * n)]), 600)
        if r.error:
            print(f"{n} ranks: FAILED: {r.error}")
            return None
        rows[n] = r
    r = run(mpirun(4, base + ["--set", "dist.mode=ddppo", "--set", "dist.preempt=0.6",
                              "--steps", str(steps * 4)]), 600)
    if r.error:
        print(f"4 ranks with dist.preempt=0.6: FAILED: {r.error}")
        return None
    rows["4p"] = r
    one = rows[1].sps
    per_update = {}
    print("| ranks | env steps/s | ratio to 1 rank | ms per update |")
    print("| --- | --- | --- | --- |")
    for n in (0, 1, 2, 4, "4p"):
        k = 4 if n == "4p" else max(n, 1)
        ms = 1e3 * ROLLOUT * envs * k / rows[n].sps
        per_update[n] = ms
        name = {0: "no dist.mode (1 process)", "4p": "4, dist.preempt=0.6 (ms: full rollouts)"}.get(n, str(n))
        print(f"| {name} | {rows[n].sps:,.0f} | {rows[n].sps / one:.2f}x | {ms:.2f} |")
    return per_update


def costs(bench, record_bytes):
    print(f"\n## collectives: the gradient record ({record_bytes} bytes) and 8 bytes")
    out = {}
    for n in (2, 4):
        p = subprocess.run(mpirun(n, [bench, "--reps", "300", str(record_bytes), "8"]),
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, **MPI_ENV})
        if p.returncode != 0:
            print(f"{n} ranks: FAILED: {p.stderr.strip()[-400:]}")
            return None
        pp = float(re.search(r"pingpong_us ([0-9.]+)", p.stdout).group(1))
        sizes = {int(b): (float(a), float(s), float(r)) for b, a, s, r in re.findall(
            r"size ([0-9]+) allgather_us ([0-9.]+) sliced_us ([0-9.]+) allreduce_us ([0-9.]+)",
            p.stdout)}
        out[n] = (pp, sizes)
        ag, sl, ar = sizes[record_bytes]
        ag8, _, ar8 = sizes[8]
        print(f"{n} ranks: ping-pong {pp:.2f} us; record: all-gather {ag:.1f} us, by slices "
              f"{sl:.1f} us, MPI_Allreduce {ar:.1f} us; 8 bytes: all-gather {ag8:.1f} us, "
              f"MPI_Allreduce {ar8:.1f} us")
    return out


def model(per_update, coll, record_bytes, cores):
    print(f"\n## model: t(N) = t1 x max(1, N / {cores}) + X x allgather(N), "
          f"X = {EPOCHS * MINIBATCHES + 2}")
    t1 = per_update[1]
    print("| ranks | predicted ms | measured ms | measured / predicted |")
    print("| --- | --- | --- | --- |")
    for n in (2, 4):
        # dist.reduce=auto: the trainer all-gathers the records below 8 ranks
        ag = coll[n][1][record_bytes][0 if n < 8 else 1] / 1e3
        small = coll[n][1][8][0] / 1e3
        pred = t1 * max(1.0, n / cores) + EPOCHS * MINIBATCHES * ag + 2 * small
        print(f"| {n} | {pred:.2f} | {per_update[n]:.2f} | {per_update[n] / pred:.2f} |")


def record_bytes_of(fastrl):
    """The gradient record a group sends: the policy's parameters (the trainer's INFO
    line says how many) padded to 16 floats, and 6 doubles of loss sums (ppo_groups.c)."""
    p = subprocess.run(mpirun(1, [fastrl, "train", "CartPole-v1", "--steps", "2048", "--quiet",
                                  "--verbose", "--set", "dist.mode=ddppo"]),
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"the policy's ([0-9]+) parameters", p.stdout + p.stderr)
    if not m:
        raise SystemExit(f"no parameter count in: {(p.stdout + p.stderr)[-400:]}")
    params = int(m.group(1))
    return (params + 15) // 16 * 16 * 4 + 6 * 8


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=200000)
    ap.add_argument("--envs", type=int, default=8)
    ap.add_argument("--skip-learning", action="store_true")
    a = ap.parse_args()
    if a.seeds < 1 or a.steps < 1 or a.envs < 1:
        ap.error("--seeds, --steps and --envs must be positive")
    os.environ.update(MPI_ENV)
    fastrl = resolve(os.path.join(a.build, "tools", "fastrl"))
    bench = resolve(os.path.join(a.build, "bench", "bench_mpi_costs"))
    for path in (fastrl, bench):
        if not os.path.isfile(path):
            print(f"{path} is missing: build with MPI installed (scripts/setup.sh)")
            return 1
    cores = os.cpu_count() or 1
    print(f"# dist.mode=ddppo on {cores} cores")
    if not a.skip_learning and learning(fastrl, a.seeds) is None:
        return 1
    per_update = throughput(fastrl, a.steps, a.envs)
    record = record_bytes_of(fastrl)
    coll = costs(bench, record)
    if per_update is None or coll is None:
        return 1
    model(per_update, coll, record, cores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
