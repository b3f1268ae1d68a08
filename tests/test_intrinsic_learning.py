"""Curiosity explores where the extrinsic reward alone never arrives: built-in Pyramids with two
rooms (the only reward, +2, behind a switch in the far room) and config/ppo/Pyramids.yaml
(ML-Agents' Pyramids: PPO with curiosity at strength 0.02, smaller networks). Measured on seeds
1-3 (150k steps): curiosity's summaries pass 1.5 at 90k (seeds 2 and 3) and 140k (seed 1)
steps; without curiosity every summary is -0.4 (the goal never reached) on all three. The
comparison holds for this config's 150k-step schedule: with a 400k-step schedule extrinsic-only
PPO finds the goal of this small task too (by 70k-110k steps on seeds 1-2)."""

from __future__ import annotations

import tempfile

import attrs
import pytest

from envs.builtin import make_env
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.learning import train_env
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import RewardSignalType, RunOptions, TrainerSettings, load_run_options

pytestmark = pytest.mark.slow  # trains policies

CONFIG = load_run_options("config/ppo/Pyramids.yaml")


def pyramids(seed: int):
    rooms = {name: float(value.curriculum[0].value.value) for name, value in CONFIG.environment_parameters.items()}
    return make_env("Pyramids", seed=seed, env_parameters=rooms)


def settings(*, curiosity: bool = True) -> TrainerSettings:
    behavior = attrs.evolve(CONFIG.behavior_settings("Pyramids"), threaded=False)
    if not curiosity:
        signals = {k: v for k, v in behavior.reward_signals.items() if k != RewardSignalType.CURIOSITY}
        behavior = attrs.evolve(behavior, reward_signals=signals)
    return behavior


def solved(curve: list[tuple[int, float]]) -> bool:
    return len(curve) >= 2 and min(reward for _, reward in curve[-2:]) > 1.5


@pytest.mark.parametrize("seed", [2, 3])
def test_curiosity_finds_the_reward_behind_the_switch(seed):
    log = train_env(pyramids(seed), settings(), seed=seed, until=solved)
    assert solved(log.curve), log.curve


def test_control_without_curiosity_never_finds_it():
    log = train_env(pyramids(2), settings(curiosity=False), seed=2, until=lambda curve: curve[-1][0] >= 100_000)
    assert max(log.rewards) < 0.0, log.curve  # -0.4: every episode interrupted without the goal


@pytest.mark.parametrize("config", ["ppo/Pyramids.yaml", "ppo/PyramidsRND.yaml"])
def test_mlagents_intrinsic_configs_train_on_builtin_pyramids(config):
    """ML-Agents' own Pyramids configs (curiosity, RND), verbatim but for the run's length, take
    their updates, intrinsic signals included, on built-in Pyramids."""
    settings = load_run_options(MLAGENTS_CONFIGS / config).behavior_settings("Pyramids")
    settings = attrs.evolve(settings, max_steps=2 * 2048 + 200, summary_freq=2048, threaded=False)
    tags = TagLog()
    env = make_env("Pyramids", seed=1)
    options = RunOptions(default_settings=settings)
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(
            options,
            env_settings=attrs.evolve(options.env_settings, seed=1),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="pyramids"),
        )
        build_run(options, env_factory=lambda worker_id, seed: env, writers=[tags], console=False).run()
    signal = "Curiosity" if "RND" not in config else "RND"
    losses = {"Curiosity": "Losses/Curiosity Forward Loss", "RND": "Losses/RND Loss"}[signal]
    value = {"Curiosity": "Policy/Curiosity Value Estimate", "RND": "Policy/Rnd Value Estimate"}[signal]
    assert {losses, value, "Losses/Policy Loss"} <= tags.seen


class TagLog(StatsWriter):
    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write_stats(self, category, values, step):
        self.seen |= set(values)
