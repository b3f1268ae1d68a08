"""POCA (one cooperative group) against PPO (one shared policy) on PettingZoo's simple_spread_v3,
per seed, through the CLI. Prints JSON (and writes it to ``--out`` after every run).

Configs: ``config/gymnasium/poca/SimpleSpread.yaml`` and ``config/gymnasium/ppo/SimpleSpread.yaml``,
equal in every key but ``trainer_type``. Per algorithm and seed: train with the CLI in a subprocess
(``python -m orchestration.cli <config> --run-id=ss --seed=S --results-dir=<tmp>``,
``OMP_NUM_THREADS=1``; ``--max-steps`` writes a copy of the YAML with ``max_steps`` changed, for
quick checks) and read its console summary lines (every ``summary_freq`` agent steps).

The measure (``return``): the mean over agents of each agent's whole-episode sum of the
environment's own rewards for it (simple_spread: 25 steps an episode).
- PPO: no group; each agent's rows carry exactly the environment's reward for it
  (``envs/pettingzoo/episodes.py``, ``EpisodeBook.credit``), so its ``Environment/Cumulative
  Reward`` is its episode return, and the console's ``Mean Reward`` (the mean of those over the
  episodes ended in the summary window, all agents pooled) is the measure.
- POCA: every agent is in one group; its own rows carry 0 (``Mean Reward: 0.000``) and each step's
  group reward is the mean of the agents' rewards, so the group's episode return (``Environment/
  Group Cumulative Reward``, written once per agent with the same value; the console's ``Mean
  Group Reward``) is the sum over steps of the mean over agents = the mean over agents of the sums.
simple_spread's reward for agent i (``local_ratio`` 0.5) is half the shared landmark term (minus
the sum over landmarks of the nearest agent's distance) plus half minus i's collisions with the
others, so PPO's agents each maximise their own (mostly shared) return, POCA's group the mean; the
measure is the latter for both.

Per run: ``curve`` [(step, return)] (windows with no finished episode are left out), ``final``
(the last summary's), ``best`` (the highest summary), ``tail_mean`` (the mean of the summaries of
the last 100k steps: a window holds a few hundred episodes, so ``final`` moves by a few tenths
from one to the next), ``wall_s`` (the subprocess, start to exit), ``steps`` (the last summary's
agent steps; three agents, so env steps are a third) and ``steps_per_s`` (steps / wall_s). Per
algorithm (``summary``): the finals' mean, sample standard deviation, min and max, and the means
of the bests and tail means. Runs go seed by seed, POCA then PPO, so an interrupted benchmark has
about as many runs of each.

How to run (from the repository root; one training at a time, single-threaded)::

    .venv/bin/python benchmarks/simple_spread.py --out benchmarks/simple_spread.json
    .venv/bin/python benchmarks/simple_spread.py --seeds 1 --max-steps 20000 --out /tmp/ss.json
    .venv/bin/python benchmarks/simple_spread.py --keep benchmarks/simple_spread.json --out benchmarks/simple_spread.json

``--keep``: an earlier output whose runs (same algorithm, seed and max_steps) are reused instead of
trained again, so an interrupted benchmark resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _cli_run import run_cli, with_max_steps

REPO = Path(__file__).resolve().parents[1]

CONFIGS = {
    "poca": REPO / "config/gymnasium/poca/SimpleSpread.yaml",
    "ppo": REPO / "config/gymnasium/ppo/SimpleSpread.yaml",
}
BEHAVIOR = "agent"
#: The final stretch of training averaged in ``tail_mean`` (agent steps).
TAIL_STEPS = 100_000
NUMBER = r"(-?\d+(?:\.\d+)?)"
STEP = re.compile(rf"\b{BEHAVIOR}\. Step: (\d+)\. ")
REWARD = re.compile(rf"Mean Reward: {NUMBER}\.(?: Mean Group Reward: {NUMBER}\.)?")


def summary_value(algo: str, line: str) -> float | None:
    """The measure from one summary line: POCA's group return, PPO's agents' mean return; None
    when no episode ended in the window. A POCA line must show individual rewards of 0 (else
    the group return would not be the whole return)."""
    match = REWARD.search(line)
    if match is None:
        return None
    own, group = float(match.group(1)), match.group(2)
    if algo == "ppo":
        if group is not None:
            raise RuntimeError(f"PPO reported a group reward: {line.strip()}")
        return own
    if group is None or own != 0.0:
        raise RuntimeError(f"POCA line without group reward or with individual rewards: {line.strip()}")
    return float(group)


def train(algo: str, seed: int, max_steps: int | None) -> dict[str, Any]:
    """One training run of the CLI in a subprocess, as a user starts it, in a temporary results
    folder; its console gives the curve, the clock the wall time."""
    curve: list[tuple[int, float]] = []
    steps: list[int] = []
    last_lines: list[str] = []

    def read(line: str) -> None:
        if (match := STEP.search(line)) is None:
            return
        steps.append(int(match.group(1)))
        last_lines.append(line.strip())
        if (value := summary_value(algo, line)) is not None:
            curve.append((steps[-1], value))

    with tempfile.TemporaryDirectory(prefix="simple_spread_") as tmp:
        config = with_max_steps(CONFIGS[algo], max_steps, Path(tmp))
        run = run_cli(config, run_id="ss", seed=seed, results=Path(tmp) / "results", on_line=read)
    if not curve:
        raise RuntimeError(f"{algo} seed {seed}: no summary line with a return")
    return {
        "algo": algo,
        "seed": seed,
        "max_steps": max_steps,
        "command": run.command,
        "wall_s": run.wall_s,
        "steps": steps[-1],
        "steps_per_s": round(steps[-1] / run.wall_s, 1),
        "final": curve[-1][1],
        "final_step": curve[-1][0],
        "best": max(value for _, value in curve),
        "last_line": last_lines[-1],
        "curve": curve,
    }


def tail_mean(curve: list[tuple[int, float]]) -> float:
    """The mean of the summaries of the last ``TAIL_STEPS`` steps: one summary window holds a few
    hundred episodes, so ``final`` alone moves by a few tenths from window to window."""
    last = curve[-1][0]
    values = [value for step, value in curve if step > last - TAIL_STEPS]
    return round(statistics.fmean(values), 3)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per algorithm: how the final returns spread over seeds (and the mean best)."""
    out: dict[str, Any] = {}
    for algo in CONFIGS:
        mine = [run for run in runs if run["algo"] == algo]
        if not mine:
            continue
        finals = [run["final"] for run in mine]
        out[algo] = {
            "seeds": [run["seed"] for run in mine],
            "final_mean": round(statistics.fmean(finals), 3),
            "final_std": round(statistics.stdev(finals), 3) if len(finals) > 1 else None,
            "final_min": min(finals),
            "final_max": max(finals),
            "best_mean": round(statistics.fmean(run["best"] for run in mine), 3),
            "tail_mean": round(statistics.fmean(run["tail_mean"] for run in mine), 3),
            "wall_s_mean": round(statistics.fmean(run["wall_s"] for run in mine), 1),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--algos", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--max-steps", type=int, default=None, help="override max_steps (a copy of the YAML)")
    parser.add_argument("--out", type=Path, default=None, help="JSON file, rewritten after every run")
    parser.add_argument("--keep", type=Path, default=None, help="earlier output whose matching runs are reused")
    args = parser.parse_args()

    kept: dict[tuple[str, int, int | None], dict[str, Any]] = {}
    if args.keep is not None and args.keep.exists():
        for run in json.loads(args.keep.read_text())["runs"]:
            kept[(run["algo"], run["seed"], run["max_steps"])] = run
    runs: list[dict[str, Any]] = []
    result: dict[str, Any] = {}
    for seed in args.seeds:
        for algo in args.algos:
            run = kept.get((algo, seed, args.max_steps))
            if run is None:
                run = train(algo, seed, args.max_steps)
            run["tail_mean"] = tail_mean(run["curve"])
            runs.append(run)
            print(
                f"{algo} seed {seed}: final {run['final']:.3f} best {run['best']:.3f} tail {run['tail_mean']:.3f} "
                f"({run['steps']} steps, {run['wall_s']} s)",
                file=sys.stderr,
                flush=True,
            )
            result = {
                "env": "pettingzoo:mpe2.simple_spread_v3",
                "measure": "mean over agents of each agent's episode return (environment's own rewards)",
                "configs": {algo: str(path.relative_to(REPO)) for algo, path in CONFIGS.items()},
                "max_steps": args.max_steps,
                "summary": summarize(runs),
                "runs": runs,
            }
            if args.out is not None:
                args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
