"""ML-Agents 0.28 ``Trajectory`` objects shaped like its AgentProcessor's output for a
continuous-action agent, for the anchor benchmarks that feed ML-Agents' own trainers (imported
by those scripts, which run from this folder under ML-Agents' venv; not a benchmark itself)."""

from __future__ import annotations

import numpy as np
from mlagents.trainers.torch.action_log_probs import LogProbsTuple
from mlagents.trainers.trajectory import AgentExperience, Trajectory
from mlagents_envs.base_env import ActionTuple


def continuous_trajectory(
    obs: np.ndarray,
    actions: np.ndarray,
    log_probs: np.ndarray,
    rewards: np.ndarray,
    *,
    terminated: bool,
    agent_id: str,
    behavior_id: str,
    memories: np.ndarray | None = None,
) -> Trajectory:
    """``obs`` [T + 1, n] (the last row is ``next_obs``), ``actions`` and ``log_probs`` [T, c],
    ``rewards`` [T]; ``memories`` [T, k] fed with each step (None: no memory)."""
    length = actions.shape[0]
    empty_int = np.zeros(0, dtype=np.int32)
    empty_float = np.zeros(0, dtype=np.float32)
    steps = [
        AgentExperience(
            obs=[obs[t]],
            reward=float(rewards[t]),
            done=terminated and t == length - 1,
            action=ActionTuple(continuous=actions[t], discrete=empty_int),
            action_probs=LogProbsTuple(continuous=log_probs[t], discrete=empty_float),
            action_mask=None,
            prev_action=empty_int,
            interrupted=False,
            memory=None if memories is None else memories[t],
            group_status=[],
            group_reward=0.0,
        )
        for t in range(length)
    ]
    return Trajectory(
        steps=steps, next_obs=[obs[length]], next_group_obs=[], agent_id=agent_id, behavior_id=behavior_id
    )
