"""Every SAC behavior of ML-Agents' example configs that needs nothing agents-learn lacks starts
training: its settings, verbatim but for the length of the run, train a few hundred steps on the
built-in environment of its name or, for Unity scenes that have none, built-in Simple shaped
like the scene's behavior (its observation width and action kinds), taking gradient steps and
writing a checkpoint and an ONNX model."""

from __future__ import annotations

import attrs
import pytest

from envs.builtin import make_env
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import RunOptions, load_run_options

pytestmark = pytest.mark.slow  # trains (briefly) networks of the examples' sizes

# Behavior -> (built-in environment, its options): the same scene, or Simple with about the
# scene's observation and action sizes (discrete branches of Simple have two actions each;
# episodes of many continuous dimensions are interrupted after 50 decisions, as the scenes' are).
NEAREST = {
    "3DBall": ("3DBall", {}),
    "3DBallHard": ("Simple", {"vec_obs_size": 45, "continuous_size": 2, "max_step": 50}),
    "Basic": ("Basic", {}),
    "GridWorld": ("GridWorld", {}),
    "Hallway": ("Hallway", {}),
    "Crawler": ("Simple", {"vec_obs_size": 158, "continuous_size": 20, "max_step": 50}),
    "GridFoodCollector": (
        "Simple",
        {"num_vector": 0, "num_visual": 1, "vis_obs_size": (40, 40, 6), "continuous_size": 0, "discrete_branches": 3},
    ),
    "PushBlock": ("Simple", {"vec_obs_size": 210, "continuous_size": 0, "discrete_branches": 1}),
    "Walker": ("Simple", {"vec_obs_size": 243, "continuous_size": 39, "max_step": 50}),
    "BigWallJump": ("Simple", {"vec_obs_size": 74, "continuous_size": 0, "discrete_branches": 4}),
    "SmallWallJump": ("Simple", {"vec_obs_size": 74, "continuous_size": 0, "discrete_branches": 4}),
    "Worm": ("Simple", {"vec_obs_size": 64, "continuous_size": 9, "max_step": 50}),
}
CONFIGS = [
    "3DBall",
    "3DBallHard",
    "Basic",
    "Crawler",
    "FoodCollector",
    "GridWorld",
    "Hallway",
    "PushBlock",
    "Walker",
    "WallJump",
    "Worm",
]


class Tags(StatsWriter):
    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write_stats(self, category, values, step):
        self.seen |= set(values)


def behaviors_of(config: str) -> list[tuple[str, str]]:
    options = load_run_options(MLAGENTS_CONFIGS / f"sac/{config}.yaml")
    return [(config, name) for name in options.behaviors]


@pytest.mark.parametrize(
    ("config", "behavior"), [pair for config in CONFIGS for pair in behaviors_of(config)], ids=lambda v: v
)
def test_example_behavior_starts_training(config, behavior, tmp_path):
    settings = load_run_options(MLAGENTS_CONFIGS / f"sac/{config}.yaml").behaviors[behavior]
    hp = settings.hyperparameters
    # long enough for a minibatch and a few gradient steps before the trajectory that reaches
    # max_steps (no update follows it); everything else as configured
    steps = max(300, hp.batch_size + 4 * int(hp.steps_per_update)) + 100
    settings = attrs.evolve(
        settings,
        hyperparameters=attrs.evolve(hp, buffer_init_steps=min(hp.buffer_init_steps, steps // 2)),
        max_steps=steps,
        summary_freq=steps,
        checkpoint_interval=steps,
    )
    env_name, env_options = NEAREST[behavior]
    env = make_env(env_name, seed=1, **env_options)
    options = RunOptions(default_settings=settings)
    options = attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, seed=1),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="example"),
    )
    tags = Tags()
    build_run(options, env_factory=lambda worker_id, seed: env, writers=[tags], console=False).run()
    assert {"Losses/Q1 Loss", "Losses/Policy Loss"} <= tags.seen  # gradient steps were taken
    name = next(iter(env.behavior_specs)).split("?")[0]
    assert (tmp_path / "example" / f"{name}.onnx").exists()
