"""Hallway: a memory task like Unity's Hallway, as a short corridor (1 agent per area).

Each episode shows a cue, one of ``num_cues`` symbols (2 by default, drawn uniformly), for the
first ``cue_steps`` observations only (1: the episode's first observation); then the cue
observation is all zeros. The agent starts at cell 0 of a corridor of ``hallway_length`` cells
(5) and must walk to the last cell and there pick the goal that matches the cue.

Observation: one vector of ``num_cues + hallway_length`` floats: the cue one-hot (zeros once
hidden), then the agent's cell one-hot. No step counter: nothing but the first observation(s)
tells the cues apart. Action: one discrete branch of ``3 + num_cues``: 0 stay, 1 forward,
2 back (walls stop the agent), ``3 + k`` pick goal k. Goal picks are masked except on the last
cell (the mask depends on the cell only, so it reveals nothing about the cue).

Reward, as Unity's HallwayAgent: every decision costs ``-1 / max_step``; picking a goal ends
the episode and its reward replaces that decision's cost (Unity's ``SetReward``): +1 for the
cue's goal, -0.1 for another. An episode without a pick is interrupted after ``max_step`` (50)
decisions, having scored -1.

Why it needs memory: the last cell is reached at the earliest on decision ``hallway_length - 1``
and ``cue_steps`` is at most that, so the observation on which a goal is picked never shows the
cue: it is the same for every cue. A memoryless policy (one that maps the current observation
to action probabilities, however stochastic) therefore picks goal k with the same probability
whatever the cue, and succeeds with probability ``sum_k P(cue k) * pick_k <= 1 / num_cues``
(50% with 2 cues). With the defaults (5 cells, 2 cues, max_step 50):

- with memory: walk 4 cells, pick the right goal: 1 - 4 / 50 = **0.92** every episode;
- without memory: the best is the same walk and any pick: 0.5 * 1 + 0.5 * (-0.1) - 0.08 =
  **0.37** on average (success rate 50%), far below Unity's Hallway benchmark target of 0.7;
- in general: ``1 - (L - 1) / max_step`` against ``(1 - 0.1 (K - 1)) / K - (L - 1) / max_step``.

Environment parameters: ``hallway_length`` (5, between 2 and 20) and ``num_cues`` (2, between 2
and 8) fix the specs, so they are read once, at construction (a sampler draws once then;
later values are ignored); ``cue_steps`` (1) and ``max_step`` (50) are read per agent at each
episode start (a sampler draws for every agent starting one; the values in use are
``cue_steps`` and ``max_step``, [N] per slot); all rounded and clamped (``cue_steps`` to
[1, hallway_length - 1], ``max_step`` to >= hallway_length). Stats: ``Hallway/Success Rate``
(AVERAGE, 1 for the cue's goal, 0 for another or none, per finished episode) and
``Hallway/Goal Picked`` (AVERAGE, 1 when the episode ended with a pick).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_discrete, one_hot, vector_obs_spec

DEFAULT_LENGTH, MIN_LENGTH, MAX_LENGTH = 5, 2, 20
DEFAULT_CUES, MIN_CUES, MAX_CUES = 2, 2, 8
DEFAULT_MAX_STEP = 50
#: Unity's HallwayAgent rewards for the cue's goal and for another goal.
RIGHT_GOAL_REWARD, WRONG_GOAL_REWARD = 1.0, -0.1
#: Actions before the goal picks: stay, forward, back, and their moves.
STAY, FORWARD, BACK = 0, 1, 2
N_MOVES = 3
_MOVES = np.array([0, 1, -1])


class HallwayEnv(BuiltinEnv):
    """One agent per area in a corridor; discrete (3 + num_cues,) with masks, vector observation."""

    env_name = "Hallway"

    def _setup(self) -> None:
        n = self.num_areas
        self.length = int(np.clip(np.rint(self._param("hallway_length", DEFAULT_LENGTH)), MIN_LENGTH, MAX_LENGTH))
        self.num_cues = int(np.clip(np.rint(self._param("num_cues", DEFAULT_CUES)), MIN_CUES, MAX_CUES))
        spec = BehaviorSpec(
            [vector_obs_spec(self.num_cues + self.length)], action_spec_discrete(N_MOVES + self.num_cues)
        )
        self._agents = self._add_behavior("Hallway", spec, n)
        self._slots = np.arange(n)
        self._cue = np.zeros(n, dtype=np.int64)
        self._pos = np.zeros(n, dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)
        self._cue_steps = np.ones(n, dtype=np.int64)
        self._max_step = np.full(n, DEFAULT_MAX_STEP, dtype=np.int64)

    @property
    def cue_steps(self) -> np.ndarray:
        """[N] int64, how many observations show the cue in each slot's current episode."""
        return self._cue_steps

    @property
    def max_step(self) -> np.ndarray:
        """[N] int64, the decision limit of each slot's current episode."""
        return self._max_step

    def _begin_episodes(self, slots: np.ndarray) -> None:
        self._agents.start(slots)
        self._cue[slots] = self._rng.integers(self.num_cues, size=len(slots))
        self._pos[slots] = 0
        self._steps[slots] = 0
        k = len(slots)
        self._cue_steps[slots] = np.clip(np.rint(self._param_array("cue_steps", 1, k)), 1, self.length - 1)
        self._max_step[slots] = np.maximum(np.rint(self._param_array("max_step", DEFAULT_MAX_STEP, k)), self.length)

    def _observe(self, slots: np.ndarray) -> list[np.ndarray]:
        """[len(slots), num_cues + length] float32: cue one-hot (zeros once hidden), cell one-hot."""
        cue = one_hot(self._cue[slots], self.num_cues)
        cue[self._steps[slots] >= self._cue_steps[slots]] = 0.0
        return [np.concatenate([cue, one_hot(self._pos[slots], self.length)], axis=1)]

    def _masks(self) -> np.ndarray:
        """[N, 3 + num_cues] bool: goal picks masked away from the last cell."""
        masks = np.zeros((self.num_areas, N_MOVES + self.num_cues), dtype=bool)
        masks[:, N_MOVES:] = (self._pos < self.length - 1)[:, None]
        return masks

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, self._observe(self._slots), self._masks())

    def _advance(self) -> None:
        action = self._agents.discrete[:, 0]
        at_end = self._pos == self.length - 1
        picked = at_end & (action >= N_MOVES) & (action < N_MOVES + self.num_cues)
        move = np.where((action >= 0) & (action < N_MOVES), _MOVES[np.clip(action, 0, N_MOVES - 1)], 0)
        self._pos = np.clip(self._pos + move, 0, self.length - 1)
        self._steps += 1
        right = picked & (action - N_MOVES == self._cue)
        reward = np.where(picked, np.where(right, RIGHT_GOAL_REWARD, WRONG_GOAL_REWARD), -1.0 / self._max_step)
        self._agents.reward += reward.astype(np.float32)
        interrupted = ~picked & (self._steps >= self._max_step)
        done = picked | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, self._observe(ended), interrupted[ended])
            self._stats.add("Hallway/Success Rate", right[ended].astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._stats.add("Hallway/Goal Picked", picked[ended].astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._begin_episodes(ended)
        self._agents.decide(self._slots, self._observe(self._slots), self._masks())
