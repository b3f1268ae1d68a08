"""PPO really learns: built-in tasks, through processors, queues and trainer threads, to a
reward that means "solved", with controls that must not get there. Each task passes on its first
seed, else its second (``first_or_second_seed``: seeds' runs differ between CPUs)."""

from __future__ import annotations

import attrs
import pytest

from tests.support.learning import config, first_or_second_seed, train_builtin

pytestmark = pytest.mark.slow  # trains policies


def train(env_name: str, settings, *, seed: int = 1, num_areas: int = 1) -> list[float]:
    """Train the built-in env's behavior with threaded trainers; the summaries' mean rewards."""
    return train_builtin(env_name, attrs.evolve(settings, threaded=True), seed=seed, num_areas=num_areas).rewards


def test_ppo_solves_basic_discrete():
    settings = config("Basic", max_steps=30_000, summary_freq=2_000)
    # optimum 0.93; random play stays below 0.4
    first_or_second_seed(lambda seed: train("Basic", settings, seed=seed, num_areas=8), lambda r: r[-1] >= 0.9)


def test_basic_control_without_learning_stays_unsolved():
    frozen = config("Basic", max_steps=4_000, summary_freq=2_000)
    frozen = attrs.evolve(frozen, hyperparameters=attrs.evolve(frozen.hyperparameters, learning_rate=0.0))
    rewards = train("Basic", frozen, num_areas=8)
    assert max(rewards) < 0.6, rewards


def test_ppo_balances_3dball_continuous():
    settings = config("3DBall", max_steps=72_000, summary_freq=12_000)
    settings = attrs.evolve(settings, hyperparameters=attrs.evolve(settings.hyperparameters, buffer_size=4_000))
    # random play scores about 0.8; the optimum is 100
    first_or_second_seed(lambda seed: train("3DBall", settings, seed=seed), lambda r: r[-1] >= 10.0)
