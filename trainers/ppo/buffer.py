"""The PPO rollout buffer: preallocated arrays filled trajectory by trajectory.

Each field is one array with samples on axis 0; a trajectory is copied in with one slice
assignment per field. For the update the whole buffer becomes tensors once, and each
minibatch is an index into them (:meth:`PPOBatch.take`), so there is no per-sample Python.
Fields are declared (``RolloutArrays``), never looked up by strings built at run time.
Reward streams are columns (``[B, S]``, one per reward signal, in signal order).

A recurrent policy trains on sequences of ``sequence_length`` steps, as ML-Agents cuts them:
each trajectory is split from its start into sequences, the last one padded at its end to the
full length (padding rows are zeros, with every action allowed and ``loss_masks`` False, so
losses ignore them); a sequence starts from the memories stored at its first row (the
actor's, as the policy was fed when acting, and the critic's, from the trainer's evaluation).
Sequences never straddle two trajectories, and minibatches take whole sequences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import attrs
import numpy as np
import torch
from torch import Tensor

from processors.trajectory import Trajectory
from trainers.ppo.maths import normalized_advantages
from trainers.reward_signals.base import SignalBatch


class PPOBatch(NamedTuple):
    """Samples for the PPO loss; ``[B]`` samples on axis 0 of every tensor, ``S`` streams."""

    obs: tuple[Tensor, ...]  # one [B, *shape] per sensor
    action_masks: Tensor  # [B, m] bool, True = allowed
    continuous_actions: Tensor  # [B, c]
    discrete_actions: Tensor  # [B, b] int64
    old_log_probs: Tensor  # [B, c + b] per continuous dimension, then per discrete branch
    advantages: Tensor  # [B] summed over reward signals, normalised over the buffer (unless per minibatch)
    returns: Tensor  # [B, S] lambda-returns per reward signal
    loss_masks: Tensor | None  # [B] bool, False on padding rows (None: no padding, not recurrent)
    memories: Tensor  # [B, k] actor memory (read at each sequence's first row; [B, 0] without)
    critic_memories: Tensor  # [B, k'] critic memory, likewise
    next_obs: tuple[Tensor, ...]  # one [B, *shape] per sensor, kept for reward signals that train (else empty)
    dones: Tensor  # [B] float32, 1 where the agent's episode ended with the step (reward signals' input)

    def with_normalized_advantages(self) -> PPOBatch:
        """This batch with its advantages normalised over its own real rows (per minibatch)."""
        return self._replace(advantages=normalized_advantages(self.advantages, self.loss_masks))

    def take(self, index: Tensor) -> PPOBatch:
        """The samples at ``index`` ([B'] int64)."""
        return PPOBatch(
            next_obs=tuple(o[index] for o in self.next_obs),
            obs=tuple(o[index] for o in self.obs),
            action_masks=self.action_masks[index],
            continuous_actions=self.continuous_actions[index],
            discrete_actions=self.discrete_actions[index],
            old_log_probs=self.old_log_probs[index],
            advantages=self.advantages[index],
            returns=self.returns[index],
            loss_masks=None if self.loss_masks is None else self.loss_masks[index],
            memories=self.memories[index],
            critic_memories=self.critic_memories[index],
            dones=self.dones[index],
        )

    def signal_batch(self) -> SignalBatch:
        """What a reward signal trains on (needs the buffer's ``next_obs``)."""
        return SignalBatch(
            self.obs, self.next_obs, self.continuous_actions, self.discrete_actions, self.dones, self.loss_masks
        )


@attrs.define
class RolloutArrays:
    """The buffer's storage (capacity rows each); ``obs`` arrays appear with the first
    trajectory, which fixes their dtype (uint8 images stay uint8)."""

    obs: list[np.ndarray | None]
    next_obs: list[np.ndarray | None]  # stored only for reward signals that train
    action_masks: np.ndarray  # [N, m] bool
    continuous_actions: np.ndarray  # [N, c] float32
    discrete_actions: np.ndarray  # [N, b] int64
    log_probs: np.ndarray  # [N, c + b] float32
    advantages: np.ndarray  # [N] float32
    returns: np.ndarray  # [N, S] float32
    loss_masks: np.ndarray  # [N] bool, False on padding rows
    memories: np.ndarray  # [N, k] float32 actor memories
    critic_memories: np.ndarray  # [N, k'] float32
    dones: np.ndarray  # [N] float32

    @staticmethod
    def allocate(
        capacity: int,
        n_sensors: int,
        continuous_size: int,
        discrete_branches: Sequence[int],
        streams: int,
        memory_sizes: tuple[int, int] = (0, 0),
    ) -> RolloutArrays:
        return RolloutArrays(
            obs=[None] * n_sensors,
            next_obs=[None] * n_sensors,
            action_masks=np.zeros((capacity, int(sum(discrete_branches))), bool),
            continuous_actions=np.zeros((capacity, continuous_size), np.float32),
            discrete_actions=np.zeros((capacity, len(discrete_branches)), np.int64),
            log_probs=np.zeros((capacity, continuous_size + len(discrete_branches)), np.float32),
            advantages=np.zeros(capacity, np.float32),
            returns=np.zeros((capacity, streams), np.float32),
            loss_masks=np.zeros(capacity, bool),
            memories=np.zeros((capacity, memory_sizes[0]), np.float32),
            critic_memories=np.zeros((capacity, memory_sizes[1]), np.float32),
            dones=np.zeros(capacity, np.float32),
        )

    def grown(self, capacity: int, size: int) -> RolloutArrays:
        """A copy with room for ``capacity`` rows holding the first ``size`` rows of this one."""

        def grow(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), array.dtype)
            bigger[:size] = array[:size]
            return bigger

        return RolloutArrays(
            obs=[None if o is None else grow(o) for o in self.obs],
            next_obs=[None if o is None else grow(o) for o in self.next_obs],
            action_masks=grow(self.action_masks),
            continuous_actions=grow(self.continuous_actions),
            discrete_actions=grow(self.discrete_actions),
            log_probs=grow(self.log_probs),
            advantages=grow(self.advantages),
            returns=grow(self.returns),
            loss_masks=grow(self.loss_masks),
            memories=grow(self.memories),
            critic_memories=grow(self.critic_memories),
            dones=grow(self.dones),
        )


class UpdateBuffer:
    """Experience waiting for the next PPO update, with its advantages and returns.

    ``capacity`` is a first guess (buffer_size + time_horizon); it grows if needed.
    ``sequence_length`` > 1 or ``memory_sizes`` (actor, critic) > 0: the recurrent layout of
    the module docstring; its length counts padding rows, as ML-Agents' buffer does.
    """

    def __init__(
        self,
        obs_shapes: Sequence[tuple[int, ...]],
        continuous_size: int,
        discrete_branches: Sequence[int],
        streams: int,
        capacity: int,
        *,
        sequence_length: int = 1,
        memory_sizes: tuple[int, int] = (0, 0),
        next_obs: bool = False,
    ):
        self._obs_shapes = [tuple(s) for s in obs_shapes]
        self._keeps_next_obs = next_obs
        self._arrays = RolloutArrays.allocate(
            capacity, len(self._obs_shapes), continuous_size, discrete_branches, streams, memory_sizes
        )
        self._capacity = capacity
        self._size = 0
        self.sequence_length = int(sequence_length)
        self.recurrent = self.sequence_length > 1 or any(size > 0 for size in memory_sizes)

    def __len__(self) -> int:
        return self._size

    def clear(self) -> None:
        self._size = 0

    def append(
        self,
        trajectory: Trajectory,
        advantages: np.ndarray,
        returns: np.ndarray,
        critic_memories: np.ndarray | None = None,
    ) -> None:
        """Add one trajectory's T samples with their advantages [T] and per-signal returns
        ([T, S]); recurrent: padded to whole sequences, with the critic's
        memory at each sequence's start (``critic_memories`` [ceil(T / L), k'])."""
        t = trajectory.length
        length = self.sequence_length
        n = -(-t // length) * length if self.recurrent else t
        if self._size + n > self._capacity:
            self._capacity = max(self._size + n, 2 * self._capacity)
            self._arrays = self._arrays.grown(self._capacity, self._size)
        rows = slice(self._size, self._size + t)
        arrays = self._arrays
        for i, obs in enumerate(trajectory.obs):
            stored = arrays.obs[i]
            if stored is None:
                stored = arrays.obs[i] = np.zeros((self._capacity, *self._obs_shapes[i]), obs.dtype)
            stored[rows] = obs
            if self._keeps_next_obs:
                stored_next = arrays.next_obs[i]
                if stored_next is None:
                    stored_next = arrays.next_obs[i] = np.zeros((self._capacity, *self._obs_shapes[i]), obs.dtype)
                stored_next[self._size : self._size + t - 1] = obs[1:]
                stored_next[self._size + t - 1] = trajectory.next_obs[i]
        arrays.action_masks[rows] = trajectory.action_masks
        arrays.continuous_actions[rows] = trajectory.continuous_actions
        arrays.discrete_actions[rows] = trajectory.discrete_actions
        continuous_size = trajectory.continuous_log_probs.shape[1]
        arrays.log_probs[rows, :continuous_size] = trajectory.continuous_log_probs
        arrays.log_probs[rows, continuous_size:] = trajectory.discrete_log_probs
        arrays.advantages[rows] = advantages
        arrays.returns[rows] = returns
        arrays.dones[rows] = trajectory.done
        if self.recurrent:
            arrays.loss_masks[rows] = True
            arrays.memories[rows] = trajectory.memories
            padding = slice(self._size + t, self._size + n)
            for stored_obs in (*arrays.obs, *arrays.next_obs):
                if stored_obs is not None:
                    stored_obs[padding] = 0
            arrays.action_masks[padding] = True
            for array in (
                arrays.continuous_actions,
                arrays.discrete_actions,
                arrays.log_probs,
                arrays.advantages,
                arrays.returns,
                arrays.memories,
                arrays.dones,
            ):
                array[padding] = 0
            arrays.loss_masks[padding] = False
            if critic_memories is not None:
                arrays.critic_memories[self._size : self._size + n : length] = critic_memories
        self._size += n

    def to_batch(self, device: torch.device, normalize_advantages: bool = True) -> PPOBatch:
        """Everything in the buffer as tensors on ``device`` (advantages normalised to
        zero mean and unit variance over the buffer, as ML-Agents does, unless
        ``normalize_advantages`` is False: the update normalises each minibatch instead)."""
        n = self._size
        arrays = self._arrays
        advantages = arrays.advantages[:n]
        real = arrays.loss_masks[:n] if self.recurrent else None
        if normalize_advantages and n > 1:
            # over real rows only: padding is no experience (ML-Agents counts its zeros in)
            sample = advantages if real is None else advantages[real]
            advantages = (advantages - sample.mean()) / (sample.std() + 1e-10)
            if real is not None:
                advantages[~real] = 0

        def tensor(array: np.ndarray) -> Tensor:
            return torch.as_tensor(np.ascontiguousarray(array), device=device)

        return PPOBatch(
            obs=tuple(tensor(o[:n]) for o in arrays.obs if o is not None),
            action_masks=tensor(arrays.action_masks[:n]),
            continuous_actions=tensor(arrays.continuous_actions[:n]),
            discrete_actions=tensor(arrays.discrete_actions[:n]),
            old_log_probs=tensor(arrays.log_probs[:n]),
            advantages=tensor(advantages.astype(np.float32)),
            returns=tensor(arrays.returns[:n]),
            loss_masks=None if real is None else tensor(real),
            memories=tensor(arrays.memories[:n]),
            critic_memories=tensor(arrays.critic_memories[:n]),
            next_obs=tuple(tensor(o[:n]) for o in arrays.next_obs if o is not None),
            dones=tensor(arrays.dones[:n]),
        )
