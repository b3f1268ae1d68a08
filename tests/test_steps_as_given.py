"""Steps exactly as ``mlagents_envs`` builds them from a Unity build's messages (its
``steps_from_proto`` gives ``group_id`` as a Python list) and as a user's ``BaseEnv`` may hand
them over (lists, ids of any integer width) make the same trajectories as the arrays our
built-in environments give, through both entrances: ``AgentProcessor.add_experiences`` (ML-Agents'
signature) and the worker-pool records (``StepsRecord.from_steps``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from mlagents_envs.base_env import DecisionSteps, TerminalSteps

import envs.unity  # noqa: F401  (registers the protocol modules for this protobuf)
from envs.workers import StepsRecord
from processors import AgentManager
from stats import StatsReporter
from tests.steps import action_info, behavior_spec, drain, fake_policy

SPEC = behavior_spec(((2,),), continuous=0, branches=(3,))
Agent = tuple[int, int, float, float, bool, bool]  # id, group, reward, group reward, done, interrupted


def proto_steps(agents: list[Agent], step: int) -> tuple[DecisionSteps, TerminalSteps]:
    """What ``mlagents_envs`` makes of a message in which ``agents`` report at ``step``."""
    from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
    from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto
    from mlagents_envs.rpc_utils import steps_from_proto

    infos = []
    for agent_id, group, reward, group_reward, done, interrupted in agents:
        obs = ObservationProto(shape=[2])
        obs.float_data.data.extend([float(agent_id), float(step)])
        infos.append(
            AgentInfoProto(
                id=agent_id,
                reward=reward,
                done=done,
                max_step_reached=interrupted,
                group_id=group,
                group_reward=group_reward,
                observations=[obs],
                action_mask=[False, False, True],
            )
        )
    return steps_from_proto(infos, SPEC)


def as_arrays(decision: DecisionSteps, terminal: TerminalSteps) -> tuple[DecisionSteps, TerminalSteps]:
    """The same steps as our built-in environments give them: arrays, int32 ids."""
    return (
        DecisionSteps(
            decision.obs,
            decision.reward,
            np.asarray(decision.agent_id, np.int32),
            decision.action_mask,
            np.asarray(decision.group_id, np.int32),
            decision.group_reward,
        ),
        TerminalSteps(
            terminal.obs,
            terminal.reward,
            terminal.interrupted,
            np.asarray(terminal.agent_id, np.int32),
            np.asarray(terminal.group_id, np.int32),
            terminal.group_reward,
        ),
    )


def as_lists(decision: DecisionSteps, terminal: TerminalSteps) -> tuple[DecisionSteps, TerminalSteps]:
    """A user's environment handing over plain Python lists (and ids as int16 / uint64)."""
    return (
        DecisionSteps(
            [o.tolist() for o in decision.obs],
            decision.reward.tolist(),
            np.asarray(decision.agent_id, np.int16),
            None if decision.action_mask is None else [m.tolist() for m in decision.action_mask],
            list(decision.group_id),
            decision.group_reward.tolist(),
        ),
        TerminalSteps(
            [o.tolist() for o in terminal.obs],
            terminal.reward.tolist(),
            terminal.interrupted.tolist(),
            np.asarray(terminal.agent_id, np.uint64),
            list(terminal.group_id),
            terminal.group_reward.tolist(),
        ),
    )


def through_records(decision: DecisionSteps, terminal: TerminalSteps) -> tuple[DecisionSteps, TerminalSteps]:
    """Across the worker-pool boundary, as the env managers see a Unity build's steps."""
    return StepsRecord.from_steps(decision, terminal).to_steps()


def as_mlagents(decision: DecisionSteps, terminal: TerminalSteps) -> tuple[DecisionSteps, TerminalSteps]:
    return decision, terminal


