"""What a learning algorithm (PPO, SAC, POCA...) supplies to the trainer loop.

The loop (:class:`trainers.loop.trainer.Trainer`) owns everything algorithms share: queues, step
counting, summaries, checkpoints, the thread and policy publishing. An algorithm only turns
trajectories into updates of its policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import torch
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import StatsReporter
from trainers.networks.policy import TorchPolicy
from trainers.settings import TrainerSettings


class Algorithm(Protocol):
    """One behavior's learner. ``policy`` is the network the loop publishes and exports."""

    policy: TorchPolicy

    def add(self, trajectory: Trajectory) -> None:
        """Take one trajectory into the algorithm's buffer, with whatever targets it needs."""

    def ready(self) -> bool:
        """Whether enough experience is buffered for an update."""

    def update(self, step: int) -> dict[str, float]:
        """One update at trainer step ``step`` (schedules follow it); stats by ML-Agents tag."""

    def state(self) -> dict[str, Any]:
        """Module, optimiser and RNG state by name, for checkpoints (tensors and plain data)."""

    def load(self, state: Mapping[str, Any], *, weights_only: bool) -> None:
        """Restore :meth:`state`; ``weights_only``: networks only, fresh optimiser (init_path).
        Raises KeyError/RuntimeError when the state does not fit the networks."""


@runtime_checkable
class KeepsReplayBuffer(Protocol):
    """An off-policy algorithm whose replay buffer may be saved beside its checkpoints (SAC's
    ``save_replay_buffer``), so ``--resume`` continues with the experience it had."""

    @property
    def saves_replay_buffer(self) -> bool:
        """Whether the buffer is written with every checkpoint and read back by ``--resume``."""

    def replay_buffer_state(self) -> dict[str, Any]:
        """The buffer's contents to write (tensors and plain data)."""

    def load_replay_buffer(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`replay_buffer_state`; ValueError when it does not fit the behavior."""


@runtime_checkable
class ChoosesUpdateOrder(Protocol):
    """An algorithm that says when the loop updates; optional (without it: False, as PPO)."""

    # Whether the loop updates as soon as an update is due, before it takes the next trajectory
    # (off-policy SAC: the update-to-data ratio then holds trajectory by trajectory, however far
    # a threaded trainer's queue got ahead). False: it takes what its queues hold first (PPO:
    # ML-Agents fills its buffer with every queued trajectory). Read once, when the trainer is made.
    updates_between_trajectories: bool


class AlgorithmFactory(Protocol):
    """How the registry builds an algorithm (a class with this keyword-only constructor)."""

    def __call__(
        self,
        *,
        behavior_name: str,
        behavior_spec: BehaviorSpec,
        settings: TrainerSettings,
        stats_reporter: StatsReporter,
        seed: int,
        device: str | torch.device,
    ) -> Algorithm: ...
