"""The intrinsic curiosity module (``reward_signals.curiosity``), as ML-Agents builds it.

A state encoder (the behavior's observations through ``network_settings``: its own encoders and
hidden layers) embeds an observation; an inverse model predicts the action taken from the
embeddings of an observation and the next one; a forward model predicts the next embedding from
an embedding and the action. The reward is the forward model's error, ``0.5 * |phi' - f(phi,
a)|^2``, times ``strength`` and capped at 1 (ML-Agents caps the error at ``1 / strength``), and
0 until the module has trained once. Each policy minibatch trains it on ``10 * (0.2 * forward
loss + 0.8 * inverse loss)`` with its own Adam at ``learning_rate``. Like ML-Agents' it ignores
episode ends (its return bootstraps past them).

Sizes and initialisation are ML-Agents': the inverse and forward models have one Swish layer of
256 units (He-normal, linear gain), then a Xavier-uniform output layer. ``network_settings.activation``
replaces Swish there as in the encoder's hidden layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import Tensor, nn
from torch.nn import functional as F

from processors.trajectory import Trajectory
from stats import tags
from trainers import seeding
from trainers.networks.activations import hidden_activation
from trainers.networks.actor_critic import ObservationEncoder, UnsupportedNetworkError, init_dense
from trainers.networks.initialization import initialize
from trainers.networks.optimizers import adam
from trainers.networks.sequences import masked_mean
from trainers.reward_signals.base import SignalBatch, trajectory_signal_batch
from trainers.seeding import Stream
from trainers.settings import CuriositySettings, RewardSignalType

MODEL_UNITS = 256  # the inverse and forward models' hidden layer (ML-Agents' fixed size)
FORWARD_WEIGHT = 0.2  # ML-Agents' beta: forward vs inverse loss
LOSS_MULTIPLIER = 10.0
EPSILON = 1e-10


def _hidden_layer(input_size: int, generator: torch.Generator) -> nn.Linear:
    layer = nn.Linear(input_size, MODEL_UNITS)
    init_dense(layer, 1.0, generator)
    return layer


def _output_layer(input_size: int, output_size: int, generator: torch.Generator) -> nn.Linear:
    layer = nn.Linear(input_size, output_size)
    nn.init.xavier_uniform_(layer.weight, generator=generator)
    nn.init.zeros_(layer.bias)
    return layer


def flatten_actions(continuous: Tensor, discrete: Tensor, branches: Sequence[int]) -> Tensor:
    """[B, c + sum(branches)]: the continuous actions, then each branch's choice one-hot."""
    parts = [continuous]
    parts += [F.one_hot(discrete[:, i].long(), n).to(continuous.dtype) for i, n in enumerate(branches)]
    return torch.cat(parts, dim=1)


