"""The replay of an off-policy trainer (train.algo=dqn): its shape, fill and records as
read-only numpy views over the library's memory (doc/api.md, Replay)."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from . import _lib
from ._handle import NoCopy, view

if TYPE_CHECKING:
    from typing import Any, ClassVar

    import numpy.typing as npt

    from ._handle import Handle
    from ._typing import ReplayInfo


class ReplayInfoStruct(ctypes.Structure):
    _fields_: ClassVar[list[tuple[str, Any]]] = [
        ("struct_size", ctypes.c_size_t), ("capacity", ctypes.c_int64),
        ("blocks", ctypes.c_int64), ("filled", ctypes.c_int64),
        ("next", ctypes.c_int64), ("transitions", ctypes.c_int64),
        ("steps", ctypes.c_int32), ("envs", ctypes.c_int32),
        ("observation_width", ctypes.c_int32), ("action_width", ctypes.c_int32),
        ("state_width", ctypes.c_int32), ("prioritized", ctypes.c_int32),
        ("record_bytes", ctypes.c_size_t), ("offset_action", ctypes.c_size_t),
        ("offset_reward", ctypes.c_size_t), ("offset_flags", ctypes.c_size_t)]


ARRAYS = {"rows": 0, "sum_tree": 1, "min_tree": 2, "states": 3}


class Replay(NoCopy):
    """A trainer's replay (``Trainer.replay``). Read it between ``train`` calls or from
    the metrics callback: the learner writes it during an update."""

    def __init__(self, ptr: int | None, owner: Handle | None, discrete: bool,
                 obs_shape: tuple[int, ...] = (), obs_dtype: npt.DTypeLike = np.float32
                 ) -> None:
        self._ptr = ptr
        self._h = owner
        self._discrete = discrete
        # an observation as the ring holds it: pixels (an image's, a mixed row's bytes)
        # are uint8 in the records too, which the library counts in 4-byte units
        self._obs_shape = tuple(obs_shape)
        self._pixels = np.dtype(obs_dtype) == np.uint8

    def info(self) -> ReplayInfo:
        """The shape and fill: capacity, blocks, filled, next, transitions, steps (T),
        envs (B), widths, prioritized and the record layout, as a dict."""
        s = ReplayInfoStruct()
        s.struct_size = ctypes.sizeof(s)
        _lib.check(_lib.lib().replay_get_info(self._ptr, ctypes.byref(s)), "Replay.info")
        # ReplayInfo lists the struct's fields
        return {name: getattr(s, name)  # type: ignore[return-value]
                for name, _ in ReplayInfoStruct._fields_[1:]}

    def _array(self, name: str) -> tuple[int | None, int]:
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(_lib.lib().replay_array(self._ptr, ARRAYS[name], ctypes.byref(data),
                                           ctypes.byref(size)), f"Replay.{name}")
        return data.value, size.value

    def records(self) -> npt.NDArray[np.void]:
        """The records as a structured array shaped [blocks, B, T + 1] with fields x
        (float32[W]; for pixels, an image's or a mixed row's, uint8 shaped as the ring's
        observations), action (int32, or float32[A]), reward (float32) and terminated,
        truncated, reset (bool); record T of each env holds only the observation after
        the block's last step. A row's next observation is the next record's x."""
        i = self.info()
        W, A = i["observation_width"], i["action_width"]
        action = np.dtype("<i4") if self._discrete else np.dtype(("<f4", (A,)))
        x = np.dtype(("u1", self._obs_shape)) if self._pixels else np.dtype(("<f4", (W,)))
        dt = np.dtype({"names": ["x", "action", "reward", "terminated", "truncated", "reset"],
                       "formats": [x, action, "<f4", "?", "?", "?"],
                       "offsets": [0, i["offset_action"], i["offset_reward"],
                                   i["offset_flags"], i["offset_flags"] + 1,
                                   i["offset_flags"] + 2],
                       "itemsize": i["record_bytes"]})
        addr, size = self._array("rows")
        shape = (i["blocks"], i["envs"], i["steps"] + 1)
        raw = view(addr, (size,), np.uint8, self._h)
        return raw.view(dt).reshape(shape)

    def priorities(self) -> npt.NDArray[np.float64] | None:
        """A prioritised replay's leaves, priority^alpha per row (index k*T*B + t*B + b),
        or None for a uniform replay."""
        i = self.info()
        if not i["prioritized"]:
            return None
        addr, _ = self._array("sum_tree")
        return view(addr, (i["capacity"],), np.float64, self._h)
