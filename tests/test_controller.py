"""The trainer controller in this process: trainers appear with their behaviors (one per
``Name`` for every ``Name?team=N``), a trainer that raises ends the run with its error after
the other behaviors are saved, a stop request saves everything, perf stats reach the reporters."""

from __future__ import annotations

import threading
from pathlib import Path

import attrs
import pytest

from stats import StatsHub, StatsWriter
from trainers.checkpoints import TrainingStatus
from trainers.controller import PERF_AGENT_STEPS_PER_SECOND, TrainerController
from trainers.env_manager import EnvLaunch, EnvManager, InProcessPool
from trainers.exceptions import TrainerError
from trainers.ppo import PPOTrainer
from trainers.registry import TrainerRegistry, builtin_trainers
from trainers.settings import RunOptions, TrainerSettings, builtin_hyperparameter_types, load_run_options


class Keep(StatsWriter):
    def __init__(self):
        self.rows: list[tuple[str, int, dict]] = []

    def write_stats(self, category, values, step):
        self.rows.append((category, step, dict(values)))


class FailingPPO(PPOTrainer):
    """PPO whose first update raises."""

    def _update_policy(self):
        raise FloatingPointError("loss is nan")


def two_behavior_options(tmp_path: Path, **changes) -> RunOptions:
    settings = TrainerSettings(max_steps=2000, summary_freq=500, time_horizon=32, threaded=True)
    settings = attrs.evolve(settings, hyperparameters=attrs.evolve(settings.hyperparameters, buffer_size=256,
                                                                   batch_size=32), **changes)
    options = RunOptions(default_settings=settings)
    cp = attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="run")
    return attrs.evolve(options, checkpoint_settings=cp)


def make(tmp_path: Path, options: RunOptions, registry: TrainerRegistry, *, env: str = "builtin:TwoBehaviors",
         stop: threading.Event | None = None):
    keep = Keep()
    hub = StatsHub([keep])
    run_dir = tmp_path / "run"
    status = TrainingStatus(run_dir / "run_logs/training_status.json")
    controller = TrainerController(options=options, run_dir=run_dir, hub=hub, registry=registry, status=status,
                                   seed=1, device="cpu", stop=stop)
    manager = EnvManager(InProcessPool(EnvLaunch(env_path=env, seed=1)), controller.create_runtime,
                         perf=controller.perf)
    return controller, manager, keep


def test_two_behaviors_train_to_max_steps_and_are_saved(tmp_path, monkeypatch):
    monkeypatch.setattr("trainers.controller.PERF_REPORT_INTERVAL_S", 0.0)
    registry = TrainerRegistry(builtin_trainers(), builtin_hyperparameter_types())
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
    registry = TrainerRegistry({"ppo": PPOTrainer}, builtin_hyperparameter_types())
    failing = TrainerRegistry({"ppo": FailingPPO}, builtin_hyperparameter_types())

    class Mixed(TrainerRegistry):
        def create(self, *, behavior_name, **kwargs):
            chosen = failing if behavior_name == "LineWalker" else registry
            return TrainerRegistry.create(chosen, behavior_name=behavior_name, **kwargs)

    controller, manager, _ = make(tmp_path, options, Mixed(registry.trainers, registry.hyperparameter_types))
    with pytest.raises(TrainerError, match="FloatingPointError: loss is nan"):
        controller.run(manager)
    assert sorted(controller.trainers) == ["LineWalker", "Reacher"]
    assert (tmp_path / "run" / "Reacher.onnx").exists()  # the healthy behavior is saved


def test_stop_request_saves_every_behavior(tmp_path):
    stop = threading.Event()
    options = load_run_options("config/ppo/Basic.yaml")
    cp = attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="run")
    options = attrs.evolve(options, checkpoint_settings=cp)
    registry = TrainerRegistry.with_plugins()
    controller, manager, _ = make(tmp_path, options, registry, env="builtin:Basic", stop=stop)
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
