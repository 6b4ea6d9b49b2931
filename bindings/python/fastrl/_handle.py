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

Except those a long call still uses: a daemon thread may be inside ``Trainer.train`` or an
evaluation when the interpreter exits, and destroying its objects under it crashes the
process. Those calls run inside :func:`in_flight`; an exit hook that runs just before
``weakref.finalize``'s asks the stoppable ones (train) to stop, waits up to
``EXIT_WAIT_S`` for them to return, and leaks the objects of any call still running
(:func:`_pin`): the process is ending, and its memory goes with it.

Nothing a handle holds may lead back to it through a numpy view: numpy arrays are not
tracked by the garbage collector, so such a cycle is never collected and the C object
leaks. The callbacks of host envs therefore reach the Python envs behind them weakly
(env._Host).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import threading
import time
import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _lib

if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator, NoReturn, SupportsIndex, TypeVar

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
        if not _exit_hook[0]:  # after weakref's own hook (made by the first finalize)
            _exit_hook[0] = True
            atexit.register(_at_exit)  # so it runs first: atexit runs newest first

    @property
    def alive(self) -> bool:
        return self._fin.alive

    def keep(self, obj: object) -> None:
        """Keep obj alive until after this object is destroyed."""
        self._keep.append(obj)

    def __repr__(self) -> str:
        state = "alive" if self._fin.alive else "destroyed"
        return f"<fastrl handle {self.kind} 0x{self.ptr or 0:x} {state}>"


# -- calls in flight at interpreter exit

EXIT_WAIT_S = 10.0  # how long the exit hook waits for stopped calls (an update, a checkpoint)
_exit_hook = [False]
_calls_changed = threading.Condition()
_calls: list[_Call] = []  # the calls in flight, under _calls_changed
_exiting = [False]


class _Call:
    __slots__ = ("handles", "stop")

    def __init__(self, handles: tuple[Handle, ...], stop: Callable[[], object] | None):
        self.handles = handles
        self.stop = stop


@contextlib.contextmanager
def in_flight(what: str, handles: Iterable[Handle | None],
              stop: Callable[[], object] | None = None) -> Iterator[None]:
    """The body as a long call on handles (and what they depend on), which the exit hook
    must not destroy under it; ``stop`` makes it return early (any thread). Refused once
    the interpreter exits: the objects may be gone by the time it would run."""
    call = _Call(tuple(h for h in handles if h is not None), stop)
    with _calls_changed:
        if _exiting[0]:
            raise _lib.Error(_lib.Status.ERR_STATE, f"{what}: the interpreter is exiting")
        _calls.append(call)
    try:
        yield
    finally:
        with _calls_changed:
            _calls.remove(call)
            _calls_changed.notify_all()


def _at_exit() -> None:
    """Before weakref.finalize destroys the handles: stop the calls in flight (a daemon
    thread's train) and wait for them; pin the handles of those still running."""
    with _calls_changed:
        _exiting[0] = True
        calls = list(_calls)
    for c in calls:
        if c.stop is not None:
            c.stop()
    deadline = time.monotonic() + EXIT_WAIT_S
    with _calls_changed:
        # only the stopped calls are waited for: another may run for hours
        while any(c.stop is not None and c in _calls for c in calls):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _calls_changed.wait(left)
        running = list(_calls)
    for c in running:
        for h in c.handles:
            _pin(h)


def _pin(h: Handle) -> None:
    """Leak h's C object and everything it depends on (its runtime, a trainer's vec env,
    a borrowed object's owner): not destroyed at exit, and the Handles, with the
    callbacks they keep, never freed (module teardown would free them while the C call
    may still call them)."""
    info = h._fin.peek()
    if info is None or not h._fin.atexit:  # destroyed already, or pinned
        return
    h._fin.atexit = False
    pythonapi = getattr(ctypes, "pythonapi", None)
    if pythonapi is not None:
        pythonapi.Py_IncRef(ctypes.py_object(h))
    for dep in info[2][2]:  # _destroy's deps
        if isinstance(dep, Handle):
            _pin(dep)


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
