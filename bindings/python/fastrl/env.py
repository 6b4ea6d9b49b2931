"""Env and VecEnv: the library's environments behind gymnasium's API.

Built-ins run in C. Host environments written in Python (any gymnasium.Env, or any
object with ``reset(seed=...)`` and ``step(action)``) are plugged in through the
library's callback tables, so the library validates actions, applies the time limit,
autoresets, checks for NaN and keeps episode statistics for them too, and a trainer
can learn on them.

Threads: ctypes releases the GIL for every library call and the callbacks take it
back. A single :class:`Env` and a batch :class:`VecEnv` (the default for Python envs)
call Python only on the thread that called ``reset``/``step``/``train`` (except an
asynchronous trainer's ``train``, whose sampler thread steps them). A VecEnv made
with ``per_env=True`` lets the library call each env's Python ``reset``/``step`` from
its pool threads; the GIL makes those calls take turns, so it pays only for envs whose
step releases the GIL (C extensions, numba). See doc/python.md.
"""

from __future__ import annotations

import collections.abc
import contextlib
import ctypes
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _lib, spaces
from ._gym import usable_gymnasium
from ._handle import Handle, NoCopy, view
from ._lib import Error, Status
from .config import as_config
from .runtime import runtime_for, runtime_keys_named

if TYPE_CHECKING:
    from typing import (Any, Callable, Iterable, Iterator, Literal, Mapping, NoReturn,
                        Sequence, TypeVar)

    import numpy.typing as npt
    from typing_extensions import TypeAlias

    from ._typing import (BatchWorld, ConfigSource, EnvObservation, IntLike,
                          MujocoObserve, MujocoReset, MujocoReward, Observations, PathArg,
                          PythonEnv, PythonEnvOrMaker, Space)
    from .config import Config
    from .runtime import Runtime

    _Self = TypeVar("_Self")
    _Env = TypeVar("_Env", bound="Env")
    _VecEnv = TypeVar("_VecEnv", bound="VecEnv")
    # a library call, as ctypes gives it: returns a status
    _CFunction = Callable[..., int]

try:
    if usable_gymnasium() is None:
        raise ImportError("gymnasium is not installed or older than 1.2.2")
    import gymnasium as _gym
    from gymnasium.utils import seeding as _seeding
    _EnvBase: TypeAlias = _gym.Env
    _VecEnvBase: TypeAlias = _gym.vector.VectorEnv
    try:
        from gymnasium.vector import AutoresetMode as _AutoresetMode
        _VEC_METADATA: dict[str, Any] = {"autoreset_mode": _AutoresetMode.NEXT_STEP}
    except ImportError:  # gymnasium 1.0: next-step is the only mode
        _VEC_METADATA = {}
except ImportError:
    # Type checkers take the branch above: the classes are gymnasium's Env and VectorEnv
    # where gymnasium is installed (and Any where it is not).
    _gym = None  # type: ignore[assignment]
    _seeding = None  # type: ignore[assignment]
    _VEC_METADATA = {}

    class _Base:  # the parts of gymnasium's Env and VectorEnv the binding relies on
        spec: Any = None
        _np_random: np.random.Generator | None = None

        @property
        def np_random(self) -> np.random.Generator:
            if self._np_random is None:
                self._np_random = np.random.default_rng()
            return self._np_random

        def reset(self, *, seed: int | None = None,
                  options: dict[str, Any] | None = None) -> None:
            if seed is not None:
                self._np_random = np.random.default_rng(seed)

        @property
        def unwrapped(self: _Self) -> _Self:
            return self

        def __enter__(self: _Self) -> _Self:
            return self

        def __exit__(self, *args: object) -> Literal[False]:
            self.close()
            return False

        if TYPE_CHECKING:
            def close(self) -> None: ...  # the subclasses' own

    class _EnvBase(_Base):  # type: ignore[no-redef]
        metadata: dict[str, Any] = {"render_modes": []}
        render_mode: str | None = None

    class _VecEnvBase(_Base):  # type: ignore[no-redef]
        metadata: dict[str, Any] = {}
        closed = False

__all__ = ["Env", "VecEnv", "env_ids", "make", "make_vec"]

_I32 = np.dtype(np.int32)
_F32 = np.dtype(np.float32)
_U64_LIMIT = 2**64


def env_ids() -> list[str]:
    """The ids of the built-in environments ("CartPole-v1", ...)."""
    L = _lib.lib()
    out: list[str] = []
    i = 0
    while True:
        name = L.env_name_at(i)
        if name is None:
            return out
        out.append(name.decode())
        i += 1


def _builtin_name(id: str) -> str:
    if not isinstance(id, str):
        raise TypeError(f"environment id must be a str, not {type(id).__name__}")
    return id[len("fastrl/"):] if id.startswith("fastrl/") else id


def _check_seed(seed: object, what: str = "seed") -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{what} must be an int or None, not {type(seed).__name__}")
    seed = int(seed)
    if not 0 <= seed < _U64_LIMIT:
        raise Error(Status.ERR_RANGE, f"{what} {seed} is outside [0, 2^64)")
    return seed


def _check_options(options: Mapping[str, Any] | None, what: str) -> None:
    if options:
        raise Error(Status.ERR_UNSUPPORTED,
                    f"{what}: options {dict(options)!r} are not supported (fastrl's "
                    "environments take no reset options)")


def _env_config(config: ConfigSource, options: Mapping[str, Any], what: str,
                render_mode: str | None = None) -> Config:
    if render_mode is not None:
        raise Error(Status.ERR_UNSUPPORTED, f"{what}: render_mode={render_mode!r}: "
                    "fastrl environments do not render")
    return as_config(config, options, what)


# ---------------------------------------------------------------- host callbacks


class _Host:
    """The Python side of a C object whose callbacks call Python: ``target``, what they
    call (the envs, the world, the MuJoCo functions), and the library call running them.

    The callbacks reach this object through a weak reference, so the C object's handle,
    which keeps the callbacks, does not keep the target: a world keeps the views it is
    given, each view owns the handle, and numpy arrays are not tracked by the garbage
    collector, so a cycle through a view (handle, callbacks, world, view) would never be
    collected and the C object would leak. The target is kept by those that can make
    the library call back: the wrapper (until close), a trainer on the vec env, and the
    call in progress (its frame holds this object). Whatever else still holds the handle
    (a view, a trainer's borrowed objects) only reads memory.

    The library runs one call at a time on an object and refuses a second one (from a
    callback, or from another thread) with FRL_ERR_STATE. That call is admitted here,
    before the library sees it, so that the exceptions the callbacks raise belong to it
    (a :class:`_HostErrors` of its own, whatever thread the callbacks run on): a refused
    call neither takes them nor leaves any of its own behind.
    """

    __slots__ = ("target", "kind", "source", "_lock", "_call", "__weakref__")

    def __init__(self, target: Any, kind: str = "vec env", source: str | None = None) -> None:
        self.target = target
        self.kind = kind
        # what raised, for the note: None for per-env callbacks ("env i"); a batch world
        # steps every env in one call, so its exception is no env's
        self.source = source
        self._lock = threading.Lock()
        self._call: _HostErrors | None = None

    def enter(self, what: str) -> _HostErrors:
        """Admit a library call that may run the callbacks; returns its _HostErrors.
        :meth:`leave` must follow."""
        if not self._lock.acquire(blocking=False):
            raise Error(Status.ERR_STATE, f"{what}: the {self.kind} is already being reset "
                        "or stepped (a call from one of its own callbacks, or from a second "
                        "thread at once); nothing was done")
        call = self._call = _HostErrors(self.source)
        return call

    def leave(self) -> None:
        self._call = None
        self._lock.release()

    def call(self, what: str, fn: _CFunction, *args: Any) -> tuple[int, _HostErrors]:
        """``fn(*args)`` as the admitted call: (its status, its _HostErrors)."""
        call = self.enter(what)
        try:
            return fn(*args), call
        finally:
            self.leave()

    def record(self, index: int, exc: BaseException) -> None:
        call = self._call
        if call is not None:  # None: no call of ours runs it, so no one to raise it to
            call.record(index, exc)


