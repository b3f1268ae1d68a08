"""Every ML-Agents example behavior with GAIL or behavioral cloning loads and takes real updates:
``imitation/{Crawler,Hallway,PushBlock,Pyramids}.yaml`` and ``sac/Pyramids.yaml``, their signal
and behavioral-cloning settings verbatim, ``demo_path`` pointing at a demo our writer recorded
(a random policy) from an environment of the behavior's spec: built-in Hallway and Pyramids, the
stand-ins of :mod:`tests.support.spec_envs` for Crawler and PushBlock. Only the sizes that decide
when updates happen shrink (buffer, batch, time horizon, steps), so a few hundred steps suffice.

And a demo that ``--record-demo`` wrote during one run serves as ``demo_path`` of another run,
started by the real command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
import yaml
from mlagents_envs.base_env import BaseEnv

from envs.builtin import make_env
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.expert_demos import random_policy, record_demo
from tests.support.paths import MLAGENTS_CONFIGS
from tests.support.spec_envs import SpecEnv
from trainers.settings import (
    GAILSettings,
    PPOSettings,
    RewardSignalType,
    RunOptions,
    SACSettings,
    TrainerSettings,
    load_run_options,
)

pytestmark = pytest.mark.slow  # trains policies

DEMO_STEPS = 300


class TagLog(StatsWriter):
    """Every stat tag written, by category."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write_stats(self, category, values, step):
        self.seen |= set(values)


def make(behavior: str, seed: int) -> BaseEnv:
    if behavior in ("Hallway", "Pyramids"):
        return make_env(behavior, seed=seed)
    return SpecEnv(behavior, seed=seed)


def with_demo(settings: TrainerSettings, demo: Path) -> TrainerSettings:
    """``settings`` with every demo_path on ``demo``, nothing else changed."""
    signals = {
        kind: attrs.evolve(signal, demo_path=str(demo)) if isinstance(signal, GAILSettings) else signal
        for kind, signal in settings.reward_signals.items()
    }
    bc = settings.behavioral_cloning
    return attrs.evolve(
        settings,
        reward_signals=signals,
        behavioral_cloning=None if bc is None else attrs.evolve(bc, demo_path=str(demo)),
    )


def shrunk(settings: TrainerSettings) -> TrainerSettings:
    """Updates within a few hundred steps: PPO's buffer 256 (batch at most 128), SAC's updates
    from step 200 with a replay of 10k; time horizon at most 64; 600 steps, summaries every 300."""
    h = settings.hyperparameters
    if isinstance(h, PPOSettings):
        h = attrs.evolve(h, buffer_size=256, batch_size=min(h.batch_size, 128))
    elif isinstance(h, SACSettings):
        h = attrs.evolve(h, buffer_size=10_000, buffer_init_steps=200)
    return attrs.evolve(
        settings,
        hyperparameters=h,
        time_horizon=min(settings.time_horizon, 64),
        max_steps=600,
        summary_freq=300,
        threaded=False,
    )


def train_tags(env: BaseEnv, settings: TrainerSettings, results: Path) -> set[str]:
    tags = TagLog()
    options = RunOptions(default_settings=settings)
    options = attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, seed=1),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(results), run_id="imitation"),
    )
    build_run(options, env_factory=lambda worker_id, seed: env, writers=[tags], console=False).run()
    return tags.seen


CONFIGS = [
    ("imitation/Crawler.yaml", "Crawler"),
    ("imitation/Hallway.yaml", "Hallway"),
    ("imitation/PushBlock.yaml", "PushBlock"),
    ("imitation/Pyramids.yaml", "Pyramids"),
    ("sac/Pyramids.yaml", "Pyramids"),
]


@pytest.mark.parametrize(("config", "behavior"), CONFIGS, ids=[c for c, _ in CONFIGS])
def test_mlagents_imitation_config_trains(config, behavior, tmp_path):
    settings = load_run_options(MLAGENTS_CONFIGS / config).behavior_settings(behavior)
    assert RewardSignalType.GAIL in settings.reward_signals
    demo = record_demo(
        make(behavior, seed=7), tmp_path / f"Expert{behavior}.demo", steps=DEMO_STEPS, policy=random_policy
    )
    seen = train_tags(make(behavior, seed=1), shrunk(with_demo(settings, demo)), tmp_path / "results")
    value = "Policy/Gail Value Estimate" if settings.trainer_type == "ppo" else "Policy/Gail Value"
    expected = {"Losses/GAIL Loss", "Policy/GAIL Expert Estimate", "Policy/GAIL Policy Estimate", value}
    expected |= {"Policy/Gail Reward", "Losses/Policy Loss"}
    if settings.behavioral_cloning is not None:
        expected.add("Losses/Pretraining Loss")
    assert expected <= seen, sorted(expected - seen)


def test_a_recorded_demo_feeds_another_run_through_the_cli(tmp_path):
    """A PPO run on built-in Simple records ``--record-demo``; the command then trains GAIL + BC
    from that file (demo_path relative to where it runs, as users write it)."""
    base = load_run_options("config/ppo/Simple.yaml").behavior_settings("Simple")
    recording = attrs.evolve(base, max_steps=300, summary_freq=300)
    options = RunOptions(default_settings=recording)
    options = attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, seed=2),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path / "r"), run_id="rec"),
    )
    build_run(
        options,
        env_factory=lambda worker_id, seed: make_env("Simple", seed=seed),
        console=False,
        record_demo=tmp_path / "demos",
    ).run()
    assert (tmp_path / "demos" / "Simple.demo").is_file()

    data = yaml.safe_load(Path("config/ppo/Simple.yaml").read_text())
    behavior = data["behaviors"]["Simple"]
    behavior.update(max_steps=1000, summary_freq=500)
    behavior["hyperparameters"].update(buffer_size=256)
    behavior["reward_signals"]["gail"] = {"strength": 1.0, "demo_path": "demos/Simple.demo", "use_actions": True}
    behavior["behavioral_cloning"] = {"demo_path": "demos", "strength": 0.5, "steps": 1000}
    (tmp_path / "imitate.yaml").write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    result = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", "imitate.yaml", "--run-id=imitate", "--seed=3"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    keys = {json.loads(line)["key"] for line in (tmp_path / "results/imitate/run_logs/stats.jsonl").open()}
    assert {"Losses/GAIL Loss", "Losses/Pretraining Loss", "Policy/Gail Reward"} <= keys, sorted(keys)
