"""Hierarchical, thread-aware timers per run, written as ``run_logs/timers.json``.

Each thread has its own stack of open scopes, so a trainer thread's scopes never nest under
the env thread's. The JSON tree (REFERENCE.md 1.13) merges the threads by scope name under
one ``root``; subtrees timed on threads other than the one that created the ``Timers`` (and
trees merged in from worker processes) are marked ``is_parallel``, since their time overlaps,
and go under ``thread_parent`` (ML-Agents: ``TrainerController.start_learning/trainer_threads/
thread_root``). Scope names as ML-Agents writes them are in ``stats.timer_names``.

    timers = Timers()
    with timers.scope("env_step"):
        ...

    @timers.timed("update")
    def update(): ...

    class Trainer:            # objects that get the run's Timers after they are made
        timers: Timers

        @timed_method("trainer_advance")
        def advance(self): ...
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from stats.summary import StatsSummary
from stats.writer import StatsWriter

TIMER_FORMAT_VERSION = "0.1.0"
METADATA_ORDER = (
    "timer_format_version",
    "start_time_seconds",
    "python_version",
    "command_line_arguments",
    "mlagents_version",
    "mlagents_envs_version",
    "communication_protocol_version",
    "pytorch_version",
    "numpy_version",
)
"""ML-Agents' ``metadata`` keys in its order; ours follow them, ``end_time_seconds`` comes last."""

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
    ``wall_clock`` Unix seconds for the metadata. ``thread_parent``: the path of scope names
    under which other threads' scopes go (their last node counts one per thread and the
    seconds of the thread's top-level scopes); empty: under the root. Timing a scope costs
    about a microsecond.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.perf_counter,
        wall_clock: Callable[[], float] = time.time,
        thread_parent: Sequence[str] = (),
    ) -> None:
        self._clock = clock
        self._thread_parent = tuple(thread_parent)
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
        """Track the latest ``value`` of ``name`` with its min, max and count (NaN is ignored,
        as ML-Agents does, so one empty window does not poison min and max)."""
        if math.isnan(value):
            return
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
            for thread_root in (r for r, on_owner in roots if on_owner):
                for name, child in list(thread_root.children.items()):
                    root.child(name).merge(child, False)
            for thread_root in (r for r, on_owner in roots if not on_owner):
                children = list(thread_root.children.items())
                target = root
                if self._thread_parent:
                    for name in self._thread_parent:
                        target = target.child(name)
                    target.total += sum(child.total for _, child in children)
                    target.count += 1
                    target.is_parallel = True
                for name, child in children:
                    target.child(name).merge(child, True)
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
        res: dict[str, Any] = {"name": "root", "gauges": gauges, "metadata": _ordered(full_meta)}
        res.update(tree)
        return res


def timed_method(name: str) -> Callable[[F], F]:
    """Decorator timing each call of a method as ``name`` in its instance's ``timers`` attribute
    (a :class:`Timers`): for objects made before the run's timers are handed to them, as
    ML-Agents' ``@timed`` times ``TrainerController.advance``."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _Scope(self.timers, name):
                return method(self, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def default_metadata(start_wall: float, end_wall: float) -> dict[str, str]:
    """ML-Agents' metadata keys (format version, start/end Unix seconds, ``sys.version``, the
    command line, package versions; all strings) and ``agents_learn_version``.

    ``mlagents_version`` is the ML-Agents release whose files we write (that of the installed
    mlagents-envs, 0.28.0), as in training_status.json, so tools keyed on it read our runs as
    that release's; ``agents_learn_version`` says which trainer wrote them. The Unity protocol
    version (``communication_protocol_version``) is added by the run wiring, which may import
    mlagents_envs' environment. Versions come from package metadata: torch is not imported.
    """
    meta = {
        "timer_format_version": TIMER_FORMAT_VERSION,
        "start_time_seconds": str(int(start_wall)),
        "python_version": sys.version,
        "command_line_arguments": " ".join(sys.argv),
    }
    for key, dist in (
        ("mlagents_version", "mlagents-envs"),
        ("mlagents_envs_version", "mlagents-envs"),
        ("pytorch_version", "torch"),
        ("numpy_version", "numpy"),
        ("agents_learn_version", "agents-learn"),
    ):
        version = _version(dist)
        if version is not None:
            meta[key] = version
    meta["end_time_seconds"] = str(int(end_wall))
    return meta


def _ordered(meta: Mapping[str, str]) -> dict[str, str]:
    """``meta`` with ML-Agents' keys first in its order, then ours, ``end_time_seconds`` last."""
    first = [k for k in METADATA_ORDER if k in meta]
    rest = [k for k in meta if k not in METADATA_ORDER and k != "end_time_seconds"]
    last = ["end_time_seconds"] if "end_time_seconds" in meta else []
    return {k: meta[k] for k in first + rest + last}


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
    """Feeds every written summary into ``timers`` gauges as ML-Agents' GaugeWriter names them:
    ``<category>.<key>.mean`` and ``.sum`` with ``/`` turned into ``.`` and spaces dropped
    (``3DBall.Environment.CumulativeReward.mean``, ``3DBall.Step.mean``: the trainer's step)."""

    def __init__(self, timers: Timers) -> None:
        self.timers = timers

    @staticmethod
    def sanitize(name: str) -> str:
        return name.replace("/", ".").replace(" ", "")

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        for key, summary in values.items():
            self.timers.set_gauge(self.sanitize(f"{category}.{key}.mean"), summary.mean)
            self.timers.set_gauge(self.sanitize(f"{category}.{key}.sum"), summary.sum)
