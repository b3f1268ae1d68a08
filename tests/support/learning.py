"""Train one behavior of a built-in environment through the real run wiring
(:func:`orchestration.run.build_run`) and return its reward curve: for learning tests and the
learning benchmark."""

from __future__ import annotations

import tempfile

import attrs

from orchestration.run import build_run
from stats import StatsWriter
from trainers.settings import RunOptions, TrainerSettings


class RewardLog(StatsWriter):
    """Keeps the mean episode reward of every summary, with its step."""

    def __init__(self) -> None:
        self.rewards: list[float] = []
        self.steps: list[int] = []

    def write_stats(self, category, values, step):
        if "Environment/Cumulative Reward" in values:
            self.rewards.append(values["Environment/Cumulative Reward"].mean)
            self.steps.append(step)


def train_builtin(env_name: str, behavior: str, settings: TrainerSettings, *, seed: int = 1,
                  num_areas: int = 1) -> RewardLog:
    """Train ``behavior`` of built-in ``env_name`` with ``settings`` (results in a temporary
    folder, no console output); the summaries' mean rewards."""
    log = RewardLog()
    options = RunOptions(behaviors={behavior: settings})
    options = attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, env_path=f"builtin:{env_name}", seed=seed,
                                  num_areas=num_areas),
    )
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(options, checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=results, run_id="learn"))
        build_run(options, writers=[log], console=False).run()
    return log
