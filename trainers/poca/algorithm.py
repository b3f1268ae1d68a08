"""MA-POCA (``trainer_type: poca``): PPO's clipped surrogate with a centralised critic over the
agent's group and a counterfactual baseline per agent, as ML-Agents 0.28 trains it.

Per trajectory (:meth:`POCA.add`):

* the critic (:class:`trainers.poca.networks.POCACritic`) estimates the group's value from every
  member's observations and the agent's baseline from its own observation and its mates'
  observations and actions, at every step;
* each reward stream's lambda-return bootstraps from the group's value after the trajectory
  (the agent's ``next_obs`` with its mates' current observations) unless the whole group's
  episode is over: an agent that leaves its group early (it died, say) still gets credit for
  what its group goes on to earn, which is what POCA is for;
* the extrinsic reward is the agent's own reward plus its group reward plus its mates'
  individual rewards at that step (ML-Agents sets ``add_groupmate_rewards`` for POCA);
* a stream's advantage is its return minus the baseline; the streams' advantages are
  averaged (PPO sums them) and normalised over the buffer at the update.

The update minimises ``policy loss + 0.5 * (value loss + 0.5 * baseline loss) - beta *
entropy`` over ``num_epoch`` passes of shuffled minibatches, with PPO's schedules: the value
loss is PPO's (squared error against the returns, as ML-Agents' in effect), the baseline loss is
clipped around the old baseline estimates, as ML-Agents'. The actor is
PPO's, decentralised: each agent acts on its own observations, so the exported ONNX model is
exactly PPO's and Unity runs it per agent.

Recurrent (``network_settings.memory``): the actor's LSTM as PPO's; the critic has one LSTM
after its attention, run over each agent's trajectories sequence by sequence with two memories
carried from one trajectory of the agent to the next (the value's and the baseline's, as
ML-Agents keeps them), and the update trains on whole sequences with padding masked.

Reported beside PPO's tags: ``Losses/Baseline Loss``, ``Policy/<Signal> Baseline Estimate``,
and ``Environment/Group Cumulative Reward`` (each agent's sum of group rewards over its
episode, reported when the group's episode ends: agents that left early are not counted).
"""

from __future__ import annotations

import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import StatsAggregationMethod, tags
from trainers import seeding
from trainers.networks.optimizers import adam
from trainers.networks.sequences import CriticMemories, masked_mean
from trainers.poca.buffer import POCABatch, POCABuffer
from trainers.poca.networks import GroupObservations, POCACritic
from trainers.ppo.maths import clipped_surrogate_loss, clipped_value_loss, gae
from trainers.ppo.maths import value_loss as value_loss_of
from trainers.ppo.on_policy import OnPolicy, apply_log_std_init
from trainers.reward_signals.base import signal_tag
from trainers.reward_signals.learner import LearnerKind
from trainers.seeding import Stream
from trainers.settings import POCASettings


