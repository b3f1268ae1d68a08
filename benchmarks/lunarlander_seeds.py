"""PPO on Gymnasium's LunarLander-v3 with RL Zoo's settings, per seed, through the CLI, measured
as RL Zoo measures it. Prints JSON (and writes it to ``--out`` after every run).

Variants: ``configuration`` (``config/gymnasium/ppo/LunarLander.yaml`` as it is: ML-Agents'
choices, advantages normalised over the update's buffer) and ``minibatch`` (the same with
``advantage_normalization: minibatch``, Stable-Baselines3's). Per variant and seed:

1. train, ``python -m orchestration.cli <config> --run-id=ll --seed=S --results-dir=<tmp>``
   (``OMP_NUM_THREADS=1``; ``--max-steps`` writes a copy with ``max_steps`` changed, for quick
   checks), reading the console's summaries (every 20k agent steps): ``curve`` [(step, mean
   return of the episodes that ended in the window)], with the policy's exploration noise;
2. evaluate, ``--inference --deterministic`` on the trained run for ``--eval-seconds``, stopped
   with Ctrl-C as a user stops it: ``evaluation``, the mean return it prints over the episodes it
   finished (16 copies, a few thousand episodes). RL Zoo's table (PPO LunarLander-v3: 242 +- 32 at
   1M steps, one run) is "the deterministic policy" over its ``eval_timesteps``, so this is the
   figure to set beside it; ``final`` (the last training summary) sits lower, as a stochastic
   policy's return does.

Per run also ``first_step_at_200`` (the first summary at or over 200, "solved"; null if none),
``wall_s`` (training subprocess, start to exit) and ``steps_per_s``. Runs go one at a time.

How to run (from the repository root)::

    .venv/bin/python benchmarks/lunarlander_seeds.py --seeds 1 2 3 4 5 --out benchmarks/lunarlander_seeds.json
    .venv/bin/python benchmarks/lunarlander_seeds.py --seeds 1 --variants configuration --max-steps 40000 --eval-seconds 5 --out /tmp/ll.json
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

from _cli_run import edited_copy, evaluate_cli, machine, run_cli, with_max_steps

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config/gymnasium/ppo/LunarLander.yaml"
BEHAVIOR = "LunarLander-v3"
SOLVED = 200.0
VARIANTS = {"configuration": None, "minibatch": "advantage_normalization: minibatch"}
SUMMARY = re.compile(rf"\b{BEHAVIOR}\. Step: (\d+)\. .*?Mean Reward: (-?\d+(?:\.\d+)?)\.")


def variant_config(variant: str, max_steps: int | None, folder: Path) -> Path:
    """The configuration, with the variant's key under ``hyperparameters`` and ``max_steps``."""
    config = with_max_steps(CONFIG, max_steps, folder)
    key = VARIANTS[variant]
    if key is None:
        return config
    return edited_copy(config, r"(\n    hyperparameters:\n)", rf"\g<1>      {key}\n", folder, f"{variant}.yaml")


def measure(variant: str, seed: int, max_steps: int | None, eval_seconds: float) -> dict[str, Any]:
    curve: list[tuple[int, float]] = []

    def read(line: str) -> None:
        if (match := SUMMARY.search(line)) is not None:
            curve.append((int(match.group(1)), float(match.group(2))))

    with tempfile.TemporaryDirectory(prefix="lunarlander_") as tmp:
        config = variant_config(variant, max_steps, Path(tmp))
        results = Path(tmp) / "results"
        run = run_cli(config, run_id="ll", seed=seed, results=results, on_line=read)
        evaluation = evaluate_cli(config, run_id="ll", results=results, behavior=BEHAVIOR, seconds=eval_seconds)
    if not curve:
        raise RuntimeError(f"{variant} seed {seed}: no summary line with a return")
    return {
        "variant": variant,
        "seed": seed,
        "max_steps": max_steps,
        "command": run.command,
        "wall_s": run.wall_s,
        "steps_per_s": round(curve[-1][0] / run.wall_s, 1),
        "final": curve[-1][1],
        "first_step_at_200": next((step for step, value in curve if value >= SOLVED), None),
        "evaluation": {"mean_return": evaluation.mean_return, "episodes": evaluation.episodes},
        "evaluation_command": evaluation.command,
        "curve": curve,
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per variant: the deterministic evaluations and training finals over seeds."""
    out: dict[str, Any] = {}
    for variant in VARIANTS:
        mine = [run for run in runs if run["variant"] == variant]
        if not mine:
            continue
        evaluations = [run["evaluation"]["mean_return"] for run in mine]
        finals = [run["final"] for run in mine]
        out[variant] = {
            "seeds": [run["seed"] for run in mine],
            "evaluation_mean": round(statistics.fmean(evaluations), 1),
            "evaluation_min": min(evaluations),
            "evaluations_at_200": sum(value >= SOLVED for value in evaluations),
            "final_mean": round(statistics.fmean(finals), 1),
            "finals_at_200": sum(value >= SOLVED for value in finals),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--variants", choices=list(VARIANTS), nargs="+", default=list(VARIANTS))
    parser.add_argument("--max-steps", type=int, default=None, help="a shorter run, for quick checks")
    parser.add_argument("--eval-seconds", type=float, default=45.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    for seed in args.seeds:
        for variant in args.variants:
            runs.append(measure(variant, seed, args.max_steps, args.eval_seconds))
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "curve"}), file=sys.stderr)
            settings = vars(args) | {"out": str(args.out)}
            result = {"machine": machine(), "settings": settings, "summary": summarize(runs), "runs": runs}
            if args.out is not None:
                args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
