"""Timing probes the ML-Agents anchor benchmarks wrap around ML-Agents' own methods (imported by
those scripts, which run from this folder; not a benchmark itself)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Probe:
    """Accumulates time spent in a wrapped callable."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = self.fn(*args, **kwargs)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out

    def reset(self) -> None:
        self.seconds = 0.0
        self.calls = 0
