"""DungeonEscape's escape rate through training, for the learning tests' budgets: the share of
the last 300 group episodes that escaped (random play: about 0.2), at every summary (5k steps),
of POCA (120k steps), PPO with ML-Agents' absorbing state (300k) and PPO without it (300k), with
config/*/DungeonEscape.yaml on 8 areas, per seed. Prints one JSON line per run
(benchmarks/dungeon_escape_seeds.json keeps seeds 1-3).

    .venv/bin/python benchmarks/dungeon_escape_seeds.py poca|ppo_abs|ppo [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from envs.builtin import make_env  # noqa: E402
from tests.support.learning import train_env  # noqa: E402
from trainers.settings import load_run_options  # noqa: E402

RUNS = {"poca": ("poca", {}, 120_000), "ppo_abs": ("ppo", {"absorbing_state": 1}, 300_000), "ppo": ("ppo", {}, 300_000)}


def run(trainer: str, params: dict, steps: int, seed: int) -> dict:
    settings = load_run_options(REPO / f"config/{trainer}/DungeonEscape.yaml").behavior_settings("DungeonEscape")
    settings = attrs.evolve(settings, max_steps=steps, threaded=False, summary_freq=5000)
    env = make_env("DungeonEscape", seed=seed, num_areas=8, env_parameters=params)
    rows = []

    def record(curve: list[tuple[int, float]]) -> bool:
        e = env.escapes
        rows.append((curve[-1][0], len(e), round(float(np.mean(e[-300:])), 3) if len(e) >= 300 else None))
        return False

    start = time.time()
    train_env(env, settings, seed=seed, until=record)
    e = np.array(env.escapes, float)
    return {
        "trainer": trainer,
        "params": params,
        "seed": seed,
        "steps": steps,
        "wall": round(time.time() - start, 1),
        "final_last300": round(float(e[-300:].mean()), 3),
        "first500": round(float(e[:500].mean()), 3),
        "curve": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("which", choices=list(RUNS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    torch.set_num_threads(1)
    for seed in args.seeds:
        print(json.dumps(run(*RUNS[args.which], seed)), flush=True)


if __name__ == "__main__":
    main()
