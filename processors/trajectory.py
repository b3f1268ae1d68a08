"""What the processors hand to trainers: trajectories as a struct of arrays.

Shape convention: ``T`` is time (steps of one agent, axis 0), ``N`` agents in one batch,
``c`` continuous action size, ``b`` discrete branches, ``m`` total discrete choices (sum of
branch sizes), ``k`` recurrent memory size. Fields that an action spec lacks are present
with width 0 (``[T, 0]``), so consumers never branch on ``None``; an agent outside any
group has group id 0 and group rewards 0 at every step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple

from processors.groups import Groupmates


class AgentExperience(NamedTuple):
    """One transition of one agent, a per-step view of a :class:`Trajectory` row.

    ``obs`` is what the agent saw when it chose ``continuous_action``/``discrete_action``;
    ``reward``, ``done`` and ``interrupted`` come from the agent's next appearance.
    """

    obs: tuple[np.ndarray, ...]
    reward: float
    done: bool
    interrupted: bool
    continuous_action: np.ndarray  # [c] as sampled by the policy (unclipped)
    discrete_action: np.ndarray  # [b] indices
    continuous_log_prob: np.ndarray  # [c]
    discrete_log_prob: np.ndarray  # [b]
    action_mask: np.ndarray  # [m] bool, True where the action was allowed
    prev_continuous_action: np.ndarray  # [c], zeros at episode start
    prev_discrete_action: np.ndarray  # [b], zeros at episode start
    memory: np.ndarray  # [k] the memory fed to the policy with ``obs``
    group_id: int  # the agent's group when it saw ``obs`` (0: no group)
    group_reward: float  # the group reward that came with ``reward``


@attrs.frozen(slots=True, eq=False)
class Trajectory:
    """Up to ``time_horizon`` consecutive transitions of one agent, one array per field.

    ``done``/``interrupted`` are False everywhere but possibly the last row. The trainer
    bootstraps the value of ``next_obs`` unless the trajectory ended in a true terminal
    (``terminated``): an interrupted (max-step) ending or a time-horizon cut is truncation.
    Arrays may be views into a batch the processor gathered; treat them as read-only.
    """

    behavior_id: str
    agent_id: str  # global id: agent_{worker_id}-{local_id}
    obs: tuple[np.ndarray, ...]  # one [T, *shape] per sensor
    next_obs: tuple[np.ndarray, ...]  # one [*shape] per sensor: what followed the last step
    rewards: np.ndarray  # [T] float32
    done: np.ndarray  # [T] bool
    interrupted: np.ndarray  # [T] bool
    continuous_actions: np.ndarray  # [T, c] float32, as sampled (unclipped)
    discrete_actions: np.ndarray  # [T, b] int32
    continuous_log_probs: np.ndarray  # [T, c] float32
    discrete_log_probs: np.ndarray  # [T, b] float32
    action_masks: np.ndarray  # [T, m] bool, True where the action was allowed
    prev_continuous_actions: np.ndarray  # [T, c] float32
    prev_discrete_actions: np.ndarray  # [T, b] int32
    memories: np.ndarray  # [T, k] float32
    # Unity's multi-agent groups. ``group_id[t]`` is the agent's group in the step where it
    # saw ``obs[t]`` (0: no group); ``group_rewards[t]`` is the group reward that came with
    # ``rewards[t]`` (from the agent's next DecisionSteps/TerminalSteps row). Zeros when
    # left out.
    group_id: np.ndarray = attrs.field(
        default=attrs.Factory(lambda self: np.zeros(self.rewards.shape[0], np.int32), takes_self=True)
    )  # [T] int32
    group_rewards: np.ndarray = attrs.field(
        default=attrs.Factory(lambda self: np.zeros(self.rewards.shape[0], np.float32), takes_self=True)
    )  # [T] float32
    # The first trajectory of the agent's episode: a trainer that carries state from one
    # trajectory of an agent to the next (a recurrent critic's memory) starts it afresh.
    episode_start: bool = False
    # The group mates' observations, actions, rewards and done flags at each step (POCA's
    # centralised critic); None while no agent of the behavior has been in a group.
    groupmates: Groupmates | None = None

    @property
    def length(self) -> int:
        """Number of transitions ``T``."""
        return int(self.rewards.shape[0])

    def __len__(self) -> int:
        return self.length

    @property
    def done_reached(self) -> bool:
        """The agent's episode ended with this trajectory (terminal or interrupted)."""
        return bool(self.done[-1])

    @property
    def terminated(self) -> bool:
        """The episode truly ended: no value to bootstrap from ``next_obs``."""
        return bool(self.done[-1] and not self.interrupted[-1])

    @property
    def all_group_dones_reached(self) -> bool:
        """Every group mate at the last step was done with it too (or there was none): with
        :attr:`done_reached`, the group's episode is over (ML-Agents' name)."""
        return self.groupmates is None or self.groupmates.all_done_at_end

    def experience(self, t: int) -> AgentExperience:
        """Row ``t`` as an :class:`AgentExperience` (views, not copies)."""
        return AgentExperience(
            obs=tuple(o[t] for o in self.obs),
            reward=float(self.rewards[t]),
            done=bool(self.done[t]),
            interrupted=bool(self.interrupted[t]),
            continuous_action=self.continuous_actions[t],
            discrete_action=self.discrete_actions[t],
            continuous_log_prob=self.continuous_log_probs[t],
            discrete_log_prob=self.discrete_log_probs[t],
            action_mask=self.action_masks[t],
            prev_continuous_action=self.prev_continuous_actions[t],
            prev_discrete_action=self.prev_discrete_actions[t],
            memory=self.memories[t],
            group_id=int(self.group_id[t]),
            group_reward=float(self.group_rewards[t]),
        )

    def experiences(self) -> Iterator[AgentExperience]:
        """Every row in time order, for code that wants steps."""
        return (self.experience(t) for t in range(self.length))


@attrs.frozen(slots=True, eq=False)
class ActionInfo:
    """What the env manager acted with for one behavior on one worker, row per agent.

    ``agent_ids`` are local ids, in the order of the DecisionSteps rows that were acted
    on. ``continuous_actions`` are the policy's samples (kept for training);
    ``env_actions`` is what the environment received (continuous clipped to [-1, 1]).
    ``memories`` is the recurrent memory the policy produced, to be fed with the agent's
    next observation.
    """

    agent_ids: np.ndarray  # [N] int32
    env_actions: ActionTuple
    continuous_actions: np.ndarray  # [N, c] float32
    discrete_actions: np.ndarray  # [N, b] int32
    continuous_log_probs: np.ndarray  # [N, c] float32
    discrete_log_probs: np.ndarray  # [N, b] float32
    entropy: np.ndarray  # [N] float32
    memories: np.ndarray  # [N, k] float32

    def __len__(self) -> int:
        return int(self.agent_ids.shape[0])

    @staticmethod
    def empty(continuous_size: int = 0, discrete_branches: int = 0, memory_size: int = 0) -> ActionInfo:
        """The action info of a step on which no agent acted."""
        cont = np.zeros((0, continuous_size), np.float32)
        disc = np.zeros((0, discrete_branches), np.int32)
        return ActionInfo(
            agent_ids=np.zeros(0, np.int32),
            env_actions=ActionTuple(continuous=cont, discrete=disc),
            continuous_actions=cont,
            discrete_actions=disc,
            continuous_log_probs=np.zeros((0, continuous_size), np.float32),
            discrete_log_probs=np.zeros((0, discrete_branches), np.float32),
            entropy=np.zeros(0, np.float32),
            memories=np.zeros((0, memory_size), np.float32),
        )
