"""A MuJoCo model of your own as a VecEnv, with its meaning in Python.

``VecEnv.from_mujoco`` (see its docstring) gives the library an MJCF model and three
Python functions: the observation, the reward and termination, and optionally the
reset. The library compiles the model once, gives each env its own ``mjData`` and steps
the envs with MuJoCo on its threads; the functions read (and the reset writes) each
env's MuJoCo arrays through the objects below, as numpy views without copies. This
binding needs no ``mujoco`` Python package: the arrays are found by name through the
library (``frl_mujoco_array``), in the MuJoCo that the library's plugin runs.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _lib
from ._handle import _TYPESTR, NoCopy, _ArrayMemory
from ._lib import Error, Status

if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, NoReturn

    import numpy.typing as npt

    from ._handle import Handle
    from .env import _Host

    # where an array lies: (address, shape, numpy typestr)
    _Where = tuple[int | None, tuple[int, ...], str]
    # the vec env's handle: raises once the vec env is gone (None before it exists)
    _Owner = Callable[[], "Handle | None"]

# frl_mujoco_type -> numpy typestr
_TYPES = {1: _TYPESTR[np.dtype(np.float64)], 2: _TYPESTR[np.dtype(np.float32)],
          3: _TYPESTR[np.dtype(np.int32)], 4: _TYPESTR[np.dtype(np.uint8)],
          5: _TYPESTR[np.dtype(np.int64)]}


def _where(model: int, data: int | None, name: str) -> _Where:
    """(address, shape, typestr) of MuJoCo's array ``name`` (data None: the model's)."""
    L = _lib.lib()
    ptr, rows, cols, kind = ctypes.c_void_p(), ctypes.c_int64(), ctypes.c_int64(), \
        ctypes.c_int32()
    st = L.mujoco_array(model, data, _lib.encode(name, "array name"), ctypes.byref(ptr),
                        ctypes.byref(rows), ctypes.byref(cols), ctypes.byref(kind))
    if st:
        raise AttributeError(_lib.last_error())
    shape = (rows.value,) if cols.value == 1 else (rows.value, cols.value)
    return ptr.value, shape, _TYPES[kind.value]


def _array(where: _Where, readonly: bool, owner: Handle | None) -> npt.NDArray[Any]:
    address, shape, typestr = where
    if not address:  # an empty array (no mocap bodies, no sensors, ...)
        return np.empty(shape, dtype=np.dtype(typestr))
    return np.asarray(_ArrayMemory(address, shape, typestr, readonly, owner))


# mjData's arrays that each step lays out again in its arena (mjxmacro.h's
# MJDATA_ARENA_POINTERS of the pinned MuJoCo: the solver's, the islands'): they move, so
# they are looked up at every access instead of once.
_ARENA_PREFIXES = ("efc_", "iefc_", "efm_", "island_", "map_", "tree_island", "dof_island",
                   "iacc", "ifrc_", "tendon_efcadr")


class _Arrays(NoCopy):
    """MuJoCo's arrays of one struct by attribute name. Each access builds a fresh numpy
    view (a microsecond or two) that holds the vec env, so a view kept after the call
    never dangles; once the vec env is gone, reading the object raises ERR_STATE. Where
    each array lies is looked up once, except the arena's (``efc_force``, ...), which
    every step moves."""

    __slots__ = ("_model", "_data", "_owner", "_found", "_readonly")
    # set through object.__setattr__ (this class's own __setattr__ refuses)
    _model: int
    _data: int | None
    _owner: _Owner
    _found: dict[str, _Where]
    _readonly: bool

    def __init__(self, model: int, data: int | None, owner: _Owner, readonly: bool) -> None:
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_found", {})
        object.__setattr__(self, "_readonly", readonly)

    def __getattr__(self, name: str) -> npt.NDArray[Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        owner = self._owner()  # first: it raises once the vec env (and its structs) is gone
        where = self._found.get(name)
        if where is None:
            where = _where(self._model, self._data, name)
            if self._data is None or not name.startswith(_ARENA_PREFIXES):
                self._found[name] = where
        return _array(where, self._readonly, owner)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"MuJoCo's arrays are written in place: {name}[:] = ..., "
                             f"not {name} = ...")


class MujocoModel(_Arrays):
    """One env's ``mjModel`` (its own copy when the env randomises its model): its
    arrays by their C names (``body_mass``, ``geom_friction``, ``actuator_ctrlrange``,
    ...) as read-only numpy views, shaped ``(rows,)`` or ``(rows, cols)`` as MuJoCo's
    Python bindings shape them; and :meth:`id`."""

    __slots__ = ("_ids",)
    _ids: dict[tuple[str, str], int]

    def __init__(self, model: int, owner: _Owner) -> None:
        super().__init__(model, None, owner, True)
        object.__setattr__(self, "_ids", {})

    def id(self, kind: str, name: str) -> int:
        """The index of the object ``name`` of ``kind`` ("body", "joint", "geom",
        "site", "actuator", "sensor", ...), to index the arrays (``data.xpos[i]``)."""
        key = (kind, name)
        found = self._ids.get(key)
        if found is None:
            self._owner()  # raises once the vec env (and this model) is gone
            out = ctypes.c_int32()
            st = _lib.lib().mujoco_name_id(self._model, _lib.encode(kind, "kind"),
                                           _lib.encode(name, "name"), ctypes.byref(out))
            if st:
                raise _lib.error(st)
            found = self._ids[key] = out.value
        return found


class MujocoData(_Arrays):
    """One env's ``mjData`` inside a callback: its arrays by their C names (``qpos``,
    ``qvel``, ``ctrl``, ``xpos``, ``site_xpos``, ``sensordata``, ...) as numpy views,
    writable (write only in ``reset``), and ``model``."""

    __slots__ = ("model",)
    model: MujocoModel

    def __init__(self, model: int, data: int, owner: _Owner) -> None:
        super().__init__(model, data, owner, False)
        object.__setattr__(self, "model", MujocoModel(model, owner))


class _Views:
    """Each env's MujocoData, made at its first callback; env i's structs stay where
    they are for the vec env's life."""

    __slots__ = ("owner", "by_env")

    def __init__(self, owner: _Owner) -> None:
        self.owner = owner  # () -> the vec env's Handle (or None before it exists)
        self.by_env: dict[int, MujocoData] = {}

    def of(self, env: int, model: int, data: int) -> MujocoData:
        d = self.by_env.get(env)
        if d is None or d._data != data or d._model != model:
            d = self.by_env[env] = MujocoData(model, data, self.owner)
        return d


