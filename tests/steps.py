"""Builders of hand-made DecisionSteps, TerminalSteps and ActionInfo for processor tests."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)

from processors import ActionInfo


def behavior_spec(
    obs_shapes: Sequence[tuple[int, ...]] = ((2,),), continuous: int = 1, branches: tuple[int, ...] = ()
) -> BehaviorSpec:
    observation_specs = [
        ObservationSpec(shape, (DimensionProperty.NONE,) * len(shape), ObservationType.DEFAULT, f"obs{i}")
        for i, shape in enumerate(obs_shapes)
    ]
    return BehaviorSpec(observation_specs, ActionSpec(continuous, branches))


def fake_policy(spec: BehaviorSpec, memory_size: int = 0) -> SimpleNamespace:
    """What the processor reads from a policy: its spec and memory size."""
    return SimpleNamespace(behavior_spec=spec, memory_size=memory_size)


def _groups(n: int, group_ids: Sequence[int] | None, group_rewards: Sequence[float] | None) -> tuple:
    return (
        np.zeros(n, np.int32) if group_ids is None else np.asarray(group_ids, np.int32).reshape(n),
        np.zeros(n, np.float32) if group_rewards is None else np.asarray(group_rewards, np.float32).reshape(n),
    )


def decision_steps(
    ids: Sequence[int],
    obs: Sequence[np.ndarray],
    rewards: Sequence[float],
    masks: Sequence[np.ndarray] | None = None,
    group_ids: Sequence[int] | None = None,
    group_rewards: Sequence[float] | None = None,
) -> DecisionSteps:
    n = len(ids)
    return DecisionSteps(
        [np.asarray(o) for o in obs],
        np.asarray(rewards, np.float32).reshape(n),
        np.asarray(ids, np.int32).reshape(n),
        None if masks is None else [np.asarray(m, bool) for m in masks],
        *_groups(n, group_ids, group_rewards),
    )


def terminal_steps(
    ids: Sequence[int],
    obs: Sequence[np.ndarray],
    rewards: Sequence[float],
    interrupted: Sequence[bool],
    group_ids: Sequence[int] | None = None,
    group_rewards: Sequence[float] | None = None,
) -> TerminalSteps:
    n = len(ids)
    return TerminalSteps(
        [np.asarray(o) for o in obs],
        np.asarray(rewards, np.float32).reshape(n),
        np.asarray(interrupted, bool).reshape(n),
        np.asarray(ids, np.int32).reshape(n),
        *_groups(n, group_ids, group_rewards),
    )


def vector_steps(
    ids: Sequence[int],
    values: Sequence[float],
    rewards: Sequence[float],
    group_ids: Sequence[int] | None = None,
    group_rewards: Sequence[float] | None = None,
) -> DecisionSteps:
    """DecisionSteps of a (2,) vector observation filled with ``values`` per agent."""
    obs = np.repeat(np.asarray(values, np.float32).reshape(-1, 1), 2, axis=1)
    return decision_steps(ids, [obs], rewards, group_ids=group_ids, group_rewards=group_rewards)


def vector_terminals(
    ids: Sequence[int],
    values: Sequence[float],
    rewards: Sequence[float],
    interrupted: Sequence[bool] | None = None,
    group_ids: Sequence[int] | None = None,
    group_rewards: Sequence[float] | None = None,
) -> TerminalSteps:
    obs = np.repeat(np.asarray(values, np.float32).reshape(-1, 1), 2, axis=1)
    flags = [False] * len(ids) if interrupted is None else interrupted
    return terminal_steps(ids, [obs], rewards, flags, group_ids, group_rewards)


NO_TERMINALS = vector_terminals([], [], [])


def action_info(
    ids: Sequence[int],
    continuous: Sequence[Sequence[float]] | None = None,
    discrete: Sequence[Sequence[int]] | None = None,
    memories: Sequence[Sequence[float]] | None = None,
    entropy: Sequence[float] | None = None,
) -> ActionInfo:
    """An ActionInfo whose log-probs are minus the actions, so tests can check pairing."""
    n = len(ids)
    cont = np.asarray(continuous if continuous is not None else np.zeros((n, 0)), np.float32).reshape(n, -1)
    disc = np.asarray(discrete if discrete is not None else np.zeros((n, 0)), np.int32).reshape(n, -1)
    mem = np.asarray(memories if memories is not None else np.zeros((n, 0)), np.float32).reshape(n, -1)
    return ActionInfo(
        agent_ids=np.asarray(ids, np.int32).reshape(n),
        env_actions=ActionTuple(continuous=np.clip(cont, -1, 1), discrete=disc),
        continuous_actions=cont,
        discrete_actions=disc,
        continuous_log_probs=-cont,
        discrete_log_probs=-disc.astype(np.float32),
        entropy=np.asarray(entropy if entropy is not None else np.ones(n), np.float32).reshape(n),
        memories=mem,
    )


def drain(queue) -> list:
    """Everything currently on an AgentManagerQueue, oldest first."""
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items
