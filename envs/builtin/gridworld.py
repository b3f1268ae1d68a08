"""GridWorld: reach the goal and avoid the pit on a small grid seen as an image (9 agents per area).

Each agent has its own n x n grid (n = 5 by default) with a goal (+1) and a pit (-1), both
ending the episode, placed at random with the agent each episode; every decision costs -0.01;
an episode is interrupted after 50 decisions. A shortest path scores about 0.96 on average,
above Unity's benchmark target of 0.8.

Observation: an HWC float32 image in [0, 1], 4 pixels per cell: red = pit, green = goal,
blue = agent, grey (0.5) = wall beyond the current grid size. Action: one discrete branch of 5
(0 noop, 1 up, 2 down, 3 left, 4 right); moves into walls are masked (and ignored if taken).

Environment parameters: ``gridSize`` (Unity's name, 5), rounded. Its value at construction
fixes the image size (4 * capacity pixels a side): the capacity is the constant's value, or the
highest value a sampler can draw (a uniform's max, a multirange's highest max, 10 for a
gaussian), clamped to [3, 10]. It is then read per agent at each episode start (a sampler draws
for every agent starting one): the agent's grid, clamped to [3, capacity], inside that image
(``grid_size``, [N] per slot).
Stats: ``GridWorld/Goal Reached`` (AVERAGE, per finished episode), ``GridWorld/Grid Size``
(MOST_RECENT, at episode ends: the grid of the last agent restarted).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_discrete, visual_obs_spec

AGENTS_PER_AREA = 9
MAX_STEP = 50
PIXELS_PER_CELL = 4
MIN_GRID, MAX_GRID, DEFAULT_GRID = 3, 10, 5
#: Row and column change of actions noop, up, down, left, right.
_DROW = np.array([0, -1, 1, 0, 0])
_DCOL = np.array([0, 0, 0, -1, 1])


class GridWorldEnv(BuiltinEnv):
    """Nine grid agents per area; discrete (5,) with wall masks, visual observation (H, W, 3)."""

    env_name = "GridWorld"

    def _setup(self) -> None:
        n = AGENTS_PER_AREA * self.num_areas
        self._capacity = int(np.clip(np.rint(self._param_high("gridSize", DEFAULT_GRID)), MIN_GRID, MAX_GRID))
        side = self._capacity * PIXELS_PER_CELL
        spec = BehaviorSpec([visual_obs_spec(side, side, 3)], action_spec_discrete(5))
        self._agents = self._add_behavior("GridWorld", spec, n)
        self._slots = np.arange(n)
        cells = np.arange(self._capacity**2)
        self._cell_row, self._cell_col = cells // self._capacity, cells % self._capacity
        self._size = np.zeros(n, dtype=np.int64)
        self._agent = np.zeros((n, 2), dtype=np.int64)  # row, column
        self._goal = np.zeros((n, 2), dtype=np.int64)
        self._pit = np.zeros((n, 2), dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)

    @property
    def grid_size(self) -> np.ndarray:
        """[N] int64, the grid size of each slot's current episode."""
        return self._size

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        size = np.clip(np.rint(self._param_array("gridSize", DEFAULT_GRID, len(slots))), MIN_GRID, self._capacity)
        self._size[slots] = size
        inside = (self._cell_row[None, :] < size[:, None]) & (self._cell_col[None, :] < size[:, None])
        keys = self._rng.random((len(slots), inside.shape[1]))
        keys[~inside] = 2.0  # never picked
        picks = np.argsort(keys, axis=1)[:, :3]  # three distinct cells per agent
        for target, column in ((self._agent, 0), (self._goal, 1), (self._pit, 2)):
            target[slots, 0] = self._cell_row[picks[:, column]]
            target[slots, 1] = self._cell_col[picks[:, column]]
        self._steps[slots] = 0

    def _observe(self, slots: np.ndarray) -> np.ndarray:
        """[len(slots), H, W, 3] float32 images."""
        k, g = len(slots), self._capacity
        rows = np.arange(k)
        cells = np.zeros((k, g, g, 3), dtype=np.float32)
        size = self._size[slots, None]
        wall = (self._cell_row[None, :] >= size) | (self._cell_col[None, :] >= size)
        cells.reshape(k, g * g, 3)[wall] = 0.5
        cells[rows, self._pit[slots, 0], self._pit[slots, 1], 0] = 1.0
        cells[rows, self._goal[slots, 0], self._goal[slots, 1], 1] = 1.0
        cells[rows, self._agent[slots, 0], self._agent[slots, 1], 2] = 1.0
        return cells.repeat(PIXELS_PER_CELL, axis=1).repeat(PIXELS_PER_CELL, axis=2)

    def _masks(self) -> np.ndarray:
        """[N, 5] bool, True where a move would hit a wall."""
        row, col = self._agent[:, 0], self._agent[:, 1]
        last = self._size - 1
        return np.stack([np.zeros_like(row, dtype=bool), row == 0, row == last, col == 0, col == last], axis=1)

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, [self._observe(self._slots)], self._masks())

    def _advance(self) -> None:
        action = self._agents.discrete[:, 0]
        action = np.where((action >= 0) & (action < 5), action, 0)
        moved = self._agent + np.stack([_DROW[action], _DCOL[action]], axis=1)
        inside = ((moved >= 0) & (moved < self._size[:, None])).all(axis=1)
        self._agent = np.where(inside[:, None], moved, self._agent)
        self._steps += 1
        at_goal = (self._agent == self._goal).all(axis=1)
        at_pit = (self._agent == self._pit).all(axis=1)
        self._agents.reward += (-0.01 + 1.0 * at_goal - 1.0 * at_pit).astype(np.float32)
        interrupted = (self._steps >= MAX_STEP) & ~at_goal & ~at_pit
        done = at_goal | at_pit | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, [self._observe(ended)], interrupted[ended])
            self._stats.add("GridWorld/Goal Reached", at_goal[ended].astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._begin_episodes(ended)
            self._stats.add("GridWorld/Grid Size", self._size[ended], StatsAggregationMethod.MOST_RECENT)
        self._agents.decide(self._slots, [self._observe(self._slots)], self._masks())
