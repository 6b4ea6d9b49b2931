"""Spaces: the library's discrete(n) and float32 box, as gymnasium spaces.

With gymnasium installed, spaces are ``gymnasium.spaces.Discrete(n, dtype=np.int32)``
(int32 is the library's action type, so actions sampled from the space are written
without conversion) and ``gymnasium.spaces.Box(..., dtype=np.float32)``. Without it,
the small :class:`Box` and :class:`Discrete` below stand in, with the same attributes.

Observations: a box is float32 values; a ``Discrete(n)`` observation is one float32
per env holding the state's index (an integer in [0, n), n <= 2^24), which the policy
turns into a one-hot row inside its network. The library's image(height, width,
channels) is ``Box(0, 255, (height, width, channels), uint8)``: pixels, one byte each,
which a policy reads through a convolutional encoder (``policy.encoder``); any uint8 box
of rank 3 is taken as one. The library's mixed(image, box) (a frame and a vector in one
observation) is ``Dict({"image": Box(0, 255, (h, w, c), uint8), "vector": Box(...,
float32)})``: arrays of such observations are dicts of two numpy views into the same
library rows (each row the image's bytes, then the vector's floats), and observations
are passed as such dicts (:func:`split_rows`, :func:`join_rows`).
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from . import _lib
from ._gym import usable_gymnasium
from ._handle import Handle
from ._lib import Error, Status

if TYPE_CHECKING:
    from typing import Any, KeysView, Mapping, Sequence

    import numpy.typing as npt

    from ._typing import Space

# optional, and only from 1.2.2 (None: the stand-ins below); checked before each use
_gym = usable_gymnasium()

__all__ = ["Box", "Dict", "Discrete", "from_c", "to_c", "batch_space", "observation_layout",
           "split_rows", "join_rows"]

DISCRETE, BOX, IMAGE, MIXED = 1, 2, 3, 4
MIXED_KEYS = ("image", "vector")


class Discrete:
    """discrete(n): int32 values in [start, start + n) (stand-in for gymnasium's)."""

    def __init__(self, n: int, start: int = 0, dtype: npt.DTypeLike = np.int32,
                 seed: int | None = None) -> None:
        self.n = np.int64(n)
        self.start = np.int64(start)
        self.dtype: np.dtype[Any] = np.dtype(dtype)
        self.shape = ()
        self._rng = np.random.default_rng(seed)

    def sample(self) -> np.integer[Any]:
        return self.dtype.type(self.start + self._rng.integers(self.n))

    def contains(self, x: Any) -> bool | np.bool_:
        try:
            v = int(x)
        except (TypeError, ValueError):
            return False
        return v == x and self.start <= v < self.start + self.n

    __contains__ = contains

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discrete) and (self.n, self.start) == (other.n, other.start)

    def __repr__(self) -> str:
        return f"Discrete({self.n})" if not self.start else f"Discrete({self.n}, start={self.start})"


class Box:
    """A float32 box (stand-in for gymnasium's)."""

    def __init__(self, low: npt.ArrayLike, high: npt.ArrayLike,
                 shape: Sequence[int] | None = None, dtype: npt.DTypeLike = np.float32,
                 seed: int | None = None) -> None:
        self.dtype: np.dtype[Any] = np.dtype(dtype)
        if shape is None:
            shape = np.shape(low)
        self.shape = tuple(int(s) for s in shape)
        self.low = np.broadcast_to(np.asarray(low, self.dtype), self.shape).copy()
        self.high = np.broadcast_to(np.asarray(high, self.dtype), self.shape).copy()
        self._rng = np.random.default_rng(seed)

    def sample(self) -> npt.NDArray[Any]:
        lo = np.where(np.isfinite(self.low), self.low, -1.0)
        hi = np.where(np.isfinite(self.high), self.high, 1.0)
        return self._rng.uniform(lo, hi).astype(self.dtype)

    def contains(self, x: Any) -> bool:
        x = np.asarray(x)
        return (x.shape == self.shape and bool(np.all(x >= self.low))
                and bool(np.all(x <= self.high)))

    __contains__ = contains

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Box) and self.shape == other.shape
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))

    def __repr__(self) -> str:
        return f"Box({self.low.min()}, {self.high.max()}, {self.shape}, {self.dtype})"


