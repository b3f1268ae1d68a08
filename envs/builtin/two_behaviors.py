"""TwoBehaviors: two behaviors in one scene, one discrete deciding every other step, one continuous
that appears a few steps in (its spec arrives with its first agents, as in a Unity build).

``LineWalker?team=0`` (2 agents per area, decision period 2): walk along a line of 10 cells to a
goal cell. Observation: one-hot position (10) + one-hot goal (10). Action: one discrete branch of
3 (0 stay, 1 left, 2 right), held for the two ticks between decisions; moves into the ends of the
line are masked. Reward -0.01 per tick (so -0.02 per decision), +1 and episode end at the goal,
which can happen on a tick where the walker does not decide (its next episode then decides at
the next even tick); interrupted after 60 ticks.

``Reacher?team=0`` (2 agents per area, decision period 1, appearing at tick 3 after every reset):
move a point in the square [-1, 1]^2 onto a target. Observation: position (2) and target minus
position (2). Action: continuous (2,), velocity of up to ``reacher_speed`` (0.1) per tick per axis.
Reward -0.01 per tick, +1 and episode end within ``reacher_radius`` (0.15) of the target;
interrupted after 50 ticks.

Environment parameters, read per Reacher at each of its episode starts (a sampler draws for
every Reacher starting one; the values in use are ``reacher_speed`` and ``reacher_radius``, [N]
per Reacher slot): ``reacher_speed`` (0.1), ``reacher_radius`` (0.15). LineWalker reads none.
Stats: ``LineWalker/Goal Reached`` (AVERAGE), ``Reacher/Final Distance`` (AVERAGE),
``Reacher/Radius`` (MOST_RECENT, at Reacher episode ends: the radius of the last Reacher
restarted).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import (
    BuiltinEnv,
    action_spec_continuous,
    action_spec_discrete,
    one_hot,
    vector_obs_spec,
)

WALKERS_PER_AREA = 2
REACHERS_PER_AREA = 2
LINE = 10
WALKER_PERIOD = 2
WALKER_MAX_TICKS = 60
REACHER_APPEARS_AT_TICK = 3
REACHER_MAX_STEP = 50
_MOVES = np.array([0, -1, 1])


class TwoBehaviorsEnv(BuiltinEnv):
    """LineWalker (discrete, decision period 2) and Reacher (continuous, appears at tick 3)."""

    env_name = "TwoBehaviors"

    def _setup(self) -> None:
        nw = WALKERS_PER_AREA * self.num_areas
        nr = REACHERS_PER_AREA * self.num_areas
        self._walkers = self._add_behavior(
            "LineWalker",
            BehaviorSpec([vector_obs_spec(2 * LINE)], action_spec_discrete(3)),
            nw,
            decision_period=WALKER_PERIOD,
        )
        self._reachers = self._add_behavior(
            "Reacher", BehaviorSpec([vector_obs_spec(4)], action_spec_continuous(2)), nr
        )
        self._walker_slots = np.arange(nw)
        self._walker_pos = np.zeros(nw, dtype=np.int64)
        self._walker_goal = np.zeros(nw, dtype=np.int64)
        self._walker_ticks = np.zeros(nw, dtype=np.int64)
        self._reacher_slots = np.arange(nr)
        self._reacher_pos = np.zeros((nr, 2))
        self._reacher_target = np.zeros((nr, 2))
        self._reacher_steps = np.zeros(nr, dtype=np.int64)
        self._reacher_speed = np.zeros(nr)
        self._reacher_radius = np.zeros(nr)

    # ---- LineWalker ----------------------------------------------------------------------

    def _begin_walks(self, slots: np.ndarray) -> None:
        self._walkers.start(slots)
        pos = self._rng.integers(0, LINE, len(slots))
        offset = self._rng.integers(1, LINE, len(slots))  # goal differs from start
        self._walker_pos[slots] = pos
        self._walker_goal[slots] = (pos + offset) % LINE
        self._walker_ticks[slots] = 0

    def _walker_obs(self, slots: np.ndarray) -> np.ndarray:
        return np.concatenate([one_hot(self._walker_pos[slots], LINE), one_hot(self._walker_goal[slots], LINE)], axis=1)

    def _walkers_decide(self) -> None:
        pos = self._walker_pos
        mask = np.stack([np.zeros(len(pos), bool), pos == 0, pos == LINE - 1], axis=1)
        self._walkers.decide(self._walker_slots, [self._walker_obs(self._walker_slots)], mask)

    def _advance_walkers(self) -> None:
        action = self._walkers.discrete[:, 0]
        move = np.where((action >= 0) & (action < 3), _MOVES[np.clip(action, 0, 2)], 0)
        self._walker_pos = np.clip(self._walker_pos + move, 0, LINE - 1)
        self._walker_ticks += 1
        reached = self._walker_pos == self._walker_goal
        self._walkers.reward += (-0.01 + 1.0 * reached).astype(np.float32)
        interrupted = (self._walker_ticks >= WALKER_MAX_TICKS) & ~reached
        done = reached | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._walkers.end(ended, [self._walker_obs(ended)], interrupted[ended])
            self._stats.add(
                "LineWalker/Goal Reached", reached[ended].astype(np.float64), StatsAggregationMethod.AVERAGE
            )
            self._begin_walks(ended)
        if self._tick % WALKER_PERIOD == 0:
            self._walkers_decide()

    # ---- Reacher -------------------------------------------------------------------------

    def _begin_reaches(self, slots: np.ndarray) -> None:
        self._reachers.start(slots)
        self._reacher_pos[slots] = self._rng.uniform(-1.0, 1.0, (len(slots), 2))
        self._reacher_target[slots] = self._rng.uniform(-1.0, 1.0, (len(slots), 2))
        self._reacher_steps[slots] = 0
        self._reacher_speed[slots] = self._param_array("reacher_speed", 0.1, len(slots))
        self._reacher_radius[slots] = self._param_array("reacher_radius", 0.15, len(slots))

    @property
    def reacher_speed(self) -> np.ndarray:
        """[N] float64, the speed of each Reacher slot's current episode."""
        return self._reacher_speed

    @property
    def reacher_radius(self) -> np.ndarray:
        """[N] float64, the target radius of each Reacher slot's current episode."""
        return self._reacher_radius

    def _reacher_obs(self, slots: np.ndarray) -> np.ndarray:
        pos = self._reacher_pos[slots]
        return np.concatenate([pos, self._reacher_target[slots] - pos], axis=1).astype(np.float32)

    def _advance_reachers(self) -> None:
        if self._tick < REACHER_APPEARS_AT_TICK:
            return
        if self._tick > REACHER_APPEARS_AT_TICK:
            action = np.clip(self._reachers.continuous, -1.0, 1.0)
            step = self._reacher_speed[:, None] * action
            self._reacher_pos = np.clip(self._reacher_pos + step, -1.0, 1.0)
            self._reacher_steps += 1
            distance = np.linalg.norm(self._reacher_target - self._reacher_pos, axis=1)
            reached = distance < self._reacher_radius
            self._reachers.reward += (-0.01 + 1.0 * reached).astype(np.float32)
            interrupted = (self._reacher_steps >= REACHER_MAX_STEP) & ~reached
            done = reached | interrupted
            if done.any():
                ended = np.flatnonzero(done)
                self._reachers.end(ended, [self._reacher_obs(ended)], interrupted[ended])
                self._stats.add("Reacher/Final Distance", distance[ended], StatsAggregationMethod.AVERAGE)
                self._begin_reaches(ended)
                self._stats.add("Reacher/Radius", self._reacher_radius[ended], StatsAggregationMethod.MOST_RECENT)
        else:  # the Reachers enter the scene now
            self._begin_reaches(self._reacher_slots)
        self._reachers.decide(self._reacher_slots, [self._reacher_obs(self._reacher_slots)])

    # ---- BuiltinEnv ----------------------------------------------------------------------

    def _reset_world(self) -> None:
        self._begin_walks(self._walker_slots)
        self._walkers_decide()

    def _advance(self) -> None:
        self._advance_walkers()
        self._advance_reachers()
