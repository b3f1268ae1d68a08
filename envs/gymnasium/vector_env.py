"""Copies of one Gymnasium environment stepped in turn, as one ML-Agents behavior.

Each copy is one slot of a BuiltinEnv behavior (BuiltinEnv gives agent ids, DecisionSteps and
TerminalSteps, action validation and environment parameters). Copies are stepped one after
another in Python, not through gymnasium's vector envs, so that we decide exactly when each
copy resets: right after its episode ends, within the same step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np

from envs.builtin._core import BuiltinEnv, ParameterInput, stacked_observations
from envs.gymnasium.errors import GymnasiumEnvError
from envs.gymnasium.making import behavior_base, label, make_copy
from envs.gymnasium.spaces import SpaceMapping, map_spaces


def copy_seeds(seed: int, worker_id: int, copies: int) -> list[int]:
    """One seed per copy (< 2**32), spawned from SeedSequence([seed, worker_id]): copy i's seed
    depends on (seed, worker_id, i) only, not on how many copies there are."""
    root = np.random.SeedSequence([seed, worker_id])
    return [int(child.generate_state(1)[0]) for child in root.spawn(copies)]


class GymnasiumVectorEnv(BuiltinEnv):
    """``copies`` copies of ``gymnasium.make(env_id, **env_kwargs)`` as one behavior with one
    agent per copy (slot i = copy i, rows in copy order).

    Copy i is first reset with ``seed=copy_seeds(...)[i]`` (its action space seeded alike);
    later resets pass no seed, so gymnasium continues the copy's generator. A step that ends an
    episode gives a TerminalSteps row (the step's final observation and reward; interrupted =
    truncated and not terminated), resets the copy and gives its new episode's first
    observation as a DecisionSteps row with a fresh agent id, in the same step.

    Environment parameters (``set_env_parameter_value``) reach each copy as
    ``reset(options={key: float, ...})`` at every reset once set (``env_parameters``: from the
    first): a constant's value, a sampler drawn anew for each reset. Without any, resets get no
    options.
    """

    def __init__(
        self,
        env_id: str,
        *,
        copies: int,
        seed: int,
        worker_id: int = 0,
        env_kwargs: Mapping[str, Any] | None = None,
        env_parameters: Mapping[str, ParameterInput] | None = None,
    ) -> None:
        self.env_name = label(env_id)
        for what, value, minimum in (("copies", copies, 1), ("seed", seed, 0), ("worker_id", worker_id, 0)):
            if value < minimum:
                raise GymnasiumEnvError(f"{self.env_name}: {what} must be >= {minimum} (got {value})")
        self.env_id = env_id
        self._copy_seeds = copy_seeds(seed, worker_id, copies)
        self._seeded = [False] * copies
        self._envs: list[gymnasium.Env] = []
        self._copies_closed = False
        try:
            for _ in range(copies):
                self._envs.append(make_copy(env_id, env_kwargs))
            self._mapping = map_spaces(env_id, self._envs[0])
            self._check_same_spaces()
            super().__init__(seed=seed, worker_id=worker_id, num_areas=copies, env_parameters=env_parameters)
        except BaseException:
            self._close_copies()
            raise

    @property
    def envs(self) -> tuple[gymnasium.Env, ...]:
        """The gymnasium copies in slot order (to inspect; stepping them directly desynchronises us)."""
        return tuple(self._envs)

    @property
    def mapping(self) -> SpaceMapping:
        """How observations, masks and actions are mapped (``mapping.specs`` is check_gymnasium's answer)."""
        return self._mapping

    def close(self) -> None:
        """Close every copy; later ``step``/``reset`` calls raise. Safe to call twice."""
        super().close()
        self._close_copies()

    # ---- BuiltinEnv hooks ------------------------------------------------------------------

    def _setup(self) -> None:
        spec = self._mapping.specs.behavior_spec
        self._agents = self._add_behavior(behavior_base(self.env_id), spec, len(self._envs))
        self._slots = np.arange(len(self._envs))

    def _reset_world(self) -> None:
        rows, masks = [], []
        for i in range(len(self._envs)):
            obs, info = self._reset_copy(i)
            rows.append(self._mapping.observations.read(obs))
            masks.append(self._mask_row(obs, info))
        self._agents.start(self._slots)
        self._agents.decide(self._slots, stacked_observations(rows), self._batch_masks(masks))

    def _advance(self) -> None:
        actions = self._mapping.actions
        read = self._mapping.observations.read
        rows, masks = [], []
        ended, final_rows, interrupted = [], [], []
        for i, env in enumerate(self._envs):
            action = actions.to_env(self._agents.continuous[i], self._agents.discrete[i])
            obs, reward, terminated, truncated, info = env.step(action)
            self._agents.reward[i] += np.float32(reward)
            if terminated or truncated:
                ended.append(i)
                final_rows.append(read(obs))
                interrupted.append(not terminated)
                obs, info = self._reset_copy(i)
            rows.append(read(obs))
            masks.append(self._mask_row(obs, info))
        if ended:
            slots = np.asarray(ended, dtype=np.intp)
            self._agents.end(slots, stacked_observations(final_rows), np.asarray(interrupted, dtype=bool))
            self._agents.start(slots)
        self._agents.decide(self._slots, stacked_observations(rows), self._batch_masks(masks))

    # ---- internals -------------------------------------------------------------------------

    def _reset_copy(self, i: int) -> tuple[Any, dict[str, Any]]:
        """Reset copy ``i``: seeded the first time, with the environment parameters as options."""
        kwargs: dict[str, Any] = {}
        if not self._seeded[i]:
            kwargs["seed"] = self._copy_seeds[i]
            self._envs[i].action_space.seed(self._copy_seeds[i])
            self._seeded[i] = True
        options = {key: self._param(key, 0.0) for key in self._params}
        if options:
            kwargs["options"] = options
        return self._envs[i].reset(**kwargs)

    def _mask_row(self, obs: Any, info: Mapping[str, Any]) -> np.ndarray | None:
        """[sum(branches)] bool (True = NOT available) from the observation's or info's
        ``action_mask``; None without one or without discrete branches."""
        if self._mapping.actions.spec.discrete_size == 0:
            return None
        value = self._mapping.observations.mask(obs)
        if value is None:
            value = info.get("action_mask")
        return None if value is None else self._mapping.actions.mask(value)

    def _batch_masks(self, masks: list[np.ndarray | None]) -> np.ndarray | None:
        """[N, sum(branches)] bool, nothing masked for copies without a mask; None when none has one."""
        if all(mask is None for mask in masks):
            return None
        width = int(sum(self._mapping.actions.spec.discrete_branches))
        return np.stack([np.zeros(width, bool) if mask is None else mask for mask in masks])

    def _check_same_spaces(self) -> None:
        first = self._envs[0]
        for env in self._envs[1:]:
            if env.observation_space != first.observation_space or env.action_space != first.action_space:
                raise GymnasiumEnvError(f"{self.env_name}: copies made with the same arguments have different spaces")

    def _close_copies(self) -> None:
        if self._copies_closed:
            return
        self._copies_closed = True
        for env in self._envs:
            env.close()
