"""Trainer: PPO on a built-in or a Python environment, with metrics callbacks,
clean Ctrl-C, checkpoints, and evaluation."""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
import signal
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _lib, spaces
from ._handle import _SAVE_HINT, Handle, NoCopy, checked_int, in_flight
from ._lib import Error, Status
from .config import as_config
from .env import VecEnv, _builtin_name, _eval_vec_env
from .policy import Policy
from .replay import Replay
from .ring import Ring
from .runtime import runtime_for, runtime_keys_named

if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, Callable, TypeVar

    import numpy.typing as npt

    from ._typing import ConfigSource, IntLike, PathArg
    from .env import _Host
    from .runtime import Runtime

    _Trainer = TypeVar("_Trainer", bound="Trainer")

__all__ = ["Metrics", "Trainer", "evaluate"]


@dataclasses.dataclass(frozen=True)
class Metrics:
    """The metrics of one update (``frl_metrics``; see doc/api.md, Trainer)."""

    update: int = 0
    env_steps: int = 0
    episodes: int = 0
    mean_return: float = math.nan
    mean_length: float = math.nan
    seconds: float = 0.0
    steps_per_second: float = 0.0
    policy_loss: float = 0.0
    value_loss: float = 0.0
    entropy: float = 0.0
    approx_kl: float = 0.0
    clip_fraction: float = 0.0
    explained_variance: float = 0.0
    grad_norm: float = 0.0
    learning_rate: float = 0.0
    epochs_done: int = 0
    time_env: float = 0.0
    time_inference: float = 0.0
    time_backward: float = 0.0
    time_optimizer: float = 0.0
    time_waiting: float = 0.0
    policy_lag_mean: float = 0.0
    policy_lag_max: float = 0.0
    slots_dropped: int = 0
    q_mean: float = 0.0
    td_error: float = 0.0
    epsilon: float = 0.0
    replay_fill: float = 0.0
    sample_age: float = 0.0
    time_replay: float = 0.0
    population_mean: float = 0.0
    population_best: float = 0.0
    kept_fitness: float = 0.0
    priority_spread: float = 0.0

    @classmethod
    def _at(cls, address: int) -> Metrics:
        s = _lib.MetricsStruct.from_address(address)
        size = s.struct_size
        values: dict[str, Any] = {}
        for name, _ in _lib.METRICS_FIELDS[1:]:
            f = getattr(_lib.MetricsStruct, name)
            if f.offset + f.size <= size:  # fields an older library lacks keep defaults
                values[name] = getattr(s, name)
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _unlock(venv_ref: weakref.ref[VecEnv]) -> None:
    v = venv_ref()
    if v is not None:
        v._read_only = False


