"""POCA learns what ML-Agents' own POCA learning tests ask, on several seeds, with controls
that must fail: ``test_simple_rl.py``'s test_simple_poca, test_visual_poca and
test_recurrent_poca on the built-in
Simple with groups (``num_agents``: ML-Agents' ``MultiAgentEnvironment``: each member solves
its own task; a member that finishes early leaves the group, the last one's success is the
group reward), with ML-Agents' POCA test configuration (``dummy_config._POCA_CONFIG``: the PPO
test configuration with trainer_type poca) and each test's changes.

A seed passes ML-Agents' check when the mean of its last 5 finishing rewards exceeds 0.9; a case
passes on its first seed, else its second (``first_or_second_seed``: a seed's run differs between
CPUs' kernels). Runs are unthreaded (ML-Agents' default) and seeded, so each is reproducible on
one machine; ``benchmarks/poca_seeds.py`` has the seed tables.
"""

from __future__ import annotations

import attrs
import pytest

from envs.builtin import make_env
from tests.support.learning import PPO_TEST_CONFIG, first_or_second_seed, recurrent_ppo_config, simple_score, train_env
from trainers.settings import POCASettings, TrainerSettings

pytestmark = pytest.mark.slow  # trains policies


def poca_test_config(**hyperparameters) -> TrainerSettings:
    """ML-Agents' POCA test configuration with a test's changes (hyperparameters by keyword)."""
    ppo = PPO_TEST_CONFIG.hyperparameters
    base = POCASettings(
        learning_rate=ppo.learning_rate,
        learning_rate_schedule=ppo.learning_rate_schedule,
        batch_size=ppo.batch_size,
        buffer_size=ppo.buffer_size,
    )
    return attrs.evolve(PPO_TEST_CONFIG, trainer_type="poca", hyperparameters=attrs.evolve(base, **hyperparameters))


def learns(settings: TrainerSettings, **env_options) -> None:
    """Above 0.9 on the first seed, else the second (a run stops once that has held)."""
    first_or_second_seed(lambda seed: simple_score(settings, seed, threshold=0.9, **env_options), lambda s: s > 0.9)


@pytest.mark.parametrize(
    ("action_sizes", "num_agents"),
    [((0, 1), 2), ((1, 0), 2), ((0, 1), 4)],
    ids=["discrete-2", "continuous-2", "discrete-4"],
)
def test_simple_poca(action_sizes, num_agents):
    continuous, discrete = action_sizes
    options = {"continuous_size": continuous, "discrete_branches": discrete, "num_agents": num_agents}
    learns(poca_test_config(), **options)


@pytest.mark.parametrize("num_visual", [1, 2])
def test_visual_poca(num_visual):
    options = {"continuous_size": 0, "discrete_branches": 1, "num_agents": 2, "num_visual": num_visual, "num_vector": 0}
    learns(poca_test_config(learning_rate=3e-4), **options)


def test_simple_poca_control_without_learning_fails():
    options = {"continuous_size": 0, "discrete_branches": 1, "num_agents": 2}
    assert simple_score(poca_test_config(learning_rate=0.0), 1, **options) < 0.5


def recurrent_poca_config(memory: bool = True) -> TrainerSettings:
    """ML-Agents' test_recurrent_poca: its POCA test config, memory 16 (sequences of 64), lr 1e-3,
    batch 64, buffer 128, 6000 steps."""
    ppo = recurrent_ppo_config(memory)
    hp = ppo.hyperparameters
    poca = POCASettings(
        learning_rate=hp.learning_rate,
        learning_rate_schedule=hp.learning_rate_schedule,
        batch_size=hp.batch_size,
        buffer_size=hp.buffer_size,
    )
    return attrs.evolve(ppo, trainer_type="poca", hyperparameters=poca)


def test_recurrent_poca_remembers_on_the_memory_task():
    """ML-Agents' test_recurrent_poca without groups: its MemoryEnvironment (the goal shows
    only at the start) needs the LSTM; the same POCA without memory cannot pass."""
    options = {"continuous_size": 0, "discrete_branches": 1, "memory": True}
    learns(recurrent_poca_config(), **options)
    assert simple_score(recurrent_poca_config(memory=False), 1, **options) < 0.5


def test_recurrent_poca_trains_groups():
    """ML-Agents' test_recurrent_poca with groups of 2 (500 steps: it checks that the recurrent
    critic runs over groups; the task needs no memory)."""
    env = make_env("Simple", seed=1, continuous_size=0, discrete_branches=1, num_agents=2)
    log = train_env(env, attrs.evolve(recurrent_poca_config(), max_steps=500), seed=1)
    assert [step for step, _ in log.curve] == [500]  # trained to max_steps, episodes finished
    assert len(env.episode_returns) >= 10
