"""Group mates in trajectories: each transition of a grouped agent carries the other members'
status at that step (what they acted on, their action, reward and done flag), as ML-Agents'
``AgentExperience.group_status``, and a trajectory carries the mates' observations after it."""

from __future__ import annotations

import numpy as np
import pytest

from processors import AgentManager
from stats import StatsReporter
from tests.steps import NO_TERMINALS, action_info, behavior_spec, drain, fake_policy, vector_steps, vector_terminals

GROUP = 5


def make_manager(horizon: int = 1000) -> AgentManager:
    return AgentManager(fake_policy(behavior_spec()), "Team?team=0", StatsReporter("Team"), horizon, threaded=False)


def act(ids: list[int], t: int):
    """Agent i acts ``i + t / 10`` at step t (so every mate's action says who and when)."""
    return action_info(ids, [[i + t / 10] for i in ids])


def obs_value(agent: int, t: int) -> float:
    return 10.0 * agent + t


def mate_rows(trajectory) -> list[list[tuple[float, float, float, bool]]]:
    """Per row: the present mates as (obs, action, reward, done), sorted by obs."""
    mates = trajectory.groupmates
    rows = []
    for t in range(trajectory.length):
        present = np.flatnonzero(mates.present[t])
        rows.append(
            sorted(
                (
                    float(mates.obs[0][t, j, 0]),
                    round(float(mates.continuous_actions[t, j, 0]), 6),
                    round(float(mates.rewards[t, j]), 6),
                    bool(mates.done[t, j]),
                )
                for j in present
            )
        )
    return rows


@pytest.mark.parametrize("extra_agents", [0, 6])  # the per-agent and the batched decision paths
def test_member_leaving_early_then_group_ending(extra_agents: int):
    """Agents 1, 2, 3 in one group; 3 ends its episode at step 2, 1 and 2 at step 3 with a
    group reward. Ungrouped agents 100.. beside them change nothing."""
    manager = make_manager()
    others = list(range(100, 100 + extra_agents))

    def step(t: int, ids: list[int], rewards: list[float], previous: list[int] | None, group_reward: float = 0.0):
        every = ids + others
        steps = vector_steps(
            every,
            [obs_value(i, t) for i in every],
            rewards + [0.0] * len(others),
            [GROUP] * len(ids) + [0] * len(others),
            [group_reward] * len(ids) + [0.0] * len(others),
        )
        return steps, None if previous is None else act(previous + others, t - 1)

    steps, _ = step(0, [1, 2, 3], [0, 0, 0], None)
    manager.add_experiences(steps, NO_TERMINALS, 0, None)
    steps, previous = step(1, [1, 2, 3], [0.1, 0.2, 0.3], [1, 2, 3])
    manager.add_experiences(steps, NO_TERMINALS, 0, previous)
    steps, previous = step(2, [1, 2], [0.1, 0.2], [1, 2, 3])
    terminals = vector_terminals([3], [obs_value(3, 2)], [-0.5], group_ids=[GROUP])
    manager.add_experiences(steps, terminals, 0, previous)
    _, previous = step(3, [], [], [1, 2])
    terminals = vector_terminals([1, 2], [obs_value(1, 3), obs_value(2, 3)], [0.1, 0.2], None, [GROUP] * 2, [1.0] * 2)
    manager.add_experiences(vector_steps(others, [0.0] * len(others), [0.0] * len(others)), terminals, 0, previous)
    by_agent = {t.agent_id: t for t in drain(manager.trajectory_queue)}

    leaver = by_agent["agent_0-3"]
    assert leaver.done.tolist() == [False, True]
    assert mate_rows(leaver) == [
        [(10.0, 1.0, 0.1, False), (20.0, 2.0, 0.2, False)],
        [(11.0, 1.1, 0.1, False), (21.0, 2.1, 0.2, False)],
    ]
    assert not leaver.all_group_dones_reached  # the group goes on: POCA bootstraps from its value
    assert sorted(float(o[0]) for o in leaver.groupmates.next_obs[0]) == [12.0, 22.0]

    first = by_agent["agent_0-1"]
    assert first.done.tolist() == [False, False, True]
    assert first.group_rewards.tolist() == [0.0, 0.0, 1.0]
    assert mate_rows(first) == [
        [(20.0, 2.0, 0.2, False), (30.0, 3.0, 0.3, False)],
        [(21.0, 2.1, 0.2, False), (31.0, 3.1, -0.5, True)],  # 3 is seen once more, done
        [(22.0, 2.2, 0.2, True)],  # 3 has left the group
    ]
    assert first.all_group_dones_reached
    assert sorted(float(o[0]) for o in first.groupmates.next_obs[0]) == [23.0]  # 2's terminal observation
    for i in others:
        assert by_agent.get(f"agent_0-{i}") is None or by_agent[f"agent_0-{i}"].groupmates.size == 0


def test_mates_are_kept_across_a_time_horizon_cut_and_missing_decisions():
    """A mate that skips a decision is still seen with its last status (ML-Agents keeps it
    until the mate's episode ends); horizon cuts change nothing."""
    manager = make_manager(horizon=2)
    manager.add_experiences(vector_steps([1, 2], [10.0, 20.0], [0, 0], [GROUP] * 2), NO_TERMINALS, 0, None)
    manager.add_experiences(vector_steps([1, 2], [11.0, 21.0], [0, 0], [GROUP] * 2), NO_TERMINALS, 0, act([1, 2], 0))
    manager.add_experiences(vector_steps([1], [12.0], [0], [GROUP]), NO_TERMINALS, 0, act([1, 2], 1))
    manager.add_experiences(vector_steps([1], [13.0], [0], [GROUP]), NO_TERMINALS, 0, act([1], 2))
    by_agent = {}
    for trajectory in drain(manager.trajectory_queue):
        by_agent.setdefault(trajectory.agent_id, []).append(trajectory)
    (cut,) = by_agent["agent_0-1"]  # rows 0, 1; the horizon cut it at step 2
    assert mate_rows(cut) == [[(20.0, 2.0, 0.0, False)], [(20.0, 2.0, 0.0, False)]]
    manager.end_episode()
    rest = {t.agent_id: t for t in drain(manager.trajectory_queue)}
    assert mate_rows(rest["agent_0-1"]) == [[(20.0, 2.0, 0.0, False)]]


def test_ungrouped_behaviour_has_no_mates():
    manager = make_manager()
    manager.add_experiences(vector_steps([1], [0.0], [0]), NO_TERMINALS, 0, None)
    manager.add_experiences(vector_steps([1], [1.0], [0]), NO_TERMINALS, 0, act([1], 0))
    manager.end_episode()
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.groupmates is None and trajectory.all_group_dones_reached


def test_groups_of_different_workers_never_mix():
    manager = make_manager()
    for worker in (0, 1):
        manager.add_experiences(vector_steps([1, 2], [10.0, 20.0], [0, 0], [GROUP] * 2), NO_TERMINALS, worker, None)
    for worker in (0, 1):
        steps = vector_steps([1, 2], [11.0 + worker, 21.0 + worker], [0, 0], [GROUP] * 2)
        manager.add_experiences(steps, NO_TERMINALS, worker, act([1, 2], worker))
    manager.end_episode()
    by_agent = {t.agent_id: t for t in drain(manager.trajectory_queue)}
    assert mate_rows(by_agent["agent_0-1"]) == [[(20.0, 2.0, 0.0, False)]]
    assert mate_rows(by_agent["agent_1-1"]) == [[(20.0, 2.1, 0.0, False)]]
    assert [float(o[0]) for o in by_agent["agent_1-1"].groupmates.next_obs[0]] == [22.0]
