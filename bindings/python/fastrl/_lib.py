"""Loading libfastrl, the C declarations (ctypes), status codes and errors.

Lookup order (the first that applies wins; see doc/python.md):

1. ``FASTRL_LIBRARY``: a path to the library file, or a folder holding
   ``libfastrl.so.0`` (or ``libfastrl.so``), e.g. a build tree's ``lib/``. When it is
   set it must work: there is no fallback, so a wrong path never loads another copy.
2. The package's own folder: the copy a wheel built by ``build_wheel.sh`` bundles.
3. The system's library path: ``libfastrl.so.0`` through the dynamic loader
   (``LD_LIBRARY_PATH``, ``ld.so.cache``, the default folders), then
   ``ctypes.util.find_library("fastrl")``.

Every library call goes through ctypes' ``CDLL``, which releases the GIL for the
duration of the call; callbacks into Python take it back (see doc/python.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import enum
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, TypeVar

    from ._typing import PathArg

    _Table = TypeVar("_Table", bound=ctypes.Structure)

__all__ = ["Error", "LibraryNotFoundError", "Status", "lib", "library_path"]

SONAME = "libfastrl.so.0"
ABI_MAJOR = 0
ABI_MINOR = 3  # the binding uses symbols of FASTRL_0.3 (frl_policy_evaluate, _state_size)


class Status(enum.IntEnum):
    """The C library's ``frl_status`` values (fixed forever)."""

    OK = 0
    ERR_NULL = -1
    ERR_INVALID_ARGUMENT = -2
    ERR_UNKNOWN_NAME = -3
    ERR_SIZE = -4
    ERR_RANGE = -5
    ERR_NONFINITE = -6
    ERR_NOMEM = -7
    ERR_THREAD = -8
    ERR_CALLBACK = -9
    ERR_STATE = -10
    ERR_TYPE = -11
    ERR_PARSE = -12
    ERR_UNSUPPORTED = -13
    ERR_IO = -14
    ERR_FORMAT = -15
    ERR_VERSION = -16
    ERR_INTERNAL = -17
    ERR_INTERRUPTED = -18
    ERR_DEVICE = -19


class Error(Exception):
    """A failed libfastrl call, or a bad argument found before the call.

    ``status`` is a :class:`Status` (``Status.ERR_RANGE``...), ``name`` its C name
    (``"FRL_ERR_RANGE"``) and ``message`` the library's message (``frl_last_error()``
    of the failing call) or the binding's own for errors it finds first.
    """

    def __init__(self, status: int, message: str) -> None:
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status: Status | int = status  # an int the library does not name stays one
        self.message = message
        super().__init__(status, message)

    @property
    def name(self) -> str:
        if isinstance(self.status, Status):
            return "FRL_" + self.status.name
        return "FRL_ERR_UNKNOWN_STATUS"

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"

    def __reduce__(self) -> tuple[type[Error], tuple[int, str]]:
        return (type(self), (int(self.status), self.message))


class LibraryNotFoundError(OSError):
    """libfastrl could not be found or loaded; the message lists every place tried."""


for _cls in (Status, Error, LibraryNotFoundError):
    _cls.__module__ = "fastrl"


# ---------------------------------------------------------------- C types

c_status = ctypes.c_int
c_size = ctypes.c_size_t
vp = ctypes.c_void_p
cp = ctypes.c_char_p
i32 = ctypes.c_int32
i64 = ctypes.c_int64
u64 = ctypes.c_uint64
u32 = ctypes.c_uint32
dbl = ctypes.c_double
P = ctypes.POINTER


class ConfigKeyInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("name", cp), ("type", ctypes.c_int),
                ("default_text", cp), ("min", dbl), ("max", dbl), ("choices", cp),
                ("help", cp)]


class Logger(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("log", vp), ("user", vp),
                ("max_level", ctypes.c_int)]


