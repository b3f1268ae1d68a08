"""Generative adversarial imitation (``reward_signals.gail``), as ML-Agents builds it.

A discriminator ``D`` (the behavior's observations through the signal's ``network_settings``,
with ``use_actions`` the flattened action and the done flag joined before the hidden layers,
then one sigmoid unit) learns to tell the demonstrations in ``demo_path`` (1) from the policy's
own transitions (0). The reward of a transition is ``-log(1 - D * (1 - 1e-7))`` times
``strength``: high where the policy looks like the expert. Like ML-Agents' it does not ignore
episode ends.

Each update draws as many demonstration steps as the policy minibatch has rows (uniformly,
with replacement), folds them (only them, as ML-Agents) into the observation normalisers, and
takes one Adam step at ``learning_rate`` on

- the discriminator loss ``-(mean log D(expert) + mean log(1 - D(policy)))``;
- with ``use_vail``, the variational information bottleneck: ``D`` reads a 128-wide code drawn
  around a learned mean with a learned scale, and ``beta * (KL - 0.5)`` is added, ``beta``
  (from 0) stepping by ``0.0005 * (KL - 0.5)`` first, floored at 0 (ML-Agents' gradient
  reads the stepped value);
- a gradient penalty ``10 * mean((|dD/dx| - 1)^2)`` at inputs drawn between policy and expert
  ones (element by element). As in ML-Agents the gradient is that of the first observation
  only, its norm taken over the observation's first axis (the whole vector; an image's rows).

Padding rows of a recurrent minibatch take no part in the loss (ML-Agents counts them in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import Tensor, nn

from processors.trajectory import Trajectory
from stats import tags
from trainers import seeding
from trainers.files.demonstrations import Demonstrations, training_demonstrations
from trainers.networks.actor_critic import ObservationEncoder, UnsupportedNetworkError, init_dense
from trainers.networks.initialization import initialize
from trainers.networks.optimizers import adam
from trainers.networks.sequences import masked_mean
from trainers.reward_signals.base import SignalBatch, trajectory_signal_batch
from trainers.reward_signals.curiosity import flatten_actions
from trainers.seeding import Stream
from trainers.settings import GAILSettings, RewardSignalType

EPSILON = 1e-7
GRADIENT_PENALTY_WEIGHT = 10.0
CODE_SIZE = 128  # VAIL's code width
BETA_RATE = 0.0005  # VAIL's dual step on beta
INFORMATION_BOUND = 0.5  # VAIL's target KL


class DiscriminatorInputs(NamedTuple):
    """What the discriminator reads: observations in [0, 1] floats (images too) and, with
    ``use_actions``, the flattened action and the done flag ``[B, a + 1]``."""

    obs: list[Tensor]
    actions: Tensor | None


class Discriminator(nn.Module):
    """Encoder, optional VAIL bottleneck, sigmoid estimator (see the module docstring)."""

    beta: Tensor  # VAIL's Lagrange multiplier, a buffer (saved, not trained by the optimiser)

    def __init__(self, spec: BehaviorSpec, settings: GAILSettings, generator: torch.Generator) -> None:
        super().__init__()
        network = settings.network_settings
        if network.memory is not None:
            raise UnsupportedNetworkError("gail's network_settings.memory: the discriminator has no memory")
        self.use_actions = bool(settings.use_actions)
        self.use_vail = bool(settings.use_vail)
        self.branches = tuple(int(n) for n in spec.action_spec.discrete_branches)
        action_width = int(spec.action_spec.continuous_size) + sum(self.branches) + 1 if self.use_actions else 0
        self.encoder = ObservationEncoder(
            spec.observation_specs, network, extra_inputs=action_width, generator=generator
        )
        estimator_input = self.encoder.output_size
        if self.use_vail:
            self.code_mean = nn.Linear(self.encoder.output_size, CODE_SIZE)
            init_dense(self.code_mean, 0.1, generator)
            self.code_scale = nn.Parameter(torch.ones(CODE_SIZE))
            self.register_buffer("beta", torch.zeros(()))
            estimator_input = CODE_SIZE
        self.estimator = nn.Linear(estimator_input, 1)
        nn.init.xavier_uniform_(self.estimator.weight, generator=generator)
        with torch.no_grad():
            self.estimator.weight.mul_(0.2)
        nn.init.zeros_(self.estimator.bias)
        initialize(self, network, generator)

    def inputs(self, obs: Sequence[Tensor], continuous: Tensor, discrete: Tensor, dones: Tensor) -> DiscriminatorInputs:
        floats = [o.float() * (1.0 / 255.0) if o.dtype == torch.uint8 else o for o in obs]
        if not self.use_actions:
            return DiscriminatorInputs(floats, None)
        actions = torch.cat([flatten_actions(continuous, discrete, self.branches), dones[:, None].float()], dim=1)
        return DiscriminatorInputs(floats, actions)

    def estimate(self, inputs: DiscriminatorInputs, noise: torch.Generator | None) -> tuple[Tensor, Tensor | None]:
        """([B] probability that each input is the expert's, [B, 128] VAIL code means or None).
        ``noise``: draw the VAIL code from it (training); None: use its mean."""
        encoded = self.encoder.encode_inputs(inputs.obs)
        if inputs.actions is not None:
            encoded = torch.cat([encoded, inputs.actions], dim=1)
        hidden = self.encoder.hidden(encoded)
        code_mean = None
        if self.use_vail:
            code_mean = self.code_mean(hidden)
            hidden = code_mean
            if noise is not None:
                draw = torch.randn(code_mean.shape, generator=noise, device=code_mean.device)
                hidden = code_mean + draw * self.code_scale
        return torch.sigmoid(self.estimator(hidden)).squeeze(1), code_mean


class GAILReward:
    """``reward_signals.gail`` (a :class:`trainers.reward_signals.base.RewardSignal`)."""

    def __init__(
        self,
        spec: BehaviorSpec,
        settings: GAILSettings,
        *,
        seed: int = 0,
        device: str | torch.device = "cpu",
        where: str = "reward_signals.gail",
    ) -> None:
        self.name = str(RewardSignalType.GAIL.value)
        self.gamma = float(settings.gamma)
        self.trains = True
        self.ignore_done = False
        self.strength = float(settings.strength)
        self._normalize = bool(settings.network_settings.normalize)
        self.demonstrations = training_demonstrations(settings.demo_path, spec, where=f"{where}.demo_path")
        generator = seeding.generator(seed, Stream.REWARD_SIGNAL_INIT)
        self.discriminator = Discriminator(spec, settings, generator).to(device)
        self.device = next(self.discriminator.parameters()).device
        self.optimizer = adam(self.discriminator.parameters(), settings.learning_rate)
        self._sampling = seeding.generator(seed, Stream.DEMO_SAMPLING)
        self._noise = seeding.generator(seed, Stream.SIGNAL_NOISE, self.device)
        self._expert = _ExpertTable(self.demonstrations)

    def rewards(self, trajectory: Trajectory) -> np.ndarray:
        return self.evaluate(trajectory_signal_batch(trajectory, self.device)).cpu().numpy()

    def evaluate(self, batch: SignalBatch) -> Tensor:
        with torch.no_grad():
            inputs = self._policy_inputs(batch)
            estimates, _ = self.discriminator.estimate(inputs, noise=None)
            return -torch.log(1.0 - estimates * (1.0 - EPSILON)) * self.strength

    def _policy_inputs(self, batch: SignalBatch) -> DiscriminatorInputs:
        return self.discriminator.inputs(batch.obs, batch.continuous_actions, batch.discrete_actions, batch.dones)

    def update(self, batch: SignalBatch) -> dict[str, float]:
        mask = batch.loss_masks
        rows = batch.dones.shape[0]
        index = torch.randint(len(self.demonstrations), (rows,), generator=self._sampling)
        expert_batch = self._expert.take(index, self.device)
        expert = self.discriminator.inputs(*expert_batch)
        if self._normalize:
            self.discriminator.encoder.update_normalization(expert.obs)
        policy = self._policy_inputs(batch)
        policy_estimate, policy_code = self.discriminator.estimate(policy, self._noise)
        expert_estimate, expert_code = self.discriminator.estimate(expert, self._noise)
        loss = -(
            torch.log(expert_estimate + EPSILON).mean() + masked_mean(torch.log(1.0 - policy_estimate + EPSILON), mask)
        )
        stats = {
            tags.GAIL_POLICY_ESTIMATE: float(masked_mean(policy_estimate.detach(), mask)),
            tags.GAIL_EXPERT_ESTIMATE: float(expert_estimate.detach().mean()),
            tags.GAIL_LOSS: float(loss.detach()),
        }
        total = loss
        if policy_code is not None and expert_code is not None:
            total = total + self._bottleneck_loss(policy_code, expert_code, mask, stats)
        penalty = GRADIENT_PENALTY_WEIGHT * self._gradient_penalty(policy, expert, mask)
        stats[tags.GAIL_GRAD_MAG_LOSS] = float(penalty.detach())
        total = total + penalty
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        self.optimizer.step()
        return stats

    def _bottleneck_loss(
        self, policy_code: Tensor, expert_code: Tensor, mask: Tensor | None, stats: dict[str, float]
    ) -> Tensor:
        """VAIL: beta's dual step, then ``beta * (KL - 0.5)`` at the stepped beta (ML-Agents'
        gradient reads the stepped value)."""
        variance = self.discriminator.code_scale**2
        kl = masked_mean(
            -torch.sum(1 + variance.log() - 0.5 * expert_code**2 - 0.5 * policy_code**2 - variance, dim=1), mask
        )
        beta = self.discriminator.beta
        with torch.no_grad():  # ML-Agents' gradient sees the stepped beta (it replaces .data)
            beta.copy_(torch.clamp(beta + BETA_RATE * (kl - INFORMATION_BOUND), min=0.0))
        loss = beta.clone() * (kl - INFORMATION_BOUND)
        stats[tags.GAIL_BETA] = float(beta)
        stats[tags.GAIL_KL_LOSS] = float(kl.detach())
        return loss

    def _gradient_penalty(
        self, policy: DiscriminatorInputs, expert: DiscriminatorInputs, mask: Tensor | None
    ) -> Tensor:
        def between(a: Tensor, b: Tensor) -> Tensor:
            weight = torch.rand(a.shape, generator=self._noise, device=a.device)
            return (weight * a + (1 - weight) * b).detach().requires_grad_(True)

        obs = [between(p, e) for p, e in zip(policy.obs, expert.obs)]
        actions = None
        if policy.actions is not None and expert.actions is not None:
            actions = between(policy.actions, expert.actions)
        estimate, _ = self.discriminator.estimate(DiscriminatorInputs(obs, actions), self._noise)
        (gradient,) = torch.autograd.grad(estimate.sum(), obs[0], create_graph=True)
        norm = torch.sqrt(torch.sum(gradient**2, dim=1) + EPSILON)
        per_row = ((norm - 1) ** 2).reshape(norm.shape[0], -1).mean(dim=1)
        return masked_mean(per_row, mask)

    def state(self) -> dict[str, Any]:
        return {
            "discriminator": self.discriminator.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "sampling_rng": self._sampling.get_state(),
            "noise_rng": self._noise.get_state(),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        self.discriminator.load_state_dict(state["discriminator"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        seeding.restore(self._sampling, state["sampling_rng"], "GAIL's sampling_rng")
        seeding.restore(self._noise, state["noise_rng"], "GAIL's noise_rng")


class _ExpertTable:
    """The demonstrations as tensors (on the CPU: a large demo need not fit on the device);
    :meth:`take` moves a sample to the device."""

    def __init__(self, demonstrations: Demonstrations) -> None:
        self.obs = [torch.from_numpy(np.ascontiguousarray(o)) for o in demonstrations.obs]
        self.continuous = torch.from_numpy(np.ascontiguousarray(demonstrations.continuous_actions))
        self.discrete = torch.from_numpy(demonstrations.discrete_actions.astype(np.int64))
        self.dones = torch.from_numpy(demonstrations.done.astype(np.float32))

    def take(self, index: Tensor, device: torch.device) -> tuple[list[Tensor], Tensor, Tensor, Tensor]:
        """(obs, continuous, discrete, dones) of the rows at ``index``, on ``device``."""
        return (
            [o[index].to(device) for o in self.obs],
            self.continuous[index].to(device),
            self.discrete[index].to(device),
            self.dones[index].to(device),
        )