class CuriosityNetwork(nn.Module):
    """State encoder, inverse model and forward model (see the module docstring)."""

    def __init__(self, spec: BehaviorSpec, settings: CuriositySettings, generator: torch.Generator) -> None:
        super().__init__()
        if settings.network_settings.memory is not None:
            raise UnsupportedNetworkError("curiosity's network_settings.memory: the curiosity module has no memory")
        self.continuous_size = int(spec.action_spec.continuous_size)
        self.branches = tuple(int(n) for n in spec.action_spec.discrete_branches)
        self.encoder = ObservationEncoder(spec.observation_specs, settings.network_settings, generator=generator)
        self.activation = hidden_activation(settings.network_settings.activation)  # the models' hidden layers too
        embedding = self.encoder.output_size
        flat_actions = self.continuous_size + sum(self.branches)
        self.inverse_hidden = _hidden_layer(2 * embedding, generator)
        if self.continuous_size:
            self.continuous_prediction = _output_layer(MODEL_UNITS, self.continuous_size, generator)
        if self.branches:
            self.discrete_prediction = _output_layer(MODEL_UNITS, sum(self.branches), generator)
        self.forward_hidden = _hidden_layer(embedding + flat_actions, generator)
        self.forward_output = _output_layer(MODEL_UNITS, embedding, generator)
        initialize(self, settings.network_settings, generator)

    def embed_pair(self, obs: Sequence[Tensor], next_obs: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """The state encoder on observations and next observations, in one pass: ([B, e], [B, e])."""
        both = self.encoder([torch.cat([o, n]) for o, n in zip(obs, next_obs)])
        return both[: obs[0].shape[0]], both[obs[0].shape[0] :]

    def predicted_next(self, state: Tensor, continuous: Tensor, discrete: Tensor) -> Tensor:
        """The forward model's next embedding [B, e]."""
        actions = flatten_actions(continuous, discrete, self.branches)
        return self.forward_output(self.activation(self.forward_hidden(torch.cat([state, actions], dim=1))))

    def forward_errors(self, state: Tensor, next_state: Tensor, continuous: Tensor, discrete: Tensor) -> Tensor:
        """[B] ``0.5 * |phi' - f(phi, a)|^2``: the reward before strength, and the forward loss."""
        return 0.5 * ((next_state - self.predicted_next(state, continuous, discrete)) ** 2).sum(dim=1)

    def inverse_errors(self, state: Tensor, next_state: Tensor, continuous: Tensor, discrete: Tensor) -> Tensor:
        """[B] the inverse model's error: squared error of the continuous actions plus the
        cross-entropy of each branch's choice (against softmaxed predictions, as ML-Agents)."""
        hidden = self.activation(self.inverse_hidden(torch.cat([state, next_state], dim=1)))
        errors = state.new_zeros(state.shape[0])
        if self.continuous_size:
            errors = errors + ((continuous - self.continuous_prediction(hidden)) ** 2).sum(dim=1)
        if self.branches:
            logits = self.discrete_prediction(hidden)
            start = 0
            for i, n in enumerate(self.branches):
                probs = torch.softmax(logits[:, start : start + n], dim=1)
                chosen = probs.gather(1, discrete[:, i : i + 1].long()).squeeze(1)
                errors = errors - torch.log(chosen + EPSILON)
                start += n
        return errors


class CuriosityReward:
    """``reward_signals.curiosity`` (a :class:`trainers.reward_signals.base.RewardSignal`)."""

    def __init__(
        self, spec: BehaviorSpec, settings: CuriositySettings, *, seed: int = 0, device: str | torch.device = "cpu"
    ) -> None:
        self.name = str(RewardSignalType.CURIOSITY.value)
        self.gamma = float(settings.gamma)
        self.trains = True
        self.ignore_done = True
        self.strength = float(settings.strength)
        generator = seeding.generator(seed, Stream.REWARD_SIGNAL_INIT)
        self.network = CuriosityNetwork(spec, settings, generator).to(device)
        self.optimizer = adam(self.network.parameters(), settings.learning_rate)
        self.has_updated = False

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        if not self.has_updated:
            return np.zeros(trajectory.length, np.float32)
        device = next(self.network.parameters()).device
        return self.evaluate(trajectory_signal_batch(trajectory, device)).cpu().numpy()

    def evaluate(self, batch: SignalBatch) -> Tensor:
        if not self.has_updated:
            return batch.dones.new_zeros(batch.dones.shape[0])
        with torch.no_grad():
            state, next_state = self.network.embed_pair(batch.obs, batch.next_obs)
            errors = self.network.forward_errors(state, next_state, batch.continuous_actions, batch.discrete_actions)
        return torch.clamp(errors, max=1.0 / self.strength) * self.strength

    def update(self, batch: SignalBatch) -> dict[str, float]:
        self.has_updated = True
        state, next_state = self.network.embed_pair(batch.obs, batch.next_obs)
        forward_loss = masked_mean(
            self.network.forward_errors(state, next_state, batch.continuous_actions, batch.discrete_actions),
            batch.loss_masks,
        )
        inverse_loss = masked_mean(
            self.network.inverse_errors(state, next_state, batch.continuous_actions, batch.discrete_actions),
            batch.loss_masks,
        )
        loss = LOSS_MULTIPLIER * (FORWARD_WEIGHT * forward_loss + (1.0 - FORWARD_WEIGHT) * inverse_loss)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {
            tags.CURIOSITY_FORWARD_LOSS: float(forward_loss.detach()),
            tags.CURIOSITY_INVERSE_LOSS: float(inverse_loss.detach()),
        }

    def state(self) -> dict[str, Any]:
        return {
            "network": self.network.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "has_updated": self.has_updated,
        }

    def load(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        self.network.load_state_dict(state["network"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        self.has_updated = bool(state["has_updated"])