# Callback signatures. Pointers arrive as plain addresses (c_void_p -> int), the
# cheapest form for ctypes to build.
LOG_FN = ctypes.CFUNCTYPE(None, vp, ctypes.c_int, cp)
ENV_RESET_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, u64, vp)
ENV_STEP_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, vp, vp, vp, vp)
ENV_CLOSE_FN = ctypes.CFUNCTYPE(None, vp)
ENV_STATE_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp)
ENV_FRAME_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp)
BATCH_RESET_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, i32, vp, vp)
BATCH_STEP_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, i32, vp, vp, vp, vp, vp, vp, vp)
METRICS_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp)
# frl_fitness_fn(user, params, members, num_params, fitness)
FITNESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, vp, i32, i64, vp)


# frl_mujoco_callbacks' observe(user, env, model, data, obs),
# reward(user, env, model, data, action, reward, terminated), reset(user, env, model,
# data, seed)
MUJOCO_OBSERVE_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, i32, vp, vp, vp)
MUJOCO_REWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, i32, vp, vp, vp, vp, vp)
MUJOCO_RESET_FN = ctypes.CFUNCTYPE(ctypes.c_int, vp, i32, vp, vp, u64)


class MujocoCallbacks(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("observe", MUJOCO_OBSERVE_FN),
                ("reward", MUJOCO_REWARD_FN), ("reset", MUJOCO_RESET_FN),
                ("randomize_bodies", P(cp)), ("randomize_geoms", P(cp)),
                ("randomize_joints", P(cp))]


class EnvCallbacks(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("reset", ENV_RESET_FN), ("step", ENV_STEP_FN),
                ("close", ENV_CLOSE_FN), ("state_size", i32), ("get_state", ENV_STATE_FN),
                ("set_state", ENV_STATE_FN), ("frame", ENV_FRAME_FN)]


class Frame(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("pixels", vp), ("height", i32), ("width", i32),
                ("channels", i32), ("row_stride", i64)]


class BatchEnvCallbacks(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("reset", BATCH_RESET_FN),
                ("step", BATCH_STEP_FN), ("close", ENV_CLOSE_FN)]


class ActArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("batch", i32), ("observations", vp),
                ("actions", vp), ("log_probs", vp), ("values", vp),
                ("deterministic", i32), ("stream_offset", u64), ("counter", u64),
                ("workspace", vp), ("workspace_size", c_size),
                ("observation_width", i64), ("action_width", i64),
                ("state", vp), ("state_width", i64), ("reset", vp), ("outputs", vp)]


class EvalArgs(ctypes.Structure):
    """frl_eval_args (0.3): one call of frl_policy_evaluate."""
    _fields_ = [("struct_size", c_size), ("episodes", i32), ("deterministic", i32),
                ("seed", u64), ("returns", vp), ("lengths", vp), ("max_steps", i64)]


class PopulationActArgs(ctypes.Structure):
    """frl_population_act_args (0.3): one call of frl_population_act."""
    _fields_ = [("struct_size", c_size), ("batch", i32), ("observations", vp),
                ("members", vp), ("actions", vp), ("deterministic", i32),
                ("stream_offset", u64), ("counter", u64), ("observation_width", i64),
                ("action_width", i64)]


class PopulationEvalArgs(ctypes.Structure):
    """frl_population_eval_args (0.3): one call of frl_population_evaluate."""
    _fields_ = [("struct_size", c_size), ("episodes", i32), ("deterministic", i32),
                ("seed", u64), ("max_episode_steps", i64), ("returns", vp), ("steps", vp),
                ("lengths", vp), ("update_obs_norm", i32), ("max_steps", i64)]


def new_table(cls: type[_Table], **defaults: Any) -> _Table:
    """A versioned table (a struct that starts with struct_size) filled as the header's
    static inline frl_X_init fills it: zeros, struct_size = this binding's sizeof (the
    layout the binding was written against), then the given defaults."""
    t = cls()
    t.struct_size = ctypes.sizeof(cls)
    for k, v in defaults.items():
        setattr(t, k, v)
    return t


