"""Cost of adding one million values to a StatsReporter, by batch size; prints one JSON object.

Batch size 1 uses ``add_stat`` (one call per value); larger batches use ``add_stats`` with a
numpy array. Each figure is the median of several repeats; no assertions on time.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    from stats import StatsHub, StatsReporter
except ImportError:  # run from a checkout that is not pip-installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from stats import StatsHub, StatsReporter

TOTAL = 1_000_000
BATCH_SIZES = (1, 16, 1024)
REPEATS = 5


def run_once(batch: int) -> float:
    reporter = StatsReporter("Bench", StatsHub())
    values = np.random.default_rng(0).standard_normal(TOTAL)
    if batch == 1:
        items = values.tolist()
        start = time.perf_counter()
        add = reporter.add_stat
        for v in items:
            add("Environment/Cumulative Reward", v)
    else:
        chunks = [values[i : i + batch] for i in range(0, TOTAL, batch)]
        start = time.perf_counter()
        add_many = reporter.add_stats
        for chunk in chunks:
            add_many("Environment/Cumulative Reward", chunk)
    elapsed = time.perf_counter() - start
    if reporter.get_stats_summaries("Environment/Cumulative Reward").count != TOTAL:
        raise RuntimeError("values were lost")
    return elapsed


def main() -> None:
    results = {}
    for batch in BATCH_SIZES:
        seconds = statistics.median(run_once(batch) for _ in range(REPEATS))
        results[str(batch)] = {"seconds": round(seconds, 4), "values_per_s": round(TOTAL / seconds)}
    print(
        json.dumps(
            {
                "benchmark": "stats_reporter_add_1M_values",
                "values": TOTAL,
                "repeats": REPEATS,
                "statistic": "median",
                "by_batch_size": results,
                "python": platform.python_version(),
                "numpy": np.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
