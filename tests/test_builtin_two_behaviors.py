"""TwoBehaviors: a behavior that arrives late, a decision period of 2, silent ticks skipped."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.exception import UnityActionException

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, random_action, rollout

WALKER, REACHER = "LineWalker?team=0", "Reacher?team=0"


def walk_to_goal(decision):
    obs = decision.obs[0]
    pos, goal = obs[:, :10].argmax(axis=1), obs[:, 10:].argmax(axis=1)
    action = np.where(goal > pos, 2, np.where(goal < pos, 1, 0))
    return ActionTuple(discrete=action[:, None].astype(np.int32))


def reach_target(decision):
    return ActionTuple(continuous=np.clip(decision.obs[0][:, 2:4] / 0.1, -1.0, 1.0))


def scripted(name, decision):
    return walk_to_goal(decision) if name == WALKER else reach_target(decision)


def stay(name, decision):
    spec_sizes = {WALKER: (0, 1), REACHER: (2, 0)}[name]
    return ActionTuple(
        continuous=np.zeros((len(decision), spec_sizes[0]), np.float32),
        discrete=np.zeros((len(decision), spec_sizes[1]), np.int32),
    )


def act_and_step(env, policy):
    for name in list(env.behavior_specs):
        env.set_actions(name, policy(name, env.get_steps(name)[0]))
    env.step()


def test_second_behavior_arrives_with_its_first_agents_and_stays_known():
    env = make_env("TwoBehaviors", seed=0)
    assert list(env.behavior_specs) == [WALKER]
    with pytest.raises(UnityActionException, match="Reacher"):
        env.get_steps(REACHER)
    act_and_step(env, stay)  # tick 1 is silent (walkers decide on even ticks): tick 2 returned
    assert list(env.behavior_specs) == [WALKER]
    assert len(env.get_steps(WALKER)[0]) == 2
    act_and_step(env, stay)  # tick 3: the reachers appear and decide, the walkers do not
    assert list(env.behavior_specs) == [WALKER, REACHER]
    spec = env.behavior_specs[REACHER]
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_branches == ()
    assert len(env.get_steps(REACHER)[0]) == 2
    assert len(env.get_steps(WALKER)[0]) == 0
    env.reset()
    assert list(env.behavior_specs) == [WALKER, REACHER]
    assert len(env.get_steps(REACHER)[0]) == 0 and len(env.get_steps(REACHER)[1]) == 0


def test_walkers_decide_every_other_step_with_rewards_accumulated():
    env = make_env("TwoBehaviors", seed=1)
    act_and_step(env, stay)
    act_and_step(env, stay)
    present = []
    for _ in range(20):
        act_and_step(env, stay)  # staying never reaches the goal before 60 ticks
        decision = env.get_steps(WALKER)[0]
        present.append(len(decision) > 0)
        if len(decision):
            assert decision.reward.tolist() == pytest.approx([-0.02, -0.02])
        assert len(env.get_steps(REACHER)[0]) == 2  # reachers decide every step
    assert present == [True, False] * 10


def test_a_walker_ending_between_decisions_decides_again_at_the_next_period():
    env = make_env("TwoBehaviors", seed=2)
    checker = StepChecker(env)
    checker.after_reset()
    between = 0
    for _ in range(300):
        act_and_step(env, scripted)
        checker.after_step()
        decision, terminal = env.get_steps(WALKER)
        if len(terminal) and not len(decision):
            between += 1
            ended = set(terminal.agent_id.tolist())
            act_and_step(env, scripted)
            checker.after_step()
            decision = env.get_steps(WALKER)[0]
            assert len(decision) == 2 and not ended & set(decision.agent_id.tolist())
    assert between > 5


def test_scripted_policies_score_high_and_random_play_low():
    env = make_env("TwoBehaviors", seed=3, num_areas=2)
    good = rollout(env, scripted, 400)
    assert good.mean(WALKER) > 0.9 and good.mean(REACHER) > 0.8
    assert not any(good.interrupted[WALKER] + good.interrupted[REACHER])
    env = make_env("TwoBehaviors", seed=3, num_areas=2)
    rng = np.random.default_rng(0)
    bad = rollout(env, lambda n, d: random_action(env.behavior_specs[n], d, rng, respect_masks=True), 400)
    assert bad.mean(WALKER) < 0.6 and bad.mean(REACHER) < 0.2


def test_masks_block_the_ends_of_the_line():
    env = make_env("TwoBehaviors", seed=4, num_areas=5)
    for _ in range(40):
        decision = env.get_steps(WALKER)[0]
        if len(decision):
            pos = decision.obs[0][:, :10].argmax(axis=1)
            assert decision.action_mask[0].tolist() == [[False, p == 0, p == 9] for p in pos]
        act_and_step(env, scripted)


def test_reacher_radius_parameter_and_stats():
    def run(radius):
        env = make_env("TwoBehaviors", seed=5, env_parameters={"reacher_radius": radius})
        returns = rollout(env, scripted, 200)
        return returns.mean(REACHER), env.get_and_reset_stats()

    near, near_stats = run(0.15)
    wide, wide_stats = run(0.8)
    assert wide > near  # a wider target is reached sooner
    assert wide_stats["Reacher/Radius"][0][0] == 0.8
    assert max(v for v, _ in wide_stats["Reacher/Final Distance"]) < 0.8
    assert {v for v, _ in near_stats["LineWalker/Goal Reached"]} == {1.0}
