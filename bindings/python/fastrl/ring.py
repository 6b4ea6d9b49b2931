"""Ring: the library's experience ring, its arrays as numpy views."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from . import _lib, spaces
from ._handle import Closable, Handle, view
from ._lib import Error, Status
from .runtime import runtime_for

if TYPE_CHECKING:
    from typing import Any, Callable, Literal, TypeVar, overload

    import numpy.typing as npt

    from ._typing import IntLike, Observations, Space
    from .runtime import Runtime

    _Ring = TypeVar("_Ring", bound="Ring")
    # the arrays that are never a mixed observation's dict
    _PlainArray = Literal["actions", "log_probs", "values", "rewards", "terminated",
                          "truncated", "reset_steps", "policy_version"]

__all__ = ["Ring", "RING_ARRAYS", "SLOT_STATES"]

# name: (id, dtype or None for the action type, shape kind)
RING_ARRAYS = {
    "observations": 0, "actions": 1, "log_probs": 2, "values": 3, "rewards": 4,
    "terminated": 5, "truncated": 6, "reset_steps": 7, "policy_version": 8,
    "bootstrap_obs": 9,
}
SLOT_STATES = ("free", "writing", "ready", "reading")


class Ring(Closable):
    """Slots of [T steps x B envs] rollout arrays (row ``t * B + b``), shaped here as
    ``[T, B, ...]``. ``array(name, slot)`` is a numpy view of the slot's array (names:
    :data:`RING_ARRAYS`), valid while any view lives. ``Trainer.ring`` is the trainer's
    ring (one slot in sync mode, more with ``sampler.mode=async``; read-only
    views: read it between updates)."""

    _h: Handle | None

    def __init__(self, slots: IntLike, steps: IntLike, envs: IntLike, observation_space: Space,
                 action_space: Space, *, runtime: Runtime | None = None) -> None:
        rt, _ = runtime_for(runtime, {}, "Ring")
        c_obs = spaces.observation_space_to_c(observation_space)
        c_act, start = spaces.to_c(action_space, "action space")
        if start:  # the ring stores the library's actions, 0-based (as Policy refuses it)
            raise Error(Status.ERR_UNSUPPORTED, f"Ring: a Discrete action space must start "
                        f"at 0, not {start}")
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        for name, v in (("slots", slots), ("steps", steps), ("envs", envs)):
            _int32(v, name)
        _lib.check(L.ring_create(ctypes.byref(ptr), rt.handle.ptr, slots, steps, envs,
                                 c_obs.ptr, c_act.ptr), "Ring")
        self._setup(Handle(ptr.value, L.ring_destroy, "ring", deps=[rt.handle]),
                    observation_space, action_space, writable=True)

    @staticmethod
    def memory_size(slots: IntLike, steps: IntLike, envs: IntLike, observation_space: Space,
                    action_space: Space) -> int:
        """Bytes a ring of these dimensions takes."""
        c_obs = spaces.observation_space_to_c(observation_space)
        c_act, start = spaces.to_c(action_space, "action space")
        if start:  # as Ring() refuses it: a size for a ring that cannot be made
            raise Error(Status.ERR_UNSUPPORTED, f"Ring.memory_size: a Discrete action space "
                        f"must start at 0, not {start}")
        for name, v in (("slots", slots), ("steps", steps), ("envs", envs)):
            _int32(v, name)
        out = ctypes.c_size_t()
        _lib.check(_lib.lib().ring_memory_size(slots, steps, envs, c_obs.ptr, c_act.ptr,
                                               ctypes.byref(out)), "Ring.memory_size")
        return out.value

    @classmethod
    def _borrowed(cls: type[_Ring], ptr: int | None, owner: object, observation_space: Space,
                  action_space: Space) -> _Ring:
        self = cls.__new__(cls)
        self._setup(Handle(ptr, None, "ring (borrowed)", deps=[owner]), observation_space,
                    action_space, writable=False)
        return self

    def _setup(self, handle: Handle, observation_space: Space, action_space: Space,
               writable: bool) -> None:
        L = _lib.lib()
        self._h = handle
        self._writable = writable
        self.observation_space = observation_space
        self.action_space = action_space
        d = spaces.describe(action_space)
        self._discrete = d[0] == "discrete"
        # Discrete: (); an image's pixels are uint8
        self._obs_shape, _, self._obs_dtype = spaces.observation_layout(observation_space)
        self._act_shape = () if self._discrete else tuple(d[1])
        self.slots: int = L.ring_slots(handle.ptr)
        self.steps: int = L.ring_steps(handle.ptr)
        self.envs: int = L.ring_envs(handle.ptr)

    @property
    def _ptr(self) -> int | None:
        if self._h is None:
            raise Error(Status.ERR_STATE, "the ring is closed")
        return self._h.ptr

    def _shape_dtype(self, name: str) -> tuple[tuple[int, ...], npt.DTypeLike]:
        T, B = self.steps, self.envs
        if name == "observations":
            return (T, B) + self._obs_shape, self._obs_dtype
        if name == "actions":
            return ((T, B), np.int32) if self._discrete else ((T, B) + self._act_shape,
                                                              np.float32)
        if name in ("log_probs", "values", "rewards"):
            return (T, B), np.float32
        if name in ("terminated", "truncated", "reset_steps"):
            return (T, B), np.bool_
        if name == "policy_version":
            return (T,), np.uint64
        return (B,) + self._obs_shape, self._obs_dtype  # bootstrap_obs

    if TYPE_CHECKING:
        @overload
        def array(self, name: _PlainArray, slot: IntLike = 0) -> npt.NDArray[Any]: ...
        @overload
        def array(self, name: str, slot: IntLike = 0) -> Observations: ...

    def array(self, name: str, slot: IntLike = 0) -> Observations:
        """A view of one array of one slot, shaped [T, B, ...] (policy_version: [T];
        bootstrap_obs: [B, ...]); flags are bool."""
        if name not in RING_ARRAYS:
            raise Error(Status.ERR_UNKNOWN_NAME, f"unknown ring array {name!r} (arrays: "
                        f"{', '.join(RING_ARRAYS)})")
        _int32(slot, "slot")
        data = ctypes.c_void_p()
        size = ctypes.c_size_t()
        _lib.check(_lib.lib().ring_array(self._ptr, slot, RING_ARRAYS[name],
                                         ctypes.byref(data), ctypes.byref(size)),
                   f"Ring.array({name!r})")
        shape, dtype = self._shape_dtype(name)
        expect = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if expect != size.value:
            raise Error(Status.ERR_INTERNAL, f"ring array {name}: the library says "
                        f"{size.value} bytes, the binding expects {expect}")
        a = view(data.value, shape, dtype, self._h, readonly=not self._writable)
        if name in ("observations", "bootstrap_obs") and spaces.is_mixed(self.observation_space):
            return spaces.split_rows(a, self.observation_space)  # {"image", "vector"} views
        return a

    def arrays(self, slot: IntLike = 0) -> dict[str, Observations]:
        """Every array of a slot, by name."""
        return {name: self.array(name, slot) for name in RING_ARRAYS}

    def slot_state(self, slot: IntLike) -> str:
        """"free", "writing", "ready" or "reading"."""
        _int32(slot, "slot")
        if not 0 <= slot < self.slots:
            raise Error(Status.ERR_RANGE, f"slot {slot} is outside [0, {self.slots})")
        return SLOT_STATES[_lib.lib().ring_slot_state(self._ptr, slot)]

    def _check_writable(self, what: str) -> None:
        if not self._writable:
            raise Error(Status.ERR_STATE, f"{what}: the trainer's ring is read-only here "
                        "(taking its slot would stop the trainer)")

    def _acquire(self, fn: Callable[..., int], what: str) -> int:
        """The slot fn takes (acquire_write, acquire_read)."""
        self._check_writable(what)
        out = ctypes.c_int32()
        _lib.check(fn(self._ptr, ctypes.byref(out)), what)
        return out.value

    def _hand_over(self, fn: Callable[..., int], slot: IntLike, what: str) -> IntLike:
        """fn(slot) (commit, release); returns slot. A slot that is not an int, None
        included, is a TypeError: it never reaches fn, whose argument is an int32."""
        self._check_writable(what)
        _int32(slot, "slot")
        _lib.check(fn(self._ptr, slot), what)
        return slot

    def acquire_write(self) -> int:
        """Take the lowest free slot for writing (Error FRL_ERR_STATE if none)."""
        return self._acquire(_lib.lib().ring_acquire_write, "acquire_write")

    def commit(self, slot: IntLike) -> IntLike:
        return self._hand_over(_lib.lib().ring_commit, slot, "commit")

    def acquire_read(self) -> int:
        """Take the ready slot committed first (Error FRL_ERR_STATE if none)."""
        return self._acquire(_lib.lib().ring_acquire_read, "acquire_read")

    def release(self, slot: IntLike) -> IntLike:
        return self._hand_over(_lib.lib().ring_release, slot, "release")

    def __repr__(self) -> str:
        return f"<fastrl.Ring slots={self.slots} steps={self.steps} envs={self.envs}>"


def _int32(v: object, name: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(v).__name__}")
    if not -(2**31) <= int(v) < 2**31:
        raise Error(Status.ERR_RANGE, f"{name} {v} does not fit in int32")
