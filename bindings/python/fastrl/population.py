"""Population: P members of one policy's architecture, acting and evaluated in batches
(frl_population; doc/python.md, "Populations and ask/tell")."""

from __future__ import annotations

import ctypes
import typing
from typing import TYPE_CHECKING

import numpy as np
# at run time too: get_type_hints(PopulationEvaluation) resolves its fields' types
import numpy.typing as npt

from . import _lib
from ._handle import Closable, Handle, checked_int, in_flight, view
from ._lib import Error, Status
from .policy import Policy, stream_position

if TYPE_CHECKING:
    from typing import Any

    from ._typing import Actions, IntLike, ObservationsIn
    from .env import VecEnv
    from .runtime import Runtime

__all__ = ["Population", "PopulationEvaluation"]


class PopulationEvaluation(typing.NamedTuple):
    """What :meth:`Population.evaluate` measured, per member."""

    returns: npt.NDArray[np.float64]  # [P]: mean return over the member's episodes
    steps: npt.NDArray[np.int64]      # [P]: env steps the member took
    lengths: npt.NDArray[np.float64]  # [P]: mean episode length
    env_steps: int                    # the episodes' steps in all (steps.sum())


class Population(Closable):
    """``members`` copies of ``policy``'s acting parameters (``frl_population``).

    The members' parameters are one float32 block ``[members, member_size]``:
    :attr:`parameters` is a writable numpy **view** of it (no copy), so an optimiser can
    write a generation straight into it (``evo.ask(out=pop.parameters)``). A member's row
    holds what the policy's acting path reads (its trunk and actor, a prefix of its
    parameter vector); the critic, a Gaussian's log-std and the observation normaliser
    stay the policy's, shared by every member. Every member starts as the policy's own
    weights. Recurrent policies are refused (``ERR_UNSUPPORTED``).

    :meth:`act` acts for rows of different members in one call; :meth:`evaluate` runs
    every member's episodes on a vec env; :meth:`copy_to_policy` makes a policy act,
    save and export as one member. The population keeps its policy alive and acts with
    it, so it refuses to act while a trainer trains that policy.
    """

    def __init__(self, policy: Policy, members: IntLike) -> None:
        if not isinstance(policy, Policy):
            raise TypeError(f"Population: policy must be a fastrl.Policy, not "
                            f"{type(policy).__name__}")
        members = checked_int(members, "Population: members", 1, 2**31)
        L = _lib.lib()
        ptr = ctypes.c_void_p()
        _lib.check(L.population_create(ctypes.byref(ptr), policy._ptr, members),
                   "Population")
        # The population borrows the policy (its normaliser, head and runtime): the
        # policy's handle is released only after the population is destroyed.
        h = Handle(ptr.value, L.population_destroy, "population", deps=[policy._h])
        self._h = h
        self._policy = policy
        self._counter = 0
        self.members = int(L.population_members(h.ptr))
        self.member_size = int(L.population_member_size(h.ptr))
        self._params = view(L.population_parameters(h.ptr), (self.members, self.member_size),
                            np.float32, h, readonly=False)

    @property
    def _ptr(self) -> int | None:
        if self._h is None:
            raise Error(Status.ERR_STATE, "the population is closed")
        busy = self._policy._busy
        if busy is not None and busy():
            raise Error(Status.ERR_STATE, "the trainer is training this population's "
                        "policy: use the population between Trainer.train calls")
        return self._h.ptr

    @property
    def policy(self) -> Policy:
        """The policy whose architecture, normaliser and head the members use."""
        return self._policy

    @property
    def parameters(self) -> npt.NDArray[np.float32]:
        """The members' parameters, a writable float32 view ``[members, member_size]``
        of the library's block (row i is member i). Writing it changes the members at
        once; it stays valid (and keeps the population alive) while it lives."""
        if self._h is None:
            raise Error(Status.ERR_STATE, "the population is closed")
        return self._params

    def copy_to_policy(self, member: IntLike, policy: Policy) -> None:
        """Write member's parameters into ``policy`` (of the same architecture), and with
        ``policy.obs_norm`` the population's observation statistics, so that it then acts,
        evaluates, saves and exports as that member."""
        ptr = self._ptr
        if not isinstance(policy, Policy):
            raise TypeError(f"copy_to_policy: policy must be a fastrl.Policy, not "
                            f"{type(policy).__name__}")
        member = checked_int(member, "copy_to_policy: member", -(2**31), 2**31)
        _lib.check(_lib.lib().population_copy_to_policy(ptr, member, policy._ptr),
                   "copy_to_policy")

    def act(self, observations: ObservationsIn, members: npt.ArrayLike,
            deterministic: bool = False, *, counter: IntLike | None = None,
            stream_offset: IntLike = 0) -> Actions:
        """Actions for a batch of observations ``[B, *obs_shape]``, row i acted by
        member ``members[i]`` (an int array ``[B]``, or one int for every row): int32
        ``[B]`` for a discrete action space, float32 ``[B, *action_shape]`` for a box (not
        clipped). One observation with one member gives one action. Row i's action is
        bit-identical to ``Policy.act`` of a policy holding that member's parameters,
        with the same ``counter`` and row (sampling: stream ``stream_offset + i``);
        without ``counter`` each call takes the next position."""
        ptr = self._ptr
        held = self._h  # noqa: F841  # through the call, as in Policy.act
        pol = self._policy
        obs_shape = pol._obs_shape
        obs, single = pol._observation_rows(observations)  # as Policy.act reads them
        if single:
            obs = obs.reshape((1,) + obs_shape)
        elif obs.ndim < 1 or obs.shape[1:] != obs_shape:
            raise Error(Status.ERR_SIZE, f"act: observations of shape {obs.shape}; expected "
                        f"[batch, {', '.join(map(str, obs_shape))}] or one observation of "
                        f"shape {obs_shape}")
        batch = obs.shape[0]
        if not 1 <= batch < 2**31:
            raise Error(Status.ERR_RANGE, f"act: batch {batch} is outside [1, 2^31)")
        mem = np.asarray(members)
        if mem.dtype == np.bool_ or mem.dtype.kind not in "iu":
            raise TypeError(f"act: members must be ints (the member of each row), not "
                            f"{mem.dtype}")
        if mem.shape == ():
            mem = np.broadcast_to(mem, (batch,))
        elif single:
            raise Error(Status.ERR_SIZE, f"act: one observation takes one int member, not "
                        f"members of shape {mem.shape}")
        elif mem.shape != (batch,):
            raise Error(Status.ERR_SIZE, f"act: members of shape {mem.shape}; expected "
                        f"({batch},) (one per row) or one int")
        if mem.size and (mem.min() < 0 or mem.max() >= self.members):
            row = int(np.flatnonzero((mem < 0) | (mem >= self.members))[0])
            raise Error(Status.ERR_RANGE, f"act: row {row} names member {int(mem[row])}, "
                        f"outside [0, {self.members})")
        mem = np.ascontiguousarray(mem, dtype=np.int32)
        counter, owned = stream_position(self, counter, stream_offset)
        actions: npt.NDArray[Any] = np.empty((batch,) + pol._act_shape,
                                             np.int32 if pol._discrete else np.float32)
        args = _lib.new_table(_lib.PopulationActArgs)
        args.batch = batch
        args.observations = obs.ctypes.data
        args.members = mem.ctypes.data
        args.actions = actions.ctypes.data
        args.deterministic = 1 if deterministic else 0
        args.stream_offset = int(stream_offset)
        args.counter = int(counter)
        args.observation_width = int(np.prod(obs_shape, dtype=np.int64))
        args.action_width = int(np.prod(pol._act_shape, dtype=np.int64))
        _lib.check(_lib.lib().population_act(ptr, ctypes.byref(args)), "act")
        self._counter += owned
        if single:
            return int(actions[0]) if pol._discrete else actions[0]
        return actions

    def evaluate(self, env: str | VecEnv, episodes: IntLike = 1, *,
                 deterministic: bool = True, seed: IntLike | None = 0,
                 max_episode_steps: IntLike = 0, update_obs_norm: bool = False,
                 num_envs: IntLike | None = None, runtime: Runtime | None = None,
                 max_steps: IntLike = 10_000_000, **options: Any) -> PopulationEvaluation:
        """Run ``episodes`` episodes of every member on ``env`` (a :class:`VecEnv`,
        Python envs included, or a built-in id: a vec env of ``num_envs``, default
        ``min(members * episodes, 64)``, made with ``options``), by the library's
        ``frl_population_evaluate``: each env takes the next pending (member, episode)
        when its episode ends, and only the running episodes go through inference.

        Returns a :class:`PopulationEvaluation` ``(returns, steps, lengths,
        env_steps)``: per member the mean return (float64 ``[P]``), the env steps
        (int64 ``[P]``) and the mean episode length (float64 ``[P]``), and the steps in
        all. Greedy actions by default; box actions are clipped to the env's bounds.
        The vec env is reset from ``seed`` first (None: drawn from the VecEnv's
        generator). ``max_episode_steps`` (0: the env's own limit) cuts episodes
        shorter. ``update_obs_norm`` merges every observation acted on into the
        policy's normaliser (``policy.obs_norm``), as OpenAI-ES does, and the policy acts
        with them once the call succeeds. More than ``max_steps`` env steps in all (0: no
        limit) without finishing is ``Error`` ``ERR_RANGE``: episodes that never end."""
        from .env import VecEnv, _check_seed, _eval_vec_env
        self._ptr  # closed or busy: refused before anything is made
        episodes = checked_int(episodes, "evaluate: episodes", 1, 2**31)
        max_episode_steps = checked_int(max_episode_steps, "evaluate: max_episode_steps", 0,
                                        2**63)
        max_steps = checked_int(max_steps, "evaluate: max_steps", 0, 2**63)
        if seed is not None:
            seed = _check_seed(seed)
        own = not isinstance(env, VecEnv)
        if own:
            # 0 is refused by VecEnv (ERR_RANGE), not taken as "the default"
            n = num_envs if num_envs is not None else min(self.members * episodes, 64)
            venv = _eval_vec_env(env, n, runtime,  # type: ignore[arg-type]  # env: an id
                                 self._policy._runtime, options, "Population.evaluate")
        else:
            if num_envs is not None or runtime is not None or options:
                raise Error(Status.ERR_INVALID_ARGUMENT, "evaluate: num_envs, runtime and "
                            "options make a vec env of a built-in id; this one is given")
            venv = env  # type: ignore[assignment]  # not own: a VecEnv
            venv._check_writable("evaluate")
        try:
            P = self.members
            returns = np.empty(P, np.float64)
            steps = np.empty(P, np.int64)
            lengths = np.empty(P, np.float64)
            total = ctypes.c_int64()
            # the pointer after making the vec env (its options' code may close us), held
            # through the call (a close() from an env lets go), and left alone by an
            # interpreter exit while a daemon thread runs it
            ptr = self._ptr
            with in_flight("Population.evaluate", (self._h, venv._h)), \
                    venv._admitted("evaluate") as call:  # refused: the generator is not drawn
                venv._flags_tell_resets = False  # its steps may fail (see VecEnv._narrow_actions)
                if seed is None:
                    seed = int(venv.np_random.integers(0, 2**63))
                args = _lib.new_table(_lib.PopulationEvalArgs, episodes=episodes,
                                      deterministic=1 if deterministic else 0, seed=seed,
                                      max_episode_steps=max_episode_steps,
                                      returns=returns.ctypes.data, steps=steps.ctypes.data,
                                      lengths=lengths.ctypes.data,
                                      update_obs_norm=1 if update_obs_norm else 0,
                                      max_steps=max_steps)
                st = _lib.lib().population_evaluate(ptr, venv._ptr, ctypes.byref(args),
                                                    ctypes.byref(total))
            if st:
                venv._fail(st, "evaluate", call)  # a Python env's own exception, if any
            return PopulationEvaluation(returns, steps, lengths, int(total.value))
        finally:
            if own:
                venv.close()

    def close(self) -> None:
        """Let go of the population: destroyed once :attr:`parameters` views are gone."""
        super().close()
        self._params = None  # type: ignore[assignment]  # read only while open

    def __len__(self) -> int:
        return self.members

    def __repr__(self) -> str:
        if self._h is None:
            return "<fastrl.Population closed>"
        return (f"<fastrl.Population {self.members} members x {self.member_size} "
                f"parameters>")
