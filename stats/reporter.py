"""StatsReporter and StatsHub: thread-safe, O(1)-memory aggregation of numbers per category.

A run creates one ``StatsHub`` holding its writers; every ``StatsReporter`` made for the same
category from that hub shares one window, so the env thread and trainer threads can report
into one behavior at once. ``write_stats(step)`` summarises and clears the window and hands
the summaries to every writer.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from stats.exceptions import StatsWriterError
from stats.summary import StatsAggregationMethod, StatsProperty, StatsSummary
from stats.writer import StatsWriter

_AVERAGE = StatsAggregationMethod.AVERAGE
_MOST_RECENT = StatsAggregationMethod.MOST_RECENT
_HISTOGRAM = StatsAggregationMethod.HISTOGRAM

# Batches queued before they are folded into the running statistics (see _Accumulator).
_PENDING_BATCHES = 256


class _Accumulator:
    """Running count/sum/mean/M2/min/max of one key (Chan's parallel merge for batches).

    Batches are queued as arrays and folded in with a few numpy reductions once enough have
    queued (or when read): a step's handful of values then costs one append instead of a
    Python pass over them, and memory stays bounded by the queue length.
    """

    __slots__ = ("aggregation", "count", "total", "mean", "m2", "min", "max", "samples", "pending")

    def __init__(self, aggregation: StatsAggregationMethod) -> None:
        self.aggregation = aggregation
        self.samples: list[np.ndarray] | None = [] if aggregation is _HISTOGRAM else None
        self.reset()

    def set_aggregation(self, aggregation: StatsAggregationMethod) -> None:
        if aggregation is not self.aggregation:
            self.fold()
            self.aggregation = aggregation
            if aggregation is _HISTOGRAM and self.samples is None:
                # Samples before the switch are gone; the histogram covers what comes next.
                self.samples = []

    def reset(self) -> None:
        """Forget every value (the window is written, or MOST_RECENT replaces it)."""
        self.count = 0
        self.total = 0.0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.pending: list[np.ndarray] = []
        if self.samples is not None:
            self.samples = []

    @property
    def empty(self) -> bool:
        return self.count == 0 and not self.pending

    def add_one(self, x: float) -> None:
        if self.pending:
            self.fold()  # keep values in arrival order (histogram samples)
        n = self.count + 1
        delta = x - self.mean
        self.mean += delta / n
        self.m2 += delta * (x - self.mean)
        self.count = n
        self.total += x
        if x < self.min:
            self.min = x
        if x > self.max:
            self.max = x
        if self.samples is not None:
            self.samples.append(np.array([x]))

    def add_many(self, values: np.ndarray | Sequence[float]) -> None:
        batch = np.array(values, dtype=np.float64).ravel()  # a copy: callers may reuse buffers
        if batch.size == 0:
            return
        self.pending.append(batch)
        if len(self.pending) >= _PENDING_BATCHES:
            self.fold()

    def fold(self) -> None:
        """Merge the queued batches into the running statistics."""
        if not self.pending:
            return
        arr = self.pending[0] if len(self.pending) == 1 else np.concatenate(self.pending)
        self.pending = []
        k = arr.size
        bsum = float(arr.sum())
        bmean = bsum / k
        dev = arr - bmean
        self._merge(k, bsum, bmean, float(np.dot(dev, dev)), float(arr.min()), float(arr.max()))
        if self.samples is not None:
            self.samples.append(arr)

    def _merge(self, k: int, bsum: float, bmean: float, bm2: float, bmin: float, bmax: float) -> None:
        n = self.count + k
        delta = bmean - self.mean
        self.mean += delta * k / n
        self.m2 += bm2 + delta * delta * self.count * k / n
        self.count = n
        self.total += bsum
        if bmin < self.min:
            self.min = bmin
        if bmax > self.max:
            self.max = bmax

    def summary(self) -> StatsSummary:
        self.fold()
        if self.count == 0:
            return StatsSummary.empty()
        full = None
        if self.aggregation is _HISTOGRAM and self.samples is not None:
            full = np.concatenate(self.samples) if self.samples else np.empty(0)
        # sum/count is exact for integer-valued data; the running mean can drift by an ulp.
        return StatsSummary(
            mean=self.total / self.count,
            std=math.sqrt(max(self.m2, 0.0) / self.count),
            min=float(self.min),
            max=float(self.max),
            count=self.count,
            sum=float(self.total),
            aggregation_method=self.aggregation,
            full_dist=full,
        )


class _Window:
    """One category's current window: key -> accumulator, guarded by one lock."""

    __slots__ = ("lock", "accumulators", "properties")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.accumulators: dict[str, _Accumulator] = {}
        self.properties: dict[StatsProperty, Any] = {}

    def accumulator(self, key: str, aggregation: StatsAggregationMethod) -> _Accumulator:
        """Caller holds ``lock``. The last aggregation reported for a key wins (as ML-Agents)."""
        acc = self.accumulators.get(key)
        if acc is None:
            acc = self.accumulators[key] = _Accumulator(aggregation)
        elif acc.aggregation is not aggregation:
            acc.set_aggregation(aggregation)
        return acc


class StatsHub:
    """One per run: the writers, and the shared window of each category.

    Writers are called one at a time, in the order added, under the hub's write lock.
    """

    def __init__(self, writers: Sequence[StatsWriter] = ()) -> None:
        self._writers: list[StatsWriter] = list(writers)
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._closed = False
        self._before_write: dict[str, list[Callable[[], None]]] = {}

    @property
    def writers(self) -> tuple[StatsWriter, ...]:
        return tuple(self._writers)

    def add_writer(self, writer: StatsWriter) -> None:
        """Add a writer; it receives windows written from now on."""
        with self._write_lock:
            self._writers.append(writer)

    def add_before_write(self, category: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever ``category``'s window is about to be written (from the
        writing thread): numbers measured elsewhere, such as perf, join every window."""
        with self._lock:
            self._before_write.setdefault(category, []).append(callback)

    def before_write(self, category: str) -> None:
        """Run ``category``'s before-write callbacks."""
        with self._lock:
            callbacks = tuple(self._before_write.get(category, ()))
        for callback in callbacks:
            callback()

    def reporter(self, category: str) -> StatsReporter:
        """A reporter for ``category`` sharing this hub's window for it."""
        return StatsReporter(category, self)

    def _window(self, category: str) -> _Window:
        with self._lock:
            window = self._windows.get(category)
            if window is None:
                window = self._windows[category] = _Window()
            return window

    def _dispatch(self, method: str, *args: Any) -> None:
        """Call ``method`` on every writer; all are called even if one raises, then the first
        error is raised as a :class:`StatsWriterError` naming its writer."""
        error: StatsWriterError | None = None
        with self._write_lock:
            for writer in self._writers:
                try:
                    getattr(writer, method)(*args)
                except Exception as exc:  # noqa: BLE001 - raised below after the other writers
                    if error is None:
                        error = StatsWriterError(
                            f"stats writer {type(writer).__name__} failed in {method}: {type(exc).__name__}: {exc}"
                        )
                        error.__cause__ = exc
        if error is not None:
            raise error

    def write(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        """Hand one window's summaries to every writer."""
        self._dispatch("write_stats", category, values, step)

    def add_property(self, category: str, property_type: StatsProperty, value: Any) -> None:
        """Hand a property to every writer."""
        self._dispatch("add_property", category, property_type, value)

    def close(self) -> None:
        """Close every writer once (idempotent); re-raises the first error after closing all."""
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._dispatch("close")


class StatsReporter:
    """Reports numbers for one category (a behavior name) into a window; thread-safe.

    Without a hub the reporter keeps its own window and ``write_stats`` just clears it.
    """

    __slots__ = ("category", "_hub", "_window")

    def __init__(self, category: str, hub: StatsHub | None = None) -> None:
        self.category = category
        self._hub = hub
        self._window = hub._window(category) if hub is not None else _Window()

    @property
    def hub(self) -> StatsHub | None:
        return self._hub

    def add_stat(self, key: str, value: float, aggregation: StatsAggregationMethod = _AVERAGE) -> None:
        """Add one value to ``key``'s window. MOST_RECENT replaces what the window holds."""
        window = self._window
        with window.lock:
            acc = window.accumulator(key, aggregation)
            if aggregation is _MOST_RECENT:
                acc.reset()
            acc.add_one(float(value))

    def add_stats(
        self,
        key: str,
        values: np.ndarray | Sequence[float],
        aggregation: StatsAggregationMethod = _AVERAGE,
    ) -> None:
        """Add a batch of values ([N], any shape is flattened) at the cost of a few numpy calls.

        For MOST_RECENT only the batch's last value is kept.
        """
        window = self._window
        if aggregation is _MOST_RECENT:
            flat = np.asarray(values).reshape(-1)
            if flat.size == 0:
                return
            self.add_stat(key, float(flat[-1]), aggregation)
            return
        with window.lock:
            window.accumulator(key, aggregation).add_many(values)

    def set_stat(self, key: str, value: float) -> None:
        """Replace whatever the window holds for ``key`` with ``value`` (aggregation MOST_RECENT)."""
        self.add_stat(key, value, _MOST_RECENT)

    def add_property(self, property_type: StatsProperty, value: Any) -> None:
        """Record a property for this category and hand it to every writer now."""
        with self._window.lock:
            self._window.properties[property_type] = value
        if self._hub is not None:
            self._hub.add_property(self.category, property_type, value)

    def get_property(self, property_type: StatsProperty, default: Any = None) -> Any:
        """The last value given to ``add_property`` for this category, else ``default``."""
        with self._window.lock:
            return self._window.properties.get(property_type, default)

    def get_stats_summaries(self, key: str) -> StatsSummary:
        """Summary of ``key`` in the current (unwritten) window; empty (count 0) if none."""
        with self._window.lock:
            acc = self._window.accumulators.get(key)
            return acc.summary() if acc is not None else StatsSummary.empty()

    def keys(self) -> list[str]:
        """Keys with at least one value in the current window."""
        with self._window.lock:
            return [k for k, acc in self._window.accumulators.items() if not acc.empty]

    def write_stats(self, step: int) -> Mapping[str, StatsSummary]:
        """Summarise and clear the window, hand the summaries to every writer; returns them.

        Writers are called even when the window is empty (the console then says no episode
        was completed).
        """
        if self._hub is not None:
            self._hub.before_write(self.category)
        window = self._window
        with window.lock:
            accumulators = window.accumulators
            window.accumulators = {}
        values = {key: acc.summary() for key, acc in accumulators.items() if not acc.empty}
        if self._hub is not None:
            self._hub.write(self.category, values, step)
        return values
