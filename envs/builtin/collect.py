"""Collect: reach an item among a varying number of them, seen as a variable-length observation
(what Unity's BufferSensor and ML-Agents' attention encoder are for; 1 agent per area).

Each episode places the agent uniformly in the square [-1, 1]^2 and between ``min_items`` (1)
and ``max_items`` (6) items (count uniform), each uniformly in the square but at least
``2 * COLLECT_RADIUS`` from the agent. Each decision moves the agent by ``SPEED * clip(action,
-1, 1)`` on each axis (walls stop it); an item within ``COLLECT_RADIUS`` (0.15) of the agent
after the move is collected (the nearest, if several) and ends the episode. Every decision
costs -0.01 and collecting adds +1; an episode without a collection is interrupted after
``max_step`` (50) decisions, having scored -0.5.

Observations, in ML-Agents' order (vector, then variable-length):

- vector (4): the agent's position x, y and its last move per decision (velocity) vx, vy;
- variable-length (``max_items``, 4), spec ``dimension_property`` (VARIABLE_SIZE, NONE) as
  Unity's BufferSensor sends: one row per item, ``[dx, dy, distance, 1]`` with (dx, dy) the
  item's position relative to the agent; the rows of present items come first, in the random
  order of their placement (not sorted by distance: finding the nearest is the policy's work),
  the rows after them are all zeros (absent, as a BufferSensor pads; the trailing 1 keeps a
  present row nonzero even on top of the agent).

Action: 2 continuous values (move x, y). Heading for the nearest item (each axis clipped)
collects in about 3 decisions on average: returns of about 0.97 (measured over 5000 episodes);
uniformly random actions score about 0.06 (43% of episodes collect something within 50
decisions) and standing still -0.5. Nothing but the variable-length observation tells where the
items are: a policy that ignores it can only search blindly.

Environment parameters: ``max_items`` (6, between 1 and 16) fixes the spec, so it is read once,
at construction (a sampler draws once then; later values are ignored); ``min_items`` (1, clamped
to [1, max_items]) and ``max_step`` (50, >= 1) are read per agent at each episode start (a
sampler draws for every agent starting one; the limit in use is ``max_step``, [N] per slot; the
item count drawn is in the ``Collect/Item Count`` stat); all rounded. Stats: ``Collect/Collected`` (AVERAGE, 1 when the episode ended
with a collection), ``Collect/Nearest Collected`` (AVERAGE, 1 when the item collected was the
nearest at the episode's start), ``Collect/Item Count`` (AVERAGE, items in the episode).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_continuous, var_len_obs_spec, vector_obs_spec

DEFAULT_MAX_ITEMS, MAX_MAX_ITEMS = 6, 16
DEFAULT_MAX_STEP = 50
#: Move per decision and axis at full action, and the reach within which an item is collected.
SPEED = 0.2
COLLECT_RADIUS = 0.15
TIME_PENALTY, COLLECT_REWARD = 0.01, 1.0
#: Features of an item row: dx, dy, distance, present.
ENTITY_SIZE = 4


class CollectEnv(BuiltinEnv):
    """One agent per area among 1-6 items; continuous (2,), vector (4,) and variable-length (6, 4)."""

    env_name = "Collect"

    def _setup(self) -> None:
        n = self.num_areas
        self.max_items = int(np.clip(np.rint(self._param("max_items", DEFAULT_MAX_ITEMS)), 1, MAX_MAX_ITEMS))
        spec = BehaviorSpec(
            [vector_obs_spec(4), var_len_obs_spec(self.max_items, ENTITY_SIZE)], action_spec_continuous(2)
        )
        self._agents = self._add_behavior("Collect", spec, n)
        self._slots = np.arange(n)
        self._pos = np.zeros((n, 2))
        self._vel = np.zeros((n, 2))
        self._items = np.zeros((n, self.max_items, 2))
        self._present = np.zeros((n, self.max_items), dtype=bool)
        self._nearest = np.zeros(n, dtype=np.int64)  # the nearest item at the episode's start
        self._steps = np.zeros(n, dtype=np.int64)
        self._max_step = np.full(n, DEFAULT_MAX_STEP, dtype=np.int64)

    @property
    def max_step(self) -> np.ndarray:
        """[N] int64, the decision limit of each slot's current episode."""
        return self._max_step

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        k = len(slots)
        low = np.clip(np.rint(self._param_array("min_items", 1, k)), 1, self.max_items).astype(np.int64)
        self._max_step[slots] = np.maximum(np.rint(self._param_array("max_step", DEFAULT_MAX_STEP, k)), 1)
        self._pos[slots] = self._rng.uniform(-1.0, 1.0, (k, 2))
        self._vel[slots] = 0.0
        counts = self._rng.integers(low, self.max_items + 1, size=k)
        self._present[slots] = np.arange(self.max_items)[None, :] < counts[:, None]
        items = self._rng.uniform(-1.0, 1.0, (k, self.max_items, 2))
        while True:  # redraw items placed within reach of the agent's start
            close = np.linalg.norm(items - self._pos[slots, None, :], axis=2) < 2 * COLLECT_RADIUS
            if not close.any():
                break
            items[close] = self._rng.uniform(-1.0, 1.0, (int(close.sum()), 2))
        self._items[slots] = items
        self._nearest[slots] = self._distances(slots).argmin(axis=1)
        self._steps[slots] = 0

    def _distances(self, slots: np.ndarray) -> np.ndarray:
        """[len(slots), max_items] agent-item distances, inf for absent items."""
        distance = np.linalg.norm(self._items[slots] - self._pos[slots, None, :], axis=2)
        return np.where(self._present[slots], distance, np.inf)

    def _observe(self, slots: np.ndarray) -> list[np.ndarray]:
        """Vector [len(slots), 4] and items [len(slots), max_items, 4], float32."""
        vector = np.concatenate([self._pos[slots], self._vel[slots]], axis=1).astype(np.float32)
        delta = self._items[slots] - self._pos[slots, None, :]
        rows = np.concatenate(
            [delta, np.linalg.norm(delta, axis=2, keepdims=True), np.ones(delta.shape[:2] + (1,))], axis=2
        )
        rows[~self._present[slots]] = 0.0
        return [vector, rows.astype(np.float32)]

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, self._observe(self._slots))

    def _advance(self) -> None:
        action = np.nan_to_num(self._agents.continuous.astype(np.float64))
        moved = np.clip(self._pos + SPEED * np.clip(action, -1.0, 1.0), -1.0, 1.0)
        self._vel = moved - self._pos
        self._pos = moved
        self._steps += 1
        distance = self._distances(self._slots)
        collected = distance.min(axis=1) <= COLLECT_RADIUS
        nearest_collected = collected & (distance.argmin(axis=1) == self._nearest)
        self._agents.reward += (-TIME_PENALTY + COLLECT_REWARD * collected).astype(np.float32)
        interrupted = ~collected & (self._steps >= self._max_step)
        done = collected | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, self._observe(ended), interrupted[ended])
            for key, values in (
                ("Collect/Collected", collected[ended]),
                ("Collect/Nearest Collected", nearest_collected[ended]),
                ("Collect/Item Count", self._present[ended].sum(axis=1)),
            ):
                self._stats.add(key, values.astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._begin_episodes(ended)
        self._agents.decide(self._slots, self._observe(self._slots))
