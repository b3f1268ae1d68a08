"""Acting: one behavior's policy decides for its deciding agents on any number of workers.

The one way actions are chosen for environment steps: the local env manager calls it with every
ready worker's agents in one batch, a Ray env runner with its own worker's. Agents that acted
themselves (a policy-server client acting with its own model) keep their actions, with the
policy's log-probabilities of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from mlagents_envs.base_env import ActionTuple, DecisionSteps

from envs.workers.records import TakenActions
from processors import ActionInfo, AgentManager, UnrecordedStep
from processors.agent_processor import allowed_actions
from trainers.networks.policy import TorchPolicy


class Deciding(NamedTuple):
    """One worker's deciding agents of a behavior, with the actions some took themselves;
    ``unrecorded`` when the step is decided on before the processor records it."""

    worker_id: int
    decision: DecisionSteps
    taken: TakenActions | None = None
    unrecorded: UnrecordedStep | None = None


def decide(policy: TorchPolicy, manager: AgentManager, parts: Sequence[Deciding]) -> list[ActionInfo]:
    """The policy's decisions for every part's agents (their masks and memories), taken in one
    batch; one ActionInfo per part, in order."""
    mask_width = int(sum(policy.behavior_spec.action_spec.discrete_branches))
    masks = _joined_masks([allowed_actions(part.decision, mask_width) for part in parts], parts, mask_width)
    memories = None
    if policy.memory_size > 0:
        memories = _joined(
            [manager.get_memories(part.worker_id, part.decision.agent_id, unrecorded=part.unrecorded) for part in parts]
        )
    n_sensors = len(policy.behavior_spec.observation_specs)
    obs = [_joined([part.decision.obs[i] for part in parts]) for i in range(n_sensors)]
    agent_ids = _joined([part.decision.agent_id for part in parts])
    info = policy.act(obs, masks, agent_ids, memories)
    if len(parts) == 1 and parts[0].taken is None:
        return [info]
    infos, start = [], 0
    for part in parts:
        stop = start + len(part.decision)
        share = info if len(parts) == 1 else slice_action_info(info, start, stop)
        if part.taken is not None:
            rows = slice(start, stop)
            share = with_taken_actions(
                policy,
                part.decision,
                share,
                part.taken,
                None if masks is None else masks[rows],
                None if memories is None else memories[rows],
            )
        infos.append(share)
        start = stop
    return infos


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays stacked by rows (the one array itself, uncopied, when there is one)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _joined_masks(masks: list[np.ndarray | None], parts: Sequence[Deciding], mask_width: int) -> np.ndarray | None:
    """Every part's allowed actions by rows (all allowed for a part without a mask); None when
    no part has one."""
    if all(mask is None for mask in masks):
        return None
    return _joined(
        [
            mask if mask is not None else np.ones((len(part.decision), mask_width), bool)
            for mask, part in zip(masks, parts, strict=True)
        ]
    )


def slice_action_info(info: ActionInfo, start: int, stop: int) -> ActionInfo:
    """Rows ``start:stop`` of ``info`` (one worker's share of a batched decision)."""
    s = slice(start, stop)
    return ActionInfo(
        agent_ids=info.agent_ids[s],
        env_actions=ActionTuple(continuous=info.env_actions.continuous[s], discrete=info.env_actions.discrete[s]),
        continuous_actions=info.continuous_actions[s],
        discrete_actions=info.discrete_actions[s],
        continuous_log_probs=info.continuous_log_probs[s],
        discrete_log_probs=info.discrete_log_probs[s],
        entropy=info.entropy[s],
        memories=info.memories[s],
    )


def with_taken_actions(
    policy: TorchPolicy,
    decision: DecisionSteps,
    info: ActionInfo,
    taken: TakenActions,
    masks: np.ndarray | None,
    memories: np.ndarray | None,
) -> ActionInfo:
    """``info`` with the rows the agents acted on themselves (``taken.rows``) replaced by those
    actions and the policy's log-probabilities of them (:meth:`TorchPolicy.act_taken`)."""
    rows = np.flatnonzero(taken.rows)
    if rows.size == 0:
        return info
    given = policy.act_taken(
        [o[rows] for o in decision.obs],
        None if masks is None else masks[rows],
        info.agent_ids[rows],
        None if memories is None else memories[rows],
        taken.continuous[rows],
        taken.discrete[rows],
    )
    fields = {}
    for name in (
        "continuous_actions",
        "discrete_actions",
        "continuous_log_probs",
        "discrete_log_probs",
        "entropy",
        "memories",
    ):
        merged = getattr(info, name).copy()
        merged[rows] = getattr(given, name)
        fields[name] = merged
    continuous, discrete = info.env_actions.continuous.copy(), info.env_actions.discrete.copy()
    continuous[rows], discrete[rows] = given.env_actions.continuous, given.env_actions.discrete
    return ActionInfo(
        agent_ids=info.agent_ids, env_actions=ActionTuple(continuous=continuous, discrete=discrete), **fields
    )
