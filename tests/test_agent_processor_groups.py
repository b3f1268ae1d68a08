"""Group mates in trajectories: each transition of a grouped agent carries the other members'
status at that step (what they acted on, their action, reward and done flag), as ML-Agents'
``AgentExperience.group_status``, and a trajectory carries the mates' observations after it.
The last tests feed the steps ML-Agents 0.28's own AgentProcessor was fed (``group_parity.json``,
made by ``tests/fixtures/mlagents_0_28/make_group_parity.py``) and compare every trajectory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

from processors import ActionInfo, AgentManager
from stats import StatsReporter
from tests.steps import (
    NO_TERMINALS,
    action_info,
    behavior_spec,
    decision_steps,
    drain,
    fake_policy,
    terminal_steps,
    vector_steps,
    vector_terminals,
)

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


# ---------------------------------------------------------------- ML-Agents 0.28, fed the same steps

GROUP_PARITY = json.loads(
    (Path(__file__).parent / "fixtures" / "mlagents_0_28" / "group_parity.json").read_text(encoding="utf-8")
)


def parity_actions(actions: dict | None) -> ActionInfo | None:
    if actions is None:
        return None
    n = len(actions["agent_id"])
    continuous = np.asarray(actions["continuous"], np.float32).reshape(n, -1)
    discrete = np.asarray(actions["discrete"], np.int32).reshape(n, -1)
    return ActionInfo(
        agent_ids=np.asarray(actions["agent_id"], np.int32),
        env_actions=ActionTuple(continuous=continuous, discrete=discrete),
        continuous_actions=continuous,
        discrete_actions=discrete,
        continuous_log_probs=np.asarray(actions["continuous_log_probs"], np.float32).reshape(n, -1),
        discrete_log_probs=np.asarray(actions["discrete_log_probs"], np.float32).reshape(n, -1),
        entropy=np.ones(n, np.float32),
        memories=np.zeros((n, 0), np.float32),
    )


def parity_sensors(rows: dict) -> list[np.ndarray]:
    n = len(rows["agent_id"])
    return [
        np.asarray(s, np.float32).reshape(n, *shape)
        for s, shape in zip(rows["obs"], GROUP_PARITY["observation_shapes"])
    ]


def floats(values) -> list:
    return np.asarray(values, np.float64).tolist()


def as_recorded(trajectory, published_at: dict) -> dict:
    """Our trajectory in the fixture's terms (``make_group_parity.record``)."""
    mates = trajectory.groupmates
    rows = []
    for t in range(trajectory.length):
        columns = np.flatnonzero(mates.present[t]) if mates is not None else []
        rows.append(
            [
                {
                    "obs": [floats(o[t, j]) for o in mates.obs],
                    "continuous_action": floats(mates.continuous_actions[t, j]),
                    "discrete_action": mates.discrete_actions[t, j].tolist(),
                    "reward": float(mates.rewards[t, j]),
                    "done": bool(mates.done[t, j]),
                }
                for j in columns
            ]
        )
    next_group = (
        [] if mates is None else [[floats(o[j]) for o in mates.next_obs] for j in range(mates.next_obs[0].shape[0])]
    )
    return {
        "agent_id": trajectory.agent_id,
        "published_at": published_at,
        "obs": [floats(o) for o in trajectory.obs],
        "continuous_actions": floats(trajectory.continuous_actions),
        "discrete_actions": trajectory.discrete_actions.tolist(),
        "continuous_log_probs": floats(trajectory.continuous_log_probs),
        "discrete_log_probs": floats(trajectory.discrete_log_probs),
        "rewards": floats(trajectory.rewards),
        "done": trajectory.done.tolist(),
        "interrupted": trajectory.interrupted.tolist(),
        "group_rewards": floats(trajectory.group_rewards),
        "mates": rows,
        "next_obs": [floats(o) for o in trajectory.next_obs],
        "next_group_obs": next_group,
        "all_group_dones_reached": bool(trajectory.all_group_dones_reached),
    }


def as_set(items: list) -> list[str]:
    """Mates are a set (the critic attends over them): compare them in a canonical order."""
    return sorted(json.dumps(item, sort_keys=True) for item in items)


