"""Config: the library's typed settings as a dict-like object."""

from __future__ import annotations

import collections.abc
import ctypes
import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from . import _lib
from ._handle import Handle
from ._lib import Error, Status

if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator, Mapping, MutableMapping, NoReturn

    from ._typing import ConfigSource, ConfigValue

    # Keys are str; a value's type depends on its key, so reads are Any.
    _MappingBase = MutableMapping[str, Any]
else:
    _MappingBase = collections.abc.MutableMapping

__all__ = ["Config", "KeyInfo", "config_keys", "describe", "resolve_key", "as_config",
           "algo_namespace"]

_TYPES = {1: "int", 2: "float", 3: "bool", 4: "choice", 5: "int_list"}


@dataclasses.dataclass(frozen=True)
class KeyInfo:
    """One config key, as ``frl_config_describe`` reports it."""

    name: str
    type: str          # "int", "float", "bool", "choice" or "int_list"
    default: str       # the default as text ("none" for keys unset by default)
    min: float         # int and float keys (and each int_list item): valid range
    max: float
    choices: tuple[str, ...]  # choice keys: the valid values
    help: str

    def __str__(self) -> str:
        if self.type == "choice":
            rng = "|".join(self.choices)
        elif self.type == "bool":
            rng = "true|false"
        else:
            rng = f"[{_num(self.min)}, {_num(self.max)}]"
        return f"{self.name} ({self.type}, default {self.default}, {rng}): {self.help}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _big(v: int) -> str:
    """An int for a message: in full, or its first digits and exponent when long."""
    digits = str(abs(v))
    if len(digits) <= 24:
        return str(v)
    return f"{'-' if v < 0 else ''}{digits[0]}.{digits[1:7]}e+{len(digits) - 1}"


_infos: dict[str, KeyInfo] | None = None


def _all_infos() -> dict[str, KeyInfo]:
    global _infos
    if _infos is None:
        L = _lib.lib()
        infos = {}
        p = L.config_next(None)
        while p:
            name = ctypes.string_at(p).decode()
            ki = _lib.ConfigKeyInfo()
            ki.struct_size = ctypes.sizeof(ki)
            _lib.check(L.config_describe(name.encode(), ctypes.byref(ki)))
            infos[name] = KeyInfo(
                name=name, type=_TYPES.get(ki.type, str(ki.type)),
                default=(ki.default_text or b"").decode(), min=ki.min, max=ki.max,
                choices=tuple(c for c in (ki.choices or b"").decode().split("|") if c),
                help=(ki.help or b"").decode())
            p = L.config_next(p)
        _infos = infos
    return _infos


def config_keys() -> list[KeyInfo]:
    """Every key the library knows, in its table's order, as :class:`KeyInfo`."""
    return list(_all_infos().values())


def describe(key: str | bytes) -> KeyInfo:
    """The :class:`KeyInfo` of a key (full name, e.g. ``"train.lr"``)."""
    key = _key_text(key)
    info = _all_infos().get(key)
    if info is None:
        _unknown(key)
    return info


class _UnknownKey(Error, KeyError):
    """An unknown config key: an Error (ERR_UNKNOWN_NAME, as the library says it) that is
    also a KeyError, so the mapping's get(key, default) and pop(key, default) return the
    default as a mapping's do."""


def _unknown(key: str | bytes) -> NoReturn:
    # The library's own message names the key and lists the keys of the namespace (as
    # a prefix it would say the key twice).
    st = _lib.lib().config_describe(_lib.encode(key, "config key"),
                                    ctypes.byref(_key_info_probe()))
    message = _lib.last_error() if st else ""  # 0: a key it knows, given as bytes
    raise _UnknownKey(st or Status.ERR_UNKNOWN_NAME, message or f"unknown config key {key!r}")


def _key_text(key: str | bytes) -> str:
    """A key as the str the mapping is keyed by: setting and unsetting take bytes (the C
    string the library reads), so reading takes them too, as their UTF-8 text."""
    if isinstance(key, bytes):
        _lib.encode(key, "config key")  # a NUL inside: ERR_INVALID_ARGUMENT, as on set
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            _unknown(key)
    if not isinstance(key, str):
        raise TypeError(f"config key must be a str, not {type(key).__name__}")
    return key


def _key_info_probe() -> _lib.ConfigKeyInfo:
    ki = _lib.ConfigKeyInfo()
    ki.struct_size = ctypes.sizeof(ki)
    return ki


