"""What PPO and POCA share beyond their losses: the hyperparameter schedules and the checkpoint
layout of an actor and critic trained on fresh experience (with their reward signals and
behavioral cloning), so a checkpoint of either reads the same way."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import torch
from torch import nn

from trainers import seeding
from trainers.networks.policy import TorchPolicy
from trainers.networks.sequences import sequence_rows
from trainers.reward_signals.base import RewardSignal
from trainers.reward_signals.behavioral_cloning import BehavioralCloning
from trainers.settings import POCASettings
from trainers.settings.schedules import decayed_value

# Floors of the linear schedules, as ML-Agents decays them (epsilon's: ``epsilon_floor``, 0.1
# unless set).
MIN_LEARNING_RATE = 1e-10
MIN_BETA = 1e-5


def schedules(hyperparameters: POCASettings, step: int, max_steps: int) -> tuple[float, float, float]:
    """(learning rate, beta, epsilon) at trainer step ``step`` (PPO's settings are POCA's plus
    ``shared_critic``)."""
    hp = hyperparameters
    learning_rate = decayed_value(hp.learning_rate_schedule, hp.learning_rate, MIN_LEARNING_RATE, step, max_steps)
    beta = decayed_value(hp.beta_schedule, hp.beta, MIN_BETA, step, max_steps)
    epsilon = decayed_value(hp.epsilon_schedule, hp.epsilon, hp.epsilon_floor, step, max_steps)
    return learning_rate, beta, epsilon


def minibatches(
    rows: int, sequence_length: int, batch_size: int, num_epoch: int, generator: torch.Generator, device: torch.device
) -> Iterator[torch.Tensor]:
    """The buffer rows of every minibatch of an update, epoch by epoch: whole sequences of
    ``sequence_length`` rows (1 without memory), shuffled by ``generator`` each epoch,
    ``batch_size / sequence_length`` of them per minibatch; what does not fill a minibatch is
    left out of that epoch, as ML-Agents does."""
    sequences = rows // sequence_length
    per_minibatch = min(max(batch_size // sequence_length, 1), sequences)
    count, size = sequences // per_minibatch, per_minibatch * sequence_length
    for _ in range(num_epoch):
        order = torch.randperm(sequences, generator=generator).to(device)
        order = sequence_rows(order * sequence_length, sequence_length)  # each sequence's rows, in order
        for i in range(count):
            yield order[i * size : (i + 1) * size]


class OnPolicyLearner(Protocol):
    """The parts of PPO and POCA that a checkpoint holds."""

    @property
    def policy(self) -> TorchPolicy: ...
    @property
    def critic(self) -> nn.Module: ...
    @property
    def optimizer(self) -> torch.optim.Optimizer: ...
    @property
    def shuffle(self) -> torch.Generator: ...
    @property
    def reward_signals(self) -> Sequence[RewardSignal]: ...
    @property
    def cloning(self) -> BehavioralCloning | None: ...


def checkpoint_state(learner: OnPolicyLearner) -> dict[str, Any]:
    """Actor, critic, optimiser and shuffle stream; the reward signals' and behavioral
    cloning's state when they have any."""
    state: dict[str, Any] = {
        "actor": learner.policy.actor.state_dict(),
        "critic": learner.critic.state_dict(),
        "optimizer": learner.optimizer.state_dict(),
        "shuffle_rng": learner.shuffle.get_state(),
    }
    signals = {signal.name: signal.state() for signal in learner.reward_signals}
    if any(signals.values()):
        state["reward_signals"] = signals
    if learner.cloning is not None:
        state["behavioral_cloning"] = learner.cloning.state()
    return state


def load_checkpoint_state(learner: OnPolicyLearner, state: Mapping[str, Any], *, weights_only: bool) -> None:
    """Restore :func:`checkpoint_state`; ``weights_only``: networks only, fresh optimiser."""
    learner.policy.actor.load_state_dict(state["actor"], strict=True)
    learner.critic.load_state_dict(state["critic"], strict=True)
    for signal in learner.reward_signals:
        signal.load(state.get("reward_signals", {}).get(signal.name, {}))
    if not weights_only:
        learner.optimizer.load_state_dict(state["optimizer"])
        seeding.restore(learner.shuffle, state["shuffle_rng"], "shuffle_rng")
        if learner.cloning is not None and "behavioral_cloning" in state:
            learner.cloning.load(state["behavioral_cloning"])
