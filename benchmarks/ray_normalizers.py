"""Does acting with stale observation normalisers slow learning on Ray runners? PPO on built-in
3DBall with ``config/ppo/3DBall.yaml`` (``normalize: true``), two workers, three ways:

- ``local``: the subprocess pool; the acting policy gets the trainer's normalisers after every
  trajectory (as ML-Agents acts);
- ``ray``: Ray env runners (a local cluster), sent the normalisers' statistics as the trainer
  publishes them, between its weights;
- ``ray_stale``: Ray env runners sent the normalisers only with each new policy (every
  ``buffer_size`` steps), as runners were before.

For each seed and way: the reward curve (summaries every 12k steps) and the first step at which
the mean reward passes 50 and 90. Prints one JSON document.

    .venv/bin/python benchmarks/ray_normalizers.py [--seeds 1 2 3] [--steps 120000]

About a minute a run on 2 cores; runs one after another.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
WAYS = ("local", "ray", "ray_stale")


def stale_load_policies(manager) -> None:
    """The Ray env manager's policy loading before it sent normaliser statistics alone."""
    import ray

    from trainers.networks.policy import newest_updates

    for behavior_id, runtime in manager.runtimes.items():
        weights, stats = newest_updates(runtime.manager.policy_queue.drain())
        if weights is not None:
            runtime.policy.load_weights(weights)
        if stats is not None:
            runtime.policy.load_normalizer_stats(stats)
        if weights is None:
            continue
        ref = ray.put(runtime.policy.get_weights())
        for runner in manager.runners.values():
            runner.actor.set_weights.remote(behavior_id, ref)


def first_step_above(curve: list[tuple[int, float]], level: float) -> int | None:
    return next((step for step, reward in curve if reward > level), None)


def run(way: str, seed: int, steps: int, results: str) -> dict:
    from orchestration.ray_env_manager import RayEnvManager
    from orchestration.run import build_run
    from tests.support.learning import RewardLog
    from trainers.settings import load_run_options

    options = load_run_options(str(REPO / "config/ppo/3DBall.yaml"))
    behaviors = {name: attrs.evolve(b, max_steps=steps) for name, b in options.behaviors.items()}
    env = attrs.evolve(options.env_settings, seed=seed, num_envs=2, ray_address=None if way == "local" else "local")
    cp = attrs.evolve(options.checkpoint_settings, results_dir=results, run_id=f"{way}-{seed}")
    options = attrs.evolve(options, behaviors=behaviors, env_settings=env, checkpoint_settings=cp)
    original = RayEnvManager._load_policies
    if way == "ray_stale":
        RayEnvManager._load_policies = stale_load_policies  # type: ignore[method-assign]
    log = RewardLog()
    start = time.perf_counter()
    try:
        build_run(options, writers=[log], console=False).run()
    finally:
        RayEnvManager._load_policies = original  # type: ignore[method-assign]
    return {
        "curve": [(step, round(reward, 2)) for step, reward in log.curve],
        "step_above_50": first_step_above(log.curve, 50.0),
        "step_above_90": first_step_above(log.curve, 90.0),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=120_000)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    runs: dict[str, dict[int, dict]] = {way: {} for way in args.ways}
    with tempfile.TemporaryDirectory() as results:
        for seed in args.seeds:
            for way in args.ways:
                runs[way][seed] = run(way, seed, args.steps, results)
                print(way, seed, runs[way][seed], file=sys.stderr, flush=True)
    summary = {}
    for way, by_seed in runs.items():
        reached = [r["step_above_50"] for r in by_seed.values()]
        summary[way] = {
            "step_above_50": reached,
            "step_above_90": [r["step_above_90"] for r in by_seed.values()],
            "final": [r["curve"][-1][1] if r["curve"] else None for r in by_seed.values()],
        }
    print(
        json.dumps(
            {
                "benchmark": "ray_normalizers",
                "steps": args.steps,
                "seeds": args.seeds,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "summary": summary,
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