class _HostErrors:
    """The exceptions raised by Python callbacks during one library call."""

    __slots__ = ("errors", "source")

    def __init__(self, source: str | None = None) -> None:
        self.errors: dict[int, BaseException] = {}
        self.source = source  # see _Host.source

    def record(self, index: int, exc: BaseException) -> None:
        self.errors.setdefault(index, exc)

    def first(self) -> BaseException | None:
        """The exception of the lowest env (the one the library's message names)."""
        return self.errors[min(self.errors)] if self.errors else None

    def raise_for(self, status: int, what: str, message: str | None = None) -> NoReturn:
        """Raise the failure of the library call: a callback's own exception (the one of
        the lowest env, as the library's message names), or the library's Error.
        ``message``: the call's message, when other calls were made since."""
        if message is None:
            message = _lib.last_error()
        if self.errors:
            index = min(self.errors)
            exc = self.errors[index]
            others = len(self.errors) - 1
            self.errors.clear()
            by = self.source or f"the Python callback of env {index}"
            note = (f"fastrl: raised by {by} during {what}; the library reported "
                    f"{_status_name(status)}: {message}")
            if others:
                note += f" ({others} other env(s) failed too)"
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            raise exc
        raise Error(status, f"{what}: {message}" if message else what)


def _status_name(status: int) -> str:
    try:
        return "FRL_" + Status(status).name
    except ValueError:
        return str(status)


def _reset_result(result: object) -> tuple[Any, Any]:
    """obs from what env.reset returned: (obs, info) as gymnasium, or obs alone."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
        return result
    return result, {}


def _step_result(result: object) -> tuple[Any, Any, Any, Any, Any]:
    if not isinstance(result, tuple) or len(result) not in (4, 5):
        raise Error(Status.ERR_INVALID_ARGUMENT,
                    f"step returned {type(result).__name__}; expected (obs, reward, "
                    "terminated, truncated, info) as gymnasium does")
    if len(result) == 4:  # old gym API: (obs, reward, done, info)
        raise Error(Status.ERR_INVALID_ARGUMENT,
                    "step returned 4 values (the old gym API); return (obs, reward, "
                    "terminated, truncated, info)")
    return result


class _ObsWriter:
    """Checks a Python observation and writes it as float32 (uint8 for an image) into
    library memory. A Discrete observation is written as its index, the space's start
    subtracted (the library checks it is an integer in [0, n))."""

    __slots__ = ("shape", "width", "start", "dtype")

    def __init__(self, shape: Iterable[int], start: int = 0,
                 dtype: npt.DTypeLike = _F32) -> None:
        self.shape = tuple(shape)
        self.width = int(np.prod(self.shape, dtype=np.int64))
        self.start = start
        self.dtype: np.dtype[Any] = np.dtype(dtype)

    def _pixels(self, obs: object) -> npt.NDArray[np.uint8]:
        a = np.asarray(obs)
        if a.dtype != np.uint8 and (a.size and (a.min() < 0 or a.max() > 255 or
                                                not np.all(a == np.floor(a)))):
            raise Error(Status.ERR_RANGE, "image observation with values outside the "
                        "integers 0..255 (pass uint8 pixels)")
        return a.astype(np.uint8, copy=False)

    def array(self, obs: object) -> npt.NDArray[Any]:
        a: npt.NDArray[Any]
        if self.dtype == np.uint8:
            a = self._pixels(obs)
        elif np.asarray(obs).dtype.kind not in "biuf":
            # complex lost its imaginary part, and "0.5" was read as a number, unsaid
            raise TypeError(f"observation must be numbers, not {np.asarray(obs).dtype}")
        elif self.start:  # in float64, so a large start loses nothing before the shift
            wide = np.asarray(obs, dtype=np.float64)
            spaces.check_whole(wide, "env")
            a = (wide - self.start).astype(np.float32)
        else:
            if self.shape == ():  # a discrete index (a box has rank >= 1)
                spaces.check_whole(np.asarray(obs), "env")
            a = np.asarray(obs, dtype=np.float32)
        # the space's shape exactly (a transposed image of the right size would be
        # read scrambled); a number stands for a shape of one element
        if a.shape != self.shape and not (self.width == 1 and a.size == 1 and a.ndim <= 1):
            raise Error(Status.ERR_SIZE, f"observation of shape {a.shape}; the "
                        f"observation space has shape {self.shape}")
        return a

    def write(self, obs: object, address: int) -> None:
        a = np.ascontiguousarray(self.array(obs))
        ctypes.memmove(address, a.ctypes.data, self.width * self.dtype.itemsize)


class _MixedObsWriter(_ObsWriter):
    """Writes a mixed observation (a dict of "image" and "vector") as the library's row:
    the image's bytes, then the vector's floats."""

    __slots__ = ("space",)

    def __init__(self, space: Space) -> None:
        shape, _, dtype = spaces.observation_layout(space)
        super().__init__(shape, 0, dtype)
        self.space = space

    def array(self, obs: object) -> npt.NDArray[np.uint8]:
        row, single = spaces.join_rows(obs, self.space, "observation")
        if not single:
            raise Error(Status.ERR_SIZE, "observation: one env's image and vector, not a "
                        "batch of them")
        return row


def _obs_writer(space: Space) -> _ObsWriter:
    if spaces.is_mixed(space):
        return _MixedObsWriter(space)
    return _ObsWriter(*spaces.observation_layout(space))


def _present(rows: npt.NDArray[Any], space: Space) -> Observations:
    """A mixed space's rows as the dict of views the user sees; any other as it is."""
    return spaces.split_rows(rows, space) if spaces.is_mixed(space) else rows


def _copy_obs(obs: Observations) -> Observations:
    return {k: v.copy() for k, v in obs.items()} if isinstance(obs, dict) else obs.copy()


class _ActionReader:
    """Turns the library's action (int32 or float32) into the Python env's action."""

    __slots__ = ("discrete", "start", "shape", "width", "dtype", "bounds")

    def __init__(self, space: Space, start: int) -> None:
        self.discrete = spaces.describe(space)[0] == "discrete"
        self.start = start
        self.shape = tuple(getattr(space, "shape", ()) or ())
        self.width = int(np.prod(self.shape, dtype=np.int64)) if not self.discrete else 1
        dt = getattr(space, "dtype", None)
        self.dtype = np.dtype(dt) if dt is not None else (_I32 if self.discrete else _F32)
        self.bounds = None
        if not self.discrete and self.dtype.kind in "iub":
            self.bounds = (np.asarray(getattr(space, "low", -np.inf), np.float64),
                           np.asarray(getattr(space, "high", np.inf), np.float64))

    def _convert(self, a: npt.NDArray[np.float32]) -> npt.NDArray[Any]:
        """A float action in the env's dtype, a copy. An integer Box gets the nearest
        integer within its bounds: a cast alone would truncate toward zero (0.9 -> 0),
        so the bound's own value would be reached only by an action exactly on it."""
        if self.bounds is None:
            return a.astype(self.dtype)
        low, high = self.bounds
        r = np.clip(np.rint(a.astype(np.float64)), low, high)
        info = np.iinfo(self.dtype) if self.dtype.kind in "iu" else None
        if info is not None:  # an unbounded side: stay inside the dtype, not wrap
            r = np.clip(np.nan_to_num(r), info.min, info.max)
        return r.astype(self.dtype)

    def at(self, address: int) -> int | npt.NDArray[Any]:
        if self.discrete:
            return ctypes.c_int32.from_address(address).value + self.start
        a = np.frombuffer((ctypes.c_float * self.width).from_address(address), np.float32)
        return self._convert(a).reshape(self.shape)

    def row(self, actions: npt.NDArray[Any], i: int) -> int | npt.NDArray[Any]:
        if self.discrete:
            return int(actions[i]) + self.start
        return self._convert(actions[i])  # a copy: the row changes next step


