"""Reward signals as components: each turns a trajectory into rewards for its own value
stream, may train itself on the update's samples, and keeps its own state in checkpoints.

``extrinsic`` (the environment's reward), ``curiosity`` (:mod:`trainers.reward_signals.curiosity`), ``rnd``
(:mod:`trainers.reward_signals.rnd`) and ``gail`` (:mod:`trainers.reward_signals.gail`) exist; an algorithm sees a list of
:class:`RewardSignal` and a value head per signal. A signal that trains (``trains``) rewards
transitions (:meth:`RewardSignal.evaluate` on a :class:`SignalBatch`: observations, next
observations, actions, done flags) and is updated on minibatches of them: PPO updates it on
every minibatch of the policy's update and rewards a trajectory when it arrives; SAC updates it
on minibatches of its own (``reward_signal_steps_per_update``) and rewards each sampled
minibatch afresh, as ML-Agents does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch import Tensor

from processors.trajectory import Trajectory
from stats import StatsReporter, tags
from trainers.settings import RewardSignalSettings, RewardSignalType


class SignalBatch(NamedTuple):
    """What a reward signal trains on: a minibatch of transitions, ``[B]`` on axis 0."""

    obs: tuple[Tensor, ...]  # one [B, *shape] per sensor
    next_obs: tuple[Tensor, ...]  # what followed each transition
    continuous_actions: Tensor  # [B, c] as the policy produced them
    discrete_actions: Tensor  # [B, b] int64
    dones: Tensor  # [B] float32, 1 where the agent's episode ended with this transition
    loss_masks: Tensor | None  # [B] bool, False on padding rows (None: every row is real)


def trajectory_signal_batch(trajectory: Trajectory, device: torch.device) -> SignalBatch:
    """A trajectory's T transitions as a :class:`SignalBatch` on ``device`` (uint8 images stay
    uint8; the rest float32)."""

    def tensor(array: np.ndarray) -> Tensor:
        return torch.as_tensor(array if array.dtype == np.uint8 else np.asarray(array, np.float32), device=device)

    next_obs = [np.concatenate([o[1:], n[None]]) for o, n in zip(trajectory.obs, trajectory.next_obs)]
    return SignalBatch(
        obs=tuple(tensor(o) for o in trajectory.obs),
        next_obs=tuple(tensor(o) for o in next_obs),
        continuous_actions=tensor(trajectory.continuous_actions),
        discrete_actions=torch.as_tensor(trajectory.discrete_actions, dtype=torch.int64, device=device),
        dones=tensor(trajectory.done),
        loss_masks=None,
    )


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

    def evaluate(self, batch: SignalBatch) -> Tensor:
        """[B] float32 rewards of the transitions, ``strength`` applied, without gradient (only
        for signals that train: the others' rewards come with the trajectory)."""

    def update(self, batch: SignalBatch) -> dict[str, float]:
        """Train on one minibatch (no-op for extrinsic); stats by ML-Agents tag."""

    def state(self) -> dict[str, Any]:
        """Tensors and plain data for checkpoints (empty when there is nothing to keep)."""

    def load(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state`."""


class ExtrinsicReward:
    """The environment's reward times ``strength``: the agent's own reward plus its group's
    reward (ML-Agents adds the group reward for every trainer), and with
    ``add_groupmate_rewards`` (POCA) the individual rewards of its group mates at that step."""

    def __init__(self, settings: RewardSignalSettings, *, add_groupmate_rewards: bool = False) -> None:
        self.name = str(RewardSignalType.EXTRINSIC.value)
        self.gamma = float(settings.gamma)
        self.trains = False
        self.ignore_done = False
        self.add_groupmate_rewards = add_groupmate_rewards
        self._strength = np.float32(settings.strength)

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        total = trajectory.rewards + trajectory.group_rewards
        mates = trajectory.groupmates
        if self.add_groupmate_rewards and mates is not None and mates.size:
            total = total + mates.rewards.sum(axis=1)  # absent mates hold 0
        return total * self._strength

    def evaluate(self, batch: SignalBatch) -> Tensor:
        raise TypeError("the extrinsic reward comes with the trajectory, not from a SignalBatch")

    def update(self, batch: SignalBatch) -> dict[str, float]:
        return {}

    def state(self) -> dict[str, Any]:
        return {}

    def load(self, state: Mapping[str, Any]) -> None:
        pass


def signal_tag(name: str, tag: Callable[[str], str]) -> str:
    """``tag`` (one of :mod:`stats.tags`' per-signal tags) of the signal ``name``, capitalised as
    ML-Agents writes it (``Policy/Extrinsic Reward``, ``Policy/Rnd Value Estimate``,
    ``Policy/Gail Reward``)."""
    return tag(name.capitalize())


class EpisodeSignalRewards:
    """Sums each signal's rewards over an agent's episode and reports ``Policy/<Name> Reward``
    when the episode ends (ML-Agents' per-signal reward curves)."""

    def __init__(self, stats_reporter: StatsReporter, signal_names: list[str]) -> None:
        self._stats_reporter = stats_reporter
        self._tags = {name: signal_tag(name, tags.reward_signal) for name in signal_names}
        self._sums: dict[str, dict[str, float]] = {name: {} for name in signal_names}

    def add(self, trajectory: Trajectory, name: str, rewards: np.ndarray) -> None:
        sums = self._sums[name]
        total = sums.get(trajectory.agent_id, 0.0) + float(rewards.sum())
        if trajectory.done_reached:
            sums.pop(trajectory.agent_id, None)
            self._stats_reporter.add_stat(self._tags[name], total)
        else:
            sums[trajectory.agent_id] = total
