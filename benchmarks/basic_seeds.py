"""Basic over many seeds: how often PPO sticks at the small goal, ours (``agents-learn``) against
ML-Agents 0.28's own trainer (``mlagents-learn`` through ``_mlagents_builtin_learn.py``), both on
our built-in Basic with ML-Agents' ``config/ppo/Basic.yaml`` (``shared/mlagents-configs``: batch 32,
buffer 256, 1 layer of 20, gamma 0.9, time_horizon 3) and ``max_steps`` 40000, the same YAML
file for both. Prints JSON. Not part of CI: it needs the scratch ML-Agents venv and minutes per run.

A run's result is its last console summary's mean reward (every 2000 steps). A run that sticks
walks to the small goal (0.1 - 3 x 0.01 = 0.07 per episode); one that learns the task scores 0.93.
``failed`` is a final mean reward below 0.5. The seed numbers do not draw the same random numbers
in the two trainers, so what compares is the failure rate over many seeds, not seed by seed.

``--stop-when-solved`` (on by default; ``--no-stop-when-solved`` runs every run to 40000 steps)
stops a run at its first summary at or above 0.75 (most episodes end at the large goal): such a
run counts as learned, its ``final`` is that summary and its ``stopped_at`` the step. A run that
sticks never gets there (our seed 2093: 0.016 at 8000 steps, 0.066 at 12000, 0.070 from 18000
on) and goes on to 40000 steps. ML-Agents' seed 2093, run to 40000 steps, went from 0.785
(8000) through 0.898 (10000) to 0.930 without dipping.

Runs go one at a time, each trainer with one torch thread (``OMP_NUM_THREADS=1``; ML-Agents
itself picks 1 torch thread on 2 cores). A run is stopped with SIGINT to its process group, as
``mlagents_3dball_side_by_side.py`` does. The ML-Agents side is skipped, with a note in the
JSON, when its interpreter (``--mlagents-python``, the venv ``mlagents_sac_anchor.py`` describes,
at /tmp/mla) is missing. ``--out FILE`` rewrites the JSON there after every run;
``--budget-minutes`` starts no run after that many minutes (the JSON says which seeds ran).
``--keep FILE`` takes runs from an earlier output of this script: all runs of the trainers
not in ``--trainers`` (re-measure ours after a change without re-running ML-Agents), and for the
trainers in it the seeds already there (not run again; to go on after a stop).
``--in-process-env`` of ``_mlagents_builtin_learn.py`` steps ML-Agents' environment in its
trainer's process (its ``SimpleEnvManager``; the same trainer, processor and policy), a little
faster on busy cores; ``--mlagents-subprocess-env`` keeps ML-Agents' env worker process instead
(each ML-Agents run says which it had in ``env_manager``).

How to run (from the repository root; measured on 2 cores shared with a test suite, load 4-5:
a run stopped at 0.75 took 60-80 s of ours and 2-3 min of ML-Agents; to 40000 steps 1.5 and
4.5 min)::

    .venv/bin/python benchmarks/basic_seeds.py --seeds $(seq 1 30) 2093 2222 > /tmp/basic_seeds.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from mlagents_3dball_side_by_side import SUMMARY, stop  # this folder: the scripts run from it

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO.parent / "shared" / "mlagents-configs" / "ppo" / "Basic.yaml"
MAX_STEPS = 40_000
FAILED_BELOW = 0.5  # sticking at the small goal scores 0.07; the task's best is 0.93
SOLVED_AT = 0.75
TRAINERS = ("ours", "mlagents")


def write_config(folder: Path) -> Path:
    config = yaml.safe_load(CONFIG.read_text())
    config["behaviors"]["Basic"]["max_steps"] = MAX_STEPS
    path = folder / "Basic.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def command(trainer: str, config: Path, seed: int, port: int, mlagents_python: str, subprocess_env: bool) -> list[str]:
    common = [str(config), "--env=builtin:Basic", "--run-id=run", f"--seed={seed}", f"--base-port={port}"]
    if trainer == "ours":
        return [sys.executable, "-m", "orchestration.cli", *common, "--torch-device=cpu"]
    in_process = [] if subprocess_env else ["--in-process-env"]
    return [mlagents_python, str(REPO / "benchmarks" / "_mlagents_builtin_learn.py"), *common, *in_process]


def train(
    trainer: str, seed: int, stop_when_solved: bool, mlagents_python: str, port: int, subprocess_env: bool
) -> dict[str, Any]:
    """One run: its summaries [(step, mean reward)], final mean reward and whether it failed."""
    with tempfile.TemporaryDirectory(prefix=f"basic-{trainer}-{seed}-") as tmp:
        config = write_config(Path(tmp))
        environ = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        start = time.monotonic()
        process = subprocess.Popen(
            command(trainer, config, seed, port, mlagents_python, subprocess_env),
            cwd=tmp,  # results/ of both trainers land in the temporary folder
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert process.stdout is not None
        curve: list[tuple[int, float]] = []
        tail: list[str] = []
        stopped_at = None
        for line in process.stdout:
            tail = (tail + [line])[-20:]
            match = SUMMARY.search(line)
            if match:
                curve.append((int(match.group(1)), float(match.group(2))))
                if stop_when_solved and curve[-1][1] >= SOLVED_AT and stopped_at is None:
                    stopped_at = curve[-1][0]
                    stop(process)
                    break
        process.wait()
        seconds = round(time.monotonic() - start, 1)
    if stopped_at is not None:
        curve = [(step, reward) for step, reward in curve if step <= stopped_at]
    elif not curve or curve[-1][0] < MAX_STEPS:
        raise RuntimeError(f"{trainer} seed {seed} ended early (rc {process.returncode}):\n{''.join(tail)}")
    final = curve[-1][1]
    return {
        "seed": seed,
        "final": final,
        "failed": final < FAILED_BELOW,
        "stopped_at": stopped_at,
        "seconds": seconds,
        "curve": curve,
    }


def tally(runs: list[dict[str, Any]]) -> dict[str, Any]:
    failures = [run["seed"] for run in runs if run["failed"]]
    return {
        "seeds": len(runs),
        "failures": len(failures),
        "failure_rate": round(len(failures) / len(runs), 3) if runs else None,
        "failed_seeds": failures,
        "mean_seconds": round(sum(run["seconds"] for run in runs) / len(runs), 1) if runs else None,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[*range(1, 31), 2093, 2222])
    parser.add_argument("--trainers", choices=TRAINERS, nargs="+", default=list(TRAINERS))
    parser.add_argument("--stop-when-solved", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--mlagents-python", default="/tmp/mla/bin/python")
    parser.add_argument("--keep", type=Path, help="an earlier output whose runs are taken, not run again")
    parser.add_argument("--mlagents-subprocess-env", action="store_true", help="ML-Agents' env worker process")
    parser.add_argument("--base-port", type=int, default=5205)
    parser.add_argument("--out", type=Path, help="rewrite the JSON here after every run")
    parser.add_argument("--budget-minutes", type=float, help="start no run after this many minutes")
    args = parser.parse_args()
    deadline = time.monotonic() + 60 * args.budget_minutes if args.budget_minutes else None
    results: dict[str, Any] = {
        "config": "shared/mlagents-configs/ppo/Basic.yaml with max_steps 40000",
        "failed_below": FAILED_BELOW,
        "stop_when_solved": SOLVED_AT if args.stop_when_solved else None,
    }
    kept: dict[str, dict[int, dict[str, Any]]] = {}
    if args.keep is not None:
        earlier = json.loads(args.keep.read_text())
        results.update({t: earlier[t] for t in TRAINERS if t not in args.trainers and t in earlier})
        kept = {t: {run["seed"]: run for run in earlier[t].get("runs", [])} for t in args.trainers if t in earlier}
    for trainer in args.trainers:
        if trainer == "mlagents" and not Path(args.mlagents_python).exists():
            results[trainer] = {"skipped": f"no ML-Agents interpreter at {args.mlagents_python}"}
            continue
        runs: list[dict[str, Any]] = []
        for i, seed in enumerate(args.seeds):
            if deadline is not None and time.monotonic() > deadline:
                results[trainer] = {**tally(runs), "budget_left_out": args.seeds[i:]}
                break
            run = kept.get(trainer, {}).get(seed)
            if run is not None:
                runs.append(run)
                continue
            port = args.base_port + i
            run = train(trainer, seed, args.stop_when_solved, args.mlagents_python, port, args.mlagents_subprocess_env)
            if trainer == "mlagents":
                run["env_manager"] = "subprocess" if args.mlagents_subprocess_env else "in-process"
            runs.append(run)
            print(
                f"{trainer} seed {seed}: final {run['final']} failed {run['failed']} "
                f"stopped_at {run['stopped_at']} ({run['seconds']} s)",
                file=sys.stderr,
                flush=True,
            )
            results[trainer] = tally(runs)
            if args.out is not None:
                args.out.write_text(json.dumps(results) + "\n")
        else:
            results[trainer] = tally(runs)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
