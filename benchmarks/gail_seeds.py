"""GAIL alone (no extrinsic reward, no behavioral cloning) imitating a scripted expert on built-in
Basic, across seeds. Prints JSON.

Each run records 100 steps of an expert walking straight to Basic's large goal (return 0.93) or,
the control, to its small goal (return 0.07), trains with GAIL on them as the only reward
signal (``tests/support/gail_alone.py``: ML-Agents' PPO and SAC learning-test settings, GAIL's
defaults but ``use_actions: true`` and ``gamma: 0.3``) and reports the environment's own return:
the mean of the last two summaries (the last 1000 steps) and the curve of (step, mean return)
summaries every 500 steps. ``followed`` is whether the score is within 0.1 of the demonstrated
goal's return (a policy that wanders until Basic's 100-decision limit scores about -1).

Variants (``--variants``; default ``chosen``, about 100 s):

- ``chosen``: the setting above, PPO (5000 steps) and SAC (3000 steps), both goals.
- ``obs_only``: ``use_actions: false`` (ML-Agents' default) with gamma 0.99 (its default) and
  0.3, PPO, large goal.
- ``gamma``: ``use_actions: true`` with gamma 0.5, 0.7 (PPO) and 0.99 (PPO and SAC), large goal.
- ``vail``: ``use_actions`` and ``use_vail`` with gamma 0.5, 0.3 and 0.1, PPO, large goal.

Usage: ``PYTHONPATH=. python benchmarks/gail_seeds.py [--variants NAME ...] [--seeds N]``.
One run after another, one torch thread each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.gail_alone import EXPERT_RETURN, gail_alone_score  # noqa: E402 - after the path set-up

SEEDS = [1, 2, 3, 4, 5]

# variant -> its runs: (name, trainer, goal, GAIL keywords)
VARIANTS: dict[str, list[tuple[str, str, str, dict]]] = {
    "chosen": [
        ("ppo_large", "ppo", "large", {}),
        ("ppo_small", "ppo", "small", {}),
        ("sac_large", "sac", "large", {}),
        ("sac_small", "sac", "small", {}),
    ],
    "obs_only": [
        ("ppo_obs_only_gamma_0.99", "ppo", "large", {"use_actions": False, "gamma": 0.99}),
        ("ppo_obs_only_gamma_0.3", "ppo", "large", {"use_actions": False, "gamma": 0.3}),
    ],
    "gamma": [
        ("ppo_gamma_0.5", "ppo", "large", {"gamma": 0.5}),
        ("ppo_gamma_0.7", "ppo", "large", {"gamma": 0.7}),
        ("ppo_gamma_0.99", "ppo", "large", {"gamma": 0.99}),
        ("sac_gamma_0.99", "sac", "large", {"gamma": 0.99}),
    ],
    "vail": [
        ("ppo_vail_gamma_0.5", "ppo", "large", {"use_vail": True, "gamma": 0.5}),
        ("ppo_vail_gamma_0.3", "ppo", "large", {"use_vail": True, "gamma": 0.3}),
        ("ppo_vail_gamma_0.1", "ppo", "large", {"use_vail": True, "gamma": 0.1}),
    ],
}


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", default=["chosen"], choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, default=None, help="only the first N seeds")
    args = parser.parse_args()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as demos:
        for variant in args.variants:
            for name, trainer, goal, gail in VARIANTS[variant]:
                results = []
                for seed in SEEDS[: args.seeds]:
                    start = time.perf_counter()
                    score, curve = gail_alone_score(trainer, goal, seed, Path(demos), **gail)
                    result = {
                        "seed": seed,
                        "score": round(score, 3),
                        "followed": abs(score - EXPERT_RETURN[goal]) < 0.1,
                        "curve": [(step, round(reward, 2)) for step, reward in curve],
                        "seconds": round(time.perf_counter() - start, 1),
                    }
                    results.append(result)
                    print(json.dumps({name: result}), file=sys.stderr, flush=True)
                out[name] = results
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
