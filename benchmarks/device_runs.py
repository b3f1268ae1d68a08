"""Whole runs on each device: ``agents-learn`` on four of this repository's configs (PPO 3DBall,
PPO GridWorld, SAC 3DBall, POCA DungeonEscape, built-in environments), once with
``--torch-device cpu`` and once with no device flag (the ``auto`` choice), cut to a few updates.

Per config and device: the run's wall time, agent steps per second, and what the run's log says
about where each behavior trains (the ``auto`` choice names both timings). Prints one JSON
object. On a machine without a GPU both runs train on the CPU; the figure that matters is on a
GPU machine: ``auto`` should never be slower than the CPU run.

    python benchmarks/device_runs.py [--scale 1.0] [--only ppo/3DBall]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

# config -> agent steps per run: a few updates each (PPO: 3DBall's buffer is 12k samples)
RUNS = {
    "ppo/3DBall": 36_000,
    "ppo/GridWorld": 20_000,
    "sac/3DBall": 12_000,
    "poca/DungeonEscape": 30_000,
}


def cut_config(config: str, steps: int, folder: Path) -> Path:
    options = yaml.safe_load((REPO / "config" / f"{config}.yaml").read_text())
    for behavior in options["behaviors"].values():
        behavior["max_steps"] = steps
        behavior["summary_freq"] = max(1000, steps // 4)
        behavior["checkpoint_interval"] = 10 * steps
    path = folder / (config.replace("/", "_") + ".yaml")
    path.write_text(yaml.safe_dump(options))
    return path


def run(config_path: Path, device: str | None, folder: Path) -> dict:
    command = [sys.executable, "-m", "orchestration.cli", str(config_path), "--seed", "1", "--force"]
    command += ["--run-id", f"{config_path.stem}-{device or 'auto'}", "--results-dir", str(folder)]
    if device:
        command += ["--torch-device", device]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    log = done.stdout + done.stderr
    return {
        "rc": done.returncode,
        "wall_s": round(wall, 1),
        "trains_on": [m.strip() for m in re.findall(r"\S+ trains? on [^\n]*", log)],
        "tail": log[-600:] if done.returncode else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0, help="multiply each run's steps")
    parser.add_argument("--only", action="append", help="configs to run (default: all four)")
    args = parser.parse_args()
    results: dict[str, object] = {"benchmark": "device_runs", "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for config, steps in RUNS.items():
            if args.only and config not in args.only:
                continue
            steps = int(steps * args.scale)
            path = cut_config(config, steps, folder)
            per_device = {}
            for device in ("cpu", None):
                outcome = run(path, device, folder)
                outcome["agent_steps_per_s"] = round(steps / outcome["wall_s"], 1)
                per_device[device or "auto"] = outcome
                print(config, device or "auto", json.dumps(outcome), file=sys.stderr, flush=True)
            per_device["auto_over_cpu_speed"] = round(per_device["cpu"]["wall_s"] / per_device["auto"]["wall_s"], 2)
            results["runs"][config] = {"steps": steps, **per_device}  # type: ignore[index]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
