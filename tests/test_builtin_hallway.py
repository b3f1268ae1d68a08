"""Hallway: the cue shows only at the start, remembering it scores 0.92, memoryless play 50%."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple, DecisionSteps
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, random_action, rollout
from envs.builtin.hallway import BACK, FORWARD, N_MOVES, STAY

HALLWAY = "Hallway?team=0"
CUES, LENGTH = 2, 5


def cue_of(obs: np.ndarray, num_cues: int = CUES) -> np.ndarray:
    """[n] the cue shown in each row, -1 where hidden."""
    cue = obs[:, :num_cues]
    return np.where(cue.any(axis=1), cue.argmax(axis=1), -1)


def cell_of(obs: np.ndarray, num_cues: int = CUES) -> np.ndarray:
    return obs[:, num_cues:].argmax(axis=1)


def remembering_policy(num_cues: int = CUES):
    """Walks forward and picks the cue it saw at its episode's start (a memory keyed by agent id)."""
    memory: dict[int, int] = {}

    def policy(name: str, decision: DecisionSteps) -> ActionTuple:
        obs = decision.obs[0]
        cue, cell = cue_of(obs, num_cues), cell_of(obs, num_cues)
        length = obs.shape[1] - num_cues
        actions = np.full((len(decision), 1), FORWARD, np.int32)
        for row, agent_id in enumerate(decision.agent_id.tolist()):
            if cue[row] >= 0:
                memory.setdefault(agent_id, int(cue[row]))
            if cell[row] == length - 1:
                actions[row, 0] = N_MOVES + memory[agent_id]
        return ActionTuple(discrete=actions)

    return policy


def memoryless_policy(pick, rng: np.random.Generator | None = None):
    """Acts on the current observation only: forward, and at the end ``pick`` (an int, or None for
    a uniformly random goal)."""

    def policy(name: str, decision: DecisionSteps) -> ActionTuple:
        obs = decision.obs[0]
        at_end = cell_of(obs) == LENGTH - 1
        goal = rng.integers(CUES, size=len(decision)) if pick is None else np.full(len(decision), pick)
        return ActionTuple(discrete=np.where(at_end, N_MOVES + goal, FORWARD).astype(np.int32)[:, None])

    return policy


def success_rate(env) -> float:
    stats = env.get_and_reset_stats()["Hallway/Success Rate"]
    assert {method for _, method in stats} == {StatsAggregationMethod.AVERAGE}
    return float(np.mean([value for value, _ in stats]))


def test_spec_start_observation_and_masks():
    env = make_env("Hallway", seed=0, num_areas=3)
    spec = env.behavior_specs[HALLWAY]
    assert [o.shape for o in spec.observation_specs] == [(CUES + LENGTH,)]
    assert spec.action_spec.discrete_branches == (N_MOVES + CUES,)
    decision = env.get_steps(HALLWAY)[0]
    assert (cue_of(decision.obs[0]) >= 0).all() and (cell_of(decision.obs[0]) == 0).all()
    assert decision.action_mask[0].tolist() == [[False, False, False, True, True]] * 3
    for _ in range(LENGTH - 1):
        env.set_actions(HALLWAY, ActionTuple(discrete=np.full((3, 1), FORWARD, np.int32)))
        env.step()
    decision = env.get_steps(HALLWAY)[0]
    assert (cell_of(decision.obs[0]) == LENGTH - 1).all()
    assert decision.action_mask[0].tolist() == [[False] * 5] * 3  # picks open on the last cell only


@pytest.mark.parametrize("cue_steps", [1, 2, 3])
def test_the_cue_is_visible_only_for_the_first_observations(cue_steps):
    env = make_env("Hallway", seed=1, num_areas=16, env_parameters={"cue_steps": cue_steps})
    first = env.get_steps(HALLWAY)[0].obs[0]
    cues = cue_of(first)
    assert set(cues.tolist()) == {0, 1}  # both cues drawn
    for step in range(1, 10):  # stay and wander: the cue never returns
        action = [STAY, FORWARD, BACK][step % 3]
        env.set_actions(HALLWAY, ActionTuple(discrete=np.full((16, 1), action, np.int32)))
        env.step()
        shown = cue_of(env.get_steps(HALLWAY)[0].obs[0])
        assert shown.tolist() == (cues.tolist() if step < cue_steps else [-1] * 16)


