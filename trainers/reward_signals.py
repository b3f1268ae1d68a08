"""Reward signals as components: each turns a trajectory into rewards for its own value
stream, may train itself on the update's samples, and keeps its own state in checkpoints.

``extrinsic`` (the environment's reward), ``curiosity`` (:mod:`trainers.curiosity`) and ``rnd``
(:mod:`trainers.rnd`) exist; an algorithm sees a list of :class:`RewardSignal` and a value
head per signal. A signal that trains (``trains``) is updated on every minibatch of the
policy's update, as ML-Agents updates its reward providers, with the minibatch's
observations, next observations and actions (:class:`SignalBatch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import numpy as np
from torch import Tensor

from processors.trajectory import Trajectory
from stats import StatsReporter
from trainers.settings import RewardSignalSettings, RewardSignalType


class SignalBatch(NamedTuple):
    """What a reward signal trains on: a minibatch of transitions, ``[B]`` on axis 0."""

    obs: tuple[Tensor, ...]  # one [B, *shape] per sensor
    next_obs: tuple[Tensor, ...]  # what followed each transition
    continuous_actions: Tensor  # [B, c] as the policy produced them
    discrete_actions: Tensor  # [B, b] int64
    loss_masks: Tensor | None  # [B] bool, False on padding rows (None: every row is real)


class RewardSignal(Protocol):
    """One reward stream. ``name`` is the ``reward_signals`` key (``extrinsic``...), also the
    name of its value head; ``gamma`` discounts its returns. ``trains``: whether it has an
    update of its own. ``ignore_done``: its return goes on past the episode's end (the value
    of the terminal step's next observation is still bootstrapped), as ML-Agents does for its
    intrinsic signals."""

    name: str
    gamma: float
    trains: bool
    ignore_done: bool

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        """[T] float32 rewards of this stream for each step, ``strength`` applied."""

    def update(self, batch: SignalBatch) -> dict[str, float]:
        """Train on one minibatch (no-op for extrinsic); stats by ML-Agents tag."""

    def state(self) -> dict[str, Any]:
        """Tensors and plain data for checkpoints (empty when there is nothing to keep)."""

    def load(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state`."""


class ExtrinsicReward:
    """The environment's reward times ``strength``."""

    def __init__(self, settings: RewardSignalSettings) -> None:
        self.name = str(RewardSignalType.EXTRINSIC.value)
        self.gamma = float(settings.gamma)
        self.trains = False
        self.ignore_done = False
        self._strength = np.float32(settings.strength)

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        return trajectory.rewards * self._strength

    def update(self, batch: SignalBatch) -> dict[str, float]:
        return {}

    def state(self) -> dict[str, Any]:
        return {}

    def load(self, state: Mapping[str, Any]) -> None:
        pass


class EpisodeSignalRewards:
    """Sums each signal's rewards over an agent's episode and reports ``Policy/<Name> Reward``
    when the episode ends (ML-Agents' per-signal reward curves)."""

    def __init__(self, stats_reporter: StatsReporter, signal_names: list[str]) -> None:
        self._stats_reporter = stats_reporter
        self._tags = {name: f"Policy/{name.capitalize()} Reward" for name in signal_names}
        self._sums: dict[str, dict[str, float]] = {name: {} for name in signal_names}

    def add(self, trajectory: Trajectory, name: str, rewards: np.ndarray) -> None:
        sums = self._sums[name]
        total = sums.get(trajectory.agent_id, 0.0) + float(rewards.sum())
        if trajectory.done_reached:
            sums.pop(trajectory.agent_id, None)
            self._stats_reporter.add_stat(self._tags[name], total)
        else:
            sums[trajectory.agent_id] = total
