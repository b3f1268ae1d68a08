"""Timers: nesting, per-thread stacks (trainer threads under ML-Agents' thread_root), timers.json shape,
gauges and metadata as ML-Agents names them, merged worker trees."""

from __future__ import annotations

import importlib.metadata
import json
import threading
from pathlib import Path

import pytest

from stats import GaugeWriter, StatsHub, StatsReporter, Timers, timed_method, timer_names, write_timers_json


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


def test_other_threads_go_under_thread_parent_as_ml_agents_trainer_threads() -> None:
    """With ML-Agents' path, a trainer thread's scopes land at
    TrainerController.start_learning/trainer_threads/thread_root, parallel; the main thread's
    scopes stay where they were opened."""
    clock = Clock()
    timers = Timers(clock=clock, thread_parent=timer_names.TRAINER_THREAD_PATH)

    def trainer() -> None:
        with timers.scope(timer_names.TRAINER_ADVANCE), timers.scope(timer_names.UPDATE_POLICY):
            clock.t += 1.0

    with timers.scope(timer_names.START_LEARNING):
        threads = [threading.Thread(target=trainer) for _ in range(2)]
        for thread in threads:
            thread.start()
            thread.join()
        with timers.scope(timer_names.ADVANCE):
            clock.t += 0.5
    tree = timers.to_json_dict()
    assert list(tree["children"]) == [timer_names.START_LEARNING]
    learning = tree["children"][timer_names.START_LEARNING]
    assert "is_parallel" not in learning and learning["total"] == 2.5
    assert set(learning["children"]) == {timer_names.ADVANCE, timer_names.TRAINER_THREADS}
    thread_root = learning["children"][timer_names.TRAINER_THREADS]["children"][timer_names.THREAD_ROOT]
    assert (thread_root["total"], thread_root["count"], thread_root["is_parallel"]) == (2.0, 2, True)
    advance = thread_root["children"][timer_names.TRAINER_ADVANCE]
    assert (advance["total"], advance["count"], advance["is_parallel"]) == (2.0, 2, True)
    assert list(advance["children"]) == [timer_names.UPDATE_POLICY]


def test_timed_method_uses_the_instance_timers() -> None:
    clock = Clock()

    class Loop:
        def __init__(self, timers: Timers) -> None:
            self.timers = timers

        @timed_method(timer_names.ADVANCE)
        def advance(self, dt: float) -> float:
            clock.t += dt
            return dt

    first, second = Timers(clock=clock), Timers(clock=clock)
    assert Loop(first).advance(1.0) == 1.0
    Loop(second).advance(2.0)
    Loop(second).advance(2.0)
    assert first.to_json_dict()["children"][timer_names.ADVANCE]["count"] == 1
    assert second.to_json_dict()["children"][timer_names.ADVANCE] == {"total": 4.0, "count": 2, "self": 4.0}


def test_gauges_named_as_ml_agents_gauge_writer_and_nan_ignored() -> None:
    timers = Timers(clock=Clock())
    reporter = StatsReporter("My Walker", StatsHub([GaugeWriter(timers)]))
    for step in (997.0, 1999.0):
        reporter.set_stat("Step", step)
        reporter.add_stat("Losses/Value Loss", float("nan") if step > 1000 else 0.5)
        reporter.set_stat("Perf/mean_env_wait_ms", 3.0)
        reporter.write_stats(int(step))
    gauges = timers.to_json_dict()["gauges"]
    assert gauges["MyWalker.Perf.mean_env_wait_ms.mean"]["count"] == 2  # ours, beside ML-Agents' gauges
    assert gauges["MyWalker.Step.mean"] == {"value": 1999.0, "min": 997.0, "max": 1999.0, "count": 2}
    assert gauges["MyWalker.Step.sum"]["value"] == 1999.0
    assert gauges["MyWalker.Losses.ValueLoss.mean"] == {"value": 0.5, "min": 0.5, "max": 0.5, "count": 1}


def test_metadata_has_ml_agents_keys_in_its_order() -> None:
    timers = Timers(clock=Clock(), wall_clock=lambda: 1700000000.0)
    timers.add_metadata("communication_protocol_version", "1.5.0")
    meta = timers.to_json_dict()["metadata"]
    assert list(meta) == [
        "timer_format_version",
        "start_time_seconds",
        "python_version",
        "command_line_arguments",
        "mlagents_version",
        "mlagents_envs_version",
        "communication_protocol_version",
        "pytorch_version",
        "numpy_version",
        "agents_learn_version",
        "end_time_seconds",
    ]
    assert meta["mlagents_version"] == meta["mlagents_envs_version"] == "0.28.0"
    assert meta["pytorch_version"] == importlib.metadata.version("torch")
    assert all(isinstance(value, str) for value in meta.values())
