"""Self-play across seeds: ML-Agents' four ghost tests (tests/test_self_play_learning.py) on
seeds 1, 2, 3, discrete and continuous actions, and self-play on built-in LineSoccer. Prints
JSON: per ghost test, action kind and seed, the mean of the last 5 episode returns per behavior
id (ML-Agents' test score; solved above 0.9) and the seconds the run took; per LineSoccer
config and seed, the summaries' ELO and (PPO, 1 per team) the share of 400 games the learning
policy wins against random play.

Usage: ``PYTHONPATH=. python benchmarks/self_play_seeds.py [--seeds N]``. One run after
another, one torch thread each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_self_play_learning import (  # noqa: E402 - after the path set-up
    line_soccer,
    simple_asymm_ghost,
    simple_asymm_ghost_fails,
    simple_ghost,
    simple_ghost_fails,
    wins_against_random,
)

SEEDS = [1, 2, 3]
TESTS = {
    "simple_ghost": simple_ghost,
    "simple_ghost_fails": simple_ghost_fails,
    "simple_asymm_ghost": simple_asymm_ghost,
    "simple_asymm_ghost_fails": simple_asymm_ghost_fails,
}


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="only the first N seeds")
    args = parser.parse_args()
    out: dict[str, list[dict]] = {}
    for name, run in TESTS.items():
        results = []
        for actions in ("discrete", "continuous"):
            for seed in SEEDS[: args.seeds]:
                start = time.perf_counter()
                returns = run(actions, seed=seed)
                result = {
                    "actions": actions,
                    "seed": seed,
                    "returns": {k: round(v, 3) for k, v in returns.items()},
                    "seconds": round(time.perf_counter() - start, 1),
                }
                results.append(result)
                print(json.dumps({name: result}), file=sys.stderr, flush=True)
        out[name] = results
    for config, steps in (("config/ppo/LineSoccer.yaml", 60_000), ("config/poca/LineSoccer.yaml", 100_000)):
        results = []
        for seed in SEEDS[: args.seeds]:
            start = time.perf_counter()
            log, policy = line_soccer(config, steps, seed=seed)
            result = {"seed": seed, "steps": steps, "elo": [round(e, 1) for e in log.elos]}
            if "ppo" in config:
                result["wins_against_random"] = wins_against_random(policy)
            result["seconds"] = round(time.perf_counter() - start, 1)
            results.append(result)
            print(json.dumps({config: result}), file=sys.stderr, flush=True)
        out[config] = results
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
