"""Stand-ins of the spec of Unity example environments that have no built-in counterpart, for
running their example configs: no task, only the observations and actions of the real thing.

- ``Crawler``: one vector observation of 172 floats, 20 continuous actions (Unity's Crawler);
- ``PushBlock``: one vector observation of 70 floats (14 ray casts), one discrete branch of 7
  (Unity's PushBlock).

Every decision shows fresh normal noise, rewards 0.01 x (the first continuous action, or 1 for
discrete choice 1), and an episode lasts ``episode_length`` (25) decisions, ending done (not
interrupted).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from envs.builtin._core import BuiltinEnv, vector_obs_spec

SPECS: dict[str, BehaviorSpec] = {
    "Crawler": BehaviorSpec([vector_obs_spec(172)], ActionSpec(20, ())),
    "PushBlock": BehaviorSpec([vector_obs_spec(70)], ActionSpec(0, (7,))),
}


class SpecEnv(BuiltinEnv):
    """One agent per area of behavior ``name`` (a key of :data:`SPECS`); see the module docstring."""

    env_name = "SpecEnv"

    def __init__(
        self,
        name: str,
        *,
        seed: int,
        worker_id: int = 0,
        env_parameters: Mapping[str, float] | None = None,
        num_areas: int = 1,
        episode_length: int = 25,
    ) -> None:
        self.name = name
        self.spec = SPECS[name]
        self.episode_length = episode_length
        super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas)

    def _setup(self) -> None:
        self._agents = self._add_behavior(self.name, self.spec, self.num_areas)
        self._slots = np.arange(self.num_areas)
        self._steps = np.zeros(self.num_areas, np.int64)

    def _observe(self, count: int) -> list[np.ndarray]:
        return [self._rng.standard_normal((count, *o.shape)).astype(np.float32) for o in self.spec.observation_specs]

    def _reset_world(self) -> None:
        self._agents.start(self._slots)
        self._steps[:] = 0
        self._agents.decide(self._slots, self._observe(self.num_areas))

    def _advance(self) -> None:
        if self.spec.action_spec.continuous_size:
            reward = 0.01 * self._agents.continuous[:, 0]
        else:
            reward = 0.01 * (self._agents.discrete[:, 0] == 1)
        self._agents.reward += reward.astype(np.float32)
        self._steps += 1
        ended = np.flatnonzero(self._steps >= self.episode_length)
        if len(ended):
            self._agents.end(ended, self._observe(len(ended)), np.zeros(len(ended), bool))
            self._agents.start(ended)
            self._steps[ended] = 0
        self._agents.decide(self._slots, self._observe(self.num_areas))
