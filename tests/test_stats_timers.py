"""Timers: nesting, per-thread stacks, timers.json shape, gauges, merged worker trees."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from stats import GaugeWriter, StatsHub, StatsReporter, Timers, write_timers_json


class Clock:
    """A clock that only moves when told (shared by threads)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_nested_scopes_totals_counts_and_self() -> None:
    clock = Clock()
    timers = Timers(clock=clock, wall_clock=lambda: 1700000000.9)
    with timers.scope("advance"):
        clock.t += 1.0
        for _ in range(3):
            with timers("env_step"):
                clock.t += 2.0
        with timers.scope("update"):
            clock.t += 0.5
    clock.t += 0.25
    tree = timers.to_json_dict()
    assert (tree["name"], tree["total"], tree["count"], tree["self"]) == ("root", 7.75, 1, 0.25)
    advance = tree["children"]["advance"]
    assert (advance["total"], advance["count"], advance["self"]) == (7.5, 1, 1.0)
    assert advance["children"]["env_step"] == {"total": 6.0, "count": 3, "self": 6.0}
    assert advance["children"]["update"] == {"total": 0.5, "count": 1, "self": 0.5}
    assert "is_parallel" not in advance


def test_decorator_and_exceptions_still_count() -> None:
    clock = Clock()
    timers = Timers(clock=clock)

    @timers.timed("policy.evaluate")
    def evaluate(x: int) -> int:
        clock.t += 0.1
        if x < 0:
            raise ValueError("bad")
        return 2 * x

    @timers.timed()
    def unnamed() -> None:
        pass

    assert evaluate(2) == 4
    with pytest.raises(ValueError):
        evaluate(-1)
    with timers.scope("after"):  # the failed call's scope was popped: "after" is top level
        unnamed()
    children = timers.to_json_dict()["children"]
    assert children["policy.evaluate"]["count"] == 2
    assert children["policy.evaluate"]["total"] == pytest.approx(0.2)
    assert list(children["after"]["children"]) == [unnamed.__qualname__]


def test_each_thread_nests_only_its_own_scopes() -> None:
    """A trainer thread inside "trainer_advance" while the main thread times "env_step":
    env_step must not land under trainer_advance, and the thread's subtree is parallel."""
    clock = Clock()
    timers = Timers(clock=clock)
    inside, main_done = threading.Event(), threading.Event()

    def trainer() -> None:
        with timers.scope("trainer_advance"):
            inside.set()
            main_done.wait(5)
            with timers.scope("update_policy"):
                clock.t += 1.0

    thread = threading.Thread(target=trainer)
    thread.start()
    assert inside.wait(5)
    with timers.scope("env_step"):
        clock.t += 2.0
    main_done.set()
    thread.join()
    tree = timers.to_json_dict()
    assert set(tree["children"]) == {"trainer_advance", "env_step"}
    env_step = tree["children"]["env_step"]
    assert env_step == {"total": 2.0, "count": 1, "self": 2.0}
    advance = tree["children"]["trainer_advance"]
    assert advance["is_parallel"] is True and advance["total"] == 3.0
    assert list(advance["children"]) == ["update_policy"]
    assert advance["children"]["update_policy"]["total"] == 1.0


def test_merge_worker_tree_is_parallel() -> None:
    timers = Timers(clock=Clock())
    worker = {"total": 5.0, "count": 1, "children": {"env.step": {"total": 4.0, "count": 10}}}
    timers.merge(worker, under="workers")
    timers.merge(worker, under="workers")
    workers = timers.to_json_dict()["children"]["workers"]
    assert workers["is_parallel"] is True
    assert workers["children"]["env.step"] == {"total": 8.0, "count": 20, "is_parallel": True, "self": 8.0}


def test_timers_json_file_with_gauges_and_metadata(tmp_path: Path) -> None:
    timers = Timers(clock=Clock(), wall_clock=lambda: 1700000000.9)
    reporter = StatsReporter("3DBall", StatsHub([GaugeWriter(timers)]))
    for rewards in ([1.0, 3.0], [5.0]):
        reporter.add_stats("Environment/Cumulative Reward", rewards)
        reporter.write_stats(1)
    timers.add_metadata("communication_protocol_version", "1.5.0")
    path = write_timers_json(
        tmp_path / "run_logs" / "timers.json", timers, metadata={"command_line_arguments": "agents-learn x.yaml"}
    )
    doc = json.loads(path.read_text())
    assert list(doc)[:3] == ["name", "gauges", "metadata"]
    assert doc["gauges"]["3DBall.Environment.CumulativeReward.mean"] == {
        "value": 5.0, "min": 2.0, "max": 5.0, "count": 2,
    }  # fmt: skip
    assert doc["gauges"]["3DBall.Environment.CumulativeReward.sum"]["value"] == 5.0
    meta = doc["metadata"]
    assert meta["timer_format_version"] == "0.1.0"
    assert (meta["start_time_seconds"], meta["end_time_seconds"]) == ("1700000000", "1700000000")
    assert meta["command_line_arguments"] == "agents-learn x.yaml"
    assert meta["communication_protocol_version"] == "1.5.0"
    import numpy

    assert meta["numpy_version"] == numpy.__version__
    assert {"python_version", "pytorch_version"} <= set(meta)
    assert not (tmp_path / "run_logs" / "timers.json.tmp").exists()
