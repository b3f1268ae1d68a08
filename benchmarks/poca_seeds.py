"""POCA against PPO on the built-in DungeonEscape, seeds x outcome, printed as JSON.

Each run trains config/<trainer>/DungeonEscape.yaml (8 areas, 300k steps unless given) on one
seed and reports the escape rate of the last 300 group episodes (an escape gives every
survivor +1 group reward, so it is also the mean final group reward), its curve at every
summary (``DungeonEscape/Escaped``), and the wall time at one torch thread. Random play
escapes in about 18% of episodes.

    .venv/bin/python benchmarks/poca_seeds.py [steps] [seeds...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.builtin import make_env
from stats import StatsWriter
from tests.support.learning import train_env
from trainers.settings import load_run_options

ROOT = Path(__file__).resolve().parents[1]


class EscapeCurve(StatsWriter):
    def __init__(self) -> None:
        self.curve: list[tuple[int, float]] = []

    def write_stats(self, category, values, step):
        escaped = values.get("DungeonEscape/Escaped")
        if escaped is not None and escaped.count:
            self.curve.append((int(step), round(float(escaped.mean), 3)))


def run(trainer: str, seed: int, steps: int) -> dict:
    settings = load_run_options(ROOT / f"config/{trainer}/DungeonEscape.yaml").behavior_settings("DungeonEscape")
    settings = attrs.evolve(settings, max_steps=steps, summary_freq=20_000, threaded=False)
    env = make_env("DungeonEscape", seed=seed, num_areas=8)
    curve = EscapeCurve()
    start = time.perf_counter()
    train_env(env, settings, seed=seed, writers=[curve])
    escapes = np.array(env.escapes, float)
    return {
        "trainer": trainer,
        "seed": seed,
        "steps": steps,
        "escaped_last_300": round(float(escapes[-300:].mean()), 3),
        "seconds": round(time.perf_counter() - start, 1),
        "curve": curve.curve,
    }


def main() -> None:
    torch.set_num_threads(1)
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
    seeds = [int(s) for s in sys.argv[2:]] or [1, 2, 3]
    results = [run(trainer, seed, steps) for trainer in ("poca", "ppo") for seed in seeds]
    print(json.dumps({"benchmark": "poca_seeds", "env": "DungeonEscape (8 areas)", "results": results}))


if __name__ == "__main__":
    main()
