"""fastrl: Python binding of libfastrl through ctypes (no C extension).

    import fastrl
    env = fastrl.make_vec("CartPole-v1", num_envs=4096)   # gymnasium vector API
    obs, info = env.reset(seed=0)                           # numpy views, zero-copy
    obs, rew, term, trunc, info = env.step(env.action_space.sample())

    trainer = fastrl.Trainer("CartPole-v1", target_return=475)
    trainer.train(500_000, checkpoint="cartpole.frl")
    policy = fastrl.Policy.load("cartpole.frl")
    returns = fastrl.evaluate(policy, "CartPole-v1")

    pop = fastrl.Population(policy, 64)             # 64 members: one [64, n] float32 block
    es = fastrl.Evo(pop.parameters[0], algo="es", population=64)   # ask/tell OpenAI-ES
    es.ask(out=pop.parameters)                       # a generation straight into pop
    es.tell(pop.evaluate(env).returns)               # each member's mean return

doc/python.md has the API, the library lookup order, the lifetime rules of the numpy
views, threads and the GIL, callbacks and errors.
"""

from __future__ import annotations

from . import spaces
from ._handle import owner_of as _owner_of  # noqa: F401 (for tests and debugging)
from ._lib import Error, LibraryNotFoundError, Status, library_path
from .config import Config, KeyInfo, config_keys, describe
from .env import Env, VecEnv, env_ids, make, make_vec
from .evo import Evo
from .policy import Policy
from .population import Population, PopulationEvaluation
from .ring import RING_ARRAYS, Ring
from .runtime import Runtime, default_runtime
from .trainer import Metrics, Trainer, evaluate
from ._gym import register_envs, register_if_possible as _register_if_possible

__version__ = "0.3.0"

__all__ = [
    "Config", "Env", "Error", "Evo", "KeyInfo", "LibraryNotFoundError", "Metrics", "Policy",
    "Population", "PopulationEvaluation", "RING_ARRAYS", "Ring", "Runtime", "Status",
    "Trainer", "VecEnv", "build_info",
    "config_keys", "cpu_features", "default_runtime", "describe", "env_ids", "evaluate",
    "library_path", "library_version", "make", "make_vec", "mujoco_version", "register_envs",
    "spaces",
]


def library_version() -> str:
    """The loaded library's version ("0.3.0")."""
    from ._lib import lib
    return lib().version_string().decode()


def build_info() -> str:
    """The loaded library's build description (version, ABI, compiler, kernels)."""
    from ._lib import lib
    return lib().build_info().decode()


def cpu_features() -> list[str]:
    from ._lib import lib
    return lib().cpu_features().decode().split()


def mujoco_version() -> str | None:
    """The MuJoCo the library's MuJoCo plugin runs ("4.0.0"), or None without the plugin.

    With it, the MuJoCo tasks ("Hopper-v5", ...; doc/environments.md) are made like any
    built-in: fastrl.Env("Hopper-v5"), fastrl.VecEnv("Ant-v5", num_envs=8)."""
    from ._lib import lib
    v = lib().mujoco_version()
    return v.decode() if v else None


_register_if_possible()
