"""Machine-readable log of every summary: ``<run_dir>/run_logs/stats.jsonl``, one line per key."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from stats.summary import StatsSummary
from stats.writer import StatsWriter


def _finite(x: float) -> float | None:
    """JSON has no NaN/inf: those become null."""
    return x if math.isfinite(x) else None


class JsonLinesWriter(StatsWriter):
    """Appends ``{"category", "step", "wall_time", "key", "aggregation", "value", "mean", "std",
    "min", "max", "count", "sum"}`` per key and write (``value`` is what TensorBoard draws;
    ``wall_time`` is Unix seconds). Appends, so a resumed run continues the file; flushed per write.
    """

    def __init__(self, run_dir: str | os.PathLike[str], *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(run_dir) / "run_logs" / "stats.jsonl"
        self._clock = clock
        self._file: IO[str] | None = None

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        if not values:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        wall_time = self._clock()
        lines = []
        for key, s in values.items():
            record = {
                "category": category,
                "step": int(step),
                "wall_time": wall_time,
                "key": key,
                "aggregation": s.aggregation_method.name,
                "value": _finite(s.aggregated_value),
                "mean": _finite(s.mean),
                "std": _finite(s.std),
                "min": _finite(s.min),
                "max": _finite(s.max),
                "count": s.count,
                "sum": _finite(s.sum),
            }
            lines.append(json.dumps(record, allow_nan=False))
        self._file.write("\n".join(lines) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
