"""3DBall: keep a ball on a tilting platform, like Unity's Ball3DAgent (12 agents per area).

Physics (numpy, all agents at once; one decision = 0.1 s, as Unity's 5 physics steps of 0.02 s):
the action tilts the platform about z and x by up to 10 degrees per decision (tilt limited to
+-25 degrees); the ball rolls on the tilted plane with acceleration 5/7 g sin(tilt) (a rolling
sphere) minus air drag ``0.05 * scale**2 / mass * velocity``. It drops when its centre leaves the
5 x 5 platform.

Observation (8 floats, Unity's order): platform rotation z and x (quaternion components,
sin(angle / 2)), ball position relative to the platform (x, y, z), ball velocity (x, y, z).
Reward: +0.1 per decision while the ball is up, -1 and episode end when it drops; episodes are
interrupted after 1000 decisions, so 100 is the best score (Unity's benchmark target).

Environment parameters (Unity's names), all read per agent at each episode start (as each
Ball3DAgent reads them in ``OnEpisodeBegin``), so a sampler gives every starting ball its own
draw: ``gravity`` (9.81 m/s^2), ``mass`` (1.0: heavier balls feel less drag; below 1e-3 taken as
1e-3), ``scale`` (1.0: ball diameter, raising the ball and its drag; below 0 taken as 0). The
values in use are ``gravity``, ``mass`` and ``scale`` ([N] per slot). ML-Agents'
``3DBall_randomize.yaml`` samples mass uniform(0.5, 10) and scale uniform(0.75, 3).

Stats: ``3DBall/Ball Dropped`` (AVERAGE, 1 per episode ending in a drop, 0 per interrupted one);
``3DBall/Gravity`` (MOST_RECENT, at episode ends: the gravity of the last ball restarted);
``3DBall/Mass`` and ``3DBall/Scale`` (AVERAGE, one value per episode start, reset included).
"""

from __future__ import annotations

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, action_spec_continuous, vector_obs_spec

AGENTS_PER_AREA = 12
MAX_STEP = 1000
DT = 0.1
TILT_RATE = np.radians(10.0)
MAX_TILT = np.radians(25.0)
HALF_WIDTH = 2.5
ROLLING = 5.0 / 7.0
DRAG = 0.05
#: A positive z tilt raises +x (the ball rolls to -x); a positive x tilt lowers +z.
_SLOPE_SIGN = np.array([-1.0, 1.0])


class Ball3DEnv(BuiltinEnv):
    """12 balancing agents per area; continuous action (2,), vector observation (8,)."""

    env_name = "3DBall"

    def _setup(self) -> None:
        n = AGENTS_PER_AREA * self.num_areas
        spec = BehaviorSpec([vector_obs_spec(8)], action_spec_continuous(2))
        self._agents = self._add_behavior("3DBall", spec, n)
        self._slots = np.arange(n)
        self._rot = np.zeros((n, 2))  # tilt angles about z and x, radians
        self._pos = np.zeros((n, 2))  # ball x, z on the platform
        self._vel = np.zeros((n, 2))
        self._steps = np.zeros(n, dtype=np.int64)
        self.gravity = np.zeros(n)
        self.mass = np.ones(n)
        self.scale = np.zeros(n)
        self._drag = np.zeros(n)

    def _begin_episodes(self, slots: np.ndarray) -> None:
        k = len(slots)
        self._agents.start(slots)
        self._rot[slots] = self._rng.uniform(-np.radians(10.0), np.radians(10.0), (k, 2))
        self._pos[slots] = self._rng.uniform(-1.5, 1.5, (k, 2))
        self._vel[slots] = 0.0
        self._steps[slots] = 0
        scale = np.maximum(self._param_array("scale", 1.0, k), 0.0)
        mass = np.maximum(self._param_array("mass", 1.0, k), 1e-3)
        self.gravity[slots] = self._param_array("gravity", 9.81, k)
        self.mass[slots] = mass
        self.scale[slots] = scale
        self._drag[slots] = DRAG * scale**2 / mass
        self._stats.add("3DBall/Mass", mass, StatsAggregationMethod.AVERAGE)
        self._stats.add("3DBall/Scale", scale, StatsAggregationMethod.AVERAGE)

    def _observe(self) -> np.ndarray:
        """[N, 8] float32 observations of every slot."""
        sin_z = np.sin(self._rot[:, 0])
        sin_x = np.sin(self._rot[:, 1])
        obs = np.empty((len(self._slots), 8), dtype=np.float32)
        obs[:, 0:2] = np.sin(self._rot / 2.0)
        obs[:, 2] = self._pos[:, 0]
        obs[:, 3] = 0.5 * self.scale + self._pos[:, 0] * sin_z - self._pos[:, 1] * sin_x
        obs[:, 4] = self._pos[:, 1]
        obs[:, 5] = self._vel[:, 0]
        obs[:, 6] = self._vel[:, 0] * sin_z - self._vel[:, 1] * sin_x
        obs[:, 7] = self._vel[:, 1]
        return obs

    def _reset_world(self) -> None:
        self._begin_episodes(self._slots)
        self._agents.decide(self._slots, [self._observe()])

    def _advance(self) -> None:
        action = np.clip(self._agents.continuous, -1.0, 1.0)
        self._rot = np.clip(self._rot + TILT_RATE * action, -MAX_TILT, MAX_TILT)
        slope = np.sin(self._rot) * _SLOPE_SIGN
        accel = ROLLING * self.gravity[:, None] * slope - self._drag[:, None] * self._vel
        self._vel += accel * DT
        self._pos += self._vel * DT
        self._steps += 1
        dropped = np.any(np.abs(self._pos) > HALF_WIDTH, axis=1)
        self._agents.reward += np.where(dropped, np.float32(-1.0), np.float32(0.1))
        interrupted = (self._steps >= MAX_STEP) & ~dropped
        obs = self._observe()
        done = dropped | interrupted
        if done.any():
            ended = np.flatnonzero(done)
            self._agents.end(ended, [obs[ended]], interrupted[ended])
            self._stats.add("3DBall/Ball Dropped", dropped[ended].astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._begin_episodes(ended)
            self._stats.add("3DBall/Gravity", self.gravity[ended], StatsAggregationMethod.MOST_RECENT)
            obs = self._observe()
        self._agents.decide(self._slots, [obs])
