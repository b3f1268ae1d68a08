"""Hierarchical, thread-aware timers per run, written as ``run_logs/timers.json``.

Each thread has its own stack of open scopes, so a trainer thread's scopes never nest under
the env thread's. The JSON tree (REFERENCE.md 1.13) merges the threads by scope name under
one ``root``; subtrees timed on threads other than the one that created the ``Timers`` (and
trees merged in from worker processes) are marked ``is_parallel``, since their time overlaps.

    timers = Timers()
    with timers.scope("env_step"):
        ...

    @timers.timed("update")
    def update(): ...
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from stats.summary import StatsSummary
from stats.writer import StatsWriter

TIMER_FORMAT_VERSION = "0.1.0"

F = TypeVar("F", bound=Callable[..., Any])


class _Node:
    __slots__ = ("children", "total", "count", "is_parallel")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.total = 0.0
        self.count = 0
        self.is_parallel = False

    def child(self, name: str) -> _Node:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = _Node()
        return node

    def merge(self, other: _Node, is_parallel: bool) -> None:
        """Add ``other``'s totals and counts (recursively) into this node."""
        self.total += other.total
        self.count += other.count
        self.is_parallel |= is_parallel or other.is_parallel
        for name, child in list(other.children.items()):
            self.child(name).merge(child, is_parallel)

    def to_json(self) -> dict[str, Any]:
        res: dict[str, Any] = {"total": self.total, "count": self.count}
        if self.is_parallel:
            res["is_parallel"] = True
        children = {name: child.to_json() for name, child in list(self.children.items())}
        res["self"] = max(0.0, self.total - sum(c["total"] for c in children.values()))
        if children:
            res["children"] = children
        return res

    @staticmethod
    def from_json(tree: Mapping[str, Any]) -> _Node:
        node = _Node()
        node.total = float(tree.get("total", 0.0))
        node.count = int(tree.get("count", 0))
        node.is_parallel = bool(tree.get("is_parallel", False))
        for name, child in tree.get("children", {}).items():
            node.children[name] = _Node.from_json(child)
        return node


class _Gauge:
    __slots__ = ("value", "min", "max", "count")

    def __init__(self, value: float) -> None:
        self.value = self.min = self.max = value
        self.count = 1

    def update(self, value: float) -> None:
        self.value = value
        self.min = min(self.min, value)
        self.max = max(self.max, value)
        self.count += 1


class _Scope:
    __slots__ = ("_timers", "_name", "_node", "_start", "_stack")

    def __init__(self, timers: Timers, name: str) -> None:
        self._timers = timers
        self._name = name

    def __enter__(self) -> _Scope:
        stack = self._timers._stack()
        node = stack[-1].child(self._name)
        stack.append(node)
        self._stack = stack
        self._node = node
        self._start = self._timers._clock()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = self._timers._clock() - self._start
        self._node.total += elapsed
        self._node.count += 1
        self._stack.pop()


