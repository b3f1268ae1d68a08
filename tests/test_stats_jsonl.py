"""JsonLinesWriter: one JSON object per (category, step, key) in run_logs/stats.jsonl."""

from __future__ import annotations

import json
import math
from pathlib import Path

from stats import JsonLinesWriter, StatsAggregationMethod, StatsHub, StatsReporter


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_one_line_per_key_with_summary_fields(tmp_path: Path) -> None:
    writer = JsonLinesWriter(tmp_path, clock=lambda: 1700000000.5)
    hub = StatsHub([writer])
    r = StatsReporter("3DBall", hub)
    r.add_stats("Environment/Cumulative Reward", [1.0, 2.0, 6.0])
    r.add_stat("Custom/Coins", 4.0, StatsAggregationMethod.SUM)
    r.add_stat("Custom/Coins", 5.0, StatsAggregationMethod.SUM)
    r.write_stats(12000)
    r.write_stats(13000)  # empty window: nothing written
    StatsReporter("Walker", hub).set_stat("Policy/Learning Rate", 3e-4)
    StatsReporter("Walker", hub).write_stats(7)
    hub.close()

    rows = read(tmp_path / "run_logs" / "stats.jsonl")
    assert rows[0] == {
        "category": "3DBall", "step": 12000, "wall_time": 1700000000.5,
        "key": "Environment/Cumulative Reward", "aggregation": "AVERAGE", "value": 3.0,
        "mean": 3.0, "std": math.sqrt(14.0 / 3.0), "min": 1.0, "max": 6.0, "count": 3, "sum": 9.0,
    }  # fmt: skip
    assert (rows[1]["key"], rows[1]["aggregation"], rows[1]["value"], rows[1]["count"]) == (
        "Custom/Coins", "SUM", 9.0, 2,
    )  # fmt: skip
    assert [(r["category"], r["step"], r["key"], r["value"]) for r in rows[2:]] == [
        ("Walker", 7, "Policy/Learning Rate", 3e-4)
    ]


def test_appends_across_writers_and_nan_becomes_null(tmp_path: Path) -> None:
    for value in (1.0, float("nan")):
        writer = JsonLinesWriter(tmp_path)
        r = StatsReporter("B", StatsHub([writer]))
        r.add_stat("x", value)
        r.write_stats(1)
        writer.close()
    rows = read(tmp_path / "run_logs" / "stats.jsonl")
    assert [r["value"] for r in rows] == [1.0, None]
