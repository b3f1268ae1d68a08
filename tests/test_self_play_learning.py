"""Self-play learns, ML-Agents' ghost tests re-expressed (test_simple_rl.py: test_simple_ghost,
test_simple_ghost_fails, test_simple_asymm_ghost, test_simple_asymm_ghost_fails) on the
built-in Simple environment with two teams: each team solves its own task, so a team trains
only while it learns, or while it acts with a snapshot of a trained policy. As ML-Agents, a
behavior id is solved when the mean of its last 5 episode returns exceeds 0.9.

The "fails" tests are the controls: the schedule keeps one team on the untrained initial
policy until the end, so one behavior id is solved and another is not.

- symmetric fails: swap_steps (4000) is beyond max_steps (2500), so team 1 never leaves the
  initial snapshot;
- asymmetric fails uses ML-Agents' own numbers (latest ratio 0, save/swap 5000, team_change
  2000, max_steps 3000): the teams alternate every 2000 steps; after Simple's max_steps its
  steps still count, so at 4000 SimpleOpp learns its last 1000 steps while Simple plays a
  random snapshot of its window, which holds only the initial policy (no save before 5000).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from envs.builtin import make_env
from tests.support.learning import PPO_TEST_CONFIG, SAC_TEST_CONFIG, train_env
from trainers.settings import SelfPlaySettings, TrainerSettings

pytestmark = pytest.mark.slow  # trains policies

SUCCESS = 0.9
ACTIONS = {"discrete": {"continuous_size": 0, "discrete_branches": 1}, "continuous": {}}


def final_returns(
    actions: str,
    self_play: SelfPlaySettings,
    max_steps: int,
    *,
    asymmetric: bool = False,
    seed: int = 1,
    base: TrainerSettings = PPO_TEST_CONFIG,
    threaded: bool = False,
) -> dict[str, float]:
    """Train Simple with two teams; the mean of the last 5 returns per behavior id."""
    env = make_env("Simple", seed=seed, num_teams=2, asymmetric=asymmetric, **ACTIONS[actions])
    settings = attrs.evolve(base, self_play=self_play, max_steps=max_steps, threaded=threaded)
    train_env(env, settings, seed=seed)
    return {name: float(np.mean(returns[-5:])) for name, returns in env.episode_returns_by_behavior.items()}


def simple_ghost(actions: str, seed: int = 1) -> dict[str, float]:
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=2000, swap_steps=2000)
    return final_returns(actions, sp, 2500, seed=seed)


def simple_ghost_fails(actions: str, seed: int = 1) -> dict[str, float]:
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=2000, swap_steps=4000)
    return final_returns(actions, sp, 2500, seed=seed)


def simple_asymm_ghost(actions: str, seed: int = 1) -> dict[str, float]:
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=10000, swap_steps=10000, team_change=400)
    return final_returns(actions, sp, 4000, asymmetric=True, seed=seed)


def simple_asymm_ghost_fails(actions: str, seed: int = 1) -> dict[str, float]:
    sp = SelfPlaySettings(play_against_latest_model_ratio=0.0, save_steps=5000, swap_steps=5000, team_change=2000)
    return final_returns(actions, sp, 3000, asymmetric=True, seed=seed)


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_ghost(actions):
    returns = simple_ghost(actions)
    assert list(returns) == ["Simple?team=0", "Simple?team=1"]
    assert all(r > SUCCESS for r in returns.values()), returns


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_ghost_fails(actions):
    returns = simple_ghost_fails(actions)
    assert returns["Simple?team=0"] > SUCCESS > returns["Simple?team=1"], returns


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_asymm_ghost(actions):
    returns = simple_asymm_ghost(actions)
    assert list(returns) == ["Simple?team=0", "SimpleOpp?team=1"]
    assert all(r > SUCCESS for r in returns.values()), returns


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_asymm_ghost_fails(actions):
    returns = simple_asymm_ghost_fails(actions)
    assert returns["SimpleOpp?team=1"] > SUCCESS > returns["Simple?team=0"], returns


@pytest.mark.parametrize(("base", "max_steps"), [(PPO_TEST_CONFIG, 4000), (SAC_TEST_CONFIG, 2000)], ids=["ppo", "sac"])
def test_asymm_ghost_with_threaded_trainers_of_either_algorithm(base, max_steps):
    """The ghost wraps whatever algorithm the trainer runs, in the trainer's own thread."""
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=10000, swap_steps=10000, team_change=400)
    returns = final_returns("discrete", sp, max_steps, asymmetric=True, base=base, threaded=True)
    assert all(r > SUCCESS for r in returns.values()), returns
