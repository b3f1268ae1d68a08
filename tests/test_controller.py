"""The trainer controller in this process: trainers appear with their behaviors (one per
``Name`` for every ``Name?team=N``), a trainer that raises ends the run with its error after
the other behaviors are saved, a stop request saves everything, perf stats reach the reporters."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import attrs
import pytest

from orchestration.controller import PERF_AGENT_STEPS_PER_SECOND
from orchestration.run import build_run
from stats import StatsWriter
from trainers.exceptions import TrainerError
from trainers.loop.registry import TrainerRegistry
from trainers.ppo.algorithm import PPO
from trainers.settings import (
    AlgorithmRecord,
    PPOSettings,
    RunOptions,
    TrainerSettings,
    builtin_algorithms,
    load_run_options,
)


class Keep(StatsWriter):
    def __init__(self):
        self.rows: list[tuple[str, int, dict]] = []

    def write_stats(self, category, values, step):
        self.rows.append((category, step, dict(values)))


class FailingPPO(PPO):
    """PPO whose first update raises."""

    def update(self, step):
        raise FloatingPointError("loss is nan")


class FailingWhenQueueFullPPO(PPO):
    """PPO whose first update waits until the environment side is blocked on the full
    trajectory queue (back-pressure), then raises."""

    queues: list = []

    def update(self, step):
        deadline = time.monotonic() + 20
        while not any(q.qsize() >= q.maxlen for q in self.queues) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the producer is now waiting in put()
        raise FloatingPointError("loss is nan")


def two_behavior_options(tmp_path: Path, **changes) -> RunOptions:
    settings = TrainerSettings(max_steps=2000, summary_freq=500, time_horizon=32, threaded=True)
    settings = attrs.evolve(
        settings, hyperparameters=attrs.evolve(settings.hyperparameters, buffer_size=256, batch_size=32), **changes
    )
    options = RunOptions(default_settings=settings)
    cp = attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="run")
    return attrs.evolve(options, checkpoint_settings=cp)


def make(
    tmp_path: Path,
    options: RunOptions,
    registry: TrainerRegistry,
    *,
    env: str = "builtin:TwoBehaviors",
    stop: threading.Event | None = None,
):
    keep = Keep()
    options = attrs.evolve(options, env_settings=attrs.evolve(options.env_settings, env_path=env, seed=1))
    run = build_run(options, registry=registry, writers=[keep], console=False, stop=stop)
    return run.controller, run.env_manager, keep


def test_two_behaviors_train_to_max_steps_and_are_saved(tmp_path):
    registry = TrainerRegistry(builtin_algorithms())
    controller, manager, keep = make(tmp_path, two_behavior_options(tmp_path), registry)
    outcome = controller.run(manager)
    assert not outcome.interrupted
    assert sorted(outcome.steps) == sorted(controller.trainers) and len(outcome.steps) == 2
    assert all(step >= 2000 for step in outcome.steps.values())
    for name in outcome.steps:
        assert (tmp_path / "run" / f"{name}.onnx").exists()
    written = {key for _, _, values in keep.rows for key in values}
    assert PERF_AGENT_STEPS_PER_SECOND in written and "Perf/mean_inference_ms" in written


def test_a_failing_trainer_stops_the_run_after_saving_the_others(tmp_path):
    options = two_behavior_options(tmp_path)
    controller, manager, _ = make(tmp_path, options, mixed_registry(FailingPPO))
    with pytest.raises(TrainerError, match="FloatingPointError: loss is nan"):
        controller.run(manager)
    assert sorted(controller.trainers) == ["LineWalker", "Reacher"]
    assert (tmp_path / "run" / "Reacher.onnx").exists()  # the healthy behavior is saved
    assert not (tmp_path / "run" / "LineWalker.onnx").exists()  # the failed one keeps its last checkpoint


def mixed_registry(failing_algorithm) -> TrainerRegistry:
    """PPO for every behavior but LineWalker, which gets ``failing_algorithm``."""
    registry = TrainerRegistry([AlgorithmRecord(name="ppo", hyperparameters_type=PPOSettings, factory=PPO)])
    failing = TrainerRegistry(
        [AlgorithmRecord(name="ppo", hyperparameters_type=PPOSettings, factory=failing_algorithm)]
    )

    class Mixed(TrainerRegistry):
        def create(self, *, behavior_name, **kwargs):
            chosen = failing if behavior_name == "LineWalker" else registry
            trainer = TrainerRegistry.create(chosen, behavior_name=behavior_name, **kwargs)
            if chosen is failing:
                failing_algorithm.queues = trainer._trajectory_queues
            return trainer

    return Mixed(registry.records.values())


def test_a_trainer_failing_while_its_queue_is_full_ends_the_run_in_seconds(tmp_path):
    # Big buffer: the trainer consumes slowly enough for the queue (20) to fill up first.
    options = two_behavior_options(tmp_path, max_steps=100_000)
    FailingWhenQueueFullPPO.queues = []
    controller, manager, _ = make(tmp_path, options, mixed_registry(FailingWhenQueueFullPPO))
    errors: list[BaseException] = []

    def run() -> None:
        try:
            controller.run(manager)
        except BaseException as error:  # noqa: BLE001 - inspected below
            errors.append(error)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the run hung after its trainer failed"
    assert len(errors) == 1 and isinstance(errors[0], TrainerError), errors
    assert "LineWalker" in str(errors[0]) and "loss is nan" in str(errors[0])
    assert FailingWhenQueueFullPPO.queues and all(q.closed for q in FailingWhenQueueFullPPO.queues)
    assert (tmp_path / "run" / "Reacher.onnx").exists()


def basic_run(tmp_path: Path, stop: threading.Event):
    """config/ppo/Basic.yaml on the built-in Basic, results in ``tmp_path/run``."""
    options = load_run_options("config/ppo/Basic.yaml")
    cp = attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="run")
    options = attrs.evolve(options, checkpoint_settings=cp)
    return make(tmp_path, options, TrainerRegistry.with_plugins(), env="builtin:Basic", stop=stop)


def test_stop_request_saves_every_behavior(tmp_path):
    stop = threading.Event()
    controller, manager, _ = basic_run(tmp_path, stop)
    original = controller.advance
    rounds = []

    def advance_then_stop(env_manager):
        original(env_manager)
        rounds.append(1)
        if len(rounds) == 50:
            stop.set()

    controller.advance = advance_then_stop
    outcome = controller.run(manager)
    assert outcome.interrupted and len(rounds) == 50
    assert (tmp_path / "run/Basic.onnx").exists() and (tmp_path / "run/Basic/checkpoint.pt").exists()


def test_behaviors_are_saved_while_the_environments_close_and_a_close_error_comes_after(tmp_path):
    stop = threading.Event()
    controller, manager, _ = basic_run(tmp_path, stop)
    original_close, model = manager.close, tmp_path / "run" / "Basic.onnx"
    seen_while_closing = []

    def slow_close_that_fails():
        """A build that takes its time to quit, and then does not quit cleanly."""
        original_close()
        deadline = time.monotonic() + 30
        while not model.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_while_closing.append(model.exists())
        raise RuntimeError("the build would not quit")

    manager.close = slow_close_that_fails
    original_advance = controller.advance

    def advance_then_stop(env_manager):
        original_advance(env_manager)
        stop.set()  # after the first round (the behavior exists): save and close

    controller.advance = advance_then_stop
    with pytest.raises(RuntimeError, match="would not quit"):
        controller.run(manager)
    assert seen_while_closing == [True]  # saved without waiting for the environments
    assert model.exists() and (tmp_path / "run/Basic/checkpoint.pt").exists()
