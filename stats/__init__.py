"""Numbers out: StatsReporter/StatsHub, writers (TensorBoard, console, JSON lines, plugins),
timers and perf stats. Imports nothing else of agents-learn; importing it does no work."""

from stats.console_writer import ConsoleWriter
from stats.defaults import default_writers
from stats.exceptions import StatsError, StatsWriterError, StatsWriterPluginError
from stats.jsonl_writer import JsonLinesWriter
from stats.perf import PerfKind, PerfMark, PerfStats, PerfSummary
from stats.plugins import STATS_WRITER_GROUP, check_stats_writer_plugins, load_stats_writer_plugins
from stats.reporter import StatsHub, StatsReporter
from stats.summary import StatsAggregationMethod, StatsProperty, StatsSummary
from stats.tensorboard_writer import TensorBoardWriter
from stats.timers import GaugeWriter, Timers, timed_method, write_timers_json
from stats.writer import StatsWriter

__all__ = [
    "ConsoleWriter",
    "GaugeWriter",
    "JsonLinesWriter",
    "PerfKind",
    "PerfMark",
    "PerfStats",
    "PerfSummary",
    "STATS_WRITER_GROUP",
    "StatsAggregationMethod",
    "StatsError",
    "StatsHub",
    "StatsProperty",
    "StatsReporter",
    "StatsSummary",
    "StatsWriter",
    "StatsWriterError",
    "StatsWriterPluginError",
    "TensorBoardWriter",
    "Timers",
    "default_writers",
    "check_stats_writer_plugins",
    "load_stats_writer_plugins",
    "timed_method",
    "write_timers_json",
]
