"""PerfStats: RLlib-style mean/EMA milliseconds reported as Perf/ scalars."""

from __future__ import annotations

import pytest

from stats import PerfKind, PerfStats, StatsHub, StatsReporter, tags


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_window_means_in_ms_and_env_steps_per_second() -> None:
    clock = Clock()
    perf = PerfStats(clock=clock)
    for seconds in (0.010, 0.030):
        with perf.measure(PerfKind.ENV_WAIT):
            clock.t += seconds
    perf.add(PerfKind.INFERENCE, 0.004)
    perf.add(PerfKind.UPDATE, 0.25)
    perf.add_env_steps(2)
    clock.t += 0.96  # window: 1.0 s
    r = StatsReporter("B")
    s = perf.report(r)
    assert s.mean_env_wait_ms == pytest.approx(20.0)
    assert s.mean_inference_ms == pytest.approx(4.0)
    assert s.mean_update_ms == pytest.approx(250.0)
    assert s.mean_processing_ms is None
    assert s.env_steps_per_s == pytest.approx(2.0)
    assert r.get_stats_summaries(tags.PERF_ENV_WAIT_MS).mean == pytest.approx(20.0)
    assert r.get_stats_summaries(tags.PERF_UPDATE_MS).mean == pytest.approx(250.0)
    assert r.get_stats_summaries(tags.PERF_PROCESSING_MS).count == 0
    assert r.get_stats_summaries(tags.PERF_ENV_STEPS_PER_SECOND).mean == pytest.approx(2.0)
    assert perf.summary().mean_env_wait_ms is None  # report reset the window


def test_windows_from_marks_are_independent_of_each_other_and_of_resets() -> None:
    clock = Clock()
    perf = PerfStats(clock=clock)
    first = perf.mark()
    perf.add(PerfKind.UPDATE, 0.1)
    perf.add_env_steps(4)
    clock.t = 2.0
    second = perf.mark()
    perf.add(PerfKind.UPDATE, 0.3)
    clock.t = 4.0
    perf.summary()  # another window's reset changes neither
    summary, end = perf.summary_since(first)
    assert summary.mean_update_ms == pytest.approx(200.0) and summary.env_steps_per_s == pytest.approx(1.0)
    summary, _ = perf.summary_since(second)
    assert summary.mean_update_ms == pytest.approx(300.0) and summary.env_steps_per_s is None
    assert perf.summary_since(end)[0].mean_update_ms is None  # nothing measured since


def test_every_written_window_carries_perf_from_a_before_write_callback() -> None:
    perf = PerfStats(clock=Clock())
    hub = StatsHub()
    reporter = hub.reporter("B")
    hub.add_before_write("B", lambda: perf.report(reporter))
    perf.add(PerfKind.INFERENCE, 0.004)
    assert reporter.write_stats(100)[tags.PERF_INFERENCE_MS].mean == pytest.approx(4.0)
    assert tags.PERF_INFERENCE_MS not in reporter.write_stats(200)  # nothing measured in between


def test_ema_survives_resets() -> None:
    perf = PerfStats(ema_coef=0.5, clock=Clock())
    perf.add(PerfKind.PROCESSING, 0.010)
    perf.add(PerfKind.PROCESSING, 0.020)  # 0.5*10 + 0.5*20 = 15 ms
    assert perf.summary().mean_processing_ms == pytest.approx(15.0)
    perf.add(PerfKind.PROCESSING, 0.005)  # 0.5*15 + 0.5*5 = 10 ms
    assert perf.summary().mean_processing_ms == pytest.approx(10.0)


def test_measure_records_even_when_the_block_raises() -> None:
    clock = Clock()
    perf = PerfStats(clock=clock)
    with pytest.raises(KeyError), perf.measure(PerfKind.INFERENCE):
        clock.t += 0.002
        raise KeyError("x")
    assert perf.summary().mean_inference_ms == pytest.approx(2.0)


@pytest.mark.parametrize("coef", [0.0, 1.5, -0.1])
def test_bad_ema_coef_is_refused(coef: float) -> None:
    with pytest.raises(ValueError, match="ema_coef"):
        PerfStats(ema_coef=coef)