def _close_made(made: list[Any]) -> None:
    """Close the envs the binding made, for a failed call: its own exception is the one
    raised, not one from a close."""
    for e in made:
        if hasattr(e, "close"):
            with contextlib.suppress(Exception):
                e.close()


def _resolve_envs(envs: Sequence[PythonEnvOrMaker]) -> tuple[list[PythonEnv], list[Any]]:
    """(the envs, those of them the binding made from a maker): only the binding holds
    those, so it closes them when the call fails (the caller's own envs stay theirs)."""
    if not isinstance(envs, collections.abc.Sequence) or isinstance(envs, (str, bytes)):
        raise TypeError("envs must be a list of environments or of functions that make "
                        "one")
    out: list[PythonEnv] = []
    made: list[Any] = []
    e: Any  # an env, or what makes one
    try:
        for e in envs:
            if isinstance(e, type) or (callable(e) and not hasattr(e, "step")):
                e = e()  # a class or function that makes the env (gymnasium's env_fns)
                made.append(e)
            if not (hasattr(e, "reset") and hasattr(e, "step")):
                raise TypeError(f"{e!r} has no reset/step: not an environment")
            out.append(e)
        if not out:
            raise Error(Status.ERR_RANGE, "envs is empty: at least one environment is "
                        "needed")
    except BaseException:
        _close_made(made)
        raise
    return out, made


def _spaces_of(env: object, observation_space: Space | None,
               action_space: Space | None) -> tuple[Space, Space]:
    obs = observation_space if observation_space is not None else getattr(
        env, "observation_space", None)
    act = action_space if action_space is not None else getattr(env, "action_space", None)
    if obs is None or act is None:
        raise Error(Status.ERR_NULL, f"{env!r} has no observation_space/action_space; "
                    "pass observation_space= and action_space=")
    return obs, act


def _make_env_callbacks(host_ref: weakref.ref[_Host], obs_writer: _ObsWriter,
                        reader: _ActionReader,
                        infos: list[dict[str, Any]] | None = None) -> _lib.EnvCallbacks:
    """A per-env callback table over the list of envs ``host_ref().target``; user
    pointer = env index. A callback with no host returns 1: only a call of the host's
    (which holds it) runs them."""
    def reset(user: int | None, seed: int, obs: int) -> int:
        i = user or 0
        host = host_ref()
        if host is None:
            return 1
        try:
            o, info = _reset_result(host.target[i].reset(seed=seed))
            obs_writer.write(o, obs)
            if infos is not None:
                infos[i] = info
            return 0
        except BaseException as e:  # noqa: B902 - every exception goes to the caller
            host.record(i, e)
            return 1

    def step(user: int | None, action: int, obs: int, reward: int, terminated: int,
             truncated: int) -> int:
        i = user or 0
        host = host_ref()
        if host is None:
            return 1
        try:
            o, r, te, tr, info = _step_result(host.target[i].step(reader.at(action)))
            obs_writer.write(o, obs)
            ctypes.c_float.from_address(reward).value = float(r)
            ctypes.c_uint8.from_address(terminated).value = 1 if te else 0
            ctypes.c_uint8.from_address(truncated).value = 1 if tr else 0
            if infos is not None:
                infos[i] = info
            return 0
        except BaseException as e:  # noqa: B902
            host.record(i, e)
            return 1

    cb = _lib.new_table(_lib.EnvCallbacks)
    cb.reset = _lib.ENV_RESET_FN(reset)
    cb.step = _lib.ENV_STEP_FN(step)
    return cb


# ---------------------------------------------------------------- Env


class _HostCalls:
    """Library calls of a wrapper whose C object may run Python callbacks (``_host``,
    None for a built-in env)."""

    __slots__ = ()
    _host: _Host | None

    @contextlib.contextmanager
    def _admitted(self, what: str) -> Iterator[_HostErrors | None]:
        """The body as the admitted call of ``what`` (its _HostErrors, or None for a
        built-in): whatever the call changes (a generator reseeded, an action written)
        is changed inside, so a call refused because one runs changes nothing."""
        host = self._host
        if host is None:
            yield None
            return
        call = host.enter(what)
        try:
            yield call
        finally:
            host.leave()

    def _fail(self, st: int, what: str, call: _HostErrors | None = None) -> NoReturn:
        if call is not None:
            call.raise_for(st, what)
        raise _lib.error(st, what)


