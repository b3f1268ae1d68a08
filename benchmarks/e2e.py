"""Whole runs through the stand-in Unity build: the build alone (the floor), agents-learn and
mlagents-learn 0.28, each a whole process timed from outside, start-up and saving included.

The build is ``tests/support/standin.py``'s balance scene (12 agents, 8 floats, 2 continuous
actions, decision period 5), once per build step cost (``--step-sleep-ms``, 0 and 2 by default:
the stand-in sleeps that long in every academy step, as a real scene's physics takes time).
Per step cost and repeat, in this order:

- ``floor``: ``python benchmarks/e2e.py --floor LAUNCHER``: ``envs.unity.UnityEnvironment``
  opens the build, steps random actions until ``--steps`` agent decisions have been seen
  (``len(decision_steps)`` per step, about the env steps a trainer takes for that many agent
  steps) and closes it.
- ``agents_learn``: ``python -m orchestration.cli CONFIG --env=LAUNCHER ...`` of ``--repo``
  (default this checkout; another checkout runs with its own folder as working directory and
  ``PYTHONPATH``, with ``--python``, default this interpreter).
- ``baseline`` (with ``--baseline DIR``): another agents-learn checkout run the same way, between
  the two (an older commit, to measure a change on the same machine state).
- ``mlagents_learn``: ML-Agents 0.28's ``mlagents-learn`` (``--mlagents``, default
  ``/tmp/mla/bin/mlagents-learn``, the scratch venv ``benchmarks/mlagents_sac_anchor.py``
  describes; skipped when missing or with ``--skip-mlagents``), run as its entry point
  ``mlagents.trainers.learn.main`` by that venv's ``python``: when ``onnxscript`` is not
  installed its final ONNX export, which today's torch cannot do without it, is skipped
  (``mlagents_onnx_export`` in the output says whether it ran), as the other ML-Agents
  benchmarks here skip it; the export comes after training.

Both trainers get the same config (``write_config``: ``config/ppo/3DBall.yaml``'s settings,
behavior ``Balance``, buffer 12000, ``max_steps`` ``--steps``, one summary at the end, no
checkpoint before the final save), ``--seed 1``, ``--torch-device cpu``, ``--no-graphics`` and a
free ``--base-port``; both set one torch thread themselves. Each trainer's env steps are
``env_step``'s count in its ``run_logs/timers.json`` (ML-Agents' and our tree share the name).

Every process keeps compiled bytecode (``bytecode_env``: in the run's temporary folder, the
checkouts compiled before the first run), as an installed package's runs do, whatever
``PYTHONDONTWRITEBYTECODE`` says here.

Prints one JSON document: machine, settings and, per step cost, each measurement's median and
runs (seconds), ``cpu_s`` (the same for the CPU seconds, user and system, of the process and
the build it waited for: on a shared VM they move far less than the wall time, so a change to
our per-step work shows there first), ``phases_s`` (each run's wall time cut where the build
sent its first step, got its first actions and got its last: start-up, stepping and the end,
from the stand-in's exchange log, see ``phases``), env steps per run, ``agents_learn_over_floor`` and
``mlagents_over_agents_learn`` (of the medians). The issue's targets: agents-learn at most 1.5x
the floor and at least 4x faster than mlagents-learn with the plain stand-in; within 1.15x of the
floor with a 2 ms step. The issue measured 4.4-4.8 s (floor), 10.5 s (agents-learn) and 25.5 s
(mlagents-learn) at 0 ms and 24000 steps; a 2 ms step adds at least 20 s to each (24000 / 12
agents x 5 academy steps x 2 ms), so the default run takes about 4 minutes::

    .venv/bin/python benchmarks/e2e.py [--steps 24000] [--repeats 2] [--step-sleep-ms 0 2]
        [--repo DIR] [--baseline DIR] [--python PY] [--mlagents PATH | --skip-mlagents]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import yaml
from mlagents_3dball_side_by_side import free_port  # this folder: the scripts run from it

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BEHAVIOR = "Balance"  # the balance scene's Balance?team=0
MLAGENTS = "/tmp/mla/bin/mlagents-learn"
RUN_TIMEOUT_S = 1800
# mlagents-learn's entry point, run as ``python -c MLAGENTS_MAIN ARGS``.
MLAGENTS_MAIN = """
import importlib.util
from mlagents.trainers import learn
if importlib.util.find_spec("onnxscript") is None:  # torch's ONNX export needs it
    from mlagents.trainers.torch.model_serialization import ModelSerializer
    ModelSerializer.export_policy_model = lambda *args, **kwargs: None