class Timers:
    """The timers of one run. ``clock`` is a monotonic seconds counter (``time.perf_counter``),
    ``wall_clock`` Unix seconds for the metadata. Timing a scope costs about a microsecond.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.perf_counter,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._wall_clock = wall_clock
        self._start = clock()
        self._start_wall = wall_clock()
        self._owner = threading.get_ident()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._roots: list[tuple[_Node, bool]] = []  # (thread root, timed on the owner thread)
        self._merged = _Node()  # trees merged in from other processes
        self._gauges: dict[str, _Gauge] = {}
        self._metadata: dict[str, str] = {}

    def _stack(self) -> list[_Node]:
        try:
            return self._local.stack
        except AttributeError:
            root = _Node()
            self._local.stack = [root]
            with self._lock:
                self._roots.append((root, threading.get_ident() == self._owner))
            return self._local.stack

    def scope(self, name: str) -> _Scope:
        """Context manager timing a block as ``name``, nested under this thread's open scope."""
        return _Scope(self, name)

    __call__ = scope

    def timed(self, name: str | None = None) -> Callable[[F], F]:
        """Decorator timing each call of a function (default name: its ``__qualname__``)."""

        def decorate(func: F) -> F:
            label = name or func.__qualname__

            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with _Scope(self, label):
                    return func(*args, **kwargs)

            return wrapper  # type: ignore[return-value]

        return decorate

    def set_gauge(self, name: str, value: float) -> None:
        """Track the latest ``value`` of ``name`` with its min, max and count."""
        with self._lock:
            gauge = self._gauges.get(name)
            if gauge is None:
                self._gauges[name] = _Gauge(float(value))
            else:
                gauge.update(float(value))

    def add_metadata(self, key: str, value: str) -> None:
        """Add or override one ``metadata`` entry of timers.json."""
        with self._lock:
            self._metadata[key] = value

    def merge(self, tree: Mapping[str, Any], *, under: str | None = None) -> None:
        """Merge a timer tree shaped like ``to_json_dict()`` (e.g. from a worker process) as parallel.

        Its children go under the root, or under the top-level scope ``under`` if given.
        """
        node = _Node.from_json(tree)
        with self._lock:
            target = self._merged.child(under) if under is not None else self._merged
            if under is not None:
                target.is_parallel = True
            for name, child in node.children.items():
                target.child(name).merge(child, True)

    def _tree(self) -> _Node:
        root = _Node()
        root.total = self._clock() - self._start
        root.count = 1
        with self._lock:
            roots = list(self._roots)
            merged = self._merged
            for thread_root, on_owner in roots:
                for name, child in list(thread_root.children.items()):
                    root.child(name).merge(child, not on_owner)
            for name, child in merged.children.items():
                root.child(name).merge(child, True)
        return root

    def to_json_dict(self, metadata: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The timers.json document: ``name``, ``gauges``, ``metadata``, then the root's
        ``total``/``count``/``self``/``children`` (seconds; children keyed by scope name)."""
        tree = self._tree().to_json()
        with self._lock:
            gauges = {
                name: {"value": g.value, "min": g.min, "max": g.max, "count": g.count}
                for name, g in self._gauges.items()
            }
            meta = dict(self._metadata)
        full_meta = default_metadata(self._start_wall, self._wall_clock())
        full_meta.update(meta)
        if metadata:
            full_meta.update(metadata)
        res: dict[str, Any] = {"name": "root", "gauges": gauges, "metadata": full_meta}
        res.update(tree)
        return res


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def default_metadata(start_wall: float, end_wall: float) -> dict[str, str]:
    """Format version, start/end Unix seconds, command line and package versions (as strings).

    Versions are read from installed package metadata, so torch is not imported for this.
    """
    meta = {
        "timer_format_version": TIMER_FORMAT_VERSION,
        "start_time_seconds": str(int(start_wall)),
        "end_time_seconds": str(int(end_wall)),
        "python_version": sys.version,
        "command_line_arguments": " ".join(sys.argv),
    }
    for key, dist in (
        ("agents_learn_version", "agents-learn"),
        ("mlagents_envs_version", "mlagents-envs"),
        ("pytorch_version", "torch"),
        ("numpy_version", "numpy"),
    ):
        version = _version(dist)
        if version is not None:
            meta[key] = version
    return meta


def write_timers_json(
    path: str | os.PathLike[str], timers: Timers, *, metadata: Mapping[str, str] | None = None
) -> Path:
    """Write ``timers.to_json_dict(metadata)`` to ``path`` (usually ``<run_dir>/run_logs/timers.json``).

    Written to a temporary file then renamed, so a reader never sees half a file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(timers.to_json_dict(metadata), f, indent=4)
    os.replace(tmp, target)
    return target


class GaugeWriter(StatsWriter):
    """Feeds every written summary into ``timers`` gauges as ``<category>.<key>.mean`` and
    ``.sum`` (key without ``/`` and spaces: ``3DBall.Environment.CumulativeReward.mean``)."""

    def __init__(self, timers: Timers) -> None:
        self.timers = timers

    @staticmethod
    def sanitize(key: str) -> str:
        return key.replace("/", ".").replace(" ", "")

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        for key, summary in values.items():
            base = f"{category}.{self.sanitize(key)}"
            self.timers.set_gauge(f"{base}.mean", summary.mean)
            self.timers.set_gauge(f"{base}.sum", summary.sum)