class Trainer(NoCopy):
    """A PPO trainer (``frl_trainer``).

    ``Trainer("CartPole-v1", target_return=475)`` trains on a built-in, with the
    library's settings for that env under the ones given (config keys, or their last
    part as keywords); ``Trainer(vec_env)`` trains on a :class:`VecEnv` (e.g. Python
    envs through ``VecEnv.from_python``), which only the trainer may step while it
    lives. ``seed=``/``threads=`` make a runtime of their own; ``runtime=`` shares one.

    :meth:`train` runs to a step budget (or ``train.target_return``), calling
    ``callback(metrics)`` after each update on the calling thread (return False to
    stop). Ctrl-C stops it at the end of the current update, writes ``checkpoint`` if
    given, and raises KeyboardInterrupt; the trainer can then be saved or trained on.
    """

    _copy_hint = _SAVE_HINT
    _h: Handle | None
    _venv_host: _Host | None
    env_name: str | None  # None for a loaded run that names no built-in

    def __init__(self, env: str | VecEnv, config: ConfigSource = None, *,
                 runtime: Runtime | None = None, **options: Any) -> None:
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        deps = []
        if isinstance(env, VecEnv):
            venv = env
            venv._ptr
            rt_keys = runtime_keys_named(options, config, "Trainer")
            if rt_keys:
                raise Error(Status.ERR_INVALID_ARGUMENT,
                            f"Trainer: {', '.join(rt_keys)} would make a new runtime, but a "
                            "trainer shares its vec env's runtime: make the vec env with "
                            "runtime=fastrl.Runtime(seed=..., threads=...)")
            rt, options = runtime_for(runtime if runtime is not None
                                      else venv.runtime._live(), options, "Trainer")
            cfg = as_config(config, options, "Trainer config")
            if venv._read_only:
                raise Error(Status.ERR_STATE, "Trainer: this vec env already belongs to a "
                            "trainer")
            _lib.check(L.trainer_create_vec(ctypes.byref(ptr), rt.handle.ptr, venv._ptr,
                                            cfg._ptr), "Trainer")
            deps = [rt.handle, venv._h]
            self._venv_host = venv._host  # its callbacks' target, kept while we may train
            self._host = venv._python_envs is not None or venv._python_world is not None
            self.env_name = venv.name
            h = Handle(ptr.value, L.trainer_destroy, "trainer", deps=deps)
            venv._read_only = True
            venv._flags_tell_resets = False  # the trainer's steps may fail (see VecEnv)
            weakref.finalize(h, _unlock, weakref.ref(venv))
        else:
            name = _builtin_name(env)
            rt, options = runtime_for(runtime, options, "Trainer", config)
            cfg = as_config(config, options, "Trainer config")
            _lib.check(L.trainer_create(ctypes.byref(ptr), rt.handle.ptr,
                                        _lib.encode(name, "environment id"), cfg._ptr),
                       "Trainer")
            h = Handle(ptr.value, L.trainer_destroy, "trainer", deps=[rt.handle])
            self._venv_host = None
            self._host = False
            self.env_name = name
        self._setup(h, rt)

    @classmethod
    def load(cls: type[_Trainer], path: PathArg, config: ConfigSource = None, *,
             runtime: Runtime | None = None, **options: Any) -> _Trainer:
        """Continue a run saved by :meth:`save` (built-in envs). Keys set by ``config``
        or ``options`` override the saved settings."""
        p = _lib.fspath(path)  # first: its __fspath__ may close the runtime
        rt, options = runtime_for(runtime, options, "Trainer.load", config)
        cfg = as_config(config, options, "Trainer.load config")
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.trainer_load(ctypes.byref(ptr), rt.handle.ptr, p,
                                  cfg._ptr if cfg.set_keys() else None), "Trainer.load")
        self = cls.__new__(cls)
        self._venv_host = None
        self._host = False
        name = L.vec_env_name(L.trainer_vec_env(ptr))  # the saved run's built-in
        self.env_name = name.decode() if name else None
        self._setup(Handle(ptr.value, L.trainer_destroy, "trainer", deps=[rt.handle]), rt)
        return self

    def _setup(self, handle: Handle, runtime: Runtime) -> None:
        self._h = handle
        self._runtime = runtime
        self._training = False
        self._in_callback: int | None = None  # the thread running the metrics callback
        self._policy: Policy | None = None
        self._ring: Ring | None = None
        self._vec_env: VecEnv | None = None

    @property
    def _ptr(self) -> int | None:
        if self._h is None:
            raise Error(Status.ERR_STATE, "the trainer is closed")
        return self._h.ptr

    def _idle(self, what: str) -> int | None:
        if self._training:
            raise Error(Status.ERR_STATE, f"{what}: not while train runs (use the callback's "
                        "metrics, or call it after train returns)")
        return self._ptr

    def _idle_or_callback(self, what: str) -> int | None:
        """As _idle, but also from the metrics callback on train's thread, where the
        library allows save and set_output (a sync trainer's; an async one's save is
        ERR_STATE, from the library)."""
        if self._training and self._in_callback == threading.get_ident():
            return self._ptr
        return self._idle(what)

    # -- borrowed objects
    @property
    def runtime(self) -> Runtime:
        return self._runtime

    @property
    def policy(self) -> Policy:
        """The trainer's policy (act on it, save it, between train calls)."""
        # a closed wrapper is only that wrapper let go: the trainer gives a new one
        if self._policy is None or self._policy.closed:
            p = _lib.lib().trainer_policy(self._ptr)
            me = weakref.ref(self)  # no cycle: the trainer goes when its last user does

            def busy() -> bool:
                t = me()
                return t is not None and t._training
            self._policy = Policy._borrowed(p, self._h, self._runtime, busy)
        return self._policy

    @property
    def vec_env(self) -> VecEnv:
        """The trainer's vec env: read its arrays and totals; only the trainer steps it."""
        if self._vec_env is None or self._vec_env.closed:
            p = _lib.lib().trainer_vec_env(self._ptr)
            name = self.env_name or "(loaded)"
            self._vec_env = VecEnv._borrowed(p, self._h, self._runtime, name)
        return self._vec_env

    @property
    def ring(self) -> Ring:
        """The trainer's ring (one slot in sync mode; with ``sampler.mode=async`` more):
        rollouts as read-only numpy views shaped [T, B, ...] (read between train calls)."""
        if self._ring is None or self._ring._h is None:
            p = _lib.lib().trainer_ring(self._ptr)
            v = self.vec_env
            self._ring = Ring._borrowed(p, self._h, v.single_observation_space,
                                        v.single_action_space)
        return self._ring

    @property
    def replay(self) -> Replay | None:
        """The replay of an off-policy trainer (train.algo=dqn) as a :class:`Replay`, or
        None for on-policy learners."""
        p = _lib.lib().trainer_replay(self._ptr)
        if not p:
            return None
        v = self.vec_env
        shape, _, dtype = spaces.observation_layout(v.single_observation_space)
        return Replay(p, self._h, v._n_actions > 0, shape, dtype)

    @property
    def metrics(self) -> Metrics:
        """The metrics of the last update (zeros before the first)."""
        return Metrics._at(_lib.lib().trainer_metrics(self._ptr))

    # -- control
    def request_stop(self) -> None:
        """Make train return at the end of the current update (any thread)."""
        _lib.lib().trainer_request_stop(self._ptr)

    def set_output(self, directory: PathArg) -> None:
        """Write metrics.csv, a TensorBoard event file and settings.txt into directory
        (which must exist) from the next update on. Between train calls, or from train's
        metrics callback."""
        d = _lib.fspath(directory, "directory")  # first: its __fspath__ may close us
        _lib.check(_lib.lib().trainer_set_output(self._idle_or_callback("set_output"), d),
                   "set_output")

    def save(self, path: PathArg) -> None:
        """Write a resumable checkpoint (built-in envs, sync or async; an async
        trainer's rollouts in flight are not saved. For a Python env, save the policy:
        ``trainer.policy.save(path)``). Between train calls, or from a sync trainer's
        metrics callback (a checkpoint of the best run so far, say); an async trainer's
        callback gets ``ERR_STATE``."""
        p = _lib.fspath(path)  # first: its __fspath__ may close the trainer
        _lib.check(_lib.lib().trainer_save(self._idle_or_callback("save"), p), "Trainer.save")

    def _checkpoint(self, path: str) -> None:
        """A trainer checkpoint where the library can write one; else the policy (a
        Python env's simulator has no file format)."""
        if self._host:
            self.policy.save(path)
            return
        try:
            self.save(path)
        except Error as e:
            if e.status != Status.ERR_UNSUPPORTED:
                raise
            self.policy.save(path)

    def train(self, total_steps: IntLike, callback: Callable[[Metrics], object] | None = None,
              *, checkpoint: PathArg | None = None, handle_sigint: bool = True) -> Metrics:
        """Train until the run has ``total_steps`` env steps (counted from its start),
        the target return, a stop, or Ctrl-C. Returns the last update's
        :class:`Metrics`.

        ``callback(metrics)`` runs after each update on this thread; returning False
        (numpy's False too) stops the run (train returns normally). It may call
        :meth:`save` (a sync trainer) and :meth:`set_output`. An exception it
        raises, or one raised by a Python env, stops the run and is re-raised here with
        its traceback.
        ``checkpoint``: a path written when train returns (a trainer checkpoint; a
        policy file for Python envs, which the library cannot save). With
        ``handle_sigint`` (and the default SIGINT handler, on the main thread), Ctrl-C
        stops at the end of the current update, writes the checkpoint and raises
        KeyboardInterrupt; a second Ctrl-C interrupts at once.
        """
        self._idle("train")
        if isinstance(total_steps, bool) or not isinstance(total_steps, (int, np.integer)):
            raise TypeError(f"total_steps must be an int, not {type(total_steps).__name__}")
        if not -(2**63) <= int(total_steps) < 2**63:
            raise Error(Status.ERR_RANGE, f"total_steps {total_steps} does not fit in int64")
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable")
        if checkpoint is not None:  # checked now, not after hours of training
            checkpoint = _checkpoint_path(checkpoint)
        # after the arguments (a checkpoint's __fspath__ may close the trainer), and held
        # through the call (by in_flight, which also lets an interpreter exit stop a
        # daemon thread's run before the trainer is destroyed, not under it)
        ptr = self._idle("train")
        L = _lib.lib()
        with in_flight("train", (self._h,), lambda: L.trainer_request_stop(ptr)):
            return self._train(ptr, int(total_steps), callback, checkpoint, handle_sigint)

    def _train(self, ptr: int | None, total_steps: int,
               callback: Callable[[Metrics], object] | None, checkpoint: str | None,
               handle_sigint: bool) -> Metrics:
        L = _lib.lib()
        st_ = _TrainState()

        def on_metrics(user: int | None, address: int) -> int:
            try:
                if callback is not None:
                    self._in_callback = threading.get_ident()
                    try:
                        stop = _is_false(callback(Metrics._at(address)))
                    finally:
                        self._in_callback = None
                    if stop:
                        st_.stopped = True
                        L.trainer_request_stop(ptr)
                return 0
            except KeyboardInterrupt as e:  # the default SIGINT handler, or a 2nd Ctrl-C
                st_.interrupt = e
                L.trainer_request_stop(ptr)
                return 0
            except BaseException as e:  # noqa: B902
                st_.exc = e
                return 1

        fn = _lib.METRICS_FN(on_metrics)
        old = None
        if (handle_sigint and _lib.is_main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            def on_sigint(signum: int, frame: FrameType | None) -> None:
                if st_.sigint:
                    raise KeyboardInterrupt
                st_.sigint = True
                L.trainer_request_stop(ptr)
            old = signal.signal(signal.SIGINT, on_sigint)
        L.trainer_set_callback(ptr, fn, None)
        self._training = True
        host = self._venv_host
        call = None
        try:
            if host is not None:  # the env's exceptions during this call are its own
                call = host.enter("train")
            status = L.trainer_train(ptr, total_steps)
            message = _lib.last_error()
        finally:
            if call is not None:
                host.leave()  # type: ignore[union-attr]  # call is set only with a host
            self._training = False
            L.trainer_set_callback(ptr, _lib.METRICS_FN(), None)
            if old is not None:
                signal.signal(signal.SIGINT, old)
        env_exc = call if call is not None and call.errors else None
        interrupted = (st_.sigint or st_.interrupt is not None or
                       (env_exc is not None and isinstance(env_exc.first(),
                                                           KeyboardInterrupt)))
        notes = []
        if checkpoint is not None and (status in (Status.OK, Status.ERR_INTERRUPTED)
                                       or interrupted):
            try:
                self._checkpoint(checkpoint)
                notes.append(f"fastrl: checkpoint written to {checkpoint}")
            except Error as e:
                if not interrupted and status == Status.OK:
                    raise
                notes.append(f"fastrl: could not write the checkpoint: {e}")
        if st_.exc is not None:
            _add_note(st_.exc, f"fastrl: raised by the metrics callback; train stopped "
                      f"after update {self.metrics.update}", *notes)
            raise st_.exc
        if env_exc is not None:
            for n in notes:
                _add_note(env_exc.first(), n)
            env_exc.raise_for(status, "train", message)
        if interrupted:
            stop = st_.interrupt or KeyboardInterrupt()
            m = self.metrics
            _add_note(stop, f"fastrl: training stopped by Ctrl-C after update {m.update} "
                      f"({m.env_steps} env steps)", *notes)
            raise stop
        if status not in (Status.OK, Status.ERR_INTERRUPTED):
            raise Error(status, f"train: {message}" if message else "train")
        return self.metrics

    def close(self) -> None:
        """Let go of the trainer: destroyed once its policy, ring and vec env views are
        gone too."""
        if self._training:
            raise Error(Status.ERR_STATE, "close: train is running")
        self._h = None
        self._policy = self._ring = self._vec_env = None

    @property
    def closed(self) -> bool:
        return self._h is None

    def __enter__(self: _Trainer) -> _Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._h is None:
            return "<fastrl.Trainer closed>"
        return f"<fastrl.Trainer {self.env_name} update={self.metrics.update}>"


class _TrainState:
    __slots__ = ("stopped", "interrupt", "exc", "sigint")

    def __init__(self) -> None:
        self.stopped = False
        self.interrupt: KeyboardInterrupt | None = None
        self.exc: BaseException | None = None
        self.sigint = False


def _is_false(value: object) -> bool:
    """False, numpy's False included: a callback's "stop", however it was computed
    (``np.mean(returns) < 475`` is a numpy bool). Anything else, None too, goes on."""
    return value is False or (isinstance(value, np.bool_) and not value)


def _add_note(exc: object, *notes: str) -> None:
    if hasattr(exc, "add_note"):
        for n in notes:
            exc.add_note(n)


def _checkpoint_path(path: PathArg) -> str:
    """train's checkpoint path, refused before the run if no file can be written there:
    not a path, a folder that does not exist, or a folder itself."""
    path = os.fsdecode(_lib.fspath(path, "checkpoint"))
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path) or not os.path.isdir(folder):
        raise Error(Status.ERR_IO, f"train: checkpoint {path}: "
                    + ("is a folder" if os.path.isdir(path) else f"no folder {folder}"))
    return path


