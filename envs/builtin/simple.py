"""Simple: ML-Agents' learning-test environment (``SimpleEnvironment`` of its trainer tests),
with continuous, discrete or hybrid actions (1 agent per area) and vector and/or visual
observations.

Each agent sees a goal, -1 or +1 (drawn at every episode start): by default as one float; in
general as ``num_vector`` vector observations of ``vec_obs_size`` floats, then ``num_visual``
visual observations of shape ``vis_obs_size`` (H, W, C), every value equal to the goal (as
ML-Agents' ``_make_obs``: ones * goal, so images hold -1 too, not a camera's [0, 1]). It has one
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
specs cannot change later): ``continuous_size`` (1), ``discrete_branches`` (0),
``step_size`` (0.2), ``max_step`` (0), ``num_vector`` (1), ``vec_obs_size`` (1),
``num_visual`` (0), ``vis_obs_size`` ((20, 20, 3), ML-Agents' VIS_OBS_SIZE). An environment
parameter is one float, so ``vis_obs_size`` comes from three: ``vis_obs_height``,
``vis_obs_width``, ``vis_obs_channels`` (each defaulting to its part of (20, 20, 3); all three
ignored when the constructor gets ``vis_obs_size``). Observation counts and sizes must be
whole numbers (counts >= 0, sizes >= 1, at least one observation), else ValueError naming the
option. Every finished episode's return is appended to
``episode_returns`` (ML-Agents' ``final_rewards``) and recorded as the stat
``Simple/Episode Return`` (AVERAGE).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlagents_envs.base_env import ActionSpec, BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import BuiltinEnv, vector_obs_spec, visual_obs_spec

#: ML-Agents' constants: reward per decision, and the success reward 1 + 6 * 0.01 (sized for
#: its default step 0.2, kept whatever ``step_size`` is, as ML-Agents does).
TIME_PENALTY = 0.01
SUCCESS_REWARD = 1.0 + (int(1.0 / 0.2) + 1) * TIME_PENALTY

#: ML-Agents' default image shape (H, W, C) of the visual observations.
VIS_OBS_SIZE = (20, 20, 3)

#: The environment parameters that give ``vis_obs_size``, one per axis.
VIS_OBS_PARAMS = ("vis_obs_height", "vis_obs_width", "vis_obs_channels")


def _whole(option: str, value: float, minimum: int) -> int:
    """``value`` as an int: options come as floats from environment parameters, so 1.5 or -1
    must fail loudly rather than be truncated into a different environment."""
    try:
        whole = float(value).is_integer() and value >= minimum
    except (TypeError, ValueError):
        whole = False
    if not whole:
        raise ValueError(f"Simple: {option} must be a whole number >= {minimum} (got {value!r})")
    return int(value)


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
        num_vector: int | None = None,
        vec_obs_size: int | None = None,
        num_visual: int | None = None,
        vis_obs_size: tuple[int, int, int] | None = None,
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
        self.num_vector = _whole("num_vector", num_vector if num_vector is not None else params.get("num_vector", 1), 0)
        self.vec_obs_size = _whole(
            "vec_obs_size", vec_obs_size if vec_obs_size is not None else params.get("vec_obs_size", 1), 1
        )
        self.num_visual = _whole("num_visual", num_visual if num_visual is not None else params.get("num_visual", 0), 0)
        if vis_obs_size is None:
            sizes = [params.get(key, size) for key, size in zip(VIS_OBS_PARAMS, VIS_OBS_SIZE)]
            names = list(VIS_OBS_PARAMS)
        elif isinstance(vis_obs_size, tuple | list) and len(vis_obs_size) == 3:
            sizes, names = list(vis_obs_size), ["vis_obs_size"] * 3
        else:
            raise ValueError(f"Simple: vis_obs_size must be (height, width, channels) (got {vis_obs_size!r})")
        height, width, channels = (_whole(name, size, 1) for name, size in zip(names, sizes))
        self.vis_obs_size = (height, width, channels)
        if self.num_vector + self.num_visual == 0:
            raise ValueError("Simple: needs at least one observation (num_vector=0, num_visual=0)")
        self.episode_returns: list[float] = []
        super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas)

    def _setup(self) -> None:
        n = self.num_areas
        action_spec = ActionSpec(self.continuous_size, (2,) * self.discrete_branches)
        obs_specs = [vector_obs_spec(self.vec_obs_size)] * self.num_vector
        obs_specs += [visual_obs_spec(*self.vis_obs_size)] * self.num_visual
        spec = BehaviorSpec(obs_specs, action_spec)
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
        """The goal filling every observation, one array each (a consumer may write into one)."""
        goal = self._goal[slots].astype(np.float32)
        vector = (len(slots), self.vec_obs_size)
        visual = (len(slots), *self.vis_obs_size)
        return [np.ones(vector, np.float32) * goal[:, None] for _ in range(self.num_vector)] + [
            np.ones(visual, np.float32) * goal[:, None, None, None] for _ in range(self.num_visual)
        ]

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
