"""Third-party stats writers registered through the ``agents_learn.stats_writer`` entry-point group.

A plugin distribution declares, in its packaging metadata::

    [project.entry-points."agents_learn.stats_writer"]
    my_writer = "my_package.module:make_writers"

where ``make_writers(run_options) -> list[StatsWriter]``. Every entry point of the group is
loaded at start-up; one that fails stops the run with a ``StatsWriterPluginError`` naming it
(ML-Agents logs and skips: a silently missing dashboard is worse than a clear error).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

from stats.exceptions import StatsWriterPluginError
from stats.writer import StatsWriter

STATS_WRITER_GROUP = "agents_learn.stats_writer"


def _describe(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    source = f" from distribution {dist.name!r}" if dist is not None else ""
    return f"stats writer plugin {entry_point.name!r} ({entry_point.value}){source}"


def stats_writer_entry_points(group: str = STATS_WRITER_GROUP) -> list[importlib.metadata.EntryPoint]:
    """The group's entry points, sorted by name so the writer order is reproducible."""
    return sorted(importlib.metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def check_stats_writer_plugins(*, group: str = STATS_WRITER_GROUP) -> list[str]:
    """Import every plugin of ``group`` without creating its writers (``--check``); their
    descriptions. Raises ``StatsWriterPluginError`` as :func:`load_stats_writer_plugins` does."""
    described = []
    for entry_point in stats_writer_entry_points(group):
        what = _describe(entry_point)
        _load_factory(entry_point, what)
        described.append(what)
    return described


def _load_factory(entry_point: importlib.metadata.EntryPoint, what: str) -> Any:
    try:
        factory = entry_point.load()
    except Exception as exc:
        raise StatsWriterPluginError(f"{what} failed to load: {type(exc).__name__}: {exc}") from exc
    if not callable(factory):
        raise StatsWriterPluginError(f"{what} is not callable (got {type(factory).__name__})")
    return factory


def load_stats_writer_plugins(run_options: Any, *, group: str = STATS_WRITER_GROUP) -> list[StatsWriter]:
    """Load every plugin of ``group`` and call it with ``run_options``; their writers, in order.

    Raises ``StatsWriterPluginError`` naming the entry point if it cannot be imported, is not
    callable, raises, or returns anything but a sequence of ``StatsWriter``.
    """
    writers: list[StatsWriter] = []
    for entry_point in stats_writer_entry_points(group):
        what = _describe(entry_point)
        factory = _load_factory(entry_point, what)
        try:
            produced = factory(run_options)
        except Exception as exc:
            raise StatsWriterPluginError(
                f"{what} raised while creating its writers: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(produced, Sequence) or isinstance(produced, (str, bytes)):
            raise StatsWriterPluginError(f"{what} must return a list of StatsWriter, got {type(produced).__name__}")
        for writer in produced:
            if not isinstance(writer, StatsWriter):
                raise StatsWriterPluginError(
                    f"{what} returned {type(writer).__name__}, which is not a stats.StatsWriter"
                )
        writers.extend(produced)
    return writers
