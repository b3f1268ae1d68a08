"""Names of the built-in environments and the factory that builds them."""

from __future__ import annotations

from collections.abc import Mapping

from envs.builtin._core import BuiltinEnv, ParameterInput, UnknownBuiltinEnvError

#: How a config or ``--env`` names a built-in environment: ``builtin:3DBall``.
BUILTIN_PREFIX = "builtin:"


def _registry() -> dict[str, type[BuiltinEnv]]:
    from envs.builtin.ball3d import Ball3DEnv
    from envs.builtin.basic import BasicEnv
    from envs.builtin.collect import CollectEnv
    from envs.builtin.dungeon_escape import DungeonEscapeEnv
    from envs.builtin.gridworld import GridWorldEnv
    from envs.builtin.hallway import HallwayEnv
    from envs.builtin.line_soccer import LineSoccerEnv
    from envs.builtin.pyramids import PyramidsEnv
    from envs.builtin.simple import SimpleEnv
    from envs.builtin.spawner import SpawnerEnv
    from envs.builtin.two_behaviors import TwoBehaviorsEnv

    classes = (
        Ball3DEnv,
        BasicEnv,
        GridWorldEnv,
        TwoBehaviorsEnv,
        SpawnerEnv,
        SimpleEnv,
        HallwayEnv,
        CollectEnv,
        PyramidsEnv,
        DungeonEscapeEnv,
        LineSoccerEnv,
    )
    return {cls.env_name: cls for cls in classes}


def available() -> list[str]:
    """Names of the built-in environments, sorted."""
    return sorted(_registry())


def make_env(
    name: str,
    *,
    seed: int,
    worker_id: int = 0,
    env_parameters: Mapping[str, ParameterInput] | None = None,
    num_areas: int = 1,
    **options: float | tuple[int, ...],
) -> BuiltinEnv:
    """Build the built-in environment ``name`` (a ``builtin:`` prefix is accepted), already reset.

    seed, worker_id: together they pick the random stream (same pair -> same episodes;
    each worker of a run gets its own). env_parameters: initial EnvironmentParameters values,
    floats or ParameterValues (constants or samplers).
    num_areas: copies of the training area (agents multiply). options: constructor options of
    environments that have them (``Simple``: continuous_size, discrete_branches, num_visual,
    vis_obs_size as an (H, W, C) tuple, num_var_len, var_len_obs_size, memory, goal_indices,
    num_teams, asymmetric, num_agents; ``DungeonEscape``: size, num_agents, max_step, time_penalty,
    absorbing_state; ``LineSoccer``: players_per_team, length, kick, max_step). Raises
    UnknownBuiltinEnvError (a ValueError) naming the available environments.
    """
    key = name[len(BUILTIN_PREFIX) :] if name.startswith(BUILTIN_PREFIX) else name
    registry = _registry()
    if key not in registry:
        raise UnknownBuiltinEnvError(f"unknown built-in environment {name!r}; available: {', '.join(sorted(registry))}")
    return registry[key](seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas, **options)