class Dict:
    """A mixed observation's space: ``spaces["image"]`` and ``spaces["vector"]`` (stand-in
    for gymnasium's Dict)."""

    def __init__(self, spaces: Mapping[str, Space] | None = None,
                 seed: int | None = None) -> None:
        self.spaces = dict(spaces or {})
        self.shape = None
        self.dtype = None

    def __getitem__(self, key: str) -> Space:
        return self.spaces[key]

    def keys(self) -> KeysView[str]:
        return self.spaces.keys()

    def sample(self) -> dict[str, Any]:
        return {k: s.sample() for k, s in self.spaces.items()}

    def contains(self, x: Any) -> bool:
        return (isinstance(x, dict) and x.keys() == self.spaces.keys()
                and all(s.contains(x[k]) for k, s in self.spaces.items()))

    __contains__ = contains

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dict) and self.spaces == other.spaces

    def __repr__(self) -> str:
        return f"Dict({self.spaces!r})"


def _mixed(image: Space, vector: Space) -> Space:
    parts = {"image": image, "vector": vector}
    return _gym.spaces.Dict(parts) if _gym is not None else Dict(parts)


def _f32_array(address: int, n: int) -> npt.NDArray[np.float32]:
    return np.frombuffer((ctypes.c_float * n).from_address(address), np.float32).copy()


def from_c(ptr: int | None) -> Space:
    """A Python space equal to the C space at ptr (copied)."""
    L = _lib.lib()
    kind = L.space_get_kind(ptr)
    if kind == DISCRETE:
        n = L.space_n(ptr)
        if _gym is not None:
            return _gym.spaces.Discrete(int(n), dtype=np.int32)
        return Discrete(n)
    if kind == BOX:
        rank = L.space_rank(ptr)
        shape = tuple((ctypes.c_int64 * rank).from_address(L.space_shape(ptr)))
        n = int(L.space_n(ptr))
        low = _f32_array(L.space_low(ptr), n).reshape(shape)
        high = _f32_array(L.space_high(ptr), n).reshape(shape)
        if _gym is not None:
            return _gym.spaces.Box(low=low, high=high, shape=shape, dtype=np.float32)
        return Box(low, high, shape)
    if kind == IMAGE:
        shape = tuple((ctypes.c_int64 * 3).from_address(L.space_shape(ptr)))
        if _gym is not None:
            return _gym.spaces.Box(low=0, high=255, shape=shape, dtype=np.uint8)
        return Box(0, 255, shape, dtype=np.uint8)
    if kind == MIXED:
        return _mixed(from_c(L.space_part(ptr, 0)), from_c(L.space_part(ptr, 1)))
    raise Error(Status.ERR_INTERNAL, f"libfastrl returned a space of unknown kind {kind}")


def _describe_mixed(space: Space) -> tuple[str, tuple[Any, ...], tuple[Any, ...]]:
    """("mixed", image's description, vector's) for a Dict of "image" (uint8, rank 3) and
    "vector" (a float box), or an Error saying what is wrong."""
    parts = space.spaces
    if tuple(sorted(parts.keys())) != MIXED_KEYS:
        raise Error(Status.ERR_UNSUPPORTED,
                    f"{space!r}: libfastrl takes a Dict observation space only as a mixed "
                    "observation: keys 'image' (a uint8 box (h, w, c)) and 'vector' (a float "
                    "box); flatten other dicts (gymnasium.wrappers.FlattenObservation)")
    im, vec = describe(parts["image"]), describe(parts["vector"])
    if im[0] != "image" or vec[0] != "box":
        raise Error(Status.ERR_UNSUPPORTED,
                    f"{space!r}: a mixed observation needs 'image' a uint8 box (h, w, c) and "
                    "'vector' a float box")
    return ("mixed", im, vec)


