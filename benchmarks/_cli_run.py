"""One training run of ``agents-learn`` in a subprocess, as a user starts it, for the benchmarks
that read its console line by line (``simple_spread.py``, ``connect_four_vs_random.py``,
``lunarlander_seeds.py``), and the ``--inference`` session that evaluates what it trained.

One torch thread (``OMP_NUM_THREADS=1``), unbuffered output; the run is killed if reading it
fails, since its results folder is usually a temporary one about to be removed.
"""

from __future__ import annotations

import os
import platform
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class CliRun:
    command: str
    wall_s: float  # the subprocess, start to exit


def edited_copy(config: Path, pattern: str, replacement: str, folder: Path, name: str) -> Path:
    """A copy of ``config`` in ``folder`` named ``name`` with the one match of ``pattern``
    replaced (``re.sub`` syntax); raises when ``pattern`` does not match exactly once."""
    text, count = re.subn(pattern, replacement, config.read_text())
    if count != 1:
        raise RuntimeError(f"{config}: expected one match of {pattern!r}, found {count}")
    copy = folder / name
    copy.write_text(text)
    return copy


def with_max_steps(config: Path, max_steps: int | None, folder: Path) -> Path:
    """``config``, or a copy of it in ``folder`` with ``max_steps`` changed (quick checks)."""
    if max_steps is None:
        return config
    return edited_copy(config, r"max_steps: \d+", f"max_steps: {max_steps}", folder, f"{config.stem}-{max_steps}.yaml")


def machine() -> dict[str, object]:
    """What the figures were measured on: CPUs, the CPU's model and torch's kernel level."""
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    models = re.findall(r"model name\s*: (.*)", cpuinfo.read_text()) if cpuinfo.exists() else []
    return {
        "cpus": os.cpu_count(),
        "cpu": models[0] if models else platform.processor(),
        "python": platform.python_version(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def _start_cli(config: Path, run_id: str, results: Path, *flags: str) -> tuple[list[str], subprocess.Popen[str]]:
    """``python -m orchestration.cli CONFIG --run-id --results-dir FLAGS`` from the repository,
    one torch thread, unbuffered, its output (stderr too) on a pipe."""
    command = [sys.executable, "-m", "orchestration.cli", str(config), f"--run-id={run_id}", f"--results-dir={results}"]
    command += flags
    environ = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        command, cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return command, process


def run_cli(config: Path, *, run_id: str, seed: int, results: Path, on_line: Callable[[str], None]) -> CliRun:
    """Train with ``config`` into ``results``, handing every console line to ``on_line``.
    Raises RuntimeError with the last lines when the run fails."""
    start = time.monotonic()
    command, process = _start_cli(config, run_id, results, f"--seed={seed}")
    assert process.stdout is not None
    tail: list[str] = []
    try:
        for line in process.stdout:
            tail = (tail + [line])[-20:]
            on_line(line)
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.wait()
    wall = time.monotonic() - start
    if process.returncode != 0:
        raise RuntimeError(f"{config.name} seed {seed} failed (rc {process.returncode}):\n{''.join(tail)}")
    return CliRun(" ".join(command), round(wall, 1))


@dataclass(frozen=True)
class Evaluation:
    mean_return: float
    episodes: int
    command: str


EVALUATION = re.compile(r"(\S+): mean return (-?\d+(?:\.\d+)?) over (\d+) episodes \(--inference\)")


def evaluate_cli(
    config: Path, *, run_id: str, results: Path, behavior: str, seconds: float, deterministic: bool = True
) -> Evaluation:
    """Act with the trained run's saved policy (``--inference``, ``--deterministic`` by default,
    as RL Zoo's published figures are taken) for ``seconds``, then stop it as a user does
    (Ctrl-C) and read the mean return it prints over the episodes it finished."""
    command, process = _start_cli(
        config, run_id, results, "--inference", *(["--deterministic"] if deterministic else [])
    )
    try:
        out, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)
    found = {m.group(1): m for m in EVALUATION.finditer(out)}
    if behavior not in found:
        raise RuntimeError(f"{run_id}: no mean return for {behavior} (rc {process.returncode}):\n{out[-2000:]}")
    return Evaluation(float(found[behavior].group(2)), int(found[behavior].group(3)), " ".join(command))