learn.main()
"""


def write_config(folder: Path, steps: int) -> Path:
    """``config/ppo/3DBall.yaml`` for the stand-in: behavior ``Balance``, buffer 12000,
    ``max_steps`` ``steps``, one summary at the end, no checkpoint before the final save."""
    config = yaml.safe_load((REPO / "config" / "ppo" / "3DBall.yaml").read_text())
    behavior = config["behaviors"].pop("3DBall")
    behavior["hyperparameters"]["buffer_size"] = 12_000
    behavior.update(max_steps=steps, summary_freq=steps, checkpoint_interval=10 * steps)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"behaviors": {BEHAVIOR: behavior}}))
    return path


def floor(launcher: str, steps: int) -> None:
    """The build alone: open it, step random actions until ``steps`` agent decisions, close it;
    its stats are read as a trainer reads them (unread, each would be logged as unknown data).
    Prints ``{"decisions", "env_steps"}``."""
    import numpy as np

    from envs.unity import UnityEnvironment  # first: lets mlagents_envs' protocol modules load

    # isort: split
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    np.random.seed(1)  # random_action draws from numpy's global generator
    stats = StatsSideChannel()
    env = UnityEnvironment(
        file_name=launcher, base_port=0, seed=1, no_graphics=True, timeout_wait=60, side_channels=[stats]
    )
    try:
        env.reset()
        name, spec = next(iter(env.behavior_specs.items()))  # the one behavior, Balance?team=0
        decisions = env_steps = 0
        while decisions < steps:
            decision_steps, _ = env.get_steps(name)
            decisions += len(decision_steps)
            env.set_actions(name, spec.action_spec.random_action(len(decision_steps)))
            env.step()
            env_steps += 1
            stats.get_and_reset_stats()
    finally:
        env.close()
    print(json.dumps({"decisions": decisions, "env_steps": env_steps}))


def bytecode_env(folder: Path) -> dict[str, str]:
    """This process's environment, with compiled bytecode kept (in ``folder``, not beside the
    sources) as an installed package has it: ``PYTHONDONTWRITEBYTECODE`` would otherwise make
    every run compile the checkout's modules again, a cost no user's run pays."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder)
    return env


def compile_checkout(python: str, repo: Path, env: dict[str, str]) -> None:
    """Every module of an agents-learn checkout compiled once, before any run is timed."""
    packages = [str(repo / name) for name in ("envs", "orchestration", "processors", "stats", "trainers", "tests")]
    subprocess.run([python, "-m", "compileall", "-q", *packages], env=env, check=True, capture_output=True)


@attrs.frozen
class Timed:
    """One whole process: its seconds, the CPU seconds (user + system) it and the processes it
    waited for (the build) used, its output, and where its wall time went by the build's
    exchange log (``phases``). The CPU seconds move far less from run to run than the wall time
    on a shared machine."""

    seconds: float
    cpu: float
    stdout: str
    phases: dict[str, float]


