"""Evo: the library's ask/tell optimisers over parameter vectors, OpenAI-ES and Deep GA
(frl_evo; doc/python.md, "Populations and ask/tell")."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from . import _lib
from ._handle import _SAVE_HINT, Closable, Handle, checked_int
from ._lib import Error, Status
from .config import algo_namespace, as_config, resolve_options
from .runtime import runtime_for

if TYPE_CHECKING:
    from typing import Any, Mapping, TypeVar

    import numpy.typing as npt

    from ._typing import ConfigSource, FitnessFunction, IntLike, PathArg
    from .config import Config
    from .runtime import Runtime

    _Evo = TypeVar("_Evo", bound="Evo")

__all__ = ["Evo"]


def _evo_config(config: ConfigSource, options: Mapping[str, Any],
                what: str) -> tuple[Config, dict[str, Any]]:
    """(config, options with full key names) for an optimiser: short option names
    resolve inside the chosen algorithm's namespace first, so ``population=64`` is
    ``es.population`` with ``algo="es"`` and ``ga.population`` with ``algo="ga"`` (and
    ``lr`` is ``es.lr`` for ES; elsewhere it is ``train.lr``)."""
    cfg = as_config(config, None, what)
    prefer = algo_namespace(cfg, options)
    return cfg, resolve_options(options, prefer, what)


def _initial(initial: npt.ArrayLike) -> npt.NDArray[np.float32]:
    x = np.asarray(initial)
    if x.dtype.kind not in "biuf" or x.dtype == np.bool_:
        raise TypeError(f"Evo: initial must be an array of numbers, not {x.dtype}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 1 or x.size == 0:
        raise Error(Status.ERR_SIZE, f"Evo: initial of shape {x.shape}; expected "
                    "[num_parameters] (a 1-D vector of at least one float)")
    return x


class Evo(Closable):
    """An ask/tell optimiser over float32 parameter vectors (``frl_evo``): OpenAI-ES
    (``train.algo="es"``, the ``es.*`` keys) or Deep GA (``train.algo="ga"``, the
    ``ga.*`` keys), starting at ``initial`` (ES's centre; the base of every GA genome).

    ::

        es = fastrl.Evo(initial, {"train.algo": "es", "es.population": 64})
        # or: fastrl.Evo(initial, algo="es", population=64, sigma=0.1, lr=0.05)
        for generation in range(100):
            x = es.ask()                  # float32 [P, n]
            es.tell(fitness_of(x))        # float64 [P], higher is better
        params, fitness = es.best()

    Short option names resolve inside the chosen algorithm's namespace first
    (``population``, ``sigma``, ``lr``, ``episodes``). ``runtime=`` shares a runtime
    (its threads work in ask and tell; its seed, plus ``train.seed_offset``, seeds the
    optimiser); ``seed=``/``threads=`` make one of its own.
    """

    _copy_hint = _SAVE_HINT

    def __init__(self, initial: npt.ArrayLike, config: ConfigSource = None, *,
                 runtime: Runtime | None = None, **options: Any) -> None:
        cfg, options = _evo_config(config, options, "Evo config")
        rt, options = runtime_for(runtime, options, "Evo", cfg)
        if options:
            cfg.update(options)
        x = _initial(initial)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.evo_create(ctypes.byref(ptr), rt.handle.ptr, cfg._ptr, x.size,
                                x.ctypes.data), "Evo")
        self._h = Handle(ptr.value, L.evo_destroy, "evo", deps=[rt.handle])
        self._runtime = rt
        self.algo: str = cfg["train.algo"]
        self.population = int(L.evo_population(ptr.value))
        self.num_parameters = int(L.evo_num_parameters(ptr.value))
        self._running = False

    @staticmethod
    def memory_size(num_parameters: IntLike, config: ConfigSource = None,
                    **options: Any) -> int:
        """Bytes an optimiser of these settings and ``num_parameters`` takes (before any
        GA genome grows)."""
        cfg, options = _evo_config(config, options, "Evo.memory_size config")
        if options:
            cfg.update(options)
        n = checked_int(num_parameters, "memory_size: num_parameters", -(2**63), 2**63)
        out = ctypes.c_size_t()
        _lib.check(_lib.lib().evo_memory_size(cfg._ptr, n, ctypes.byref(out)),
                   "Evo.memory_size")
        return out.value

    @property
    def _ptr(self) -> int | None:
        if self._h is None:
            raise Error(Status.ERR_STATE, "the optimiser is closed")
        return self._h.ptr

    def close(self) -> None:
        """Let go of the optimiser; refused (``ERR_STATE``) from run's fitness_fn."""
        if self._running:
            raise Error(Status.ERR_STATE, "close: the optimiser is inside run(); call it "
                        "after run returns")
        self._h = None

    def _idle(self, what: str) -> int | None:
        """The pointer for a call that changes the optimiser: not inside run()."""
        ptr = self._ptr
        if self._running:
            raise Error(Status.ERR_STATE, f"{what}: the optimiser is inside run(), whose "
                        "fitness function gets the members; call it after run returns")
        return ptr

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    @property
    def generation(self) -> int:
        """Generations told so far."""
        return int(_lib.lib().evo_generation(self._ptr))

    def ask(self, out: npt.NDArray[np.float32] | None = None) -> npt.NDArray[np.float32]:
        """This generation's members, float32 ``[population, num_parameters]`` (row i
        is member i). Asking again before :meth:`tell` gives the same members.

        ``out``: a C-contiguous, writable float32 array of that shape to write into
        instead of a new one (e.g. a :class:`Population`'s ``parameters``, so the
        members go straight into the population); it is returned."""
        ptr = self._idle("ask")
        held = self._h  # noqa: F841  # through the call: a close() elsewhere only lets go
        shape = (self.population, self.num_parameters)
        if out is None:
            out = np.empty(shape, np.float32)
        else:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"ask: out must be a numpy.ndarray, not "
                                f"{type(out).__name__}")
            if out.dtype != np.float32:
                raise TypeError(f"ask: out must have dtype float32, not {out.dtype}")
            if out.shape != shape:
                raise ValueError(f"ask: out of shape {out.shape}; expected {shape} "
                                 "[population, num_parameters]")
            if not out.flags.c_contiguous:
                raise ValueError("ask: out must be C-contiguous (it is written in place)")
            if not out.flags.writeable:
                raise ValueError("ask: out is read-only")
        _lib.check(_lib.lib().evo_ask(ptr, out.ctypes.data, out.size), "ask")
        return out

    def tell(self, fitness: npt.ArrayLike) -> None:
        """The fitness of each member asked for (``population`` numbers, higher is
        better). A non-finite fitness raises ``Error`` (``ERR_NONFINITE``, naming the
        member), a wrong length ``ERR_SIZE`` and an array of bools or strings
        ``TypeError``; the optimiser is then unchanged. Tell before ask is
        ``ERR_STATE``."""
        ptr = self._idle("tell")
        # held through the call: converting fitness runs its Python code (an __array__),
        # and a close() there must not destroy the optimiser under the call
        held = self._h  # noqa: F841
        raw = np.asarray(fitness)
        if raw.dtype.kind not in "iuf":  # bools, strings, objects: not fitnesses
            raise TypeError(f"tell: fitness must be an array of numbers, not {raw.dtype}")
        f = np.ascontiguousarray(raw, dtype=np.float64)
        if f.ndim != 1 or f.size >= 2**31:
            raise Error(Status.ERR_SIZE, f"tell: fitness of shape {f.shape}; expected "
                        f"({self.population},)")
        _lib.check(_lib.lib().evo_tell(ptr, f.ctypes.data, f.size), "tell")

    def best(self) -> tuple[npt.NDArray[np.float32], float]:
        """``(params, fitness)``: the parameters to keep (float32 ``[num_parameters]``)
        and their fitness. ES: the centre and the last generation's mean fitness; GA:
        the member with the best mean fitness over every generation it was evaluated
        in, among the members evaluated in three generations or more (the most evaluated
        while none is). The fitness is NaN before the first tell."""
        ptr = self._ptr
        held = self._h  # noqa: F841  # through the call: a close() elsewhere only lets go
        params = np.empty(self.num_parameters, np.float32)
        fit = ctypes.c_double()
        _lib.check(_lib.lib().evo_best(ptr, params.ctypes.data, params.size,
                                       ctypes.byref(fit)), "best")
        return params, fit.value

    def genome(self, member: IntLike) -> npt.NDArray[np.uint64]:
        """GA: the seeds of ``member``'s genome as asked (uint64: the first makes its
        starting point, each further one a mutation); :meth:`rebuild` turns them back
        into the member's parameters. ES raises ``ERR_UNSUPPORTED``."""
        ptr = self._ptr
        held = self._h  # noqa: F841  # through the calls: a close() elsewhere only lets go
        member = checked_int(member, "genome: member", -(2**31), 2**31)
        L = _lib.lib()
        length = ctypes.c_int32()
        _lib.check(L.evo_genome(ptr, member, None, 0, ctypes.byref(length)), "genome")
        seeds = np.empty(length.value, np.uint64)
        _lib.check(L.evo_genome(ptr, member, seeds.ctypes.data, seeds.size,
                                ctypes.byref(length)), "genome")
        return seeds[: length.value]

    def rebuild(self, seeds: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """GA: the parameters of a genome rebuilt from its seeds alone (float32
        ``[num_parameters]``), bit-identical to the member that had it."""
        ptr = self._ptr
        held = self._h  # noqa: F841  # through the call, as in tell (seeds' __array__)
        s = np.asarray(seeds)
        if s.size == 0:
            raise Error(Status.ERR_RANGE, "rebuild: a genome has at least one seed")
        if s.dtype.kind not in "iu" or s.dtype == np.bool_:
            raise TypeError(f"rebuild: seeds must be unsigned 64-bit ints, not {s.dtype}")
        if s.dtype.kind == "i" and s.size and s.min() < 0:
            raise Error(Status.ERR_RANGE, "rebuild: seeds must be in [0, 2^64)")
        s = np.ascontiguousarray(s, dtype=np.uint64)
        if s.ndim != 1 or s.size >= 2**31:
            raise Error(Status.ERR_SIZE, f"rebuild: seeds of shape {s.shape}; expected a "
                        "1-D genome")
        params = np.empty(self.num_parameters, np.float32)
        _lib.check(_lib.lib().evo_rebuild(ptr, s.ctypes.data, s.size, params.ctypes.data,
                                          params.size), "rebuild")
        return params

    def save(self, path: PathArg) -> None:
        """Write the optimiser's whole state (atomic, checksummed; a GA as its genomes'
        seeds)."""
        p = _lib.fspath(path)  # first: its __fspath__ may close the optimiser
        _lib.check(_lib.lib().evo_save(self._ptr, p), "Evo.save")

    def load(self: _Evo, path: PathArg) -> _Evo:
        """Restore a state written by :meth:`save` into this optimiser, which must have
        the same settings, ``num_parameters`` and seed (the runtime's seed plus
        ``train.seed_offset``): ``ERR_SIZE`` or ``ERR_INVALID_ARGUMENT`` naming what
        differs, ``ERR_FORMAT`` for a corrupted file, and nothing changes then. The
        next :meth:`ask` gives what it would have given after the save."""
        p = _lib.fspath(path)  # first: its __fspath__ may close the optimiser
        _lib.check(_lib.lib().evo_load(self._idle("Evo.load"), p), "Evo.load")
        return self

    def run(self, fitness_fn: FitnessFunction,
            generations: IntLike) -> tuple[npt.NDArray[np.float32], float]:
        """``generations`` times ask, call ``fitness_fn(params, fitness)``, tell (the
        loop of ``frl_evo_run``, run here). Returns :meth:`best`.

        ``params`` is a read-only float32 array ``[population, num_parameters]``, this
        generation's members as ask writes them (into it, no copy); ``fitness`` is a
        writable float64 ``[population]`` array to fill (it starts as NaN, so a member
        left out makes tell fail with ``ERR_NONFINITE``). Both are new numpy arrays each
        generation, so keeping them, or a traceback that holds them, is safe.
        ``fitness_fn`` may instead return the fitnesses (anything of ``population``
        numbers), or ``False`` (numpy's too) to stop early (run then returns normally,
        the last generation untold). An exception it raises stops the run and is re-raised here,
        the same object with its traceback, and a note naming the generation.
        ``generation``, ``best`` and ``save`` may be called from ``fitness_fn``;
        ``ask``, ``tell``, ``load`` and ``run`` raise ``ERR_STATE`` there."""
        self._idle("run")
        if not callable(fitness_fn):
            raise TypeError("run: fitness_fn must be callable")
        generations = checked_int(generations, "run: generations", 0, 2**63)
        held = self._h  # noqa: F841  # through the run: see _run_generation
        for _ in range(generations):
            if not self._run_generation(fitness_fn):
                break
        return self.best()

    def _run_generation(self, fitness_fn: FitnessFunction) -> bool:
        """One ask, fitness_fn, tell; False when fitness_fn stopped the run. The
        pointer each generation: fitness_fn may not close the optimiser, but the
        fitnesses it returns may (their __array__), and run holds the handle, so that
        tell is safe and the next generation finds the optimiser closed."""
        ptr = self._idle("run")
        L = _lib.lib()
        x = np.empty((self.population, self.num_parameters), np.float32)
        _lib.check(L.evo_ask(ptr, x.ctypes.data, x.size), "run")
        x.flags.writeable = False
        f = np.full(self.population, np.nan)
        self._running = True
        try:
            r = fitness_fn(x, f)
        except BaseException as e:  # noqa: B902 (KeyboardInterrupt included)
            if hasattr(e, "add_note"):
                e.add_note(f"fastrl: raised by the fitness callback of Evo.run at "
                           f"generation {self.generation}")
            raise
        finally:
            self._running = False
        if r is False or (isinstance(r, np.bool_) and not r):  # numpy's False stops too
            return False
        if r is not None:
            r = np.asarray(r)
            if r.dtype.kind not in "iuf":  # as tell: bools and strings are no fitnesses
                raise TypeError(f"run: fitness_fn returned {r.dtype}; fitness must be an "
                                "array of numbers")
            r = r.astype(np.float64, copy=False)
            if r.shape != f.shape:
                raise ValueError(f"run: fitness_fn returned shape {r.shape}; expected "
                                 f"({self.population},), one per member")
            f[:] = r
        _lib.check(L.evo_tell(ptr, f.ctypes.data, f.size), "run")
        return True

    def __repr__(self) -> str:
        if self._h is None:
            return "<fastrl.Evo closed>"
        return (f"<fastrl.Evo {self.algo} population={self.population} "
                f"num_parameters={self.num_parameters} generation={self.generation}>")