# Namespaces whose keys a short name reaches only when no key of another namespace
# has the same last part: the neuroevolution keys of 0.3 (es.lr, es.population, ...)
# share last parts with each other and with train.lr, which keeps its short name "lr";
# elastic.epochs and elastic.minibatches leave "epochs" and "minibatches" to train.*.
# Where train.algo is es or ga, short names resolve in that namespace first
# (algo_namespace), so Evo(x, algo="es", lr=0.05) sets es.lr.
_QUALIFIED_FIRST = ("es", "ga", "elastic")


def resolve_key(name: str, prefer: str | None = None) -> str:
    """A full key for an option name: ``"lr"`` -> ``"train.lr"``.

    A name with a dot must be a key. A name without one is the last part of a key: the
    one key of ``prefer``'s namespace (e.g. ``"es"``) with that last part, if any; else
    the only key with it; else, when several share it, the only one outside the es.*,
    ga.* and elastic.* namespaces (``lr`` is ``train.lr``, not ``es.lr``; ``epochs`` is
    ``train.epochs``, not ``elastic.epochs``); else it is ambiguous."""
    if not isinstance(name, str):
        raise TypeError(f"config key must be a str, not {type(name).__name__}")
    infos = _all_infos()
    if "." in name:
        if name not in infos:
            _unknown(name)
        return name
    hits = [k for k in infos if k.rsplit(".", 1)[1] == name]
    if prefer:
        mine = [k for k in hits if k.split(".", 1)[0] == prefer]
        if len(mine) == 1:
            return mine[0]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise Error(Status.ERR_UNKNOWN_NAME,
                    f"unknown option {name!r}: options are config keys (fastrl.config_keys()"
                    f"), written in full ('train.lr') or by their last part ('lr')")
    plain = [k for k in hits if k.split(".", 1)[0] not in _QUALIFIED_FIRST]
    if len(plain) == 1:
        return plain[0]
    raise Error(Status.ERR_UNKNOWN_NAME,
                f"option {name!r} is ambiguous: write one of {', '.join(hits)}")


