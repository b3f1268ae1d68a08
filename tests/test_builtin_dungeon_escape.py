"""DungeonEscape: a cooperative escape that needs one agent eaten by the dragon (for POCA)."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, rollout
from envs.builtin.dungeon_escape import DungeonEscapeEnv

NAME = "DungeonEscape?team=0"
STAY, EAST, WEST, NORTH, SOUTH = range(5)


def place(env: DungeonEscapeEnv, area: int, door, dragon, agents) -> None:
    """Put area ``area``'s door, dragon and agents (x, y) on chosen cells."""
    env._door[area] = door
    env._dragon[area] = dragon
    k = env.num_agents
    env._pos[area * k : (area + 1) * k] = agents


def act(env, moves: dict[int, int]) -> None:
    """Move agents by id (STAY when not listed) and step."""
    decision = env.get_steps(NAME)[0]
    actions = [moves.get(agent_id, STAY) for agent_id in decision.agent_id.tolist()]
    env.set_actions(NAME, ActionTuple(discrete=np.array(actions, np.int32).reshape(-1, 1)))
    env.step()


def rows(env) -> tuple:
    """(decision ids, rewards, group ids, group rewards), (terminal ids, rewards, group ids,
    group rewards, interrupted), rounded."""
    decision, terminal = env.get_steps(NAME)
    r = lambda a: np.round(a.astype(np.float64), 5).tolist()  # noqa: E731
    return (
        (decision.agent_id.tolist(), r(decision.reward), decision.group_id.tolist(), r(decision.group_reward)),
        (
            terminal.agent_id.tolist(),
            r(terminal.reward),
            terminal.group_id.tolist(),
            r(terminal.group_reward),
            terminal.interrupted.tolist(),
        ),
    )


NOTHING = ([], [], [], [], [])


def test_spec_groups_and_behavior_name():
    env = make_env("DungeonEscape", seed=0, num_areas=2)
    assert list(env.behavior_specs) == [NAME]
    spec = env.behavior_specs[NAME]
    assert [o.shape for o in spec.observation_specs] == [(19,)]
    assert spec.action_spec.discrete_branches == (5,) and spec.action_spec.continuous_size == 0
    decision = env.get_steps(NAME)[0]
    assert decision.agent_id.tolist() == [0, 1, 2, 3, 4, 5]
    assert decision.group_id.tolist() == [1, 1, 1, 2, 2, 2]
    env = make_env("DungeonEscape", seed=0, env_parameters={"num_agents": 2, "size": 3})
    assert env.behavior_specs[NAME].observation_specs[0].shape == (15,)


def test_observation_holds_own_position_and_offsets():
    env = make_env("DungeonEscape", seed=0)
    place(env, 0, door=(3, 3), dragon=(0, 3), agents=[(0, 0), (3, 0), (1, 1)])
    act(env, {})
    obs = env.get_steps(NAME)[0].obs[0] * 3  # coordinates in cells (and flags times 3)
    expected_first = [0, 0, 0, 3, 0, 3, 0, 0, 0, 3, 3, 3, 3, 0, 0, 3, 1, 1, 0]
    assert obs[0].tolist() == pytest.approx(expected_first)
    # the third agent sees the first agent, then the second (cyclic)
    assert obs[2, 11:].tolist() == pytest.approx([3, -1, -1, 0, 3, 2, -1, 0])


