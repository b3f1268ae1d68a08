"""The PPO update buffer: preallocated arrays filled trajectory by trajectory.

Each field is one array with samples on axis 0; a trajectory is copied in with one slice
assignment per field. For the update the whole buffer becomes tensors once, and each
minibatch is an index into them (:class:`PPOBatch.take`), so there is no per-sample Python.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import torch
from torch import Tensor

from processors.trajectory import Trajectory


class PPOBatch(NamedTuple):
    """Samples for the PPO loss; ``[B]`` samples on axis 0 of every tensor."""

    obs: tuple[Tensor, ...]  # one [B, *shape] per sensor
    action_masks: Tensor  # [B, m] bool, True = allowed
    continuous_actions: Tensor  # [B, c]
    discrete_actions: Tensor  # [B, b] int64
    old_log_probs: Tensor  # [B, c + b] log-probability per continuous dim and discrete branch when collected
    advantages: Tensor  # [B] summed over reward signals, normalised over the buffer
    returns: dict[str, Tensor]  # reward signal -> [B] lambda-returns
    old_values: dict[str, Tensor]  # reward signal -> [B] value estimates when collected

    def take(self, index: Tensor) -> PPOBatch:
        """The samples at ``index`` ([B'] int64)."""
        return PPOBatch(
            obs=tuple(o[index] for o in self.obs),
            action_masks=self.action_masks[index],
            continuous_actions=self.continuous_actions[index],
            discrete_actions=self.discrete_actions[index],
            old_log_probs=self.old_log_probs[index],
            advantages=self.advantages[index],
            returns={k: v[index] for k, v in self.returns.items()},
            old_values={k: v[index] for k, v in self.old_values.items()},
        )


class UpdateBuffer:
    """Experience waiting for the next PPO update, with its advantages and returns.

    ``capacity`` is a first guess (buffer_size + time_horizon); it grows if needed.
    """

    def __init__(self, obs_shapes: Sequence[tuple[int, ...]], continuous_size: int, discrete_branches: Sequence[int],
                 stream_names: Sequence[str], capacity: int):
        self._obs_shapes = [tuple(s) for s in obs_shapes]
        self._stream_names = tuple(stream_names)
        mask_width = int(sum(discrete_branches))
        self._fields: dict[str, np.ndarray] = {
            "action_masks": np.zeros((capacity, mask_width), bool),
            "continuous_actions": np.zeros((capacity, continuous_size), np.float32),
            "discrete_actions": np.zeros((capacity, len(discrete_branches)), np.int64),
            "old_log_probs": np.zeros((capacity, continuous_size + len(discrete_branches)), np.float32),
            "advantages": np.zeros(capacity, np.float32),
        }
        for name in self._stream_names:
            self._fields[f"returns/{name}"] = np.zeros(capacity, np.float32)
            self._fields[f"values/{name}"] = np.zeros(capacity, np.float32)
        self._obs: list[np.ndarray | None] = [None] * len(self._obs_shapes)  # dtype from the first trajectory
        self._capacity = capacity
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def clear(self) -> None:
        self._size = 0

    def append(self, trajectory: Trajectory, advantages: np.ndarray, returns: dict[str, np.ndarray],
               values: dict[str, np.ndarray]) -> None:
        """Add one trajectory's T samples with their advantages [T] and per-signal returns
        and value estimates ({name: [T]})."""
        n = trajectory.length
        self._reserve(self._size + n)
        rows = slice(self._size, self._size + n)
        for i, obs in enumerate(trajectory.obs):
            if self._obs[i] is None:
                self._obs[i] = np.zeros((self._capacity, *self._obs_shapes[i]), obs.dtype)
            self._obs[i][rows] = obs
        fields = self._fields
        fields["action_masks"][rows] = trajectory.action_masks
        fields["continuous_actions"][rows] = trajectory.continuous_actions
        fields["discrete_actions"][rows] = trajectory.discrete_actions
        fields["old_log_probs"][rows, : trajectory.continuous_log_probs.shape[1]] = trajectory.continuous_log_probs
        fields["old_log_probs"][rows, trajectory.continuous_log_probs.shape[1] :] = trajectory.discrete_log_probs
        fields["advantages"][rows] = advantages
        for name in self._stream_names:
            fields[f"returns/{name}"][rows] = returns[name]
            fields[f"values/{name}"][rows] = values[name]
        self._size += n

    def to_batch(self, device: torch.device, normalize_advantages: bool = True) -> PPOBatch:
        """Everything in the buffer as tensors on ``device`` (advantages normalised to
        zero mean and unit variance over the buffer, as ML-Agents does)."""
        n = self._size
        fields = self._fields
        advantages = fields["advantages"][:n]
        if normalize_advantages and n > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-10)

        def tensor(array: np.ndarray) -> Tensor:
            return torch.as_tensor(np.ascontiguousarray(array), device=device)

        return PPOBatch(
            obs=tuple(tensor(o[:n]) for o in self._obs if o is not None),
            action_masks=tensor(fields["action_masks"][:n]),
            continuous_actions=tensor(fields["continuous_actions"][:n]),
            discrete_actions=tensor(fields["discrete_actions"][:n]),
            old_log_probs=tensor(fields["old_log_probs"][:n]),
            advantages=tensor(advantages.astype(np.float32)),
            returns={name: tensor(fields[f"returns/{name}"][:n]) for name in self._stream_names},
            old_values={name: tensor(fields[f"values/{name}"][:n]) for name in self._stream_names},
        )

    def _reserve(self, needed: int) -> None:
        if needed <= self._capacity:
            return
        capacity = max(needed, 2 * self._capacity)
        for name, array in self._fields.items():
            grown = np.zeros((capacity, *array.shape[1:]), array.dtype)
            grown[: self._size] = array[: self._size]
            self._fields[name] = grown
        for i, array in enumerate(self._obs):
            if array is not None:
                grown = np.zeros((capacity, *array.shape[1:]), array.dtype)
                grown[: self._size] = array[: self._size]
                self._obs[i] = grown
        self._capacity = capacity
