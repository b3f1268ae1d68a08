"""Reward signals as components: each turns a trajectory into rewards for its own value
stream, may train itself on the update's samples, and keeps its own state in checkpoints.

Only ``extrinsic`` exists today; curiosity, RND and GAIL plug in here without touching PPO
(or SAC): an algorithm sees a list of :class:`RewardSignal` and a value head per signal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import StatsReporter
from trainers.exceptions import ConfigError
from trainers.settings import RewardSignalSettings, RewardSignalType, TrainerSettings


class RewardSignal(Protocol):
    """One reward stream. ``name`` is the ``reward_signals`` key (``extrinsic``...), also the
    name of its value head; ``gamma`` discounts its returns. ``trains``: whether it has an
    update of its own (the algorithm then keeps the update's trajectories for it)."""

    name: str
    gamma: float
    trains: bool

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        """[T] float32 rewards of this stream for each step, ``strength`` applied."""

    def update(self, trajectories: list[Trajectory]) -> dict[str, float]:
        """Train on the update's experience (no-op for extrinsic); stats by ML-Agents tag."""

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
        self._strength = np.float32(settings.strength)

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        return trajectory.rewards * self._strength

    def update(self, trajectories: list[Trajectory]) -> dict[str, float]:
        return {}

    def state(self) -> dict[str, Any]:
        return {}

    def load(self, state: Mapping[str, Any]) -> None:
        pass


def create_reward_signals(behavior_name: str, settings: TrainerSettings, spec: BehaviorSpec) -> list[RewardSignal]:
    """The configured signals in configuration order; an unsupported one is a ConfigError
    (the configuration check refuses it before any work, this is the last line)."""
    signals: list[RewardSignal] = []
    for kind, signal_settings in settings.reward_signals.items():
        if kind == RewardSignalType.EXTRINSIC:
            signals.append(ExtrinsicReward(signal_settings))
        else:
            raise ConfigError(f"behaviors.{behavior_name}.reward_signals.{kind.value}: not supported yet")
    return signals


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
