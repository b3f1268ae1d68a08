"""Soft Actor-Critic, as ML-Agents users know it, readable top to bottom.

Per trajectory (:meth:`SAC.add`): update the actor's observation normalisers, report the
value estimates, and store the transitions (with each reward signal's reward) in the replay
buffer. The update-to-data ratio is ML-Agents': once ``buffer_init_steps`` agent steps have
been collected and the buffer holds a minibatch, gradient steps are taken until
``(steps - buffer_init_steps) / gradient_steps <= steps_per_update`` (gradient steps counted
from 1), so the ratio holds however the trajectories arrive: one by one, in bursts, or from a
trainer thread that the environment got ahead of (a full trajectory queue then blocks it).

A gradient step on a uniformly drawn minibatch trains, as ML-Agents does: twin Q networks on
``r + gamma (1 - done) V_target(s')`` (a signal that ignores the episode's end, curiosity or RND,
bootstraps through it); a value network on the soft value ``min(Q1, Q2) - entropy terms`` at the
policy's own action (for hybrid actions with ML-Agents' sign of the continuous term:
:func:`trainers.sac.maths.value_target`); the policy on ``alpha log pi - Q1`` (its continuous
action reparameterised, tanh-squashed); one entropy coefficient for the continuous part and one
per discrete branch, tuned towards ML-Agents' targets; then the target value network moves
``tau`` of the way to the value network. The three losses touch disjoint parameters, so one
Adam over all of them takes the step ML-Agents' three optimisers take (Adam is elementwise);
the policy's gradient is computed on its own, so Q1 is not trained by the policy loss.

``target_critic: q`` (an agents-learn key) takes Stable-Baselines3's formulation instead, for
continuous actions without memory: no value network; the Q targets are
``r + gamma (1 - done) (min(Q1_target, Q2_target)(s', a') - alpha log pi(a'|s'))`` at the
policy's own next action ``a'``; the Q networks and the entropy coefficient step first, then the
policy on ``alpha log pi - min(Q1, Q2)`` with the stepped Q networks (Stable-Baselines3's
order); the two target Q networks follow the Q networks by ``tau``. Its gradient steps match
Stable-Baselines3 2.9's (``tests/test_sac_sb3_parity.py``).

Reward signals that train (curiosity, RND, GAIL), as ML-Agents: every sampled minibatch is
rewarded afresh by them (what they paid when the transition was stored serves only the episode
reports), and they train on minibatches of their own, drawn after the gradient
steps, one per signal each time ``(steps - buffer_init_steps) / signal updates`` exceeds
``reward_signal_steps_per_update``. Behavioral cloning (:mod:`trainers.reward_signals.behavioral_cloning`)
runs after every gradient step, as ML-Agents calls it.

Recurrent (``network_settings.memory``), as ML-Agents: the replay buffer holds whole padded
sequences and a minibatch is ``batch_size / sequence_length`` of them; the actor restarts each
from the memory it was fed when acting, the value network from the memory its evaluation of the
trajectory carried (per agent, as PPO's critic), the Q networks from zeros; the target value
network starts one value-network step in; every loss ignores the padding.
"""

from __future__ import annotations

import copy
import logging
import math
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec
from torch import Tensor, nn

from processors.trajectory import Trajectory
from stats import tags
from trainers import seeding
from trainers.exceptions import ConfigError
from trainers.networks.actor_critic import Critic
from trainers.networks.optimizers import adam
from trainers.networks.sequences import CriticMemories
from trainers.reward_signals.learner import Learner, LearnerKind
from trainers.sac import maths as sac_math
from trainers.sac.networks import QNetwork, without_normalizer
from trainers.sac.replay_buffer import ReplayBatch, ReplayBuffer, transition_bytes
from trainers.seeding import Stream
from trainers.settings import SACSettings, TargetCritic
from trainers.settings.schedules import decayed_value

logger = logging.getLogger(__name__)

# Floor of the linear learning-rate schedule, as ML-Agents decays it.
MIN_LEARNING_RATE = 1e-10
REPLAY_GPU_SHARE = 0.5  # of the GPU memory free when the buffer is made, at most, for a replay buffer kept there


