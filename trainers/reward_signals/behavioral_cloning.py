"""Behavioral cloning (``behavioral_cloning``): the policy imitates the demonstrations in
``demo_path`` with a loss of its own, beside the algorithm's, as ML-Agents' BC module does.

Each call of :meth:`BehavioralCloning.update` (after every PPO update; after every SAC gradient
step, as ML-Agents calls it) makes ``num_epoch`` passes (3 unless set) over the shuffled
demonstrations in minibatches of ``batch_size`` steps (the trainer's unless set), stopping each
pass after ``samples_per_update`` steps (0, or fewer than one minibatch: the whole
demonstration, as ML-Agents), each minibatch one step
of an Adam of its own on the actor at ``strength`` times the trainer's learning rate, decayed
linearly to 0 over the first ``steps`` trainer steps (0: constant). The decayed rate takes
effect from the next update, and once it has run out the updates stop, as ML-Agents'. The
loss: the squared error of the actor's sampled continuous action (reparameterised, so
differentiable; squashed for SAC) against the expert's, plus the cross-entropy of each
discrete branch's choice, averaged over branches.

A recurrent actor learns from sequences of ``sequence_length`` steps cut from each
demonstrated episode (the last one padded, the padding outside the loss), each starting from
a zero memory, as ML-Agents does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor

from stats import tags
from trainers import seeding
from trainers.files.demonstrations import Demonstrations, training_demonstrations
from trainers.networks.optimizers import adam
from trainers.networks.policy import TorchPolicy
from trainers.networks.sequences import masked_mean, sequence_rows
from trainers.seeding import Stream
from trainers.settings import BehavioralCloningSettings, ScheduleType, TrainerSettings
from trainers.settings.schedules import decayed_value

DEFAULT_NUM_EPOCH = 3  # ML-Agents' default for every trainer
MIN_LEARNING_RATE = 1e-10


class BehavioralCloning:
    """The ``behavioral_cloning`` section of one behavior, bound to its policy."""

    def __init__(
        self,
        policy: TorchPolicy,
        settings: BehavioralCloningSettings,
        *,
        learning_rate: float,
        batch_size: int,
        sequence_length: int = 1,
        seed: int = 0,
        where: str = "behavioral_cloning",
    ) -> None:
        self.policy = policy
        self.settings = settings
        demonstrations = training_demonstrations(settings.demo_path, policy.behavior_spec, where=f"{where}.demo_path")
        self.sequence_length = int(sequence_length)
        self._demos = _DemoSequences(demonstrations, self.sequence_length, policy.device)
        self.initial_learning_rate = float(learning_rate) * float(settings.strength)
        self.learning_rate = self.initial_learning_rate
        self.num_epoch = int(settings.num_epoch) if settings.num_epoch else DEFAULT_NUM_EPOCH
        batch = int(settings.batch_size) if settings.batch_size else int(batch_size)
        # sequences per minibatch: a batch of steps, no more than the demonstrations hold
        self.sequences_per_batch = max(min(batch, len(demonstrations)) // self.sequence_length, 1)
        self.optimizer = adam(policy.actor.parameters(), self.learning_rate)
        self._shuffle = seeding.generator(seed, Stream.DEMO_SAMPLING)
        self._noise = seeding.generator(seed, Stream.CLONING_NOISE, policy.device)

    def minibatches_per_epoch(self) -> int:
        per = self.sequences_per_batch
        batches = self._demos.sequences // per
        limit = self.settings.samples_per_update // per
        if limit > 0:  # ML-Agents: a limit of no whole minibatch is no limit
            batches = min(batches, limit // self.sequence_length)
        return batches

    def update(self, step: int) -> dict[str, float]:
        """One round of cloning at trainer step ``step``; ``Losses/Pretraining Loss``."""
        if self.learning_rate <= MIN_LEARNING_RATE:
            return {tags.PRETRAINING_LOSS: 0.0}
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate
        per, length = self.sequences_per_batch, self.sequence_length
        losses = []
        with self.policy.training():
            for _ in range(self.num_epoch):
                order = torch.randperm(self._demos.sequences, generator=self._shuffle).to(self.policy.device)
                for i in range(self.minibatches_per_epoch()):
                    rows = sequence_rows(order[i * per : (i + 1) * per] * length, length)
                    loss = self.loss(rows)
                    self.optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    self.optimizer.step()
                    losses.append(loss.detach())
        steps = int(self.settings.steps)
        schedule = ScheduleType.LINEAR if steps > 0 else ScheduleType.CONSTANT
        self.learning_rate = decayed_value(schedule, self.initial_learning_rate, MIN_LEARNING_RATE, step, steps)
        mean = float(torch.stack(losses).mean()) if losses else 0.0
        return {tags.PRETRAINING_LOSS: mean}

    def loss(self, rows: Tensor) -> Tensor:
        """The cloning loss on the demonstration rows ``rows`` (whole sequences, in order)."""
        demos, actor = self._demos, self.policy.actor
        mask = demos.loss_masks[rows] if demos.loss_masks is not None else None
        dist = actor([o[rows] for o in demos.obs], None, sequence_length=self.sequence_length)
        loss = torch.zeros((), device=self.policy.device)
        if actor.continuous_size:
            sampled, _ = actor.continuous_sample(dist, generator=self._noise)
            loss = loss + masked_mean(((sampled - demos.continuous[rows]) ** 2).mean(dim=1), mask)
        if actor.discrete_branches:
            chosen = demos.discrete[rows]
            per_branch = [
                masked_mean(-torch.log_softmax(log_probs, dim=1).gather(1, chosen[:, i : i + 1]).squeeze(1), mask)
                for i, log_probs in enumerate(dist.log_probs)
            ]
            loss = loss + torch.stack(per_branch).mean()
        return loss

    def state(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "learning_rate": self.learning_rate,
            "shuffle_rng": self._shuffle.get_state(),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.learning_rate = float(state["learning_rate"])
        seeding.restore(self._shuffle, state["shuffle_rng"], "behavioral cloning's shuffle_rng")


def behavioral_cloning_for(
    behavior_name: str, policy: TorchPolicy, settings: TrainerSettings, *, sequence_length: int, seed: int
) -> BehavioralCloning | None:
    """The behavior's ``behavioral_cloning`` section bound to its policy, at the trainer's
    learning rate and batch size; None without the section."""
    cloning = settings.behavioral_cloning
    if cloning is None:
        return None
    hyperparameters = settings.hyperparameters
    return BehavioralCloning(
        policy,
        cloning,
        learning_rate=hyperparameters.learning_rate,
        batch_size=hyperparameters.batch_size,
        sequence_length=sequence_length,
        seed=seed,
        where=f"behaviors.{behavior_name}.behavioral_cloning",
    )


class _DemoSequences:
    """The demonstrations on the policy's device, each episode (ended by a done flag, or by the
    end of the data) cut into ``sequence_length`` rows with the last sequence padded at its end
    (``loss_masks`` False there; None without memory)."""

    def __init__(self, demonstrations: Demonstrations, sequence_length: int, device: torch.device) -> None:
        n = len(demonstrations)
        if sequence_length > 1:
            rows = _padded_rows(demonstrations.done, sequence_length)
        else:
            rows = np.arange(n)
        real = rows >= 0
        source = np.where(real, rows, 0)

        def tensor(array: np.ndarray) -> Tensor:
            padded = array[source]
            padded[~real] = 0
            return torch.as_tensor(np.ascontiguousarray(padded), device=device)

        self.obs = [tensor(o) for o in demonstrations.obs]
        self.continuous = tensor(demonstrations.continuous_actions)
        self.discrete = tensor(demonstrations.discrete_actions.astype(np.int64))
        self.loss_masks = torch.as_tensor(real, device=device) if sequence_length > 1 else None
        self.sequences = len(rows) // sequence_length


def _padded_rows(done: np.ndarray, length: int) -> np.ndarray:
    """For each row of the sequence layout, the demonstration step it holds (-1: padding)."""
    ends = np.flatnonzero(done) + 1
    starts = np.concatenate([[0], ends])
    stops = np.concatenate([ends, [len(done)]])
    pieces = []
    for start, stop in zip(starts, stops):
        if stop <= start:
            continue
        padded = -(-(stop - start) // length) * length
        piece = np.full(padded, -1, np.int64)
        piece[: stop - start] = np.arange(start, stop)
        pieces.append(piece)
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
