"""Collect: 1-6 items as a variable-length observation, absent rows zero, nearest-first scores ~0.96."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple, DecisionSteps, DimensionProperty, ObservationType

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, random_action, rollout
from envs.builtin.collect import COLLECT_RADIUS, SPEED

COLLECT = "Collect?team=0"


def go_to_nearest(name: str, decision: DecisionSteps) -> ActionTuple:
    """Straight for the nearest present item (a present row has its last feature 1)."""
    items = decision.obs[1]
    distance = np.where(items[:, :, 3] > 0, items[:, :, 2], np.inf)
    target = items[np.arange(len(decision)), distance.argmin(axis=1), :2]
    return ActionTuple(continuous=np.clip(target / SPEED, -1.0, 1.0).astype(np.float32))


def stat(env, key: str) -> list[float]:
    return [value for value, _ in env.get_and_reset_stats()[key]]


def test_spec_has_a_vector_then_a_buffer_sensor_observation():
    env = make_env("Collect", seed=0)
    spec = env.behavior_specs[COLLECT]
    assert [o.shape for o in spec.observation_specs] == [(4,), (6, 4)]
    assert spec.observation_specs[1].dimension_property == (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE)
    assert spec.observation_specs[0].dimension_property == (DimensionProperty.NONE,)
    assert all(o.observation_type == ObservationType.DEFAULT for o in spec.observation_specs)
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_branches == ()


def test_item_count_varies_from_1_to_6_present_rows_first_absent_rows_zero():
    env = make_env("Collect", seed=1, num_areas=16)
    counts: set[int] = set()
    for _ in range(40):  # step size 1 at random: several episode starts per agent
        decision, terminal = env.get_steps(COLLECT)
        for items in (decision.obs[1], terminal.obs[1]):
            present = items.any(axis=2)
            n_present = present.sum(axis=1)
            assert (present == (np.arange(6)[None, :] < n_present[:, None])).all()  # a prefix
            assert (items[present][:, 3] == 1.0).all()
            np.testing.assert_allclose(items[present][:, 2], np.linalg.norm(items[present][:, :2], axis=1), rtol=1e-5)
            counts.update(n_present.tolist())
        env.set_actions(COLLECT, go_to_nearest(COLLECT, decision))
        env.step()
    assert counts == {1, 2, 3, 4, 5, 6}
    item_counts = stat(env, "Collect/Item Count")
    assert set(item_counts) == {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}


def test_rows_hold_item_positions_relative_to_the_agent():
    env = make_env("Collect", seed=2)
    decision = env.get_steps(COLLECT)[0]
    start, items = decision.obs[0][0, :2].copy(), decision.obs[1][0].copy()
    assert (np.abs(decision.obs[0][0, 2:]) == 0).all()  # no velocity yet
    assert (items[items[:, 3] > 0, 2] >= 2 * COLLECT_RADIUS).all()  # nothing within reach at the start
    action = np.array([[0.5, -0.5]], np.float32)  # a move of 0.14: no item comes within 0.15
    env.set_actions(COLLECT, ActionTuple(continuous=action))
    env.step()
    decision, terminal = env.get_steps(COLLECT)
    assert len(terminal) == 0
    moved = decision.obs[0][0, :2] - start
    assert np.abs(moved).max() > 0
    np.testing.assert_allclose(decision.obs[0][0, 2:], moved, atol=1e-6)
    present = items[:, 3] > 0
    np.testing.assert_allclose(decision.obs[1][0, present, :2], items[present, :2] - moved, atol=1e-5)
    assert not decision.obs[1][0, ~present].any()


def test_going_to_the_nearest_item_always_collects_it_quickly():
    env = make_env("Collect", seed=3, num_areas=8)
    checker = StepChecker(env)
    checker.after_reset()
    returns = rollout(env, go_to_nearest, 300, checker=checker)
    assert checker.interrupted == 0
    assert len(returns.returns[COLLECT]) > 300
    assert np.mean(returns.returns[COLLECT]) > 0.94
    stats = env.get_and_reset_stats()
    assert {v for v, _ in stats["Collect/Collected"]} == {1.0}
    # on the way (clipped per axis, not quite straight) it may pass within reach of another item
    assert np.mean([v for v, _ in stats["Collect/Nearest Collected"]]) > 0.9


def test_a_policy_blind_to_the_items_does_far_worse():
    env = make_env("Collect", seed=4, num_areas=8)
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[COLLECT]
    returns = rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=False), 300)
    assert np.mean(returns.returns[COLLECT]) < 0.3
    assert np.mean(stat(env, "Collect/Collected")) < 0.7


def test_no_collection_is_interrupted_at_max_step():
    env = make_env("Collect", seed=5, num_areas=2, env_parameters={"max_step": 10})
    returns = rollout(env, lambda n, d: ActionTuple(continuous=np.zeros((len(d), 2), np.float32)), 20)
    assert returns.returns[COLLECT] == pytest.approx([-0.1] * 4, abs=1e-5)
    assert returns.interrupted[COLLECT] == [True] * 4


def test_item_counts_from_environment_parameters():
    env = make_env("Collect", seed=6, num_areas=8, env_parameters={"max_items": 3, "min_items": 3})
    assert [o.shape for o in env.behavior_specs[COLLECT].observation_specs] == [(4,), (3, 4)]
    assert (env.get_steps(COLLECT)[0].obs[1].any(axis=2).sum(axis=1) == 3).all()
    env = make_env("Collect", seed=6, env_parameters={"max_items": 0, "min_items": 9})  # clamped
    assert env.behavior_specs[COLLECT].observation_specs[1].shape == (1, 4)
    assert env.get_steps(COLLECT)[0].obs[1].any(axis=2).sum() == 1
