"""Registration of the built-ins with gymnasium, as ``fastrl/<id>``."""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import TYPE_CHECKING

from . import _lib

if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, Callable

    from ._typing import IntLike
    from .env import Env, VecEnv

_registered: list[str] = []


@functools.lru_cache(maxsize=None)  # one answer, one warning
def usable_gymnasium() -> ModuleType | None:
    """gymnasium when it is installed and new enough (1.2.2: the first Discrete that takes
    a dtype, which the library's int32 actions need), else None: the binding then uses its
    own space classes and registers nothing, with a warning for an old gymnasium."""
    try:
        import gymnasium
    except ImportError:
        return None
    if "dtype" not in inspect.signature(gymnasium.spaces.Discrete.__init__).parameters:
        warnings.warn(f"fastrl: gymnasium {gymnasium.__version__} is older than 1.2.2 (its "
                      "Discrete takes no dtype): fastrl uses its own spaces and registers no "
                      "envs; install gymnasium>=1.2.2 (Python 3.10 or later) to use them "
                      "with gymnasium", RuntimeWarning, stacklevel=2)
        return None
    return gymnasium


def _entry(name: str) -> Callable[..., Env]:
    def make_env(**kwargs: Any) -> Env:
        from .env import Env
        return Env(name, **kwargs)
    make_env.__name__ = f"make_{name.replace('-', '_')}"
    return make_env


def _vector_entry(name: str) -> Callable[..., VecEnv]:
    def make_vec_env(num_envs: IntLike = 1, **kwargs: Any) -> VecEnv:
        from .env import VecEnv
        return VecEnv(name, num_envs, **kwargs)
    make_vec_env.__name__ = f"make_vec_{name.replace('-', '_')}"
    return make_vec_env


def register_envs() -> list[str]:
    """Register every built-in with gymnasium as ``fastrl/<id>`` (done by ``import
    fastrl`` when gymnasium and the library are there). Returns the ids registered."""
    import gymnasium
    from .env import env_ids
    out = []
    for name in env_ids():
        gid = f"fastrl/{name}"
        if gid not in gymnasium.registry:
            gymnasium.register(id=gid, entry_point=_entry(name),
                               vector_entry_point=_vector_entry(name))
        out.append(gid)
    _registered[:] = out
    return out


def register_if_possible() -> list[str]:
    if usable_gymnasium() is None:
        return []
    try:
        _lib.lib()
    except _lib.LibraryNotFoundError:
        return []  # the first use of the library says why; fastrl.register_envs() retries
    return register_envs()
