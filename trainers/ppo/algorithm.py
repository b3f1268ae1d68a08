"""PPO, readable top to bottom: trajectories -> advantages -> clipped-surrogate updates.

Per trajectory (:meth:`PPO.add`): update the observation normalisers, estimate values of
every step and of ``next_obs`` with the critic, compute each reward signal's GAE
(bootstrapping from ``next_obs`` unless the episode truly terminated; curiosity and RND bootstrap
past the end, as ML-Agents' ``ignore_done``) and buffer the samples. Reward signals that train
(curiosity, RND, GAIL) are updated on every minibatch of the update, after the policy's step;
behavioral cloning (:mod:`trainers.reward_signals.behavioral_cloning`) runs after each update, as ML-Agents'.
When the buffer holds more than ``buffer_size`` samples (:meth:`PPO.ready`), :meth:`PPO.update`
makes ``num_epoch`` passes over shuffled minibatches of ``batch_size``, minimising
policy loss + 0.5 * value loss - beta * entropy, with learning rate, beta and epsilon
following their schedules over ``max_steps``. The value loss is the plain squared error against
the returns, ML-Agents' in effect (:func:`trainers.ppo.maths.value_loss` says why).

Recurrent (``network_settings.memory``): the critic has its own LSTM, run over each agent's
trajectories sequence by sequence with its memory carried from one trajectory of the agent to
the next (reset at an episode's start), as ML-Agents does; the buffer keeps the memory at each
sequence's start and the update shuffles and batches whole sequences (``batch_size /
sequence_length`` per minibatch), with padding masked out of every loss.
"""

from __future__ import annotations

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import tags
from trainers import seeding
from trainers.networks.actor_critic import Critic, ValueHeads
from trainers.networks.initialization import initialize
from trainers.networks.optimizers import adam
from trainers.networks.policy import TorchPolicy
from trainers.networks.sequences import CriticMemories, masked_mean
from trainers.ppo.buffer import PPOBatch, UpdateBuffer
from trainers.ppo.maths import clipped_surrogate_loss, gae
from trainers.ppo.maths import value_loss as value_loss_of
from trainers.ppo.on_policy import OnPolicy, apply_log_std_init
from trainers.reward_signals.learner import LearnerKind
from trainers.seeding import Stream
from trainers.settings import PPOSettings


