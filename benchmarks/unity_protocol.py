"""Throughput of the Unity connection: stock mlagents-envs (protobuf 3.20) against ours.

Prints JSON: env steps/s (exchanges with the build) and agent steps/s (decision + terminal
steps received) with random actions, for the 12-agent balance scene and the visual scene
(84x84 PNG camera + 42x42 raw camera), through the stand-in build. The stock figures run in a
virtualenv with protobuf 3.20.3 that this script creates under the cache dir
(``$AGENTS_LEARN_CACHE`` or ``~/.cache/agents-learn``); the stand-in build itself always
runs on this interpreter, so only the trainer side differs.

    python benchmarks/unity_protocol.py [--steps 2000] [--cache-dir DIR] [--skip-stock]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENES = {
    "balance12": ["--scene", "balance", "--agents", "12"],
    "visual": ["--scene", "visual", "--image-size", "84"],
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(flavour: str, launcher: str, steps: int, warmup: int) -> dict:
    """Run ``steps`` env steps with random actions; returns rates. Runs in either venv."""
    import numpy as np

    if flavour == "ours":
        sys.path.insert(0, REPO)
        from envs.unity import UnityEnvironment
        from envs.unity.protocol import protobuf_backend

        backend = protobuf_backend()
        kwargs = {"base_port": 0}
    else:
        from google.protobuf.internal import api_implementation
        from mlagents_envs.environment import UnityEnvironment

        backend = api_implementation.Type()
        kwargs = {"base_port": _free_port()}
    import google.protobuf
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    np.random.seed(0)
    env = UnityEnvironment(
        file_name=launcher, timeout_wait=60, no_graphics=True, side_channels=[StatsSideChannel()], **kwargs
    )
    try:
        env.reset()
        agent_steps = 0
        start = 0.0
        for i in range(warmup + steps):
            if i == warmup:
                start = time.perf_counter()
                agent_steps = 0
            for name, spec in env.behavior_specs.items():
                decision, terminal = env.get_steps(name)
                agent_steps += len(decision) + len(terminal)
                env.set_actions(name, spec.action_spec.random_action(len(decision)))
            env.step()
        elapsed = time.perf_counter() - start
    finally:
        env.close()
    return {
        "protobuf": google.protobuf.__version__,
        "backend": backend,
        "env_steps_per_s": round(steps / elapsed, 1),
        "agent_steps_per_s": round(agent_steps / elapsed, 1),
        "steps": steps,
        "seconds": round(elapsed, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--skip-stock", action="store_true")
    parser.add_argument("--measure", choices=("ours", "stock"), help=argparse.SUPPRESS)
    parser.add_argument("--launcher", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # worker mode, possibly inside the stock venv
        print(json.dumps(measure(args.measure, args.launcher, args.steps, args.warmup)))
        return

    sys.path.insert(0, REPO)
    from envs.unity.stock_venv import ensure_stock_venv
    from tests.support.standin import write_launcher

    stock_python = None
    if not args.skip_stock:
        stock_python = ensure_stock_venv(
            args.cache_dir, runtime=True, constraints_file=os.path.join(REPO, "constraints.txt")
        )
    results: dict = {"benchmark": "unity_protocol", "python": sys.version.split()[0], "scenes": {}}
    with tempfile.TemporaryDirectory() as folder:
        for scene, scene_args in SCENES.items():
            launcher = write_launcher(folder, name=f"{scene}.x86_64", extra_args=scene_args)
            entry = {}
            runs = [("ours", sys.executable)] + ([("stock", stock_python)] if stock_python else [])
            for flavour, python in runs:
                out = subprocess.run(
                    [
                        python,
                        os.path.abspath(__file__),
                        "--measure",
                        flavour,
                        "--launcher",
                        launcher,
                        "--steps",
                        str(args.steps),
                        "--warmup",
                        str(args.warmup),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                    cwd=folder,
                )
                entry[flavour] = json.loads(out.stdout.strip().splitlines()[-1])
            if "stock" in entry:
                entry["speedup_env_steps"] = round(
                    entry["ours"]["env_steps_per_s"] / entry["stock"]["env_steps_per_s"], 2
                )
            results["scenes"][scene] = entry
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
