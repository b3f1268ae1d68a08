"""SAC threaded or not: does the update-to-data ratio hold, and what does a trainer thread buy?
Prints JSON.

Trains built-in 3DBall (12 agents) with ML-Agents' config/sac/3DBall.yaml (``steps_per_update``
10) to ``--steps`` agent steps, once with ``threaded: false`` (ML-Agents' default: the trainer
updates between environment steps) and once with ``threaded: true`` (a trainer thread; the
environment blocks when 20 trajectories wait). For each: wall time, agent steps per second,
gradient steps taken against the ``(steps - buffer_init_steps) / steps_per_update`` due, the
largest trajectory-queue fill seen (how far the environment ran ahead), and the reward curve.

With ``--self-play``: built-in Simple, asymmetric, two behaviors (``Simple``, ``SimpleOpp``)
each a ghost-wrapped SAC with ML-Agents' SAC test settings (team change every 400 steps), to
``--steps`` trainer steps each; for each mode the environment steps taken against the trainers'
(a ghost that let its trainer fall behind once let the environment run four times ahead) and
the mean of each behavior's last 5 returns (0.9 is ML-Agents' pass mark).

Usage: ``PYTHONPATH=. python benchmarks/sac_threading.py [--steps N] [--seed S] [--self-play]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.builtin import make_env  # noqa: E402 - after the path set-up
from orchestration.run import build_run  # noqa: E402
from stats import StatsWriter  # noqa: E402
from tests.support.learning import SAC_TEST_CONFIG  # noqa: E402
from tests.support.paths import MLAGENTS_CONFIGS  # noqa: E402
from trainers.sac.algorithm import SAC  # noqa: E402
from trainers.settings import RunOptions, SelfPlaySettings, TrainerSettings, load_run_options  # noqa: E402


class Curve(StatsWriter):
    """Mean reward per summary and the largest trajectory-queue fill reported."""

    def __init__(self) -> None:
        self.rewards: list[tuple[int, float]] = []
        self.max_queue_fill = 0.0

    def write_stats(self, category, values, step):
        if "Environment/Cumulative Reward" in values:
            self.rewards.append((int(step), round(float(values["Environment/Cumulative Reward"].mean), 2)))
        fill = values.get("Perf/trajectory_queue_fill")
        if fill is not None:
            self.max_queue_fill = max(self.max_queue_fill, float(fill.max))


def train(env, settings: TrainerSettings, seed: int, curve: Curve):
    """Run ``settings`` on ``env`` (stepped in this process); the wired run and its seconds."""
    with tempfile.TemporaryDirectory() as results:
        options = RunOptions(default_settings=settings)
        options = attrs.evolve(
            options,
            env_settings=attrs.evolve(options.env_settings, seed=seed),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="threading"),
        )
        wired = build_run(options, env_factory=lambda worker_id, seed: env, writers=[curve], console=False)
        start = time.perf_counter()
        wired.run()
        return wired, time.perf_counter() - start


def run(threaded: bool, steps: int, seed: int) -> dict:
    settings = load_run_options(MLAGENTS_CONFIGS / "sac/3DBall.yaml").behavior_settings("3DBall")
    settings = attrs.evolve(settings, threaded=threaded, max_steps=steps)
    curve = Curve()
    wired, elapsed = train(make_env("3DBall", seed=seed), settings, seed, curve)
    sac = wired.controller.trainers["3DBall"].algorithm
    assert isinstance(sac, SAC)
    hp = sac.hyperparameters
    due = int((sac.steps - hp.buffer_init_steps) / hp.steps_per_update)
    return {
        "threaded": threaded,
        "seconds": round(elapsed, 1),
        "agent_steps_per_s": round(sac.steps / elapsed),
        "agent_steps": sac.steps,
        "gradient_steps": sac.update_steps - 1,
        "gradient_steps_due": due,
        "max_trajectory_queue_fill": curve.max_queue_fill,
        "rewards": curve.rewards,
    }


def run_self_play(threaded: bool, steps: int, seed: int) -> dict:
    self_play = SelfPlaySettings(
        play_against_latest_model_ratio=1.0, save_steps=10_000, swap_steps=10_000, team_change=400
    )
    settings = attrs.evolve(SAC_TEST_CONFIG, self_play=self_play, max_steps=steps, threaded=threaded)
    env = make_env("Simple", seed=seed, num_teams=2, asymmetric=True, continuous_size=0, discrete_branches=1)
    wired, elapsed = train(env, settings, seed, Curve())
    trainer_steps = {name: trainer.step for name, trainer in wired.controller.trainers.items()}
    return {
        "threaded": threaded,
        "seconds": round(elapsed, 1),
        "environment_steps": env.steps_taken,
        "trainer_steps": trainer_steps,
        "last_5_returns": {
            name: round(float(np.mean(returns[-5:])), 3) for name, returns in env.episode_returns_by_behavior.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--self-play", action="store_true", help="asymmetric self-play on built-in Simple")
    args = parser.parse_args()
    measure = run_self_play if args.self_play else run
    print(json.dumps([measure(threaded, args.steps, args.seed) for threaded in (False, True)], indent=2))


if __name__ == "__main__":
    main()
