"""Runtime: the library's thread pool, seed and logger."""

from __future__ import annotations

import ctypes
import logging
import threading
import weakref
from typing import TYPE_CHECKING

from . import _lib
from ._handle import Handle, NoCopy, checked_int
from ._lib import Error, Status
from .config import as_config

if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, TypeVar

    from ._typing import ConfigSource, Logger

    _Runtime = TypeVar("_Runtime", bound="Runtime")

__all__ = ["Runtime", "default_runtime"]

_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


class Runtime(NoCopy):
    """A libfastrl runtime: ``runtime.threads`` threads (0 = one per core, 1 = every
    call runs on the calling thread), ``runtime.seed``, ``runtime.spin_us``.

    ``Runtime(threads=2, seed=7)`` or ``Runtime(config)``. ``logger`` is None, a
    ``logging.Logger``, or a callable ``(level, message)`` with the library's levels
    (0 error, 1 warning, 2 info, 3 debug); the library may call it from any of its
    threads (ctypes takes the GIL for the call). Exceptions raised by a logger callable
    are ignored.

    Every env, policy, ring and trainer keeps its runtime alive, so :meth:`close` only
    lets go of this object's reference: the pool stops once they are gone too.
    """

    _h: Handle | None

    def __init__(self, config: ConfigSource = None, *, logger: Logger | None = None,
                 log_level: int = 2, **options: Any) -> None:
        cfg = as_config(config, options, "Runtime config")
        # FRL_LOG_ERROR (0) to FRL_LOG_DEBUG (3); True or 10**20 was taken as a level
        level = checked_int(log_level, "Runtime: log_level", 0, 4)
        foreign = [k for k in cfg.set_keys() if not k.startswith("runtime.")]
        if foreign:
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"Runtime: only runtime.* keys apply to a runtime, not "
                        f"{', '.join(foreign)}")
        L = _lib.lib()
        keep: list[object] = []
        log_ptr = None
        if logger is not None:
            fn = _log_function(logger)
            cb = _lib.LOG_FN(fn)
            lg = _lib.new_table(_lib.Logger, max_level=2)  # FRL_LOG_INFO
            lg.log = ctypes.cast(cb, ctypes.c_void_p)
            lg.max_level = level
            keep += [cb, lg]
            log_ptr = ctypes.byref(lg)
        ptr = ctypes.c_void_p()
        _lib.check(L.runtime_create(ctypes.byref(ptr), cfg._ptr, None, log_ptr), "Runtime")
        self._h = Handle(ptr.value, L.runtime_destroy, "runtime", keep=keep)
        self._weak_h = weakref.ref(self._h)  # for _live() after close()
        self._threads = L.runtime_threads(ptr.value)
        self._seed = L.runtime_seed(ptr.value)
        self._device = L.runtime_device(ptr.value).decode()
        self._device_note = L.runtime_device_note(ptr.value).decode()

    @property
    def handle(self) -> Handle:
        if self._h is None:
            raise Error(Status.ERR_STATE, "this Runtime is closed")
        return self._h

    def _live(self: _Runtime) -> _Runtime:
        """This runtime for a new object beside one made on it (a vec env's trainer, a
        policy's evaluation): itself while open; after close(), which only let go of
        this wrapper's reference, a new wrapper of the same C runtime while the objects
        made on it keep it alive; ERR_STATE once it is gone."""
        if self._h is not None:
            return self
        h = self._weak_h()
        if h is None or not h.alive:
            raise Error(Status.ERR_STATE, "this Runtime is closed")
        rt = type(self).__new__(type(self))
        rt.__dict__.update(self.__dict__)
        rt._h = h
        return rt

    @property
    def threads(self) -> int:
        """Threads doing work, the calling thread included."""
        self.handle
        return self._threads

    @property
    def seed(self) -> int:
        self.handle
        return self._seed

    @property
    def device(self) -> str:
        """Where networks run (runtime.device): "cpu" or "cuda:0 <name> (...)"."""
        self.handle
        return self._device

    @property
    def device_note(self) -> str:
        """With runtime.device="auto", why the runtime stayed on the CPU ("" otherwise)."""
        self.handle
        return self._device_note

    @property
    def closed(self) -> bool:
        return self._h is None

    def close(self) -> None:
        self._h = None

    def __enter__(self: _Runtime) -> _Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._h is None:
            return "<fastrl.Runtime closed>"
        return f"<fastrl.Runtime threads={self._threads} seed={self._seed}>"