class Env(NoCopy, _HostCalls, _EnvBase):
    """One environment, gymnasium.Env-compatible.

    ``fastrl.make("CartPole-v1")`` for a built-in (its time limit is the library's:
    ``max_episode_steps=N`` changes it, 0 removes it), :meth:`from_python` for a Python
    env. ``reset(seed=None, options=None) -> (obs, info)``; ``step(action) -> (obs,
    reward, terminated, truncated, info)``. Observations are new arrays that the library
    writes directly (no copy): float32 (uint8 for an image space, a dict of the two parts
    for a mixed one), or an int for a ``Discrete`` observation space. Stepping after an
    episode ended, or after a failed step or reset, raises :class:`fastrl.Error`
    (FRL_ERR_STATE) until reset.
    """

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode: str | None = None
    # Any: gymnasium's or the stand-in spaces (see fastrl._typing.Space)
    observation_space: Space
    action_space: Space
    _h: Handle | None
    _host: _Host | None
    _python_env: PythonEnv | None
    _infos: list[dict[str, Any]]

    def __init__(self, id: str, *, runtime: Runtime | None = None,
                 config: ConfigSource = None, render_mode: str | None = None,
                 **options: Any) -> None:
        name = _builtin_name(id)
        rt, options = runtime_for(runtime, options, "make", config)
        cfg = _env_config(config, options, "make", render_mode)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.env_create(ctypes.byref(ptr), rt.handle.ptr, _lib.encode(name, "id"),
                                cfg._ptr), "make")
        self._setup(Handle(ptr.value, L.env_destroy, "env", deps=[rt.handle]), rt, name)
        self._host = None
        self._python_env = None

    @classmethod
    def from_python(cls: type[_Env], env: PythonEnv, *, runtime: Runtime | None = None,
                    config: ConfigSource = None, observation_space: Space | None = None,
                    action_space: Space | None = None, **options: Any) -> _Env:
        """Run a Python env through the library's callback table.

        ``env`` is a gymnasium.Env or any object with ``reset(seed=...)`` and
        ``step(action)`` (and ``observation_space``/``action_space`` unless given). Its
        callbacks run on the calling thread. An exception they raise is re-raised by
        ``reset``/``step`` with its traceback (and a note with the library's message);
        ``step`` then needs a ``reset``. The env's ``reset`` receives the library's seed
        in [0, 2^64), derived from the one given (doc/python.md, "Seeds").
        Observations are a float box or ``Discrete(n)`` (n <= 2^24; the library
        stores the index and returns it as an int); actions are discrete(n) or a float
        box. The env's ``info`` dicts are passed through. A ``Discrete(n, start=s)``
        space becomes the library's discrete(n): action a reaches the env as a + s, and
        observation o is stored as o - s.
        """
        obs_space, act_space = _spaces_of(env, observation_space, action_space)
        rt, options = runtime_for(runtime, options, "Env.from_python", config)
        cfg = as_config(config, options, "Env.from_python")
        c_obs = spaces.observation_space_to_c(obs_space, allow_start=True)
        c_act, start = spaces.to_c(act_space, "action space")
        reader = _ActionReader(act_space, start)
        writer = _obs_writer(obs_space)
        host = _Host([env], "env")
        infos: list[dict[str, Any]] = [{}]
        cb = _make_env_callbacks(weakref.ref(host), writer, reader, infos)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        st, call = host.call("Env.from_python", L.env_create_callbacks, ctypes.byref(ptr),
                             rt.handle.ptr, ctypes.byref(cb), None, c_obs.ptr, c_act.ptr,
                             cfg._ptr)
        if st:
            call.raise_for(st, "Env.from_python")
        self = cls.__new__(cls)
        self._setup(Handle(ptr.value, L.env_destroy, "env", deps=[rt.handle], keep=[cb]),
                    rt, type(env).__name__)
        self._host = host
        self._infos = infos
        self._python_env = env
        return self

    def _setup(self, handle: Handle, runtime: Runtime, name: str) -> None:
        L = _lib.lib()
        self._h = handle
        self._runtime = runtime
        self.name = name
        self.observation_space = spaces.from_c(L.env_observation_space(handle.ptr))
        self.action_space = spaces.from_c(L.env_action_space(handle.ptr))
        # as the library stores one (a mixed one: its row of bytes, shown as a dict)
        self._obs_shape = spaces.observation_layout(self.observation_space)[0]
        self._obs_dtype = spaces.observation_dtype(L.env_observation_space(handle.ptr))
        self._obs_index = (L.space_get_kind(L.env_observation_space(handle.ptr))
                           == spaces.DISCRETE)
        self._discrete = L.space_get_kind(L.env_action_space(handle.ptr)) == spaces.DISCRETE
        if self._discrete:
            self._n = int(self.action_space.n)
            self._act = ctypes.c_int32()
            self._act_ptr = ctypes.addressof(self._act)
        else:
            self._act_arr = np.zeros(self.action_space.shape, np.float32)
            self._act_ptr = self._act_arr.ctypes.data
        self._rew = ctypes.c_float()
        self._term = ctypes.c_uint8()
        self._trunc = ctypes.c_uint8()
        self._ptrs = (ctypes.addressof(self._rew), ctypes.addressof(self._term),
                      ctypes.addressof(self._trunc))

    @property
    def _ptr(self) -> int | None:
        h = self._h
        if h is None:
            raise Error(Status.ERR_STATE, f"{self.name}: the env is closed")
        return h.ptr

    def _observation(self, obs: npt.NDArray[Any]) -> EnvObservation:
        """A Discrete observation is stored as a float32 index: handed back as an int,
        the value gymnasium's Discrete spaces hold; a mixed one is a dict of the image and
        the vector (views of obs)."""
        return int(obs) if self._obs_index else _present(obs, self.observation_space)

    def reset(self, *, seed: IntLike | None = None,
              options: dict[str, Any] | None = None) -> tuple[EnvObservation, dict[str, Any]]:
        ptr = self._ptr
        held = self._h  # through the call: a close() from a callback only lets go
        _check_options(options, "reset")
        if seed is not None:
            seed = _check_seed(seed)
        obs = np.empty(self._obs_shape, self._obs_dtype)
        with self._admitted("reset") as call:
            super().reset(seed=seed)
            c_seed = seed if seed is not None else int(self.np_random.integers(0, 2**63))
            st = _lib.lib().env_reset(ptr, c_seed, obs.ctypes.data)
        if st:
            self._fail(st, "reset", call)
        info: dict[str, Any] = {}
        if self._python_env is not None:
            info = self._infos[0]
        return self._observation(obs), info

    def step(self, action: npt.ArrayLike
             ) -> tuple[EnvObservation, float, bool, bool, dict[str, Any]]:
        ptr = self._ptr
        held = self._h  # through the call: a close() from a callback only lets go
        a: int | npt.NDArray[Any]
        if self._discrete:
            if isinstance(action, np.ndarray) and action.shape in ((), (1,)):
                action = action.reshape(())[()]
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                raise TypeError(f"a discrete action must be an int, not "
                                f"{type(action).__name__}")
            a = int(action)
            if not -(2**31) <= a < 2**31:
                raise Error(Status.ERR_RANGE, f"action {a} is outside [0, {self._n})")
        else:
            a = np.asarray(action)
            if a.dtype.kind not in "fiu":  # as VecEnv.step: no complex, str or object
                raise Error(Status.ERR_TYPE, f"step: box actions must be numbers, not "
                            f"{a.dtype}")
            a = a.astype(np.float32, copy=False)
            if a.shape != self._act_arr.shape:
                raise Error(Status.ERR_SIZE, f"action of shape {a.shape}; the action space "
                            f"has shape {self._act_arr.shape}")
        obs = np.empty(self._obs_shape, self._obs_dtype)
        r, te, tr = self._ptrs
        with self._admitted("step") as call:
            if isinstance(a, int):  # discrete
                self._act.value = a
            else:
                self._act_arr[...] = a
            st = _lib.lib().env_step(ptr, self._act_ptr, obs.ctypes.data, r, te, tr)
        if st:
            self._fail(st, "step", call)
        info: dict[str, Any] = {}
        if self._python_env is not None:
            info = self._infos[0]
        return (self._observation(obs), float(self._rew.value), bool(self._term.value),
                bool(self._trunc.value), info)

    # -- state
    @property
    def state_size(self) -> int:
        """float64 values in the full state (simulator values, then elapsed steps)."""
        return _lib.lib().env_state_size(self._ptr)

    def get_state(self) -> npt.NDArray[np.float64]:
        n = self.state_size
        out = np.empty(n, np.float64)
        _lib.check(_lib.lib().env_get_state(self._ptr, out.ctypes.data, n), "get_state")
        return out

    def set_state(self, state: npt.ArrayLike) -> EnvObservation:
        """Restore a state from get_state; returns the observation of that state."""
        s = np.ascontiguousarray(state, dtype=np.float64)
        if s.ndim != 1:
            raise Error(Status.ERR_SIZE, f"state must be 1-D, not of shape {s.shape}")
        obs = np.empty(self._obs_shape, self._obs_dtype)
        ptr = self._ptr
        held = self._h  # through the call: a close() from a callback only lets go
        _lib.check(_lib.lib().env_set_state(ptr, s.ctypes.data, s.size, obs.ctypes.data),
                   "set_state")
        return self._observation(obs)

    def render(self) -> None:
        return None

    @property
    def closed(self) -> bool:
        return self._h is None

    def close(self) -> None:
        """Destroy the env (a Python env behind it is closed too)."""
        if getattr(self, "_h", None) is None:
            return
        self._h = None
        self._host = None  # a call in progress holds it, for its callbacks
        env, self._python_env = self._python_env, None
        if env is not None and hasattr(env, "close"):
            env.close()

    def __repr__(self) -> str:
        return f"<fastrl.Env {self.name}{' closed' if self.closed else ''}>"


# ---------------------------------------------------------------- VecEnv


