"""Environment factories as a user would write them for ``--env python:module:function`` and
:func:`orchestration.run.train` (module-level, so worker processes can import them)."""

from __future__ import annotations

from collections.abc import Mapping

from mlagents_envs.base_env import BaseEnv

from envs.builtin import make_env


def make_basic(worker_id: int, seed: int) -> BaseEnv:
    """The built-in Basic task, standing in for a user's own BaseEnv."""
    return make_env("Basic", seed=seed, worker_id=worker_id, num_areas=4)


def make_3dball(worker_id: int, seed: int, env_parameters: Mapping[str, float]) -> BaseEnv:
    """A factory that takes the run's environment parameters."""
    return make_env("3DBall", seed=seed, worker_id=worker_id, env_parameters=env_parameters)