def by_agent(records: list[dict]) -> dict[tuple[str, int], dict]:
    """Each agent's trajectories in publication order, keyed (agent id, index), mates as sets."""
    keyed: dict[tuple[str, int], dict] = {}
    seen: dict[str, int] = {}
    for record in records:
        index = seen.get(record["agent_id"], 0)
        seen[record["agent_id"]] = index + 1
        canonical = dict(record, mates=[as_set(row) for row in record["mates"]])
        canonical["next_group_obs"] = as_set(record["next_group_obs"])
        keyed[(record["agent_id"], index)] = canonical
    return keyed


def ours_on_group_parity_steps() -> dict[tuple[str, int], dict]:
    spec = behavior_spec(
        [tuple(shape) for shape in GROUP_PARITY["observation_shapes"]],
        GROUP_PARITY["continuous_size"],
        tuple(GROUP_PARITY["discrete_branches"]),
    )
    manager = AgentManager(
        fake_policy(spec),
        GROUP_PARITY["behavior_id"],
        StatsReporter("Team"),
        GROUP_PARITY["time_horizon"],
        threaded=False,
    )
    published = []
    for call in GROUP_PARITY["calls"]:
        d, t = call["decisions"], call["terminals"]
        decisions = decision_steps(
            d["agent_id"], parity_sensors(d), d["reward"], None, d["group_id"], d["group_reward"]
        )
        terminals = terminal_steps(
            t["agent_id"], parity_sensors(t), t["reward"], t["interrupted"], t["group_id"], t["group_reward"]
        )
        manager.add_experiences(decisions, terminals, call["worker"], parity_actions(call["actions"]))
        at = {"worker": call["worker"], "step": call["step"]}
        published += [as_recorded(trajectory, at) for trajectory in drain(manager.trajectory_queue)]
    return by_agent(published)


def test_grouped_steps_give_what_mlagents_gives_but_for_the_documented_difference():
    """Every trajectory, row by row (observations, actions, rewards, done flags, group rewards,
    mates' statuses) and its mates' next observations, as ML-Agents 0.28's AgentProcessor made
    them from the same steps, with every status of a step gathered before its rows are
    recorded (``statuses_first``: the difference ``processors/groups.py`` documents)."""
    ours = ours_on_group_parity_steps()
    expected = by_agent(GROUP_PARITY["statuses_first"])
    assert list(ours) == list(expected)
    for key, record in expected.items():
        for field, value in record.items():
            assert ours[key][field] == value, f"{key} {field}"


def test_the_documented_difference_is_terminal_rows_only():
    """ML-Agents as released and with statuses first differ only in terminal rows' mates and
    in the next mate observations of trajectories that end with one, and do differ there."""
    released, first = by_agent(GROUP_PARITY["mlagents"]), by_agent(GROUP_PARITY["statuses_first"])
    assert list(released) == list(first)
    differing = set()
    for key, record in first.items():
        other = released[key]
        for t, (row, other_row) in enumerate(zip(record["mates"], other["mates"])):
            if row != other_row:
                assert record["done"][t], f"{key} row {t}"
                differing.add(("mates", key))
        if record["next_group_obs"] != other["next_group_obs"]:
            assert record["done"][-1], key
            differing.add(("next_group_obs", key))
        rest = set(record) - {"mates", "next_group_obs"}
        assert {f: record[f] for f in rest} == {f: other[f] for f in rest}, key
    assert {kind for kind, _ in differing} == {"mates", "next_group_obs"}


def test_a_mate_ending_its_episode_as_mlagents():
    """The two cases of issue 34: agent 1 ends at step 4, where 0's trajectory is cut by the
    time horizon: 0 bootstraps from both mates, 1's terminal observation included; agent 2 ends
    at step 5 and starts again under the same id: the first row of 0's next trajectory sees
    2's terminal status, not its new episode."""
    ours = ours_on_group_parity_steps()
    cut = ours[("agent_0-0", 0)]
    assert cut["published_at"] == {"worker": 0, "step": 4} and not cut["done"][-1]
    assert cut["next_group_obs"] == as_set([[[14.0, 4.0], [0.5]], [[24.0, 4.0], [1.0]]])
    following = ours[("agent_0-0", 1)]
    (mate,) = [json.loads(m) for m in following["mates"][0]]
    assert mate["obs"] == [[24.0, 4.0], [1.0]] and mate["done"] and mate["reward"] == pytest.approx(-0.7)
