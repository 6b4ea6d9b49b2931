"""Policy: act on numpy batches, save, load."""

import ctypes

import numpy as np

from . import _lib, spaces
from ._handle import Handle
from ._lib import Error, Status
from .config import as_config
from .runtime import runtime_for

__all__ = ["Policy"]


class Policy:
    """A network mapping observations to an action distribution and a value.

    ``Policy(observation_space, action_space, config)`` makes fresh weights from the
    ``policy.*`` keys (seeded by the runtime's seed); :meth:`load` reads a file written
    by :meth:`save` or a trainer checkpoint; ``Trainer.policy`` is the trainer's own.
    :meth:`act` takes a batch ``[B, *obs_shape]`` (or one observation) and returns the
    actions; :meth:`act_with_info` also returns log-probabilities and values.
    """

    def __init__(self, observation_space, action_space, config=None, *, runtime=None,
                 **options):
        rt, options = runtime_for(runtime, options, "Policy")
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
    def load(cls, path, *, runtime=None):
        """A policy from a policy file or a trainer checkpoint."""
        rt, _ = runtime_for(runtime, {}, "Policy.load")
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.policy_load(ctypes.byref(ptr), rt.handle.ptr,
                                 _lib.fspath(path)), "Policy.load")
        self = cls.__new__(cls)
        self._setup(Handle(ptr.value, L.policy_destroy, "policy", deps=[rt.handle]), rt)
        return self

    @classmethod
    def _borrowed(cls, ptr, owner, runtime, busy):
        self = cls.__new__(cls)
        self._setup(Handle(ptr, None, "policy (borrowed)", deps=[owner]), runtime)
        self._busy = busy
        return self

    def _setup(self, handle, runtime):
        L = _lib.lib()
        self._h = handle
        self._runtime = runtime
        self._busy = None
        self._counter = 0
        p = handle.ptr
        self.observation_space = spaces.from_c(L.policy_observation_space(p))
        self.action_space = spaces.from_c(L.policy_action_space(p))
        self._obs_shape = tuple(self.observation_space.shape)
        self._discrete = L.space_get_kind(L.policy_action_space(p)) == spaces.DISCRETE
        self._act_shape = () if self._discrete else tuple(self.action_space.shape)

    @property
    def _ptr(self):
        if self._h is None:
            raise Error(Status.ERR_STATE, "the policy is closed")
        if self._busy is not None and self._busy():
            raise Error(Status.ERR_STATE, "the trainer is training this policy: use it "
                        "between Trainer.train calls")
        return self._h.ptr

    @property
    def num_parameters(self):
        return _lib.lib().policy_num_parameters(self._ptr)

    @property
    def version(self):
        """Learner updates that changed the weights."""
        return _lib.lib().policy_version(self._ptr)

    def act(self, observations, deterministic=False, *, counter=None, stream_offset=0):
        """Actions for a batch of observations (int32 for discrete, float32 for a box;
        box actions are not clipped). Sampling draws row i from the stream
        (policy seed, stream_offset + i) at position ``counter``; without ``counter``
        each call takes the next position, so repeated calls draw afresh."""
        return self._act(observations, deterministic, counter, stream_offset, False)[0]

    def act_with_info(self, observations, deterministic=False, *, counter=None,
                      stream_offset=0):
        """(actions, log_probs, values) for a batch, as :meth:`act`."""
        return self._act(observations, deterministic, counter, stream_offset, True)

    def _act(self, observations, deterministic, counter, stream_offset, info):
        ptr = self._ptr
        obs = np.ascontiguousarray(observations, dtype=np.float32)
        single = obs.shape == self._obs_shape
        if single:
            obs = obs.reshape((1,) + self._obs_shape)
        elif obs.ndim < 1 or obs.shape[1:] != self._obs_shape:
            raise Error(Status.ERR_SIZE, f"act: observations of shape {obs.shape}; expected "
                        f"[batch, {', '.join(map(str, self._obs_shape))}] or one "
                        f"observation of shape {self._obs_shape}")
        batch = obs.shape[0]
        if batch >= 2**31:
            raise Error(Status.ERR_RANGE, f"act: batch {batch} is too large (< 2^31)")
        if counter is None:
            counter = self._counter
            self._counter += 1
        for name, v in (("counter", counter), ("stream_offset", stream_offset)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not \
                    0 <= int(v) < 2**64:
                raise Error(Status.ERR_RANGE, f"act: {name} must be an int in [0, 2^64)")
        actions = np.empty((batch,) + self._act_shape,
                           np.int32 if self._discrete else np.float32)
        args = _lib.new_table(_lib.ActArgs)
        args.batch = batch
        args.observation_width = int(np.prod(obs.shape[1:], dtype=np.int64))
        args.action_width = int(np.prod(self._act_shape, dtype=np.int64))
        args.observations = obs.ctypes.data
        args.actions = actions.ctypes.data
        logp = vals = None
        if info:
            logp = np.empty(batch, np.float32)
            vals = np.empty(batch, np.float32)
            args.log_probs = logp.ctypes.data
            args.values = vals.ctypes.data
        args.deterministic = 1 if deterministic else 0
        args.stream_offset = int(stream_offset)
        args.counter = int(counter)
        _lib.check(_lib.lib().policy_act(ptr, ctypes.byref(args)), "act")
        if single:
            a = actions[0]
            a = int(a) if self._discrete else a
            return a, (float(logp[0]) if info else None), (float(vals[0]) if info else None)
        return actions, logp, vals

    def save(self, path):
        """Write the policy to path (atomic: a crash leaves the old file or the new)."""
        _lib.check(_lib.lib().policy_save(self._ptr, _lib.fspath(path)), "Policy.save")

    def close(self):
        self._h = None

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._h is None:
            return "<fastrl.Policy closed>"
        return (f"<fastrl.Policy {self.observation_space} -> {self.action_space}, "
                f"{_lib.lib().policy_num_parameters(self._h.ptr)} parameters>")
