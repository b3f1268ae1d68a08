"""LineSoccer: a symmetric two-team game on a line, for self-play."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, rollout
from envs.builtin.line_soccer import LineSoccerEnv

T0, T1 = "LineSoccer?team=0", "LineSoccer?team=1"
STAY, FORWARD, BACK = range(3)


def place(env: LineSoccerEnv, area: int, ball: int, team0: list[int], team1: list[int]) -> None:
    p = env.players_per_team
    env._ball[area] = ball
    env._pos[0, area * p : (area + 1) * p] = team0
    env._pos[1, area * p : (area + 1) * p] = team1


def act(env, moves: dict[int, int]) -> None:
    """Actions by agent id (STAY when not listed), both teams, then step."""
    for name in (T0, T1):
        decision = env.get_steps(name)[0]
        actions = [moves.get(agent_id, STAY) for agent_id in decision.agent_id.tolist()]
        env.set_actions(name, ActionTuple(discrete=np.array(actions, np.int32).reshape(-1, 1)))
    env.step()


def ends(env, name) -> tuple:
    """(terminal ids, rewards, group rewards, interrupted) and decision ids of ``name``."""
    decision, terminal = env.get_steps(name)
    return (
        terminal.agent_id.tolist(),
        terminal.reward.tolist(),
        terminal.group_reward.tolist(),
        terminal.interrupted.tolist(),
    ), decision.agent_id.tolist()


def test_two_teams_of_one_behavior_name_with_one_spec():
    env = make_env("LineSoccer", seed=0, num_areas=2)
    assert list(env.behavior_specs) == [T0, T1]
    assert env.behavior_specs[T0] == env.behavior_specs[T1]
    spec = env.behavior_specs[T0]
    assert [o.shape for o in spec.observation_specs] == [(4,)] and spec.action_spec.discrete_branches == (3,)
    assert env.get_steps(T0)[0].agent_id.tolist() == [0, 1] and env.get_steps(T1)[0].agent_id.tolist() == [2, 3]
    assert env.get_steps(T1)[0].group_id.tolist() == [0, 0]
    assert (env._ball == 3).all() and (env._pos[0] < 3).all() and (env._pos[1] > 3).all()


def test_each_team_sees_the_line_from_its_own_side():
    env = make_env("LineSoccer", seed=0)
    place(env, 0, ball=2, team0=[1], team1=[5])
    act(env, {})
    six = 6.0
    assert env.get_steps(T0)[0].obs[0].tolist() == [pytest.approx([1 / six, 2 / six, 1 / six, 5 / six])]
    assert env.get_steps(T1)[0].obs[0].tolist() == [pytest.approx([1 / six, 4 / six, 3 / six, 5 / six])]
    place(env, 0, ball=4, team0=[1], team1=[5])  # the mirror image, seen by team 0
    act(env, {})
    assert env.get_steps(T0)[0].obs[0].tolist() == [pytest.approx([1 / six, 4 / six, 3 / six, 5 / six])]


def test_forward_kicks_score_and_the_loser_gets_minus_one():
    env = make_env("LineSoccer", seed=0)
    place(env, 0, ball=3, team0=[2], team1=[6])
    act(env, {0: FORWARD})  # onto the ball: kicked to 5
    assert env._ball.tolist() == [5] and env._pos[:, 0].tolist() == [3, 6]
    act(env, {0: FORWARD, 1: FORWARD})  # team 1 steps onto cell 5 first: its kick sends it to 3
    assert env._ball.tolist() == [3] and env._pos[:, 0].tolist() == [4, 5]
    act(env, {0: BACK})  # back onto the ball: no kick
    assert env._ball.tolist() == [3]
    act(env, {0: BACK})
    act(env, {0: FORWARD})  # 2 -> 3: kicked to 5
    act(env, {0: FORWARD})
    assert env._ball.tolist() == [5] and ends(env, T0)[0][0] == []
    act(env, {0: FORWARD})  # 4 -> 5: kicked beyond cell 6, a goal for team 0
    assert ends(env, T0) == (([0], [1.0], [0.0], [False]), [2])
    assert ends(env, T1) == (([1], [-1.0], [0.0], [False]), [3])
    assert env.results == [1]
    stats = env.get_and_reset_stats()
    assert stats["LineSoccer/Team 0 Wins"] == [(1.0, StatsAggregationMethod.AVERAGE)]
    assert stats["LineSoccer/Team 1 Wins"] == [(0.0, StatsAggregationMethod.AVERAGE)]
    assert stats["LineSoccer/Draws"] == [(0.0, StatsAggregationMethod.AVERAGE)]
    assert stats["LineSoccer/Episode Length"] == [(7.0, StatsAggregationMethod.AVERAGE)]


def test_opposing_kicks_cancel_and_team_one_scores_leftward():
    env = make_env("LineSoccer", seed=0)
    place(env, 0, ball=3, team0=[2], team1=[4])
    act(env, {0: FORWARD, 1: FORWARD})
    assert env._ball.tolist() == [3]
    place(env, 0, ball=1, team0=[0], team1=[2])
    act(env, {1: FORWARD})  # 2 -> 1: kicked to -1, a goal for team 1
    assert ends(env, T0)[0] == ([0], [-1.0], [0.0], [False])
    assert ends(env, T1)[0] == ([1], [1.0], [0.0], [False])
    assert env.results == [-1]


def test_the_time_limit_is_a_draw_interrupting_everyone():
    env = make_env("LineSoccer", seed=0, num_areas=2, env_parameters={"max_step": 3})
    for _ in range(2):
        act(env, {})
    assert ends(env, T0)[0][0] == []
    act(env, {})
    assert ends(env, T0) == (([0, 1], [0.0, 0.0], [0.0, 0.0], [True, True]), [4, 5])
    assert ends(env, T1) == (([2, 3], [0.0, 0.0], [0.0, 0.0], [True, True]), [6, 7])
    assert env.results == [0, 0]


def test_two_per_team_are_groups_and_results_come_as_group_rewards():
    env = make_env("LineSoccer", seed=0, num_areas=2, players_per_team=2)
    assert [o.shape for o in env.behavior_specs[T0].observation_specs] == [(6,)]
    assert env.get_steps(T0)[0].group_id.tolist() == [1, 1, 3, 3]
    assert env.get_steps(T1)[0].group_id.tolist() == [2, 2, 4, 4]
    place(env, 1, ball=5, team0=[4, 0], team1=[6, 6])
    act(env, {2: FORWARD})  # area 1: a goal for team 0
    assert ends(env, T0)[0] == ([2, 3], [0.0, 0.0], [1.0, 1.0], [False, False])
    assert ends(env, T1)[0] == ([6, 7], [0.0, 0.0], [-1.0, -1.0], [False, False])
    assert env.get_steps(T0)[0].agent_id.tolist() == [0, 1, 8, 9]
    obs = env.get_steps(T0)[0].obs[0]
    assert obs.shape == (4, 6)
    env = make_env("LineSoccer", seed=0, players_per_team=2)
    place(env, 0, ball=1, team0=[0, 0], team1=[2, 3])
    act(env, {2: FORWARD})  # team 1 scores: the result only as group reward, individual reward 0
    assert ends(env, T1)[0] == ([2, 3], [0.0, 0.0], [1.0, 1.0], [False, False])
    assert ends(env, T0)[0] == ([0, 1], [0.0, 0.0], [-1.0, -1.0], [False, False])


def test_teammate_and_opponent_observations_in_slot_order():
    env = make_env("LineSoccer", seed=0, players_per_team=2)
    place(env, 0, ball=3, team0=[0, 2], team1=[4, 6])
    act(env, {})
    assert (env.get_steps(T0)[0].obs[0] * 6).tolist() == [
        pytest.approx([0, 3, 3, 2, 4, 6]),
        pytest.approx([2, 3, 1, 0, 4, 6]),
    ]
    assert (env.get_steps(T1)[0].obs[0] * 6).tolist() == [
        pytest.approx([2, 3, 1, 0, 6, 4]),
        pytest.approx([0, 3, 3, 2, 6, 4]),
    ]


def chaser(decision) -> ActionTuple:
    """Forward while the ball is ahead (in the player's own view), else back."""
    return ActionTuple(discrete=np.where(decision.obs[0][:, 2] > 0, FORWARD, BACK).astype(np.int32)[:, None])


def random_policy(seed: int):
    rng = np.random.default_rng(seed)
    return lambda decision: ActionTuple(discrete=rng.integers(0, 3, (len(decision), 1)).astype(np.int32))


@pytest.mark.parametrize("chaser_team", [0, 1])
@pytest.mark.parametrize("players", [1, 2])
def test_a_chaser_beats_random_play_from_either_side(players, chaser_team):
    env = make_env("LineSoccer", seed=0, num_areas=8, players_per_team=players)
    policies = {T0: random_policy(1), T1: random_policy(2)}
    policies[(T0, T1)[chaser_team]] = chaser
    checker = StepChecker(env)
    checker.after_reset()
    rollout(env, lambda name, decision: policies[name](decision), 500, checker=checker)
    results = np.array(env.results) * (1 if chaser_team == 0 else -1)
    assert len(results) > 500 and (results == 1).mean() > 0.95 and (results == -1).mean() < 0.04


def test_random_play_is_even():
    env = make_env("LineSoccer", seed=0, num_areas=8)
    policies = {T0: random_policy(1), T1: random_policy(2)}
    rollout(env, lambda name, decision: policies[name](decision), 2000)
    results = np.array(env.results)
    assert len(results) > 500
    assert 0.2 < (results == 1).mean() < 0.34 and 0.2 < (results == -1).mean() < 0.34


@pytest.mark.parametrize(
    "options, word",
    [
        (dict(players_per_team=3), "players_per_team"),
        (dict(players_per_team=0), "players_per_team"),
        (dict(length=4), "length"),
        (dict(env_parameters={"kick": 0}), "kick"),
        (dict(max_step=1.5), "max_step"),
    ],
)
def test_bad_options_name_the_option(options, word):
    with pytest.raises(ValueError, match=word):
        make_env("LineSoccer", seed=0, **options)


@pytest.mark.slow
def test_ppo_learns_to_beat_random_play():
    import attrs
    from mlagents_envs.base_env import BaseEnv, BehaviorMapping

    from tests.support.learning import first_or_second_seed, train_env
    from trainers.settings import load_run_options

    class AgainstRandom(BaseEnv):
        """Team 0 only; team 1 plays uniformly at random inside ``step``."""

        def __init__(self, env):
            self.env, self.random = env, random_policy(0)

        @property
        def behavior_specs(self):
            return BehaviorMapping({T0: self.env.behavior_specs[T0]})

        def get_steps(self, name):
            return self.env.get_steps(name)

        def set_actions(self, name, action):
            self.env.set_actions(name, action)

        def set_action_for_agent(self, name, agent_id, action):
            self.env.set_action_for_agent(name, agent_id, action)

        def step(self):
            self.env.set_actions(T1, self.random(self.env.get_steps(T1)[0]))
            self.env.step()

        def reset(self):
            self.env.reset()

        def close(self):
            self.env.close()

    settings = load_run_options("config/ppo/LineSoccer.yaml").behavior_settings("LineSoccer")
    settings = attrs.evolve(settings, max_steps=60_000, threaded=False, self_play=None)

    def wins(seed: int) -> tuple[float, float]:
        """The share of wins in the first and in the last 300 games."""
        env = make_env("LineSoccer", seed=seed, num_areas=8)
        train_env(AgainstRandom(env), settings, seed=seed)
        won = np.array(env.results) == 1
        return float(won[:300].mean()), float(won[-300:].mean())

    # random play: about 0.27; measured (seed 1): 0.97 at the end
    first_or_second_seed(wins, lambda w: w[0] < 0.5 and w[1] > 0.9)
