"""The PPO rollout buffer: preallocated arrays filled trajectory by trajectory.

Each field is one array with samples on axis 0; a trajectory is copied in with one slice
assignment per field. For the update the whole buffer becomes tensors once, and each
minibatch is an index into them (:meth:`PPOBatch.take`), so there is no per-sample Python.
Fields are declared (``RolloutArrays``), never looked up by strings built at run time.
Reward streams are columns (``[B, S]``, one per reward signal, in signal order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import attrs
import numpy as np
import torch
from torch import Tensor

from processors.trajectory import Trajectory


class PPOBatch(NamedTuple):
    """Samples for the PPO loss; ``[B]`` samples on axis 0 of every tensor, ``S`` streams."""

    obs: tuple[Tensor, ...]  # one [B, *shape] per sensor
    action_masks: Tensor  # [B, m] bool, True = allowed
    continuous_actions: Tensor  # [B, c]
    discrete_actions: Tensor  # [B, b] int64
    old_log_probs: Tensor  # [B, c + b] per continuous dimension, then per discrete branch
    advantages: Tensor  # [B] summed over reward signals, normalised over the buffer
    returns: Tensor  # [B, S] lambda-returns per reward signal
    old_values: Tensor  # [B, S] value estimates when the data was collected

    def take(self, index: Tensor) -> PPOBatch:
        """The samples at ``index`` ([B'] int64)."""
        return PPOBatch(
            obs=tuple(o[index] for o in self.obs),
            action_masks=self.action_masks[index],
            continuous_actions=self.continuous_actions[index],
            discrete_actions=self.discrete_actions[index],
            old_log_probs=self.old_log_probs[index],
            advantages=self.advantages[index],
            returns=self.returns[index],
            old_values=self.old_values[index],
        )


@attrs.define
class RolloutArrays:
    """The buffer's storage (capacity rows each); ``obs`` arrays appear with the first
    trajectory, which fixes their dtype (uint8 images stay uint8)."""

    obs: list[np.ndarray | None]
    action_masks: np.ndarray  # [N, m] bool
    continuous_actions: np.ndarray  # [N, c] float32
    discrete_actions: np.ndarray  # [N, b] int64
    log_probs: np.ndarray  # [N, c + b] float32
    advantages: np.ndarray  # [N] float32
    returns: np.ndarray  # [N, S] float32
    values: np.ndarray  # [N, S] float32

    @staticmethod
    def allocate(
        capacity: int, n_sensors: int, continuous_size: int, discrete_branches: Sequence[int], streams: int
    ) -> RolloutArrays:
        return RolloutArrays(
            obs=[None] * n_sensors,
            action_masks=np.zeros((capacity, int(sum(discrete_branches))), bool),
            continuous_actions=np.zeros((capacity, continuous_size), np.float32),
            discrete_actions=np.zeros((capacity, len(discrete_branches)), np.int64),
            log_probs=np.zeros((capacity, continuous_size + len(discrete_branches)), np.float32),
            advantages=np.zeros(capacity, np.float32),
            returns=np.zeros((capacity, streams), np.float32),
            values=np.zeros((capacity, streams), np.float32),
        )

    def grown(self, capacity: int, size: int) -> RolloutArrays:
        """A copy with room for ``capacity`` rows holding the first ``size`` rows of this one."""

        def grow(array: np.ndarray) -> np.ndarray:
            bigger = np.zeros((capacity, *array.shape[1:]), array.dtype)
            bigger[:size] = array[:size]
            return bigger

        return RolloutArrays(
            obs=[None if o is None else grow(o) for o in self.obs],
            action_masks=grow(self.action_masks),
            continuous_actions=grow(self.continuous_actions),
            discrete_actions=grow(self.discrete_actions),
            log_probs=grow(self.log_probs),
            advantages=grow(self.advantages),
            returns=grow(self.returns),
            values=grow(self.values),
        )


class UpdateBuffer:
    """Experience waiting for the next PPO update, with its advantages and returns.

    ``capacity`` is a first guess (buffer_size + time_horizon); it grows if needed.
    """

    def __init__(
        self,
        obs_shapes: Sequence[tuple[int, ...]],
        continuous_size: int,
        discrete_branches: Sequence[int],
        streams: int,
        capacity: int,
    ):
        self._obs_shapes = [tuple(s) for s in obs_shapes]
        self._arrays = RolloutArrays.allocate(
            capacity, len(self._obs_shapes), continuous_size, discrete_branches, streams
        )
        self._capacity = capacity
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def clear(self) -> None:
        self._size = 0

    def append(self, trajectory: Trajectory, advantages: np.ndarray, returns: np.ndarray, values: np.ndarray) -> None:
        """Add one trajectory's T samples with their advantages [T] and per-signal returns and
        value estimates ([T, S])."""
        n = trajectory.length
        if self._size + n > self._capacity:
            self._capacity = max(self._size + n, 2 * self._capacity)
            self._arrays = self._arrays.grown(self._capacity, self._size)
        rows = slice(self._size, self._size + n)
        arrays = self._arrays
        for i, obs in enumerate(trajectory.obs):
            stored = arrays.obs[i]
            if stored is None:
                stored = arrays.obs[i] = np.zeros((self._capacity, *self._obs_shapes[i]), obs.dtype)
            stored[rows] = obs
        arrays.action_masks[rows] = trajectory.action_masks
        arrays.continuous_actions[rows] = trajectory.continuous_actions
        arrays.discrete_actions[rows] = trajectory.discrete_actions
        continuous_size = trajectory.continuous_log_probs.shape[1]
        arrays.log_probs[rows, :continuous_size] = trajectory.continuous_log_probs
        arrays.log_probs[rows, continuous_size:] = trajectory.discrete_log_probs
        arrays.advantages[rows] = advantages
        arrays.returns[rows] = returns
        arrays.values[rows] = values
        self._size += n

    def to_batch(self, device: torch.device, normalize_advantages: bool = True) -> PPOBatch:
        """Everything in the buffer as tensors on ``device`` (advantages normalised to
        zero mean and unit variance over the buffer, as ML-Agents does)."""
        n = self._size
        arrays = self._arrays
        advantages = arrays.advantages[:n]
        if normalize_advantages and n > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-10)

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
            old_values=tensor(arrays.values[:n]),
        )
