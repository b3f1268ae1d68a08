"""3DBall: solvable to Unity's target of 100, random play far below, parameters honoured."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import random_action, rollout

BALL = "3DBall?team=0"


def pd_controller(name, decision):
    """Tilt so the ball accelerates back to the centre: a = -(x + 1.5 v), from the observation."""
    obs = decision.obs[0]
    tilt = 2.0 * np.arcsin(obs[:, :2])  # rotation z, x from quaternion components
    want_z = np.arcsin(np.clip((obs[:, 2] + 1.5 * obs[:, 5]) / 7.0, -0.4, 0.4))
    want_x = np.arcsin(np.clip(-(obs[:, 4] + 1.5 * obs[:, 7]) / 7.0, -0.4, 0.4))
    action = np.stack([want_z - tilt[:, 0], want_x - tilt[:, 1]], axis=1) / np.radians(10.0)
    return ActionTuple(continuous=np.clip(action, -1.0, 1.0).astype(np.float32))


def constant(action):
    return lambda name, decision: ActionTuple(continuous=np.tile(np.asarray(action, np.float32), (len(decision), 1)))


def test_spec_is_unity_3dball():
    env = make_env("3DBall", seed=0)
    spec = env.behavior_specs[BALL]
    assert [o.shape for o in spec.observation_specs] == [(8,)]
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_branches == ()
    assert len(env.get_steps(BALL)[0]) == 12


def test_pd_controller_keeps_every_ball_up_for_the_full_episode():
    env = make_env("3DBall", seed=1)
    returns = rollout(env, pd_controller, 1000)
    assert returns.returns[BALL] == pytest.approx([100.0] * 12, abs=1e-3)
    assert returns.interrupted[BALL] == [True] * 12


def test_interrupted_after_1000_decisions_with_the_last_reward():
    env = make_env("3DBall", seed=2)
    for _ in range(999):
        env.set_actions(BALL, pd_controller(BALL, env.get_steps(BALL)[0]))
        env.step()
        assert len(env.get_steps(BALL)[1]) == 0
    old_ids = env.get_steps(BALL)[0].agent_id
    env.set_actions(BALL, pd_controller(BALL, env.get_steps(BALL)[0]))
    env.step()
    decision, terminal = env.get_steps(BALL)
    assert sorted(terminal.agent_id.tolist()) == sorted(old_ids.tolist())
    assert terminal.interrupted.tolist() == [True] * 12
    assert terminal.reward.tolist() == pytest.approx([0.1] * 12)
    assert not set(decision.agent_id.tolist()) & set(old_ids.tolist())
    assert decision.reward.tolist() == [0.0] * 12


def test_random_actions_score_far_below_the_target():
    env = make_env("3DBall", seed=3)
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[BALL]
    returns = rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=True), 400)
    assert len(returns.returns[BALL]) > 100
    assert returns.mean(BALL) < 5.0
    assert not any(returns.interrupted[BALL])


def test_a_drop_costs_minus_one_and_ends_the_episode():
    env = make_env("3DBall", seed=4)
    returns = rollout(env, constant([1.0, 0.0]), 40)  # tilt fully one way: every ball rolls off
    rewards = returns.returns[BALL]
    assert len(rewards) >= 12 and returns.interrupted[BALL] == [False] * len(rewards)
    for episode_return in rewards:  # k decisions at +0.1, then the drop at -1
        k = round((episode_return + 1.0) / 0.1)
        assert k >= 0 and episode_return == pytest.approx(0.1 * k - 1.0, abs=1e-5)
    terminal_rewards = []
    env = make_env("3DBall", seed=4)
    policy = constant([1.0, 0.0])
    while not terminal_rewards:
        env.set_actions(BALL, policy(BALL, env.get_steps(BALL)[0]))
        env.step()
        terminal_rewards = env.get_steps(BALL)[1].reward.tolist()
    assert terminal_rewards == [-1.0] * len(terminal_rewards)


def test_zero_gravity_leaves_the_ball_where_it_is():
    env = make_env("3DBall", seed=5, env_parameters={"gravity": 0.0})
    start = env.get_steps(BALL)[0].obs[0]
    rollout(env, constant([0.7, -0.3]), 50)
    obs = env.get_steps(BALL)[0].obs[0]
    np.testing.assert_allclose(obs[:, [2, 4]], start[:, [2, 4]], atol=1e-6)  # position
    np.testing.assert_allclose(obs[:, 5:8], 0.0, atol=1e-6)  # velocity
    stats = env.get_and_reset_stats()
    assert "3DBall/Gravity" not in stats  # no episode ended


def test_stronger_gravity_drops_balls_sooner_and_the_stat_follows():
    def drop_steps(gravity):
        env = make_env("3DBall", seed=6)
        env.set_env_parameter("gravity", gravity)
        env.reset()  # parameters apply from the next episode
        returns = rollout(env, constant([0.5, 0.5]), 60)
        return np.mean(returns.returns[BALL]), env.get_and_reset_stats()["3DBall/Gravity"]

    weak, weak_stat = drop_steps(4.0)
    strong, strong_stat = drop_steps(30.0)
    assert strong < weak
    assert weak_stat == [(4.0, StatsAggregationMethod.MOST_RECENT)]
    assert strong_stat == [(30.0, StatsAggregationMethod.MOST_RECENT)]


def test_scale_raises_the_ball_and_light_balls_feel_more_drag():
    flat = constant([0.0, 0.0])
    small = make_env("3DBall", seed=7)
    big = make_env("3DBall", seed=7, env_parameters={"scale": 3.0})
    difference = big.get_steps(BALL)[0].obs[0][:, 3] - small.get_steps(BALL)[0].obs[0][:, 3]
    np.testing.assert_allclose(difference, 1.0, atol=1e-6)  # half of the diameter change

    def speed(mass):
        env = make_env("3DBall", seed=7, env_parameters={"mass": mass})
        rollout(env, flat, 5)
        return np.abs(env.get_steps(BALL)[0].obs[0][:, [5, 7]]).mean()

    assert speed(0.05) < 0.9 * speed(1.0)