def evaluate(policy: Policy | Trainer, env: str | VecEnv, episodes: IntLike = 100, *,
             deterministic: bool = True, seed: IntLike | None = 0,
             num_envs: IntLike | None = None, runtime: Runtime | None = None,
             max_steps: IntLike = 10_000_000, **options: Any) -> npt.NDArray[np.float64]:
    """The returns of ``episodes`` episodes of ``policy`` on ``env`` (a built-in id, or
    a :class:`VecEnv` to reset and step, Python envs included), as a float64 array.

    The library runs the episodes (``frl_policy_evaluate``): env i of ``num_envs``
    (default ``min(episodes, 64)``) runs a fixed quota of episodes (episodes // n, one
    more for the first episodes % n), so short episodes are not favoured, and the
    returns come env-major (env 0's episodes first). Greedy actions by default; box
    actions are clipped to the action space, as the trainer does. The vec env is reset
    from ``seed`` (None: drawn from the VecEnv's own generator), and sampled actions of
    env i draw from the policy's stream ``seed * n + i``. The policy's spaces
    must match the env's (``Error`` ``ERR_SIZE`` naming both); more than ``max_steps``
    env steps (all envs counted; 0: no limit) without finishing is ``ERR_RANGE``.
    """
    from .env import _check_seed  # here: the rest of the module needs nothing of it
    if isinstance(policy, Trainer):
        policy = policy.policy  # the trainer's acting policy
    if not isinstance(policy, Policy):
        # Checked here: a handle of another kind would reach the library as a policy.
        raise TypeError(f"evaluate: policy must be a fastrl.Policy (or a Trainer), not "
                        f"{type(policy).__name__}")
    episodes = checked_int(episodes, "evaluate: episodes", 1, 2**31)
    max_steps = checked_int(max_steps, "evaluate: max_steps (0: no limit)", 0, 2**63)
    if seed is not None:
        seed = _check_seed(seed)
    own = not isinstance(env, VecEnv)
    if own:
        # 0 is refused by VecEnv (ERR_RANGE), not taken as "the default"
        n = num_envs if num_envs is not None else min(int(episodes), 64)
        venv = _eval_vec_env(env, n, runtime, policy._runtime,  # type: ignore[arg-type]
                             options, "evaluate")
    else:
        # they would make a vec env; this one is made already, and ignoring them would
        # hide a mistake (a misspelt keyword, a limit that does not apply)
        if num_envs is not None or runtime is not None or options:
            given = [k for k, v in (("num_envs", num_envs), ("runtime", runtime))
                     if v is not None] + list(options)
            raise Error(Status.ERR_INVALID_ARGUMENT, f"evaluate: {', '.join(given)} make "
                        "the vec env of a built-in id; this one is given, so they would be "
                        "ignored")
        venv = env  # type: ignore[assignment]  # not own: a VecEnv
        venv._check_writable("evaluate")
    try:
        returns = np.empty(int(episodes), np.float64)
        # held through the call (a close() from an env lets go), and left alone by an
        # interpreter exit while a daemon thread runs it
        with in_flight("evaluate", (policy._h, venv._h)), \
                venv._admitted("evaluate") as call:  # refused: the generator is not drawn
            venv._flags_tell_resets = False  # its steps may fail (see VecEnv._narrow_actions)
            if seed is None:
                seed = int(venv.np_random.integers(0, 2**63))
            args = _lib.new_table(_lib.EvalArgs, episodes=int(episodes),
                                  deterministic=1 if deterministic else 0, seed=seed,
                                  returns=returns.ctypes.data, max_steps=int(max_steps))
            st = _lib.lib().policy_evaluate(policy._ptr, venv._ptr, ctypes.byref(args), None)
        if st:
            venv._fail(st, "evaluate", call)  # a Python env's own exception, if it raised
        return returns
    finally:
        if own:
            venv.close()

