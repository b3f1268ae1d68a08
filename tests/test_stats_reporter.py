"""StatsReporter / StatsHub: aggregation semantics, shared windows, threads, writer dispatch."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import (
    StatsAggregationMethod,
    StatsHub,
    StatsProperty,
    StatsReporter,
    StatsSummary,
    StatsWriter,
    StatsWriterError,
)

AVG = StatsAggregationMethod.AVERAGE
SUM = StatsAggregationMethod.SUM
RECENT = StatsAggregationMethod.MOST_RECENT
HIST = StatsAggregationMethod.HISTOGRAM


class Recorder(StatsWriter):
    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, StatsSummary], int]] = []
        self.properties: list[tuple[str, StatsProperty, Any]] = []
        self.closed = 0

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        self.writes.append((category, dict(values), step))

    def add_property(self, category: str, property_type: StatsProperty, value: Any) -> None:
        self.properties.append((category, property_type, value))

    def close(self) -> None:
        self.closed += 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_enum_values_match_mlagents_envs() -> None:
    from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod as Theirs

    assert {m.name: m.value for m in StatsAggregationMethod} == {m.name: m.value for m in Theirs}


def test_average_summary_fields() -> None:
    r = StatsReporter("B")
    for v in (1.0, 2.0, 3.0, 6.0):
        r.add_stat("x", v)
    s = r.get_stats_summaries("x")
    assert (s.mean, s.min, s.max, s.count, s.sum) == (3.0, 1.0, 6.0, 4, 12.0)
    assert s.std == pytest.approx(np.std([1.0, 2.0, 3.0, 6.0]), rel=1e-12)
    assert s.aggregation_method is AVG
    assert s.aggregated_value == 3.0
    assert s.full_dist is None


def test_sum_draws_the_sum() -> None:
    r = StatsReporter("B")
    r.add_stat("n", 2.0, SUM)
    r.add_stats("n", [3.0, 5.0], SUM)
    s = r.get_stats_summaries("n")
    assert (s.sum, s.count, s.mean, s.aggregated_value) == (10.0, 3, 10.0 / 3, 10.0)


def test_most_recent_keeps_only_the_last_value() -> None:
    r = StatsReporter("B")
    for v in (1.0, 5.0, 3.0):
        r.add_stat("lesson", v, RECENT)
    s = r.get_stats_summaries("lesson")
    assert (s.mean, s.count, s.aggregated_value) == (3.0, 1, 3.0)
    r.add_stats("lesson", np.array([7.0, 9.0, 4.0]), RECENT)
    assert r.get_stats_summaries("lesson").mean == 4.0


def test_set_stat_replaces_the_window() -> None:
    r = StatsReporter("B")
    r.add_stats("lr", [1.0, 2.0, 3.0])
    r.set_stat("lr", 0.5)
    s = r.get_stats_summaries("lr")
    assert (s.mean, s.count, s.aggregation_method) == (0.5, 1, RECENT)


def test_histogram_keeps_samples_in_order() -> None:
    r = StatsReporter("B")
    r.add_stat("h", 4.0, HIST)
    r.add_stats("h", np.arange(40.0), HIST)
    r.add_stats("h", [-1.0, -2.0], HIST)
    s = r.get_stats_summaries("h")
    np.testing.assert_array_equal(s.full_dist, np.concatenate([[4.0], np.arange(40.0), [-1.0, -2.0]]))
    assert (s.count, s.min, s.max) == (43, -2.0, 39.0)


def test_empty_summary_for_unknown_key() -> None:
    s = StatsReporter("B").get_stats_summaries("nothing")
    assert s.count == 0 and s == StatsSummary.empty()
    assert (s.mean, s.std, s.sum) == (0.0, 0.0, 0.0)


def test_add_stats_accepts_ints_and_flattens_any_shape() -> None:
    r = StatsReporter("B")
    r.add_stats("x", np.array([[1, 2], [3, 4]], dtype=np.int32))
    r.add_stats("x", np.arange(100, dtype=np.int64).reshape(10, 10))
    r.add_stats("x", np.array([], dtype=np.float32))
    s = r.get_stats_summaries("x")
    assert (s.count, s.sum, s.min, s.max) == (104, 10.0 + 4950.0, 0.0, 99.0)


batches = st.lists(
    st.lists(st.integers(-1000, 1000), min_size=0, max_size=80),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(batches=batches, as_array=st.booleans())
def test_any_split_into_batches_gives_the_same_summary(batches: list[list[int]], as_array: bool) -> None:
    r = StatsReporter("B")
    for batch in batches:
        if len(batch) == 1:
            r.add_stat("x", batch[0])
        else:
            r.add_stats("x", np.array(batch, dtype=np.float64) if as_array else [float(v) for v in batch])
    flat = np.array([v for b in batches for v in b], dtype=np.float64)
    s = r.get_stats_summaries("x")
    if flat.size == 0:
        assert s.count == 0
        return
    assert s.count == flat.size
    assert s.sum == flat.sum()  # integers: exact
    assert (s.min, s.max) == (flat.min(), flat.max())
    assert s.mean == pytest.approx(flat.mean(), rel=1e-12, abs=1e-12)
    assert s.std == pytest.approx(flat.std(), rel=1e-9, abs=1e-9)


def test_write_stats_hands_summaries_to_every_writer_and_clears() -> None:
    a, b = Recorder(), Recorder()
    hub = StatsHub([a])
    hub.add_writer(b)
    r = StatsReporter("3DBall", hub)
    r.add_stats("Environment/Cumulative Reward", [1.0, 3.0])
    written = r.write_stats(500)
    for rec in (a, b):
        [(category, values, step)] = rec.writes
        assert (category, step) == ("3DBall", 500)
        assert values["Environment/Cumulative Reward"].mean == 2.0
    assert written["Environment/Cumulative Reward"].count == 2
    assert r.get_stats_summaries("Environment/Cumulative Reward").count == 0
    r.write_stats(600)  # an empty window still reaches the writers (console's "No episode" line)
    assert a.writes[-1] == ("3DBall", {}, 600)


def test_reporters_of_one_category_share_a_window_per_hub() -> None:
    hub, other_hub = StatsHub(), StatsHub()
    env_side, trainer_side = StatsReporter("B", hub), hub.reporter("B")
    env_side.add_stat("x", 1.0)
    trainer_side.add_stat("x", 3.0)
    StatsReporter("C", hub).add_stat("x", 100.0)
    StatsReporter("B", other_hub).add_stat("x", 50.0)
    StatsReporter("B").add_stat("x", 70.0)
    assert env_side.get_stats_summaries("x").mean == 2.0
    assert trainer_side.get_stats_summaries("x").count == 2
    assert StatsReporter("B", other_hub).get_stats_summaries("x").mean == 50.0
    assert StatsReporter("B").get_stats_summaries("x").count == 0  # no hub: own window


def test_properties_reach_writers_and_are_remembered() -> None:
    rec = Recorder()
    r = StatsReporter("B", StatsHub([rec]))
    r.add_property(StatsProperty.IS_TRAINING, True)
    assert rec.properties == [("B", StatsProperty.IS_TRAINING, True)]
    assert r.get_property(StatsProperty.IS_TRAINING) is True
    assert r.get_property(StatsProperty.SELF_PLAY, "absent") == "absent"


def test_a_failing_writer_does_not_starve_the_others_and_the_error_surfaces() -> None:
    class Broken(Recorder):
        def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
            raise OSError("disk full")

    good = Recorder()
    r = StatsReporter("B", StatsHub([Broken(), good]))
    r.add_stat("x", 1.0)
    with pytest.raises(StatsWriterError, match="stats writer Broken failed in write_stats: OSError: disk full"):
        r.write_stats(1)
    assert good.writes[0][1]["x"].mean == 1.0
    assert r.get_stats_summaries("x").count == 0


def test_close_closes_each_writer_once() -> None:
    rec = Recorder()
    hub = StatsHub([rec])
    hub.close()
    hub.close()
    assert rec.closed == 1


def test_concurrent_reporters_lose_nothing() -> None:
    """Four threads report into one category (own reporters, one hub) while a fifth writes
    windows: the written windows plus the last one hold every value exactly once."""
    rec = Recorder()
    hub = StatsHub([rec])
    n_threads, rounds = 4, 1500
    start = threading.Barrier(n_threads + 1)
    done = threading.Event()

    def report(tid: int) -> None:
        r = StatsReporter("B", hub)
        start.wait()
        for _ in range(rounds):
            r.add_stat("singles", 1.0)
            r.add_stats("batch", np.full(40, float(tid + 1)))  # numpy path
            r.add_stats("small", [2.0, 2.0, 2.0], SUM)  # python path

    def write() -> None:
        r = StatsReporter("B", hub)
        start.wait()
        step = 0
        while not done.is_set():
            step += 1
            r.write_stats(step)

    threads = [threading.Thread(target=report, args=(t,)) for t in range(n_threads)]
    writer = threading.Thread(target=write)
    for t in (*threads, writer):
        t.start()
    for t in threads:
        t.join()
    done.set()
    writer.join()
    StatsReporter("B", hub).write_stats(10**6)

    def total(key: str) -> tuple[int, float]:
        count = sum(v[key].count for _, v, _ in rec.writes if key in v)
        return count, sum(v[key].sum for _, v, _ in rec.writes if key in v)

    assert total("singles") == (n_threads * rounds, float(n_threads * rounds))
    assert total("batch") == (n_threads * rounds * 40, float(rounds * 40 * sum(range(1, n_threads + 1))))
    assert total("small") == (n_threads * rounds * 3, float(n_threads * rounds * 6))
    assert len(rec.writes) > 1  # windows really were written while threads reported