class VecEnv(NoCopy, _HostCalls, _VecEnvBase):
    """N environments stepped together by the library, gymnasium.vector-compatible
    with next-step autoreset.

    ``fastrl.make_vec("CartPole-v1", num_envs=4096)`` for a built-in,
    :meth:`from_python` for Python envs, :meth:`from_batch` for a Python world that
    steps all agents in one call.

    ``step(actions)`` copies the actions into the library's action array (or skips the
    copy when ``actions`` *is* :attr:`actions`, the writable view of that array) and
    returns ``(obs, rewards, terminations, truncations, info)``: numpy **views** of the
    library's arrays, the same objects every step, overwritten by the next ``reset`` or
    ``step`` (pass ``copy=True`` for fresh copies). The views are read-only and keep
    the library's memory alive: they stay valid after :meth:`close`, until the last
    view is gone. ``info`` is empty; the library's episode statistics are
    :attr:`episode_returns`, :attr:`episode_lengths` (valid where an episode ended) and
    :attr:`reset_steps`.
    """

    metadata: dict[str, Any] = dict(_VEC_METADATA)
    num_envs: int
    # Any: gymnasium's or the stand-in spaces (see fastrl._typing.Space)
    single_observation_space: Space
    single_action_space: Space
    observation_space: Space
    action_space: Space
    _h: Handle | None
    _host: _Host | None
    _python_envs: list[PythonEnv] | None
    _python_world: BatchWorld | None

    def __init__(self, id: str, num_envs: IntLike = 1, *, runtime: Runtime | None = None,
                 config: ConfigSource = None, copy: bool = False,
                 render_mode: str | None = None, **options: Any) -> None:
        name = _builtin_name(id)
        n = _check_num_envs(num_envs)
        rt, options = runtime_for(runtime, options, "make_vec", config)
        cfg = _env_config(config, options, "make_vec", render_mode)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.vec_env_create(ctypes.byref(ptr), rt.handle.ptr,
                                    _lib.encode(name, "id"), n, cfg._ptr), "make_vec")
        self._setup(Handle(ptr.value, L.vec_env_destroy, "vec_env", deps=[rt.handle]),
                    rt, name, copy)

    @classmethod
    def from_python(cls: type[_VecEnv], envs: Sequence[PythonEnvOrMaker], *,
                    runtime: Runtime | None = None, config: ConfigSource = None,
                    per_env: bool = False, copy: bool = False,
                    observation_space: Space | None = None, action_space: Space | None = None,
                    **options: Any) -> _VecEnv:
        """Step Python envs through the library (``envs``: environments, or functions
        that make one, as gymnasium's ``env_fns``; if the call fails, the envs it made
        are closed, and envs passed as they are stay the caller's).

        By default one batch callback steps every env on the calling thread. With
        ``per_env=True`` each env gets the library's per-env callbacks, run on the
        runtime's threads (each call takes the GIL). Env i is reset with seeds drawn
        from the library's stream (reset seed, i), ints in [0, 2^64), on every reset and
        autoreset (doc/python.md, "Seeds"). An exception
        raised by an env stops the call; ``step``/``reset`` (or ``Trainer.train``)
        re-raises it with its traceback. With ``per_env=True`` the failed env is reset
        on the next step; by default (one batch callback) it is not: the envs after the
        failed one did not step, the failed env is as the exception left it, and only
        the envs that were due to reset on the failed step are reset (again), so call
        ``reset`` when their state matters (doc/python.md, "Exceptions").

        A ``Discrete(n)`` observation space (n <= 2^24) is stored as one float32 per
        env holding the index (``observations`` is then float32 ``[N]``; a
        ``Discrete(n, start=s)`` observation o is stored as o - s); an index outside
        [0, n), a fraction or NaN fails the call with FRL_ERR_RANGE naming the env. The
        policy makes it a one-hot row inside its network.
        """
        resolved, made = _resolve_envs(envs)
        try:
            return cls._from_python_envs(resolved, runtime, config, per_env, copy,
                                         observation_space, action_space, options)
        except BaseException:
            _close_made(made)
            raise

    @classmethod
    def _from_python_envs(cls: type[_VecEnv], envs: list[PythonEnv],
                          runtime: Runtime | None, config: ConfigSource, per_env: bool,
                          copy: bool, observation_space: Space | None,
                          action_space: Space | None, options: dict[str, Any]) -> _VecEnv:
        obs_space, act_space = _spaces_of(envs[0], observation_space, action_space)
        rt, options = runtime_for(runtime, options, "VecEnv.from_python", config)
        cfg = as_config(config, options, "VecEnv.from_python")
        c_obs = spaces.observation_space_to_c(obs_space, allow_start=True)
        c_act, start = spaces.to_c(act_space, "action space")
        reader = _ActionReader(act_space, start)
        writer = _obs_writer(obs_space)
        host = _Host(envs)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        n = len(envs)
        what = "VecEnv.from_python"
        cb: _lib.EnvCallbacks | _lib.BatchEnvCallbacks
        if per_env:
            cb = _make_env_callbacks(weakref.ref(host), writer, reader)
            users = (ctypes.c_void_p * n)(*range(n))
            st, call = host.call(what, L.vec_env_create_callbacks, ctypes.byref(ptr),
                                 rt.handle.ptr, ctypes.byref(cb), users, n, c_obs.ptr,
                                 c_act.ptr, cfg._ptr)
        else:
            cb = _batch_callbacks_for_envs(weakref.ref(host), n, writer, reader)
            st, call = host.call(what, L.vec_env_create_batch, ctypes.byref(ptr),
                                 rt.handle.ptr, ctypes.byref(cb), None, n, c_obs.ptr,
                                 c_act.ptr, cfg._ptr)
        if st:
            call.raise_for(st, what)
        self = cls.__new__(cls)
        self._setup(Handle(ptr.value, L.vec_env_destroy, "vec_env", deps=[rt.handle],
                           keep=[cb]), rt, type(envs[0]).__name__, copy)
        self._host = host
        self._python_envs = envs
        return self

    @classmethod
    def from_batch(cls: type[_VecEnv], world: BatchWorld, num_envs: IntLike,
                   observation_space: Space, action_space: Space, *,
                   runtime: Runtime | None = None, config: ConfigSource = None,
                   copy: bool = False, **options: Any) -> _VecEnv:
        """A Python world that steps all ``num_envs`` agents in one call (the library's
        batch callbacks), on the calling thread, with numpy views of the library's
        arrays (no copies):

        - ``world.reset(seeds, obs)``: reset agent i from ``seeds[i]`` (uint64) and
          write ``obs[i]``;
        - ``world.step(actions, reset_mask, seeds, obs, rewards, terminated,
          truncated)``: step every agent with ``reset_mask[i] == 0`` by ``actions[i]``,
          reset the others from ``seeds[i]``, and write obs (all agents), rewards and
          the two flags (uint8, 0 or 1) of the agents that stepped.

        The views show the library's arrays only during the call (the library uses the
        memory as it pleases afterwards), but they own a reference to it: one the world
        keeps never dangles. An exception raised by the world is re-raised by the
        ``reset``/``step``/``train`` that called it.
        """
        n = _check_num_envs(num_envs)
        rt, options = runtime_for(runtime, options, "VecEnv.from_batch", config)
        cfg = as_config(config, options, "VecEnv.from_batch")
        c_obs = spaces.observation_space_to_c(observation_space)
        c_act, start = spaces.to_c(action_space, "action space")
        if start:
            raise Error(Status.ERR_UNSUPPORTED, "from_batch: a Discrete action space must "
                        "start at 0 (actions arrive as the library's int32 array)")
        obs_shape, _, obs_dtype = spaces.observation_layout(observation_space)
        d = spaces.describe(action_space)
        act_shape = () if d[0] == "discrete" else d[1]
        host = _Host(world, source=f"the batch world ({type(world).__name__})")
        holder: list[weakref.ref[Handle] | None] = [None]
        cb = _batch_callbacks_for_world(weakref.ref(host), n, obs_shape, obs_dtype,
                                        act_shape, d[0] == "discrete", holder,
                                        observation_space)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        st, call = host.call("VecEnv.from_batch", L.vec_env_create_batch, ctypes.byref(ptr),
                             rt.handle.ptr, ctypes.byref(cb), None, n, c_obs.ptr, c_act.ptr,
                             cfg._ptr)
        if st:
            call.raise_for(st, "VecEnv.from_batch")
        self = cls.__new__(cls)
        self._setup(Handle(ptr.value, L.vec_env_destroy, "vec_env", deps=[rt.handle],
                           keep=[cb]), rt, type(world).__name__, copy)
        holder[0] = weakref.ref(self._h)  # type: ignore[arg-type]  # _setup has just set it
        self._host = host
        self._python_world = world
        return self

    @classmethod
    def from_mujoco(cls: type[_VecEnv], mjcf: PathArg, observe: MujocoObserve,
                    reward: MujocoReward, observation_width: IntLike, num_envs: IntLike = 1,
                    *, reset: MujocoReset | None = None,
                    randomize_bodies: Iterable[str | bytes] | None = None,
                    randomize_geoms: Iterable[str | bytes] | None = None,
                    randomize_joints: Iterable[str | bytes] | None = None,
                    runtime: Runtime | None = None, config: ConfigSource = None,
                    copy: bool = False, **options: Any) -> _VecEnv:
        """``num_envs`` envs of a MuJoCo model of your own (``mjcf``: the XML when it
        starts with ``<``, else a path), stepped by the library on its threads:
        ``ctrl`` = the action, ``env.frame_skip`` ``mj_step`` calls, then your
        functions, called with the env's index and its :class:`fastrl.mujoco.MujocoData`
        (``data.qpos``, ``data.xpos``, ``data.model.body_mass``, ``data.model.id("site",
        "tip")``, ...: numpy views of MuJoCo's own arrays):

        - ``observe(env, data, obs)``: write the float32 ``obs[observation_width]``
          (or return it, of shape ``(observation_width,)``: another raises ERR_SIZE);
        - ``reward(env, data, action)``: return the step's reward, or ``(reward,
          terminated)``; ``action`` is what was applied, before MuJoCo's clamping;
        - ``reset(env, data, seed)`` (optional): after MuJoCo's reset to the model's
          initial state, change ``data`` in place (``data.qpos[:] = ...``) drawing
          from ``seed``; a forward pass follows.

        Actions are a box of the actuators' ``ctrlrange``. Options as ``config`` keys:
        ``frame_skip``, ``max_episode_steps``, ``randomize_mass``,
        ``randomize_friction``, ``randomize_damping`` (each episode, factors in [1 - r,
        1 + r] of the named bodies, geoms and joints: ``randomize_*`` lists, all when
        None). The functions run on the runtime's threads, one env at a time each
        holding the GIL; an exception is re-raised by the ``step``/``reset``/``train``
        that called it. A model MuJoCo cannot load raises Error with MuJoCo's message;
        without the library's MuJoCo plugin, Error(ERR_UNSUPPORTED).
        """
        from . import mujoco as _mujoco
        n = _check_num_envs(num_envs)
        if (isinstance(observation_width, bool)
                or not isinstance(observation_width, (int, np.integer))):
            raise TypeError("from_mujoco: observation_width must be an int")
        width = int(observation_width)
        if not 1 <= width <= 65536:  # the library's range, said with the value given
            raise Error(Status.ERR_RANGE, f"VecEnv.from_mujoco: observation_width {width} "
                        "is outside [1, 65536]")
        rt, options = runtime_for(runtime, options, "VecEnv.from_mujoco", config)
        cfg = as_config(config, options, "VecEnv.from_mujoco")
        text = mjcf if isinstance(mjcf, str) and mjcf.lstrip().startswith("<") else \
            _lib.fspath(mjcf, "mjcf")
        host = _Host((observe, reward, reset))
        holder: list[weakref.ref[Handle] | None] = [None]
        action_width = [0]

        def owner() -> Handle | None:
            ref = holder[0]
            if ref is None:  # the library calls back only once the vec env exists
                return None
            h = ref()
            if h is None:  # a MujocoData kept past its vec env: its mjData is freed
                raise Error(Status.ERR_STATE, "from_mujoco: this MuJoCo data belongs to a "
                            "vec env that is closed and gone; read its arrays inside the "
                            "callbacks, or keep copies (data.qpos.copy())")
            return h

        cb, keep = _mujoco.callbacks(host, width, action_width, owner, randomize_bodies,
                                     randomize_geoms, randomize_joints)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        st, call = host.call("VecEnv.from_mujoco", L.vec_env_create_mujoco,
                             ctypes.byref(ptr), rt.handle.ptr, _lib.encode(text, "mjcf"),
                             ctypes.byref(cb), None, width, n, cfg._ptr)
        if st:
            call.raise_for(st, "VecEnv.from_mujoco")
        self = cls.__new__(cls)
        self._setup(Handle(ptr.value, L.vec_env_destroy, "vec_env", deps=[rt.handle],
                           keep=[cb, keep]), rt, "MuJoCo model", copy)
        holder[0] = weakref.ref(self._h)  # type: ignore[arg-type]  # _setup has just set it
        action_width[0] = int(np.prod(self.single_action_space.shape))
        self._host = host
        return self

    @classmethod
    def _borrowed(cls: type[_VecEnv], ptr: int | None, owner: object, runtime: Runtime,
                  name: str) -> _VecEnv:
        """The vec env inside a trainer: readable, not steppable."""
        self = cls.__new__(cls)
        self._setup(Handle(ptr, None, "vec_env (borrowed)", deps=[owner]), runtime, name,
                    False)
        self._read_only = True
        return self

    def _setup(self, handle: Handle, runtime: Runtime, name: str, copy: bool) -> None:
        L = _lib.lib()
        p = handle.ptr
        self._h = handle
        self._runtime = runtime
        self._host = None
        self._python_envs = None
        self._python_world = None
        self._read_only = False
        # whether the flags arrays show which envs autoreset on the next step: not after
        # a failed step (a failed batch leaves the flags its world wrote, a failed host
        # env autoresets with both flags 0)
        self._flags_tell_resets = True
        self.name = name
        self.copy = bool(copy)
        self.num_envs = n = L.vec_env_num_envs(p)
        self.single_observation_space = spaces.from_c(L.vec_env_observation_space(p))
        self.single_action_space = spaces.from_c(L.vec_env_action_space(p))
        if L.space_get_kind(L.vec_env_observation_space(p)) == spaces.DISCRETE:
            self.observation_space = spaces.index_batch_space(self.single_observation_space, n)
        else:
            self.observation_space = spaces.batch_space(self.single_observation_space, n)
        self.action_space = spaces.batch_space(self.single_action_space, n)
        discrete = L.space_get_kind(L.vec_env_action_space(p)) == spaces.DISCRETE
        self._discrete = discrete
        self._n_actions = int(self.single_action_space.n) if discrete else 0
        obs_shape = (n,) + spaces.observation_layout(self.single_observation_space)[0]
        act_shape = (n,) if discrete else (n,) + tuple(self.single_action_space.shape)
        self._act_shape = act_shape
        self._obs = _present(view(L.vec_env_observations(p), obs_shape,
                                  spaces.observation_dtype(L.vec_env_observation_space(p)),
                                  handle), self.single_observation_space)
        self._rew = view(L.vec_env_rewards(p), (n,), np.float32, handle)
        self._term = view(L.vec_env_terminated(p), (n,), np.bool_, handle)
        self._trunc = view(L.vec_env_truncated(p), (n,), np.bool_, handle)
        self._actions = view(L.vec_env_actions(p), act_shape,
                             np.int32 if discrete else np.float32, handle, readonly=False)
        # what reset/step return, taken before the call: a close() from a callback
        # clears the attributes above, and the call still returns what it wrote
        self._out = (self._obs, self._rew, self._term, self._trunc)
        self._step_fn = L.vec_env_step
        self._ptr_cache = p

    # -- accessors
    @property
    def _ptr(self) -> int | None:
        if self._h is None:
            raise Error(Status.ERR_STATE, f"{self.name}: the vec env is closed")
        return self._ptr_cache

    def _array(self, fn: Callable[[int | None], int | None], shape: tuple[int, ...],
               dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        h = self._h
        if h is None:
            raise Error(Status.ERR_STATE, f"{self.name}: the vec env is closed")
        return view(fn(h.ptr), shape, dtype, h)

    @property
    def actions(self) -> npt.NDArray[Any]:
        """The library's action array (writable view): write actions here and call
        ``step(env.actions)`` to step without a copy."""
        self._ptr
        return self._actions

    @property
    def observations(self) -> Observations:
        self._ptr
        return self._obs

    @property
    def rewards(self) -> npt.NDArray[np.float32]:
        self._ptr
        return self._rew

    @property
    def terminations(self) -> npt.NDArray[np.bool_]:
        self._ptr
        return self._term

    @property
    def truncations(self) -> npt.NDArray[np.bool_]:
        self._ptr
        return self._trunc

    @property
    def reset_steps(self) -> npt.NDArray[np.bool_]:
        """bool[N]: the last reset/step reset env i (an autoreset step, not a transition)."""
        return self._array(_lib.lib().vec_env_reset_steps, (self.num_envs,), np.bool_)

    @property
    def episode_returns(self) -> npt.NDArray[np.float32]:
        """float32[N]: where an episode ended this step, its return (stale elsewhere)."""
        return self._array(_lib.lib().vec_env_episode_returns, (self.num_envs,), np.float32)

    @property
    def episode_lengths(self) -> npt.NDArray[np.int32]:
        """int32[N]: where an episode ended this step, its length (stale elsewhere)."""
        return self._array(_lib.lib().vec_env_episode_lengths, (self.num_envs,), np.int32)

    @property
    def total_steps(self) -> int:
        return _lib.lib().vec_env_total_steps(self._ptr)

    @property
    def total_episodes(self) -> int:
        return _lib.lib().vec_env_total_episodes(self._ptr)

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    # -- gymnasium API
    def _check_writable(self, what: str) -> None:
        if self._read_only:
            raise Error(Status.ERR_STATE, f"{what}: this is a trainer's vec env; only the "
                        "trainer may reset or step it (read its arrays between updates)")

    def reset(self, *, seed: IntLike | None = None,
              options: dict[str, Any] | None = None) -> tuple[Observations, dict[str, Any]]:
        """Reset every env: env i draws from the stream (seed, i). ``seed`` is one int
        (or None: drawn from this VecEnv's own generator)."""
        ptr = self._ptr
        held = self._h  # through the call: a close() from a callback only lets go
        obs = self._out[0]
        self._check_writable("reset")
        _check_options(options, "reset")
        if seed is not None and not isinstance(seed, (int, np.integer)):
            # a str (a Sequence) or a 0-d array is no list: _check_seed's TypeError
            if (isinstance(seed, collections.abc.Sequence)
                    and not isinstance(seed, (str, bytes))) or np.ndim(seed) > 0:
                raise Error(Status.ERR_UNSUPPORTED,
                            "reset: a list of seeds is not supported; pass one int (env "
                            "i then draws from the library's stream (seed, i))")
        if seed is not None:
            seed = _check_seed(seed)
        with self._admitted("reset") as call:
            if seed is not None:
                if _seeding is not None:
                    self._np_random, self._np_random_seed = _seeding.np_random(seed)
                else:
                    self._np_random = np.random.default_rng(seed)
                c_seed = seed
            else:
                c_seed = int(self.np_random.integers(0, 2**63))
            st = _lib.lib().vec_env_reset(ptr, c_seed)
        if st:
            self._fail(st, "reset", call)
        self._flags_tell_resets = True
        if self.copy:
            return _copy_obs(obs), {}
        return obs, {}

    def step(self, actions: npt.ArrayLike) -> tuple[
            Observations, npt.NDArray[np.float32], npt.NDArray[np.bool_],
            npt.NDArray[np.bool_], dict[str, Any]]:
        h = self._h
        if h is None or self._read_only:
            self._ptr
            self._check_writable("step")
        out = self._out
        host = self._host
        if host is None:  # a built-in: nothing calls back
            if actions is not self._actions:
                self._set_actions(actions)
            st, call = self._step_fn(self._ptr_cache), None
        else:
            # Admitted before the actions are written: a step refused because one runs
            # (called from an env's callback) must not write the running step's action
            # array, which its envs still read.
            call = host.enter("step")
            try:
                if actions is not self._actions:
                    self._set_actions(actions)
                st = self._step_fn(self._ptr_cache)
            finally:
                host.leave()
        # after any failed step (a refused action's too: the status does not tell them
        # apart) wide actions are all refused until a step or reset succeeds
        self._flags_tell_resets = not st
        if st:
            self._fail(st, "step", call)
        obs, rew, term, trunc = out
        if self.copy:
            return _copy_obs(obs), rew.copy(), term.copy(), trunc.copy(), {}
        return obs, rew, term, trunc, {}

    def _set_actions(self, a: npt.ArrayLike) -> None:
        """actions into the library's action array (one copy; checked)."""
        if (type(a) is np.ndarray and a.dtype is self._actions.dtype
                and a.shape == self._act_shape):
            self._actions[...] = a
        else:
            self._write_actions(a)

    def _write_actions(self, actions: npt.ArrayLike) -> None:
        a = np.asarray(actions)
        if a.shape != self._act_shape:
            raise Error(Status.ERR_SIZE, f"step: actions of shape {a.shape}; expected "
                        f"{self._act_shape}")
        if self._discrete:
            if a.dtype.kind not in "iu":
                raise Error(Status.ERR_TYPE, f"step: discrete actions must be integers, "
                            f"not {a.dtype}")
            if a.dtype.itemsize >= 4 and a.dtype != _I32 and a.size:
                a = self._narrow_actions(a)
            np.copyto(self._actions, a, casting="unsafe")
        else:
            if a.dtype.kind not in "fiu":
                raise Error(Status.ERR_TYPE, f"step: box actions must be numbers, not "
                            f"{a.dtype}")
            np.copyto(self._actions, a, casting="unsafe")

    def _narrow_actions(self, a: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Wide discrete actions as int32: a value beyond int32 would wrap into range, so
        it is refused here, except in an env that autoresets on this step, whose action
        the library ignores (it gets 0); the library checks the rest, as for int32. After
        a failed step the flags do not tell which envs autoreset (a failed batch world
        leaves the flags it wrote, and the library steps those envs): every wide action
        is refused then, rather than one stepped as 0."""
        wide = (a < -(2**31)) | (a >= 2**31)
        if not wide.any():
            return a
        resetting = (self._term != 0) | (self._trunc != 0)
        if not self._flags_tell_resets:
            resetting = np.zeros_like(resetting)
        if (wide & ~resetting).any():  # named as the library would: the lowest bad env
            i = int(np.flatnonzero(((a < 0) | (a >= self._n_actions)) & ~resetting)[0])
            raise Error(Status.ERR_RANGE, f"step: env {i}: action {a[i]} is outside "
                        f"[0, {self._n_actions})")
        return np.where(wide, 0, a)

    def render(self) -> None:
        return None

    def close(self, **kwargs: Any) -> None:
        """Let go of the library's vec env: it is destroyed once no view of its arrays
        is left. Python envs behind it are closed now."""
        if getattr(self, "_h", None) is None:
            self.closed = True
            return
        self._h = None
        self._host = None  # a call in progress holds it, for its callbacks
        # closed: the accessors check _h before they read these
        self._obs = self._rew = self._term = self._trunc = self._actions = None  # type: ignore
        self._out = None  # type: ignore[assignment]
        self.closed = True
        envs, self._python_envs = self._python_envs, None
        world, self._python_world = self._python_world, None
        first = None
        for e in (envs or []) + ([world] if world is not None else []):
            if hasattr(e, "close"):
                try:
                    e.close()
                except Exception as exc:  # close them all, then raise the first
                    first = first or exc
        if first is not None:
            raise first

    # gymnasium's VectorEnv (1.x) has no with-statement; every other fastrl object does
    def __enter__(self: _VecEnv) -> _VecEnv:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __repr__(self) -> str:
        state = " closed" if getattr(self, "_h", None) is None else ""
        return f"<fastrl.VecEnv {getattr(self, 'name', '?')} num_envs={self.num_envs}{state}>"


def _eval_vec_env(id: str, num_envs: IntLike, runtime: Runtime | None,
                  policy_runtime: Runtime, options: dict[str, Any], what: str) -> VecEnv:
    """The vec env an evaluation makes of a built-in id with options: on ``runtime``;
    on a runtime of its own when the options name runtime settings (``threads=2``: the
    library steps a vec env on its runtime's threads and acts on the policy's, which may
    be another); else on the policy's."""
    named = runtime_keys_named({k: v for k, v in options.items() if k != "config"},
                               options.get("config"), what)
    if named and runtime is not None:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{what}: {', '.join(named)} make the "
                    "vec env's runtime; give them to the fastrl.Runtime(...) passed as "
                    "runtime=, or leave runtime= out")
    if not named and runtime is None:
        runtime = policy_runtime._live()
    return VecEnv(id, num_envs, runtime=runtime, **options)


def _check_num_envs(n: object) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"num_envs must be an int, not {type(n).__name__}")
    n = int(n)
    if not 1 <= n <= 1 << 24:
        raise Error(Status.ERR_RANGE, f"num_envs {n} is outside [1, 2^24]")
    return n


