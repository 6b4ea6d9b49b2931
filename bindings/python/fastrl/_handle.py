"""C handle lifetimes and numpy views of library memory.

A :class:`Handle` owns one C object. Its destroy function runs when the last Python
reference to the handle goes: the wrapper object (Env, VecEnv, ...) holds one until it
is closed, and every numpy view of the object's memory holds one through the view's
``base``. So ``close()`` only lets go; the memory stays valid while any view lives.

A handle also holds what must outlive the C object (``deps``: its runtime, the vec env
a trainer borrows; ``keep``: the ctypes callbacks the C object calls). They are released
only after the destroy function has run, which gives the order the C API requires
(objects before their runtime, a trainer before the vec env it borrows) whatever order
Python collects the wrappers in. At interpreter exit the remaining handles are destroyed
newest first (``weakref.finalize``'s atexit order), which is the same order.

Nothing a handle holds may lead back to it through a numpy view: numpy arrays are not
tracked by the garbage collector, so such a cycle is never collected and the C object
leaks. The callbacks of host envs therefore reach the Python envs behind them weakly
(env._Host).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _lib

if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, NoReturn, SupportsIndex, TypeVar

    import numpy.typing as npt

    _Closable = TypeVar("_Closable", bound="Closable")
    # a C object's destroy function: a ctypes function of the library
    _Destroy = Callable[[Any], object]


def _destroy(destroy: _Destroy | None, ptr: int | None, deps: tuple[object, ...]) -> None:
    if destroy is not None:
        destroy(ptr)


class NoCopy:
    """Refuses pickle and copy: the object wraps library memory that this process owns,
    and a copy would hold the same pointer without owning it (a crash once the original
    goes, or in another process at once). ``_copy_hint`` says what to do instead."""

    __slots__ = ()
    _copy_hint = ""

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError(f"fastrl.{type(self).__name__} cannot be pickled or copied: it "
                        f"wraps memory of the library in this process{self._copy_hint}")


_SAVE_HINT = "; save() it and load() the file where it is needed"


class Handle(NoCopy):
    """One C object (``ptr``) and its destroy function (None for a borrowed one)."""

    __slots__ = ("ptr", "kind", "_fin", "_keep", "__weakref__")

    def __init__(self, ptr: int | None, destroy: _Destroy | None, kind: str,
                 deps: Iterable[object] = (), keep: Iterable[object] = ()) -> None:
        self.ptr = ptr
        self.kind = kind
        # deps go in the finalizer's arguments: the registry holds them until destroy
        # has run, which orders the C objects. keep is held by the handle itself: what
        # the callbacks hold may lead back to the handle (a logger that holds its
        # Runtime), and from the registry, a root, such a cycle is never collected: the
        # C object would leak. Held here, it is an ordinary cycle, and the callbacks are
        # still whole when destroy runs (which may call them): a dying handle's weakref
        # callbacks (the finalizer) run before its slots are cleared, and a collection
        # runs them before it clears any object of the garbage
        # (test_policy_ring_runtime.py, test_kept_callbacks_outlive_destroy).
        self._keep = list(keep)
        self._fin = weakref.finalize(self, _destroy, destroy, ptr, tuple(deps))

    @property
    def alive(self) -> bool:
        return self._fin.alive

    def keep(self, obj: object) -> None:
        """Keep obj alive until after this object is destroyed."""
        self._keep.append(obj)

    def __repr__(self) -> str:
        state = "alive" if self._fin.alive else "destroyed"
        return f"<fastrl handle {self.kind} 0x{self.ptr or 0:x} {state}>"


class Closable(NoCopy):
    """``close()``, ``closed`` and the with-statement of a wrapper whose handle is ``_h``:
    closing lets go of the handle (views of its memory keep it alive)."""

    _h: Handle | None

    def close(self) -> None:
        self._h = None

    @property
    def closed(self) -> bool:
        return self._h is None

    def __enter__(self: _Closable) -> _Closable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ArrayMemory:
    """The base of a numpy view: describes the memory and holds its owner."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, address: int, shape: tuple[int, ...], typestr: str, readonly: bool,
                 owner: Handle | None) -> None:
        self.__array_interface__ = {"data": (address, readonly), "shape": shape,
                                    "typestr": typestr, "version": 3}
        self.owner = owner


_TYPESTR: dict[np.dtype[Any], str] = {np.dtype(t): np.dtype(t).str for t in
            (np.float32, np.float64, np.int32, np.int64, np.uint8, np.uint64, np.bool_)}


def view(address: int | None, shape: Iterable[Any], dtype: npt.DTypeLike,
         owner: Handle | None, readonly: bool = True) -> npt.NDArray[Any]:
    """A numpy array over library memory at address, keeping owner alive."""
    if not address:
        raise _lib.Error(_lib.Status.ERR_INTERNAL, "libfastrl returned a NULL array")
    dt = np.dtype(dtype)
    return np.asarray(_ArrayMemory(address, tuple(int(s) for s in shape), _TYPESTR[dt],
                                   readonly, owner))


def owner_of(array: object) -> Handle | None:
    """The Handle a view keeps alive, or None (for tests and debugging)."""
    base = array
    while base is not None:
        if isinstance(base, _ArrayMemory):
            return base.owner
        base = getattr(base, "base", None)
    return None


def checked_int(value: object, what: str, lo: int, hi: int) -> int:
    """value as an int in [lo, hi): a bool or a non-integer is TypeError (True would
    pass as 1), one outside the range Error ERR_RANGE, as the library says it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = int(value)
    if not lo <= value < hi:
        raise _lib.Error(_lib.Status.ERR_RANGE, f"{what} {value} is outside [{lo}, {hi})")
    return value
