"""default_writers wiring end to end, and `import stats` staying light and self-contained."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from stats import (
    ConsoleWriter,
    GaugeWriter,
    JsonLinesWriter,
    StatsHub,
    StatsReporter,
    TensorBoardWriter,
    Timers,
    default_writers,
)


def test_default_writers_fill_the_results_folder(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="stats.console_writer")
    run_dir = tmp_path / "results" / "ppo"
    timers = Timers()
    writers = default_writers(run_dir, timers=timers)
    assert [type(w) for w in writers] == [TensorBoardWriter, ConsoleWriter, JsonLinesWriter, GaugeWriter]
    hub = StatsHub(writers)
    r = StatsReporter("3DBall", hub)
    r.add_stat("Environment/Cumulative Reward", 1.5)
    r.write_stats(100)
    hub.close()
    assert list((run_dir / "3DBall").glob("events.out.tfevents.*"))
    [row] = [json.loads(x) for x in (run_dir / "run_logs" / "stats.jsonl").read_text().splitlines()]
    assert (row["key"], row["value"]) == ("Environment/Cumulative Reward", 1.5)
    assert "3DBall.Environment.CumulativeReward.mean" in timers.to_json_dict()["gauges"]
    assert any("3DBall. Step: 100." in rec.getMessage() for rec in caplog.records)
    assert [type(w) for w in default_writers(run_dir, console=False)] == [TensorBoardWriter, JsonLinesWriter]


def test_import_stats_loads_nothing_heavy_and_nothing_of_ours() -> None:
    code = (
        "import sys, stats\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tensorboard', 'torch', 'mlagents_envs', 'processors', 'trainers', 'envs'))\n"
        "print(bad)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "[]"