def _u64_view(address: int, n: int) -> npt.NDArray[np.uint64]:
    return np.frombuffer((ctypes.c_uint64 * n).from_address(address), np.uint64)


def _batch_callbacks_for_envs(host_ref: weakref.ref[_Host], n: int, writer: _ObsWriter,
                              reader: _ActionReader) -> _lib.BatchEnvCallbacks:
    """One batch callback table stepping the ``n`` Python envs ``host_ref().target`` on
    the calling thread."""
    cache: dict[tuple[int | None, ...], tuple[Any, ...]] = {}

    # the addresses after obs: all of them (a step) or none (a reset), hence Any
    def arrays(obs: int, rewards: Any = None, terminated: Any = None, truncated: Any = None,
               actions: Any = None) -> tuple[Any, ...]:
        key = (obs, rewards, terminated, truncated, actions)
        got = cache.get(key)
        if got is None:
            o = np.frombuffer((ctypes.c_char * (n * writer.width * writer.dtype.itemsize))
                              .from_address(obs), writer.dtype).reshape(n, writer.width)
            a: npt.NDArray[Any] | None  # int32 or float32
            r = te = tr = a = None
            if rewards:
                r = np.frombuffer((ctypes.c_float * n).from_address(rewards), np.float32)
                te = np.frombuffer((ctypes.c_uint8 * n).from_address(terminated), np.uint8)
                tr = np.frombuffer((ctypes.c_uint8 * n).from_address(truncated), np.uint8)
                if reader.discrete:
                    a = np.frombuffer((ctypes.c_int32 * n).from_address(actions), np.int32)
                else:
                    a = np.frombuffer((ctypes.c_float * (n * reader.width)).from_address(
                        actions), np.float32).reshape((n,) + reader.shape)
            cache.clear()  # the vec env's arrays never move: one entry is enough
            got = cache[key] = (o, r, te, tr, a)
        return got

    # On an exception, the arrays over library memory are dropped from this frame and
    # the cache before the exception (whose traceback holds the frame) is kept: it may
    # outlive the vec env. The Python envs only ever see ints and copies.
    def reset(user: int | None, num: int, seeds: int, obs: int) -> int:
        i = 0
        o = s = None
        host = host_ref()
        if host is None:  # only a call of the host's (which holds it) runs the callbacks
            return 1
        try:
            envs = host.target
            o = arrays(obs)[0]
            s = _u64_view(seeds, n)
            for i in range(n):
                ob, _ = _reset_result(envs[i].reset(seed=int(s[i])))
                o[i] = writer.array(ob).reshape(-1)
            return 0
        except BaseException as e:  # noqa: B902
            o = s = None
            cache.clear()
            host.record(i, e)
            return 1

    def step(user: int | None, num: int, actions: int, reset_mask: int, seeds: int, obs: int,
             rewards: int, terminated: int, truncated: int) -> int:
        i = 0
        o = r = te = tr = a = mask = s = None
        host = host_ref()
        if host is None:
            return 1
        try:
            envs = host.target
            o, r, te, tr, a = arrays(obs, rewards, terminated, truncated, actions)
            mask = np.frombuffer((ctypes.c_uint8 * n).from_address(reset_mask), np.uint8)
            s = _u64_view(seeds, n)
            row = reader.row
            arr = writer.array
            for i in range(n):
                if mask[i]:
                    ob, _ = _reset_result(envs[i].reset(seed=int(s[i])))
                    o[i] = arr(ob).reshape(-1)
                else:
                    ob, rew, t1, t2, _ = _step_result(envs[i].step(row(a, i)))
                    o[i] = arr(ob).reshape(-1)
                    r[i] = float(rew)  # None must raise, as per env, not become NaN
                    te[i] = 1 if t1 else 0
                    tr[i] = 1 if t2 else 0
            return 0
        except BaseException as e:  # noqa: B902
            o = r = te = tr = a = mask = s = None
            cache.clear()
            host.record(i, e)
            return 1

    cb = _lib.new_table(_lib.BatchEnvCallbacks)
    cb.reset = _lib.BATCH_RESET_FN(reset)
    cb.step = _lib.BATCH_STEP_FN(step)
    return cb


