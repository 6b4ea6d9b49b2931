#!/usr/bin/env python3
"""Generate the reference transitions for libfastrl's classic-control ports.

The data come from real Gymnasium, pinned, in a virtual environment this
script creates itself:

    python3 tests/data/gen_reference.py --venv /tmp/libfastrl-gymref --out tests/data

With no --venv it uses /tmp/libfastrl-gymref; with no --out, the folder that
holds this script. The outer run makes the venv (if missing), pip installs
the pinned versions into it and runs this script again inside it (--inner).

Each output file <env id>.txt holds '#' header lines, then one transition per
line, whitespace separated:

    elapsed state_before[S] action[A] state_after[S] obs[O] reward terminated truncated

elapsed is the TimeLimit wrapper's step count before the step; states are
Gymnasium's env.unwrapped.state as float64 (%.17g), plus for
MountainCarContinuous-v0 a third value, 1 when that state is a float32
array (see doc/environments.md); discrete actions are integers, box actions
float32 (%.9g, exact); obs are float32 (%.9g); reward is %.17g.
"""

import argparse
import os
import platform
import subprocess
import sys

GYMNASIUM_VERSION = "1.2.2"
NUMPY_VERSION = "2.2.6"
DEFAULT_VENV = "/tmp/libfastrl-gymref"
DEFAULT_SEED = 20251
HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", default=DEFAULT_VENV, help="virtual environment to create/use")
    p.add_argument("--out", default=HERE, help="output folder for the .txt files")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def bootstrap(args):
    """Create the venv with the pinned packages and re-run inside it."""
    py = os.path.join(args.venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", args.venv])
    subprocess.check_call([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           f"gymnasium=={GYMNASIUM_VERSION}", f"numpy=={NUMPY_VERSION}"])
    cmd = [py, os.path.abspath(__file__), "--inner", "--out", os.path.abspath(args.out),
           "--seed", str(args.seed), "--venv", args.venv]
    sys.exit(subprocess.call(cmd))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ---------------------------------------------------------------------------
# Everything below runs inside the venv.

def g17(x):
    return "%.17g" % float(x)


def g9(x):
    import numpy as np
    return "%.9g" % float(np.float32(x))


def find_time_limit(env):
    from gymnasium.wrappers import TimeLimit
    e = env
    while not isinstance(e, TimeLimit):
        e = e.env
    return e


class Spec:
    """What differs between the environments: how to read and write the
    simulator state, how to pick actions, and which segments to record."""

    def __init__(self, env_id, state_dim, discrete):
        self.env_id = env_id
        self.state_dim = state_dim
        self.discrete = discrete

    def get_state(self, env):
        return [float(v) for v in env.unwrapped.state]

    def set_state(self, env, state):
        import numpy as np
        env.unwrapped.state = np.array(state, dtype=np.float64)


class McContinuousSpec(Spec):
    """The state's dtype matters (float64 after reset, float32 after a step),
    so it is recorded as a third state value."""

    def get_state(self, env):
        import numpy as np
        s = np.asarray(env.unwrapped.state)
        return [float(s[0]), float(s[1]), 1.0 if s.dtype == np.float32 else 0.0]

    def set_state(self, env, state):
        import numpy as np
        dtype = np.float32 if state[2] == 1.0 else np.float64
        env.unwrapped.state = np.array(state[:2], dtype=dtype)


def box_action(rng, policy_value=None):
    """A float32 action: mostly uniform over three times the bounds, with
    the exact bounds, zero and values just past the bounds mixed in."""
    import numpy as np
    r = rng.random()
    if policy_value is not None and r < 0.4:
        v = policy_value
    elif r < 0.5:
        v = rng.choice([-1.0, 1.0, 0.0, -0.5, 0.5])
    elif r < 0.6:
        v = np.nextafter(np.float32(rng.choice([-1.0, 1.0])), np.float32(rng.choice([-2, 2])))
    else:
        v = rng.uniform(-3.0, 3.0)
    return float(np.float32(v))


class Recorder:
    def __init__(self, spec, rng):
        import gymnasium as gym
        self.spec = spec
        self.rng = rng
        self.env = gym.make(spec.env_id)
        self.tl = find_time_limit(self.env)
        self.max_steps = self.tl._max_episode_steps
        self.lines = []
        self.n_term = 0
        self.n_trunc = 0

    def start(self, seed=None, state=None, elapsed=0):
        self.env.reset(seed=seed)
        if state is not None:
            self.spec.set_state(self.env, state)
        self.tl._elapsed_steps = elapsed

    def step(self, action):
        import numpy as np
        spec = self.spec
        before = spec.get_state(self.env)
        elapsed = self.tl._elapsed_steps
        if spec.discrete:
            act, act_txt = int(action), [str(int(action))]
        else:
            act = np.array([action], dtype=np.float32)
            act_txt = [g9(act[0])]
        obs, reward, term, trunc, _ = self.env.step(act)
        after = spec.get_state(self.env)
        obs = np.asarray(obs, dtype=np.float32)
        fields = ([str(elapsed)] + [g17(v) for v in before] + act_txt + [g17(v) for v in after]
                  + [g9(v) for v in obs] + [g17(reward), str(int(term)), str(int(trunc))])
        self.lines.append(" ".join(fields))
        self.n_term += int(term)
        self.n_trunc += int(trunc)
        return term or trunc

    def segment(self, policy, steps, seed=None, state=None, elapsed=0, jump=None):
        """Up to `steps` steps; at step index jump[0] the elapsed counter is
        set to jump[1] so the time limit is reached without long episodes."""
        self.start(seed=seed, state=state, elapsed=elapsed)
        for k in range(steps):
            if jump is not None and k == jump[0]:
                self.tl._elapsed_steps = jump[1]
            if self.step(policy(self.env.unwrapped)):
                break


def record_cartpole(rng, seed):
    spec = Spec("CartPole-v1", 4, True)
    rec = Recorder(spec, rng)
    rand = lambda e: int(rng.integers(2))
    balance = lambda e: int(e.state[2] + 0.5 * e.state[3] > 0)
    for k in range(10):
        rec.segment(rand, 500, seed=seed + k)
    for k in range(3):
        rec.segment(balance, 12, seed=seed + 100 + k, jump=(4, 493))
    for k in range(60):
        state = [rng.uniform(-2.5, 2.5), rng.uniform(-3, 3), rng.uniform(-0.25, 0.25),
                 rng.uniform(-3, 3)]
        elapsed = int(rng.choice([0, int(rng.integers(500)), 498, 499]))
        rec.segment(rand, 2, state=state, elapsed=elapsed)
    return rec


def record_pendulum(rng, seed):
    spec = Spec("Pendulum-v1", 2, False)
    rec = Recorder(spec, rng)
    rand = lambda e: box_action(rng) * 2.0
    for k in range(5):
        rec.segment(rand, 40, seed=seed + k, jump=(25, 195))
    specials = [3.141592653589793, -3.141592653589793, 0.0, -0.0, 9.42477796076938,
                -9.42477796076938, 1e-300, -1e-17]
    for k in range(90):
        th = specials[k] if k < len(specials) else rng.uniform(-20, 20)
        state = [th, rng.uniform(-9, 9)]
        elapsed = int(rng.choice([0, int(rng.integers(200)), 199]))
        rec.segment(rand, 2, state=state, elapsed=elapsed)
    return rec


def record_acrobot(rng, seed):
    import numpy as np
    spec = Spec("Acrobot-v1", 4, True)
    rec = Recorder(spec, rng)

    def pump(e):
        if rng.random() < 0.2:
            return int(rng.integers(3))
        return 2 if e.state[2] > 0 else 0

    for k in range(5):
        rec.segment(pump, 40, seed=seed + k, jump=(30, 495))
    for k in range(110):
        state = [rng.uniform(-np.pi, np.pi), rng.uniform(-np.pi, np.pi),
                 rng.uniform(-4 * np.pi, 4 * np.pi), rng.uniform(-9 * np.pi, 9 * np.pi)]
        elapsed = int(rng.choice([0, int(rng.integers(500)), 499]))
        rec.segment(pump, 2, state=state, elapsed=elapsed)
    return rec


def record_mountain_car(rng, seed):
    spec = Spec("MountainCar-v0", 2, True)
    rec = Recorder(spec, rng)

    def pump(e):
        if rng.random() < 0.25:
            return int(rng.integers(3))
        return 2 if e.state[1] >= 0 else 0

    for k in range(4):
        rec.segment(pump, 40, seed=seed + k, jump=(25, 190))
    for k in range(100):
        state = [rng.uniform(-1.25, 0.65), rng.uniform(-0.08, 0.08)]
        if k % 5 == 0:      # at the left wall, moving left
            state = [rng.uniform(-1.2, -1.15), rng.uniform(-0.07, -0.03)]
        elif k % 5 == 1:    # just short of the goal
            state = [rng.uniform(0.44, 0.5), rng.uniform(-0.01, 0.07)]
        elapsed = int(rng.choice([0, int(rng.integers(200)), 199]))
        rec.segment(pump, 3, state=state, elapsed=elapsed)
    return rec


def mcc_action(rng, velocity):
    """Each dtype path of a step depends on whether the action is inside
    [-1, 1] (the force stays an np.float32) or outside (it becomes the Python
    float +-1.0), so both are drawn often, with the edges and beyond."""
    import numpy as np
    r = rng.random()
    if r < 0.2:
        v = 3.0 if velocity >= 0 else -3.0
    elif r < 0.3:
        v = rng.choice([-1.0, 1.0, 0.0, -0.5, 0.5])
    elif r < 0.4:
        v = np.nextafter(np.float32(rng.choice([-1.0, 1.0])), np.float32(rng.choice([-2, 2])))
    elif r < 0.75:
        v = rng.uniform(-1.0, 1.0)
    else:
        v = rng.uniform(-3.0, 3.0)
    return float(np.float32(v))


def record_mountain_car_continuous(rng, seed):
    import numpy as np
    spec = McContinuousSpec("MountainCarContinuous-v0", 3, False)
    rec = Recorder(spec, rng)
    policy = lambda e: mcc_action(rng, float(np.asarray(e.state)[1]))
    for k in range(4):
        rec.segment(policy, 40, seed=seed + k, jump=(25, 985))
    for k in range(150):
        state = [rng.uniform(-1.25, 0.65), rng.uniform(-0.08, 0.08)]
        if k % 5 == 0:      # at the left wall, moving left
            state = [rng.uniform(-1.2, -1.15), rng.uniform(-0.07, -0.03)]
        elif k % 5 == 1:    # just short of the goal
            state = [rng.uniform(0.4, 0.45), rng.uniform(-0.01, 0.07)]
        elif k % 5 == 2:    # near the speed limit
            state = [rng.uniform(-0.6, 0.3), rng.choice([-1, 1]) * rng.uniform(0.068, 0.07)]
        flag = float(k % 2)
        if flag:
            state = [float(np.float32(v)) for v in state]
        elapsed = int(rng.choice([0, int(rng.integers(999)), 998]))
        rec.segment(policy, 2, state=state + [flag], elapsed=elapsed)
    # Single float64-state steps with an in-bounds action: the path where
    # float32 and float64 meet inside one expression.
    inside = lambda e: float(np.float32(rng.uniform(-1.0, 1.0)))
    for k in range(120):
        state = [rng.uniform(-1.2, 0.6), rng.uniform(-0.07, 0.07), 0.0]
        rec.segment(inside, 1, state=state, elapsed=int(rng.integers(999)))
    return rec


RECORDERS = [record_cartpole, record_pendulum, record_acrobot, record_mountain_car,
             record_mountain_car_continuous]


def write(rec, out_dir, seed):
    import gymnasium
    import numpy as np
    spec = rec.spec
    env = rec.env
    act_dim = 1
    path = os.path.join(out_dir, spec.env_id + ".txt")
    header = [
        f"libfastrl reference transitions for {spec.env_id}",
        f"generator: tests/data/gen_reference.py --seed {seed}",
        f"gymnasium {gymnasium.__version__}",
        f"numpy {np.__version__}",
        f"python {platform.python_version()}",
        f"cpu: {cpu_model()}",
        f"dims: state {spec.state_dim} action {act_dim} obs {env.observation_space.shape[0]}",
        f"max_episode_steps: {rec.max_steps}",
        "obs_low: " + " ".join(g9(v) for v in env.observation_space.low),
        "obs_high: " + " ".join(g9(v) for v in env.observation_space.high),
    ]
    if spec.discrete:
        header.append(f"action_n: {env.action_space.n}")
    else:
        header.append("action_low: " + " ".join(g9(v) for v in env.action_space.low))
        header.append("action_high: " + " ".join(g9(v) for v in env.action_space.high))
    header += [
        f"transitions: {len(rec.lines)} terminated: {rec.n_term} truncated: {rec.n_trunc}",
        "line: elapsed state_before[state] action[action] state_after[state] obs[obs] "
        "reward terminated truncated",
    ]
    with open(path, "w") as f:
        for h in header:
            f.write("# " + h + "\n")
        for line in rec.lines:
            f.write(line + "\n")
    print(f"{path}: {len(rec.lines)} transitions, {rec.n_term} terminated, "
          f"{rec.n_trunc} truncated")


def inner(args):
    import warnings
    import gymnasium
    import numpy as np
    if gymnasium.__version__ != GYMNASIUM_VERSION or np.__version__ != NUMPY_VERSION:
        sys.exit(f"need gymnasium {GYMNASIUM_VERSION} and numpy {NUMPY_VERSION}, found "
                 f"{gymnasium.__version__} and {np.__version__}")
    # The passive checker warns about probe states outside the observation
    # space; those warnings are expected.
    warnings.filterwarnings("ignore")
    os.makedirs(args.out, exist_ok=True)
    for i, record in enumerate(RECORDERS):
        rng = np.random.default_rng([args.seed, i])
        write(record(rng, args.seed + 1000 * i), args.out, args.seed)


def main():
    args = parse_args()
    if args.inner:
        inner(args)
    else:
        bootstrap(args)


if __name__ == "__main__":
    main()
