"""Type aliases and protocols used by the binding's annotations.

The package's modules import this one only under ``typing.TYPE_CHECKING``, so importing
fastrl never runs it. It is valid Python 3.9 all the same (aliases are built with
``Union``, not ``X | Y``), so that a user may import it to annotate a callback or an
environment.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Protocol, \
    Sequence, SupportsFloat, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from .config import Config
    from .mujoco import MujocoData

# Integers: the binding takes numpy's integer scalars wherever it takes an int.
IntLike = Union[int, np.integer[Any]]

# A file name: what os.fspath takes.
PathArg = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]

# A space: gymnasium's Discrete, Box and Dict when gymnasium is installed, else the
# stand-ins of fastrl.spaces. Which classes these are depends on the environment the
# code runs in, so the alias is Any (as gymnasium's own Space[Any] would lose .n, .low).
Space = Any

# What Config(...) and every ``config=`` take.
ConfigSource = Union["Config", Mapping[str, Any], str, bytes, None]
# What a config key can be set to (None unsets it); the library checks the value.
ConfigValue = Union[None, bool, int, float, str, bytes, np.generic, Sequence[IntLike],
                    npt.NDArray[np.integer[Any]]]

# Observations of a batch as the library holds them: one array, or for a mixed
# (image and vector) space a dict of "image" and "vector" views.
Observations = Union[npt.NDArray[Any], Dict[str, npt.NDArray[Any]]]
# One env's observation (Env.reset/step): an int for a Discrete observation space.
EnvObservation = Union[int, npt.NDArray[Any], Dict[str, npt.NDArray[Any]]]
# Observations given to act: array-likes, or the dict of a mixed space.
ObservationsIn = Union[npt.ArrayLike, Dict[str, Any]]
# Actions from act: int32 [B] (discrete) or float32 [B, ...] (box); one observation
# gives an int (discrete) or a float32 array.
Actions = Union[int, npt.NDArray[np.int32], npt.NDArray[np.float32]]

# Callbacks.
LogFunction = Callable[[int, str], object]
Logger = Union[logging.Logger, LogFunction]
# fitness_fn(params, fitness): fill fitness, or return the fitnesses, or False to stop.
FitnessFunction = Callable[[npt.NDArray[np.float32], npt.NDArray[np.float64]],
                           Optional[npt.ArrayLike]]
# The functions of VecEnv.from_mujoco.
MujocoObserve = Callable[[int, "MujocoData", npt.NDArray[np.float32]], Optional[npt.ArrayLike]]
MujocoReward = Callable[[int, "MujocoData", npt.NDArray[np.float32]],
                        Union[SupportsFloat, Tuple[SupportsFloat, object]]]
MujocoReset = Callable[[int, "MujocoData", int], object]


class PythonEnv(Protocol):
    """What Env.from_python and VecEnv.from_python step: a gymnasium.Env, or any object
    with these two methods (and observation_space/action_space unless they are given).
    reset returns (obs, info) or obs; step returns (obs, reward, terminated, truncated,
    info)."""

    def reset(self, *, seed: int) -> object: ...

    def step(self, action: Any, /) -> tuple[Any, ...]: ...


# An env, or a function or class that makes one (gymnasium's env_fns).
PythonEnvOrMaker = Union[PythonEnv, Callable[[], PythonEnv]]


class BatchWorld(Protocol):
    """The world of VecEnv.from_batch: every agent reset and stepped in one call, on
    numpy views of the library's arrays. Observations are float32 [N, ...] (uint8 for
    images; the dict of "image" and "vector" for a mixed space) and actions int32 [N]
    or float32 [N, ...], hence Any."""

    def reset(self, seeds: npt.NDArray[np.uint64], observations: Any, /) -> object: ...

    def step(self, actions: Any, reset_mask: npt.NDArray[np.uint8],
             seeds: npt.NDArray[np.uint64], observations: Any,
             rewards: npt.NDArray[np.float32], terminated: npt.NDArray[np.uint8],
             truncated: npt.NDArray[np.uint8], /) -> object: ...


class ReplayInfo(TypedDict):
    """Replay.info(): frl_replay_info's fields."""

    capacity: int
    blocks: int
    filled: int
    next: int
    transitions: int
    steps: int
    envs: int
    observation_width: int
    action_width: int
    state_width: int
    prioritized: int
    record_bytes: int
    offset_action: int
    offset_reward: int
    offset_flags: int