def _batch_callbacks_for_world(host_ref: weakref.ref[_Host], n: int,
                               obs_shape: tuple[int, ...], obs_dtype: np.dtype[Any],
                               act_shape: tuple[int, ...], discrete: bool,
                               holder: list[weakref.ref[Handle] | None],
                               obs_space: Space) -> _lib.BatchEnvCallbacks:
    """Batch callbacks handing the world ``host_ref().target`` numpy views of the
    library's arrays. The views are made per call and own a reference to the vec env's
    handle (``holder[0]``, a weakref set once the vec env exists), so a view the world
    keeps, or one held by an exception's traceback, stays valid however long it lives;
    and the handle reaches the world only weakly (see _Host), so such a world does not
    keep the vec env forever."""
    obs_shape = (n,) + tuple(obs_shape)
    act_shape = (n,) + tuple(act_shape)

    def owner() -> Handle | None:
        return holder[0]() if holder[0] is not None else None

    def reset(user: int | None, num: int, seeds: int, obs: int) -> int:
        host = host_ref()
        if host is None:  # only a call of the host's (which holds it) runs the callbacks
            return 1
        try:
            h, world = owner(), host.target
            world.reset(view(seeds, (n,), np.uint64, h),
                        _present(view(obs, obs_shape, obs_dtype, h, readonly=False), obs_space))
            return 0
        except BaseException as e:  # noqa: B902
            host.record(0, e)
            return 1

    def step(user: int | None, num: int, actions: int, reset_mask: int, seeds: int, obs: int,
             rewards: int, terminated: int, truncated: int) -> int:
        host = host_ref()
        if host is None:
            return 1
        try:
            h, world = owner(), host.target
            world.step(view(actions, act_shape, np.int32 if discrete else np.float32, h),
                       view(reset_mask, (n,), np.uint8, h),
                       view(seeds, (n,), np.uint64, h),
                       _present(view(obs, obs_shape, obs_dtype, h, readonly=False), obs_space),
                       view(rewards, (n,), np.float32, h, readonly=False),
                       view(terminated, (n,), np.uint8, h, readonly=False),
                       view(truncated, (n,), np.uint8, h, readonly=False))
            return 0
        except BaseException as e:  # noqa: B902
            host.record(0, e)
            return 1

    cb = _lib.new_table(_lib.BatchEnvCallbacks)
    cb.reset = _lib.BATCH_RESET_FN(reset)
    cb.step = _lib.BATCH_STEP_FN(step)
    return cb


# ---------------------------------------------------------------- entry points


def make(id: str, **options: Any) -> Env:
    """A built-in environment, as ``gymnasium.make``: ``fastrl.make("CartPole-v1",
    max_episode_steps=200)``. Options are config keys (``env.max_episode_steps``, or
    its last part), ``runtime=`` (a :class:`fastrl.Runtime`; runtime.* options make a
    new one) and ``config=``."""
    return Env(id, **options)


def make_vec(id: str, num_envs: IntLike = 1, **options: Any) -> VecEnv:
    """``num_envs`` copies of a built-in, stepped by the library's threads:
    ``fastrl.make_vec("CartPole-v1", num_envs=4096, threads=2)``. ``copy=True``
    returns copies instead of views."""
    return VecEnv(id, num_envs, **options)

