"""What PPO and POCA share beyond their losses: the hyperparameter schedules, the update's
epochs of minibatches and the checkpoint layout of an actor and critic trained on fresh
experience (with their reward signals and behavioral cloning), so a checkpoint of either reads
the same way."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, Generic, Protocol, Self, TypeVar

import numpy as np
import torch
from torch import nn

from stats import tags
from trainers import seeding
from trainers.exceptions import ConfigError
from trainers.networks.optimizers import gradient_step
from trainers.networks.policy import ACTION_CLIP, TorchPolicy
from trainers.networks.sequences import sequence_rows
from trainers.reward_signals.base import SignalBatch
from trainers.reward_signals.learner import Learner
from trainers.settings import AdvantageNormalization, POCASettings
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


def apply_log_std_init(policy: TorchPolicy, hyperparameters: POCASettings, behavior_name: str) -> None:
    """Start the policy's Gaussian at ``log_std_init`` (environment units: the policy's actions
    are clipped at ±ACTION_CLIP and divided by it, so its own log standard deviation is the key
    plus ln ACTION_CLIP); a ConfigError when the behavior has no continuous actions."""
    value = hyperparameters.log_std_init
    if value is None:
        return
    if not policy.continuous_size:
        raise ConfigError(
            f"behaviors.{behavior_name}.hyperparameters.log_std_init: {behavior_name} has no "
            "continuous actions whose spread it could set; remove it"
        )
    with torch.no_grad():
        policy.actor.log_std.fill_(value + math.log(ACTION_CLIP))


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


class OnPolicyBatch(Protocol):
    """What the shared update needs of an algorithm's samples (PPO's, POCA's)."""

    def take(self, index: torch.Tensor) -> Self: ...
    def with_normalized_advantages(self) -> Self: ...
    def signal_batch(self) -> SignalBatch: ...


B = TypeVar("B", bound=OnPolicyBatch)
B_co = TypeVar("B_co", bound=OnPolicyBatch, covariant=True)
HP = TypeVar("HP", bound=POCASettings)


class OnPolicyBuffer(Protocol[B_co]):
    """Experience waiting for the next update, as the shared update reads it."""

    def __len__(self) -> int: ...
    def clear(self) -> None: ...
    def to_batch(self, device: torch.device, normalize_advantages: bool = True) -> B_co: ...


class OnPolicy(Learner[HP], Generic[HP, B]):
    """PPO's and POCA's shared half: an update is ``num_epoch`` passes of minibatches over the
    whole buffer, each one gradient step on the algorithm's loss and one update of every trained
    reward signal on the same minibatch (as ML-Agents); a checkpoint holds actor, critic,
    optimiser, shuffle stream, reward signals and behavioral cloning.

    A subclass builds ``critic``, ``optimizer``, ``shuffle`` and ``buffer`` in ``build_own`` and
    says what one minibatch costs in :meth:`minibatch_losses`.
    """

    critic: nn.Module
    optimizer: torch.optim.Optimizer
    shuffle: torch.Generator
    buffer: OnPolicyBuffer[B]

    @abstractmethod
    def minibatch_losses(self, batch: B, beta: float, epsilon: float) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """(the losses reported for this minibatch, by stats tag; the loss to minimise)."""

    def ready(self) -> bool:
        return len(self.buffer) > self.hyperparameters.buffer_size

    def schedules(self, step: int) -> tuple[float, float, float]:
        """(learning rate, beta, epsilon) at trainer step ``step``."""
        return schedules(self.hyperparameters, step, self.settings.max_steps)

    def update(self, step: int) -> dict[str, float]:
        learning_rate, beta, epsilon = self.schedules(step)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        hp = self.hyperparameters
        per_minibatch = hp.advantage_normalization == AdvantageNormalization.MINIBATCH
        batch = self.buffer.to_batch(self.device, normalize_advantages=not per_minibatch)
        losses: dict[str, list[torch.Tensor]] = {}
        signal_stats: dict[str, list[float]] = {}
        with self.policy.training():
            for rows in minibatches(
                len(self.buffer), self.sequence_length, hp.batch_size, hp.num_epoch, self.shuffle, self.device
            ):
                minibatch = batch.take(rows)
                if per_minibatch:
                    minibatch = minibatch.with_normalized_advantages()
                reported, loss = self.minibatch_losses(minibatch, beta, epsilon)
                gradient_step(self.optimizer, loss, max_grad_norm=hp.max_grad_norm)
                for tag, value in reported.items():
                    losses.setdefault(tag, []).append(value.detach())
                for signal in self._training_signals:  # on the same minibatch, as ML-Agents
                    for tag, signal_value in signal.update(minibatch.signal_batch()).items():
                        signal_stats.setdefault(tag, []).append(signal_value)
        self.buffer.clear()
        stats = {tag: float(torch.stack(values).mean()) for tag, values in losses.items()}
        stats.update({tags.POLICY_LEARNING_RATE: learning_rate, tags.POLICY_EPSILON: epsilon, tags.POLICY_BETA: beta})
        stats.update({tag: float(np.mean(values)) for tag, values in signal_stats.items()})
        if self.cloning is not None:
            stats.update(self.cloning.update(step))
        return stats

    def state(self) -> dict[str, Any]:
        """Actor, critic, optimiser and shuffle stream; the reward signals' and behavioral
        cloning's state when they have any."""
        return {
            "actor": self.policy.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "shuffle_rng": self.shuffle.get_state(),
            **self.shared_state(),
        }

    def load(self, state: Mapping[str, Any], *, weights_only: bool) -> None:
        """Restore :meth:`state`; ``weights_only``: networks only, fresh optimiser."""
        self.policy.actor.load_state_dict(state["actor"], strict=True)
        self.critic.load_state_dict(state["critic"], strict=True)
        self.load_shared_state(state, weights_only=weights_only)
        if not weights_only:
            self.optimizer.load_state_dict(state["optimizer"])
            seeding.restore(self.shuffle, state["shuffle_rng"], "shuffle_rng")
