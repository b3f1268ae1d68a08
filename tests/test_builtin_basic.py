"""Basic: the large goal scores Unity's 0.93, random play far below, goal positions movable."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import random_action, rollout

BASIC = "Basic?team=0"
STAY, LEFT, RIGHT = 0, 1, 2


def always(action):
    return lambda name, decision: ActionTuple(discrete=np.full((len(decision), 1), action, np.int32))


def test_spec_and_start_observation():
    env = make_env("Basic", seed=0)
    spec = env.behavior_specs[BASIC]
    assert [o.shape for o in spec.observation_specs] == [(20,)]
    assert spec.action_spec.discrete_branches == (3,)
    decision = env.get_steps(BASIC)[0]
    assert decision.obs[0].tolist() == [[1.0 if i == 10 else 0.0 for i in range(20)]]
    assert decision.action_mask[0].tolist() == [[False, False, False]]


def test_going_right_scores_093_every_episode():
    env = make_env("Basic", seed=0, num_areas=2)
    returns = rollout(env, always(RIGHT), 70)  # 10 episodes of 7 decisions per agent
    assert returns.returns[BASIC] == pytest.approx([0.93] * 20, abs=1e-6)
    assert returns.interrupted[BASIC] == [False] * 20


def test_going_left_scores_the_small_goal():
    env = make_env("Basic", seed=0)
    returns = rollout(env, always(LEFT), 9)
    assert returns.returns[BASIC] == pytest.approx([0.07] * 3, abs=1e-6)


def test_staying_is_interrupted_after_100_decisions():
    env = make_env("Basic", seed=0)
    returns = rollout(env, always(STAY), 100)
    assert returns.returns[BASIC] == pytest.approx([-1.0], abs=1e-5)
    assert returns.interrupted[BASIC] == [True]


def test_random_actions_score_far_below_the_target():
    env = make_env("Basic", seed=0, num_areas=4)
    rng = np.random.default_rng(1)
    spec = env.behavior_specs[BASIC]
    returns = rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=True), 1000)
    assert len(returns.returns[BASIC]) > 50
    assert returns.mean(BASIC) < 0.4


def test_goal_positions_are_environment_parameters():
    env = make_env("Basic", seed=0, env_parameters={"large_goal_position": 12})
    assert rollout(env, always(RIGHT), 4).returns[BASIC] == pytest.approx([0.98, 0.98], abs=1e-6)
    env.set_env_parameter("small_goal_position", 9.2)  # rounded to cell 9
    env.set_env_parameter("start_position", 5)
    env.reset()
    assert rollout(env, always(RIGHT), 4).returns[BASIC] == pytest.approx([0.06], abs=1e-6)


def test_stats_report_large_goal_rate_and_position():
    env = make_env("Basic", seed=0)
    rollout(env, always(RIGHT), 14)
    rollout(env, always(LEFT), 3)
    stats = env.get_and_reset_stats()
    assert stats["Basic/Large Goal Reached"] == [(1.0, StatsAggregationMethod.AVERAGE)] * 2 + [
        (0.0, StatsAggregationMethod.AVERAGE)
    ]
    assert stats["Basic/Large Goal Position"] == [(17.0, StatsAggregationMethod.MOST_RECENT)]