class SACLosses(NamedTuple):
    """The losses of one gradient step, each reaching only its own parameters."""

    policy: Tensor  # the actor's
    value: Tensor  # the value network's (zero without one: target_critic q)
    q1: Tensor  # each Q network's
    q2: Tensor
    entropy_coefficient: Tensor  # the log entropy coefficients'


class CriticLosses(NamedTuple):
    """:class:`SACLosses` but the policy's, which may be taken after these have stepped."""

    value: Tensor
    q1: Tensor
    q2: Tensor
    entropy_coefficient: Tensor


class PolicyDraw(NamedTuple):
    """The policy's own action on a minibatch, and what its loss weighs it with."""

    obs: list[Tensor]  # the minibatch's observations, normalised
    actions: Tensor  # [B, c] reparameterised, squashed
    continuous_log_probs: Tensor  # [B, c]
    discrete_log_probs: Tensor | None  # [B, m] every branch's log-probabilities
    continuous_alpha: Tensor  # the entropy coefficients as the step began
    discrete_alphas: Tensor
    q1: Tensor | None = None  # ML-Agents: Q1 at ``actions``, differentiable in them only
    loss_masks: Tensor | None = None  # False on padding rows (None: not recurrent)


class SAC(Learner[SACSettings]):
    """Soft Actor-Critic for one behavior (an :class:`trainers.loop.algorithm.Algorithm`)."""

    updates_between_trajectories = True  # the ratio holds trajectory by trajectory

    # ML-Agents' SAC writes "Value", not PPO's "Value Estimate"
    kind = LearnerKind(SACSettings, tags.value, squashed_policy=True)

    def build_own(self, behavior_name: str, behavior_spec: BehaviorSpec, seed: int) -> None:
        settings = self.settings
        hyperparameters, network = self.hyperparameters, settings.network_settings
        self._trained_signals = [(i, signal) for i, signal in enumerate(self.reward_signals) if signal.trains]
        self._gammas = torch.tensor([signal.gamma for signal in self.reward_signals], device=self.device)
        self._ends_at_done = torch.tensor(
            [0.0 if signal.ignore_done else 1.0 for signal in self.reward_signals], device=self.device
        )

        self.continuous_size = self.policy.continuous_size
        self.branches = self.policy.discrete_branches
        generator = seeding.generator(seed, Stream.CRITIC_INIT)
        specs = behavior_spec.observation_specs
        q_args = (specs, network, self.stream_names, self.continuous_size, self.branches)
        self.q1 = QNetwork(*q_args, generator=generator).to(self.device)
        self.q2 = QNetwork(*q_args, generator=generator).to(self.device)
        self._behavior_name = behavior_name
        self.value: Critic | None = None  # ML-Agents' value network and its target ...
        self.target_value: Critic | None = None
        self.q_targets: tuple[QNetwork, QNetwork] | None = None  # ... or SB3's target Q networks
        if hyperparameters.target_critic == TargetCritic.Q:
            if self.branches or not self.continuous_size:
                raise ConfigError(
                    f"behaviors.{behavior_name}.hyperparameters.target_critic: q (Stable-Baselines3's target Q "
                    f"networks) is for continuous actions only; this behavior has {self.continuous_size} continuous "
                    f"action(s) and discrete branches {list(self.branches)}; remove target_critic"
                )
            self.q_targets = (
                copy.deepcopy(self.q1).requires_grad_(False),
                copy.deepcopy(self.q2).requires_grad_(False),
            )
            followed: list[nn.Module] = [self.q1, self.q2]
            targets: list[nn.Module] = list(self.q_targets)
        else:
            self.value = Critic(specs, without_normalizer(network), self.stream_names, generator=generator).to(
                self.device
            )
            self.target_value = copy.deepcopy(self.value).requires_grad_(False)
            followed, targets = [self.value], [self.target_value]
        # what soft_update_target moves, and towards what
        self._target_parameters: list[Tensor] = [p for target in targets for p in target.parameters()]
        self._followed_parameters: list[Tensor] = [p for module in followed for p in module.parameters()]
        # Stable-Baselines3's order (the policy's loss on the stepped critic) with its formulation
        self._critic_steps_first = self.value is None

        log_init = math.log(hyperparameters.init_entcoef)
        self.continuous_log_alpha = nn.Parameter(torch.full((1,), log_init, device=self.device))
        self.discrete_log_alphas = nn.Parameter(torch.full((len(self.branches),), log_init, device=self.device))
        self.continuous_target, self.discrete_targets = sac_math.target_entropies(self.continuous_size, self.branches)

        self._actor_parameters = list(self.policy.actor.parameters())
        alphas = [self.continuous_log_alpha] if self.continuous_size else []
        alphas += [self.discrete_log_alphas] if self.branches else []
        critics = [*self.q1.parameters(), *self.q2.parameters()]
        critics += [] if self.value is None else list(self.value.parameters())
        self._critic_parameters = [*critics, *alphas]
        trained = [*self._actor_parameters, *self._critic_parameters]
        self.optimizer = adam(trained, hyperparameters.learning_rate)

        shapes = [tuple(int(s) for s in spec.shape) for spec in specs]
        value_memory_size = 0 if self.value is None else self.value.memory_size
        memory_sizes = (self.policy.memory_size, value_memory_size)
        replay_device = _replay_device(
            behavior_name,
            hyperparameters.buffer_size,
            shapes,
            self.continuous_size,
            self.branches,
            memory_sizes,
            self.device,
        )
        self.replay = ReplayBuffer(
            hyperparameters.buffer_size,
            shapes,
            self.continuous_size,
            self.branches,
            len(self.reward_signals),
            sequence_length=self.sequence_length,
            memory_sizes=memory_sizes,
            device=replay_device,
        )
        self._value_memories = CriticMemories(value_memory_size, self.sequence_length, self.device)
        self._sampling = seeding.generator(seed, Stream.REPLAY_SAMPLING)
        self._noise = seeding.generator(seed, Stream.UPDATE_NOISE, self.device)
        self.steps = 0  # agent steps received (ML-Agents' ``_step``)
        self.update_steps = 1  # gradient steps taken, plus one (ML-Agents' ``update_steps``)
        self.signal_update_steps = 1  # reward-signal updates, plus one (``reward_signal_update_steps``)

    # ------------------------------------------------------------------ experience

    def add(self, trajectory: Trajectory) -> None:
        if self.settings.network_settings.normalize:
            self.policy.update_normalization(trajectory.obs)
        rewards = np.stack([signal.rewards(trajectory) for signal in self.reward_signals], axis=1)
        value_memories = None
        with torch.no_grad():
            if self.value is None:
                values = self._q_estimates(trajectory)
            elif self.value.memory_size:
                obs_with_next = [np.concatenate([o, n[None]]) for o, n in zip(trajectory.obs, trajectory.next_obs)]
                obs = self.policy.actor.encoder.normalize(self.policy.obs_to_tensors(obs_with_next))
                estimates, starts = self._value_memories.evaluate(trajectory, obs, self.value.values_and_memories)
                values = np.array([float(estimates[name][:-1].mean()) for name in self.value.stream_names])
                value_memories = starts.cpu().numpy()
            else:
                obs = self.policy.actor.encoder.normalize(self.policy.obs_to_tensors(trajectory.obs))
                values = self.value.stacked(obs).mean(dim=0).cpu().numpy()
        for i, signal in enumerate(self.reward_signals):
            self.stats_reporter.add_stat(self._value_tags[i], float(values[i]))
            self._episode_rewards.add(trajectory, signal.name, rewards[:, i])
        self.replay.add(trajectory, rewards, value_memories)
        self.steps += trajectory.length

    def _q_estimates(self, trajectory: Trajectory) -> np.ndarray:
        """Without a value network, the value reported per stream [S]: the smaller twin Q at the
        policy's mean action, averaged over the trajectory."""
        actor = self.policy.actor
        raw = self.policy.obs_to_tensors(trajectory.obs)
        actions, _ = actor.continuous_sample(actor(raw, None), deterministic=True)
        obs = actor.encoder.normalize(raw)
        q = torch.min(self.q1(obs, actions), self.q2(obs, actions))[..., 0]
        return q.mean(dim=0).cpu().numpy()

    def updates_due(self) -> int:
        """Gradient steps owed to the steps received (0 until ``buffer_init_steps`` steps
        have been collected and the buffer holds a minibatch)."""
        return self._due(self.update_steps, self.hyperparameters.steps_per_update)

    def signal_updates_due(self) -> int:
        """Updates owed to the reward signals that train (0 without any)."""
        if not self._trained_signals:
            return 0
        return self._due(self.signal_update_steps, self.hyperparameters.reward_signal_steps_per_update)

    def _due(self, done: int, ratio: float) -> int:
        hp = self.hyperparameters
        if len(self.replay) < hp.batch_size or self.steps < hp.buffer_init_steps:
            return 0
        collected = self.steps - hp.buffer_init_steps
        # ML-Agents steps while collected / done > ratio: the first count that stops it, in
        # closed form, then made exact to that comparison at float boundaries
        due = max(0, math.ceil(collected / ratio) - done)
        while due > 0 and not collected / (done + due - 1) > ratio:
            due -= 1
        while collected / (done + due) > ratio:
            due += 1
        return due

    def ready(self) -> bool:
        return self.updates_due() > 0 or self.signal_updates_due() > 0

    # ------------------------------------------------------------------ update

    def learning_rate(self, step: int) -> float:
        hp = self.hyperparameters
        return decayed_value(
            hp.learning_rate_schedule, hp.learning_rate, MIN_LEARNING_RATE, step, self.settings.max_steps
        )

    def update(self, step: int) -> dict[str, float]:
        """Every gradient step due, each on its own minibatch; the stats are their means."""
        learning_rate = self.learning_rate(step)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        losses = []
        extra: dict[str, list[float]] = {}
        with self.policy.training():
            for _ in range(self.updates_due()):
                sample = self.replay.sample(self.hyperparameters.batch_size, self._sampling)
                losses.append(self._gradient_step(self._rewarded(sample.to(self.device))))
                self.update_steps += 1
                if self.cloning is not None:
                    for tag, value in self.cloning.update(step).items():
                        extra.setdefault(tag, []).append(value)
        for _ in range(self.signal_updates_due()):
            for _, signal in self._trained_signals:
                batch = self.replay.sample(self.hyperparameters.batch_size, self._sampling).to(self.device)
                for tag, value in signal.update(batch.signal_batch()).items():
                    extra.setdefault(tag, []).append(value)
            self.signal_update_steps += 1
        stats = {tag: float(np.mean(values)) for tag, values in extra.items()}
        if not losses:
            return stats
        policy_loss, value_loss, q1_loss, q2_loss = torch.stack(losses).mean(dim=0).tolist()
        stats.update(
            {
                tags.POLICY_LOSS: policy_loss,
                tags.Q1_LOSS: q1_loss,
                tags.Q2_LOSS: q2_loss,
                tags.POLICY_LEARNING_RATE: learning_rate,
            }
        )
        if self.value is not None:
            stats[tags.VALUE_LOSS] = value_loss
        if self.continuous_size:
            stats[tags.CONTINUOUS_ENTROPY_COEFF] = float(self.continuous_log_alpha.detach().exp().mean())
        if self.branches:
            stats[tags.DISCRETE_ENTROPY_COEFF] = float(self.discrete_log_alphas.detach().exp().mean())
        return stats

    def _rewarded(self, batch: ReplayBatch) -> ReplayBatch:
        """``batch`` with the trained signals' rewards evaluated now, on its transitions."""
        if not self._trained_signals:
            return batch
        columns = list(batch.rewards.unbind(dim=1))
        signal_batch = batch.signal_batch()
        for i, signal in self._trained_signals:
            columns[i] = signal.evaluate(signal_batch)
        return batch._replace(rewards=torch.stack(columns, dim=1))

    def _gradient_step(self, batch: ReplayBatch) -> Tensor:
        """One SAC step on ``batch``; returns the detached (policy, value, Q1, Q2) losses.

        Each loss reaches only its own parameters (the policy's gradient is taken on its own,
        so the Q networks are not trained by it; backward with inputs, not autograd.grad:
        gradients then take their parameter's strides, which CUDA's fused Adam requires of a
        convolution's weights). ML-Agents steps all three from the same networks; with
        ``target_critic: q`` the critic and the entropy coefficient step first and the policy's
        loss takes the stepped Q networks, in Stable-Baselines3's order."""
        critic, draw = self._critic_losses(batch)
        critic_loss = critic.q1 + critic.q2 + critic.value + critic.entropy_coefficient
        self.optimizer.zero_grad(set_to_none=True)
        if self._critic_steps_first:
            critic_loss.backward(inputs=self._critic_parameters)
            self.optimizer.step()  # the actor has no gradient yet: Adam leaves it be
            self.optimizer.zero_grad(set_to_none=True)
            policy_loss = self._policy_loss(draw)
            policy_loss.backward(inputs=self._actor_parameters)
        else:
            policy_loss = self._policy_loss(draw)
            policy_loss.backward(inputs=self._actor_parameters)
            critic_loss.backward(inputs=self._critic_parameters)
        self.optimizer.step()
        self.soft_update_target()
        return torch.stack([policy_loss, critic.value, critic.q1, critic.q2]).detach()

    def soft_update_target(self) -> None:
        """Move the target networks ``tau`` of the way to the networks they follow."""
        with torch.no_grad():
            torch._foreach_lerp_(self._target_parameters, self._followed_parameters, self.hyperparameters.tau)

    def losses(self, batch: ReplayBatch) -> SACLosses:
        """SAC's losses on ``batch`` at the networks as they are (the policy's continuous action
        drawn from the update noise stream)."""
        critic, draw = self._critic_losses(batch)
        return SACLosses(self._policy_loss(draw), *critic)

    def _critic_losses(self, batch: ReplayBatch) -> tuple[CriticLosses, PolicyDraw]:
        """The value, Q and entropy-coefficient losses on ``batch``, and the policy's draw on it
        that they took and its loss takes."""
        actor, branches = self.policy.actor, self.branches
        length, mask = self.sequence_length, batch.loss_masks
        memories = batch.memories[::length] if actor.memory_size else None
        value_memories = batch.critic_memories[::length] if self.value is not None and self.value.memory_size else None
        obs = actor.encoder.normalize(list(batch.obs))
        dist = actor(list(batch.obs), batch.action_masks, memories=memories, sequence_length=length)
        if self.continuous_size:
            actions, continuous_log_probs = actor.continuous_sample(dist, generator=self._noise)
        else:
            actions = continuous_log_probs = dist.mean
        discrete_log_probs = torch.cat(dist.log_probs, dim=1) if branches else None
        continuous_alpha = self.continuous_log_alpha.detach().exp()
        discrete_alphas = self.discrete_log_alphas.detach().exp()

        # Q networks on the transitions' own actions, towards r + gamma V'(s') (_next_values)
        part1, part2 = self.q1.observation_part(obs), self.q2.observation_part(obs)
        q1 = self.q1.from_observation_part(part1, batch.continuous_actions, length)
        q2 = self.q2.from_observation_part(part2, batch.continuous_actions, length)
        with torch.no_grad():
            next_values = self._next_values(batch, obs, value_memories, continuous_alpha)
            backup = sac_math.q_backup(batch.rewards, batch.dones, self._gammas, next_values, self._ends_at_done)
        q1_loss = sac_math.q_loss(sac_math.chosen_q(q1, batch.discrete_actions, branches), backup, mask)
        q2_loss = sac_math.q_loss(sac_math.chosen_q(q2, batch.discrete_actions, branches), backup, mask)

        draw = PolicyDraw(
            obs, actions, continuous_log_probs, discrete_log_probs, continuous_alpha, discrete_alphas, loss_masks=mask
        )
        if self.value is None:
            value_loss = q1_loss.new_zeros(())
        else:
            # Q networks at the policy's own action: Q1 differentiable in the action only
            if self.continuous_size:
                q1_policy = self.q1.from_observation_part(part1.detach(), actions, length)
                with torch.no_grad():
                    q2_policy = self.q2.from_observation_part(part2, actions, length)
            else:  # the action is not an input: the same values, as constants
                q1_policy, q2_policy = q1.detach(), q2.detach()
            probs = discrete_log_probs.detach().exp() if discrete_log_probs is not None else None
            with torch.no_grad():
                min_q = torch.min(
                    sac_math.expected_q(q1_policy, probs, branches), sac_math.expected_q(q2_policy, probs, branches)
                )
                soft_value = sac_math.value_target(
                    min_q, continuous_log_probs, continuous_alpha, discrete_log_probs, discrete_alphas, branches
                )
            value_loss = sac_math.value_loss(self.value.stacked(obs, value_memories, length), soft_value, mask)
            draw = draw._replace(q1=q1_policy)
        entropy_loss = sac_math.entropy_coefficient_loss(
            self.continuous_log_alpha,
            continuous_log_probs,
            self.continuous_target,
            self.discrete_log_alphas,
            discrete_log_probs,
            self.discrete_targets,
            branches,
            mask,
        )
        return CriticLosses(value_loss, q1_loss, q2_loss, entropy_loss), draw

    def _policy_loss(self, draw: PolicyDraw) -> Tensor:
        """``alpha log pi - Q`` at the draw's actions: Q1 as the draw took it (ML-Agents), or the
        smaller twin Q as the Q networks are now (Stable-Baselines3, after the critic's step)."""
        policy_q = draw.q1
        if policy_q is None:
            with torch.no_grad():  # differentiable in the action only
                part1, part2 = self.q1.observation_part(draw.obs), self.q2.observation_part(draw.obs)
            policy_q = torch.min(
                self.q1.from_observation_part(part1, draw.actions), self.q2.from_observation_part(part2, draw.actions)
            )
        return sac_math.policy_loss(
            policy_q,
            draw.continuous_log_probs,
            draw.continuous_alpha,
            draw.discrete_log_probs,
            draw.discrete_alphas,
            self.branches,
            draw.loss_masks,
        )

    def _next_values(
        self, batch: ReplayBatch, obs: list[Tensor], value_memories: Tensor | None, alpha: Tensor
    ) -> Tensor:
        """What each transition's next observation is worth per stream [B, S], to bootstrap from:
        the target value network's estimate (ML-Agents), or the smaller target Q at the policy's
        own next action less its entropy term (Stable-Baselines3; continuous actions only)."""
        actor, length = self.policy.actor, self.sequence_length
        next_obs = actor.encoder.normalize(list(batch.next_obs))
        if self.q_targets is not None:
            next_actions, next_log_probs = actor.continuous_sample(
                actor(list(batch.next_obs), None), generator=self._noise
            )
            target1, target2 = self.q_targets
            min_q = torch.min(target1(next_obs, next_actions), target2(next_obs, next_actions))[..., 0]
            return min_q - (alpha * next_log_probs).sum(dim=1, keepdim=True)
        assert self.value is not None and self.target_value is not None
        next_memories = None
        if value_memories is not None:
            # the memory before each sequence's second observation (its first next_obs),
            # as ML-Agents gets it: one value-network step from the sequence's start
            _, next_memories = self.value.features([o[::length] for o in obs], value_memories, 1)
        return self.target_value.stacked(next_obs, next_memories, length)

    # ------------------------------------------------------------------ checkpoints

    def state(self) -> dict[str, Any]:
        return {
            "actor": self.policy.actor.state_dict(),
            "q1": self.q1.state_dict(),
            "q2": self.q2.state_dict(),
            **self._target_critic_state(),
            "log_entropy_coefficients": {
                "continuous": self.continuous_log_alpha.detach().clone(),
                "discrete": self.discrete_log_alphas.detach().clone(),
            },
            "optimizer": self.optimizer.state_dict(),
            "sampling_rng": self._sampling.get_state(),
            "noise_rng": self._noise.get_state(),
            "sac_counters": {
                "steps": self.steps,
                "update_steps": self.update_steps,
                "signal_update_steps": self.signal_update_steps,
            },
            **self.shared_state(),
        }

    def load(self, state: Mapping[str, Any], *, weights_only: bool) -> None:
        ours = self.hyperparameters.target_critic
        if "q1" in state and not self._target_critic_modules().keys() <= state.keys():  # another SAC's
            theirs = TargetCritic.VALUE if ours == TargetCritic.Q else TargetCritic.Q
            raise ConfigError(
                f"behaviors.{self._behavior_name}.hyperparameters.target_critic is {ours}, and the checkpoint "
                f"was trained with target_critic: {theirs}; set it back, or start from fresh weights"
            )
        self.policy.actor.load_state_dict(state["actor"], strict=True)
        self.q1.load_state_dict(state["q1"], strict=True)
        self.q2.load_state_dict(state["q2"], strict=True)
        for key, module in self._target_critic_modules().items():
            module.load_state_dict(state[key], strict=True)
        coefficients = state["log_entropy_coefficients"]
        with torch.no_grad():
            self.continuous_log_alpha.copy_(coefficients["continuous"])
            self.discrete_log_alphas.copy_(coefficients["discrete"])
        self.load_shared_state(state, weights_only=weights_only)
        if not weights_only:
            self.optimizer.load_state_dict(state["optimizer"])
            seeding.restore(self._sampling, state["sampling_rng"], "SAC's sampling_rng")
            seeding.restore(self._noise, state["noise_rng"], "SAC's noise_rng")
            counters = state["sac_counters"]
            self.steps, self.update_steps = int(counters["steps"]), int(counters["update_steps"])
            # older checkpoints: assume the signals kept their ratio, as ML-Agents does on resume
            ratio = self.hyperparameters.reward_signal_steps_per_update
            self.signal_update_steps = int(counters.get("signal_update_steps", max(1, self.steps / ratio)))

    def _target_critic_modules(self) -> dict[str, nn.Module]:
        """The checkpoint's entries that depend on ``target_critic``."""
        if self.q_targets is not None:
            return {"q1_target": self.q_targets[0], "q2_target": self.q_targets[1]}
        assert self.value is not None and self.target_value is not None
        return {"value": self.value, "target_value": self.target_value}

    def _target_critic_state(self) -> dict[str, Any]:
        return {key: module.state_dict() for key, module in self._target_critic_modules().items()}

    # ------------------------------------------------------------------ replay buffer files

    @property
    def saves_replay_buffer(self) -> bool:
        return bool(self.hyperparameters.save_replay_buffer)

    def replay_buffer_state(self) -> dict[str, Any]:
        """The replay buffer to write beside the checkpoint."""
        return self.replay.state()

    def load_replay_buffer(self, state: Mapping[str, Any]) -> None:
        self.replay.load(state)