class _SharedCritic(torch.nn.Module):
    """Value heads on the actor's own encoder (``shared_critic: true``)."""

    def __init__(self, policy: TorchPolicy, stream_names: list[str], generator: torch.Generator):
        super().__init__()
        actor = policy.actor
        # the actor's body as this module's own (its state keeps the encoder.* / memory.* keys)
        self.encoder = actor.encoder
        self.memory = actor.memory
        self.memory_size = actor.memory_size
        self._actor_features = actor.features
        features = actor.encoder.output_size if actor.memory is None else actor.memory.hidden_size
        self.value_heads = ValueHeads(features, stream_names, generator=generator)
        initialize(self.value_heads, policy.network_settings, generator)  # the body is the actor's

    def features(
        self, obs: list[torch.Tensor], memories: torch.Tensor | None = None, sequence_length: int = 1
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's features; with memory, the actor's LSTM from the critic's own memories."""
        return self._actor_features(obs, memories, sequence_length)

    def forward(
        self, obs: list[torch.Tensor], memories: torch.Tensor | None = None, sequence_length: int = 1
    ) -> dict[str, torch.Tensor]:
        return self.value_heads(self.features(obs, memories, sequence_length)[0])

    def values_and_memories(
        self, obs: list[torch.Tensor], memories: torch.Tensor | None, sequence_length: int
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        features, memories_out = self.features(obs, memories, sequence_length)
        return self.value_heads(features), memories_out


class PPO(OnPolicy[PPOSettings, PPOBatch]):
    """Proximal Policy Optimization for one behavior (an :class:`trainers.loop.algorithm.Algorithm`)."""

    updates_between_trajectories = False  # ML-Agents fills the buffer with every queued trajectory

    kind = LearnerKind(PPOSettings, tags.value_estimate, scales_rewards=True)

    def build_own(self, behavior_name: str, behavior_spec: BehaviorSpec, seed: int) -> None:
        settings = self.settings
        hyperparameters = self.hyperparameters
        apply_log_std_init(self.policy, hyperparameters, behavior_name)
        generator = seeding.generator(seed, Stream.CRITIC_INIT)
        if hyperparameters.shared_critic:
            self.critic: Critic | _SharedCritic = _SharedCritic(self.policy, self.stream_names, generator)
        else:
            self.critic = Critic(
                behavior_spec.observation_specs, settings.network_settings, self.stream_names, generator=generator
            )
            self.critic.encoder.read_normalizers_of(self.policy.actor.encoder)
        self.critic.to(self.device)
        parameters = {id(p): p for p in [*self.policy.actor.parameters(), *self.critic.parameters()]}
        self.optimizer = adam(parameters.values(), hyperparameters.learning_rate, epsilon=hyperparameters.adam_epsilon)
        self.shuffle = seeding.generator(seed, Stream.SHUFFLE)
        self.buffer: UpdateBuffer = UpdateBuffer(
            [tuple(spec.shape) for spec in behavior_spec.observation_specs],
            self.policy.continuous_size,
            self.policy.discrete_branches,
            len(self.reward_signals),
            capacity=hyperparameters.buffer_size + settings.time_horizon + self.sequence_length,
            sequence_length=self.sequence_length,
            memory_sizes=(self.policy.memory_size, self.critic.memory_size),
            next_obs=bool(self._training_signals),
        )
        self._critic_memories = CriticMemories(self.critic.memory_size, self.sequence_length, self.device)

    # ------------------------------------------------------------------ experience

    def add(self, trajectory: Trajectory) -> None:
        obs_with_next = [np.concatenate([o, n[None]]) for o, n in zip(trajectory.obs, trajectory.next_obs)]
        if self.settings.network_settings.normalize:
            self.policy.update_normalization(trajectory.obs)  # the critic reads the actor's normalisers
        critic_memories = None
        with torch.no_grad():
            if self.critic.memory_size:
                estimates, start_memories = self._critic_memories.evaluate(
                    trajectory, self.policy.obs_to_tensors(obs_with_next), self.critic.values_and_memories
                )
                critic_memories = start_memories.cpu().numpy()
            else:
                estimates = self.critic(self.policy.obs_to_tensors(obs_with_next))
        streams = len(self.reward_signals)
        advantages = np.zeros(trajectory.length, np.float32)
        returns = np.zeros((trajectory.length, streams), np.float32)
        for i, signal in enumerate(self.reward_signals):
            estimate = estimates[signal.name].cpu().numpy()
            rewards = signal.rewards(trajectory)
            terminated = trajectory.terminated and not signal.ignore_done
            signal_advantages, returns[:, i] = gae(
                self.learned_rewards(signal.name, trajectory, rewards),
                estimate[:-1],
                estimate[-1],
                terminated,
                signal.gamma,
                self.hyperparameters.lambd,
            )
            advantages += signal_advantages
            # one mean per trajectory, as ML-Agents: a summary weighs trajectories equally
            self.stats_reporter.add_stat(self._value_tags[i], float(estimate[:-1].mean()))
            self._episode_rewards.add(trajectory, signal.name, rewards)
        self.buffer.append(trajectory, advantages, returns, critic_memories)

    # ------------------------------------------------------------------ update

    def minibatch_losses(
        self, batch: PPOBatch, beta: float, epsilon: float
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        policy_loss, value_loss, loss = self.losses(batch, beta, epsilon)
        # the policy loss's magnitude per minibatch, as ML-Agents reports it (so curves compare across trainers)
        return {tags.POLICY_LOSS: policy_loss.detach().abs(), tags.VALUE_LOSS: value_loss}, loss

    def losses(self, batch: PPOBatch, beta: float, epsilon: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(policy loss, value loss, the loss to minimise) on ``batch``."""
        length, mask = self.sequence_length, batch.loss_masks
        memories = batch.memories[::length] if self.policy.memory_size else None
        continuous_log_probs, discrete_log_probs, entropy = self.policy.actor.evaluate_actions(
            list(batch.obs),
            batch.action_masks,
            batch.continuous_actions,
            batch.discrete_actions,
            memories=memories,
            sequence_length=length,
        )
        log_probs = torch.cat([continuous_log_probs, discrete_log_probs], dim=1)  # [B, c + b]: a ratio per dimension
        critic_memories = batch.critic_memories[::length] if self.critic.memory_size else None
        values = self.critic(list(batch.obs), critic_memories, length)
        value_loss = torch.stack(
            [
                value_loss_of(values[signal.name], batch.returns[:, i], mask)
                for i, signal in enumerate(self.reward_signals)
            ]
        ).mean()
        policy_loss = clipped_surrogate_loss(log_probs, batch.old_log_probs, batch.advantages, epsilon, mask)
        loss = policy_loss + 0.5 * value_loss - beta * masked_mean(entropy, mask)
        return policy_loss, value_loss, loss