def _log_function(logger: object) -> Callable[[int | None, int, bytes | None], None]:
    if isinstance(logger, logging.Logger):
        def fn(user: int | None, level: int, message: bytes | None) -> None:
            try:
                logger.log(_LEVELS.get(level, logging.DEBUG), "%s",
                           (message or b"").decode("utf-8", "replace"))
            except BaseException:
                pass
        return fn
    if callable(logger):
        def fn(user: int | None, level: int, message: bytes | None) -> None:
            try:
                logger(int(level), (message or b"").decode("utf-8", "replace"))
            except BaseException:
                pass
        return fn
    raise TypeError(f"logger must be a logging.Logger or a callable, not "
                    f"{type(logger).__name__}")


_default: Runtime | None = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """The runtime used when none is given: one thread per core, seed 0. Created on
    first use and shared by every object made without a runtime."""
    global _default
    if _default is None or _default.closed:
        with _default_lock:
            if _default is None or _default.closed:
                _default = Runtime()
    return _default


def config_runtime_keys(config: object, what: str) -> dict[str, Any]:
    """The runtime.* keys that config (None, a Config, a mapping or "k=v" text) sets,
    with their values."""
    if config is None:
        return {}
    from .config import Config
    src = config if isinstance(config, Config) else as_config(config, None, what)
    return {k: src[k] for k in src.set_keys() if k.startswith("runtime.")}


def runtime_keys_named(options: Mapping[str, Any], config: object, what: str) -> list[str]:
    """The runtime settings that options (full or short names: seed, threads, ...) and
    config name, as a message lists them: they would make a new runtime."""
    from .config import resolve_key
    named = []
    for k in options:
        try:
            if resolve_key(k).startswith("runtime."):
                named.append(k)
        except Error:  # unknown here: whoever takes the options says so
            pass
    return named + [f"the config's {k}" for k in config_runtime_keys(config, what)]


def runtime_for(runtime: Runtime | None, options: Mapping[str, Any],
                what: str, config: object = None) -> tuple[Runtime, dict[str, Any]]:
    """(runtime, remaining options): the given runtime, or a new one when the options
    or the config name runtime.* keys (the options' win, as they do over the config's
    other keys), or the default runtime."""
    from .config import resolve_key, resolve_options
    rt_given: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for k, v in options.items():
        try:
            key = resolve_key(k)
        except Error:
            # Unknown or ambiguous here: not a runtime key. The config that takes the rest
            # resolves it (a short es.*/ga.* name by the algorithm chosen) or says why not.
            rest[k] = v
            continue
        if key.startswith("runtime."):
            rt_given[k] = v
        else:
            # As given: resolved here, without the algorithm, "lr" became train.lr even
            # where algo="es" makes it es.lr (the config that takes it knows the algorithm).
            rest[k] = v
    rt_opts = resolve_options(rt_given, None, what)  # seed= and runtime.seed=: refused
    # {"runtime.seed": 5} in config= was passed to the object's C config, which reads no
    # runtime key, and the default runtime (seed 0) silently served instead.
    in_config = config_runtime_keys(config, what)
    if rt_opts or in_config:
        if runtime is not None:
            where = (', '.join(rt_opts) if rt_opts else
                     f"the config's {', '.join(in_config)}")
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"{what}: {where} apply to a new runtime; pass them "
                        "to fastrl.Runtime(...) instead of also giving runtime=")
        return Runtime(dict(in_config, **rt_opts)), rest
    if runtime is None:
        return default_runtime(), rest
    if not isinstance(runtime, Runtime):
        raise TypeError(f"{what}: runtime must be a fastrl.Runtime, not "
                        f"{type(runtime).__name__}")
    runtime.handle  # closed?
    return runtime, rest
