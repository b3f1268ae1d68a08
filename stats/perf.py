"""Sampler perf stats in the manner of RLlib: where a step's wall time goes, in milliseconds.

    perf = PerfStats()
    with perf.measure(PerfKind.ENV_WAIT):
        steps = env_manager.get_steps()
    perf.add_env_steps(1)
    ...
    perf.report(reporter)   # before reporter.write_stats(step)

or, for several stats windows written at their own times, one ``PerfMark`` per window:
``summary, mark = perf.summary_since(mark)``. It reports ``Perf/mean_env_wait_ms``, ``Perf/mean_inference_ms``, ``Perf/mean_processing_ms``,
``Perf/mean_update_ms`` (mean per measured call over the window, or an exponential moving
average when ``ema_coef`` is set) and ``Perf/env_steps_per_s``.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable

import attrs

from stats.reporter import StatsReporter
from stats.tags import (
    PERF_ENV_STEPS_PER_SECOND,
    PERF_ENV_WAIT_MS,
    PERF_INFERENCE_MS,
    PERF_PROCESSING_MS,
    PERF_UPDATE_MS,
)


class PerfKind(enum.Enum):
    """What a measured interval was spent on; the value is its ``Perf/`` tag."""

    ENV_WAIT = PERF_ENV_WAIT_MS
    """Waiting for environments to return steps."""
    INFERENCE = PERF_INFERENCE_MS
    """Policy forward passes choosing actions."""
    PROCESSING = PERF_PROCESSING_MS
    """Turning steps into trajectories (agent processors)."""
    UPDATE = PERF_UPDATE_MS
    """Trainer optimisation steps."""


@attrs.frozen
class PerfSummary:
    """Milliseconds per measured call for each kind (None: nothing measured yet)."""

    mean_env_wait_ms: float | None
    mean_inference_ms: float | None
    mean_processing_ms: float | None
    mean_update_ms: float | None
    env_steps_per_s: float | None

    def as_stats(self) -> dict[str, float]:
        """``{tag: value}`` for the measured entries."""
        pairs = (
            (PERF_ENV_WAIT_MS, self.mean_env_wait_ms),
            (PERF_INFERENCE_MS, self.mean_inference_ms),
            (PERF_PROCESSING_MS, self.mean_processing_ms),
            (PERF_UPDATE_MS, self.mean_update_ms),
            (PERF_ENV_STEPS_PER_SECOND, self.env_steps_per_s),
        )
        return {tag: value for tag, value in pairs if value is not None}


@attrs.frozen
class PerfMark:
    """The running totals at one moment; a window's numbers are the difference of two marks."""

    seconds: tuple[float, ...]
    """Seconds spent per ``PerfKind``, in the enum's order."""
    counts: tuple[int, ...]
    """Intervals measured per ``PerfKind``."""
    env_steps: int
    time: float


class PerfStats:
    """Accumulates intervals per ``PerfKind`` from any thread (one lock).

    Without ``ema_coef`` a summary is the mean over a window: since the last reset
    (``summary``) or since a caller's ``PerfMark`` (``summary_since``). With it, each interval
    updates ``ema = (1 - ema_coef) * ema + ema_coef * x`` (the first sets it), whatever the
    window. ``clock`` is monotonic seconds.
    """

    def __init__(self, *, ema_coef: float | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        if ema_coef is not None and not 0.0 < ema_coef <= 1.0:
            raise ValueError(f"ema_coef must be in (0, 1], got {ema_coef}")
        self.ema_coef = ema_coef
        self._clock = clock
        self._lock = threading.Lock()
        self._seconds = {kind: 0.0 for kind in PerfKind}
        self._counts = {kind: 0 for kind in PerfKind}
        self._ema: dict[PerfKind, float] = {}
        self._env_steps = 0
        self._window = self.mark()

    def add(self, kind: PerfKind, seconds: float) -> None:
        """Record one interval of ``seconds`` spent on ``kind``."""
        with self._lock:
            self._seconds[kind] += seconds
            self._counts[kind] += 1
            if self.ema_coef is not None:
                old = self._ema.get(kind)
                self._ema[kind] = seconds if old is None else (1.0 - self.ema_coef) * old + self.ema_coef * seconds

    def measure(self, kind: PerfKind) -> _Interval:
        """Time the block as one interval of ``kind`` (recorded even if it raises)."""
        return _Interval(self, kind)

    def add_env_steps(self, count: int = 1) -> None:
        """Count environment steps (one per ``env.step`` of all workers together) for steps/s."""
        with self._lock:
            self._env_steps += count

    def env_steps_total(self) -> int:
        """Environment steps counted since creation (the console's Env Steps/s)."""
        with self._lock:
            return self._env_steps

    def mark(self) -> PerfMark:
        """The totals now: the start of a window for ``summary_since``."""
        now = self._clock()
        with self._lock:
            return self._mark(now)

    def _mark(self, now: float) -> PerfMark:
        return PerfMark(
            seconds=tuple(self._seconds[kind] for kind in PerfKind),
            counts=tuple(self._counts[kind] for kind in PerfKind),
            env_steps=self._env_steps,
            time=now,
        )

    def summary_since(self, start: PerfMark) -> tuple[PerfSummary, PerfMark]:
        """Milliseconds per kind and env steps/s since ``start``, and the mark of now (the
        next window's start)."""
        now = self._clock()
        with self._lock:
            end = self._mark(now)
            ema = dict(self._ema)
        ms: dict[PerfKind, float | None] = {}
        for i, kind in enumerate(PerfKind):
            if self.ema_coef is not None:
                value = ema.get(kind)
                ms[kind] = None if value is None else value * 1000.0
            else:
                n = end.counts[i] - start.counts[i]
                ms[kind] = (end.seconds[i] - start.seconds[i]) * 1000.0 / n if n else None
        steps = end.env_steps - start.env_steps
        elapsed = end.time - start.time
        summary = PerfSummary(
            mean_env_wait_ms=ms[PerfKind.ENV_WAIT],
            mean_inference_ms=ms[PerfKind.INFERENCE],
            mean_processing_ms=ms[PerfKind.PROCESSING],
            mean_update_ms=ms[PerfKind.UPDATE],
            env_steps_per_s=steps / elapsed if steps and elapsed > 0 else None,
        )
        return summary, end

    def summary(self, *, reset: bool = True) -> PerfSummary:
        """The window's (or EMA's) milliseconds per kind and env steps/s; ``reset`` starts a new window."""
        summary, end = self.summary_since(self._window)
        if reset:
            self._window = end
        return summary

    def report(self, reporter: StatsReporter, *, reset: bool = True) -> PerfSummary:
        """``set_stat`` each measured ``Perf/...`` value on ``reporter``; returns the summary."""
        summary = self.summary(reset=reset)
        for tag, value in summary.as_stats().items():
            reporter.set_stat(tag, value)
        return summary


class _Interval:
    """The block :meth:`PerfStats.measure` times: a plain context manager, as it runs a few times
    every environment step (a generator-based one costs twice as much to enter and leave)."""

    __slots__ = ("_perf", "_kind", "_start")

    def __init__(self, perf: PerfStats, kind: PerfKind) -> None:
        self._perf = perf
        self._kind = kind

    def __enter__(self) -> None:
        self._start = self._perf._clock()

    def __exit__(self, *exc: object) -> None:
        self._perf.add(self._kind, self._perf._clock() - self._start)
