"""Variable-length observations and goal conditioning learn what ML-Agents' own learning tests
ask: ``test_simple_rl.py``'s test_var_len_obs_sac and test_var_len_obs_and_goal_ppo on the
built-in Simple (their ``SimpleEnvironment``: every entity row present and equal to the goal;
``goal_indices=[0]`` types the first observation GOAL_SIGNAL) with their configuration
(``dummy_config._SAC_CONFIG`` / ``_PPO_CONFIG`` with ``_POCA_CONFIG``'s network, and each
test's changes), plus a control that must not learn.

ML-Agents' grids (4 and 16 runs) are too slow for CI; these are a subset covering var-len
alone, one and two var-len observations, var-len next to a vector or a visual observation,
the goal a vector, an image or a var-len observation, hyper and none, continuous and discrete.
Measured on seeds 1, 2, 3, every case below scored 1.018-1.02 (threshold 0.9, optimum 1.02);
the control scored -1.13, -0.11 and 0.21. A seed passes when the mean of its last 5 episode
returns exceeds 0.9, as ML-Agents' ``check_environment_trains``; a case passes on its first seed,
else its second (``first_or_second_seed``): with AVX-512 kernels seed 1 of visual-goal-discrete
scored 0.172 where AVX2 and the default kernels score 1.02, and seeds 2-6 score 1.02 on both.
"""

from __future__ import annotations

import attrs
import pytest

from tests.support.learning import first_or_second_seed, sac_test_config, simple_score, train_builtin
from trainers.settings import (
    ConditioningType,
    NetworkSettings,
    PPOSettings,
    ScheduleType,
    TrainerSettings,
    load_run_options,
)

pytestmark = pytest.mark.slow  # trains policies

# ML-Agents' dummy_config._PPO_CONFIG with test_var_len_obs_and_goal_ppo's changes: learning
# rate 3e-4, _POCA_CONFIG's network settings (the same as PPO's: 1 layer of 32)
PPO_VAR_LEN_CONFIG = TrainerSettings(
    trainer_type="ppo",
    hyperparameters=PPOSettings(
        learning_rate=3.0e-4, learning_rate_schedule=ScheduleType.CONSTANT, batch_size=16, buffer_size=64
    ),
    network_settings=NetworkSettings(num_layers=1, hidden_units=32, goal_conditioning_type=ConditioningType.HYPER),
    summary_freq=500,
    max_steps=3000,
    threaded=False,
)


def learns(settings: TrainerSettings, **env_options) -> None:
    """Above 0.9 on the first seed, else the second (a run stops once that has held)."""
    first_or_second_seed(lambda seed: simple_score(settings, seed, threshold=0.9, **env_options), lambda s: s > 0.9)


@pytest.mark.parametrize(
    ("action_sizes", "num_var_len"), [((1, 0), 1), ((0, 1), 2)], ids=["continuous-1", "discrete-2"]
)
def test_var_len_obs_sac(action_sizes, num_var_len):
    continuous, discrete = action_sizes
    config = sac_test_config(batch_size=16, learning_rate=3e-4)
    env = {"continuous_size": continuous, "discrete_branches": discrete, "num_vector": 0, "num_var_len": num_var_len}
    learns(config, **env)


PPO_CASES = {
    # goal: the vector observation; entities next to it
    "vector-goal-continuous": {"continuous_size": 1, "num_vector": 1, "num_var_len": 1},
    # goal: the image (its encoder's output conditions the hypernetwork)
    "visual-goal-discrete": {
        "continuous_size": 0,
        "discrete_branches": 1,
        "num_visual": 1,
        "num_vector": 0,
        "num_var_len": 1,
    },
    # goal: a var-len observation (no conditioning, as in ML-Agents), two entity sets
    "var-len-goal-discrete": {"continuous_size": 0, "discrete_branches": 1, "num_vector": 0, "num_var_len": 2},
}


@pytest.mark.parametrize("case", list(PPO_CASES))
def test_var_len_obs_and_goal_ppo(case):
    learns(PPO_VAR_LEN_CONFIG, goal_indices=[0], **PPO_CASES[case])


def test_var_len_obs_and_goal_ppo_without_hypernetwork():
    network = attrs.evolve(PPO_VAR_LEN_CONFIG.network_settings, goal_conditioning_type=ConditioningType.NONE)
    config = attrs.evolve(PPO_VAR_LEN_CONFIG, network_settings=network)
    learns(config, goal_indices=[0], **PPO_CASES["visual-goal-discrete"])


def test_var_len_control_without_learning_fails():
    frozen = attrs.evolve(
        PPO_VAR_LEN_CONFIG, hyperparameters=attrs.evolve(PPO_VAR_LEN_CONFIG.hyperparameters, learning_rate=0.0)
    )
    assert simple_score(frozen, 1, goal_indices=[0], **PPO_CASES["vector-goal-continuous"]) < 0.5


def collect_settings(max_steps: int) -> TrainerSettings:
    settings = load_run_options("config/ppo/Collect.yaml").behavior_settings("Collect")
    return attrs.evolve(settings, max_steps=max_steps, threaded=False)


def test_collect_learns_to_reach_items_it_sees_only_as_entities():
    """Built-in Collect: 1-6 items, seen only through a variable-length observation. Going
    straight for the nearest scores about 0.97, random moves about 0.06 (a 60k-step run, seed 1: 0.89
    at 20k steps, 0.96 from 40k)."""

    def solved(curve: list[tuple[int, float]]) -> bool:
        return len(curve) >= 2 and min(reward for _, reward in curve[-2:]) > 0.8

    first_or_second_seed(
        lambda seed: train_builtin("Collect", collect_settings(30_000), seed=seed, num_areas=4, until=solved).curve,
        solved,
    )