METRICS_FIELDS: list[tuple[str, Any]] = [
    ("struct_size", c_size), ("update", i64), ("env_steps", i64), ("episodes", i64),
    ("mean_return", dbl), ("mean_length", dbl), ("seconds", dbl),
    ("steps_per_second", dbl), ("policy_loss", dbl), ("value_loss", dbl),
    ("entropy", dbl), ("approx_kl", dbl), ("clip_fraction", dbl),
    ("explained_variance", dbl), ("grad_norm", dbl), ("learning_rate", dbl),
    ("epochs_done", i32), ("time_env", dbl), ("time_inference", dbl),
    ("time_backward", dbl), ("time_optimizer", dbl), ("time_waiting", dbl),
    ("policy_lag_mean", dbl), ("policy_lag_max", dbl), ("slots_dropped", ctypes.c_int64),
    ("q_mean", dbl), ("td_error", dbl), ("epsilon", dbl), ("replay_fill", dbl),
    ("sample_age", dbl), ("time_replay", dbl),
    ("population_mean", dbl), ("population_best", dbl), ("kept_fitness", dbl),
    ("priority_spread", dbl),
]


class MetricsStruct(ctypes.Structure):
    _fields_ = METRICS_FIELDS


# name: (restype, argtypes). Every function the binding calls; all are checked to
# exist when the library is loaded, so a stale library fails at once, by name.
_PROTOTYPES = {
    "frl_status_name": (cp, [ctypes.c_int]),
    "frl_last_error": (cp, []),
    "frl_version_string": (cp, []),
    "frl_abi_version": (u32, []),
    "frl_cpu_features": (cp, []),
    "frl_build_info": (cp, []),
    "frl_mujoco_version": (cp, []),
    "frl_mujoco_array": (c_status, [vp, vp, cp, P(vp), P(i64), P(i64), P(i32)]),
    "frl_mujoco_name_id": (c_status, [vp, cp, cp, P(i32)]),
    # config
    "frl_config_create": (c_status, [P(vp), vp]),
    "frl_config_destroy": (None, [vp]),
    "frl_config_clone": (c_status, [P(vp), vp]),
    "frl_config_set_int": (c_status, [vp, cp, i64]),
    "frl_config_set_float": (c_status, [vp, cp, dbl]),
    "frl_config_set_bool": (c_status, [vp, cp, ctypes.c_int]),
    "frl_config_set": (c_status, [vp, cp, cp]),
    "frl_config_parse": (c_status, [vp, cp]),
    "frl_config_unset": (c_status, [vp, cp]),
    "frl_config_get_int": (c_status, [vp, cp, P(i64)]),
    "frl_config_get_float": (c_status, [vp, cp, P(dbl)]),
    "frl_config_get_bool": (c_status, [vp, cp, P(ctypes.c_int)]),
    "frl_config_get_int_list": (c_status, [vp, cp, P(i64), i32, P(i32)]),
    "frl_config_get_text": (c_status, [vp, cp, ctypes.c_char_p, c_size]),
    "frl_config_is_set": (ctypes.c_int, [vp, cp]),
    "frl_config_next": (vp, [vp]),
    "frl_config_describe": (c_status, [cp, P(ConfigKeyInfo)]),
    # runtime
    "frl_runtime_create": (c_status, [P(vp), vp, vp, vp]),
    "frl_runtime_destroy": (None, [vp]),
    "frl_runtime_threads": (i32, [vp]),
    "frl_runtime_seed": (u64, [vp]),
    "frl_runtime_device": (cp, [vp]),
    "frl_runtime_device_note": (cp, [vp]),
    # spaces
    "frl_space_create_discrete": (c_status, [P(vp), vp, i64]),
    "frl_space_create_box": (c_status, [P(vp), vp, i32, vp, vp, vp]),
    "frl_space_create_image": (c_status, [P(vp), vp, i32, i32, i32]),
    "frl_space_create_mixed": (c_status, [P(vp), vp, vp, vp]),
    "frl_space_part": (vp, [vp, i32]),
    "frl_space_destroy": (None, [vp]),
    "frl_space_get_kind": (ctypes.c_int, [vp]),
    "frl_space_n": (i64, [vp]),
    "frl_space_rank": (i32, [vp]),
    "frl_space_shape": (vp, [vp]),
    "frl_space_low": (vp, [vp]),
    "frl_space_high": (vp, [vp]),
    "frl_space_width": (i64, [vp]),
    # callbacks
    # single env
    "frl_env_create": (c_status, [P(vp), vp, cp, vp]),
    "frl_env_create_callbacks": (c_status, [P(vp), vp, P(EnvCallbacks), vp, vp, vp, vp]),
    "frl_env_destroy": (None, [vp]),
    "frl_env_name_at": (cp, [i32]),
    "frl_env_observation_space": (vp, [vp]),
    "frl_env_action_space": (vp, [vp]),
    "frl_env_reset": (c_status, [vp, u64, vp]),
    "frl_env_step": (c_status, [vp, vp, vp, vp, vp, vp]),
    "frl_env_state_size": (i32, [vp]),
    "frl_env_get_state": (c_status, [vp, vp, i32]),
    "frl_env_set_state": (c_status, [vp, vp, i32, vp]),
    # vec env
    "frl_vec_env_create": (c_status, [P(vp), vp, cp, i32, vp]),
    "frl_vec_env_create_callbacks": (c_status, [P(vp), vp, P(EnvCallbacks), vp, i32, vp,
                                                vp, vp]),
    "frl_vec_env_create_mujoco": (c_status, [P(vp), vp, cp, P(MujocoCallbacks), vp, i32,
                                             i32, vp]),
    "frl_vec_env_create_batch": (c_status, [P(vp), vp, P(BatchEnvCallbacks), vp, i32, vp,
                                            vp, vp]),
    "frl_vec_env_destroy": (None, [vp]),
    "frl_vec_env_num_envs": (i32, [vp]),
    "frl_vec_env_observation_space": (vp, [vp]),
    "frl_vec_env_action_space": (vp, [vp]),
    "frl_vec_env_name": (cp, [vp]),
    "frl_vec_env_reset": (c_status, [vp, u64]),
    "frl_vec_env_step": (c_status, [vp]),
    "frl_vec_env_actions": (vp, [vp]),
    "frl_vec_env_observations": (vp, [vp]),
    "frl_vec_env_frames": (vp, [vp]),
    "frl_vec_env_rewards": (vp, [vp]),
    "frl_vec_env_terminated": (vp, [vp]),
    "frl_vec_env_truncated": (vp, [vp]),
    "frl_vec_env_reset_steps": (vp, [vp]),
    "frl_vec_env_episode_returns": (vp, [vp]),
    "frl_vec_env_episode_lengths": (vp, [vp]),
    "frl_vec_env_total_steps": (i64, [vp]),
    "frl_vec_env_total_episodes": (i64, [vp]),
    # policy
    "frl_policy_create": (c_status, [P(vp), vp, vp, vp, vp]),
    "frl_policy_destroy": (None, [vp]),
    "frl_policy_observation_space": (vp, [vp]),
    "frl_policy_action_space": (vp, [vp]),
    "frl_policy_num_parameters": (i64, [vp]),
    "frl_policy_version": (u64, [vp]),
    "frl_policy_state_size": (i64, [vp]),
    "frl_policy_act": (c_status, [vp, P(ActArgs)]),
    "frl_policy_evaluate": (c_status, [vp, vp, P(EvalArgs), P(dbl)]),
    "frl_policy_save": (c_status, [vp, cp]),
    "frl_policy_export": (c_status, [vp, cp, vp]),
    "frl_policy_output_size": (i64, [vp]),
    "frl_policy_load": (c_status, [P(vp), vp, cp]),
    # ring
    "frl_ring_memory_size": (c_status, [i32, i32, i32, vp, vp, P(c_size)]),
    "frl_ring_create": (c_status, [P(vp), vp, i32, i32, i32, vp, vp]),
    "frl_ring_destroy": (None, [vp]),
    "frl_ring_slots": (i32, [vp]),
    "frl_ring_steps": (i32, [vp]),
    "frl_ring_envs": (i32, [vp]),
    "frl_ring_array": (c_status, [vp, i32, ctypes.c_int, P(vp), P(c_size)]),
    "frl_ring_slot_state": (ctypes.c_int, [vp, i32]),
    "frl_ring_acquire_write": (c_status, [vp, P(i32)]),
    "frl_ring_commit": (c_status, [vp, i32]),
    "frl_ring_acquire_read": (c_status, [vp, P(i32)]),
    "frl_ring_release": (c_status, [vp, i32]),
    # trainer
    "frl_trainer_create": (c_status, [P(vp), vp, cp, vp]),
    "frl_trainer_create_vec": (c_status, [P(vp), vp, vp, vp]),
    "frl_trainer_destroy": (None, [vp]),
    "frl_trainer_set_callback": (None, [vp, METRICS_FN, vp]),
    "frl_trainer_set_output": (c_status, [vp, cp]),
    "frl_trainer_train": (c_status, [vp, i64]),
    "frl_trainer_request_stop": (None, [vp]),
    "frl_trainer_save": (c_status, [vp, cp]),
    "frl_trainer_load": (c_status, [P(vp), vp, cp, vp]),
    "frl_trainer_policy": (vp, [vp]),
    "frl_trainer_ring": (vp, [vp]),
    "frl_trainer_replay": (vp, [vp]),
    "frl_replay_get_info": (c_status, [vp, vp]),
    "frl_replay_array": (c_status, [vp, ctypes.c_int, P(vp), P(c_size)]),
    "frl_trainer_vec_env": (vp, [vp]),
    "frl_trainer_metrics": (vp, [vp]),
    # populations and neuroevolution (0.3)
    "frl_population_create": (c_status, [P(vp), vp, i32]),
    "frl_population_destroy": (None, [vp]),
    "frl_population_members": (i32, [vp]),
    "frl_population_member_size": (i64, [vp]),
    "frl_population_parameters": (vp, [vp]),
    "frl_population_copy_to_policy": (c_status, [vp, i32, vp]),
    "frl_population_act": (c_status, [vp, P(PopulationActArgs)]),
    "frl_population_evaluate": (c_status, [vp, vp, P(PopulationEvalArgs), P(i64)]),
    "frl_population_last_error": (cp, [vp]),
    "frl_evo_create": (c_status, [P(vp), vp, vp, i64, vp]),
    "frl_evo_destroy": (None, [vp]),
    "frl_evo_memory_size": (c_status, [vp, i64, P(c_size)]),
    "frl_evo_population": (i32, [vp]),
    "frl_evo_num_parameters": (i64, [vp]),
    "frl_evo_generation": (i64, [vp]),
    "frl_evo_ask": (c_status, [vp, vp, i64]),
    "frl_evo_tell": (c_status, [vp, vp, i32]),
    "frl_evo_best": (c_status, [vp, vp, i64, P(dbl)]),
    "frl_evo_genome": (c_status, [vp, i32, vp, i32, P(i32)]),
    "frl_evo_rebuild": (c_status, [vp, vp, i32, vp, i64]),
    "frl_evo_run": (c_status, [vp, FITNESS_FN, vp, i64]),
    "frl_evo_save": (c_status, [vp, cp]),
    "frl_evo_load": (c_status, [vp, cp]),
    "frl_evo_last_error": (cp, [vp]),
}


