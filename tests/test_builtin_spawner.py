"""Spawner: agents appear with fresh ids and vanish with a terminal step, mid-episode."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, random_action, rollout

SPAWNER = "Spawner?team=0"


def to_goal(name, decision):
    obs = decision.obs[0]
    return ActionTuple(continuous=np.clip((obs[:, 1:2] - obs[:, 0:1]) / 0.2, -1.0, 1.0))


def test_agents_come_and_go_with_fresh_ids():
    env = make_env("Spawner", seed=0, num_areas=2)
    checker = StepChecker(env)
    checker.after_reset()
    assert len(env.get_steps(SPAWNER)[0]) == 8  # half of the 16 slots at reset
    counts, spawned, vanished = set(), 0, 0
    alive = set(env.get_steps(SPAWNER)[0].agent_id.tolist())
    for _ in range(300):
        decision, _ = env.get_steps(SPAWNER)
        env.set_actions(SPAWNER, to_goal(SPAWNER, decision))
        env.step()
        checker.after_step()
        decision, terminal = env.get_steps(SPAWNER)
        restarted = int(np.count_nonzero(terminal.reward > 0.5) + np.count_nonzero(terminal.interrupted))
        gone = [r for r, i in zip(terminal.reward.tolist(), terminal.interrupted.tolist()) if r < 0.5 and not i]
        vanished += len(gone)
        alive -= set(terminal.agent_id.tolist())
        new = set(decision.agent_id.tolist()) - alive
        spawned += len(new) - restarted  # new ids beyond the restarts of finished episodes
        alive |= new
        counts.add(len(decision))
        assert gone == pytest.approx([-0.01] * len(gone))  # a vanished agent keeps its step reward
    assert vanished > 20 and spawned > 20
    assert len(counts) > 4


def test_without_spawning_or_vanishing_the_population_is_fixed():
    env = make_env("Spawner", seed=1, env_parameters={"spawn_probability": 0.0, "vanish_probability": 0.0})
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[SPAWNER]
    for _ in range(100):
        decision = env.get_steps(SPAWNER)[0]
        assert len(decision) == 4
        env.set_actions(SPAWNER, random_action(spec, decision, rng, respect_masks=True))
        env.step()
    assert "Spawner/Vanished" not in env.get_and_reset_stats()


def test_every_agent_vanishing_leaves_only_non_interrupted_terminals_and_silence_is_skipped():
    env = make_env("Spawner", seed=2, env_parameters={"spawn_probability": 0.01, "vanish_probability": 1.0})
    checker = StepChecker(env)
    checker.after_reset()
    first = env.get_steps(SPAWNER)[0].agent_id
    env.step()
    checker.after_step()
    decision, terminal = env.get_steps(SPAWNER)
    assert sorted(terminal.agent_id.tolist()) == sorted(first.tolist())
    assert terminal.interrupted.tolist() == [False] * 4
    for _ in range(10):  # each step: a spawned agent decides, then vanishes the next tick
        env.step()
        checker.after_step()
    stats = env.get_and_reset_stats()
    assert stats["Spawner/Vanished"][0] == (4.0, StatsAggregationMethod.SUM)
    assert stats["Spawner/Active Agents"][-1][1] is StatsAggregationMethod.MOST_RECENT
    assert len(stats["Spawner/Active Agents"]) == 1


def test_scripted_policy_scores_high_and_random_play_low():
    quiet = {"vanish_probability": 0.0}
    env = make_env("Spawner", seed=3, env_parameters=quiet)
    good = rollout(env, to_goal, 300)
    assert good.mean(SPAWNER) > 0.85
    env = make_env("Spawner", seed=3, env_parameters=quiet)
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[SPAWNER]
    bad = rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=True), 300)
    assert bad.mean(SPAWNER) < 0.5
