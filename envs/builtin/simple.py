"""Simple: ML-Agents' learning-test environment (``SimpleEnvironment`` of its trainer tests),
with continuous, discrete or hybrid actions (1 agent per area).

Each agent sees a goal, -1 or +1 (drawn at every episode start), as one float. It has one
position per action dimension (``continuous_size`` continuous dimensions, then
``discrete_branches`` branches of 2), each starting at 0 and clamped to [-1, 1]. Each decision
moves every position: a continuous action by its value, a discrete one by +1 (choice 1) or -1
(choice 0), each move clamped to [-step_size, step_size]. The episode ends when every position
sits at an end (+-1); then the reward is ``1.06 * mean_i(position_i * goal)`` (+1.06 when all
reached the goal's end, -1.06 when all reached the other), before that every decision costs
-0.01. As in ML-Agents, there is no episode length limit (``max_step`` 0) unless one is given,
in which case the episode is interrupted after that many decisions.

With ML-Agents' hybrid test settings (``step_size`` 0.8) the best return is 1.06 - 0.01 = 1.05
(two decisions); ML-Agents' tests pass when the mean of the last 5 returns exceeds 0.9.

Constructor options (or environment parameters of the same names given at construction: the
action spec cannot change later): ``continuous_size`` (1), ``discrete_branches`` (0),
``step_size`` (0.2), ``max_step`` (0). Every finished episode's return is appended to
``episode_returns`` (ML-Agents' ``final_rewards``) and recorded as the stat
``Simple/Episode Return`` (AVERAGE).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlagents_envs.base_env import ActionSpec, BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, vector_obs_spec

#: ML-Agents' constants: reward per decision, and the success reward 1 + 6 * 0.01 (sized for
#: its default step 0.2, kept whatever ``step_size`` is, as ML-Agents does).
TIME_PENALTY = 0.01
SUCCESS_REWARD = 1.0 + (int(1.0 / 0.2) + 1) * TIME_PENALTY


class SimpleEnv(BuiltinEnv):
    """Reach the observed goal's end on every action dimension; see the module docstring."""

    env_name = "Simple"

    def __init__(
        self,
        *,
        seed: int,
        worker_id: int = 0,
        env_parameters: Mapping[str, float] | None = None,
        num_areas: int = 1,
        continuous_size: int | None = None,
        discrete_branches: int | None = None,
        step_size: float | None = None,
        max_step: int | None = None,
    ) -> None:
        params = dict(env_parameters or {})
        self.continuous_size = int(continuous_size if continuous_size is not None else params.get("continuous_size", 1))
        self.discrete_branches = int(
            discrete_branches if discrete_branches is not None else params.get("discrete_branches", 0)
        )
        self.step_size = float(step_size if step_size is not None else params.get("step_size", 0.2))
        self.max_step = int(max_step if max_step is not None else params.get("max_step", 0))
        if self.continuous_size < 0 or self.discrete_branches < 0 or self.continuous_size + self.discrete_branches == 0:
            raise ValueError(
                f"Simple: needs at least one action (continuous_size={self.continuous_size}, "
                f"discrete_branches={self.discrete_branches})"
            )
        if self.step_size <= 0:
            raise ValueError(f"Simple: step_size must be > 0 (got {self.step_size})")
        self.episode_returns: list[float] = []
        super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas)

    def _setup(self) -> None:
        n = self.num_areas
        action_spec = ActionSpec(self.continuous_size, (2,) * self.discrete_branches)
        spec = BehaviorSpec([vector_obs_spec(1)], action_spec)
        self._agents = self._add_behavior("Simple", spec, n)
        self._slots = np.arange(n)
        self._goal = np.zeros(n)
        self._pos = np.zeros((n, self.continuous_size + self.discrete_branches))
        self._steps = np.zeros(n, dtype=np.int64)
        self._return = np.zeros(n)

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        self._goal[slots] = self._rng.choice([-1.0, 1.0], size=len(slots))
        self._pos[slots] = 0.0
        self._steps[slots] = 0
        self._return[slots] = 0.0

    def _observe(self, slots: np.ndarray) -> list[np.ndarray]:
        return [self._goal[slots, None].astype(np.float32)]

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, self._observe(self._slots))

    def _advance(self) -> None:
        moves = np.concatenate(
            [self._agents.continuous.astype(np.float64), np.where(self._agents.discrete > 0, 1.0, -1.0)], axis=1
        )
        self._pos = np.clip(self._pos + np.clip(moves, -self.step_size, self.step_size), -1.0, 1.0)
        self._steps += 1
        finished = (np.abs(self._pos) >= 1.0).all(axis=1)
        reward = np.where(finished, SUCCESS_REWARD * (self._pos * self._goal[:, None]).mean(axis=1), -TIME_PENALTY)
        self._agents.reward += reward.astype(np.float32)
        self._return += reward
        interrupted = ~finished & (self._steps >= self.max_step) if self.max_step > 0 else np.zeros_like(finished)
        done = finished | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, self._observe(ended), interrupted[ended])
            self.episode_returns.extend(self._return[ended].tolist())
            self._stats.add("Simple/Episode Return", self._return[ended], StatsAggregationMethod.AVERAGE)
            self._begin_episodes(ended)
        self._agents.decide(self._slots, self._observe(self._slots))
