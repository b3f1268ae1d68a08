"""The small interface every stats writer implements."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any

from stats.summary import StatsProperty, StatsSummary


class StatsWriter(abc.ABC):
    """Receives one category's summaries each time a reporter writes its window.

    A ``StatsHub`` calls its writers one at a time (under one lock), so a writer need not be
    thread-safe itself. Exceptions propagate to the reporting thread.
    """

    @abc.abstractmethod
    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        """Write one window: ``values`` maps key -> summary (may be empty), ``step`` is the x axis."""

    def add_property(self, category: str, property_type: StatsProperty, value: Any) -> None:  # noqa: B027 - optional hook
        """Record a non-numeric fact about ``category`` (hyperparameters, is-training...)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Flush and release files; called once by ``StatsHub.close``."""