class POCA(OnPolicy[POCASettings, POCABatch]):
    """MA-POCA for one behavior (an :class:`trainers.loop.algorithm.Algorithm`)."""

    updates_between_trajectories = False  # as PPO: the buffer takes every queued trajectory

    kind = LearnerKind(POCASettings, tags.value_estimate, add_groupmate_rewards=True, scales_rewards=True)

    def build_own(self, behavior_name: str, behavior_spec: BehaviorSpec, seed: int) -> None:
        settings = self.settings
        hyperparameters = self.hyperparameters
        apply_log_std_init(self.policy, hyperparameters, behavior_name)
        self._baseline_tags = [signal_tag(name, tags.baseline_estimate) for name in self.stream_names]
        self._group_rewards: dict[str, float] = {}  # agent id -> group reward of its episode so far
        self.critic: POCACritic = POCACritic(
            behavior_spec.observation_specs,
            settings.network_settings,
            behavior_spec.action_spec,
            self.stream_names,
            generator=seeding.generator(seed, Stream.CRITIC_INIT),
        ).to(self.device)
        parameters = [*self.policy.actor.parameters(), *self.critic.parameters()]
        self.optimizer = adam(parameters, hyperparameters.learning_rate, epsilon=hyperparameters.adam_epsilon)
        self.shuffle = seeding.generator(seed, Stream.SHUFFLE)
        self.buffer: POCABuffer = POCABuffer(
            [tuple(spec.shape) for spec in behavior_spec.observation_specs],
            self.policy.continuous_size,
            self.policy.discrete_branches,
            len(self.reward_signals),
            capacity=hyperparameters.buffer_size + settings.time_horizon + self.sequence_length,
            next_obs=bool(self._training_signals),
            sequence_length=self.sequence_length,
            memory_sizes=(self.policy.memory_size, self.critic.memory_size),
        )
        self._value_memories = CriticMemories(self.critic.memory_size, self.sequence_length, self.device)
        self._baseline_memories = CriticMemories(self.critic.memory_size, self.sequence_length, self.device)

    # ------------------------------------------------------------------ experience

    def _group_tensors(self, trajectory: Trajectory) -> GroupObservations:
        """The trajectory's mates as tensors (no mates: zero columns)."""
        mates, t, device = trajectory.groupmates, trajectory.length, self.device
        if mates is None:
            c, b = self.policy.continuous_size, len(self.policy.discrete_branches)
            return GroupObservations(
                [torch.zeros((t, 0, *o.shape[1:]), device=device) for o in trajectory.obs],
                torch.zeros((t, 0), dtype=torch.bool, device=device),
                torch.zeros((t, 0, c), device=device),
                torch.zeros((t, 0, b), dtype=torch.int64, device=device),
            )
        return GroupObservations(
            [self._obs_tensor(o) for o in mates.obs],
            torch.as_tensor(mates.present, device=device),
            torch.as_tensor(mates.continuous_actions, device=device),
            torch.as_tensor(mates.discrete_actions, dtype=torch.int64, device=device),
        )

    def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(obs if obs.dtype == np.uint8 else np.asarray(obs, np.float32), device=self.device)

    def _next_group(self, trajectory: Trajectory) -> GroupObservations:
        """The mates' current observations after the trajectory, as one row (their actions
        there are unknown: zeros, which the value never reads)."""
        mates = trajectory.groupmates
        count = 0 if mates is None else int(mates.next_obs[0].shape[0])
        device = self.device
        return GroupObservations(
            [self._obs_tensor(o[None]) for o in mates.next_obs]
            if mates is not None
            else [torch.zeros((1, 0, *o.shape[1:]), device=device) for o in trajectory.obs],
            torch.ones((1, count), dtype=torch.bool, device=device),
            torch.zeros((1, count, self.policy.continuous_size), device=device),
            torch.zeros((1, count, len(self.policy.discrete_branches)), dtype=torch.int64, device=device),
        )

    def add(self, trajectory: Trajectory) -> None:
        if self.settings.network_settings.normalize:
            self.policy.update_normalization(trajectory.obs)
            self.critic.update_normalization(trajectory.obs)
        obs = self.policy.obs_to_tensors(trajectory.obs)
        group = self._group_tensors(trajectory)
        critic_memories = baseline_memories = None
        with torch.no_grad():
            rows = self._rows_with_next(trajectory, obs, group)
            if self.critic.memory_size:
                values, baselines, critic_memories, baseline_memories = self._recurrent_estimates(trajectory, rows)
            else:
                values, baselines = self.critic.values_and_baselines(*self._split_rows(rows, len(obs)))
        t = trajectory.length
        next_values = {name: v[t:] for name, v in values.items()}
        values = {name: v[:t] for name, v in values.items()}
        baselines = {name: b[:t] for name, b in baselines.items()}
        group_over = trajectory.done_reached and trajectory.all_group_dones_reached
        terminated = group_over and not bool(trajectory.interrupted[-1])
        streams = len(self.reward_signals)
        advantages = np.zeros((t, streams), np.float32)
        returns = np.zeros((t, streams), np.float32)
        baseline_columns = np.zeros((t, streams), np.float32)
        for i, signal in enumerate(self.reward_signals):
            value = values[signal.name].cpu().numpy()
            baseline = baselines[signal.name].cpu().numpy()
            rewards = signal.rewards(trajectory)
            _, returns[:, i] = gae(
                self.learned_rewards(signal.name, trajectory, rewards),
                value,
                float(next_values[signal.name][0]),
                terminated and not signal.ignore_done,
                signal.gamma,
                self.hyperparameters.lambd,
            )
            advantages[:, i] = returns[:, i] - baseline
            baseline_columns[:, i] = baseline
            self.stats_reporter.add_stat(self._value_tags[i], float(value.mean()))
            self.stats_reporter.add_stat(self._baseline_tags[i], float(baseline.mean()))
            self._episode_rewards.add(trajectory, signal.name, rewards)
        self._report_group_reward(trajectory, group_over)
        self.buffer.append(
            trajectory,
            advantages.mean(axis=1),
            returns,
            baseline_columns,
            None if critic_memories is None else critic_memories.cpu().numpy(),
            None if baseline_memories is None else baseline_memories.cpu().numpy(),
        )

    def _rows_with_next(
        self, trajectory: Trajectory, obs: list[torch.Tensor], group: GroupObservations
    ) -> list[torch.Tensor]:
        """The trajectory's rows and one more after them (the agent's next observation with its
        mates' current ones), so one critic pass gives the values and the value to bootstrap
        from: the agent's observations, the mates' observations, their presence and actions, as
        one list of tensors (:meth:`_split_rows` reads it). A group that changed size at the
        end is widened with absent mates, which attention does not read."""
        next_group = self._next_group(trajectory)
        width = max(group.size, next_group.size)
        return [
            *(torch.cat([o, n]) for o, n in zip(obs, (self._obs_tensor(o[None]) for o in trajectory.next_obs))),
            *(torch.cat([_widen(o, width), _widen(n, width)]) for o, n in zip(group.obs, next_group.obs)),
            torch.cat([_widen(group.present, width), _widen(next_group.present, width)]),
            torch.cat([_widen(group.continuous_actions, width), _widen(next_group.continuous_actions, width)]),
            torch.cat([_widen(group.discrete_actions, width), _widen(next_group.discrete_actions, width)]),
        ]

    @staticmethod
    def _split_rows(parts: list[torch.Tensor], sensors: int) -> tuple[list[torch.Tensor], GroupObservations]:
        """:meth:`_rows_with_next`'s list (or a slice of its rows) as the critic's arguments."""
        return parts[:sensors], GroupObservations(parts[sensors : 2 * sensors], *parts[2 * sensors :])

    def _recurrent_estimates(
        self, trajectory: Trajectory, rows: list[torch.Tensor]
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """Values and baselines of :meth:`_rows_with_next`'s rows, run sequence by sequence from
        the agent's carried memories; and both memories at each sequence's start."""
        sensors = len(trajectory.obs)

        def value_pass(parts: list[torch.Tensor], memory: torch.Tensor, length: int):
            return self.critic.values_and_memories(*self._split_rows(parts, sensors), memory, length)

        def baseline_pass(parts: list[torch.Tensor], memory: torch.Tensor, length: int):
            return self.critic.baselines_and_memories(*self._split_rows(parts, sensors), memory, length)

        values, value_starts = self._value_memories.evaluate(trajectory, rows, value_pass)
        baselines, baseline_starts = self._baseline_memories.evaluate(trajectory, rows, baseline_pass)
        return values, baselines, value_starts, baseline_starts

    def _report_group_reward(self, trajectory: Trajectory, group_over: bool) -> None:
        agent = trajectory.agent_id
        total = self._group_rewards.pop(agent, 0.0) + float(trajectory.group_rewards.sum())
        if not trajectory.done_reached:
            self._group_rewards[agent] = total
        elif group_over:
            self.stats_reporter.add_stats(
                tags.GROUP_CUMULATIVE_REWARD, np.array([total]), StatsAggregationMethod.HISTOGRAM
            )

    # ------------------------------------------------------------------ update

    def minibatch_losses(
        self, batch: POCABatch, beta: float, epsilon: float
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        policy_loss, value_loss, baseline_loss, loss = self.losses(batch, beta, epsilon)
        # the policy loss's magnitude, as PPO reports it
        reported = {
            tags.POLICY_LOSS: policy_loss.detach().abs(),
            tags.VALUE_LOSS: value_loss,
            tags.BASELINE_LOSS: baseline_loss,
        }
        return reported, loss

    def losses(
        self, batch: POCABatch, beta: float, epsilon: float
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(policy loss, value loss, baseline loss, the loss to minimise) on ``batch``."""
        agent, length, mask = batch.agent, self.sequence_length, batch.agent.loss_masks
        continuous_log_probs, discrete_log_probs, entropy = self.policy.actor.evaluate_actions(
            list(agent.obs),
            agent.action_masks,
            agent.continuous_actions,
            agent.discrete_actions,
            memories=agent.memories[::length] if self.policy.memory_size else None,
            sequence_length=length,
        )
        log_probs = torch.cat([continuous_log_probs, discrete_log_probs], dim=1)
        recurrent = self.critic.memory_size > 0
        values, baselines = self.critic.values_and_baselines(
            list(agent.obs),
            batch.group,
            agent.critic_memories[::length] if recurrent else None,
            batch.baseline_memories[::length] if recurrent else None,
            length,
        )
        value_loss = torch.stack(
            [
                value_loss_of(values[signal.name], agent.returns[:, i], mask)
                for i, signal in enumerate(self.reward_signals)
            ]
        ).mean()
        baseline_loss = torch.stack(
            [
                clipped_value_loss(
                    baselines[signal.name], batch.old_baselines[:, i], agent.returns[:, i], epsilon, mask
                )
                for i, signal in enumerate(self.reward_signals)
            ]
        ).mean()
        policy_loss = clipped_surrogate_loss(log_probs, agent.old_log_probs, agent.advantages, epsilon, mask)
        loss = policy_loss + 0.5 * (value_loss + 0.5 * baseline_loss) - beta * masked_mean(entropy, mask)
        return policy_loss, value_loss, baseline_loss, loss


def _widen(x: torch.Tensor, width: int) -> torch.Tensor:
    """``x`` [rows, M, ...] padded with zeros (False: absent) to ``width`` mate columns."""
    if x.shape[1] == width:
        return x
    pad = x.new_zeros((x.shape[0], width - x.shape[1], *x.shape[2:]))
    return torch.cat([x, pad], dim=1)
