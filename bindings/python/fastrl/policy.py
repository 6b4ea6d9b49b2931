"""Policy: act on numpy batches, save, load."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from . import _lib, spaces
from ._handle import _SAVE_HINT, Closable, Handle
from ._lib import Error, Status
from .config import as_config
from .runtime import runtime_for

if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    import numpy.typing as npt

    from ._typing import Actions, ConfigSource, IntLike, ObservationsIn, PathArg, Space
    from .population import Population
    from .runtime import Runtime

    _Policy = TypeVar("_Policy", bound="Policy")

__all__ = ["Policy"]


def stream_position(owner: Policy | Population, counter: IntLike | None,
                    stream_offset: IntLike) -> tuple[IntLike, bool]:
    """The random stream's counter for an act call and whether it is owner's: the
    caller's, else owner's next, which the call advances past once the library took it
    (a refused call leaves the stream where it was); both it and stream_offset must fit
    in 64 bits."""
    given = (("counter", counter),) if counter is not None else ()
    for name, v in given + (("stream_offset", stream_offset),):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"act: {name} must be an int, not {type(v).__name__}")
        if not 0 <= int(v) < 2**64:
            raise Error(Status.ERR_RANGE, f"act: {name} must be an int in [0, 2^64)")
    if counter is None:
        return owner._counter, True
    return counter, False


class Policy(Closable):
    """A network mapping observations to an action distribution and a value.

    ``Policy(observation_space, action_space, config)`` makes fresh weights from the
    ``policy.*`` keys (seeded by the runtime's seed); :meth:`load` reads a file written
    by :meth:`save` or a trainer checkpoint; ``Trainer.policy`` is the trainer's own.
    :meth:`act` takes a batch ``[B, *obs_shape]`` (or one observation) and returns the
    actions; :meth:`act_with_info` also returns log-probabilities and values.

    A recurrent policy (``policy.core=gru`` or ``lstm``) remembers each agent's past
    through a state array the caller owns: ``state = policy.initial_state(B)``, then
    ``policy.act(obs, state=state, reset=new_episode)`` reads and updates ``state`` in
    place. A policy without a core has :attr:`state_size` 0 and takes the same calls.
    """

    _copy_hint = _SAVE_HINT

    def __init__(self, observation_space: Space, action_space: Space,
                 config: ConfigSource = None, *, runtime: Runtime | None = None,
                 **options: Any) -> None:
        rt, options = runtime_for(runtime, options, "Policy", config)
        cfg = as_config(config, options, "Policy config")
        c_obs = spaces.observation_space_to_c(observation_space)
        c_act, start = spaces.to_c(action_space, "action space")
        if start:
            raise Error(Status.ERR_UNSUPPORTED, "Policy: a Discrete action space must start "
                        "at 0")
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.policy_create(ctypes.byref(ptr), rt.handle.ptr, cfg._ptr, c_obs.ptr,
                                   c_act.ptr), "Policy")
        # The policy keeps a clone of cfg on cfg's allocator: the default one here.
        self._setup(Handle(ptr.value, L.policy_destroy, "policy", deps=[rt.handle]), rt)

    @classmethod
    def load(cls: type[_Policy], path: PathArg, *,
             runtime: Runtime | None = None) -> _Policy:
        """A policy from a policy file or a trainer checkpoint."""
        p = _lib.fspath(path)  # first: its __fspath__ may close the runtime
        rt, _ = runtime_for(runtime, {}, "Policy.load")
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.policy_load(ctypes.byref(ptr), rt.handle.ptr, p), "Policy.load")
        self = cls.__new__(cls)
        self._setup(Handle(ptr.value, L.policy_destroy, "policy", deps=[rt.handle]), rt)
        return self

    @classmethod
    def _borrowed(cls: type[_Policy], ptr: int | None, owner: object, runtime: Runtime,
                  busy: Callable[[], bool]) -> _Policy:
        self = cls.__new__(cls)
        self._setup(Handle(ptr, None, "policy (borrowed)", deps=[owner]), runtime)
        self._busy = busy
        return self

    def _setup(self, handle: Handle, runtime: Runtime) -> None:
        L = _lib.lib()
        self._h = handle
        self._runtime = runtime
        self._busy: Callable[[], bool] | None = None
        self._counter = 0
        p = handle.ptr
        self.observation_space = spaces.from_c(L.policy_observation_space(p))
        self.action_space = spaces.from_c(L.policy_action_space(p))
        self._mixed = spaces.is_mixed(self.observation_space)
        self._obs_shape = spaces.observation_layout(self.observation_space)[0]
        self._obs_dtype = spaces.observation_dtype(L.policy_observation_space(p))
        self._discrete = L.space_get_kind(L.policy_action_space(p)) == spaces.DISCRETE
        self._act_shape = () if self._discrete else tuple(self.action_space.shape)
        self._state_size = int(L.policy_state_size(p))
        self._num_outputs = int(L.policy_output_size(p))

    def _check_open(self) -> None:
        if self._h is None:
            raise Error(Status.ERR_STATE, "the policy is closed")

    @property
    def _ptr(self) -> int | None:
        if self._h is None:
            raise Error(Status.ERR_STATE, "the policy is closed")
        if self._busy is not None and self._busy():
            raise Error(Status.ERR_STATE, "the trainer is training this policy: use it "
                        "between Trainer.train calls")
        return self._h.ptr

    @property
    def num_parameters(self) -> int:
        return _lib.lib().policy_num_parameters(self._ptr)

    @property
    def version(self) -> int:
        """Learner updates that changed the weights."""
        return _lib.lib().policy_version(self._ptr)

    @property
    def state_size(self) -> int:
        """Floats of recurrent state per agent (row): 0 for a policy without a core,
        ``policy.core_size`` for a GRU, twice that for an LSTM (h then c), per core
        (``policy.shared=false`` has two: the actor's, then the critic's)."""
        self._check_open()
        return self._state_size

    def initial_state(self, batch: IntLike) -> npt.NDArray[np.float32]:
        """A zeroed float32 state array ``[batch, state_size]`` for :meth:`act`'s
        ``state``: a row of zeros is a fresh agent. ``(batch, 0)`` for a policy without
        a core."""
        self._check_open()
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or \
                not 1 <= int(batch) < 2**31:
            raise ValueError(f"initial_state: batch must be an int in [1, 2^31), not "
                             f"{batch!r}")
        return np.zeros((int(batch), self._state_size), np.float32)

    def act(self, observations: ObservationsIn, deterministic: bool = False, *,
            counter: IntLike | None = None, stream_offset: IntLike = 0,
            state: npt.NDArray[np.float32] | None = None,
            reset: npt.ArrayLike | None = None) -> Actions:
        """Actions for a batch of observations (int32 for discrete, float32 for a box;
        box actions are not clipped). Sampling draws row i from the stream
        (policy seed, stream_offset + i) at position ``counter``; without ``counter``
        each call takes the next position, so repeated calls draw afresh.

        ``state``: the recurrent state, a C-contiguous, writable float32 numpy array
        ``[batch, state_size]`` (``[state_size]`` for one observation), such as
        :meth:`initial_state` returns. The call reads it and replaces it in place with
        the next state (no copy is ever made, since a copy would lose the update):
        another dtype, shape or layout raises ``TypeError``/``ValueError``. Required
        when :attr:`state_size` > 0; a policy without a core takes ``None`` or a
        ``(batch, 0)`` array. ``reset``: optional bool or uint8 ``[batch]`` (a bool for
        one observation); row i of ``state`` is zeroed before acting where it is true,
        so an agent starting an episode acts from a fresh state. A vec env's
        :attr:`VecEnv.reset_steps` can be passed as it is."""
        return self._act(observations, deterministic, counter, stream_offset, False,
                         state, reset)[0]

    def act_with_info(self, observations: ObservationsIn, deterministic: bool = False, *,
                      counter: IntLike | None = None, stream_offset: IntLike = 0,
                      state: npt.NDArray[np.float32] | None = None,
                      reset: npt.ArrayLike | None = None
                      ) -> tuple[Actions, npt.NDArray[np.float32] | float,
                                 npt.NDArray[np.float32] | float]:
        """(actions, log_probs, values) for a batch, as :meth:`act` (``state`` and
        ``reset`` included)."""
        return self._act(observations, deterministic, counter, stream_offset, True,
                         state, reset)[:3]

    def forward(self, observations: ObservationsIn, *,
                state: npt.NDArray[np.float32] | None = None,
                reset: npt.ArrayLike | None = None
                ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | float]:
        """(outputs, values) for a batch: the head's raw outputs, float32
        ``[batch, n]`` (the categorical logits, the Gaussian means or the Q-values; what
        an exported policy's ``forward`` gives, doc/export.md) and the values
        ``[batch]``. One observation gives ``([n], float)``. ``state`` and ``reset``
        as in :meth:`act`, which it is, greedily (the state moves on)."""
        r = self._act(observations, True, 0, 0, True, state, reset, outputs=True)
        return r[3], r[2]

    def export(self, path: PathArg, format: str = "onnx", *, weights: str = "float32",
               probe: bool = False) -> None:
        """Write the acting path for use without the library (frl_policy_export).
        ``format="onnx"``: an ONNX model at ``path``; ``format="c"``: C99 source
        ``path.h`` and ``path.c`` (the last part of ``path`` names the symbols), with
        ``weights="int8"`` for quantised weights and ``probe=True`` for
        ``path_probe.c``, a latency probe; both are C options, which the library refuses
        (:class:`fastrl.Error`, ``ERR_INVALID_ARGUMENT``) with ``format="onnx"``.
        doc/export.md explains the outputs."""
        # bool(probe) would read "no" or "false" as True and write a probe never asked for.
        if not isinstance(probe, (bool, np.bool_)):
            raise TypeError(f"Policy.export: probe must be True or False, not "
                            f"{type(probe).__name__} {probe!r}")
        cfg = as_config({"export.format": format, "export.weights": weights,
                         "export.probe": bool(probe)}, what="export options")
        p = _lib.fspath(path)  # first: its __fspath__ may close the policy
        _lib.check(_lib.lib().policy_export(self._ptr, p, cfg._ptr), "Policy.export")

    def _state_arg(self, state: object, batch: int, single: bool) -> int | None:
        """The address of the caller's state array (None for no state), checked."""
        size = self._state_size
        if state is None:
            if size:
                raise TypeError(
                    f"act: this policy is recurrent (state_size {size}) and needs its "
                    f"state: pass state=policy.initial_state({batch}) (zeros: fresh "
                    "agents) and pass the same array again on each later call, which "
                    "updates it in place")
            return None
        if not isinstance(state, np.ndarray):
            raise TypeError(f"act: state must be a numpy.ndarray (float32 [batch, "
                            f"state_size], e.g. policy.initial_state(batch)), not "
                            f"{type(state).__name__}")
        if state.dtype != np.float32:
            raise TypeError(f"act: state must have dtype float32, not {state.dtype} (it "
                            "is updated in place, so it is never converted)")
        shapes = [(batch, size)] + ([(size,)] if single else [])
        if state.shape not in shapes:
            raise ValueError(f"act: state of shape {state.shape}; expected "
                             f"{' or '.join(map(str, shapes))} ([batch, state_size]; "
                             "policy.initial_state(batch) makes one)")
        if not state.flags.c_contiguous:
            raise ValueError("act: state must be C-contiguous (it is updated in place, so "
                             "it is never copied): use a contiguous array such as "
                             "policy.initial_state(batch)")
        if not state.flags.writeable:
            raise ValueError("act: state is read-only; act updates it in place")
        return state.ctypes.data if size else None

    @staticmethod
    def _reset_arg(reset: npt.ArrayLike | None, batch: int,
                   single: bool) -> npt.NDArray[np.uint8] | None:
        """reset as a C-contiguous uint8 [batch] array (a view of a bool or uint8 array
        where possible; a small copy otherwise, since it is only read), or None."""
        if reset is None:
            return None
        r = np.asarray(reset)
        if single and r.shape == ():
            r = r.reshape(1)
        if r.dtype.kind not in "biu":
            raise TypeError(f"act: reset must be bool or uint8 [batch], not {r.dtype}")
        if r.shape != (batch,):
            raise ValueError(f"act: reset of shape {r.shape}; expected ({batch},)")
        if r.dtype == np.bool_ or r.dtype == np.uint8:
            return np.ascontiguousarray(r).view(np.uint8)
        return (r != 0).view(np.uint8)

    def _observation_rows(self, observations: Any) -> tuple[npt.NDArray[Any], bool]:
        """``(obs, single)``: observations as the library reads them (a mixed space's
        dict joined into rows, images as uint8 and nothing else), and whether they were
        one observation."""
        if self._mixed and not isinstance(observations, np.ndarray):
            # a dict of image and vector becomes the library's rows (uint8 arrays of
            # whole rows, as the vec env and ring hold them, are taken as they are)
            observations = spaces.join_rows(observations, self.observation_space,
                                            "act")[0]
        kind = np.asarray(observations).dtype.kind
        if kind not in "biuf":  # complex would lose its imaginary part without a word
            raise TypeError(f"act: observations must be numbers, not "
                            f"{np.asarray(observations).dtype}")
        if self._obs_dtype == np.uint8 and np.asarray(observations).dtype != np.uint8:
            raise TypeError(f"act: this policy reads images: pass uint8 pixels, not "
                            f"{np.asarray(observations).dtype}")
        # one observation keeps its own shape (an int for a Discrete space: ()), which
        # ascontiguousarray would make 1-D; a number is also one observation of a
        # Box of shape (1,)
        shape = np.shape(observations)
        single = shape == self._obs_shape or (shape == () and self._obs_shape == (1,))
        if self._obs_shape == ():  # discrete indices (a box has rank >= 1)
            spaces.check_whole(observations, "act")
        return np.ascontiguousarray(observations, dtype=self._obs_dtype), single

    # (actions, log_probs, values, outputs): the last three None unless asked for (info,
    # outputs), as the public methods say
    def _act(self, observations: ObservationsIn, deterministic: bool,
             counter: IntLike | None, stream_offset: IntLike, info: bool,
             state: npt.NDArray[np.float32] | None = None,
             reset: npt.ArrayLike | None = None, outputs: bool = False
             ) -> tuple[Any, Any, Any, Any]:
        ptr = self._ptr
        # held through the call: converting the arguments runs their Python code (an
        # __array__), and a close() there must not destroy the policy under the call
        held = self._h  # noqa: F841
        obs, single = self._observation_rows(observations)
        if single:
            obs = obs.reshape((1,) + self._obs_shape)
        elif obs.ndim < 1 or obs.shape[1:] != self._obs_shape:
            raise Error(Status.ERR_SIZE, f"act: observations of shape {obs.shape}; expected "
                        f"[batch, {', '.join(map(str, self._obs_shape))}] or one "
                        f"observation of shape {self._obs_shape}")
        batch = obs.shape[0]
        if batch >= 2**31:
            raise Error(Status.ERR_RANGE, f"act: batch {batch} is too large (< 2^31)")
        state_ptr = self._state_arg(state, batch, single)
        reset_u8 = self._reset_arg(reset, batch, single)
        counter, owned = stream_position(self, counter, stream_offset)
        actions = np.empty((batch,) + self._act_shape,
                           np.int32 if self._discrete else np.float32)
        args = _lib.new_table(_lib.ActArgs)
        args.batch = batch
        args.observation_width = int(np.prod(obs.shape[1:], dtype=np.int64))
        args.action_width = int(np.prod(self._act_shape, dtype=np.int64))
        args.observations = obs.ctypes.data
        args.actions = actions.ctypes.data
        # Any: arrays where info (outputs) asks for them, which the returns below follow
        logp: Any
        vals: Any
        outs: Any
        logp = vals = None
        if info:
            logp = np.empty(batch, np.float32)
            vals = np.empty(batch, np.float32)
            args.log_probs = logp.ctypes.data
            args.values = vals.ctypes.data
        outs = None
        if outputs:
            outs = np.empty((batch, self._num_outputs), np.float32)
            args.outputs = outs.ctypes.data
        args.deterministic = 1 if deterministic else 0
        args.stream_offset = int(stream_offset)
        args.counter = int(counter)
        args.state = state_ptr
        args.state_width = self._state_size
        if reset_u8 is not None:
            args.reset = reset_u8.ctypes.data
        _lib.check(_lib.lib().policy_act(ptr, ctypes.byref(args)), "act")
        self._counter += owned
        if single:
            a = actions[0]
            a = int(a) if self._discrete else a
            return (a, (float(logp[0]) if info else None), (float(vals[0]) if info else None),
                    (outs[0] if outputs else None))
        return actions, logp, vals, outs

    def save(self, path: PathArg) -> None:
        """Write the policy to path (atomic: a crash leaves the old file or the new)."""
        p = _lib.fspath(path)  # first: its __fspath__ may close the policy
        _lib.check(_lib.lib().policy_save(self._ptr, p), "Policy.save")

    def __repr__(self) -> str:
        if self._h is None:
            return "<fastrl.Policy closed>"
        return (f"<fastrl.Policy {self.observation_space} -> {self.action_space}, "
                f"{_lib.lib().policy_num_parameters(self._h.ptr)} parameters>")
