"""Where agents-learn's time goes in ``e2e.py``'s run: the same run (stand-in balance scene, the
same config and flags) in this process under ``cProfile``, imports included, then the top
``--top`` functions by cumulative and by own time, and the run's ``run_logs/timers.json`` tree
(scopes of at least 0.5% of the run). The stand-in build is another process and is not
profiled; neither are trainer threads (``threaded`` is off in this config). cProfile slows
Python-heavy code, so compare shares, not seconds, with ``e2e.py``::

    .venv/bin/python benchmarks/e2e_profile.py [--steps 24000] [--step-sleep-ms 0] [--top 40]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from e2e import trainer_args, write_config  # this folder: the scripts run from it


def print_timers(node: dict[str, Any], name: str, root_total: float, depth: int = 0) -> None:
    """One line per scope: total and own seconds, count; children of at least 0.5% of the run."""
    print(f"{'  ' * depth}{name}: {node['total']:.2f} s total, {node['self']:.2f} s own, {node['count']} calls")
    for child_name, child in node.get("children", {}).items():
        if child["total"] >= 0.005 * root_total:
            print_timers(child, child_name, root_total, depth + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24_000, help="agent steps (max_steps)")
    parser.add_argument("--step-sleep-ms", type=float, default=0.0, help="the build's cost per academy step")
    parser.add_argument("--top", type=int, default=40, help="functions listed per order")
    args = parser.parse_args()
    from tests.support.standin import write_launcher

    with tempfile.TemporaryDirectory(prefix="e2e-profile-") as tmp:
        folder = Path(tmp)
        launcher = write_launcher(tmp, extra_args=["--step-sleep-ms", str(args.step_sleep_ms)])
        argv = trainer_args(write_config(folder, args.steps), launcher, folder / "results", "profile")

        def run() -> int:
            from orchestration.cli import main as agents_learn

            return agents_learn(argv)

        profile = cProfile.Profile()
        start = time.perf_counter()
        code = profile.runcall(run)
        wall = time.perf_counter() - start
        if code != 0:
            sys.exit(f"agents-learn exited {code}")
        timers = json.loads((folder / "results" / "profile" / "run_logs" / "timers.json").read_text())
    print(f"\nagents-learn under cProfile: {wall:.1f} s, {args.steps} steps, build step {args.step_sleep_ms:g} ms")
    for order in ("cumulative", "tottime"):
        print(f"\n=== top {args.top} by {order} ===")
        pstats.Stats(profile, stream=sys.stdout).sort_stats(order).print_stats(args.top)
    print("=== run_logs/timers.json ===")
    print_timers(timers, "root", timers["total"])


if __name__ == "__main__":
    main()