def episode(size: int) -> list[list[Agent]]:
    """Agents 0..size-1 in group 7 (and, with size > 4, the rest ungrouped): agent 1 leaves the
    group at step 2, the group ends at step 4 with a group reward, the others are cut at step 5."""
    grouped = [a for a in range(size) if a < 3]
    rest = [a for a in range(size) if a >= 3]
    steps: list[list[Agent]] = []
    for t in range(6):
        agents: list[Agent] = []
        for a in grouped:
            if t < 2 or (a != 1 and t < 4):
                agents.append((a, 7, 0.1 * a, 0.0, False, False))
            elif (a == 1 and t == 2) or (a != 1 and t == 4):
                agents.append((a, 7, -0.5, 1.0 if t == 4 else 0.0, True, False))
        for a in rest:
            agents.append((a, 0, 0.01 * a, 0.0, t == 5, t == 5))
        steps.append(agents)
    return steps


def trajectories(size: int, convert: Callable) -> list:
    manager = AgentManager(fake_policy(SPEC), "Team?team=0", StatsReporter("Team"), 1000, threaded=False)
    previous = None
    for t, agents in enumerate(episode(size)):
        decision, terminal = convert(*proto_steps(agents, t))
        manager.add_experiences(decision, terminal, 0, previous)
        ids = [a[0] for a in agents if not a[4]]
        previous = action_info(ids, discrete=[[(a + t) % 2] for a in ids]) if ids else None
    return sorted(drain(manager.trajectory_queue), key=lambda trajectory: trajectory.agent_id)


def summary(trajectory) -> dict:
    mates = trajectory.groupmates
    return {
        "agent": trajectory.agent_id,
        "obs": trajectory.obs[0].tolist(),
        "rewards": trajectory.rewards.tolist(),
        "done": trajectory.done.tolist(),
        "interrupted": trajectory.interrupted.tolist(),
        "group_id": trajectory.group_id.tolist(),
        "group_rewards": trajectory.group_rewards.tolist(),
        "actions": trajectory.discrete_actions.tolist(),
        "masks": trajectory.action_masks.tolist(),
        "mates": None if mates is None else (mates.present.tolist(), mates.rewards.tolist(), mates.done.tolist()),
    }


@pytest.mark.parametrize("size", [3, 8])  # the one-agent-at-a-time path (<= 4 deciding) and the batched one
@pytest.mark.parametrize("convert", [as_mlagents, as_lists, through_records], ids=lambda f: f.__name__)
def test_steps_as_mlagents_envs_or_a_user_env_gives_them_make_the_same_trajectories(size, convert):
    expected = [summary(t) for t in trajectories(size, as_arrays)]
    assert [summary(t) for t in trajectories(size, convert)] == expected
    leaver = next(e for e in expected if e["agent"] == "agent_0-1")
    assert leaver["done"] == [False, True] and leaver["group_id"] == [7, 7]
    ender = next(e for e in expected if e["agent"] == "agent_0-0")
    assert ender["group_rewards"][-1] == 1.0 and ender["masks"][0] == [True, True, False]


def test_records_from_mlagents_steps_are_arrays_of_the_documented_dtypes():
    record = StepsRecord.from_steps(*proto_steps([(3, 5, 1.0, 0.5, False, False), (4, 5, 0.0, 0.0, True, True)], 0))
    assert isinstance(record.d_group_id, np.ndarray) and record.d_group_id.dtype == np.int32
    assert record.d_group_id.tolist() == [5] and record.t_group_id.tolist() == [5]
    assert record.d_agent_id.dtype == record.t_agent_id.dtype == np.int32
    assert record.t_interrupted.tolist() == [True]
    empty = StepsRecord.from_steps(*proto_steps([], 0))
    assert empty.d_group_id.dtype == np.int32 and empty.d_group_id.shape == (0,)


def test_ids_that_are_not_integers_are_named():
    decision, terminal = proto_steps([(3, 5, 1.0, 0.5, False, False)], 0)
    decision.group_id = [0.5]
    with pytest.raises(TypeError, match="DecisionSteps.group_id must hold integers"):
        StepsRecord.from_steps(decision, terminal)
    manager = AgentManager(fake_policy(SPEC), "Team?team=0", StatsReporter("Team"), 1000, threaded=False)
    with pytest.raises(TypeError, match="DecisionSteps.group_id must hold integers"):
        manager.add_experiences(decision, terminal, 0, None)
