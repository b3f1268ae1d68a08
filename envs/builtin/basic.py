"""Basic: walk along a line of 20 cells to one of two goals, like Unity's Basic (1 agent per area).

The agent starts at cell 10; a small goal (+0.1) sits at cell 7 and a large goal (+1) at
cell 17; every decision costs -0.01 and reaching either goal ends the episode. Going right
for 7 decisions scores 1 - 0.07 = 0.93 (Unity's benchmark target); an agent that never reaches
a goal is interrupted after 100 decisions.

Observation: one-hot position (20 floats). Action: one discrete branch of 3
(0 stay, 1 left, 2 right); nothing is masked (walls simply stop the agent).
Environment parameters, read per agent at each episode start (a sampler draws for every
agent starting one): ``small_goal_position`` (7), ``large_goal_position`` (17),
``start_position`` (10), rounded and clamped to the line.
Stats: ``Basic/Large Goal Reached`` (AVERAGE, per finished episode) and
``Basic/Large Goal Position`` (MOST_RECENT, at episode ends: the large goal of the last agent
restarted).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_discrete, one_hot, vector_obs_spec

SIZE = 20
MAX_STEP = 100
_MOVES = np.array([0, -1, 1])


class BasicEnv(BuiltinEnv):
    """One agent per area on a 20-cell line; discrete (3,), one-hot observation (20,)."""

    env_name = "Basic"

    def _setup(self) -> None:
        n = self.num_areas
        spec = BehaviorSpec([vector_obs_spec(SIZE)], action_spec_discrete(3))
        self._agents = self._add_behavior("Basic", spec, n)
        self._slots = np.arange(n)
        self._pos = np.zeros(n, dtype=np.int64)
        self._small = np.zeros(n, dtype=np.int64)
        self._large = np.zeros(n, dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)

    def _cells(self, key: str, default: float, n: int) -> np.ndarray:
        """[n] int64 cells: the parameter read for ``n`` agents, rounded and clamped to the line."""
        return np.clip(np.rint(self._param_array(key, default, n)), 0, SIZE - 1).astype(np.int64)

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        k = len(slots)
        self._pos[slots] = self._cells("start_position", 10, k)
        self._small[slots] = self._cells("small_goal_position", 7, k)
        self._large[slots] = self._cells("large_goal_position", 17, k)
        self._steps[slots] = 0

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, [one_hot(self._pos, SIZE)])

    def _advance(self) -> None:
        action = self._agents.discrete[:, 0]
        move = np.where((action >= 0) & (action < 3), _MOVES[np.clip(action, 0, 2)], 0)
        self._pos = np.clip(self._pos + move, 0, SIZE - 1)
        self._steps += 1
        at_large = self._pos == self._large
        at_small = (self._pos == self._small) & ~at_large
        reward = -0.01 + 0.1 * at_small + 1.0 * at_large
        self._agents.reward += reward.astype(np.float32)
        interrupted = (self._steps >= MAX_STEP) & ~at_small & ~at_large
        done = at_small | at_large | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, [one_hot(self._pos[ended], SIZE)], interrupted[ended])
            self._stats.add(
                "Basic/Large Goal Reached",
                at_large[ended].astype(np.float64),
                StatsAggregationMethod.AVERAGE,
            )
            self._begin_episodes(ended)
            self._stats.add("Basic/Large Goal Position", self._large[ended], StatsAggregationMethod.MOST_RECENT)
        self._agents.decide(self._slots, [one_hot(self._pos, SIZE)])
