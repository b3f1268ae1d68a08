"""Self-play with trainer threads or without: what ``threaded: true`` costs where an in-process
environment and two SAC trainers share two cores. Prints JSON.

The run is ``tests/test_self_play_learning.py``'s asymmetric ghost with threaded trainers: built-in
Simple with two teams of different behaviors (Simple, SimpleOpp; one discrete branch), ML-Agents'
SAC test configuration, play against the latest model, the learning team changing every 400
steps, 3000 steps per behavior. For each mode: wall time, environment steps taken, gradient steps
per behavior and their mean time, and each behavior's mean of its last 5 episode returns (a
solved team scores above 0.9). Serially, an environment step takes its turn with the updates; with
threads, the environment runs ahead of the learning team's trainer, and the ghost drops the queued
trajectories of a team that stopped learning (as ML-Agents' ghost trainer does).

Usage: ``python benchmarks/threaded_self_play.py [--seed S]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.builtin import make_env  # noqa: E402 - after the path set-up
from tests.support.learning import SAC_TEST_CONFIG, train_env  # noqa: E402
from trainers.sac.algorithm import SAC  # noqa: E402
from trainers.settings import SelfPlaySettings  # noqa: E402

SELF_PLAY = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=10000, swap_steps=10000, team_change=400)


class TimedSAC:
    """Wraps ``SAC._gradient_step`` to count and time every gradient step (of either behavior:
    one team learns at a time)."""

    def __init__(self) -> None:
        self.steps = 0
        self.seconds = 0.0
        self._original = SAC._gradient_step

    def __enter__(self) -> TimedSAC:
        original = self._original

        def timed(sac, batch):
            start = time.perf_counter()
            losses = original(sac, batch)
            self.steps += 1
            self.seconds += time.perf_counter() - start
            return losses

        SAC._gradient_step = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc) -> None:
        SAC._gradient_step = self._original  # type: ignore[method-assign]


def run(threaded: bool, seed: int) -> dict:
    env = make_env("Simple", seed=seed, num_teams=2, asymmetric=True, discrete_branches=1, continuous_size=0)
    env_steps = 0
    step = env.step

    def counted_step() -> None:
        nonlocal env_steps
        env_steps += 1
        step()

    env.step = counted_step  # type: ignore[method-assign]
    settings = attrs.evolve(SAC_TEST_CONFIG, self_play=SELF_PLAY, max_steps=3000, threaded=threaded)
    with TimedSAC() as timed:
        start = time.perf_counter()
        train_env(env, settings, seed=seed)
        elapsed = time.perf_counter() - start
    return {
        "threaded": threaded,
        "seconds": round(elapsed, 1),
        "env_steps": env_steps,
        "gradient_steps": timed.steps,
        "ms_per_gradient_step": round(1000 * timed.seconds / max(timed.steps, 1), 2),
        "last_5_returns": {k: round(float(np.mean(v[-5:])), 3) for k, v in env.episode_returns_by_behavior.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    results = [run(threaded, args.seed) for threaded in (False, True)]
    print(json.dumps({"benchmark": "threaded_self_play", "seed": args.seed, "results": results}, indent=2))


if __name__ == "__main__":
    main()