def resolve_options(options: Mapping[str, Any], prefer: str | None = None,
                    what: str = "options") -> dict[str, Any]:
    """Options by full key (:func:`resolve_key`). Two names of one key (``lr=`` and
    ``**{"train.lr": ...}``) are an error: a dict keeps one of the two values, and the
    other would be dropped without a word."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for k, v in options.items():
        key = resolve_key(k, prefer)
        if key in given:
            raise Error(Status.ERR_INVALID_ARGUMENT, f"{what}: {given[key]!r} and {k!r} "
                        f"both set {key}: give it once")
        out[key] = v
        given[key] = k
    return out


class Config(_MappingBase):
    """The library's settings: a mapping over every known key.

    ``cfg["train.lr"]`` reads a key's value (its default when not set; ``None`` for
    ``train.target_kl`` and ``train.target_return`` while unset); ``cfg["train.lr"] =
    1e-3`` sets it, validated by the library (a bad value raises :class:`Error` and
    changes nothing); ``del cfg[key]`` (or assigning None) unsets it. Iteration and
    ``len`` cover every key; :meth:`set_keys` lists the ones set, :meth:`help` every
    key with its help. ``Config({"train.lr": 1e-3}, num_envs=8)`` or ``Config("train.lr=1e-3
    train.num_envs=8")`` build one; keyword names may drop the namespace.
    """

    def __init__(self, values: ConfigSource | Iterable[tuple[str, Any]] = None, /,
                 **options: Any) -> None:
        ptr = ctypes.c_void_p()
        _lib.check(_lib.lib().config_create(ctypes.byref(ptr), None), "Config")
        self._h = Handle(ptr.value, _lib.lib().config_destroy, "config")
        merged: dict[str, Any] = {}
        if isinstance(values, (str, bytes)):
            self.parse(values)
        elif isinstance(values, Config):
            self._replace(values._clone_handle())
        elif values is not None:
            merged.update(values)
        prefer = algo_namespace(self, {**merged, **options})
        merged.update(resolve_options(options, prefer, "Config"))
        if merged:
            self.update(merged)

    # -- plumbing
    @property
    def _ptr(self) -> int | None:
        return self._h.ptr

    def _replace(self, handle: Handle) -> None:
        self._h = handle

    def _clone_handle(self) -> Handle:
        ptr = ctypes.c_void_p()
        _lib.check(_lib.lib().config_clone(ctypes.byref(ptr), self._ptr), "Config.copy")
        return Handle(ptr.value, _lib.lib().config_destroy, "config")

    # -- mapping
    def __getitem__(self, key: str | bytes) -> Any:
        key = _key_text(key)
        info = describe(key)
        L = _lib.lib()
        k = key.encode()
        t = info.type
        if t == "int":
            out: Any = ctypes.c_int64()  # Any: a c_int64, c_double or c_int by the key
            _lib.check(L.config_get_int(self._ptr, k, ctypes.byref(out)))
            return out.value
        if t == "float":
            if info.default == "none" and not L.config_is_set(self._ptr, k):
                return None
            out = ctypes.c_double()
            _lib.check(L.config_get_float(self._ptr, k, ctypes.byref(out)))
            return out.value
        if t == "bool":
            out = ctypes.c_int()
            _lib.check(L.config_get_bool(self._ptr, k, ctypes.byref(out)))
            return bool(out.value)
        if t == "int_list":
            buf: Any = (ctypes.c_int64 * 8)()  # Any: the text keys' buffer differs
            n = ctypes.c_int32()
            _lib.check(L.config_get_int_list(self._ptr, k, buf, 8, ctypes.byref(n)))
            return tuple(buf[: n.value])
        buf = ctypes.create_string_buffer(256)
        _lib.check(L.config_get_text(self._ptr, k, buf, 256))
        return buf.value.decode()

    def __setitem__(self, key: str, value: ConfigValue) -> None:
        self._set(self._ptr, key, value)

    @staticmethod
    def _set(ptr: int | None, key: str | bytes, value: object) -> None:
        L = _lib.lib()
        k = _lib.encode(key, "config key")
        if value is None:
            _lib.check(L.config_unset(ptr, k))
        elif isinstance(value, (bool, np.bool_)):
            _lib.check(L.config_set_bool(ptr, k, int(bool(value))))
        elif isinstance(value, (int, np.integer)):
            v = int(value)
            if not -(2**63) <= v < 2**63:
                Config._set_wide_int(ptr, key, v)
                return
            _lib.check(L.config_set_int(ptr, k, v))
        elif isinstance(value, (float, np.floating)):
            _lib.check(L.config_set_float(ptr, k, float(value)))  # NaN: the library says
        elif isinstance(value, (str, bytes)):
            _lib.check(L.config_set(ptr, k, _lib.encode(value, f"value of {key!r}")))
        elif isinstance(value, (list, tuple, np.ndarray)):
            Config._check_list_key(key)
            items = []
            for x in value:
                if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                    raise Error(Status.ERR_TYPE, f"config key {key!r}: list items must "
                                f"be integers, not {type(x).__name__}")
                items.append(str(int(x)))
            _lib.check(L.config_set(ptr, k, ",".join(items).encode()))
        else:
            raise TypeError(f"config key {key!r}: cannot set a {type(value).__name__} "
                            "(use int, float, bool, str, a list of ints, or None to unset)")

    @staticmethod
    def _check_list_key(key: str | bytes) -> None:
        """A sequence is a value for an int-list key only: joined as "8" it would set a
        scalar key too (num_envs=(8,) set 8), hiding the mistake. An unknown key is left
        to the library, which names it."""
        info = _all_infos().get(key.decode("utf-8", "replace") if isinstance(key, bytes)
                                else key)
        if info is not None and info.type != "int_list":
            raise Error(Status.ERR_TYPE, f"config key {info.name!r} is of type "
                        f"{info.type}, not int list")

    @staticmethod
    def _set_wide_int(ptr: int | None, key: str | bytes, v: int) -> None:
        """An int beyond int64, which the library's int setter cannot take: a float key
        gets it as a double (the library checks its range), anything else is refused
        here with the key's own type and range."""
        info = describe(key.decode("utf-8", "replace") if isinstance(key, bytes) else key)
        if info.type == "float":
            try:
                x = float(v)
            except OverflowError:
                raise Error(Status.ERR_RANGE, f"config key {key!r}: {_big(v)} does not fit "
                            f"in a double (a float key, in [{_num(info.min)}, "
                            f"{_num(info.max)}])") from None
            _lib.check(_lib.lib().config_set_float(ptr, _lib.encode(key, "config key"), x))
        elif info.type == "int":
            raise Error(Status.ERR_RANGE, f"config key {key!r}: {_big(v)} does not fit in "
                        f"int64 (an int key, in [{_num(info.min)}, {_num(info.max)}])")
        else:  # as the library says it of a small int
            raise Error(Status.ERR_TYPE, f"config key {key!r} is of type "
                        f"{info.type.replace('_', ' ')}, not int")

    def __delitem__(self, key: str | bytes) -> None:
        describe(key)  # unknown: the KeyError-compatible Error, as reading it raises
        _lib.check(_lib.lib().config_unset(self._ptr, _lib.encode(key, "config key")))

    def __iter__(self) -> Iterator[str]:
        return iter(_all_infos())

    def __len__(self) -> int:
        return len(_all_infos())

    def __contains__(self, key: object) -> bool:
        if isinstance(key, bytes):
            try:
                key = _key_text(key)
            except Error:
                return False
        return isinstance(key, str) and key in _all_infos()

    # MutableMapping's popitem takes the first key of iteration, which is every key, set
    # or not, and deleting (unsetting) it leaves it there: clear() looped for ever.
    def popitem(self) -> tuple[str, Any]:
        """Unset the first key that is set and return it with the value it had;
        KeyError when none is set."""
        keys = self.set_keys()
        if not keys:
            raise KeyError("popitem(): no key is set")
        value = self[keys[0]]
        del self[keys[0]]
        return keys[0], value

    def clear(self) -> None:
        """Unset every key: each reads as its default again."""
        for k in self.set_keys():
            del self[k]

    # MutableMapping.update also takes an object with only keys() and __getitem__; this
    # one reads a mapping through items()
    def update(self,  # type: ignore[override]
               other: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /,
               **options: Any) -> None:
        """Set several keys, all or nothing: on an error nothing changes. From another
        Config, its set keys (as ``Config(other)`` copies them): its items() are every
        key, defaults included, and setting those would mark every key set, so the
        settings a trainer's built-in env brings under yours would all be overridden."""
        if isinstance(other, Config):
            other = other.to_dict()
        items = list(other.items() if hasattr(other, "items") else other)
        prefer = algo_namespace(self, {**dict(items), **options}) if options else None
        items += resolve_options(options, prefer, "Config.update").items()
        scratch = self._clone_handle()
        for k, v in items:
            self._set(scratch.ptr, k, v)
        self._replace(scratch)

    # -- the rest
    def parse(self, text: str | bytes) -> Config:
        """Apply ``"key=value key=value"`` (all or nothing)."""
        _lib.check(_lib.lib().config_parse(self._ptr, _lib.encode(text, "config text")))
        return self

    def is_set(self, key: str | bytes) -> bool:
        key = describe(key).name
        return bool(_lib.lib().config_is_set(self._ptr, key.encode()))

    def set_keys(self) -> list[str]:
        """The keys with a value set, in table order."""
        L = _lib.lib()
        return [k for k in _all_infos() if L.config_is_set(self._ptr, k.encode())]

    def to_dict(self, all: bool = False) -> dict[str, Any]:
        """The set keys (or every key, with ``all=True``) and their values."""
        return {k: self[k] for k in (_all_infos() if all else self.set_keys())}

    def copy(self) -> Config:
        c = Config.__new__(Config)
        c._h = self._clone_handle()
        return c

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> Config:
        return self.copy()

    # pickled as its set keys, rebuilt in the other process
    def __reduce__(self) -> tuple[type[Config], tuple[dict[str, Any]]]:
        return (Config, (self.to_dict(),))

    def describe(self, key: str | bytes) -> KeyInfo:
        return describe(key)

    @staticmethod
    def help() -> str:
        """Every key with its type, default, range and help, one per line."""
        return "\n".join(str(i) for i in config_keys())

    def __repr__(self) -> str:
        return f"Config({self.to_dict()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self.to_dict() == other.to_dict()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable (as dict)


def as_config(config: object, options: Mapping[str, Any] | None = None,
              what: str = "config") -> Config:
    """A Config from None, a Config (copied), a mapping or "k=v" text, plus options."""
    if config is None:
        cfg = Config()
    elif isinstance(config, Config):
        cfg = config.copy()
    elif isinstance(config, (str, bytes, collections.abc.Mapping)):
        cfg = Config(config)
    else:
        raise TypeError(f"{what} must be a fastrl.Config, a dict or 'key=value' text, "
                        f"not {type(config).__name__}")
    if options:
        prefer = algo_namespace(cfg, options)
        cfg.update(resolve_options(options, prefer, what))
    return cfg


def algo_namespace(cfg: Config, options: Mapping[str, Any] | None = None) -> str | None:
    """"es" or "ga" when the options (``algo=``/``train.algo=``) or else cfg choose that
    algorithm (short option names then resolve inside its namespace first), or None."""
    algo = None
    for k, v in (options or {}).items():
        if k in ("algo", "train.algo"):
            algo = v
    if algo is None:
        algo = cfg["train.algo"]
    return algo if algo in ("es", "ga") else None
