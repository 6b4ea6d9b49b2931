#!/usr/bin/env python3
"""fastrl next to Sample Factory 2 on a pixel env: sampling, APPO training, FLOP floor.

    python3 bench/compare_sf.py [--env PixelGrid-v0] [--set KEY=VALUE ...] [--envs 32]
        [--rollout 32] [--minibatches 1] [--epochs 1] [--seconds 45 | --steps N]
        [--frame-skip K] [--encoder simple|nature] [--venv /tmp/sfvenv]

Run from the repository root after `ninja -C build`. The driver needs only the standard
library: it makes (or reuses) the venv --venv with bench/requirements-sf.txt (see that
file: torch and gymnasium first, CPU wheels where download.pytorch.org is reachable, else
taken from --torch-from through a .pth line; then Sample Factory 2.1.1 --no-deps with
numpy 2.3.5) and runs every measurement as a child of that venv's python, with the
binding imported from bindings/python and FASTRL_LIBRARY=build/lib/libfastrl.so.0 (as
compare_python.py does). Everything is pinned to --cpus (default: the first 2 this
process may use; os.sched_setaffinity, inherited by the children).

Same workload on both sides: ENV (a built-in pixel env; spaces read from the library),
--envs N envs, `--set` options (fastrl `train --set` verbatim; the env.* ones also to
every VecEnv made here, so both sides step the same env at the same resolution), the
same encoder (simple = SF's convnet_simple: 32 8x8/4, 64 4x4/2, 128 3x3/2; nature = SF's
convnet_atari), then one shared 512-unit ReLU layer and the two heads, the same rollout
T, T*N/M samples per minibatch, M minibatches, E epochs, constant lr. Targets differ:
fastrl's APPO uses V-trace; SF runs GAE, as SF 2.1.1's V-trace path crashes (sf_argv).

1. Sampling ceiling, random actions (no network), one run each after a warm-up, median
   of --windows windows of --sample-seconds:
   - fastrl binding: fastrl.make_vec(ENV, N, threads=T).step(actions), T = len(cpus) and
     T = 1, zero-copy numpy views, actions from 64 precomputed arrays;
   - fastrl CLI: `fastrl bench env ENV --envs N --threads C` (its steps_per_second; it
     has no floor loop for pixel envs, so the reason is printed instead);
   - Sample Factory: SF 2.1.1 has no random-action sampler (its SyncSamplingAPI runs the
     policy), so its rollout workers' env path is stepped in a plain loop: one process per
     SF worker, pinned to one CPU each as SF pins them, each stepping its
     make_env_func_batched() env (SF's BatchedVecEnv wrappers around this script's
     multi-agent env, a fastrl VecEnv of N/workers envs seen as that many agents) with
     actions through SF's preprocess_actions; frames summed over the processes.
2. Training: `fastrl train ENV --set sampler.mode=async ...` (APPO) and SF APPO
   (sample_factory.train.run_rl on the same env, registered with register_env), one after
   the other, --reps times. With --seconds S (default) each runs S seconds of training and
   is stopped with SIGINT (fastrl prints its figures on Ctrl-C; SF 2.1.1's
   --train_for_seconds is never checked, so SF gets SIGINT S seconds after "Signal rollout
   workers to start!"); with --steps N both get N env steps. fastrl's figure is its own
   env_steps_per_second (trainer create to last update); SF's is frames / seconds from
   "Signal rollout workers to start!" to its first "Stopping" line (worker spawn and
   model build excluded), with SF's own `Fps is` 60 s average beside it.
3. FLOP floor, same run: multiply-adds per policy step of the encoder + 512 layer + heads
   at ENV's resolution; per trained frame 1 forward (acting) + E x (forward + backward,
   ~3 forwards); numpy float32 matmul on the layers' im2col GEMM shapes (--gemm-frames
   frames per call, best of 5) with 1 and with C = len(cpus) OpenBLAS threads; the rate
   used is the better of C threads measured and C x one thread (perfect scaling), and
   floor frames/s = rate / FLOPs per policy step x frame skip. Each side's training
   frames/s is printed beside its fraction of that floor.
4. Sample Factory's published VizDoom throughput, for context only.

Frames are counted as Sample Factory counts them: env frames, skipped frames included
(policy steps x --frame-skip; SF gets --env_frameskip=K, so its own FPS is in frames too).
--frame-skip defaults to env.frame_skip from --set, else 4 for the Ray* envs (whose
env.frame_skip=0 means 4), else 1 (PixelGrid-v0 has none).
Autoreset steps count on both sides (fastrl counts them; the SF env returns them as
steps, see FastrlAgents). Exit status: 0 when every part ran, 1 when one failed or a side
could not run, 2 on bad arguments.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_async import numpy_too_new, sf_versions  # noqa: E402
from machine_stats import busy_seconds, cpu_model, own_seconds  # noqa: E402

REQUIREMENTS = os.path.join(HERE, "requirements-sf.txt")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SF_PUBLISHED = ("Sample Factory, published (Petrenko et al. 2020, arXiv:2006.11751): about "
                "146K env frames/s training APPO on VizDoom, frame skip 4, on a 36-core "
                "server with a GPU running the networks; context only, not this machine")
ENCODERS = {  # fastrl policy.encoder -> (SF encoder_conv_architecture, conv layers)
    "simple": ("convnet_simple", [(32, 8, 4), (64, 4, 2), (128, 3, 2)]),
    "nature": ("convnet_atari", [(32, 8, 4), (64, 4, 2), (64, 3, 1)]),
}
FC = 512
SETS = 64

_NUM = r"([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))"
SPS_RE = re.compile(r"^env_steps_per_second:\s*" + _NUM, re.M)
RESULT_RE = re.compile(r"^mean_return:\s*" + _NUM + r"\s+steps:\s*(\d+)\s+seconds:\s*" + _NUM,
                       re.M)
PROGRESS_RET_RE = re.compile(r"steps/s\s+return\s+" + _NUM)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
SF_TS = r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]\[\s*\d+\]\s*"
SF_START_RE = re.compile(SF_TS + r"All inference workers are ready! Signal rollout", re.M)
SF_STOP_RE = re.compile(SF_TS + r"Stopping \S+\.\.\.", re.M)
SF_COLLECTED_RE = re.compile(r"Collected \{0: (\d+)\}, FPS: " + _NUM)
SF_FPS_RE = re.compile(r"Fps is \(10 sec: " + _NUM + r", 60 sec: " + _NUM + r", 300 sec: "
                       + _NUM + r"\)\. Total num frames: (\d+)")
SF_REWARD_RE = re.compile(r"Avg episode reward: \[\(0, '([-0-9.naif]+)'\)\]")


# =============================================================== children (venv python)
# Run as `python -c "import compare_sf; compare_sf.child()" MODE JSON` with bench/ and
# bindings/python on PYTHONPATH, so that Sample Factory's spawned workers unpickle the
# env factory below as compare_sf.make_sf_env.


def _fastrl():
    import fastrl
    return fastrl


try:  # in the venv's children; the driver may run without gymnasium
    import gymnasium as _gym
    _EnvBase = _gym.Env  # SF's gymnasium wrappers accept only a gymnasium.Env
except ImportError:
    _EnvBase = object


class FastrlAgents(_EnvBase):
    """A fastrl VecEnv of N envs as one Sample Factory multi-agent env of N agents
    (is_multiagent, num_agents = N), stepped in one call: observations HWC -> CHW as a
    zero-copy view (SF copies them into its rollout buffers before the next step), rewards
    and flags as the library's arrays, infos an empty dict (no per-agent dicts).

    The library autoresets in Gymnasium's next-step mode: the step after an episode ends
    is a reset step (reward 0, both flags 0, action ignored) where SF expects the reset in
    the same step. SF then sees one extra no-op transition per episode; the done flag was
    on the step before, so its returns are cut there, and its episode sums are unchanged
    (reward 0). fastrl counts those steps too, so frames are counted alike."""

    metadata = {"render_modes": []}
    render_mode = None
    spec = None

    def __init__(self, env_id, num_agents, config, seed=0):
        import gymnasium as gym
        import numpy as np
        fastrl = _fastrl()
        self.venv = fastrl.make_vec(env_id, num_envs=num_agents, threads=1, config=config)
        h, w, c = self.venv.single_observation_space.shape
        self.observation_space = gym.spaces.Box(0, 255, (c, h, w), np.uint8)
        self.action_space = gym.spaces.Discrete(int(self.venv.single_action_space.n))
        self.num_agents = num_agents
        self.is_multiagent = True
        self._seed = seed
        self._np = np
        # Views of read-only library memory: torch.from_numpy warns once per process.
        import warnings
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")

    def reset(self, *, seed=None, options=None):
        obs, _ = self.venv.reset(seed=self._seed if seed is None else seed)
        return obs.transpose(0, 3, 1, 2), [{} for _ in range(self.num_agents)]

    def step(self, actions):
        obs, rew, term, trunc, _ = self.venv.step(self._np.asarray(actions))
        return obs.transpose(0, 3, 1, 2), rew, term, trunc, {}

    def render(self):
        return None

    def close(self):
        self.venv.close()


def _patch_sf_for_gymnasium1():
    """gymnasium 1.x dropped Wrapper.__getattr__, which SF 2.1.1 relies on: its
    BatchedListToDictWrapper (the wrapper of every multi-agent env in batched sampling)
    then has no num_agents, get_multiagent_info() says 1 agent, and the first step fails
    with actions of shape (1,). Forward the two attributes (class level, so it holds in
    every SF process: make_sf_env runs before SF wraps the env)."""
    from sample_factory.algo.utils import make_env as me
    cls = me.BatchedListToDictWrapper
    if not isinstance(cls.__dict__.get("num_agents"), property):
        cls.num_agents = property(lambda self: self.env.num_agents)
        cls.is_multiagent = property(lambda self: self.env.is_multiagent)


def make_sf_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    _patch_sf_for_gymnasium1()
    env_id = 0 if env_config is None else int(env_config.get("env_id", 0))
    seed = (cfg.seed or 0) * 100003 + env_id
    return FastrlAgents(cfg.fastrl_env, cfg.fastrl_agents, json.loads(cfg.fastrl_config), seed)


def sf_parse(argv):
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    _patch_sf_for_gymnasium1()
    parser, cfg = parse_sf_args(argv=argv)
    parser.add_argument("--fastrl_env", required=True, help="fastrl built-in env id")
    parser.add_argument("--fastrl_agents", type=int, required=True,
                        help="fastrl envs per SF env (its agents)")
    parser.add_argument("--fastrl_config", default="{}", help="env.* settings, JSON")
    cfg = parse_full_cfg(parser, argv)
    register_env(cfg.env, make_sf_env)
    return cfg


def _windows(step, n_frames, seconds, windows, start_at=None):
    for _ in range(3):  # warm-up
        step()
    if start_at:
        while time.time() < start_at:
            step()
    rates = []
    for _ in range(windows):
        k, t0 = 0, time.perf_counter()
        while True:
            step()
            k += 1
            t = time.perf_counter()
            if t - t0 >= seconds:
                break
        rates.append(k * n_frames / (t - t0))
    return rates


def child_info(p):
    fastrl = _fastrl()
    v = fastrl.make_vec(p["env"], num_envs=1, threads=1, config=p["config"])
    sp = v.single_observation_space
    out = dict(obs_shape=list(sp.shape), obs_dtype=str(sp.dtype),
               n_actions=int(getattr(v.single_action_space, "n", 0)),
               action_space=str(v.single_action_space), library=fastrl.library_version(),
               library_path=fastrl.library_path())
    import numpy
    out["numpy"] = numpy.__version__
    try:
        import importlib.metadata as m
        import gymnasium
        import torch
        out.update(torch=torch.__version__, gymnasium=gymnasium.__version__,
                   sample_factory=m.version("sample-factory"))
    except Exception as e:  # noqa: BLE001 (reported, not fatal for the fastrl parts)
        out["sf_error"] = repr(e)
    return out


def child_sample_fastrl(p):
    import numpy as np
    fastrl = _fastrl()
    n = p["envs"]
    v = fastrl.make_vec(p["env"], num_envs=n, threads=p["threads"], config=p["config"])
    rng = np.random.default_rng(12345)
    acts = [rng.integers(0, int(v.single_action_space.n), n).astype(np.int32)
            for _ in range(SETS)]
    v.reset(seed=1)
    k = [0]

    def step():
        v.step(acts[k[0] % SETS])
        k[0] += 1
    rates = _windows(step, n * p["frame_skip"], p["seconds"], p["windows"])
    return dict(rates=rates)


def child_sample_sf(p):
    os.sched_setaffinity(0, [p["cpu"]])
    import torch
    torch.set_num_threads(1)  # as SF's rollout workers do
    from sample_factory.algo.sampling.batched_sampling import preprocess_actions
    from sample_factory.algo.utils.env_info import extract_env_info
    from sample_factory.algo.utils.make_env import make_env_func_batched
    from sample_factory.utils.attr_dict import AttrDict
    cfg = sf_parse(p["argv"])
    w = p["worker"]
    envs = [make_env_func_batched(cfg, AttrDict(worker_index=w, vector_index=i,
                                                env_id=w * cfg.num_envs_per_worker + i))
            for i in range(cfg.num_envs_per_worker)]
    info = extract_env_info(envs[0], cfg)
    for e in envs:
        e.reset()
    agents = envs[0].num_agents
    g = torch.Generator().manual_seed(w)
    acts = [torch.randint(0, info.action_space.n, (agents, 1), generator=g) for _ in range(SETS)]
    k = [0]

    def step():
        for e in envs:  # the worker's splits, in turn
            e.step(preprocess_actions(info, acts[k[0] % SETS]))
        k[0] += 1
    frames = agents * len(envs) * p["frame_skip"]
    rates = _windows(step, frames, p["seconds"], p["windows"], start_at=p["start_at"])
    return dict(rates=rates, agents=agents, envs=len(envs),
                wrappers=type(envs[0]).__name__ + " > " + type(envs[0].env).__name__)


def child_gemm(p):
    import numpy as np
    rng = np.random.default_rng(0)
    out = []
    for m, k, n in p["shapes"]:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c = np.empty((m, n), np.float32)
        np.matmul(a, b, out=c)
        samples = []
        for _ in range(5):
            reps, t0 = 0, time.perf_counter()
            while True:
                np.matmul(a, b, out=c)
                reps += 1
                t = time.perf_counter()
                if t - t0 >= p["seconds"]:
                    break
            samples.append((t - t0) / reps)
        out.append(min(samples))  # the floor: noise only slows a sample
    return dict(seconds=out, numpy=np.__version__)


def child_sf_train(p):
    from sample_factory.train import run_rl
    cfg = sf_parse(p["argv"])
    return dict(status=int(run_rl(cfg)))


def child():
    mode, params = sys.argv[1], json.loads(sys.argv[2])
    fn = {"info": child_info, "sample-fastrl": child_sample_fastrl,
          "sample-sf": child_sample_sf, "gemm": child_gemm, "sf-train": child_sf_train}[mode]
    result = fn(params)
    sys.stdout.flush()
    print("RESULT " + json.dumps(result), flush=True)


# =============================================================== driver (any python3)


def child_env(a, extra=None):
    env = dict(os.environ)
    paths = [HERE, os.path.join(REPO, "bindings", "python")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("FASTRL_LIBRARY", a.library)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def child_cmd(a, mode, params):
    return [a.python, "-c", "import compare_sf; compare_sf.child()", mode, json.dumps(params)]


def call_child(a, mode, params, timeout=600, extra_env=None):
    """(result dict, None) or (None, error text)."""
    try:
        p = subprocess.run(child_cmd(a, mode, params), capture_output=True, text=True,
                           timeout=timeout, env=child_env(a, extra_env), cwd=REPO)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    m = re.search(r"^RESULT (.*)$", p.stdout, re.M)
    if p.returncode != 0 or not m:
        return None, f"status {p.returncode}: " + tail(p.stderr or p.stdout, 6)
    return json.loads(m.group(1)), None


def tail(text, n=10):
    lines = ANSI_RE.sub("", text).strip().splitlines()[-n:]
    return "\n".join("    " + ln for ln in lines)


# --------------------------------------------------------------- the venv


def pins():
    out = {}
    with open(REQUIREMENTS) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, ver = line.split("==", 1)
                out[name.strip().lower()] = ver.strip()
    return out


VENV_CHECK = ("import importlib.metadata as m, numpy, torch, gymnasium, sample_factory, "
              "faster_fifo, signal_slot, tensorboardX\n"
              "print(m.version('sample-factory'), torch.__version__, gymnasium.__version__, "
              "numpy.__version__)")


def venv_versions(python):
    return sf_versions(python, VENV_CHECK)


def ensure_venv(a):
    """The venv's python and its versions, making the venv first if needed; or exits."""
    python = os.path.join(a.venv, "bin", "python")
    if os.path.exists(python):
        vers, err = venv_versions(python)
        if vers and not numpy_too_new(vers["numpy"]):
            return python, vers, "reused"
        why = err or f"numpy {vers['numpy']} (SF 2.1.1 needs < 2.4)"
        print(f"venv {a.venv}: not usable ({why.strip().splitlines()[-1]}); installing")
    if a.no_install:
        sys.exit(f"{a.venv} has no working Sample Factory and --no-install was given")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", a.venv], check=True)
    pip = [python, "-m", "pip", "install", "--quiet"]
    donor = os.path.join(a.torch_from, "bin", "python") if a.torch_from else ""
    how = "torch from PyPI/CPU index"
    if donor and os.path.exists(donor):
        q = subprocess.run([donor, "-c", "import sysconfig, torch; "
                            "print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True)
        if q.returncode == 0:
            site = subprocess.run([python, "-c", "import sysconfig; "
                                   "print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip()
            with open(os.path.join(site, "zz_torch_from.pth"), "w") as f:
                f.write(q.stdout.strip() + "\n")
            how = f"torch and gymnasium from {a.torch_from} (.pth line)"
    v = pins()
    print(f"installing into {a.venv} ({how}) ...", flush=True)
    index = [] if how.endswith("(.pth line)") else [  # no torch download: PyPI alone
        "--index-url", TORCH_CPU_INDEX, "--extra-index-url", "https://pypi.org/simple"]
    subprocess.run(pip + [f"torch=={v['torch']}", f"gymnasium=={v['gymnasium']}"] + index,
                   check=True)
    subprocess.run(pip + ["--no-deps", "-r", REQUIREMENTS], check=True)
    vers, err = venv_versions(python)
    if not vers:
        sys.exit(f"{a.venv}: Sample Factory still does not import:\n{err}")
    return python, vers, "made now: " + how


# --------------------------------------------------------------- FLOP model


def network_macs(h, w, c, n_actions, layers):
    """[(name, out h, out w, MACs per frame, (rows per frame, K, N))], total MACs."""
    rows, total = [], 0
    for i, (oc, k, s) in enumerate(layers):
        oh, ow = (h - k) // s + 1, (w - k) // s + 1
        if oh < 1 or ow < 1:
            raise ValueError(f"conv layer {i + 1} ({k}x{k}/{s}) gets {h}x{w}: too small")
        macs = oh * ow * k * k * c * oc
        rows.append((f"conv{i + 1} {oc} {k}x{k}/{s}", oh, ow, macs, (oh * ow, k * k * c, oc)))
        total += macs
        h, w, c = oh, ow, oc
    flat = h * w * c
    rows.append((f"fc {flat}->{FC}", 1, 1, flat * FC, (1, flat, FC)))
    heads = FC * (n_actions + 1)
    rows.append((f"heads {FC}->{n_actions}+1", 1, 1, heads, (1, FC, n_actions + 1)))
    total += flat * FC + heads
    return rows, total


# --------------------------------------------------------------- running a trainer


class Run:
    def __init__(self, cmd, rc, out, wall, t_launch, t_sigint):
        self.cmd, self.rc, self.out, self.wall = cmd, rc, out, wall
        self.t_launch, self.t_sigint = t_launch, t_sigint
        self.fps = None
        self.note = ""
        self.error = None


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_child(cmd, env, log_path, timeout, sigint_when=None):
    """Run cmd in its own process group, output to log_path. sigint_when(log text, seconds
    since launch) -> True sends SIGINT to the child once. On a timeout (or Ctrl-C here)
    the whole group is ended."""
    with open(log_path, "w+") as log:
        t_launch, t0 = time.time(), time.perf_counter()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env,
                             start_new_session=True)
        t_sigint, killed_at = None, None
        try:
            while p.poll() is None:
                now = time.perf_counter() - t0
                if sigint_when and t_sigint is None:
                    with open(log_path, errors="replace") as f:
                        text = ANSI_RE.sub("", f.read())
                    if sigint_when(text, now):
                        t_sigint = time.time()
                        os.kill(p.pid, signal.SIGINT)
                if killed_at is None and now > timeout:
                    killed_at = now
                    _signal_group(p.pid, signal.SIGTERM)
                elif killed_at is not None and now - killed_at > 10:
                    _signal_group(p.pid, signal.SIGKILL)
                time.sleep(0.25)
        except BaseException:
            _signal_group(p.pid, signal.SIGKILL)
            p.wait()
            raise
        wall = time.perf_counter() - t0
        _signal_group(p.pid, signal.SIGKILL)  # stragglers of its group (none normally)
        log.seek(0)
        r = Run(cmd, p.returncode, ANSI_RE.sub("", log.read()), wall, t_launch, t_sigint)
        if killed_at is not None:
            r.error = f"timed out after {timeout:.0f} s"
        return r


def fastrl_settings(a):
    enc_channels = ",".join(str(oc) for oc, _, _ in ENCODERS[a.encoder][1])
    return [f"runtime.threads={len(a.cpus)}", "sampler.mode=async",
            f"policy.encoder={a.encoder}", f"policy.conv_channels={enc_channels}",
            f"policy.hidden={FC}", "policy.shared=true", "policy.activation=relu",
            f"train.num_envs={a.envs}", f"train.rollout={a.rollout}",
            f"train.minibatches={a.minibatches}", f"train.epochs={a.epochs}",
            f"train.lr={a.lr:g}", "train.anneal_lr=false"] + a.set


def fastrl_cmd(a, seed):
    steps = a.steps if a.steps else 10 ** 12
    cmd = [a.fastrl, "train", a.env, "--steps", str(steps), "--seed", str(seed)]
    for kv in fastrl_settings(a):
        cmd += ["--set", kv]
    return cmd


def sf_argv(a, seed, train_dir, experiment):
    arch = ENCODERS[a.encoder][0]
    argv = [f"--env=fastrl_{a.env}", f"--fastrl_env={a.env}",
            f"--fastrl_agents={a.sf_agents}", f"--fastrl_config={json.dumps(a.env_config)}",
            "--algo=APPO", f"--experiment={experiment}", f"--train_dir={train_dir}",
            "--restart_behavior=overwrite", f"--seed={seed}", "--device=cpu",
            f"--num_workers={a.sf_workers}", f"--num_envs_per_worker={a.sf_envs_per_worker}",
            f"--worker_num_splits={min(2, a.sf_envs_per_worker)}",
            "--batched_sampling=True", "--policy_workers_per_policy=1",
            f"--rollout={a.rollout}", f"--batch_size={a.rollout * a.envs // a.minibatches}",
            f"--num_batches_per_epoch={a.minibatches}", f"--num_epochs={a.epochs}",
            f"--encoder_conv_architecture={arch}", "--encoder_conv_mlp_layers", str(FC),
            "--nonlinearity=relu", "--use_rnn=False", "--recurrence=1",
            "--actor_critic_share_weights=True", "--normalize_input=False",
            # GAE: SF 2.1.1's V-trace learner crashes on its first summary (PR #278/#332)
            "--obs_scale=255.0", "--with_vtrace=False", "--normalize_returns=False",
            f"--learning_rate={a.lr:g}", "--lr_schedule=constant",
            f"--env_frameskip={a.frame_skip}", "--summaries_use_frameskip=True",
            "--save_every_sec=1000000", "--save_best_every_sec=1000000",
            "--save_best_after=1000000000000", "--experiment_summaries_interval=10",
            "--with_wandb=False",
            f"--train_for_env_steps={a.steps * a.frame_skip if a.steps else 10 ** 12}"]
    return argv + a.sf_arg


def _ts(m):
    return (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
            + int(m.group(2)) / 1000.0)


def run_fastrl(a, seed, log):
    def when(text, since):
        return not a.steps and since >= a.seconds + 0.5
    r = run_child(fastrl_cmd(a, seed), child_env(a), log, a.timeout, when)
    if r.error:
        return r
    rates, results = SPS_RE.findall(r.out), RESULT_RE.findall(r.out)
    if not rates or (r.rc and r.t_sigint is None):
        r.error = f"status {r.rc}, no env_steps_per_second line:\n{tail(r.out, 8)}"
        return r
    r.fps = float(rates[-1]) * a.frame_skip
    rets = PROGRESS_RET_RE.findall(r.out)
    if results:
        ret, steps, secs = results[-1]
        r.note = (f"{int(steps):,} env steps in {float(secs):.1f} s; training return "
                  f"{rets[0] if rets else '?'} (first progress line) -> {float(ret):.2f} "
                  f"(last 100 episodes)")
    return r


def run_sf(a, seed, tmp, experiment, log):
    argv = sf_argv(a, seed, tmp, experiment)

    def when(text, since):
        if "Traceback" in text:  # a dead SF component: SF itself waits minutes for it
            return True
        if a.steps:
            return False
        m = SF_START_RE.search(text)
        return bool(m) and time.time() - _ts(m) >= a.seconds
    r = run_child(child_cmd(a, "sf-train", dict(argv=argv)), child_env(a), log, a.timeout,
                  when)
    if r.error:
        return r
    start = SF_START_RE.search(r.out)
    stop = SF_STOP_RE.search(r.out, start.end()) if start else None
    collected = SF_COLLECTED_RE.findall(r.out)
    if "Traceback" in r.out or not (start and stop and collected):
        errs = [ln for ln in r.out.splitlines() if re.search(r"Error|Traceback|xception", ln)]
        r.error = (f"status {r.rc}, no training phase or result:\n{tail(r.out, 10)}"
                   + ("\n  first error line: " + errs[0].strip() if errs else ""))
        return r
    frames, sf_fps = int(collected[-1][0]), float(collected[-1][1])
    train_s = _ts(stop) - _ts(start)
    r.fps = frames / train_s if train_s > 0 else None
    fps = SF_FPS_RE.findall(r.out)
    rewards = SF_REWARD_RE.findall(r.out)
    r.note = (f"{frames:,} frames in {train_s:.1f} s of training after "
              f"{_ts(start) - r.t_launch:.1f} s of start-up; SF's own: `Collected` FPS "
              f"{sf_fps:,.0f} (main loop, start-up included), last `Fps is` 60 s "
              f"{float(fps[-1][1]) if fps else float('nan'):,.0f}; avg episode reward "
              f"{rewards[0] if rewards else 'n/a'} (first report) -> "
              f"{rewards[-1] if rewards else 'n/a'} (last)")
    return r


# --------------------------------------------------------------- sampling


def sample_sf(a, argv):
    """Start one plain-loop process per SF worker at the same instant; sum their rates."""
    start_at = time.time() + a.sf_startup
    procs = []
    for w in range(a.sf_workers):
        params = dict(argv=argv, worker=w, cpu=a.cpus[w % len(a.cpus)], start_at=start_at,
                      frame_skip=a.frame_skip, seconds=a.sample_seconds, windows=a.windows)
        procs.append(subprocess.Popen(child_cmd(a, "sample-sf", params), cwd=REPO,
                                      env=child_env(a), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results, errors = [], []
    for p in procs:
        try:
            out, err = p.communicate(timeout=300 + a.sf_startup)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        m = re.search(r"^RESULT (.*)$", out, re.M)
        if p.returncode or not m:
            errors.append(f"status {p.returncode}: " + tail(err or out, 6))
        else:
            results.append(json.loads(m.group(1)))
    if errors:
        return None, errors[0]
    return results, None


def fastrl_cli_sampling(a):
    cmd = [a.fastrl, "bench", "env", a.env, "--envs", str(a.envs), "--threads",
           str(len(a.cpus)), "--seconds", str(a.sample_seconds)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e), cmd
    m = re.search(r"^steps_per_second:\s*" + _NUM, p.stdout, re.M)
    if p.returncode or not m:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"], cmd
    return float(m.group(1)) * a.frame_skip, None, cmd


# --------------------------------------------------------------- report


def fmt(x, digits=0):
    return "n/a" if x is None or x != x else f"{x:,.{digits}f}"


def table(head, rows):
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="PixelGrid-v0", help="a fastrl built-in pixel env")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="fastrl setting for both sides (repeatable): all go to `fastrl "
                         "train`, the env.* ones also to the VecEnvs (binding, SF's env)")
    ap.add_argument("--frame-skip", type=int, default=0,
                    help="frames per env step, for the counts (default: env.frame_skip "
                         "from --set, else 4 for the Ray* envs (their env.frame_skip=0), "
                         "else 1); with a Ray* env it also sets env.frame_skip")
    ap.add_argument("--encoder", choices=sorted(ENCODERS), default="simple")
    ap.add_argument("--envs", type=int, default=32, help="envs N (both sides)")
    ap.add_argument("--rollout", type=int, default=32, help="rollout T (SF's default)")
    ap.add_argument("--minibatches", type=int, default=1,
                    help="minibatches M per epoch; SF batch_size = T*N/M")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--seconds", type=float, default=45,
                    help="training seconds per run (SIGINT after them)")
    ap.add_argument("--steps", type=int, default=0,
                    help="env steps per run instead of --seconds (policy steps; SF gets "
                         "x frame skip as --train_for_env_steps counts frames)")
    ap.add_argument("--reps", type=int, default=1, help="training runs of each, interleaved")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sf-workers", type=int, default=2, help="SF --num_workers")
    ap.add_argument("--sf-envs-per-worker", type=int, default=1,
                    help="SF --num_envs_per_worker (1: one fastrl VecEnv per worker, as SF's "
                         "envpool examples run vector envs; 2: double-buffered splits)")
    ap.add_argument("--sf-arg", action="append", default=[], metavar="ARG",
                    help="extra SF argument, appended last (overrides), e.g. "
                         "--sf-arg=--serial_mode=True")
    ap.add_argument("--sample-seconds", type=float, default=1.0)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--sf-startup", type=float, default=8.0,
                    help="seconds given to the SF sampling processes to import and build "
                         "their envs before they measure together")
    ap.add_argument("--gemm-frames", type=int, default=256,
                    help="frames per GEMM call of the floor (a minibatch)")
    ap.add_argument("--gemm-seconds", type=float, default=0.1)
    ap.add_argument("--skip", action="append", default=[],
                    choices=("sampling", "train", "fastrl", "sf", "floor"))
    ap.add_argument("--cpus", default="", help="CPUs, e.g. 0,1 (default: the first 2 allowed)")
    ap.add_argument("--venv", default="/tmp/sfvenv")
    ap.add_argument("--torch-from", default="/tmp/trainvenv",
                    help="a venv whose torch/gymnasium a new --venv reuses ('' = none)")
    ap.add_argument("--no-install", action="store_true", help="never pip install")
    ap.add_argument("--fastrl", default="build/tools/fastrl")
    ap.add_argument("--library", default="build/lib/libfastrl.so.0",
                    help="libfastrl for the binding (unless FASTRL_LIBRARY is set)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per training run")
    ap.add_argument("--keep-logs", action="store_true")
    a = ap.parse_args()
    for kv in a.set:
        if "=" not in kv:
            ap.error(f"--set {kv!r}: expected KEY=VALUE")
    a.env_config = {k: v for k, v in (kv.split("=", 1) for kv in a.set) if k.startswith("env.")}
    ray = a.env.startswith("Ray")  # the ray envs skip frames: env.frame_skip, 0 = 4
    given = int(a.env_config.get("env.frame_skip", 0) or 0)
    if a.frame_skip and given and a.frame_skip != given:
        ap.error(f"--frame-skip {a.frame_skip} but --set env.frame_skip={given}")
    if a.frame_skip and not given and ray:
        a.set.append(f"env.frame_skip={a.frame_skip}")  # both sides step that skip
        a.env_config["env.frame_skip"] = str(a.frame_skip)
    a.frame_skip = a.frame_skip or given or (4 if ray else 1)
    if min(a.envs, a.rollout, a.minibatches, a.epochs, a.reps, a.sf_workers,
           a.sf_envs_per_worker, a.windows) < 1 or a.seconds <= 0:
        ap.error("sizes, counts and --seconds must be positive")
    if (a.rollout * a.envs) % a.minibatches:
        ap.error("--rollout x --envs must divide by --minibatches")
    per = a.sf_workers * a.sf_envs_per_worker
    if a.envs % per:
        ap.error(f"--envs {a.envs} must divide by SF's workers x envs per worker ({per})")
    a.sf_agents = a.envs // per
    allowed = sorted(os.sched_getaffinity(0))
    try:
        a.cpus = [int(c) for c in a.cpus.split(",")] if a.cpus else allowed[:2]
        os.sched_setaffinity(0, a.cpus)
    except (ValueError, OSError) as e:
        ap.error(f"--cpus {a.cpus!r}: {e}")
    for name in ("fastrl", "library", "venv", "torch_from"):
        v = getattr(a, name)
        if v and not os.path.isabs(v):
            setattr(a, name, os.path.join(REPO, v) if name in ("fastrl", "library") else
                    os.path.abspath(v))
    return a


def main():
    a = parse_args()
    # SIGTERM (e.g. `timeout`) ends the runs' process groups too, as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failed = False
    a.python, vers, how = ensure_venv(a)
    print(f"# fastrl vs Sample Factory 2, {a.env}\n")
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; pinned to "
          f"{','.join(map(str, a.cpus))} ({len(a.cpus)})")
    print(f"venv {a.venv} ({how}): " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    info, err = call_child(a, "info", dict(env=a.env, config=a.env_config))
    if not info:
        sys.exit(f"fastrl binding cannot make {a.env}: {err}")
    h, w, c = info["obs_shape"] if len(info["obs_shape"]) == 3 else (0, 0, 0)
    if not (h and info["obs_dtype"] == "uint8" and info["n_actions"]):
        sys.exit(f"{a.env}: observations {info['obs_shape']} {info['obs_dtype']}, actions "
                 f"{info['action_space']}: this benchmark needs an image env with discrete "
                 "actions")
    print(f"fastrl {info['library']} ({info['library_path']}); {a.env}: {h}x{w}x{c} uint8, "
          f"{info['action_space']}; frame skip {a.frame_skip}; env settings "
          f"{a.env_config or 'none'}")
    print(f"workload: {a.envs} envs, rollout {a.rollout}, {a.minibatches} minibatch(es) of "
          f"{a.rollout * a.envs // a.minibatches} x {a.epochs} epoch(s), encoder "
          f"{a.encoder} (SF {ENCODERS[a.encoder][0]}) + {FC} relu, lr {a.lr:g}; SF "
          f"{a.sf_workers} workers x {a.sf_envs_per_worker} env(s) x {a.sf_agents} agents")
    tmp = tempfile.mkdtemp(prefix="compare_sf_")
    busy0, own0, t0 = busy_seconds(), own_seconds(), time.perf_counter()

    # ---- 3. floor: FLOPs and the same-run GEMM rate
    rows, macs = network_macs(h, w, c, info["n_actions"], ENCODERS[a.encoder][1])
    train_flop = 2.0 * macs * (1 + 3 * a.epochs)
    gemm = {}
    if "floor" not in a.skip:
        shapes = [(r[4][0] * a.gemm_frames, r[4][1], r[4][2]) for r in rows] + [(1024,) * 3]
        for t in sorted({1, len(a.cpus)}):
            threads = str(t)
            res, err = call_child(a, "gemm", dict(shapes=shapes, seconds=a.gemm_seconds),
                                  extra_env={"OPENBLAS_NUM_THREADS": threads,
                                             "OMP_NUM_THREADS": threads,
                                             "MKL_NUM_THREADS": threads})
            if res:
                gemm[t] = res["seconds"]
            else:
                print(f"GEMM timing with {t} thread(s) failed: {err}")
                failed = True

    # ---- 1. sampling
    samp = {}
    if "sampling" not in a.skip:
        if "fastrl" not in a.skip:
            for t in sorted({len(a.cpus), 1}, reverse=True):
                res, err = call_child(a, "sample-fastrl", dict(
                    env=a.env, envs=a.envs, threads=t, config=a.env_config,
                    frame_skip=a.frame_skip, seconds=a.sample_seconds, windows=a.windows))
                samp[f"fastrl binding, {t} thread{'s' * (t > 1)}"] = (
                    statistics.median(res["rates"]) if res else None,
                    f"fastrl.make_vec(threads={t}).step, 1 process" if res
                    else f"FAILED: {err}")
                failed |= res is None
            rate, err, cmd = fastrl_cli_sampling(a)
            samp["fastrl CLI (bench env)"] = (rate, shlex.join(cmd[1:]) if rate else
                                              f"did not run: {' '.join(err)}")
        if "sf" not in a.skip:
            res, err = sample_sf(a, sf_argv(a, a.seed, tmp, "sampling"))
            if res:
                per = [statistics.median(r["rates"]) for r in res]
                samp["Sample Factory env path (plain loop)"] = (
                    sum(per), f"{len(res)} processes x {res[0]['envs']} env(s) x "
                    f"{res[0]['agents']} agents, 1 CPU each ({res[0]['wrappers']}); per "
                    f"process {', '.join(fmt(x) for x in per)}")
            else:
                samp["Sample Factory env path (plain loop)"] = (None, f"FAILED: {err}")
                failed = True

    # ---- 2. training
    runs = {"fastrl": [], "sf": []}
    order = [n for n in ("fastrl", "sf") if n not in a.skip] if "train" not in a.skip else []
    if order:
        print("\ncommands (rep i uses seed %d+i):" % a.seed)
        if "fastrl" in order:
            print("  fastrl: " + shlex.join(fastrl_cmd(a, a.seed)).replace(REPO + "/", ""))
        if "sf" in order:
            print("  sf: sample_factory.train.run_rl, in the venv, with "
                  + shlex.join(sf_argv(a, a.seed, tmp, "sf_rep1")))
        print(f"  ({a.steps:,} env steps each)" if a.steps else
              f"  ({a.seconds:g} s of training each, then SIGINT)")
    for rep in range(a.reps if order else 0):
        for name in order:
            log = os.path.join(tmp, f"{name}_rep{rep + 1}.log")
            r = (run_fastrl(a, a.seed + rep, log) if name == "fastrl" else
                 run_sf(a, a.seed + rep, tmp, f"sf_rep{rep + 1}", log))
            runs[name].append(r)
            if r.error:
                failed = True
                print(f"rep {rep + 1} {name}: FAILED after {r.wall:.0f} s: {r.error}")
            else:
                print(f"rep {rep + 1} {name}: {r.fps:,.0f} frames/s (wall {r.wall:.0f} s); "
                      f"{r.note}", flush=True)
    wall = time.perf_counter() - t0
    busy1, own1 = busy_seconds(), own_seconds()

    # ---- report
    print("\n## Sampling ceiling: random actions, no network (env frames/s)\n")
    if samp:
        table(["path", "frames/s", "per CPU", "how"],
              [(k, fmt(v), fmt(v / len(a.cpus) if v else None), how)
               for k, (v, how) in samp.items()])
        f = max((v for k, (v, _) in samp.items() if k.startswith("fastrl binding") and v),
                default=None)
        s = samp.get("Sample Factory env path (plain loop)", (None,))[0]
        if f and s:
            print(f"\nfastrl binding (better row) / SF env path: {f / s:.2f}x (SF steps the "
                  "same library underneath, in one process per worker: the difference is "
                  "its wrappers, Python per step, and the binding's thread pool)")
    else:
        print("(skipped)")

    print(f"\n## FLOP floor ({a.encoder} encoder at {h}x{w}x{c}, {a.gemm_frames}-frame GEMMs)\n")
    trows = []
    for i, (name, oh, ow, m, shape) in enumerate(rows):
        rates = [fmt(2.0 * shape[0] * a.gemm_frames * shape[1] * shape[2] / gemm[t][i] * 1e-9, 1)
                 if t in gemm else "n/a" for t in sorted({1, len(a.cpus)})]
        trows.append([name, f"{oh}x{ow}", f"{m / 1e6:.3f}",
                      f"{shape[0] * a.gemm_frames}x{shape[1]}x{shape[2]}"] + rates)
    if gemm:
        trows.append(["square (reference)", "", "", "1024x1024x1024"] + [
            fmt(2.0 * 1024 ** 3 / gemm[t][-1] * 1e-9, 1) for t in sorted(gemm)])
    table(["layer", "out", "MMAC/frame", "GEMM m x k x n"] +
          [f"GF/s {t} thr" for t in sorted({1, len(a.cpus)})], trows)
    print(f"\nforward {2 * macs / 1e6:.3f} MFLOP per policy step; trained: 1 forward to "
          f"act + {a.epochs} x (forward + backward ~ 3 forwards) = {train_flop / 1e6:.3f} "
          f"MFLOP per policy step ({train_flop / a.frame_skip / 1e6:.3f} per frame at "
          f"frame skip {a.frame_skip})")
    floor = {}
    for t in sorted(gemm):
        secs = sum(gemm[t][:-1])
        rate = sum(2.0 * r[4][0] * a.gemm_frames * r[4][1] * r[4][2] for r in rows) / secs
        floor[t] = rate
        print(f"network GEMMs with {t} thread(s): {rate * 1e-9:.1f} GFLOP/s -> floor "
              f"{rate / train_flop * a.frame_skip:,.0f} training frames/s, "
              f"{rate / (2 * macs) * a.frame_skip:,.0f} inference-only frames/s")
    n = len(a.cpus)
    cands = [x for x in (floor.get(n), n * floor[1] if 1 in floor else None) if x]
    best = max(cands, default=None)
    floor_fps = best / train_flop * a.frame_skip if best else None
    if best:
        print(f"floor used below: the better of {n} threads measured and {n} x one thread "
              f"(perfect scaling) = {best * 1e-9:.1f} GFLOP/s -> {floor_fps:,.0f} training "
              "frames/s (GEMM time only: no im2col, activations, optimiser or env)")

    print("\n## Training throughput, APPO (env frames/s)\n")
    meds = {}
    if any(runs.values()):
        trs = []
        for name in ("fastrl", "sf"):
            rs = runs[name]
            if not rs:
                continue
            ok = [r.fps for r in rs if not r.error and r.fps]
            meds[name] = statistics.median(ok) if ok else None
            trs.append([name] + [fmt(r.fps) if not r.error else "failed" for r in rs] +
                       [fmt(meds[name]), fmt(meds[name] / floor_fps, 3)
                        if meds[name] and floor_fps else "n/a"])
        table(["trainer"] + [f"rep {i + 1}" for i in range(a.reps)] +
              ["median", "fraction of floor"], trs)
        if meds.get("fastrl") and meds.get("sf"):
            floor_txt = (f" (floor {fmt(floor_fps)} frames/s with {len(a.cpus)} threads)"
                         if floor_fps else "")
            print(f"\nfastrl / Sample Factory: {meds['fastrl'] / meds['sf']:.2f}x{floor_txt}")
    else:
        print("(skipped)")
    print(f"\n{SF_PUBLISHED}.")
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        warn = ("  WARNING: other work ran; figures may be low" if other > max(1.0, 0.05 * wall)
                else "")
        print(f"other processes used {other:.1f} CPU-s during the {wall:.0f} s of runs{warn}")
    if a.keep_logs:
        print(f"logs and SF experiment dirs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
