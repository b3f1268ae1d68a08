"""SAC learns what ML-Agents' own SAC learning tests ask, on several seeds, with controls that must
fail: ``test_simple_rl.py`` (test_simple_sac, test_2d_sac, test_visual_sac,
test_visual_advanced_sac) and ``test_hybrid.py`` (test_hybrid_sac) on the built-in Simple (their
``SimpleEnvironment``) with their configuration (``dummy_config._SAC_CONFIG`` and each test's
changes), and ML-Agents' example configs on built-in 3DBall and Basic.

A seed passes ML-Agents' check when the mean of its last 5 episode returns exceeds the
threshold (0.9 unless the test says otherwise); a run stops early once that has held for 500
steps (``HOLD_STEPS``); a case passes on its first seed, else its second
(``first_or_second_seed``: a seed's run differs between CPUs' kernels). Runs are unthreaded
(ML-Agents' default) and seeded, so each is reproducible on one machine;
``benchmarks/learning_seeds.py`` has the longer seed tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from envs.builtin import make_env
from tests.support.learning import first_or_second_seed, sac_test_config, simple_score, train_env
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import EncoderType, TargetCritic, TrainerSettings, load_run_options

pytestmark = pytest.mark.slow  # trains policies


def learns(settings: TrainerSettings, threshold: float = 0.9, seeds: Sequence[int] = (1, 2), **env_options) -> None:
    """Above ``threshold`` on the first seed, else the second (a run stops once that has held)."""
    first_or_second_seed(
        lambda seed: simple_score(settings, seed, threshold=threshold, **env_options), lambda s: s > threshold, seeds
    )


@pytest.mark.parametrize("action_sizes", [(0, 1), (1, 0)], ids=["discrete", "continuous"])
def test_simple_sac(action_sizes):
    continuous, discrete = action_sizes
    learns(sac_test_config(), continuous_size=continuous, discrete_branches=discrete)


def test_simple_sac_control_without_learning_fails():
    assert simple_score(sac_test_config(learning_rate=0.0), 1, continuous_size=1) < 0.5


@pytest.mark.parametrize("action_sizes", [(0, 2), (2, 0)], ids=["discrete", "continuous"])
def test_2d_sac(action_sizes):
    continuous, discrete = action_sizes
    config = sac_test_config(buffer_init_steps=2000, max_steps=3000)
    learns(config, 0.8, continuous_size=continuous, discrete_branches=discrete, step_size=0.8)


@pytest.mark.parametrize("num_visual", [1, 2])
@pytest.mark.parametrize("action_sizes", [(0, 1), (1, 0)], ids=["discrete", "continuous"])
def test_visual_sac(action_sizes, num_visual):
    continuous, discrete = action_sizes
    config = sac_test_config(batch_size=16, learning_rate=3e-4)
    env = {"continuous_size": continuous, "discrete_branches": discrete, "num_visual": num_visual, "num_vector": 0}
    learns(config, **env)


@pytest.mark.parametrize("vis_encode_type", ["resnet", "nature_cnn", "match3"])
def test_visual_advanced_sac(vis_encode_type):
    # ML-Agents lowers the resolution for these slow encoders and asks for 0.5 in 100 steps
    size = (5, 5, 5) if vis_encode_type == "match3" else (36, 36, 3)
    config = sac_test_config(
        network={"vis_encode_type": EncoderType(vis_encode_type)},
        batch_size=16,
        learning_rate=3e-4,
        buffer_init_steps=0,
        max_steps=100,
    )
    env = {"discrete_branches": 1, "continuous_size": 0, "num_visual": 1, "num_vector": 0, "step_size": 0.5}
    learns(config, 0.5, vis_obs_size=size, **env)


@pytest.mark.parametrize("action_sizes", [(1, 1), (2, 2), (1, 2), (2, 1)], ids=["1-1", "2-2", "1-2", "2-1"])
def test_hybrid_sac(action_sizes):
    # ML-Agents' four sizes, first on seed 1, else on the training seed its CI uses (1337). Over
    # seeds 1-5 they pass 5, 5, 4 and 5 times of 5 (benchmarks/sac_hybrid_seeds.json, 2026-12-07;
    # ML-Agents 0.28's own trainer 5, 3, 5 and 4). Before the policy loss summed the continuous
    # log-probabilities as ML-Agents does, 2-2 passed 2 of 5 and was left out of this test.
    continuous, discrete = action_sizes
    config = sac_test_config(buffer_size=50_000, batch_size=256, buffer_init_steps=0, max_steps=10_000)
    env = {"continuous_size": continuous, "discrete_branches": discrete, "step_size": 0.8}
    learns(config, seeds=(1, 1337), **env)


@pytest.mark.parametrize("case", ["simple", "2d"])
def test_sac_with_target_q_networks(case):
    # target_critic: q (Stable-Baselines3's SAC) on ML-Agents' continuous SAC tests: seeds 1-5 all
    # pass, simple at 1.012-1.020 and 2d at 1.014-1.050 (benchmarks/sac_target_q_seeds.json)
    if case == "simple":
        learns(sac_test_config(target_critic=TargetCritic.Q), continuous_size=1, discrete_branches=0)
    else:
        config = sac_test_config(target_critic=TargetCritic.Q, buffer_init_steps=2000, max_steps=3000)
        learns(config, 0.8, continuous_size=2, discrete_branches=0, step_size=0.8)


def test_sac_with_target_q_networks_control_without_learning_fails():
    config = sac_test_config(target_critic=TargetCritic.Q, learning_rate=0.0)
    assert simple_score(config, 1, continuous_size=1) < 0.5


def example_config(name: str, **changes) -> TrainerSettings:
    settings = load_run_options(MLAGENTS_CONFIGS / f"sac/{name}.yaml").behavior_settings(name)
    return attrs.evolve(settings, **changes)


def example_curve(name: str, seed: int, *, steps: int, goal: float) -> list[tuple[int, float]]:
    """The reward curve of ML-Agents' example config on built-in ``name``, until ``goal`` or ``steps``."""
    log = train_env(
        make_env(name, seed=seed),
        example_config(name),
        seed=seed,
        until=lambda curve: curve[-1][0] >= steps or curve[-1][1] >= goal,
    )
    return log.curve


def test_sac_3dball_example_config_balances():
    # random play scores about 1; the cap is 100
    first_or_second_seed(
        lambda seed: example_curve("3DBall", seed, steps=48_000, goal=90.0), lambda c: c[-1][1] >= 90.0
    )


def test_sac_basic_example_config_reaches_mlagents_benchmark():
    # optimum 0.93 (ML-Agents' benchmark)
    first_or_second_seed(lambda seed: example_curve("Basic", seed, steps=20_000, goal=0.9), lambda c: c[-1][1] >= 0.9)