class _Lib:
    """The loaded library: one attribute per C function, plus ``path``."""

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.path = path
        self._cdll = cdll
        missing = []
        for name, (res, args) in _PROTOTYPES.items():
            try:
                f = getattr(cdll, name)
            except AttributeError:
                missing.append(name)
                continue
            f.restype = res
            f.argtypes = args
            setattr(self, name[4:], f)  # frl_vec_env_step -> lib.vec_env_step
        if missing:
            raise LibraryNotFoundError(
                f"{path} is not a usable libfastrl: it lacks {', '.join(missing[:5])}"
                f"{' ...' if len(missing) > 5 else ''} (this binding needs ABI "
                f"{ABI_MAJOR}.{ABI_MINOR} or later)")
        abi = self.abi_version()
        if abi >> 16 != ABI_MAJOR or (abi & 0xFFFF) < ABI_MINOR:
            raise LibraryNotFoundError(
                f"{path} has ABI {abi >> 16}.{abi & 0xFFFF}; this binding needs "
                f"{ABI_MAJOR}.{ABI_MINOR} or a later {ABI_MAJOR}.x")

    if TYPE_CHECKING:
        # The C functions are set as attributes from _PROTOTYPES, by name.
        def __getattr__(self, name: str) -> Any: ...


_lock = threading.Lock()
_loaded: _Lib | None = None


