"""3DBall side by side: ML-Agents 0.28's own trainer (``mlagents-learn``) and ours (``agents-learn``)
on the same environment, config and seeds; how soon each reaches 100 and the cap, and whether it
stays there. Prints JSON. Not part of CI: it needs a scratch ML-Agents venv and about half an
hour per environment for six seeds.

Environments (``--env``, both by default):

- ``builtin``: our built-in 3DBall (12 agents, 1000 decisions per episode, cap 100). Ours runs
  ``--env builtin:3DBall``; ML-Agents runs through ``_mlagents_builtin_learn.py``, which gives
  ``mlagents-learn`` a factory of the same environment (its own env workers, processors and
  trainers; only the Unity launch is replaced).
- ``standin``: the stand-in Unity build's ``balance`` scene (``tests/support/standin.py``: 12
  agents, decision period 5, 0.1 per academy step, ``--max-step 5000``, so the cap is 500 as a
  Unity 3DBall build's), reached through the Unity protocol by both trainers with ``--env``.

The config is ML-Agents' ``config/ppo/3DBall.yaml`` verbatim (``shared/mlagents-configs``; the
behavior renamed ``Balance`` for the stand-in) with ``summary_freq`` 6000. ``max_steps`` stays
500000 (the learning rate decays linearly over it), and each run is stopped with SIGINT once its
summary at ``--stop-step`` is printed (SIGINT again, then SIGKILL, if it goes on); summaries past
the stop step are left out. The curves are the summaries' mean rewards read from each trainer's
console. Per run: ``to_100`` (first summary >= 99.9), ``to_cap`` (first summary >= 98% of the
cap; on the built-in 3DBall, whose cap is 100, it can come before ``to_100``), ``held`` (the
share of the summaries after ``to_cap`` that are >= 98% of the cap; ML-Agents and we both skip a
summary in which no episode ended), ``late_mean`` and ``late_at_cap`` (the mean summary, and the
share at the cap, from the environment's late step on: 108k built-in, 120k stand-in; the same
window for every run, so a run that reaches the cap late is not spared its climb) and ``last``.
A run that never reaches a mark counts as ``--stop-step`` plus one summary in the means.

``--ours KEY=VALUE`` (repeatable) sets a key of our behavior's settings (dotted, for example
``hyperparameters.batch_size=128``) to compare an option against the defaults.

How to run (the ML-Agents venv as ``benchmarks/mlagents_sac_anchor.py`` describes, at /tmp/mla)::

    .venv/bin/python benchmarks/mlagents_3dball_side_by_side.py --env standin --seeds 1 2 3 4 5 6

Two runs go at a time (``--jobs``), each trainer with one torch thread: on 2 cores, about 2 minutes
per ML-Agents run and 40 s per run of ours to 180k steps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.paths import MLAGENTS_CONFIGS  # noqa: E402
from tests.support.standin import write_launcher  # noqa: E402

SUMMARY = re.compile(r"\. Step: (\d+)\. Time Elapsed: [\d.]+ s\. Mean Reward: (-?\d+(?:\.\d+)?)")
CAP_SHARE = 0.98
HUNDRED = 99.9  # "reached 100": summed floats land just below it
STOP_ATTEMPTS, STOP_WAIT_S = 3, 20.0


@dataclass(frozen=True)
class Environment:
    name: str
    behavior: str
    cap: float
    stop_step: int
    late_from: int  # the "late" window, from here to stop_step: is the cap held?


ENVIRONMENTS = {
    "builtin": Environment("builtin", "3DBall", 100.0, 150_000, 108_000),
    "standin": Environment("standin", "Balance", 500.0, 180_000, 120_000),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def set_dotted(settings: dict[str, Any], assignment: str) -> None:
    key, _, raw = assignment.partition("=")
    *path, last = key.split(".")
    node = settings
    for part in path:
        node = node.setdefault(part, {})
    node[last] = yaml.safe_load(raw)


def write_config(folder: Path, env: Environment, overrides: list[str]) -> Path:
    config = yaml.safe_load((MLAGENTS_CONFIGS / "ppo" / "3DBall.yaml").read_text())
    behavior = config["behaviors"].pop("3DBall")
    behavior["summary_freq"] = 6000
    for assignment in overrides:
        set_dotted(behavior, assignment)
    config["behaviors"] = {env.behavior: behavior}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def command(trainer: str, env: Environment, config: Path, launcher: str, seed: int, mlagents_python: str) -> list[str]:
    env_arg = "builtin:3DBall" if env.name == "builtin" else launcher
    common = [str(config), f"--env={env_arg}", "--run-id=run", f"--seed={seed}", f"--base-port={free_port()}"]
    if trainer == "ours":
        return [sys.executable, "-m", "orchestration.cli", *common, "--torch-device=cpu"]
    if env.name == "builtin":
        return [mlagents_python, str(REPO / "benchmarks" / "_mlagents_builtin_learn.py"), *common]
    return [mlagents_python, "-m", "mlagents.trainers.learn", *common, "--no-graphics"]


def train(trainer: str, env: Environment, seed: int, overrides: list[str], mlagents_python: str) -> dict[str, Any]:
    """One run, stopped after its summary at ``env.stop_step``: its curve and marks."""
    with tempfile.TemporaryDirectory(prefix=f"sbs-{trainer}-{env.name}-") as tmp:
        folder = Path(tmp)
        config = write_config(folder, env, overrides if trainer == "ours" else [])
        launcher = write_launcher(tmp, scene="balance", python=sys.executable, extra_args=["--max-step", "5000"])
        environ = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        start = time.monotonic()
        process = subprocess.Popen(
            command(trainer, env, config, launcher, seed, mlagents_python),
            cwd=tmp,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # stopped as a terminal's Ctrl-C stops it: the whole group
        )
        curve: list[tuple[int, float]] = []
        tail: list[str] = []
        assert process.stdout is not None
        stopping: threading.Thread | None = None
        for line in process.stdout:
            tail = (tail + [line])[-20:]
            match = SUMMARY.search(line)
            if match:
                curve.append((int(match.group(1)), float(match.group(2))))
                if curve[-1][0] >= env.stop_step and stopping is None:
                    stopping = threading.Thread(target=stop, args=(process,), daemon=True)
                    stopping.start()
        process.wait()
        curve = [(step, reward) for step, reward in curve if step <= env.stop_step]
        if not curve or curve[-1][0] < env.stop_step:
            raise RuntimeError(f"{trainer} {env.name} seed {seed} stopped early:\n{''.join(tail)}")
        return {"seed": seed, "seconds": round(time.monotonic() - start, 1), **marks(curve, env), "curve": curve}


def stop(process: subprocess.Popen[str]) -> None:
    """SIGINT to the trainer's process group, as Ctrl-C in a terminal (the trainer saves and
    exits; ML-Agents' env workers, which share its output, exit with it), repeated, then
    SIGKILL. SIGINT to ML-Agents' main process alone left its env worker running and holding
    the output open, and once let a run go on to ``max_steps``."""
    for _ in range(STOP_ATTEMPTS):
        try:
            os.killpg(process.pid, signal.SIGINT)
        except ProcessLookupError:
            return
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            continue
        break
    try:  # whatever is left of the group (the trainer's own children)
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def marks(curve: list[tuple[int, float]], env: Environment) -> dict[str, Any]:
    cap = CAP_SHARE * env.cap
    to_100 = next((step for step, reward in curve if reward >= HUNDRED), None)
    to_cap = next((i for i, (_, reward) in enumerate(curve) if reward >= cap), None)
    after = curve[to_cap:] if to_cap is not None else []
    late = [reward for step, reward in curve if step >= env.late_from]
    return {
        "to_100": to_100,
        "to_cap": curve[to_cap][0] if to_cap is not None else None,
        "held": round(sum(reward >= cap for _, reward in after) / len(after), 2) if after else None,
        "late_mean": round(sum(late) / len(late), 1),
        "late_at_cap": round(sum(reward >= cap for reward in late) / len(late), 2),
        "last": curve[-1][1],
    }


def summary(runs: list[dict[str, Any]], env: Environment) -> dict[str, Any]:
    missing = env.stop_step + 6000

    def mean(key: str) -> float:
        return round(sum(run[key] if run[key] is not None else missing for run in runs) / len(runs))

    return {
        "mean_to_100": mean("to_100"),
        "mean_to_cap": mean("to_cap"),
        "reached_cap": sum(run["to_cap"] is not None for run in runs),
        "mean_held": round(sum(run["held"] or 0.0 for run in runs) / len(runs), 2),
        "mean_late": round(sum(run["late_mean"] for run in runs) / len(runs), 1),
        "mean_late_at_cap": round(sum(run["late_at_cap"] for run in runs) / len(runs), 2),
        "mean_last": round(sum(run["last"] for run in runs) / len(runs), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=sorted(ENVIRONMENTS), nargs="+", default=["builtin", "standin"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    parser.add_argument("--trainers", choices=["ours", "mlagents"], nargs="+", default=["ours", "mlagents"])
    parser.add_argument("--ours", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--stop-step", type=int, help="override each environment's stop step")
    parser.add_argument("--mlagents-python", default="/tmp/mla/bin/python")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, Any] = {"ours_overrides": args.ours, "cap_share": CAP_SHARE}
    for name in args.env:
        env = ENVIRONMENTS[name]
        if args.stop_step:
            env = replace(env, stop_step=args.stop_step, late_from=min(env.late_from, args.stop_step))
        jobs = [(trainer, seed) for seed in args.seeds for trainer in args.trainers]
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = [
                pool.submit(train, trainer, env, seed, args.ours, args.mlagents_python) for trainer, seed in jobs
            ]
            done = [future.result() for future in futures]
        per_trainer: dict[str, Any] = {}
        for trainer in args.trainers:
            runs = [run for (t, _), run in zip(jobs, done) if t == trainer]
            per_trainer[trainer] = {**summary(runs, env), "runs": runs}
            for run in runs:
                print(
                    f"{name} {trainer} seed {run['seed']}: to_100 {run['to_100']} to_cap {run['to_cap']} "
                    f"held {run['held']} late {run['late_mean']} ({run['late_at_cap']} at cap) "
                    f"last {run['last']} ({run['seconds']} s)",
                    file=sys.stderr,
                )
        results[name] = {"cap": env.cap, "stop_step": env.stop_step, **per_trainer}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
