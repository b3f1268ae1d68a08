"""PPO, readable top to bottom: trajectories -> advantages -> clipped-surrogate updates.

Per trajectory: update the observation normalisers, estimate values of every step and of
``next_obs`` with the critic, compute each reward signal's GAE (bootstrapping from
``next_obs`` unless the episode truly terminated) and buffer the samples. When the buffer
holds more than ``buffer_size`` samples: ``num_epoch`` passes over shuffled minibatches of
``batch_size``, minimising policy loss + 0.5 * value loss - beta * entropy, with learning
rate, beta and epsilon following their schedules over ``max_steps``. As in ML-Agents, the
policy loss clips one ratio per action dimension (each continuous dimension, each discrete
branch), from the per-dimension log-probs kept in the buffer.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import StatsReporter
from trainers.buffer import PPOBatch, UpdateBuffer
from trainers.checkpoints import BehaviorCheckpoints
from trainers.exceptions import ConfigError
from trainers.networks import Critic, ValueHeads
from trainers.policy import TorchPolicy
from trainers.ppo_math import clipped_surrogate_loss, clipped_value_loss, decayed_value, gae
from trainers.settings import PPOSettings, RewardSignalType, TrainerSettings
from trainers.trainer import Trainer

logger = logging.getLogger(__name__)

# Floors of the linear schedules, as ML-Agents decays them.
MIN_LEARNING_RATE = 1e-10
MIN_BETA = 1e-5
MIN_EPSILON = 0.1


class UnsupportedRewardSignalError(ConfigError):
    """A reward signal other than extrinsic is configured; the others come in a later issue."""


class _SharedCritic(torch.nn.Module):
    """Value heads on the actor's own encoder (``shared_critic: true``)."""

    def __init__(self, policy: TorchPolicy, stream_names: list[str], generator: torch.Generator):
        super().__init__()
        self.encoder = policy.actor.encoder
        self.value_heads = ValueHeads(self.encoder.output_size, stream_names, generator=generator)

    def forward(self, obs: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        return self.value_heads(self.encoder(obs))

    def update_normalization(self, obs: list[torch.Tensor]) -> None:
        """The actor's normaliser is the shared one; the policy updates it."""


class PPOTrainer(Trainer):
    """Proximal Policy Optimization for one behavior."""

    def __init__(
        self,
        *,
        behavior_name: str,
        behavior_spec: BehaviorSpec,
        settings: TrainerSettings,
        stats_reporter: StatsReporter,
        checkpoints: BehaviorCheckpoints | None = None,
        seed: int = 0,
        device: str | torch.device = "cpu",
    ):
        hyperparameters = settings.hyperparameters
        if not isinstance(hyperparameters, PPOSettings):
            raise ConfigError(f"behaviors.{behavior_name}.hyperparameters: PPO settings expected")
        unsupported = [str(s.value) for s in settings.reward_signals if s != RewardSignalType.EXTRINSIC]
        if unsupported:
            raise UnsupportedRewardSignalError(
                f"behaviors.{behavior_name}.reward_signals: {', '.join(unsupported)} not supported yet "
                "(only extrinsic is); remove them to train this behavior"
            )
        policy = TorchPolicy(behavior_spec, settings.network_settings, seed=seed, device=device)
        super().__init__(
            behavior_name=behavior_name,
            settings=settings,
            policy=policy,
            stats_reporter=stats_reporter,
            checkpoints=checkpoints,
        )
        self.hyperparameters: PPOSettings = hyperparameters
        self.device = policy.device
        self.reward_signals = {str(kind.value): signal for kind, signal in settings.reward_signals.items()}
        stream_names = list(self.reward_signals)
        generator = torch.Generator().manual_seed(seed + 1)
        if hyperparameters.shared_critic:
            self.critic: torch.nn.Module = _SharedCritic(policy, stream_names, generator)
        else:
            self.critic = Critic(behavior_spec.observation_specs, settings.network_settings, stream_names,
                                 generator=generator)
        self.critic.to(self.device)
        parameters = {id(p): p for p in [*policy.actor.parameters(), *self.critic.parameters()]}
        self.optimizer = torch.optim.Adam(parameters.values(), lr=hyperparameters.learning_rate, fused=True)
        self._shuffle = torch.Generator().manual_seed(seed + 2)
        self.buffer = UpdateBuffer(
            [tuple(spec.shape) for spec in behavior_spec.observation_specs],
            policy.continuous_size,
            policy.discrete_branches,
            stream_names,
            capacity=hyperparameters.buffer_size + settings.time_horizon,
        )
        self._episode_rewards: dict[str, dict[str, float]] = {name: {} for name in stream_names}

    # ------------------------------------------------------------------ experience

    def _process_trajectory(self, trajectory: Trajectory) -> None:
        obs_with_next = [np.concatenate([o, n[None]]) for o, n in zip(trajectory.obs, trajectory.next_obs)]
        if self.settings.network_settings.normalize:
            self.policy.update_normalization(trajectory.obs)
            self.critic.update_normalization(self.policy.obs_to_tensors(trajectory.obs))
        with torch.no_grad():
            estimates = self.critic(self.policy.obs_to_tensors(obs_with_next))
        advantages = np.zeros(trajectory.length, np.float32)
        returns, values = {}, {}
        for name, signal in self.reward_signals.items():
            estimate = estimates[name].cpu().numpy()
            rewards = trajectory.rewards * np.float32(signal.strength)
            signal_advantages, returns[name] = gae(
                rewards, estimate[:-1], estimate[-1], trajectory.terminated, signal.gamma, self.hyperparameters.lambd
            )
            advantages += signal_advantages
            values[name] = estimate[:-1]
            title = name.capitalize()
            self.stats_reporter.add_stats(f"Policy/{title} Value Estimate", estimate[:-1])
            episode = self._episode_rewards[name]
            episode[trajectory.agent_id] = episode.get(trajectory.agent_id, 0.0) + float(rewards.sum())
            if trajectory.done_reached:
                self.stats_reporter.add_stat(f"Policy/{title} Reward", episode.pop(trajectory.agent_id))
        self.buffer.append(trajectory, advantages, returns, values)

    def _is_ready_update(self) -> bool:
        return len(self.buffer) > self.hyperparameters.buffer_size

    # ------------------------------------------------------------------ update

    def _schedules(self) -> tuple[float, float, float]:
        hp, max_steps = self.hyperparameters, self.settings.max_steps
        learning_rate = decayed_value(hp.learning_rate_schedule, hp.learning_rate, MIN_LEARNING_RATE, self.step, max_steps)
        beta = decayed_value(hp.beta_schedule, hp.beta, MIN_BETA, self.step, max_steps)
        epsilon = decayed_value(hp.epsilon_schedule, hp.epsilon, MIN_EPSILON, self.step, max_steps)
        return learning_rate, beta, epsilon

    def _update_policy(self) -> dict[str, float]:
        learning_rate, beta, epsilon = self._schedules()
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        batch = self.buffer.to_batch(self.device)
        samples = len(self.buffer)
        batch_size = min(self.hyperparameters.batch_size, samples)
        minibatches = samples // batch_size
        policy_losses, value_losses = [], []
        self.policy.actor.train()
        for _ in range(self.hyperparameters.num_epoch):
            order = torch.randperm(samples, generator=self._shuffle).to(self.device)
            for i in range(minibatches):
                minibatch = batch.take(order[i * batch_size : (i + 1) * batch_size])
                policy_loss, value_loss = self._minibatch_step(minibatch, beta, epsilon)
                policy_losses.append(policy_loss)
                value_losses.append(value_loss)
        self.policy.actor.eval()
        self.buffer.clear()
        return {
            "Losses/Policy Loss": float(torch.stack(policy_losses).mean()),
            "Losses/Value Loss": float(torch.stack(value_losses).mean()),
            "Policy/Learning Rate": learning_rate,
            "Policy/Epsilon": epsilon,
            "Policy/Beta": beta,
        }

    def _minibatch_step(self, batch: PPOBatch, beta: float, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
        continuous_log_probs, discrete_log_probs, entropy = self.policy.actor.evaluate_actions(
            list(batch.obs), batch.action_masks, batch.continuous_actions, batch.discrete_actions
        )
        log_probs = torch.cat([continuous_log_probs, discrete_log_probs], dim=1)  # [B, c + b]: per-dimension ratios
        values = self.critic(list(batch.obs))
        value_loss = torch.stack(
            [clipped_value_loss(values[name], batch.old_values[name], batch.returns[name], epsilon) for name in values]
        ).mean()
        policy_loss = clipped_surrogate_loss(log_probs, batch.old_log_probs, batch.advantages, epsilon)
        loss = policy_loss + 0.5 * value_loss - beta * entropy.mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return policy_loss.detach(), value_loss.detach()

    # ------------------------------------------------------------------ checkpoints

    def _state_dicts(self) -> dict[str, Any]:
        return {
            "actor": self.policy.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "shuffle_rng": self._shuffle.get_state(),
        }

    def _load_state_dicts(self, state: dict[str, Any], *, strict: bool, weights_only: bool = False) -> None:
        for name, module in (("actor", self.policy.actor), ("critic", self.critic)):
            if strict:
                module.load_state_dict(state[name], strict=True)
                continue
            try:  # initialising from another run: load what fits, as ML-Agents does
                result = module.load_state_dict(state.get(name, {}), strict=False)
            except RuntimeError as error:
                logger.warning("Failed to load for module %s (%s). Initializing.", name, error)
                continue
            if result.missing_keys or result.unexpected_keys:
                logger.warning("Module %s: missing %s, unexpected %s in the initial weights.",
                               name, result.missing_keys, result.unexpected_keys)
        if not weights_only:
            self.optimizer.load_state_dict(state["optimizer"])
            self._shuffle.set_state(state["shuffle_rng"])
