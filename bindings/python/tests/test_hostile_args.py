"""The binding's calls given hostile arguments: each must return or raise a Python
exception, never take the process down (a ctypes binding passes what it is given to C,
so a wrong type, shape, dtype, size or a closed handle that slipped through would be a
crash, or under ASan a memory error inside the library).

A child process makes the calls, each drawn from a fixed seed: a target (a constructor
or a method of a live or a closed object) and, for each of its arguments, a value from
HOSTILE or a valid one. It prints every call before making it, so a crash names the
call; the test then fails with the child's status and its last lines.
"""

import subprocess
import sys
import textwrap

import pytest

from conftest import ASAN

CHILD = textwrap.dedent(r'''
    import os, random, sys, tempfile
    import numpy as np
    import fastrl

    HOSTILE = [
        None, 0, -1, 1, 7, 2**31, -2**31 - 1, 2**63, -2**63, 2**64, 10**30,
        float("nan"), float("inf"), -float("inf"), 1e300, -0.0, True,
        "", "x" * 5000, "\x00", "CartPole-v1\x00junk", "no/such/dir/f", b"\xff\xfe",
        [], [1, 2, 3], [[0.5] * 4] * 4, {}, {"a": 1}, (), object(), 1j,
        np.zeros(0, np.float32), np.zeros(3, np.float64), np.zeros((4, 4), np.float32),
        np.full((4, 4), np.nan, np.float32), np.full((4, 4), np.inf, np.float32),
        np.zeros(4, np.int32), np.full(4, -1, np.int32), np.full(4, 2**31 - 1, np.int32),
        np.zeros(4, np.int64), np.zeros(4, np.uint8), np.zeros(4, object),
        np.zeros((4, 8), np.float32)[:, ::2], np.zeros((4, 4, 4), np.float32),
        np.zeros((4, 4), np.float32).T, np.array(3.0), np.zeros(4, np.bool_),
        np.zeros(10**6, np.float32),
    ]

    rng = random.Random(int(sys.argv[1]))
    tmp = tempfile.mkdtemp()
    os.chdir(tmp)  # relative paths drawn for save and export land here
    rt = fastrl.Runtime(threads=2, seed=1)
    venv = fastrl.make_vec("CartPole-v1", num_envs=4, runtime=rt)
    venv.reset(seed=0)
    pvenv = fastrl.make_vec("Pendulum-v1", num_envs=4, runtime=rt)
    pvenv.reset(seed=0)
    trainer = fastrl.Trainer("CartPole-v1", runtime=rt, **{"train.num_envs": 4,
                                                            "train.rollout": 8})
    policy = trainer.policy
    ckpt = os.path.join(tmp, "ok.frl")
    trainer.save(ckpt)
    closed_venv = fastrl.make_vec("CartPole-v1", num_envs=2, runtime=rt)
    closed_venv.close()
    closed_trainer = fastrl.Trainer("CartPole-v1", runtime=rt, **{"train.num_envs": 2})
    closed_policy = closed_trainer.policy
    closed_trainer.close()
    obs4 = np.zeros((4, 4), np.float32)

    def long_run(steps):
        """A valid budget that would train for minutes: not drawn."""
        try:
            return 10**5 < steps < 2**63
        except TypeError:
            return False

    def pick(valid):
        return rng.choice(HOSTILE) if rng.random() < 0.5 else valid

    # (name, function of picked arguments, valid values); each call draws every argument.
    TARGETS = [
        ("Runtime(threads)", lambda a: fastrl.Runtime(threads=a), [2]),
        ("Runtime(seed)", lambda a: fastrl.Runtime(seed=a), [3]),
        ("make_vec", lambda a, b: fastrl.make_vec(a, num_envs=b, runtime=rt),
         ["CartPole-v1", 2]),
        ("VecEnv.step", lambda a: venv.step(a), [np.zeros(4, np.int32)]),
        ("VecEnv.step continuous", lambda a: pvenv.step(a), [np.zeros((4, 1), np.float32)]),
        ("VecEnv.reset", lambda a: venv.reset(seed=a), [0]),
        ("closed VecEnv.step", lambda a: closed_venv.step(a), [np.zeros(2, np.int32)]),
        ("closed VecEnv.reset", lambda a: closed_venv.reset(seed=a), [0]),
        ("Trainer(env)", lambda a: fastrl.Trainer(a, runtime=rt), ["CartPole-v1"]),
        ("Trainer(option)", lambda a, b: fastrl.Trainer("CartPole-v1", runtime=rt,
                                                        **{str(a): b}),
         ["train.num_envs", 2]),
        ("Trainer.train", lambda a: trainer.train(a) if not long_run(a) else None, [64]),
        ("Trainer.save", lambda a: trainer.save(a), [os.path.join(tmp, "t.frl")]),
        ("Trainer.load", lambda a: fastrl.Trainer.load(a, runtime=rt), [ckpt]),
        ("closed Trainer.train", lambda a: closed_trainer.train(a), [64]),
        ("Policy.load", lambda a: fastrl.Policy.load(a, runtime=rt), [ckpt]),
        ("Policy.act", lambda a, b: policy.act(a, b), [obs4, False]),
        ("Policy.act counter", lambda a, b: policy.act(obs4, counter=a, stream_offset=b),
         [0, 0]),
        ("Policy.forward", lambda a, b, c: policy.forward(a, state=b, reset=c),
         [obs4, None, None]),
        ("Policy.initial_state", lambda a: policy.initial_state(a), [4]),
        ("Policy.export", lambda a, b, c: policy.export(a, b, weights=c),
         [os.path.join(tmp, "p"), "c", "float32"]),
        ("Policy.save", lambda a: policy.save(a), [os.path.join(tmp, "p.frl")]),
        # a policy keeps its trainer alive past close() (doc/python.md): it still acts
        ("Policy.act, its trainer closed", lambda a: closed_policy.act(a), [obs4]),
        ("Population", lambda a: fastrl.Population(policy, a), [4]),
        ("Evo", lambda a, b: fastrl.Evo(a, algo=b, population=4, runtime=rt),
         [np.zeros(policy.num_parameters, np.float32), "es"]),
        ("Config[key] = value", lambda a, b: fastrl.Config().__setitem__(a, b),
         ["train.num_envs", 4]),
        ("Config.parse", lambda a: fastrl.Config().parse(a), ["train.gamma=0.9"]),
        ("Config(**)", lambda a, b: fastrl.Config(**{str(a): b}), ["train.gamma", 0.9]),
        ("describe", lambda a: fastrl.describe(a), ["train.gamma"]),
    ]

    calls = int(sys.argv[2])
    answers = {name: {} for name, _, _ in TARGETS}
    for i in range(calls):
        name, fn, valid = TARGETS[rng.randrange(len(TARGETS))]
        args = [pick(v) for v in valid]
        shown = ", ".join(type(a).__name__ + ("" if isinstance(a, np.ndarray) else
                          "=" + repr(a)[:40]) for a in args)
        print(f"{i}: {name}({shown})", flush=True)
        try:
            fn(*args)
            kind = "returned"
        except Exception as e:  # any Python exception is an answer; a crash is not
            kind = type(e).__name__
        answers[name][kind] = answers[name].get(kind, 0) + 1
    for name, kinds in answers.items():
        print(f"answers {name}: {kinds}")
    # A closed object must refuse every call. Every other target must have both returned
    # (so the valid values reach the library) and raised (so hostile ones were refused),
    # or the draw tested less than it says.
    wrong = [n for n, k in answers.items()
             if (n.startswith("closed") and (not k or "returned" in k))
             or (not n.startswith("closed") and ("returned" not in k or len(k) < 2))]
    print("done" if not wrong else f"unexpected answers from {wrong}", flush=True)
''')


@pytest.mark.threadless
@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_arguments_never_crash(seed):
    calls = 400 if ASAN else 1500
    r = subprocess.run([sys.executable, "-c", CHILD, str(seed), str(calls)],
                       capture_output=True, text=True, timeout=600)
    tail = "\n".join(r.stdout.splitlines()[-5:] + r.stderr.splitlines()[-30:])
    assert r.returncode == 0 and r.stdout.rstrip().endswith("done"), (
        f"status {r.returncode}; the last calls and stderr:\n{tail}")
