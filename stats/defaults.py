"""The writers a run uses by default, in one call."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from stats.console_writer import ConsoleWriter
from stats.jsonl_writer import JsonLinesWriter
from stats.tensorboard_writer import TensorBoardWriter
from stats.timers import GaugeWriter, Timers
from stats.writer import StatsWriter


def default_writers(
    run_dir: str | os.PathLike[str],
    *,
    resume: bool = False,
    timers: Timers | None = None,
    console: bool = True,
    env_steps: Callable[[], int] | None = None,
) -> list[StatsWriter]:
    """TensorBoard (``run_dir/<category>/``), console, JSON lines (``run_dir/run_logs/stats.jsonl``)
    and, given ``timers``, a gauge writer for timers.json. ``env_steps`` counts the run's
    environment steps for the console's ``Env Steps/s``. ``run_dir`` is ``results/<run-id>``;
    without ``resume`` old event files of a category are deleted, as ML-Agents does.
    """
    run_dir = Path(run_dir)
    writers: list[StatsWriter] = [TensorBoardWriter(run_dir, clear_past_data=not resume)]
    if console:
        writers.append(ConsoleWriter(env_steps=env_steps))
    writers.append(JsonLinesWriter(run_dir))
    if timers is not None:
        writers.append(GaugeWriter(timers))
    return writers