def _float_view(address: int, n: int, owner: Handle | None,
                readonly: bool) -> npt.NDArray[np.float32]:
    return np.asarray(_ArrayMemory(address, (n,), _TYPESTR[np.dtype(np.float32)], readonly,
                                   owner))


def _returned_observation(got: object, width: int) -> npt.NDArray[np.float32]:
    """What observe returned, as float32 of the observation's shape exactly: numpy would
    broadcast one value (or a row of one) over the whole observation. A number stands
    for a shape of one element, as for Python envs."""
    a = np.asarray(got, np.float32)
    if a.shape != (width,) and not (width == 1 and a.size == 1 and a.ndim <= 1):
        raise Error(Status.ERR_SIZE, f"observe returned an observation of shape {a.shape}; "
                    f"observation_width is {width}")
    return a


def _name_list(names: Iterable[str | bytes] | None,
               what: str) -> ctypes.Array[ctypes.c_char_p] | None:
    """A NULL-terminated char ** of names (None: NULL, every object)."""
    if names is None:
        return None
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{what} must be a list of names, not one name")
    encoded = [_lib.encode(n, what) for n in names]
    return (ctypes.c_char_p * (len(encoded) + 1))(*encoded, None)


def callbacks(host: _Host, obs_width: int, action_width: list[int], owner: _Owner,
              randomize_bodies: Iterable[str | bytes] | None = None,
              randomize_geoms: Iterable[str | bytes] | None = None,
              randomize_joints: Iterable[str | bytes] | None = None
              ) -> tuple[_lib.MujocoCallbacks, list[Any]]:
    """The frl_mujoco_callbacks table over the Python functions ``host.target``
    (observe, reward, reset: an env._Host, reached weakly as env._Host says), and what
    it needs kept alive. The user pointer is unused; each call says its env.
    action_width: a one-item list, filled once the model is compiled (no reward is asked
    before)."""
    observe, reward, reset = host.target
    for fn, what in ((observe, "observe"), (reward, "reward")):
        if not callable(fn):
            raise Error(Status.ERR_NULL, f"from_mujoco: {what} must be a function, not "
                        f"{type(fn).__name__}")
    if reset is not None and not callable(reset):
        raise Error(Status.ERR_INVALID_ARGUMENT, "from_mujoco: reset must be a function or "
                    "None")
    views = _Views(owner)
    host_ref = weakref.ref(host)

    # A callback with no host returns 1: only a call of the host's (which holds it)
    # runs them.
    def c_observe(user: int | None, env: int, model: int, data: int, obs: int) -> int:
        host = host_ref()
        if host is None:
            return 1
        try:
            out = _float_view(obs, obs_width, owner(), False)
            got = host.target[0](env, views.of(env, model, data), out)
            if got is not None:
                out[...] = _returned_observation(got, obs_width)
            return 0
        except BaseException as e:  # noqa: B902 - every exception goes to the caller
            host.record(env, e)
            return 1

    def c_reward(user: int | None, env: int, model: int, data: int, action: int,
                 out_reward: int, terminated: int) -> int:
        host = host_ref()
        if host is None:
            return 1
        try:
            a = _float_view(action, action_width[0], owner(), True)
            got = host.target[1](env, views.of(env, model, data), a)
            r, te = got if isinstance(got, tuple) else (got, False)
            ctypes.c_float.from_address(out_reward).value = float(r)
            ctypes.c_uint8.from_address(terminated).value = 1 if te else 0
            return 0
        except BaseException as e:  # noqa: B902
            host.record(env, e)
            return 1

    def c_reset(user: int | None, env: int, model: int, data: int, seed: int) -> int:
        host = host_ref()
        if host is None:
            return 1
        try:
            host.target[2](env, views.of(env, model, data), int(seed))
            return 0
        except BaseException as e:  # noqa: B902
            host.record(env, e)
            return 1

    cb = _lib.new_table(_lib.MujocoCallbacks)
    cb.observe = _lib.MUJOCO_OBSERVE_FN(c_observe)
    cb.reward = _lib.MUJOCO_REWARD_FN(c_reward)
    if reset is not None:
        cb.reset = _lib.MUJOCO_RESET_FN(c_reset)
    lists = [_name_list(randomize_bodies, "randomize_bodies"),
             _name_list(randomize_geoms, "randomize_geoms"),
             _name_list(randomize_joints, "randomize_joints")]
    for field, names in zip(("randomize_bodies", "randomize_geoms", "randomize_joints"),
                            lists):
        if names is not None:
            setattr(cb, field, ctypes.cast(names, ctypes.POINTER(ctypes.c_char_p)))
    return cb, [views, lists]
