"""POCA's rollout buffer: PPO's (:class:`trainers.ppo.buffer.UpdateBuffer`) plus, per sample, the
baseline estimates and the group mates' observations, actions and presence.

Mates are stored padded to the most mates any stored sample had (``M``; columns beyond a
sample's mates are absent). As PPO's, every field is one preallocated array filled
trajectory by trajectory, and a minibatch is an index into the tensors of the whole buffer.
With memory, trajectories are cut into padded sequences as PPO's buffer cuts them (padding
rows have no mates), and the baseline's memory at each sequence's start is kept beside the
critic's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from processors.trajectory import Trajectory
from trainers.networks.sequences import padded_length
from trainers.poca.networks import GroupObservations
from trainers.ppo.buffer import PPOBatch, UpdateBuffer
from trainers.reward_signals.base import SignalBatch


class POCABatch(NamedTuple):
    """Samples for the POCA loss, ``[B]`` on axis 0."""

    agent: PPOBatch  # the agent's own samples, advantages, returns, old values, critic memories
    old_baselines: Tensor  # [B, S] baseline estimates when the data was collected
    baseline_memories: Tensor  # [B, k] the baseline's memory (read at each sequence's first row)
    group: GroupObservations  # the mates at each sample

    def with_normalized_advantages(self) -> POCABatch:
        """The agent's advantages normalised over these samples (``advantage_normalization: minibatch``)."""
        return self._replace(agent=self.agent.with_normalized_advantages())

    def signal_batch(self) -> SignalBatch:
        """The agent's samples as the reward signals read them."""
        return self.agent.signal_batch()

    def take(self, index: Tensor) -> POCABatch:
        group = self.group
        return POCABatch(
            agent=self.agent.take(index),
            old_baselines=self.old_baselines[index],
            baseline_memories=self.baseline_memories[index],
            group=GroupObservations(
                [o[index] for o in group.obs],
                group.present[index],
                group.continuous_actions[index],
                group.discrete_actions[index],
            ),
        )


class POCABuffer:
    """Experience waiting for the next POCA update (``capacity`` grows when needed)."""

    def __init__(
        self,
        obs_shapes: Sequence[tuple[int, ...]],
        continuous_size: int,
        discrete_branches: Sequence[int],
        streams: int,
        capacity: int,
        *,
        next_obs: bool = False,
        sequence_length: int = 1,
        memory_sizes: tuple[int, int] = (0, 0),
    ):
        self.agent = UpdateBuffer(
            obs_shapes,
            continuous_size,
            discrete_branches,
            streams,
            capacity,
            next_obs=next_obs,
            sequence_length=sequence_length,
            memory_sizes=memory_sizes,
        )
        self.sequence_length = int(sequence_length)
        self._critic_memory_size = memory_sizes[1]
        self._shapes = [tuple(s) for s in obs_shapes]
        self._c, self._b = continuous_size, len(discrete_branches)
        self._capacity = capacity
        self._mates = 0
        self._dtypes: list[np.dtype] | None = None
        self.baselines = np.zeros((capacity, streams), np.float32)
        self.baseline_memories = np.zeros((capacity, self._critic_memory_size), np.float32)
        self._allocate_mates(capacity, 0)

    def __len__(self) -> int:
        return len(self.agent)

    def clear(self) -> None:
        self.agent.clear()

    def _allocate_mates(self, capacity: int, mates: int) -> None:
        dtypes = self._dtypes or [np.dtype(np.float32)] * len(self._shapes)
        self.present = np.zeros((capacity, mates), bool)
        self.mate_obs = [np.zeros((capacity, mates, *shape), dtype) for shape, dtype in zip(self._shapes, dtypes)]
        self.mate_continuous = np.zeros((capacity, mates, self._c), np.float32)
        self.mate_discrete = np.zeros((capacity, mates, self._b), np.int64)

    def _grow(self, capacity: int, mates: int) -> None:
        size, old_mates = len(self), self._mates
        present, obs = self.present, self.mate_obs
        continuous, discrete = self.mate_continuous, self.mate_discrete
        baselines, baseline_memories = self.baselines, self.baseline_memories
        self._allocate_mates(capacity, mates)
        self.present[:size, :old_mates] = present[:size]
        for new, old in zip(self.mate_obs, obs):
            new[:size, :old_mates] = old[:size]
        self.mate_continuous[:size, :old_mates] = continuous[:size]
        self.mate_discrete[:size, :old_mates] = discrete[:size]
        self.baselines = np.zeros((capacity, baselines.shape[1]), np.float32)
        self.baselines[:size] = baselines[:size]
        self.baseline_memories = np.zeros((capacity, baseline_memories.shape[1]), np.float32)
        self.baseline_memories[:size] = baseline_memories[:size]
        self._capacity, self._mates = capacity, mates

    def append(
        self,
        trajectory: Trajectory,
        advantages: np.ndarray,
        returns: np.ndarray,
        baselines: np.ndarray,
        critic_memories: np.ndarray | None = None,
        baseline_memories: np.ndarray | None = None,
    ) -> None:
        """Add one trajectory's T samples with their advantages [T], returns and baselines
        ([T, S] each); with memory, the critic's and the baseline's memories at each
        sequence's start ([ceil(T / L), k] each)."""
        start, t = len(self), trajectory.length
        n = padded_length(t, self.sequence_length) if self.agent.recurrent else t
        mates = trajectory.groupmates
        width = 0 if mates is None else mates.size
        if self._dtypes is None:
            self._dtypes = [o.dtype for o in trajectory.obs]
            self._allocate_mates(self._capacity, self._mates)
        if start + n > self._capacity or width > self._mates:
            capacity = max(start + n, 2 * self._capacity) if start + n > self._capacity else self._capacity
            self._grow(capacity, max(width, self._mates))
        self.agent.append(trajectory, advantages, returns, critic_memories)
        rows = slice(start, start + t)
        self.baselines[start : start + n] = 0
        self.baselines[rows] = baselines
        if baseline_memories is not None:
            self.baseline_memories[start : start + n : self.sequence_length] = baseline_memories
        self.present[start : start + n] = False
        if mates is not None and width:
            self.present[rows, :width] = mates.present
            for stored, obs in zip(self.mate_obs, mates.obs):
                stored[rows, :width] = obs
            self.mate_continuous[rows, :width] = mates.continuous_actions
            self.mate_discrete[rows, :width] = mates.discrete_actions

    def to_batch(self, device: torch.device, normalize_advantages: bool = True) -> POCABatch:
        """Everything in the buffer as tensors on ``device`` (advantages normalised over the
        buffer unless ``normalize_advantages`` is False, as ``UpdateBuffer.to_batch``)."""
        n = len(self)

        def tensor(array: np.ndarray) -> Tensor:
            return torch.as_tensor(np.ascontiguousarray(array), device=device)

        return POCABatch(
            agent=self.agent.to_batch(device, normalize_advantages),
            old_baselines=tensor(self.baselines[:n]),
            baseline_memories=tensor(self.baseline_memories[:n]),
            group=GroupObservations(
                [tensor(o[:n]) for o in self.mate_obs],
                tensor(self.present[:n]),
                tensor(self.mate_continuous[:n]),
                tensor(self.mate_discrete[:n]),
            ),
        )