def test_the_sacrifice_drops_the_key_and_the_carrier_opens_the_door():
    env = make_env("DungeonEscape", seed=0)
    place(env, 0, door=(3, 3), dragon=(1, 0), agents=[(0, 0), (2, 0), (3, 2)])
    act(env, {0: EAST})  # agent 0 walks into the dragon: eaten, not interrupted, reward 0
    assert rows(env) == (([1, 2], [0.0, 0.0], [1, 1], [0.0, 0.0]), ([0], [0.0], [1], [0.0], [False]))
    obs = env.get_steps(NAME)[0].obs[0] * 3
    assert obs[0, 3:9].tolist() == pytest.approx([0, 0, 0, 3, -1, 0])  # dragon gone, key at (1, 0)
    assert obs[0, 11:19].tolist() == [3, 1, 2, 0, 0, 0, 0, 0]  # agent 1 sees agent 2, then agent 0 gone
    act(env, {2: NORTH})  # the door without the key: nothing happens
    assert rows(env) == (([1, 2], [0.0, 0.0], [1, 1], [0.0, 0.0]), NOTHING)
    act(env, {1: WEST})  # agent 1 picks up the key
    assert env._has_key.tolist() == [False, True, False] and not env._key_on_floor[0]
    assert env.get_steps(NAME)[0].obs[0][:, 2].tolist() == [1.0, 0.0]
    for _ in range(2):
        act(env, {1: EAST})
    for _ in range(2):
        act(env, {1: NORTH})
    assert rows(env)[1] == NOTHING
    act(env, {1: NORTH})  # at the door with the key: +1 group reward to both, the group restarts
    assert rows(env) == (
        ([3, 4, 5], [0.0] * 3, [1, 1, 1], [0.0] * 3),
        ([1, 2], [0.0, 0.0], [1, 1], [1.0, 1.0], [False] * 2),
    )
    assert env.escapes == [True]
    stats = env.get_and_reset_stats()
    assert stats["DungeonEscape/Escaped"] == [(1.0, StatsAggregationMethod.AVERAGE)]
    assert stats["DungeonEscape/Dragon Slain"] == [(1.0, StatsAggregationMethod.AVERAGE)]
    assert stats["DungeonEscape/Episode Length"] == [(8.0, StatsAggregationMethod.AVERAGE)]


def test_time_penalty_and_escape_come_only_as_group_rewards():
    env = make_env("DungeonEscape", seed=0, time_penalty=1.0, max_step=10)
    place(env, 0, door=(2, 0), dragon=(1, 0), agents=[(0, 0), (3, 0), (0, 3)])
    act(env, {0: EAST})  # eaten: the step's penalty, -0.1, as group reward; individual reward 0
    assert rows(env) == (([1, 2], [0.0, 0.0], [1, 1], [-0.1, -0.1]), ([0], [0.0], [1], [-0.1], [False]))
    act(env, {1: WEST})  # agent 1 steps onto the door: no key yet
    act(env, {1: WEST})  # the key
    act(env, {1: EAST})  # the door
    assert rows(env)[1] == ([1, 2], [0.0, 0.0], [1, 1], [0.9, 0.9], [False, False])


def test_the_time_limit_interrupts_the_group_and_an_agent_eaten_then_is_not_interrupted():
    env = make_env("DungeonEscape", seed=0, num_areas=2, env_parameters={"max_step": 3})
    place(env, 0, door=(3, 3), dragon=(0, 1), agents=[(0, 0), (2, 0), (3, 2)])
    act(env, {})
    act(env, {})
    assert rows(env)[1] == NOTHING
    act(env, {0: NORTH})  # the third decision: agent 0 eaten, the rest interrupted, both areas restart
    decision, terminal = rows(env)
    assert terminal == ([0, 1, 2, 3, 4, 5], [0.0] * 6, [1, 1, 1, 2, 2, 2], [0.0] * 6, [False] + [True] * 5)
    assert decision == ([6, 7, 8, 9, 10, 11], [0.0] * 6, [1, 1, 1, 2, 2, 2], [0.0] * 6)
    assert env.escapes == [False, False]
    stats = env.get_and_reset_stats()
    assert [v for v, _ in stats["DungeonEscape/Dragon Slain"]] == [1.0, 0.0]


def test_two_agents_on_the_dragon_only_the_lowest_slot_is_eaten_and_another_takes_the_key():
    env = make_env("DungeonEscape", seed=0)
    place(env, 0, door=(3, 3), dragon=(1, 1), agents=[(1, 0), (0, 1), (1, 2)])
    act(env, {0: NORTH, 1: EAST, 2: SOUTH})
    assert rows(env)[1] == ([0], [0.0], [1], [0.0], [False])
    assert env._has_key.tolist() == [False, True, False]  # the key is picked up at once


def test_absorbing_state_keeps_the_eaten_agent_in_the_group_until_the_end():
    env = make_env("DungeonEscape", seed=0, env_parameters={"absorbing_state": 1})
    place(env, 0, door=(2, 0), dragon=(1, 0), agents=[(0, 0), (3, 0), (0, 3)])
    act(env, {0: EAST})
    assert rows(env) == (([0, 1, 2], [0.0] * 3, [1] * 3, [0.0] * 3), NOTHING)
    obs = env.get_steps(NAME)[0].obs[0]
    assert not obs[0].any() and obs[1, 11 + 4] == 0.0  # it sees nothing; agent 1 sees it absent
    act(env, {0: NORTH, 1: WEST})  # its moves do nothing
    act(env, {1: WEST})
    act(env, {1: EAST})
    assert rows(env)[1] == ([0, 1, 2], [0.0] * 3, [1] * 3, [1.0] * 3, [False] * 3)