def timed(command: list[str], cwd: Path, env: dict[str, str], exchange_log: Path) -> Timed:
    """Run ``command`` with the build told to log its exchanges to ``exchange_log``; raises if
    it failed."""
    env = dict(env, STANDIN_EXCHANGE_LOG=str(exchange_log))
    start, used = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    end, cpu = time.perf_counter(), _children_cpu() - used
    if done.returncode != 0:
        raise RuntimeError(f"{command[:3]} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    return Timed(end - start, cpu, done.stdout, phases(json.loads(exchange_log.read_text()), start, end))


def phases(exchanges: list[list[float]], start: float, end: float) -> dict[str, float]:
    """A run's wall time cut by the build's ``[sent, replied]`` exchanges (the stand-in's
    ``--exchange-log``, on this process's clock): ``to_build_ready`` (the process started to the
    build's first step sent: the start-up until the build is launched, its boot and handshake,
    and its wait for the reset, which a trainer sends once it has set itself up: agents-learn
    after importing torch), ``first_actions_wait`` (that step sent to its actions received),
    ``stepping`` (the first
    actions received to the last), ``after_last_step`` (the last actions to the process's exit:
    the final save and the close)."""
    first_sent, first_reply, last_reply = exchanges[0][0], exchanges[0][1], exchanges[-1][1]
    return {
        "to_build_ready": first_sent - start,
        "first_actions_wait": first_reply - first_sent,
        "stepping": last_reply - first_reply,
        "after_last_step": end - last_reply,
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def env_steps_of(run_dir: Path) -> int | None:
    """``env_step``'s count in the run's ``run_logs/timers.json`` (None without it)."""
    path = run_dir / "run_logs" / "timers.json"
    if not path.is_file():
        return None

    def count(node: dict[str, Any]) -> int:
        children = node.get("children", {})
        return sum(child["count"] if name == "env_step" else count(child) for name, child in children.items())

    return count(json.loads(path.read_text()))


def trainer_args(config: Path, launcher: str, results: Path, run_id: str) -> list[str]:
    return [
        str(config),
        f"--env={launcher}",
        f"--run-id={run_id}",
        f"--results-dir={results}",
        f"--base-port={free_port()}",
        "--seed=1",
        "--torch-device=cpu",
        "--no-graphics",
        "--force",
    ]


def summary(runs: list[float]) -> dict[str, Any] | None:
    """Median and every run, seconds (None for no runs)."""
    return {"median": round(statistics.median(runs), 2), "runs": [round(s, 2) for s in runs]} if runs else None


def ratio(slow: list[float], fast: list[float]) -> float | None:
    """Of the medians (None when either was not measured)."""
    return round(statistics.median(slow) / statistics.median(fast), 2) if slow and fast else None


def measure(args: argparse.Namespace, folder: Path, config: Path, sleep_ms: float) -> dict[str, Any]:
    """Every measurement of one build step cost, ``args.repeats`` times, interleaved."""
    from tests.support.standin import write_launcher

    launcher = write_launcher(
        str(folder), name=f"StandIn-{sleep_ms:g}ms.x86_64", extra_args=["--step-sleep-ms", str(sleep_ms)]
    )
    results = folder / "results"
    runs: dict[str, list[Timed]] = {"floor": [], "agents_learn": [], "baseline": [], "mlagents_learn": []}
    env_steps: dict[str, list[int | None]] = {key: [] for key in runs}
    onnx: list[bool] = []
    env = bytecode_env(folder / "pycache")
    for repeat in range(args.repeats):
        log = folder / f"exchanges-{sleep_ms:g}-{repeat}"
        run = timed(
            [sys.executable, str(Path(__file__).resolve()), "--floor", launcher, "--steps", str(args.steps)],
            REPO,
            env,
            log.with_suffix(".floor.json"),
        )
        runs["floor"].append(run)
        env_steps["floor"].append(json.loads(run.stdout.splitlines()[-1])["env_steps"])

        for key, repo in (("agents_learn", args.repo), ("baseline", args.baseline)):
            if repo is None:
                continue
            run_id = f"{key}-{sleep_ms:g}-{repeat}"
            command = [args.python, "-m", "orchestration.cli", *trainer_args(config, launcher, results, run_id)]
            runs[key].append(timed(command, repo, dict(env, PYTHONPATH=str(repo)), log.with_suffix(f".{key}.json")))
            env_steps[key].append(env_steps_of(results / run_id))

        if args.mlagents:
            run_id = f"mlagents-{sleep_ms:g}-{repeat}"
            python = str(Path(args.mlagents).parent / "python")
            command = [python, "-c", MLAGENTS_MAIN, *trainer_args(config, launcher, results, run_id)]
            runs["mlagents_learn"].append(timed(command, folder, env, log.with_suffix(".mlagents.json")))
            if not (results / run_id / BEHAVIOR / "checkpoint.pt").is_file():
                raise RuntimeError(f"mlagents-learn wrote no {results / run_id / BEHAVIOR / 'checkpoint.pt'}")
            env_steps["mlagents_learn"].append(env_steps_of(results / run_id))
            onnx.append(any((results / run_id).rglob("*.onnx")))
        print(
            f"{sleep_ms:g} ms, repeat {repeat + 1}: { {k: round(v[-1].seconds, 2) for k, v in runs.items() if v} }",
            file=sys.stderr,
        )
    seconds = {key: [run.seconds for run in timings] for key, timings in runs.items()}
    return {
        "step_sleep_ms": sleep_ms,
        **{f"{k}_s": summary(v) for k, v in seconds.items()},
        "cpu_s": {k: summary([run.cpu for run in v]) for k, v in runs.items() if v},
        "phases_s": {
            key: {phase: summary([run.phases[phase] for run in timings]) for phase in timings[0].phases}
            for key, timings in runs.items()
            if timings
        },
        "agents_learn_over_floor": ratio(seconds["agents_learn"], seconds["floor"]),
        "baseline_over_floor": ratio(seconds["baseline"], seconds["floor"]),
        "mlagents_over_agents_learn": ratio(seconds["mlagents_learn"], seconds["agents_learn"]),
        "env_steps": {k: v for k, v in env_steps.items() if v},
        "mlagents_onnx_export": all(onnx) if onnx else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24_000, help="agent steps per run (max_steps)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--step-sleep-ms", type=float, nargs="+", default=[0.0, 2.0], help="build step costs")
    parser.add_argument("--repo", type=Path, default=REPO, help="the agents-learn checkout to time")
    parser.add_argument("--baseline", type=Path, help="another agents-learn checkout, timed beside --repo")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs agents-learn")
    parser.add_argument("--mlagents", default=MLAGENTS if os.path.exists(MLAGENTS) else None, help="mlagents-learn")
    parser.add_argument("--skip-mlagents", action="store_true")
    parser.add_argument("--floor", metavar="LAUNCHER", help=argparse.SUPPRESS)  # the floor's own process
    args = parser.parse_args()
    if args.floor:
        floor(args.floor, args.steps)
        return
    if args.skip_mlagents:
        args.mlagents = None
    elif args.mlagents and not (Path(args.mlagents).parent / "python").is_file():
        parser.error(f"--mlagents: no python beside {args.mlagents} to run it with")
    args.repo = args.repo.resolve()
    args.baseline = args.baseline.resolve() if args.baseline is not None else None
    import torch

    with tempfile.TemporaryDirectory(prefix="e2e-") as tmp:
        folder = Path(tmp)
        config = write_config(folder, args.steps)
        for repo in (args.repo, args.baseline):
            if repo is not None:
                compile_checkout(args.python, repo, bytecode_env(folder / "pycache"))
        cases = [measure(args, folder, config, sleep_ms) for sleep_ms in args.step_sleep_ms]
    print(
        json.dumps(
            {
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                },
                "settings": {
                    "steps": args.steps,
                    "repeats": args.repeats,
                    "repo": str(args.repo),
                    "baseline": None if args.baseline is None else str(args.baseline),
                    "python": args.python,
                    "mlagents": args.mlagents,
                    "build": "stand-in balance scene: 12 agents, 8 floats, 2 continuous actions, decision period 5",
                    "config": f"config/ppo/3DBall.yaml, behavior {BEHAVIOR}, buffer_size 12000, max_steps {args.steps}",
                },
                "cases": cases,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
