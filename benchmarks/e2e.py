"""End-to-end training throughput: built-in 3DBall and the stand-in Unity build (balance scene,
12 agents), 1 and 2 workers, PPO updates included (config/ppo/3DBall.yaml hyperparameters).

Prints one JSON document: per case env steps/s (worker steps), agent steps/s (trainer steps),
and where the main thread's wall time went (env wait, inference, processing) plus the time
spent in policy updates, in seconds and as a share of the wall time.

    .venv/bin/python benchmarks/e2e.py [--steps 36000] [--threaded]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def make_perf():
    from stats import PerfStats

    class TotalPerf(PerfStats):
        """PerfStats that also keeps run totals per kind (the controller resets windows)."""

        def __init__(self):
            super().__init__()
            self.totals: dict = {}
            self._total_lock = threading.Lock()

        def add(self, kind, seconds):
            super().add(kind, seconds)
            with self._total_lock:
                self.totals[kind.name] = self.totals.get(kind.name, 0.0) + seconds

    return TotalPerf()


def measure(env_path: str, num_envs: int, steps: int, threaded: bool, folder: str) -> dict:
    from orchestration.run import build_run
    from trainers.settings import load_run_options

    options = load_run_options(REPO / "config/ppo/3DBall.yaml")
    settings = attrs.evolve(
        options.behaviors["3DBall"], max_steps=steps, threaded=threaded, checkpoint_interval=10 * steps
    )
    name = "3DBall" if env_path.startswith("builtin:") else "Balance"
    options = attrs.evolve(
        options,
        behaviors={name: settings},
        env_settings=attrs.evolve(
            options.env_settings,
            env_path=env_path,
            seed=1,
            num_envs=num_envs,
            base_port=0 if num_envs == 1 else 6300,
            timeout_wait=60,
        ),
        checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=folder, run_id=f"{name}-{num_envs}-{threaded}"
        ),
    )
    run = build_run(options, console=False)
    perf = make_perf()
    run.controller.perf = run.env_manager.perf = perf  # totals per kind, not just windows
    controller, manager = run.controller, run.env_manager
    manager.start()
    while not manager.runtimes:  # start-up (process spawn, build launch) is not counted
        manager.advance(timeout=1.0)
    start_env, start_agents = manager.env_steps, controller.trainers[name].step
    start = time.perf_counter()
    perf.totals.clear()
    run.run()
    wall = time.perf_counter() - start
    trainer_steps = controller.trainers[name].step - start_agents
    split = {kind.lower(): round(seconds, 3) for kind, seconds in perf.totals.items()}
    return {
        "env": env_path if env_path.startswith("builtin:") else "stand-in build (balance)",
        "workers": num_envs,
        "threaded_trainer": threaded,
        "wall_s": round(wall, 2),
        "env_steps_per_s": round((manager.env_steps - start_env) / wall, 1),
        "agent_steps_per_s": round(trainer_steps / wall, 1),
        "seconds": split,
        "share_of_wall": {k: round(v / wall, 3) for k, v in split.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=36_000, help="trainer steps per case (3 PPO updates)")
    parser.add_argument("--threaded", action="store_true", help="also measure with the trainer in its own thread")
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.WARNING)
    from tests.support.standin import write_launcher

    results = []
    with tempfile.TemporaryDirectory() as folder:
        standin = write_launcher(folder)
        for threaded in (False, True) if args.threaded else (False,):
            for env_path in ("builtin:3DBall", standin):
                for workers in (1, 2):
                    results.append(measure(env_path, workers, args.steps, threaded, folder))
    print(
        json.dumps(
            {
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "steps_per_case": args.steps,
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
