"""Learning across seeds, against ML-Agents 0.28's results (issue 10, section 4). Prints JSON.

- ``hybrid``: built-in Simple with 2 continuous + 2 discrete actions, step_size 0.8, with
  ML-Agents' ``test_hybrid_ppo`` settings (config/ppo/Simple.yaml: batch 64, buffer 1024, lr 1e-3,
  1 layer of 32, 10k steps). Score: mean of the last 5 episode returns; passes above 0.9
  (ML-Agents 0.28: 2 of 6 seeds, mean 0.70).
- ``basic``: built-in Basic (1 area, as Unity's scene) with config/ppo/Basic.yaml (ML-Agents'
  hyperparameters) for 40k steps. Score: the last summary's mean reward (optimum 0.93), and the
  first step whose summary reaches 0.8 (ML-Agents: 0.93 by 12k steps on seed 8346).
- ``3dball``: built-in 3DBall (12 agents) with config/ppo/3DBall.yaml (ML-Agents' 3DBall.yaml):
  the first summary step (every 12k steps) whose mean reward reaches the cap of 100
  (ML-Agents: 90k-114k steps), training at most 240k steps.

Usage: ``PYTHONPATH=. python benchmarks/learning_seeds.py [hybrid|basic|3dball ...] [--seeds N]``.
One run after another, one torch thread each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.builtin import make_env  # noqa: E402 - after the path set-up
from tests.support.learning import config, train_env  # noqa: E402

HYBRID_SEEDS = [1337, 1, 2, 3, 4, 5, 6, 7, 8, 9]
BASIC_SEEDS = [8346, 1, 2, 3, 4, 5, 6, 7, 8, 9]
BALL_SEEDS = [1, 2, 3]
BASIC_STEPS = 40_000
BALL_MAX_STEPS = 240_000
BALL_CAP = 99.9  # 3DBall's best score is 100 (1000 decisions x 0.1); float sums land just below


def run_hybrid(seed: int) -> dict:
    env = make_env("Simple", seed=seed, continuous_size=2, discrete_branches=2, step_size=0.8)
    train_env(env, config("Simple"), seed=seed)
    score = float(np.mean(env.episode_returns[-5:]))
    return {"seed": seed, "last5": round(score, 3), "passed": score > 0.9, "episodes": len(env.episode_returns)}


def run_basic(seed: int) -> dict:
    # ML-Agents' Basic.yaml has max_steps 500000: its linear schedules (learning rate, beta,
    # epsilon) barely move in 40k steps, so train with that and stop at 40k
    rewards = train_env(
        make_env("Basic", seed=seed),
        config("Basic", max_steps=500_000),
        seed=seed,
        until=lambda curve: curve[-1][0] >= BASIC_STEPS,
    ).curve
    reached = next((step for step, r in rewards if r >= 0.8), None)
    return {"seed": seed, "final": round(rewards[-1][1], 3), "step_to_0.8": reached}


def run_3dball(seed: int) -> dict:
    # ML-Agents' 3DBall.yaml has max_steps 500000 (the schedules decay over it): train with that,
    # stop at the cap or at BALL_MAX_STEPS
    rewards = train_env(
        make_env("3DBall", seed=seed),
        config("3DBall", max_steps=500_000),
        seed=seed,
        until=lambda curve: curve[-1][1] >= BALL_CAP or curve[-1][0] >= BALL_MAX_STEPS,
    ).curve
    reached = next((step for step, r in rewards if r >= BALL_CAP), None)
    return {"seed": seed, "steps_to_cap": reached, "curve": [(s, round(r, 1)) for s, r in rewards]}


RUNS = {"hybrid": (run_hybrid, HYBRID_SEEDS), "basic": (run_basic, BASIC_SEEDS), "3dball": (run_3dball, BALL_SEEDS)}


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--seeds", type=int, default=None, help="only the first N seeds of each task")
    args = parser.parse_args()
    out: dict[str, object] = {}
    for task in args.tasks:
        run, seeds = RUNS[task]
        results = []
        for seed in seeds[: args.seeds]:
            start = time.perf_counter()
            result = run(seed)
            result["seconds"] = round(time.perf_counter() - start, 1)
            results.append(result)
            print(json.dumps({task: result}), file=sys.stderr, flush=True)
        out[task] = results
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