def test_remembering_the_cue_succeeds_every_time_and_scores_092():
    env = make_env("Hallway", seed=2, num_areas=4)
    checker = StepChecker(env)
    checker.after_reset()
    returns = rollout(env, remembering_policy(), 5 * 50, checker=checker)  # 50 episodes per agent
    assert returns.returns[HALLWAY] == pytest.approx([1.0 - 4 / 50] * 200, abs=1e-5)
    assert success_rate(env) == 1.0


@pytest.mark.parametrize("pick", [0, 1, None])
def test_memoryless_policies_are_stuck_at_chance(pick):
    env = make_env("Hallway", seed=3, num_areas=8)
    rng = np.random.default_rng(0)
    returns = rollout(env, memoryless_policy(pick, rng), 5 * 100)  # 800 episodes
    rate = success_rate(env)
    assert 0.44 < rate < 0.56  # 50% +- 3.4 standard deviations
    best = 0.5 * 1.0 + 0.5 * -0.1 - 4 / 50  # the documented memoryless optimum, 0.37
    assert np.mean(returns.returns[HALLWAY]) == pytest.approx(best, abs=0.035)
    assert set(np.round(returns.returns[HALLWAY], 5)) == {0.92, -0.18}


def test_a_wrong_pick_ends_with_minus_01_and_no_pick_is_interrupted_at_minus_1():
    env = make_env("Hallway", seed=4, num_areas=2)
    cues = cue_of(env.get_steps(HALLWAY)[0].obs[0])
    for _ in range(LENGTH - 1):
        env.set_actions(HALLWAY, ActionTuple(discrete=np.full((2, 1), FORWARD, np.int32)))
        env.step()
    env.set_actions(HALLWAY, ActionTuple(discrete=(N_MOVES + 1 - cues)[:, None].astype(np.int32)))
    env.step()
    decision, terminal = env.get_steps(HALLWAY)
    assert terminal.reward.tolist() == pytest.approx([-0.1, -0.1])
    assert terminal.interrupted.tolist() == [False, False]
    assert (cue_of(terminal.obs[0]) == -1).all()  # hidden on the terminal observation too
    assert (cue_of(decision.obs[0]) >= 0).all()  # the next episodes show theirs
    env = make_env("Hallway", seed=4, env_parameters={"max_step": 20})
    returns = rollout(env, lambda n, d: ActionTuple(discrete=np.full((1, 1), STAY, np.int32)), 40)
    assert returns.returns[HALLWAY] == pytest.approx([-1.0, -1.0], abs=1e-5)
    assert returns.interrupted[HALLWAY] == [True, True]
    stats = env.get_and_reset_stats()
    assert [v for v, _ in stats["Hallway/Goal Picked"]] == [0.0, 0.0]


def test_masked_picks_away_from_the_end_change_nothing():
    a, b = make_env("Hallway", seed=5), make_env("Hallway", seed=5)
    a.set_actions(HALLWAY, ActionTuple(discrete=np.array([[N_MOVES]], np.int32)))  # masked: acts as stay
    b.set_actions(HALLWAY, ActionTuple(discrete=np.array([[STAY]], np.int32)))
    a.step()
    b.step()
    np.testing.assert_array_equal(a.get_steps(HALLWAY)[0].obs[0], b.get_steps(HALLWAY)[0].obs[0])
    assert len(a.get_steps(HALLWAY)[1]) == 0


def test_size_and_cue_count_from_environment_parameters():
    env = make_env("Hallway", seed=6, num_areas=4, env_parameters={"hallway_length": 8, "num_cues": 3})
    spec = env.behavior_specs[HALLWAY]
    assert [o.shape for o in spec.observation_specs] == [(11,)] and spec.action_spec.discrete_branches == (6,)
    returns = rollout(env, remembering_policy(num_cues=3), 8 * 30)
    assert returns.returns[HALLWAY] == pytest.approx([1.0 - 7 / 50] * 120, abs=1e-5)
    env = make_env("Hallway", seed=6, env_parameters={"hallway_length": 1, "num_cues": 99, "cue_steps": 50})
    assert [o.shape for o in env.behavior_specs[HALLWAY].observation_specs] == [(8 + 2,)]  # clamped
    env.set_actions(HALLWAY, ActionTuple(discrete=np.array([[STAY]], np.int32)))
    env.step()
    assert cue_of(env.get_steps(HALLWAY)[0].obs[0], 8).tolist() == [-1]  # at most length - 1 steps


def test_random_play_keeps_the_contract_with_masks():
    env = make_env("Hallway", seed=7, num_areas=4)
    checker = StepChecker(env)
    checker.after_reset()
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[HALLWAY]
    rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=True), 400, checker=checker)
    assert checker.terminals > 0
