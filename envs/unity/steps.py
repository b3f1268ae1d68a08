"""A behavior's ``DecisionSteps`` and ``TerminalSteps`` from a build's ``AgentInfoProto``
messages: what ``mlagents_envs.rpc_utils.steps_from_proto`` (0.28) returns, built faster.

Decoding runs on the trainer's main thread once per build step, between the build's reply and
the next actions, so its cost is the build's idle time. ``steps_from_proto`` spent about 61 µs
on 12 agents with one 8-float observation (numpy arrays built from protobuf lists field by
field, a mean per array for the NaN check, a timer around every call); this module reads the
floats of all agents in one pass and checks each array with one sum. The arrays, their dtypes,
the masks and the errors are ``steps_from_proto``'s (``tests/test_unity_steps.py`` compares
them). Images go to ``steps_from_proto`` itself: their decoding (PNG) is the cost there.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, TerminalSteps
from mlagents_envs.rpc_utils import steps_from_proto


def decode_vector_steps(agent_infos: Collection[Any], spec: BehaviorSpec) -> tuple[DecisionSteps, TerminalSteps]:
    """``steps_from_proto(agent_infos, spec)``, faster where every observation is a vector or
    a rank-2 (entity) one; a behavior with images, or observations that do not fit their
    shapes, is decoded (or refused) by ``steps_from_proto`` itself."""
    shapes = [tuple(o.shape) for o in spec.observation_specs]
    if any(len(shape) == 3 for shape in shapes):
        return steps_from_proto(agent_infos, spec)
    deciding = [info for info in agent_infos if not info.done]
    ending = [info for info in agent_infos if info.done]
    decision_obs, terminal_obs = [], []
    for index, shape in enumerate(shapes):  # in steps_from_proto's order, so the same error comes first
        decision = _observation(deciding, index, shape)
        terminal = _observation(ending, index, shape)
        if decision is None or terminal is None:
            return steps_from_proto(agent_infos, spec)  # its error names the observation that does not fit
        decision_obs.append(decision)
        terminal_obs.append(terminal)
    decision_rewards = _checked(_floats(deciding, "reward"), "rewards")
    terminal_rewards = _checked(_floats(ending, "reward"), "rewards")
    decision_group_rewards = _checked(_floats(deciding, "group_reward"), "group_rewards")
    terminal_group_rewards = _checked(_floats(ending, "group_reward"), "group_rewards")
    return (
        DecisionSteps(
            decision_obs,
            decision_rewards,
            _agent_ids(deciding),
            _action_masks(deciding, spec.action_spec.discrete_branches),
            [info.group_id for info in deciding],
            decision_group_rewards,
        ),
        TerminalSteps(
            terminal_obs,
            terminal_rewards,
            np.fromiter((info.max_step_reached for info in ending), bool, count=len(ending)),
            _agent_ids(ending),
            [info.group_id for info in ending],
            terminal_group_rewards,
        ),
    )


def _observation(infos: Sequence[Any], index: int, shape: tuple[int, ...]) -> np.ndarray | None:
    """Observation ``index`` of every agent as one float32 array [N, *shape], checked for NaN
    and Inf; None when an agent's data does not fit ``shape``."""
    size = int(np.prod(shape))
    fields = [info.observations[index].float_data.data for info in infos]
    if any(len(field) != size for field in fields):
        return None
    flat = np.fromiter(itertools.chain.from_iterable(fields), np.float32, count=size * len(fields))
    return _checked(flat.reshape((len(fields), *shape)), "observations")


def _floats(infos: Sequence[Any], field: str) -> np.ndarray:
    return np.fromiter((getattr(info, field) for info in infos), np.float32, count=len(infos))


def _agent_ids(infos: Sequence[Any]) -> np.ndarray:
    return np.fromiter((info.id for info in infos), np.int32, count=len(infos))


def _checked(values: np.ndarray, source: str) -> np.ndarray:
    """``values``, refused as ``steps_from_proto`` refuses them: its check is the mean (NaN if
    any value is, infinite if any is or if the float32 sum overflows); the sum is the same test."""
    if values.size:
        total = values.sum()
        if np.isnan(total):
            raise RuntimeError(f"The {source} provided had NaN values.")
        if not np.isfinite(total):
            raise RuntimeError(f"The {source} provided had Infinite values.")
    return values


def _action_masks(deciding: Sequence[Any], branches: Sequence[int]) -> list[np.ndarray] | None:
    """Per branch, [N, size] bool, True where an action is masked (Unity's own sense): an agent
    whose mask does not have one entry per action gets none masked; None without discrete
    actions or deciding agents, as ``steps_from_proto``."""
    if not branches or not deciding:
        return None
    width = int(sum(branches))
    masks = np.zeros((len(deciding), width), bool)
    for row, info in enumerate(deciding):
        if len(info.action_mask) == width:
            masks[row] = info.action_mask
    return np.split(masks, np.cumsum(branches)[:-1], axis=1)
