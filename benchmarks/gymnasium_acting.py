"""Acting throughput on a Gymnasium environment: actions per second of one worker stepping
``--copies`` copies of CartPole-v1 as one behavior, on one core, through the whole acting path
(the environment, the policy's batched inference, the AgentProcessor building trajectories).
Prints JSON.

The run is ``agents-learn`` with RL Zoo's CartPole PPO settings but a buffer larger than the run,
so no update ever happens: what it measures is sampling, as RLlib's env-runner figures do
(RLlib published 37.9k actions/s for CartPole at vector width 64 on one core). The figure is
the median of the summaries' ``Agent Steps/s`` after the first (which includes start-up).

    .venv/bin/python benchmarks/gymnasium_acting.py --copies 64 --steps 400000
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _cli_run import machine

REPO = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"Step: (\d+)\..*Agent Steps/s: (\d+(?:\.\d+)?)")


def acting_rate(copies: int, steps: int, summary: int) -> dict:
    config = (REPO / "config/gymnasium/ppo/CartPole.yaml").read_text()
    config = config.replace("buffer_size: 256", f"buffer_size: {steps * 2}")
    config = config.replace("max_steps: 100000", f"max_steps: {steps}")
    config = config.replace("summary_freq: 5000", f"summary_freq: {summary}")
    config = config.replace("time_horizon: 32", "time_horizon: 64")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "acting.yaml"
        path.write_text(config)
        command = [sys.executable, "-m", "orchestration.cli", str(path), "--run-id=acting", "--seed=1"]
        command += [f"--envs-per-worker={copies}", "--results-dir", str(Path(folder) / "results")]
        result = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO)
    rates = [float(rate) for _, rate in SUMMARY.findall(result.stdout + result.stderr)]
    return {
        "copies": copies,
        "steps": steps,
        "summaries": len(rates),
        "actions_per_s": round(statistics.median(rates[1:] or rates)),
        "every_summary": rates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--steps", type=int, default=400_000)
    args = parser.parse_args()
    results = [acting_rate(copies, args.steps, args.steps // 8) for copies in args.copies]
    report = {"benchmark": "gymnasium_acting", "env": "CartPole-v1", "machine": machine(), "results": results}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
