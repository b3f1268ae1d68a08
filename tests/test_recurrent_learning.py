"""Recurrent policies really learn what needs memory, and the same settings without memory
cannot: ML-Agents' ``test_recurrent_ppo`` / ``test_recurrent_sac`` on built-in Simple in its
memory mode (ML-Agents' ``MemoryEnvironment``: the goal is shown only on the first decisions),
with their settings; built-in Hallway with config/{ppo,sac}/Hallway.yaml; and ML-Agents' own
``ppo/Hallway.yaml`` starting to train on it. Each task passes on its first seed, else its second
(``first_or_second_seed``: a seed's run differs between CPUs' kernels)."""

from __future__ import annotations

import attrs
import pytest

from tests.support.learning import (
    first_or_second_seed,
    recurrent_ppo_config,
    recurrent_sac_config,
    simple_score,
    train_builtin,
)
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import TrainerSettings, load_run_options

pytestmark = pytest.mark.slow  # trains policies

DISCRETE = {"continuous_size": 0, "discrete_branches": 1}
CONTINUOUS = {"continuous_size": 1, "discrete_branches": 0}


def final_return(
    settings: TrainerSettings, actions: dict, *, seed: int, step_size: float = 0.2, control: bool = False
) -> float:
    """Train on Simple's memory mode; ML-Agents' score: the mean of the last 5 episode returns,
    the run stopped once above 0.9 has held. A control runs to max_steps and averages 50 (a
    memoryless policy wins 5 coin flips in a row 1 time in 32)."""
    return simple_score(
        settings,
        seed,
        threshold=None if control else 0.9,
        episodes=50 if control else 5,
        memory=True,
        step_size=step_size,
        **actions,
    )


@pytest.mark.parametrize("actions", [DISCRETE, CONTINUOUS], ids=["discrete", "continuous"])
def test_recurrent_ppo(actions):
    # ML-Agents' threshold
    first_or_second_seed(lambda seed: final_return(recurrent_ppo_config(), actions, seed=seed), lambda r: r > 0.9)


def test_recurrent_ppo_control_without_memory_fails():
    assert final_return(recurrent_ppo_config(memory=False), DISCRETE, seed=1, control=True) < 0.5


@pytest.mark.parametrize("actions", [DISCRETE, CONTINUOUS], ids=["discrete", "continuous"])
def test_recurrent_sac(actions):
    step_size = 0.2 if actions is DISCRETE else 0.5  # as ML-Agents' test
    first_or_second_seed(
        lambda seed: final_return(recurrent_sac_config(), actions, seed=seed, step_size=step_size),
        lambda r: r > 0.9,
        seeds=(1337, 2),  # 1337: ML-Agents' training seed for this test
    )


def test_recurrent_sac_control_without_memory_fails():
    assert final_return(recurrent_sac_config(memory=False), DISCRETE, seed=1337, control=True) < 0.5


def hallway(algo: str, *, memory: bool = True, max_steps: int = 40_000) -> TrainerSettings:
    settings = load_run_options(f"config/{algo}/Hallway.yaml").behavior_settings("Hallway")
    network = settings.network_settings if memory else attrs.evolve(settings.network_settings, memory=None)
    return attrs.evolve(settings, network_settings=network, max_steps=max_steps, threaded=False)


def solved(curve: list[tuple[int, float]]) -> bool:
    """Three summaries in a row above 0.8 (best 0.92; without memory at best 0.37)."""
    return len(curve) >= 3 and min(reward for _, reward in curve[-3:]) > 0.8


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_hallway_is_solved_with_memory(algo):
    first_or_second_seed(
        lambda seed: train_builtin("Hallway", hallway(algo), seed=seed, num_areas=4, until=solved).curve, solved
    )


def test_hallway_control_without_memory_stays_at_chance():
    log = train_builtin("Hallway", hallway("ppo", memory=False), seed=1, num_areas=4, until=solved)
    assert max(log.rewards) < 0.6, log.curve


def test_mlagents_ppo_hallway_config_trains_on_builtin_hallway():
    """ML-Agents' own ppo/Hallway.yaml (memory 128, sequences of 64, 2 x 128 units), verbatim but
    for the run's length, takes its updates on built-in Hallway."""
    settings = load_run_options(MLAGENTS_CONFIGS / "ppo/Hallway.yaml").behavior_settings("Hallway")
    settings = attrs.evolve(settings, max_steps=3 * 1024 + 200, summary_freq=1024, threaded=False)
    log = train_builtin("Hallway", settings, seed=1, num_areas=2)
    assert len(log.curve) >= 3 and all(-1.0 <= reward <= 1.0 for reward in log.rewards), log.curve
