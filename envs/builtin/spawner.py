"""Spawner: agents appear and vanish mid-episode, as spawned and destroyed Unity agents do.

Up to 8 agents per area, each moving a point on the line [-1, 1] onto its goal (0.3 to 1.0
away at the start). Every tick an
empty slot spawns a new agent (fresh id, deciding at once) with probability
``spawn_probability`` (0.1), and a present agent vanishes with probability
``vanish_probability`` (0.02): like a disabled Unity agent it reports a terminal step that is not
interrupted, and its slot stays empty at least until the next tick. Half the slots are filled at
reset.

Observation: position and goal (2 floats). Action: continuous (1,), a move of up to 0.2 per
decision. Reward -0.01 per decision, +1 and episode end within 0.1 of the goal (the slot starts
a new episode with a new id); interrupted after 30 decisions.

Environment parameters, scene settings read once every tick (a sampler draws once per tick, the
value applying to every slot that tick; the values last read are ``spawn_probability`` and
``vanish_probability``): ``spawn_probability`` (0.1), ``vanish_probability`` (0.02).
Stats: ``Spawner/Active Agents`` (MOST_RECENT, every tick), ``Spawner/Goal Reached`` (AVERAGE,
per episode that ended by itself), ``Spawner/Vanished`` (SUM, agents removed in a tick).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_continuous, vector_obs_spec

SLOTS_PER_AREA = 8
MAX_STEP = 30
SPEED = 0.2
RADIUS = 0.1


class SpawnerEnv(BuiltinEnv):
    """Agents that come and go; continuous (1,), vector observation (2,)."""

    env_name = "Spawner"

    def _setup(self) -> None:
        n = SLOTS_PER_AREA * self.num_areas
        spec = BehaviorSpec([vector_obs_spec(2)], action_spec_continuous(1))
        self._agents = self._add_behavior("Spawner", spec, n)
        self._pos = np.zeros(n)
        self._goal = np.zeros(n)
        self._steps = np.zeros(n, dtype=np.int64)
        #: The probabilities read at the last tick (the defaults before the first).
        self.spawn_probability = 0.1
        self.vanish_probability = 0.02

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        pos = self._rng.uniform(-1.0, 1.0, len(slots))
        offset = self._rng.uniform(0.3, 1.0, len(slots)) * self._rng.choice([-1.0, 1.0], len(slots))
        goal = pos + offset
        self._pos[slots] = pos
        self._goal[slots] = np.where(np.abs(goal) > 1.0, pos - offset, goal)
        self._steps[slots] = 0

    def _observe(self, slots: np.ndarray) -> np.ndarray:
        return np.stack([self._pos[slots], self._goal[slots]], axis=1).astype(np.float32)

    def _decide(self) -> None:
        present = np.flatnonzero(self._agents.active)
        self._agents.decide(present, [self._observe(present)])
        self._stats.add("Spawner/Active Agents", len(present), StatsAggregationMethod.MOST_RECENT)

    def _reset_world(self) -> None:
        self._begin_episodes(np.arange(self._agents.n_slots // 2))
        self._decide()

    def _advance(self) -> None:
        active = self._agents.active
        n = len(active)
        action = np.clip(self._agents.continuous[:, 0], -1.0, 1.0)
        self._pos = np.where(active, np.clip(self._pos + SPEED * action, -1.0, 1.0), self._pos)
        self._steps += active
        reached = active & (np.abs(self._pos - self._goal) < RADIUS)
        self._agents.reward += np.where(active, -0.01 + 1.0 * reached, 0.0).astype(np.float32)
        interrupted = active & (self._steps >= MAX_STEP) & ~reached
        draws = self._rng.random((2, n))
        self.vanish_probability = self._param("vanish_probability", 0.02)
        self.spawn_probability = self._param("spawn_probability", 0.1)
        vanished = active & ~reached & ~interrupted & (draws[0] < self.vanish_probability)
        ended = np.flatnonzero(reached | interrupted | vanished)
        if len(ended):
            self._agents.end(ended, [self._observe(ended)], interrupted[ended])
            finished = (reached | interrupted)[ended]
            if finished.any():
                self._stats.add(
                    "Spawner/Goal Reached",
                    reached[ended][finished].astype(np.float64),
                    StatsAggregationMethod.AVERAGE,
                )
            self._begin_episodes(np.flatnonzero(reached | interrupted))
            self._agents.remove(np.flatnonzero(vanished))
        if vanished.any():
            self._stats.add("Spawner/Vanished", int(vanished.sum()), StatsAggregationMethod.SUM)
        spawned = ~active & (draws[1] < self.spawn_probability)
        self._begin_episodes(np.flatnonzero(spawned))
        self._decide()