def _physical_memory_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def _replay_device(
    behavior_name: str,
    capacity: int,
    shapes: list[tuple[int, ...]],
    continuous_size: int,
    branches: tuple[int, ...],
    memory_sizes: tuple[int, int],
    device: torch.device,
) -> torch.device:
    """Where the replay buffer lives: on the training GPU when it takes at most
    :data:`REPLAY_GPU_SHARE` of the memory free there (no copy per gradient step), else in this
    machine's memory. Refuses one that cannot fit in this machine's memory (before it fills up
    and the run dies hours in); logs what it will take, and where."""
    need = capacity * transition_bytes(shapes, continuous_size, branches, 1, memory_sizes)
    total = _physical_memory_bytes()
    if total is not None and need > total:
        raise ConfigError(
            f"behaviors.{behavior_name}.hyperparameters.buffer_size: {capacity} transitions of this behavior's "
            f"observations {shapes} take at least {need / 2**30:.1f} GiB, more than this machine's "
            f"{total / 2**30:.1f} GiB of memory; lower buffer_size"
        )
    where = torch.device("cpu")
    if device.type == "cuda" and need <= REPLAY_GPU_SHARE * torch.cuda.mem_get_info(device)[0]:
        where = device
    logger.info(
        "%s: the replay buffer holds up to %d transitions, at least %.1f MiB when full, on %s",
        behavior_name,
        capacity,
        need / 2**20,
        where,
    )
    return where