def _candidates_in(folder: str) -> list[str]:
    return [os.path.join(folder, n) for n in (SONAME, "libfastrl.so")]


def _load() -> _Lib:
    tried: list[str] = []

    def attempt(path: str) -> _Lib | None:
        try:
            return _Lib(ctypes.CDLL(path), path)
        except LibraryNotFoundError as e:
            tried.append(f"  {path}: {e}")
        except OSError as e:
            tried.append(f"  {path}: {e}")
        return None

    env = os.environ.get("FASTRL_LIBRARY")
    if env:
        paths = _candidates_in(env) if os.path.isdir(env) else [env]
        for p in paths:
            if os.path.isdir(env) and not os.path.exists(p):
                tried.append(f"  {p}: no such file")
                continue
            lib = attempt(os.path.abspath(p) if os.sep in p else p)
            if lib:
                return lib
        raise LibraryNotFoundError(
            "FASTRL_LIBRARY is set but names no loadable libfastrl:\n" + "\n".join(tried)
            + "\nSet it to the library file (e.g. build/lib/libfastrl.so.0) or its "
            "folder, or unset it to search the package folder and the system.")

    here = os.path.dirname(os.path.abspath(__file__))
    for p in _candidates_in(here):
        if os.path.exists(p):
            lib = attempt(p)
            if lib:
                return lib
        else:
            tried.append(f"  {p}: no such file (only a wheel bundles the library)")

    lib = attempt(SONAME)
    if lib:
        lib.path = _loaded_path(lib) or SONAME
        return lib
    found = ctypes.util.find_library("fastrl")
    if found:
        lib = attempt(found)
        if lib:
            lib.path = _loaded_path(lib) or found
            return lib
    else:
        tried.append("  ctypes.util.find_library('fastrl'): not found")
    raise LibraryNotFoundError(
        "cannot find libfastrl. Tried, in order:\n" + "\n".join(tried) + "\n"
        "Fix one of: set FASTRL_LIBRARY to a built library (e.g. "
        "FASTRL_LIBRARY=build/lib/libfastrl.so.0 after `meson setup build && ninja -C "
        "build`); install the wheel from bindings/python/build_wheel.sh, which bundles "
        "it; or `meson install -C build` (then ldconfig) so the system loader finds "
        f"{SONAME}.")