def describe(space: Space) -> tuple[Any, ...]:
    """("discrete", n, start), ("box", shape, low, high), ("image", shape) or ("mixed",
    image's, vector's) for a Python space, or an Error saying why the library cannot
    take it."""
    cls = type(space).__name__
    if isinstance(getattr(space, "spaces", None), dict):
        return _describe_mixed(space)
    if hasattr(space, "n") and not hasattr(space, "low") and not getattr(space, "shape", ()):
        try:
            n, start = int(space.n), int(getattr(space, "start", 0))
        except (TypeError, ValueError):
            n, start = None, 0
        if n is not None:
            return ("discrete", n, start)
    if hasattr(space, "low") and hasattr(space, "high") and hasattr(space, "shape"):
        shape = tuple(int(s) for s in space.shape)
        if np.dtype(getattr(space, "dtype", np.float32)) == np.uint8 and len(shape) == 3:
            return ("image", shape)
        if not shape:
            raise Error(Status.ERR_UNSUPPORTED, f"{space!r}: a box needs rank >= 1 (wrap "
                        "the env so its values have shape (1,))")
        if len(shape) > 8:
            raise Error(Status.ERR_UNSUPPORTED, f"{space!r}: libfastrl boxes have rank <= 8")
        low = np.broadcast_to(np.asarray(space.low, np.float64), shape)
        high = np.broadcast_to(np.asarray(space.high, np.float64), shape)
        return ("box", shape, low.astype(np.float32), high.astype(np.float32))
    raise Error(Status.ERR_UNSUPPORTED,
                f"{space!r} ({cls}): libfastrl takes discrete(n) and float boxes only "
                "(for dict, tuple or multi-discrete spaces, flatten the env first, e.g. "
                "gymnasium.wrappers.FlattenObservation)")


def to_c(space: Space, what: str = "space") -> tuple[Handle, int]:
    """An owned C space (Handle) for a Python space, and the Discrete start (or 0)."""
    d = describe(space)
    L = _lib.lib()
    ptr = ctypes.c_void_p()
    if d[0] == "discrete":
        _lib.check(L.space_create_discrete(ctypes.byref(ptr), None, d[1]), what)
        return Handle(ptr.value, L.space_destroy, "space"), d[2]
    if d[0] == "image":
        _lib.check(L.space_create_image(ctypes.byref(ptr), None, *d[1]), what)
        return Handle(ptr.value, L.space_destroy, "space"), 0
    if d[0] == "mixed":
        image, _ = to_c(space.spaces["image"], what)
        vector, _ = to_c(space.spaces["vector"], what)
        _lib.check(L.space_create_mixed(ctypes.byref(ptr), None, image.ptr, vector.ptr), what)
        return Handle(ptr.value, L.space_destroy, "space"), 0
    _, shape, low, high = d
    shp = (ctypes.c_int64 * len(shape))(*shape)
    low = np.ascontiguousarray(low)
    high = np.ascontiguousarray(high)
    _lib.check(L.space_create_box(ctypes.byref(ptr), None, len(shape), shp,
                                  low.ctypes.data, high.ctypes.data), what)
    return Handle(ptr.value, L.space_destroy, "space"), 0


def observation_space_to_c(space: Space, allow_start: bool = False) -> Handle:
    """An owned C observation space: a float32 box, or discrete(n), whose observations
    are one float32 index each. ``allow_start``: a ``Discrete(n, start=s)`` is taken (the
    caller subtracts s from every observation, as the env writers do); elsewhere the
    observations are the library's indices, so a start other than 0 is refused."""
    d = describe(space)
    if d[0] == "discrete" and d[2] and not allow_start:
        raise Error(Status.ERR_UNSUPPORTED,
                    f"observation space {space!r}: a Discrete observation space must "
                    "start at 0 here (observations are the library's indices in [0, n))")
    return to_c(space, "observation space")[0]


def observation_layout(space: Space) -> tuple[tuple[int, ...], int, np.dtype[Any]]:
    """(shape, start, dtype) of one observation as the library stores it: a box's shape,
    0 and float32; () and the Discrete start (one float32 holding the index); an image's
    (h, w, c), 0 and uint8; a mixed one's row of bytes, 0 and uint8."""
    d = describe(space)
    if d[0] == "discrete":
        return (), d[2], np.dtype(np.float32)
    if d[0] == "mixed":
        return (_mixed_sizes(space)[2],), 0, np.dtype(np.uint8)
    return tuple(d[1]), 0, np.dtype(np.uint8 if d[0] == "image" else np.float32)


def check_whole(values: npt.ArrayLike, what: str) -> None:
    """Discrete observations, before they become float32: one that is not a whole number
    but whose float32 is (2.0000001 became a valid 2; the library checks the float it
    is given, and says the rest itself) raises ERR_RANGE naming it."""
    v = np.asarray(values, dtype=np.float64)
    f = v.astype(np.float32)
    bad = np.flatnonzero((v != np.floor(v)) & (f == np.floor(f)))
    if bad.size:
        raise Error(Status.ERR_RANGE, f"{what}: observation {float(v.flat[bad[0]])!r} is "
                    "not an index of the discrete observation space (an integer in [0, n))")


