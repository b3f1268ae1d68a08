"""The stats package's exceptions: one small tree, each under a built-in."""

from __future__ import annotations


class StatsError(RuntimeError):
    """Base of every error raised by ``stats``."""


class StatsWriterPluginError(StatsError):
    """A stats-writer plugin (entry point) failed to import, raised, or returned a non-writer.

    The message names the entry point and its target (``name = module:attr``).
    """


class StatsWriterError(StatsError):
    """A stats writer raised while writing, adding a property or closing; the message names
    the writer and the error, the original is chained."""
