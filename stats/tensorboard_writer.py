"""TensorBoard event files laid out as ML-Agents writes them: ``<run_dir>/<category>/events.out.tfevents.*``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from stats._plain import markdown_table
from stats.summary import StatsAggregationMethod, StatsProperty, StatsSummary
from stats.tags import HIDDEN_KEYS, HYPERPARAMETERS_TEXT
from stats.writer import StatsWriter

_HISTOGRAM_BINS = 30


class TensorBoardWriter(StatsWriter):
    """One event file per category under ``run_dir`` (``results/<run-id>``); x axis = step.

    Scalars carry ``summary.aggregated_value`` under the key as tag; HISTOGRAM keys also get a
    ``<key>_hist`` histogram (``Environment/Cumulative Reward_hist``); keys in ``hidden_keys``
    (``Is Training``, ``Step``) are not drawn; hyperparameters become a markdown text summary
    tagged ``Hyperparameters/text_summary`` at step 0, the tag ML-Agents' files carry. Files are
    flushed after every write so readers see them at once. ``clear_past_data`` deletes old event
    files of a category when its writer is first opened (a fresh run over an old run-id).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        hidden_keys: Iterable[str] = HIDDEN_KEYS,
        clear_past_data: bool = False,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.hidden_keys = frozenset(hidden_keys)
        self.clear_past_data = clear_past_data
        self._writers: dict[str, Any] = {}

    def category_dir(self, category: str) -> Path:
        return self.run_dir / category

    def _writer(self, category: str) -> Any:
        writer = self._writers.get(category)
        if writer is None:
            # Imported here so that `import stats` stays light.
            from tensorboard.summary.writer.event_file_writer import EventFileWriter

            directory = self.category_dir(category)
            directory.mkdir(parents=True, exist_ok=True)
            if self.clear_past_data:
                for old in directory.glob("events.out.tfevents.*"):
                    old.unlink()
            writer = self._writers[category] = EventFileWriter(str(directory), max_queue_size=64)
        return writer

    def _add(self, category: str, summary_values: list[Any], step: int, wall_time: float) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        event = event_pb2.Event(wall_time=wall_time, step=int(step), summary=summary_pb2.Summary(value=summary_values))
        self._writer(category).add_event(event)

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        from tensorboard.compat.proto import summary_pb2

        summary_values = []
        for key, summary in values.items():
            if key in self.hidden_keys or summary.count == 0:
                continue
            summary_values.append(summary_pb2.Summary.Value(tag=key, simple_value=float(summary.aggregated_value)))
            if summary.aggregation_method is StatsAggregationMethod.HISTOGRAM and summary.full_dist is not None:
                summary_values.append(
                    summary_pb2.Summary.Value(tag=f"{key}_hist", histo=_histogram_proto(summary.full_dist))
                )
        writer = self._writer(category)
        if summary_values:
            self._add(category, summary_values, step, time.time())
        writer.flush()

    def add_property(self, category: str, property_type: StatsProperty, value: Any) -> None:
        if property_type is not StatsProperty.HYPERPARAMETERS:
            return
        self._add(category, [_text_value(HYPERPARAMETERS_TEXT, markdown_table(value))], 0, time.time())
        self._writer(category).flush()

    def close(self) -> None:
        writers, self._writers = self._writers, {}
        for writer in writers.values():
            writer.close()


def _text_value(tag: str, text: str) -> Any:
    """A text-plugin ``Summary.Value`` shaped as torch's ``add_text`` writes it (ML-Agents' files):
    a one-element DT_STRING tensor and ``TextPluginData`` version 0."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorboard.plugins.text import plugin_data_pb2

    plugin = summary_pb2.SummaryMetadata.PluginData(
        plugin_name="text", content=plugin_data_pb2.TextPluginData(version=0).SerializeToString()
    )
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING,
        string_val=[text.encode("utf-8")],
        tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]),
    )
    return summary_pb2.Summary.Value(tag=tag, metadata=summary_pb2.SummaryMetadata(plugin_data=plugin), tensor=tensor)


def _histogram_proto(samples: np.ndarray) -> Any:
    """A TensorBoard ``HistogramProto`` of ``samples`` ([N] float): right bucket edges and counts."""
    from tensorboard.compat.proto import summary_pb2

    arr = np.asarray(samples, dtype=np.float64).reshape(-1)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return summary_pb2.HistogramProto()
    counts, edges = np.histogram(arr, bins=_HISTOGRAM_BINS)
    return summary_pb2.HistogramProto(
        min=float(arr.min()),
        max=float(arr.max()),
        num=float(arr.size),
        sum=float(arr.sum()),
        sum_squares=float(np.dot(arr, arr)),
        bucket_limit=edges[1:].tolist(),
        bucket=counts.astype(np.float64).tolist(),
    )