def observation_dtype(c_space: int | None) -> np.dtype[Any]:
    """The numpy dtype of the library's observation arrays for the C space at c_space."""
    kind = _lib.lib().space_get_kind(c_space)
    return np.dtype(np.uint8 if kind in (IMAGE, MIXED) else np.float32)


def is_mixed(space: Space) -> bool:
    """True for a mixed observation's (Dict) space."""
    return isinstance(getattr(space, "spaces", None), dict)


def _mixed_sizes(space: Space) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(image shape, vector shape, bytes a row) of a mixed space."""
    im = tuple(int(s) for s in space.spaces["image"].shape)
    vec = tuple(int(s) for s in space.spaces["vector"].shape)
    return im, vec, int(np.prod(im)) + 4 * int(np.prod(vec))


def split_rows(rows: npt.NDArray[Any], space: Space) -> dict[str, npt.NDArray[Any]]:
    """rows (uint8 [..., bytes a row], the library's layout) as {"image": [..., h, w, c]
    uint8, "vector": [..., *shape] float32}: views, no copy; writing them writes rows."""
    im, vec, row = _mixed_sizes(space)
    lead = rows.shape[:-1]
    n = int(np.prod(im))
    return {"image": rows[..., :n].reshape(lead + im),
            "vector": rows[..., n:].view(np.float32).reshape(lead + vec)}


def join_rows(obs: object, space: Space,
              what: str = "observations") -> tuple[npt.NDArray[np.uint8], bool]:
    """A dict of "image" (uint8) and "vector" arrays ([batch, ...] or one observation) as
    the library's rows: a new C-contiguous uint8 array [batch, bytes a row] (or [bytes a
    row] for one), and whether it was one."""
    if not isinstance(obs, dict) or set(obs.keys()) != set(MIXED_KEYS):
        raise TypeError(f"{what}: a mixed observation is a dict with keys 'image' and "
                        f"'vector', not {type(obs).__name__}")
    im, vec, row = _mixed_sizes(space)
    image = np.asarray(obs["image"])
    if image.dtype != np.uint8:
        raise TypeError(f"{what}: the image part must be uint8 pixels, not {image.dtype}")
    vector = np.asarray(obs["vector"])
    if vector.dtype.kind not in "biuf":  # complex or text read as numbers, unsaid
        raise TypeError(f"{what}: the vector part must be numbers, not {vector.dtype}")
    vector = vector.astype(np.float32, copy=False)
    single = image.shape == im
    lead = () if single else image.shape[:1]
    if image.shape != lead + im or vector.shape != lead + vec:
        raise Error(Status.ERR_SIZE, f"{what}: image of shape {image.shape} and vector of "
                    f"shape {vector.shape}; the space's are {im} and {vec} (with a leading "
                    "batch dimension for several)")
    out = np.empty(lead + (row,), np.uint8)
    parts = split_rows(out, space)
    parts["image"][...] = image
    parts["vector"][...] = vector
    return out, single


def index_batch_space(space: Space, n: int) -> Space:
    """The batch of ``n`` Discrete observations as the library stores them (one float32
    index in [0, space.n) per env, handed out without a copy): a float32 Box, not
    :func:`batch_space`'s int32 MultiDiscrete, which would not contain them."""
    high = float(int(space.n) - 1)
    if _gym is not None:
        return _gym.spaces.Box(0.0, high, (n,), np.float32)
    return Box(0.0, high, (n,), np.float32)


def batch_space(space: Space, n: int) -> Space:
    if _gym is not None:
        return _gym.vector.utils.batch_space(space, n)
    if isinstance(space, Dict):
        return Dict({k: batch_space(s, n) for k, s in space.spaces.items()})
    if isinstance(space, Discrete):
        return Box(np.full(n, space.start), np.full(n, space.start + space.n - 1), (n,),
                   dtype=np.int32)
    return Box(np.broadcast_to(space.low, (n,) + space.shape),
               np.broadcast_to(space.high, (n,) + space.shape), (n,) + space.shape,
               dtype=space.dtype)
