"""Policy inference speed with ML-Agents' 3DBall settings (8-float observation, 2 continuous
actions, 2 x 128 hidden, normalize): actions per second through ``TorchPolicy.act`` for
1, 16 and 256 agents per call, with 1 torch thread and with torch's default thread count
(unless ``--threads`` picks one). ``--actions hybrid`` adds two discrete branches (3 and 2
actions) to the continuous pair, so the discrete draw is measured too. Prints one JSON object.

    .venv/bin/python benchmarks/policy_inference.py [--seconds 1.0] [--threads N] [--actions hybrid]

On a loaded 2-core machine torch's default (2 OpenMP threads) makes small batches 20-40x
slower than 1 thread: inference on a few agents wants ``torch.set_num_threads(1)``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from trainers.networks.policy import TorchPolicy
from trainers.settings import NetworkSettings

ACTIONS = {"continuous": ActionSpec(2, ()), "hybrid": ActionSpec(2, (3, 2))}


def measure(policy: TorchPolicy, agents: int, seconds: float) -> dict[str, float]:
    """Calls ``act`` on ``agents`` rows repeatedly for about ``seconds``."""
    rng = np.random.default_rng(0)
    obs = [rng.normal(size=(agents, 8)).astype(np.float32)]
    ids = np.arange(agents, dtype=np.int32)
    for _ in range(20):  # warm-up
        policy.act(obs, None, ids)
    calls = 0
    start = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds:
        for _ in range(50):
            policy.act(obs, None, ids)
        calls += 50
        elapsed = time.perf_counter() - start
    return {
        "agents": agents,
        "calls": calls,
        "us_per_call": round(elapsed / calls * 1e6, 1),
        "actions_per_s": round(calls * agents / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per batch size")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads for the run (default: 1, then torch's default)"
    )
    parser.add_argument("--actions", choices=sorted(ACTIONS), default="continuous", help="the action spec")
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    thread_counts = [args.threads] if args.threads is not None else sorted({1, default_threads})
    spec = BehaviorSpec(
        [ObservationSpec((8,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")],
        ACTIONS[args.actions],
    )
    policy = TorchPolicy(spec, NetworkSettings(normalize=True, hidden_units=128, num_layers=2), seed=0)
    policy.update_normalization([np.random.default_rng(1).normal(size=(1000, 8)).astype(np.float32)])
    results = []
    for threads in thread_counts:
        torch.set_num_threads(threads)
        results += [{"torch_threads": threads, **measure(policy, n, args.seconds)} for n in (1, 16, 256)]
    torch.set_num_threads(default_threads)
    print(
        json.dumps(
            {
                "benchmark": "policy_inference",
                "settings": "3DBall's network: obs 8 floats, 2x128 hidden, normalize",
                "actions": args.actions,
                "torch": torch.__version__,
                "default_torch_threads": default_threads,
                "machine": platform.machine(),
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
