"""Random network distillation (``reward_signals.rnd``), as ML-Agents builds it.

Two networks of the same shape (the behavior's observations through ``network_settings``): a
target with fixed random weights and a predictor trained to match it. The reward of an
observation is ``strength * |predictor(o) - target(o)|^2``: large where the predictor has seen
little. Each policy minibatch trains the predictor on the mean of that error with its own Adam
at ``learning_rate``. Like ML-Agents' it ignores episode ends (its return bootstraps past them)
and, with ``normalize``, both networks' observation normalisers take in every batch they see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import Tensor

from processors.trajectory import Trajectory
from stats import tags
from trainers import seeding
from trainers.networks.actor_critic import ObservationEncoder, UnsupportedNetworkError
from trainers.networks.initialization import initialize
from trainers.networks.optimizers import adam
from trainers.networks.sequences import masked_mean
from trainers.reward_signals.base import SignalBatch, trajectory_signal_batch
from trainers.seeding import Stream
from trainers.settings import RewardSignalType, RNDSettings


class RNDReward:
    """``reward_signals.rnd`` (a :class:`trainers.reward_signals.base.RewardSignal`)."""

    def __init__(
        self, spec: BehaviorSpec, settings: RNDSettings, *, seed: int = 0, device: str | torch.device = "cpu"
    ) -> None:
        if settings.network_settings.memory is not None:
            raise UnsupportedNetworkError("rnd's network_settings.memory: random network distillation has no memory")
        self.name = str(RewardSignalType.RND.value)
        self.gamma = float(settings.gamma)
        self.trains = True
        self.ignore_done = True
        self.strength = float(settings.strength)
        self._normalize = bool(settings.network_settings.normalize)
        generator = seeding.generator(seed, Stream.REWARD_SIGNAL_INIT)
        specs, network = spec.observation_specs, settings.network_settings
        self.target = ObservationEncoder(specs, network, generator=generator)
        self.predictor = ObservationEncoder(specs, network, generator=generator)
        initialize(self.target, network, generator)
        initialize(self.predictor, network, generator)
        self.target.requires_grad_(False).to(device)
        self.predictor.to(device)
        self.optimizer = adam(self.predictor.parameters(), settings.learning_rate)

    def _errors(self, obs: list[Tensor]) -> Tensor:
        """[B] squared distance of the predictor from the target; normalisers take ``obs`` in."""
        with torch.no_grad():
            target = self.target(obs)
        errors = ((self.predictor(obs) - target) ** 2).sum(dim=1)
        if self._normalize:  # after the forward passes, as ML-Agents updates them
            self.target.update_normalization(obs)
            self.predictor.update_normalization(obs)
        return errors

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        device = next(self.predictor.parameters()).device
        return self.evaluate(trajectory_signal_batch(trajectory, device)).cpu().numpy()

    def evaluate(self, batch: SignalBatch) -> Tensor:
        with torch.no_grad():
            return self._errors(list(batch.obs)) * self.strength

    def update(self, batch: SignalBatch) -> dict[str, float]:
        loss = masked_mean(self._errors(list(batch.obs)), batch.loss_masks)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {tags.RND_LOSS: float(loss.detach())}

    def state(self) -> dict[str, Any]:
        return {
            "target": self.target.state_dict(),
            "predictor": self.predictor.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        self.target.load_state_dict(state["target"], strict=True)
        self.predictor.load_state_dict(state["predictor"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