def _loaded_path(lib: _Lib) -> str | None:
    """The file the dynamic loader picked for a library opened by soname."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libfastrl" in line:
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return None


def lib() -> _Lib:
    """The loaded library (loaded on first use)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _load()
    return _loaded


def library_path() -> str:
    """The path of the libfastrl the binding loaded (loading it if needed)."""
    return lib().path


def last_error() -> str:
    return (lib().last_error() or b"").decode("utf-8", "replace")


def error(status: int, prefix: str | None = None) -> Error:
    """The Error of a failed call, with the calling thread's last message."""
    msg = last_error()
    if prefix:
        msg = f"{prefix}: {msg}" if msg else prefix
    return Error(status, msg)


def check(status: int, prefix: str | None = None) -> None:
    if status:
        raise error(status, prefix)


def encode(text: object, what: str) -> bytes:
    """text as the C string the library reads: a str (UTF-8), bytes or os.PathLike. A
    NUL inside would end the C string there, so the library would silently read only
    the part before it: refused for bytes and paths as for str."""
    if isinstance(text, bytes):
        data = text
    elif isinstance(text, os.PathLike):
        data = os.fsencode(text)
    elif isinstance(text, str):
        data = text.encode("utf-8")
    else:
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    if b"\0" in data:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{what} contains a NUL character")
    return data


def fspath(path: PathArg, what: str = "path") -> bytes:
    try:
        p = os.fsencode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{what} must be a str or os.PathLike, not "
                        f"{type(path).__name__}") from None
    if b"\0" in p:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{what} contains a NUL character")
    return p


def is_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def python_is_finalizing() -> bool:
    return sys.is_finalizing()
