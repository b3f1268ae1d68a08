"""Pyramids: a sparse-reward exploration task like Unity's Pyramids, on a grid (1 agent per area).

The only reward is far away behind a switch. The area is a row of ``num_rooms`` square rooms
(3 by default) of ``room_size`` x ``room_size`` cells (5), separated by one-cell walls, each
wall with a one-cell door, alternately on the bottom and the top row (a zig-zag: 5 x 17 cells
with the defaults). The agent starts on a random cell of the first room. The switch sits in
the last room's corner farthest from its door; stepping on it presses it (it stays pressed
for the episode), and only then does the goal appear, on the first room's top-left cell
(0, 0). Stepping on the goal once it exists ends the episode. Nothing is random but the start
cell, so the layout never needs observing: it is the same every episode.

Observation: one vector of ``H + W + 1`` floats (23 with the defaults): the agent's row
one-hot (H = room_size), its column one-hot (W = num_rooms * (room_size + 1) - 1), and 1.0
once the switch is pressed (which is also when the goal exists). Enough to act optimally: the
task needs exploration, not memory. Action: one discrete branch of 5 (0 stay, 1 up, 2 down,
3 left, 4 right; moves into walls leave the agent in place; nothing is masked, as Unity's
Pyramids masks nothing).

Reward, as Unity's PyramidAgent (``AddReward(-1 / MaxStep)`` every step, with MaxStep 5000
and a decision every 5 steps): every decision costs -0.001; reaching the goal ends the episode
and its reward replaces that decision's cost (Unity's ``SetReward(2)``): +2. Pressing the
switch gives nothing. An episode without the goal is interrupted after ``max_step`` (400)
decisions, having scored -0.4.

Best scores and how hard it is, with the defaults (numbers measured with the tests' policies):

- shortest paths (switch, then goal): 48 to 56 decisions (28 - row - column of the start to
  the switch, 28 back), about **1.95** (1.945 to 1.953), every episode;
- a uniform random policy reaches the goal in about **0.015%** of episodes (3 in 20,000; it
  presses the switch in 7%): it must cross both doors, press the switch and cross them back,
  and a random walk finds a one-cell door slowly; its return is about -0.4;
- an explorer that always steps to its least-visited neighbouring cell (counting visits per
  switch state, as a novelty bonus on observations would) reaches the goal in about **98%**
  of episodes: systematic exploration solves it, which is what curiosity or RND adds;
- extrinsic-only PPO (ML-Agents' Pyramids hyperparameters with 2 layers of 64: batch 128,
  buffer 2048, beta 0.01; 200k steps, seeds 1-3) never sees the reward and scores -0.4 at every
  summary; the same settings solve a single 5x5 room (``num_rooms`` 1, switch in the far
  corner) by 30k steps, so it is exploration that fails; extrinsic-only SAC
  (``config/sac/Pyramids.yaml``, 200k steps, seed 1) likewise scores -0.4. With these defaults
  PPO with curiosity or RND at ML-Agents' strengths (same settings, 300k-step schedule) does not
  reliably solve it either: curiosity solved seed 1 by 150k steps but not seed 2 within 230k,
  RND neither seed within 300k (seed 1 reached the goal in about half the episodes at 80k-90k
  steps, then lost it and stopped pressing the switch; seed 2 pressed the switch in most
  episodes but never came back to the goal, also at strength 0.05).
- config/ppo/Pyramids.yaml and PyramidsRND.yaml therefore use 2 rooms, ``max_step`` 80 and
  ``one_hot_state`` 1, where random play reaches the goal in 0 of 100,000 episodes, and 4 areas:
  curiosity (0.02) passes 1.5 by 100k-150k steps and RND (0.05) by 60k-90k on seeds 1-3 (one
  area: 120k-140k and 70k-120k), extrinsic-only PPO with the same settings on none
  (tests/test_intrinsic_learning.py).

With ``one_hot_state`` 1 the observation is instead one one-hot over (switch, cell):
``2 * H * W`` floats (110 with 2 rooms of 5), 1.0 at ``(switch * H + row) * W + column``. Why:
with the factored one, a cell with the switch pressed looks new only if its row, column or
switch bit does, so once the switch has been seen the way back to the goal looks familiar to a
novelty bonus (curiosity, RND); one-hot, every (cell, switch) state is new on its own, as for a
count-based bonus.

Environment parameters: ``room_size`` (5, between 3 and 10), ``num_rooms`` (3, between 1 and 6)
and ``one_hot_state`` (0, the factored observation; 1 the one-hot) fix the specs, so they are
read once, at construction (a sampler draws once then; later values are ignored); ``max_step``
(400, at least 1) is read per agent at each episode start (a sampler draws for every agent
starting one; the values in use are ``max_step``, [N] per slot); all rounded and clamped. Stats: ``Pyramids/Goal Reached``
(AVERAGE, 1 when the episode reached the goal, per finished episode) and
``Pyramids/Switch Pressed`` (AVERAGE, 1 when the switch was pressed, per finished episode).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_discrete, one_hot, vector_obs_spec

DEFAULT_ROOM_SIZE, MIN_ROOM_SIZE, MAX_ROOM_SIZE = 5, 3, 10
DEFAULT_ROOMS, MIN_ROOMS, MAX_ROOMS = 3, 1, 6
DEFAULT_MAX_STEP = 400
#: Unity's PyramidAgent: the gold brick's reward, and the cost of one decision (5 steps of -1/5000).
GOAL_REWARD, STEP_REWARD = 2.0, -0.001
#: Actions: stay, up, down, left, right, and their row and column changes.
STAY, UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3, 4
N_ACTIONS = 5
_DROW = np.array([0, -1, 1, 0, 0])
_DCOL = np.array([0, 0, 0, -1, 1])


def room_layout(room_size: int, num_rooms: int) -> tuple[np.ndarray, tuple[int, int], tuple[int, int]]:
    """The area of ``num_rooms`` rooms of ``room_size`` cells a side: (free, switch, goal).

    free: [H, W] bool, False on wall cells (H = room_size, W = num_rooms * (room_size + 1) - 1);
    switch, goal: (row, column). The door of the wall after room k (k = 0, 1, ...) is on the
    bottom row for even k and the top row for odd k; the switch is in the last room's corner
    farthest from that room's door (bottom-right when it has none or its door is on the top
    row); the goal is at (0, 0).
    """
    height, width = room_size, num_rooms * (room_size + 1) - 1
    free = np.ones((height, width), dtype=bool)
    for k in range(num_rooms - 1):
        wall = (k + 1) * (room_size + 1) - 1
        free[:, wall] = False
        free[height - 1 if k % 2 == 0 else 0, wall] = True
    entry_door_on_bottom = num_rooms > 1 and (num_rooms - 2) % 2 == 0
    switch = (0 if entry_door_on_bottom else height - 1, width - 1)
    return free, switch, (0, 0)


class PyramidsEnv(BuiltinEnv):
    """One agent per area in a row of rooms; discrete (5,), vector observation (H + W + 1,), or
    (2 * H * W,) with ``one_hot_state``."""

    env_name = "Pyramids"

    def _setup(self) -> None:
        n = self.num_areas
        size = int(np.clip(np.rint(self._param("room_size", DEFAULT_ROOM_SIZE)), MIN_ROOM_SIZE, MAX_ROOM_SIZE))
        rooms = int(np.clip(np.rint(self._param("num_rooms", DEFAULT_ROOMS)), MIN_ROOMS, MAX_ROOMS))
        self.one_hot_state = bool(np.rint(self._param("one_hot_state", 0)) >= 1)
        self.free, self.switch, self.goal = room_layout(size, rooms)
        self.height, self.width = self.free.shape
        size_obs = 2 * self.height * self.width if self.one_hot_state else self.height + self.width + 1
        spec = BehaviorSpec([vector_obs_spec(size_obs)], action_spec_discrete(N_ACTIONS))
        self._agents = self._add_behavior("Pyramids", spec, n)
        self._slots = np.arange(n)
        rows, cols = np.nonzero(self.free[:, :size])
        start = (rows != self.switch[0]) | (cols != self.switch[1])
        self._start_cells = np.stack([rows[start], cols[start]], axis=1)  # the first room but the switch
        self._pos = np.zeros((n, 2), dtype=np.int64)  # row, column
        self._pressed = np.zeros(n, dtype=bool)
        self._steps = np.zeros(n, dtype=np.int64)
        self._max_step = np.full(n, DEFAULT_MAX_STEP, dtype=np.int64)

    @property
    def max_step(self) -> np.ndarray:
        """[N] int64, the decision limit of each slot's current episode."""
        return self._max_step

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        self._pos[slots] = self._start_cells[self._rng.integers(len(self._start_cells), size=len(slots))]
        self._pressed[slots] = False
        self._steps[slots] = 0
        self._max_step[slots] = np.maximum(np.rint(self._param_array("max_step", DEFAULT_MAX_STEP, len(slots))), 1)

    def _observe(self, slots: np.ndarray) -> list[np.ndarray]:
        """[len(slots), H + W + 1] float32: row one-hot, column one-hot, switch pressed; with
        ``one_hot_state``, [len(slots), 2 * H * W]: one-hot at (switch * H + row) * W + column."""
        pos = self._pos[slots]
        if self.one_hot_state:
            index = (self._pressed[slots].astype(np.int64) * self.height + pos[:, 0]) * self.width + pos[:, 1]
            return [one_hot(index, 2 * self.height * self.width)]
        pressed = self._pressed[slots, None].astype(np.float32)
        return [np.concatenate([one_hot(pos[:, 0], self.height), one_hot(pos[:, 1], self.width), pressed], axis=1)]

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, self._observe(self._slots))

    def _advance(self) -> None:
        action = self._agents.discrete[:, 0]
        action = np.where((action >= 0) & (action < N_ACTIONS), action, STAY)
        row = self._pos[:, 0] + _DROW[action]
        col = self._pos[:, 1] + _DCOL[action]
        inside = (row >= 0) & (row < self.height) & (col >= 0) & (col < self.width)
        can_move = inside & self.free[np.clip(row, 0, self.height - 1), np.clip(col, 0, self.width - 1)]
        self._pos = np.where(can_move[:, None], np.stack([row, col], axis=1), self._pos)
        self._steps += 1
        at = self._pos
        at_goal = self._pressed & (at[:, 0] == self.goal[0]) & (at[:, 1] == self.goal[1])
        self._pressed |= (at[:, 0] == self.switch[0]) & (at[:, 1] == self.switch[1])
        self._agents.reward += np.where(at_goal, GOAL_REWARD, STEP_REWARD).astype(np.float32)
        interrupted = ~at_goal & (self._steps >= self._max_step)
        done = at_goal | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, self._observe(ended), interrupted[ended])
            self._stats.add("Pyramids/Goal Reached", at_goal[ended].astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._stats.add(
                "Pyramids/Switch Pressed", self._pressed[ended].astype(np.float64), StatsAggregationMethod.AVERAGE
            )
            self._begin_episodes(ended)
        self._agents.decide(self._slots, self._observe(self._slots))