def scripted(env: DungeonEscapeEnv):
    """The lowest slot walks to the dragon; then the survivor nearest the key fetches it and
    carries it to the door; the others stay."""

    def policy(name, decision):
        actions = np.zeros(len(decision), np.int32)
        k = env.num_agents
        for row, agent_id in enumerate(decision.agent_id.tolist()):
            slot = int(np.flatnonzero(env._agents.ids == agent_id)[0])
            area = slot // k
            members = [m for m in range(area * k, area * k + k) if env._agents.ids[m] >= 0]
            if env._dragon_alive[area]:
                target = env._dragon[area] if slot == members[0] else None
            elif env._key_on_floor[area]:
                nearest = min(members, key=lambda m: np.abs(env._pos[m] - env._key[area]).sum())
                target = env._key[area] if slot == nearest else None
            else:
                target = env._door[area] if env._has_key[slot] else None
            if target is not None:
                dx, dy = target - env._pos[slot]
                actions[row] = EAST if dx > 0 else WEST if dx < 0 else NORTH if dy > 0 else SOUTH if dy < 0 else STAY
        return ActionTuple(discrete=actions[:, None])

    return policy


def test_a_scripted_sacrifice_always_escapes_and_random_play_rarely_does():
    env = make_env("DungeonEscape", seed=0, num_areas=8)
    checker = StepChecker(env)
    checker.after_reset()
    rollout(env, scripted(env), 200, checker=checker)
    assert len(env.escapes) > 150 and all(env.escapes)
    lengths = [v for v, _ in env.get_and_reset_stats()["DungeonEscape/Episode Length"]]
    assert 6.5 < np.mean(lengths) < 8.5
    env = make_env("DungeonEscape", seed=0, num_areas=8)
    rng = np.random.default_rng(0)
    rollout(env, lambda n, d: ActionTuple(discrete=rng.integers(0, 5, (len(d), 1)).astype(np.int32)), 3000)
    assert len(env.escapes) > 700 and 0.12 < np.mean(env.escapes) < 0.25


@pytest.mark.parametrize(
    "options, word",
    [
        (dict(size=2), "size"),
        (dict(num_agents=1), "num_agents"),
        (dict(env_parameters={"num_agents": 2.5}), "num_agents"),
        (dict(max_step=0), "max_step"),
        (dict(time_penalty=-1.0), "time_penalty"),
        (dict(env_parameters={"absorbing_state": 0.5}), "absorbing_state"),
    ],
)
def test_bad_options_name_the_option(options, word):
    with pytest.raises(ValueError, match=word):
        make_env("DungeonEscape", seed=0, **options)


def ppo_escapes(params: dict[str, float], seed: int, stop_above: float) -> np.ndarray:
    """Train config/ppo/DungeonEscape.yaml (300k steps, 8 areas) with ``params`` until the last
    300 group episodes escape more often than ``stop_above``; every group episode's outcome."""
    import attrs

    from tests.support.learning import train_env
    from trainers.settings import load_run_options

    settings = load_run_options("config/ppo/DungeonEscape.yaml").behavior_settings("DungeonEscape")
    env = make_env("DungeonEscape", seed=seed, num_areas=8, env_parameters=params)

    def escaped(_curve: list[tuple[int, float]]) -> bool:
        return len(env.escapes) >= 300 and float(np.mean(env.escapes[-300:])) > stop_above

    train_env(env, attrs.evolve(settings, threaded=False), seed=seed, until=escaped)
    return np.array(env.escapes, float)


@pytest.mark.slow
def test_ppo_escapes_once_the_sacrifice_is_credited():
    """ML-Agents' absorbing state credits the eaten agent with the group's outcome (seeds 1-3:
    the last 300 escape more than 0.95 at 215k, 205k, 175k; at 120k 0.32, 0.55, 0.53). Without
    it PPO learns to avoid the dragon instead: tests/test_poca_dungeon.py, against POCA."""
    # on seed 1, else seed 2 (first_or_second_seed: a seed's run differs between CPUs)
    from tests.support.learning import first_or_second_seed

    first_or_second_seed(
        lambda seed: ppo_escapes({"absorbing_state": 1}, seed, stop_above=0.95), lambda e: e[-300:].mean() > 0.95
    )
