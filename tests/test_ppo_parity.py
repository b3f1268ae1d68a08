"""PPO learns as ML-Agents 0.28 does on its own learning tests and configs (issue 10, section 4).

Runs are unthreaded (ML-Agents' default) and seeded, so each is reproducible. The numbers in the
comments are the same runs before the parity changes (one joint ratio per action, summed
continuous entropy, He-normal initialisation with a ReLU gain).

- Hybrid: ML-Agents' ``test_hybrid_ppo`` with 2 continuous + 2 discrete actions on the built-in
  Simple (its ``SimpleEnvironment``), with its settings; passes when the last 5 episode returns
  average above 0.9. ML-Agents itself passed on 2 of 6 seeds.
- 3DBall: ML-Agents' 3DBall.yaml; ML-Agents reached a mean reward of 100 at 90k-114k steps.
- Basic: ML-Agents' Basic.yaml reaches 0.8 (optimum 0.93) within 40k steps.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from envs.builtin import make_env
from tests.support.learning import config, train_env

pytestmark = pytest.mark.slow  # trains policies


def hybrid_score(seed: int, **hyperparameters) -> float:
    env = make_env("Simple", seed=seed, continuous_size=2, discrete_branches=2, step_size=0.8)
    settings = config("Simple")
    settings = attrs.evolve(settings, hyperparameters=attrs.evolve(settings.hyperparameters, **hyperparameters))
    train_env(env, settings, seed=seed)
    return float(np.mean(env.episode_returns[-5:]))


def test_hybrid_2c2d_passes_mlagents_test_on_most_seeds():
    scores = [hybrid_score(seed) for seed in (1337, 1, 2, 3, 4, 5)]
    assert sum(score > 0.9 for score in scores) >= 5, scores  # before: 0.98, 0.88, 0.97, 0.42, 0.27, 0.76


def test_hybrid_2c2d_control_without_learning_fails():
    assert hybrid_score(1337, learning_rate=0.0) < 0.5


def steps_to_reward(seed: int, reward: float, budget: int, **hyperparameters) -> int | None:
    """The first summary step (every 12k) of built-in 3DBall whose mean reward reaches ``reward``."""
    settings = config("3DBall")
    settings = attrs.evolve(settings, hyperparameters=attrs.evolve(settings.hyperparameters, **hyperparameters))
    log = train_env(
        make_env("3DBall", seed=seed),
        settings,
        seed=seed,
        until=lambda curve: curve[-1][1] >= reward or curve[-1][0] >= budget,
    )
    return next((step for step, mean in log.curve if mean >= reward), None)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_3dball_reaches_90_within_mlagents_step_budget(seed):
    steps = steps_to_reward(seed, 90.0, 108_000)
    assert steps is not None and steps <= 108_000, steps  # before: 120k, 144k, 120k


def test_3dball_control_without_learning_stays_low():
    assert steps_to_reward(1, 10.0, 36_000, learning_rate=0.0) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_basic_reaches_08_within_40k_steps(seed):
    log = train_env(
        make_env("Basic", seed=seed),
        config("Basic", max_steps=500_000),
        seed=seed,
        until=lambda curve: curve[-1][0] >= 40_000 or curve[-1][1] >= 0.8,
    )
    assert max(log.rewards) >= 0.8, log.curve
